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
    /* Shared memory per block: the target's opt-in maximum
     * (max_shared_dynamic, 227 KiB on sm_90).  Codegen places a kernel
     * over max_shared_static (48 KiB) in dynamic shared memory. */
    int64_t max_shared_bytes;
    int64_t max_local_bytes;    /* local arrays per thread (16 KiB) */
    /* Stop after the pass of this name (NULL: run all), for tests and
     * debugging; the result is then not a finished kernel. */
    const char *stop_after;
    /* Skip the static race check (the last pass: shared buffers, and the
     * global buffers a kernel both writes and reads). */
    bool no_race_check;
    /* Keep the global->shared copies of a software pipeline without
     * "software_pipeline_async_stages" synchronous.  By default a stage
     * (below the last) made only of such copies, all of which cp.async can
     * do, runs asynchronously as if the annotation named it: a synchronous
     * pipelined copy hides no latency within a warp (docs/lowering.md,
     * sw_pipeline). */
    bool sync_pipeline_copies;
    /* Ignore "software_pipeline_guard_tail": peel every pipeline's
     * epilogue (the last S time steps emitted after the loop, the compute
     * of the last iterations a second copy of the body), for A/B
     * comparisons (docs/lowering.md, sw_pipeline). */
    bool pipeline_peel_tail;
    /* Keep a software pipeline's async copies of a time step before its
     * tensor-core compute instead of spreading them over the mma_sync
     * (the interleave pass, docs/lowering.md), for A/B comparisons. */
    bool no_copy_interleave;
    /* Keep each k tile's first fragment loads after the tile's barrier
     * instead of before the previous tile's last mma_sync (the
     * tile_prefetch pass, docs/lowering.md), for A/B comparisons. */
    bool no_tile_prefetch;
    /* Write each 16x8 float32 accumulator tile with one 16-byte store per
     * lane instead of two 8-byte ones: lanes t and t ^ 1 swap half their
     * registers with two shfl_xor, then lane l writes 4 consecutive floats
     * of row l / 4 (even l % 4) or l / 4 + 8 (odd).  Only for a frag_store
     * whose tile lies inside D for every block (no clipping), D float32
     * with rows a multiple of 4 elements apart and the tile column a
     * multiple of 4; any other frag_store keeps the per-lane stores
     * (lower_fragments, docs/tensor-cores.md).  Off by default: not yet
     * measured on the GPU. */
    bool vector_acc_store;
    /* Load TF32 A fragments (16x8 float32 tiles) with one per-lane
     * ld.shared per register instead of one ldmatrix.x4 (their four 8x4
     * quarters read as 8x8 16-bit matrices), for A/B comparisons
     * (lower_fragments, docs/tensor-cores.md).  No ldmatrix then reads A's
     * shared tile, so flatten does not swizzle it: schedule it padded
     * (tir_tc_config.no_smem_swizzle; tirc --tc-off ldm32 does). */
    bool no_ldmatrix_tf32;
    /* Keep TF32 mma_sync's operands as the schedule wrote them instead of
     * swapping them (C^T = B^T A^T: 16 columns of B as the instruction's A
     * operand, two ld.shared.v2 per 16 columns and k step instead of four
     * ld.shared.b32; A's tile as its B operand, by ldmatrix as before),
     * for A/B comparisons (lower_fragments, docs/tensor-cores.md). */
    bool no_tf32_swap;
    /* Keep the row-major layout of unpadded shared tiles that ldmatrix
     * reads instead of swizzling their 16-byte chunks within each 128-byte
     * row segment by the row (flatten, docs/lowering.md), for A/B
     * comparisons. */
    bool no_smem_swizzle;
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

/* ------------------------------------------------------- several kernels */

/* The kernels a scheduled function lowers to, in launch order, and the
 * workspace they share.  Arrays are owned by the ctx. */
typedef struct tir_kernel_set {
    int nkernels;
    const tir_prim_func *const *kernels;
    /* The global buffers the function allocates in its root block (e.g.
     * rfactor's partial sums): the caller allocates each (dense, its
     * constant shape) and passes them to every kernel as extra buffer
     * parameters after the function's own, in this order.  Their contents
     * carry over from one kernel to the next; nothing initialises them. */
    int nworkspace;
    const tir_buffer *const *workspace;
} tir_kernel_set;

/* Lowers a scheduled function that may need several kernels: the
 * top-level statements of its root block run in order, and one that loads
 * a workspace buffer stored by an earlier statement of the current kernel
 * starts the next kernel (the end of a launch is the only grid-wide
 * barrier; kernels of one stream run in order).  Each kernel is lowered
 * by tir_lower (its errors, prefixed with the kernel and its statements)
 * and named <name>_k<i> when there are several.  A function without global
 * intermediates gives one kernel, tir_lower's, and no workspace.  opts may
 * be NULL. */
TIR_API tir_status tir_lower_kernels(tir_ctx *ctx, const tir_prim_func *scheduled,
                                     const tir_lower_opts *opts, tir_kernel_set *out);

/* The static shared-memory race check that ends tir_lower, on a lowered
 * kernel (e.g. one edited after lowering): TIR_ERR_LOWER when two accesses
 * to one shared buffer, one a write, may touch one element from different
 * threads with no syncthreads between them on some path (loop back edges
 * included); the message names the buffer and both statements.  Sound,
 * conservative: see docs/lowering.md (race_check).  Alone, it checks
 * shared buffers only; within tir_lower it also checks the global buffers
 * global_share lists (written and read by the kernel's threads). */
TIR_API tir_status tir_lower_check_races(tir_ctx *ctx, const tir_prim_func *kernel);

/* The passes in pipeline order: their number and names ("gpu_check",
 * "lower_init", ...). */
TIR_API int tir_lower_num_passes(void);
TIR_API const char *tir_lower_pass_name(int i);

/* ------------------------------------------------------------ launch sizes */

/* The launch sizes of a lowered kernel: the extent of each launch axis
 * (blockIdx.x..z, then threadIdx.x..z, minitir/target.h), and the first
 * loop bound to it.  NULL: the axis is unused (size 1). */
typedef struct tir_launch {
    const tir_expr *extent[TIR_NLAUNCH_AXES];
    const tir_for *loop[TIR_NLAUNCH_AXES];
    /* Bit i (a blockIdx axis the kernel binds): every statement that does
     * something (a store, an evaluated call) lies inside the loop bound to
     * axis i, so a run-time extent of 0 there means the kernel has nothing
     * to do.  Where a statement lies outside that loop, the sequential
     * meaning runs it once while a launch of 0 blocks would not. */
    unsigned empty_ok;
} tir_launch;

/* The one check of a lowered kernel's thread-binding loops, used by
 * lowering (check_kernel), codegen, the simulator and, through the
 * module's launch sizes, the runtime.  Fills *out, or returns
 * TIR_ERR_UNSUPPORTED with a message naming the loop when
 *   1. a loop is bound to a tag that is not a launch axis (vthread, or
 *      unknown);
 *   2. a loop is nested in a loop bound to the same axis;
 *   3. a bound loop does not start at the constant 0;
 *   4. a threadIdx extent is not a positive constant, or is over the
 *      limit of its axis (lim->max_block_dim);
 *   5. a blockIdx extent is not a scalar integer expression of constants,
 *      scalar parameters and integer arithmetic (+ - * / % floordiv
 *      floormod min max, casts), or is a constant below 1;
 *   6. two loops bound to one axis have different extents;
 *   7. the threads per block (product of the threadIdx extents) are over
 *      lim->max_threads_per_block.
 * lim may be NULL (the default target's limits). */
TIR_API tir_status tir_launch_check(tir_ctx *ctx, const tir_prim_func *kernel,
                                    const tir_target_limits *lim, tir_launch *out);

/* Evaluates a launch extent accepted by tir_launch_check, with vars[i]
 * (a scalar parameter) set to values[i].  False, with *why set to the
 * reason, on a variable not in vars, a division by zero or an overflow. */
TIR_API bool tir_launch_eval_extent(const tir_expr *e, int nvars, const tir_var *const *vars,
                                    const int64_t *values, int64_t *out, const char **why);

/* What a launch of a lowered kernel checks once its scalar arguments are
 * known, found once per kernel (codegen keeps it in the tir_module; the
 * simulator builds it per run).  Opaque; owned by the ctx.
 *
 * The kernel computes its launch sizes, loop bounds and conditions in
 * their dtype, so where a value passes it the kernel silently runs a
 * wrapped count or lets a wrapped index past its guard.  At launch
 * (tir_launch_plan_eval) each of these is bounded over the ranges of the
 * loop variables it names, with interval arithmetic (the forms
 * tir_launch_eval_extent evaluates), and the launch is refused where any
 * intermediate value may pass its expression's dtype:
 *   - the extent of each launch axis (exactly: it names arguments only);
 *   - every loop bound (start, extent, and the end start + extent that
 *     both emitters compute) that depends on the arguments: one naming
 *     scalar parameters alone, a k loop split by 3 `range((m + 2) // 3)`,
 *     and one naming loop variables too, a triangular `range(i + 2)` or a
 *     tail `range(T.min(bx * 3 + 5, n + 2) - bx * 3)`;
 *   - every integer operand of a comparison in an if or select condition
 *     that depends on the arguments (a guard `k_0 * 3 + k_1 <= i`).
 * A loop variable ranges over its loop's start to start + extent - 1
 * (blockIdx / threadIdx variables over the launch sizes); a loop whose
 * extent is at most 0 runs nothing, so what it holds is not checked.  A
 * range over-approximates where operands are correlated (the guards
 * around a statement are not used either), so a refusal means a value
 * may wrap, but where nothing is refused nothing wraps.  A cast wraps by
 * definition and is not refused (its range becomes the wrapped one), a
 * divisor of 0 alone is refused ("a division by zero"), a range of
 * divisors holding 0 is bounded over its other values.  Expressions of
 * other forms (a load, a select, a Let variable), and anything naming
 * the variable of a loop with such a bound, are not bounded and never
 * refused for their form. */
typedef struct tir_launch_plan tir_launch_plan;

/* The plan of kernel, whose launch sizes l are (tir_launch_check). */
TIR_API tir_status tir_launch_plan_build(tir_ctx *ctx, const tir_prim_func *kernel,
                                         const tir_launch *l, const tir_launch_plan **out);

/* The one launch-time check, used by tir_module_launch_dims (the runtime)
 * and the simulator, with vars[i] (scalar parameters; others are ignored)
 * set to values[i].  Fills dims (blockIdx.x..z, threadIdx.x..z; 1 for an
 * unused axis) or returns TIR_ERR_INVALID_ARG with a message naming the
 * kernel ("launch of 'k': ...") when
 *   1. an extent cannot be evaluated: a scalar parameter it names is not
 *      in vars ("too few arguments"), an argument does not fit its
 *      parameter's dtype, a division by zero, a value past its dtype;
 *   2. an extent is negative, or 0 on an axis that is not empty_ok;
 *   3. a loop bound or a condition, as above, may pass its dtype (the
 *      message prints it, the subexpression, its range and the ranges of
 *      the loop variables that subexpression names).
 * Where a grid extent is 0 (an empty tensor) nothing runs and only 1
 * and 2 are checked. */
TIR_API tir_status tir_launch_plan_eval(tir_ctx *ctx, const tir_launch_plan *p, int nvars,
                                        const tir_var *const *vars, const int64_t *values,
                                        int64_t dims[TIR_NLAUNCH_AXES]);

#ifdef __cplusplus
}
#endif
#endif
