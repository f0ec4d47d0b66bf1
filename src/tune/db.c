/* db.c: opening the tuning database, its schema, and adding records.
 *
 * Crash and concurrency safety come from SQLite, set up so that it holds:
 * WAL journal (readers never block the writer; a commit is one append to
 * the log), synchronous=FULL (a commit is on disk before add returns, so
 * even a power cut loses nothing committed), a busy timeout (a second
 * writer waits instead of failing), and every write in a BEGIN IMMEDIATE
 * transaction (the write lock is taken up front; a deferred transaction
 * that upgrades its lock can fail with SQLITE_BUSY without waiting).  A
 * process killed mid-add leaves an uncommitted tail in the log, which the
 * next opener ignores.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tune_internal.h"

#define SCHEMA_VERSION "1"
#define BUSY_TIMEOUT_MS 30000

/* Each table's unique key makes re-adding and re-importing a no-op. */
static const char *const schema_sql =
    "CREATE TABLE IF NOT EXISTS workload("
    "  id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS target("
    "  id INTEGER PRIMARY KEY, gpu TEXT NOT NULL, arch TEXT NOT NULL,"
    "  driver INTEGER NOT NULL, UNIQUE(gpu, arch, driver));"
    "CREATE TABLE IF NOT EXISTS record("
    "  id INTEGER PRIMARY KEY,"
    "  workload_id INTEGER NOT NULL REFERENCES workload(id),"
    "  target_id INTEGER NOT NULL REFERENCES target(id),"
    "  trace TEXT NOT NULL, decisions TEXT NOT NULL DEFAULT '',"
    "  median_ms REAL, gflops REAL, error TEXT, compile_ms REAL,"
    "  timestamp INTEGER NOT NULL,"
    "  UNIQUE(workload_id, target_id, trace, decisions));"
    "CREATE INDEX IF NOT EXISTS record_speed"
    "  ON record(workload_id, target_id, median_ms) WHERE error IS NULL;";

tir_status tune_fail(tir_ctx *ctx, tir_tune_db *db, const char *what) {
    return tir_ctx_fail(ctx, TIR_ERR_TUNE_DB, "tune db %s: %s: %s", db->path, what,
                        sqlite3_errmsg(db->h));
}

tir_status tune_exec(tir_ctx *ctx, tir_tune_db *db, const char *sql) {
    if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK) return tune_fail(ctx, db, sql);
    return TIR_OK;
}

tir_status tune_begin(tir_ctx *ctx, tir_tune_db *db) {
    return tune_exec(ctx, db, "BEGIN IMMEDIATE");
}

tir_status tune_commit(tir_ctx *ctx, tir_tune_db *db) {
    tir_status st = tune_exec(ctx, db, "COMMIT");
    if (st != TIR_OK) tune_rollback(db);
    return st;
}

void tune_rollback(tir_tune_db *db) {
    /* Fails harmlessly when SQLite already rolled back (after SQLITE_FULL,
     * for one): there is then nothing to undo. */
    sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

/* The schema version stored in meta (inserted if the file is new). */
static tir_status check_version(tir_ctx *ctx, tir_tune_db *db) {
    tir_status st = tune_exec(ctx, db,
                              "CREATE TABLE IF NOT EXISTS meta("
                              "  key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                              "INSERT OR IGNORE INTO meta VALUES('schema_version', '" SCHEMA_VERSION
                              "');");
    if (st != TIR_OK) return st;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &q,
                           NULL) != SQLITE_OK)
        return tune_fail(ctx, db, "reading the schema version");
    st = TIR_OK;
    if (sqlite3_step(q) != SQLITE_ROW)
        st = tune_fail(ctx, db, "reading the schema version");
    else if (strcmp((const char *)sqlite3_column_text(q, 0), SCHEMA_VERSION) != 0)
        st = tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED,
                          "tune db %s: schema version %s; this minitir reads version " SCHEMA_VERSION,
                          db->path, (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return st;
}

/* PRAGMA journal_mode=WAL: switching a file to WAL takes an exclusive
 * lock, and when several connections open a new file at once SQLite
 * answers SQLITE_BUSY at once, without calling the busy handler, where
 * waiting could deadlock (CI saw the second of two tuners fail so;
 * test_many_openers: eight at once).  So the switch itself is retried
 * every 10 ms, up to the busy timeout. */
static int set_wal(tir_tune_db *db) {
    for (int waited = 0;; waited += 10) {
        int rc = sqlite3_exec(db->h, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited >= BUSY_TIMEOUT_MS) return rc;
        sqlite3_sleep(10);
    }
}

/* Connection settings, then the schema in one transaction (two processes
 * opening a new file at once: the second waits, then finds the tables). */
static tir_status setup(tir_ctx *ctx, tir_tune_db *db) {
    sqlite3_busy_timeout(db->h, BUSY_TIMEOUT_MS);
    int rc = set_wal(db);
    if (rc == SQLITE_NOTADB)
        return tir_ctx_fail(ctx, TIR_ERR_IO, "tune db %s: not an SQLite database", db->path);
    if (rc != SQLITE_OK) return tune_fail(ctx, db, "setting WAL mode");
    tir_status st = tune_exec(ctx, db, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON");
    if (st == TIR_OK) st = tune_begin(ctx, db);
    if (st != TIR_OK) return st;
    st = check_version(ctx, db);
    if (st == TIR_OK) st = tune_exec(ctx, db, schema_sql);
    if (st != TIR_OK) {
        tune_rollback(db);
        return st;
    }
    return tune_commit(ctx, db);
}

tir_status tir_tune_db_open(tir_ctx *ctx, const char *path, tir_tune_db **out) {
    if (!path || !out) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune db: no path");
    *out = NULL;
    tir_tune_db *db = calloc(1, sizeof *db);
    char *p = strdup(path);
    if (!db || !p) {
        free(db);
        free(p);
        return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tune db %s: out of memory", path);
    }
    db->path = p;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    tir_status st = TIR_OK;
    if (sqlite3_open_v2(path, &db->h, flags, NULL) != SQLITE_OK)
        st = tir_ctx_fail(ctx, TIR_ERR_IO, "tune db %s: cannot open: %s", path,
                          db->h ? sqlite3_errmsg(db->h) : "out of memory");
    else
        st = setup(ctx, db);
    if (st != TIR_OK) {
        tir_tune_db_close(db);
        return st;
    }
    *out = db;
    return TIR_OK;
}

void tir_tune_db_close(tir_tune_db *db) {
    if (!db) return;
    sqlite3_close(db->h); /* NULL is fine; no statement outlives a call */
    free(db->path);
    free(db);
}

tir_status tir_tune_db_check(tir_ctx *ctx, tir_tune_db *db) {
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->h, "PRAGMA integrity_check", -1, &q, NULL) != SQLITE_OK)
        return tune_fail(ctx, db, "integrity check");
    tir_status st = TIR_OK;
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW)
        st = tune_fail(ctx, db, "integrity check");
    else if (strcmp((const char *)sqlite3_column_text(q, 0), "ok") != 0)
        st = tir_ctx_fail(ctx, TIR_ERR_TUNE_DB, "tune db %s: integrity check: %s", db->path,
                          (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return st;
}

/* ------------------------------------------------------------------ add */

/* Each measure is NAN (not measured) or finite and >= 0.  A negative or
 * -inf median would be the best of every query and of a search's replay,
 * and an infinite measure is written null by the export, so the file
 * imported back would rank its records otherwise. */
static tir_status check_measures(tir_ctx *ctx, const tir_tune_record *r, const char *where) {
    const struct {
        const char *name;
        double v;
    } m[] = {{"median_ms", r->median_ms}, {"gflops", r->gflops}, {"compile_ms", r->compile_ms}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!isnan(m[i].v) && (isinf(m[i].v) || m[i].v < 0))
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "tune db: %sa record's %s is %g; a measure is finite and >= 0 "
                                "(NAN: not measured)",
                                where, m[i].name, m[i].v);
    return TIR_OK;
}

tir_status tune_check_record(tir_ctx *ctx, const tir_tune_record *r, const char *where) {
    const char *missing = !r                          ? "record"
                          : !r->workload || !*r->workload ? "workload"
                          : !r->trace || !*r->trace   ? "trace"
                          : !r->target.gpu[0]         ? "target GPU name"
                          : !r->target.arch[0]        ? "target arch"
                                                      : NULL;
    if (missing)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune db: %sa record needs a %s", where,
                            missing);
    return check_measures(ctx, r, where);
}

/* A workload's or target's key columns: one string, or two and an int. */
typedef struct key_cols {
    const char *a, *b;
    int64_t c;
    int n;
} key_cols;

static void bind_key(sqlite3_stmt *q, const key_cols *k) {
    sqlite3_bind_text(q, 1, k->a, -1, SQLITE_STATIC);
    if (k->n < 3) return;
    sqlite3_bind_text(q, 2, k->b, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, k->c);
}

/* Runs `sql` with the key bound; *id (if not NULL) gets the first column
 * of the row it returns. */
static tir_status run_key(tir_ctx *ctx, tir_tune_db *db, const char *sql, const key_cols *k,
                          int64_t *id) {
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, &q, NULL) != SQLITE_OK) return tune_fail(ctx, db, sql);
    bind_key(q, k);
    int rc = sqlite3_step(q);
    tir_status st = TIR_OK;
    if (id && rc == SQLITE_ROW)
        *id = sqlite3_column_int64(q, 0);
    else if (rc != (id ? SQLITE_ROW : SQLITE_DONE))
        st = tune_fail(ctx, db, sql);
    sqlite3_finalize(q);
    return st;
}

/* The id of a workload or target row, inserting it if new. */
static tir_status key_id(tir_ctx *ctx, tir_tune_db *db, bool target, const key_cols *k,
                         int64_t *id) {
    const char *ins = target ? "INSERT OR IGNORE INTO target(gpu, arch, driver) VALUES(?1, ?2, ?3)"
                             : "INSERT OR IGNORE INTO workload(key) VALUES(?1)";
    const char *sel = target ? "SELECT id FROM target WHERE gpu = ?1 AND arch = ?2 AND driver = ?3"
                             : "SELECT id FROM workload WHERE key = ?1";
    tir_status st = run_key(ctx, db, ins, k, NULL);
    return st != TIR_OK ? st : run_key(ctx, db, sel, k, id);
}

/* NAN is "not measured": SQL NULL. */
static void bind_measure(sqlite3_stmt *q, int i, double v) {
    if (isnan(v))
        sqlite3_bind_null(q, i);
    else
        sqlite3_bind_double(q, i, v);
}

static void bind_record(sqlite3_stmt *q, int64_t wid, int64_t tid, const tir_tune_record *r) {
    sqlite3_bind_int64(q, 1, wid);
    sqlite3_bind_int64(q, 2, tid);
    sqlite3_bind_text(q, 3, r->trace, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, r->decisions ? r->decisions : "", -1, SQLITE_STATIC);
    bind_measure(q, 5, r->median_ms);
    bind_measure(q, 6, r->gflops);
    if (r->error)
        sqlite3_bind_text(q, 7, r->error, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 7);
    bind_measure(q, 8, r->compile_ms);
    sqlite3_bind_int64(q, 9, r->timestamp ? r->timestamp : (int64_t)time(NULL));
}

tir_status tune_insert(tir_ctx *ctx, tir_tune_db *db, const tir_tune_record *r, bool *added) {
    key_cols wk = {r->workload, NULL, 0, 1};
    key_cols tk = {r->target.gpu, r->target.arch, r->target.driver_version, 3};
    int64_t wid = 0, tid = 0;
    tir_status st = key_id(ctx, db, false, &wk, &wid);
    if (st == TIR_OK) st = key_id(ctx, db, true, &tk, &tid);
    if (st != TIR_OK) return st;
    static const char *const sql =
        "INSERT OR IGNORE INTO record(workload_id, target_id, trace, decisions, median_ms,"
        " gflops, error, compile_ms, timestamp) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, &q, NULL) != SQLITE_OK)
        return tune_fail(ctx, db, "adding a record");
    bind_record(q, wid, tid, r);
    if (sqlite3_step(q) != SQLITE_DONE)
        st = tune_fail(ctx, db, "adding a record");
    else if (added)
        *added = sqlite3_changes(db->h) > 0;
    sqlite3_finalize(q);
    return st;
}

tir_status tir_tune_db_add(tir_ctx *ctx, tir_tune_db *db, const tir_tune_record *r,
                           bool *added) {
    tir_status st = tune_check_record(ctx, r, "");
    if (st == TIR_OK) st = tune_begin(ctx, db);
    if (st != TIR_OK) return st;
    st = tune_insert(ctx, db, r, added);
    if (st != TIR_OK) {
        tune_rollback(db);
        return st;
    }
    return tune_commit(ctx, db);
}
