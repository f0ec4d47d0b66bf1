/* Tests of the sampling instructions (sample_perfect_tile, sample_tile,
 * sample_categorical) and their consumers (split_rv, annotate_*_rv):
 * golden trace text with decisions, text round trip and interpreter
 * equivalence of sampled schedules, determinism per seed, coverage and
 * frequencies over many draws, decision overrides through
 * tir_sched_replay_with_decisions, and one negative test per
 * precondition, each checking that nothing changed (random state
 * included). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <math.h>

#include "sched_check.h"
#include "sched_testfuncs.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static int64_t value(tir_schedule *s, tir_value_rv v) {
    int64_t x = -12345;
    SCHED_OK(s, tir_sched_value(s, v, &x));
    return x;
}

/* A replay that must fail with `want`, its message containing `what`,
 * leaving s exactly as it was (replay errors name a line or the override,
 * not a primitive, so SCHED_EXPECT_FAIL does not apply). */
#define REPLAY_FAIL(s, want, what, call)                                                  \
    do {                                                                                  \
        sched_snap sn_;                                                                   \
        char why_[8192];                                                                  \
        sched_snap_take((s), &sn_);                                                       \
        tir_status got_ = (call);                                                         \
        const char *msg_ = tir_ctx_error(tir_sched_ctx(s));                               \
        if (got_ != (want) || !strstr(msg_, (what)))                                      \
            fail_msg("%s: returned %s, expected %s with \"%s\" in:\n%s", #call,          \
                     tir_status_name(got_), tir_status_name(want), (what), msg_);         \
        if (!sched_snap_same((s), &sn_, why_, sizeof why_)) fail_msg("%s: %s", #call, why_); \
    } while (0)

/* Tiles i and j of a matmul with sampled factors, picks an unroll depth
 * and annotates the k loop with it. */
static void tile_matmul(tir_schedule *s) {
    tir_loop_rv l[16], oi[3], oj[2];
    tir_value_rv fi[3], fj[2], u;
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_sample_perfect_tile(s, l[0], 3, 4, 0, NULL, fi));
    SCHED_OK(s, tir_sched_split_rv(s, l[0], 3, fi, oi));
    SCHED_OK(s, tir_sched_sample_tile(s, l[1], 2, 8, 25, 0, NULL, fj));
    SCHED_OK(s, tir_sched_split_rv(s, l[1], 2, fj, oj));
    SCHED_OK(s, tir_sched_sample_categorical(s, 3, (const int64_t[]){0, 16, 64},
                                             (const double[]){0.5, 0.25, 0.25}, 0, NULL, &u));
    SCHED_OK(s, tir_sched_annotate_loop_rv(s, l[2], "pragma_auto_unroll_max_step", u));
}

/* The golden was printed by this build with seed 42 (splitmix64, so the
 * same everywhere) and checked by hand: 24 = 6 * 2 * 2 (innermost <= 4),
 * 13 covered by [4, 4] (16, waste 3 of 13 <= 25%), index 2 is 64. */
static const char golden_trace[] =
    "b0 = get_block(\"C\")\n"
    "[l1, l2, l3] = get_loops(b0)\n"
    "[v4, v5, v6] = sample_perfect_tile(l1, 3, 4, decision=[6, 2, 2])\n"
    "[l7, l8, l9] = split_rv(l1, [v4, v5, v6])\n"
    "[v10, v11] = sample_tile(l2, 2, 8, 25, decision=[4, 4])\n"
    "[l12, l13] = split_rv(l2, [v10, v11])\n"
    "v14 = sample_categorical([0, 16, 64], [0.5, 0.25, 0.25], decision=[2])\n"
    "annotate_loop_rv(l3, \"pragma_auto_unroll_max_step\", v14)\n";

static void test_golden_and_roundtrip(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 24, 13, 5, TIR_F32));
    tir_sched_seed(s, 42);
    tile_matmul(s);
    assert_string_equal(tir_sched_trace_text(s), golden_trace);
    sched_check_all(s); /* verify, text round trip, interpreter equivalence */
    tir_sched_destroy(s);
}

/* The printed C trace forces the decisions: it is checked by
 * test_sched_trace_c through the "sampled" recipe; here, that it names
 * the decided calls. */
static void test_c_trace_has_decisions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 24, 13, 5, TIR_F32));
    tile_matmul(s);
    const char *c = tir_sched_trace_c(s, "f");
    assert_non_null(strstr(c, "tir_value_rv v4, v5, v6, v10, v11, v14;"));
    assert_non_null(strstr(c, "tir_sched_sample_categorical(sch, 3, (const int64_t[]){0, 16, 64}, "
                              "(const double[]){0.5, 0.25, 0.25}, 1, (const int64_t[]){"));
    assert_non_null(strstr(c, "tir_sched_split_rv(sch, l1, 3, (const tir_value_rv[]){v4, v5, v6}"));
    tir_sched_destroy(s);
}

/* Same seed, same decisions; the decisions API lists them in order. */
static void test_determinism(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = tir_def_matmul(ctx, 24, 13, 5, TIR_F32);
    tir_schedule *a = sched_new(ctx, f), *b = sched_new(ctx, f), *c = sched_new(ctx, f);
    tir_sched_seed(a, 7);
    tir_sched_seed(b, 7);
    tile_matmul(a);
    tile_matmul(b);
    assert_string_equal(tir_sched_trace_text(a), tir_sched_trace_text(b));
    assert_int_equal(tir_sched_rand_state(a), tir_sched_rand_state(b));
    const tir_decision *d;
    int n;
    SCHED_OK(a, tir_sched_decisions(a, &d, &n));
    assert_int_equal(n, 3);
    assert_int_equal(d[0].inst, 2);
    assert_string_equal(d[0].kind, "sample_perfect_tile");
    assert_int_equal(d[0].n, 3);
    assert_int_equal(d[0].values[0] * d[0].values[1] * d[0].values[2], 24);
    assert_int_equal(d[1].inst, 4);
    assert_string_equal(d[1].kind, "sample_tile");
    assert_int_equal(d[2].inst, 6);
    assert_string_equal(d[2].kind, "sample_categorical");
    assert_int_equal(d[2].n, 1);
    /* Replaying the text repeats the decisions and draws nothing. */
    uint64_t before = tir_sched_rand_state(c);
    const char *text = tir_sched_trace_text(a);
    SCHED_OK(c, tir_sched_replay(c, text, strlen(text)));
    assert_string_equal(tir_sched_trace_text(c), text);
    assert_int_equal(tir_sched_rand_state(c), before);
    tir_sched_destroy(a);
    tir_sched_destroy(b);
    tir_sched_destroy(c);
}

/* Over many seeds: every candidate drawn, at frequencies within 6
 * standard deviations of the probabilities. */
static void test_categorical_distribution(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 4, 4, 4, TIR_F32));
    const double probs[4] = {0.5, 0.3, 0.2, 0};
    const int64_t cands[4] = {10, 20, 30, 40};
    int counts[4] = {0};
    const int draws = 4000;
    for (int i = 0; i < draws; i++) {
        tir_value_rv v;
        tir_sched_seed(s, (uint64_t)i * 1000003u);
        SCHED_OK(s, tir_sched_sample_categorical(s, 4, cands, probs, 0, NULL, &v));
        counts[value(s, v) / 10 - 1]++;
    }
    for (int k = 0; k < 4; k++) {
        double want = probs[k] * draws, sd = sqrt(draws * probs[k] * (1 - probs[k]));
        if (fabs(counts[k] - want) > 6 * sd + 0.5)
            fail_msg("candidate %d drawn %d times of %d, expected %.0f", k, counts[k], draws,
                     want);
    }
    tir_sched_destroy(s);
}

/* Perfect tiles of 12 into 3 (innermost <= 4): always a tiling of 12, and
 * every one of the 15 such tilings appears. */
static void test_perfect_tile_coverage(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 12, 4, 4, TIR_F32));
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    bool seen[13][13] = {{false}};
    int distinct = 0;
    tir_sched_seed(s, 1);
    for (int i = 0; i < 2000; i++) {
        tir_value_rv v[3];
        SCHED_OK(s, tir_sched_sample_perfect_tile(s, l[0], 3, 4, 0, NULL, v));
        int64_t a = value(s, v[0]), b = value(s, v[1]), c = value(s, v[2]);
        assert_int_equal(a * b * c, 12);
        assert_true(c <= 4);
        if (!seen[a][b]) distinct++;
        seen[a][b] = true;
    }
    /* (a, b, c) with c in {1, 2, 3, 4} dividing 12: 6 + 4 + 3 + 2 */
    assert_int_equal(distinct, 15);
    tir_sched_destroy(s);
}

/* Covering tiles of 4095 into 3 (innermost <= 8, waste <= 5%): the inner
 * factors are powers of two, the outer covers the extent within the
 * bound, and all four innermost values appear, 128 among the inner
 * products. */
static void test_sample_tile_ragged(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_elementwise_chain(ctx, 4095, 2, TIR_F32));
    tir_loop_rv l[16];
    sched_loops(s, "B", l);
    assert_int_equal(sched_extent(s, l[0]), 4095);
    bool inner_seen[9] = {false}, p128 = false;
    tir_sched_seed(s, 3);
    for (int i = 0; i < 2000; i++) {
        tir_value_rv v[3];
        SCHED_OK(s, tir_sched_sample_tile(s, l[0], 3, 8, 5, 0, NULL, v));
        int64_t a = value(s, v[0]), b = value(s, v[1]), c = value(s, v[2]);
        assert_true((b & (b - 1)) == 0 && (c & (c - 1)) == 0 && c <= 8);
        assert_int_equal(a, (4095 + b * c - 1) / (b * c));
        assert_true((a * b * c - 4095) * 100 <= 5 * 4095);
        inner_seen[c] = true;
        p128 |= b * c == 128;
    }
    assert_true(inner_seen[1] && inner_seen[2] && inner_seen[4] && inner_seen[8]);
    assert_true(p128);
    tir_sched_destroy(s);
}

/* A ragged matmul scheduled with sampled covering tiles on every loop
 * computes what the unscheduled one does, for several seeds. */
static void test_sampled_equivalence(void **st) {
    tir_ctx *ctx = *st;
    for (uint64_t seed = 0; seed < 6; seed++) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 13, 10, 7, TIR_F32));
        tir_sched_seed(s, seed);
        tir_loop_rv l[16], o[3];
        int n = sched_loops(s, "C", l);
        for (int i = 0; i < n; i++) {
            tir_value_rv v[3];
            SCHED_OK(s, tir_sched_sample_tile(s, l[i], 3, 4, 100, 0, NULL, v));
            SCHED_OK(s, tir_sched_split_rv(s, l[i], 3, v, o));
        }
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

/* Overrides: a replaced decision changes the split; n = 0 draws anew
 * from the schedule's state; invalid overrides fail naming the
 * instruction and change nothing. */
static void test_override(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = tir_def_matmul(ctx, 24, 13, 5, TIR_F32);
    tir_schedule *a = sched_new(ctx, f);
    tile_matmul(a);
    const char *text = tir_sched_trace_text(a);
    size_t len = strlen(text);

    tir_schedule *b = sched_new(ctx, f);
    tir_decision ov[2] = {{2, NULL, 3, (const int64_t[]){6, 1, 4}},
                          {6, NULL, 1, (const int64_t[]){2}}};
    SCHED_OK(b, tir_sched_replay_with_decisions(b, text, len, 2, ov));
    const tir_decision *d;
    int n;
    SCHED_OK(b, tir_sched_decisions(b, &d, &n));
    assert_int_equal(d[0].values[0], 6);
    assert_int_equal(d[0].values[2], 4);
    assert_int_equal(d[2].values[0], 2);
    tir_loop_rv l[16];
    assert_int_equal(sched_loops(b, "C", l), 6);
    assert_int_equal(sched_extent(b, l[0]), 6);
    assert_int_equal(sched_extent(b, l[1]), 1);
    assert_int_equal(sched_extent(b, l[2]), 4);
    assert_non_null(strstr(tir_sched_trace_text(b), "decision=[6, 1, 4]"));
    assert_non_null(
        strstr(tir_print(ctx, tir_sched_func(b)), "\"pragma_auto_unroll_max_step\": 64"));
    sched_check_all(b);

    /* Re-sampling the tile (n = 0) with b's state: the same draw as a
       fresh sample from that state. */
    tir_schedule *c = sched_new(ctx, f), *e = sched_new(ctx, f);
    tir_sched_seed(c, 99);
    tir_sched_seed(e, 99);
    tir_decision again = {4, NULL, 0, NULL};
    SCHED_OK(c, tir_sched_replay_with_decisions(c, text, len, 1, &again));
    tir_loop_rv le[16];
    tir_value_rv v[2];
    sched_loops(e, "C", le);
    SCHED_OK(e, tir_sched_sample_tile(e, le[1], 2, 8, 25, 0, NULL, v));
    SCHED_OK(c, tir_sched_decisions(c, &d, &n));
    assert_int_equal(d[1].values[0], value(e, v[0]));
    assert_int_equal(d[1].values[1], value(e, v[1]));
    assert_true(tir_sched_rand_state(c) != 99);

    /* Invalid overrides: nothing changes. */
    tir_schedule *x = sched_new(ctx, f);
    tir_decision bad_prod = {2, NULL, 3, (const int64_t[]){5, 1, 4}};
    REPLAY_FAIL(x, TIR_ERR_SCHED_BAD_DECISION, "trace line 3",
                      tir_sched_replay_with_decisions(x, text, len, 1, &bad_prod));
    assert_non_null(strstr(tir_ctx_error(ctx), "sample_perfect_tile: decision [5, 1, 4]"));
    tir_decision bad_index = {6, NULL, 1, (const int64_t[]){3}};
    REPLAY_FAIL(x, TIR_ERR_SCHED_BAD_DECISION, "trace line 7",
                      tir_sched_replay_with_decisions(x, text, len, 1, &bad_index));
    tir_decision not_sample = {3, NULL, 1, (const int64_t[]){3}};
    REPLAY_FAIL(x, TIR_ERR_SCHED_TRACE, "replay_with_decisions",
                      tir_sched_replay_with_decisions(x, text, len, 1, &not_sample));
    assert_non_null(strstr(tir_ctx_error(ctx), "split_rv) takes no decision"));
    tir_decision out_of_range = {8, NULL, 1, (const int64_t[]){0}};
    REPLAY_FAIL(x, TIR_ERR_SCHED_TRACE, "replay_with_decisions",
                      tir_sched_replay_with_decisions(x, text, len, 1, &out_of_range));
    tir_decision twice[2] = {{6, NULL, 1, (const int64_t[]){0}}, {6, NULL, 0, NULL}};
    REPLAY_FAIL(x, TIR_ERR_SCHED_TRACE, "replay_with_decisions",
                      tir_sched_replay_with_decisions(x, text, len, 2, twice));
    /* A negative count with values was reported as "values are NULL". */
    tir_decision negative = {6, NULL, -1, (const int64_t[]){0}};
    REPLAY_FAIL(x, TIR_ERR_INVALID_ARG, "override 0 has -1 values",
                tir_sched_replay_with_decisions(x, text, len, 1, &negative));
    tir_decision null_values = {6, NULL, 1, NULL};
    REPLAY_FAIL(x, TIR_ERR_INVALID_ARG, "override 0 has 1 values at NULL",
                tir_sched_replay_with_decisions(x, text, len, 1, &null_values));
    assert_int_equal(tir_sched_trace_len(x), 0);
    tir_sched_destroy(a);
    tir_sched_destroy(b);
    tir_sched_destroy(c);
    tir_sched_destroy(e);
    tir_sched_destroy(x);
}

/* Text parsing of the new forms: a line without a decision samples, a
 * probability count mismatch is a parse error, and decisions outside
 * the rules name the line. */
static void test_text_forms(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 24, 13, 5, TIR_F32));
    const char *no_dec = "b0 = get_block(\"C\")\n[l1, l2, l3] = get_loops(b0)\n"
                         "[v4, v5] = sample_perfect_tile(l1, 2, 24)\n"
                         "v6 = sample_categorical([1, 2], [1e-3, 2.5E-1])\n";
    SCHED_OK(s, tir_sched_replay(s, no_dec, strlen(no_dec)));
    assert_non_null(strstr(tir_sched_trace_text(s), "[0.001, 0.25], decision=["));
    sched_check_roundtrip(s);
    const char *mismatch = "v0 = sample_categorical([1, 2], [0.5])\n";
    REPLAY_FAIL(s, TIR_ERR_PARSE, "1:38",
                      tir_sched_replay(s, mismatch, strlen(mismatch)));
    const char *bad = "b0 = get_block(\"C\")\n[l1, l2, l3] = get_loops(b0)\n"
                      "[v4, v5] = sample_tile(l2, 2, 8, 0, decision=[2, 8])\n";
    REPLAY_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "trace line 3",
                      tir_sched_replay(s, bad, strlen(bad)));
    tir_sched_destroy(s);
}

/* ------------------------------------------------- negative tests */

static void test_perfect_tile_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *t = sched_new(ctx, tf_triangular(ctx));
    tir_loop_rv tl[16];
    tir_value_rv v[17];
    sched_loops(t, "B", tl);
    /* 1. constant extent */
    SCHED_EXPECT_FAIL(t, TIR_ERR_SCHED_NON_CONST_EXTENT, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(t, tl[1], 2, 4, 0, NULL, v));
    SCHED_EXPECT_FAIL(t, TIR_ERR_SCHED_NON_CONST_EXTENT, "sample_tile",
                      tir_sched_sample_tile(t, tl[1], 2, 4, 10, 0, NULL, v));
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 24, 13, 5, TIR_F32));
    tir_loop_rv l[16];
    sched_loops(s, "C", l);
    /* 2. factor count */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_COUNT, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 0, 4, 0, NULL, v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_COUNT, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 17, 4, 0, NULL, v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_COUNT, "sample_tile",
                      tir_sched_sample_tile(s, l[1], -1, 4, 10, 0, NULL, v));
    /* 3. parameters */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_SAMPLE, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 2, 0, 0, NULL, v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_SAMPLE, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 1, 23, 0, NULL, v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_SAMPLE, "sample_tile",
                      tir_sched_sample_tile(s, l[1], 2, 4, -1, 0, NULL, v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_SAMPLE, "sample_tile",
                      tir_sched_sample_tile(s, l[1], 2, -3, 0, 0, NULL, v));
    /* 4. decisions */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 2, 4, 3,
                                                    (const int64_t[]){2, 3, 4}, v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 2, 4, 2, (const int64_t[]){4, 5},
                                                    v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 2, 4, 2, (const int64_t[]){3, 8},
                                                    v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 2, 4, 2,
                                                    (const int64_t[]){-4, -6}, v));
    /* sample_tile: n factors, each positive */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_tile",
                      tir_sched_sample_tile(s, l[1], 2, 8, 100, 3, (const int64_t[]){1, 2, 8},
                                            v));
    assert_non_null(strstr(tir_ctx_error(ctx), "it has 3 factors, not 2"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_tile",
                      tir_sched_sample_tile(s, l[1], 2, 8, 100, 2, (const int64_t[]){13, 0}, v));
    assert_non_null(strstr(tir_ctx_error(ctx), "factor 1 is not in [1, 2^31)"));
    /* sample_tile: outer not ceildiv, innermost too large, waste */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_tile",
                      tir_sched_sample_tile(s, l[1], 2, 8, 100, 2, (const int64_t[]){3, 8}, v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_tile",
                      tir_sched_sample_tile(s, l[1], 2, 4, 100, 2, (const int64_t[]){2, 8}, v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_tile",
                      tir_sched_sample_tile(s, l[1], 2, 8, 10, 2, (const int64_t[]){2, 8}, v));
    /* ... while a valid decision need not be a power of two */
    SCHED_OK(s, tir_sched_sample_tile(s, l[1], 2, 8, 20, 2, (const int64_t[]){3, 5}, v));
    assert_int_equal(value(s, v[1]), 5);
    /* pointers and handles */
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 2, 4, 0, NULL, NULL));
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, l[0], 2, 4, 2, NULL, v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INVALID_HANDLE, "sample_perfect_tile",
                      tir_sched_sample_perfect_tile(s, (tir_loop_rv){0}, 2, 4, 0, NULL, v));
    tir_sched_destroy(s);
    tir_sched_destroy(t);
}

static void test_categorical_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 4, 4, 4, TIR_F32));
    tir_value_rv v;
    const int64_t c[2] = {1, 2};
    /* 1. candidates */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_SAMPLE, "sample_categorical",
                      tir_sched_sample_categorical(s, 0, NULL, NULL, 0, NULL, &v));
    /* 2. probabilities */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_SAMPLE, "sample_categorical",
                      tir_sched_sample_categorical(s, 2, c, (const double[]){0.5, -0.1}, 0, NULL,
                                                   &v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_SAMPLE, "sample_categorical",
                      tir_sched_sample_categorical(s, 2, c, (const double[]){NAN, 1}, 0, NULL,
                                                   &v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_SAMPLE, "sample_categorical",
                      tir_sched_sample_categorical(s, 2, c, (const double[]){0, 0}, 0, NULL, &v));
    /* 3. decision */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_categorical",
                      tir_sched_sample_categorical(s, 2, c, (const double[]){1, 1}, 1,
                                                   (const int64_t[]){2}, &v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_DECISION, "sample_categorical",
                      tir_sched_sample_categorical(s, 2, c, (const double[]){1, 1}, 2,
                                                   (const int64_t[]){0, 1}, &v));
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "sample_categorical",
                      tir_sched_sample_categorical(s, 2, c, NULL, 0, NULL, &v));
    /* A zero-probability candidate is never drawn but may be decided. */
    SCHED_OK(s, tir_sched_sample_categorical(s, 2, c, (const double[]){0, 1}, 1,
                                             (const int64_t[]){0}, &v));
    assert_int_equal(value(s, v), 1);
    for (int i = 0; i < 50; i++) {
        SCHED_OK(s, tir_sched_sample_categorical(s, 2, c, (const double[]){0, 1}, 0, NULL, &v));
        assert_int_equal(value(s, v), 2);
    }
    tir_sched_destroy(s);
}

/* split_rv and annotate_*_rv: value handles only, of this schedule; the
 * split's own preconditions apply to the values. */
static void test_consumers(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 24, 13, 5, TIR_F32));
    tir_loop_rv l[16], o[3];
    tir_value_rv v[2], one;
    sched_loops(s, "C", l);
    SCHED_OK(s, tir_sched_sample_perfect_tile(s, l[0], 2, 4, 0, NULL, v));
    tir_value_rv loop_as_value = {l[1].id, l[1].sched}, foreign = {v[1].id, v[1].sched + 1};
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INVALID_HANDLE, "split_rv",
                      tir_sched_split_rv(s, l[0], 2, (const tir_value_rv[]){v[0], loop_as_value},
                                         o));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INVALID_HANDLE, "split_rv",
                      tir_sched_split_rv(s, l[0], 2, (const tir_value_rv[]){v[0], foreign}, o));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_COUNT, "split_rv",
                      tir_sched_split_rv(s, l[0], 1, v, o));
    SCHED_EXPECT_FAIL(s, TIR_ERR_INVALID_ARG, "split_rv", tir_sched_split_rv(s, l[0], 2, NULL, o));
    /* the value of a tile of j does not cover i */
    SCHED_OK(s, tir_sched_sample_categorical(s, 1, (const int64_t[]){2}, (const double[]){1}, 0,
                                             NULL, &one));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_MISMATCH, "split_rv",
                      tir_sched_split_rv(s, l[0], 2, (const tir_value_rv[]){one, one}, o));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ANNOTATION, "annotate_loop_rv",
                      tir_sched_annotate_loop_rv(s, l[0], "1x", one));
    tir_block_rv c = sched_block(s, "C");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INVALID_HANDLE, "annotate_block_rv",
                      tir_sched_annotate_block_rv(s, c, "k", (tir_value_rv){0}));
    SCHED_OK(s, tir_sched_annotate_block_rv(s, c, "k", one));
    int64_t x;
    assert_int_equal(tir_sched_value(s, (tir_value_rv){l[0].id, l[0].sched}, &x),
                     TIR_ERR_SCHED_INVALID_HANDLE);
    sched_check_all(s);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_golden_and_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_c_trace_has_decisions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_determinism, setup, teardown),
        cmocka_unit_test_setup_teardown(test_categorical_distribution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_perfect_tile_coverage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sample_tile_ragged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sampled_equivalence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_perfect_tile_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_categorical_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consumers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
