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
 * wgmma_sync (Hopper's warpgroup MMA, TF32 with A in registers) is one
 * inline-PTX statement per call: fence, the groups' wgmma.mma_async,
 * commit and wait, accumulators as tied operands (see below).
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

int cg_ptx_version(const char *features) {
    int v = 0;
    for (const char *p = features ? strstr(features, "+ptx") : NULL; p; p = strstr(p + 1, "+ptx")) {
        int n = 0;
        const char *q = p + 4;
        for (; *q >= '0' && *q <= '9' && n < 10000; q++) n = n * 10 + (*q - '0');
        if (q > p + 4 && (*q == '\0' || *q == ',')) v = n;
    }
    return v;
}

bool cg_arch_has_wgmma(const char *arch) {
    return arch && (strcmp(arch, "sm_90") == 0 || strcmp(arch, "sm_90a") == 0);
}

bool tir_codegen_arch_has_wgmma(const char *arch) { return cg_arch_has_wgmma(arch); }

bool cg_has_cvt_rn_tf32(const char *arch, const char *features) {
    return cg_arch_sm(arch) >= 90 && cg_ptx_version(features) >= 78;
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
 * with a 32-bit dst (float32: TF32 A, rows of 4 floats; int32, uint32)
 * the i32 is one element, dst[i]. */
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
    LLVMTypeRef et = cg_scalar_ty(g, dt); /* 16 or 32 bits (cg_check) */
    for (int i = 0; i < num; i++) {
        LLVMValueRef w = num == 1 ? r : LLVMBuildExtractValue(b, r, (unsigned)i, "");
        if (dt.bits == 32) {
            if (!cg_local_store(g, c->args[2], i, LLVMBuildBitCast(b, w, et, "")))
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

/* ------------------------------------------------------------ wgmma_sync
 *
 * One inline-PTX statement per call (LLVM 19 has no wgmma intrinsics):
 * the fence that makes the kernel's shared stores visible to the async
 * proxy, wgmma.fence, one wgmma.mma_async per group in order, commit and
 * wait 0, so that no accumulator register is touched while a wgmma is in
 * flight (and a wait and a fence between groups of different shapes,
 * whose accumulators the hardware does not order).  Each distinct accumulator element is one "+f" operand (an
 * output with a tied input), however many groups (k steps) accumulate
 * into it; the A registers are TF32 "r" operands, each descriptor an "l"
 * operand computed here. */

/* One distinct accumulator element: element o + k of the array of addr =
 * address_of(L[o]), at index idx of L. */
typedef struct wg_acc {
    const tir_buffer *buf;
    int64_t idx;
    const tir_expr *addr;
    int64_t k;
} wg_acc;

/* The accumulators of one wgmma_sync and each group's registers in them. */
typedef struct wg_accs {
    wg_acc *acc;
    int n;
    int *reg; /* group g's register r is acc[reg[first[g] + r]] */
    int *first;
} wg_accs;

static int64_t wg_rows(const tir_call *c, int grp) {
    int64_t r = 0;
    bool k = tir_expr_const_int(c->args[5 * grp + 4], &r);
    TIR_ASSERT(k); /* cg_check */
    return r;
}

/* The element of register r of a group whose unit stride is cs:
 * register 8u + e is element u * cs + e from the group's start. */
static int64_t wg_reg_elem(int64_t cs, int r) { return (r / 8) * cs + r % 8; }

/* The slot of element k of addr's array in a (added when new); -1 on
 * failure (the ctx has the error).  The element must be at a constant
 * index: only then are two groups' registers known to be one element
 * (or not), as the tied operands need; and inside the array (cg_check
 * could not see an index that only unrolling made constant). */
static int wg_slot(cg *g, wg_accs *a, const tir_expr *addr, int64_t k) {
    const tir_buffer *b = tir_as_tir_buffer_load(tir_as_tir_call(addr)->args[0])->buffer;
    LLVMValueRef i = cg_local_index(g, addr, k);
    if (!i) return -1;
    if (!LLVMIsAConstantInt(i)) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "codegen: wgmma_sync: the accumulator registers in '%s' are not at constant "
                 "indices (unroll the loops their offset depends on)",
                 b->name);
        cg_fail_unsupported(g, msg);
        return -1;
    }
    int64_t idx = LLVMConstIntGetSExtValue(i), size = tir_buffer_const_size(b);
    if (idx < 0 || idx >= size) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "codegen: wgmma_sync: the accumulator register %s[%lld] lies outside the "
                 "array of %lld elements",
                 b->name, (long long)idx, (long long)size);
        cg_fail_unsupported(g, msg);
        return -1;
    }
    for (int j = 0; j < a->n; j++)
        if (a->acc[j].buf == b && a->acc[j].idx == idx) return j;
    a->acc[a->n] = (wg_acc){.buf = b, .idx = idx, .addr = addr, .k = k};
    return a->n++;
}

/* Collects the distinct accumulators of c (a's arrays sized by the
 * caller: nregs registers in all). */
static bool wg_collect(cg *g, const tir_call *c, wg_accs *a) {
    int ngroups = c->nargs / 5, at = 0;
    for (int grp = 0; grp < ngroups; grp++) {
        int64_t cs = 0;
        bool k = tir_expr_const_int(c->args[5 * grp + 1], &cs);
        TIR_ASSERT(k); /* cg_check */
        a->first[grp] = at;
        for (int r = 0; r < wg_rows(c, grp) / 2; r++) {
            int j = wg_slot(g, a, c->args[5 * grp], wg_reg_elem(cs, r));
            if (j < 0) return false;
            a->reg[at++] = j;
        }
    }
    return true;
}

/* The matrix descriptor of the tile at addr (address_of(S[x]), shared):
 * bits 0-13 the address (& 0x3FFFF) >> 4; LBO 1 (unused with the
 * swizzle), SBO 64 (1024 bytes between 8-row groups), 128-byte swizzle
 * (mode 1 in bits 62-63): tools/tcpeak.c's SW128_TMPL, validated there on
 * the GPU. */
static LLVMValueRef wg_desc(cg *g, const tir_expr *addr) {
    LLVMValueRef p = cg_address_of(g, addr);
    if (!p) return NULL;
    LLVMBuilderRef b = cg_builder(g);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetModuleContext(cg_module(g)));
    LLVMValueRef v = LLVMBuildPtrToInt(b, p, i64, "");
    v = LLVMBuildAnd(b, v, LLVMConstInt(i64, 0x3FFFF, 0), "");
    v = LLVMBuildLShr(b, v, LLVMConstInt(i64, 4, 0), "");
    unsigned long long tmpl = (1ull << 62) | (64ull << 32) | (1ull << 16);
    return LLVMBuildOr(b, v, LLVMConstInt(i64, tmpl, 0), "");
}

/* The PTX text: outputs $0 .. $(nacc - 1) are the accumulators, then
 * group g's A registers at nacc + 4g .., its descriptor at nacc + 4G + g;
 * the tied inputs follow, unnamed in the text. */
static char *wg_text(const tir_call *c, const wg_accs *a) {
    int ngroups = c->nargs / 5;
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_puts(&sb, "{ .reg .pred p; setp.ne.b32 p, 1, 0;\n\t"
                    "fence.proxy.async.shared::cta;\n\twgmma.fence.sync.aligned;\n\t");
    for (int grp = 0; grp < ngroups; grp++) {
        int64_t rows = wg_rows(c, grp);
        /* in flight, the accumulators are ordered only between wgmma of
         * one shape (PTX ISA, wgmma.fence): before one of another shape,
         * the earlier ones are waited for and the registers fenced */
        if (grp > 0 && rows != wg_rows(c, grp - 1))
            ir_sb_puts(&sb, "wgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned "
                            "0;\n\twgmma.fence.sync.aligned;\n\t");
        ir_sb_printf(&sb, "wgmma.mma_async.sync.aligned.m64n%lldk8.f32.tf32.tf32 {",
                     (long long)rows);
        for (int r = 0; r < rows / 2; r++)
            ir_sb_printf(&sb, "%s$%d", r ? ", " : "", a->reg[a->first[grp] + r]);
        int ra = a->n + 4 * grp;
        ir_sb_printf(&sb, "}, {$%d, $%d, $%d, $%d}, $%d, p, 1, 1;\n\t", ra, ra + 1, ra + 2, ra + 3,
                     a->n + 4 * ngroups + grp);
    }
    ir_sb_puts(&sb, "wgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0; }");
    return sb.data;
}

/* "=f" per accumulator, "r" per A register, "l" per descriptor, the tied
 * inputs ("0" ..), and a memory clobber: the asm reads shared memory. */
static char *wg_constraints(int nacc, int ngroups) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    for (int j = 0; j < nacc; j++) ir_sb_puts(&sb, j ? ",=f" : "=f");
    for (int j = 0; j < 4 * ngroups; j++) ir_sb_puts(&sb, ",r");
    for (int j = 0; j < ngroups; j++) ir_sb_puts(&sb, ",l");
    for (int j = 0; j < nacc; j++) ir_sb_printf(&sb, ",%d", j);
    ir_sb_puts(&sb, ",~{memory}");
    return sb.data;
}

/* The operands in the order of wg_constraints' inputs; false on failure. */
static bool wg_operands(cg *g, const tir_call *c, const wg_accs *a, LLVMValueRef *ops) {
    int ngroups = c->nargs / 5;
    for (int grp = 0; grp < ngroups; grp++) {
        for (int i = 0; i < 4; i++) {
            LLVMValueRef x = cg_local_load(g, c->args[5 * grp + 2], i);
            if (!x || !(ops[4 * grp + i] = tf32_round(g, x))) return false;
        }
        if (!(ops[4 * ngroups + grp] = wg_desc(g, c->args[5 * grp + 3]))) return false;
    }
    for (int j = 0; j < a->n; j++)
        if (!(ops[5 * ngroups + j] = cg_local_load(g, a->acc[j].addr, a->acc[j].k))) return false;
    return true;
}

/* The inline asm call of c with its operands (nacc accumulators). */
static LLVMValueRef wg_call(cg *g, const tir_call *c, const wg_accs *a, LLVMValueRef *ops) {
    int ngroups = c->nargs / 5, nin = 5 * ngroups + a->n;
    LLVMContextRef lc = LLVMGetModuleContext(cg_module(g));
    LLVMTypeRef f32 = LLVMFloatTypeInContext(lc);
    LLVMTypeRef *ts = ir_xmalloc(sizeof *ts * (size_t)(nin > a->n ? nin : a->n));
    for (int j = 0; j < a->n; j++) ts[j] = f32;
    LLVMTypeRef rt = LLVMStructTypeInContext(lc, ts, (unsigned)a->n, 0);
    for (int j = 0; j < nin; j++) ts[j] = LLVMTypeOf(ops[j]);
    LLVMTypeRef ft = LLVMFunctionType(rt, ts, (unsigned)nin, 0);
    free(ts);
    char *text = wg_text(c, a), *cons = wg_constraints(a->n, ngroups);
    LLVMValueRef fn = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    free(text);
    free(cons);
    LLVMValueRef r = LLVMBuildCall2(cg_builder(g), ft, fn, ops, (unsigned)nin, "");
    set_convergent(r);
    return r;
}

/* wgmma_sync(c, cs, b, a, rows, ...) (intrinsics.def): the accumulators'
 * values in, the asm, the new values stored back. */
static LLVMValueRef wgmma_sync(cg *g, const tir_call *c) {
    int ngroups = c->nargs / 5, nregs = 0;
    for (int grp = 0; grp < ngroups; grp++) nregs += (int)(wg_rows(c, grp) / 2);
    wg_accs a = {.acc = ir_xmalloc(sizeof *a.acc * (size_t)nregs),
                 .reg = ir_xmalloc(sizeof *a.reg * (size_t)nregs),
                 .first = ir_xmalloc(sizeof *a.first * (size_t)ngroups)};
    LLVMValueRef *ops = ir_xmalloc(sizeof *ops * (size_t)(5 * ngroups + nregs));
    LLVMValueRef r = NULL;
    if (wg_collect(g, c, &a) && wg_operands(g, c, &a, ops)) {
        r = wg_call(g, c, &a, ops);
        LLVMBuilderRef b = cg_builder(g);
        for (int j = 0; r && j < a.n; j++)
            if (!cg_local_store(g, a.acc[j].addr, a.acc[j].k,
                                LLVMBuildExtractValue(b, r, (unsigned)j, "")))
                r = NULL;
    }
    free(a.acc);
    free(a.reg);
    free(a.first);
    free(ops);
    return r;
}

LLVMValueRef cg_tensor_call(cg *g, const tir_call *c) {
    switch (c->op) {
    case TIR_INTRIN_LANE_ID: return cg_entry_intrinsic(g, "llvm.nvvm.read.ptx.sreg.laneid");
    case TIR_INTRIN_MMA_SYNC: return mma_sync(g, c);
    case TIR_INTRIN_LDMATRIX: return ldmatrix(g, c);
    case TIR_INTRIN_SHFL_XOR: return shfl_xor(g, c);
    case TIR_INTRIN_WGMMA_SYNC: return wgmma_sync(g, c);
    default: TIR_UNREACHABLE();
    }
}
