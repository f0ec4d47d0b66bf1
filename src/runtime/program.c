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
