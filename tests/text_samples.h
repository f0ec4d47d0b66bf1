/* text_samples.h: functions built by hand with the IR constructors for the
 * printer, parser and fuzz tests.  Together they cover every construct the
 * text format has a spelling for. */
#ifndef MINITIR_TEXT_SAMPLES_H
#define MINITIR_TEXT_SAMPLES_H

#include "minitir/ir.h"

typedef const tir_prim_func *(*ts_builder)(tir_ctx *ctx);

/* C[i, j] += A[i, k] * B[k, j] over 128^3, the root block implicit. */
const tir_prim_func *ts_matmul(tir_ctx *ctx);
/* Blocks: explicit root with an allocation, remap mixed with explicit
 * iterators, non-zero domains, T.where, slices, init, annotations,
 * symbolic shapes with the scalar parameter declared after its use. */
const tir_prim_func *ts_blocks(tir_ctx *ctx);
/* A lowered kernel: no blocks; thread bindings, Allocate (both forms),
 * vector loads and stores, if/else, Let, Select, Cast, intrinsics. */
const tir_prim_func *ts_lowered(tir_ctx *ctx);
/* Every expression operator, precedence corners and special floats. */
const tir_prim_func *ts_exprs(tir_ctx *ctx);
/* Blocks but no root block. */
const tir_prim_func *ts_no_root(tir_ctx *ctx);
/* Name clashes, reserved words, invalid identifiers, odd function name. */
const tir_prim_func *ts_names(tir_ctx *ctx);
/* Shape variables defined by buffer parameters, strides, offsets, align. */
const tir_prim_func *ts_layouts(tir_ctx *ctx);

typedef struct ts_sample {
    const char *name;
    ts_builder build;
} ts_sample;
extern const ts_sample ts_samples[];
extern const int ts_nsamples;

#endif
