/* Tensor-core codegen (src/codegen/cg_tensor.c): hand-built lowered
 * one-warp kernels (tests/cg_tc_kernels.c) with lane_id, mma_sync (bf16,
 * f16, tf32) and ldmatrix (x1, x2.trans, x4, x4.trans) give PTX with
 * those instructions, with ssa_locals on and off, that ptxas (when
 * installed) accepts with no spills and no stack frame; a target without
 * the instructions and malformed operands give user errors, never LLVM's
 * "Cannot select".  TF32 inputs are rounded to nearest even: cvt.rn.tf32.f32
 * where the target has it (sm_90, PTX 7.8), an integer sequence before,
 * which JIT-compiled for the host gives ir_tf32_round's bits on every
 * tie pattern and 2^20 random ones.  Links the static library for
 * cg_check with a target that minitir does not build for (sm_75).  The
 * results are checked on a GPU by tests/test_codegen_gpu.c, and on the
 * CPU by running the sm_80 PTX in the PTX interpreter (tests/
 * ptx_interp.c: mma and ldmatrix per warp) against tcg_reference: bit for
 * bit on small integers (every sum exact), within a relative 1e-5 of
 * max(|ref|, 1) on fractions (the interpreter sums in float32, the
 * reference in double). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg_hostjit.h"
#include "cg_internal.h"
#include "ir/interp_internal.h"
#include "cg_tc_kernels.h"
#include "minitir/runtime.h"
#include "ptx_interp.h"
#include "ptxas_check.h"

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static const tir_module *compile(tir_ctx *ctx, const tir_prim_func *f, const char *arch,
                                 bool ssa_locals) {
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.arch = arch;
    o.ssa_locals = ssa_locals;
    o.keep_llvm_ir = true;
    const tir_module *m = NULL;
    if (tir_codegen(ctx, f, &o, &m) != TIR_OK)
        fail_msg("codegen of %s for %s failed: %s", f->name, arch, tir_ctx_error(ctx));
    return m;
}

static const char *mma_form(tir_dtype in) {
    return tir_dtype_eq(in, TIR_F32)   ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
           : tir_dtype_eq(in, TIR_F16) ? "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
                                       : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
}

/* TF32 inputs are rounded to nearest even: by cvt.rn.tf32.f32 on sm_90,
 * by cg_tf32_round_ints' integer sequence on sm_80 (its constants: 4095,
 * the mask 0xffffe000, the exponent 0x7f800000); never ties away. */
static void check_tf32_rounding(const char *ptx, bool tf32, const char *arch) {
    assert_null(strstr(ptx, "cvt.rna"));
    bool rn = tf32 && cg_arch_sm(arch) >= 90;
    if (rn) assert_non_null(strstr(ptx, "cvt.rn.tf32.f32"));
    else assert_null(strstr(ptx, "cvt.rn.tf32.f32"));
    bool ints = tf32 && !rn;
    const char *consts[3] = {", 4095;", ", -8192;", ", 2139095040;"};
    for (int i = 0; i < 3; i++)
        if (ints != (strstr(ptx, consts[i]) != NULL))
            fail_msg("%s: the constant '%s' is%s in the PTX", arch, consts[i], ints ? " not" : "");
}

/* Element k of a buffer of dtype t (bf16, f16 or float32) set to x, which
 * it holds exactly; x back. */
static float put_elem(tir_dtype t, void *p, int64_t k, float x) {
    if (tir_dtype_eq(t, TIR_F32)) return ((float *)p)[k] = x;
    uint16_t h = tir_dtype_eq(t, TIR_F16) ? tir_rt_f32_to_f16(x) : tir_rt_f32_to_bf16(x);
    ((uint16_t *)p)[k] = h;
    return tir_dtype_eq(t, TIR_F16) ? tir_rt_f16_to_f32(h) : tir_rt_bf16_to_f32(h);
}

/* m's PTX in the PTX interpreter on A, B, C of f (ints: small integers,
 * else fractions) against tcg_reference. */
static void run_in_interp(tir_ctx *ctx, const tcg_opts *o, const tir_prim_func *f,
                          const tir_module *m, bool ints) {
    void *buf[3];
    float *val[3];
    size_t bytes[3];
    tir_rt_rng rng = tir_rt_rng_seed(99 + (uint64_t)o->K + (uint64_t)ints);
    for (int i = 0; i < 3; i++) {
        const tir_buffer *b = f->buffer_map[i];
        int64_t n = tir_buffer_const_size(b);
        bytes[i] = (size_t)n * tir_dtype_bytes(b->dtype);
        buf[i] = malloc(bytes[i]), val[i] = malloc((size_t)n * sizeof(float));
        for (int64_t k = 0; k < n; k++) {
            float u = tir_rt_rng_uniform(&rng); /* [-1, 1) */
            val[i][k] = put_elem(b->dtype, buf[i], k, ints ? (float)(int)(u * 8) : u * 4);
        }
    }
    tcg_reference(o, val[0], val[1], val[2]);
    ptx_arg pa[3];
    tir_arg ta[3];
    for (int i = 0; i < 3; i++) pa[i] = (ptx_arg){true, buf[i], bytes[i], 0}, ta[i] = (tir_arg){buf[i], 0};
    int64_t grid[3], block[3];
    if (tir_module_launch_dims(ctx, m, 3, ta, grid, block) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    char err[512];
    ptx_interp_stats st;
    if (ptx_interp_run_ex(m->ptx, m->kernel_name, grid, block, pa, 3, m->dyn_shared_bytes, NULL, &st,
                          err, sizeof err))
        fail_msg("PTX interpreter: %s\n%s", err, m->ptx);
    assert_true(st.warp_ops >= o->K / (tir_dtype_eq(o->in, TIR_F32) ? 8 : 16));
    const float *c = buf[2];
    for (int64_t k = 0; k < tir_buffer_const_size(f->buffer_map[2]); k++) {
        double e = fabs((double)val[2][k] - c[k]) / fmax(fabs(val[2][k]), 1.0);
        if (ints ? c[k] != val[2][k] : !(e <= 1e-5))
            fail_msg("PTX interpreter: C[%lld] = %.9g, the reference %.9g", (long long)k, c[k], val[2][k]);
    }
    for (int i = 0; i < 3; i++) free(buf[i]), free(val[i]);
}

/* The PTX of one variant for sm_80 and sm_90, ssa_locals on and off; the
 * sm_80 PTX also runs in the PTX interpreter. */
static void check_variant(const tcg_opts *o) {
    static const char *const arches[2] = {"sm_80", "sm_90"};
    for (int a = 0; a < 2; a++)
        for (int ssa = 0; ssa < 2; ssa++) {
            tir_ctx *ctx = tir_ctx_create();
            const tir_module *m = compile(ctx, tcg_mma(ctx, o), arches[a], ssa);
            const char *ptx = m->ptx;
            bool tf32 = tir_dtype_eq(o->in, TIR_F32);
            int64_t steps = o->K / (tf32 ? 8 : 16);
            printf("# %s K %lld ntiles %d%s%s%s, %s, ssa_locals %d\n",
                   tf32 ? "tf32" : tir_dtype_eq(o->in, TIR_F16) ? "f16" : "bf16",
                   (long long)o->K, o->ntiles, o->unroll_k ? " unrolled" : "",
                   o->shared ? " shared" : "", o->a_x1 ? " a_x1" : "", arches[a], ssa);
            assert_non_null(strstr(ptx, "%laneid"));
            /* LLVM 19 does not declare mma or ldmatrix convergent: the calls are */
            assert_non_null(strstr(m->llvm_ir, "{ convergent }"));
            assert_non_null(strstr(ptx, mma_form(o->in)));
            /* an unrolled k loop: one mma per k step and n tile */
            if (o->unroll_k) assert_int_equal(count(ptx, "mma.sync"), steps * o->ntiles);
            check_tf32_rounding(ptx, tf32, arches[a]);
            /* one conversion per fragment register, however many mma read it */
            if (tf32 && o->unroll_k)
                assert_int_equal(count(ptx, a ? "cvt.rn.tf32.f32" : ", -8192;"),
                                 steps * (4 + 2 * o->ntiles));
            if (o->shared) {
                const char *a_form = o->a_x1 ? "ldmatrix.sync.aligned.m8n8.x1.shared.b16"
                                             : "ldmatrix.sync.aligned.m8n8.x4.shared.b16";
                const char *b_form = o->ntiles == 1
                                         ? "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"
                                         : "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16";
                assert_non_null(strstr(ptx, a_form));
                assert_non_null(strstr(ptx, b_form));
                if (o->unroll_k)
                    assert_int_equal(count(ptx, "ldmatrix"), steps * (o->a_x1 ? 5 : 2));
            } else {
                assert_null(strstr(ptx, "ldmatrix"));
            }
            /* the fragments stay in registers: no local memory */
            assert_null(strstr(ptx, "ld.local"));
            assert_null(strstr(ptx, "st.local"));
            if (a == 0) {
                run_in_interp(ctx, o, tcg_mma(ctx, o), m, true);
                run_in_interp(ctx, o, tcg_mma(ctx, o), m, false);
            }
            ptxas_info pi;
            if (ptxas_assemble(m, &pi)) {
                assert_int_equal(pi.spill_stores, 0);
                assert_int_equal(pi.spill_loads, 0);
                assert_int_equal(pi.stack, 0);
            }
            tir_ctx_destroy(ctx);
        }
}

static void test_mma_global(void **st) {
    (void)st;
    const tcg_opts v[] = {
        {.in = TIR_BF16, .K = 32, .ntiles = 1},
        {.in = TIR_F16, .K = 32, .ntiles = 2, .unroll_k = true},
        {.in = TIR_F32, .K = 16, .ntiles = 1},
        {.in = TIR_F32, .K = 16, .ntiles = 2, .unroll_k = true},
        {.in = TIR_BF16, .K = 48, .ntiles = 2, .unroll_k = true},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) check_variant(&v[i]);
}

static void test_mma_ldmatrix(void **st) {
    (void)st;
    const tcg_opts v[] = {
        {.in = TIR_BF16, .K = 32, .ntiles = 1, .shared = true},
        {.in = TIR_F16, .K = 32, .ntiles = 2, .shared = true, .unroll_k = true},
        {.in = TIR_F16, .K = 16, .ntiles = 1, .shared = true, .a_x1 = true},
        {.in = TIR_BF16, .K = 32, .ntiles = 2, .shared = true, .a_x1 = true, .unroll_k = true},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) check_variant(&v[i]);
}

/* cg_check against the target named arch (sm_80's limits). */
static tir_status check_for(tir_ctx *ctx, const tir_prim_func *f, const char *arch) {
    tir_target t = *tir_target_find("sm_80");
    t.arch = arch;
    cg_info info;
    return cg_check(ctx, f, &t, &info);
}

static void test_arch_gate(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tcg_opts g = {.in = TIR_BF16, .K = 16, .ntiles = 1};
    const tcg_opts s = {.in = TIR_F16, .K = 16, .ntiles = 1, .shared = true};
    const tir_prim_func *fg = tcg_mma(ctx, &g), *fs = tcg_mma(ctx, &s);
    /* through tir_codegen: minitir builds for sm_80 and later only */
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.arch = "sm_75";
    const tir_module *m = NULL;
    assert_int_equal(tir_codegen(ctx, fg, &o, &m), TIR_ERR_UNSUPPORTED);
    assert_null(m);
    assert_non_null(strstr(tir_ctx_error(ctx), "sm_75"));
    /* the tensor-core gate itself, before any LLVM object exists */
    assert_int_equal(check_for(ctx, fg, "sm_75"), TIR_ERR_ARCH);
    printf("# %s\n", tir_ctx_error(ctx));
    assert_non_null(strstr(tir_ctx_error(ctx), "mma_sync"));
    assert_non_null(strstr(tir_ctx_error(ctx), "sm_75"));
    assert_int_equal(check_for(ctx, fs, "sm_70"), TIR_ERR_ARCH);
    assert_non_null(strstr(tir_ctx_error(ctx), "ldmatrix"));
    assert_non_null(strstr(tir_ctx_error(ctx), "sm_70"));
    assert_int_equal(check_for(ctx, fg, "sm_80"), TIR_OK);
    assert_int_equal(check_for(ctx, fs, "sm_90a"), TIR_OK);
    assert_int_equal(cg_arch_sm("sm_90a"), 90);
    assert_int_equal(cg_arch_sm("sm_75"), 75);
    assert_int_equal(cg_arch_sm("gfx90a"), 0);
    tir_ctx_destroy(ctx);
}

/* shfl_xor in codegen: shfl.sync.bfly.b32 over the whole warp; sm_70 and
 * later; a float32 value and a constant lane mask 1, 2, 4, 8 or 16. */
static const tir_prim_func *shfl_func(tir_ctx *ctx, const char *value, const char *mask) {
    char text[1024];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def shfl(X: T.Buffer((32,), \"float32\"), Y: T.Buffer((32,), \"float32\")):\n"
             "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
             "        Y[tx] = T.Cast(\"float32\", T.call_intrin(\"%s\", \"shfl_xor\", %s, %s))\n",
             strstr(value, "int") ? "int32" : "float32", value, mask);
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("%s\n%s", tir_ctx_error(ctx), text);
    return f;
}

static void test_shfl_xor(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = shfl_func(ctx, "X[tx]", "2");
    assert_int_equal(check_for(ctx, f, "sm_70"), TIR_OK);
    assert_int_equal(check_for(ctx, f, "sm_61"), TIR_ERR_ARCH);
    assert_non_null(strstr(tir_ctx_error(ctx), "shfl_xor needs a GPU of sm_70"));
    assert_int_equal(check_for(ctx, shfl_func(ctx, "X[tx]", "3"), "sm_90"), TIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tir_ctx_error(ctx), "lane mask must be the constant 1, 2, 4, 8"));
    assert_int_equal(check_for(ctx, shfl_func(ctx, "X[tx]", "tx % 2 + 1"), "sm_90"),
                     TIR_ERR_UNSUPPORTED);
    assert_int_equal(check_for(ctx, shfl_func(ctx, "T.Cast(\"int32\", X[tx])", "1"), "sm_90"),
                     TIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tir_ctx_error(ctx), "float32 only"));
    const tir_module *m = NULL;
    if (tir_codegen(ctx, f, NULL, &m) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    assert_non_null(strstr(m->ptx, "shfl.sync.bfly.b32"));
    assert_non_null(strstr(m->ptx, ", 2, 31, -1;"));
    tir_ctx_destroy(ctx);
}

/* ------------------------------------------------ malformed operands */

static const tir_buffer *buf(tir_ctx *ctx, const char *name, tir_dtype t, int64_t n, tir_scope s) {
    return tir_buffer_simple(ctx, name, t, 1, &n, s);
}
static const tir_expr *addr(tir_ctx *ctx, const tir_buffer *b, const tir_expr *i) {
    const tir_expr *l = tir_load(ctx, b, 1, &i);
    return tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &l);
}

/* One warp of `threads` lanes: Evaluate(call); C[tx] = float32(R[0]),
 * with the buffers allocs[0..n) allocated (a global one is a parameter
 * after C). */
static const tir_prim_func *one_call(tir_ctx *ctx, const tir_expr *call, const tir_buffer *R,
                                     int n, const tir_buffer *const *allocs, int threads) {
    const tir_buffer *C = buf(ctx, "C", TIR_F32, 64, TIR_SCOPE_GLOBAL);
    const tir_var *tx = tir_var_new(ctx, "tx", TIR_I32);
    const tir_expr *r0 = tir_i32(ctx, 0);
    const tir_stmt *s[2] = {tir_evaluate_new(ctx, call),
                            tir_store(ctx, C, tir_cast_new(ctx, TIR_F32, tir_load(ctx, R, 1, &r0)),
                                      1, (const tir_expr *[]){&tx->base})};
    const tir_stmt *body = tir_seq_new(ctx, 2, s);
    const tir_buffer *params[2] = {C, NULL};
    int np = 1;
    for (int i = n - 1; i >= 0; i--) {
        if (allocs[i]->scope == TIR_SCOPE_GLOBAL) params[np++] = allocs[i];
        else body = tir_allocate_new(ctx, allocs[i], body);
    }
    body = tir_for_new(ctx, tx, tir_i32(ctx, 0), tir_i32(ctx, threads), TIR_FOR_THREAD_BINDING,
                       "threadIdx.x", 0, NULL, body);
    const tir_var *pv[2];
    for (int i = 0; i < np; i++) pv[i] = tir_var_new(ctx, params[i]->name, TIR_HANDLE);
    return tir_prim_func_new(ctx, "tc_bad", np, pv, params, body, 0, NULL);
}

/* mma_sync(&Ld[0], &La[oa], &Lb[0]) with 8-element Lb and Ld, na-element La. */
static const tir_prim_func *one_mma_at(tir_ctx *ctx, tir_dtype ta, tir_dtype tb, tir_dtype td,
                                       const tir_expr *oa, int64_t na, tir_scope sa, int threads) {
    const tir_buffer *La = buf(ctx, "La", ta, na, sa), *Lb = buf(ctx, "Lb", tb, 8, TIR_SCOPE_LOCAL),
                     *Ld = buf(ctx, "Ld", td, 8, TIR_SCOPE_LOCAL);
    const tir_expr *args[3] = {addr(ctx, Ld, tir_i32(ctx, 0)), addr(ctx, La, oa),
                               addr(ctx, Lb, tir_i32(ctx, 0))};
    const tir_expr *call = tir_call_new(ctx, TIR_VOID, TIR_INTRIN_MMA_SYNC, 3, args);
    const tir_buffer *allocs[3] = {La, Lb, Ld};
    return one_call(ctx, call, Ld, 3, allocs, threads);
}

static const tir_prim_func *one_mma(tir_ctx *ctx, tir_dtype ta, tir_dtype tb, tir_dtype td,
                                    int64_t oa, tir_scope sa, int threads) {
    return one_mma_at(ctx, ta, tb, td, tir_i32(ctx, oa), 8, sa, threads);
}

/* ldmatrix(trans, num, &L[0], &S[lane_id() * 8]). */
static const tir_prim_func *one_ldmatrix(tir_ctx *ctx, int trans, int num, tir_dtype td,
                                         tir_dtype ts, tir_scope ss) {
    const tir_buffer *L = buf(ctx, "L", td, 8, TIR_SCOPE_LOCAL), *S = buf(ctx, "S", ts, 256, ss);
    const tir_expr *lane = tir_call_new(ctx, TIR_I32, TIR_INTRIN_LANE_ID, 0, NULL);
    const tir_expr *args[4] = {tir_i32(ctx, trans), tir_i32(ctx, num),
                               addr(ctx, L, tir_i32(ctx, 0)),
                               addr(ctx, S, tir_mul(ctx, lane, tir_i32(ctx, 8)))};
    const tir_expr *call = tir_call_new(ctx, TIR_VOID, TIR_INTRIN_LDMATRIX, 4, args);
    const tir_buffer *allocs[2] = {L, S};
    return one_call(ctx, call, L, 2, allocs, 32);
}

/* f is refused with TIR_ERR_UNSUPPORTED and a message containing want1
 * and want2 (NULL: anything). */
static void refused(tir_ctx *ctx, const tir_prim_func *f, const char *want1, const char *want2) {
    const tir_module *m = NULL;
    assert_int_equal(tir_codegen(ctx, f, NULL, &m), TIR_ERR_UNSUPPORTED);
    const char *e = tir_ctx_error(ctx);
    printf("# %s\n", e);
    if (!strstr(e, want1) || (want2 && !strstr(e, want2)))
        fail_msg("message lacks '%s' / '%s': %s", want1, want2 ? want2 : "", e);
}

static void compiles(tir_ctx *ctx, const tir_prim_func *f) {
    const tir_module *m = NULL;
    if (tir_codegen(ctx, f, NULL, &m) != TIR_OK) fail_msg("%s", tir_ctx_error(ctx));
    ptxas_check(m);
}

static void test_bad_mma(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_scope L = TIR_SCOPE_LOCAL;
    compiles(ctx, one_mma(ctx, TIR_BF16, TIR_BF16, TIR_F32, 0, L, 32));
    compiles(ctx, one_mma(ctx, TIR_F32, TIR_F32, TIR_F32, 4, L, 64));
    /* registers at a variable offset: through memory (not SSA values) */
    const tir_expr *lane = tir_call_new(ctx, TIR_I32, TIR_INTRIN_LANE_ID, 0, NULL);
    const tir_expr *var = tir_mul(ctx, tir_floormod(ctx, lane, tir_i32(ctx, 2)), tir_i32(ctx, 8));
    const tir_module *m = NULL;
    if (tir_codegen(ctx, one_mma_at(ctx, TIR_F16, TIR_F16, TIR_F32, var, 16, L, 32), NULL, &m))
        fail_msg("%s", tir_ctx_error(ctx));
    ptxas_info pi;
    if (ptxas_assemble(m, &pi)) printf("# stack frame %d bytes\n", pi.stack);
    refused(ctx, one_mma(ctx, TIR_F16, TIR_BF16, TIR_F32, 0, L, 32), "'La' is float16",
            "'Lb' is bfloat16");
    refused(ctx, one_mma(ctx, TIR_I32, TIR_I32, TIR_F32, 0, L, 32), "'La' is int32", NULL);
    refused(ctx, one_mma(ctx, TIR_BF16, TIR_BF16, TIR_F16, 0, L, 32),
            "accumulator 'Ld' is float16", NULL);
    /* 8 registers from La[4] of 8 */
    refused(ctx, one_mma(ctx, TIR_BF16, TIR_BF16, TIR_F32, 4, L, 32), "La[4 .. 12)", NULL);
    refused(ctx, one_mma(ctx, TIR_BF16, TIR_BF16, TIR_F32, 0, TIR_SCOPE_SHARED, 32), "'La'",
            "scope shared");
    refused(ctx, one_mma(ctx, TIR_BF16, TIR_BF16, TIR_F32, 0, L, 48), "mma_sync",
            "not a multiple of 32");
    tir_ctx_destroy(ctx);
}

static void test_bad_ldmatrix(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_scope S = TIR_SCOPE_SHARED;
    compiles(ctx, one_ldmatrix(ctx, 1, 4, TIR_BF16, TIR_BF16, S));
    compiles(ctx, one_ldmatrix(ctx, 0, 1, TIR_F16, TIR_F16, S));
    /* 32-bit rows (TF32 A): each lane's i32 is one float; no .trans */
    compiles(ctx, one_ldmatrix(ctx, 0, 4, TIR_F32, TIR_F32, S));
    refused(ctx, one_ldmatrix(ctx, 1, 4, TIR_F32, TIR_F32, S), ".trans of float32 'L'", NULL);
    /* ldmatrix moves bits: integer rows too, which tir_lower and the
     * simulator take (refused here before: found by the copy fuzzer's
     * PTX check, twenty-seventh session) */
    compiles(ctx, one_ldmatrix(ctx, 0, 4, TIR_I32, TIR_I32, S));
    refused(ctx, one_ldmatrix(ctx, 1, 4, TIR_I32, TIR_I32, S), ".trans of int32 'L'", NULL);
    refused(ctx, one_ldmatrix(ctx, 0, 4, TIR_I64, TIR_I64, S), "'L' is int64",
            "16- or 32-bit");
    refused(ctx, one_ldmatrix(ctx, 0, 4, TIR_F16, TIR_BF16, S), "'S' is bfloat16",
            "'L' is float16");
    refused(ctx, one_ldmatrix(ctx, 0, 3, TIR_F16, TIR_F16, S), "ldmatrix", "1, 2 or 4");
    refused(ctx, one_ldmatrix(ctx, 2, 4, TIR_F16, TIR_F16, S), "ldmatrix", "0 or 1");
    refused(ctx, one_ldmatrix(ctx, 0, 4, TIR_F16, TIR_F16, TIR_SCOPE_GLOBAL), "'S'",
            "want shared");
    tir_ctx_destroy(ctx);
}

static void test_lane_id_type(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_buffer *L = buf(ctx, "L", TIR_I64, 8, TIR_SCOPE_LOCAL);
    const tir_expr *lane = tir_call_new(ctx, TIR_I64, TIR_INTRIN_LANE_ID, 0, NULL);
    const tir_buffer *allocs[1] = {L};
    /* Evaluate(lane_id() + 1) then C[tx] = L[0]: the int64 lane_id is refused */
    const tir_expr *e = tir_add(ctx, lane, tir_cast_new(ctx, TIR_I64, tir_i32(ctx, 1)));
    refused(ctx, one_call(ctx, e, L, 1, allocs, 32), "lane_id() must be int32", NULL);
    compiles(ctx, one_call(ctx, tir_call_new(ctx, TIR_I32, TIR_INTRIN_LANE_ID, 0, NULL), L, 1,
                           allocs, 32));
    tir_ctx_destroy(ctx);
}

/* ------------------------------------------------ TF32 rounding */

/* Where cvt.rn.tf32.f32 exists: sm_90 and later with PTX 7.8 and later. */
static void test_tf32_gate(void **st) {
    (void)st;
    assert_true(cg_has_cvt_rn_tf32("sm_90", "+ptx78"));
    assert_true(cg_has_cvt_rn_tf32("sm_90a", "+ptx80"));
    assert_true(cg_has_cvt_rn_tf32("sm_90", "+ptx60,+ptx81"));
    assert_false(cg_has_cvt_rn_tf32("sm_90", "+ptx77"));
    assert_false(cg_has_cvt_rn_tf32("sm_90", "+ptx78,+ptx70")); /* the last one counts */
    assert_false(cg_has_cvt_rn_tf32("sm_90", "+ptx7"));
    assert_false(cg_has_cvt_rn_tf32("sm_90", "+ptx78x"));
    assert_false(cg_has_cvt_rn_tf32("sm_90", ""));
    assert_false(cg_has_cvt_rn_tf32("sm_90", NULL));
    assert_false(cg_has_cvt_rn_tf32("sm_89", "+ptx78"));
    assert_false(cg_has_cvt_rn_tf32("sm_80", "+ptx81"));
    assert_false(cg_has_cvt_rn_tf32(NULL, "+ptx78"));
    /* through tir_codegen: the targets' own features, and given ones */
    const tcg_opts v = {.in = TIR_F32, .K = 16, .ntiles = 1};
    const char *const arches[4] = {"sm_86", "sm_89", "sm_90a", "sm_90"};
    const char *const features[4] = {NULL, NULL, NULL, "+ptx80"};
    for (int i = 0; i < 4; i++) {
        tir_ctx *ctx = tir_ctx_create();
        tir_codegen_opts o;
        tir_codegen_opts_init(&o);
        o.arch = arches[i];
        o.features = features[i];
        const tir_module *m = NULL;
        if (tir_codegen(ctx, tcg_mma(ctx, &v), &o, &m) != TIR_OK)
            fail_msg("%s: %s", arches[i], tir_ctx_error(ctx));
        check_tf32_rounding(m->ptx, true, arches[i]);
        ptxas_check(m);
        tir_ctx_destroy(ctx);
    }
}

/* cg_tf32_round_ints in a function i32 f(float), JIT-compiled (after
 * default<O2>, as a kernel's would be optimised) for the host. */
typedef uint32_t (*tf32_fn)(float);
static LLVMOrcLLJITRef jit_tf32(tf32_fn *out) {
    cg_llvm_init();
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMOrcLLJITRef jit;
    assert_null(LLVMOrcCreateLLJIT(&jit, NULL));
    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef lc = LLVMOrcThreadSafeContextGetContext(tsc);
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("tf32", lc);
    LLVMSetTarget(mod, LLVMOrcLLJITGetTripleString(jit));
    LLVMSetDataLayout(mod, LLVMOrcLLJITGetDataLayoutStr(jit));
    LLVMTypeRef f32 = LLVMFloatTypeInContext(lc);
    LLVMValueRef fn = LLVMAddFunction(
        mod, "tf32_round", LLVMFunctionType(LLVMInt32TypeInContext(lc), &f32, 1, 0));
    LLVMBuilderRef b = LLVMCreateBuilderInContext(lc);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(lc, fn, "entry"));
    LLVMBuildRet(b, cg_tf32_round_ints(b, LLVMGetParam(fn, 0)));
    LLVMDisposeBuilder(b);
    char *err = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) fail_msg("invalid module: %s", err);
    LLVMDisposeMessage(err);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    assert_null(LLVMRunPasses(mod, "default<O2>", NULL, po));
    LLVMDisposePassBuilderOptions(po);
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
    LLVMOrcDisposeThreadSafeContext(tsc);
    assert_null(LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm));
    LLVMOrcExecutorAddress addr = 0;
    assert_null(LLVMOrcLLJITLookup(jit, &addr, "tf32_round"));
    *out = (tf32_fn)(uintptr_t)addr;
    return jit;
}

static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* One bit pattern: the emitted sequence (JIT), the interpreter's and the
 * simulator's ir_tf32_round and the GPU tests' C transcription (tcg_tf32)
 * give the same bits. */
static void agree(tf32_fn f, uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    uint32_t j = f(x), i = bits_of(ir_tf32_round(x)), c = bits_of(tcg_tf32(x));
    if (j != i || j != c)
        fail_msg("tf32(0x%08x): emitted 0x%08x, ir_tf32_round 0x%08x, tcg_tf32 0x%08x", u, j, i, c);
}

/* The sm_80 emulation computes ir_tf32_round's bits: on every low 14-bit
 * pattern (the kept lowest bit, the half bit and below: all ties) under
 * each sign, the exponents 0 (subnormal), 1, 127, 254 (to Inf) and 255
 * (Inf, NaN) and three high mantissas (zero, all ones: a carry into the
 * exponent, random), then on 2^20 random patterns. */
static void test_tf32_emulation(void **st) {
    (void)st;
    tf32_fn f;
    LLVMOrcLLJITRef jit = jit_tf32(&f);
    uint32_t x = 0x2545f491u; /* xorshift32 */
    printf("# seed 0x%08x\n", x);
    static const uint32_t exps[5] = {0, 1, 127, 254, 255};
    for (uint32_t sign = 0; sign < 2; sign++)
        for (int e = 0; e < 5; e++)
            for (int h = 0; h < 3; h++) {
                x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                /* mantissa bits 14..22 */
                uint32_t high = h == 0 ? 0 : h == 1 ? 0x1ffu : x & 0x1ffu;
                for (uint32_t low = 0; low < 0x4000u; low++)
                    agree(f, sign << 31 | exps[e] << 23 | high << 14 | low);
            }
    for (int i = 0; i < 1 << 20; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        agree(f, x);
    }
    LLVMOrcDisposeLLJIT(jit);
}

/* The host JIT (tests only) cannot run warp collectives. */
static void test_host_refused(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tcg_opts o = {.in = TIR_BF16, .K = 16, .ntiles = 1};
    cg_jit *j = NULL;
    assert_int_equal(cg_jit_compile(ctx, tcg_mma(ctx, &o), NULL, &j), TIR_ERR_UNSUPPORTED);
    assert_null(j);
    assert_non_null(strstr(tir_ctx_error(ctx), "cannot run on the host"));
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mma_global),   cmocka_unit_test(test_mma_ldmatrix),
        cmocka_unit_test(test_arch_gate), cmocka_unit_test(test_shfl_xor),    cmocka_unit_test(test_bad_mma),
        cmocka_unit_test(test_bad_ldmatrix), cmocka_unit_test(test_lane_id_type),
        cmocka_unit_test(test_host_refused), cmocka_unit_test(test_tf32_gate),
        cmocka_unit_test(test_tf32_emulation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
