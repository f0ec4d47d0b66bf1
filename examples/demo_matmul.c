/* demo_matmul: the smallest end-to-end use of minitir's IR layer.
 *
 * Defines C = A·B with the ready TE definition, prints it as TVMScript,
 * parses the text back and checks that nothing was lost, then runs it in
 * the reference interpreter and compares with plain C loops.
 * Usage: demo_matmul [M N K]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minitir/ir.h"

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

int main(int argc, char **argv) {
    long M = 64, N = 48, K = 33;
    if (argc == 4) {
        M = atol(argv[1]);
        N = atol(argv[2]);
        K = atol(argv[3]);
    }
    tir_ctx *ctx = tir_ctx_create();
    if (!ctx) return 1;
    int rc = 1;
    float *A = NULL, *B = NULL, *C = NULL;
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32);
    if (!f) {
        fprintf(stderr, "demo_matmul: %s\n", tir_ctx_error(ctx));
        goto out;
    }
    const char *text = tir_print(ctx, f);
    printf("%s\n", text);

    const tir_prim_func *g = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &g) != TIR_OK) {
        fprintf(stderr, "demo_matmul: reparse failed: %s\n", tir_ctx_error(ctx));
        goto out;
    }
    char why[512];
    if (!tir_struct_equal_explain(f, g, why, sizeof why)) {
        fprintf(stderr, "demo_matmul: text roundtrip changed the function: %s\n", why);
        goto out;
    }
    printf("text roundtrip: structurally equal\n");

    A = malloc(sizeof(float) * M * K);
    B = malloc(sizeof(float) * K * N);
    C = malloc(sizeof(float) * M * N);
    if (!A || !B || !C) goto out;
    unsigned seed = 42;
    for (long i = 0; i < M * K; i++) A[i] = frand(&seed);
    for (long i = 0; i < K * N; i++) B[i] = frand(&seed);
    tir_arg args[3] = {{.data = A}, {.data = B}, {.data = C}};
    tir_interp_opts opts = {.uninit_params = 1u << 2};
    if (tir_interp_run(ctx, f, 3, args, &opts) != TIR_OK) {
        fprintf(stderr, "demo_matmul: interpreter: %s\n", tir_ctx_error(ctx));
        goto out;
    }
    double max_err = 0;
    for (long i = 0; i < M; i++)
        for (long j = 0; j < N; j++) {
            float acc = 0.0f;
            for (long k = 0; k < K; k++) acc += A[i * K + k] * B[k * N + j];
            double e = fabs((double)acc - (double)C[i * N + j]);
            if (e > max_err) max_err = e;
        }
    printf("interpreter vs C loops (%ldx%ldx%ld): max abs error %.3g\n", M, N, K, max_err);
    rc = max_err == 0.0 ? 0 : 1;
    printf("%s\n", rc == 0 ? "OK" : "MISMATCH");
out:
    free(A);
    free(B);
    free(C);
    tir_ctx_destroy(ctx);
    return rc;
}
