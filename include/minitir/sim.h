/* minitir/sim.h: the CPU SIMT simulator, an executor of lowered kernels
 * (docs/simulator.md).  It is its own layer (src/sim/), over lower: it runs
 * the kernels tir_lower produces, in the form of docs/lowered-ir.md, and
 * checks them for races, barrier errors, out-of-bounds and uninitialised
 * reads that a GPU would not report.
 */
#ifndef MINITIR_SIM_H
#define MINITIR_SIM_H

#include "minitir/lower.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs a lowered kernel (docs/lowered-ir.md) on the host the way a GPU
 * would: every thread block of the grid, every thread of a block, with
 * per-block shared memory, per-thread local memory, syncthreads barriers
 * and asynchronous copies.  Each thread of a block is a coroutine that runs
 * until its next syncthreads; when every thread of the block waits at the
 * same barrier they all go on.  The tensor-core intrinsics mma_sync and
 * ldmatrix are warp collectives: the 32 lanes of a warp (linear thread id
 * / 32; lane = id % 32, lane_id()) must all reach the same call, which is
 * then performed with every lane's operands (docs/lowered-ir.md).
 * wgmma_sync is a warpgroup collective: the 128 threads 128q .. 128q +
 * 127 of the block (linear id) must all reach the same call, with the
 * same shared tile and row count (intrinsics.def).  Blocks run one after the other, threads of
 * a block in order of their linear id (x fastest), so runs are
 * deterministic.
 *
 * Grid and block sizes come from the thread-binding loops (blockIdx
 * extents evaluated from the scalar arguments).  Arguments are as for
 * tir_interp_run: buffer parameters are dense host arrays.
 *
 * Detected, with the statement, the thread (blockIdx, threadIdx) and the
 * buffer element in the message:
 *   TIR_ERR_OUT_OF_BOUNDS      an index outside a global, shared or local
 *                              buffer;
 *   TIR_ERR_SIM_RACE           two threads of a block access one shared
 *                              element in the same barrier interval and at
 *                              least one access is a write (and, with
 *                              check_global_races, conflicting global
 *                              accesses);
 *   TIR_ERR_SIM_BARRIER        a syncthreads not reached by all threads of
 *                              the block (threads waiting at different
 *                              syncthreads, or finished while others wait),
 *                              or a warp collective not reached by all 32
 *                              lanes of a warp (divergent warp), or a
 *                              wgmma_sync not reached by all 128 threads
 *                              of a warpgroup (divergent warpgroup);
 *   TIR_ERR_SIM_CP_ASYNC_PENDING  a load or store of a shared element whose
 *                              cp_async has not completed (no matching
 *                              cp_async_wait yet), or bad cp_async operands
 *                              (TIR_ERR_EVAL, TIR_ERR_OUT_OF_BOUNDS);
 *   TIR_ERR_UNINIT_READ        with check_uninit, a read of a shared or
 *                              local element never written (and of global
 *                              parameters marked in uninit_params);
 *   TIR_ERR_SIM_LAUNCH         launch dimensions that cannot be determined
 *                              or are out of limits, or warp intrinsics
 *                              (lane_id, mma_sync, ldmatrix) in blocks that
 *                              are not whole warps, wgmma_sync in blocks
 *                              that are not whole warpgroups;
 *   TIR_ERR_UNSUPPORTED        the logical frag_fill / frag_load /
 *                              frag_store / wgmma (lowering expands them).
 * ldmatrix's rows are shared reads of the lane that supplies the row (race
 * and uninitialised checks); a row address must be 16-byte aligned in a
 * shared buffer of 16-bit elements (TIR_ERR_EVAL otherwise).  wgmma_sync
 * reads its shared tile as the warpgroup's first thread; a tile whose
 * start is not a k slice of an 8-row group (4x % 1024 not 0, 32, 64 or
 * 96), or warps passing different tiles, are TIR_ERR_EVAL, a tile or a
 * result register outside its buffer TIR_ERR_OUT_OF_BOUNDS.
 * The first error stops the run. */
typedef struct tir_sim_opts {
    /* Bit i: parameter i's buffer starts unwritten (as tir_interp_opts). */
    uint64_t uninit_params;
    /* Reading a shared or local element never written is an error.  Off:
     * such reads see the simulator's poison pattern (all bits set). */
    bool check_uninit;
    /* Skip shared-memory race detection (faster). */
    bool no_race_check;
    /* Also report global-memory races: a load or store of an element that
     * another thread wrote, where that thread is in another block or wrote
     * in the same barrier interval (write-after-read is not tracked in
     * global memory).  Atomic adds (atomic_add) do not race with each
     * other, but do with such a plain store or load before them (the last
     * one per element) and with any such access after them. */
    bool check_global_races;
    /* Threads per block and shared memory (up to the opt-in maximum,
     * max_shared_dynamic, as codegen places it) may not pass these (NULL:
     * the default target's, tir_target_default). */
    const tir_target_limits *limits;
} tir_sim_opts;

typedef struct tir_sim_report {
    int64_t grid[3], block[3]; /* launch dimensions (x, y, z) */
    int64_t blocks_run;        /* thread blocks simulated (complete or not) */
    int64_t threads_run;
    int64_t barriers;          /* barrier releases, summed over blocks */
    int64_t cp_async_copies;   /* completed copies */
    int64_t atomic_adds;       /* atomic_add calls executed */
    int64_t shared_bytes;      /* shared memory of one block */
    int64_t warp_ops;          /* warp collectives (mma_sync, ldmatrix, shfl_xor) performed,
                                  and wgmma_sync, once per warpgroup */
    bool coroutines;           /* false: no syncthreads or warp collectives, threads ran plainly */
    /* When the run failed in a thread: which one. */
    bool has_thread;
    int64_t block_idx[3], thread_idx[3];
} tir_sim_report;

/* Launch dimensions of a lowered kernel for these arguments. */
TIR_API tir_status tir_sim_launch_dims(tir_ctx *ctx, const tir_prim_func *kernel, int nargs,
                                       const tir_arg *args, int64_t grid[3], int64_t block[3]);

/* Runs kernel; opts and report may be NULL. */
TIR_API tir_status tir_sim_run(tir_ctx *ctx, const tir_prim_func *kernel, int nargs,
                               const tir_arg *args, const tir_sim_opts *opts,
                               tir_sim_report *report);

/* Runs the kernels of a tir_kernel_set (tir_lower_kernels) in order, as
 * one stream would: allocates the workspace (filled with the poison
 * pattern, all bits set), passes it after args to every kernel, and frees
 * it at the end.  With check_uninit, a workspace buffer counts as
 * unwritten in the first kernel that touches it (later kernels see it as
 * written: the per-element record does not outlive a run, and the poison
 * shows unwritten elements in the outputs instead); a parameter marked in
 * opts->uninit_params likewise starts unwritten only in the first kernel
 * that touches it.  reports (may be NULL)
 * has ks->nkernels entries.  Errors are tir_sim_run's, prefixed with the
 * kernel. */
TIR_API tir_status tir_sim_run_kernels(tir_ctx *ctx, const tir_kernel_set *ks, int nargs,
                                       const tir_arg *args, const tir_sim_opts *opts,
                                       tir_sim_report *reports);

#ifdef __cplusplus
}
#endif
#endif
