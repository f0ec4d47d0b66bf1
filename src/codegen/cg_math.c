/* cg_math.c: exp, log, tanh, sigmoid and pow as LLVM IR functions.
 *
 * NVPTX has no instructions for these and we do not link libdevice, and the
 * approximate PTX instructions (ex2.approx, lg2.approx) lose accuracy for
 * large arguments.  So each function is built here from exact operations
 * (fma, rint, floor, bit manipulation) with the classic range reductions:
 *   exp(x) = 2^j * exp(r), r = x - j ln2 (Cody-Waite, two-part ln2), exp(r)
 *     a Taylor polynomial, 2^j applied as two exact power-of-two factors so
 *     subnormal results are rounded once;
 *   log(x) = e ln2 + log(m), m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s)
 *     with s = f/(2+f), f = m-1, evaluated as in fdlibm to keep f exact;
 *   tanh(x) = an odd Taylor polynomial for |x| < 1/2, else
 *     sign(x) (1 - 2/(exp(2|x|)+1));
 *   sigmoid(x) = 1/(1+exp(-x));
 *   pow(x, y) = exp(y log|x|) with the sign and special cases of C99; float
 *     pow is computed in double, which makes it nearly correctly rounded.
 * Measured accuracy is in docs/lowered-ir.md (tests/test_codegen_math.c runs
 * these same functions on the host).
 *
 * The functions are internal and always-inline, and use only
 * target-independent intrinsics, so they work for NVPTX and for the host.
 */
#include <math.h>
#include <string.h>

#include "cg_internal.h"

typedef struct mb {
    LLVMModuleRef mod;
    LLVMContextRef lc;
    LLVMBuilderRef b;
    bool f64;
    LLVMTypeRef ft, it; /* the float type and the integer type of its width */
} mb;

static LLVMValueRef K(mb *m, double v) { return LLVMConstReal(m->ft, v); }
static LLVMValueRef KI(mb *m, long long v) {
    return LLVMConstInt(m->it, (unsigned long long)v, 1);
}
static LLVMValueRef mfmul(mb *m, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFMul(m->b, a, b, "");
}
static LLVMValueRef mfadd(mb *m, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFAdd(m->b, a, b, "");
}
static LLVMValueRef mfsub(mb *m, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFSub(m->b, a, b, "");
}
static LLVMValueRef intr1(mb *m, const char *name, LLVMValueRef a) {
    LLVMTypeRef t = LLVMTypeOf(a);
    return cg_call_intrinsic(m->mod, m->b, name, &t, 1, &a, 1);
}
static LLVMValueRef fma3(mb *m, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
    LLVMValueRef args[3] = {a, b, c};
    return cg_call_intrinsic(m->mod, m->b, "llvm.fma", &m->ft, 1, args, 3);
}
static LLVMValueRef fcmp(mb *m, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFCmp(m->b, p, a, b, "");
}
static LLVMValueRef sel(mb *m, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(m->b, c, a, b, "");
}
/* c[0] + x*(c[1] + x*(c[2] + ...)) */
static LLVMValueRef horner(mb *m, LLVMValueRef x, const double *c, int n) {
    LLVMValueRef p = K(m, c[n - 1]);
    for (int i = n - 2; i >= 0; i--) p = fma3(m, p, x, K(m, c[i]));
    return p;
}
static LLVMValueRef call(mb *m, LLVMValueRef fn, LLVMValueRef *args, int n) {
    return LLVMBuildCall2(m->b, LLVMGlobalGetValueType(fn), fn, args, (unsigned)n, "");
}

/* 2^k for an integer k in the normal exponent range. */
static LLVMValueRef pow2i(mb *m, LLVMValueRef k) {
    int mbits = m->f64 ? 52 : 23, bias = m->f64 ? 1023 : 127;
    LLVMValueRef e = LLVMBuildAdd(m->b, k, KI(m, bias), "");
    return LLVMBuildBitCast(m->b, LLVMBuildShl(m->b, e, KI(m, mbits), ""), m->ft, "");
}

static LLVMValueRef build_exp(mb *m, LLVMValueRef x) {
    static const double L2E = 1.44269504088896340736;
    /* Two-part ln2: the high part has trailing zero bits so j*hi is exact. */
    double hi = m->f64 ? 6.93147180369123816490e-01 : 6.93145751953125e-01;
    double lo = m->f64 ? 1.90821492927058770002e-10 : 1.428606820309417232e-06;
    /* Clamp so that j fits two normal power-of-two factors; beyond the
     * clamp the result is already inf or 0. */
    double top = m->f64 ? 710.0 : 89.0, bot = m->f64 ? -746.0 : -104.0;
    LLVMValueRef isnan = fcmp(m, LLVMRealUNO, x, x);
    LLVMValueRef xc = sel(m, fcmp(m, LLVMRealOGT, x, K(m, top)), K(m, top), x);
    xc = sel(m, fcmp(m, LLVMRealOLT, xc, K(m, bot)), K(m, bot), xc);
    xc = sel(m, isnan, K(m, 0.0), xc);
    LLVMValueRef j = intr1(m, "llvm.rint", mfmul(m, xc, K(m, L2E)));
    LLVMValueRef r = fma3(m, j, K(m, -hi), xc);
    r = fma3(m, j, K(m, -lo), r);
    /* Taylor series of exp(r), |r| <= 0.35: degree 7 (float) / 13 (double)
     * leaves a truncation error below 0.1 ulp. */
    double c[14];
    int n = m->f64 ? 14 : 8;
    c[0] = 1;
    for (int i = 1; i < n; i++) c[i] = c[i - 1] / i;
    LLVMValueRef p = horner(m, r, c, n);
    LLVMValueRef ji = LLVMBuildFPToSI(m->b, j, m->it, "");
    LLVMValueRef j1 = LLVMBuildAShr(m->b, ji, KI(m, 1), "");
    LLVMValueRef j2 = LLVMBuildSub(m->b, ji, j1, "");
    LLVMValueRef res = mfmul(m, mfmul(m, p, pow2i(m, j1)), pow2i(m, j2));
    return sel(m, isnan, x, res);
}

static LLVMValueRef build_log(mb *m, LLVMValueRef x) {
    int mbits = m->f64 ? 52 : 23, bias = m->f64 ? 1023 : 127;
    double hi = m->f64 ? 6.93147180369123816490e-01 : 6.9313812256e-01;
    double lo = m->f64 ? 1.90821492927058770002e-10 : 9.0580006145e-06;
    double tiny = m->f64 ? 0x1p-1022 : 0x1p-126;
    /* Scale subnormals into the normal range. */
    LLVMValueRef sub = fcmp(m, LLVMRealOLT, x, K(m, tiny));
    LLVMValueRef xs = sel(m, sub, mfmul(m, x, K(m, m->f64 ? 0x1p52 : 0x1p23)), x);
    LLVMValueRef eadj = sel(m, sub, KI(m, -mbits), KI(m, 0));
    LLVMValueRef bits = LLVMBuildBitCast(m->b, xs, m->it, "");
    LLVMValueRef e = LLVMBuildSub(m->b, LLVMBuildLShr(m->b, bits, KI(m, mbits), ""),
                                  KI(m, bias), "");
    e = LLVMBuildAdd(m->b, e, eadj, "");
    long long mant_mask = m->f64 ? 0xfffffffffffffLL : 0x7fffffLL;
    long long one_bits = m->f64 ? 0x3ff0000000000000LL : 0x3f800000LL;
    LLVMValueRef mm = LLVMBuildOr(m->b, LLVMBuildAnd(m->b, bits, KI(m, mant_mask), ""),
                                  KI(m, one_bits), "");
    LLVMValueRef mv = LLVMBuildBitCast(m->b, mm, m->ft, "");
    LLVMValueRef big = fcmp(m, LLVMRealOGT, mv, K(m, 1.41421356237309504880));
    mv = sel(m, big, mfmul(m, mv, K(m, 0.5)), mv);
    e = sel(m, big, LLVMBuildAdd(m->b, e, KI(m, 1), ""), e);
    LLVMValueRef f = mfsub(m, mv, K(m, 1.0)); /* exact: mv in [0.7, 1.42] */
    LLVMValueRef s = LLVMBuildFDiv(m->b, f, mfadd(m, K(m, 2.0), f), "");
    LLVMValueRef z = mfmul(m, s, s);
    /* R(z) = 2z/3 + 2z^2/5 + ..., |s| <= 0.172 */
    double c[12];
    int n = m->f64 ? 11 : 4;
    for (int i = 0; i < n; i++) c[i] = 2.0 / (2 * i + 3);
    LLVMValueRef R = mfmul(m, z, horner(m, z, c, n));
    LLVMValueRef hfsq = mfmul(m, K(m, 0.5), mfmul(m, f, f));
    LLVMValueRef dk = LLVMBuildSIToFP(m->b, e, m->ft, "");
    LLVMValueRef t = fma3(m, s, mfadd(m, hfsq, R), mfmul(m, dk, K(m, lo)));
    t = mfsub(m, mfsub(m, hfsq, t), f); /* -(log(m) + dk*lo) */
    LLVMValueRef res = fma3(m, dk, K(m, hi), LLVMBuildFNeg(m->b, t, ""));
    res = sel(m, fcmp(m, LLVMRealOEQ, x, K(m, INFINITY)), x, res);
    res = sel(m, fcmp(m, LLVMRealOEQ, x, K(m, 0.0)), K(m, -INFINITY), res);
    res = sel(m, fcmp(m, LLVMRealOLT, x, K(m, 0.0)), K(m, NAN), res);
    return sel(m, fcmp(m, LLVMRealUNO, x, x), x, res);
}

static LLVMValueRef build_tanh(mb *m, LLVMValueRef x) {
    /* Taylor coefficients of tanh from tanh' = 1 - tanh^2:
     * (n+1) t[n+1] = [n == 0] - sum_{i+j=n} t[i] t[j]. */
    double t[44] = {0};
    int deg = m->f64 ? 41 : 17;
    for (int n = 0; n < deg; n++) {
        double s = n == 0 ? 1.0 : 0.0;
        for (int i = 0; i <= n; i++) s -= t[i] * t[n - i];
        t[n + 1] = s / (n + 1);
    }
    double q[22];
    int nq = 0;
    for (int k = 3; k <= deg; k += 2) q[nq++] = t[k];
    LLVMValueRef z = mfmul(m, x, x);
    /* x + x z Q(z) */
    LLVMValueRef small = fma3(m, mfmul(m, x, z), horner(m, z, q, nq), x);
    LLVMValueRef ax = intr1(m, "llvm.fabs", x);
    LLVMValueRef exp = cg_math_fn(m->mod, TIR_INTRIN_EXP, m->f64);
    LLVMValueRef two_ax = mfmul(m, K(m, 2.0), ax);
    LLVMValueRef e = call(m, exp, &two_ax, 1);
    LLVMValueRef big = mfsub(m, K(m, 1.0), LLVMBuildFDiv(m->b, K(m, 2.0), mfadd(m, e, K(m, 1.0)), ""));
    LLVMValueRef args[2] = {big, x};
    big = cg_call_intrinsic(m->mod, m->b, "llvm.copysign", &m->ft, 1, args, 2);
    return sel(m, fcmp(m, LLVMRealOLT, ax, K(m, 0.5)), small, big);
}

static LLVMValueRef build_sigmoid(mb *m, LLVMValueRef x) {
    LLVMValueRef exp = cg_math_fn(m->mod, TIR_INTRIN_EXP, m->f64);
    LLVMValueRef nx = LLVMBuildFNeg(m->b, x, "");
    LLVMValueRef e = call(m, exp, &nx, 1);
    return LLVMBuildFDiv(m->b, K(m, 1.0), mfadd(m, K(m, 1.0), e), "");
}

static LLVMValueRef build_pow(mb *m, LLVMValueRef x, LLVMValueRef y) {
    LLVMContextRef lc = m->lc;
    LLVMTypeRef dt = LLVMDoubleTypeInContext(lc);
    LLVMValueRef ax = intr1(m, "llvm.fabs", x);
    LLVMValueRef axd = m->f64 ? ax : LLVMBuildFPExt(m->b, ax, dt, "");
    LLVMValueRef yd = m->f64 ? y : LLVMBuildFPExt(m->b, y, dt, "");
    LLVMValueRef l = call(m, cg_math_fn(m->mod, TIR_INTRIN_LOG, true), &axd, 1);
    LLVMValueRef t = LLVMBuildFMul(m->b, yd, l, "");
    LLVMValueRef r = call(m, cg_math_fn(m->mod, TIR_INTRIN_EXP, true), &t, 1);
    if (!m->f64) r = LLVMBuildFPTrunc(m->b, r, m->ft, "");
    LLVMValueRef fy = intr1(m, "llvm.floor", y);
    LLVMValueRef yint = fcmp(m, LLVMRealOEQ, fy, y);
    LLVMValueRef yh = mfmul(m, y, K(m, 0.5));
    LLVMValueRef yodd =
        LLVMBuildAnd(m->b, yint, fcmp(m, LLVMRealUNE, intr1(m, "llvm.floor", yh), yh), "");
    LLVMValueRef neg = LLVMBuildICmp(m->b, LLVMIntSLT, LLVMBuildBitCast(m->b, x, m->it, ""),
                                     KI(m, 0), "");
    r = sel(m, LLVMBuildAnd(m->b, neg, yodd, ""), LLVMBuildFNeg(m->b, r, ""), r);
    LLVMValueRef nan_case =
        LLVMBuildAnd(m->b, fcmp(m, LLVMRealOLT, x, K(m, 0.0)),
                     LLVMBuildAnd(m->b, LLVMBuildNot(m->b, yint, ""),
                                  fcmp(m, LLVMRealONE, x, K(m, -INFINITY)), ""),
                     "");
    r = sel(m, nan_case, K(m, NAN), r);
    LLVMValueRef one = LLVMBuildOr(m->b, fcmp(m, LLVMRealOEQ, y, K(m, 0.0)),
                                   fcmp(m, LLVMRealOEQ, x, K(m, 1.0)), "");
    LLVMValueRef pm1_inf = LLVMBuildAnd(m->b, fcmp(m, LLVMRealOEQ, ax, K(m, 1.0)),
                                        fcmp(m, LLVMRealOEQ, intr1(m, "llvm.fabs", y),
                                             K(m, INFINITY)),
                                        "");
    one = LLVMBuildOr(m->b, one, pm1_inf, "");
    return sel(m, one, K(m, 1.0), r);
}

static const char *op_name(tir_intrin op) {
    switch (op) {
    case TIR_INTRIN_EXP: return "exp";
    case TIR_INTRIN_LOG: return "log";
    case TIR_INTRIN_TANH: return "tanh";
    case TIR_INTRIN_SIGMOID: return "sigmoid";
    case TIR_INTRIN_POW: return "pow";
    default: return NULL;
    }
}

LLVMValueRef cg_math_fn(LLVMModuleRef mod, tir_intrin op, bool f64) {
    const char *base = op_name(op);
    TIR_ASSERT(base);
    char name[64];
    snprintf(name, sizeof name, "__tir_%s_%s", base, f64 ? "f64" : "f32");
    LLVMValueRef fn = LLVMGetNamedFunction(mod, name);
    if (fn) return fn;

    mb m = {.mod = mod, .lc = LLVMGetModuleContext(mod), .f64 = f64};
    m.ft = f64 ? LLVMDoubleTypeInContext(m.lc) : LLVMFloatTypeInContext(m.lc);
    m.it = LLVMIntTypeInContext(m.lc, f64 ? 64 : 32);
    int nargs = op == TIR_INTRIN_POW ? 2 : 1;
    LLVMTypeRef params[2] = {m.ft, m.ft};
    fn = LLVMAddFunction(mod, name, LLVMFunctionType(m.ft, params, (unsigned)nargs, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    static const char *const attrs[] = {"alwaysinline", "nounwind", "willreturn"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        unsigned k = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
        TIR_ASSERT(k);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(m.lc, k, 0));
    }
    m.b = LLVMCreateBuilderInContext(m.lc);
    LLVMPositionBuilderAtEnd(m.b, LLVMAppendBasicBlockInContext(m.lc, fn, "entry"));
    LLVMValueRef x = LLVMGetParam(fn, 0), r;
    switch (op) {
    case TIR_INTRIN_EXP: r = build_exp(&m, x); break;
    case TIR_INTRIN_LOG: r = build_log(&m, x); break;
    case TIR_INTRIN_TANH: r = build_tanh(&m, x); break;
    case TIR_INTRIN_SIGMOID: r = build_sigmoid(&m, x); break;
    case TIR_INTRIN_POW: r = build_pow(&m, x, LLVMGetParam(fn, 1)); break;
    default: TIR_UNREACHABLE();
    }
    LLVMBuildRet(m.b, r);
    LLVMDisposeBuilder(m.b);
    return fn;
}
