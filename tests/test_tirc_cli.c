/* test_tirc_cli.c: the tirc command as a script sees it: exit codes
 * (0 ok, 1 verification failure, 2 usage error, 3 no GPU where one is
 * required, 4 compile error), --help texts, `tirc show`, `tirc ptx -o`,
 * `tirc run --sim` at small odd sizes, and the GPU paths of `run` and
 * `bench` (poisoned outputs, CSV/JSON, the gnuplot fallback) on the
 * stand-in CUDA driver, which cannot run generated kernels: so there the
 * untouched NaN output must be reported as a verification failure.
 *
 * `tirc tune --replay` searches a recorded database without a GPU.
 *
 * usage: test_tirc_cli <path to tirc> <path to the fake CUDA library>
 *                      <a recorded tuning database of matmul 512^3>
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static const char *tirc, *fake, *replay_db;
static char dir[256];
static char out[1 << 20], err[1 << 16];

static void slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = 0;
    if (f) fclose(f);
}

/* Runs `env tirc args` in the temp dir; returns the exit status, stdout in
 * out, stderr in err. */
static int tirc_run(const char *env, const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && env %s '%s' %s >'%s/out' 2>'%s/err'", dir,
             env ? env : "", tirc, args, dir, dir);
    int st = system(cmd);
    char p[512];
    snprintf(p, sizeof p, "%s/out", dir);
    slurp(p, out, sizeof out);
    snprintf(p, sizeof p, "%s/err", dir);
    slurp(p, err, sizeof err);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* Occurrences of needle before the first `until` in hay. */
static int count_before(const char *hay, const char *needle, const char *until) {
    const char *end = strstr(hay, until);
    int n = 0;
    for (const char *p = strstr(hay, needle); p && end && p < end; p = strstr(p + 1, needle)) n++;
    return n;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

static void usage_errors(void **state) {
    (void)state;
    static const char *const bad[] = {
        "",                                  /* no command */
        "bogus matmul",                      /* unknown command */
        "run",                               /* no example */
        "run conv",                          /* unknown example */
        "run matmul --step 9",               /* no such step */
        "run matmul --step 3-1",             /* empty range */
        "run matmul --size 0",               /* bad size */
        "run matmul --size 10x20",           /* two dimensions */
        "run matmul --sizes 10",             /* bench option */
        "ptx matmul --steps 1-3",            /* ptx takes one step */
        "ptx matmul --arch sm_5",            /* unknown arch */
        "run matmul --sim --gpu",            /* contradictory */
        "run matmul --epilogue clip",        /* epilogue of fused only */
        "run fused --epilogue gelu",         /* unknown epilogue */
        "bench matmul --plot chart.jpg",     /* png or svg */
        "show matmul --frobnicate",          /* unknown option */
        "ptx matmul --tile 64x64",           /* two tile sizes */
        "ptx matmul --tile 64x64x32x8",      /* four */
        "ptx fused --tile 64x64x32",         /* tiles of the matmul only */
        "run matmul --step 8 --splitk 0",    /* split count >= 1 */
        "run matmul --step 5 --splitk 2",    /* split-K is Steps 7-8's */
        "run fused --step 8 --splitk 2",     /* of the matmul only */
        "run matmul --step 8 --atomic",      /* atomic is split-K's */
        "bench matmul --gpus 2",             /* tune's */
        "tune matmul --size 64 --gpus 0",    /* at least one GPU */
        "tune matmul --size 64 --dtype bf16 --batch 2",  /* tensor cores: plain matmul */
        "tune matmul --size 64x64x40 --dtype bf16",      /* K not a multiple of 16 */
        "tune matmul --size 64x64x36 --dtype tf32",      /* K not a multiple of 8 */
        "tune matmul --size 64 --dtype f16 --stages 3",  /* tune samples the stages */
        "tune fused --size 64 --dtype bf16",             /* the matmul's only */
        "run matmul --dtype bf16 --splitk 2 --atomic",   /* atomic split-K is float32's */
        "ptx matmul --dtype bf16 --tc-off wpairs",       /* unknown speed-up */
        "ptx matmul --dtype bf16 --tc-off bpairs,",      /* an empty name */
        "ptx matmul --tc-off bpairs",                    /* Step 9's */
        "ptx matmul --dtype bf16 --tc-on fastest",       /* unknown option */
        "ptx matmul --tc-on vecstore",                   /* Step 9's */
        "bench matmul --model knn",                      /* tune's */
        "run matmul --replay x.db",                      /* tune's */
        "tune matmul --size 64 --model forest",          /* unknown model */
        "tune matmul --size 64 --nsm 132",               /* --replay's */
        "tune matmul --size 64 --replay x.db --db y.db", /* a replay records nothing */
        "tune matmul --size 64 --replay x.db --minutes 1", /* counted in trials */
        "ptx matmul --step 8 --stages 1",                /* Step 8's stages: 2..4 */
        "ptx matmul --step 8 --stages 5",                /* 2..4 */
        "ptx matmul --step 6 --stages 3",                /* Step 8's */
        "ptx fused --step 8 --stages 3",                 /* the matmul's */
        "ptx matmul --step 8 --splitk 2 --stages 3",     /* the config has split-K */
        "bench matmul --step 8 --stages 3 --db t.db",    /* a record has its stages */
        "ptx matmul --step 8 --config warps=2x2",        /* not a configuration */
        "ptx matmul --step 8 --dtype bf16 --config 'warps=2x2 lanes=4x8 thread=4x2 bk=16 "
        "vec=2 staging=0 pad=4 splitk=1 lsr=1'",         /* float32's */
        "tune matmul --size 64 --config 'warps=2x2 lanes=4x8 thread=4x2 bk=16 vec=2 "
        "staging=0 pad=4 splitk=1 lsr=1'",               /* tune samples it */
        "show matmul --peel-tail",                       /* ptx, run and bench's */
        "tune matmul --size 64 --peel-tail",             /* ptx, run and bench's */
        "ptx matmul --tail mask",                        /* guard or clamp */
        "ptx matmul --dtype bf16 --tail clamp",          /* float32's rule */
        "ptx matmul --step 8 --splitk 2 --tail guard",   /* not with split-K */
        "ptx matmul --step 8 --stages 3 --tail guard",   /* register staging only */
        "bench matmul --plot \"it's.png\"",              /* a quote reaches gnuplot */
        "tune matmul --size 64 --plot 'a\\b.svg'",       /* so does a backslash */
        "tune matmul --size 64 --trials 0",              /* 1..1000000 */
        "tune matmul --size 64 --trials 1000001",        /* 1..1000000 */
        "bench matmul --runs 19",                        /* 20..1000000 */
        "run matmul --size 65537",                       /* a dimension: 1..65536 */
        "tune matmul --size 64 --batch 65537",           /* 1..65536 */
        /* values read whole: sscanf and strtoull once took the leading
           part, wrapped or took nothing */
        "ptx matmul --step 2 --tile 16x16x16q",          /* trailing text */
        "ptx matmul --step 2 --tile 16x16x16x",          /* an empty thread tile */
        "ptx matmul --step 4294967298",                  /* not step 2 */
        "ptx matmul --size +16",                         /* digits only */
        "tune matmul --size 64 --trials ' 5'",           /* digits only */
        "run matmul --sim --seed abc",                   /* not seed 0 */
        "run matmul --sim --seed 1x",                    /* not seed 1 */
        "run matmul --sim --seed -1",                    /* not 2^64 - 1 */
        "run matmul --sim --seed 18446744073709551616",  /* 0..2^64-1 */
        "tune matmul --size 64 --minutes nan",           /* a positive number */
        "tune matmul --size 64 --minutes inf",           /* a finite one */
        "bench matmul --sizes 16,,32",                   /* an empty size */
        "bench matmul --sizes 16,",                      /* an empty size */
        /* options the command would ignore (they once ran as if absent) */
        "ptx matmul --seed 3",                           /* no inputs */
        "ptx matmul --trace",                            /* show's and tune's */
        "ptx matmul --each",                             /* show's */
        "show matmul --opt O3",                          /* no LLVM */
        "show matmul --repeat 2",                        /* ptx's */
        "run matmul --sim --runs 40",                    /* run times nothing */
        "bench matmul --size 512",                       /* bench takes --sizes */
        "tune matmul --size 64 --step 8",                /* tune tunes the rules */
        "tune matmul --size 64 --tile 32x32x32",         /* tune samples them */
        "tune matmul --size 64 --splitk 2",              /* tune samples them */
        "tune matmul --size 64 --arch sm_80",            /* the GPU's arch */
        "tune matmul --size 64 --opt O3",                /* run, bench and ptx's */
        "tune matmul --size 64 --dtype bf16 --tc-off bpairs", /* tune samples them */
        "tune matmul --size 512 --replay x.db --threads 2", /* nothing compiled */
        "tune matmul --size 512 --replay x.db --runs 30",   /* nothing measured */
        "tune matmul --size 512 --replay x.db --plot r.png", /* no chart */
        "tune matmul --size 512 --replay x.db --trace",     /* no trace */
        "bench matmul --arch sm_5",                      /* checked before any work */
        "run matmul --sim --arch sm_5 --step 1 --size 4", /* every command checks it */
        "ptx matmul --tile 64x64x32",                    /* Step 8 takes the rule's tiles */
        "run matmul --sim --steps 7-8 --size 8 --tile 64x64x32", /* the rule's tiles */
        "bench matmul --dtype bf16 --db t.db --tile 64x64x32x2x2", /* the record's tiles */
        "bench matmul --steps 1-6 --db t.db",            /* Steps 8-9 read records */
        "bench fused --db t.db",                         /* the matmul's records */
        "bench matmul --step 8 --splitk 2 --db t.db",    /* split-K has no records */
        "bench matmul --dtype bf16 --db t.db --tc-off bpairs", /* the record's schedule */
        "bench matmul --dtype tf32 --db t.db --tc-on wgmma",   /* the record's schedule */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = tirc_run(NULL, bad[i]);
        if (rc != 2) fail_msg("`tirc %s` exited %d, expected 2 (stderr: %s)", bad[i], rc, err);
        assert_true(strlen(err) + strlen(out) > 0);
    }
    assert_int_equal(tirc_run(NULL, "run conv"), 2);
    assert_non_null(strstr(err, "use matmul or fused"));
    /* a list past 1023 characters once lost its tail to a fixed buffer:
       57 sizes of 18 characters, the last cut to 65536x65536x655, and the
       bad 58th never read */
    char args[1200] = "bench matmul --sizes ";
    for (int i = 0; i < 57; i++) strcat(args, "65536x65536x65536,");
    strcat(args, "0");
    assert_int_equal(tirc_run(NULL, args), 2);
    assert_non_null(strstr(err, "--sizes: '0' is not N or MxNxK"));
    assert_int_equal(tirc_run(NULL, "run matmul --sim --seed 1x"), 2);
    assert_non_null(strstr(err, "--seed wants a whole number"));
    assert_int_equal(tirc_run(NULL, "tune matmul --size 64 --tile 32x32x32"), 2);
    assert_non_null(strstr(err, "--tile belongs to `tirc show`, `tirc ptx`, `tirc run` and "
                                "`tirc bench`; `tirc tune` samples the tiles"));
}

static void help(void **state) {
    (void)state;
    assert_int_equal(tirc_run(NULL, "--help"), 0);
    assert_non_null(strstr(out, "Exit status: 0 ok, 1 verification failure"));
    static const char *const cmds[] = {"show", "ptx", "run", "bench"};
    for (int i = 0; i < 4; i++) {
        char a[64], want[64];
        snprintf(a, sizeof a, "%s --help", cmds[i]);
        snprintf(want, sizeof want, "usage: tirc %s <example>", cmds[i]);
        assert_int_equal(tirc_run(NULL, a), 0);
        assert_non_null(strstr(out, want));
        assert_non_null(strstr(out, "3 no GPU where one is required"));
    }
    assert_int_equal(tirc_run(NULL, "help bench"), 0);
    assert_non_null(strstr(out, "--plot"));
}

static void show(void **state) {
    (void)state;
    assert_int_equal(tirc_run(NULL, "show matmul --step 2 --trace --size 40"), 0);
    assert_non_null(strstr(out, "==== Step 2: tiling and reordering"));
    assert_non_null(strstr(out, "thread=\"blockIdx.y\""));
    assert_non_null(strstr(out, "tir_status seed_step2(tir_schedule *sch)"));
    assert_non_null(strstr(out, "tir_sched_reorder(sch, 8,"));
    assert_null(strstr(out, "==== Step 3"));
    /* All steps, each primitive: Step 3 caches A and B in shared memory. */
    assert_int_equal(tirc_run(NULL, "show matmul --each --size 40"), 0);
    assert_int_equal(count(out, "==== Step "), 2 * 8);
    assert_non_null(strstr(out, "---- after tir_sched_cache_read(s, t->c, ia, \"shared\""));
    assert_non_null(strstr(out, "scope=\"shared\""));
    assert_int_equal(tirc_run(NULL, "show fused --epilogue clip --step 4 --size 40"), 0);
    assert_non_null(strstr(out, "T.float32(-4)"));
    assert_non_null(strstr(out, "scope=\"local\""));
}

static void ptx(void **state) {
    (void)state;
    assert_int_equal(tirc_run(NULL, "ptx matmul --size 50x40x30 --step 4 -o k.ptx"), 0);
    char p[512], *buf = malloc(1 << 20);
    snprintf(p, sizeof p, "%s/k.ptx", dir);
    slurp(p, buf, 1 << 20);
    assert_non_null(strstr(buf, ".target sm_90"));
    assert_non_null(strstr(buf, ".entry matmul("));
    assert_non_null(strstr(buf, "bar.sync"));
    assert_non_null(strstr(err, "PTX written to k.ptx"));
    /* -v: the compile time by phase */
    assert_int_equal(tirc_run(NULL, "ptx matmul --size 50x40x30 --step 4 -v -o k.ptx"), 0);
    assert_non_null(strstr(err, "schedule "));
    assert_non_null(strstr(err, ", LLVM optimisation "));
    assert_non_null(strstr(err, ", PTX emission "));
    /* --repeat: the second compile finds the PTX in the codegen cache, and
     * gets the same PTX; --no-cache compiles each time; MINITIR_CACHE_DIR
     * keeps the entry for the next process */
    assert_int_equal(tirc_run(NULL, "ptx matmul --size 50x40x30 --step 4 -v --repeat 2"), 0);
    assert_int_equal(count(err, "(0 of 1 kernels from memory, 0 from disk)"), 1);
    assert_int_equal(count(err, "(1 of 1 kernels from memory, 0 from disk)"), 1);
    char *first = strdup(out);
    assert_int_equal(
        tirc_run(NULL, "ptx matmul --size 50x40x30 --step 4 -v --repeat 2 --no-cache"), 0);
    assert_int_equal(count(err, "(0 of 1 kernels from memory, 0 from disk)"), 2);
    assert_string_equal(out, first);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(tirc_run("MINITIR_CACHE_DIR=cgcache",
                                  "ptx matmul --size 50x40x30 --step 4 -v"), 0);
        assert_int_equal(count(err, r ? "(0 of 1 kernels from memory, 1 from disk)"
                                      : "(0 of 1 kernels from memory, 0 from disk)"), 1);
        assert_string_equal(out, first);
    }
    free(first);
    /* a process's first store trims the directory to MINITIR_CACHE_MAX_MB:
     * with 0 nothing stays, so the next process misses again */
    for (int r = 0; r < 2; r++) {
        assert_int_equal(tirc_run("MINITIR_CACHE_DIR=cgcache0 MINITIR_CACHE_MAX_MB=0",
                                  "ptx matmul --size 50x40x30 --step 4 -v"), 0);
        assert_int_equal(count(err, "(0 of 1 kernels from memory, 0 from disk)"), 1);
    }
    assert_int_equal(tirc_run(NULL, "tune matmul --size 64 --no-cache"), 2);
    assert_non_null(strstr(err, "--no-cache belongs to"));
    free(buf);
    /* Default step 6 to stdout, another arch. */
    assert_int_equal(tirc_run(NULL, "ptx fused --size 33 --arch sm_80"), 0);
    assert_non_null(strstr(out, ".target sm_80"));
    assert_non_null(strstr(out, ".entry matmul_bias_relu("));
    /* Step 9: B fragments in pairs (ldmatrix.x4.trans), or one tile at a
     * time with --tc-off bpairs */
    assert_int_equal(tirc_run(NULL, "ptx matmul --dtype bf16 --size 64"), 0);
    assert_true(count(out, "ldmatrix.sync.aligned.m8n8.x4.trans") > 0);
    assert_int_equal(count(out, "ldmatrix.sync.aligned.m8n8.x2.trans"), 0);
    assert_int_equal(tirc_run(NULL, "ptx matmul --dtype bf16 --size 64 --tc-off bpairs"), 0);
    assert_int_equal(count(out, "ldmatrix.sync.aligned.m8n8.x4.trans"), 0);
    assert_true(count(out, "ldmatrix.sync.aligned.m8n8.x2.trans") > 0);
    /* and the k steps' fragments double-buffered, or not with fragpipe: the
       ldmatrix before the first mma are two k steps' or one's */
    assert_int_equal(tirc_run(NULL, "ptx matmul --dtype bf16 --size 128"), 0);
    int two = count_before(out, "ldmatrix.sync", "mma.sync");
    assert_int_equal(tirc_run(NULL, "ptx matmul --dtype bf16 --size 128 --tc-off fragpipe"), 0);
    int one = count_before(out, "ldmatrix.sync", "mma.sync");
    assert_true(one > 0);
    assert_int_equal(two, 2 * one);
    /* tile_prefetch: the next k tile's wait moves above the last k step's
       commit (its count one less), not with --tc-off prefetch */
    const char *pf = "ptx matmul --dtype bf16 --size 256x256x1024 --tile 128x256x64x2x4 --stages 4";
    char cmd[256];
    assert_int_equal(tirc_run(NULL, pf), 0);
    int waits1 = count(out, "cp.async.wait_group 1;");
    snprintf(cmd, sizeof cmd, "%s --tc-off prefetch", pf);
    assert_int_equal(tirc_run(NULL, cmd), 0);
    if (waits1 <= count(out, "cp.async.wait_group 1;"))
        fail_msg("prefetch: %d wait_group 1, %d without", waits1, count(out, "cp.async.wait_group 1;"));
    /* --tc-on vecstore (tir_lower_opts.vector_acc_store): one
       st.global.v4.f32 and two shfl.sync.bfly per 16x8 accumulator tile
       of a warp (64x64 warp tiles: 32), none without it */
    const char *vs = "ptx matmul --dtype bf16 --size 256x256x128 --tile 128x256x64x2x4 --stages 4";
    assert_int_equal(tirc_run(NULL, vs), 0);
    assert_int_equal(count(out, "st.global.v4.f32") + count(out, "shfl.sync.bfly"), 0);
    snprintf(cmd, sizeof cmd, "%s --tc-on vecstore", vs);
    assert_int_equal(tirc_run(NULL, cmd), 0);
    assert_int_equal(count(out, "st.global.v4.f32"), 32);
    assert_int_equal(count(out, "shfl.sync.bfly"), 64);
    /* the block swizzle at 8192^3 (blockIdx.x / 8 and % 8), not with
       --tc-off swizzle */
    assert_int_equal(tirc_run(NULL, "ptx matmul --dtype bf16 --size 8192"), 0);
    char *sw = strdup(out);
    assert_int_equal(tirc_run(NULL, "ptx matmul --dtype bf16 --size 8192 --tc-off swizzle"), 0);
    assert_string_not_equal(sw, out);
    free(sw);
    /* TF32 A fragments by ldmatrix.x4 (no .trans), per-lane loads with
       --tc-off ldm32; A's rows of 32 floats (128 bytes) unpadded and
       swizzled by lowering: 135168 bytes of shared memory at 128x128x32
       in 4 stages, 4 * (128 * 32 + 32 * 136) * 4; padded by 4 floats with
       --tc-off smemswz (36 a row: 143360), by 8 with oddpad too (151552) */
    const char *tf = "ptx matmul --dtype tf32 --size 256 --tile 128x128x32x2x4 --stages 4";
    assert_int_equal(tirc_run(NULL, tf), 0);
    assert_true(count(out, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") > 0);
    assert_int_equal(count(out, ".trans"), 0);
    assert_non_null(strstr(err, "135168 bytes shared"));
    char *swz = strdup(out);
    snprintf(cmd, sizeof cmd, "%s --tc-off smemswz", tf);
    assert_int_equal(tirc_run(NULL, cmd), 0);
    assert_non_null(strstr(err, "143360 bytes shared"));
    assert_string_not_equal(swz, out);
    free(swz);
    snprintf(cmd, sizeof cmd, "%s --tc-off ldm32,oddpad,smemswz", tf);
    assert_int_equal(tirc_run(NULL, cmd), 0);
    assert_int_equal(count(out, "ldmatrix"), 0);
    assert_non_null(strstr(err, "151552 bytes shared"));
    /* TF32 on sm_90 where wgmma fits (2048^3: 256 blocks of 128 x 128):
       wgmma.mma_async for sm_90a, 4 k steps a k tile, 64 k tiles (a k
       tile's body once in the loop, twice in the peeled epilogue: some
       multiple of 4); mma.sync with --tc-off wgmma; wgmma asked for sm_80
       is refused naming the target */
    assert_int_equal(tirc_run(NULL, "ptx matmul --dtype tf32 --size 2048"), 0);
    assert_true(count(out, "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32") > 0);
    assert_int_equal(count(out, "wgmma.mma_async") % 4, 0);
    assert_int_equal(count(out, "mma.sync"), 0);
    assert_non_null(strstr(out, ".target sm_90a"));
    assert_int_equal(tirc_run(NULL, "ptx matmul --dtype tf32 --size 2048 --tc-off wgmma"), 0);
    assert_int_equal(count(out, "wgmma"), 0);
    assert_true(count(out, "mma.sync.aligned.m16n8k8") > 0);
    /* a shape wgmma does not fit keeps mma.sync */
    assert_int_equal(tirc_run(NULL, "ptx matmul --dtype tf32 --size 1000x520x336"), 0);
    assert_int_equal(count(out, "wgmma"), 0);
    assert_int_not_equal(
        tirc_run(NULL, "ptx matmul --dtype tf32 --size 256 --tc-on wgmma --arch sm_80"), 0);
    assert_non_null(strstr(err, "wgmma_sync needs sm_90a; the target is sm_80"));
    /* --no-swizzle: Step 8 at 4096^3 in raster order (other PTX), the
       seed's Step 6 or --db refused with a usage error */
    assert_int_equal(tirc_run(NULL, "ptx matmul --step 8 --size 4096"), 0);
    char *s8 = strdup(out);
    assert_int_equal(tirc_run(NULL, "ptx matmul --step 8 --size 4096 --no-swizzle"), 0);
    assert_string_not_equal(s8, out);
    free(s8);
    assert_int_equal(tirc_run(NULL, "ptx matmul --step 6 --size 64 --no-swizzle"), 2);
    assert_non_null(strstr(err, "--no-swizzle is for the tiling rules"));
    assert_int_equal(tirc_run(NULL, "ptx matmul --step 8 --size 64 --no-swizzle --db x.db"), 2);
    /* Step 8's k pipeline: the rule keeps the peeled epilogue by default
     * (tir_tile_config.guard_tail off: the guarded kernels were slower on
     * the H200), so the 8 x 8 x 16 body twice, with or without
     * --peel-tail */
    assert_int_equal(tirc_run(NULL, "ptx matmul --step 8 --size 1024"), 0);
    assert_int_equal(count(out, "fma.rn.f32"), 2048);
    assert_int_equal(tirc_run(NULL, "ptx matmul --step 8 --size 1024 --peel-tail"), 0);
    assert_int_equal(count(out, "fma.rn.f32"), 2048);
    /* --tail guard or clamp: the body once (the rule's guard_tail and
     * clamp_tail), the clamped loop without a branch around its copies */
    assert_int_equal(tirc_run(NULL, "ptx matmul --step 8 --size 1024 --tail guard"), 0);
    assert_int_equal(count(out, "fma.rn.f32"), 1024);
    int guard_bra = count(out, "bra");
    assert_int_equal(tirc_run(NULL, "ptx matmul --step 8 --size 1024 --tail clamp"), 0);
    assert_int_equal(count(out, "fma.rn.f32"), 1024);
    assert_true(count(out, "bra") < guard_bra);
    /* the clamp: a min (LLVM's min.s32, the direct emitter's setp + selp) */
    assert_true(count(out, "min.") + count(out, "selp.b32") > 0);
    /* Step 1 has one thread per column: 2000 columns cannot launch. */
    assert_int_equal(tirc_run(NULL, "ptx matmul --step 1 --size 2000"), 4);
    assert_non_null(strstr(err, "cannot compile matmul step 1"));
    /* 128x128x32 tiles double-buffered: 64 KiB of dynamic shared memory */
    assert_int_equal(tirc_run(NULL, "ptx matmul --size 300 --step 6 --tile 128x128x32x8x8"), 0);
    assert_non_null(strstr(out, ".extern .shared .align 64 .b8 minitir_dyn_shared[]"));
    assert_non_null(strstr(err, "block 16x16x1, 65536 bytes shared (dynamic)"));
    /* 128x128x64: 128 KiB, past sm_86's opt-in 99 KiB */
    assert_int_equal(tirc_run(NULL, "ptx matmul --size 300 --step 5 --tile 128x128x64x8x8 "
                                    "--arch sm_86"),
                     4);
    assert_non_null(strstr(err, "sm_86's opt-in maximum"));
    /* split-K: the partial sums and the write-back, one module each */
    assert_int_equal(tirc_run(NULL, "ptx matmul --size 64x48x256 --step 8 --splitk 4 -o s.ptx"),
                     0);
    buf = malloc(1 << 20);
    snprintf(p, sizeof p, "%s/s.ptx", dir);
    slurp(p, buf, 1 << 20);
    assert_non_null(strstr(buf, ".entry matmul_k0("));
    assert_non_null(strstr(buf, "%ctaid.z"));
    snprintf(p, sizeof p, "%s/s.k1.ptx", dir);
    slurp(p, buf, 1 << 20);
    assert_non_null(strstr(buf, ".entry matmul_k1("));
    assert_null(strstr(buf, "matmul_k0"));
    assert_non_null(strstr(err, "PTX written to s.k1.ptx"));
    free(buf);
    assert_int_equal(tirc_run(NULL, "ptx matmul --size 64x48x256 --step 8 --splitk 4"), 0);
    assert_int_equal(count(out, ".version"), 2);
    assert_non_null(strstr(out, "// kernel matmul_k1\n"));
    /* atomic split-K: a kernel zeroing C, then the partial sums added to C
     * with atomic float adds (scalar, one per output of a thread) */
    assert_int_equal(tirc_run(NULL, "ptx matmul --size 64x48x256 --step 8 --splitk 4 --atomic"),
                     0);
    assert_int_equal(count(out, ".version"), 2);
    assert_int_equal(count(out, "atom.global.add.f32"), 8); /* 32x32 tiles: 4x2 */
    /* the zeroing kernel's stores (LLVM stores 0.0f as st.global.u32) */
    assert_true(strstr(out, "st.global.u32") || strstr(out, "st.global.f32"));
    /* Step 8 with a configuration, with and without a multistage pipeline:
     * 128 x 64 x 64 divides the 32 x 32 x 16 tiles, so the copies become
     * cp.async (A 4-byte, B 8-byte for vec 2) and no ld.global is left */
    const char *cfg = "--config 'warps=2x2 lanes=4x8 thread=4x2 bk=16 vec=2 staging=1 pad=4 "
                      "splitk=1 lsr=1'";
    char a[512];
    snprintf(a, sizeof a, "ptx matmul --size 128x64x64 --step 8 %s", cfg);
    assert_int_equal(tirc_run(NULL, a), 0);
    assert_int_equal(count(out, "cp.async"), 0);
    assert_true(count(out, "ld.global") > 0);
    assert_non_null(strstr(err, "block 128x1x1, 4608 bytes shared"));
    snprintf(a, sizeof a, "ptx matmul --size 128x64x64 --step 8 %s --stages 3", cfg);
    assert_int_equal(tirc_run(NULL, a), 0);
    assert_true(count(out, "cp.async.ca.shared.global") > 0);
    assert_int_equal(count(out, "ld.global"), 0);
    assert_non_null(strstr(err, "block 128x1x1, 13824 bytes shared"));
    /* --stages on the default configuration (1000x520x333: 32 x 32 tiles,
     * vec 2, not split) */
    assert_int_equal(tirc_run(NULL, "ptx matmul --size 1000x520x333 --step 8 --stages 4"), 0);
    assert_true(count(out, "cp.async.ca.shared.global") > 0);
    assert_non_null(strstr(err, "block 128x1x1, 18432 bytes shared"));
    assert_int_equal(count(out, "ld.global"), 0);
}

static void run_sim(void **state) {
    (void)state;
    assert_int_equal(tirc_run(NULL, "run matmul --sim --size 21x13x9"), 0);
    assert_int_equal(count(out, "  ok  "), 8);
    assert_int_equal(count(out, "FAIL"), 0);
    assert_int_equal(tirc_run(NULL, "run fused --sim --size 19x35x33 --steps 3-4 --seed 5"), 0);
    assert_int_equal(count(out, "  ok  "), 3 * 2);
    assert_non_null(strstr(out, "fused bias+relu step 4"));
    assert_int_equal(tirc_run(NULL, "run matmul --sim --size 130x129x40 --steps 5-6 "
                                    "--tile 128x128x32x8x8"),
                     0);
    assert_int_equal(count(out, "  ok  "), 2);
    assert_non_null(strstr(out, "block 16x16x1"));
    /* split-K, Steps 7-8: k = 41 in 3 slices of 16, the last ragged */
    assert_int_equal(tirc_run(NULL, "run matmul --sim --size 37x21x41 --steps 7-8 --splitk 3"),
                     0);
    assert_int_equal(count(out, "  ok  "), 2);
    assert_non_null(strstr(out, "step 8 split-K"));
    /* 32x32 tiles of 128 threads (tir_tune_default's smallest): 2 x 1 blocks
     * per slice */
    assert_non_null(strstr(out, "grid 1x2x3 block 128x1x1"));
    assert_int_equal(count(out, "(2 kernels"), 2);
    assert_int_equal(tirc_run(NULL, "run matmul --sim --size 37x21x41 --steps 7-8 --splitk 3 "
                                    "--atomic"),
                     0);
    assert_int_equal(count(out, "  ok  "), 2);
    assert_non_null(strstr(out, "step 8 split-K atomic"));
    assert_non_null(strstr(out, "grid 1x2x3 block 128x1x1")); /* the partial sums' kernel */
    /* Without a driver, `run` falls back to the simulator and says so. */
    assert_int_equal(tirc_run("MINITIR_CUDA_LIB=/nonexistent/libcuda.so.1",
                              "run matmul --size 9 --step 2"),
                     0);
    assert_non_null(strstr(err, "checking in the SIMT simulator instead"));
    assert_int_equal(count(out, "  ok  "), 1);
}

/* tune --dtype on the stand-in (computing the candidates' bf16 matmul):
 * the tensor-core space, its decisions, the records; bench --dtype --db
 * then uses the tuned record and verifies it. */
static void tune_tc_fake(void **state) {
    (void)state;
    char env[1200];
    snprintf(env, sizeof env, "MINITIR_CUDA_LIB='%s' MINITIR_CUBLAS_LIB='%s' "
             "FAKE_CUDA_MATMUL=64,48,64,bf16", fake, fake);
    int rc = tirc_run(env, "tune matmul --size 64x48x64 --dtype bf16 --trials 3 --threads 2 "
                           "--seed 1 --db tc.db");
    if (rc != 0) fail_msg("tune exited %d: %s", rc, err);
    assert_non_null(strstr(out, "task matmul 64x48x64 batch 1 bf16"));
    assert_non_null(strstr(out, "decisions: tile="));
    /* the limits as given: "0.0 min" once stood for no limit (and for 0.02) */
    assert_non_null(strstr(err, "at most 3 trials, no time limit, 2 threads, seed 1\n"));
    /* the ETA is the time left when --minutes ends the search first: an
     * ETA from the 2,784 points' trials left would be minutes here; 9 s
     * leave the first candidate time under ASan too (1.2 s did not) */
    rc = tirc_run(env, "tune matmul --size 64x48x64 --dtype bf16 --trials 1000000 "
                       "--minutes 0.15 --threads 2 --seed 1");
    if (rc != 0) fail_msg("tune --minutes exited %d: %s", rc, err);
    int etas = 0;
    for (const char *e = strstr(err, "ETA <= "); e; e = strstr(e + 1, "ETA <= "), etas++)
        if (atof(e + 7) > 9) fail_msg("ETA past the 9 s limit: %.40s", e);
    assert_true(etas > 0);
    assert_non_null(strstr(err, "at most 1000000 trials, at most 0.15 min"));
    /* the progress counts to the space's 2784 points, not the cap */
    assert_non_null(strstr(err, "[1/2784 trials"));
    assert_null(strstr(err, "/1000000 trials"));
    /* --plot: an SVG chart is SVG (pngcairo once wrote PNG data into it),
       and a path that cannot be written is a usage error before tuning */
    rc = tirc_run(env, "tune matmul --size 64x48x64 --dtype bf16 --trials 2 --threads 2 "
                       "--seed 1 --plot curve.svg");
    if (rc != 0) fail_msg("tune --plot exited %d: %s", rc, err);
    char p[512], buf[4096];
    snprintf(p, sizeof p, "%s/curve.gp", dir);
    slurp(p, buf, sizeof buf);
    assert_non_null(strstr(buf, "set terminal svg"));
    snprintf(p, sizeof p, "%s/curve.csv", dir);
    slurp(p, buf, sizeof buf);
    assert_non_null(strstr(buf, "trial,best_ms,best_x_cublas\n1,"));
    assert_int_equal(tirc_run(env, "tune matmul --size 64x48x64 --dtype bf16 --trials 2 "
                                   "--plot /nonexistent/c.png"), 2);
    assert_non_null(strstr(err, "--plot: cannot write /nonexistent/c.png"));
    assert_null(strstr(err, "tirc: tuning"));
    assert_int_equal(tirc_run(env, "tune matmul --size 64x48x64 --dtype bf16 --trials 2 "
                                   "--db /nonexistent/t.db"), 2);
    assert_non_null(strstr(err, "--db: cannot write /nonexistent/t.db"));
    rc = tirc_run(env, "bench matmul --dtype bf16 --sizes 64x48x64 --runs 20 --db tc.db");
    if (rc != 0) fail_msg("bench exited %d: %s", rc, err);
    assert_non_null(strstr(err, "tuned record"));
    assert_non_null(strstr(err, "(tile="));
    /* TF32 has its own records: none yet, so the rule's default */
    snprintf(env, sizeof env, "MINITIR_CUDA_LIB='%s' MINITIR_CUBLAS_LIB='%s' "
             "FAKE_CUDA_MATMUL=64,48,64", fake, fake);
    rc = tirc_run(env, "bench matmul --dtype tf32 --sizes 64x48x64 --runs 20 --db tc.db");
    if (rc != 0) fail_msg("bench tf32 exited %d: %s", rc, err);
    assert_null(strstr(err, "tuned record"));
}

/* tune --replay on the recorded 512^3 database: no GPU, the pool of 150
 * recorded candidates, the same output for the same seed, a curve of one
 * best-so-far per trial; the xgb model without its library is a runtime
 * error naming it. */
static void tune_replay(void **state) {
    (void)state;
    char args[1024];
    static char first[sizeof out];
    const char *nogpu = "MINITIR_CUDA_LIB=/nonexistent/libcuda.so.1";
    snprintf(args, sizeof args, "tune matmul --size 512 --replay '%s' --trials 20 --seed 3 "
             "--model random --no-default", replay_db);
    int rc = tirc_run(nogpu, args);
    if (rc != 0) fail_msg("tune --replay exited %d: %s", rc, err);
    assert_non_null(strstr(out, "replay matmul 512x512x512 model random seed 3: pool 150, 20 trials"));
    const char *curve = strstr(out, "curve:");
    assert_non_null(curve);
    assert_int_equal(count(curve, " "), 20);
    memcpy(first, out, sizeof out);
    assert_int_equal(tirc_run(nogpu, args), 0);
    assert_string_equal(out, first);
    snprintf(args, sizeof args, "tune matmul --size 512 --replay '%s' --model xgb", replay_db);
    assert_int_equal(tirc_run("MINITIR_XGBOOST_LIB=/nonexistent/libxgboost.so", args), 5);
    assert_non_null(strstr(err, "the xgb cost model needs libxgboost"));
    /* the default model says when it falls back to kNN, and why */
    snprintf(args, sizeof args, "tune matmul --size 512 --replay '%s' --trials 5", replay_db);
    assert_int_equal(tirc_run("MINITIR_XGBOOST_LIB=/nonexistent/libxgboost.so", args), 0);
    assert_non_null(strstr(err, "cost model kNN, not XGBoost"));
    assert_non_null(strstr(err, "/nonexistent/libxgboost.so"));
    assert_non_null(strstr(out, "model knn"));
    /* --trials takes its whole stated range (a cap shared with the sizes
     * once refused 65537..1000000): the replay ends at its pool of 150 */
    snprintf(args, sizeof args, "tune matmul --size 512 --replay '%s' --trials 1000000 "
             "--model random --no-default", replay_db);
    if ((rc = tirc_run(nogpu, args)) != 0) fail_msg("--trials 1000000 exited %d: %s", rc, err);
    assert_non_null(strstr(out, "pool 150, 150 trials"));
    /* a database that does not exist is a usage error, not an empty one
       created (it once left nothere.db behind and said "no record") */
    assert_int_equal(tirc_run(nogpu, "tune matmul --size 512 --replay nothere.db"), 2);
    assert_non_null(strstr(err, "--replay nothere.db: No such file or directory"));
    char p[512];
    snprintf(p, sizeof p, "%s/nothere.db", dir);
    assert_int_equal(access(p, F_OK), -1);
    /* a shape the database has no record of */
    snprintf(args, sizeof args, "tune matmul --size 256 --replay '%s'", replay_db);
    assert_int_equal(tirc_run(nogpu, args), 5);
    assert_non_null(strstr(err, "no record"));
}

static void no_gpu(void **state) {
    (void)state;
    const char *env = "MINITIR_CUDA_LIB=/nonexistent/libcuda.so.1";
    assert_int_equal(tirc_run(env, "run matmul --gpu --size 9"), 3);
    assert_non_null(strstr(err, "--sim"));
    assert_int_equal(tirc_run(env, "bench matmul --sizes 16"), 3);
    assert_non_null(strstr(err, "no CUDA GPU"));
}

/* The stand-in driver runs no generated kernel: the poisoned output stays
 * NaN, which must fail verification (exit 1) while cuBLAS works. */
static void fake_gpu(void **state) {
    (void)state;
    char env[1024];
    snprintf(env, sizeof env, "MINITIR_CUDA_LIB='%s' MINITIR_CUBLAS_LIB='%s'", fake, fake);
    assert_int_equal(tirc_run(env, "run matmul --gpu --size 20x17x9 --step 2"), 1);
    assert_non_null(strstr(err, "NaN or infinite"));
    assert_non_null(strstr(out, "FAIL"));
    /* 64 KiB of dynamic shared memory: the program opts the kernel in and
     * launches it (the stand-in refuses a launch past the kernel's limit:
     * that would be a runtime error, exit 5, not the NaN failure) */
    assert_int_equal(tirc_run(env, "run matmul --gpu --size 200 --step 5 "
                                   "--tile 128x128x32x8x8"),
                     1);
    assert_non_null(strstr(err, "NaN or infinite"));
    /* bench: tables, and the chart's data and script without gnuplot. */
    char benv[1200];
    snprintf(benv, sizeof benv, "%s PATH=/nonexistent", env);
    assert_int_equal(tirc_run(benv, "bench matmul --sizes 16,20x17x9 --steps 1-2 --runs 20 "
                                    "--csv t.csv --json t.json --plot t.svg"),
                     1);
    assert_non_null(strstr(err, "gnuplot is not installed"));
    assert_non_null(strstr(err, "[4/4"));
    char p[512], buf[8192];
    snprintf(p, sizeof p, "%s/t.csv", dir);
    slurp(p, buf, sizeof buf);
    assert_int_equal(count(buf, "\n"), 1 + 2 * 3); /* header, cuBLAS + 2 steps per size */
    assert_non_null(strstr(buf, "matmul,,20,17,9,2,minitir,"));
    snprintf(p, sizeof p, "%s/t.json", dir);
    slurp(p, buf, sizeof buf);
    assert_int_equal(count(buf, "\"kernel\": \"cublas\""), 2);
    snprintf(p, sizeof p, "%s/t.gp", dir);
    slurp(p, buf, sizeof buf);
    assert_non_null(strstr(buf, "set terminal svg"));
    snprintf(p, sizeof p, "%s/t.dat", dir);
    slurp(p, buf, sizeof buf);
    assert_non_null(strstr(buf, "\"20x17x9\""));
    /* a file that cannot be written is a usage error before the bench
       (the whole table once ran first), and so is a --db to read that
       does not exist (opening it created an empty one) */
    assert_int_equal(tirc_run(env, "bench matmul --sizes 16 --steps 1 --runs 20 "
                                   "--csv /nonexistent/t.csv"), 2);
    assert_non_null(strstr(err, "--csv: cannot write /nonexistent/t.csv"));
    assert_null(strstr(err, "[1/1"));
    assert_int_equal(tirc_run(env, "bench matmul --sizes 16 --steps 8 --runs 20 --db none.db"), 2);
    assert_non_null(strstr(err, "--db none.db: No such file or directory"));
    snprintf(p, sizeof p, "%s/none.db", dir);
    assert_int_equal(access(p, F_OK), -1);
    /* Step 1 cannot launch 1100 threads per block: n/a, not a failure. */
    assert_int_equal(tirc_run(env, "bench matmul --sizes 8x1100x8 --steps 1 --runs 20 --csv n.csv"), 0);
    assert_non_null(strstr(err, "more than the limit 1024"));
    assert_null(strstr(err, "@T.prim_func"));
    snprintf(p, sizeof p, "%s/n.csv", dir);
    slurp(p, buf, sizeof buf);
    assert_non_null(strstr(buf, ",1,minitir,nan,nan,"));
    assert_non_null(strstr(buf, ",n/a,nan,nan,nan,nan,nan\n")); /* no compile phases */
    /* split-K through the program set (both kernels launched, the
     * workspace allocated: a launch or allocation error would be exit 5;
     * the stand-in runs no generated kernel, so C stays NaN: exit 1) */
    assert_int_equal(tirc_run(env, "bench matmul --step 8 --splitk 4 --sizes 64x48x256 --runs 20 "
                                   "--csv k.csv"),
                     1);
    assert_non_null(strstr(err, "NaN or infinite"));
    snprintf(p, sizeof p, "%s/k.csv", dir);
    slurp(p, buf, sizeof buf);
    assert_non_null(strstr(buf, "matmul,,64,48,256,8,minitir/splitk4,"));
    /* compile time by phase: schedule, lower, LLVM, PTX, JIT */
    assert_non_null(strstr(buf, ",status,sched_ms,lower_ms,llvm_ms,ptx_ms,jit_ms\n"));
    assert_null(strstr(strstr(buf, "minitir/splitk4,"), ",nan,nan,nan,nan,nan\n"));
    /* the atomic option the same way: the zero kernel and the atomic one */
    assert_int_equal(tirc_run(env, "bench matmul --steps 8 --splitk 4 --atomic --sizes "
                                   "64x48x256,32x32x1024 --runs 20 --csv a.csv"),
                     1);
    assert_int_equal(count(err, "NaN or infinite"), 2);
    snprintf(p, sizeof p, "%s/a.csv", dir);
    slurp(p, buf, sizeof buf);
    assert_non_null(strstr(buf, "matmul,,64,48,256,8,minitir/splitk4-atomic,"));
    assert_non_null(strstr(buf, "matmul,,32,32,1024,8,minitir/splitk4-atomic,"));
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: test_tirc_cli <tirc> <fake cuda library> <tuning database>\n");
        return 2;
    }
    tirc = argv[1];
    fake = argv[2];
    replay_db = argv[3];
    snprintf(dir, sizeof dir, "/tmp/tirc_cli_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    /* The codegen cache's counts that `ptx -v` prints are checked: a
     * cache directory of the user's would give disk hits (tirc_run sets
     * one where a test wants it). */
    unsetenv("MINITIR_CACHE_DIR");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(usage_errors), cmocka_unit_test(tune_tc_fake), cmocka_unit_test(help),    cmocka_unit_test(show),
        cmocka_unit_test(ptx),          cmocka_unit_test(run_sim), cmocka_unit_test(no_gpu),
        cmocka_unit_test(fake_gpu),     cmocka_unit_test(tune_replay),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    return rc;
}
