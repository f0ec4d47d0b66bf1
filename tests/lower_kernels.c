/* lower_kernels.c: see lower_kernels.h. */
#include "lower_kernels.h"
#include "text_builder.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"
#include "minitir/schedule.h"
#include "minitir/sim.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((x) != TIR_OK) goto fail;                                                              \
    } while (0)

const tir_prim_func *lk_step1(tir_ctx *ctx, int64_t M, int64_t N, int64_t K) {
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32), *r = NULL;
    tir_schedule *s = NULL;
    tir_block_rv c;
    const tir_loop_rv *loops;
    int n;
    if (!f) return NULL;
    TRY(tir_sched_create(ctx, f, &s));
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &loops, &n));
    tir_loop_rv i = loops[0], j = loops[1];
    TRY(tir_sched_bind(s, i, "blockIdx.x"));
    TRY(tir_sched_bind(s, j, "threadIdx.x"));
    r = tir_sched_func(s);
fail:
    tir_sched_destroy(s);
    return r;
}

const tir_prim_func *lk_step2(tir_ctx *ctx, int64_t M, int64_t N, int64_t K) {
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32), *r = NULL;
    tir_schedule *s = NULL;
    tir_block_rv c;
    const tir_loop_rv *loops;
    int n;
    if (!f) return NULL;
    TRY(tir_sched_create(ctx, f, &s));
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &loops, &n));
    tir_loop_rv i = loops[0], j = loops[1], k = loops[2];
    tir_loop_rv ib[2], jb[2], kb[2], it[2], jt[2];
    TRY(tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, ib));
    TRY(tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, jb));
    TRY(tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, kb));
    TRY(tir_sched_split(s, ib[1], 2, (const int64_t[]){4, TIR_SPLIT_INFER}, it));
    TRY(tir_sched_split(s, jb[1], 2, (const int64_t[]){8, TIR_SPLIT_INFER}, jt));
    TRY(tir_sched_reorder(
        s, 8, (const tir_loop_rv[]){ib[0], jb[0], it[0], jt[0], kb[0], it[1], jt[1], kb[1]}));
    TRY(tir_sched_bind(s, ib[0], "blockIdx.x"));
    TRY(tir_sched_bind(s, jb[0], "blockIdx.y"));
    TRY(tir_sched_bind(s, it[0], "threadIdx.x"));
    TRY(tir_sched_bind(s, jt[0], "threadIdx.y"));
    r = tir_sched_func(s);
fail:
    tir_sched_destroy(s);
    return r;
}

static tir_status coop_fetch(tir_schedule *s, tir_block_rv cache, bool vec) {
    const tir_loop_rv *loops;
    int n;
    tir_loop_rv fused, parts[4];
    TIR_TRY(tir_sched_get_loops(s, cache, &loops, &n));
    TIR_TRY(tir_sched_fuse(s, 2, loops + n - 2, &fused));
    if (vec) {
        TIR_TRY(tir_sched_split(s, fused, 4, (const int64_t[]){TIR_SPLIT_INFER, 8, 4, 4}, parts));
        TIR_TRY(tir_sched_vectorize(s, parts[3]));
    } else {
        TIR_TRY(tir_sched_split(s, fused, 3, (const int64_t[]){TIR_SPLIT_INFER, 8, 4}, parts));
    }
    TIR_TRY(tir_sched_bind(s, parts[1], "threadIdx.y"));
    return tir_sched_bind(s, parts[2], "threadIdx.x");
}

const tir_prim_func *lk_shared_sched(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags) {
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32), *r = NULL;
    tir_schedule *s = NULL;
    tir_block_rv c, a_sh, b_sh, c_local;
    const tir_loop_rv *loops;
    int n;
    if (!f) return NULL;
    TRY(tir_sched_create(ctx, f, &s));
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &loops, &n));
    tir_loop_rv i = loops[0], j = loops[1], k = loops[2];
    tir_loop_rv ib[2], jb[2], kb[2], it[2], jt[2];
    TRY(tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, ib));
    TRY(tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, jb));
    TRY(tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, kb));
    TRY(tir_sched_split(s, ib[1], 2, (const int64_t[]){4, TIR_SPLIT_INFER}, it));
    TRY(tir_sched_split(s, jb[1], 2, (const int64_t[]){8, TIR_SPLIT_INFER}, jt));
    TRY(tir_sched_reorder(
        s, 8, (const tir_loop_rv[]){ib[0], jb[0], it[0], jt[0], kb[0], it[1], jt[1], kb[1]}));
    TRY(tir_sched_bind(s, ib[0], "blockIdx.x"));
    TRY(tir_sched_bind(s, jb[0], "blockIdx.y"));
    TRY(tir_sched_bind(s, it[0], "threadIdx.x"));
    TRY(tir_sched_bind(s, jt[0], "threadIdx.y"));
    TRY(tir_sched_cache_read(s, c, 0, "shared", 0, NULL, &a_sh));
    TRY(tir_sched_cache_read(s, c, 1, "shared", 0, NULL, &b_sh));
    TRY(tir_sched_compute_at(s, a_sh, kb[0], false));
    TRY(tir_sched_compute_at(s, b_sh, kb[0], false));
    TRY(coop_fetch(s, a_sh, flags & LK_VEC_FETCH));
    TRY(coop_fetch(s, b_sh, flags & LK_VEC_FETCH));
    if (flags & LK_LOCAL_ACC) {
        TRY(tir_sched_cache_write(s, c, 0, "local", 0, NULL, &c_local));
        TRY(tir_sched_reverse_compute_at(s, c_local, jt[0], false));
    }
    if (flags & LK_PIPELINE) {
        TRY(tir_sched_annotate_loop_ints(s, kb[0], "software_pipeline_stage", 3,
                                         (const int64_t[]){0, 0, 1}));
        TRY(tir_sched_annotate_loop_ints(s, kb[0], "software_pipeline_order", 3,
                                         (const int64_t[]){0, 1, 2}));
        if (flags & LK_ASYNC)
            TRY(tir_sched_annotate_loop_ints(s, kb[0], "software_pipeline_async_stages", 1,
                                             (const int64_t[]){0}));
    }
    if (flags & LK_UNROLL) TRY(tir_sched_unroll(s, kb[1]));
    r = tir_sched_func(s);
fail:
    tir_sched_destroy(s);
    return r;
}

const tir_prim_func *lk_one_per_thread(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                       int64_t ktile) {
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32), *r = NULL;
    tir_schedule *s = NULL;
    tir_block_rv c, sh[2];
    const tir_loop_rv *loops;
    int n;
    if (!f) return NULL;
    TRY(tir_sched_create(ctx, f, &s));
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &loops, &n));
    tir_loop_rv i = loops[0], j = loops[1], k = loops[2];
    tir_loop_rv ib[2], jb[2], kb[2];
    TRY(tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, ib));
    TRY(tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, jb));
    TRY(tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, ktile}, kb));
    TRY(tir_sched_reorder(s, 6, (const tir_loop_rv[]){ib[0], jb[0], ib[1], jb[1], kb[0], kb[1]}));
    TRY(tir_sched_bind(s, ib[0], "blockIdx.y"));
    TRY(tir_sched_bind(s, jb[0], "blockIdx.x"));
    TRY(tir_sched_bind(s, ib[1], "threadIdx.y"));
    TRY(tir_sched_bind(s, jb[1], "threadIdx.x"));
    for (int b = 0; b < 2; b++) {
        tir_loop_rv fused, parts[3];
        TRY(tir_sched_cache_read(s, c, b, "shared", 0, NULL, &sh[b]));
        TRY(tir_sched_compute_at(s, sh[b], kb[0], false));
        TRY(tir_sched_get_loops(s, sh[b], &loops, &n));
        TRY(tir_sched_fuse(s, 2, loops + n - 2, &fused));
        TRY(tir_sched_split(s, fused, 3, (const int64_t[]){TIR_SPLIT_INFER, 8, 8}, parts));
        TRY(tir_sched_bind(s, parts[1], "threadIdx.y"));
        TRY(tir_sched_bind(s, parts[2], "threadIdx.x"));
    }
    r = tir_sched_func(s);
fail:
    tir_sched_destroy(s);
    return r;
}

/* The cooperative fetch of one 32x32 tile of `src` into `dst` by the 32
 * threads (threadIdx.y 8 x threadIdx.x 4), at indentation d.  r0/c0: the
 * tile origin expressions, R/C: the source extents. */
static void fetch(tb *t, int d, const char *dst, const char *src, const char *r0, const char *c0,
                  int64_t R, int64_t C, bool vec) {
    const char *F = vec ? "ax0_ax1_fused_0 * 128 + ax0_ax1_fused_1 * 16 + ax0_ax1_fused_2 * 4 + "
                          "ax0_ax1_fused_3"
                        : "ax0_ax1_fused_0 * 32 + ax0_ax1_fused_1 * 4 + ax0_ax1_fused_2";
    put(t, d, "for ax0_ax1_fused_0 in T.serial(%d):", vec ? 8 : 32);
    put(t, d + 1, "for ax0_ax1_fused_1 in T.thread_binding(0, 8, thread=\"threadIdx.y\"):");
    put(t, d + 2, "for ax0_ax1_fused_2 in T.thread_binding(0, 4, thread=\"threadIdx.x\"):");
    if (vec) put(t, d + 3, "for ax0_ax1_fused_3 in T.vectorized(4):");
    int b = d + (vec ? 4 : 3);
    put(t, b, "with T.block(\"%s\"):", dst);
    put(t, b + 1, "v0 = T.axis.spatial(%lld, %s + (%s) // 32)", (long long)R, r0, F);
    put(t, b + 1, "v1 = T.axis.spatial(%lld, %s + (%s) %% 32)", (long long)C, c0, F);
    put(t, b + 1, "T.where(%s + (%s) // 32 < %lld and %s + (%s) %% 32 < %lld)", r0, F, (long long)R,
        c0, F, (long long)C);
    put(t, b + 1, "T.reads(%s[v0, v1])", src);
    put(t, b + 1, "T.writes(%s[v0, v1])", dst);
    put(t, b + 1, "%s[v0, v1] = %s[v0, v1]", dst, src);
}

const char *lk_shared_text(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags) {
    tb t = {0};
    long long m = M, n = N, k = K;
    long long ib = (M + 31) / 32, jb = (N + 31) / 32, kb = (K + 31) / 32;
    bool local = flags & LK_LOCAL_ACC, vec = flags & LK_VEC_FETCH;
    const char *acc = local ? "C_local" : "C";
    put(&t, 0, "@T.prim_func");
    const char *al = (flags & LK_ALIGN16) ? ", align=16" : "";
    put(&t, 0,
        "def matmul(A: T.Buffer((%lld, %lld), \"float32\"%s), B: T.Buffer((%lld, %lld), "
        "\"float32\"%s), C: T.Buffer((%lld, %lld), \"float32\"%s)):",
        m, k, al, k, n, al, m, n, al);
    put(&t, 1, "T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})");
    put(&t, 1, "with T.block(\"root\"):");
    put(&t, 2, "A_shared = T.alloc_buffer((%lld, %lld), \"float32\", scope=\"shared\")", m, k);
    put(&t, 2, "B_shared = T.alloc_buffer((%lld, %lld), \"float32\", scope=\"shared\")", k, n);
    if (local)
        put(&t, 2, "C_local = T.alloc_buffer((%lld, %lld), \"float32\", scope=\"local\")", m, n);
    if (flags & LK_REG_PIPE) {
        put(&t, 2, "A_local = T.alloc_buffer((%lld, %lld), \"float32\", scope=\"local\")", m, k);
        put(&t, 2, "B_local = T.alloc_buffer((%lld, %lld), \"float32\", scope=\"local\")", k, n);
    }
    put(&t, 2, "for i_0 in T.thread_binding(0, %lld, thread=\"blockIdx.x\"):", ib);
    put(&t, 3, "for j_0 in T.thread_binding(0, %lld, thread=\"blockIdx.y\"):", jb);
    put(&t, 4, "for i_1_0 in T.thread_binding(0, 4, thread=\"threadIdx.x\"):");
    put(&t, 5, "for j_1_0 in T.thread_binding(0, 8, thread=\"threadIdx.y\"):");
    if (flags & LK_PIPELINE) {
        char annots[256];
        snprintf(annots, sizeof annots,
                 "\"software_pipeline_order\": [0, 1, 2], \"software_pipeline_stage\": [0, 0, "
                 "1]%s",
                 (flags & LK_ASYNC) ? ", \"software_pipeline_async_stages\": [0]" : "");
        /* keys sorted, as the printer writes them */
        if (flags & LK_ASYNC)
            snprintf(annots, sizeof annots,
                     "\"software_pipeline_async_stages\": [0], \"software_pipeline_order\": "
                     "[0, 1, 2], \"software_pipeline_stage\": [0, 0, 1]");
        put(&t, 6, "for k_0 in T.serial(%lld, annotations={%s}):", kb, annots);
    } else {
        put(&t, 6, "for k_0 in T.serial(%lld):", kb);
    }
    fetch(&t, 7, "A_shared", "A", "i_0 * 32", "k_0 * 32", M, K, vec);
    fetch(&t, 7, "B_shared", "B", "k_0 * 32", "j_0 * 32", K, N, vec);
    bool reg = flags & LK_REG_PIPE;
    const char *ra = reg ? "A_local" : "A_shared", *rb = reg ? "B_local" : "B_shared";
    if (reg) {
        put(&t, 7,
            "for k_1 in T.serial(32, annotations={\"software_pipeline_order\": [0, 1, 2], "
            "\"software_pipeline_stage\": [0, 0, 1]}):");
        put(&t, 8, "for ax0 in T.serial(8):");
        put(&t, 9, "with T.block(\"A_local\"):");
        put(&t, 10, "v0_3 = T.axis.spatial(%lld, i_0 * 32 + i_1_0 * 8 + ax0)", m);
        put(&t, 10, "v1_3 = T.axis.spatial(%lld, k_0 * 32 + k_1)", k);
        put(&t, 10, "T.where(i_0 * 32 + i_1_0 * 8 + ax0 < %lld and k_0 * 32 + k_1 < %lld)", m, k);
        put(&t, 10, "T.reads(A_shared[v0_3, v1_3])");
        put(&t, 10, "T.writes(A_local[v0_3, v1_3])");
        put(&t, 10, "A_local[v0_3, v1_3] = A_shared[v0_3, v1_3]");
        put(&t, 8, "for ax1 in T.serial(4):");
        put(&t, 9, "with T.block(\"B_local\"):");
        put(&t, 10, "v0_4 = T.axis.spatial(%lld, k_0 * 32 + k_1)", k);
        put(&t, 10, "v1_4 = T.axis.spatial(%lld, j_0 * 32 + j_1_0 * 4 + ax1)", n);
        put(&t, 10, "T.where(k_0 * 32 + k_1 < %lld and j_0 * 32 + j_1_0 * 4 + ax1 < %lld)", k, n);
        put(&t, 10, "T.reads(B_shared[v0_4, v1_4])");
        put(&t, 10, "T.writes(B_local[v0_4, v1_4])");
        put(&t, 10, "B_local[v0_4, v1_4] = B_shared[v0_4, v1_4]");
        put(&t, 8, "for i_1_1, j_1_1 in T.grid(8, 4):");
    } else if (flags & LK_UNROLL) {
        put(&t, 7, "for i_1_1, j_1_1 in T.grid(8, 4):");
        put(&t, 8, "for k_1 in T.unroll(32):");
    } else {
        put(&t, 7, "for i_1_1, j_1_1 in T.grid(8, 4):");
        put(&t, 8, "for k_1 in T.serial(32):");
    }
    int d = 9;
    put(&t, d, "with T.block(\"C\"):");
    put(&t, d + 1, "vi = T.axis.spatial(%lld, i_0 * 32 + i_1_0 * 8 + i_1_1)", m);
    put(&t, d + 1, "vj = T.axis.spatial(%lld, j_0 * 32 + j_1_0 * 4 + j_1_1)", n);
    put(&t, d + 1, "vk = T.axis.reduce(%lld, k_0 * 32 + k_1)", k);
    put(&t, d + 1,
        "T.where(i_0 * 32 + i_1_0 * 8 + i_1_1 < %lld and j_0 * 32 + j_1_0 * 4 + j_1_1 < %lld "
        "and k_0 * 32 + k_1 < %lld)",
        m, n, k);
    put(&t, d + 1, "T.reads(%s[vi, vk], %s[vk, vj])", ra, rb);
    put(&t, d + 1, "T.writes(%s[vi, vj])", acc);
    put(&t, d + 1, "with T.init():");
    put(&t, d + 2, "%s[vi, vj] = T.float32(0)", acc);
    put(&t, d + 1, "%s[vi, vj] = %s[vi, vj] + %s[vi, vk] * %s[vk, vj]", acc, acc, ra, rb);
    if (local) {
        put(&t, 6, "for ax0, ax1 in T.grid(8, 4):");
        put(&t, 7, "with T.block(\"C_local\"):");
        put(&t, 8, "v0 = T.axis.spatial(%lld, i_0 * 32 + i_1_0 * 8 + ax0)", m);
        put(&t, 8, "v1 = T.axis.spatial(%lld, j_0 * 32 + j_1_0 * 4 + ax1)", n);
        put(&t, 8,
            "T.where(i_0 * 32 + i_1_0 * 8 + ax0 < %lld and j_0 * 32 + j_1_0 * 4 + ax1 < %lld)", m,
            n);
        put(&t, 8, "T.reads(C_local[v0, v1])");
        put(&t, 8, "T.writes(C[v0, v1])");
        put(&t, 8, "C[v0, v1] = C_local[v0, v1]");
    }
    const char *r = tir_intern(ctx, t.buf);
    free(t.buf);
    return r;
}

const tir_prim_func *lk_shared(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags) {
    const char *text = lk_shared_text(ctx, M, N, K, flags);
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK) return NULL;
    return f;
}

/* ------------------------------------------------------ tensor cores */

/* One cooperative copy of a tile (w columns, `elems` elements) at
 * (r0, c0) of src into shared dst by the 64 threads (threadIdx.y 2 x
 * threadIdx.x 32; element e * 64 + wy * 32 + tx), zero past the edge the
 * rows (row true) or columns may cross, lim (the form relax_guards' zero
 * fill gives). */
static void tc_fetch(tb *t, int d, const char *dst, const char *src, const char *r0,
                     const char *c0, int64_t elems, int w, bool row, int64_t lim,
                     const char *zero) {
    char r[128], c[128];
    snprintf(r, sizeof r, "%s + (e * 64 + wy * 32 + tx) // %d", r0, w);
    snprintf(c, sizeof c, "%s + (e * 64 + wy * 32 + tx) %% %d", c0, w);
    put(t, d, "for e in T.serial(%lld):", (long long)(elems / 64));
    put(t, d + 1, "if %s < %lld:", row ? r : c, (long long)lim);
    put(t, d + 2, "%s[%s, %s] = %s[%s, %s]", dst, r, c, src, r, c);
    put(t, d + 1, "else:");
    put(t, d + 2, "%s[%s, %s] = %s", dst, r, c, zero);
}

const char *lk_tc_text(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags) {
    bool f32 = flags & LK_TC_TF32;
    const char *dt = f32 ? "float32" : "bfloat16";
    int kt = f32 ? 8 : 16;
    long long m = M, n = N, k = K;
    tb t = {0};
    put(&t, 0, "@T.prim_func");
    put(&t, 0,
        "def tc(A: T.Buffer((%lld, %lld), \"%s\"), B: T.Buffer((%lld, %lld), \"%s\"), "
        "C: T.Buffer((%lld, %lld), \"float32\")):",
        m, k, dt, k, n, dt, m, n);
    put(&t, 1, "for by in T.thread_binding(0, %lld, thread=\"blockIdx.y\"):", (m + 31) / 32);
    put(&t, 2, "for bx in T.thread_binding(0, %lld, thread=\"blockIdx.x\"):", (n + 15) / 16);
    put(&t, 3, "As = T.allocate((%lld, %lld), \"%s\", scope=\"shared\")", m, k, dt);
    put(&t, 3, "Bs = T.allocate((%lld, %lld), \"%s\", scope=\"shared\")", k, n, dt);
    put(&t, 3, "for wy in T.thread_binding(0, 2, thread=\"threadIdx.y\"):");
    put(&t, 4, "Cf = T.allocate((%lld, %lld), \"float32\", scope=\"frag.acc\")", m, n);
    put(&t, 4, "Af = T.allocate((%lld, %lld), \"%s\", scope=\"frag.a\")", m, k, dt);
    put(&t, 4, "Bf = T.allocate((%lld, %lld), \"%s\", scope=\"frag.b\")", k, n, dt);
    put(&t, 4, "for nj in T.serial(2):");
    put(&t, 5, "T.frag_fill(T.address_of(Cf[by * 32 + wy * 16, bx * 16 + nj * 8]), T.float32(0))");
    put(&t, 4, "for ko in T.serial(%lld):", k / kt);
    put(&t, 5, "for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):");
    char zero[32];
    snprintf(zero, sizeof zero, "T.%s(0)", dt);
    char c0[32];
    snprintf(c0, sizeof c0, "ko * %d", kt);
    if (!(flags & LK_TC_A_GLOBAL))
        tc_fetch(&t, 6, "As", "A", "by * 32", c0, 32 * kt, kt, true, M, zero);
    tc_fetch(&t, 6, "Bs", "B", c0, "bx * 16", kt * 16, 16, false, N, zero);
    put(&t, 5, "T.frag_load(T.address_of(Af[by * 32 + wy * 16, ko * %d]), "
               "T.address_of(%s[by * 32 + wy * 16, ko * %d]))",
        kt, flags & LK_TC_A_GLOBAL ? "A" : "As", kt);
    put(&t, 5, "for nj in T.serial(2):");
    put(&t, 6, "T.frag_load(T.address_of(Bf[ko * %d, bx * 16 + nj * 8]), "
               "T.address_of(Bs[ko * %d, bx * 16 + nj * 8]))",
        kt, kt);
    put(&t, 6, "T.mma_sync(T.address_of(Cf[by * 32 + wy * 16, bx * 16 + nj * 8]), "
               "T.address_of(Af[by * 32 + wy * 16, ko * %d]), "
               "T.address_of(Bf[ko * %d, bx * 16 + nj * 8]))",
        kt, kt);
    put(&t, 4, "for nj in T.serial(2):");
    put(&t, 5, "T.frag_store(T.address_of(Cf[by * 32 + wy * 16, bx * 16 + nj * 8]), "
               "T.address_of(C[by * 32 + wy * 16, bx * 16 + nj * 8]))");
    const char *r = tir_intern(ctx, t.buf);
    free(t.buf);
    return r;
}

const tir_prim_func *lk_tc(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int flags) {
    const char *text = lk_tc_text(ctx, M, N, K, flags);
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK) return NULL;
    return f;
}

int lk_interp_sim_equal(tir_ctx *ctx, const tir_prim_func *f, const tir_prim_func *k) {
    enum { MAXP = 8 };
    if (f->nparams > MAXP) return fprintf(stderr, "lk_interp_sim_equal: too many parameters\n"), -1;
    tir_arg ia[MAXP], sa[MAXP];
    int64_t sz[MAXP];
    int np = 0, r = 0;
    for (; np < f->nparams && r == 0; np++) {
        const tir_buffer *b = f->buffer_map[np];
        sz[np] = 1;
        for (int d = 0; d < b->ndim; d++) {
            int64_t e = 0;
            if (!tir_expr_const_int(b->shape[d], &e)) r = -1;
            sz[np] *= e;
        }
        float *x = malloc(sizeof(float) * (size_t)(sz[np] > 0 ? sz[np] : 1));
        float *y = malloc(sizeof(float) * (size_t)(sz[np] > 0 ? sz[np] : 1));
        for (int64_t j = 0; j < sz[np]; j++) x[j] = y[j] = (float)((j * 7 + np * 3) % 5 - 2);
        ia[np] = (tir_arg){x, 0}, sa[np] = (tir_arg){y, 0};
    }
    tir_interp_opts io = {0};
    tir_sim_opts so = {.check_uninit = true, .check_global_races = true};
    tir_sim_report rep;
    if (r == 0 && (tir_interp_run(ctx, f, np, ia, &io) != TIR_OK ||
                   tir_sim_run(ctx, k, np, sa, &so, &rep) != TIR_OK)) {
        fprintf(stderr, "lk_interp_sim_equal: %s\n", tir_ctx_error(ctx));
        r = -1;
    }
    for (int i = 0; i < np; i++) {
        if (r == 0 && memcmp(ia[i].data, sa[i].data, sizeof(float) * (size_t)sz[i]) != 0) {
            fprintf(stderr, "lk_interp_sim_equal: parameter %d differs\n", i);
            r = -1;
        }
        free(ia[i].data);
        free(sa[i].data);
    }
    return r;
}
