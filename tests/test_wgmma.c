/* test_wgmma.c: TF32 through Hopper's warpgroup MMA (tir_tc_config.wgmma,
 * docs/tensor-cores.md "wgmma"), end to end on the CPU.  The rule's
 * schedule replays from its trace; the tensorized function (the logical
 * wgmma) runs in the reference interpreter against the plain matmul; the
 * lowered kernel (wgmma_sync groups, the 128-byte swizzle of A's shared
 * tile, cp.async pipeline) runs in the SIMT simulator, warpgroup by
 * warpgroup, against the interpreter; and codegen's PTX for sm_90a has the
 * instructions.  Then what is refused, each with its reason: the rule's
 * conditions (type, warps, tiles, ragged shapes, split-K) and lowering's
 * (a wgmma under an if, a shared tile that depends on the warp, the
 * swapped layout turned off).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hgemm.h"
#include "minitir/codegen.h"
#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/sim.h"

#define OK(ctx, call)                                                                     \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) fail_msg("%s: %s", #call, tir_ctx_error(ctx));                 \
    } while (0)

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

static hgemm_config wg_config(int bm, int bn, int warps_n, int stages) {
    hgemm_config c = hgemm_default_config();
    c.wgmma = true, c.bm = bm, c.bn = bn, c.bk = 32, c.warps_m = 1, c.warps_n = warps_n;
    c.stages = stages;
    return c;
}

/* The lowered kernel of cfg at M x N x K (TF32), or a failed status. */
static tir_status lowered(tir_ctx *ctx, const hgemm_config *cfg, int64_t M, int64_t N, int64_t K,
                          const tir_lower_opts *lo, const tir_prim_func **sched,
                          const tir_prim_func **kernel) {
    const tir_prim_func *f = tir_def_matmul_mixed(ctx, M, N, K, TIR_F32, TIR_F32);
    tir_schedule *s;
    tir_status st = tir_sched_create(ctx, f, &s);
    if (st != TIR_OK) return st;
    st = hgemm_schedule(s, cfg, NULL, NULL);
    if (st == TIR_OK) {
        *sched = tir_sched_func(s);
        st = tir_lower(ctx, *sched, lo, kernel);
    }
    tir_sched_destroy(s);
    return st;
}

/* Schedule, trace, interpreter, simulator and PTX of cfg at M x N x K;
 * returns the number of wgmma.mma_async in the PTX. */
static int run_case(const hgemm_config *cfg, int64_t M, int64_t N, int64_t K) {
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = tir_def_matmul_mixed(ctx, M, N, K, TIR_F32, TIR_F32);
    tir_schedule *s, *r;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, hgemm_schedule(s, cfg, NULL, NULL));
    OK(ctx, tir_sched_create(ctx, f, &r));
    const char *trace = tir_sched_trace_text(s);
    OK(ctx, tir_sched_replay(r, trace, strlen(trace)));
    assert_true(tir_struct_equal(tir_sched_func(r), tir_sched_func(s)));
    tir_sched_destroy(r);
    assert_true(count(tir_print(ctx, tir_sched_func(s)), "T.wgmma(") > 0);

    size_t nc = (size_t)(M * N);
    float *a = malloc(4 * (size_t)(M * K)), *b = malloc(4 * (size_t)(K * N));
    float *out = malloc(4 * nc), *sched = malloc(4 * nc), *want = malloc(4 * nc);
    OK(ctx, tir_rt_fill_random(ctx, TIR_F32, a, (size_t)(M * K), 11));
    OK(ctx, tir_rt_fill_random(ctx, TIR_F32, b, (size_t)(K * N), 12));
    tir_interp_opts io = {.uninit_params = 4};
    tir_arg args[3] = {{a, 0}, {b, 0}, {want, 0}};
    OK(ctx, tir_interp_run(ctx, f, 3, args, &io));
    double tol = tir_rt_gemm_tolerance(TIR_RT_GEMM_TF32, K);
    args[2].data = sched;
    OK(ctx, tir_interp_run(ctx, tir_sched_func(s), 3, args, &io));
    double ref[1];
    (void)ref;
    double *dref = malloc(sizeof(double) * nc);
    for (size_t i = 0; i < nc; i++) dref[i] = want[i];
    OK(ctx, tir_rt_check(ctx, "interpreted wgmma", TIR_F32, sched, dref, M, N, tol, NULL));
    /* TF32 rounds: the tensorized result is not the float32 one bit for
     * bit (a check that would pass with the interpreter's wgmma a no-op
     * is not one) */
    assert_true(memcmp(sched, want, 4 * nc) != 0);

    const tir_prim_func *kernel;
    OK(ctx, tir_lower(ctx, tir_sched_func(s), NULL, &kernel));
    const char *kir = tir_print(ctx, kernel);
    /* a k tile's wgmma are one group: as many wgmma_sync calls as k-tile
     * bodies the pipeline emits, each of (bk / 8) * strips groups */
    assert_true(count(kir, "T.wgmma_sync(") >= 1);
    tir_rt_poison(out, 4 * nc);
    args[2].data = out;
    tir_sim_opts so = {.uninit_params = 4, .check_uninit = true};
    tir_sim_report rep;
    OK(ctx, tir_sim_run(ctx, kernel, 3, args, &so, &rep));
    /* the interpreter's and the simulator's wgmma round alike */
    for (size_t i = 0; i < nc; i++)
        if (out[i] != sched[i])
            fail_msg("simulated wgmma differs from the interpreted one at %zu: %.9g, %.9g", i,
                     (double)out[i], (double)sched[i]);

    tir_codegen_opts co = {0};
    tir_codegen_opts_init(&co);
    co.arch = "sm_90a";
    const tir_module *m;
    OK(ctx, tir_codegen(ctx, kernel, &co, &m));
    int n = count(m->ptx, "wgmma.mma_async.sync.aligned.m64n");
    assert_true(n > 0);
    assert_int_equal(count(m->ptx, "mma.sync.aligned"), 0);
    tir_sched_destroy(s);
    free(a), free(b), free(out), free(sched), free(want), free(dref);
    tir_ctx_destroy(ctx);
    return n;
}

static void test_two_warpgroups(void **st) {
    (void)st;
    hgemm_config c = wg_config(128, 256, 8, 2);
    assert_true(run_case(&c, 128, 256, 64) > 0);
}

static void test_one_warpgroup_stages(void **st) {
    (void)st;
    hgemm_config c = wg_config(64, 128, 4, 3); /* two strips a warp, m64n64 */
    assert_true(run_case(&c, 128, 256, 160) > 0);
    c = wg_config(256, 64, 4, 2); /* one strip a warp, m64n256 */
    assert_true(run_case(&c, 256, 128, 64) > 0);
}

/* Four strips a warp: a k tile's 16 wgmma, more than one wgmma_sync holds
 * (IR_WGMMA_MAX_GROUPS, the oracles' argument arrays): wgmma_group made
 * one call of 80 arguments, which the interpreter refused in the
 * simulator ("call to wgmma_sync with 80 arguments"); now two of 8. */
static void test_many_strips(void **st) {
    (void)st;
    hgemm_config c = wg_config(64, 256, 4, 2);
    assert_int_equal(run_case(&c, 64, 256, 64), 32);
}

/* The rule's conditions, said before any primitive runs. */
static void refused_cfg(const hgemm_config *c, int64_t M, int64_t N, int64_t K, tir_dtype in,
                        const char *why) {
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = tir_def_matmul_mixed(ctx, M, N, K, in, TIR_F32);
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    const tir_prim_func *before = tir_sched_func(s);
    assert_int_not_equal(hgemm_schedule(s, c, NULL, NULL), TIR_OK);
    if (!strstr(tir_ctx_error(ctx), why)) fail_msg("%s: want \"%s\"", tir_ctx_error(ctx), why);
    assert_true(tir_struct_equal(tir_sched_func(s), before)); /* nothing half-done */
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

static void test_rule_refusals(void **st) {
    (void)st;
    hgemm_config c = wg_config(128, 256, 8, 2);
    refused_cfg(&c, 128, 256, 64, TIR_BF16, "TF32 (float32 inputs) only");
    { /* a batch matmul (its block's first iterator is the batch) */
        tir_ctx *ctx = tir_ctx_create();
        tir_schedule *s;
        OK(ctx, tir_sched_create(ctx, tir_def_batch_matmul(ctx, 2, 128, 256, 64, TIR_F32), &s));
        const tir_prim_func *before = tir_sched_func(s);
        assert_int_not_equal(hgemm_schedule(s, &c, NULL, NULL), TIR_OK);
        assert_non_null(strstr(tir_ctx_error(ctx), "no batch"));
        assert_true(tir_struct_equal(tir_sched_func(s), before));
        tir_sched_destroy(s);
        tir_ctx_destroy(ctx);
    }
    refused_cfg(&c, 100, 256, 64, TIR_F32, "multiples of the block tile");
    refused_cfg(&c, 128, 264, 64, TIR_F32, "multiples of the block tile");
    hgemm_config w = c;
    w.warps_m = 2, w.warps_n = 4;
    refused_cfg(&w, 128, 256, 64, TIR_F32, "warps_m 1");
    w = c, w.warps_n = 6, w.bn = 192;
    refused_cfg(&w, 128, 192, 64, TIR_F32, "warpgroups of 4");
    w = c, w.bm = 96;
    refused_cfg(&w, 96, 256, 64, TIR_F32, "64, 128 or 256");
    w = c, w.bk = 16;
    refused_cfg(&w, 128, 256, 64, TIR_F32, "bk is 32");
    w = c, w.splitk = 2;
    refused_cfg(&w, 128, 256, 128, TIR_F32, "split-K");
}

/* Lowering's own conditions, on the rule's schedule edited as text. */
static void refused_lowering(const char *from, const char *to, const char *why) {
    tir_ctx *ctx = tir_ctx_create();
    hgemm_config c = wg_config(128, 256, 8, 1);
    const tir_prim_func *f = tir_def_matmul_mixed(ctx, 128, 256, 32, TIR_F32, TIR_F32), *k;
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, hgemm_schedule(s, &c, NULL, NULL));
    const char *text = tir_print(ctx, tir_sched_func(s));
    const char *at = strstr(text, from);
    if (!at) fail_msg("no \"%s\" in\n%s", from, text);
    size_t n = strlen(text) + strlen(to) + 1;
    char *edited = malloc(n);
    snprintf(edited, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    const tir_prim_func *g;
    OK(ctx, tir_parse_func(ctx, edited, strlen(edited), &g));
    assert_int_not_equal(tir_lower(ctx, g, NULL, &k), TIR_OK);
    if (!strstr(tir_ctx_error(ctx), why)) fail_msg("%s: want \"%s\"", tir_ctx_error(ctx), why);
    free(edited);
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

static void test_lowering_refusals(void **st) {
    (void)st;
    /* only the first warpgroup's warps run it */
    refused_lowering("T.wgmma(", "if j_1 < 4:\n                                        T.wgmma(",
                     "wgmma under an if");
    /* a column origin inside a strip */
    refused_lowering("T.wgmma(T.address_of(C_frag_acc[0, vj_o_1 * 16]",
                     "T.wgmma(T.address_of(C_frag_acc[0, vj_o_1 * 16 + 8]",
                     "not provably a multiple of 16");
    /* odd warps run it twice */
    refused_lowering("T.wgmma(",
                     "for q in range(j_1 % 2 + 1):\n                                        T.wgmma(",
                     "loop whose bounds depend on the warp");
    /* the shared tile's row depends on the warp (threadIdx.y is j_1) */
    refused_lowering("T.address_of(A_shared[0, ", "T.address_of(A_shared[j_1 // 8 * 8, ",
                     "depends on the warp");
    /* the k slice past the tile's 32 columns at the last k step (K = 32:
     * A_shared is (128, 32)); was lowered, reading the next row's start */
    refused_lowering("T.address_of(A_shared[0, vk_o * 8])",
                     "T.address_of(A_shared[0, vk_o * 8 + 8])", "inside its 32");
    /* the swapped layout off: wgmma has no other */
    tir_ctx *ctx = tir_ctx_create();
    hgemm_config c = wg_config(128, 256, 8, 1);
    tir_lower_opts lo;
    tir_lower_opts_init(&lo);
    lo.no_tf32_swap = true;
    const tir_prim_func *sched, *k;
    assert_int_not_equal(lowered(ctx, &c, 128, 256, 32, &lo, &sched, &k), TIR_OK);
    assert_non_null(strstr(tir_ctx_error(ctx), "swapped TF32 layout"));
    tir_ctx_destroy(ctx);
}

/* Two wgmma of different shapes (m64n128, m64n64) on the same
 * accumulators, one after the other: merged into one wgmma_sync, the
 * second's accumulator registers are the first's while it is in flight,
 * which the hardware orders only between wgmma of one shape (PTX ISA,
 * wgmma.fence).  Codegen waits and fences between them; the simulator
 * agrees with the interpreter either way. */
static void test_mixed_shapes(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    hgemm_config c = wg_config(128, 64, 4, 1);
    const int64_t M = 128, N = 64, K = 32;
    const tir_prim_func *f = tir_def_matmul_mixed(ctx, M, N, K, TIR_F32, TIR_F32), *g, *kernel;
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, hgemm_schedule(s, &c, NULL, NULL));
    const char *text = tir_print(ctx, tir_sched_func(s));
    const char *w = "T.wgmma(T.address_of(C_frag_acc[0, vj_o_1 * 16]), "
                    "T.address_of(A_shared[0, vk_o * 8]), "
                    "T.address_of(B_shared_frag_b[vk_o * 8, vj_o_1 * 16]), 128)";
    const char *at = strstr(text, w);
    if (!at) fail_msg("no \"%s\" in\n%s", w, text);
    const char *line = at;
    while (line > text && line[-1] == ' ') line--;
    size_t wl = strlen(w), n = strlen(text) + wl + (size_t)(at - line) + 2;
    char *edited = malloc(n);
    /* the call, then the same with 64 rows on the line below */
    snprintf(edited, n, "%.*s\n%.*s%.*s64)%s", (int)(at - text + wl), text, (int)(at - line), line,
             (int)(wl - 4), w, at + wl);
    OK(ctx, tir_parse_func(ctx, edited, strlen(edited), &g));
    OK(ctx, tir_lower(ctx, g, NULL, &kernel));

    float *a = malloc(4 * M * K), *b = malloc(4 * K * N), *want = malloc(4 * M * N),
          *out = malloc(4 * M * N);
    OK(ctx, tir_rt_fill_random(ctx, TIR_F32, a, (size_t)(M * K), 11));
    OK(ctx, tir_rt_fill_random(ctx, TIR_F32, b, (size_t)(K * N), 12));
    tir_arg args[3] = {{a, 0}, {b, 0}, {want, 0}};
    tir_interp_opts io = {.uninit_params = 4};
    OK(ctx, tir_interp_run(ctx, g, 3, args, &io));
    tir_rt_poison(out, 4 * (size_t)(M * N));
    args[2].data = out;
    tir_sim_opts so = {.uninit_params = 4, .check_uninit = true};
    tir_sim_report rep;
    OK(ctx, tir_sim_run(ctx, kernel, 3, args, &so, &rep));
    assert_memory_equal(out, want, 4 * (size_t)(M * N));

    tir_codegen_opts co;
    tir_codegen_opts_init(&co);
    co.arch = "sm_90a";
    const tir_module *m;
    OK(ctx, tir_codegen(ctx, kernel, &co, &m));
    assert_int_equal(count(m->ptx, "wgmma.mma_async.sync.aligned.m64n128k8"), 4);
    assert_int_equal(count(m->ptx, "wgmma.mma_async.sync.aligned.m64n64k8"), 4);
    /* every m64n64 after an m64n128, and the reverse, behind a wait and a
     * fence: 7 changes of shape in the one group of 8 */
    assert_int_equal(count(m->ptx, "wgmma.wait_group.sync.aligned 0;\n\twgmma.fence.sync.aligned;\n\t"
                                   "wgmma.mma_async"),
                     7);
    free(a), free(b), free(want), free(out), free(edited);
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_warpgroups),
        cmocka_unit_test(test_one_warpgroup_stages),
        cmocka_unit_test(test_many_strips),
        cmocka_unit_test(test_mixed_shapes),
        cmocka_unit_test(test_rule_refusals),
        cmocka_unit_test(test_lowering_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
