/* fused_gemm.c: fusing GEMM epilogues into the reduction, exactly.
 *
 * Three programs, each D = epilogue(A·B, bias) with the matmul reduced
 * into a temporary C:
 *   bias:       D = C + bias[j]
 *   bias+ReLU:  D = max(C + bias[j], 0)
 *   clip:       D = min(max(C + bias[j], -4), 5)    (built with the TE API)
 * Each is scheduled with fuse_reduction_epilogue (then the reduction loop
 * is split, as a later tiling step would).  The IR is printed before and
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

static tir_ctx *ctx;

#define CHECK(call)                                                                       \
    do {                                                                                  \
        if ((call) != TIR_OK) {                                                           \
            fprintf(stderr, "%s failed:\n%s\n", #call, tir_ctx_error(ctx));               \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

enum epi { EPI_BIAS, EPI_RELU, EPI_CLIP };
static const char *const epi_name[] = {"bias", "bias+ReLU", "clip"};
#define LO (-4.0f)
#define HI 5.0f

static float apply(enum epi e, float v) {
    if (e == EPI_RELU) return v > 0 ? v : 0;
    if (e == EPI_CLIP) return v < LO ? LO : v > HI ? HI : v;
    return v;
}

/* ---------------------------------------------- the clip program (TE) */

typedef struct {
    tir_te_tensor *A, *B, *bias, *C;
} clip_prog;

static const tir_expr *mm(tir_ctx *c, const tir_var *const *ax, const tir_var *const *rx,
                          void *user) {
    clip_prog *p = user;
    const tir_expr *ia[2] = {&ax[0]->base, &rx[0]->base}, *ib[2] = {&rx[0]->base, &ax[1]->base};
    return tir_mul(c, tir_te_at(c, p->A, 2, ia), tir_te_at(c, p->B, 2, ib));
}

static const tir_expr *clip(tir_ctx *c, const tir_var *const *ax, const tir_var *const *rx,
                            void *user) {
    (void)rx;
    clip_prog *p = user;
    const tir_expr *ij[2] = {&ax[0]->base, &ax[1]->base}, *j[1] = {&ax[1]->base};
    const tir_expr *u = tir_add(c, tir_te_at(c, p->C, 2, ij), tir_te_at(c, p->bias, 1, j));
    return tir_min(c, tir_max(c, u, tir_f32(c, LO)), tir_f32(c, HI));
}

static const tir_prim_func *matmul_bias_clip(int64_t M, int64_t N, int64_t K) {
    static clip_prog p;
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    p.A = tir_te_placeholder(ctx, "A", TIR_F32, 2, sa);
    p.B = tir_te_placeholder(ctx, "B", TIR_F32, 2, sb);
    p.bias = tir_te_placeholder(ctx, "bias", TIR_F32, 1, &N);
    p.C = tir_te_reduce(ctx, "C", 2, sc, TIR_TE_SUM, 1, &K, mm, &p);
    tir_te_tensor *D = tir_te_compute(ctx, "D", 2, sc, clip, &p);
    tir_te_tensor *args[4] = {p.A, p.B, p.bias, D};
    return tir_te_create_prim_func(ctx, "matmul_bias_clip", 4, args);
}

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

static int fuse_one(enum epi e, int64_t M, int64_t N, int64_t K) {
    const tir_prim_func *f = e == EPI_BIAS   ? tir_def_matmul_bias(ctx, M, N, K, TIR_F32)
                             : e == EPI_RELU ? tir_def_matmul_bias_relu(ctx, M, N, K, TIR_F32)
                                             : matmul_bias_clip(M, N, K);
    if (!f) {
        fprintf(stderr, "%s\n", tir_ctx_error(ctx));
        exit(1);
    }
    printf("==== %s: before\n%s\n", epi_name[e], tir_print(ctx, f));
    tir_schedule *s;
    CHECK(tir_sched_create(ctx, f, &s));
    tir_block_rv c, d;
    CHECK(tir_sched_get_block(s, "C", &c));
    CHECK(tir_sched_get_block(s, "D", &d));
    CHECK(tir_sched_fuse_reduction_epilogue(s, c, d));
    const tir_loop_rv *loops;
    int n;
    CHECK(tir_sched_get_loops(s, c, &loops, &n));
    tir_loop_rv k2[2];
    CHECK(tir_sched_split(s, loops[2], 2, (const int64_t[]){TIR_SPLIT_INFER, 8}, k2));
    printf("==== %s: after fuse_reduction_epilogue and split\n%s\n", epi_name[e],
           tir_print(ctx, tir_sched_func(s)));
    printf("==== %s: trace as C\n%s\n", epi_name[e], tir_sched_trace_c(s, "fuse_epilogue"));

    size_t mn = (size_t)(M * N);
    float *a = malloc(sizeof(float) * (size_t)(M * K)), *b = malloc(sizeof(float) * (size_t)(K * N));
    float *bias = malloc(sizeof(float) * (size_t)N);
    float *d0 = malloc(sizeof(float) * mn), *d1 = malloc(sizeof(float) * mn);
    run(f, M, N, K, a, b, bias, d0);
    run(tir_sched_func(s), M, N, K, a, b, bias, d1);
    int bad = memcmp(d0, d1, sizeof(float) * mn) != 0;
    long per_step_wrong = 0;
    for (int64_t i = 0; i < M && !bad; i++)
        for (int64_t j = 0; j < N && !bad; j++) {
            /* TVM: init g(0) = g(bias), then D = g(D + a*b) per step */
            float acc = 0, step = apply(e, bias[j]);
            for (int64_t k = 0; k < K; k++) {
                acc += a[i * K + k] * b[k * N + j];
                step = apply(e, step + a[i * K + k] * b[k * N + j]);
            }
            float want = apply(e, acc + bias[j]);
            if (d1[i * N + j] != want) {
                fprintf(stderr, "%s: D[%lld, %lld] = %g, expected %g\n", epi_name[e],
                        (long long)i, (long long)j, d1[i * N + j], want);
                bad = 1;
            }
            per_step_wrong += step != want;
        }
    printf("==== %s: interpreter check at %lldx%lldx%lld: %s", epi_name[e], (long long)M,
           (long long)N, (long long)K, bad ? "MISMATCH" : "fused == unfused == plain C");
    if (e != EPI_BIAS && !bad)
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
    for (int e = EPI_BIAS; e <= EPI_CLIP; e++) bad |= fuse_one((enum epi)e, M, N, K);
    tir_ctx_destroy(ctx);
    printf("%s\n", bad ? "FAILED" : "all epilogues fused exactly");
    return bad;
}
