/* test_user_dynamic.c: workloads of symbolic (dynamic) shape, scheduled
 * for the GPU as a user would, lowered once and run at many sizes (the
 * eighth new-user review).
 *
 * Earlier reviews drew mostly constant shapes; here every buffer's shape
 * names scalar parameters (`A: T.Buffer((n, m), "float32")`), and each
 * accepted schedule is one kernel set that must be right at every size it
 * is run at, the edges included: 0 (an empty tensor, a no-op where every
 * statement lies under the zero-extent blockIdx loop), 1, 2, primes, one
 * less and one more than each split factor.  Workloads: an elementwise
 * map, row sum and row max, a matmul of symbolic M, N and K, a transpose,
 * a 1-D stencil (spelled out and with its producer computed at the
 * consumer's tile), a clamp-to-edge stencil, a lower triangle (a select,
 * and a triangular loop), a prefix sum (a triangular loop over a 1-D
 * input), softmax rows (two reductions and their consumers).  Schedules
 * use split by factors that do not divide, fuse, reorder, bind,
 * cache_read / cache_write, compute_at / reverse_compute_at,
 * compute_inline, vectorize, unroll, rfactor, decompose_reduction,
 * storage_align and parallel.
 *
 * Each size runs four oracles against the interpreter on the unscheduled
 * function: the interpreter on the scheduled function, the lowered kernels
 * in the SIMT simulator (uninitialised reads and global races checked),
 * and their PTX from the direct emitter and from LLVM in the PTX
 * interpreter.  Small-integer inputs make every summation order exact, so
 * the comparison is bit-exact but for T.exp (a relative tolerance).  A
 * primitive's refusal must be clean (sched_fail_ok), a lowering refusal
 * must carry a message; an oracle's run-time error is a failure unless the
 * original also fails at that size.  test_split_overflow,
 * test_loop_bound_overflow and test_guard_overflow check what a symbolic
 * split does near the int32 limit (the launch is refused where a grid
 * extent, a loop bound of the arguments or a guard over a triangular loop
 * may pass int32) without running 2^31 iterations.
 * MINITIR_UD_VERBOSE=1 prints every variant's outcome.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/ir.h"
#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/schedule.h"
#include "minitir/sim.h"
#include "direct_check.h"
#include "sched_check.h"
#include "user_sched.h"

static bool verbose;

/* Counts over the file, printed at the end of each test when verbose. */
static long n_variants, n_refused, n_lower_refused, n_accepted, n_size_runs, n_sim_runs,
    n_direct_runs, n_llvm_runs, n_direct_refused;

/* ------------------------------------------------------------ data */

/* ------------------------------------------------------------ a variant */

/* One schedule variant in progress (user_sched.h), numbered within its
 * test; rtol: T.exp's relative tolerance, else bit-exact. */
typedef user_sched dw;

/* l split by t: outer over blockIdx.x, inner over threadIdx.x. */
static void dw_split_bind(dw *u, tir_loop_rv l, int64_t t, tir_loop_rv *out) {
    us_split(u, l, t, out);
    TRY(u, "bind", tir_sched_bind(u->s, out[0], "blockIdx.x"));
    TRY(u, "bind", tir_sched_bind(u->s, out[1], "threadIdx.x"));
}

/* l split three ways: outer over blockIdx.x, middle over threadIdx.x,
 * the inner (of extent inner) left to the caller. */
static void dw_split3_bind(dw *u, tir_loop_rv l, int64_t mid, int64_t inner, tir_loop_rv *out) {
    us_split3(u, l, mid, inner, out);
    TRY(u, "bind", tir_sched_bind(u->s, out[0], "blockIdx.x"));
    TRY(u, "bind", tir_sched_bind(u->s, out[1], "threadIdx.x"));
}

/* Two split loops a (rows) and b (columns) bound as a 2-D tile: outer
 * parts over blockIdx.y / .x, inner parts over threadIdx.y / .x. */
static void dw_bind_tile(dw *u, const tir_loop_rv *a, const tir_loop_rv *b) {
    TRY(u, "bind", tir_sched_bind(u->s, a[0], "blockIdx.y"));
    TRY(u, "bind", tir_sched_bind(u->s, b[0], "blockIdx.x"));
    TRY(u, "bind", tir_sched_bind(u->s, a[1], "threadIdx.y"));
    TRY(u, "bind", tir_sched_bind(u->s, b[1], "threadIdx.x"));
}

/* The same, reordered to a0 b0 a1 b1 first. */
static void dw_tile(dw *u, const tir_loop_rv *a, const tir_loop_rv *b) {
    TRY(u, "reorder", tir_sched_reorder(u->s, 4, (tir_loop_rv[]){a[0], b[0], a[1], b[1]}));
    dw_bind_tile(u, a, b);
}

/* Block b's output in scope, computed at loop. */
static void dw_scope_at(dw *u, tir_block_rv b, const char *scope, tir_loop_rv loop) {
    TRY(u, "set_scope", tir_sched_set_scope(u->s, b, 0, scope));
    TRY(u, "compute_at", tir_sched_compute_at(u->s, b, loop, false));
}

/* b's read i through a cache in scope (*c), computed at loop. */
static void dw_read_at(dw *u, tir_block_rv b, int i, const char *scope, tir_loop_rv loop,
                       tir_block_rv *c) {
    TRY(u, "cache_read", tir_sched_cache_read(u->s, b, i, scope, 0, NULL, c));
    TRY(u, "compute_at", tir_sched_compute_at(u->s, *c, loop, false));
}

/* b's output through a local cache (*c), written back at loop. */
static void dw_write_local_at(dw *u, tir_block_rv b, tir_loop_rv loop, tir_block_rv *c) {
    TRY(u, "cache_write", tir_sched_cache_write(u->s, b, 0, "local", 0, NULL, c));
    TRY(u, "reverse_compute_at", tir_sched_reverse_compute_at(u->s, *c, loop, false));
}

/* A block computed at a tile (a cache, a producer) fetched by the tile's
 * threads: its innermost loop split by f, the inner part over
 * threadIdx.x. */
static void dw_fetch(dw *u, const char *block, int64_t f) {
    if (u->st != TIR_OK) return;
    tir_loop_rv cl[16], q[2];
    int nc = us_loops(u, block, cl);
    us_split(u, cl[nc - 1], f, q);
    TRY(u, "bind", tir_sched_bind(u->s, q[1], "threadIdx.x"));
}

/* ------------------------------------------------------------ running */

enum { MAXP = 12, NORACLE = 5 };
static const char *oracle_name[NORACLE] = {"interpreter (original)", "interpreter (scheduled)",
                                           "simulator", "direct PTX", "LLVM PTX"};

/* A compiled kernel set by one emitter; n = 0 where it was not compiled
 * (the direct emitter refuses a kernel, or nothing was lowered). */
typedef struct compiled {
    const tir_module *mods[16];
    int n;
} compiled;

static void compile_set(dw *u, const tir_kernel_set *ks, bool direct, compiled *c) {
    c->n = 0;
    if (ks->nkernels > 16) return;
    for (int k = 0; k < ks->nkernels; k++) {
        tir_codegen_opts o;
        tir_codegen_opts_init(&o);
        o.pipeline = direct ? TIR_CG_PIPELINE_DIRECT : TIR_CG_PIPELINE_OPT;
        o.direct_all_loops = o.direct_only = direct;
        if (tir_codegen(u->ctx, ks->kernels[k], &o, &c->mods[k]) != TIR_OK) {
            const char *m = tir_ctx_error(u->ctx);
            if (!direct || !strstr(m, "the direct emitter refuses"))
                FAILF("%s/%d: codegen (%s): %s\nkernel %d:\n%s", u->label, u->variant,
                      direct ? "direct" : "LLVM", m, k, tir_print(u->ctx, ks->kernels[k]));
            if (verbose)
                fprintf(stderr, "  %s/%d: direct emitter refuses: %.200s\n", u->label, u->variant,
                        m);
            tir_ctx_clear_error(u->ctx);
            n_direct_refused++;
            return;
        }
    }
    c->n = ks->nkernels;
}

/* One size: every oracle against the interpreter on the original.  Returns
 * false (with why) on a disagreement or an oracle's error where the
 * original ran. */
static bool run_size(dw *u, const tir_prim_func *f1, const tir_kernel_set *ks, const compiled *cd,
                     const compiled *cl, const int64_t *scalars, char *why, size_t n) {
    tir_ctx *ctx = u->ctx;
    const tir_prim_func *f0 = tir_sched_orig_func(u->s);
    int np = f0->nparams, nw = ks ? ks->nworkspace : 0;
    assert_true(np + nw <= MAXP);
    tir_arg a[NORACLE][MAXP];
    size_t bytes[MAXP] = {0};
    int64_t count[MAXP] = {0};
    uint64_t rng = 11, written = us_written_params(ctx, f0);
    int k = 0;
    for (int i = 0; i < np + nw; i++) {
        const tir_buffer *b = i < np ? f0->buffer_map[i] : ks->workspace[i - np];
        int64_t sc = 0;
        if (i < np && !b) sc = scalars[k++];
        for (int o = 0; o < NORACLE; o++) a[o][i] = (tir_arg){NULL, sc};
    }
    for (int i = 0; i < np + nw; i++) {
        const tir_buffer *b = i < np ? f0->buffer_map[i] : ks->workspace[i - np];
        if (!b) continue;
        count[i] = us_buf_count(ctx, f0, b, scalars);
        if (count[i] < 0) {
            snprintf(why, n, "shape of %s is not constant at this size", b->name);
            for (int j = 0; j < i; j++)
                for (int o = 0; o < NORACLE; o++) free(a[o][j].data);
            return false;
        }
        bytes[i] = (size_t)count[i] * tir_dtype_bytes(b->dtype);
        for (int o = 0; o < NORACLE; o++) {
            a[o][i].data = malloc(bytes[i] + 1);
            assert_non_null(a[o][i].data);
        }
        for (int64_t e = 0; e < count[i]; e++)
            us_store_elem(a[0][i].data, b->dtype, e, (double)((int64_t)(sched_rand(&rng) % 7) - 3));
        if (i >= np || written >> i & 1) tir_rt_poison(a[0][i].data, bytes[i]);
        for (int o = 1; o < NORACLE; o++) memcpy(a[o][i].data, a[0][i].data, bytes[i]);
    }
    bool ok = true, ran[NORACLE] = {false};
    tir_interp_opts io = {.uninit_params = written};
    tir_sim_opts so = {.uninit_params = written, .check_uninit = true, .check_global_races = true};
    char e[1024];
    if (tir_interp_run(ctx, f0, np, a[0], &io) != TIR_OK) {
        /* the original itself stops here: nothing to compare */
        snprintf(why, n, "original: %s", tir_ctx_error(ctx));
        tir_ctx_clear_error(ctx);
        ok = false;
        goto done;
    }
    ran[0] = true;
    /* An element the original leaves unwritten (a reduction over an empty
       domain, K = 0, runs no init and keeps the poison) must stay so: a
       cache_write's write-back and a decomposed init are predicated on the
       domain not being empty (docs/reliability.md), so every byte is
       compared. */
    if (tir_interp_run(ctx, f1, np, a[1], &io) != TIR_OK) {
        snprintf(why, n, "interpreter on the scheduled function: %s", tir_ctx_error(ctx));
        ok = false;
        goto done;
    }
    ran[1] = true;
    if (ks) {
        if (tir_sim_run_kernels(ctx, ks, np, a[2], &so, NULL) != TIR_OK) {
            snprintf(why, n, "simulator: %s", tir_ctx_error(ctx));
            ok = false;
            goto done;
        }
        ran[2] = true;
        n_sim_runs++;
    }
    for (int o = 3; o < NORACLE; o++) {
        const compiled *c = o == 3 ? cd : cl;
        if (!c || !c->n) continue;
        for (int kk = 0; kk < c->n; kk++)
            if (dc_run(ctx, c->mods[kk], a[o], bytes, e, sizeof e)) {
                snprintf(why, n, "%s: %s\n%s", oracle_name[o], e, c->mods[kk]->ptx);
                ok = false;
                goto done;
            }
        ran[o] = true;
        *(o == 3 ? &n_direct_runs : &n_llvm_runs) += 1;
    }
    for (int o = 1; o < NORACLE && ok; o++) {
        if (!ran[o]) continue;
        for (int i = 0; i < np && ok; i++) {
            const tir_buffer *b = f0->buffer_map[i];
            if (!b || !memcmp(a[0][i].data, a[o][i].data, bytes[i])) continue;
            size_t eb = tir_dtype_bytes(b->dtype);
            for (int64_t x = 0; x < count[i] && ok; x++) {
                const char *p0 = (const char *)a[0][i].data + (size_t)x * eb;
                const char *p1 = (const char *)a[o][i].data + (size_t)x * eb;
                if (!memcmp(p0, p1, eb)) continue;
                double y0 = us_load_elem(a[0][i].data, b->dtype, x);
                double y1 = us_load_elem(a[o][i].data, b->dtype, x);
                if (u->rtol > 0 && fabs(y0 - y1) <= u->rtol * (1 + fabs(y0))) continue;
                snprintf(why, n, "%s: buffer %s flat element %lld: original %.9g, here %.9g",
                         oracle_name[o], b->name, (long long)x, y0, y1);
                ok = false;
            }
        }
    }
done:
    for (int i = 0; i < np + nw; i++)
        for (int o = 0; o < NORACLE; o++) free(a[o][i].data);
    return ok;
}

/* A list of sizes: up to 4 scalar parameters per tuple. */
typedef struct sizes {
    int n;
    int64_t v[512][4];
} sizes;

/* MINITIR_UD_WIDE=1: every size 0..300 in 1-D and every pair 0..20 (every
 * triple 0..7) instead of the lists below (a manual sweep, ~50x the
 * runs). */
static bool wide;

/* Ends a variant: a refused one is counted; an accepted one is lowered
 * (or refused with a message), compiled by both emitters and run at every
 * size.  Frees the schedule. */
static void dw_finish(dw *u, const sizes *sz) {
    static char why[1 << 16];
    tir_ctx *ctx = u->ctx;
    n_variants++;
    if (u->st != TIR_OK) {
        n_refused++;
        goto out;
    }
    const tir_prim_func *f1 = tir_sched_func(u->s);
    tir_kernel_set ks;
    const tir_kernel_set *kp = NULL;
    compiled cd = {.n = 0}, cl = {.n = 0};
    if (tir_lower_kernels(ctx, f1, NULL, &ks) != TIR_OK) {
        const char *m = tir_ctx_error(ctx);
        if (!m[0]) FAILF("%s/%d: lowering refused without a message", u->label, u->variant);
        if (verbose)
            fprintf(stderr, "  %s/%d: lowering refused: %.300s\n", u->label, u->variant, m);
        tir_ctx_clear_error(ctx);
        n_lower_refused++;
    } else {
        kp = &ks;
        compile_set(u, &ks, true, &cd);
        compile_set(u, &ks, false, &cl);
        n_accepted++;
    }
    for (int z = 0; z < sz->n; z++) {
        n_size_runs++;
        if (!run_size(u, f1, kp, &cd, &cl, sz->v[z], why, sizeof why)) {
            if (!strncmp(why, "original:", 9) || strstr(why, "not constant at this size")) continue;
            FAILF("%s/%d at (%lld, %lld, %lld): %s\nscheduled:\n%s\ntrace:\n%s\nkernel 0 of "
                  "%d:\n%s",
                  u->label, u->variant, (long long)sz->v[z][0], (long long)sz->v[z][1],
                  (long long)sz->v[z][2], why, tir_print(ctx, f1), tir_sched_trace_text(u->s),
                  kp ? kp->nkernels : 0, kp && kp->nkernels ? tir_print(ctx, kp->kernels[0]) : "");
        }
    }
    if (verbose)
        fprintf(stderr, "  %s/%d: %s, %d sizes\n", u->label, u->variant,
                kp ? (cd.n ? "lowered, both emitters" : "lowered, LLVM only") : "interpreter only",
                sz->n);
out:
    tir_sched_destroy(u->s);
    u->s = NULL;
}

static void dw_start(dw *u, tir_ctx *ctx, const char *text, const char *label, int variant,
                     double rtol) {
    memset(u, 0, sizeof *u);
    u->ctx = ctx;
    u->label = label;
    u->variant = variant;
    u->rtol = rtol;
    u->verbose = verbose;
    if (tir_sched_create(ctx, us_parse(ctx, text), &u->s) != TIR_OK)
        FAILF("%s: sched_create: %s", label, tir_ctx_error(ctx));
}

static void report(const char *name) {
    if (verbose)
        fprintf(
            stderr,
            "%s (cumulative): %ld variants, %ld refused by a primitive, %ld by lowering, "
            "%ld lowered; %ld size runs, %ld simulated, %ld direct PTX, %ld LLVM PTX "
            "(direct emitter refused %ld sets)\n",
            name, n_variants, n_refused, n_lower_refused, n_accepted, n_size_runs, n_sim_runs,
            n_direct_runs, n_llvm_runs, n_direct_refused);
}

/* The sizes of one symbolic parameter: the edges and around the factors
 * the schedules split by (2, 3, 4, 7, 8, 16, 32, 64). */
static const int64_t one_d[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,   13,  15,  16,
                                17, 31, 32, 33, 37, 63, 64, 65, 97, 127, 128, 129, 257};

static sizes sizes_1d(int64_t cap) {
    sizes s = {0};
    if (wide) {
        for (int64_t n = 0; n <= 300 && n <= cap && s.n < 512; n++) s.v[s.n++][0] = n;
        return s;
    }
    for (size_t i = 0; i < sizeof one_d / sizeof *one_d && s.n < 64; i++)
        if (one_d[i] <= cap) s.v[s.n++][0] = one_d[i];
    return s;
}

/* Pairs (and triples) from a short list, every combination of the edges
 * and a few of the rest. */
static sizes sizes_nd(int dims, int64_t cap) {
    static const int64_t vals[] = {0, 1, 2, 3, 5, 7, 8, 9, 17, 31, 33};
    int nv = (int)(sizeof vals / sizeof *vals);
    sizes s = {0};
    if (wide) {
        int64_t top = dims > 2 ? 7 : 20;
        for (int64_t i = 0; i <= top; i++)
            for (int64_t j = 0; j <= top; j++)
                for (int64_t k = 0; k <= (dims > 2 ? top : 0); k++)
                    if (s.n < 512)
                        memcpy(s.v[s.n++], (int64_t[4]){i, j, k, 0}, 4 * sizeof(int64_t));
        return s;
    }
    uint64_t rng = 99;
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++)
            for (int k = 0; k < (dims > 2 ? nv : 1); k++) {
                int64_t t[3] = {vals[i], vals[j], vals[k]};
                bool edge = t[0] <= 1 || t[1] <= 1 || (dims > 2 && t[2] <= 1);
                if (t[0] > cap || t[1] > cap || t[2] > cap) continue;
                /* every tuple with an edge, a third of the others */
                if (!edge && sched_rand(&rng) % 3) continue;
                if (dims > 2 && sched_rand(&rng) % 4) continue;
                if (s.n >= 64) return s;
                memcpy(s.v[s.n++], t, sizeof t);
            }
    return s;
}

/* ------------------------------------------------------------ workloads */

static const char *ew_text =
    "@T.prim_func\n"
    "def ew(A: T.Buffer((n, m), \"float32\"), B: T.Buffer((n, m), \"float32\"), n: T.int32,\n"
    "       m: T.int32):\n"
    "    for i, j in T.grid(n, m):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(A[vi, vj])\n"
    "            T.writes(B[vi, vj])\n"
    "            B[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)\n";

static const char *ew1_text =
    "@T.prim_func\n"
    "def ew1(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    for i in T.serial(n):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(n, i)\n"
    "            T.reads(A[vi])\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = A[vi] * T.float32(3) - T.float32(1)\n";

/* Two stages over a symbolic n: B an intermediate of shape (n,). */
static const char *chain_text =
    "@T.prim_func\n"
    "def ch(A: T.Buffer((n,), \"float32\"), C: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((n,), \"float32\")\n"
    "        for i in T.serial(n):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(n, i)\n"
    "                T.reads(A[vi])\n"
    "                T.writes(B[vi])\n"
    "                B[vi] = A[vi] * T.float32(2)\n"
    "        for i in T.serial(n):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.spatial(n, i)\n"
    "                T.reads(B[vi])\n"
    "                T.writes(C[vi])\n"
    "                C[vi] = B[vi] + T.float32(1)\n";

/* The row sum and row max (filled in by setup). */
static char rowsum_text[1024], rowmax_text[1024];

static const char *matmul_text =
    "@T.prim_func\n"
    "def mm(A: T.Buffer((M, K), \"float32\"), B: T.Buffer((K, N), \"float32\"),\n"
    "       C: T.Buffer((M, N), \"float32\"), M: T.int32, N: T.int32, K: T.int32):\n"
    "    for i, j, k in T.grid(M, N, K):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
    "            T.reads(A[vi, vk], B[vk, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n";

static const char *transpose_text =
    "@T.prim_func\n"
    "def tr(A: T.Buffer((n, m), \"float32\"), B: T.Buffer((m, n), \"float32\"), n: T.int32,\n"
    "       m: T.int32):\n"
    "    for j, i in T.grid(m, n):\n"
    "        with T.block(\"B\"):\n"
    "            vj, vi = T.axis.remap(\"SS\", [j, i])\n"
    "            T.reads(A[vi, vj])\n"
    "            T.writes(B[vj, vi])\n"
    "            B[vj, vi] = A[vi, vj]\n";

static const char *stencil_text =
    "@T.prim_func\n"
    "def st(A: T.Buffer((n + 2,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    for i in T.serial(n):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(n, i)\n"
    "            T.reads(A[vi:vi + 3])\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = A[vi] + A[vi + 1] * T.float32(2) + A[vi + 2]\n";

/* The stencil's producer a block of its own, over a symbolic shape. */
static const char *stencil2_text =
    "@T.prim_func\n"
    "def st2(A: T.Buffer((n + 2,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    with T.block(\"root\"):\n"
    "        P = T.alloc_buffer((n + 2,), \"float32\")\n"
    "        for i in T.serial(n + 2):\n"
    "            with T.block(\"P\"):\n"
    "                vi = T.axis.spatial(n + 2, i)\n"
    "                T.reads(A[vi])\n"
    "                T.writes(P[vi])\n"
    "                P[vi] = A[vi] * T.float32(3)\n"
    "        for i in T.serial(n):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(n, i)\n"
    "                T.reads(P[vi:vi + 3])\n"
    "                T.writes(B[vi])\n"
    "                B[vi] = P[vi] - P[vi + 1] + P[vi + 2]\n";

static const char *clamp_text =
    "@T.prim_func\n"
    "def cl(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    for i in T.serial(n):\n"
    "        with T.block(\"B\"):\n"
    "            vi = T.axis.spatial(n, i)\n"
    "            T.reads(A[0:n])\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = A[T.max(vi - 1, 0)] + A[vi] * T.float32(2) + A[T.min(vi + 1, n - 1)]\n";

static const char *lower_tri_text =
    "@T.prim_func\n"
    "def tril(A: T.Buffer((n, n), \"float32\"), B: T.Buffer((n, n), \"float32\"), n: T.int32):\n"
    "    for i, j in T.grid(n, n):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(A[vi, vj])\n"
    "            T.writes(B[vi, vj])\n"
    "            B[vi, vj] = T.Select(vj <= vi, A[vi, vj], T.float32(0))\n";

/* A triangular loop: row i sums A[i, 0..i]. */
static const char *tri_loop_text =
    "@T.prim_func\n"
    "def trs(A: T.Buffer((n, n), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    for i in T.serial(n):\n"
    "        with T.block(\"B0\"):\n"
    "            vi = T.axis.spatial(n, i)\n"
    "            T.reads()\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = T.float32(0)\n"
    "        for k in T.serial(i + 1):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(n, i)\n"
    "                vk = T.axis.reduce(n, k)\n"
    "                T.reads(B[vi], A[vi, vk])\n"
    "                T.writes(B[vi])\n"
    "                B[vi] = B[vi] + A[vi, vk]\n";

/* A prefix sum: B[i] sums A[0..i] (a triangular loop over a 1-D input, so
 * that no flattened index of an (n, n) buffer wraps first). */
static const char *prefix_text =
    "@T.prim_func\n"
    "def pfx(A: T.Buffer((n,), \"float32\"), B: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    for i in T.serial(n):\n"
    "        with T.block(\"B0\"):\n"
    "            vi = T.axis.spatial(n, i)\n"
    "            T.reads()\n"
    "            T.writes(B[vi])\n"
    "            B[vi] = T.float32(0)\n"
    "        for k in T.serial(i + 1):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.spatial(n, i)\n"
    "                vk = T.axis.reduce(n, k)\n"
    "                T.reads(B[vi], A[vk])\n"
    "                T.writes(B[vi])\n"
    "                B[vi] = B[vi] + A[vk]\n";

static const char *softmax_text =
    "@T.prim_func\n"
    "def sm(A: T.Buffer((n, m), \"float32\"), O: T.Buffer((n, m), \"float32\"), n: T.int32,\n"
    "       m: T.int32):\n"
    "    with T.block(\"root\"):\n"
    "        Mx = T.alloc_buffer((n,), \"float32\")\n"
    "        S = T.alloc_buffer((n,), \"float32\")\n"
    "        for i, k in T.grid(n, m):\n"
    "            with T.block(\"Mx\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(Mx[vi])\n"
    "                with T.init():\n"
    "                    Mx[vi] = T.float32(-100)\n"
    "                Mx[vi] = T.max(Mx[vi], A[vi, vk])\n"
    "        for i, k in T.grid(n, m):\n"
    "            with T.block(\"S\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                T.reads(A[vi, vk], Mx[vi])\n"
    "                T.writes(S[vi])\n"
    "                with T.init():\n"
    "                    S[vi] = T.float32(0)\n"
    "                S[vi] = S[vi] + T.exp(A[vi, vk] - Mx[vi])\n"
    "        for i, k in T.grid(n, m):\n"
    "            with T.block(\"O\"):\n"
    "                vi, vk = T.axis.remap(\"SS\", [i, k])\n"
    "                T.reads(A[vi, vk], Mx[vi], S[vi])\n"
    "                T.writes(O[vi, vk])\n"
    "                O[vi, vk] = T.exp(A[vi, vk] - Mx[vi]) / S[vi]\n";

/* ------------------------------------------------------------ tests */

static tir_ctx *g_ctx;

static int setup(void **state) {
    (void)state;
    g_ctx = tir_ctx_create();
    us_rowred_text(rowsum_text, "rowsum", "0", "B[vi] + A[vi, vk]");
    us_rowred_text(rowmax_text, "rowmax", "-100", "T.max(B[vi], A[vi, vk])");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tir_ctx_destroy(g_ctx);
    return 0;
}

/* A test's variants: for each factor of facs (one pass with f = 0 where
 * nfacs is 0), kinds 0..nkinds-1, numbered from v0 in that order; each
 * started on text (texts[kind] where given) labelled label (labels[kind]),
 * scheduled by sched and run at the sizes sz.  Returns the next number. */
typedef struct dw_variants {
    const char *text, *label;
    const char *const *texts, *const *labels;
    const int64_t *facs;
    int nfacs, nkinds;
    double rtol;
    void (*sched)(dw *u, int kind, int64_t f);
} dw_variants;

static int dw_sweep(const dw_variants *w, int v0, const sizes *sz) {
    int v = v0;
    for (int fi = 0; fi < (w->nfacs ? w->nfacs : 1); fi++)
        for (int kind = 0; kind < w->nkinds; kind++, v++) {
            dw u;
            dw_start(&u, g_ctx, w->texts ? w->texts[kind] : w->text,
                     w->labels ? w->labels[kind] : w->label, v, w->rtol);
            w->sched(&u, kind, w->nfacs ? w->facs[fi] : 0);
            dw_finish(&u, sz);
        }
    return v;
}

/* Elementwise maps: 1-D and 2-D, split raggedly, fused, vectorized,
 * unrolled, through caches: ew1 (1-D) split by f in six ways. */
static void ew1_sched(dw *u, int kind, int64_t f) {
    tir_loop_rv l[16], p[3];
    tir_block_rv b = us_block(u, "B"), c;
    us_loops(u, "B", l);
    switch (kind) {
    case 0: /* blocks of f threads */
        dw_split_bind(u, l[0], f, p);
        break;
    case 1: /* three levels, the innermost vectorized */
        dw_split3_bind(u, l[0], f, 4, p);
        TRY(u, "vectorize", tir_sched_vectorize(u->s, p[2]));
        break;
    case 2: /* unrolled inner part, output through registers */
        dw_split3_bind(u, l[0], f, 3, p);
        TRY(u, "unroll", tir_sched_unroll(u->s, p[2]));
        dw_write_local_at(u, b, p[1], &c);
        break;
    case 3: /* input through shared memory at the block loop */
        dw_split_bind(u, l[0], f, p);
        dw_read_at(u, b, 0, "shared", p[0], &c);
        dw_fetch(u, "A_shared", f);
        break;
    case 4: /* vectorized by f directly (symbolic outer) */
        us_split(u, l[0], f, p);
        TRY(u, "bind", tir_sched_bind(u->s, p[0], "blockIdx.x"));
        TRY(u, "vectorize", tir_sched_vectorize(u->s, p[1]));
        break;
    case 5: /* the CPU-side schedule: parallel outer, vector inner */
        us_split(u, l[0], f, p);
        TRY(u, "parallel", tir_sched_parallel(u->s, p[0]));
        TRY(u, "vectorize", tir_sched_vectorize(u->s, p[1]));
        break;
    }
}

/* ew (2-D) in nine ways. */
static void ew_sched(dw *u, int kind, int64_t f) {
    tir_loop_rv l[16], p[3], fu = {0, 0};
    tir_block_rv b = us_block(u, "B"), c;
    us_loops(u, "B", l);
    switch (kind) {
    case 0: /* fused, then 1-D */
        TRY(u, "fuse", tir_sched_fuse(u->s, 2, l, &fu));
        dw_split_bind(u, fu, 32, p);
        break;
    case 1: /* 2-D tiles */
    {
        tir_loop_rv q[2];
        us_split(u, l[0], 4, p);
        us_split(u, l[1], 8, q);
        dw_tile(u, p, q);
    } break;
    case 2: /* fused, three levels, vectorized */
        TRY(u, "fuse", tir_sched_fuse(u->s, 2, l, &fu));
        dw_split3_bind(u, fu, 16, 4, p);
        TRY(u, "vectorize", tir_sched_vectorize(u->s, p[2]));
        break;
    case 3: /* rows over blocks, columns split, through a shared cache with storage_align */
        us_split(u, l[1], 7, p);
        TRY(u, "bind", tir_sched_bind(u->s, l[0], "blockIdx.x"));
        TRY(u, "bind", tir_sched_bind(u->s, p[1], "threadIdx.x"));
        dw_read_at(u, b, 0, "shared", l[0], &c);
        TRY(u, "storage_align", tir_sched_storage_align(u->s, c, 0, 0, 8, 1));
        break;
    case 4: /* fused, split, unrolled inner, output via local */
        TRY(u, "fuse", tir_sched_fuse(u->s, 2, l, &fu));
        dw_split3_bind(u, fu, 8, 5, p);
        TRY(u, "unroll", tir_sched_unroll(u->s, p[2]));
        dw_write_local_at(u, b, p[1], &c);
        break;
    case 5: /* reorder j outer, then tile */
        TRY(u, "reorder", tir_sched_reorder(u->s, 2, (tir_loop_rv[]){l[1], l[0]}));
        dw_split_bind(u, l[1], 3, p);
        {
            tir_loop_rv q[2];
            us_split(u, l[0], 5, q);
            TRY(u, "bind", tir_sched_bind(u->s, q[0], "blockIdx.y"));
            TRY(u, "bind", tir_sched_bind(u->s, q[1], "threadIdx.y"));
        }
        break;
    case 6: /* one thread per row, columns vectorized by 4 (symbolic outer) */
        dw_split_bind(u, l[0], 8, p);
        {
            tir_loop_rv q[2];
            us_split(u, l[1], 4, q);
            TRY(u, "vectorize", tir_sched_vectorize(u->s, q[1]));
        }
        break;
    case 8: /* unroll a loop of symbolic extent (m) inside the thread */
        dw_split_bind(u, l[0], 8, p);
        TRY(u, "unroll", tir_sched_unroll(u->s, l[1]));
        break;
    case 7: /* vectorize a symbolic extent: refused or right */
        TRY(u, "bind", tir_sched_bind(u->s, l[0], "blockIdx.x"));
        TRY(u, "vectorize", tir_sched_vectorize(u->s, l[1]));
        break;
    }
}

static void test_elementwise(void **state) {
    (void)state;
    sizes s1 = sizes_1d(1000), s2 = sizes_nd(2, 40);
    static const int64_t facs[] = {1, 2, 3, 4, 7, 8, 32, 64};
    int v = dw_sweep(&(dw_variants){.text = ew1_text,
                                    .label = "ew1",
                                    .facs = facs,
                                    .nfacs = 8,
                                    .nkinds = 6,
                                    .sched = ew1_sched},
                     0, &s1);
    dw_sweep(&(dw_variants){.text = ew_text, .label = "ew", .nkinds = 9, .sched = ew_sched}, v,
             &s2);
    report("elementwise");
}

/* A producer and its consumer over a symbolic n: the intermediate in
 * registers or shared memory at a tile (compaction gives it a constant
 * size), reverse_compute_at, compute_inline, and an unrolled loop of
 * symbolic extent. */
static void chain_sched(dw *u, int kind, int64_t f) {
    tir_loop_rv l[16], p[3];
    tir_block_rv b = us_block(u, "B"), c = us_block(u, "C");
    us_loops(u, "C", l);
    switch (kind) {
    case 0: /* B in a register at C's thread */
        dw_split_bind(u, l[0], f, p);
        dw_scope_at(u, b, "local", p[1]);
        break;
    case 1: /* B in shared memory at C's block, computed by its threads */
        dw_split_bind(u, l[0], f, p);
        dw_scope_at(u, b, "shared", p[0]);
        dw_fetch(u, "B", f);
        break;
    case 2: /* C under B's thread loop, B local */
        us_loops(u, "B", l);
        dw_split_bind(u, l[0], f, p);
        TRY(u, "set_scope", tir_sched_set_scope(u->s, b, 0, "local"));
        TRY(u, "reverse_compute_at", tir_sched_reverse_compute_at(u->s, c, p[1], false));
        break;
    case 3: /* B inlined, three levels, the inner unrolled */
        TRY(u, "compute_inline", tir_sched_compute_inline(u->s, b));
        dw_split3_bind(u, l[0], f, 3, p);
        TRY(u, "unroll", tir_sched_unroll(u->s, p[2]));
        break;
    case 4: /* B inlined, C's outer loop (of symbolic extent) unrolled inside one
               block of f threads (a pragma: refused or right) */
    {
        tir_loop_rv one[2];
        us_split(u, l[0], f, p);
        TRY(u, "split", tir_sched_split(u->s, p[0], 2, (const int64_t[]){1, TIR_SPLIT_INFER}, one));
        TRY(u, "reorder", tir_sched_reorder(u->s, 3, (tir_loop_rv[]){one[0], p[1], one[1]}));
        TRY(u, "bind", tir_sched_bind(u->s, one[0], "blockIdx.x"));
        TRY(u, "bind", tir_sched_bind(u->s, p[1], "threadIdx.x"));
        TRY(u, "unroll", tir_sched_unroll(u->s, one[1]));
        TRY(u, "compute_inline", tir_sched_compute_inline(u->s, b));
    } break;
    case 5: /* B through a local cache at its own thread, C reverse-computed there */
    {
        tir_block_rv bl;
        us_loops(u, "B", l);
        dw_split_bind(u, l[0], f, p);
        TRY(u, "set_scope", tir_sched_set_scope(u->s, b, 0, "local"));
        dw_read_at(u, b, 0, "local", p[1], &bl);
        TRY(u, "reverse_compute_at", tir_sched_reverse_compute_at(u->s, c, p[1], false));
    } break;
    }
}

static void test_chain(void **state) {
    (void)state;
    sizes s1 = sizes_1d(300);
    static const int64_t facs[] = {1, 3, 8, 32};
    dw_sweep(&(dw_variants){.text = chain_text,
                            .label = "chain",
                            .facs = facs,
                            .nfacs = 4,
                            .nkinds = 6,
                            .sched = chain_sched},
             0, &s1);
    report("chain");
}

/* Row sum and row max: a thread per row, rfactor across threads,
 * decompose_reduction, a local accumulator, split k raggedly. */
static void rows_sched(dw *u, int kind, int64_t f) {
    tir_loop_rv l[16], p[3], q[3];
    tir_block_rv b = us_block(u, "B"), c, rf;
    us_loops(u, "B", l);
    switch (kind) {
    case 0: /* a thread per row */
        dw_split_bind(u, l[0], 8, p);
        break;
    case 1: /* k split, inner unrolled, init decomposed, local accumulator */
        dw_split_bind(u, l[0], 4, p);
        us_split(u, l[1], 3, q);
        TRY(u, "unroll", tir_sched_unroll(u->s, q[1]));
        dw_write_local_at(u, b, p[1], &c);
        TRY(u, "decompose_reduction", tir_sched_decompose_reduction(u->s, b, q[0], &rf));
        break;
    case 2: /* rfactor over the inner k split: partial sums per lane */
        us_split(u, l[1], 8, q);
        TRY(u, "rfactor", tir_sched_rfactor(u->s, q[1], 0, &rf));
        if (u->st == TIR_OK) {
            tir_loop_rv r[16];
            us_loops(u, "B_rf", r);
            TRY(u, "bind", tir_sched_bind(u->s, r[0], "blockIdx.x"));
            TRY(u, "bind", tir_sched_bind(u->s, r[1], "threadIdx.x"));
            TRY(u, "reverse_compute_at", tir_sched_reverse_compute_at(u->s, b, r[0], false));
        }
        break;
    case 3: /* rfactor over the outer k split */
        us_split(u, l[1], 5, q);
        TRY(u, "rfactor", tir_sched_rfactor(u->s, q[0], 0, &rf));
        if (u->st == TIR_OK) {
            tir_loop_rv r[16];
            us_loops(u, "B_rf", r);
            TRY(u, "fuse", tir_sched_fuse(u->s, 2, r, &p[0]));
            dw_split_bind(u, p[0], 16, q);
            us_loops(u, "B", r);
            dw_split_bind(u, r[0], 4, p);
        }
        break;
    case 4: /* the input row through shared memory at the block loop */
        TRY(u, "bind", tir_sched_bind(u->s, l[0], "blockIdx.x"));
        dw_read_at(u, b, 0, "shared", l[0], &c);
        break;
    case 5: /* k split three ways, the middle reordered outside the row */
        us_split3(u, l[1], 4, 2, q);
        TRY(u, "reorder", tir_sched_reorder(u->s, 2, (tir_loop_rv[]){q[0], l[0]}));
        dw_split_bind(u, l[0], 8, p);
        break;
    case 6: /* decompose at the row loop, init and update in one kernel */
        dw_split_bind(u, l[0], 16, p);
        TRY(u, "decompose_reduction", tir_sched_decompose_reduction(u->s, b, l[1], &rf));
        break;
    case 7: /* parallel rows (a CPU schedule) */
        TRY(u, "parallel", tir_sched_parallel(u->s, l[0]));
        us_split(u, l[1], 4, q);
        TRY(u, "unroll", tir_sched_unroll(u->s, q[1]));
        break;
    }
}

static void test_rows(void **state) {
    (void)state;
    sizes s2 = sizes_nd(2, 40);
    dw_sweep(
        &(dw_variants){.text = rowsum_text, .label = "rowsum", .nkinds = 8, .sched = rows_sched}, 0,
        &s2);
    dw_sweep(
        &(dw_variants){.text = rowmax_text, .label = "rowmax", .nkinds = 8, .sched = rows_sched}, 0,
        &s2);
    report("rows");
}

/* Matmul of symbolic M, N, K: tiles over blocks and threads, a local
 * accumulator, shared caches of A and B at the k tile loop. */
static void matmul_sched(dw *u, int kind, int64_t f) {
    tir_loop_rv l[16], ip[3], jp[3], kp[2];
    tir_block_rv b = us_block(u, "C"), c, ca, cb, bi;
    us_loops(u, "C", l);
    int64_t ti = kind == 3 ? 3 : 4, tj = kind == 3 ? 5 : 8, tk = kind == 3 ? 7 : 4;
    us_split(u, l[0], ti, ip);
    us_split(u, l[1], tj, jp);
    if (kind == 0) {
        dw_tile(u, ip, jp);
    } else {
        us_split(u, l[2], tk, kp);
        TRY(u, "reorder",
            tir_sched_reorder(u->s, 6, (tir_loop_rv[]){ip[0], jp[0], ip[1], jp[1], kp[0], kp[1]}));
        dw_bind_tile(u, ip, jp);
        dw_write_local_at(u, b, jp[1], &c);
        if (kind >= 2) {
            dw_read_at(u, b, 0, "shared", kp[0], &ca);
            dw_read_at(u, b, 1, "shared", kp[0], &cb);
            if (kind >= 4 && u->st == TIR_OK) {
                /* cooperative fetch over the threads */
                const char *nm[2] = {"A_shared", "B_shared"};
                for (int t = 0; t < 2; t++) {
                    tir_loop_rv fl[16], fu, fp[3];
                    int nf = us_loops(u, nm[t], fl);
                    TRY(u, "fuse", tir_sched_fuse(u->s, 2, fl + nf - 2, &fu));
                    us_split3(u, fu, ti, tj, fp);
                    TRY(u, "bind", tir_sched_bind(u->s, fp[1], "threadIdx.y"));
                    TRY(u, "bind", tir_sched_bind(u->s, fp[2], "threadIdx.x"));
                }
                if (kind == 5)
                    TRY(u, "storage_align", tir_sched_storage_align(u->s, ca, 0, 0, 16, 1));
            }
        }
        TRY(u, "unroll", tir_sched_unroll(u->s, kp[1]));
        TRY(u, "decompose_reduction", tir_sched_decompose_reduction(u->s, b, kp[0], &bi));
    }
}

static void test_matmul(void **state) {
    (void)state;
    sizes s3 = sizes_nd(3, 33);
    dw_sweep(&(dw_variants){.text = matmul_text, .label = "mm", .nkinds = 6, .sched = matmul_sched},
             0, &s3);
    report("matmul");
}

/* Transpose: through a shared tile, with storage_align; fused. */
static void transpose_sched(dw *u, int kind, int64_t f) {
    tir_loop_rv l[16], jp[2], ip[2], fu;
    tir_block_rv b = us_block(u, "B"), c;
    us_loops(u, "B", l);
    if (kind == 3) {
        TRY(u, "fuse", tir_sched_fuse(u->s, 2, l, &fu));
        dw_split_bind(u, fu, 7, jp);
    } else {
        us_split(u, l[0], 8, jp);
        us_split(u, l[1], 4, ip);
        dw_tile(u, jp, ip);
        if (kind >= 1) {
            dw_read_at(u, b, 0, "shared", ip[0], &c);
            if (kind == 2) TRY(u, "storage_align", tir_sched_storage_align(u->s, c, 0, 0, 8, 1));
            if (u->st == TIR_OK) {
                tir_loop_rv fl[16], fp[2];
                int nf = us_loops(u, "A_shared", fl);
                TRY(u, "fuse", tir_sched_fuse(u->s, 2, fl + nf - 2, &fu));
                us_split(u, fu, 32, fp);
                TRY(u, "bind", tir_sched_bind(u->s, fp[1], "threadIdx.x"));
            }
        }
    }
}

static void test_transpose(void **state) {
    (void)state;
    sizes s2 = sizes_nd(2, 40);
    dw_sweep(
        &(dw_variants){
            .text = transpose_text, .label = "tr", .nkinds = 4, .sched = transpose_sched},
        0, &s2);
    report("transpose");
}

/* Stencils: spelled out, with a producer computed at the tile (its region
 * n + 2 wide, the tile's 3 more than its width), and clamp-to-edge. */
static void stencils_sched(dw *u, int kind, int64_t f) {
    tir_loop_rv l[16], p[3];
    tir_block_rv b = us_block(u, "B"), c;
    us_loops(u, "B", l);
    switch (kind) {
    case 0:
        dw_split_bind(u, l[0], f, p);
        break;
    case 1: /* the input through shared memory at the block */
        dw_split_bind(u, l[0], f, p);
        dw_read_at(u, b, 0, "shared", p[0], &c);
        dw_fetch(u, "A_shared", f);
        break;
    case 2: /* P inlined */
        TRY(u, "compute_inline", tir_sched_compute_inline(u->s, us_block(u, "P")));
        dw_split_bind(u, l[0], f, p);
        break;
    case 3: /* P in shared memory at the block, fetched by the threads */
        dw_split_bind(u, l[0], f, p);
        dw_scope_at(u, us_block(u, "P"), "shared", p[0]);
        dw_fetch(u, "P", f);
        break;
    case 4: /* P in registers at the thread, unrolled */
        dw_split_bind(u, l[0], f, p);
        dw_scope_at(u, us_block(u, "P"), "local", p[1]);
        if (u->st == TIR_OK) {
            tir_loop_rv cl[16];
            int nc = us_loops(u, "P", cl);
            TRY(u, "unroll", tir_sched_unroll(u->s, cl[nc - 1]));
        }
        break;
    case 5: /* clamp, split and bound */
        dw_split_bind(u, l[0], f, p);
        break;
    case 6: /* clamp, vectorized inner */
        dw_split3_bind(u, l[0], f, 4, p);
        TRY(u, "vectorize", tir_sched_vectorize(u->s, p[2]));
        break;
    }
}

static void test_stencils(void **state) {
    (void)state;
    sizes s1 = sizes_1d(300);
    static const int64_t facs[] = {2, 3, 8, 32};
    const char *texts[] = {stencil_text,  stencil_text, stencil2_text, stencil2_text,
                           stencil2_text, clamp_text,   clamp_text};
    const char *labels[] = {"stencil",  "stencil", "stencil2", "stencil2",
                            "stencil2", "clamp",   "clamp"};
    dw_sweep(&(dw_variants){.texts = texts,
                            .labels = labels,
                            .facs = facs,
                            .nfacs = 4,
                            .nkinds = 7,
                            .sched = stencils_sched},
             0, &s1);
    report("stencils");
}

/* Triangles: a select on vj <= vi, and a triangular loop. */
static void triangles_sched(dw *u, int kind, int64_t f) {
    tir_loop_rv l[16], p[3], q[3], fu;
    us_loops(u, kind < 3 ? "B" : "B0", l);
    switch (kind) {
    case 0:
        TRY(u, "fuse", tir_sched_fuse(u->s, 2, l, &fu));
        dw_split_bind(u, fu, 9, p);
        break;
    case 1:
        us_split(u, l[0], 3, p);
        us_split(u, l[1], 4, q);
        TRY(u, "reorder", tir_sched_reorder(u->s, 4, (tir_loop_rv[]){p[0], q[0], p[1], q[1]}));
        TRY(u, "bind", tir_sched_bind(u->s, p[0], "blockIdx.y"));
        TRY(u, "bind", tir_sched_bind(u->s, q[0], "blockIdx.x"));
        TRY(u, "bind", tir_sched_bind(u->s, p[1], "threadIdx.y"));
        TRY(u, "vectorize", tir_sched_vectorize(u->s, q[1]));
        break;
    case 2:
        TRY(u, "bind", tir_sched_bind(u->s, l[0], "blockIdx.x"));
        us_split(u, l[1], 2, q);
        TRY(u, "bind", tir_sched_bind(u->s, q[0], "threadIdx.x"));
        TRY(u, "unroll", tir_sched_unroll(u->s, q[1]));
        break;
    case 3:
        dw_split_bind(u, l[0], 4, p);
        break;
    case 4:
        dw_split_bind(u, l[0], 3, p);
        if (u->st == TIR_OK) {
            tir_loop_rv r[16];
            int nr = us_loops(u, "B", r);
            us_split(u, r[nr - 1], 2, q);
            TRY(u, "unroll", tir_sched_unroll(u->s, q[1]));
        }
        break;
    case 5:
        TRY(u, "parallel", tir_sched_parallel(u->s, l[0]));
        break;
    case 6: /* a row per block, the triangular k loop split by 3 */
    case 7: /* rows split by 4 over the threads, k split by 3 */
        dw_split_bind(u, l[0], kind == 6 ? 1 : 4, p);
        if (u->st == TIR_OK) {
            tir_loop_rv r[16];
            int nr = us_loops(u, "B", r);
            us_split(u, r[nr - 1], 3, q);
        }
        break;
    }
}

static void test_triangles(void **state) {
    (void)state;
    sizes s1 = sizes_1d(40);
    const char *texts[] = {lower_tri_text, lower_tri_text, lower_tri_text, tri_loop_text,
                           tri_loop_text,  tri_loop_text,  prefix_text,    prefix_text};
    const char *labels[] = {"tril", "tril", "tril", "trs", "trs", "trs", "pfx", "pfx"};
    dw_sweep(
        &(dw_variants){.texts = texts, .labels = labels, .nkinds = 8, .sched = triangles_sched}, 0,
        &s1);
    report("triangles");
}

/* Softmax rows: two reductions and their consumer (intermediates of
 * symbolic shape: the GPU refuses those not compacted to a tile). */
static void softmax_sched(dw *u, int kind, int64_t f) {
    tir_loop_rv l[16], p[3];
    tir_block_rv mx = us_block(u, "Mx"), sb = us_block(u, "S");
    us_loops(u, "O", l);
    switch (kind) {
    case 0: /* a block per row, reductions at it in shared memory */
        TRY(u, "bind", tir_sched_bind(u->s, l[0], "blockIdx.x"));
        us_split(u, l[1], 8, p);
        TRY(u, "bind", tir_sched_bind(u->s, p[1], "threadIdx.x"));
        dw_scope_at(u, sb, "shared", l[0]);
        dw_scope_at(u, mx, "shared", l[0]);
        break;
    case 1: /* a thread per row, reductions in registers */
        dw_split_bind(u, l[0], 4, p);
        dw_scope_at(u, sb, "local", p[1]);
        dw_scope_at(u, mx, "local", p[1]);
        break;
    case 2: /* interpreter only: reorder and decompose in place */
    {
        tir_loop_rv m[16], bi;
        (void)bi;
        us_loops(u, "S", m);
        us_split(u, m[1], 3, p);
        tir_block_rv ib;
        TRY(u, "decompose_reduction", tir_sched_decompose_reduction(u->s, sb, p[0], &ib));
    } break;
    case 3: /* Mx at S's row loop, S at O's row loop */
    {
        tir_loop_rv m[16];
        TRY(u, "compute_at", tir_sched_compute_at(u->s, sb, l[0], false));
        us_loops(u, "S", m);
        TRY(u, "compute_at", tir_sched_compute_at(u->s, mx, m[0], false));
    } break;
    case 4: /* O's row loop split, the reductions at the inner row loop */
        us_split(u, l[0], 3, p);
        TRY(u, "bind", tir_sched_bind(u->s, p[0], "blockIdx.x"));
        TRY(u, "bind", tir_sched_bind(u->s, p[1], "threadIdx.x"));
        dw_scope_at(u, sb, "local", p[1]);
        dw_scope_at(u, mx, "local", p[1]);
        break;
    }
}

static void test_softmax(void **state) {
    (void)state;
    sizes s2 = sizes_nd(2, 33);
    dw_sweep(&(dw_variants){.text = softmax_text,
                            .label = "softmax",
                            .nkinds = 5,
                            .rtol = 1e-5,
                            .sched = softmax_sched},
             0, &s2);
    report("softmax");
}

/* Splits of a symbolic extent near the int32 limit, without running 2^31
 * iterations.  ew1 split by 3 over blockIdx.x / threadIdx.x launches
 * (n + 2) // 3 blocks, and the kernel computes the index i_0 * 3 + i_1 in
 * int32.  tir_launch_eval_extent evaluated the grid in int64 only, so at
 * n = INT32_MAX it launched 715827883 blocks, and the last one's index
 * 2147483648 wrapped to INT32_MIN, which passes the guard `< n` (a store
 * 8 GiB below B on a GPU; the simulator evaluates the grid alike).  The
 * grid is now refused wherever a value of the extent passes its dtype;
 * where it is accepted the largest index fits.  Checked through the
 * module (tir_module_launch_dims: the runtime, dc_run) and the kernel's
 * launch extents (tir_launch_eval_extent: the simulator) for factors 3,
 * 7, 8 and 32 at sizes up to INT32_MAX, and an int32 parameter given a
 * value past INT32_MAX is refused. */
static void test_split_overflow(void **state) {
    (void)state;
    static const int64_t facs[] = {3, 7, 8, 32};
    for (int fi = 0; fi < 4; fi++) {
        int64_t f = facs[fi];
        dw u;
        dw_start(&u, g_ctx, ew1_text, "ew1-overflow", fi, 0);
        tir_loop_rv l[16], p[2];
        us_loops(&u, "B", l);
        dw_split_bind(&u, l[0], f, p);
        assert_int_equal(u.st, TIR_OK);
        tir_kernel_set ks;
        if (tir_lower_kernels(g_ctx, tir_sched_func(u.s), NULL, &ks) != TIR_OK)
            FAILF("lower: %s", tir_ctx_error(g_ctx));
        compiled cd;
        compile_set(&u, &ks, true, &cd);
        assert_int_equal(cd.n, 1);
        tir_launch ln;
        if (tir_launch_check(g_ctx, ks.kernels[0], NULL, &ln) != TIR_OK)
            FAILF("launch_check: %s", tir_ctx_error(g_ctx));
        const tir_var *nv = ks.kernels[0]->params[2];
        for (int64_t n = INT32_MAX - 40; n <= (int64_t)INT32_MAX + 1; n++) {
            tir_arg args[3] = {{NULL, 0}, {NULL, 0}, {NULL, n}};
            int64_t grid[3], block[3], ext;
            const char *why = NULL;
            bool sim_ok = tir_launch_eval_extent(ln.extent[0], 1, &nv, &n, &ext, &why);
            tir_status st = tir_module_launch_dims(g_ctx, cd.mods[0], 3, args, grid, block);
            if ((st == TIR_OK) != sim_ok)
                FAILF("f = %lld, n = %lld: module and kernel disagree", (long long)f, (long long)n);
            if (st != TIR_OK) {
                if (!strstr(tir_ctx_error(g_ctx), "overflow") &&
                    !strstr(tir_ctx_error(g_ctx), "does not fit"))
                    FAILF("f = %lld, n = %lld: %s", (long long)f, (long long)n,
                          tir_ctx_error(g_ctx));
                tir_ctx_clear_error(g_ctx);
                continue;
            }
            /* the largest index the kernel computes, i_0 * f + i_1 */
            if (grid[0] * block[0] - 1 > INT32_MAX || grid[0] * block[0] < n)
                FAILF("f = %lld, n = %lld: grid %lld x %lld blocks: the last index %lld "
                      "wraps in int32",
                      (long long)f, (long long)n, (long long)grid[0], (long long)block[0],
                      (long long)(grid[0] * block[0] - 1));
        }
        /* and a modest size still launches */
        tir_arg args[3] = {{NULL, 0}, {NULL, 0}, {NULL, 1000}};
        int64_t grid[3], block[3];
        SCHED_OK(u.s, tir_module_launch_dims(g_ctx, cd.mods[0], 3, args, grid, block));
        assert_int_equal(grid[0], (1000 + f - 1) / f);
        dw_finish(&u, &(sizes){0});
    }
}

/* The same overflow in a loop the kernel runs: a row sum's k loop split
 * by 3 is `for k_0 in range((m + 2) // 3)` inside the thread, computed in
 * int32.  At m = INT32_MAX it wrapped negative and the loop ran nothing:
 * with n = 1 both emitters' PTX left B at its old value in the PTX
 * interpreter (the original sums 2^31 - 1 elements), and the grid check
 * above does not see a serial loop.  The kernel's loop bounds of its
 * arguments are now evaluated at launch (tir_launch_plan_eval), by
 * tir_module_launch_dims and by the simulator. */
static void test_loop_bound_overflow(void **state) {
    (void)state;
    dw u;
    dw_start(&u, g_ctx, rowsum_text, "rowsum-overflow", 0, 0);
    tir_loop_rv l[16], p[2], q[2];
    us_loops(&u, "B", l);
    dw_split_bind(&u, l[0], 4, p);
    us_split(&u, l[1], 3, q);
    assert_int_equal(u.st, TIR_OK);
    tir_kernel_set ks;
    if (tir_lower_kernels(g_ctx, tir_sched_func(u.s), NULL, &ks) != TIR_OK)
        FAILF("lower: %s", tir_ctx_error(g_ctx));
    for (int dr = 1; dr >= 0; dr--) {
        compiled c;
        compile_set(&u, &ks, dr, &c);
        assert_int_equal(c.n, 1);
        for (int64_t m = (int64_t)INT32_MAX - 3; m <= INT32_MAX; m++) {
            float A[4] = {1, 2, 3, 4}, B[1] = {-5};
            tir_arg args[4] = {{A, 0}, {B, 0}, {NULL, 1}, {NULL, m}};
            int64_t grid[3], block[3];
            tir_status st = tir_module_launch_dims(g_ctx, c.mods[0], 4, args, grid, block);
            bool wraps = m + 2 > INT32_MAX;
            if (wraps != (st != TIR_OK))
                FAILF("%s, m = %lld: launch %s (%s)", dr ? "direct" : "LLVM", (long long)m,
                      st == TIR_OK ? "accepted" : "refused", tir_ctx_error(g_ctx));
            if (st != TIR_OK) {
                if (!strstr(tir_ctx_error(g_ctx), "the loop bound"))
                    FAILF("m = %lld: %s", (long long)m, tir_ctx_error(g_ctx));
                tir_ctx_clear_error(g_ctx);
                /* and the PTX is not run (dc_run launches through it) */
                size_t bytes[4] = {sizeof A, sizeof B, 0, 0};
                char e[512];
                assert_int_not_equal(dc_run(g_ctx, c.mods[0], args, bytes, e, sizeof e), 0);
                assert_true(B[0] == -5);
                /* the simulator refuses it too, before running anything */
                if (dr) {
                    tir_sim_opts so = {0};
                    if (tir_sim_run_kernels(g_ctx, &ks, 4, args, &so, NULL) == TIR_OK)
                        FAILF("simulator ran m = %lld", (long long)m);
                    if (!strstr(tir_ctx_error(g_ctx), "the loop bound"))
                        FAILF("simulator, m = %lld: %s", (long long)m, tir_ctx_error(g_ctx));
                    tir_ctx_clear_error(g_ctx);
                }
            }
        }
    }
    dw_finish(&u, &(sizes){0});
}

/* The same class in a guard: the prefix sum with a row per block and its
 * triangular k loop split by 3 lowers to
 *     for i_0 in blockIdx.x(n), k_0 in range(i_0 // 3 + 1), k_1 in range(3):
 *         if i_0 < n and k_0 * 3 + k_1 < i_0 + 1: B[i_0] += A[k_0 * 3 + k_1]
 * The grid n fits and the loop bound i_0 // 3 + 1 names a loop variable,
 * so neither check saw it; at n = INT32_MAX the last row's k_0 * 3 + k_1
 * reaches 3 * 715827882 + 2 = 2^31, computed in int32: it wraps to
 * INT32_MIN, passes the guard, and A[INT32_MIN] is added (or, with the
 * compiler free to assume no overflow, anything).  The launch is now
 * refused wherever some value of a condition operand may pass its dtype,
 * over the loop variables' ranges (tir_launch_plan_eval), by the module of
 * either emitter and by the simulator, with the same message; one less
 * row is accepted. */
static void test_guard_overflow(void **state) {
    (void)state;
    dw u;
    dw_start(&u, g_ctx, prefix_text, "prefix-overflow", 0, 0);
    tir_loop_rv l[16], p[2], q[2];
    us_loops(&u, "B0", l);
    dw_split_bind(&u, l[0], 1, p);
    tir_loop_rv r[16];
    int nr = us_loops(&u, "B", r);
    us_split(&u, r[nr - 1], 3, q);
    assert_int_equal(u.st, TIR_OK);
    tir_kernel_set ks;
    if (tir_lower_kernels(g_ctx, tir_sched_func(u.s), NULL, &ks) != TIR_OK)
        FAILF("lower: %s", tir_ctx_error(g_ctx));
    assert_int_equal(ks.nkernels, 1);
    tir_launch ln;
    if (tir_launch_check(g_ctx, ks.kernels[0], NULL, &ln) != TIR_OK)
        FAILF("launch_check: %s", tir_ctx_error(g_ctx));
    const tir_var *nv = ks.kernels[0]->params[2];
    static char msg[2][1024];
    for (int dr = 1; dr >= 0; dr--) {
        compiled c;
        compile_set(&u, &ks, dr, &c);
        assert_int_equal(c.n, 1);
        for (int64_t n = (int64_t)INT32_MAX - 3; n <= INT32_MAX; n++) {
            float A[4] = {0}, B[4] = {0}; /* never run: refused, or not given to the simulator */
            tir_arg args[3] = {{A, 0}, {B, 0}, {NULL, n}};
            int64_t grid[3], block[3], ext;
            const char *why;
            /* the grid alone fits: only the guard tells */
            assert_true(tir_launch_eval_extent(ln.extent[0], 1, &nv, &n, &ext, &why));
            bool wraps = 3 * ((n - 1) / 3) + 2 > INT32_MAX;
            tir_status st = tir_module_launch_dims(g_ctx, c.mods[0], 3, args, grid, block);
            if (wraps != (st != TIR_OK))
                FAILF("%s, n = %lld: launch %s (%s)", dr ? "direct" : "LLVM", (long long)n,
                      st == TIR_OK ? "accepted" : "refused", tir_ctx_error(g_ctx));
            if (st == TIR_OK) continue;
            snprintf(msg[0], sizeof msg[0], "%s", tir_ctx_error(g_ctx));
            tir_ctx_clear_error(g_ctx);
            if (!strstr(msg[0], "launch of 'pfx': the condition") ||
                !strstr(msg[0], "k_0 * 3 + k_1 (int32) reaches [0, 2147483648]"))
                FAILF("n = %lld: %s", (long long)n, msg[0]);
            /* the simulator refuses it with the same message */
            tir_sim_opts so = {0};
            if (tir_sim_run_kernels(g_ctx, &ks, 3, args, &so, NULL) == TIR_OK)
                FAILF("simulator ran n = %lld", (long long)n);
            snprintf(msg[1], sizeof msg[1], "%s", tir_ctx_error(g_ctx));
            tir_ctx_clear_error(g_ctx);
            if (!strstr(msg[1], msg[0])) FAILF("module: %s\nsimulator: %s", msg[0], msg[1]);
        }
    }
    dw_finish(&u, &(sizes){0});
}

int main(void) {
    const char *v = getenv("MINITIR_UD_VERBOSE");
    verbose = v && v[0] == '1';
    const char *wd = getenv("MINITIR_UD_WIDE");
    wide = wd && wd[0] == '1';
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elementwise),    cmocka_unit_test(test_chain),
        cmocka_unit_test(test_rows),           cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_transpose),      cmocka_unit_test(test_stencils),
        cmocka_unit_test(test_triangles),      cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_split_overflow), cmocka_unit_test(test_loop_bound_overflow),
        cmocka_unit_test(test_guard_overflow),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
