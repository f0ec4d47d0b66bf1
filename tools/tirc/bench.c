/* bench.c: `tirc bench`: per size, epilogue and step, our GFLOPS against
 * cuBLAS measured in the same process, written as a table and optionally
 * CSV, JSON and a chart (output.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tirc.h"

int tirc_cmd_bench(tir_ctx *ctx, opts *o) {
    gpu g;
    int rc = tirc_gpu_open(ctx, &g, true);
    if (rc != EXIT_OK) return rc;
    uint64_t seed = o->seed_given ? o->seed : (uint64_t)time(NULL);
    tir_tune_target_from_props(g.props, &o->target);
    o->target_given = true, o->nsm = g.props->sm_count;
    static const int64_t defaults[][3] = {{256, 256, 256},    {512, 512, 512},
                                          {1000, 1000, 1000}, {1024, 1024, 1024},
                                          {2048, 2048, 2048}, {4096, 4096, 4096}};
    int nsizes = o->nsizes ? o->nsizes : (int)(sizeof defaults / sizeof *defaults);
    int nepi = tirc_is_fused(o) ? (o->epi < 0 ? SEED_NEPI : 1) : 1;
    int nsteps = o->step_hi - o->step_lo + 1;
    int total = nsizes * nepi * nsteps, done = 0;
    row *rows = calloc((size_t)total * 3 + 1, sizeof *rows);
    int nrows = 0;
    if (!rows) {
        tir_rt_device_destroy(g.dev);
        return EXIT_RUNTIME;
    }
    fprintf(stderr, "tirc: benchmarking on %s (%s), %d runs per median, input seed %llu\n",
            g.props->name, g.props->arch, o->runs, (unsigned long long)seed);
    tirc_print_header();
    double t0 = mt_now_ms();
    for (int si = 0; si < nsizes && rc != EXIT_RUNTIME; si++) {
        const int64_t *sz = o->nsizes ? o->sizes[si] : defaults[si];
        int64_t M = sz[0], N = sz[1], K = sz[2];
        /* Enough input sets that consecutive runs miss L2 (2x its size). */
        double set_bytes = (double)tir_dtype_bytes(tir_rt_gemm_kind_input(o->kind)) *
                           (double)(M * K + K * N);
        int nsets = (int)ceil(2.0 * (double)g.props->l2_bytes / set_bytes);
        if (nsets < 1) nsets = 1;
        if (nsets > MAX_SETS) nsets = 1; /* tiny problems: flush L2 instead */
        dprob p;
        if (tirc_dprob_make(ctx, &g, &p, o->kind, M, N, K, nsets, seed) != TIR_OK) {
            fprintf(stderr, "tirc: %lldx%lldx%lld: %s\n", (long long)M, (long long)N, (long long)K,
                    tir_ctx_error(ctx));
            tirc_dprob_free(ctx, &g, &p);
            rc = EXIT_RUNTIME;
            break;
        }
        for (int ei = 0; ei < nepi && rc != EXIT_RUNTIME; ei++) {
            int e = o->epi < 0 ? ei : o->epi;
            tir_rt_bench_result cub;
            if (tirc_reference(ctx, o, &g, &p, e, true, &cub) != TIR_OK) {
                fprintf(stderr, "tirc: cuBLAS reference: %s\n", tir_ctx_error(ctx));
                rc = EXIT_RUNTIME;
                break;
            }
            /* The reference row itself. */
            row cr = {M,
                      N,
                      K,
                      0,
                      tirc_is_fused(o) ? e : -1,
                      V_CUBLAS,
                      cub.median_ms,
                      NAN,
                      cub.median_ms,
                      NAN,
                      0,
                      NAN,
                      "ok",
                      -1,
                      -1,
                      {NAN, NAN, NAN, NAN, NAN}};
            cr.gflops = cr.cublas_gflops = 2.0 * (double)(M * N) * (double)K / cub.median_ms / 1e6;
            rows[nrows++] = cr;
            tirc_print_row(o, &cr);
            for (int step = o->step_lo; step <= o->step_hi; step++) {
                fprintf(stderr, "[%d/%d, %.0f s] %lldx%lldx%lld %s%sstep %d\n", ++done, total,
                        (mt_now_ms() - t0) / 1e3, (long long)M, (long long)N, (long long)K,
                        tirc_is_fused(o) ? seed_epi_name((seed_epi)e) : "",
                        tirc_is_fused(o) ? " " : "", step);
                /* The reference is in p.ref for set 0: recompute it, since a
                 * timed run of another set overwrote it. */
                if (tirc_reference(ctx, o, &g, &p, e, false, NULL) != TIR_OK) {
                    rc = EXIT_RUNTIME;
                    break;
                }
                int first = nrows;
                int r = tirc_gpu_case(ctx, o, &g, &p, e, step, true, &cub, rows, &nrows);
                for (int i = first; i < nrows; i++) tirc_print_row(o, &rows[i]);
                fflush(stdout);
                if (r != EXIT_OK && (rc == EXIT_OK || r == EXIT_RUNTIME)) rc = r;
                if (r == EXIT_RUNTIME) break;
            }
        }
        tirc_dprob_free(ctx, &g, &p);
    }
    if (!tirc_write_tables(o, rows, nrows) && rc == EXIT_OK) rc = EXIT_USAGE;
    if (o->plot && !tirc_write_plot(o, rows, nrows) && rc == EXIT_OK) rc = EXIT_USAGE;
    free(rows);
    tir_rt_device_destroy(g.dev);
    return rc;
}
