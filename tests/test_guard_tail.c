/* test_guard_tail.c: software pipelines without a peeled epilogue
 * ("software_pipeline_guard_tail" and "software_pipeline_clamp_tail",
 * docs/lowering.md, sw_pipeline), which the tiling rules of Step 8
 * (register staging, tir_tune_tiling) and Step 9 (cp.async,
 * tir_tune_tc_tiling) set on their k-tile pipeline when their config's
 * guard_tail or clamp_tail asks.  Every case runs once per tail (`mode`).
 *
 * Each case schedules a matmul with a rule and lowers it twice: as the
 * rule leaves it (the guarded tail) and with tir_lower_opts
 * .pipeline_peel_tail (the epilogue peeled).  Both kernels run in the SIMT
 * simulator with race and uninitialised-read checks (the output starts
 * poisoned): on small-integer inputs the guarded kernel's output equals
 * the interpreter's on the unscheduled matmul exactly (fp32; Step 9 within
 * the type's tolerance), and on random inputs the two kernels' outputs are
 * bit-identical (the same operations in the same order).  The guarded
 * kernel has the compute once (the peeled one S + 1 times where the loop
 * covers the tail whole), the same barrier count in the simulator, and no
 * barrier under an If.  Step 9 runs at stages 2, 3 and 4 with async copies,
 * at k-tile counts that the unrolled loop divides and that leave static
 * times after it, and ragged M and N.  Edge cases: a pipeline with extent
 * <= S lowers exactly as peeled; the value 0 peels; other values are
 * refused by tir_lower.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/lower.h"
#include "minitir/runtime.h"
#include "minitir/sim.h"
#include "minitir/tune.h"

#define OK(ctx, call)                                                                     \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) fail_msg("%s: %s", #call, tir_ctx_error(ctx));                 \
    } while (0)

/* the tail under test: guarded (software_pipeline_guard_tail) or clamped
 * (software_pipeline_clamp_tail: no guard, the last tile loaded again, so
 * more cp.async copies than the peeled kernel) */
static bool clamp_mode;

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* ---- kernel structure */

typedef struct shape {
    int ifs;           /* If depth of the walk */
    int barriers_in_if; /* syncthreads under an If */
    int mma;           /* mma_sync calls, times the extents of the unrolled
                          loops around them (interleave splits some of those
                          loops into their iterations) */
    int acc_updates;   /* stores x[i] = x[i] + ... to a local buffer */
    int unroll;        /* product of the unrolled loops' extents around the walk */
} shape;

static int unrolled_extent(const tir_node *n) {
    int64_t e;
    if (n->kind != TIR_KIND_FOR) return 1;
    const tir_for *f = (const tir_for *)n;
    return f->kind == TIR_FOR_UNROLLED && tir_expr_const_int(f->extent, &e) ? (int)e : 1;
}

static bool is_call(const tir_node *n, tir_intrin op) {
    return n->kind == TIR_KIND_CALL && ((const tir_call *)n)->op == op;
}

static bool shape_pre(tir_visitor *v, const tir_node *n) {
    shape *s = v->user;
    if (n->kind == TIR_KIND_IF) s->ifs++;
    if (is_call(n, TIR_INTRIN_SYNCTHREADS) && s->ifs > 0) s->barriers_in_if++;
    if (is_call(n, TIR_INTRIN_MMA_SYNC)) s->mma += s->unroll;
    s->unroll *= unrolled_extent(n);
    if (n->kind == TIR_KIND_BUFFER_STORE) {
        const tir_buffer_store *st = (const tir_buffer_store *)n;
        const tir_binop *add = tir_as_tir_binop(st->value);
        const tir_buffer_load *l = add && ((const tir_node *)add)->kind == TIR_KIND_ADD
                                       ? tir_as_tir_buffer_load(add->a)
                                       : NULL;
        if (st->buffer->scope == TIR_SCOPE_LOCAL && l && l->buffer == st->buffer) s->acc_updates++;
    }
    return true;
}

static void shape_post(tir_visitor *v, const tir_node *n) {
    shape *s = v->user;
    if (n->kind == TIR_KIND_IF) s->ifs--;
    s->unroll /= unrolled_extent(n);
}

static shape shape_of(const tir_prim_func *k) {
    shape s = {.unroll = 1};
    tir_visitor v = {.pre = shape_pre, .post = shape_post, .user = &s};
    tir_visit(&v, k->body);
    return s;
}

/* ---- running */

/* Runs ks in the simulator with race and uninitialised-read checks on
 * inputs in[0..1] (out poisoned first); the report of the last kernel. */
static tir_sim_report sim(tir_ctx *ctx, const tir_kernel_set *ks, void *a, void *b, float *out,
                          size_t nout) {
    tir_rt_poison(out, 4 * nout);
    tir_arg args[3] = {{a, 0}, {b, 0}, {out, 0}};
    tir_sim_opts so = {.uninit_params = 4, .check_uninit = true};
    tir_sim_report rep[2];
    OK(ctx, tir_sim_run_kernels(ctx, ks, 3, args, &so, rep));
    return rep[ks->nkernels - 1];
}

static void lower_both(tir_ctx *ctx, const tir_prim_func *g, tir_kernel_set *guard,
                       tir_kernel_set *peel) {
    tir_lower_opts lo;
    tir_lower_opts_init(&lo);
    OK(ctx, tir_lower_kernels(ctx, g, &lo, guard));
    lo.pipeline_peel_tail = true;
    OK(ctx, tir_lower_kernels(ctx, g, &lo, peel));
}

/* Fills n elements of type dt: small integers (exact sums) or random. */
static void *inputs(tir_ctx *ctx, tir_dtype dt, size_t n, bool ints, uint64_t seed) {
    void *p = malloc(n * (size_t)tir_dtype_bytes(dt));
    assert_non_null(p);
    if (!ints) {
        OK(ctx, tir_rt_fill_random(ctx, dt, p, n, seed));
        return p;
    }
    assert_true(dt.code == TIR_F32.code && dt.bits == 32);
    float *f = p;
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        f[i] = (float)((int64_t)(seed % 7) - 3);
    }
    return p;
}

/* The two lowerings of g (the scheduled matmul f, M x N x K, inputs of
 * type in) checked as the file's comment says; expects (guarded, peeled)
 * compute counts from the caller through *sg and *sp. */
static void check_both(tir_ctx *ctx, const tir_prim_func *f, const tir_prim_func *g, tir_dtype in,
                       int64_t M, int64_t N, int64_t K, int64_t S, shape *sg, shape *sp) {
    tir_kernel_set guard, peel;
    lower_both(ctx, g, &guard, &peel);
    *sg = shape_of(guard.kernels[0]);
    *sp = shape_of(peel.kernels[0]);
    assert_int_equal(sg->barriers_in_if, 0);
    size_t nc = (size_t)(M * N);
    float *want = malloc(4 * nc), *o1 = malloc(4 * nc), *o2 = malloc(4 * nc);
    bool f32 = in.code == TIR_F32.code && in.bits == 32;
    /* 1. against the interpreter */
    void *a = inputs(ctx, in, (size_t)(M * K), f32, 11), *b = inputs(ctx, in, (size_t)(K * N), f32, 12);
    tir_arg args[3] = {{a, 0}, {b, 0}, {want, 0}};
    tir_interp_opts io = {.uninit_params = 4};
    OK(ctx, tir_interp_run(ctx, f, 3, args, &io));
    tir_sim_report rg = sim(ctx, &guard, a, b, o1, nc);
    if (f32) {
        for (size_t i = 0; i < nc; i++)
            if (memcmp(&o1[i], &want[i], 4))
                fail_msg("out[%zu]: guarded %g, interpreter %g", i, o1[i], want[i]);
    } else {
        double *ref = malloc(sizeof(double) * nc);
        for (size_t i = 0; i < nc; i++) ref[i] = want[i];
        OK(ctx, tir_rt_check(ctx, "guarded tail", TIR_F32, o1, ref, M, N,
                             tir_rt_gemm_tolerance(TIR_RT_GEMM_BF16, K), NULL));
        free(ref);
    }
    free(a), free(b);
    /* 2. guarded against peeled, bit for bit, on random inputs */
    a = inputs(ctx, in, (size_t)(M * K), false, 21), b = inputs(ctx, in, (size_t)(K * N), false, 22);
    rg = sim(ctx, &guard, a, b, o1, nc);
    tir_sim_report rp = sim(ctx, &peel, a, b, o2, nc);
    for (size_t i = 0; i < nc; i++)
        if (memcmp(&o1[i], &o2[i], 4))
            fail_msg("out[%zu]: guarded %.9g, peeled %.9g", i, o1[i], o2[i]);
    /* the tail's time steps keep their barriers (not under the guard): at
     * most two per time step more than the peeled epilogue */
    int64_t blocks = rg.grid[0] * rg.grid[1] * rg.grid[2];
    if (rg.barriers < rp.barriers || rg.barriers > rp.barriers + 2 * S * blocks)
        fail_msg("%lld barriers guarded, %lld peeled, %lld blocks", (long long)rg.barriers,
                 (long long)rp.barriers, (long long)blocks);
    if (clamp_mode && rg.cp_async_copies > 0) {
        /* the last copies (of the last tile, again) are drained after the
         * loop: a wait(0) follows the last cp_async in the kernel */
        const char *txt = tir_print(ctx, guard.kernels[0]), *last = NULL, *q = txt;
        while ((q = strstr(q, "T.cp_async(")) != NULL) last = q++;
        if (!last || !strstr(last, "T.cp_async_wait(0)"))
            fail_msg("clamped: no cp_async_wait(0) after the last cp_async:\n%s", txt);
    }
    if (!clamp_mode) assert_int_equal(rg.cp_async_copies, rp.cp_async_copies);
    else if (rg.cp_async_copies < rp.cp_async_copies ||
             rg.cp_async_copies > 2 * rp.cp_async_copies)
        fail_msg("%lld cp.async copies clamped, %lld peeled", (long long)rg.cp_async_copies,
                 (long long)rp.cp_async_copies);
    free(a), free(b), free(want), free(o1), free(o2);
}

/* Copies of the compute (a stage-S component, valid at every time of
 * [lo, hi)) that sw_pipeline emits for the loop over [lo, hi) unrolled by
 * u: the loop body's u, plus the times after the whole groups, or every
 * time when the loop would run at most once (emit_steady). */
static int64_t copies(int64_t lo, int64_t hi, int64_t u) {
    int64_t groups = (hi - lo) / u;
    if (groups == 0) u = 1, groups = hi - lo;
    if (groups <= 1) return hi - lo;
    return u + (hi - lo) - groups * u;
}

/* ---- Step 8: register staging (tir_tune_tiling) */

/* 64 x 64 tiles, 64 threads of 8 x 8, k tiles of 8: 512 FMAs per thread
 * and k tile, the smallest body the rule guards the tail of. */
static tir_tile_config small_config(void) {
    tir_tile_config c = tir_tile_config_default();
    c.warps_m = 2, c.warps_n = 1, c.threads_m = 4, c.threads_n = 8;
    c.tm = 8, c.tn = 8, c.bk = 8;
    c.guard_tail = !clamp_mode; /* off by default (slower on the H200) */
    c.clamp_tail = clamp_mode;
    return c;
}

/* The float32 rule with c on f: its trace has the tail annotation `want`
 * (NULL: neither tail). */
static void rule_tail(tir_ctx *ctx, const tir_prim_func *f, const tir_tile_config *c,
                      const char *want) {
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, tir_tune_tiling(s, "C", c, NULL, NULL));
    const char *keys[] = {"software_pipeline_guard_tail", "software_pipeline_clamp_tail"};
    for (int i = 0; i < 2; i++)
        if (!strstr(tir_sched_trace_text(s), keys[i]) != !(want && !strcmp(want, keys[i])))
            fail_msg("%s %s in the trace", keys[i], want && !strcmp(want, keys[i]) ? "not" : "");
    tir_sched_destroy(s);
}

static void step8(tir_ctx *ctx, int64_t M, int64_t N, int64_t K, int splitk, bool saves) {
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32);
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    tir_tile_config c = small_config();
    c.splitk = splitk;
    OK(ctx, tir_tune_tiling(s, "C", &c, NULL, NULL));
    shape sg, sp;
    check_both(ctx, f, tir_sched_func(s), TIR_F32, M, N, K, 1, &sg, &sp);
    /* S = 1: the peeled kernel has a second copy of the compute (saves);
     * the same kernel without a steady state (one k tile) or with a ragged
     * last k tile (its compute's k guards: sw_pipeline's tail_costs peels
     * it) */
    assert_int_equal((saves ? 2 : 1) * sg.acc_updates, sp.acc_updates);
    tir_sched_destroy(s);
}

static void test_step8(void **st) {
    tir_ctx *ctx = *st;
    step8(ctx, 64, 32, 64, 1, true);  /* divisible, 8 k tiles */
    step8(ctx, 70, 45, 23, 1, false); /* ragged, the last k tile partial: peeled */
    step8(ctx, 70, 45, 24, 1, true);  /* ragged M and N only: guarded */
    /* split-K: two kernels; the slices' k guard depends on blockIdx.z, so
     * the steady state does not decide it either: guarded */
    step8(ctx, 70, 45, 50, 3, true);
    step8(ctx, 64, 32, 8, 1, false);  /* one k tile: extent 1 = S, peeled as before */
    step8(ctx, 64, 32, 16, 1, true);  /* two k tiles: a loop of two times */
    /* a body under 512 FMAs (8 x 4 per thread): the rule peels */
    const tir_prim_func *f = tir_def_matmul(ctx, 64, 32, 64, TIR_F32);
    tir_tile_config c = small_config();
    c.tn = 4;
    rule_tail(ctx, f, &c, NULL);
    /* without guard_tail and clamp_tail: peeled */
    c = small_config();
    c.guard_tail = c.clamp_tail = false;
    rule_tail(ctx, f, &c, NULL);
    /* both: guard_tail wins (one annotation) */
    c = small_config();
    c.guard_tail = c.clamp_tail = true;
    rule_tail(ctx, f, &c, "software_pipeline_guard_tail");
}

static void test_step8_clamp(void **st) {
    clamp_mode = true;
    test_step8(st);
    clamp_mode = false;
}

/* ---- Step 9: cp.async, 2-4 stages (tir_tune_tc_tiling) */

static void step9(tir_ctx *ctx, int stages, int64_t M, int64_t N, int64_t K) {
    const tir_prim_func *f = tir_def_matmul_mixed(ctx, M, N, K, TIR_BF16, TIR_F32);
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    tir_tc_config c = tir_tc_config_default();
    c.bm = c.bn = 64, c.warps_m = c.warps_n = 2, c.stages = stages;
    c.guard_tail = !clamp_mode;
    c.clamp_tail = clamp_mode;
    OK(ctx, tir_tune_tc_tiling(s, "C", &c, NULL, NULL));
    shape sg, sp;
    int64_t tiles = K / c.bk, S = stages - 1;
    check_both(ctx, f, tir_sched_func(s), TIR_BF16, M, N, K, S, &sg, &sp);
    /* the loop is unrolled by U = stages (the shared tiles' versions) */
    int64_t g = copies(S, tiles + S, stages), p = tiles > S ? copies(S, tiles, stages) + S : tiles;
    if (tiles <= S) g = tiles;
    /* (with extent % U == S the leftover static times cost what the
     * peeled epilogue did: stages 2 at an odd tile count) */
    if (sg.mma * p != sp.mma * g || (g >= p && tiles >= 2 * stages && tiles % stages == 0))
        fail_msg("stages %d, %lld k tiles: %d mma guarded, %d peeled; expected copies %lld, %lld",
                 stages, (long long)tiles, sg.mma, sp.mma, (long long)g, (long long)p);
    tir_sched_destroy(s);
}

static void test_step9_stages(void **st) {
    tir_ctx *ctx = *st;
    for (int stages = 2; stages <= 4; stages++) {
        step9(ctx, stages, 64, 64, 32 * 2 * stages);      /* two loop groups */
        step9(ctx, stages, 70, 72, 32 * (2 * stages + 1)); /* a static time after the loop */
    }
    step9(ctx, 4, 64, 64, 32 * 2); /* extent 2 <= S = 3: all static */
    step9(ctx, 3, 64, 64, 32 * 3); /* extent 3 > S = 2, one group of 3: static */
}

static void test_step9_clamp(void **st) {
    clamp_mode = true;
    test_step9_stages(st);
    clamp_mode = false;
}

/* ---- edge cases */

/* Step 8's schedule, peeled (with `guarded`, guarded by the rule), with
 * the pipelined loop annotated ann = `value` (int), or a string when
 * value < 0. */
static const tir_prim_func *annotated_on(tir_ctx *ctx, bool guarded, tir_annot_key ann,
                                         int64_t value) {
    const tir_prim_func *f = tir_def_matmul(ctx, 64, 32, 64, TIR_F32);
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    tir_tile_config c = small_config();
    c.guard_tail = guarded, c.clamp_tail = false;
    OK(ctx, tir_tune_tiling(s, "C", &c, NULL, NULL));
    /* the pipelined loop: the one with the annotation */
    tir_block_rv b;
    const tir_loop_rv *loops;
    int n;
    OK(ctx, tir_sched_get_block(s, "C", &b));
    OK(ctx, tir_sched_get_loops(s, b, &loops, &n));
    const char *key = tir_annot_key_str(ann);
    bool found = false;
    for (int i = 0; i < n && !found; i++) {
        const tir_for *lf;
        OK(ctx, tir_sched_get_for(s, loops[i], &lf));
        if (!tir_annots_get(lf->nannots, lf->annots, TIR_ANN_SOFTWARE_PIPELINE_STAGE))
            continue;
        found = true;
        if (value >= 0) OK(ctx, tir_sched_annotate_loop_int(s, loops[i], key, value));
        else OK(ctx, tir_sched_annotate_loop_str(s, loops[i], key, "yes"));
    }
    assert_true(found);
    const tir_prim_func *g = tir_sched_func(s);
    tir_sched_destroy(s);
    return g;
}

static const tir_prim_func *annotated_key(tir_ctx *ctx, tir_annot_key ann, int64_t value) {
    return annotated_on(ctx, false, ann, value);
}

static const tir_prim_func *annotated(tir_ctx *ctx, int64_t value) {
    return annotated_key(ctx, TIR_ANN_SOFTWARE_PIPELINE_GUARD_TAIL, value);
}

static void test_values(void **st) {
    tir_ctx *ctx = *st;
    tir_lower_opts lo;
    tir_lower_opts_init(&lo);
    const tir_prim_func *k0, *k1, *kp;
    /* 0 peels: the same kernel as with pipeline_peel_tail */
    OK(ctx, tir_lower(ctx, annotated(ctx, 0), &lo, &k0));
    OK(ctx, tir_lower(ctx, annotated(ctx, 1), &lo, &k1));
    lo.pipeline_peel_tail = true;
    OK(ctx, tir_lower(ctx, annotated(ctx, 1), &lo, &kp));
    assert_true(tir_struct_equal(k0, kp));
    assert_false(tir_struct_equal(k1, kp));
    /* other values and kinds are refused, naming the key and the loop,
     * whether or not pipeline_peel_tail would ignore them */
    const int64_t bad[] = {2, -1};
    for (int peel = 0; peel < 2; peel++)
        for (size_t i = 0; i < 2; i++) {
            lo.pipeline_peel_tail = peel;
            const tir_prim_func *k = NULL;
            assert_int_equal(tir_lower(ctx, annotated(ctx, bad[i]), &lo, &k), TIR_ERR_LOWER);
            assert_null(k);
            assert_non_null(strstr(tir_ctx_error(ctx), "software_pipeline_guard_tail"));
            assert_non_null(strstr(tir_ctx_error(ctx), "k_0"));
        }
}

/* software_pipeline_clamp_tail: 0 peels, 1 clamps (not the guarded
 * kernel), pipeline_peel_tail ignores it; other values, and both tails
 * at once, are refused naming the key and the loop. */
static void test_clamp_values(void **st) {
    tir_ctx *ctx = *st;
    tir_lower_opts lo;
    tir_lower_opts_init(&lo);
    const tir_annot_key ck = TIR_ANN_SOFTWARE_PIPELINE_CLAMP_TAIL;
    const tir_prim_func *k0, *k1, *kp, *kg;
    OK(ctx, tir_lower(ctx, annotated_key(ctx, ck, 0), &lo, &k0));
    OK(ctx, tir_lower(ctx, annotated_key(ctx, ck, 1), &lo, &k1));
    OK(ctx, tir_lower(ctx, annotated(ctx, 1), &lo, &kg));
    lo.pipeline_peel_tail = true;
    OK(ctx, tir_lower(ctx, annotated_key(ctx, ck, 1), &lo, &kp));
    assert_true(tir_struct_equal(k0, kp));
    assert_false(tir_struct_equal(k1, kp));
    assert_false(tir_struct_equal(k1, kg));
    /* the clamped kernel has no If at all (64 x 32 x 64: nothing ragged) */
    assert_int_equal(shape_of(k1).ifs, 0);
    const int64_t bad[] = {2, -1};
    for (int peel = 0; peel < 2; peel++) {
        lo.pipeline_peel_tail = peel;
        for (size_t i = 0; i < 2; i++) {
            const tir_prim_func *k = NULL;
            assert_int_equal(tir_lower(ctx, annotated_key(ctx, ck, bad[i]), &lo, &k),
                             TIR_ERR_LOWER);
            assert_null(k);
            assert_non_null(strstr(tir_ctx_error(ctx), "software_pipeline_clamp_tail"));
            assert_non_null(strstr(tir_ctx_error(ctx), "k_0"));
        }
    }
}

/* Both tails on one loop: refused. */
static void test_clamp_and_guard(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *g = annotated_on(ctx, true, TIR_ANN_SOFTWARE_PIPELINE_CLAMP_TAIL, 1);
    const tir_prim_func *k = NULL;
    tir_lower_opts lo;
    tir_lower_opts_init(&lo);
    for (int peel = 0; peel < 2; peel++) { /* refused whether or not ignored */
        lo.pipeline_peel_tail = peel;
        assert_int_equal(tir_lower(ctx, g, &lo, &k), TIR_ERR_LOWER);
        assert_null(k);
        assert_non_null(strstr(tir_ctx_error(ctx), "one tail only"));
    }
}

/* Components a clamped tail would run again with an effect outside the
 * pipeline: a stage-0 store to a global buffer, an atomic add into one
 * (a write through the call's address, lower_dest_arg).  Each is refused
 * naming the buffer; the same kernels lower with the guarded tail. */
static const char clamp_global[] =
    "@T.prim_func\n"
    "def cg(A: T.Buffer((64,), \"float32\"), D: T.Buffer((64,), \"float32\"), C: T.Buffer((32,), \"float32\")):\n"
    "    for bx in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
    "        for tx in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "            S = T.allocate((32,), \"float32\", scope=\"local\")\n"
    "            C[tx] = T.float32(0)\n"
    "            for k in T.serial(2, annotations={\"software_pipeline_stage\": [0, 0, 1], \"software_pipeline_order\": [0, 1, 2], \"%s\": 1}):\n"
    "                S[0] = A[k * 32 + tx]\n"
    "                %s\n"
    "                C[tx] = C[tx] + S[0]\n";

static void test_clamp_refused(void **st) {
    tir_ctx *ctx = *st;
    const char *const effects[][2] = {
        {"D[k * 32 + tx] = A[k * 32 + tx]", "writes 'D'"},
        {"T.atomic_add(T.address_of(D[tx]), A[k * 32 + tx])", "writes 'D'"},
    };
    const char *const keys[] = {"software_pipeline_clamp_tail", "software_pipeline_guard_tail"};
    for (size_t e = 0; e < sizeof effects / sizeof *effects; e++)
        for (int g = 0; g < 2; g++) {
            char text[2048];
            snprintf(text, sizeof text, clamp_global, keys[g], effects[e][0]);
            const tir_prim_func *f, *k = NULL;
            OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
            tir_status r = tir_lower(ctx, f, NULL, &k);
            if (g == 1) {
                if (r != TIR_OK) fail_msg("guarded: %s", tir_ctx_error(ctx));
                continue;
            }
            assert_int_equal(r, TIR_ERR_LOWER);
            assert_null(k);
            if (!strstr(tir_ctx_error(ctx), effects[e][1]) ||
                !strstr(tir_ctx_error(ctx), "software_pipeline_clamp_tail"))
                fail_msg("%s: %s", effects[e][0], tir_ctx_error(ctx));
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_step8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step9_stages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step8_clamp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step9_clamp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clamp_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clamp_and_guard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clamp_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
