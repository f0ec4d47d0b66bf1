/* ptx.c: `tirc ptx`: the PTX of one step to a file or standard output; the
 * launch shape and compile time to stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tirc.h"

int tirc_cmd_ptx(tir_ctx *ctx, const opts *o) {
    if (o->step_lo != o->step_hi)
        return tirc_usage_error("ptx takes one --step (1..%d)", SEED_NSTEPS);
    if (tir_codegen_check_arch(ctx, o->arch) != TIR_OK)
        return tirc_usage_error("%s", tir_ctx_error(ctx));
    int e = o->epi < 0 ? SEED_EPI_RELU : o->epi;
    const tir_prim_func *f = tirc_define(ctx, o, e, o->M, o->N, o->K);
    const tir_module *m;
    double ms;
    if (!f || tirc_compile(ctx, o, f, tirc_is_fused(o), o->step_lo, &m, &ms) != TIR_OK) {
        fprintf(stderr, "tirc: cannot compile %s step %d: %s\n", o->example, o->step_lo,
                tir_ctx_error(ctx));
        return EXIT_COMPILE;
    }
    FILE *fp = o->out ? fopen(o->out, "w") : stdout;
    if (!fp) {
        fprintf(stderr, "tirc: cannot write %s: %s\n", o->out, strerror(errno));
        return EXIT_USAGE;
    }
    bool ok = fwrite(m->ptx, 1, m->ptx_len, fp) == m->ptx_len;
    if (o->out) ok = (fclose(fp) == 0) && ok;
    if (!ok) {
        fprintf(stderr, "tirc: writing the PTX failed\n");
        return EXIT_USAGE;
    }
    fprintf(stderr,
            "tirc: %s step %d %lldx%lldx%lld: kernel %s for %s, block %lldx%lldx%lld, "
            "%lld bytes shared%s, compiled in %.1f ms%s%s\n",
            o->example, o->step_lo, (long long)o->M, (long long)o->N, (long long)o->K,
            m->kernel_name, m->arch, (long long)m->block[0].value, (long long)m->block[1].value,
            (long long)m->block[2].value, (long long)(m->shared_bytes + m->dyn_shared_bytes),
            m->dyn_shared_bytes ? " (dynamic)" : "", ms,
            o->out ? "; PTX written to " : "", o->out ? o->out : "");
    return EXIT_OK;
}
