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
 *   sigmoid(x) = 1/(1+exp(-x)), or exp(x)/(1+exp(x)) for x < 0;
 *   pow(x, y) = exp(y log|x|) with the sign and special cases of C99,
 *     computed in double with log|x| in double-double (hi + lo), so that the
 *     error of log is not magnified by y; float pow is then nearly correctly
 *     rounded.
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
static LLVMValueRef KI(mb *m, long long v) { return LLVMConstInt(m->it, (unsigned long long)v, 1); }
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

/* x = 2^k m with m in [sqrt(1/2), sqrt(2)): sets *f = m - 1 (exact) and
 * *dk = k as a float. */
static void log_reduce(mb *m, LLVMValueRef x, LLVMValueRef *f, LLVMValueRef *dk) {
    int mbits = m->f64 ? 52 : 23, bias = m->f64 ? 1023 : 127;
    double tiny = m->f64 ? 0x1p-1022 : 0x1p-126;
    /* Scale subnormals into the normal range. */
    LLVMValueRef sub = fcmp(m, LLVMRealOLT, x, K(m, tiny));
    LLVMValueRef xs = sel(m, sub, mfmul(m, x, K(m, m->f64 ? 0x1p52 : 0x1p23)), x);
    LLVMValueRef eadj = sel(m, sub, KI(m, -mbits), KI(m, 0));
    LLVMValueRef bits = LLVMBuildBitCast(m->b, xs, m->it, "");
    LLVMValueRef e =
        LLVMBuildSub(m->b, LLVMBuildLShr(m->b, bits, KI(m, mbits), ""), KI(m, bias), "");
    e = LLVMBuildAdd(m->b, e, eadj, "");
    long long mant_mask = m->f64 ? 0xfffffffffffffLL : 0x7fffffLL;
    long long one_bits = m->f64 ? 0x3ff0000000000000LL : 0x3f800000LL;
    LLVMValueRef mm =
        LLVMBuildOr(m->b, LLVMBuildAnd(m->b, bits, KI(m, mant_mask), ""), KI(m, one_bits), "");
    LLVMValueRef mv = LLVMBuildBitCast(m->b, mm, m->ft, "");
    LLVMValueRef big = fcmp(m, LLVMRealOGT, mv, K(m, 1.41421356237309504880));
    mv = sel(m, big, mfmul(m, mv, K(m, 0.5)), mv);
    e = sel(m, big, LLVMBuildAdd(m->b, e, KI(m, 1), ""), e);
    *f = mfsub(m, mv, K(m, 1.0)); /* exact: mv in [0.7, 1.42] */
    *dk = LLVMBuildSIToFP(m->b, e, m->ft, "");
}

/* s R(s^2) with R(z) = 2z/3 + 2z^2/5 + ... (the odd terms of 2 atanh(s)
 * beyond 2s), |s| <= 0.172. */
static LLVMValueRef atanh_tail(mb *m, LLVMValueRef s) {
    double c[12];
    int n = m->f64 ? 11 : 4;
    for (int i = 0; i < n; i++) c[i] = 2.0 / (2 * i + 3);
    LLVMValueRef z = mfmul(m, s, s);
    return mfmul(m, mfmul(m, s, z), horner(m, z, c, n));
}

/* log's results at 0, negative, infinite and NaN x. */
static LLVMValueRef log_specials(mb *m, LLVMValueRef x, LLVMValueRef res) {
    res = sel(m, fcmp(m, LLVMRealOEQ, x, K(m, INFINITY)), x, res);
    res = sel(m, fcmp(m, LLVMRealOEQ, x, K(m, 0.0)), K(m, -INFINITY), res);
    res = sel(m, fcmp(m, LLVMRealOLT, x, K(m, 0.0)), K(m, NAN), res);
    return sel(m, fcmp(m, LLVMRealUNO, x, x), x, res);
}

static LLVMValueRef build_log(mb *m, LLVMValueRef x) {
    double hi = m->f64 ? 6.93147180369123816490e-01 : 6.9313812256e-01;
    double lo = m->f64 ? 1.90821492927058770002e-10 : 9.0580006145e-06;
    LLVMValueRef f, dk;
    log_reduce(m, x, &f, &dk);
    /* fdlibm's evaluation: log(1+f) = f - (hfsq - s (hfsq + R)) keeps the
     * exact f as the leading term. */
    LLVMValueRef s = LLVMBuildFDiv(m->b, f, mfadd(m, K(m, 2.0), f), "");
    LLVMValueRef z = mfmul(m, s, s);
    double c[12];
    int n = m->f64 ? 11 : 4;
    for (int i = 0; i < n; i++) c[i] = 2.0 / (2 * i + 3);
    LLVMValueRef R = mfmul(m, z, horner(m, z, c, n));
    LLVMValueRef hfsq = mfmul(m, K(m, 0.5), mfmul(m, f, f));
    LLVMValueRef t = fma3(m, s, mfadd(m, hfsq, R), mfmul(m, dk, K(m, lo)));
    t = mfsub(m, mfsub(m, hfsq, t), f); /* -(log(m) + dk*lo) */
    LLVMValueRef res = fma3(m, dk, K(m, hi), LLVMBuildFNeg(m->b, t, ""));
    return log_specials(m, x, res);
}

/* log(x) of a double x >= 0 as an unevaluated sum hi + lo, accurate to
 * about 2^-58 relative (for pow, where y log x magnifies the error).
 * log(1+f) = 2s + s R(s^2) with s = f/(2+f) carried as s_hi + s_lo. */
static void log_dd(mb *d, LLVMValueRef x, LLVMValueRef *hi, LLVMValueRef *lo) {
    static const double ln2_hi = 6.93147180369123816490e-01; /* 21 trailing zero bits */
    static const double ln2_lo = 1.90821492927058770002e-10;
    LLVMValueRef f, dk;
    log_reduce(d, x, &f, &dk);
    /* u = 2 + f exactly as u_hi + u_lo (|f| < 2). */
    LLVMValueRef u_hi = mfadd(d, K(d, 2.0), f);
    LLVMValueRef u_lo = mfadd(d, mfsub(d, K(d, 2.0), u_hi), f);
    LLVMValueRef s_hi = LLVMBuildFDiv(d->b, f, u_hi, "");
    /* The remainder of a correctly rounded division is exact under fma. */
    LLVMValueRef r = fma3(d, LLVMBuildFNeg(d->b, s_hi, ""), u_hi, f);
    r = fma3(d, LLVMBuildFNeg(d->b, s_hi, ""), u_lo, r);
    LLVMValueRef s_lo = LLVMBuildFDiv(d->b, r, u_hi, "");
    LLVMValueRef p = atanh_tail(d, s_hi);
    /* hi + err = dk ln2_hi + 2 s_hi exactly (TwoSum); dk ln2_hi is exact. */
    LLVMValueRef a = mfmul(d, dk, K(d, ln2_hi)), b = mfmul(d, K(d, 2.0), s_hi);
    LLVMValueRef sum = mfadd(d, a, b);
    LLVMValueRef bb = mfsub(d, sum, a);
    LLVMValueRef err = mfadd(d, mfsub(d, a, mfsub(d, sum, bb)), mfsub(d, b, bb));
    LLVMValueRef rest =
        mfadd(d, mfadd(d, err, mfmul(d, K(d, 2.0), s_lo)), fma3(d, dk, K(d, ln2_lo), p));
    /* Renormalise (Fast2Sum: |sum| >= |rest|). */
    LLVMValueRef h = mfadd(d, sum, rest);
    *lo = mfsub(d, rest, mfsub(d, h, sum));
    *hi = log_specials(d, x, h);
    *lo = sel(d, fcmp(d, LLVMRealOEQ, *hi, h), *lo, K(d, 0.0));
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
    LLVMValueRef big =
        mfsub(m, K(m, 1.0), LLVMBuildFDiv(m->b, K(m, 2.0), mfadd(m, e, K(m, 1.0)), ""));
    /* tanh is odd: the sign of x, also for tanh(-0) = -0. */
    LLVMValueRef args[2] = {sel(m, fcmp(m, LLVMRealOLT, ax, K(m, 0.5)), small, big), x};
    return cg_call_intrinsic(m->mod, m->b, "llvm.copysign", &m->ft, 1, args, 2);
}

static LLVMValueRef build_sigmoid(mb *m, LLVMValueRef x) {
    /* e = exp(-|x|) never overflows; for x < 0, e/(1+e) keeps the tiny
     * results that 1/(1+exp(-x)) would lose to an overflow. */
    LLVMValueRef exp = cg_math_fn(m->mod, TIR_INTRIN_EXP, m->f64);
    LLVMValueRef nax = LLVMBuildFNeg(m->b, intr1(m, "llvm.fabs", x), "");
    LLVMValueRef e = call(m, exp, &nax, 1);
    LLVMValueRef num = sel(m, fcmp(m, LLVMRealOLT, x, K(m, 0.0)), e, K(m, 1.0));
    return LLVMBuildFDiv(m->b, num, mfadd(m, K(m, 1.0), e), "");
}

static LLVMValueRef build_pow(mb *m, LLVMValueRef x, LLVMValueRef y) {
    /* The magnitude in double: exp(t_hi + t_lo) with t = y log|x| carried
     * in double-double, exp(t_hi) (1 + t_lo) ~ exp(t_hi + t_lo). */
    mb d = *m;
    d.f64 = true;
    d.ft = LLVMDoubleTypeInContext(m->lc);
    d.it = LLVMInt64TypeInContext(m->lc);
    LLVMValueRef ax = intr1(m, "llvm.fabs", x);
    LLVMValueRef axd = m->f64 ? ax : LLVMBuildFPExt(m->b, ax, d.ft, "");
    LLVMValueRef yd = m->f64 ? y : LLVMBuildFPExt(m->b, y, d.ft, "");
    LLVMValueRef l_hi, l_lo;
    log_dd(&d, axd, &l_hi, &l_lo);
    LLVMValueRef t_hi = mfmul(&d, yd, l_hi);
    LLVMValueRef t_lo =
        mfadd(&d, fma3(&d, yd, l_hi, LLVMBuildFNeg(m->b, t_hi, "")), mfmul(&d, yd, l_lo));
    LLVMValueRef e = call(&d, cg_math_fn(m->mod, TIR_INTRIN_EXP, true), &t_hi, 1);
    /* No correction when exp overflowed or t is inf/NaN (t_lo is then NaN). */
    LLVMValueRef finite =
        LLVMBuildAnd(m->b, fcmp(&d, LLVMRealOLT, intr1(&d, "llvm.fabs", e), K(&d, INFINITY)),
                     fcmp(&d, LLVMRealOLT, intr1(&d, "llvm.fabs", t_hi), K(&d, INFINITY)), "");
    LLVMValueRef r = sel(&d, finite, fma3(&d, e, t_lo, e), e);
    if (!m->f64) r = LLVMBuildFPTrunc(m->b, r, m->ft, "");
    /* Sign and special cases of C99. */
    LLVMValueRef fy = intr1(m, "llvm.floor", y);
    LLVMValueRef yint = fcmp(m, LLVMRealOEQ, fy, y);
    LLVMValueRef yh = mfmul(m, y, K(m, 0.5));
    LLVMValueRef yodd =
        LLVMBuildAnd(m->b, yint, fcmp(m, LLVMRealUNE, intr1(m, "llvm.floor", yh), yh), "");
    LLVMValueRef neg =
        LLVMBuildICmp(m->b, LLVMIntSLT, LLVMBuildBitCast(m->b, x, m->it, ""), KI(m, 0), "");
    r = sel(m, LLVMBuildAnd(m->b, neg, yodd, ""), LLVMBuildFNeg(m->b, r, ""), r);
    LLVMValueRef nan_case = LLVMBuildAnd(m->b, fcmp(m, LLVMRealOLT, x, K(m, 0.0)),
                                         LLVMBuildAnd(m->b, LLVMBuildNot(m->b, yint, ""),
                                                      fcmp(m, LLVMRealONE, x, K(m, -INFINITY)), ""),
                                         "");
    r = sel(m, nan_case, K(m, NAN), r);
    LLVMValueRef one = LLVMBuildOr(m->b, fcmp(m, LLVMRealOEQ, y, K(m, 0.0)),
                                   fcmp(m, LLVMRealOEQ, x, K(m, 1.0)), "");
    LLVMValueRef pm1_inf =
        LLVMBuildAnd(m->b, fcmp(m, LLVMRealOEQ, ax, K(m, 1.0)),
                     fcmp(m, LLVMRealOEQ, intr1(m, "llvm.fabs", y), K(m, INFINITY)), "");
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

/* fmod(x, y), exact (C's fmod): NVPTX lowers LLVM's frem to
 * x - trunc(x / y) * y, which is wrong once the quotient has more bits than
 * the type (fmod(1e30, 7)), for an infinite x (inf, not NaN) and for the
 * sign of a zero result.  With ax = |x| and ay = |y|: t = ay doubled while
 * 2t <= ax, then t halved back down to ay, subtracting t from ax whenever
 * ax >= t; each subtraction is exact (t <= ax < 2t, Sterbenz), and ax stays
 * below 2t.  At most twice the exponent range in steps (~560 for float,
 * ~4200 for double), taken only when |x| >= |y|. */
LLVMValueRef cg_fmod_fn(LLVMModuleRef mod, bool f64) {
    const char *name = f64 ? "__tir_fmod_f64" : "__tir_fmod_f32";
    LLVMValueRef fn = LLVMGetNamedFunction(mod, name);
    if (fn) return fn;
    mb m = {.mod = mod, .lc = LLVMGetModuleContext(mod), .f64 = f64};
    m.ft = f64 ? LLVMDoubleTypeInContext(m.lc) : LLVMFloatTypeInContext(m.lc);
    m.it = LLVMIntTypeInContext(m.lc, f64 ? 64 : 32);
    LLVMTypeRef params[2] = {m.ft, m.ft};
    fn = LLVMAddFunction(mod, name, LLVMFunctionType(m.ft, params, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    static const char *const attrs[] = {"alwaysinline", "nounwind", "willreturn"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        unsigned k = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
        TIR_ASSERT(k);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(m.lc, k, 0));
    }
    m.b = LLVMCreateBuilderInContext(m.lc);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(m.lc, fn, "entry"),
                      nan = LLVMAppendBasicBlockInContext(m.lc, fn, "nan"),
                      check = LLVMAppendBasicBlockInContext(m.lc, fn, "check"),
                      same = LLVMAppendBasicBlockInContext(m.lc, fn, "same"),
                      up = LLVMAppendBasicBlockInContext(m.lc, fn, "up"),
                      down = LLVMAppendBasicBlockInContext(m.lc, fn, "down"),
                      done = LLVMAppendBasicBlockInContext(m.lc, fn, "done");
    LLVMValueRef x = LLVMGetParam(fn, 0), y = LLVMGetParam(fn, 1);
    LLVMPositionBuilderAtEnd(m.b, entry);
    LLVMValueRef ax = intr1(&m, "llvm.fabs", x), ay = intr1(&m, "llvm.fabs", y);
    /* NaN for a NaN operand, an infinite x or a zero y */
    LLVMValueRef bad = LLVMBuildOr(m.b, fcmp(&m, LLVMRealUNO, x, y),
                                   LLVMBuildOr(m.b, fcmp(&m, LLVMRealOEQ, ax, K(&m, INFINITY)),
                                               fcmp(&m, LLVMRealOEQ, ay, K(&m, 0.0)), ""),
                                   "");
    LLVMBuildCondBr(m.b, bad, nan, check);
    LLVMPositionBuilderAtEnd(m.b, nan);
    LLVMBuildRet(m.b, K(&m, NAN));
    LLVMPositionBuilderAtEnd(m.b, check); /* |x| < |y| (y infinite included): x */
    LLVMBuildCondBr(m.b, fcmp(&m, LLVMRealOLT, ax, ay), same, up);
    LLVMPositionBuilderAtEnd(m.b, same);
    LLVMBuildRet(m.b, x);
    /* Each loop also counts its steps and stops past the exponent range
     * (2,100 for double, 300 for float): with the exact arithmetic above it
     * never gets there, but a kernel must not hang on a miscompile. */
    LLVMTypeRef i32 = LLVMInt32TypeInContext(m.lc);
    LLVMValueRef limit = LLVMConstInt(i32, f64 ? 2100 : 300, 0), one = LLVMConstInt(i32, 1, 0),
                 zero = LLVMConstInt(i32, 0, 0);
    LLVMPositionBuilderAtEnd(m.b, up); /* t = ay * 2^k, the largest with t <= ax */
    LLVMValueRef t = LLVMBuildPhi(m.b, m.ft, "t"), n = LLVMBuildPhi(m.b, i32, "n");
    LLVMValueRef t2 = mfadd(&m, t, t), n2 = LLVMBuildAdd(m.b, n, one, "");
    LLVMBuildCondBr(m.b,
                    LLVMBuildAnd(m.b, fcmp(&m, LLVMRealOLE, t2, ax),
                                 LLVMBuildICmp(m.b, LLVMIntULT, n2, limit, ""), ""),
                    up, down);
    LLVMValueRef tin[2] = {ay, t2}, nin[2] = {zero, n2};
    LLVMBasicBlockRef tfrom[2] = {check, up};
    LLVMAddIncoming(t, tin, tfrom, 2);
    LLVMAddIncoming(n, nin, tfrom, 2);
    LLVMPositionBuilderAtEnd(m.b, down);
    LLVMValueRef r = LLVMBuildPhi(m.b, m.ft, "r"), s = LLVMBuildPhi(m.b, m.ft, "s"),
                 c = LLVMBuildPhi(m.b, i32, "c");
    LLVMValueRef r2 = sel(&m, fcmp(&m, LLVMRealOGE, r, s), mfsub(&m, r, s), r);
    LLVMValueRef s2 = mfmul(&m, s, K(&m, 0.5)), c2 = LLVMBuildAdd(m.b, c, one, "");
    LLVMBuildCondBr(m.b,
                    LLVMBuildAnd(m.b, fcmp(&m, LLVMRealOGE, s2, ay),
                                 LLVMBuildICmp(m.b, LLVMIntULT, c2, limit, ""), ""),
                    down, done);
    LLVMValueRef rin[2] = {ax, r2}, sin_[2] = {t, s2}, cin[2] = {zero, c2};
    LLVMBasicBlockRef dfrom[2] = {up, down};
    LLVMAddIncoming(r, rin, dfrom, 2);
    LLVMAddIncoming(s, sin_, dfrom, 2);
    LLVMAddIncoming(c, cin, dfrom, 2);
    LLVMPositionBuilderAtEnd(m.b, done); /* the sign of x, a zero's included */
    LLVMTypeRef ft = m.ft;
    LLVMValueRef cs[2] = {r2, x};
    LLVMBuildRet(m.b, cg_call_intrinsic(mod, m.b, "llvm.copysign", &ft, 1, cs, 2));
    LLVMDisposeBuilder(m.b);
    return fn;
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
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(m.lc, k, 0));
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
