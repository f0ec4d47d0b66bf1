/* bench.c: timing GPU work with CUDA events.
 *
 * The sampling logic (warm-up, samples of `inner` calls, input-set
 * rotation, cache flushes, statistics) is written against a small clock
 * interface, so tests can drive it with a fake clock; tir_rt_bench plugs in
 * a clock made of CUDA events.  All samples are queued before the first
 * wait, behind a kernel that holds the GPU until the host has queued them
 * (tir_rt_hold, kernels.c), so that the GPU runs them back to back instead
 * of idling while the host queues the next call or reads a result.  The
 * median is the headline figure: one late sample (a clock change, another
 * process) moves the mean but not the median.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"

#define MAX_RUNS 100000
/* the first hold (ms), the most tries, the longest hold; the most samples
 * queued behind one hold (the driver's queue of pending launches holds
 * about a thousand: queuing past it would wait for the GPU, and the hold) */
#define HOLD_FIRST_MS 2.0
#define HOLD_TRIES 4
#define HOLD_MAX_MS 200.0
#define HOLD_CHUNK 100

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void rt_bench_stats(double *ms, int n, int inner, tir_rt_bench_result *res) {
    memset(res, 0, sizeof *res);
    res->runs = n;
    res->inner = inner;
    if (n <= 0) return;
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += ms[i];
    double med = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    res->median_ms = med / inner;
    res->min_ms = ms[0] / inner;
    res->max_ms = ms[n - 1] / inner;
    res->mean_ms = sum / n / inner;
}

/* Timed samples i0 .. i1-1, queued (not waited for). */
static tir_status queue_samples(tir_ctx *ctx, const rt_bench_clock *clock, tir_rt_bench_fn fn,
                                void *user, const tir_rt_bench_opts *o, int i0, int i1,
                                long *call) {
    tir_status s = TIR_OK;
    for (int i = i0; s == TIR_OK && i < i1; i++) {
        if (o->flush_l2) s = clock->flush(clock->self, ctx);
        if (s == TIR_OK) s = clock->mark(clock->self, ctx, i, 0);
        for (int j = 0; s == TIR_OK && j < o->inner; j++)
            s = fn(ctx, user, (int)((*call)++ % o->nsets));
        if (s == TIR_OK) s = clock->mark(clock->self, ctx, i, 1);
    }
    return s;
}

/* Samples i0 .. i1-1 behind a hold.  Where the GPU had left the hold
 * before the host finished queuing, it may have waited for the host inside
 * a sample: queue them again behind a longer hold (an event recorded again
 * keeps the last time), up to HOLD_TRIES and HOLD_MAX_MS.  *b2b is cleared
 * when the last try was still too short; *hold_ms gets the longest hold. */
static tir_status held_chunk(tir_ctx *ctx, const rt_bench_clock *clock, tir_rt_bench_fn fn,
                             void *user, const tir_rt_bench_opts *o, int i0, int i1, long *call,
                             bool *b2b, double *hold_ms) {
    double hold = HOLD_FIRST_MS;
    for (int try = 0;; try++) {
        double t0 = clock->host_ms(clock->self);
        bool still = false;
        TIR_TRY(clock->hold(clock->self, ctx, hold));
        TIR_TRY(queue_samples(ctx, clock, fn, user, o, i0, i1, call));
        double queued = clock->host_ms(clock->self) - t0;
        TIR_TRY(clock->held(clock->self, ctx, &still));
        *hold_ms = fmax(*hold_ms, hold);
        if (still) return TIR_OK;
        if (try + 1 >= HOLD_TRIES || hold >= HOLD_MAX_MS) return *b2b = false, TIR_OK;
        hold = fmin(fmax(2 * hold, 2 * queued), HOLD_MAX_MS);
    }
}

tir_status rt_bench_run(tir_ctx *ctx, const rt_bench_clock *clock, tir_rt_bench_fn fn,
                        void *user, const tir_rt_bench_opts *opts, tir_rt_bench_result *res) {
    memset(res, 0, sizeof *res);
    tir_rt_bench_opts o = opts ? *opts : TIR_RT_BENCH_DEFAULTS;
    if (!fn) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "bench: no function to time");
    if (o.warmup < 0 || o.runs < 20 || o.runs > MAX_RUNS || o.inner < 1 || o.nsets < 1)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "bench: need warmup >= 0, 20 <= runs <= %d, inner >= 1, nsets >= 1 "
                            "(got %d, %d, %d, %d); fewer than 20 samples make a median one "
                            "can't trust",
                            MAX_RUNS, o.warmup, o.runs, o.inner, o.nsets);
    double *ms = malloc(sizeof *ms * (size_t)o.runs);
    if (!ms) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "bench: out of host memory");
    tir_status s = clock->prepare(clock->self, ctx, o.runs);
    long call = 0;
    for (int w = 0; s == TIR_OK && w < o.warmup; w++) s = fn(ctx, user, (int)(call++ % o.nsets));
    /* The samples in chunks, each behind its hold (a clock without one:
     * all at once, not known to be back to back). */
    bool b2b = clock->hold != NULL;
    double hold = 0;
    for (int i0 = 0; s == TIR_OK && i0 < o.runs; i0 += HOLD_CHUNK) {
        int i1 = clock->hold && o.runs - i0 > HOLD_CHUNK ? i0 + HOLD_CHUNK : o.runs;
        s = clock->hold ? held_chunk(ctx, clock, fn, user, &o, i0, i1, &call, &b2b, &hold)
                        : queue_samples(ctx, clock, fn, user, &o, i0, i1, &call);
        if (!clock->hold) break;
    }
    for (int i = 0; s == TIR_OK && i < o.runs; i++) s = clock->elapsed(clock->self, ctx, i, &ms[i]);
    if (s == TIR_OK) rt_bench_stats(ms, o.runs, o.inner, res);
    res->back_to_back = s == TIR_OK && b2b;
    res->hold_ms = s == TIR_OK ? hold : 0;
    clock->release(clock->self);
    free(ms);
    return s;
}

/* ------------------------------------------------------- the event clock */

typedef struct event_clock {
    tir_rt_device *dev;
    tir_rt_event **ev; /* start, end of each sample */
    int n;
    tir_rt_kernel *hold;    /* tir_rt_hold */
    tir_rt_event *hold_end; /* recorded after each hold */
    uint8_t flush_value;
} event_clock;

static tir_status ev_prepare(void *self, tir_ctx *ctx, int nsamples) {
    event_clock *c = self;
    c->ev = calloc((size_t)nsamples * 2, sizeof *c->ev);
    if (!c->ev) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "bench: out of host memory");
    c->n = nsamples * 2;
    for (int i = 0; i < c->n; i++) TIR_TRY(tir_rt_event_create(ctx, c->dev, &c->ev[i]));
    return c->hold ? tir_rt_event_create(ctx, c->dev, &c->hold_end) : TIR_OK;
}

static tir_status ev_hold(void *self, tir_ctx *ctx, double ms) {
    event_clock *c = self;
    unsigned one[3] = {1, 1, 1};
    tir_rt_arg ns = tir_rt_arg_i64((int64_t)(ms * 1e6));
    TIR_TRY(tir_rt_launch(ctx, c->hold, one, one, 0, 1, &ns));
    return tir_rt_event_record(ctx, c->hold_end);
}

static tir_status ev_held(void *self, tir_ctx *ctx, bool *still) {
    event_clock *c = self;
    return rt_event_pending(ctx, c->hold_end, still);
}

static double ev_host_ms(void *self) {
    (void)self;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static tir_status ev_flush(void *self, tir_ctx *ctx) {
    event_clock *c = self;
    tir_rt_device *dev = c->dev;
    if (!dev->flush_buf) {
        /* Twice the L2, so none of what the last sample touched survives
           whatever the replacement policy; 64 MiB if the driver does not
           say. */
        size_t bytes = dev->props.l2_bytes > 0 ? 2 * (size_t)dev->props.l2_bytes : 64u << 20;
        TIR_TRY(tir_rt_alloc(ctx, dev, bytes, &dev->flush_buf));
        dev->flush_bytes = bytes;
    }
    c->flush_value ^= 0x5a;
    return tir_rt_memset8(ctx, dev, dev->flush_buf, c->flush_value, dev->flush_bytes);
}

static tir_status ev_mark(void *self, tir_ctx *ctx, int sample, int end) {
    event_clock *c = self;
    return tir_rt_event_record(ctx, c->ev[2 * sample + end]);
}

static tir_status ev_elapsed(void *self, tir_ctx *ctx, int sample, double *ms) {
    event_clock *c = self;
    float t = 0;
    TIR_TRY(tir_rt_event_elapsed_ms(ctx, c->ev[2 * sample], c->ev[2 * sample + 1], &t));
    *ms = t;
    return TIR_OK;
}

static void ev_release(void *self) {
    event_clock *c = self;
    if (c->ev)
        for (int i = 0; i < c->n; i++) tir_rt_event_destroy(c->ev[i]);
    free(c->ev);
    c->ev = NULL;
    tir_rt_event_destroy(c->hold_end);
    c->hold_end = NULL;
}

tir_status tir_rt_bench(tir_ctx *ctx, tir_rt_device *dev, tir_rt_bench_fn fn, void *user,
                        const tir_rt_bench_opts *opts, tir_rt_bench_result *res) {
    if (!dev) {
        memset(res, 0, sizeof *res);
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "bench: no device");
    }
    event_clock c = {dev, NULL, 0, NULL, NULL, 0};
    rt_bench_clock clock = {&c,         ev_prepare, ev_flush, ev_mark,   ev_elapsed,
                            ev_release, ev_hold,    ev_held,  ev_host_ms};
    /* The hold kernel's module is loaded (and JIT-compiled) before anything
     * is timed; without it the samples go without a hold, not known to be
     * back to back. */
    if (rt_builtin_kernel(ctx, dev, "tir_rt_hold", &c.hold) != TIR_OK)
        clock.hold = NULL, clock.held = NULL;
    return rt_bench_run(ctx, &clock, fn, user, opts, res);
}

double tir_rt_gemm_tflops(int64_t M, int64_t N, int64_t K, double ms) {
    if (!(ms > 0)) return 0;
    return 2.0 * (double)M * (double)N * (double)K / (ms * 1e9);
}
