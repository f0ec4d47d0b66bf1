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
 * runner and ASan (CI runs this suite under ASan).  MINITIR_FUZZ_ITERS
 * overrides the iteration count for longer runs by hand. */
#include <dirent.h>
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

static uint64_t rng = 0x2545F4914F6CDD1Dull;
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
static void check_one(const buf *b) {
    tir_ctx *ctx = tir_ctx_create();
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
        if (s2 != TIR_OK) print_error("reparse failed: %s\n--- input\n%.*s\n--- printed\n%s", tir_ctx_error(ctx), (int)b->n, b->p, t);
        assert_int_equal(s2, TIR_OK);
        char why[512];
        if (!tir_struct_equal_explain(f, g, why, sizeof why))
            print_error("not equal: %s\n--- input\n%.*s\n--- printed\n%s", why, (int)b->n, b->p, t);
        assert_true(tir_struct_equal(f, g));
        const char *t2 = tir_print(ctx, g);
        if (strcmp(t, t2) != 0) print_error("--- printed\n%s--- reprinted\n%s", t, t2);
        assert_string_equal(t, t2);
    } else {
        n_err++;
        assert_null(f);
        if (s != TIR_ERR_PARSE && s != TIR_ERR_TYPE) print_error("status %s: %s\n", tir_status_name(s), tir_ctx_error(ctx));
        assert_true(s == TIR_ERR_PARSE || s == TIR_ERR_TYPE);
        int line = 0, col = 0, used = 0;
        const char *msg = tir_ctx_error(ctx);
        assert_int_equal(sscanf(msg, "%d:%d: %n", &line, &col, &used), 2);
        assert_true(used > 0 && msg[used] != '\0');
        assert_true(line >= 1 && line <= lines_in(b));
        assert_true(col >= 1);
    }
    free(exact);
    tir_ctx_destroy(ctx);
}

static void test_seeds(void **st) {
    (void)st;
    assert_true(nseeds >= ts_nsamples + 40);
    for (int i = 0; i < nseeds; i++) check_one(&seeds[i]);
}

static void test_mutants(void **st) {
    (void)st;
    long iters = 30000;
    const char *env = getenv("MINITIR_FUZZ_ITERS");
    if (env) iters = atol(env);
    n_ok = n_err = 0;
    for (long it = 0; it < iters; it++) {
        /* Half the mutants come from the valid printed samples (the
         * first seeds), so that many of them still parse. */
        const buf *s = &seeds[below(2) ? below((size_t)ts_nsamples) : below((size_t)nseeds)];
        buf b = {malloc(s->n ? s->n : 1), s->n};
        memcpy(b.p, s->p, s->n);
        int muts = below(3) ? 1 : 2 + (int)below(3);
        for (int k = 0; k < muts; k++) mutate(&b);
        check_one(&b);
        free(b.p);
    }
    /* Both outcomes must occur, or the test checks nothing. */
    print_message("# %d mutants parsed, %d rejected\n", n_ok, n_err);
    assert_true(n_ok > iters / 50);
    assert_true(n_err > iters / 2);
}

int main(void) {
    load_seeds();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_mutants),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    for (int i = 0; i < nseeds; i++) free(seeds[i].p);
    free(seeds);
    return r;
}
