/* minitir/runtime.h: running kernels on an NVIDIA GPU, checking results
 * against cuBLAS and a float64 reference, and timing them honestly.
 *
 * The CUDA driver (libcuda.so.1) and cuBLAS (libcublas.so.13, else .12)
 * are loaded with dlopen on first use, so programs that link minitir run
 * on machines without them and learn so from a status:
 *   TIR_ERR_NO_DRIVER   no usable driver library (or only the toolkit's stub)
 *   TIR_ERR_NO_DEVICE   a driver but no GPU (or no GPU with that ordinal)
 *   TIR_ERR_NO_CUBLAS   cuBLAS cannot be loaded
 *   TIR_ERR_CUDA        a driver or cuBLAS call failed; the message names the
 *                       call and the error's name and text (and the JIT log
 *                       when PTX fails to compile)
 * Environment: MINITIR_CUDA_LIB and MINITIR_CUBLAS_LIB name the library
 * file to load instead of the default.  Once a library has loaded it stays
 * loaded until the process exits (unloading a GPU driver with live worker
 * threads is not safe), so changing these variables afterwards has no
 * effect; a failed load is not remembered and is retried next time.
 *
 * Every function that can fail takes a tir_ctx * and records its error
 * there (tir_ctx_error).  Functions never abort on user input and free what
 * they allocated on every error path.
 *
 * Threads and streams: all work goes to the device's legacy default stream,
 * in order.  tir_rt_device_create makes the device's primary context current on the
 * calling thread; another thread must call tir_rt_bind_thread first.  One
 * device handle must not be used by two threads at once.
 *
 * Host-side helpers (random fill, conversions, error measures, the float64
 * GEMM reference, tolerances) need no GPU and no driver.
 */
#ifndef MINITIR_RUNTIME_H
#define MINITIR_RUNTIME_H

#include "minitir/codegen.h"
#include "minitir/ir.h"
#include "minitir/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ device */

typedef struct tir_rt_device tir_rt_device;
/* A device address.  0 is never a valid allocation. */
typedef uint64_t tir_rt_ptr;

typedef struct tir_rt_props {
    char name[128];            /* "NVIDIA H200" */
    char arch[16];             /* "sm_90", from the compute capability */
    int ordinal;               /* as passed to tir_rt_device_create */
    int cc_major, cc_minor;    /* compute capability */
    int sm_count;              /* streaming multiprocessors */
    int warp_size;
    int max_threads_per_block;
    int max_threads_per_sm;
    int max_block_dim[3];
    int max_grid_dim[3];
    int max_regs_per_block;
    int max_regs_per_sm;
    int smem_per_block;        /* bytes a block gets without opting in (48 KiB) */
    int smem_per_block_optin;  /* bytes a kernel may opt in to (227 KiB on sm_90) */
    int smem_per_sm;
    int l2_bytes;
    int clock_khz;             /* SM clock as the driver reports it (may be 0) */
    int mem_clock_khz;
    int mem_bus_bits;
    size_t total_mem;          /* bytes of device memory */
    int driver_version;        /* 13000 for CUDA 13.0 */
} tir_rt_props;

/* Number of CUDA devices.  Loads the driver if needed.  Errors:
 * TIR_ERR_NO_DRIVER; TIR_ERR_NO_DEVICE when the driver finds none (then
 * *count is 0); TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_device_count(tir_ctx *ctx, int *count);

/* Opens device `ordinal` (0 for the first GPU): loads the driver, cuInit,
 * retains the device's primary context and makes it current on this thread.
 * On success *out is a handle the caller destroys with tir_rt_device_destroy; on
 * failure *out is NULL.  Errors: TIR_ERR_NO_DRIVER (no libcuda.so.1, a
 * library missing entry points, the toolkit's stub), TIR_ERR_NO_DEVICE (no
 * GPU, or ordinal out of range), TIR_ERR_CUDA, TIR_ERR_NOMEM. */
TIR_API tir_status tir_rt_device_create(tir_ctx *ctx, int ordinal, tir_rt_device **out);

/* Waits for the device, then frees everything still alive that was made
 * through this handle (allocations, modules and their kernels, events,
 * cuBLAS handles) and releases the primary context.  Errors while closing
 * (a context already broken by a faulting kernel) are ignored: host memory
 * is freed regardless.  NULL is fine. */
TIR_API void tir_rt_device_destroy(tir_rt_device *dev);

/* The properties read when the device was opened; owned by dev. */
TIR_API const tir_rt_props *tir_rt_device_props(const tir_rt_device *dev);

/* The target limits of a device as its driver reports them: the limits of
 * the target of its arch (tir_target_find, else tir_target_default), with
 * threads per block, block and grid sizes, static and opt-in shared memory,
 * registers per block and warp size replaced by the driver's attributes in
 * p (those that are positive). */
TIR_API void tir_rt_limits_from_props(const tir_rt_props *p, tir_target_limits *out);
/* tir_rt_limits_from_props of dev's properties. */
TIR_API void tir_rt_device_limits(const tir_rt_device *dev, tir_target_limits *out);

/* Makes dev's context current on the calling thread.  Errors: TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_bind_thread(tir_ctx *ctx, tir_rt_device *dev);

/* Waits until all work queued on dev has finished.  A kernel that faulted
 * is reported here (or at the next call that waits), as TIR_ERR_CUDA; after
 * such a fault the context is unusable and dev should be closed. */
TIR_API tir_status tir_rt_sync(tir_ctx *ctx, tir_rt_device *dev);

/* Free and total device memory in bytes.  Errors: TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_mem_info(tir_ctx *ctx, tir_rt_device *dev, size_t *free_bytes,
                                   size_t *total_bytes);

/* ------------------------------------------------------------------ memory
 *
 * Device memory is owned by the device handle: tir_rt_free frees one
 * allocation early, tir_rt_device_destroy frees the rest.  Copies and memsets check
 * that [ptr, ptr + bytes) lies inside one live allocation of dev (an
 * address inside it is fine) and fail with TIR_ERR_INVALID_ARG otherwise,
 * before anything reaches the GPU.
 */

/* Allocates bytes (> 0) of device memory, 256-byte aligned, uninitialised.
 * Errors: TIR_ERR_INVALID_ARG (0 bytes), TIR_ERR_CUDA (out of device
 * memory: CUDA_ERROR_OUT_OF_MEMORY), TIR_ERR_NOMEM. */
TIR_API tir_status tir_rt_alloc(tir_ctx *ctx, tir_rt_device *dev, size_t bytes,
                                tir_rt_ptr *out);
/* Frees an allocation made by tir_rt_alloc on dev (the start address).
 * ptr == 0 does nothing.  Errors: TIR_ERR_INVALID_ARG (not a live
 * allocation of dev: nothing is freed), TIR_ERR_CUDA (host bookkeeping is
 * dropped anyway). */
TIR_API tir_status tir_rt_free(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr ptr);

/* Sets `bytes` bytes to `value`.  Ordered with later work on the stream;
 * may return before it is done. */
TIR_API tir_status tir_rt_memset8(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr ptr,
                                  uint8_t value, size_t bytes);
/* Sets `count` 32-bit words to `value`; ptr must be 4-byte aligned. */
TIR_API tir_status tir_rt_memset32(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr ptr,
                                   uint32_t value, size_t count);
/* Host to device; returns when src may be reused. */
TIR_API tir_status tir_rt_copy_h2d(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr dst,
                                   const void *src, size_t bytes);
/* Device to host; waits for earlier work on the stream, returns when dst
 * holds the data.  A kernel fault surfaces here as TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_copy_d2h(tir_ctx *ctx, tir_rt_device *dev, void *dst,
                                   tir_rt_ptr src, size_t bytes);
/* Device to device, ordered on the stream.  The ranges must not overlap. */
TIR_API tir_status tir_rt_copy_d2d(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr dst,
                                   tir_rt_ptr src, size_t bytes);

/* The PTX assembler's optimisation level (CU_JIT_OPTIMIZATION_LEVEL) for
 * the modules loaded on dev from now on (tir_rt_module_create and the
 * programs): 0..4, or -1 for the driver's default (4), the initial setting.
 * Level 0 is the way round a miscompile of the assembler's optimiser: the
 * expression fuzzer found such miscompiles (docs/reliability.md, "The PTX
 * assembler"), and its GPU test re-runs a failing case at level 0 to tell
 * them from minitir's own.  Kernels at level 0 run much slower.  The
 * runtime's own kernels (tir_rt_bias_epilogue, ...) are loaded once, on
 * first use, at the level set then.  Errors: TIR_ERR_INVALID_ARG (dev NULL,
 * or any other level). */
TIR_API tir_status tir_rt_device_set_jit_opt_level(tir_ctx *ctx, tir_rt_device *dev, int level);

/* ----------------------------------------------------------------- modules */

typedef struct tir_rt_module tir_rt_module;
typedef struct tir_rt_kernel tir_rt_kernel;

/* JIT-compiles NUL-terminated PTX text for dev and loads it.  The module
 * is owned by dev (tir_rt_module_destroy frees it early).  A PTX error gives
 * TIR_ERR_CUDA whose message holds the driver's error
 * (CUDA_ERROR_INVALID_PTX, ...) followed by the JIT error log.  Errors:
 * TIR_ERR_INVALID_ARG (NULL or empty text), TIR_ERR_CUDA, TIR_ERR_NOMEM. */
TIR_API tir_status tir_rt_module_create(tir_ctx *ctx, tir_rt_device *dev, const char *ptx,
                                        tir_rt_module **out);
/* The JIT's information log of a successful load (ptxas's register and
 * spill report per kernel); "" if none.  Owned by the module. */
TIR_API const char *tir_rt_module_info_log(const tir_rt_module *mod);
/* Unloads the module; its kernel handles become invalid.  Waits for work
 * in flight.  NULL is fine. */
TIR_API void tir_rt_module_destroy(tir_rt_module *mod);

/* Finds the .entry `name` in mod.  The handle is owned by the module and
 * valid until it is unloaded; asking twice gives the same handle.  Errors:
 * TIR_ERR_INVALID_ARG (no such kernel: the message says so), TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_kernel_get(tir_ctx *ctx, tir_rt_module *mod, const char *name,
                                     tir_rt_kernel **out);

typedef struct tir_rt_kernel_info {
    int num_regs;          /* registers per thread */
    int static_smem;       /* bytes of statically declared shared memory */
    int local_bytes;       /* bytes of local memory per thread (spills) */
    int const_bytes;
    int max_threads;       /* largest block this kernel can launch with */
    int max_dynamic_smem;  /* current dynamic shared memory limit, bytes */
    int ptx_version;       /* 78 for PTX 7.8 */
    int binary_version;    /* 90 for sm_90 */
    int nparams;           /* kernel parameters; -1 if the driver cannot say
                              (or the kernel has none): then unchecked */
} tir_rt_kernel_info;

/* Reads the kernel's attributes.  Errors: TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_kernel_info_get(tir_ctx *ctx, tir_rt_kernel *k,
                                          tir_rt_kernel_info *out);

/* Raises (or lowers) the dynamic shared memory a launch of k may request.
 * Above 48 KiB a kernel must opt in this way.  Errors: TIR_ERR_INVALID_ARG
 * when static + dynamic bytes exceed the device's opt-in maximum,
 * TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_kernel_set_max_dynamic_smem(tir_ctx *ctx, tir_rt_kernel *k,
                                                      int bytes);

/* ---------------------------------------------------------------- launches */

typedef enum tir_rt_arg_kind {
    TIR_RT_ARG_PTR, /* a device address (.u64 / .b64 param) */
    TIR_RT_ARG_I32, /* .u32 / .s32 / .b32 */
    TIR_RT_ARG_I64, /* .u64 / .s64 / .b64 */
    TIR_RT_ARG_F32,
    TIR_RT_ARG_F64,
} tir_rt_arg_kind;

/* One kernel argument, passed by value. */
typedef struct tir_rt_arg {
    tir_rt_arg_kind kind;
    union {
        tir_rt_ptr ptr;
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
    } v;
} tir_rt_arg;

static inline tir_rt_arg tir_rt_arg_ptr(tir_rt_ptr p) {
    tir_rt_arg a = {TIR_RT_ARG_PTR, {0}};
    a.v.ptr = p;
    return a;
}
static inline tir_rt_arg tir_rt_arg_i32(int32_t x) {
    tir_rt_arg a = {TIR_RT_ARG_I32, {0}};
    a.v.i32 = x;
    return a;
}
static inline tir_rt_arg tir_rt_arg_i64(int64_t x) {
    tir_rt_arg a = {TIR_RT_ARG_I64, {0}};
    a.v.i64 = x;
    return a;
}
static inline tir_rt_arg tir_rt_arg_f32(float x) {
    tir_rt_arg a = {TIR_RT_ARG_F32, {0}};
    a.v.f32 = x;
    return a;
}
static inline tir_rt_arg tir_rt_arg_f64(double x) {
    tir_rt_arg a = {TIR_RT_ARG_F64, {0}};
    a.v.f64 = x;
    return a;
}

/* The most arguments a launch takes. */
#define TIR_RT_MAX_ARGS 256

/* Queues k on dev's stream with grid[3] blocks of block[3] threads and
 * dyn_smem bytes of dynamic shared memory; returns without waiting.
 * Checked before launching (TIR_ERR_INVALID_ARG with a message): every
 * dimension >= 1 and within the device limits, block size <= the kernel's
 * max_threads, dyn_smem <= its max_dynamic_smem, and, when the driver can
 * tell (CUDA 12.4+), nargs equal to the kernel's parameter count with each
 * argument's size equal to its parameter's.  Errors: TIR_ERR_INVALID_ARG,
 * TIR_ERR_CUDA (a failed launch; faults inside the kernel show at the next
 * call that waits). */
TIR_API tir_status tir_rt_launch(tir_ctx *ctx, tir_rt_kernel *k, const unsigned grid[3],
                                 const unsigned block[3], unsigned dyn_smem, int nargs,
                                 const tir_rt_arg *args);

/* ------------------------------------------------------------------ events */

typedef struct tir_rt_event tir_rt_event;

/* A timing event on dev, owned by dev (tir_rt_event_destroy frees it
 * early).  Errors: TIR_ERR_CUDA, TIR_ERR_NOMEM. */
TIR_API tir_status tir_rt_event_create(tir_ctx *ctx, tir_rt_device *dev, tir_rt_event **out);
/* NULL is fine. */
TIR_API void tir_rt_event_destroy(tir_rt_event *ev);
/* Records ev on the stream: it completes when all earlier work has. */
TIR_API tir_status tir_rt_event_record(tir_ctx *ctx, tir_rt_event *ev);
/* Waits for `end` and stores the GPU time between the two records in *ms
 * (resolution about 0.5 us).  Both must have been recorded, start first.
 * Errors: TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_event_elapsed_ms(tir_ctx *ctx, tir_rt_event *start, tir_rt_event *end,
                                           float *ms);

/* ------------------------------------------------------------------ cuBLAS */

typedef struct tir_rt_blas tir_rt_blas;

/* Which GEMM a reference call computes.  C is float32 in every case, and
 * every case accumulates in float32. */
typedef enum tir_rt_gemm_kind {
    TIR_RT_GEMM_F32,          /* float32 A, B; cublasSgemm, default math (never TF32) */
    TIR_RT_GEMM_F32_PEDANTIC, /* float32 A, B; cublasGemmEx, CUBLAS_COMPUTE_32F_PEDANTIC */
    TIR_RT_GEMM_TF32,         /* float32 A, B rounded to TF32 on tensor cores */
    TIR_RT_GEMM_F16,          /* float16 A, B (bit patterns); tensor cores */
    TIR_RT_GEMM_BF16,         /* bfloat16 A, B (bit patterns); tensor cores */
} tir_rt_gemm_kind;

/* "f32", "f32_pedantic", "tf32", "f16", "bf16". */
TIR_API const char *tir_rt_gemm_kind_name(tir_rt_gemm_kind kind);
/* The dtype of A and B for a kind (float32, float16 or bfloat16). */
TIR_API tir_dtype tir_rt_gemm_kind_input(tir_rt_gemm_kind kind);

/* Layout of B in C[M,N] = A[M,K] · B. */
typedef enum tir_rt_b_layout {
    TIR_RT_B_KN, /* B[K,N] row-major: C = A·B   (matmul) */
    TIR_RT_B_NK, /* B[N,K] row-major: C = A·Bᵀ  (matmul_nt) */
} tir_rt_b_layout;

/* Loads cuBLAS without a GPU, to learn whether it is there, and stores its
 * version (major*10000 + minor*100 + patch) in *version (may be NULL).
 * Errors: TIR_ERR_NO_CUBLAS with the loader's message. */
TIR_API tir_status tir_rt_blas_probe(tir_ctx *ctx, int *version);

/* Creates a cuBLAS handle on dev's stream.  Owned by dev
 * (tir_rt_blas_destroy frees it early).  Errors: TIR_ERR_NO_CUBLAS,
 * TIR_ERR_CUDA (cublasCreate failed), TIR_ERR_NOMEM. */
TIR_API tir_status tir_rt_blas_create(tir_ctx *ctx, tir_rt_device *dev, tir_rt_blas **out);
/* NULL is fine. */
TIR_API void tir_rt_blas_destroy(tir_rt_blas *blas);

/* Row-major C[M,N] = A[M,K] · B (B laid out as `layout`), dense, no
 * padding, C overwritten.  A and B hold elements of
 * tir_rt_gemm_kind_input(kind); C is float32.  Queued on the stream.
 * Errors: TIR_ERR_INVALID_ARG (sizes < 1 or > INT32_MAX, a buffer not
 * inside a live allocation of the device or too small), TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_blas_gemm(tir_ctx *ctx, tir_rt_blas *blas, tir_rt_gemm_kind kind,
                                    int64_t M, int64_t N, int64_t K, tir_rt_ptr A,
                                    tir_rt_ptr B, tir_rt_b_layout layout, tir_rt_ptr C);

/* Row-major C[b] = A[b] · B[b] for b < batch, the batches contiguous: A[b]
 * at A + b*M*K elements, B[b] at B + b*K*N (laid out as `layout`, [K,N] or
 * [N,K]), C[b] at C + b*M*N; one cublasSgemmStridedBatched call for
 * TIR_RT_GEMM_F32, cublasGemmStridedBatchedEx for the other kinds (the
 * same types and math as tir_rt_blas_gemm).  Queued on the stream.
 * Errors: TIR_ERR_INVALID_ARG (batch, M, N or K < 1 or > INT32_MAX, an
 * operand's batch * matrix bytes not inside one live allocation of the
 * device), TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_blas_gemm_batched(tir_ctx *ctx, tir_rt_blas *blas,
                                            tir_rt_gemm_kind kind, int64_t batch, int64_t M,
                                            int64_t N, int64_t K, tir_rt_ptr A, tir_rt_ptr B,
                                            tir_rt_b_layout layout, tir_rt_ptr C);

/* --------------------------------------------------- built-in GPU kernels
 *
 * Small hand-written PTX kernels that serve as references for generated
 * code: a bias epilogue and a float64 GEMM.  They are JIT-compiled on
 * first use (once per device).
 */

typedef enum tir_rt_epi_kind {
    TIR_RT_EPI_BIAS,      /* D = C + bias[j] */
    TIR_RT_EPI_BIAS_RELU, /* D = max(C + bias[j], 0) */
    TIR_RT_EPI_BIAS_CLIP, /* D = min(max(C + bias[j], lo), hi) */
} tir_rt_epi_kind;

typedef struct tir_rt_epilogue {
    tir_rt_epi_kind kind;
    float lo, hi; /* TIR_RT_EPI_BIAS_CLIP only; lo <= hi */
} tir_rt_epilogue;

/* D[i,j] = epi(C[i,j] + bias[j]) for row-major float32 C, D [M,N] and
 * bias [N], computed in float32 (one rounding, for the add).  D may be C.
 * NaN propagates (max/min of NaN is NaN, unlike C's fmaxf) so an unwritten
 * poisoned C is still caught.  Errors: TIR_ERR_INVALID_ARG, TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_bias_epilogue(tir_ctx *ctx, tir_rt_device *dev, int64_t M, int64_t N,
                                        tir_rt_ptr C, tir_rt_ptr bias, tir_rt_ptr D,
                                        const tir_rt_epilogue *epi);

/* A GPU float64 reference for big sizes: C64[M,N] (float64) = A·B with A, B
 * of `in` (float32, float16 or bfloat16), every product and sum in float64.
 * Errors: TIR_ERR_INVALID_ARG (also for M > 1048560), TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_gemm_ref_device(tir_ctx *ctx, tir_rt_device *dev, tir_dtype in,
                                          int64_t M, int64_t N, int64_t K, tir_rt_ptr A,
                                          tir_rt_ptr B, tir_rt_b_layout layout,
                                          tir_rt_ptr C64);

/* ------------------------------------------------- verification (host side)
 *
 * Inputs are fresh uniform random values in [-1, 1), outputs are poisoned
 * with NaN before a run, and results are compared with a float64 reference
 * by relative Frobenius error ||out - ref|| / ||ref||, summed in double.
 * A NaN or infinity in the output never passes: an element the kernel did
 * not write still holds poison.
 */

/* xorshift64* generator.  Deterministic for a seed; any seed is fine. */
typedef struct tir_rt_rng {
    uint64_t state;
} tir_rt_rng;
TIR_API tir_rt_rng tir_rt_rng_seed(uint64_t seed);
TIR_API uint64_t tir_rt_rng_next(tir_rt_rng *r);
/* Uniform in [-1, 1), a multiple of 2^-23 (so exact in float32). */
TIR_API float tir_rt_rng_uniform(tir_rt_rng *r);

/* Conversions with round-to-nearest-even; NaN stays NaN, overflow goes to
 * infinity.  16-bit values are bit patterns. */
TIR_API uint16_t tir_rt_f32_to_f16(float f);
TIR_API float tir_rt_f16_to_f32(uint16_t h);
TIR_API uint16_t tir_rt_f32_to_bf16(float f);
TIR_API float tir_rt_bf16_to_f32(uint16_t h);

/* Fills n elements of dtype t (float32, float64, float16, bfloat16) with
 * uniform values in [-1, 1) from seed (16-bit types: rounded).  Errors:
 * TIR_ERR_INVALID_ARG for other dtypes. */
TIR_API tir_status tir_rt_fill_random(tir_ctx *ctx, tir_dtype t, void *data, size_t n,
                                      uint64_t seed);
/* Writes a NaN pattern (all bytes 0xFF: a NaN in float16, bfloat16,
 * float32 and float64) over bytes bytes. */
TIR_API void tir_rt_poison(void *data, size_t bytes);
/* Converts n elements of float dtype t to double.  Errors:
 * TIR_ERR_INVALID_ARG for other dtypes. */
TIR_API tir_status tir_rt_to_f64(tir_ctx *ctx, tir_dtype t, const void *src, size_t n,
                                 double *dst);

typedef struct tir_rt_error_stats {
    double rel_err;        /* ||out-ref||/||ref||, or ||out-ref|| if ||ref|| = 0;
                              +inf when any element is not finite */
    double max_abs_err;    /* over the finite elements */
    int64_t max_abs_index; /* flat index of max_abs_err, -1 if none */
    int64_t nonfinite;     /* NaN or infinite output elements */
    int64_t first_nonfinite; /* flat index, -1 if none */
    double ref_norm;
} tir_rt_error_stats;

/* Compares n output elements of float dtype t with ref.  Errors:
 * TIR_ERR_INVALID_ARG (dtype, or a reference element that is not
 * finite). */
TIR_API tir_status tir_rt_compare(tir_ctx *ctx, tir_dtype t, const void *out,
                                  const double *ref, size_t n, tir_rt_error_stats *st);

/* tir_rt_compare, then a verdict: TIR_OK when every element is finite and
 * rel_err <= tol; else TIR_ERR_VERIFY_MISMATCH with a message naming
 * `what`, the error and tolerance, and the worst (or first non-finite)
 * element as [row, col] of a rows x cols matrix with the values seen.  st
 * may be NULL. */
TIR_API tir_status tir_rt_check(tir_ctx *ctx, const char *what, tir_dtype t, const void *out,
                                const double *ref, int64_t rows, int64_t cols, double tol,
                                tir_rt_error_stats *st);

/* The relative-error tolerance for a GEMM of depth K against a float64
 * reference computed from the same input values (the 16-bit inputs as
 * stored; for TF32 the unrounded float32 inputs):
 *   f32, f32_pedantic  1e-5   float32 accumulation: the rounding error of a
 *                             K-term dot product of random signs grows like
 *                             sqrt(K) u (u = 2^-24), about 2e-6 at K = 8192
 *   f16, bf16          1e-4   float32 accumulation on tensor cores, which
 *                             may align and truncate inside an MMA step
 *   tf32               5e-3   inputs rounded to 10 mantissa bits: about 4e-4
 *                             when rounded to nearest, up to about 1.2e-3
 *                             when truncated
 * Each is for K <= 8192 and grows by sqrt(K / 8192) beyond. */
TIR_API double tir_rt_gemm_tolerance(tir_rt_gemm_kind kind, int64_t K);

/* C[M,N] = A[M,K] · B in float64 on the host, with A and B of float dtype
 * `in` (float32, float64, float16, bfloat16) and B laid out as `layout`.
 * O(M N K): meant for small sizes.  Errors: TIR_ERR_INVALID_ARG. */
TIR_API tir_status tir_rt_gemm_ref(tir_ctx *ctx, tir_dtype in, int64_t M, int64_t N, int64_t K,
                                   const void *A, const void *B, tir_rt_b_layout layout,
                                   double *C);

/* The bias epilogue on the host, in float32 exactly as the device kernel
 * computes it (so results can be compared bit for bit): D[i,j] =
 * epi(C[i,j] + bias[j]).  D may be C. */
TIR_API void tir_rt_bias_epilogue_ref(int64_t M, int64_t N, const float *C, const float *bias,
                                      float *D, const tir_rt_epilogue *epi);

/* --------------------------------------------------------------- benchmark
 *
 * tir_rt_bench calls fn `warmup` times, then `runs` timed samples of
 * `inner` back-to-back calls each, every sample bracketed by a pair of
 * CUDA events, all queued before waiting once at the end (so the host does
 * not leave the GPU idle between samples when fn queues enough work).  The
 * time of one call is the sample's time / inner.
 *
 * The samples are queued behind a kernel that keeps the GPU busy until the
 * host has queued them all, so that they run back to back and a sample
 * measures GPU time only.  Without it, a call whose host side takes as long
 * as its GPU side (cuBLAS at 512x512x8192 bf16: ~15 microseconds of each)
 * lets the GPU drain the queue, and the samples time the host's gaps:
 * cuBLAS's medians there spread over 0.014-0.043 ms in one process while
 * the GPU time was 0.014 (docs/performance.md, runs 81-82).  Samples go
 * in chunks of up to 100 (the driver's queue of pending launches is
 * finite), each behind a hold that starts at 2 ms.  Where the GPU had left
 * a hold before the host finished queuing its chunk (an event recorded
 * after the hold was already done), the chunk is queued again behind a
 * hold twice as long, or twice the time queuing took, up to 4 tries and
 * 200 ms.  back_to_back says whether every chunk was held in time; hold_ms
 * is the longest hold used.
 *
 * Repeated runs on the same data measure a warm L2 cache.  Two remedies,
 * usable together: `nsets` > 1 makes fn receive set = call_index % nsets
 * so it can rotate among input copies whose total exceeds L2; `flush_l2`
 * writes a buffer of twice the L2 size (outside the timed interval) before
 * every sample.
 */
typedef tir_status (*tir_rt_bench_fn)(tir_ctx *ctx, void *user, int set);

typedef struct tir_rt_bench_opts {
    int warmup; /* >= 0 */
    int runs;   /* timed samples, >= 20 */
    int inner;  /* calls per sample, >= 1 */
    int nsets;  /* >= 1 */
    bool flush_l2;
} tir_rt_bench_opts;

#define TIR_RT_BENCH_DEFAULTS ((tir_rt_bench_opts){5, 50, 1, 1, false})

typedef struct tir_rt_bench_result {
    double median_ms, min_ms, max_ms, mean_ms; /* per call */
    int runs, inner;
    bool back_to_back; /* the host queued every sample before the hold ended */
    double hold_ms;    /* the longest hold the samples were queued behind */
} tir_rt_bench_result;

/* Times fn as described above.  opts may be NULL (TIR_RT_BENCH_DEFAULTS).
 * An error from fn stops the benchmark and is returned.  Errors:
 * TIR_ERR_INVALID_ARG (options out of range), TIR_ERR_CUDA, fn's. */
TIR_API tir_status tir_rt_bench(tir_ctx *ctx, tir_rt_device *dev, tir_rt_bench_fn fn,
                                void *user, const tir_rt_bench_opts *opts,
                                tir_rt_bench_result *res);

/* 2 M N K / time, in TFLOP/s. */
TIR_API double tir_rt_gemm_tflops(int64_t M, int64_t N, int64_t K, double ms);

/* ------------------------------------------------- compiled minitir modules */

/* A tir_module (from tir_codegen / tir_build) loaded on a device. */
typedef struct tir_rt_program tir_rt_program;

/* Loads m's PTX on dev and looks its kernel up; a module with dynamic
 * shared memory (m->dyn_shared_bytes > 0) has the kernel's limit raised to
 * it (tir_rt_kernel_set_max_dynamic_smem).  Free with
 * tir_rt_program_destroy before closing dev.  Errors: TIR_ERR_CUDA (with the
 * JIT log), TIR_ERR_INVALID_ARG (also: the module's shared memory is more
 * than the device's opt-in maximum; the message names the kernel and both
 * sizes). */
TIR_API tir_status tir_rt_program_create(tir_ctx *ctx, tir_rt_device *dev, const tir_module *m,
                                         tir_rt_program **out);
TIR_API void tir_rt_program_destroy(tir_rt_program *p);
TIR_API tir_rt_kernel *tir_rt_program_kernel(const tir_rt_program *p);
/* Launches the kernel: args has one entry per module parameter, in order
 * (buffers as TIR_RT_ARG_PTR, scalars as TIR_RT_ARG_I32 or I64).  The grid
 * is evaluated from the scalar arguments; the launch requests the module's
 * dyn_shared_bytes of dynamic shared memory.  Returns without waiting.
 * A grid of 0 blocks on an axis every statement lies under (an empty
 * tensor, tir_launch_dim.zero_ok) launches nothing and returns TIR_OK.
 * Errors: TIR_ERR_INVALID_ARG (count or kinds do not match the
 * parameters, a negative grid, or 0 where a statement lies outside that
 * axis's loop), TIR_ERR_CUDA. */
TIR_API tir_status tir_rt_program_launch(tir_ctx *ctx, tir_rt_program *p, int nargs,
                                         const tir_rt_arg *args);

/* A tir_module_set (tir_build_kernels: several kernels and their
 * workspace) loaded on a device: one tir_rt_program per module, and the
 * workspace buffers allocated once, at create (their shapes are
 * constant), freed at destroy. */
typedef struct tir_rt_program_set tir_rt_program_set;

/* Loads every module of ms (as tir_rt_program_create) and allocates its
 * workspace on dev.  Free with tir_rt_program_set_destroy before closing
 * dev.  Errors: those of tir_rt_program_create (the message names the
 * module), TIR_ERR_INVALID_ARG (a workspace buffer of non-constant shape),
 * TIR_ERR_CUDA (an allocation failed: the message names the buffer and its
 * size); nothing is left allocated on error. */
TIR_API tir_status tir_rt_program_set_create(tir_ctx *ctx, tir_rt_device *dev,
                                             const tir_module_set *ms,
                                             tir_rt_program_set **out);
TIR_API void tir_rt_program_set_destroy(tir_rt_program_set *ps);
/* The number of programs (kernels), and program i of them (NULL when out
 * of range). */
TIR_API int tir_rt_program_set_count(const tir_rt_program_set *ps);
TIR_API tir_rt_program *tir_rt_program_set_program(const tir_rt_program_set *ps, int i);
/* The device address of workspace buffer w (0 when out of range). */
TIR_API tir_rt_ptr tir_rt_program_set_workspace(const tir_rt_program_set *ps, int w);
/* Launches the kernels in order on the stream (stream order makes each
 * see the previous one's writes): args holds the function's own
 * parameters only (ms->nparams, as tir_rt_program_launch); the workspace
 * pointers are appended for every kernel.  Returns without waiting.
 * Errors: those of tir_rt_program_launch, the message naming the kernel;
 * kernels before a failed launch stay queued. */
TIR_API tir_status tir_rt_program_set_launch(tir_ctx *ctx, tir_rt_program_set *ps, int nargs,
                                             const tir_rt_arg *args);

#ifdef __cplusplus
}
#endif
#endif
