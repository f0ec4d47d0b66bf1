/* matmul_steps.c: the seed blog's first two matmul schedules, in C.
 *
 *   Step 1: one GPU block per row (i -> blockIdx.x), one thread per column
 *           (j -> threadIdx.x), k serial in each thread.
 *   Step 2: 32x32x32 block tiles and 8x4 thread tiles (4 x 8 = 32 threads
 *           per block), with k innermost:
 *             i -> [i_block, 32] -> i_block, [i_thread 4, i_elem 8]
 *             j -> [j_block, 32] -> j_block, [j_thread 8, j_elem 4]
 *             k -> [k_outer, k_inner 32]
 *           reorder i_block, j_block, i_thread, j_thread, k_outer, i_elem,
 *           j_elem, k_inner; bind blockIdx.x/y and threadIdx.x/y.
 *
 * Prints the IR after every primitive and each schedule's trace as C, and
 * checks in the reference interpreter that both schedules compute the
 * same C as the unscheduled function and as a plain C loop.
 *
 * usage: matmul_steps [N]   (square N x N x N, default 128; any N works,
 * sizes that are not multiples of 32 get bounds predicates)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minitir/ir.h"
#include "minitir/schedule.h"

static tir_ctx *ctx;

/* Runs one schedule call; prints the IR after it, or the error and exits. */
#define STEP(s, call)                                                                     \
    do {                                                                                  \
        if ((call) != TIR_OK) {                                                           \
            fprintf(stderr, "%s failed:\n%s\n", #call, tir_ctx_error(ctx));               \
            exit(1);                                                                      \
        }                                                                                 \
        printf("---- after %s\n%s\n", #call, tir_print(ctx, tir_sched_func(s)));        \
    } while (0)

static tir_schedule *step1(const tir_prim_func *f) {
    tir_schedule *s;
    if (tir_sched_create(ctx, f, &s) != TIR_OK) return NULL;
    tir_block_rv c;
    const tir_loop_rv *loops;
    int n;
    STEP(s, tir_sched_get_block(s, "C", &c));
    STEP(s, tir_sched_get_loops(s, c, &loops, &n));
    tir_loop_rv i = loops[0], j = loops[1];
    STEP(s, tir_sched_bind(s, i, "blockIdx.x"));
    STEP(s, tir_sched_bind(s, j, "threadIdx.x"));
    return s;
}

static tir_schedule *step2(const tir_prim_func *f) {
    enum { BM = 32, BN = 32, BK = 32, TM = 8, TN = 4 };
    tir_schedule *s;
    if (tir_sched_create(ctx, f, &s) != TIR_OK) return NULL;
    tir_block_rv c;
    const tir_loop_rv *loops;
    int n;
    STEP(s, tir_sched_get_block(s, "C", &c));
    STEP(s, tir_sched_get_loops(s, c, &loops, &n));
    tir_loop_rv i = loops[0], j = loops[1], k = loops[2];
    tir_loop_rv ib[2], jb[2], kb[2], it[2], jt[2];
    STEP(s, tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, BM}, ib));
    STEP(s, tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, BN}, jb));
    STEP(s, tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, BK}, kb));
    /* threads_x = BM / TM = 4, threads_y = BN / TN = 8 */
    STEP(s, tir_sched_split(s, ib[1], 2, (const int64_t[]){BM / TM, TIR_SPLIT_INFER}, it));
    STEP(s, tir_sched_split(s, jb[1], 2, (const int64_t[]){BN / TN, TIR_SPLIT_INFER}, jt));
    tir_loop_rv i_block = ib[0], j_block = jb[0], k_outer = kb[0], k_inner = kb[1];
    tir_loop_rv i_thread = it[0], i_elem = it[1], j_thread = jt[0], j_elem = jt[1];
    STEP(s, tir_sched_reorder(s, 8, (const tir_loop_rv[]){i_block, j_block, i_thread, j_thread,
                                                          k_outer, i_elem, j_elem, k_inner}));
    STEP(s, tir_sched_bind(s, i_block, "blockIdx.x"));
    STEP(s, tir_sched_bind(s, j_block, "blockIdx.y"));
    STEP(s, tir_sched_bind(s, i_thread, "threadIdx.x"));
    STEP(s, tir_sched_bind(s, j_thread, "threadIdx.y"));
    return s;
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
    printf("==== Step 1: bind\n");
    tir_schedule *s1 = step1(f);
    printf("==== Step 1 trace as C\n%s\n", tir_sched_trace_c(s1, "step1"));
    printf("==== Step 2: tiling and reordering\n");
    tir_schedule *s2 = step2(f);
    printf("==== Step 2 trace as C\n%s\n", tir_sched_trace_c(s2, "step2"));

    size_t sz = (size_t)(n * n);
    float *c0 = malloc(sz * sizeof *c0), *c1 = malloc(sz * sizeof *c1),
          *c2 = malloc(sz * sizeof *c2);
    int bad = run(f, n, c0) | run(tir_sched_func(s1), n, c1) | run(tir_sched_func(s2), n, c2);
    bad |= memcmp(c0, c1, sz * sizeof *c0) != 0 || memcmp(c0, c2, sz * sizeof *c0) != 0;
    printf("==== interpreter check: %s\n", bad ? "MISMATCH" : "Step 1 and Step 2 match");
    free(c0);
    free(c1);
    free(c2);
    tir_sched_destroy(s1);
    tir_sched_destroy(s2);
    tir_ctx_destroy(ctx);
    return bad;
}
