/* direct_check.h: the direct PTX emitter (src/codegen/cg_direct.c, no
 * LLVM) checked on the CPU, for the fuzzers: lowered kernels compiled by
 * it alone (TIR_CG_PIPELINE_DIRECT with direct_only, so that a kernel
 * outside its subset costs no LLVM compile) and run in the PTX interpreter
 * (ptx_interp.c), with a tally of the kernels it took and of its reasons
 * for the others.  Its serial loops are unrolled as LLVM's O3 would
 * (cg_direct.c, partial_count) in one set and all left rolled
 * (direct_all_loops) in the next, so that both kinds of loop code run. */
#ifndef MINITIR_TESTS_DIRECT_CHECK_H
#define MINITIR_TESTS_DIRECT_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "minitir/codegen.h"
#include "minitir/ir.h"

enum { DC_MAX_REASONS = 48 };

typedef struct dc_tally {
    long kernels, taken;   /* kernels compiled; taken by the direct emitter */
    long sets, sets_taken; /* kernel sets (cases); every kernel taken */
    long runs;             /* sets run in the PTX interpreter and compared */
    long errors;           /* codegen errors other than the emitter's refusal */
    int nreasons;
    struct {
        char text[120];
        long n;
    } reasons[DC_MAX_REASONS];
    long other_reasons; /* refusals past DC_MAX_REASONS distinct texts */
    bool rolled;        /* the next set: every loop rolled (direct_all_loops) */
    long sets_rolled;   /* sets compiled so */
} dc_tally;

/* Compiles the n lowered kernels with the direct emitter alone
 * (fma_contract as given; loops unrolled as LLVM would, or all rolled
 * where t->rolled, which then flips) into mods[0..n) and counts them in t
 * (a set).
 * Returns 1 when it took every kernel, 0 when it refused one (counted by
 * its reason; the later kernels are still compiled and counted), -1 on
 * another codegen error (the message in *err, which points into ctx). */
int dc_compile(tir_ctx *ctx, const tir_prim_func *const *kernels, int n, bool fma_contract,
               const tir_module **mods, dc_tally *t, const char **err);

/* Runs module m in the PTX interpreter at its launch dimensions with
 * args[0..m->nparams) (buffers: data and bytes[i]; m->params says which
 * are buffers; int32/int64 scalars: args[i].scalar).  Returns 0, or -1
 * with the message in err. */
int dc_run(tir_ctx *ctx, const tir_module *m, const tir_arg *args, const size_t *bytes, char *err,
           size_t errlen);

/* "K kernels, D direct (S of N sets whole, L with loops all rolled, R
 * run), F refused: n reason;
 * ... (the top `top` reasons)". */
void dc_tally_text(const dc_tally *t, int top, char *buf, size_t n);

#endif
