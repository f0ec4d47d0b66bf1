/* test_lower_local.c: local (per-thread) buffers across stages with
 * different thread mappings.  A local buffer has one copy per thread, so it
 * may only carry a value from the thread that wrote it to the same thread:
 * local_check (src/lower/local_check.c) proves that or refuses the
 * schedule, and unify_threads gives sibling loop nests of one thread tag
 * one variable, so that the stages of an elementwise chain with local
 * intermediates lower at all.  Cases: a matmul whose shared A tile is
 * staged through registers (A -> A_local -> A_shared, both copies fused,
 * split and bound like a cooperative fetch) with the staging copy in the
 * same and in a transposed loop order; a 3-stage elementwise chain with
 * local B and C under one mapping, a transposed one, a fused-and-split one
 * that is the same mapping in disguise, a mirrored blockIdx mapping, a
 * writer guarded by a thread condition, and a hand-written per-thread
 * array (allocated inside the thread loops: accepted whatever its indices
 * and guards; above them: refused).  Every accepted kernel runs in the
 * SIMT simulator (race and uninitialised-read checks on) and must give
 * the interpreter's result on the unscheduled function bit for bit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minitir/lower.h"
#include "minitir/sim.h"
#include "minitir/schedule.h"

#define OK(ctx, x)                                                                                 \
    do {                                                                                           \
        tir_status s_ = (x);                                                                       \
        if (s_ != TIR_OK) fail_msg("%s: %s", #x, tir_ctx_error(ctx));                              \
    } while (0)

#define TRY(x)                                                                                     \
    do {                                                                                           \
        tir_status t_ = (x);                                                                       \
        if (t_ != TIR_OK) return t_;                                                               \
    } while (0)

static void fill(float *a, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
}

/* Runs kernel k in the simulator and ref in the interpreter on the same
 * random inputs; the last parameter is the output (nelem[i] elements of
 * parameter i) and must agree bit for bit. */
static void sim_matches(tir_ctx *ctx, const tir_prim_func *ref, const tir_prim_func *k,
                        const int64_t *nelem) {
    int np = ref->nparams;
    assert_true(np <= 4);
    assert_int_equal(k->nparams, np);
    float *bufs[4], *out = calloc((size_t)nelem[np - 1], sizeof(float));
    tir_arg ra[4], ka[4];
    for (int i = 0; i < np; i++) {
        bufs[i] = calloc((size_t)nelem[i], sizeof(float));
        if (i < np - 1) fill(bufs[i], nelem[i], 17u + (unsigned)i);
        ra[i] = (tir_arg){bufs[i], 0};
        ka[i] = (tir_arg){i < np - 1 ? bufs[i] : out, 0};
    }
    uint64_t outbit = 1ull << (np - 1);
    tir_interp_opts io = {.uninit_params = outbit};
    OK(ctx, tir_interp_run(ctx, ref, np, ra, &io));
    tir_sim_opts so = {.uninit_params = outbit, .check_uninit = true,
                       .check_global_races = true};
    tir_sim_report rep;
    OK(ctx, tir_sim_run(ctx, k, np, ka, &so, &rep));
    assert_int_equal(memcmp(out, bufs[np - 1], sizeof(float) * (size_t)nelem[np - 1]), 0);
    for (int i = 0; i < np; i++) free(bufs[i]);
    free(out);
}

/* Bytes of local memory one thread of kernel k allocates. */
static bool local_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_ALLOCATE) {
        const tir_buffer *b = ((const tir_allocate *)n)->buffer;
        if (b->scope == TIR_SCOPE_LOCAL)
            *(int64_t *)v->user += tir_buffer_const_size(b) * tir_dtype_bytes(b->dtype);
    }
    return true;
}
static int64_t local_bytes(const tir_prim_func *k) {
    int64_t n = 0;
    tir_visitor v = {.pre = local_pre, .user = &n};
    tir_visit(&v, k->body);
    return n;
}

/* Expects tir_lower to refuse f with TIR_ERR_LOWER and a message holding
 * every string of `want` (NULL-terminated). */
static void refused(tir_ctx *ctx, const tir_prim_func *f, const char *const *want) {
    assert_non_null(f);
    const tir_prim_func *k = NULL;
    tir_status s = tir_lower(ctx, f, NULL, &k);
    if (s != TIR_ERR_LOWER) fail_msg("expected TIR_ERR_LOWER, got %s", tir_status_name(s));
    assert_null(k);
    const char *msg = tir_ctx_error(ctx);
    for (; *want; want++)
        if (!strstr(msg, *want)) fail_msg("'%s' not in the message:\n%s", *want, msg);
}

static const tir_prim_func *lower_ok(tir_ctx *ctx, const tir_prim_func *f) {
    assert_non_null(f);
    const tir_prim_func *k = NULL;
    OK(ctx, tir_lower(ctx, f, NULL, &k));
    return k;
}

/* ---- matmul with the shared A tile staged through registers */

/* Fuses the last two loops of `block` (swapped first when `transpose`),
 * splits the fused loop into [rest, 8, 4] and binds 8 -> threadIdx.y,
 * 4 -> threadIdx.x (the seed's cooperative fetch). */
static tir_status coop(tir_schedule *s, tir_block_rv block, bool transpose) {
    const tir_loop_rv *loops;
    int n;
    tir_loop_rv two[2], fused, parts[3];
    TRY(tir_sched_get_loops(s, block, &loops, &n));
    two[0] = loops[n - (transpose ? 1 : 2)];
    two[1] = loops[n - (transpose ? 2 : 1)];
    if (transpose) TRY(tir_sched_reorder(s, 2, two));
    TRY(tir_sched_fuse(s, 2, two, &fused));
    TRY(tir_sched_split(s, fused, 3, (const int64_t[]){TIR_SPLIT_INFER, 8, 4}, parts));
    TRY(tir_sched_bind(s, parts[1], "threadIdx.y"));
    return tir_sched_bind(s, parts[2], "threadIdx.x");
}

/* The seed's Step 4 tiling (32x32 block tiles, threads 4 (x) by 8 (y),
 * 8x4 per thread) with an 8-deep k tile: A and B read into shared tiles at
 * the outer k loop, A's tile filled from a local staging buffer A_local
 * (cache_read of A_shared's input into local, at the outer k loop, its
 * copy fused, split and bound like the shared store's; `transposed`: the
 * staging copy's loops swapped before fusing), C accumulated in C_local. */
static const tir_prim_func *staged_matmul(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                          bool transposed) {
    tir_schedule *s = NULL;
    const tir_prim_func *r = NULL;
    tir_block_rv c, a_sh, b_sh, a_loc, c_loc;
    const tir_loop_rv *loops;
    int n;
    tir_loop_rv ib[2], jb[2], kb[2], it[2], jt[2];
    if (tir_sched_create(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32), &s) != TIR_OK) return NULL;
    if (tir_sched_get_block(s, "C", &c) || tir_sched_get_loops(s, c, &loops, &n)) goto out;
    tir_loop_rv i = loops[0], j = loops[1], k = loops[2];
    if (tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, ib) ||
        tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, 32}, jb) ||
        tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, kb) ||
        tir_sched_split(s, ib[1], 2, (const int64_t[]){4, TIR_SPLIT_INFER}, it) ||
        tir_sched_split(s, jb[1], 2, (const int64_t[]){8, TIR_SPLIT_INFER}, jt) ||
        tir_sched_reorder(s, 8,
                          (const tir_loop_rv[]){ib[0], jb[0], it[0], jt[0], kb[0], it[1], jt[1],
                                                kb[1]}) ||
        tir_sched_bind(s, ib[0], "blockIdx.x") || tir_sched_bind(s, jb[0], "blockIdx.y") ||
        tir_sched_bind(s, it[0], "threadIdx.x") || tir_sched_bind(s, jt[0], "threadIdx.y") ||
        tir_sched_cache_read(s, c, 0, "shared", 0, NULL, &a_sh) ||
        tir_sched_cache_read(s, c, 1, "shared", 0, NULL, &b_sh) ||
        tir_sched_compute_at(s, a_sh, kb[0], false) ||
        tir_sched_compute_at(s, b_sh, kb[0], false) ||
        tir_sched_cache_read(s, a_sh, 0, "local", 0, NULL, &a_loc) ||
        tir_sched_compute_at(s, a_loc, kb[0], false) || coop(s, a_sh, false) ||
        coop(s, b_sh, false) || coop(s, a_loc, transposed) ||
        tir_sched_cache_write(s, c, 0, "local", 0, NULL, &c_loc) ||
        tir_sched_reverse_compute_at(s, c_loc, jt[0], false))
        goto out;
    r = tir_sched_func(s);
out:
    if (!r) fprintf(stderr, "staged_matmul: %s\n", tir_ctx_error(ctx));
    tir_sched_destroy(s);
    return r;
}

static void test_staged_fetch_same_order(void **state) {
    (void)state;
    static const int64_t sizes[2][3] = {{64, 64, 16}, {40, 48, 24}};
    for (int z = 0; z < 2; z++) {
        tir_ctx *ctx = tir_ctx_create();
        int64_t M = sizes[z][0], N = sizes[z][1], K = sizes[z][2];
        const tir_prim_func *k = lower_ok(ctx, staged_matmul(ctx, M, N, K, false));
        sim_matches(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32), k,
                    (const int64_t[]){M * K, K * N, M * N});
        tir_ctx_destroy(ctx);
    }
}

static void test_staged_fetch_transposed_refused(void **state) {
    (void)state;
    /* before local_check this lowered to a per-thread A_local of the whole
     * tile and the simulator read A_local elements never written */
    tir_ctx *ctx = tir_ctx_create();
    refused(ctx, staged_matmul(ctx, 64, 64, 16, true),
            (const char *[]){"local_check: buffer 'A_local' is local", "written as A_local[",
                             "read as A_local[", "threadIdx.", NULL});
    tir_ctx_destroy(ctx);
}

/* ---- elementwise chain B = A*2, C = B+1, D = max(C, 0) */

enum { CHAIN_SAME, CHAIN_TRANSPOSED, CHAIN_FUSED };

/* B and C local; each stage's (i, j) bound to (blockIdx.x, threadIdx.x);
 * CHAIN_TRANSPOSED binds C's j to blockIdx.x and i to threadIdx.x,
 * CHAIN_FUSED fuses C's loops and splits them [32, 32] (the same mapping
 * again). */
static const tir_prim_func *chain(tir_ctx *ctx, int how) {
    tir_schedule *s = NULL;
    const tir_prim_func *r = NULL;
    static const char *const names[3] = {"B", "C", "D"};
    if (tir_sched_create(ctx, tir_def_elementwise_chain(ctx, 32, 32, TIR_F32), &s) != TIR_OK)
        return NULL;
    for (int st = 0; st < 3; st++) {
        tir_block_rv b;
        const tir_loop_rv *l;
        int n;
        tir_loop_rv fused, p[2];
        if (tir_sched_get_block(s, names[st], &b) ||
            (st < 2 && tir_sched_set_scope(s, b, 0, "local")) ||
            tir_sched_get_loops(s, b, &l, &n))
            goto out;
        tir_loop_rv bx = l[0], tx = l[1];
        if (st == 1 && how == CHAIN_TRANSPOSED) {
            bx = l[1];
            tx = l[0];
        } else if (st == 1 && how == CHAIN_FUSED) {
            if (tir_sched_fuse(s, 2, l, &fused) ||
                tir_sched_split(s, fused, 2, (const int64_t[]){32, 32}, p))
                goto out;
            bx = p[0];
            tx = p[1];
        }
        if (tir_sched_bind(s, bx, "blockIdx.x") || tir_sched_bind(s, tx, "threadIdx.x")) goto out;
    }
    r = tir_sched_func(s);
out:
    if (!r) fprintf(stderr, "chain: %s\n", tir_ctx_error(ctx));
    tir_sched_destroy(s);
    return r;
}

static void test_chain_same_mapping(void **state) {
    (void)state;
    /* used to abort in check_kernel: compact_alloc rebased C's and D's
     * accesses by the first stage's loop variables */
    for (int how = CHAIN_SAME; how <= CHAIN_FUSED; how += CHAIN_FUSED - CHAIN_SAME) {
        tir_ctx *ctx = tir_ctx_create();
        const tir_prim_func *k = lower_ok(ctx, chain(ctx, how));
        assert_int_equal(local_bytes(k), 8); /* one float of B and one of C per thread */
        sim_matches(ctx, tir_def_elementwise_chain(ctx, 32, 32, TIR_F32), k,
                    (const int64_t[]){1024, 1024});
        tir_ctx_destroy(ctx);
    }
}

static void test_chain_transposed_refused(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    refused(ctx, chain(ctx, CHAIN_TRANSPOSED),
            (const char *[]){"buffer 'B' is local", "written as B[i, j] under blockIdx.x = i, "
                             "threadIdx.x = j",
                             "read as B[j, i]", NULL});
    tir_ctx_destroy(ctx);
}

/* A two-stage chain as text: B local, written at B[<bi>, j] under
 * (blockIdx.x = i, threadIdx.x = j) where <cond> holds, read back at
 * B[i, j] to give D. */
static const tir_prim_func *chain_text(tir_ctx *ctx, const char *bi, const char *cond) {
    char text[2048];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def chain(A: T.Buffer((32, 32), \"float32\"), D: T.Buffer((32, 32), "
             "\"float32\")):\n"
             "    T.func_attr({\"global_symbol\": \"chain\", \"tir.noalias\": 1})\n"
             "    with T.block(\"root\"):\n"
             "        B = T.alloc_buffer((32, 32), \"float32\", scope=\"local\")\n"
             "        for i in T.thread_binding(0, 32, thread=\"blockIdx.x\"):\n"
             "            for j in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
             "                with T.block(\"B\"):\n"
             "                    vi = T.axis.spatial(32, %s)\n"
             "                    vj = T.axis.spatial(32, j)\n"
             "                    T.where(%s)\n"
             "                    T.reads(A[vi, vj])\n"
             "                    T.writes(B[vi, vj])\n"
             "                    B[vi, vj] = A[vi, vj] * T.float32(2)\n"
             "        for i in T.thread_binding(0, 32, thread=\"blockIdx.x\"):\n"
             "            for j in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
             "                with T.block(\"D\"):\n"
             "                    vi, vj = T.axis.remap(\"SS\", [i, j])\n"
             "                    T.reads(B[vi, vj])\n"
             "                    T.writes(D[vi, vj])\n"
             "                    D[vi, vj] = B[vi, vj] + T.float32(1)\n",
             bi, cond);
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
    return f;
}

static void test_block_mapping(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    /* the reference: the same text with the same mapping lowers and runs */
    const tir_prim_func *same = chain_text(ctx, "i", "i < 32");
    sim_matches(ctx, same, lower_ok(ctx, same), (const int64_t[]){1024, 1024});
    /* block 31 - i writes the row that block i reads */
    refused(ctx, chain_text(ctx, "31 - i", "i < 32"),
            (const char *[]){"buffer 'B' is local", "written as B[31 - i, j]",
                             "blockIdx.x ('i')", NULL});
    tir_ctx_destroy(ctx);
}

/* B[i] = A[i, 0] written by the threads j < bound of block i, read by
 * every thread of the block. */
static const tir_prim_func *bcast_text(tir_ctx *ctx, int bound) {
    char text[2048];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def bcast(A: T.Buffer((32, 32), \"float32\"), D: T.Buffer((32, 32), "
             "\"float32\")):\n"
             "    T.func_attr({\"global_symbol\": \"bcast\", \"tir.noalias\": 1})\n"
             "    with T.block(\"root\"):\n"
             "        B = T.alloc_buffer((32,), \"float32\", scope=\"local\")\n"
             "        for i in T.thread_binding(0, 32, thread=\"blockIdx.x\"):\n"
             "            for j in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
             "                with T.block(\"B\"):\n"
             "                    vi = T.axis.spatial(32, i)\n"
             "                    T.where(j < %d)\n"
             "                    T.reads(A[vi, 0])\n"
             "                    T.writes(B[vi])\n"
             "                    B[vi] = A[vi, 0]\n"
             "        for i in T.thread_binding(0, 32, thread=\"blockIdx.x\"):\n"
             "            for j in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
             "                with T.block(\"D\"):\n"
             "                    vi, vj = T.axis.remap(\"SS\", [i, j])\n"
             "                    T.reads(B[vi], A[vi, vj])\n"
             "                    T.writes(D[vi, vj])\n"
             "                    D[vi, vj] = B[vi] + A[vi, vj]\n",
             bound);
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
    return f;
}

static void test_writer_guarded_by_thread(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    /* B[i] is written by thread 0 of block i only; the other threads of
     * the block would read their own, never written copy */
    refused(ctx, bcast_text(ctx, 1),
            (const char *[]){"buffer 'B' is local", "written as B[i] under blockIdx.x = i, "
                             "threadIdx.x = j only where 'j < 1'",
                             "threadIdx.x ('j')", NULL});
    /* j < 32 always holds (simplified away): every thread writes its own
     * copy, one element per thread */
    const tir_prim_func *f = bcast_text(ctx, 32);
    const tir_prim_func *k = lower_ok(ctx, f);
    assert_int_equal(local_bytes(k), 4);
    sim_matches(ctx, f, k, (const int64_t[]){1024, 1024});
    tir_ctx_destroy(ctx);
}

/* A hand-written per-thread array: L allocated inside both thread loops
 * (inside = true) is one array per thread in the function's meaning too, so
 * thread-dependent indices, data-dependent guards and values are all fine;
 * allocated above them (inside = false), L is one array the threads share
 * in the function's meaning, and the same body is refused. */
static const tir_prim_func *own_text(tir_ctx *ctx, bool inside) {
    char text[2048];
    const char *alloc = "L = T.allocate((4,), \"float32\", scope=\"local\")\n";
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def own(A: T.Buffer((64,), \"float32\"), D: T.Buffer((64,), \"float32\")):\n"
             "%s%s"
             "    for b in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
             "        for t in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
             "%s%s"
             "            L[0] = A[b * 32 + t]\n"
             "            L[t %% 4] = A[b * 32 + t] * T.float32(2)\n"
             "            if A[b * 32 + t] > T.float32(0):\n"
             "                L[1] = L[0] + T.float32(1)\n"
             "            else:\n"
             "                L[1] = L[0] - T.float32(1)\n"
             "            D[b * 32 + t] = L[1] + L[t %% 4]\n",
             inside ? "" : "    ", inside ? "" : alloc, inside ? "            " : "",
             inside ? alloc : "");
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
    return f;
}

/* ... but not when a loop of the same thread tag inside the Allocate is
 * unified away: in the function's meaning it ran all its iterations on
 * each thread's array, after unification each thread runs one (review of
 * the eighteenth session: accepted, 32 of 32 outputs wrong).  `fill`
 * writes L[t2] for every t2 and reads L[t + 1] (local_check: the element
 * written is L[t] after the merge); `sum` accumulates over t2, which
 * unify_threads refuses first (the nest reads what it writes). */
static const tir_prim_func *nested_text(tir_ctx *ctx, bool sum) {
    char text[2048];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def nested(A: T.Buffer((32,), \"float32\"), D: T.Buffer((32,), \"float32\")):\n"
             "    for b in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
             "        for t in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
             "            L = T.allocate((32,), \"float32\", scope=\"local\")\n"
             "            %s\n"
             "            for t2 in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
             "                %s\n"
             "            D[t] = %s\n",
             sum ? "L[0] = T.float32(0)" : "D[t] = T.float32(0)",
             sum ? "L[0] = L[0] + A[t2]" : "L[t2] = A[t2]", sum ? "L[0]" : "L[(t + 1) % 32]");
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
    return f;
}

static void test_own_copy_per_thread(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = own_text(ctx, true);
    const tir_prim_func *k = lower_ok(ctx, f);
    sim_matches(ctx, f, k, (const int64_t[]){64, 64});
    refused(ctx, own_text(ctx, false), (const char *[]){"buffer 'L' is local", NULL});
    refused(ctx, nested_text(ctx, false), (const char *[]){"buffer 'L' is local", NULL});
    refused(ctx, nested_text(ctx, true),
            (const char *[]){"unify_threads", "reads a buffer it writes", NULL});
    /* without a local array: a nested loop of one tag whose body reads the
     * outer variable computes only the pairs where both are equal (the
     * simulator gave D[t] = A[t] for the function's D[*] = A[31]) */
    const char *nest3 =
        "@T.prim_func\n"
        "def nest3(A: T.Buffer((32,), \"float32\"), D: T.Buffer((32,), \"float32\")):\n"
        "    for b in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
        "        for t in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "            for t2 in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "                D[t2] = A[t]\n";
    OK(ctx, tir_parse_func(ctx, nest3, strlen(nest3), &f));
    refused(ctx, f, (const char *[]){"unify_threads", "its body reads the outer variable", NULL});
    /* a nest writing a global that another thread then reads: no race in
     * the function's meaning (the nest wrote every element first), one
     * after the merge (third review) */
    const char *glob =
        "@T.prim_func\n"
        "def glob(A: T.Buffer((32,), \"float32\"), D: T.Buffer((32,), \"float32\"), "
        "E: T.Buffer((32,), \"float32\")):\n"
        "    for b in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
        "        for t in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "            for t2 in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "                E[t2] = A[t2]\n"
        "            D[t] = E[(t + 1) % 32]\n";
    OK(ctx, tir_parse_func(ctx, glob, strlen(glob), &f));
    refused(ctx, f, (const char *[]){"unify_threads", "reads a global buffer it writes", NULL});
    tir_ctx_destroy(ctx);
}

static bool first_loop_pre(tir_visitor *v, const tir_node *n) {
    const tir_var **out = v->user;
    if (n->kind == TIR_KIND_FOR && !*out) *out = ((const tir_for *)n)->var;
    return !*out;
}

/* A function that is not well formed (a loop variable used where it is
 * not defined) is refused by tir_lower, not lowered into a crash. */
static void test_malformed_input(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = chain_text(ctx, "i", "i < 32");
    const tir_var *i = NULL;
    tir_visitor v = {.pre = first_loop_pre, .user = &i};
    tir_visit(&v, f->body);
    assert_non_null(i);
    const tir_expr *ghost = (const tir_expr *)tir_var_new(ctx, "ghost", TIR_I32);
    const tir_stmt *body = (const tir_stmt *)tir_substitute(ctx, f->body, 1, &i, &ghost);
    const tir_prim_func *bad = tir_prim_func_new(ctx, f->name, f->nparams, f->params,
                                                 f->buffer_map, body, f->nattrs, f->attrs);
    const tir_prim_func *k = NULL;
    assert_int_equal(tir_lower(ctx, bad, NULL, &k), TIR_ERR_VERIFY);
    assert_null(k);
    assert_non_null(strstr(tir_ctx_error(ctx), "tir_lower: the scheduled function is not well "
                                                "formed: variable 'ghost'"));
    tir_ctx_destroy(ctx);
}

/* ---- a fused i-j loop split by a factor not dividing M*N (an L2 swizzle
 * of rows): the accumulator is local, and reverse_compute_at puts its
 * write-back under the thread loop despite the split's predicate
 * `f_0 * 64 + f_1 < M * N`, which only masks points past the last row. */
static const tir_prim_func *swizzled(tir_ctx *ctx, int64_t M, int64_t N, int64_t K) {
    tir_schedule *s = NULL;
    const tir_prim_func *r = NULL;
    tir_block_rv c, cl;
    const tir_loop_rv *l;
    int n;
    tir_loop_rv fused, p[2];
    if (tir_sched_create(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32), &s) ||
        tir_sched_get_block(s, "C", &c) ||
        tir_sched_cache_write(s, c, 0, "local", 0, NULL, &cl) ||
        tir_sched_get_loops(s, c, &l, &n) || tir_sched_fuse(s, 2, l, &fused) ||
        tir_sched_split(s, fused, 2, (const int64_t[]){TIR_SPLIT_INFER, 64}, p) ||
        tir_sched_bind(s, p[0], "blockIdx.x") || tir_sched_bind(s, p[1], "threadIdx.x") ||
        tir_sched_reverse_compute_at(s, cl, p[1], false))
        goto out;
    r = tir_sched_func(s);
out:
    if (!r) fprintf(stderr, "swizzled: %s\n", tir_ctx_error(ctx));
    tir_sched_destroy(s);
    return r;
}

static void test_fused_split_write_back(void **state) {
    (void)state;
    static const int64_t sizes[2][3] = {{13, 11, 7}, {5, 27, 3}};
    for (int t = 0; t < 2; t++) {
        tir_ctx *ctx = tir_ctx_create();
        int64_t M = sizes[t][0], N = sizes[t][1], K = sizes[t][2];
        assert_int_not_equal((M * N) % 64, 0);
        const tir_prim_func *k = lower_ok(ctx, swizzled(ctx, M, N, K));
        sim_matches(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32), k,
                    (const int64_t[]){M * K, K * N, M * N});
        tir_ctx_destroy(ctx);
    }
}

/* ---- a thread index cut into warp and lane digits
 *
 * One threadIdx.x t of 256 = (a, b, c, d) with t = ((a * 4 + b) * 8 + c) *
 * 4 + d, as in sgemm.c's 2 x 4 warps of 8 x 4 lanes: rows from a and c,
 * columns from b and d, so no one function of the element gives t back
 * whole; local_check reads it back digit by digit.  <wi>/<wj> index the
 * writer, <ri>/<rj> the reader; <cond> guards the writer. */
static const tir_prim_func *digits_text(tir_ctx *ctx, const char *wi, const char *wj,
                                        const char *ri, const char *rj, const char *cond) {
    char text[2048];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def digits(A: T.Buffer((16, 16), \"float32\"), D: T.Buffer((16, 16), "
             "\"float32\")):\n"
             "    T.func_attr({\"global_symbol\": \"digits\", \"tir.noalias\": 1})\n"
             "    with T.block(\"root\"):\n"
             "        B = T.alloc_buffer((16, 16), \"float32\", scope=\"local\")\n"
             "        for bx in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
             "          for t in T.thread_binding(0, 256, thread=\"threadIdx.x\"):\n"
             "            with T.block(\"B\"):\n"
             "                vi = T.axis.spatial(16, %s)\n"
             "                vj = T.axis.spatial(16, %s)\n"
             "                T.where(%s)\n"
             "                T.reads(A[vi, vj])\n"
             "                T.writes(B[vi, vj])\n"
             "                B[vi, vj] = A[vi, vj] * T.float32(2)\n"
             "        for bx in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
             "          for t in T.thread_binding(0, 256, thread=\"threadIdx.x\"):\n"
             "            with T.block(\"D\"):\n"
             "                vi = T.axis.spatial(16, %s)\n"
             "                vj = T.axis.spatial(16, %s)\n"
             "                T.reads(B[vi, vj])\n"
             "                T.writes(D[vi, vj])\n"
             "                D[vi, vj] = B[vi, vj] + T.float32(1)\n",
             wi, wj, cond, ri, rj);
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
    return f;
}

#define ROWS "t // 128 * 8 + t // 4 % 8"
#define COLS "t // 32 % 4 * 4 + t % 4"

static void test_warp_lane_digits(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    /* The same digits both ways: accepted, and right in the simulator. */
    const tir_prim_func *f = digits_text(ctx, ROWS, COLS, ROWS, COLS, "True");
    sim_matches(ctx, f, lower_ok(ctx, f), (const int64_t[]){256, 256});
    /* The reader's columns take b and d the other way round. */
    refused(ctx, digits_text(ctx, ROWS, COLS, ROWS, "t // 32 % 4 + t % 4 * 4", "True"),
            (const char *[]){"buffer 'B' is local", "threadIdx.x", NULL});
    /* A row digit dropped by the reader (c // 2): another thread's row. */
    refused(ctx, digits_text(ctx, ROWS, COLS, "t // 128 * 8 + t // 8 % 4 * 2", COLS, "True"),
            (const char *[]){"buffer 'B' is local", NULL});
    /* A guard on a replicated digit: the writer's rows do not use b and d
     * (columns are one per b, d pair here but the reader reads column 0 in
     * every thread), and threads with b > 0 skip the write. */
    refused(ctx, digits_text(ctx, ROWS, "0", ROWS, "0", "t // 32 % 4 < 1"),
            (const char *[]){"buffer 'B' is local", NULL});
    tir_ctx_destroy(ctx);
}

/* ---- a copy spread over more threads than it has elements
 *
 * 128 threads copy 8 x 8 elements per k step, guarded by `t < G`; the
 * row k * 8 + t // 8 of threads past 64 would be the next step's rows of
 * other threads, so B's element tells t apart only for the threads the
 * guard lets through.  Both blocks are guarded the same way; rows past
 * the buffer are never touched (24 rows, G at most 72). */
static const tir_prim_func *spread_text(tir_ctx *ctx, int g) {
    char text[2048];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def spread(A: T.Buffer((24, 8), \"float32\"), D: T.Buffer((24, 8), "
             "\"float32\")):\n"
             "    T.func_attr({\"global_symbol\": \"spread\", \"tir.noalias\": 1})\n"
             "    with T.block(\"root\"):\n"
             "        B = T.alloc_buffer((24, 8), \"float32\", scope=\"local\")\n"
             "        for bx in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
             "            for t in T.thread_binding(0, 128, thread=\"threadIdx.x\"):\n"
             "                for k in T.serial(0, 2):\n"
             "                    with T.block(\"B\"):\n"
             "                        vi = T.axis.spatial(24, k * 8 + t // 8)\n"
             "                        vj = T.axis.spatial(8, t %% 8)\n"
             "                        T.where(t < %d)\n"
             "                        T.reads(A[vi, vj])\n"
             "                        T.writes(B[vi, vj])\n"
             "                        B[vi, vj] = A[vi, vj] * T.float32(2)\n"
             "                    with T.block(\"D\"):\n"
             "                        vi = T.axis.spatial(24, k * 8 + t // 8)\n"
             "                        vj = T.axis.spatial(8, t %% 8)\n"
             "                        T.where(t < %d)\n"
             "                        T.reads(B[vi, vj])\n"
             "                        T.writes(D[vi, vj])\n"
             "                        D[vi, vj] = B[vi, vj] + T.float32(1)\n",
             g, g);
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
    return f;
}

static void test_spread_copy(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    /* t < 64: threads 0..63 each own 16 elements, the element tells t as
     * (row * 8 + col) mod 64; refused before the guard's bound was used */
    const tir_prim_func *f = spread_text(ctx, 64);
    const tir_prim_func *k = lower_ok(ctx, f);
    /* D's rows 16..23 are never written: compare the first 16 */
    int np = 2;
    float *a = calloc(192, sizeof(float)), *d0 = calloc(192, sizeof(float)),
          *d1 = calloc(192, sizeof(float));
    fill(a, 192, 5u);
    tir_arg ra[2] = {{a, 0}, {d0, 0}}, ka[2] = {{a, 0}, {d1, 0}};
    OK(ctx, tir_interp_run(ctx, f, np, ra, NULL));
    tir_sim_opts so = {.check_uninit = true, .check_global_races = true};
    tir_sim_report rep;
    OK(ctx, tir_sim_run(ctx, k, np, ka, &so, &rep));
    assert_int_equal(memcmp(d0, d1, 128 * sizeof(float)), 0);
    for (int i = 0; i < 128; i++) assert_true(d1[i] == a[i] * 2 + 1);
    free(a), free(d0), free(d1);
    /* t < 72: thread 64 + x at k = 0 and thread x at k = 1 share row 8, so
     * the element does not tell them apart (the function is still right,
     * each reads what it wrote in the same step, but this pass does not
     * reason about steps): the bound is 72, not rounded up to 128 or down
     * to 64 */
    refused(ctx, spread_text(ctx, 72),
            (const char *[]){"buffer 'B' is local", "threadIdx.x", NULL});
    tir_ctx_destroy(ctx);
}

/* ---- guards that local_check may and may not use (review of the
 * twenty-ninth session's guarded read-back)
 *
 * Plain kernels (no blocks): a writer nest and a reader nest, each under
 * blockIdx.x bx (extent <nbx>), threadIdx.y s (<ny>) and threadIdx.x t
 * (128), around a local B of shape <shape>; <w> and <r> are the nests'
 * bodies (12 spaces deep).  U is uint8 data for data-dependent guards. */
static const tir_prim_func *guard_text(tir_ctx *ctx, const char *shape, int nbx, int ny,
                                       const char *w, const char *r) {
    char text[4096];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def g(A: T.Buffer((512,), \"float32\"), U: T.Buffer((4,), \"uint8\"), "
             "D: T.Buffer((512,), \"float32\")):\n"
             "    T.func_attr({\"global_symbol\": \"g\", \"tir.noalias\": 1})\n"
             "    B = T.allocate(%s, \"float32\", scope=\"local\")\n"
             "    for bx in T.thread_binding(0, %d, thread=\"blockIdx.x\"):\n"
             "        for s in T.thread_binding(0, %d, thread=\"threadIdx.y\"):\n"
             "          for t in T.thread_binding(0, 128, thread=\"threadIdx.x\"):\n"
             "%s\n"
             "        for s in T.thread_binding(0, %d, thread=\"threadIdx.y\"):\n"
             "          for t in T.thread_binding(0, 128, thread=\"threadIdx.x\"):\n"
             "%s\n",
             shape, nbx, ny, w, ny, r);
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
    return f;
}

#define G_IF(c) "            if " c ":\n"
#define G_ELSE "            else:\n"
#define G_W(i) "                B[" i "] = A[" i "] * T.float32(2)"
/* reads what thread t + 64 wrote: right only where the writer runs there */
#define G_R64 G_IF("t < 64") "                D[s * 128 + t] = B[t + 64] + T.float32(1)"

static void test_guard_kinds_refused(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    /* Each writer runs for some t >= 64 (so the function is right: reader
     * t reads what thread t + 64 wrote), but under a condition that a
     * careless reading would take as t < 64, the modulus the read-back
     * would then use (B[t + 64] read back as t). */
    const struct {
        const char *w, *r; /* r NULL: G_R64 */
    } cases[] = {
        /* the else branch runs where the condition is false */
        {G_IF("t < 64") G_W("t") "\n" G_ELSE G_W("t"), NULL},
        {G_IF("t < 64") "                D[t] = A[t]\n" G_ELSE G_W("t"), NULL},
        /* after the if, not in it */
        {G_IF("t < 64") "                D[t] = A[t]\n" "            B[t] = A[t] * T.float32(2)",
         NULL},
        /* nested: 64 <= t < 100 */
        {G_IF("t < 100") "                if t >= 64:\n    " G_W("t"), NULL},
        /* not, or, ==, select, max, floordiv: no linear bound read */
        {G_IF("not (t < 64)") G_W("t"), NULL},
        {G_IF("t < 64 or t >= 64") G_W("t"), NULL},
        {G_IF("t == 0 or t >= 64") G_W("t"), NULL},
        {G_IF("T.Select(t < 64, 0, 1) == 1") G_W("t"), NULL},
        {G_IF("64 <= T.max(t, 0)") G_W("t"), NULL},
        {G_IF("t // 64 >= 1") G_W("t"), NULL},
        /* two thread variables: with s >= 0 the bound is t < 128, not 64
         * (s is read back from B[s * 128 + t] whole) */
        {G_IF("t + s * 64 < 128") G_W("s * 128 + t"),
         G_IF("t < 64") "                D[s * 64 + t] = B[s * 128 + t + 64]"},
        /* a sum that reads data wraps (docs/lowered-ir.md): t * 2^30 is 0
         * for t = 64 and the guard holds there (and at t = 0), while its
         * linear reading says t < 1; accepted before, the simulator then
         * read B[64], which thread 0 never wrote */
        {G_IF("t * 1073741824 + T.Cast(\"int32\", U[0]) < 256") G_W("t"),
         G_IF("t < 1") "                D[s * 128 + t] = B[t + 64] + T.float32(1)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        refused(ctx, guard_text(ctx, "(256,)", 1, 2, cases[i].w, cases[i].r ? cases[i].r : G_R64),
                (const char *[]){"buffer 'B' is local", "threadIdx.x ('t') cannot be told", NULL});
    /* The bound of t (t < 64) lets B[s * 64 + t] tell s apart in the
     * writer, but the reader's t < 65 lets thread (0, 64) read B[64],
     * which thread (1, 0) wrote. */
    refused(ctx,
            guard_text(ctx, "(256,)", 1, 2, G_IF("t < 64") G_W("s * 64 + t"),
                       G_IF("t < 65") "                D[s * 64 + t] = B[s * 64 + t]"),
            (const char *[]){"buffer 'B' is local", NULL});
    /* Digits (B[t % 32, k * 2 + t // 32]) with the reader's t < 96: digit
     * t // 32 reaches 2, and row k * 2 + 2 at k = 0 is row 2 of k = 1. */
    refused(ctx,
            guard_text(ctx, "(32, 4)", 1, 1,
                       "            for k in range(2):\n"
                       "                if t < 64:\n"
                       "                    B[t % 32, k * 2 + t // 32] = A[t * 2 + k]",
                       "            for k in range(2):\n"
                       "                if t < 96:\n"
                       "                    D[t * 2 + k] = B[t % 32, k * 2 + t // 32]"),
            (const char *[]){"buffer 'B' is local", NULL});
    tir_ctx_destroy(ctx);
}

static void test_guard_kinds_accepted(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const int64_t n[] = {512, 4, 512};
    const struct {
        const char *shape;
        int nbx, ny;
        const char *w, *r;
    } ok[] = {
        /* B[k * 64 + t] under t < 64: t modulo 64 */
        {"(256,)", 1, 1,
         "            for k in range(2):\n"
         "                if t < 64:\n"
         "                    B[k * 64 + t] = A[k * 64 + t]",
         "            for k in range(2):\n"
         "                if t < 64:\n"
         "                    D[k * 64 + t] = B[k * 64 + t] + T.float32(1)"},
        /* a serial loop variable in the guard; the reader reads the other
         * k's elements, which the same thread wrote */
        {"(512,)", 1, 1,
         "            for k in range(2):\n"
         "                for v in range(4):\n"
         "                    if t * 4 + v < 256:\n"
         "                        B[k * 256 + t * 4 + v] = A[k * 256 + t * 4 + v]",
         "            for k in range(2):\n"
         "                for v in range(4):\n"
         "                    if t * 4 + v < 256:\n"
         "                        D[k * 256 + t * 4 + v] = B[(1 - k) * 256 + t * 4 + v]"},
        /* the guard on t bounds the low part of s's read-back */
        {"(256,)", 1, 2, G_IF("t < 64") G_W("s * 64 + t"),
         G_IF("t < 64") "                D[s * 64 + t] = B[s * 64 + t] + T.float32(1)"},
        /* a guard on blockIdx; B is replicated along t and s */
        {"(4,)", 4, 1,
         "            for k in range(2):\n"
         "                if bx < 2:\n"
         "                    B[k * 2 + bx] = A[k * 2 + bx]",
         "            for k in range(2):\n"
         "                if bx < 2:\n"
         "                    D[(k * 2 + bx) * 128 + t] = B[k * 2 + bx] + T.float32(1)"},
        /* a guard that reads data but cannot wrap (at most 127 * 4 + 255);
         * D by (t, k): race_check does not bound t through the data */
        {"(256,)", 1, 1,
         "            for k in range(2):\n"
         "                if t * 4 + T.Cast(\"int32\", U[0]) < 256:\n"
         "                    B[k * 64 + t] = A[k * 64 + t]",
         "            for k in range(2):\n"
         "                if t * 4 + T.Cast(\"int32\", U[0]) < 256:\n"
         "                    D[t * 2 + k] = B[k * 64 + t] + T.float32(1)"},
        /* digits: column k * 2 + t // 32 tells t // 32 modulo 2, which
         * t < 64 keeps below 2 */
        {"(32, 4)", 1, 1,
         "            for k in range(2):\n"
         "                if t < 64:\n"
         "                    B[t % 32, k * 2 + t // 32] = A[t * 2 + k]",
         "            for k in range(2):\n"
         "                if t < 64:\n"
         "                    D[t * 2 + k] = B[t % 32, k * 2 + t // 32] + T.float32(1)"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        const tir_prim_func *f = guard_text(ctx, ok[i].shape, ok[i].nbx, ok[i].ny, ok[i].w, ok[i].r);
        sim_matches(ctx, f, lower_ok(ctx, f), n);
    }
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_staged_fetch_same_order),
        cmocka_unit_test(test_staged_fetch_transposed_refused),
        cmocka_unit_test(test_chain_same_mapping),
        cmocka_unit_test(test_chain_transposed_refused),
        cmocka_unit_test(test_block_mapping),
        cmocka_unit_test(test_writer_guarded_by_thread),
        cmocka_unit_test(test_own_copy_per_thread),
        cmocka_unit_test(test_malformed_input),
        cmocka_unit_test(test_fused_split_write_back),
        cmocka_unit_test(test_warp_lane_digits),
        cmocka_unit_test(test_spread_copy),
        cmocka_unit_test(test_guard_kinds_refused),
        cmocka_unit_test(test_guard_kinds_accepted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
