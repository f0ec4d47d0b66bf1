/* run.c: `tirc run`: each step run and verified, on the GPU against cuBLAS
 * (through gpu.c) or in the SIMT simulator against the reference
 * interpreter (--sim, and the default where there is no GPU).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tirc.h"

/* Buffers of one problem on the host: A, B, bias and the output. */
typedef struct host_bufs {
    float *a, *b, *bias, *out, *want;
} host_bufs;

static void host_free(host_bufs *h) {
    free(h->a);
    free(h->b);
    free(h->bias);
    free(h->out);
    free(h->want);
}

static int run_sim_one(tir_ctx *ctx, const opts *o, int e, int step, uint64_t seed) {
    bool fused = tirc_is_fused(o);
    int64_t M = o->M, N = o->N, K = o->K;
    const tir_prim_func *f = tirc_define(ctx, o, e, M, N, K);
    tir_schedule *s = NULL;
    tir_kernel_set ks; /* one kernel, or split-K's two */
    tir_lower_opts lo;
    tirc_lower_opts(o, &lo);
    if (!f ||
        tirc_schedule(ctx, f, fused, step, tirc_tiles(o), o->splitk, o->atomic, o->stages, tirc_config(o), tirc_tc_off(o), false,
                      &s) !=
            TIR_OK ||
        tir_lower_kernels(ctx, tir_sched_func(s), &lo, &ks) != TIR_OK) {
        fprintf(stderr, "tirc: cannot compile %s step %d: %s\n", o->example, step,
                tir_ctx_error(ctx));
        tir_sched_destroy(s);
        return EXIT_COMPILE;
    }
    tir_sched_destroy(s);
    tir_dtype in = tir_rt_gemm_kind_input(o->kind);
    size_t esz = (size_t)tir_dtype_bytes(in);
    host_bufs h = {malloc(esz * (size_t)(M * K)), malloc(esz * (size_t)(K * N)),
                   malloc(sizeof(float) * (size_t)N), malloc(sizeof(float) * (size_t)(M * N)),
                   malloc(sizeof(float) * (size_t)(M * N))};
    double *ref = malloc(sizeof(double) * (size_t)(M * N));
    int rc = EXIT_OK;
    if (!h.a || !h.b || !h.bias || !h.out || !h.want || !ref) {
        fprintf(stderr, "tirc: out of memory\n");
        rc = EXIT_RUNTIME;
        goto done;
    }
    tir_rt_fill_random(ctx, in, h.a, (size_t)(M * K), seed);
    tir_rt_fill_random(ctx, in, h.b, (size_t)(K * N), seed + 1);
    tir_rt_fill_random(ctx, TIR_F32, h.bias, (size_t)N, seed + 2);
    tir_rt_poison(h.out, sizeof(float) * (size_t)(M * N));
    tir_arg args[4], rargs[4];
    int nargs = fused ? 4 : 3;
    args[0].data = h.a, args[1].data = h.b;
    if (fused) args[2].data = h.bias;
    args[nargs - 1].data = h.out;
    memcpy(rargs, args, sizeof args);
    rargs[nargs - 1].data = h.want;
    tir_interp_opts io = {.uninit_params = 1ull << (nargs - 1)};
    if (tir_interp_run(ctx, f, nargs, rargs, &io) != TIR_OK) {
        fprintf(stderr, "tirc: interpreter: %s\n", tir_ctx_error(ctx));
        rc = EXIT_RUNTIME;
        goto done;
    }
    tir_sim_opts so = {.uninit_params = 1ull << (nargs - 1), .check_uninit = true};
    tir_sim_report reps[4], rep;
    double t0 = mt_now_ms();
    if (ks.nkernels > 4 || tir_sim_run_kernels(ctx, &ks, nargs, args, &so, reps) != TIR_OK) {
        fprintf(stderr, "tirc: %s step %d: the simulator found an error:\n%s\n", o->example, step,
                tir_ctx_error(ctx));
        rc = EXIT_VERIFY;
        goto done;
    }
    double t1 = mt_now_ms();
    /* the main kernel's launch (split-K: the partial sums; atomic: after
     * the zero fill) */
    rep = reps[o->splitk > 1 && o->atomic ? 1 : 0];
    for (int64_t i = 0; i < M * N; i++) ref[i] = h.want[i];
    char what[96];
    snprintf(what, sizeof what, "%s%s%s step %d%s", o->example, fused ? " " : "",
             fused ? seed_epi_name((seed_epi)e) : "", step,
             o->splitk <= 1 ? "" : o->atomic ? " split-K atomic" : " split-K");
    tir_rt_error_stats es;
    tir_status st = tir_rt_check(ctx, what, TIR_F32, h.out, ref, M, N,
                                 tir_rt_gemm_tolerance(o->kind, K), &es);
    printf("%-28s %lldx%lldx%lld  sim  grid %lldx%lldx%lld block %lldx%lldx%lld  "
           "rel_err %.2e  %s  (%d kernel%s, %.0f ms)\n",
           what, (long long)M, (long long)N, (long long)K, (long long)rep.grid[0],
           (long long)rep.grid[1], (long long)rep.grid[2], (long long)rep.block[0],
           (long long)rep.block[1], (long long)rep.block[2], es.rel_err,
           st == TIR_OK ? "ok" : "FAIL", ks.nkernels, ks.nkernels > 1 ? "s" : "", t1 - t0);
    if (st != TIR_OK) {
        fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
        rc = EXIT_VERIFY;
    }
done:
    free(ref);
    host_free(&h);
    return rc;
}

static int cmd_run_gpu(tir_ctx *ctx, const opts *o, gpu *g, uint64_t seed) {
    dprob p;
    int rc = EXIT_OK;
    if (tirc_dprob_make(ctx, g, &p, o->kind, o->M, o->N, o->K, 1, seed) != TIR_OK) {
        fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
        tirc_dprob_free(ctx, g, &p);
        return EXIT_RUNTIME;
    }
    row rows[64];
    int nrows = 0;
    int nepi = tirc_is_fused(o) ? (o->epi < 0 ? SEED_NEPI : 1) : 1;
    tirc_print_header();
    for (int ei = 0; ei < nepi && rc != EXIT_RUNTIME; ei++) {
        int e = o->epi < 0 ? ei : o->epi;
        if (tirc_reference(ctx, o, g, &p, e, false, NULL) != TIR_OK) {
            fprintf(stderr, "tirc: cuBLAS reference: %s\n", tir_ctx_error(ctx));
            rc = EXIT_RUNTIME;
            break;
        }
        for (int step = o->step_lo; step <= o->step_hi; step++) {
            int first = nrows;
            int r = tirc_gpu_case(ctx, o, g, &p, e, step, false, NULL, rows, &nrows);
            for (int i = first; i < nrows; i++) tirc_print_row(o, &rows[i]);
            fflush(stdout);
            if (r != EXIT_OK && (rc == EXIT_OK || r == EXIT_RUNTIME)) rc = r;
            if (r == EXIT_RUNTIME) break;
        }
    }
    tirc_dprob_free(ctx, g, &p);
    return rc;
}

int tirc_cmd_run(tir_ctx *ctx, const opts *o) {
    uint64_t seed = o->seed_given ? o->seed : (uint64_t)time(NULL);
    if (!o->sim) {
        gpu g;
        int r = tirc_gpu_open(ctx, &g, o->gpu);
        if (r == EXIT_OK) {
            fprintf(stderr, "tirc: running on %s (%s), input seed %llu\n", g.props->name,
                    g.props->arch, (unsigned long long)seed);
            r = cmd_run_gpu(ctx, o, &g, seed);
            tir_rt_device_destroy(g.dev);
            return r;
        }
        if (r != EXIT_NO_GPU || o->gpu) return r;
        fprintf(stderr, "tirc: no CUDA GPU here: checking in the SIMT simulator instead "
                        "(--gpu requires a GPU)\n");
    }
    opts so = *o;
    if (!o->size_given) so.M = 67, so.N = 45, so.K = 39;
    fprintf(stderr, "tirc: simulating %s at %lldx%lldx%lld, input seed %llu\n", o->example,
            (long long)so.M, (long long)so.N, (long long)so.K, (unsigned long long)seed);
    int rc = EXIT_OK;
    int nepi = tirc_is_fused(o) ? (o->epi < 0 ? SEED_NEPI : 1) : 1;
    for (int ei = 0; ei < nepi; ei++)
        for (int step = o->step_lo; step <= o->step_hi; step++) {
            int r = run_sim_one(ctx, &so, o->epi < 0 ? ei : o->epi, step, seed);
            fflush(stdout);
            if (r != EXIT_OK && rc == EXIT_OK) rc = r;
        }
    return rc;
}
