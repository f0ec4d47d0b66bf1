/* tc_sim_check.c: see tc_sim_check.h. */
#include <stdlib.h>

#include "tc_sim_check.h"

tir_status tc_sim_check(tir_ctx *ctx, tir_rt_gemm_kind kind, int64_t M, int64_t N, int64_t K,
                        const tir_prim_func *f, const tir_prim_func *k, uint64_t seed,
                        const char *what, tir_sim_report *rep) {
    const tir_prim_func *one[1] = {k};
    tir_kernel_set ks = {1, one, 0, NULL};
    return tc_sim_check_set(ctx, kind, M, N, K, f, &ks, seed, what, rep);
}

tir_status tc_sim_check_set(tir_ctx *ctx, tir_rt_gemm_kind kind, int64_t M, int64_t N, int64_t K,
                            const tir_prim_func *f, const tir_kernel_set *ks, uint64_t seed,
                            const char *what, tir_sim_report *rep) {
    tir_dtype in = tir_rt_gemm_kind_input(kind);
    size_t es = (size_t)tir_dtype_bytes(in), nc = (size_t)(M * N);
    void *a = malloc(es * (size_t)(M * K)), *b = malloc(es * (size_t)(K * N));
    float *out = malloc(4 * nc), *want = malloc(4 * nc);
    double *ref = malloc(sizeof(double) * nc);
    tir_sim_report *reps = calloc((size_t)ks->nkernels, sizeof *reps);
    tir_interp_opts io = {.uninit_params = 4};
    tir_sim_opts so = {.uninit_params = 4, .check_uninit = true};
    tir_arg args[3] = {{a, 0}, {b, 0}, {want, 0}};
    tir_status st = tir_rt_fill_random(ctx, in, a, (size_t)(M * K), seed);
    if (st == TIR_OK) st = tir_rt_fill_random(ctx, in, b, (size_t)(K * N), seed + 1);
    if (st == TIR_OK) st = tir_interp_run(ctx, f, 3, args, &io);
    if (st == TIR_OK) {
        for (size_t i = 0; i < nc; i++) ref[i] = want[i];
        tir_rt_poison(out, 4 * nc);
        args[2].data = out;
        st = reps ? tir_sim_run_kernels(ctx, ks, 3, args, &so, reps) : TIR_ERR_NOMEM;
        if (st == TIR_OK && rep) *rep = reps[0];
    }
    if (st == TIR_OK)
        st = tir_rt_check(ctx, what, TIR_F32, out, ref, M, N, tir_rt_gemm_tolerance(kind, K), NULL);
    free(a), free(b), free(out), free(want), free(ref), free(reps);
    return st;
}
