/* expr_gen.h: random elementwise functions for differential testing of
 * what an expression means: the interpreter, the lowering passes (the
 * simplifier among them), the SIMT simulator, codegen through LLVM on the
 * host and PTX on the GPU must all compute the same bits.
 *
 * A case is Y[i] = e(X0[i], X1[i], ...) over 64 elements (a quarter of them
 * `if c: Y[i] = e else: Y[i] = e2`; with EG_GATHER, half of the cases
 * read inputs at random index expressions instead of i: floor and
 * truncated division and modulo by constants of either sign, products,
 * min/max and selects over the block, thread and lane variables, taken
 * into [0, 64) by a floormod where its bounds do not prove it in range;
 * a third of those store at Y[(a i + c) mod 64], a odd: a permutation;
 * with EG_REDUCE, a quarter of the cases are reductions instead, see
 * eg_case.reduce, with EG_LOCALS another quarter work on a local array,
 * see eg_case.locals, and with EG_SCHED another quarter are scheduled, see
 * eg_case.scheduled),
 * with e a random
 * tree over every dtype (bool, int8, uint8, int32, int64, float16,
 * bfloat16, float32, float64) and every expression kind the IR has
 * (arithmetic, floor and truncated division, min/max, comparisons,
 * and/or/not, select, casts, let, sqrt/fabs/fma).  The tree is built so
 * that nothing in it is undefined by docs/lowered-ir.md for the inputs the
 * case draws: signed arithmetic is kept inside its dtype by interval
 * bounds, divisors are never 0 (nor -1 under the dtype's minimum), float to
 * int casts see only values in range.  Inputs include the special values
 * (±0, ±inf, NaN, subnormals, the integer extremes).
 */
#ifndef MINITIR_TEST_EXPR_GEN_H
#define MINITIR_TEST_EXPR_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "minitir/ir.h"

enum { EG_MAX_IN = 4, EG_N = 64 };

typedef struct eg_case {
    const tir_prim_func *func; /* params X0..X{nin-1}, then Y */
    int nin;
    tir_dtype in_t[EG_MAX_IN];
    tir_dtype out_t;
    bool vector; /* the element loop is a vectorized loop of 4 */
    /* The function has a float min or max: the sign of a zero result is
     * not compared, nor that of an infinity (x / ±0).  min/max of zeros of both signs may give either; the
     * generator adds +0 after each, but LLVM drops that add where it proves
     * select(a < b, a, b) is no -0, and NVPTX then selects PTX min, which
     * gives -0 for min(-0, +0) (docs/lowered-ir.md). */
    bool zero_sign_free;
    bool branch; /* the store is under if/else on a random condition */
    bool gather; /* some input is read at a random index expression */
    /* EG_REDUCE: Y[m] = reduce_k e(X0[m K + k], ...) with nout = M
     * outputs; the interpreter runs ref (as TE defines it), the rest func
     * (scheduled); func is NULL when the schedule failed (sched_error) */
    bool reduce;
    /* EG_LOCALS: a thread's local array written and read by random
     * statements (constant and variable indices, branches, loops, vectors),
     * then stored to Y */
    bool locals;
    /* EG_SCHED: Y[i] = e(X0[i], ...) defined through TE (ref) and
     * scheduled (func): split/bind, vectorize or unroll, input caches in
     * registers or shared memory, the output through a register.  Here a
     * schedule call that refuses (func NULL, sched_error) and a lowering
     * that refuses are counted as refused, not as failures. */
    bool scheduled;
    int nout; /* output elements: EG_N, or M */
    const tir_prim_func *ref;
    const char *sched_error;
    void *in[EG_MAX_IN];
} eg_case;

/* eg_make's flags.  EG_GATHER draws the random input indices, from a
 * stream of their own: a case built with it has the same expression tree
 * as without, so cases found before it existed replay unchanged (flags 0). */
enum { EG_GATHER = 1, EG_REDUCE = 2, EG_LOCALS = 4, EG_SCHED = 8 };
/* How many cases of each kind a run drew, for its summary line. */
typedef struct eg_tally {
    long gathered, reduced, localized, scheduled;
} eg_tally;
void eg_tally_add(eg_tally *t, const eg_case *c);
/* "N with random input indices, N reductions, N local arrays, N scheduled" */
void eg_tally_text(const eg_tally *t, char *buf, size_t n);

/* Builds case `index` of seed `seed` in ctx (deterministic). */
void eg_make(tir_ctx *ctx, uint64_t seed, uint64_t index, unsigned flags, eg_case *c);
void eg_free(eg_case *c);
/* Whether any value of the case is bfloat16. */
bool eg_uses_bf16(const eg_case *c);
/* Zeroed memory aligned as global buffers are by contract (64 bytes). */
void *eg_alloc(size_t bytes);
/* Bytes per element of t. */
int eg_bytes(tir_dtype t);
/* Index of the first element of c's output where a and b differ (floats:
 * bit for bit, any NaN equal to any NaN; see zero_sign_free), or -1. */
int eg_diff(const eg_case *c, const void *a, const void *b, int n);
/* Appends element i of data (dtype t) as text. */
void eg_show(char *buf, size_t n, tir_dtype t, const void *data, int i);
/* Prints the case's inputs at element i and the three results to stdout. */
void eg_report(const eg_case *c, int i, int nres, const char *const *names,
               void *const *outs);

/* A case that once failed: replayed on the host always, on the GPU where
 * gpu is true. */
typedef struct eg_regression {
    uint64_t seed, index;
    bool gpu;
    unsigned flags; /* eg_make's (0 for cases found before EG_GATHER) */
} eg_regression;
extern const eg_regression eg_regressions[];
extern const int eg_nregressions;

#endif
