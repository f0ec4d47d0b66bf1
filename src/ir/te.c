/* te.c: a small tensor-expression layer and its lowering to a prim_func,
 * shaped like TVM's te.create_prim_func.
 *
 * A compute stage records the value of one output element as an expression
 * over placeholder axis variables.  tir_te_create_prim_func turns every
 * stage into a loop nest (spatial axes outside, reduce axes inside, one
 * serial For each) around a BlockRealize of a block named after the stage,
 * and puts the stages in dependency order under the root block "root",
 * whose alloc list holds the stages that are not arguments.
 *
 * Naming (the printed IR reads like TVM's): loop variables are "i", "j" for
 * one or two spatial axes and "i0", "i1", ... for more; "k" for one reduce
 * axis and "k0", "k1", ... for more (internal callers may choose names, see
 * te_internal.h).  Block iter vars are the loop names with a "v" in front.
 *
 * Block signature, as TVM's create_prim_func writes it:
 *  - T.reads lists each buffer the stage's value loads, in order of first
 *    appearance, with one region per buffer: the access itself (min = the
 *    index expression, extent 1) when every access agrees; accesses that
 *    differ by constants (stencils) are covered by one range; anything else
 *    falls back to the whole dimension.  The reduction's accumulator is NOT
 *    listed in T.reads (TVM leaves C out of the matmul block's reads even
 *    though the update loads it).
 *  - T.writes is the output element out[vi, vj, ...].
 *  - Reductions get an init block statement storing the reducer's identity
 *    (0; the lowest / highest finite value for max / min, as TVM's
 *    min_value / max_value) and the update out = out + value (max, min).
 *
 * Stage dependencies: tir_te_at records the tensor it reads in the compute
 * whose callback is running (a thread-local recorder: the callback builds
 * its expression through tir_te_at, and nothing else can tell a buffer's
 * tensor).  Loads of other buffers are allowed only for buffers of
 * arguments.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ir_internal.h"
#include "te_internal.h"

#define TE_MAX_DIMS 16

struct tir_te_tensor {
    const char *name;
    const tir_buffer *buf;
    int ndim;
    const int64_t *shape;
    bool is_compute;
    bool is_reduce;
    tir_te_reducer reducer;
    const tir_var **axes; /* the callback's variables, spatial then reduce */
    const char **names;   /* loop names, spatial then reduce */
    int nraxes;
    const int64_t *rextents;
    const tir_expr *value; /* the element value (the reduction's source) */
    int ndeps;
    tir_te_tensor **deps;
};

/* The compute whose callback is running on this thread. */
typedef struct te_recorder {
    ir_vec deps;
    struct te_recorder *prev;
} te_recorder;
static _Thread_local te_recorder *te_rec;

/* ---------------------------------------------------------------- helpers */

const tir_expr *ir_te_const(tir_ctx *ctx, tir_dtype t, double v) {
    if (tir_dtype_is_bool(t)) return tir_bool(ctx, v != 0);
    if (tir_dtype_is_float(t)) return tir_float(ctx, t, v);
    return tir_int(ctx, t, (int64_t)v);
}

static double float_highest(tir_dtype t) {
    if (t.code == TIR_TYPE_BFLOAT) return 3.3895313892515355e+38; /* 0x7f7f */
    switch (t.bits) {
    case 16: return 65504.0;
    case 32: return FLT_MAX;
    default: return DBL_MAX;
    }
}

static int64_t int_highest(tir_dtype t) {
    if (t.code == TIR_TYPE_UINT) return t.bits >= 64 ? INT64_MAX : (int64_t)((1ull << t.bits) - 1);
    return t.bits >= 64 ? INT64_MAX : (int64_t)((1ull << (t.bits - 1)) - 1);
}
static int64_t int_lowest(tir_dtype t) {
    if (t.code == TIR_TYPE_UINT) return 0;
    return t.bits >= 64 ? INT64_MIN : -(int64_t)(1ull << (t.bits - 1));
}

const tir_expr *ir_te_identity(tir_ctx *ctx, tir_te_reducer r, tir_dtype t) {
    if (tir_dtype_is_bool(t)) return tir_bool(ctx, r == TIR_TE_MIN);
    if (r == TIR_TE_SUM) return ir_te_const(ctx, t, 0);
    bool hi = r == TIR_TE_MIN;
    if (tir_dtype_is_float(t)) return tir_float(ctx, t, hi ? float_highest(t) : -float_highest(t));
    return tir_int(ctx, t, hi ? int_highest(t) : int_lowest(t));
}

const tir_expr *ir_te_combine(tir_ctx *ctx, tir_te_reducer r, const tir_expr *acc,
                              const tir_expr *v) {
    if (tir_dtype_is_bool(acc->dtype)) {
        if (r == TIR_TE_MIN) return tir_and(ctx, acc, v);
        return tir_binop_new(ctx, TIR_KIND_OR, acc, v);
    }
    switch (r) {
    case TIR_TE_SUM: return tir_add(ctx, acc, v);
    case TIR_TE_MAX: return tir_max(ctx, acc, v);
    case TIR_TE_MIN: return tir_min(ctx, acc, v);
    }
    TIR_UNREACHABLE();
}

static bool dtype_supported(tir_dtype t) {
    if (t.lanes != 1) return false;
    switch ((tir_type_code)t.code) {
    case TIR_TYPE_BOOL: return true;
    case TIR_TYPE_INT: return t.bits == 8 || t.bits == 32 || t.bits == 64;
    case TIR_TYPE_UINT: return t.bits == 8;
    case TIR_TYPE_FLOAT: return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case TIR_TYPE_BFLOAT: return t.bits == 16;
    default: return false;
    }
}

static tir_status check_shape(tir_ctx *ctx, const char *what, const char *name, int ndim,
                              const int64_t *shape) {
    if (ndim < 0 || ndim > TE_MAX_DIMS)
        return tir_ctx_fail(ctx, TIR_ERR_SHAPE, "%s '%s': rank %d is not in [0, %d]", what,
                            name, ndim, TE_MAX_DIMS);
    if (ndim > 0 && !shape)
        return tir_ctx_fail(ctx, TIR_ERR_SHAPE, "%s '%s': no shape", what, name);
    for (int i = 0; i < ndim; i++)
        if (!ir_extent_ok(shape[i]))
            return tir_ctx_fail(ctx, TIR_ERR_SHAPE,
                                "%s '%s': extent %lld of axis %d is not in [1, 2^31)", what, name,
                                (long long)shape[i], i);
    return TIR_OK;
}

static const char *default_name(tir_ctx *ctx, bool reduce, int i, int n) {
    if (reduce) return n == 1 ? "k" : tir_ctx_sprintf(ctx, "k%d", i);
    if (n <= 2) return i == 0 ? "i" : "j";
    return tir_ctx_sprintf(ctx, "i%d", i);
}

/* --------------------------------------------------------------- tensors */

tir_te_tensor *tir_te_placeholder(tir_ctx *ctx, const char *name, tir_dtype t, int ndim,
                                  const int64_t *shape) {
    if (!name) name = "placeholder";
    if (check_shape(ctx, "placeholder", name, ndim, shape) != TIR_OK) return NULL;
    if (!dtype_supported(t)) {
        char buf[32];
        tir_ctx_fail(ctx, TIR_ERR_TYPE, "placeholder '%s': unsupported dtype %s", name,
                     tir_dtype_str(t, buf, sizeof buf));
        return NULL;
    }
    tir_te_tensor *x = IR_NEW(ctx, tir_te_tensor);
    x->name = tir_intern(ctx, name);
    x->ndim = ndim;
    x->shape = ir_copy_array(ctx, shape, sizeof *shape, ndim);
    x->buf = tir_buffer_simple(ctx, name, t, ndim, shape, TIR_SCOPE_GLOBAL);
    return x;
}

static tir_te_tensor *make_compute(tir_ctx *ctx, const char *name, int ndim,
                                   const int64_t *shape, const char *const *names, bool reduce,
                                   tir_te_reducer r, int nraxes, const int64_t *rextents,
                                   const char *const *rnames, tir_te_fcompute f, void *user) {
    if (!name) name = reduce ? "reduce" : "compute";
    if (check_shape(ctx, "compute", name, ndim, shape) != TIR_OK) return NULL;
    if (reduce) {
        if (nraxes < 1) {
            tir_ctx_fail(ctx, TIR_ERR_SHAPE, "reduction '%s': needs at least one reduce axis",
                         name);
            return NULL;
        }
        if (check_shape(ctx, "reduction", name, nraxes, rextents) != TIR_OK) return NULL;
        if ((unsigned)r > TIR_TE_MIN) {
            tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "reduction '%s': unknown reducer %d", name,
                         (int)r);
            return NULL;
        }
    } else {
        nraxes = 0;
    }
    if (!f) {
        tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "compute '%s': no compute function", name);
        return NULL;
    }
    int nall = ndim + nraxes;
    const tir_var **axes = IR_NEWN(ctx, const tir_var *, nall);
    const char **lnames = IR_NEWN(ctx, const char *, nall);
    for (int i = 0; i < nall; i++) {
        bool red = i >= ndim;
        int j = red ? i - ndim : i;
        const char *const *given = red ? rnames : names;
        lnames[i] = tir_intern(ctx, given && given[j] ? given[j] : default_name(ctx, red, j, red ? nraxes : ndim));
        axes[i] = tir_var_new(ctx, lnames[i], TIR_I32);
    }

    te_recorder rec = {{0}, te_rec};
    te_rec = &rec;
    const tir_expr *value = f(ctx, axes, axes + ndim, user);
    te_rec = rec.prev;

    tir_te_tensor *x = NULL;
    if (!value) {
        /* The callback may have recorded a more precise error (tir_te_at). */
        if (tir_ctx_error_code(ctx) == TIR_OK)
            tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "compute '%s': the compute function gave NULL",
                         name);
        goto out;
    }
    if (!dtype_supported(value->dtype)) {
        char buf[32];
        tir_ctx_fail(ctx, TIR_ERR_TYPE, "compute '%s': unsupported element dtype %s", name,
                     tir_dtype_str(value->dtype, buf, sizeof buf));
        goto out;
    }
    x = IR_NEW(ctx, tir_te_tensor);
    x->name = tir_intern(ctx, name);
    x->ndim = ndim;
    x->shape = ir_copy_array(ctx, shape, sizeof *shape, ndim);
    x->buf = tir_buffer_simple(ctx, name, value->dtype, ndim, shape, TIR_SCOPE_GLOBAL);
    x->is_compute = true;
    x->is_reduce = reduce;
    x->reducer = r;
    x->axes = axes;
    x->names = lnames;
    x->nraxes = nraxes;
    x->rextents = reduce ? ir_copy_array(ctx, rextents, sizeof *rextents, nraxes) : NULL;
    x->value = value;
    x->ndeps = rec.deps.n;
    x->deps = ir_copy_array(ctx, rec.deps.items, sizeof(void *), rec.deps.n);
out:
    ir_vec_free(&rec.deps);
    return x;
}

tir_te_tensor *tir_te_compute(tir_ctx *ctx, const char *name, int ndim, const int64_t *shape,
                              tir_te_fcompute f, void *user) {
    return make_compute(ctx, name, ndim, shape, NULL, false, TIR_TE_SUM, 0, NULL, NULL, f, user);
}

tir_te_tensor *tir_te_reduce(tir_ctx *ctx, const char *name, int ndim, const int64_t *shape,
                             tir_te_reducer r, int nraxes, const int64_t *rextents,
                             tir_te_fcompute f, void *user) {
    return make_compute(ctx, name, ndim, shape, NULL, true, r, nraxes, rextents, NULL, f, user);
}

tir_te_tensor *ir_te_compute_named(tir_ctx *ctx, const char *name, int ndim,
                                   const int64_t *shape, const char *const *names,
                                   tir_te_fcompute f, void *user) {
    return make_compute(ctx, name, ndim, shape, names, false, TIR_TE_SUM, 0, NULL, NULL, f,
                        user);
}

tir_te_tensor *ir_te_reduce_named(tir_ctx *ctx, const char *name, int ndim,
                                  const int64_t *shape, const char *const *names,
                                  tir_te_reducer r, int nraxes, const int64_t *rextents,
                                  const char *const *rnames, tir_te_fcompute f, void *user) {
    return make_compute(ctx, name, ndim, shape, names, true, r, nraxes, rextents, rnames, f,
                        user);
}

const tir_buffer *tir_te_buffer(const tir_te_tensor *t) { return t ? t->buf : NULL; }

const tir_expr *tir_te_at(tir_ctx *ctx, const tir_te_tensor *t, int nidx,
                          const tir_expr *const *indices) {
    if (!t) {
        tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_te_at: no tensor");
        return NULL;
    }
    if (nidx != t->ndim) {
        tir_ctx_fail(ctx, TIR_ERR_SHAPE, "tensor '%s' has rank %d but is indexed with %d indices",
                     t->name, t->ndim, nidx);
        return NULL;
    }
    for (int i = 0; i < nidx; i++) {
        if (!indices[i] || !tir_dtype_is_int(indices[i]->dtype) || indices[i]->dtype.lanes != 1) {
            tir_ctx_fail(ctx, TIR_ERR_TYPE, "tensor '%s': index %d is not a scalar integer",
                         t->name, i);
            return NULL;
        }
    }
    if (te_rec) {
        bool seen = false;
        for (int i = 0; i < te_rec->deps.n; i++) seen |= te_rec->deps.items[i] == t;
        if (!seen) ir_vec_push(&te_rec->deps, t);
    }
    return tir_load(ctx, t->buf, nidx, indices);
}

/* ------------------------------------------------------- read regions */

/* Structural equality with variables compared by identity (the regions
 * of vi and vj must differ, which tir_struct_equal's renaming would not
 * see). */
static bool expr_same(const tir_expr *a, const tir_expr *b) {
    if (a == b) return true;
    if (!a || !b || a->kind != b->kind || !tir_dtype_eq(a->dtype, b->dtype)) return false;
    tir_kind k = (tir_kind)a->kind;
    if (tir_kind_is_binop(k)) {
        const tir_binop *x = (const tir_binop *)a, *y = (const tir_binop *)b;
        return expr_same(x->a, y->a) && expr_same(x->b, y->b);
    }
    switch (k) {
    case TIR_KIND_INT_IMM: return ((const tir_int_imm *)a)->value == ((const tir_int_imm *)b)->value;
    case TIR_KIND_FLOAT_IMM: { /* the bits, as tir_struct_equal: -0.0 is not 0.0 */
        double x = ((const tir_float_imm *)a)->value, y = ((const tir_float_imm *)b)->value;
        return memcmp(&x, &y, sizeof x) == 0;
    }
    case TIR_KIND_NOT: return expr_same(((const tir_not *)a)->a, ((const tir_not *)b)->a);
    case TIR_KIND_CAST: return expr_same(((const tir_cast *)a)->value, ((const tir_cast *)b)->value);
    case TIR_KIND_SELECT: {
        const tir_select *x = (const tir_select *)a, *y = (const tir_select *)b;
        return expr_same(x->cond, y->cond) && expr_same(x->t, y->t) && expr_same(x->f, y->f);
    }
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *x = (const tir_buffer_load *)a, *y = (const tir_buffer_load *)b;
        if (x->buffer != y->buffer || x->nidx != y->nidx) return false;
        for (int i = 0; i < x->nidx; i++)
            if (!expr_same(x->indices[i], y->indices[i])) return false;
        return true;
    }
    case TIR_KIND_CALL: {
        const tir_call *x = (const tir_call *)a, *y = (const tir_call *)b;
        if (x->op != y->op || x->nargs != y->nargs) return false;
        for (int i = 0; i < x->nargs; i++)
            if (!expr_same(x->args[i], y->args[i])) return false;
        return true;
    }
    default: return false; /* vars differ by pointer; the rest is rare in indices */
    }
}

/* e = base + c with c constant (base NULL when e is a constant); nested
 * constant offsets, as in (vi + 1) - 1, are all peeled. */
static void split_const(const tir_expr *e, const tir_expr **base, int64_t *c) {
    int64_t v, sum = 0;
    for (;;) {
        if (tir_expr_const_int(e, &v)) {
            *base = NULL;
            *c = sum + v;
            return;
        }
        const tir_binop *b = tir_as_tir_binop(e);
        if (!b || (b->base.kind != TIR_KIND_ADD && b->base.kind != TIR_KIND_SUB) ||
            !tir_expr_const_int(b->b, &v))
            break;
        sum += b->base.kind == TIR_KIND_ADD ? v : -v;
        e = b->a;
    }
    *base = e;
    *c = sum;
}

typedef struct load_collector {
    ir_vec loads;
} load_collector;

static bool collect_loads(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_BUFFER_LOAD) ir_vec_push(&((load_collector *)v->user)->loads, n);
    return true;
}

/* One region per distinct buffer loaded in e, in order of first use.  e is
 * the stage's value, so a reduction's accumulator (loaded only by the
 * update built around it) is not among them. */
static int read_regions(tir_ctx *ctx, const tir_expr *e, tir_buffer_region **out) {
    load_collector lc = {{0}};
    tir_visitor v = {collect_loads, NULL, &lc};
    tir_visit(&v, e);
    tir_buffer_region *regs = IR_NEWN(ctx, tir_buffer_region, lc.loads.n);
    int nregs = 0;
    for (int i = 0; i < lc.loads.n; i++) {
        const tir_buffer_load *ld = lc.loads.items[i];
        const tir_buffer *buf = ld->buffer;
        bool seen = false;
        for (int r = 0; r < nregs && !seen; r++) seen = regs[r].buffer == buf;
        if (seen) continue;
        tir_range *rs = IR_NEWN(ctx, tir_range, ld->nidx);
        for (int d = 0; d < ld->nidx; d++) {
            const tir_expr *base0;
            int64_t lo, hi, c;
            split_const(ld->indices[d], &base0, &lo);
            hi = lo;
            bool all_same = true, same_base = true;
            for (int j = i + 1; j < lc.loads.n; j++) {
                const tir_buffer_load *o = lc.loads.items[j];
                if (o->buffer != buf) continue;
                const tir_expr *b;
                if (!expr_same(o->indices[d], ld->indices[d])) all_same = false;
                split_const(o->indices[d], &b, &c);
                if (!expr_same(b, base0)) same_base = false;
                if (c < lo) lo = c;
                if (c > hi) hi = c;
            }
            tir_dtype it = ld->indices[d]->dtype;
            if (all_same) {
                rs[d].min = ld->indices[d];
                rs[d].extent = tir_int(ctx, it, 1);
            } else if (same_base) {
                const tir_expr *m = !base0 ? tir_int(ctx, it, lo)
                                    : lo == 0 ? base0
                                    : lo > 0 ? tir_add(ctx, base0, tir_int(ctx, it, lo))
                                             : tir_sub(ctx, base0, tir_int(ctx, it, -lo));
                rs[d].min = m;
                rs[d].extent = tir_int(ctx, it, hi - lo + 1);
            } else {
                rs[d].min = tir_int(ctx, buf->shape[d]->dtype, 0);
                rs[d].extent = buf->shape[d];
            }
        }
        regs[nregs++] = tir_region_new(ctx, buf, ld->nidx, rs);
    }
    ir_vec_free(&lc.loads);
    *out = regs;
    return nregs;
}

/* ------------------------------------------------------ create_prim_func */

typedef struct te_builder {
    tir_ctx *ctx;
    tir_te_tensor *const *args;
    int nargs;
    ir_vec stages; /* compute tensors in dependency order */
} te_builder;

static bool is_arg(const te_builder *b, const tir_te_tensor *t) {
    for (int i = 0; i < b->nargs; i++)
        if (b->args[i] == t) return true;
    return false;
}

static bool is_stage(const te_builder *b, const tir_te_tensor *t) {
    for (int i = 0; i < b->stages.n; i++)
        if (b->stages.items[i] == t) return true;
    return false;
}

static tir_status order_stages(te_builder *b, tir_te_tensor *t, const tir_te_tensor *user) {
    if (!t->is_compute) {
        if (is_arg(b, t)) return TIR_OK;
        return tir_ctx_fail(b->ctx, TIR_ERR_INVALID_ARG,
                            "stage '%s' depends on '%s', which is neither an argument nor "
                            "computed",
                            user ? user->name : "?", t->name);
    }
    if (is_stage(b, t)) return TIR_OK;
    for (int i = 0; i < t->ndeps; i++) TIR_TRY(order_stages(b, t->deps[i], t));
    ir_vec_push(&b->stages, t);
    return TIR_OK;
}

/* Loads of buffers that no argument or stage owns (a tir_load built by hand
 * on some other buffer) cannot be given storage. */
static tir_status check_buffers(te_builder *b, const tir_te_tensor *t) {
    load_collector lc = {{0}};
    tir_visitor v = {collect_loads, NULL, &lc};
    tir_visit(&v, t->value);
    tir_status st = TIR_OK;
    for (int i = 0; i < lc.loads.n && st == TIR_OK; i++) {
        const tir_buffer *buf = ((const tir_buffer_load *)lc.loads.items[i])->buffer;
        bool ok = false;
        for (int a = 0; a < b->nargs && !ok; a++) ok = b->args[a]->buf == buf;
        for (int s = 0; s < b->stages.n && !ok; s++)
            ok = ((const tir_te_tensor *)b->stages.items[s])->buf == buf;
        if (!ok)
            st = tir_ctx_fail(b->ctx, TIR_ERR_INVALID_ARG,
                              "stage '%s' reads buffer '%s', which is neither an argument nor "
                              "computed",
                              t->name, buf->name);
    }
    ir_vec_free(&lc.loads);
    return st;
}

static const tir_stmt *build_stage(tir_ctx *ctx, const tir_te_tensor *t) {
    int nall = t->ndim + t->nraxes;
    const tir_var **loops = IR_NEWN(ctx, const tir_var *, nall);
    const tir_expr **ivals = IR_NEWN(ctx, const tir_expr *, nall);
    tir_iter_var *iters = IR_NEWN(ctx, tir_iter_var, nall);
    for (int i = 0; i < nall; i++) {
        bool red = i >= t->ndim;
        int64_t ext = red ? t->rextents[i - t->ndim] : t->shape[i];
        loops[i] = tir_var_new(ctx, t->names[i], TIR_I32);
        const tir_var *iv = tir_var_new(ctx, tir_ctx_sprintf(ctx, "v%s", t->names[i]), TIR_I32);
        ivals[i] = &iv->base;
        iters[i].var = iv;
        iters[i].dom.min = tir_i32(ctx, 0);
        iters[i].dom.extent = tir_i32(ctx, ext);
        iters[i].kind = red ? TIR_ITER_REDUCE : TIR_ITER_SPATIAL;
    }
    const tir_expr *value =
        (const tir_expr *)tir_substitute(ctx, t->value, nall, t->axes, ivals);

    tir_buffer_region *reads;
    int nreads = read_regions(ctx, value, &reads);
    tir_range *wr = IR_NEWN(ctx, tir_range, t->ndim);
    for (int d = 0; d < t->ndim; d++) {
        wr[d].min = ivals[d];
        wr[d].extent = tir_i32(ctx, 1);
    }
    tir_buffer_region write = tir_region_new(ctx, t->buf, t->ndim, wr);

    const tir_stmt *init = NULL, *body;
    if (t->is_reduce) {
        init = tir_store(ctx, t->buf, ir_te_identity(ctx, t->reducer, t->buf->dtype), t->ndim,
                         ivals);
        const tir_expr *acc = tir_load(ctx, t->buf, t->ndim, ivals);
        body = tir_store(ctx, t->buf, ir_te_combine(ctx, t->reducer, acc, value), t->ndim, ivals);
    } else {
        body = tir_store(ctx, t->buf, value, t->ndim, ivals);
    }
    tir_block_desc d = {0};
    d.name = t->name;
    d.niters = nall;
    d.iters = iters;
    d.nreads = nreads;
    d.reads = reads;
    d.nwrites = 1;
    d.writes = &write;
    d.init = init;
    d.body = body;
    const tir_block *blk = tir_block_new(ctx, &d);
    const tir_expr **lvals = IR_NEWN(ctx, const tir_expr *, nall);
    for (int i = 0; i < nall; i++) lvals[i] = &loops[i]->base;
    const tir_stmt *s = tir_block_realize_new(ctx, nall, lvals, NULL, blk);
    for (int i = nall - 1; i >= 0; i--)
        s = tir_for_new(ctx, loops[i], tir_i32(ctx, 0), iters[i].dom.extent, TIR_FOR_SERIAL,
                        NULL, 0, NULL, s);
    return s;
}

const tir_prim_func *tir_te_create_prim_func(tir_ctx *ctx, const char *name, int nargs,
                                             tir_te_tensor *const *args) {
    if (!name) name = "main";
    if (nargs < 0 || (nargs > 0 && !args)) {
        tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "create_prim_func '%s': bad argument list", name);
        return NULL;
    }
    for (int i = 0; i < nargs; i++) {
        if (!args[i]) {
            tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "create_prim_func '%s': argument %d is NULL",
                         name, i);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (args[j] == args[i]) {
                tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                             "create_prim_func '%s': tensor '%s' is passed twice", name,
                             args[i]->name);
                return NULL;
            }
    }
    te_builder b = {ctx, args, nargs, {0}};
    const tir_prim_func *f = NULL;
    for (int i = 0; i < nargs; i++)
        if (order_stages(&b, args[i], NULL) != TIR_OK) goto out;
    for (int s = 0; s < b.stages.n; s++)
        if (check_buffers(&b, b.stages.items[s]) != TIR_OK) goto out;

    {
        ir_vec allocs = {0};
        const tir_stmt **stmts = IR_NEWN(ctx, const tir_stmt *, b.stages.n);
        for (int s = 0; s < b.stages.n; s++) {
            const tir_te_tensor *t = b.stages.items[s];
            if (!is_arg(&b, t)) ir_vec_push(&allocs, t->buf);
            stmts[s] = build_stage(ctx, t);
        }
        tir_block_desc root = {0};
        root.name = "root";
        root.body = tir_seq_new(ctx, b.stages.n, stmts);
        root.nallocs = allocs.n;
        root.allocs = (const tir_buffer *const *)allocs.items;
        const tir_block *rb = tir_block_new(ctx, &root);
        ir_vec_free(&allocs);
        const tir_stmt *body = tir_block_realize_new(ctx, 0, NULL, NULL, rb);

        const tir_var **params = IR_NEWN(ctx, const tir_var *, nargs);
        const tir_buffer **bmap = IR_NEWN(ctx, const tir_buffer *, nargs);
        for (int i = 0; i < nargs; i++) {
            params[i] = tir_var_new(ctx, args[i]->name, TIR_HANDLE);
            bmap[i] = args[i]->buf;
        }
        tir_annot attrs[2] = {
            {.key = "global_symbol", .kind = TIR_ANNOT_STR, .s = name},
            {.key = "tir.noalias", .kind = TIR_ANNOT_INT, .i = 1},
        };
        f = tir_prim_func_new(ctx, name, nargs, params, bmap, body, 2, attrs);
    }
out:
    ir_vec_free(&b.stages);
    return f;
}
