/* state.c: the schedule object, its handle table and sref tree, and
 * sch_run, the one path every traced call takes.
 *
 * Primitives only read the schedule and describe their result in a
 * sch_call; sch_run alone writes the schedule, after the primitive has
 * succeeded and the new function verified, which is what makes every
 * failure leave the function, the handles and the trace untouched.
 */
#include <stdatomic.h>
#include <string.h>

#include "sched_internal.h"

static atomic_uint next_serial = 1;

const sch_inst_info sch_inst_table[SCH_INST_COUNT] = {
#define SCH_INST(name, sig) {#name, sig, sch_prim_##name},
#include "instructions.def"
};

void sch_sig_parse(sch_inst_kind k, sch_sig *out) {
    memset(out, 0, sizeof *out);
    const char *p = sch_inst_table[k].sig;
    while (*p != ':') out->in[out->nin++] = *p++;
    p++;
    while (*p != ':') out->attr[out->nattr++] = *p++;
    p++;
    out->out = *p;
}

/* ------------------------------------------------------------- sref tree */

static void sref_push(tir_schedule *s, const tir_stmt *st, const tir_block_realize *br,
                      int parent) {
    if (s->nsrefs == s->capsrefs) {
        s->capsrefs = s->capsrefs ? 2 * s->capsrefs : 64;
        s->srefs = ir_xrealloc(s->srefs, sizeof *s->srefs * (size_t)s->capsrefs);
    }
    s->srefs[s->nsrefs++] = (sch_sref){st, br, parent};
}

static void build_srefs(tir_schedule *s, const tir_stmt *st, int parent) {
    if (!st) return;
    switch ((tir_kind)st->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = (const tir_for *)st;
        sref_push(s, st, NULL, parent);
        build_srefs(s, f->body, s->nsrefs - 1);
        break;
    }
    case TIR_KIND_BLOCK_REALIZE: {
        const tir_block_realize *r = (const tir_block_realize *)st;
        sref_push(s, &r->block->base, r, parent);
        int me = s->nsrefs - 1;
        build_srefs(s, r->block->init, me);
        build_srefs(s, r->block->body, me);
        break;
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)st;
        for (int i = 0; i < q->n; i++) build_srefs(s, q->stmts[i], parent);
        break;
    }
    case TIR_KIND_IF: {
        const tir_if *x = (const tir_if *)st;
        build_srefs(s, x->then_s, parent);
        build_srefs(s, x->else_s, parent);
        break;
    }
    case TIR_KIND_ALLOCATE: build_srefs(s, ((const tir_allocate *)st)->body, parent); break;
    default: break;
    }
}

static void rebuild_srefs(tir_schedule *s) {
    s->nsrefs = 0;
    build_srefs(s, s->func->body, -1);
}

int sch_find_loop(const tir_schedule *s, const tir_var *var) {
    for (int i = 0; i < s->nsrefs; i++) {
        const tir_for *f = tir_as_tir_for(s->srefs[i].stmt);
        if (f && f->var == var) return i;
    }
    return -1;
}

int sch_find_block(const tir_schedule *s, const char *name) {
    for (int i = 0; i < s->nsrefs; i++) {
        const tir_block *b = tir_as_tir_block(s->srefs[i].stmt);
        if (b && strcmp(b->name, name) == 0) return i;
    }
    return -1;
}

/* The entry of a live handle of the given kind ('l' or 'b'). */
static const sch_entry *live_entry(const sch_call *c, uint32_t id, char kind) {
    TIR_ASSERT(id >= 1 && (int)id <= c->sch->nentries);
    const sch_entry *e = &c->sch->entries[id - 1];
    TIR_ASSERT(e->kind == kind && e->retired_by < 0);
    return e;
}

int sch_loop_sref(const sch_call *c, uint32_t id) {
    int i = sch_find_loop(c->sch, live_entry(c, id, 'l')->loop_var);
    TIR_ASSERT(i >= 0);
    return i;
}

int sch_block_sref(const sch_call *c, uint32_t id) {
    int i = sch_find_block(c->sch, live_entry(c, id, 'b')->block_name);
    TIR_ASSERT(i >= 0);
    return i;
}

tir_status sch_loop_list(sch_call *c, const char *prim, int **srefs) {
    const tir_schedule *s = c->sch;
    int n = c->args[0].n;
    const uint32_t *rvs = c->args[0].rvs;
    if (n < 2)
        return sch_fail(c, TIR_ERR_SCHED_LOOP_COUNT, n == 1 ? rvs[0] : 0, NULL,
                        "%s needs at least two loops, got %d", prim, n);
    int *sr = IR_NEWN(c->ctx, int, n);
    for (int i = 0; i < n; i++) sr[i] = sch_loop_sref(c, rvs[i]);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (sr[i] == sr[j])
                return sch_fail(c, TIR_ERR_SCHED_DUPLICATE_LOOP, rvs[i], s->srefs[sr[i]].stmt,
                                "loop %s is given twice (positions %d and %d)",
                                sch_sref_for(s, sr[i])->var->name, j, i);
    *srefs = sr;
    return TIR_OK;
}

int sch_scope_of(const tir_schedule *s, int i) {
    for (int p = s->srefs[i].parent; p >= 0; p = s->srefs[p].parent)
        if (s->srefs[p].stmt->kind == TIR_KIND_BLOCK) return p;
    return -1;
}

bool sch_is_ancestor(const tir_schedule *s, int a, int b) {
    for (int p = s->srefs[b].parent; p >= 0; p = s->srefs[p].parent)
        if (p == a) return true;
    return false;
}

const tir_stmt *sch_sref_stmt(const tir_schedule *s, int i) {
    return s->srefs[i].realize ? &s->srefs[i].realize->base : s->srefs[i].stmt;
}

/* ------------------------------------------------------------- replacing */

typedef struct {
    int n;
    const tir_stmt *const *olds;
    const tir_stmt *const *news;
    int hits;
} replace_map;

static const tir_node *replace_stmt(tir_mutator *m, const tir_node *n) {
    replace_map *r = m->user;
    for (int i = 0; i < r->n; i++)
        if ((const tir_node *)r->olds[i] == n) {
            r->hits++;
            return (const tir_node *)r->news[i];
        }
    return tir_mutate_default(m, n);
}

static const tir_node *keep_node(tir_mutator *m, const tir_node *n) {
    (void)m;
    return n;
}

const tir_prim_func *sch_replace(sch_call *c, int n, const tir_stmt *const *olds,
                                 const tir_stmt *const *news) {
    replace_map r = {n, olds, news, 0};
    tir_mutator m = {.ctx = c->ctx, .user = &r};
    for (int k = 0; k < TIR_KIND_COUNT; k++) {
        if (tir_kind_is_stmt((tir_kind)k))
            m.on[k] = replace_stmt;
        else if (tir_kind_is_expr((tir_kind)k))
            m.on[k] = keep_node; /* statements never hide inside expressions */
    }
    const tir_node *f = tir_mutate(&m, c->sch->func);
    TIR_ASSERT(r.hits == n);
    return (const tir_prim_func *)f;
}

/* --------------------------------------------------------------- outputs */

static void *grow(tir_ctx *ctx, void *old, int n, int *cap, size_t elem) {
    if (n < *cap) return old;
    int nc = *cap ? 2 * *cap : 8;
    void *p = tir_ctx_alloc(ctx, elem * (size_t)nc);
    if (n) memcpy(p, old, elem * (size_t)n);
    *cap = nc;
    return p;
}

void sch_out_value(sch_call *c, int64_t value) {
    c->outs = grow(c->ctx, c->outs, c->nouts, &c->capouts, sizeof *c->outs);
    c->outs[c->nouts++] = (sch_out){'v', NULL, value};
}

void sch_out_loop(sch_call *c, const tir_var *var) {
    c->outs = grow(c->ctx, c->outs, c->nouts, &c->capouts, sizeof *c->outs);
    c->outs[c->nouts++] = (sch_out){'l', var, 0};
}

void sch_out_block(sch_call *c, const char *name) {
    c->outs = grow(c->ctx, c->outs, c->nouts, &c->capouts, sizeof *c->outs);
    c->outs[c->nouts++] = (sch_out){'b', tir_intern(c->ctx, name), 0};
}

void sch_retire_block(sch_call *c, const char *name) {
    c->retired = grow(c->ctx, (void *)c->retired, c->nretired, &c->capretired, sizeof(char *));
    c->retired[c->nretired++] = tir_intern(c->ctx, name);
}

/* ----------------------------------------------------------------- names */

const char *sch_rv_name(const tir_schedule *s, uint32_t id) {
    if (id < 1 || (int)id > s->nentries) return tir_ctx_sprintf(s->ctx, "<invalid #%u>", id);
    return tir_ctx_sprintf(s->ctx, "%c%u", s->entries[id - 1].kind, id - 1);
}

const char *sch_rv_desc(const tir_schedule *s, uint32_t id) {
    if (id < 1 || (int)id > s->nentries) return sch_rv_name(s, id);
    const sch_entry *e = &s->entries[id - 1];
    if (e->kind == 'l')
        return tir_ctx_sprintf(s->ctx, "%s, loop %s", sch_rv_name(s, id), e->loop_var->name);
    if (e->kind == 'v')
        return tir_ctx_sprintf(s->ctx, "%s, value %lld", sch_rv_name(s, id),
                               (long long)e->value);
    return tir_ctx_sprintf(s->ctx, "%s, block \"%s\"", sch_rv_name(s, id), e->block_name);
}

/* ------------------------------------------------------------- lifecycle */

/* A block name used twice in the current function, or NULL. */
static const char *duplicate_block_name(const tir_schedule *s) {
    for (int i = 0; i < s->nsrefs; i++) {
        const tir_block *b = tir_as_tir_block(s->srefs[i].stmt);
        if (!b) continue;
        for (int j = 0; j < i; j++) {
            const tir_block *o = tir_as_tir_block(s->srefs[j].stmt);
            if (o && strcmp(o->name, b->name) == 0) return b->name;
        }
    }
    return NULL;
}

const char *sch_unique_block_name(const tir_schedule *s, const char *base) {
    if (sch_find_block(s, base) < 0) return tir_intern(s->ctx, base);
    for (int k = 1;; k++) {
        const char *n = tir_ctx_sprintf(s->ctx, "%s_%d", base, k);
        if (sch_find_block(s, n) < 0) return tir_intern(s->ctx, n);
    }
}

tir_status tir_sched_create(tir_ctx *ctx, const tir_prim_func *f, tir_schedule **out) {
    if (!out) return ctx ? tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_sched_create: out is NULL")
                         : TIR_ERR_INVALID_ARG;
    *out = NULL;
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!f) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_sched_create: function is NULL");
    TIR_TRY(tir_verify(ctx, f));
    if (!tir_as_tir_block_realize(f->body))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tir_sched_create: the body of %s is not a root block", f->name);
    const tir_block *bad = NULL;
    const char *why = sch_undeclared_access(ctx, f, &bad);
    /* the primitives ask a wrapper what it accesses too: its nested blocks'
       regions, checked against its parent's like any nested block's */
    const char **wrappers = NULL;
    int nwrappers = 0;
    const tir_prim_func *g = why ? f : sch_fill_wrapper_regions(ctx, f, &wrappers, &nwrappers);
    if (g != f) why = sch_undeclared_access(ctx, g, &bad);
    if (why) {
        const void *mark = bad;
        return tir_ctx_fail(ctx, TIR_ERR_VERIFY, "tir_sched_create: %s\n%s", why,
                            tir_print_marked(ctx, g, 1, &mark));
    }
    tir_schedule *s = calloc(1, sizeof *s);
    if (!s) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tir_sched_create: out of memory");
    s->ctx = ctx;
    s->serial = atomic_fetch_add(&next_serial, 1);
    s->orig = f;
    s->func = g;
    s->wrappers = wrappers;
    s->nwrappers = nwrappers;
    s->rng = TIR_SCHED_DEFAULT_SEED;
    rebuild_srefs(s);
    const char *dup = duplicate_block_name(s);
    if (dup) {
        const void *marks[2];
        int nm = 0;
        for (int i = 0; i < s->nsrefs && nm < 2; i++) {
            const tir_block *b = tir_as_tir_block(s->srefs[i].stmt);
            if (b && b->name == dup) marks[nm++] = b;
        }
        const char *ir = tir_print_marked(ctx, f, nm, marks);
        tir_sched_destroy(s);
        return tir_ctx_fail(ctx, TIR_ERR_SCHED_DUPLICATE_BLOCK_NAME,
                            "tir_sched_create: two blocks are named \"%s\"; a schedule names "
                            "blocks by name, so names must be unique\n%s",
                            dup, ir);
    }
    *out = s;
    return TIR_OK;
}

void tir_sched_destroy(tir_schedule *s) {
    if (!s) return;
    free(s->entries);
    free(s->trace);
    free(s->srefs);
    free(s);
}

tir_ctx *tir_sched_ctx(const tir_schedule *s) { return s ? s->ctx : NULL; }
const tir_prim_func *tir_sched_func(const tir_schedule *s) { return s ? s->func : NULL; }
const tir_prim_func *tir_sched_orig_func(const tir_schedule *s) { return s ? s->orig : NULL; }
int tir_sched_num_handles(const tir_schedule *s) { return s ? s->nentries : 0; }
int tir_sched_trace_len(const tir_schedule *s) { return s ? s->ntrace : 0; }

tir_status tir_sched_handle_info(const tir_schedule *s, uint32_t id, char *kind, bool *stale,
                                 const tir_node **node) {
    if (!s) return TIR_ERR_INVALID_ARG;
    if (id < 1 || (int)id > s->nentries)
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_INVALID_HANDLE,
                            "tir_sched_handle_info: no handle #%u (the schedule has %d)", id,
                            s->nentries);
    const sch_entry *e = &s->entries[id - 1];
    const tir_node *n = NULL;
    if (e->retired_by < 0 && e->kind != 'v') {
        int i = e->kind == 'l' ? sch_find_loop(s, e->loop_var) : sch_find_block(s, e->block_name);
        TIR_ASSERT(i >= 0);
        n = (const tir_node *)s->srefs[i].stmt;
    }
    if (kind) *kind = e->kind;
    if (stale) *stale = e->retired_by >= 0;
    if (node) *node = n;
    return TIR_OK;
}

/* ------------------------------------------------------------ run/commit */

tir_status sch_bad_arg(tir_schedule *s, const char *prim, const char *what) {
    if (!s) return TIR_ERR_INVALID_ARG;
    return tir_ctx_fail(s->ctx, TIR_ERR_INVALID_ARG, "%s: %s", prim, what);
}

/* Packs n handles of any kind (all are {id, sched}, read with memcpy so
 * no handle type is read through another's) into a list argument. */
static sch_arg rv_list(tir_schedule *s, int n, const void *handles) {
    _Static_assert(sizeof(tir_loop_rv) == sizeof(tir_block_rv) &&
                       sizeof(tir_loop_rv) == sizeof(tir_value_rv) &&
                       sizeof(tir_loop_rv) == 2 * sizeof(uint32_t),
                   "handles are {id, sched}");
    sch_arg a = {.n = n};
    if (!handles || n <= 0) return a;
    uint32_t *ids = IR_NEWN(s->ctx, uint32_t, n), *tags = IR_NEWN(s->ctx, uint32_t, n);
    for (int i = 0; i < n; i++) {
        uint32_t h[2];
        memcpy(h, (const char *)handles + sizeof h * (size_t)i, sizeof h);
        ids[i] = h[0];
        tags[i] = h[1];
    }
    a.rvs = ids;
    a.tags = tags;
    return a;
}

sch_arg sch_rv_list(tir_schedule *s, int n, const tir_loop_rv *loops) {
    return rv_list(s, n, loops);
}

sch_arg sch_block_rv_list(tir_schedule *s, int n, const tir_block_rv *blocks) {
    return rv_list(s, n, blocks);
}

sch_arg sch_value_rv_list(tir_schedule *s, int n, const tir_value_rv *values) {
    return rv_list(s, n, values);
}

tir_value_rv sch_value_rv(const tir_schedule *s, uint32_t id) {
    return (tir_value_rv){id, s->serial};
}

int64_t sch_value(const tir_schedule *s, uint32_t id) {
    TIR_ASSERT(id >= 1 && (int)id <= s->nentries && s->entries[id - 1].kind == 'v');
    return s->entries[id - 1].value;
}

tir_loop_rv sch_loop_rv(const tir_schedule *s, uint32_t id) {
    return (tir_loop_rv){id, s->serial};
}

tir_block_rv sch_block_rv(const tir_schedule *s, uint32_t id) {
    return (tir_block_rv){id, s->serial};
}

static const char *kind_word(char kind) {
    return kind == 'l' ? "loop" : kind == 'v' ? "value" : "block";
}

/* Checks one handle argument: made here, id in range, right kind, live. */
static tir_status check_handle(tir_schedule *s, const char *prim, char want, uint32_t id,
                               uint32_t tag) {
    if (id != 0 && tag != s->serial)
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_INVALID_HANDLE,
                            "%s: %s handle #%u was made by another schedule", prim,
                            kind_word(want), id);
    if (id < 1 || (int)id > s->nentries || s->entries[id - 1].kind != want) {
        const char *what = kind_word(want);
        if (id < 1 || (int)id > s->nentries)
            return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_INVALID_HANDLE,
                                "%s: %s handle #%u does not exist in this schedule (it has %d "
                                "handles; a zero-initialised handle is never valid)",
                                prim, what, id, s->nentries);
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_INVALID_HANDLE,
                            "%s: handle %s is not a %s handle", prim, sch_rv_desc(s, id), what);
    }
    const sch_entry *e = &s->entries[id - 1];
    if (e->retired_by >= 0) {
        return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_STALE_HANDLE,
                            "%s: handle %s is stale: its %s was replaced by instruction #%d "
                            "`%s` and may not be used again\n%s",
                            prim, sch_rv_desc(s, id), e->kind == 'l' ? "loop" : "block",
                            e->retired_by, sch_inst_text(s, e->retired_by),
                            tir_print(s->ctx, s->func));
    }
    return TIR_OK;
}

/* A list of loop ('L'), block ('B') or value ('V') handles. */
static tir_status check_handle_list(tir_schedule *s, const char *prim, char t, const sch_arg *a) {
    char one = (char)(t - 'A' + 'a');
    if (a->n < 0 || (a->n > 0 && !a->rvs))
        return sch_bad_arg(s, prim,
                           tir_ctx_sprintf(s->ctx, "the %s list is NULL or has a negative length",
                                           kind_word(one)));
    for (int j = 0; j < a->n; j++)
        TIR_TRY(check_handle(s, prim, one, a->rvs[j], a->tags ? a->tags[j] : 0));
    return TIR_OK;
}

static tir_status check_args(tir_schedule *s, sch_inst_kind k, const sch_arg *args) {
    sch_sig sig;
    sch_sig_parse(k, &sig);
    const char *prim = sch_inst_table[k].name;
    for (int i = 0; i < sig.nin; i++) {
        const sch_arg *a = &args[i];
        switch (sig.in[i]) {
        case 'b':
        case 'l':
        case 'v': TIR_TRY(check_handle(s, prim, sig.in[i], a->rv, a->tag)); break;
        case 'L':
        case 'B':
        case 'V': TIR_TRY(check_handle_list(s, prim, sig.in[i], a)); break;
        default: TIR_UNREACHABLE();
        }
    }
    for (int i = 0; i < sig.nattr; i++) {
        const sch_arg *a = &args[sig.nin + i];
        switch (sig.attr[i]) {
        case 'i': break;
        case 'v': TIR_TRY(check_handle(s, prim, 'v', a->rv, a->tag)); break;
        case 'B': TIR_TRY(check_handle_list(s, prim, 'B', a)); break;
        case 'D':
            /* As many entries as the I list before it (checked there). */
            if (args[sig.nin + i - 1].n > 0 && !a->dbls)
                return sch_bad_arg(s, prim, "the double list is NULL");
            break;
        case 's':
            if (!a->s) return sch_bad_arg(s, prim, "a string argument is NULL");
            break;
        case 'I':
        case 'F':
        case 'd':
            if (a->n < 0 || (a->n > 0 && !a->ints))
                return sch_bad_arg(s, prim, "the integer list is NULL or has a negative length");
            break;
        default: TIR_UNREACHABLE();
        }
    }
    return TIR_OK;
}

/* Records call c (its arguments, and the decision it took in place of
 * the 'd' argument) with output handles outs. */
static void record(tir_schedule *s, const sch_call *c, const uint32_t *outs, int nouts) {
    tir_ctx *ctx = s->ctx;
    sch_inst_kind k = c->kind;
    const sch_arg *args = c->args;
    int nargs = c->nargs;
    sch_sig sig;
    sch_sig_parse(k, &sig);
    sch_arg *copy = IR_NEWN(ctx, sch_arg, nargs);
    for (int i = 0; i < nargs; i++) {
        char t = i < sig.nin ? sig.in[i] : sig.attr[i - sig.nin];
        copy[i] = args[i];
        if (t == 'd') {
            TIR_ASSERT(c->ndecision > 0);
            copy[i].n = c->ndecision;
            copy[i].ints = c->decision;
        }
        if (t == 's') copy[i].s = tir_intern(ctx, args[i].s);
        copy[i].dbls = t == 'D' ? ir_copy_array(ctx, args[i].dbls, sizeof(double),
                                                args[i - 1].n)
                                : NULL;
        bool list = sch_sig_is_rvs(t);
        if (list) copy[i].rvs = ir_copy_array(ctx, args[i].rvs, sizeof(uint32_t), args[i].n);
        bool ints = sch_sig_is_ints(t);
        if (ints) copy[i].ints = ir_copy_array(ctx, copy[i].ints, sizeof(int64_t), copy[i].n);
        if (!list) copy[i].rvs = NULL;
        copy[i].tags = NULL;
        copy[i].tag = 0;
        if (!ints) copy[i].ints = NULL;
        if (!list && !ints) copy[i].n = 0;
    }
    if (s->ntrace == s->captrace) {
        s->captrace = s->captrace ? 2 * s->captrace : 16;
        s->trace = ir_xrealloc(s->trace, sizeof *s->trace * (size_t)s->captrace);
    }
    s->trace[s->ntrace++] = (sch_inst){k, nargs, copy, nouts,
                                       ir_copy_array(ctx, outs, sizeof(uint32_t), nouts)};
}

static uint32_t add_entry(tir_schedule *s, sch_entry e) {
    if (s->nentries == s->capentries) {
        s->capentries = s->capentries ? 2 * s->capentries : 32;
        s->entries = ir_xrealloc(s->entries, sizeof *s->entries * (size_t)s->capentries);
    }
    s->entries[s->nentries++] = e;
    return (uint32_t)s->nentries;
}

tir_status sch_run(tir_schedule *s, sch_inst_kind k, const sch_arg *args,
                   const uint32_t **outs, int *nouts) {
    TIR_ASSERT(s && (unsigned)k < SCH_INST_COUNT);
    TIR_TRY(check_args(s, k, args));
    sch_sig sig;
    sch_sig_parse(k, &sig);
    sch_call c = {.sch = s, .ctx = s->ctx, .kind = k, .prim = sch_inst_table[k].name,
                  .args = args, .nargs = sig.nin + sig.nattr, .rng = s->rng};
    TIR_TRY(sch_inst_table[k].impl(&c));
    if (c.unchanged) {
        /* Nothing to do: the schedule, trace included, stays as it was. */
        TIR_ASSERT(sig.out == 'c' && !c.func && c.nouts == 0 && c.nretired == 0);
        if (outs) *outs = NULL;
        if (nouts) *nouts = 0;
        return TIR_OK;
    }

    if (c.func && c.func != s->func) {
        /* what a wrapper wraps may have changed: its regions follow */
        c.func = sch_fill_wrapper_regions(s->ctx, c.func, &s->wrappers, &s->nwrappers);
        /* A primitive that builds ill-formed IR has a bug; refusing the
           result keeps the schedule usable and says where it went wrong. */
        tir_status v = tir_verify(s->ctx, c.func);
        if (v != TIR_OK) {
            const char *msg = tir_ctx_sprintf(s->ctx, "%s", tir_ctx_error(s->ctx));
            return tir_ctx_fail(s->ctx, v, "%s: internal error: the result is ill formed: %s",
                                c.prim, msg);
        }
    }

    /* Commit. */
    if (c.func && c.func != s->func) {
        const tir_prim_func *old = s->func;
        s->func = c.func;
        rebuild_srefs(s);
        /* Handles name blocks by name: a primitive that duplicates one has
           a bug (it should have used sch_unique_block_name). */
        const char *dup = duplicate_block_name(s);
        if (dup) {
            s->func = old;
            rebuild_srefs(s);
            return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_DUPLICATE_BLOCK_NAME,
                                "%s: internal error: the result has two blocks named \"%s\"",
                                c.prim, dup);
        }
    }
    for (int i = 0; i < s->nentries; i++) {
        sch_entry *e = &s->entries[i];
        if (e->retired_by >= 0 || e->kind == 'v') continue;
        bool gone;
        if (e->kind == 'l') {
            gone = sch_find_loop(s, e->loop_var) < 0;
        } else {
            gone = sch_find_block(s, e->block_name) < 0;
            for (int j = 0; j < c.nretired; j++)
                if (c.retired[j] == e->block_name) gone = true;
        }
        if (gone) e->retired_by = s->ntrace;
    }
    uint32_t *ids = IR_NEWN(s->ctx, uint32_t, c.nouts);
    for (int i = 0; i < c.nouts; i++) {
        sch_entry e = {c.outs[i].kind, NULL, NULL, c.outs[i].value, -1};
        if (e.kind == 'v') {
            /* A value names no node. */
        } else if (e.kind == 'l') {
            e.loop_var = c.outs[i].key;
            TIR_ASSERT(sch_find_loop(s, e.loop_var) >= 0);
        } else {
            e.block_name = c.outs[i].key;
            TIR_ASSERT(sch_find_block(s, e.block_name) >= 0);
        }
        ids[i] = add_entry(s, e);
    }
    s->rng = c.rng;
    record(s, &c, ids, c.nouts);
    if (outs) *outs = ids;
    if (nouts) *nouts = c.nouts;
    return TIR_OK;
}

tir_status sch_run_flag(tir_schedule *s, sch_inst_kind k, const sch_arg *args, bool *changed) {
    if (changed) *changed = false;
    int before = s->ntrace;
    TIR_TRY(sch_run(s, k, args, NULL, NULL));
    /* sch_run records exactly the calls that changed something. */
    if (changed) *changed = s->ntrace > before;
    return TIR_OK;
}

/* ------------------------------------------------------------- snapshots */

void sch_snapshot_take(const tir_schedule *s, sch_snapshot *snap) {
    snap->func = s->func;
    snap->rng = s->rng;
    snap->nentries = s->nentries;
    snap->ntrace = s->ntrace;
    snap->entries = NULL;
    if (s->nentries) {
        snap->entries = ir_xmalloc(sizeof *snap->entries * (size_t)s->nentries);
        memcpy(snap->entries, s->entries, sizeof *snap->entries * (size_t)s->nentries);
    }
}

void sch_snapshot_restore(tir_schedule *s, sch_snapshot *snap) {
    TIR_ASSERT(s->nentries >= snap->nentries && s->ntrace >= snap->ntrace);
    if (snap->nentries)
        memcpy(s->entries, snap->entries, sizeof *snap->entries * (size_t)snap->nentries);
    s->nentries = snap->nentries;
    s->ntrace = snap->ntrace;
    s->rng = snap->rng;
    if (s->func != snap->func) {
        s->func = snap->func;
        rebuild_srefs(s);
    }
    sch_snapshot_free(snap);
}

void sch_snapshot_free(sch_snapshot *snap) {
    free(snap->entries);
    snap->entries = NULL;
}
