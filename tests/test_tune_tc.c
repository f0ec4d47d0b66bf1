/* test_tune_tc.c: the tensor-core side of the tuner (src/tune/space_tc.c,
 * tiling_tc.c, and tir_tune on a tensor-core task).  The space of a
 * tensor-core task holds only configurations tir_tune_tc_config_valid
 * accepts, each precondition of which refuses its own counter-example;
 * sampled points of a few shapes schedule with the tensor-core rule and
 * lower, two of them run in the SIMT simulator against the interpreter;
 * decisions print and parse back and are sampling instructions that the
 * trace records and replays; task keys tell f32, tf32, f16 and bf16
 * apart.  Against the fake CUDA driver (FAKE_CUDA_MATMUL computing the
 * candidates' 16-bit matmul) tir_tune measures a bf16 task with GemmEx as
 * cuBLAS, verifies against the float64 reference, records every candidate
 * under the task's key, and the best applies again by that key only.
 * Run under fake_env. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/lower.h"
#include "minitir/sim.h"
#include "minitir/tune.h"
#include "tc_sim_check.h"

#define OK(ctx, call)                                                                     \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) fail_msg("%s: %s", #call, tir_ctx_error(ctx));                 \
    } while (0)

static const tir_target_limits *sm90(void) { return &tir_target_find("sm_90")->limits; }

static tir_tune_task tc_task(tir_rt_gemm_kind kind, int64_t M, int64_t N, int64_t K) {
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, M, N, K, kind};
    return t;
}

static bool same(const tir_tc_config *a, const tir_tc_config *b) {
    return a->bm == b->bm && a->bn == b->bn && a->bk == b->bk && a->warps_m == b->warps_m &&
           a->warps_n == b->warps_n && a->stages == b->stages &&
           a->async_copy == b->async_copy && a->pad == b->pad &&
           (a->splitk > 1 ? a->splitk : 1) == (b->splitk > 1 ? b->splitk : 1);
}

/* Schedules point c of task t with the sampled rule and lowers it. */
static tir_schedule *schedule_point(tir_ctx *ctx, const tir_tune_task *t,
                                    const tir_tc_config *c, tir_kernel_set *kernels) {
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, t), &s));
    char dec[128];
    tir_tc_config_text(c, dec, sizeof dec);
    if (tir_tune_tc_tiling_sampled(s, "C", c, NULL) != TIR_OK)
        fail_msg("rule refused space point %s: %s", dec, tir_ctx_error(ctx));
    if (tir_lower_kernels(ctx, tir_sched_func(s), NULL, kernels) != TIR_OK)
        fail_msg("space point %s does not lower: %s", dec, tir_ctx_error(ctx));
    return s;
}

/* Every point valid, the default in the space where it fits, and sampled
 * points of each shape schedule and lower. */
static void test_space(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    static const struct {
        tir_rt_gemm_kind kind;
        int64_t m, n, k;
        bool has_default;
    } cases[] = {{TIR_RT_GEMM_BF16, 4096, 4096, 4096, true},
                 {TIR_RT_GEMM_F16, 1000, 520, 336, true},
                 {TIR_RT_GEMM_TF32, 1000, 520, 336, true},
                 {TIR_RT_GEMM_BF16, 64, 48, 64, true},
                 {TIR_RT_GEMM_TF32, 40, 72, 24, true}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tir_tune_task t = tc_task(cases[k].kind, cases[k].m, cases[k].n, cases[k].k);
        tir_tune_space sp;
        OK(ctx, tir_tune_space_make(ctx, &t, sm90(), &sp));
        assert_null(sp.configs);
        assert_true(sp.n > 10);
        for (int i = 0; i < sp.n; i++) {
            assert_true(tir_tune_tc_config_valid(&t, sm90(), &sp.tc_configs[i]));
            assert_int_equal(t.K % sp.tc_configs[i].bk, 0);
        }
        tir_tc_config d = tir_tune_tc_default(&t, 132);
        int found = 0;
        for (int i = 0; i < sp.n; i++) found += same(&sp.tc_configs[i], &d);
        assert_int_equal(found, cases[k].has_default ? 1 : 0);
        /* sampled points schedule and lower (4 per shape, spread over the list) */
        for (int r = 0; r < 4; r++) {
            tir_kernel_set kernels;
            tir_schedule *s = schedule_point(ctx, &t, &sp.tc_configs[(r * 7919 + (int)k * 31) % sp.n],
                                             &kernels);
            tir_sched_destroy(s);
        }
        printf("# %s %lldx%lldx%lld: %d points\n", tir_rt_gemm_kind_name(t.kind),
               (long long)t.M, (long long)t.N, (long long)t.K, sp.n);
        tir_tune_space_free(&sp);
    }
    /* K not a multiple of the mma's k: nothing fits, and says why */
    tir_tune_task bad = tc_task(TIR_RT_GEMM_BF16, 64, 64, 40);
    tir_tune_space sp;
    assert_int_equal(tir_tune_space_make(ctx, &bad, sm90(), &sp), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "K must be a multiple of 16"));
    /* M under 9: no tile of the space fits, and the message says so (not K) */
    bad = tc_task(TIR_RT_GEMM_BF16, 8, 64, 64);
    assert_int_equal(tir_tune_space_make(ctx, &bad, sm90(), &sp), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "M and N must be at least 9"));
    assert_null(strstr(tir_ctx_error(ctx), "K must be"));
    bad = tc_task(TIR_RT_GEMM_TF32, 64, 9, 64); /* N = 9: 32-column tiles fit */
    OK(ctx, tir_tune_space_make(ctx, &bad, sm90(), &sp));
    tir_tune_space_free(&sp);
    /* tensor cores take matmul only; f32_pedantic is no task */
    bad = tc_task(TIR_RT_GEMM_F16, 64, 64, 64);
    bad.op = TIR_TUNE_BATCH_MATMUL, bad.batch = 2;
    assert_null(tir_tune_task_func(ctx, &bad));
    assert_non_null(strstr(tir_ctx_error(ctx), "matmul only"));
    assert_int_equal(tir_tune_space_make(ctx, &bad, sm90(), &sp), TIR_ERR_INVALID_ARG);
    bad = tc_task(TIR_RT_GEMM_F32_PEDANTIC, 64, 64, 64);
    assert_null(tir_tune_task_func(ctx, &bad));
    tir_ctx_destroy(ctx);
}

/* Each precondition of tir_tune_tc_config_valid refuses its own case: a
 * configuration the space accepts, and the same with one change that
 * breaks only that precondition. */
static void check_pair(const tir_tune_task *t, tir_tc_config ok, tir_tc_config bad,
                       const char *what) {
    if (!tir_tune_tc_config_valid(t, sm90(), &ok)) fail_msg("%s: the control is refused", what);
    if (tir_tune_tc_config_valid(t, sm90(), &bad)) fail_msg("%s: accepted", what);
}

static tir_tc_config cfg(int bm, int bn, int bk, int wm, int wn, int stages, int pad) {
    tir_tc_config c = {.bm = bm, .bn = bn, .bk = bk, .warps_m = wm, .warps_n = wn,
                       .stages = stages, .async_copy = true, .pad = pad, .splitk = 0};
    return c;
}

static void test_valid(void **st) {
    (void)st;
    tir_tune_task t = tc_task(TIR_RT_GEMM_BF16, 1024, 1024, 1024);
    tir_tune_task tf = tc_task(TIR_RT_GEMM_TF32, 1024, 1024, 1024);
    tir_tc_config d = tir_tc_config_default();
    check_pair(&t, cfg(128, 128, 64, 4, 4, 2, 8), cfg(256, 256, 64, 8, 8, 2, 8), "64 warps");
    check_pair(&t, cfg(256, 128, 64, 4, 4, 2, 8), cfg(256, 128, 64, 4, 8, 2, 8),
               "96 registers x 1024 threads");
    check_pair(&t, cfg(64, 64, 32, 2, 1, 2, 8), cfg(80, 64, 32, 2, 1, 2, 8), "40-row warp tiles");
    check_pair(&t, cfg(128, 64, 32, 1, 4, 2, 8), cfg(128, 32, 32, 1, 4, 2, 8),
               "one 8-column tile per warp");
    check_pair(&t, cfg(128, 64, 16, 2, 1, 2, 8), cfg(128, 64, 8, 2, 1, 2, 8), "bf16 bk 8");
    check_pair(&t, d, cfg(128, 128, 48, 2, 4, 2, 8), "bk 48 not dividing K");
    check_pair(&t, d, cfg(128, 128, 32, 2, 4, 1, 8), "1 stage");
    check_pair(&t, d, cfg(128, 128, 32, 2, 4, 5, 8), "5 stages");
    check_pair(&t, d, cfg(128, 128, 32, 2, 4, 2, 4), "8-byte pad");
    check_pair(&tf, cfg(128, 128, 64, 2, 4, 3, 8), cfg(128, 128, 64, 2, 4, 4, 8),
               "280 KB of shared");
    check_pair(&t, cfg(128, 128, 32, 2, 2, 2, 8), cfg(128, 128, 32, 1, 1, 2, 8),
               "512 accumulators");
    check_pair(&t, cfg(64, 128, 32, 2, 4, 2, 8), cfg(64, 128, 16, 2, 4, 2, 8),
               "copies of half a round");
    /* TF32: k tiles of 8 and 4-element pads are fine; a float32 task is no tc task */
    check_pair(&tf, cfg(128, 128, 8, 2, 4, 2, 4), cfg(128, 128, 4, 2, 4, 2, 4), "tf32 bk 4");
    tir_tune_task f32 = tc_task(TIR_RT_GEMM_F32, 1024, 1024, 1024);
    assert_false(tir_tune_tc_config_valid(&f32, sm90(), &d));
    /* the rule takes a warp tile of one 16-row tile (the space leaves it
       out), and refuses warps of part of a tile, naming it */
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, &t), &s));
    tir_tc_config one = cfg(32, 64, 32, 2, 2, 2, 8);
    OK(ctx, tir_tune_tc_tiling(s, "C", &one, NULL, NULL));
    tir_sched_destroy(s);
    OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, &t), &s));
    tir_tc_config part = cfg(48, 64, 32, 2, 2, 2, 8);
    assert_int_equal(tir_tune_tc_tiling(s, "C", &part, NULL, NULL), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "whole 16x8 tiles"));
    tir_sched_destroy(s);
    /* N = 12, narrower than a B pair: the rule loads B one 16x8 tile at a
     * time (with pairs tensorize refused the schedule: "domain [0, 0 + 12),
     * the intrinsic's is [0, 16)") */
    tir_tune_task n12 = tc_task(TIR_RT_GEMM_BF16, 64, 12, 32);
    OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, &n12), &s));
    tir_tc_config narrow = cfg(64, 16, 16, 2, 1, 1, 8);
    OK(ctx, tir_tune_tc_tiling(s, "C", &narrow, NULL, NULL));
    tir_sched_destroy(s);
    /* Knobs read from a record's decisions text are any int: 16 * 2^28
       warps overflowed to 0 and bm % 0 divided by zero (a crash), and
       2^28 x 16 warps to 0 warps in the space's check. */
    OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, &t), &s));
    tir_tc_config huge = cfg(128, 128, 32, 1 << 28, 4, 2, 8);
    assert_int_equal(tir_tune_tc_tiling(s, "C", &huge, NULL, NULL), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "tiles and warps are 1..4096"));
    assert_ptr_equal(tir_sched_func(s), tir_sched_orig_func(s)); /* refused before any rewrite */
    tir_sched_destroy(s);
    huge.warps_n = 16;
    assert_false(tir_tune_tc_config_valid(&t, sm90(), &huge));
    assert_int_equal(tir_tc_config_threads(&huge), INT32_MAX); /* saturated */
    tir_ctx_destroy(ctx);
}

static void test_text(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_tc_config c = tir_tc_config_default(), d;
    c.stages = 3, c.async_copy = false, c.bk = 64;
    char buf[128], again[128];
    tir_tc_config_text(&c, buf, sizeof buf);
    assert_string_equal(buf, "tile=128x128x64 warps=2x4 stages=3 async=0 pad=8");
    OK(ctx, tir_tc_config_parse(ctx, buf, &d));
    assert_true(same(&c, &d));
    tir_tc_config_text(&d, again, sizeof again);
    assert_string_equal(again, buf);
    assert_int_equal(tir_tc_config_parse(ctx, "tile=128x128x64 warps=2", &d), TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "(warps)"));
    assert_int_equal(tir_tc_config_parse(ctx, "tile=128x128x64 warps=268435456x16 stages=2 "
                                              "async=1 pad=8", &d),
                     TIR_ERR_PARSE); /* knobs out of range */
    assert_int_equal(tir_tc_config_parse(ctx, "tile=128x128x64 warps=2x4294967298 stages=2 "
                                              "async=1 pad=8", &d),
                     TIR_ERR_PARSE); /* past INT_MAX: sscanf's %d undefined */
    assert_non_null(strstr(tir_ctx_error(ctx), "more than 9 digits"));
    assert_int_equal(tir_tc_config_parse(ctx, "tile=1x2x3 warps=1x1 stages=2 async=1 pad=0 x", &d),
                     TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "text after the pad"));
    /* the float32 rule's text is not a tensor-core configuration */
    tir_tile_config f = tir_tile_config_default();
    tir_tile_config_text(&f, buf, sizeof buf);
    assert_int_equal(tir_tc_config_parse(ctx, buf, &d), TIR_ERR_PARSE);
    tir_ctx_destroy(ctx);
}

/* The knobs are sampling instructions: 9 decisions in the trace, which
 * replays to the same function; a value outside the candidates is
 * refused, naming the knob. */
static void test_sampled(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_tune_task t = tc_task(TIR_RT_GEMM_F16, 100, 72, 64);
    const tir_prim_func *f = tir_tune_task_func(ctx, &t);
    tir_tc_config c = tir_tc_config_default(), used;
    c.bm = c.bn = 64, c.warps_m = c.warps_n = 2, c.stages = 3, c.bk = 64;
    tir_schedule *s = NULL, *r = NULL;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, tir_tune_tc_tiling_sampled(s, "C", &c, &used));
    assert_true(same(&c, &used));
    const tir_decision *dec;
    int nd;
    OK(ctx, tir_sched_decisions(s, &dec, &nd));
    assert_int_equal(nd, 9);
    const char *text = tir_sched_trace_text(s);
    assert_non_null(strstr(text, "sample_categorical([2, 3, 4]"));
    OK(ctx, tir_sched_create(ctx, f, &r));
    OK(ctx, tir_sched_replay(r, text, strlen(text)));
    assert_true(tir_struct_equal(tir_sched_func(r), tir_sched_func(s)));
    tir_sched_destroy(r);
    tir_sched_destroy(s);
    c.bk = 40; /* not a candidate (24 and 48 are) */
    OK(ctx, tir_sched_create(ctx, f, &s));
    assert_int_equal(tir_tune_tc_tiling_sampled(s, "C", &c, NULL), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "knob bk = 40"));
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

/* Two sampled points in the SIMT simulator against the interpreter, on
 * ragged M and N. */
static void sim_config(tir_ctx *ctx, tir_rt_gemm_kind kind, int64_t M, int64_t N, int64_t K,
                       const tir_tc_config *c) {
    tir_tune_task t = tc_task(kind, M, N, K);
    const tir_prim_func *f = tir_tune_task_func(ctx, &t);
    tir_kernel_set ks;
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, tir_tune_tc_tiling(s, "C", c, NULL, NULL));
    OK(ctx, tir_lower_kernels(ctx, tir_sched_func(s), NULL, &ks));
    assert_int_equal(ks.nkernels, c->splitk > 1 ? 2 : 1);
    tir_sim_report rep;
    OK(ctx, tc_sim_check_set(ctx, kind, M, N, K, f, &ks, 3, "simulated tc point", &rep));
    assert_true(rep.warp_ops > 0);
    char dec[128];
    tir_tc_config_text(c, dec, sizeof dec);
    printf("# simulated %s %lldx%lldx%lld with %s\n", tir_rt_gemm_kind_name(kind), (long long)M,
           (long long)N, (long long)K, dec);
    tir_sched_destroy(s);
}

static void sim_point(tir_rt_gemm_kind kind, int64_t M, int64_t N, int64_t K, int pick) {
    tir_ctx *ctx = tir_ctx_create();
    tir_tune_task t = tc_task(kind, M, N, K);
    tir_tune_space sp;
    OK(ctx, tir_tune_space_make(ctx, &t, sm90(), &sp));
    sim_config(ctx, kind, M, N, K, &sp.tc_configs[pick % sp.n]);
    tir_tune_space_free(&sp);
    tir_ctx_destroy(ctx);
}

/* Split-K (tir_tc_config.splitk): the partial sums on blockIdx.z and a
 * second kernel summing them compute the product in the simulator, for
 * each input type, ragged M and N, 2 to 7 slices (7: K = 336 in k tiles
 * of 48); a count that does not deal the k tiles evenly is refused with a
 * message and leaves the schedule as it was; the text form carries it. */
static void test_split_k(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    static const struct {
        tir_rt_gemm_kind kind;
        int64_t m, n, k;
        int bm, bn, bk, wm, wn, stages, splitk;
    } cases[] = {{TIR_RT_GEMM_BF16, 100, 136, 512, 64, 64, 64, 2, 2, 3, 4},
                 {TIR_RT_GEMM_F16, 72, 40, 192, 64, 64, 32, 2, 2, 2, 3},
                 {TIR_RT_GEMM_TF32, 100, 72, 336, 64, 64, 48, 2, 2, 3, 7},
                 {TIR_RT_GEMM_TF32, 64, 128, 256, 64, 128, 32, 2, 2, 3, 2},
                 /* a 1 x 1 C: the write-back's one element on one thread (under a
                  * predicate on 128, reverse_compute_at refused it; the default
                  * splits 1x1x8192 bf16 8 ways) */
                 {TIR_RT_GEMM_BF16, 1, 1, 8192, 64, 64, 64, 2, 2, 3, 8},
                 {TIR_RT_GEMM_TF32, 1, 1, 64, 64, 64, 8, 2, 2, 2, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tir_tc_config c = tir_tc_config_default();
        c.bm = cases[i].bm, c.bn = cases[i].bn, c.bk = cases[i].bk;
        c.warps_m = cases[i].wm, c.warps_n = cases[i].wn, c.stages = cases[i].stages;
        c.splitk = cases[i].splitk;
        tir_tune_task t = tc_task(cases[i].kind, cases[i].m, cases[i].n, cases[i].k);
        assert_true(tir_tune_tc_config_valid(&t, sm90(), &c));
        sim_config(ctx, cases[i].kind, cases[i].m, cases[i].n, cases[i].k, &c);
    }
    tir_tune_task one = tc_task(TIR_RT_GEMM_BF16, 1, 1, 8192);
    tir_tc_config d = tir_tune_tc_default(&one, 132), want = tir_tc_config_default();
    want.bm = want.bn = 64, want.bk = 64, want.warps_m = want.warps_n = 2, want.stages = 3;
    want.splitk = 8;
    assert_true(same(&d, &want));
    /* 512 / 64 = 8 k tiles do not deal into 3 slices */
    tir_tune_task t = tc_task(TIR_RT_GEMM_BF16, 128, 128, 512);
    tir_tc_config c = tir_tc_config_default();
    c.bm = c.bn = 64, c.warps_m = c.warps_n = 2, c.bk = 64, c.splitk = 3;
    assert_false(tir_tune_tc_config_valid(&t, sm90(), &c));
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, &t), &s));
    const tir_prim_func *before = tir_sched_func(s);
    assert_int_equal(tir_tune_tc_tiling(s, "C", &c, NULL, NULL), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "split-K 3 of block C"));
    assert_ptr_equal(tir_sched_func(s), before);
    tir_sched_destroy(s);
    /* the text form: split-K only past 1, and back */
    char text[128];
    c.splitk = 4;
    tir_tc_config_text(&c, text, sizeof text);
    assert_non_null(strstr(text, " splitk=4"));
    tir_tc_config p;
    OK(ctx, tir_tc_config_parse(ctx, text, &p));
    assert_true(same(&p, &c));
    c.splitk = 1;
    tir_tc_config_text(&c, text, sizeof text);
    assert_null(strstr(text, "splitk"));
    OK(ctx, tir_tc_config_parse(ctx, text, &p));
    assert_int_equal(p.splitk, 1);
    assert_int_equal(tir_tc_config_parse(ctx, "tile=64x64x64 warps=2x2 stages=2 async=1 pad=8 "
                                              "splitk=1", &p),
                     TIR_ERR_PARSE);
    assert_int_equal(tir_tc_config_parse(ctx, "tile=64x64x64 warps=2x2 stages=2 async=1 pad=8"
                                              "splitk=2", &p),
                     TIR_ERR_PARSE);
    tir_ctx_destroy(ctx);
}

/* The block grid's x extent after the rule (the launch's blocks per row). */
static int64_t grid_x(tir_ctx *ctx, int64_t m, int64_t n, const tir_tc_config *c) {
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, tir_def_matmul_mixed(ctx, m, n, 64, TIR_BF16, TIR_F32), &s));
    OK(ctx, tir_tune_tc_tiling(s, "C", c, NULL, NULL));
    const char *text = tir_print(ctx, tir_sched_func(s));
    const char *x = strstr(text, "thread=\"blockIdx.x\"");
    assert_non_null(x);
    while (x > text && strncmp(x, "T.thread_binding(0, ", 20)) x--;
    tir_sched_destroy(s);
    return atoll(x + 20);
}

/* Block swizzle: at 8192^3 the rule launches groups of 8 block rows (x
 * covers 8 rows of the 32 column tiles); not with no_swizzle, not on a
 * grid under 1024 blocks (4096^3: 512), not where 8 does not divide the
 * block rows (8064 rows: 63).  The swizzled kernel of 1024 32x32 blocks
 * computes the product in the simulator. */
static void test_swizzle(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_tc_config c = tir_tc_config_default();
    c.bn = 256, c.bk = 64, c.stages = 4;
    assert_int_equal(grid_x(ctx, 8192, 8192, &c), 256);
    assert_int_equal(grid_x(ctx, 4096, 4096, &c), 16);
    assert_int_equal(grid_x(ctx, 8064, 8192, &c), 32);
    c.no_swizzle = true;
    assert_int_equal(grid_x(ctx, 8192, 8192, &c), 32);
    tir_tc_config small = {.bm = 32, .bn = 32, .bk = 16, .warps_m = 1, .warps_n = 1,
                           .stages = 2, .async_copy = true, .pad = 8};
    assert_int_equal(grid_x(ctx, 1024, 1024, &small), 256);
    sim_config(ctx, TIR_RT_GEMM_BF16, 1024, 1024, 16, &small);
    tir_ctx_destroy(ctx);
}

/* A's shared rows are padded to an odd number of 16-byte chunks: TF32 at
 * BK 32 with pad 8 (10 chunks) gets pad 4 (9), unless same_pad; 16-bit
 * rows of whole k steps are odd already; no pad stays none.  The kernel's
 * shared memory (4096^3 TF32, 128x256x32 in 4 stages) is what
 * tir_tc_config_shared_bytes says both ways, and the kernel with pad 4
 * computes the product in the simulator. */
static void test_pad_a(void **st) {
    (void)st;
    tir_tc_config c = cfg(128, 256, 32, 2, 4, 4, 8);
    /* rows of whole 128-byte segments: unpadded, lowering swizzles them */
    assert_int_equal(tir_tc_pad_a(&c, 4), 0);      /* TF32 A, 32 floats */
    assert_int_equal(tir_tc_pad_b(&c, 4), 8);      /* TF32 B keeps its pad */
    assert_int_equal(tir_tc_pad_b(&c, 2), 0);      /* 16-bit B, 512 bytes */
    for (int bk = 16; bk <= 128; bk += 16) {
        c.bk = bk;
        assert_int_equal(tir_tc_pad_a(&c, 2), bk % 64 ? 8 : 0);
    }
    c.bk = 32, c.bn = 96; /* 192-byte B rows: padded */
    assert_int_equal(tir_tc_pad_b(&c, 2), 8);
    c.bn = 256, c.no_smem_swizzle = true; /* as before the swizzle */
    assert_int_equal(tir_tc_pad_b(&c, 2), 8);
    assert_int_equal(tir_tc_pad_a(&c, 4), 4);
    c.pad = 4;
    assert_int_equal(tir_tc_pad_a(&c, 4), 4);
    c.pad = 0;
    assert_int_equal(tir_tc_pad_a(&c, 4), 0);
    assert_int_equal(tir_tc_pad_b(&c, 2), 0);
    c.pad = 8, c.bk = 16; /* 6 chunks -> 5 */
    assert_int_equal(tir_tc_pad_a(&c, 4), 4);
    c.bk = 8; /* a pad not below the row: none */
    assert_int_equal(tir_tc_pad_a(&c, 4), 0);
    for (int bk = 16; bk <= 128; bk += 16) {
        c.bk = bk;
        assert_int_equal(tir_tc_pad_a(&c, 2), 8);
    }
    c.bk = 32, c.same_pad = true;
    assert_int_equal(tir_tc_pad_a(&c, 4), 8);
    tir_ctx *ctx = tir_ctx_create();
    tir_tune_task t = tc_task(TIR_RT_GEMM_TF32, 4096, 4096, 4096);
    for (int v = 0; v < 3; v++) { /* swizzled; padded (odd); padded (same_pad) */
        c = tir_tune_tc_default(&t, 132);
        c.no_smem_swizzle = v > 0, c.same_pad = v == 2;
        tir_schedule *s = NULL;
        const tir_prim_func *kernel;
        const tir_module *m;
        OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, &t), &s));
        OK(ctx, tir_tune_tc_tiling(s, "C", &c, NULL, NULL));
        OK(ctx, tir_lower(ctx, tir_sched_func(s), NULL, &kernel));
        OK(ctx, tir_codegen(ctx, kernel, NULL, &m));
        assert_int_equal(m->dyn_shared_bytes + m->shared_bytes, tir_tc_config_shared_bytes(&c, 4));
        assert_int_equal(m->dyn_shared_bytes,
                         4 * (128 * (32 + (v == 0 ? 0 : v == 2 ? 8 : 4)) + 32 * 264) * 4);
        tir_sched_destroy(s);
    }
    tir_ctx_destroy(ctx);
    c = cfg(64, 64, 32, 2, 2, 2, 8);
    tir_ctx *sctx = tir_ctx_create();
    sim_config(sctx, TIR_RT_GEMM_TF32, 64, 64, 64, &c);
    tir_ctx_destroy(sctx);
}

/* The swizzle is schedule primitives, so it is in the trace: at 8192^3
 * (the default rule's 128x256 tiles, 64 x 32 blocks) the text of the
 * rule's schedule and of the sampled rule's (a tuning record) replays to
 * the same function and trace, with the block rows split by 8 and the
 * inferred factor written TIR_SPLIT_INFER in the C trace.  Review of the
 * swizzle commit. */
static void test_swizzle_trace(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_tune_task t = tc_task(TIR_RT_GEMM_BF16, 8192, 8192, 8192);
    const tir_prim_func *f = tir_tune_task_func(ctx, &t);
    tir_tc_config c = tir_tune_tc_default(&t, 132);
    for (int sampled = 0; sampled < 2; sampled++) {
        tir_schedule *s = NULL, *r = NULL;
        OK(ctx, tir_sched_create(ctx, f, &s));
        if (sampled) OK(ctx, tir_tune_tc_tiling_sampled(s, "C", &c, NULL));
        else OK(ctx, tir_tune_tc_tiling(s, "C", &c, NULL, NULL));
        const char *text = tir_sched_trace_text(s);
        assert_non_null(strstr(text, ", [None, 8])\nreorder("));
        assert_non_null(strstr(tir_sched_trace_c(s, "swizzled"), "{TIR_SPLIT_INFER, 8}"));
        assert_non_null(strstr(tir_print(ctx, tir_sched_func(s)),
                               "T.thread_binding(0, 256, thread=\"blockIdx.x\")"));
        OK(ctx, tir_sched_create(ctx, f, &r));
        OK(ctx, tir_sched_replay(r, text, strlen(text)));
        assert_true(tir_struct_equal(tir_sched_func(r), tir_sched_func(s)));
        assert_string_equal(tir_sched_trace_text(r), text);
        tir_sched_destroy(r);
        tir_sched_destroy(s);
    }
    tir_ctx_destroy(ctx);
}

/* A swizzled grid over ragged M and N: 250 x 510 in 16 x 8 blocks is 16
 * block rows (the last one 10 rows of M) by 64 block columns (the last 6
 * columns of N), 1024 blocks, swizzled; the simulated kernel equals the
 * interpreter. */
static void test_swizzle_ragged(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_tc_config c = {.bm = 16, .bn = 8, .bk = 16, .warps_m = 1, .warps_n = 1, .stages = 2,
                       .async_copy = true, .pad = 8};
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, tir_def_matmul_mixed(ctx, 250, 510, 16, TIR_BF16, TIR_F32), &s));
    OK(ctx, tir_tune_tc_tiling(s, "C", &c, NULL, NULL));
    assert_non_null(strstr(tir_print(ctx, tir_sched_func(s)),
                           "T.thread_binding(0, 512, thread=\"blockIdx.x\")"));
    tir_sched_destroy(s);
    sim_config(ctx, TIR_RT_GEMM_BF16, 250, 510, 16, &c);
    tir_ctx_destroy(ctx);
}

static void test_sim(void **st) {
    (void)st;
    sim_point(TIR_RT_GEMM_BF16, 50, 40, 32, 5);
    sim_point(TIR_RT_GEMM_TF32, 40, 24, 16, 11);
}

/* The task keys: every kind its own; TF32's is the float32 function's
 * key with +tf32. */
static void test_keys(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    static const tir_rt_gemm_kind kinds[] = {TIR_RT_GEMM_F32, TIR_RT_GEMM_TF32, TIR_RT_GEMM_F16,
                                             TIR_RT_GEMM_BF16};
    const char *key[4];
    for (int i = 0; i < 4; i++) {
        tir_tune_task t = tc_task(kinds[i], 64, 48, 64);
        OK(ctx, tir_tune_task_key(ctx, &t, &key[i]));
        for (int j = 0; j < i; j++) assert_string_not_equal(key[i], key[j]);
    }
    char want[512];
    snprintf(want, sizeof want, "%s+tf32", key[0]);
    assert_string_equal(key[1], want);
    tir_ctx_destroy(ctx);
}

/* ----------------------------------------------------- the fake driver */

static long blas_calls(const char *entry) {
    const char *lib = getenv("MINITIR_CUBLAS_LIB");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    long (*f)(const char *) = NULL;
    if (h) *(void **)&f = dlsym(h, "fake_cuda_blas_calls");
    long n = f ? f(entry) : -1;
    if (h) dlclose(h);
    return n;
}

static void temp_db(char path[static 32]) {
    snprintf(path, 32, "/tmp/minitir-tunetc-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
}

/* tir_tune on a bf16 task: cuBLAS is GemmEx, every candidate is measured,
 * the best is verified against the float64 reference within bf16's
 * tolerance, records are under the task's key, and the best applies again
 * through that key (the float32 function's key has none). */
static void test_tune_fake_bf16(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_rt_device *dev = NULL;
    if (tir_rt_device_create(ctx, 0, &dev) != TIR_OK) {
        tir_ctx_destroy(ctx);
        skip();
    }
    setenv("FAKE_CUDA_MATMUL", "64,48,64,bf16", 1);
    char path[32];
    temp_db(path);
    tir_tune_db *db = NULL;
    OK(ctx, tir_tune_db_open(ctx, path, &db));
    tir_tune_task t = tc_task(TIR_RT_GEMM_BF16, 64, 48, 64);
    tir_tune_opts o = {.trials = 6, .threads = 2, .batch = 3, .runs = 20, .seed = 5, .db = db};
    tir_tune_result r;
    long ex0 = blas_calls("cublasGemmEx"), s0 = blas_calls("cublasSgemm_v2");
    if (tir_tune(ctx, dev, &t, &o, &r) != TIR_OK) fail_msg("tune: %s", tir_ctx_error(ctx));
    assert_true(blas_calls("cublasGemmEx") > ex0);
    assert_int_equal(blas_calls("cublasSgemm_v2"), s0);
    assert_int_equal(r.trials, 6);
    assert_int_equal(r.failed, 0);
    assert_true(r.best_rel_err < tir_rt_gemm_tolerance(TIR_RT_GEMM_BF16, 64));
    tir_target_limits lim;
    tir_rt_device_limits(dev, &lim);
    assert_true(tir_tune_tc_config_valid(&t, &lim, &r.best_tc));
    char dec[128];
    tir_tc_config_text(&r.best_tc, dec, sizeof dec);
    assert_string_equal(r.best_decisions, dec);
    const char *key;
    OK(ctx, tir_tune_task_key(ctx, &t, &key));
    int64_t n = 0;
    OK(ctx, tir_tune_db_count(ctx, db, key, NULL, &n));
    assert_int_equal(n, 6);
    /* the best replays by the key onto a fresh schedule, to the best's trace */
    tir_tune_target tg;
    tir_tune_target_from_props(tir_rt_device_props(dev), &tg);
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, &t), &s));
    tir_tune_record used;
    OK(ctx, tir_tune_apply_best_key(ctx, db, &tg, key, s, &used));
    assert_string_equal(used.decisions, r.best_decisions);
    tir_sched_destroy(s);
    tir_tune_result_free(&r);
    /* TF32: float32 inputs; its records are not the float32 matmul's */
    setenv("FAKE_CUDA_MATMUL", "64,48,64", 1);
    t.kind = TIR_RT_GEMM_TF32, o.trials = 3;
    if (tir_tune(ctx, dev, &t, &o, &r) != TIR_OK) fail_msg("tune tf32: %s", tir_ctx_error(ctx));
    assert_int_equal(r.failed, 0);
    assert_true(r.best_rel_err < tir_rt_gemm_tolerance(TIR_RT_GEMM_TF32, 64));
    tir_tune_result_free(&r);
    OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, &t), &s));
    assert_int_equal(tir_tune_apply_best(ctx, db, &tg, s, &used), TIR_ERR_TUNE_NO_RECORD);
    OK(ctx, tir_tune_task_key(ctx, &t, &key));
    OK(ctx, tir_tune_apply_best_key(ctx, db, &tg, key, s, &used));
    assert_non_null(strstr(tir_sched_trace_text(s), "mma_m16n8k8_tf32"));
    tir_sched_destroy(s);
    tir_tune_db_close(db);
    unlink(path);
    unsetenv("FAKE_CUDA_MATMUL");
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
}

/* A TF32 record filed under the plain float32 key (an edited or
 * misfiled import) replays on the float32 function, and its tensorize
 * rounds the inputs to TF32: apply_best skips it and applies the next
 * record, and fails when none is left, naming why and leaving s fresh. */
static void test_apply_best_tf32_key(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_tune_task t = tc_task(TIR_RT_GEMM_TF32, 64, 64, 64);
    const tir_prim_func *f = tir_tune_task_func(ctx, &t);
    const char *f32_key, *tf32_key;
    OK(ctx, tir_tune_workload_key(ctx, f, &f32_key));
    OK(ctx, tir_tune_task_key(ctx, &t, &tf32_key));
    assert_string_not_equal(f32_key, tf32_key);
    tir_schedule *tc = NULL, *plain = NULL;
    OK(ctx, tir_sched_create(ctx, f, &tc));
    tir_tc_config c = tir_tune_tc_default(&t, 132);
    OK(ctx, tir_tune_tc_tiling(tc, "C", &c, NULL, NULL));
    assert_non_null(strstr(tir_sched_trace_text(tc), "\"mma_m16n8k8_tf32\""));
    OK(ctx, tir_sched_create(ctx, f, &plain));
    const tir_loop_rv *l = NULL;
    tir_loop_rv i2[2];
    tir_block_rv b;
    OK(ctx, tir_sched_get_block(plain, "C", &b));
    int n = 0;
    OK(ctx, tir_sched_get_loops(plain, b, &l, &n));
    OK(ctx, tir_sched_split(plain, l[0], 2, (int64_t[]){TIR_SPLIT_INFER, 8}, i2));
    char path[32];
    temp_db(path);
    tir_tune_db *db = NULL;
    OK(ctx, tir_tune_db_open(ctx, path, &db));
    tir_tune_target tg = {.gpu = "NVIDIA H200", .arch = "sm_90", .driver_version = 13000};
    tir_tune_record r;
    tir_tune_record_init(&r);
    r.workload = f32_key, r.target = tg, r.trace = tir_sched_trace_text(tc), r.median_ms = 0.5;
    OK(ctx, tir_tune_db_add(ctx, db, &r, NULL));
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, f, &s));
    assert_int_equal(tir_tune_apply_best(ctx, db, &tg, s, NULL), TIR_ERR_TUNE_DB);
    assert_non_null(strstr(tir_ctx_error(ctx), "TF32 rounding does not match"));
    assert_int_equal(tir_sched_trace_len(s), 0);
    r.trace = tir_sched_trace_text(plain), r.median_ms = 2.0; /* slower, but float32 */
    OK(ctx, tir_tune_db_add(ctx, db, &r, NULL));
    tir_tune_record used;
    OK(ctx, tir_tune_apply_best(ctx, db, &tg, s, &used));
    assert_string_equal(used.trace, tir_sched_trace_text(plain));
    assert_null(strstr(tir_sched_trace_text(s), "tf32"));
    tir_sched_destroy(s);
    /* under the TF32 key the TF32 record is the one */
    r.workload = tf32_key, r.trace = tir_sched_trace_text(tc), r.median_ms = 0.5;
    OK(ctx, tir_tune_db_add(ctx, db, &r, NULL));
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, tir_tune_apply_best_key(ctx, db, &tg, tf32_key, s, &used));
    assert_non_null(strstr(tir_sched_trace_text(s), "mma_m16n8k8_tf32"));
    tir_sched_destroy(s);
    tir_sched_destroy(plain);
    tir_sched_destroy(tc);
    tir_tune_db_close(db);
    unlink(path);
    tir_ctx_destroy(ctx);
}

/* K not a multiple of the mma's k: refused before any primitive, naming K
 * (tensorize used to refuse it deep in the schedule, about a loop the user
 * never wrote), the schedule left as it was. */
static void test_tc_ragged_k(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const struct { tir_rt_gemm_kind kind; int64_t K; } cases[] = {
        {TIR_RT_GEMM_BF16, 41}, {TIR_RT_GEMM_F16, 24}, {TIR_RT_GEMM_TF32, 36}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tir_tune_task t = tc_task(cases[i].kind, 64, 64, cases[i].K);
        tir_schedule *s = NULL;
        OK(ctx, tir_sched_create(ctx, tir_tune_task_func(ctx, &t), &s));
        const tir_prim_func *before = tir_sched_func(s);
        tir_tc_config c = tir_tune_tc_default(&t, 132);
        assert_int_equal(tir_tune_tc_tiling(s, "C", &c, NULL, NULL), TIR_ERR_INVALID_ARG);
        char want[32];
        snprintf(want, sizeof want, "K = %lld,", (long long)cases[i].K);
        assert_non_null(strstr(tir_ctx_error(ctx), want));
        assert_non_null(strstr(tir_ctx_error(ctx), "pad K"));
        assert_ptr_equal(tir_sched_func(s), before);
        tir_sched_destroy(s);
    }
    tir_ctx_destroy(ctx);
}

/* A user's copy of the built-in TF32 mma under another name: apply_best
 * must see that its kernel rounds to TF32 from the kernel itself, not from
 * the intrinsic's name in the trace. */
static const tir_prim_func *desc_user_tf32(tir_ctx *ctx) {
    static const char text[] =
        "@T.prim_func\n"
        "def user_mma_tf32(A: T.Buffer((16, 8), \"float32\", scope=\"frag.a\"), "
        "B: T.Buffer((8, 8), \"float32\", scope=\"frag.b\"), "
        "C: T.Buffer((16, 8), \"float32\", scope=\"frag.acc\")):\n"
        "    for i, j, k in T.grid(16, 8, 8):\n"
        "        with T.block(\"update\"):\n"
        "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
        "            T.reads(C[vi, vj], A[vi, vk], B[vk, vj])\n"
        "            T.writes(C[vi, vj])\n"
        "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";
    const tir_prim_func *f = NULL;
    return tir_parse_func(ctx, text, strlen(text), &f) == TIR_OK ? f : NULL;
}

static const tir_expr *user_tile(tir_ctx *ctx, const tir_buffer *b, const tir_expr *const *o) {
    const tir_expr *load = tir_load(ctx, b, b->ndim, o);
    return tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &load);
}

static const tir_stmt *impl_user_tf32(tir_ctx *ctx, const tir_buffer *const *bufs,
                                      const tir_expr *const *const *origins) {
    const tir_expr *args[3] = {user_tile(ctx, bufs[2], origins[2]),
                               user_tile(ctx, bufs[0], origins[0]),
                               user_tile(ctx, bufs[1], origins[1])};
    return tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_MMA_SYNC, 3, args));
}

/* Every "mma_m16n8k8_tf32" of text renamed "user_mma_tf32" (same length
 * or shorter, so the copy fits). */
static char *renamed_trace(const char *text) {
    const char *from = "\"mma_m16n8k8_tf32\"", *to = "\"user_mma_tf32\"";
    char *out = malloc(strlen(text) + 1), *w = out;
    for (const char *r = text; *r;) {
        if (strncmp(r, from, strlen(from)) == 0) {
            strcpy(w, to), w += strlen(to), r += strlen(from);
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
    return out;
}

static void test_apply_best_tf32_user_intrin(void **st) {
    (void)st;
    assert_int_equal(tir_tensor_intrin_register("user_mma_tf32", desc_user_tf32, impl_user_tf32),
                     TIR_OK);
    tir_ctx *ctx = tir_ctx_create();
    tir_tune_task t = tc_task(TIR_RT_GEMM_TF32, 64, 64, 64);
    const tir_prim_func *f = tir_tune_task_func(ctx, &t);
    const char *f32_key, *tf32_key;
    OK(ctx, tir_tune_workload_key(ctx, f, &f32_key));
    OK(ctx, tir_tune_task_key(ctx, &t, &tf32_key));
    tir_schedule *tc = NULL;
    OK(ctx, tir_sched_create(ctx, f, &tc));
    tir_tc_config c = tir_tune_tc_default(&t, 132);
    OK(ctx, tir_tune_tc_tiling(tc, "C", &c, NULL, NULL));
    char *trace = renamed_trace(tir_sched_trace_text(tc));
    assert_null(strstr(trace, "mma_m16n8k8_tf32"));
    assert_non_null(strstr(trace, "\"user_mma_tf32\""));
    /* the renamed trace replays: the user's intrinsic tensorizes alike */
    tir_schedule *s = NULL;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, tir_sched_replay(s, trace, strlen(trace)));
    tir_sched_destroy(s);
    char path[32];
    temp_db(path);
    tir_tune_db *db = NULL;
    OK(ctx, tir_tune_db_open(ctx, path, &db));
    tir_tune_target tg = {.gpu = "NVIDIA H200", .arch = "sm_90", .driver_version = 13000};
    tir_tune_record r;
    tir_tune_record_init(&r);
    r.workload = f32_key, r.target = tg, r.trace = trace, r.median_ms = 0.5;
    OK(ctx, tir_tune_db_add(ctx, db, &r, NULL));
    OK(ctx, tir_sched_create(ctx, f, &s));
    assert_int_equal(tir_tune_apply_best(ctx, db, &tg, s, NULL), TIR_ERR_TUNE_DB);
    assert_non_null(strstr(tir_ctx_error(ctx), "TF32 rounding does not match"));
    assert_int_equal(tir_sched_trace_len(s), 0);
    tir_sched_destroy(s);
    /* under the TF32 key it applies */
    r.workload = tf32_key;
    OK(ctx, tir_tune_db_add(ctx, db, &r, NULL));
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, tir_tune_apply_best_key(ctx, db, &tg, tf32_key, s, NULL));
    assert_non_null(strstr(tir_sched_trace_text(s), "user_mma_tf32"));
    tir_sched_destroy(s);
    tir_sched_destroy(tc);
    free(trace);
    tir_tune_db_close(db);
    unlink(path);
    tir_ctx_destroy(ctx);
}

/* The rule without tuning (tir_tune_tc_default) on 132 SMs: from half a
 * wave of 128 x 256 blocks, 128 x 256 in 4 stages unless a badly filled
 * last wave makes 128 x 192 (N a multiple of 192) or 128 x 128 in 3
 * stages (two blocks an SM at least) keep more SMs busy; below that
 * 64 x 128, then 64 x 64; bk 64 (TF32 32) or the largest multiple of the
 * mma's k below it that divides K. */
static void test_default_rule(void **st) {
    (void)st;
    static const struct {
        tir_rt_gemm_kind kind;
        int64_t m, n, k;
        int bm, bn, bk, stages, splitk;
    } cases[] = {{TIR_RT_GEMM_BF16, 4096, 4096, 4096, 128, 256, 64, 4, 1},
                 {TIR_RT_GEMM_F16, 8192, 8192, 8192, 128, 256, 64, 4, 1},
                 {TIR_RT_GEMM_TF32, 4096, 4096, 4096, 128, 256, 32, 4, 1},
                 {TIR_RT_GEMM_BF16, 4096, 4096, 4112, 128, 256, 16, 4, 1}, /* 4112 = 16 * 257 */
                 {TIR_RT_GEMM_BF16, 2048, 2048, 2048, 128, 256, 64, 4, 1}, /* 128 blocks >= 66 */
                 {TIR_RT_GEMM_BF16, 1536, 1408, 2048, 128, 256, 64, 4, 1}, /* 12 x 6 = 72 */
                 /* 288 blocks of 128 x 256 are 2.18 waves; 384 of 128 x 192, 2.91 */
                 {TIR_RT_GEMM_BF16, 3072, 3072, 3072, 128, 192, 64, 4, 1},
                 {TIR_RT_GEMM_TF32, 1536, 1536, 1536, 128, 192, 32, 4, 1}, /* 72 -> 96 blocks */
                 {TIR_RT_GEMM_F16, 3072, 3584, 3072, 128, 256, 64, 4, 1},  /* 3584 % 192 != 0 */
                 {TIR_RT_GEMM_BF16, 3584, 3584, 3584, 128, 256, 64, 4, 1}, /* 392 = 2.97 waves */
                 /* 800 blocks of 128 x 256 are 6.06 waves; 1600 of 128 x 128, 12.1 of 13 */
                 {TIR_RT_GEMM_BF16, 5120, 5120, 5120, 128, 128, 64, 3, 1},
                 {TIR_RT_GEMM_BF16, 6144, 6144, 6144, 128, 256, 64, 4, 1}, /* 8.73 waves */
                 /* 128 x 192 only where its copies are whole rounds of 16-byte
                  * vectors: not with bk 16 or 48 (TF32 8, 24); 576 of 128 x 128
                  * fill 4.36 of 5 waves */
                 {TIR_RT_GEMM_BF16, 3072, 3072, 4112, 128, 128, 16, 3, 1},
                 {TIR_RT_GEMM_F16, 3072, 3072, 3120, 128, 128, 48, 3, 1}, /* 48 * 65 */
                 {TIR_RT_GEMM_TF32, 3072, 3072, 1512, 128, 128, 24, 3, 1}, /* 24 * 63 */
                 {TIR_RT_GEMM_TF32, 1536, 1536, 1000, 128, 256, 8, 4, 1},  /* 8 * 125 */
                 {TIR_RT_GEMM_BF16, 2000, 1000, 704, 64, 128, 64, 3, 1},   /* 16 x 4 = 64 < 66 */
                 {TIR_RT_GEMM_TF32, 1024, 1024, 1024, 64, 128, 32, 3, 1},  /* 512 slices lost */
                 {TIR_RT_GEMM_BF16, 1000, 520, 336, 64, 128, 48, 3, 1},    /* 336 = 48 * 7 */
                 {TIR_RT_GEMM_TF32, 1000, 520, 336, 64, 128, 24, 3, 1},    /* 336 = 24 * 14 */
                 {TIR_RT_GEMM_F16, 512, 512, 512, 64, 64, 64, 3, 1},       /* 8 x 4 = 32 < 66 */
                 {TIR_RT_GEMM_TF32, 40, 72, 24, 64, 64, 24, 3, 1},
                 {TIR_RT_GEMM_BF16, 64, 64, 100, 64, 64, 16, 3, 1},  /* K % 16: refused */
                 /* split-K under a wave of small tiles, slices of 1024+ */
                 {TIR_RT_GEMM_BF16, 512, 512, 8192, 64, 64, 64, 3, 8},   /* 64 tiles */
                 {TIR_RT_GEMM_BF16, 768, 768, 4096, 64, 128, 64, 3, 4},  /* 72: 8 is 576 */
                 /* TF32 with K of 4096+: 128 x 128 within three waves, slices of 512+ */
                 {TIR_RT_GEMM_TF32, 1024, 1024, 8192, 128, 128, 32, 3, 4},  /* 64 tiles */
                 {TIR_RT_GEMM_TF32, 512, 512, 4096, 128, 128, 32, 3, 8},    /* 16 tiles */
                 {TIR_RT_GEMM_TF32, 768, 768, 4096, 128, 128, 32, 3, 8},    /* 36: 288 */
                 {TIR_RT_GEMM_TF32, 640, 1280, 8192, 128, 128, 32, 3, 4},   /* 50: 8 is 400 */
                 {TIR_RT_GEMM_TF32, 512, 512, 2048, 64, 64, 32, 3, 2},      /* K < 4096 */
                 {TIR_RT_GEMM_TF32, 256, 256, 4096, 64, 64, 32, 3, 4},     /* 4 x 8 < 99 */
                 {TIR_RT_GEMM_TF32, 384, 384, 8192, 64, 64, 32, 3, 8},     /* 9 x 8 < 99 */
                 {TIR_RT_GEMM_TF32, 448, 448, 8192, 64, 64, 32, 3, 8},     /* 448 % 128 */
                 {TIR_RT_GEMM_TF32, 640, 640, 8192, 128, 128, 32, 3, 8},   /* 25 x 8 */
                 /* the three-quarter-wave bound: 96 blocks < 99 <= 104 */
                 {TIR_RT_GEMM_TF32, 1536, 128, 8192, 64, 64, 32, 3, 8},
                 {TIR_RT_GEMM_TF32, 1664, 128, 8192, 128, 128, 32, 3, 8},
                 /* K of 4088 (bk 8, 511 k tiles) and 4104 (bk 24, 171): no even split */
                 {TIR_RT_GEMM_TF32, 512, 512, 4088, 64, 64, 8, 3, 1},
                 {TIR_RT_GEMM_TF32, 512, 512, 4104, 64, 64, 24, 3, 1},
                 {TIR_RT_GEMM_BF16, 2048, 2048, 8192, 128, 256, 64, 4, 1}}; /* half a wave */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tir_tune_task t = tc_task(cases[i].kind, cases[i].m, cases[i].n, cases[i].k);
        tir_tc_config c = tir_tune_tc_default(&t, 132);
        if (c.bm != cases[i].bm || c.bn != cases[i].bn || c.bk != cases[i].bk ||
            c.stages != cases[i].stages || c.warps_m * c.warps_n != (c.bm == 64 || c.bn == 128 ? 4 : 8) ||
            (c.splitk > 1 ? c.splitk : 1) != (cases[i].splitk > 1 ? cases[i].splitk : 1))
            fail_msg("case %zu: %dx%dx%d warps %dx%d stages %d splitk %d", i, c.bm, c.bn, c.bk,
                     c.warps_m, c.warps_n, c.stages, c.splitk);
        int mk = cases[i].kind == TIR_RT_GEMM_TF32 ? 8 : 16;
        assert_int_equal(t.K % c.bk != 0, t.K % mk != 0);
        /* the default is a point of the tuner's space wherever there is one */
        tir_tune_space sp;
        tir_ctx *ctx = tir_ctx_create();
        if (t.K % mk) {
            assert_int_not_equal(tir_tune_space_make(ctx, &t, sm90(), &sp), TIR_OK);
        } else {
            OK(ctx, tir_tune_space_make(ctx, &t, sm90(), &sp));
            int found = 0;
            for (int j = 0; j < sp.n; j++) found += same(&sp.tc_configs[j], &c);
            assert_int_equal(found, 1);
            tir_tune_space_free(&sp);
        }
        tir_ctx_destroy(ctx);
    }
    /* the clamped tail: the big tiles with 16-bit inputs and 32 k tiles or
     * more (runs 91-92: faster there, TF32 and fewer k tiles slower) */
    static const struct {
        tir_rt_gemm_kind kind;
        int64_t m, n, k;
        bool clamp;
    } tails[] = {{TIR_RT_GEMM_BF16, 4096, 4096, 4096, true},
                 {TIR_RT_GEMM_F16, 8192, 8192, 8192, true},
                 {TIR_RT_GEMM_BF16, 2048, 2048, 2048, true},  /* 32 k tiles */
                 {TIR_RT_GEMM_BF16, 2048, 2048, 1984, false}, /* 31 */
                 {TIR_RT_GEMM_BF16, 4096, 4096, 4112, true},  /* bk 16: 257 */
                 {TIR_RT_GEMM_F16, 3072, 3072, 3072, true},   /* 128 x 192 */
                 {TIR_RT_GEMM_BF16, 5120, 5120, 5120, true},  /* 128 x 128, 3 stages */
                 {TIR_RT_GEMM_TF32, 4096, 4096, 4096, false},
                 {TIR_RT_GEMM_BF16, 2000, 1000, 704, false},  /* 64 x 128 */
                 {TIR_RT_GEMM_BF16, 1000, 520, 336, false},
                 {TIR_RT_GEMM_BF16, 512, 512, 8192, false},   /* split-K, 64 x 64 */
                 {TIR_RT_GEMM_TF32, 1024, 1024, 8192, false}}; /* TF32 split-K */
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        tir_tune_task t = tc_task(tails[i].kind, tails[i].m, tails[i].n, tails[i].k);
        tir_tc_config c = tir_tune_tc_default(&t, 132);
        if (c.clamp_tail != tails[i].clamp || c.guard_tail)
            fail_msg("tails case %zu: clamp_tail %d guard_tail %d", i, c.clamp_tail, c.guard_tail);
    }
    assert_false(tir_tc_config_default().clamp_tail);
    /* a GPU of 8 SMs: one 128 x 128 tile in 8 slices (8 blocks, 3 waves at most) */
    tir_tune_task t8 = tc_task(TIR_RT_GEMM_TF32, 128, 128, 4096);
    tir_tc_config c8 = tir_tune_tc_default(&t8, 8);
    assert_true(c8.bm == 128 && c8.bn == 128 && c8.splitk == 8 && c8.stages == 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_rule),
        cmocka_unit_test(test_space),  cmocka_unit_test(test_valid),
        cmocka_unit_test(test_text),   cmocka_unit_test(test_sampled),
        cmocka_unit_test(test_sim),    cmocka_unit_test(test_keys),
        cmocka_unit_test(test_swizzle),
        cmocka_unit_test(test_split_k),
        cmocka_unit_test(test_pad_a),
        cmocka_unit_test(test_swizzle_trace),
        cmocka_unit_test(test_swizzle_ragged),
        cmocka_unit_test(test_tune_fake_bf16),
        cmocka_unit_test(test_apply_best_tf32_key),
        cmocka_unit_test(test_tc_ragged_k),
        cmocka_unit_test(test_apply_best_tf32_user_intrin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
