/* cg_dump: writes the PTX of the hand-built codegen test kernels
 * (tests/cg_kernels.c) into files, to load and run them on a GPU.
 *
 *   cg_dump [-a ARCH] [-o DIR] [--no-contract] [NAME...]
 *
 * For each kernel (all of them when no NAME is given) it writes DIR/NAME.ptx
 * and DIR/NAME.txt: what the kernel computes, its .entry name, its
 * parameters in order (buffers are 64-bit global pointers, scalars are
 * passed by value) and its launch dimensions and static shared memory.
 * ARCH defaults to sm_90, DIR to the current directory.  Built, not
 * installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_kernels.h"
#include "minitir/codegen.h"

static int usage(void) {
    fprintf(stderr, "usage: cg_dump [-a ARCH] [-o DIR] [--no-contract] [NAME...]\nkernels:");
    for (int i = 0; i < ck_nentries; i++) fprintf(stderr, " %s", ck_entries[i].name);
    fprintf(stderr, "\n");
    return 2;
}

static void dim(FILE *f, const char *what, const tir_launch_dim *d) {
    fprintf(f, "%s", what);
    for (int i = 0; i < 3; i++) {
        if (d[i].is_const)
            fprintf(f, " %lld", (long long)d[i].value);
        else
            fprintf(f, " symbolic");
    }
    fprintf(f, "\n");
}

static int dump(tir_ctx *ctx, const ck_entry *e, const tir_codegen_opts *o, const char *dir) {
    const tir_module *m;
    if (tir_codegen(ctx, e->build(ctx), o, &m) != TIR_OK) {
        fprintf(stderr, "cg_dump: %s: %s\n", e->name, tir_ctx_error(ctx));
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.ptx", dir, e->name);
    FILE *f = fopen(path, "w");
    if (!f || fwrite(m->ptx, 1, m->ptx_len, f) != m->ptx_len || fclose(f) != 0) {
        fprintf(stderr, "cg_dump: cannot write %s\n", path);
        return 1;
    }
    snprintf(path, sizeof path, "%s/%s.txt", dir, e->name);
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cg_dump: cannot write %s\n", path);
        return 1;
    }
    fprintf(f, "kernel %s\nentry %s\narch %s\n%s\n", e->name, m->kernel_name, m->arch, e->what);
    for (int i = 0; i < m->nparams; i++) {
        const tir_kernel_param *p = &m->params[i];
        char dt[32];
        tir_dtype_str(p->dtype, dt, sizeof dt);
        if (p->kind == TIR_PARAM_BUFFER) {
            int64_t n = tir_buffer_const_size(p->buffer);
            fprintf(f, "param %d buffer %s %s", i, p->name, dt);
            if (n >= 0)
                fprintf(f, " elements %lld", (long long)n);
            else
                fprintf(f, " elements symbolic");
            fprintf(f, " align %d%s\n", p->buffer->align, p->read_only ? " read_only" : "");
        } else {
            fprintf(f, "param %d scalar %s %s\n", i, p->name, dt);
        }
    }
    dim(f, "grid", m->grid);
    dim(f, "block", m->block);
    fprintf(f, "shared_bytes %lld\n", (long long)m->shared_bytes);
    fprintf(f, "dyn_shared_bytes %lld\n", (long long)m->dyn_shared_bytes);
    fclose(f);
    printf("%s/%s.ptx (%.1f ms)\n", dir, e->name, m->compile_ms);
    return 0;
}

int main(int argc, char **argv) {
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    const char *dir = ".";
    int first = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-a") == 0 && i + 1 < argc)
            o.arch = argv[++i];
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--no-contract") == 0)
            o.fma_contract = false;
        else if (argv[i][0] == '-')
            return usage();
        else {
            first = i;
            break;
        }
    }
    tir_ctx *ctx = tir_ctx_create();
    if (!ctx) return 1;
    int rc = 0;
    for (int i = 0; i < ck_nentries; i++) {
        bool want = first == argc;
        for (int a = first; a < argc; a++) want |= strcmp(argv[a], ck_entries[i].name) == 0;
        if (want) rc |= dump(ctx, &ck_entries[i], &o, dir);
    }
    for (int a = first; a < argc; a++) {
        bool known = false;
        for (int i = 0; i < ck_nentries; i++) known |= strcmp(argv[a], ck_entries[i].name) == 0;
        if (!known) {
            fprintf(stderr, "cg_dump: unknown kernel '%s'\n", argv[a]);
            rc = 1;
        }
    }
    tir_ctx_destroy(ctx);
    return rc ? 1 : 0;
}
