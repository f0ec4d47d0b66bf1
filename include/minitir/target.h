/* minitir/target.h: the GPU target contract, in one place.
 *
 * Two things every layer needs to agree on: the thread axes a loop may be
 * bound to (one table, minitir/thread_axes.def) and the limits of the GPU
 * a kernel is built for (threads per block, shared memory, registers,
 * vector widths), one tir_target per supported arch.  Lowering, codegen,
 * the simulator and the runtime take their limits from here (the runtime
 * from the driver's attributes of the real device, tir_rt_device_limits),
 * not from constants of their own.  Part of the ir layer, so that every
 * layer can see it.
 */
#ifndef MINITIR_TARGET_H
#define MINITIR_TARGET_H

#include "minitir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ thread axes */

typedef enum tir_thread_axis {
#define TIR_THREAD_AXIS(E, NAME, KIND, DIM) TIR_AXIS_##E,
#include "minitir/thread_axes.def"
#undef TIR_THREAD_AXIS
    TIR_THREAD_AXIS_COUNT
} tir_thread_axis;

typedef enum tir_axis_kind {
    TIR_AXIS_KIND_BLOCK,  /* blockIdx: the grid */
    TIR_AXIS_KIND_THREAD, /* threadIdx: the threads of a block */
    TIR_AXIS_KIND_VTHREAD /* vthread: virtual threads (schedule only) */
} tir_axis_kind;

/* The launch axes are the first entries of the table: grid x, y, z, then
 * block x, y, z.  An index in 0..TIR_NLAUNCH_AXES-1 is a tir_thread_axis. */
enum { TIR_NLAUNCH_AXES = 6 };

/* The axis whose tag is `tag`, or -1 (NULL or unknown tag). */
TIR_API int tir_thread_axis_lookup(const char *tag);
/* Its tag ("threadIdx.x"), kind and dimension (0..2); "?" / -1 when out of
 * range. */
TIR_API const char *tir_thread_axis_name(int axis);
TIR_API int tir_thread_axis_kind(int axis);
TIR_API int tir_thread_axis_dim(int axis);
/* The launch axis (0..TIR_NLAUNCH_AXES-1) of a tag, or -1 when the tag is
 * not a blockIdx or threadIdx axis. */
TIR_API int tir_launch_axis(const char *tag);
/* The table's tags, each after a space (" blockIdx.x blockIdx.y ..."), for
 * messages: all of them, or only the launch axes. */
TIR_API const char *tir_thread_axis_tags(bool launch_only);

/* ---------------------------------------------------------------- limits */

/* What a kernel may use on one target. */
typedef struct tir_target_limits {
    int max_threads_per_block;   /* product of the threadIdx extents */
    int max_block_dim[3];        /* threadIdx.x, y, z extents */
    int64_t max_grid_dim[3];     /* blockIdx.x, y, z extents */
    int64_t max_shared_static;   /* statically allocated shared bytes per block */
    int64_t max_shared_dynamic;  /* shared bytes per block with the opt-in */
    int64_t max_local_bytes;     /* local arrays per thread that lowering allows */
    int max_registers_per_thread;
    int max_registers_per_block;
    int max_blocks_per_sm;       /* resident thread blocks per multiprocessor */
    int max_vector_bytes;        /* widest single load or store */
    int warp_size;
} tir_target_limits;

/* One GPU architecture minitir generates code for. */
typedef struct tir_target {
    const char *arch;         /* "sm_90" */
    const char *ptx_features; /* LLVM NVPTX features (PTX version), "+ptx78" */
    tir_target_limits limits;
} tir_target;

/* The targets, in the order of tir_target_at. */
TIR_API int tir_target_count(void);
TIR_API const tir_target *tir_target_at(int i);
/* The target of an arch name ("sm_80", "sm_90a", ...), or NULL. */
TIR_API const tir_target *tir_target_find(const char *arch);
/* The default target: sm_90, whose limits lowering and the simulator use
 * unless told otherwise. */
TIR_API const tir_target *tir_target_default(void);
/* Writes "sm_80, sm_86, ..." (the supported arch names, for messages) to
 * buf, truncated to n bytes; returns buf. */
TIR_API char *tir_target_list(char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
