/* cg_tensor.c: the tensor-core intrinsics of lowered kernels in LLVM IR.
 *
 * lane_id() reads %laneid.  mma_sync(d, a, b) loads this lane's registers
 * of the three fragments (docs/lowered-ir.md) as values through cg_emit.c's
 * ordinary local-array path, so with ssa_locals they never leave SSA form
 * and no alloca's address is taken; it packs 16-bit pairs into the
 * operand types LLVM 19's NVVM intrinsics want (i32 for bf16 and tf32,
 * <2 x half> for f16), rounds tf32 inputs to nearest even (cvt.rn.tf32.f32
 * on sm_90 with PTX 7.8 and later, the same bits from integer operations
 * before: see tf32_round), and stores the four float results back the
 * same way.  ldmatrix(trans, num, dst, src) reads num 8x8 matrices from
 * shared memory into num i32s, split into 16-bit halves, low half first
 * (a float32 destination: each i32 is one float).
 * shfl_xor(value, lane_mask) is llvm.nvvm.shfl.sync.bfly.f32 over the
 * whole warp (member mask 0xffffffff, clamp 31: a 32-lane segment).
 * cg_check has checked the operands and that the target has the
 * instructions (LLVM would abort with "Cannot select" on an older one), so
 * a surprise here is a bug.  The warp-collective calls are marked
 * convergent at the call site, so that no pass moves them into or out of
 * control flow that depends on the lane.
 */
#include <string.h>

#include "cg_internal.h"

int cg_arch_sm(const char *arch) {
    if (!arch || strncmp(arch, "sm_", 3) != 0 || arch[3] < '0' || arch[3] > '9') return 0;
    int v = 0;
    for (const char *p = arch + 3; *p >= '0' && *p <= '9' && v < 10000; p++) v = v * 10 + (*p - '0');
    return v;
}

/* mma.sync m16n8k16 with bf16 and m16n8k8 with tf32 are Ampere's (PTX
 * ISA, "Warp-level matrix instructions"); ldmatrix is Turing's, but the
 * tensor-core path as a whole is built for sm_80 and later. */
int cg_tensor_min_sm(tir_intrin op) {
    /* shfl.sync needs PTX 6.0, which LLVM assumes by default from sm_70
     * on (an older arch would need an explicit +ptx60 feature) */
    if (op == TIR_INTRIN_SHFL_XOR) return 70;
    return op == TIR_INTRIN_MMA_SYNC || op == TIR_INTRIN_LDMATRIX ? 80 : 0;
}

/* The function attribute `name` (value 0) on a call site. */
static void add_call_attr(LLVMValueRef call, const char *name) {
    LLVMContextRef lc = LLVMGetTypeContext(LLVMTypeOf(call));
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    TIR_ASSERT(kind != 0);
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(lc, kind, 0));
}

static void set_convergent(LLVMValueRef call) { add_call_attr(call, "convergent"); }

/* The element type of the local array of address_of(L[o]). */
static tir_dtype frag_dtype(const tir_expr *addr) {
    return tir_as_tir_buffer_load(tir_as_tir_call(addr)->args[0])->buffer->dtype;
}

/* The PTX ISA version in an LLVM NVPTX feature string ("+ptx78" -> 78;
 * the last "+ptxNN" wins, as in LLVM), 0 when it names none. */
static int ptx_version(const char *features) {
    int v = 0;
    for (const char *p = features ? strstr(features, "+ptx") : NULL; p; p = strstr(p + 1, "+ptx")) {
        int n = 0;
        const char *q = p + 4;
        for (; *q >= '0' && *q <= '9' && n < 10000; q++) n = n * 10 + (*q - '0');
        if (q > p + 4 && (*q == '\0' || *q == ',')) v = n;
    }
    return v;
}

bool cg_has_cvt_rn_tf32(const char *arch, const char *features) {
    return cg_arch_sm(arch) >= 90 && ptx_version(features) >= 78;
}

LLVMValueRef cg_tf32_round_ints(LLVMBuilderRef b, LLVMValueRef x) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(LLVMTypeOf(x)));
#define K(v) LLVMConstInt(i32, (v), 0)
    LLVMValueRef u = LLVMBuildBitCast(b, x, i32, "");
    /* Half an ulp of TF32 less one, plus the kept lowest bit: a tie
     * carries into an odd kept bit only, anything above half carries
     * always (into the exponent too, up to Inf past the largest finite). */
    LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, u, K(13), ""), K(1), "");
    LLVMValueRef r = LLVMBuildAdd(b, LLVMBuildAdd(b, u, K(0xfff), ""), odd, "");
    r = LLVMBuildAnd(b, r, K(0xffffe000u), "");
    /* Inf and NaN as they are: a NaN's payload could carry into the sign. */
    LLVMValueRef special =
        LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, u, K(0x7f800000u), ""), K(0x7f800000u), "");
#undef K
    return LLVMBuildSelect(b, special, u, r, "");
}

/* x rounded to TF32, to nearest even, as an i32: cvt.rn.tf32.f32 where the
 * target has it (inline PTX: LLVM 19 has no llvm.nvvm.f2tf32.rn, and an
 * unknown intrinsic name would only fail in ptxas), else the same bits
 * from integer operations. */
static LLVMValueRef tf32_round(cg *g, LLVMValueRef x) {
    const tir_codegen_opts *o = cg_opts(g);
    if (!cg_has_cvt_rn_tf32(o->arch, cg_features(o))) return cg_tf32_round_ints(cg_builder(g), x);
    LLVMContextRef lc = LLVMGetModuleContext(cg_module(g));
    LLVMTypeRef f32 = LLVMFloatTypeInContext(lc);
    LLVMTypeRef ft = LLVMFunctionType(LLVMInt32TypeInContext(lc), &f32, 1, 0);
    static const char text[] = "cvt.rn.tf32.f32 $0, $1;";
    static const char cons[] = "=r,f";
    LLVMValueRef fn = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons,
                                       sizeof cons - 1, 0, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef r = LLVMBuildCall2(cg_builder(g), ft, fn, &x, 1, "");
    /* Pure: memory(none) (the memory attribute's value 0) nounwind
     * willreturn, as the NVVM intrinsics are.  Without them LLVM assumes
     * the asm may touch memory and converts a fragment register again for
     * every mma that reads it (6x the conversions in Step 9's tf32 kernel). */
    add_call_attr(r, "memory");
    add_call_attr(r, "nounwind");
    add_call_attr(r, "willreturn");
    return r;
}

/* Operand register j (an i32 or <2 x half>) of the A or B fragment at
 * addr: element j rounded to tf32 (float32), or elements 2j, 2j+1 packed,
 * 2j in the low half (16-bit types). */
static LLVMValueRef mma_operand(cg *g, const tir_expr *addr, int j) {
    tir_dtype t = frag_dtype(addr);
    LLVMBuilderRef b = cg_builder(g);
    if (tir_dtype_eq(t, TIR_F32)) {
        LLVMValueRef x = cg_local_load(g, addr, j);
        return x ? tf32_round(g, x) : NULL;
    }
    LLVMValueRef lo = cg_local_load(g, addr, 2 * j), hi = lo ? cg_local_load(g, addr, 2 * j + 1) : NULL;
    if (!hi) return NULL;
    LLVMContextRef lc = LLVMGetModuleContext(cg_module(g));
    LLVMTypeRef i32 = LLVMInt32TypeInContext(lc);
    LLVMValueRef v = LLVMGetPoison(LLVMVectorType(LLVMTypeOf(lo), 2));
    v = LLVMBuildInsertElement(b, v, lo, LLVMConstInt(i32, 0, 0), "");
    v = LLVMBuildInsertElement(b, v, hi, LLVMConstInt(i32, 1, 0), "");
    return tir_dtype_eq(t, TIR_F16) ? v : LLVMBuildBitCast(b, v, i32, "");
}

/* D += A * B on one tile: the operands are 4 + 2 registers, then the 4
 * accumulators; the result is the 4 new accumulators. */
static LLVMValueRef mma_sync(cg *g, const tir_call *c) {
    tir_dtype in = frag_dtype(c->args[1]);
    const char *name = tir_dtype_eq(in, TIR_F32)   ? "llvm.nvvm.mma.m16n8k8.row.col.tf32"
                       : tir_dtype_eq(in, TIR_F16) ? "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"
                                                   : "llvm.nvvm.mma.m16n8k16.row.col.bf16";
    LLVMValueRef ops[10];
    for (int j = 0; j < 6; j++)
        if (!(ops[j] = mma_operand(g, c->args[j < 4 ? 1 : 2], j < 4 ? j : j - 4))) return NULL;
    for (int j = 0; j < 4; j++)
        if (!(ops[6 + j] = cg_local_load(g, c->args[0], j))) return NULL;
    LLVMBuilderRef b = cg_builder(g);
    LLVMValueRef r = cg_call_intrinsic(cg_module(g), b, name, NULL, 0, ops, 10);
    set_convergent(r);
    for (int j = 0; j < 4; j++)
        if (!cg_local_store(g, c->args[0], j, LLVMBuildExtractValue(b, r, (unsigned)j, "")))
            return NULL;
    return r;
}

/* ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16: matrix i's two
 * elements of this lane (an i32) go to dst[2i] (low half), dst[2i + 1];
 * with a float32 dst (TF32 A: rows of 4 floats) the i32 is one float,
 * dst[i]. */
static LLVMValueRef ldmatrix(cg *g, const tir_call *c) {
    int64_t trans = 0, num = 0;
    bool consts = tir_expr_const_int(c->args[0], &trans) && tir_expr_const_int(c->args[1], &num);
    TIR_ASSERT(consts); /* cg_check */
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d%s.b16", (int)num,
             trans ? ".trans" : "");
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    TIR_ASSERT(id != 0);
    LLVMValueRef p = cg_address_of(g, c->args[3]);
    if (!p) return NULL;
    /* overloaded on the pointer: .p3, the shared-memory form */
    LLVMTypeRef pt = LLVMTypeOf(p);
    bool over = LLVMIntrinsicIsOverloaded(id);
    LLVMBuilderRef b = cg_builder(g);
    LLVMValueRef r = cg_call_intrinsic(cg_module(g), b, name, over ? &pt : NULL, over, &p, 1);
    set_convergent(r);
    LLVMContextRef lc = LLVMGetModuleContext(cg_module(g));
    LLVMTypeRef i32 = LLVMInt32TypeInContext(lc);
    tir_dtype dt = frag_dtype(c->args[2]);
    LLVMTypeRef et = tir_dtype_eq(dt, TIR_F16) ? LLVMHalfTypeInContext(lc)
                                               : LLVMBFloatTypeInContext(lc);
    for (int i = 0; i < num; i++) {
        LLVMValueRef w = num == 1 ? r : LLVMBuildExtractValue(b, r, (unsigned)i, "");
        if (tir_dtype_eq(dt, TIR_F32)) {
            if (!cg_local_store(g, c->args[2], i, LLVMBuildBitCast(b, w, LLVMFloatTypeInContext(lc), "")))
                return NULL;
            continue;
        }
        LLVMValueRef v = LLVMBuildBitCast(b, w, LLVMVectorType(et, 2), "");
        for (int h = 0; h < 2; h++) {
            LLVMValueRef e = LLVMBuildExtractElement(b, v, LLVMConstInt(i32, (unsigned)h, 0), "");
            if (!cg_local_store(g, c->args[2], 2 * i + h, e)) return NULL;
        }
    }
    return r;
}

/* shfl.sync.bfly.b32 of a float32 over all 32 lanes (cg_check: lane_mask
 * is a constant 1 .. 16). */
static LLVMValueRef shfl_xor(cg *g, const tir_call *c) {
    int64_t mask = 0;
    bool k = tir_expr_const_int(c->args[1], &mask);
    TIR_ASSERT(k);
    LLVMValueRef v = cg_expr(g, c->args[0]);
    if (!v) return NULL;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(cg_module(g)));
    LLVMValueRef ops[4] = {LLVMConstInt(i32, 0xffffffffu, 0), v,
                           LLVMConstInt(i32, (unsigned long long)mask, 0), LLVMConstInt(i32, 31, 0)};
    LLVMValueRef r = cg_call_intrinsic(cg_module(g), cg_builder(g), "llvm.nvvm.shfl.sync.bfly.f32",
                                       NULL, 0, ops, 4);
    set_convergent(r);
    return r;
}

LLVMValueRef cg_tensor_call(cg *g, const tir_call *c) {
    switch (c->op) {
    case TIR_INTRIN_LANE_ID: return cg_entry_intrinsic(g, "llvm.nvvm.read.ptx.sreg.laneid");
    case TIR_INTRIN_MMA_SYNC: return mma_sync(g, c);
    case TIR_INTRIN_LDMATRIX: return ldmatrix(g, c);
    case TIR_INTRIN_SHFL_XOR: return shfl_xor(g, c);
    default: TIR_UNREACHABLE();
    }
}
