/* test_user_ops.c: computations a new user writes besides matmul, with the
 * GPU schedules such a user writes, each lowered and run in the SIMT
 * simulator against the reference interpreter on the unscheduled function
 * (fifth new-user review, twenty-fourth session; docs/reliability.md).
 *
 * Every accepted schedule must compute what the interpreter computes on the
 * original function: bit-exact where the float order is the same (or the
 * inputs are small integers, so every order gives the same float), within
 * a stated tolerance where a schedule legally reassociates.  Schedules that
 * must be refused are checked with SCHED_EXPECT_FAIL (a clean status, a
 * message naming the primitive, the schedule unchanged) and for naming the
 * loop or block in the message.
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
#include "sched_check.h"
#include "user_sched.h"

/* ------------------------------------------------------------- helpers */

/* float <-> float16 bits (round to nearest even; the values used here are
 * exact). */
static uint16_t f32_to_f16(float x) {
    union {
        float f;
        uint32_t u;
    } v = {x};
    uint32_t sign = (v.u >> 16) & 0x8000u;
    int32_t exp = (int32_t)((v.u >> 23) & 0xff) - 127 + 15;
    uint32_t man = v.u & 0x7fffffu;
    if (((v.u >> 23) & 0xff) == 0) return (uint16_t)sign;
    if (exp <= 0) { /* subnormal half */
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    uint32_t h = ((uint32_t)exp << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
    union {
        uint32_t u;
        float f;
    } v;
    if (e == 0) {
        float f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    if (e == 31) v.u = sign | 0x7f800000u | (m << 13);
    else v.u = sign | ((e - 15 + 127) << 23) | (m << 13);
    return v.f;
}

static uint16_t f32_to_bf16(float x) {
    union {
        float f;
        uint32_t u;
    } v = {x};
    uint32_t r = v.u + 0x7fffu + ((v.u >> 16) & 1);
    return (uint16_t)(r >> 16);
}

static float bf16_to_f32(uint16_t h) {
    union {
        uint32_t u;
        float f;
    } v = {(uint32_t)h << 16};
    return v.f;
}

/* How inputs are drawn. */
typedef enum { DATA_SMALL_INT, DATA_FLOAT } data_kind;

static double draw(uint64_t *rng, data_kind k) {
    if (k == DATA_SMALL_INT) return (double)((int64_t)(sched_rand(rng) % 7) - 3);
    /* a float with a fraction, in [-4, 4) */
    return ((double)(sched_rand(rng) >> 11) / 9007199254740992.0) * 8.0 - 4.0;
}

static void store_elem(void *data, tir_dtype t, int64_t i, double v) {
    if (t.code == TIR_TYPE_FLOAT && t.bits == 32) ((float *)data)[i] = (float)v;
    else if (t.code == TIR_TYPE_FLOAT && t.bits == 64) ((double *)data)[i] = v;
    else if (t.code == TIR_TYPE_FLOAT && t.bits == 16) ((uint16_t *)data)[i] = f32_to_f16((float)v);
    else if (t.code == TIR_TYPE_BFLOAT && t.bits == 16)
        ((uint16_t *)data)[i] = f32_to_bf16((float)v);
    else if (t.code == TIR_TYPE_INT && t.bits == 32) ((int32_t *)data)[i] = (int32_t)v;
    else if (t.code == TIR_TYPE_INT && t.bits == 64) ((int64_t *)data)[i] = (int64_t)v;
    else if (t.code == TIR_TYPE_INT && t.bits == 8) ((int8_t *)data)[i] = (int8_t)v;
    else if (t.code == TIR_TYPE_INT && t.bits == 16) ((int16_t *)data)[i] = (int16_t)v;
    else if (t.code == TIR_TYPE_UINT && t.bits == 8) ((uint8_t *)data)[i] = (uint8_t)(int)(v + 3);
    else memset((char *)data + (size_t)i * tir_dtype_bytes(t), 0, tir_dtype_bytes(t));
}

static double load_elem(const void *data, tir_dtype t, int64_t i) {
    if (t.code == TIR_TYPE_FLOAT && t.bits == 32) return ((const float *)data)[i];
    if (t.code == TIR_TYPE_FLOAT && t.bits == 64) return ((const double *)data)[i];
    if (t.code == TIR_TYPE_FLOAT && t.bits == 16) return f16_to_f32(((const uint16_t *)data)[i]);
    if (t.code == TIR_TYPE_BFLOAT && t.bits == 16)
        return bf16_to_f32(((const uint16_t *)data)[i]);
    if (t.code == TIR_TYPE_INT && t.bits == 32) return ((const int32_t *)data)[i];
    if (t.code == TIR_TYPE_INT && t.bits == 64) return (double)((const int64_t *)data)[i];
    if (t.code == TIR_TYPE_INT && t.bits == 8) return ((const int8_t *)data)[i];
    if (t.code == TIR_TYPE_INT && t.bits == 16) return ((const int16_t *)data)[i];
    if (t.code == TIR_TYPE_UINT && t.bits == 8) return ((const uint8_t *)data)[i];
    return 0;
}

/* Options of one check. */
typedef struct uo_opts {
    data_kind data;
    double rtol; /* 0: bit-exact */
    uint64_t seed;
    int64_t scalar; /* the value of every scalar parameter (0: 1) */
} uo_opts;

/* Runs the original function of s in the interpreter and s's function,
 * lowered by tir_lower_kernels, in the simulator (uninitialised reads and
 * global races checked) on the same inputs; parameters written by the
 * function start unwritten in both.  Every parameter must then agree.
 * Returns false with the reason in why; a lowering refusal returns false
 * with "lower:" first and *refused set. */
static bool run_ok(tir_schedule *s, const uo_opts *o, char *why, size_t n, bool *refused,
                   bool interp_only) {
    tir_ctx *ctx = tir_sched_ctx(s);
    const tir_prim_func *f0 = tir_sched_orig_func(s), *f1 = tir_sched_func(s);
    if (refused) *refused = false;
    tir_kernel_set ks = {0};
    if (!interp_only && tir_lower_kernels(ctx, f1, NULL, &ks) != TIR_OK) {
        snprintf(why, n, "lower: %s", tir_ctx_error(ctx));
        if (refused) *refused = true;
        return false;
    }
    int np = f0->nparams;
    if (np > 16) return snprintf(why, n, "too many parameters"), false;
    tir_arg a0[16], a1[16];
    size_t bytes[16] = {0};
    int64_t count[16] = {0};
    uint64_t rng = o->seed ? o->seed : 7;
    uint64_t written = 0;
    /* a parameter is written if some block's T.writes names it */
    const char *txt = tir_print(ctx, f0);
    for (int i = 0; i < np; i++) {
        const tir_buffer *b = f0->buffer_map[i];
        a0[i] = a1[i] = (tir_arg){NULL, o->scalar ? o->scalar : 1};
        if (!b) continue;
        char pat[300];
        snprintf(pat, sizeof pat, "T.writes(%s[", b->name);
        if (strstr(txt, pat)) written |= 1ull << i;
        snprintf(pat, sizeof pat, ", %s[", b->name);
        /* a second written region, T.writes(X[..], B[..]) */
        const char *w = txt;
        while ((w = strstr(w, "T.writes(")) != NULL) {
            const char *e = strchr(w, '\n');
            const char *p = strstr(w, pat);
            if (p && (!e || p < e)) written |= 1ull << i;
            w += 9;
        }
        int64_t sc[16]; /* every scalar parameter at o->scalar (0: 1) */
        for (int k = 0; k < 16; k++) sc[k] = o->scalar ? o->scalar : 1;
        count[i] = us_buf_count(ctx, f0, b, sc);
        if (count[i] < 0) return snprintf(why, n, "shape of %s", b->name), false;
        bytes[i] = (size_t)count[i] * tir_dtype_bytes(b->dtype);
        a0[i].data = malloc(bytes[i] ? bytes[i] : 1);
        a1[i].data = malloc(bytes[i] ? bytes[i] : 1);
        for (int64_t e = 0; e < count[i]; e++) store_elem(a0[i].data, b->dtype, e, draw(&rng, o->data));
        if (written >> i & 1) tir_rt_poison(a0[i].data, bytes[i]);
        memcpy(a1[i].data, a0[i].data, bytes[i]);
    }
    bool ok = true;
    tir_interp_opts io = {.uninit_params = written};
    tir_sim_opts so = {.uninit_params = written, .check_uninit = true, .check_global_races = true};
    tir_status st;
    if ((st = tir_interp_run(ctx, f0, np, a0, &io)) != TIR_OK) {
        snprintf(why, n, "interpreter on the original: %s", tir_ctx_error(ctx));
        ok = false;
    } else if (interp_only && (st = tir_interp_run(ctx, f1, np, a1, &io)) != TIR_OK) {
        snprintf(why, n, "interpreter on the scheduled function: %s", tir_ctx_error(ctx));
        ok = false;
    } else if (!interp_only && (st = tir_sim_run_kernels(ctx, &ks, np, a1, &so, NULL)) != TIR_OK) {
        snprintf(why, n, "simulator: %s: %s\nkernel 0:\n%s", tir_status_name(st),
                 tir_ctx_error(ctx), tir_print(ctx, ks.kernels[0]));
        ok = false;
    }
    for (int i = 0; i < np && ok; i++) {
        const tir_buffer *b = f0->buffer_map[i];
        if (!b || !memcmp(a0[i].data, a1[i].data, bytes[i])) continue;
        size_t eb = tir_dtype_bytes(b->dtype);
        for (int64_t e = 0; e < count[i] && ok; e++) {
            if (!memcmp((char *)a0[i].data + (size_t)e * eb, (char *)a1[i].data + (size_t)e * eb,
                        eb))
                continue;
            double x = load_elem(a0[i].data, b->dtype, e), y = load_elem(a1[i].data, b->dtype, e);
            if (o->rtol > 0 && fabs(x - y) <= o->rtol * (1 + fabs(x))) continue;
            snprintf(why, n,
                     "buffer %s flat element %lld: interpreter %.9g, simulator %.9g\n"
                     "scheduled:\n%s\nkernel 0 of %d:\n%s",
                     b->name, (long long)e, x, y, tir_print(ctx, f1), ks.nkernels,
                     ks.nkernels ? tir_print(ctx, ks.kernels[0]) : "(interpreter)");
            ok = false;
        }
    }
    for (int i = 0; i < np; i++) {
        free(a0[i].data);
        free(a1[i].data);
    }
    return ok;
}

static bool lower_sim_ok(tir_schedule *s, const uo_opts *o, char *why, size_t n, bool *refused) {
    return run_ok(s, o, why, n, refused, false);
}

/* The scheduled function in the interpreter against the original. */
static bool interp_ok(tir_schedule *s, const uo_opts *o, char *why, size_t n) {
    return run_ok(s, o, why, n, NULL, true);
}

/* The cmocka form: the schedule must lower and match: on small integers
 * bit-exact (every float order gives the same sums), and on inputs with
 * fractions bit-exact (o NULL: the schedule keeps the float order) or as
 * o says (a schedule that reassociates). */
static void check_sim(tir_schedule *s, const uo_opts *o) {
    static char why[1 << 16];
    uo_opts ints = {DATA_SMALL_INT, 0, 7, o ? o->scalar : 0};
    if (!lower_sim_ok(s, &ints, why, sizeof why, NULL)) FAILF("%s", why);
    uo_opts fl = {DATA_FLOAT, 0, 13, 0};
    if (o && o->data == DATA_FLOAT) fl = *o;
    if (!lower_sim_ok(s, &fl, why, sizeof why, NULL))
        FAILF("inputs with fractions (rtol %g): %s", fl.rtol, why);
    /* and the interpreter on the scheduled function agrees too */
    if (!o || !o->scalar) sched_check_all(s);
}

/* Expects a failure whose message contains `needle`. */
static void expect_msg(tir_schedule *s, const char *needle) {
    const char *m = tir_ctx_error(tir_sched_ctx(s));
    if (!strstr(m, needle)) FAILF("message does not name \"%s\":\n%s", needle, m);
}

static int loops(tir_schedule *s, const char *block, tir_loop_rv *out) {
    return sched_loops(s, block, out);
}

static void split2(tir_schedule *s, tir_loop_rv l, int64_t inner, tir_loop_rv *out) {
    SCHED_OK(s, tir_sched_split(s, l, 2, (const int64_t[]){TIR_SPLIT_INFER, inner}, out));
}

/* The usual one-dimensional GPU mapping: l split by t, the outer part over
 * blockIdx.x, the inner t over threadIdx.x. */
static void split_bind(tir_schedule *s, tir_loop_rv l, int64_t t, tir_loop_rv *out) {
    split2(s, l, t, out);
    SCHED_OK(s, tir_sched_bind(s, out[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, out[1], "threadIdx.x"));
}

/* b's output through a register cache, written back under `at`. */
static void write_via_local(tir_schedule *s, tir_block_rv b, tir_loop_rv at) {
    tir_block_rv bl;
    SCHED_OK(s, tir_sched_cache_write(s, b, 0, "local", 0, NULL, &bl));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, bl, at, false));
}

/* Producer b's output buffer moved to `scope`, b computed at `at`. */
static void place_at(tir_schedule *s, tir_block_rv b, const char *scope, tir_loop_rv at) {
    SCHED_OK(s, tir_sched_set_scope(s, b, 0, scope));
    SCHED_OK(s, tir_sched_compute_at(s, b, at, false));
}

/* b's input `i` read through a cache in `scope` (for every reader),
 * computed at `at`; returns the cache's block. */
static tir_block_rv cache_read_at(tir_schedule *s, tir_block_rv b, int i, const char *scope,
                                  tir_loop_rv at) {
    tir_block_rv c;
    SCHED_OK(s, tir_sched_cache_read(s, b, i, scope, 0, NULL, &c));
    SCHED_OK(s, tir_sched_compute_at(s, c, at, false));
    return c;
}

/* A 2-D tiling: l0 by ti into ip, l1 by tj into jp, the tiles over
 * (blockIdx.y, blockIdx.x) and the elements of a tile over (threadIdx.y,
 * threadIdx.x).  tx_outer: the tile's loops ordered jp[1], ip[1] (the
 * transposes: ip[1] over threadIdx.x, so consecutive threads read
 * consecutive A elements); otherwise ip[1], jp[1] as written. */
static void tile2d_bind(tir_schedule *s, tir_loop_rv l0, tir_loop_rv l1, int64_t ti, int64_t tj,
                        bool tx_outer, tir_loop_rv *ip, tir_loop_rv *jp) {
    split2(s, l0, ti, ip);
    split2(s, l1, tj, jp);
    tir_loop_rv ty = tx_outer ? jp[1] : ip[1], tx = tx_outer ? ip[1] : jp[1];
    SCHED_OK(s, tir_sched_reorder(s, 4, (const tir_loop_rv[]){ip[0], jp[0], ty, tx}));
    SCHED_OK(s, tir_sched_bind(s, ip[0], "blockIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, jp[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, ty, "threadIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, tx, "threadIdx.x"));
}

/* Split-K over threads by rfactor: k split by `threads`, the inner part
 * rfactored (the partials at `axis`) and moved outermost in the partials'
 * nest, row over blockIdx.x and the slices over threadIdx.x; then the
 * final reduction `block` rows split by `rows` over blocks and threads
 * (its row split left in ip). */
static void rfactor_threads(tir_schedule *s, const char *block, tir_loop_rv row, tir_loop_rv k,
                            int64_t threads, int axis, int64_t rows, tir_loop_rv *ip) {
    tir_loop_rv kp[2], l[16];
    tir_block_rv rf;
    split2(s, k, threads, kp);
    SCHED_OK(s, tir_sched_rfactor(s, kp[1], axis, &rf));
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){kp[1], kp[0]}));
    SCHED_OK(s, tir_sched_bind(s, row, "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, kp[1], "threadIdx.x"));
    loops(s, block, l);
    split_bind(s, l[0], rows, ip);
}

/* Lowers s and runs it in the simulator against the interpreter (o NULL:
 * zeroed options).  Returns true where lowering refused it with a
 * message containing `msg`, false where it lowered and matched; anything
 * else (a wrong result, a simulator failure, a refusal for another
 * reason) fails the test.  For schedules that a known false refusal may
 * or may not hit. */
static bool refused_with(tir_schedule *s, const uo_opts *o, const char *msg) {
    static char why[1 << 16];
    bool refused;
    if (lower_sim_ok(s, o ? o : &(uo_opts){0}, why, sizeof why, &refused)) return false;
    if (!refused) FAILF("%s", why);
    if (!strstr(why, msg)) FAILF("refusal does not name \"%s\":\n%s", msg, why);
    return true;
}

/* Lowering s must refuse it, with a message containing `msg`. */
static void expect_refusal(tir_schedule *s, const uo_opts *o, const char *msg) {
    if (!refused_with(s, o, msg))
        FAILF("lowered and simulated; expected a refusal naming \"%s\"", msg);
}

/* Frees a schedule and its context (in this order: s lives in ctx). */
static void free_all(tir_schedule *s, tir_ctx *ctx) {
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

/* The ends of most schedule functions: s checked by check_sim (or, below,
 * refused by lowering with `msg`), then s and ctx freed.  A failed check
 * leaves them to the process: cmocka's fail() does not return. */
static void check_and_free(tir_schedule *s, tir_ctx *ctx, const uo_opts *o) {
    check_sim(s, o);
    free_all(s, ctx);
}

static void refusal_and_free(tir_schedule *s, tir_ctx *ctx, const uo_opts *o, const char *msg) {
    expect_refusal(s, o, msg);
    free_all(s, ctx);
}

/* ------------------------------------------------------------ transpose */

static const char *transpose_text(int m, int n, const char *dt) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def transpose(A: T.Buffer((%d, %d), \"%s\"), B: T.Buffer((%d, %d), \"%s\")):\n"
             "    for i, j in T.grid(%d, %d):\n"
             "        with T.block(\"B\"):\n"
             "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
             "            T.reads(A[vi, vj])\n"
             "            T.writes(B[vj, vi])\n"
             "            B[vj, vi] = A[vi, vj]\n",
             m, n, dt, n, m, dt, m, n);
    return buf;
}

/* Tiled transpose through shared memory: 2-D tiles over blocks, a
 * cooperative fetch of A's tile, the store by threads. */
static void transpose_tiled(int m, int n, const char *dt, int64_t tile, bool align) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, transpose_text(m, n, dt)));
    tir_block_rv b = sched_block(s, "B"), as;
    tir_loop_rv l[16], ip[2], jp[2];
    loops(s, "B", l);
    tile2d_bind(s, l[0], l[1], tile, tile, true, ip, jp);
    as = cache_read_at(s, b, 0, "shared", jp[0]);
    tir_loop_rv al[16];
    int na = loops(s, "A_shared", al);
    assert_int_equal(na, 4);
    /* the fetch: rows by threadIdx.y, columns by threadIdx.x */
    SCHED_OK(s, tir_sched_bind(s, al[2], "threadIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, al[3], "threadIdx.x"));
    if (align) SCHED_OK(s, tir_sched_storage_align(s, as, 0, 0, 32, 1));
    check_and_free(s, ctx, NULL);
}

static void test_transpose(void **state) {
    (void)state;
    transpose_tiled(33, 65, "float32", 8, false);
    transpose_tiled(64, 32, "float32", 16, true);
    transpose_tiled(7, 1, "float32", 4, false);
    transpose_tiled(17, 13, "int32", 4, true);
    transpose_tiled(16, 24, "float16", 8, true);
}

/* -------------------------------------------------------- row reductions */

static const char *rowred_text(int m, int n, const char *dt, const char *op, const char *init) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def rowred(A: T.Buffer((%d, %d), \"%s\"), B: T.Buffer((%d,), \"%s\")):\n"
             "    for i, k in T.grid(%d, %d):\n"
             "        with T.block(\"B\"):\n"
             "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
             "            T.reads(A[vi, vk])\n"
             "            T.writes(B[vi])\n"
             "            with T.init():\n"
             "                B[vi] = %s\n"
             "            B[vi] = %s\n",
             m, n, dt, m, dt, m, n, init, op);
    return buf;
}

static const char *sum_op = "B[vi] + A[vi, vk]";
static const char *max_op = "T.max(B[vi], A[vi, vk])";

/* One row per thread: i over blocks and threads, k serial, the
 * accumulator in a register, the init decomposed. */
static void rowred_thread_per_row(int m, int n, const char *dt, const char *op, const char *init,
                                  int64_t threads, bool local, bool decompose) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, rowred_text(m, n, dt, op, init)));
    tir_block_rv b = sched_block(s, "B"), bi;
    tir_loop_rv l[16], ip[2];
    loops(s, "B", l);
    split_bind(s, l[0], threads, ip);
    if (local) {
        write_via_local(s, b, ip[1]);
    }
    if (decompose) SCHED_OK(s, tir_sched_decompose_reduction(s, b, l[1], &bi));
    SCHED_OK(s, tir_sched_unroll(s, l[1]));
    check_and_free(s, ctx, NULL);
}

/* Split-K over threads by rfactor: the partials in B_rf (global, a
 * workspace: two kernels), or shared with the final sum under the row's
 * block loop. */
static void rowred_rfactor(int m, int n, const char *dt, const char *op, const char *init,
                           int64_t threads, int rf_scope, const uo_opts *o) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, rowred_text(m, n, dt, op, init)));
    tir_block_rv b = sched_block(s, "B"), rf;
    tir_loop_rv l[16], kp[2], c[16];
    loops(s, "B", l);
    split2(s, l[1], threads, kp);
    SCHED_OK(s, tir_sched_rfactor(s, kp[1], 0, &rf));
    if (rf_scope == 0) {
        /* rf: i, k_0, k_1 -> i over blockIdx.x, k_1 over threadIdx.x, k_0 serial */
        SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){kp[1], kp[0]}));
        SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, kp[1], "threadIdx.x"));
        /* the final sum: its own kernel, rows over threads */
        int nc = loops(s, "B", c);
        assert_int_equal(nc, 2);
        tir_loop_rv cp[2];
        split_bind(s, c[0], 4, cp);
    } else {
        /* shared partials computed at the final sum's row loop (bound to
         * blockIdx.x), one per thread; the final sum serial in the block */
        SCHED_OK(s, tir_sched_set_scope(s, rf, 0, "shared"));
        int nc = loops(s, "B", c);
        assert_int_equal(nc, 2);
        SCHED_OK(s, tir_sched_compute_at(s, rf, c[0], false));
        SCHED_OK(s, tir_sched_bind(s, c[0], "blockIdx.x"));
        tir_loop_rv r[16];
        int nr = loops(s, "B_rf", r);
        assert_int_equal(nr, 3);
        SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){r[2], r[1]}));
        SCHED_OK(s, tir_sched_bind(s, r[2], "threadIdx.x"));
        /* the final sum needs a thread: lowering refuses it outside one */
        expect_refusal(s, o, "block 'B' runs outside threadIdx-bound loops");
        /* one thread of extent 1 for it: threadIdx.x of another extent
         * is refused, threadIdx.y leaves every x thread storing B */
        tir_loop_rv c1[2];
        loops(s, "B", c);
        SCHED_OK(s, tir_sched_split(s, c[1], 2, (const int64_t[]){1, TIR_SPLIT_INFER}, c1));
        SCHED_OK(s, tir_sched_bind(s, c1[0], "threadIdx.x"));
        refusal_and_free(s, ctx, o, "threadIdx.x is bound with two different extents");
        return;
    }
    (void)b;
    check_and_free(s, ctx, o);
}

static void test_row_reduction(void **state) {
    (void)state;
    const char *zero32 = "T.float32(0)", *ninf32 = "T.float32(\"-inf\")";
    rowred_thread_per_row(7, 1000, "float32", sum_op, zero32, 4, true, true);
    rowred_thread_per_row(33, 7, "float32", max_op, ninf32, 8, true, false);
    rowred_thread_per_row(1, 1, "float32", sum_op, zero32, 1, false, true);
    rowred_thread_per_row(33, 17, "int32", sum_op, "0", 32, true, true);
    rowred_thread_per_row(5, 33, "float16", sum_op, "T.float16(0)", 2, true, true);
    rowred_thread_per_row(5, 33, "bfloat16", max_op, "T.bfloat16(\"-inf\")", 2, true, true);
    uo_opts fl = {DATA_FLOAT, 1e-5, 3, 0};
    rowred_rfactor(7, 1000, "float32", sum_op, zero32, 32, 0, &fl);
    rowred_rfactor(7, 1000, "float32", max_op, ninf32, 32, 0, NULL);
    rowred_rfactor(3, 33, "int32", sum_op, "0", 8, 0, NULL);
    rowred_rfactor(7, 1024, "float32", sum_op, zero32, 32, 1, &fl);
    rowred_rfactor(7, 96, "float32", max_op, ninf32, 16, 1, NULL);
}

/* ----------------------------------------------------- column reduction */

static const char *colred_text(int m, int n, const char *dt) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def colred(A: T.Buffer((%d, %d), \"%s\"), B: T.Buffer((%d,), \"%s\")):\n"
             "    for j, i in T.grid(%d, %d):\n"
             "        with T.block(\"B\"):\n"
             "            vj, vi = T.axis.remap(\"SR\", [j, i])\n"
             "            T.reads(A[vi, vj])\n"
             "            T.writes(B[vj])\n"
             "            with T.init():\n"
             "                B[vj] = T.%s(0)\n"
             "            B[vj] = B[vj] + A[vi, vj]\n",
             m, n, dt, n, dt, n, m, dt);
    return buf;
}

/* Columns over threads, rows in tiles of `rows` staged in shared memory by
 * a cooperative fetch at the row-tile loop (its loops `na` deep where na >
 * 0); the sum in a register.  The row split is left in ip. */
static void colred_stage(tir_schedule *s, int64_t threads, int64_t rows, int na,
                         tir_loop_rv *ip) {
    tir_block_rv b = sched_block(s, "B");
    tir_loop_rv l[16], jp[2], al[16], fp[2];
    loops(s, "B", l);
    split2(s, l[0], threads, jp);
    split2(s, l[1], rows, ip);
    SCHED_OK(s, tir_sched_bind(s, jp[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, jp[1], "threadIdx.x"));
    write_via_local(s, b, jp[1]);
    cache_read_at(s, b, 0, "shared", ip[0]);
    /* the fetch of rows x threads elements: fused, split by the threads */
    int n = loops(s, "A_shared", al);
    if (na > 0) assert_int_equal(n, na);
    tir_loop_rv fu;
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){al[n - 2], al[n - 1]}, &fu));
    split2(s, fu, threads, fp);
    SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
}

static void colred_staged(int m, int n, const char *dt, int64_t threads, int64_t rows,
                          bool unroll) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, colred_text(m, n, dt)));
    tir_block_rv b = sched_block(s, "B"), bi;
    tir_loop_rv ip[2];
    colred_stage(s, threads, rows, 5, ip);
    SCHED_OK(s, tir_sched_decompose_reduction(s, b, ip[0], &bi));
    if (unroll) SCHED_OK(s, tir_sched_unroll(s, ip[1]));
    check_and_free(s, ctx, NULL);
}

static void test_column_reduction(void **state) {
    (void)state;
    colred_staged(64, 32, "float32", 16, 8, true);
    colred_staged(1000, 33, "float32", 8, 7, false);
    colred_staged(7, 5, "int32", 4, 3, true);
    colred_staged(33, 17, "float16", 8, 4, false);
}

/* ------------------------------------------------------------- stencils */

static const char *stencil1d_text(int n) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def stencil(A: T.Buffer((%d,), \"float32\"), B: T.Buffer((%d,), \"float32\")):\n"
             "    for i in T.serial(%d):\n"
             "        with T.block(\"B\"):\n"
             "            vi = T.axis.spatial(%d, i)\n"
             "            T.reads(A[vi:vi + 3])\n"
             "            T.writes(B[vi])\n"
             "            B[vi] = A[vi] + A[vi + 1] * T.float32(2) + A[vi + 2]\n",
             n + 2, n, n, n);
    return buf;
}

/* A tile of `t` outputs per thread block; the t + 2 inputs with their halo
 * fetched into shared by t threads (a second round for the halo). */
static void stencil1d_shared(int n, int64_t t, bool local_out) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, stencil1d_text(n)));
    tir_block_rv b = sched_block(s, "B");
    tir_loop_rv l[16], ip[2], al[16], fp[2];
    loops(s, "B", l);
    split_bind(s, l[0], t, ip);
    cache_read_at(s, b, 0, "shared", ip[0]);
    int na = loops(s, "A_shared", al);
    assert_int_equal(na, 2);
    assert_int_equal(sched_extent(s, al[1]), t + 2);
    split2(s, al[1], t, fp);
    SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
    if (local_out) {
        write_via_local(s, b, ip[1]);
    }
    check_and_free(s, ctx, NULL);
}

/* 3x3 convolution (valid), one channel: B[i, j] = sum A[i + di, j + dj] * W[di, dj]. */
static const char *conv2d_text(int h, int w) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def conv(A: T.Buffer((%d, %d), \"float32\"), W: T.Buffer((3, 3), \"float32\"),\n"
             "         B: T.Buffer((%d, %d), \"float32\")):\n"
             "    for i, j, di, dj in T.grid(%d, %d, 3, 3):\n"
             "        with T.block(\"B\"):\n"
             "            vi, vj, vdi, vdj = T.axis.remap(\"SSRR\", [i, j, di, dj])\n"
             "            T.reads(A[vi + vdi, vj + vdj], W[vdi, vdj])\n"
             "            T.writes(B[vi, vj])\n"
             "            with T.init():\n"
             "                B[vi, vj] = T.float32(0)\n"
             "            B[vi, vj] = B[vi, vj] + A[vi + vdi, vj + vdj] * W[vdi, vdj]\n",
             h + 2, w + 2, h, w, h, w);
    return buf;
}

static void conv2d_tiled(int h, int w, int64_t ti, int64_t tj) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, conv2d_text(h, w)));
    tir_block_rv b = sched_block(s, "B"), as, ws, bi;
    tir_loop_rv l[16], ip[2], jp[2], al[16];
    loops(s, "B", l);
    tile2d_bind(s, l[0], l[1], ti, tj, false, ip, jp);
    write_via_local(s, b, jp[1]);
    SCHED_OK(s, tir_sched_cache_read(s, b, 0, "shared", 0, NULL, &as));
    SCHED_OK(s, tir_sched_cache_read(s, b, 1, "shared", 0, NULL, &ws));
    SCHED_OK(s, tir_sched_compute_at(s, as, jp[0], false));
    SCHED_OK(s, tir_sched_compute_at(s, ws, jp[0], false));
    /* the (ti + 2) x (tj + 2) halo tile: fused and spread over the threads */
    const char *names[2] = {"A_shared", "W_shared"};
    for (int c = 0; c < 2; c++) {
        int na = loops(s, names[c], al);
        assert_int_equal(na, 4);
        tir_loop_rv fu, fp[3];
        SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){al[2], al[3]}, &fu));
        SCHED_OK(s, tir_sched_split(s, fu, 3, (const int64_t[]){TIR_SPLIT_INFER, ti, tj}, fp));
        SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.y"));
        SCHED_OK(s, tir_sched_bind(s, fp[2], "threadIdx.x"));
    }
    loops(s, "B", l);
    SCHED_OK(s, tir_sched_decompose_reduction(s, b, l[4], &bi));
    SCHED_OK(s, tir_sched_unroll(s, l[5]));
    check_and_free(s, ctx, NULL);
}

static void test_stencil(void **state) {
    (void)state;
    stencil1d_shared(1000, 32, true);
    stencil1d_shared(7, 4, false);
    stencil1d_shared(1, 1, true);
    stencil1d_shared(33, 2, false);
    conv2d_tiled(16, 16, 4, 8);
    conv2d_tiled(13, 7, 4, 4);
}

/* -------------------------------------------------------------- softmax */

static const char *softmax_text(int m, int n) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def softmax(A: T.Buffer((%d, %d), \"float32\"), O: T.Buffer((%d, %d), \"float32\")):\n"
             "    with T.block(\"root\"):\n"
             "        M = T.alloc_buffer((%d,), \"float32\")\n"
             "        E = T.alloc_buffer((%d, %d), \"float32\")\n"
             "        S = T.alloc_buffer((%d,), \"float32\")\n"
             "        for i, k in T.grid(%d, %d):\n"
             "            with T.block(\"M\"):\n"
             "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
             "                T.reads(A[vi, vk])\n"
             "                T.writes(M[vi])\n"
             "                with T.init():\n"
             "                    M[vi] = T.float32(\"-inf\")\n"
             "                M[vi] = T.max(M[vi], A[vi, vk])\n"
             "        for i, k in T.grid(%d, %d):\n"
             "            with T.block(\"E\"):\n"
             "                vi, vk = T.axis.remap(\"SS\", [i, k])\n"
             "                T.reads(A[vi, vk], M[vi])\n"
             "                T.writes(E[vi, vk])\n"
             "                E[vi, vk] = T.exp(A[vi, vk] - M[vi])\n"
             "        for i, k in T.grid(%d, %d):\n"
             "            with T.block(\"S\"):\n"
             "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
             "                T.reads(E[vi, vk])\n"
             "                T.writes(S[vi])\n"
             "                with T.init():\n"
             "                    S[vi] = T.float32(0)\n"
             "                S[vi] = S[vi] + E[vi, vk]\n"
             "        for i, k in T.grid(%d, %d):\n"
             "            with T.block(\"O\"):\n"
             "                vi, vk = T.axis.remap(\"SS\", [i, k])\n"
             "                T.reads(E[vi, vk], S[vi])\n"
             "                T.writes(O[vi, vk])\n"
             "                O[vi, vk] = E[vi, vk] / S[vi]\n",
             m, n, m, n, m, m, n, m, m, n, m, n, m, n, m, n);
    return buf;
}

/* variant 0: each stage its own kernel nest (rows over blocks/threads),
 * the global M, E, S intermediates: several kernels.
 * variant 1: E inlined into S and O; M and S computed at O's row loop (one
 * row per thread), in registers.
 * variant 2: as 1, but rows over blockIdx.x and O's columns over
 * threadIdx.x with M and S in shared memory: every thread would compute
 * the row's max, refused or correct. */
static void softmax_sched(int m, int n, int variant, int64_t t) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, softmax_text(m, n)));
    tir_loop_rv l[16], ip[2];
    tir_block_rv bm = sched_block(s, "M"), be = sched_block(s, "E"), bs = sched_block(s, "S"),
                 bo = sched_block(s, "O");
    uo_opts o = {DATA_FLOAT, 2e-6, 11, 0};
    if (variant == 0) {
        const char *names[4] = {"M", "E", "S", "O"};
        for (int b = 0; b < 4; b++) {
            loops(s, names[b], l);
            split_bind(s, l[0], t, ip);
        }
    } else if (variant == 1) {
        SCHED_OK(s, tir_sched_compute_inline(s, be));
        loops(s, "O", l);
        split_bind(s, l[0], t, ip);
        /* global S computed at a thread loop is relaxed over every
         * thread: each thread would run every row, repeating the
         * reduction: refused, naming the loop and the block */
        if (m > t) {
            SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REPEATED_INSTANCES, "compute_at",
                              tir_sched_compute_at(s, bs, ip[1], false));
            expect_msg(s, "under loop i_1 the reduction \"S\"");
        }
        SCHED_OK(s, tir_sched_set_scope(s, bm, 0, "local"));
        place_at(s, bs, "local", ip[1]);
        SCHED_OK(s, tir_sched_compute_at(s, bm, ip[1], false));
    } else {
        SCHED_OK(s, tir_sched_compute_inline(s, be));
        loops(s, "O", l);
        tir_loop_rv kp[2];
        split2(s, l[1], t, kp);
        SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, kp[1], "threadIdx.x"));
        SCHED_OK(s, tir_sched_compute_at(s, bs, l[0], false));
        SCHED_OK(s, tir_sched_compute_at(s, bm, l[0], false));
        SCHED_OK(s, tir_sched_set_scope(s, bm, 0, "shared"));
        SCHED_OK(s, tir_sched_set_scope(s, bs, 0, "shared"));
        /* M and S run in the block, outside the column threads: there
         * is no cross-thread reduction, so lowering refuses */
        refusal_and_free(s, ctx, &o, "block 'M' runs outside threadIdx-bound loops");
        return;
    }
    (void)bo;
    check_and_free(s, ctx, &o);
}

static void test_softmax(void **state) {
    (void)state;
    softmax_sched(7, 33, 0, 4);
    softmax_sched(7, 33, 1, 4);
    softmax_sched(1, 1000, 1, 1);
    softmax_sched(5, 64, 2, 32);
}

/* ------------------------------------------- elementwise with broadcasting */

static const char *bias_relu_text(int m, int n, const char *dt) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def bias_relu(A: T.Buffer((%d, %d), \"%s\"), s: T.Buffer((%d,), \"%s\"),\n"
             "              b: T.Buffer((%d,), \"%s\"), D: T.Buffer((%d, %d), \"%s\")):\n"
             "    with T.block(\"root\"):\n"
             "        C = T.alloc_buffer((%d, %d), \"%s\")\n"
             "        for i, j in T.grid(%d, %d):\n"
             "            with T.block(\"C\"):\n"
             "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
             "                T.reads(A[vi, vj], s[vj], b[vi])\n"
             "                T.writes(C[vi, vj])\n"
             "                C[vi, vj] = A[vi, vj] * s[vj] + b[vi]\n"
             "        for i, j in T.grid(%d, %d):\n"
             "            with T.block(\"D\"):\n"
             "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
             "                T.reads(C[vi, vj])\n"
             "                T.writes(D[vi, vj])\n"
             "                D[vi, vj] = T.max(C[vi, vj], T.%s(0))\n",
             m, n, dt, n, dt, m, dt, m, n, dt, m, n, dt, m, n, m, n, dt);
    return buf;
}

/* variant 0: C inlined, D's loops fused, split over blocks/threads, a
 * vectorized inner loop.  variant 1: D over 2-D threads, C computed at
 * D's thread loop in a register.  variant 2: C over threads, D placed
 * under C's thread loop by reverse_compute_at. variant 3: the scale s
 * cached in shared memory at the block loop. */
static void bias_relu_sched(int m, int n, const char *dt, int variant, int64_t t, int64_t v) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, bias_relu_text(m, n, dt)));
    tir_block_rv bc = sched_block(s, "C"), bd = sched_block(s, "D");
    tir_loop_rv l[16];
    if (variant == 0) {
        SCHED_OK(s, tir_sched_compute_inline(s, bc));
        loops(s, "D", l);
        tir_loop_rv fu, fp[3];
        SCHED_OK(s, tir_sched_fuse(s, 2, l, &fu));
        SCHED_OK(s, tir_sched_split(s, fu, 3, (const int64_t[]){TIR_SPLIT_INFER, t, v}, fp));
        SCHED_OK(s, tir_sched_bind(s, fp[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
        SCHED_OK(s, tir_sched_vectorize(s, fp[2]));
    } else if (variant == 1 || variant == 3) {
        loops(s, "D", l);
        tir_loop_rv ip[2], jp[2];
        tile2d_bind(s, l[0], l[1], t, v, false, ip, jp);
        place_at(s, bc, "local", jp[1]);
        if (variant == 3) {
            tir_loop_rv al[16];
            cache_read_at(s, bc, 1, "shared", jp[0]);
            int na = loops(s, "s_shared", al);
            assert_int_equal(na, 3);
            /* bound to threadIdx.x alone, every threadIdx.y thread
             * would store the same elements: a race, refused */
            SCHED_OK(s, tir_sched_bind(s, al[2], "threadIdx.x"));
            expect_refusal(s, NULL, "race_check: shared buffer s_shared");
            tir_sched_destroy(s);
            /* again, the v elements over both thread axes (split past
             * the extent: threadIdx.y > 0 masked) */
            s = sched_new(ctx, us_parse(ctx, bias_relu_text(m, n, dt)));
            bc = sched_block(s, "C");
            loops(s, "D", l);
            tile2d_bind(s, l[0], l[1], t, v, false, ip, jp);
            place_at(s, bc, "local", jp[1]);
            cache_read_at(s, bc, 1, "shared", jp[0]);
            loops(s, "s_shared", al);
            tir_loop_rv fp[2];
            SCHED_OK(s, tir_sched_split(s, al[2], 2, (const int64_t[]){t, v}, fp));
            SCHED_OK(s, tir_sched_bind(s, fp[0], "threadIdx.y"));
            SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
        }
    } else {
        loops(s, "C", l);
        tir_loop_rv ip[2];
        split_bind(s, l[0], t, ip);
        SCHED_OK(s, tir_sched_reverse_compute_at(s, bd, ip[1], false));
        SCHED_OK(s, tir_sched_set_scope(s, bc, 0, "local"));
        loops(s, "D", l);
        SCHED_OK(s, tir_sched_unroll(s, l[2]));
    }
    check_and_free(s, ctx, NULL);
}

static void test_bias_relu(void **state) {
    (void)state;
    bias_relu_sched(33, 65, "float32", 0, 32, 4);
    bias_relu_sched(7, 7, "float32", 0, 2, 2);
    bias_relu_sched(16, 16, "float16", 0, 8, 8);
    bias_relu_sched(17, 24, "int32", 0, 4, 4);
    bias_relu_sched(33, 65, "float32", 1, 4, 8);
    bias_relu_sched(1, 1, "float32", 1, 1, 1);
    bias_relu_sched(33, 65, "bfloat16", 2, 8, 0);
    bias_relu_sched(13, 35, "float32", 3, 4, 8);
}

/* --------------------------------------------------------- batched, 3-4-D */

/* NCHW -> NHWC with a scale: fused and bound, or tiled over 3 axes. */
static const char *nchw_text(int n, int c, int h, int w, const char *dt) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def nchw(A: T.Buffer((%d, %d, %d, %d), \"%s\"), B: T.Buffer((%d, %d, %d, %d), \"%s\")):\n"
             "    for n, c, h, w in T.grid(%d, %d, %d, %d):\n"
             "        with T.block(\"B\"):\n"
             "            vn, vc, vh, vw = T.axis.remap(\"SSSS\", [n, c, h, w])\n"
             "            T.reads(A[vn, vc, vh, vw])\n"
             "            T.writes(B[vn, vh, vw, vc])\n"
             "            B[vn, vh, vw, vc] = A[vn, vc, vh, vw] + A[vn, vc, vh, vw]\n",
             n, c, h, w, dt, n, h, w, c, dt, n, c, h, w);
    return buf;
}

static void nchw_sched(int n, int c, int h, int w, const char *dt, int variant, int64_t t) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, nchw_text(n, c, h, w, dt)));
    tir_loop_rv l[16];
    loops(s, "B", l);
    if (variant == 0) {
        tir_loop_rv fu, fp[2];
        SCHED_OK(s, tir_sched_fuse(s, 4, l, &fu));
        split_bind(s, fu, t, fp);
    } else {
        /* n -> blockIdx.z, (h, w) fused -> blockIdx.x / threadIdx.y, c ->
         * threadIdx.x: consecutive threads write consecutive B elements */
        tir_loop_rv hw, hp[2];
        SCHED_OK(s, tir_sched_reorder(s, 4, (const tir_loop_rv[]){l[0], l[2], l[3], l[1]}));
        SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[2], l[3]}, &hw));
        split2(s, hw, t, hp);
        SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.z"));
        SCHED_OK(s, tir_sched_bind(s, hp[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, hp[1], "threadIdx.y"));
        SCHED_OK(s, tir_sched_bind(s, l[1], "threadIdx.x"));
        tir_block_rv b = sched_block(s, "B");
        cache_read_at(s, b, 0, "shared", hp[0]);
        tir_loop_rv al[16];
        int na = loops(s, "A_shared", al);
        assert_true(na >= 3);
        /* ax0 (n, extent 1 dropped?), c, then h/w of the tile */
        /* binding the channel loop alone leaves the 4 threadIdx.y
         * threads all copying the tile: a race, refused */
        SCHED_OK(s, tir_sched_bind(s, al[na - 3], "threadIdx.x"));
        refusal_and_free(s, ctx, NULL, "race_check: shared buffer A_shared");
        return;
    }
    check_and_free(s, ctx, NULL);
}

static void test_batched(void **state) {
    (void)state;
    nchw_sched(2, 3, 5, 7, "float32", 0, 32);
    nchw_sched(1, 1, 1, 1, "float32", 0, 1);
    nchw_sched(2, 16, 4, 5, "float16", 0, 64);
    nchw_sched(2, 3, 5, 7, "int32", 1, 4);
}

/* ---------------------------------------------- a producer with a halo */

static const char *chain3_text(int n, const char *dt) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def chain3(A: T.Buffer((%d,), \"%s\"), C: T.Buffer((%d,), \"%s\")):\n"
             "    with T.block(\"root\"):\n"
             "        B = T.alloc_buffer((%d,), \"%s\")\n"
             "        for i in T.serial(%d):\n"
             "            with T.block(\"B\"):\n"
             "                vi = T.axis.spatial(%d, i)\n"
             "                T.reads(A[vi])\n"
             "                T.writes(B[vi])\n"
             "                B[vi] = A[vi] * A[vi] - A[vi]\n"
             "        for i in T.serial(%d):\n"
             "            with T.block(\"C\"):\n"
             "                vi = T.axis.spatial(%d, i)\n"
             "                T.reads(B[vi:vi + 3])\n"
             "                T.writes(C[vi])\n"
             "                C[vi] = B[vi] + B[vi + 1] - B[vi + 2]\n",
             n + 2, dt, n, dt, n + 2, dt, n + 2, n + 2, n, n);
    return buf;
}

/* variant 0: B in shared, computed at C's block loop with its halo (t + 2
 * elements over t threads, a second round for the halo); variant 1: B in
 * registers, computed at C's thread loop (three per thread, recomputed by
 * neighbours); variant 2: C placed under B's thread loop by
 * reverse_compute_at (refused: C reads B's neighbours' elements). */
static void chain3_sched(int n, const char *dt, int variant, int64_t t) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, chain3_text(n, dt)));
    tir_block_rv bb = sched_block(s, "B"), bc = sched_block(s, "C");
    tir_loop_rv l[16], ip[2], bl[16], fp[2];
    if (variant == 2) {
        loops(s, "B", l);
        split_bind(s, l[0], t, ip);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, "reverse_compute_at",
                          tir_sched_reverse_compute_at(s, bc, ip[1], false));
        expect_msg(s, "\"C\"");
        free_all(s, ctx);
        return;
    }
    loops(s, "C", l);
    split_bind(s, l[0], t, ip);
    if (variant == 0) {
        place_at(s, bb, "shared", ip[0]);
        int nb = loops(s, "B", bl);
        assert_int_equal(nb, 2);
        split2(s, bl[1], t, fp);
        SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
    } else {
        place_at(s, bb, "local", ip[1]);
        int nb = loops(s, "B", bl);
        assert_int_equal(nb, 3);
        SCHED_OK(s, tir_sched_unroll(s, bl[2]));
        /* each thread computes B at its three elements and reads only
         * those; local_check cannot read the thread back from the element
         * (neighbours write overlapping elements): a false refusal */
        if (refused_with(s, NULL, "local_check: buffer 'B' is local")) {
            free_all(s, ctx);
            return;
        }
    }
    check_and_free(s, ctx, NULL);
}

static void test_halo_producer(void **state) {
    (void)state;
    chain3_sched(1000, "float32", 0, 32);
    chain3_sched(7, "float32", 0, 4);
    chain3_sched(33, "int32", 1, 8);
    chain3_sched(1, "float32", 1, 1);
    chain3_sched(17, "float16", 0, 4);
    chain3_sched(17, "float32", 2, 4);
}

/* --------------------------------------------------------- vectorization */

static const char *axpy_text(int n, const char *dt) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def axpy(X: T.Buffer((%d,), \"%s\"), Y: T.Buffer((%d,), \"%s\"), Z: T.Buffer((%d,), \"%s\")):\n"
             "    for i in T.serial(%d):\n"
             "        with T.block(\"Z\"):\n"
             "            vi = T.axis.spatial(%d, i)\n"
             "            T.reads(X[vi], Y[vi])\n"
             "            T.writes(Z[vi])\n"
             "            Z[vi] = X[vi] * T.%s(3) + Y[vi]\n",
             n, dt, n, dt, n, dt, n, n, dt);
    return buf;
}

/* [blocks, threads, v] with the v loop vectorized, ragged or not; the
 * inputs through shared or local caches, the output through a local
 * cache. */
static void axpy_vec(int n, const char *dt, int64_t t, int64_t v, int cache) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, axpy_text(n, dt)));
    tir_block_rv b = sched_block(s, "Z");
    tir_loop_rv l[16], fp[3], cl[16];
    loops(s, "Z", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 3, (const int64_t[]){TIR_SPLIT_INFER, t, v}, fp));
    SCHED_OK(s, tir_sched_bind(s, fp[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
    if (cache == 1) {
        cache_read_at(s, b, 0, "local", fp[1]);
        int nc = loops(s, "X_local", cl);
        SCHED_OK(s, tir_sched_vectorize(s, cl[nc - 1]));
        write_via_local(s, b, fp[1]);
        nc = loops(s, "Z_local", cl);
        SCHED_OK(s, tir_sched_vectorize(s, cl[nc - 1]));
    } else if (cache == 2) {
        cache_read_at(s, b, 1, "shared", fp[0]);
        int nc = loops(s, "Y_shared", cl);
        assert_int_equal(nc, 2);
        tir_loop_rv cp[3];
        SCHED_OK(s, tir_sched_split(s, cl[1], 3, (const int64_t[]){TIR_SPLIT_INFER, t, v}, cp));
        SCHED_OK(s, tir_sched_bind(s, cp[1], "threadIdx.x"));
        SCHED_OK(s, tir_sched_vectorize(s, cp[2]));
    }
    SCHED_OK(s, tir_sched_vectorize(s, fp[2]));
    check_and_free(s, ctx, NULL);
}

/* A transpose whose store is vectorized along the stored row (the load is
 * strided) and one along the loaded row (the store is strided). */
static void transpose_vec(int m, int n, int64_t v, bool along_store) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, transpose_text(m, n, "float32")));
    tir_loop_rv l[16], ip[2], jp[2];
    loops(s, "B", l);
    split2(s, l[0], v, ip);
    split2(s, l[1], 4, jp);
    if (along_store) {
        SCHED_OK(s, tir_sched_reorder(s, 4, (const tir_loop_rv[]){jp[0], ip[0], jp[1], ip[1]}));
        SCHED_OK(s, tir_sched_bind(s, jp[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, ip[0], "threadIdx.x"));
        SCHED_OK(s, tir_sched_vectorize(s, ip[1]));
    } else {
        SCHED_OK(s, tir_sched_bind(s, ip[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, ip[1], "threadIdx.x"));
        SCHED_OK(s, tir_sched_vectorize(s, jp[1]));
    }
    check_and_free(s, ctx, NULL);
}

static void test_vectorize(void **state) {
    (void)state;
    axpy_vec(1024, "float32", 32, 4, 0);
    axpy_vec(1000, "float32", 32, 4, 0);
    axpy_vec(1001, "float32", 32, 4, 0);
    axpy_vec(7, "float32", 1, 8, 0);
    axpy_vec(1001, "float16", 32, 8, 0);
    axpy_vec(1001, "bfloat16", 16, 2, 0);
    axpy_vec(999, "int32", 8, 4, 1);
    axpy_vec(1001, "float32", 32, 4, 1);
    axpy_vec(1001, "float32", 32, 4, 2);
    axpy_vec(64, "float16", 4, 8, 2);
    axpy_vec(33, "int8", 4, 4, 0);
    transpose_vec(32, 32, 4, true);
    transpose_vec(33, 17, 4, true);
    transpose_vec(33, 17, 4, false);
}

/* ----------------------------------------------------- symbolic extents */

static const char *sym_rowsum_text =
    "@T.prim_func\n"
    "def rowsum(A: T.Buffer((n, n), \"float32\"), C: T.Buffer((n,), \"float32\"), n: T.int32):\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((n,), \"float32\")\n"
    "        for i, k in T.grid(n, n):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(B[vi])\n"
    "                with T.init():\n"
    "                    B[vi] = T.float32(0)\n"
    "                B[vi] = B[vi] + A[vi, vk]\n"
    "        for i in T.serial(n):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.spatial(n, i)\n"
    "                T.reads(B[vi])\n"
    "                T.writes(C[vi])\n"
    "                C[vi] = B[vi] * T.float32(0.5)\n";

static const char *triangle_text =
    "@T.prim_func\n"
    "def tri(A: T.Buffer((m, 4, 4), \"float32\"), C: T.Buffer((m, 4, 4), \"float32\"), m: T.int32):\n"
    "    with T.block(\"root\"):\n"
    "        B = T.alloc_buffer((m, 4, 4), \"float32\")\n"
    "        for o, i in T.grid(m, 4):\n"
    "            for j in T.serial(i + 1):\n"
    "                with T.block(\"B\"):\n"
    "                    vo = T.axis.spatial(m, o)\n"
    "                    vi = T.axis.spatial(4, i)\n"
    "                    vj = T.axis.spatial(4, j)\n"
    "                    T.reads(A[vo, vi, vj])\n"
    "                    T.writes(B[vo, vi, vj])\n"
    "                    B[vo, vi, vj] = A[vo, vi, vj] * T.float32(2)\n"
    "        for o, i in T.grid(m, 4):\n"
    "            for j in T.serial(i + 1):\n"
    "                with T.block(\"C\"):\n"
    "                    vo = T.axis.spatial(m, o)\n"
    "                    vi = T.axis.spatial(4, i)\n"
    "                    vj = T.axis.spatial(4, j)\n"
    "                    T.reads(B[vo, vi, vj])\n"
    "                    T.writes(C[vo, vi, vj])\n"
    "                    C[vo, vi, vj] = B[vo, vi, vj] + T.float32(1)\n";

/* A triangular nest under a dynamic shape (review of the twenty-fourth
 * session's symbolic last digit): j's extent i + 1 is symbolic.  Under
 * loop i it is the target loop's value and the box [0, i + 1) is exact:
 * reverse_compute_at and compute_at there, and compute_at at o (which
 * recomputes B's bounding box), compute what the interpreter computes.
 * Under loop o the extent names i, a loop inside the target, and the box
 * would name it too: reverse_compute_at at o is refused. */
static void test_triangular(void **state) {
    (void)state;
    static char why[1 << 16];
    for (int v = 0; v < 4; v++)
        for (int64_t m = 1; m <= 3; m += 2) {
            tir_ctx *ctx = tir_ctx_create();
            tir_schedule *s = sched_new(ctx, us_parse(ctx, triangle_text));
            tir_block_rv b = sched_block(s, "B"), c = sched_block(s, "C");
            tir_loop_rv l[16];
            if (v == 0) {
                loops(s, "B", l);
                SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "reverse_compute_at",
                                  tir_sched_reverse_compute_at(s, c, l[0], false));
                free_all(s, ctx);
                continue;
            }
            if (v == 1) {
                loops(s, "C", l);
                SCHED_OK(s, tir_sched_compute_at(s, b, l[0], false));
            } else if (v == 2) {
                loops(s, "B", l);
                SCHED_OK(s, tir_sched_reverse_compute_at(s, c, l[1], false));
            } else {
                loops(s, "C", l);
                SCHED_OK(s, tir_sched_compute_at(s, b, l[1], false));
            }
            uo_opts o = {DATA_SMALL_INT, 0, 5, m};
            if (!interp_ok(s, &o, why, sizeof why))
                FAILF("variant %d m = %lld: %s", v, (long long)m, why);
            free_all(s, ctx);
        }
}

/* Dynamic shapes: schedules over loops of symbolic extent.  compute_at,
 * reverse_compute_at and decompose_reduction of a reduction under such
 * loops were refused (region_cover's dense radix took only constant
 * extents).  GPU kernels with intermediates of symbolic shape were
 * refused by gpu_check before compaction; B here compacts to one element
 * per thread, so these run in the interpreter and in the simulator. */
static void test_symbolic(void **state) {
    (void)state;
    int64_t sizes[] = {1, 7, 33, 100};
    static char why[1 << 16];
    for (int variant = 0; variant < 3; variant++)
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            tir_ctx *ctx = tir_ctx_create();
            tir_schedule *s = sched_new(ctx, us_parse(ctx, sym_rowsum_text));
            tir_block_rv b = sched_block(s, "B"), c = sched_block(s, "C"), bi;
            tir_loop_rv l[16], ip[2];
            if (variant == 0) {
                /* B in a register, computed at C's thread loop */
                loops(s, "C", l);
                split_bind(s, l[0], 8, ip);
                place_at(s, b, "local", ip[1]);
                loops(s, "B", l);
                SCHED_OK(s, tir_sched_decompose_reduction(s, b, l[2], &bi));
            } else if (variant == 1) {
                /* the reduction's own nest, its accumulator local */
                loops(s, "B", l);
                split_bind(s, l[0], 4, ip);
                write_via_local(s, b, ip[1]);
                SCHED_OK(s, tir_sched_decompose_reduction(s, b, l[1], &bi));
            } else {
                /* C under B's thread loop, B in a register */
                tir_loop_rv bp[2];
                loops(s, "B", l);
                split_bind(s, l[0], 16, bp);
                SCHED_OK(s, tir_sched_set_scope(s, b, 0, "local"));
                SCHED_OK(s, tir_sched_reverse_compute_at(s, c, bp[1], false));
                SCHED_OK(s, tir_sched_unroll(s, l[1]));
            }
            uo_opts o = {DATA_SMALL_INT, 0, 5, sizes[z]};
            if (!interp_ok(s, &o, why, sizeof why))
                FAILF("variant %d n = %lld: %s", variant, (long long)sizes[z], why);
            /* B compacts to one element per thread (eighth new-user
               review; gpu_check refused any intermediate of symbolic
               shape before compaction); variant 1 leaves C unbound */
            if (variant == 1) {
                refusal_and_free(s, ctx, &o, "block 'C' runs outside blockIdx-bound loops");
                continue;
            }
            if (!lower_sim_ok(s, &o, why, sizeof why, NULL))
                FAILF("variant %d n = %lld, simulated: %s", variant, (long long)sizes[z], why);
            free_all(s, ctx);
        }
    /* the symbolic loop must be the largest stride: t + kk * 8 over t <
     * m repeats instances once m > 8, so decompose_reduction (which
     * needs each update instance once) must still refuse */
    {
        static const char *txt =
            "@T.prim_func\n"
            "def rep(A: T.Buffer((m + 24,), \"float32\"), B: T.Buffer((1,), \"float32\"), m: T.int32):\n"
            "    for t, kk in T.grid(m, 4):\n"
            "        with T.block(\"B\"):\n"
            "            v0 = T.axis.spatial(1, 0)\n"
            "            vk = T.axis.reduce(m + 24, t + kk * 8)\n"
            "            T.reads(A[vk])\n"
            "            T.writes(B[v0])\n"
            "            with T.init():\n"
            "                B[v0] = T.float32(0)\n"
            "            B[v0] = B[v0] + A[vk]\n";
        tir_ctx *ctx = tir_ctx_create();
        tir_schedule *s = sched_new(ctx, us_parse(ctx, txt));
        tir_block_rv b = sched_block(s, "B"), bi;
        tir_loop_rv l[16];
        loops(s, "B", l);
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REPEATED_INSTANCES, "decompose_reduction",
                          tir_sched_decompose_reduction(s, b, l[0], &bi));
        /* with the strides the other way round it is a box */
        tir_sched_destroy(s);
        static const char *txt2 =
            "@T.prim_func\n"
            "def box(A: T.Buffer((m * 8,), \"float32\"), B: T.Buffer((1,), \"float32\"), m: T.int32):\n"
            "    for t, kk in T.grid(m, 8):\n"
            "        with T.block(\"B\"):\n"
            "            v0 = T.axis.spatial(1, 0)\n"
            "            vk = T.axis.reduce(m * 8, t * 8 + kk)\n"
            "            T.reads(A[vk])\n"
            "            T.writes(B[v0])\n"
            "            with T.init():\n"
            "                B[v0] = T.float32(0)\n"
            "            B[v0] = B[v0] + A[vk]\n";
        s = sched_new(ctx, us_parse(ctx, txt2));
        b = sched_block(s, "B");
        loops(s, "B", l);
        SCHED_OK(s, tir_sched_decompose_reduction(s, b, l[0], &bi));
        uo_opts o = {DATA_SMALL_INT, 0, 5, 5};
        if (!interp_ok(s, &o, why, sizeof why)) FAILF("%s", why);
        free_all(s, ctx);
    }
    /* no intermediate: lowered and simulated at several n and m */
    for (int variant = 0; variant < 2; variant++)
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            tir_ctx *ctx = tir_ctx_create();
            char text[1024]; /* the symbolic row sum (user_sched.h) */
            us_rowred_text(text, "rowsum", "0", "B[vi] + A[vi, vk]");
            tir_schedule *s = sched_new(ctx, us_parse(ctx, text));
            tir_block_rv b = sched_block(s, "B"), bi;
            tir_loop_rv l[16], ip[2], kp[2];
            loops(s, "B", l);
            split_bind(s, l[0], 4, ip);
            if (variant == 1) {
                split2(s, l[1], 4, kp);
                SCHED_OK(s, tir_sched_unroll(s, kp[1]));
                SCHED_OK(s, tir_sched_decompose_reduction(s, b, kp[0], &bi));
            } else {
                SCHED_OK(s, tir_sched_decompose_reduction(s, b, l[1], &bi));
            }
            uo_opts o = {DATA_SMALL_INT, 0, 5, sizes[z]};
            if (!lower_sim_ok(s, &o, why, sizeof why, NULL))
                FAILF("no intermediate, variant %d n = %lld: %s", variant, (long long)sizes[z],
                      why);
            if (!interp_ok(s, &o, why, sizeof why))
                FAILF("no intermediate, variant %d n = %lld: %s", variant, (long long)sizes[z],
                      why);
            free_all(s, ctx);
        }
}

/* -------------------------------------------------- reverse_compute_inline */

static const char *scale_sum_text =
    "@T.prim_func\n"
    "def scale_sum(A: T.Buffer((33, 20), \"float32\"), D: T.Buffer((33, 20), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        C = T.alloc_buffer((33, 20), \"float32\")\n"
    "        for i, j in T.grid(33, 20):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                C[vi, vj] = A[vi, vj] * T.float32(2)\n"
    "        for j, i in T.grid(20, 33):\n"
    "            with T.block(\"D\"):\n"
    "                vj, vi = T.axis.remap(\"SS\", [j, i])\n"
    "                T.reads(C[vi, vj])\n"
    "                T.writes(D[vi, vj])\n"
    "                D[vi, vj] = C[vi, vj] + T.float32(1)\n";

static void test_reverse_inline(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, scale_sum_text));
    tir_block_rv d = sched_block(s, "D");
    SCHED_OK(s, tir_sched_reverse_compute_inline(s, d));
    tir_loop_rv l[16], ip[2];
    loops(s, "C", l);
    split2(s, l[1], 8, ip);
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, ip[1], "threadIdx.x"));
    check_and_free(s, ctx, NULL);
}

/* ------------------------------------------------------ integer dtypes */

static const char *int_text(const char *in, const char *acc) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def dot(A: T.Buffer((9, 37), \"%s\"), W: T.Buffer((37,), \"%s\"), B: T.Buffer((9,), \"%s\")):\n"
             "    for i, k in T.grid(9, 37):\n"
             "        with T.block(\"B\"):\n"
             "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
             "            T.reads(A[vi, vk], W[vk])\n"
             "            T.writes(B[vi])\n"
             "            with T.init():\n"
             "                B[vi] = T.%s(0)\n"
             "            B[vi] = B[vi] + T.Cast(\"%s\", A[vi, vk]) * T.Cast(\"%s\", W[vk]) // T.%s(2)\n",
             in, in, acc, acc, acc, acc, acc);
    return buf;
}

static void int_dot(const char *in, const char *acc, bool rf) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, int_text(in, acc)));
    tir_block_rv b = sched_block(s, "B");
    tir_loop_rv l[16], ip[2], wl[16];
    loops(s, "B", l);
    if (rf) {
        rfactor_threads(s, "B", l[0], l[1], 8, -1, 4, ip);
    } else {
        split_bind(s, l[0], 4, ip);
        cache_read_at(s, b, 1, "shared", ip[0]);
        int nw = loops(s, "W_shared", wl);
        tir_loop_rv wp[2];
        split2(s, wl[nw - 1], 4, wp);
        SCHED_OK(s, tir_sched_bind(s, wp[1], "threadIdx.x"));
        write_via_local(s, b, ip[1]);
    }
    uo_opts o = {DATA_SMALL_INT, 0, 9, 0};
    check_and_free(s, ctx, &o);
}

static void test_int_dtypes(void **state) {
    (void)state;
    int_dot("int8", "int32", false);
    int_dot("uint8", "int32", false);
    int_dot("int8", "int64", false);
    int_dot("int8", "int32", true);
    int_dot("int32", "int64", true);
}

/* ----------------------------------------- masked (triangular) reductions */

static const char *tri_text(int n) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def tri(A: T.Buffer((%d, %d), \"float32\"), B: T.Buffer((%d,), \"float32\")):\n"
             "    for i, k in T.grid(%d, %d):\n"
             "        with T.block(\"B\"):\n"
             "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
             "            T.where(k <= i)\n"
             "            T.reads(A[vi, vk])\n"
             "            T.writes(B[vi])\n"
             "            with T.init():\n"
             "                B[vi] = T.float32(0)\n"
             "            B[vi] = B[vi] + A[vi, vk]\n",
             n, n, n, n, n);
    return buf;
}

/* A causal (lower-triangular) row sum: the user's own T.where masks
 * reduction steps.  Each schedule must keep the mask. */
static void tri_sched(int n, int variant) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, tri_text(n)));
    tir_block_rv b = sched_block(s, "B"), bi, rf;
    tir_loop_rv l[16], ip[2], kp[2];
    loops(s, "B", l);
    tir_status st = TIR_OK;
    if (variant == 0) {
        split_bind(s, l[0], 4, ip);
        write_via_local(s, b, ip[1]);
        st = tir_sched_decompose_reduction(s, b, l[1], &bi);
    } else if (variant == 1) {
        split2(s, l[1], 4, kp);
        /* refused: row 0 runs no k_1 > 0, leaving B_rf slices unwritten */
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_RFACTOR_EMPTY_SLICE, "rfactor",
                          tir_sched_rfactor(s, kp[1], 0, &rf));
        expect_msg(s, "loop k_1");
        /* over the rows instead, the k loop serial per thread */
        split_bind(s, l[0], 4, ip);
    } else if (variant == 2) {
        /* rows over threads, k split and reordered, unrolled inner */
        split2(s, l[0], 8, ip);
        split2(s, l[1], 3, kp);
        SCHED_OK(s, tir_sched_bind(s, ip[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, ip[1], "threadIdx.x"));
        SCHED_OK(s, tir_sched_unroll(s, kp[1]));
        st = tir_sched_decompose_reduction(s, b, kp[0], &bi);
    } else {
        /* the reduction computed at a consumer's thread loop */
        split_bind(s, l[0], 4, ip);
        write_via_local(s, b, ip[1]);
        loops(s, "B", l);
        split2(s, l[2], 2, kp);
        SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){kp[1], kp[0]}));
        st = tir_sched_decompose_reduction(s, b, kp[1], &bi);
    }
    if (st != TIR_OK) FAILF("tri variant %d: %s", variant, tir_ctx_error(ctx));
    /* variant 3 reorders the reduction's loops: the float order changes */
    check_and_free(s, ctx, variant == 3 ? &(uo_opts){DATA_FLOAT, 1e-5, 13, 0} : NULL);
}

static void test_masked_reduction(void **state) {
    (void)state;
    for (int v = 0; v < 4; v++) {
        tri_sched(7, v);
        tri_sched(33, v);
    }
}

/* ----------------------------------------------- two reduction axes, mean */

static const char *mean_text(int m, int r1, int r2) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def mean(A: T.Buffer((%d, %d, %d), \"float32\"), D: T.Buffer((%d,), \"float32\")):\n"
             "    with T.block(\"root\"):\n"
             "        S = T.alloc_buffer((%d,), \"float32\")\n"
             "        for i, k1, k2 in T.grid(%d, %d, %d):\n"
             "            with T.block(\"S\"):\n"
             "                vi, vk1, vk2 = T.axis.remap(\"SRR\", [i, k1, k2])\n"
             "                T.reads(A[vi, vk1, vk2])\n"
             "                T.writes(S[vi])\n"
             "                with T.init():\n"
             "                    S[vi] = T.float32(0)\n"
             "                S[vi] = S[vi] + A[vi, vk1, vk2]\n"
             "        for i in T.serial(%d):\n"
             "            with T.block(\"D\"):\n"
             "                vi = T.axis.spatial(%d, i)\n"
             "                T.reads(S[vi])\n"
             "                T.writes(D[vi])\n"
             "                D[vi] = (S[vi] + T.float32(1)) * T.float32(0.25)\n",
             m, r1, r2, m, m, m, r1, r2, m, m);
    return buf;
}

static void mean_sched(int m, int r1, int r2, int variant) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, mean_text(m, r1, r2)));
    tir_block_rv bs = sched_block(s, "S"), bd = sched_block(s, "D"), bi;
    tir_loop_rv l[16], ip[2], fu;
    bool changed = false;
    if (variant == 0) {
        /* the epilogue fused (the + 1 into the init), rows over threads */
        SCHED_OK(s, tir_sched_fuse_reduction_epilogue(s, bs, bd, &changed));
        assert_true(changed);
        loops(s, "S", l);
        split_bind(s, l[0], 4, ip);
        SCHED_OK(s, tir_sched_set_scope(s, bs, 0, "local"));
        SCHED_OK(s, tir_sched_reverse_compute_at(s, sched_block(s, "D"), ip[1], false));
        SCHED_OK(s, tir_sched_decompose_reduction(s, bs, l[1], &bi));
    } else if (variant == 1) {
        /* the two reduce loops fused, split, rfactor over the inner part */
        loops(s, "S", l);
        SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){l[1], l[2]}, &fu));
        rfactor_threads(s, "S", l[0], fu, 8, 1, 2, ip);
        SCHED_OK(s, tir_sched_reverse_compute_at(s, bd, ip[1], false));
    } else {
        /* S computed at D's thread loop, the reduce loops reordered */
        loops(s, "D", l);
        split_bind(s, l[0], 2, ip);
        place_at(s, bs, "local", ip[1]);
        tir_loop_rv sl[16];
        int ns = loops(s, "S", sl);
        if (ns == 4) {
            SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){sl[3], sl[2]}));
            SCHED_OK(s, tir_sched_decompose_reduction(s, bs, sl[3], &bi));
            SCHED_OK(s, tir_sched_unroll(s, sl[2]));
        } else {
            SCHED_OK(s, tir_sched_decompose_reduction(s, bs, sl[ns - 1], &bi));
        }
    }
    /* each variant reassociates: the + 1 moved into the init, rfactor,
     * the reduce loops reordered */
    check_and_free(s, ctx, &(uo_opts){DATA_FLOAT, 1e-5, 13, 0});
}

static void test_mean(void **state) {
    (void)state;
    for (int v = 0; v < 3; v++) {
        mean_sched(7, 3, 8, v);
        mean_sched(4, 1, 16, v);
        mean_sched(1, 8, 1, v);
    }
}

/* ---------------------------------------- register halo: cache_read local */

static void stencil1d_local(int n, int64_t t) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, stencil1d_text(n)));
    tir_block_rv b = sched_block(s, "B");
    tir_loop_rv l[16], ip[2];
    loops(s, "B", l);
    split_bind(s, l[0], t, ip);
    cache_read_at(s, b, 0, "local", ip[1]);
    /* each thread loads its three inputs into registers; neighbours load
     * overlapping elements, and local_check, which must read the thread
     * back from the element, refuses (a false refusal, docs/reliability.md) */
    refusal_and_free(s, ctx, NULL, "local_check: buffer 'A_local' is local");
}

static void test_register_halo(void **state) {
    (void)state;
    stencil1d_local(100, 32);
    stencil1d_local(7, 1);
}

/* ------------------------------------- pipelined staging of a column sum */

static void colred_pipelined(int m, int n, int64_t threads, int64_t rows, bool async) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, colred_text(m, n, "float32")));
    tir_loop_rv ip[2];
    colred_stage(s, threads, rows, 0, ip);
    /* components of ip[0]: the fetch, the compute */
    SCHED_OK(s, tir_sched_software_pipeline(s, ip[0], 2, (const int64_t[]){0, 1}, 2,
                                            (const int64_t[]){0, 1}, async ? 1 : 0,
                                            (const int64_t[]){0}));
    check_and_free(s, ctx, NULL);
}

static void test_pipeline(void **state) {
    (void)state;
    colred_pipelined(64, 32, 16, 8, false);
    colred_pipelined(64, 32, 16, 8, true);
    colred_pipelined(37, 33, 8, 4, false);
    colred_pipelined(37, 33, 8, 4, true);
    colred_pipelined(5, 7, 4, 2, true);
}

/* ------------------------------------------------------------- refusals */

/* Schedules a user gets wrong on these computations: each is refused
 * with its status, a message naming the primitive and the loop or block,
 * and the schedule exactly as it was (SCHED_EXPECT_FAIL). */
static void test_refusals(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    /* a row sum */
    tir_schedule *s = sched_new(ctx, us_parse(ctx, rowred_text(7, 33, "float32", sum_op,
                                                            "T.float32(0)")));
    tir_block_rv b = sched_block(s, "B"), out;
    tir_loop_rv l[16], kp[2];
    loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REDUCTION_LOOP, "bind",
                      tir_sched_bind(s, l[1], "threadIdx.x"));
    expect_msg(s, "loop k");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REDUCTION_LOOP, "vectorize", tir_sched_vectorize(s, l[1]));
    expect_msg(s, "loop k");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REDUCTION_LOOP, "parallel", tir_sched_parallel(s, l[1]));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NONPOSITIVE_FACTOR, "split",
                      tir_sched_split(s, l[1], 2, (const int64_t[]){0, 4}, kp));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_FACTOR_MISMATCH, "split",
                      tir_sched_split(s, l[1], 2, (const int64_t[]){4, 8}, kp));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_RFACTOR_LOOP, "rfactor", tir_sched_rfactor(s, l[0], 0, &out));
    expect_msg(s, "i");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_AXIS, "rfactor", tir_sched_rfactor(s, l[1], 2, &out));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "compute_inline",
                      tir_sched_compute_inline(s, b));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_THREAD_AXIS, "bind",
                      tir_sched_bind(s, l[0], "threadIdx.w"));
    tir_sched_destroy(s);

    /* softmax: the reductions and their consumers */
    s = sched_new(ctx, us_parse(ctx, softmax_text(5, 9)));
    tir_block_rv bm = sched_block(s, "M"), bs = sched_block(s, "S"), be = sched_block(s, "E"),
                 bo = sched_block(s, "O");
    tir_loop_rv sl[16], ol[16];
    loops(s, "S", sl);
    loops(s, "O", ol);
    /* M is read by E; E by S and O: computing E at S's loop leaves O
     * outside */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_CONSUMER_OUTSIDE, "compute_at",
                      tir_sched_compute_at(s, be, sl[0], false));
    expect_msg(s, "\"E\"");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "compute_inline",
                      tir_sched_compute_inline(s, bm));
    expect_msg(s, "\"M\"");
    /* O reads E and S: two producers, not one */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MULTIPLE_WRITERS, "reverse_compute_inline",
                      tir_sched_reverse_compute_inline(s, bo));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_CONSECUTIVE, "fuse",
                      tir_sched_fuse(s, 2, (const tir_loop_rv[]){sl[0], ol[1]}, &kp[0]));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_NESTED, "reorder",
                      tir_sched_reorder(s, 2, (const tir_loop_rv[]){sl[1], ol[0]}));
    /* S read by O at the thread loop: S after its consumer */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_LOOP_IS_ANCESTOR, "compute_at",
                      tir_sched_compute_at(s, bs, sl[0], false));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_UNKNOWN_SCOPE, "set_scope",
                      tir_sched_set_scope(s, bs, 0, "texture"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_OUTPUT_BUFFER, "set_scope",
                      tir_sched_set_scope(s, bo, 0, "shared"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_ALIGNMENT, "storage_align",
                      tir_sched_storage_align(s, bs, 0, 0, 0, 0));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MAP_NOT_INJECTIVE, "transform_layout",
                      tir_sched_transform_layout(s, be, 0, true, "lambda i, k: (i, k % 3)"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MAP_ARITY, "transform_layout",
                      tir_sched_transform_layout(s, be, 0, true, "lambda i: (i,)"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_PIPELINE_COUNT, "software_pipeline",
                      tir_sched_software_pipeline(s, sl[0], 3, (const int64_t[]){0, 0, 1}, 3,
                                                  (const int64_t[]){0, 1, 2}, 0, NULL));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BAD_SCOPE, "cache_read",
                      tir_sched_cache_read(s, bs, 0, "global", 0, NULL, &out));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_INDEX_OUT_OF_RANGE, "cache_write",
                      tir_sched_cache_write(s, bs, 1, "local", 0, NULL, &out));
    /* cache of E for O only, O not a reader of M */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_CONSUMER, "cache_read",
                      tir_sched_cache_read(s, be, 1, "shared", 1,
                                           (const tir_block_rv[]){bo}, &out));
    tir_sched_destroy(s);

    /* a transpose bound twice to one axis with different extents */
    s = sched_new(ctx, us_parse(ctx, transpose_text(8, 16, "float32")));
    loops(s, "B", l);
    SCHED_OK(s, tir_sched_bind(s, l[0], "threadIdx.x"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_AXIS_REBOUND, "bind", tir_sched_bind(s, l[1], "threadIdx.x"));
    expect_msg(s, "j");
    free_all(s, ctx);
}

/* ---------------------------------------- layouts and caches of a transpose */

/* The transposed tile read through shared memory with its layout changed
 * (k-major, or a rotation swizzle) or padded, the fetch vectorized. */
static void transpose_layout(int m, int n, int64_t tile, int variant) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, transpose_text(m, n, "float32")));
    tir_block_rv b = sched_block(s, "B"), as;
    tir_loop_rv l[16], ip[2], jp[2], al[16];
    loops(s, "B", l);
    tile2d_bind(s, l[0], l[1], tile, tile, true, ip, jp);
    SCHED_OK(s, tir_sched_cache_read(s, b, 0, "shared", 0, NULL, &as));
    char map[128];
    snprintf(map, sizeof map, "lambda i, j: (i, (j + i) %% %d + j // %d * %d)", n, n, n);
    if (variant == 0) {
        /* a permutation before compute_at: the cache is still written at
         * its iterators */
        SCHED_OK(s, tir_sched_transform_layout(s, as, 0, true, "lambda i, j: (j, i)"));
    } else if (variant == 1) {
        /* a swizzle before compute_at: compute_at needs the cache written
         * at its iterators, one each, and refuses */
        SCHED_OK(s, tir_sched_transform_layout(s, as, 0, true, map));
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS, "compute_at",
                          tir_sched_compute_at(s, as, jp[0], false));
        expect_msg(s, "\"A_shared\"");
        tir_sched_destroy(s);
        s = sched_new(ctx, us_parse(ctx, transpose_text(m, n, "float32")));
        b = sched_block(s, "B");
        loops(s, "B", l);
        tile2d_bind(s, l[0], l[1], tile, tile, true, ip, jp);
        SCHED_OK(s, tir_sched_cache_read(s, b, 0, "shared", 0, NULL, &as));
    }
    SCHED_OK(s, tir_sched_compute_at(s, as, jp[0], false));
    int na = loops(s, "A_shared", al);
    assert_int_equal(na, 4);
    tir_loop_rv fu, fp[3];
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){al[2], al[3]}, &fu));
    SCHED_OK(s, tir_sched_split(s, fu, 3, (const int64_t[]){tile, tile, TIR_SPLIT_INFER}, fp));
    SCHED_OK(s, tir_sched_bind(s, fp[0], "threadIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
    SCHED_OK(s, tir_sched_vectorize(s, fp[2]));
    if (variant == 1) {
        SCHED_OK(s, tir_sched_transform_layout(s, as, 0, true, map));
    } else if (variant == 2) {
        SCHED_OK(s, tir_sched_storage_align(s, as, 0, 0, 32, 1));
    }
    check_and_free(s, ctx, NULL);
}

static void test_transpose_layouts(void **state) {
    (void)state;
    for (int v = 0; v < 3; v++) {
        transpose_layout(32, 32, 8, v);
        transpose_layout(64, 16, 4, v);
    }
    transpose_layout(33, 17, 4, 2);
}

/* ------------------------------------------------------------ blockize */

static void test_blockize_elementwise(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, bias_relu_text(32, 24, "float32")));
    tir_block_rv bc = sched_block(s, "C"), outer;
    SCHED_OK(s, tir_sched_compute_inline(s, bc));
    tir_loop_rv l[16], ip[2], jp[2];
    loops(s, "D", l);
    split2(s, l[0], 4, ip);
    split2(s, l[1], 8, jp);
    SCHED_OK(s, tir_sched_reorder(s, 4, (const tir_loop_rv[]){ip[0], jp[0], ip[1], jp[1]}));
    SCHED_OK(s, tir_sched_blockize(s, ip[1], &outer));
    SCHED_OK(s, tir_sched_bind(s, ip[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, jp[0], "threadIdx.x"));
    check_and_free(s, ctx, NULL);
}

/* ------------------------------------------------------ cache for one reader */

static const char *two_readers_text =
    "@T.prim_func\n"
    "def two(A: T.Buffer((16, 12), \"float32\"), C: T.Buffer((16, 12), \"float32\"),\n"
    "        D: T.Buffer((12, 16), \"float32\")):\n"
    "    for i, j in T.grid(16, 12):\n"
    "        with T.block(\"C\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(A[vi, vj])\n"
    "            T.writes(C[vi, vj])\n"
    "            C[vi, vj] = A[vi, vj] + T.float32(1)\n"
    "    for j, i in T.grid(12, 16):\n"
    "        with T.block(\"D\"):\n"
    "            vj, vi = T.axis.remap(\"SS\", [j, i])\n"
    "            T.reads(A[vi, vj])\n"
    "            T.writes(D[vj, vi])\n"
    "            D[vj, vi] = A[vi, vj] * T.float32(2)\n";

static void test_cache_one_reader(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, two_readers_text));
    tir_block_rv bc = sched_block(s, "C"), bd = sched_block(s, "D"), as;
    tir_loop_rv l[16], al[16];
    /* D reads A through shared memory, C directly */
    SCHED_OK(s, tir_sched_cache_read(s, bd, 0, "shared", 1, (const tir_block_rv[]){bd}, &as));
    loops(s, "C", l);
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, l[1], "threadIdx.x"));
    loops(s, "D", l);
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], l[0]}));
    SCHED_OK(s, tir_sched_bind(s, l[1], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, l[0], "threadIdx.x"));
    SCHED_OK(s, tir_sched_compute_at(s, as, l[1], true));
    int na = loops(s, "A_shared", al);
    SCHED_OK(s, tir_sched_bind(s, al[na - 1], "threadIdx.x"));
    (void)bc;
    check_and_free(s, ctx, NULL);
}

/* ------------------------------------------------------------ gather */

static const char *gather_text =
    "@T.prim_func\n"
    "def gather(A: T.Buffer((50, 8), \"float32\"), I: T.Buffer((37,), \"int32\"),\n"
    "           B: T.Buffer((37, 8), \"float32\")):\n"
    "    for i, j in T.grid(37, 8):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(A[0:50, vj], I[vi])\n"
    "            T.writes(B[vi, vj])\n"
    "            B[vi, vj] = A[T.floormod(I[vi] * 7, 50), vj] + T.float32(1)\n";

static void test_gather(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, gather_text));
    tir_block_rv b = sched_block(s, "B");
    tir_loop_rv l[16], ip[2], il[16];
    loops(s, "B", l);
    split2(s, l[0], 4, ip);
    SCHED_OK(s, tir_sched_bind(s, ip[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, ip[1], "threadIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, l[1], "threadIdx.x"));
    cache_read_at(s, b, 1, "shared", ip[0]);
    int ni = loops(s, "I_shared", il);
    tir_loop_rv fp[2];
    SCHED_OK(s, tir_sched_split(s, il[ni - 1], 2, (const int64_t[]){4, 8}, fp));
    SCHED_OK(s, tir_sched_bind(s, fp[0], "threadIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
    write_via_local(s, b, l[1]);
    check_and_free(s, ctx, NULL);
}

/* ----------------------------------- float16 in, float32 sum, float16 out */

static const char *half_sum_text =
    "@T.prim_func\n"
    "def hsum(A: T.Buffer((13, 40), \"float16\"), O: T.Buffer((13,), \"float16\")):\n"
    "    with T.block(\"root\"):\n"
    "        S = T.alloc_buffer((13,), \"float32\")\n"
    "        for i, k in T.grid(13, 40):\n"
    "            with T.block(\"S\"):\n"
    "                vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "                T.reads(A[vi, vk])\n"
    "                T.writes(S[vi])\n"
    "                with T.init():\n"
    "                    S[vi] = T.float32(0)\n"
    "                S[vi] = S[vi] + T.Cast(\"float32\", A[vi, vk]) * T.Cast(\"float32\", A[vi, vk])\n"
    "        for i in T.serial(13):\n"
    "            with T.block(\"O\"):\n"
    "                vi = T.axis.spatial(13, i)\n"
    "                T.reads(S[vi])\n"
    "                T.writes(O[vi])\n"
    "                O[vi] = T.Cast(\"float16\", T.sqrt(S[vi]))\n";

static void test_half_sum(void **state) {
    (void)state;
    for (int variant = 0; variant < 2; variant++) {
        tir_ctx *ctx = tir_ctx_create();
        tir_schedule *s = sched_new(ctx, us_parse(ctx, half_sum_text));
        tir_block_rv bs = sched_block(s, "S"), bo = sched_block(s, "O"), bi;
        tir_loop_rv l[16], ip[2], kp[2];
        if (variant == 0) {
            loops(s, "O", l);
            split_bind(s, l[0], 4, ip);
            place_at(s, bs, "local", ip[1]);
            loops(s, "S", l);
            split2(s, l[2], 8, kp);
            SCHED_OK(s, tir_sched_unroll(s, kp[1]));
            SCHED_OK(s, tir_sched_decompose_reduction(s, bs, kp[0], &bi));
            check_sim(s, NULL);
        } else {
            loops(s, "S", l);
            rfactor_threads(s, "S", l[0], l[1], 8, 0, 4, ip);
            SCHED_OK(s, tir_sched_reverse_compute_at(s, bo, ip[1], false));
            check_sim(s, &(uo_opts){DATA_FLOAT, 1e-3, 13, 0});
        }
        free_all(s, ctx);
    }
}

/* ------------------------------------------------ a scan (carried values) */

static const char *scan_text =
    "@T.prim_func\n"
    "def scan(A: T.Buffer((6, 10), \"float32\"), B: T.Buffer((6, 10), \"float32\")):\n"
    "    for i in T.serial(6):\n"
    "        with T.block(\"B0\"):\n"
    "            vi = T.axis.spatial(6, i)\n"
    "            T.reads(A[vi, 0])\n"
    "            T.writes(B[vi, 0])\n"
    "            B[vi, 0] = A[vi, 0]\n"
    "    for i, j in T.grid(6, 9):\n"
    "        with T.block(\"B\"):\n"
    "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "            T.reads(B[vi, vj], A[vi, vj + 1])\n"
    "            T.writes(B[vi, vj + 1])\n"
    "            B[vi, vj + 1] = B[vi, vj] + A[vi, vj + 1]\n";

/* A running sum along rows: block B reads what an earlier instance wrote.
 * Primitives that run its instances in another order or keep its values
 * elsewhere must refuse or keep the meaning. */
static void test_scan(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, scan_text));
    tir_block_rv b = sched_block(s, "B"), out;
    tir_loop_rv l[16], jp[2];
    loops(s, "B", l);
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "bind",
                      tir_sched_bind(s, l[1], "threadIdx.x"));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "vectorize", tir_sched_vectorize(s, l[1]));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_BLOCK_NOT_COMPLETE, "parallel", tir_sched_parallel(s, l[0]));
    /* legal: split, unroll, the rows' order */
    split2(s, l[1], 4, jp);
    SCHED_OK(s, tir_sched_unroll(s, jp[1]));
    sched_check_all(s);
    /* a cache of B's writes: B0 writes B too */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_MULTIPLE_WRITERS, "cache_write",
                      tir_sched_cache_write(s, b, 0, "local", 0, NULL, &out));
    /* a cache of B's reads: B writes it */
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_CONSUMER, "cache_read",
                      tir_sched_cache_read(s, b, 0, "shared", 0, NULL, &out));
    tir_sched_destroy(s);
    /* the scan alone, in place in B (B[:, 0] given): its write-back would
     * copy column 0, never written; its read cache would miss the values
     * the scan writes */
    static const char *inplace =
        "@T.prim_func\n"
        "def scan(A: T.Buffer((6, 10), \"float32\"), B: T.Buffer((6, 10), \"float32\")):\n"
        "    for i, j in T.grid(6, 9):\n"
        "        with T.block(\"B\"):\n"
        "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
        "            T.reads(B[vi, vj], A[vi, vj + 1])\n"
        "            T.writes(B[vi, vj + 1])\n"
        "            B[vi, vj + 1] = B[vi, vj] + A[vi, vj + 1]\n";
    s = sched_new(ctx, us_parse(ctx, inplace));
    b = sched_block(s, "B");
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_REGION_NOT_COVERED, "cache_write",
                      tir_sched_cache_write(s, b, 0, "local", 0, NULL, &out));
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_NOT_CONSUMER, "cache_read",
                      tir_sched_cache_read(s, b, 0, "local", 0, NULL, &out));
    free_all(s, ctx);
}

/* ------------------------------- a vectorized spatial loop inside a reduction */

static void colred_vec(int m, int n, int64_t v) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, colred_text(m, n, "float32")));
    tir_block_rv b = sched_block(s, "B"), bi;
    tir_loop_rv l[16], jp[3];
    loops(s, "B", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 3, (const int64_t[]){TIR_SPLIT_INFER, 4, v}, jp));
    SCHED_OK(s, tir_sched_reorder(s, 2, (const tir_loop_rv[]){l[1], jp[2]}));
    SCHED_OK(s, tir_sched_bind(s, jp[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, jp[1], "threadIdx.x"));
    write_via_local(s, b, jp[1]);
    SCHED_OK(s, tir_sched_decompose_reduction(s, b, l[1], &bi));
    SCHED_OK(s, tir_sched_vectorize(s, jp[2]));
    tir_loop_rv il[16];
    int ni = loops(s, "B_init", il);
    SCHED_OK(s, tir_sched_vectorize(s, il[ni - 1]));
    int nb = loops(s, "B_local", il);
    SCHED_OK(s, tir_sched_vectorize(s, il[nb - 1]));
    check_and_free(s, ctx, NULL);
}

static void test_vector_in_reduction(void **state) {
    (void)state;
    colred_vec(9, 64, 4);
    colred_vec(9, 66, 4);
    colred_vec(1, 7, 2);
}

/* -------------------- a halo producer in shared memory under a thread loop */

static void test_halo_shared_per_thread(void **state) {
    (void)state;
    const char *scopes[2] = {"shared", "global"};
    for (int sc = 0; sc < 2; sc++) {
        tir_ctx *ctx = tir_ctx_create();
        tir_schedule *s = sched_new(ctx, us_parse(ctx, chain3_text(33, "float32")));
        tir_block_rv bb = sched_block(s, "B");
        tir_loop_rv l[16], ip[2];
        loops(s, "C", l);
        split_bind(s, l[0], 8, ip);
        if (sc == 0) SCHED_OK(s, tir_sched_set_scope(s, bb, 0, scopes[sc]));
        /* accepted, but neighbouring threads then store the same B
         * elements: a race, which lowering refuses */
        SCHED_OK(s, tir_sched_compute_at(s, bb, ip[1], false));
        refusal_and_free(s, ctx, &(uo_opts){DATA_SMALL_INT, 0, 3, 0}, "race_check");
    }
}

/* ------------------------------------------- padded conv1d, pad computed */

static const char *conv1d_text(int n, int k) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "@T.prim_func\n"
             "def conv1d(A: T.Buffer((%d,), \"float32\"), W: T.Buffer((%d,), \"float32\"),\n"
             "           C: T.Buffer((%d,), \"float32\")):\n"
             "    with T.block(\"root\"):\n"
             "        P = T.alloc_buffer((%d,), \"float32\")\n"
             "        for i in T.serial(%d):\n"
             "            with T.block(\"P\"):\n"
             "                vi = T.axis.spatial(%d, i)\n"
             "                T.reads(A[0:%d])\n"
             "                T.writes(P[vi])\n"
             "                P[vi] = T.Select(%d <= vi and vi < %d, A[T.max(T.min(vi - %d, %d), 0)], T.float32(0))\n"
             "        for i, r in T.grid(%d, %d):\n"
             "            with T.block(\"C\"):\n"
             "                vi, vr = T.axis.remap(\"SR\", [i, r])\n"
             "                T.reads(P[vi + vr], W[vr])\n"
             "                T.writes(C[vi])\n"
             "                with T.init():\n"
             "                    C[vi] = T.float32(0)\n"
             "                C[vi] = C[vi] + P[vi + vr] * W[vr]\n",
             n, k, n, n + k - 1, n + k - 1, n + k - 1, n, k / 2, n + k / 2, k / 2, n - 1, n, k);
    return buf;
}

/* variant 0: P inlined (a select in C); 1: P in shared at C's block loop,
 * spread over the threads; 2: P in registers at C's thread loop (a
 * neighbourhood per thread: local_check refuses, as for the stencils) */
static void conv1d_sched(int n, int k, int variant) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, conv1d_text(n, k)));
    tir_block_rv bp = sched_block(s, "P"), bc = sched_block(s, "C"), bi;
    tir_loop_rv l[16], ip[2], pl[16], fp[2];
    loops(s, "C", l);
    split_bind(s, l[0], 8, ip);
    write_via_local(s, bc, ip[1]);
    SCHED_OK(s, tir_sched_decompose_reduction(s, bc, l[1], &bi));
    if (variant == 0) {
        SCHED_OK(s, tir_sched_compute_inline(s, bp));
    } else if (variant == 1) {
        place_at(s, bp, "shared", ip[0]);
        int np = loops(s, "P", pl);
        split2(s, pl[np - 1], 8, fp);
        SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
    } else {
        place_at(s, bp, "local", ip[1]);
        /* accepted where each thread needs one element (k = 1) */
        if (refused_with(s, NULL, "local_check: buffer 'P' is local"))
            assert_true(k > 1);
        else
            assert_true(k == 1);
        free_all(s, ctx);
        return;
    }
    check_and_free(s, ctx, NULL);
}

static void test_conv1d_pad(void **state) {
    (void)state;
    for (int v = 0; v < 3; v++) {
        conv1d_sched(30, 3, v);
        conv1d_sched(7, 5, v);
        conv1d_sched(64, 1, v);
    }
}

/* ------------------------------------------------------- argmax, max pool */

static const char *argmax_text =
    "@T.prim_func\n"
    "def argmax(A: T.Buffer((11, 37), \"float32\"), V: T.Buffer((11,), \"float32\"),\n"
    "           I: T.Buffer((11,), \"int32\")):\n"
    "    for i, k in T.grid(11, 37):\n"
    "        with T.block(\"R\"):\n"
    "            vi, vk = T.axis.remap(\"SR\", [i, k])\n"
    "            T.reads(A[vi, vk], V[vi], I[vi])\n"
    "            T.writes(V[vi], I[vi])\n"
    "            with T.init():\n"
    "                V[vi] = T.float32(\"-inf\")\n"
    "                I[vi] = -1\n"
    "            I[vi] = T.Select(A[vi, vk] > V[vi], vk, I[vi])\n"
    "            V[vi] = T.max(V[vi], A[vi, vk])\n";

static void test_argmax(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, argmax_text));
    tir_block_rv r = sched_block(s, "R"), vl, il, ri;
    tir_loop_rv l[16], ip[2];
    loops(s, "R", l);
    split_bind(s, l[0], 4, ip);
    SCHED_OK(s, tir_sched_cache_write(s, r, 0, "local", 0, NULL, &vl));
    SCHED_OK(s, tir_sched_cache_write(s, r, 1, "local", 0, NULL, &il));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, vl, ip[1], false));
    SCHED_OK(s, tir_sched_reverse_compute_at(s, il, ip[1], false));
    SCHED_OK(s, tir_sched_decompose_reduction(s, r, l[1], &ri));
    /* rfactor: the nest holds the caches too */
    tir_loop_rv kp[2];
    split2(s, l[1], 4, kp);
    tir_block_rv rf;
    SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_RFACTOR_NEST, "rfactor", tir_sched_rfactor(s, kp[1], 0, &rf));
    check_and_free(s, ctx, NULL);
}

static const char *pool_text =
    "@T.prim_func\n"
    "def pool(A: T.Buffer((2, 15, 17), \"float32\"), B: T.Buffer((2, 7, 8), \"float32\")):\n"
    "    for c, h, w, rh, rw in T.grid(2, 7, 8, 3, 3):\n"
    "        with T.block(\"B\"):\n"
    "            vc, vh, vw, vrh, vrw = T.axis.remap(\"SSSRR\", [c, h, w, rh, rw])\n"
    "            T.reads(A[vc, vh * 2 + vrh, vw * 2 + vrw])\n"
    "            T.writes(B[vc, vh, vw])\n"
    "            with T.init():\n"
    "                B[vc, vh, vw] = T.float32(\"-inf\")\n"
    "            B[vc, vh, vw] = T.max(B[vc, vh, vw], A[vc, vh * 2 + vrh, vw * 2 + vrw])\n";

/* 3x3 max pool, stride 2: channels over blocks, (h, w) over threads, the
 * strided window through shared memory */
static void test_maxpool(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, pool_text));
    tir_block_rv b = sched_block(s, "B");
    tir_loop_rv l[16], al[16];
    loops(s, "B", l);
    SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, l[1], "threadIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, l[2], "threadIdx.x"));
    write_via_local(s, b, l[2]);
    cache_read_at(s, b, 0, "shared", l[0]);
    int na = loops(s, "A_shared", al);
    assert_int_equal(na, 3);
    tir_loop_rv fu, fp[3];
    SCHED_OK(s, tir_sched_fuse(s, 2, (const tir_loop_rv[]){al[1], al[2]}, &fu));
    SCHED_OK(s, tir_sched_split(s, fu, 3, (const int64_t[]){TIR_SPLIT_INFER, 7, 8}, fp));
    SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.y"));
    SCHED_OK(s, tir_sched_bind(s, fp[2], "threadIdx.x"));
    SCHED_OK(s, tir_sched_unroll(s, l[3]));
    check_and_free(s, ctx, NULL);
}

/* -------------------------------------------- batched row reductions */

static const char *bsum_text =
    "@T.prim_func\n"
    "def bsum(A: T.Buffer((3, 5, 24), \"float32\"), B: T.Buffer((3, 5), \"float32\")):\n"
    "    for b, i, k in T.grid(3, 5, 24):\n"
    "        with T.block(\"B\"):\n"
    "            vb, vi, vk = T.axis.remap(\"SSR\", [b, i, k])\n"
    "            T.reads(A[vb, vi, vk])\n"
    "            T.writes(B[vb, vi])\n"
    "            with T.init():\n"
    "                B[vb, vi] = T.float32(0)\n"
    "            B[vb, vi] = B[vb, vi] + A[vb, vi, vk]\n";

/* rfactor at each factor axis, the partials' kernel over (b, slice, i),
 * the final sum over (b, i); and a decompose_reduction at the thread loop */
static void test_batched_reduction(void **state) {
    (void)state;
    for (int axis = -3; axis <= 2; axis++) {
        tir_ctx *ctx = tir_ctx_create();
        tir_schedule *s = sched_new(ctx, us_parse(ctx, bsum_text));
        tir_block_rv b = sched_block(s, "B"), rf, bi;
        tir_loop_rv l[16], kp[2];
        loops(s, "B", l);
        split2(s, l[2], 6, kp);
        SCHED_OK(s, tir_sched_rfactor(s, kp[0], axis, &rf));
        SCHED_OK(s, tir_sched_bind(s, l[0], "blockIdx.y"));
        SCHED_OK(s, tir_sched_bind(s, l[1], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, kp[0], "threadIdx.x"));
        SCHED_OK(s, tir_sched_decompose_reduction(s, rf, kp[1], &bi));
        tir_loop_rv c[16];
        loops(s, "B", c);
        SCHED_OK(s, tir_sched_bind(s, c[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, c[1], "threadIdx.x"));
        (void)b;
        check_and_free(s, ctx, &(uo_opts){DATA_FLOAT, 1e-5, 13, 0});
    }
}

/* --------------------- a stencil in chunks: pipelined, vectorized halos */

/* i -> (block, chunk (serial), thread); the chunk's t + 2 inputs fetched
 * into shared memory at the chunk loop, split past their extent over the
 * threads with v lanes each (vectorized), the chunk loop software-
 * pipelined (the fetch one chunk ahead, optionally asynchronous). */
static void stencil_chunks(int n, int64_t chunks, int64_t t, int64_t v, bool pipe, bool async) {
    tir_ctx *ctx = tir_ctx_create();
    tir_schedule *s = sched_new(ctx, us_parse(ctx, stencil1d_text(n)));
    tir_block_rv b = sched_block(s, "B");
    tir_loop_rv l[16], ip[3], al[16], fp[3];
    loops(s, "B", l);
    SCHED_OK(s, tir_sched_split(s, l[0], 3, (const int64_t[]){TIR_SPLIT_INFER, chunks, t}, ip));
    SCHED_OK(s, tir_sched_bind(s, ip[0], "blockIdx.x"));
    SCHED_OK(s, tir_sched_bind(s, ip[2], "threadIdx.x"));
    cache_read_at(s, b, 0, "shared", ip[1]);
    int na = loops(s, "A_shared", al);
    assert_int_equal(na, 3);
    SCHED_OK(s, tir_sched_split(s, al[2], 3, (const int64_t[]){TIR_SPLIT_INFER, t, v}, fp));
    SCHED_OK(s, tir_sched_bind(s, fp[1], "threadIdx.x"));
    if (v > 1) SCHED_OK(s, tir_sched_vectorize(s, fp[2]));
    if (pipe)
        SCHED_OK(s, tir_sched_software_pipeline(s, ip[1], 2, (const int64_t[]){0, 1}, 2,
                                                (const int64_t[]){0, 1}, async ? 1 : 0,
                                                (const int64_t[]){0}));
    if (pipe && t == 1) {
        /* one thread: the fetch's index names no thread, and carried.c,
         * which cannot name A_shared[i_1 + ax0_2], takes the chunk loop as
         * reading A_shared before writing it: the pipeline is refused */
        expect_refusal(s, NULL, "sw_pipeline: loop 'i_1': the loop body reads it before");
    } else {
        check_sim(s, NULL);
    }
    free_all(s, ctx);
}

static void test_stencil_chunks(void **state) {
    (void)state;
    for (int pipe = 0; pipe < 2; pipe++)
        for (int async = 0; async <= pipe; async++) {
            stencil_chunks(256, 4, 32, 2, pipe, async);
            stencil_chunks(1000, 3, 32, 4, pipe, async);
            stencil_chunks(37, 2, 8, 1, pipe, async);
            stencil_chunks(5, 5, 1, 4, pipe, async);
        }
}

/* ----------------------------------- decompose at a loop above the threads */

static void test_decompose_placements(void **state) {
    (void)state;
    for (int at = 0; at < 3; at++) {
        tir_ctx *ctx = tir_ctx_create();
        tir_schedule *s = sched_new(ctx, us_parse(ctx, colred_text(21, 24, "float32")));
        tir_block_rv b = sched_block(s, "B"), bi, bl;
        tir_loop_rv l[16], jp[2], kp[2];
        loops(s, "B", l);
        split2(s, l[0], 8, jp);
        split2(s, l[1], 4, kp);
        SCHED_OK(s, tir_sched_bind(s, jp[0], "blockIdx.x"));
        SCHED_OK(s, tir_sched_bind(s, jp[1], "threadIdx.x"));
        if (at == 2) {
            SCHED_OK(s, tir_sched_cache_write(s, b, 0, "local", 0, NULL, &bl));
            SCHED_OK(s, tir_sched_reverse_compute_at(s, bl, jp[1], true));
        }
        /* the init above the block loop (refused), at the thread loop, at
         * the reduction's outer loop */
        tir_loop_rv where = at == 0 ? jp[0] : at == 1 ? jp[1] : kp[0];
        tir_status st = tir_sched_decompose_reduction(s, b, where, &bi);
        assert_int_equal(st, TIR_OK);
        SCHED_OK(s, tir_sched_unroll(s, kp[1]));
        check_and_free(s, ctx, NULL);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_row_reduction),
        cmocka_unit_test(test_column_reduction),
        cmocka_unit_test(test_stencil),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_bias_relu),
        cmocka_unit_test(test_batched),
        cmocka_unit_test(test_halo_producer),
        cmocka_unit_test(test_vectorize),
        cmocka_unit_test(test_symbolic),
        cmocka_unit_test(test_triangular),
        cmocka_unit_test(test_reverse_inline),
        cmocka_unit_test(test_int_dtypes),
        cmocka_unit_test(test_masked_reduction),
        cmocka_unit_test(test_mean),
        cmocka_unit_test(test_register_halo),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_transpose_layouts),
        cmocka_unit_test(test_blockize_elementwise),
        cmocka_unit_test(test_cache_one_reader),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_half_sum),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_vector_in_reduction),
        cmocka_unit_test(test_halo_shared_per_thread),
        cmocka_unit_test(test_conv1d_pad),
        cmocka_unit_test(test_argmax),
        cmocka_unit_test(test_maxpool),
        cmocka_unit_test(test_batched_reduction),
        cmocka_unit_test(test_stencil_chunks),
        cmocka_unit_test(test_decompose_placements),
    };
    /* UO_FILTER=test_name runs one test */
    if (getenv("UO_FILTER")) cmocka_set_test_filter(getenv("UO_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
