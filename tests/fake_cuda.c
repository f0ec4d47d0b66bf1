/* fake_cuda.c: a stand-in for libcuda.so.1 and libcublas.so.13, built as a
 * shared module so the GPU tests can run on machines without a GPU
 * (MINITIR_CUDA_LIB and MINITIR_CUBLAS_LIB point at it).
 *
 * What it is for: exercising everything the runtime does on the host -
 * loading, bookkeeping, range and launch checks, argument marshalling,
 * error paths, the row-major-to-column-major GEMM mapping, cleanup (under
 * the sanitizers, a device buffer the runtime forgets to free is a leak of
 * this library's malloc).  What it is not: a GPU.  "Device" memory is host
 * memory, and instead of running PTX it runs C versions of the few kernels
 * the tests load, reading their arguments the way the PTX declares them
 * (it parses each .entry's parameter list, so a marshalling mistake shows).
 * cuBLAS GEMMs (plain and strided-batched) are computed by a plain
 * column-major reference, exactly as BLAS defines them, so a wrong
 * transpose, leading dimension or batch stride fails.
 *
 * Several devices: MINITIR_FAKE_GPUS=N (default 1) makes it report N
 * devices, each with its own primary context (current per thread, as
 * cuCtxSetCurrent makes it), clock and memory count; device d > 0 is named
 * "Fake GPU d (host emulation)" and runs unknown kernels 4 times slower (cuBLAS
 * is as fast on all), so a test can tell which device timed what.  Every
 * entry point holds one lock, so several threads may drive it at once.
 *
 * Two switches for the tuner's tests: FAKE_CUDA_MATMUL=M,N,K makes every
 * kernel it does not know compute C[M,N] = A[M,K] B[K,N] (float32, row
 * major) from its first three parameters, the way every kernel of a tuned
 * matmul candidate is called (so the result is right whatever the
 * candidate's split); FAKE_CUDA_MATMUL=M,N,K,f16 (or bf16) reads A and B
 * as 16-bit bit patterns instead (a tensor-core candidate; a TF32 one
 * reads float32 and is computed exactly, within TF32's tolerance); FAKE_CUDA_FAIL_GPU=d makes such a kernel on device d
 * fail with CUDA_ERROR_ILLEGAL_ADDRESS.
 *
 * Only the test suite uses this file; it follows the driver's documented
 * behaviour for the calls the runtime makes and nothing more.
 */
#include <ctype.h>
#include <pthread.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef unsigned int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    OK = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    NO_DEVICE = 100,
    INVALID_PTX = 218,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    ILLEGAL_ADDRESS = 700,
};

/* ---------------------------------------------------------------- state */

/* One lock over all of it: held by every entry point for its whole call
 * (released by the cleanup attribute on every return). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void unlock_mu(int *unused) {
    (void)unused;
    pthread_mutex_unlock(&mu);
}
#define GUARD                                                                                      \
    pthread_mutex_lock(&mu);                                                                       \
    __attribute__((cleanup(unlock_mu))) int guard_ = 0;                                            \
    (void)guard_

#define MAX_DEV 8
static double now_ms[MAX_DEV]; /* fake GPU clocks: every operation takes a little */
static size_t used_bytes[MAX_DEV];
static const size_t total_bytes = (size_t)1 << 30;
static int ctx_refs[MAX_DEV];
static int dummy_ctx[MAX_DEV]; /* the primary contexts: their addresses */
static _Thread_local int cur;  /* the device whose context is current on this thread */

static int ndevices(void) {
    const char *e = getenv("MINITIR_FAKE_GPUS");
    int n = e ? atoi(e) : 1;
    return n < 1 ? 1 : n > MAX_DEV ? MAX_DEV : n;
}

#define MAX_ALLOCS 4096
static struct {
    void *p;
    size_t n;
    int dev;
} allocs[MAX_ALLOCS];

static int find_alloc(CUdeviceptr p) {
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].p && (CUdeviceptr)(uintptr_t)allocs[i].p == p) return i;
    return -1;
}

/* ---------------------------------------------------------------- errors */

static const struct {
    CUresult r;
    const char *name, *text;
} errs[] = {
    {OK, "CUDA_SUCCESS", "no error"},
    {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
};

EXPORT CUresult cuGetErrorName(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
        if (errs[i].r == r) {
            *s = errs[i].name;
            return OK;
        }
    *s = NULL;
    return INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
        if (errs[i].r == r) {
            *s = errs[i].text;
            return OK;
        }
    *s = NULL;
    return INVALID_VALUE;
}

/* ---------------------------------------------------------------- device */

EXPORT CUresult cuInit(unsigned flags) {
    (void)flags;
    return getenv("FAKE_CUDA_NO_DEVICE") ? NO_DEVICE : OK;
}
EXPORT CUresult cuDriverGetVersion(int *v) {
    *v = 13000;
    return OK;
}
EXPORT CUresult cuDeviceGetCount(int *n) {
    *n = ndevices();
    return OK;
}
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal < 0 || ordinal >= ndevices()) return 101;
    *d = ordinal;
    return OK;
}
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    if (d == 0)
        snprintf(name, (size_t)len, "Fake GPU (host emulation)");
    else
        snprintf(name, (size_t)len, "Fake GPU %d (host emulation)", d);
    return OK;
}

#define OPTIN_SMEM (227 * 1024)

EXPORT CUresult cuDeviceGetAttribute(int *v, unsigned attr, CUdevice d) {
    (void)d;
    switch (attr) {
    case 1: *v = 1024; break;                 /* threads per block */
    case 2: case 3: *v = 1024; break;         /* block x, y */
    case 4: *v = 64; break;                   /* block z */
    case 5: *v = 2147483647; break;           /* grid x */
    case 6: case 7: *v = 65535; break;        /* grid y, z */
    case 8: *v = 48 * 1024; break;            /* smem per block */
    case 10: *v = 32; break;                  /* warp */
    case 12: *v = 65536; break;               /* regs per block */
    case 13: *v = 1980000; break;             /* clock kHz */
    case 16: *v = 4; break;                   /* SMs */
    case 36: *v = 2619000; break;             /* memory clock */
    case 37: *v = 5120; break;                /* bus width */
    case 38: *v = 1 << 20; break;             /* L2: 1 MiB keeps the flush buffer small */
    case 39: *v = 2048; break;                /* threads per SM */
    case 75: *v = 9; break;
    case 76: *v = 0; break;
    case 81: *v = 228 * 1024; break;          /* smem per SM */
    case 82: *v = 65536; break;               /* regs per SM */
    case 97: *v = OPTIN_SMEM; break;          /* opt-in smem per block */
    default: return INVALID_VALUE;
    }
    return OK;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) {
    (void)d;
    *b = total_bytes;
    return OK;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
    GUARD;
    if (d < 0 || d >= MAX_DEV) return INVALID_VALUE;
    ctx_refs[d]++;
    *ctx = &dummy_ctx[d];
    return OK;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    GUARD;
    if (d < 0 || d >= MAX_DEV || ctx_refs[d] == 0) return INVALID_VALUE;
    ctx_refs[d]--;
    return OK;
}
EXPORT CUresult cuCtxSetCurrent(void *ctx) {
    for (int d = 0; d < MAX_DEV; d++)
        if (ctx == &dummy_ctx[d]) {
            cur = d;
            return OK;
        }
    return INVALID_VALUE;
}
/* a hold is queued and the host has not waited since (run_hold); waits
 * counts the host's waits, so that an event recorded behind a hold is
 * pending only until the next one; per device, each measured by its own
 * thread (cur) */
static int holding[MAX_DEV];
static unsigned waits[MAX_DEV];
static void host_waits(void) {
    holding[cur] = 0;
    waits[cur]++;
}

EXPORT CUresult cuCtxSynchronize(void) {
    host_waits();
    return OK;
}

/* ---------------------------------------------------------------- memory */

EXPORT CUresult cuMemGetInfo_v2(size_t *f, size_t *t) {
    GUARD;
    *f = total_bytes - used_bytes[cur];
    *t = total_bytes;
    return OK;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    GUARD;
    if (n == 0) return INVALID_VALUE;
    if (n > total_bytes - used_bytes[cur]) return OUT_OF_MEMORY;
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (allocs[i].p) continue;
        void *m = aligned_alloc(256, (n + 255) & ~(size_t)255);
        if (!m) return OUT_OF_MEMORY;
        allocs[i].p = m;
        allocs[i].n = n;
        allocs[i].dev = cur;
        used_bytes[cur] += n;
        *p = (CUdeviceptr)(uintptr_t)m;
        return OK;
    }
    return OUT_OF_MEMORY;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    GUARD;
    int i = find_alloc(p);
    if (i < 0) return INVALID_VALUE;
    used_bytes[allocs[i].dev] -= allocs[i].n;
    free(allocs[i].p);
    allocs[i].p = NULL;
    return OK;
}
#define DEV(p) ((void *)(uintptr_t)(p))
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
    GUARD;
    memset(DEV(p), v, n);
    now_ms[cur] += 0.001;
    return OK;
}
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned v, size_t n) {
    uint32_t *q = DEV(p);
    for (size_t i = 0; i < n; i++) q[i] = v;
    return OK;
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
    memcpy(DEV(d), s, n);
    return OK;
}
EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
    host_waits();
    memcpy(d, DEV(s), n);
    return OK;
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
    memmove(DEV(d), DEV(s), n);
    return OK;
}

/* --------------------------------------------------------------- modules */

#define MAX_PARAMS 32
typedef struct fentry {
    char name[64];
    int nparams;
    size_t psize[MAX_PARAMS];
    int max_dyn;
} fentry;

typedef struct fmodule {
    int nentries;
    fentry entries[8];
} fmodule;

/* Reads each ".entry name(.param .TYPE p, ...)" of the PTX. */
static int parse_ptx(const char *ptx, fmodule *m) {
    const char *s = ptx;
    while ((s = strstr(s, ".entry ")) && m->nentries < 8) {
        fentry *e = &m->entries[m->nentries++];
        memset(e, 0, sizeof *e);
        e->max_dyn = 48 * 1024;
        s += 7;
        size_t n = 0;
        while (*s && *s != '(' && !isspace((unsigned char)*s) && n < sizeof e->name - 1)
            e->name[n++] = *s++;
        const char *end = strchr(s, ')');
        if (!end) return -1;
        const char *p = s;
        while ((p = strstr(p, ".param")) && p < end) {
            p += 6;
            while (isspace((unsigned char)*p)) p++;
            if (*p != '.' || e->nparams == MAX_PARAMS) return -1;
            p += 2; /* ".u", ".f", ".s", ".b" */
            e->psize[e->nparams++] = (size_t)atoi(p) / 8;
        }
        s = end;
    }
    return m->nentries ? 0 : -1;
}

static int live_modules, live_events, live_handles;

/* The CU_JIT_OPTIMIZATION_LEVEL of the last module load: -1 when the
 * option was not given, 99 for a value the driver does not take (above 4). */
static int last_jit_level = -1;

EXPORT CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned nopt, unsigned *opt,
                                   void **val) {
    char *err = NULL, *info = NULL;
    size_t nerr = 0, ninfo = 0;
    int level = -1;
    for (unsigned i = 0; i < nopt; i++) {
        if (opt[i] == 7) level = (uintptr_t)val[i] <= 4 ? (int)(uintptr_t)val[i] : 99;
        if (opt[i] == 5) err = val[i];
        if (opt[i] == 6) nerr = (size_t)(uintptr_t)val[i];
        if (opt[i] == 3) info = val[i];
        if (opt[i] == 4) ninfo = (size_t)(uintptr_t)val[i];
    }
    GUARD;
    last_jit_level = level;
    const char *ptx = image;
    fmodule *m = calloc(1, sizeof *m);
    if (!m) return OUT_OF_MEMORY;
    /* rt_test_kernels.h's bad PTX (spaced as written there: LLVM's PTX has a
     * tab after the opcode, and may well use %r99) */
    if (strstr(ptx, "mov.u32 %r1, %r99;") || parse_ptx(ptx, m) != 0) {
        if (err && nerr) snprintf(err, nerr, "ptxas application ptx input, line 8; error   : "
                                             "Unknown symbol '%%r99'\nptxas fatal   : Ptx "
                                             "assembly aborted due to errors\n");
        free(m);
        return INVALID_PTX;
    }
    if (info && ninfo) {
        size_t used = 0;
        info[0] = '\0';
        for (int i = 0; i < m->nentries && used < ninfo; i++)
            used += (size_t)snprintf(info + used, ninfo - used,
                                     "ptxas info    : Function properties for %s\n"
                                     "ptxas info    : Used 10 registers\n",
                                     m->entries[i].name);
    }
    live_modules++;
    *mod = m;
    return OK;
}
EXPORT CUresult cuModuleUnload(void *mod) {
    GUARD;
    if (!mod) return INVALID_HANDLE;
    free(mod);
    live_modules--;
    return OK;
}
EXPORT CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
    fmodule *m = mod;
    for (int i = 0; i < m->nentries; i++)
        if (strcmp(m->entries[i].name, name) == 0) {
            *fn = &m->entries[i];
            return OK;
        }
    return NOT_FOUND;
}
EXPORT CUresult cuFuncGetAttribute(int *v, unsigned attr, void *fn) {
    fentry *e = fn;
    switch (attr) {
    case 0: *v = 1024; break;
    case 1: *v = 0; break;
    case 2: *v = 0; break;
    case 3: *v = 0; break;
    case 4: *v = 10; break;
    case 5: *v = 78; break;
    case 6: *v = 90; break;
    case 8: *v = e->max_dyn; break;
    default: return INVALID_VALUE;
    }
    return OK;
}
EXPORT CUresult cuFuncSetAttribute(void *fn, unsigned attr, int v) {
    fentry *e = fn;
    if (attr != 8 || v < 0 || v > OPTIN_SMEM) return INVALID_VALUE;
    e->max_dyn = v;
    return OK;
}
EXPORT CUresult cuFuncGetParamInfo(void *fn, size_t i, size_t *off, size_t *size) {
    fentry *e = fn;
    if (i >= (size_t)e->nparams) return INVALID_VALUE;
    size_t o = 0; /* each parameter aligned to its size */
    for (size_t j = 0; j <= i; j++) {
        o = (o + e->psize[j] - 1) / e->psize[j] * e->psize[j];
        if (j < i) o += e->psize[j];
    }
    *off = o;
    *size = e->psize[i];
    return OK;
}

/* ----------------------------------------------------- kernel emulation */

typedef struct launch {
    unsigned grid[3], block[3], dyn;
    void **params;
    const fentry *e;
} launch;

/* Argument i as the PTX declares it. */
static uint64_t arg_u(const launch *l, int i) {
    uint64_t v = 0;
    memcpy(&v, l->params[i], l->e->psize[i]);
    return v;
}
static float arg_f32(const launch *l, int i) {
    float v;
    memcpy(&v, l->params[i], 4);
    return v;
}

static float h2f(uint16_t h, int bf) {
    uint32_t x;
    float f;
    if (bf) {
        x = (uint32_t)h << 16;
        memcpy(&f, &x, 4);
        return f;
    }
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023;
    if (e == 0) {
        f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    x = e == 31 ? sign | 0x7f800000u | (m << 13) : sign | ((e + 112) << 23) | (m << 13);
    memcpy(&f, &x, 4);
    return f;
}

static CUresult run_vadd(const launch *l) {
    const float *a = DEV(arg_u(l, 0)), *b = DEV(arg_u(l, 1));
    float *c = DEV(arg_u(l, 2));
    uint32_t n = (uint32_t)arg_u(l, 3);
    uint64_t threads = (uint64_t)l->grid[0] * l->block[0];
    for (uint64_t i = 0; i < threads && i < n; i++) c[i] = a[i] + b[i];
    return OK;
}

static CUresult run_smem_reverse(const launch *l) {
    const float *in = DEV(arg_u(l, 0));
    float *out = DEV(arg_u(l, 1));
    uint32_t words = (uint32_t)arg_u(l, 2), nt = l->block[0];
    if ((uint64_t)words * 4 > l->dyn || words < nt) return ILLEGAL_ADDRESS;
    float *smem = malloc(l->dyn);
    if (!smem) return OUT_OF_MEMORY;
    for (uint32_t t = 0; t < nt; t++) smem[words - 1 - t] = in[t];
    for (uint32_t t = 0; t < nt; t++) out[t] = smem[words - 1 - (nt - 1 - t)];
    free(smem);
    return OK;
}

/* test_runtime_gpu's generated dyn_reverse: 16384 floats reversed through
 * 64 KiB of dynamic shared memory, which the launch must provide. */
static CUresult run_dyn_reverse(const launch *l) {
    const float *in = DEV(arg_u(l, 0));
    float *out = DEV(arg_u(l, 1));
    if (l->dyn < 16384 * 4) return ILLEGAL_ADDRESS;
    for (int i = 0; i < 16384; i++) out[i] = in[16383 - i];
    return OK;
}

static CUresult run_bias_epilogue(const launch *l) {
    const float *c = DEV(arg_u(l, 0)), *bias = DEV(arg_u(l, 1));
    float *d = DEV(arg_u(l, 2));
    uint64_t total = arg_u(l, 3);
    uint32_t n = (uint32_t)arg_u(l, 4);
    float lo = arg_f32(l, 5), hi = arg_f32(l, 6);
    if (n == 0) return ILLEGAL_ADDRESS;
    for (uint64_t i = 0; i < total; i++) {
        float x = c[i] + bias[i % n];
        if (!isnan(x)) {
            if (x < lo) x = lo;
            if (x > hi) x = hi;
        }
        d[i] = x;
    }
    return OK;
}

static CUresult run_gemm_ref(const launch *l) {
    const void *A = DEV(arg_u(l, 0)), *B = DEV(arg_u(l, 1));
    double *C = DEV(arg_u(l, 2));
    uint32_t M = (uint32_t)arg_u(l, 3), N = (uint32_t)arg_u(l, 4), K = (uint32_t)arg_u(l, 5);
    uint32_t nk = (uint32_t)arg_u(l, 6), dt = (uint32_t)arg_u(l, 7);
    /* Only the elements the launch covers get written. */
    uint64_t rows = (uint64_t)l->grid[1] * l->block[1], cols = (uint64_t)l->grid[0] * l->block[0];
    for (uint64_t i = 0; i < M && i < rows; i++)
        for (uint64_t j = 0; j < N && j < cols; j++) {
            double acc = 0;
            for (uint64_t k = 0; k < K; k++) {
                uint64_t ia = i * K + k, ib = nk ? j * K + k : k * N + j;
                double a, b;
                if (dt == 0) {
                    a = ((const float *)A)[ia];
                    b = ((const float *)B)[ib];
                } else {
                    a = h2f(((const uint16_t *)A)[ia], dt == 2);
                    b = h2f(((const uint16_t *)B)[ib], dt == 2);
                }
                acc = fma(a, b, acc);
            }
            C[i * N + j] = acc;
        }
    return OK;
}

/* FAKE_CUDA_MATMUL's C = A B, or nothing without it. */
static CUresult run_matmul(const launch *l) {
    const char *e = getenv("FAKE_CUDA_MATMUL");
    long long M, N, K;
    char dt[8] = "";
    int n = e ? sscanf(e, "%lld,%lld,%lld,%7s", &M, &N, &K, dt) : 0;
    if (n < 3) return OK;
    if (l->e->nparams < 3 || l->e->psize[0] != 8 || l->e->psize[1] != 8 || l->e->psize[2] != 8)
        return OK;
    bool half = !strcmp(dt, "f16") || !strcmp(dt, "bf16"), bf = !strcmp(dt, "bf16");
    const void *A = DEV(arg_u(l, 0)), *B = DEV(arg_u(l, 1));
    float *C = DEV(arg_u(l, 2));
    for (long long i = 0; i < M; i++)
        for (long long j = 0; j < N; j++) {
            double acc = 0;
            for (long long k = 0; k < K; k++) {
                long long ia = i * K + k, ib = k * N + j;
                double a = half ? h2f(((const uint16_t *)A)[ia], bf) : ((const float *)A)[ia];
                double b = half ? h2f(((const uint16_t *)B)[ib], bf) : ((const float *)B)[ib];
                acc += a * b;
            }
            C[i * N + j] = (float)acc;
        }
    return OK;
}

/* The launches so far (the last LOG_MAX), for tests that check what a
 * program launched with which arguments: not a driver call, found by
 * dlsym in the tests that run on this stand-in. */
enum { LOG_MAX = 64 };
static struct {
    char name[64];
    unsigned grid[3];
    int nparams;
    uint64_t params[MAX_PARAMS]; /* each zero-extended from its PTX size */
} launch_log[LOG_MAX];
static int nlaunches;

static void log_launch(const launch *l) {
    int i = nlaunches++ % LOG_MAX;
    snprintf(launch_log[i].name, sizeof launch_log[i].name, "%s", l->e->name);
    memcpy(launch_log[i].grid, l->grid, sizeof launch_log[i].grid);
    launch_log[i].nparams = l->e->nparams;
    for (int j = 0; j < l->e->nparams; j++)
        launch_log[i].params[j] = l->e->psize[j] <= 8 ? arg_u(l, j) : 0;
}

/* The JIT optimisation level the last module load asked for (-1: none;
 * 99: a value out of the driver's range). */
EXPORT int fake_cuda_last_jit_level(void) {
    GUARD;
    return last_jit_level;
}

/* The number of launches so far. */
EXPORT int fake_cuda_nlaunches(void) {
    GUARD;
    return nlaunches;
}
/* Launch i (0 the first; only the last LOG_MAX are kept): its entry name,
 * grid and parameters; false when not kept. */
EXPORT bool fake_cuda_launch(int i, const char **name, unsigned grid[3], int *nparams,
                             const uint64_t **params) {
    if (i < 0 || i >= nlaunches || i < nlaunches - LOG_MAX) return false;
    int k = i % LOG_MAX;
    *name = launch_log[k].name;
    memcpy(grid, launch_log[k].grid, sizeof launch_log[k].grid);
    *nparams = launch_log[k].nparams;
    *params = launch_log[k].params;
    return true;
}

/* The bench's hold (kernels.c): one thread, one u64 of nanoseconds.
 * Kernels here run as they are queued, so the hold is modelled instead:
 * events recorded after it stay pending until the host next waits. */
static CUresult run_hold(const launch *l) {
    if (l->e->nparams != 1 || l->e->psize[0] != 8 || l->grid[0] * l->grid[1] * l->grid[2] != 1 ||
        l->block[0] * l->block[1] * l->block[2] != 1 || arg_u(l, 0) == 0)
        return INVALID_VALUE;
    /* FAKE_CUDA_NO_HOLD=1: a GPU that leaves the hold at once */
    holding[cur] = !getenv("FAKE_CUDA_NO_HOLD");
    return OK;
}

EXPORT CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shmem, void *stream,
                               void **params, void **extra) {
    (void)stream;
    (void)extra;
    const fentry *e = fn;
    if ((int)shmem > e->max_dyn || (uint64_t)bx * by * bz > 1024) return INVALID_VALUE;
    if (e->nparams && !params) return INVALID_VALUE;
    GUARD;
    launch l = {{gx, gy, gz}, {bx, by, bz}, shmem, params, e};
    now_ms[cur] += 0.05;
    log_launch(&l);
    if (strcmp(e->name, "vadd") == 0) return run_vadd(&l);
    if (strcmp(e->name, "smem_reverse") == 0) return run_smem_reverse(&l);
    if (strcmp(e->name, "dyn_reverse") == 0) return run_dyn_reverse(&l);
    if (strcmp(e->name, "tir_rt_bias_epilogue") == 0) return run_bias_epilogue(&l);
    if (strcmp(e->name, "tir_rt_gemm_ref_f64") == 0) return run_gemm_ref(&l);
    if (strcmp(e->name, "tir_rt_hold") == 0) return run_hold(&l);
    /* an unknown kernel: a tuned matmul's, or nothing */
    now_ms[cur] += cur ? 0.15 : 0;
    const char *fail = getenv("FAKE_CUDA_FAIL_GPU");
    if (fail && atoi(fail) == cur) return ILLEGAL_ADDRESS;
    return run_matmul(&l);
}

/* ---------------------------------------------------------------- events */

typedef struct fevent {
    double t;
    int recorded;
    unsigned pending; /* recorded behind a hold before wait number pending - 1 */
} fevent;

EXPORT CUresult cuEventCreate(void **ev, unsigned flags) {
    (void)flags;
    GUARD;
    fevent *e = calloc(1, sizeof *e);
    if (!e) return OUT_OF_MEMORY;
    live_events++;
    *ev = e;
    return OK;
}
EXPORT CUresult cuEventDestroy_v2(void *ev) {
    GUARD;
    if (!ev) return INVALID_HANDLE;
    free(ev);
    live_events--;
    return OK;
}
EXPORT CUresult cuEventRecord(void *ev, void *stream) {
    (void)stream;
    GUARD;
    fevent *e = ev;
    e->t = now_ms[cur];
    e->recorded = 1;
    e->pending = holding[cur] ? waits[cur] + 1 : 0;
    return OK;
}
EXPORT CUresult cuEventQuery(void *ev) {
    if (!ev) return INVALID_HANDLE;
    return ((fevent *)ev)->pending == waits[cur] + 1 ? 600 /* CUDA_ERROR_NOT_READY */ : OK;
}
EXPORT CUresult cuEventSynchronize(void *ev) {
    if (!ev) return INVALID_HANDLE;
    host_waits();
    return OK;
}
EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
    fevent *s = a, *e = b;
    host_waits();
    if (!s->recorded || !e->recorded) return INVALID_HANDLE;
    *ms = (float)(e->t - s->t);
    return OK;
}

/* ---------------------------------------------------------------- cuBLAS */

EXPORT unsigned cublasGetProperty(unsigned type, int *v) {
    *v = type == 0 ? 13 : 0;
    return 0;
}
EXPORT const char *cublasGetStatusName(unsigned st) {
    return st == 0 ? "CUBLAS_STATUS_SUCCESS" : st == 7 ? "CUBLAS_STATUS_INVALID_VALUE"
                                                       : "CUBLAS_STATUS_?";
}
EXPORT const char *cublasGetStatusString(unsigned st) {
    return st == 0 ? "success" : "an invalid value was used as an argument";
}

typedef struct fhandle {
    unsigned math;
} fhandle;

EXPORT unsigned cublasCreate_v2(void **h) {
    GUARD;
    fhandle *f = calloc(1, sizeof *f);
    if (!f) return 3;
    f->math = 99; /* not set yet */
    live_handles++;
    *h = f;
    return 0;
}
EXPORT unsigned cublasDestroy_v2(void *h) {
    GUARD;
    free(h);
    live_handles--;
    return 0;
}
EXPORT unsigned cublasSetStream_v2(void *h, void *s) {
    (void)h;
    return s == NULL ? 0 : 7;
}
EXPORT unsigned cublasSetMathMode(void *h, unsigned mode) {
    ((fhandle *)h)->math = mode;
    return 0;
}

/* BLAS: C(m x n) = alpha op(A) op(B) + beta C, column-major. */
static unsigned gemm(const fhandle *h, unsigned ta, unsigned tb, int m, int n, int k,
                     float alpha, const void *A, int atype, int lda, const void *B, int btype,
                     int ldb, float beta, float *C, int ldc) {
    if (h->math != 0) return 7; /* the runtime must set default math */
    if (m < 0 || n < 0 || k < 0 || ta > 1 || tb > 1) return 7;
    if (lda < (ta ? k : m) || ldb < (tb ? n : k) || ldc < m) return 7;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0;
            for (int p = 0; p < k; p++) {
                size_t ia = ta ? (size_t)i * lda + p : (size_t)p * lda + i;
                size_t ib = tb ? (size_t)p * ldb + j : (size_t)j * ldb + p;
                double a = atype == 0 ? ((const float *)A)[ia]
                                      : h2f(((const uint16_t *)A)[ia], atype == 14);
                double b = btype == 0 ? ((const float *)B)[ib]
                                      : h2f(((const uint16_t *)B)[ib], btype == 14);
                acc += a * b;
            }
            float *c = &C[(size_t)j * ldc + i];
            *c = (float)(alpha * acc + (beta != 0 ? beta * *c : 0));
        }
    now_ms[cur] += 0.1;
    return 0;
}

/* How often each GEMM entry point was called, for tests that check which
 * one the runtime used: not a cuBLAS call, found by dlsym like
 * fake_cuda_nlaunches. */
static const char *const blas_entries[] = {"cublasSgemm_v2", "cublasGemmEx",
                                           "cublasSgemmStridedBatched",
                                           "cublasGemmStridedBatchedEx"};
static long blas_counts[4];

/* The calls to `entry` so far; -1 for a name this file does not count. */
EXPORT long fake_cuda_blas_calls(const char *entry) {
    GUARD;
    for (int i = 0; i < 4; i++)
        if (strcmp(blas_entries[i], entry) == 0) return blas_counts[i];
    return -1;
}

EXPORT unsigned cublasSgemm_v2(void *h, unsigned ta, unsigned tb, int m, int n, int k,
                               const float *alpha, const float *A, int lda, const float *B,
                               int ldb, const float *beta, float *C, int ldc) {
    GUARD;
    blas_counts[0]++;
    return gemm(h, ta, tb, m, n, k, *alpha, A, 0, lda, B, 0, ldb, *beta, C, ldc);
}

/* GemmEx's types: equal input types of float32, float16 or bfloat16, a
 * float32 C, and a compute type cuBLAS accepts for them. */
static bool ex_types_ok(unsigned atype, unsigned btype, unsigned ctype, unsigned compute) {
    if (atype != btype || ctype != 0 || (atype != 0 && atype != 2 && atype != 14)) return false;
    if (compute != 68 && compute != 69 && compute != 77) return false;
    return compute != 77 || atype == 0; /* TF32 is for float32 inputs */
}

EXPORT unsigned cublasGemmEx(void *h, unsigned ta, unsigned tb, int m, int n, int k,
                             const void *alpha, const void *A, unsigned atype, int lda,
                             const void *B, unsigned btype, int ldb, const void *beta, void *C,
                             unsigned ctype, int ldc, unsigned compute, int algo) {
    (void)algo;
    GUARD;
    blas_counts[1]++;
    if (!ex_types_ok(atype, btype, ctype, compute)) return 7;
    return gemm(h, ta, tb, m, n, k, *(const float *)alpha, A, (int)atype, lda, B, (int)btype,
                ldb, *(const float *)beta, C, ldc);
}

/* The strided-batched forms: product b reads A + b*sa and B + b*sb and
 * writes C + b*sc (in elements), one gemm after another. */
static unsigned gemm_strided(const fhandle *h, unsigned ta, unsigned tb, int m, int n, int k,
                             float alpha, const void *A, int atype, int lda, long long sa,
                             const void *B, int btype, int ldb, long long sb, float beta,
                             float *C, int ldc, long long sc, int batch) {
    if (batch < 0) return 7;
    size_t ea = atype == 0 ? 4 : 2, eb = btype == 0 ? 4 : 2;
    for (int b = 0; b < batch; b++) {
        unsigned st = gemm(h, ta, tb, m, n, k, alpha, (const char *)A + b * sa * (long long)ea,
                           atype, lda, (const char *)B + b * sb * (long long)eb, btype, ldb,
                           beta, C + b * sc, ldc);
        if (st != 0) return st;
    }
    return 0;
}

EXPORT unsigned cublasSgemmStridedBatched(void *h, unsigned ta, unsigned tb, int m, int n, int k,
                                          const float *alpha, const float *A, int lda,
                                          long long sa, const float *B, int ldb, long long sb,
                                          const float *beta, float *C, int ldc, long long sc,
                                          int batch) {
    GUARD;
    blas_counts[2]++;
    return gemm_strided(h, ta, tb, m, n, k, *alpha, A, 0, lda, sa, B, 0, ldb, sb, *beta, C, ldc,
                        sc, batch);
}

EXPORT unsigned cublasGemmStridedBatchedEx(void *h, unsigned ta, unsigned tb, int m, int n,
                                           int k, const void *alpha, const void *A,
                                           unsigned atype, int lda, long long sa, const void *B,
                                           unsigned btype, int ldb, long long sb,
                                           const void *beta, void *C, unsigned ctype, int ldc,
                                           long long sc, int batch, unsigned compute, int algo) {
    (void)algo;
    GUARD;
    blas_counts[3]++;
    if (!ex_types_ok(atype, btype, ctype, compute)) return 7;
    return gemm_strided(h, ta, tb, m, n, k, *(const float *)alpha, A, (int)atype, lda, sa, B,
                        (int)btype, ldb, sb, *(const float *)beta, C, ldc, sc, batch);
}

/* Whatever the runtime left alive when the process ends fails the test
   (device memory would also show as a leak under LeakSanitizer). */
__attribute__((destructor)) static void report(void) {
    int allocs_left = 0, refs = 0;
    for (int i = 0; i < MAX_ALLOCS; i++) allocs_left += allocs[i].p != NULL;
    for (int d = 0; d < MAX_DEV; d++) refs += ctx_refs[d];
    if (allocs_left || live_modules || live_events || live_handles || refs) {
        fprintf(stderr,
                "fake_cuda: left alive at exit: %d allocations, %d modules, %d events, "
                "%d cuBLAS handles, %d context references\n",
                allocs_left, live_modules, live_events, live_handles, refs);
        _exit(3);
    }
}
