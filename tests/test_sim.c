/* test_sim.c: the SIMT simulator (tir_sim_run) on hand-built lowered
 * kernels: results against plain C loops and the reference interpreter,
 * and each class of error it must detect (races, barriers, out-of-bounds
 * in every memory space, uninitialised and pending cp_async reads).
 *
 * Kernels come from tests/cg_kernels.c (the codegen tests' lowered
 * kernels) or are written as TVMScript text; broken variants are derived
 * by deleting one intrinsic call with a mutator.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cg_kernels.h"
#include "minitir/lower.h"
#include "minitir/sim.h"
#include "now_ms.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* ------------------------------------------------------------- helpers */

static const tir_prim_func *parse(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    tir_status st = tir_parse_func(ctx, text, strlen(text), &f);
    if (st != TIR_OK) fprintf(stderr, "parse error: %s\n", tir_ctx_error(ctx));
    assert_int_equal(st, TIR_OK);
    return f;
}

typedef struct drop_state {
    tir_intrin op;
    int which, seen;
} drop_state;

static const tir_node *drop_eval(tir_mutator *m, const tir_node *n) {
    drop_state *d = m->user;
    const tir_evaluate *ev = (const tir_evaluate *)n;
    const tir_call *c = tir_as_tir_call(ev->value);
    if (c && c->op == d->op && d->seen++ == d->which)
        return (const tir_node *)tir_evaluate_new(m->ctx, tir_i32(m->ctx, 0));
    return n;
}

/* f with its which-th (0-based, program order) call of op removed. */
static const tir_prim_func *drop_intrin(tir_ctx *ctx, const tir_prim_func *f, tir_intrin op,
                                        int which) {
    drop_state d = {op, which, 0};
    tir_mutator m;
    memset(&m, 0, sizeof m);
    m.ctx = ctx;
    m.user = &d;
    m.on[TIR_KIND_EVALUATE] = drop_eval;
    const tir_stmt *body = tir_mutate_stmt(&m, f->body);
    assert_true(d.seen > which);
    return tir_prim_func_new(ctx, f->name, f->nparams, f->params, f->buffer_map, body, f->nattrs,
                             f->attrs);
}

static void fill(float *a, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
}

static void expect_error(tir_ctx *ctx, tir_status got, tir_status want, const char *const *subs) {
    if (got != want)
        fprintf(stderr, "expected %s, got %s: %s\n", tir_status_name(want), tir_status_name(got),
                tir_ctx_error(ctx));
    assert_int_equal(got, want);
    const char *msg = tir_ctx_error(ctx);
    if (!msg) msg = ""; /* never NULL; tells GCC 12 with UBSan so */
    if (getenv("MINITIR_TEST_VERBOSE")) printf("# --- %s:\n%s\n", tir_status_name(got), msg);
    for (int i = 0; subs && subs[i]; i++) {
        if (!strstr(msg, subs[i])) fprintf(stderr, "missing \"%s\" in:\n%s\n", subs[i], msg);
        assert_non_null(strstr(msg, subs[i]));
    }
}

/* --------------------------------------------------------- correctness */

static void test_vector_add(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    enum { N = 1024 };
    float a[N], b[N], c[N];
    fill(a, N, 1);
    fill(b, N, 2);
    memset(c, 0, sizeof c);
    tir_arg args[3] = {{a, 0}, {b, 0}, {c, 0}};
    tir_sim_report rep;
    tir_sim_opts opts = {.uninit_params = 4, .check_uninit = true};
    assert_int_equal(tir_sim_run(ctx, ck_vector_add(ctx, N), 3, args, &opts, &rep), TIR_OK);
    for (int i = 0; i < N; i++) assert_true(c[i] == a[i] + b[i]);
    assert_int_equal(rep.grid[0], 4);
    assert_int_equal(rep.grid[1], 1);
    assert_int_equal(rep.block[0], 256);
    assert_int_equal(rep.blocks_run, 4);
    assert_int_equal(rep.threads_run, N);
    assert_false(rep.coroutines); /* no syncthreads: threads run plainly */
    tir_ctx_destroy(ctx);
}

/* Odd size: the grid is ceil(n / 256) from the scalar argument and the
 * guard keeps the last block's extra threads out of bounds. */
static void test_vector_add_odd(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    enum { N = 1000 };
    float a[N], b[N], c[N];
    fill(a, N, 3);
    fill(b, N, 4);
    memset(c, 0, sizeof c);
    tir_arg args[4] = {{a, 0}, {b, 0}, {c, 0}, {NULL, N}};
    const tir_prim_func *f = ck_vector_add_sym(ctx);
    int64_t grid[3], block[3];
    assert_int_equal(tir_sim_launch_dims(ctx, f, 4, args, grid, block), TIR_OK);
    assert_int_equal(grid[0], 4);
    assert_int_equal(block[0], 256);
    assert_int_equal(grid[1] * grid[2] * block[1] * block[2], 1);
    tir_sim_opts opts = {.uninit_params = 4};
    assert_int_equal(tir_sim_run(ctx, f, 4, args, &opts, NULL), TIR_OK);
    for (int i = 0; i < N; i++) assert_true(c[i] == a[i] + b[i]);

    /* Without the guard the last block runs off the end. */
    const tir_for *bxl = tir_as_tir_for(f->body);
    const tir_for *txl = tir_as_tir_for(bxl->body);
    const tir_if *guard = tir_as_tir_if(txl->body);
    assert_non_null(guard);
    const tir_stmt *body = tir_for_new(
        ctx, txl->var, txl->min, txl->extent, txl->kind, txl->thread_tag, 0, NULL, guard->then_s);
    body = tir_for_new(ctx, bxl->var, bxl->min, bxl->extent, bxl->kind, bxl->thread_tag, 0, NULL,
                       body);
    const tir_prim_func *g =
        tir_prim_func_new(ctx, "unguarded", f->nparams, f->params, f->buffer_map, body, 0, NULL);
    const char *subs[] = {"blockIdx (3, 0, 0), threadIdx (232, 0, 0)", "A[1000]", NULL};
    expect_error(ctx, tir_sim_run(ctx, g, 4, args, NULL, NULL), TIR_ERR_OUT_OF_BOUNDS, subs);
    tir_ctx_destroy(ctx);
}

/* The reference: C = A B summed over k in order, as the interpreter and
 * both kernels do (no fma contraction in the simulator). */
static void matmul_ref(const float *a, const float *b, float *c, int M, int N, int K) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s = s + a[i * K + k] * b[k * N + j];
            c[i * N + j] = s;
        }
}

static void test_matmul_naive(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    enum { M = 32, N = 48, K = 24 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N),
          *c = calloc(M * N, sizeof(float)), *r = malloc(sizeof(float) * M * N);
    fill(a, M * K, 5);
    fill(b, K * N, 6);
    matmul_ref(a, b, r, M, N, K);
    tir_arg args[3] = {{a, 0}, {b, 0}, {c, 0}};
    tir_sim_report rep;
    tir_sim_opts opts = {.uninit_params = 4, .check_uninit = true, .check_global_races = true};
    assert_int_equal(tir_sim_run(ctx, ck_matmul_naive(ctx, M, N, K), 3, args, &opts, &rep),
                     TIR_OK);
    assert_memory_equal(c, r, sizeof(float) * M * N);
    assert_int_equal(rep.grid[0], N / 16);
    assert_int_equal(rep.grid[1], M / 16);
    assert_int_equal(rep.block[0] * rep.block[1], 256);
    free(a);
    free(b);
    free(c);
    free(r);
    tir_ctx_destroy(ctx);
}

/* Odd sizes: 20x20 output from 8x8 blocks, predicates on row and col. */
static const char *matmul_guarded_text =
    "@T.prim_func\n"
    "def mm_guard(A: T.Buffer((140,), \"float32\"), B: T.Buffer((140,), \"float32\"), "
    "C: T.Buffer((400,), \"float32\")):\n"
    "    for by in T.thread_binding(0, 3, thread=\"blockIdx.y\"):\n"
    "        for bx in T.thread_binding(0, 3, thread=\"blockIdx.x\"):\n"
    "            for ty in T.thread_binding(0, 8, thread=\"threadIdx.y\"):\n"
    "                for tx in T.thread_binding(0, 8, thread=\"threadIdx.x\"):\n"
    "                    acc = T.allocate((1,), \"float32\", \"local\")\n"
    "                    if by * 8 + ty < 20 and bx * 8 + tx < 20:\n"
    "                        acc[0] = T.float32(0)\n"
    "                        for k in T.serial(7):\n"
    "                            acc[0] = acc[0] + A[(by * 8 + ty) * 7 + k] * B[k * 20 + bx * 8 + "
    "tx]\n"
    "                        C[(by * 8 + ty) * 20 + bx * 8 + tx] = acc[0]\n";

static void test_matmul_odd(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    float a[140], b[140], c[400], r[400];
    fill(a, 140, 7);
    fill(b, 140, 8);
    matmul_ref(a, b, r, 20, 20, 7);
    tir_arg args[3] = {{a, 0}, {b, 0}, {c, 0}};
    tir_sim_opts opts = {.uninit_params = 4, .check_uninit = true};
    tir_sim_report rep;
    assert_int_equal(tir_sim_run(ctx, parse(ctx, matmul_guarded_text), 3, args, &opts, &rep),
                     TIR_OK);
    assert_memory_equal(c, r, sizeof r);
    assert_int_equal(rep.threads_run, 9 * 64);
    tir_ctx_destroy(ctx);
}

/* The tiled kernel (shared tiles, cooperative fetch, two barriers per k
 * step) against the interpreter running the unscheduled matmul. */
static void run_tiled(tir_ctx *ctx, int M, int N, int K, double *secs, tir_sim_report *rep) {
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N),
          *c = calloc((size_t)M * N, sizeof(float)), *r = calloc((size_t)M * N, sizeof(float));
    fill(a, M * K, 9);
    fill(b, K * N, 10);
    tir_arg args[3] = {{a, 0}, {b, 0}, {c, 0}};
    tir_arg rargs[3] = {{a, 0}, {b, 0}, {r, 0}};
    const tir_prim_func *ref = tir_def_matmul(ctx, M, N, K, TIR_F32);
    assert_int_equal(tir_interp_run(ctx, ref, 3, rargs, NULL), TIR_OK);
    const tir_prim_func *f = ck_matmul_tiled(ctx, M, N, K);
    tir_sim_opts opts = {.uninit_params = 4, .check_uninit = true, .check_global_races = true};
    double t0 = mt_now_ms();
    tir_status st = tir_sim_run(ctx, f, 3, args, &opts, rep);
    *secs = (mt_now_ms() - t0) / 1e3;
    if (st != TIR_OK) fprintf(stderr, "%s\n", tir_ctx_error(ctx));
    assert_int_equal(st, TIR_OK);
    assert_memory_equal(c, r, sizeof(float) * M * N);
    free(a);
    free(b);
    free(c);
    free(r);
}

static void test_matmul_tiled(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    double secs;
    tir_sim_report rep;
    run_tiled(ctx, 128, 64, 48, &secs, &rep);
    assert_int_equal(rep.grid[0], 1);
    assert_int_equal(rep.grid[1], 2);
    assert_int_equal(rep.block[0], 16);
    assert_int_equal(rep.block[1], 16);
    assert_true(rep.coroutines);
    assert_int_equal(rep.barriers, 2 * 3 * 2); /* blocks * k steps * 2 */
    assert_int_equal(rep.shared_bytes, 2 * 64 * 16 * 4);
    tir_ctx_destroy(ctx);
}

/* Performance: the 64x64x64 tiled matmul (one block of 256 threads, 8
 * barrier intervals) in well under a second. */
static void test_matmul_tiled_speed(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    double secs;
    tir_sim_report rep;
    run_tiled(ctx, 64, 64, 64, &secs, &rep);
    printf("# 64x64x64 tiled matmul simulated in %.3f s\n", secs);
    assert_true(secs < (UNDER_ASAN ? 10.0 : 0.5));
    tir_ctx_destroy(ctx);
}

/* ----------------------------------------------------------------- races */

/* Issue requirement: the tiled kernel with a barrier removed is a race. */
static void test_tiled_missing_barrier(void **state) {
    (void)state;
    enum { M = 64, N = 64, K = 32 };
    static float a[M * K], b[K * N], c[M * N];
    fill(a, M * K, 11);
    fill(b, K * N, 12);
    tir_arg args[3] = {{a, 0}, {b, 0}, {c, 0}};
    for (int which = 0; which < 2; which++) {
        tir_ctx *ctx = tir_ctx_create();
        const tir_prim_func *f =
            drop_intrin(ctx, ck_matmul_tiled(ctx, M, N, K), TIR_INTRIN_SYNCTHREADS, which);
        tir_sim_report rep;
        const char *subs[] = {"shared-memory race on shared ", "same barrier interval",
                              "blockIdx (0, 0, 0), threadIdx (", "^^^", NULL};
        expect_error(ctx, tir_sim_run(ctx, f, 3, args, NULL, &rep), TIR_ERR_SIM_RACE, subs);
        assert_true(rep.has_thread);
        /* Without the first barrier a thread reads the tile others have
         * not fetched yet: with check_uninit that is already an error. */
        tir_sim_opts opts = {.check_uninit = true};
        tir_status st = tir_sim_run(ctx, f, 3, args, &opts, NULL);
        assert_int_equal(st, which == 0 ? TIR_ERR_UNINIT_READ : TIR_ERR_SIM_RACE);
        tir_ctx_destroy(ctx);
    }
}

static const char *shift_text =
    "@T.prim_func\n"
    "def shift(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((64,), \"float32\", scope=\"shared\")\n"
    "        S[tx] = A[tx]\n"
    "        T.syncthreads()\n"
    "        B[tx] = S[(tx + 1) % 64]\n";

static void test_shift_race(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    float a[64], b[64];
    fill(a, 64, 13);
    tir_arg args[2] = {{a, 0}, {b, 0}};
    const tir_prim_func *f = parse(ctx, shift_text);
    assert_int_equal(tir_sim_run(ctx, f, 2, args, NULL, NULL), TIR_OK);
    for (int i = 0; i < 64; i++) assert_true(b[i] == a[(i + 1) % 64]);
    /* Without the barrier: thread 1's write of S[1] follows thread 0's
     * read of it in the same interval (write after read). */
    const char *subs[] = {"threadIdx (1, 0, 0): shared-memory race on shared S[1]",
                          "this thread writes it, and threadIdx (0, 0, 0) read it",
                          "this thread: S[tx] = A[tx]", "other thread: B[tx] = S[(tx + 1) % 64]",
                          NULL};
    expect_error(ctx, tir_sim_run(ctx, drop_intrin(ctx, f, TIR_INTRIN_SYNCTHREADS, 0), 2, args,
                                  NULL, NULL),
                 TIR_ERR_SIM_RACE, subs);
    tir_sim_opts opts = {.no_race_check = true};
    assert_int_equal(tir_sim_run(ctx, drop_intrin(ctx, f, TIR_INTRIN_SYNCTHREADS, 0), 2, args,
                                 &opts, NULL),
                     TIR_OK);
    tir_ctx_destroy(ctx);
}

/* Read after write and write after write by different threads. */
static const char *raw_text =
    "@T.prim_func\n"
    "def raw(A: T.Buffer((32,), \"float32\"), B: T.Buffer((32,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((32,), \"float32\", scope=\"shared\")\n"
    "        S[tx] = A[tx]\n"
    "        B[tx] = S[tx // 2 * 2]\n"
    "        T.syncthreads()\n";
static const char *waw_text =
    "@T.prim_func\n"
    "def waw(A: T.Buffer((32,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((32,), \"float32\", scope=\"shared\")\n"
    "        S[tx // 4] = A[tx]\n"
    "        T.syncthreads()\n";

static void test_raw_waw(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    float a[32], b[32];
    fill(a, 32, 14);
    tir_arg args[2] = {{a, 0}, {b, 0}};
    const char *s1[] = {"threadIdx (1, 0, 0): shared-memory race on shared S[0]",
                        "this thread reads it, and threadIdx (0, 0, 0) wrote it", NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, raw_text), 2, args, NULL, NULL),
                 TIR_ERR_SIM_RACE, s1);
    const char *s2[] = {"threadIdx (1, 0, 0): shared-memory race on shared S[0]",
                        "this thread writes it, and threadIdx (0, 0, 0) wrote it", NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, waw_text), 1, args, NULL, NULL),
                 TIR_ERR_SIM_RACE, s2);
    tir_ctx_destroy(ctx);
}

/* Global memory (check_global_races): a reduction over threads into one
 * element, and two blocks writing the same outputs. */
static const char *global_sum_text =
    "@T.prim_func\n"
    "def gsum(A: T.Buffer((32,), \"float32\"), C: T.Buffer((1,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        C[0] = C[0] + A[tx]\n";
static const char *global_blocks_text =
    "@T.prim_func\n"
    "def gblocks(A: T.Buffer((64,), \"float32\"), C: T.Buffer((32,), \"float32\")):\n"
    "    for bx in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
    "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            C[tx] = A[bx * 32 + tx]\n";
/* Ordered by a barrier inside one block: fine. */
static const char *global_sync_text =
    "@T.prim_func\n"
    "def gsync(A: T.Buffer((32,), \"float32\"), C: T.Buffer((32,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        C[tx] = A[tx]\n"
    "        T.syncthreads()\n"
    "        C[31 - tx] = C[31 - tx] * T.float32(2)\n";

static void test_global_races(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    float a[64], c[32];
    fill(a, 64, 19);
    memset(c, 0, sizeof c);
    tir_arg args[2] = {{a, 0}, {c, 0}};
    tir_sim_opts opts = {.check_global_races = true};
    /* Off by default: the lost updates go unnoticed (threads run in turn). */
    assert_int_equal(tir_sim_run(ctx, parse(ctx, global_sum_text), 2, args, NULL, NULL), TIR_OK);
    const char *s1[] = {"blockIdx (0, 0, 0), threadIdx (1, 0, 0): global-memory race on global "
                        "C[0]: this thread reads it, and blockIdx (0, 0, 0), threadIdx (0, 0, 0) "
                        "wrote it in the same barrier interval",
                        NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, global_sum_text), 2, args, &opts, NULL),
                 TIR_ERR_SIM_RACE, s1);
    const char *s2[] = {"blockIdx (1, 0, 0), threadIdx (0, 0, 0): global-memory race on global "
                        "C[0]: this thread writes it, and blockIdx (0, 0, 0), threadIdx (0, 0, 0) "
                        "wrote it (threads of different blocks are never ordered)",
                        NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, global_blocks_text), 2, args, &opts, NULL),
                 TIR_ERR_SIM_RACE, s2);
    assert_int_equal(tir_sim_run(ctx, parse(ctx, global_sync_text), 2, args, &opts, NULL),
                     TIR_OK);
    for (int i = 0; i < 32; i++) assert_true(c[i] == a[i] * 2.0f);
    /* Without the barrier: write after write (thread 15 wrote C[16] in its
     * second statement); write after read is not tracked globally. */
    const char *s3[] = {"threadIdx (16, 0, 0): global-memory race on global C[16]: this thread "
                        "writes it, and blockIdx (0, 0, 0), threadIdx (15, 0, 0) wrote it",
                        NULL};
    expect_error(ctx,
                 tir_sim_run(ctx, drop_intrin(ctx, parse(ctx, global_sync_text),
                                              TIR_INTRIN_SYNCTHREADS, 0),
                             2, args, &opts, NULL),
                 TIR_ERR_SIM_RACE, s3);
    tir_ctx_destroy(ctx);
}

/* atomic_add (check_global_races): adds from every thread of two blocks
 * into one element are not races; an atomic add and a plain access of one
 * element by unordered threads are, in either order. */
static const char *atomic_sum_text =
    "@T.prim_func\n"
    "def asum(A: T.Buffer((64,), \"float32\"), C: T.Buffer((1,), \"float32\")):\n"
    "    for bx in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
    "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            T.atomic_add(T.address_of(C[0]), A[bx * 32 + tx])\n";
static const char *atomic_store_text =
    "@T.prim_func\n"
    "def astore(A: T.Buffer((64,), \"float32\"), C: T.Buffer((32,), \"float32\")):\n"
    "    for bx in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
    "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            if bx == 0:\n"
    "                T.atomic_add(T.address_of(C[tx]), A[tx])\n"
    "            else:\n"
    "                C[tx] = A[tx]\n";
static const char *atomic_after_load_text =
    "@T.prim_func\n"
    "def aload(A: T.Buffer((64,), \"float32\"), C: T.Buffer((32,), \"float32\")):\n"
    "    for bx in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
    "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            if bx == 0:\n"
    "                A[tx] = C[tx]\n"
    "            else:\n"
    "                T.atomic_add(T.address_of(C[tx]), A[32 + tx])\n";

static void test_global_atomics(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    float a[64], c[32] = {0};
    fill(a, 64, 23);
    tir_arg args[2] = {{a, 0}, {c, 0}};
    tir_sim_opts opts = {.check_global_races = true, .check_uninit = true};
    tir_sim_report rep;
    assert_int_equal(tir_sim_run(ctx, parse(ctx, atomic_sum_text), 2, args, &opts, &rep), TIR_OK);
    assert_int_equal(rep.atomic_adds, 64);
    float want = 0;
    for (int i = 0; i < 64; i++) want += a[i]; /* the simulator's order: blocks, threads */
    assert_true(c[0] == want);
    /* the interpreter adds too */
    c[0] = 1.0f;
    assert_int_equal(tir_interp_run(ctx, parse(ctx, atomic_sum_text), 2, args, NULL), TIR_OK);
    assert_true(fabsf(c[0] - (want + 1.0f)) < 1e-4f);
    const char *s1[] = {"blockIdx (1, 0, 0), threadIdx (0, 0, 0): global-memory race on global "
                        "C[0]: this thread writes it, and blockIdx (0, 0, 0), threadIdx (0, 0, 0) "
                        "atomically added to it (threads of different blocks are never ordered)",
                        NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, atomic_store_text), 2, args, &opts, NULL),
                 TIR_ERR_SIM_RACE, s1);
    const char *s2[] = {"blockIdx (1, 0, 0), threadIdx (0, 0, 0): global-memory race on global "
                        "C[0]: this thread atomically adds to it, and blockIdx (0, 0, 0), "
                        "threadIdx (0, 0, 0) read it",
                        NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, atomic_after_load_text), 2, args, &opts, NULL),
                 TIR_ERR_SIM_RACE, s2);
    /* an unwritten element: the add reads it */
    tir_sim_opts un = {.uninit_params = 2, .check_uninit = true};
    const char *s3[] = {"atomic_add reads element 0 of C, which was never written", NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, atomic_sum_text), 2, args, &un, NULL),
                 TIR_ERR_UNINIT_READ, s3);
    tir_ctx_destroy(ctx);
}

/* -------------------------------------------------------------- barriers */

static const char *div_finish_text =
    "@T.prim_func\n"
    "def div_finish(A: T.Buffer((64,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
    "        if tx < 40:\n"
    "            T.syncthreads()\n"
    "        A[tx] = T.float32(1)\n";
static const char *div_split_text =
    "@T.prim_func\n"
    "def div_split(A: T.Buffer((64,), \"float32\")):\n"
    "    for by in T.thread_binding(0, 2, thread=\"blockIdx.y\"):\n"
    "        for tx in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
    "            if by == 1 and tx >= 32:\n"
    "                T.syncthreads()\n"
    "                A[tx] = T.float32(2)\n"
    "            else:\n"
    "                T.syncthreads()\n"
    "                A[tx] = T.float32(1)\n";

static void test_divergent_barrier(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    float a[64];
    tir_arg args[1] = {{a, 0}};
    tir_sim_report rep;
    const char *s1[] = {"threadIdx (0, 0, 0) waits at the barrier below",
                        "threadIdx (40, 0, 0) finished without reaching it",
                        "(40 threads wait, 24 finished)", "T.syncthreads()\n            ^^^", NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, div_finish_text), 1, args, NULL, &rep),
                 TIR_ERR_SIM_BARRIER, s1);
    assert_true(rep.has_thread);
    assert_int_equal(rep.thread_idx[0], 40);
    /* Block 0 is fine; block 1 splits over two syncthreads. */
    const char *s2[] = {"blockIdx (0, 1, 0): syncthreads not reached by all threads",
                        "threadIdx (0, 0, 0) and threadIdx (32, 0, 0) wait at different "
                        "syncthreads",
                        NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, div_split_text), 1, args, NULL, &rep),
                 TIR_ERR_SIM_BARRIER, s2);
    assert_int_equal(rep.blocks_run, 2);
    assert_int_equal(rep.barriers, 1);
    tir_ctx_destroy(ctx);
}

/* -------------------------------------------------------- out of bounds */

static const char *oob_text[3] = {
    "@T.prim_func\n"
    "def oob_global(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for bx in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
    "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            B[bx * 32 + tx] = A[bx * 32 + tx + 1]\n",
    "@T.prim_func\n"
    "def oob_shared(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((64,), \"float32\", scope=\"shared\")\n"
    "        S[tx + 1] = A[tx]\n"
    "        T.syncthreads()\n"
    "        B[tx] = S[tx]\n",
    "@T.prim_func\n"
    "def oob_local(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for ty in T.thread_binding(0, 2, thread=\"threadIdx.y\"):\n"
    "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            L = T.allocate((4,), \"float32\", \"local\")\n"
    "            for i in T.serial(ty + 4):\n"
    "                L[i] = A[ty * 32 + tx]\n"
    "            B[ty * 32 + tx] = L[3]\n",
};

static void test_out_of_bounds(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    float a[64], b[64];
    fill(a, 64, 15);
    tir_arg args[2] = {{a, 0}, {b, 0}};
    const char *s0[] = {"blockIdx (1, 0, 0), threadIdx (31, 0, 0): load of A[64] (shape [64])",
                        "B[bx * 32 + tx] = A[bx * 32 + tx + 1]", NULL};
    const char *s1[] = {"blockIdx (0, 0, 0), threadIdx (63, 0, 0): store of S[64] (shape [64])",
                        "S[tx + 1] = A[tx]\n        ^^^", NULL};
    const char *s2[] = {"blockIdx (0, 0, 0), threadIdx (0, 1, 0): store of L[4] (shape [4])",
                        "L[i] = A[ty * 32 + tx]", NULL};
    const char *const *subs[3] = {s0, s1, s2};
    for (int k = 0; k < 3; k++)
        expect_error(ctx, tir_sim_run(ctx, parse(ctx, oob_text[k]), 2, args, NULL, NULL),
                     TIR_ERR_OUT_OF_BOUNDS, subs[k]);
    tir_ctx_destroy(ctx);
}

/* ------------------------------------------------------- uninitialised */

static const char *uninit_text =
    "@T.prim_func\n"
    "def uninit(A: T.Buffer((64,), \"float32\"), B: T.Buffer((64,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((65,), \"float32\", scope=\"shared\")\n"
    "        S[tx] = A[tx]\n"
    "        T.syncthreads()\n"
    "        B[tx] = S[tx + 1]\n";
static const char *uninit_local_text =
    "@T.prim_func\n"
    "def uninit_local(B: T.Buffer((32,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        L = T.allocate((2,), \"float32\", \"local\")\n"
    "        if tx < 31:\n"
    "            L[1] = T.float32(3)\n"
    "        B[tx] = L[1]\n";

static void test_uninit(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    float a[64], b[64];
    fill(a, 64, 16);
    tir_arg args[2] = {{a, 0}, {b, 0}};
    const tir_prim_func *f = parse(ctx, uninit_text);
    /* Without the flag the stale element reads as the poison (NaN). */
    assert_int_equal(tir_sim_run(ctx, f, 2, args, NULL, NULL), TIR_OK);
    for (int i = 0; i < 63; i++) assert_true(b[i] == a[i + 1]);
    assert_true(isnan(b[63]));
    tir_sim_opts opts = {.check_uninit = true};
    const char *s1[] = {"threadIdx (63, 0, 0): load of S[64] (shape [65]): the element was never "
                        "written",
                        NULL};
    expect_error(ctx, tir_sim_run(ctx, f, 2, args, &opts, NULL), TIR_ERR_UNINIT_READ, s1);
    const char *s2[] = {"threadIdx (31, 0, 0): load of L[1]", NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, uninit_local_text), 1, args, &opts, NULL),
                 TIR_ERR_UNINIT_READ, s2);
    /* A global output read before written (uninit_params). */
    tir_sim_opts o2 = {.uninit_params = 1};
    const char *s3[] = {"load of A[1] (shape [64]): the element was never written", NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, oob_text[0]), 2, args, &o2, NULL),
                 TIR_ERR_UNINIT_READ, s3);
    tir_ctx_destroy(ctx);
}

/* ------------------------------------------------------------- cp.async */

static void test_cp_async(void **state) {
    (void)state;
    enum { N = 2048 };
    static float a[N], b[N];
    fill(a, N, 17);
    tir_arg args[2] = {{a, 0}, {b, 0}};
    static const int sizes[3] = {4, 8, 16};
    for (int k = 0; k < 3; k++) {
        tir_ctx *ctx = tir_ctx_create();
        memset(b, 0, sizeof b);
        const tir_prim_func *f = ck_cp_async(ctx, N, sizes[k]);
        tir_sim_report rep;
        tir_sim_opts opts = {.uninit_params = 2, .check_uninit = true};
        assert_int_equal(tir_sim_run(ctx, f, 2, args, &opts, &rep), TIR_OK);
        for (int i = 0; i < N; i++) {
            int blk = i / 1024, t = (i % 1024) / 4, j = i % 4;
            assert_true(b[i] == a[blk * 1024 + (255 - t) * 4 + j]);
        }
        assert_int_equal(rep.cp_async_copies, N / (sizes[k] / 4));
        /* Without the wait, the reads after the barrier see a pending
         * destination (the data never arrived). */
        const char *subs[] = {"load of shared S[", "the destination of a cp_async by threadIdx (",
                              "that has not completed", "cp_async: T.cp_async(", NULL};
        expect_error(ctx,
                     tir_sim_run(ctx, drop_intrin(ctx, f, TIR_INTRIN_CP_ASYNC_WAIT, 0), 2, args,
                                 NULL, NULL),
                     TIR_ERR_SIM_CP_ASYNC_PENDING, subs);
        tir_ctx_destroy(ctx);
    }
}

/* Double buffering: tile t+1 is fetched while tile t is consumed;
 * cp_async_wait(1) leaves the newest group in flight. */
static const char *db_text =
    "@T.prim_func\n"
    "def db_copy(A: T.Buffer((2048,), \"float32\", align=64), B: T.Buffer((2048,), \"float32\", "
    "align=64)):\n"
    "    for bx in T.thread_binding(0, 2, thread=\"blockIdx.x\"):\n"
    "        for tx in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
    "            S = T.allocate((512,), \"float32\", scope=\"shared\")\n"
    "            T.cp_async(T.address_of(S[tx * 4]), T.address_of(A[bx * 1024 + tx * 4]), 16)\n"
    "            T.cp_async_commit()\n"
    "            for t in T.serial(4):\n"
    "                if t + 1 < 4:\n"
    "                    T.cp_async(T.address_of(S[(t + 1) % 2 * 256 + tx * 4]), "
    "T.address_of(A[bx * 1024 + (t + 1) * 256 + tx * 4]), 16)\n"
    "                T.cp_async_commit()\n"
    "                T.cp_async_wait(1)\n"
    "                T.syncthreads()\n"
    "                for j in T.serial(4):\n"
    "                    B[bx * 1024 + t * 256 + tx * 4 + j] = S[t % 2 * 256 + (63 - tx) * 4 + "
    "j] + T.float32(1)\n"
    "                T.syncthreads()\n";

static void test_cp_async_double_buffer(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    enum { N = 2048 };
    static float a[N], b[N];
    fill(a, N, 18);
    tir_arg args[2] = {{a, 0}, {b, 0}};
    const tir_prim_func *f = parse(ctx, db_text);
    tir_sim_report rep;
    tir_sim_opts opts = {.uninit_params = 2, .check_uninit = true};
    tir_status st = tir_sim_run(ctx, f, 2, args, &opts, &rep);
    if (st) fprintf(stderr, "%s\n", tir_ctx_error(ctx));
    assert_int_equal(st, TIR_OK);
    for (int i = 0; i < N; i++) {
        int blk = i / 1024, t = (i % 1024) / 256, x = (i % 256) / 4, j = i % 4;
        assert_true(b[i] == a[blk * 1024 + t * 256 + (63 - x) * 4 + j] + 1.0f);
    }
    assert_int_equal(rep.cp_async_copies, 2 * 64 * 4);
    assert_int_equal(rep.barriers, 2 * 4 * 2);

    /* The wait removed: tile 0 is read while in flight. */
    const char *subs[] = {"blockIdx (0, 0, 0), threadIdx (0, 0, 0): load of shared S[252]",
                          "threadIdx (63, 0, 0) that has not completed", NULL};
    expect_error(ctx,
                 tir_sim_run(ctx, drop_intrin(ctx, f, TIR_INTRIN_CP_ASYNC_WAIT, 0), 2, args,
                             NULL, NULL),
                 TIR_ERR_SIM_CP_ASYNC_PENDING, subs);

    /* The barrier after the consumer removed: the next prefetch overwrites
     * a tile other threads still read. */
    st = tir_sim_run(ctx, drop_intrin(ctx, f, TIR_INTRIN_SYNCTHREADS, 1), 2, args, NULL, NULL);
    assert_true(st == TIR_ERR_SIM_RACE || st == TIR_ERR_SIM_CP_ASYNC_PENDING);
    tir_ctx_destroy(ctx);
}

/* ------------------------------------------------- static race check */

/* One thread writes S[0] for all (guarded), or every thread does. */
static const char *guarded_text =
    "@T.prim_func\n"
    "def guarded(A: T.Buffer((32,), \"float32\"), B: T.Buffer((32,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((1,), \"float32\", scope=\"shared\")\n"
    "        if tx == 0:\n"
    "            S[0] = A[0]\n"
    "        T.syncthreads()\n"
    "        B[tx] = S[0]\n";
static const char *unguarded_text =
    "@T.prim_func\n"
    "def unguarded(A: T.Buffer((32,), \"float32\"), B: T.Buffer((32,), \"float32\")):\n"
    "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "        S = T.allocate((1,), \"float32\", scope=\"shared\")\n"
    "        S[0] = A[0]\n"
    "        T.syncthreads()\n"
    "        B[tx] = S[0]\n";

/* The static check of tir_lower (tir_lower_check_races) on the kernels
 * above agrees with the simulator: race-free ones pass, each race it finds
 * is refused with the buffer and both statements named. */
static void expect_static_race(tir_ctx *ctx, const tir_prim_func *f, const char *const *subs) {
    assert_int_equal(tir_lower_check_races(ctx, f), TIR_ERR_LOWER);
    assert_non_null(strstr(tir_ctx_error(ctx), "race_check: shared buffer "));
    for (int i = 0; subs[i]; i++)
        if (!strstr(tir_ctx_error(ctx), subs[i]))
            fail_msg("'%s' not in:\n%s", subs[i], tir_ctx_error(ctx));
}

static void test_static_race_check(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *shift = parse(ctx, shift_text), *db = parse(ctx, db_text);
    const tir_prim_func *tiled = ck_matmul_tiled(ctx, 64, 64, 32);
    assert_int_equal(tir_lower_check_races(ctx, shift), TIR_OK);
    assert_int_equal(tir_lower_check_races(ctx, db), TIR_OK);
    assert_int_equal(tir_lower_check_races(ctx, tiled), TIR_OK);
    assert_int_equal(tir_lower_check_races(ctx, parse(ctx, guarded_text)), TIR_OK);
    for (int k = 4; k <= 16; k *= 2)
        assert_int_equal(tir_lower_check_races(ctx, ck_cp_async(ctx, 2048, k)), TIR_OK);
    assert_int_equal(tir_lower_check_races(ctx, NULL), TIR_ERR_INVALID_ARG);
    assert_int_equal(tir_lower_check_races(NULL, shift), TIR_ERR_INVALID_ARG);
    expect_static_race(ctx, drop_intrin(ctx, shift, TIR_INTRIN_SYNCTHREADS, 0),
                       (const char *[]){"S[tx] = A[tx] (write)",
                                        "B[tx] = S[(tx + 1) % 64] (read)", NULL});
    expect_static_race(ctx, parse(ctx, raw_text), (const char *[]){"buffer S:", NULL});
    expect_static_race(ctx, parse(ctx, waw_text),
                       (const char *[]){"S[tx // 4] = A[tx] (write) and itself (write)", NULL});
    expect_static_race(ctx, parse(ctx, unguarded_text),
                       (const char *[]){"S[0] = A[0] (write) and itself", NULL});
    /* either barrier of the tiled matmul (the second: across the k loop's
     * back edge), and the one after the double buffer's consumer */
    for (int which = 0; which < 2; which++)
        expect_static_race(ctx, drop_intrin(ctx, tiled, TIR_INTRIN_SYNCTHREADS, which),
                           (const char *[]){"(write)", "(read)", NULL});
    expect_static_race(ctx, drop_intrin(ctx, db, TIR_INTRIN_SYNCTHREADS, 1),
                       (const char *[]){"buffer S:", "T.cp_async(", NULL});
    tir_ctx_destroy(ctx);
}

/* ---------------------------------------------------------- launch dims */

static void test_launch_errors(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    float a[64];
    tir_arg args[2] = {{a, 0}, {NULL, 0}};
    const char *t1 =
        "@T.prim_func\n"
        "def big(A: T.Buffer((64,), \"float32\")):\n"
        "    for ty in T.thread_binding(0, 64, thread=\"threadIdx.y\"):\n"
        "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "            A[0] = T.float32(1)\n";
    const char *s1[] = {"2048 threads per block", NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, t1), 1, args, NULL, NULL), TIR_ERR_SIM_LAUNCH,
                 s1);
    const char *t2 =
        "@T.prim_func\n"
        "def zero_grid(A: T.Buffer((64,), \"float32\"), n: T.int32):\n"
        "    for bx in T.thread_binding(0, n // 32, thread=\"blockIdx.x\"):\n"
        "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "            A[bx * 32 + tx] = T.float32(1)\n";
    /* n = 0: an empty tensor, every store under bx: no blocks, nothing
     * written, no error (the sequential meaning) */
    tir_sim_report rep;
    for (int i = 0; i < 64; i++) a[i] = -1.0f;
    assert_int_equal(tir_sim_run(ctx, parse(ctx, t2), 2, args, NULL, &rep), TIR_OK);
    assert_int_equal(rep.grid[0], 0);
    for (int i = 0; i < 64; i++) assert_true(a[i] == -1.0f);
    args[1].scalar = -32; /* -1 blocks */
    const char *s2[] = {"blockIdx.x loop over bx has extent -1", NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, t2), 2, args, NULL, NULL), TIR_ERR_SIM_LAUNCH,
                 s2);
    args[1].scalar = 64;
    assert_int_equal(tir_sim_run(ctx, parse(ctx, t2), 2, args, NULL, &rep), TIR_OK);
    assert_int_equal(rep.grid[0], 2);
    const char *t3 =
        "@T.prim_func\n"
        "def two_extents(A: T.Buffer((64,), \"float32\")):\n"
        "    for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "        A[tx] = T.float32(1)\n"
        "    for tx in T.thread_binding(0, 64, thread=\"threadIdx.x\"):\n"
        "        A[tx] = T.float32(2)\n";
    const char *s3[] = {"threadIdx.x loops with different extents (32 and 64)", NULL};
    expect_error(ctx, tir_sim_run(ctx, parse(ctx, t3), 1, args, NULL, NULL), TIR_ERR_SIM_LAUNCH,
                 s3);
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_add),
        cmocka_unit_test(test_vector_add_odd),
        cmocka_unit_test(test_matmul_naive),
        cmocka_unit_test(test_matmul_odd),
        cmocka_unit_test(test_matmul_tiled),
        cmocka_unit_test(test_matmul_tiled_speed),
        cmocka_unit_test(test_tiled_missing_barrier),
        cmocka_unit_test(test_shift_race),
        cmocka_unit_test(test_raw_waw),
        cmocka_unit_test(test_global_races),
        cmocka_unit_test(test_global_atomics),
        cmocka_unit_test(test_divergent_barrier),
        cmocka_unit_test(test_out_of_bounds),
        cmocka_unit_test(test_uninit),
        cmocka_unit_test(test_cp_async),
        cmocka_unit_test(test_cp_async_double_buffer),
        cmocka_unit_test(test_static_race_check),
        cmocka_unit_test(test_launch_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
