/* node.c: node kinds and constructors.
 *
 * Constructors copy their array arguments into the arena and check types
 * with assertions: a mistyped node is a bug in the caller, and user-facing
 * entry points (parser, TE builder, schedule primitives) validate first.
 */
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

static const char *const kind_names[] = {
#define TIR_EXPR(K, S, N) N,
#define TIR_STMT(K, S, N) N,
#define TIR_OTHER(K, S, N) N,
#include "minitir/nodes.def"
};
enum { CAT_EXPR, CAT_STMT, CAT_OTHER };
static const unsigned char kind_cat[] = {
#define TIR_EXPR(K, S, N) CAT_EXPR,
#define TIR_STMT(K, S, N) CAT_STMT,
#define TIR_OTHER(K, S, N) CAT_OTHER,
#include "minitir/nodes.def"
};

const char *tir_kind_name(tir_kind k) {
    return (unsigned)k < TIR_KIND_COUNT ? kind_names[k] : "?";
}
bool tir_kind_is_expr(tir_kind k) { return (unsigned)k < TIR_KIND_COUNT && kind_cat[k] == CAT_EXPR; }
bool tir_kind_is_stmt(tir_kind k) { return (unsigned)k < TIR_KIND_COUNT && kind_cat[k] == CAT_STMT; }
bool tir_kind_is_binop(tir_kind k) { return k >= TIR_KIND_ADD && k <= TIR_KIND_OR; }
bool tir_kind_is_compare(tir_kind k) { return k >= TIR_KIND_EQ && k <= TIR_KIND_GE; }

static const struct {
    const char *name;
    int nargs;
} intrin_info[] = {
#define TIR_INTRIN(E, S, N) {S, N},
#include "minitir/intrinsics.def"
};

const char *ir_thread_axis_find(const char *s) {
    int a = tir_thread_axis_lookup(s);
    return a < 0 ? NULL : tir_thread_axis_name(a);
}

const char *tir_intrin_name(tir_intrin op) {
    return (unsigned)op < TIR_INTRIN_COUNT ? intrin_info[op].name : "?";
}
int tir_intrin_nargs(tir_intrin op) {
    return (unsigned)op < TIR_INTRIN_COUNT ? intrin_info[op].nargs : -1;
}

bool tir_intrin_nargs_ok(tir_intrin op, int n) {
    int want = tir_intrin_nargs(op);
    if (op == TIR_INTRIN_WGMMA_SYNC) return n >= 5 && n % 5 == 0; /* groups of 5 */
    return want < 0 || n == want || (op == TIR_INTRIN_CP_ASYNC && n == 4);
}
tir_intrin tir_intrin_lookup(const char *name, size_t len) {
    for (int i = 0; i < TIR_INTRIN_COUNT; i++)
        if (strlen(intrin_info[i].name) == len && memcmp(intrin_info[i].name, name, len) == 0)
            return (tir_intrin)i;
    return TIR_INTRIN_COUNT;
}

bool tir_expr_const_int(const tir_expr *e, int64_t *out) {
    const tir_int_imm *i = tir_as_tir_int_imm(e);
    if (!i) return false;
    if (out) *out = i->value;
    return true;
}

/* ------------------------------------------------------------- expressions */

#define NEW_EXPR(T, K, DT) IR_NEW_EXPR_(ctx, sizeof(T), TIR_KIND_##K, DT)
static void *IR_NEW_EXPR_(tir_ctx *ctx, size_t size, tir_kind k, tir_dtype dt) {
    tir_expr *e = tir_ctx_alloc(ctx, size);
    e->kind = (uint16_t)k;
    e->dtype = dt;
    return e;
}

const tir_expr *tir_int(tir_ctx *ctx, tir_dtype t, int64_t v) {
    TIR_ASSERT(tir_dtype_is_int(t) || tir_dtype_is_bool(t));
    TIR_ASSERT(t.lanes == 1);
    tir_int_imm *n = NEW_EXPR(tir_int_imm, INT_IMM, t);
    n->value = v;
    return &n->base;
}
const tir_expr *tir_i32(tir_ctx *ctx, int64_t v) { return tir_int(ctx, TIR_I32, v); }
const tir_expr *tir_bool(tir_ctx *ctx, bool v) { return tir_int(ctx, TIR_BOOL, v ? 1 : 0); }

const tir_expr *tir_float(tir_ctx *ctx, tir_dtype t, double v) {
    TIR_ASSERT(tir_dtype_is_float(t) && t.lanes == 1);
    tir_float_imm *n = NEW_EXPR(tir_float_imm, FLOAT_IMM, t);
    n->value = v;
    return &n->base;
}
const tir_expr *tir_f32(tir_ctx *ctx, double v) { return tir_float(ctx, TIR_F32, v); }

const tir_var *tir_var_new(tir_ctx *ctx, const char *name, tir_dtype t) {
    tir_var *v = NEW_EXPR(tir_var, VAR, t);
    v->name = tir_intern(ctx, name ? name : "v");
    v->id = ir_ctx_next_id(ctx);
    return v;
}

const tir_expr *tir_binop_new(tir_ctx *ctx, tir_kind kind, const tir_expr *a,
                              const tir_expr *b) {
    TIR_ASSERT(tir_kind_is_binop(kind));
    TIR_ASSERT(a && b);
    TIR_ASSERT(tir_dtype_eq(a->dtype, b->dtype));
    tir_dtype t = a->dtype;
    if (tir_kind_is_compare(kind)) t = tir_dtype_with_lanes(TIR_BOOL, a->dtype.lanes);
    if (kind == TIR_KIND_AND || kind == TIR_KIND_OR) TIR_ASSERT(tir_dtype_is_bool(t));
    tir_binop *n = IR_NEW_EXPR_(ctx, sizeof(tir_binop), kind, t);
    n->a = a;
    n->b = b;
    return &n->base;
}
/* The binary helpers of ir.h: one tir_binop_new each. */
#define BINOP_HELPER(NAME, KIND)                                                   \
    const tir_expr *NAME(tir_ctx *ctx, const tir_expr *a, const tir_expr *b) {     \
        return tir_binop_new(ctx, TIR_KIND_##KIND, a, b);                         \
    }
BINOP_HELPER(tir_add, ADD)
BINOP_HELPER(tir_sub, SUB)
BINOP_HELPER(tir_mul, MUL)
BINOP_HELPER(tir_floordiv, FLOORDIV)
BINOP_HELPER(tir_floormod, FLOORMOD)
BINOP_HELPER(tir_div, FLOORDIV)
BINOP_HELPER(tir_mod, FLOORMOD)
BINOP_HELPER(tir_truncdiv, DIV)
BINOP_HELPER(tir_truncmod, MOD)
BINOP_HELPER(tir_min, MIN)
BINOP_HELPER(tir_max, MAX)
BINOP_HELPER(tir_eq, EQ)
BINOP_HELPER(tir_ne, NE)
BINOP_HELPER(tir_lt, LT)
BINOP_HELPER(tir_le, LE)
BINOP_HELPER(tir_gt, GT)
BINOP_HELPER(tir_ge, GE)
BINOP_HELPER(tir_and, AND)
BINOP_HELPER(tir_or, OR)
#undef BINOP_HELPER

const tir_expr *tir_not_new(tir_ctx *ctx, const tir_expr *a) {
    TIR_ASSERT(a && tir_dtype_is_bool(a->dtype));
    tir_not *n = NEW_EXPR(tir_not, NOT, a->dtype);
    n->a = a;
    return &n->base;
}

const tir_expr *tir_select_new(tir_ctx *ctx, const tir_expr *cond, const tir_expr *t,
                               const tir_expr *f) {
    TIR_ASSERT(cond && t && f);
    TIR_ASSERT(tir_dtype_is_bool(cond->dtype));
    TIR_ASSERT(tir_dtype_eq(t->dtype, f->dtype));
    TIR_ASSERT(cond->dtype.lanes == 1 || cond->dtype.lanes == t->dtype.lanes);
    tir_select *n = NEW_EXPR(tir_select, SELECT, t->dtype);
    n->cond = cond;
    n->t = t;
    n->f = f;
    return &n->base;
}

const tir_expr *tir_cast_new(tir_ctx *ctx, tir_dtype t, const tir_expr *v) {
    TIR_ASSERT(v && t.lanes == v->dtype.lanes);
    tir_cast *n = NEW_EXPR(tir_cast, CAST, t);
    n->value = v;
    return &n->base;
}

const tir_expr *tir_load(tir_ctx *ctx, const tir_buffer *buf, int nidx,
                         const tir_expr *const *indices) {
    TIR_ASSERT(buf && nidx >= 0);
    int lanes = 1;
    for (int i = 0; i < nidx; i++) {
        TIR_ASSERT(indices[i] && tir_dtype_is_int(indices[i]->dtype));
        if (indices[i]->dtype.lanes > 1) {
            TIR_ASSERT(i == nidx - 1);
            lanes = indices[i]->dtype.lanes;
        }
    }
    tir_buffer_load *n =
        NEW_EXPR(tir_buffer_load, BUFFER_LOAD, tir_dtype_with_lanes(buf->dtype, lanes));
    n->buffer = buf;
    n->nidx = nidx;
    n->indices = ir_copy_array(ctx, indices, sizeof *indices, nidx);
    return &n->base;
}

const tir_expr *tir_ramp_new(tir_ctx *ctx, const tir_expr *start, const tir_expr *stride,
                             int lanes) {
    TIR_ASSERT(start && stride && lanes > 1);
    TIR_ASSERT(start->dtype.lanes == 1 && tir_dtype_eq(start->dtype, stride->dtype));
    tir_ramp *n = NEW_EXPR(tir_ramp, RAMP, tir_dtype_with_lanes(start->dtype, lanes));
    n->start = start;
    n->stride = stride;
    n->lanes = lanes;
    return &n->base;
}

const tir_expr *tir_broadcast_new(tir_ctx *ctx, const tir_expr *v, int lanes) {
    TIR_ASSERT(v && v->dtype.lanes == 1 && lanes > 1);
    tir_broadcast *n = NEW_EXPR(tir_broadcast, BROADCAST, tir_dtype_with_lanes(v->dtype, lanes));
    n->value = v;
    n->lanes = lanes;
    return &n->base;
}

const tir_expr *tir_call_new(tir_ctx *ctx, tir_dtype t, tir_intrin op, int nargs,
                             const tir_expr *const *args) {
    TIR_ASSERT((unsigned)op < TIR_INTRIN_COUNT);
    TIR_ASSERT(tir_intrin_nargs_ok(op, nargs));
    for (int i = 0; i < nargs; i++) TIR_ASSERT(args[i]);
    tir_call *n = NEW_EXPR(tir_call, CALL, t);
    n->op = op;
    n->nargs = nargs;
    n->args = ir_copy_array(ctx, args, sizeof *args, nargs);
    return &n->base;
}

const tir_expr *tir_let_new(tir_ctx *ctx, const tir_var *v, const tir_expr *value,
                            const tir_expr *body) {
    TIR_ASSERT(v && value && body && tir_dtype_eq(v->base.dtype, value->dtype));
    tir_let *n = NEW_EXPR(tir_let, LET, body->dtype);
    n->var = v;
    n->value = value;
    n->body = body;
    return &n->base;
}

/* ---------------------------------------------------------- expression depth */

/* Child i of an expression (operands in order), NULL past the last. */
static const tir_expr *expr_child(const tir_expr *e, int i) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_NOT: return i == 0 ? ((const tir_not *)e)->a : NULL;
    case TIR_KIND_SELECT: {
        const tir_select *s = (const void *)e;
        return i == 0 ? s->cond : i == 1 ? s->t : i == 2 ? s->f : NULL;
    }
    case TIR_KIND_CAST: return i == 0 ? ((const tir_cast *)e)->value : NULL;
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = (const void *)e;
        return i < l->nidx ? l->indices[i] : NULL;
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *r = (const void *)e;
        return i == 0 ? r->start : i == 1 ? r->stride : NULL;
    }
    case TIR_KIND_BROADCAST: return i == 0 ? ((const tir_broadcast *)e)->value : NULL;
    case TIR_KIND_CALL: {
        const tir_call *c = (const void *)e;
        return i < c->nargs ? c->args[i] : NULL;
    }
    case TIR_KIND_LET: {
        const tir_let *l = (const void *)e;
        return i == 0 ? l->value : i == 1 ? l->body : NULL;
    }
    default:
        if (!tir_kind_is_binop((tir_kind)e->kind)) return NULL;
        return i == 0 ? ((const tir_binop *)e)->a : i == 1 ? ((const tir_binop *)e)->b : NULL;
    }
}

/* An explicit-stack walk (the point is to measure trees too deep for the
 * recursive walkers): the stack holds the current path, so it never grows
 * past limit + 1 frames, and the walk stops at the first path that long. */
int tir_expr_depth(const tir_expr *e, int limit) {
    if (!e) return 0;
    if (limit < 1) return 1;
    typedef struct frame {
        const tir_expr *e;
        int next;
    } frame;
    frame small[64];
    frame *st = small;
    int cap = 64, n = 0, best = 0;
    st[n++] = (frame){e, 0};
    while (n > 0) {
        if (n > best && (best = n) > limit) break;
        frame *f = &st[n - 1];
        const tir_expr *c = expr_child(f->e, f->next++);
        if (!c) {
            n--;
            continue;
        }
        if (n == cap) {
            cap *= 2;
            frame *grown = ir_xmalloc(sizeof *grown * (size_t)cap);
            memcpy(grown, st, sizeof *st * (size_t)n);
            if (st != small) free(st);
            st = grown;
        }
        st[n++] = (frame){c, 0};
    }
    if (st != small) free(st);
    return best;
}

/* -------------------------------------------------------------- statements */

static void *new_stmt(tir_ctx *ctx, size_t size, tir_kind k) {
    tir_stmt *s = tir_ctx_alloc(ctx, size);
    s->kind = (uint16_t)k;
    return s;
}
#define NEW_STMT(T, K) ((T *)new_stmt(ctx, sizeof(T), TIR_KIND_##K))

static int annot_cmp(const void *a, const void *b) {
    return strcmp(((const tir_annot *)a)->key, ((const tir_annot *)b)->key);
}

const tir_annot *tir_annots_copy(tir_ctx *ctx, int n, const tir_annot *annots) {
    if (n <= 0) return NULL;
    tir_annot *a = IR_NEWN(ctx, tir_annot, n);
    for (int i = 0; i < n; i++) {
        a[i] = annots[i];
        a[i].key = tir_intern(ctx, annots[i].key);
        if (a[i].kind == TIR_ANNOT_STR) a[i].s = tir_intern(ctx, annots[i].s ? annots[i].s : "");
        if (a[i].kind == TIR_ANNOT_INTS)
            a[i].ints = ir_copy_array(ctx, annots[i].ints, sizeof(int64_t), annots[i].nints);
    }
    qsort(a, (size_t)n, sizeof *a, annot_cmp);
    for (int i = 1; i < n; i++) TIR_ASSERT(a[i - 1].key != a[i].key && "duplicate annotation");
    return a;
}

const tir_annot *tir_annots_find(int n, const tir_annot *annots, const char *key) {
    for (int i = 0; i < n; i++)
        if (strcmp(annots[i].key, key) == 0) return &annots[i];
    return NULL;
}

static const struct {
    const char *str;
    tir_annot_kind kind;
} annot_keys[TIR_ANN_COUNT] = {
#define TIR_ANN(E, S, K) {S, K},
#include "minitir/annotations.def"
};

const char *tir_annot_key_str(tir_annot_key k) {
    TIR_ASSERT((unsigned)k < TIR_ANN_COUNT);
    return annot_keys[k].str;
}

tir_annot_kind tir_annot_key_kind(tir_annot_key k) {
    TIR_ASSERT((unsigned)k < TIR_ANN_COUNT);
    return annot_keys[k].kind;
}

tir_annot_key tir_annot_key_lookup(const char *s) {
    for (int k = 0; k < TIR_ANN_COUNT; k++)
        if (strcmp(annot_keys[k].str, s) == 0) return (tir_annot_key)k;
    return TIR_ANN_COUNT;
}

const tir_annot *tir_annots_get(int n, const tir_annot *annots, tir_annot_key key) {
    return tir_annots_find(n, annots, tir_annot_key_str(key));
}

const tir_stmt *tir_for_new(tir_ctx *ctx, const tir_var *v, const tir_expr *min,
                            const tir_expr *extent, tir_for_kind kind, const char *thread_tag,
                            int nannots, const tir_annot *annots, const tir_stmt *body) {
    TIR_ASSERT(v && min && extent && body);
    TIR_ASSERT(tir_dtype_is_int(v->base.dtype));
    TIR_ASSERT(tir_dtype_eq(min->dtype, v->base.dtype) && tir_dtype_eq(extent->dtype, v->base.dtype));
    TIR_ASSERT((kind == TIR_FOR_THREAD_BINDING) == (thread_tag != NULL));
    tir_for *n = NEW_STMT(tir_for, FOR);
    n->var = v;
    n->min = min;
    n->extent = extent;
    n->kind = kind;
    n->thread_tag = thread_tag ? tir_intern(ctx, thread_tag) : NULL;
    n->nannots = nannots;
    n->annots = tir_annots_copy(ctx, nannots, annots);
    n->body = body;
    return &n->base;
}

const tir_stmt *tir_store(tir_ctx *ctx, const tir_buffer *buf, const tir_expr *value, int nidx,
                          const tir_expr *const *indices) {
    TIR_ASSERT(buf && value);
    int lanes = 1;
    for (int i = 0; i < nidx; i++) {
        TIR_ASSERT(indices[i] && tir_dtype_is_int(indices[i]->dtype));
        if (indices[i]->dtype.lanes > 1) lanes = indices[i]->dtype.lanes;
    }
    TIR_ASSERT(tir_dtype_eq(value->dtype, tir_dtype_with_lanes(buf->dtype, lanes)));
    tir_buffer_store *n = NEW_STMT(tir_buffer_store, BUFFER_STORE);
    n->buffer = buf;
    n->value = value;
    n->nidx = nidx;
    n->indices = ir_copy_array(ctx, indices, sizeof *indices, nidx);
    return &n->base;
}

static void flatten(ir_vec *out, const tir_stmt *s) {
    if (!s) return;
    const tir_seq *q = tir_as_tir_seq(s);
    if (q) {
        for (int i = 0; i < q->n; i++) flatten(out, q->stmts[i]);
        return;
    }
    ir_vec_push(out, s);
}

const tir_stmt *tir_seq_new(tir_ctx *ctx, int n, const tir_stmt *const *stmts) {
    ir_vec v = {0};
    for (int i = 0; i < n; i++) flatten(&v, stmts[i]);
    const tir_stmt *r;
    if (v.n == 0)
        r = tir_evaluate_new(ctx, tir_i32(ctx, 0));
    else if (v.n == 1)
        r = v.items[0];
    else {
        tir_seq *q = NEW_STMT(tir_seq, SEQ);
        q->n = v.n;
        q->stmts = ir_copy_array(ctx, v.items, sizeof(void *), v.n);
        r = &q->base;
    }
    ir_vec_free(&v);
    return r;
}

const tir_stmt *tir_if_new(tir_ctx *ctx, const tir_expr *cond, const tir_stmt *then_s,
                           const tir_stmt *else_s) {
    TIR_ASSERT(cond && then_s && tir_dtype_eq(cond->dtype, TIR_BOOL));
    tir_if *n = NEW_STMT(tir_if, IF);
    n->cond = cond;
    n->then_s = then_s;
    n->else_s = else_s;
    return &n->base;
}

const tir_stmt *tir_allocate_new(tir_ctx *ctx, const tir_buffer *buf, const tir_stmt *body) {
    return tir_allocate_annotated(ctx, buf, 0, NULL, body);
}

const tir_stmt *tir_allocate_annotated(tir_ctx *ctx, const tir_buffer *buf, int nannots,
                                       const tir_annot *annots, const tir_stmt *body) {
    TIR_ASSERT(buf && body && nannots >= 0 && (annots || nannots == 0));
    tir_allocate *n = NEW_STMT(tir_allocate, ALLOCATE);
    n->buffer = buf;
    n->body = body;
    n->nannots = nannots;
    n->annots = tir_annots_copy(ctx, nannots, annots);
    return &n->base;
}

const tir_stmt *tir_evaluate_new(tir_ctx *ctx, const tir_expr *value) {
    TIR_ASSERT(value);
    tir_evaluate *n = NEW_STMT(tir_evaluate, EVALUATE);
    n->value = value;
    return &n->base;
}

const tir_block *tir_block_new(tir_ctx *ctx, const tir_block_desc *d) {
    TIR_ASSERT(d->name && d->body);
    tir_block *b = NEW_STMT(tir_block, BLOCK);
    b->name = tir_intern(ctx, d->name);
    b->niters = d->niters;
    b->iters = ir_copy_array(ctx, d->iters, sizeof *d->iters, d->niters);
    for (int i = 0; i < d->niters; i++) TIR_ASSERT(d->iters[i].var && d->iters[i].dom.extent);
    b->nreads = d->nreads;
    b->reads = ir_copy_array(ctx, d->reads, sizeof *d->reads, d->nreads);
    b->nwrites = d->nwrites;
    b->writes = ir_copy_array(ctx, d->writes, sizeof *d->writes, d->nwrites);
    b->init = d->init;
    b->body = d->body;
    b->nallocs = d->nallocs;
    b->allocs = ir_copy_array(ctx, d->allocs, sizeof *d->allocs, d->nallocs);
    b->nannots = d->nannots;
    b->annots = tir_annots_copy(ctx, d->nannots, d->annots);
    return b;
}

void tir_block_describe(const tir_block *b, tir_block_desc *d) {
    d->name = b->name;
    d->niters = b->niters;
    d->iters = b->iters;
    d->nreads = b->nreads;
    d->reads = b->reads;
    d->nwrites = b->nwrites;
    d->writes = b->writes;
    d->init = b->init;
    d->body = b->body;
    d->nallocs = b->nallocs;
    d->allocs = b->allocs;
    d->nannots = b->nannots;
    d->annots = b->annots;
}

const tir_stmt *tir_block_realize_new(tir_ctx *ctx, int nvalues, const tir_expr *const *values,
                                      const tir_expr *predicate, const tir_block *block) {
    TIR_ASSERT(block && nvalues == block->niters);
    for (int i = 0; i < nvalues; i++)
        TIR_ASSERT(values[i] && tir_dtype_eq(values[i]->dtype, block->iters[i].var->base.dtype));
    if (!predicate) predicate = tir_bool(ctx, true);
    TIR_ASSERT(tir_dtype_eq(predicate->dtype, TIR_BOOL));
    tir_block_realize *n = NEW_STMT(tir_block_realize, BLOCK_REALIZE);
    n->nvalues = nvalues;
    n->values = ir_copy_array(ctx, values, sizeof *values, nvalues);
    n->predicate = predicate;
    n->block = block;
    return &n->base;
}

tir_buffer_region tir_region_new(tir_ctx *ctx, const tir_buffer *buf, int ndim,
                                 const tir_range *ranges) {
    tir_buffer_region r;
    r.buffer = buf;
    r.ndim = ndim;
    r.ranges = ir_copy_array(ctx, ranges, sizeof *ranges, ndim);
    return r;
}

tir_buffer_region tir_region_full(tir_ctx *ctx, const tir_buffer *buf) {
    tir_range *rs = IR_NEWN(ctx, tir_range, buf->ndim);
    for (int i = 0; i < buf->ndim; i++) {
        rs[i].min = tir_int(ctx, buf->shape[i]->dtype, 0);
        rs[i].extent = buf->shape[i];
    }
    tir_buffer_region r = {buf, buf->ndim, rs};
    return r;
}

const tir_buffer *tir_buffer_new(tir_ctx *ctx, const tir_buffer_desc *d) {
    TIR_ASSERT(d->name && d->ndim >= 0 && d->dtype.lanes == 1);
    tir_buffer *b = tir_ctx_alloc(ctx, sizeof *b);
    b->base.kind = TIR_KIND_BUFFER;
    b->name = tir_intern(ctx, d->name);
    b->id = ir_ctx_next_id(ctx);
    b->dtype = d->dtype;
    b->ndim = d->ndim;
    b->shape = ir_copy_array(ctx, d->shape, sizeof *d->shape, d->ndim);
    for (int i = 0; i < d->ndim; i++) TIR_ASSERT(d->shape[i] && tir_dtype_is_int(d->shape[i]->dtype));
    b->strides = d->strides ? ir_copy_array(ctx, d->strides, sizeof *d->strides, d->ndim) : NULL;
    b->elem_offset = d->elem_offset ? d->elem_offset : tir_i32(ctx, 0);
    b->scope = d->scope;
    b->align = d->align ? d->align : ir_default_align(d->dtype);
    return b;
}

const tir_buffer *tir_buffer_simple(tir_ctx *ctx, const char *name, tir_dtype t, int ndim,
                                    const int64_t *shape, tir_scope scope) {
    const tir_expr *sh[16];
    TIR_ASSERT(ndim <= 16);
    for (int i = 0; i < ndim; i++) sh[i] = tir_i32(ctx, shape[i]);
    tir_buffer_desc d = {name, t, ndim, sh, NULL, NULL, scope, 0};
    return tir_buffer_new(ctx, &d);
}

void tir_buffer_describe(const tir_buffer *b, tir_buffer_desc *d) {
    d->name = b->name;
    d->dtype = b->dtype;
    d->ndim = b->ndim;
    d->shape = b->shape;
    d->strides = b->strides;
    d->elem_offset = b->elem_offset;
    d->scope = b->scope;
    d->align = b->align;
}

int64_t tir_buffer_const_size(const tir_buffer *b) {
    int64_t n = 1;
    for (int i = 0; i < b->ndim; i++) {
        int64_t v;
        if (!tir_expr_const_int(b->shape[i], &v)) return -1;
        n *= v;
    }
    return n;
}

const tir_prim_func *tir_prim_func_new(tir_ctx *ctx, const char *name, int nparams,
                                       const tir_var *const *params,
                                       const tir_buffer *const *buffer_map,
                                       const tir_stmt *body, int nattrs, const tir_annot *attrs) {
    TIR_ASSERT(name && body && nparams >= 0);
    tir_prim_func *f = tir_ctx_alloc(ctx, sizeof *f);
    f->base.kind = TIR_KIND_PRIM_FUNC;
    f->name = tir_intern(ctx, name);
    f->nparams = nparams;
    f->params = ir_copy_array(ctx, params, sizeof *params, nparams);
    f->buffer_map = nparams ? IR_NEWN(ctx, const tir_buffer *, nparams) : NULL;
    if (buffer_map)
        for (int i = 0; i < nparams; i++) ((const tir_buffer **)f->buffer_map)[i] = buffer_map[i];
    f->body = body;
    f->nattrs = nattrs;
    f->attrs = tir_annots_copy(ctx, nattrs, attrs);
    return f;
}
