/* sched_check.c: the shared schedule test checks (see sched_check.h).
 *
 * The checks compare against independent evidence: replay on a fresh
 * schedule for traces, the reference interpreter for semantics, and
 * pointer identity of the function and of every handle's node for
 * "nothing changed".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/runtime.h"
#include "sched_check.h"

/* cmocka's print_error truncates long messages; the IR in ours matters. */
#define FAIL_LONG(...)                                                                     \
    do {                                                                                  \
        fprintf(stderr, __VA_ARGS__);                                                     \
        fputc('\n', stderr);                                                              \
        fail();                                                                           \
    } while (0)

uint64_t sched_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------ snapshots */

void sched_snap_take(tir_schedule *s, sched_snap *snap) {
    memset(snap, 0, sizeof *snap);
    snap->func = tir_sched_func(s);
    snap->nhandles = tir_sched_num_handles(s);
    int n = snap->nhandles > 0 ? snap->nhandles : 1;
    snap->kinds = calloc((size_t)n, 1);
    snap->stale = calloc((size_t)n, sizeof(bool));
    snap->nodes = calloc((size_t)n, sizeof(void *));
    for (int i = 0; i < snap->nhandles; i++)
        tir_sched_handle_info(s, (uint32_t)i + 1, &snap->kinds[i], &snap->stale[i],
                              &snap->nodes[i]);
    snap->trace = tir_sched_trace_text(s);
    snap->trace_len = tir_sched_trace_len(s);
    snap->rng = tir_sched_rand_state(s);
}

void sched_snap_free(sched_snap *snap) {
    free(snap->kinds);
    free(snap->stale);
    free(snap->nodes);
    memset(snap, 0, sizeof *snap);
}

bool sched_snap_same(tir_schedule *s, sched_snap *snap, char *why, size_t n) {
    bool ok = false;
    if (tir_sched_func(s) != snap->func)
        snprintf(why, n, "the function changed");
    else if (tir_sched_num_handles(s) != snap->nhandles)
        snprintf(why, n, "handle count changed from %d to %d", snap->nhandles,
                 tir_sched_num_handles(s));
    else if (tir_sched_trace_len(s) != snap->trace_len ||
             strcmp(tir_sched_trace_text(s), snap->trace) != 0)
        snprintf(why, n, "the trace changed:\n--- before\n%s--- after\n%s", snap->trace,
                 tir_sched_trace_text(s));
    else if (tir_sched_rand_state(s) != snap->rng)
        snprintf(why, n, "the random state changed");
    else {
        ok = true;
        for (int i = 0; i < snap->nhandles && ok; i++) {
            char k;
            bool st;
            const tir_node *node;
            tir_sched_handle_info(s, (uint32_t)i + 1, &k, &st, &node);
            if (k != snap->kinds[i] || st != snap->stale[i] || node != snap->nodes[i]) {
                snprintf(why, n, "handle #%d changed (stale %d -> %d)", i + 1, snap->stale[i],
                         st);
                ok = false;
            }
        }
    }
    sched_snap_free(snap);
    return ok;
}

bool sched_fail_ok(tir_schedule *s, sched_snap *snap, tir_status got, tir_status want,
                   const char *prim, char *why, size_t n) {
    tir_ctx *ctx = tir_sched_ctx(s);
    const char *msg = tir_ctx_error(ctx);
    if (got != want) {
        snprintf(why, n, "returned %s, expected %s; message:\n%s", tir_status_name(got),
                 tir_status_name(want), got == TIR_OK ? "" : msg);
        sched_snap_free(snap);
        return false;
    }
    if (tir_ctx_error_code(ctx) != want) {
        snprintf(why, n, "the ctx holds %s, expected %s",
                 tir_status_name(tir_ctx_error_code(ctx)), tir_status_name(want));
        sched_snap_free(snap);
        return false;
    }
    size_t pl = strlen(prim);
    if (strncmp(msg, prim, pl) != 0 || msg[pl] != ':') {
        snprintf(why, n, "the message does not start with \"%s:\":\n%s", prim, msg);
        sched_snap_free(snap);
        return false;
    }
    /* Precondition failures show the IR with the culprit marked; handle
       and argument errors have nothing to mark, nor has sample_categorical,
       which names no loop or block. */
    bool marked = want != TIR_ERR_SCHED_INVALID_HANDLE && want != TIR_ERR_SCHED_STALE_HANDLE &&
                  want != TIR_ERR_INVALID_ARG && want != TIR_ERR_SCHED_BLOCK_NOT_FOUND &&
                  want != TIR_ERR_SCHED_LOOP_COUNT && strcmp(prim, "sample_categorical") != 0;
    if (marked && !strstr(msg, "^")) {
        snprintf(why, n, "the message shows no marked IR:\n%s", msg);
        sched_snap_free(snap);
        return false;
    }
    if (!strchr(msg, '\n') && want != TIR_ERR_INVALID_ARG && want != TIR_ERR_SCHED_INVALID_HANDLE) {
        snprintf(why, n, "the message shows no IR:\n%s", msg);
        sched_snap_free(snap);
        return false;
    }
    return sched_snap_same(s, snap, why, n);
}

void sched_fail_msg_(const char *call, const char *msg, const char *file, int line) {
    fprintf(stderr, "%s:%d: %s failed:\n%s\n", file, line, call, msg);
    _fail(file, line);
}

void sched_expect_fail_(tir_schedule *s, sched_snap *snap, tir_status got, tir_status want,
                        const char *prim, const char *call, const char *file, int line) {
    char why[8192];
    if (!sched_fail_ok(s, snap, got, want, prim, why, sizeof why)) {
        fprintf(stderr, "%s:%d: %s: %s\n", file, line, call, why);
        _fail(file, line);
    }
}

/* ------------------------------------------------------------- roundtrip */

bool sched_roundtrip_ok(tir_schedule *s, char *why, size_t n) {
    tir_ctx *ctx = tir_sched_ctx(s);
    const tir_prim_func *f = tir_sched_func(s);
    const char *text = tir_sched_trace_text(s);
    tir_schedule *fresh = NULL;
    if (tir_sched_create(ctx, tir_sched_orig_func(s), &fresh) != TIR_OK) {
        snprintf(why, n, "cannot create a fresh schedule: %s", tir_ctx_error(ctx));
        return false;
    }
    bool ok = false;
    char diff[1024];
    if (tir_sched_replay(fresh, text, strlen(text)) != TIR_OK)
        snprintf(why, n, "replay failed: %s\ntrace:\n%s", tir_ctx_error(ctx), text);
    else if (!tir_struct_equal_explain(tir_sched_func(fresh), f, diff, sizeof diff))
        snprintf(why, n, "the replayed function differs: %s\ntrace:\n%s", diff, text);
    else if (strcmp(tir_sched_trace_text(fresh), text) != 0)
        snprintf(why, n, "the replayed trace differs:\n--- original\n%s--- replayed\n%s", text,
                 tir_sched_trace_text(fresh));
    else
        ok = true;
    tir_sched_destroy(fresh);
    if (!ok) return false;
    /* The function's own text form round-trips too. */
    const char *printed = tir_print(ctx, f);
    const tir_prim_func *back = NULL;
    if (tir_parse_func(ctx, printed, strlen(printed), &back) != TIR_OK) {
        snprintf(why, n, "the printed function does not parse: %s\n%s", tir_ctx_error(ctx),
                 printed);
        return false;
    }
    if (!tir_struct_equal_explain(back, f, diff, sizeof diff)) {
        snprintf(why, n, "print/parse changes the function: %s\n%s", diff, printed);
        return false;
    }
    return true;
}

void sched_check_roundtrip(tir_schedule *s) {
    char why[16384];
    if (!sched_roundtrip_ok(s, why, sizeof why)) FAIL_LONG("trace roundtrip: %s", why);
}

/* ----------------------------------------------------------- equivalence */

typedef struct {
    tir_visitor v;
    const tir_prim_func *f;
    uint64_t written; /* parameter bits */
} written_state;

static bool written_pre(tir_visitor *v, const tir_node *n) {
    written_state *w = (written_state *)v;
    const tir_block *b = tir_as_tir_block(n);
    if (b)
        for (int i = 0; i < b->nwrites; i++)
            for (int p = 0; p < w->f->nparams && p < 64; p++)
                if (w->f->buffer_map[p] == b->writes[i].buffer) w->written |= 1ull << p;
    return !tir_kind_is_expr((tir_kind)n->kind);
}

double sched_rand_value(uint64_t *rng) {
    uint64_t r = sched_rand(rng);
    int64_t v = (int64_t)(r % 7) - 3;
    return v == 0 && (r >> 63) ? -0.0 : (double)v;
}

static void fill_random(void *data, const tir_buffer *b, int64_t count, uint64_t *rng) {
    tir_dtype t = b->dtype;
    for (int64_t i = 0; i < count; i++) {
        double z = sched_rand_value(rng);
        int64_t v = (int64_t)z;
        if (t.code == TIR_TYPE_FLOAT && t.bits == 32)
            ((float *)data)[i] = (float)z;
        else if (t.code == TIR_TYPE_FLOAT && t.bits == 64)
            ((double *)data)[i] = z;
        else if (t.code == TIR_TYPE_INT && t.bits == 32)
            ((int32_t *)data)[i] = (int32_t)v;
        else if (t.code == TIR_TYPE_INT && t.bits == 64)
            ((int64_t *)data)[i] = v;
        else if (t.code == TIR_TYPE_INT && t.bits == 8)
            ((int8_t *)data)[i] = (int8_t)v;
        else if (t.code == TIR_TYPE_UINT && t.bits == 8)
            ((uint8_t *)data)[i] = (uint8_t)(v + 3);
        else if (t.code == TIR_TYPE_BOOL)
            ((uint8_t *)data)[i] = (uint8_t)(v & 1);
        else if (t.bits == 16 && (t.code == TIR_TYPE_FLOAT || t.code == TIR_TYPE_BFLOAT))
            ((uint16_t *)data)[i] = t.code == TIR_TYPE_BFLOAT ? tir_rt_f32_to_bf16((float)z)
                                                              : tir_rt_f32_to_f16((float)z);
        else
            memset((char *)data + (size_t)i * tir_dtype_bytes(t), 0, tir_dtype_bytes(t));
    }
}

/* Parameters whose old values f reads or may keep: those a block writes
 * under a predicate, inside a loop or over an iterator domain that is not
 * constant (a scalar's or a loop's: it may run no instance), or reads
 * without an init (an accumulation).  Their elements are data the result
 * depends on, so they start initialised; the other written parameters
 * start unwritten, and reading one before writing it is an error. */
typedef struct {
    tir_visitor v;
    const tir_prim_func *f;
    int varying_loops; /* enclosing loops with a bound that is not constant */
    const tir_buffer *buf;
    bool found;
    uint64_t bits;
} old_state;

static bool loads_pre(tir_visitor *v, const tir_node *n) {
    old_state *o = (old_state *)v;
    const tir_buffer_load *l = n->kind == TIR_KIND_BUFFER_LOAD ? (const tir_buffer_load *)n : NULL;
    if (l && l->buffer == o->buf) o->found = true;
    return !o->found;
}

static bool loads_buffer(const tir_stmt *s, const tir_buffer *b) {
    old_state o = {{loads_pre, NULL, NULL}, NULL, 0, b, false, 0};
    tir_visit(&o.v, s);
    return o.found;
}

static bool block_may_keep(const old_state *o, const tir_block_realize *r, const tir_buffer *w) {
    const tir_block *b = r->block;
    int64_t always = 0;
    if (!tir_expr_const_int(r->predicate, &always) || always != 1 || o->varying_loops)
        return true;
    for (int i = 0; i < b->niters; i++)
        if (!tir_expr_const_int(b->iters[i].dom.min, NULL) ||
            !tir_expr_const_int(b->iters[i].dom.extent, NULL))
            return true;
    return !b->init && loads_buffer(b->body, w);
}

static bool old_pre(tir_visitor *v, const tir_node *n) {
    old_state *o = (old_state *)v;
    if (n->kind == TIR_KIND_FOR) {
        const tir_for *l = (const tir_for *)n;
        if (!tir_expr_const_int(l->min, NULL) || !tir_expr_const_int(l->extent, NULL))
            o->varying_loops++;
    } else if (n->kind == TIR_KIND_BLOCK_REALIZE) {
        const tir_block_realize *r = (const tir_block_realize *)n;
        for (int i = 0; i < r->block->nwrites; i++)
            for (int p = 0; p < o->f->nparams && p < 64; p++)
                if (o->f->buffer_map[p] == r->block->writes[i].buffer &&
                    block_may_keep(o, r, o->f->buffer_map[p]))
                    o->bits |= 1ull << p;
    }
    return !tir_kind_is_expr((tir_kind)n->kind);
}

static void old_post(tir_visitor *v, const tir_node *n) {
    old_state *o = (old_state *)v;
    if (n->kind != TIR_KIND_FOR) return;
    const tir_for *l = (const tir_for *)n;
    if (!tir_expr_const_int(l->min, NULL) || !tir_expr_const_int(l->extent, NULL))
        o->varying_loops--;
}

uint64_t sched_old_values_matter(const tir_prim_func *f) {
    old_state o = {{old_pre, old_post, NULL}, f, 0, NULL, false, 0};
    tir_visit(&o.v, f->body);
    return o.bits;
}

/* One run of both functions on the same random inputs, the scalar
 * parameters at `scalars` (one value per parameter, in order). */
static bool equiv_run(tir_ctx *ctx, const tir_prim_func *f0, const tir_prim_func *f1,
                      const int64_t *scalars, uint64_t uninit, uint64_t *rng, uint64_t seed,
                      char *why, size_t n) {
    int np = f0->nparams;
    tir_arg *a0 = calloc((size_t)np + 1, sizeof *a0), *a1 = calloc((size_t)np + 1, sizeof *a1);
    size_t *bytes = calloc((size_t)np + 1, sizeof *bytes);
    char at[256] = "";
    bool ok = true;
    for (int i = 0, ns = 0; i < np && ok; i++) {
        const tir_buffer *b = f0->buffer_map[i];
        if (!b) {
            a0[i].scalar = a1[i].scalar = scalars[ns++];
            size_t len = strlen(at);
            snprintf(at + len, sizeof at - len, "%s%s = %lld", len ? ", " : " at ",
                     f0->params[i]->name, (long long)a0[i].scalar);
            continue;
        }
        int64_t count = tir_buffer_const_size(b);
        if (count < 0 || b->strides) {
            snprintf(why, n, "parameter %d has no constant compact shape", i);
            ok = false;
            break;
        }
        bytes[i] = (size_t)count * tir_dtype_bytes(b->dtype);
        a0[i].data = malloc(bytes[i] ? bytes[i] : 1);
        a1[i].data = malloc(bytes[i] ? bytes[i] : 1);
        fill_random(a0[i].data, b, count, rng);
        memcpy(a1[i].data, a0[i].data, bytes[i]);
    }
    if (ok) {
        tir_interp_opts opts = {uninit};
        if (tir_interp_run(ctx, f0, np, a0, &opts) != TIR_OK) {
            snprintf(why, n, "the reference function fails in the interpreter%s: %s\n%s", at,
                     tir_ctx_error(ctx), tir_print(ctx, f0));
            ok = false;
        } else if (tir_interp_run(ctx, f1, np, a1, &opts) != TIR_OK) {
            snprintf(why, n, "the scheduled function fails in the interpreter%s: %s\n%s", at,
                     tir_ctx_error(ctx), tir_print(ctx, f1));
            ok = false;
        }
    }
    for (int i = 0; i < np && ok; i++) {
        if (!f0->buffer_map[i] || memcmp(a0[i].data, a1[i].data, bytes[i]) == 0) continue;
        size_t eb = tir_dtype_bytes(f0->buffer_map[i]->dtype);
        size_t k = 0;
        while (memcmp((char *)a0[i].data + k * eb, (char *)a1[i].data + k * eb, eb) == 0) k++;
        snprintf(why, n, "outputs differ%s: buffer %s, flat element %zu (seed %llu)\n%s", at,
                 f0->buffer_map[i]->name, k, (unsigned long long)seed, tir_print(ctx, f1));
        ok = false;
    }
    for (int i = 0; i < np; i++) {
        free(a0[i].data);
        free(a1[i].data);
    }
    free(a0);
    free(a1);
    free(bytes);
    return ok;
}

/* The values each scalar parameter takes, the first as before scalars
 * varied (1); 0 empties what a scalar sizes and fails `n > 0`. */
static const int64_t scalar_values[] = {1, 0, 2, 3};
enum { NSCALAR_VALUES = sizeof scalar_values / sizeof *scalar_values, MAX_SCALAR_RUNS = 16 };

bool sched_equiv_ok(tir_ctx *ctx, const tir_prim_func *f0, const tir_prim_func *f1,
                    uint64_t seed, char *why, size_t n) {
    if (f0->nparams != f1->nparams || f0->nparams > 64) {
        snprintf(why, n, "the functions take different parameters");
        return false;
    }
    int ns = 0;
    for (int i = 0; i < f0->nparams; i++) ns += !f0->buffer_map[i];
    written_state w = {{written_pre, NULL, NULL}, f0, 0};
    tir_visit(&w.v, f0->body);
    uint64_t uninit = w.written & ~sched_old_values_matter(f0), rng = seed;
    /* Every combination where there are few; else every scalar at each
       value in turn. */
    int64_t combos = 1;
    for (int i = 0; i < ns && combos <= MAX_SCALAR_RUNS; i++) combos *= NSCALAR_VALUES;
    bool all = combos <= MAX_SCALAR_RUNS;
    int64_t runs = ns == 0 ? 1 : all ? combos : NSCALAR_VALUES;
    int64_t scalars[64];
    for (int64_t run = 0; run < runs; run++) {
        for (int s = 0, r = (int)run; s < ns; s++) {
            scalars[s] = scalar_values[all ? r % NSCALAR_VALUES : run];
            r /= NSCALAR_VALUES;
        }
        if (!equiv_run(ctx, f0, f1, scalars, uninit, &rng, seed, why, n)) return false;
    }
    return true;
}

void sched_check_equiv(tir_ctx *ctx, const tir_prim_func *f0, const tir_prim_func *f1,
                       uint64_t seed) {
    char why[16384];
    if (!sched_equiv_ok(ctx, f0, f1, seed, why, sizeof why)) FAIL_LONG("equivalence: %s", why);
}

void sched_check_all(tir_schedule *s) {
    tir_ctx *ctx = tir_sched_ctx(s);
    if (tir_verify(ctx, tir_sched_func(s)) != TIR_OK)
        FAIL_LONG("the scheduled function is ill formed: %s", tir_ctx_error(ctx));
    sched_check_roundtrip(s);
    sched_check_equiv(ctx, tir_sched_orig_func(s), tir_sched_func(s), 1);
    sched_check_equiv(ctx, tir_sched_orig_func(s), tir_sched_func(s), 12345);
}

void sched_expect_text(tir_schedule *s, const char *golden) {
    tir_ctx *ctx = tir_sched_ctx(s);
    const char *got = tir_print(ctx, tir_sched_func(s));
    if (strcmp(got, golden) != 0)
        FAIL_LONG("printed function differs:\n--- got\n%s--- want\n%s", got, golden);
    /* The golden, parsed independently, is structurally the function. */
    const tir_prim_func *g = NULL;
    if (tir_parse_func(ctx, golden, strlen(golden), &g) != TIR_OK)
        FAIL_LONG("the golden text does not parse: %s", tir_ctx_error(ctx));
    char diff[1024];
    if (!tir_struct_equal_explain(g, tir_sched_func(s), diff, sizeof diff))
        FAIL_LONG("the parsed golden differs structurally: %s", diff);
}

/* ---------------------------------------------------------- conveniences */

tir_schedule *sched_new(tir_ctx *ctx, const tir_prim_func *f) {
    if (!f) FAIL_LONG("no function: %s", tir_ctx_error(ctx));
    tir_schedule *s = NULL;
    if (tir_sched_create(ctx, f, &s) != TIR_OK) FAIL_LONG("create: %s", tir_ctx_error(ctx));
    return s;
}

tir_block_rv sched_block(tir_schedule *s, const char *name) {
    tir_block_rv b = {0};
    SCHED_OK(s, tir_sched_get_block(s, name, &b));
    return b;
}

int sched_loops(tir_schedule *s, const char *name, tir_loop_rv *out) {
    const tir_loop_rv *l;
    int n = 0;
    SCHED_OK(s, tir_sched_get_loops(s, sched_block(s, name), &l, &n));
    assert_true(n <= 16);
    for (int i = 0; i < n; i++) out[i] = l[i];
    return n;
}

const tir_for *sched_for(tir_schedule *s, tir_loop_rv l) {
    const tir_for *f = NULL;
    SCHED_OK(s, tir_sched_get_for(s, l, &f));
    return f;
}

int64_t sched_extent(tir_schedule *s, tir_loop_rv l) {
    int64_t e = -1;
    assert_true(tir_expr_const_int(sched_for(s, l)->extent, &e));
    return e;
}
