/* Tests of the TVMScript-style printer: exact text for hand-built
 * functions (golden strings), the spelling of every expression with minimal
 * parentheses, standalone nodes, the folding and elision rules, name
 * disambiguation, and tir_print_marked's caret lines. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/ir.h"
#include "text_samples.h"

#define X(v) (&(v)->base)

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* ------------------------------------------------------------------ goldens */

static const char *const golden_matmul =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((128, 128), \"float32\"), B: T.Buffer((128, 128), \"float32\"), C: T.Buffer((128, 128), \"float32\")):\n"
    "    for i, j, k in T.grid(128, 128, 128):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static const char *const golden_blocks =
    "@T.prim_func\n"
    "def blocks(A: T.Buffer((n, 64), \"float32\"), B: T.Buffer((n, 64), \"float16\", strides=(64, 1)), C: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    T.func_attr({\"arr\": [1, -2, 3], \"global_symbol\": \"blocks\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        T.block_attr({\"root_note\": 7})\n"
    "        S = T.alloc_buffer((64, 64), \"float32\", scope=\"shared\")\n"
    "        for i in T.parallel(n):\n"
    "            for j in T.serial(64, annotations={\"arr\": [0, 0, 1], \"pragma_unroll\": 1, \"s\": \"x\"}):\n"
    "                with T.block(\"S\"):\n"
    "                    vi = T.axis.remap(\"S\", [i])\n"
    "                    vj = T.axis.spatial((4, 68), j + 4)\n"
    "                    T.where(i < n - 1)\n"
    "                    T.reads(A[vi, vj - 4])\n"
    "                    T.writes(S[vi % 64, vj - 4])\n"
    "                    T.block_attr({\"note\": \"say \\\"hi\\\"\\n\\tok\\\\\", \"stage\": -3})\n"
    "                    S[vi % 64, vj - 4] = A[vi, vj - 4]\n"
    "        for i_1, k in T.grid(n, 8):\n"
    "            with T.block(\"red\"):\n"
    "                vi_1 = T.axis.remap(\"S\", [i_1])\n"
    "                vk = T.axis.reduce((2, 10), k + 2)\n"
    "                T.reads(B[vi_1:vi_1 + 4, 0:64], C[vi_1])\n"
    "                T.writes(C[vi_1])\n"
    "                with T.init():\n"
    "                    C[vi_1] = T.float32(0)\n"
    "                if vk < 9 and not vi_1 < 1:\n"
    "                    C[vi_1] = C[vi_1] + T.Cast(\"float32\", B[vi_1, vk * 4])\n"
    "                else:\n"
    "                    T.evaluate(0)\n"
    "                    C[vi_1] = T.float32(-1.5)\n";

static const char *const golden_lowered =
    "@T.prim_func\n"
    "def lowered(A: T.Buffer((1024,), \"float32\"), B: T.Buffer((1024,), \"float32\"), m: T.int64, x: T.float32):\n"
    "    for bx in T.thread_binding(0, 8, thread=\"blockIdx.x\"):\n"
    "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            Sh = T.allocate((128,), \"float32\", scope=\"shared\")\n"
    "            with T.allocate((4,), \"float32\", scope=\"local\") as L:\n"
    "                L[T.Ramp(0, 1, 4)] = A[T.Ramp(bx * 128 + tx * 4, 1, 4)] + T.Broadcast(x, 4)\n"
    "                Sh[T.Ramp(tx * 4, 1, 4)] = L[T.Ramp(0, 1, 4)]\n"
    "            T.cp_async(T.address_of(Sh[tx]), T.address_of(A[bx * 128 + tx * 4]), 16)\n"
    "            T.cp_async_commit()\n"
    "            T.cp_async_wait(0)\n"
    "            T.syncthreads()\n"
    "            if tx < 16:\n"
    "                for u in T.unroll(2, 4):\n"
    "                    B[u] = T.Select(u < 1, x, T.Cast(\"float32\", u))\n"
    "            else:\n"
    "                if tx >= 30:\n"
    "                    for v in T.vectorized(4):\n"
    "                        B[bx * 128 + tx * 4 + v] = T.Let(t, T.exp(Sh[tx * 4 + v]), T.fma(t, t, x))\n"
    "            for q in T.serial(m):\n"
    "                B[T.Cast(\"int32\", q)] = T.float32(1)\n"
    "            for p in T.parallel(T.int64(1), T.int64(5)):\n"
    "                T.evaluate(T.int64(0))\n";

static const char *const golden_exprs =
    "@T.prim_func\n"
    "def exprs(F: T.Buffer((64,), \"float32\"), I: T.Buffer((64,), \"int32\"), Bo: T.Buffer((64,), \"bool\"), D: T.Buffer((64,), \"float64\"), H: T.Buffer((64,), \"float16\"), G: T.Buffer((64,), \"bfloat16\"), L: T.Buffer((64,), \"int64\"), U: T.Buffer((64,), \"uint8\"), C: T.Buffer((64,), \"int8\"), Z: T.Buffer((), \"float32\"), x: T.float32, y: T.float32, p: T.bool):\n"
    "    for c in T.serial(-4, 0):\n"
    "        for b in T.serial(-4, 0):\n"
    "            for a in T.serial(-4, 0):\n"
    "                I[0] = (a - (b - c)) * (a + b) // (c % 3) - -5\n"
    "                I[1] = a + (b + c)\n"
    "                I[2] = -2147483648 * T.min(a, T.max(b, 2147483647))\n"
    "                I[3] = T.truncdiv(a, T.truncmod(b, c))\n"
    "                I[4] = 0 - (0 - a)\n"
    "                Bo[5] = p and ((a < b) == (b != c) or p) or not (a <= c and c >= 0)\n"
    "                Bo[6] = not not x > y\n"
    "                Bo[7] = (not p) == False\n"
    "                F[8] = x / (y / T.float32(0.1))\n"
    "                F[9] = T.float32(\"inf\") + T.float32(\"-inf\")\n"
    "                F[10] = T.float32(\"nan\") - T.float32(\"nan:0xfff8000000000001\")\n"
    "                F[11] = T.float32(-0) * T.float32(1e+30)\n"
    "                D[12] = T.float64(5e-324) + T.float64(0.3333333333333333)\n"
    "                H[13] = T.float16(65504)\n"
    "                G[14] = T.bfloat16(-0.0025)\n"
    "                F[15] = x // (y % T.float32(2))\n"
    "                L[16] = T.int64(-9223372036854775808) + T.int64(9000000000)\n"
    "                U[17] = T.uint8(255)\n"
    "                C[18] = T.int8(-128)\n"
    "                F[19] = T.Select(p, T.sqrt(T.Cast(\"float32\", a)), T.fabs(y))\n"
    "                D[20] = T.call_intrin(\"float64\", \"pow\", x, y)\n"
    "                Z[()] = T.tanh(Z[()])\n"
    "                Bo[21] = T.Cast(\"bool\", T.int8(3))\n"
    "                F[T.Ramp(8, 1, 8)] = T.Select(T.Ramp(a, 2, 8) < T.Broadcast(b, 8), T.Broadcast(x, 8), F[T.Ramp(0, 1, 8)])\n";

static const char *const golden_no_root =
    "@T.prim_func(implicit_root=False)\n"
    "def no_root(A: T.Buffer((16,), \"float32\")):\n"
    "    for i in T.serial(16):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.remap(\"S\", [i])\n"
    "            T.writes(A[vi])\n"
    "            A[vi] = T.float32(2)\n";

static const char *const golden_names =
    "@T.prim_func(name=\"my-func.v2\")\n"
    "def my_func_v2(A: T.Buffer((8,), \"float32\")):\n"
    "    A_1 = T.allocate((8,), \"float32\", scope=\"local\")\n"
    "    T_1 = T.allocate((8,), \"float32\", scope=\"local\")\n"
    "    for i in T.serial(8):\n"
    "        A[i] = T.float32(1)\n"
    "    for i_1 in T.serial(8):\n"
    "        for i_1_1 in T.serial(i_1):\n"
    "            A_1[i_1] = A[i_1_1]\n"
    "    for for_1, i_outer, v_0abc, v in T.grid(2, 2, 2, 2):\n"
    "        T_1[for_1 + i_outer + (v_0abc + v)] = T.float32(0)\n";

static const char *const golden_layouts =
    "@T.prim_func\n"
    "def layouts(A: T.Buffer((n, 16), \"float32\", strides=(32, 1), elem_offset=off, align=128), B: T.Buffer((T.var(\"int64\", \"m\"),), \"uint8\", elem_offset=T.int64(8), scope=\"local\"), C: T.Buffer((n, k), \"int32\"), k: T.int32):\n"
    "    for t, i, j in T.grid(k // 2, n, m):\n"
    "        C[i, T.Cast(\"int32\", j)] = T.Cast(\"int32\", B[j])\n";


static void test_golden_samples(void **st) {
    tir_ctx *ctx = *st;
    const char *const golden[] = {golden_matmul, golden_blocks, golden_lowered, golden_exprs,
                                  golden_no_root, golden_names, golden_layouts};
    assert_int_equal(ts_nsamples, sizeof golden / sizeof golden[0]);
    for (int i = 0; i < ts_nsamples; i++) {
        const char *t = tir_print(ctx, ts_samples[i].build(ctx));
        if (strcmp(t, golden[i]) != 0) print_error("sample %s printed as:\n%s", ts_samples[i].name, t);
        assert_string_equal(t, golden[i]);
    }
}

/* The issue's example, character for character. */
static void test_golden_issue_matmul(void **st) {
    tir_ctx *ctx = *st;
    const char *want =
        "@T.prim_func\n"
        "def matmul(A: T.Buffer((128, 128), \"float32\"), B: T.Buffer((128, 128), \"float32\"), "
        "C: T.Buffer((128, 128), \"float32\")):\n"
        "    for i, j, k in T.grid(128, 128, 128):\n"
        "        with T.block(\"C\"):\n"
        "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
        "            T.reads(A[vi, vk], B[vk, vj])\n"
        "            T.writes(C[vi, vj])\n"
        "            with T.init():\n"
        "                C[vi, vj] = T.float32(0)\n"
        "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";
    assert_string_equal(tir_print(ctx, ts_matmul(ctx)), want);
}

/* -------------------------------------------------------------- expressions */

typedef struct env {
    tir_ctx *ctx;
    const tir_expr *a, *b, *c, *p, *q, *r, *x, *y;
    const tir_buffer *A, *Z;
} env;

static env make_env(tir_ctx *ctx) {
    env e = {.ctx = ctx};
    e.a = X(tir_var_new(ctx, "a", TIR_I32));
    e.b = X(tir_var_new(ctx, "b", TIR_I32));
    e.c = X(tir_var_new(ctx, "c", TIR_I32));
    e.p = X(tir_var_new(ctx, "p", TIR_BOOL));
    e.q = X(tir_var_new(ctx, "q", TIR_BOOL));
    e.r = X(tir_var_new(ctx, "r", TIR_BOOL));
    e.x = X(tir_var_new(ctx, "x", TIR_F32));
    e.y = X(tir_var_new(ctx, "y", TIR_F32));
    int64_t sh[2] = {4, 8};
    e.A = tir_buffer_simple(ctx, "A", TIR_F32, 2, sh, TIR_SCOPE_GLOBAL);
    e.Z = tir_buffer_simple(ctx, "Z", TIR_I64, 0, NULL, TIR_SCOPE_GLOBAL);
    return e;
}

static const tir_expr *B2(env *e, tir_kind k, const tir_expr *a, const tir_expr *b) {
    return tir_binop_new(e->ctx, k, a, b);
}

static void expect_expr(tir_ctx *ctx, const tir_expr *e, const char *want) {
    const char *got = tir_print(ctx, e);
    if (strcmp(got, want) != 0) print_error("want %s\n got %s\n", want, got);
    assert_string_equal(got, want);
}

static void test_precedence(void **st) {
    tir_ctx *ctx = *st;
    env e = make_env(ctx);
    const tir_expr *a = e.a, *b = e.b, *c = e.c;
    expect_expr(ctx, B2(&e, TIR_KIND_SUB, a, B2(&e, TIR_KIND_SUB, b, c)), "a - (b - c)");
    expect_expr(ctx, B2(&e, TIR_KIND_SUB, B2(&e, TIR_KIND_SUB, a, b), c), "a - b - c");
    expect_expr(ctx, B2(&e, TIR_KIND_ADD, a, B2(&e, TIR_KIND_ADD, b, c)), "a + (b + c)");
    expect_expr(ctx, B2(&e, TIR_KIND_MUL, B2(&e, TIR_KIND_ADD, a, b), c), "(a + b) * c");
    expect_expr(ctx, B2(&e, TIR_KIND_ADD, a, B2(&e, TIR_KIND_MUL, b, c)), "a + b * c");
    expect_expr(ctx, B2(&e, TIR_KIND_FLOORDIV, a, B2(&e, TIR_KIND_MUL, b, c)), "a // (b * c)");
    expect_expr(ctx, B2(&e, TIR_KIND_MUL, B2(&e, TIR_KIND_FLOORDIV, a, b), c), "a // b * c");
    expect_expr(ctx, B2(&e, TIR_KIND_FLOORMOD, B2(&e, TIR_KIND_FLOORMOD, a, b), c), "a % b % c");
    expect_expr(ctx, B2(&e, TIR_KIND_SUB, a, tir_i32(ctx, -3)), "a - -3");
    expect_expr(ctx, B2(&e, TIR_KIND_MUL, tir_i32(ctx, -3), a), "-3 * a");
    expect_expr(ctx, B2(&e, TIR_KIND_DIV, a, b), "T.truncdiv(a, b)");
    expect_expr(ctx, B2(&e, TIR_KIND_MOD, B2(&e, TIR_KIND_ADD, a, b), c), "T.truncmod(a + b, c)");
    expect_expr(ctx, B2(&e, TIR_KIND_DIV, e.x, B2(&e, TIR_KIND_MUL, e.x, e.y)), "x / (x * y)");
    expect_expr(ctx, B2(&e, TIR_KIND_MIN, a, B2(&e, TIR_KIND_MAX, b, c)), "T.min(a, T.max(b, c))");
    expect_expr(ctx, B2(&e, TIR_KIND_LT, B2(&e, TIR_KIND_ADD, a, tir_i32(ctx, 1)), b), "a + 1 < b");
    expect_expr(ctx, B2(&e, TIR_KIND_EQ, B2(&e, TIR_KIND_LT, a, b), B2(&e, TIR_KIND_GE, b, c)),
                "(a < b) == (b >= c)");
    expect_expr(ctx, B2(&e, TIR_KIND_NE, e.p, B2(&e, TIR_KIND_LE, a, b)), "p != (a <= b)");
    expect_expr(ctx, tir_not_new(ctx, tir_and(ctx, e.p, e.q)), "not (p and q)");
    expect_expr(ctx, tir_and(ctx, tir_not_new(ctx, e.p), e.q), "not p and q");
    expect_expr(ctx, B2(&e, TIR_KIND_OR, tir_and(ctx, e.p, e.q), e.r), "p and q or r");
    expect_expr(ctx, tir_and(ctx, B2(&e, TIR_KIND_OR, e.p, e.q), e.r), "(p or q) and r");
    expect_expr(ctx, tir_and(ctx, e.p, tir_and(ctx, e.q, e.r)), "p and (q and r)");
    expect_expr(ctx, tir_not_new(ctx, B2(&e, TIR_KIND_EQ, a, b)), "not a == b");
    expect_expr(ctx, B2(&e, TIR_KIND_EQ, tir_not_new(ctx, e.p), e.q), "(not p) == q");
    expect_expr(ctx, tir_not_new(ctx, tir_not_new(ctx, e.p)), "not not p");
}

static void test_leaves_and_calls(void **st) {
    tir_ctx *ctx = *st;
    env e = make_env(ctx);
    expect_expr(ctx, tir_i32(ctx, 7), "7");
    expect_expr(ctx, tir_i32(ctx, INT32_MIN), "-2147483648");
    expect_expr(ctx, tir_int(ctx, TIR_I64, 5), "T.int64(5)");
    expect_expr(ctx, tir_int(ctx, TIR_I64, INT64_MIN), "T.int64(-9223372036854775808)");
    expect_expr(ctx, tir_int(ctx, TIR_U8, 255), "T.uint8(255)");
    expect_expr(ctx, tir_int(ctx, TIR_I8, -1), "T.int8(-1)");
    expect_expr(ctx, tir_bool(ctx, true), "True");
    expect_expr(ctx, tir_bool(ctx, false), "False");
    /* out of range: printed explicitly (and rejected by the parser) */
    expect_expr(ctx, tir_i32(ctx, 1LL << 32), "T.int32(4294967296)");
    expect_expr(ctx, tir_f32(ctx, 0), "T.float32(0)");
    expect_expr(ctx, tir_f32(ctx, 0.1), "T.float32(0.1)");
    expect_expr(ctx, tir_f32(ctx, (float)0.1), "T.float32(0.10000000149011612)");
    expect_expr(ctx, tir_f32(ctx, -1.5e-7), "T.float32(-1.5e-07)");
    expect_expr(ctx, tir_float(ctx, TIR_F64, -0.0), "T.float64(-0)");
    expect_expr(ctx, tir_float(ctx, TIR_F16, INFINITY), "T.float16(\"inf\")");
    expect_expr(ctx, tir_float(ctx, TIR_BF16, -INFINITY), "T.bfloat16(\"-inf\")");
    expect_expr(ctx, tir_f32(ctx, NAN), "T.float32(\"nan\")");
    uint64_t bits = 0x7ff0000000000001ull;
    double snan;
    memcpy(&snan, &bits, sizeof snan);
    expect_expr(ctx, tir_f32(ctx, snan), "T.float32(\"nan:0x7ff0000000000001\")");
    expect_expr(ctx, tir_select_new(ctx, e.p, e.x, e.y), "T.Select(p, x, y)");
    expect_expr(ctx, tir_cast_new(ctx, TIR_I64, tir_add(ctx, e.a, e.b)), "T.Cast(\"int64\", a + b)");
    const tir_expr *idx[2] = {e.a, tir_ramp_new(ctx, e.b, tir_i32(ctx, 2), 4)};
    expect_expr(ctx, tir_load(ctx, e.A, 2, idx), "A[a, T.Ramp(b, 2, 4)]");
    expect_expr(ctx, tir_load(ctx, e.Z, 0, NULL), "Z[()]");
    expect_expr(ctx, tir_broadcast_new(ctx, e.x, 16), "T.Broadcast(x, 16)");
    const tir_var *t = tir_var_new(ctx, "t", TIR_I32);
    expect_expr(ctx, tir_let_new(ctx, t, e.a, tir_mul(ctx, X(t), X(t))), "T.Let(t, a, t * t)");
    const tir_expr *fa[3] = {e.x, e.y, e.x};
    expect_expr(ctx, tir_call_new(ctx, TIR_F32, TIR_INTRIN_FMA, 3, fa), "T.fma(x, y, x)");
    expect_expr(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_SYNCTHREADS, 0, NULL), "T.syncthreads()");
    /* a dtype other than the default is spelled out */
    expect_expr(ctx, tir_call_new(ctx, TIR_F16, TIR_INTRIN_EXP, 1, &e.x),
                "T.call_intrin(\"float16\", \"exp\", x)");
    expect_expr(ctx, tir_call_new(ctx, TIR_I32, TIR_INTRIN_SYNCTHREADS, 0, NULL),
                "T.call_intrin(\"int32\", \"syncthreads\")");
    /* vector dtypes in casts */
    expect_expr(ctx, tir_cast_new(ctx, tir_dtype_with_lanes(TIR_F16, 4), tir_broadcast_new(ctx, e.x, 4)),
                "T.Cast(\"float16x4\", T.Broadcast(x, 4))");
}

/* Distinct variables sharing a name get suffixes; invalid names are made
 * into identifiers; reserved words are avoided. */
static void test_names(void **st) {
    tir_ctx *ctx = *st;
    const tir_var *x1 = tir_var_new(ctx, "x", TIR_I32), *x2 = tir_var_new(ctx, "x", TIR_I32);
    const tir_var *x_1 = tir_var_new(ctx, "x_1", TIR_I32);
    expect_expr(ctx, tir_add(ctx, tir_add(ctx, X(x1), X(x2)), tir_add(ctx, X(x_1), X(x1))),
                "x + x_1 + (x_1_1 + x)");
    const tir_var *kw = tir_var_new(ctx, "lambda", TIR_I32), *T = tir_var_new(ctx, "T", TIR_I32);
    const tir_var *odd = tir_var_new(ctx, "threadIdx.x", TIR_I32), *none = tir_var_new(ctx, NULL, TIR_I32);
    expect_expr(ctx, tir_add(ctx, tir_add(ctx, X(kw), X(T)), tir_add(ctx, X(odd), X(none))),
                "lambda_1 + T_1 + (threadIdx_x + v)");
}

/* ------------------------------------------------------- statements, buffers */

static void test_standalone_nodes(void **st) {
    tir_ctx *ctx = *st;
    int64_t sh[2] = {32, 32};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 2, sh, TIR_SCOPE_SHARED);
    assert_string_equal(tir_print(ctx, A), "A: T.Buffer((32, 32), \"float32\", scope=\"shared\")");
    const tir_buffer *Z = tir_buffer_simple(ctx, "Z", TIR_F16, 0, NULL, TIR_SCOPE_LOCAL);
    assert_string_equal(tir_print(ctx, Z), "Z: T.Buffer((), \"float16\", scope=\"local\")");
    /* a block realize outside any loop: its bindings cannot be remapped */
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *vi = tir_var_new(ctx, "vi", TIR_I32);
    tir_iter_var iv = {vi, {tir_i32(ctx, 0), tir_i32(ctx, 32)}, TIR_ITER_SPATIAL};
    const tir_expr *idx[2] = {X(vi), X(vi)};
    tir_block_desc d = {.name = "diag", .niters = 1, .iters = &iv,
                        .body = tir_store(ctx, A, tir_f32(ctx, 1), 2, idx)};
    const tir_block *blk = tir_block_new(ctx, &d);
    const tir_expr *val = X(i);
    const tir_stmt *br = tir_block_realize_new(ctx, 1, &val, NULL, blk);
    assert_string_equal(tir_print(ctx, br),
                        "with T.block(\"diag\"):\n"
                        "    vi = T.axis.spatial(32, i)\n"
                        "    A[vi, vi] = T.float32(1)\n");
    /* inside its loop it can */
    const tir_stmt *f = tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, 32), TIR_FOR_SERIAL, NULL, 0, NULL, br);
    assert_string_equal(tir_print(ctx, f),
                        "for i in T.serial(32):\n"
                        "    with T.block(\"diag\"):\n"
                        "        vi = T.axis.remap(\"S\", [i])\n"
                        "        A[vi, vi] = T.float32(1)\n");
    /* a Block on its own has no bindings to print */
    assert_string_equal(tir_print(ctx, blk),
                        "with T.block(\"diag\"):\n"
                        "    vi = T.axis.spatial(32)\n"
                        "    A[vi, vi] = T.float32(1)\n");
    assert_string_equal(tir_print(ctx, tir_evaluate_new(ctx, tir_i32(ctx, 0))), "T.evaluate(0)\n");
    assert_string_equal(tir_print(ctx, NULL), "None");
}

/* Iterators are grouped into T.axis.remap runs only where the binding is
 * the loop variable over exactly the loop's domain. */
static void test_remap_runs(void **st) {
    tir_ctx *ctx = *st;
    int64_t sh[4] = {4, 4, 4, 4};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 4, sh, TIR_SCOPE_GLOBAL);
    const tir_var *l[4], *v[4];
    const char *ln[4] = {"i", "j", "k", "l"}, *vn[4] = {"vi", "vj", "vk", "vl"};
    for (int n = 0; n < 4; n++) {
        l[n] = tir_var_new(ctx, ln[n], TIR_I32);
        v[n] = tir_var_new(ctx, vn[n], TIR_I32);
    }
    const tir_expr *z = tir_i32(ctx, 0), *four = tir_i32(ctx, 4);
    tir_iter_var iv[4] = {{v[0], {z, four}, TIR_ITER_SPATIAL},
                          {v[1], {z, tir_i32(ctx, 2)}, TIR_ITER_SPATIAL}, /* domain differs */
                          {v[2], {z, four}, TIR_ITER_REDUCE},
                          {v[3], {z, four}, TIR_ITER_SPATIAL}};
    const tir_expr *vals[4] = {X(l[0]), X(l[1]), X(l[2]), X(l[3])};
    const tir_expr *idx[4] = {X(v[0]), X(v[1]), X(v[2]), X(v[3])};
    tir_block_desc d = {.name = "b", .niters = 4, .iters = iv,
                        .body = tir_store(ctx, A, tir_f32(ctx, 0), 4, idx)};
    const tir_stmt *s = tir_block_realize_new(ctx, 4, vals, NULL, tir_block_new(ctx, &d));
    for (int n = 3; n >= 0; n--) s = tir_for_new(ctx, l[n], z, four, TIR_FOR_SERIAL, NULL, 0, NULL, s);
    assert_string_equal(tir_print(ctx, s),
                        "for i, j, k, l in T.grid(4, 4, 4, 4):\n"
                        "    with T.block(\"b\"):\n"
                        "        vi = T.axis.remap(\"S\", [i])\n"
                        "        vj = T.axis.spatial(2, j)\n"
                        "        vk, vl = T.axis.remap(\"RS\", [k, l])\n"
                        "        A[vi, vj, vk, vl] = T.float32(0)\n");
}

/* Only perfectly nested plain serial loops with a zero min fold into
 * T.grid, and not when an extent uses an outer loop's variable. */
static void test_grid_rules(void **st) {
    tir_ctx *ctx = *st;
    int64_t sh[1] = {64};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_I32, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32), *j = tir_var_new(ctx, "j", TIR_I32),
                  *k = tir_var_new(ctx, "k", TIR_I32), *l = tir_var_new(ctx, "l", TIR_I32);
    const tir_expr *z = tir_i32(ctx, 0), *e8 = tir_i32(ctx, 8);
    const tir_expr *idx = X(i);
    const tir_stmt *s = tir_store(ctx, A, tir_add(ctx, X(j), tir_add(ctx, X(k), X(l))), 1, &idx);
    tir_annot an = {.key = "pragma", .kind = TIR_ANNOT_INT, .i = 1};
    s = tir_for_new(ctx, l, z, e8, TIR_FOR_SERIAL, NULL, 1, &an, s);  /* annotated */
    s = tir_for_new(ctx, k, z, X(j), TIR_FOR_SERIAL, NULL, 0, NULL, s); /* triangular */
    s = tir_for_new(ctx, j, tir_i32(ctx, 1), e8, TIR_FOR_SERIAL, NULL, 0, NULL, s); /* min 1 */
    s = tir_for_new(ctx, i, z, e8, TIR_FOR_SERIAL, NULL, 0, NULL, s);
    assert_string_equal(tir_print(ctx, s),
                        "for i in T.serial(8):\n"
                        "    for j in T.serial(1, 9):\n"
                        "        for k in T.serial(j):\n"
                        "            for l in T.serial(8, annotations={\"pragma\": 1}):\n"
                        "                A[i] = j + (k + l)\n");
    const tir_stmt *t = tir_for_new(ctx, l, z, e8, TIR_FOR_SERIAL, NULL, 0, NULL, tir_store(ctx, A, X(l), 1, &idx));
    t = tir_for_new(ctx, k, z, X(i), TIR_FOR_PARALLEL, NULL, 0, NULL, t);
    t = tir_for_new(ctx, j, z, e8, TIR_FOR_SERIAL, NULL, 0, NULL, t);
    t = tir_for_new(ctx, i, z, e8, TIR_FOR_SERIAL, NULL, 0, NULL, t);
    assert_string_equal(tir_print(ctx, t),
                        "for i, j in T.grid(8, 8):\n"
                        "    for k in T.parallel(i):\n"
                        "        for l in T.serial(8):\n"
                        "            A[i] = l\n");
    /* symbolic min: stop written as min + extent */
    const tir_stmt *u = tir_for_new(ctx, l, X(i), tir_i32(ctx, 4), TIR_FOR_VECTORIZED, NULL, 0, NULL,
                                    tir_store(ctx, A, X(l), 1, &idx));
    u = tir_for_new(ctx, k, X(i), tir_add(ctx, X(j), tir_i32(ctx, 1)), TIR_FOR_UNROLLED, NULL, 0, NULL, u);
    assert_string_equal(tir_print(ctx, u),
                        "for k in T.unroll(i, i + (j + 1)):\n"
                        "    for l in T.vectorized(i, i + 4):\n"
                        "        A[i] = l\n");
}

/* The root block is elided only when the parser would add it back. */
static void test_root_rules(void **st) {
    tir_ctx *ctx = *st;
    int64_t sh[1] = {4};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_var *pa = tir_var_new(ctx, "A", TIR_HANDLE);
    const tir_expr *z = tir_i32(ctx, 0);
    const tir_stmt *st0 = tir_store(ctx, A, tir_f32(ctx, 1), 1, &z);
    tir_block_desc d = {.name = "root", .body = st0};
    const tir_stmt *root = tir_block_realize_new(ctx, 0, NULL, NULL, tir_block_new(ctx, &d));
    /* a root block without blocks inside is kept */
    const tir_prim_func *f = tir_prim_func_new(ctx, "f", 1, &pa, &A, root, 0, NULL);
    assert_string_equal(tir_print(ctx, f),
                        "@T.prim_func\n"
                        "def f(A: T.Buffer((4,), \"float32\")):\n"
                        "    with T.block(\"root\"):\n"
                        "        A[0] = T.float32(1)\n");
    /* no blocks, no root: nothing to say */
    f = tir_prim_func_new(ctx, "f", 1, &pa, &A, st0, 0, NULL);
    assert_string_equal(tir_print(ctx, f),
                        "@T.prim_func\n"
                        "def f(A: T.Buffer((4,), \"float32\")):\n"
                        "    A[0] = T.float32(1)\n");
    /* a predicate on the root block keeps it */
    tir_block_desc inner = {.name = "b", .body = st0};
    const tir_stmt *ib = tir_block_realize_new(ctx, 0, NULL, NULL, tir_block_new(ctx, &inner));
    tir_block_desc d2 = {.name = "root", .body = ib};
    const tir_stmt *root2 = tir_block_realize_new(ctx, 0, NULL, tir_bool(ctx, false), tir_block_new(ctx, &d2));
    f = tir_prim_func_new(ctx, "f", 1, &pa, &A, root2, 0, NULL);
    assert_string_equal(tir_print(ctx, f),
                        "@T.prim_func\n"
                        "def f(A: T.Buffer((4,), \"float32\")):\n"
                        "    with T.block(\"root\"):\n"
                        "        T.where(False)\n"
                        "        with T.block(\"b\"):\n"
                        "            A[0] = T.float32(1)\n");
}

/* ------------------------------------------------------------------- marks */

static void test_print_marked(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = ts_matmul(ctx);
    const tir_block *root = tir_as_tir_block_realize(f->body)->block;
    const tir_for *fi = tir_as_tir_for(root->body);
    const tir_for *fj = tir_as_tir_for(fi->body);
    const tir_for *fk = tir_as_tir_for(fj->body);
    const tir_block_realize *br = tir_as_tir_block_realize(fk->body);
    const tir_block *b = br->block;
    const tir_buffer_store *upd = tir_as_tir_buffer_store(b->body);
    const tir_binop *add = tir_as_tir_binop(upd->value);

    const void *m1[] = {br};
    const char *t = tir_print_marked(ctx, f, 1, m1);
    assert_non_null(strstr(t, "        with T.block(\"C\"):\n"
                              "        ^^^^^^^^^^^^^^^^^^\n"
                              "            vi, vj, vk"));
    /* the Block itself marks the same line */
    const void *m2[] = {b};
    assert_string_equal(tir_print_marked(ctx, f, 1, m2), t);

    /* a loop folded into T.grid: its variable; an expression: its text */
    const void *m3[] = {fj, add->b, b->init};
    t = tir_print_marked(ctx, f, 3, m3);
    assert_non_null(strstr(t, "    for i, j, k in T.grid(128, 128, 128):\n"
                              "           ^\n"
                              "        with"));
    assert_non_null(strstr(t, "                C[vi, vj] = T.float32(0)\n"
                              "                ^^^^^^^^^^^^^^^^^^^^^^^^\n"
                              "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"
                              "                                    ^^^^^^^^^^^^^^^^^^^^^\n"));
    /* only the marked lines gain a caret line */
    int lines = 0, plain = 0;
    for (const char *p = t; *p; p++) lines += *p == '\n';
    for (const char *p = tir_print(ctx, f); *p; p++) plain += *p == '\n';
    assert_int_equal(lines, plain + 3);
    /* two marks on one line share a caret line */
    const void *m4[] = {fi, fk};
    t = tir_print_marked(ctx, f, 2, m4);
    assert_non_null(strstr(t, "    for i, j, k in T.grid(128, 128, 128):\n"
                              "        ^     ^\n"));
    /* an unfolded loop marks its whole line; marks not in the tree do nothing */
    const void *m5[] = {tir_i32(ctx, 3)};
    assert_string_equal(tir_print_marked(ctx, f, 1, m5), tir_print(ctx, f));
    assert_string_equal(tir_print_marked(ctx, f, 0, NULL), tir_print(ctx, f));
    /* marking an expression printed on its own */
    const void *m6[] = {add->a};
    assert_string_equal(tir_print_marked(ctx, add, 1, m6),
                        "C[vi, vj] + A[vi, vk] * B[vk, vj]\n"
                        "^^^^^^^^^\n");
}

static void test_print_marked_lowered(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = ts_lowered(ctx);
    const tir_for *tx = tir_as_tir_for(tir_as_tir_for(f->body)->body);
    const tir_allocate *sh = tir_as_tir_allocate(tx->body);
    const tir_seq *q = tir_as_tir_seq(sh->body);
    const void *marks[] = {tx, sh, q, q->stmts[4]};
    const char *t = tir_print_marked(ctx, f, 4, marks);
    assert_non_null(strstr(t, "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
                              "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
                              "            Sh = T.allocate((128,), \"float32\", scope=\"shared\")\n"
                              "            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"));
    /* a SeqStmt marks its first line; stmts[4] is T.syncthreads() */
    assert_non_null(strstr(t, "            with T.allocate((4,), \"float32\", scope=\"local\") as L:\n"
                              "            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"));
    assert_non_null(strstr(t, "            T.syncthreads()\n"
                              "            ^^^^^^^^^^^^^^^\n"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_golden_samples, setup, teardown),
        cmocka_unit_test_setup_teardown(test_golden_issue_matmul, setup, teardown),
        cmocka_unit_test_setup_teardown(test_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leaves_and_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_standalone_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remap_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grid_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_root_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_print_marked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_print_marked_lowered, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
