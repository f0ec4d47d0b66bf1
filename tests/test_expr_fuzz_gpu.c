/* test_expr_fuzz_gpu.c: test_expr_fuzz's random elementwise functions
 * (expr_gen.h) compiled to PTX (tir_build, fma contraction off) and run on
 * the GPU, against the interpreter bit for bit (any NaN equals any NaN).
 * This is where bfloat16, float16 and the casts meet the hardware's own
 * instructions (add.bf16, cvt.rzi, min.f16, ...).  Suite gpu: prints
 * "1..0 # SKIP" without a CUDA device.  MINITIR_EXPR_FUZZ_CASES (or the
 * first argument) and MINITIR_FUZZ_SEED run longer; with
 * MINITIR_EXPR_FUZZ_BUILD_ONLY set it only compiles the cases to PTX (no
 * device needed: the CPU suite runs it so that no case makes LLVM fail).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "expr_gen.h"
#include "ptxas_check.h"
#include "minitir/codegen.h"
#include "minitir/runtime.h"

static tir_rt_device *dev;
static bool build_only; /* MINITIR_EXPR_FUZZ_BUILD_ONLY: compile to PTX, run nothing */
static long ncases = 2000;
static uint64_t seed = 20261204;

typedef struct counts {
    long run, built, refused, failures;
    eg_tally kinds;
} counts;

/* Runs the module on the GPU: inputs in[], the output into out. */
static bool run_gpu(tir_ctx *ctx, const tir_module *m, const eg_case *c, void *out, size_t ob) {
    tir_rt_program *p = NULL;
    tir_rt_ptr d[EG_MAX_IN + 1] = {0};
    tir_rt_arg args[EG_MAX_IN + 1];
    bool ok = tir_rt_program_create(ctx, dev, m, &p) == TIR_OK;
    for (int q = 0; ok && q <= c->nin; q++) {
        size_t bytes = q < c->nin ? (size_t)EG_N * (size_t)eg_bytes(c->in_t[q]) : ob;
        ok = tir_rt_alloc(ctx, dev, bytes, &d[q]) == TIR_OK;
        if (ok && q < c->nin) ok = tir_rt_copy_h2d(ctx, dev, d[q], c->in[q], bytes) == TIR_OK;
        if (ok && q == c->nin) ok = tir_rt_memset8(ctx, dev, d[q], 0xa5, bytes) == TIR_OK;
        args[q] = tir_rt_arg_ptr(d[q]);
    }
    if (ok) ok = tir_rt_program_launch(ctx, p, c->nin + 1, args) == TIR_OK;
    if (ok) ok = tir_rt_sync(ctx, dev) == TIR_OK;
    if (ok) ok = tir_rt_copy_d2h(ctx, dev, out, d[c->nin], ob) == TIR_OK;
    for (int q = 0; q <= c->nin; q++)
        if (d[q]) tir_rt_free(ctx, dev, d[q]);
    if (p) tir_rt_program_destroy(p);
    return ok;
}

/* Whose bug a GPU difference is: the same PTX assembled without the
 * assembler's optimisations (JIT level 0) either agrees with the
 * interpreter, and the optimiser miscompiled it (docs/reliability.md, "The
 * PTX assembler"), or it does not, and the PTX itself is wrong.  Either way
 * the case fails: a user gets the wrong result. */
static const char *jit_level0_agrees(tir_ctx *ctx, const tir_module *m, const eg_case *c,
                                     const void *ref, size_t ob) {
    void *o0 = eg_alloc(ob);
    const char *verdict = "the run at JIT level 0 failed";
    if (tir_rt_device_set_jit_opt_level(ctx, dev, 0) == TIR_OK && run_gpu(ctx, m, c, o0, ob))
        verdict = eg_diff(c, ref, o0, c->nout) < 0
                      ? "right at JIT level 0: the PTX assembler's optimiser miscompiles it"
                      : "wrong at JIT level 0 too: the PTX is wrong";
    tir_rt_device_set_jit_opt_level(ctx, dev, -1);
    free(o0);
    return verdict;
}

static void one_case(uint64_t sd, uint64_t index, unsigned flags, counts *k) {
    if (getenv("MINITIR_EXPR_FUZZ_VERBOSE")) { /* which case hangs or crashes */
        fprintf(stderr, "case %llu\n", (unsigned long long)index);
        fflush(stderr);
    }
    tir_ctx *ctx = tir_ctx_create();
    eg_case c;
    eg_make(ctx, sd, index, flags, &c);
    eg_tally_add(&k->kinds, &c);
    size_t ob = (size_t)c.nout * (size_t)eg_bytes(c.out_t);
    void *ref = eg_alloc(ob), *gpu = eg_alloc(ob);
    tir_arg args[EG_MAX_IN + 1];
    for (int q = 0; q < c.nin; q++) args[q].data = c.in[q];
    args[c.nin].data = ref;
    tir_interp_opts io = {.uninit_params = (uint64_t)1 << c.nin};
    const char *what = NULL;
    if (tir_interp_run(ctx, c.ref ? c.ref : c.func, c.nin + 1, args, &io) != TIR_OK) {
        what = "interpreter";
        goto done;
    }
    k->run++;
    if (!c.func && c.scheduled) { /* a schedule call refused: allowed */
        k->refused++;
        goto done;
    }
    if (!c.func) { /* a reduction's schedule failed: it must not */
        what = "schedule";
        goto done;
    }
    tir_codegen_opts co;
    tir_codegen_opts_init(&co);
    co.fma_contract = false;
    const tir_module *m = NULL;
    if (tir_build(ctx, c.func, &co, &m) != TIR_OK) {
        if (tir_ctx_error_code(ctx) != TIR_ERR_LOWER || c.reduce || c.locals) what = "tir_build";
        else k->refused++; /* a clean refusal of the lowering is allowed */
        goto done;
    }
    k->built++;
    if (build_only) {
        /* ptxas (where installed) on every 8th: PTX that LLVM emits but the
         * assembler refuses fails here, not on the GPU machine */
        if (index % 8 == 0) ptxas_check(m);
        goto done;
    }
    if (!run_gpu(ctx, m, &c, gpu, ob)) {
        what = "GPU run";
        goto done;
    }
    int bad = eg_diff(&c, ref, gpu, c.nout);
    if (bad >= 0) {
        printf("# seed %llu case %llu: the GPU differs at element %d (%s)\n%s\n",
               (unsigned long long)sd, (unsigned long long)index, bad,
               jit_level0_agrees(ctx, m, &c, ref, ob), tir_print(ctx, c.func ? c.func : c.ref));
        const char *names[] = {"interpreter", "GPU"};
        void *outs[] = {ref, gpu};
        eg_report(&c, bad, 2, names, outs);
        k->failures++;
    }
done:
    if (what) {
        printf("# seed %llu case %llu: %s failed: %s\n%s\n", (unsigned long long)sd,
               (unsigned long long)index, what, tir_ctx_error(ctx), tir_print(ctx, c.func ? c.func : c.ref));
        k->failures++;
    }
    free(ref), free(gpu);
    eg_free(&c);
    tir_ctx_destroy(ctx);
}

static void test_expr_fuzz_gpu(void **st) {
    (void)st;
    counts k = {0};
    for (long i = 0; i < ncases && k.failures < 10; i++)
        one_case(seed, (uint64_t)i, EG_GATHER | EG_REDUCE | EG_LOCALS | EG_SCHED, &k);
    char kinds[160];
    eg_tally_text(&k.kinds, kinds, sizeof kinds);
    printf("# expr fuzz %s, seed %llu: %ld cases (%s), %ld interpreted, %ld built (%ld refused), "
           "%ld failures\n",
           build_only ? "built to PTX only" : "on the GPU", (unsigned long long)seed, ncases,
           kinds, k.run, k.built, k.refused, k.failures);
    assert_int_equal(k.failures, 0);
}

static void test_expr_fuzz_gpu_regressions(void **st) {
    (void)st;
    counts k = {0};
    for (int i = 0; i < eg_nregressions; i++)
        if (eg_regressions[i].gpu) one_case(eg_regressions[i].seed, eg_regressions[i].index,
                     eg_regressions[i].flags, &k);
    assert_int_equal(k.failures, 0);
}

int main(int argc, char **argv) {
    const char *e = getenv("MINITIR_EXPR_FUZZ_CASES");
    if (argc > 1) e = argv[1];
    if (e) ncases = atol(e);
    if ((e = getenv("MINITIR_FUZZ_SEED"))) seed = strtoull(e, NULL, 10);
    build_only = getenv("MINITIR_EXPR_FUZZ_BUILD_ONLY") != NULL;
    tir_ctx *ctx = tir_ctx_create();
    if (!build_only && tir_rt_device_create(ctx, 0, &dev) != TIR_OK) {
        printf("1..0 # SKIP no CUDA device (%s)\n", tir_ctx_error(ctx));
        tir_ctx_destroy(ctx);
        return 0;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_expr_fuzz_gpu),
                                       cmocka_unit_test(test_expr_fuzz_gpu_regressions)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (dev) tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
    return rc;
}
