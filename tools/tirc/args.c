/* args.c: tirc's command line: the options of every command into an opts
 * (parse_args), usage errors and the help texts.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tirc.h"

static const char *const exit_help =
    "Exit status: 0 ok, 1 verification failure (wrong result, NaN), 2 usage error,\n"
    "3 no GPU where one is required, 4 compile error (schedule, lowering, codegen),\n"
    "5 other runtime (CUDA, cuBLAS) error.\n";

static const char *const examples_help =
    "Examples:\n"
    "  matmul   C[M,N] = A[M,K] B[K,N] in float32, the seed's Steps 1-6\n"
    "  fused    D = epilogue(A B + bias[j]) with the epilogue fused into the\n"
    "           reduction (fuse_reduction_epilogue) and then Steps 1-6;\n"
    "           --epilogue bias|bias+relu|clip|all (default all)\n"
    "--tile BMxBNxBK[xTMxTN] (matmul, Steps 1-6 and 9, not with --db): block tile\n"
    "and k tile, thread tile (default 32x32x32x8x4; Step 9: warps, not threads);\n"
    "e.g. 128x128x32x8x8 double-buffers 64 KiB of shared memory in Steps 5-6, which\n"
    "runs as dynamic shared memory (past 48 KiB).  Steps 7-8 take the tiling rule's.\n"
    "--splitk S (matmul, Steps 7-9): split-K, S partial sums of k slices (rfactor,\n"
    "blockIdx.z) summed by a second kernel; the kernel column shows minitir/splitkS.\n"
    "Step 9 (--dtype) needs K / BK a multiple of S; its default splits by itself\n"
    "where fewer than a wave of small tiles exist and K is long.\n"
    "--atomic (with --splitk): the partial sums added to C with atomic float adds\n"
    "after a kernel that zeroes C, instead of the second kernel; the summation\n"
    "order, hence the rounding, varies between runs (minitir/splitkS-atomic).\n"
    "--config TEXT (matmul, Step 8, not with --db): the tiling rule's configuration\n"
    "instead of the default by shape, as a tuning record's decisions, e.g.\n"
    "\"warps=2x2 lanes=4x8 thread=4x2 bk=16 vec=2 staging=0 pad=4 splitk=1 lsr=1\"\n"
    "(\" stages=N\" may end it, then \" gvec=1\": vector stores of a ragged output,\n"
    "and \" dunroll=1\": the direct PTX emitter's own unrolling of small k loops\n"
    "instead of LLVM's, docs/tuning.md).\n"
    "--stages N (Step 8, float32, not with --db): a multistage pipeline of N = 2..4\n"
    "stages (cp.async copies of N - 1 k tiles in flight) instead of register\n"
    "staging, on the default or --config; with --dtype: Step 9's pipeline depth.\n"
    "--tc-off bpairs,fragpipe,interleave,prefetch,swizzle,ldm32,oddpad,tf32swap,smemswz,\n"
    "wgmma\n"
    "(Step 9; bpairs, fragpipe, swizzle, oddpad, smemswz and wgmma not with --db):\n"
    "turns speed-ups off for A/B runs. bpairs:\n"
    "B fragments by one ldmatrix.x2.trans per 16x8 tile instead of one x4.trans per\n"
    "two tiles;\n"
    "fragpipe: the k steps of a k tile one after the other instead of loading\n"
    "step s + 1's fragments before step s's mma; interleave: a k tile's cp.async\n"
    "copies all before its mma instead of spread among them (lowering);\n"
    "prefetch: a k tile's first fragments loaded after its barrier instead of\n"
    "before the previous tile's last mma (lowering); swizzle: blocks in raster\n"
    "order instead of groups of 8 block rows (grids of 1024+ blocks); ldm32: TF32 A\n"
    "fragments by per-lane shared loads instead of one ldmatrix.x4 per 16x8 tile\n"
    "(lowering; with A's rows padded, as smemswz); oddpad: A's shared rows padded like B's instead of to an odd\n"
    "number of 16-byte chunks (TF32: pad 8 instead of 4); tf32swap: TF32 mma with\n"
    "A and B as the schedule wrote them instead of swapped (B's 16 columns as the\n"
    "instruction's A operand, two ld.shared.v2 instead of four loads; lowering);\n"
    "smemswz: every shared row padded as before instead of the rows of whole\n"
    "128-byte segments that ldmatrix reads left unpadded and swizzled by lowering;\n"
    "wgmma: TF32 by mma.sync on sm_90, where the default is wgmma when M and N are\n"
    "multiples of 128, K of 32 and 128x128 blocks fill the GPU (tir_tune_tc_default_arch;\n"
    "any of bpairs, fragpipe, ldm32, oddpad, tf32swap, smemswz, --tile or --splitk also\n"
    "keeps mma.sync).\n"
    "--tc-on vecstore,wgmma (Step 9; wgmma not with --db): turns on options that are\n"
    "off by default, for A/B runs. vecstore: each 16x8 accumulator tile written with one 16-byte store per\n"
    "lane after a warp shuffle instead of two 8-byte stores (lowering; tiles\n"
    "inside C only, the others as before). wgmma: TF32 through Hopper's warpgroup\n"
    "MMA (wgmma.mma_async, sm_90a) instead of mma.sync, 128x128x32 tiles of 1x4\n"
    "warps in 3 stages unless --tile / --stages say otherwise; M and N multiples of\n"
    "the tile.\n";

int tirc_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tirc: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(try `tirc --help` or `tirc <command> --help`)\n");
    return EXIT_USAGE;
}

/* A whole decimal number in lo..hi: digits only (no sign, space or
 * trailing text), each option stating its own range (a shared cap once
 * refused --trials 100000 that its message allowed). */
static bool parse_count(const char *s, int64_t lo, int64_t hi, int64_t *v) {
    char *end;
    if (*s < '0' || *s > '9') return false;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi) return false;
    *v = x;
    return true;
}

/* The fields of s separated by sep into f[0..max-1], each a count in
 * lo..hi; *n their number.  False on an empty field, more than max
 * fields or a field that is no count in range ("64x64x32q" and
 * "4294967298" once passed as 64x64x32 and step 2, read by sscanf). */
static bool parse_counts(const char *s, char sep, int max, int64_t lo, int64_t hi, int64_t *f,
                         int *n) {
    *n = 0;
    for (;;) {
        size_t len = strcspn(s, (char[]){sep, 0});
        char buf[32];
        if (*n == max || len == 0 || len >= sizeof buf) return false;
        memcpy(buf, s, len);
        buf[len] = 0;
        if (!parse_count(buf, lo, hi, &f[(*n)++])) return false;
        if (!s[len]) return true;
        s += len + 1;
    }
}

/* "N" (square) or "MxNxK" ('X' too). */
static bool parse_size(const char *s, int64_t out[3]) {
    char buf[64];
    int64_t f[3];
    int n;
    if (strlen(s) >= sizeof buf) return false;
    for (size_t i = 0; i <= strlen(s); i++) buf[i] = s[i] == 'X' ? 'x' : s[i];
    if (!parse_counts(buf, 'x', 3, 1, 65536, f, &n) || n == 2) return false;
    for (int i = 0; i < 3; i++) out[i] = f[n == 1 ? 0 : i];
    return true;
}

/* "BMxBNxBK" or "BMxBNxBKxTMxTN" (thread tile default 8x4). */
static bool parse_tile(const char *s, seed_tiles *t) {
    int64_t v[5] = {0, 0, 0, 8, 4};
    int n;
    if (!parse_counts(s, 'x', 5, 1, 1024, v, &n) || (n != 3 && n != 5)) return false;
    *t = (seed_tiles){.bm = (int)v[0], .bn = (int)v[1], .bk = (int)v[2], .tm = (int)v[3],
                      .tn = (int)v[4]};
    return true;
}

/* "N" or "A-B". */
static bool parse_steps(const char *s, int *lo, int *hi) {
    int64_t f[2];
    int n;
    if (!parse_counts(s, '-', 2, 1, TIRC_STEP_TC, f, &n) || f[0] > f[n - 1]) return false;
    *lo = (int)f[0], *hi = (int)f[n - 1];
    return true;
}

/* --seed: a whole number 0..2^64-1, decimal (as tirc prints it) or 0x hex. */
static bool parse_seed(const char *s, uint64_t *v) {
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const char *d = hex ? s + 2 : s;
    if (!(hex ? isxdigit((unsigned char)*d) : isdigit((unsigned char)*d))) return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(d, &end, hex ? 16 : 10);
    if (errno || *end) return false;
    *v = x;
    return true;
}

/* --minutes: a positive finite number. */
static bool parse_minutes(const char *s, double *v) {
    if (!isdigit((unsigned char)s[0]) && s[0] != '.') return false;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || *end || !isfinite(x) || x <= 0) return false;
    *v = x;
    return true;
}

typedef struct flag_name {
    const char *name;
    unsigned bit;
} flag_name;

/* --tc-off: names of Step 9 speed-ups to turn off, comma-separated. */
static const flag_name tc_off_names[] = {{"bpairs", TIRC_TC_OFF_BPAIRS},
                                         {"fragpipe", TIRC_TC_OFF_FRAGPIPE},
                                         {"interleave", TIRC_TC_OFF_INTERLEAVE},
                                         {"prefetch", TIRC_TC_OFF_PREFETCH},
                                         {"swizzle", TIRC_TC_OFF_SWIZZLE},
                                         {"ldm32", TIRC_TC_OFF_LDM32},
                                         {"oddpad", TIRC_TC_OFF_ODDPAD},
                                         {"wgmma", TIRC_TC_OFF_WGMMA},
                                         {"tf32swap", TIRC_TC_OFF_TF32SWAP},
                                         {"smemswz", TIRC_TC_OFF_SMEMSWZ}};
/* --tc-on: names of Step 9 options to turn on. */
static const flag_name tc_on_names[] = {{"vecstore", TIRC_TC_ON_VECSTORE},
                                        {"wgmma", TIRC_TC_ON_WGMMA}};

/* A comma-separated list of the nn names into *bits. */
static bool parse_flags(const char *v, const flag_name *names, size_t nn, unsigned *bits) {
    for (;;) { /* name (',' name)*: no empty names */
        size_t n = strcspn(v, ",");
        bool found = false;
        for (size_t k = 0; k < nn; k++)
            if (strlen(names[k].name) == n && !strncmp(v, names[k].name, n))
                *bits |= names[k].bit, found = true;
        if (!found) return false;
        if (!v[n]) return true;
        v += n + 1;
    }
}

/* --dtype: the matmul's input type (float32 accumulation throughout). */
static bool parse_dtype(const char *s, tir_rt_gemm_kind *k) {
    static const tir_rt_gemm_kind kinds[] = {TIR_RT_GEMM_F32, TIR_RT_GEMM_TF32, TIR_RT_GEMM_F16,
                                             TIR_RT_GEMM_BF16};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(s, tir_rt_gemm_kind_name(kinds[i]))) {
            *k = kinds[i];
            return true;
        }
    return false;
}

/* Takes the value of option argv[*i]. */
static const char *value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

/* Which commands take each option: an option a command would ignore is
 * a usage error (`tirc ptx --seed 3`, `tirc tune --tile ...`, `tirc bench
 * --size 512` once ran as if it were not there).  no_replay: not with
 * tune --replay, which searches recorded measurements (no GPU, no
 * records, no chart); hint: said after the commands. */
enum { C_SHOW = 1, C_PTX = 2, C_RUN = 4, C_BENCH = 8, C_TUNE = 16, C_ALL = 31 };
typedef struct option_use {
    const char *name, *alias;
    unsigned cmds;
    bool no_replay;
    const char *hint;
} option_use;
static const option_use option_uses[] = {
    {"--step", "--steps", C_SHOW | C_PTX | C_RUN | C_BENCH, false,
     "`tirc tune` tunes the tiling rules"},
    {"--size", NULL, C_SHOW | C_PTX | C_RUN | C_TUNE, false, "`tirc bench` takes --sizes"},
    {"--sizes", NULL, C_BENCH, false, NULL},
    {"--tile", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false, "`tirc tune` samples the tiles"},
    {"--splitk", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false, "`tirc tune` samples split-K"},
    {"--atomic", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false, NULL},
    {"--db", NULL, C_BENCH | C_TUNE, true, NULL},
    {"--trials", NULL, C_TUNE, false, NULL},
    {"--gpus", NULL, C_TUNE, true, NULL},
    {"--threads", NULL, C_TUNE, true, NULL},
    {"--batch", NULL, C_TUNE, false, NULL},
    {"--no-default", NULL, C_TUNE, false, NULL},
    {"--replay", NULL, C_TUNE, false, NULL},
    {"--model", NULL, C_TUNE, false, NULL},
    {"--nsm", NULL, C_TUNE, false, NULL},
    {"--minutes", NULL, C_TUNE, true, NULL},
    {"--stages", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false, "`tirc tune` samples them"},
    {"--config", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false, "`tirc tune` samples it"},
    {"--tc-off", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false, NULL},
    {"--tc-on", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false, NULL},
    {"--dtype", NULL, C_ALL, false, NULL},
    {"--epilogue", NULL, C_ALL, false, NULL},
    {"--arch", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false,
     "`tirc tune` compiles for the GPU it measures on"},
    {"--opt", NULL, C_PTX | C_RUN | C_BENCH, false, NULL},
    {"--peel-tail", NULL, C_PTX | C_RUN | C_BENCH, false, NULL},
    {"--no-cache", NULL, C_PTX | C_RUN | C_BENCH, false, NULL},
    {"--no-swizzle", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false, NULL},
    {"--tail", NULL, C_SHOW | C_PTX | C_RUN | C_BENCH, false, NULL},
    {"--repeat", NULL, C_PTX, false, NULL},
    {"-v", "--verbose", C_PTX, false, NULL},
    {"-o", "--output", C_PTX, false, NULL},
    {"--csv", NULL, C_BENCH, false, NULL},
    {"--json", NULL, C_BENCH, false, NULL},
    {"--plot", NULL, C_BENCH | C_TUNE, true, NULL},
    {"--runs", NULL, C_BENCH | C_TUNE, true, NULL},
    {"--seed", NULL, C_RUN | C_BENCH | C_TUNE, false, NULL},
    {"--trace", NULL, C_SHOW | C_TUNE, true, NULL},
    {"--each", NULL, C_SHOW, false, NULL},
    {"--sim", NULL, C_RUN, false, NULL},
    {"--gpu", NULL, C_RUN, false, NULL},
};
enum { NOPTION_USES = sizeof option_uses / sizeof *option_uses };

/* The option_uses index of option a, or -1. */
static int option_use_of(const char *a) {
    for (int k = 0; k < NOPTION_USES; k++)
        if (!strcmp(a, option_uses[k].name) ||
            (option_uses[k].alias && !strcmp(a, option_uses[k].alias)))
            return k;
    return -1;
}

/* Every option given is one that o->cmd (a known command) takes. */
static int check_option_uses(const opts *o, const char *const *given) {
    static const char *const cmd_names[] = {"show", "ptx", "run", "bench", "tune"};
    unsigned cmd = 0;
    for (int c = 0; c < 5; c++)
        if (!strcmp(o->cmd, cmd_names[c])) cmd = 1u << c;
    if (!cmd) return EXIT_OK; /* main says the command is unknown */
    for (int k = 0; k < NOPTION_USES; k++) {
        const option_use *u = &option_uses[k];
        if (!given[k]) continue;
        if (o->replay && u->no_replay)
            return tirc_usage_error("%s is not for --replay, which searches recorded "
                                    "measurements (no --db, --minutes, --gpus, --threads, "
                                    "--runs, --plot or --trace)",
                                    given[k]);
        if (u->cmds & cmd) continue;
        char list[128] = "";
        int n = 0, total = __builtin_popcount(u->cmds);
        for (int c = 0; c < 5; c++)
            if (u->cmds & (1u << c)) {
                n++;
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s`tirc %s`",
                         n == 1 ? "" : n == total ? " and " : ", ", cmd_names[c]);
            }
        return tirc_usage_error("%s belongs to %s%s%s", given[k], list, u->hint ? "; " : "",
                                u->hint ? u->hint : "");
    }
    return EXIT_OK;
}

int tirc_parse_args(int argc, char **argv, opts *o) {
    const char *given[NOPTION_USES] = {0}; /* as spelled */
    memset(o, 0, sizeof *o);
    o->epi = -1;
    o->splitk = 1;
    o->repeat = 1;
    o->arch = "sm_90";
    o->runs = 30;
    o->warmup = 5;
    o->step_lo = 1, o->step_hi = SEED_NSTEPS;
    o->trials = 200, o->threads = 8, o->gpus = TIR_TUNE_ALL_GPUS;
    o->kind = TIR_RT_GEMM_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int use = option_use_of(a);
        if (use >= 0) given[use] = a;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            o->help = true;
        } else if (a[0] != '-') {
            if (!o->cmd)
                o->cmd = a;
            else if (!o->example)
                o->example = a;
            else
                return tirc_usage_error("unexpected argument '%s'", a);
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
                return tirc_usage_error("%s wants a step 1..%d or a range like 1-%d", a,
                                        TIRC_STEP_TC, SEED_NSTEPS);
            o->step_given = true;
        } else if (!strcmp(a, "--size")) {
            int64_t s[3];
            if (!(v = value(argc, argv, &i)) || !parse_size(v, s))
                return tirc_usage_error(
                    "--size wants N or MxNxK (each 1..65536), e.g. 1000x520x333");
            o->M = s[0], o->N = s[1], o->K = s[2];
            o->size_given = true;
        } else if (!strcmp(a, "--sizes")) {
            if (!(v = value(argc, argv, &i)))
                return tirc_usage_error(
                    "--sizes wants a comma-separated list, e.g. 256,512,1000x520x333");
            /* each item in place (a copy of 1024 bytes once cut a long list
               short, and strtok skipped empty items) */
            o->nsizes = 0;
            for (const char *t = v;; t++) {
                size_t len = strcspn(t, ",");
                char item[64];
                if (o->nsizes == 64) return tirc_usage_error("--sizes: at most 64 sizes");
                snprintf(item, sizeof item, "%.*s", (int)len, t);
                if (len >= sizeof item || !parse_size(item, o->sizes[o->nsizes]))
                    return tirc_usage_error("--sizes: '%.*s' is not N or MxNxK (each 1..65536)",
                                            (int)len, t);
                o->nsizes++;
                t += len;
                if (!*t) break;
            }
            if (o->nsizes == 0) return tirc_usage_error("--sizes: empty list");
        } else if (!strcmp(a, "--tile")) {
            if (!(v = value(argc, argv, &i)) || !parse_tile(v, &o->tiles))
                return tirc_usage_error("--tile wants BMxBNxBK or BMxBNxBKxTMxTN, e.g. "
                                        "128x128x32x8x8");
            o->tile_given = true;
        } else if (!strcmp(a, "--splitk")) {
            int64_t k;
            if (!(v = value(argc, argv, &i)) || !parse_count(v, 1, 65535, &k))
                return tirc_usage_error("--splitk wants a split count 1..65535");
            o->splitk = (int)k;
        } else if (!strcmp(a, "--db")) {
            if (!(o->db = value(argc, argv, &i))) return tirc_usage_error("--db wants a file name");
        } else if (!strcmp(a, "--trials")) {
            int64_t k;
            if (!(v = value(argc, argv, &i)) || !parse_count(v, 1, 1000000, &k))
                return tirc_usage_error("--trials wants a count 1..1000000");
            o->trials = (int)k, o->trials_given = true;
        } else if (!strcmp(a, "--gpus")) {
            int64_t k;
            if (!(v = value(argc, argv, &i)) || !parse_count(v, 1, TIR_TUNE_MAX_GPUS, &k))
                return tirc_usage_error("--gpus wants a count 1..%d", TIR_TUNE_MAX_GPUS);
            o->gpus = (int)k, o->gpus_given = true;
        } else if (!strcmp(a, "--threads")) {
            int64_t k;
            if (!(v = value(argc, argv, &i)) || !parse_count(v, 1, 64, &k))
                return tirc_usage_error("--threads wants a count 1..64");
            o->threads = (int)k, o->threads_given = true;
        } else if (!strcmp(a, "--batch")) {
            if (!(v = value(argc, argv, &i)) || !parse_count(v, 1, 65536, &o->batch))
                return tirc_usage_error("--batch wants a batch count 1..65536");
        } else if (!strcmp(a, "--no-default")) {
            o->no_default = true;
        } else if (!strcmp(a, "--replay")) {
            if (!(o->replay = value(argc, argv, &i)))
                return tirc_usage_error("--replay wants a tuning database");
        } else if (!strcmp(a, "--model")) {
            if (!(v = value(argc, argv, &i)) || !tir_tune_model_parse(v, &o->model))
                return tirc_usage_error("--model wants auto, knn, xgb or random");
            o->model_given = true;
        } else if (!strcmp(a, "--nsm")) {
            int64_t k;
            if (!(v = value(argc, argv, &i)) || !parse_count(v, 1, 100000, &k))
                return tirc_usage_error("--nsm wants a multiprocessor count 1..100000");
            o->replay_nsm = (int)k;
        } else if (!strcmp(a, "--minutes")) {
            if (!(v = value(argc, argv, &i)) || !parse_minutes(v, &o->minutes))
                return tirc_usage_error("--minutes wants a positive number, e.g. 1.5");
        } else if (!strcmp(a, "--atomic")) {
            o->atomic = true;
        } else if (!strcmp(a, "--stages")) {
            int64_t k;
            if (!(v = value(argc, argv, &i)) || !parse_count(v, 1, 8, &k))
                return tirc_usage_error("--stages wants a pipeline depth 1..8");
            o->stages = (int)k;
        } else if (!strcmp(a, "--config")) {
            tir_ctx *c = tir_ctx_create();
            bool ok = c && (v = value(argc, argv, &i)) &&
                      tir_tile_config_parse(c, v, &o->config) == TIR_OK;
            tir_ctx_destroy(c);
            if (!ok)
                return tirc_usage_error("--config wants a tiling configuration, e.g. \"warps=2x2 "
                                        "lanes=4x8 thread=4x2 bk=16 vec=2 staging=0 pad=4 "
                                        "splitk=1 lsr=1\"");
            o->config_given = true;
        } else if (!strcmp(a, "--tc-off")) {
            if (!(v = value(argc, argv, &i)) ||
                !parse_flags(v, tc_off_names, sizeof tc_off_names / sizeof *tc_off_names,
                             &o->tc_off))
                return tirc_usage_error(
                    "--tc-off wants a comma-separated list of: bpairs, fragpipe, interleave, prefetch, "
                    "swizzle, ldm32, oddpad, tf32swap, smemswz, wgmma");
        } else if (!strcmp(a, "--tc-on")) {
            if (!(v = value(argc, argv, &i)) ||
                !parse_flags(v, tc_on_names, sizeof tc_on_names / sizeof *tc_on_names, &o->tc_on))
                return tirc_usage_error("--tc-on wants a comma-separated list of: vecstore, wgmma");
        } else if (!strcmp(a, "--dtype")) {
            if (!(v = value(argc, argv, &i)) || !parse_dtype(v, &o->kind))
                return tirc_usage_error("--dtype wants f32, tf32, f16 or bf16");
        } else if (!strcmp(a, "--epilogue")) {
            if (!(v = value(argc, argv, &i))) return tirc_usage_error("--epilogue wants a name");
            if (!strcmp(v, "all"))
                o->epi = -1;
            else if ((o->epi = seed_epi_parse(v)) < 0)
                return tirc_usage_error("unknown epilogue '%s': use bias, bias+relu, clip or all",
                                        v);
        } else if (!strcmp(a, "--arch")) {
            if (!(o->arch = value(argc, argv, &i)))
                return tirc_usage_error("--arch wants e.g. sm_90");
        } else if (!strcmp(a, "--opt")) {
            if (!(v = value(argc, argv, &i)) ||
                (strcmp(v, "fast") && strcmp(v, "O3") && strcmp(v, "short") &&
                 strcmp(v, "direct")))
                return tirc_usage_error("--opt wants direct, fast, O3 or short (pipelines, see "
                                        "tir_cg_pipeline)");
            o->pipeline = !strcmp(v, "fast")     ? TIR_CG_PIPELINE_FAST
                          : !strcmp(v, "short")  ? TIR_CG_PIPELINE_SHORT
                          : !strcmp(v, "direct") ? TIR_CG_PIPELINE_DIRECT
                                                 : TIR_CG_PIPELINE_OPT;
            o->opt_given = true;
        } else if (!strcmp(a, "--peel-tail")) {
            o->peel_tail = true;
        } else if (!strcmp(a, "--no-cache")) {
            o->no_cache = true;
        } else if (!strcmp(a, "--no-swizzle")) {
            o->no_swizzle = true;
        } else if (!strcmp(a, "--tail")) {
            if (!(v = value(argc, argv, &i)) || (strcmp(v, "guard") && strcmp(v, "clamp")))
                return tirc_usage_error("--tail wants guard or clamp");
            o->tail = !strcmp(v, "guard") ? TIRC_TAIL_GUARD : TIRC_TAIL_CLAMP;
        } else if (!strcmp(a, "--repeat")) {
            int64_t k;
            if (!(v = value(argc, argv, &i)) || !parse_count(v, 1, 1000, &k))
                return tirc_usage_error("--repeat wants a count 1..1000");
            o->repeat = (int)k;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o->verbose = true;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(o->out = value(argc, argv, &i))) return tirc_usage_error("-o wants a file name");
        } else if (!strcmp(a, "--csv")) {
            if (!(o->csv = value(argc, argv, &i)))
                return tirc_usage_error("--csv wants a file name");
        } else if (!strcmp(a, "--json")) {
            if (!(o->json = value(argc, argv, &i)))
                return tirc_usage_error("--json wants a file name");
        } else if (!strcmp(a, "--plot")) {
            if (!(o->plot = value(argc, argv, &i)))
                return tirc_usage_error("--plot wants a file name");
            size_t n = strlen(o->plot);
            if (n < 5 || (strcmp(o->plot + n - 4, ".png") && strcmp(o->plot + n - 4, ".svg")))
                return tirc_usage_error("--plot wants a .png or .svg file name");
            /* The name goes quoted into gnuplot's command line and script,
             * and into fixed buffers for the .csv/.dat and .gp beside it. */
            if (strpbrk(o->plot, "'\"\\\n\r") || n > 1000)
                return tirc_usage_error("--plot wants a file name of at most 1000 characters "
                                        "without quotes, backslashes or line breaks");
        } else if (!strcmp(a, "--runs")) {
            int64_t r;
            if (!(v = value(argc, argv, &i)) || !parse_count(v, 20, 1000000, &r))
                return tirc_usage_error("--runs wants a count 20..1000000");
            o->runs = (int)r;
        } else if (!strcmp(a, "--seed")) {
            if (!(v = value(argc, argv, &i)) || !parse_seed(v, &o->seed))
                return tirc_usage_error("--seed wants a whole number 0..%llu (or 0x hex)",
                                        (unsigned long long)UINT64_MAX);
            o->seed_given = true;
        } else {
            return tirc_usage_error("unknown option '%s'", a);
        }
    }
    if (o->cmd && !o->help) {
        int rc = check_option_uses(o, given);
        if (rc != EXIT_OK) return rc;
    }
    /* Step 9 (tensor cores) is the --dtype tf32/f16/bf16 matmul, and only it. */
    bool tc = o->kind != TIR_RT_GEMM_F32;
    if (tc && o->example && strcmp(o->example, "matmul"))
        return tirc_usage_error("--dtype is for the matmul example only");
    if (tc && !o->step_given) o->step_lo = o->step_hi = TIRC_STEP_TC;
    if (tc && o->step_lo != TIRC_STEP_TC)
        return tirc_usage_error("--dtype %s runs Step 9 (tensor cores) only",
                                tir_rt_gemm_kind_name(o->kind));
    if (!tc && o->step_hi == TIRC_STEP_TC)
        return tirc_usage_error("Step 9 (tensor cores) needs --dtype tf32, f16 or bf16");
    if (tc && o->atomic) return tirc_usage_error("--atomic is for float32 (Steps 7-8)");
    if ((o->stages && !tc) || o->config_given) {
        const char *what = o->config_given ? "--config" : "--stages";
        if (tc) return tirc_usage_error("--config is for float32 (Step 8)");
        if (o->step_hi != 8 || (o->example && strcmp(o->example, "matmul")))
            return tirc_usage_error("%s is for Step 8 of the matmul example (--step 8)", what);
        if (o->splitk > 1 || o->db || o->tile_given)
            return tirc_usage_error("%s is not for --splitk, --db or --tile (a configuration "
                                    "has its split-K)",
                                    what);
        if (o->stages && (o->stages < 2 || o->stages > 4))
            return tirc_usage_error("--stages for Step 8 wants 2..4 (a multistage pipeline)");
    }
    if (o->tc_off && !tc)
        return tirc_usage_error("--tc-off is for Step 9 (tensor cores, --dtype)");
    if (o->tc_on && !tc)
        return tirc_usage_error("--tc-on is for Step 9 (tensor cores, --dtype)");
    if (o->tile_given && o->example && strcmp(o->example, "matmul"))
        return tirc_usage_error("--tile is for the matmul example only");
    if (o->tail && (o->db || (o->example && strcmp(o->example, "matmul")) || o->splitk > 1 ||
                    o->stages || tc))
        return tirc_usage_error("--tail is for the float32 rule's Steps 7-8 of the matmul "
                                "example (register staging), not with --splitk, --stages or "
                                "--db");
    if (o->no_swizzle && (o->db || (o->example && strcmp(o->example, "matmul")) || o->step_lo < 7))
        return tirc_usage_error("--no-swizzle is for the tiling rules' Steps 7-9 of the matmul "
                                "example (--steps 7-8 or --dtype), not with --db (a record "
                                "has its schedule)");
    snprintf(o->ours_name, sizeof o->ours_name,
             o->splitk <= 1  ? "minitir"
             : o->atomic     ? "minitir/splitk%d-atomic"
                             : "minitir/splitk%d",
             o->splitk);
    if (o->atomic && o->splitk <= 1)
        return tirc_usage_error("--atomic is for split-K: give --splitk S with S >= 2");
    if (o->splitk > 1 && o->example && strcmp(o->example, "matmul"))
        return tirc_usage_error("--splitk is for the matmul example only");
    if (o->splitk > 1 && !tc && (o->step_lo < 7 || o->tile_given))
        return tirc_usage_error("--splitk is for Steps 7 and 8 (sgemm.c's tiles): give --step 8 "
                                "(or 7, or 7-8), and no --tile");
    return EXIT_OK;
}

int tirc_help(const char *cmd) {
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
               "  tune    search the tiling rule's design space on the GPU (tir_tune)\n"
               "  help    this text; `tirc <command> --help` for a command's options\n"
               "          (an option the command would not use is a usage error)\n\n"
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
               "                          [--epilogue E] [--tile T] [--splitk S [--atomic]]\n"
               "                          [-v] [--opt short|fast|O3|direct] [--repeat N]\n"
               "                          [--no-cache]\n"
               "                          [--peel-tail]\n"
               "                          [--config C] [--stages N] [--tail T]\n\n"
               "Schedules one step (default 8; fused: 6), lowers it and writes its PTX to\n"
               "the file (default standard output); launch shape and compile time go to\n"
               "stderr, with -v split by phase (schedule, lower, LLVM module, LLVM\n"
               "optimisation, LLVM IR text, PTX emission).  --opt picks the pipeline:\n"
               "direct (default: the PTX printed without LLVM where the kernel allows, such\n"
               "as Steps 7-8 at 1024 and up, not with loops small enough for LLVM to\n"
               "unroll (Steps 1-3); -v says why not; else short), short (a short\n"
               "LLVM pass pipeline for kernels without loops for LLVM to unroll, else fast),\n"
               "fast (default<O3>, backend at O2) or O3 (backend at O3); see tir_cg_pipeline\n"
               "and docs/performance.md.\n"
               "fused takes one epilogue (default bias+relu).  Default size 1024.\n"
               "--repeat N compiles N times in one process (-v: each compile's phases;\n"
               "the first pays the process's one-time costs; the others find the PTX in\n"
               "the codegen cache, or with --no-cache show what a long-running tuner pays\n"
               "per new kernel).  --no-cache: no codegen cache (tir_codegen_opts.no_cache;\n"
               "MINITIR_CACHE_DIR=dir keeps its entries on disk, for later processes).\n"
               "--peel-tail: pipelines peel their epilogue (the last k tiles' compute\n"
               "emitted again after the loop) instead of running it in the loop with the\n"
               "copies guarded (software_pipeline_guard_tail, set by Steps 8-9's rules;\n"
               "tir_lower_opts.pipeline_peel_tail), for A/B runs (also for run and bench).\n"
               "--tail guard|clamp (matmul, Steps 7-8, float32): the k-tile pipeline's\n"
               "tail as tir_tile_config .guard_tail or .clamp_tail instead of the rule's\n"
               "default (peeled), for A/B runs (also for run and bench; the other steps\n"
               "ignore it).\n"
               "--no-swizzle: the tiling rules' blocks (Steps 7-9) in raster order instead\n"
               "of groups of 8 block rows on grids of 1024+ blocks (tir_tile_config and\n"
               "tir_tc_config .no_swizzle; not with --db), for A/B runs (also for run and\n"
               "bench).\n\n"
               "%s\n%s",
               examples_help, exit_help);
    } else if (!strcmp(cmd, "tune")) {
        printf("usage: tirc tune <example> --size MxNxK [--batch B | --dtype D] [--trials N]\n"
               "                           [--minutes M] [--threads T] [--gpus G] [--db file]\n"
               "                           [--plot file.png|svg] [--runs R] [--seed S] [--trace]\n"
               "                           [--model auto|knn|xgb|random] [--no-default]\n"
               "       tirc tune <example> --size MxNxK --replay file.db [--model M] [--trials N]\n"
               "                           [--seed S] [--nsm SMS] [--no-default]\n\n"
               "Tunes the tiling rule (src/tune) for one task on the GPU: matmul (with\n"
               "--batch B a batch matmul), or fused (matmul + bias + ReLU); with --dtype\n"
               "tf32, f16 or bf16 the tensor-core rule (Step 9) for the matmul, against\n"
               "cuBLAS's GemmEx of that type (K a multiple of 16, of 8 for tf32).  Compiles\n"
               "candidates on T threads (default 8), measures each (median of R runs over\n"
               "rotated inputs) on G GPUs (default: all; GPUs 0..G-1, one measuring worker\n"
               "each), verifies every new best against cuBLAS, and stops after N\n"
               "trials (default 200) or M minutes.  Prints a progress line, the best\n"
               "configuration against cuBLAS and (--trace) its schedule trace; --db\n"
               "records every candidate (docs/tuning.md); --plot charts the best so far\n"
               "against trials (and writes its CSV beside it).  --model picks the search's\n"
               "cost model: auto (default: xgb where libxgboost loads, else knn), knn, xgb\n"
               "(XGBoost, needs libxgboost) or random (none).\n"
               "--replay searches the measurements recorded in a database instead of the\n"
               "GPU (no GPU needed; the candidates are the recorded ones; --nsm: the\n"
               "recorded GPU's multiprocessors, default 132) and prints the best so far\n"
               "after each trial and the model's CPU time (docs/tuning.md).  --no-default:\n"
               "do not measure the rule-based default first.\n\n"
               "%s\n%s",
               examples_help, exit_help);
    } else if (!strcmp(cmd, "run")) {
        printf("usage: tirc run <example> [--step N|A-B] [--size MxNxK] [--sim | --gpu]\n"
               "                          [--epilogue E] [--seed S] [--arch sm_90] [--tile T]\n"
               "                          [--splitk S [--atomic]] [--config C] [--stages N]\n"
               "                          [--peel-tail]\n\n"
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
               "                            [--epilogue E] [--arch sm_90] [--splitk S]\n"
               "                            [--atomic] [--opt short|fast|O3] [--db file]\n"
               "                            [--config C] [--stages N] [--peel-tail]\n\n"
               "Per size and step: our GFLOPS and cuBLAS's (pure float32, measured in the same\n"
               "process), their ratio, the relative error against cuBLAS and the compile time\n"
               "(schedule -> PTX).  Times are medians of R >= 20 (default 30) runs timed with\n"
               "CUDA events after 5 warm-up runs, queued behind a kernel that holds the GPU\n"
               "until the host has queued them all (so that cuBLAS's host side does not\n"
               "count; a warning says when that failed); input sets rotate so that the inputs of\n"
               "consecutive runs are not in L2 (or L2 is flushed when one set is too big).\n"
               "fused: per epilogue, the fused kernel, the unfused form (our matmul + the\n"
               "epilogue kernel) and cuBLAS + the epilogue kernel.  Default sizes\n"
               "256,512,1000,1024,2048,4096.  A step that cannot be built at a size (Step 1\n"
               "has one thread per column: N <= 1024) shows n/a and does not fail the run.\n"
               "--plot draws the steps against cuBLAS per size with gnuplot; without gnuplot\n"
               "it writes the data (.dat) and the script (.gp) next to the file and says so.\n"
               "--opt short|fast|O3 picks the LLVM pipeline (as for ptx) for A/B runs;\n"
               "--peel-tail peels the pipelines' epilogues (as for ptx).\n"
               "--db file: Step 8 (and Step 9 with --dtype) use the file's best tuned\n"
               "record per size (`tirc tune`), the rule's default where there is none\n"
               "(matmul only, not with --splitk or --tile; the steps given include 8 or 9).\n"
               "Needs a GPU (exit 3 without).  Progress goes to stderr.\n\n"
               "%s\n%s",
               examples_help, exit_help);
    } else {
        return tirc_usage_error("unknown command '%s'", cmd);
    }
    return EXIT_OK;
}
