/* gpu.c: the GPU side that `tirc run` and `tirc bench` share: opening the
 * device and cuBLAS, a problem's device buffers, launching our kernel, the
 * unfused form or cuBLAS (+ the epilogue kernel), verifying against the
 * cuBLAS reference and timing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tirc.h"

/* The kernel names of the table, per example (matmul, fused). */
static const char *const variant_names[2][3] = {{"minitir", "", "cublas"},
                                                {"fused", "unfused+epilogue", "cublas+epilogue"}};

const char *tirc_kernel_name(const opts *o, variant v) {
    if (v == V_OURS && !tirc_is_fused(o)) return o->ours_name; /* "minitir[/splitkS]" */
    return variant_names[tirc_is_fused(o) ? 1 : 0][v];
}

/* Opens the GPU.  Returns EXIT_OK, EXIT_NO_GPU (no driver or device; the
 * message printed only when required) or EXIT_RUNTIME. */
int tirc_gpu_open(tir_ctx *ctx, gpu *g, bool required) {
    memset(g, 0, sizeof *g);
    tir_status st = tir_rt_device_create(ctx, 0, &g->dev);
    if (st == TIR_ERR_NO_DRIVER || st == TIR_ERR_NO_DEVICE) {
        if (required)
            fprintf(stderr,
                    "tirc: no CUDA GPU: %s\n(run on a machine with an NVIDIA GPU and driver, "
                    "or use `tirc run <example> --sim` to check in the simulator)\n",
                    tir_ctx_error(ctx));
        return EXIT_NO_GPU;
    }
    if (st == TIR_OK) st = tir_rt_blas_create(ctx, g->dev, &g->blas);
    if (st != TIR_OK) {
        fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
        if (st == TIR_ERR_NO_CUBLAS)
            fprintf(stderr, "(cuBLAS is needed as the reference: install the CUDA toolkit's "
                            "libcublas, or set MINITIR_CUBLAS_LIB to its path)\n");
        tir_rt_device_destroy(g->dev);
        g->dev = NULL;
        return EXIT_RUNTIME;
    }
    g->props = tir_rt_device_props(g->dev);
    return EXIT_OK;
}

#define RT(call)                                                                                   \
    do {                                                                                           \
        if ((call) != TIR_OK) goto rt_fail;                                                        \
    } while (0)

tir_status tirc_dprob_make(tir_ctx *ctx, gpu *g, dprob *p, tir_rt_gemm_kind kind, int64_t M,
                           int64_t N, int64_t K, int nsets, uint64_t seed) {
    memset(p, 0, sizeof *p);
    p->M = M, p->N = N, p->K = K, p->nsets = nsets, p->kind = kind;
    tir_dtype in = tir_rt_gemm_kind_input(kind);
    size_t es = (size_t)tir_dtype_bytes(in);
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    float *ha = malloc(sizeof(float) * (na > nb ? na : nb));
    if (!ha) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "out of host memory");
    tir_status st;
    for (int s = 0; s < nsets; s++) {
        if ((st = tir_rt_alloc(ctx, g->dev, na * es, &p->a[s])) != TIR_OK) goto out;
        if ((st = tir_rt_alloc(ctx, g->dev, nb * es, &p->b[s])) != TIR_OK) goto out;
        tir_rt_fill_random(ctx, in, ha, na, seed + 10 * (uint64_t)s);
        if ((st = tir_rt_copy_h2d(ctx, g->dev, p->a[s], ha, na * es)) != TIR_OK) goto out;
        tir_rt_fill_random(ctx, in, ha, nb, seed + 10 * (uint64_t)s + 1);
        if ((st = tir_rt_copy_h2d(ctx, g->dev, p->b[s], ha, nb * es)) != TIR_OK) goto out;
    }
    tir_rt_fill_random(ctx, TIR_F32, ha, (size_t)N, seed + 7);
    if ((st = tir_rt_alloc(ctx, g->dev, (size_t)N * 4, &p->bias)) != TIR_OK) goto out;
    if ((st = tir_rt_copy_h2d(ctx, g->dev, p->bias, ha, (size_t)N * 4)) != TIR_OK) goto out;
    if ((st = tir_rt_alloc(ctx, g->dev, nc * 4, &p->out)) != TIR_OK) goto out;
    if ((st = tir_rt_alloc(ctx, g->dev, nc * 4, &p->ref)) != TIR_OK) goto out;
    if ((st = tir_rt_alloc(ctx, g->dev, nc * 4, &p->tmp)) != TIR_OK) goto out;
    /* Tensor cores are checked against float64 on the same inputs (cuBLAS
     * rounds its own way, TF32 especially); float32 against cuBLAS. */
    if (kind != TIR_RT_GEMM_F32) {
        if ((st = tir_rt_alloc(ctx, g->dev, nc * 8, &p->ref64)) != TIR_OK) goto out;
        st = tir_rt_gemm_ref_device(ctx, g->dev, in, M, N, K, p->a[0], p->b[0], TIR_RT_B_KN,
                                    p->ref64);
    }
out:
    free(ha);
    return st;
}

void tirc_dprob_free(tir_ctx *ctx, gpu *g, dprob *p) {
    for (int s = 0; s < p->nsets; s++) {
        tir_rt_free(ctx, g->dev, p->a[s]);
        tir_rt_free(ctx, g->dev, p->b[s]);
    }
    tir_rt_free(ctx, g->dev, p->bias);
    tir_rt_free(ctx, g->dev, p->out);
    tir_rt_free(ctx, g->dev, p->ref);
    tir_rt_free(ctx, g->dev, p->tmp);
    tir_rt_free(ctx, g->dev, p->ref64);
}

static tir_rt_epilogue rt_epi(int e) {
    tir_rt_epilogue r = {TIR_RT_EPI_BIAS, 0, 0};
    if (e == SEED_EPI_RELU) r.kind = TIR_RT_EPI_BIAS_RELU;
    if (e == SEED_EPI_CLIP) r = (tir_rt_epilogue){TIR_RT_EPI_BIAS_CLIP, SEED_CLIP_LO, SEED_CLIP_HI};
    return r;
}

/* Launches our kernels (one, or split-K's two, in order): arguments by
 * parameter name. */
static tir_status launch_prog(tir_ctx *ctx, tir_rt_program_set *prog, const tir_module_set *ms,
                              tir_rt_ptr a, tir_rt_ptr b, tir_rt_ptr bias, tir_rt_ptr out) {
    tir_rt_arg args[8];
    const tir_module *m = ms->modules[0];
    if (ms->nparams > 8) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "too many parameters");
    for (int i = 0; i < ms->nparams; i++) {
        const char *n = m->params[i].name;
        if (m->params[i].kind != TIR_PARAM_BUFFER)
            return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "unexpected scalar parameter %s", n);
        args[i] = tir_rt_arg_ptr(!strcmp(n, "A")      ? a
                                 : !strcmp(n, "B")    ? b
                                 : !strcmp(n, "bias") ? bias
                                                      : out);
    }
    return tir_rt_program_set_launch(ctx, prog, ms->nparams, args);
}

typedef struct bench_call {
    gpu *g;
    dprob *p;
    variant v;
    int epi;
    tir_rt_program_set *prog;
    const tir_module_set *mod;
} bench_call;

static tir_status one_call(tir_ctx *ctx, void *user, int set) {
    bench_call *c = user;
    dprob *p = c->p;
    if (c->v == V_CUBLAS) {
        tir_rt_ptr dst = c->epi < 0 ? p->ref : p->tmp;
        tir_status st = tir_rt_blas_gemm(ctx, c->g->blas, p->kind, p->M, p->N, p->K,
                                         p->a[set], p->b[set], TIR_RT_B_KN, dst);
        if (st != TIR_OK || c->epi < 0) return st;
        tir_rt_epilogue e = rt_epi(c->epi);
        return tir_rt_bias_epilogue(ctx, c->g->dev, p->M, p->N, p->tmp, p->bias, p->ref, &e);
    }
    if (c->v == V_UNFUSED) {
        tir_status st = launch_prog(ctx, c->prog, c->mod, p->a[set], p->b[set], p->bias, p->tmp);
        if (st != TIR_OK) return st;
        tir_rt_epilogue e = rt_epi(c->epi);
        return tir_rt_bias_epilogue(ctx, c->g->dev, p->M, p->N, p->tmp, p->bias, p->out, &e);
    }
    return launch_prog(ctx, c->prog, c->mod, p->a[set], p->b[set], p->bias, p->out);
}

/* Verifies p->out (ours) against p->ref (the reference of set 0, already
 * computed).  Returns EXIT_OK / EXIT_VERIFY / EXIT_RUNTIME. */
static int verify(tir_ctx *ctx, gpu *g, dprob *p, const char *what, double *rel_err) {
    size_t nc = (size_t)(p->M * p->N);
    float *out = malloc(nc * 4), *ref = malloc(nc * 4);
    double *ref64 = malloc(nc * sizeof(double));
    int rc = EXIT_OK;
    bool f64 = p->kind != TIR_RT_GEMM_F32;
    if (!out || !ref || !ref64) {
        rc = EXIT_RUNTIME;
        fprintf(stderr, "tirc: out of host memory\n");
        goto done;
    }
    if (tir_rt_copy_d2h(ctx, g->dev, out, p->out, nc * 4) != TIR_OK ||
        (f64 ? tir_rt_copy_d2h(ctx, g->dev, ref64, p->ref64, nc * 8)
             : tir_rt_copy_d2h(ctx, g->dev, ref, p->ref, nc * 4)) != TIR_OK) {
        fprintf(stderr, "tirc: %s: %s\n", what, tir_ctx_error(ctx));
        rc = EXIT_RUNTIME;
        goto done;
    }
    if (!f64)
        for (size_t i = 0; i < nc; i++) ref64[i] = ref[i];
    tir_rt_error_stats es;
    tir_status st = tir_rt_check(ctx, what, TIR_F32, out, ref64, p->M, p->N,
                                 tir_rt_gemm_tolerance(p->kind, p->K), &es);
    *rel_err = es.rel_err;
    if (st == TIR_ERR_VERIFY_MISMATCH) {
        fprintf(stderr, "tirc: %s\n", tir_ctx_error(ctx));
        rc = EXIT_VERIFY;
    } else if (st != TIR_OK) {
        fprintf(stderr, "tirc: %s: %s\n", what, tir_ctx_error(ctx));
        rc = EXIT_RUNTIME;
    }
done:
    free(out);
    free(ref);
    free(ref64);
    return rc;
}

/* The compile phases of a module set compiled in total_ms, sched_ms of it
 * scheduling: schedule, lower (the rest), LLVM, PTX emission. */
static void phases(const tir_module_set *ms, double total_ms, double sched_ms, double *ph) {
    double llvm = 0, ptx = 0, codegen = 0;
    for (int i = 0; i < ms->nmodules; i++) {
        const tir_module *m = ms->modules[i];
        llvm += m->build_ms + m->opt_ms + m->ir_text_ms, ptx += m->ptx_ms;
        codegen += m->compile_ms;
    }
    ph[0] = sched_ms, ph[1] = total_ms - sched_ms - codegen, ph[2] = llvm, ph[3] = ptx;
}

/* Runs (and with bench, times) one step of one epilogue at one size:
 * appends rows.  Returns an exit code. */
int tirc_gpu_case(tir_ctx *ctx, const opts *o, gpu *g, dprob *p, int e, int step, bool bench,
                  const tir_rt_bench_result *cub, row *rows, int *nrows) {
    bool fused = tirc_is_fused(o);
    int nv = fused ? 2 : 1;
    int rc = EXIT_OK;
    for (int vi = 0; vi < nv; vi++) {
        variant v = vi == 0 ? V_OURS : V_UNFUSED;
        row r = {p->M, p->N, p->K, step, fused ? e : -1, v, NAN, NAN, cub ? cub->median_ms : NAN,
                 NAN,  NAN,  NAN,  "ok", -1, -1, {NAN, NAN, NAN, NAN, NAN}};
        r.cublas_gflops =
            cub ? 2.0 * (double)(p->M * p->N) * (double)p->K / cub->median_ms / 1e6 : NAN;
        const tir_prim_func *f = v == V_OURS ? tirc_define(ctx, o, e, p->M, p->N, p->K)
                                             : tir_def_matmul(ctx, p->M, p->N, p->K, TIR_F32);
        tir_module_set ms;
        double sched_ms = NAN;
        tir_status st = f ? tirc_compile(ctx, o, f, v == V_OURS && fused, step, &ms, &r.compile_ms,
                                         &sched_ms)
                          : TIR_ERR_INVALID_ARG;
        if (st == TIR_OK) phases(&ms, r.compile_ms, sched_ms, r.phase_ms);
        if (st != TIR_OK) {
            /* In a table, the first line of the message (no IR dump). */
            const char *msg = tir_ctx_error(ctx), *nl = strchr(msg, '\n');
            int len = bench && nl ? (int)(nl - msg) : (int)strlen(msg);
            fprintf(stderr, "tirc: %s step %d %s at %lldx%lldx%lld: %.*s\n", o->example, step,
                    tirc_kernel_name(o, v), (long long)p->M, (long long)p->N, (long long)p->K, len,
                    msg);
            r.status = "n/a";
            rows[(*nrows)++] = r;
            if (!bench || st != TIR_ERR_LOWER) rc = rc ? rc : EXIT_COMPILE;
            continue;
        }
        tir_rt_program_set *prog = NULL;
        bench_call c = {g, p, v, fused ? e : -1, NULL, &ms};
        double t_jit = mt_now_ms();
        RT(tir_rt_program_set_create(ctx, g->dev, &ms, &prog));
        r.phase_ms[4] = mt_now_ms() - t_jit;
        c.prog = prog;
        /* of the main kernel (split-K: the partial sums; atomic: after the
         * kernel that zeroes C) */
        tir_rt_kernel_info ki;
        int main_k = o->splitk > 1 && o->atomic ? 1 : 0;
        if (tir_rt_kernel_info_get(ctx,
                                   tir_rt_program_kernel(tir_rt_program_set_program(prog, main_k)),
                                   &ki) == TIR_OK)
            r.regs = ki.num_regs, r.lmem = ki.local_bytes;
        /* Poison the output, run once on set 0, verify. */
        RT(tir_rt_memset8(ctx, g->dev, p->out, 0xFF, (size_t)(p->M * p->N) * 4));
        RT(tir_rt_memset8(ctx, g->dev, p->tmp, 0xFF, (size_t)(p->M * p->N) * 4));
        RT(one_call(ctx, &c, 0));
        RT(tir_rt_sync(ctx, g->dev));
        char what[96];
        snprintf(what, sizeof what, "%s%s%s step %d (%s)", o->example, fused ? " " : "",
                 fused ? seed_epi_name((seed_epi)e) : "", step, tirc_kernel_name(o, v));
        int vr = verify(ctx, g, p, what, &r.rel_err);
        if (vr != EXIT_OK) {
            r.status = "FAIL";
            rc = rc == EXIT_OK ? vr : rc;
        }
        if (bench) {
            tir_rt_bench_opts bo = {o->warmup, o->runs, 1, p->nsets, p->nsets < 2};
            tir_rt_bench_result br;
            RT(tir_rt_bench(ctx, g->dev, one_call, &c, &bo, &br));
            tirc_note_host_bound(&br, what);
            r.ms = br.median_ms;
            r.gflops = 2.0 * (double)(p->M * p->N) * (double)p->K / br.median_ms / 1e6;
        }
        tir_rt_program_set_destroy(prog);
        rows[(*nrows)++] = r;
        continue;
    rt_fail:
        fprintf(stderr, "tirc: %s step %d: %s\n", o->example, step, tir_ctx_error(ctx));
        tir_rt_program_set_destroy(prog);
        r.status = "FAIL";
        rows[(*nrows)++] = r;
        return EXIT_RUNTIME;
    }
    return rc;
}

/* A warning where the host could not queue the samples ahead of the GPU
 * (tir_rt_bench_result.back_to_back): the time may include host gaps. */
void tirc_note_host_bound(const tir_rt_bench_result *br, const char *what) {
    if (!br->back_to_back)
        fprintf(stderr,
                "tirc: warning: %s: the host queued the samples more slowly than the GPU "
                "ran them, even behind a %.0f ms hold; its time may include host gaps\n",
                what, br->hold_ms);
}

/* The reference of set 0 into p->ref; with bench, cuBLAS's time. */
tir_status tirc_reference(tir_ctx *ctx, const opts *o, gpu *g, dprob *p, int e, bool bench,
                          tir_rt_bench_result *res) {
    bench_call c = {g, p, V_CUBLAS, tirc_is_fused(o) ? e : -1, NULL, NULL};
    tir_status st = one_call(ctx, &c, 0);
    if (st == TIR_OK) st = tir_rt_sync(ctx, g->dev);
    if (st != TIR_OK || !bench) return st;
    tir_rt_bench_opts bo = {o->warmup, o->runs, 1, p->nsets, p->nsets < 2};
    st = tir_rt_bench(ctx, g->dev, one_call, &c, &bo, res);
    char what[64];
    snprintf(what, sizeof what, "cuBLAS %lldx%lldx%lld", (long long)p->M, (long long)p->N,
             (long long)p->K);
    if (st == TIR_OK) tirc_note_host_bound(res, what);
    return st;
}
