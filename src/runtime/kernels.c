/* kernels.c: the runtime's own GPU kernels, hand-written PTX loaded through
 * the driver like any generated module:
 *   tir_rt_bias_epilogue  D = min(max(C + bias[j], lo), hi), the reference
 *                         for fused matmul epilogues (cuBLAS's own GEMM has
 *                         no such epilogue); ReLU is lo = 0, hi = +inf
 *   tir_rt_gemm_ref_f64   a naive float64 GEMM, the reference for sizes too
 *                         big for the host
 *   tir_rt_hold           one thread that spins for a given number of
 *                         nanoseconds of %globaltimer: bench.c queues it
 *                         before the samples so that they run back to back
 * The PTX targets sm_80 (max.NaN/min.NaN need it) and is JIT-compiled for
 * the device on first use.  The NaN-propagating min/max matter: an output
 * element a kernel never wrote is NaN poison, and plain max.f32 would turn
 * it into 0 under ReLU and let it pass.
 */
#include <math.h>
#include <string.h>

#include "rt_internal.h"

static const char builtin_ptx[] =
    ".version 7.8\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    "// D[i] = min.NaN(max.NaN(C[i] + bias[i % n], lo), hi), i < m*n, grid-stride loop.\n"
    ".visible .entry tir_rt_bias_epilogue(\n"
    "    .param .u64 p_c, .param .u64 p_bias, .param .u64 p_d,\n"
    "    .param .u64 p_total, .param .u32 p_n, .param .f32 p_lo, .param .f32 p_hi)\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b32 %r<8>;\n"
    "    .reg .b64 %rd<16>;\n"
    "    .reg .f32 %f<6>;\n"
    "    ld.param.u64 %rd1, [p_c];\n"
    "    ld.param.u64 %rd2, [p_bias];\n"
    "    ld.param.u64 %rd3, [p_d];\n"
    "    ld.param.u64 %rd4, [p_total];\n"
    "    ld.param.u32 %r1, [p_n];\n"
    "    ld.param.f32 %f1, [p_lo];\n"
    "    ld.param.f32 %f2, [p_hi];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    cvta.to.global.u64 %rd2, %rd2;\n"
    "    cvta.to.global.u64 %rd3, %rd3;\n"
    "    cvt.u64.u32 %rd5, %r1;\n"
    "    mov.u32 %r2, %ctaid.x;\n"
    "    mov.u32 %r3, %ntid.x;\n"
    "    mov.u32 %r4, %tid.x;\n"
    "    mov.u32 %r5, %nctaid.x;\n"
    "    mul.wide.u32 %rd6, %r2, %r3;\n"
    "    cvt.u64.u32 %rd7, %r4;\n"
    "    add.u64 %rd6, %rd6, %rd7;\n"
    "    mul.wide.u32 %rd8, %r5, %r3;\n"
    "EPI_LOOP:\n"
    "    setp.ge.u64 %p, %rd6, %rd4;\n"
    "    @%p bra EPI_DONE;\n"
    "    rem.u64 %rd9, %rd6, %rd5;\n"
    "    shl.b64 %rd10, %rd6, 2;\n"
    "    shl.b64 %rd11, %rd9, 2;\n"
    "    add.u64 %rd12, %rd1, %rd10;\n"
    "    add.u64 %rd13, %rd2, %rd11;\n"
    "    ld.global.f32 %f3, [%rd12];\n"
    "    ld.global.f32 %f4, [%rd13];\n"
    "    add.rn.f32 %f5, %f3, %f4;\n"
    "    max.NaN.f32 %f5, %f5, %f1;\n"
    "    min.NaN.f32 %f5, %f5, %f2;\n"
    "    add.u64 %rd14, %rd3, %rd10;\n"
    "    st.global.f32 [%rd14], %f5;\n"
    "    add.u64 %rd6, %rd6, %rd8;\n"
    "    bra EPI_LOOP;\n"
    "EPI_DONE:\n"
    "    ret;\n"
    "}\n"
    "\n"
    "// C64[i,j] = sum_k A[i,k] * B(k,j) in float64.  dt: 0 f32, 1 f16, 2 bf16.\n"
    "// nk != 0: B is [N,K]; else [K,N].  One thread per element (x: j, y: i).\n"
    ".visible .entry tir_rt_gemm_ref_f64(\n"
    "    .param .u64 p_a, .param .u64 p_b, .param .u64 p_c,\n"
    "    .param .u32 p_m, .param .u32 p_n, .param .u32 p_k,\n"
    "    .param .u32 p_nk, .param .u32 p_dt)\n"
    "{\n"
    "    .reg .pred %p<4>;\n"
    "    .reg .b16 %h<3>;\n"
    "    .reg .b32 %r<20>;\n"
    "    .reg .b64 %rd<24>;\n"
    "    .reg .f32 %f<3>;\n"
    "    .reg .f64 %fd<4>;\n"
    "    ld.param.u64 %rd1, [p_a];\n"
    "    ld.param.u64 %rd2, [p_b];\n"
    "    ld.param.u64 %rd3, [p_c];\n"
    "    ld.param.u32 %r1, [p_m];\n"
    "    ld.param.u32 %r2, [p_n];\n"
    "    ld.param.u32 %r3, [p_k];\n"
    "    ld.param.u32 %r4, [p_nk];\n"
    "    ld.param.u32 %r5, [p_dt];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    cvta.to.global.u64 %rd2, %rd2;\n"
    "    cvta.to.global.u64 %rd3, %rd3;\n"
    "    // j = ctaid.x * ntid.x + tid.x, i = ctaid.y * ntid.y + tid.y\n"
    "    mov.u32 %r6, %ctaid.x;\n"
    "    mov.u32 %r7, %ntid.x;\n"
    "    mov.u32 %r8, %tid.x;\n"
    "    mad.lo.u32 %r9, %r6, %r7, %r8;\n"
    "    mov.u32 %r6, %ctaid.y;\n"
    "    mov.u32 %r7, %ntid.y;\n"
    "    mov.u32 %r8, %tid.y;\n"
    "    mad.lo.u32 %r10, %r6, %r7, %r8;\n"
    "    setp.ge.u32 %p1, %r9, %r2;\n"
    "    setp.ge.u32 %p2, %r10, %r1;\n"
    "    or.pred %p1, %p1, %p2;\n"
    "    @%p1 bra REF_DONE;\n"
    "    // element size: 4 for f32, else 2\n"
    "    setp.eq.u32 %p3, %r5, 0;\n"
    "    selp.u32 %r11, 4, 2, %p3;\n"
    "    cvt.u64.u32 %rd4, %r11;\n"
    "    // a = A + i*K*es, step es\n"
    "    mul.wide.u32 %rd5, %r10, %r3;\n"
    "    mul.lo.u64 %rd5, %rd5, %rd4;\n"
    "    add.u64 %rd5, %rd1, %rd5;\n"
    "    mov.u64 %rd6, %rd4;\n"
    "    // b: [K,N]: B + j*es, step N*es;  [N,K]: B + j*K*es, step es\n"
    "    setp.ne.u32 %p2, %r4, 0;\n"
    "    @%p2 bra REF_B_NK;\n"
    "    mul.wide.u32 %rd7, %r9, %r11;\n"
    "    add.u64 %rd7, %rd2, %rd7;\n"
    "    mul.wide.u32 %rd8, %r2, %r11;\n"
    "    bra REF_B_SET;\n"
    "REF_B_NK:\n"
    "    mul.wide.u32 %rd7, %r9, %r3;\n"
    "    mul.lo.u64 %rd7, %rd7, %rd4;\n"
    "    add.u64 %rd7, %rd2, %rd7;\n"
    "    mov.u64 %rd8, %rd4;\n"
    "REF_B_SET:\n"
    "    mov.f64 %fd1, 0d0000000000000000;\n"
    "    mov.u32 %r12, 0;\n"
    "REF_LOOP:\n"
    "    setp.ge.u32 %p2, %r12, %r3;\n"
    "    @%p2 bra REF_STORE;\n"
    "    setp.eq.u32 %p2, %r5, 1;\n"
    "    @%p3 bra REF_LD_F32;\n"
    "    @%p2 bra REF_LD_F16;\n"
    "    // bf16: the high half of a float32\n"
    "    ld.global.u16 %h1, [%rd5];\n"
    "    ld.global.u16 %h2, [%rd7];\n"
    "    cvt.u32.u16 %r13, %h1;\n"
    "    cvt.u32.u16 %r14, %h2;\n"
    "    shl.b32 %r13, %r13, 16;\n"
    "    shl.b32 %r14, %r14, 16;\n"
    "    mov.b32 %f1, %r13;\n"
    "    mov.b32 %f2, %r14;\n"
    "    cvt.f64.f32 %fd2, %f1;\n"
    "    cvt.f64.f32 %fd3, %f2;\n"
    "    bra REF_FMA;\n"
    "REF_LD_F16:\n"
    "    ld.global.b16 %h1, [%rd5];\n"
    "    ld.global.b16 %h2, [%rd7];\n"
    "    cvt.f32.f16 %f1, %h1;\n"
    "    cvt.f32.f16 %f2, %h2;\n"
    "    cvt.f64.f32 %fd2, %f1;\n"
    "    cvt.f64.f32 %fd3, %f2;\n"
    "    bra REF_FMA;\n"
    "REF_LD_F32:\n"
    "    ld.global.f32 %f1, [%rd5];\n"
    "    ld.global.f32 %f2, [%rd7];\n"
    "    cvt.f64.f32 %fd2, %f1;\n"
    "    cvt.f64.f32 %fd3, %f2;\n"
    "REF_FMA:\n"
    "    fma.rn.f64 %fd1, %fd2, %fd3, %fd1;\n"
    "    add.u64 %rd5, %rd5, %rd6;\n"
    "    add.u64 %rd7, %rd7, %rd8;\n"
    "    add.u32 %r12, %r12, 1;\n"
    "    bra REF_LOOP;\n"
    "REF_STORE:\n"
    "    // C64 + (i*N + j)*8\n"
    "    mul.wide.u32 %rd9, %r10, %r2;\n"
    "    cvt.u64.u32 %rd10, %r9;\n"
    "    add.u64 %rd9, %rd9, %rd10;\n"
    "    shl.b64 %rd9, %rd9, 3;\n"
    "    add.u64 %rd9, %rd3, %rd9;\n"
    "    st.global.f64 [%rd9], %fd1;\n"
    "REF_DONE:\n"
    "    ret;\n"
    "}\n"
    "\n"
    "// Spins until %globaltimer has advanced by ns nanoseconds.\n"
    ".visible .entry tir_rt_hold(.param .u64 p_ns)\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b64 %rd<4>;\n"
    "    ld.param.u64 %rd1, [p_ns];\n"
    "    mov.u64 %rd2, %globaltimer;\n"
    "HOLD_LOOP:\n"
    "    mov.u64 %rd3, %globaltimer;\n"
    "    sub.u64 %rd3, %rd3, %rd2;\n"
    "    setp.lt.u64 %p, %rd3, %rd1;\n"
    "    @%p bra HOLD_LOOP;\n"
    "    ret;\n"
    "}\n";

/* For tests that check the text with ptxas. */
const char *rt_builtin_ptx(void) { return builtin_ptx; }

tir_status rt_builtin_kernel(tir_ctx *ctx, tir_rt_device *dev, const char *name,
                             tir_rt_kernel **out) {
    *out = NULL;
    if (!dev->builtin) TIR_TRY(tir_rt_module_create(ctx, dev, builtin_ptx, &dev->builtin));
    return tir_rt_kernel_get(ctx, dev->builtin, name, out);
}

tir_status tir_rt_bias_epilogue(tir_ctx *ctx, tir_rt_device *dev, int64_t M, int64_t N,
                                tir_rt_ptr C, tir_rt_ptr bias, tir_rt_ptr D,
                                const tir_rt_epilogue *epi) {
    if (!dev || !epi)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "bias_epilogue: no device or epilogue");
    TIR_TRY(rt_check_dims(ctx, "bias_epilogue", M, N, 1));
    float lo = -INFINITY, hi = INFINITY;
    switch (epi->kind) {
    case TIR_RT_EPI_BIAS:
        break;
    case TIR_RT_EPI_BIAS_RELU:
        lo = 0.0f;
        break;
    case TIR_RT_EPI_BIAS_CLIP:
        if (!(epi->lo <= epi->hi))
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "bias_epilogue: clip range [%g, %g] is empty", (double)epi->lo,
                                (double)epi->hi);
        lo = epi->lo;
        hi = epi->hi;
        break;
    default:
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "bias_epilogue: unknown kind %d",
                            (int)epi->kind);
    }
    size_t total = (size_t)M * (size_t)N;
    TIR_TRY(rt_check_range(ctx, dev, C, total * 4, "bias_epilogue C"));
    TIR_TRY(rt_check_range(ctx, dev, bias, (size_t)N * 4, "bias_epilogue bias"));
    TIR_TRY(rt_check_range(ctx, dev, D, total * 4, "bias_epilogue D"));
    tir_rt_kernel *k;
    TIR_TRY(rt_builtin_kernel(ctx, dev, "tir_rt_bias_epilogue", &k));
    /* Enough blocks to fill the device a few times over; the kernel loops
       over the rest. */
    size_t want = (total + 255) / 256, cap = (size_t)dev->props.sm_count * 32;
    unsigned grid[3] = {(unsigned)(want < cap ? want : cap), 1, 1}, block[3] = {256, 1, 1};
    tir_rt_arg args[] = {tir_rt_arg_ptr(C),          tir_rt_arg_ptr(bias),
                         tir_rt_arg_ptr(D),          tir_rt_arg_i64((int64_t)total),
                         tir_rt_arg_i32((int32_t)N), tir_rt_arg_f32(lo),
                         tir_rt_arg_f32(hi)};
    return tir_rt_launch(ctx, k, grid, block, 0, (int)(sizeof args / sizeof args[0]), args);
}

tir_status tir_rt_gemm_ref_device(tir_ctx *ctx, tir_rt_device *dev, tir_dtype in, int64_t M,
                                  int64_t N, int64_t K, tir_rt_ptr A, tir_rt_ptr B,
                                  tir_rt_b_layout layout, tir_rt_ptr C64) {
    if (!dev) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "gemm_ref_device: no device");
    TIR_TRY(rt_check_dims(ctx, "gemm_ref_device", M, N, K));
    int code;
    if (tir_dtype_eq(in, TIR_F32)) code = 0;
    else if (tir_dtype_eq(in, TIR_F16)) code = 1;
    else if (tir_dtype_eq(in, TIR_BF16)) code = 2;
    else {
        char buf[32];
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "gemm_ref_device: inputs must be float32, float16 or bfloat16, not %s",
                            tir_dtype_str(in, buf, sizeof buf));
    }
    if (layout != TIR_RT_B_KN && layout != TIR_RT_B_NK)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "gemm_ref_device: unknown B layout");
    const unsigned bx = 16, by = 16;
    if ((M + by - 1) / by > dev->props.max_grid_dim[1])
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "gemm_ref_device: M=%lld exceeds the %lld rows one launch covers",
                            (long long)M, (long long)dev->props.max_grid_dim[1] * by);
    size_t es = code == 0 ? 4 : 2;
    TIR_TRY(rt_check_range(ctx, dev, A, (size_t)M * (size_t)K * es, "gemm_ref_device A"));
    TIR_TRY(rt_check_range(ctx, dev, B, (size_t)K * (size_t)N * es, "gemm_ref_device B"));
    TIR_TRY(rt_check_range(ctx, dev, C64, (size_t)M * (size_t)N * 8, "gemm_ref_device C"));
    tir_rt_kernel *k;
    TIR_TRY(rt_builtin_kernel(ctx, dev, "tir_rt_gemm_ref_f64", &k));
    unsigned grid[3] = {(unsigned)((N + bx - 1) / bx), (unsigned)((M + by - 1) / by), 1};
    unsigned block[3] = {bx, by, 1};
    tir_rt_arg args[] = {tir_rt_arg_ptr(A),          tir_rt_arg_ptr(B),
                         tir_rt_arg_ptr(C64),        tir_rt_arg_i32((int32_t)M),
                         tir_rt_arg_i32((int32_t)N), tir_rt_arg_i32((int32_t)K),
                         tir_rt_arg_i32(layout == TIR_RT_B_NK), tir_rt_arg_i32(code)};
    return tir_rt_launch(ctx, k, grid, block, 0, (int)(sizeof args / sizeof args[0]), args);
}
