/* The split-K schedule (examples/splitk) end to end on the CPU: lowered to
 * two kernels (tir_lower_kernels: C_rf's partial sums, then the
 * write-back) with C_rf as workspace, run in order in the SIMT simulator
 * with race, global-race and uninitialised-read checks, at odd sizes,
 * against the interpreter on the unscheduled function (small-integer
 * inputs: every summation order gives the same floats).  The lowered
 * kernels of one case are a golden (tests/data/lower/splitk.tir;
 * MINITIR_UPDATE_GOLDENS=1 rewrites it). */
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/sim.h"
#include "sgemm.h"
#include "splitk.h"

static bool step8, atomic;

static int setup(void **st) {
    step8 = atomic = false; /* a failed test may leave them set */
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* The simple split-K schedule (examples/splitk), or with step8 the Step 8
 * tiles with split-K (sgemm.c, sgemm_config.splitk; with atomic,
 * sgemm_config.splitk_atomic). */
static const tir_prim_func *scheduled(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int split) {
    tir_schedule *s = NULL;
    assert_int_equal(tir_sched_create(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32), &s), TIR_OK);
    sgemm_config cfg = sgemm_default_config();
    cfg.splitk = split;
    cfg.splitk_atomic = atomic;
    tir_status st = step8 ? sgemm_schedule(s, &cfg, NULL, NULL) : splitk_schedule(s, split);
    if (st != TIR_OK) fail_msg("split-K schedule: %s", tir_ctx_error(ctx));
    const tir_prim_func *f = tir_sched_func(s);
    tir_sched_destroy(s);
    return f;
}

/* The kernel set of one case, checked: two kernels; C_rf as workspace,
 * or with atomic none (the kernels: zero C, the partial sums added). */
static tir_kernel_set lowered(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int split) {
    const tir_prim_func *f = scheduled(ctx, M, N, K, split);
    tir_kernel_set ks;
    if (tir_lower_kernels(ctx, f, NULL, &ks) != TIR_OK)
        fail_msg("tir_lower_kernels: %s", tir_ctx_error(ctx));
    assert_int_equal(ks.nkernels, 2);
    assert_int_equal(ks.nworkspace, atomic ? 0 : 1);
    if (!atomic) assert_int_equal(tir_buffer_const_size(ks.workspace[0]), split * M * N);
    return ks;
}

/* The launches: the partial sums' kernel has the split on blockIdx.z; with
 * atomic it is second and makes one add per partial sum (every slice of
 * every element, once). */
static void check_reports(const tir_sim_report *rep, int64_t M, int64_t N, int split) {
    int main_k = atomic ? 1 : 0;
    assert_int_equal(rep[main_k].grid[2], split);
    assert_int_equal(rep[1 - main_k].grid[2], 1);
    assert_int_equal(rep[main_k].atomic_adds, atomic ? split * M * N : 0);
    assert_int_equal(rep[1 - main_k].atomic_adds, 0);
}

/* One case: the simulator's C (C starts unwritten and poisoned) equals
 * the interpreter's: bit for bit on small-integer inputs (every summation
 * order is exact); with atomic on random floats within a tolerance, since
 * the slices' sum and the interpreter's k order round differently. */
static void run_case(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int split) {
    tir_kernel_set ks = lowered(ctx, M, N, K, split);
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    float *a = malloc(na * 4), *b = malloc(nb * 4), *ref = malloc(nc * 4), *out = malloc(nc * 4);
    assert_true(a && b && ref && out);
    uint64_t r = 88172645463325252ull;
    for (size_t i = 0; i < na + nb; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        float v = atomic ? (float)(r % 20001) / 10000.0f - 1.0f : (float)((int64_t)(r % 7) - 3);
        if (i < na) a[i] = v; else b[i - na] = v;
    }
    memset(ref, 0xff, nc * 4);
    memset(out, 0xff, nc * 4);
    const tir_prim_func *orig = tir_def_matmul(ctx, M, N, K, TIR_F32);
    tir_arg ia[3] = {{.data = a}, {.data = b}, {.data = ref}};
    tir_interp_opts io = {.uninit_params = 4};
    if (tir_interp_run(ctx, orig, 3, ia, &io) != TIR_OK)
        fail_msg("interpreter: %s", tir_ctx_error(ctx));
    tir_arg sa[3] = {{.data = a}, {.data = b}, {.data = out}};
    tir_sim_opts so = {.uninit_params = 4, .check_uninit = true, .check_global_races = true};
    tir_sim_report rep[2];
    if (tir_sim_run_kernels(ctx, &ks, 3, sa, &so, rep) != TIR_OK)
        fail_msg("simulator (%lldx%lldx%lld split %d%s): %s", (long long)M, (long long)N,
                 (long long)K, split, atomic ? " atomic" : "", tir_ctx_error(ctx));
    check_reports(rep, M, N, split);
    for (size_t i = 0; i < nc; i++) {
        float tol = atomic ? 2e-6f * (float)K * (1.0f + fabsf(ref[i])) : 0.0f;
        if (atomic ? !(fabsf(ref[i] - out[i]) <= tol) : memcmp(&ref[i], &out[i], 4) != 0)
            fail_msg("C[%zu]: simulator %g, interpreter %g", i, out[i], ref[i]);
    }
    free(a), free(b), free(ref), free(out);
}

/* The atomic split-K (Step 8 tiles, atomic_reduction). */
static void run_atomic_case(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int split) {
    step8 = atomic = true;
    run_case(ctx, M, N, K, split);
    step8 = atomic = false;
}

/* Odd sizes: ragged tiles, a split that does not divide K. */
static void test_splitk_atomic_odd(void **st) {
    tir_ctx *ctx = *st;
    run_atomic_case(ctx, 200, 136, 300, 3);
    run_atomic_case(ctx, 129, 7, 64, 2);
    run_atomic_case(ctx, 33, 45, 301, 4);
}

/* The 1000x520x333 shape of issue 12 (8 x 5 x 2 blocks of 128 x 128, K in
 * slices of 168 and 165): a test of its own (`test_splitk_sim large`,
 * splitk_sim_large), since it simulates 173 M multiply-adds. */
static void test_splitk_atomic_large(void **st) {
    run_atomic_case(*st, 1000, 520, 333, 2);
}

/* An output of more than 2^20 elements lowers: the zero fill's proof that
 * each thread zeroes its own element (global_share) must hold, since
 * race_check's enumeration gives up past 2^20 elements (it used to be
 * refused from 2048 x 2048 up: the fill indexed C[(bx * 256 + tx) //
 * (1 * 2048), ...], which the proof does not take for (e // c, e % c)).
 * Lowered only: simulating it would take minutes. */
static void test_splitk_atomic_big_output(void **st) {
    tir_ctx *ctx = *st;
    step8 = atomic = true;
    int64_t sizes[3][3] = {{2048, 2048, 64}, {4095, 4095, 32}, {2048, 1000, 16}};
    for (int i = 0; i < 3; i++) {
        tir_kernel_set ks = lowered(ctx, sizes[i][0], sizes[i][1], sizes[i][2], 2);
        assert_int_equal(ks.nkernels, 2);
    }
    step8 = atomic = false;
}

/* ------------------------------------------------ atomic_reduction misuse */

static const char max_red[] =
    "@T.prim_func\n"
    "def f(A: T.Buffer((4, 8), \"int32\"), C: T.Buffer((4,), \"int32\")):\n"
    "    for i, k in T.grid(4, 8):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk])\n"
    "            T.writes(C[vi])\n"
    "            with T.init():\n"
    "                C[vi] = -2147483648\n"
    "            C[vi] = T.max(C[vi], A[vi, vk])\n";

/* f scheduled: split its reduce loop (the last loop of block C) into
 * [2, None] and rfactor the outer part (rfactor false: neither). */
static tir_schedule *split_rfactor(tir_ctx *ctx, const tir_prim_func *f, bool rfactor) {
    tir_schedule *s = NULL;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
    tir_block_rv c, rf;
    const tir_loop_rv *l;
    int n;
    tir_loop_rv k2[2];
    assert_int_equal(tir_sched_get_block(s, "C", &c), TIR_OK);
    assert_int_equal(tir_sched_get_loops(s, c, &l, &n), TIR_OK);
    if (!rfactor) return s;
    assert_int_equal(tir_sched_split(s, l[n - 1], 2, (const int64_t[]){2, TIR_SPLIT_INFER}, k2),
                     TIR_OK);
    assert_int_equal(tir_sched_rfactor(s, k2[0], 0, &rf), TIR_OK);
    return s;
}

static void annotate(tir_schedule *s, const char *block) {
    tir_block_rv b;
    assert_int_equal(tir_sched_get_block(s, block, &b), TIR_OK);
    assert_int_equal(tir_sched_annotate_block_int(s, b, tir_annot_key_str(TIR_ANN_ATOMIC_REDUCTION),
                                                  1),
                     TIR_OK);
}

/* tir_lower_kernels refuses s's function: TIR_ERR_LOWER naming the block,
 * with why, and the IR with the block marked. */
static void expect_refused(tir_ctx *ctx, tir_schedule *s, const char *block, const char *why) {
    tir_kernel_set ks;
    assert_int_equal(tir_lower_kernels(ctx, tir_sched_func(s), NULL, &ks), TIR_ERR_LOWER);
    const char *msg = tir_ctx_error(ctx);
    char head[128];
    snprintf(head, sizeof head, "block %s (annotated atomic_reduction): ", block);
    if (!strstr(msg, head) || !strstr(msg, why) || !strstr(msg, "^^^"))
        fail_msg("expected \"%s%s\" with the IR marked, got:\n%s", head, why, msg);
    tir_sched_destroy(s);
}

/* f scheduled as split-K in 2 slices with atomic adds, lowered: the
 * zeroing kernel and the atomic one. */
static tir_kernel_set atomic_kernels(tir_ctx *ctx, const tir_prim_func *f) {
    tir_schedule *s = NULL;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
    sgemm_config cfg = sgemm_default_config();
    cfg.splitk = 2;
    cfg.splitk_atomic = true;
    if (sgemm_schedule(s, &cfg, NULL, NULL) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    tir_kernel_set ks;
    if (tir_lower_kernels(ctx, tir_sched_func(s), NULL, &ks) != TIR_OK)
        fail_msg("tir_lower_kernels: %s", tir_ctx_error(ctx));
    tir_sched_destroy(s);
    assert_int_equal(ks.nkernels, 2);
    return ks;
}

/* An init of -0.0 (the additive identity, every bit of it): the zero
 * kernel stores -0.0, not +0.0, so that a C whose products are all -0.0
 * stays -0.0 as in the interpreter (it once stored a plain 0). */
static void test_splitk_atomic_negative_zero(void **st) {
    tir_ctx *ctx = *st;
    const int64_t M = 64, N = 64, K = 64;
    const char *text = tir_print(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32));
    const char *at = strstr(text, "T.float32(0)");
    assert_non_null(at);
    char *neg = malloc(strlen(text) + 2);
    size_t pre = (size_t)(at - text) + strlen("T.float32(");
    memcpy(neg, text, pre);
    strcpy(neg + pre, "-");
    strcat(neg, text + pre);
    const tir_prim_func *f = NULL;
    assert_int_equal(tir_parse_func(ctx, neg, strlen(neg), &f), TIR_OK);
    free(neg);
    tir_kernel_set ks = atomic_kernels(ctx, f);
    assert_non_null(strstr(tir_print(ctx, ks.kernels[0]), "T.float32(-0)"));
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    float *a = malloc(na * 4), *b = malloc(nb * 4), *ref = malloc(nc * 4), *out = malloc(nc * 4);
    for (size_t i = 0; i < na; i++) a[i] = -0.0f;
    for (size_t i = 0; i < nb; i++) b[i] = 1.0f;
    memset(ref, 0xff, nc * 4);
    memset(out, 0xff, nc * 4);
    tir_arg ia[3] = {{.data = a}, {.data = b}, {.data = ref}};
    assert_int_equal(tir_interp_run(ctx, f, 3, ia, NULL), TIR_OK);
    tir_arg sa[3] = {{.data = a}, {.data = b}, {.data = out}};
    tir_sim_opts so = {.uninit_params = 4, .check_uninit = true, .check_global_races = true};
    if (tir_sim_run_kernels(ctx, &ks, 3, sa, &so, NULL) != TIR_OK)
        fail_msg("simulator: %s", tir_ctx_error(ctx));
    for (size_t i = 0; i < nc; i++) {
        if (!signbit(ref[i]) || ref[i] != 0) fail_msg("interpreter C[%zu] = %g", i, ref[i]);
        if (memcmp(&ref[i], &out[i], 4) != 0)
            fail_msg("C[%zu]: simulator %g, interpreter %g", i, out[i], ref[i]);
    }
    free(a), free(b), free(ref), free(out);
}


/* Every kernel that writes C says so in its parameters: the atomic
 * kernel writes C only through atomic_add(address_of(C[..]), ..), which
 * codegen did not count as a write, so C was read_only there (the public
 * tir_kernel_param.read_only: "a buffer the kernel never writes") and
 * LLVM's kernel declared it `readonly` (a write through it is then
 * undefined in LLVM IR); seventh new-user review. */
static void test_splitk_atomic_params_written(void **st) {
    tir_ctx *ctx = *st;
    tir_kernel_set ks = atomic_kernels(ctx, tir_def_matmul(ctx, 64, 64, 64, TIR_F32));
    for (int pl = 0; pl < 2; pl++)
        for (int k = 0; k < ks.nkernels; k++) {
            tir_codegen_opts o;
            tir_codegen_opts_init(&o);
            o.pipeline = pl ? TIR_CG_PIPELINE_OPT : TIR_CG_PIPELINE_DIRECT;
            const tir_module *m;
            if (tir_codegen(ctx, ks.kernels[k], &o, &m) != TIR_OK)
                fail_msg("codegen: %s", tir_ctx_error(ctx));
            for (int i = 0; i < m->nparams; i++)
                if (!strcmp(m->params[i].name, "C") && m->params[i].read_only)
                    fail_msg("kernel %d (%s): C is read_only", k, pl ? "LLVM" : "direct");
        }
}

static void test_splitk_atomic_misuse(void **st) {
    tir_ctx *ctx = *st;
    /* 1. not a reduction block: a cache_read copy */
    tir_schedule *s = split_rfactor(ctx, tir_def_matmul(ctx, 8, 8, 16, TIR_F32), true);
    tir_block_rv c, cache;
    assert_int_equal(tir_sched_get_block(s, "C_rf", &c), TIR_OK);
    assert_int_equal(tir_sched_cache_read(s, c, 0, "shared", 0, NULL, &cache), TIR_OK);
    annotate(s, "A_shared");
    expect_refused(ctx, s, "A_shared", "not a reduction block");
    /* 2. a max reduction */
    const tir_prim_func *fmax = NULL;
    assert_int_equal(tir_parse_func(ctx, max_red, strlen(max_red), &fmax), TIR_OK);
    s = split_rfactor(ctx, fmax, true);
    annotate(s, "C");
    expect_refused(ctx, s, "C", "its combiner is Max, not Add");
    /* 3. float64 */
    s = split_rfactor(ctx, tir_def_matmul(ctx, 8, 8, 16, TIR_F64), true);
    annotate(s, "C");
    expect_refused(ctx, s, "C", "atomic adds are float32 only; the output is float64");
    /* 4. no partial results: the matmul itself, or the rfactor block */
    s = split_rfactor(ctx, tir_def_matmul(ctx, 8, 8, 16, TIR_F32), false);
    annotate(s, "C");
    expect_refused(ctx, s, "C", "does not sum a global buffer that the root block allocates");
    s = split_rfactor(ctx, tir_def_matmul(ctx, 8, 8, 16, TIR_F32), true);
    annotate(s, "C_rf");
    expect_refused(ctx, s, "C_rf", "its output is not a parameter of the function: C_rf");
    /* 5. partial sums accumulated in global memory (examples/splitk) */
    assert_int_equal(tir_sched_create(ctx, tir_def_matmul(ctx, 8, 8, 16, TIR_F32), &s), TIR_OK);
    assert_int_equal(splitk_schedule(s, 2), TIR_OK);
    annotate(s, "C");
    expect_refused(ctx, s, "C", "the partial results are read by another loop nest");
    /* 6. a scheduled write-back (Step 8's, in a register) */
    assert_int_equal(tir_sched_create(ctx, tir_def_matmul(ctx, 64, 64, 64, TIR_F32), &s), TIR_OK);
    sgemm_config cfg = sgemm_default_config();
    cfg.splitk = 2;
    assert_int_equal(sgemm_schedule(s, &cfg, NULL, NULL), TIR_OK);
    annotate(s, "C");
    expect_refused(ctx, s, "C", "its loop nest holds other blocks");
    /* 7. two annotated blocks */
    s = split_rfactor(ctx, tir_def_matmul(ctx, 8, 8, 16, TIR_F32), true);
    annotate(s, "C");
    annotate(s, "C_rf");
    expect_refused(ctx, s, "C", "a second annotated block");
    /* annotated with 0: off, the two-kernel write-back (unbound here) */
    s = split_rfactor(ctx, tir_def_matmul(ctx, 8, 8, 16, TIR_F32), true);
    assert_int_equal(tir_sched_get_block(s, "C", &c), TIR_OK);
    assert_int_equal(tir_sched_annotate_block_int(s, c, tir_annot_key_str(TIR_ANN_ATOMIC_REDUCTION),
                                                  0),
                     TIR_OK);
    tir_kernel_set ks;
    assert_int_equal(tir_lower_kernels(ctx, tir_sched_func(s), NULL, &ks), TIR_ERR_LOWER);
    assert_non_null(strstr(tir_ctx_error(ctx), "kernel 0 of 2"));
    tir_sched_destroy(s);
}

static void test_splitk_sim_odd(void **st) {
    tir_ctx *ctx = *st;
    run_case(ctx, 33, 45, 200, 3);
    run_case(ctx, 33, 45, 200, 4);
    run_case(ctx, 17, 5, 31, 2);
    run_case(ctx, 16, 16, 64, 2);
}

/* The Step 8 tiles with split-K: C_rf's kernel has 128x128 tiles of 256
 * threads, blockIdx.z the split; ragged tiles and a split that does not
 * divide K (300 = 3 x 100 does, 301 does not). */
static void test_splitk_step8_odd(void **st) {
    tir_ctx *ctx = *st;
    step8 = true;
    run_case(ctx, 200, 136, 300, 3);
    run_case(ctx, 129, 7, 64, 2);
    run_case(ctx, 200, 136, 301, 3);
    step8 = false;
}

/* Reading the partial sums before they are written is caught: the
 * write-back alone, without the C_rf kernel. */
static void test_splitk_sim_uninit(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = scheduled(ctx, 9, 7, 12, 3);
    tir_kernel_set ks;
    assert_int_equal(tir_lower_kernels(ctx, f, NULL, &ks), TIR_OK);
    assert_int_equal(ks.nkernels, 2);
    tir_kernel_set only_wb = ks;
    only_wb.nkernels = 1;
    only_wb.kernels = ks.kernels + 1;
    float a[9 * 12] = {0}, b[12 * 7] = {0}, c[9 * 7];
    tir_arg sa[3] = {{.data = a}, {.data = b}, {.data = c}};
    tir_sim_opts so = {.uninit_params = 4, .check_uninit = true};
    assert_int_equal(tir_sim_run_kernels(ctx, &only_wb, 3, sa, &so, NULL), TIR_ERR_UNINIT_READ);
    assert_non_null(strstr(tir_ctx_error(ctx), "C_rf"));
}

/* Without global intermediates: one kernel, tir_lower's, no workspace. */
static void test_lower_kernels_single(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = NULL;
    assert_int_equal(tir_sched_create(ctx, tir_def_matmul(ctx, 8, 8, 8, TIR_F32), &s), TIR_OK);
    tir_block_rv c;
    const tir_loop_rv *l;
    int n;
    assert_int_equal(tir_sched_get_block(s, "C", &c), TIR_OK);
    assert_int_equal(tir_sched_get_loops(s, c, &l, &n), TIR_OK);
    assert_int_equal(tir_sched_bind(s, l[0], "blockIdx.x"), TIR_OK);
    assert_int_equal(tir_sched_bind(s, l[1], "threadIdx.x"), TIR_OK);
    tir_kernel_set ks;
    const tir_prim_func *k1;
    assert_int_equal(tir_lower_kernels(ctx, tir_sched_func(s), NULL, &ks), TIR_OK);
    assert_int_equal(tir_lower(ctx, tir_sched_func(s), NULL, &k1), TIR_OK);
    assert_int_equal(ks.nkernels, 1);
    assert_int_equal(ks.nworkspace, 0);
    assert_true(tir_struct_equal(ks.kernels[0], k1));
    tir_sched_destroy(s);
    /* an unbound write-back is a user error naming the kernel */
    assert_int_equal(tir_sched_create(ctx, tir_def_matmul(ctx, 8, 8, 8, TIR_F32), &s), TIR_OK);
    assert_int_equal(tir_sched_get_block(s, "C", &c), TIR_OK);
    assert_int_equal(tir_sched_get_loops(s, c, &l, &n), TIR_OK);
    tir_loop_rv k2[2];
    assert_int_equal(tir_sched_split(s, l[2], 2, (const int64_t[]){2, TIR_SPLIT_INFER}, k2),
                     TIR_OK);
    tir_block_rv rf;
    assert_int_equal(tir_sched_rfactor(s, k2[0], 0, &rf), TIR_OK);
    assert_int_equal(tir_sched_bind(s, l[0], "blockIdx.x"), TIR_OK);
    assert_int_equal(tir_sched_bind(s, l[1], "threadIdx.x"), TIR_OK);
    assert_int_equal(tir_lower_kernels(ctx, tir_sched_func(s), NULL, &ks), TIR_ERR_LOWER);
    assert_non_null(strstr(tir_ctx_error(ctx), "kernel 1 of 2"));
    tir_sched_destroy(s);
}

/* The kernels of f, printed in order, equal golden tests/data/lower/<name>. */
static void check_golden(tir_ctx *ctx, const tir_prim_func *func, const char *name) {
    tir_kernel_set ks;
    assert_int_equal(tir_lower_kernels(ctx, func, NULL, &ks), TIR_OK);
    size_t cap = 1 << 17, len = 0;
    char *text = calloc(cap, 1);
    assert_non_null(text);
    for (int k = 0; k < ks.nkernels; k++) {
        const char *p = tir_print(ctx, ks.kernels[k]);
        assert_true(len + strlen(p) + 1 < cap);
        memcpy(text + len, p, strlen(p) + 1);
        len += strlen(p);
    }
    const char *dir = getenv("MINITIR_TEST_DATA");
    if (!dir) fail_msg("MINITIR_TEST_DATA is not set (run the test through meson test)");
    char path[4096];
    snprintf(path, sizeof path, "%s/lower/%s", dir, name);
    const char *up = getenv("MINITIR_UPDATE_GOLDENS");
    if (up && strcmp(up, "1") == 0) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
    }
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("golden %s is missing; create it with MINITIR_UPDATE_GOLDENS=1", path);
    char *want = calloc(cap, 1);
    assert_non_null(want);
    size_t got = fread(want, 1, cap - 1, f);
    fclose(f);
    want[got] = '\0';
    if (strcmp(want, text) != 0) fail_msg("lowered kernels differ from %s:\n%s", path, text);
    free(want);
    free(text);
}

static void test_splitk_golden(void **st) {
    tir_ctx *ctx = *st;
    check_golden(ctx, scheduled(ctx, 33, 45, 200, 3), "splitk.tir");
    /* the atomic option: [zero C, Step 8 tiles adding to C] */
    step8 = atomic = true;
    const tir_prim_func *f = scheduled(ctx, 64, 48, 256, 4);
    step8 = atomic = false;
    check_golden(ctx, f, "splitk_atomic.tir");
}

int main(int argc, char **argv) {
    const struct CMUnitTest large[] = {
        cmocka_unit_test_setup_teardown(test_splitk_atomic_large, setup, teardown),
    };
    if (argc > 1 && !strcmp(argv[1], "large")) return cmocka_run_group_tests(large, NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_splitk_sim_odd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splitk_step8_odd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splitk_atomic_odd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splitk_atomic_big_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splitk_atomic_misuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splitk_atomic_negative_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splitk_atomic_params_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splitk_sim_uninit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lower_kernels_single, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splitk_golden, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
