/* ptx_interp.h: a CPU interpreter for a subset of NVIDIA PTX, used by the
 * tests as an oracle where no GPU exists.  It parses a module's PTX text
 * once into decoded instructions and runs one .entry over a grid of
 * thread blocks on host buffers: global memory is the buffer arguments
 * (a global address is the host pointer; every access must lie inside one
 * of them), shared memory is per block (static .shared arrays and the
 * dynamic .extern .shared array), local memory per thread.  The threads
 * of a block run one after the other up to each bar.sync or
 * warp-collective instruction (ldmatrix, mma, shfl: run once per warp when all
 * its threads are there; divergence is an error).  Everything
 * outside the subset (see ptx_interp.c) is an error naming the line,
 * never a silent wrong result.  No LLVM, no CUDA headers.
 */
#ifndef MINITIR_TESTS_PTX_INTERP_H
#define MINITIR_TESTS_PTX_INTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One kernel argument, in .param order.  Buffers: host memory of `bytes`
 * bytes at `data`, passed as a 64-bit global address.  Scalars: the value
 * of an 8/16/32/64-bit integer parameter, or the bits of an .f32 (low 32
 * bits) or .f64 parameter. */
typedef struct ptx_arg {
    bool is_buffer;
    void *data;
    size_t bytes;
    int64_t scalar;
} ptx_arg;

/* Options of ptx_interp_run_ex (all zero: the defaults). */
typedef struct ptx_interp_opts {
    /* Instructions one thread may execute before the run fails with
     * "step limit exceeded" (0: 1 << 28). */
    int64_t max_steps_per_thread;
    /* Byte that fills shared and local memory before each block (0: 0xff,
     * so that a float read before any write is a NaN and shows). */
    uint8_t fill;
} ptx_interp_opts;

/* What a run did (ptx_interp_run_ex). */
typedef struct ptx_interp_stats {
    int64_t insns;        /* instructions executed (predicated-off ones too) */
    int64_t barriers;     /* barrier releases, summed over blocks */
    int64_t warp_ops;     /* warp-collective instructions (ldmatrix, mma) run, per warp */
    int64_t blocks;       /* thread blocks run */
    int64_t shared_bytes; /* shared memory per block, static + dynamic */
    int64_t local_bytes;  /* local memory per thread */
    int ninsns;           /* decoded instructions of the entry */
} ptx_interp_stats;

/* Runs entry `entry` of `ptx` over grid[3] x block[3] threads with args
 * (in .param order) and dyn_shared bytes of dynamic shared memory (the
 * .extern .shared array).  Returns 0, or -1 with a message in err
 * (errlen bytes, may be 0): a parse error or an unsupported instruction
 * or directive (with its line), an access outside every buffer or shared
 * or local array, a misaligned access, a barrier that not every thread of
 * a block reaches at the same instruction, a warp-collective instruction
 * that not all threads of a warp reach together (or with a guard that
 * differs across it), an ldmatrix row that is misaligned or outside shared
 * memory, division by zero, the step limit.  Reads of never-written
 * registers give 0. */
int ptx_interp_run(const char *ptx, const char *entry, const int64_t grid[3],
                   const int64_t block[3], const ptx_arg *args, int nargs, int64_t dyn_shared,
                   char *err, size_t errlen);

/* ptx_interp_run with options (NULL: defaults) and statistics (NULL: none). */
int ptx_interp_run_ex(const char *ptx, const char *entry, const int64_t grid[3],
                      const int64_t block[3], const ptx_arg *args, int nargs, int64_t dyn_shared,
                      const ptx_interp_opts *opts, ptx_interp_stats *stats, char *err,
                      size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
