/* blas.c: cuBLAS, loaded at run time, as the reference and the yardstick
 * for generated GEMMs.
 *
 * cuBLAS is column-major; minitir's matrices are row-major.  A row-major
 * X[r,c] has the bytes of the column-major Xᵀ (c x r, leading dimension c),
 * so C = A·B row-major is computed as Cᵀ = Bᵀ·Aᵀ column-major: cuBLAS gets
 * B first, m = N, n = M, and every leading dimension is the row length of
 * the row-major matrix.  For B[N,K] (C = A·Bᵀ) the first operand is
 * transposed.  The strided-batched GEMM is the same call per batch:
 * batch b of each operand starts b matrices after the first (A[b] at
 * A + b*M*K elements, and so on), which is what cuBLAS's strides mean in
 * either view.
 *
 * Like the driver, the library stays loaded once it has loaded.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "rt_internal.h"

typedef struct rt_blas_lib {
    void *lib;
    rt_PFN_cublasGetProperty GetProperty;
    rt_PFN_cublasGetStatusName GetStatusName;
    rt_PFN_cublasGetStatusString GetStatusString;
    rt_PFN_cublasCreate_v2 Create;
    rt_PFN_cublasDestroy_v2 Destroy;
    rt_PFN_cublasSetStream_v2 SetStream;
    rt_PFN_cublasSetMathMode SetMathMode;
    rt_PFN_cublasSgemm_v2 Sgemm;
    rt_PFN_cublasGemmEx GemmEx;
    rt_PFN_cublasSgemmStridedBatched SgemmStridedBatched;
    rt_PFN_cublasGemmStridedBatchedEx GemmStridedBatchedEx;
    int version;
} rt_blas_lib;

static const struct {
    const char *sym;
    size_t off;
} blas_syms[] = {
    {"cublasGetProperty", offsetof(rt_blas_lib, GetProperty)},
    {"cublasGetStatusName", offsetof(rt_blas_lib, GetStatusName)},
    {"cublasGetStatusString", offsetof(rt_blas_lib, GetStatusString)},
    {"cublasCreate_v2", offsetof(rt_blas_lib, Create)},
    {"cublasDestroy_v2", offsetof(rt_blas_lib, Destroy)},
    {"cublasSetStream_v2", offsetof(rt_blas_lib, SetStream)},
    {"cublasSetMathMode", offsetof(rt_blas_lib, SetMathMode)},
    {"cublasSgemm_v2", offsetof(rt_blas_lib, Sgemm)},
    {"cublasGemmEx", offsetof(rt_blas_lib, GemmEx)},
    {"cublasSgemmStridedBatched", offsetof(rt_blas_lib, SgemmStridedBatched)},
    {"cublasGemmStridedBatchedEx", offsetof(rt_blas_lib, GemmStridedBatchedEx)},
};

static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;
static rt_blas_lib blas_lib;
static bool blas_ready;

static tir_status resolve(tir_ctx *ctx, void *lib, const char *path, rt_blas_lib *b) {
    memset(b, 0, sizeof *b);
    for (size_t i = 0; i < sizeof blas_syms / sizeof blas_syms[0]; i++) {
        void *p = dlsym(lib, blas_syms[i].sym);
        if (!p)
            return tir_ctx_fail(ctx, TIR_ERR_NO_CUBLAS,
                                "cublas: '%s' lacks %s (minitir needs cuBLAS 12 or newer)", path,
                                blas_syms[i].sym);
        memcpy((char *)b + blas_syms[i].off, &p, sizeof p);
    }
    int major = 0, minor = 0, patch = 0;
    if (b->GetProperty(RT_MAJOR_VERSION, &major) != RT_CUBLAS_STATUS_SUCCESS ||
        b->GetProperty(RT_MINOR_VERSION, &minor) != RT_CUBLAS_STATUS_SUCCESS ||
        b->GetProperty(RT_PATCH_LEVEL, &patch) != RT_CUBLAS_STATUS_SUCCESS)
        return tir_ctx_fail(ctx, TIR_ERR_NO_CUBLAS, "cublas: '%s' does not report its version",
                            path);
    b->version = major * 10000 + minor * 100 + patch;
    b->lib = lib;
    return TIR_OK;
}

static tir_status load_blas(tir_ctx *ctx, const rt_blas_lib **out) {
    *out = NULL;
    pthread_mutex_lock(&blas_mu);
    tir_status s = TIR_OK;
    if (!blas_ready) {
        const char *env = getenv("MINITIR_CUBLAS_LIB");
        const char *defaults[] = {"libcublas.so.13", "libcublas.so.12"};
        const char *const *paths = defaults;
        size_t npaths = 2;
        if (env && *env) {
            paths = &env;
            npaths = 1;
        }
        char why[1024] = "";
        size_t used = 0;
        s = TIR_ERR_NO_CUBLAS;
        for (size_t i = 0; i < npaths && s != TIR_OK; i++) {
            void *lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
            if (!lib) {
                const char *e = dlerror();
                int n = snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "",
                                 e ? e : paths[i]);
                if (n > 0) used = strlen(why);
                continue;
            }
            rt_blas_lib b;
            s = resolve(ctx, lib, paths[i], &b);
            if (s == TIR_OK) {
                blas_lib = b;
                blas_ready = true;
            } else {
                /* Nothing of it ran beyond version queries. */
                dlclose(lib);
                pthread_mutex_unlock(&blas_mu);
                return s;
            }
        }
        if (s != TIR_OK)
            tir_ctx_fail(ctx, TIR_ERR_NO_CUBLAS, "cublas: cannot load cuBLAS: %s (%s)", why,
                         npaths == 1 ? "set by MINITIR_CUBLAS_LIB"
                                     : "MINITIR_CUBLAS_LIB names another file");
    }
    pthread_mutex_unlock(&blas_mu);
    if (s == TIR_OK) *out = &blas_lib;
    return s;
}

static tir_status blas_fail(tir_ctx *ctx, rt_cublasStatus_t st, const char *call,
                            const char *detail) {
    const rt_blas_lib *b = &blas_lib;
    const char *name = b->GetStatusName ? b->GetStatusName(st) : NULL;
    const char *text = b->GetStatusString ? b->GetStatusString(st) : NULL;
    return tir_ctx_fail(ctx, TIR_ERR_CUDA, "cublas: %s failed: %s (%s), status %u%s%s", call,
                        name ? name : "CUBLAS_STATUS_?", text ? text : "no description", st,
                        detail ? " " : "", detail ? detail : "");
}

tir_status tir_rt_blas_probe(tir_ctx *ctx, int *version) {
    const rt_blas_lib *b;
    tir_status s = load_blas(ctx, &b);
    if (version) *version = s == TIR_OK ? b->version : 0;
    return s;
}

tir_status tir_rt_blas_create(tir_ctx *ctx, tir_rt_device *dev, tir_rt_blas **out) {
    *out = NULL;
    if (!dev) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cublas: no device");
    const rt_blas_lib *b;
    TIR_TRY(load_blas(ctx, &b));
    TIR_TRY(rt_bind(ctx, dev));
    tir_rt_blas *h = calloc(1, sizeof *h);
    if (!h) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "cublas: out of host memory");
    /* cuBLAS runs on the CUDA runtime, which picks up the context current
       on this thread: dev's primary context. */
    rt_cublasStatus_t st = b->Create(&h->handle);
    if (st != RT_CUBLAS_STATUS_SUCCESS) {
        free(h);
        return blas_fail(ctx, st, "cublasCreate_v2", NULL);
    }
    /* The legacy default stream, where everything else of the runtime
       goes, so events and ordering need no cross-stream care. */
    st = b->SetStream(h->handle, NULL);
    /* Default math, set explicitly rather than trusted: for cublasSgemm it
       keeps float32 inputs and float32 arithmetic and never uses TF32,
       which needs CUBLAS_TF32_TENSOR_OP_MATH or a _FAST_TF32 compute type
       (the NVIDIA_TF32_OVERRIDE variable can only switch TF32 off).  Not
       CUBLAS_PEDANTIC_MATH: pedantic may rule out cuBLAS's fastest SGEMM
       kernels, and a slowed-down yardstick would flatter our kernels; it
       is available as TIR_RT_GEMM_F32_PEDANTIC.  The accuracy tests hold
       SGEMM to 1e-5 relative error, which TF32 (~5e-4) could not meet. */
    if (st == RT_CUBLAS_STATUS_SUCCESS) st = b->SetMathMode(h->handle, RT_CUBLAS_DEFAULT_MATH);
    if (st != RT_CUBLAS_STATUS_SUCCESS) {
        b->Destroy(h->handle);
        free(h);
        return blas_fail(ctx, st, "cublasSetStream_v2/cublasSetMathMode", NULL);
    }
    h->dev = dev;
    RT_LIST_PUSH(dev->blas, h);
    *out = h;
    return TIR_OK;
}

void rt_blas_destroy(tir_rt_blas *h) {
    tir_rt_device *dev = h->dev;
    RT_LIST_REMOVE(dev->blas, h);
    dev->cu->CtxSetCurrent(dev->pctx);
    blas_lib.Destroy(h->handle);
    free(h);
}

void tir_rt_blas_destroy(tir_rt_blas *blas) {
    if (blas) rt_blas_destroy(blas);
}

const char *tir_rt_gemm_kind_name(tir_rt_gemm_kind kind) {
    switch (kind) {
    case TIR_RT_GEMM_F32: return "f32";
    case TIR_RT_GEMM_F32_PEDANTIC: return "f32_pedantic";
    case TIR_RT_GEMM_TF32: return "tf32";
    case TIR_RT_GEMM_F16: return "f16";
    case TIR_RT_GEMM_BF16: return "bf16";
    }
    return "?";
}

tir_dtype tir_rt_gemm_kind_input(tir_rt_gemm_kind kind) {
    switch (kind) {
    case TIR_RT_GEMM_F16: return TIR_F16;
    case TIR_RT_GEMM_BF16: return TIR_BF16;
    default: return TIR_F32;
    }
}

/* What a GEMM call needs once its arguments are checked: the types, and
 * the operands in cuBLAS's column-major terms (see the top of the file). */
typedef struct gemm_plan {
    rt_cudaDataType in_type;
    rt_cublasComputeType_t compute;
    rt_cublasOperation_t opb;
    int m, n, k, lda, ldb, ldc;
    long long stride_a, stride_b, stride_c; /* elements from one batch to the next */
} gemm_plan;

static tir_status kind_types(tir_ctx *ctx, tir_rt_gemm_kind kind, gemm_plan *p) {
    p->in_type = RT_CUDA_R_32F;
    p->compute = RT_CUBLAS_COMPUTE_32F;
    switch (kind) {
    case TIR_RT_GEMM_F32: break;
    case TIR_RT_GEMM_F32_PEDANTIC: p->compute = RT_CUBLAS_COMPUTE_32F_PEDANTIC; break;
    case TIR_RT_GEMM_TF32: p->compute = RT_CUBLAS_COMPUTE_32F_FAST_TF32; break;
    case TIR_RT_GEMM_F16: p->in_type = RT_CUDA_R_16F; break;
    case TIR_RT_GEMM_BF16: p->in_type = RT_CUDA_R_16BF; break;
    default:
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cublas: unknown gemm kind %d", (int)kind);
    }
    return TIR_OK;
}

/* `batch` dense rows x cols matrices of es-byte elements at p must lie in
 * one live allocation.  rows * cols * es fits in size_t (both <= INT32_MAX,
 * es <= 4); the batch may not, and is refused rather than wrapped. */
static tir_status check_operand(tir_ctx *ctx, const tir_rt_device *dev, const char *what,
                                const char *operand, tir_rt_ptr p, int64_t batch, int64_t rows,
                                int64_t cols, size_t es) {
    char name[48];
    snprintf(name, sizeof name, "%s %s", what, operand);
    size_t bytes;
    if (__builtin_mul_overflow((size_t)rows * (size_t)cols * es, (size_t)batch, &bytes))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "cublas: %s: %lld batches of %lldx%lld elements exceed the address "
                            "space",
                            name, (long long)batch, (long long)rows, (long long)cols);
    return rt_check_range(ctx, dev, p, bytes, name);
}

/* The checks tir_rt_blas_gemm and tir_rt_blas_gemm_batched share (`what`
 * is "gemm" or "batched gemm"), then the plan of the call. */
static tir_status plan_gemm(tir_ctx *ctx, tir_rt_blas *blas, const char *what,
                            tir_rt_gemm_kind kind, int64_t batch, int64_t M, int64_t N, int64_t K,
                            tir_rt_ptr A, tir_rt_ptr B, tir_rt_b_layout layout, tir_rt_ptr C,
                            gemm_plan *p) {
    if (!blas) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cublas: no handle");
    char name[48];
    snprintf(name, sizeof name, "cublas: %s", what);
    TIR_TRY(rt_check_dims(ctx, name, M, N, K));
    if (batch < 1 || batch > INT32_MAX)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "%s: batch %lld must be in 1..%d", name,
                            (long long)batch, INT32_MAX);
    if (layout != TIR_RT_B_KN && layout != TIR_RT_B_NK)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cublas: unknown B layout %d", (int)layout);
    TIR_TRY(kind_types(ctx, kind, p));
    const tir_rt_device *dev = blas->dev;
    size_t es = tir_dtype_bytes(tir_rt_gemm_kind_input(kind));
    TIR_TRY(check_operand(ctx, dev, what, "A", A, batch, M, K, es));
    TIR_TRY(check_operand(ctx, dev, what, "B", B, batch, K, N, es));
    TIR_TRY(check_operand(ctx, dev, what, "C", C, batch, M, N, 4));
    /* Cᵀ[N,M] = op(B)·Aᵀ in column-major terms (see the top of the file). */
    p->m = (int)N, p->n = (int)M, p->k = (int)K;
    p->opb = layout == TIR_RT_B_NK ? RT_CUBLAS_OP_T : RT_CUBLAS_OP_N;
    p->ldb = layout == TIR_RT_B_NK ? (int)K : (int)N, p->lda = (int)K, p->ldc = (int)N;
    p->stride_a = (long long)M * K, p->stride_b = (long long)K * N, p->stride_c = (long long)M * N;
    return TIR_OK;
}

/* blas_fail with the call's shape in the message. */
static tir_status gemm_fail(tir_ctx *ctx, rt_cublasStatus_t st, const char *call,
                            tir_rt_gemm_kind kind, int64_t batch, int64_t M, int64_t N, int64_t K,
                            tir_rt_b_layout layout) {
    char detail[200], nb[40] = "";
    if (batch > 0) snprintf(nb, sizeof nb, "batched gemm batch=%lld", (long long)batch);
    snprintf(detail, sizeof detail, "(%s %s M=%lld N=%lld K=%lld, B %s)",
             tir_rt_gemm_kind_name(kind), batch > 0 ? nb : "gemm", (long long)M, (long long)N,
             (long long)K, layout == TIR_RT_B_NK ? "[N,K]" : "[K,N]");
    return blas_fail(ctx, st, call, detail);
}

tir_status tir_rt_blas_gemm(tir_ctx *ctx, tir_rt_blas *blas, tir_rt_gemm_kind kind, int64_t M,
                            int64_t N, int64_t K, tir_rt_ptr A, tir_rt_ptr B,
                            tir_rt_b_layout layout, tir_rt_ptr C) {
    gemm_plan p;
    TIR_TRY(plan_gemm(ctx, blas, "gemm", kind, 1, M, N, K, A, B, layout, C, &p));
    TIR_TRY(rt_bind(ctx, blas->dev));
    const float alpha = 1.0f, beta = 0.0f;
    const rt_blas_lib *b = &blas_lib;
    rt_cublasStatus_t st;
    const char *call;
    if (kind == TIR_RT_GEMM_F32) {
        call = "cublasSgemm_v2";
        st = b->Sgemm(blas->handle, p.opb, RT_CUBLAS_OP_N, p.m, p.n, p.k, &alpha,
                      (const float *)(uintptr_t)B, p.ldb, (const float *)(uintptr_t)A, p.lda,
                      &beta, (float *)(uintptr_t)C, p.ldc);
    } else {
        call = "cublasGemmEx";
        st = b->GemmEx(blas->handle, p.opb, RT_CUBLAS_OP_N, p.m, p.n, p.k, &alpha,
                       (const void *)(uintptr_t)B, p.in_type, p.ldb, (const void *)(uintptr_t)A,
                       p.in_type, p.lda, &beta, (void *)(uintptr_t)C, RT_CUDA_R_32F, p.ldc,
                       p.compute, RT_CUBLAS_GEMM_DEFAULT);
    }
    if (st != RT_CUBLAS_STATUS_SUCCESS)
        return gemm_fail(ctx, st, call, kind, 0, M, N, K, layout);
    return TIR_OK;
}

tir_status tir_rt_blas_gemm_batched(tir_ctx *ctx, tir_rt_blas *blas, tir_rt_gemm_kind kind,
                                    int64_t batch, int64_t M, int64_t N, int64_t K, tir_rt_ptr A,
                                    tir_rt_ptr B, tir_rt_b_layout layout, tir_rt_ptr C) {
    gemm_plan p;
    TIR_TRY(plan_gemm(ctx, blas, "batched gemm", kind, batch, M, N, K, A, B, layout, C, &p));
    TIR_TRY(rt_bind(ctx, blas->dev));
    const float alpha = 1.0f, beta = 0.0f;
    const rt_blas_lib *b = &blas_lib;
    rt_cublasStatus_t st;
    const char *call;
    /* Batch i of the column-major view is batch i of the row-major one:
       the strides are the row-major matrices' sizes, as for A, B and C. */
    if (kind == TIR_RT_GEMM_F32) {
        call = "cublasSgemmStridedBatched";
        st = b->SgemmStridedBatched(blas->handle, p.opb, RT_CUBLAS_OP_N, p.m, p.n, p.k, &alpha,
                                    (const float *)(uintptr_t)B, p.ldb, p.stride_b,
                                    (const float *)(uintptr_t)A, p.lda, p.stride_a, &beta,
                                    (float *)(uintptr_t)C, p.ldc, p.stride_c, (int)batch);
    } else {
        call = "cublasGemmStridedBatchedEx";
        st = b->GemmStridedBatchedEx(blas->handle, p.opb, RT_CUBLAS_OP_N, p.m, p.n, p.k, &alpha,
                                     (const void *)(uintptr_t)B, p.in_type, p.ldb, p.stride_b,
                                     (const void *)(uintptr_t)A, p.in_type, p.lda, p.stride_a,
                                     &beta, (void *)(uintptr_t)C, RT_CUDA_R_32F, p.ldc,
                                     p.stride_c, (int)batch, p.compute, RT_CUBLAS_GEMM_DEFAULT);
    }
    if (st != RT_CUBLAS_STATUS_SUCCESS)
        return gemm_fail(ctx, st, call, kind, batch, M, N, K, layout);
    return TIR_OK;
}
