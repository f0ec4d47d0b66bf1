/* cg_emit.c: emitting the LLVM IR of a lowered kernel.
 *
 * The kernel has been checked (cg_check.c), so anything unexpected here is
 * a compiler bug.  Expressions become SSA values; loops become the usual
 * header/body/latch blocks with a phi, which LLVM's O3 pipeline then rotates,
 * unrolls and strength-reduces.  Loops marked unrolled are unrolled here, so
 * that local arrays indexed by their variables always end up in registers
 * rather than depending on LLVM's unroll heuristics; within a basic block
 * their elements are even kept as SSA values while emitting (cg_buf.val),
 * and integer operations repeated in a block are built once (binop), so
 * LLVM gets less IR to clean up.
 *
 * Vector accesses need an alignment LLVM can trust: it comes from the
 * buffer's alignment and a small modular analysis of the index expression
 * (index = coeff * k + base for some integer k), see docs/lowered-ir.md.
 */
#include <llvm-c/DebugInfo.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "cg_internal.h"

/* value == base (mod coeff); coeff 0: the value is exactly base. */

typedef struct cg_var {
    const tir_var *var;
    LLVMValueRef val;
    cg_mod mod;
} cg_var;

typedef struct cg_buf {
    const tir_buffer *buf;
    LLVMValueRef ptr; /* the data pointer (param, shared global or alloca) */
    LLVMTypeRef elem; /* element type in memory */
    unsigned align;   /* bytes the data pointer is aligned to */
    bool readonly;    /* a parameter the kernel never writes */
    /* Local arrays: the pointer to element k, made at the first
     * constant-index access in a basic block and shared by the later ones
     * there.  Unrolled bodies index local arrays by constants thousands of
     * times (Step 8: ~2000 accesses to 84 elements), and a GEP per access
     * is IR that every pass then walks.  Per block, not once in the entry
     * block: pointers live across blocks cost instruction selection more
     * than building them saves (Step 8 4095³, docs/performance.md). */
    LLVMValueRef *const_ptr;
    int64_t nconst;
    LLVMBasicBlockRef const_bb; /* the block const_ptr's GEPs are in */
    /* Local arrays, register promotion at emission: while emission stays
     * in one basic block (val_bb), val[k] is element k's current value
     * when known.  A scalar store by constant index only records its
     * value (dirty[k]: not yet in memory) and a scalar load by constant
     * index reuses a known value, so an unrolled body's accumulator
     * updates are plain SSA arithmetic instead of GEP+load+store that
     * SROA turns back into registers (Step 8 4096^3: half the IR, a
     * sixth of the loads and stores; docs/performance.md).  Dirty values are stored (flush) before any
     * branch, so each block starts from memory, and before any access
     * the cache cannot serve (a variable index, a vector at a variable
     * start, an address); dense vector accesses at a constant start go
     * lane by lane (cached_vload, cached_vstore). */
    LLVMValueRef *val;
    /* lane[k] >= 0: val[k] is a vector (a dense vector store's value)
     * whose lane lane[k] is element k, extracted at the element's first
     * scalar use (elem_value); the extracts then sit next to their uses,
     * as they did when SROA made them, so VectorCombine does not split
     * the vector loads from shared memory feeding them into scalar loads
     * (which cost LICM, GVN and the backend's load/store vectoriser more
     * than SROA saved). */
    int8_t *lane;
    bool *dirty;
    int64_t ndirty;
    LLVMBasicBlockRef val_bb;
} cg_buf;

/* A recent integer binary operation (binop): a cache, later entries
 * replace earlier ones at the same slot. */
typedef struct cg_cse {
    LLVMBasicBlockRef bb;
    int op;
    LLVMValueRef a, b, v;
} cg_cse;
#define CG_CSE_SIZE 1021

/* At most this many copies of a body unrolled at emission (the product of
 * the extents of the unrolled loops around it); the seed's kernels make at
 * most a few hundred. */

struct cg {
    int64_t unrolled; /* the product of the extents unrolled around the emission point */
    tir_ctx *ctx;
    const tir_prim_func *f;
    const tir_codegen_opts *opts;
    const cg_info *info; /* cg_check's findings (the shared layout) */
    LLVMContextRef lc;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMBuilderRef ab; /* at the end of the entry block, for allocas */
    LLVMValueRef fn;
    cg_var *vars;
    int nvars, capvars;
    cg_buf *bufs;
    int nbufs, capbufs;
    int64_t shared_bytes;
    /* dynamic shared memory (cg_info.dyn_shared): one extern array, made
     * at the first shared Allocate, aligned to dyn_align */
    bool dyn_shared;
    int64_t dyn_align;
    LLVMValueRef dyn_base;
    bool host;
    unsigned global_as; /* address space of buffer parameters */
    bool failed;
    /* a zero-filling copy being emitted (zero_fill): this load reads
     * through select(mask, address, buffer start) and gives 0 where the
     * mask is false */
    const tir_buffer_load *masked;
    LLVMValueRef mask;
    LLVMValueRef store_mask; /* predicated_store: the guard of the store */
    LLVMTypeRef t_void, t_i1, t_i8, t_i32, t_i64, t_f16, t_bf16, t_f32, t_f64;
    cg_cse *cse; /* CG_CSE_SIZE entries */
    /* Emitting a stored value (not an index): signed integer arithmetic
     * wraps, as in the interpreter, instead of nsw.  The simplifier
     * reorders sums as if they wrapped (t + (0 - (8 + s)) -> t - s - 8),
     * so nsw there made a reordered partial sum undefined where the
     * program's own was not.  The same holds for an `if` condition that
     * reads a buffer (user data).  Indices, loop bounds and guards over
     * indices keep nsw: address arithmetic needs it, and stays in range. */
    int wrap;
    /* cg_entry_intrinsic's values, read once in the entry block */
    const char *entry_names[4];
    LLVMValueRef entry_vals[4];
    int nentry;
    cg_emit_facts facts; /* serial loops as emitted (serial_loop) */
};

static LLVMValueRef fail(cg *g, tir_status code, const char *fmt, ...) TIR_PRINTF(3, 4);
static LLVMValueRef fail(cg *g, tir_status code, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tir_ctx_fail(g->ctx, code, "%s", buf);
    g->failed = true;
    return NULL;
}

/* ------------------------------------------------------------------ types */

static LLVMTypeRef scalar_ty(cg *g, tir_dtype t) {
    switch ((tir_type_code)t.code) {
    case TIR_TYPE_BOOL: return g->t_i1;
    case TIR_TYPE_INT:
    case TIR_TYPE_UINT: return LLVMIntTypeInContext(g->lc, t.bits);
    case TIR_TYPE_FLOAT: return t.bits == 16 ? g->t_f16 : t.bits == 32 ? g->t_f32 : g->t_f64;
    case TIR_TYPE_BFLOAT: return g->t_bf16;
    case TIR_TYPE_HANDLE: return LLVMPointerTypeInContext(g->lc, 0);
    case TIR_TYPE_VOID: return g->t_void;
    }
    TIR_UNREACHABLE();
}

static LLVMTypeRef ty(cg *g, tir_dtype t) {
    LLVMTypeRef s = scalar_ty(g, t);
    return t.lanes > 1 ? LLVMVectorType(s, t.lanes) : s;
}

/* Bools are bytes in memory. */
static LLVMTypeRef mem_ty(cg *g, tir_dtype elem) {
    return tir_dtype_is_bool(elem) ? g->t_i8 : scalar_ty(g, elem);
}

static bool is_signed(tir_dtype t) { return t.code == TIR_TYPE_INT; }
static bool is_fp(tir_dtype t) { return tir_dtype_is_float(t); }

/* An integer or float constant of type t (splat for vectors). */
static LLVMValueRef const_of(cg *g, LLVMTypeRef t, int64_t iv, double fv) {
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) {
        unsigned n = LLVMGetVectorSize(t);
        LLVMValueRef s = const_of(g, LLVMGetElementType(t), iv, fv);
        LLVMValueRef *elts = ir_xmalloc(sizeof *elts * n);
        for (unsigned i = 0; i < n; i++) elts[i] = s;
        LLVMValueRef v = LLVMConstVector(elts, n);
        free(elts);
        return v;
    }
    if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind)
        return LLVMConstInt(t, (unsigned long long)iv, 1);
    return LLVMConstReal(t, fv);
}

static LLVMValueRef splat(cg *g, LLVMValueRef v, int lanes) {
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), (unsigned)lanes);
    LLVMValueRef ins =
        LLVMBuildInsertElement(g->b, LLVMGetPoison(vt), v, LLVMConstInt(g->t_i32, 0, 0), "");
    LLVMValueRef mask = LLVMConstNull(LLVMVectorType(g->t_i32, (unsigned)lanes));
    return LLVMBuildShuffleVector(g->b, ins, LLVMGetPoison(vt), mask, "");
}

/* ------------------------------------------------------------ bookkeeping */

static void push_var(cg *g, const tir_var *v, LLVMValueRef val, cg_mod m) {
    if (g->nvars == g->capvars) {
        g->capvars = g->capvars ? 2 * g->capvars : 32;
        g->vars = ir_xrealloc(g->vars, sizeof *g->vars * (size_t)g->capvars);
    }
    g->vars[g->nvars++] = (cg_var){v, val, m};
}

static const cg_var *find_var(cg *g, const tir_var *v) {
    for (int i = g->nvars - 1; i >= 0; i--)
        if (g->vars[i].var == v) return &g->vars[i];
    return NULL;
}

static cg_buf *find_buf(cg *g, const tir_buffer *b) {
    for (int i = 0; i < g->nbufs; i++)
        if (g->bufs[i].buf == b) return &g->bufs[i];
    return NULL;
}

static cg_buf *add_buf(cg *g, const tir_buffer *b, LLVMValueRef ptr, unsigned align) {
    if (g->nbufs == g->capbufs) {
        g->capbufs = g->capbufs ? 2 * g->capbufs : 16;
        g->bufs = ir_xrealloc(g->bufs, sizeof *g->bufs * (size_t)g->capbufs);
    }
    g->bufs[g->nbufs] = (cg_buf){.buf = b, .ptr = ptr, .elem = mem_ty(g, b->dtype), .align = align};
    return &g->bufs[g->nbufs++];
}

LLVMValueRef cg_call_intrinsic(LLVMModuleRef mod, LLVMBuilderRef b, const char *name,
                               LLVMTypeRef *over, int nover, LLVMValueRef *args, int nargs) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    TIR_ASSERT(id != 0);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, over, (size_t)nover);
    LLVMTypeRef fty = LLVMIntrinsicGetType(LLVMGetModuleContext(mod), id, over, (size_t)nover);
    return LLVMBuildCall2(b, fty, fn, args, (unsigned)nargs, "");
}

/* ------------------------------------------------------- modular analysis */

static cg_mod var_mod(void *env, const tir_var *v) {
    const cg_var *x = find_var(env, v);
    return x ? x->mod : CG_MOD_ANY;
}

static cg_mod mod_of(cg *g, const tir_expr *e) { return cg_mod_of(e, var_mod, g); }

/* The alignment in bytes of element `index` (+ elem_offset) of cb. */
static unsigned access_align(cg *g, const cg_buf *cb, const tir_expr *index) {
    return cg_access_align(mod_of(g, index), mod_of(g, cb->buf->elem_offset),
                           (unsigned)tir_dtype_bytes(cb->buf->dtype), cb->align);
}

/* The alignment of any element of cb. */
static unsigned elem_align(const cg_buf *cb) {
    unsigned elem = (unsigned)tir_dtype_bytes(cb->buf->dtype);
    return elem < cb->align ? elem : cb->align;
}

/* ------------------------------------- local arrays as SSA values (val) */

static LLVMValueRef elem_ptr_at(cg *g, cg_buf *cb, LLVMValueRef idx);
static LLVMValueRef elem_index(cg *g, const cg_buf *cb, LLVMValueRef idx);

/* The alignment of element k (elem_offset included) of cb: access_align
 * for a constant index. */
static unsigned const_align(const cg_buf *cb, int64_t k) {
    uint64_t elem = tir_dtype_bytes(cb->buf->dtype);
    uint64_t pow2 = k == 0 ? 4096 : ((uint64_t)k & (~(uint64_t)k + 1));
    uint64_t a = (pow2 > 4096 ? 4096 : pow2) * elem;
    return a < cb->align ? (unsigned)a : cb->align;
}

/* Stores cb's dirty values, at the builder's position. */
static LLVMValueRef elem_value(cg *g, cg_buf *cb, int64_t k) {
    if (cb->lane[k] >= 0) {
        cb->val[k] = LLVMBuildExtractElement(g->b, cb->val[k],
                                             LLVMConstInt(g->t_i32, (unsigned)cb->lane[k], 0), "");
        cb->lane[k] = -1;
    }
    return cb->val[k];
}

/* The lanes of the vector whose lanes are elements k, k + 1, ... of cb,
 * all dirty and not yet extracted, or 0. */
static int whole_vector(const cg_buf *cb, int64_t k) {
    if (cb->lane[k] != 0) return 0;
    int n = (int)LLVMGetVectorSize(LLVMTypeOf(cb->val[k]));
    if (k + n > cb->nconst) return 0;
    for (int j = 1; j < n; j++)
        if (!cb->dirty[k + j] || cb->lane[k + j] != j || cb->val[k + j] != cb->val[k]) return 0;
    return n;
}

static void cache_flush(cg *g, cg_buf *cb) {
    if (!cb->ndirty) return;
    TIR_ASSERT(cb->val_bb == LLVMGetInsertBlock(g->b));
    for (int64_t k = 0; k < cb->nconst; k++) {
        if (!cb->dirty[k]) continue;
        int n = whole_vector(cb, k);
        if (n) { /* stored as it came, as before the cache had it */
            LLVMValueRef st = LLVMBuildStore(
                g->b, cb->val[k], elem_ptr_at(g, cb, LLVMConstInt(g->t_i64, (uint64_t)k, 0)));
            LLVMSetAlignment(st, const_align(cb, k));
            for (int j = 0; j < n; j++) cb->dirty[k + j] = false;
            k += n - 1;
            continue;
        }
        LLVMValueRef st = LLVMBuildStore(
            g->b, elem_value(g, cb, k), elem_ptr_at(g, cb, LLVMConstInt(g->t_i64, (uint64_t)k, 0)));
        LLVMSetAlignment(st, const_align(cb, k));
        cb->dirty[k] = false;
    }
    cb->ndirty = 0;
}

/* Forgets cb's known values (flushed before: none is dirty). */
static void cache_forget(cg_buf *cb) {
    TIR_ASSERT(cb->ndirty == 0);
    cb->val_bb = NULL;
}

/* Before a branch: every local array's values to memory. */
static void cache_flush_all(cg *g) {
    for (int i = 0; i < g->nbufs; i++) cache_flush(g, &g->bufs[i]);
}

static LLVMValueRef br(cg *g, LLVMBasicBlockRef to) {
    cache_flush_all(g);
    return LLVMBuildBr(g->b, to);
}

static LLVMValueRef condbr(cg *g, LLVMValueRef c, LLVMBasicBlockRef t, LLVMBasicBlockRef f) {
    cache_flush_all(g);
    return LLVMBuildCondBr(g->b, c, t, f);
}

/* The element (elem_offset included) that a scalar access at idx of cb
 * can keep in val, or -1 (not a local array, not a constant index). */
static int64_t cache_slot(cg *g, cg_buf *cb, LLVMValueRef idx) {
    if (!cb->val || !LLVMIsAConstantInt(idx)) return -1;
    int64_t k = LLVMConstIntGetSExtValue(idx);
    if (k < 0 || k >= cb->nconst) return -1;
    LLVMBasicBlockRef bb = LLVMGetInsertBlock(g->b);
    if (cb->val_bb != bb) {
        /* every branch flushed: nothing is dirty in another block */
        TIR_ASSERT(cb->ndirty == 0);
        memset(cb->val, 0, sizeof *cb->val * (size_t)cb->nconst);
        memset(cb->lane, -1, sizeof *cb->lane * (size_t)cb->nconst);
        cb->val_bb = bb;
    }
    return k;
}

/* The alignment of an access at index expression start of cb; NULL: at
 * an index known only to be in cb (cg_local_load's o + k). */
static unsigned start_align(cg *g, const cg_buf *cb, const tir_expr *start) {
    return start ? access_align(g, cb, start) : elem_align(cb);
}

/* A scalar load of element idx (elem_offset included) of cb. */
static LLVMValueRef cached_load(cg *g, cg_buf *cb, LLVMValueRef idx, const tir_expr *start) {
    int64_t k = cache_slot(g, cb, idx);
    if (k >= 0 && cb->val[k]) return elem_value(g, cb, k);
    if (k < 0) cache_flush(g, cb); /* a variable index may read any element */
    LLVMValueRef v = LLVMBuildLoad2(g->b, cb->elem, elem_ptr_at(g, cb, idx), "");
    LLVMSetAlignment(v, start_align(g, cb, start));
    if (k >= 0) cb->val[k] = v;
    return v;
}

/* A scalar store of v to element idx (elem_offset included) of cb. */
static void cached_store(cg *g, cg_buf *cb, LLVMValueRef idx, const tir_expr *start,
                         LLVMValueRef v) {
    int64_t k = cache_slot(g, cb, idx);
    if (k >= 0) {
        if (!cb->dirty[k]) cb->ndirty++;
        cb->val[k] = v, cb->dirty[k] = true, cb->lane[k] = -1;
        return;
    }
    /* a variable index may write any element */
    cache_flush(g, cb);
    cache_forget(cb);
    LLVMValueRef st = LLVMBuildStore(g->b, v, elem_ptr_at(g, cb, idx));
    LLVMSetAlignment(st, start_align(g, cb, start));
}

/* Lane j of vector v where an insertelement chain put it there, or NULL. */
static LLVMValueRef lane_in_chain(LLVMValueRef v, int j) {
    for (LLVMValueRef x = v; LLVMIsAInsertElementInst(x); x = LLVMGetOperand(x, 0)) {
        LLVMValueRef at = LLVMGetOperand(x, 2);
        if (!LLVMIsAConstantInt(at)) break;
        if (LLVMConstIntGetZExtValue(at) == (unsigned long long)j) return LLVMGetOperand(x, 1);
    }
    return NULL;
}

/* The first element (elem_offset included) of a dense access of `lanes`
 * elements from constant start index `start` of cb whose elements val
 * can keep, or -1.  Such vector accesses go element by element through
 * val like scalar ones, so the alloca sees only scalar accesses and SROA
 * makes scalars of it (Step 8: no <4 x float> accumulator phis, whose
 * extract/insert chains InstCombine, GVN and type legalisation then took
 * apart again). */
static int64_t cache_vslot(cg *g, cg_buf *cb, LLVMValueRef start, int lanes) {
    if (!cb->val || !LLVMIsAConstantInt(start)) return -1;
    LLVMValueRef i = elem_index(g, cb, start);
    if (!i || !LLVMIsAConstantInt(i)) return -1;
    int64_t k = cache_slot(g, cb, i);
    return k >= 0 && k + lanes <= cb->nconst ? k : -1;
}

/* A dense vector load of elements k .. k + lanes - 1 of cb (cache_vslot):
 * the vector whose lanes they are, if they are one's, else built. */
static LLVMValueRef cached_vload(cg *g, cg_buf *cb, int64_t k, int lanes) {
    LLVMValueRef src = NULL;
    for (int j = 0; j < lanes; j++) {
        int64_t e = k + j;
        (void)cache_slot(g, cb, LLVMConstInt(g->t_i64, (unsigned long long)e, 0));
        bool same = cb->val[e] && cb->lane[e] == j && (j == 0 || cb->val[e] == src) &&
                    LLVMGetVectorSize(LLVMTypeOf(cb->val[e])) == (unsigned)lanes;
        src = same ? cb->val[e] : NULL;
        if (!same) break;
    }
    if (src) return src;
    LLVMValueRef v = LLVMGetPoison(LLVMVectorType(cb->elem, (unsigned)lanes));
    for (int j = 0; j < lanes; j++) {
        LLVMValueRef x =
            cached_load(g, cb, LLVMConstInt(g->t_i64, (unsigned long long)(k + j), 0), NULL);
        v = LLVMBuildInsertElement(g->b, v, x, LLVMConstInt(g->t_i32, (unsigned)j, 0), "");
    }
    return v;
}

/* A dense vector store of v to elements k .. k + lanes - 1 of cb
 * (cache_vslot): each lane recorded as a scalar store. */
static void cached_vstore(cg *g, cg_buf *cb, int64_t k, LLVMValueRef v, int lanes) {
    for (int j = 0; j < lanes; j++) {
        LLVMValueRef x = lane_in_chain(v, j);
        cached_store(g, cb, LLVMConstInt(g->t_i64, (unsigned long long)(k + j), 0), NULL,
                     x ? x : v);
        if (!x) cb->lane[k + j] = (int8_t)j;
    }
}

/* ------------------------------------------------------------ expressions */

static LLVMValueRef expr(cg *g, const tir_expr *e);

static LLVMValueRef contract(cg *g, LLVMValueRef v) {
    if (g->opts->fma_contract && LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v))
        LLVMSetFastMathFlags(v, LLVMFastMathAllowContract);
    return v;
}

/* The constant value of an int expression or of a Broadcast of one. */
static bool const_int_of(const tir_expr *e, int64_t *v) {
    const tir_broadcast *b = tir_as_tir_broadcast(e);
    return tir_expr_const_int(b ? b->value : e, v);
}

static LLVMValueRef floor_divmod(cg *g, tir_dtype t, const tir_expr *be, LLVMValueRef a,
                                 LLVMValueRef b, bool want_mod) {
    LLVMTypeRef lt = LLVMTypeOf(a);
    if (is_fp(t)) {
        /* float16 and bfloat16 compute in float32 and round once, as the
         * interpreter does: a quotient rounded to 16 bits first can floor
         * to another integer (docs/lowered-ir.md) */
        LLVMTypeRef ct = lt;
        if (t.bits == 16) {
            ct = g->t_f32;
            if (t.lanes > 1) ct = LLVMVectorType(ct, t.lanes);
            a = LLVMBuildFPExt(g->b, a, ct, "");
            b = LLVMBuildFPExt(g->b, b, ct, "");
        }
        LLVMValueRef q = LLVMBuildFDiv(g->b, a, b, "");
        LLVMValueRef r = cg_call_intrinsic(g->mod, g->b, "llvm.floor", &ct, 1, &q, 1);
        if (want_mod) r = LLVMBuildFSub(g->b, a, LLVMBuildFMul(g->b, r, b, ""), "");
        return ct == lt ? r : LLVMBuildFPTrunc(g->b, r, lt, "");
    }
    int64_t k;
    if (const_int_of(be, &k) && k > 0 && (k & (k - 1)) == 0) {
        /* An arithmetic shift is floor division by 2^n, and masking the low
         * bits is the (non-negative) floor remainder. */
        int sh = __builtin_ctzll((unsigned long long)k);
        if (want_mod) return LLVMBuildAnd(g->b, a, const_of(g, lt, k - 1, 0), "");
        return is_signed(t) ? LLVMBuildAShr(g->b, a, const_of(g, lt, sh, 0), "")
                            : LLVMBuildLShr(g->b, a, const_of(g, lt, sh, 0), "");
    }
    if (!is_signed(t))
        return want_mod ? LLVMBuildURem(g->b, a, b, "") : LLVMBuildUDiv(g->b, a, b, "");
    LLVMValueRef q = LLVMBuildSDiv(g->b, a, b, "");
    LLVMValueRef r = LLVMBuildSRem(g->b, a, b, "");
    LLVMValueRef zero = const_of(g, lt, 0, 0);
    /* Truncation rounds toward zero: adjust when the remainder is non-zero
     * and its sign differs from the divisor's. */
    LLVMValueRef fix;
    if (const_int_of(be, &k) && k > 0)
        fix = LLVMBuildICmp(g->b, LLVMIntSLT, r, zero, "");
    else
        fix = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntNE, r, zero, ""),
                           LLVMBuildICmp(g->b, LLVMIntSLT, LLVMBuildXor(g->b, r, b, ""), zero, ""),
                           "");
    if (want_mod) return LLVMBuildSelect(g->b, fix, LLVMBuildAdd(g->b, r, b, ""), r, "");
    return LLVMBuildSelect(g->b, fix, LLVMBuildSub(g->b, q, const_of(g, lt, 1, 0), ""), q, "");
}

/* Mod on floats: C's fmod, exact, lane by lane through cg_fmod_fn;
 * float16 and bfloat16 through float32 (fmod of their values is exact and
 * representable in them). */
static LLVMValueRef float_mod(cg *g, tir_dtype t, LLVMValueRef a, LLVMValueRef b) {
    LLVMValueRef fn = cg_fmod_fn(g->mod, t.bits == 64);
    LLVMTypeRef st = scalar_ty(g, t), ft = LLVMGlobalGetValueType(fn);
    bool narrow = t.bits == 16;
    LLVMValueRef v = t.lanes > 1 ? LLVMGetPoison(LLVMTypeOf(a)) : NULL;
    for (int j = 0; j < t.lanes; j++) {
        LLVMValueRef lane = LLVMConstInt(g->t_i32, (unsigned)j, 0);
        LLVMValueRef x[2] = {t.lanes > 1 ? LLVMBuildExtractElement(g->b, a, lane, "") : a,
                             t.lanes > 1 ? LLVMBuildExtractElement(g->b, b, lane, "") : b};
        for (int i = 0; narrow && i < 2; i++) x[i] = LLVMBuildFPExt(g->b, x[i], g->t_f32, "");
        LLVMValueRef r = LLVMBuildCall2(g->b, ft, fn, x, 2, "");
        if (narrow) r = LLVMBuildFPTrunc(g->b, r, st, "");
        if (t.lanes == 1) return r;
        v = LLVMBuildInsertElement(g->b, v, r, lane, "");
    }
    return v;
}

static LLVMValueRef compare(cg *g, tir_kind k, tir_dtype t, LLVMValueRef a, LLVMValueRef b) {
    if (is_fp(t)) {
        LLVMRealPredicate p = k == TIR_KIND_EQ   ? LLVMRealOEQ
                              : k == TIR_KIND_NE ? LLVMRealUNE
                              : k == TIR_KIND_LT ? LLVMRealOLT
                              : k == TIR_KIND_LE ? LLVMRealOLE
                              : k == TIR_KIND_GT ? LLVMRealOGT
                                                 : LLVMRealOGE;
        return LLVMBuildFCmp(g->b, p, a, b, "");
    }
    bool s = is_signed(t);
    LLVMIntPredicate p = k == TIR_KIND_EQ   ? LLVMIntEQ
                         : k == TIR_KIND_NE ? LLVMIntNE
                         : k == TIR_KIND_LT ? (s ? LLVMIntSLT : LLVMIntULT)
                         : k == TIR_KIND_LE ? (s ? LLVMIntSLE : LLVMIntULE)
                         : k == TIR_KIND_GT ? (s ? LLVMIntSGT : LLVMIntUGT)
                                            : (s ? LLVMIntSGE : LLVMIntUGE);
    return LLVMBuildICmp(g->b, p, a, b, "");
}

static LLVMValueRef binop_build(cg *g, const tir_binop *e, LLVMValueRef a, LLVMValueRef b) {
    tir_kind k = (tir_kind)e->base.kind;
    tir_dtype t = e->a->dtype;
    bool fp = is_fp(t), s = is_signed(t), nsw = s && !g->wrap;
    switch (k) {
    case TIR_KIND_ADD:
        return fp     ? contract(g, LLVMBuildFAdd(g->b, a, b, ""))
               : nsw ? LLVMBuildNSWAdd(g->b, a, b, "")
                      : LLVMBuildAdd(g->b, a, b, "");
    case TIR_KIND_SUB:
        return fp     ? contract(g, LLVMBuildFSub(g->b, a, b, ""))
               : nsw ? LLVMBuildNSWSub(g->b, a, b, "")
                      : LLVMBuildSub(g->b, a, b, "");
    case TIR_KIND_MUL:
        return fp     ? contract(g, LLVMBuildFMul(g->b, a, b, ""))
               : nsw ? LLVMBuildNSWMul(g->b, a, b, "")
                      : LLVMBuildMul(g->b, a, b, "");
    case TIR_KIND_DIV:
        return fp  ? LLVMBuildFDiv(g->b, a, b, "")
               : s ? LLVMBuildSDiv(g->b, a, b, "")
                   : LLVMBuildUDiv(g->b, a, b, "");
    case TIR_KIND_MOD:
        return fp  ? float_mod(g, t, a, b)
               : s ? LLVMBuildSRem(g->b, a, b, "")
                   : LLVMBuildURem(g->b, a, b, "");
    case TIR_KIND_FLOORDIV: return floor_divmod(g, t, e->b, a, b, false);
    case TIR_KIND_FLOORMOD: return floor_divmod(g, t, e->b, a, b, true);
    case TIR_KIND_MIN:
    case TIR_KIND_MAX:
        if (fp) {
            /* a NaN operand loses, as in the interpreter: a < b or b is NaN
             * ? a : b.  Not llvm.minnum/maxnum: LLVM 19's ValueTracking takes
             * maxnum(x, NaN) as never negative, so fabs(maxnum(-65536, NaN))
             * folded to -65536 (docs/reliability.md) */
            LLVMValueRef lt = compare(g, k == TIR_KIND_MIN ? TIR_KIND_LT : TIR_KIND_GT, t, a, b);
            LLVMValueRef bnan = LLVMBuildFCmp(g->b, LLVMRealUNO, b, b, "");
            return LLVMBuildSelect(g->b, LLVMBuildOr(g->b, lt, bnan, ""), a, b, "");
        }
        return LLVMBuildSelect(g->b, compare(g, k == TIR_KIND_MIN ? TIR_KIND_LT : TIR_KIND_GT, t, a, b),
                               a, b, "");
    case TIR_KIND_EQ:
    case TIR_KIND_NE:
    case TIR_KIND_LT:
    case TIR_KIND_LE:
    case TIR_KIND_GT:
    case TIR_KIND_GE: return compare(g, k, t, a, b);
    case TIR_KIND_AND: return LLVMBuildAnd(g->b, a, b, "");
    case TIR_KIND_OR: return LLVMBuildOr(g->b, a, b, "");
    default: TIR_UNREACHABLE();
    }
}

/* Integer binary operations are pure, so one computed earlier in the
 * same basic block with the same operands is reused: unrolled bodies
 * rebuild the same index arithmetic (thread index shifts and masks) for
 * every access, and LLVM's CSE passes then spend time removing it. */
static LLVMValueRef binop(cg *g, const tir_binop *e) {
    LLVMValueRef a = expr(g, e->a);
    if (!a) return NULL;
    LLVMValueRef b = expr(g, e->b);
    if (!b) return NULL;
    if (is_fp(e->a->dtype)) return binop_build(g, e, a, b);
    LLVMBasicBlockRef bb = LLVMGetInsertBlock(g->b);
    /* the operation is the kind and the operand type's code */
    int op = (e->base.kind * 16 + e->a->dtype.code) * 2 + (g->wrap > 0);
    uintptr_t h = ((uintptr_t)a * 31 + (uintptr_t)b) * 31 + (uintptr_t)op;
    cg_cse *c = &g->cse[(h ^ (h >> 17)) % CG_CSE_SIZE];
    if (c->bb == bb && c->op == op && c->a == a && c->b == b) return c->v;
    LLVMValueRef v = binop_build(g, e, a, b);
    *c = (cg_cse){bb, op, a, b, v};
    return v;
}

static LLVMValueRef cast(cg *g, tir_dtype to, tir_dtype from, LLVMValueRef v) {
    if (tir_dtype_eq(to, from)) return v;
    LLVMTypeRef lt = ty(g, to);
    if (tir_dtype_is_bool(to)) {
        LLVMTypeRef ft = LLVMTypeOf(v);
        return is_fp(from) ? LLVMBuildFCmp(g->b, LLVMRealUNE, v, const_of(g, ft, 0, 0.0), "")
                           : LLVMBuildICmp(g->b, LLVMIntNE, v, const_of(g, ft, 0, 0.0), "");
    }
    if (tir_dtype_is_bool(from))
        return is_fp(to) ? LLVMBuildUIToFP(g->b, v, lt, "") : LLVMBuildZExt(g->b, v, lt, "");
    if (tir_dtype_is_int(from) && tir_dtype_is_int(to)) {
        if (to.bits < from.bits) return LLVMBuildTrunc(g->b, v, lt, "");
        if (to.bits == from.bits) return v;
        return is_signed(from) ? LLVMBuildSExt(g->b, v, lt, "") : LLVMBuildZExt(g->b, v, lt, "");
    }
    if (tir_dtype_is_int(from))
        return is_signed(from) ? LLVMBuildSIToFP(g->b, v, lt, "")
                               : LLVMBuildUIToFP(g->b, v, lt, "");
    if (tir_dtype_is_int(to)) {
        /* saturating, NaN to 0, as the interpreter (and as PTX's cvt.rzi
         * does anyway): fptosi would be poison out of range, and LLVM 19
         * takes fptosi of a bfloat16 as exact in half, folding
         * fpext(sitofp(fptosi(bf16 65536)) to half) to 65536.0f, not inf */
        LLVMTypeRef tys[2] = {lt, LLVMTypeOf(v)};
        return cg_call_intrinsic(g->mod, g->b, is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat",
                                 tys, 2, &v, 1);
    }
    /* float <-> float; half <-> bfloat have the same size and go via float. */
    if (to.bits > from.bits) return LLVMBuildFPExt(g->b, v, lt, "");
    if (to.bits < from.bits) return LLVMBuildFPTrunc(g->b, v, lt, "");
    tir_dtype f32 = tir_dtype_with_lanes(TIR_F32, to.lanes);
    return LLVMBuildFPTrunc(g->b, LLVMBuildFPExt(g->b, v, ty(g, f32), ""), lt, "");
}

/* True when evaluating e may fault or be undefined, so that a Select must
 * not evaluate it unless chosen. */
static bool may_trap(const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM:
    case TIR_KIND_VAR: return false;
    case TIR_KIND_BUFFER_LOAD: return true;
    case TIR_KIND_CALL: {
        /* Math intrinsics are pure and total; the GPU intrinsics are not
         * values at all. */
        const tir_call *c = tir_as_tir_call(e);
        if (c->op == TIR_INTRIN_ADDRESS_OF || c->base.dtype.code == TIR_TYPE_VOID) return true;
        for (int i = 0; i < c->nargs; i++)
            if (may_trap(c->args[i])) return true;
        return false;
    }
    case TIR_KIND_NOT: return may_trap(tir_as_tir_not(e)->a);
    case TIR_KIND_CAST: return may_trap(tir_as_tir_cast(e)->value);
    case TIR_KIND_SELECT: {
        const tir_select *s = tir_as_tir_select(e);
        return may_trap(s->cond) || may_trap(s->t) || may_trap(s->f);
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *r = tir_as_tir_ramp(e);
        return may_trap(r->start) || may_trap(r->stride);
    }
    case TIR_KIND_BROADCAST: return may_trap(tir_as_tir_broadcast(e)->value);
    case TIR_KIND_LET: {
        const tir_let *l = tir_as_tir_let(e);
        return may_trap(l->value) || may_trap(l->body);
    }
    default: {
        const tir_binop *b = tir_as_tir_binop(e);
        TIR_ASSERT(b);
        tir_kind k = (tir_kind)e->kind;
        int64_t d;
        if ((k == TIR_KIND_DIV || k == TIR_KIND_MOD || k == TIR_KIND_FLOORDIV ||
             k == TIR_KIND_FLOORMOD) &&
            tir_dtype_is_int(e->dtype) && !(const_int_of(b->b, &d) && d != 0 && d != -1))
            return true;
        return may_trap(b->a) || may_trap(b->b);
    }
    }
}

static LLVMValueRef select_expr(cg *g, const tir_select *s) {
    if (s->cond->dtype.lanes == 1 && (may_trap(s->t) || may_trap(s->f))) {
        LLVMValueRef c = expr(g, s->cond);
        if (!c) return NULL;
        LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(g->lc, g->fn, "sel.t");
        LLVMBasicBlockRef bf = LLVMAppendBasicBlockInContext(g->lc, g->fn, "sel.f");
        LLVMBasicBlockRef bm = LLVMAppendBasicBlockInContext(g->lc, g->fn, "sel.end");
        condbr(g, c, bt, bf);
        LLVMPositionBuilderAtEnd(g->b, bt);
        LLVMValueRef vt = expr(g, s->t);
        if (!vt) return NULL;
        LLVMBasicBlockRef et = LLVMGetInsertBlock(g->b);
        br(g, bm);
        LLVMPositionBuilderAtEnd(g->b, bf);
        LLVMValueRef vf = expr(g, s->f);
        if (!vf) return NULL;
        LLVMBasicBlockRef ef = LLVMGetInsertBlock(g->b);
        br(g, bm);
        LLVMPositionBuilderAtEnd(g->b, bm);
        LLVMValueRef phi = LLVMBuildPhi(g->b, LLVMTypeOf(vt), "");
        LLVMValueRef vals[2] = {vt, vf};
        LLVMBasicBlockRef bbs[2] = {et, ef};
        LLVMAddIncoming(phi, vals, bbs, 2);
        return phi;
    }
    LLVMValueRef c = expr(g, s->cond), t = c ? expr(g, s->t) : NULL, f = t ? expr(g, s->f) : NULL;
    return f ? LLVMBuildSelect(g->b, c, t, f, "") : NULL;
}

static LLVMValueRef ramp_value(cg *g, const tir_ramp *r) {
    LLVMValueRef base = expr(g, r->start), stride = base ? expr(g, r->stride) : NULL;
    if (!stride) return NULL;
    LLVMTypeRef st = LLVMTypeOf(base);
    LLVMValueRef *steps = ir_xmalloc(sizeof *steps * (size_t)r->lanes);
    bool fp = is_fp(r->start->dtype);
    for (int i = 0; i < r->lanes; i++) steps[i] = const_of(g, st, i, (double)i);
    LLVMValueRef sv = LLVMConstVector(steps, (unsigned)r->lanes);
    free(steps);
    LLVMValueRef bs = splat(g, base, r->lanes), ss = splat(g, stride, r->lanes);
    if (fp) return LLVMBuildFAdd(g->b, bs, LLVMBuildFMul(g->b, ss, sv, ""), "");
    bool s = is_signed(r->start->dtype);
    LLVMValueRef m = s ? LLVMBuildNSWMul(g->b, ss, sv, "") : LLVMBuildMul(g->b, ss, sv, "");
    return s ? LLVMBuildNSWAdd(g->b, bs, m, "") : LLVMBuildAdd(g->b, bs, m, "");
}

/* idx (a scalar value of index type) plus cb's elem_offset. */
static LLVMValueRef elem_index(cg *g, const cg_buf *cb, LLVMValueRef idx) {
    int64_t off;
    if (tir_expr_const_int(cb->buf->elem_offset, &off) && off == 0) return idx;
    LLVMValueRef o = expr(g, cb->buf->elem_offset);
    if (!o) return NULL;
    LLVMTypeRef it = LLVMTypeOf(idx), ot = LLVMTypeOf(o);
    unsigned ib = LLVMGetIntTypeWidth(it), ob = LLVMGetIntTypeWidth(ot);
    if (ob < ib) o = LLVMBuildSExt(g->b, o, it, "");
    if (ob > ib) idx = LLVMBuildSExt(g->b, idx, ot, "");
    return LLVMBuildNSWAdd(g->b, idx, o, "");
}

/* The pointer to element idx of cb, where idx already includes the
 * elem_offset (elem_index). */
/* (cb is not const: its constant-index pointers are cached) */
static LLVMValueRef elem_ptr_at(cg *g, cg_buf *cb, LLVMValueRef idx) {
    if (!LLVMIsAConstantInt(idx)) return LLVMBuildInBoundsGEP2(g->b, cb->elem, cb->ptr, &idx, 1, "");
    /* a constant index: a constant expression into a shared global, or
     * this block's pointer into a local array */
    if (LLVMIsConstant(cb->ptr)) return LLVMConstInBoundsGEP2(cb->elem, cb->ptr, &idx, 1);
    int64_t k = LLVMConstIntGetSExtValue(idx);
    if (k < 0 || k >= cb->nconst) return LLVMBuildInBoundsGEP2(g->b, cb->elem, cb->ptr, &idx, 1, "");
    LLVMBasicBlockRef bb = LLVMGetInsertBlock(g->b);
    if (cb->const_bb != bb) {
        memset(cb->const_ptr, 0, sizeof *cb->const_ptr * (size_t)cb->nconst);
        cb->const_bb = bb;
    }
    if (!cb->const_ptr[k])
        cb->const_ptr[k] = LLVMBuildInBoundsGEP2(g->b, cb->elem, cb->ptr, &idx, 1, "");
    return cb->const_ptr[k];
}

/* The pointer to element idx (a scalar value of index type) of cb,
 * elem_offset included.  Its known values are stored first and forgotten
 * (the caller may access memory through the pointer in any way). */
static LLVMValueRef elem_ptr(cg *g, cg_buf *cb, LLVMValueRef idx) {
    cache_flush(g, cb);
    cache_forget(cb);
    LLVMValueRef i = elem_index(g, cb, idx);
    return i ? elem_ptr_at(g, cb, i) : NULL;
}

static const tir_ramp *dense_ramp(const tir_expr *idx, const tir_buffer *b) {
    const tir_ramp *r = tir_as_tir_ramp(idx);
    int64_t stride;
    if (!r || !tir_expr_const_int(r->stride, &stride) || stride != 1) return NULL;
    if ((size_t)r->lanes * tir_dtype_bytes(b->dtype) > 16) return NULL;
    return r;
}

/* `@p ld.global.nc.f32` as inline PTX, 0 where the guard is false: a
 * zero-filled element of a read-only float32 parameter.  The address is
 * computed unguarded (never dereferenced where the guard is false), so it
 * folds into a register plus constant offset like an unguarded load, and
 * the element needs a predicated load and a move instead of two selects
 * around a separate address computation (Step 8 4095³ loads eight such
 * elements per k tile). */
static LLVMValueRef masked_load(cg *g, cg_buf *cb, const tir_expr *idx) {
    /* a constant addend becomes the instruction's immediate offset, so
     * neighbouring elements share one address register */
    int64_t off = 0;
    const tir_binop *a = idx->kind == TIR_KIND_ADD ? (const tir_binop *)idx : NULL;
    if (a && tir_expr_const_int(a->b, &off) && off >= 0 && off < (1 << 20))
        idx = a->a;
    else
        off = 0;
    LLVMValueRef i = expr(g, idx);
    LLVMValueRef p = i ? elem_ptr(g, cb, i) : NULL;
    if (!p) return NULL;
    LLVMTypeRef args[2] = {LLVMTypeOf(p), g->t_i1};
    LLVMTypeRef ft = LLVMFunctionType(g->t_f32, args, 2, 0);
    char text[96];
    int n = snprintf(text, sizeof text,
                     "mov.f32 $0, 0f00000000;\n\t@$2 ld.global.nc.f32 $0, [$1+%lld];",
                     (long long)(off * 4));
    static const char cons[] = "=f,l,b";
    LLVMValueRef asm_fn = LLVMGetInlineAsm(ft, text, (size_t)n, (char *)cons, sizeof cons - 1, 0,
                                           0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef ops[2] = {p, g->mask};
    return LLVMBuildCall2(g->b, ft, asm_fn, ops, 2, "");
}

static LLVMValueRef load_expr_at(cg *g, const tir_buffer_load *l) {
    cg_buf *cb = find_buf(g, l->buffer);
    TIR_ASSERT(cb);
    const tir_expr *idx = l->indices[0];
    int lanes = l->base.dtype.lanes;
    bool is_bool = tir_dtype_is_bool(l->buffer->dtype);
    LLVMValueRef v;
    const tir_ramp *r = dense_ramp(idx, l->buffer);
    if (lanes == 1 && l != g->masked) {
        LLVMValueRef i = expr(g, idx);
        if (i) i = elem_index(g, cb, i);
        if (!i) return NULL;
        v = cached_load(g, cb, i, idx);
    } else if (lanes == 1 && cb->readonly && cb->elem == g->t_f32 &&
               !g->opts->select_zero_fill) {
        return masked_load(g, cb, idx);
    } else if (lanes == 1 || r) {
        const tir_expr *start = r ? r->start : idx;
        LLVMValueRef i = expr(g, start);
        int64_t k = i && r && l != g->masked ? cache_vslot(g, cb, i, lanes) : -1;
        if (k >= 0) {
            v = cached_vload(g, cb, k, lanes);
            return is_bool ? LLVMBuildTrunc(g->b, v, ty(g, l->base.dtype), "") : v;
        }
        LLVMValueRef p = i ? elem_ptr(g, cb, i) : NULL;
        if (!p) return NULL;
        if (l == g->masked) /* the start is aligned at least as the access */
            p = LLVMBuildSelect(g->b, g->mask, p, cb->ptr, "");
        LLVMTypeRef lt = lanes == 1 ? cb->elem : LLVMVectorType(cb->elem, (unsigned)lanes);
        v = LLVMBuildLoad2(g->b, lt, p, "");
        LLVMSetAlignment(v, access_align(g, cb, start));
        if (l == g->masked) v = LLVMBuildSelect(g->b, g->mask, v, LLVMConstNull(lt), "");
    } else {
        LLVMValueRef iv = expr(g, idx);
        if (!iv) return NULL;
        v = LLVMGetPoison(LLVMVectorType(cb->elem, (unsigned)lanes));
        unsigned align = elem_align(cb);
        for (int j = 0; j < lanes; j++) {
            LLVMValueRef lane = LLVMConstInt(g->t_i32, (unsigned)j, 0);
            LLVMValueRef p = elem_ptr(g, cb, LLVMBuildExtractElement(g->b, iv, lane, ""));
            if (!p) return NULL;
            /* a zero-filling copy's strided lanes: as the dense form, the
             * first element where the guard is false, then 0 (unguarded,
             * the lanes read past the buffer and stored what they read) */
            if (l == g->masked) p = LLVMBuildSelect(g->b, g->mask, p, cb->ptr, "");
            LLVMValueRef x = LLVMBuildLoad2(g->b, cb->elem, p, "");
            LLVMSetAlignment(x, align);
            v = LLVMBuildInsertElement(g->b, v, x, lane, "");
        }
        if (l == g->masked)
            v = LLVMBuildSelect(g->b, g->mask, v, LLVMConstNull(LLVMTypeOf(v)), "");
    }
    return is_bool ? LLVMBuildTrunc(g->b, v, ty(g, l->base.dtype), "") : v;
}

/* load_expr_at with its arithmetic nsw (see cg.wrap): the whole load, not
 * only its index expressions, since a ragged tile's zero-filled load also
 * emits its guard and address select there (resetting only the indices
 * changed the PTX of the ragged Step 8 kernels) */
static LLVMValueRef load_expr(cg *g, const tir_buffer_load *l) {
    int w = g->wrap;
    g->wrap = 0;
    LLVMValueRef v = load_expr_at(g, l);
    g->wrap = w;
    return v;
}

/* `@p st.global.f32 [p], v` as inline PTX: a guarded store with no
 * branch, so LLVM does not sink the computation of v into a conditional
 * block (at a ragged tile's write-back it sank the last k step's FMAs
 * there and ptxas then held every fragment of that step at once). */
static tir_status masked_store(cg *g, LLVMValueRef p, LLVMValueRef v) {
    LLVMTypeRef args[3] = {LLVMTypeOf(p), g->t_f32, g->t_i1};
    LLVMTypeRef ft = LLVMFunctionType(g->t_void, args, 3, 0);
    static const char text[] = "@$2 st.global.f32 [$0], $1;";
    static const char cons[] = "l,f,b,~{memory}";
    LLVMValueRef asm_fn = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons,
                                           sizeof cons - 1, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef ops[3] = {p, v, g->store_mask};
    LLVMBuildCall2(g->b, ft, asm_fn, ops, 3, "");
    return TIR_OK;
}

static tir_status store_stmt(cg *g, const tir_buffer_store *s) {
    cg_buf *cb = find_buf(g, s->buffer);
    TIR_ASSERT(cb);
    const tir_expr *idx = s->indices[0];
    int lanes = s->value->dtype.lanes;
    g->wrap++;
    LLVMValueRef v = expr(g, s->value);
    g->wrap--;
    if (!v) return tir_ctx_error_code(g->ctx);
    if (tir_dtype_is_bool(s->buffer->dtype))
        v = LLVMBuildZExt(g->b, v, lanes > 1 ? LLVMVectorType(g->t_i8, (unsigned)lanes) : g->t_i8,
                          "");
    const tir_ramp *r = dense_ramp(idx, s->buffer);
    if (lanes == 1 && !g->store_mask) {
        LLVMValueRef i = expr(g, idx);
        if (i) i = elem_index(g, cb, i);
        if (!i) return tir_ctx_error_code(g->ctx);
        cached_store(g, cb, i, idx, v);
        return TIR_OK;
    }
    if (lanes == 1 || r) {
        const tir_expr *start = r ? r->start : idx;
        LLVMValueRef i = expr(g, start);
        int64_t k = i && r && !g->store_mask ? cache_vslot(g, cb, i, lanes) : -1;
        if (k >= 0) {
            cached_vstore(g, cb, k, v, lanes);
            return TIR_OK;
        }
        LLVMValueRef p = i ? elem_ptr(g, cb, i) : NULL;
        if (!p) return tir_ctx_error_code(g->ctx);
        if (g->store_mask) return masked_store(g, p, v);
        LLVMValueRef st = LLVMBuildStore(g->b, v, p);
        LLVMSetAlignment(st, access_align(g, cb, start));
        return TIR_OK;
    }
    LLVMValueRef iv = expr(g, idx);
    if (!iv) return tir_ctx_error_code(g->ctx);
    unsigned align = elem_align(cb);
    for (int j = 0; j < lanes; j++) {
        LLVMValueRef lane = LLVMConstInt(g->t_i32, (unsigned)j, 0);
        LLVMValueRef p = elem_ptr(g, cb, LLVMBuildExtractElement(g->b, iv, lane, ""));
        if (!p) return tir_ctx_error_code(g->ctx);
        LLVMValueRef st = LLVMBuildStore(g->b, LLVMBuildExtractElement(g->b, v, lane, ""), p);
        LLVMSetAlignment(st, align);
    }
    return TIR_OK;
}

/* One lane of a math intrinsic on scalar float type t. */
static LLVMValueRef math_scalar(cg *g, tir_intrin op, tir_dtype t, LLVMValueRef *a, int n) {
    LLVMTypeRef lt = scalar_ty(g, t);
    if (op == TIR_INTRIN_FABS) return cg_call_intrinsic(g->mod, g->b, "llvm.fabs", &lt, 1, a, 1);
    if (op == TIR_INTRIN_FMA) return cg_call_intrinsic(g->mod, g->b, "llvm.fma", &lt, 1, a, 3);
    /* Half types compute in float: exact for sqrt (float has more than
     * twice their precision) and within the float error otherwise. */
    bool narrow = t.bits == 16;
    LLVMValueRef x[2];
    for (int i = 0; i < n; i++) x[i] = narrow ? LLVMBuildFPExt(g->b, a[i], g->t_f32, "") : a[i];
    LLVMTypeRef ct = narrow ? g->t_f32 : lt;
    LLVMValueRef r;
    if (op == TIR_INTRIN_SQRT) {
        r = cg_call_intrinsic(g->mod, g->b, "llvm.sqrt", &ct, 1, x, 1);
    } else {
        LLVMValueRef fn = cg_math_fn(g->mod, op, t.bits == 64);
        r = LLVMBuildCall2(g->b, LLVMGlobalGetValueType(fn), fn, x, (unsigned)n, "");
    }
    return narrow ? LLVMBuildFPTrunc(g->b, r, lt, "") : r;
}

static LLVMValueRef math_call(cg *g, const tir_call *c) {
    LLVMValueRef a[3];
    for (int i = 0; i < c->nargs; i++)
        if (!(a[i] = expr(g, c->args[i]))) return NULL;
    tir_dtype t = c->base.dtype;
    if (t.lanes == 1) return math_scalar(g, c->op, t, a, c->nargs);
    LLVMValueRef v = LLVMGetPoison(ty(g, t));
    for (int j = 0; j < t.lanes; j++) {
        LLVMValueRef lane = LLVMConstInt(g->t_i32, (unsigned)j, 0), x[3];
        for (int i = 0; i < c->nargs; i++) x[i] = LLVMBuildExtractElement(g->b, a[i], lane, "");
        v = LLVMBuildInsertElement(
            g->b, v, math_scalar(g, c->op, tir_dtype_element(t), x, c->nargs), lane, "");
    }
    return v;
}

/* The address of address_of(load)'s element. */
static LLVMValueRef address_of_at(cg *g, const tir_expr *e) {
    const tir_buffer_load *l = tir_as_tir_buffer_load(tir_as_tir_call(e)->args[0]);
    cg_buf *cb = find_buf(g, l->buffer);
    TIR_ASSERT(cb);
    /* a cp_async's stride-1 Ramp (cg_check takes it there only): its
     * first element */
    const tir_ramp *r = tir_as_tir_ramp(l->indices[0]);
    LLVMValueRef i = expr(g, r ? r->start : l->indices[0]);
    return i ? elem_ptr(g, cb, i) : NULL;
}

/* address_of_at with its index arithmetic nsw (see cg.wrap) */
static LLVMValueRef address_of(cg *g, const tir_expr *e) {
    int w = g->wrap;
    g->wrap = 0;
    LLVMValueRef v = address_of_at(g, e);
    g->wrap = w;
    return v;
}

/* ------------------------------------------ hooks for cg_tensor.c */

LLVMBuilderRef cg_builder(cg *g) { return g->b; }
LLVMModuleRef cg_module(cg *g) { return g->mod; }
const tir_codegen_opts *cg_opts(cg *g) { return g->opts; }
LLVMValueRef cg_address_of(cg *g, const tir_expr *addr) { return address_of(g, addr); }
LLVMValueRef cg_expr(cg *g, const tir_expr *e) { return expr(g, e); }
LLVMTypeRef cg_scalar_ty(cg *g, tir_dtype t) { return scalar_ty(g, t); }

/* Read in the entry block, the value dominates the whole kernel; one
 * value (rather than a call per use) also lets binop share the index
 * arithmetic built from it within a block (lowered fragment accesses
 * compute lane_id() / 4 and % 4 for every register). */
LLVMValueRef cg_entry_intrinsic(cg *g, const char *name) {
    for (int i = 0; i < g->nentry; i++)
        if (strcmp(g->entry_names[i], name) == 0) return g->entry_vals[i];
    TIR_ASSERT(g->nentry < (int)(sizeof g->entry_vals / sizeof g->entry_vals[0]));
    LLVMValueRef v = cg_call_intrinsic(g->mod, g->ab, name, NULL, 0, NULL, 0);
    g->entry_names[g->nentry] = name;
    g->entry_vals[g->nentry++] = v;
    return v;
}

/* The buffer of address_of(L[o]) and the index o + k (elem_offset
 * included): a constant when o is one, so the element can stay an SSA
 * value (cache_slot). */
static cg_buf *local_elem(cg *g, const tir_expr *addr, int64_t k, LLVMValueRef *idx) {
    const tir_buffer_load *l = tir_as_tir_buffer_load(tir_as_tir_call(addr)->args[0]);
    cg_buf *cb = find_buf(g, l->buffer);
    TIR_ASSERT(cb && l->buffer->scope == TIR_SCOPE_LOCAL);
    int w = g->wrap;
    g->wrap = 0;
    LLVMValueRef i = expr(g, l->indices[0]);
    g->wrap = w;
    if (!i) return NULL;
    if (k) i = LLVMBuildNSWAdd(g->b, i, LLVMConstInt(LLVMTypeOf(i), (unsigned long long)k, 1), "");
    *idx = elem_index(g, cb, i);
    return *idx ? cb : NULL;
}

LLVMValueRef cg_local_load(cg *g, const tir_expr *addr, int64_t k) {
    LLVMValueRef i;
    cg_buf *cb = local_elem(g, addr, k, &i);
    return cb ? cached_load(g, cb, i, NULL) : NULL;
}

bool cg_local_store(cg *g, const tir_expr *addr, int64_t k, LLVMValueRef v) {
    LLVMValueRef i;
    cg_buf *cb = local_elem(g, addr, k, &i);
    if (cb) cached_store(g, cb, i, NULL, v);
    return cb != NULL;
}

LLVMValueRef cg_local_index(cg *g, const tir_expr *addr, int64_t k) {
    LLVMValueRef i;
    return local_elem(g, addr, k, &i) ? i : NULL;
}

LLVMValueRef cg_fail_unsupported(cg *g, const char *msg) {
    return fail(g, TIR_ERR_UNSUPPORTED, "%s", msg);
}

/* atomic_add: a relaxed (monotonic) atomicrmw fadd; its result unused, the
 * NVPTX backend emits atom.global.add.f32, which ptxas turns into a RED
 * (no return trip); on the host LLVM expands it to a cmpxchg loop.  No
 * ordering with other memory operations is needed: kernel boundaries
 * order the zeroing before the adds and the adds before any read. */
static LLVMValueRef atomic_add(cg *g, const tir_call *c) {
    LLVMValueRef p = address_of(g, c->args[0]), v = p ? expr(g, c->args[1]) : NULL;
    if (!v) return NULL;
    return LLVMBuildAtomicRMW(g->b, LLVMAtomicRMWBinOpFAdd, p, v, LLVMAtomicOrderingMonotonic, 0);
}

static LLVMValueRef call_expr(cg *g, const tir_call *c) {
    if (g->host && (c->op == TIR_INTRIN_SYNCTHREADS || c->op == TIR_INTRIN_CP_ASYNC ||
                    c->op == TIR_INTRIN_CP_ASYNC_COMMIT || c->op == TIR_INTRIN_CP_ASYNC_WAIT ||
                    c->op == TIR_INTRIN_LANE_ID || c->op == TIR_INTRIN_MMA_SYNC ||
                    c->op == TIR_INTRIN_LDMATRIX || c->op == TIR_INTRIN_SHFL_XOR ||
                    c->op == TIR_INTRIN_WGMMA_SYNC))
        return fail(g, TIR_ERR_UNSUPPORTED, "codegen: %s cannot run on the host",
                    tir_intrin_name(c->op));
    switch (c->op) {
    case TIR_INTRIN_SYNCTHREADS:
        return cg_call_intrinsic(g->mod, g->b, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
    case TIR_INTRIN_CP_ASYNC: {
        int64_t bytes = 0;
        tir_expr_const_int(c->args[2], &bytes);
        LLVMValueRef p[3] = {address_of(g, c->args[0]), NULL, NULL};
        if (!p[0] || !(p[1] = address_of(g, c->args[1]))) return NULL;
        /* .cg (L2 only) exists only for 16-byte copies; the ".s" forms
         * take the source size (PTX src-size: the rest zero-filled) */
        bool zf = c->nargs == 4;
        if (zf && !(p[2] = expr(g, c->args[3]))) return NULL;
        const char *name = bytes == 16 ? (zf ? "llvm.nvvm.cp.async.cg.shared.global.16.s"
                                             : "llvm.nvvm.cp.async.cg.shared.global.16")
                           : bytes == 8 ? (zf ? "llvm.nvvm.cp.async.ca.shared.global.8.s"
                                              : "llvm.nvvm.cp.async.ca.shared.global.8")
                                        : (zf ? "llvm.nvvm.cp.async.ca.shared.global.4.s"
                                              : "llvm.nvvm.cp.async.ca.shared.global.4");
        return cg_call_intrinsic(g->mod, g->b, name, NULL, 0, p, zf ? 3 : 2);
    }
    case TIR_INTRIN_CP_ASYNC_COMMIT:
        return cg_call_intrinsic(g->mod, g->b, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
    case TIR_INTRIN_CP_ASYNC_WAIT: {
        int64_t n = 0;
        tir_expr_const_int(c->args[0], &n);
        LLVMValueRef a = LLVMConstInt(g->t_i32, (unsigned long long)n, 0);
        return cg_call_intrinsic(g->mod, g->b, "llvm.nvvm.cp.async.wait.group", NULL, 0, &a, 1);
    }
    case TIR_INTRIN_ADDRESS_OF: return address_of(g, &c->base);
    case TIR_INTRIN_ATOMIC_ADD: return atomic_add(g, c);
    case TIR_INTRIN_LANE_ID:
    case TIR_INTRIN_MMA_SYNC:
    case TIR_INTRIN_LDMATRIX:
    case TIR_INTRIN_SHFL_XOR:
    case TIR_INTRIN_WGMMA_SYNC: return cg_tensor_call(g, c);
    default: return math_call(g, c);
    }
}

static LLVMValueRef expr(cg *g, const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: {
        int64_t v = tir_as_tir_int_imm(e)->value;
        if (tir_dtype_is_bool(e->dtype)) v &= 1;
        return LLVMConstInt(ty(g, e->dtype), (unsigned long long)v, 1);
    }
    case TIR_KIND_FLOAT_IMM: return LLVMConstReal(ty(g, e->dtype), tir_as_tir_float_imm(e)->value);
    case TIR_KIND_VAR: {
        const cg_var *v = find_var(g, tir_as_tir_var(e));
        if (!v)
            return fail(g, TIR_ERR_UNSUPPORTED, "codegen: variable '%s' is not defined",
                        tir_as_tir_var(e)->name);
        return v->val;
    }
    case TIR_KIND_NOT: {
        LLVMValueRef a = expr(g, tir_as_tir_not(e)->a);
        return a ? LLVMBuildNot(g->b, a, "") : NULL;
    }
    case TIR_KIND_SELECT: return select_expr(g, tir_as_tir_select(e));
    case TIR_KIND_CAST: {
        const tir_cast *c = tir_as_tir_cast(e);
        LLVMValueRef v = expr(g, c->value);
        return v ? cast(g, e->dtype, c->value->dtype, v) : NULL;
    }
    case TIR_KIND_BUFFER_LOAD: return load_expr(g, tir_as_tir_buffer_load(e));
    case TIR_KIND_RAMP: return ramp_value(g, tir_as_tir_ramp(e));
    case TIR_KIND_BROADCAST: {
        const tir_broadcast *b = tir_as_tir_broadcast(e);
        LLVMValueRef v = expr(g, b->value);
        return v ? splat(g, v, b->lanes) : NULL;
    }
    case TIR_KIND_CALL: return call_expr(g, tir_as_tir_call(e));
    case TIR_KIND_LET: {
        const tir_let *l = tir_as_tir_let(e);
        LLVMValueRef v = expr(g, l->value);
        if (!v) return NULL;
        push_var(g, l->var, v, mod_of(g, l->value));
        LLVMValueRef r = expr(g, l->body);
        g->nvars--;
        return r;
    }
    default:
        if (tir_kind_is_binop((tir_kind)e->kind)) return binop(g, tir_as_tir_binop(e));
        TIR_UNREACHABLE();
    }
}

/* ------------------------------------------------------------- statements */

static tir_status stmt(cg *g, const tir_stmt *s);

static void set_loop_md(cg *g, LLVMValueRef br, const char *key, int count) {
    LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(g->lc, key, strlen(key)), NULL};
    if (count >= 0) ops[1] = LLVMValueAsMetadata(LLVMConstInt(g->t_i32, (unsigned)count, 0));
    LLVMMetadataRef prop = LLVMMDNodeInContext2(g->lc, ops, count >= 0 ? 2 : 1);
    /* A loop ID refers to itself; replacing the placeholder makes it
     * distinct, as LLVM requires. */
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(g->lc, NULL, 0);
    LLVMMetadataRef lops[2] = {tmp, prop};
    LLVMMetadataRef loop = LLVMMDNodeInContext2(g->lc, lops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, loop);
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(g->lc, "llvm.loop", 9),
                    LLVMMetadataAsValue(g->lc, loop));
}

static tir_status serial_loop(cg *g, const tir_for *f);

static tir_status thread_loop(cg *g, const tir_for *f) {
    if (g->host) return serial_loop(g, f);
    int axis = tir_launch_axis(f->thread_tag);
    TIR_ASSERT(axis >= 0);
    /* ctaid.x for blockIdx.x, tid.x for threadIdx.x, ... */
    char sreg[48];
    snprintf(sreg, sizeof sreg, "llvm.nvvm.read.ptx.sreg.%s.%c",
             tir_thread_axis_kind(axis) == TIR_AXIS_KIND_BLOCK ? "ctaid" : "tid",
             "xyz"[tir_thread_axis_dim(axis)]);
    LLVMValueRef v = cg_call_intrinsic(g->mod, g->b, sreg, NULL, 0, NULL, 0);
    tir_dtype vt = f->var->base.dtype;
    if (vt.bits > 32) v = LLVMBuildZExt(g->b, v, ty(g, vt), "");
    if (vt.bits < 32) v = LLVMBuildTrunc(g->b, v, ty(g, vt), "");
    push_var(g, f->var, v, CG_MOD_ANY);
    tir_status s = stmt(g, f->body);
    g->nvars--;
    return s;
}

/* The instructions of g's function so far. */
static int64_t ninsts(cg *g) {
    int64_t n = 0;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(g->fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
            n++;
    return n;
}

static tir_status serial_loop(cg *g, const tir_for *f) {
    const tir_annot *an = tir_annots_get(f->nannots, f->annots, TIR_ANN_PRAGMA_UNROLL_MAX_STEP);
    int64_t ext, mn;
    bool cext = tir_expr_const_int(f->extent, &ext), cmin = tir_expr_const_int(f->min, &mn);
    LLVMValueRef minv = expr(g, f->min);
    if (!minv) return tir_ctx_error_code(g->ctx);
    tir_dtype vt = f->var->base.dtype;
    /* unrolled here only while the copies of the innermost body stay
     * within CG_MAX_UNROLLED: three nested T.unroll(1000) made 10^9 of
     * them, and codegen died in LLVM's allocator (a new user's try,
     * sixteenth session); past it the loop stays a loop, not unrolled by
     * LLVM either (the same meaning) */
    bool fits = cext && (ext <= 1 || g->unrolled <= CG_MAX_UNROLLED / ext);
    if (f->kind == TIR_FOR_UNROLLED && !an && cext && ext <= 1024 && fits) {
        cg_mod mm = mod_of(g, f->min);
        int64_t outer = g->unrolled;
        g->unrolled *= ext > 1 ? ext : 1;
        for (int64_t k = 0; k < ext; k++) {
            LLVMValueRef kv = LLVMConstInt(ty(g, vt), (unsigned long long)k, 1);
            LLVMValueRef v = cmin ? LLVMConstInt(ty(g, vt), (unsigned long long)(mn + k), 1)
                                  : LLVMBuildNSWAdd(g->b, minv, kv, "");
            push_var(g, f->var, v, cg_mod_norm(mm.coeff, mm.base + k));
            tir_status s = stmt(g, f->body);
            g->nvars--;
            if (s != TIR_OK) g->unrolled = outer;
            TIR_TRY(s);
        }
        g->unrolled = outer;
        return TIR_OK;
    }
    LLVMValueRef extv = expr(g, f->extent);
    if (!extv) return tir_ctx_error_code(g->ctx);
    bool sg = is_signed(vt);
    LLVMValueRef end =
        sg ? LLVMBuildNSWAdd(g->b, minv, extv, "") : LLVMBuildAdd(g->b, minv, extv, "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef hdr = LLVMAppendBasicBlockInContext(g->lc, g->fn, "for.hdr");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->lc, g->fn, "for.body");
    LLVMBasicBlockRef latch = LLVMAppendBasicBlockInContext(g->lc, g->fn, "for.latch");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(g->lc, g->fn, "for.end");
    br(g, hdr);
    LLVMPositionBuilderAtEnd(g->b, hdr);
    LLVMValueRef i = LLVMBuildPhi(g->b, ty(g, vt), f->var->name);
    LLVMValueRef cond = LLVMBuildICmp(g->b, sg ? LLVMIntSLT : LLVMIntULT, i, end, "");
    condbr(g, cond, body, exit);
    LLVMPositionBuilderAtEnd(g->b, body);
    push_var(g, f->var, i, CG_MOD_ANY);
    int64_t n0 = ninsts(g);
    tir_status s = stmt(g, f->body);
    g->nvars--;
    TIR_TRY(s);
    br(g, latch);
    /* facts for the choice of pipeline: LLVM leaves a loop marked
     * unroll.disable as it is */
    int64_t nbody = ninsts(g) - n0;
    g->facts.nloops++;
    if (!(an && an->i <= 1)) {
        if (nbody < g->facts.min_loop_body) g->facts.min_loop_body = nbody;
        int64_t trips;
        if (tir_expr_const_int(f->extent, &trips) && trips * nbody < g->facts.min_loop_work)
            g->facts.min_loop_work = trips * nbody;
        g->facts.unroll_hint |= an || f->kind == TIR_FOR_UNROLLED;
    }
    LLVMPositionBuilderAtEnd(g->b, latch);
    LLVMValueRef one = LLVMConstInt(ty(g, vt), 1, 0);
    LLVMValueRef next = sg ? LLVMBuildNSWAdd(g->b, i, one, "") : LLVMBuildAdd(g->b, i, one, "");
    LLVMValueRef back = br(g, hdr);
    LLVMValueRef vals[2] = {minv, next};
    LLVMBasicBlockRef bbs[2] = {pre, latch};
    LLVMAddIncoming(i, vals, bbs, 2);
    if (an)
        set_loop_md(g, back, an->i > 1 ? "llvm.loop.unroll.count" : "llvm.loop.unroll.disable",
                    an->i > 1 ? (int)(an->i > 1024 ? 1024 : an->i) : -1);
    else if (f->kind == TIR_FOR_UNROLLED && fits)
        set_loop_md(g, back, "llvm.loop.unroll.full", -1);
    LLVMPositionBuilderAtEnd(g->b, exit);
    return TIR_OK;
}

static void sanitize(char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            *s = '_';
}

/* Static shared memory: a global of the buffer's own in address space 3. */
static LLVMValueRef static_shared(cg *g, LLVMTypeRef at, const char *name, unsigned align) {
    LLVMValueRef p = LLVMAddGlobalInAddressSpace(g->mod, at, name, 3);
    LLVMSetInitializer(p, LLVMGetUndef(at));
    LLVMSetLinkage(p, LLVMInternalLinkage);
    LLVMSetAlignment(p, align);
    return p;
}

/* Dynamic shared memory: the buffer at byte `offset` of the one extern
 * array (PTX `.extern .shared .align A .b8 minitir_dyn_shared[]`), whose
 * size the launch gives.  The array is aligned to the largest buffer
 * alignment and every offset is a multiple of the buffer's, so the
 * alignment LLVM is told for each access holds as with static arrays. */
static LLVMValueRef dynamic_shared(cg *g, int64_t offset) {
    if (!g->dyn_base) {
        LLVMTypeRef at = LLVMArrayType2(g->t_i8, 0);
        g->dyn_base = LLVMAddGlobalInAddressSpace(g->mod, at, "minitir_dyn_shared", 3);
        LLVMSetLinkage(g->dyn_base, LLVMExternalLinkage);
        LLVMSetAlignment(g->dyn_base, (unsigned)g->dyn_align);
    }
    LLVMValueRef off = LLVMConstInt(g->t_i64, (unsigned long long)offset, 0);
    return LLVMConstInBoundsGEP2(g->t_i8, g->dyn_base, &off, 1);
}

static tir_status allocate(cg *g, const tir_allocate *a) {
    const tir_buffer *b = a->buffer;
    if (!find_buf(g, b)) {
        int64_t n = tir_buffer_const_size(b);
        LLVMTypeRef et = mem_ty(g, b->dtype);
        LLVMTypeRef at = LLVMArrayType2(et, (uint64_t)n);
        unsigned align = b->align > 16 ? (unsigned)b->align : 16;
        /* wgmma tiles start on 1024-byte boundaries (cg_shared_align) */
        if (b->scope == TIR_SCOPE_SHARED && !g->host) align = (unsigned)cg_shared_align(g->info, b);
        char name[128];
        snprintf(name, sizeof name, "%s_%s", b->name,
                 b->scope == TIR_SCOPE_SHARED ? "shared" : "local");
        sanitize(name);
        LLVMValueRef p;
        if (b->scope == TIR_SCOPE_SHARED && !g->host) {
            /* the layout of cg_check's shared_layout */
            int64_t start = (g->shared_bytes + align - 1) / align * align;
            p = g->dyn_shared ? dynamic_shared(g, start) : static_shared(g, at, name, align);
            g->shared_bytes = start + n * (int64_t)tir_dtype_bytes(b->dtype);
        } else {
            p = LLVMBuildAlloca(g->ab, at, name);
            LLVMSetAlignment(p, align);
        }
        cg_buf *cb = add_buf(g, b, p, align);
        if (LLVMIsAAllocaInst(p) && n <= 4096) {
            cb->nconst = n;
            cb->const_ptr = tir_ctx_alloc(g->ctx, sizeof *cb->const_ptr * (size_t)n);
            if (g->opts->ssa_locals) {
                cb->val = tir_ctx_alloc(g->ctx, sizeof *cb->val * (size_t)n);
                cb->dirty = tir_ctx_alloc(g->ctx, sizeof *cb->dirty * (size_t)n);
                cb->lane = tir_ctx_alloc(g->ctx, sizeof *cb->lane * (size_t)n);
            }
        }
    }
    return stmt(g, a->body);
}

/* An `if` condition.  One over data wraps as a stored value does (see
 * cg.wrap): the simplifier may have reordered its sums, and its values are
 * the user's, anywhere in the dtype.  Guards over indices keep nsw, whose
 * PTX the tiles need. */
static LLVMValueRef cond_expr(cg *g, const tir_expr *cond) {
    bool data = tir_reads_buffer(cond);
    g->wrap += data;
    LLVMValueRef c = expr(g, cond);
    g->wrap -= data;
    return c;
}

/* The global load of a zero-filling copy, relax_guards' `if c: S[i] =
 * G[j] else: S[i] = 0` (vectorized or not), or NULL. */
static const tir_buffer_load *zero_fill_load(const tir_if *f) {
    const tir_buffer_store *t = tir_as_tir_buffer_store(f->then_s);
    const tir_buffer_store *e = f->else_s ? tir_as_tir_buffer_store(f->else_s) : NULL;
    if (!t || !e || t->buffer != e->buffer || t->nidx != 1 || e->nidx != 1 ||
        !tir_struct_equal(t->indices[0], e->indices[0]) || !ir_is_zero_bits(e->value) ||
        f->cond->dtype.lanes != 1)
        return NULL;
    const tir_buffer_load *l = tir_as_tir_buffer_load(t->value);
    /* the load's address is computed where the guard is false too: an
     * index that reads memory (G[I[k]], the guard keeping k in I's range)
     * would read it unguarded */
    return l && l->buffer->scope == TIR_SCOPE_GLOBAL && !ir_reads_memory(l->indices[0]) ? l : NULL;
}

/* A zero-filling copy without branches: the load reads the buffer's first
 * element (valid: shapes are positive) where the guard is false and the
 * value is then replaced by 0, so ptxas sees straight-line code instead of
 * a branch around every element (which cost ~50 registers in Step 8's
 * ragged kernels). */
static tir_status zero_fill(cg *g, const tir_if *f, const tir_buffer_load *l) {
    LLVMValueRef c = cond_expr(g, f->cond);
    if (!c) return tir_ctx_error_code(g->ctx);
    g->masked = l, g->mask = c;
    tir_status s = store_stmt(g, tir_as_tir_buffer_store(f->then_s));
    g->masked = NULL, g->mask = NULL;
    return s;
}

/* A guarded scalar float32 store to a global buffer (a ragged tile's
 * write-back), emitted as a predicated store (masked_store).  Its value
 * and index are computed unguarded, so they must read no memory but the
 * thread's local arrays: `if i < n: Y[i] = X[i]` read X past its end
 * (found in review of the direct emitter, which had the same rule). */
static bool predicated_store(const cg *g, const tir_if *f) {
    const tir_buffer_store *t = tir_as_tir_buffer_store(f->then_s);
    return !g->host && !f->else_s && t && t->buffer->scope == TIR_SCOPE_GLOBAL &&
           t->value->dtype.lanes == 1 && tir_dtype_eq(t->value->dtype, TIR_F32) &&
           t->nidx == 1 && t->indices[0]->dtype.lanes == 1 && f->cond->dtype.lanes == 1 &&
           !ir_reads_memory(t->value) && !ir_reads_memory(t->indices[0]);
}

static tir_status stmt(cg *g, const tir_stmt *s) {
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = tir_as_tir_for(s);
        return f->kind == TIR_FOR_THREAD_BINDING ? thread_loop(g, f) : serial_loop(g, f);
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = tir_as_tir_seq(s);
        for (int i = 0; i < q->n; i++) TIR_TRY(stmt(g, q->stmts[i]));
        return TIR_OK;
    }
    case TIR_KIND_IF: {
        const tir_if *f = tir_as_tir_if(s);
        const tir_buffer_load *zl = zero_fill_load(f);
        if (zl) return zero_fill(g, f, zl);
        if (predicated_store(g, f)) {
            LLVMValueRef c = cond_expr(g, f->cond);
            if (!c) return tir_ctx_error_code(g->ctx);
            g->store_mask = c;
            tir_status st = store_stmt(g, tir_as_tir_buffer_store(f->then_s));
            g->store_mask = NULL;
            return st;
        }
        LLVMValueRef c = cond_expr(g, f->cond);
        if (!c) return tir_ctx_error_code(g->ctx);
        /* A guard that unrolling made constant (ragged tiles: ~1000 in
         * Step 8 4095^3) needs no blocks; staying in one block also keeps
         * local arrays' values in registers (cache_slot). */
        if (LLVMIsAConstantInt(c)) {
            if (LLVMConstIntGetZExtValue(c)) return stmt(g, f->then_s);
            return f->else_s ? stmt(g, f->else_s) : TIR_OK;
        }
        LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(g->lc, g->fn, "if.then");
        LLVMBasicBlockRef be =
            f->else_s ? LLVMAppendBasicBlockInContext(g->lc, g->fn, "if.else") : NULL;
        LLVMBasicBlockRef bm = LLVMAppendBasicBlockInContext(g->lc, g->fn, "if.end");
        condbr(g, c, bt, be ? be : bm);
        LLVMPositionBuilderAtEnd(g->b, bt);
        TIR_TRY(stmt(g, f->then_s));
        br(g, bm);
        if (be) {
            LLVMPositionBuilderAtEnd(g->b, be);
            TIR_TRY(stmt(g, f->else_s));
            br(g, bm);
        }
        LLVMPositionBuilderAtEnd(g->b, bm);
        return TIR_OK;
    }
    case TIR_KIND_BUFFER_STORE: return store_stmt(g, tir_as_tir_buffer_store(s));
    case TIR_KIND_ALLOCATE: return allocate(g, tir_as_tir_allocate(s));
    case TIR_KIND_EVALUATE: {
        const tir_call *c = tir_as_tir_call(tir_as_tir_evaluate(s)->value);
        if (c && !call_expr(g, c)) return tir_ctx_error_code(g->ctx);
        return TIR_OK;
    }
    default: TIR_UNREACHABLE();
    }
}

/* ----------------------------------------------------------------- kernel */

static void add_attr(cg *g, LLVMValueRef fn, unsigned idx, const char *name, uint64_t val) {
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    TIR_ASSERT(kind != 0);
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(g->lc, kind, val));
}

static void annotate(cg *g, const char *key, int64_t v) {
    LLVMMetadataRef ops[3] = {
        LLVMValueAsMetadata(g->fn), LLVMMDStringInContext2(g->lc, key, strlen(key)),
        LLVMValueAsMetadata(LLVMConstInt(g->t_i32, (unsigned long long)v, 0))};
    LLVMAddNamedMetadataOperand(g->mod, "nvvm.annotations",
                                LLVMMetadataAsValue(g->lc, LLVMMDNodeInContext2(g->lc, ops, 3)));
}

/* The kernel's .maxntid is its block shape, or with launch_bounds_max_threads
 * N (checked >= the threads it has) N,1,1 as CUDA's __launch_bounds__(N)
 * gives; .minnctapersm and .maxnreg where asked for (cg_occupancy.c).
 * LLVM 19's NVPTX backend reads all of them from nvvm.annotations. */
static void occupancy(cg *g, const cg_info *info) {
    static const char *const keys[3] = {"maxntidx", "maxntidy", "maxntidz"};
    for (int i = 0; i < 3; i++) {
        int64_t v = 1;
        if (info->max_threads)
            v = i == 0 ? info->max_threads : 1;
        else if (info->dims[3 + i])
            tir_expr_const_int(info->dims[3 + i], &v);
        annotate(g, keys[i], v);
    }
    if (info->min_blocks) annotate(g, "minctasm", info->min_blocks);
    if (info->max_regs) annotate(g, "maxnreg", info->max_regs);
}

/* Whether every use of pointer p (an alloca, or a GEP of one) is a load,
 * a store to it, or a GEP by constant indices with such uses: what SROA
 * promotes to registers without any loop unrolled first. */
static bool const_uses(LLVMValueRef p) {
    for (LLVMUseRef u = LLVMGetFirstUse(p); u; u = LLVMGetNextUse(u)) {
        LLVMValueRef us = LLVMGetUser(u);
        LLVMOpcode op = LLVMGetInstructionOpcode(us);
        if (op == LLVMLoad || (op == LLVMStore && LLVMGetOperand(us, 1) == p)) continue;
        if (op != LLVMGetElementPtr) return false;
        for (int i = 1; i < LLVMGetNumOperands(us); i++)
            if (!LLVMIsAConstantInt(LLVMGetOperand(us, i))) return false;
        if (!const_uses(us)) return false;
    }
    return true;
}

/* cg_emit_facts.var_local: the allocas are at the start of the entry
 * block. */
static bool var_local(cg *g) {
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(g->fn);
    for (LLVMValueRef in = LLVMGetFirstInstruction(entry); in; in = LLVMGetNextInstruction(in))
        if (LLVMIsAAllocaInst(in) && !const_uses(in)) return true;
    return false;
}

tir_status cg_emit_kernel(tir_ctx *ctx, const tir_prim_func *f, const cg_info *info,
                          const tir_codegen_opts *opts, LLVMModuleRef mod, const char *name,
                          bool host, int64_t *shared_bytes, cg_emit_facts *facts) {
    cg g = {.unrolled = 1,
            .ctx = ctx,
            .f = f,
            .opts = opts,
            .info = info,
            .mod = mod,
            .dyn_shared = info->dyn_shared && !host,
            .dyn_align = info->shared_align > 16 ? info->shared_align : 16,
            .host = host,
            .global_as = host ? 0 : 1,
            .facts = {.min_loop_body = INT64_MAX, .min_loop_work = INT64_MAX}};
    g.lc = LLVMGetModuleContext(mod);
    g.t_void = LLVMVoidTypeInContext(g.lc);
    g.t_i1 = LLVMInt1TypeInContext(g.lc);
    g.t_i8 = LLVMInt8TypeInContext(g.lc);
    g.t_i32 = LLVMInt32TypeInContext(g.lc);
    g.t_i64 = LLVMInt64TypeInContext(g.lc);
    g.t_f16 = LLVMHalfTypeInContext(g.lc);
    g.t_bf16 = LLVMBFloatTypeInContext(g.lc);
    g.t_f32 = LLVMFloatTypeInContext(g.lc);
    g.t_f64 = LLVMDoubleTypeInContext(g.lc);
    g.cse = ir_xcalloc(CG_CSE_SIZE, sizeof *g.cse);

    int np = f->nparams;
    LLVMTypeRef *pt = ir_xmalloc(sizeof *pt * (size_t)(np ? np : 1));
    for (int i = 0; i < np; i++)
        pt[i] = f->buffer_map[i] ? LLVMPointerTypeInContext(g.lc, g.global_as)
                                 : scalar_ty(&g, f->params[i]->base.dtype);
    LLVMTypeRef fty = LLVMFunctionType(g.t_void, pt, (unsigned)np, 0);
    free(pt);
    g.fn = LLVMAddFunction(mod, name, fty);
    if (!host) LLVMSetFunctionCallConv(g.fn, 71 /* PTX_Kernel */);
    add_attr(&g, g.fn, LLVMAttributeFunctionIndex, "nounwind", 0);
    for (int i = 0; i < np; i++) {
        LLVMValueRef p = LLVMGetParam(g.fn, (unsigned)i);
        const tir_buffer *b = f->buffer_map[i];
        const char *pn = b ? b->name : f->params[i]->name;
        LLVMSetValueName2(p, pn, strlen(pn));
        if (!b) continue;
        add_attr(&g, g.fn, (unsigned)i + 1, "noalias", 0);
        add_attr(&g, g.fn, (unsigned)i + 1, "nocapture", 0);
        add_attr(&g, g.fn, (unsigned)i + 1, "align", (uint64_t)b->align);
        if (!info->written[i]) add_attr(&g, g.fn, (unsigned)i + 1, "readonly", 0);
    }
    if (!host) occupancy(&g, info);

    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g.lc, g.fn, "entry");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g.lc, g.fn, "body");
    g.ab = LLVMCreateBuilderInContext(g.lc);
    g.b = LLVMCreateBuilderInContext(g.lc);
    LLVMPositionBuilderAtEnd(g.ab, entry);
    LLVMPositionBuilderAtEnd(g.b, body);
    for (int i = 0; i < np; i++) {
        LLVMValueRef p = LLVMGetParam(g.fn, (unsigned)i);
        if (f->buffer_map[i])
            add_buf(&g, f->buffer_map[i], p, (unsigned)f->buffer_map[i]->align)->readonly =
                !host && !info->written[i];
        else
            push_var(&g, f->params[i], p, CG_MOD_ANY);
    }
    tir_status s = stmt(&g, f->body);
    if (s == TIR_OK) {
        cache_flush_all(&g);
        LLVMBuildRetVoid(g.b);
        LLVMBuildBr(g.ab, body);
        *shared_bytes += g.shared_bytes;
        g.facts.var_local = var_local(&g);
        if (facts) *facts = g.facts;
    }
    LLVMDisposeBuilder(g.b);
    LLVMDisposeBuilder(g.ab);
    free(g.vars);
    free(g.bufs);
    free(g.cse);
    return s;
}
