/* matmul_steps.c: the seed blog's matmul schedules (Steps 1-6), in C.
 *
 * The recipes live in seed.c (shared with tirc and the tests):
 *   Step 1: one GPU block per row (i -> blockIdx.x), one thread per column
 *           (j -> threadIdx.x), k serial in each thread.
 *   Step 2: 32x32x32 block tiles and 8x4 thread tiles (4 x 8 = 32 threads
 *           per block), with k innermost:
 *             i -> [i_block, 32] -> i_block, [i_thread 4, i_elem 8]
 *             j -> [j_block, 32] -> j_block, [j_thread 8, j_elem 4]
 *             k -> [k_outer, k_inner 32]
 *           reorder i_block, j_block, i_thread, j_thread, k_outer, i_elem,
 *           j_elem, k_inner; bind blockIdx.x/y and threadIdx.x/y.
 *   Step 3: A and B cached in shared memory at k_outer, cooperative fetch.
 *   Step 4: C accumulated in a local cache written back per thread; the
 *           fetch vectorized by 4.
 *   Step 5: software_pipeline_stage/order annotations on k_outer.
 *   Step 6: k_inner unrolled.
 *
 * Prints the IR after every primitive and each schedule's trace as C, and
 * checks in the reference interpreter (sequential semantics, which is
 * what a scheduled but unlowered function means) that every schedule
 * computes the same C as the unscheduled function and as a plain C loop.
 *
 * usage: matmul_steps [N]   (square N x N x N, default 128; any N works,
 * sizes that are not multiples of 32 get bounds predicates)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minitir/ir.h"
#include "minitir/schedule.h"
#include "seed.h"

static tir_ctx *ctx;

/* Prints the IR after every primitive of a recipe. */
static void show(void *user, tir_schedule *s, const char *call) {
    (void)user;
    printf("---- after %s\n%s\n", call, tir_print(ctx, tir_sched_func(s)));
}

/* Runs f on fixed pseudo-random A and B (small integers, so any summation
 * order gives the same floats) and writes C. */
static int run(const tir_prim_func *f, int64_t n, float *c) {
    size_t sz = (size_t)(n * n);
    float *a = malloc(sz * sizeof *a), *b = malloc(sz * sizeof *b);
    for (size_t x = 0; x < sz; x++) {
        a[x] = (float)((x * 7 + 3) % 9) - 4;
        b[x] = (float)((x * 5 + 1) % 7) - 3;
    }
    tir_arg args[3] = {{.data = a}, {.data = b}, {.data = c}};
    tir_interp_opts opts = {.uninit_params = 1u << 2};
    tir_status st = tir_interp_run(ctx, f, 3, args, &opts);
    if (st != TIR_OK) fprintf(stderr, "interpreter: %s\n", tir_ctx_error(ctx));
    /* The plain C reference. */
    int bad = st != TIR_OK;
    for (int64_t x = 0; x < n && !bad; x++)
        for (int64_t y = 0; y < n && !bad; y++) {
            float acc = 0;
            for (int64_t z = 0; z < n; z++) acc += a[x * n + z] * b[z * n + y];
            if (acc != c[x * n + y]) {
                fprintf(stderr, "C[%lld, %lld] = %g, expected %g\n", (long long)x, (long long)y,
                        c[x * n + y], acc);
                bad = 1;
            }
        }
    free(a);
    free(b);
    return bad;
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 128;
    if (n < 1 || n > 4096) {
        fprintf(stderr, "usage: matmul_steps [N], 1 <= N <= 4096\n");
        return 2;
    }
    ctx = tir_ctx_create();
    const tir_prim_func *f = tir_def_matmul(ctx, n, n, n, TIR_F32);
    if (!f) {
        fprintf(stderr, "%s\n", tir_ctx_error(ctx));
        return 1;
    }
    printf("==== unscheduled matmul %lld\n%s\n", (long long)n, tir_print(ctx, f));
    enum { NSTEPS = SEED_NSTEPS };
    size_t sz = (size_t)(n * n);
    float *c0 = malloc(sz * sizeof *c0), *c1 = malloc(sz * sizeof *c1);
    int bad = run(f, n, c0);
    for (int k = 0; k < NSTEPS; k++) {
        printf("==== %s\n", seed_step_title(k + 1));
        tir_schedule *s;
        if (tir_sched_create(ctx, f, &s) != TIR_OK || seed_schedule(s, k + 1, show, NULL) != TIR_OK) {
            fprintf(stderr, "Step %d failed:\n%s\n", k + 1, tir_ctx_error(ctx));
            return 1;
        }
        char fn[16];
        snprintf(fn, sizeof fn, "step%d", k + 1);
        printf("==== Step %d trace as C\n%s\n", k + 1, tir_sched_trace_c(s, fn));
        int b = run(tir_sched_func(s), n, c1) || memcmp(c0, c1, sz * sizeof *c0) != 0;
        printf("==== interpreter check, Step %d: %s\n", k + 1, b ? "MISMATCH" : "matches");
        bad |= b;
        tir_sched_destroy(s);
    }
    printf("==== interpreter check: %s\n", bad ? "MISMATCH" : "every step matches");
    free(c0);
    free(c1);
    tir_ctx_destroy(ctx);
    return bad;
}
