/* minitir/lower.h: from a scheduled function to a flat GPU kernel.  The
 * CPU SIMT simulator that runs such kernels is in minitir/sim.h.
 *
 * The lowered form is the contract in docs/lowered-ir.md: no blocks, 1-D
 * buffers, launch dimensions as thread-binding loops, shared/local buffers
 * as Allocate, barriers and async copies as intrinsic calls.
 */
#ifndef MINITIR_LOWER_H
#define MINITIR_LOWER_H

#include "minitir/ir.h"
#include "minitir/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- lowering */

/* Target limits and switches of the lowering pipeline (src/lower/pipeline.c
 * lists the passes; docs/lowering.md describes each).  The limits are
 * copied from a tir_target_limits (minitir/target.h). */
typedef struct tir_lower_opts {
    int max_threads_per_block;  /* product of threadIdx extents (1024) */
    int max_thread_extent[3];   /* threadIdx.x, y, z (1024, 1024, 64) */
    int64_t max_shared_bytes;   /* static shared memory per block (48 KiB) */
    int64_t max_local_bytes;    /* local arrays per thread (16 KiB) */
    /* Stop after the pass of this name (NULL: run all), for tests and
     * debugging; the result is then not a finished kernel. */
    const char *stop_after;
    /* Skip the static shared-memory race check (the last pass). */
    bool no_race_check;
} tir_lower_opts;

/* Fills o with the defaults: the limits of the default target (sm_90,
 * tir_target_default). */
TIR_API void tir_lower_opts_init(tir_lower_opts *o);
/* Fills o with the defaults and the limits lim (a target's, or a real
 * device's from tir_rt_device_limits). */
TIR_API void tir_lower_opts_init_target(tir_lower_opts *o, const tir_target_limits *lim);

/* Lowers a scheduled function to a kernel in the form of
 * docs/lowered-ir.md.  opts may be NULL (defaults).  On success sets
 * *kernel.  User errors (a schedule that cannot run on a GPU: work outside
 * thread bindings, inconsistent or too many threads, shared memory over the
 * limit, bad pipeline annotations, ...) return TIR_ERR_LOWER with a message
 * naming the loop, block or buffer and showing the marked IR.  The last
 * pass checks that the kernel has no shared-memory race (see
 * tir_lower_check_races); a kernel it refuses is a barrier placement bug.
 *
 * The environment variable TIR_DUMP=<pass>[,<pass>...] (or "all") prints
 * the IR after each named pass to stderr. */
TIR_API tir_status tir_lower(tir_ctx *ctx, const tir_prim_func *scheduled,
                             const tir_lower_opts *opts, const tir_prim_func **kernel);

/* The static shared-memory race check that ends tir_lower, on a lowered
 * kernel (e.g. one edited after lowering): TIR_ERR_LOWER when two accesses
 * to one shared buffer, one a write, may touch one element from different
 * threads with no syncthreads between them on some path (loop back edges
 * included); the message names the buffer and both statements.  Sound,
 * conservative: see docs/lowering.md (race_check). */
TIR_API tir_status tir_lower_check_races(tir_ctx *ctx, const tir_prim_func *kernel);

/* The passes in pipeline order: their number and names ("gpu_check",
 * "lower_init", ...). */
TIR_API int tir_lower_num_passes(void);
TIR_API const char *tir_lower_pass_name(int i);

#ifdef __cplusplus
}
#endif
#endif
