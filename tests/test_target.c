/* test_target.c: the GPU target contract (minitir/target.h): the thread
 * axis table and its lookups, the per-arch limits and where they flow
 * (lowering's options, codegen's arch check, the simulator's limits, the
 * runtime's driver attributes), and the one launch check of lowered
 * kernels (tir_launch_check, tir_launch_eval_extent) with a negative test
 * per numbered precondition.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/sim.h"
#include "minitir/target.h"

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
