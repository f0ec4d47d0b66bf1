/* cg_check.c: checking a kernel against the lowered form before codegen.
 *
 * Everything outside docs/lowered-ir.md is reported here, before any LLVM
 * object exists, so that emission can treat a surprise as a compiler bug and
 * so that a user error never reaches LLVM (whose own failures abort).  The
 * walk also collects the launch dimensions and which parameters are written.
 */
#include <stdarg.h>
#include <string.h>

#include <stdint.h>

#include "cg_internal.h"

typedef struct chk {
    tir_ctx *ctx;
    const tir_prim_func *f;
    const tir_target *target;
    cg_info *info;
    ir_vec vars;          /* defined variables in scope */
    ir_vec bufs;          /* buffers in scope */
    ir_vec shared;        /* distinct shared buffers, in first-Allocate order */
    ir_vec wgmma_shared;  /* the shared buffers wgmma_sync reads (distinct) */
} chk;

static bool in_vec(const ir_vec *v, const void *p) {
    for (int i = v->n - 1; i >= 0; i--)
        if (v->items[i] == p) return true;
    return false;
}

static tir_status unsupported(chk *c, const char *fmt, ...) TIR_PRINTF(2, 3);
static tir_status unsupported(chk *c, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tir_ctx_fail(c->ctx, TIR_ERR_UNSUPPORTED, "%s", buf);
}

static const char *dstr(tir_ctx *ctx, tir_dtype t) {
    char buf[32];
    return tir_intern(ctx, tir_dtype_str(t, buf, sizeof buf));
}

/* Scalar dtypes codegen has LLVM types for. */
static bool dtype_ok(tir_dtype t) {
    switch ((tir_type_code)t.code) {
    case TIR_TYPE_BOOL: return t.bits == 1;
    case TIR_TYPE_INT: return t.bits == 8 || t.bits == 32 || t.bits == 64;
    case TIR_TYPE_UINT: return t.bits == 8;
    case TIR_TYPE_FLOAT: return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case TIR_TYPE_BFLOAT: return t.bits == 16;
    case TIR_TYPE_HANDLE:
    case TIR_TYPE_VOID: return false;
    }
    return false;
}

static bool param_index_of(const tir_prim_func *f, const tir_buffer *b, int *idx) {
    for (int i = 0; i < f->nparams; i++)
        if (f->buffer_map[i] == b) {
            *idx = i;
            return true;
        }
    return false;
}

/* ------------------------------------------------------------ expressions */

static tir_status chk_expr(chk *c, const tir_expr *e, bool top_of_evaluate);

static tir_status chk_buffer_use(chk *c, const tir_buffer *b, int nidx, const tir_expr *const *idx,
                                 const char *what) {
    if (!in_vec(&c->bufs, b))
        return unsupported(c,
                           "codegen: %s of buffer '%s', which is neither a parameter nor "
                           "allocated by an enclosing Allocate",
                           what, b->name);
    if (nidx != 1)
        return tir_ctx_fail(c->ctx, TIR_ERR_UNSUPPORTED,
                            "codegen: %s of buffer '%s' has %d indices (buffers must be "
                            "flattened to one index)",
                            what, b->name, nidx);
    if (!tir_dtype_is_int(idx[0]->dtype))
        return unsupported(c, "codegen: %s of buffer '%s' has a non-integer index", what, b->name);
    /* An index wider than its type would wrap to a wrong (or illegal)
     * address: a silent miscompile or a dead CUDA context, never allowed. */
    int64_t n = tir_buffer_const_size(b);
    if (idx[0]->dtype.bits == 32 && n > INT32_MAX)
        return unsupported(c,
                           "codegen: %s of buffer '%s', which has %lld elements: its index is "
                           "32-bit, so at most 2^31 - 1 elements can be addressed (use fewer "
                           "split-K slices or smaller buffers)",
                           what, b->name, (long long)n);
    return chk_expr(c, idx[0], false);
}

static bool is_float_math(tir_intrin op) {
    switch (op) {
    case TIR_INTRIN_EXP:
    case TIR_INTRIN_LOG:
    case TIR_INTRIN_TANH:
    case TIR_INTRIN_SQRT:
    case TIR_INTRIN_FABS:
    case TIR_INTRIN_FMA:
    case TIR_INTRIN_POW:
    case TIR_INTRIN_SIGMOID: return true;
    default: return false;
    }
}

/* address_of(load) whose buffer has the given scope, an operand of
 * intrinsic `op`; ramp_ok: a cp_async's, which may index the copied
 * elements as a T.Ramp of stride 1 (gpu_check's form; the other
 * intrinsics' operands are one element's address). */
static tir_status chk_address(chk *c, const char *op, const tir_expr *e, tir_scope scope,
                              const char *which, bool ramp_ok) {
    const tir_call *a = tir_as_tir_call(e);
    const tir_buffer_load *ld = a && a->op == TIR_INTRIN_ADDRESS_OF && a->nargs == 1
                                    ? tir_as_tir_buffer_load(a->args[0])
                                    : NULL;
    if (!ld)
        return unsupported(c, "codegen: %s: the %s must be address_of(BufferLoad)", op, which);
    if (ld->buffer->scope != scope)
        return tir_ctx_fail(c->ctx, TIR_ERR_UNSUPPORTED,
                            "codegen: %s: the %s buffer '%s' has scope %s (want %s)", op, which,
                            ld->buffer->name, tir_scope_name(ld->buffer->scope),
                            tir_scope_name(scope));
    /* the Ramp's address is its first element's */
    const tir_ramp *r = ramp_ok && ld->nidx == 1 ? tir_as_tir_ramp(ld->indices[0]) : NULL;
    int64_t stride = 0;
    if (r && tir_expr_const_int(r->stride, &stride) && stride == 1)
        return chk_buffer_use(c, ld->buffer, 1, &r->start, op);
    if (ld->base.dtype.lanes != 1)
        return unsupported(c, "codegen: %s: the %s address_of(%s[...]) must have a scalar index",
                           op, which, ld->buffer->name);
    return chk_buffer_use(c, ld->buffer, ld->nidx, ld->indices, op);
}

static tir_status chk_address_of(chk *c, const char *op, const tir_expr *e, tir_scope scope,
                                 const char *which) {
    return chk_address(c, op, e, scope, which, false);
}

/* atomic_add(address_of(global float32 element), float32 value).  Its
 * target is written: a parameter counted as read-only would be declared
 * `readonly` to LLVM, loaded through the non-coherent cache and reported
 * read_only (tir_kernel_param). */
static tir_status chk_atomic_add(chk *c, const tir_call *call) {
    TIR_TRY(chk_address_of(c, "atomic_add", call->args[0], TIR_SCOPE_GLOBAL, "target"));
    const tir_buffer *b = tir_as_tir_buffer_load(tir_as_tir_call(call->args[0])->args[0])->buffer;
    int pi;
    if (param_index_of(c->f, b, &pi)) c->info->written[pi] = true;
    if (!tir_dtype_eq(b->dtype, TIR_F32) || !tir_dtype_eq(call->args[1]->dtype, TIR_F32))
        return unsupported(c, "codegen: atomic_add on '%s' (%s) of a %s value: float32 only",
                           b->name, dstr(c->ctx, b->dtype), dstr(c->ctx, call->args[1]->dtype));
    return chk_expr(c, call->args[1], false);
}

/* ------------------------------------------------- tensor cores */

/* Past here LLVM would abort with "Cannot select" (cg_tensor.c). */
static tir_status chk_arch(chk *c, tir_intrin op) {
    int need = cg_tensor_min_sm(op);
    if (cg_arch_sm(c->target->arch) >= need) return TIR_OK;
    return tir_ctx_fail(c->ctx, TIR_ERR_ARCH,
                        "codegen: %s needs a GPU of sm_%d or later; the target is %s (build for "
                        "sm_80 or later, or schedule without tensor cores)",
                        tir_intrin_name(op), need, c->target->arch);
}

/* A fragment operand of op: address_of(L[o]) of a local array L (*buf). */
static tir_status chk_frag_operand(chk *c, const char *op, const tir_expr *e, const char *which,
                                   const tir_buffer **buf) {
    TIR_TRY(chk_address_of(c, op, e, TIR_SCOPE_LOCAL, which));
    *buf = tir_as_tir_buffer_load(tir_as_tir_call(e)->args[0])->buffer;
    return TIR_OK;
}

/* The n registers from o of a fragment operand address_of(L[o]) lie in
 * L, when o is a constant (a variable o is the lowering's to keep in). */
static tir_status chk_regs(chk *c, const char *op, const tir_expr *e, const char *which,
                          int64_t n) {
    const tir_buffer_load *ld = tir_as_tir_buffer_load(tir_as_tir_call(e)->args[0]);
    int64_t o, size = tir_buffer_const_size(ld->buffer);
    if (tir_expr_const_int(ld->indices[0], &o) && (o < 0 || o + n > size))
        return unsupported(c,
                           "codegen: %s: the %s registers %s[%lld .. %lld) lie outside the "
                           "array of %lld elements",
                           op, which, ld->buffer->name, (long long)o, (long long)(o + n),
                           (long long)size);
    return TIR_OK;
}

/* A warp-collective op needs whole warps: .aligned instructions in a
 * partial warp are undefined. */
static tir_status chk_collective(chk *c, tir_intrin op) {
    int64_t n = cg_threads_per_block(c->info);
    if (n % 32 == 0) return chk_arch(c, op);
    return unsupported(c,
                       "codegen: %s is warp-collective, but kernel '%s' has %lld threads per "
                       "block, not a multiple of 32",
                       tir_intrin_name(op), c->f->name, (long long)n);
}

/* mma_sync(address_of(Ld[o]), address_of(La[o]), address_of(Lb[o])):
 * La and Lb of one type (float16, bfloat16 or float32), Ld float32, and
 * each holds the registers of its tile from o (tir_frag_layout_of). */
static tir_status chk_mma_sync(chk *c, const tir_call *call) {
    static const char op[] = "mma_sync";
    const tir_buffer *d, *a, *b;
    TIR_TRY(chk_frag_operand(c, op, call->args[0], "accumulator", &d));
    TIR_TRY(chk_frag_operand(c, op, call->args[1], "A operand", &a));
    TIR_TRY(chk_frag_operand(c, op, call->args[2], "B operand", &b));
    tir_frag_layout la, lb, ld;
    if (!tir_frag_layout_of(TIR_SCOPE_FRAG_A, a->dtype, &la))
        return unsupported(c,
                           "codegen: mma_sync: the A operand '%s' is %s (want float16, "
                           "bfloat16 or float32)",
                           a->name, dstr(c->ctx, a->dtype));
    if (!tir_dtype_eq(a->dtype, b->dtype) || !tir_frag_layout_of(TIR_SCOPE_FRAG_B, b->dtype, &lb))
        return unsupported(c,
                           "codegen: mma_sync: the A operand '%s' is %s but the B operand "
                           "'%s' is %s (both must have one type)",
                           a->name, dstr(c->ctx, a->dtype), b->name, dstr(c->ctx, b->dtype));
    if (!tir_frag_layout_of(TIR_SCOPE_FRAG_ACC, d->dtype, &ld))
        return unsupported(c, "codegen: mma_sync: the accumulator '%s' is %s (want float32)",
                           d->name, dstr(c->ctx, d->dtype));
    TIR_TRY(chk_regs(c, op, call->args[0], "accumulator", ld.regs));
    TIR_TRY(chk_regs(c, op, call->args[1], "A operand", la.regs));
    TIR_TRY(chk_regs(c, op, call->args[2], "B operand", lb.regs));
    return chk_collective(c, call->op);
}

/* ldmatrix(trans, num, address_of(L[o]), address_of(S[i])): constant
 * trans 0/1 and num 1/2/4, L a float16 or bfloat16 local array with 2 num
 * registers from o, or a float32 one with num registers and trans 0 (.trans
 * moves 16-bit elements), S a shared buffer of L's type. */
static tir_status chk_ldmatrix(chk *c, const tir_call *call) {
    static const char op[] = "ldmatrix";
    int64_t trans, num;
    if (!tir_expr_const_int(call->args[0], &trans) || (trans != 0 && trans != 1))
        return unsupported(c, "codegen: ldmatrix: trans must be the constant 0 or 1");
    if (!tir_expr_const_int(call->args[1], &num) || (num != 1 && num != 2 && num != 4))
        return unsupported(c, "codegen: ldmatrix: the matrix count must be the constant 1, 2 "
                              "or 4");
    const tir_buffer *d;
    TIR_TRY(chk_frag_operand(c, op, call->args[2], "destination", &d));
    TIR_TRY(chk_address_of(c, op, call->args[3], TIR_SCOPE_SHARED, "source"));
    const tir_buffer *s = tir_as_tir_buffer_load(tir_as_tir_call(call->args[3])->args[0])->buffer;
    /* ldmatrix moves bits: any 16- or 32-bit element type (the simulator
     * and tir_lower take them all; integers too) */
    bool f32 = d->dtype.bits == 32;
    if ((d->dtype.bits != 16 && !f32) || d->dtype.lanes != 1 || tir_dtype_is_bool(d->dtype))
        return unsupported(c,
                           "codegen: ldmatrix: the destination '%s' is %s (want a 16- or "
                           "32-bit element type)",
                           d->name, dstr(c->ctx, d->dtype));
    if (f32 && trans)
        return unsupported(c,
                           "codegen: ldmatrix: .trans of %s '%s': the transpose moves "
                           "16-bit elements, so a 32-bit matrix has no .trans form",
                           dstr(c->ctx, d->dtype), d->name);
    if (!tir_dtype_eq(s->dtype, d->dtype))
        return unsupported(c,
                           "codegen: ldmatrix: the source '%s' is %s but the destination '%s' "
                           "is %s",
                           s->name, dstr(c->ctx, s->dtype), d->name, dstr(c->ctx, d->dtype));
    TIR_TRY(chk_regs(c, op, call->args[2], "destination", (f32 ? 1 : 2) * (int)num));
    return chk_collective(c, call->op);
}

/* shfl_xor(value, lane_mask): a float32 value and the constant lane mask
 * 1, 2, 4, 8 or 16. */
static tir_status chk_shfl_xor(chk *c, const tir_call *call) {
    int64_t m;
    if (!tir_dtype_eq(call->args[0]->dtype, TIR_F32) || !tir_dtype_eq(call->base.dtype, TIR_F32))
        return unsupported(c, "codegen: shfl_xor of a %s value: float32 only",
                           dstr(c->ctx, call->args[0]->dtype));
    if (!tir_expr_const_int(call->args[1], &m) || m < 1 || m > 16 || (m & (m - 1)))
        return unsupported(c, "codegen: shfl_xor: the lane mask must be the constant 1, 2, 4, 8 "
                              "or 16");
    TIR_TRY(chk_expr(c, call->args[0], false));
    return chk_collective(c, call->op);
}

/* ------------------------------------------------- wgmma_sync */

/* A float32 local array operand of wgmma_sync, address_of(L[o]) (*buf). */
static tir_status chk_wg_local(chk *c, const tir_expr *e, const char *which, int g,
                               const tir_buffer **buf) {
    TIR_TRY(chk_frag_operand(c, "wgmma_sync", e, which, buf));
    if (tir_dtype_eq((*buf)->dtype, TIR_F32)) return TIR_OK;
    return unsupported(c, "codegen: wgmma_sync: the %s '%s' of group %d is %s (want float32)",
                       which, (*buf)->name, g, dstr(c->ctx, (*buf)->dtype));
}

/* An int constant argument of group g (cs or rows). */
static tir_status chk_wg_const(chk *c, const tir_expr *e, const char *which, int g, int64_t *v) {
    if (tir_dtype_is_int(e->dtype) && tir_expr_const_int(e, v)) return TIR_OK;
    return unsupported(c, "codegen: wgmma_sync: the %s of group %d must be an int constant", which,
                       g);
}

/* The shared tile of group g: address_of(S[x]) of a float32 shared
 * buffer, recorded for the 1024-byte alignment of its start. */
static tir_status chk_wg_tile(chk *c, const tir_expr *e, int g) {
    TIR_TRY(chk_address_of(c, "wgmma_sync", e, TIR_SCOPE_SHARED, "tile"));
    const tir_buffer *s = tir_as_tir_buffer_load(tir_as_tir_call(e)->args[0])->buffer;
    if (!tir_dtype_eq(s->dtype, TIR_F32))
        return unsupported(c, "codegen: wgmma_sync: the tile '%s' of group %d is %s (want float32)",
                           s->name, g, dstr(c->ctx, s->dtype));
    if (!in_vec(&c->wgmma_shared, s)) ir_vec_push(&c->wgmma_shared, s);
    return TIR_OK;
}

/* Group g of wgmma_sync (args[0..5)): c, cs, b, a, rows as intrinsics.def
 * describes them; the R/2 accumulators lie in their array at distinct
 * elements (cs >= 8 when there are several units of 8). */
static tir_status chk_wg_group(chk *c, const tir_expr *const *args, int g) {
    const tir_buffer *acc, *regs;
    int64_t cs, rows;
    TIR_TRY(chk_wg_local(c, args[0], "accumulator", g, &acc));
    TIR_TRY(chk_wg_const(c, args[1], "accumulator stride", g, &cs));
    TIR_TRY(chk_wg_local(c, args[2], "A operand", g, &regs));
    TIR_TRY(chk_wg_tile(c, args[3], g));
    TIR_TRY(chk_wg_const(c, args[4], "row count", g, &rows));
    if (rows < 8 || rows > 256 || rows % 8)
        return unsupported(c,
                           "codegen: wgmma_sync: the row count of group %d is %lld (want a "
                           "multiple of 8 in 8 .. 256)",
                           g, (long long)rows);
    /* R/2 registers in units of 8 (the last one 4 when R % 16 == 8) */
    int64_t units = (rows + 8) / 16, last = rows % 16 ? 4 : 8;
    if (units > 1 && cs < 8)
        return unsupported(c,
                           "codegen: wgmma_sync: the accumulator stride of group %d is %lld "
                           "(want at least 8: units of 8 registers must not overlap)",
                           g, (long long)cs);
    /* the span fits the array whatever o is (and cs cannot overflow it) */
    int64_t size = tir_buffer_const_size(acc);
    if (units > 1 && cs > size)
        return unsupported(c,
                           "codegen: wgmma_sync: the accumulator stride %lld of group %d is past "
                           "the %lld elements of '%s'",
                           (long long)cs, g, (long long)size, acc->name);
    int64_t span = (units - 1) * cs + last;
    if (span > size)
        return unsupported(c,
                           "codegen: wgmma_sync: the accumulator registers of group %d span %lld "
                           "elements, more than the %lld of '%s'",
                           g, (long long)span, (long long)size, acc->name);
    TIR_TRY(chk_regs(c, "wgmma_sync", args[0], "accumulator", span));
    return chk_regs(c, "wgmma_sync", args[2], "A operand", 4);
}

/* wgmma_sync needs sm_90a (codegen.c emits it for an sm_90 target) and
 * whole warpgroups: its .sync.aligned instructions are executed by the
 * four warps of a warpgroup together. */
static tir_status chk_wg_target(chk *c) {
    if (!cg_arch_has_wgmma(c->target->arch))
        return tir_ctx_fail(c->ctx, TIR_ERR_ARCH,
                            "codegen: wgmma_sync needs sm_90a; the target is %s (build for sm_90 "
                            "or sm_90a, or schedule without wgmma)",
                            c->target->arch);
    int64_t n = cg_threads_per_block(c->info);
    if (n % 128 == 0) return TIR_OK;
    return unsupported(c,
                       "codegen: wgmma_sync is warpgroup-collective, but kernel '%s' has %lld "
                       "threads per block, not a multiple of 128",
                       c->f->name, (long long)n);
}

/* wgmma_sync(c, cs, b, a, rows, ...): groups of 5 arguments. */
static tir_status chk_wgmma_sync(chk *c, const tir_call *call) {
    for (int g = 0; g < call->nargs / 5; g++) TIR_TRY(chk_wg_group(c, call->args + 5 * g, g));
    c->info->wgmma = true;
    return chk_wg_target(c);
}

static tir_status chk_call(chk *c, const tir_call *call, bool top_of_evaluate) {
    const char *name = tir_intrin_name(call->op);
    if (call->op == TIR_INTRIN_WGMMA_SYNC && (call->nargs < 5 || call->nargs % 5))
        return unsupported(c,
                           "codegen: wgmma_sync takes groups of 5 arguments (c, cs, b, a, "
                           "rows); it has %d",
                           call->nargs);
    if (!tir_intrin_nargs_ok(call->op, call->nargs))
        return unsupported(c, "codegen: call of %s with a wrong number of arguments", name);
    if (is_float_math(call->op)) {
        for (int i = 0; i < call->nargs; i++) {
            if (!tir_dtype_is_float(call->args[i]->dtype) ||
                !tir_dtype_eq(call->args[i]->dtype, call->base.dtype))
                return unsupported(c,
                                   "codegen: %s needs float arguments of its result type "
                                   "(got %s)",
                                   name, dstr(c->ctx, call->args[i]->dtype));
            TIR_TRY(chk_expr(c, call->args[i], false));
        }
        return TIR_OK;
    }
    switch (call->op) {
    case TIR_INTRIN_SYNCTHREADS:
    case TIR_INTRIN_CP_ASYNC:
    case TIR_INTRIN_CP_ASYNC_COMMIT:
    case TIR_INTRIN_CP_ASYNC_WAIT:
    case TIR_INTRIN_ATOMIC_ADD:
        if (!top_of_evaluate)
            return unsupported(c,
                               "codegen: %s() is a statement: it may only appear directly "
                               "under Evaluate",
                               name);
        break;
    case TIR_INTRIN_MMA_SYNC:
    case TIR_INTRIN_LDMATRIX:
    case TIR_INTRIN_WGMMA_SYNC:
        if (!top_of_evaluate)
            return unsupported(c,
                               "codegen: %s() is a statement: it may only appear directly "
                               "under Evaluate",
                               name);
        if (call->op == TIR_INTRIN_WGMMA_SYNC) return chk_wgmma_sync(c, call);
        return call->op == TIR_INTRIN_MMA_SYNC ? chk_mma_sync(c, call) : chk_ldmatrix(c, call);
    case TIR_INTRIN_SHFL_XOR: return chk_shfl_xor(c, call);
    case TIR_INTRIN_LANE_ID:
        if (!tir_dtype_eq(call->base.dtype, TIR_I32))
            return unsupported(c, "codegen: lane_id() must be int32 (is %s)",
                               dstr(c->ctx, call->base.dtype));
        return TIR_OK;
    case TIR_INTRIN_ADDRESS_OF:
        return unsupported(c, "codegen: address_of is only supported as an argument of "
                              "cp_async, atomic_add, mma_sync, ldmatrix and wgmma_sync");
    default: return unsupported(c, "codegen: intrinsic %s is not supported", name);
    }
    if (call->op == TIR_INTRIN_CP_ASYNC) {
        int64_t bytes;
        if (!tir_expr_const_int(call->args[2], &bytes) || (bytes != 4 && bytes != 8 && bytes != 16))
            return unsupported(c, "codegen: cp_async: the size must be the constant 4, 8 or "
                                  "16");
        if (call->nargs == 4) {
            if (!tir_dtype_eq(call->args[3]->dtype, TIR_I32))
                return unsupported(c, "codegen: cp_async: src_bytes must be int32 (is %s)",
                                   dstr(c->ctx, call->args[3]->dtype));
            TIR_TRY(chk_expr(c, call->args[3], false));
        }
        TIR_TRY(chk_address(c, "cp_async", call->args[0], TIR_SCOPE_SHARED, "destination", true));
        return chk_address(c, "cp_async", call->args[1], TIR_SCOPE_GLOBAL, "source", true);
    }
    if (call->op == TIR_INTRIN_ATOMIC_ADD) return chk_atomic_add(c, call);
    if (call->op == TIR_INTRIN_CP_ASYNC_WAIT) {
        int64_t n;
        if (!tir_expr_const_int(call->args[0], &n) || n < 0 || n > 1000)
            return unsupported(c, "codegen: cp_async_wait needs a constant count >= 0");
    }
    return TIR_OK;
}

static tir_status chk_expr(chk *c, const tir_expr *e, bool top_of_evaluate) {
    tir_kind k = (tir_kind)e->kind;
    tir_dtype el = tir_dtype_element(e->dtype);
    bool void_call = k == TIR_KIND_CALL && el.code == TIR_TYPE_VOID;
    if (!void_call && el.code == TIR_TYPE_VOID)
        return unsupported(c,
                           "codegen: %s of type void: void intrinsics (syncthreads, "
                           "cp_async, ...) may only appear directly under Evaluate",
                           tir_kind_name(k));
    if (!void_call && !dtype_ok(el))
        return unsupported(c, "codegen: %s of type %s is not supported", tir_kind_name(k),
                           dstr(c->ctx, e->dtype));
    switch (k) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM: return TIR_OK;
    case TIR_KIND_VAR: {
        const tir_var *v = tir_as_tir_var(e);
        if (!in_vec(&c->vars, v))
            return unsupported(c,
                               "codegen: variable '%s' is used but not defined (not a scalar "
                               "parameter, enclosing loop or Let)",
                               v->name);
        return TIR_OK;
    }
    case TIR_KIND_ADD:
    case TIR_KIND_SUB:
    case TIR_KIND_MUL:
    case TIR_KIND_DIV:
    case TIR_KIND_MOD:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD:
    case TIR_KIND_MIN:
    case TIR_KIND_MAX:
    case TIR_KIND_EQ:
    case TIR_KIND_NE:
    case TIR_KIND_LT:
    case TIR_KIND_LE:
    case TIR_KIND_GT:
    case TIR_KIND_GE:
    case TIR_KIND_AND:
    case TIR_KIND_OR: {
        const tir_binop *b = tir_as_tir_binop(e);
        if (tir_dtype_is_bool(b->a->dtype) && k != TIR_KIND_AND && k != TIR_KIND_OR &&
            k != TIR_KIND_EQ && k != TIR_KIND_NE)
            return unsupported(c, "codegen: %s on bool operands is not supported",
                               tir_kind_name(k));
        TIR_TRY(chk_expr(c, b->a, false));
        return chk_expr(c, b->b, false);
    }
    case TIR_KIND_NOT: return chk_expr(c, tir_as_tir_not(e)->a, false);
    case TIR_KIND_SELECT: {
        const tir_select *s = tir_as_tir_select(e);
        TIR_TRY(chk_expr(c, s->cond, false));
        TIR_TRY(chk_expr(c, s->t, false));
        return chk_expr(c, s->f, false);
    }
    case TIR_KIND_CAST: return chk_expr(c, tir_as_tir_cast(e)->value, false);
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = tir_as_tir_buffer_load(e);
        return chk_buffer_use(c, l->buffer, l->nidx, l->indices, "load");
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *r = tir_as_tir_ramp(e);
        TIR_TRY(chk_expr(c, r->start, false));
        return chk_expr(c, r->stride, false);
    }
    case TIR_KIND_BROADCAST: return chk_expr(c, tir_as_tir_broadcast(e)->value, false);
    case TIR_KIND_CALL: return chk_call(c, tir_as_tir_call(e), top_of_evaluate);
    case TIR_KIND_LET: {
        const tir_let *l = tir_as_tir_let(e);
        TIR_TRY(chk_expr(c, l->value, false));
        ir_vec_push(&c->vars, l->var);
        tir_status s = chk_expr(c, l->body, false);
        c->vars.n--;
        return s;
    }
    default: TIR_UNREACHABLE();
    }
}

/* ------------------------------------------------------------- statements */

static tir_status chk_stmt(chk *c, const tir_stmt *s);

/* The launch sizes were checked by tir_launch_check (cg_check); here a
 * bound loop only defines its variable. */
static tir_status chk_thread_loop(chk *c, const tir_for *f) {
    ir_vec_push(&c->vars, f->var);
    tir_status st = chk_stmt(c, f->body);
    c->vars.n--;
    return st;
}

static tir_status chk_for(chk *c, const tir_for *f) {
    switch (f->kind) {
    case TIR_FOR_THREAD_BINDING: return chk_thread_loop(c, f);
    case TIR_FOR_VECTORIZED:
        return unsupported(c,
                           "codegen: For loop over '%s' is vectorized; vectorized loops must "
                           "be lowered to Ramp/Broadcast before codegen",
                           f->var->name);
    case TIR_FOR_PARALLEL:
        return unsupported(c,
                           "codegen: For loop over '%s' is parallel; bind it to threads "
                           "instead",
                           f->var->name);
    case TIR_FOR_SERIAL:
    case TIR_FOR_UNROLLED: break;
    }
    if (f->var->base.dtype.lanes != 1)
        return unsupported(c, "codegen: For loop over '%s' has a vector variable", f->var->name);
    const tir_annot *a = tir_annots_get(f->nannots, f->annots, TIR_ANN_PRAGMA_UNROLL_MAX_STEP);
    if (a && a->kind != TIR_ANNOT_INT)
        return unsupported(c,
                           "codegen: For loop over '%s': pragma_unroll_max_step must be an "
                           "int",
                           f->var->name);
    TIR_TRY(chk_expr(c, f->min, false));
    TIR_TRY(chk_expr(c, f->extent, false));
    ir_vec_push(&c->vars, f->var);
    tir_status st = chk_stmt(c, f->body);
    c->vars.n--;
    return st;
}

static tir_status chk_alloc_buffer(chk *c, const tir_buffer *b) {
    if (b->scope == TIR_SCOPE_GLOBAL)
        return unsupported(c,
                           "codegen: Allocate of buffer '%s' in global scope is not supported "
                           "(only shared and local)",
                           b->name);
    if (b->ndim != 1)
        return unsupported(c,
                           "codegen: Allocate of buffer '%s': buffers must be flattened to "
                           "one dimension",
                           b->name);
    if (tir_buffer_const_size(b) <= 0)
        return unsupported(c,
                           "codegen: Allocate of buffer '%s' needs a positive constant "
                           "size",
                           b->name);
    int64_t v;
    if (!tir_expr_const_int(b->elem_offset, &v) || v != 0)
        return unsupported(c, "codegen: Allocate of buffer '%s' must have elem_offset 0", b->name);
    if (b->strides && (!tir_expr_const_int(b->strides[0], &v) || v != 1))
        return unsupported(c, "codegen: Allocate of buffer '%s' must be contiguous", b->name);
    if (!dtype_ok(b->dtype))
        return unsupported(c, "codegen: Allocate of buffer '%s' of type %s is not supported",
                           b->name, dstr(c->ctx, b->dtype));
    if (b->align <= 0 || (b->align & (b->align - 1)) || b->align > 4096)
        return unsupported(c,
                           "codegen: Allocate of buffer '%s' has an alignment that is not a "
                           "power of two up to 4096",
                           b->name);
    return TIR_OK;
}

static tir_status chk_stmt(chk *c, const tir_stmt *s) {
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: return chk_for(c, tir_as_tir_for(s));
    case TIR_KIND_SEQ: {
        const tir_seq *q = tir_as_tir_seq(s);
        for (int i = 0; i < q->n; i++) TIR_TRY(chk_stmt(c, q->stmts[i]));
        return TIR_OK;
    }
    case TIR_KIND_IF: {
        const tir_if *f = tir_as_tir_if(s);
        if (!tir_dtype_eq(f->cond->dtype, TIR_BOOL))
            return unsupported(c, "codegen: IfThenElse needs a scalar bool condition");
        TIR_TRY(chk_expr(c, f->cond, false));
        TIR_TRY(chk_stmt(c, f->then_s));
        return f->else_s ? chk_stmt(c, f->else_s) : TIR_OK;
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = tir_as_tir_buffer_store(s);
        TIR_TRY(chk_buffer_use(c, st->buffer, st->nidx, st->indices, "store"));
        TIR_TRY(chk_expr(c, st->value, false));
        int pi;
        if (param_index_of(c->f, st->buffer, &pi)) c->info->written[pi] = true;
        return TIR_OK;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = tir_as_tir_allocate(s);
        TIR_TRY(chk_alloc_buffer(c, a->buffer));
        int pi;
        if (param_index_of(c->f, a->buffer, &pi))
            return unsupported(c, "codegen: Allocate of buffer '%s', which is a parameter",
                               a->buffer->name);
        if (a->buffer->scope == TIR_SCOPE_SHARED && !in_vec(&c->shared, a->buffer))
            ir_vec_push(&c->shared, a->buffer);
        ir_vec_push(&c->bufs, a->buffer);
        tir_status st = chk_stmt(c, a->body);
        c->bufs.n--;
        return st;
    }
    case TIR_KIND_EVALUATE: return chk_expr(c, tir_as_tir_evaluate(s)->value, true);
    case TIR_KIND_BLOCK_REALIZE:
        return unsupported(c,
                           "codegen: BlockRealize of block '%s' is left in the body; lower "
                           "blocks before codegen",
                           tir_as_tir_block_realize(s)->block->name);
    case TIR_KIND_BLOCK:
        return unsupported(c,
                           "codegen: Block '%s' is left in the body; lower blocks before "
                           "codegen",
                           tir_as_tir_block(s)->name);
    default: TIR_UNREACHABLE();
    }
}

/* ------------------------------------------------------------- parameters */

static tir_status chk_params(chk *c) {
    const tir_prim_func *f = c->f;
    /* Scalars first: buffer offsets may use any of them. */
    for (int i = 0; i < f->nparams; i++) {
        const tir_var *v = f->params[i];
        if (f->buffer_map[i]) continue;
        if (v->base.dtype.lanes != 1 || !dtype_ok(v->base.dtype) ||
            tir_dtype_is_bool(v->base.dtype))
            return unsupported(c, "codegen: scalar parameter '%s' has unsupported type %s", v->name,
                               dstr(c->ctx, v->base.dtype));
        ir_vec_push(&c->vars, v);
    }
    for (int i = 0; i < f->nparams; i++) {
        const tir_buffer *b = f->buffer_map[i];
        if (!b) continue;
        for (int j = 0; j < i; j++)
            if (f->buffer_map[j] == b)
                return unsupported(c, "codegen: buffer '%s' is bound to two parameters", b->name);
        if (b->scope != TIR_SCOPE_GLOBAL)
            return unsupported(c,
                               "codegen: buffer parameter '%s' must have global scope (has "
                               "%s)",
                               b->name, tir_scope_name(b->scope));
        if (b->ndim != 1)
            return tir_ctx_fail(c->ctx, TIR_ERR_UNSUPPORTED,
                                "codegen: buffer parameter '%s' has %d dimensions (must be "
                                "flattened to one)",
                                b->name, b->ndim);
        int64_t v;
        if (b->strides && (!tir_expr_const_int(b->strides[0], &v) || v != 1))
            return unsupported(c, "codegen: buffer parameter '%s' must be contiguous", b->name);
        if (!dtype_ok(b->dtype))
            return unsupported(c, "codegen: buffer parameter '%s' has unsupported type %s", b->name,
                               dstr(c->ctx, b->dtype));
        if (b->align <= 0 || (b->align & (b->align - 1)) || b->align > 4096)
            return unsupported(c,
                               "codegen: buffer parameter '%s' has an alignment that is not "
                               "a power of two up to 4096",
                               b->name);
        if (!tir_dtype_is_int(b->elem_offset->dtype))
            return unsupported(c,
                               "codegen: buffer parameter '%s' has a non-integer "
                               "elem_offset",
                               b->name);
        TIR_TRY(chk_expr(c, b->elem_offset, false));
        ir_vec_push(&c->bufs, b);
    }
    return TIR_OK;
}

/* The launch sizes, by lowering's one launch check (its message under
 * "codegen: "). */
static tir_status chk_launch(chk *c, const tir_target_limits *lim) {
    tir_launch l;
    tir_status s = tir_launch_check(c->ctx, c->f, lim, &l);
    /* (tir_ctx_fail formats before it drops the old message) */
    if (s != TIR_OK) return tir_ctx_fail(c->ctx, s, "codegen: %s", tir_ctx_error(c->ctx));
    for (int i = 0; i < CG_NAXES; i++) c->info->dims[i] = l.extent[i];
    c->info->empty_ok = l.empty_ok;
    c->info->launch = l;
    return TIR_OK;
}

int64_t cg_shared_align(const cg_info *info, const tir_buffer *b) {
    int64_t al = b->align > 16 ? b->align : 16;
    for (int i = 0; i < info->nwgmma_shared; i++)
        if (info->wgmma_shared[i] == b) return al > 1024 ? al : 1024;
    return al;
}

/* The shared-memory layout emission will use (cg_emit.c allocate): each
 * buffer at the next multiple of cg_shared_align (max(16, its align), so
 * 16-byte cp.async and float4 accesses stay aligned in the static and the
 * dynamic layout; 1024 for wgmma tiles). */
static void shared_layout(chk *c) {
    cg_info *info = c->info;
    info->nwgmma_shared = c->wgmma_shared.n;
    info->wgmma_shared = IR_NEWN(c->ctx, const tir_buffer *, c->wgmma_shared.n);
    for (int i = 0; i < c->wgmma_shared.n; i++) info->wgmma_shared[i] = c->wgmma_shared.items[i];
    ir_strbuf sb;
    ir_sb_init(&sb);
    int64_t t = 0, maxal = 16;
    for (int i = 0; i < c->shared.n; i++) {
        const tir_buffer *b = c->shared.items[i];
        int64_t bytes = tir_buffer_const_size(b) * (int64_t)tir_dtype_bytes(b->dtype);
        int64_t al = cg_shared_align(info, b);
        if (al > maxal) maxal = al;
        t = (t + al - 1) / al * al + bytes;
        ir_sb_printf(&sb, "%s%s (%lld bytes)", i ? ", " : "", b->name, (long long)bytes);
    }
    c->info->shared_bytes = t;
    c->info->shared_align = maxal;
    c->info->shared_names = ir_sb_finish(&sb, c->ctx);
}

tir_status cg_check(tir_ctx *ctx, const tir_prim_func *f, const tir_target *t, cg_info *info) {
    const tir_target_limits *lim = &t->limits;
    memset(info, 0, sizeof *info);
    info->written = IR_NEWN(ctx, bool, f->nparams);
    chk c = {.ctx = ctx, .f = f, .target = t, .info = info};
    tir_status s = chk_params(&c);
    if (s == TIR_OK) s = chk_launch(&c, lim);
    if (s == TIR_OK) s = cg_check_occupancy(ctx, f, lim, info);
    if (s == TIR_OK) s = chk_stmt(&c, f->body);
    if (s == TIR_OK) shared_layout(&c);
    ir_vec_free(&c.vars);
    ir_vec_free(&c.bufs);
    ir_vec_free(&c.shared);
    ir_vec_free(&c.wgmma_shared);
    return s;
}
