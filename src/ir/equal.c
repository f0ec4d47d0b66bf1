/* equal.c: structural equality and hashing.
 *
 * Variables and buffers are compared up to renaming: the first time a
 * variable of one side meets a variable of the other they are paired, and
 * from then on each may only meet its partner (a bijection).  Buffers are
 * paired the same way after their shapes, dtypes and scopes compare equal.
 * The hash numbers variables and buffers by order of first occurrence, so
 * equal nodes hash equal.
 */
#include <string.h>

#include "ir_internal.h"

/* ----------------------------------------------------------------- equality */

typedef struct eq_state {
    ir_ptr_map a2b, b2a;
    /* explanation */
    char *buf;
    size_t bufn;
    const char *path[256];
    int depth;
    bool failed;
} eq_state;

static bool fail(eq_state *s, const char *what, const void *a, const void *b) {
    if (s->failed) return false;
    s->failed = true;
    if (!s->buf || !s->bufn) return false;
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_puts(&sb, "at ");
    for (int i = 0; i < s->depth && i < 256; i++) {
        if (i) ir_sb_putc(&sb, '.');
        ir_sb_puts(&sb, s->path[i]);
    }
    ir_sb_printf(&sb, ": %s", what);
    const tir_node *na = a, *nb = b;
    if (na && nb)
        ir_sb_printf(&sb, " (%s vs %s)", tir_kind_name((tir_kind)na->kind),
                     tir_kind_name((tir_kind)nb->kind));
    const tir_int_imm *ia = tir_as_tir_int_imm(a), *ib = tir_as_tir_int_imm(b);
    if (ia && ib) ir_sb_printf(&sb, " [%lld vs %lld]", (long long)ia->value, (long long)ib->value);
    const tir_var *va = tir_as_tir_var(a), *vb = tir_as_tir_var(b);
    if (va && vb) ir_sb_printf(&sb, " [%s vs %s]", va->name, vb->name);
    snprintf(s->buf, s->bufn, "%s", sb.data ? sb.data : "");
    ir_sb_free(&sb);
    return false;
}

#define PUSH(s, label) ((s)->depth < 256 ? (void)((s)->path[(s)->depth] = (label)) : (void)0, (s)->depth++)
#define POP(s) ((s)->depth--)

static bool eq_node(eq_state *s, const void *a, const void *b);

static bool eq_child(eq_state *s, const char *label, const void *a, const void *b) {
    PUSH(s, label);
    bool r = eq_node(s, a, b);
    if (r) POP(s);
    return r;
}

static bool eq_dtype(eq_state *s, tir_dtype a, tir_dtype b, const void *na, const void *nb) {
    return tir_dtype_eq(a, b) || fail(s, "dtype differs", na, nb);
}

/* Pairs two definitions (or first free uses). */
static bool eq_bind(eq_state *s, const void *a, const void *b) {
    const void *pa = ir_ptr_map_get(&s->a2b, a), *pb = ir_ptr_map_get(&s->b2a, b);
    if (!pa && !pb) {
        ir_ptr_map_put(&s->a2b, a, (void *)b);
        ir_ptr_map_put(&s->b2a, b, (void *)a);
        return true;
    }
    return (pa == b && pb == a) || fail(s, "variable or buffer paired differently", a, b);
}

static bool eq_annots(eq_state *s, int na, const tir_annot *a, int nb, const tir_annot *b) {
    if (na != nb) return fail(s, "annotation count differs", NULL, NULL);
    for (int i = 0; i < na; i++) {
        if (strcmp(a[i].key, b[i].key) != 0 || a[i].kind != b[i].kind)
            return fail(s, "annotation differs", NULL, NULL);
        switch (a[i].kind) {
        case TIR_ANNOT_INT:
            if (a[i].i != b[i].i) return fail(s, "annotation value differs", NULL, NULL);
            break;
        case TIR_ANNOT_STR:
            if (strcmp(a[i].s, b[i].s) != 0) return fail(s, "annotation value differs", NULL, NULL);
            break;
        case TIR_ANNOT_INTS:
            if (a[i].nints != b[i].nints ||
                (a[i].nints && memcmp(a[i].ints, b[i].ints, sizeof(int64_t) * (size_t)a[i].nints)))
                return fail(s, "annotation value differs", NULL, NULL);
            break;
        }
    }
    return true;
}

static bool eq_exprs(eq_state *s, const char *label, int na, const tir_expr *const *a, int nb,
                     const tir_expr *const *b) {
    if (na != nb) return fail(s, "array length differs", NULL, NULL);
    for (int i = 0; i < na; i++)
        if (!eq_child(s, label, a[i], b[i])) return false;
    return true;
}

static bool eq_buffer(eq_state *s, const tir_buffer *a, const tir_buffer *b) {
    const void *pa = ir_ptr_map_get(&s->a2b, a);
    if (pa) return pa == b || fail(s, "buffer paired differently", a, b);
    if (ir_ptr_map_get(&s->b2a, b)) return fail(s, "buffer paired differently", a, b);
    if (!tir_dtype_eq(a->dtype, b->dtype) || a->ndim != b->ndim || a->scope != b->scope ||
        a->align != b->align || (!a->strides) != (!b->strides))
        return fail(s, "buffer declaration differs", a, b);
    if (!eq_exprs(s, "shape", a->ndim, a->shape, b->ndim, b->shape)) return false;
    if (a->strides && !eq_exprs(s, "strides", a->ndim, a->strides, b->ndim, b->strides))
        return false;
    if (!eq_child(s, "elem_offset", a->elem_offset, b->elem_offset)) return false;
    return eq_bind(s, a, b);
}

static bool eq_region(eq_state *s, const tir_buffer_region *a, const tir_buffer_region *b) {
    if (!eq_child(s, "buffer", a->buffer, b->buffer)) return false;
    if (a->ndim != b->ndim) return fail(s, "region rank differs", NULL, NULL);
    for (int i = 0; i < a->ndim; i++) {
        if (!eq_child(s, "min", a->ranges[i].min, b->ranges[i].min)) return false;
        if (!eq_child(s, "extent", a->ranges[i].extent, b->ranges[i].extent)) return false;
    }
    return true;
}

static bool eq_node(eq_state *s, const void *va, const void *vb) {
    const tir_node *a = va, *b = vb;
    if (a == b && !a) return true;
    if (!a || !b) return fail(s, "one side is missing", a, b);
    if (a->kind != b->kind) return fail(s, "node kind differs", a, b);
    if (tir_kind_is_expr((tir_kind)a->kind) &&
        !eq_dtype(s, ((const tir_expr *)a)->dtype, ((const tir_expr *)b)->dtype, a, b))
        return false;
    switch ((tir_kind)a->kind) {
    case TIR_KIND_INT_IMM:
        return ((const tir_int_imm *)a)->value == ((const tir_int_imm *)b)->value ||
               fail(s, "integer value differs", a, b);
    case TIR_KIND_FLOAT_IMM: {
        double x = ((const tir_float_imm *)a)->value, y = ((const tir_float_imm *)b)->value;
        return memcmp(&x, &y, sizeof x) == 0 || fail(s, "float value differs", a, b);
    }
    case TIR_KIND_VAR: return eq_bind(s, a, b);
    case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: case TIR_KIND_DIV:
    case TIR_KIND_MOD: case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: case TIR_KIND_MIN:
    case TIR_KIND_MAX: case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT:
    case TIR_KIND_LE: case TIR_KIND_GT: case TIR_KIND_GE: case TIR_KIND_AND:
    case TIR_KIND_OR: {
        const tir_binop *x = va, *y = vb;
        return eq_child(s, "a", x->a, y->a) && eq_child(s, "b", x->b, y->b);
    }
    case TIR_KIND_NOT: return eq_child(s, "a", ((const tir_not *)a)->a, ((const tir_not *)b)->a);
    case TIR_KIND_SELECT: {
        const tir_select *x = va, *y = vb;
        return eq_child(s, "cond", x->cond, y->cond) && eq_child(s, "true", x->t, y->t) &&
               eq_child(s, "false", x->f, y->f);
    }
    case TIR_KIND_CAST:
        return eq_child(s, "value", ((const tir_cast *)a)->value, ((const tir_cast *)b)->value);
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *x = va, *y = vb;
        return eq_child(s, "buffer", x->buffer, y->buffer) &&
               eq_exprs(s, "index", x->nidx, x->indices, y->nidx, y->indices);
    }
    case TIR_KIND_RAMP: {
        const tir_ramp *x = va, *y = vb;
        return eq_child(s, "start", x->start, y->start) && eq_child(s, "stride", x->stride, y->stride);
    }
    case TIR_KIND_BROADCAST:
        return eq_child(s, "value", ((const tir_broadcast *)a)->value,
                        ((const tir_broadcast *)b)->value);
    case TIR_KIND_CALL: {
        const tir_call *x = va, *y = vb;
        if (x->op != y->op) return fail(s, "intrinsic differs", a, b);
        return eq_exprs(s, "arg", x->nargs, x->args, y->nargs, y->args);
    }
    case TIR_KIND_LET: {
        const tir_let *x = va, *y = vb;
        return eq_child(s, "value", x->value, y->value) && eq_child(s, "var", x->var, y->var) &&
               eq_child(s, "body", x->body, y->body);
    }
    case TIR_KIND_FOR: {
        const tir_for *x = va, *y = vb;
        if (x->kind != y->kind || x->thread_tag != y->thread_tag)
            return fail(s, "loop kind or thread differs", a, b);
        if (!eq_annots(s, x->nannots, x->annots, y->nannots, y->annots)) return false;
        return eq_child(s, "var", x->var, y->var) && eq_child(s, "min", x->min, y->min) &&
               eq_child(s, "extent", x->extent, y->extent) && eq_child(s, "body", x->body, y->body);
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *x = va, *y = vb;
        return eq_exprs(s, "binding", x->nvalues, x->values, y->nvalues, y->values) &&
               eq_child(s, "predicate", x->predicate, y->predicate) &&
               eq_child(s, x->block->name, x->block, y->block);
    }
    case TIR_KIND_BLOCK: {
        const tir_block *x = va, *y = vb;
        if (x->name != y->name && strcmp(x->name, y->name) != 0)
            return fail(s, "block name differs", a, b);
        if (x->niters != y->niters || x->nreads != y->nreads || x->nwrites != y->nwrites ||
            x->nallocs != y->nallocs)
            return fail(s, "block signature differs", a, b);
        for (int i = 0; i < x->niters; i++) {
            if (x->iters[i].kind != y->iters[i].kind) return fail(s, "iter kind differs", a, b);
            if (!eq_child(s, "iter", x->iters[i].var, y->iters[i].var) ||
                !eq_child(s, "iter.min", x->iters[i].dom.min, y->iters[i].dom.min) ||
                !eq_child(s, "iter.extent", x->iters[i].dom.extent, y->iters[i].dom.extent))
                return false;
        }
        for (int i = 0; i < x->nallocs; i++)
            if (!eq_child(s, "alloc", x->allocs[i], y->allocs[i])) return false;
        PUSH(s, "reads");
        for (int i = 0; i < x->nreads; i++)
            if (!eq_region(s, &x->reads[i], &y->reads[i])) return false;
        POP(s);
        PUSH(s, "writes");
        for (int i = 0; i < x->nwrites; i++)
            if (!eq_region(s, &x->writes[i], &y->writes[i])) return false;
        POP(s);
        if (!eq_annots(s, x->nannots, x->annots, y->nannots, y->annots)) return false;
        return eq_child(s, "init", x->init, y->init) && eq_child(s, "body", x->body, y->body);
    }
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *x = va, *y = vb;
        return eq_child(s, "buffer", x->buffer, y->buffer) &&
               eq_exprs(s, "index", x->nidx, x->indices, y->nidx, y->indices) &&
               eq_child(s, "value", x->value, y->value);
    }
    case TIR_KIND_SEQ: {
        const tir_seq *x = va, *y = vb;
        if (x->n != y->n) return fail(s, "sequence length differs", a, b);
        for (int i = 0; i < x->n; i++)
            if (!eq_child(s, "seq", x->stmts[i], y->stmts[i])) return false;
        return true;
    }
    case TIR_KIND_IF: {
        const tir_if *x = va, *y = vb;
        return eq_child(s, "cond", x->cond, y->cond) && eq_child(s, "then", x->then_s, y->then_s) &&
               eq_child(s, "else", x->else_s, y->else_s);
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *x = va, *y = vb;
        return eq_annots(s, x->nannots, x->annots, y->nannots, y->annots) &&
               eq_child(s, "buffer", x->buffer, y->buffer) && eq_child(s, "body", x->body, y->body);
    }
    case TIR_KIND_EVALUATE:
        return eq_child(s, "value", ((const tir_evaluate *)a)->value,
                        ((const tir_evaluate *)b)->value);
    case TIR_KIND_BUFFER: return eq_buffer(s, va, vb);
    case TIR_KIND_PRIM_FUNC: {
        const tir_prim_func *x = va, *y = vb;
        if (strcmp(x->name, y->name) != 0) return fail(s, "function name differs", a, b);
        if (x->nparams != y->nparams) return fail(s, "parameter count differs", a, b);
        for (int i = 0; i < x->nparams; i++)
            if (!eq_child(s, "param", x->params[i], y->params[i]) ||
                !eq_child(s, "buffer_map", x->buffer_map[i], y->buffer_map[i]))
                return false;
        if (!eq_annots(s, x->nattrs, x->attrs, y->nattrs, y->attrs)) return false;
        return eq_child(s, "body", x->body, y->body);
    }
    case TIR_KIND_COUNT: break;
    }
    TIR_UNREACHABLE();
}

bool tir_struct_equal_explain(const void *a, const void *b, char *buf, size_t n) {
    eq_state s;
    memset(&s, 0, sizeof s);
    s.buf = buf;
    s.bufn = n;
    if (buf && n) buf[0] = '\0';
    bool r = eq_node(&s, a, b);
    ir_ptr_map_free(&s.a2b);
    ir_ptr_map_free(&s.b2a);
    return r;
}

bool tir_struct_equal(const void *a, const void *b) {
    return tir_struct_equal_explain(a, b, NULL, 0);
}

/* --------------------------------------------------------------------- hash */

typedef struct hash_state {
    tir_visitor v;
    uint64_t h;
    ir_ptr_map ids;
    uint64_t next;
} hash_state;

static void mix(hash_state *s, uint64_t x) {
    s->h ^= x + 0x9e3779b97f4a7c15ull + (s->h << 6) + (s->h >> 2);
}

static void mix_str(hash_state *s, const char *str) {
    mix(s, ir_str_hash(str, strlen(str)));
}

static void mix_id(hash_state *s, const void *p) {
    const void *id = ir_ptr_map_get(&s->ids, p);
    if (!id) {
        id = (const void *)(uintptr_t)++s->next;
        ir_ptr_map_put(&s->ids, p, (void *)id);
    }
    mix(s, (uint64_t)(uintptr_t)id);
}

static void mix_annots(hash_state *s, int n, const tir_annot *a) {
    mix(s, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        mix_str(s, a[i].key);
        mix(s, a[i].kind);
        if (a[i].kind == TIR_ANNOT_INT) mix(s, (uint64_t)a[i].i);
        if (a[i].kind == TIR_ANNOT_STR) mix_str(s, a[i].s);
        if (a[i].kind == TIR_ANNOT_INTS)
            for (int j = 0; j < a[i].nints; j++) mix(s, (uint64_t)a[i].ints[j]);
    }
}

static bool hash_pre(tir_visitor *v, const tir_node *n) {
    hash_state *s = (hash_state *)v;
    mix(s, n->kind);
    if (tir_kind_is_expr((tir_kind)n->kind)) {
        tir_dtype t = ((const tir_expr *)n)->dtype;
        mix(s, (uint64_t)t.code << 32 | (uint64_t)t.bits << 16 | t.lanes);
    }
    switch ((tir_kind)n->kind) {
    case TIR_KIND_INT_IMM: mix(s, (uint64_t)((const tir_int_imm *)n)->value); break;
    case TIR_KIND_FLOAT_IMM: {
        double d = ((const tir_float_imm *)n)->value;
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        mix(s, u);
        break;
    }
    case TIR_KIND_VAR: mix_id(s, n); break;
    case TIR_KIND_BUFFER: {
        const tir_buffer *b = (const tir_buffer *)n;
        mix(s, b->ndim);
        mix(s, b->scope);
        mix_id(s, n);
        break;
    }
    case TIR_KIND_CALL: mix(s, ((const tir_call *)n)->op); break;
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)n;
        mix(s, f->kind);
        if (f->thread_tag) mix_str(s, f->thread_tag);
        mix_annots(s, f->nannots, f->annots);
        break;
    }
    case TIR_KIND_BLOCK: {
        const tir_block *b = (const tir_block *)n;
        mix_str(s, b->name);
        for (int i = 0; i < b->niters; i++) mix(s, b->iters[i].kind);
        mix_annots(s, b->nannots, b->annots);
        break;
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = (const tir_allocate *)n;
        mix_annots(s, a->nannots, a->annots);
        break;
    }
    case TIR_KIND_PRIM_FUNC: mix_str(s, ((const tir_prim_func *)n)->name); break;
    default: break;
    }
    return true;
}

uint64_t tir_struct_hash(const void *node) {
    hash_state s;
    memset(&s, 0, sizeof s);
    s.v.pre = hash_pre;
    s.h = 0x12345;
    tir_visit(&s.v, node);
    ir_ptr_map_free(&s.ids);
    return s.h;
}
