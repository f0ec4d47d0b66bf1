/* ptx.c: `tirc ptx`: the PTX of one step to a file or standard output; the
 * launch shape and compile time to stderr.  A step that lowers to several
 * kernels (--splitk) writes one PTX module per kernel: to standard output
 * one after the other, each after a `// kernel <name>` line; with -o FILE,
 * kernel i > 0 goes to FILE with `.k<i>` inserted before its extension.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tirc.h"

/* The file kernel i of several goes to. */
static void module_path(const char *out, int i, char *buf, size_t n) {
    if (i == 0) {
        snprintf(buf, n, "%s", out);
        return;
    }
    const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
    if (!dot || (slash && dot < slash)) dot = out + strlen(out);
    snprintf(buf, n, "%.*s.k%d%s", (int)(dot - out), out, i, dot);
}

/* Writes module m (one of nm) to the file of index i or standard output. */
static int write_module(const opts *o, const tir_module *m, int i, int nm, double ms) {
    char path[4096];
    if (o->out) module_path(o->out, i, path, sizeof path);
    FILE *fp = o->out ? fopen(path, "w") : stdout;
    if (!fp) {
        fprintf(stderr, "tirc: cannot write %s: %s\n", path, strerror(errno));
        return EXIT_USAGE;
    }
    bool ok = true;
    if (!o->out && nm > 1) ok = fprintf(fp, "// kernel %s\n", m->kernel_name) > 0;
    ok = ok && fwrite(m->ptx, 1, m->ptx_len, fp) == m->ptx_len;
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
            m->dyn_shared_bytes ? " (dynamic)" : "", ms, o->out ? "; PTX written to " : "",
            o->out ? path : "");
    return EXIT_OK;
}

/* -v: where the compile time went, per phase (the driver's JIT is not
 * run by `ptx`; `tirc bench` reports the whole compile time). */
static void print_phases(const tir_module_set *ms, double total, double sched, double codegen) {
    double build = 0, opt = 0, text = 0, ptx = 0, cache = 0;
    int hits[3] = {0};
    for (int i = 0; i < ms->nmodules; i++) {
        const tir_module *m = ms->modules[i];
        build += m->build_ms, opt += m->opt_ms, text += m->ir_text_ms, ptx += m->ptx_ms;
        cache += m->cache_ms;
        hits[m->cache_hit]++;
    }
    fprintf(stderr,
            "tirc: compile time %.1f ms: schedule %.1f, lower %.1f, LLVM module %.1f, "
            "LLVM optimisation %.1f, LLVM IR text %.1f, PTX emission %.1f, codegen cache %.1f "
            "(%d of %d kernels from memory, %d from disk), other codegen %.1f\n",
            total, sched, total - sched - codegen, build, opt, text, ptx, cache,
            hits[TIR_CG_CACHE_MEMORY], ms->nmodules, hits[TIR_CG_CACHE_DISK],
            codegen - build - opt - text - ptx - cache);
    for (int i = 0; i < ms->nmodules; i++) {
        const tir_module *m = ms->modules[i];
        if (m->pipeline == TIR_CG_PIPELINE_DIRECT)
            fprintf(stderr, "tirc: %s: PTX printed without LLVM (--opt direct)\n", m->kernel_name);
        else if (m->direct_refusal)
            fprintf(stderr, "tirc: %s: through LLVM, outside the direct emitter's subset: %s\n",
                    m->kernel_name, m->direct_refusal);
    }
}

int tirc_cmd_ptx(tir_ctx *ctx, const opts *o) {
    if (o->step_lo != o->step_hi)
        return tirc_usage_error("ptx takes one --step (1..%d, 9 with --dtype)", SEED_NSTEPS);
    if (tir_codegen_check_arch(ctx, o->arch) != TIR_OK)
        return tirc_usage_error("%s", tir_ctx_error(ctx));
    int e = o->epi < 0 ? SEED_EPI_RELU : o->epi;
    const tir_prim_func *f = tirc_define(ctx, o, e, o->M, o->N, o->K);
    tir_module_set ms;
    double t, sched;
    /* --repeat: the same compile again in this process (the last one's
     * PTX is written; the modules of each stay in ctx) */
    for (int r = 0; r < o->repeat; r++) {
        if (!f ||
            tirc_compile(ctx, o, f, tirc_is_fused(o), o->step_lo, &ms, &t, &sched) != TIR_OK) {
            fprintf(stderr, "tirc: cannot compile %s step %d: %s\n", o->example, o->step_lo,
                    tir_ctx_error(ctx));
            return EXIT_COMPILE;
        }
        double codegen = 0;
        for (int i = 0; i < ms.nmodules; i++) codegen += ms.modules[i]->compile_ms;
        if (o->verbose) print_phases(&ms, t, sched, codegen);
    }
    for (int i = 0; i < ms.nmodules; i++) {
        int rc = write_module(o, ms.modules[i], i, ms.nmodules, t);
        if (rc != EXIT_OK) return rc;
    }
    return EXIT_OK;
}
