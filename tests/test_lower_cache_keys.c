/* test_lower_cache_keys.c: the keys of race_check's shared enumerations
 * (owner_twin: an access borrows the owners of an earlier access with the
 * same index pointer, buffer, span, loops with their ranges, conditions
 * and thread extents) and of thread_sync's element-range cache (per
 * index pointer and fixed loop, while the index's variables keep their
 * constant bindings).
 *
 * Parsed text never shares an index between two accesses, so these
 * kernels are first made into DAGs: equal index expressions and
 * conditions (ir_text_expr_same: the same variables) become one pointer,
 * as IR rebuilt by mutators (which share untouched subtrees) may have
 * them, and one loop variable may be made to stand for a second loop of
 * another extent.  Each kernel is then one whose verdict depends on the
 * field of the key that differs between two accesses of one index
 * pointer: dropping that field from the key lets a race through or loses
 * a barrier, which these tests see. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir/text_internal.h"
#include "lower/lower_internal.h"
#include "minitir/lower.h"

#define OK(x) assert_int_equal((x), TIR_OK)

typedef struct share {
    const tir_expr *seen[256];
    int n;
    int shared;       /* pointers replaced */
    const char *from; /* a loop variable's name, replaced by `to` ... */
    const tir_var *to;
} share;

static const tir_expr *canon(share *h, const tir_expr *e) {
    for (int i = 0; i < h->n; i++)
        if (h->seen[i] == e || ir_text_expr_same(h->seen[i], e)) {
            h->shared += h->seen[i] != e;
            return h->seen[i];
        }
    assert_true(h->n < 256);
    h->seen[h->n++] = e;
    return e;
}

static const tir_node *on_load(tir_mutator *m, const tir_node *n) {
    const tir_buffer_load *l = (const tir_buffer_load *)tir_mutate_default(m, n);
    const tir_expr *c = canon(m->user, l->indices[0]);
    return c == l->indices[0] ? (const tir_node *)l
                              : (const tir_node *)tir_load(m->ctx, l->buffer, 1, &c);
}

static const tir_node *on_store(tir_mutator *m, const tir_node *n) {
    const tir_buffer_store *s = (const tir_buffer_store *)tir_mutate_default(m, n);
    const tir_expr *c = canon(m->user, s->indices[0]);
    return c == s->indices[0] ? (const tir_node *)s
                              : (const tir_node *)tir_store(m->ctx, s->buffer, s->value, 1, &c);
}

static const tir_node *on_if(tir_mutator *m, const tir_node *n) {
    const tir_if *s = (const tir_if *)tir_mutate_default(m, n);
    const tir_expr *c = canon(m->user, s->cond);
    return c == s->cond ? (const tir_node *)s
                        : (const tir_node *)tir_if_new(m->ctx, c, s->then_s, s->else_s);
}

/* ... in its loop (the same variable object then has two loops). */
static const tir_node *on_for(tir_mutator *m, const tir_node *n) {
    share *h = m->user;
    const tir_for *f = (const tir_for *)n;
    if (!h->to || strcmp(f->var->name, h->from) != 0) return tir_mutate_default(m, n);
    const tir_expr *to = (const tir_expr *)h->to;
    const tir_stmt *body =
        (const tir_stmt *)tir_substitute(m->ctx, f->body, 1, &f->var, &to);
    body = tir_mutate_stmt(m, body);
    return (const tir_node *)tir_for_new(m->ctx, h->to, f->min, f->extent, f->kind,
                                         f->thread_tag, f->nannots, f->annots, body);
}

typedef struct fv {
    const char *name;
    const tir_var *found;
} fv;
static bool fv_pre(tir_visitor *v, const tir_node *n) {
    fv *f = v->user;
    if (n->kind == TIR_KIND_FOR && !f->found &&
        strcmp(((const tir_for *)n)->var->name, f->name) == 0)
        f->found = ((const tir_for *)n)->var;
    return true;
}
static const tir_var *find_var(const tir_stmt *s, const char *name) {
    fv f = {name, NULL};
    tir_visitor v = {.pre = fv_pre, .user = &f};
    tir_visit(&v, s);
    assert_non_null(f.found);
    return f.found;
}

/* text parsed, equal indices and conditions shared; a loop named `from`
 * (may be NULL) given the variable of the first loop named `to`. */
static const tir_prim_func *dag(tir_ctx *ctx, const char *text, const char *from,
                                const char *to, int min_shared) {
    const tir_prim_func *f = NULL;
    OK(tir_parse_func(ctx, text, strlen(text), &f));
    share *h = calloc(1, sizeof *h);
    h->from = from;
    h->to = from ? find_var(f->body, to) : NULL;
    tir_mutator m;
    memset(&m, 0, sizeof m);
    m.ctx = ctx;
    m.user = h;
    m.on[TIR_KIND_BUFFER_LOAD] = on_load;
    m.on[TIR_KIND_BUFFER_STORE] = on_store;
    m.on[TIR_KIND_IF] = on_if;
    m.on[TIR_KIND_FOR] = on_for;
    const tir_stmt *body = tir_mutate_stmt(&m, f->body);
    if (h->shared < min_shared) fprintf(stderr, "shared %d\n%s\n", h->shared, tir_print(ctx, body));
    assert_true(h->shared >= min_shared);
    free(h);
    return tir_prim_func_new(ctx, f->name, f->nparams, f->params, f->buffer_map, body,
                             f->nattrs, f->attrs);
}

/* race_check, conditions: the store under `tx < 32` is enumerated first
 * (it pairs with itself), owners e -> thread e; the read of the same index
 * pointer without the condition is read by threads e and e + 32.  Had it
 * borrowed the store's owners, the write by e and read by e + 32 of one
 * element with no barrier between would pass. */
static const char *cond_text =
    "@T.prim_func\n"
    "def cond(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((32,), \"float32\", scope=\"shared\")\n"
    "        if tx < 32:\n"
    "            S[tx % 32] = A[tx]\n"
    "        B[tx] = S[tx % 32]\n"
    "        T.syncthreads()\n";

/* The same with the negation: the store in the else branch of `tx < 32`
 * (threads 32..63), a read of the same index under the then branch
 * (threads 0..31): element e written by e + 32 and read by e. */
static const char *neg_text =
    "@T.prim_func\n"
    "def neg(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((32,), \"float32\", scope=\"shared\")\n"
    "        if tx < 32:\n"
    "            B[tx] = S[tx % 32]\n"
    "        else:\n"
    "            S[tx % 32] = A[tx]\n"
    "        if tx < 32:\n"
    "            B[tx] = S[tx % 32]\n"
    "        T.syncthreads()\n";

/* race_check, loop ranges: one variable i for a loop of 1 and one of 2;
 * S[tx + i] over one iteration is thread tx's own element, over two it
 * reaches tx + 1, which thread tx + 1 wrote. */
static const char *range_text =
    "@T.prim_func\n"
    "def ranges(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((64,), \"float32\", scope=\"shared\")\n"
    "        for i in range(1):\n"
    "            S[tx + i] = A[tx]\n"
    "        for j in range(2):\n"
    "            B[tx] = B[tx] + S[tx + j]\n"
    "        T.syncthreads()\n";

static void test_race_check_keys(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const char *texts[] = {cond_text, neg_text, range_text};
    const char *from[] = {NULL, NULL, "j"};
    for (int i = 0; i < 3; i++) {
        const tir_prim_func *f = NULL;
        OK(tir_parse_func(ctx, texts[i], strlen(texts[i]), &f));
        assert_int_equal(tir_lower_check_races(ctx, f), TIR_ERR_LOWER);
        const tir_prim_func *d = dag(ctx, texts[i], from[i], "i", 1);
        assert_int_equal(tir_lower_check_races(ctx, d), TIR_ERR_LOWER);
        assert_non_null(strstr(tir_ctx_error(ctx), "race_check: shared buffer S"));
    }
    tir_ctx_destroy(ctx);
}

/* thread_sync, bindings: S[i] read under a loop of 1 (element 0: apart
 * from the store to [32, 64), no barrier) and, through the same index
 * pointer and variable, under a loop of 64 (elements 0..63: meets the
 * store, a barrier before it).  A range kept from the first binding would
 * drop that barrier. */
static const char *bind_text =
    "@T.prim_func\n"
    "def binds(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((64,), \"float32\", scope=\"shared\")\n"
    "        S[tx] = A[tx]\n"
    "        T.syncthreads()\n"
    "        for i in range(1):\n"
    "            B[tx] = S[i]\n"
    "        S[tx + 32] = A[tx]\n"
    "        for j in range(64):\n"
    "            B[tx] = B[tx] + S[j]\n";

static int count_syncs(tir_ctx *ctx, const tir_prim_func *k) {
    int n = 0;
    const char *t = tir_print(ctx, k);
    for (const char *p = strstr(t, "T.syncthreads()"); p; p = strstr(p + 1, "T.syncthreads()")) n++;
    return n;
}

static void test_thread_sync_keys(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    lower_state st = {.ctx = ctx};
    tir_lower_opts_init(&st.opts);
    const tir_prim_func *f = NULL, *k = NULL;
    OK(tir_parse_func(ctx, bind_text, strlen(bind_text), &f));
    st.scheduled = f;
    OK(lower_thread_sync(&st, f, &k));
    assert_int_equal(count_syncs(ctx, k), 2);
    OK(tir_lower_check_races(ctx, k));
    const tir_prim_func *d = dag(ctx, bind_text, "j", "i", 0) /* S[i]: the variable itself, one pointer already */;
    st.scheduled = d;
    OK(lower_thread_sync(&st, d, &k));
    assert_int_equal(count_syncs(ctx, k), 2);
    OK(tir_lower_check_races(ctx, k));
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_race_check_keys),
        cmocka_unit_test(test_thread_sync_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
