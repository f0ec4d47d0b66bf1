/* Tests of transform_layout: the k-major shared A tile of a plain matmul
 * (golden text), reshapes, splits and rotation swizzles on cache
 * buffers at odd shapes (interpreter equivalence and trace round trip
 * after each), regions that are not points, a Step-3 matmul with
 * transformed shared tiles lowered and run in the SIMT simulator (race and
 * uninitialised-read checks on) against the interpreter; one negative
 * test per precondition, each checking that nothing changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/lower.h"
#include "minitir/sim.h"
#include "minitir/runtime.h"
#include "minitir/tune.h"
#include "sched_check.h"
#include "seed.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static const char kmajor_after[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((5, 7), \"float32\"), B: T.Buffer((7, 3), \"float32\"), C: T.Buffer((5, 3), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        A_shared = T.alloc_buffer((7, 5), \"float32\", scope=\"shared\")\n"
    "        for i, j, k in T.grid(5, 3, 7):\n"
    "            with T.block(\"A_shared\"):\n"
    "                v0, v1 = T.axis.remap(\"SS\", [i, k])\n"
    "                T.reads(A[v0, v1])\n"
    "                T.writes(A_shared[v1, v0])\n"
    "                A_shared[v1, v0] = A[v0, v1]\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "                T.reads(A_shared[vk, vi], B[vk, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                with T.init():\n"
    "                    C[vi, vj] = T.float32(0)\n"
    "                C[vi, vj] = C[vi, vj] + A_shared[vk, vi] * B[vk, vj]\n";

/* cache_read A into shared, compute_at the k loop: the A_shared block. */
static tir_block_rv kmajor_setup(tir_schedule *s) {
    tir_block_rv c = sched_block(s, "C"), a_sh;
    tir_loop_rv loops[16];
    int n = sched_loops(s, "C", loops);
    assert_int_equal(n, 3);
    SCHED_OK(s, tir_sched_cache_read(s, c, 0, "shared", 0, NULL, &a_sh));
    SCHED_OK(s, tir_sched_compute_at(s, a_sh, loops[2], false));
    return a_sh;
}

static const tir_buffer *written(tir_schedule *s, tir_block_rv b) {
    const tir_block *blk = NULL;
    SCHED_OK(s, tir_sched_get_block_node(s, b, &blk));
    return blk->writes[0].buffer;
}

static int64_t dim(const tir_buffer *b, int d) {
    int64_t v = -1;
    assert_true(tir_expr_const_int(b->shape[d], &v));
    return v;
}

static void test_kmajor_golden(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 5, 3, 7, TIR_F32));
    tir_block_rv a_sh = kmajor_setup(s);
    SCHED_OK(s, tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (k, i)"));
    const tir_buffer *b = written(s, a_sh);
    assert_int_equal(b->ndim, 2);
    assert_int_equal(dim(b, 0), 7);
    assert_int_equal(dim(b, 1), 5);
    sched_expect_text(s, kmajor_after);
    sched_check_all(s);
    tir_sched_destroy(s);
}


/* A plain matmul with A cached in shared memory (its own loop nest). */
static tir_schedule *cached(tir_ctx *ctx, tir_block_rv *a_sh) {
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 5, 3, 7, TIR_F32));
    SCHED_OK(s, tir_sched_cache_read(s, sched_block(s, "C"), 0, "shared", 0, NULL, a_sh));
    return s;
}

/* Reshapes, rotation swizzles and splits of the 5 x 7 A tile, each
 * on a fresh schedule (interpreter equivalence, trace round trip), then
 * composed on one. */
static void test_maps(void **st) {
    tir_ctx *ctx = *st;
    static const struct {
        const char *map;
        int ndim;
        int64_t shape[3];
    } cases[] = {
        {"lambda i, k: (i * 7 + k,)", 1, {35}},
        {"lambda i, k: i * 7 + k", 1, {35}},
        {"lambda i, k: [k, i]", 2, {7, 5}},
        {"lambda i, k: (i, (k + i) % 7)", 2, {5, 7}},
        {"lambda i, k: (k, (i + k * 2) % 5)", 2, {7, 5}},
        {"lambda i, k: ((i * 7 + k) // 5, (i * 7 + k) % 5)", 2, {7, 5}},
        {"lambda i, k: (T.max(k, 0), T.min(i, 4) - 0)", 2, {7, 5}},
        {"lambda i, k: (k // 7, i, k % 7)", 3, {1, 5, 7}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tir_block_rv a_sh;
        tir_schedule *s = cached(ctx, &a_sh);
        SCHED_OK(s, tir_sched_transform_layout(s, a_sh, 0, true, cases[c].map));
        const tir_buffer *b = written(s, a_sh);
        assert_int_equal(b->ndim, cases[c].ndim);
        for (int d = 0; d < b->ndim; d++) assert_int_equal(dim(b, d), cases[c].shape[d]);
        sched_check_all(s);
        tir_sched_destroy(s);
    }
    /* composed, through the consumer's read index this time */
    tir_block_rv a_sh;
    tir_schedule *s = cached(ctx, &a_sh);
    tir_block_rv c = sched_block(s, "C");
    SCHED_OK(s, tir_sched_transform_layout(s, c, 0, false, "lambda i, k: (k, i)"));
    SCHED_OK(s, tir_sched_transform_layout(s, a_sh, 0, true, "lambda k, i: (i, k // 7, k % 7)"));
    SCHED_OK(s, tir_sched_transform_layout(s, a_sh, 0, true,
                                           "lambda a, b, c: ((c + a) % 7, a * 1 + b)"));
    const tir_buffer *b = written(s, a_sh);
    assert_int_equal(b->ndim, 2);
    assert_int_equal(dim(b, 0), 7);
    assert_int_equal(dim(b, 1), 5);
    sched_check_all(s);
    /* the cache can still be aligned; compute_at, which needs the cache
       written at its iterators, must come before such a map */
    SCHED_OK(s, tir_sched_storage_align(s, a_sh, 0, 0, 32, 1));
    sched_check_all(s);
    tir_loop_rv loops[16];
    assert_int_equal(sched_loops(s, "C", loops), 3);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, "compute_at",
                      tir_sched_compute_at(s, a_sh, loops[0], false));
    tir_sched_destroy(s);
    /* a permutation keeps it at its iterators: compute_at after it */
    s = cached(ctx, &a_sh);
    SCHED_OK(s, tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (k, i)"));
    assert_int_equal(sched_loops(s, "C", loops), 3);
    SCHED_OK(s, tir_sched_compute_at(s, a_sh, loops[2], false));
    sched_check_all(s);
    tir_sched_destroy(s);
}

/* A block reading a whole row (a region that is not a point): its region
 * becomes the bounding box of the row's image. */
static const char rowsum_text[] =
    "@T.prim_func\n"
    "def rowsum(A: T.Buffer((5, 8), \"float32\"), B: T.Buffer((5,), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        S = T.alloc_buffer((5, 8), \"float32\")\n"
    "        for i, j in T.grid(5, 8):\n"
    "            with T.block(\"S\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(S[vi, vj])\n"
    "                S[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for i in range(5):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(5, i)\n"
    "                T.reads(S[vi, 0:8])\n"
    "                T.writes(B[vi])\n"
    "                B[vi] = T.float32(0)\n"
    "                for k in range(8):\n"
    "                    B[vi] = B[vi] + S[vi, k]\n";

static void test_region(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f;
    assert_int_equal(tir_parse_func(ctx, rowsum_text, strlen(rowsum_text), &f), TIR_OK);
    tir_schedule *s = sched_new(ctx, f);
    tir_block_rv b = sched_block(s, "B");
    SCHED_OK(s, tir_sched_transform_layout(s, b, 0, false, "lambda i, j: (j // 4, i, j % 4)"));
    const tir_block *blk = NULL;
    SCHED_OK(s, tir_sched_get_block_node(s, b, &blk));
    assert_int_equal(blk->reads[0].ndim, 3);
    int64_t want_min[3] = {0, -1, 0}, want_ext[3] = {2, 1, 4}, v;
    for (int d = 0; d < 3; d++) {
        const tir_range *r = &blk->reads[0].ranges[d];
        assert_true(tir_expr_const_int(r->extent, &v));
        assert_int_equal(v, want_ext[d]);
        if (want_min[d] >= 0) {
            assert_true(tir_expr_const_int(r->min, &v));
            assert_int_equal(v, want_min[d]);
        }
    }
    sched_check_all(s);
    tir_sched_destroy(s);
}

#define FAIL(s, code, call) SCHED_EXPECT_FAIL(s, code, "transform_layout", call)

static void test_preconditions(void **st) {
    tir_ctx *ctx = *st;
    tir_block_rv a_sh;
    tir_schedule *s = cached(ctx, &a_sh);
    tir_block_rv c = sched_block(s, "C");
    const char *t = "lambda i, k: (k, i)";
    /* 1. index */
    FAIL(s, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, tir_sched_transform_layout(s, a_sh, 1, true, t));
    FAIL(s, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, tir_sched_transform_layout(s, a_sh, 1, false, t));
    FAIL(s, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, tir_sched_transform_layout(s, c, -1, false, t));
    /* 2. parameters: C written by C, A read by the cache block */
    FAIL(s, TIR_ERR_SCHED_OUTPUT_BUFFER, tir_sched_transform_layout(s, c, 0, true, t));
    FAIL(s, TIR_ERR_SCHED_OUTPUT_BUFFER, tir_sched_transform_layout(s, a_sh, 0, false, t));
    /* 3. the map */
    static const char *const bad[] = {
        "", "lambda", "lambda i k: (i, k)", "lambda i, k: (x, k)", "lambda i, k: (i, k",
        "lambda i, k: (i * 2.0, k)", "lambda i, k: (i < k, k)", "lambda i, i: (i, i)",
        "lambda i, k: (i, k) extra", "lambda i, k: (T.Select(i < 1, i, k), k)",
        "lambda i, k: (T.truncdiv(i, 2), k)", "lambda i, k: (T.int64(i), k)", "i, k: (i, k)",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        FAIL(s, TIR_ERR_SCHED_BAD_INDEX_MAP, tir_sched_transform_layout(s, a_sh, 0, true, bad[i]));
    /* 4. arity */
    FAIL(s, TIR_ERR_SCHED_MAP_ARITY, tir_sched_transform_layout(s, a_sh, 0, true, "lambda i: (i,)"));
    FAIL(s, TIR_ERR_SCHED_MAP_ARITY,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k, l: (i, k, l)"));
    FAIL(s, TIR_ERR_SCHED_MAP_ARITY, tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: ()"));
    /* 6. limits: negative, division by zero, overflow */
    FAIL(s, TIR_ERR_SCHED_LAYOUT_LIMIT,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (i - 1, k)"));
    FAIL(s, TIR_ERR_SCHED_LAYOUT_LIMIT,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (i // (k - k), k)"));
    FAIL(s, TIR_ERR_SCHED_LAYOUT_LIMIT,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (i * 1000000 * 1000000, k)"));
    FAIL(s, TIR_ERR_SCHED_LAYOUT_LIMIT,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (i * 100000, k * 100000)"));
    /* 7. not injective */
    FAIL(s, TIR_ERR_SCHED_MAP_NOT_INJECTIVE,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (i, i)"));
    FAIL(s, TIR_ERR_SCHED_MAP_NOT_INJECTIVE,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (k % 2, i)"));
    FAIL(s, TIR_ERR_SCHED_MAP_NOT_INJECTIVE,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (i + k,)"));
    FAIL(s, TIR_ERR_SCHED_MAP_NOT_INJECTIVE,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (i, T.min(k, 5))"));
    /* 8. padding */
    FAIL(s, TIR_ERR_SCHED_LAYOUT_PADDING,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (k // 2, i, k % 2)"));
    FAIL(s, TIR_ERR_SCHED_LAYOUT_PADDING,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (i, k * 2)"));
    /* 5. strides (after storage_align) */
    SCHED_OK(s, tir_sched_storage_align(s, a_sh, 0, 0, 32, 1));
    FAIL(s, TIR_ERR_SCHED_LAYOUT_BUFFER, tir_sched_transform_layout(s, a_sh, 0, true, t));
    /* NULL arguments */
    assert_int_equal(tir_sched_transform_layout(NULL, a_sh, 0, true, t), TIR_ERR_INVALID_ARG);
    FAIL(s, TIR_ERR_INVALID_ARG, tir_sched_transform_layout(s, a_sh, 0, true, NULL));
    tir_sched_destroy(s);

    /* 6. a domain too large to enumerate; a permutation needs no proof */
    s = sched_new(ctx, tir_def_matmul(ctx, 4096, 2, 2048, TIR_F32));
    SCHED_OK(s, tir_sched_cache_read(s, sched_block(s, "C"), 0, "shared", 0, NULL, &a_sh));
    FAIL(s, TIR_ERR_SCHED_LAYOUT_LIMIT,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (k + 0, i)"));
    SCHED_OK(s, tir_sched_transform_layout(s, a_sh, 0, true, "lambda i, k: (k, i)"));
    assert_int_equal(dim(written(s, a_sh), 0), 2048);
    sched_check_roundtrip(s);
    tir_sched_destroy(s);
}

/* Step 3 of the seed (shared A and B tiles at k_outer, cooperative
 * fetch), A_shared made k-major or flat, B_shared transposed or split,
 * lowered and run in the simulator with race and
 * uninitialised-read checks against the interpreter on the plain matmul. */
static void sim_step3(int64_t M, int64_t N, int64_t K, int step, const char *amap,
                      const char *bmap) {
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32);
    tir_schedule *s = sched_new(ctx, f);
    SCHED_OK(s, seed_schedule(s, step, NULL, NULL));
    SCHED_OK(s, tir_sched_transform_layout(s, sched_block(s, "A_shared"), 0, true, amap));
    SCHED_OK(s, tir_sched_transform_layout(s, sched_block(s, "B_shared"), 0, true, bmap));
    sched_check_all(s);
    const tir_prim_func *kernel;
    SCHED_OK(s, tir_lower(ctx, tir_sched_func(s), NULL, &kernel));
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    float *a = malloc(sizeof(float) * na), *b = malloc(sizeof(float) * nb);
    float *out = malloc(sizeof(float) * nc), *want = malloc(sizeof(float) * nc);
    double *ref = malloc(sizeof(double) * nc);
    assert_int_equal(tir_rt_fill_random(ctx, TIR_F32, a, na, 21), TIR_OK);
    assert_int_equal(tir_rt_fill_random(ctx, TIR_F32, b, nb, 22), TIR_OK);
    tir_rt_poison(out, sizeof(float) * nc);
    tir_arg args[3] = {{a, 0}, {b, 0}, {out, 0}}, rargs[3] = {{a, 0}, {b, 0}, {want, 0}};
    tir_interp_opts io = {.uninit_params = 1u << 2};
    SCHED_OK(s, tir_interp_run(ctx, f, 3, rargs, &io));
    tir_sim_opts so = {.uninit_params = 1u << 2, .check_uninit = true};
    tir_sim_report rep;
    tir_status st = tir_sim_run(ctx, kernel, 3, args, &so, &rep);
    if (st != TIR_OK) fail_msg("%lldx%lldx%lld: %s", (long long)M, (long long)N, (long long)K,
                               tir_ctx_error(ctx));
    assert_true(rep.barriers > 0 && rep.shared_bytes > 0);
    for (size_t i = 0; i < nc; i++) ref[i] = want[i];
    tir_rt_error_stats es;
    st = tir_rt_check(ctx, "transform_layout", TIR_F32, out, ref, M, N, 1e-5, &es);
    if (st != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    assert_int_equal(es.nonfinite, 0);
    free(a);
    free(b);
    free(out);
    free(want);
    free(ref);
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

/* The smallest divisor > 1 of n (n itself when prime). */
static int64_t divisor(int64_t n) {
    for (int64_t d = 2; d < n; d++)
        if (n % d == 0) return d;
    return n;
}

/* A shared tile that a tensorized frag_load reads by address: the
 * intrinsic reads a row-major 16 x 16 region from the tile's origin, which
 * a map would not follow, so transform_layout refuses the buffer (it was
 * accepted, and the k-major A tile was read as a row-major one: C wrong in
 * the interpreter and the simulator alike). */
static void test_tile_address_refused(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, tir_def_matmul_mixed(ctx, 32, 32, 32, TIR_BF16, TIR_F32));
    tir_tc_config cfg;
    SCHED_OK(s, tir_tc_config_parse(ctx, "tile=32x32x32 warps=2x2 stages=1 async=0 pad=0", &cfg));
    SCHED_OK(s, tir_tune_tc_tiling(s, "C", &cfg, NULL, NULL));
    tir_block_rv a_sh = sched_block(s, "A_shared");
    FAIL(s, TIR_ERR_SCHED_LAYOUT_BUFFER,
         tir_sched_transform_layout(s, a_sh, 0, true, "lambda d0, d1: (d1, d0)"));
    assert_non_null(strstr(tir_ctx_error(ctx), "frag_load"));
    tir_sched_destroy(s);
}

static void test_sim(void **st) {
    (void)st;
    static const int64_t sizes[][3] = {{37, 45, 29}, {33, 31, 40}, {5, 7, 3}, {34, 9, 6}};
    char split[128], fuse[128];
    for (int i = 0; i < 4; i++) {
        const int64_t *z = sizes[i];
        int64_t d = divisor(z[2]);
        snprintf(split, sizeof split, "lambda k, j: (k // %lld, j, k %% %lld)", (long long)d,
                 (long long)d);
        snprintf(fuse, sizeof fuse, "lambda i, k: (i * %lld + k,)", (long long)z[2]);
        sim_step3(z[0], z[1], z[2], 3, "lambda i, k: (k, i)", "lambda k, j: (j, k)");
        sim_step3(z[0], z[1], z[2], 4, fuse, split);
        sim_step3(z[0], z[1], z[2], 5, "lambda i, k: (k, i)", split);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kmajor_golden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_maps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_region, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tile_address_refused, setup, teardown),
        cmocka_unit_test(test_sim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
