/* test_api_fuzz.c: the public schedule API's contract under random and
 * deliberately bad arguments (a new user's attack, twenty-second
 * session).  test_sched_fuzz draws plausible schedules with some invalid
 * calls; this one draws every primitive of minitir/schedule.h with
 * arguments from a pool that mixes live handles, stale ones, handles of
 * the other kinds, handles made by a second schedule of the same function
 * (whose ids name live handles here too), zero and out-of-range ids,
 * loops of other blocks, NULL pointers, and out-of-range counts, indices,
 * factors and strings; plus replays of another schedule's trace, cut and
 * corrupted, and replays with mutated decisions.  It checks:
 *   - a failed call returns an error, leaves the same error code in the
 *     ctx with a message, and changes nothing: the function (the pointer
 *     and its printed text), the original function's text, every handle,
 *     the trace text and the random state are as before;
 *   - a successful call leaves a well-formed function that computes what
 *     the unscheduled one does in the reference interpreter (checked after
 *     every success, not only at the end);
 *   - at the end, the text trace replays on a fresh schedule to the same
 *     function and trace, and the function's text is a fixed point of
 *     print -> parse -> print.
 * MINITIR_FUZZ_CASES=N (or argv[1]) sets the number of cases (default
 * 300: seconds), MINITIR_FUZZ_SEED the seed; a failure prints both and the
 * trace.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fuzz_args.h"
#include "sched_check.h"

static long g_cases = 300;
static uint64_t g_seed = 20261205;

enum { POOL = 48 };

typedef struct api_case {
    tir_ctx *ctx;
    tir_schedule *s, *other; /* other: the same function, another schedule */
    const tir_prim_func *orig;
    const char *orig_text;
    uint64_t r;
    tir_block_rv blocks[POOL], oblocks[8];
    tir_loop_rv loops[POOL], oloops[8];
    tir_value_rv values[POOL], ovalue;
    int nblocks, nloops, nvalues, noblocks, noloops;
    int splits; /* successful splits: ragged ones multiply the interpreter's work */
    char why[16384];
    bool bad;
    long calls, failed, checks, skipped;
} api_case;

static int64_t rnd(api_case *c, int64_t lo, int64_t hi) {
    return lo + (int64_t)(sched_rand(&c->r) % (uint64_t)(hi - lo + 1));
}
static bool chance(api_case *c, int pct) { return rnd(c, 0, 99) < pct; }

/* ---------------------------------------------------------------- pool */

static void add_blocks(api_case *c, const tir_block_rv *b, int n) {
    for (int i = 0; i < n; i++) c->blocks[c->nblocks++ % POOL] = b[i];
}
static void add_loops(api_case *c, const tir_loop_rv *l, int n) {
    for (int i = 0; i < n; i++) c->loops[c->nloops++ % POOL] = l[i];
}

static int pool_n(int n) { return n < POOL ? n : POOL; }

/* A raw id of any kind of this schedule, a bad id, or a foreign one. */
static uint32_t odd_id(api_case *c, uint32_t *sched) {
    *sched = c->blocks[0].sched;
    int nh = tir_sched_num_handles(c->s);
    switch (rnd(c, 0, 3)) {
    case 0: return 0;
    case 1: return (uint32_t)nh + (uint32_t)rnd(c, 1, 3);
    case 2: *sched = rnd(c, 0, 1) ? 0 : *sched + 7; return (uint32_t)rnd(c, 1, nh > 0 ? nh : 1);
    default: return (uint32_t)rnd(c, 1, nh > 0 ? nh : 1); /* any kind */
    }
}

static tir_loop_rv pick_loop(api_case *c) {
    int k = (int)rnd(c, 0, 99);
    if (k < 78 && c->nloops) return c->loops[rnd(c, 0, pool_n(c->nloops) - 1)];
    if (k < 88 && c->noloops) return c->oloops[rnd(c, 0, c->noloops - 1)];
    tir_loop_rv l;
    l.id = odd_id(c, &l.sched);
    return l;
}

static tir_block_rv pick_block(api_case *c) {
    int k = (int)rnd(c, 0, 99);
    if (k < 80 && c->nblocks) return c->blocks[rnd(c, 0, pool_n(c->nblocks) - 1)];
    if (k < 90 && c->noblocks) return c->oblocks[rnd(c, 0, c->noblocks - 1)];
    tir_block_rv b;
    b.id = odd_id(c, &b.sched);
    return b;
}

static tir_value_rv pick_value(api_case *c) {
    int k = (int)rnd(c, 0, 99);
    if (k < 75 && c->nvalues) return c->values[rnd(c, 0, pool_n(c->nvalues) - 1)];
    if (k < 85 && c->ovalue.id) return c->ovalue;
    tir_value_rv v;
    v.id = odd_id(c, &v.sched);
    return v;
}

static const char *pick_str(api_case *c, const char *const *good, int ngood) {
    static const char *const odd[] = {"", "bogus", "threadIdx.w", "1bad", "a b", "shared ",
                                      "frag.x", "lambda"};
    if (chance(c, 6)) return NULL;
    if (chance(c, 20)) return odd[rnd(c, 0, 7)];
    return good[rnd(c, 0, ngood - 1)];
}

/* ------------------------------------------------------------- checking */

typedef struct before {
    sched_snap snap;
    char *text, *trace;
} before;

static void take(api_case *c, before *b) {
    sched_snap_take(c->s, &b->snap);
    b->text = strdup(tir_print(c->ctx, tir_sched_func(c->s)));
    b->trace = strdup(tir_sched_trace_text(c->s));
}

static void release(before *b) {
    free(b->text);
    free(b->trace);
}

/* After a failure: nothing changed, and the failure is reported. */
static void check_failed(api_case *c, before *b, tir_status st, const char *prim) {
    const char *msg = tir_ctx_error(c->ctx);
    if (tir_ctx_error_code(c->ctx) != st || !msg || !*msg)
        snprintf(c->why, sizeof c->why, "%s failed with %s but the ctx holds %s \"%s\"", prim,
                 tir_status_name(st), tir_status_name(tir_ctx_error_code(c->ctx)),
                 msg ? msg : "");
    else if (st == TIR_ERR_VERIFY || strstr(msg, "internal error"))
        snprintf(c->why, sizeof c->why, "%s: %s", prim, msg);
    else if (strcmp(b->text, tir_print(c->ctx, tir_sched_func(c->s))) != 0)
        snprintf(c->why, sizeof c->why, "failed %s (%s) changed the printed function:\n%s", prim,
                 msg, tir_print(c->ctx, tir_sched_func(c->s)));
    else if (strcmp(b->trace, tir_sched_trace_text(c->s)) != 0)
        snprintf(c->why, sizeof c->why, "failed %s (%s) changed the trace:\n%s", prim, msg,
                 tir_sched_trace_text(c->s));
    else if (strcmp(c->orig_text, tir_print(c->ctx, tir_sched_orig_func(c->s))) != 0)
        snprintf(c->why, sizeof c->why, "failed %s changed the original function", prim);
    else {
        char why[4096];
        if (sched_snap_same(c->s, &b->snap, why, sizeof why)) return;
        snprintf(c->why, sizeof c->why, "failed %s (%s): %s", prim, msg, why);
        c->bad = true;
        return; /* the snapshot is freed */
    }
    sched_snap_free(&b->snap);
    c->bad = true;
}

/* The stores the interpreter runs, roughly: each store counted once per
 * iteration of the loops around it (a non-constant extent as 64).  Splits
 * by factors whose product exceeds the extent (split_rv of sampled values,
 * ragged factors) multiply it, so the equivalence check is skipped past a
 * bound rather than running for minutes. */
typedef struct work_visit {
    tir_visitor v;
    double iters, stores;
} work_visit;

static bool work_pre(tir_visitor *v, const tir_node *n) {
    work_visit *w = (work_visit *)v;
    const tir_for *f = tir_as_tir_for(n);
    int64_t e = 64;
    if (f) w->iters *= tir_expr_const_int(f->extent, &e) && e > 0 ? (double)e : 64;
    if (tir_as_tir_buffer_store(n)) w->stores += w->iters;
    return !tir_kind_is_expr((tir_kind)n->kind);
}

static void work_post(tir_visitor *v, const tir_node *n) {
    work_visit *w = (work_visit *)v;
    const tir_for *f = tir_as_tir_for(n);
    int64_t e = 64;
    if (f) w->iters /= tir_expr_const_int(f->extent, &e) && e > 0 ? (double)e : 64;
}

static bool cheap_to_run(const tir_prim_func *f) {
    work_visit w = {{work_pre, work_post, NULL}, 1, 0};
    tir_visit(&w.v, f->body);
    return w.stores <= 2e5;
}

/* After a success: well formed and equivalent to the original. */
static void check_ok(api_case *c, before *b, const char *prim) {
    sched_snap_free(&b->snap);
    if (tir_sched_func(c->s) == c->orig && tir_sched_trace_len(c->s) == 0) return;
    c->checks++;
    char why[8192];
    if (tir_verify(c->ctx, tir_sched_func(c->s)) != TIR_OK) {
        snprintf(c->why, sizeof c->why, "%s made ill-formed IR: %s", prim, tir_ctx_error(c->ctx));
        c->bad = true;
    } else if (!cheap_to_run(tir_sched_func(c->s))) {
        c->checks--, c->skipped++;
    } else if (!sched_equiv_ok(c->ctx, c->orig, tir_sched_func(c->s), c->r, why, sizeof why)) {
        snprintf(c->why, sizeof c->why, "after %s: %s", prim, why);
        c->bad = true;
    }
}

/* Calls and successes per primitive, printed at the end: what the run
 * reached. */
static struct prim_stat {
    const char *name;
    long calls, ok;
} g_stats[64];

static void count(const char *prim, bool ok) {
    int i = 0;
    while (i < 63 && g_stats[i].name && strcmp(g_stats[i].name, prim) != 0) i++;
    g_stats[i].name = prim;
    g_stats[i].calls++;
    g_stats[i].ok += ok;
}

/* One call: runs `expr` (a tir_status) with the before/after checks. */
#define CALL(prim, expr)                                                                  \
    do {                                                                                  \
        before b_;                                                                        \
        take(c, &b_);                                                                     \
        st = (expr);                                                                      \
        c->calls++;                                                                       \
        count(prim, st == TIR_OK);                                                        \
        if (st != TIR_OK) {                                                               \
            c->failed++;                                                                  \
            check_failed(c, &b_, st, prim);                                               \
        } else {                                                                          \
            check_ok(c, &b_, prim);                                                       \
        }                                                                                 \
        release(&b_);                                                                     \
    } while (0)

/* ---------------------------------------------------------------- steps */

static const char *const scopes[] = {"shared", "local", "frag.a", "frag.b", "frag.acc", "global"};
static const char *const axes[] = {"blockIdx.x", "threadIdx.x", "threadIdx.y", "vthread.x",
                                   "blockIdx.y"};
static const char *const keys[] = {"note", "pragma_auto_unroll_max_step",
                                   "software_pipeline_stage", "k.x"};
static const char *const maps[] = {"lambda i, j: (j, i)", "lambda i, j: (i // 2, i % 2, j)",
                                   "lambda i: (i,)", "lambda i, j: (i * 0, j)",
                                   "lambda i, j: (i, j, 0)", "lambda i, j: ((i + j) % 4 + i // 4 * 4, j)"};
static const char *const intrins[] = {"mma_m16n8k16_bf16", "frag_fill_f32", "frag_load_a_16x16",
                                      "frag_store_16x8", "mma_m16n8k8_tf32", "none"};

/* A count that is mostly small and sometimes out of range. */
static int pick_count(api_case *c, int lo, int hi) {
    if (chance(c, 5)) return (int)rnd(c, -2, 0);
    if (chance(c, 3)) return 1 << 20;
    return (int)rnd(c, lo, hi);
}

static int64_t pick_factor(api_case *c) {
    static const int64_t odd[] = {0, -2, TIR_SPLIT_INFER, INT64_MAX, INT64_MIN, (int64_t)1 << 31};
    return chance(c, 12) ? odd[rnd(c, 0, 5)] : chance(c, 40) ? TIR_SPLIT_INFER : rnd(c, 1, 9);
}

static void queries(api_case *c) {
    tir_status st;
    const tir_block_rv *bs = NULL;
    const tir_loop_rv *ls = NULL;
    int n = 0;
    tir_block_rv b = pick_block(c);
    bool null_out = chance(c, 5);
    switch (rnd(c, 0, 5)) {
    case 0: {
        static const char *const names[] = {"root", "C", "C_init", "D", "T_0", "A_shared"};
        tir_block_rv out;
        CALL("get_block", tir_sched_get_block(c->s, pick_str(c, names, 6), null_out ? NULL : &out));
        if (st == TIR_OK) add_blocks(c, &out, 1);
        break;
    }
    case 1:
        CALL("get_loops", tir_sched_get_loops(c->s, b, null_out ? NULL : &ls, &n));
        if (st == TIR_OK) add_loops(c, ls, n);
        break;
    case 2:
        CALL("get_child_blocks", tir_sched_get_child_blocks(c->s, b, &bs, null_out ? NULL : &n));
        if (st == TIR_OK) add_blocks(c, bs, n);
        break;
    case 3:
        CALL("get_loop_child_blocks",
             tir_sched_get_loop_child_blocks(c->s, pick_loop(c), &bs, &n));
        if (st == TIR_OK) add_blocks(c, bs, n);
        break;
    case 4:
        CALL("get_producers", tir_sched_get_producers(c->s, b, &bs, &n));
        if (st == TIR_OK) add_blocks(c, bs, n);
        break;
    default:
        CALL("get_consumers", tir_sched_get_consumers(c->s, b, &bs, &n));
        if (st == TIR_OK) add_blocks(c, bs, n);
    }
}

static void loop_prims(api_case *c) {
    tir_status st;
    tir_loop_rv outs[20], l = pick_loop(c), ls[6];
    int n = pick_count(c, 2, 4);
    if (n > 6) n = 6; /* the arrays' size */
    int k = n > 0 ? n : 2;
    for (int i = 0; i < 6; i++) ls[i] = pick_loop(c);
    int kind = (int)rnd(c, 0, 6);
    if (kind == 0 && c->splits >= 3) kind = 1;
    switch (kind) {
    case 0: {
        int64_t f[6];
        for (int i = 0; i < 6; i++) f[i] = pick_factor(c);
        CALL("split", tir_sched_split(c->s, l, n, chance(c, 4) ? NULL : f,
                                      chance(c, 4) ? NULL : outs));
        if (st == TIR_OK) add_loops(c, outs, n), c->splits++;
        break;
    }
    case 1:
        CALL("fuse", tir_sched_fuse(c->s, n, chance(c, 4) ? NULL : ls,
                                    chance(c, 4) ? NULL : outs));
        if (st == TIR_OK) add_loops(c, outs, 1);
        break;
    case 2: CALL("reorder", tir_sched_reorder(c->s, k, chance(c, 4) ? NULL : ls)); break;
    case 3: CALL("bind", tir_sched_bind(c->s, l, pick_str(c, axes, 5))); break;
    case 4: CALL("vectorize", tir_sched_vectorize(c->s, l)); break;
    case 5: CALL("parallel", tir_sched_parallel(c->s, l)); break;
    default: CALL("unroll", tir_sched_unroll(c->s, l));
    }
}

static void annot_prims(api_case *c) {
    tir_status st;
    tir_loop_rv l = pick_loop(c);
    tir_block_rv b = pick_block(c);
    const char *key = pick_str(c, keys, 4);
    static const char *const vals[] = {"x", "a\"b\\c\n", "?\?=", ""};
    const char *sv = chance(c, 5) ? NULL : vals[rnd(c, 0, 3)];
    int64_t iv[5] = {rnd(c, -3, 3), INT64_MIN, INT64_MAX, 0, 1};
    int n = pick_count(c, 0, 4);
    const int64_t *arr = chance(c, 5) ? NULL : iv;
    switch (rnd(c, 0, 9)) {
    case 0: CALL("annotate_loop_int", tir_sched_annotate_loop_int(c->s, l, key, iv[rnd(c, 0, 3)])); break;
    case 1: CALL("annotate_loop_str", tir_sched_annotate_loop_str(c->s, l, key, sv)); break;
    case 2: CALL("annotate_loop_ints", tir_sched_annotate_loop_ints(c->s, l, key, n > 4 ? 5 : n, arr)); break;
    case 3: CALL("annotate_block_int", tir_sched_annotate_block_int(c->s, b, key, iv[0])); break;
    case 4: CALL("annotate_block_str", tir_sched_annotate_block_str(c->s, b, key, sv)); break;
    case 5: CALL("annotate_block_ints", tir_sched_annotate_block_ints(c->s, b, key, n > 4 ? 5 : n, arr)); break;
    case 6: CALL("unannotate_loop", tir_sched_unannotate_loop(c->s, l, key)); break;
    case 7: CALL("unannotate_block", tir_sched_unannotate_block(c->s, b, key)); break;
    case 8: CALL("annotate_loop_rv", tir_sched_annotate_loop_rv(c->s, l, key, pick_value(c))); break;
    default: CALL("annotate_block_rv", tir_sched_annotate_block_rv(c->s, b, key, pick_value(c)));
    }
}

/* Block "C" and its outermost loop, when both exist (not traced: the
 * handles come from a query, which is, so the trace is longer). */
static bool block_c(api_case *c, tir_block_rv *b, tir_loop_rv *l) {
    const tir_loop_rv *ls;
    int n;
    if (tir_sched_get_block(c->s, "C", b) != TIR_OK ||
        tir_sched_get_loops(c->s, *b, &ls, &n) != TIR_OK || n == 0)
        return false;
    *l = ls[0];
    return true;
}

static void block_prims(api_case *c) {
    tir_status st;
    tir_block_rv b = pick_block(c), out, cons[3] = {pick_block(c), pick_block(c), pick_block(c)};
    tir_loop_rv l = pick_loop(c);
    int kind = (int)rnd(c, 0, 11);
    /* Half the decompositions and loop tensorizations aim at the matmul's
       block and outer loop with the bfloat16 mma: a 16 x 8 x 16 nest
       decomposed matches it whole, so tensorize_loop also succeeds. */
    bool aim = (kind == 6 || kind == 11) && chance(c, 50) && block_c(c, &b, &l);
    const char *intrin = aim ? "mma_m16n8k16_bf16" : pick_str(c, intrins, 6);
    int nc = chance(c, 70) ? 0 : pick_count(c, 1, 3);
    if (nc > 3) nc = 4; /* one past the array when cons is NULL below */
    const tir_block_rv *cp = nc > 3 || chance(c, 5) ? NULL : cons;
    int idx = chance(c, 10) ? (int)rnd(c, -2, 9) : (int)rnd(c, 0, 2);
    tir_block_rv *o = chance(c, 4) ? NULL : &out;
    switch (kind) {
    case 0:
        CALL("cache_read", tir_sched_cache_read(c->s, b, idx, pick_str(c, scopes, 6), nc, cp, o));
        if (st == TIR_OK) add_blocks(c, &out, 1);
        break;
    case 1:
        CALL("cache_write", tir_sched_cache_write(c->s, b, idx, pick_str(c, scopes, 6), nc, cp, o));
        if (st == TIR_OK) add_blocks(c, &out, 1);
        break;
    case 2: CALL("compute_at", tir_sched_compute_at(c->s, b, l, chance(c, 50))); break;
    case 3: CALL("reverse_compute_at", tir_sched_reverse_compute_at(c->s, b, l, chance(c, 50))); break;
    case 4: CALL("compute_inline", tir_sched_compute_inline(c->s, b)); break;
    case 5: CALL("reverse_compute_inline", tir_sched_reverse_compute_inline(c->s, b)); break;
    case 6:
        CALL("decompose_reduction", tir_sched_decompose_reduction(c->s, b, l, o));
        if (st == TIR_OK) add_blocks(c, &out, 1);
        break;
    case 7:
        CALL("rfactor", tir_sched_rfactor(c->s, l, (int)rnd(c, -1, 3), o));
        if (st == TIR_OK) add_blocks(c, &out, 1);
        break;
    case 8:
        CALL("blockize", tir_sched_blockize(c->s, l, o));
        if (st == TIR_OK) add_blocks(c, &out, 1);
        break;
    case 9: {
        bool changed = true, *cp = chance(c, 20) ? NULL : &changed;
        CALL("fuse_reduction_epilogue", tir_sched_fuse_reduction_epilogue(c->s, b, cons[0], cp));
        if (st != TIR_OK && cp && changed) {
            snprintf(c->why, sizeof c->why, "fuse_reduction_epilogue failed with changed set");
            c->bad = true;
        }
        break;
    }
    case 10: CALL("tensorize", tir_sched_tensorize(c->s, b, pick_str(c, intrins, 6))); break;
    default: CALL("tensorize_loop", tir_sched_tensorize_loop(c->s, l, intrin));
    }
}

static void buffer_prims(api_case *c) {
    tir_status st;
    tir_block_rv b = pick_block(c);
    int64_t idx = chance(c, 10) ? rnd(c, -3, 9) : rnd(c, 0, 2);
    switch (rnd(c, 0, 3)) {
    case 0:
        CALL("storage_align", tir_sched_storage_align(c->s, b, idx, rnd(c, -2, 3),
                                                      chance(c, 10) ? rnd(c, -4, 0) : rnd(c, 1, 32),
                                                      rnd(c, -2, 33)));
        break;
    case 1: CALL("set_scope", tir_sched_set_scope(c->s, b, idx, pick_str(c, scopes, 6))); break;
    case 2:
        CALL("transform_layout",
             tir_sched_transform_layout(c->s, b, idx, chance(c, 50), pick_str(c, maps, 6)));
        break;
    default: {
        int64_t stg[4], ord[4], as[2] = {rnd(c, -1, 2), rnd(c, 0, 3)};
        int n = pick_count(c, 1, 4), no = chance(c, 80) ? n : pick_count(c, 1, 4);
        if (n > 4) n = 4;
        if (no > 4) no = 4;
        for (int i = 0; i < 4; i++) stg[i] = rnd(c, -1, 3), ord[i] = rnd(c, -1, 4);
        CALL("software_pipeline",
             tir_sched_software_pipeline(c->s, pick_loop(c), n, chance(c, 4) ? NULL : stg, no,
                                         chance(c, 4) ? NULL : ord, (int)rnd(c, 0, 2),
                                         chance(c, 4) ? NULL : as));
    }
    }
}

static void sample_prims(api_case *c) {
    tir_status st;
    tir_value_rv v[20];
    tir_loop_rv l = pick_loop(c), outs[20];
    int n = pick_count(c, 1, 4);
    if (n > 17) n = 17;
    int64_t d[17];
    for (int i = 0; i < 17; i++) d[i] = chance(c, 5) ? rnd(c, -2, 0) : rnd(c, 1, 8);
    int nd = chance(c, 60) ? 0 : chance(c, 80) ? n : (int)rnd(c, 0, 5);
    const int64_t *dp = nd && chance(c, 5) ? NULL : d;
    tir_value_rv *o = chance(c, 4) ? NULL : v;
    switch (rnd(c, 0, 4)) {
    case 0:
        CALL("sample_perfect_tile", tir_sched_sample_perfect_tile(c->s, l, n, rnd(c, -1, 16), nd, dp, o));
        break;
    case 1:
        CALL("sample_tile", tir_sched_sample_tile(c->s, l, n, rnd(c, -1, 16), rnd(c, -1, 60), nd, dp, o));
        break;
    case 2: {
        int64_t cand[3] = {rnd(c, 1, 8), rnd(c, 1, 8), rnd(c, -1, 8)};
        double probs[3] = {1, chance(c, 10) ? NAN : 0.5, chance(c, 10) ? -1 : 0.25};
        int nc = (int)rnd(c, chance(c, 5) ? -1 : 1, 3);
        nd = chance(c, 60) ? 0 : 1;
        d[0] = rnd(c, -1, 3);
        CALL("sample_categorical",
             tir_sched_sample_categorical(c->s, nc, chance(c, 4) ? NULL : cand,
                                          chance(c, 4) ? NULL : probs, nd, d, o));
        if (st == TIR_OK) n = 1;
        break;
    }
    default: {
        if (c->splits >= 3) return;
        tir_value_rv f[4] = {pick_value(c), pick_value(c), pick_value(c), pick_value(c)};
        int nf = (int)rnd(c, 1, 4);
        CALL("split_rv", tir_sched_split_rv(c->s, l, nf, chance(c, 4) ? NULL : f,
                                            chance(c, 4) ? NULL : outs));
        if (st == TIR_OK) add_loops(c, outs, nf), c->splits++;
        return;
    }
    }
    if (st == TIR_OK)
        for (int i = 0; i < n; i++) c->values[c->nvalues++ % POOL] = v[i];
}

/* A replay of the other schedule's trace (its handles are local to the
 * text), cut at a random line and sometimes corrupted, or with its
 * decisions mutated. */
static void replay_prims(api_case *c) {
    tir_status st;
    const char *t = tir_sched_trace_text(c->other);
    size_t len = strlen(t), cut = len;
    char *text = strdup(t);
    if (chance(c, 50) && len) { /* cut after a random line */
        cut = (size_t)rnd(c, 0, (int64_t)len - 1);
        while (cut < len && text[cut] != '\n') cut++;
        if (cut < len) cut++;
    }
    if (chance(c, 30) && cut) { /* one character changed */
        static const char junk[] = "0123456789[](),=\" lbv_\n#-";
        text[rnd(c, 0, (int64_t)cut - 1)] = junk[rnd(c, 0, (int64_t)sizeof junk - 2)];
    }
    if (chance(c, 60)) {
        CALL("replay", tir_sched_replay(c->s, text, cut));
    } else {
        const tir_decision *d;
        int nd = 0;
        tir_sched_decisions(c->other, &d, &nd);
        tir_decision ov[4];
        int64_t vals[4][4];
        int no = (int)rnd(c, 0, nd < 4 ? nd : 4);
        for (int i = 0; i < no; i++) {
            ov[i] = d[rnd(c, 0, nd - 1)];
            if (chance(c, 10)) ov[i].inst = (int)rnd(c, -1, 30);
            ov[i].n = chance(c, 30) ? 0 : (int)rnd(c, 1, 4);
            for (int j = 0; j < 4; j++) vals[i][j] = rnd(c, -1, 9);
            ov[i].values = chance(c, 50) && ov[i].n == d[i].n ? d[i].values : vals[i];
        }
        CALL("replay_with_decisions",
             tir_sched_replay_with_decisions(c->s, text, cut, no, chance(c, 5) ? NULL : ov));
    }
    free(text);
    /* Its blocks by name join the pool (the replay may have made some). */
    tir_block_rv root;
    const tir_block_rv *kids;
    int n;
    if (st == TIR_OK && tir_sched_get_block(c->s, "root", &root) == TIR_OK &&
        tir_sched_get_child_blocks(c->s, root, &kids, &n) == TIR_OK)
        add_blocks(c, kids, n);
}

/* A few plausible steps on the other schedule: its trace (with samples)
 * is what replay_prims replays here, and its handles are the foreign
 * ones. */
static void prepare_other(api_case *c) {
    tir_schedule *o = c->other;
    tir_block_rv root;
    const tir_block_rv *kids;
    const tir_loop_rv *ls;
    int n = 0, nl = 0;
    if (tir_sched_get_block(o, "root", &root) != TIR_OK ||
        tir_sched_get_child_blocks(o, root, &kids, &n) != TIR_OK || n == 0)
        return;
    for (int i = 0; i < n && i < 8; i++) c->oblocks[c->noblocks++] = kids[i];
    if (tir_sched_get_loops(o, kids[n - 1], &ls, &nl) != TIR_OK || nl == 0) return;
    for (int i = 0; i < nl && i < 8; i++) c->oloops[c->noloops++] = ls[i];
    tir_value_rv v[2];
    tir_loop_rv parts[2];
    if (tir_sched_sample_perfect_tile(o, ls[0], 2, 4, 0, NULL, v) == TIR_OK &&
        tir_sched_split_rv(o, ls[0], 2, v, parts) == TIR_OK)
        c->ovalue = v[1];
    if (tir_sched_sample_categorical(o, 3, (const int64_t[]){0, 2, 4}, (const double[]){1, 1, 1},
                                     0, NULL, v) == TIR_OK)
        tir_sched_annotate_loop_rv(o, ls[nl - 1], "pragma_auto_unroll_max_step", v[0]);
    if (nl >= 2) tir_sched_reorder(o, 2, (const tir_loop_rv[]){ls[nl - 1], ls[1]});
}

/* ---------------------------------------------------------------- cases */

typedef const tir_prim_func *(*make_fn)(tir_ctx *ctx, api_case *c);

static const tir_prim_func *make_matmul(tir_ctx *ctx, api_case *c) {
    return tir_def_matmul(ctx, rnd(c, 1, 9), rnd(c, 1, 9), rnd(c, 1, 9), TIR_F32);
}
static const tir_prim_func *make_bias_relu(tir_ctx *ctx, api_case *c) {
    return tir_def_matmul_bias_relu(ctx, rnd(c, 1, 7), rnd(c, 1, 7), rnd(c, 1, 7), TIR_F32);
}
static const tir_prim_func *make_chain(tir_ctx *ctx, api_case *c) {
    return tir_def_elementwise_chain(ctx, rnd(c, 1, 9), rnd(c, 1, 9), TIR_F32);
}
/* bfloat16 in, float32 out: tile shapes let tensorize and tensorize_loop
 * get past matching (and fail or succeed as a whole). */
static const tir_prim_func *make_mixed(tir_ctx *ctx, api_case *c) {
    return tir_def_matmul_mixed(ctx, 16 * rnd(c, 1, 2), 8 * rnd(c, 1, 2), 16, TIR_BF16, TIR_F32);
}

static void run_case(api_case *c, make_fn make) {
    c->orig = make(c->ctx, c);
    if (!c->orig || tir_sched_create(c->ctx, c->orig, &c->s) != TIR_OK ||
        tir_sched_create(c->ctx, c->orig, &c->other) != TIR_OK) {
        snprintf(c->why, sizeof c->why, "cannot schedule: %s", tir_ctx_error(c->ctx));
        c->bad = true;
        return;
    }
    c->orig_text = tir_print(c->ctx, c->orig);
    tir_sched_seed(c->s, c->r);
    tir_sched_seed(c->other, c->r ^ 0x5bd1e995u);
    prepare_other(c);
    tir_block_rv root;
    const tir_block_rv *kids;
    const tir_loop_rv *ls;
    int n = 0, nl = 0;
    tir_sched_get_block(c->s, "root", &root);
    tir_sched_get_child_blocks(c->s, root, &kids, &n);
    add_blocks(c, &root, 1);
    add_blocks(c, kids, n);
    for (int i = 0; i < n; i++)
        if (tir_sched_get_loops(c->s, kids[i], &ls, &nl) == TIR_OK) add_loops(c, ls, nl);
    int steps = (int)rnd(c, 4, 24);
    for (int i = 0; i < steps && !c->bad; i++) {
        switch (rnd(c, 0, 9)) {
        case 0: queries(c); break;
        case 1:
        case 2: loop_prims(c); break;
        case 3: annot_prims(c); break;
        case 4:
        case 5: block_prims(c); break;
        case 6: buffer_prims(c); break;
        case 7:
        case 8: sample_prims(c); break;
        default: replay_prims(c);
        }
    }
    if (c->bad) return;
    char why[8192];
    if (!sched_roundtrip_ok(c->s, why, sizeof why)) {
        snprintf(c->why, sizeof c->why, "at the end: %s", why);
        c->bad = true;
        return;
    }
    const char *p1 = tir_print(c->ctx, tir_sched_func(c->s));
    const tir_prim_func *back = NULL;
    if (tir_parse_func(c->ctx, p1, strlen(p1), &back) != TIR_OK ||
        strcmp(p1, tir_print(c->ctx, back)) != 0) {
        snprintf(c->why, sizeof c->why, "print -> parse -> print is not a fixed point:\n%s", p1);
        c->bad = true;
    }
}

static void run_family(make_fn make, const char *name, long ncases, uint64_t seed) {
    long calls = 0, failed = 0, checks = 0, skipped = 0;
    int nbad = 0;
    for (long i = 0; i < ncases; i++) {
        api_case *c = calloc(1, sizeof *c);
        assert_non_null(c);
        c->ctx = tir_ctx_create();
        c->r = seed * 1000003u + (uint64_t)i;
        run_case(c, make);
        if (c->bad && ++nbad <= 3)
            fprintf(stderr, "# API FUZZ FAILURE %s: MINITIR_FUZZ_SEED=%llu case %ld\n# %s\n# trace:\n%s\n",
                    name, (unsigned long long)seed, i, c->why,
                    c->s ? tir_sched_trace_text(c->s) : "");
        calls += c->calls;
        failed += c->failed;
        checks += c->checks;
        skipped += c->skipped;
        tir_sched_destroy(c->s);
        tir_sched_destroy(c->other);
        tir_ctx_destroy(c->ctx);
        free(c);
    }
    printf("# %s: %ld cases, %ld calls (%ld refused), %ld successes checked against the "
           "interpreter (%ld too big to run), %d failures\n",
           name, ncases, calls, failed, checks, skipped, nbad);
    if (nbad) fail_msg("%d of %ld %s cases failed (see above)", nbad, ncases, name);
    assert_true(calls > failed || ncases < 20);
    assert_true(failed > 0 || ncases < 20);
}

static void test_api_matmul(void **st) {
    (void)st;
    run_family(make_matmul, "matmul", g_cases / 4, g_seed);
}
static void test_api_bias_relu(void **st) {
    (void)st;
    run_family(make_bias_relu, "matmul_bias_relu", g_cases / 4, g_seed + 1);
}
static void test_api_chain(void **st) {
    (void)st;
    run_family(make_chain, "elementwise_chain", g_cases / 4, g_seed + 2);
}
static void test_api_mixed(void **st) {
    (void)st;
    run_family(make_mixed, "matmul_bf16", g_cases - 3 * (g_cases / 4), g_seed + 3);
}

/* After the others: the successes per primitive. */
static void test_api_stats(void **st) {
    (void)st;
    printf("# successes/calls:");
    for (int i = 0; i < 64 && g_stats[i].name; i++)
        printf("%s %s %ld/%ld", i % 6 ? "," : "\n#", g_stats[i].name, g_stats[i].ok,
               g_stats[i].calls);
    printf("\n");
}

int main(int argc, char **argv) {
    fuzz_args(argc, argv, &g_cases, &g_seed);
    printf("# MINITIR_FUZZ_SEED=%llu, %ld cases\n", (unsigned long long)g_seed, g_cases);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_matmul),
        cmocka_unit_test(test_api_bias_relu),
        cmocka_unit_test(test_api_chain),
        cmocka_unit_test(test_api_mixed),
        cmocka_unit_test(test_api_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
