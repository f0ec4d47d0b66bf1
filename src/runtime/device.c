/* device.c: the device handle and what it owns: memory, PTX modules and
 * their kernels, launches and events.
 *
 * The handle keeps a table of its live allocations.  That lets close free
 * everything a caller forgot (a failing test included), and lets every copy
 * and library call check its ranges on the host, where a wrong size is a
 * clear message instead of a device fault that poisons the context.
 */
#include <stdint.h>
#include <string.h>

#include "rt_internal.h"

#define JIT_LOG_BYTES (32 * 1024)

tir_status rt_bind(tir_ctx *ctx, tir_rt_device *dev) {
    return RT_CU(ctx, dev->cu, CtxSetCurrent, dev->pctx);
}

tir_status tir_rt_bind_thread(tir_ctx *ctx, tir_rt_device *dev) {
    if (!dev) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: no device");
    return rt_bind(ctx, dev);
}

tir_status tir_rt_device_count(tir_ctx *ctx, int *count) {
    *count = 0;
    const rt_driver *cu;
    tir_status s = rt_driver_load(ctx, &cu);
    if (s != TIR_OK) return s;
    TIR_TRY(RT_CU(ctx, cu, DeviceGetCount, count));
    if (*count == 0)
        return tir_ctx_fail(ctx, TIR_ERR_NO_DEVICE, "cuda: the driver reports no CUDA device");
    return TIR_OK;
}

static tir_status read_props(tir_ctx *ctx, tir_rt_device *d) {
    const rt_driver *cu = d->cu;
    tir_rt_props *p = &d->props;
    static const struct {
        rt_CUdevice_attribute attr;
        size_t off;
    } attrs[] = {
#define A(a, f) {RT_CU_DEVICE_ATTRIBUTE_##a, offsetof(tir_rt_props, f)}
        A(COMPUTE_CAPABILITY_MAJOR, cc_major),
        A(COMPUTE_CAPABILITY_MINOR, cc_minor),
        A(MULTIPROCESSOR_COUNT, sm_count),
        A(WARP_SIZE, warp_size),
        A(MAX_THREADS_PER_BLOCK, max_threads_per_block),
        A(MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_sm),
        A(MAX_BLOCK_DIM_X, max_block_dim[0]),
        A(MAX_BLOCK_DIM_Y, max_block_dim[1]),
        A(MAX_BLOCK_DIM_Z, max_block_dim[2]),
        A(MAX_GRID_DIM_X, max_grid_dim[0]),
        A(MAX_GRID_DIM_Y, max_grid_dim[1]),
        A(MAX_GRID_DIM_Z, max_grid_dim[2]),
        A(MAX_REGISTERS_PER_BLOCK, max_regs_per_block),
        A(MAX_REGISTERS_PER_MULTIPROCESSOR, max_regs_per_sm),
        A(MAX_SHARED_MEMORY_PER_BLOCK, smem_per_block),
        A(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, smem_per_block_optin),
        A(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, smem_per_sm),
        A(L2_CACHE_SIZE, l2_bytes),
        A(MEMORY_CLOCK_RATE, mem_clock_khz),
        A(GLOBAL_MEMORY_BUS_WIDTH, mem_bus_bits),
#undef A
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = 0;
        TIR_TRY(RT_CU(ctx, cu, DeviceGetAttribute, &v, attrs[i].attr, d->dev));
        memcpy((char *)p + attrs[i].off, &v, sizeof v);
    }
    /* CUDA 13 deprecates the clock attribute; a driver that drops it
       should not make the device unusable. */
    if (cu->DeviceGetAttribute(&p->clock_khz, RT_CU_DEVICE_ATTRIBUTE_CLOCK_RATE, d->dev) !=
        RT_CUDA_SUCCESS)
        p->clock_khz = 0;
    TIR_TRY(RT_CU(ctx, cu, DeviceGetName, p->name, (int)sizeof p->name, d->dev));
    p->name[sizeof p->name - 1] = '\0';
    TIR_TRY(RT_CU(ctx, cu, DeviceTotalMem, &p->total_mem, d->dev));
    snprintf(p->arch, sizeof p->arch, "sm_%d%d", p->cc_major, p->cc_minor);
    p->driver_version = cu->version;
    return TIR_OK;
}

tir_status tir_rt_device_create(tir_ctx *ctx, int ordinal, tir_rt_device **out) {
    *out = NULL;
    const rt_driver *cu;
    TIR_TRY(rt_driver_load(ctx, &cu));
    int count = 0;
    TIR_TRY(RT_CU(ctx, cu, DeviceGetCount, &count));
    if (count == 0)
        return tir_ctx_fail(ctx, TIR_ERR_NO_DEVICE, "cuda: the driver reports no CUDA device");
    if (ordinal < 0 || ordinal >= count)
        return tir_ctx_fail(ctx, TIR_ERR_NO_DEVICE,
                            "cuda: no device with ordinal %d (%d device%s: 0..%d)", ordinal,
                            count, count == 1 ? "" : "s", count - 1);
    tir_rt_device *d = calloc(1, sizeof *d);
    if (!d) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "cuda: out of host memory");
    d->cu = cu;
    d->props.ordinal = ordinal;
    d->jit_opt_level = -1;
    tir_status s = RT_CU(ctx, cu, DeviceGet, &d->dev, ordinal);
    if (s == TIR_OK) s = read_props(ctx, d);
    if (s == TIR_OK) s = RT_CU(ctx, cu, DevicePrimaryCtxRetain, &d->pctx, d->dev);
    if (s != TIR_OK) {
        free(d);
        return s;
    }
    s = rt_bind(ctx, d);
    if (s != TIR_OK) {
        cu->DevicePrimaryCtxRelease(d->dev);
        free(d);
        return s;
    }
    *out = d;
    return TIR_OK;
}

const tir_rt_props *tir_rt_device_props(const tir_rt_device *dev) { return &dev->props; }

tir_status tir_rt_device_set_jit_opt_level(tir_ctx *ctx, tir_rt_device *dev, int level) {
    if (!dev)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_rt_device_set_jit_opt_level: no device");
    if (level < -1 || level > 4)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tir_rt_device_set_jit_opt_level: level %d is not -1 (the driver's "
                            "default) or 0..4",
                            level);
    dev->jit_opt_level = level;
    return TIR_OK;
}

/* A driver attribute, where the driver gave one, else the target's value. */
#define RT_OVERRIDE(dst, v) ((v) > 0 ? (void)((dst) = (v)) : (void)0)

void tir_rt_limits_from_props(const tir_rt_props *p, tir_target_limits *out) {
    const tir_target *t = tir_target_find(p->arch);
    *out = (t ? t : tir_target_default())->limits;
    RT_OVERRIDE(out->max_threads_per_block, p->max_threads_per_block);
    for (int d = 0; d < 3; d++) {
        RT_OVERRIDE(out->max_block_dim[d], p->max_block_dim[d]);
        RT_OVERRIDE(out->max_grid_dim[d], p->max_grid_dim[d]);
    }
    RT_OVERRIDE(out->max_shared_static, p->smem_per_block);
    RT_OVERRIDE(out->max_shared_dynamic, p->smem_per_block_optin);
    RT_OVERRIDE(out->max_registers_per_block, p->max_regs_per_block);
    RT_OVERRIDE(out->warp_size, p->warp_size);
}

void tir_rt_device_limits(const tir_rt_device *dev, tir_target_limits *out) {
    tir_rt_limits_from_props(&dev->props, out);
}

tir_status tir_rt_sync(tir_ctx *ctx, tir_rt_device *dev) {
    TIR_TRY(rt_bind(ctx, dev));
    return RT_CU(ctx, dev->cu, CtxSynchronize);
}

tir_status tir_rt_mem_info(tir_ctx *ctx, tir_rt_device *dev, size_t *free_bytes,
                           size_t *total_bytes) {
    TIR_TRY(rt_bind(ctx, dev));
    return RT_CU(ctx, dev->cu, MemGetInfo, free_bytes, total_bytes);
}

void tir_rt_device_destroy(tir_rt_device *dev) {
    if (!dev) return;
    const rt_driver *cu = dev->cu;
    cu->CtxSetCurrent(dev->pctx);
    cu->CtxSynchronize();
    while (dev->blas) rt_blas_destroy(dev->blas);
    while (dev->events) tir_rt_event_destroy(dev->events);
    while (dev->modules) tir_rt_module_destroy(dev->modules);
    for (size_t i = 0; i < dev->nallocs; i++) cu->MemFree(dev->allocs[i].ptr);
    free(dev->allocs);
    cu->DevicePrimaryCtxRelease(dev->dev);
    free(dev);
}

/* ------------------------------------------------------------------ memory */

static rt_alloc *find_alloc(const tir_rt_device *dev, tir_rt_ptr p, size_t bytes) {
    for (size_t i = 0; i < dev->nallocs; i++) {
        rt_alloc *a = &dev->allocs[i];
        if (p >= a->ptr && p - a->ptr <= a->bytes && bytes <= a->bytes - (p - a->ptr))
            return a;
    }
    return NULL;
}

tir_status rt_check_range(tir_ctx *ctx, const tir_rt_device *dev, tir_rt_ptr p, size_t bytes,
                          const char *what) {
    if (find_alloc(dev, p, bytes)) return TIR_OK;
    const rt_alloc *in = find_alloc(dev, p, 0);
    if (in)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "cuda: %s: %zu bytes at 0x%llx run past the end of its allocation "
                            "(0x%llx, %zu bytes)",
                            what, bytes, (unsigned long long)p, (unsigned long long)in->ptr,
                            in->bytes);
    return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                        "cuda: %s: 0x%llx is not in a live allocation of this device", what,
                        (unsigned long long)p);
}

tir_status rt_check_dims(tir_ctx *ctx, const char *what, int64_t M, int64_t N, int64_t K) {
    if (M < 1 || N < 1 || K < 1 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "%s: sizes M=%lld N=%lld K=%lld must be in 1..%d", what,
                            (long long)M, (long long)N, (long long)K, INT32_MAX);
    return TIR_OK;
}

tir_status tir_rt_alloc(tir_ctx *ctx, tir_rt_device *dev, size_t bytes, tir_rt_ptr *out) {
    *out = 0;
    if (bytes == 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: cannot allocate 0 bytes");
    if (dev->nallocs == dev->capallocs) {
        size_t cap = dev->capallocs ? 2 * dev->capallocs : 16;
        rt_alloc *a = realloc(dev->allocs, cap * sizeof *a);
        if (!a) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "cuda: out of host memory");
        dev->allocs = a;
        dev->capallocs = cap;
    }
    TIR_TRY(rt_bind(ctx, dev));
    rt_CUdeviceptr p = 0;
    rt_CUresult r = dev->cu->MemAlloc(&p, bytes);
    if (r != RT_CUDA_SUCCESS) {
        char detail[96];
        snprintf(detail, sizeof detail, "(asked for %zu bytes)", bytes);
        return rt_cu_fail(ctx, dev->cu, r, "cuMemAlloc_v2", detail);
    }
    dev->allocs[dev->nallocs++] = (rt_alloc){p, bytes};
    *out = p;
    return TIR_OK;
}

tir_status tir_rt_free(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr ptr) {
    if (ptr == 0) return TIR_OK;
    for (size_t i = 0; i < dev->nallocs; i++) {
        if (dev->allocs[i].ptr != ptr) continue;
        dev->allocs[i] = dev->allocs[--dev->nallocs];
        TIR_TRY(rt_bind(ctx, dev));
        return RT_CU(ctx, dev->cu, MemFree, ptr);
    }
    return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                        "cuda: 0x%llx is not the start of a live allocation of this device",
                        (unsigned long long)ptr);
}

tir_status tir_rt_memset8(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr ptr, uint8_t value,
                          size_t bytes) {
    TIR_TRY(rt_check_range(ctx, dev, ptr, bytes, "memset8"));
    TIR_TRY(rt_bind(ctx, dev));
    return RT_CU(ctx, dev->cu, MemsetD8, ptr, value, bytes);
}

tir_status tir_rt_memset32(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr ptr, uint32_t value,
                           size_t count) {
    if (ptr % 4)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "cuda: memset32: 0x%llx is not 4-byte aligned",
                            (unsigned long long)ptr);
    if (count > SIZE_MAX / 4)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: memset32: count too large");
    TIR_TRY(rt_check_range(ctx, dev, ptr, count * 4, "memset32"));
    TIR_TRY(rt_bind(ctx, dev));
    return RT_CU(ctx, dev->cu, MemsetD32, ptr, value, count);
}

tir_status tir_rt_copy_h2d(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr dst, const void *src,
                           size_t bytes) {
    if (!src && bytes) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: copy_h2d: no source");
    TIR_TRY(rt_check_range(ctx, dev, dst, bytes, "copy_h2d destination"));
    if (bytes == 0) return TIR_OK;
    TIR_TRY(rt_bind(ctx, dev));
    return RT_CU(ctx, dev->cu, MemcpyHtoD, dst, src, bytes);
}

tir_status tir_rt_copy_d2h(tir_ctx *ctx, tir_rt_device *dev, void *dst, tir_rt_ptr src,
                           size_t bytes) {
    if (!dst && bytes)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: copy_d2h: no destination");
    TIR_TRY(rt_check_range(ctx, dev, src, bytes, "copy_d2h source"));
    if (bytes == 0) return TIR_OK;
    TIR_TRY(rt_bind(ctx, dev));
    return RT_CU(ctx, dev->cu, MemcpyDtoH, dst, src, bytes);
}

tir_status tir_rt_copy_d2d(tir_ctx *ctx, tir_rt_device *dev, tir_rt_ptr dst, tir_rt_ptr src,
                           size_t bytes) {
    TIR_TRY(rt_check_range(ctx, dev, dst, bytes, "copy_d2d destination"));
    TIR_TRY(rt_check_range(ctx, dev, src, bytes, "copy_d2d source"));
    if (bytes == 0) return TIR_OK;
    if ((dst < src ? src - dst : dst - src) < bytes)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: copy_d2d: the ranges overlap");
    TIR_TRY(rt_bind(ctx, dev));
    return RT_CU(ctx, dev->cu, MemcpyDtoD, dst, src, bytes);
}

/* ----------------------------------------------------------------- modules */

/* Drops trailing blank lines the JIT leaves in its logs. */
static void trim_log(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r')) s[--n] = '\0';
}

tir_status tir_rt_module_create(tir_ctx *ctx, tir_rt_device *dev, const char *ptx,
                                tir_rt_module **out) {
    *out = NULL;
    if (!ptx || !*ptx) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: empty PTX text");
    TIR_TRY(rt_bind(ctx, dev));
    tir_rt_module *m = calloc(1, sizeof *m);
    char *err_log = calloc(1, JIT_LOG_BYTES);
    char *info_log = calloc(1, JIT_LOG_BYTES);
    if (!m || !err_log || !info_log) {
        free(m);
        free(err_log);
        free(info_log);
        return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "cuda: out of host memory");
    }
    rt_CUjit_option opts[] = {RT_CU_JIT_ERROR_LOG_BUFFER, RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              RT_CU_JIT_INFO_LOG_BUFFER, RT_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                              RT_CU_JIT_LOG_VERBOSE, RT_CU_JIT_OPTIMIZATION_LEVEL};
    /* Sizes and flags travel in the pointer-sized value slots. */
    void *vals[] = {err_log, (void *)(uintptr_t)(JIT_LOG_BYTES - 1), info_log,
                    (void *)(uintptr_t)(JIT_LOG_BYTES - 1), (void *)(uintptr_t)1,
                    (void *)(uintptr_t)(unsigned)dev->jit_opt_level};
    /* The last option only when set: the driver's default otherwise. */
    unsigned nopts = (unsigned)(sizeof opts / sizeof opts[0]) - (dev->jit_opt_level < 0);
    rt_CUresult r = dev->cu->ModuleLoadDataEx(&m->mod, ptx, nopts, opts, vals);
    err_log[JIT_LOG_BYTES - 1] = info_log[JIT_LOG_BYTES - 1] = '\0';
    trim_log(err_log);
    trim_log(info_log);
    if (r != RT_CUDA_SUCCESS) {
        size_t n = strlen(err_log) + 32;
        char *detail = malloc(n);
        if (detail)
            snprintf(detail, n, "JIT error log:\n%s", *err_log ? err_log : "(empty)");
        tir_status s = rt_cu_fail(ctx, dev->cu, r, "cuModuleLoadDataEx", detail);
        free(detail);
        free(err_log);
        free(info_log);
        free(m);
        return s;
    }
    free(err_log);
    /* Keep only what the log needs. */
    char *shrunk = realloc(info_log, strlen(info_log) + 1);
    m->info_log = shrunk ? shrunk : info_log;
    m->dev = dev;
    RT_LIST_PUSH(dev->modules, m);
    *out = m;
    return TIR_OK;
}

const char *tir_rt_module_info_log(const tir_rt_module *mod) {
    return mod && mod->info_log ? mod->info_log : "";
}

void tir_rt_module_destroy(tir_rt_module *mod) {
    if (!mod) return;
    tir_rt_device *dev = mod->dev;
    if (dev->builtin == mod) dev->builtin = NULL;
    RT_LIST_REMOVE(dev->modules, mod);
    dev->cu->CtxSetCurrent(dev->pctx);
    /* Unloading code a queued kernel still runs is undefined: wait first. */
    dev->cu->CtxSynchronize();
    dev->cu->ModuleUnload(mod->mod);
    tir_rt_kernel *k = mod->kernels;
    while (k) {
        tir_rt_kernel *next = k->next;
        free(k->name);
        free(k->param_sizes);
        free(k);
        k = next;
    }
    free(mod->info_log);
    free(mod);
}

/* Counts the kernel's parameters and their sizes with cuFuncGetParamInfo
 * (CUDA 12.4+), which answers CUDA_ERROR_INVALID_VALUE past the last one.
 * Leaves nparams at -1 when the driver cannot tell. */
static tir_status read_params(tir_ctx *ctx, tir_rt_kernel *k) {
    const rt_driver *cu = k->mod->dev->cu;
    k->nparams = -1;
    if (!cu->FuncGetParamInfo) return TIR_OK;
    size_t sizes[TIR_RT_MAX_ARGS + 1];
    int n = 0;
    for (; n <= TIR_RT_MAX_ARGS; n++) {
        size_t off = 0;
        rt_CUresult r = cu->FuncGetParamInfo(k->fn, (size_t)n, &off, &sizes[n]);
        if (r == RT_CUDA_ERROR_INVALID_VALUE) break; /* past the last one */
        if (r != RT_CUDA_SUCCESS) return TIR_OK;     /* cannot tell */
    }
    /* No parameter at all looks the same as a driver that cannot answer
       for this function; leave such kernels unchecked rather than refuse
       every argument. */
    if (n == 0 || n > TIR_RT_MAX_ARGS) return TIR_OK;
    k->param_sizes = malloc(sizeof(size_t) * (size_t)n);
    if (!k->param_sizes) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "cuda: out of host memory");
    memcpy(k->param_sizes, sizes, sizeof(size_t) * (size_t)n);
    k->nparams = n;
    return TIR_OK;
}

tir_status tir_rt_kernel_get(tir_ctx *ctx, tir_rt_module *mod, const char *name,
                             tir_rt_kernel **out) {
    *out = NULL;
    if (!mod || !name) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: no module or name");
    for (tir_rt_kernel *k = mod->kernels; k; k = k->next)
        if (strcmp(k->name, name) == 0) {
            *out = k;
            return TIR_OK;
        }
    tir_rt_device *dev = mod->dev;
    const rt_driver *cu = dev->cu;
    TIR_TRY(rt_bind(ctx, dev));
    rt_CUfunction fn = NULL;
    rt_CUresult r = cu->ModuleGetFunction(&fn, mod->mod, name);
    if (r == RT_CUDA_ERROR_NOT_FOUND)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: the module has no kernel '%s'",
                            name);
    if (r != RT_CUDA_SUCCESS) return rt_cu_fail(ctx, cu, r, "cuModuleGetFunction", NULL);
    tir_rt_kernel *k = calloc(1, sizeof *k);
    char *kname = strdup(name);
    if (!k || !kname) {
        free(k);
        free(kname);
        return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "cuda: out of host memory");
    }
    k->mod = mod;
    k->fn = fn;
    k->name = kname;
    tir_status s = RT_CU(ctx, cu, FuncGetAttribute, &k->max_threads,
                         RT_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
    if (s == TIR_OK)
        s = RT_CU(ctx, cu, FuncGetAttribute, &k->static_smem,
                  RT_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
    if (s == TIR_OK)
        s = RT_CU(ctx, cu, FuncGetAttribute, &k->max_dyn_smem,
                  RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn);
    if (s == TIR_OK) s = read_params(ctx, k);
    if (s != TIR_OK) {
        free(k->param_sizes);
        free(k->name);
        free(k);
        return s;
    }
    k->next = mod->kernels;
    mod->kernels = k;
    *out = k;
    return TIR_OK;
}

tir_status tir_rt_kernel_info_get(tir_ctx *ctx, tir_rt_kernel *k, tir_rt_kernel_info *out) {
    memset(out, 0, sizeof *out);
    tir_rt_device *dev = k->mod->dev;
    const rt_driver *cu = dev->cu;
    TIR_TRY(rt_bind(ctx, dev));
    static const struct {
        rt_CUfunction_attribute attr;
        size_t off;
    } attrs[] = {
        {RT_CU_FUNC_ATTRIBUTE_NUM_REGS, offsetof(tir_rt_kernel_info, num_regs)},
        {RT_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, offsetof(tir_rt_kernel_info, static_smem)},
        {RT_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, offsetof(tir_rt_kernel_info, local_bytes)},
        {RT_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, offsetof(tir_rt_kernel_info, const_bytes)},
        {RT_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(tir_rt_kernel_info, max_threads)},
        {RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
         offsetof(tir_rt_kernel_info, max_dynamic_smem)},
        {RT_CU_FUNC_ATTRIBUTE_PTX_VERSION, offsetof(tir_rt_kernel_info, ptx_version)},
        {RT_CU_FUNC_ATTRIBUTE_BINARY_VERSION, offsetof(tir_rt_kernel_info, binary_version)},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = 0;
        TIR_TRY(RT_CU(ctx, cu, FuncGetAttribute, &v, attrs[i].attr, k->fn));
        memcpy((char *)out + attrs[i].off, &v, sizeof v);
    }
    out->nparams = k->nparams;
    return TIR_OK;
}

tir_status tir_rt_kernel_set_max_dynamic_smem(tir_ctx *ctx, tir_rt_kernel *k, int bytes) {
    tir_rt_device *dev = k->mod->dev;
    int limit = dev->props.smem_per_block_optin - k->static_smem;
    if (bytes < 0 || bytes > limit)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "cuda: kernel '%s': %d bytes of dynamic shared memory requested; "
                            "the device allows at most %d beside the kernel's %d static bytes",
                            k->name, bytes, limit, k->static_smem);
    TIR_TRY(rt_bind(ctx, dev));
    TIR_TRY(RT_CU(ctx, dev->cu, FuncSetAttribute, k->fn,
                  RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
    k->max_dyn_smem = bytes;
    return TIR_OK;
}

/* ---------------------------------------------------------------- launches */

static size_t arg_size(tir_rt_arg_kind kind) {
    switch (kind) {
    case TIR_RT_ARG_I32:
    case TIR_RT_ARG_F32:
        return 4;
    case TIR_RT_ARG_PTR:
    case TIR_RT_ARG_I64:
    case TIR_RT_ARG_F64:
        return 8;
    }
    return 0;
}

static tir_status check_launch(tir_ctx *ctx, const tir_rt_kernel *k, const unsigned grid[3],
                               const unsigned block[3], unsigned dyn_smem, int nargs,
                               const tir_rt_arg *args) {
    const tir_rt_props *p = &k->mod->dev->props;
    static const char xyz[] = "xyz";
    for (int i = 0; i < 3; i++) {
        if (grid[i] < 1 || grid[i] > (unsigned)p->max_grid_dim[i])
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "cuda: launch of '%s': grid.%c = %u is outside 1..%d", k->name,
                                xyz[i], grid[i], p->max_grid_dim[i]);
        if (block[i] < 1 || block[i] > (unsigned)p->max_block_dim[i])
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "cuda: launch of '%s': block.%c = %u is outside 1..%d", k->name,
                                xyz[i], block[i], p->max_block_dim[i]);
    }
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    if (threads > (uint64_t)k->max_threads)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "cuda: launch of '%s': a block of %llu threads exceeds the kernel's "
                            "limit of %d (set by its register use)",
                            k->name, (unsigned long long)threads, k->max_threads);
    if (dyn_smem > (unsigned)k->max_dyn_smem)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "cuda: launch of '%s': %u bytes of dynamic shared memory exceed the "
                            "kernel's limit of %d (raise it with "
                            "tir_rt_kernel_set_max_dynamic_smem)",
                            k->name, dyn_smem, k->max_dyn_smem);
    if (nargs < 0 || nargs > TIR_RT_MAX_ARGS || (nargs > 0 && !args))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "cuda: launch of '%s': bad argument list (%d arguments)", k->name,
                            nargs);
    if (k->nparams >= 0 && nargs != k->nparams)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "cuda: launch of '%s': the kernel takes %d parameter%s, got %d "
                            "argument%s",
                            k->name, k->nparams, k->nparams == 1 ? "" : "s", nargs,
                            nargs == 1 ? "" : "s");
    for (int i = 0; i < nargs; i++) {
        size_t size = arg_size(args[i].kind);
        if (size == 0)
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "cuda: launch of '%s': argument %d has unknown kind %d", k->name,
                                i, (int)args[i].kind);
        if (k->nparams >= 0 && size != k->param_sizes[i])
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "cuda: launch of '%s': argument %d is %zu bytes but the "
                                "parameter is %zu bytes",
                                k->name, i, size, k->param_sizes[i]);
    }
    return TIR_OK;
}

tir_status tir_rt_launch(tir_ctx *ctx, tir_rt_kernel *k, const unsigned grid[3],
                         const unsigned block[3], unsigned dyn_smem, int nargs,
                         const tir_rt_arg *args) {
    if (!k || !grid || !block)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: launch without kernel or sizes");
    TIR_TRY(check_launch(ctx, k, grid, block, dyn_smem, nargs, args));
    tir_rt_device *dev = k->mod->dev;
    TIR_TRY(rt_bind(ctx, dev));
    void *params[TIR_RT_MAX_ARGS];
    /* The driver reads each argument through a pointer to its value; it
       does not write through them. */
    for (int i = 0; i < nargs; i++) params[i] = (void *)&args[i].v;
    rt_CUresult r = dev->cu->LaunchKernel(k->fn, grid[0], grid[1], grid[2], block[0], block[1],
                                          block[2], dyn_smem, NULL, nargs ? params : NULL,
                                          NULL);
    if (r != RT_CUDA_SUCCESS) {
        char detail[320];
        snprintf(detail, sizeof detail, "(kernel '%s', grid %ux%ux%u, block %ux%ux%u, %u bytes "
                 "of dynamic shared memory)",
                 k->name, grid[0], grid[1], grid[2], block[0], block[1], block[2], dyn_smem);
        return rt_cu_fail(ctx, dev->cu, r, "cuLaunchKernel", detail);
    }
    return TIR_OK;
}

/* ------------------------------------------------------------------ events */

tir_status tir_rt_event_create(tir_ctx *ctx, tir_rt_device *dev, tir_rt_event **out) {
    *out = NULL;
    TIR_TRY(rt_bind(ctx, dev));
    tir_rt_event *e = calloc(1, sizeof *e);
    if (!e) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "cuda: out of host memory");
    tir_status s = RT_CU(ctx, dev->cu, EventCreate, &e->ev, RT_CU_EVENT_DEFAULT);
    if (s != TIR_OK) {
        free(e);
        return s;
    }
    e->dev = dev;
    RT_LIST_PUSH(dev->events, e);
    *out = e;
    return TIR_OK;
}

void tir_rt_event_destroy(tir_rt_event *ev) {
    if (!ev) return;
    tir_rt_device *dev = ev->dev;
    RT_LIST_REMOVE(dev->events, ev);
    dev->cu->CtxSetCurrent(dev->pctx);
    dev->cu->EventDestroy(ev->ev);
    free(ev);
}

tir_status tir_rt_event_record(tir_ctx *ctx, tir_rt_event *ev) {
    TIR_TRY(rt_bind(ctx, ev->dev));
    return RT_CU(ctx, ev->dev->cu, EventRecord, ev->ev, NULL);
}

tir_status rt_event_pending(tir_ctx *ctx, tir_rt_event *ev, bool *pending) {
    *pending = false;
    TIR_TRY(rt_bind(ctx, ev->dev));
    rt_CUresult r = ev->dev->cu->EventQuery(ev->ev);
    if (r == RT_CUDA_ERROR_NOT_READY) return *pending = true, TIR_OK;
    return rt_cu_check(ctx, ev->dev->cu, r, "cuEventQuery");
}

tir_status tir_rt_event_elapsed_ms(tir_ctx *ctx, tir_rt_event *start, tir_rt_event *end,
                                   float *ms) {
    *ms = 0;
    if (start->dev != end->dev)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "cuda: events of different devices");
    const rt_driver *cu = end->dev->cu;
    TIR_TRY(rt_bind(ctx, end->dev));
    TIR_TRY(RT_CU(ctx, cu, EventSynchronize, end->ev));
    return rt_cu_check(ctx, cu, cu->EventElapsedTime(ms, start->ev, end->ev),
                       "cuEventElapsedTime");
}
