/* The search's cost models and the replayed search (src/tune/search.c,
 * replay.c, xgb.c) on a small synthetic database, no GPU: the model names;
 * tir_tune_replay's pool (distinct decisions, the first record of each, a
 * failed record a failed trial), its errors, its determinism for a seed
 * and that every model finds the pool's best; on a pool whose speed is a
 * clear function of the knobs, the kNN and XGBoost models reach the best
 * in fewer trials than random search (seeded, so deterministic); the
 * XGBoost model reports its fits and their CPU time.  The XGBoost cases
 * are skipped, saying why, when libxgboost cannot be loaded.
 *
 * `test_tune_model nolib` (run with MINITIR_XGBOOST_LIB naming a missing
 * file, meson's tune_model_nolib) runs only the missing-library case: a
 * process that has loaded the library keeps it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "minitir/tune.h"

static const tir_target_limits *sm90(void) { return &tir_target_find("sm_90")->limits; }

static const tir_tune_task task256 = {TIR_TUNE_MATMUL, 1, 256, 256, 256, TIR_RT_GEMM_F32};

/* The synthetic speed of c: highest at 16 x 16 block tiles with k tiles
 * of 16 and staging, falling off with each knob's distance from there. */
static double synthetic_gflops(const tir_tile_config *c) {
    double bm = c->warps_m * c->threads_m * c->tm, bn = c->warps_n * c->threads_n * c->tn;
    double d = fabs(log2(bm) - 4) + fabs(log2(bn) - 4) + 0.5 * fabs(log2(c->bk) - 4) +
               (c->staging ? 0 : 0.5) + 0.25 * log2(c->splitk);
    return 10000.0 / (1 + d);
}

typedef struct pool_info {
    int n;            /* distinct decisions recorded */
    double best;      /* their best GFLOP/s */
    char best_text[256];
} pool_info;

/* A record of decisions dec (trace: dec, else trace) at g GFLOP/s, or
 * failed with err. */
static void add(tir_ctx *ctx, tir_tune_db *db, const char *key, const char *dec, const char *trace,
                double g, const char *err) {
    tir_tune_record r;
    tir_tune_record_init(&r);
    r.workload = key;
    snprintf(r.target.gpu, sizeof r.target.gpu, "Synthetic GPU");
    snprintf(r.target.arch, sizeof r.target.arch, "sm_90");
    r.target.driver_version = 1;
    r.trace = trace ? trace : dec; /* unique per record, as a real trace is */
    r.decisions = dec;
    if (!err) r.gflops = g, r.median_ms = 2.0 * 256 * 256 * 256 / g / 1e6;
    r.error = err;
    assert_int_equal(tir_tune_db_add(ctx, db, &r, NULL), TIR_OK);
}

/* A database at path with every stride-th point of task256's space, each
 * at its synthetic speed, except one failed record; then a second record
 * of the best point's decisions, slower (the replay keeps the first). */
static pool_info make_db(tir_ctx *ctx, const char *path, int stride) {
    pool_info info = {0};
    tir_tune_db *db;
    assert_int_equal(tir_tune_db_open(ctx, path, &db), TIR_OK);
    const char *key;
    assert_int_equal(tir_tune_task_key(ctx, &task256, &key), TIR_OK);
    tir_tune_space sp;
    assert_int_equal(tir_tune_space_make(ctx, &task256, sm90(), &sp), TIR_OK);
    char dec[256];
    for (int i = 0; i < sp.n; i += stride) {
        tir_tile_config_text(&sp.configs[i], dec, sizeof dec);
        double g = synthetic_gflops(&sp.configs[i]);
        bool failed = info.n == 3;
        add(ctx, db, key, dec, NULL, g, failed ? "measure: synthetic failure" : NULL);
        if (!failed && g > info.best) info.best = g, snprintf(info.best_text, 256, "%s", dec);
        info.n++;
    }
    /* the same decisions, another trace: a second measurement */
    add(ctx, db, key, info.best_text, "second", info.best / 2, NULL);
    tir_tune_space_free(&sp);
    tir_tune_db_close(db);
    return info;
}

static void temp_db(char path[static 32]) {
    snprintf(path, 32, "/tmp/minitir-model-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
}

/* A replay of the pool at path: status, with res filled. */
static tir_status replay(tir_ctx *ctx, const char *path, tir_tune_model m, uint64_t seed,
                         int trials, bool no_default, tir_tune_result *res) {
    tir_tune_db *db;
    assert_int_equal(tir_tune_db_open(ctx, path, &db), TIR_OK);
    tir_tune_opts o = {.trials = trials, .seed = seed, .model = m, .no_default = no_default};
    tir_status st = tir_tune_replay(ctx, db, NULL, 132, &task256, &o, res);
    tir_tune_db_close(db);
    return st;
}

static bool xgb_or_skip(void) {
    tir_ctx *ctx = tir_ctx_create();
    bool ok = tir_tune_xgb_available(ctx) == TIR_OK;
    if (!ok) printf("# skipping the XGBoost cases: %s\n", tir_ctx_error(ctx));
    tir_ctx_destroy(ctx);
    return ok;
}

static void test_model_names(void **st) {
    (void)st;
    for (int m = TIR_TUNE_MODEL_AUTO; m <= TIR_TUNE_MODEL_RANDOM; m++) {
        tir_tune_model back;
        assert_true(tir_tune_model_parse(tir_tune_model_name((tir_tune_model)m), &back));
        assert_int_equal(back, m);
    }
    tir_tune_model back = TIR_TUNE_MODEL_XGB;
    assert_false(tir_tune_model_parse("xgboost", &back));
    assert_false(tir_tune_model_parse(NULL, &back));
    assert_int_equal(back, TIR_TUNE_MODEL_XGB);
    assert_string_equal(tir_tune_model_name(TIR_TUNE_MODEL_KNN), "knn");
    assert_string_equal(tir_tune_model_name(TIR_TUNE_MODEL_AUTO), "auto");
}

/* The default model (0, auto) is XGBoost where it loads (else kNN, in
 * test_xgb_missing), and the result says which model ran. */
static void test_auto_model(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char path[32];
    temp_db(path);
    make_db(ctx, path, 151);
    tir_tune_result r;
    tir_tune_opts o = {0};
    assert_int_equal(o.model, TIR_TUNE_MODEL_AUTO);
    assert_int_equal(replay(ctx, path, o.model, 1, 10, false, &r), TIR_OK);
    assert_int_equal(r.model, xgb_or_skip() ? TIR_TUNE_MODEL_XGB : TIR_TUNE_MODEL_KNN);
    if (r.model == TIR_TUNE_MODEL_XGB) assert_true(r.model_fits >= 0 && r.model_ms > 0);
    tir_tune_result_free(&r);
    assert_int_equal(replay(ctx, path, TIR_TUNE_MODEL_RANDOM, 1, 10, false, &r), TIR_OK);
    assert_int_equal(r.model, TIR_TUNE_MODEL_RANDOM);
    tir_tune_result_free(&r);
    unlink(path);
    tir_ctx_destroy(ctx);
}

/* Every model measures the whole pool, finds its best (the first record
 * of its decisions), counts the failed record; a seed replays exactly. */
static void test_replay_finds_best(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char path[32];
    temp_db(path);
    pool_info info = make_db(ctx, path, 151);
    assert_true(info.n >= 10 && info.n <= 60);
    bool xgb = xgb_or_skip();
    for (int m = TIR_TUNE_MODEL_KNN; m <= TIR_TUNE_MODEL_RANDOM; m++) {
        if (m == TIR_TUNE_MODEL_XGB && !xgb) continue;
        tir_tune_result a, b;
        if (replay(ctx, path, (tir_tune_model)m, 7, 1000, false, &a) != TIR_OK)
            fail_msg("replay %s: %s", tir_tune_model_name((tir_tune_model)m), tir_ctx_error(ctx));
        assert_int_equal(a.space_size, info.n);
        assert_int_equal(a.trials, info.n); /* the pool, then no more */
        assert_int_equal(a.failed, 1);
        assert_true(fabs(a.best_gflops - info.best) < 1e-9);
        assert_string_equal(a.best_decisions, info.best_text);
        assert_true(isnan(a.cublas_ms));
        for (int i = 1; i < a.trials; i++) assert_true(!(a.curve[i] > a.curve[i - 1]));
        assert_int_equal(replay(ctx, path, (tir_tune_model)m, 7, 1000, false, &b), TIR_OK);
        assert_int_equal(b.trials, a.trials);
        assert_memory_equal(a.curve, b.curve, (size_t)a.trials * sizeof *a.curve);
        tir_tune_result_free(&a);
        tir_tune_result_free(&b);
        /* a budget below the pool stops there */
        assert_int_equal(replay(ctx, path, (tir_tune_model)m, 3, 5, true, &a), TIR_OK);
        assert_int_equal(a.trials, 5);
        tir_tune_result_free(&a);
    }
    unlink(path);
    tir_ctx_destroy(ctx);
}

/* Mean trials until the pool's best, over seeds 1..10, without the
 * default. */
static double mean_trials_to_best(tir_ctx *ctx, const char *path, tir_tune_model m,
                                  double best) {
    double sum = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        tir_tune_result r;
        assert_int_equal(replay(ctx, path, m, seed, 1000, true, &r), TIR_OK);
        int at = 0;
        while (at < r.trials && !(2.0 * 256 * 256 * 256 / r.curve[at] / 1e6 >= best * 0.999999))
            at++;
        assert_true(at < r.trials);
        sum += at + 1;
        if (m == TIR_TUNE_MODEL_XGB) { /* refitted once per round of 16 */
            assert_true(r.model_fits >= r.trials / 16 - 1 && r.model_fits <= r.trials / 16 + 1);
            assert_true(r.model_fit_ms > 0 && r.model_ms >= r.model_fit_ms);
        } else {
            assert_int_equal(r.model_fits, 0);
        }
        tir_tune_result_free(&r);
    }
    return sum / 10;
}

/* On a pool whose speed follows the knobs, the models beat random search
 * to the best. */
static void test_models_beat_random(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char path[32];
    temp_db(path);
    pool_info info = make_db(ctx, path, 11);
    assert_true(info.n >= 100);
    bool have_xgb = xgb_or_skip();
    double rnd = mean_trials_to_best(ctx, path, TIR_TUNE_MODEL_RANDOM, info.best);
    double knn = mean_trials_to_best(ctx, path, TIR_TUNE_MODEL_KNN, info.best);
    double xgb = have_xgb ? mean_trials_to_best(ctx, path, TIR_TUNE_MODEL_XGB, info.best) : NAN;
    printf("# %d points: trials to the best (mean of 10 seeds): random %.1f, knn %.1f, xgb %.1f\n",
           info.n, rnd, knn, xgb);
    assert_true(knn < rnd);
    if (have_xgb) assert_true(xgb < rnd);
    unlink(path);
    tir_ctx_destroy(ctx);
}

static void test_replay_errors(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char path[32];
    temp_db(path);
    make_db(ctx, path, 151);
    tir_tune_db *db;
    assert_int_equal(tir_tune_db_open(ctx, path, &db), TIR_OK);
    tir_tune_result r;
    tir_tune_opts o = {.trials = 10, .db = db};
    assert_int_equal(tir_tune_replay(ctx, db, NULL, 132, &task256, &o, &r), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "records nothing"));
    o.db = NULL, o.trials = 0;
    assert_int_equal(tir_tune_replay(ctx, db, NULL, 132, &task256, &o, &r), TIR_ERR_INVALID_ARG);
    o.trials = 10, o.model = (tir_tune_model)7;
    assert_int_equal(tir_tune_replay(ctx, db, NULL, 132, &task256, &o, &r), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "unknown cost model"));
    o.model = TIR_TUNE_MODEL_KNN;
    assert_int_equal(tir_tune_replay(ctx, db, NULL, 0, &task256, &o, &r), TIR_ERR_INVALID_ARG);
    /* another shape: no record */
    tir_tune_task other = task256;
    other.K = 128;
    assert_int_equal(tir_tune_replay(ctx, db, NULL, 132, &other, &o, &r), TIR_ERR_TUNE_NO_RECORD);
    assert_non_null(strstr(tir_ctx_error(ctx), "no record"));
    /* another target than the records': none either */
    tir_tune_target t = {"Other GPU", "sm_90", 1};
    assert_int_equal(tir_tune_replay(ctx, db, &t, 132, &task256, &o, &r), TIR_ERR_TUNE_NO_RECORD);
    /* decisions that are not the rule's */
    const char *key;
    assert_int_equal(tir_tune_task_key(ctx, &task256, &key), TIR_OK);
    add(ctx, db, key, "tile=128x128x32 warps=2x4 stages=2 async=1 pad=8", NULL, 1.0, NULL);
    assert_int_equal(tir_tune_replay(ctx, db, NULL, 132, &task256, &o, &r), TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "tune replay: record"));
    tir_tune_db_close(db);
    unlink(path);
    tir_ctx_destroy(ctx);
}

/* MINITIR_XGBOOST_LIB names a missing file: the xgb model fails before it
 * searches, naming the file, and the other models work. */
static void test_xgb_missing(void **st) {
    (void)st;
    const char *env = getenv("MINITIR_XGBOOST_LIB");
    assert_non_null(env); /* meson's tune_model_nolib sets it */
    tir_ctx *ctx = tir_ctx_create();
    assert_int_equal(tir_tune_xgb_available(ctx), TIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tir_ctx_error(ctx), env));
    assert_non_null(strstr(tir_ctx_error(ctx), "install libxgboost-dev"));
    assert_int_equal(tir_tune_xgb_available(NULL), TIR_ERR_UNSUPPORTED);
    char path[32];
    temp_db(path);
    make_db(ctx, path, 151);
    tir_tune_result r;
    assert_int_equal(replay(ctx, path, TIR_TUNE_MODEL_XGB, 1, 10, false, &r), TIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tir_ctx_error(ctx), "the xgb cost model needs libxgboost"));
    assert_int_equal(r.trials, 0);
    tir_tune_result_free(&r);
    assert_int_equal(replay(ctx, path, TIR_TUNE_MODEL_KNN, 1, 10, false, &r), TIR_OK);
    assert_int_equal(r.trials, 10);
    tir_tune_result_free(&r);
    /* the default falls back to kNN */
    assert_int_equal(replay(ctx, path, TIR_TUNE_MODEL_AUTO, 1, 10, false, &r), TIR_OK);
    assert_int_equal(r.model, TIR_TUNE_MODEL_KNN);
    assert_int_equal(r.trials, 10);
    tir_tune_result_free(&r);
    unlink(path);
    tir_ctx_destroy(ctx);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "nolib")) {
        const struct CMUnitTest nolib[] = {cmocka_unit_test(test_xgb_missing)};
        return cmocka_run_group_tests(nolib, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_names),
        cmocka_unit_test(test_auto_model),
        cmocka_unit_test(test_replay_finds_best),
        cmocka_unit_test(test_models_beat_random),
        cmocka_unit_test(test_replay_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
