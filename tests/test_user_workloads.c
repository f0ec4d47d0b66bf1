/* test_user_workloads.c: multi-stage workloads the fuzzers do not draw
 * (sixth new-user review), scheduled for the GPU as a user would, lowered
 * and run in the SIMT simulator against the interpreter on the unscheduled
 * function.
 *
 * The GPU fuzzer draws matmul-like functions and elementwise chains;
 * test_user_ops.c holds the fifth review's single-pattern cases.  This file
 * draws, per workload, a grid of schedule variants (tile sizes, ragged
 * extents, scopes, placements, unroll / vectorize, decompose_reduction,
 * rfactor) over:
 *   - layer norm (two dependent row reductions, mean then variance, and an
 *     elementwise consumer), rows per thread or rfactored to a workspace;
 *   - a 2-D blur whose producer is computed at the consumer's tile (its
 *     region grows by the 3x3 halo in both dimensions) in shared memory,
 *     inlined, or with the input cached, and a clamp-to-edge variant whose
 *     indices are T.max / T.min of the iterators;
 *   - tir_def_conv2d_nchw with the pad inlined or computed in shared
 *     memory at the output tile, a local accumulator and reordered reduce
 *     loops;
 *   - tir_def_elementwise_chain computed at the last stage's thread loop
 *     in registers, and fused / split / vectorized with ragged tails;
 *   - batched softmax rows with the batch over blockIdx.z;
 *   - fused loops of different extents, split raggedly, then vectorized
 *     or unrolled, in float32, float16 and int32.
 * A primitive that refuses must do so cleanly (sched_fail_ok: status,
 * message naming the primitive with marked IR, schedule unchanged), and
 * so must lowering (a message); every schedule accepted by all primitives
 * and by tir_lower_kernels must give the interpreter's outputs: bit-exact
 * on small-integer inputs (every summation order is exact) and within a
 * relative tolerance on inputs with fractions where the schedule
 * reassociates.  The interpreter on the scheduled function is checked
 * too.  Since the seventh new-user review every accepted variant's
 * kernels also run as PTX in the PTX interpreter (tests/ptx_interp.c):
 * the direct emitter's, and every fourth variant's LLVM's (ptx_check;
 * MINITIR_UW_PTX=0 off, =all LLVM on every variant), and the random
 * composer draws two more workloads (a block whose body is a loop, an
 * int32 conv1d).  MINITIR_UW_VERBOSE=1 prints every variant's outcome.
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

#include "minitir/ir.h"
#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/schedule.h"
#include "minitir/sim.h"
#include "direct_check.h"
#include "minitir/codegen.h"
#include "sched_check.h"
#include "user_sched.h"

static bool verbose;

/* ------------------------------------------------------------ data */

/* Small integers in -3..3 (every float order exact), or fractions in
 * [-4, 4). */
static double draw(uint64_t *rng, bool fractions) {
    if (!fractions) return (double)((int64_t)(sched_rand(rng) % 7) - 3);
    return ((double)(sched_rand(rng) >> 11) / 9007199254740992.0) * 8.0 - 4.0;
}

/* ------------------------------------------------------------ a try */

/* One schedule variant in progress (user_sched.h): primitives run until
 * one refuses; later ones are skipped (TRY), and the variant ends as
 * refused.  Variants are not numbered here (variant -1). */
typedef user_sched uw;

typedef struct uw_counts {
    int accepted, refused, lower_refused;
} uw_counts;

/* Runs the original function in the interpreter and f1 (in the
 * interpreter, or lowered in the simulator with uninitialised reads and
 * global races checked) on the same inputs; written parameters start
 * unwritten and poisoned.  False with the reason in why. */
static bool compare(uw *u, const tir_prim_func *f1, const tir_kernel_set *ks, bool fractions,
                    uint64_t seed, char *why, size_t n) {
    tir_ctx *ctx = u->ctx;
    const tir_prim_func *f0 = tir_sched_orig_func(u->s);
    int np = f0->nparams;
    assert_true(np <= 16);
    tir_arg a0[16], a1[16];
    size_t bytes[16] = {0};
    int64_t count[16] = {0};
    uint64_t rng = seed, written = us_written_params(ctx, f0);
    for (int i = 0; i < np; i++) {
        const tir_buffer *b = f0->buffer_map[i];
        a0[i] = a1[i] = (tir_arg){NULL, 1};
        if (!b) continue;
        count[i] = tir_buffer_const_size(b);
        assert_true(count[i] > 0);
        bytes[i] = (size_t)count[i] * tir_dtype_bytes(b->dtype);
        a0[i].data = malloc(bytes[i]);
        a1[i].data = malloc(bytes[i]);
        assert_true(a0[i].data && a1[i].data);
        for (int64_t e = 0; e < count[i]; e++)
            us_store_elem(a0[i].data, b->dtype, e, draw(&rng, fractions));
        if (written >> i & 1) tir_rt_poison(a0[i].data, bytes[i]);
        memcpy(a1[i].data, a0[i].data, bytes[i]);
    }
    bool ok = true;
    tir_status st;
    tir_interp_opts io = {.uninit_params = written};
    tir_sim_opts so = {.uninit_params = written, .check_uninit = true, .check_global_races = true};
    if ((st = tir_interp_run(ctx, f0, np, a0, &io)) != TIR_OK) {
        snprintf(why, n, "interpreter on the original: %s", tir_ctx_error(ctx));
        ok = false;
    } else if (!ks && (st = tir_interp_run(ctx, f1, np, a1, &io)) != TIR_OK) {
        snprintf(why, n, "interpreter on the scheduled function: %s: %s", tir_status_name(st),
                 tir_ctx_error(ctx));
        ok = false;
    } else if (ks && (st = tir_sim_run_kernels(ctx, ks, np, a1, &so, NULL)) != TIR_OK) {
        snprintf(why, n, "simulator: %s: %s", tir_status_name(st), tir_ctx_error(ctx));
        ok = false;
    }
    double tol = fractions || u->inexact ? u->rtol : 0;
    for (int i = 0; i < np && ok; i++) {
        const tir_buffer *b = f0->buffer_map[i];
        if (!b || !memcmp(a0[i].data, a1[i].data, bytes[i])) continue;
        size_t eb = tir_dtype_bytes(b->dtype);
        for (int64_t e = 0; e < count[i] && ok; e++) {
            const char *x0 = (const char *)a0[i].data + (size_t)e * eb;
            const char *x1 = (const char *)a1[i].data + (size_t)e * eb;
            if (!memcmp(x0, x1, eb)) continue;
            double x = us_load_elem(a0[i].data, b->dtype, e), y = us_load_elem(a1[i].data, b->dtype, e);
            if (tol > 0 && fabs(x - y) <= tol * (1 + fabs(x))) continue;
            snprintf(why, n, "%s: buffer %s flat element %lld: interpreter %.9g, %s %.9g",
                     fractions ? "fractions" : "small integers", b->name, (long long)e, x,
                     ks ? "simulator" : "scheduled function", y);
            ok = false;
        }
    }
    for (int i = 0; i < np; i++) {
        free(a0[i].data);
        free(a1[i].data);
    }
    return ok;
}


/* The PTX of both emitters in the PTX interpreter (seventh new-user
 * review).  The simulator runs the lowered kernels, not their PTX; the
 * direct emitter's PTX was run only by the GPU-path and expression
 * fuzzers, and a kernel it refuses (a strided vector, a select of loads,
 * a local array indexed by a variable) goes to LLVM, whose PTX no CPU
 * check ran: a transposing fetch's strided zero fill loaded its lanes
 * unguarded and stored them where it must store 0 (cg_emit.c).  Every
 * accepted variant's kernels go through the direct emitter where it takes
 * them all, and every fourth through LLVM (slower to compile); the
 * outputs must equal the interpreter's on the original, on small integers
 * (rtol where the workload has one).  MINITIR_UW_PTX=0 turns this off,
 * =all runs LLVM on every variant. */
static int ptx_llvm_every = 4;
static long ptx_variants, ptx_direct_runs, ptx_llvm_runs;

/* Compiles ks with one emitter into mods; false (nothing to run) where the
 * direct emitter refuses a kernel or the PTX interpreter's subset does not
 * hold it. */
static bool ptx_compile(tir_ctx *ctx, const tir_kernel_set *ks, bool direct,
                        const tir_module **mods) {
    for (int k = 0; k < ks->nkernels; k++) {
        tir_codegen_opts o;
        tir_codegen_opts_init(&o);
        o.pipeline = direct ? TIR_CG_PIPELINE_DIRECT : TIR_CG_PIPELINE_OPT;
        o.direct_all_loops = o.direct_only = direct;
        if (tir_codegen(ctx, ks->kernels[k], &o, &mods[k]) != TIR_OK) {
            const char *m = tir_ctx_error(ctx);
            if (!direct || !strstr(m, "the direct emitter refuses"))
                FAILF("codegen (%s): %s", direct ? "direct" : "LLVM", m);
            tir_ctx_clear_error(ctx);
            return false;
        }
    }
    return true;
}

/* Runs the kernels in the PTX interpreter on a1 (parameters, then the
 * workspace); NULL, or why it failed.  An error before any thread runs is
 * PTX outside the interpreter's subset (LLVM's float16 arithmetic, its
 * scoped `{ .reg .b32 tmp; ... }`): *unrun is set.  A read of a local
 * array past its end is LLVM's predicated store (`@p st.global [..],
 * L[i]`, its value loaded whether or not p holds, as cg_emit.c's
 * predicated_store allows for local arrays) at a thread whose guard is
 * false: the value is never stored. */
static const char *ptx_run(tir_ctx *ctx, const tir_kernel_set *ks, const tir_module **mods,
                           tir_arg *a1, const size_t *bytes, bool *unrun) {
    static char e[1024];
    *unrun = false;
    for (int k = 0; k < ks->nkernels; k++)
        if (dc_run(ctx, mods[k], a1, bytes, e, sizeof e)) {
            *unrun = !strstr(e, "block (") || strstr(e, "out-of-bounds .local");
            return e;
        }
    return NULL;
}

/* The kernel set by one emitter in the PTX interpreter against the
 * interpreter on the original (small integers); false with why. */
static bool ptx_compare(uw *u, const tir_kernel_set *ks, bool direct, char *why, size_t n) {
    tir_ctx *ctx = u->ctx;
    const tir_prim_func *f0 = tir_sched_orig_func(u->s);
    int np = f0->nparams, nw = ks->nworkspace;
    const tir_module *mods[16];
    if (np + nw > 16 || ks->nkernels > 16 || !ptx_compile(ctx, ks, direct, mods)) return true;
    tir_arg a0[16], a1[16];
    size_t bytes[16] = {0};
    uint64_t rng = 7, written = us_written_params(ctx, f0);
    for (int i = 0; i < np + nw; i++) {
        const tir_buffer *b = i < np ? f0->buffer_map[i] : ks->workspace[i - np];
        a0[i] = a1[i] = (tir_arg){NULL, 1};
        if (!b) continue;
        int64_t cnt = tir_buffer_const_size(b);
        bytes[i] = (size_t)cnt * tir_dtype_bytes(b->dtype);
        a0[i].data = malloc(bytes[i] + 1);
        a1[i].data = malloc(bytes[i] + 1);
        assert_true(a0[i].data && a1[i].data);
        memset(a1[i].data, 0xff, bytes[i]); /* a workspace starts as garbage */
        if (i >= np) continue;
        for (int64_t e = 0; e < cnt; e++) us_store_elem(a0[i].data, b->dtype, e, draw(&rng, false));
        if (written >> i & 1) tir_rt_poison(a0[i].data, bytes[i]);
        memcpy(a1[i].data, a0[i].data, bytes[i]);
    }
    tir_interp_opts io = {.uninit_params = written};
    bool ok = tir_interp_run(ctx, f0, np, a0, &io) == TIR_OK, unrun = false;
    if (!ok) snprintf(why, n, "interpreter on the original: %s", tir_ctx_error(ctx));
    const char *err = ok ? ptx_run(ctx, ks, mods, a1, bytes, &unrun) : NULL;
    if (err && !unrun) {
        snprintf(why, n, "%s PTX in the PTX interpreter: %s\n%s", direct ? "direct" : "LLVM", err,
                 mods[0]->ptx);
        ok = false;
    }
    if (ok && !err) *(direct ? &ptx_direct_runs : &ptx_llvm_runs) += 1;
    for (int i = 0; i < np && ok && !err; i++) {
        const tir_buffer *b = f0->buffer_map[i];
        if (!b || !memcmp(a0[i].data, a1[i].data, bytes[i])) continue;
        size_t eb = tir_dtype_bytes(b->dtype);
        for (size_t e = 0; e * eb < bytes[i] && ok; e++) {
            if (!memcmp((char *)a0[i].data + e * eb, (char *)a1[i].data + e * eb, eb)) continue;
            double x = us_load_elem(a0[i].data, b->dtype, (int64_t)e);
            double y = us_load_elem(a1[i].data, b->dtype, (int64_t)e);
            if (u->rtol > 0 && fabs(x - y) <= u->rtol * (1 + fabs(x))) continue;
            snprintf(why, n, "%s PTX: buffer %s flat element %zu: interpreter %.9g, PTX %.9g",
                     direct ? "direct" : "LLVM", b->name, e, x, y);
            ok = false;
        }
    }
    for (int i = 0; i < np + nw; i++) {
        free(a0[i].data);
        free(a1[i].data);
    }
    return ok;
}

/* The accepted variant's kernels through the emitters (see above). */
static void ptx_check(uw *u, const tir_prim_func *f1, const tir_kernel_set *ks) {
    static char why[1 << 16];
    if (ptx_llvm_every < 0) return;
    bool llvm = ptx_llvm_every > 0 && ptx_variants++ % ptx_llvm_every == 0;
    for (int dr = 1; dr >= (llvm ? 0 : 1); dr--)
        if (!ptx_compare(u, ks, dr, why, sizeof why))
            FAILF("%s: %s\nscheduled:\n%s\ntrace:\n%s\nkernel 0 of %d:\n%s", u->label, why,
                  tir_print(u->ctx, f1), tir_sched_trace_text(u->s), ks->nkernels,
                  tir_print(u->ctx, ks->kernels[0]));
}

/* Ends a variant: a refusal is counted; an accepted schedule must give the
 * original's outputs in the interpreter and, once lowered (or refused by
 * lowering with a message), in the simulator.  Frees the schedule. */
static void uw_finish(uw *u, uw_counts *c) {
    static char why[1 << 16];
    tir_ctx *ctx = u->ctx;
    if (u->st != TIR_OK) {
        c->refused++;
    } else {
        const tir_prim_func *f1 = tir_sched_func(u->s);
        bool ok = true;
        for (int fr = 0; fr < 2 && ok; fr++)
            ok = compare(u, f1, NULL, fr, 7 + (uint64_t)fr, why, sizeof why);
        if (!ok)
            FAILF("%s: %s\nscheduled:\n%s\ntrace:\n%s", u->label, why, tir_print(ctx, f1),
                  tir_sched_trace_text(u->s));
        tir_kernel_set ks;
        if (tir_lower_kernels(ctx, f1, NULL, &ks) != TIR_OK) {
            const char *m = tir_ctx_error(ctx);
            if (!m[0]) FAILF("%s: lowering refused without a message", u->label);
            if (verbose) fprintf(stderr, "  %s: lowering refused: %.400s\n", u->label, m);
            c->lower_refused++;
        } else {
            for (int fr = 0; fr < 2 && ok; fr++)
                ok = compare(u, f1, &ks, fr, 7 + (uint64_t)fr, why, sizeof why);
            if (!ok)
                FAILF("%s: %s\nscheduled:\n%s\ntrace:\n%s\nkernel 0 of %d:\n%s", u->label, why,
                      tir_print(ctx, f1), tir_sched_trace_text(u->s), ks.nkernels,
                      tir_print(ctx, ks.kernels[0]));
            ptx_check(u, f1, &ks);
            if (verbose) fprintf(stderr, "  %s: ok (%d kernels)\n", u->label, ks.nkernels);
            c->accepted++;
        }
    }
    tir_sched_destroy(u->s);
    u->s = NULL;
}

static void uw_start(uw *u, tir_ctx *ctx, const tir_prim_func *f, const char *label, double rtol) {
    if (!f) FAILF("%s: no function: %s", label, tir_ctx_error(ctx));
    memset(u, 0, sizeof *u);
    u->ctx = ctx;
    u->label = label;
    u->variant = -1;
    u->rtol = rtol;
    u->verbose = verbose;
    if (tir_sched_create(ctx, f, &u->s) != TIR_OK)
        FAILF("%s: sched_create: %s", label, tir_ctx_error(ctx));
}

static void report(const char *name, const uw_counts *c) {
    if (verbose)
        fprintf(stderr, "%s: %d accepted, %d refused by a primitive, %d by lowering\n", name,
                c->accepted, c->refused, c->lower_refused);
}

/* Binds l split by t: outer blockIdx.x, inner threadIdx.x. */
static void split_bind(uw *u, tir_loop_rv l, int64_t t, tir_loop_rv *out) {
    us_split(u, l, t, out);
    TRY(u, "bind", tir_sched_bind(u->s, out[0], "blockIdx.x"));
    TRY(u, "bind", tir_sched_bind(u->s, out[1], "threadIdx.x"));
}

/* ------------------------------------------------------------ layer norm */

/* S = sum A; V = sum (N A - S)^2; O = (N A - S) / sqrt(V + 1): on small
 * integers every sum is exact, whatever its order. */
static const char *layernorm_text(int m, int n) {
    static char buf[4096];
    snprintf(
        buf, sizeof buf,
        "@T.prim_func\n"
        "def layernorm(A: T.Buffer((%d, %d), \"float32\"), O: T.Buffer((%d, %d), \"float32\")):\n"
        "    with T.block(\"root\"):\n"
        "        S = T.alloc_buffer((%d,), \"float32\")\n"
        "        V = T.alloc_buffer((%d,), \"float32\")\n"
        "        for i, k in T.grid(%d, %d):\n"
        "            with T.block(\"S\"):\n"
        "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
        "                T.reads(A[vi, vk])\n"
        "                T.writes(S[vi])\n"
        "                with T.init():\n"
        "                    S[vi] = T.float32(0)\n"
        "                S[vi] = S[vi] + A[vi, vk]\n"
        "        for i, k in T.grid(%d, %d):\n"
        "            with T.block(\"V\"):\n"
        "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
        "                T.reads(A[vi, vk], S[vi])\n"
        "                T.writes(V[vi])\n"
        "                with T.init():\n"
        "                    V[vi] = T.float32(0)\n"
        "                V[vi] = V[vi] + (A[vi, vk] * T.float32(%d) - S[vi]) * "
        "(A[vi, vk] * T.float32(%d) - S[vi])\n"
        "        for i, j in T.grid(%d, %d):\n"
        "            with T.block(\"O\"):\n"
        "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
        "                T.reads(A[vi, vj], S[vi], V[vi])\n"
        "                T.writes(O[vi, vj])\n"
        "                O[vi, vj] = (A[vi, vj] * T.float32(%d) - S[vi]) / "
        "T.sqrt(V[vi] + T.float32(1))\n",
        m, n, m, n, m, m, m, n, m, n, n, n, m, n, n);
    return buf;
}

/* Variants:
 *   0  rows per thread: O's rows over blocks and threads, V then S computed
 *      at O's thread loop in registers (flags: 1 decompose both, 2 unroll
 *      O's columns, 4 A through a shared cache at the block loop);
 *   1  both reductions rfactored over t threads into workspaces, O tiled
 *      (flags: 1 decompose the partial sums, 2 reorder the final sum);
 *   2  O over 2-D threads (rows threadIdx.y, columns threadIdx.x), S and V
 *      at the row thread loop in registers: every column thread repeats
 *      the row's sums (flags: 1 decompose).
 */
static void layernorm_variant(uw_counts *c, int m, int n, int variant, int64_t t, int flags) {
    char label[128];
    snprintf(label, sizeof label, "layernorm %dx%d v%d t%lld f%d", m, n, variant, (long long)t,
             flags);
    tir_ctx *ctx = tir_ctx_create();
    uw u;
    uw_start(&u, ctx, us_parse(ctx, layernorm_text(m, n)), label, 1e-5);
    tir_loop_rv l[16], ip[2], jp[2], kp[2];
    tir_block_rv bs = us_block(&u, "S"), bv = us_block(&u, "V"), bo = us_block(&u, "O"), x;
    if (variant == 0) {
        us_loops(&u, "O", l);
        split_bind(&u, l[0], t, ip);
        tir_block_rv as = {0, 0};
        if (flags & 4)
            TRY(&u, "cache_read", tir_sched_cache_read(u.s, bo, 0, "shared", 0, NULL, &as));
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bv, 0, "local"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bv, ip[1], false));
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bs, 0, "local"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bs, ip[1], false));
        if (flags & 4) {
            /* the rows of the block's threads, fetched by them */
            TRY(&u, "compute_at", tir_sched_compute_at(u.s, as, ip[0], false));
            tir_loop_rv al[16];
            int na = us_loops(&u, "A_shared", al);
            if (na >= 3) {
                tir_loop_rv fu, fp[2];
                TRY(&u, "fuse",
                    tir_sched_fuse(u.s, 2, (const tir_loop_rv[]){al[na - 2], al[na - 1]}, &fu));
                us_split(&u, fu, t, fp);
                TRY(&u, "bind", tir_sched_bind(u.s, fp[1], "threadIdx.x"));
            }
        }
        if (flags & 1) {
            int ns = us_loops(&u, "S", l);
            if (ns)
                TRY(&u, "decompose_reduction",
                    tir_sched_decompose_reduction(u.s, bs, l[ns - 1], &x));
            int nv = us_loops(&u, "V", l);
            if (nv)
                TRY(&u, "decompose_reduction",
                    tir_sched_decompose_reduction(u.s, bv, l[nv - 1], &x));
        }
        if (flags & 2) {
            int no = us_loops(&u, "O", l);
            if (no) TRY(&u, "unroll", tir_sched_unroll(u.s, l[no - 1]));
        }
    } else if (variant == 1) {
        const char *names[2] = {"S", "V"};
        for (int r = 0; r < 2; r++) {
            tir_block_rv b = us_block(&u, names[r]), rf;
            us_loops(&u, names[r], l);
            us_split(&u, l[1], t, kp);
            TRY(&u, "rfactor", tir_sched_rfactor(u.s, kp[1], 0, &rf));
            TRY(&u, "reorder", tir_sched_reorder(u.s, 2, (const tir_loop_rv[]){kp[1], kp[0]}));
            TRY(&u, "bind", tir_sched_bind(u.s, l[0], "blockIdx.x"));
            TRY(&u, "bind", tir_sched_bind(u.s, kp[1], "threadIdx.x"));
            if (flags & 1)
                TRY(&u, "decompose_reduction", tir_sched_decompose_reduction(u.s, rf, kp[0], &x));
            int nf = us_loops(&u, names[r], l);
            if (nf == 2 && (flags & 2)) {
                tir_loop_rv fk[2];
                us_split(&u, l[1], 3, fk);
                TRY(&u, "reorder", tir_sched_reorder(u.s, 2, (const tir_loop_rv[]){fk[1], fk[0]}));
            }
            us_loops(&u, names[r], l);
            split_bind(&u, l[0], 4, ip);
            (void)b;
        }
        us_loops(&u, "O", l);
        us_split(&u, l[0], 4, ip);
        us_split(&u, l[1], t, jp);
        TRY(&u, "reorder",
            tir_sched_reorder(u.s, 4, (const tir_loop_rv[]){ip[0], jp[0], ip[1], jp[1]}));
        TRY(&u, "bind", tir_sched_bind(u.s, ip[0], "blockIdx.y"));
        TRY(&u, "bind", tir_sched_bind(u.s, jp[0], "blockIdx.x"));
        TRY(&u, "bind", tir_sched_bind(u.s, ip[1], "threadIdx.y"));
        TRY(&u, "bind", tir_sched_bind(u.s, jp[1], "threadIdx.x"));
    } else {
        us_loops(&u, "O", l);
        us_split(&u, l[0], 2, ip);
        us_split(&u, l[1], t, jp);
        TRY(&u, "reorder",
            tir_sched_reorder(u.s, 4, (const tir_loop_rv[]){ip[0], ip[1], jp[0], jp[1]}));
        TRY(&u, "bind", tir_sched_bind(u.s, ip[0], "blockIdx.x"));
        TRY(&u, "bind", tir_sched_bind(u.s, ip[1], "threadIdx.y"));
        TRY(&u, "bind", tir_sched_bind(u.s, jp[1], "threadIdx.x"));
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bv, 0, "local"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bv, ip[1], false));
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bs, 0, "local"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bs, ip[1], false));
        if (flags & 1) {
            int ns = us_loops(&u, "S", l);
            if (ns)
                TRY(&u, "decompose_reduction",
                    tir_sched_decompose_reduction(u.s, bs, l[ns - 1], &x));
        }
    }
    uw_finish(&u, c);
    tir_ctx_destroy(ctx);
}

static void test_layernorm(void **state) {
    (void)state;
    uw_counts c = {0};
    static const int sizes[][2] = {{7, 33}, {5, 64}, {1, 1}, {13, 7}};
    for (int z = 0; z < 4; z++)
        for (int v = 0; v < 3; v++)
            for (int f = 0; f < 8; f++) {
                if (v > 0 && f > 3) continue;
                layernorm_variant(&c, sizes[z][0], sizes[z][1], v, z == 1 ? 32 : 4, f);
            }
    report("layernorm", &c);
}

/* ------------------------------------------------------------ 2-D blur */

/* P = 2 A + 1 over (h + 2) x (w + 2); B[i, j] = a 3x3 weighted sum of P
 * around (i + 1, j + 1) (form 0: spelled out; form 1: a reduction over
 * di, dj with the weights in W; form 2: same-size clamp-to-edge, indices
 * T.max(i - 1, 0) .. T.min(i + 1, h - 1), the region declared with them). */
static const char *blur_text(int h, int w, int form) {
    static char buf[8192];
    const char *head =
        "@T.prim_func\n"
        "def blur(A: T.Buffer((%d, %d), \"float32\"), W: T.Buffer((3, 3), \"float32\"), "
        "B: T.Buffer((%d, %d), \"float32\")):\n"
        "    with T.block(\"root\"):\n"
        "        P = T.alloc_buffer((%d, %d), \"float32\")\n"
        "        for i, j in T.grid(%d, %d):\n"
        "            with T.block(\"P\"):\n"
        "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
        "                T.reads(A[vi, vj])\n"
        "                T.writes(P[vi, vj])\n"
        "                P[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)\n";
    int ph = form == 2 ? h : h + 2, pw = form == 2 ? w : w + 2;
    int k = snprintf(buf, sizeof buf, head, ph, pw, h, w, ph, pw, ph, pw);
    if (form == 0)
        snprintf(buf + k, sizeof buf - (size_t)k,
                 "        for i, j in T.grid(%d, %d):\n"
                 "            with T.block(\"B\"):\n"
                 "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                 "                T.reads(P[vi:vi + 3, vj:vj + 3], W[0, 0])\n"
                 "                T.writes(B[vi, vj])\n"
                 "                B[vi, vj] = P[vi, vj] + P[vi, vj + 1] * T.float32(2) + "
                 "P[vi, vj + 2] + P[vi + 1, vj] * T.float32(2) + P[vi + 1, vj + 1] * W[0, 0] + "
                 "P[vi + 1, vj + 2] * T.float32(2) + P[vi + 2, vj] + P[vi + 2, vj + 1] * "
                 "T.float32(2) + P[vi + 2, vj + 2]\n",
                 h, w);
    else if (form == 1)
        snprintf(buf + k, sizeof buf - (size_t)k,
                 "        for i, j, di, dj in T.grid(%d, %d, 3, 3):\n"
                 "            with T.block(\"B\"):\n"
                 "                vi, vj, vdi, vdj = T.axis.remap(\"SSRR\", [i, j, di, dj])\n"
                 "                T.reads(P[vi + vdi, vj + vdj], W[vdi, vdj])\n"
                 "                T.writes(B[vi, vj])\n"
                 "                with T.init():\n"
                 "                    B[vi, vj] = T.float32(0)\n"
                 "                B[vi, vj] = B[vi, vj] + P[vi + vdi, vj + vdj] * W[vdi, vdj]\n",
                 h, w);
    else
        snprintf(buf + k, sizeof buf - (size_t)k,
                 "        for i, j in T.grid(%d, %d):\n"
                 "            with T.block(\"B\"):\n"
                 "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                 "                T.reads(P[0:%d, 0:%d], W[0, 0])\n"
                 "                T.writes(B[vi, vj])\n"
                 "                B[vi, vj] = P[T.max(vi - 1, 0), vj] + P[vi, vj] * W[0, 0] + "
                 "P[T.min(vi + 1, %d), vj] + P[vi, T.max(vj - 1, 0)] * T.float32(2) + "
                 "P[vi, T.min(vj + 1, %d)] * T.float32(3)\n",
                 h, w, h, w, h - 1, w - 1);
    return buf;
}

/* B tiled ti x tj over (blockIdx.y, blockIdx.x) x (threadIdx.y, threadIdx.x).
 * Variants:
 *   0  P computed at the tile loop in shared memory, its (ti + 2) x (tj + 2)
 *      region fused and spread over the threads past its extent (flags: 1
 *      B through a register cache, 2 storage_align P, 4 the fetch's inner
 *      split vectorized by 2);
 *   1  P inlined (flags: 1 A cached in shared at the tile, 2 unroll);
 *   2  P computed at the inner thread loop in registers (overlapping
 *      regions: local_check refuses) or, with flag 1, in global memory at
 *      the tile loop;
 *   3  (form 1) B's accumulator in a register, decompose_reduction, the
 *      reduce loops unrolled, P in shared at the tile (flags: 1 W cached in
 *      shared too, 2 reduce loops fused).
 */
static void blur_variant(uw_counts *c, int h, int w, int form, int variant, int64_t ti, int64_t tj,
                         int flags) {
    char label[128];
    snprintf(label, sizeof label, "blur %dx%d form %d v%d %lldx%lld f%d", h, w, form, variant,
             (long long)ti, (long long)tj, flags);
    tir_ctx *ctx = tir_ctx_create();
    uw u;
    uw_start(&u, ctx, us_parse(ctx, blur_text(h, w, form)), label, form == 1 ? 1e-5 : 0);
    tir_loop_rv l[16], ip[2], jp[2];
    tir_block_rv bp = us_block(&u, "P"), bb = us_block(&u, "B"), x;
    us_loops(&u, "B", l);
    us_split(&u, l[0], ti, ip);
    us_split(&u, l[1], tj, jp);
    TRY(&u, "reorder",
        tir_sched_reorder(u.s, 4, (const tir_loop_rv[]){ip[0], jp[0], ip[1], jp[1]}));
    TRY(&u, "bind", tir_sched_bind(u.s, ip[0], "blockIdx.y"));
    TRY(&u, "bind", tir_sched_bind(u.s, jp[0], "blockIdx.x"));
    TRY(&u, "bind", tir_sched_bind(u.s, ip[1], "threadIdx.y"));
    TRY(&u, "bind", tir_sched_bind(u.s, jp[1], "threadIdx.x"));
    if (variant == 0 || variant == 3) {
        if (variant == 3 || (flags & 1)) {
            tir_block_rv bl;
            TRY(&u, "cache_write", tir_sched_cache_write(u.s, bb, 0, "local", 0, NULL, &bl));
            TRY(&u, "reverse_compute_at", tir_sched_reverse_compute_at(u.s, bl, jp[1], false));
        }
        if (variant == 3 && (flags & 1)) {
            tir_block_rv ws;
            TRY(&u, "cache_read", tir_sched_cache_read(u.s, bb, 1, "shared", 0, NULL, &ws));
            TRY(&u, "compute_at", tir_sched_compute_at(u.s, ws, jp[0], false));
            tir_loop_rv wl[16];
            int nw = us_loops(&u, "W_shared", wl);
            if (nw >= 2) TRY(&u, "bind", tir_sched_bind(u.s, wl[nw - 1], "threadIdx.x"));
        }
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bp, 0, "shared"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bp, jp[0], false));
        if (variant == 0 && (flags & 2))
            TRY(&u, "storage_align", tir_sched_storage_align(u.s, bp, 0, 0, 16, 1));
        tir_loop_rv pl[16], fu, fp[4];
        int np = us_loops(&u, "P", pl);
        if (np >= 4) {
            TRY(&u, "fuse",
                tir_sched_fuse(u.s, 2, (const tir_loop_rv[]){pl[np - 2], pl[np - 1]}, &fu));
            bool vec = variant == 0 && (flags & 4);
            int64_t f4[4] = {TIR_SPLIT_INFER, ti, tj, 2};
            TRY(&u, "split", tir_sched_split(u.s, fu, vec ? 4 : 3, f4, fp));
            TRY(&u, "bind", tir_sched_bind(u.s, fp[1], "threadIdx.y"));
            TRY(&u, "bind", tir_sched_bind(u.s, fp[2], "threadIdx.x"));
            if (vec) TRY(&u, "vectorize", tir_sched_vectorize(u.s, fp[3]));
        }
        if (variant == 3) {
            int nb = us_loops(&u, "B", l);
            if (nb >= 6) {
                TRY(&u, "decompose_reduction", tir_sched_decompose_reduction(u.s, bb, l[4], &x));
                if (flags & 2) {
                    tir_loop_rv fr;
                    TRY(&u, "fuse", tir_sched_fuse(u.s, 2, (const tir_loop_rv[]){l[4], l[5]}, &fr));
                    TRY(&u, "unroll", tir_sched_unroll(u.s, fr));
                } else {
                    TRY(&u, "unroll", tir_sched_unroll(u.s, l[4]));
                    TRY(&u, "unroll", tir_sched_unroll(u.s, l[5]));
                }
            }
        }
    } else if (variant == 1) {
        TRY(&u, "compute_inline", tir_sched_compute_inline(u.s, bp));
        if (flags & 1) {
            tir_block_rv as;
            TRY(&u, "cache_read", tir_sched_cache_read(u.s, bb, 0, "shared", 0, NULL, &as));
            TRY(&u, "compute_at", tir_sched_compute_at(u.s, as, jp[0], false));
            tir_loop_rv al[16];
            int na = us_loops(&u, "A_shared", al);
            if (na >= 4) {
                TRY(&u, "bind", tir_sched_bind(u.s, al[na - 1], "threadIdx.x"));
            }
        }
        if (flags & 2) {
            int nb = us_loops(&u, "B", l);
            if (nb > 4) TRY(&u, "unroll", tir_sched_unroll(u.s, l[4]));
        }
    } else {
        if (flags & 1) {
            TRY(&u, "compute_at", tir_sched_compute_at(u.s, bp, jp[0], false));
            tir_loop_rv pl[16];
            int np = us_loops(&u, "P", pl);
            if (np >= 4) {
                TRY(&u, "bind", tir_sched_bind(u.s, pl[np - 1], "threadIdx.x"));
            }
        } else {
            TRY(&u, "set_scope", tir_sched_set_scope(u.s, bp, 0, "local"));
            TRY(&u, "compute_at", tir_sched_compute_at(u.s, bp, jp[1], false));
        }
    }
    uw_finish(&u, c);
    tir_ctx_destroy(ctx);
}

static void test_blur(void **state) {
    (void)state;
    uw_counts c = {0};
    static const int sizes[][4] = {{16, 16, 4, 8}, {13, 7, 4, 4}, {5, 37, 2, 8}, {1, 1, 1, 1}};
    for (int z = 0; z < 4; z++)
        for (int form = 0; form < 3; form++)
            for (int v = 0; v < 4; v++)
                for (int f = 0; f < 8; f++) {
                    if ((v == 3) != (form == 1) && v != 1 && v != 2 && !(v == 0 && form != 1))
                        continue;
                    if (v == 3 && form != 1) continue;
                    if (v != 0 && f > 3) continue;
                    blur_variant(&c, sizes[z][0], sizes[z][1], form, v, sizes[z][2], sizes[z][3],
                                 f);
                }
    report("blur", &c);
}

/* ------------------------------------------------------------ conv2d */

typedef struct conv_shape {
    int n, c, h, w, o, k, stride, pad;
} conv_shape;

/* tir_def_conv2d_nchw (blocks "pad" and "conv"; loops n, o, y, x, rc, ry,
 * rx), the output's y and x fused and split by t over (blockIdx.y,
 * threadIdx.x), n and o fused over blockIdx.x.  Variants:
 *   0  pad inlined, the accumulator in a register (flags: 1
 *      decompose_reduction at rc, 2 reduce loops reordered rx, rc, ry, 4
 *      rx unrolled);
 *   1  pad computed in shared memory at the output's block loop, its
 *      region fused and spread over the threads (flags: 1 W cached in
 *      shared there too, 2 the accumulator in a register, 4 I cached in
 *      shared for pad, at the same loop);
 *   2  the reduction over rc rfactored into a workspace, the partial sums
 *      bound like the output (flags: 1 pad inlined, 2 the final sum's
 *      loops fused and split).
 */
static void conv_variant(uw_counts *c, conv_shape sh, int variant, int64_t t, int flags) {
    char label[160];
    snprintf(label, sizeof label, "conv2d n%d c%d %dx%d o%d k%d s%d p%d v%d t%lld f%d", sh.n, sh.c,
             sh.h, sh.w, sh.o, sh.k, sh.stride, sh.pad, variant, (long long)t, flags);
    tir_ctx *ctx = tir_ctx_create();
    uw u;
    uw_start(&u, ctx,
             tir_def_conv2d_nchw(ctx, sh.n, sh.c, sh.h, sh.w, sh.o, sh.k, sh.k, sh.stride, sh.pad,
                                 TIR_F32),
             label, 1e-5);
    tir_loop_rv l[16], yx, no, yp[2], rf_l[16];
    tir_block_rv bp = us_block(&u, "pad"), bc = us_block(&u, "conv"), x, rf = {0, 0};
    if (variant == 2) {
        us_loops(&u, "conv", l);
        TRY(&u, "rfactor", tir_sched_rfactor(u.s, l[4], 0, &rf));
    }
    us_loops(&u, variant == 2 ? "conv_rf" : "conv", l);
    TRY(&u, "fuse", tir_sched_fuse(u.s, 2, (const tir_loop_rv[]){l[0], l[1]}, &no));
    TRY(&u, "fuse", tir_sched_fuse(u.s, 2, (const tir_loop_rv[]){l[2], l[3]}, &yx));
    us_split(&u, yx, t, yp);
    TRY(&u, "bind", tir_sched_bind(u.s, no, "blockIdx.x"));
    TRY(&u, "bind", tir_sched_bind(u.s, yp[0], "blockIdx.y"));
    TRY(&u, "bind", tir_sched_bind(u.s, yp[1], "threadIdx.x"));
    if (variant == 0) {
        TRY(&u, "compute_inline", tir_sched_compute_inline(u.s, bp));
        tir_block_rv bl;
        TRY(&u, "cache_write", tir_sched_cache_write(u.s, bc, 0, "local", 0, NULL, &bl));
        TRY(&u, "reverse_compute_at", tir_sched_reverse_compute_at(u.s, bl, yp[1], false));
        if (flags & 2)
            TRY(&u, "reorder", tir_sched_reorder(u.s, 3, (const tir_loop_rv[]){l[6], l[4], l[5]}));
        if (flags & 1)
            TRY(&u, "decompose_reduction",
                tir_sched_decompose_reduction(u.s, bc, (flags & 2) ? l[6] : l[4], &x));
        if (flags & 4) TRY(&u, "unroll", tir_sched_unroll(u.s, l[6]));
    } else if (variant == 1) {
        if (flags & 1) {
            tir_block_rv ws;
            TRY(&u, "cache_read", tir_sched_cache_read(u.s, bc, 1, "shared", 0, NULL, &ws));
            TRY(&u, "compute_at", tir_sched_compute_at(u.s, ws, yp[0], false));
            tir_loop_rv wl[16], wf, wp[2];
            int nw = us_loops(&u, "W_shared", wl);
            if (nw >= 3) {
                wf = wl[2];
                if (nw > 3) TRY(&u, "fuse", tir_sched_fuse(u.s, nw - 2, wl + 2, &wf));
                us_split(&u, wf, t, wp);
                TRY(&u, "bind", tir_sched_bind(u.s, wp[1], "threadIdx.x"));
            }
        }
        tir_block_rv is = {0, 0};
        if (flags & 4)
            TRY(&u, "cache_read", tir_sched_cache_read(u.s, bp, 0, "shared", 0, NULL, &is));
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bp, 0, "shared"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bp, yp[0], false));
        const char *names[2] = {"pad", "I_shared"};
        for (int k = 0; k < ((flags & 4) ? 2 : 1); k++) {
            if (k == 1) TRY(&u, "compute_at", tir_sched_compute_at(u.s, is, yp[0], false));
            tir_loop_rv pl[16], pf, pp[2];
            int np = us_loops(&u, names[k], pl);
            if (np >= 3) {
                pf = pl[2];
                if (np > 3) TRY(&u, "fuse", tir_sched_fuse(u.s, np - 2, pl + 2, &pf));
                us_split(&u, pf, t, pp);
                TRY(&u, "bind", tir_sched_bind(u.s, pp[1], "threadIdx.x"));
            }
        }
        if (flags & 2) {
            tir_block_rv bl;
            TRY(&u, "cache_write", tir_sched_cache_write(u.s, bc, 0, "local", 0, NULL, &bl));
            TRY(&u, "reverse_compute_at", tir_sched_reverse_compute_at(u.s, bl, yp[1], false));
        }
    } else {
        if (flags & 1) TRY(&u, "compute_inline", tir_sched_compute_inline(u.s, bp));
        int nc = us_loops(&u, "conv", rf_l);
        if (nc >= 5) {
            tir_loop_rv f1, f2, fp[2];
            TRY(&u, "fuse", tir_sched_fuse(u.s, 2, (const tir_loop_rv[]){rf_l[0], rf_l[1]}, &f1));
            TRY(&u, "fuse", tir_sched_fuse(u.s, 2, (const tir_loop_rv[]){rf_l[2], rf_l[3]}, &f2));
            if (flags & 2) {
                tir_loop_rv ff;
                TRY(&u, "fuse", tir_sched_fuse(u.s, 2, (const tir_loop_rv[]){f1, f2}, &ff));
                us_split(&u, ff, t, fp);
                TRY(&u, "bind", tir_sched_bind(u.s, fp[0], "blockIdx.x"));
                TRY(&u, "bind", tir_sched_bind(u.s, fp[1], "threadIdx.x"));
            } else {
                us_split(&u, f2, t, fp);
                TRY(&u, "bind", tir_sched_bind(u.s, f1, "blockIdx.x"));
                TRY(&u, "bind", tir_sched_bind(u.s, fp[0], "blockIdx.y"));
                TRY(&u, "bind", tir_sched_bind(u.s, fp[1], "threadIdx.x"));
            }
        }
        if (!(flags & 1)) {
            tir_loop_rv pl[16], pf, pp[2];
            int np = us_loops(&u, "pad", pl);
            if (np == 4) {
                TRY(&u, "fuse", tir_sched_fuse(u.s, 4, pl, &pf));
                us_split(&u, pf, t, pp);
                TRY(&u, "bind", tir_sched_bind(u.s, pp[0], "blockIdx.x"));
                TRY(&u, "bind", tir_sched_bind(u.s, pp[1], "threadIdx.x"));
            }
        }
    }
    (void)rf;
    uw_finish(&u, c);
    tir_ctx_destroy(ctx);
}

static void test_conv2d(void **state) {
    (void)state;
    uw_counts c = {0};
    static const conv_shape shapes[] = {
        {1, 2, 5, 5, 2, 3, 1, 1}, {2, 3, 7, 6, 2, 3, 2, 1}, {1, 1, 4, 4, 3, 3, 1, 0},
        {1, 3, 9, 9, 4, 1, 1, 0}, {2, 1, 6, 7, 1, 3, 2, 0},
    };
    for (size_t z = 0; z < sizeof shapes / sizeof *shapes; z++)
        for (int v = 0; v < 3; v++)
            for (int f = 0; f < 8; f++) {
                if (v == 2 && f > 3) continue;
                conv_variant(&c, shapes[z], v, z % 2 ? 16 : 8, f);
            }
    report("conv2d", &c);
}

/* ------------------------------------------------------------ elementwise chain */

/* tir_def_elementwise_chain: B = 2A, C = B + 1, D = max(C, 0).  Variants:
 *   0  D's loops fused and split by t over blocks and threads; C then B
 *      computed at D's thread loop (flags: 1 in registers, else left
 *      global; 2 preserve unit loops; 4 D's fused loop split by a vector
 *      of 2 first, vectorized);
 *   1  B's loops fused and bound; C and D reverse_compute_at B's thread
 *      loop (flags: 1 C in a register, 2 preserve unit loops);
 *   2  B and C inlined, D split [None, t, 4] with the 4 vectorized
 *      (flags: 1 unrolled instead, 2 reverse_compute_inline of D into C
 *      before inlining B);
 *   3  D tiled 2-D over blocks and threads, C and B computed at D's block
 *      loop in shared memory and spread over the threads past their
 *      extent (flags: 1 storage_align C, 2 transform_layout of C
 *      transposed, 4 B in registers at the thread loop instead).
 */
static void chain_variant(uw_counts *c, int m, int n, int variant, int64_t t, int flags) {
    char label[128];
    snprintf(label, sizeof label, "chain %dx%d v%d t%lld f%d", m, n, variant, (long long)t, flags);
    tir_ctx *ctx = tir_ctx_create();
    uw u;
    uw_start(&u, ctx, tir_def_elementwise_chain(ctx, m, n, TIR_F32), label, 0);
    tir_loop_rv l[16], fu, p[4], ip[2], jp[2];
    tir_block_rv bb = us_block(&u, "B"), bc = us_block(&u, "C"), bd = us_block(&u, "D");
    if (variant == 0) {
        us_loops(&u, "D", l);
        TRY(&u, "fuse", tir_sched_fuse(u.s, 2, l, &fu));
        bool vec = flags & 4;
        TRY(&u, "split",
            tir_sched_split(u.s, fu, vec ? 3 : 2, (const int64_t[]){TIR_SPLIT_INFER, t, 2}, p));
        TRY(&u, "bind", tir_sched_bind(u.s, p[0], "blockIdx.x"));
        TRY(&u, "bind", tir_sched_bind(u.s, p[1], "threadIdx.x"));
        if (vec) TRY(&u, "vectorize", tir_sched_vectorize(u.s, p[2]));
        if (flags & 1) TRY(&u, "set_scope", tir_sched_set_scope(u.s, bc, 0, "local"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bc, p[1], flags & 2));
        if (flags & 1) TRY(&u, "set_scope", tir_sched_set_scope(u.s, bb, 0, "local"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bb, p[1], flags & 2));
    } else if (variant == 1) {
        us_loops(&u, "B", l);
        TRY(&u, "fuse", tir_sched_fuse(u.s, 2, l, &fu));
        split_bind(&u, fu, t, p);
        if (flags & 1) TRY(&u, "set_scope", tir_sched_set_scope(u.s, bc, 0, "local"));
        TRY(&u, "reverse_compute_at", tir_sched_reverse_compute_at(u.s, bc, p[1], flags & 2));
        TRY(&u, "reverse_compute_at", tir_sched_reverse_compute_at(u.s, bd, p[1], flags & 2));
    } else if (variant == 2) {
        if (flags & 2) TRY(&u, "reverse_compute_inline", tir_sched_reverse_compute_inline(u.s, bd));
        TRY(&u, "compute_inline", tir_sched_compute_inline(u.s, bb));
        if (!(flags & 2)) TRY(&u, "compute_inline", tir_sched_compute_inline(u.s, bc));
        us_loops(&u, (flags & 2) ? "C" : "D", l);
        TRY(&u, "fuse", tir_sched_fuse(u.s, 2, l, &fu));
        TRY(&u, "split", tir_sched_split(u.s, fu, 3, (const int64_t[]){TIR_SPLIT_INFER, t, 4}, p));
        TRY(&u, "bind", tir_sched_bind(u.s, p[0], "blockIdx.x"));
        TRY(&u, "bind", tir_sched_bind(u.s, p[1], "threadIdx.x"));
        if (flags & 1)
            TRY(&u, "unroll", tir_sched_unroll(u.s, p[2]));
        else
            TRY(&u, "vectorize", tir_sched_vectorize(u.s, p[2]));
    } else {
        us_loops(&u, "D", l);
        us_split(&u, l[0], 4, ip);
        us_split(&u, l[1], t, jp);
        TRY(&u, "reorder",
            tir_sched_reorder(u.s, 4, (const tir_loop_rv[]){ip[0], jp[0], ip[1], jp[1]}));
        TRY(&u, "bind", tir_sched_bind(u.s, ip[0], "blockIdx.y"));
        TRY(&u, "bind", tir_sched_bind(u.s, jp[0], "blockIdx.x"));
        TRY(&u, "bind", tir_sched_bind(u.s, ip[1], "threadIdx.y"));
        TRY(&u, "bind", tir_sched_bind(u.s, jp[1], "threadIdx.x"));
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bc, 0, "shared"));
        if (flags & 2)
            TRY(&u, "transform_layout",
                tir_sched_transform_layout(u.s, bc, 0, true, "lambda i, j: (j, i)"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bc, jp[0], false));
        if (flags & 1) TRY(&u, "storage_align", tir_sched_storage_align(u.s, bc, 0, 0, 8, 3));
        if (flags & 4) {
            TRY(&u, "set_scope", tir_sched_set_scope(u.s, bb, 0, "local"));
            /* B's elements for C's tile: computed by the thread that
             * computes D's element? no: C is at the block loop */
            tir_loop_rv cl[16];
            int ncl = us_loops(&u, "C", cl);
            if (ncl >= 4) {
                TRY(&u, "fuse", tir_sched_fuse(u.s, 2, cl + ncl - 2, &fu));
                TRY(&u, "split",
                    tir_sched_split(u.s, fu, 3, (const int64_t[]){TIR_SPLIT_INFER, 4, t}, p));
                TRY(&u, "bind", tir_sched_bind(u.s, p[1], "threadIdx.y"));
                TRY(&u, "bind", tir_sched_bind(u.s, p[2], "threadIdx.x"));
                TRY(&u, "compute_at", tir_sched_compute_at(u.s, bb, p[2], false));
            }
        } else {
            TRY(&u, "set_scope", tir_sched_set_scope(u.s, bb, 0, "shared"));
            TRY(&u, "compute_at", tir_sched_compute_at(u.s, bb, jp[0], false));
            const char *names[2] = {"B", "C"};
            for (int k = 0; k < 2; k++) {
                tir_loop_rv cl[16];
                int ncl = us_loops(&u, names[k], cl);
                if (ncl >= 4) {
                    TRY(&u, "fuse", tir_sched_fuse(u.s, 2, cl + ncl - 2, &fu));
                    TRY(&u, "split",
                        tir_sched_split(u.s, fu, 3, (const int64_t[]){TIR_SPLIT_INFER, 4, t}, p));
                    TRY(&u, "bind", tir_sched_bind(u.s, p[1], "threadIdx.y"));
                    TRY(&u, "bind", tir_sched_bind(u.s, p[2], "threadIdx.x"));
                }
            }
        }
    }
    (void)bb;
    uw_finish(&u, c);
    tir_ctx_destroy(ctx);
}

static void test_chain(void **state) {
    (void)state;
    uw_counts c = {0};
    static const int sizes[][2] = {{3, 5}, {17, 33}, {1, 1}, {8, 64}, {13, 1}};
    for (int z = 0; z < 5; z++)
        for (int v = 0; v < 4; v++)
            for (int f = 0; f < 8; f++) {
                if (v != 0 && v != 3 && f > 3) continue;
                chain_variant(&c, sizes[z][0], sizes[z][1], v, z % 2 ? 8 : 4, f);
            }
    report("chain", &c);
}

/* ------------------------------------------------------------ batched softmax */

static const char *bsoftmax_text(int b, int m, int n) {
    static char buf[8192];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def bsoftmax(A: T.Buffer((%d, %d, %d), \"float32\"), O: T.Buffer((%d, %d, %d), "
             "\"float32\")):\n"
             "    with T.block(\"root\"):\n"
             "        M = T.alloc_buffer((%d, %d), \"float32\")\n"
             "        E = T.alloc_buffer((%d, %d, %d), \"float32\")\n"
             "        S = T.alloc_buffer((%d, %d), \"float32\")\n"
             "        for b, i, k in T.grid(%d, %d, %d):\n"
             "            with T.block(\"M\"):\n"
             "                vb, vi, vk = T.axis.remap(\"SSR\", [b, i, k])\n"
             "                T.reads(A[vb, vi, vk])\n"
             "                T.writes(M[vb, vi])\n"
             "                with T.init():\n"
             "                    M[vb, vi] = T.float32(\"-inf\")\n"
             "                M[vb, vi] = T.max(M[vb, vi], A[vb, vi, vk])\n"
             "        for b, i, k in T.grid(%d, %d, %d):\n"
             "            with T.block(\"E\"):\n"
             "                vb, vi, vk = T.axis.remap(\"SSS\", [b, i, k])\n"
             "                T.reads(A[vb, vi, vk], M[vb, vi])\n"
             "                T.writes(E[vb, vi, vk])\n"
             "                E[vb, vi, vk] = T.exp(A[vb, vi, vk] - M[vb, vi])\n"
             "        for b, i, k in T.grid(%d, %d, %d):\n"
             "            with T.block(\"S\"):\n"
             "                vb, vi, vk = T.axis.remap(\"SSR\", [b, i, k])\n"
             "                T.reads(E[vb, vi, vk])\n"
             "                T.writes(S[vb, vi])\n"
             "                with T.init():\n"
             "                    S[vb, vi] = T.float32(0)\n"
             "                S[vb, vi] = S[vb, vi] + E[vb, vi, vk]\n"
             "        for b, i, k in T.grid(%d, %d, %d):\n"
             "            with T.block(\"O\"):\n"
             "                vb, vi, vk = T.axis.remap(\"SSS\", [b, i, k])\n"
             "                T.reads(E[vb, vi, vk], S[vb, vi])\n"
             "                T.writes(O[vb, vi, vk])\n"
             "                O[vb, vi, vk] = E[vb, vi, vk] / S[vb, vi]\n",
             b, m, n, b, m, n, b, m, b, m, n, b, m, b, m, n, b, m, n, b, m, n, b, m, n);
    return buf;
}

/* The batch over blockIdx.z.  Variants:
 *   0  rows of O over (blockIdx.x, threadIdx.x), E inlined, M and S in
 *      registers at the thread loop (flags: 1 decompose S, 2 O's columns
 *      unrolled, 4 E kept, in registers at the thread loop too);
 *   1  every stage its own nest (workspaces), each with the batch over
 *      blockIdx.z and columns over threadIdx.x for E and O (flags: 1 rows
 *      and batch fused instead);
 *   2  S rfactored over t threads into a workspace, the rest as 0.
 */
static void bsoftmax_variant(uw_counts *c, int b, int m, int n, int variant, int64_t t, int flags) {
    char label[128];
    snprintf(label, sizeof label, "bsoftmax %dx%dx%d v%d t%lld f%d", b, m, n, variant, (long long)t,
             flags);
    tir_ctx *ctx = tir_ctx_create();
    uw u;
    uw_start(&u, ctx, us_parse(ctx, bsoftmax_text(b, m, n)), label, 1e-5);
    u.inexact = true;
    tir_loop_rv l[16], ip[2], kp[2];
    tir_block_rv bm = us_block(&u, "M"), be = us_block(&u, "E"), bs = us_block(&u, "S"), x;
    if (variant == 0 || variant == 2) {
        if (variant == 2) {
            tir_block_rv rf;
            us_loops(&u, "S", l);
            us_split(&u, l[2], t, kp);
            TRY(&u, "rfactor", tir_sched_rfactor(u.s, kp[1], 1, &rf));
            int nr = us_loops(&u, "S_rf", l);
            if (nr == 4) {
                TRY(&u, "reorder", tir_sched_reorder(u.s, 2, (const tir_loop_rv[]){l[3], l[2]}));
                TRY(&u, "bind", tir_sched_bind(u.s, l[0], "blockIdx.z"));
                TRY(&u, "bind", tir_sched_bind(u.s, l[1], "blockIdx.x"));
                TRY(&u, "bind", tir_sched_bind(u.s, l[3], "threadIdx.x"));
            }
            int ns = us_loops(&u, "S", l);
            if (ns == 3) {
                TRY(&u, "bind", tir_sched_bind(u.s, l[0], "blockIdx.z"));
                split_bind(&u, l[1], t, ip);
            }
        }
        if (!(flags & 4) || variant == 2)
            TRY(&u, "compute_inline", tir_sched_compute_inline(u.s, be));
        us_loops(&u, "O", l);
        TRY(&u, "bind", tir_sched_bind(u.s, l[0], "blockIdx.z"));
        split_bind(&u, l[1], t, ip);
        if (flags & 2) TRY(&u, "unroll", tir_sched_unroll(u.s, l[2]));
        if (variant == 0) {
            TRY(&u, "set_scope", tir_sched_set_scope(u.s, bs, 0, "local"));
            TRY(&u, "compute_at", tir_sched_compute_at(u.s, bs, ip[1], false));
            if (flags & 4) {
                TRY(&u, "set_scope", tir_sched_set_scope(u.s, be, 0, "local"));
                TRY(&u, "compute_at", tir_sched_compute_at(u.s, be, ip[1], false));
            }
            if (flags & 1) {
                int ns = us_loops(&u, "S", l);
                if (ns)
                    TRY(&u, "decompose_reduction",
                        tir_sched_decompose_reduction(u.s, bs, l[ns - 1], &x));
            }
        }
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bm, 0, "local"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bm, variant == 2 ? l[0] : ip[1], false));
        if (variant == 2) {
            /* M at the batch loop in registers: every row's max in each
             * thread's copy */
        }
    } else {
        const char *names[4] = {"M", "E", "S", "O"};
        for (int k = 0; k < 4; k++) {
            us_loops(&u, names[k], l);
            if (flags & 1) {
                tir_loop_rv bi;
                TRY(&u, "fuse", tir_sched_fuse(u.s, 2, l, &bi));
                TRY(&u, "bind", tir_sched_bind(u.s, bi, "blockIdx.z"));
            } else {
                TRY(&u, "bind", tir_sched_bind(u.s, l[0], "blockIdx.z"));
                TRY(&u, "bind", tir_sched_bind(u.s, l[1], "blockIdx.x"));
            }
            if (k == 1 || k == 3) {
                us_split(&u, l[2], t, kp);
                TRY(&u, "bind", tir_sched_bind(u.s, kp[1], "threadIdx.x"));
                TRY(&u, "bind", tir_sched_bind(u.s, kp[0], "blockIdx.y"));
            } else {
                tir_loop_rv one[2];
                int nl = us_loops(&u, names[k], l);
                TRY(&u, "split",
                    tir_sched_split(u.s, l[nl - 1], 2, (const int64_t[]){1, TIR_SPLIT_INFER}, one));
                (void)one;
            }
        }
    }
    uw_finish(&u, c);
    tir_ctx_destroy(ctx);
}

static void test_bsoftmax(void **state) {
    (void)state;
    uw_counts c = {0};
    static const int sizes[][3] = {{3, 5, 7}, {2, 33, 16}, {1, 1, 1}, {4, 2, 40}};
    for (int z = 0; z < 4; z++)
        for (int v = 0; v < 3; v++)
            for (int f = 0; f < 8; f++) {
                if (v != 0 && f > 1) continue;
                bsoftmax_variant(&c, sizes[z][0], sizes[z][1], sizes[z][2], v, z % 2 ? 8 : 4, f);
            }
    report("bsoftmax", &c);
}

/* ------------------------------------------------------------ recurrences */

/* Reductions whose update does not commute: Horner's rule C = C * 3 +
 * (A[i, k] + P[i]) (int32, wrapping: the same bits in any correct schedule), a
 * string hash, an argmax whose ties go to the first index.  Their steps
 * must run in the definition's order: reorder of two reduce loops and
 * compute_at / reverse_compute_at regenerating loops in iterator order
 * were accepted and computed something else.  `order`: the definition's
 * reduce loops k1, k2 (vk = vk1 * k2n + vk2) nested k1 outside (0) or k2
 * outside (1); `upd` the update (0 Horner, 1 sum, 2 argmax). */
static const char *recur_text(int m, int k1n, int k2n, int order, int upd) {
    static char buf[4096];
    const char *grid =
        order ? "for i, k2, k1 in T.grid(%d, %d, %d):\n" : "for i, k1, k2 in T.grid(%d, %d, %d):\n";
    char g[128];
    snprintf(g, sizeof g, grid, m, order ? k2n : k1n, order ? k1n : k2n);
    const char *body =
        upd == 0   ? "                C[vi] = C[vi] * 3 + (A[vi, vk1 * %d + vk2] + P[vi])\n"
        : upd == 1 ? "                C[vi] = C[vi] + (A[vi, vk1 * %d + vk2] + P[vi]) * 3\n"
                   : NULL;
    char b[512];
    if (body) {
        snprintf(b, sizeof b,
                 "                T.reads(A[vi, 0:%d], P[vi])\n"
                 "                T.writes(C[vi])\n"
                 "                with T.init():\n"
                 "                    C[vi] = 0\n",
                 k1n * k2n);
        size_t l = strlen(b);
        snprintf(b + l, sizeof b - l, body, k2n);
    } else {
        snprintf(b, sizeof b,
                 "                T.reads(A[vi, 0:%d], P[vi])\n"
                 "                T.writes(C[vi], X[vi])\n"
                 "                with T.init():\n"
                 "                    C[vi] = -1000\n"
                 "                    X[vi] = -1\n"
                 "                X[vi] = T.Select((A[vi, vk1 * %d + vk2] + P[vi]) > C[vi], vk1 * "
                 "%d + vk2, X[vi])\n"
                 "                C[vi] = T.max(C[vi], (A[vi, vk1 * %d + vk2] + P[vi]))\n",
                 k1n * k2n, k2n, k2n, k2n);
    }
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def recur(A: T.Buffer((%d, %d), \"int32\"), Y: T.Buffer((%d,), \"int32\")):\n"
             "    with T.block(\"root\"):\n"
             "        P = T.alloc_buffer((%d,), \"int32\")\n"
             "        C = T.alloc_buffer((%d,), \"int32\")\n"
             "        X = T.alloc_buffer((%d,), \"int32\")\n"
             "        for i in range(%d):\n"
             "            with T.block(\"P\"):\n"
             "                vi = T.axis.remap(\"S\", [i])\n"
             "                T.reads(A[vi, 0])\n"
             "                T.writes(P[vi])\n"
             "                P[vi] = A[vi, 0] * 2 + 1\n"
             "        %s"
             "            with T.block(\"C\"):\n"
             "                vi, vk1, vk2 = T.axis.remap(\"SRR\", [i, k1, k2])\n"
             "%s"
             "        for i in range(%d):\n"
             "            with T.block(\"Y\"):\n"
             "                vi = T.axis.remap(\"S\", [i])\n"
             "                T.reads(C[vi]%s)\n"
             "                T.writes(Y[vi])\n"
             "                Y[vi] = C[vi] + 1%s\n",
             m, k1n * k2n, m, m, m, m, m, g, b, m, upd == 2 ? ", X[vi]" : "",
             upd == 2 ? " + X[vi] * 1000" : "");
    return buf;
}

/* What each schedule of the recurrences must give: `want` TIR_OK (then
 * lowered or not, it must match the interpreter) or the refusal. */
static void recur_case(uw_counts *c, int m, int k1n, int k2n, int order, int upd, int sched,
                       tir_status want) {
    char label[128];
    snprintf(label, sizeof label, "recurrence %dx%dx%d order %d update %d schedule %d", m, k1n, k2n,
             order, upd, sched);
    tir_ctx *ctx = tir_ctx_create();
    uw u;
    uw_start(&u, ctx, us_parse(ctx, recur_text(m, k1n, k2n, order, upd)), label, 0);
    tir_block_rv bc = us_block(&u, "C"), bp = us_block(&u, "P");
    tir_loop_rv l[16], ip[2];
    tir_status got = TIR_OK;
    const char *prim = "";
    sched_snap snap;
    if (sched == 0) {
        /* the two reduce loops swapped */
        us_loops(&u, "C", l);
        prim = "reorder";
        sched_snap_take(u.s, &snap);
        got = tir_sched_reorder(u.s, 2, (const tir_loop_rv[]){l[2], l[1]});
    } else if (sched == 1) {
        /* k1 split, its halves swapped */
        tir_loop_rv kp[2];
        us_loops(&u, "C", l);
        us_split(&u, l[order ? 2 : 1], 2, kp);
        prim = "reorder";
        sched_snap_take(u.s, &snap);
        got = tir_sched_reorder(u.s, 2, (const tir_loop_rv[]){kp[1], kp[0]});
    } else if (sched == 2) {
        /* C computed at its consumer's row loop (thread per row), local */
        us_loops(&u, "Y", l);
        split_bind(&u, l[0], 4, ip);
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bc, 0, "local"));
        prim = "compute_at";
        sched_snap_take(u.s, &snap);
        got = tir_sched_compute_at(u.s, bc, ip[1], false);
        if (got == TIR_OK) {
            TRY(&u, "set_scope", tir_sched_set_scope(u.s, bp, 0, "local"));
            TRY(&u, "compute_at", tir_sched_compute_at(u.s, bp, ip[1], false));
        }
    } else {
        /* C moved under its producer's row loop (thread per row) */
        us_loops(&u, "P", l);
        split_bind(&u, l[0], 4, ip);
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bp, 0, "local"));
        prim = "reverse_compute_at";
        sched_snap_take(u.s, &snap);
        got = tir_sched_reverse_compute_at(u.s, bc, ip[1], false);
        if (got == TIR_OK) {
            tir_block_rv by = us_block(&u, "Y");
            if (upd != 2) TRY(&u, "set_scope", tir_sched_set_scope(u.s, bc, 0, "local"));
            TRY(&u, "reverse_compute_at", tir_sched_reverse_compute_at(u.s, by, ip[1], false));
        }
    }
    if (got != want) {
        if (got == TIR_OK) sched_snap_free(&snap);
        FAILF("%s: %s returned %s, expected %s: %s", label, prim, tir_status_name(got),
              tir_status_name(want), got == TIR_OK ? "" : tir_ctx_error(ctx));
    }
    if (got != TIR_OK) {
        static char why[1 << 14];
        if (!sched_fail_ok(u.s, &snap, got, want, prim, why, sizeof why))
            FAILF("%s: %s", label, why);
        if (!strstr(tir_ctx_error(ctx), "block \"C\""))
            FAILF("%s: the message names no block", label);
        c->refused++;
        tir_sched_destroy(u.s);
    } else {
        sched_snap_free(&snap);
        uw_finish(&u, c);
    }
    tir_ctx_destroy(ctx);
}

static void test_recurrences(void **state) {
    (void)state;
    uw_counts c = {0};
    const tir_status ord = TIR_ERR_SCHED_REDUCTION_ORDER;
    for (int upd = 0; upd < 3; upd++) {
        tir_status fix = upd == 1 ? TIR_OK : ord; /* what a sum may do, a recurrence may not */
        /* reorder of the reduce loops, of a split's halves */
        recur_case(&c, 5, 3, 4, 0, upd, 0, fix);
        recur_case(&c, 5, 3, 4, 0, upd, 1, fix);
        recur_case(&c, 3, 5, 2, 1, upd, 1, fix);
        /* the definition's loops out of iterator order: compute_at and
           reverse_compute_at would run the steps in iterator order */
        if (upd != 2) recur_case(&c, 9, 3, 4, 1, upd, 2, fix);
        recur_case(&c, 9, 3, 4, 1, upd, 3, fix);
        /* in iterator order already: accepted, and right */
        if (upd != 2) recur_case(&c, 9, 3, 4, 0, upd, 2, TIR_OK);
        recur_case(&c, 9, 3, 4, 0, upd, 3, TIR_OK);
        recur_case(&c, 6, 1, 7, 1, upd, 3, TIR_OK);     /* k1 of extent 1 */
        recur_case(&c, 3, 300, 300, 0, upd, 3, TIR_OK); /* past enumeration: strides */
        recur_case(&c, 3, 300, 300, 1, upd, 3, fix);
    }
    report("recurrences", &c);
}

/* ------------------------------------------------------------ offset loops */

/* Loops and iterators that do not start at 0, as a user writes an
 * interior: rows over threads, P = 2 A + 1 and, for j in range(1, n - 1),
 * B[r, j] = P[r, j - 1] + 2 P[r, j] + P[r, j + 1] (B's border columns are
 * never written); form 1 a reduction over a window (2, 5) instead. */
static const char *offset_text(int rows, int n, int form) {
    static char buf[4096];
    int k = snprintf(buf, sizeof buf,
                     "@T.prim_func\n"
                     "def offset(A: T.Buffer((%d, %d), \"float32\"), B: T.Buffer((%d, %d), "
                     "\"float32\")):\n"
                     "    with T.block(\"root\"):\n"
                     "        P = T.alloc_buffer((%d, %d), \"float32\")\n"
                     "        for r, j in T.grid(%d, %d):\n"
                     "            with T.block(\"P\"):\n"
                     "                vr, vj = T.axis.remap(\"SS\", [r, j])\n"
                     "                T.reads(A[vr, vj])\n"
                     "                T.writes(P[vr, vj])\n"
                     "                P[vr, vj] = A[vr, vj] * T.float32(2) + T.float32(1)\n",
                     rows, n, rows, n, rows, n, rows, n);
    if (form == 0)
        snprintf(buf + k, sizeof buf - (size_t)k,
                 "        for r in range(%d):\n"
                 "            for j in T.serial(1, %d):\n"
                 "                with T.block(\"B\"):\n"
                 "                    vr = T.axis.spatial(%d, r)\n"
                 "                    vj = T.axis.spatial((1, %d), j)\n"
                 "                    T.reads(P[vr, vj - 1:vj + 2])\n"
                 "                    T.writes(B[vr, vj])\n"
                 "                    B[vr, vj] = P[vr, vj - 1] + P[vr, vj] * T.float32(2) + "
                 "P[vr, vj + 1]\n",
                 rows, n - 1, rows, n - 1);
    else
        snprintf(buf + k, sizeof buf - (size_t)k,
                 "        for r in range(%d):\n"
                 "            for j in T.serial(1, %d):\n"
                 "                for w in T.serial(2, 5):\n"
                 "                    with T.block(\"B\"):\n"
                 "                        vr = T.axis.spatial(%d, r)\n"
                 "                        vj = T.axis.spatial((1, %d), j)\n"
                 "                        vw = T.axis.reduce((2, 5), w)\n"
                 "                        T.reads(P[vr, vj - 1 + vw - 2:vj + vw])\n"
                 "                        T.writes(B[vr, vj])\n"
                 "                        with T.init():\n"
                 "                            B[vr, vj] = T.float32(0)\n"
                 "                        B[vr, vj] = B[vr, vj] + P[vr, vj - 1 + vw - 2] * "
                 "T.float32(3)\n",
                 rows, n - 1, rows, n - 1);
    return buf;
}

/* Rows over blocks and threads (r split by t); then, by `v`:
 *   0  P computed at B's j loop (min 1), in registers or global;
 *   1  P computed at B's row thread loop, local; j unrolled;
 *   2  (form 1) decompose_reduction at j, or at w; P inlined;
 *   3  B cached in a register and written back at j (reverse_compute_at);
 *   4  P's loops tiled, B moved under P's row loop (reverse_compute_at). */
static void offset_variant(uw_counts *c, int rows, int n, int form, int v, int64_t t, int flags) {
    char label[128];
    snprintf(label, sizeof label, "offset %dx%d form %d v%d t%lld f%d", rows, n, form, v,
             (long long)t, flags);
    tir_ctx *ctx = tir_ctx_create();
    uw u;
    uw_start(&u, ctx, us_parse(ctx, offset_text(rows, n, form)), label, 0);
    tir_block_rv bp = us_block(&u, "P"), bb = us_block(&u, "B"), x;
    tir_loop_rv l[16], rp[2];
    if (v == 4) {
        us_loops(&u, "P", l);
        split_bind(&u, l[0], t, rp);
        if (flags & 1) TRY(&u, "set_scope", tir_sched_set_scope(u.s, bp, 0, "local"));
        TRY(&u, "reverse_compute_at",
            tir_sched_reverse_compute_at(u.s, bb, rp[1], (flags & 2) != 0));
        uw_finish(&u, c);
        tir_ctx_destroy(ctx);
        return;
    }
    us_loops(&u, "B", l);
    split_bind(&u, l[0], t, rp);
    if (v == 0) {
        if (flags & 1) TRY(&u, "set_scope", tir_sched_set_scope(u.s, bp, 0, "local"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bp, l[1], (flags & 2) != 0));
        if (flags & 4) TRY(&u, "unroll", tir_sched_unroll(u.s, l[1]));
    } else if (v == 1) {
        TRY(&u, "set_scope", tir_sched_set_scope(u.s, bp, 0, "local"));
        TRY(&u, "compute_at", tir_sched_compute_at(u.s, bp, rp[1], (flags & 2) != 0));
        TRY(&u, "unroll", tir_sched_unroll(u.s, l[1]));
        if (flags & 1) {
            int np = us_loops(&u, "P", l);
            if (np) TRY(&u, "vectorize", tir_sched_vectorize(u.s, l[np - 1]));
        }
    } else if (v == 2) {
        if (form != 1) goto done;
        if (flags & 1)
            TRY(&u, "compute_inline", tir_sched_compute_inline(u.s, bp));
        else {
            us_loops(&u, "P", l);
            tir_loop_rv pp[2];
            split_bind(&u, l[0], t, pp);
        }
        int nb = us_loops(&u, "B", l);
        if (nb == 4)
            TRY(&u, "decompose_reduction",
                tir_sched_decompose_reduction(u.s, bb, l[(flags & 2) ? 3 : 2], &x));
        if (flags & 4) TRY(&u, "unroll", tir_sched_unroll(u.s, l[3]));
    } else {
        tir_block_rv bl;
        TRY(&u, "cache_write", tir_sched_cache_write(u.s, bb, 0, "local", 0, NULL, &bl));
        TRY(&u, "reverse_compute_at",
            tir_sched_reverse_compute_at(u.s, bl, (flags & 1) ? rp[1] : l[1], (flags & 2) != 0));
        TRY(&u, "compute_inline", tir_sched_compute_inline(u.s, bp));
    }
done:
    uw_finish(&u, c);
    tir_ctx_destroy(ctx);
}

static void test_offset_loops(void **state) {
    (void)state;
    uw_counts c = {0};
    static const int sizes[][2] = {{5, 9}, {1, 3}, {8, 33}};
    for (int z = 0; z < 3; z++)
        for (int form = 0; form < 2; form++)
            for (int v = 0; v < 5; v++)
                for (int f = 0; f < 8; f++)
                    offset_variant(&c, sizes[z][0], sizes[z][1], form, v, z == 2 ? 4 : 2, f);
    report("offset loops", &c);
}

/* ------------------------------------------------------------ pipelined blur */

/* A 2-D blur in chunks: each thread block runs `chunks` row tiles of ti
 * rows in a serial loop, the producer P (not a plain copy: 2 A + 1, or
 * the reduction form's) computed for each tile in shared memory and
 * software-pipelined against B (stages [0, 1]; flags: 1 async stage 0,
 * 2 B through a register cache, 4 A cached in shared too, as a third
 * statement). */
static void pipelined_blur(uw_counts *c, int h, int w, int form, int64_t ti, int64_t tj,
                           int64_t chunks, int flags) {
    char label[160];
    snprintf(label, sizeof label, "pipelined blur %dx%d form %d %lldx%lld chunks %lld f%d", h, w,
             form, (long long)ti, (long long)tj, (long long)chunks, flags);
    tir_ctx *ctx = tir_ctx_create();
    uw u;
    uw_start(&u, ctx, us_parse(ctx, blur_text(h, w, form)), label, form == 1 ? 1e-5 : 0);
    tir_block_rv bp = us_block(&u, "P"), bb = us_block(&u, "B");
    tir_loop_rv l[16], ip[3], jp[2];
    us_loops(&u, "B", l);
    TRY(&u, "split",
        tir_sched_split(u.s, l[0], 3, (const int64_t[]){TIR_SPLIT_INFER, chunks, ti}, ip));
    us_split(&u, l[1], tj, jp);
    TRY(&u, "reorder",
        tir_sched_reorder(u.s, 5, (const tir_loop_rv[]){ip[0], jp[0], ip[1], ip[2], jp[1]}));
    TRY(&u, "bind", tir_sched_bind(u.s, ip[0], "blockIdx.x"));
    TRY(&u, "bind", tir_sched_bind(u.s, jp[0], "blockIdx.y"));
    TRY(&u, "bind", tir_sched_bind(u.s, ip[2], "threadIdx.y"));
    TRY(&u, "bind", tir_sched_bind(u.s, jp[1], "threadIdx.x"));
    if (flags & 2) {
        tir_block_rv bl;
        TRY(&u, "cache_write", tir_sched_cache_write(u.s, bb, 0, "local", 0, NULL, &bl));
        TRY(&u, "reverse_compute_at", tir_sched_reverse_compute_at(u.s, bl, jp[1], false));
    }
    tir_block_rv as = {0, 0};
    if (flags & 4) TRY(&u, "cache_read", tir_sched_cache_read(u.s, bp, 0, "shared", 0, NULL, &as));
    TRY(&u, "set_scope", tir_sched_set_scope(u.s, bp, 0, "shared"));
    TRY(&u, "compute_at", tir_sched_compute_at(u.s, bp, ip[1], false));
    if (flags & 4) TRY(&u, "compute_at", tir_sched_compute_at(u.s, as, ip[1], false));
    const char *names[2] = {"P", "A_shared"};
    for (int k = 0; k < ((flags & 4) ? 2 : 1); k++) {
        tir_loop_rv pl[16], fu, fp[3];
        int np = us_loops(&u, names[k], pl);
        if (np < 5) continue;
        TRY(&u, "fuse", tir_sched_fuse(u.s, np - 3, pl + 3, &fu));
        TRY(&u, "split",
            tir_sched_split(u.s, fu, 3, (const int64_t[]){TIR_SPLIT_INFER, ti, tj}, fp));
        TRY(&u, "bind", tir_sched_bind(u.s, fp[1], "threadIdx.y"));
        TRY(&u, "bind", tir_sched_bind(u.s, fp[2], "threadIdx.x"));
    }
    int n = (flags & 4) ? 3 : 2;
    int64_t st[3] = {0, 0, 1}, ord[3] = {0, 1, 2}, as0[1] = {0};
    if (n == 2) st[1] = 1;
    TRY(&u, "software_pipeline",
        tir_sched_software_pipeline(u.s, ip[1], n, st, n, ord, (flags & 1) ? 1 : 0, as0));
    uw_finish(&u, c);
    tir_ctx_destroy(ctx);
}

static void test_pipelined_blur(void **state) {
    (void)state;
    uw_counts c = {0};
    for (int form = 0; form < 2; form++)
        for (int f = 0; f < 8; f++) {
            pipelined_blur(&c, 16, 16, form, 4, 8, 2, f);
            pipelined_blur(&c, 13, 7, form, 2, 4, 3, f);
            pipelined_blur(&c, 5, 9, form, 2, 4, 4, f);
        }
    report("pipelined blur", &c);
}

/* ------------------------------------------------------------ random GPU schedules */

/* A random GPU schedule of a multi-stage workload, drawn the way a user
 * composes one: the last block (the anchor) tiled over blocks and threads
 * (its spatial loops split, some fused first, ragged factors included),
 * then every other block, last to first, inlined, computed at the
 * anchor's block loop (shared or global) with a cooperative fetch over
 * the kernel's thread extents, computed at the anchor's thread loop
 * (local or global), rfactored (reductions), or given its own nest; then
 * extras: an input cached in shared memory at the block loop, the
 * anchor's output through a register cache, decompose_reduction,
 * unroll, vectorize, storage_align.  Refusals are expected and counted;
 * what is accepted must compute what the original does. */

typedef struct wl_block {
    const char *name;
    int nsp, nred; /* spatial loops first, then reduce loops */
} wl_block;

typedef struct wl_def {
    const char *name;
    const tir_prim_func *(*make)(tir_ctx *ctx, uint64_t *r);
    int nblocks;
    wl_block blocks[5];
    double rtol;
} wl_def;

static int64_t rnd(uint64_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(sched_rand(r) % (uint64_t)(hi - lo + 1));
}

static const tir_prim_func *mk_layernorm(tir_ctx *ctx, uint64_t *r) {
    return us_parse(ctx, layernorm_text((int)rnd(r, 1, 13), (int)rnd(r, 1, 40)));
}
static const tir_prim_func *mk_blur0(tir_ctx *ctx, uint64_t *r) {
    return us_parse(ctx, blur_text((int)rnd(r, 1, 17), (int)rnd(r, 1, 17), 0));
}
static const tir_prim_func *mk_blur1(tir_ctx *ctx, uint64_t *r) {
    return us_parse(ctx, blur_text((int)rnd(r, 1, 17), (int)rnd(r, 1, 17), 1));
}
static const tir_prim_func *mk_conv(tir_ctx *ctx, uint64_t *r) {
    int64_t k = rnd(r, 1, 3);
    return tir_def_conv2d_nchw(ctx, rnd(r, 1, 2), rnd(r, 1, 3), rnd(r, k, 9), rnd(r, k, 9),
                               rnd(r, 1, 4), k, k, rnd(r, 1, 2), rnd(r, 0, 1), TIR_F32);
}
static const tir_prim_func *mk_chain(tir_ctx *ctx, uint64_t *r) {
    return tir_def_elementwise_chain(ctx, rnd(r, 1, 20), rnd(r, 1, 40), TIR_F32);
}
static const tir_prim_func *mk_bsoftmax(tir_ctx *ctx, uint64_t *r) {
    return us_parse(ctx, bsoftmax_text((int)rnd(r, 1, 3), (int)rnd(r, 1, 9), (int)rnd(r, 1, 20)));
}

/* A transpose through an elementwise producer, B[j, i] = P[i, j], P = A
 * * 3 + 1, in float32, float16, int8 or int32 at ragged sizes. */
static const char *const dtypes[] = {"float32", "float16", "int8", "int32"};
static const tir_prim_func *mk_transpose(tir_ctx *ctx, uint64_t *r) {
    static char buf[4096];
    int m = (int)rnd(r, 1, 40), n = (int)rnd(r, 1, 40);
    const char *dt = dtypes[rnd(r, 0, 3)];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def transpose(A: T.Buffer((%d, %d), \"%s\"), B: T.Buffer((%d, %d), \"%s\")):\n"
             "    with T.block(\"root\"):\n"
             "        P = T.alloc_buffer((%d, %d), \"%s\")\n"
             "        for i, j in T.grid(%d, %d):\n"
             "            with T.block(\"P\"):\n"
             "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
             "                T.reads(A[vi, vj])\n"
             "                T.writes(P[vi, vj])\n"
             "                P[vi, vj] = A[vi, vj] * T.%s(3) + T.%s(1)\n"
             "        for j, i in T.grid(%d, %d):\n"
             "            with T.block(\"B\"):\n"
             "                vj, vi = T.axis.remap(\"SS\", [j, i])\n"
             "                T.reads(P[vi, vj])\n"
             "                T.writes(B[vj, vi])\n"
             "                B[vj, vi] = P[vi, vj]\n",
             m, n, dt, n, m, dt, m, n, dt, m, n, dt, dt, n, m);
    return us_parse(ctx, buf);
}
/* A 3-D elementwise pair over fused loops of different extents. */
static const tir_prim_func *mk_fused3d(tir_ctx *ctx, uint64_t *r) {
    static char buf[4096];
    int a = (int)rnd(r, 1, 5), b = (int)rnd(r, 1, 37), c = (int)rnd(r, 1, 9);
    const char *dt = dtypes[rnd(r, 0, 3)];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def fused3d(A: T.Buffer((%d, %d, %d), \"%s\"), E: T.Buffer((%d, %d, %d), \"%s\")):\n"
             "    with T.block(\"root\"):\n"
             "        P = T.alloc_buffer((%d, %d, %d), \"%s\")\n"
             "        for x, y, z in T.grid(%d, %d, %d):\n"
             "            with T.block(\"P\"):\n"
             "                vx, vy, vz = T.axis.remap(\"SSS\", [x, y, z])\n"
             "                T.reads(A[vx, vy, vz])\n"
             "                T.writes(P[vx, vy, vz])\n"
             "                P[vx, vy, vz] = A[vx, vy, vz] * T.%s(3)\n"
             "        for x, y, z in T.grid(%d, %d, %d):\n"
             "            with T.block(\"E\"):\n"
             "                vx, vy, vz = T.axis.remap(\"SSS\", [x, y, z])\n"
             "                T.reads(P[vx, vy, vz])\n"
             "                T.writes(E[vx, vy, vz])\n"
             "                E[vx, vy, vz] = P[vx, vy, vz] + T.%s(1)\n",
             a, b, c, dt, a, b, c, dt, a, b, c, dt, a, b, c, dt, a, b, c, dt);
    return us_parse(ctx, buf);
}

/* The seventh new-user review's workloads: a block whose body is a loop
 * of its own (Horner's rule written out, a second output), and an int32
 * conv1d with stride, dilation and channels whose reduction is a max
 * from a non-identity init or a sum, with a transposing epilogue. */
static const tir_prim_func *make_p_inner(tir_ctx *ctx, uint64_t *r) {
    long long m = rnd(r, 1, 11), k = rnd(r, 1, 6);
    char text[3000];
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def p_inner(A: T.Buffer((%lld, %lld), \"int32\"), Y: T.Buffer((%lld,), \"int32\"), Z: T.Buffer((%lld,), \"int32\")):\n"
             "    with T.block(\"root\"):\n"
             "        C = T.alloc_buffer((%lld,), \"int32\")\n"
             "        D = T.alloc_buffer((%lld,), \"int32\")\n"
             "        for i in range(%lld):\n"
             "            with T.block(\"C\"):\n"
             "                vi = T.axis.remap(\"S\", [i])\n"
             "                T.reads(A[vi, 0:%lld])\n"
             "                T.writes(C[vi], D[vi])\n"
             "                C[vi] = 5\n"
             "                for kk in range(%lld):\n"
             "                    C[vi] = C[vi] * 3 + A[vi, kk]\n"
             "                D[vi] = A[vi, 0] - 2\n"
             "        for i in range(%lld):\n"
             "            with T.block(\"Y\"):\n"
             "                vi = T.axis.remap(\"S\", [i])\n"
             "                T.reads(C[vi], D[%lld - 1 - vi])\n"
             "                T.writes(Y[vi])\n"
             "                Y[vi] = C[vi] - D[%lld - 1 - vi]\n"
             "        for i in range(%lld):\n"
             "            with T.block(\"Z\"):\n"
             "                vi = T.axis.remap(\"S\", [i])\n"
             "                T.reads(D[vi])\n"
             "                T.writes(Z[vi])\n"
             "                Z[vi] = D[vi] * 7\n",
             m, k, m, m, m, m, m, k, k, m, m, m, m);
    return us_parse(ctx, text);
}

/* int32 max-reduction with a non-identity init, transposed output, a
 * strided/dilated read, and an epilogue. */
static const tir_prim_func *make_p_conv1d(tir_ctx *ctx, uint64_t *r) {
    long long n = rnd(r, 1, 9), k = rnd(r, 1, 5), st = rnd(r, 1, 3), dl = rnd(r, 1, 2), c = rnd(r, 1, 3);
    long long len = (n - 1) * st + (k - 1) * dl + 1;
    bool mx = rnd(r, 0, 1);
    char text[3000], upd[200];
    if (mx) snprintf(upd, sizeof upd, "T.max(C[vc, vi], A[vc, vi * %lld + vk * %lld] * W[vk])", st, dl);
    else snprintf(upd, sizeof upd, "C[vc, vi] + A[vc, vi * %lld + vk * %lld] * W[vk]", st, dl);
    snprintf(text, sizeof text,
             "@T.prim_func\n"
             "def p_conv1d(A: T.Buffer((%lld, %lld), \"int32\"), W: T.Buffer((%lld,), \"int32\"), b: T.Buffer((%lld,), \"int32\"), Y: T.Buffer((%lld, %lld), \"int32\")):\n"
             "    with T.block(\"root\"):\n"
             "        C = T.alloc_buffer((%lld, %lld), \"int32\")\n"
             "        for c, i, k in T.grid(%lld, %lld, %lld):\n"
             "            with T.block(\"C\"):\n"
             "                vc, vi, vk = T.axis.remap(\"SSR\", [c, i, k])\n"
             "                T.reads(A[vc, vi * %lld + vk * %lld], W[vk])\n"
             "                T.writes(C[vc, vi])\n"
             "                with T.init():\n"
             "                    C[vc, vi] = %s\n"
             "                C[vc, vi] = %s\n"
             "        for i, c in T.grid(%lld, %lld):\n"
             "            with T.block(\"Y\"):\n"
             "                vi, vc = T.axis.remap(\"SS\", [i, c])\n"
             "                T.reads(C[vc, vi], b[vi])\n"
             "                T.writes(Y[vi, vc])\n"
             "                Y[vi, vc] = C[vc, vi] + b[vi]\n",
             c, len, k, n, n, c, c, n, c, n, k, st, dl, mx ? (rnd(r, 0, 1) ? "-2147483648" : "0") : (rnd(r,0,1) ? "0" : "3"), upd, n, c);
    return us_parse(ctx, text);
}


static const wl_def wl_defs[] = {
    {"layernorm", mk_layernorm, 3, {{"S", 1, 1}, {"V", 1, 1}, {"O", 2, 0}}, 1e-5},
    {"blur", mk_blur0, 2, {{"P", 2, 0}, {"B", 2, 0}}, 0},
    {"blur_red", mk_blur1, 2, {{"P", 2, 0}, {"B", 2, 2}}, 1e-5},
    {"conv2d", mk_conv, 2, {{"pad", 4, 0}, {"conv", 4, 3}}, 1e-5},
    {"chain", mk_chain, 3, {{"B", 2, 0}, {"C", 2, 0}, {"D", 2, 0}}, 0},
    {"bsoftmax", mk_bsoftmax, 4, {{"M", 2, 1}, {"E", 3, 0}, {"S", 2, 1}, {"O", 3, 0}}, 1e-5},
    {"transpose", mk_transpose, 2, {{"P", 2, 0}, {"B", 2, 0}}, 0},
    {"fused3d", mk_fused3d, 2, {{"P", 3, 0}, {"E", 3, 0}}, 0},
    {"inner_loop", make_p_inner, 3, {{"C", 1, 0}, {"Y", 1, 0}, {"Z", 1, 0}}, 0},
    {"conv1d_i32", make_p_conv1d, 2, {{"C", 2, 1}, {"Y", 2, 0}}, 0},
};

typedef struct rg {
    uw u;
    uint64_t *r;
    int64_t tx, ty;       /* the kernel's thread extents (ty 1: no threadIdx.y) */
    bool rows;            /* tile only the first loop (rows over threads) */
    tir_loop_rv blk, thr; /* the anchor's innermost block and thread loops */
} rg;

/* Spreads the loops of `name` below its first `skip` over the threads:
 * fused, split [None, ty, tx] (or [None, tx]), maybe a vector of 2 or 4
 * innermost (split past the extent, vectorized). */
static void rg_fetch(rg *g, const char *name, int skip) {
    uw *u = &g->u;
    tir_loop_rv l[16], fu, p[4];
    int n = us_loops(u, name, l);
    if (u->st != TIR_OK) return;
    if (n <= skip) {
        TRY(u, "bind", tir_sched_bind(u->s, (tir_loop_rv){0, 0}, "threadIdx.x"));
        return;
    }
    fu = l[skip];
    if (n - skip > 1) TRY(u, "fuse", tir_sched_fuse(u->s, n - skip, l + skip, &fu));
    int64_t vec = rnd(g->r, 0, 3) == 0 ? (rnd(g->r, 0, 1) ? 2 : 4) : 0;
    int64_t f[4];
    int nf = 0;
    f[nf++] = TIR_SPLIT_INFER;
    if (g->ty > 1) f[nf++] = g->ty;
    f[nf++] = g->tx;
    if (vec) f[nf++] = vec;
    TRY(u, "split", tir_sched_split(u->s, fu, nf, f, p));
    if (g->ty > 1) TRY(u, "bind", tir_sched_bind(u->s, p[1], "threadIdx.y"));
    TRY(u, "bind", tir_sched_bind(u->s, p[g->ty > 1 ? 2 : 1], "threadIdx.x"));
    if (vec) TRY(u, "vectorize", tir_sched_vectorize(u->s, p[nf - 1]));
}

/* Tiles the first `nsp` loops of `name` over blocks and the kernel's
 * threads; leaves the innermost block and thread loops in g (when
 * anchor). */
static void rg_tile(rg *g, const char *name, int nsp, bool anchor) {
    uw *u = &g->u;
    tir_loop_rv l[16];
    us_loops(u, name, l);
    if (u->st != TIR_OK) return;
    /* rows: only the first loop over blocks and threads, the rest serial
     * (a row per thread, what row reductions computed at the thread loop
     * need) */
    if (g->rows && nsp >= 2) {
        tir_loop_rv a[2];
        TRY(u, "split",
            tir_sched_split(u->s, l[0], 2, (const int64_t[]){TIR_SPLIT_INFER, g->tx}, a));
        TRY(u, "bind", tir_sched_bind(u->s, a[0], "blockIdx.x"));
        TRY(u, "bind", tir_sched_bind(u->s, a[1], "threadIdx.x"));
        if (anchor) g->blk = a[0], g->thr = a[1];
        return;
    }
    /* fuse the leading spatial loops down to one or two */
    int keep = g->ty > 1 && nsp >= 2 ? 2 : 1;
    tir_loop_rv sp[4];
    int ns = 0;
    if (keep == 1) {
        sp[0] = l[0];
        if (nsp > 1) TRY(u, "fuse", tir_sched_fuse(u->s, nsp, l, &sp[0]));
        ns = 1;
    } else {
        sp[0] = l[0];
        if (nsp > 2) TRY(u, "fuse", tir_sched_fuse(u->s, nsp - 1, l, &sp[0]));
        sp[1] = l[nsp - 1];
        ns = 2;
    }
    tir_loop_rv a[2], b[2];
    int64_t t0 = ns == 2 ? g->ty : g->tx;
    TRY(u, "split", tir_sched_split(u->s, sp[0], 2, (const int64_t[]){TIR_SPLIT_INFER, t0}, a));
    if (ns == 2) {
        TRY(u, "split",
            tir_sched_split(u->s, sp[1], 2, (const int64_t[]){TIR_SPLIT_INFER, g->tx}, b));
        TRY(u, "reorder",
            tir_sched_reorder(u->s, 4, (const tir_loop_rv[]){a[0], b[0], a[1], b[1]}));
        TRY(u, "bind", tir_sched_bind(u->s, a[0], "blockIdx.y"));
        TRY(u, "bind", tir_sched_bind(u->s, b[0], "blockIdx.x"));
        TRY(u, "bind", tir_sched_bind(u->s, a[1], "threadIdx.y"));
        TRY(u, "bind", tir_sched_bind(u->s, b[1], "threadIdx.x"));
        if (anchor) g->blk = b[0], g->thr = b[1];
    } else {
        TRY(u, "bind", tir_sched_bind(u->s, a[0], "blockIdx.x"));
        TRY(u, "bind", tir_sched_bind(u->s, a[1], g->ty > 1 ? "threadIdx.y" : "threadIdx.x"));
        if (g->ty > 1) {
            /* a threadIdx.x loop of extent tx: the row's reduction split */
            tir_loop_rv in[16];
            int n = us_loops(u, name, in);
            if (n > 2) {
                tir_loop_rv c[2];
                TRY(u, "split",
                    tir_sched_split(u->s, in[2], 2, (const int64_t[]){TIR_SPLIT_INFER, g->tx}, c));
                TRY(u, "reorder", tir_sched_reorder(u->s, 2, (const tir_loop_rv[]){c[1], c[0]}));
                TRY(u, "bind", tir_sched_bind(u->s, c[1], "threadIdx.x"));
            }
        }
        if (anchor) g->blk = a[0], g->thr = a[1];
    }
}

static void rg_case(const wl_def *d, uint64_t seed, long index, uw_counts *c) {
    uint64_t rs = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(index + 1)), *r = &rs;
    char label[160];
    snprintf(label, sizeof label, "random %s seed %llu case %ld", d->name, (unsigned long long)seed,
             index);
    tir_ctx *ctx = tir_ctx_create();
    rg g;
    memset(&g, 0, sizeof g);
    g.r = r;
    uw *u = &g.u;
    uw_start(u, ctx, d->make(ctx, r), label, d->rtol);
    u->inexact = d->make == mk_bsoftmax;
    static const int64_t txs[] = {1, 2, 3, 4, 8, 16, 32, 5};
    g.tx = txs[rnd(r, 0, 7)];
    g.ty = rnd(r, 0, 2) ? 1 : txs[rnd(r, 0, 4)];
    g.rows = rnd(r, 0, 1);
    if (g.rows) g.ty = 1;
    const wl_block *an = &d->blocks[d->nblocks - 1];
    if (an->nred && rnd(r, 0, 3) == 0) {
        tir_block_rv ab = us_block(u, an->name), al;
        TRY(u, "cache_write", tir_sched_cache_write(u->s, ab, 0, "local", 0, NULL, &al));
        rg_tile(&g, an->name, an->nsp, true);
        TRY(u, "reverse_compute_at", tir_sched_reverse_compute_at(u->s, al, g.thr, rnd(r, 0, 1)));
    } else if (rnd(r, 0, 5) == 0) {
        /* the output staged in shared memory, written back by the
           threads at the block loop */
        tir_block_rv ab = us_block(u, an->name), as;
        TRY(u, "cache_write", tir_sched_cache_write(u->s, ab, 0, "shared", 0, NULL, &as));
        rg_tile(&g, an->name, an->nsp, true);
        TRY(u, "reverse_compute_at", tir_sched_reverse_compute_at(u->s, as, g.blk, rnd(r, 0, 1)));
        if (u->st == TIR_OK) {
            const tir_block *bn;
            tir_sched_get_block_node(u->s, as, &bn);
            char nm[128];
            snprintf(nm, sizeof nm, "%s", bn->name);
            tir_loop_rv l[16];
            int n = us_loops(u, nm, l), skip = 0;
            for (int k = 0; k < n; k++)
                if (tir_sched_same_loop(u->s, l[k], g.blk)) skip = k + 1;
            rg_fetch(&g, nm, skip);
        }
    } else {
        rg_tile(&g, an->name, an->nsp, true);
    }
    for (int b = d->nblocks - 2; b >= 0 && u->st == TIR_OK; b--) {
        const wl_block *wb = &d->blocks[b];
        tir_block_rv bb = us_block(u, wb->name), x;
        int how = (int)rnd(r, 0, 5);
        if (how == 0) {
            TRY(u, "compute_inline", tir_sched_compute_inline(u->s, bb));
        } else if (how == 1 || how == 2) {
            /* at the block loop, shared (or global), fetched by the threads */
            TRY(u, "set_scope",
                tir_sched_set_scope(u->s, bb, 0, rnd(r, 0, 3) ? "shared" : "global"));
            if (wb->nsp == 2 && rnd(r, 0, 3) == 0)
                TRY(u, "transform_layout",
                    tir_sched_transform_layout(u->s, bb, 0, true, "lambda a, b: (b, a)"));
            TRY(u, "compute_at", tir_sched_compute_at(u->s, bb, g.blk, rnd(r, 0, 1)));
            tir_loop_rv l[16];
            int n = us_loops(u, wb->name, l), skip = 0;
            for (int k = 0; k < n; k++)
                if (tir_sched_same_loop(u->s, l[k], g.blk)) skip = k + 1;
            if (wb->nred) {
                /* the reduce loops stay serial: spread only the spatial ones */
                if (n - skip > wb->nred) {
                    tir_loop_rv fu = l[skip], p[3];
                    int nsp = n - skip - wb->nred;
                    if (nsp > 1) TRY(u, "fuse", tir_sched_fuse(u->s, nsp, l + skip, &fu));
                    TRY(u, "split",
                        tir_sched_split(u->s, fu, 2, (const int64_t[]){TIR_SPLIT_INFER, g.tx}, p));
                    TRY(u, "bind", tir_sched_bind(u->s, p[1], "threadIdx.x"));
                }
            } else {
                rg_fetch(&g, wb->name, skip);
            }
            if (rnd(r, 0, 2) == 0)
                TRY(u, "storage_align", tir_sched_storage_align(u->s, bb, 0, 0, rnd(r, 1, 16), 0));
        } else if (how == 3) {
            TRY(u, "set_scope",
                tir_sched_set_scope(u->s, bb, 0, rnd(r, 0, 3) ? "local" : "global"));
            TRY(u, "compute_at", tir_sched_compute_at(u->s, bb, g.thr, rnd(r, 0, 1)));
        } else if (how == 4 && wb->nred) {
            tir_loop_rv l[16], kp[2];
            int n = us_loops(u, wb->name, l);
            if (n == wb->nsp + wb->nred) {
                tir_block_rv rf;
                us_split(u, l[wb->nsp], g.tx, kp);
                TRY(u, "rfactor", tir_sched_rfactor(u->s, kp[1], (int)rnd(r, -1, 0), &rf));
                /* the partial sums: spatial loops then kp[1] */
                int nr = us_loops(u, tir_ctx_sprintf(ctx, "%s_rf", wb->name), l);
                if (nr > 0) {
                    tir_loop_rv fu = l[0];
                    if (wb->nsp > 1) TRY(u, "fuse", tir_sched_fuse(u->s, wb->nsp, l, &fu));
                    TRY(u, "reorder",
                        tir_sched_reorder(u->s, 2, (const tir_loop_rv[]){kp[1], kp[0]}));
                    TRY(u, "bind", tir_sched_bind(u->s, fu, "blockIdx.x"));
                    TRY(u, "bind", tir_sched_bind(u->s, kp[1], "threadIdx.x"));
                    if (rnd(r, 0, 1))
                        TRY(u, "decompose_reduction",
                            tir_sched_decompose_reduction(u->s, rf, kp[0], &x));
                }
                int64_t sty = g.ty;
                g.ty = 1;
                rg_tile(&g, wb->name, wb->nsp, false);
                g.ty = sty;
            }
        } else {
            int64_t sty = g.ty;
            g.ty = rnd(r, 0, 1) ? 1 : g.ty;
            rg_tile(&g, wb->name, wb->nsp, false);
            g.ty = sty;
        }
        if (wb->nred && rnd(r, 0, 2) == 0) {
            tir_loop_rv l[16];
            int n = us_loops(u, wb->name, l);
            if (n >= wb->nred)
                TRY(u, "decompose_reduction",
                    tir_sched_decompose_reduction(u->s, bb, l[n - wb->nred], &x));
        }
    }
    /* an input through shared memory at the block loop */
    if (rnd(r, 0, 3) == 0) {
        tir_block_rv ab = us_block(u, an->name), cs;
        TRY(u, "cache_read", tir_sched_cache_read(u->s, ab, 0, "shared", 0, NULL, &cs));
        if (u->st == TIR_OK) {
            const tir_block *bn;
            tir_sched_get_block_node(u->s, cs, &bn);
            char nm[128];
            snprintf(nm, sizeof nm, "%s", bn->name);
            TRY(u, "compute_at", tir_sched_compute_at(u->s, cs, g.blk, rnd(r, 0, 1)));
            int64_t factor = rnd(r, 1, 32);
            if (rnd(r, 0, 2) == 0)
                TRY(u, "storage_align",
                    tir_sched_storage_align(u->s, cs, 0, 0, factor, factor > 1 ? 1 : 0));
            tir_loop_rv l[16];
            int n = us_loops(u, nm, l);
            int skip = 0;
            for (int k = 0; k < n; k++)
                if (tir_sched_same_loop(u->s, l[k], g.blk)) skip = k + 1;
            rg_fetch(&g, nm, skip);
        }
    }
    /* extras on the anchor */
    if (u->st == TIR_OK && an->nred && rnd(r, 0, 1)) {
        tir_loop_rv l[16];
        tir_block_rv x;
        int n = us_loops(u, an->name, l);
        if (n >= an->nred) {
            int at = (int)rnd(r, n - an->nred, n - 1);
            tir_block_rv ab = us_block(u, an->name);
            TRY(u, "decompose_reduction", tir_sched_decompose_reduction(u->s, ab, l[at], &x));
        }
    }
    if (u->st == TIR_OK && rnd(r, 0, 1)) {
        tir_loop_rv l[16];
        int n = us_loops(u, an->name, l);
        if (n > 0) {
            if (rnd(r, 0, 1))
                TRY(u, "unroll", tir_sched_unroll(u->s, l[n - 1]));
            else
                TRY(u, "vectorize", tir_sched_vectorize(u->s, l[n - 1]));
        }
    }
    uw_finish(u, c);
    tir_ctx_destroy(ctx);
}

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static void test_random(void **state) {
    (void)state;
    long cases = env_long("MINITIR_UW_CASES", 300);
    uint64_t seed = (uint64_t)env_long("MINITIR_FUZZ_SEED", 20261206);
    for (size_t d = 0; d < sizeof wl_defs / sizeof *wl_defs; d++) {
        uw_counts c = {0};
        for (long i = 0; i < cases; i++) rg_case(&wl_defs[d], seed + d, i, &c);
        fprintf(stderr,
                "# random %s: %ld cases, %d lowered and matched, %d refused by a "
                "primitive, %d by lowering\n",
                wl_defs[d].name, cases, c.accepted, c.refused, c.lower_refused);
    }
    fprintf(stderr, "# PTX in the PTX interpreter: %ld variants, %ld direct, %ld LLVM\n",
            ptx_variants, ptx_direct_runs, ptx_llvm_runs);
}

int main(void) {
    const char *v = getenv("MINITIR_UW_VERBOSE");
    verbose = v && *v && strcmp(v, "0") != 0;
    const char *px = getenv("MINITIR_UW_PTX");
    if (px && *px) ptx_llvm_every = !strcmp(px, "all") ? 1 : !strcmp(px, "0") ? -1 : atoi(px);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm),    cmocka_unit_test(test_blur),
        cmocka_unit_test(test_conv2d),       cmocka_unit_test(test_chain),
        cmocka_unit_test(test_bsoftmax),     cmocka_unit_test(test_recurrences),
        cmocka_unit_test(test_offset_loops), cmocka_unit_test(test_pipelined_blur),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
