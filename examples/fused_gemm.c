/* fused_gemm.c: fusing GEMM epilogues into the reduction, exactly.
 *
 * Three programs, each D = epilogue(A·B, bias) with the matmul reduced
 * into a temporary C:
 *   bias:       D = C + bias[j]
 *   bias+ReLU:  D = max(C + bias[j], 0)
 *   clip:       D = min(max(C + bias[j], -4), 5)    (built with the TE API)
 * Each is scheduled with fuse_reduction_epilogue, then tiled as the seed's
 * Step 2 (seed_fused in seed.c, shared with tirc).  The IR is printed before and
 * after, with the trace as C.  The fused program is run in the reference
 * interpreter against the unfused one on the same inputs and against a
 * plain C loop that applies the epilogue once after the full sum; for
 * the non-linear epilogues the program also counts how many elements a
 * per-step epilogue (what TVM's FuseReductionEpilogue computes) would get
 * wrong.
 *
 * usage: fused_gemm [M N K]   (default 37 29 23: odd, non-divisible)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minitir/ir.h"
#include "minitir/schedule.h"
#include "seed.h"

static tir_ctx *ctx;

#define CHECK(call)                                                                       \
    do {                                                                                  \
        if ((call) != TIR_OK) {                                                           \
            fprintf(stderr, "%s failed:\n%s\n", #call, tir_ctx_error(ctx));               \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)


/* -------------------------------------------------------------- running */

/* Runs f on fixed inputs (small integers: every summation order gives the
 * same floats) into d. */
static void run(const tir_prim_func *f, int64_t M, int64_t N, int64_t K, float *a, float *b,
                float *bias, float *d) {
    for (int64_t x = 0; x < M * K; x++) a[x] = (float)((x * 7 + 3) % 9) - 4;
    for (int64_t x = 0; x < K * N; x++) b[x] = (float)((x * 5 + 1) % 7) - 3;
    for (int64_t x = 0; x < N; x++) bias[x] = (float)(x % 5) - 2;
    tir_arg args[4] = {{.data = a}, {.data = b}, {.data = bias}, {.data = d}};
    tir_interp_opts opts = {.uninit_params = 1u << 3};
    CHECK(tir_interp_run(ctx, f, 4, args, &opts));
}

static int fuse_one(seed_epi e, int64_t M, int64_t N, int64_t K) {
    const tir_prim_func *f = seed_def_fused(ctx, e, M, N, K);
    if (!f) {
        fprintf(stderr, "%s\n", tir_ctx_error(ctx));
        exit(1);
    }
    printf("==== %s: before\n%s\n", seed_epi_name(e), tir_print(ctx, f));
    tir_schedule *s;
    CHECK(tir_sched_create(ctx, f, &s));
    CHECK(seed_fused(s, 2, NULL, NULL));
    printf("==== %s: after fuse_reduction_epilogue and the seed Step 2 tiling\n%s\n", seed_epi_name(e),
           tir_print(ctx, tir_sched_func(s)));
    printf("==== %s: trace as C\n%s\n", seed_epi_name(e), tir_sched_trace_c(s, "fuse_epilogue"));

    size_t mn = (size_t)(M * N);
    float *a = malloc(sizeof(float) * (size_t)(M * K));
    float *b = malloc(sizeof(float) * (size_t)(K * N));
    float *bias = malloc(sizeof(float) * (size_t)N);
    float *d0 = malloc(sizeof(float) * mn), *d1 = malloc(sizeof(float) * mn);
    run(f, M, N, K, a, b, bias, d0);
    run(tir_sched_func(s), M, N, K, a, b, bias, d1);
    int bad = memcmp(d0, d1, sizeof(float) * mn) != 0;
    long per_step_wrong = 0;
    for (int64_t i = 0; i < M && !bad; i++)
        for (int64_t j = 0; j < N && !bad; j++) {
            /* TVM: init g(0) = g(bias), then D = g(D + a*b) per step */
            float acc = 0, step = seed_epi_apply(e, bias[j]);
            for (int64_t k = 0; k < K; k++) {
                acc += a[i * K + k] * b[k * N + j];
                step = seed_epi_apply(e, step + a[i * K + k] * b[k * N + j]);
            }
            float want = seed_epi_apply(e, acc + bias[j]);
            if (d1[i * N + j] != want) {
                fprintf(stderr, "%s: D[%lld, %lld] = %g, expected %g\n", seed_epi_name(e),
                        (long long)i, (long long)j, d1[i * N + j], want);
                bad = 1;
            }
            per_step_wrong += step != want;
        }
    printf("==== %s: interpreter check at %lldx%lldx%lld: %s", seed_epi_name(e), (long long)M,
           (long long)N, (long long)K, bad ? "MISMATCH" : "fused == unfused == plain C");
    if (e != SEED_EPI_BIAS && !bad)
        printf(" (an epilogue applied on every step would be wrong at %ld of %zu elements)",
               per_step_wrong, mn);
    printf("\n\n");
    free(a);
    free(b);
    free(bias);
    free(d0);
    free(d1);
    tir_sched_destroy(s);
    return bad;
}

int main(int argc, char **argv) {
    int64_t M = 37, N = 29, K = 23;
    if (argc == 4) {
        M = atoll(argv[1]);
        N = atoll(argv[2]);
        K = atoll(argv[3]);
    } else if (argc != 1) {
        fprintf(stderr, "usage: fused_gemm [M N K]\n");
        return 2;
    }
    if (M < 1 || N < 1 || K < 1 || M > 1024 || N > 1024 || K > 1024) {
        fprintf(stderr, "fused_gemm: sizes must be in [1, 1024]\n");
        return 2;
    }
    ctx = tir_ctx_create();
    int bad = 0;
    for (int e = SEED_EPI_BIAS; e <= SEED_EPI_CLIP; e++) bad |= fuse_one((seed_epi)e, M, N, K);
    tir_ctx_destroy(ctx);
    printf("%s\n", bad ? "FAILED" : "all epilogues fused exactly");
    return bad;
}
