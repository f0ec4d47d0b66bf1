/* matmul_steps.c: the seed blog's matmul schedules (Steps 1-6), in C.
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

/* The handles of the Step 2 tiling, which later steps build on. */
typedef struct tiles {
    tir_block_rv c;
    tir_loop_rv i_block, j_block, i_thread, j_thread, k_outer, i_elem, j_elem, k_inner;
} tiles;

enum { BM = 32, BN = 32, BK = 32, TM = 8, TN = 4, THREADS_X = BM / TM, THREADS_Y = BN / TN };

static tir_schedule *step2_into(const tir_prim_func *f, tiles *t) {
    tir_schedule *s;
    if (tir_sched_create(ctx, f, &s) != TIR_OK) return NULL;
    const tir_loop_rv *loops;
    int n;
    STEP(s, tir_sched_get_block(s, "C", &t->c));
    STEP(s, tir_sched_get_loops(s, t->c, &loops, &n));
    tir_loop_rv i = loops[0], j = loops[1], k = loops[2];
    tir_loop_rv ib[2], jb[2], kb[2], it[2], jt[2];
    STEP(s, tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, BM}, ib));
    STEP(s, tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, BN}, jb));
    STEP(s, tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, BK}, kb));
    /* threads_x = BM / TM = 4, threads_y = BN / TN = 8 */
    STEP(s, tir_sched_split(s, ib[1], 2, (const int64_t[]){THREADS_X, TIR_SPLIT_INFER}, it));
    STEP(s, tir_sched_split(s, jb[1], 2, (const int64_t[]){THREADS_Y, TIR_SPLIT_INFER}, jt));
    t->i_block = ib[0], t->j_block = jb[0], t->k_outer = kb[0], t->k_inner = kb[1];
    t->i_thread = it[0], t->i_elem = it[1], t->j_thread = jt[0], t->j_elem = jt[1];
    STEP(s, tir_sched_reorder(s, 8, (const tir_loop_rv[]){t->i_block, t->j_block, t->i_thread,
                                                          t->j_thread, t->k_outer, t->i_elem,
                                                          t->j_elem, t->k_inner}));
    STEP(s, tir_sched_bind(s, t->i_block, "blockIdx.x"));
    STEP(s, tir_sched_bind(s, t->j_block, "blockIdx.y"));
    STEP(s, tir_sched_bind(s, t->i_thread, "threadIdx.x"));
    STEP(s, tir_sched_bind(s, t->j_thread, "threadIdx.y"));
    return s;
}

static tir_schedule *step2(const tir_prim_func *f) {
    tiles t;
    return step2_into(f, &t);
}

/* Cooperative fetch of a shared cache block: its two loops (the 32 x 32
 * tile) fused and split so that the 4 x 8 threads of the compute share
 * the copy.  The seed splits the fused loop by [threads_y, None] and binds
 * the parts to threadIdx.y and threadIdx.x, which would make a threadIdx.x
 * extent of 128 against the compute's 4: schematic.  Here the parts bound
 * to threadIdx.y and threadIdx.x have exactly the compute's extents (8 and
 * 4), so each of the 32 threads copies 1024 / 32 = 32 elements; with
 * vec > 1 the innermost part is a vectorized run of vec elements. */
static void cooperative_fetch(tir_schedule *s, tir_block_rv cache, int vec) {
    const tir_loop_rv *loops;
    int n;
    STEP(s, tir_sched_get_loops(s, cache, &loops, &n));
    tir_loop_rv fused, parts[4];
    STEP(s, tir_sched_fuse(s, 2, loops + n - 2, &fused));
    if (vec > 1) {
        STEP(s, tir_sched_split(s, fused, 4,
                                (const int64_t[]){TIR_SPLIT_INFER, THREADS_Y, THREADS_X, vec},
                                parts));
        STEP(s, tir_sched_vectorize(s, parts[3]));
    } else {
        STEP(s, tir_sched_split(s, fused, 3,
                                (const int64_t[]){TIR_SPLIT_INFER, THREADS_Y, THREADS_X},
                                parts));
    }
    STEP(s, tir_sched_bind(s, parts[1], "threadIdx.y"));
    STEP(s, tir_sched_bind(s, parts[2], "threadIdx.x"));
}

/* Step 3: A and B tiles cached in shared memory at k_outer.  compute_at
 * relaxes the region over the thread loops (the buffers are shared), so
 * each cache block computes the thread block's whole 32 x 32 tile.  The
 * cache buffers keep the full N x N shape in the IR, as in TVM; lowering
 * compacts each to the 32 x 32 region one thread block touches. */
static tir_schedule *step3_into(const tir_prim_func *f, tiles *t, int vec) {
    tir_schedule *s = step2_into(f, t);
    tir_block_rv a_sh, b_sh;
    STEP(s, tir_sched_cache_read(s, t->c, 0, "shared", 0, NULL, &a_sh));
    STEP(s, tir_sched_cache_read(s, t->c, 1, "shared", 0, NULL, &b_sh));
    STEP(s, tir_sched_compute_at(s, a_sh, t->k_outer, false));
    STEP(s, tir_sched_compute_at(s, b_sh, t->k_outer, false));
    cooperative_fetch(s, a_sh, vec);
    cooperative_fetch(s, b_sh, vec);
    return s;
}

static tir_schedule *step3(const tir_prim_func *f) {
    tiles t;
    return step3_into(f, &t, 1);
}

/* Step 4: a register accumulator and a vectorized fetch.  The seed's
 * Korean post puts the copy-back at k_outer, which writes every partial
 * sum back to global memory once per k tile; here it goes under
 * j_thread, the innermost thread loop, so each thread writes its 8 x 4
 * results once, after the whole k reduction. */
static tir_schedule *step4_into(const tir_prim_func *f, tiles *t) {
    tir_schedule *s = step3_into(f, t, 4);
    tir_block_rv c_local;
    STEP(s, tir_sched_cache_write(s, t->c, 0, "local", 0, NULL, &c_local));
    STEP(s, tir_sched_reverse_compute_at(s, c_local, t->j_thread, false));
    return s;
}

static tir_schedule *step4(const tir_prim_func *f) {
    tiles t;
    return step4_into(f, &t);
}

/* Step 5: software pipelining of k_outer.  Its body holds three
 * statements: the A fetch, the B fetch and the compute (the seed's four,
 * [0, 0, 1, 2], counted the copy-back it placed under k_outer; ours sits
 * at thread level).  Fetches are stage 0, the compute stage 1: the next
 * tile loads while the current one is computed.  The interpreter runs the
 * annotated loop as written; lowering does the pipelining. */
static tir_schedule *step5_into(const tir_prim_func *f, tiles *t) {
    tir_schedule *s = step4_into(f, t);
    STEP(s, tir_sched_annotate_loop_ints(s, t->k_outer, "software_pipeline_stage", 3,
                                         (const int64_t[]){0, 0, 1}));
    STEP(s, tir_sched_annotate_loop_ints(s, t->k_outer, "software_pipeline_order", 3,
                                         (const int64_t[]){0, 1, 2}));
    return s;
}

static tir_schedule *step5(const tir_prim_func *f) {
    tiles t;
    return step5_into(f, &t);
}

/* Step 6: unroll k_inner (the English post's sch.unroll). */
static tir_schedule *step6(const tir_prim_func *f) {
    tiles t;
    tir_schedule *s = step5_into(f, &t);
    STEP(s, tir_sched_unroll(s, t.k_inner));
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
    static const char *const titles[] = {
        "Step 1: bind", "Step 2: tiling and reordering", "Step 3: shared memory",
        "Step 4: local accumulator and vectorized fetch", "Step 5: software pipeline annotation",
        "Step 6: unroll k_inner"};
    tir_schedule *(*const steps[])(const tir_prim_func *) = {step1, step2, step3,
                                                            step4, step5, step6};
    enum { NSTEPS = 6 };
    size_t sz = (size_t)(n * n);
    float *c0 = malloc(sz * sizeof *c0), *c1 = malloc(sz * sizeof *c1);
    int bad = run(f, n, c0);
    for (int k = 0; k < NSTEPS; k++) {
        printf("==== %s\n", titles[k]);
        tir_schedule *s = steps[k](f);
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
