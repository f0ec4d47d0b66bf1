/* The multi-level tiling rule (tir_tune_tiling, src/tune/tiling.c) on the
 * functions it is for, end to end on the CPU: scheduled with several
 * configurations, lowered (one or two kernels), run in the SIMT simulator
 * with race, global-race and uninitialised-read checks at odd sizes, and
 * compared bit for bit with the interpreter on the unscheduled function
 * (small-integer inputs: every summation order gives the same floats).
 * Also: the trace replays to the same function, and each refusal of the
 * rule (a block that does not fit, an invalid configuration) names the
 * block.  The multistage pipeline (stages 2..4) at divisible sizes (its
 * copies cp.async: 4-byte for A's transposing copy, 16-byte for B's) and
 * ragged ones (synchronous, as sw_pipeline leaves zero-filling copies). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/sim.h"
#include "minitir/tune.h"
#include "ptxas_check.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* 64 x 32 tiles: 2 x 1 warps of 4 x 8 lanes, 8 x 4 per thread, k tile 8 (the copy tiles, 8 x 64 and 8 x 32, a whole number of
 * rounds of 64 threads x 4). */
static tir_tile_config small_config(void) {
    tir_tile_config c = tir_tile_config_default();
    c.warps_m = 2, c.warps_n = 1, c.threads_m = 4, c.threads_n = 8;
    c.tm = 8, c.tn = 4, c.bk = 8;
    return c;
}

/* Runs f (unscheduled) in the interpreter and g (scheduled) in the
 * simulator on the same small-integer inputs; the last parameter is the
 * output.  Returns the number of kernels g lowered to. */
static int compare(tir_ctx *ctx, const tir_prim_func *f, const tir_prim_func *g) {
    tir_kernel_set ks;
    if (tir_lower_kernels(ctx, g, NULL, &ks) != TIR_OK)
        fail_msg("tir_lower_kernels: %s", tir_ctx_error(ctx));
    int np = f->nparams;
    assert_true(np <= 8);
    float *data[8], *out2 = NULL;
    size_t sizes[8] = {0};
    uint64_t r = 88172645463325252ull;
    for (int p = 0; p < np; p++) {
        sizes[p] = (size_t)tir_buffer_const_size(f->buffer_map[p]);
        data[p] = malloc(sizes[p] * 4);
        assert_non_null(data[p]);
        for (size_t i = 0; i < sizes[p]; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            data[p][i] = (float)((int64_t)(r % 7) - 3);
        }
    }
    size_t nout = sizes[np - 1];
    out2 = malloc(nout * 4);
    assert_non_null(out2);
    memset(data[np - 1], 0xff, nout * 4);
    memset(out2, 0xff, nout * 4);
    tir_arg ia[8], sa[8];
    for (int p = 0; p < np; p++) ia[p].data = data[p], sa[p].data = data[p];
    sa[np - 1].data = out2;
    tir_interp_opts io = {.uninit_params = 1ull << (np - 1)};
    if (tir_interp_run(ctx, f, np, ia, &io) != TIR_OK)
        fail_msg("interpreter: %s", tir_ctx_error(ctx));
    tir_sim_opts so = {.uninit_params = 1ull << (np - 1), .check_uninit = true,
                       .check_global_races = true};
    if (tir_sim_run_kernels(ctx, &ks, np, sa, &so, NULL) != TIR_OK)
        fail_msg("simulator: %s", tir_ctx_error(ctx));
    for (size_t i = 0; i < nout; i++)
        if (memcmp(&data[np - 1][i], &out2[i], 4) != 0)
            fail_msg("out[%zu]: simulator %g, interpreter %g", i, out2[i], data[np - 1][i]);
    for (int p = 0; p < np; p++) free(data[p]);
    free(out2);
    return ks.nkernels;
}

/* f tiled by the rule with cfg, checked against f; the trace replays to
 * the same function.  Returns the kernel count. */
static int check(tir_ctx *ctx, const tir_prim_func *f, const tir_tile_config *cfg) {
    tir_schedule *s = NULL, *r = NULL;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
    if (tir_tune_tiling(s, "C", cfg, NULL, NULL) != TIR_OK)
        fail_msg("tiling rule: %s", tir_ctx_error(ctx));
    assert_int_equal(tir_sched_create(ctx, f, &r), TIR_OK);
    const char *tt = tir_sched_trace_text(s);
    if (tir_sched_replay(r, tt, strlen(tt)) != TIR_OK)
        fail_msg("replay: %s", tir_ctx_error(ctx));
    assert_true(tir_struct_equal(tir_sched_func(r), tir_sched_func(s)));
    int n = compare(ctx, f, tir_sched_func(s));
    tir_sched_destroy(s);
    tir_sched_destroy(r);
    return n;
}

static void test_matmul(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = small_config();
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 70, 45, 23, TIR_F32), &c), 1);
    c.staging = false, c.pad = 0, c.lsr = false;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 64, 32, 16, TIR_F32), &c), 1);
    c = small_config();
    c.splitk = 3;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 70, 45, 50, TIR_F32), &c), 2);
}

/* The swizzle (tune_bind_blocks, shared with the tensor-core rule): a
 * grid of 32 x 32 blocks (8x16 tiles at 256 x 512) is launched in groups of
 * 8 block rows (blockIdx.x runs over 32 columns x 8 rows), or in raster
 * order with no_swizzle, without a pipeline (neither staging nor stages:
 * Step 7) or with split-K (both slower swizzled); each simulated kernel computes the
 * product (every block exactly once: the simulator's global race check
 * would see two blocks writing one tile) and the trace replays. */
static void test_swizzle(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = tir_tile_config_default();
    c.warps_m = c.warps_n = 1, c.threads_m = 4, c.threads_n = 8;
    c.tm = 2, c.tn = 2, c.vec = 1, c.bk = 8, c.pad = 0;
    for (int off = 0; off < 4; off++) {
        /* 2: no pipeline (Step 7), 3: split-K: no swizzle either */
        c.no_swizzle = off == 1;
        c.staging = off != 2;
        c.splitk = off == 3 ? 2 : 1;
        const tir_prim_func *f = tir_def_matmul(ctx, 256, 512, 16, TIR_F32);
        assert_int_equal(check(ctx, f, &c), off == 3 ? 2 : 1);
        tir_schedule *s = NULL;
        assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
        assert_int_equal(tir_tune_tiling(s, "C", &c, NULL, NULL), TIR_OK);
        const char *text = tir_print(ctx, tir_sched_func(s));
        assert_non_null(strstr(text, off ? "T.thread_binding(0, 32, thread=\"blockIdx.x\")"
                                         : "T.thread_binding(0, 256, thread=\"blockIdx.x\")"));
        assert_non_null(strstr(text, off ? "T.thread_binding(0, 32, thread=\"blockIdx.y\")"
                                         : "T.thread_binding(0, 4, thread=\"blockIdx.y\")"));
        tir_sched_destroy(s);
    }
}

/* Occurrences of needle in hay. */
static int occurrences(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Lines of ptx with needle, and (*pred) how many of them are predicated
 * (start with @%p after the indentation). */
static int lines_with(const char *ptx, const char *needle, int *pred) {
    int n = 0;
    *pred = 0;
    for (const char *l = ptx; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char buf[256];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < 255 ? len : 255), l);
        if (strstr(buf, needle)) {
            n++;
            if (strncmp(buf + strspn(buf, " \t"), "@%p", 3) == 0) (*pred)++;
        }
        l += len + (e ? 1 : 0);
    }
    return n;
}

/* The zero-filled copies of a ragged tile (relax_guards) in PTX: by default
 * a predicated load of a read-only parameter, `@p ld.global.nc.f32` after
 * a zeroing move (no select of the address or the value); with
 * select_zero_fill the two selects.  Both assemble.  The rule's register
 * cap: 8 x 8 thread tiles in 256 threads only. */
static void test_ragged_zero_fill_codegen(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = small_config();
    tir_schedule *s = NULL;
    assert_int_equal(tir_sched_create(ctx, tir_def_matmul(ctx, 70, 45, 23, TIR_F32), &s), TIR_OK);
    assert_int_equal(tir_tune_tiling(s, "C", &c, NULL, NULL), TIR_OK);
    const tir_module *m[2] = {NULL, NULL};
    for (int v = 0; v < 2; v++) {
        tir_codegen_opts o;
        tir_codegen_opts_init(&o);
        /* cg_emit.c's two forms (the direct emitter, which now takes this
         * kernel by default, has only the first: test_ptx_interp) */
        o.pipeline = TIR_CG_PIPELINE_SHORT;
        o.select_zero_fill = v == 1;
        if (tir_build(ctx, tir_sched_func(s), &o, &m[v]) != TIR_OK)
            fail_msg("build: %s", tir_ctx_error(ctx));
        ptxas_check(m[v]);
    }
    /* 8 zero-filled elements per k tile and thread (A 4, B 4), in the
     * prologue and in the loop: every scalar global load predicated */
    int pred = 0, n = lines_with(m[0]->ptx, "ld.global.nc.f32 ", &pred);
    assert_true(n >= 16);
    assert_int_equal(pred, n);
    assert_int_equal(occurrences(m[0]->ptx, "selp.f32"), 0);
    assert_int_equal(occurrences(m[0]->ptx, "mov.f32 %f"), n); /* the zeroing moves */
    n = lines_with(m[1]->ptx, "ld.global.nc.f32 ", &pred);
    assert_true(n >= 16);
    assert_int_equal(pred, 0);
    assert_true(occurrences(m[1]->ptx, "selp.f32") >= 16);
    /* 64 threads, 8 x 4 outputs each: no register cap */
    assert_null(strstr(m[0]->ptx, ".maxnreg"));
    tir_sched_destroy(s);
    /* the default 8 x 8 outputs per thread in 256 threads: capped at 128,
     * so that two blocks fit per SM */
    tir_tile_config d = tir_tile_config_default();
    assert_int_equal(tir_sched_create(ctx, tir_def_matmul(ctx, 130, 129, 23, TIR_F32), &s), TIR_OK);
    assert_int_equal(tir_tune_tiling(s, "C", &d, NULL, NULL), TIR_OK);
    const tir_module *md = NULL;
    if (tir_build(ctx, tir_sched_func(s), NULL, &md) != TIR_OK)
        fail_msg("build: %s", tir_ctx_error(ctx));
    assert_non_null(strstr(md->ptx, ".maxnreg 128"));
    ptxas_info pi;
    if (ptxas_assemble(md, &pi)) {
        assert_true(pi.regs <= 128);
        assert_int_equal(pi.spill_stores, 0);
    }
    tir_sched_destroy(s);
}

/* gvec: at a ragged N that the vector divides (N = 36, vec 4), the
 * output's stores are 16-byte vectors under a lane-uniform guard with the
 * vectorize_global_guarded annotation, scalar without it; both equal the
 * interpreter in the simulator, also with split-K (its partial sums). */
static void test_gvec(void **st) {
    tir_ctx *ctx = *st;
    for (int sk = 1; sk <= 2; sk *= 2)
        for (int g = 0; g < 2; g++) {
            tir_tile_config c = small_config();
            c.gvec = g, c.splitk = sk;
            assert_true(check(ctx, tir_def_matmul(ctx, 40, 36, 24, TIR_F32), &c) == sk);
            tir_schedule *s = NULL;
            assert_int_equal(tir_sched_create(ctx, tir_def_matmul(ctx, 40, 36, 24, TIR_F32), &s),
                             TIR_OK);
            assert_int_equal(tir_tune_tiling(s, "C", &c, NULL, NULL), TIR_OK);
            tir_kernel_set ks;
            if (tir_lower_kernels(ctx, tir_sched_func(s), NULL, &ks) != TIR_OK)
                fail_msg("lower: %s", tir_ctx_error(ctx));
            const char *ir = tir_print(ctx, ks.kernels[0]); /* the partial sums' kernel */
            assert_int_equal(occurrences(ir, sk > 1 ? "C_rf[T.Ramp(" : "C[T.Ramp(") > 0, g == 1);
            if (sk == 1) {
                const tir_module *m = NULL;
                if (tir_build(ctx, tir_sched_func(s), NULL, &m) != TIR_OK)
                    fail_msg("build: %s", tir_ctx_error(ctx));
                assert_int_equal(occurrences(m->ptx, "st.global.v4.f32") > 0, g == 1);
            }
            tir_sched_destroy(s);
        }
}

/* The annotation takes the int 0 or 1: another value is refused by
 * lowering with the loop named, 0 keeps the store scalar. */
static void test_gvec_annotation_value(void **st) {
    tir_ctx *ctx = *st;
    static const char *vals[] = {"2", "\"yes\"", "0"};
    for (int i = 0; i < 3; i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "@T.prim_func\n"
                 "def copy(A: T.Buffer((36,), \"float32\"), C: T.Buffer((36,), \"float32\")):\n"
                 "    T.func_attr({\"global_symbol\": \"copy\", \"tir.noalias\": 1})\n"
                 "    for b in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
                 "        for t in T.thread_binding(0, 10, thread=\"threadIdx.x\"):\n"
                 "            for v in T.vectorized(4, annotations={\"vectorize_global_guarded\": %s}):\n"
                 "                if t * 4 + v < 36:\n"
                 "                    C[t * 4 + v] = A[t * 4 + v]\n",
                 vals[i]);
        const tir_prim_func *f = NULL, *k = NULL;
        if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
            fail_msg("parse: %s", tir_ctx_error(ctx));
        tir_status s = tir_lower(ctx, f, NULL, &k);
        if (i < 2) {
            assert_int_not_equal(s, TIR_OK);
            assert_non_null(strstr(tir_ctx_error(ctx), "vectorize_global_guarded must be"));
        } else {
            assert_int_equal(s, TIR_OK);
            assert_null(strstr(tir_print(ctx, k), "T.Ramp("));
        }
    }
}

/* B stored [N, K]: its shared tile is transposed like A's. */
static void test_matmul_nt(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = small_config();
    assert_int_equal(check(ctx, tir_def_matmul_nt(ctx, 66, 40, 24, TIR_F32), &c), 1);
}

/* The batch loop on blockIdx.z. */
static void test_batch_matmul(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = small_config();
    assert_int_equal(check(ctx, tir_def_batch_matmul(ctx, 3, 33, 20, 17, TIR_F32), &c), 1);
}

/* Bias fused into the reduction's init; ReLU inlined into the write-back,
 * with and without split-K. */
static void test_epilogues(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = small_config();
    assert_int_equal(check(ctx, tir_def_matmul_bias(ctx, 70, 45, 23, TIR_F32), &c), 1);
    assert_int_equal(check(ctx, tir_def_matmul_bias_relu(ctx, 70, 45, 23, TIR_F32), &c), 1);
    c.splitk = 2;
    assert_int_equal(check(ctx, tir_def_matmul_bias_relu(ctx, 40, 36, 40, TIR_F32), &c), 2);
}

/* The multistage pipeline: stages 2, 3 and 4 in place of staging, with
 * more k tiles than stages, fewer (K = 16: two k tiles of 8, so the
 * pipeline is all prologue and epilogue), ragged in every dimension, and
 * with each operator the rule takes. */
static void test_multistage(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = small_config();
    c.staging = false;
    for (int stages = 2; stages <= 4; stages++) {
        c.stages = stages;
        assert_int_equal(check(ctx, tir_def_matmul(ctx, 64, 64, 40, TIR_F32), &c), 1);
        assert_int_equal(check(ctx, tir_def_matmul(ctx, 100, 52, 33, TIR_F32), &c), 1);
    }
    c.stages = 4;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 128, 32, 16, TIR_F32), &c), 1);
    c.stages = 3;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 64, 48, 40, TIR_F32), &c), 1);
    assert_int_equal(check(ctx, tir_def_matmul_nt(ctx, 64, 64, 48, TIR_F32), &c), 1);
    assert_int_equal(check(ctx, tir_def_batch_matmul(ctx, 2, 64, 32, 24, TIR_F32), &c), 1);
    assert_int_equal(check(ctx, tir_def_matmul_bias_relu(ctx, 70, 45, 23, TIR_F32), &c), 1);
    c.splitk = 2;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 64, 32, 64, TIR_F32), &c), 2);
    c.splitk_atomic = true;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 64, 32, 64, TIR_F32), &c), 2);
    /* 32 x 32 tiles of 2 x 2 warps of 4 x 8 lanes, 4 x 2 each, bk 16, vec
     * 2 (1000x520x333's tuned best) at a ragged size */
    c = small_config();
    c.warps_m = 2, c.warps_n = 2, c.tm = 4, c.tn = 2, c.bk = 16, c.vec = 2;
    c.staging = false, c.stages = 4;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 100, 52, 33, TIR_F32), &c), 1);
}

/* Copy tiles that are not whole rounds of the block's threads x vec run
 * guarded (`t * 4 + v < 1024`: threads past the tile copy nothing), and
 * with staging their register buffers were refused by local_check: a
 * 512-thread block's B tile row `k * 8 + t // 32` wraps into the next k
 * tile's rows for t >= 256, and A_local[b * 64 + t, ...] tells the block
 * b from the element only for t < 64; both hold only for threads the
 * guard lets through (twenty-ninth session).  Each now lowers and
 * computes the product, ragged sizes included. */
static void test_partial_copy_rounds(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = tir_tile_config_default();
    /* 256 x 128 blocks of 4 x 4 warps, 8 x 8 each, bk 8: B's 8 x 128 tile
     * is half a round of 512 threads x 4 */
    c.warps_m = 4, c.warps_n = 4, c.threads_m = 8, c.threads_n = 4;
    c.tm = 8, c.tn = 8, c.bk = 8, c.vec = 4;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 256, 128, 24, TIR_F32), &c), 1);
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 260, 130, 21, TIR_F32), &c), 1);
    /* 64 x 64 blocks of 2 x 4 warps, 4 x 4 each, bk 4: a quarter round */
    c.warps_m = 2, c.tm = 4, c.tn = 4, c.bk = 4;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 128, 64, 16, TIR_F32), &c), 1);
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 100, 70, 13, TIR_F32), &c), 1);
    /* one warp, 32 x 16 blocks, bk 2, vec 4: half a round */
    c.warps_m = 1, c.warps_n = 1, c.bk = 2;
    assert_int_equal(check(ctx, tir_def_matmul(ctx, 64, 32, 8, TIR_F32), &c), 1);
}

/* c on an M x N x K matmul compiled to PTX (assembled where ptxas is). */
static const tir_module *build_ptx(tir_ctx *ctx, const tir_tile_config *c, int64_t M, int64_t N,
                                   int64_t K) {
    tir_schedule *s = NULL;
    assert_int_equal(tir_sched_create(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32), &s), TIR_OK);
    if (tir_tune_tiling(s, "C", c, NULL, NULL) != TIR_OK)
        fail_msg("tiling rule: %s", tir_ctx_error(ctx));
    const tir_module *m = NULL;
    if (tir_build(ctx, tir_sched_func(s), NULL, &m) != TIR_OK)
        fail_msg("build: %s", tir_ctx_error(ctx));
    tir_sched_destroy(s);
    ptxas_check(m);
    return m;
}

/* What the multistage pipeline's copies become.  Divisible: all cp.async
 * (no ld.global left in the kernel), A's transposing copy one 4-byte
 * cp.async per element (.ca), B's one 16-byte cp.async per float4 (.cg),
 * in a prologue of stages - 1 k tiles and a steady state unrolled by the
 * versions' count.  Ragged: the edge copies zero-fill, as cp.async with
 * a source size of 0 past the edge (`, 4, %r` in the PTX), so no
 * synchronous global load is left either. */
static void test_multistage_cp_async(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = small_config(); /* 64 x 32 x 8, 64 threads, vec 4 */
    c.staging = false, c.stages = 3;
    const tir_module *m = build_ptx(ctx, &c, 128, 64, 64);
    /* per k tile and thread: A 64 x 8 / 64 = 8 elements, B 8 x 32 / 64 /
     * 4 = 1 float4; 2 prologue tiles + 3 unrolled steady-state ones */
    assert_int_equal(occurrences(m->ptx, "cp.async.ca.shared.global"), 8 * 5);
    assert_int_equal(occurrences(m->ptx, "cp.async.cg.shared.global"), 1 * 5);
    assert_int_equal(occurrences(m->ptx, ", 16;"), 5);
    assert_int_equal(occurrences(m->ptx, "ld.global"), 0);
    assert_true(occurrences(m->ptx, "cp.async.wait_group") >= 3);
    assert_true(occurrences(m->ptx, "cp.async.commit_group") >= 5);
    m = build_ptx(ctx, &c, 100, 52, 33);
    assert_true(occurrences(m->ptx, "cp.async.ca.shared.global") > 0);
    assert_true(occurrences(m->ptx, ", 4, %r") > 0);
    assert_int_equal(occurrences(m->ptx, "ld.global"), 0);
    /* the shared tiles: three versions of each, each 16-byte aligned */
    assert_int_equal(tir_tile_config_shared_bytes(&c, 4), 3 * (8 * 68 + 8 * 36) * 4);
    c.stages = 0;
    assert_int_equal(tir_tile_config_shared_bytes(&c, 4), (8 * 68 + 8 * 36) * 4);
}

static void refused(tir_ctx *ctx, const tir_prim_func *f, const char *block,
                    const tir_tile_config *cfg, const char *what) {
    tir_schedule *s = NULL;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
    assert_int_equal(tir_tune_tiling(s, block, cfg, NULL, NULL), TIR_ERR_INVALID_ARG);
    if (!strstr(tir_ctx_error(ctx), what))
        fail_msg("message lacks \"%s\": %s", what, tir_ctx_error(ctx));
    tir_sched_destroy(s);
}

static void test_refusals(void **st) {
    tir_ctx *ctx = *st;
    tir_tile_config c = small_config();
    refused(ctx, tir_def_elementwise_chain(ctx, 16, 16, TIR_F32), "B", &c,
            "block B is not spatial loops then one reduction loop");
    const tir_prim_func *mm = tir_def_matmul(ctx, 32, 32, 32, TIR_F32);
    c.threads_m = 8; /* 8 x 8 lanes */
    refused(ctx, mm, "C", &c, "threads_m x threads_n = 8 x 8 is not a warp of 32 lanes");
    c = small_config();
    c.vec = 3;
    refused(ctx, mm, "C", &c, "vec = 3 does not divide the thread tile 8 x 4");
    c = small_config();
    c.bk = 0;
    refused(ctx, mm, "C", &c, "block C: every tile size must be positive");
    c = small_config();
    c.splitk = 2;
    refused(ctx, tir_def_batch_matmul(ctx, 2, 32, 32, 32, TIR_F32), "C", &c,
            "split-K with batch loops is not supported");
    c = small_config(); /* staging */
    c.stages = 3;
    refused(ctx, mm, "C", &c, "block C: stages = 3 with staging = 1");
    c.staging = false, c.stages = 5;
    refused(ctx, mm, "C", &c, "stages = 5 with staging = 0: stages is 0 or 1");
    c.stages = -1;
    refused(ctx, mm, "C", &c, "stages = -1 with staging = 0");
    /* Knobs from a record's decisions text are anything: 0x40000001 x 32
       lanes multiplied in int overflowed (undefined) to 32, a warp, and a
       vec of 0 divided by zero in tir_tune_config_valid. */
    c = small_config();
    c.threads_m = 0x40000001, c.threads_n = 32;
    refused(ctx, mm, "C", &c, "block C: each knob is at most 4096");
    tir_tune_task t = {TIR_TUNE_MATMUL, 0, 32, 32, 32, TIR_RT_GEMM_F32};
    const tir_target_limits *lim = &tir_target_default()->limits;
    assert_false(tir_tune_config_valid(&t, lim, &c));
    c = small_config();
    c.vec = 0;
    assert_false(tir_tune_config_valid(&t, lim, &c));
    c = small_config();
    c.warps_m = INT32_MAX;
    assert_int_equal(tir_tile_config_threads(&c), INT32_MAX); /* saturated, no overflow */
    assert_false(tir_tune_config_valid(&t, lim, &c));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matmul, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swizzle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_nt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_matmul, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epilogues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ragged_zero_fill_codegen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gvec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gvec_annotation_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multistage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_copy_rounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multistage_cp_async, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
