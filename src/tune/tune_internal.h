/* tune_internal.h: what the files of src/tune share: the database handle,
 * SQLite error and transaction helpers, the insert of one record (used by
 * tir_tune_db_add and by the import, which wraps many in one transaction)
 * and the record query behind best, top, foreach and export.  Not
 * installed.
 */
#ifndef MINITIR_TUNE_INTERNAL_H
#define MINITIR_TUNE_INTERNAL_H

#include <sqlite3.h>

#include "ir/ir_internal.h"
#include "minitir/tune.h"

struct tir_tune_db {
    sqlite3 *h;
    char *path; /* for messages */
};

/* Fails with TIR_ERR_TUNE_DB: "tune db <path>: <what>: <SQLite's message>". */
tir_status tune_fail(tir_ctx *ctx, tir_tune_db *db, const char *what);
/* Runs SQL without results (several statements are fine). */
tir_status tune_exec(tir_ctx *ctx, tir_tune_db *db, const char *sql);
/* BEGIN IMMEDIATE (takes the write lock now, waiting up to the busy
 * timeout, so that a transaction never fails half-way on a lock upgrade);
 * COMMIT; ROLLBACK (keeps the error already in ctx). */
tir_status tune_begin(tir_ctx *ctx, tir_tune_db *db);
tir_status tune_commit(tir_ctx *ctx, tir_tune_db *db);
void tune_rollback(tir_tune_db *db);

/* Checks what tir_tune_db_add requires of r; `where` prefixes the message
 * ("" or "line 3: "). */
tir_status tune_check_record(tir_ctx *ctx, const tir_tune_record *r, const char *where);
/* Inserts r inside the caller's transaction; *added is false for a
 * duplicate. */
tir_status tune_insert(tir_ctx *ctx, tir_tune_db *db, const tir_tune_record *r, bool *added);

/* Which records a query visits and in what order. */
typedef enum tune_order {
    TUNE_ALL_BY_ID,   /* every record, in the order added */
    TUNE_OK_BY_SPEED, /* error-free measured records, fastest first */
} tune_order;
/* Calls fn on the records of workload on target (NULL: any), at most
 * limit of them (-1: no limit). */
tir_status tune_query(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                      const tir_tune_target *target, tune_order order, int64_t limit,
                      tir_tune_record_fn fn, void *user);

/* One knob of a rule as a sampling instruction: its name (for messages)
 * and candidates. */
enum { TUNE_MAX_CANDIDATES = 8 };
typedef struct tune_knob {
    const char *name;
    const int64_t *v;
    int n; /* <= TUNE_MAX_CANDIDATES */
} tune_knob;
/* One sample_categorical per knob, in order, into got: decided as want's
 * values (an error naming a value that is not a candidate) or, with want
 * NULL, drawn from the schedule's random state. */
tir_status tune_sample_knobs(tir_schedule *s, int n, const tune_knob *knobs, const int64_t *want,
                             int64_t *got);
/* The index of buffer `bufname` among block b's reads (an error naming
 * the block when it does not read it). */
tir_status tune_read_index(tir_schedule *s, tir_block_rv b, const char *bufname, int *out);
/* The smallest power of two >= x (x >= 1). */
int64_t tune_pow2_ceil(int64_t x);
/* Whether c's A and B tile copies are whole rounds of 16-byte vectors
 * over its threads (space_tc.c; the tuner's validity and the default's
 * candidates share it). */
bool tune_tc_copies_whole(const tir_tc_config *c, int elem_bytes);

/* The tensor-core side of space.c (space_tc.c): whether t's kind and
 * operator go together (else a message in ctx), and the space. */
bool tune_tc_task_ok(tir_ctx *ctx, const tir_tune_task *t);
tir_status tune_tc_space_make(tir_ctx *ctx, const tir_tune_task *t, const tir_target_limits *lim,
                              tir_tune_space *out);

/* Whether every size knob of c (warps, lanes, thread tile, bk, vec,
 * splitk, pad) is within [1, TUNE_KNOB_MAX] ([0, ..] for pad), so that
 * their products fit an int (tiling.c).  A configuration parsed from a
 * record's decisions text can hold anything. */
#define TUNE_KNOB_MAX 4096
bool tune_knobs_in_range(const tir_tile_config *c);
/* The same for the tensor-core rule's knobs (tiling_tc.c): the tiles and
 * warps in [1, TUNE_KNOB_MAX], stages in [1, 64], pad in
 * [0, TUNE_KNOB_MAX], splitk in [0, 65535] (what the text takes). */
bool tune_tc_knobs_in_range(const tir_tc_config *c);
/* Whether every number in a configuration's text has at most 9 digits,
 * so that sscanf's %d, undefined in C for a value past INT_MAX, reads it
 * exactly; the knobs' ranges are checked after (space.c). */
bool tune_text_numbers_fit(const char *text);

/* The tiling rules (tiling.c, tiling_tc.c): their hook, and CALL, which
 * returns a failing schedule call's status and reports a successful one
 * to the hook (a function with `s`, `hook` and `user` in scope). */
typedef void (*hook_fn)(void *user, tir_schedule *s, const char *call);

/* Binds the block loops bi (rows) and bj (columns) to blockIdx.y and x,
 * swizzled in groups of 8 block rows where `swizzle` and the grid is large
 * enough (tiling.c). */
/* Split-K (tiling.c, shared with the tensor-core rule): k split into
 * slices of whole bk tiles and the slice loop rfactored (*rf the C_rf
 * block, *kz its slice loop); and the write-back C = sum of the slices,
 * over blocks of `threads` threads with any elementwise epilogue. */
tir_status tune_rfactor_k(tir_schedule *s, int splitk, int bk, tir_block_rv c, tir_block_rv *rf,
                          tir_loop_rv *kz, hook_fn hook, void *user);
tir_status tune_split_write_back(tir_schedule *s, int splitk, int threads, tir_block_rv c,
                                 hook_fn hook, void *user);
tir_status tune_bind_blocks(tir_schedule *s, bool swizzle, tir_loop_rv bi, tir_loop_rv bj,
                            hook_fn hook, void *user);

#define CALL(call)                                                                        \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) return st_;                                                    \
        if (hook) hook(user, s, #call);                                                   \
    } while (0)

#endif
