/* tirc.c: the minitir command line.  It schedules the seed examples
 * (examples/seed.c), shows their IR and traces, writes their PTX, runs
 * and verifies them on the GPU against cuBLAS or in the SIMT simulator
 * against the reference interpreter, and benchmarks them against cuBLAS
 * (the seed's Step 7 table), using only the public API.
 *
 * Exit codes (also in `tirc --help`): 0 ok, 1 verification failure,
 * 2 usage error, 3 no GPU where one is required, 4 compile error
 * (schedule, lowering or codegen), 5 other runtime (CUDA) error.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "minitir/codegen.h"
#include "minitir/ir.h"
#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/schedule.h"
#include "seed.h"

enum { EXIT_OK = 0, EXIT_VERIFY = 1, EXIT_USAGE = 2, EXIT_NO_GPU = 3, EXIT_COMPILE = 4,
       EXIT_RUNTIME = 5 };

static const char *const exit_help =
    "Exit status: 0 ok, 1 verification failure (wrong result, NaN), 2 usage error,\n"
    "3 no GPU where one is required, 4 compile error (schedule, lowering, codegen),\n"
    "5 other runtime (CUDA, cuBLAS) error.\n";

static const char *const examples_help =
    "Examples:\n"
    "  matmul   C[M,N] = A[M,K] B[K,N] in float32, the seed's Steps 1-6\n"
    "  fused    D = epilogue(A B + bias[j]) with the epilogue fused into the\n"
    "           reduction (fuse_reduction_epilogue) and then Steps 1-6;\n"
    "           --epilogue bias|bias+relu|clip|all (default all)\n";

/* ------------------------------------------------------------ options */

typedef struct opts {
    const char *cmd, *example;
    int step_lo, step_hi; /* --step N or --steps A-B */
    bool step_given;
    int64_t M, N, K; /* --size */
    bool size_given;
    int64_t sizes[64][3]; /* --sizes */
    int nsizes;
    int epi; /* -1: all */
    const char *arch, *out, *csv, *json, *plot;
    bool trace, each, sim, gpu, help;
    int runs, warmup;
    uint64_t seed;
    bool seed_given;
} opts;

static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tirc: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(try `tirc --help` or `tirc <command> --help`)\n");
    return EXIT_USAGE;
}

static bool parse_i64(const char *s, int64_t *v) {
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < 1 || x > 65536) return false;
    *v = x;
    return true;
}

/* "N" (square) or "MxNxK". */
static bool parse_size(const char *s, int64_t out[3]) {
    char buf[64];
    if (strlen(s) >= sizeof buf) return false;
    strcpy(buf, s);
    char *p[3] = {buf, NULL, NULL};
    int n = 1;
    for (char *c = buf; *c; c++)
        if (*c == 'x' || *c == 'X') {
            if (n == 3) return false;
            *c = 0;
            p[n++] = c + 1;
        }
    if (n == 2) return false;
    for (int i = 0; i < n; i++)
        if (!parse_i64(p[i], &out[i])) return false;
    if (n == 1) out[1] = out[2] = out[0];
    return true;
}

static bool parse_steps(const char *s, int *lo, int *hi) {
    int a, b;
    char extra;
    if (sscanf(s, "%d-%d%c", &a, &b, &extra) == 2) {
    } else if (sscanf(s, "%d%c", &a, &extra) == 1) {
        b = a;
    } else {
        return false;
    }
    if (a < 1 || b > SEED_NSTEPS || a > b) return false;
    *lo = a, *hi = b;
    return true;
}

/* Takes the value of option argv[*i]. */
static const char *value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

static int parse_args(int argc, char **argv, opts *o) {
    memset(o, 0, sizeof *o);
    o->epi = -1;
    o->arch = "sm_90";
    o->runs = 30;
    o->warmup = 5;
    o->step_lo = 1, o->step_hi = SEED_NSTEPS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            o->help = true;
        } else if (a[0] != '-') {
            if (!o->cmd)
                o->cmd = a;
            else if (!o->example)
                o->example = a;
            else
                return usage_error("unexpected argument '%s'", a);
        } else if (!strcmp(a, "--trace")) {
            o->trace = true;
        } else if (!strcmp(a, "--each")) {
            o->each = true;
        } else if (!strcmp(a, "--sim")) {
            o->sim = true;
        } else if (!strcmp(a, "--gpu")) {
            o->gpu = true;
        } else if (!strcmp(a, "--step") || !strcmp(a, "--steps")) {
            if (!(v = value(argc, argv, &i)) || !parse_steps(v, &o->step_lo, &o->step_hi))
                return usage_error("%s wants a step 1..%d or a range like 1-%d", a, SEED_NSTEPS,
                                   SEED_NSTEPS);
            o->step_given = true;
        } else if (!strcmp(a, "--size")) {
            int64_t s[3];
            if (!(v = value(argc, argv, &i)) || !parse_size(v, s))
                return usage_error("--size wants N or MxNxK (each 1..65536), e.g. 1000x520x333");
            o->M = s[0], o->N = s[1], o->K = s[2];
            o->size_given = true;
        } else if (!strcmp(a, "--sizes")) {
            if (!(v = value(argc, argv, &i)))
                return usage_error("--sizes wants a comma-separated list, e.g. 256,512,1000x520x333");
            char buf[1024];
            snprintf(buf, sizeof buf, "%s", v);
            o->nsizes = 0;
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
                if (o->nsizes == 64) return usage_error("--sizes: at most 64 sizes");
                if (!parse_size(t, o->sizes[o->nsizes]))
                    return usage_error("--sizes: '%s' is not N or MxNxK", t);
                o->nsizes++;
            }
            if (o->nsizes == 0) return usage_error("--sizes: empty list");
        } else if (!strcmp(a, "--epilogue")) {
            if (!(v = value(argc, argv, &i))) return usage_error("--epilogue wants a name");
            if (!strcmp(v, "all"))
                o->epi = -1;
            else if ((o->epi = seed_epi_parse(v)) < 0)
                return usage_error("unknown epilogue '%s': use bias, bias+relu, clip or all", v);
        } else if (!strcmp(a, "--arch")) {
            if (!(o->arch = value(argc, argv, &i))) return usage_error("--arch wants e.g. sm_90");
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(o->out = value(argc, argv, &i))) return usage_error("-o wants a file name");
        } else if (!strcmp(a, "--csv")) {
            if (!(o->csv = value(argc, argv, &i))) return usage_error("--csv wants a file name");
        } else if (!strcmp(a, "--json")) {
            if (!(o->json = value(argc, argv, &i))) return usage_error("--json wants a file name");
        } else if (!strcmp(a, "--plot")) {
            if (!(o->plot = value(argc, argv, &i))) return usage_error("--plot wants a file name");
            size_t n = strlen(o->plot);
            if (n < 5 || (strcmp(o->plot + n - 4, ".png") && strcmp(o->plot + n - 4, ".svg")))
                return usage_error("--plot wants a .png or .svg file name");
        } else if (!strcmp(a, "--runs")) {
            int64_t r;
            if (!(v = value(argc, argv, &i)) || !parse_i64(v, &r) || r < 20)
                return usage_error("--runs wants a count >= 20");
            o->runs = (int)r;
        } else if (!strcmp(a, "--seed")) {
            if (!(v = value(argc, argv, &i))) return usage_error("--seed wants a number");
            o->seed = strtoull(v, NULL, 0);
            o->seed_given = true;
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    return EXIT_OK;
}

/* ------------------------------------------------------------- helpers */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static bool is_fused(const opts *o) { return !strcmp(o->example, "fused"); }

/* The program of an example: the matmul, or the fused GEMM of epilogue e. */
static const tir_prim_func *define(tir_ctx *ctx, const opts *o, int e, int64_t M, int64_t N,
                                   int64_t K) {
    return is_fused(o) ? seed_def_fused(ctx, (seed_epi)e, M, N, K)
                       : tir_def_matmul(ctx, M, N, K, TIR_F32);
}

typedef struct hook_state {
    tir_ctx *ctx;
} hook_state;

static void print_each(void *user, tir_schedule *s, const char *call) {
    hook_state *h = user;
    printf("---- after %s\n%s\n", call, tir_print(h->ctx, tir_sched_func(s)));
}

/* Schedules program f for step (fused: through seed_fused; unfused
 * matmul of a fused example: seed_schedule of the plain matmul). */
static tir_status schedule(tir_ctx *ctx, const tir_prim_func *f, bool fused, int step,
                           bool each, tir_schedule **out) {
    hook_state h = {ctx};
    tir_status st = tir_sched_create(ctx, f, out);
    if (st != TIR_OK) return st;
    st = fused ? seed_fused(*out, step, each ? print_each : NULL, &h)
               : seed_schedule(*out, step, each ? print_each : NULL, &h);
    if (st != TIR_OK) {
        tir_sched_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* Schedules and compiles; *ms is the schedule -> PTX wall time. */
static tir_status compile(tir_ctx *ctx, const opts *o, const tir_prim_func *f, bool fused,
                          int step, const tir_module **m, double *ms) {
    double t0 = now_ms();
    tir_schedule *s;
    tir_status st = schedule(ctx, f, fused, step, false, &s);
    if (st != TIR_OK) return st;
    tir_codegen_opts cg;
    tir_codegen_opts_init(&cg);
    cg.arch = o->arch;
    st = tir_build(ctx, tir_sched_func(s), &cg, m);
    tir_sched_destroy(s);
    if (ms) *ms = now_ms() - t0;
    return st;
}

/* ---------------------------------------------------------------- help */

static int help(const char *cmd) {
    if (!cmd) {
        printf("usage: tirc <command> <example> [options]\n\n"
               "Schedules the seed matmul examples with minitir and shows, compiles, runs\n"
               "and benchmarks them.\n\n"
               "Commands:\n"
               "  show    the IR after each schedule step (and the trace as C)\n"
               "  ptx     the PTX of one step\n"
               "  run     run and verify on the GPU against cuBLAS, or in the SIMT\n"
               "          simulator against the interpreter (--sim; default without GPU)\n"
               "  bench   the Step 7 table: our GFLOPS against cuBLAS per size and step\n"
               "  help    this text; `tirc <command> --help` for a command's options\n\n"
               "%s\n%s",
               examples_help, exit_help);
    } else if (!strcmp(cmd, "show")) {
        printf("usage: tirc show <example> [--step N|A-B] [--size MxNxK] [--trace] [--each]\n"
               "                           [--epilogue E]\n\n"
               "Prints the unscheduled IR, then the IR after each seed step (all steps, or\n"
               "those of --step).  --trace adds each step's schedule trace as a C function,\n"
               "--each the IR after every schedule primitive.  Default size 1024.\n\n"
               "%s\n%s",
               examples_help, exit_help);
    } else if (!strcmp(cmd, "ptx")) {
        printf("usage: tirc ptx <example> [--step N] [--size MxNxK] [--arch sm_90] [-o file]\n"
               "                          [--epilogue E]\n\n"
               "Schedules one step (default 6), lowers it and writes its PTX to the file\n"
               "(default standard output); launch shape and compile time go to stderr.\n"
               "fused takes one epilogue (default bias+relu).  Default size 1024.\n\n"
               "%s\n%s",
               examples_help, exit_help);
    } else if (!strcmp(cmd, "run")) {
        printf("usage: tirc run <example> [--step N|A-B] [--size MxNxK] [--sim | --gpu]\n"
               "                          [--epilogue E] [--seed S] [--arch sm_90]\n\n"
               "Runs each step (default all) and verifies it.  On the GPU: outputs are\n"
               "poisoned with NaN, inputs are fresh random values in [-1, 1), and the result\n"
               "is compared with cuBLAS (pure float32, no TF32; fused: cuBLAS followed by the\n"
               "separate epilogue kernel) by relative Frobenius error, tolerance 1e-5 for\n"
               "float32 (growing with sqrt(K) beyond K = 8192); any NaN fails.  fused also\n"
               "runs the unfused form (our matmul kernel + the epilogue kernel).\n"
               "--sim lowers the schedule and runs it in the SIMT simulator against the\n"
               "reference interpreter on the unscheduled program (races, barriers and\n"
               "out-of-bounds accesses are errors); it is the default where no GPU exists.\n"
               "--gpu requires a GPU (exit 3 without).  Default size 1024 on the GPU,\n"
               "67x45x39 in the simulator.  Sizes need not be multiples of the tiles.\n\n"
               "%s\n%s",
               examples_help, exit_help);
    } else if (!strcmp(cmd, "bench")) {
        printf("usage: tirc bench <example> [--sizes 256,512,...] [--steps 1-6] [--csv file]\n"
               "                            [--json file] [--plot file.png|svg] [--runs R]\n"
               "                            [--epilogue E] [--arch sm_90]\n\n"
               "Per size and step: our GFLOPS and cuBLAS's (pure float32, measured in the same\n"
               "process), their ratio, the relative error against cuBLAS and the compile time\n"
               "(schedule -> PTX).  Times are medians of R >= 20 (default 30) runs timed with\n"
               "CUDA events after 5 warm-up runs; input sets rotate so that the inputs of\n"
               "consecutive runs are not in L2 (or L2 is flushed when one set is too big).\n"
               "fused: per epilogue, the fused kernel, the unfused form (our matmul + the\n"
               "epilogue kernel) and cuBLAS + the epilogue kernel.  Default sizes\n"
               "256,512,1000,1024,2048,4096.  A step that cannot be built at a size (Step 1\n"
               "has one thread per column: N <= 1024) shows n/a and does not fail the run.\n"
               "--plot draws the steps against cuBLAS per size with gnuplot; without gnuplot\n"
               "it writes the data (.dat) and the script (.gp) next to the file and says so.\n"
               "Needs a GPU (exit 3 without).  Progress goes to stderr.\n\n"
               "%s\n%s",
               examples_help, exit_help);
    } else {
        return usage_error("unknown command '%s'", cmd);
    }
    return EXIT_OK;
}

/* ---------------------------------------------------------------- show */

static int cmd_show(tir_ctx *ctx, const opts *o) {
    int nepi = is_fused(o) ? (o->epi < 0 ? SEED_NEPI : 1) : 1;
    for (int ei = 0; ei < nepi; ei++) {
        int e = o->epi < 0 ? ei : o->epi;
        const tir_prim_func *f = define(ctx, o, e, o->M, o->N, o->K);
        if (!f) {
            fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
            return EXIT_COMPILE;
        }
        printf("==== %s%s%s %lldx%lldx%lld: unscheduled\n%s\n", o->example,
               is_fused(o) ? " " : "", is_fused(o) ? seed_epi_name((seed_epi)e) : "",
               (long long)o->M, (long long)o->N, (long long)o->K, tir_print(ctx, f));
        for (int step = o->step_lo; step <= o->step_hi; step++) {
            if (o->each) printf("==== %s\n", seed_step_title(step));
            tir_schedule *s;
            if (schedule(ctx, f, is_fused(o), step, o->each, &s) != TIR_OK) {
                fprintf(stderr, "tirc: step %d: %s\n", step, tir_ctx_error(ctx));
                return EXIT_COMPILE;
            }
            printf("==== %s%s\n%s\n", seed_step_title(step), is_fused(o) ? " (after fusion)" : "",
                   tir_print(ctx, tir_sched_func(s)));
            if (o->trace) {
                char fn[32];
                snprintf(fn, sizeof fn, "seed_step%d", step);
                printf("==== Step %d trace as C\n%s\n", step, tir_sched_trace_c(s, fn));
            }
            tir_sched_destroy(s);
        }
    }
    return EXIT_OK;
}

/* ----------------------------------------------------------------- ptx */

static int cmd_ptx(tir_ctx *ctx, const opts *o) {
    if (o->step_lo != o->step_hi) return usage_error("ptx takes one --step (1..%d)", SEED_NSTEPS);
    if (tir_codegen_check_arch(ctx, o->arch) != TIR_OK)
        return usage_error("%s", tir_ctx_error(ctx));
    int e = o->epi < 0 ? SEED_EPI_RELU : o->epi;
    const tir_prim_func *f = define(ctx, o, e, o->M, o->N, o->K);
    const tir_module *m;
    double ms;
    if (!f || compile(ctx, o, f, is_fused(o), o->step_lo, &m, &ms) != TIR_OK) {
        fprintf(stderr, "tirc: cannot compile %s step %d: %s\n", o->example, o->step_lo,
                tir_ctx_error(ctx));
        return EXIT_COMPILE;
    }
    FILE *fp = o->out ? fopen(o->out, "w") : stdout;
    if (!fp) {
        fprintf(stderr, "tirc: cannot write %s: %s\n", o->out, strerror(errno));
        return EXIT_USAGE;
    }
    bool ok = fwrite(m->ptx, 1, m->ptx_len, fp) == m->ptx_len;
    if (o->out) ok = (fclose(fp) == 0) && ok;
    if (!ok) {
        fprintf(stderr, "tirc: writing the PTX failed\n");
        return EXIT_USAGE;
    }
    fprintf(stderr,
            "tirc: %s step %d %lldx%lldx%lld: kernel %s for %s, block %lldx%lldx%lld, "
            "%lld bytes shared, compiled in %.1f ms%s%s\n",
            o->example, o->step_lo, (long long)o->M, (long long)o->N, (long long)o->K,
            m->kernel_name, m->arch, (long long)m->block[0].value, (long long)m->block[1].value,
            (long long)m->block[2].value, (long long)m->shared_bytes, ms,
            o->out ? "; PTX written to " : "", o->out ? o->out : "");
    return EXIT_OK;
}

/* ------------------------------------------------------- the simulator */

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
    bool fused = is_fused(o);
    int64_t M = o->M, N = o->N, K = o->K;
    const tir_prim_func *f = define(ctx, o, e, M, N, K);
    tir_schedule *s = NULL;
    const tir_prim_func *kernel = NULL;
    if (!f || schedule(ctx, f, fused, step, false, &s) != TIR_OK ||
        tir_lower(ctx, tir_sched_func(s), NULL, &kernel) != TIR_OK) {
        fprintf(stderr, "tirc: cannot compile %s step %d: %s\n", o->example, step,
                tir_ctx_error(ctx));
        tir_sched_destroy(s);
        return EXIT_COMPILE;
    }
    tir_sched_destroy(s);
    host_bufs h = {malloc(sizeof(float) * (size_t)(M * K)), malloc(sizeof(float) * (size_t)(K * N)),
                   malloc(sizeof(float) * (size_t)N), malloc(sizeof(float) * (size_t)(M * N)),
                   malloc(sizeof(float) * (size_t)(M * N))};
    double *ref = malloc(sizeof(double) * (size_t)(M * N));
    int rc = EXIT_OK;
    if (!h.a || !h.b || !h.bias || !h.out || !h.want || !ref) {
        fprintf(stderr, "tirc: out of memory\n");
        rc = EXIT_RUNTIME;
        goto done;
    }
    tir_rt_fill_random(ctx, TIR_F32, h.a, (size_t)(M * K), seed);
    tir_rt_fill_random(ctx, TIR_F32, h.b, (size_t)(K * N), seed + 1);
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
    tir_sim_report rep;
    double t0 = now_ms();
    if (tir_sim_run(ctx, kernel, nargs, args, &so, &rep) != TIR_OK) {
        fprintf(stderr, "tirc: %s step %d: the simulator found an error:\n%s\n", o->example,
                step, tir_ctx_error(ctx));
        rc = EXIT_VERIFY;
        goto done;
    }
    double t1 = now_ms();
    for (int64_t i = 0; i < M * N; i++) ref[i] = h.want[i];
    char what[96];
    snprintf(what, sizeof what, "%s%s%s step %d", o->example, fused ? " " : "",
             fused ? seed_epi_name((seed_epi)e) : "", step);
    tir_rt_error_stats es;
    tir_status st = tir_rt_check(ctx, what, TIR_F32, h.out, ref, M, N,
                                 tir_rt_gemm_tolerance(TIR_RT_GEMM_F32, K), &es);
    printf("%-28s %lldx%lldx%lld  sim  grid %lldx%lldx%lld block %lldx%lldx%lld  "
           "rel_err %.2e  %s  (%.0f ms)\n",
           what, (long long)M, (long long)N, (long long)K, (long long)rep.grid[0],
           (long long)rep.grid[1], (long long)rep.grid[2], (long long)rep.block[0],
           (long long)rep.block[1], (long long)rep.block[2], es.rel_err,
           st == TIR_OK ? "ok" : "FAIL", t1 - t0);
    if (st != TIR_OK) {
        fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
        rc = EXIT_VERIFY;
    }
done:
    free(ref);
    host_free(&h);
    return rc;
}

/* ------------------------------------------------------------- the GPU */

typedef struct gpu {
    tir_rt_device *dev;
    tir_rt_blas *blas;
    const tir_rt_props *props;
} gpu;

/* Opens the GPU.  Returns EXIT_OK, EXIT_NO_GPU (no driver or device; the
 * message printed only when required) or EXIT_RUNTIME. */
static int gpu_open(tir_ctx *ctx, gpu *g, bool required) {
    memset(g, 0, sizeof *g);
    tir_status st = tir_rt_open(ctx, 0, &g->dev);
    if (st == TIR_ERR_NO_DRIVER || st == TIR_ERR_NO_DEVICE) {
        if (required)
            fprintf(stderr,
                    "tirc: no CUDA GPU: %s\n(run on a machine with an NVIDIA GPU and driver, "
                    "or use `tirc run <example> --sim` to check in the simulator)\n",
                    tir_ctx_error(ctx));
        return EXIT_NO_GPU;
    }
    if (st == TIR_OK) st = tir_rt_blas_open(ctx, g->dev, &g->blas);
    if (st != TIR_OK) {
        fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
        if (st == TIR_ERR_NO_CUBLAS)
            fprintf(stderr, "(cuBLAS is needed as the reference: install the CUDA toolkit's "
                            "libcublas, or set MINITIR_CUBLAS_LIB to its path)\n");
        tir_rt_close(g->dev);
        g->dev = NULL;
        return EXIT_RUNTIME;
    }
    g->props = tir_rt_device_props(g->dev);
    return EXIT_OK;
}

/* One problem on the device, with nsets copies of the inputs. */
enum { MAX_SETS = 16 };
typedef struct dprob {
    int64_t M, N, K;
    int nsets;
    tir_rt_ptr a[MAX_SETS], b[MAX_SETS], bias, out, ref, tmp;
} dprob;

#define RT(call)                                                                          \
    do {                                                                                  \
        if ((call) != TIR_OK) goto rt_fail;                                               \
    } while (0)

static tir_status dprob_make(tir_ctx *ctx, gpu *g, dprob *p, int64_t M, int64_t N, int64_t K,
                             int nsets, uint64_t seed) {
    memset(p, 0, sizeof *p);
    p->M = M, p->N = N, p->K = K, p->nsets = nsets;
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    float *ha = malloc(sizeof(float) * (na > nb ? na : nb));
    if (!ha) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "out of host memory");
    tir_status st;
    for (int s = 0; s < nsets; s++) {
        if ((st = tir_rt_alloc(ctx, g->dev, na * 4, &p->a[s])) != TIR_OK) goto out;
        if ((st = tir_rt_alloc(ctx, g->dev, nb * 4, &p->b[s])) != TIR_OK) goto out;
        tir_rt_fill_random(ctx, TIR_F32, ha, na, seed + 10 * (uint64_t)s);
        if ((st = tir_rt_copy_h2d(ctx, g->dev, p->a[s], ha, na * 4)) != TIR_OK) goto out;
        tir_rt_fill_random(ctx, TIR_F32, ha, nb, seed + 10 * (uint64_t)s + 1);
        if ((st = tir_rt_copy_h2d(ctx, g->dev, p->b[s], ha, nb * 4)) != TIR_OK) goto out;
    }
    tir_rt_fill_random(ctx, TIR_F32, ha, (size_t)N, seed + 7);
    if ((st = tir_rt_alloc(ctx, g->dev, (size_t)N * 4, &p->bias)) != TIR_OK) goto out;
    if ((st = tir_rt_copy_h2d(ctx, g->dev, p->bias, ha, (size_t)N * 4)) != TIR_OK) goto out;
    if ((st = tir_rt_alloc(ctx, g->dev, nc * 4, &p->out)) != TIR_OK) goto out;
    if ((st = tir_rt_alloc(ctx, g->dev, nc * 4, &p->ref)) != TIR_OK) goto out;
    st = tir_rt_alloc(ctx, g->dev, nc * 4, &p->tmp);
out:
    free(ha);
    return st;
}

static void dprob_free(tir_ctx *ctx, gpu *g, dprob *p) {
    for (int s = 0; s < p->nsets; s++) {
        tir_rt_free(ctx, g->dev, p->a[s]);
        tir_rt_free(ctx, g->dev, p->b[s]);
    }
    tir_rt_free(ctx, g->dev, p->bias);
    tir_rt_free(ctx, g->dev, p->out);
    tir_rt_free(ctx, g->dev, p->ref);
    tir_rt_free(ctx, g->dev, p->tmp);
}

/* What one timed call runs. */
typedef enum variant { V_OURS, V_UNFUSED, V_CUBLAS } variant;
static const char *const variant_names[2][3] = {{"minitir", "", "cublas"},
                                                {"fused", "unfused+epilogue", "cublas+epilogue"}};
/* Set once from the example: the fused example's kernels have their own
 * names. */
static const char *const *variant_name = variant_names[0];

static tir_rt_epilogue rt_epi(int e) {
    tir_rt_epilogue r = {TIR_RT_EPI_BIAS, 0, 0};
    if (e == SEED_EPI_RELU) r.kind = TIR_RT_EPI_BIAS_RELU;
    if (e == SEED_EPI_CLIP) r = (tir_rt_epilogue){TIR_RT_EPI_BIAS_CLIP, SEED_CLIP_LO, SEED_CLIP_HI};
    return r;
}

/* Launches our kernel: arguments by parameter name. */
static tir_status launch_prog(tir_ctx *ctx, tir_rt_program *prog, const tir_module *m,
                              tir_rt_ptr a, tir_rt_ptr b, tir_rt_ptr bias, tir_rt_ptr out) {
    tir_rt_arg args[8];
    if (m->nparams > 8) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "too many parameters");
    for (int i = 0; i < m->nparams; i++) {
        const char *n = m->params[i].name;
        if (m->params[i].kind != TIR_PARAM_BUFFER)
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "unexpected scalar parameter %s", n);
        args[i] = tir_rt_arg_ptr(!strcmp(n, "A")      ? a
                                 : !strcmp(n, "B")    ? b
                                 : !strcmp(n, "bias") ? bias
                                                      : out);
    }
    return tir_rt_program_launch(ctx, prog, m->nparams, args);
}

typedef struct bench_call {
    gpu *g;
    dprob *p;
    variant v;
    int epi;
    tir_rt_program *prog;
    const tir_module *mod;
} bench_call;

static tir_status one_call(tir_ctx *ctx, void *user, int set) {
    bench_call *c = user;
    dprob *p = c->p;
    if (c->v == V_CUBLAS) {
        tir_rt_ptr dst = c->epi < 0 ? p->ref : p->tmp;
        tir_status st = tir_rt_blas_gemm(ctx, c->g->blas, TIR_RT_GEMM_F32, p->M, p->N, p->K,
                                         p->a[set], p->b[set], TIR_RT_B_KN, dst);
        if (st != TIR_OK || c->epi < 0) return st;
        tir_rt_epilogue e = rt_epi(c->epi);
        return tir_rt_bias_epilogue(ctx, c->g->dev, p->M, p->N, p->tmp, p->bias, p->ref, &e);
    }
    if (c->v == V_UNFUSED) {
        tir_status st = launch_prog(ctx, c->prog, c->mod, p->a[set], p->b[set], p->bias, p->tmp);
        if (st != TIR_OK) return st;
        tir_rt_epilogue e = rt_epi(c->epi);
        return tir_rt_bias_epilogue(ctx, c->g->dev, p->M, p->N, p->tmp, p->bias, p->out, &e);
    }
    return launch_prog(ctx, c->prog, c->mod, p->a[set], p->b[set], p->bias, p->out);
}

/* Verifies p->out (ours) against p->ref (the reference of set 0, already
 * computed).  Returns EXIT_OK / EXIT_VERIFY / EXIT_RUNTIME. */
static int verify(tir_ctx *ctx, gpu *g, dprob *p, const char *what, double *rel_err) {
    size_t nc = (size_t)(p->M * p->N);
    float *out = malloc(nc * 4), *ref = malloc(nc * 4);
    double *ref64 = malloc(nc * sizeof(double));
    int rc = EXIT_OK;
    if (!out || !ref || !ref64) {
        rc = EXIT_RUNTIME;
        fprintf(stderr, "tirc: out of host memory\n");
        goto done;
    }
    if (tir_rt_copy_d2h(ctx, g->dev, out, p->out, nc * 4) != TIR_OK ||
        tir_rt_copy_d2h(ctx, g->dev, ref, p->ref, nc * 4) != TIR_OK) {
        fprintf(stderr, "tirc: %s: %s\n", what, tir_ctx_error(ctx));
        rc = EXIT_RUNTIME;
        goto done;
    }
    for (size_t i = 0; i < nc; i++) ref64[i] = ref[i];
    tir_rt_error_stats es;
    tir_status st = tir_rt_check(ctx, what, TIR_F32, out, ref64, p->M, p->N,
                                 tir_rt_gemm_tolerance(TIR_RT_GEMM_F32, p->K), &es);
    *rel_err = es.rel_err;
    if (st == TIR_ERR_VERIFY_MISMATCH) {
        fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
        rc = EXIT_VERIFY;
    } else if (st != TIR_OK) {
        fprintf(stderr, "tirc: %s: %s\n", what, tir_ctx_error(ctx));
        rc = EXIT_RUNTIME;
    }
done:
    free(out);
    free(ref);
    free(ref64);
    return rc;
}

/* One result row. */
typedef struct row {
    int64_t M, N, K;
    int step, epi;
    variant v;
    double ms, gflops, cublas_ms, cublas_gflops, rel_err, compile_ms;
    const char *status; /* "ok", "FAIL", "n/a" */
} row;

/* Runs (and with bench, times) one step of one epilogue at one size:
 * appends rows.  Returns an exit code. */
static int gpu_case(tir_ctx *ctx, const opts *o, gpu *g, dprob *p, int e, int step, bool bench,
                    const tir_rt_bench_result *cub, row *rows, int *nrows) {
    bool fused = is_fused(o);
    int nv = fused ? 2 : 1;
    int rc = EXIT_OK;
    for (int vi = 0; vi < nv; vi++) {
        variant v = vi == 0 ? V_OURS : V_UNFUSED;
        row r = {p->M, p->N, p->K, step, fused ? e : -1, v, NAN, NAN, cub ? cub->median_ms : NAN,
                 NAN, NAN, NAN, "ok"};
        r.cublas_gflops = cub ? 2.0 * (double)(p->M * p->N) * (double)p->K / cub->median_ms / 1e6
                              : NAN;
        const tir_prim_func *f = v == V_OURS ? define(ctx, o, e, p->M, p->N, p->K)
                                             : tir_def_matmul(ctx, p->M, p->N, p->K, TIR_F32);
        const tir_module *m = NULL;
        tir_status st = f ? compile(ctx, o, f, v == V_OURS && fused, step, &m, &r.compile_ms)
                          : TIR_ERR_INVALID_ARG;
        if (st != TIR_OK) {
            /* In a table, the first line of the message (no IR dump). */
            const char *msg = tir_ctx_error(ctx), *nl = strchr(msg, '\n');
            int len = bench && nl ? (int)(nl - msg) : (int)strlen(msg);
            fprintf(stderr, "tirc: %s step %d %s at %lldx%lldx%lld: %.*s\n", o->example, step,
                    variant_name[v], (long long)p->M, (long long)p->N, (long long)p->K, len, msg);
            r.status = "n/a";
            rows[(*nrows)++] = r;
            if (!bench || st != TIR_ERR_LOWER) rc = rc ? rc : EXIT_COMPILE;
            continue;
        }
        tir_rt_program *prog = NULL;
        bench_call c = {g, p, v, fused ? e : -1, NULL, m};
        RT(tir_rt_program_load(ctx, g->dev, m, &prog));
        c.prog = prog;
        /* Poison the output, run once on set 0, verify. */
        RT(tir_rt_memset8(ctx, g->dev, p->out, 0xFF, (size_t)(p->M * p->N) * 4));
        RT(tir_rt_memset8(ctx, g->dev, p->tmp, 0xFF, (size_t)(p->M * p->N) * 4));
        RT(one_call(ctx, &c, 0));
        RT(tir_rt_sync(ctx, g->dev));
        char what[96];
        snprintf(what, sizeof what, "%s%s%s step %d (%s)", o->example, fused ? " " : "",
                 fused ? seed_epi_name((seed_epi)e) : "", step, variant_name[v]);
        int vr = verify(ctx, g, p, what, &r.rel_err);
        if (vr != EXIT_OK) {
            r.status = "FAIL";
            rc = rc == EXIT_OK ? vr : rc;
        }
        if (bench) {
            tir_rt_bench_opts bo = {o->warmup, o->runs, 1, p->nsets, p->nsets < 2};
            tir_rt_bench_result br;
            RT(tir_rt_bench(ctx, g->dev, one_call, &c, &bo, &br));
            r.ms = br.median_ms;
            r.gflops = 2.0 * (double)(p->M * p->N) * (double)p->K / br.median_ms / 1e6;
        }
        tir_rt_program_unload(prog);
        rows[(*nrows)++] = r;
        continue;
    rt_fail:
        fprintf(stderr, "tirc: %s step %d: %s\n", o->example, step, tir_ctx_error(ctx));
        tir_rt_program_unload(prog);
        r.status = "FAIL";
        rows[(*nrows)++] = r;
        return EXIT_RUNTIME;
    }
    return rc;
}

/* The reference of set 0 into p->ref; with bench, cuBLAS's time. */
static tir_status reference(tir_ctx *ctx, const opts *o, gpu *g, dprob *p, int e, bool bench,
                            tir_rt_bench_result *res) {
    bench_call c = {g, p, V_CUBLAS, is_fused(o) ? e : -1, NULL, NULL};
    tir_status st = one_call(ctx, &c, 0);
    if (st == TIR_OK) st = tir_rt_sync(ctx, g->dev);
    if (st != TIR_OK || !bench) return st;
    tir_rt_bench_opts bo = {o->warmup, o->runs, 1, p->nsets, p->nsets < 2};
    return tir_rt_bench(ctx, g->dev, one_call, &c, &bo, res);
}

static void print_row(const opts *o, const row *r) {
    char sz[48], epi[16] = "";
    snprintf(sz, sizeof sz, "%lldx%lldx%lld", (long long)r->M, (long long)r->N, (long long)r->K);
    if (r->epi >= 0) snprintf(epi, sizeof epi, "%s", seed_epi_name((seed_epi)r->epi));
    (void)o;
    printf("%-16s %-10s %4d  %-17s %9.4f %10.1f %10.1f %7.3f %10.2e %10.1f  %s\n", sz, epi,
           r->step, variant_name[r->v], r->ms, r->gflops, r->cublas_gflops,
           r->gflops / r->cublas_gflops, r->rel_err, r->compile_ms, r->status);
}

static void print_header(void) {
    printf("%-16s %-10s %4s  %-17s %9s %10s %10s %7s %10s %10s  %s\n", "size", "epilogue",
           "step", "kernel", "ms", "GFLOPS", "cuBLAS", "ratio", "rel_err", "compile_ms", "status");
}

/* ------------------------------------------------------------ run, bench */

static int cmd_run_gpu(tir_ctx *ctx, const opts *o, gpu *g, uint64_t seed) {
    dprob p;
    int rc = EXIT_OK;
    if (dprob_make(ctx, g, &p, o->M, o->N, o->K, 1, seed) != TIR_OK) {
        fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
        dprob_free(ctx, g, &p);
        return EXIT_RUNTIME;
    }
    row rows[64];
    int nrows = 0;
    int nepi = is_fused(o) ? (o->epi < 0 ? SEED_NEPI : 1) : 1;
    print_header();
    for (int ei = 0; ei < nepi && rc != EXIT_RUNTIME; ei++) {
        int e = o->epi < 0 ? ei : o->epi;
        if (reference(ctx, o, g, &p, e, false, NULL) != TIR_OK) {
            fprintf(stderr, "tirc: cuBLAS reference: %s\n", tir_ctx_error(ctx));
            rc = EXIT_RUNTIME;
            break;
        }
        for (int step = o->step_lo; step <= o->step_hi; step++) {
            int first = nrows;
            int r = gpu_case(ctx, o, g, &p, e, step, false, NULL, rows, &nrows);
            for (int i = first; i < nrows; i++) print_row(o, &rows[i]);
            fflush(stdout);
            if (r != EXIT_OK && (rc == EXIT_OK || r == EXIT_RUNTIME)) rc = r;
            if (r == EXIT_RUNTIME) break;
        }
    }
    dprob_free(ctx, g, &p);
    return rc;
}

static int cmd_run(tir_ctx *ctx, const opts *o) {
    uint64_t seed = o->seed_given ? o->seed : (uint64_t)time(NULL);
    if (!o->sim) {
        gpu g;
        int r = gpu_open(ctx, &g, o->gpu);
        if (r == EXIT_OK) {
            fprintf(stderr, "tirc: running on %s (%s), input seed %llu\n", g.props->name,
                    g.props->arch, (unsigned long long)seed);
            r = cmd_run_gpu(ctx, o, &g, seed);
            tir_rt_close(g.dev);
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
    int nepi = is_fused(o) ? (o->epi < 0 ? SEED_NEPI : 1) : 1;
    for (int ei = 0; ei < nepi; ei++)
        for (int step = o->step_lo; step <= o->step_hi; step++) {
            int r = run_sim_one(ctx, &so, o->epi < 0 ? ei : o->epi, step, seed);
            fflush(stdout);
            if (r != EXIT_OK && rc == EXIT_OK) rc = r;
        }
    return rc;
}

static void json_num(FILE *f, const char *k, double v, bool comma) {
    if (isfinite(v))
        fprintf(f, "\"%s\": %.6g%s", k, v, comma ? ", " : "");
    else
        fprintf(f, "\"%s\": null%s", k, comma ? ", " : "");
}

static bool write_tables(const opts *o, const row *rows, int n) {
    bool ok = true;
    if (o->csv) {
        FILE *f = fopen(o->csv, "w");
        if (!f) {
            fprintf(stderr, "tirc: cannot write %s: %s\n", o->csv, strerror(errno));
            return false;
        }
        fprintf(f, "example,epilogue,M,N,K,step,kernel,ms,gflops,cublas_ms,cublas_gflops,ratio,"
                   "rel_err,compile_ms,status\n");
        for (int i = 0; i < n; i++) {
            const row *r = &rows[i];
            fprintf(f, "%s,%s,%lld,%lld,%lld,%d,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.3e,%.3f,%s\n",
                    o->example, r->epi >= 0 ? seed_epi_name((seed_epi)r->epi) : "",
                    (long long)r->M, (long long)r->N, (long long)r->K, r->step,
                    variant_name[r->v], r->ms, r->gflops, r->cublas_ms, r->cublas_gflops,
                    r->gflops / r->cublas_gflops, r->rel_err, r->compile_ms, r->status);
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
                    o->example, r->epi >= 0 ? seed_epi_name((seed_epi)r->epi) : "",
                    (long long)r->M, (long long)r->N, (long long)r->K, r->step,
                    variant_name[r->v]);
            json_num(f, "ms", r->ms, true);
            json_num(f, "gflops", r->gflops, true);
            json_num(f, "cublas_ms", r->cublas_ms, true);
            json_num(f, "cublas_gflops", r->cublas_gflops, true);
            json_num(f, "ratio", r->gflops / r->cublas_gflops, true);
            json_num(f, "rel_err", r->rel_err, true);
            json_num(f, "compile_ms", r->compile_ms, true);
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
static bool write_plot(const opts *o, const row *rows, int n) {
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
        double cub = NAN, g[SEED_NSTEPS + 1];
        for (int s = 0; s <= SEED_NSTEPS; s++) g[s] = NAN;
        while (j < n && rows[j].M == rows[i].M && rows[j].N == rows[i].N && rows[j].K == rows[i].K) {
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
            first_epi >= 0 ? (first_epi == 0 ? " bias" : first_epi == 1 ? " bias+relu" : " clip")
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

static int cmd_bench(tir_ctx *ctx, const opts *o) {
    gpu g;
    int rc = gpu_open(ctx, &g, true);
    if (rc != EXIT_OK) return rc;
    uint64_t seed = o->seed_given ? o->seed : (uint64_t)time(NULL);
    static const int64_t defaults[][3] = {{256, 256, 256},    {512, 512, 512},
                                          {1000, 1000, 1000}, {1024, 1024, 1024},
                                          {2048, 2048, 2048}, {4096, 4096, 4096}};
    int nsizes = o->nsizes ? o->nsizes : (int)(sizeof defaults / sizeof *defaults);
    int nepi = is_fused(o) ? (o->epi < 0 ? SEED_NEPI : 1) : 1;
    int nsteps = o->step_hi - o->step_lo + 1;
    int total = nsizes * nepi * nsteps, done = 0;
    row *rows = calloc((size_t)total * 3 + 1, sizeof *rows);
    int nrows = 0;
    if (!rows) {
        tir_rt_close(g.dev);
        return EXIT_RUNTIME;
    }
    fprintf(stderr, "tirc: benchmarking on %s (%s), %d runs per median, input seed %llu\n",
            g.props->name, g.props->arch, o->runs, (unsigned long long)seed);
    print_header();
    double t0 = now_ms();
    for (int si = 0; si < nsizes && rc != EXIT_RUNTIME; si++) {
        const int64_t *sz = o->nsizes ? o->sizes[si] : defaults[si];
        int64_t M = sz[0], N = sz[1], K = sz[2];
        /* Enough input sets that consecutive runs miss L2 (2x its size). */
        double set_bytes = 4.0 * (double)(M * K + K * N);
        int nsets = (int)ceil(2.0 * (double)g.props->l2_bytes / set_bytes);
        if (nsets < 1) nsets = 1;
        if (nsets > MAX_SETS) nsets = 1; /* tiny problems: flush L2 instead */
        dprob p;
        if (dprob_make(ctx, &g, &p, M, N, K, nsets, seed) != TIR_OK) {
            fprintf(stderr, "tirc: %lldx%lldx%lld: %s\n", (long long)M, (long long)N,
                    (long long)K, tir_ctx_error(ctx));
            dprob_free(ctx, &g, &p);
            rc = EXIT_RUNTIME;
            break;
        }
        for (int ei = 0; ei < nepi && rc != EXIT_RUNTIME; ei++) {
            int e = o->epi < 0 ? ei : o->epi;
            tir_rt_bench_result cub;
            if (reference(ctx, o, &g, &p, e, true, &cub) != TIR_OK) {
                fprintf(stderr, "tirc: cuBLAS reference: %s\n", tir_ctx_error(ctx));
                rc = EXIT_RUNTIME;
                break;
            }
            /* The reference row itself. */
            row cr = {M, N, K, 0, is_fused(o) ? e : -1, V_CUBLAS, cub.median_ms, NAN,
                      cub.median_ms, NAN, 0, NAN, "ok"};
            cr.gflops = cr.cublas_gflops = 2.0 * (double)(M * N) * (double)K / cub.median_ms / 1e6;
            rows[nrows++] = cr;
            print_row(o, &cr);
            for (int step = o->step_lo; step <= o->step_hi; step++) {
                fprintf(stderr, "[%d/%d, %.0f s] %lldx%lldx%lld %s%sstep %d\n", ++done, total,
                        (now_ms() - t0) / 1e3, (long long)M, (long long)N, (long long)K,
                        is_fused(o) ? seed_epi_name((seed_epi)e) : "", is_fused(o) ? " " : "",
                        step);
                /* The reference is in p.ref for set 0: recompute it, since a
                 * timed run of another set overwrote it. */
                if (reference(ctx, o, &g, &p, e, false, NULL) != TIR_OK) {
                    rc = EXIT_RUNTIME;
                    break;
                }
                int first = nrows;
                int r = gpu_case(ctx, o, &g, &p, e, step, true, &cub, rows, &nrows);
                for (int i = first; i < nrows; i++) print_row(o, &rows[i]);
                fflush(stdout);
                if (r != EXIT_OK && (rc == EXIT_OK || r == EXIT_RUNTIME)) rc = r;
                if (r == EXIT_RUNTIME) break;
            }
        }
        dprob_free(ctx, &g, &p);
    }
    if (!write_tables(o, rows, nrows) && rc == EXIT_OK) rc = EXIT_USAGE;
    if (o->plot && !write_plot(o, rows, nrows) && rc == EXIT_OK) rc = EXIT_USAGE;
    free(rows);
    tir_rt_close(g.dev);
    return rc;
}

/* ----------------------------------------------------------------- main */

int main(int argc, char **argv) {
    opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != EXIT_OK) return rc;
    if (!o.cmd || !strcmp(o.cmd, "help")) {
        if (!o.cmd && !o.help) {
            help(NULL);
            return EXIT_USAGE;
        }
        return help(o.cmd && o.example ? o.example : NULL);
    }
    bool known = !strcmp(o.cmd, "show") || !strcmp(o.cmd, "ptx") || !strcmp(o.cmd, "run") ||
                 !strcmp(o.cmd, "bench");
    if (!known) return usage_error("unknown command '%s': use show, ptx, run or bench", o.cmd);
    if (o.help) return help(o.cmd);
    if (!o.example) return usage_error("%s needs an example: matmul or fused", o.cmd);
    if (strcmp(o.example, "matmul") && strcmp(o.example, "fused"))
        return usage_error("unknown example '%s': use matmul or fused", o.example);
    if (!o.size_given) o.M = o.N = o.K = 1024;
    if (!strcmp(o.cmd, "ptx") && !o.step_given) o.step_lo = o.step_hi = SEED_NSTEPS;
    if (o.sim && o.gpu) return usage_error("--sim and --gpu exclude each other");
    if ((o.sim || o.gpu) && strcmp(o.cmd, "run"))
        return usage_error("--sim and --gpu belong to `tirc run`");
    if (o.nsizes && strcmp(o.cmd, "bench")) return usage_error("--sizes belongs to `tirc bench`");
    if ((o.csv || o.json || o.plot) && strcmp(o.cmd, "bench"))
        return usage_error("--csv, --json and --plot belong to `tirc bench`");
    if (o.out && strcmp(o.cmd, "ptx")) return usage_error("-o belongs to `tirc ptx`");
    if (o.epi >= 0 && !is_fused(&o)) return usage_error("--epilogue belongs to the fused example");
    if (is_fused(&o)) variant_name = variant_names[1];
    tir_ctx *ctx = tir_ctx_create();
    if (!ctx) {
        fprintf(stderr, "tirc: out of memory\n");
        return EXIT_RUNTIME;
    }
    if (!strcmp(o.cmd, "show"))
        rc = cmd_show(ctx, &o);
    else if (!strcmp(o.cmd, "ptx"))
        rc = cmd_ptx(ctx, &o);
    else if (!strcmp(o.cmd, "run"))
        rc = cmd_run(ctx, &o);
    else
        rc = cmd_bench(ctx, &o);
    tir_ctx_destroy(ctx);
    return rc;
}
