/* tirc.h: what the files of the tirc command share.  tirc schedules the
 * seed examples (the seed library, examples/seed/) and shows, compiles,
 * runs and benchmarks them through the public API only.  One file per
 * command (show.c, ptx.c, run.c, bench.c), and beside them the argument
 * parsing and help (args.c), scheduling and compiling (common.c), the GPU
 * problem, launch and verification that run and bench share (gpu.c) and
 * the result table with its CSV, JSON and gnuplot writers (output.c).
 * Everything a command needs travels in its arguments: no mutable globals.
 *
 * Exit codes (also in `tirc --help`): 0 ok, 1 verification failure,
 * 2 usage error, 3 no GPU where one is required, 4 compile error
 * (schedule, lowering or codegen), 5 other runtime (CUDA) error.
 */
#ifndef MINITIR_TOOLS_TIRC_H
#define MINITIR_TOOLS_TIRC_H

#include <stdbool.h>
#include <stdint.h>

#include "minitir/codegen.h"
#include "minitir/ir.h"
#include "minitir/lower.h"
#include "minitir/sim.h"
#include "minitir/runtime.h"
#include "minitir/tune.h"
#include "minitir/schedule.h"
#include "now_ms.h"
#include "seed.h"

enum {
    EXIT_OK = 0,
    EXIT_VERIFY = 1,
    EXIT_USAGE = 2,
    EXIT_NO_GPU = 3,
    EXIT_COMPILE = 4,
    EXIT_RUNTIME = 5
};

/* ------------------------------------------------------------ args.c */

/* The command line, as parsed. */
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
    bool verbose; /* ptx -v: compile time per phase */
    tir_cg_pipeline pipeline; /* --opt fast|O3|short: _FAST, _OPT, _SHORT */
    bool opt_given;      /* --opt given (else the library default) */
    bool peel_tail;      /* --peel-tail: tir_lower_opts.pipeline_peel_tail */
    bool no_cache;       /* --no-cache: tir_codegen_opts.no_cache */
    bool no_swizzle;     /* --no-swizzle: the rules' no_swizzle (tirc_schedule's
                            TIRC_TC_OFF_SWIZZLE bit) */
    int repeat;          /* ptx --repeat: compiles in one process (default 1) */
    int runs, warmup;
    uint64_t seed;
    bool seed_given;
    seed_tiles tiles; /* --tile (matmul only) */
    bool tile_given;
    int splitk;          /* --splitk (matmul Steps 7-8; 1: none) */
    bool atomic;         /* --atomic: split-K summed by atomic adds */
    char ours_name[32];  /* our kernel's name in the tables ("minitir/splitk4") */
    const char *db;      /* --db: the tuning database (tune, bench) */
    int trials, threads; /* tune: --trials, --threads */
    bool trials_given, threads_given;
    int gpus;            /* tune: --gpus (TIR_TUNE_ALL_GPUS: every one) */
    bool gpus_given;
    double minutes;      /* tune: --minutes */
    const char *replay;  /* tune: --replay file (search recorded measurements, no GPU) */
    tir_tune_model model; /* tune: --model knn|xgb|random */
    bool model_given;
    bool no_default;     /* tune: --no-default (the search without the rule's default) */
    int replay_nsm;      /* tune --replay: --nsm (the recorded GPU's multiprocessors) */
    int64_t batch;       /* tune: --batch (a batch matmul) */
    tir_tune_target target; /* bench --db: the GPU's key, set once it is open */
    bool target_given;
    int nsm;             /* the GPU's multiprocessors, once open (0: unknown) */
    tir_rt_gemm_kind kind; /* --dtype: f32 (Steps 1-8), tf32 / f16 / bf16 (Step 9) */
    int stages;            /* --stages (Step 9's pipeline; 0: hgemm.c's choice; Step 8:
                              a multistage pipeline of 2..4 stages) */
    tir_tile_config config; /* --config: Step 8's tiling rule configuration */
    bool config_given;
    unsigned tc_off;       /* --tc-off: TIRC_TC_OFF_* bits, Step 9 speed-ups turned off */
    unsigned tail;         /* --tail: one TIRC_TAIL_* bit, or 0 (the rule's default) */
    unsigned tc_on;        /* --tc-on: TIRC_TC_ON_* bits, Step 9 options turned on */
} opts;

/* --tc-off bpairs,fragpipe,interleave,prefetch: A/B switches of Step 9
 * (tir_tc_config's no_*; interleave: tir_lower_opts.no_copy_interleave;
 * prefetch: tir_lower_opts.no_tile_prefetch; swizzle: tir_tc_config.no_swizzle;
 * ldm32: tir_lower_opts.no_ldmatrix_tf32; oddpad: tir_tc_config.same_pad). */
enum { TIRC_TC_OFF_BPAIRS = 1u, TIRC_TC_OFF_FRAGPIPE = 2u, TIRC_TC_OFF_INTERLEAVE = 4u,
       TIRC_TC_OFF_PREFETCH = 8u, TIRC_TC_OFF_SWIZZLE = 16u, TIRC_TC_OFF_LDM32 = 32u,
       TIRC_TC_OFF_ODDPAD = 64u, TIRC_TC_OFF_TF32SWAP = 128u,
       TIRC_TC_OFF_SMEMSWZ = 256u, TIRC_TC_OFF_WGMMA = 512u,
       /* --tail (Steps 7-8's float32 rule): not speed-ups turned off, but
        * carried with them to tirc_schedule */
       TIRC_TAIL_GUARD = 1u << 12, TIRC_TAIL_CLAMP = 1u << 13,
       /* --tc-on wgmma, carried to tirc_schedule likewise; and whether
        * --arch is sm_90 / sm_90a (tir_tune_tc_default_arch: TF32 by
        * wgmma where it fits, unless --tc-off wgmma) */
       TIRC_TC_WGMMA = 1u << 14, TIRC_TC_SM90 = 1u << 15 };
/* --tc-on vecstore: Step 9 options that are off by default, for A/B runs
 * (vecstore: tir_lower_opts.vector_acc_store). */
enum { TIRC_TC_ON_VECSTORE = 1u, TIRC_TC_ON_WGMMA = 2u };

/* Step 9: tensor cores (examples/hgemm.c), the only step of --dtype
 * tf32 / f16 / bf16. */
enum { TIRC_STEP_TC = 9 };

/* Prints "tirc: <message>" and the help hint; returns EXIT_USAGE. */
int tirc_usage_error(const char *fmt, ...) TIR_PRINTF(1, 2);
/* Parses argv into *o; returns EXIT_OK or (after the message) EXIT_USAGE. */
int tirc_parse_args(int argc, char **argv, opts *o);
/* Prints the help of cmd (NULL: the overview). */
int tirc_help(const char *cmd);

/* ----------------------------------------------------------- common.c */

bool tirc_is_fused(const opts *o);
/* The program of an example: the matmul, or the fused GEMM of epilogue e. */
const tir_prim_func *tirc_define(tir_ctx *ctx, const opts *o, int e, int64_t M, int64_t N,
                                 int64_t K);
/* The --tile tiles, or NULL (the seed's). */
const seed_tiles *tirc_tiles(const opts *o);
/* Schedules program f for step (fused: through seed_fused; else
 * seed_schedule_tiles with tiles, NULL: the seed's; splitk > 1 (Steps
 * 7-8): sgemm_schedule with split-K, by atomic adds with atomic; Step 8
 * with config (non-NULL) or stages: sgemm_schedule with config (NULL:
 * sgemm_config_for's), stages >= 2 a multistage pipeline instead of its
 * staging; Step 9: hgemm_schedule, tiles BM x BN x BK x warps_m x warps_n
 * and stages overriding hgemm_config_for's where given, tc_off its
 * speed-ups turned off); each: prints the IR after every primitive. */
/* o's --tc-off bits, with TIRC_TC_OFF_SWIZZLE for --no-swizzle. */
unsigned tirc_tc_off(const opts *o);
tir_status tirc_schedule(tir_ctx *ctx, const tir_prim_func *f, bool fused, int step,
                         const seed_tiles *tiles, int splitk, bool atomic, int stages,
                         const tir_tile_config *config, unsigned tc_off, bool each,
                         tir_schedule **out);
/* The --config configuration, or NULL. */
const tir_tile_config *tirc_config(const opts *o);
/* The lowering options the command line asks for (--peel-tail). */
void tirc_lower_opts(const opts *o, tir_lower_opts *lo);
/* Schedules and compiles (tir_build_kernels_with and tirc_lower_opts: one
 * module, or several with split-K); *ms is the schedule -> PTX wall time. */
tir_status tirc_compile(tir_ctx *ctx, const opts *o, const tir_prim_func *f, bool fused, int step,
                        tir_module_set *m, double *ms, double *sched_ms);

/* ------------------------------------------------------------- gpu.c */

typedef struct gpu {
    tir_rt_device *dev;
    tir_rt_blas *blas;
    const tir_rt_props *props;
} gpu;

/* One problem on the device, with nsets copies of the inputs. */
enum { MAX_SETS = 16 };
typedef struct dprob {
    int64_t M, N, K;
    int nsets;
    tir_rt_gemm_kind kind; /* cuBLAS's GEMM and the inputs' type */
    tir_rt_ptr a[MAX_SETS], b[MAX_SETS], bias, out, ref, tmp;
    tir_rt_ptr ref64; /* tensor-core kinds: the float64 reference of set 0 */
} dprob;

/* What one timed call runs. */
typedef enum variant { V_OURS, V_UNFUSED, V_CUBLAS } variant;

/* One result row. */
typedef struct row {
    int64_t M, N, K;
    int step, epi;
    variant v;
    double ms, gflops, cublas_ms, cublas_gflops, rel_err, compile_ms;
    const char *status; /* "ok", "FAIL", "n/a" */
    int regs, lmem;     /* registers and local memory bytes per thread
                           (spills and stack, from the driver); -1: unknown */
    /* compile time by phase, ms: schedule, lower, LLVM (module, optimisation,
     * IR text), PTX emission, the driver's JIT (NAN: not measured) */
    double phase_ms[5];
} row;

/* The name of variant v's kernel in the tables: the fused example's
 * kernels have their own names. */
const char *tirc_kernel_name(const opts *o, variant v);

/* Opens the GPU.  Returns EXIT_OK, EXIT_NO_GPU (no driver or device; the
 * message printed only when required) or EXIT_RUNTIME. */
int tirc_gpu_open(tir_ctx *ctx, gpu *g, bool required);
/* Inputs of kind's type (float32 for f32 and tf32, else 16-bit). */
tir_status tirc_dprob_make(tir_ctx *ctx, gpu *g, dprob *p, tir_rt_gemm_kind kind, int64_t M,
                           int64_t N, int64_t K, int nsets, uint64_t seed);
void tirc_dprob_free(tir_ctx *ctx, gpu *g, dprob *p);
/* Runs (and with bench, times) one step of one epilogue at one size:
 * appends rows.  Returns an exit code. */
int tirc_gpu_case(tir_ctx *ctx, const opts *o, gpu *g, dprob *p, int e, int step, bool bench,
                  const tir_rt_bench_result *cub, row *rows, int *nrows);
/* Warns on stderr that the bench's samples of `what` were not back to back. */
void tirc_note_host_bound(const tir_rt_bench_result *br, const char *what);
/* The reference of set 0 into p->ref; with bench, cuBLAS's time. */
tir_status tirc_reference(tir_ctx *ctx, const opts *o, gpu *g, dprob *p, int e, bool bench,
                          tir_rt_bench_result *res);

/* ---------------------------------------------------------- output.c */

/* The table on standard output. */
void tirc_print_header(void);
void tirc_print_row(const opts *o, const row *r);
/* --csv and --json; false (after the message) if a file cannot be written. */
bool tirc_write_tables(const opts *o, const row *rows, int n);
/* --plot: the data, the gnuplot script and, where gnuplot exists, the chart. */
bool tirc_write_plot(const opts *o, const row *rows, int n);

/* -------------------------------------------------------- the commands */

int tirc_cmd_show(tir_ctx *ctx, const opts *o);
int tirc_cmd_ptx(tir_ctx *ctx, const opts *o);
int tirc_cmd_run(tir_ctx *ctx, const opts *o);
int tirc_cmd_bench(tir_ctx *ctx, opts *o);
int tirc_cmd_tune(tir_ctx *ctx, const opts *o);
/* bench --db: the database's best schedule of f on this GPU, or the rule's
 * default (*tuned false). */
tir_status tirc_tuned_schedule(tir_ctx *ctx, const opts *o, const tir_prim_func *f,
                               tir_schedule **out, bool *tuned);

#endif
