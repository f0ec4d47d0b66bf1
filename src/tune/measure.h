/* measure.h: the tuner's GPU session (measure.c), shared by search.c. */
#ifndef MINITIR_TUNE_MEASURE_H
#define MINITIR_TUNE_MEASURE_H

#include "minitir/tune.h"

enum { TUNE_MAX_SETS = 8 };

typedef struct tune_gpu {
    tir_rt_device *dev;
    tir_rt_blas *blas;
    const tir_rt_props *props;
    tir_tune_task task;
    int nsets;
    tir_rt_ptr a[TUNE_MAX_SETS], b[TUNE_MAX_SETS], bias, out, ref, tmp;
    double *ref64; /* host copy of the reference (set 0) */
    int runs;
} tune_gpu;

/* One candidate's measurement. */
typedef struct tune_meas {
    double median_ms, jit_ms;
    int regs, lmem;
    double rel_err; /* NAN unless verified */
} tune_meas;

/* Allocates the task's inputs (nsets copies so that consecutive runs miss
 * L2), the output and the reference (cuBLAS, plus the epilogue kernel for
 * bias + ReLU; per batch for batch matmul), and times cuBLAS (*host_bound:
 * its samples were not back to back, tir_rt_bench_result). */
tir_status tune_gpu_open(tir_ctx *ctx, tir_rt_device *dev, const tir_tune_task *t, int runs,
                         uint64_t seed, tune_gpu *g, double *cublas_ms, bool *host_bound);
void tune_gpu_close(tir_ctx *ctx, tune_gpu *g);
/* Loads ms, refuses a kernel with local memory (spills), times it and,
 * with verify, checks its output against the reference.  Errors leave a
 * message naming the cause (spills, verification, CUDA). */
tir_status tune_gpu_measure(tir_ctx *ctx, tune_gpu *g, const tir_module_set *ms, bool verify,
                            tune_meas *out);

#endif
