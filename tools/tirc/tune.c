/* tune.c: `tirc tune`: tir_tune on the GPU for one task (the matmul, the
 * fused matmul + bias + ReLU, a batch matmul with --batch, or a
 * tensor-core matmul with --dtype tf32|f16|bf16), with a
 * progress line, the best configuration, its trace, and a chart and CSV
 * of the best time against trials; every candidate goes to --db.  Also
 * the database side of `tirc bench --db`: the tuned schedule of a size.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sgemm.h"
#include "tirc.h"

static tir_tune_task task_of(const opts *o, int64_t M, int64_t N, int64_t K) {
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, M, N, K, o->kind};
    if (tirc_is_fused(o)) t.op = TIR_TUNE_MATMUL_BIAS_RELU;
    if (o->batch > 0) t.op = TIR_TUNE_BATCH_MATMUL, t.batch = o->batch;
    return t;
}

/* GFLOP of the task: GFLOP/s = this / ms. */
static double gflops_per_ms(const tir_tune_task *t) {
    return 2.0 * (double)t->batch * (double)t->M * (double)t->N * (double)t->K / 1e6;
}

/* user: the time limit in seconds (0: none); the ETA is the sooner of the trials
 * left at the rate so far and the time left (a trial cap far above what
 * --minutes allows once showed "ETA <= 1245 s" at the end of a 90 s run). */
static void progress(void *user, const tir_tune_progress *p) {
    double x = p->best_gflops / p->cublas_gflops;
    double eta = p->trials ? p->elapsed_s / p->trials * (p->max_trials - p->trials) : 0;
    double limit = *(const double *)user, left = limit - p->elapsed_s;
    if (limit > 0 && eta > left) eta = left > 0 ? left : 0;
    char per_gpu[16 * TIR_TUNE_MAX_GPUS] = "";
    size_t n = 0;
    for (int k = 0; p->ngpus > 1 && k < p->ngpus && n < sizeof per_gpu; k++)
        n += (size_t)snprintf(per_gpu + n, sizeof per_gpu - n, "%s%d", k ? "+" : " (", p->gpu_trials[k]);
    if (n && n < sizeof per_gpu) snprintf(per_gpu + n, sizeof per_gpu - n, " per GPU)");
    fprintf(stderr, "\r[%d/%d trials%s, %d failed, %.0f s] best %.1f TFLOP/s = %.3fx cuBLAS, "
                    "ETA <= %.0f s   ",
            p->trials, p->max_trials, per_gpu, p->failed, p->elapsed_s, p->best_gflops / 1e3, x,
            eta);
}

/* The chart of best time against trials: a CSV, and a gnuplot chart
 * (PNG or SVG, as --plot's name says) when gnuplot exists.  False (after
 * the message) when a file cannot be written or gnuplot fails: a .svg
 * once got PNG data, and an unwritable path went unsaid. */
static bool write_curve(const opts *o, const tir_tune_result *r) {
    if (!o->plot) return true;
    char dat[1100], gp[1100], cmd[2300];
    size_t len = strlen(o->plot);
    snprintf(dat, sizeof dat, "%.*s.csv", (int)(len - 4), o->plot);
    snprintf(gp, sizeof gp, "%.*s.gp", (int)(len - 4), o->plot);
    FILE *f = fopen(dat, "w");
    if (!f) {
        fprintf(stderr, "tirc: cannot write %s: %s\n", dat, strerror(errno));
        return false;
    }
    fprintf(f, "trial,best_ms,best_x_cublas\n");
    for (int i = 0; i < r->trials && i < r->curve_cap; i++)
        fprintf(f, "%d,%.6f,%.4f\n", i + 1, r->curve[i], r->cublas_ms / r->curve[i]);
    if (fclose(f) != 0) {
        fprintf(stderr, "tirc: cannot write %s: %s\n", dat, strerror(errno));
        return false;
    }
    if (!(f = fopen(gp, "w"))) {
        fprintf(stderr, "tirc: cannot write %s: %s\n", gp, strerror(errno));
        return false;
    }
    bool svg = !strcmp(o->plot + len - 4, ".svg");
    fprintf(f,
            "set terminal %s size 800,480\nset output '%s'\nset datafile separator ','\n"
            "set xlabel 'trials'\nset ylabel 'best so far, x cuBLAS'\nset key off\nset grid\n"
            "plot '%s' every ::1 using 1:3 with steps lw 2\n",
            svg ? "svg" : "pngcairo", o->plot, dat);
    fclose(f);
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr, "tirc: gnuplot is not installed: wrote %s and %s\n", dat, gp);
        return true;
    }
    snprintf(cmd, sizeof cmd, "gnuplot '%s'", gp);
    if (system(cmd) != 0) {
        fprintf(stderr, "tirc: gnuplot failed on %s (data in %s)\n", gp, dat);
        return false;
    }
    fprintf(stderr, "tirc: wrote %s (data %s)\n", o->plot, dat);
    return true;
}

/* tune --replay: the search over the database's recorded measurements of
 * the task, no GPU; prints the best, the best-so-far curve (GFLOP/s after
 * each trial, 0 before a success) and the model's CPU time. */
static int cmd_replay(tir_ctx *ctx, const opts *o) {
    tir_tune_db *db = NULL;
    tir_tune_task t = task_of(o, o->M, o->N, o->K);
    tir_tune_opts to = {.trials = o->trials, .seed = o->seed_given ? o->seed : 1,
                        .model = o->model, .no_default = o->no_default};
    tir_tune_result r;
    memset(&r, 0, sizeof r);
    tir_status st = tir_tune_db_open(ctx, o->replay, &db);
    if (st == TIR_OK)
        st = tir_tune_replay(ctx, db, NULL, o->replay_nsm ? o->replay_nsm : 132, &t, &to, &r);
    tir_tune_db_close(db);
    if (st != TIR_OK) {
        fprintf(stderr, "tirc: tune --replay: %s\n", tir_ctx_error(ctx));
        tir_tune_result_free(&r);
        return EXIT_RUNTIME;
    }
    printf("replay %s %lldx%lldx%lld model %s seed %llu: pool %d, %d trials (%d failed)\n",
           tir_tune_op_name(t.op), (long long)t.M, (long long)t.N, (long long)t.K,
           tir_tune_model_name(r.model), (unsigned long long)to.seed, r.space_size, r.trials,
           r.failed);
    printf("best %.4f ms = %.1f GFLOP/s: %s\n", r.best_ms, r.best_gflops, r.best_decisions);
    printf("model: %d fits, %.2f ms CPU fitting, %.2f ms CPU fitting and ranking\n", r.model_fits,
           r.model_fit_ms, r.model_ms);
    printf("curve:");
    for (int i = 0; i < r.trials && i < r.curve_cap; i++)
        printf(" %.1f", isfinite(r.curve[i]) ? gflops_per_ms(&t) / r.curve[i] : 0.0);
    printf("\n");
    tir_tune_result_free(&r);
    return EXIT_OK;
}

/* The default model (auto) is XGBoost where libxgboost loads and kNN
 * otherwise; say so when it will be kNN, and why, since the two do not
 * search alike (docs/tuning.md; the GPU runs 122-139 fell back unseen,
 * their pack's libxgboost lacking its libdmlc). */
static void note_auto_model(const opts *o) {
    if (o->model != TIR_TUNE_MODEL_AUTO) return;
    tir_ctx *c = tir_ctx_create();
    if (c && tir_tune_xgb_available(c) != TIR_OK)
        fprintf(stderr, "tirc: tune: cost model kNN, not XGBoost (%s)\n", tir_ctx_error(c));
    tir_ctx_destroy(c);
}

int tirc_cmd_tune(tir_ctx *ctx, const opts *o) {
    note_auto_model(o);
    if (o->replay) return cmd_replay(ctx, o);
    gpu g;
    int rc = tirc_gpu_open(ctx, &g, true);
    if (rc != EXIT_OK) return rc;
    tir_tune_db *db = NULL;
    if (o->db && tir_tune_db_open(ctx, o->db, &db) != TIR_OK) {
        fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
        tir_rt_device_destroy(g.dev);
        return EXIT_RUNTIME;
    }
    tir_tune_task t = task_of(o, o->M, o->N, o->K);
    double seconds = o->minutes * 60;
    tir_tune_opts to = {.trials = o->trials, .seconds = seconds, .threads = o->threads,
                        .runs = o->runs, .seed = o->seed_given ? o->seed : (uint64_t)time(NULL),
                        .db = db, .progress = progress, .user = &seconds, .ngpus = o->gpus,
                        .model = o->model, .no_default = o->no_default};
    char ngpus[16] = "all", limit[48] = "no time limit";
    if (o->gpus_given) snprintf(ngpus, sizeof ngpus, "%d", o->gpus);
    /* "%.1f min" once said "0.0 min" both without --minutes and for 0.02 */
    if (o->minutes > 0) snprintf(limit, sizeof limit, "at most %g min", o->minutes);
    fprintf(stderr, "tirc: tuning %s %lldx%lldx%lld%s %s on %s (GPUs: %s): at most %d trials, "
            "%s, %d threads, seed %llu\n",
            tir_tune_op_name(t.op), (long long)t.M, (long long)t.N, (long long)t.K,
            t.op == TIR_TUNE_BATCH_MATMUL ? " (batched)" : "", tir_rt_gemm_kind_name(t.kind),
            g.props->name, ngpus, to.trials, limit, to.threads, (unsigned long long)to.seed);
    tir_tune_result r;
    tir_status st = tir_tune(ctx, g.dev, &t, &to, &r);
    fprintf(stderr, "\n");
    for (int k = 0; k < r.ngpus; k++) /* a GPU whose worker stopped while the others went on */
        if (r.gpus[k].error[0])
            fprintf(stderr, "tirc: tune: GPU %d (%s): %s\n", r.gpus[k].ordinal, r.gpus[k].name,
                    r.gpus[k].error);
    if (st != TIR_OK) {
        fprintf(stderr, "tirc: tune: %s\n", tir_ctx_error(ctx));
        rc = EXIT_RUNTIME;
    } else {
        printf("task %s %lldx%lldx%lld batch %lld %s: space %d, %d trials (%d failed) in %.1f s, "
               "model %s\n",
               tir_tune_op_name(t.op), (long long)t.M, (long long)t.N, (long long)t.K,
               (long long)t.batch, tir_rt_gemm_kind_name(t.kind), r.space_size, r.trials,
               r.failed, r.seconds, tir_tune_model_name(r.model));
        printf("best %.4f ms = %.1f GFLOP/s; cuBLAS %.4f ms = %.1f GFLOP/s; %.3fx cuBLAS; "
               "%d registers; rel. error %.2e\n",
               r.best_ms, r.best_gflops, r.cublas_ms, r.cublas_gflops, r.cublas_ms / r.best_ms,
               r.best_regs, r.best_rel_err);
        printf("decisions: %s\n", r.best_decisions);
        for (int k = 0; k < r.ngpus; k++)
            if (r.gpus[k].cublas_host_bound)
                fprintf(stderr,
                        "tirc: warning: GPU %d: the host queued cuBLAS's samples more slowly "
                        "than the GPU ran them, even behind the bench's hold; its time may "
                        "include host gaps\n",
                        r.gpus[k].ordinal);
        for (int k = 0; r.ngpus > 1 && k < r.ngpus; k++)
            printf("GPU %d (%s): %d trials (%d failed), cuBLAS %.4f ms%s\n", r.gpus[k].ordinal,
                   r.gpus[k].name, r.gpus[k].trials, r.gpus[k].failed, r.gpus[k].cublas_ms,
                   k == r.best_gpu ? ", measured the best" : "");
        if (o->trace) printf("trace:\n%s\n", r.best_trace);
        if (r.db_error[0]) fprintf(stderr, "tirc: database: %s\n", r.db_error);
        if (!write_curve(o, &r)) rc = EXIT_USAGE;
    }
    tir_tune_result_free(&r);
    tir_tune_db_close(db);
    tir_rt_device_destroy(g.dev);
    return rc;
}

/* The tuned schedule of f for bench --db: the database's best for this
 * GPU under the task's key (a tensor-core kind's own), or the rule's
 * default when there is none (*tuned says which). */
tir_status tirc_tuned_schedule(tir_ctx *ctx, const opts *o, const tir_prim_func *f,
                               tir_schedule **out, bool *tuned) {
    *tuned = false;
    /* the shape from a scratch schedule (get_block is traced; *out must
     * stay fresh for the replay) */
    int64_t M, N, K;
    tir_status st = tir_sched_create(ctx, f, out);
    if (st == TIR_OK) st = sgemm_shape(*out, &M, &N, &K);
    tir_sched_destroy(*out);
    *out = NULL;
    if (st != TIR_OK || (st = tir_sched_create(ctx, f, out)) != TIR_OK) return st;
    const char *key = NULL;
    tir_tune_task t = task_of(o, M, N, K);
    st = tir_tune_task_key(ctx, &t, &key);
    tir_tune_db *db = NULL;
    if (st == TIR_OK && o->db && o->target_given) {
        st = tir_tune_db_open(ctx, o->db, &db);
        if (st == TIR_OK) {
            tir_tune_record used;
            st = tir_tune_apply_best_key(ctx, db, &o->target, key, *out, &used);
            *tuned = st == TIR_OK;
            if (*tuned)
                fprintf(stderr, "tirc: %s: tuned record %lld (%s), %.4f ms when tuned\n",
                        used.workload, (long long)used.id, used.decisions, used.median_ms);
            if (st == TIR_ERR_TUNE_NO_RECORD) st = TIR_OK;
        }
        tir_tune_db_close(db);
    }
    if (st == TIR_OK && !*tuned) {
        int nsm = o->nsm > 0 ? o->nsm : 132;
        if (tir_tune_task_tc(&t)) {
            tir_tc_config c = tir_tune_tc_default(&t, nsm);
            st = tir_tune_tc_tiling(*out, "C", &c, NULL, NULL);
        } else {
            tir_tile_config c = tir_tune_default(&t, nsm);
            st = tir_tune_tiling(*out, "C", &c, NULL, NULL);
        }
    }
    if (st != TIR_OK) {
        tir_sched_destroy(*out);
        *out = NULL;
    }
    return st;
}
