/* test_sched_fuzz.c: seeded random schedules over the ready definitions
 * (matmul, batched matmul, conv2d, elementwise chain, and matmul with a
 * bias or bias+ReLU epilogue) at odd shapes, over every primitive,
 * the reduction, buffer, pipelining and fusion ones
 * (decompose_reduction .. fuse_reduction_epilogue), tensorize (which
 * must refuse every block of these float32 definitions cleanly) and the
 * sampling ones
 * (sample_perfect_tile, sample_tile, sample_categorical, split_rv,
 * annotate_loop_rv) included.
 *
 * Each case builds a definition at random small shapes, applies a random
 * sequence of primitives, most of them plausible and some deliberately
 * invalid (stale, zero or wrong-kind handles, duplicate loops, bad factors
 * (0 included, which once meant "infer"), axes and keys), and checks:
 *   - every failing call fails cleanly: an error code, a message naming
 *     the primitive, and the function, handles and trace unchanged;
 *   - handles from two get_loops calls compare equal with
 *     tir_sched_same_loop exactly when they name the same loop, and stale
 *     handles never do;
 *   - the final function is well formed, computes exactly what the
 *     unscheduled one does in the interpreter, and its trace replays;
 *   - sampled factors obey their rules, and the trace replayed with every
 *     decision drawn anew (as a search mutates it) either fails cleanly
 *     or gives a well-formed function equivalent to the unscheduled one.
 * A loop-nest family (test_fuzz_loop_nests) runs splits, fuses and
 * reorders only, many of them, over the three reductions; a
 * compute-location family (test_fuzz_locations) half block steps, half
 * loop steps over the definitions with several blocks.
 * In every family, one case in FEATURE_ONE_IN (drawn from a stream of its
 * own: the other cases are those the seed gave before) gets what users
 * write and the definitions lack, on one block (sched_features.h): a
 * predicate (n > c, i % 2 == p, i < c, two of them joined by and), a
 * reduce extent that may be empty (a scalar n, or a triangle's range(i)),
 * an accumulation without init; the block's allocated outputs become
 * parameters.  sched_equiv_ok runs such a case at n = 1, 0, 2 and 3 with
 * the outputs whose old values matter initialised, comparing every
 * element.
 * MINITIR_FUZZ_CASES=N (or argv[1]) sets the number of cases (default
 * 5000 over the four definitions: seconds), MINITIR_FUZZ_SEED the seed.
 * A failure prints the seed, the case and the trace to reproduce it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fuzz_args.h"

#include "sched_check.h"
#include "sched_features.h"

static long g_cases = 5000;
static uint64_t g_seed = 20250101;
/* The focused families (no invalid calls, more steps): loop nests (split,
 * fuse and reorder only, test_fuzz_loop_nests) and compute locations (half
 * of the steps block steps: caches, compute_at and its reverse, inlining,
 * layouts; the rest loop steps, test_fuzz_locations). */
static enum { FAM_ALL, FAM_LOOPS, FAM_LOCATIONS } g_family;
static bool focused(void) { return g_family != FAM_ALL; }

static int64_t rnd(uint64_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(sched_rand(r) % (uint64_t)(hi - lo + 1));
}

typedef const tir_prim_func *(*make_fn)(tir_ctx *ctx, uint64_t *r);

static const tir_prim_func *make_matmul(tir_ctx *ctx, uint64_t *r) {
    return tir_def_matmul(ctx, rnd(r, 1, 13), rnd(r, 1, 13), rnd(r, 1, 13), TIR_F32);
}
static const tir_prim_func *make_bmm(tir_ctx *ctx, uint64_t *r) {
    return tir_def_batch_matmul(ctx, rnd(r, 1, 3), rnd(r, 1, 9), rnd(r, 1, 9), rnd(r, 1, 9),
                                TIR_F32);
}
static const tir_prim_func *make_conv(tir_ctx *ctx, uint64_t *r) {
    int64_t pad = rnd(r, 0, 1), h = rnd(r, 3, 7), w = rnd(r, 3, 7);
    return tir_def_conv2d_nchw(ctx, rnd(r, 1, 2), rnd(r, 1, 3), h, w, rnd(r, 1, 3),
                               rnd(r, 1, 3), rnd(r, 1, 3), rnd(r, 1, 2), pad, TIR_F32);
}
static const tir_prim_func *make_chain(tir_ctx *ctx, uint64_t *r) {
    return tir_def_elementwise_chain(ctx, rnd(r, 1, 17), rnd(r, 1, 17), TIR_F32);
}

/* A matmul with a bias (and ReLU) epilogue, for
 * fuse_reduction_epilogue */
static const tir_prim_func *make_bias(tir_ctx *ctx, uint64_t *r) {
    int64_t M = rnd(r, 1, 11), N = rnd(r, 1, 11), K = rnd(r, 1, 11);
    return rnd(r, 0, 1) ? tir_def_matmul_bias(ctx, M, N, K, TIR_F32)
                        : tir_def_matmul_bias_relu(ctx, M, N, K, TIR_F32);
}

/* Strided writers (twenty-first session): T0[s * i + o] = X[i] * 3 over
 * n i, Z[i] = T0[s * i + o] + 1, and Y[s * i + o] = X[i] + 1 (an output
 * written with holes where s > 1, its other elements left as they were);
 * T0 and Y of s * (n - 1) + o + 1 elements, or one more.  cache_read and
 * cache_write must refuse where a copy would read never-written
 * elements (precondition 8), and every schedule they accept must compute
 * what the definition does. */
static const tir_prim_func *make_strided(tir_ctx *ctx, uint64_t *r) {
    int64_t n = rnd(r, 1, 9), st = rnd(r, 1, 3), o = rnd(r, 0, 1);
    int64_t len = st * (n - 1) + o + 1 + rnd(r, 0, 1);
    char idx[64], text[2400];
    snprintf(idx, sizeof idx, "vi * %lld + %lld", (long long)st, (long long)o);
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def strided(X: T.Buffer((%lld,), \"float32\"), Y: T.Buffer((%lld,), \"float32\"), "
             "Z: T.Buffer((%lld,), \"float32\")):\n"
             "    with T.block(\"root\"):\n"
             "        T0 = T.alloc_buffer((%lld,), \"float32\")\n"
             "        for i in range(%lld):\n"
             "            with T.block(\"T\"):\n"
             "                vi = T.axis.remap(\"S\", [i])\n"
             "                T.reads(X[vi])\n"
             "                T.writes(T0[%s])\n"
             "                T0[%s] = X[vi] * T.float32(3)\n"
             "        for i in range(%lld):\n"
             "            with T.block(\"C\"):\n"
             "                vi = T.axis.remap(\"S\", [i])\n"
             "                T.reads(T0[%s])\n"
             "                T.writes(Z[vi])\n"
             "                Z[vi] = T0[%s] + T.float32(1)\n"
             "        for i in range(%lld):\n"
             "            with T.block(\"B\"):\n"
             "                vi = T.axis.remap(\"S\", [i])\n"
             "                T.reads(X[vi])\n"
             "                T.writes(Y[%s])\n"
             "                Y[%s] = X[vi] + T.float32(1)\n",
             (long long)n, (long long)len, (long long)n, (long long)len, (long long)n, idx, idx,
             (long long)n, idx, idx, (long long)n, idx, idx);
    const tir_prim_func *f = NULL;
    return tir_parse_func(ctx, text, strlen(text), &f) == TIR_OK ? f : NULL;
}

/* Workloads of the sixth new-user review (tests/test_user_workloads.c),
 * two dependent row reductions and halo stencils whose producer is a
 * block of its own, drawn here too so that every primitive meets them
 * (the definitions above have one reduction and no halo but conv2d's
 * pad).  Every value stays a small integer where order matters: the
 * interpreter compares bit for bit. */
static const tir_prim_func *parse_or_null(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    return tir_parse_func(ctx, text, strlen(text), &f) == TIR_OK ? f : NULL;
}

/* Layer norm: S = sum A, V = sum (n A - S)^2, O = (n A - S) / sqrt(V + 1). */
static const tir_prim_func *make_layernorm(tir_ctx *ctx, uint64_t *r) {
    long long m = rnd(r, 1, 9), n = rnd(r, 1, 13);
    char text[3000];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def layernorm(A: T.Buffer((%lld, %lld), \"float32\"), O: T.Buffer((%lld, %lld), \"float32\")):\n"
             "    with T.block(\"root\"):\n"
             "        S = T.alloc_buffer((%lld,), \"float32\")\n"
             "        V = T.alloc_buffer((%lld,), \"float32\")\n"
             "        for i, k in T.grid(%lld, %lld):\n"
             "            with T.block(\"S\"):\n"
             "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
             "                T.reads(A[vi, vk])\n"
             "                T.writes(S[vi])\n"
             "                with T.init():\n"
             "                    S[vi] = T.float32(0)\n"
             "                S[vi] = S[vi] + A[vi, vk]\n"
             "        for i, k in T.grid(%lld, %lld):\n"
             "            with T.block(\"V\"):\n"
             "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
             "                T.reads(A[vi, vk], S[vi])\n"
             "                T.writes(V[vi])\n"
             "                with T.init():\n"
             "                    V[vi] = T.float32(0)\n"
             "                V[vi] = V[vi] + (A[vi, vk] * T.float32(%lld) - S[vi]) * (A[vi, vk] * T.float32(%lld) - S[vi])\n"
             "        for i, j in T.grid(%lld, %lld):\n"
             "            with T.block(\"O\"):\n"
             "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
             "                T.reads(A[vi, vj], S[vi], V[vi])\n"
             "                T.writes(O[vi, vj])\n"
             "                O[vi, vj] = (A[vi, vj] * T.float32(%lld) - S[vi]) / T.sqrt(V[vi] + T.float32(1))\n",
             m, n, m, n, m, m, m, n, m, n, n, n, m, n, n);
    return parse_or_null(ctx, text);
}

/* Softmax's shape with exact arithmetic: M = max (A + 0.5), E = A - M,
 * S = sum E, O = E * S.  The 0.5 keeps zeros out of the max: of +0 and -0
 * it returns the second (docs/lowered-ir.md), so a reordered max of
 * signed zeros may differ in the sign of a zero, as documented. */
static const tir_prim_func *make_softmax_like(tir_ctx *ctx, uint64_t *r) {
    long long m = rnd(r, 1, 9), n = rnd(r, 1, 13);
    char text[3000];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def softmax_like(A: T.Buffer((%lld, %lld), \"float32\"), O: T.Buffer((%lld, %lld), \"float32\")):\n"
             "    with T.block(\"root\"):\n"
             "        M = T.alloc_buffer((%lld,), \"float32\")\n"
             "        E = T.alloc_buffer((%lld, %lld), \"float32\")\n"
             "        S = T.alloc_buffer((%lld,), \"float32\")\n"
             "        for i, k in T.grid(%lld, %lld):\n"
             "            with T.block(\"M\"):\n"
             "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
             "                T.reads(A[vi, vk])\n"
             "                T.writes(M[vi])\n"
             "                with T.init():\n"
             "                    M[vi] = T.float32(\"-inf\")\n"
             "                M[vi] = T.max(M[vi], A[vi, vk] + T.float32(0.5))\n"
             "        for i, k in T.grid(%lld, %lld):\n"
             "            with T.block(\"E\"):\n"
             "                vi, vk = T.axis.remap(\"SS\", [i, k])\n"
             "                T.reads(A[vi, vk], M[vi])\n"
             "                T.writes(E[vi, vk])\n"
             "                E[vi, vk] = A[vi, vk] - M[vi]\n"
             "        for i, k in T.grid(%lld, %lld):\n"
             "            with T.block(\"S\"):\n"
             "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
             "                T.reads(E[vi, vk])\n"
             "                T.writes(S[vi])\n"
             "                with T.init():\n"
             "                    S[vi] = T.float32(0)\n"
             "                S[vi] = S[vi] + E[vi, vk]\n"
             "        for i, k in T.grid(%lld, %lld):\n"
             "            with T.block(\"O\"):\n"
             "                vi, vk = T.axis.remap(\"SS\", [i, k])\n"
             "                T.reads(E[vi, vk], S[vi])\n"
             "                T.writes(O[vi, vk])\n"
             "                O[vi, vk] = E[vi, vk] * S[vi]\n",
             m, n, m, n, m, m, n, m, m, n, m, n, m, n, m, n);
    return parse_or_null(ctx, text);
}

/* A 2-D blur whose producer P = 2 A + 1 is a block of its own: spelled
 * out (five taps of a 3x3 window) or as a reduction over the window. */
static const tir_prim_func *make_blur(tir_ctx *ctx, uint64_t *r) {
    long long h = rnd(r, 1, 9), w = rnd(r, 1, 9);
    bool red = rnd(r, 0, 1);
    char text[3000];
    int k = snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def blur(A: T.Buffer((%lld, %lld), \"float32\"), W: T.Buffer((3, 3), \"float32\"), "
             "B: T.Buffer((%lld, %lld), \"float32\")):\n"
             "    with T.block(\"root\"):\n"
             "        P = T.alloc_buffer((%lld, %lld), \"float32\")\n"
             "        for i, j in T.grid(%lld, %lld):\n"
             "            with T.block(\"P\"):\n"
             "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
             "                T.reads(A[vi, vj])\n"
             "                T.writes(P[vi, vj])\n"
             "                P[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)\n",
             h + 2, w + 2, h, w, h + 2, w + 2, h + 2, w + 2);
    if (red)
        snprintf(text + k, sizeof text - (size_t)k,
                 "        for i, j, di, dj in T.grid(%lld, %lld, 3, 3):\n"
                 "            with T.block(\"B\"):\n"
                 "                vi, vj, vdi, vdj = T.axis.remap(\"SSRR\", [i, j, di, dj])\n"
                 "                T.reads(P[vi + vdi, vj + vdj], W[vdi, vdj])\n"
                 "                T.writes(B[vi, vj])\n"
                 "                with T.init():\n"
                 "                    B[vi, vj] = T.float32(0)\n"
                 "                B[vi, vj] = B[vi, vj] + P[vi + vdi, vj + vdj] * W[vdi, vdj]\n",
                 h, w);
    else
        snprintf(text + k, sizeof text - (size_t)k,
                 "        for i, j in T.grid(%lld, %lld):\n"
                 "            with T.block(\"B\"):\n"
                 "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                 "                T.reads(P[vi:vi + 3, vj:vj + 3], W[1, 1])\n"
                 "                T.writes(B[vi, vj])\n"
                 "                B[vi, vj] = P[vi, vj + 1] + P[vi + 1, vj] + P[vi + 1, vj + 1] * "
                 "W[1, 1] + P[vi + 1, vj + 2] + P[vi + 2, vj + 1]\n",
                 h, w);
    return parse_or_null(ctx, text);
}

/* A reduction whose update does not commute (Horner's rule over two
 * reduce iterators, int32 wrapping), after an elementwise producer and
 * before a consumer: no primitive may run its steps in another order
 * (reorder 11, compute_at 14, reverse_compute_at 14). */
static const tir_prim_func *make_recurrence(tir_ctx *ctx, uint64_t *r) {
    long long m = rnd(r, 1, 7), k1 = rnd(r, 1, 5), k2 = rnd(r, 1, 5);
    bool swapped = rnd(r, 0, 1);
    char grid[96], text[3000];
    snprintf(grid, sizeof grid, swapped ? "for i, k2, k1 in T.grid(%lld, %lld, %lld):\n"
                                        : "for i, k1, k2 in T.grid(%lld, %lld, %lld):\n",
             m, swapped ? k2 : k1, swapped ? k1 : k2);
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def recurrence(A: T.Buffer((%lld, %lld), \"int32\"), Y: T.Buffer((%lld,), \"int32\")):\n"
             "    with T.block(\"root\"):\n"
             "        P = T.alloc_buffer((%lld, %lld), \"int32\")\n"
             "        C = T.alloc_buffer((%lld,), \"int32\")\n"
             "        for i, k in T.grid(%lld, %lld):\n"
             "            with T.block(\"P\"):\n"
             "                vi, vk = T.axis.remap(\"SS\", [i, k])\n"
             "                T.reads(A[vi, vk])\n"
             "                T.writes(P[vi, vk])\n"
             "                P[vi, vk] = A[vi, vk] * 2 + 1\n"
             "        %s"
             "            with T.block(\"C\"):\n"
             "                vi, vk1, vk2 = T.axis.remap(\"SRR\", [i, k1, k2])\n"
             "                T.reads(P[vi, vk1 * %lld + vk2])\n"
             "                T.writes(C[vi])\n"
             "                with T.init():\n"
             "                    C[vi] = 7\n"
             "                C[vi] = C[vi] * 3 + P[vi, vk1 * %lld + vk2]\n"
             "        for i in range(%lld):\n"
             "            with T.block(\"Y\"):\n"
             "                vi = T.axis.remap(\"S\", [i])\n"
             "                T.reads(C[vi])\n"
             "                T.writes(Y[vi])\n"
             "                Y[vi] = C[vi] - 1\n",
             m, k1 * k2, m, m, k1 * k2, m, m, k1 * k2, grid, k2, k2, m);
    return parse_or_null(ctx, text);
}

typedef struct {
    tir_ctx *ctx;
    tir_schedule *s;
    uint64_t *r;
    int nblocks;
    tir_block_rv blocks[16];
    int splits; /* the loop-nest family's splits so far */
    char why[16384];
    bool bad;
    int calls, failed_calls, invalid_calls, same_checks, zero_factors;
} fuzz_case;

/* A call that may fail: when it does, it must fail cleanly. */
static void check_call(fuzz_case *fc, sched_snap *snap, tir_status st, const char *prim) {
    fc->calls++;
    if (st == TIR_OK) {
        sched_snap_free(snap);
        return;
    }
    fc->failed_calls++;
    if (st == TIR_ERR_VERIFY || strstr(tir_ctx_error(fc->ctx), "internal error")) {
        snprintf(fc->why, sizeof fc->why, "%s produced ill-formed IR: %s", prim,
                 tir_ctx_error(fc->ctx));
        sched_snap_free(snap);
        fc->bad = true;
        return;
    }
    if (!sched_fail_ok(fc->s, snap, st, st, prim, fc->why, sizeof fc->why)) fc->bad = true;
}

/* A call that must fail with `want` (or any error when want is TIR_OK). */
static void check_invalid(fuzz_case *fc, sched_snap *snap, tir_status st, tir_status want,
                          const char *prim) {
    fc->invalid_calls++;
    if (st == TIR_OK) {
        snprintf(fc->why, sizeof fc->why, "invalid %s call succeeded", prim);
        sched_snap_free(snap);
        fc->bad = true;
        return;
    }
    if (!sched_fail_ok(fc->s, snap, st, want == TIR_OK ? st : want, prim, fc->why,
                       sizeof fc->why))
        fc->bad = true;
}

#define CALL(prim, expr)                                                                  \
    do {                                                                                  \
        sched_snap snap_;                                                                 \
        sched_snap_take(fc->s, &snap_);                                                   \
        check_call(fc, &snap_, (expr), prim);                                             \
    } while (0)
#define INVALID(want, prim, expr)                                                         \
    do {                                                                                  \
        sched_snap snap_;                                                                 \
        sched_snap_take(fc->s, &snap_);                                                   \
        check_invalid(fc, &snap_, (expr), want, prim);                                    \
    } while (0)

static const char *const axes[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                   "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                   "vthread.x",   "vthread.y",   "vthread.z"};
static const char *const keys[] = {"software_pipeline_stage", "software_pipeline_order",
                                   "pragma_auto_unroll_max_step", "note"};

static void annotate_random(fuzz_case *fc, bool block, uint32_t id) {
    uint64_t *r = fc->r;
    const char *key = keys[rnd(r, 0, 3)];
    int64_t ints[4] = {rnd(r, 0, 2), rnd(r, 0, 2), rnd(r, 0, 2), rnd(r, 0, 2)};
    tir_loop_rv l = {id, fc->blocks[0].sched};
    tir_block_rv b = {id, fc->blocks[0].sched};
    switch (rnd(r, 0, 3)) {
    case 0:
        if (block)
            CALL("annotate_block_int", tir_sched_annotate_block_int(fc->s, b, key, ints[0]));
        else
            CALL("annotate_loop_int", tir_sched_annotate_loop_int(fc->s, l, key, ints[0]));
        break;
    case 1:
        if (block)
            CALL("annotate_block_str", tir_sched_annotate_block_str(fc->s, b, key, "x\"y"));
        else
            CALL("annotate_loop_str", tir_sched_annotate_loop_str(fc->s, l, key, "v"));
        break;
    case 2: {
        int n = (int)rnd(r, 0, 4);
        if (block)
            CALL("annotate_block_ints", tir_sched_annotate_block_ints(fc->s, b, key, n, ints));
        else
            CALL("annotate_loop_ints", tir_sched_annotate_loop_ints(fc->s, l, key, n, ints));
        break;
    }
    default:
        if (block)
            CALL("unannotate_block", tir_sched_unannotate_block(fc->s, b, key));
        else
            CALL("unannotate_loop", tir_sched_unannotate_loop(fc->s, l, key));
    }
}

/* Block primitives: cache_read, cache_write, compute_at, reverse_compute_at,
 * compute_inline, reverse_compute_inline on block b, with random indices,
 * scopes, consumer lists and target loops (of any block); new cache
 * blocks join the pool. */
static void add_block(fuzz_case *fc, tir_block_rv b) {
    if (fc->nblocks < 16) fc->blocks[fc->nblocks++] = b;
}

static void layout_step(fuzz_case *fc, tir_block_rv b);

static const char *const intrins[] = {"mma_m16n8k16_bf16", "mma_m16n8k8_tf32", "frag_fill_f32",
                                      "frag_load_a_16x16",  "frag_load_b_8x8_tf32",
                                      "frag_store_16x8",    "no_such_intrin"};

static void block_step(fuzz_case *fc, tir_block_rv b) {
    uint64_t *r = fc->r;
    tir_schedule *s = fc->s;
    tir_block_rv other = fc->blocks[rnd(r, 0, fc->nblocks - 1)], out;
    const char *scope = rnd(r, 0, 1) ? "shared" : "local";
    int ncons = (int)rnd(r, 0, 1);
    tir_loop_rv target = {0, b.sched};
    const tir_loop_rv *ls;
    int n;
    int kind = (int)rnd(r, 0, 10);
    /* Mostly aim compute_at at a consumer's loop and reverse_compute_at
       at a producer's, so that they often succeed. */
    const tir_block_rv *rel;
    int nrel;
    if ((kind == 2 || kind == 3) && rnd(r, 0, 2) &&
        tir_sched_get_consumers(s, b, &rel, &nrel) == TIR_OK && nrel > 0)
        other = rel[rnd(r, 0, nrel - 1)];
    if (kind == 4 && rnd(r, 0, 2) && tir_sched_get_producers(s, b, &rel, &nrel) == TIR_OK &&
        nrel > 0)
        other = rel[rnd(r, 0, nrel - 1)];
    if (tir_sched_get_loops(s, other, &ls, &n) == TIR_OK && n > 0) target = ls[rnd(r, 0, n - 1)];
    switch (kind) {
    case 0: {
        tir_status st;
        CALL("cache_read", st = tir_sched_cache_read(s, b, (int)rnd(r, 0, 2), scope, ncons,
                                                      &other, &out));
        if (st == TIR_OK) add_block(fc, out);
        break;
    }
    case 1: {
        tir_status st;
        CALL("cache_write", st = tir_sched_cache_write(s, b, (int)rnd(r, 0, 1), scope, ncons,
                                                        &other, &out));
        if (st == TIR_OK) add_block(fc, out);
        break;
    }
    case 2:
    case 3:
        if (target.id)
            CALL("compute_at", tir_sched_compute_at(s, b, target, rnd(r, 0, 1)));
        break;
    case 4:
        if (target.id)
            CALL("reverse_compute_at", tir_sched_reverse_compute_at(s, b, target, rnd(r, 0, 1)));
        break;
    case 5: CALL("compute_inline", tir_sched_compute_inline(s, b)); break;
    case 6: CALL("reverse_compute_inline", tir_sched_reverse_compute_inline(s, b)); break;
    case 7:
    case 8: layout_step(fc, b); break;
    case 10: /* float32 definitions never match a fragment intrinsic: the
                matcher must fail cleanly on whatever block it is given */
        CALL("tensorize", tir_sched_tensorize(s, b, intrins[rnd(r, 0, 6)]));
        break;
    default:
        if (rnd(r, 0, 1))
            INVALID(TIR_ERR_SCHED_BAD_SCOPE, "cache_read",
                    tir_sched_cache_read(s, b, 0, "global", 0, NULL, &out));
        else
            INVALID(TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, "cache_write",
                    tir_sched_cache_write(s, b, 7, "local", 0, NULL, &out));
    }
}

/* transform_layout: a random permutation, split (by a factor that may
 * not divide: padding, refused), fusion of two dimensions or
 * rotation swizzle of the buffer block b reads or writes at a random
 * index (mostly a cache), sometimes a map of the wrong arity or one that
 * is not injective. */
static long g_layout_calls, g_layout_ok;

static void append(char *buf, size_t n, const char *fmt, ...) TIR_PRINTF(3, 4);
static void append(char *buf, size_t n, const char *fmt, ...) {
    size_t len = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

/* "lambda v0, v1, ...: (" for nvars variables. */
static void map_head(char *buf, size_t n, int nvars) {
    snprintf(buf, n, "lambda ");
    for (int d = 0; d < nvars; d++) append(buf, n, "%sv%d", d ? ", " : "", d);
    append(buf, n, ": (");
}

static void layout_step(fuzz_case *fc, tir_block_rv b) {
    uint64_t *r = fc->r;
    const tir_block *blk;
    if (tir_sched_get_block_node(fc->s, b, &blk) != TIR_OK) return;
    /* mostly a buffer the function allocates (parameters are refused) */
    const tir_prim_func *f = tir_sched_func(fc->s);
    int cand[32], ncand = 0;
    for (int i = 0; i < blk->nreads + blk->nwrites && ncand < 32; i++) {
        const tir_buffer *x = i < blk->nreads ? blk->reads[i].buffer
                                              : blk->writes[i - blk->nreads].buffer;
        bool param = false;
        for (int p = 0; p < f->nparams; p++) param |= f->buffer_map[p] == x;
        if (!param) cand[ncand++] = i;
    }
    int pick = ncand && rnd(r, 0, 3) ? cand[rnd(r, 0, ncand - 1)]
                                     : (int)rnd(r, 0, blk->nreads + blk->nwrites - 1);
    if (pick < 0) return; /* no buffers at all */
    bool is_write = pick >= blk->nreads;
    int idx = is_write ? pick - blk->nreads : pick;
    const tir_buffer *buf = is_write ? blk->writes[idx].buffer : blk->reads[idx].buffer;
    int n = buf->ndim, perm[8];
    int64_t ext[8];
    if (n < 1 || n > 6) return;
    for (int d = 0; d < n; d++) {
        perm[d] = d;
        if (!tir_expr_const_int(buf->shape[d], &ext[d])) ext[d] = 1;
    }
    for (int d = n - 1; d > 0; d--) {
        int j = (int)rnd(r, 0, d), t = perm[d];
        perm[d] = perm[j];
        perm[j] = t;
    }
    char map[512];
    map_head(map, sizeof map, n);
    int kind = (int)rnd(r, 0, 5), a = (int)rnd(r, 0, n - 1);
    int64_t c = rnd(r, 1, 4);
    for (int k = 0; k < n; k++) {
        int d = perm[k];
        const char *sep = k ? ", " : "";
        if (kind == 1 && d == a)
            append(map, sizeof map, "%sv%d // %lld, v%d %% %lld", sep, d, (long long)c, d,
                   (long long)c);
        else if (kind == 2 && d == a && n >= 2 && a + 1 < n)
            append(map, sizeof map, "%sv%d * %lld + v%d", sep, d, (long long)ext[d + 1], d + 1);
        else if (kind == 2 && d == a + 1 && a + 1 < n)
            continue;
        else if (kind == 3 && d == a)
            append(map, sizeof map, "%s(v%d + v%d) %% %lld + v%d // %lld * %lld", sep, d,
                   perm[0], (long long)c, d, (long long)c, (long long)c);
        else if (kind == 4 && k == n - 1) /* drops a variable: not injective unless
                                              its extent is 1 */
            append(map, sizeof map, "%sv%d", sep, perm[0]);
        else
            append(map, sizeof map, "%sv%d", sep, d);
    }
    append(map, sizeof map, ",)");
    tir_status st;
    g_layout_calls++;
    if (kind == 5) { /* one variable too many */
        map_head(map, sizeof map, n + 1);
        append(map, sizeof map, "v0,)");
        INVALID(TIR_OK, "transform_layout",
                st = tir_sched_transform_layout(fc->s, b, idx, is_write, map));
    } else if (kind == 4 && n >= 2 && ext[perm[n - 1]] > 1) {
        INVALID(TIR_OK, "transform_layout",
                st = tir_sched_transform_layout(fc->s, b, idx, is_write, map));
    } else {
        CALL("transform_layout",
             st = tir_sched_transform_layout(fc->s, b, idx, is_write, map));
    }
    if (st == TIR_OK) g_layout_ok++;
}

/* Reduction, buffer, pipelining and fusion primitives:
 * decompose_reduction, rfactor, storage_align, set_scope,
 * software_pipeline, fuse_reduction_epilogue, blockize with plausible and
 * wrong arguments. */
static const char *const scopes[] = {"global", "shared", "local", "warp"};
static long g_rfactor_calls, g_rfactor_ok, g_blockize_calls, g_blockize_ok;

static void fusion_step(fuzz_case *fc, tir_block_rv b, const tir_loop_rv *ls, int n) {
    uint64_t *r = fc->r;
    tir_loop_rv l = ls[rnd(r, 0, n - 1)];
    switch (rnd(r, 0, 6)) {
    case 0: {
        tir_block_rv out;
        CALL("decompose_reduction", tir_sched_decompose_reduction(fc->s, b, l, &out));
        break;
    }
    case 6: { /* blockize: the new outer block joins the pool */
        tir_block_rv out;
        tir_status st;
        CALL("blockize", st = tir_sched_blockize(fc->s, l, &out));
        g_blockize_calls++;
        if (st == TIR_OK) {
            g_blockize_ok++;
            add_block(fc, out);
        }
        break;
    }
    case 5: { /* rfactor, factor_axis sometimes out of range */
        tir_block_rv out;
        tir_status st;
        CALL("rfactor", st = tir_sched_rfactor(fc->s, l, (int)rnd(r, -4, 3), &out));
        g_rfactor_calls++;
        if (st == TIR_OK) {
            g_rfactor_ok++;
            add_block(fc, out);
        }
        break;
    }
    case 1: {
        int64_t f = rnd(r, 0, 9);
        CALL("storage_align", tir_sched_storage_align(fc->s, b, rnd(r, 0, 1), rnd(r, -1, 4), f,
                                                      rnd(r, 0, f)));
        break;
    }
    case 2:
        CALL("set_scope", tir_sched_set_scope(fc->s, b, rnd(r, 0, 1), scopes[rnd(r, 0, 3)]));
        break;
    case 3: {
        int64_t st[4], ord[4] = {0, 1, 2, 3}, as[2];
        int k = (int)rnd(r, 1, 3), na = (int)rnd(r, 0, 2);
        for (int i = 0; i < k; i++) st[i] = rnd(r, 0, 2);
        for (int i = k - 1; i > 0; i--) { /* a permutation, mostly */
            int j = (int)rnd(r, 0, i);
            int64_t t = ord[i];
            ord[i] = ord[j];
            ord[j] = t;
        }
        if (rnd(r, 0, 9) == 0) ord[0] = ord[k - 1];
        for (int i = 0; i < na; i++) as[i] = rnd(r, 0, 2);
        CALL("software_pipeline",
             tir_sched_software_pipeline(fc->s, l, k, st, k, ord, na, as));
        /* the guarded tail's annotation (0, 1, or 2, which tir_lower
         * refuses) half the time; from a copy of the stream, so that the
         * draws after it stay as they were before the annotation existed */
        uint64_t r2 = *r ^ 0x2545f491u, r3 = *r ^ 0x85ebca6bu;
        tir_annot_key tail = rnd(&r3, 0, 2) ? TIR_ANN_SOFTWARE_PIPELINE_GUARD_TAIL
                                            : TIR_ANN_SOFTWARE_PIPELINE_CLAMP_TAIL;
        if (rnd(&r2, 0, 1))
            CALL("annotate_loop_int",
                 tir_sched_annotate_loop_int(fc->s, l, tir_annot_key_str(tail), rnd(&r2, 0, 2)));
        break;
    }
    default: {
        tir_block_rv e = fc->blocks[rnd(r, 0, fc->nblocks - 1)];
        const tir_prim_func *f0 = tir_sched_func(fc->s);
        int len = tir_sched_trace_len(fc->s);
        bool changed = false;
        tir_status st;
        CALL("fuse_reduction_epilogue",
             st = tir_sched_fuse_reduction_epilogue(fc->s, b, e, &changed));
        /* Only a change is traced; no change leaves the function as is. */
        if (st == TIR_OK && (changed ? tir_sched_trace_len(fc->s) != len + 1
                                     : tir_sched_trace_len(fc->s) != len ||
                                           tir_sched_func(fc->s) != f0)) {
            snprintf(fc->why, sizeof fc->why,
                     "fuse_reduction_epilogue: changed is %d, but the trace grew by %d and "
                     "the function is %s",
                     changed, tir_sched_trace_len(fc->s) - len,
                     tir_sched_func(fc->s) == f0 ? "the same" : "new");
            fc->bad = true;
        }
    }
    }
}

/* Sampling on loop l: a perfect or covering tile (checked against the
 * rules), split by the sampled values when there are two or more, a
 * categorical value annotated on l, or a random forced decision (rarely
 * valid, which must then fail cleanly). */
static long g_sample_calls, g_sample_ok, g_resample_calls, g_resample_ok;

static void check_tile(fuzz_case *fc, tir_loop_rv l, bool perfect, int nf, int64_t maxin,
                       const tir_value_rv *v) {
    int64_t ext = -1, p = 1, x[4] = {0};
    const tir_for *f;
    if (tir_sched_get_for(fc->s, l, &f) == TIR_OK) tir_expr_const_int(f->extent, &ext);
    for (int i = 0; i < nf; i++) {
        tir_sched_value(fc->s, v[i], &x[i]);
        if (i > 0) p *= x[i];
    }
    bool ok = x[nf - 1] <= maxin && (perfect ? p * x[0] == ext : x[0] == (ext + p - 1) / p);
    if (!ok) {
        snprintf(fc->why, sizeof fc->why, "%s of extent %lld gave [%lld, %lld, %lld, %lld]",
                 perfect ? "sample_perfect_tile" : "sample_tile", (long long)ext,
                 (long long)x[0], (long long)x[1], (long long)x[2], (long long)x[3]);
        fc->bad = true;
    }
}

static void sample_step(fuzz_case *fc, tir_loop_rv l) {
    uint64_t *r = fc->r;
    tir_value_rv v[4];
    tir_status st = TIR_ERR_INVALID_ARG;
    int nf = (int)rnd(r, 1, 4), kind = (int)rnd(r, 0, 4);
    int64_t maxin = rnd(r, 1, 8), d[4] = {rnd(r, 1, 6), rnd(r, 1, 6), rnd(r, 1, 6), rnd(r, 1, 6)};
    g_sample_calls++;
    if (kind == 0) {
        CALL("sample_perfect_tile",
             st = tir_sched_sample_perfect_tile(fc->s, l, nf, maxin, 0, NULL, v));
        if (st == TIR_OK) check_tile(fc, l, true, nf, maxin, v);
    } else if (kind == 1) {
        CALL("sample_tile", st = tir_sched_sample_tile(fc->s, l, nf, maxin, rnd(r, 0, 60), 0,
                                                        NULL, v));
        if (st == TIR_OK) check_tile(fc, l, false, nf, maxin, v);
    } else if (kind == 2) {
        CALL("sample_perfect_tile",
             st = tir_sched_sample_perfect_tile(fc->s, l, nf, maxin, nf, d, v));
    } else if (kind == 3) {
        CALL("sample_tile", st = tir_sched_sample_tile(fc->s, l, nf, maxin, 100, nf, d, v));
    } else {
        CALL("sample_categorical",
             st = tir_sched_sample_categorical(fc->s, 3, (const int64_t[]){0, 4, 16},
                                               (const double[]){1, 2, 0.5}, 0, NULL, v));
        if (st == TIR_OK)
            CALL("annotate_loop_rv",
                 tir_sched_annotate_loop_rv(fc->s, l, keys[rnd(r, 0, 3)], v[0]));
        nf = 0;
    }
    if (st != TIR_OK) return;
    g_sample_ok++;
    if (nf >= 2 && !fc->bad)
        CALL("split_rv", tir_sched_split_rv(fc->s, l, nf, v, (tir_loop_rv[4]){{0}}));
}

/* The trace replayed on a fresh schedule with every decision drawn anew. */
static void check_resample(fuzz_case *fc, uint64_t seed) {
    const tir_decision *d;
    int n;
    if (tir_sched_decisions(fc->s, &d, &n) != TIR_OK || n == 0) return;
    tir_decision *ov = calloc((size_t)n, sizeof *ov);
    for (int i = 0; i < n; i++) ov[i].inst = d[i].inst;
    tir_schedule *t = NULL;
    const char *text = tir_sched_trace_text(fc->s);
    tir_sched_create(fc->ctx, tir_sched_orig_func(fc->s), &t);
    tir_sched_seed(t, seed);
    g_resample_calls++;
    tir_status st = tir_sched_replay_with_decisions(t, text, strlen(text), n, ov);
    free(ov);
    if (st != TIR_OK && tir_sched_trace_len(t) != 0) {
        snprintf(fc->why, sizeof fc->why, "a failed re-sampled replay left %d instructions",
                 tir_sched_trace_len(t));
        fc->bad = true;
    } else if (st == TIR_OK) {
        g_resample_ok++;
        if (tir_verify(fc->ctx, tir_sched_func(t)) != TIR_OK) {
            snprintf(fc->why, sizeof fc->why, "re-sampled: ill-formed: %s",
                     tir_ctx_error(fc->ctx));
            fc->bad = true;
        } else if (!sched_equiv_ok(fc->ctx, tir_sched_orig_func(t), tir_sched_func(t), seed,
                                   fc->why, sizeof fc->why)) {
            fc->bad = true;
        }
    }
    tir_sched_destroy(t);
}

/* A second get_loops of b names the same loops as ls, under new ids. */
static void check_same_loops(fuzz_case *fc, tir_block_rv b, const tir_loop_rv *ls, int n) {
    const tir_loop_rv *again;
    int m;
    if (tir_sched_get_loops(fc->s, b, &again, &m) != TIR_OK || m != n) {
        snprintf(fc->why, sizeof fc->why, "a second get_loops differs: %s",
                 tir_ctx_error(fc->ctx));
        fc->bad = true;
        return;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            fc->same_checks++;
            if (tir_sched_same_loop(fc->s, ls[i], again[j]) != (i == j)) {
                snprintf(fc->why, sizeof fc->why,
                         "same_loop(l%u, l%u) is %d, expected %d (loops %d and %d)",
                         ls[i].id - 1, again[j].id - 1, !(i == j), i == j, i, j);
                fc->bad = true;
                return;
            }
        }
}

/* One plausible primitive on a random block's loops. */
static void random_step(fuzz_case *fc) {
    uint64_t *r = fc->r;
    tir_block_rv b = fc->blocks[rnd(r, 0, fc->nblocks - 1)];
    const tir_loop_rv *ls;
    int n;
    tir_status gl = tir_sched_get_loops(fc->s, b, &ls, &n);
    if (gl == TIR_ERR_SCHED_STALE_HANDLE) return; /* inlined or fused away */
    if (gl != TIR_OK) {
        snprintf(fc->why, sizeof fc->why, "get_loops failed: %s", tir_ctx_error(fc->ctx));
        fc->bad = true;
        return;
    }
    if (rnd(r, 0, 3) == 0) check_same_loops(fc, b, ls, n);
    if (fc->bad) return;
    if (g_family == FAM_LOCATIONS ? rnd(r, 0, 1) == 0 : !focused() && rnd(r, 0, 3) == 0) {
        block_step(fc, b);
        return;
    }
    if (n == 0) return;
    if (!focused() && rnd(r, 0, 4) == 0) {
        fusion_step(fc, b, ls, n);
        return;
    }
    tir_loop_rv l = ls[rnd(r, 0, n - 1)];
    switch (focused() ? rnd(r, 0, 3) : rnd(r, 0, 9)) {
    case 0:
    case 1: {
        if (focused()) {
            /* Ragged splits multiply the instances the interpreter runs
               (up to the factor, for a loop of extent 1): at most four,
               by 2-4. */
            if (fc->splits >= 4) break;
            fc->splits++;
            int64_t f[2] = {rnd(r, 2, 4), TIR_SPLIT_INFER};
            if (rnd(r, 0, 1)) f[0] = TIR_SPLIT_INFER, f[1] = rnd(r, 2, 4);
            tir_loop_rv out[2];
            CALL("split", tir_sched_split(fc->s, l, 2, f, out));
            break;
        }
        int nf = (int)rnd(r, 2, 3);
        int64_t f[3];
        for (int i = 0; i < nf; i++) f[i] = rnd(r, 1, 6);
        if (rnd(r, 0, 9) < 7) f[rnd(r, 0, nf - 1)] = TIR_SPLIT_INFER;
        tir_loop_rv out[3];
        CALL("split", tir_sched_split(fc->s, l, nf, f, out));
        break;
    }
    case 2: {
        if (n < 2) break;
        int len = (int)rnd(r, 2, n < 3 ? n : 3);
        int start = (int)rnd(r, 0, n - len);
        tir_loop_rv out;
        CALL("fuse", tir_sched_fuse(fc->s, len, ls + start, &out));
        break;
    }
    case 3: {
        if (n < 2) break;
        int k = (int)rnd(r, 2, n < 4 ? n : 4);
        int idx[16];
        for (int i = 0; i < n; i++) idx[i] = i;
        for (int i = 0; i < n; i++) { /* shuffle, then take k */
            int j = (int)rnd(r, i, n - 1), t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        tir_loop_rv sel[4];
        for (int i = 0; i < k; i++) sel[i] = ls[idx[i]];
        CALL("reorder", tir_sched_reorder(fc->s, k, sel));
        break;
    }
    case 4: CALL("bind", tir_sched_bind(fc->s, l, axes[rnd(r, 0, 8)])); break;
    case 5: CALL("vectorize", tir_sched_vectorize(fc->s, l)); break;
    case 6: CALL("parallel", tir_sched_parallel(fc->s, l)); break;
    case 7: CALL("unroll", tir_sched_unroll(fc->s, l)); break;
    case 8: sample_step(fc, l); break;
    default:
        if (rnd(r, 0, 1))
            annotate_random(fc, false, l.id);
        else
            annotate_random(fc, true, b.id);
    }
}

/* One call that must fail. */
static void invalid_step(fuzz_case *fc) {
    uint64_t *r = fc->r;
    tir_schedule *s = fc->s;
    int nh = tir_sched_num_handles(s);
    /* Some live loop, some stale loop, some block. */
    uint32_t live = 0, stale = 0, blk = 0;
    for (int tries = 0; tries < 40; tries++) {
        uint32_t id = (uint32_t)rnd(r, 1, nh);
        char k;
        bool st;
        tir_sched_handle_info(s, id, &k, &st, NULL);
        if (k == 'l' && st && !stale) stale = id;
        if (k == 'l' && !st && !live) live = id;
        if (k == 'b' && !blk) blk = id;
    }
    uint32_t tag = fc->blocks[0].sched;
    tir_loop_rv l = {live, tag};
    if (stale && tir_sched_same_loop(s, (tir_loop_rv){stale, tag}, (tir_loop_rv){stale, tag})) {
        snprintf(fc->why, sizeof fc->why, "same_loop says stale l%u is itself", stale - 1);
        fc->bad = true;
        return;
    }
    switch (rnd(r, 0, 11)) {
    case 11:
        /* 0 once meant "infer"; it is refused as a factor, after the
           loop's own preconditions (serial, unannotated, from 0). */
        if (live) {
            const tir_for *lf = NULL;
            int64_t min = -1;
            bool plain = tir_sched_get_for(s, l, &lf) == TIR_OK && lf->kind == TIR_FOR_SERIAL &&
                         lf->nannots == 0 && tir_expr_const_int(lf->min, &min) && min == 0;
            int64_t f[3] = {rnd(r, 1, 4), TIR_SPLIT_INFER, rnd(r, 1, 4)};
            int nf = (int)rnd(r, 2, 3);
            f[rnd(r, 0, nf - 1)] = 0;
            fc->zero_factors++;
            INVALID(plain ? TIR_ERR_SCHED_NONPOSITIVE_FACTOR : TIR_OK, "split",
                    tir_sched_split(s, l, nf, f, (tir_loop_rv[3]){{0}}));
        }
        break;
    case 10:
        /* a live id, stamped by another schedule */
        if (live)
            INVALID(TIR_ERR_SCHED_INVALID_HANDLE, "unroll",
                    tir_sched_unroll(s, (tir_loop_rv){live, tag + 1}));
        break;
    case 0:
        if (stale)
            INVALID(TIR_ERR_SCHED_STALE_HANDLE, "split",
                    tir_sched_split(s, (tir_loop_rv){stale, tag}, 2,
                                    (const int64_t[]){TIR_SPLIT_INFER, 2}, (tir_loop_rv[2]){{0}}));
        break;
    case 1:
        INVALID(TIR_ERR_SCHED_INVALID_HANDLE, "vectorize",
                tir_sched_vectorize(s, (tir_loop_rv){0}));
        break;
    case 2:
        if (blk)
            INVALID(TIR_ERR_SCHED_INVALID_HANDLE, "unroll",
                    tir_sched_unroll(s, (tir_loop_rv){blk, tag}));
        break;
    case 3:
        INVALID(TIR_ERR_SCHED_INVALID_HANDLE, "parallel",
                tir_sched_parallel(s, (tir_loop_rv){(uint32_t)nh + 5, tag}));
        break;
    case 4:
        if (live)
            INVALID(TIR_OK, "split",
                    tir_sched_split(s, l, 3, (const int64_t[]){TIR_SPLIT_INFER, TIR_SPLIT_INFER, 2},
                                    (tir_loop_rv[3]){{0}}));
        break;
    case 5:
        if (live)
            INVALID(TIR_ERR_SCHED_DUPLICATE_LOOP, "fuse",
                    tir_sched_fuse(s, 2, (const tir_loop_rv[]){l, l}, &(tir_loop_rv){0}));
        break;
    case 6:
        if (live)
            INVALID(TIR_ERR_SCHED_DUPLICATE_LOOP, "reorder",
                    tir_sched_reorder(s, 2, (const tir_loop_rv[]){l, l}));
        break;
    case 7:
        if (live) INVALID(TIR_ERR_SCHED_BAD_THREAD_AXIS, "bind", tir_sched_bind(s, l, "threadIdx.w"));
        break;
    case 8:
        if (live)
            INVALID(TIR_ERR_SCHED_BAD_ANNOTATION, "annotate_loop_int",
                    tir_sched_annotate_loop_int(s, l, "1bad key", 3));
        break;
    default:
        INVALID(TIR_ERR_SCHED_BLOCK_NOT_FOUND, "get_block",
                tir_sched_get_block(s, "no_such_block", &(tir_block_rv){0}));
    }
}

/* One case in FEATURE_ONE_IN gets sched_add_features: a predicate, a
 * reduce domain that may be empty, an accumulation without init.  They
 * are drawn from a stream of their own, so that the other cases (and
 * every case's schedule draws) are those the seed gave before. */
enum { FEATURE_ONE_IN = 7 };
static long g_feat_cases, g_feat_bits[5];

static const tir_prim_func *maybe_features(tir_ctx *ctx, const tir_prim_func *f,
                                           uint64_t case_seed, unsigned *what) {
    uint64_t fr = case_seed ^ 0x6a09e667f3bcc909ull;
    *what = 0;
    if (!f || rnd(&fr, 0, FEATURE_ONE_IN - 1) != 0) return f;
    f = sched_add_features(ctx, f, &fr, what);
    if (*what) g_feat_cases++;
    for (int b = 0; b < 5; b++) g_feat_bits[b] += (*what >> b) & 1;
    return f;
}

static void run_cases(make_fn make, const char *name, long ncases, uint64_t seed) {
    int nbad = 0;
    long calls = 0, failed = 0, invalid = 0, same = 0, zeros = 0;
    for (long ci = 0; ci < ncases; ci++) {
        uint64_t r = seed * 1000003u + (uint64_t)ci;
        tir_ctx *ctx = tir_ctx_create();
        fuzz_case fc = {.ctx = ctx, .r = &r};
        unsigned what;
        const tir_prim_func *f = make(ctx, &r);
        f = maybe_features(ctx, f, seed * 1000003u + (uint64_t)ci, &what);
        if (!f || tir_sched_create(ctx, f, &fc.s) != TIR_OK) {
            snprintf(fc.why, sizeof fc.why, "cannot schedule the definition: %s", tir_ctx_error(ctx));
            fc.bad = true;
        }
        tir_block_rv root;
        const tir_block_rv *kids;
        if (!fc.bad && (tir_sched_get_block(fc.s, "root", &root) != TIR_OK ||
                        tir_sched_get_child_blocks(fc.s, root, &kids, &fc.nblocks) != TIR_OK ||
                        fc.nblocks < 1 || fc.nblocks > 16)) {
            snprintf(fc.why, sizeof fc.why, "cannot list blocks: %s", tir_ctx_error(ctx));
            fc.bad = true;
        } else if (!fc.bad) {
            memcpy(fc.blocks, kids, sizeof *kids * (size_t)fc.nblocks);
            tir_sched_seed(fc.s, r);
        }
        int steps = (int)rnd(&r, 1, focused() ? 16 : 10);
        for (int st = 0; st < steps && !fc.bad; st++) {
            if (!focused() && rnd(&r, 0, 4) == 0)
                invalid_step(&fc);
            else
                random_step(&fc);
        }
        if (!fc.bad && tir_verify(ctx, tir_sched_func(fc.s)) != TIR_OK) {
            snprintf(fc.why, sizeof fc.why, "ill-formed result: %s", tir_ctx_error(ctx));
            fc.bad = true;
        }
        if (!fc.bad && !sched_equiv_ok(ctx, tir_sched_orig_func(fc.s), tir_sched_func(fc.s),
                                       r, fc.why, sizeof fc.why))
            fc.bad = true;
        if (!fc.bad && !sched_roundtrip_ok(fc.s, fc.why, sizeof fc.why)) fc.bad = true;
        if (!fc.bad) check_resample(&fc, r);
        if (fc.bad) {
            if (++nbad <= 3)
                fprintf(stderr,
                        "# FUZZ FAILURE %s: MINITIR_FUZZ_SEED=%llu case %ld\n# %s\n# trace:\n%s\n"
                        "%s%s",
                        name, (unsigned long long)seed, ci, fc.why,
                        fc.s ? tir_sched_trace_text(fc.s) : "",
                        what && f ? "# the definition, with features:\n" : "",
                        what && f ? tir_print(ctx, f) : "");
        }
        calls += fc.calls;
        failed += fc.failed_calls;
        invalid += fc.invalid_calls;
        same += fc.same_checks;
        zeros += fc.zero_factors;
        tir_sched_destroy(fc.s);
        tir_ctx_destroy(ctx);
    }
    printf("# %s: %ld cases, %ld calls (%ld refused), %ld invalid calls (%ld with a 0 factor), "
           "%ld same_loop checks, %d failures\n",
           name, ncases, calls, failed, invalid, zeros, same, nbad);
    if (nbad) fail_msg("%d of %ld %s cases failed (see above)", nbad, ncases, name);
    /* The run must exercise both outcomes, or it tests little. */
    assert_true(calls > failed);
    assert_true(failed > 0 || ncases < 50);
    assert_true(invalid > 0 || ncases < 50 || focused());
    assert_true((zeros > 0 && same > 0) || ncases < 50 || focused());
}

static void test_fuzz_matmul(void **st) {
    (void)st;
    run_cases(make_matmul, "matmul", g_cases / 4, g_seed);
}
static void test_fuzz_batch_matmul(void **st) {
    (void)st;
    run_cases(make_bmm, "batch_matmul", g_cases / 4, g_seed + 1);
}
static void test_fuzz_conv2d(void **st) {
    (void)st;
    run_cases(make_conv, "conv2d", g_cases / 4, g_seed + 2);
}
static void test_fuzz_matmul_bias(void **st) {
    (void)st;
    run_cases(make_bias, "matmul_bias", g_cases / 8, g_seed + 4);
}
static void test_fuzz_chain(void **st) {
    (void)st;
    run_cases(make_chain, "elementwise_chain", g_cases - 3 * (g_cases / 4), g_seed + 3);
}

/* The loop-nest family: random splits (ragged ones included), fuses and
 * reorders only, up to 16 of them, over the three reductions, so that
 * nests fusing spatial with reduce loops, split again and reordered, come
 * often: reorder 9's tangled loops (seed 1921900010, matmul case 4934,
 * took the general mix ~10^6 cases to reach).  Every accepted schedule
 * must compute what the definition does, init first. */
static void test_fuzz_loop_nests(void **st) {
    (void)st;
    g_family = FAM_LOOPS;
    run_cases(make_matmul, "loop_nests_matmul", g_cases / 8, g_seed + 5);
    run_cases(make_bmm, "loop_nests_batch_matmul", g_cases / 8, g_seed + 6);
    run_cases(make_conv, "loop_nests_conv2d", g_cases / 8, g_seed + 7);
    g_family = FAM_ALL;
}

/* The compute-location family: half block steps (cache_read/write,
 * compute_at, reverse_compute_at, the inlines, transform_layout, mostly
 * aimed at a producer's or consumer's loop), half loop steps, up to 16,
 * over the definitions with several blocks (strided writers among them):
 * where a block's instances are computed, and over which region, is what
 * these primitives prove. */
static void test_fuzz_locations(void **st) {
    (void)st;
    g_family = FAM_LOCATIONS;
    run_cases(make_bias, "locations_matmul_bias", g_cases / 8, g_seed + 8);
    run_cases(make_conv, "locations_conv2d", g_cases / 8, g_seed + 9);
    run_cases(make_chain, "locations_chain", g_cases / 8, g_seed + 10);
    run_cases(make_strided, "locations_strided", g_cases / 8, g_seed + 11);
    g_family = FAM_ALL;
}

/* The sixth new-user review's workloads, in the general mix and in the
 * compute-location family. */
static void test_fuzz_workloads(void **st) {
    (void)st;
    run_cases(make_layernorm, "layernorm", g_cases / 16, g_seed + 12);
    run_cases(make_softmax_like, "softmax_like", g_cases / 16, g_seed + 13);
    run_cases(make_blur, "blur", g_cases / 16, g_seed + 14);
    run_cases(make_recurrence, "recurrence", g_cases / 16, g_seed + 18);
    g_family = FAM_LOCATIONS;
    run_cases(make_layernorm, "locations_layernorm", g_cases / 16, g_seed + 15);
    run_cases(make_softmax_like, "locations_softmax_like", g_cases / 16, g_seed + 16);
    run_cases(make_blur, "locations_blur", g_cases / 16, g_seed + 17);
    run_cases(make_recurrence, "locations_recurrence", g_cases / 16, g_seed + 19);
    g_family = FAM_ALL;
}

/* After the others: transform_layout, rfactor and blockize were called
 * and sometimes succeeded. */
static void test_layout_counts(void **st) {
    (void)st;
    printf("# transform_layout: %ld calls, %ld succeeded\n", g_layout_calls, g_layout_ok);
    assert_true((g_layout_ok > 0 && g_layout_ok < g_layout_calls) || g_cases < 50);
    printf("# rfactor: %ld calls, %ld succeeded\n", g_rfactor_calls, g_rfactor_ok);
    assert_true((g_rfactor_ok > 0 && g_rfactor_ok < g_rfactor_calls) || g_cases < 50);
    printf("# blockize: %ld calls, %ld succeeded\n", g_blockize_calls, g_blockize_ok);
    assert_true((g_blockize_ok > 0 && g_blockize_ok < g_blockize_calls) || g_cases < 50);
    printf("# sampling: %ld calls, %ld succeeded; %ld re-sampled replays, %ld succeeded\n",
           g_sample_calls, g_sample_ok, g_resample_calls, g_resample_ok);
    assert_true((g_sample_ok > 0 && g_sample_ok < g_sample_calls) || g_cases < 50);
    assert_true((g_resample_ok > 0 && g_resample_ok < g_resample_calls) || g_cases < 50);
    printf("# features: %ld cases (%ld predicates, %ld reduce extents n, %ld triangles, "
           "%ld accumulations, %ld promoted outputs)\n",
           g_feat_cases, g_feat_bits[0], g_feat_bits[1], g_feat_bits[2], g_feat_bits[3],
           g_feat_bits[4]);
    for (int b = 0; b < 4; b++) assert_true(g_feat_bits[b] > 0 || g_cases < 2000);
}

/* A family that fails stops its test before it restores the general
 * mix: the next test starts from it. */
static int general_mix(void **st) {
    (void)st;
    g_family = FAM_ALL;
    return 0;
}

int main(int argc, char **argv) {
    fuzz_args(argc, argv, &g_cases, &g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_fuzz_matmul, general_mix),
        cmocka_unit_test_setup(test_fuzz_batch_matmul, general_mix),
        cmocka_unit_test_setup(test_fuzz_conv2d, general_mix),
        cmocka_unit_test_setup(test_fuzz_chain, general_mix),
        cmocka_unit_test_setup(test_fuzz_matmul_bias, general_mix),
        cmocka_unit_test_setup(test_fuzz_loop_nests, general_mix),
        cmocka_unit_test_setup(test_fuzz_locations, general_mix),
        cmocka_unit_test_setup(test_fuzz_workloads, general_mix),
        cmocka_unit_test(test_layout_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
