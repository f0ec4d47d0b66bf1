/* sched_check.h: checks every schedule primitive's tests use.
 *
 *   sched_check_roundtrip  the text trace replays on a fresh schedule of
 *                          the original function to a structurally equal
 *                          function and the same trace text; the trace
 *                          text parses back; the function prints and
 *                          parses back
 *   sched_check_equiv      the interpreter gives identical outputs for two
 *                          functions on the same random inputs
 *   SCHED_EXPECT_FAIL      a call fails with the given code, a message
 *                          naming the primitive (and, for precondition
 *                          failures, showing marked IR), and leaves the
 *                          function, every handle, the trace and the
 *                          random state unchanged
 *   sched_check_all        verify + roundtrip + equivalence with the
 *                          original function, after a successful step
 *
 * Each check has a bool form that writes the reason into a buffer (for the
 * fuzzer, which reports seeds) and a cmocka form that fails the test.
 * Later primitives (cache_read, compute_at, ...) use the same checks.
 */
#ifndef MINITIR_TESTS_SCHED_CHECK_H
#define MINITIR_TESTS_SCHED_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "minitir/schedule.h"

/* ------------------------------------------------------------ snapshots */

typedef struct sched_snap {
    const tir_prim_func *func;
    int nhandles;
    char *kinds;           /* heap */
    bool *stale;           /* heap */
    const tir_node **nodes; /* heap */
    const char *trace;     /* ctx-owned */
    int trace_len;
    uint64_t rng;          /* the sampling instructions' random state */
} sched_snap;

void sched_snap_take(tir_schedule *s, sched_snap *snap);
void sched_snap_free(sched_snap *snap);
/* True when s is exactly as in snap (same function pointer, handles,
 * trace); otherwise writes why.  Frees snap. */
bool sched_snap_same(tir_schedule *s, sched_snap *snap, char *why, size_t n);

/* Checks a finished call against the expectation of SCHED_EXPECT_FAIL;
 * writes why on a mismatch.  Frees snap. */
bool sched_fail_ok(tir_schedule *s, sched_snap *snap, tir_status got, tir_status want,
                   const char *prim, char *why, size_t n);

/* -------------------------------------------------------------- checks */

bool sched_roundtrip_ok(tir_schedule *s, char *why, size_t n);
/* f0 and f1 take the same parameters.  Buffers written by f0's blocks
 * start uninitialised (reading them before writing is an error), except
 * those whose old values f0 reads or may keep (sched_old_values_matter),
 * which start with random data like the inputs; every element of every
 * buffer is compared.  Scalar parameters take each of 1, 0, 2 and 3 (every
 * combination of them for up to two scalars; all the same value past
 * that), one run each: f0 must run without error at all of them. */
bool sched_equiv_ok(tir_ctx *ctx, const tir_prim_func *f0, const tir_prim_func *f1,
                    uint64_t seed, char *why, size_t n);
/* Bit p: f writes parameter p under a predicate, inside a loop or over an
 * iterator domain whose bounds are not constant (where an empty domain
 * leaves the old values), or reads it in a block with no init (an
 * accumulation into the old values). */
uint64_t sched_old_values_matter(const tir_prim_func *f);

/* cmocka forms (fail the current test with the reason). */
void sched_check_roundtrip(tir_schedule *s);
void sched_check_equiv(tir_ctx *ctx, const tir_prim_func *f0, const tir_prim_func *f1,
                       uint64_t seed);
/* tir_verify, roundtrip, and equivalence of the current function with the
 * original one on two seeds. */
void sched_check_all(tir_schedule *s);
void sched_expect_fail_(tir_schedule *s, sched_snap *snap, tir_status got, tir_status want,
                        const char *prim, const char *call, const char *file, int line);

#define SCHED_EXPECT_FAIL(s, want, prim, call)                                            \
    do {                                                                                  \
        sched_snap snap_;                                                                 \
        sched_snap_take((s), &snap_);                                                     \
        tir_status got_ = (call);                                                         \
        sched_expect_fail_((s), &snap_, got_, (want), (prim), #call, __FILE__, __LINE__); \
    } while (0)

/* Asserts a call succeeds, printing the ctx message if not. */
#define SCHED_OK(s, call)                                                                 \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK)                                                                \
            sched_fail_msg_(#call, tir_ctx_error(tir_sched_ctx(s)), __FILE__, __LINE__);  \
    } while (0)
void sched_fail_msg_(const char *call, const char *msg, const char *file, int line);

/* Expects the current function to print exactly as `golden`, and the
 * golden, parsed, to be structurally equal to it. */
void sched_expect_text(tir_schedule *s, const char *golden);

/* Test conveniences (fail the test on error). */
tir_schedule *sched_new(tir_ctx *ctx, const tir_prim_func *f);
/* The loops above block `name` into out, which must hold 16; returns how
 * many. */
int sched_loops(tir_schedule *s, const char *name, tir_loop_rv *out);
tir_block_rv sched_block(tir_schedule *s, const char *name);
const tir_for *sched_for(tir_schedule *s, tir_loop_rv l);
int64_t sched_extent(tir_schedule *s, tir_loop_rv l);

/* Deterministic PRNG for tests. */
uint64_t sched_rand(uint64_t *state);
/* A test input from the stream: a small integer in -3..3 (every sum order
 * of such values gives the same float), with a zero -0.0 half the time,
 * so that what a schedule does to the sign of a zero is compared too.
 * One draw of sched_rand. */
double sched_rand_value(uint64_t *rng);

#endif
