/* tiling_tc.c: the tensor-core tiling rule (tir_tune_tc_tiling, the
 * "Step 9" schedule of examples/hgemm.c moved into the library) and its
 * rule-based default.
 *
 * The flow is TVM's for mma.sync: cache the output into accumulator
 * fragments (cache_write "frag.acc"), the inputs into shared tiles and from
 * there into operand fragments (cache_read "shared", then "frag.a" /
 * "frag.b"); tile the loops into blocks, warps, 16 x 8 output tiles and
 * 16-deep (TF32: 8-deep) k steps; then carve each tile operation out with
 * blockize and replace it with a tensor intrinsic (tensorize): the zero
 * fill of the accumulators, the fragment loads, the mma itself and the
 * store.  Per thread block a BM x BN tile of C, the k loop in tiles of BK;
 * the block's warps_m x warps_n warps (threadIdx.y; threadIdx.x is the
 * lane) each own a BM/warps_m x BN/warps_n tile of C.  Per k tile the A
 * and B tiles are copied to shared memory (16-byte vectors; cp.async in a
 * software pipeline of `stages` stages), rows that are whole 128-byte
 * segments left unpadded for lowering's swizzle, others padded, so that
 * ldmatrix is conflict-free either way.  B fragments are loaded two tiles at a time
 * (frag_load_b_16x16: one ldmatrix.x4.trans) and the k steps of a k tile
 * are software-pipelined so that the fragments of step s + 1 are loaded
 * before the mma of step s (cfg's no_b_pairs / no_frag_pipeline turn
 * either off).  Only public schedule calls, so every step is in the
 * trace and a tuned schedule replays from its text.
 */
#include <stdio.h>
#include <string.h>

#include "minitir/codegen.h"
#include "tune_internal.h"

tir_tc_config tir_tc_config_default(void) {
    tir_tc_config c = {.bm = 128, .bn = 128, .bk = 32, .warps_m = 2, .warps_n = 4,
                       .stages = 2, .async_copy = true, .pad = 8, .splitk = 1};
    return c;
}

/* The largest k tile of at most `most` that is a multiple of the mma's k
 * (mk) and divides K (tensorize refuses a ragged k tile): 48 for K = 336
 * rather than 16, three k steps per barrier instead of one.  0 when K is
 * not a multiple of mk (no tensor-core configuration fits then). */
static int k_tile(int64_t K, int mk, int most) {
    for (int bk = most; bk >= mk; bk -= mk)
        if (K % bk == 0) return bk;
    return 0;
}

/* The blocks of bm x bn tiles over t's M x N. */
static int64_t blocks_of(const tir_tune_task *t, int bm, int bn) {
    return ((t->M + bm - 1) / bm) * ((t->N + bn - 1) / bn);
}

/* The part of the GPU a grid of bm x bn blocks keeps busy: the blocks over
 * whole waves of nsm (a last, partial wave leaves SMs idle: 288 blocks of
 * 128 x 256 at 3072^3 run 3 waves of 132 for 2.18 waves of work), times
 * the part of the tiles' area inside M x N (ragged edge tiles compute
 * padding).  Counted in SMs also for tiles that run two blocks an SM: a
 * partial wave of those still gives most SMs one block each, which then
 * runs faster (run 77: 128 x 128 at 3072^3 measured 0.551x where counting
 * in slots of two predicts 0.48 and counting in SMs 0.58). */
static double busy(int64_t M, int64_t N, int bm, int bn, int nsm) {
    int64_t tm = (M + bm - 1) / bm, tn = (N + bn - 1) / bn, tiles = tm * tn;
    int64_t waves = (tiles + nsm - 1) / nsm;
    return (double)tiles / (double)(waves * nsm) * ((double)M * (double)N) /
           ((double)(tm * bm) * (double)(tn * bn));
}

/* The candidates where half a wave of 128-row blocks fills the GPU, with
 * their rate per busy SM relative to 128 x 256's (run 77, bf16, at shapes
 * whose waves are nearly full: 128 x 192 4 stages 443-489 TFLOP/s per 0.97
 * of the GPU against 503; 128 x 128 in 3 stages, two blocks an SM, 485).
 * 128 x 192 only where 192 divides N: its ragged tiles measured 0.39-0.52x
 * at 2048^3, 3584^3, 4096^3 and 5120^3, below what busy() predicts.
 * 128 x 128 only from two such blocks an SM: its rate is that of two
 * blocks sharing an SM (4 warps each); a grid that gives an SM one block
 * at most was not measured faster. */
typedef struct tc_cand {
    int bm, bn, warps_m, warps_n, stages;
    double rate;
} tc_cand;
static const tc_cand big_tiles[] = {
    {128, 256, 2, 4, 4, 1.00}, {128, 192, 2, 4, 4, 0.92}, {128, 128, 2, 2, 3, 0.96}};

/* The most of 8, 4, 2 slices of K that keeps `tiles` blocks within
 * max_blocks, deals the k tiles (of bk) evenly and leaves each slice at
 * least min_slice of K; 1 if none does. */
static int most_slices(const tir_tune_task *t, int64_t tiles, int bk, int64_t max_blocks,
                       int64_t min_slice) {
    for (int s = 8; s >= 2; s /= 2)
        if (tiles * s <= max_blocks && (t->K / bk) % s == 0 && t->K / s >= min_slice) return s;
    return 1;
}

/* Split-K for the small tiles, where fewer than a wave of them exist:
 * the largest of 8, 4, 2 slices that keeps the blocks within four waves,
 * deals the k tiles evenly and leaves each slice at least 1024 of K.
 * Run 83 (bf16 / tf32, x cuBLAS, the samples behind the bench's hold):
 * 512x512x8192 0.21 -> 0.58 / 0.24 -> 0.85 (8 slices), 768x768x4096
 * 0.36 -> 0.51 / 0.40 -> 0.67 (4), 1024x1024x8192 0.34 -> 0.46 / 0.45 ->
 * 0.63 (4) (the "before" figures: run 79's kernel times over run 83's
 * cuBLAS times; run 79's own cuBLAS readings were host-bound).  1024^3
 * lost with 2 slices of 512 in both types (run 79's kernel times: bf16 0.0158 -> 0.0199 ms,
 * tf32 0.0236 -> 0.0255), and where 128 x 256 tiles fill half a wave
 * (2048 x 2048 x 8192) splitting lost 15-35% in bf16, 7-19% in TF32. */
static int split_for(const tir_tune_task *t, const tir_tc_config *c, int nsm) {
    int64_t tiles = blocks_of(t, c->bm, c->bn);
    return tiles >= nsm ? 1 : most_slices(t, tiles, c->bk, 4 * (int64_t)nsm, 1024);
}

/* TF32's split-K: where the small tiles would leave SMs idle and K is
 * long (4096+), 128 x 128 tiles (2 x 2 warps, 3 stages) in the most of 8,
 * 4, 2 slices within three waves of blocks, slices of 512+ of K, at
 * least three quarters of a wave of blocks, and M and N multiples of 128
 * (ragged tiles: 448x448x8192 lost 17%, run 87).  Run 85
 * (behind the bench's hold; x cuBLAS, the rule's tile and slices against
 * the small-tile default): 512x512x8192 0.871 -> 0.967 (8), 512x512x4096
 * 0.831 -> 1.044 (8), 768x768x4096 0.664 -> 0.706 (8), 768x768x8192 0.663
 * -> 0.731 (8), 1024x1024x4096 0.705 -> 0.815 (4), 1024x1024x8192 0.618 ->
 * 0.764 (4), 640x1280x8192 0.489 -> 0.607 (4), 1024x512x8192 0.764 ->
 * 1.018 (8); the best of 2/4/8 slices at each but the two 768s (64 x 128
 * in 8: 2-3% better).  Held out (run 86, against the small-tile rule's
 * configuration): 512x1024x8192 0.63 -> 0.86, 896x896x4096 0.68 -> 0.70,
 * 1024x768x6144 0.66 -> 0.70, 512x512x16384 0.75 -> 0.84; 384x384x8192
 * (9 tiles, 72 blocks) lost 6%, hence the three quarters of a wave.
 * Run 87 (held out again): 640x640x8192 0.60 -> 0.81, 512x768x12288 0.65
 * -> 0.71, 1280x512x4096 0.68 -> 0.70; 448x448x8192 (3.5 tiles a side)
 * 1.13 -> 0.95, hence whole tiles.  In bf16 the same tiles spilled or did
 * not gain. */
static bool tf32_split(const tir_tune_task *t, tir_tc_config *c, int nsm) {
    tir_tc_config k = *c;
    k.bm = k.bn = 128, k.warps_m = k.warps_n = 2, k.stages = 3;
    if (t->kind != TIR_RT_GEMM_TF32 || t->K < 4096 || t->M % 128 || t->N % 128 ||
        !tune_tc_copies_whole(&k, 4))
        return false;
    int64_t tiles = blocks_of(t, 128, 128);
    int s = most_slices(t, tiles, k.bk, 3 * (int64_t)nsm, 512);
    if (s == 1 || 4 * tiles * s < 3 * (int64_t)nsm) return false; /* 384x384x8192: 72 lost */
    k.splitk = s;
    *c = k;
    return true;
}

/* The rule by shape.  Where at least half a wave (nsm / 2) of 128 x 256
 * blocks exists, the candidate above that keeps the GPU busiest for its
 * rate: 128 x 256 (2 x 4 warps, 4 stages; the least traffic from L2 per
 * flop, docs/tensor-cores.md, "The default by shape") unless its last wave
 * is badly filled, where 128 x 192 (3072^3: 0.48 -> 0.59x bf16, 0.51 ->
 * 0.63x tf32; 1536^3: 0.50 -> 0.58x, 0.61 -> 0.72x) or 128 x 128 (5120^3:
 * 0.578 -> 0.592x) fill it better (run 77).  Below half a wave, 64 x 128
 * and then 64 x 64 tiles (2 x 2 warps, 3 stages; several blocks an SM)
 * spread the work over more SMs (runs 69-70).  BK: 64 (TF32: 32), or the
 * largest multiple of the mma's k below it that divides K.  The big tiles
 * with 16-bit inputs and at least 32 k tiles get a clamped tail
 * (clamp_tail). */
tir_tc_config tir_tune_tc_default(const tir_tune_task *t, int nsm) {
    tir_tc_config c = tir_tc_config_default();
    int mk = t->kind == TIR_RT_GEMM_TF32 ? 8 : 16;
    int64_t half_wave = nsm / 2 > 0 ? nsm / 2 : 1;
    int64_t big = blocks_of(t, 128, 256), mid = blocks_of(t, 64, 128);
    int bk = k_tile(t->K, mk, 4 * mk);
    c.bk = bk ? bk : mk; /* K not a multiple of mk: the rule says why it refuses (check_k) */
    c.warps_m = c.warps_n = 2, c.stages = 3;
    if (big >= half_wave) {
        const tc_cand *best = NULL;
        double best_score = 0;
        for (size_t i = 0; i < sizeof big_tiles / sizeof *big_tiles; i++) {
            const tc_cand *k = &big_tiles[i];
            tir_tc_config kc = c;
            kc.bm = k->bm, kc.bn = k->bn, kc.warps_m = k->warps_m, kc.warps_n = k->warps_n;
            if (k->bn == 192 && t->N % 192) continue;
            /* copies of whole 16-byte rounds (tir_tune_tc_config_valid):
             * not 128 x 192 at bk 16 or 48 (TF32: 8 or 24) */
            if (!tune_tc_copies_whole(&kc, mk == 8 ? 4 : 2)) continue;
            if (k->bn == 128 && blocks_of(t, k->bm, k->bn) < 2 * (int64_t)nsm) continue;
            double score = k->rate * busy(t->M, t->N, k->bm, k->bn, nsm > 0 ? nsm : 1);
            if (!best || score > best_score) best = k, best_score = score;
        }
        if (!best) best = &big_tiles[0]; /* (128 x 256's copies are whole rounds at any bk) */
        c.bm = best->bm, c.bn = best->bn, c.warps_m = best->warps_m, c.warps_n = best->warps_n;
        c.stages = best->stages;
        /* a clamped tail (16-bit inputs, at least 32 k tiles): bf16 and
         * f16 at 2048^3-8192^3 0-5% faster than peeled and ~35% less
         * compile time; TF32 2-4% slower, and with fewer k tiles the
         * stages - 1 tiles loaded again cost (1000x520x336, 7 tiles: -6%;
         * docs/performance.md, runs 91-92) */
        c.clamp_tail = mk == 16 && t->K / c.bk >= 32;
    } else if (mid >= half_wave)
        c.bm = 64, c.bn = 128;
    else
        c.bm = c.bn = 64;
    if (big < half_wave && bk && !(blocks_of(t, c.bm, c.bn) < nsm && tf32_split(t, &c, nsm)))
        c.splitk = split_for(t, &c, nsm);
    return c;
}

tir_tc_config tir_tc_config_wgmma(void) {
    tir_tc_config c = tir_tc_config_default();
    c.wgmma = true, c.bm = c.bn = 128, c.bk = 32, c.warps_m = 1, c.warps_n = 4, c.stages = 3;
    return c;
}

tir_tc_config tir_tune_tc_default_arch(const tir_tune_task *t, int nsm, const char *arch) {
    tir_tc_config w = tir_tc_config_wgmma();
    if (!tir_codegen_arch_has_wgmma(arch) || t->kind != TIR_RT_GEMM_TF32 ||
        t->op != TIR_TUNE_MATMUL || t->M % w.bm || t->N % w.bn || t->K % w.bk || t->K < w.bk ||
        blocks_of(t, w.bm, w.bn) < nsm)
        return tir_tune_tc_default(t, nsm);
    return w;
}

/* The instruction's shapes and intrinsic names for the operand type. */
typedef struct tc_kind {
    int mk; /* the mma's k: 16, or 8 for TF32 */
    const char *mma, *load_a, *load_b;
    const char *load_b2; /* two adjacent B tiles (one ldmatrix.x4.trans), or NULL */
} tc_kind;

static tir_status kind_of(tir_schedule *s, tir_block_rv c, int a_read, tc_kind *k) {
    const tir_block *b;
    tir_status st = tir_sched_get_block_node(s, c, &b);
    if (st != TIR_OK) return st;
    tir_dtype t = b->reads[a_read].buffer->dtype;
    if (tir_dtype_eq(t, TIR_F32))
        *k = (tc_kind){8, "mma_m16n8k8_tf32", "frag_load_a_16x8_tf32", "frag_load_b_8x8_tf32",
                       NULL};
    else if (tir_dtype_eq(t, TIR_BF16))
        *k = (tc_kind){16, "mma_m16n8k16_bf16", "frag_load_a_16x16", "frag_load_b_16x8",
                       "frag_load_b_16x16"};
    else if (tir_dtype_eq(t, TIR_F16))
        *k = (tc_kind){16, "mma_m16n8k16_f16", "frag_load_a_16x16", "frag_load_b_16x8",
                       "frag_load_b_16x16"};
    else
        return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                            "tensor cores: block %s reads %s of a type tensor cores do not take "
                            "(float16, bfloat16, float32 as TF32)",
                            b->name, b->reads[a_read].buffer->name);
    return TIR_OK;
}

bool tune_tc_knobs_in_range(const tir_tc_config *c) {
    const int k[] = {c->bm, c->bn, c->bk, c->warps_m, c->warps_n};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (k[i] < 1 || k[i] > TUNE_KNOB_MAX) return false;
    return c->stages >= 1 && c->stages <= 64 && c->pad >= 0 && c->pad <= TUNE_KNOB_MAX &&
           c->splitk >= 0 && c->splitk <= 65535; /* the text's bound */
}

static tir_status check_config(tir_ctx *ctx, const tir_tc_config *c, int mk) {
    /* A configuration parsed from a record can hold any int; the products
       below (16 * warps_m, ...) must not overflow. */
    if (!tune_tc_knobs_in_range(c))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tensor cores: %dx%dx%d with %dx%d warps, %d stages, pad %d, splitk "
                            "%d: tiles and warps are 1..%d, stages 1..64, pad 0..%d, splitk "
                            "0..65535",
                            c->bm, c->bn, c->bk, c->warps_m, c->warps_n, c->stages, c->pad,
                            c->splitk, TUNE_KNOB_MAX, TUNE_KNOB_MAX);
    if (c->bm < 1 || c->bn < 1 || c->warps_m < 1 || c->warps_n < 1 || c->bm % (16 * c->warps_m) ||
        c->bn % (8 * c->warps_n) || c->bk < mk || c->bk % mk || c->stages < 1 || c->pad < 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tensor cores: %dx%dx%d with %dx%d warps, %d stages: each warp's tile must "
                            "be whole 16x8 tiles and BK a multiple of %d",
                            c->bm, c->bn, c->bk, c->warps_m, c->warps_n, c->stages, mk);
    return TIR_OK;
}

/* The last loop of block b (n loops in *loops). */
#define LOOPS(b) CALL(tir_sched_get_loops(s, (b), &loops, &n))

/* blockize(loop) then tensorize the new block with intrin. */
static tir_status carve(tir_schedule *s, tir_loop_rv loop, const char *intrin, hook_fn hook,
                        void *user) {
    tir_block_rv outer;
    CALL(tir_sched_blockize(s, loop, &outer));
    CALL(tir_sched_tensorize(s, outer, intrin));
    return TIR_OK;
}

/* Rows of whole 128-byte segments that ldmatrix reads stay unpadded:
 * flatten swizzles their chunks (docs/lowering.md). */
static bool swizzled_row(const tir_tc_config *c, int64_t elems, int elem_bytes) {
    return !c->no_smem_swizzle && elems * elem_bytes % 128 == 0;
}

int tir_tc_pad_a(const tir_tc_config *c, int elem_bytes) {
    int pad = c->pad, step = 16 / elem_bytes;
    if (pad <= 0 || pad >= c->bk || swizzled_row(c, c->bk, elem_bytes)) return 0;
    if (c->same_pad || (((int64_t)c->bk + pad) * elem_bytes / 16) % 2) return pad;
    return pad > step ? pad - step : (int64_t)pad + step < c->bk ? pad + step : pad;
}

int tir_tc_pad_b(const tir_tc_config *c, int elem_bytes) {
    if (c->pad <= 0 || c->pad >= c->bn || (elem_bytes == 2 && swizzled_row(c, c->bn, 2))) return 0;
    return c->pad;
}

/* A global -> shared copy under k0 spread over the block's threads,
 * 16 bytes per thread and step, rows padded by `pad` elements. */
static tir_status copy_tile(tir_schedule *s, const tir_tc_config *cfg, tir_block_rv b,
                            int row_len, int pad, int elem_bytes, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    LOOPS(b);
    tir_loop_rv fused, parts[4];
    int vec = 16 / elem_bytes;
    CALL(tir_sched_fuse(s, 2, loops + n - 2, &fused));
    CALL(tir_sched_split(s, fused, 4,
                         (const int64_t[]){TIR_SPLIT_INFER, cfg->warps_m * cfg->warps_n, 32, vec},
                         parts));
    CALL(tir_sched_bind(s, parts[1], "threadIdx.y"));
    CALL(tir_sched_bind(s, parts[2], "threadIdx.x"));
    CALL(tir_sched_vectorize(s, parts[3]));
    CALL(tir_sched_unroll(s, parts[0]));
    /* rows of row_len + pad elements (a pad the row does not exceed) */
    if (pad > 0 && pad < row_len) CALL(tir_sched_storage_align(s, b, 0, 0, row_len, pad));
    return TIR_OK;
}

/* The operand fragments under k1: A as 16 x mk tiles down the warp's rows,
 * B as mk x 8 tiles along its columns, or as pairs of them (16 columns,
 * one ldmatrix.x4.trans) when the warp's wn columns allow and cfg does not
 * turn pairs off. */
static tir_status frag_loads(tir_schedule *s, const tir_tc_config *cfg, tir_block_rv af,
                             tir_block_rv bf, const tc_kind *k, int64_t n_cols, hook_fn hook,
                             void *user) {
    const tir_loop_rv *loops;
    int n;
    tir_loop_rv p[2], q[2];
    LOOPS(af);
    CALL(tir_sched_split(s, loops[n - 2], 2, (const int64_t[]){TIR_SPLIT_INFER, 16}, p));
    CALL(tir_sched_unroll(s, p[0]));
    tir_status st = carve(s, p[1], k->load_a, hook, user);
    if (st != TIR_OK) return st;
    LOOPS(bf);
    tir_loop_rv rows = loops[n - 2];
    /* a pair needs 16 columns of B's domain: at N < 16 the fragment
     * block's column iterator has a domain narrower than the intrinsic's
     * and tensorize refuses it (a ragged last pair at N >= 16 is a split
     * guard, which it clips) */
    bool pairs = k->load_b2 && !cfg->no_b_pairs && (cfg->bn / cfg->warps_n) % 16 == 0 &&
                 n_cols >= 16;
    CALL(tir_sched_split(s, loops[n - 1], 2, (const int64_t[]){TIR_SPLIT_INFER, pairs ? 16 : 8},
                         q));
    CALL(tir_sched_reorder(s, 3, (const tir_loop_rv[]){q[0], rows, q[1]}));
    CALL(tir_sched_unroll(s, q[0]));
    return carve(s, rows, pairs ? k->load_b2 : k->load_b, hook, user);
}

/* The accumulators' store under the warp loop, in 16 x 8 tiles. */
static tir_status store_tiles(tir_schedule *s, tir_block_rv store, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    tir_loop_rv p[2], q[2];
    LOOPS(store);
    tir_loop_rv i = loops[n - 2], j = loops[n - 1];
    CALL(tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, 16}, p));
    CALL(tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, q));
    CALL(tir_sched_reorder(s, 4, (const tir_loop_rv[]){p[0], q[0], p[1], q[1]}));
    CALL(tir_sched_unroll(s, p[0]));
    CALL(tir_sched_unroll(s, q[0]));
    return carve(s, p[1], "frag_store_16x8", hook, user);
}

/* Whether the k steps of a k tile (k1) are software-pipelined (fragment
 * double buffering) rather than unrolled. */
static bool frag_pipeline(const tir_tc_config *cfg, const tc_kind *k) {
    return !cfg->no_frag_pipeline && cfg->bk / k->mk >= 2;
}

/* Zero fill (the decomposed init) and the mma, each per 16 x 8 tile. */
static tir_status compute(tir_schedule *s, const tir_tc_config *cfg, tir_block_rv c,
                          tir_loop_rv k0, const tc_kind *k, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    tir_block_rv init;
    CALL(tir_sched_decompose_reduction(s, c, k0, &init));
    LOOPS(init); /* ..., w, [i2,] [j2,] i3, j3 */
    /* decompose_reduction copies no loop of extent 1 (a warp with one tile
       in i or j), so i2 and j2 are those of the last two above the tile
       that are not bound to threads */
    for (int i = n - 4 < 0 ? 0 : n - 4; i < n - 2; i++) {
        const tir_for *f;
        if (tir_sched_get_for(s, loops[i], &f) == TIR_OK && f->kind == TIR_FOR_SERIAL)
            CALL(tir_sched_unroll(s, loops[i]));
    }
    tir_status st = carve(s, loops[n - 2], "frag_fill_f32", hook, user);
    if (st != TIR_OK) return st;
    LOOPS(c); /* ..., k1, i2, j2, i3, j3, k2 */
    if (!frag_pipeline(cfg, k)) CALL(tir_sched_unroll(s, loops[n - 6]));
    CALL(tir_sched_unroll(s, loops[n - 5]));
    CALL(tir_sched_unroll(s, loops[n - 4]));
    return carve(s, loops[n - 3], k->mma, hook, user);
}

/* The block's two inputs (the reads of buffers it does not write, A
 * first) and the names their shared caches will have. */
static tir_status inputs(tir_schedule *s, tir_block_rv c, int *ia, int *ib, char *a_sh,
                         char *b_sh) {
    const tir_block *b;
    tir_status st = tir_sched_get_block_node(s, c, &b);
    if (st != TIR_OK) return st;
    int found[2], n = 0;
    for (int i = 0; i < b->nreads && n < 3; i++)
        if (b->nwrites < 1 || b->reads[i].buffer != b->writes[0].buffer) {
            if (n < 2) found[n] = i;
            n++;
        }
    if (n != 2 || b->nwrites != 1)
        return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                            "tensor cores: block %s is not a matmul (it must write one buffer "
                            "and read two others, A[i, k] then B[k, j])",
                            b->name);
    *ia = found[0], *ib = found[1];
    snprintf(a_sh, 80, "%.60s_shared", b->reads[*ia].buffer->name);
    snprintf(b_sh, 80, "%.60s_shared", b->reads[*ib].buffer->name);
    return TIR_OK;
}

/* Split-K: K / bk k tiles dealt in splitk equal slices (tensorize takes
 * whole k tiles only, so no slice is ragged), the slice loop rfactored
 * (*c becomes the C_rf block, *kz its slice loop) and the sum written
 * back by the float32 rule's kernel (tiling.c). */
static tir_status split_k(tir_schedule *s, const tir_tc_config *cfg, tir_block_rv *c,
                          tir_loop_rv *kz, hook_fn hook, void *user) {
    const tir_block *b;
    tir_status st = tir_sched_get_block_node(s, *c, &b);
    if (st != TIR_OK) return st;
    int64_t K = 0;
    const tir_iter_var *kv = &b->iters[b->niters - 1];
    if (kv->kind != TIR_ITER_REDUCE || !tir_expr_const_int(kv->dom.extent, &K) || K % cfg->bk ||
        (K / cfg->bk) % cfg->splitk)
        return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                            "tensor cores: split-K %d of block %s needs a constant K whose k "
                            "tiles (bk %d) deal evenly into the slices",
                            cfg->splitk, b->name, cfg->bk);
    tir_block_rv wb = *c;
    if ((st = tune_rfactor_k(s, cfg->splitk, cfg->bk, wb, c, kz, hook, user)) != TIR_OK)
        return st;
    return tune_split_write_back(s, cfg->splitk, tir_tc_config_threads(cfg), wb, hook, user);
}

/* tensorize takes whole k tiles only (it refuses a predicate on the
 * reduce iterator), so a constant K must be a multiple of BK: said here,
 * before any primitive runs, naming K, rather than by tensorize deep in the
 * schedule (`tirc run matmul --dtype bf16 --size 100x72x41` used to end in
 * "split that loop by a factor dividing its extent", about a loop the
 * user never wrote). */
static tir_status check_k(tir_schedule *s, tir_block_rv c, const tir_tc_config *cfg) {
    const tir_block *b;
    tir_status st = tir_sched_get_block_node(s, c, &b);
    if (st != TIR_OK || b->niters < 1 || cfg->bk < 1) return st; /* check_config says why */
    int64_t K;
    const tir_iter_var *kv = &b->iters[b->niters - 1];
    if (kv->kind != TIR_ITER_REDUCE || !tir_expr_const_int(kv->dom.extent, &K) || K % cfg->bk == 0)
        return TIR_OK;
    return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                        "tensor cores: block %s reduces over K = %lld, which is not a multiple of "
                        "the k tile BK = %d: tensorize takes whole k tiles (BK a multiple of the "
                        "mma's k: 16 for float16 and bfloat16, 8 for TF32), so pad K with zeros "
                        "to a multiple of it or compute in float32",
                        b->name, (long long)K, cfg->bk);
}

/* ------------------------------------------------------------ wgmma */

/* cfg->wgmma's conditions (tune.h), said up front. */
static tir_status check_wgmma(tir_schedule *s, tir_block_rv c, const tir_tc_config *cfg,
                              const tc_kind *k) {
    const tir_block *b;
    tir_status st = tir_sched_get_block_node(s, c, &b);
    if (st != TIR_OK) return st;
    int64_t M = 0, N = 0;
    bool mn = b->niters == 3 && tir_expr_const_int(b->iters[0].dom.extent, &M) &&
              tir_expr_const_int(b->iters[1].dom.extent, &N);
    const char *why = NULL;
    if (k->mk != 8) why = "it is for TF32 (float32 inputs) only";
    else if (b->niters != 3) why = "it takes a plain matmul C[i, j] += A[i, k] B[k, j] (no batch)";
    else if (cfg->warps_m != 1 || cfg->warps_n % 4)
        why = "every warp covers all rows (warps_m 1) and warps_n is whole warpgroups of 4";
    else if (cfg->bm != 64 && cfg->bm != 128 && cfg->bm != 256)
        why = "bm (the instruction's n) is 64, 128 or 256";
    else if (cfg->bn % (16 * cfg->warps_n)) why = "each warp's columns are whole 16-column strips";
    else if (cfg->bk != 32) why = "bk is 32 (A's shared rows are one swizzled 128-byte segment)";
    else if (!mn || M % cfg->bm || N % cfg->bn)
        why = "M and N are constant multiples of the block tile (a ragged tile would put the "
              "instruction under a guard some warps of a warpgroup do not pass)";
    if (!why) return TIR_OK;
    return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                        "tensor cores: wgmma for block %s with %dx%dx%d, %dx%d warps: %s",
                        b->name, cfg->bm, cfg->bn, cfg->bk, cfg->warps_m, cfg->warps_n, why);
}

/* The zero fill (decomposed init) per 16 x 8 tile, the strips' loops
 * unrolled: ..., w, [j2,] i3 (bm), j3 (16). */
static tir_status wg_fill(tir_schedule *s, tir_block_rv init, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    tir_loop_rv p[2], q[2];
    LOOPS(init);
    tir_loop_rv i = loops[n - 2], j = loops[n - 1];
    const tir_for *f;
    if (n >= 3 && tir_sched_get_for(s, loops[n - 3], &f) == TIR_OK && f->kind == TIR_FOR_SERIAL)
        CALL(tir_sched_unroll(s, loops[n - 3]));
    CALL(tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, 16}, p));
    CALL(tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, q));
    CALL(tir_sched_reorder(s, 4, (const tir_loop_rv[]){p[0], q[0], p[1], q[1]}));
    CALL(tir_sched_unroll(s, p[0]));
    CALL(tir_sched_unroll(s, q[0]));
    return carve(s, p[1], "frag_fill_f32", hook, user);
}

/* B's fragments of a whole k tile (bk x wn) in 8 x 8 tiles, loaded before
 * the k steps so that the k tile's wgmma run back to back (one group). */
static tir_status wg_frag_b(tir_schedule *s, tir_block_rv bf, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    tir_loop_rv r[2], q[2];
    LOOPS(bf);
    tir_loop_rv rows = loops[n - 2], cols = loops[n - 1];
    CALL(tir_sched_split(s, rows, 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, r));
    CALL(tir_sched_split(s, cols, 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, q));
    CALL(tir_sched_reorder(s, 4, (const tir_loop_rv[]){r[0], q[0], r[1], q[1]}));
    CALL(tir_sched_unroll(s, r[0]));
    CALL(tir_sched_unroll(s, q[0]));
    return carve(s, r[1], "frag_load_b_8x8_tf32", hook, user);
}

/* The C block under the warp: ..., k0, k1, j2, i3 (bm), j3 (16), k2 (8):
 * the init decomposed and filled, k1 and j2 unrolled, (i3, j3, k2) one
 * wgmma. */
static tir_status wg_compute(tir_schedule *s, const tir_tc_config *cfg, tir_block_rv c,
                             tir_loop_rv k0, hook_fn hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    tir_block_rv init;
    CALL(tir_sched_decompose_reduction(s, c, k0, &init));
    tir_status st = wg_fill(s, init, hook, user);
    if (st != TIR_OK) return st;
    LOOPS(c);
    CALL(tir_sched_unroll(s, loops[n - 5]));
    CALL(tir_sched_unroll(s, loops[n - 4]));
    char name[32];
    snprintf(name, sizeof name, "wgmma_tf32_r%d", cfg->bm);
    return carve(s, loops[n - 3], name, hook, user);
}

/* TF32 by wgmma (cfg->wgmma): A's shared tile is the instruction's
 * operand, so no frag.a; every warp takes all bm rows and wn / 16 strips
 * of 16 columns. */
static tir_status tc_tiling_wgmma(tir_schedule *s, tir_block_rv c, const tir_tc_config *cfg,
                                  int ia, int ib, const char *b_sh, hook_fn hook, void *user) {
    tir_block_rv store, as, bs, bf;
    tir_status st;
    CALL(tir_sched_cache_write(s, c, 0, "frag.acc", 0, NULL, &store));
    CALL(tir_sched_cache_read(s, c, ia, "shared", 0, NULL, &as));
    CALL(tir_sched_cache_read(s, c, ib, "shared", 0, NULL, &bs));
    if ((st = tune_read_index(s, c, b_sh, &ib)) != TIR_OK) return st;
    CALL(tir_sched_cache_read(s, c, ib, "frag.b", 0, NULL, &bf));
    const tir_loop_rv *loops;
    int n;
    LOOPS(c); /* i, j, k */
    tir_loop_rv is[2], js[4], ks[3];
    int wn = cfg->bn / cfg->warps_n;
    CALL(tir_sched_split(s, loops[0], 2, (const int64_t[]){TIR_SPLIT_INFER, cfg->bm}, is));
    CALL(tir_sched_split(s, loops[1], 4, (const int64_t[]){TIR_SPLIT_INFER, cfg->warps_n, wn / 16, 16},
                         js));
    CALL(tir_sched_split(s, loops[2], 3, (const int64_t[]){TIR_SPLIT_INFER, cfg->bk / 8, 8}, ks));
    CALL(tir_sched_reorder(s, 9, (const tir_loop_rv[]){is[0], js[0], js[1], ks[0], ks[1], js[2],
                                                       is[1], js[3], ks[2]}));
    if ((st = tune_bind_blocks(s, !cfg->no_swizzle, is[0], js[0], hook, user)) != TIR_OK)
        return st;
    CALL(tir_sched_bind(s, js[1], "threadIdx.y"));
    CALL(tir_sched_compute_at(s, bf, ks[0], false));
    CALL(tir_sched_compute_at(s, as, ks[0], false));
    CALL(tir_sched_compute_at(s, bs, ks[0], false));
    CALL(tir_sched_reverse_compute_at(s, store, js[1], false));
    if ((st = wg_compute(s, cfg, c, ks[0], hook, user)) != TIR_OK) return st;
    if ((st = wg_frag_b(s, bf, hook, user)) != TIR_OK) return st;
    if ((st = store_tiles(s, store, hook, user)) != TIR_OK) return st;
    if ((st = copy_tile(s, cfg, as, cfg->bk, 0, 4, hook, user)) != TIR_OK) return st;
    if ((st = copy_tile(s, cfg, bs, cfg->bn, tir_tc_pad_b(cfg, 4), 4, hook, user)) != TIR_OK)
        return st;
    /* k0's body, each block before its first reader (compute_at): B_shared,
       B's fragments, A_shared, the k1 loop; the copies in stage 0, issued
       first */
    int last = cfg->stages - 1;
    if (cfg->stages >= 2)
        CALL(tir_sched_software_pipeline(s, ks[0], 4, (const int64_t[]){0, last, 0, last}, 4,
                                         (const int64_t[]){0, 2, 1, 3}, cfg->async_copy ? 1 : 0,
                                         (const int64_t[]){0}));
    return TIR_OK;
}

tir_status tir_tune_tc_tiling(tir_schedule *s, const char *block, const tir_tc_config *cfg,
                              hook_fn hook, void *user) {
    tir_block_rv c, store, as, bs, af, bf;
    tir_status st = tir_sched_get_block(s, block, &c);
    int ia = 0, ib = 0;
    char a_sh[80], b_sh[80];
    tc_kind k = {0};
    tir_loop_rv kz = {0};
    bool split = cfg->splitk > 1;
    if (st == TIR_OK) st = check_k(s, c, cfg);
    if (st == TIR_OK && split && cfg->wgmma) /* before split_k changes anything */
        st = tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                          "tensor cores: wgmma for block %s: split-K is not supported with it",
                          block);
    if (st == TIR_OK && split) st = split_k(s, cfg, &c, &kz, hook, user);
    if (st == TIR_OK) st = inputs(s, c, &ia, &ib, a_sh, b_sh);
    if (st == TIR_OK) st = kind_of(s, c, ia, &k);
    if (st == TIR_OK) st = check_config(tir_sched_ctx(s), cfg, k.mk);
    if (st == TIR_OK && cfg->wgmma) st = check_wgmma(s, c, cfg, &k);
    if (st != TIR_OK) return st;
    if (cfg->wgmma) return tc_tiling_wgmma(s, c, cfg, ia, ib, b_sh, hook, user);
    int eb = k.mk == 8 ? 4 : 2;
    CALL(tir_sched_cache_write(s, c, 0, "frag.acc", 0, NULL, &store));
    CALL(tir_sched_cache_read(s, c, ia, "shared", 0, NULL, &as));
    CALL(tir_sched_cache_read(s, c, ib, "shared", 0, NULL, &bs));
    if ((st = tune_read_index(s, c, a_sh, &ia)) != TIR_OK) return st;
    CALL(tir_sched_cache_read(s, c, ia, "frag.a", 0, NULL, &af));
    if ((st = tune_read_index(s, c, b_sh, &ib)) != TIR_OK) return st;
    CALL(tir_sched_cache_read(s, c, ib, "frag.b", 0, NULL, &bf));

    const tir_loop_rv *loops;
    int n;
    LOOPS(c); /* i, j, k; with split-K i, j, kz, k */
    tir_loop_rv is[4], js[4], ks[3], w;
    int wm = cfg->bm / cfg->warps_m, wn = cfg->bn / cfg->warps_n;
    tir_loop_rv i = loops[0], j = loops[1], kk = loops[n - 1];
    /* N, when constant (a query, not a step: no CALL, so the hook's calls
     * stay the schedule's primitives) */
    const tir_for *jf = NULL;
    int64_t n_cols = 0;
    if ((st = tir_sched_get_for(s, j, &jf)) != TIR_OK) return st;
    if (!tir_expr_const_int(jf->extent, &n_cols)) n_cols = 0;
    CALL(tir_sched_split(s, i, 4, (const int64_t[]){TIR_SPLIT_INFER, cfg->warps_m, wm / 16, 16},
                         is));
    CALL(tir_sched_split(s, j, 4, (const int64_t[]){TIR_SPLIT_INFER, cfg->warps_n, wn / 8, 8},
                         js));
    CALL(tir_sched_split(s, kk, 3, (const int64_t[]){TIR_SPLIT_INFER, cfg->bk / k.mk, k.mk},
                         ks));
    if (split) {
        CALL(tir_sched_reorder(s, 12,
                               (const tir_loop_rv[]){kz, is[0], js[0], is[1], js[1], ks[0], ks[1],
                                                     is[2], js[2], is[3], js[3], ks[2]}));
        CALL(tir_sched_bind(s, kz, "blockIdx.z"));
    } else
        CALL(tir_sched_reorder(s, 11,
                               (const tir_loop_rv[]){is[0], js[0], is[1], js[1], ks[0], ks[1],
                                                     is[2], js[2], is[3], js[3], ks[2]}));
    if ((st = tune_bind_blocks(s, !cfg->no_swizzle, is[0], js[0], hook, user)) != TIR_OK)
        return st;
    CALL(tir_sched_fuse(s, 2, (const tir_loop_rv[]){is[1], js[1]}, &w));
    CALL(tir_sched_bind(s, w, "threadIdx.y"));

    CALL(tir_sched_compute_at(s, af, ks[1], false));
    CALL(tir_sched_compute_at(s, bf, ks[1], false));
    CALL(tir_sched_compute_at(s, as, ks[0], false));
    CALL(tir_sched_compute_at(s, bs, ks[0], false));
    CALL(tir_sched_reverse_compute_at(s, store, w, false));
    if ((st = compute(s, cfg, c, ks[0], &k, hook, user)) != TIR_OK) return st;
    if ((st = frag_loads(s, cfg, af, bf, &k, n_cols, hook, user)) != TIR_OK) return st;
    if ((st = store_tiles(s, store, hook, user)) != TIR_OK) return st;
    if ((st = copy_tile(s, cfg, as, cfg->bk, tir_tc_pad_a(cfg, eb), eb, hook, user)) != TIR_OK)
        return st;
    if ((st = copy_tile(s, cfg, bs, cfg->bn, tir_tc_pad_b(cfg, eb), eb, hook, user)) != TIR_OK)
        return st;
    if (frag_pipeline(cfg, &k)) {
        /* k1's body: the A and B fragment loads, the mma tiles; the loads of
           k step s + 1 are issued before the mma of step s, into a second
           set of fragment registers (lowering versions them, unrolls the
           steady state by two and emits prologue and epilogue statically) */
        CALL(tir_sched_software_pipeline(s, ks[1], 3, (const int64_t[]){0, 0, 1}, 3,
                                         (const int64_t[]){0, 1, 2}, 0, NULL));
    }
    if (cfg->stages >= 2) {
        /* k0's body: A_shared, B_shared, the k1 loop (fragments and mma).
         * With cfg->guard_tail (off by default: 9-10% slower in bf16 on
         * the H200, run 31) the loop also runs the last stages - 1 k
         * tiles' mma, with the
         * copies guarded, instead of stages - 1 peeled copies of the k1
         * loop after it (software_pipeline_guard_tail; annotated last so
         * that the calls before keep their positions for the hook).  The
         * fragment pipeline of k1 is unrolled whole, so its epilogue
         * costs no more than a guarded tail would: not annotated. */
        int last = cfg->stages - 1;
        CALL(tir_sched_software_pipeline(s, ks[0], 3, (const int64_t[]){0, 0, last}, 3,
                                         (const int64_t[]){0, 1, 2}, cfg->async_copy ? 1 : 0,
                                         (const int64_t[]){0}));
        if (cfg->guard_tail || cfg->clamp_tail)
            CALL(tir_sched_annotate_loop_int(
                s, ks[0],
                tir_annot_key_str(cfg->guard_tail ? TIR_ANN_SOFTWARE_PIPELINE_GUARD_TAIL
                                                  : TIR_ANN_SOFTWARE_PIPELINE_CLAMP_TAIL),
                1));
    }
    return TIR_OK;
}
