/* cg_ptxas.c: rewrites, on the optimised LLVM module just before PTX
 * emission, the patterns that the PTX assembler's optimiser (ptxas, and
 * the driver's JIT, which is the same compiler) is known to miscompile, into
 * equivalent code it gets right.  Each pattern was found by the expression
 * fuzzer on the H200 and isolated by scripts/ptx/ptxas_matrix.py: the same
 * PTX is right at JIT optimisation level 0 and wrong at 1-4, with CUDA 13.0's
 * ptxas and driver 580 alike (docs/reliability.md, "The PTX assembler").
 * The rewrites keep the meaning exactly (test_cg_ptxas checks them through
 * the host JIT as well), so running them on every kernel costs only a walk
 * over its instructions.
 *
 * Pattern 1: an ordered comparison of |x| with a negative constant.  ptxas
 * takes abs(x) > -55.5 as true, also when x is NaN (then it is false).
 * Knowing the answer, we write it: for a constant c < 0, |x| > c, |x| >= c
 * and |x| != c (ordered) are "x is not NaN", |x| < c, <= c and == c are
 * false, and the unordered forms are their negations.  LLVM 19 folds only
 * comparisons with zero this way, so the pattern reaches the backend.
 * The same holds for x * x (run 116: `mul x, x; setp.gt -1` true for NaN),
 * which LLVM folds in neither form, and for |x| >= 0 and x * x >= 0 (true
 * for NaN in run 116 too): >= 0 is "x is not NaN", < 0 false.  Whether
 * x * x is NaN (LLVM's form of x * x >= -inf) is asked of x.  Run 119
 * found more values ptxas takes as never negative (x * x + 1, |x| + 1,
 * x^4, ex2(x), a select of |x| and 1): a value >= 0 by construction
 * (nonneg) compared so is rewritten the same way, with its own NaN test.
 *
 * Pattern 2: 16-bit integer min/max.  ptxas computes m = max.s16(x, 0) right
 * but then takes m == 0 as false where m is 0, in `m == 0 ? 5 : m` (int8
 * floor division by a guarded divisor, where the fuzzer found it), whether x
 * is known or read at run time; the same in 32 bits is right.  Which later
 * uses go wrong is not known, so no 8- or 16-bit min/max reaches the backend:
 * each is computed in 32 bits (extended as its signedness says) and
 * truncated back, which is the same value; so is each min/max reduction of
 * a vector (llvm.vector.reduce.*, from the loop vectoriser).
 *
 * Pattern 3: |x| of a 16-bit float.  NVPTX emits llvm.fabs on bfloat and
 * half as `and.b16 x, 0x7fff`; after `cvt.rn.bf16.f32` of a floor
 * (|floor(8 / y)| in bfloat16, the fuzzer's seed 1930000013 case 2075)
 * ptxas left the sign set: -1 where the answer is 1.  Each such fabs is
 * computed in float32 instead (extend, fabs, truncate: the same value, as
 * both conversions are exact on it), which ptxas gets right.
 *
 * Pattern 4: a signed division by a negative power of two.  NVPTX expands
 * x / -2 as -((x + (x >>> 31)) >> 1); in an int32 min-reduction of such
 * quotients with INT32_MIN among the x (the fuzzer's seed 1930200005 case
 * 672) ptxas gave -1073741824 where 1073741824 is the quotient, as if it
 * divided -x, which overflows.  Each such division reaches ptxas as inline
 * `div.sN q, x, c` instead (8 bits in 16), which ptxas expands itself; an
 * `sdiv` by a negative constant is rare in kernels (index arithmetic
 * divides by positive extents), so the cost does not matter.  LLVM would
 * re-form the expansion from any IR, so the rewrite is inline PTX; the host
 * JIT keeps LLVM's sdiv.
 *
 * Pattern 5: a negation feeding an integer min or max.  In an int32
 * min-reduction of x // -1 (the fuzzer's seed 1936300006 case 1080, on an
 * H100), NVPTX's `neg.s32` of each of four loaded values into a chain of
 * `min.s32` gave min(x) or another operand's value, not min(-x), for
 * ordinary values (x = 0, -4, -1, -4: 0 wanted, -4 got); scripts/ptx/
 * probe1080.py found `sub.s32 0, x` and `mul.lo.s32 x, -1` wrong the same
 * way and `not.b32` + `add.s32 1` right at every level.  Probably the
 * same optimisation as pattern 4's, whose expansion ends in a neg.  So
 * each `sub 0, x` (32 or 64 bits, scalar or per lane) that a min or max
 * (or a min/max reduction) reads reaches ptxas as inline `not` + `add 1`,
 * the same value; the host JIT keeps LLVM's sub.
 *
 * Pattern 6: a float16 x + 0.  In the fuzzer's seed 1936400003 case 775
 * (an H100) `add.rn.f16 y, x, 0x0000` of min/max results feeding fma.rn.f16
 * and a subtraction gave finite values or inf where NaN is right, and NaN
 * where inf is, at JIT levels 1-4; scripts/ptx/probe775.py found the same
 * PTX right at every level with only those two adds done in float32 (the
 * fma, the comparisons and the subtraction in float32 changed nothing).
 * So each float16 `fadd x, +0.0` (per lane for a vector) reaches ptxas as
 * inline cvt.f32.f16, add.rn.f32 0, cvt.rn.f16.f32: the same value (x + 0
 * is exact; -0 + 0 = +0 in both types).  Only +0: LLVM folds x + -0 to x.
 * The host JIT keeps LLVM's fadd. */
#include <stdbool.h>
#include <string.h>

#include "cg_internal.h"

/* Whether v is a constant, or a select of such, below zero in every lane
 * (not NaN, not -0). */
static bool known_negative(LLVMValueRef v, int depth) {
    if (LLVMIsAConstantFP(v)) {
        LLVMBool loses = 0;
        double d = LLVMConstRealGetDouble(v, &loses);
        return d < 0; /* false for NaN and for -0 */
    }
    if (LLVMIsAConstantDataVector(v) || LLVMIsAConstantVector(v)) {
        unsigned n = LLVMGetVectorSize(LLVMTypeOf(v));
        for (unsigned i = 0; i < n; i++) {
            LLVMValueRef e = LLVMGetAggregateElement(v, i);
            if (!e || !known_negative(e, depth)) return false;
        }
        return n > 0;
    }
    if (depth < 4 && LLVMIsASelectInst(v))
        return known_negative(LLVMGetOperand(v, 1), depth + 1) &&
               known_negative(LLVMGetOperand(v, 2), depth + 1);
    return false;
}

/* x when v is a call of llvm.fabs on x, else NULL. */
static LLVMValueRef fabs_arg(LLVMValueRef v, unsigned fabs_id) {
    if (!LLVMIsACallInst(v)) return NULL;
    LLVMValueRef callee = LLVMGetCalledValue(v);
    if (!callee || !LLVMIsAFunction(callee) || LLVMGetIntrinsicID(callee) != fabs_id) return NULL;
    return LLVMGetOperand(v, 0);
}

static LLVMRealPredicate swapped(LLVMRealPredicate p) {
    switch (p) {
    case LLVMRealOGT: return LLVMRealOLT;
    case LLVMRealOGE: return LLVMRealOLE;
    case LLVMRealOLT: return LLVMRealOGT;
    case LLVMRealOLE: return LLVMRealOGE;
    case LLVMRealUGT: return LLVMRealULT;
    case LLVMRealUGE: return LLVMRealULE;
    case LLVMRealULT: return LLVMRealUGT;
    case LLVMRealULE: return LLVMRealUGE;
    default: return p; /* symmetric */
    }
}

/* The value of |x| p c for a negative c, built at b; NULL to leave it. */
static LLVMValueRef abs_vs_negative(LLVMBuilderRef b, LLVMRealPredicate p, LLVMValueRef x,
                                    LLVMTypeRef bool_t) {
    switch (p) {
    case LLVMRealOGT:
    case LLVMRealOGE:
    case LLVMRealONE: return LLVMBuildFCmp(b, LLVMRealORD, x, x, "");
    case LLVMRealOLT:
    case LLVMRealOLE:
    case LLVMRealOEQ: return LLVMConstNull(bool_t);
    case LLVMRealUGT:
    case LLVMRealUGE:
    case LLVMRealUNE: return LLVMConstAllOnes(bool_t);
    case LLVMRealULT:
    case LLVMRealULE:
    case LLVMRealUEQ: return LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    default: return NULL;
    }
}

/* |x| p 0 or x * x p 0 (either zero) where the comparison is decided
 * except for NaN: >= is "x is not NaN", < is false (and the unordered
 * forms their negations); NULL to leave the others. */
static LLVMValueRef abs_vs_zero(LLVMBuilderRef b, LLVMRealPredicate p, LLVMValueRef x,
                                LLVMTypeRef bool_t) {
    switch (p) {
    case LLVMRealOGE: return LLVMBuildFCmp(b, LLVMRealORD, x, x, "");
    case LLVMRealOLT: return LLVMConstNull(bool_t);
    case LLVMRealUGE: return LLVMConstAllOnes(bool_t);
    case LLVMRealULT: return LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    default: return NULL;
    }
}

/* x when v is x * x (a float multiply of one value by itself: never
 * negative, and NaN exactly where x is), else NULL. */
static LLVMValueRef square_arg(LLVMValueRef v) {
    if (!LLVMIsAInstruction(v) || LLVMGetInstructionOpcode(v) != LLVMFMul) return NULL;
    LLVMValueRef a = LLVMGetOperand(v, 0);
    return a == LLVMGetOperand(v, 1) ? a : NULL;
}

/* Whether v is a float constant zero of either sign (every lane). */
static bool known_zero(LLVMValueRef v) {
    if (LLVMIsAConstantAggregateZero(v)) return true;
    if (!LLVMIsAConstantFP(v)) return false;
    LLVMBool loses = 0;
    return LLVMConstRealGetDouble(v, &loses) == 0;
}

/* x when v is |x| or x * x, else NULL. */
static LLVMValueRef nonneg_arg(LLVMValueRef v, unsigned fabs_id) {
    LLVMValueRef x = fabs_arg(v, fabs_id);
    return x ? x : square_arg(v);
}

/* Whether v is >= 0 or NaN by construction (run 119: ptxas also takes x *
 * x + 1, |x| + 1, x^4, ex2(x) and a select of |x| and 1 as never below -1,
 * NaN or not): |x|, x * x, a constant >= 0, and sums, products, fma(a, a,
 * c), min/max and selects of such, exp2/exp and sqrt. */
static bool nonneg(LLVMValueRef v, unsigned fabs_id, int depth) {
    if (LLVMIsAConstantFP(v)) {
        LLVMBool loses = 0;
        return LLVMConstRealGetDouble(v, &loses) >= 0; /* -0 too, not NaN */
    }
    if (depth > 6 || !LLVMIsAInstruction(v)) return false;
    if (fabs_arg(v, fabs_id) || square_arg(v)) return true;
    unsigned op = LLVMGetInstructionOpcode(v);
    if (op == LLVMFAdd || op == LLVMFMul)
        return nonneg(LLVMGetOperand(v, 0), fabs_id, depth + 1) &&
               nonneg(LLVMGetOperand(v, 1), fabs_id, depth + 1);
    if (op == LLVMSelect)
        return nonneg(LLVMGetOperand(v, 1), fabs_id, depth + 1) &&
               nonneg(LLVMGetOperand(v, 2), fabs_id, depth + 1);
    if (!LLVMIsACallInst(v)) return false;
    LLVMValueRef callee = LLVMGetCalledValue(v);
    if (!callee || !LLVMIsAFunction(callee) || !LLVMGetIntrinsicID(callee)) return false;
    size_t len = 0;
    const char *name = LLVMGetValueName2(callee, &len);
    bool pre = false;
    static const char *const one[] = {"llvm.exp2.", "llvm.exp.", "llvm.sqrt."};
    for (int k = 0; k < 3; k++) pre = pre || !strncmp(name, one[k], strlen(one[k]));
    if (pre) return true;
    if (!strncmp(name, "llvm.maxnum.", 12) || !strncmp(name, "llvm.minnum.", 12))
        return nonneg(LLVMGetOperand(v, 0), fabs_id, depth + 1) &&
               nonneg(LLVMGetOperand(v, 1), fabs_id, depth + 1);
    if (!strncmp(name, "llvm.fma.", 9) || !strncmp(name, "llvm.fmuladd.", 13)) {
        LLVMValueRef a = LLVMGetOperand(v, 0), c = LLVMGetOperand(v, 1);
        return (a == c || (nonneg(a, fabs_id, depth + 1) && nonneg(c, fabs_id, depth + 1))) &&
               nonneg(LLVMGetOperand(v, 2), fabs_id, depth + 1);
    }
    return false;
}

/* Pattern 1 at instruction i (an fcmp); whether it was replaced. */
static bool rewrite_abs_cmp(LLVMBuilderRef b, LLVMValueRef i, unsigned fabs_id) {
    LLVMRealPredicate p = LLVMGetFCmpPredicate(i);
    LLVMValueRef l = LLVMGetOperand(i, 0), r = LLVMGetOperand(i, 1);
    if (p == LLVMRealORD || p == LLVMRealUNO) {
        /* is x * x NaN (LLVM's fold of x * x >= -inf): is x NaN, which
         * does not ask ptxas what it believes of x * x */
        LLVMValueRef sl = square_arg(l), sr = square_arg(r);
        if (!sl && !sr) return false;
        LLVMPositionBuilderBefore(b, i);
        LLVMValueRef v = LLVMBuildFCmp(b, p, sl ? sl : l, sr ? sr : r, "");
        LLVMReplaceAllUsesWith(i, v);
        LLVMInstructionEraseFromParent(i);
        return true;
    }
    /* x: the value whose NaN-ness decides: the argument of |x| or x * x,
     * else a value >= 0 by construction itself */
    LLVMValueRef x = nonneg_arg(l, fabs_id);
    if (!x && nonneg(l, fabs_id, 0)) x = l;
    if (!x || !(known_negative(r, 0) || known_zero(r))) {
        x = nonneg_arg(r, fabs_id);
        if (!x && nonneg(r, fabs_id, 0)) x = r;
        if (!x || !(known_negative(l, 0) || known_zero(l))) return false;
        p = swapped(p);
        r = l;
    }
    if (LLVMIsAConstant(x)) return false; /* LLVM folds constants itself */
    LLVMPositionBuilderBefore(b, i);
    LLVMValueRef v = known_zero(r) ? abs_vs_zero(b, p, x, LLVMTypeOf(i))
                                   : abs_vs_negative(b, p, x, LLVMTypeOf(i));
    if (!v) return false;
    LLVMReplaceAllUsesWith(i, v);
    LLVMInstructionEraseFromParent(i);
    return true;
}

/* The intrinsics pattern 2 rewrites: min/max of two operands, and the
 * loop vectoriser's reductions of a vector (one operand, a scalar result),
 * which NVPTX expands into the same 16-bit min/max; signed ones first in
 * each group of four. */
enum {
    MM_SMIN, MM_SMAX, MM_UMIN, MM_UMAX,
    MM_RED_SMIN, MM_RED_SMAX, MM_RED_UMIN, MM_RED_UMAX,
    MM_N
};
static const char *const mm_names[MM_N] = {
    "llvm.smin", "llvm.smax", "llvm.umin", "llvm.umax",
    "llvm.vector.reduce.smin", "llvm.vector.reduce.smax", "llvm.vector.reduce.umin",
    "llvm.vector.reduce.umax"};

/* Pattern 2 at a call i of min/max k on integers (or vectors of them)
 * narrower than 32 bits; whether it was replaced. */
static bool widen_minmax(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef i, int k) {
    bool red = k >= MM_RED_SMIN, sext = k % 4 < MM_UMIN;
    LLVMValueRef x0 = LLVMGetOperand(i, 0);
    LLVMTypeRef t = LLVMTypeOf(x0), et = t; /* the operands' type */
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    if (vec) et = LLVMGetElementType(t);
    if (LLVMGetTypeKind(et) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(et) >= 32) return false;
    LLVMContextRef lc = LLVMGetModuleContext(mod);
    LLVMTypeRef wide = LLVMInt32TypeInContext(lc);
    if (vec) wide = LLVMVectorType(wide, LLVMGetVectorSize(t));
    LLVMPositionBuilderBefore(b, i);
    LLVMValueRef ops[2];
    int nops = red ? 1 : 2;
    for (int q = 0; q < nops; q++)
        ops[q] = sext ? LLVMBuildSExt(b, LLVMGetOperand(i, (unsigned)q), wide, "")
                      : LLVMBuildZExt(b, LLVMGetOperand(i, (unsigned)q), wide, "");
    unsigned id = LLVMLookupIntrinsicID(mm_names[k], strlen(mm_names[k]));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, &wide, 1);
    LLVMValueRef w =
        LLVMBuildCall2(b, LLVMIntrinsicGetType(lc, id, &wide, 1), fn, ops, (unsigned)nops, "");
    LLVMReplaceAllUsesWith(i, LLVMBuildTrunc(b, w, LLVMTypeOf(i), ""));
    LLVMInstructionEraseFromParent(i);
    return true;
}

/* Pattern 3 at instruction i: a call of llvm.fabs on half or bfloat (or a
 * vector of them) computed in float32; whether it was replaced. */
static bool widen_fabs16(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef i, unsigned fabs_id) {
    LLVMValueRef x = fabs_arg(i, fabs_id);
    if (!x) return false;
    LLVMTypeRef t = LLVMTypeOf(x), et = t;
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    if (vec) et = LLVMGetElementType(t);
    LLVMTypeKind k = LLVMGetTypeKind(et);
    if (k != LLVMHalfTypeKind && k != LLVMBFloatTypeKind) return false;
    LLVMContextRef lc = LLVMGetModuleContext(mod);
    LLVMTypeRef wide = LLVMFloatTypeInContext(lc);
    if (vec) wide = LLVMVectorType(wide, LLVMGetVectorSize(t));
    LLVMPositionBuilderBefore(b, i);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, fabs_id, &wide, 1);
    LLVMValueRef e = LLVMBuildFPExt(b, x, wide, "");
    LLVMValueRef w = LLVMBuildCall2(b, LLVMIntrinsicGetType(lc, fabs_id, &wide, 1), fn, &e, 1, "");
    LLVMReplaceAllUsesWith(i, LLVMBuildFPTrunc(b, w, t, ""));
    LLVMInstructionEraseFromParent(i);
    return true;
}

/* The negative power of two c (-2^k, k >= 1) that i divides by, as
 * `sdiv x, c` on integers of 8, 16, 32 or 64 bits (or a vector of them,
 * every lane the same c); 0 when i is not such a division. */
static long long neg_pow2_divisor(LLVMValueRef i) {
    if (LLVMGetInstructionOpcode(i) != LLVMSDiv) return 0;
    LLVMValueRef c = LLVMGetOperand(i, 1);
    LLVMTypeRef t = LLVMTypeOf(c);
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) {
        LLVMValueRef e0 = LLVMGetAggregateElement(c, 0);
        unsigned n = LLVMGetVectorSize(t);
        for (unsigned q = 1; q < n; q++)
            if (!e0 || LLVMGetAggregateElement(c, q) != e0) return 0;
        c = e0;
        t = LLVMGetElementType(t);
    }
    if (!c || !LLVMIsAConstantInt(c)) return 0;
    unsigned w = LLVMGetIntTypeWidth(t);
    if (w != 8 && w != 16 && w != 32 && w != 64) return 0;
    long long v = LLVMConstIntGetSExtValue(c);
    if (v >= -1) return 0;
    unsigned long long m = 0ULL - (unsigned long long)v; /* 2^k, also for the minimum */
    return (m & (m - 1)) ? 0 : v;
}

/* A call of the inline PTX fn on x that touches no memory and returns
 * (memory(none), nounwind, willreturn: without them the load/store
 * vectoriser does not join the loads around it). */
static LLVMValueRef pure_call(LLVMBuilderRef b, LLVMTypeRef ft, LLVMValueRef fn, LLVMValueRef x) {
    LLVMValueRef c = LLVMBuildCall2(b, ft, fn, &x, 1, "");
    LLVMContextRef lc = LLVMGetTypeContext(ft);
    static const char *const attrs[] = {"memory", "nounwind", "willreturn"};
    for (int q = 0; q < 3; q++) {
        unsigned k = LLVMGetEnumAttributeKindForName(attrs[q], strlen(attrs[q]));
        LLVMAddCallSiteAttribute(c, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(lc, k, 0));
    }
    return c;
}

/* Pattern 4 at i, `sdiv x, c` with c = -2^k: each lane's quotient by
 * inline `div.sN q, x, c` (8 bits: in 16, as NVPTX computes them), which
 * ptxas expands itself; whether it was replaced. */
/* Inline PTX `text` ($0 from $1, registers of x's element type; 8-bit
 * elements as 16-bit, sign-extended) applied to x, per lane for a vector,
 * built before instruction i (patterns 4 and 5). */
static LLVMValueRef asm_per_lane(LLVMBuilderRef b, LLVMValueRef i, LLVMValueRef x,
                                 const char *text) {
    LLVMTypeRef t = LLVMTypeOf(x), et = t;
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    if (vec) et = LLVMGetElementType(t);
    LLVMContextRef lc = LLVMGetTypeContext(t);
    unsigned w = LLVMGetIntTypeWidth(et), aw = w == 8 ? 16 : w;
    LLVMTypeRef at = w == 8 ? LLVMInt16TypeInContext(lc) : et; /* the asm's type */
    char r = aw == 16 ? 'h' : aw == 32 ? 'r' : 'l', cons[8];
    int nc = snprintf(cons, sizeof cons, "=%c,%c", r, r);
    LLVMTypeRef ft = LLVMFunctionType(at, &at, 1, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(ft, text, strlen(text), cons, (size_t)nc, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMPositionBuilderBefore(b, i);
    unsigned lanes = vec ? LLVMGetVectorSize(t) : 1;
    LLVMValueRef v = vec ? LLVMGetPoison(t) : NULL;
    for (unsigned q = 0; q < lanes; q++) {
        LLVMValueRef lane = LLVMConstInt(LLVMInt32TypeInContext(lc), q, 0);
        LLVMValueRef e = vec ? LLVMBuildExtractElement(b, x, lane, "") : x;
        if (w == 8) e = LLVMBuildSExt(b, e, at, "");
        LLVMValueRef d = pure_call(b, ft, fn, e);
        if (w == 8) d = LLVMBuildTrunc(b, d, et, "");
        v = vec ? LLVMBuildInsertElement(b, v, d, lane, "") : d;
    }
    return v;
}

/* Pattern 6: x when i is a float16 `fadd x, +0.0` (either operand order,
 * every lane +0 for a vector), else NULL. */
static LLVMValueRef f16_plus_zero(LLVMValueRef i) {
    if (LLVMGetInstructionOpcode(i) != LLVMFAdd) return NULL;
    LLVMTypeRef t = LLVMTypeOf(i);
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
    if (LLVMGetTypeKind(t) != LLVMHalfTypeKind) return NULL;
    for (unsigned q = 0; q < 2; q++) /* LLVMIsNull: +0 only, not -0 */
        if (LLVMIsConstant(LLVMGetOperand(i, q)) && LLVMIsNull(LLVMGetOperand(i, q)))
            return LLVMGetOperand(i, 1 - q);
    return NULL;
}

/* Pattern 6 at i: the sum by inline PTX in float32 on x's bits. */
static bool inline_f16_plus_zero(LLVMBuilderRef b, LLVMValueRef i) {
    LLVMValueRef x = f16_plus_zero(i);
    if (!x) return false;
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMContextRef lc = LLVMGetTypeContext(t);
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    LLVMTypeRef it = vec ? LLVMVectorType(LLVMInt16TypeInContext(lc), LLVMGetVectorSize(t))
                         : LLVMInt16TypeInContext(lc);
    LLVMPositionBuilderBefore(b, i);
    LLVMValueRef bits = LLVMBuildBitCast(b, x, it, "");
    LLVMValueRef sum = asm_per_lane(b, i, bits,
                                    "{ .reg .f32 t; cvt.f32.f16 t, $1; add.rn.f32 t, t, "
                                    "0f00000000; cvt.rn.f16.f32 $0, t; }");
    LLVMReplaceAllUsesWith(i, LLVMBuildBitCast(b, sum, t, ""));
    LLVMInstructionEraseFromParent(i);
    return true;
}

static bool inline_neg_pow2_div(LLVMBuilderRef b, LLVMValueRef i) {
    long long c = neg_pow2_divisor(i);
    if (!c) return false;
    LLVMValueRef x = LLVMGetOperand(i, 0);
    LLVMTypeRef t = LLVMTypeOf(x), et = t;
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) et = LLVMGetElementType(t);
    unsigned w = LLVMGetIntTypeWidth(et);
    char text[48];
    snprintf(text, sizeof text, "div.s%u $0, $1, %lld;", w == 8 ? 16 : w, c);
    LLVMReplaceAllUsesWith(i, asm_per_lane(b, i, x, text));
    LLVMInstructionEraseFromParent(i);
    return true;
}

/* Pattern 5: x when v is `sub 0, x` of 32- or 64-bit integers (or a
 * vector of them), else NULL. */
static LLVMValueRef negated(LLVMValueRef v) {
    if (!LLVMIsAInstruction(v) || LLVMGetInstructionOpcode(v) != LLVMSub ||
        !LLVMIsNull(LLVMGetOperand(v, 0)))
        return NULL;
    LLVMTypeRef t = LLVMTypeOf(v);
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
    if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) return NULL;
    unsigned w = LLVMGetIntTypeWidth(t);
    return w == 32 || w == 64 ? LLVMGetOperand(v, 1) : NULL;
}

/* Pattern 5 at a min/max call i: each operand that is `sub 0, x` becomes
 * inline `not.bN t, x; add.sN t, t, 1` (per lane for a vector), built
 * before i; whether any was. */
static bool inline_neg_operands(LLVMBuilderRef b, LLVMValueRef i, int k) {
    int nops = k >= MM_RED_SMIN ? 1 : 2, done = 0;
    for (int q = 0; q < nops; q++) {
        LLVMValueRef x = negated(LLVMGetOperand(i, (unsigned)q));
        if (!x) continue;
        LLVMTypeRef et = LLVMTypeOf(x);
        if (LLVMGetTypeKind(et) == LLVMVectorTypeKind) et = LLVMGetElementType(et);
        unsigned w = LLVMGetIntTypeWidth(et);
        char text[64];
        snprintf(text, sizeof text, "not.b%u $0, $1;\n\tadd.s%u $0, $0, 1;", w, w);
        LLVMSetOperand(i, (unsigned)q, asm_per_lane(b, i, x, text));
        done++;
    }
    return done > 0;
}

/* Which min/max intrinsic i calls (MM_N: none). */
static int minmax_kind(LLVMValueRef i, const unsigned ids[MM_N]) {
    if (!LLVMIsACallInst(i)) return MM_N;
    LLVMValueRef callee = LLVMGetCalledValue(i);
    if (!callee || !LLVMIsAFunction(callee)) return MM_N;
    unsigned id = LLVMGetIntrinsicID(callee);
    for (int k = 0; k < MM_N; k++)
        if (id && id == ids[k]) return k;
    return MM_N;
}

int cg_ptxas_guard(LLVMModuleRef mod, bool host) {
    unsigned fabs_id = LLVMLookupIntrinsicID("llvm.fabs", strlen("llvm.fabs"));
    unsigned mm_ids[MM_N];
    for (int k = 0; k < MM_N; k++)
        mm_ids[k] = LLVMLookupIntrinsicID(mm_names[k], strlen(mm_names[k]));
    LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
    int n = 0;
    /* pattern 3 in a second walk, after pattern 1 has seen the fabs calls
     * that comparisons use */
    for (int walk = 0; walk < 2; walk++)
        for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
            for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb;
                 bb = LLVMGetNextBasicBlock(bb))
                for (LLVMValueRef i = LLVMGetFirstInstruction(bb), next; i; i = next) {
                    next = LLVMGetNextInstruction(i);
                    int k;
                    if (walk == 1) n += fabs_arg(i, fabs_id) && widen_fabs16(b, mod, i, fabs_id);
                    else if (LLVMGetInstructionOpcode(i) == LLVMFCmp)
                        n += rewrite_abs_cmp(b, i, fabs_id);
                    else if ((k = minmax_kind(i, mm_ids)) < MM_N)
                        n += widen_minmax(b, mod, i, k) ||
                             (!host && inline_neg_operands(b, i, k));
                    else if (!host && neg_pow2_divisor(i))
                        n += inline_neg_pow2_div(b, i);
                    else if (!host && f16_plus_zero(i))
                        n += inline_f16_plus_zero(b, i);
                }
    LLVMDisposeBuilder(b);
    return n;
}
