/* tiling.c: the multi-level tiling rule for a block with spatial and
 * reduction loops (a matmul, a batch matmul, a matmul with a fused
 * epilogue), with the knobs of tir_tile_config.
 *
 * This is the "Step 8" schedule of examples/sgemm.c, generalised from the
 * named buffers of tir_def_matmul to any block whose loops are spatial
 * loops (the last two are the output's rows i and columns j, any before
 * them batch loops) and one reduction loop k, reading one input indexed
 * by i and k (A) and one by k and j (B).  Per thread block a BM x BN tile
 * of the output, the k loop in tiles of BK:
 *
 *   for k0 in K / BK:                    software pipeline, 2 stages
 *     A_local  <- A[tile rows, k0 tile]  stage 0: vector global loads
 *     B_local  <- B[k0 tile, tile cols]
 *     A_shared <- A_local (k-major)      stage 0, after the compute
 *     B_shared <- B_local
 *     for k1 in BK:                      stage 1: the compute, unrolled
 *       A_frag <- A_shared[k1, TM rows]  vector shared loads
 *       B_frag <- B_shared[k1, TN cols]
 *       C_local[TM, TN] += A_frag x B_frag   (zeroed before k0:
 *                                            decompose_reduction)
 *   C[...] <- C_local                    vector stores
 *
 * With stages = S >= 2 (and no staging) the pipeline is a multistage one
 * instead, as CUTLASS's multistage sgemm on sm_80+:
 *
 *   for k0 in K / BK:                    software pipeline, S stages
 *     A_shared[k0 % S] <- A[tile rows, k0 tile] (k-major)  stage 0
 *     B_shared[k0 % S] <- B[k0 tile, tile cols]            stage 0
 *     for k1 in BK: ... as above, from version (k0 - S + 1) % S  stage S-1
 *
 * The copies of S - 1 k tiles are in flight during a compute.  The
 * lowering (sw_pipeline's auto-async) makes the stage-0 copies cp.async
 * when every store of the stage is a plain global -> shared copy: B's
 * vector copies as 8- or 16-byte cp.async where the offsets are proven
 * aligned, A's transposing scalar copies as 4-byte ones.  A ragged tile's
 * copies are zero-filling (relax_guards: if g: S = G else: S = 0), which
 * auto-async does not convert: the stage stays synchronous (correct, with
 * S versions, but each warp waits for its loads where it issues them).
 *
 * The block's threads are warps_m x warps_n warps of threads_m x threads_n
 * lanes, each a TM x TN tile of the output in registers.  Batch loops go
 * to blockIdx.z; split-K (no batch) rfactors k into blockIdx.z slices and
 * sums them in a second kernel.  Only public schedule calls: every step is
 * in the trace, so a tuned schedule replays from its text.
 */
#include <stdio.h>
#include <string.h>

#include "tune_internal.h"

/* What the rule needs to know of the block: its loop roles and inputs. */
typedef struct nest {
    tir_block_rv c;
    const char *name;
    int nbatch;           /* spatial loops before i and j */
    int a_read, b_read;   /* indices among the block's reads */
    bool a_transpose;     /* A's last dim is k: its shared tile is transposed */
    bool b_transpose;     /* likewise for B (B stored [j, k]) */
    int a_ndim, b_ndim;
} nest;

tir_tile_config tir_tile_config_default(void) {
    tir_tile_config c = {.warps_m = 2, .warps_n = 4, .threads_m = 8, .threads_n = 4,
                         .tm = 8, .tn = 8, .bk = 8, .vec = 4, .staging = true, .pad = 4,
                         .splitk = 1, .splitk_atomic = false, .lsr = true, .stages = 0};
    return c;
}

/* In 64 bits, saturated: a configuration read from text may hold any
 * int, and an int product overflowing is undefined. */
int tir_tile_config_threads(const tir_tile_config *c) {
    int64_t t = 1;
    const int k[] = {c->warps_m, c->warps_n, c->threads_m, c->threads_n};
    for (int i = 0; i < 4; i++) {
        t *= k[i];
        if (t > INT32_MAX || t < INT32_MIN) return t > 0 ? INT32_MAX : INT32_MIN;
    }
    return (int)t;
}

bool tune_knobs_in_range(const tir_tile_config *c) {
    const int k[] = {c->warps_m, c->warps_n, c->threads_m, c->threads_n,
                     c->tm,      c->tn,      c->bk,        c->vec,       c->splitk};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (k[i] < 1 || k[i] > TUNE_KNOB_MAX) return false;
    return c->pad >= 0 && c->pad <= TUNE_KNOB_MAX;
}

int64_t tir_tile_config_shared_bytes(const tir_tile_config *c, int dtype_bytes) {
    int64_t bm = (int64_t)c->warps_m * c->threads_m * c->tm;
    int64_t bn = (int64_t)c->warps_n * c->threads_n * c->tn;
    int64_t pad = c->pad > 0 ? c->pad % 32 : 0;
    int64_t a = (int64_t)c->bk * (bm + pad) * dtype_bytes;
    int64_t b = (int64_t)c->bk * (bn + pad) * dtype_bytes;
    /* one version of each tile (register staging needs no second) */
    if (c->stages < 2) return a + b;
    /* sw_pipeline starts each version at a multiple of 16 bytes */
    return ((a + 15) / 16 * 16 + (b + 15) / 16 * 16) * c->stages;
}

/* Whether read r of b is indexed by var v (in any dimension). */
static bool read_uses(const tir_block *b, int r, const tir_var *v) {
    for (int d = 0; d < b->reads[r].ndim; d++)
        if (tir_uses_var(b->reads[r].ranges[d].min, v)) return true;
    return false;
}

static bool last_dim_uses(const tir_buffer_region *r, const tir_var *v) {
    return tir_uses_var(r->ranges[r->ndim - 1].min, v);
}

/* The loop roles and A and B of block `name`; an error saying what does
 * not fit the rule otherwise. */
static tir_status analyze(tir_schedule *s, const char *name, nest *n) {
    tir_ctx *ctx = tir_sched_ctx(s);
    memset(n, 0, sizeof *n);
    n->name = name;
    const tir_block *b;
    tir_status st = tir_sched_get_block(s, name, &n->c);
    if (st == TIR_OK) st = tir_sched_get_block_node(s, n->c, &b);
    if (st != TIR_OK) return st;
    int ni = b->niters;
    bool shape_ok = ni >= 3 && b->iters[ni - 1].kind == TIR_ITER_REDUCE;
    for (int i = 0; shape_ok && i < ni - 1; i++) shape_ok = b->iters[i].kind == TIR_ITER_SPATIAL;
    if (!shape_ok || b->nwrites != 1)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tiling rule: block %s is not spatial loops then one reduction "
                            "loop writing one buffer (a matmul-like block)",
                            name);
    const tir_var *vi = b->iters[ni - 3].var, *vj = b->iters[ni - 2].var,
                  *vk = b->iters[ni - 1].var;
    n->nbatch = ni - 3;
    n->a_read = n->b_read = -1;
    for (int r = 0; r < b->nreads; r++) {
        if (!read_uses(b, r, vk)) continue;
        bool ui = read_uses(b, r, vi), uj = read_uses(b, r, vj);
        if (ui && !uj && n->a_read < 0) n->a_read = r;
        if (uj && !ui && n->b_read < 0) n->b_read = r;
    }
    if (n->a_read < 0 || n->b_read < 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tiling rule: block %s has no input indexed by (%s, %s) and one by "
                            "(%s, %s)",
                            name, vi->name, vk->name, vk->name, vj->name);
    n->a_transpose = last_dim_uses(&b->reads[n->a_read], vk);
    n->b_transpose = last_dim_uses(&b->reads[n->b_read], vk);
    n->a_ndim = b->reads[n->a_read].ndim;
    n->b_ndim = b->reads[n->b_read].ndim;
    return TIR_OK;
}

tir_status tune_read_index(tir_schedule *s, tir_block_rv b, const char *bufname, int *out) {
    const tir_block *blk;
    tir_status st = tir_sched_get_block_node(s, b, &blk);
    if (st != TIR_OK) return st;
    for (int i = 0; i < blk->nreads; i++)
        if (!strcmp(blk->reads[i].buffer->name, bufname)) {
            *out = i;
            return TIR_OK;
        }
    return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG, "block %s does not read %s",
                        blk->name, bufname);
}

static const char *read_name(tir_schedule *s, tir_block_rv b, int r) {
    const tir_block *blk;
    if (tir_sched_get_block_node(s, b, &blk) != TIR_OK || r < 0 || r >= blk->nreads) return NULL;
    return blk->reads[r].buffer->name;
}

/* Block swizzle (both rules): blocks launched in groups of SWIZZLE_G
 * block rows, down a column of the group before the next column
 * (blockIdx.x = j * G + i mod G), so that a wave of blocks reads G row
 * strips of A and about blocks / G column strips of B instead of a few
 * rows of A and every column of B: less DRAM traffic per wave.
 * Hand-edited PTX on the H200 (run 43, bf16 8192^3): +2% to +7% (the
 * GPU's clock drifted within the run); at 4096^3 (512 blocks of 128x256)
 * no gain, so only grids of SWIZZLE_MIN_BLOCKS or more whose block rows G
 * divides (no guard).  In the tensor-core rule (run 44, 8192^3): bf16 438
 * -> 475 TFLOP/s, f16 446 -> 460, tf32 187 -> 189; in the float32 rule
 * (run 48) Step 8 4096^3 0.970 -> 0.973x cuBLAS, 8192^3 0.989 -> 0.993,
 * fused matmul + bias + ReLU 4096^3 tuned 0.997 -> 1.005x, but Step 7 (no
 * pipeline) 0.832 -> 0.706 and split-K 4 at 4095^3 0.843 -> 0.820 (run 52):
 * the float32 rule swizzles only pipelines without split-K or batches. */
enum { SWIZZLE_G = 8, SWIZZLE_MIN_BLOCKS = 1024 };

tir_status tune_bind_blocks(tir_schedule *s, bool swizzle, tir_loop_rv bi, tir_loop_rv bj,
                            hook_fn hook, void *user) {
    tir_status st;
    const tir_for *fi = NULL, *fj = NULL;
    int64_t rows = 0, cols = 0;
    if ((st = tir_sched_get_for(s, bi, &fi)) != TIR_OK ||
        (st = tir_sched_get_for(s, bj, &fj)) != TIR_OK)
        return st;
    if (swizzle && tir_expr_const_int(fi->extent, &rows) && tir_expr_const_int(fj->extent, &cols) &&
        rows > SWIZZLE_G && rows % SWIZZLE_G == 0 && rows * cols >= SWIZZLE_MIN_BLOCKS) {
        tir_loop_rv g[2], x;
        CALL(tir_sched_split(s, bi, 2, (const int64_t[]){TIR_SPLIT_INFER, SWIZZLE_G}, g));
        CALL(tir_sched_reorder(s, 3, (const tir_loop_rv[]){g[0], bj, g[1]}));
        CALL(tir_sched_fuse(s, 2, (const tir_loop_rv[]){bj, g[1]}, &x));
        CALL(tir_sched_bind(s, g[0], "blockIdx.y"));
        CALL(tir_sched_bind(s, x, "blockIdx.x"));
        return TIR_OK;
    }
    CALL(tir_sched_bind(s, bi, "blockIdx.y"));
    CALL(tir_sched_bind(s, bj, "blockIdx.x"));
    return TIR_OK;
}

/* The loop nest of the block c (of C_rf with split-K, under the split
 * loop kz, a zero handle without): batch and blocks, warps, lanes, k0,
 * k1, then the thread tile.  Returns the fused thread loop and k0, k1. */
static tir_status tile(tir_schedule *s, const tir_tile_config *cfg, const nest *nb,
                       tir_block_rv c, tir_loop_rv kz, tir_loop_rv *thread, tir_loop_rv *k0,
                       tir_loop_rv *k1, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, c, &loops, &n));
    /* batch..., i, j, k; with split-K: i, j, kz, k (kz spatial) */
    int ii = nb->nbatch;
    tir_loop_rv batch[8], i = loops[ii], j = loops[ii + 1], k = loops[n - 1], is[4], js[4], ks[2];
    for (int b = 0; b < nb->nbatch && b < 8; b++) batch[b] = loops[b];
    CALL(tir_sched_split(s, i, 4,
                         (const int64_t[]){TIR_SPLIT_INFER, cfg->warps_m, cfg->threads_m, cfg->tm},
                         is));
    CALL(tir_sched_split(s, j, 4,
                         (const int64_t[]){TIR_SPLIT_INFER, cfg->warps_n, cfg->threads_n, cfg->tn},
                         js));
    CALL(tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, cfg->bk}, ks));
    tir_loop_rv order[20];
    int no = 0;
    if (kz.id) order[no++] = kz;
    for (int b = 0; b < nb->nbatch; b++) order[no++] = batch[b];
    const tir_loop_rv rest[10] = {is[0], js[0], is[1], js[1], is[2],
                                  js[2], ks[0], ks[1], is[3], js[3]};
    for (int r = 0; r < 10; r++) order[no++] = rest[r];
    CALL(tir_sched_reorder(s, no, order));
    if (kz.id) CALL(tir_sched_bind(s, kz, "blockIdx.z"));
    if (nb->nbatch > 0) {
        tir_loop_rv bz = batch[0];
        if (nb->nbatch > 1) CALL(tir_sched_fuse(s, nb->nbatch, batch, &bz));
        CALL(tir_sched_bind(s, bz, "blockIdx.z"));
    }
    CALL(tir_sched_fuse(s, 4, (const tir_loop_rv[]){is[1], js[1], is[2], js[2]}, thread));
    /* the swizzle only with a pipeline and one slice per output tile:
       without a pipeline (Step 7) each block waits for its loads, and
       launched in groups it was 15% slower at 4096^3 (run 48: 0.832 ->
       0.706x cuBLAS; Step 8 0.970 -> 0.973); split-K 4 at 4095^3 was 3%
       slower (run 52: 0.843 -> 0.820); batches are unmeasured */
    bool swizzle = !cfg->no_swizzle && (cfg->staging || cfg->stages >= 2) && !kz.id &&
                   nb->nbatch == 0;
    tir_status st = tune_bind_blocks(s, swizzle, is[0], js[0], hook, user);
    if (st != TIR_OK) return st;
    CALL(tir_sched_bind(s, *thread, "threadIdx.x"));
    CALL(tir_sched_unroll(s, is[3]));
    CALL(tir_sched_unroll(s, js[3]));
    *k0 = ks[0], *k1 = ks[1];
    return TIR_OK;
}

/* A copy block under k0 (a BK x BM or BM x BK tile): its last two loops
 * fused and split over the block's threads, `vec` consecutive elements
 * each (vectorized when vectorize is set, unrolled otherwise). */
static tir_status spread(tir_schedule *s, const tir_tile_config *cfg, tir_block_rv b,
                         bool vectorize, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, b, &loops, &n));
    tir_loop_rv fused, parts[3];
    CALL(tir_sched_fuse(s, 2, loops + n - 2, &fused));
    CALL(tir_sched_split(
        s, fused, 3, (const int64_t[]){TIR_SPLIT_INFER, tir_tile_config_threads(cfg), cfg->vec},
        parts));
    CALL(tir_sched_bind(s, parts[1], "threadIdx.x"));
    CALL(vectorize ? tir_sched_vectorize(s, parts[2]) : tir_sched_unroll(s, parts[2]));
    CALL(tir_sched_unroll(s, parts[0]));
    return TIR_OK;
}

/* "lambda d0, ..., dn: (d0, ..., dn, dn-1)": the last two dims swapped. */
static void swap_map(char *buf, size_t cap, int ndim) {
    size_t o = (size_t)snprintf(buf, cap, "lambda ");
    for (int d = 0; d < ndim && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%sd%d", d ? ", " : "", d);
    o += (size_t)snprintf(buf + o, cap - o, ": (");
    for (int d = 0; d < ndim && o < cap; d++) {
        int src = d < ndim - 2 ? d : (d == ndim - 2 ? ndim - 1 : ndim - 2);
        o += (size_t)snprintf(buf + o, cap - o, "%sd%d", d ? ", " : "", src);
    }
    snprintf(buf + o, cap - o, ")");
}

/* The caches of input `name` of c, all made before any compute_at (which
 * fixes their places): a shared tile filled at k0, through a register copy
 * when staging, stored k-major (transposed when the input's last dim is
 * k), and a register fragment at k1 (the thread's TM or TN consecutive
 * elements of a shared row, read vec at a time). */
static tir_status caches(tir_schedule *s, const tir_tile_config *cfg, tir_block_rv c,
                         const char *name, bool transpose, int ndim, tir_loop_rv k0,
                         tir_loop_rv k1, hook_fn hook, void *user) {
    char sh_name[96], map[160];
    int idx;
    tir_status st = tune_read_index(s, c, name, &idx);
    if (st != TIR_OK) return st;
    tir_block_rv shared, local, frag;
    CALL(tir_sched_cache_read(s, c, idx, "shared", 0, NULL, &shared));
    snprintf(sh_name, sizeof sh_name, "%s_shared", name);
    if ((st = tune_read_index(s, c, sh_name, &idx)) != TIR_OK) return st;
    CALL(tir_sched_cache_read(s, c, idx, "local", 0, NULL, &frag));
    local = shared;
    if (cfg->staging) CALL(tir_sched_cache_read(s, shared, 0, "local", 0, NULL, &local));
    swap_map(map, sizeof map, ndim);
    if (transpose) CALL(tir_sched_transform_layout(s, shared, 0, true, map));
    CALL(tir_sched_compute_at(s, frag, k1, false));
    CALL(tir_sched_compute_at(s, shared, k0, false));
    if (cfg->staging) CALL(tir_sched_compute_at(s, local, k0, false));
    if (cfg->pad > 0)
        CALL(tir_sched_storage_align(s, shared, 0, ndim - 2, 32, cfg->pad % 32));
    if (cfg->staging && (st = spread(s, cfg, local, true, hook, user)) != TIR_OK) return st;
    /* A transposing store is scalar. */
    if ((st = spread(s, cfg, shared, !transpose && cfg->vec > 1, hook, user)) != TIR_OK)
        return st;
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

/* Elementwise epilogues that read what `writer` writes (ReLU after the
 * bias was fused into the reduction's init) inlined into it, so the
 * output is written once, from registers. */
static tir_status inline_epilogues(tir_schedule *s, tir_block_rv writer, hook_fn hook,
                                   void *user) {
    for (int guard = 0; guard < 8; guard++) {
        const tir_block_rv *cons;
        const tir_block *b = NULL;
        int n;
        CALL(tir_sched_get_consumers(s, writer, &cons, &n));
        tir_block_rv d = n > 0 ? cons[0] : (tir_block_rv){0};
        if (n == 0 || tir_sched_get_block_node(s, d, &b) != TIR_OK || b->init) return TIR_OK;
        for (int i = 0; i < b->niters; i++)
            if (b->iters[i].kind != TIR_ITER_SPATIAL) return TIR_OK; /* split-K's sum */
        CALL(tir_sched_reverse_compute_inline(s, d));
    }
    return TIR_OK;
}

/* The accumulator in registers, written back under the thread loop (with
 * any elementwise epilogue), as vector stores, or scalar atomic adds with
 * splitk_atomic (there is no vector atomic add). */
static tir_status accumulator(tir_schedule *s, const tir_tile_config *cfg, tir_block_rv c,
                              tir_loop_rv thread, hook_fn hook, void *user) {
    tir_block_rv acc;
    tir_status st;
    CALL(tir_sched_cache_write(s, c, 0, "local", 0, NULL, &acc));
    CALL(tir_sched_reverse_compute_at(s, acc, thread, false));
    if ((st = inline_epilogues(s, acc, hook, user)) != TIR_OK) return st;
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, acc, &loops, &n));
    tir_loop_rv i = loops[n - 2], parts[2];
    CALL(tir_sched_split(s, loops[n - 1], 2, (const int64_t[]){TIR_SPLIT_INFER, cfg->vec},
                         parts));
    bool atomic = cfg->splitk > 1 && cfg->splitk_atomic;
    CALL(atomic ? tir_sched_unroll(s, parts[1]) : tir_sched_vectorize(s, parts[1]));
    if (cfg->gvec && !atomic)
        CALL(tir_sched_annotate_loop_int(
            s, parts[1], tir_annot_key_str(TIR_ANN_VECTORIZE_GLOBAL_GUARDED), 1));
    CALL(tir_sched_unroll(s, parts[0]));
    CALL(tir_sched_unroll(s, i));
    return TIR_OK;
}

/* The k-tile pipeline's tail (pipeline, multistage): guarded or clamped
 * where the body has at least 512 FMAs per thread, peeled otherwise. */
static tir_status tail(tir_schedule *s, const tir_tile_config *cfg, tir_loop_rv k0) {
    if ((int64_t)cfg->tm * cfg->tn * cfg->bk < 512 || !(cfg->guard_tail || cfg->clamp_tail))
        return TIR_OK;
    tir_annot_key key = cfg->guard_tail ? TIR_ANN_SOFTWARE_PIPELINE_GUARD_TAIL
                                        : TIR_ANN_SOFTWARE_PIPELINE_CLAMP_TAIL;
    return tir_sched_annotate_loop_int(s, k0, tir_annot_key_str(key), 1);
}

/* Register staging: global loads (stage 0) first, then the compute of the
 * previous tile (stage 1), then the shared stores (stage 0).  With
 * cfg->guard_tail (off by default: the guarded kernels measured 2.5% slower
 * at 4096^3 and 3.6% at 2048^3 on the H200, run 31) and a
 * body of at least 512 FMAs per thread (tm x tn x bk) the loop also runs
 * the last tile's compute, with the loads and stores guarded
 * (software_pipeline_guard_tail), instead of a peeled copy of the
 * unrolled compute after it: half the IR for LLVM (docs/performance.md,
 * "pipelines without a peeled epilogue").  Smaller bodies cost LLVM little
 * and got more registers with the guards (32 x 32 tiles of 8 x 4 per
 * thread, bk 4: 46 instead of 32), so they keep the peeled epilogue.
 * Annotated last, so that the calls before keep their positions for the
 * hook. */
static tir_status pipeline(tir_schedule *s, const tir_tile_config *cfg, tir_loop_rv k0,
                           hook_fn hook, void *user) {
    /* k0's body: A_local, A_shared, B_local, B_shared, compute. */
    CALL(tir_sched_software_pipeline(s, k0, 5, (const int64_t[]){0, 0, 0, 0, 1}, 5,
                                     (const int64_t[]){0, 3, 1, 4, 2}, 0, NULL));
    return tail(s, cfg, k0);
}

/* The multistage pipeline (stages >= 2, no staging): k0's body is
 * A_shared, B_shared (the copies, stage 0) and the k1 loop (the compute,
 * stage stages - 1), in that order.  No async_stages annotation:
 * sw_pipeline's auto-async makes the copy stage cp.async where it can
 * convert every copy, and leaves it synchronous (still correct) where it
 * cannot (a ragged tile's zero-filling copies are cp.async with a source
 * size); the annotation would demand the conversion.  The tail is guarded
 * as in pipeline(), by the same rule: a peeled epilogue would repeat the
 * unrolled compute stages - 1 times. */
static tir_status multistage(tir_schedule *s, const tir_tile_config *cfg, tir_loop_rv k0,
                             hook_fn hook, void *user) {
    int64_t last = cfg->stages - 1;
    CALL(tir_sched_software_pipeline(s, k0, 3, (const int64_t[]){0, 0, last}, 3,
                                     (const int64_t[]){0, 1, 2}, 0, NULL));
    return tail(s, cfg, k0);
}

/* Split-K: k split into [splitk, None] and the outer part rfactored; *rf
 * is the C_rf block (computing the partial sums) and *kz its split loop.
 * Each slice is a whole number of BK tiles, so that only the last slice
 * is ragged (the local copies' k then decodes blockIdx.z, and the k tiles
 * stay unpredicated elsewhere); a slice count that would leave the last
 * slice empty (rfactor refuses it) is lowered. */
tir_status tune_rfactor_k(tir_schedule *s, int splitk, int bk, tir_block_rv c, tir_block_rv *rf,
                          tir_loop_rv *kz, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, c, &loops, &n));
    int64_t f[2] = {splitk, TIR_SPLIT_INFER}, K;
    const tir_block *blk;
    CALL(tir_sched_get_block_node(s, c, &blk));
    const tir_iter_var *kv = &blk->iters[blk->niters - 1];
    if (kv->kind == TIR_ITER_REDUCE && tir_expr_const_int(kv->dom.extent, &K) && K > 0) {
        int64_t slice = (K + splitk - 1) / splitk;
        slice = (slice + bk - 1) / bk * bk;
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
 * and spread over blocks of the tile's threads, s serial per thread and
 * unrolled (the slices' loads all in flight), the sum in a register. */
tir_status tune_split_write_back(tir_schedule *s, int splitk, int threads, tir_block_rv c,
                                hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(tir_sched_get_loops(s, c, &loops, &n));
    tir_loop_rv fused, parts[2];
    CALL(tir_sched_fuse(s, 2, loops, &fused));
    /* fewer elements than threads: one block of exactly that many (a 1 x 1
     * C's write-back under a predicate left reverse_compute_at without
     * the region it writes) */
    const tir_for *ff = NULL;
    int64_t elems = 0;
    tir_status st = tir_sched_get_for(s, fused, &ff);
    if (st != TIR_OK) return st;
    if (tir_expr_const_int(ff->extent, &elems) && elems > 0 && elems < threads)
        threads = (int)elems;
    CALL(tir_sched_split(s, fused, 2,
                         (const int64_t[]){TIR_SPLIT_INFER, threads}, parts));
    CALL(tir_sched_bind(s, parts[0], "blockIdx.x"));
    CALL(tir_sched_bind(s, parts[1], "threadIdx.x"));
    CALL(tir_sched_get_loops(s, c, &loops, &n));
    if (splitk <= 64) CALL(tir_sched_unroll(s, loops[n - 1]));
    tir_block_rv acc;
    CALL(tir_sched_cache_write(s, c, 0, "local", 0, NULL, &acc));
    CALL(tir_sched_reverse_compute_at(s, acc, parts[1], false));
    return inline_epilogues(s, acc, hook, user);
}

/* The knobs themselves: positive, a warp of lanes, vec dividing the
 * thread tile, stages 0..4 and a multistage pipeline without staging, no
 * split-K with batch loops. */
static tir_status check_config(tir_ctx *ctx, const tir_tile_config *c, const nest *nb) {
    if (c->warps_m < 1 || c->warps_n < 1 || c->threads_m < 1 || c->threads_n < 1 ||
        c->tm < 1 || c->tn < 1 || c->bk < 1 || c->vec < 1 || c->splitk < 1 || c->pad < 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tiling rule: block %s: every tile size must be positive", nb->name);
    if (!tune_knobs_in_range(c))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tiling rule: block %s: each knob is at most %d", nb->name,
                            TUNE_KNOB_MAX);
    if (c->threads_m * c->threads_n != 32)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tiling rule: block %s: threads_m x threads_n = %d x %d is not a warp "
                            "of 32 lanes",
                            nb->name, c->threads_m, c->threads_n);
    if (c->tm % c->vec || c->tn % c->vec)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tiling rule: block %s: vec = %d does not divide the thread tile "
                            "%d x %d",
                            nb->name, c->vec, c->tm, c->tn);
    if (c->stages < 0 || c->stages > 4 || (c->stages >= 2 && c->staging))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tiling rule: block %s: stages = %d with staging = %d: stages is 0 or "
                            "1 (the pipeline staging says) or 2..4 (a multistage pipeline, "
                            "without staging)",
                            nb->name, c->stages, c->staging ? 1 : 0);
    if (c->splitk > 1 && nb->nbatch > 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tiling rule: block %s: split-K with batch loops is not supported "
                            "(both would take blockIdx.z)",
                            nb->name);
    return TIR_OK;
}

/* A bias epilogue (D = C + bias[j]) fused into the reduction's init
 * where fuse_reduction_epilogue accepts the block's consumer; a refusal
 * leaves the schedule as it was, and the epilogue is inlined after the
 * accumulator instead. */
static void fuse_bias(tir_schedule *s, const char *block, hook_fn hook, void *user) {
    tir_block_rv c;
    const tir_block_rv *cons;
    int n;
    if (tir_sched_get_block(s, block, &c) != TIR_OK) return;
    if (tir_sched_get_consumers(s, c, &cons, &n) != TIR_OK || n != 1) return;
    tir_block_rv d = cons[0];
    if (tir_sched_fuse_reduction_epilogue(s, c, d, NULL) == TIR_OK && hook)
        hook(user, s, "tir_sched_fuse_reduction_epilogue(s, c, d, NULL)");
    tir_ctx_clear_error(tir_sched_ctx(s));
}

tir_status tir_tune_tiling(tir_schedule *s, const char *block, const tir_tile_config *cfg,
                           void (*hook)(void *user, tir_schedule *s, const char *call),
                           void *user) {
    nest nb;
    /* (rfactor needs the identity as init: with split-K the epilogue is
     * inlined into the sum's write-back instead) */
    if (cfg->splitk <= 1) fuse_bias(s, block, hook, user);
    tir_status st = analyze(s, block, &nb);
    if (st == TIR_OK) st = check_config(tir_sched_ctx(s), cfg, &nb);
    if (st != TIR_OK) return st;
    char a_name[80], b_name[80];
    snprintf(a_name, sizeof a_name, "%s", read_name(s, nb.c, nb.a_read));
    snprintf(b_name, sizeof b_name, "%s", read_name(s, nb.c, nb.b_read));
    tir_block_rv c = nb.c, root;
    tir_loop_rv thread, k0, k1, kz = {0};
    CALL(tir_sched_get_block(s, "root", &root));
    CALL(tir_sched_annotate_block_int(s, root,
                                      tir_annot_key_str(TIR_ANN_LOOP_STRENGTH_REDUCTION),
                                      cfg->lsr ? 1 : 0));
    /* only where set: the schedules of configurations without it stay
     * what they were (a record's trace replays as written) */
    if (cfg->dunroll)
        CALL(tir_sched_annotate_block_int(s, root, tir_annot_key_str(TIR_ANN_DIRECT_UNROLL), 1));
    /* At most 128 registers a thread for 8x8 thread tiles in blocks of
     * 256 threads or more, so that two blocks of 256 stay resident per SM:
     * such a tile needs no more (Step 8: 127), but ptxas takes 140-144 for
     * the ragged kernels whose predicated zero-fill loads it keeps in
     * flight, and then only one block fits (docs/performance.md, run 27).
     * Other tiles are left alone: with the cap ptxas spends more registers
     * on small ones (512³'s 4x4 tiles: 87 instead of 63; 1000x520x333's:
     * 87 instead of 56), and then fewer blocks fit. */
    if (cfg->tm * cfg->tn == 64 && tir_tile_config_threads(cfg) >= 256)
        CALL(tir_sched_annotate_block_int(s, root, tir_annot_key_str(TIR_ANN_MAX_REGISTERS),
                                          128));
    if (cfg->splitk > 1) {
        tir_block_rv wb = c;
        if ((st = tune_rfactor_k(s, cfg->splitk, cfg->bk, wb, &c, &kz, hook, user)) != TIR_OK)
            return st;
        /* atomic: block C is left to tir_lower_kernels (atomic_reduce.c) */
        if (cfg->splitk_atomic)
            CALL(tir_sched_annotate_block_int(s, wb, tir_annot_key_str(TIR_ANN_ATOMIC_REDUCTION),
                                              1));
        else if ((st = tune_split_write_back(s, cfg->splitk, tir_tile_config_threads(cfg), wb, hook,
                                            user)) != TIR_OK)
            return st;
    }
    if ((st = tile(s, cfg, &nb, c, kz, &thread, &k0, &k1, hook, user)) != TIR_OK) return st;
    if ((st = accumulator(s, cfg, c, thread, hook, user)) != TIR_OK) return st;
    st = caches(s, cfg, c, a_name, nb.a_transpose, nb.a_ndim, k0, k1, hook, user);
    if (st != TIR_OK) return st;
    st = caches(s, cfg, c, b_name, nb.b_transpose, nb.b_ndim, k0, k1, hook, user);
    if (st != TIR_OK) return st;
    CALL(tir_sched_unroll(s, k1));
    /* The accumulator's zero-init before the k loop, not a select per
     * k step. */
    tir_block_rv init;
    CALL(tir_sched_decompose_reduction(s, c, k0, &init));
    if (cfg->stages >= 2) return multistage(s, cfg, k0, hook, user);
    return cfg->staging ? pipeline(s, cfg, k0, hook, user) : TIR_OK;
}
