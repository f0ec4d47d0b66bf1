/* sgemm.c: "Step 8", the 128 x 128 x 8 fp32 matmul schedule of sgemm.h,
 * written on the plain matmul definition with the public API only.
 *
 * The loop structure it builds, per thread block (blockIdx.y over i tiles,
 * blockIdx.x over j tiles) and thread (threadIdx.x = warp * 32 + lane):
 *
 *   for k0 in K / BK:                    software pipeline, 2 stages
 *     A_local  <- A[tile rows, k0 tile]  stage 0: float4 global loads
 *     B_local  <- B[k0 tile, tile cols]
 *     A_shared <- A_local (k-major)      stage 0, after the compute
 *     B_shared <- B_local
 *     for k1 in BK:                      stage 1: the compute, unrolled
 *       A_frag <- A_shared[k1, TM rows]  float4 shared loads
 *       B_frag <- B_shared[k1, TN cols]
 *       C_local[TM, TN] += A_frag x B_frag   (zeroed before k0:
 *                                            decompose_reduction)
 *   C[...] <- C_local                    float4 stores
 *
 * The pipeline orders the compute of tile k before the shared stores of
 * tile k + 1, so every buffer needs one version and the global loads of
 * tile k + 1 are in flight while tile k is computed.
 */
#include "sgemm.h"

#include <stdio.h>
#include <string.h>

typedef void (*hook_fn)(void *user, tir_schedule *s, const char *call);

#define CALL(call)                                                                        \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) return st_;                                                    \
        if (hook) hook(user, s, #call);                                                   \
    } while (0)

sgemm_config sgemm_default_config(void) {
    sgemm_config c = {.warps_m = 2, .warps_n = 4, .threads_m = 8, .threads_n = 4,
                      .tm = 8, .tn = 8, .bk = 8, .vec = 4, .staging = true, .pad = 4,
                      .splitk = 1, .splitk_atomic = false};
    return c;
}

sgemm_config sgemm_config_for(int64_t M, int64_t N, int64_t K, int nsm) {
    (void)K;
    sgemm_config c = sgemm_default_config();
    int64_t blocks = ((M + 127) / 128) * ((N + 127) / 128);
    if (blocks * 5 >= (int64_t)nsm * 4) return c;
    c.warps_n = 2, c.tm = 4; /* 64 x 64 */
    return c;
}

tir_status sgemm_shape(tir_schedule *s, int64_t *M, int64_t *N, int64_t *K) {
    tir_block_rv c;
    const tir_block *b;
    tir_status st = tir_sched_get_block(s, "C", &c);
    if (st == TIR_OK) st = tir_sched_get_block_node(s, c, &b);
    if (st != TIR_OK) return st;
    const tir_buffer *out = b->writes[0].buffer;
    *K = 0;
    for (int i = 0; i < b->niters; i++)
        if (b->iters[i].kind == TIR_ITER_REDUCE) tir_expr_const_int(b->iters[i].dom.extent, K);
    if (out->ndim != 2 || !tir_expr_const_int(out->shape[0], M) ||
        !tir_expr_const_int(out->shape[1], N) || *K <= 0)
        return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                            "sgemm: block C is not a matmul with constant shapes");
    return TIR_OK;
}

static int nthreads(const sgemm_config *c) {
    return c->warps_m * c->warps_n * c->threads_m * c->threads_n;
}

/* The index of buffer `name` among the block's reads. */
tir_status sgemm_read_index(tir_schedule *s, tir_block_rv b, const char *name, int *out) {
    const tir_block *blk;
    tir_status st = tir_sched_get_block_node(s, b, &blk);
    if (st != TIR_OK) return st;
    for (int i = 0; i < blk->nreads; i++)
        if (!strcmp(blk->reads[i].buffer->name, name)) {
            *out = i;
            return TIR_OK;
        }
    return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG, "block %s does not read %s",
                        blk->name, name);
}

/* The loop nest of C (of C_rf with split-K, under the split loop kz, a
 * zero handle without): blocks, warps, lanes, k0, k1, then the thread
 * tile.  Returns the fused thread loop and k0, k1. */
static tir_status tile(tir_schedule *s, const sgemm_config *cfg, tir_block_rv c, tir_loop_rv kz,
                       tir_loop_rv *thread, tir_loop_rv *k0, tir_loop_rv *k1, hook_fn hook,
                       void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, c, &loops, &n));
    /* C: i, j, k; C_rf: i, j, kz, k (kz spatial, the rest of k reduced) */
    tir_loop_rv i = loops[0], j = loops[1], k = loops[n - 1], is[4], js[4], ks[2];
    CALL(tir_sched_split(s, i, 4,
                         (const int64_t[]){TIR_SPLIT_INFER, cfg->warps_m, cfg->threads_m, cfg->tm},
                         is));
    CALL(tir_sched_split(s, j, 4,
                         (const int64_t[]){TIR_SPLIT_INFER, cfg->warps_n, cfg->threads_n, cfg->tn},
                         js));
    CALL(tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, cfg->bk}, ks));
    const tir_loop_rv order[11] = {kz,    is[0], js[0], is[1], js[1], is[2],
                                   js[2], ks[0], ks[1], is[3], js[3]};
    CALL(tir_sched_reorder(s, kz.id ? 11 : 10, kz.id ? order : order + 1));
    if (kz.id) CALL(tir_sched_bind(s, kz, "blockIdx.z"));
    CALL(tir_sched_fuse(s, 4, (const tir_loop_rv[]){is[1], js[1], is[2], js[2]}, thread));
    CALL(tir_sched_bind(s, is[0], "blockIdx.y"));
    CALL(tir_sched_bind(s, js[0], "blockIdx.x"));
    CALL(tir_sched_bind(s, *thread, "threadIdx.x"));
    CALL(tir_sched_unroll(s, is[3]));
    CALL(tir_sched_unroll(s, js[3]));
    *k0 = ks[0], *k1 = ks[1];
    return TIR_OK;
}

/* A copy block under k0 (a BK x BM or BM x BK tile): its loops fused and
 * split over the block's threads, `vec` consecutive elements each
 * (vectorized when vectorize is set, unrolled otherwise). */
static tir_status spread(tir_schedule *s, const sgemm_config *cfg, tir_block_rv b,
                         bool vectorize, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, b, &loops, &n));
    tir_loop_rv fused, parts[3];
    CALL(tir_sched_fuse(s, 2, loops + n - 2, &fused));
    CALL(tir_sched_split(s, fused, 3,
                         (const int64_t[]){TIR_SPLIT_INFER, nthreads(cfg), cfg->vec}, parts));
    CALL(tir_sched_bind(s, parts[1], "threadIdx.x"));
    CALL(vectorize ? tir_sched_vectorize(s, parts[2]) : tir_sched_unroll(s, parts[2]));
    CALL(tir_sched_unroll(s, parts[0]));
    return TIR_OK;
}

/* The caches of input `name` of c, all made before any compute_at (which
 * fixes their places): a shared tile filled at k0, through a register copy
 * when staging, and a register fragment at k1 (the thread's TM or TN
 * consecutive elements of a shared row, read vec at a time). */
static tir_status caches(tir_schedule *s, const sgemm_config *cfg, tir_block_rv c,
                         const char *name, bool k_major, tir_loop_rv k0, tir_loop_rv k1,
                         hook_fn hook, void *user) {
    char sh_name[64];
    int idx;
    tir_status st = sgemm_read_index(s, c, name, &idx);
    if (st != TIR_OK) return st;
    tir_block_rv shared, local, frag;
    CALL(tir_sched_cache_read(s, c, idx, "shared", 0, NULL, &shared));
    snprintf(sh_name, sizeof sh_name, "%s_shared", name);
    if ((st = sgemm_read_index(s, c, sh_name, &idx)) != TIR_OK) return st;
    CALL(tir_sched_cache_read(s, c, idx, "local", 0, NULL, &frag));
    local = shared;
    if (cfg->staging) CALL(tir_sched_cache_read(s, shared, 0, "local", 0, NULL, &local));
    if (k_major) CALL(tir_sched_transform_layout(s, shared, 0, true, "lambda i, k: (k, i)"));
    CALL(tir_sched_compute_at(s, frag, k1, false));
    CALL(tir_sched_compute_at(s, shared, k0, false));
    if (cfg->staging) CALL(tir_sched_compute_at(s, local, k0, false));
    if (cfg->pad > 0) CALL(tir_sched_storage_align(s, shared, 0, 0, 32, cfg->pad % 32));
    if (cfg->staging && (st = spread(s, cfg, local, true, hook, user)) != TIR_OK) return st;
    /* The k-major store is a transpose: scalar shared stores. */
    if ((st = spread(s, cfg, shared, !k_major && cfg->vec > 1, hook, user)) != TIR_OK) return st;
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, frag, &loops, &n));
    tir_loop_rv parts[2];
    CALL(tir_sched_split(s, loops[n - 1], 2, (const int64_t[]){TIR_SPLIT_INFER, cfg->vec},
                         parts));
    CALL(tir_sched_vectorize(s, parts[1]));
    CALL(tir_sched_unroll(s, parts[0]));
    return TIR_OK;
}

/* The accumulator in registers, written back under the thread loop (as
 * float4 stores, scalar atomic adds with splitk_atomic). */
static tir_status accumulator(tir_schedule *s, const sgemm_config *cfg, tir_block_rv c,
                              tir_loop_rv thread, hook_fn hook, void *user) {
    tir_block_rv acc;
    CALL(tir_sched_cache_write(s, c, 0, "local", 0, NULL, &acc));
    CALL(tir_sched_reverse_compute_at(s, acc, thread, false));
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, acc, &loops, &n));
    tir_loop_rv i = loops[n - 2], parts[2];
    CALL(tir_sched_split(s, loops[n - 1], 2, (const int64_t[]){TIR_SPLIT_INFER, cfg->vec},
                         parts));
    bool atomic = cfg->splitk > 1 && cfg->splitk_atomic;
    CALL(atomic ? tir_sched_unroll(s, parts[1]) : tir_sched_vectorize(s, parts[1]));
    CALL(tir_sched_unroll(s, parts[0]));
    CALL(tir_sched_unroll(s, i));
    return TIR_OK;
}

/* Register staging: global loads (stage 0) first, then the compute of the
 * previous tile (stage 1), then the shared stores (stage 0). */
static tir_status pipeline(tir_schedule *s, tir_loop_rv k0, hook_fn hook, void *user) {
    /* k0's body: A_local, A_shared, B_local, B_shared, compute. */
    CALL(tir_sched_software_pipeline(s, k0, 5, (const int64_t[]){0, 0, 0, 0, 1}, 5,
                                     (const int64_t[]){0, 3, 1, 4, 2}, 0, NULL));
    return TIR_OK;
}

/* Split-K: k split into [splitk, None] and the outer part rfactored; *rf
 * is the C_rf block (computing the partial sums) and *kz its split loop. */
static tir_status rfactor_k(tir_schedule *s, const sgemm_config *cfg, tir_block_rv c,
                            tir_block_rv *rf, tir_loop_rv *kz, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, c, &loops, &n));
    /* Each slice a whole number of BK tiles, so that only the last slice
     * is ragged (the local copies' k then decodes blockIdx.z, and the
     * 8-step tiles stay unpredicated elsewhere); a slice count that would
     * leave the last slice empty (rfactor refuses it) is lowered. */
    int64_t f[2] = {cfg->splitk, TIR_SPLIT_INFER}, K;
    const tir_block *blk;
    CALL(tir_sched_get_block_node(s, c, &blk));
    const tir_iter_var *kv = &blk->iters[blk->niters - 1];
    if (kv->kind == TIR_ITER_REDUCE && tir_expr_const_int(kv->dom.extent, &K) && K > 0) {
        int64_t slice = (K + cfg->splitk - 1) / cfg->splitk;
        slice = (slice + cfg->bk - 1) / cfg->bk * cfg->bk;
        f[0] = (K + slice - 1) / slice;
        f[1] = slice;
    }
    tir_loop_rv k2[2];
    CALL(tir_sched_split(s, loops[n - 1], 2, f, k2));
    CALL(tir_sched_rfactor(s, k2[0], 0, rf));
    *kz = k2[0];
    return TIR_OK;
}

/* The write-back C[i, j] = sum over s of C_rf[s, i, j]: i and j fused
 * and spread over blocks of nthreads threads, s serial per thread, the sum
 * accumulated in a register. */
static tir_status write_back(tir_schedule *s, const sgemm_config *cfg, tir_block_rv c,
                             hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, c, &loops, &n));
    tir_loop_rv fused, parts[2];
    CALL(tir_sched_fuse(s, 2, loops, &fused));
    CALL(tir_sched_split(s, fused, 2, (const int64_t[]){TIR_SPLIT_INFER, nthreads(cfg)}, parts));
    CALL(tir_sched_bind(s, parts[0], "blockIdx.x"));
    CALL(tir_sched_bind(s, parts[1], "threadIdx.x"));
    /* the slices' loads all in flight at once */
    CALL(tir_sched_get_loops(s, c, &loops, &n));
    if (cfg->splitk <= 64) CALL(tir_sched_unroll(s, loops[n - 1]));
    /* the sum in a register, C written once (not read and written in
     * global memory once per slice) */
    tir_block_rv acc;
    CALL(tir_sched_cache_write(s, c, 0, "local", 0, NULL, &acc));
    CALL(tir_sched_reverse_compute_at(s, acc, parts[1], false));
    return TIR_OK;
}

tir_status sgemm_schedule(tir_schedule *s, const sgemm_config *cfg, hook_fn hook, void *user) {
    tir_block_rv c, wb = {0};
    tir_loop_rv thread, k0, k1, kz = {0};
    tir_status st;
    CALL(tir_sched_get_block(s, "C", &c));
    if (cfg->splitk > 1) {
        wb = c;
        if ((st = rfactor_k(s, cfg, wb, &c, &kz, hook, user)) != TIR_OK) return st;
        if (cfg->splitk_atomic)
            CALL(tir_sched_annotate_block_int(s, wb, tir_annot_key_str(TIR_ANN_ATOMIC_REDUCTION),
                                              1));
        else if ((st = write_back(s, cfg, wb, hook, user)) != TIR_OK)
            return st;
    }
    if ((st = tile(s, cfg, c, kz, &thread, &k0, &k1, hook, user)) != TIR_OK) return st;
    if ((st = accumulator(s, cfg, c, thread, hook, user)) != TIR_OK) return st;
    if ((st = caches(s, cfg, c, "A", true, k0, k1, hook, user)) != TIR_OK) return st;
    if ((st = caches(s, cfg, c, "B", false, k0, k1, hook, user)) != TIR_OK) return st;
    CALL(tir_sched_unroll(s, k1));
    /* The accumulator's zero-init before the k loop, not a select per
     * k step. */
    tir_block_rv init;
    CALL(tir_sched_decompose_reduction(s, c, k0, &init));
    return cfg->staging ? pipeline(s, k0, hook, user) : TIR_OK;
}
