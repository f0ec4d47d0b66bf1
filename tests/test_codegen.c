/* Tests of tir_codegen: lowered kernels built by hand (cg_kernels.c) must
 * give PTX with the expected instructions, which ptxas (when installed)
 * must accept for sm_80 and sm_90; constructs outside the lowered form must
 * give clear errors.  Register and spill counts go to the test log.
 * Occupancy controls (root-block annotations launch_bounds_max_threads,
 * launch_bounds_min_blocks_per_sm, max_registers) on a scheduled matmul
 * must reach the PTX as .maxntid / .minnctapersm / .maxnreg, survive the
 * trace round trip, and bad values must be refused by codegen; so must
 * loop_strength_reduction's and direct_unroll's, whose kernels differ from
 * those without them (test_direct_unroll: the direct emitter's choice).
 * The values the kernels compute are checked on the host in
 * test_codegen_host.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cg_kernels.h"
#include "ptxas_check.h"
#include "minitir/codegen.h"
#include "minitir/lower.h"
#include "sched_check.h"

/* The pipeline every test compiles with: main runs all tests once per
 * pipeline, so the fast and short ones must give the forms they check too. */
static tir_cg_pipeline test_pipeline = TIR_CG_PIPELINE_OPT;

static const tir_module *compile_arch(tir_ctx *ctx, const tir_prim_func *f, const char *arch,
                                      bool contract) {
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.arch = arch;
    o.fma_contract = contract;
    o.pipeline = test_pipeline;
    o.keep_llvm_ir = true;
    const tir_module *m = NULL;
    tir_status s = tir_codegen(ctx, f, &o, &m);
    if (s != TIR_OK) fail_msg("codegen of %s failed: %s", f->name, tir_ctx_error(ctx));
    assert_non_null(m);
    assert_string_equal(m->arch, arch);
    return m;
}

/* Compiles f for sm_80 and sm_90, assembles both, returns the sm_90 one. */
static const tir_module *compile(tir_ctx *ctx, const tir_prim_func *f) {
    ptxas_info pi;
    ptxas_assemble(compile_arch(ctx, f, "sm_80", true), &pi);
    const tir_module *m = compile_arch(ctx, f, "sm_90", true);
    ptxas_assemble(m, &pi);
    return m;
}

/* compile() of the text's function after tir_lower. */
static const tir_module *compile_lowered(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f, *k;
    assert_int_equal(tir_parse_func(ctx, text, strlen(text), &f), TIR_OK);
    assert_int_equal(tir_lower(ctx, f, NULL, &k), TIR_OK);
    return compile(ctx, k);
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

#define assert_has(m, s)                                                                           \
    do {                                                                                           \
        if (!strstr((m)->ptx, (s)))                                                                \
            fail_msg("PTX of %s lacks \"%s\":\n%s", (m)->kernel_name, (s), (m)->ptx);              \
    } while (0)
#define assert_lacks(m, s)                                                                         \
    do {                                                                                           \
        if (strstr((m)->ptx, (s)))                                                                 \
            fail_msg("PTX of %s has \"%s\":\n%s", (m)->kernel_name, (s), (m)->ptx);                \
    } while (0)

/* ---------------------------------------------------------------- kernels */

static void test_vector_add(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *m = compile(ctx, ck_vector_add(ctx, 1 << 20));
    assert_string_equal(m->kernel_name, "vector_add");
    assert_has(m, ".visible .entry vector_add(");
    assert_has(m, "%ctaid.x");
    assert_has(m, "%tid.x");
    assert_has(m, ".maxntid 256, 1, 1");
    /* A and B are never written: read-only cache loads. */
    assert_has(m, "ld.global.nc.f32");
    assert_has(m, "st.global.f32");
    assert_has(m, "add.rn.f32");
    assert_true(m->grid[0].is_const && m->grid[0].value == 4096);
    assert_true(m->block[0].is_const && m->block[0].value == 256);
    for (int i = 1; i < 3; i++) {
        assert_true(m->grid[i].is_const && m->grid[i].value == 1);
        assert_true(m->block[i].is_const && m->block[i].value == 1);
    }
    assert_int_equal(m->shared_bytes, 0);
    assert_true(m->compile_ms > 0);
    assert_int_equal(m->nparams, 3);
    static const char *const names[3] = {"A", "B", "C"};
    for (int i = 0; i < 3; i++) {
        assert_string_equal(m->params[i].name, names[i]);
        assert_int_equal(m->params[i].kind, TIR_PARAM_BUFFER);
        assert_true(tir_dtype_eq(m->params[i].dtype, TIR_F32));
        assert_int_equal(m->params[i].read_only, i < 2);
    }
    assert_non_null(strstr(m->llvm_ir, "define ptx_kernel void @vector_add"));
    assert_int_equal(strlen(m->ptx), m->ptx_len);
    tir_ctx_destroy(ctx);
}

static void test_symbolic_grid(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *m = compile(ctx, ck_vector_add_sym(ctx));
    assert_int_equal(m->nparams, 4);
    assert_int_equal(m->params[3].kind, TIR_PARAM_SCALAR);
    assert_string_equal(m->params[3].name, "n");
    assert_true(tir_dtype_eq(m->params[3].dtype, TIR_I32));
    assert_has(m, ".param .u32 vector_add_sym_param_3");
    assert_has(m, "setp."); /* the i < n guard */
    assert_false(m->grid[0].is_const);
    assert_true(m->block[0].is_const && m->block[0].value == 256);

    tir_arg args[4] = {{0}};
    int64_t grid[3], block[3];
    args[3].scalar = 1000;
    assert_int_equal(tir_module_launch_dims(ctx, m, 4, args, grid, block), TIR_OK);
    assert_int_equal(grid[0], 4);
    assert_int_equal(grid[1], 1);
    assert_int_equal(grid[2], 1);
    assert_int_equal(block[0], 256);
    assert_int_equal(block[1], 1);
    args[3].scalar = 1024;
    assert_int_equal(tir_module_launch_dims(ctx, m, 4, args, grid, block), TIR_OK);
    assert_int_equal(grid[0], 4);
    args[3].scalar = 1025;
    assert_int_equal(tir_module_launch_dims(ctx, m, 4, args, grid, block), TIR_OK);
    assert_int_equal(grid[0], 5);
    /* n = 0: every statement is under bx, so 0 blocks means an empty
     * tensor (the runtime launches nothing), not an error */
    assert_true(m->grid[0].zero_ok);
    assert_false(m->grid[1].zero_ok);
    args[3].scalar = 0;
    assert_int_equal(tir_module_launch_dims(ctx, m, 4, args, grid, block), TIR_OK);
    assert_int_equal(grid[0], 0);
    args[3].scalar = -300; /* -1 blocks: an error, not a launch */
    assert_int_equal(tir_module_launch_dims(ctx, m, 4, args, grid, block), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "has extent -1 (grid.x must be positive)"));
    assert_int_equal(tir_module_launch_dims(ctx, m, 3, args, grid, block), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "too few arguments"));
    tir_ctx_destroy(ctx);
}

static void test_matmul_naive(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = ck_matmul_naive(ctx, 256, 256, 256);
    const tir_module *m = compile(ctx, f);
    assert_has(m, "%tid.y");
    assert_has(m, "%ctaid.y");
    assert_has(m, ".maxntid 16, 16, 1");
    assert_true(m->grid[0].value == 16 && m->grid[1].value == 16);
    assert_true(m->block[0].value == 16 && m->block[1].value == 16);
    /* Contraction fuses a*b+acc; the one-element accumulator is a register. */
    assert_has(m, "fma.rn.f32");
    assert_lacks(m, ".local");
    /* Without contraction: separately rounded multiply and add. */
    const tir_module *m2 = compile_arch(ctx, f, "sm_90", false);
    assert_lacks(m2, "fma.rn.f32");
    assert_has(m2, "mul.rn.f32");
    assert_has(m2, "add.rn.f32");
    /* Without optimisation the code is poor but valid. */
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.opt_level = 0;
    const tir_module *m0 = NULL;
    assert_int_equal(tir_codegen(ctx, ck_matmul_tiled(ctx, 64, 64, 16), &o, &m0), TIR_OK);
    ptxas_info pi;
    ptxas_assemble(m0, &pi);
    assert_true(strstr(m0->ptx, "bar.sync") != NULL);
    tir_ctx_destroy(ctx);
}

static void test_matmul_tiled(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = ck_matmul_tiled(ctx, 1024, 512, 256);
    const tir_module *m = compile(ctx, f);
    assert_has(m, "bar.sync");
    assert_has(m, ".shared .align 64 .b8 As_shared[4096]");
    assert_has(m, ".shared .align 64 .b8 Bs_shared[4096]");
    assert_has(m, "ld.shared");
    assert_has(m, "st.shared");
    assert_int_equal(m->shared_bytes, 8192);
    /* The 4x4 accumulator lives in registers: no local memory at all. */
    assert_lacks(m, ".local");
    assert_lacks(m, "ld.local");
    assert_lacks(m, "st.local");
    assert_true(count(m->ptx, "fma.rn.f32") >= 16 * 16);
    assert_true(m->grid[0].value == 8 && m->grid[1].value == 16);
    assert_true(m->block[0].value == 16 && m->block[1].value == 16);
    ptxas_info pi;
    if (ptxas_assemble(m, &pi)) {
        assert_int_equal(pi.spill_stores, 0);
        assert_int_equal(pi.spill_loads, 0);
        assert_true(pi.regs > 16 && pi.regs <= 255);
    }
    tir_ctx_destroy(ctx);
}

static void test_vec4(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *m = compile(ctx, ck_vec4_scale(ctx, 1 << 20, 0, 64));
    assert_has(m, "ld.global.nc.v4.f32");
    assert_has(m, "st.global.v4.f32");
    assert_int_equal(count(m->ptx, "ld.global"), 1);
    /* Start 4t+1 is not 16-byte aligned: scalar accesses. */
    m = compile(ctx, ck_vec4_scale(ctx, 1 << 20, 1, 64));
    assert_lacks(m, ".v4.");
    assert_lacks(m, ".v2.");
    assert_int_equal(count(m->ptx, "ld.global.nc.f32"), 4);
    assert_int_equal(count(m->ptx, "st.global.f32"), 4);
    /* Buffers only 8-byte aligned: the best is two v2 accesses. */
    m = compile(ctx, ck_vec4_scale(ctx, 1 << 20, 0, 8));
    assert_lacks(m, ".v4.");
    assert_int_equal(count(m->ptx, "ld.global.nc.v2.f32"), 2);
    assert_int_equal(count(m->ptx, "st.global.v2.f32"), 2);
    tir_ctx_destroy(ctx);
}

static void test_cp_async(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *m = compile(ctx, ck_cp_async(ctx, 1 << 20, 16));
    assert_has(m, "cp.async.cg.shared.global");
    assert_int_equal(count(m->ptx, "cp.async.cg.shared.global"), 1);
    assert_has(m, ", 16;");
    assert_has(m, "cp.async.commit_group");
    assert_has(m, "cp.async.wait_group 0");
    assert_has(m, "bar.sync");
    assert_has(m, ".shared .align 64 .b8 S_shared[4096]");
    assert_int_equal(m->shared_bytes, 4096);
    m = compile(ctx, ck_cp_async(ctx, 1 << 20, 4));
    assert_int_equal(count(m->ptx, "cp.async.ca.shared.global"), 4);
    assert_has(m, ", 4;");
    m = compile(ctx, ck_cp_async(ctx, 1 << 20, 8));
    assert_int_equal(count(m->ptx, "cp.async.ca.shared.global"), 2);
    assert_has(m, ", 8;");
    tir_ctx_destroy(ctx);
}

/* A hand-written cp_async whose operands are T.Ramp(b, 1, n) over the
 * copied elements (gpu_check takes them; tir_lower and the simulator run
 * them) was refused by codegen ("must have a scalar index"): found by the
 * copy fuzzer's PTX check (twenty-seventh session).  The address is the
 * Ramp's first element's. */
static void test_cp_async_ramp(void **st) {
    (void)st;
    static const char text[] =
        "@T.prim_func\n"
        "def cr(A: T.Buffer((256,), \"float32\"), B: T.Buffer((256,), \"float32\")):\n"
        "    for bx in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
        "        S = T.allocate((128,), \"float32\", scope=\"shared\")\n"
        "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "            T.cp_async(T.address_of(S[T.Ramp(tx * 4, 1, 4)]), "
        "T.address_of(A[T.Ramp(bx * 128 + tx * 4, 1, 4)]), 16)\n"
        "            T.cp_async_commit()\n"
        "            T.cp_async_wait(0)\n"
        "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "            for i in T.serial(4):\n"
        "                B[bx * 128 + tx * 4 + i] = S[(31 - tx) * 4 + i]\n";
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *m = compile_lowered(ctx, text);
    assert_int_equal(count(m->ptx, "cp.async.cg.shared.global"), 1);
    assert_has(m, ", 16;");
    tir_ctx_destroy(ctx);
}

/* atomic_add: a relaxed atomicrmw fadd, atom.global.add.f32 in the PTX
 * (assembled by ptxas where installed). */
static void test_atomic_add(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    static const char text[] =
        "@T.prim_func\n"
        "def asum(A: T.Buffer((64,), \"float32\"), C: T.Buffer((1,), \"float32\")):\n"
        "    for bx in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
        "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "            T.atomic_add(T.address_of(C[0]), A[bx * 32 + tx])\n";
    const tir_prim_func *f = NULL;
    assert_int_equal(tir_parse_func(ctx, text, strlen(text), &f), TIR_OK);
    const tir_module *m = compile(ctx, f);
    assert_int_equal(count(m->ptx, "atom.global.add.f32"), 1);
    assert_int_equal(count(m->ptx, "st.global"), 0);
    tir_ctx_destroy(ctx);
}

static void test_half(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = ck_half(ctx, 1 << 12);
    const tir_module *m = compile(ctx, f); /* sm_90: native bf16 arithmetic */
    assert_has(m, "fma.rn.f16");
    assert_has(m, "fma.rn.bf16");
    assert_has(m, "ld.global.nc.u16");
    assert_has(m, "cvt.f32.f16");
    assert_has(m, "cvt.f32.bf16");
    assert_true(tir_dtype_eq(m->params[1].dtype, TIR_BF16));
    const tir_module *m80 = compile_arch(ctx, f, "sm_80", true);
    assert_non_null(strstr(m80->ptx, "fma.rn.f16"));
    assert_non_null(strstr(m80->ptx, ".target sm_80"));
    tir_ctx_destroy(ctx);
}

static void test_floor(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *m = compile(ctx, ck_floor(ctx, 1 << 10));
    /* The general divisor needs a division; by 8 it is a shift and a mask. */
    assert_has(m, "div.s32");
    assert_has(m, "shr.s32");
    assert_has(m, "and.b32");
    tir_ctx_destroy(ctx);
}

static void test_math(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *m = compile(ctx, ck_math(ctx, 1 << 10, TIR_F32));
    /* Exact building blocks only: no approximate instructions, no calls. */
    assert_lacks(m, ".approx");
    assert_lacks(m, "call");
    assert_has(m, "sqrt.rn.f32");
    assert_has(m, "cvt.rni.f32.f32"); /* rint in exp */
    assert_has(m, "f64");             /* pow via double */
    m = compile(ctx, ck_math(ctx, 1 << 10, TIR_F64));
    assert_lacks(m, ".approx");
    assert_has(m, "sqrt.rn.f64");
    tir_ctx_destroy(ctx);
}

/* A serial loop with a symbolic trip count and pragma_unroll_max_step. */
static const tir_prim_func *pragma_loop(tir_ctx *ctx, int64_t step) {
    const tir_var *n = tir_var_new(ctx, "n", TIR_I32), *k = tir_var_new(ctx, "k", TIR_I32);
    const tir_expr *sh = &n->base;
    tir_buffer_desc d = {"A", TIR_F32, 1, &sh, NULL, NULL, TIR_SCOPE_GLOBAL, 64};
    const tir_buffer *A = tir_buffer_new(ctx, &d);
    const tir_expr *i = &k->base;
    const tir_expr *v = tir_add(ctx, tir_load(ctx, A, 1, &i), tir_f32(ctx, 1.0));
    tir_annot an = {.key = "pragma_unroll_max_step", .kind = TIR_ANNOT_INT, .i = step};
    const tir_stmt *s = tir_for_new(ctx, k, tir_i32(ctx, 0), &n->base, TIR_FOR_SERIAL, NULL, 1, &an,
                                    tir_store(ctx, A, v, 1, &i));
    const tir_var *params[2] = {tir_var_new(ctx, "A", TIR_HANDLE), n};
    const tir_buffer *map[2] = {A, NULL};
    return tir_prim_func_new(ctx, "pragma_loop", 2, params, map, s, 0, NULL);
}

static void test_unroll_pragma(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *m1 = compile(ctx, pragma_loop(ctx, 1));
    const tir_module *m4 = compile(ctx, pragma_loop(ctx, 4));
    /* Not unrolled: one store; unrolled by 4 (LLVM then merges the four
     * accesses into one v4 where the alignment allows): a second store for
     * the remainder loop. */
    assert_int_equal(count(m1->ptx, "st.global"), 1);
    assert_true(count(m4->ptx, "st.global") >= 2);
    assert_non_null(strstr(m1->llvm_ir, "llvm.loop.unroll.disable"));
    tir_ctx_destroy(ctx);
}

static void test_dump_llvm(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    dup2(fileno(tmp), 2);
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.dump_llvm = true;
    const tir_module *m = NULL;
    tir_status s = tir_codegen(ctx, ck_vector_add(ctx, 1024), &o, &m);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(s, TIR_OK);
    long len = ftell(tmp);
    rewind(tmp);
    char *buf = calloc(1, (size_t)len + 1);
    assert_int_equal(fread(buf, 1, (size_t)len, tmp), (size_t)len);
    fclose(tmp);
    assert_non_null(strstr(buf, "vector_add before optimisation"));
    assert_non_null(strstr(buf, "vector_add after optimisation"));
    assert_non_null(strstr(buf, "llvm.nvvm.read.ptx.sreg.tid.x"));
    free(buf);
    tir_ctx_destroy(ctx);
}

/* ----------------------------------------------------------------- errors */

static void expect_error(tir_ctx *ctx, const tir_prim_func *f, const tir_codegen_opts *o,
                         tir_status code, const char *needle1, const char *needle2) {
    const tir_module *m = (const tir_module *)1;
    tir_status s = tir_codegen(ctx, f, o, &m);
    if (s != code)
        fail_msg("expected %s, got %s: %s", tir_status_name(code), tir_status_name(s),
                 tir_ctx_error(ctx));
    assert_null(m);
    const char *msg = tir_ctx_error(ctx);
    printf("# expected error: %s\n", msg);
    if (needle1 && !strstr(msg, needle1)) fail_msg("message lacks \"%s\": %s", needle1, msg);
    if (needle2 && !strstr(msg, needle2)) fail_msg("message lacks \"%s\": %s", needle2, msg);
}

/* Only a cp_async's address may index a T.Ramp (the elements it copies,
 * as gpu_check takes them): an atomic_add into address_of(C[Ramp]) would
 * add into one element of the four it names, and stays refused. */
static void test_ramp_address_refused(void **st) {
    (void)st;
    static const char text[] =
        "@T.prim_func\n"
        "def ar(A: T.Buffer((64,), \"float32\"), C: T.Buffer((4,), \"float32\")):\n"
        "    for bx in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
        "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "            T.atomic_add(T.address_of(C[T.Ramp(0, 1, 4)]), A[bx * 32 + tx])\n";
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f;
    assert_int_equal(tir_parse_func(ctx, text, strlen(text), &f), TIR_OK);
    expect_error(ctx, f, NULL, TIR_ERR_UNSUPPORTED, "atomic_add", "must have a scalar index");
    tir_ctx_destroy(ctx);
}

/* for i in threadIdx.x(32): body */
static const tir_prim_func *one_buf_func(tir_ctx *ctx, const tir_buffer *A, const tir_stmt *body) {
    const tir_var *p = tir_var_new(ctx, "A", TIR_HANDLE);
    return tir_prim_func_new(ctx, "bad", 1, &p, &A, body, 0, NULL);
}

static void test_errors(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    int64_t n = 1024;
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 1, &n, TIR_SCOPE_GLOBAL);
    const tir_var *i = tir_var_new(ctx, "vi", TIR_I32), *t = tir_var_new(ctx, "t", TIR_I32);
    const tir_expr *ie = &i->base;
    const tir_stmt *store = tir_store(ctx, A, tir_f32(ctx, 1.0), 1, &ie);

    /* A vectorized loop left over. */
    const tir_stmt *vl = tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_VECTORIZED,
                                     NULL, 0, NULL, store);
    expect_error(ctx, one_buf_func(ctx, A, vl), NULL, TIR_ERR_UNSUPPORTED, "vectorized", "'vi'");
    const tir_stmt *pl = tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_PARALLEL,
                                     NULL, 0, NULL, store);
    expect_error(ctx, one_buf_func(ctx, A, pl), NULL, TIR_ERR_UNSUPPORTED, "parallel", "'vi'");

    /* A block left in the body. */
    tir_block_desc bd = {0};
    bd.name = "C_block";
    bd.body = tir_evaluate_new(ctx, tir_i32(ctx, 0));
    const tir_stmt *br = tir_block_realize_new(ctx, 0, NULL, NULL, tir_block_new(ctx, &bd));
    expect_error(ctx, one_buf_func(ctx, A, br), NULL, TIR_ERR_UNSUPPORTED, "Block", "C_block");

    /* Unsupported arch. */
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.arch = "sm_70";
    const tir_prim_func *good = ck_vector_add(ctx, 1024);
    expect_error(ctx, good, &o, TIR_ERR_UNSUPPORTED, "sm_70", "sm_80");
    tir_codegen_opts_init(&o);
    o.opt_level = 7;
    expect_error(ctx, good, &o, TIR_ERR_INVALID_ARG, "opt_level", NULL);
    const tir_module *m;
    assert_int_equal(tir_codegen(ctx, NULL, NULL, &m), TIR_ERR_INVALID_ARG);

    /* Undefined variable; buffer neither parameter nor allocated. */
    expect_error(ctx, one_buf_func(ctx, A, store), NULL, TIR_ERR_UNSUPPORTED, "'vi'",
                 "not defined");
    const tir_buffer *L = tir_buffer_simple(ctx, "Lbuf", TIR_F32, 1, &n, TIR_SCOPE_LOCAL);
    const tir_expr *z = tir_i32(ctx, 0);
    expect_error(ctx, one_buf_func(ctx, A, tir_store(ctx, L, tir_f32(ctx, 0), 1, &z)), NULL,
                 TIR_ERR_UNSUPPORTED, "Lbuf", "neither a parameter");

    /* A multi-dimensional parameter. */
    int64_t sh2[2] = {32, 32};
    const tir_buffer *A2 = tir_buffer_simple(ctx, "A2", TIR_F32, 2, sh2, TIR_SCOPE_GLOBAL);
    expect_error(ctx, one_buf_func(ctx, A2, tir_evaluate_new(ctx, z)), NULL, TIR_ERR_UNSUPPORTED,
                 "A2", "flattened");

    /* Thread binding: non-constant block size, mismatched extents, too many threads, bad tag. */
    const tir_var *nv = tir_var_new(ctx, "nn", TIR_I32);
    const tir_stmt *tl = tir_for_new(ctx, t, tir_i32(ctx, 0), &nv->base, TIR_FOR_THREAD_BINDING,
                                     "threadIdx.x", 0, NULL, tir_evaluate_new(ctx, z));
    const tir_var *params[2] = {tir_var_new(ctx, "A", TIR_HANDLE), nv};
    const tir_buffer *map[2] = {A, NULL};
    expect_error(ctx, tir_prim_func_new(ctx, "bad", 2, params, map, tl, 0, NULL), NULL,
                 TIR_ERR_UNSUPPORTED, "threadIdx.x", "constant");
    const tir_var *t2 = tir_var_new(ctx, "t2", TIR_I32);
    const tir_stmt *two[2] = {
        tir_for_new(ctx, t, tir_i32(ctx, 0), tir_i32(ctx, 64), TIR_FOR_THREAD_BINDING,
                    "threadIdx.x", 0, NULL, tir_evaluate_new(ctx, z)),
        tir_for_new(ctx, t2, tir_i32(ctx, 0), tir_i32(ctx, 128), TIR_FOR_THREAD_BINDING,
                    "threadIdx.x", 0, NULL, tir_evaluate_new(ctx, z))};
    expect_error(ctx, one_buf_func(ctx, A, tir_seq_new(ctx, 2, two)), NULL, TIR_ERR_UNSUPPORTED,
                 "'t2'", "different");
    const tir_stmt *big = tir_for_new(
        ctx, t, tir_i32(ctx, 0), tir_i32(ctx, 64), TIR_FOR_THREAD_BINDING, "threadIdx.y", 0, NULL,
        tir_for_new(ctx, t2, tir_i32(ctx, 0), tir_i32(ctx, 32), TIR_FOR_THREAD_BINDING,
                    "threadIdx.x", 0, NULL, tir_evaluate_new(ctx, z)));
    expect_error(ctx, one_buf_func(ctx, A, big), NULL, TIR_ERR_UNSUPPORTED, "2048 threads", NULL);
    const tir_stmt *badtag =
        tir_for_new(ctx, t, tir_i32(ctx, 0), tir_i32(ctx, 64), TIR_FOR_THREAD_BINDING, "vthread", 0,
                    NULL, tir_evaluate_new(ctx, z));
    expect_error(ctx, one_buf_func(ctx, A, badtag), NULL, TIR_ERR_UNSUPPORTED, "vthread", NULL);

    /* More shared memory than the arch's opt-in maximum (227 KiB on sm_90,
     * 99 KiB on sm_86): the message names the buffers. */
    int64_t big_n = 60000; /* 240000 bytes of float */
    const tir_buffer *S = tir_buffer_simple(ctx, "Sbig", TIR_F32, 1, &big_n, TIR_SCOPE_SHARED);
    const tir_stmt *sa = tir_allocate_new(ctx, S, tir_store(ctx, S, tir_f32(ctx, 0), 1, &z));
    expect_error(ctx, one_buf_func(ctx, A, sa), NULL, TIR_ERR_UNSUPPORTED, "240000 bytes",
                 "Sbig (240000 bytes)");
    int64_t mid_n = 30000; /* 120000 bytes: fits sm_90, not sm_86 */
    const tir_buffer *Sm = tir_buffer_simple(ctx, "Smid", TIR_F32, 1, &mid_n, TIR_SCOPE_SHARED);
    const tir_stmt *sm = tir_allocate_new(ctx, Sm, tir_store(ctx, Sm, tir_f32(ctx, 0), 1, &z));
    tir_codegen_opts o86;
    tir_codegen_opts_init(&o86);
    o86.arch = "sm_86";
    expect_error(ctx, one_buf_func(ctx, A, sm), &o86, TIR_ERR_UNSUPPORTED, "sm_86's opt-in",
                 "Smid (120000 bytes)");

    /* cp_async with a size it cannot copy, and a void intrinsic inside an expression. */
    const tir_buffer *S2 = tir_buffer_simple(ctx, "S2", TIR_F32, 1, &n, TIR_SCOPE_SHARED);
    const tir_expr *cargs[3] = {tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1,
                                             (const tir_expr *[]){tir_load(ctx, S2, 1, &z)}),
                                tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1,
                                             (const tir_expr *[]){tir_load(ctx, A, 1, &z)}),
                                tir_i32(ctx, 12)};
    const tir_stmt *cp = tir_allocate_new(
        ctx, S2, tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC, 3, cargs)));
    expect_error(ctx, one_buf_func(ctx, A, cp), NULL, TIR_ERR_UNSUPPORTED, "cp_async", "16");
    /* a source size that is not int32 */
    const tir_expr *zargs[4] = {cargs[0], cargs[1], tir_i32(ctx, 4), tir_f32(ctx, 4)};
    cp = tir_allocate_new(
        ctx, S2, tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_CP_ASYNC, 4, zargs)));
    expect_error(ctx, one_buf_func(ctx, A, cp), NULL, TIR_ERR_UNSUPPORTED, "cp_async",
                 "src_bytes must be int32");
    /* atomic_add into shared memory, or of float64 */
    const tir_expr *aargs[2] = {cargs[0], tir_f32(ctx, 1)};
    const tir_stmt *at = tir_allocate_new(
        ctx, S2, tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_ATOMIC_ADD, 2, aargs)));
    expect_error(ctx, one_buf_func(ctx, A, at), NULL, TIR_ERR_UNSUPPORTED, "atomic_add",
                 "scope shared (want global)");
    const tir_buffer *D = tir_buffer_simple(ctx, "D", TIR_F64, 1, &n, TIR_SCOPE_GLOBAL);
    const tir_expr *dargs[2] = {tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1,
                                             (const tir_expr *[]){tir_load(ctx, D, 1, &z)}),
                                tir_float(ctx, TIR_F64, 1)};
    const tir_stmt *ad =
        tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_ATOMIC_ADD, 2, dargs));
    expect_error(ctx, one_buf_func(ctx, D, ad), NULL, TIR_ERR_UNSUPPORTED, "atomic_add",
                 "float32 only");
    const tir_expr *sync = tir_call_new(ctx, TIR_VOID, TIR_INTRIN_SYNCTHREADS, 0, NULL);
    const tir_var *lv = tir_var_new(ctx, "lv", TIR_I32);
    expect_error(ctx, one_buf_func(ctx, A, tir_evaluate_new(ctx, tir_let_new(ctx, lv, z, sync))),
                 NULL, TIR_ERR_UNSUPPORTED, "void", "Evaluate");

    /* A non-float math call. */
    const tir_expr *ex = tir_call_new(ctx, TIR_I32, TIR_INTRIN_EXP, 1, &z);
    expect_error(ctx,
                 one_buf_func(ctx, A, tir_store(ctx, A, tir_cast_new(ctx, TIR_F32, ex), 1, &z)),
                 NULL, TIR_ERR_UNSUPPORTED, "exp", "float");
    tir_ctx_destroy(ctx);
}

/* ------------------------------------------------------------- occupancy */

/* A 64x64x16 matmul with (i, j) fused and split over 32 blocks of 128
 * threads, k unrolled, its root block annotated with the occupancy controls given
 * (0: not annotated).  The trace must round trip. */
static tir_schedule *occ_sched(tir_ctx *ctx, int64_t max_threads, int64_t min_blocks,
                               int64_t max_regs) {
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 64, 64, 16, TIR_F32));
    tir_loop_rv l[16], f, t[2];
    assert_int_equal(sched_loops(s, "C", l), 3);
    SCHED_OK(s, tir_sched_fuse(s, 2, l, &f));
    SCHED_OK(s, tir_sched_split(s, f, 2, (const int64_t[]){TIR_SPLIT_INFER, 128}, t));
    SCHED_OK(s, tir_sched_bind(s, t[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, t[1], "threadIdx.x"));
    SCHED_OK(s, tir_sched_unroll(s, l[2])); /* enough registers in flight to show a cap */
    tir_block_rv root = sched_block(s, "root");
    if (max_threads)
        SCHED_OK(s, tir_sched_annotate_block_int(s, root, "launch_bounds_max_threads",
                                                 max_threads));
    if (min_blocks)
        SCHED_OK(s, tir_sched_annotate_block_int(s, root, "launch_bounds_min_blocks_per_sm",
                                                 min_blocks));
    if (max_regs) SCHED_OK(s, tir_sched_annotate_block_int(s, root, "max_registers", max_regs));
    sched_check_roundtrip(s);
    return s;
}

static const tir_prim_func *occ_kernel(tir_ctx *ctx, tir_schedule *s) {
    const tir_prim_func *k = NULL;
    if (tir_lower(ctx, tir_sched_func(s), NULL, &k) != TIR_OK)
        fail_msg("lowering failed: %s", tir_ctx_error(ctx));
    return k;
}

/* Shared memory past the static 48 KiB goes to one dynamic (extern)
 * array; below it stays static unless dynamic_shared asks. */
static const tir_module *compile_dyn(tir_ctx *ctx, const tir_prim_func *f) {
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.pipeline = test_pipeline;
    o.dynamic_shared = true;
    const tir_module *m = NULL;
    if (tir_codegen(ctx, f, &o, &m) != TIR_OK)
        fail_msg("codegen of %s failed: %s", f->name, tir_ctx_error(ctx));
    ptxas_info pi;
    ptxas_assemble(m, &pi);
    return m;
}

static void test_dynamic_shared(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    /* 64 KiB: one S[t * 512] = 0 per thread of 32 */
    int64_t n = 1024, big_n = 16384;
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 1, &n, TIR_SCOPE_GLOBAL);
    const tir_buffer *S = tir_buffer_simple(ctx, "Sbig", TIR_F32, 1, &big_n, TIR_SCOPE_SHARED);
    const tir_var *t = tir_var_new(ctx, "t", TIR_I32);
    const tir_expr *idx = tir_mul(ctx, &t->base, tir_i32(ctx, 512));
    const tir_stmt *body = tir_for_new(ctx, t, tir_i32(ctx, 0), tir_i32(ctx, 32),
                                       TIR_FOR_THREAD_BINDING, "threadIdx.x", 0, NULL,
                                       tir_store(ctx, S, tir_f32(ctx, 0), 1, &idx));
    const tir_var *p = tir_var_new(ctx, "A", TIR_HANDLE);
    const tir_prim_func *f =
        tir_prim_func_new(ctx, "big", 1, &p, &A, tir_allocate_new(ctx, S, body), 0, NULL);
    const tir_module *m = compile(ctx, f);
    assert_int_equal(m->dyn_shared_bytes, 65536);
    assert_int_equal(m->shared_bytes, 0);
    /* aligned as the buffer (tir_buffer_simple: 64 bytes) */
    assert_has(m, ".extern .shared .align 64 .b8 minitir_dyn_shared[]");
    assert_lacks(m, "Sbig");
    assert_has(m, "st.shared.u32");
    /* forced dynamic: the tiled matmul's two 64-byte aligned tiles in one
     * 64-byte aligned array */
    m = compile_dyn(ctx, ck_matmul_tiled(ctx, 1024, 512, 256));
    assert_int_equal(m->dyn_shared_bytes, 8192);
    assert_int_equal(m->shared_bytes, 0);
    assert_has(m, ".extern .shared .align 64 .b8 minitir_dyn_shared[]");
    assert_lacks(m, "As_shared");
    /* LLVM still knows the tiles' alignment: float4 shared loads */
    assert_has(m, "ld.shared.v4.f32");
    /* 16-byte cp.async into the dynamic array keeps its 16-byte form */
    m = compile_dyn(ctx, ck_cp_async(ctx, 1 << 20, 16));
    assert_int_equal(m->dyn_shared_bytes, 4096);
    assert_int_equal(count(m->ptx, "cp.async.cg.shared.global"), 1);
    assert_has(m, ", 16;");
    /* no shared memory: nothing dynamic even when asked */
    m = compile_dyn(ctx, ck_vector_add(ctx, 1 << 12));
    assert_int_equal(m->dyn_shared_bytes + m->shared_bytes, 0);
    assert_lacks(m, ".shared");
    tir_ctx_destroy(ctx);
}

static void test_occupancy(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    /* without controls: .maxntid is the block shape, nothing else */
    tir_schedule *s = occ_sched(ctx, 0, 0, 0);
    const tir_module *m = compile_arch(ctx, occ_kernel(ctx, s), "sm_90", true);
    assert_has(m, ".maxntid 128, 1, 1");
    assert_lacks(m, ".minnctapersm");
    assert_lacks(m, ".maxnreg");
    ptxas_info pi;
    bool have_ptxas = ptxas_assemble(m, &pi);
    if (have_ptxas) assert_true(pi.regs > 24); /* so that the cap below shows */
    tir_sched_destroy(s);

    s = occ_sched(ctx, 256, 2, 24);
    assert_non_null(strstr(tir_sched_trace_text(s), "launch_bounds_min_blocks_per_sm"));
    const tir_prim_func *k = occ_kernel(ctx, s);
    const tir_annot *a = tir_annots_find(k->nattrs, k->attrs, "max_registers");
    assert_non_null(a);
    assert_int_equal(a->i, 24);
    const char *archs[] = {"sm_80", "sm_90"};
    for (int i = 0; i < 2; i++) {
        m = compile_arch(ctx, k, archs[i], true);
        assert_has(m, ".maxntid 256, 1, 1");
        assert_has(m, ".minnctapersm 2");
        assert_has(m, ".maxnreg 24");
        if (ptxas_assemble(m, &pi)) assert_true(pi.regs <= 24); /* ptxas honours .maxnreg */
    }
    /* the controls may also be function attrs; a root annotation wins */
    const tir_prim_func *f = tir_sched_func(s);
    tir_annot attrs[2] = {
        {.key = "max_registers", .kind = TIR_ANNOT_INT, .i = 100},
        {.key = "launch_bounds_max_threads", .kind = TIR_ANNOT_INT, .i = 512}};
    f = tir_prim_func_new(ctx, f->name, f->nparams, f->params, f->buffer_map, f->body, 2, attrs);
    const tir_prim_func *k2 = NULL;
    assert_int_equal(tir_lower(ctx, f, NULL, &k2), TIR_OK);
    m = compile_arch(ctx, k2, "sm_90", true);
    assert_has(m, ".maxnreg 24");
    assert_has(m, ".maxntid 256, 1, 1");
    tir_sched_destroy(s);
    s = occ_sched(ctx, 0, 0, 0);
    f = tir_sched_func(s);
    f = tir_prim_func_new(ctx, f->name, f->nparams, f->params, f->buffer_map, f->body, 2, attrs);
    assert_int_equal(tir_lower(ctx, f, NULL, &k2), TIR_OK);
    m = compile_arch(ctx, k2, "sm_90", true);
    assert_has(m, ".maxnreg 100");
    assert_has(m, ".maxntid 512, 1, 1");
    if (have_ptxas) ptxas_assemble(m, &pi);
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

/* Codegen of the kernel of occ_sched(...) for arch fails with
 * TIR_ERR_UNSUPPORTED and a message holding `what`. */
static void occ_refused(tir_ctx *ctx, tir_schedule *s, const char *arch, const char *what) {
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.arch = arch;
    const tir_module *m = NULL;
    assert_int_equal(tir_codegen(ctx, occ_kernel(ctx, s), &o, &m), TIR_ERR_UNSUPPORTED);
    assert_null(m);
    if (!strstr(tir_ctx_error(ctx), what))
        fail_msg("message lacks \"%s\": %s", what, tir_ctx_error(ctx));
    assert_non_null(strstr(tir_ctx_error(ctx), "matmul"));
    tir_sched_destroy(s);
}

static void test_occupancy_errors(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    occ_refused(ctx, occ_sched(ctx, 64, 0, 0), "sm_90",
                "launch_bounds_max_threads = 64 is below the 128 threads");
    occ_refused(ctx, occ_sched(ctx, 2048, 0, 0), "sm_90",
                "launch_bounds_max_threads = 2048 is not in 1..1024");
    occ_refused(ctx, occ_sched(ctx, -1, 0, 0), "sm_90",
                "launch_bounds_max_threads = -1 is not in 1..1024");
    occ_refused(ctx, occ_sched(ctx, 0, 33, 0), "sm_90",
                "launch_bounds_min_blocks_per_sm = 33 is not in 1..32");
    occ_refused(ctx, occ_sched(ctx, 0, 17, 0), "sm_86",
                "launch_bounds_min_blocks_per_sm = 17 is not in 1..16");
    occ_refused(ctx, occ_sched(ctx, 0, -2, 0), "sm_90",
                "launch_bounds_min_blocks_per_sm = -2 is not in 1..32");
    occ_refused(ctx, occ_sched(ctx, 0, 0, 256), "sm_90", "max_registers = 256 is not in 1..255");
    occ_refused(ctx, occ_sched(ctx, 0, 0, -5), "sm_90", "max_registers = -5 is not in 1..255");
    tir_schedule *s = occ_sched(ctx, 0, 0, 0);
    SCHED_OK(s, tir_sched_annotate_block_str(s, sched_block(s, "root"), "max_registers", "64"));
    occ_refused(ctx, s, "sm_90", "max_registers must be an int");
    /* the limits are the arch's: 17 blocks per SM are fine on sm_90 */
    s = occ_sched(ctx, 128, 17, 255);
    assert_has(compile(ctx, occ_kernel(ctx, s)), ".minnctapersm 17");
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

/* A buffer past 2^31 - 1 elements cannot be indexed in 32 bits: refused
 * (it would wrap to a wrong or illegal address; the tuner met it with
 * split-K partial sums of 64 x 8192 x 8192). */
static void test_index_overflow(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    int64_t n = (int64_t)1 << 32;
    const tir_buffer *A = tir_buffer_simple(ctx, "Ahuge", TIR_F32, 1, &n, TIR_SCOPE_GLOBAL);
    const tir_var *t = tir_var_new(ctx, "t", TIR_I32);
    const tir_expr *idx = &t->base;
    const tir_stmt *body = tir_for_new(ctx, t, tir_i32(ctx, 0), tir_i32(ctx, 32),
                                       TIR_FOR_THREAD_BINDING, "threadIdx.x", 0, NULL,
                                       tir_store(ctx, A, tir_f32(ctx, 0), 1, &idx));
    const tir_var *p = tir_var_new(ctx, "A", TIR_HANDLE);
    const tir_prim_func *f = tir_prim_func_new(ctx, "huge", 1, &p, &A, body, 0, NULL);
    const tir_module *m = NULL;
    assert_int_equal(tir_codegen(ctx, f, NULL, &m), TIR_ERR_UNSUPPORTED);
    assert_null(m);
    assert_non_null(strstr(tir_ctx_error(ctx), "buffer 'Ahuge', which has 4294967296 elements"));
    /* 2^31 - 1 elements are fine */
    n = INT32_MAX;
    A = tir_buffer_simple(ctx, "Abig", TIR_F32, 1, &n, TIR_SCOPE_GLOBAL);
    body = tir_for_new(ctx, t, tir_i32(ctx, 0), tir_i32(ctx, 32), TIR_FOR_THREAD_BINDING,
                       "threadIdx.x", 0, NULL, tir_store(ctx, A, tir_f32(ctx, 0), 1, &idx));
    f = tir_prim_func_new(ctx, "big", 1, &p, &A, body, 0, NULL);
    assert_int_equal(tir_codegen(ctx, f, NULL, &m), TIR_OK);
    tir_ctx_destroy(ctx);
}

/* Nested unrolled loops: codegen unrolls at emission while the copies of
 * the innermost body stay within 4096 (the product of the extents), and
 * keeps the rest loops (without unroll.full: LLVM would try).  Three nested
 * T.unroll(1000) made 10^9 copies and the process died in LLVM's
 * allocator (a new user's try, sixteenth session); 64 x 1000 x 1000 now
 * emits the outer 64 copies, each with two loops (which LLVM may merge). */
static void test_unroll_budget(void **st) {
    (void)st;
    static const char text[] =
        "@T.prim_func\n"
        "def un(A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")):\n"
        "    for bx in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
        "        for tx in T.thread_binding(0, 1, thread=\"threadIdx.x\"):\n"
        "            for i in T.unroll(64):\n"
        "                for j in T.unroll(1000):\n"
        "                    for l in T.unroll(1000):\n"
        "                        C[0] = C[0] + A[(i + j + l) % 8]\n";
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *m = compile_lowered(ctx, text);
    assert_null(strstr(m->llvm_ir, "llvm.loop.unroll.full"));
    /* the inner loops stayed loops: a small kernel */
    assert_true(count(m->ptx, "bra") >= 2);
    if (strlen(m->ptx) > 256 * 1024) fail_msg("%zu bytes of PTX", strlen(m->ptx));
    tir_ctx_destroy(ctx);
}

/* The lowered kernel of a 64x64x64 matmul, (i, j) over 32 blocks of 128
 * threads, k a serial loop (small: LLVM's O3 unroller would unroll it);
 * the root block annotated key = v (v = -1: not annotated). */
static const tir_prim_func *k_loop_kernel(tir_ctx *ctx, const char *key, int64_t v) {
    tir_schedule *s = sched_new(ctx, tir_def_matmul(ctx, 64, 64, 64, TIR_F32));
    tir_loop_rv l[16], f, t[2];
    assert_int_equal(sched_loops(s, "C", l), 3);
    SCHED_OK(s, tir_sched_fuse(s, 2, l, &f));
    SCHED_OK(s, tir_sched_split(s, f, 2, (const int64_t[]){TIR_SPLIT_INFER, 128}, t));
    SCHED_OK(s, tir_sched_bind(s, t[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, t[1], "threadIdx.x"));
    if (v >= 0) SCHED_OK(s, tir_sched_annotate_block_int(s, sched_block(s, "root"), key, v));
    sched_check_roundtrip(s);
    const tir_prim_func *k = occ_kernel(ctx, s);
    tir_sched_destroy(s);
    return k;
}

/* k_loop_kernel annotated loop_strength_reduction = lsr, compiled. */
static const tir_module *lsr_compile(tir_ctx *ctx, int64_t lsr) {
    return compile(ctx, k_loop_kernel(ctx, "loop_strength_reduction", lsr));
}

/* LLVM's loop strength reduction is off unless a kernel asks for it: the
 * k loop then counts in 32 bits to its extent (what ptxas unrolls); with
 * it, LLVM counts a 64-bit byte offset.  Turning it on for one kernel
 * leaves it off for the next (the switch is process-wide in LLVM). */
static void test_loop_strength_reduction(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_module *off = lsr_compile(ctx, -1);
    assert_string_equal(off->ptx, lsr_compile(ctx, 0)->ptx);
    assert_has(off, "setp.ne.s32");
    const tir_module *on = lsr_compile(ctx, 1);
    assert_true(strcmp(on->ptx, off->ptx) != 0);
    assert_string_equal(lsr_compile(ctx, -1)->ptx, off->ptx);
    assert_string_equal(lsr_compile(ctx, 1)->ptx, on->ptx);
    /* neither the value 2 nor a string */
    tir_schedule *s = occ_sched(ctx, 0, 0, 0);
    SCHED_OK(s, tir_sched_annotate_block_int(s, sched_block(s, "root"),
                                             "loop_strength_reduction", 2));
    occ_refused(ctx, s, "sm_90", "loop_strength_reduction must be the int 0 or 1");
    s = occ_sched(ctx, 0, 0, 0);
    SCHED_OK(s, tir_sched_annotate_block_str(s, sched_block(s, "root"),
                                             "loop_strength_reduction", "1"));
    occ_refused(ctx, s, "sm_90", "loop_strength_reduction must be the int 0 or 1");
    tir_ctx_destroy(ctx);
}

/* k compiled with pipeline pl (whatever test_pipeline is), the direct
 * emitter's own unrolling of small loops for every kernel (all_unroll) or
 * every loop rolled (all_rolled). */
static const tir_module *direct_compile(tir_ctx *ctx, const tir_prim_func *k, tir_cg_pipeline pl,
                                        bool all_unroll, bool all_rolled) {
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.pipeline = pl;
    o.direct_unroll = all_unroll;
    o.direct_all_loops = all_rolled;
    const tir_module *m = NULL;
    if (tir_codegen(ctx, k, &o, &m) != TIR_OK)
        fail_msg("codegen of %s failed: %s", k->name, tir_ctx_error(ctx));
    ptxas_info pi;
    ptxas_assemble(m, &pi);
    return m;
}

/* The direct_unroll annotation: a kernel whose k loop is small enough for
 * LLVM to unroll goes to LLVM by default; annotated 1 (on the root block,
 * moved to the kernel's attrs), the direct emitter takes it with its own
 * unrolling, the PTX that tir_codegen_opts.direct_unroll gives for every
 * kernel; 0 is the default.  direct_all_loops still rolls every loop,
 * other pipelines never try the direct emitter, and a kernel it refuses
 * for another reason falls back to LLVM with the PTX of the kernel
 * without the annotation.  Values other than the int 0 or 1 are refused. */
static void test_direct_unroll(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *plain = k_loop_kernel(ctx, "direct_unroll", -1),
                        *off = k_loop_kernel(ctx, "direct_unroll", 0),
                        *on = k_loop_kernel(ctx, "direct_unroll", 1);
    const tir_module *def = direct_compile(ctx, plain, TIR_CG_PIPELINE_DIRECT, false, false);
    assert_int_not_equal(def->pipeline, TIR_CG_PIPELINE_DIRECT);
    assert_non_null(def->direct_refusal);
    assert_non_null(strstr(def->direct_refusal, "small enough for LLVM to unroll"));
    const tir_module *m = direct_compile(ctx, on, TIR_CG_PIPELINE_DIRECT, false, false);
    assert_int_equal(m->pipeline, TIR_CG_PIPELINE_DIRECT);
    assert_string_equal(m->ptx,
                        direct_compile(ctx, plain, TIR_CG_PIPELINE_DIRECT, true, false)->ptx);
    assert_true(strcmp(m->ptx, def->ptx) != 0);
    m = direct_compile(ctx, off, TIR_CG_PIPELINE_DIRECT, false, false);
    assert_int_equal(m->pipeline, def->pipeline);
    assert_string_equal(m->ptx, def->ptx);
    /* direct_all_loops over it; the short pipeline: LLVM, as without */
    assert_string_equal(direct_compile(ctx, on, TIR_CG_PIPELINE_DIRECT, false, true)->ptx,
                        direct_compile(ctx, plain, TIR_CG_PIPELINE_DIRECT, false, true)->ptx);
    m = direct_compile(ctx, on, TIR_CG_PIPELINE_SHORT, false, false);
    assert_int_not_equal(m->pipeline, TIR_CG_PIPELINE_DIRECT);
    assert_string_equal(m->ptx, direct_compile(ctx, plain, TIR_CG_PIPELINE_SHORT, false, false)->ptx);
    /* a math call is outside the direct emitter's subset: LLVM's PTX */
    static const char text[] = "@T.prim_func\n"
                               "def k(X: T.Buffer((64,), \"float32\"), Y: T.Buffer((64,), \"float32\")):\n"
                               "    T.func_attr({\"direct_unroll\": %d})\n"
                               "    for t in T.thread_binding(0, 16, thread=\"threadIdx.x\"):\n"
                               "        for i in T.serial(4):\n"
                               "            Y[t * 4 + i] = T.exp(X[t * 4 + i])\n";
    const tir_module *mm[2];
    for (int v = 0; v < 2; v++) {
        char buf[512];
        snprintf(buf, sizeof buf, text, v);
        const tir_prim_func *k;
        assert_int_equal(tir_parse_func(ctx, buf, strlen(buf), &k), TIR_OK);
        mm[v] = direct_compile(ctx, k, TIR_CG_PIPELINE_DIRECT, false, false);
        assert_int_not_equal(mm[v]->pipeline, TIR_CG_PIPELINE_DIRECT);
        assert_non_null(mm[v]->direct_refusal);
    }
    assert_null(strstr(mm[1]->direct_refusal, "small enough"));
    assert_string_equal(mm[1]->ptx, mm[0]->ptx);
    /* neither the value 2 nor a string */
    tir_schedule *s = occ_sched(ctx, 0, 0, 0);
    SCHED_OK(s, tir_sched_annotate_block_int(s, sched_block(s, "root"), "direct_unroll", 2));
    occ_refused(ctx, s, "sm_90", "direct_unroll must be the int 0 or 1");
    s = occ_sched(ctx, 0, 0, 0);
    SCHED_OK(s, tir_sched_annotate_block_str(s, sched_block(s, "root"), "direct_unroll", "1"));
    occ_refused(ctx, s, "sm_90", "direct_unroll must be the int 0 or 1");
    tir_ctx_destroy(ctx);
}

/* llvm_ir is printed only on demand; a pipeline outside the enum is refused. */
static void test_llvm_ir_on_demand(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = ck_vector_add(ctx, 1024);
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.pipeline = test_pipeline;
    const tir_module *m = NULL;
    assert_int_equal(tir_codegen(ctx, f, &o, &m), TIR_OK);
    assert_null(m->llvm_ir);
    assert_true(m->ir_text_ms == 0);
    assert_non_null(strstr(m->ptx, ".entry vector_add("));
    o.keep_llvm_ir = true;
    assert_int_equal(tir_codegen(ctx, f, &o, &m), TIR_OK);
    assert_non_null(strstr(m->llvm_ir, "define ptx_kernel void @vector_add"));
    o.pipeline = (tir_cg_pipeline)7;
    expect_error(ctx, f, &o, TIR_ERR_INVALID_ARG, "pipeline 7", NULL);
    tir_ctx_destroy(ctx);
}

/* The second run of every test: under the fast pipeline. */
static int use_fast(void **st) {
    (void)st;
    test_pipeline = TIR_CG_PIPELINE_FAST;
    return 0;
}

/* The third: under the short pipeline (the default), which loop-free
 * kernels get. */
static int use_short(void **st) {
    (void)st;
    test_pipeline = TIR_CG_PIPELINE_SHORT;
    return 0;
}

static int use_opt(void **st) {
    (void)st;
    test_pipeline = TIR_CG_PIPELINE_OPT;
    return 0;
}

#define BOTH(f)                                                                            \
    cmocka_unit_test(f), {"fast pipeline: " #f, f, use_fast, use_opt, NULL},                  \
        {"short pipeline: " #f, f, use_short, use_opt, NULL}

int main(void) {
    if (!ptxas_path()) printf("# ptxas not found: PTX is checked as text only\n");
    const struct CMUnitTest tests[] = {
        BOTH(test_vector_add),      BOTH(test_symbolic_grid),
        BOTH(test_matmul_naive),    BOTH(test_matmul_tiled),
        BOTH(test_vec4),            BOTH(test_cp_async), BOTH(test_cp_async_ramp),
        BOTH(test_ramp_address_refused),
        BOTH(test_half),            BOTH(test_floor),
        BOTH(test_math),            BOTH(test_unroll_pragma),
        BOTH(test_dump_llvm),       BOTH(test_errors),
        BOTH(test_occupancy),       BOTH(test_occupancy_errors),
        BOTH(test_dynamic_shared),  BOTH(test_loop_strength_reduction),
        BOTH(test_llvm_ir_on_demand),
        BOTH(test_atomic_add),      BOTH(test_index_overflow),
        BOTH(test_unroll_budget),
        cmocka_unit_test(test_direct_unroll), /* its own pipelines */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
