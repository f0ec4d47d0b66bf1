/* space_tc.c: the design space of the tensor-core rule (tir_tune_tc_tiling)
 * for a tensor-core task (a matmul of kind TF32, F16 or BF16).
 *
 * The knobs and their candidates: block tiles bm, bn of 32, 64, 128, 192
 * (the default's 128 x 192 where a last wave of 128 x 256 is badly
 * filled: tir_tune_tc_default) and 256, k tiles
 * bk of 8..64 (8, 16, 24, 32, 48, 64: a multiple of the mma's k, 16 or 8
 * for TF32, dividing K: tensorize refuses a ragged k tile; 24 and 48 for
 * K such as 336, which 32 and 64 do not divide), 1..8 warps along each of i and j,
 * 2..4 pipeline stages, cp.async or plain copies, a row pad of 0, 4 or 8
 * elements (not applied to rows the swizzle takes: tir_tc_pad_a/_b).  A configuration is in the space when tir_tune_tc_config_valid
 * accepts it and its tiles are at most twice the rounded-up extents (as
 * the float32 space).  The sampled form (tir_tune_tc_tiling_sampled) makes
 * each knob one sample_categorical in the trace, so a tuned schedule's
 * text holds its decisions and replays them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune_internal.h"

enum { NKNOBS = 9, NTEXT = 8 /* fields always in the text; splitk only past 1 */ };
static const int64_t knob_tile[] = {32, 64, 128, 192, 256}, knob_bk[] = {8, 16, 24, 32, 48, 64},
                     knob_warps[] = {1, 2, 4, 8}, knob_stages[] = {2, 3, 4},
                     knob_bool[] = {0, 1}, knob_pad[] = {0, 4, 8}, knob_split[] = {1, 2, 4, 8};
static const tune_knob knobs[NKNOBS] = {
    {"bm", knob_tile, 5},       {"bn", knob_tile, 5},      {"bk", knob_bk, 6},
    {"warps_m", knob_warps, 4}, {"warps_n", knob_warps, 4}, {"stages", knob_stages, 3},
    {"async_copy", knob_bool, 2}, {"pad", knob_pad, 3},          {"splitk", knob_split, 4}};

static void knob_values(const tir_tc_config *c, int64_t *v) {
    v[0] = c->bm, v[1] = c->bn, v[2] = c->bk, v[3] = c->warps_m, v[4] = c->warps_n;
    v[5] = c->stages, v[6] = c->async_copy, v[7] = c->pad, v[8] = c->splitk > 1 ? c->splitk : 1;
}

static tir_tc_config from_values(const int64_t *v) {
    tir_tc_config c = {.bm = (int)v[0], .bn = (int)v[1], .bk = (int)v[2], .warps_m = (int)v[3],
                       .warps_n = (int)v[4], .stages = (int)v[5], .async_copy = v[6] != 0,
                       .pad = (int)v[7], .splitk = (int)v[8]};
    return c;
}

bool tune_tc_task_ok(tir_ctx *ctx, const tir_tune_task *t) {
    if (!tir_tune_task_tc(t) && t->kind != TIR_RT_GEMM_F32) {
        tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                     "tune: a task's kind is f32, tf32, f16 or bf16, not %s",
                     tir_rt_gemm_kind_name(t->kind));
        return false;
    }
    if (tir_tune_task_tc(t) && t->op != TIR_TUNE_MATMUL) {
        tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                     "tune: the tensor-core rule takes matmul only, not %s of kind %s",
                     tir_tune_op_name(t->op), tir_rt_gemm_kind_name(t->kind));
        return false;
    }
    return true;
}

/* In 64 bits, saturated (a configuration read from text may hold any int). */
int tir_tc_config_threads(const tir_tc_config *c) {
    int64_t t = 32 * (int64_t)c->warps_m * c->warps_n;
    return t > INT32_MAX ? INT32_MAX : t < INT32_MIN ? INT32_MIN : (int)t;
}

/* A row of len elements padded by pad, as the rule pads it (only a pad
 * below the row). */
static int64_t padded(int64_t len, int pad) { return pad > 0 && pad < len ? len + pad : len; }

int64_t tir_tc_config_shared_bytes(const tir_tc_config *c, int elem_bytes) {
    int64_t a = (int64_t)c->bm * padded(c->bk, tir_tc_pad_a(c, elem_bytes)),
            b = (int64_t)c->bk * padded(c->bn, tir_tc_pad_b(c, elem_bytes));
    int stages = c->stages > 1 ? c->stages : 1;
    return (int64_t)stages * (a + b) * elem_bytes;
}

/* The mma's k and the input element size of a tensor-core kind. */
static void kind_shape(tir_rt_gemm_kind kind, int *mk, int *eb) {
    *mk = kind == TIR_RT_GEMM_TF32 ? 8 : 16;
    *eb = kind == TIR_RT_GEMM_TF32 ? 4 : 2;
}

bool tune_tc_copies_whole(const tir_tc_config *c, int elem_bytes) {
    int64_t round = (int64_t)tir_tc_config_threads(c) * (16 / elem_bytes);
    return ((int64_t)c->bm * c->bk) % round == 0 && ((int64_t)c->bk * c->bn) % round == 0;
}

bool tir_tune_tc_config_valid(const tir_tune_task *t, const tir_target_limits *lim,
                              const tir_tc_config *c) {
    if (!tir_tune_task_tc(t) || t->op != TIR_TUNE_MATMUL) return false;
    if (!tune_tc_knobs_in_range(c)) return false; /* no product below overflows */
    int mk, eb;
    kind_shape(t->kind, &mk, &eb);
    if (c->bm < 16 || c->bn < 8 || c->warps_m < 1 || c->warps_n < 1) return false;
    int warps = c->warps_m * c->warps_n, threads = 32 * warps;
    if (warps > 32 || threads > lim->max_threads_per_block) return false;
    if (c->bm % (16 * c->warps_m) || c->bn % (8 * c->warps_n)) return false;
    if (c->bm / c->warps_m < 32 || c->bn / c->warps_n < 16) return false; /* the rule's minimum */
    if (c->bk < mk || c->bk % mk || t->K % c->bk) return false;
    /* split-K: the k tiles dealt evenly (tir_tc_config.splitk) */
    if (c->splitk > 1 && (t->K / c->bk) % c->splitk) return false;
    if (c->stages < 2 || c->stages > 4 || c->pad < 0 || (c->pad * eb) % 16) return false;
    if (tir_tc_config_shared_bytes(c, eb) > lim->max_shared_dynamic) return false;
    if (!tune_tc_copies_whole(c, eb)) return false;
    /* accumulators per thread, and about acc + 64 registers per thread
     * in the block's register file (ptxas, sm_90: 128 at 64 accumulators,
     * 224 at 128); past it the kernel's maxntid makes ptxas spill */
    int64_t acc = (int64_t)(c->bm / c->warps_m) * (c->bn / c->warps_n) / 32;
    if (acc > 128 || (acc + 64) * threads > lim->max_registers_per_block) return false;
    return true;
}

typedef struct grow {
    tir_tc_config *v;
    int n, cap;
} grow;

static bool push(grow *g, const tir_tc_config *c) {
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 256;
        tir_tc_config *v = realloc(g->v, (size_t)cap * sizeof *v);
        if (!v) return false;
        g->v = v, g->cap = cap;
    }
    g->v[g->n++] = *c;
    return true;
}

/* Every combination of the knobs' candidates, in the order of the knob
 * table (the last knob fastest). */
static int ncombos(void) {
    int n = 1;
    for (int k = 0; k < NKNOBS; k++) n *= knobs[k].n;
    return n;
}

static tir_tc_config combo(int i) {
    int64_t v[NKNOBS];
    for (int k = NKNOBS - 1; k >= 0; k--) v[k] = knobs[k].v[i % knobs[k].n], i /= knobs[k].n;
    return from_values(v);
}

tir_status tune_tc_space_make(tir_ctx *ctx, const tir_tune_task *t, const tir_target_limits *lim,
                              tir_tune_space *out) {
    int64_t mcap = 2 * tune_pow2_ceil(t->M), ncap = 2 * tune_pow2_ceil(t->N);
    grow g = {0};
    for (int i = 0, n = ncombos(); i < n; i++) {
        tir_tc_config c = combo(i);
        if (c.bm > mcap || c.bn > ncap || !tir_tune_tc_config_valid(t, lim, &c)) continue;
        if (!push(&g, &c)) {
            free(g.v);
            return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tune: out of memory");
        }
    }
    if (g.n == 0) {
        free(g.v);
        int mk, eb;
        kind_shape(t->kind, &mk, &eb);
        /* say which bound emptied it: K, or M / N under the smallest tile
           (32 rows and columns, at most twice the power of two above) */
        if (t->K % mk)
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "tune: no tensor-core configuration fits matmul %lldx%lldx%lld "
                                "of %s (K must be a multiple of %d)",
                                (long long)t->M, (long long)t->N, (long long)t->K,
                                tir_rt_gemm_kind_name(t->kind), mk);
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tune: no tensor-core configuration fits matmul %lldx%lldx%lld of %s "
                            "(the space's block tiles are 32 to 256 rows and columns, at most "
                            "twice M and N rounded up to a power of two: M and N must be at "
                            "least 9; the untuned default, tir_tune_tc_default, still applies)",
                            (long long)t->M, (long long)t->N, (long long)t->K,
                            tir_rt_gemm_kind_name(t->kind));
    }
    out->tc_configs = g.v, out->n = g.n;
    return TIR_OK;
}

int tir_tc_config_text(const tir_tc_config *c, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "tile=%dx%dx%d warps=%dx%d stages=%d async=%d pad=%d", c->bm, c->bn,
                     c->bk, c->warps_m, c->warps_n, c->stages, c->async_copy ? 1 : 0, c->pad);
    /* split-K only when there is one, so records from before it read the same */
    if (c->splitk > 1 && n >= 0)
        n += snprintf(buf + ((size_t)n < cap ? (size_t)n : cap), (size_t)n < cap ? cap - (size_t)n : 0,
                      " splitk=%d", c->splitk);
    return n;
}

tir_status tir_tc_config_parse(tir_ctx *ctx, const char *text, tir_tc_config *c) {
    static const char *const fields[] = {"tile", "tile", "tile", "warps", "warps",
                                         "stages", "async", "pad"};
    int async = 0, end = -1;
    /* the switches (no_*, guard_tail, same_pad) are not in the text: the
       defaults' */
    tir_tc_config p = tir_tc_config_default();
    if (!tune_text_numbers_fit(text))
        return tir_ctx_fail(ctx, TIR_ERR_PARSE,
                            "tune: \"%s\": a number has more than 9 digits (knobs are "
                            "1..%d)",
                            text, TUNE_KNOB_MAX);
    int n = sscanf(text, "tile=%dx%dx%d warps=%dx%d stages=%d async=%d pad=%d%n", &p.bm, &p.bn,
                   &p.bk, &p.warps_m, &p.warps_n, &p.stages, &async, &p.pad, &end);
    int split = 1, end2 = -1;
    if (n == NTEXT && text[end] == ' ' && sscanf(text + end, " splitk=%d%n", &split, &end2) == 1 &&
        split >= 2 && split <= 65535)
        end += end2;
    if (n != NTEXT || text[end] != '\0')
        return tir_ctx_fail(ctx, TIR_ERR_PARSE,
                            "tune: \"%s\" is not a tensor-core configuration (%s)", text,
                            n == NTEXT ? "text after the pad (only \" splitk=S\", S >= 2)"
                                       : fields[n < 0 ? 0 : n]);
    p.splitk = split;
    if (!tune_tc_knobs_in_range(&p))
        return tir_ctx_fail(ctx, TIR_ERR_PARSE,
                            "tune: \"%s\": a knob is out of range (tiles and warps 1..%d, "
                            "stages 1..64, pad 0..%d)",
                            text, TUNE_KNOB_MAX, TUNE_KNOB_MAX);
    p.async_copy = async != 0;
    *c = p;
    return TIR_OK;
}

tir_status tir_tune_tc_tiling_sampled(tir_schedule *s, const char *block, const tir_tc_config *cfg,
                                      tir_tc_config *used) {
    int64_t want[NKNOBS], got[NKNOBS];
    if (cfg) knob_values(cfg, want);
    tir_status st = tune_sample_knobs(s, NKNOBS, knobs, cfg ? want : NULL, got);
    if (st != TIR_OK) return st;
    tir_tc_config c = from_values(got);
    if (used) *used = c;
    return tir_tune_tc_tiling(s, block, &c, NULL, NULL);
}
