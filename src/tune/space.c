/* space.c: the tuning tasks and the design space of the tiling rule.
 *
 * A task is an operator, its shape and its kind (matmul, matmul + bias +
 * ReLU, batch matmul; float32, or a tensor-core kind whose space is
 * space_tc.c's); its function comes from the ready definitions of ir.h.
 * The design space is every tir_tile_config the rule accepts for the
 * task on a target, generated from the shape: block tiles of 16..256 rows
 * and columns made of 1..8 warps of 8 x 4 or 4 x 8 lanes with 2..8
 * outputs per lane and dimension (no tile past twice the rounded-up extent
 * or 16, the smallest),
 * k tiles of 8, 16 and 32, with register staging, without a pipeline, or
 * with a multistage pipeline of 3 or 4 stages (cp.async copies, those of
 * a ragged tile's edge with a source size of 0; only without staging,
 * which it replaces, so that the space at most doubles rather than
 * triples), split-K slices of whole k tiles (matmul only), LLVM loop
 * strength reduction on or off, vector stores of a ragged output on or off
 * (gvec, where N is ragged), and the direct emitter's own unrolling on or
 * off (dunroll, where the k loop may be small enough for LLVM to unroll:
 * dunroll_may_matter).  A configuration is kept when the copies
 * of its A and B tiles are whole rounds of the block's threads (the
 * lowering's local_check needs it), its shared tiles fit the target (one
 * version in static shared memory; a multistage pipeline's versions in
 * the opt-in dynamic shared memory, as the tensor-core rule's), and its
 * thread tile is at most 64 accumulators (more spills).  The space is a list; the search
 * samples and mutates indices into it (search.c).
 */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune_internal.h"

bool tir_tune_task_tc(const tir_tune_task *t) {
    return t->kind == TIR_RT_GEMM_TF32 || t->kind == TIR_RT_GEMM_F16 ||
           t->kind == TIR_RT_GEMM_BF16;
}

const tir_prim_func *tir_tune_task_func(tir_ctx *ctx, const tir_tune_task *t) {
    if (t->kind != TIR_RT_GEMM_F32 && !tune_tc_task_ok(ctx, t)) return NULL;
    if (tir_tune_task_tc(t))
        return tir_def_matmul_mixed(ctx, t->M, t->N, t->K, tir_rt_gemm_kind_input(t->kind),
                                    TIR_F32);
    switch (t->op) {
    case TIR_TUNE_MATMUL: return tir_def_matmul(ctx, t->M, t->N, t->K, TIR_F32);
    case TIR_TUNE_MATMUL_BIAS_RELU: return tir_def_matmul_bias_relu(ctx, t->M, t->N, t->K, TIR_F32);
    case TIR_TUNE_BATCH_MATMUL:
        return tir_def_batch_matmul(ctx, t->batch, t->M, t->N, t->K, TIR_F32);
    }
    tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune: unknown operator %d", (int)t->op);
    return NULL;
}

const char *tir_tune_op_name(tir_tune_op op) {
    switch (op) {
    case TIR_TUNE_MATMUL: return "matmul";
    case TIR_TUNE_MATMUL_BIAS_RELU: return "matmul_bias_relu";
    case TIR_TUNE_BATCH_MATMUL: return "batch_matmul";
    }
    return "?";
}

/* Whether c fits task t on limits lim (see the file comment). */
bool tir_tune_config_valid(const tir_tune_task *t, const tir_target_limits *lim,
                           const tir_tile_config *c) {
    if (!tune_knobs_in_range(c)) return false; /* no product below overflows, no vec of 0 */
    int threads = tir_tile_config_threads(c);
    int64_t bm = (int64_t)c->warps_m * c->threads_m * c->tm;
    int64_t bn = (int64_t)c->warps_n * c->threads_n * c->tn;
    int64_t round = (int64_t)threads * c->vec;
    if (c->threads_m * c->threads_n != 32 || threads > lim->max_threads_per_block) return false;
    if (c->tm % c->vec || c->tn % c->vec || c->tm * c->tn > 64) return false;
    if ((bm * c->bk) % round || (bn * c->bk) % round) return false;
    if (c->stages < 0 || c->stages > 4 || (c->stages >= 2 && c->staging)) return false;
    /* codegen places a kernel past the static limit in dynamic shared
     * memory; a single version always fit the static limit, and still
     * must, so that the space without stages is what it was */
    int64_t cap = c->stages >= 2 ? lim->max_shared_dynamic : lim->max_shared_static;
    if (tir_tile_config_shared_bytes(c, 4) > cap) return false;
    if (c->splitk > 1) {
        if (t->op == TIR_TUNE_BATCH_MATMUL) return false;
        /* the partial sums are indexed in 32 bits (codegen refuses more) */
        if ((double)c->splitk * (double)t->M * (double)t->N > (double)INT32_MAX) return false;
        /* at least two k tiles per slice */
        if (t->K < (int64_t)c->splitk * c->bk * 2) return false;
    }
    return true;
}

/* The smallest power of two >= x (x >= 1). */
int64_t tune_pow2_ceil(int64_t x) {
    int64_t p = 1;
    while (p < x) p *= 2;
    return p;
}

typedef struct grow {
    tir_tile_config *v;
    int n, cap;
} grow;

static bool push(grow *g, const tir_tile_config *c) {
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 256;
        tir_tile_config *v = realloc(g->v, (size_t)cap * sizeof *v);
        if (!v) return false;
        g->v = v, g->cap = cap;
    }
    g->v[g->n++] = *c;
    return true;
}

/* The direct emitter's thresholds for a serial loop it leaves rolled
 * (src/codegen/cg_direct.c, DIRECT_MIN_BODY, and CG_SHORT_MIN_WORK of
 * cg_internal.h): PTX instructions in the body, and trip count times
 * body. */
enum { TUNE_DIRECT_MIN_BODY = 300, TUNE_DIRECT_MIN_WORK = 3000 };

/* Whether dunroll can change c's kernels for t: whether the direct
 * emitter may refuse the main kernel for "a loop small enough for LLVM to
 * unroll" (dunroll then makes it unroll that loop itself instead of
 * leaving the kernel to LLVM).  Its k loop's body has at least the
 * thread's tm x tn x bk FMAs per k tile (S times that where a multistage
 * pipeline unrolls its steady state by S), and the loop runs the slice's k
 * tiles less those a pipeline peels (S - 1, or 1 with staging).  Where
 * these lower bounds clear the thresholds the emitter keeps the kernel
 * either way, and dunroll would only make twin points of one kernel: on
 * every point of 100³, 128³, 257³, 333³, 512³, 1000×520×333 and
 * 33×1000×45 (and samples of 4095³, 4096³, 64×64×65536, 8×4096×4096, a
 * bias-ReLU and a batch matmul) no point left out here had a kernel the
 * emitter refuses so, and about half the points kept do.  split-K's
 * summing kernel never has such a loop. */
static bool dunroll_may_matter(const tir_tune_task *t, const tir_tile_config *c) {
    int64_t fmas = (int64_t)c->tm * c->tn * c->bk;
    int64_t tiles = (t->K + (int64_t)c->splitk * c->bk - 1) / ((int64_t)c->splitk * c->bk);
    tiles -= c->stages >= 2 ? c->stages - 1 : c->staging ? 1 : 0;
    int64_t copies = c->stages >= 2 ? c->stages : 1;
    return fmas * copies < TUNE_DIRECT_MIN_BODY || tiles * fmas < TUNE_DIRECT_MIN_WORK;
}

/* The split-K choices for t: 1, and when the output alone gives few
 * blocks, slices up to 64. */
static int splits(const tir_tune_task *t, int *out) {
    int n = 0;
    out[n++] = 1;
    if (t->op == TIR_TUNE_BATCH_MATMUL) return n;
    static const int s[] = {2, 3, 4, 8, 16, 32, 64};
    for (int i = 0; i < 7; i++)
        if (t->K >= 256 * s[i] / 2) out[n++] = s[i];
    return n;
}

tir_status tir_tune_space_make(tir_ctx *ctx, const tir_tune_task *t,
                               const tir_target_limits *lim, tir_tune_space *out) {
    memset(out, 0, sizeof *out);
    if (t->M < 1 || t->N < 1 || t->K < 1 || (t->op == TIR_TUNE_BATCH_MATMUL && t->batch < 1))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune: the task's sizes must be positive");
    if (t->kind != TIR_RT_GEMM_F32 && !tune_tc_task_ok(ctx, t)) return TIR_ERR_INVALID_ARG;
    if (tir_tune_task_tc(t)) return tune_tc_space_make(ctx, t, lim, out);
    static const int lanes[2][2] = {{8, 4}, {4, 8}};
    static const int warps[] = {1, 2, 4, 8}, thr[] = {2, 4, 8}, bks[] = {8, 16, 32};
    /* the pipelines: {staging, stages} */
    static const int pipes[4][2] = {{0, 0}, {1, 0}, {0, 3}, {0, 4}};
    int sk[8], nsk = splits(t, sk);
    /* (at least 16: the smallest tile, which M or N of 1..8 needs) */
    int64_t mcap = 2 * tune_pow2_ceil(t->M), ncap = 2 * tune_pow2_ceil(t->N);
    if (mcap < 16) mcap = 16;
    if (ncap < 16) ncap = 16;
    grow g = {0};
    for (int l = 0; l < 2; l++)
        for (int wm = 0; wm < 4; wm++)
            for (int wn = 0; wn < 4; wn++)
                for (int a = 0; a < 3; a++)
                    for (int b = 0; b < 3; b++)
                        for (int k = 0; k < 3; k++)
                            for (int st = 0; st < 4; st++)
                                for (int s = 0; s < nsk; s++)
                                    for (int lsr = 0; lsr < 2; lsr++) {
                                        tir_tile_config c = tir_tile_config_default();
                                        c.threads_m = lanes[l][0], c.threads_n = lanes[l][1];
                                        c.warps_m = warps[wm], c.warps_n = warps[wn];
                                        c.tm = thr[a], c.tn = thr[b], c.bk = bks[k];
                                        c.vec = c.tm < c.tn ? c.tm : c.tn;
                                        if (c.vec > 4) c.vec = 4;
                                        c.staging = pipes[st][0], c.stages = pipes[st][1];
                                        c.splitk = sk[s], c.lsr = lsr;
                                        int64_t bm = (int64_t)c.warps_m * c.threads_m * c.tm;
                                        int64_t bn = (int64_t)c.warps_n * c.threads_n * c.tn;
                                        if (c.warps_m * c.warps_n > 8 || bm > 256 || bn > 256 ||
                                            bm > mcap || bn > ncap || bm < 16 || bn < 16)
                                            continue;
                                        if (!tir_tune_config_valid(t, lim, &c)) continue;
                                        /* a ragged N the vector divides: with and
                                           without vector stores of the output */
                                        bool gv = c.vec > 1 && t->N % bn && t->N % c.vec == 0;
                                        int du = dunroll_may_matter(t, &c) ? 1 : 0;
                                        for (int v = 0; v <= (gv ? 1 : 0); v++)
                                            for (int u = 0; u <= du; u++) {
                                                c.gvec = v, c.dunroll = u;
                                                if (!push(&g, &c)) {
                                                    free(g.v);
                                                    return tir_ctx_fail(ctx, TIR_ERR_NOMEM,
                                                                        "tune: out of memory");
                                                }
                                            }
                                    }
    if (g.n == 0) {
        free(g.v);
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tune: no tiling configuration fits %s %lldx%lldx%lld",
                            tir_tune_op_name(t->op), (long long)t->M, (long long)t->N,
                            (long long)t->K);
    }
    out->configs = g.v, out->n = g.n;
    return TIR_OK;
}

void tir_tune_space_free(tir_tune_space *sp) {
    free(sp->configs);
    free(sp->tc_configs);
    memset(sp, 0, sizeof *sp);
}

int tir_tile_config_text(const tir_tile_config *c, char *buf, size_t cap) {
    return snprintf(buf, cap,
                    "warps=%dx%d lanes=%dx%d thread=%dx%d bk=%d vec=%d staging=%d pad=%d "
                    "splitk=%d lsr=%d stages=%d%s%s",
                    c->warps_m, c->warps_n, c->threads_m, c->threads_n, c->tm, c->tn, c->bk,
                    c->vec, c->staging ? 1 : 0, c->pad, c->splitk, c->lsr ? 1 : 0, c->stages,
                    c->gvec ? " gvec=1" : "", c->dunroll ? " dunroll=1" : "");
}

bool tune_text_numbers_fit(const char *text) {
    for (const char *q = text; *q;) {
        size_t n = strspn(q, "0123456789");
        if (n > 9) return false;
        q += n ? n : 1;
    }
    return true;
}

/* An optional " NAME=0|1" (fmt " NAME=%d%n") at *r: *out and *r past it
 * when there, else both as they were. */
static void text_switch(const char **r, const char *fmt, bool *out) {
    int v = 0, used = 0;
    if (sscanf(*r, fmt, &v, &used) != 1 || (v != 0 && v != 1)) return;
    *out = v == 1;
    *r += used;
}

/* Whether only blanks are left at r. */
static bool text_end(const char *r) { return r[strspn(r, " \t\n")] == '\0'; }

/* The text of the 12 fields before stages was added (databases hold
 * records of it) parses with stages 0; after them only " stages=N" may
 * follow, then only " gvec=0|1" and " dunroll=0|1", in that order, each
 * optional (records before them read as 0). */
tir_status tir_tile_config_parse(tir_ctx *ctx, const char *text, tir_tile_config *c) {
    int st = 0, lsr = 0, used = 0, tail = 0;
    /* the switches (splitk_atomic, guard_tail, no_swizzle) are not in the
       text: the defaults' (tune replay parses into an uninitialised
       struct); *c is written only on success */
    tir_tile_config p = tir_tile_config_default();
    if (!tune_text_numbers_fit(text))
        return tir_ctx_fail(ctx, TIR_ERR_PARSE,
                            "tune: \"%s\": a number has more than 9 digits (knobs are "
                            "1..%d)",
                            text, TUNE_KNOB_MAX);
    int n = sscanf(text,
                   "warps=%dx%d lanes=%dx%d thread=%dx%d bk=%d vec=%d staging=%d pad=%d "
                   "splitk=%d lsr=%d%n",
                   &p.warps_m, &p.warps_n, &p.threads_m, &p.threads_n, &p.tm, &p.tn, &p.bk,
                   &p.vec, &st, &p.pad, &p.splitk, &lsr, &used);
    p.stages = 0;
    bool ok = false;
    if (n == 12) {
        const char *rest = text + used;
        ok = text_end(rest); /* the old text */
        if (!ok && sscanf(rest, " stages=%d%n", &p.stages, &tail) == 1) {
            n = 13;
            const char *r2 = rest + tail;
            text_switch(&r2, " gvec=%d%n", &p.gvec);
            text_switch(&r2, " dunroll=%d%n", &p.dunroll);
            ok = text_end(r2);
        }
    }
    if (!ok)
        return tir_ctx_fail(ctx, TIR_ERR_PARSE,
                            "tune: \"%s\" is not a tiling configuration (field %d of 13 is "
                            "missing or malformed)",
                            text, n < 0 ? 1 : n < 13 ? n + 1 : 13);
    if (!tune_knobs_in_range(&p))
        return tir_ctx_fail(ctx, TIR_ERR_PARSE,
                            "tune: \"%s\": a knob is out of range (1..%d; pad 0..%d)", text,
                            TUNE_KNOB_MAX, TUNE_KNOB_MAX);
    p.staging = st != 0, p.lsr = lsr != 0;
    *c = p;
    return TIR_OK;
}

/* The smallest power-of-two split (at most 64) that brings `blocks`
 * blocks to `want`, keeping slices of at least min_slice of k. */
static int split_to(int64_t blocks, int64_t want, int64_t K, int64_t min_slice) {
    int s = 1;
    while (s < 64 && blocks * s < want && K / (2 * s) >= min_slice) s *= 2;
    return s;
}

/* A skinny matmul (one of M, N at most 64, the other at least 256):
 * tiles of 16 or 32 rows (columns) by 128 of 128 threads, split along K
 * towards four blocks per SM with slices of at least 256.  128 x 128
 * tiles computed 16 times the output for M = 8 (0.06x cuBLAS at
 * 8x4096x4096); these reach 1.26x there, 0.83-1.39x at M of 1-32 and
 * 0.81x at 64 (docs/performance.md, run 157).  A small side of 25 to 32
 * takes one tile of 32 (8 outputs a thread along it), so that the long
 * operand is read once, not twice: 4096x32x4096 0.73x -> 0.90x,
 * 32x4096x4096 0.90x -> 1.01x (run 163; at 24 it gained 7% along N but
 * spilled along M, and 8 x 8 outputs at 48 and 64 lost 2-15%). */
static bool skinny(const tir_tune_task *t, int nsm, tir_tile_config *c) {
    bool rows = t->M <= 64 && t->N >= 256, cols = t->N <= 64 && t->M >= 256;
    if (t->op == TIR_TUNE_BATCH_MATMUL || !(rows || cols)) return false;
    /* {warps, lanes, thread tile} along the small side, then the long one */
    int64_t small = rows ? t->M : t->N;
    bool narrow = small <= 32;
    int w[2] = {1, 4}, l[2] = {narrow ? 4 : 8, narrow ? 8 : 4};
    int th[2] = {narrow && small > 24 ? 8 : 4, narrow ? 4 : 8};
    int i = rows ? 0 : 1; /* the index of M's entry */
    c->warps_m = w[i], c->warps_n = w[1 - i];
    c->threads_m = l[i], c->threads_n = l[1 - i];
    c->tm = th[i], c->tn = th[1 - i];
    c->bk = narrow ? 32 : 16, c->vec = 4, c->lsr = true;
    int64_t bm = (int64_t)c->warps_m * c->threads_m * c->tm;
    int64_t bn = (int64_t)c->warps_n * c->threads_n * c->tn;
    int64_t blocks = ((t->M + bm - 1) / bm) * ((t->N + bn - 1) / bn);
    c->splitk = split_to(blocks, (narrow ? 4 : 3) * (int64_t)nsm, t->K, 256);
    while (c->splitk > 1 && t->K < (int64_t)c->splitk * c->bk * 2) c->splitk /= 2;
    return true;
}

/* The most output elements one SM computes (tiles of bm x bn, blocks
 * dealt round-robin): what the last wave costs. */
static int64_t sm_load(const tir_tune_task *t, int nsm, int64_t bm, int64_t bn) {
    int64_t nb = t->op == TIR_TUNE_BATCH_MATMUL ? t->batch : 1;
    int64_t blocks = nb * ((t->M + bm - 1) / bm) * ((t->N + bn - 1) / bn);
    return (blocks + nsm - 1) / nsm * bm * bn;
}

/* The default without tuning, by shape, distilled from the tuner's
 * results on the H200 (docs/performance.md, 2026-12-03) and the
 * candidates measured per shape on an H100 (run 157): a skinny shape
 * gets skinny tiles (skinny above); 128 x 128 tiles when they give about
 * a wave of blocks (LSR off when they do not divide M and N), or 64 x 128
 * tiles of 128 threads where those leave an SM less to do in the last
 * wave (1536³: 0.90x instead of 0.70x, 3000³: 0.99x instead of 0.83x);
 * when 128 x 128 tiles give under a wave, the same tiles split along K
 * towards 1.5 waves (slices of at least 256, k tiles of 16), if that
 * reaches 0.8 of a wave; else 64 x 64 tiles of 256 threads with 4 x 4
 * outputs each (k tiles of 32), split towards three waves with slices of
 * at least 128 when K >= 512 (768³: 0.89x instead of 0.79x; slices of 256
 * or more through a 3-stage cp.async pipeline); when that leaves fewer
 * than two waves and K is short, 32 x 32 tiles of 128 threads with 4 x 2
 * outputs each (k tiles of 16), split towards four waves in at most 4
 * slices of two k tiles or more (128³: 1.22x instead of 0.56x). */
tir_tile_config tir_tune_default(const tir_tune_task *t, int nsm) {
    tir_tile_config c = tir_tile_config_default();
    if (skinny(t, nsm, &c)) return c;
    bool batch = t->op == TIR_TUNE_BATCH_MATMUL;
    int64_t nb = batch ? t->batch : 1;
    int64_t blocks = nb * ((t->M + 127) / 128) * ((t->N + 127) / 128);
    c.lsr = t->M % 128 == 0 && t->N % 128 == 0;
    if (blocks * 5 >= (int64_t)nsm * 4) {
        int64_t l64 = sm_load(t, nsm, 64, 128), l128 = sm_load(t, nsm, 128, 128);
        /* on a tie, where 128 x 128 tiles are ragged too, unless the
         * accesses are scalar: 4095³ took 139 registers, so 3 blocks an
         * SM, and 0.88x against 0.92x (2000x3000x500: 0.87x against 0.75x) */
        if (l64 < l128 || (l64 == l128 && !c.lsr && t->M % 4 == 0 && t->N % 4 == 0))
            c.warps_m = 1, c.lsr = true; /* 64 x 128, 128 threads */
        return c;
    }
    int s = batch ? 1 : split_to(blocks, (3 * (int64_t)nsm + 1) / 2, t->K, 256); /* 1.5 waves */
    if (blocks * s * 5 >= (int64_t)nsm * 4) {
        c.splitk = s, c.bk = 16;
        return c;
    }
    c.tm = 4, c.tn = 4, c.bk = 32, c.lsr = true; /* 64 x 64, 256 threads */
    blocks = nb * ((t->M + 63) / 64) * ((t->N + 63) / 64);
    c.splitk = batch || t->K < 512 ? 1 : split_to(blocks, 3 * (int64_t)nsm, t->K, 128);
    /* long slices stream from memory: a 3-stage cp.async pipeline keeps
     * two k tiles in flight (64x64x65536: 0.71x instead of 0.49x,
     * 64x64x16384: 1.03x; run 159) */
    if (c.splitk > 1 && t->K / c.splitk >= 256) c.staging = false, c.stages = 3;
    if (blocks * c.splitk >= 2 * (int64_t)nsm || t->K >= 512) return c;
    c.warps_m = 1, c.warps_n = 4, c.tm = 4, c.tn = 2, c.bk = 16, c.vec = 2; /* 32 x 32 */
    blocks = nb * ((t->M + 31) / 32) * ((t->N + 31) / 32);
    /* (at most 4 slices: the summing kernel costs as much as these) */
    c.splitk = batch ? 1 : split_to(blocks, 4 * (int64_t)nsm, t->K, 2 * c.bk);
    if (c.splitk > 4) c.splitk = 4;
    return c;
}

/* The knobs as sampling instructions: each knob's candidates, in the
 * order of the trace. */
enum { NKNOBS = 12 };
static const int64_t knob_warps[] = {1, 2, 4, 8}, knob_lanes[] = {0, 1}, knob_thr[] = {2, 4, 8},
                     knob_bk[] = {8, 16, 32}, knob_bool[] = {0, 1},
                     knob_split[] = {1, 2, 3, 4, 8, 16, 32, 64}, knob_stages[] = {0, 1, 2, 3, 4};
static const tune_knob knobs[NKNOBS] = {
    {"warps_m", knob_warps, 4}, {"warps_n", knob_warps, 4}, {"lanes", knob_lanes, 2},
    {"tm", knob_thr, 3},        {"tn", knob_thr, 3},        {"bk", knob_bk, 3},
    {"staging", knob_bool, 2},  {"splitk", knob_split, 8},  {"lsr", knob_bool, 2},
    {"stages", knob_stages, 5}, {"gvec", knob_bool, 2},     {"dunroll", knob_bool, 2}};

static void knob_values(const tir_tile_config *c, int64_t *v) {
    v[0] = c->warps_m, v[1] = c->warps_n, v[2] = c->threads_m == 4 ? 1 : 0;
    v[3] = c->tm, v[4] = c->tn, v[5] = c->bk, v[6] = c->staging, v[7] = c->splitk;
    v[8] = c->lsr, v[9] = c->stages, v[10] = c->gvec, v[11] = c->dunroll;
}

tir_status tune_sample_knobs(tir_schedule *s, int n, const tune_knob *knobs,
                             const int64_t *want, int64_t *got) {
    for (int k = 0; k < n; k++) {
        int64_t d = -1;
        double probs[TUNE_MAX_CANDIDATES];
        assert(knobs[k].n <= TUNE_MAX_CANDIDATES);
        for (int i = 0; i < knobs[k].n; i++) {
            probs[i] = 1.0;
            if (want && knobs[k].v[i] == want[k]) d = i;
        }
        if (want && d < 0)
            return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                                "tune: knob %s = %lld of the configuration is not among the "
                                "rule's candidates",
                                knobs[k].name, (long long)want[k]);
        tir_value_rv v;
        tir_status st = tir_sched_sample_categorical(s, knobs[k].n, knobs[k].v, probs,
                                                     want ? 1 : 0, want ? &d : NULL, &v);
        if (st == TIR_OK) st = tir_sched_value(s, v, &got[k]);
        if (st != TIR_OK) return st;
    }
    return TIR_OK;
}

tir_status tir_tune_tiling_sampled(tir_schedule *s, const char *block, const tir_tile_config *cfg,
                                   tir_tile_config *used) {
    int64_t want[NKNOBS], got[NKNOBS];
    if (cfg) knob_values(cfg, want);
    tir_status st = tune_sample_knobs(s, NKNOBS, knobs, cfg ? want : NULL, got);
    if (st != TIR_OK) return st;
    tir_tile_config c = tir_tile_config_default();
    c.warps_m = (int)got[0], c.warps_n = (int)got[1];
    c.threads_m = got[2] ? 4 : 8, c.threads_n = got[2] ? 8 : 4;
    c.tm = (int)got[3], c.tn = (int)got[4], c.bk = (int)got[5];
    c.vec = c.tm < c.tn ? c.tm : c.tn;
    if (c.vec > 4) c.vec = 4;
    c.staging = got[6] != 0, c.splitk = (int)got[7], c.lsr = got[8] != 0;
    c.stages = (int)got[9], c.gvec = got[10] != 0, c.dunroll = got[11] != 0;
    if (cfg) c.pad = cfg->pad;
    if (used) *used = c;
    return tir_tune_tiling(s, block, &c, NULL, NULL);
}
