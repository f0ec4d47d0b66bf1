/* program.c: running a compiled minitir module (tir_module) on a device.
 *
 * The glue between codegen and the driver: load the module's PTX, check
 * the arguments against the module's parameter list (so a wrong call is a
 * clear error, not a kernel fault), evaluate the grid from the scalar
 * arguments and launch.  A module whose shared buffers live in dynamic
 * shared memory (tir_module.dyn_shared_bytes) gets the kernel's limit
 * raised to that size once, at load, and every launch requests it.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"
#include "minitir/runtime.h"

struct tir_rt_program {
    const tir_module *m;
    tir_rt_module *mod;
    tir_rt_kernel *kernel;
    tir_target_limits limits; /* of the device it was loaded on */
};

/* Opts the kernel in to the module's dynamic shared memory.  Past the
 * device's opt-in maximum it is a user error that names the kernel and
 * both sizes (smaller tiles or fewer stages, as lowering would say for the
 * target's own limit). */
static tir_status set_dyn_shared(tir_ctx *ctx, tir_rt_device *dev, tir_rt_program *p) {
    const tir_module *m = p->m;
    if (m->dyn_shared_bytes <= 0) return TIR_OK;
    int64_t optin = tir_rt_device_props(dev)->smem_per_block_optin;
    if (m->dyn_shared_bytes + m->shared_bytes > optin)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "kernel '%s' needs %lld bytes of shared memory per block; this "
                            "device allows at most %lld (its opt-in maximum): use smaller "
                            "tiles or fewer pipeline stages, or compile for this device's arch",
                            m->kernel_name, (long long)(m->dyn_shared_bytes + m->shared_bytes),
                            (long long)optin);
    return tir_rt_kernel_set_max_dynamic_smem(ctx, p->kernel, (int)m->dyn_shared_bytes);
}

tir_status tir_rt_program_create(tir_ctx *ctx, tir_rt_device *dev, const tir_module *m,
                                 tir_rt_program **out) {
    *out = NULL;
    if (!dev || !m || !m->ptx)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_rt_program_create: no device or module");
    tir_rt_program *p = calloc(1, sizeof *p);
    if (!p) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tir_rt_program_create: out of memory");
    p->m = m;
    tir_rt_device_limits(dev, &p->limits);
    tir_status s = tir_rt_module_create(ctx, dev, m->ptx, &p->mod);
    if (s == TIR_OK) s = tir_rt_kernel_get(ctx, p->mod, m->kernel_name, &p->kernel);
    if (s == TIR_OK) s = set_dyn_shared(ctx, dev, p);
    if (s != TIR_OK) {
        tir_rt_program_destroy(p);
        return s;
    }
    *out = p;
    return TIR_OK;
}

void tir_rt_program_destroy(tir_rt_program *p) {
    if (!p) return;
    if (p->mod) tir_rt_module_destroy(p->mod);
    free(p);
}

tir_rt_kernel *tir_rt_program_kernel(const tir_rt_program *p) { return p ? p->kernel : NULL; }

tir_status tir_rt_program_launch(tir_ctx *ctx, tir_rt_program *p, int nargs,
                                 const tir_rt_arg *args) {
    const tir_module *m = p->m;
    if (nargs != m->nparams)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "launch of '%s': %d arguments given, the kernel takes %d",
                            m->kernel_name, nargs, m->nparams);
    tir_arg *sargs = calloc((size_t)(nargs > 0 ? nargs : 1), sizeof *sargs);
    if (!sargs) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "launch: out of memory");
    for (int i = 0; i < nargs; i++) {
        const tir_kernel_param *kp = &m->params[i];
        bool is_buf = kp->kind == TIR_PARAM_BUFFER;
        bool ok = is_buf ? args[i].kind == TIR_RT_ARG_PTR
                         : (args[i].kind == TIR_RT_ARG_I32 || args[i].kind == TIR_RT_ARG_I64);
        if (!ok) {
            free(sargs);
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "launch of '%s': argument %d ('%s') must be %s", m->kernel_name,
                                i, kp->name, is_buf ? "a device pointer" : "an integer scalar");
        }
        if (!is_buf)
            sargs[i].scalar = args[i].kind == TIR_RT_ARG_I32 ? args[i].v.i32 : args[i].v.i64;
    }
    int64_t grid[3], block[3];
    tir_status s = tir_module_launch_dims(ctx, m, nargs, sargs, grid, block);
    free(sargs);
    if (s != TIR_OK) return s;
    /* 0 blocks on a zero_ok axis: an empty tensor, nothing to run (CUDA
     * refuses a launch of 0 blocks) */
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return TIR_OK;
    unsigned g[3], b[3];
    for (int d = 0; d < 3; d++) {
        if (grid[d] < 1 || grid[d] > p->limits.max_grid_dim[d] || block[d] < 1 ||
            block[d] > p->limits.max_block_dim[d])
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                                "launch of '%s': launch dimension %d out of range (grid %lld, "
                                "block %lld)",
                                m->kernel_name, d, (long long)grid[d], (long long)block[d]);
        g[d] = (unsigned)grid[d];
        b[d] = (unsigned)block[d];
    }
    return tir_rt_launch(ctx, p->kernel, g, b, (unsigned)m->dyn_shared_bytes, nargs, args);
}

/* ------------------------------------------------- several kernels (sets)
 *
 * A module set runs as its programs in order on the one stream, each with
 * the function's arguments followed by the workspace pointers; the
 * workspace is allocated once per set (constant shapes), so repeated
 * launches (benchmarks) allocate nothing.
 */

struct tir_rt_program_set {
    const tir_module_set *ms;
    tir_rt_device *dev;
    tir_rt_program **progs; /* [ms->nmodules] */
    tir_rt_ptr *ws;         /* [ms->nworkspace] */
    tir_rt_arg *args;       /* [nparams + nworkspace]: launch scratch */
};

/* Allocates workspace buffer w; the message names it and its size. */
static tir_status alloc_workspace(tir_ctx *ctx, tir_rt_program_set *ps, int w) {
    const tir_buffer *b = ps->ms->workspace[w];
    int64_t n = tir_buffer_const_size(b);
    if (n < 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "workspace buffer '%s' has no constant shape; its size is not known",
                            b->name);
    size_t bytes = (size_t)(n > 0 ? n : 1) * tir_dtype_bytes(b->dtype);
    tir_status s = tir_rt_alloc(ctx, ps->dev, bytes, &ps->ws[w]);
    if (s != TIR_OK) {
        const char *msg = tir_ctx_error(ctx);
        char *copy = strdup(msg);
        tir_ctx_fail(ctx, s, "workspace buffer '%s' (%zu bytes): %s", b->name, bytes,
                     copy ? copy : "allocation failed");
        free(copy);
    }
    return s;
}

tir_status tir_rt_program_set_create(tir_ctx *ctx, tir_rt_device *dev, const tir_module_set *ms,
                                     tir_rt_program_set **out) {
    *out = NULL;
    if (!dev || !ms || ms->nmodules < 1 || ms->nparams < 0 || ms->nworkspace < 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tir_rt_program_set_create: no device or modules");
    tir_rt_program_set *ps = calloc(1, sizeof *ps);
    if (ps) {
        ps->progs = calloc((size_t)ms->nmodules, sizeof *ps->progs);
        ps->ws = calloc((size_t)ms->nworkspace + 1, sizeof *ps->ws);
        ps->args = calloc((size_t)(ms->nparams + ms->nworkspace) + 1, sizeof *ps->args);
    }
    if (!ps || !ps->progs || !ps->ws || !ps->args) {
        tir_rt_program_set_destroy(ps);
        return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tir_rt_program_set_create: out of memory");
    }
    ps->ms = ms;
    ps->dev = dev;
    tir_status s = TIR_OK;
    for (int i = 0; i < ms->nmodules && s == TIR_OK; i++)
        s = tir_rt_program_create(ctx, dev, ms->modules[i], &ps->progs[i]);
    for (int w = 0; w < ms->nworkspace && s == TIR_OK; w++) s = alloc_workspace(ctx, ps, w);
    if (s != TIR_OK) {
        tir_rt_program_set_destroy(ps);
        return s;
    }
    *out = ps;
    return TIR_OK;
}

void tir_rt_program_set_destroy(tir_rt_program_set *ps) {
    if (!ps) return;
    if (ps->ws) {
        tir_ctx *tmp = tir_ctx_create(); /* freeing needs a ctx for its (ignored) errors */
        for (int w = 0; w < ps->ms->nworkspace; w++)
            if (ps->ws[w] && tmp) tir_rt_free(tmp, ps->dev, ps->ws[w]);
        tir_ctx_destroy(tmp);
    }
    if (ps->progs)
        for (int i = 0; i < ps->ms->nmodules; i++) tir_rt_program_destroy(ps->progs[i]);
    free(ps->progs);
    free(ps->ws);
    free(ps->args);
    free(ps);
}

int tir_rt_program_set_count(const tir_rt_program_set *ps) { return ps ? ps->ms->nmodules : 0; }

tir_rt_program *tir_rt_program_set_program(const tir_rt_program_set *ps, int i) {
    return ps && i >= 0 && i < ps->ms->nmodules ? ps->progs[i] : NULL;
}

tir_rt_ptr tir_rt_program_set_workspace(const tir_rt_program_set *ps, int w) {
    return ps && w >= 0 && w < ps->ms->nworkspace ? ps->ws[w] : 0;
}

tir_status tir_rt_program_set_launch(tir_ctx *ctx, tir_rt_program_set *ps, int nargs,
                                     const tir_rt_arg *args) {
    const tir_module_set *ms = ps->ms;
    if (nargs != ms->nparams)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "launch of '%s' and the kernels after it: %d arguments given, the "
                            "function takes %d",
                            ms->modules[0]->kernel_name, nargs, ms->nparams);
    for (int i = 0; i < nargs; i++) ps->args[i] = args[i];
    for (int w = 0; w < ms->nworkspace; w++) ps->args[nargs + w] = tir_rt_arg_ptr(ps->ws[w]);
    for (int i = 0; i < ms->nmodules; i++) {
        tir_status s = tir_rt_program_launch(ctx, ps->progs[i], nargs + ms->nworkspace, ps->args);
        if (s != TIR_OK) return s;
    }
    return TIR_OK;
}
