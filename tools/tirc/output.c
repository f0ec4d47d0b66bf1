/* output.c: tirc's results: the table on standard output (run, bench) and
 * bench's files: CSV, JSON and the gnuplot data, script and chart.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tirc.h"

void tirc_print_row(const opts *o, const row *r) {
    char sz[48], epi[16] = "";
    snprintf(sz, sizeof sz, "%lldx%lldx%lld", (long long)r->M, (long long)r->N, (long long)r->K);
    if (r->epi >= 0) snprintf(epi, sizeof epi, "%s", seed_epi_name((seed_epi)r->epi));
    char ph[64] = "";
    if (r->v != V_CUBLAS && isfinite(r->phase_ms[0]))
        snprintf(ph, sizeof ph, "  %.0f/%.0f/%.0f/%.0f/%.0f", r->phase_ms[0], r->phase_ms[1],
                 r->phase_ms[2], r->phase_ms[3], r->phase_ms[4]);
    printf("%-16s %-10s %4d  %-22s %9.4f %10.1f %10.1f %7.3f %10.2e %10.1f %4d %5d  %-6s%s\n", sz,
           epi, r->step, tirc_kernel_name(o, r->v), r->ms, r->gflops, r->cublas_gflops,
           r->gflops / r->cublas_gflops, r->rel_err, r->compile_ms, r->regs, r->lmem, r->status,
           ph);
}

void tirc_print_header(void) {
    printf("%-16s %-10s %4s  %-22s %9s %10s %10s %7s %10s %10s %4s %5s  %-6s  %s\n", "size",
           "epilogue", "step", "kernel", "ms", "GFLOPS", "cuBLAS", "ratio", "rel_err",
           "compile_ms", "regs", "lmem", "status", "sched/lower/llvm/ptx/jit ms");
}

static void json_num(FILE *f, const char *k, double v, bool comma) {
    if (isfinite(v))
        fprintf(f, "\"%s\": %.6g%s", k, v, comma ? ", " : "");
    else
        fprintf(f, "\"%s\": null%s", k, comma ? ", " : "");
}

bool tirc_write_tables(const opts *o, const row *rows, int n) {
    bool ok = true;
    if (o->csv) {
        FILE *f = fopen(o->csv, "w");
        if (!f) {
            fprintf(stderr, "tirc: cannot write %s: %s\n", o->csv, strerror(errno));
            return false;
        }
        fprintf(f, "example,epilogue,M,N,K,step,kernel,ms,gflops,cublas_ms,cublas_gflops,ratio,"
                   "rel_err,compile_ms,regs,lmem,status,sched_ms,lower_ms,llvm_ms,ptx_ms,jit_ms\n");
        for (int i = 0; i < n; i++) {
            const row *r = &rows[i];
            fprintf(f, "%s,%s,%lld,%lld,%lld,%d,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.3e,%.3f,%d,%d,%s",
                    o->example, r->epi >= 0 ? seed_epi_name((seed_epi)r->epi) : "", (long long)r->M,
                    (long long)r->N, (long long)r->K, r->step, tirc_kernel_name(o, r->v), r->ms,
                    r->gflops, r->cublas_ms, r->cublas_gflops, r->gflops / r->cublas_gflops,
                    r->rel_err, r->compile_ms, r->regs, r->lmem, r->status);
            for (int p = 0; p < 5; p++) fprintf(f, ",%.3f", r->phase_ms[p]);
            fprintf(f, "\n");
        }
        ok = fclose(f) == 0 && ok;
        fprintf(stderr, "tirc: wrote %s\n", o->csv);
    }
    if (o->json) {
        FILE *f = fopen(o->json, "w");
        if (!f) {
            fprintf(stderr, "tirc: cannot write %s: %s\n", o->json, strerror(errno));
            return false;
        }
        fprintf(f, "[\n");
        for (int i = 0; i < n; i++) {
            const row *r = &rows[i];
            fprintf(f,
                    "  {\"example\": \"%s\", \"epilogue\": \"%s\", \"M\": %lld, \"N\": %lld, "
                    "\"K\": %lld, \"step\": %d, \"kernel\": \"%s\", ",
                    o->example, r->epi >= 0 ? seed_epi_name((seed_epi)r->epi) : "", (long long)r->M,
                    (long long)r->N, (long long)r->K, r->step, tirc_kernel_name(o, r->v));
            json_num(f, "ms", r->ms, true);
            json_num(f, "gflops", r->gflops, true);
            json_num(f, "cublas_ms", r->cublas_ms, true);
            json_num(f, "cublas_gflops", r->cublas_gflops, true);
            json_num(f, "ratio", r->gflops / r->cublas_gflops, true);
            json_num(f, "rel_err", r->rel_err, true);
            json_num(f, "compile_ms", r->compile_ms, true);
            static const char *const ph[5] = {"sched_ms", "lower_ms", "llvm_ms", "ptx_ms",
                                              "jit_ms"};
            for (int p = 0; p < 5; p++) json_num(f, ph[p], r->phase_ms[p], true);
            json_num(f, "regs", r->regs >= 0 ? r->regs : NAN, true);
            json_num(f, "lmem", r->lmem >= 0 ? r->lmem : NAN, true);
            fprintf(f, "\"status\": \"%s\"}%s\n", r->status, i + 1 < n ? "," : "");
        }
        fprintf(f, "]\n");
        ok = fclose(f) == 0 && ok;
        fprintf(stderr, "tirc: wrote %s\n", o->json);
    }
    return ok;
}

/* The chart: GFLOPS per size, one line per step and one for cuBLAS (for
 * fused: the fused kernels of the first epilogue measured).  Kernels that
 * failed verification are left out (nan). */
bool tirc_write_plot(const opts *o, const row *rows, int n) {
    char dat[1024], gp[1024];
    size_t len = strlen(o->plot);
    snprintf(dat, sizeof dat, "%.*s.dat", (int)(len - 4), o->plot);
    snprintf(gp, sizeof gp, "%.*s.gp", (int)(len - 4), o->plot);
    FILE *f = fopen(dat, "w");
    if (!f) {
        fprintf(stderr, "tirc: cannot write %s: %s\n", dat, strerror(errno));
        return false;
    }
    int first_epi = n > 0 ? rows[0].epi : -1;
    fprintf(f, "# size");
    for (int s = o->step_lo; s <= o->step_hi; s++) fprintf(f, " step%d", s);
    fprintf(f, " cublas   (GFLOPS; nan: not built or not verified)\n");
    for (int i = 0; i < n;) {
        int j = i;
        double cub = NAN, g[TIRC_STEP_TC + 1];
        for (int s = 0; s <= TIRC_STEP_TC; s++) g[s] = NAN;
        while (j < n && rows[j].M == rows[i].M && rows[j].N == rows[i].N &&
               rows[j].K == rows[i].K) {
            if (rows[j].v == V_OURS && rows[j].epi == first_epi) {
                /* Only verified kernels are drawn. */
                g[rows[j].step] = !strcmp(rows[j].status, "ok") ? rows[j].gflops : NAN;
                cub = rows[j].cublas_gflops;
            }
            j++;
        }
        fprintf(f, "\"%lldx%lldx%lld\"", (long long)rows[i].M, (long long)rows[i].N,
                (long long)rows[i].K);
        for (int s = o->step_lo; s <= o->step_hi; s++) fprintf(f, " %.6g", g[s]);
        fprintf(f, " %.6g\n", cub);
        i = j;
    }
    fclose(f);
    f = fopen(gp, "w");
    if (!f) {
        fprintf(stderr, "tirc: cannot write %s: %s\n", gp, strerror(errno));
        return false;
    }
    bool svg = !strcmp(o->plot + len - 4, ".svg");
    fprintf(f,
            "set terminal %s size 900,560\nset output '%s'\n"
            "set title 'minitir %s%s: seed steps against cuBLAS (float32)'\n"
            "set ylabel 'GFLOPS'\nset xlabel 'M x N x K'\nset logscale y\nset key left top\n"
            "set grid ytics\nset datafile missing 'nan'\nset style data linespoints\n"
            "plot ",
            svg ? "svg" : "png", o->plot, o->example,
            first_epi >= 0 ? (first_epi == 0   ? " bias"
                              : first_epi == 1 ? " bias+relu"
                                               : " clip")
                           : "");
    int col = 2;
    for (int s = o->step_lo; s <= o->step_hi; s++, col++)
        fprintf(f, "'%s' using %d:xticlabels(1) title 'Step %d', ", dat, col, s);
    fprintf(f, "'%s' using %d:xticlabels(1) title 'cuBLAS' lw 3\n", dat, col);
    fclose(f);
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr,
                "tirc: gnuplot is not installed: wrote the data %s and the script %s; run "
                "`gnuplot %s` where gnuplot exists (scripts/bootstrap.sh installs gnuplot-nox)\n",
                dat, gp, gp);
        return true;
    }
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "gnuplot '%s'", gp);
    if (system(cmd) != 0) {
        fprintf(stderr, "tirc: gnuplot failed on %s (data in %s)\n", gp, dat);
        return false;
    }
    fprintf(stderr, "tirc: wrote %s (data %s, script %s)\n", o->plot, dat, gp);
    return true;
}
