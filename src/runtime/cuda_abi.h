/* cuda_abi.h: the slice of the CUDA Driver API and of cuBLAS that the
 * runtime calls, declared by hand so minitir builds on machines without the
 * CUDA toolkit.  Both libraries are loaded with dlopen at run time; nothing
 * here is linked.
 *
 * Every name carries an rt_ / RT_ prefix so this header can sit next to the
 * real cuda.h and cublas_api.h in one translation unit: tests/test_cuda_abi.c
 * does exactly that and checks each value, size and prototype against them.
 *
 * The toolkit declares CUresult, CUdevice_attribute, CUjit_option, ... as
 * enums whose values are all non-negative.  C compilers (GCC, Clang) give
 * such an enum the type unsigned int, with which it is compatible and passed
 * identically, so those are `unsigned int` here.  cublasGemmAlgo_t has a
 * negative value (CUBLAS_GEMM_DEFAULT = -1) and is therefore `int`.
 * Opaque handles use the toolkit's own struct tags, which makes them the
 * very same types when both headers are seen together.
 *
 * Functions are declared as pointer types named after the symbol the
 * library exports (the versioned one where a _v2 exists: the unversioned
 * names are the old 32-bit ABI, kept by the driver for old binaries).
 */
#ifndef MINITIR_RT_CUDA_ABI_H
#define MINITIR_RT_CUDA_ABI_H

#include <stddef.h>

/* ------------------------------------------------------------ driver types */

typedef unsigned int rt_CUresult;           /* enum cudaError_enum */
typedef int rt_CUdevice;                    /* CUdevice_v1 */
typedef unsigned long long rt_CUdeviceptr;  /* CUdeviceptr_v2 (64-bit hosts) */
typedef struct CUctx_st *rt_CUcontext;
typedef struct CUmod_st *rt_CUmodule;
typedef struct CUfunc_st *rt_CUfunction;
typedef struct CUevent_st *rt_CUevent;
typedef struct CUstream_st *rt_CUstream;
typedef unsigned int rt_CUdevice_attribute; /* enum CUdevice_attribute_enum */
typedef unsigned int rt_CUfunction_attribute; /* enum CUfunction_attribute_enum */
typedef unsigned int rt_CUjit_option;       /* enum CUjit_option_enum */

/* CUresult values the runtime tells apart (the rest are reported by name). */
enum {
    RT_CUDA_SUCCESS = 0,
    RT_CUDA_ERROR_INVALID_VALUE = 1,
    RT_CUDA_ERROR_OUT_OF_MEMORY = 2,
    RT_CUDA_ERROR_NOT_INITIALIZED = 3,
    RT_CUDA_ERROR_DEINITIALIZED = 4,
    RT_CUDA_ERROR_STUB_LIBRARY = 34,
    RT_CUDA_ERROR_NO_DEVICE = 100,
    RT_CUDA_ERROR_INVALID_DEVICE = 101,
    RT_CUDA_ERROR_INVALID_IMAGE = 200,
    RT_CUDA_ERROR_INVALID_CONTEXT = 201,
    RT_CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    RT_CUDA_ERROR_INVALID_PTX = 218,
    RT_CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
    RT_CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    RT_CUDA_ERROR_INVALID_SOURCE = 300,
    RT_CUDA_ERROR_OPERATING_SYSTEM = 304,
    RT_CUDA_ERROR_INVALID_HANDLE = 400,
    RT_CUDA_ERROR_NOT_FOUND = 500,
    RT_CUDA_ERROR_NOT_READY = 600,
    RT_CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    RT_CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    RT_CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    RT_CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    RT_CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    RT_CUDA_ERROR_LAUNCH_FAILED = 719,
    RT_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    RT_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
    RT_CUDA_ERROR_UNKNOWN = 999,
};

enum {
    RT_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    RT_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    RT_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    RT_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    RT_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    RT_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    RT_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    RT_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    RT_CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    RT_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    RT_CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    RT_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    RT_CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
    RT_CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
    RT_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    RT_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    RT_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    RT_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
    RT_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum {
    RT_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    RT_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    RT_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
    RT_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    RT_CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    RT_CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
    RT_CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
    RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

enum {
    RT_CU_JIT_INFO_LOG_BUFFER = 3,
    RT_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    RT_CU_JIT_ERROR_LOG_BUFFER = 5,
    RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    RT_CU_JIT_OPTIMIZATION_LEVEL = 7,
    RT_CU_JIT_LOG_VERBOSE = 12,
};

enum { RT_CU_EVENT_DEFAULT = 0 };

/* ---------------------------------------------------- driver entry points */

typedef rt_CUresult (*rt_PFN_cuGetErrorName)(rt_CUresult error, const char **str);
typedef rt_CUresult (*rt_PFN_cuGetErrorString)(rt_CUresult error, const char **str);
typedef rt_CUresult (*rt_PFN_cuInit)(unsigned int flags);
typedef rt_CUresult (*rt_PFN_cuDriverGetVersion)(int *version);
typedef rt_CUresult (*rt_PFN_cuDeviceGetCount)(int *count);
typedef rt_CUresult (*rt_PFN_cuDeviceGet)(rt_CUdevice *dev, int ordinal);
typedef rt_CUresult (*rt_PFN_cuDeviceGetName)(char *name, int len, rt_CUdevice dev);
typedef rt_CUresult (*rt_PFN_cuDeviceGetAttribute)(int *value, rt_CUdevice_attribute attr,
                                                   rt_CUdevice dev);
typedef rt_CUresult (*rt_PFN_cuDeviceTotalMem_v2)(size_t *bytes, rt_CUdevice dev);
typedef rt_CUresult (*rt_PFN_cuDevicePrimaryCtxRetain)(rt_CUcontext *ctx, rt_CUdevice dev);
typedef rt_CUresult (*rt_PFN_cuDevicePrimaryCtxRelease_v2)(rt_CUdevice dev);
typedef rt_CUresult (*rt_PFN_cuCtxSetCurrent)(rt_CUcontext ctx);
typedef rt_CUresult (*rt_PFN_cuCtxSynchronize)(void);
typedef rt_CUresult (*rt_PFN_cuMemGetInfo_v2)(size_t *free_bytes, size_t *total_bytes);
typedef rt_CUresult (*rt_PFN_cuMemAlloc_v2)(rt_CUdeviceptr *dptr, size_t bytes);
typedef rt_CUresult (*rt_PFN_cuMemFree_v2)(rt_CUdeviceptr dptr);
typedef rt_CUresult (*rt_PFN_cuMemsetD8_v2)(rt_CUdeviceptr dst, unsigned char value, size_t n);
typedef rt_CUresult (*rt_PFN_cuMemsetD32_v2)(rt_CUdeviceptr dst, unsigned int value, size_t n);
typedef rt_CUresult (*rt_PFN_cuMemcpyHtoD_v2)(rt_CUdeviceptr dst, const void *src, size_t bytes);
typedef rt_CUresult (*rt_PFN_cuMemcpyDtoH_v2)(void *dst, rt_CUdeviceptr src, size_t bytes);
typedef rt_CUresult (*rt_PFN_cuMemcpyDtoD_v2)(rt_CUdeviceptr dst, rt_CUdeviceptr src,
                                              size_t bytes);
typedef rt_CUresult (*rt_PFN_cuModuleLoadDataEx)(rt_CUmodule *module, const void *image,
                                                 unsigned int nopts, rt_CUjit_option *opts,
                                                 void **values);
typedef rt_CUresult (*rt_PFN_cuModuleUnload)(rt_CUmodule module);
typedef rt_CUresult (*rt_PFN_cuModuleGetFunction)(rt_CUfunction *fn, rt_CUmodule module,
                                                  const char *name);
typedef rt_CUresult (*rt_PFN_cuFuncGetAttribute)(int *value, rt_CUfunction_attribute attr,
                                                 rt_CUfunction fn);
typedef rt_CUresult (*rt_PFN_cuFuncSetAttribute)(rt_CUfunction fn, rt_CUfunction_attribute attr,
                                                 int value);
/* CUDA 12.4+; optional (argument checks are skipped without it). */
typedef rt_CUresult (*rt_PFN_cuFuncGetParamInfo)(rt_CUfunction fn, size_t index,
                                                 size_t *offset, size_t *size);
typedef rt_CUresult (*rt_PFN_cuLaunchKernel)(rt_CUfunction fn, unsigned int gx, unsigned int gy,
                                             unsigned int gz, unsigned int bx, unsigned int by,
                                             unsigned int bz, unsigned int shared_bytes,
                                             rt_CUstream stream, void **params, void **extra);
typedef rt_CUresult (*rt_PFN_cuEventCreate)(rt_CUevent *ev, unsigned int flags);
typedef rt_CUresult (*rt_PFN_cuEventDestroy_v2)(rt_CUevent ev);
typedef rt_CUresult (*rt_PFN_cuEventRecord)(rt_CUevent ev, rt_CUstream stream);
typedef rt_CUresult (*rt_PFN_cuEventSynchronize)(rt_CUevent ev);
typedef rt_CUresult (*rt_PFN_cuEventQuery)(rt_CUevent ev);
/* cuEventElapsedTime_v2 (CUDA 12.8+) and the older cuEventElapsedTime have
 * this same prototype; the runtime takes the newer one when it exists. */
typedef rt_CUresult (*rt_PFN_cuEventElapsedTime)(float *ms, rt_CUevent start, rt_CUevent end);

/* ------------------------------------------------------------ cuBLAS types */

typedef unsigned int rt_cublasStatus_t;       /* cublasStatus_t */
typedef struct cublasContext *rt_cublasHandle_t;
typedef unsigned int rt_cublasOperation_t;    /* cublasOperation_t */
typedef unsigned int rt_cublasMath_t;         /* cublasMath_t */
typedef unsigned int rt_cublasComputeType_t;  /* cublasComputeType_t */
typedef int rt_cublasGemmAlgo_t;              /* cublasGemmAlgo_t (has -1) */
typedef unsigned int rt_cudaDataType;         /* cudaDataType */
typedef unsigned int rt_libraryPropertyType;  /* libraryPropertyType */

enum {
    RT_CUBLAS_STATUS_SUCCESS = 0,
    RT_CUBLAS_STATUS_NOT_INITIALIZED = 1,
    RT_CUBLAS_STATUS_ALLOC_FAILED = 3,
    RT_CUBLAS_STATUS_INVALID_VALUE = 7,
    RT_CUBLAS_STATUS_ARCH_MISMATCH = 8,
    RT_CUBLAS_STATUS_MAPPING_ERROR = 11,
    RT_CUBLAS_STATUS_EXECUTION_FAILED = 13,
    RT_CUBLAS_STATUS_INTERNAL_ERROR = 14,
    RT_CUBLAS_STATUS_NOT_SUPPORTED = 15,
    RT_CUBLAS_STATUS_LICENSE_ERROR = 16,
};
enum { RT_CUBLAS_OP_N = 0, RT_CUBLAS_OP_T = 1 };
enum { RT_CUBLAS_DEFAULT_MATH = 0, RT_CUBLAS_PEDANTIC_MATH = 2 };
enum {
    RT_CUBLAS_COMPUTE_32F = 68,
    RT_CUBLAS_COMPUTE_32F_PEDANTIC = 69,
    RT_CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
};
enum { RT_CUBLAS_GEMM_DEFAULT = -1 };
enum { RT_CUDA_R_32F = 0, RT_CUDA_R_16F = 2, RT_CUDA_R_16BF = 14 };
enum { RT_MAJOR_VERSION = 0, RT_MINOR_VERSION = 1, RT_PATCH_LEVEL = 2 };

/* ---------------------------------------------------- cuBLAS entry points */

typedef rt_cublasStatus_t (*rt_PFN_cublasGetProperty)(rt_libraryPropertyType type, int *value);
typedef const char *(*rt_PFN_cublasGetStatusName)(rt_cublasStatus_t status);
typedef const char *(*rt_PFN_cublasGetStatusString)(rt_cublasStatus_t status);
typedef rt_cublasStatus_t (*rt_PFN_cublasCreate_v2)(rt_cublasHandle_t *handle);
typedef rt_cublasStatus_t (*rt_PFN_cublasDestroy_v2)(rt_cublasHandle_t handle);
/* cudaStream_t is struct CUstream_st *, the driver's CUstream. */
typedef rt_cublasStatus_t (*rt_PFN_cublasSetStream_v2)(rt_cublasHandle_t handle,
                                                      rt_CUstream stream);
typedef rt_cublasStatus_t (*rt_PFN_cublasSetMathMode)(rt_cublasHandle_t handle,
                                                     rt_cublasMath_t mode);
typedef rt_cublasStatus_t (*rt_PFN_cublasSgemm_v2)(
    rt_cublasHandle_t handle, rt_cublasOperation_t transa, rt_cublasOperation_t transb, int m,
    int n, int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
    const float *beta, float *C, int ldc);
typedef rt_cublasStatus_t (*rt_PFN_cublasGemmEx)(
    rt_cublasHandle_t handle, rt_cublasOperation_t transa, rt_cublasOperation_t transb, int m,
    int n, int k, const void *alpha, const void *A, rt_cudaDataType Atype, int lda,
    const void *B, rt_cudaDataType Btype, int ldb, const void *beta, void *C,
    rt_cudaDataType Ctype, int ldc, rt_cublasComputeType_t compute, rt_cublasGemmAlgo_t algo);
/* The strided-batched forms: batchCount products, operand i of product b
 * at X + b * strideX elements (the strides are `long long int`). */
typedef rt_cublasStatus_t (*rt_PFN_cublasSgemmStridedBatched)(
    rt_cublasHandle_t handle, rt_cublasOperation_t transa, rt_cublasOperation_t transb, int m,
    int n, int k, const float *alpha, const float *A, int lda, long long int strideA,
    const float *B, int ldb, long long int strideB, const float *beta, float *C, int ldc,
    long long int strideC, int batchCount);
typedef rt_cublasStatus_t (*rt_PFN_cublasGemmStridedBatchedEx)(
    rt_cublasHandle_t handle, rt_cublasOperation_t transa, rt_cublasOperation_t transb, int m,
    int n, int k, const void *alpha, const void *A, rt_cudaDataType Atype, int lda,
    long long int strideA, const void *B, rt_cudaDataType Btype, int ldb, long long int strideB,
    const void *beta, void *C, rt_cudaDataType Ctype, int ldc, long long int strideC,
    int batchCount, rt_cublasComputeType_t compute, rt_cublasGemmAlgo_t algo);

#endif
