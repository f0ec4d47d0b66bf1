/* direct_check.c: see direct_check.h. */
#include "direct_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_interp.h"

static void count_reason(dc_tally *t, const char *why) {
    for (int i = 0; i < t->nreasons; i++)
        if (!strncmp(t->reasons[i].text, why, sizeof t->reasons[i].text - 1)) {
            t->reasons[i].n++;
            return;
        }
    if (t->nreasons == DC_MAX_REASONS) {
        t->other_reasons++;
        return;
    }
    snprintf(t->reasons[t->nreasons].text, sizeof t->reasons[0].text, "%s", why);
    t->reasons[t->nreasons++].n = 1;
}

int dc_compile(tir_ctx *ctx, const tir_prim_func *const *kernels, int n, bool fma_contract,
               const tir_module **mods, dc_tally *t, const char **err) {
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.pipeline = TIR_CG_PIPELINE_DIRECT;
    o.direct_all_loops = t->rolled;
    o.direct_unroll = !t->rolled; /* the emitter's own unrolling, else LLVM's kernels */
    o.direct_only = true;
    o.fma_contract = fma_contract;
    int all = 1;
    t->sets++;
    t->sets_rolled += t->rolled;
    t->rolled = !t->rolled;
    for (int i = 0; i < n; i++) {
        mods[i] = NULL;
        t->kernels++;
        if (tir_codegen(ctx, kernels[i], &o, &mods[i]) == TIR_OK) {
            if (mods[i]->pipeline != TIR_CG_PIPELINE_DIRECT) {
                *err = "tir_codegen with direct_only gave another pipeline's PTX";
                t->errors++;
                return -1;
            }
            t->taken++;
            continue;
        }
        const char *msg = tir_ctx_error(ctx);
        const char *p = msg ? strstr(msg, "the direct emitter refuses kernel '") : NULL;
        p = p ? strstr(p, "': ") : NULL;
        if (!p) {
            *err = msg ? msg : "(no message)";
            t->errors++;
            return -1;
        }
        count_reason(t, p + 3);
        tir_ctx_clear_error(ctx);
        all = 0;
    }
    t->sets_taken += all;
    return all;
}

int dc_run(tir_ctx *ctx, const tir_module *m, const tir_arg *args, const size_t *bytes, char *err,
           size_t errlen) {
    enum { MAXP = 16 };
    ptx_arg pa[MAXP];
    if (m->nparams > MAXP) {
        snprintf(err, errlen, "%d parameters", m->nparams);
        return -1;
    }
    for (int i = 0; i < m->nparams; i++) {
        if (m->params[i].kind == TIR_PARAM_BUFFER)
            pa[i] = (ptx_arg){true, args[i].data, bytes[i], 0};
        else
            pa[i] = (ptx_arg){false, NULL, 0, args[i].scalar};
    }
    int64_t grid[3], block[3];
    if (tir_module_launch_dims(ctx, m, m->nparams, args, grid, block) != TIR_OK) {
        snprintf(err, errlen, "launch dims: %s", tir_ctx_error(ctx));
        tir_ctx_clear_error(ctx);
        return -1;
    }
    /* a grid extent of 0 that tir_module_launch_dims accepts (an empty
     * tensor, tir_launch_dim.zero_ok) launches nothing, as the runtime
     * and the simulator do; the PTX interpreter takes only a real launch */
    for (int d = 0; d < 3; d++)
        if (grid[d] == 0) return 0;
    /* the fuzzers' kernels are small: a runaway loop fails soon */
    ptx_interp_opts po = {.max_steps_per_thread = 1 << 22};
    ptx_interp_stats st;
    char e[512];
    if (ptx_interp_run_ex(m->ptx, m->kernel_name, grid, block, pa, m->nparams, m->dyn_shared_bytes,
                          &po, &st, e, sizeof e) != 0) {
        snprintf(err, errlen, "PTX interpreter, kernel %s: %s", m->kernel_name, e);
        return -1;
    }
    return 0;
}

void dc_tally_text(const dc_tally *t, int top, char *buf, size_t n) {
    size_t k = 0;
    k += (size_t)snprintf(buf, n,
                          "%ld kernels, %ld direct (%ld of %ld sets whole, %ld with loops all rolled, "
                          "%ld run and compared), %ld refused",
                          t->kernels, t->taken, t->sets_taken, t->sets, t->sets_rolled, t->runs,
                          t->kernels - t->taken - t->errors);
    bool used[DC_MAX_REASONS] = {false};
    for (int r = 0; r < top && k < n; r++) {
        int best = -1;
        for (int i = 0; i < t->nreasons; i++)
            if (!used[i] && (best < 0 || t->reasons[i].n > t->reasons[best].n)) best = i;
        if (best < 0) break;
        used[best] = true;
        k += (size_t)snprintf(buf + k, n - k, "%s%ld %s", r ? "; " : ": ", t->reasons[best].n,
                              t->reasons[best].text);
    }
    if (k < n && t->nreasons > top) k += (size_t)snprintf(buf + k, n - k, "; ...");
    if (k < n && t->errors) snprintf(buf + k, n - k, "; %ld codegen errors", t->errors);
}
