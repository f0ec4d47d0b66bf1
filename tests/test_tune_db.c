/* Tests of the tuning database (minitir/tune.h): workload keys that are
 * the same for the same function in any context and differ with shape and
 * dtype; add / best / count / foreach / top; JSON lines round trip,
 * idempotent import, malformed lines that import nothing; two processes
 * writing one file at once; a writer killed mid-run (the database stays
 * intact and holds exactly what was committed); apply_best replaying a
 * real matmul schedule; open errors (not a database, another schema
 * version).  Each test works in its own temporary folder.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "minitir/tune.h"
#include "sched_check.h"

/* tir_struct_hash of tir_def_matmul(64, 32, 16, float32), pinned below. */
#define MATMUL_HASH "3a2368ef40c847bd"

/* ------------------------------------------------------------- fixture */

typedef struct fixture {
    tir_ctx *ctx;
    char dir[64];
    char path[128];
} fixture;

static int setup(void **st) {
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    snprintf(fx->dir, sizeof fx->dir, "/tmp/minitir-tune-XXXXXX");
    if (!mkdtemp(fx->dir)) return -1;
    snprintf(fx->path, sizeof fx->path, "%s/tune.db", fx->dir);
    fx->ctx = tir_ctx_create();
    *st = fx;
    return fx->ctx ? 0 : -1;
}

static int teardown(void **st) {
    fixture *fx = *st;
    static const char *const files[] = {"tune.db", "tune.db-wal", "tune.db-shm", "tune.db-journal",
                                        "other.db", "other.db-wal", "other.db-shm", "out.jsonl",
                                        "in.jsonl", "garbage.db", "two0.db", "two0.db-wal",
                                        "two0.db-shm", "two1.db", "two1.db-wal", "two1.db-shm",
                                        "two2.db", "two2.db-wal", "two2.db-shm"};
    char p[192];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", fx->dir, files[i]);
        unlink(p);
    }
    rmdir(fx->dir);
    tir_ctx_destroy(fx->ctx);
    free(fx);
    return 0;
}

#define OK(ctx, call)                                                                  \
    do {                                                                               \
        tir_status st_ = (call);                                                       \
        if (st_ != TIR_OK) fail_msg("%s: %s: %s", #call, tir_status_name(st_),          \
                                    tir_ctx_error(ctx));                               \
    } while (0)

/* A call fails with `want` and a message holding `needle`. */
#define FAILS(ctx, want, needle, call)                                                 \
    do {                                                                               \
        tir_status st_ = (call);                                                       \
        if (st_ != (want) || !strstr(tir_ctx_error(ctx), (needle)))                    \
            fail_msg("%s gave %s \"%s\"; expected %s with \"%s\"", #call,              \
                     tir_status_name(st_), tir_ctx_error(ctx), tir_status_name(want),  \
                     (needle));                                                        \
    } while (0)

static tir_tune_target h200(void) {
    tir_tune_target t;
    memset(&t, 0, sizeof t);
    snprintf(t.gpu, sizeof t.gpu, "NVIDIA H200");
    snprintf(t.arch, sizeof t.arch, "sm_90");
    t.driver_version = 13000;
    return t;
}

static tir_tune_record rec(const char *workload, const char *trace, double median,
                           const char *error) {
    tir_tune_record r;
    tir_tune_record_init(&r);
    r.workload = workload;
    r.target = h200();
    r.trace = trace;
    r.median_ms = median;
    r.gflops = isnan(median) ? NAN : 1.0 / median;
    r.error = error;
    r.compile_ms = 100.0;
    r.timestamp = 1790000000;
    return r;
}

static tir_tune_db *open_db(fixture *fx, const char *path) {
    tir_tune_db *db = NULL;
    OK(fx->ctx, tir_tune_db_open(fx->ctx, path, &db));
    return db;
}

static int64_t count_all(fixture *fx, tir_tune_db *db) {
    int64_t n = -1;
    OK(fx->ctx, tir_tune_db_count(fx->ctx, db, NULL, NULL, &n));
    return n;
}

/* ------------------------------------------------------------------ keys */

static const char *matmul_key(tir_ctx *ctx, int64_t m, int64_t n, int64_t k, tir_dtype t) {
    const char *key = NULL;
    OK(ctx, tir_tune_workload_key(ctx, tir_def_matmul(ctx, m, n, k, t), &key));
    return key;
}

static void test_workload_key(void **st) {
    fixture *fx = *st;
    const char *a = matmul_key(fx->ctx, 64, 32, 16, TIR_F32);
    /* Another context, with other nodes made first, so that nothing of
     * the function sits at the same address or gets the same ids. */
    tir_ctx *other = tir_ctx_create();
    assert_non_null(tir_def_conv2d_nchw(other, 1, 3, 8, 8, 4, 3, 3, 1, 1, TIR_F32));
    const char *b = matmul_key(other, 64, 32, 16, TIR_F32);
    assert_string_equal(a, b);
    tir_ctx_destroy(other);
    assert_string_not_equal(a, matmul_key(fx->ctx, 64, 32, 32, TIR_F32));
    assert_string_not_equal(a, matmul_key(fx->ctx, 64, 16, 32, TIR_F32));
    assert_string_not_equal(a, matmul_key(fx->ctx, 64, 32, 16, TIR_F16));
    const char *bias = NULL;
    OK(fx->ctx, tir_tune_workload_key(fx->ctx, tir_def_matmul_bias(fx->ctx, 64, 32, 16, TIR_F32),
                                      &bias));
    assert_string_not_equal(a, bias);
    /* Pinned: a change to this key orphans every record in users'
     * databases, so it must be a decision (and a note in docs/tuning.md),
     * never an accident. */
    assert_string_equal(a, "matmul-" MATMUL_HASH "-float32[64,16],float32[16,32],float32[64,32]");
    FAILS(fx->ctx, TIR_ERR_INVALID_ARG, "workload key", tir_tune_workload_key(fx->ctx, NULL, &a));
}

static void test_target_from_props(void **st) {
    (void)st;
    tir_rt_props p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "NVIDIA H200");
    snprintf(p.arch, sizeof p.arch, "sm_90");
    p.driver_version = 13000;
    tir_tune_target t, want = h200();
    tir_tune_target_from_props(&p, &t);
    assert_memory_equal(&t, &want, sizeof t);
}

/* ------------------------------------------------------- add and query */

typedef struct collected {
    int n;
    char traces[16][64];
    int64_t ids[16];
} collected;

static bool collect(void *user, const tir_tune_record *r) {
    collected *c = user;
    if (c->n < 16) {
        snprintf(c->traces[c->n], sizeof c->traces[0], "%s", r->trace);
        c->ids[c->n] = r->id;
    }
    c->n++;
    return true;
}

static void test_add_best_count(void **st) {
    fixture *fx = *st;
    tir_tune_db *db = open_db(fx, fx->path);
    tir_tune_target t = h200(), other = h200();
    other.driver_version = 12080;
    tir_tune_record rs[] = {
        rec("w", "t_slow", 3.0, NULL), rec("w", "t_fast", 1.0, NULL),
        rec("w", "t_wrong", 0.5, "result differs"), rec("w", "t_mid", 2.0, NULL),
        rec("w", "t_unmeasured", NAN, "launch failed"), rec("v", "t_other_workload", 0.1, NULL),
    };
    bool added = false;
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
        OK(fx->ctx, tir_tune_db_add(fx->ctx, db, &rs[i], &added));
        assert_true(added);
    }
    tir_tune_record on_other = rec("w", "t_other_target", 0.2, NULL);
    on_other.target = other;
    OK(fx->ctx, tir_tune_db_add(fx->ctx, db, &on_other, &added));
    /* The same candidate again is kept once, the first measure stays. */
    tir_tune_record again = rec("w", "t_fast", 9.0, NULL);
    OK(fx->ctx, tir_tune_db_add(fx->ctx, db, &again, &added));
    assert_false(added);

    tir_tune_record best;
    OK(fx->ctx, tir_tune_db_best(fx->ctx, db, "w", &t, &best));
    assert_string_equal(best.trace, "t_fast");
    assert_true(best.median_ms == 1.0 && best.gflops == 1.0 && best.compile_ms == 100.0);
    assert_null(best.error);
    assert_string_equal(best.decisions, "");
    assert_int_equal(best.timestamp, 1790000000);
    assert_memory_equal(&best.target, &t, sizeof t);
    OK(fx->ctx, tir_tune_db_best(fx->ctx, db, "w", &other, &best));
    assert_string_equal(best.trace, "t_other_target");

    int64_t n = 0;
    OK(fx->ctx, tir_tune_db_count(fx->ctx, db, "w", &t, &n));
    assert_int_equal(n, 5);
    OK(fx->ctx, tir_tune_db_count(fx->ctx, db, "w", NULL, &n));
    assert_int_equal(n, 6);
    assert_int_equal(count_all(fx, db), 7);

    collected c = {0};
    OK(fx->ctx, tir_tune_db_foreach(fx->ctx, db, "w", &t, collect, &c));
    assert_int_equal(c.n, 5); /* failed ones too, in the order added */
    assert_string_equal(c.traces[0], "t_slow");
    assert_string_equal(c.traces[2], "t_wrong");
    assert_string_equal(c.traces[4], "t_unmeasured");
    assert_true(c.ids[0] < c.ids[1] && c.ids[3] < c.ids[4]);
    memset(&c, 0, sizeof c);
    OK(fx->ctx, tir_tune_db_top(fx->ctx, db, "w", &t, 2, collect, &c));
    assert_int_equal(c.n, 2);
    assert_string_equal(c.traces[0], "t_fast");
    assert_string_equal(c.traces[1], "t_mid");

    FAILS(fx->ctx, TIR_ERR_TUNE_NO_RECORD, "no error-free record of workload nope",
          tir_tune_db_best(fx->ctx, db, "nope", &t, &best));
    FAILS(fx->ctx, TIR_ERR_INVALID_ARG, "top 0", tir_tune_db_top(fx->ctx, db, "w", &t, 0, collect, &c));
    tir_tune_record bad = rec("w", NULL, 1.0, NULL);
    FAILS(fx->ctx, TIR_ERR_INVALID_ARG, "needs a trace", tir_tune_db_add(fx->ctx, db, &bad, NULL));
    bad = rec("", "t", 1.0, NULL);
    FAILS(fx->ctx, TIR_ERR_INVALID_ARG, "needs a workload", tir_tune_db_add(fx->ctx, db, &bad, NULL));
    assert_int_equal(count_all(fx, db), 7);
    OK(fx->ctx, tir_tune_db_check(fx->ctx, db));
    tir_tune_db_close(db);
}

/* ------------------------------------------------------------ JSON lines */

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void export_to(fixture *fx, tir_tune_db *db, const char *path, int64_t want) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    int64_t n = -1;
    OK(fx->ctx, tir_tune_db_export_jsonl(fx->ctx, db, f, &n));
    fclose(f);
    assert_int_equal(n, want);
}

static tir_status import_from(fixture *fx, tir_tune_db *db, const char *path, int64_t *added,
                              int64_t *skipped) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    tir_status st = tir_tune_db_import_jsonl(fx->ctx, db, f, added, skipped);
    fclose(f);
    return st;
}

static void test_jsonl_round_trip(void **st) {
    fixture *fx = *st;
    char out[192], other[192], again[192];
    snprintf(out, sizeof out, "%s/out.jsonl", fx->dir);
    snprintf(other, sizeof other, "%s/other.db", fx->dir);
    snprintf(again, sizeof again, "%s/in.jsonl", fx->dir);
    tir_tune_db *db = open_db(fx, fx->path);
    /* Strings that need escaping, UTF-8, and a value with all 17 digits. */
    tir_tune_record rs[] = {
        rec("matmul-0123-float32[8,8]", "b0 = get_block(\"C\")\n\tsplit\\x", 1.0 / 3.0, NULL),
        rec("w\x01\x1f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", NAN, "err: \"quoted\"\r\n"),
        rec("w", "t", 123456.789e-3, NULL),
    };
    rs[0].decisions = "sample_perfect_tile: [4, 8]";
    rs[2].compile_ms = NAN;
    for (size_t i = 0; i < 3; i++) OK(fx->ctx, tir_tune_db_add(fx->ctx, db, &rs[i], NULL));
    export_to(fx, db, out, 3);

    tir_tune_db *db2 = open_db(fx, other);
    int64_t added = -1, skipped = -1;
    OK(fx->ctx, import_from(fx, db2, out, &added, &skipped));
    assert_int_equal(added, 3);
    assert_int_equal(skipped, 0);
    export_to(fx, db2, again, 3);
    char *a = slurp(out), *b = slurp(again);
    assert_string_equal(a, b); /* every field, escapes and doubles survived */
    tir_tune_record best;
    OK(fx->ctx, tir_tune_db_best(fx->ctx, db2, rs[0].workload, &rs[0].target, &best));
    assert_string_equal(best.trace, rs[0].trace);
    assert_string_equal(best.decisions, rs[0].decisions);
    assert_true(best.median_ms == 1.0 / 3.0);
    /* Importing again adds nothing. */
    OK(fx->ctx, import_from(fx, db2, out, &added, &skipped));
    assert_int_equal(added, 0);
    assert_int_equal(skipped, 3);
    assert_int_equal(count_all(fx, db2), 3);
    free(a);
    free(b);
    tir_tune_db_close(db2);
    tir_tune_db_close(db);
}

#define GOOD_LINE(trace)                                                                   \
    "{\"workload\":\"w\",\"gpu\":\"NVIDIA H200\",\"arch\":\"sm_90\",\"driver\":13000,"     \
    "\"trace\":\"" trace "\",\"median_ms\":1.5,\"error\":null}\n"

static void test_jsonl_malformed(void **st) {
    fixture *fx = *st;
    char in[192];
    snprintf(in, sizeof in, "%s/in.jsonl", fx->dir);
    tir_tune_db *db = open_db(fx, fx->path);
    /* Two good lines and a blank one, then the bad line 4: nothing of the
     * file may stay. */
    static const struct {
        const char *line, *msg;
    } bad[] = {
        {"{\"workload\":\"w\",\"gpu\":\"g\",\"arch\":\"a\",\"driver\":1}\n", "missing key \"trace\""},
        {"{\"workload\":\"w\",\"gpu\":\"g\",\"arch\":\"a\",\"driver\":1,\"trace\":\"t\",\"x\":1}\n",
         "column 61: unknown key \"x\""},
        {"{\"workload\":1}\n", "expected a string for \"workload\""},
        {"{\"workload\":\"w\",\"workload\":\"w\"}\n", "repeated key \"workload\""},
        {"{\"workload\":\"w\\q\"}\n", "unknown escape"},
        {"{\"workload\":\"w\n", "column 15: control character in string"},
        {"{\"workload\":\"w", "unterminated string"},
        {"{\"workload\":\"w\"} x\n", "text after the object"},
        {"{\"driver\":1.5}\n", "expected an integer in range for \"driver\""},
        {"{\"median_ms\":01}\n", "malformed number for \"median_ms\""},
        {"{\"median_ms\":NaN}\n", "expected a value for \"median_ms\""},
        {"{\"trace\":null}\n", "null is not allowed for \"trace\""},
        {"{\"workload\":\"\\ud800x\"}\n", "surrogate"},
        {"[1]\n", "expected '{'"},
        {"{\"workload\":\"\",\"gpu\":\"g\",\"arch\":\"a\",\"driver\":1,\"trace\":\"t\"}\n",
         "import line 4: a record needs a workload"},
        {"{\"workload\":\"w\",\"gpu\":\"g\",\"arch\":\"a\",\"driver\":1,\"trace\":\"t\","
         "\"median_ms\":-1}\n",
         "import line 4: a record's median_ms is -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, GOOD_LINE("a") "\n" GOOD_LINE("b") "%s", bad[i].line);
        write_file(in, text);
        tir_status got = import_from(fx, db, in, NULL, NULL);
        const char *msg = tir_ctx_error(fx->ctx);
        if (got == TIR_OK || !strstr(msg, "line 4") || !strstr(msg, bad[i].msg))
            fail_msg("case %zu: %s \"%s\"; expected line 4 and \"%s\"", i, tir_status_name(got),
                     msg, bad[i].msg);
        assert_int_equal(count_all(fx, db), 0);
    }
    write_file(in, GOOD_LINE("a") "\n" GOOD_LINE("b"));
    int64_t added = 0;
    OK(fx->ctx, import_from(fx, db, in, &added, NULL));
    assert_int_equal(added, 2);
    tir_tune_db_close(db);
}

/* A measure is NAN (not measured) or finite and >= 0: a negative or -inf
 * median was the best of every query (and of the search's replay), and an
 * infinite one exported as null, so the file imported back had another
 * best. */
static void test_bad_measures(void **st) {
    fixture *fx = *st;
    tir_tune_db *db = open_db(fx, fx->path);
    static const struct {
        double median, gflops, compile;
        const char *msg;
    } bad[] = {
        {-1.0, NAN, NAN, "median_ms is -1"},
        {-INFINITY, NAN, NAN, "median_ms is -inf"},
        {INFINITY, NAN, NAN, "median_ms is inf"},
        {1.0, -2.0, NAN, "gflops is -2"},
        {1.0, NAN, INFINITY, "compile_ms is inf"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tir_tune_record r = rec("w", "t", bad[i].median, NULL);
        r.gflops = bad[i].gflops;
        r.compile_ms = bad[i].compile;
        FAILS(fx->ctx, TIR_ERR_INVALID_ARG, bad[i].msg, tir_tune_db_add(fx->ctx, db, &r, NULL));
    }
    assert_int_equal(count_all(fx, db), 0);
    /* Not measured, and a zero, are records. */
    tir_tune_record r = rec("w", "t", NAN, "failed");
    OK(fx->ctx, tir_tune_db_add(fx->ctx, db, &r, NULL));
    r = rec("w", "t0", 0.0, NULL);
    r.gflops = NAN; /* rec's 1 / 0 */
    OK(fx->ctx, tir_tune_db_add(fx->ctx, db, &r, NULL));
    assert_int_equal(count_all(fx, db), 2);
    tir_tune_db_close(db);
}

/* ------------------------------------------------ concurrency and kills */

/* A child's body: wait for a byte on `go` (if >= 0), open the file, add
 * `rows` records (or forever when rows < 0), writing the number committed
 * so far to fd (if >= 0) after each add and pausing `pause_us` between
 * adds (a tuner measures between them).  Exits 0 on success. */
static void child_writer(const char *path, int who, int rows, int fd, int go,
                         useconds_t pause_us) {
    char byte;
    if (go >= 0 && read(go, &byte, 1) != 1) _exit(6);
    tir_ctx *ctx = tir_ctx_create();
    tir_tune_db *db = NULL;
    if (!ctx || tir_tune_db_open(ctx, path, &db) != TIR_OK) {
        fprintf(stderr, "child %d: open: %s\n", who, ctx ? tir_ctx_error(ctx) : "no ctx");
        _exit(2);
    }
    int64_t start = 0;
    if (fd >= 0 && tir_tune_db_count(ctx, db, NULL, NULL, &start) != TIR_OK) _exit(3);
    for (int64_t i = start; rows < 0 || i < rows; i++) {
        char trace[64];
        snprintf(trace, sizeof trace, "writer %d row %lld", who, (long long)i);
        tir_tune_record r = rec("w", trace, 1.0 + (double)i, NULL);
        bool added = false;
        if (tir_tune_db_add(ctx, db, &r, &added) != TIR_OK || !added) {
            fprintf(stderr, "child %d: add %lld: %s\n", who, (long long)i, tir_ctx_error(ctx));
            _exit(4);
        }
        int64_t done = i + 1;
        if (fd >= 0 && write(fd, &done, sizeof done) != sizeof done) _exit(5);
        if (pause_us) usleep(pause_us);
    }
    tir_tune_db_close(db);
    tir_ctx_destroy(ctx);
    _exit(0);
}

typedef struct seen_rows {
    int rows;
    unsigned char *seen; /* [writer * rows + row] */
    bool bad;
    int prev, switches; /* changes of writer in the order added */
} seen_rows;

static bool mark_row(void *user, const tir_tune_record *r) {
    seen_rows *s = user;
    int who = -1;
    long long row = -1;
    if (sscanf(r->trace, "writer %d row %lld", &who, &row) != 2 || who < 0 || who > 1 ||
        row < 0 || row >= s->rows || s->seen[who * s->rows + row]++)
        s->bad = true;
    if (who != s->prev) s->switches++;
    s->prev = who;
    return true;
}

/* n child_writers (0 .. n-1) of `rows` rows each, pausing pause_us, all
 * released at once (they open the file together); each must exit 0. */
static void writers_together(const char *path, int n, int rows, useconds_t pause_us) {
    enum { MAXW = 16 };
    assert_true(n <= MAXW);
    pid_t pids[MAXW];
    int go[2];
    assert_int_equal(pipe(go), 0);
    for (int w = 0; w < n; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            close(go[1]);
            child_writer(path, w, rows, -1, go[0], pause_us);
        }
    }
    close(go[0]);
    for (int w = 0; w < n; w++) assert_int_equal(write(go[1], "g", 1), 1);
    close(go[1]);
    for (int w = 0; w < n; w++) {
        int status = 0;
        assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("%s: writer %d ended with status 0x%x", path, w, status);
    }
}

/* Two writers started together on one new file (path): every row of both
 * lands exactly once; returns how often the rows switch writer. */
static int two_writers_once(fixture *fx, const char *path) {
    enum { ROWS = 500 };
    /* Both open the new file at once: the schema is made once. */
    writers_together(path, 2, ROWS, 200);
    tir_tune_db *db = open_db(fx, path);
    OK(fx->ctx, tir_tune_db_check(fx->ctx, db));
    assert_int_equal(count_all(fx, db), 2 * ROWS);
    seen_rows s = {ROWS, calloc(2 * ROWS, 1), false, -1, 0};
    OK(fx->ctx, tir_tune_db_foreach(fx->ctx, db, NULL, NULL, mark_row, &s));
    assert_false(s.bad); /* each of the 1000 rows exactly once */
    free(s.seen);
    tir_tune_db_close(db);
    return s.switches - 1;
}

/* They must also have written at once (one's rows between the other's):
 * on a loaded machine (CI runs the ASan build's tests two at a time on two
 * cores) the scheduler may run one writer to its end first, which proves
 * nothing either way, so up to three attempts on new files; the rows'
 * integrity is checked in every attempt. */
static void test_two_writers(void **st) {
    fixture *fx = *st;
    int turns = 0;
    for (int attempt = 0; attempt < 3 && turns < 2; attempt++) {
        char path[160];
        snprintf(path, sizeof path, "%s/two%d.db", fx->dir, attempt);
        turns = two_writers_once(fx, path);
    }
    if (turns < 2) fail_msg("the writers took turns only %d times in 3 attempts", turns);
}

/* Eight tuners opening one new file at the same moment, ten times: each
 * opens (the WAL switch and the schema), adds 5 rows and closes; all
 * succeed and every row lands.  (CI once saw the second of two writers
 * fail with "setting WAL mode: database is locked": SQLite answers BUSY
 * at once, without the busy handler, when the switch could deadlock.) */
static void test_many_openers(void **st) {
    fixture *fx = *st;
    enum { KIDS = 8, ROWS = 5, ROUNDS = 10 };
    for (int round = 0; round < ROUNDS; round++) {
        char path[160];
        snprintf(path, sizeof path, "%s/many%d.db", fx->dir, round);
        writers_together(path, KIDS, ROWS, 0);
        tir_tune_db *db = open_db(fx, path);
        OK(fx->ctx, tir_tune_db_check(fx->ctx, db));
        assert_int_equal(count_all(fx, db), KIDS * ROWS);
        tir_tune_db_close(db);
    }
}

/* Reads the child's counts until it has reported `at_least` commits (or
 * died); returns the last one read. */
static int64_t read_counts(int fd, int64_t at_least) {
    int64_t last = -1, v;
    while (last < at_least && read(fd, &v, sizeof v) == (ssize_t)sizeof v) last = v;
    return last;
}

static int64_t drain_counts(int fd, int64_t last) {
    int64_t v;
    while (read(fd, &v, sizeof v) == (ssize_t)sizeof v) last = v;
    return last;
}

/* One round: a writer resumes from what is there; it is killed with
 * SIGKILL after `extra` more commits plus `delay_us`, in the middle of
 * whatever add it is running. */
static int64_t kill_round(fixture *fx, int64_t before, int64_t extra, useconds_t delay_us) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_writer(fx->path, 0, -1, fds[1], -1, 0);
    }
    close(fds[1]);
    int64_t last = read_counts(fds[0], before + extra);
    usleep(delay_us);
    kill(pid, SIGKILL);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    last = drain_counts(fds[0], last);
    close(fds[0]);
    assert_true(last >= before + extra);
    return last;
}

static void test_killed_writer(void **st) {
    fixture *fx = *st;
    int64_t committed = 0;
    static const useconds_t delays[] = {0, 150, 700, 2000, 5000};
    for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++) {
        int64_t reported = kill_round(fx, committed, 20, delays[i]);
        tir_tune_db *db = open_db(fx, fx->path);
        OK(fx->ctx, tir_tune_db_check(fx->ctx, db));
        int64_t n = count_all(fx, db);
        /* The kill may land between a commit and its report. */
        if (n != reported && n != reported + 1)
            fail_msg("round %zu: %lld rows, the writer reported %lld committed", i, (long long)n,
                     (long long)reported);
        seen_rows s = {(int)n, calloc((size_t)(2 * n), 1), false, -1, 0};
        OK(fx->ctx, tir_tune_db_foreach(fx->ctx, db, NULL, NULL, mark_row, &s));
        assert_false(s.bad); /* rows 0 .. n-1, each once: no gap, no torn row */
        free(s.seen);
        tir_tune_db_close(db);
        committed = n;
    }
}

/* ------------------------------------------------------------ apply_best */

/* A small real schedule of the matmul: tiles of 8x8, reduction inside. */
static void tile_matmul(tir_schedule *s, int64_t ti, int64_t tj) {
    tir_loop_rv l[16], i2[2], j2[2];
    assert_int_equal(sched_loops(s, "C", l), 3);
    SCHED_OK(s, tir_sched_split(s, l[0], 2, (int64_t[]){TIR_SPLIT_INFER, ti}, i2));
    SCHED_OK(s, tir_sched_split(s, l[1], 2, (int64_t[]){TIR_SPLIT_INFER, tj}, j2));
    SCHED_OK(s, tir_sched_reorder(s, 4, (tir_loop_rv[]){i2[0], j2[0], i2[1], j2[1]}));
}

static void test_apply_best(void **st) {
    fixture *fx = *st;
    tir_ctx *ctx = fx->ctx;
    const tir_prim_func *f = tir_def_matmul(ctx, 32, 32, 16, TIR_F32);
    const char *w = NULL;
    OK(ctx, tir_tune_workload_key(ctx, f, &w));
    tir_schedule *fast = sched_new(ctx, f), *slow = sched_new(ctx, f);
    tile_matmul(fast, 8, 8);
    tile_matmul(slow, 4, 16);
    tir_tune_db *db = open_db(fx, fx->path);
    tir_tune_record rs[] = {
        rec(w, tir_sched_trace_text(slow), 2.0, NULL),
        rec(w, tir_sched_trace_text(fast), 1.0, NULL),
        rec(w, "b0 = get_block(\"nope\")\n", 0.1, "schedule error"),
    };
    for (size_t i = 0; i < 3; i++) OK(ctx, tir_tune_db_add(ctx, db, &rs[i], NULL));

    tir_tune_target t = h200();
    tir_schedule *s = sched_new(ctx, f);
    tir_tune_record used;
    OK(ctx, tir_tune_apply_best(ctx, db, &t, s, &used));
    assert_string_equal(used.trace, tir_sched_trace_text(fast));
    assert_string_equal(tir_sched_trace_text(s), tir_sched_trace_text(fast));
    assert_true(tir_struct_equal(tir_sched_func(s), tir_sched_func(fast)));
    sched_check_equiv(ctx, f, tir_sched_func(s), 7);

    FAILS(ctx, TIR_ERR_INVALID_ARG, "fresh schedule", tir_tune_apply_best(ctx, db, &t, s, NULL));
    tir_schedule *fresh = sched_new(ctx, f);
    tir_tune_target other = t;
    other.driver_version = 1;
    FAILS(ctx, TIR_ERR_TUNE_NO_RECORD, "no error-free record",
          tir_tune_apply_best(ctx, db, &other, fresh, NULL));
    assert_int_equal(tir_sched_trace_len(fresh), 0);
    /* A best record whose trace no longer replays (a minitir whose
       primitives refused less wrote it) falls back to the next one... */
    tir_tune_record broken = rec(w, "b0 = get_block(\"gone\")\n", 0.01, NULL);
    OK(ctx, tir_tune_db_add(ctx, db, &broken, NULL));
    OK(ctx, tir_tune_apply_best(ctx, db, &t, fresh, &used));
    assert_string_equal(used.trace, tir_sched_trace_text(fast));
    assert_true(tir_struct_equal(tir_sched_func(fresh), tir_sched_func(fast)));
    tir_sched_destroy(fresh);
    /* ... and where none replays, the first's failure is the error and s
       stays as it was */
    const tir_prim_func *g = tir_def_matmul(ctx, 48, 32, 16, TIR_F32);
    const char *wg = NULL;
    OK(ctx, tir_tune_workload_key(ctx, g, &wg));
    tir_tune_record gone[] = {rec(wg, "b0 = get_block(\"gone\")\n", 0.01, NULL),
                              rec(wg, "b0 = get_block(\"lost\")\n", 0.02, NULL)};
    for (size_t i = 0; i < 2; i++) OK(ctx, tir_tune_db_add(ctx, db, &gone[i], NULL));
    fresh = sched_new(ctx, g);
    FAILS(ctx, TIR_ERR_SCHED_BLOCK_NOT_FOUND, "none of the 2 best records applies",
          tir_tune_apply_best(ctx, db, &t, fresh, NULL));
    assert_non_null(strstr(tir_ctx_error(ctx), "\"gone\""));
    assert_int_equal(tir_sched_trace_len(fresh), 0);
    assert_ptr_equal(tir_sched_func(fresh), g);
    /* Another workload's schedule finds nothing. */
    tir_schedule *big = sched_new(ctx, tir_def_matmul(ctx, 64, 32, 16, TIR_F32));
    FAILS(ctx, TIR_ERR_TUNE_NO_RECORD, "float32[64,16]", tir_tune_apply_best(ctx, db, &t, big, NULL));
    tir_sched_destroy(big);
    tir_sched_destroy(fresh);
    tir_sched_destroy(s);
    tir_sched_destroy(slow);
    tir_sched_destroy(fast);
    tir_tune_db_close(db);
}

/* A record whose trace samples without a written decision (imported or
 * edited by hand: replay then draws from the schedule's random state).
 * apply_best checks a record on a scratch replay before replaying it into
 * s; the scratch schedule must draw what s draws, else the check passes
 * on one draw and s takes another: here s's draw is a split factor of 0,
 * and the second replay failed the TIR_ASSERT that it cannot fail
 * (review of the twenty-fourth session). */
static void test_apply_best_undecided_sample(void **st) {
    fixture *fx = *st;
    tir_ctx *ctx = fx->ctx;
    const tir_prim_func *f = tir_def_matmul(ctx, 32, 32, 16, TIR_F32);
    const char *w = NULL;
    OK(ctx, tir_tune_workload_key(ctx, f, &w));
    /* the index a fresh schedule (the default seed) draws, and a seed
       that draws the other one */
    tir_value_rv v;
    int64_t pick_default = -1, x;
    tir_schedule *t = sched_new(ctx, f);
    SCHED_OK(t, tir_sched_sample_categorical(t, 2, (const int64_t[]){0, 1},
                                             (const double[]){0.5, 0.5}, 0, NULL, &v));
    OK(ctx, tir_sched_value(t, v, &pick_default));
    tir_sched_destroy(t);
    uint64_t seed = 0;
    for (uint64_t k = 1; k < 1000 && !seed; k++) {
        t = sched_new(ctx, f);
        tir_sched_seed(t, k);
        SCHED_OK(t, tir_sched_sample_categorical(t, 2, (const int64_t[]){0, 1},
                                                 (const double[]){0.5, 0.5}, 0, NULL, &v));
        OK(ctx, tir_sched_value(t, v, &x));
        if (x != pick_default) seed = k;
        tir_sched_destroy(t);
    }
    assert_true(seed != 0);
    /* the default seed's pick is a good factor (8), the other 0 */
    char trace[512];
    snprintf(trace, sizeof trace,
             "b0 = get_block(\"C\")\n"
             "[l1, l2, l3] = get_loops(b0)\n"
             "v4 = sample_categorical([%d, %d], [0.5, 0.5])\n"
             "v5 = sample_categorical([4], [1])\n"
             "[l6, l7] = split_rv(l1, [v5, v4])\n",
             pick_default == 0 ? 8 : 0, pick_default == 0 ? 0 : 8);
    tir_tune_db *db = open_db(fx, fx->path);
    tir_tune_record r = rec(w, trace, 1.0, NULL);
    OK(ctx, tir_tune_db_add(ctx, db, &r, NULL));
    tir_tune_target tg = h200();
    tir_schedule *s = sched_new(ctx, f);
    tir_sched_seed(s, seed);
    uint64_t before = tir_sched_rand_state(s);
    /* s draws the 0: the record does not apply, s stays as it was */
    FAILS(ctx, TIR_ERR_SCHED_NONPOSITIVE_FACTOR, "none of the 1 best records applies",
          tir_tune_apply_best(ctx, db, &tg, s, NULL));
    assert_int_equal(tir_sched_trace_len(s), 0);
    assert_ptr_equal(tir_sched_func(s), f);
    assert_true(tir_sched_rand_state(s) == before);
    tir_sched_destroy(s);
    /* a fresh schedule draws the 8: it applies */
    s = sched_new(ctx, f);
    OK(ctx, tir_tune_apply_best(ctx, db, &tg, s, NULL));
    assert_int_equal(tir_sched_trace_len(s), 5);
    sched_check_equiv(ctx, f, tir_sched_func(s), 7);
    tir_sched_destroy(s);
    tir_tune_db_close(db);
}

/* ----------------------------------------------------------- open errors */

static void test_open_errors(void **st) {
    fixture *fx = *st;
    char garbage[192];
    snprintf(garbage, sizeof garbage, "%s/garbage.db", fx->dir);
    write_file(garbage, "this is not an SQLite database, just some text long enough to have a "
                        "header's worth of bytes in it................................\n");
    tir_tune_db *db = NULL;
    FAILS(fx->ctx, TIR_ERR_IO, "not an SQLite database", tir_tune_db_open(fx->ctx, garbage, &db));
    assert_null(db);
    FAILS(fx->ctx, TIR_ERR_IO, "cannot open",
          tir_tune_db_open(fx->ctx, "/nonexistent-dir/x/tune.db", &db));
    /* A file of another schema version is refused, not rewritten. */
    db = open_db(fx, fx->path);
    tir_tune_db_close(db);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(fx->path, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    db = NULL;
    FAILS(fx->ctx, TIR_ERR_UNSUPPORTED, "schema version 2", tir_tune_db_open(fx->ctx, fx->path, &db));
    assert_null(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_workload_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_target_from_props, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_best_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jsonl_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jsonl_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_measures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_writers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_openers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_best, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_best_undecided_sample, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
