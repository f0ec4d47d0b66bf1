/* rt_internal.h: what the files of src/runtime share: the loaded driver's
 * entry points, the device handle and the objects it owns, error helpers
 * and the benchmark core.  Not installed.
 */
#ifndef MINITIR_RT_INTERNAL_H
#define MINITIR_RT_INTERNAL_H

#include "cuda_abi.h"
#include "ir/ir_internal.h"
#include "minitir/runtime.h"

/* ------------------------------------------------------------------ driver */

/* The driver's entry points, loaded once per process (driver.c).  Members
 * drop the "cu" prefix and the version suffix; the symbol each one comes
 * from is listed in driver.c. */
typedef struct rt_driver {
    void *lib;
    rt_PFN_cuGetErrorName GetErrorName;
    rt_PFN_cuGetErrorString GetErrorString;
    rt_PFN_cuInit Init;
    rt_PFN_cuDriverGetVersion DriverGetVersion;
    rt_PFN_cuDeviceGetCount DeviceGetCount;
    rt_PFN_cuDeviceGet DeviceGet;
    rt_PFN_cuDeviceGetName DeviceGetName;
    rt_PFN_cuDeviceGetAttribute DeviceGetAttribute;
    rt_PFN_cuDeviceTotalMem_v2 DeviceTotalMem;
    rt_PFN_cuDevicePrimaryCtxRetain DevicePrimaryCtxRetain;
    rt_PFN_cuDevicePrimaryCtxRelease_v2 DevicePrimaryCtxRelease;
    rt_PFN_cuCtxSetCurrent CtxSetCurrent;
    rt_PFN_cuCtxSynchronize CtxSynchronize;
    rt_PFN_cuMemGetInfo_v2 MemGetInfo;
    rt_PFN_cuMemAlloc_v2 MemAlloc;
    rt_PFN_cuMemFree_v2 MemFree;
    rt_PFN_cuMemsetD8_v2 MemsetD8;
    rt_PFN_cuMemsetD32_v2 MemsetD32;
    rt_PFN_cuMemcpyHtoD_v2 MemcpyHtoD;
    rt_PFN_cuMemcpyDtoH_v2 MemcpyDtoH;
    rt_PFN_cuMemcpyDtoD_v2 MemcpyDtoD;
    rt_PFN_cuModuleLoadDataEx ModuleLoadDataEx;
    rt_PFN_cuModuleUnload ModuleUnload;
    rt_PFN_cuModuleGetFunction ModuleGetFunction;
    rt_PFN_cuFuncGetAttribute FuncGetAttribute;
    rt_PFN_cuFuncSetAttribute FuncSetAttribute;
    rt_PFN_cuFuncGetParamInfo FuncGetParamInfo; /* may be NULL */
    rt_PFN_cuLaunchKernel LaunchKernel;
    rt_PFN_cuEventCreate EventCreate;
    rt_PFN_cuEventDestroy_v2 EventDestroy;
    rt_PFN_cuEventRecord EventRecord;
    rt_PFN_cuEventSynchronize EventSynchronize;
    rt_PFN_cuEventQuery EventQuery;
    rt_PFN_cuEventElapsedTime EventElapsedTime;
    int version; /* cuDriverGetVersion */
} rt_driver;

/* Loads libcuda and runs cuInit(0) the first time; later calls return the
 * same table.  Errors: TIR_ERR_NO_DRIVER, TIR_ERR_NO_DEVICE, TIR_ERR_CUDA. */
tir_status rt_driver_load(tir_ctx *ctx, const rt_driver **out);

/* "CUDA_ERROR_INVALID_PTX" and its text; never NULL (falls back to a
 * built-in table, for the stub library whose cuGetErrorName fails too). */
const char *rt_cu_error_name(const rt_driver *cu, rt_CUresult r);
const char *rt_cu_error_string(const rt_driver *cu, rt_CUresult r);

/* Records "cuda: <call> failed: <NAME> (<text>)" (plus "\n<detail>" when
 * detail is not NULL) as TIR_ERR_CUDA and returns that. */
tir_status rt_cu_fail(tir_ctx *ctx, const rt_driver *cu, rt_CUresult r, const char *call,
                      const char *detail);

/* Calls cu->fn(args...) and turns a failure into TIR_ERR_CUDA naming
 * cu<fn>. */
#define RT_CU(ctx, cu, fn, ...)                                                           \
    rt_cu_check((ctx), (cu), (cu)->fn(__VA_ARGS__), "cu" #fn)
static inline tir_status rt_cu_check(tir_ctx *ctx, const rt_driver *cu, rt_CUresult r,
                                     const char *call) {
    return r == RT_CUDA_SUCCESS ? TIR_OK : rt_cu_fail(ctx, cu, r, call, NULL);
}

/* ---------------------------------------------------------- device objects */

typedef struct rt_alloc {
    tir_rt_ptr ptr;
    size_t bytes;
} rt_alloc;

struct tir_rt_device {
    const rt_driver *cu;
    rt_CUdevice dev;
    rt_CUcontext pctx;
    tir_rt_props props;
    rt_alloc *allocs; /* live allocations, unordered */
    size_t nallocs, capallocs;
    tir_rt_module *modules; /* doubly linked lists of owned objects */
    tir_rt_event *events;
    tir_rt_blas *blas;
    tir_rt_module *builtin; /* kernels.c's module, loaded on first use */
    tir_rt_ptr flush_buf;   /* bench.c's L2 flush buffer, 0 until needed */
    size_t flush_bytes;
    int jit_opt_level; /* CU_JIT_OPTIMIZATION_LEVEL for loads; -1: the driver's default */
};

struct tir_rt_kernel {
    tir_rt_kernel *next;
    tir_rt_module *mod;
    rt_CUfunction fn;
    char *name;
    int nparams;         /* -1: unknown */
    size_t *param_sizes; /* nparams entries */
    int max_threads, static_smem, max_dyn_smem;
};

struct tir_rt_module {
    tir_rt_module *next, *prev;
    tir_rt_device *dev;
    rt_CUmodule mod;
    char *info_log;
    tir_rt_kernel *kernels;
};

struct tir_rt_event {
    tir_rt_event *next, *prev;
    tir_rt_device *dev;
    rt_CUevent ev;
};

struct tir_rt_blas {
    tir_rt_blas *next, *prev;
    tir_rt_device *dev;
    rt_cublasHandle_t handle;
};

/* Intrusive doubly linked lists headed by a pointer in the device. */
#define RT_LIST_PUSH(head, x)                                                             \
    do {                                                                                  \
        (x)->prev = NULL;                                                                 \
        (x)->next = (head);                                                               \
        if (head) (head)->prev = (x);                                                     \
        (head) = (x);                                                                     \
    } while (0)
#define RT_LIST_REMOVE(head, x)                                                           \
    do {                                                                                  \
        if ((x)->prev) (x)->prev->next = (x)->next;                                       \
        else (head) = (x)->next;                                                          \
        if ((x)->next) (x)->next->prev = (x)->prev;                                       \
    } while (0)

/* TIR_ERR_INVALID_ARG unless [p, p + bytes) lies in one live allocation of
 * dev; `what` names the buffer in the message. */
tir_status rt_check_range(tir_ctx *ctx, const tir_rt_device *dev, tir_rt_ptr p, size_t bytes,
                          const char *what);

/* TIR_ERR_INVALID_ARG unless 1 <= M, N, K <= INT32_MAX (what cuBLAS and
 * the built-in kernels index with). */
tir_status rt_check_dims(tir_ctx *ctx, const char *what, int64_t M, int64_t N, int64_t K);

/* Makes dev's context current (cheap when it already is). */
tir_status rt_bind(tir_ctx *ctx, tir_rt_device *dev);

/* Destroys a cuBLAS handle and unlinks it (blas.c); used by tir_rt_device_destroy. */
void rt_blas_destroy(tir_rt_blas *b);

/* One of kernels.c's built-in kernels, loading their module on first use. */
tir_status rt_builtin_kernel(tir_ctx *ctx, tir_rt_device *dev, const char *name,
                             tir_rt_kernel **out);
/* Their PTX text (for tests that run ptxas on it). */
const char *rt_builtin_ptx(void);

/* ---------------------------------------------------------- bench core
 *
 * tir_rt_bench with the clock taken out, so the sampling logic can be
 * tested without a GPU: `mark` records the start (end = 0) or end (end =
 * 1) of sample i, `elapsed` waits and returns the time between the two
 * marks of sample i, `flush` clears caches, `release` frees what `prepare`
 * made (and is called even when prepare failed).  `hold` (may be NULL)
 * queues work that keeps the GPU busy for ms milliseconds; `held` says
 * whether the GPU is still in the last hold (so everything queued since
 * will run back to back); `host_ms` reads the host's clock, to size the
 * next hold.
 */
typedef struct rt_bench_clock {
    void *self;
    tir_status (*prepare)(void *self, tir_ctx *ctx, int nsamples);
    tir_status (*flush)(void *self, tir_ctx *ctx);
    tir_status (*mark)(void *self, tir_ctx *ctx, int sample, int end);
    tir_status (*elapsed)(void *self, tir_ctx *ctx, int sample, double *ms);
    void (*release)(void *self);
    tir_status (*hold)(void *self, tir_ctx *ctx, double ms);
    tir_status (*held)(void *self, tir_ctx *ctx, bool *still);
    double (*host_ms)(void *self);
} rt_bench_clock;

/* Whether ev's recorded work is still pending on the GPU (cuEventQuery). */
tir_status rt_event_pending(tir_ctx *ctx, tir_rt_event *ev, bool *pending);

tir_status rt_bench_run(tir_ctx *ctx, const rt_bench_clock *clock, tir_rt_bench_fn fn,
                        void *user, const tir_rt_bench_opts *opts, tir_rt_bench_result *res);

/* Median (mean of the middle two for even n), min, max and mean of the n
 * sample times divided by inner; sorts ms in place. */
void rt_bench_stats(double *ms, int n, int inner, tir_rt_bench_result *res);

#endif
