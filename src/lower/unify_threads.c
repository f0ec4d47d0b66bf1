/* unify_threads.c: every loop bound to one thread tag denotes the same
 * hardware index, so the kernel gets one variable per tag (TVM:
 * UnifyThreadBinding).  A thread-binding loop nested inside a loop of the
 * same tag (the usual cooperative-fetch pattern: a cache block moved under
 * the compute's threadIdx loops, its own fused loop bound to threadIdx
 * again) disappears, its variable replaced by the outer loop's.  Sibling
 * loops of one tag (the loop nests of several stages, one after the other)
 * stay, but all take the variable of the first loop of that tag: then an
 * index of a local or shared buffer names the same thread in every stage,
 * which compact_alloc (regions united across stages) and local_check (the
 * thread that reads a local element is the one that wrote it) rely on.
 * gpu_check already made sure that the extents agree.  A removed loop
 * inside a local buffer's Allocate is recorded (lower_state.lost_buf):
 * local_check must not take that buffer as one copy per thread.  A nested
 * loop whose body reads the outer variable is refused: after the merge it
 * would run only the iterations where the two are equal.
 */
#include <string.h>

#include "lower_internal.h"

enum { MAXTAGS = 8, MAXW = 32 };

typedef struct ut {
    const tir_for *first[MAXTAGS]; /* first loop of each tag, in pre-order */
    bool active[MAXTAGS];          /* inside a loop of that tag */
    int n;
    /* local Allocates around the walk (buffers), and lower_state's lost
     * pairs (buffer, variable), any number (user input) */
    ir_vec allocs, lost_buf, lost_var;
    /* conditions and serial loop bounds around the walk, and where each
     * tag's outer loop began on that path; that loop's body */
    ir_vec path; /* const tir_expr *, any depth (user input) */
    int from[MAXTAGS];
    const tir_stmt *outer_body[MAXTAGS];
    /* the first nested loop that cannot be merged, and why */
    const tir_for *bad_nest;
    const tir_var *bad_outer;
    const char *why;
} ut;

/* ---- when a nested loop of one tag may become the outer one's index
 *
 * In the function's meaning the nested loop runs all its iterations for
 * each outer one; merged, each thread runs the one equal to its index, once.
 * That is the same only when the nest is idempotent and independent of
 * the outer index: its body, and the conditions and loop bounds between the
 * two loops, do not read the outer variable; it reads no buffer it writes
 * (`D[t2] = D[t2] + 1` ran 32 times per element); and the outer loop's body
 * outside such nests writes none of the buffers it writes (after
 * `S[t2] = A[t2]`, `S[t] = S[t] + 1` changed one element per outer
 * iteration, which the next iteration's fetch undid).  Review of the
 * eighteenth session; the schedule language's cooperative fetches are all
 * of this kind. */

typedef struct wset {
    const tir_buffer *b[MAXW];
    int n;
    bool full;
    const char *tag; /* walk_outer: skip thread loops of this tag */
    bool hit;
    const tir_for *nest; /* global_pre: skip this loop */
} wset;

static bool has(const wset *w, const tir_buffer *b) {
    for (int i = 0; i < w->n; i++)
        if (w->b[i] == b) return true;
    return false;
}

static bool collect_pre(tir_visitor *v, const tir_node *n) {
    wset *w = v->user;
    if (n->kind != TIR_KIND_BUFFER_STORE) return true;
    const tir_buffer *b = ((const tir_buffer_store *)n)->buffer;
    if (has(w, b)) return true;
    if (w->n == MAXW) w->full = true;
    else w->b[w->n++] = b;
    return true;
}

static bool outer_pre(tir_visitor *v, const tir_node *n) {
    wset *w = v->user;
    if (n->kind == TIR_KIND_FOR) {
        const tir_for *f = (const tir_for *)n;
        return !(f->kind == TIR_FOR_THREAD_BINDING && strcmp(f->thread_tag, w->tag) == 0);
    }
    if (n->kind == TIR_KIND_BUFFER_STORE && has(w, ((const tir_buffer_store *)n)->buffer))
        w->hit = true;
    return !w->hit;
}

/* A read, outside the nest, of a global buffer the nest writes: after the
 * merge each thread writes one element and nothing orders that before
 * another thread's read (in the function's meaning the nest wrote them all
 * first). */
static bool global_pre(tir_visitor *v, const tir_node *n) {
    wset *w = v->user;
    if ((const void *)n == (const void *)w->nest) return false;
    if (n->kind == TIR_KIND_BUFFER_LOAD) {
        const tir_buffer *b = ((const tir_buffer_load *)n)->buffer;
        if (b->scope == TIR_SCOPE_GLOBAL && has(w, b)) w->hit = true;
    }
    return !w->hit;
}

/* Why nested loop f (its outer loop's variable `outer`, tag slot t) cannot
 * be merged, or NULL. */
static const char *unmergeable(const ut *u, int t, const tir_for *f, const tir_var *outer) {
    if (tir_uses_var(f->body, outer)) return "its body reads the outer variable";
    for (int i = u->from[t]; i < u->path.n; i++)
        if (tir_uses_var(u->path.items[i], outer))
            return "it runs under a condition or loop bound on the outer variable";
    wset w = {.n = 0};
    tir_visitor v = {.pre = collect_pre, .user = &w};
    tir_visit(&v, f->body);
    if (w.full) return "it writes too many buffers to check";
    for (int i = 0; i < w.n; i++)
        if (lower_reads_buffer(f->body, w.b[i])) return "its body reads a buffer it writes";
    w.tag = f->thread_tag;
    v.pre = outer_pre;
    tir_visit(&v, u->outer_body[t]);
    if (w.hit) return "the outer loop's body writes a buffer it writes";
    w.nest = f;
    v.pre = global_pre;
    tir_visit(&v, u->outer_body[t]);
    if (w.hit)
        return "another part of the outer loop reads a global buffer it writes (after the "
               "merge no barrier orders one thread's write before another's read)";
    return NULL;
}

/* A nested loop of var's tag goes: every local buffer allocated around it
 * loses its "one copy per thread" meaning along var (lower_state.lost_buf) */
static void lose(ut *u, const tir_var *var) {
    for (int i = 0; i < u->allocs.n; i++) {
        ir_vec_push(&u->lost_buf, u->allocs.items[i]);
        ir_vec_push(&u->lost_var, var);
    }
}

static const tir_node *on_if(tir_mutator *m, const tir_node *n) {
    ut *u = m->user;
    ir_vec_push(&u->path, ((const tir_if *)n)->cond);
    const tir_node *r = tir_mutate_default(m, n);
    u->path.n--;
    return r;
}

static const tir_node *on_allocate(tir_mutator *m, const tir_node *n) {
    ut *u = m->user;
    const tir_allocate *a = (const tir_allocate *)n;
    bool local = a->buffer->scope == TIR_SCOPE_LOCAL;
    if (local) ir_vec_push(&u->allocs, a->buffer);
    const tir_node *r = tir_mutate_default(m, n);
    u->allocs.n -= local;
    return r;
}

static int tag_slot(ut *u, const tir_for *f) {
    for (int i = 0; i < u->n; i++)
        if (strcmp(u->first[i]->thread_tag, f->thread_tag) == 0) return i;
    TIR_ASSERT(u->n < MAXTAGS);
    u->first[u->n] = f;
    u->active[u->n] = false;
    return u->n++;
}

static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    ut *u = m->user;
    const tir_for *f = (const tir_for *)n;
    if (f->kind != TIR_FOR_THREAD_BINDING) {
        ir_vec_push(&u->path, f->min);
        ir_vec_push(&u->path, f->extent);
        const tir_node *r = tir_mutate_default(m, n);
        u->path.n -= 2;
        return r;
    }
    int t = tag_slot(u, f);
    const tir_for *canon = u->first[t];
    TIR_ASSERT(tir_struct_equal(canon->extent, f->extent));
    const tir_expr *v = (const tir_expr *)canon->var;
    const tir_stmt *body =
        f == canon ? f->body : (const tir_stmt *)tir_substitute(m->ctx, f->body, 1, &f->var, &v);
    if (u->active[t]) {
        /* (see unmergeable) */
        const char *why = u->bad_nest ? NULL : unmergeable(u, t, f, canon->var);
        if (why) {
            u->bad_nest = f;
            u->bad_outer = canon->var;
            u->why = why;
        }
        lose(u, canon->var);
        return tir_mutate(m, body);
    }
    u->active[t] = true;
    u->from[t] = u->path.n;
    u->outer_body[t] = body;
    body = tir_mutate_stmt(m, body);
    u->active[t] = false;
    if (f == canon && body == f->body) return n;
    return (const tir_node *)tir_for_new(m->ctx, canon->var, f->min, f->extent, f->kind,
                                         f->thread_tag, f->nannots, f->annots, body);
}

tir_status lower_unify_threads(lower_state *st, const tir_prim_func *in,
                               const tir_prim_func **out) {
    ut u = {.n = 0};
    tir_mutator m = {.ctx = st->ctx, .user = &u};
    m.on[TIR_KIND_FOR] = on_for;
    m.on[TIR_KIND_ALLOCATE] = on_allocate;
    m.on[TIR_KIND_IF] = on_if;
    const tir_stmt *body = tir_mutate_stmt(&m, in->body);
    ir_vec_free(&u.path), ir_vec_free(&u.allocs);
    if (u.bad_nest) {
        ir_vec_free(&u.lost_buf), ir_vec_free(&u.lost_var);
        return lower_fail_marked(
            st, in, 1, (const void *[]){u.bad_nest},
            "unify_threads: the %s loop over '%s' is nested in another %s loop (over '%s'): "
            "both are the same hardware index, so each thread runs the inner loop's iteration "
            "equal to its own, once, where the function runs all of them for every outer "
            "iteration; that is the same only for a nest that does not depend on '%s' and "
            "gives the same result when repeated, but %s.  Bind the inner loop to another "
            "axis, or write the nest as a copy over its own variable",
            u.bad_nest->thread_tag, u.bad_nest->var->name, u.bad_nest->thread_tag,
            u.bad_outer->name, u.bad_outer->name, u.why);
    }
    *out = lower_with_body(st->ctx, in, body);
    st->nlost = u.lost_buf.n;
    st->lost_buf = IR_NEWN(st->ctx, const tir_buffer *, st->nlost);
    st->lost_var = IR_NEWN(st->ctx, const tir_var *, st->nlost);
    for (int i = 0; i < st->nlost; i++)
        st->lost_buf[i] = u.lost_buf.items[i], st->lost_var[i] = u.lost_var.items[i];
    ir_vec_free(&u.lost_buf), ir_vec_free(&u.lost_var);
    return TIR_OK;
}
