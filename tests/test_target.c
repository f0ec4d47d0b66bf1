/* test_target.c: the GPU target contract (minitir/target.h): the thread
 * axis table and its lookups, the per-arch limits and where they flow
 * (lowering's options, codegen's arch check, the simulator's limits, the
 * runtime's driver attributes), and the one launch check of lowered
 * kernels (tir_launch_check, tir_launch_eval_extent) with a negative test
 * per numbered precondition; then the one launch-time check
 * (tir_launch_plan_eval) on loop bounds and guards that name loop
 * variables: triangles, tails and guards refused where an int32 (or int8)
 * value passes its dtype and run right below that, the module and the
 * simulator with one message, and random bounds against enumeration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/sim.h"
#include "minitir/target.h"
#include "fuzz_xorshift.h"

static const tir_prim_func *parse(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    tir_status st = tir_parse_func(ctx, text, strlen(text), &f);
    if (st != TIR_OK) fprintf(stderr, "parse error: %s\n", tir_ctx_error(ctx));
    assert_int_equal(st, TIR_OK);
    return f;
}

/* ---------------------------------------------------------- thread axes */

static void test_thread_axes(void **state) {
    (void)state;
    int nlaunch = 0;
    for (int a = 0; a < TIR_THREAD_AXIS_COUNT; a++) {
        const char *name = tir_thread_axis_name(a);
        assert_int_equal(tir_thread_axis_lookup(name), a);
        int kind = tir_thread_axis_kind(a), dim = tir_thread_axis_dim(a);
        assert_true(dim >= 0 && dim <= 2);
        assert_int_equal(name[strlen(name) - 1], "xyz"[dim]);
        const char *prefix = kind == TIR_AXIS_KIND_BLOCK    ? "blockIdx."
                             : kind == TIR_AXIS_KIND_THREAD ? "threadIdx."
                                                            : "vthread.";
        assert_int_equal(strncmp(name, prefix, strlen(prefix)), 0);
        /* launch axes come first: grid, then block */
        bool launch = kind != TIR_AXIS_KIND_VTHREAD;
        /* the message lists name every tag once, the launch list only
           launch axes */
        char spaced[64];
        snprintf(spaced, sizeof spaced, " %s", name);
        assert_non_null(strstr(tir_thread_axis_tags(false), spaced));
        assert_true((strstr(tir_thread_axis_tags(true), spaced) != NULL) == launch);
        assert_int_equal(tir_launch_axis(name), launch ? a : -1);
        if (launch) {
            assert_int_equal(a, nlaunch);
            nlaunch++;
        }
    }
    assert_int_equal(nlaunch, TIR_NLAUNCH_AXES);
    assert_int_equal(tir_launch_axis("blockIdx.x"), TIR_AXIS_BLOCK_X);
    assert_int_equal(tir_launch_axis("threadIdx.x"), TIR_AXIS_THREAD_X);
    assert_int_equal(tir_thread_axis_lookup("threadIdx.w"), -1);
    assert_int_equal(tir_thread_axis_lookup("threadIdx"), -1);
    assert_int_equal(tir_thread_axis_lookup(NULL), -1);
    assert_int_equal(tir_launch_axis(NULL), -1);
    assert_string_equal(tir_thread_axis_name(-1), "?");
    assert_string_equal(tir_thread_axis_name(TIR_THREAD_AXIS_COUNT), "?");
    assert_int_equal(tir_thread_axis_kind(TIR_THREAD_AXIS_COUNT), -1);
    assert_int_equal(tir_thread_axis_dim(-1), -1);
}

/* The parser and tir_sched_bind accept exactly the table's tags. */
static void test_axes_parse(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const char *tags[] = {"blockIdx.y", "threadIdx.z", "vthread.x", "threadIdx.w", "warp.x"};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "@T.prim_func\n"
                 "def f(A: T.Buffer((4,), \"float32\")):\n"
                 "    for i in T.thread_binding(0, 4, thread=\"%s\"):\n"
                 "        A[i] = T.float32(1)\n",
                 tags[i]);
        const tir_prim_func *f = NULL;
        tir_status st = tir_parse_func(ctx, text, strlen(text), &f);
        assert_int_equal(st == TIR_OK, tir_thread_axis_lookup(tags[i]) >= 0);
    }
    tir_ctx_destroy(ctx);
}

/* -------------------------------------------------------------- targets */

static void test_targets(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    assert_true(tir_target_count() >= 3);
    char list[256];
    tir_target_list(list, sizeof list);
    for (int i = 0; i < tir_target_count(); i++) {
        const tir_target *t = tir_target_at(i);
        assert_ptr_equal(tir_target_find(t->arch), t);
        assert_non_null(strstr(list, t->arch));
        /* codegen accepts exactly the targets */
        assert_int_equal(tir_codegen_check_arch(ctx, t->arch), TIR_OK);
        const tir_target_limits *l = &t->limits;
        assert_true(l->max_threads_per_block > 0);
        for (int d = 0; d < 3; d++) {
            assert_true(l->max_block_dim[d] > 0 && l->max_block_dim[d] <= l->max_threads_per_block);
            assert_true(l->max_grid_dim[d] > 0);
        }
        assert_true(l->max_shared_static > 0 && l->max_shared_dynamic >= l->max_shared_static);
        assert_true(l->max_vector_bytes >= 4 && l->warp_size == 32);
    }
    assert_null(tir_target_at(-1));
    assert_null(tir_target_at(tir_target_count()));
    assert_null(tir_target_find("sm_70"));
    assert_null(tir_target_find(NULL));
    assert_int_equal(tir_codegen_check_arch(ctx, "sm_70"), TIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tir_ctx_error(ctx), list));
    /* sm_80, sm_90 and sm_90a; the default is sm_90 */
    const tir_target *a = tir_target_find("sm_80"), *h = tir_target_find("sm_90"),
                     *ha = tir_target_find("sm_90a");
    assert_non_null(a);
    assert_non_null(h);
    assert_non_null(ha);
    assert_ptr_equal(tir_target_default(), h);
    assert_true(h->limits.max_shared_dynamic > a->limits.max_shared_dynamic);
    assert_string_not_equal(ha->ptx_features, h->ptx_features);
    /* a truncated list stays terminated */
    char small[8];
    tir_target_list(small, sizeof small);
    assert_true(strlen(small) < sizeof small);
    tir_ctx_destroy(ctx);
}

static void test_lower_opts_from_target(void **state) {
    (void)state;
    tir_lower_opts o;
    tir_lower_opts_init(&o);
    const tir_target_limits *l = &tir_target_default()->limits;
    assert_int_equal(o.max_threads_per_block, l->max_threads_per_block);
    for (int d = 0; d < 3; d++) assert_int_equal(o.max_thread_extent[d], l->max_block_dim[d]);
    /* lowering accepts shared memory up to the opt-in maximum (codegen puts
     * a kernel past the static 48 KiB in dynamic shared memory) */
    assert_int_equal(o.max_shared_bytes, l->max_shared_dynamic);
    assert_true(o.max_shared_bytes > l->max_shared_static);
    assert_int_equal(o.max_local_bytes, l->max_local_bytes);
    tir_target_limits small = *l;
    small.max_threads_per_block = 128;
    small.max_shared_static = 1000;
    small.max_shared_dynamic = 3000;
    tir_lower_opts_init_target(&o, &small);
    assert_int_equal(o.max_threads_per_block, 128);
    assert_int_equal(o.max_shared_bytes, 3000);
    assert_null(o.stop_after);
}

/* The runtime's limits: the arch's target, overridden by the driver. */
static void test_limits_from_props(void **state) {
    (void)state;
    tir_rt_props p;
    memset(&p, 0, sizeof p);
    snprintf(p.arch, sizeof p.arch, "sm_80");
    tir_target_limits l;
    tir_rt_limits_from_props(&p, &l);
    assert_memory_equal(&l, &tir_target_find("sm_80")->limits, sizeof l);
    p.max_threads_per_block = 512;
    p.max_block_dim[2] = 32;
    p.max_grid_dim[1] = 1000;
    p.smem_per_block = 40000;
    p.smem_per_block_optin = 100000;
    p.max_regs_per_block = 32768;
    p.warp_size = 32;
    tir_rt_limits_from_props(&p, &l);
    assert_int_equal(l.max_threads_per_block, 512);
    assert_int_equal(l.max_block_dim[2], 32);
    assert_int_equal(l.max_block_dim[0], tir_target_find("sm_80")->limits.max_block_dim[0]);
    assert_int_equal(l.max_grid_dim[1], 1000);
    assert_int_equal(l.max_shared_static, 40000);
    assert_int_equal(l.max_shared_dynamic, 100000);
    assert_int_equal(l.max_registers_per_block, 32768);
    snprintf(p.arch, sizeof p.arch, "sm_120");
    memset(&p.max_threads_per_block, 0, sizeof p.max_threads_per_block);
    tir_rt_limits_from_props(&p, &l);
    assert_int_equal(l.max_threads_per_block, tir_target_default()->limits.max_threads_per_block);
    assert_int_equal(l.max_shared_dynamic, 100000);
}

/* --------------------------------------------------------- launch check */

static const char *k_ok =
    "@T.prim_func\n"
    "def ok(A: T.Buffer((4096,), \"float32\"), n: T.int32):\n"
    "    for bx in T.thread_binding(0, (n + 63) // 64, thread=\"blockIdx.x\"):\n"
    "        for ty in T.thread_binding(0, 2, thread=\"threadIdx.y\"):\n"
    "            for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "                A[bx * 64 + ty * 32 + tx] = T.float32(1)\n"
    "    for bx2 in T.thread_binding(0, (n + 63) // 64, thread=\"blockIdx.x\"):\n"
    "        for tx2 in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            A[bx2] = T.float32(2)\n";

static void test_launch_ok(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = parse(ctx, k_ok);
    tir_launch l;
    assert_int_equal(tir_launch_check(ctx, f, NULL, &l), TIR_OK);
    assert_non_null(l.extent[TIR_AXIS_BLOCK_X]);
    assert_null(l.extent[TIR_AXIS_BLOCK_Y]);
    assert_null(l.extent[TIR_AXIS_THREAD_Z]);
    assert_string_equal(l.loop[TIR_AXIS_THREAD_X]->var->name, "tx");
    int64_t v;
    assert_true(tir_expr_const_int(l.extent[TIR_AXIS_THREAD_Y], &v) && v == 2);
    const tir_var *n = f->params[1];
    int64_t val = 130;
    const char *why = NULL;
    assert_true(tir_launch_eval_extent(l.extent[TIR_AXIS_BLOCK_X], 1, &n, &val, &v, &why));
    assert_int_equal(v, 3);
    /* the simulator and tir_sim_launch_dims agree */
    float a[4096];
    tir_arg args[2] = {{a, 0}, {NULL, 130}};
    int64_t grid[3], block[3];
    assert_int_equal(tir_sim_launch_dims(ctx, f, 2, args, grid, block), TIR_OK);
    assert_int_equal(grid[0], 3);
    assert_int_equal(block[0], 32);
    assert_int_equal(block[1], 2);
    assert_int_equal(block[2], 1);
    /* n = 0: an empty tensor.  Every store lies under blockIdx.x, so 0
     * blocks is the sequential meaning (nothing runs), not an error */
    assert_int_equal(l.empty_ok, 1u << TIR_AXIS_BLOCK_X);
    args[1].scalar = 0;
    assert_int_equal(tir_sim_launch_dims(ctx, f, 2, args, grid, block), TIR_OK);
    assert_int_equal(grid[0], 0);
    args[1].scalar = -63; /* (n + 63) // 64 = 0 too */
    assert_int_equal(tir_sim_launch_dims(ctx, f, 2, args, grid, block), TIR_OK);
    args[1].scalar = -65; /* -1 blocks */
    assert_int_equal(tir_sim_launch_dims(ctx, f, 2, args, grid, block), TIR_ERR_SIM_LAUNCH);
    assert_non_null(strstr(tir_ctx_error(ctx), "extent -1"));
    /* not a parameter, division by zero, overflow */
    assert_false(tir_launch_eval_extent(l.extent[TIR_AXIS_BLOCK_X], 0, NULL, NULL, &v, &why));
    assert_non_null(strstr(why, "not a parameter"));
    tir_ctx *c2 = tir_ctx_create();
    const tir_var *xv = tir_var_new(c2, "x", TIR_I64);
    const tir_expr *x = &xv->base;
    int64_t zero = 0, big = INT64_MAX;
    assert_false(tir_launch_eval_extent(tir_floordiv(c2, tir_int(c2, TIR_I64, 5), x), 1, &xv, &zero, &v,
                                        &why));
    assert_non_null(strstr(why, "division by zero"));
    assert_false(tir_launch_eval_extent(tir_add(c2, x, tir_int(c2, TIR_I64, 1)), 1, &xv, &big, &v, &why));
    assert_non_null(strstr(why, "overflow"));
    tir_ctx_destroy(c2);
    tir_ctx_destroy(ctx);
}

/* A store outside the blockIdx.y loop: the sequential meaning runs it
 * once per bx whatever n is, so 0 blocks along y (which would skip it) is
 * refused, while x's extent may not be 0 (it is constant here). */
static const char *k_outside =
    "@T.prim_func\n"
    "def outside(A: T.Buffer((4096,), \"float32\"), n: T.int32):\n"
    "    for bx in T.thread_binding(0, 4, thread=\"blockIdx.x\"):\n"
    "        for by in T.thread_binding(0, n, thread=\"blockIdx.y\"):\n"
    "            for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "                A[by * 128 + bx * 32 + tx] = T.float32(1)\n"
    "        for tx2 in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            A[4000 + bx * 32 + tx2] = T.float32(2)\n";

static void test_launch_empty(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = parse(ctx, k_outside);
    tir_launch l;
    assert_int_equal(tir_launch_check(ctx, f, NULL, &l), TIR_OK);
    assert_int_equal(l.empty_ok, 1u << TIR_AXIS_BLOCK_X);
    float a[4096];
    tir_arg args[2] = {{a, 0}, {NULL, 3}};
    int64_t grid[3], block[3];
    assert_int_equal(tir_sim_launch_dims(ctx, f, 2, args, grid, block), TIR_OK);
    assert_int_equal(grid[1], 3);
    args[1].scalar = 0;
    assert_int_equal(tir_sim_launch_dims(ctx, f, 2, args, grid, block), TIR_ERR_SIM_LAUNCH);
    assert_non_null(strstr(tir_ctx_error(ctx), "a statement lies outside it"));
    tir_ctx_destroy(ctx);
}

/* One kernel per numbered precondition of tir_launch_check. */
static void test_launch_errors(void **state) {
    (void)state;
    static const struct {
        const char *loops; /* loop headers, each indented one more level */
        const char *want;
    } cases[] = {
        /* 1. not a launch axis */
        {"for v in T.thread_binding(0, 4, thread=\"vthread.x\"):", "unknown thread tag 'vthread.x'"},
        /* 2. nested in its own axis */
        {"for a in T.thread_binding(0, 4, thread=\"threadIdx.x\"):\n"
         "        for b in T.thread_binding(0, 4, thread=\"threadIdx.x\"):",
         "inside a loop bound to the same axis"},
        /* 3. does not start at 0 */
        {"for a in T.thread_binding(1, 4, thread=\"threadIdx.x\"):", "must start at 0"},
        /* 4. block extent not constant, or over the axis limit */
        {"for a in T.thread_binding(0, n, thread=\"threadIdx.x\"):", "positive constant extent"},
        {"for a in T.thread_binding(0, 128, thread=\"threadIdx.z\"):", "more than the limit 64"},
        /* 5. grid extent not integer arithmetic of parameters, or below 1 */
        {"for a in T.thread_binding(0, T.max(n, 1) * T.Select(n > 0, 1, 2), thread=\"blockIdx.x\"):",
         "Select"},
        {"for a in T.thread_binding(0, 0, thread=\"blockIdx.y\"):", "(must be positive)"},
        /* 6. one axis, two extents */
        {"for a in T.thread_binding(0, 4, thread=\"threadIdx.x\"):\n"
         "        A[a] = T.float32(0)\n"
         "    for b in T.thread_binding(0, 8, thread=\"threadIdx.x\"):",
         "threadIdx.x loops with different extents (4 and 8)"},
        /* 7. threads per block */
        {"for a in T.thread_binding(0, 64, thread=\"threadIdx.y\"):\n"
         "        for b in T.thread_binding(0, 32, thread=\"threadIdx.x\"):",
         "2048 threads per block (at most 1024)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tir_ctx *ctx = tir_ctx_create();
        char text[1024];
        /* the body goes one level under the last loop header */
        const char *last = strrchr(cases[i].loops, '\n');
        int indent = 4;
        if (last) {
            indent = 0;
            for (const char *p = last + 1; *p == ' '; p++) indent++;
        }
        snprintf(text, sizeof text,
                 "@T.prim_func\n"
                 "def k(A: T.Buffer((64,), \"float32\"), n: T.int32):\n"
                 "    %s\n"
                 "%*sA[0] = T.float32(1)\n",
                 cases[i].loops, indent + 4, "");
        const tir_prim_func *f = parse(ctx, text);
        tir_launch l;
        assert_int_equal(tir_launch_check(ctx, f, NULL, &l), TIR_ERR_UNSUPPORTED);
        if (!strstr(tir_ctx_error(ctx), cases[i].want))
            fail_msg("case %zu: want \"%s\" in:\n%s", i, cases[i].want, tir_ctx_error(ctx));
        /* codegen and the simulator refuse it through the same check */
        const tir_module *m = NULL;
        assert_int_equal(tir_codegen(ctx, f, NULL, &m), TIR_ERR_UNSUPPORTED);
        assert_non_null(strstr(tir_ctx_error(ctx), cases[i].want));
        float a[64];
        tir_arg args[2] = {{a, 0}, {NULL, 4}};
        assert_int_equal(tir_sim_run(ctx, f, 2, args, NULL, NULL), TIR_ERR_SIM_LAUNCH);
        assert_non_null(strstr(tir_ctx_error(ctx), cases[i].want));
        tir_ctx_destroy(ctx);
    }
}

/* ------------------------------------------------ loop bounds at launch */

/* Kernels whose loop bounds or guards name loop variables as well as the
 * parameter n (tir_launch_plan_eval).  Each has an oracle: the launch at
 * n is refused by the grid extent (1), refused by the case's own bound
 * (2: some value the kernel computes in int32 passes it) or accepted (0);
 * and a reference for what it computes. */
typedef struct lb_case {
    const char *name, *text;
    const char *want; /* in the refusal of kind 2 */
    int64_t max;      /* the largest value of n's dtype */
    int (*expect)(int64_t n, int64_t max);
    int64_t (*na)(int64_t n), (*nb)(int64_t n); /* the elements of A and B */
    float (*ref)(int64_t n, const float *a, int64_t j); /* B[j] */
} lb_case;

static int64_t len_n(int64_t n) { return n; }
static int64_t len_tiles3(int64_t n) { return (n + 2) / 3; }

static float sum(const float *a, int64_t lo, int64_t hi) {
    float s = 0;
    for (int64_t k = lo; k < hi; k++) s += a[k];
    return s;
}

/* A triangular loop one past the row, cut at n: `range(T.min(i + 2, n))`,
 * i over n blocks.  The grid n fits up to INT32_MAX, where i + 2 reaches
 * 2^31. */
static int tri2_expect(int64_t n, int64_t max) { return n > max ? 1 : n - 1 + 2 > max ? 2 : 0; }
static float tri2_ref(int64_t n, const float *a, int64_t j) {
    return sum(a, 0, j + 2 < n ? j + 2 : n);
}

/* A tail with a halo: tile bx of 3 sums its 5-wide window, cut at n.  The
 * tile's end bx * 3 + 5 passes INT32_MAX for the last tile where
 * (n + 2) // 3 still fits (n within 3 of it). */
static int halo_expect(int64_t n, int64_t max) {
    if (n + 2 > max) return 1;
    return 3 * ((n + 2) / 3 - 1) + 5 > max ? 2 : 0;
}
static float halo_ref(int64_t n, const float *a, int64_t j) {
    return sum(a, 3 * j, 3 * j + 5 < n ? 3 * j + 5 : n);
}

/* A prefix sum with the k loop split by 3 and guarded: the loop bound
 * i // 3 + 1 fits, but the guard's k_0 * 3 + k_1 reaches 2^31 in the last
 * row at n = INT32_MAX (wrapped, it passes `<= i`). */
static int pre_expect(int64_t n, int64_t max) {
    return n > max ? 1 : n > 0 && 3 * ((n - 1) / 3) + 2 > max ? 2 : 0;
}
static float pre_ref(int64_t n, const float *a, int64_t j) { return (void)n, sum(a, 0, j + 1); }

/* A suffix sum `range(i, n)`: start i, extent n - i; the end both
 * emitters compute, i + (n - i), is n (simplified before it is bounded:
 * the sum of the two ranges, 2n - 1, would refuse n past 2^30). */
static int never_expect(int64_t n, int64_t max) { return n > max ? 1 : 0; }
static float suf_ref(int64_t n, const float *a, int64_t j) { return sum(a, j, n); }

/* A tail `range(T.min(4, n - bx * 4))`: bounded by the grid's check. */
static int tail_expect(int64_t n, int64_t max) { return n + 3 > max ? 1 : 0; }
static float tail_ref(int64_t n, const float *a, int64_t j) { return (void)n, a[j] * 2; }

static const lb_case lb_cases[] = {
    {"tri2",
     "@T.prim_func\n"
     "def tri2(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
     "    for i in T.thread_binding(0, n, thread=\"blockIdx.x\"):\n"
     "        B[i] = T.float32(0)\n"
     "        for k in T.serial(T.min(i + 2, n)):\n"
     "            B[i] = B[i] + A[k]\n",
     "launch of 'tri2': the loop bound T.min(i + 2, n) (the extent of the loop over k) has an "
     "overflow of its dtype at these arguments: i + 2 (int32) reaches [2, 2147483648] with i in "
     "[0, 2147483646]",
     INT32_MAX, tri2_expect, len_n, len_n, tri2_ref},
    {"halo",
     "@T.prim_func\n"
     "def halo(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
     "    for bx in T.thread_binding(0, (n + 2) // 3, thread=\"blockIdx.x\"):\n"
     "        B[bx] = T.float32(0)\n"
     "        for x in T.serial(T.min(bx * 3 + 5, n) - bx * 3):\n"
     "            B[bx] = B[bx] + A[bx * 3 + x]\n",
     "(the extent of the loop over x) has an overflow of its dtype at these arguments: bx * 3 + 5 "
     "(int32) reaches [5, 2147483648] with bx in [0, 715827881]",
     INT32_MAX, halo_expect, len_n, len_tiles3, halo_ref},
    {"pre",
     "@T.prim_func\n"
     "def pre(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
     "    for i in T.thread_binding(0, n, thread=\"blockIdx.x\"):\n"
     "        B[i] = T.float32(0)\n"
     "        for k_0 in T.serial(i // 3 + 1):\n"
     "            for k_1 in T.serial(3):\n"
     "                if k_0 * 3 + k_1 <= i:\n"
     "                    B[i] = B[i] + A[k_0 * 3 + k_1]\n",
     "launch of 'pre': the condition k_0 * 3 + k_1 <= i has an overflow of its dtype at these "
     "arguments: k_0 * 3 + k_1 (int32) reaches [0, 2147483648] with k_0 in [0, 715827882], k_1 "
     "in [0, 2]",
     INT32_MAX, pre_expect, len_n, len_n, pre_ref},
    {"suf",
     "@T.prim_func\n"
     "def suf(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
     "    for i in T.thread_binding(0, n, thread=\"blockIdx.x\"):\n"
     "        B[i] = T.float32(0)\n"
     "        for k in T.serial(i, n):\n"
     "            B[i] = B[i] + A[k]\n",
     NULL, INT32_MAX, never_expect, len_n, len_n, suf_ref},
    {"tail",
     "@T.prim_func\n"
     "def tail(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
     "    for bx in T.thread_binding(0, (n + 3) // 4, thread=\"blockIdx.x\"):\n"
     "        for x in T.serial(T.min(4, n - bx * 4)):\n"
     "            B[bx * 4 + x] = A[bx * 4 + x] * T.float32(2)\n",
     NULL, INT32_MAX, tail_expect, len_n, len_n, tail_ref},
    /* The same in int8, where the simulator can run every block at the
     * edge.  Without the check it ran them: tri8 at n = 127 wrote B[126] =
     * 0 (i + 2 wrapped to -128, so the loop ran nothing) where the sum is
     * 127, silently; pre8 loaded A[-128] (the guard's k_0 * 3 + k_1
     * wrapped, passing `<= i`), which the simulator stops on and a GPU
     * reads. */
    {"tri8",
     "@T.prim_func\n"
     "def tri8(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int8):\n"
     "    for i in T.thread_binding(T.int8(0), n, thread=\"blockIdx.x\"):\n"
     "        B[i] = T.float32(0)\n"
     "        for k in T.serial(T.min(i + T.int8(2), n)):\n"
     "            B[i] = B[i] + A[k]\n",
     "launch of 'tri8': the loop bound T.min(i + T.int8(2), n) (the extent of the loop over k) "
     "has an overflow of its dtype at these arguments: i + T.int8(2) (int8) reaches [2, 128] with "
     "i in [0, 126]",
     INT8_MAX, tri2_expect, len_n, len_n, tri2_ref},
    {"pre8",
     "@T.prim_func\n"
     "def pre8(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int8):\n"
     "    for i in T.thread_binding(T.int8(0), n, thread=\"blockIdx.x\"):\n"
     "        B[i] = T.float32(0)\n"
     "        for k_0 in T.serial(i // T.int8(3) + T.int8(1)):\n"
     "            for k_1 in T.serial(T.int8(3)):\n"
     "                if k_0 * T.int8(3) + k_1 <= i:\n"
     "                    B[i] = B[i] + A[k_0 * T.int8(3) + k_1]\n",
     "launch of 'pre8': the condition k_0 * T.int8(3) + k_1 <= i has an overflow of its dtype at "
     "these arguments: k_0 * T.int8(3) + k_1 (int8) reaches [0, 128] with k_0 in [0, 42], k_1 in "
     "[0, 2]",
     INT8_MAX, pre_expect, len_n, len_n, pre_ref},
};

/* One size: the module (the runtime's check) and the simulator agree,
 * with the same message, and with the oracle. */
static void lb_launch(tir_ctx *ctx, const lb_case *c, const tir_prim_func *f,
                      const tir_module *m, int64_t n) {
    float a[4] = {0}, b[4] = {0}; /* not run */
    tir_arg args[3] = {{a, 0}, {b, 0}, {NULL, n}};
    int64_t grid[3], block[3];
    char msg[1024];
    tir_status sm = tir_module_launch_dims(ctx, m, 3, args, grid, block);
    snprintf(msg, sizeof msg, "%s", sm == TIR_OK ? "" : tir_ctx_error(ctx));
    tir_ctx_clear_error(ctx);
    tir_status ss = tir_sim_launch_dims(ctx, f, 3, args, grid, block);
    if ((sm == TIR_OK) != (ss == TIR_OK) || (ss != TIR_OK && strcmp(msg, tir_ctx_error(ctx))))
        fail_msg("%s, n = %lld: module \"%s\", simulator \"%s\"", c->name, (long long)n, msg,
                 ss == TIR_OK ? "" : tir_ctx_error(ctx));
    tir_ctx_clear_error(ctx);
    int want = c->expect(n, c->max);
    if ((want != 0) != (sm != TIR_OK))
        fail_msg("%s, n = %lld: %s, expected %s", c->name, (long long)n,
                 sm == TIR_OK ? "accepted" : msg, want ? "a refusal" : "a launch");
    if (want == 1 && !strstr(msg, "grid.x"))
        fail_msg("%s, n = %lld: not the grid: %s", c->name, (long long)n, msg);
    if (want == 2 && !strstr(msg, c->want))
        fail_msg("%s, n = %lld: want \"%s\" in:\n%s", c->name, (long long)n, c->want, msg);
}

/* An ordinary size in the simulator, against the reference. */
static void lb_run(tir_ctx *ctx, const lb_case *c, const tir_prim_func *f, int64_t n) {
    int64_t na = c->na(n), nb = c->nb(n);
    float *a = calloc((size_t)na + 1, sizeof *a), *b = calloc((size_t)nb + 1, sizeof *b);
    assert_true(a && b);
    for (int64_t k = 0; k < na; k++) a[k] = (float)(k % 7) - 3;
    for (int64_t j = 0; j < nb; j++) b[j] = -99;
    tir_arg args[3] = {{a, 0}, {b, 0}, {NULL, n}};
    tir_sim_opts so = {.check_uninit = true};
    if (tir_sim_run(ctx, f, 3, args, &so, NULL) != TIR_OK)
        fail_msg("%s, n = %lld: %s", c->name, (long long)n, tir_ctx_error(ctx));
    for (int64_t j = 0; j < nb; j++)
        if (b[j] != c->ref(n, a, j))
            fail_msg("%s, n = %lld: B[%lld] = %g, want %g", c->name, (long long)n, (long long)j,
                     b[j], c->ref(n, a, j));
    free(a);
    free(b);
}

static void test_launch_loop_bounds(void **state) {
    (void)state;
    static const int64_t ordinary[] = {0, 1, 2, 3, 4, 5, 37, 1000, 1000000, 100000000};
    for (size_t i = 0; i < sizeof lb_cases / sizeof lb_cases[0]; i++) {
        const lb_case *c = &lb_cases[i];
        tir_ctx *ctx = tir_ctx_create();
        const tir_prim_func *f = parse(ctx, c->text);
        const tir_module *m = NULL;
        if (tir_codegen(ctx, f, NULL, &m) != TIR_OK)
            fail_msg("%s: codegen: %s", c->name, tir_ctx_error(ctx));
        for (size_t k = 0; k < sizeof ordinary / sizeof ordinary[0]; k++)
            if (ordinary[k] <= c->max) lb_launch(ctx, c, f, m, ordinary[k]);
        for (int64_t n = c->max - 8; n <= c->max; n++) lb_launch(ctx, c, f, m, n);
        /* and it runs right: all sizes of int8 up to the edge */
        for (int64_t n = 0; n <= (c->max < 1000 ? c->max : 40); n++)
            if (!c->expect(n, c->max)) lb_run(ctx, c, f, n);
        tir_ctx_destroy(ctx);
    }
}

/* The launch-time bounds against brute force: random int8 / int32
 * arithmetic (+ - * // % truncdiv truncmod min max, casts both ways) as
 * the extent of a triangular loop j inside a blockIdx loop i over n, and
 * as a guard's operand over i and j.  At each (n, m) every value the
 * kernel computes is enumerated: where tir_launch_plan_eval accepts the
 * launch, no operation the kernel runs may pass its dtype (casts wrap by
 * definition).  A refusal where nothing passes is the ranges'
 * over-approximation, counted, not a failure.  MINITIR_FUZZ_SEED and
 * MINITIR_FUZZ_CASES (default 2,000 kernels, 8 launches each) set the
 * draws. */
typedef struct bf {
    const tir_var *i, *j, *n, *m;
    int64_t vi, vj, vn, vm;
    bool j_dep; /* j's extent names i, n or m */
    bool wrap, divzero;
    long points_dz; /* points left out for a division by 0 */
} bf;

static bool bf_fits(tir_dtype t, int64_t v) {
    int64_t h = INT64_C(1) << (t.bits - 1);
    return v >= -h && v < h;
}

/* The value of e at the point b, as the kernel computes it; b->wrap where
 * an operation that depends on the arguments (names n, m, i or, where
 * its extent does, j) passes its dtype: the others are the same at every
 * launch, which the launch does not check. */
static int64_t bf_eval(bf *b, const tir_expr *e, bool *dep) {
    *dep = false;
    if (e->kind == TIR_KIND_INT_IMM) return tir_as_tir_int_imm(e)->value;
    if (e->kind == TIR_KIND_VAR) {
        const tir_var *v = tir_as_tir_var(e);
        *dep = v != b->j || b->j_dep;
        return v == b->i ? b->vi : v == b->j ? b->vj : v == b->n ? b->vn : b->vm;
    }
    if (e->kind == TIR_KIND_CAST) {
        int64_t v = bf_eval(b, tir_as_tir_cast(e)->value, dep);
        return e->dtype.bits == 8 ? (int8_t)v : (int32_t)v;
    }
    const tir_binop *x = tir_as_tir_binop(e);
    assert_non_null(x);
    bool da, db;
    int64_t u = bf_eval(b, x->a, &da), v = bf_eval(b, x->b, &db), r = 0;
    *dep = da || db;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_ADD: r = u + v; break;
    case TIR_KIND_SUB: r = u - v; break;
    case TIR_KIND_MUL: r = u * v; break;
    case TIR_KIND_MIN: r = u < v ? u : v; break;
    case TIR_KIND_MAX: r = u > v ? u : v; break;
    default:
        if (v == 0) {
            b->divzero = true;
            return 0;
        }
        r = e->kind == TIR_KIND_DIV ? u / v : e->kind == TIR_KIND_MOD ? u % v : 0;
        if (e->kind == TIR_KIND_FLOORDIV || e->kind == TIR_KIND_FLOORMOD) {
            int64_t q = u / v, m = u % v;
            if (m != 0 && (m < 0) != (v < 0)) q--, m += v;
            r = e->kind == TIR_KIND_FLOORDIV ? q : m;
        }
    }
    if (*dep && !bf_fits(e->dtype, r)) b->wrap = true;
    return e->dtype.bits == 8 ? (int8_t)r : (int32_t)r; /* what the kernel goes on with */
}

/* A random expression of dtype int<bits> (8 or 32) over i, n, m and,
 * with_j, j: int32 ones from int8 variables cast, with constants up to
 * 8 * 10^5 so that products pass int32. */
static void bf_gen(char *out, size_t n, int bits, int depth, bool with_j) {
    static const char *ops[] = {"+", "-", "*", "//", "%"};
    static const char *fns[] = {"T.min", "T.max", "T.truncdiv", "T.truncmod"};
    const char *t = bits == 8 ? "int8" : "int32";
    char a[512], b[512];
    int k = depth <= 0 ? 0 : pick(10);
    if (k < 3) { /* an atom */
        const char *vars[] = {"i", "n", "m", "j"};
        int v = pick(with_j ? 5 : 4);
        if (v == 3 && !with_j) v = 0;
        if (v < 4 && pick(3)) {
            if (bits == 8)
                snprintf(out, n, "%s", vars[v]);
            else
                snprintf(out, n, "T.Cast(\"int32\", %s)", vars[v]);
        } else {
            int c = pick(4) ? pick(9) - 3 : pick(256) - 128;
            if (bits == 8)
                snprintf(out, n, "T.int8(%d)", c);
            else
                snprintf(out, n, "%d", c * (pick(2) ? 1 : 100000));
        }
        return;
    }
    if (k == 3) { /* a cast from the other width */
        bf_gen(a, sizeof a, bits == 8 ? 32 : 8, depth - 1, with_j);
        snprintf(out, n, "T.Cast(\"%s\", %s)", t, a);
        return;
    }
    bf_gen(a, sizeof a, bits, depth - 1, with_j);
    bf_gen(b, sizeof b, bits, depth - 1, with_j);
    if (k < 8)
        snprintf(out, n, "(%s %s %s)", a, ops[pick(5)], b);
    else
        snprintf(out, n, "%s(%s, %s)", fns[pick(4)], a, b);
}

/* The loops and the guard of the brute-force kernel. */
typedef struct bf_find {
    const tir_for *i, *j;
    const tir_binop *cond;
} bf_find;

static bool bf_pre(tir_visitor *v, const tir_node *n) {
    bf_find *f = v->user;
    if (n->kind == TIR_KIND_FOR) {
        const tir_for *l = (const tir_for *)n;
        *(l->thread_tag ? &f->i : &f->j) = l;
    }
    if (n->kind == TIR_KIND_IF) f->cond = tir_as_tir_binop(((const tir_if *)n)->cond);
    return !tir_kind_is_expr((tir_kind)n->kind);
}

/* One evaluation at the point b; a point where something divides by 0 is
 * left out (undefined there: not a wrap), and counted. */
static bool bf_point(bf *b, const tir_expr *e, int64_t *v, bool *dep) {
    bool wrap = b->wrap, dz = b->divzero;
    b->divzero = false;
    *v = bf_eval(b, e, dep);
    if (!b->divzero) {
        b->divzero = dz;
        return true;
    }
    b->wrap = wrap;
    b->points_dz++;
    return false;
}

/* Every value the kernel computes at (n, m): b->wrap where one passes its
 * dtype. */
static void bf_enumerate(bf *b, const bf_find *f) {
    b->wrap = b->divzero = false;
    bool dep;
    int64_t ext, v;
    for (b->vi = 0; b->vi < b->vn; b->vi++) {
        if (!bf_point(b, f->j->extent, &ext, &b->j_dep)) continue;
        for (b->vj = 0; b->vj < ext; b->vj++) bf_point(b, f->cond->a, &v, &dep);
    }
}

static void test_launch_bounds_brute(void **state) {
    (void)state;
    const char *sd = getenv("MINITIR_FUZZ_SEED");
    uint64_t seed = sd ? strtoull(sd, NULL, 10) : 20261207;
    static const int64_t ns[] = {0, 1, 2, 7, 31, 100, 126, 127};
    long runs = 0, accepted = 0, over = 0, zero = 0, divzero = 0;
    const char *nc = getenv("MINITIR_FUZZ_CASES");
    long cases = nc ? atol(nc) : 2000;
    for (long c = 0; c < cases; c++) {
        fuzz_seed_case(seed, c);
        tir_ctx *ctx = tir_ctx_create();
        char ext[2048], op[2048], text[8192];
        int bits = pick(2) ? 8 : 32;
        bf_gen(ext, sizeof ext, 8, 1 + pick(3), false);
        bf_gen(op, sizeof op, bits, 1 + pick(3), true);
        snprintf(text, sizeof text,
                 "@T.prim_func\n"
                 "def bf(B: T.Buffer((1,), \"int8\"), n: T.int8, m: T.int8):\n"
                 "    for i in T.thread_binding(T.int8(0), n, thread=\"blockIdx.x\"):\n"
                 "        for j in T.serial(%s):\n"
                 "            if %s < %s:\n"
                 "                B[0] = T.int8(1)\n",
                 ext, op, bits == 8 ? "m" : "T.Cast(\"int32\", m)");
        const tir_prim_func *f = parse(ctx, text);
        bf_find fd = {0};
        tir_visitor vis = {bf_pre, NULL, &fd};
        tir_visit(&vis, f->body);
        assert_true(fd.i && fd.j && fd.cond);
        tir_launch l;
        const tir_launch_plan *plan;
        assert_int_equal(tir_launch_check(ctx, f, NULL, &l), TIR_OK);
        assert_int_equal(tir_launch_plan_build(ctx, f, &l, &plan), TIR_OK);
        bf b = {.i = fd.i->var, .j = fd.j->var, .n = f->params[1], .m = f->params[2]};
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            b.vn = ns[k];
            b.vm = pick(256) - 128;
            const tir_var *vars[2] = {b.n, b.m};
            int64_t values[2] = {b.vn, b.vm}, dims[TIR_NLAUNCH_AXES];
            tir_status st = tir_launch_plan_eval(ctx, plan, 2, vars, values, dims);
            bf_enumerate(&b, &fd);
            runs++;
            if (st == TIR_OK && b.wrap)
                fail_msg("seed %llu case %ld, n = %lld, m = %lld: accepted, but a value "
                         "wraps:\n%s",
                         (unsigned long long)seed, c, (long long)b.vn, (long long)b.vm, text);
            accepted += st == TIR_OK;
            if (st != TIR_OK && !b.wrap)
                *(strstr(tir_ctx_error(ctx), "division by zero") ? &zero : &over) += 1;
            tir_ctx_clear_error(ctx);
        }
        divzero += b.points_dz;
        tir_ctx_destroy(ctx);
    }
    /* the ranges must not refuse most launches that do not wrap */
    fprintf(stderr,
            "# brute force: %ld launches, %ld accepted, %ld refused for a divisor of 0, %ld "
            "refused without a wrap; %ld points left out for a division by zero\n",
            runs, accepted, zero, over, divzero);
    assert_true(accepted > runs / 4);
}

/* The limits given decide: a smaller target refuses what sm_90 takes, in
 * the launch check and in the simulator. */
static void test_launch_limits(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = parse(ctx, k_ok);
    tir_target_limits small = tir_target_default()->limits;
    small.max_threads_per_block = 32;
    tir_launch l;
    assert_int_equal(tir_launch_check(ctx, f, &small, &l), TIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tir_ctx_error(ctx), "64 threads per block (at most 32)"));
    float a[4096] = {0};
    tir_arg args[2] = {{a, 0}, {NULL, 64}};
    tir_sim_opts o = {.limits = &small};
    assert_int_equal(tir_sim_run(ctx, f, 2, args, &o, NULL), TIR_ERR_SIM_LAUNCH);
    o.limits = NULL;
    assert_int_equal(tir_sim_run(ctx, f, 2, args, &o, NULL), TIR_OK);
    small = tir_target_default()->limits;
    small.max_block_dim[1] = 1;
    assert_int_equal(tir_launch_check(ctx, f, &small, &l), TIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tir_ctx_error(ctx), "threadIdx.y"));
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_axes),
        cmocka_unit_test(test_axes_parse),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_lower_opts_from_target),
        cmocka_unit_test(test_limits_from_props),
        cmocka_unit_test(test_launch_ok),
        cmocka_unit_test(test_launch_empty),
        cmocka_unit_test(test_launch_errors),
        cmocka_unit_test(test_launch_limits),
        cmocka_unit_test(test_launch_loop_bounds),
        cmocka_unit_test(test_launch_bounds_brute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
