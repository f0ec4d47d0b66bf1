/* measure.c: the tuner's GPU session: the task's inputs on the device
 * (of the task's kind: float32, or float16 / bfloat16 bit patterns),
 * cuBLAS's reference and time (GemmEx of the kind for a tensor-core task), and the measurement of one compiled
 * candidate (load with the driver's JIT, read registers and local memory,
 * time with tir_rt_bench over rotated input sets, verify against the
 * reference).  One session per device; the search calls it from one
 * thread.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "measure.h"
#include "ir/ir_internal.h"

static size_t elems_a(const tir_tune_task *t) {
    return (size_t)((t->op == TIR_TUNE_BATCH_MATMUL ? t->batch : 1) * t->M * t->K);
}
static size_t elems_b(const tir_tune_task *t) {
    return (size_t)((t->op == TIR_TUNE_BATCH_MATMUL ? t->batch : 1) * t->K * t->N);
}
/* Bytes of one input element. */
static size_t elem_bytes(const tir_tune_task *t) {
    return (size_t)tir_dtype_bytes(tir_rt_gemm_kind_input(t->kind));
}
static size_t elems_c(const tir_tune_task *t) {
    return (size_t)((t->op == TIR_TUNE_BATCH_MATMUL ? t->batch : 1) * t->M * t->N);
}

/* The reference on set `set` into dst: cuBLAS (a batch matmul as one
 * strided-batched call, the comparison issue 13 asks for), then the
 * epilogue kernel for bias + ReLU. */
static tir_status reference(tir_ctx *ctx, tune_gpu *g, int set, tir_rt_ptr dst) {
    const tir_tune_task *t = &g->task;
    tir_rt_ptr c = t->op == TIR_TUNE_MATMUL_BIAS_RELU ? g->tmp : dst;
    tir_status st = t->op == TIR_TUNE_BATCH_MATMUL
                        ? tir_rt_blas_gemm_batched(ctx, g->blas, TIR_RT_GEMM_F32, t->batch, t->M,
                                                   t->N, t->K, g->a[set], g->b[set], TIR_RT_B_KN,
                                                   c)
                        : tir_rt_blas_gemm(ctx, g->blas, t->kind, t->M, t->N, t->K,
                                           g->a[set], g->b[set], TIR_RT_B_KN, c);
    if (st != TIR_OK) return st;
    if (t->op != TIR_TUNE_MATMUL_BIAS_RELU) return TIR_OK;
    tir_rt_epilogue e = {TIR_RT_EPI_BIAS_RELU, 0, 0};
    return tir_rt_bias_epilogue(ctx, g->dev, t->M, t->N, g->tmp, g->bias, dst, &e);
}

static tir_status blas_call(tir_ctx *ctx, void *user, int set) {
    tune_gpu *g = user;
    return reference(ctx, g, set, g->ref);
}

static tir_status alloc_inputs(tir_ctx *ctx, tune_gpu *g, uint64_t seed) {
    const tir_tune_task *t = &g->task;
    size_t na = elems_a(t), nb = elems_b(t), nc = elems_c(t), big = na > nb ? na : nb;
    size_t es = elem_bytes(t);
    tir_dtype in = tir_rt_gemm_kind_input(t->kind);
    if ((size_t)t->N > big) big = (size_t)t->N;
    float *h = malloc(big * 4);
    if (!h) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tune: out of host memory");
    tir_status st = TIR_OK;
    for (int s = 0; s < g->nsets && st == TIR_OK; s++) {
        st = tir_rt_alloc(ctx, g->dev, na * es, &g->a[s]);
        if (st == TIR_OK) st = tir_rt_alloc(ctx, g->dev, nb * es, &g->b[s]);
        if (st == TIR_OK) st = tir_rt_fill_random(ctx, in, h, na, seed + 10 * (uint64_t)s);
        if (st == TIR_OK) st = tir_rt_copy_h2d(ctx, g->dev, g->a[s], h, na * es);
        if (st == TIR_OK) st = tir_rt_fill_random(ctx, in, h, nb, seed + 10 * (uint64_t)s + 1);
        if (st == TIR_OK) st = tir_rt_copy_h2d(ctx, g->dev, g->b[s], h, nb * es);
    }
    if (st == TIR_OK) st = tir_rt_alloc(ctx, g->dev, (size_t)t->N * 4, &g->bias);
    if (st == TIR_OK) st = tir_rt_fill_random(ctx, TIR_F32, h, (size_t)t->N, seed + 7);
    if (st == TIR_OK) st = tir_rt_copy_h2d(ctx, g->dev, g->bias, h, (size_t)t->N * 4);
    if (st == TIR_OK) st = tir_rt_alloc(ctx, g->dev, nc * 4, &g->out);
    if (st == TIR_OK) st = tir_rt_alloc(ctx, g->dev, nc * 4, &g->ref);
    if (st == TIR_OK) st = tir_rt_alloc(ctx, g->dev, nc * 4, &g->tmp);
    free(h);
    return st;
}

/* A tensor-core task's reference: float64 on the GPU from the same
 * inputs (cuBLAS rounds its own way, TF32 especially), as `tirc bench
 * --dtype` checks; the device copy lives for this call only. */
static tir_status keep_reference_f64(tir_ctx *ctx, tune_gpu *g) {
    const tir_tune_task *t = &g->task;
    size_t nc = elems_c(t);
    tir_rt_ptr d64 = 0;
    tir_status st = tir_rt_alloc(ctx, g->dev, nc * 8, &d64);
    if (st == TIR_OK)
        st = tir_rt_gemm_ref_device(ctx, g->dev, tir_rt_gemm_kind_input(t->kind), t->M, t->N, t->K,
                                    g->a[0], g->b[0], TIR_RT_B_KN, d64);
    if (st == TIR_OK) st = tir_rt_sync(ctx, g->dev);
    if (st == TIR_OK) st = tir_rt_copy_d2h(ctx, g->dev, g->ref64, d64, nc * 8);
    if (d64) tir_rt_free(ctx, g->dev, d64);
    return st;
}

/* The reference of set 0 on the host, in float64 for tir_rt_check. */
static tir_status keep_reference(tir_ctx *ctx, tune_gpu *g) {
    size_t nc = elems_c(&g->task);
    float *h = malloc(nc * 4);
    g->ref64 = malloc(nc * sizeof(double));
    tir_status st = h && g->ref64 ? TIR_OK : tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tune: out of host memory");
    if (st == TIR_OK && tir_tune_task_tc(&g->task)) {
        free(h);
        return keep_reference_f64(ctx, g);
    }
    if (st == TIR_OK) st = reference(ctx, g, 0, g->ref);
    if (st == TIR_OK) st = tir_rt_sync(ctx, g->dev);
    if (st == TIR_OK) st = tir_rt_copy_d2h(ctx, g->dev, h, g->ref, nc * 4);
    for (size_t i = 0; st == TIR_OK && i < nc; i++) g->ref64[i] = h[i];
    free(h);
    return st;
}

tir_status tune_gpu_open(tir_ctx *ctx, tir_rt_device *dev, const tir_tune_task *t, int runs,
                         uint64_t seed, tune_gpu *g, double *cublas_ms, bool *host_bound) {
    memset(g, 0, sizeof *g);
    g->dev = dev, g->task = *t, g->runs = runs < 20 ? 20 : runs;
    g->props = tir_rt_device_props(dev);
    double set_bytes = (double)elem_bytes(t) * (double)(elems_a(t) + elems_b(t));
    g->nsets = (int)ceil(2.0 * (double)g->props->l2_bytes / set_bytes);
    if (g->nsets < 1) g->nsets = 1;
    if (g->nsets > TUNE_MAX_SETS) g->nsets = 1; /* tiny problems: flush L2 instead */
    tir_status st = tir_rt_blas_create(ctx, dev, &g->blas);
    if (st == TIR_OK) st = alloc_inputs(ctx, g, seed);
    if (st == TIR_OK) st = keep_reference(ctx, g);
    tir_rt_bench_opts bo = {3, g->runs, 1, g->nsets, g->nsets < 2};
    tir_rt_bench_result br;
    if (st == TIR_OK) st = tir_rt_bench(ctx, dev, blas_call, g, &bo, &br);
    if (st == TIR_OK) *cublas_ms = br.median_ms, *host_bound = !br.back_to_back;
    if (st != TIR_OK) tune_gpu_close(ctx, g);
    return st;
}

void tune_gpu_close(tir_ctx *ctx, tune_gpu *g) {
    if (!g->dev) return;
    for (int s = 0; s < g->nsets; s++) {
        if (g->a[s]) tir_rt_free(ctx, g->dev, g->a[s]);
        if (g->b[s]) tir_rt_free(ctx, g->dev, g->b[s]);
    }
    tir_rt_ptr rest[4] = {g->bias, g->out, g->ref, g->tmp};
    for (int i = 0; i < 4; i++)
        if (rest[i]) tir_rt_free(ctx, g->dev, rest[i]);
    tir_rt_blas_destroy(g->blas);
    free(g->ref64);
    memset(g, 0, sizeof *g);
}

typedef struct call {
    tune_gpu *g;
    tir_rt_program_set *prog;
    const tir_module_set *ms;
} call;

/* Our kernels on set `set`: arguments by parameter name. */
static tir_status launch(tir_ctx *ctx, void *user, int set) {
    call *c = user;
    const tir_module *m = c->ms->modules[0];
    tir_rt_arg args[8];
    if (c->ms->nparams > 8) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "tune: too many parameters");
    for (int i = 0; i < c->ms->nparams; i++) {
        const char *n = m->params[i].name;
        args[i] = tir_rt_arg_ptr(!strcmp(n, "A")      ? c->g->a[set]
                                 : !strcmp(n, "B")    ? c->g->b[set]
                                 : !strcmp(n, "bias") ? c->g->bias
                                                      : c->g->out);
    }
    return tir_rt_program_set_launch(ctx, c->prog, c->ms->nparams, args);
}

static tir_status verify(tir_ctx *ctx, call *c, tune_meas *out) {
    tune_gpu *g = c->g;
    const tir_tune_task *t = &g->task;
    size_t nc = elems_c(t);
    float *h = malloc(nc * 4);
    if (!h) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tune: out of host memory");
    tir_status st = tir_rt_memset8(ctx, g->dev, g->out, 0xFF, nc * 4);
    if (st == TIR_OK) st = launch(ctx, c, 0);
    if (st == TIR_OK) st = tir_rt_sync(ctx, g->dev);
    if (st == TIR_OK) st = tir_rt_copy_d2h(ctx, g->dev, h, g->out, nc * 4);
    tir_rt_error_stats es;
    int64_t rows = (int64_t)(nc / (size_t)t->N);
    if (st == TIR_OK)
        st = tir_rt_check(ctx, "tuned candidate", TIR_F32, h, g->ref64, rows, t->N,
                          tir_rt_gemm_tolerance(t->kind, t->K), &es);
    out->rel_err = st == TIR_OK ? es.rel_err : NAN;
    free(h);
    return st;
}

tir_status tune_gpu_measure(tir_ctx *ctx, tune_gpu *g, const tir_module_set *ms, bool verify_it,
                            tune_meas *out) {
    memset(out, 0, sizeof *out);
    out->median_ms = out->rel_err = NAN;
    call c = {g, NULL, ms};
    double t0 = ir_now_ms();
    tir_status st = tir_rt_program_set_create(ctx, g->dev, ms, &c.prog);
    out->jit_ms = ir_now_ms() - t0;
    if (st != TIR_OK) return st;
    tir_rt_kernel_info ki;
    for (int k = 0; st == TIR_OK && k < tir_rt_program_set_count(c.prog); k++) {
        st = tir_rt_kernel_info_get(ctx, tir_rt_program_kernel(tir_rt_program_set_program(c.prog, k)),
                                    &ki);
        if (st == TIR_OK && k == 0) out->regs = ki.num_regs;
        if (st == TIR_OK && ki.local_bytes > 0 && k == 0) out->lmem = ki.local_bytes;
    }
    if (st == TIR_OK && out->lmem > 0)
        st = tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED,
                          "tune: the kernel uses %d bytes of local memory per thread (spills "
                          "or a local array), %d registers",
                          out->lmem, out->regs);
    tir_rt_bench_opts bo = {2, g->runs, 1, g->nsets, g->nsets < 2};
    tir_rt_bench_result br;
    if (st == TIR_OK) st = tir_rt_bench(ctx, g->dev, launch, &c, &bo, &br);
    if (st == TIR_OK) out->median_ms = br.median_ms;
    if (st == TIR_OK && verify_it) st = verify(ctx, &c, out);
    tir_rt_program_set_destroy(c.prog);
    return st;
}
