/* te_internal.h: TE entry points that the public API does not expose:
 * computes whose axes carry chosen names (the ready definitions use them so
 * that conv2d reads "n, o, y, x, rc, ry, rx" instead of "i0, i1, ...").
 * Not installed.
 */
#ifndef MINITIR_TE_INTERNAL_H
#define MINITIR_TE_INTERNAL_H

#include "minitir/ir.h"

/* Like tir_te_compute / tir_te_reduce, with loop variable names for the
 * spatial axes (names[0..ndim)) and the reduce axes (rnames[0..nraxes));
 * a NULL array means the default names.  Block iter vars are the names
 * with a "v" in front. */
tir_te_tensor *ir_te_compute_named(tir_ctx *ctx, const char *name, int ndim,
                                   const int64_t *shape, const char *const *names,
                                   tir_te_fcompute f, void *user);
tir_te_tensor *ir_te_reduce_named(tir_ctx *ctx, const char *name, int ndim,
                                  const int64_t *shape, const char *const *names,
                                  tir_te_reducer r, int nraxes, const int64_t *rextents,
                                  const char *const *rnames, tir_te_fcompute f, void *user);

/* A constant of dtype t with value v: 0/1 for bool (v != 0), the value
 * converted for integers and floats. */
const tir_expr *ir_te_const(tir_ctx *ctx, tir_dtype t, double v);
/* The identity of reducer r in dtype t: 0 for sum, the lowest finite value
 * for max and the highest for min (false / true for bool). */
const tir_expr *ir_te_identity(tir_ctx *ctx, tir_te_reducer r, tir_dtype t);
/* The combination step of reducer r: acc + v (Or for bool), max, min. */
const tir_expr *ir_te_combine(tir_ctx *ctx, tir_te_reducer r, const tir_expr *acc,
                              const tir_expr *v);

#endif
