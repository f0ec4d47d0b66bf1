/* sim_kernels.c: runs the kernels of a tir_kernel_set in launch order,
 * as one stream would, with the workspace allocated here.
 *
 * The workspace starts filled with the poison pattern (all bits set: a NaN
 * for floats), so a slice no kernel writes shows in the outputs.  The
 * kernel that first touches a workspace buffer, or a parameter marked in
 * uninit_params, runs with it marked unwritten (with check_uninit, reading
 * before writing is an error); later kernels see it as written, since the
 * per-element record does not outlive a run (an atomic split-K's C,
 * zeroed by one kernel and added to by the next).
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"
#include "minitir/sim.h"

typedef struct {
    tir_visitor v;
    const tir_buffer *buf;
    bool found;
} touch_state;

static bool touch_pre(tir_visitor *v, const tir_node *n) {
    touch_state *t = (touch_state *)v;
    const tir_buffer_load *ld = tir_as_tir_buffer_load(n);
    const tir_buffer_store *st = tir_as_tir_buffer_store(n);
    if ((ld && ld->buffer == t->buf) || (st && st->buffer == t->buf)) t->found = true;
    return !t->found;
}

/* True when the kernel loads or stores its parameter p's buffer. */
static bool touches(const tir_prim_func *k, int p) {
    touch_state t = {{touch_pre, NULL, NULL}, k->buffer_map[p], false};
    tir_visit(&t.v, k->body);
    return t.found;
}

tir_status tir_sim_run_kernels(tir_ctx *ctx, const tir_kernel_set *ks, int nargs,
                               const tir_arg *args, const tir_sim_opts *opts,
                               tir_sim_report *reports) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!ks || ks->nkernels < 1 || (nargs > 0 && !args))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tir_sim_run_kernels: no kernels or no "
                                                      "arguments");
    int nw = ks->nworkspace, np = nargs + nw;
    if (np > 64 && nw > 0)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "tir_sim_run_kernels: at most 64 parameters with workspace");
    tir_arg *all = calloc((size_t)np + 1, sizeof *all);
    if (!all) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "simulator: out of memory");
    if (nargs > 0) memcpy(all, args, sizeof *all * (size_t)nargs);
    tir_status st = TIR_OK;
    for (int w = 0; w < nw && st == TIR_OK; w++) {
        int64_t count = tir_buffer_const_size(ks->workspace[w]);
        size_t bytes = count < 0 ? 0 : (size_t)count * tir_dtype_bytes(ks->workspace[w]->dtype);
        if (count < 0)
            st = tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                              "tir_sim_run_kernels: workspace %s has no constant shape",
                              ks->workspace[w]->name);
        else if (!(all[nargs + w].data = malloc(bytes ? bytes : 1)))
            st = tir_ctx_fail(ctx, TIR_ERR_NOMEM, "simulator: out of memory");
        else
            memset(all[nargs + w].data, 0xff, bytes);
    }
    uint64_t seen = 0, uninit = opts ? opts->uninit_params : 0;
    for (int k = 0; k < ks->nkernels && st == TIR_OK; k++) {
        tir_sim_opts o = {0};
        if (opts) o = *opts;
        o.uninit_params = 0;
        for (int p = 0; p < np && p < 64; p++) {
            uint64_t bit = UINT64_C(1) << p;
            if ((seen & bit) || !touches(ks->kernels[k], p)) continue;
            if (p >= nargs || (uninit & bit)) o.uninit_params |= bit;
            seen |= bit;
        }
        st = tir_sim_run(ctx, ks->kernels[k], np, all, &o, reports ? &reports[k] : NULL);
        if (st != TIR_OK) {
            const char *msg = tir_ctx_sprintf(ctx, "%s", tir_ctx_error(ctx));
            st = tir_ctx_fail(ctx, st, "kernel %d of %d (%s): %s", k, ks->nkernels,
                              ks->kernels[k]->name, msg);
        }
    }
    for (int w = 0; w < nw; w++) free(all[nargs + w].data);
    free(all);
    return st;
}
