/* driver.c: loading the CUDA driver library at run time and turning its
 * error codes into minitir errors.
 *
 * The library is opened once per process and never closed after cuInit
 * succeeded: the driver starts worker threads, and unmapping its code under
 * them would crash.  A failed load is closed again and not remembered, so a
 * later call (say, after MINITIR_CUDA_LIB changed) tries afresh.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "rt_internal.h"

#define DEFAULT_DRIVER_LIB "libcuda.so.1"

static pthread_mutex_t driver_mu = PTHREAD_MUTEX_INITIALIZER;
static rt_driver driver;
static bool driver_ready;

/* Where each entry point comes from.  `alt` is tried when `sym` is missing
 * (cuEventElapsedTime_v2 appeared in CUDA 12.8). */
static const struct {
    const char *sym, *alt;
    size_t off;
    bool optional;
} driver_syms[] = {
#define SYM(field, sym) {sym, NULL, offsetof(rt_driver, field), false}
    SYM(GetErrorName, "cuGetErrorName"),
    SYM(GetErrorString, "cuGetErrorString"),
    SYM(Init, "cuInit"),
    SYM(DriverGetVersion, "cuDriverGetVersion"),
    SYM(DeviceGetCount, "cuDeviceGetCount"),
    SYM(DeviceGet, "cuDeviceGet"),
    SYM(DeviceGetName, "cuDeviceGetName"),
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(DeviceTotalMem, "cuDeviceTotalMem_v2"),
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SYM(CtxSetCurrent, "cuCtxSetCurrent"),
    SYM(CtxSynchronize, "cuCtxSynchronize"),
    SYM(MemGetInfo, "cuMemGetInfo_v2"),
    SYM(MemAlloc, "cuMemAlloc_v2"),
    SYM(MemFree, "cuMemFree_v2"),
    SYM(MemsetD8, "cuMemsetD8_v2"),
    SYM(MemsetD32, "cuMemsetD32_v2"),
    SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    SYM(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    SYM(ModuleLoadDataEx, "cuModuleLoadDataEx"),
    SYM(ModuleUnload, "cuModuleUnload"),
    SYM(ModuleGetFunction, "cuModuleGetFunction"),
    SYM(FuncGetAttribute, "cuFuncGetAttribute"),
    SYM(FuncSetAttribute, "cuFuncSetAttribute"),
    {"cuFuncGetParamInfo", NULL, offsetof(rt_driver, FuncGetParamInfo), true},
    SYM(LaunchKernel, "cuLaunchKernel"),
    SYM(EventCreate, "cuEventCreate"),
    SYM(EventDestroy, "cuEventDestroy_v2"),
    SYM(EventRecord, "cuEventRecord"),
    SYM(EventSynchronize, "cuEventSynchronize"),
    SYM(EventQuery, "cuEventQuery"),
    {"cuEventElapsedTime_v2", "cuEventElapsedTime", offsetof(rt_driver, EventElapsedTime),
     false},
#undef SYM
};

/* Names for when cuGetErrorName cannot help: the toolkit's stub library
 * answers every call, that one included, with CUDA_ERROR_STUB_LIBRARY. */
static const struct {
    rt_CUresult code;
    const char *name, *text;
} known_errors[] = {
    {RT_CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {RT_CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {RT_CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {RT_CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {RT_CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {RT_CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
     "CUDA driver is a stub library"},
    {RT_CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {RT_CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {RT_CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {RT_CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain"},
    {RT_CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {RT_CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {RT_CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {RT_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {RT_CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const char *rt_cu_error_name(const rt_driver *cu, rt_CUresult r) {
    const char *s = NULL;
    if (cu && cu->GetErrorName && cu->GetErrorName(r, &s) == RT_CUDA_SUCCESS && s) return s;
    for (size_t i = 0; i < sizeof known_errors / sizeof known_errors[0]; i++)
        if (known_errors[i].code == r) return known_errors[i].name;
    return "CUDA_ERROR_?";
}

const char *rt_cu_error_string(const rt_driver *cu, rt_CUresult r) {
    const char *s = NULL;
    if (cu && cu->GetErrorString && cu->GetErrorString(r, &s) == RT_CUDA_SUCCESS && s)
        return s;
    for (size_t i = 0; i < sizeof known_errors / sizeof known_errors[0]; i++)
        if (known_errors[i].code == r) return known_errors[i].text;
    return "unrecognised error code";
}

/* Errors after which the context is corrupt and every later call fails. */
static bool sticky(rt_CUresult r) {
    return r == RT_CUDA_ERROR_ILLEGAL_ADDRESS || (r >= 714 && r <= 719);
}

tir_status rt_cu_fail(tir_ctx *ctx, const rt_driver *cu, rt_CUresult r, const char *call,
                      const char *detail) {
    return tir_ctx_fail(ctx, TIR_ERR_CUDA, "cuda: %s failed: %s (%s), code %u%s%s%s", call,
                        rt_cu_error_name(cu, r), rt_cu_error_string(cu, r), r,
                        sticky(r) ? "; a kernel faulted and the context is now unusable: "
                                    "close the device"
                                  : "",
                        detail ? "\n" : "", detail ? detail : "");
}

/* Opens and resolves the library at `path` into *d.  Returns TIR_OK with
 * d->lib set, or TIR_ERR_NO_DRIVER with nothing left open. */
static tir_status open_driver(tir_ctx *ctx, const char *path, bool from_env, rt_driver *d) {
    memset(d, 0, sizeof *d);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        return tir_ctx_fail(ctx, TIR_ERR_NO_DRIVER,
                            "cuda: cannot load the CUDA driver library '%s': %s (%s)", path,
                            why ? why : "unknown reason",
                            from_env ? "set by MINITIR_CUDA_LIB"
                                     : "no NVIDIA driver on this machine? MINITIR_CUDA_LIB "
                                       "names another file");
    }
    for (size_t i = 0; i < sizeof driver_syms / sizeof driver_syms[0]; i++) {
        void *p = dlsym(lib, driver_syms[i].sym);
        if (!p && driver_syms[i].alt) p = dlsym(lib, driver_syms[i].alt);
        if (!p && !driver_syms[i].optional) {
            dlclose(lib);
            memset(d, 0, sizeof *d);
            return tir_ctx_fail(ctx, TIR_ERR_NO_DRIVER,
                                "cuda: the driver library '%s' lacks %s: driver too old "
                                "(minitir needs a CUDA 12 or newer driver) or not a CUDA "
                                "driver",
                                path, driver_syms[i].sym);
        }
        /* POSIX guarantees a data pointer from dlsym converts to a function
           pointer; copying the bytes says so without a cast warning. */
        memcpy((char *)d + driver_syms[i].off, &p, sizeof p);
    }
    d->lib = lib;
    return TIR_OK;
}

static tir_status init_driver(tir_ctx *ctx, const char *path, rt_driver *d) {
    rt_CUresult r = d->Init(0);
    if (r == RT_CUDA_SUCCESS) {
        r = d->DriverGetVersion(&d->version);
        return r == RT_CUDA_SUCCESS ? TIR_OK : rt_cu_fail(ctx, d, r, "cuDriverGetVersion", NULL);
    }
    const char *name = rt_cu_error_name(d, r), *text = rt_cu_error_string(d, r);
    switch (r) {
    case RT_CUDA_ERROR_NO_DEVICE:
        return tir_ctx_fail(ctx, TIR_ERR_NO_DEVICE,
                            "cuda: no CUDA device: cuInit failed: %s (%s)", name, text);
    case RT_CUDA_ERROR_STUB_LIBRARY:
        return tir_ctx_fail(ctx, TIR_ERR_NO_DRIVER,
                            "cuda: '%s' is the CUDA toolkit's stub library, not a driver: "
                            "cuInit failed: %s (%s)",
                            path, name, text);
    case RT_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case RT_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case RT_CUDA_ERROR_OPERATING_SYSTEM:
        return tir_ctx_fail(ctx, TIR_ERR_NO_DRIVER,
                            "cuda: the CUDA driver '%s' is not usable here: cuInit failed: "
                            "%s (%s)",
                            path, name, text);
    default:
        return rt_cu_fail(ctx, d, r, "cuInit", NULL);
    }
}

tir_status rt_driver_load(tir_ctx *ctx, const rt_driver **out) {
    *out = NULL;
    pthread_mutex_lock(&driver_mu);
    tir_status s = TIR_OK;
    if (!driver_ready) {
        const char *env = getenv("MINITIR_CUDA_LIB");
        bool from_env = env && *env;
        const char *path = from_env ? env : DEFAULT_DRIVER_LIB;
        rt_driver d;
        s = open_driver(ctx, path, from_env, &d);
        if (s == TIR_OK) {
            s = init_driver(ctx, path, &d);
            if (s == TIR_OK) {
                driver = d;
                driver_ready = true;
            } else {
                /* cuInit failed, so the driver started nothing that could
                   still be running its code. */
                dlclose(d.lib);
            }
        }
    }
    pthread_mutex_unlock(&driver_mu);
    if (s == TIR_OK) *out = &driver;
    return s;
}
