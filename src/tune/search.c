/* search.c: tir_tune, the search over the tiling rule's design space
 * (or the tensor-core rule's, for a tensor-core task: a point of the
 * space is an index either way; the prior, features, knob distance and
 * decisions text look at the rule's configuration).
 *
 * Rounds of: pick candidates, compile them in parallel, measure them on
 * the GPUs (one measuring worker per GPU, each taking the next compiled
 * candidate when it is free), record every one in the database.  The first
 * round is the rule-based default (tir_tune_default) and random points of
 * the space; every later round takes mutations of the best measured
 * candidates (one knob changed) and random points, ranks them with the
 * cost model and measures the best-ranked (plus a few random ones, so that
 * the model's blind spots get measured too).  Every new best is verified
 * against cuBLAS's result before it counts.
 *
 * The cost model is deliberately small: an analytic prior (how evenly the
 * blocks fill the GPU's waves, how much of the padded tile is real work,
 * the work per thread) times a correction learned from the measured
 * candidates nearest in knob space (inverse-distance-weighted k nearest
 * neighbours of measured/prior).  It needs no training library and is
 * refitted for free after every measurement.  The alternatives
 * (tir_tune_opts.model): XGBoost's gradient-boosted trees over the same
 * features and the prior (xgb.c), refitted once per round, or none
 * (uniformly random points).  tir_tune_replay runs the same search over
 * recorded measurements instead of the GPU (replay.c), to compare them.
 *
 * Threads: compile workers each create their own tir_ctx (contexts are
 * not shared between threads; schedule, lower and codegen keep no other
 * mutable global state except LLVM's loop strength reduction switch,
 * which codegen guards).  Each measuring GPU has a worker with its own
 * tir_ctx, device handle (its primary context; the runtime makes it
 * current on the calling thread at every call, so a handle may move
 * between threads but is never used by two at once), cuBLAS handle and
 * session; with one GPU it measures on the calling thread.  What the
 * workers share (the samples, the result, the database handle, the
 * progress callback) is behind one lock, never held across GPU work.
 * Candidates are compared by their speed against the cuBLAS time of
 * their own GPU, so that two GPUs of slightly different clocks merge.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ir/ir_internal.h"
#include "measure.h"
#include "model.h"

/* ------------------------------------------------------------ random */

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int rng_below(uint64_t *s, int n) { return (int)(rng_next(s) % (uint64_t)n); }

/* -------------------------------------------------------- cost model */

static double bm_of(const tir_tile_config *c) { return (double)c->warps_m * c->threads_m * c->tm; }
static double bn_of(const tir_tile_config *c) { return (double)c->warps_n * c->threads_n * c->tn; }

/* The analytic prior: relative throughput from wave quantisation,
 * padding waste and the thread tile's arithmetic intensity. */
static double prior_f32(const tir_tune_task *t, int nsm, const tir_tile_config *c) {
    double bm = bm_of(c), bn = bn_of(c);
    double gm = ceil((double)t->M / bm), gn = ceil((double)t->N / bn);
    double batch = t->op == TIR_TUNE_BATCH_MATMUL ? (double)t->batch : 1.0;
    double blocks = gm * gn * batch * c->splitk;
    int threads = tir_tile_config_threads(c);
    /* resident blocks per SM: registers (about 2 per accumulator plus
     * fragments and addresses) and threads */
    double regs = 2.0 * c->tm * c->tn + 2.0 * (c->tm + c->tn) + 40;
    double per_sm = floor(65536.0 / (regs * threads));
    double by_threads = floor(2048.0 / threads);
    if (by_threads < per_sm) per_sm = by_threads;
    /* a multistage pipeline's versions may fill shared memory (one
     * version never binds first: at most 48 KiB, four blocks; left out so
     * that the prior of the space without stages is what the replays of
     * docs/tuning.md measured) */
    double by_shared = floor(228.0 * 1024 / (double)tir_tile_config_shared_bytes(c, 4));
    if (c->stages >= 2 && by_shared < per_sm) per_sm = by_shared;
    if (per_sm < 1) per_sm = 1;
    double slots = per_sm * nsm;
    double waves = ceil(blocks / slots);
    double wave_eff = blocks / (waves * slots);
    double pad_eff = ((double)t->M * t->N) / (gm * bm * gn * bn);
    double intensity = (c->tm * c->tn) / (double)(c->tm + c->tn) / 4.0; /* 1 at 8x8 */
    double occ = per_sm * threads / 2048.0;
    double latency = occ < 0.125 ? occ / 0.125 : 1.0;
    double split_cost = c->splitk > 1 ? 0.9 : 1.0;
    return wave_eff * pad_eff * (intensity < 1 ? intensity : 1) * latency * split_cost + 1e-6;
}

/* The tensor-core prior: the same waves and padding, resident blocks
 * limited by shared memory too, the warp tile's intensity (1 at 64 x 32)
 * and enough warps per SM to hide the pipeline's latency. */
static double prior_tc(const tir_tune_task *t, int nsm, const tir_tc_config *c) {
    double gm = ceil((double)t->M / c->bm), gn = ceil((double)t->N / c->bn);
    int threads = tir_tc_config_threads(c);
    double wm = (double)c->bm / c->warps_m, wn = (double)c->bn / c->warps_n;
    double regs = wm * wn / 32 + 64;
    double per_sm = floor(65536.0 / (regs * threads));
    double by_threads = floor(2048.0 / threads);
    int eb = t->kind == TIR_RT_GEMM_TF32 ? 4 : 2;
    double by_shared = floor(228.0 * 1024 / (double)tir_tc_config_shared_bytes(c, eb));
    if (by_threads < per_sm) per_sm = by_threads;
    if (by_shared < per_sm) per_sm = by_shared;
    if (per_sm < 1) per_sm = 1;
    double split = c->splitk > 1 ? c->splitk : 1;
    double blocks = gm * gn * split, slots = per_sm * nsm;
    double wave_eff = blocks / (ceil(blocks / slots) * slots);
    double pad_eff = ((double)t->M * t->N) / (gm * c->bm * gn * c->bn);
    double intensity = wm * wn / (wm + wn) / (64.0 * 32 / 96);
    double warps = per_sm * threads / 32.0;
    double latency = warps < 8 ? warps / 8 : 1.0;
    /* split-K: the partial sums' round trip and the second kernel (the
       float32 prior's 0.9) */
    double split_cost = split > 1 ? 0.9 : 1.0;
    return wave_eff * pad_eff * (intensity < 1 ? intensity : 1) * latency * split_cost + 1e-6;
}

static bool is_tc(const tir_tune_space *sp) { return sp->tc_configs != NULL; }

static double prior(const tir_tune_task *t, int nsm, const tir_tune_space *sp, int i) {
    return is_tc(sp) ? prior_tc(t, nsm, &sp->tc_configs[i]) : prior_f32(t, nsm, &sp->configs[i]);
}

enum { NFEAT = 11 };
static void features(const tir_tune_space *sp, int i, double *f) {
    if (is_tc(sp)) {
        const tir_tc_config *c = &sp->tc_configs[i];
        f[0] = log2((double)c->bm), f[1] = log2((double)c->bn), f[2] = log2((double)c->bk);
        f[3] = log2((double)c->warps_m), f[4] = log2((double)c->warps_n);
        f[5] = c->stages - 2, f[6] = c->async_copy ? 1 : 0, f[7] = c->pad / 8.0, f[8] = 0;
        f[9] = c->splitk > 1 ? log2((double)c->splitk) : 0; /* 0 without: distances as before */
        f[10] = 0;
        return;
    }
    const tir_tile_config *c = &sp->configs[i];
    f[0] = log2(bm_of(c)), f[1] = log2(bn_of(c)), f[2] = log2((double)c->bk);
    f[3] = log2((double)c->tm), f[4] = log2((double)c->tn);
    f[5] = log2((double)tir_tile_config_threads(c)), f[6] = c->staging ? 1 : 0;
    /* gvec adds 0.25 (0 where N is not ragged: the distances stay) */
    f[7] = log2((double)c->splitk), f[8] = (c->lsr ? 0.5 : 0) + (c->gvec ? 0.25 : 0);
    /* 0 without a multistage pipeline (so that distances between such
     * points are what they were), 1 at 3 stages, 1.5 at 4 */
    f[9] = c->stages >= 2 ? (c->stages - 1) / 2.0 : 0;
    /* dunroll: 0.5, as lsr (0 without: the distances between points
     * without it stay what they were) */
    f[10] = c->dunroll ? 0.5 : 0;
}

/* Point i of the space's decisions as text (what a record stores). */
static void config_text(const tir_tune_space *sp, int i, char *buf, size_t cap) {
    if (is_tc(sp))
        tir_tc_config_text(&sp->tc_configs[i], buf, cap);
    else
        tir_tile_config_text(&sp->configs[i], buf, cap);
}

typedef struct sample {
    int idx;     /* into the space */
    double gflops; /* 0 for a failed candidate */
} sample;

/* Predicted GFLOP/s of c: prior x the k nearest measured ratios. */
static double predict(const tir_tune_task *t, int nsm, const tir_tune_space *sp,
                      const sample *ms, int nm, int c) {
    double p = prior(t, nsm, sp, c);
    if (nm == 0) return p;
    double fc[NFEAT], best_d[4] = {INFINITY, INFINITY, INFINITY, INFINITY}, best_r[4] = {0};
    features(sp, c, fc);
    for (int i = 0; i < nm; i++) {
        double fm[NFEAT], d = 0;
        features(sp, ms[i].idx, fm);
        for (int k = 0; k < NFEAT; k++) d += (fc[k] - fm[k]) * (fc[k] - fm[k]);
        double r = ms[i].gflops / prior(t, nsm, sp, ms[i].idx);
        for (int k = 0; k < 4; k++)
            if (d < best_d[k]) {
                for (int m = 3; m > k; m--) best_d[m] = best_d[m - 1], best_r[m] = best_r[m - 1];
                best_d[k] = d, best_r[k] = r;
                break;
            }
    }
    double wsum = 0, rsum = 0;
    for (int k = 0; k < 4; k++)
        if (isfinite(best_d[k])) {
            double w = 1.0 / (best_d[k] + 0.05);
            wsum += w, rsum += w * best_r[k];
        }
    return p * (wsum > 0 ? rsum / wsum : 1.0);
}

/* How many knobs differ between a and b. */
static int tc_distance(const tir_tc_config *a, const tir_tc_config *b) {
    return (a->bm != b->bm) + (a->bn != b->bn) + (a->bk != b->bk) + (a->warps_m != b->warps_m) +
           (a->warps_n != b->warps_n) + (a->stages != b->stages) +
           (a->async_copy != b->async_copy) + (a->pad != b->pad);
}

/* The pipeline as one knob: none, register staging, or S stages (a
 * multistage pipeline replaces staging, so one mutation moves between
 * any two of them). */
static int pipe_of(const tir_tile_config *c) {
    return c->stages >= 2 ? c->stages : c->staging ? 1 : 0;
}

static int knob_distance(const tir_tile_config *a, const tir_tile_config *b) {
    return (a->warps_m != b->warps_m) + (a->warps_n != b->warps_n) +
           (a->threads_m != b->threads_m) + (a->tm != b->tm) + (a->tn != b->tn) +
           (a->bk != b->bk) + (pipe_of(a) != pipe_of(b)) + (a->splitk != b->splitk) +
           (a->lsr != b->lsr) + (a->gvec != b->gvec) + (a->dunroll != b->dunroll);
}

/* How many knobs differ between points a and b of the space. */
static int point_distance(const tir_tune_space *sp, int a, int b) {
    return is_tc(sp) ? tc_distance(&sp->tc_configs[a], &sp->tc_configs[b])
                     : knob_distance(&sp->configs[a], &sp->configs[b]);
}

/* The rule-based default's index in the space (-1: not in it). */
static int default_point(const tir_tune_space *sp, const tir_tune_task *t, int nsm) {
    tir_tile_config d = tir_tune_default(t, nsm);
    tir_tc_config dt = tir_tune_tc_default(t, nsm);
    for (int j = 0; j < sp->n; j++)
        if (is_tc(sp) ? tc_distance(&sp->tc_configs[j], &dt) == 0
                      : knob_distance(&sp->configs[j], &d) == 0 && sp->configs[j].vec == d.vec)
            return j;
    return -1;
}

/* A random point of the space one knob away from parent (or parent). */
static int mutate(const tir_tune_space *sp, int parent, uint64_t *rng) {
    int seen = 0, pick = parent;
    for (int j = 0; j < sp->n; j++)
        if (point_distance(sp, j, parent) == 1 &&
            rng_below(rng, ++seen) == 0)
            pick = j; /* reservoir sampling */
    return pick;
}

/* ------------------------------------------------- parallel compiling */

typedef struct job {
    const tir_tune_task *task;
    const char *arch;
    const tir_tune_space *sp;
    int idx;             /* the candidate: a point of sp */
    tir_ctx *ctx;        /* the worker's, kept until measured */
    tir_module_set ms;
    char *trace;         /* heap */
    tir_status st;
    double compile_ms;
} job;

typedef struct pool {
    job *jobs;
    int n;
    int next;
    pthread_mutex_t lock;
} pool;

static void compile_one(job *j) {
    double t0 = ir_now_ms();
    j->ctx = tir_ctx_create();
    if (!j->ctx) {
        j->st = TIR_ERR_NOMEM;
        return;
    }
    const tir_prim_func *f = tir_tune_task_func(j->ctx, j->task);
    tir_schedule *s = NULL;
    j->st = f ? tir_sched_create(j->ctx, f, &s) : TIR_ERR_INVALID_ARG;
    if (j->st == TIR_OK)
        j->st = is_tc(j->sp) ? tir_tune_tc_tiling_sampled(s, "C", &j->sp->tc_configs[j->idx], NULL)
                             : tir_tune_tiling_sampled(s, "C", &j->sp->configs[j->idx], NULL);
    if (j->st == TIR_OK) j->trace = strdup(tir_sched_trace_text(s));
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.arch = j->arch;
    if (j->st == TIR_OK) j->st = tir_build_kernels(j->ctx, tir_sched_func(s), &o, &j->ms);
    tir_sched_destroy(s);
    j->compile_ms = ir_now_ms() - t0;
}

static void *worker(void *arg) {
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        int i = p->next < p->n ? p->next++ : -1;
        pthread_mutex_unlock(&p->lock);
        if (i < 0) return NULL;
        compile_one(&p->jobs[i]);
    }
}

/* Compiles jobs[0..n) on `threads` threads. */
static void compile_all(job *jobs, int n, int threads) {
    pool p = {jobs, n, 0, PTHREAD_MUTEX_INITIALIZER};
    if (threads > n) threads = n;
    pthread_t tid[64];
    int started = 0;
    for (int i = 0; i < threads && i < 64; i++)
        if (pthread_create(&tid[i], NULL, worker, &p) == 0) started++;
    if (started == 0) worker(&p); /* no threads: compile here */
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
}

static void job_free(job *j) {
    tir_ctx_destroy(j->ctx);
    free(j->trace);
    memset(j, 0, sizeof *j);
}

/* ---------------------------------------------------------- the search */

/* One measuring GPU: its own device handle, tir_ctx and session.  Its
 * fields are written by its worker thread only, except the statistics in
 * res->gpus[i], which are written under the search's lock. */
typedef struct gpu_worker {
    int i;                /* index into workers and res->gpus */
    tir_rt_device *dev;
    bool own_dev;         /* opened by the tuner (not the caller's dev) */
    tir_ctx *ctx;
    tune_gpu g;
    bool open;            /* g is a live session */
    bool stopped;         /* a CUDA error lost its context */
    tir_status st;        /* of opening */
    tir_tune_target target;
    struct state *S;
} gpu_worker;

typedef struct state {
    tir_ctx *ctx;
    const tir_tune_task *task;
    const tir_tune_opts *o;
    tir_tune_model model; /* o's, AUTO resolved */
    tir_tune_space sp;
    int nsm;
    sample *ms;       /* measured, in order */
    int nm;
    char *tried;      /* per space index: compiled or measured already */
    uint64_t rng;
    const char *workload;
    tir_tune_result *res;
    double t0;
    int started;      /* candidates handed to a worker */
    int done;         /* candidates measured */
    double best_x;    /* the best's cuBLAS time / its median, on its GPU (0: none) */
    gpu_worker w[TIR_TUNE_MAX_GPUS];
    int nw;
    const tune_pool *replay; /* tir_tune_replay: the recorded pool (sp is its space) */
    /* the round being measured */
    job *jobs;
    const int *idx;
    int njobs, next;
    pthread_mutex_t lock; /* guards the above, res, ms, the database and progress */
} state;

static double gflops_of(const tir_tune_task *t, double ms) {
    double b = t->op == TIR_TUNE_BATCH_MATMUL ? (double)t->batch : 1.0;
    return 2.0 * b * (double)t->M * (double)t->N * (double)t->K / ms / 1e6;
}

/* Under the lock: the record of one candidate, on the target of the GPU
 * that measured it. */
static void record(state *S, gpu_worker *w, const job *j, const tune_meas *m, const char *err) {
    if (!S->o->db) return;
    char dec[256];
    config_text(j->sp, j->idx, dec, sizeof dec);
    tir_tune_record r;
    tir_tune_record_init(&r);
    r.workload = S->workload, r.target = w->target;
    r.trace = j->trace ? j->trace : "";
    r.decisions = dec;
    r.median_ms = m ? m->median_ms : NAN;
    r.gflops = m && isfinite(m->median_ms) ? gflops_of(S->task, m->median_ms) : NAN;
    r.error = err;
    r.compile_ms = j->compile_ms + (m ? m->jit_ms : 0);
    bool added;
    /* a database error must not lose the search: report it once */
    if (tir_tune_db_add(w->ctx, S->o->db, &r, &added) != TIR_OK && !S->res->db_error[0])
        snprintf(S->res->db_error, sizeof S->res->db_error, "%s", tir_ctx_error(w->ctx));
    tir_ctx_clear_error(w->ctx);
}

/* The most candidates the search can measure: the trial cap, or the
 * space where smaller (each point is measured once): the progress's
 * max_trials, from which tirc's ETA is drawn (a cap of 100000 on a space
 * of 1096 once showed an ETA for 100000 trials). */
static int max_trials(const state *S) {
    return S->sp.n < S->o->trials ? S->sp.n : S->o->trials;
}

/* Under the lock: a measured candidate (err NULL: it ran; x its speed
 * against its GPU's cuBLAS) joins the samples, the curve and the
 * counts, and the progress callback hears of it. */
static void merge(state *S, gpu_worker *w, const job *j, int idx, const tune_meas *m,
                  const char *err) {
    tir_tune_result *res = S->res;
    tir_tune_gpu_stats *gs = &res->gpus[w->i];
    record(S, w, j, err ? NULL : m, err);
    /* The cost model sees every GPU on the first one's scale. */
    double g = err ? 0.0
                   : gflops_of(S->task, m->median_ms) * (gs->cublas_ms / res->gpus[0].cublas_ms);
    S->ms[S->nm++] = (sample){idx, g};
    S->done++, gs->trials++;
    if (err) res->failed++, gs->failed++;
    if (S->done <= res->curve_cap) res->curve[S->done - 1] = res->best_ms;
    res->trials = S->done;
    res->best_gflops = isfinite(res->best_ms) ? gflops_of(S->task, res->best_ms) : 0;
    if (S->o->progress) {
        tir_tune_progress p = {S->done, res->failed, res->best_gflops, res->cublas_gflops,
                               (ir_now_ms() - S->t0) / 1e3, max_trials(S), S->nw, {0}};
        for (int k = 0; k < S->nw; k++) p.gpu_trials[k] = res->gpus[k].trials;
        S->o->progress(S->o->user, &p);
    }
}

/* Under the lock: m (verified) becomes the best if it still beats it. */
static void take_best(state *S, gpu_worker *w, const job *j, const tune_meas *m,
                      const tune_meas *v) {
    tir_tune_result *res = S->res;
    double x = res->gpus[w->i].cublas_ms / m->median_ms;
    if (x <= S->best_x) return;
    S->best_x = x;
    res->best_ms = m->median_ms, res->best_regs = m->regs;
    if (is_tc(j->sp))
        res->best_tc = j->sp->tc_configs[j->idx];
    else
        res->best = j->sp->configs[j->idx];
    config_text(j->sp, j->idx, res->best_decisions, sizeof res->best_decisions);
    res->best_rel_err = v->rel_err, res->best_gpu = w->i;
    res->cublas_ms = res->gpus[w->i].cublas_ms;
    res->cublas_gflops = gflops_of(S->task, res->cublas_ms);
    free(res->best_trace);
    res->best_trace = strdup(j->trace);
}

/* Measures one compiled job on w's GPU (the lock not held) and merges the
 * result.  Returns TIR_ERR_CUDA when the GPU's context is lost. */
static tir_status measure_job(state *S, gpu_worker *w, job *j, int idx) {
    tir_status st = TIR_OK;
    tune_meas m = {0};
    m.median_ms = NAN;
    const char *err = NULL;
    char msg[512];
    if (j->st != TIR_OK) {
        snprintf(msg, sizeof msg, "compile: %.400s", tir_ctx_error(j->ctx));
        err = msg;
    } else if ((st = tune_gpu_measure(w->ctx, &w->g, &j->ms, false, &m)) != TIR_OK) {
        snprintf(msg, sizeof msg, "measure: %.400s", tir_ctx_error(w->ctx));
        err = msg;
    }
    pthread_mutex_lock(&S->lock);
    bool better = !err && S->res->gpus[w->i].cublas_ms / m.median_ms > S->best_x;
    pthread_mutex_unlock(&S->lock);
    tune_meas v;
    if (better) { /* a new best counts only once verified, on the GPU that measured it */
        if ((st = tune_gpu_measure(w->ctx, &w->g, &j->ms, true, &v)) != TIR_OK) {
            snprintf(msg, sizeof msg, "verify: %.400s", tir_ctx_error(w->ctx));
            err = msg;
        }
    }
    tir_ctx_clear_error(w->ctx);
    pthread_mutex_lock(&S->lock);
    if (better && err) S->res->verify_failures++;
    if (better && !err) take_best(S, w, j, &m, &v);
    merge(S, w, j, idx, &m, err);
    /* A CUDA error (an illegal address, a launch failure) leaves the
     * context unusable: every later candidate would fail there too, so
     * this GPU's worker stops and says which candidate it was. */
    if (st == TIR_ERR_CUDA)
        snprintf(S->res->gpus[w->i].error, sizeof S->res->gpus[w->i].error,
                 "stopped after trial %d: the CUDA context is lost (%.440s)", S->done, msg);
    pthread_mutex_unlock(&S->lock);
    return st == TIR_ERR_CUDA ? st : TIR_OK;
}

static bool out_of_budget(const state *S) {
    return S->started >= S->o->trials ||
           (S->o->seconds > 0 && (ir_now_ms() - S->t0) / 1e3 >= S->o->seconds);
}

/* A GPU's worker: takes the round's next compiled job while there is one
 * and budget left, until its context is lost. */
static void *measure_worker(void *arg) {
    gpu_worker *w = arg;
    state *S = w->S;
    for (;;) {
        pthread_mutex_lock(&S->lock);
        int i = S->next < S->njobs && !out_of_budget(S) ? S->next++ : -1;
        if (i >= 0) S->started++;
        pthread_mutex_unlock(&S->lock);
        if (i < 0) return NULL;
        if (measure_job(S, w, &S->jobs[i], S->idx[i]) == TIR_ERR_CUDA) {
            w->stopped = true;
            return NULL;
        }
    }
}

/* Measures the round's jobs on every GPU whose worker is still going:
 * one thread per GPU (on the calling thread when there is one GPU). */
static void measure_all(state *S, job *jobs, const int *idx, int n) {
    S->jobs = jobs, S->idx = idx, S->njobs = n, S->next = 0;
    pthread_t tid[TIR_TUNE_MAX_GPUS];
    bool started[TIR_TUNE_MAX_GPUS] = {false};
    int live = 0;
    for (int k = 0; k < S->nw; k++) live += !S->w[k].stopped;
    for (int k = 0; k < S->nw; k++) {
        if (S->w[k].stopped) continue;
        if (live == 1 || pthread_create(&tid[k], NULL, measure_worker, &S->w[k]) != 0)
            measure_worker(&S->w[k]); /* one GPU, or no thread: measure here */
        else
            started[k] = true;
    }
    for (int k = 0; k < S->nw; k++)
        if (started[k]) pthread_join(tid[k], NULL);
}

/* Whether every worker has stopped; then ctx gets the reason. */
static tir_status all_stopped(state *S) {
    char why[1024] = "";
    size_t len = 0;
    for (int k = 0; k < S->nw; k++) {
        if (!S->w[k].stopped) return TIR_OK;
        if (S->nw > 1 && len < sizeof why)
            len += (size_t)snprintf(why + len, sizeof why - len, "%sGPU %d: %s", k ? "; " : "",
                                    S->res->gpus[k].ordinal, S->res->gpus[k].error);
    }
    if (S->nw == 1) return tir_ctx_fail(S->ctx, TIR_ERR_CUDA, "tune: %s", S->res->gpus[0].error);
    return tir_ctx_fail(S->ctx, TIR_ERR_CUDA, "tune: every GPU stopped (%s)", why);
}

/* ------------------------------------------------------ the models */

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

enum { NXFEAT = NFEAT + 1 };

/* Point i's XGBoost features: the kNN's knob features and the prior's
 * logarithm (what the analytic model knows, for the trees to correct). */
static void xgb_features(const state *S, int i, float *x) {
    double f[NFEAT];
    features(&S->sp, i, f);
    for (int k = 0; k < NFEAT; k++) x[k] = (float)f[k];
    x[NFEAT] = (float)log(prior(S->task, S->nsm, &S->sp, i));
}

/* XGBoost fitted to the samples, labelled with log throughput relative to
 * the best (a failed candidate as 1% of the best); *out NULL while none
 * has run. */
static tir_status xgb_fit(state *S, tune_xgb **out) {
    *out = NULL;
    double gmax = 0;
    for (int i = 0; i < S->nm; i++)
        if (S->ms[i].gflops > gmax) gmax = S->ms[i].gflops;
    if (gmax <= 0) return TIR_OK;
    float *x = malloc((size_t)S->nm * NXFEAT * sizeof *x), *y = malloc((size_t)S->nm * sizeof *y);
    tir_status st = x && y ? TIR_OK : tir_ctx_fail(S->ctx, TIR_ERR_NOMEM, "tune: out of memory");
    for (int i = 0; st == TIR_OK && i < S->nm; i++) {
        xgb_features(S, S->ms[i].idx, x + (size_t)i * NXFEAT);
        y[i] = (float)log(fmax(S->ms[i].gflops, 0.01 * gmax) / gmax);
    }
    double t0 = cpu_ms();
    if (st == TIR_OK) st = tune_xgb_fit(S->ctx, x, y, S->nm, NXFEAT, S->o->seed, out);
    S->res->model_fits++, S->res->model_fit_ms += cpu_ms() - t0;
    free(x);
    free(y);
    return st;
}

/* The model's predicted speed (any monotone scale, > 0) of cand[0..nc)
 * into v: kNN (prior x nearest measured ratios) or XGBoost (the prior
 * before any candidate has run). */
static tir_status score(state *S, const int *cand, int nc, double *v) {
    tune_xgb *m = NULL;
    if (S->model == TIR_TUNE_MODEL_XGB) TIR_TRY(xgb_fit(S, &m));
    if (!m) {
        for (int i = 0; i < nc; i++)
            v[i] = S->model == TIR_TUNE_MODEL_XGB
                       ? prior(S->task, S->nsm, &S->sp, cand[i])
                       : predict(S->task, S->nsm, &S->sp, S->ms, S->nm, cand[i]);
        return TIR_OK;
    }
    float *x = malloc((size_t)nc * NXFEAT * sizeof *x);
    tir_status st = x ? TIR_OK : tir_ctx_fail(S->ctx, TIR_ERR_NOMEM, "tune: out of memory");
    for (int i = 0; st == TIR_OK && i < nc; i++) xgb_features(S, cand[i], x + (size_t)i * NXFEAT);
    if (st == TIR_OK) st = tune_xgb_predict(S->ctx, m, x, nc, NXFEAT, v);
    for (int i = 0; st == TIR_OK && i < nc; i++) v[i] = exp(v[i]);
    free(x);
    tune_xgb_free(m);
    return st;
}

/* Up to n points not tried yet, uniformly, into idx (marked tried):
 * rejection sampling, then a scan once that keeps missing (a space nearly
 * measured). */
static int pick_random(state *S, int *idx, int n) {
    int np = 0;
    for (int tries = 0; np < n && tries < 4 * n; tries++) {
        int c = rng_below(&S->rng, S->sp.n);
        if (!S->tried[c]) idx[np++] = c, S->tried[c] = 1;
    }
    while (np < n) {
        int left = 0;
        for (int j = 0; j < S->sp.n; j++) left += !S->tried[j];
        if (left == 0) break;
        int k = rng_below(&S->rng, left);
        for (int j = 0; j < S->sp.n; j++)
            if (!S->tried[j] && k-- == 0) {
                idx[np++] = j, S->tried[j] = 1;
                break;
            }
    }
    return np;
}

/* The 6 best measured points into parents; their count. */
static int best_parents(const state *S, int *parents) {
    int npar = 0;
    for (int k = 0; k < 6; k++) {
        int b = -1;
        for (int i = 0; i < S->nm; i++) {
            bool used = false;
            for (int q = 0; q < npar; q++) used |= parents[q] == S->ms[i].idx;
            if (!used && S->ms[i].gflops > 0 && (b < 0 || S->ms[i].gflops > S->ms[b].gflops)) b = i;
        }
        if (b >= 0) parents[npar++] = S->ms[b].idx;
    }
    return npar;
}

/* Candidates of the next round into idx (at most n): model-ranked
 * mutations of the best and random points, a quarter random (the random
 * model: all random).  -1 when the model fails (the reason in S->ctx). */
static int pick_round(state *S, int *idx, int n) {
    int np = 0, cand[1024], nc = 0, parents[6];
    if (S->nm == 0 && !S->o->no_default) { /* the default first */
        int j = default_point(&S->sp, S->task, S->nsm);
        if (j >= 0 && n > 0) idx[np++] = j, S->tried[j] = 1;
    }
    if (S->model == TIR_TUNE_MODEL_RANDOM) return np + pick_random(S, idx + np, n - np);
    int npar = best_parents(S, parents);
    for (int r = 0; r < 256 && nc < 1024; r++) {
        int c = npar && r % 2 ? mutate(&S->sp, parents[rng_below(&S->rng, npar)], &S->rng)
                              : rng_below(&S->rng, S->sp.n);
        if (!S->tried[c]) cand[nc++] = c;
    }
    int nrand = n / 4;
    double v[1024], t0 = cpu_ms();
    tir_status st = np < n - nrand && nc > 0 ? score(S, cand, nc, v) : TIR_OK;
    S->res->model_ms += cpu_ms() - t0;
    if (st != TIR_OK) return -1;
    while (np < n - nrand) { /* best predicted */
        int b = -1;
        for (int i = 0; i < nc; i++)
            if (!S->tried[cand[i]] && (b < 0 || v[i] > v[b])) b = i;
        if (b < 0) break;
        idx[np++] = cand[b], S->tried[cand[b]] = 1;
    }
    return np + pick_random(S, idx + np, n - np);
}

/* A replayed round: each point's recorded result joins the samples, the
 * curve and the counts (the best by recorded GFLOP/s). */
static void replay_round(state *S, const int *idx, int n) {
    tir_tune_result *res = S->res;
    const tune_pool *p = S->replay;
    for (int i = 0; i < n && !out_of_budget(S); i++) {
        int c = idx[i];
        S->started++, S->done++;
        S->ms[S->nm++] = (sample){c, p->gflops[c]};
        if (p->gflops[c] <= 0) res->failed++;
        if (p->gflops[c] > res->best_gflops) {
            res->best_gflops = p->gflops[c], res->best_ms = p->median_ms[c];
            if (is_tc(&S->sp))
                res->best_tc = S->sp.tc_configs[c];
            else
                res->best = S->sp.configs[c];
            config_text(&S->sp, c, res->best_decisions, sizeof res->best_decisions);
        }
        if (S->done <= res->curve_cap) res->curve[S->done - 1] = res->best_ms;
        res->trials = S->done, res->gpus[0].trials = S->done, res->gpus[0].failed = res->failed;
        if (S->o->progress) {
            tir_tune_progress pr = {S->done, res->failed, res->best_gflops, NAN,
                                    (ir_now_ms() - S->t0) / 1e3, max_trials(S), 1, {S->done}};
            S->o->progress(S->o->user, &pr);
        }
    }
}

static tir_status run_rounds(state *S) {
    int batch = S->o->batch > 0 ? S->o->batch : 16;
    int idx[256];
    if (batch > 256) batch = 256;
    job *jobs = calloc((size_t)batch, sizeof *jobs);
    if (!jobs) return tir_ctx_fail(S->ctx, TIR_ERR_NOMEM, "tune: out of memory");
    tir_status st = TIR_OK;
    while (st == TIR_OK && !out_of_budget(S)) {
        int left = S->o->trials - S->started;
        int n = pick_round(S, idx, batch < left ? batch : left);
        if (n < 0) st = tir_ctx_error_code(S->ctx); /* the model failed */
        if (n <= 0) break;                  /* or the whole space is measured */
        if (S->replay) {
            replay_round(S, idx, n);
            continue;
        }
        for (int i = 0; i < n; i++)
            jobs[i] = (job){.task = S->task, .arch = S->w[0].g.props->arch, .sp = &S->sp,
                            .idx = idx[i]};
        compile_all(jobs, n, S->o->threads);
        measure_all(S, jobs, idx, n);
        for (int i = 0; i < n; i++) job_free(&jobs[i]);
        st = all_stopped(S);
    }
    free(jobs);
    return st;
}

/* What tir_tune and tir_tune_replay require of opts; the XGBoost model
 * needs its library before anything is measured.  *model: the model to
 * use (AUTO resolved: XGBoost where it loads, else kNN). */
static tir_status check_opts(tir_ctx *ctx, const tir_tune_opts *o, tir_tune_model *model) {
    if (o->trials < 1)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune: trials must be at least 1");
    if (o->model < TIR_TUNE_MODEL_AUTO || o->model > TIR_TUNE_MODEL_RANDOM)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune: unknown cost model %d",
                            (int)o->model);
    *model = o->model;
    if (o->model == TIR_TUNE_MODEL_AUTO)
        *model = tir_tune_xgb_available(NULL) == TIR_OK ? TIR_TUNE_MODEL_XGB : TIR_TUNE_MODEL_KNN;
    return o->model == TIR_TUNE_MODEL_XGB ? tune_xgb_load(ctx) : TIR_OK;
}

/* ------------------------------------------------------ the GPUs */

/* The ordinals to measure on into S->res->gpus: dev's first. */
static tir_status choose_gpus(state *S, tir_rt_device *dev) {
    int want = S->o->ngpus, count = 1, first = tir_rt_device_props(dev)->ordinal;
    if (want == 0) want = 1;
    if (want < 0 && want != TIR_TUNE_ALL_GPUS)
        return tir_ctx_fail(S->ctx, TIR_ERR_INVALID_ARG, "tune: ngpus %d is not a GPU count", want);
    if (want != 1) TIR_TRY(tir_rt_device_count(S->ctx, &count));
    if (want == TIR_TUNE_ALL_GPUS) want = count;
    if (want > count || want > TIR_TUNE_MAX_GPUS)
        return tir_ctx_fail(S->ctx, TIR_ERR_INVALID_ARG,
                            "tune: asks for %d GPUs but %d %s visible (and at most %d are used)",
                            want, count, count == 1 ? "is" : "are", TIR_TUNE_MAX_GPUS);
    S->nw = S->res->ngpus = want;
    for (int k = 0; k < want; k++) {
        S->w[k] = (gpu_worker){.i = k, .S = S};
        S->res->gpus[k].ordinal = (first + k) % count;
    }
    S->w[0].dev = dev;
    return TIR_OK;
}

/* A worker's device (the caller's for dev's ordinal) and session. */
static void *open_worker(void *arg) {
    gpu_worker *w = arg;
    state *S = w->S;
    tir_tune_gpu_stats *gs = &S->res->gpus[w->i];
    if (!w->dev) {
        w->st = tir_rt_device_create(w->ctx, gs->ordinal, &w->dev);
        w->own_dev = w->st == TIR_OK;
    }
    if (w->st == TIR_OK)
        w->st = tune_gpu_open(w->ctx, w->dev, S->task, S->o->runs, S->o->seed, &w->g,
                              &gs->cublas_ms, &gs->cublas_host_bound);
    w->open = w->st == TIR_OK;
    if (w->open) {
        tir_tune_target_from_props(w->g.props, &w->target);
        snprintf(gs->name, sizeof gs->name, "%s", w->g.props->name);
    }
    return NULL;
}

/* Opens every GPU's session, in parallel; the first failure (or a GPU of
 * another architecture than dev's) fails the tune, naming the GPU. */
static tir_status open_workers(state *S) {
    pthread_t tid[TIR_TUNE_MAX_GPUS];
    bool started[TIR_TUNE_MAX_GPUS] = {false};
    for (int k = 0; k < S->nw; k++)
        if (!(S->w[k].ctx = tir_ctx_create()))
            return tir_ctx_fail(S->ctx, TIR_ERR_NOMEM, "tune: out of memory");
    for (int k = 0; k < S->nw; k++) {
        if (S->nw == 1 || pthread_create(&tid[k], NULL, open_worker, &S->w[k]) != 0)
            open_worker(&S->w[k]); /* one GPU, or no thread: open here */
        else
            started[k] = true;
    }
    for (int k = 0; k < S->nw; k++)
        if (started[k]) pthread_join(tid[k], NULL);
    for (int k = 0; k < S->nw; k++) {
        gpu_worker *w = &S->w[k];
        if (w->st != TIR_OK && S->nw == 1)
            return tir_ctx_fail(S->ctx, w->st, "%s", tir_ctx_error(w->ctx));
        if (w->st != TIR_OK)
            return tir_ctx_fail(S->ctx, w->st, "tune: GPU %d: %s", S->res->gpus[k].ordinal,
                                tir_ctx_error(w->ctx));
        if (strcmp(w->target.arch, S->w[0].target.arch))
            return tir_ctx_fail(S->ctx, TIR_ERR_INVALID_ARG,
                                "tune: GPU %d (%s) is %s, GPU %d is %s: the candidates are "
                                "compiled for one architecture; tune on each kind separately",
                                S->res->gpus[k].ordinal, w->target.gpu, w->target.arch,
                                S->res->gpus[0].ordinal, S->w[0].target.arch);
    }
    return TIR_OK;
}

static void close_workers(state *S) {
    for (int k = 0; k < S->nw; k++) {
        gpu_worker *w = &S->w[k];
        if (w->open) tune_gpu_close(w->ctx, &w->g);
        if (w->own_dev) tir_rt_device_destroy(w->dev);
        tir_ctx_destroy(w->ctx);
    }
}

/* Opens the GPUs and searches. */
static tir_status search(state *S, tir_rt_device *dev) {
    tir_status st = choose_gpus(S, dev);
    if (st == TIR_OK) st = open_workers(S);
    if (st == TIR_OK) {
        S->nsm = S->w[0].g.props->sm_count;
        S->res->cublas_ms = S->res->gpus[0].cublas_ms;
        S->res->cublas_gflops = gflops_of(S->task, S->res->cublas_ms);
        S->t0 = ir_now_ms();
        st = run_rounds(S);
        S->res->seconds = (ir_now_ms() - S->t0) / 1e3;
    }
    close_workers(S);
    return st;
}

tir_status tir_tune(tir_ctx *ctx, tir_rt_device *dev, const tir_tune_task *task,
                    const tir_tune_opts *opts, tir_tune_result *res) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!dev || !task || !opts || !res)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune: no device, task, options or result");
    memset(res, 0, sizeof *res);
    res->best_ms = NAN;
    TIR_TRY(check_opts(ctx, opts, &res->model));
    state S = {.ctx = ctx, .task = task, .o = opts, .res = res, .rng = opts->seed ^ 0x5EEDull,
               .model = res->model};
    tir_target_limits lim;
    tir_rt_device_limits(dev, &lim);
    const tir_prim_func *f = tir_tune_task_func(ctx, task);
    tir_status st = f ? tir_tune_space_make(ctx, task, &lim, &S.sp) : TIR_ERR_INVALID_ARG;
    if (st == TIR_OK) st = tir_tune_task_key(ctx, task, &S.workload);
    if (st != TIR_OK) return st;
    res->space_size = S.sp.n;
    S.ms = calloc((size_t)opts->trials + 1, sizeof *S.ms);
    S.tried = calloc((size_t)S.sp.n, 1);
    res->curve_cap = opts->trials;
    res->curve = calloc((size_t)opts->trials, sizeof *res->curve);
    if (!S.ms || !S.tried || !res->curve) st = tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tune: out of memory");
    if (st == TIR_OK && pthread_mutex_init(&S.lock, NULL) != 0)
        st = tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tune: cannot create a lock");
    else if (st == TIR_OK) {
        st = search(&S, dev);
        pthread_mutex_destroy(&S.lock);
    }
    free(S.ms);
    free(S.tried);
    tir_tune_space_free(&S.sp);
    if (st == TIR_OK && !isfinite(res->best_ms))
        st = tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED,
                          "tune: none of the %d candidates measured ran correctly", res->trials);
    return st;
}

/* The search's state for a replay: the pool as the space, one "GPU". */
static tir_status replay_search(state *S, const tune_pool *pool) {
    S->replay = pool, S->sp = pool->sp;
    S->nw = S->res->ngpus = 1;
    S->res->cublas_ms = S->res->cublas_gflops = S->res->gpus[0].cublas_ms = NAN;
    S->res->space_size = pool->sp.n, S->res->curve_cap = S->o->trials;
    S->ms = calloc((size_t)S->o->trials + 1, sizeof *S->ms);
    S->tried = calloc((size_t)pool->sp.n, 1);
    S->res->curve = calloc((size_t)S->o->trials, sizeof *S->res->curve);
    tir_status st = S->ms && S->tried && S->res->curve
                        ? TIR_OK
                        : tir_ctx_fail(S->ctx, TIR_ERR_NOMEM, "tune: out of memory");
    S->t0 = ir_now_ms();
    if (st == TIR_OK) st = run_rounds(S);
    S->res->seconds = (ir_now_ms() - S->t0) / 1e3;
    free(S->ms);
    free(S->tried);
    if (st == TIR_OK && !isfinite(S->res->best_ms))
        st = tir_ctx_fail(S->ctx, TIR_ERR_UNSUPPORTED,
                          "tune replay: none of the %d recorded candidates tried ran",
                          S->res->trials);
    return st;
}

tir_status tir_tune_replay(tir_ctx *ctx, tir_tune_db *db, const tir_tune_target *target,
                           int nsm, const tir_tune_task *task, const tir_tune_opts *opts,
                           tir_tune_result *res) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!db || !task || !opts || !res)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tune replay: no database, task, options or result");
    memset(res, 0, sizeof *res);
    res->best_ms = NAN;
    TIR_TRY(check_opts(ctx, opts, &res->model));
    if (opts->db)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tune replay: opts.db must be NULL (a replay records nothing)");
    if (nsm < 1)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tune replay: nsm %d is not a multiprocessor count", nsm);
    tir_tune_opts o = *opts;
    o.seconds = 0; /* a replay is counted in trials */
    state S = {.ctx = ctx, .task = task, .o = &o, .res = res, .nsm = nsm,
               .rng = opts->seed ^ 0x5EEDull, .model = res->model};
    const char *key;
    tune_pool pool;
    TIR_TRY(tir_tune_task_key(ctx, task, &key));
    TIR_TRY(tune_pool_load(ctx, db, target, key, tir_tune_task_tc(task), &pool));
    tir_status st = replay_search(&S, &pool);
    tune_pool_free(&pool);
    return st;
}

const char *tir_tune_model_name(tir_tune_model m) {
    switch (m) {
    case TIR_TUNE_MODEL_AUTO: return "auto";
    case TIR_TUNE_MODEL_KNN: return "knn";
    case TIR_TUNE_MODEL_XGB: return "xgb";
    case TIR_TUNE_MODEL_RANDOM: return "random";
    }
    return "?";
}

bool tir_tune_model_parse(const char *name, tir_tune_model *out) {
    for (int m = TIR_TUNE_MODEL_AUTO; m <= TIR_TUNE_MODEL_RANDOM; m++)
        if (name && !strcmp(name, tir_tune_model_name((tir_tune_model)m))) {
            *out = (tir_tune_model)m;
            return true;
        }
    return false;
}

void tir_tune_result_free(tir_tune_result *res) {
    free(res->best_trace);
    free(res->curve);
    res->best_trace = NULL, res->curve = NULL;
}
