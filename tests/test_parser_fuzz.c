/* A bounded, deterministic fuzz test of the text parser that needs no
 * libFuzzer (fuzz/fuzz_parser.c is the open-ended version).  It mutates
 * printed valid functions and the bad-input corpus with byte flips,
 * insertions, deletions, truncations, token swaps, line duplication,
 * re-indentation and splices, and checks for every mutant that the parser
 * either
 *   - fails cleanly: *out == NULL, TIR_ERR_PARSE or TIR_ERR_TYPE, and a
 *     "line:col: message" with a line inside the input, or
 *   - succeeds with a function that prints, parses back structurally equal
 *     and prints to the same text.
 * Crashes, hangs, assertion failures and leaks surface through the test
 * runner and ASan (CI runs this suite under ASan).  Like the schedule
 * fuzzer, MINITIR_FUZZ_CASES=N sets the number of mutants (random
 * functions: N / 20) and MINITIR_FUZZ_SEED the seed; a failure prints the
 * seed to rerun it with.  MINITIR_FUZZ_ITERS is the older name of CASES. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/ir.h"
#include "text_samples.h"

typedef struct buf {
    char *p;
    size_t n;
} buf;

#define DEFAULT_SEED 0x2545F4914F6CDD1Dull
static uint64_t seed = DEFAULT_SEED, rng = DEFAULT_SEED;
static long cases = 20000;

/* Reported by every failure (cmocka's print_error goes to stderr). */
static void say_seed(void) {
    print_error("# rerun with MINITIR_FUZZ_SEED=%llu MINITIR_FUZZ_CASES=%ld\n",
                (unsigned long long)seed, cases);
}
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static size_t below(size_t n) { return n ? (size_t)(next() % n) : 0; }

static buf *seeds;
static int nseeds;

static void add_seed(const char *p, size_t n) {
    seeds = realloc(seeds, sizeof *seeds * (size_t)(nseeds + 1));
    seeds[nseeds].p = malloc(n ? n : 1);
    memcpy(seeds[nseeds].p, p, n);
    seeds[nseeds].n = n;
    nseeds++;
}

static void load_seeds(void) {
    tir_ctx *ctx = tir_ctx_create();
    for (int i = 0; i < ts_nsamples; i++) {
        const char *t = tir_print(ctx, ts_samples[i].build(ctx));
        add_seed(t, strlen(t));
    }
    tir_ctx_destroy(ctx);
    const char *data = getenv("MINITIR_TEST_DATA");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bad", data ? data : "tests/data");
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".tir")) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *fp = fopen(path, "rb");
        if (!fp) continue;
        char tmp[65536];
        size_t n = fread(tmp, 1, sizeof tmp, fp);
        fclose(fp);
        add_seed(tmp, n);
    }
    closedir(d);
}

static const char *const snippets[] = {
    "T.", "for ", " in ", "with ", "T.block(\"b\")", "(", ")", "[", "]", "{", "}", ":", ",",
    "    ", "\n", "\n    ", "-", "- ", "not ", " and ", " or ", "2147483648", "-2147483648",
    "9223372036854775808", "99999999999999999999", "1e309", "0.5", "\"", "'", "\\", "#",
    "\t", "T.grid(", "T.serial(", "T.axis.remap(\"SR\", [", "T.int64(", "T.float32(",
    "T.Cast(\"float16\", ", "T.Ramp(0, 1, 4)", "T.Broadcast(", "T.Let(x, 1, ", "if ", "else:",
    "elif ", "T.init()", "T.reads(", "T.where(", "T.alloc_buffer((4,), \"float32\")",
    "X = T.allocate((4,), \"int32\", scope=\"local\")\n", "A[", "A[()]", "vi", "i", "T.evaluate(0)",
    "True", "False", " // ", " % ", " / ", " < ", " == ", "T.exp(", "T.call_intrin(\"float32\", \"exp\", ",
    "\"nan\"", "\"inf\"", "T.var(\"int64\", \"m\")", "implicit_root=False", "\x00", "\xff", "\r",
};

/* Splits into rough tokens: identifier/number runs or single bytes. */
static int tok_bounds(const buf *b, size_t *starts, size_t *lens, int max) {
    int n = 0;
    size_t i = 0;
    while (i < b->n && n < max) {
        size_t j = i;
        char c = b->p[i];
        bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (word) {
            while (j < b->n && ((b->p[j] >= 'a' && b->p[j] <= 'z') || (b->p[j] >= 'A' && b->p[j] <= 'Z') ||
                                (b->p[j] >= '0' && b->p[j] <= '9') || b->p[j] == '_'))
                j++;
        } else {
            j = i + 1;
        }
        if (c != ' ' && c != '\n') {
            starts[n] = i;
            lens[n] = j - i;
            n++;
        }
        i = j;
    }
    return n;
}

static void replace(buf *b, size_t at, size_t del, const char *ins, size_t nins) {
    if (at > b->n) at = b->n;
    if (del > b->n - at) del = b->n - at;
    char *p = malloc(b->n - del + nins + 1);
    memcpy(p, b->p, at);
    memcpy(p + at, ins, nins);
    memcpy(p + at + nins, b->p + at + del, b->n - at - del);
    free(b->p);
    b->p = p;
    b->n = b->n - del + nins;
}

static void mutate(buf *b) {
    switch (below(9)) {
    case 0: /* byte flip */
        if (b->n) b->p[below(b->n)] = (char)(below(4) ? " \n()[]:,.=-+\"'#0123456789aTx"[below(28)] : (char)next());
        break;
    case 1: { /* insert a snippet */
        const char *s = snippets[below(sizeof snippets / sizeof snippets[0])];
        size_t n = strlen(s) ? strlen(s) : 1; /* "\x00" inserts a NUL byte */
        replace(b, below(b->n + 1), 0, s, n);
        break;
    }
    case 2: /* delete a range */
        replace(b, below(b->n + 1), 1 + below(16), "", 0);
        break;
    case 3: /* truncate */
        b->n = below(b->n + 1);
        break;
    case 4: { /* swap two tokens */
        size_t st[512], ln[512];
        int n = tok_bounds(b, st, ln, 512);
        if (n < 2) break;
        int x = (int)below((size_t)n), y = (int)below((size_t)n);
        if (x == y) break;
        if (x > y) {
            int t = x;
            x = y;
            y = t;
        }
        char *tx = malloc(ln[x] + 1), *ty = malloc(ln[y] + 1);
        memcpy(tx, b->p + st[x], ln[x]);
        memcpy(ty, b->p + st[y], ln[y]);
        size_t sx = st[x], lx = ln[x], sy = st[y], ly = ln[y];
        replace(b, sy, ly, tx, lx); /* the later one first keeps sx valid */
        replace(b, sx, lx, ty, ly);
        free(tx);
        free(ty);
        break;
    }
    case 5: { /* duplicate a line */
        if (!b->n) break;
        size_t at = below(b->n);
        size_t s = at, e = at;
        while (s > 0 && b->p[s - 1] != '\n') s--;
        while (e < b->n && b->p[e] != '\n') e++;
        if (e < b->n) e++;
        char *line = malloc(e - s + 1);
        memcpy(line, b->p + s, e - s);
        replace(b, e, 0, line, e - s);
        free(line);
        break;
    }
    case 6: { /* re-indent a line */
        if (!b->n) break;
        size_t s = below(b->n);
        while (s > 0 && b->p[s - 1] != '\n') s--;
        if (below(2))
            replace(b, s, 0, "    ", 1 + below(4));
        else
            replace(b, s, 1 + below(4), "", 0);
        break;
    }
    case 7: { /* splice from another seed */
        const buf *o = &seeds[below((size_t)nseeds)];
        size_t from = below(o->n + 1), len = below(64);
        if (len > o->n - from) len = o->n - from;
        replace(b, below(b->n + 1), below(32), o->p + from, len);
        break;
    }
    default: { /* replace a number by an extreme one */
        static const char *const nums[] = {"0", "-1", "2147483647", "4294967296", "128", "65536"};
        size_t st[512], ln[512];
        int n = tok_bounds(b, st, ln, 512);
        for (int k = 0; k < 8 && n; k++) {
            int t = (int)below((size_t)n);
            if (b->p[st[t]] >= '0' && b->p[st[t]] <= '9') {
                const char *s = nums[below(6)];
                replace(b, st[t], ln[t], s, strlen(s));
                break;
            }
        }
        break;
    }
    }
}

static int lines_in(const buf *b) {
    int n = 1;
    for (size_t i = 0; i < b->n; i++) n += b->p[i] == '\n';
    return n;
}

static int n_ok, n_err;

/* The property every input must satisfy (see the file comment). */
static void check_one(tir_ctx *ctx, const buf *b) {
    /* an exact-size copy: any read past len is an ASan error */
    char *exact = malloc(b->n ? b->n : 1);
    memcpy(exact, b->p, b->n);
    const tir_prim_func *f = (const void *)exact;
    tir_status s = tir_parse_func(ctx, exact, b->n, &f);
    if (s == TIR_OK) {
        n_ok++;
        assert_non_null(f);
        const char *t = tir_print(ctx, f);
        const tir_prim_func *g = NULL;
        tir_status s2 = tir_parse_func(ctx, t, strlen(t), &g);
        if (s2 != TIR_OK) say_seed(), print_error("reparse failed: %s\n--- input\n%.*s\n--- printed\n%s", tir_ctx_error(ctx), (int)b->n, b->p, t);
        assert_int_equal(s2, TIR_OK);
        char why[512];
        if (!tir_struct_equal_explain(f, g, why, sizeof why))
            say_seed(), print_error("not equal: %s\n--- input\n%.*s\n--- printed\n%s", why, (int)b->n, b->p, t);
        assert_true(tir_struct_equal(f, g));
        const char *t2 = tir_print(ctx, g);
        if (strcmp(t, t2) != 0) say_seed(), print_error("--- printed\n%s--- reprinted\n%s", t, t2);
        assert_string_equal(t, t2);
    } else {
        n_err++;
        assert_null(f);
        if (s != TIR_ERR_PARSE && s != TIR_ERR_TYPE) say_seed(), print_error("status %s: %s\n", tir_status_name(s), tir_ctx_error(ctx));
        assert_true(s == TIR_ERR_PARSE || s == TIR_ERR_TYPE);
        int line = 0, col = 0, used = 0;
        const char *msg = tir_ctx_error(ctx);
        assert_int_equal(sscanf(msg, "%d:%d: %n", &line, &col, &used), 2);
        assert_true(used > 0 && msg[used] != '\0');
        assert_true(line >= 1 && line <= lines_in(b));
        assert_true(col >= 1);
    }
    free(exact);
}


/* ------------------------------------------------------------ random IR
 *
 * The other direction: well-formed functions built at random with the
 * constructors (every construct, names drawn from a small clashing pool)
 * must print, parse back structurally equal, and print the same again. */

typedef struct gen {
    tir_ctx *ctx;
    const tir_var *vars[256];
    int nvars;
    const tir_buffer *bufs[64];
    int nbufs;
    const tir_for *loops[64];
    int nloops;
    int budget; /* nodes left */
} gen;

static const char *const names[] = {"i", "j", "x", "v", "vi", "A", "T", "for", "i_1", "", "a.b", "B"};
static const char *rname(void) { return names[below(sizeof names / sizeof names[0])]; }

static tir_dtype rscalar(void) {
    static const tir_dtype ts[] = {{TIR_TYPE_INT, 32, 1}, {TIR_TYPE_INT, 32, 1}, {TIR_TYPE_INT, 64, 1},
                                   {TIR_TYPE_FLOAT, 32, 1}, {TIR_TYPE_FLOAT, 16, 1}, {TIR_TYPE_BOOL, 1, 1},
                                   {TIR_TYPE_INT, 8, 1}, {TIR_TYPE_UINT, 8, 1}, {TIR_TYPE_BFLOAT, 16, 1},
                                   {TIR_TYPE_FLOAT, 64, 1}};
    return ts[below(sizeof ts / sizeof ts[0])];
}

static const tir_expr *gen_expr(gen *g, tir_dtype t, int depth);

static const tir_expr *gen_imm(gen *g, tir_dtype t) {
    if (tir_dtype_is_float(t)) {
        static const double vals[] = {0.0, -0.0, 1.0, 0.1, -2.5, 1e30, 5e-324, 65504.0};
        double v = vals[below(8)];
        if (!below(6)) {
            uint64_t bits = next();
            memcpy(&v, &bits, sizeof v);
        } else if (!below(8)) {
            v = below(2) ? INFINITY : -INFINITY;
        }
        return tir_float(g->ctx, t, v);
    }
    if (tir_dtype_is_bool(t)) return tir_bool(g->ctx, below(2));
    int64_t v;
    switch (below(5)) {
    case 0: v = 0; break;
    case 1: v = -(int64_t)below(100); break;
    case 2: v = (int64_t)(next() >> 1); break;
    default: v = (int64_t)below(300); break;
    }
    if (t.code == TIR_TYPE_UINT) v = (v % 256 + 256) % 256;
    else if (t.bits == 8) v = v % 128;
    else if (t.bits == 32) v = (int32_t)v;
    return tir_int(g->ctx, t, v);
}

static const tir_expr *int_index(gen *g, int depth) { return gen_expr(g, TIR_I32, depth); }

static const tir_expr *gen_load(gen *g, tir_dtype t, int depth) {
    const tir_buffer *cand[64];
    int n = 0;
    for (int i = 0; i < g->nbufs; i++)
        if (tir_dtype_eq(g->bufs[i]->dtype, tir_dtype_element(t)) && (t.lanes == 1 || g->bufs[i]->ndim > 0))
            cand[n++] = g->bufs[i];
    if (!n) return NULL;
    const tir_buffer *b = cand[below((size_t)n)];
    const tir_expr *idx[8];
    for (int i = 0; i < b->ndim; i++) idx[i] = int_index(g, depth + 1);
    if (t.lanes > 1)
        idx[b->ndim - 1] = tir_ramp_new(g->ctx, int_index(g, depth + 1), tir_i32(g->ctx, 1), t.lanes);
    return tir_load(g->ctx, b, b->ndim, idx);
}

static const tir_expr *gen_expr(gen *g, tir_dtype t, int depth) {
    g->budget--;
    bool leaf = depth > 5 || g->budget < 0 || !below(3);
    tir_dtype el = tir_dtype_element(t);
    if (depth > 9) return t.lanes > 1 ? tir_broadcast_new(g->ctx, gen_imm(g, el), t.lanes) : gen_imm(g, t);
    if (leaf || t.lanes > 1) {
        if (t.lanes > 1) {
            switch (below(4)) {
            case 0: return tir_broadcast_new(g->ctx, gen_expr(g, el, depth + 1), t.lanes);
            case 1:
                if (!tir_dtype_is_bool(el)) {
                    const tir_expr *l = gen_load(g, t, depth);
                    if (l) return l;
                }
                return tir_broadcast_new(g->ctx, gen_expr(g, el, depth + 1), t.lanes);
            case 2:
                if (tir_dtype_is_int(el))
                    return tir_ramp_new(g->ctx, gen_expr(g, el, depth + 1), gen_expr(g, el, depth + 1), t.lanes);
                if (tir_dtype_is_bool(el)) {
                    tir_dtype it = tir_dtype_with_lanes(TIR_I32, t.lanes);
                    return tir_lt(g->ctx, gen_expr(g, it, depth + 1), gen_expr(g, it, depth + 1));
                }
                return tir_add(g->ctx, gen_expr(g, t, depth + 1), gen_expr(g, t, depth + 1));
            default: return tir_broadcast_new(g->ctx, gen_imm(g, el), t.lanes);
            }
        }
        if (below(2)) {
            const tir_var *c[256];
            int n = 0;
            for (int i = 0; i < g->nvars; i++)
                if (tir_dtype_eq(g->vars[i]->base.dtype, t)) c[n++] = g->vars[i];
            if (n) return &c[below((size_t)n)]->base;
        }
        if (!below(3)) {
            const tir_expr *l = gen_load(g, t, depth);
            if (l) return l;
        }
        return gen_imm(g, t);
    }
    int r = (int)below(12);
    if (tir_dtype_is_bool(t)) {
        switch (r % 5) {
        case 0: return tir_binop_new(g->ctx, below(2) ? TIR_KIND_AND : TIR_KIND_OR, gen_expr(g, t, depth + 1), gen_expr(g, t, depth + 1));
        case 1: return tir_not_new(g->ctx, gen_expr(g, t, depth + 1));
        case 2: {
            tir_dtype o = rscalar();
            if (tir_dtype_is_bool(o)) o = TIR_I32;
            return tir_binop_new(g->ctx, (tir_kind)(TIR_KIND_EQ + (int)below(6)), gen_expr(g, o, depth + 1), gen_expr(g, o, depth + 1));
        }
        case 3: return tir_select_new(g->ctx, gen_expr(g, TIR_BOOL, depth + 1), gen_expr(g, t, depth + 1), gen_expr(g, t, depth + 1));
        default: return tir_cast_new(g->ctx, t, gen_expr(g, TIR_I32, depth + 1));
        }
    }
    switch (r) {
    case 0: case 1: case 2: case 3: {
        static const tir_kind ks[] = {TIR_KIND_ADD, TIR_KIND_SUB, TIR_KIND_MUL, TIR_KIND_DIV, TIR_KIND_MOD,
                                      TIR_KIND_FLOORDIV, TIR_KIND_FLOORMOD, TIR_KIND_MIN, TIR_KIND_MAX};
        return tir_binop_new(g->ctx, ks[below(9)], gen_expr(g, t, depth + 1), gen_expr(g, t, depth + 1));
    }
    case 4: return tir_select_new(g->ctx, gen_expr(g, TIR_BOOL, depth + 1), gen_expr(g, t, depth + 1), gen_expr(g, t, depth + 1));
    case 5: {
        tir_dtype o = rscalar();
        return tir_cast_new(g->ctx, t, gen_expr(g, o, depth + 1));
    }
    case 6: {
        tir_dtype o = rscalar();
        const tir_expr *val = gen_expr(g, o, depth + 1);
        const tir_var *v = tir_var_new(g->ctx, rname(), o);
        g->vars[g->nvars++] = v;
        const tir_expr *body = gen_expr(g, t, depth + 1);
        g->nvars--;
        return tir_let_new(g->ctx, v, val, body);
    }
    case 7: {
        if (tir_dtype_is_float(t)) {
            const tir_expr *a[3] = {gen_expr(g, t, depth + 1), gen_expr(g, t, depth + 1), gen_expr(g, t, depth + 1)};
            static const tir_intrin ops[] = {TIR_INTRIN_EXP, TIR_INTRIN_FMA, TIR_INTRIN_POW, TIR_INTRIN_SIGMOID};
            tir_intrin op = ops[below(4)];
            tir_dtype ct = below(4) ? t : t; /* default dtype */
            if (!below(5)) {
                /* a dtype differing from the default: T.call_intrin */
                ct = t;
                return tir_cast_new(g->ctx, t, tir_call_new(g->ctx, TIR_F64, op, tir_intrin_nargs(op), a));
            }
            return tir_call_new(g->ctx, ct, op, tir_intrin_nargs(op), a);
        }
        const tir_expr *l = gen_load(g, t, depth);
        return l ? l : gen_imm(g, t);
    }
    default: {
        const tir_expr *l = gen_load(g, t, depth);
        return l ? l : gen_expr(g, t, depth + 1);
    }
    }
}

static tir_annot *gen_annots(gen *g, int *n) {
    static const char *const keys[] = {"a", "pragma_unroll", "s", "arr", "k\"q", "tir.x"};
    tir_annot *a = tir_ctx_alloc(g->ctx, sizeof *a * 6);
    *n = (int)below(4);
    for (int i = 0; i < *n; i++) {
        a[i].key = keys[i + (int)below(3)];
        for (int j = 0; j < i; j++)
            if (a[j].key == a[i].key) a[i].key = keys[5 - j];
        a[i].kind = (tir_annot_kind)below(3);
        a[i].i = (int64_t)next();
        a[i].s = below(2) ? "x y\n\"z\"" : "";
        a[i].nints = (int)below(4);
        int64_t *ints = tir_ctx_alloc(g->ctx, sizeof(int64_t) * 4);
        for (int k = 0; k < 4; k++) ints[k] = (int64_t)next() >> (int)below(63);
        a[i].ints = ints;
    }
    /* keys must be distinct: fall back to fewer annotations */
    for (int i = 0; i < *n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(a[i].key, a[j].key) == 0) *n = i < *n ? i : *n;
    return a;
}

static const tir_buffer *gen_buffer(gen *g, bool symbolic) {
    tir_buffer_desc d;
    memset(&d, 0, sizeof d);
    d.name = rname();
    static const tir_dtype dts[] = {{TIR_TYPE_FLOAT, 32, 1}, {TIR_TYPE_INT, 32, 1}, {TIR_TYPE_FLOAT, 16, 1},
                                    {TIR_TYPE_INT, 64, 1}, {TIR_TYPE_BOOL, 1, 1}};
    d.dtype = dts[below(5)];
    d.ndim = (int)below(4);
    const tir_expr **sh = tir_ctx_alloc(g->ctx, sizeof(void *) * 4);
    const tir_expr **stv = tir_ctx_alloc(g->ctx, sizeof(void *) * 4);
    for (int i = 0; i < d.ndim; i++) {
        sh[i] = tir_i32(g->ctx, 1 + (int64_t)below(64));
        stv[i] = tir_i32(g->ctx, (int64_t)below(100));
        if (symbolic && !below(3)) {
            const tir_var *c[256];
            int n = 0;
            for (int k = 0; k < g->nvars; k++)
                if (tir_dtype_is_int(g->vars[k]->base.dtype)) c[n++] = g->vars[k];
            if (n) sh[i] = &c[below((size_t)n)]->base;
        }
    }
    d.shape = sh;
    if (!below(4)) d.strides = stv;
    if (!below(5)) d.elem_offset = below(2) ? tir_int(g->ctx, TIR_I64, 3) : tir_i32(g->ctx, 16);
    d.scope = (tir_scope)below(3);
    if (!below(5)) d.align = 64;
    return tir_buffer_new(g->ctx, &d);
}

static const tir_stmt *gen_stmt(gen *g, int depth);

static const tir_stmt *gen_block(gen *g, int depth) {
    tir_iter_var iv[3];
    const tir_expr *vals[3];
    int n = (int)below(4);
    for (int i = 0; i < n; i++) {
        tir_dtype t = below(5) ? TIR_I32 : TIR_I64;
        if (g->nloops && below(3)) {
            const tir_for *f = g->loops[below((size_t)g->nloops)];
            t = f->var->base.dtype;
            iv[i].dom.min = f->min;
            iv[i].dom.extent = f->extent;
            vals[i] = &f->var->base;
            if (!below(4)) iv[i].dom.extent = gen_imm(g, t); /* not remappable */
        } else {
            iv[i].dom.min = below(2) ? tir_int(g->ctx, t, 0) : gen_expr(g, t, depth + 2);
            iv[i].dom.extent = gen_expr(g, t, depth + 2);
            vals[i] = gen_expr(g, t, depth + 2);
        }
        iv[i].var = tir_var_new(g->ctx, rname(), t);
        iv[i].kind = below(2) ? TIR_ITER_SPATIAL : TIR_ITER_REDUCE;
    }
    const tir_expr *pred = below(3) ? NULL : gen_expr(g, TIR_BOOL, depth + 2);
    int saved_vars = g->nvars, saved_bufs = g->nbufs;
    for (int i = 0; i < n; i++) g->vars[g->nvars++] = iv[i].var;
    tir_buffer_region regs[4];
    int nr = 0;
    for (int k = 0; k < 4 && g->nbufs; k++) {
        if (below(2)) continue;
        const tir_buffer *b = g->bufs[below((size_t)g->nbufs)];
        tir_range rg[4];
        for (int d = 0; d < b->ndim; d++) {
            rg[d].min = int_index(g, depth + 3);
            rg[d].extent = below(2) ? tir_i32(g->ctx, 1) : int_index(g, depth + 3);
        }
        regs[nr++] = tir_region_new(g->ctx, b, b->ndim, rg);
    }
    const tir_buffer *allocs[2];
    int na = (int)below(3);
    for (int i = 0; i < na; i++) allocs[i] = gen_buffer(g, false);
    for (int i = 0; i < na; i++) g->bufs[g->nbufs++] = allocs[i];
    tir_block_desc d;
    memset(&d, 0, sizeof d);
    d.name = below(4) ? "b" : "root";
    d.niters = n;
    d.iters = iv;
    int split = nr ? (int)below((size_t)nr + 1) : 0;
    d.nreads = split;
    d.reads = regs;
    d.nwrites = nr - split;
    d.writes = regs + split;
    d.init = below(3) ? NULL : gen_stmt(g, depth + 1);
    d.body = gen_stmt(g, depth + 1);
    d.nallocs = na;
    d.allocs = allocs;
    d.annots = gen_annots(g, &d.nannots);
    g->nvars = saved_vars;
    g->nbufs = saved_bufs;
    return tir_block_realize_new(g->ctx, n, vals, pred, tir_block_new(g->ctx, &d));
}

static const tir_stmt *gen_stmt(gen *g, int depth) {
    g->budget -= 2;
    int r = depth > 4 || g->budget < 0 ? (int)below(2) : (int)below(8);
    switch (r) {
    case 0: {
        if (!g->nbufs) return tir_evaluate_new(g->ctx, gen_expr(g, rscalar(), depth));
        const tir_buffer *b = g->bufs[below((size_t)g->nbufs)];
        int lanes = b->ndim && !below(4) ? 4 : 1;
        const tir_expr *idx[4];
        for (int i = 0; i < b->ndim; i++) idx[i] = int_index(g, depth + 2);
        if (lanes > 1) idx[b->ndim - 1] = tir_ramp_new(g->ctx, int_index(g, depth + 2), tir_i32(g->ctx, 2), 4);
        return tir_store(g->ctx, b, gen_expr(g, tir_dtype_with_lanes(b->dtype, lanes), depth + 1), b->ndim, idx);
    }
    case 1: {
        if (below(2)) {
            static const tir_intrin ops[] = {TIR_INTRIN_SYNCTHREADS, TIR_INTRIN_CP_ASYNC_COMMIT};
            return tir_evaluate_new(g->ctx, tir_call_new(g->ctx, TIR_VOID, ops[below(2)], 0, NULL));
        }
        return tir_evaluate_new(g->ctx, gen_expr(g, rscalar(), depth + 1));
    }
    case 2: case 3: {
        tir_dtype t = below(6) ? TIR_I32 : TIR_I64;
        const tir_var *v = tir_var_new(g->ctx, rname(), t);
        const tir_expr *min = below(2) ? tir_int(g->ctx, t, 0) : gen_expr(g, t, depth + 2);
        const tir_expr *ext = gen_expr(g, t, depth + 2);
        tir_for_kind k = below(2) ? TIR_FOR_SERIAL : (tir_for_kind)below(5);
        static const char *const tags[] = {"blockIdx.x", "threadIdx.y", "vthread.x", "vthread.z"}; /* the parser reads no other */
        int na = 0;
        tir_annot *an = below(3) ? NULL : gen_annots(g, &na);
        g->vars[g->nvars++] = v;
        tir_for tmp = {.var = v, .min = min, .extent = ext};
        g->loops[g->nloops++] = &tmp;
        const tir_stmt *body = gen_stmt(g, depth + 1);
        g->nloops--;
        g->nvars--;
        return tir_for_new(g->ctx, v, min, ext, k, k == TIR_FOR_THREAD_BINDING ? tags[below(4)] : NULL, na, an, body);
    }
    case 4: {
        const tir_stmt *s[3];
        int n = 2 + (int)below(2);
        for (int i = 0; i < n; i++) s[i] = gen_stmt(g, depth + 1);
        return tir_seq_new(g->ctx, n, s);
    }
    case 5:
        return tir_if_new(g->ctx, gen_expr(g, TIR_BOOL, depth + 1), gen_stmt(g, depth + 1),
                          below(2) ? gen_stmt(g, depth + 1) : NULL);
    case 6: {
        const tir_buffer *b = gen_buffer(g, true);
        g->bufs[g->nbufs++] = b;
        const tir_stmt *body = gen_stmt(g, depth + 1);
        g->nbufs--;
        const tir_stmt *a = tir_allocate_new(g->ctx, b, body);
        /* sometimes not in tail position: needs the `with` form */
        return below(2) ? a : tir_seq_new(g->ctx, 2, (const tir_stmt *[]){a, gen_stmt(g, depth + 1)});
    }
    default: return gen_block(g, depth);
    }
}

static const tir_prim_func *gen_func(tir_ctx *ctx) {
    gen g;
    memset(&g, 0, sizeof g);
    g.ctx = ctx;
    g.budget = 60 + (int)below(120);
    const tir_var *params[8];
    const tir_buffer *bm[8];
    int np = (int)below(6);
    /* scalars first so buffer shapes can use them; a shape may also use
     * a variable that is no parameter (defined by the signature). */
    for (int i = 0; i < np; i++) {
        if (below(3)) {
            bm[i] = NULL;
            params[i] = NULL;
            continue;
        }
        params[i] = tir_var_new(ctx, rname(), below(2) ? TIR_I32 : rscalar());
        bm[i] = NULL;
        g.vars[g.nvars++] = params[i];
    }
    const tir_var *implicit = NULL;
    if (below(2)) g.vars[g.nvars++] = implicit = tir_var_new(ctx, rname(), below(2) ? TIR_I32 : TIR_I64);
    bool used = false;
    for (int i = 0; i < np; i++) {
        if (params[i]) continue;
        bm[i] = gen_buffer(&g, true);
        params[i] = tir_var_new(ctx, bm[i]->name, TIR_HANDLE);
        for (int k = 0; k < bm[i]->ndim; k++) used |= implicit && bm[i]->shape[k] == &implicit->base;
    }
    if (implicit && !used) g.nvars--; /* defined only by a shape that uses it */
    for (int i = 0; i < np; i++)
        if (bm[i]) g.bufs[g.nbufs++] = bm[i];
    const tir_stmt *body = gen_stmt(&g, 0);
    if (below(2)) {
        tir_block_desc d;
        memset(&d, 0, sizeof d);
        d.name = "root";
        d.body = body;
        if (below(2)) d.annots = gen_annots(&g, &d.nannots);
        body = tir_block_realize_new(ctx, 0, NULL, NULL, tir_block_new(ctx, &d));
    }
    int na = 0;
    tir_annot *an = below(2) ? gen_annots(&g, &na) : NULL;
    static const char *const fnames[] = {"main", "f", "for", "my-kernel", ""};
    return tir_prim_func_new(ctx, fnames[below(5)], np, params, bm, body, na, an);
}

static void test_random_ir(void **st) {
    (void)st;
    long iters = cases / 20;
    rng = seed ^ 0x9E3779B97F4A7C15ull; /* independent of test_mutants' stream */
    if (!rng) rng = DEFAULT_SEED;
    tir_ctx *ctx = NULL;
    for (long it = 0; it < iters; it++) {
        if (it % 16 == 0) {
            tir_ctx_destroy(ctx);
            ctx = tir_ctx_create();
        }
        const tir_prim_func *f = gen_func(ctx);
        const char *t = tir_print(ctx, f);
        const tir_prim_func *g = NULL;
        tir_status s = tir_parse_func(ctx, t, strlen(t), &g);
        if (s != TIR_OK) say_seed(), print_error("iteration %ld: %s\n%s", it, tir_ctx_error(ctx), t);
        assert_int_equal(s, TIR_OK);
        char why[512];
        if (!tir_struct_equal_explain(f, g, why, sizeof why)) say_seed(), print_error("iteration %ld: %s\n%s", it, why, t);
        assert_true(tir_struct_equal(f, g));
        const char *t2 = tir_print(ctx, g);
        if (strcmp(t, t2) != 0) say_seed(), print_error("--- printed\n%s--- reprinted\n%s", t, t2);
        assert_string_equal(t, t2);
    }
    tir_ctx_destroy(ctx);
}

static void test_seeds(void **st) {
    (void)st;
    assert_true(nseeds >= ts_nsamples + 40);
    tir_ctx *ctx = tir_ctx_create();
    for (int i = 0; i < nseeds; i++) check_one(ctx, &seeds[i]);
    tir_ctx_destroy(ctx);
}

static void test_mutants(void **st) {
    (void)st;
    long iters = cases;
    rng = seed ? seed : DEFAULT_SEED;
    n_ok = n_err = 0;
    tir_ctx *ctx = NULL;
    for (long it = 0; it < iters; it++) {
        /* A context per batch: cheaper than one per input under ASan. */
        if (it % 64 == 0) {
            tir_ctx_destroy(ctx);
            ctx = tir_ctx_create();
        }
        /* Half the mutants come from the valid printed samples (the
         * first seeds), so that many of them still parse. */
        const buf *s = &seeds[below(2) ? below((size_t)ts_nsamples) : below((size_t)nseeds)];
        buf b = {malloc(s->n ? s->n : 1), s->n};
        memcpy(b.p, s->p, s->n);
        int muts = below(3) ? 1 : 2 + (int)below(3);
        for (int k = 0; k < muts; k++) mutate(&b);
        check_one(ctx, &b);
        free(b.p);
    }
    tir_ctx_destroy(ctx);
    /* Both outcomes must occur, or the test checks nothing. */
    print_message("# %d mutants parsed, %d rejected\n", n_ok, n_err);
    assert_true(n_ok > iters / 50);
    assert_true(n_err > iters / 2);
}

int main(void) {
    const char *e = getenv("MINITIR_FUZZ_CASES");
    if (!e) e = getenv("MINITIR_FUZZ_ITERS");
    if (e && atol(e) > 0) cases = atol(e);
    const char *sd = getenv("MINITIR_FUZZ_SEED");
    if (sd) seed = strtoull(sd, NULL, 10);
    printf("# MINITIR_FUZZ_SEED=%llu MINITIR_FUZZ_CASES=%ld\n", (unsigned long long)seed, cases);
    load_seeds();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_mutants),
        cmocka_unit_test(test_random_ir),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    for (int i = 0; i < nseeds; i++) free(seeds[i].p);
    free(seeds);
    return r;
}
