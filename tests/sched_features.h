/* sched_features.h: what a user writes around a definition's blocks that
 * the ready definitions never show, added to one block of a definition so
 * that the schedule fuzzer draws it (thirty-third session, helper h64):
 *
 *   - a predicate, T.where(...): a condition on a new scalar parameter n
 *     (n > c), a parity or a range of one of the block's loops
 *     (i % 2 == p, i < c), or two of them joined by `and`;
 *   - a reduce domain that may be empty: a reduce loop's extent (and its
 *     iterator's domain) replaced by n, or by a spatial loop of the
 *     block, `for k in range(i)` (a triangle whose row 0 is empty);
 *   - an accumulation without init that reads the output's old values:
 *     a reduction's init dropped (C += A B), or an elementwise store
 *     X[...] = v turned into X[...] = X[...] + v.
 *
 * The block's outputs become parameters (an allocated intermediate is
 * promoted) so that what the block leaves unwritten or reads first is
 * the caller's data, which sched_equiv_ok initialises; the new scalar n
 * comes last.  Every read stays in bounds for n in 0..3 (the values
 * sched_equiv_ok runs a scalar at): n bounds a reduce loop only where its
 * extent is 3 or more.
 */
#ifndef MINITIR_TESTS_SCHED_FEATURES_H
#define MINITIR_TESTS_SCHED_FEATURES_H

#include <stdint.h>

#include "minitir/ir.h"

/* What sched_add_features added (bits, for the fuzzer's counts). */
enum {
    SCHED_FEAT_PRED = 1,       /* a predicate */
    SCHED_FEAT_SCALAR_EXT = 2, /* a reduce extent n */
    SCHED_FEAT_TRIANGLE = 4,   /* a reduce extent i (or min(i, K)) */
    SCHED_FEAT_ACCUMULATE = 8, /* an accumulation without init */
    SCHED_FEAT_PROMOTED = 16,  /* an intermediate became a parameter */
};

/* f with some of the features above on one of its blocks, drawn from
 * *rng; *what gets the bits.  f itself (and *what 0) when no block can
 * take any; NULL, with the ctx's message, where the new function does
 * not verify (a bug of this generator). */
const tir_prim_func *sched_add_features(tir_ctx *ctx, const tir_prim_func *f, uint64_t *rng,
                                        unsigned *what);

#endif
