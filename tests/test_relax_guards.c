/* test_relax_guards.c: the ragged-tile pass (src/lower/relax_guards.c).
 *
 * At sizes the tiles do not divide, Step 4 (lower_kernels.h, LK_LOCAL_ACC)
 * must lower with no guard left on the accumulator's update, zero fills on
 * the shared tiles, the k guard and the guard of the store to C kept; the
 * kernel runs in the SIMT simulator (race, global-race and uninitialised-
 * read checks on) and must match the interpreter on the unscheduled
 * matmul.  Negative cases: a guard that does not mask elements past the
 * shape (a user predicate) is never dropped; a relaxable block that reads
 * a buffer its producer leaves unwritten past the shape keeps its guard
 * (and the simulator then sees no uninitialised read); a divisible shape
 * has no bounds guard at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lower_kernels.h"
#include "minitir/lower.h"
#include "minitir/schedule.h"
#include "minitir/sim.h"

#define OK(ctx, x)                                                                                 \
    do {                                                                                           \
        tir_status s_ = (x);                                                                       \
        if (s_ != TIR_OK) fail_msg("%s: %s", #x, tir_ctx_error(ctx));                              \
    } while (0)

static void fill(float *a, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
}

/* Kernel k against the interpreter on tir_def_matmul(M, N, K), bit for bit. */
static void sim_matmul(tir_ctx *ctx, const tir_prim_func *k, int64_t M, int64_t N, int64_t K) {
    float *a = malloc(sizeof(float) * (size_t)(M * K)), *b = malloc(sizeof(float) * (size_t)(K * N));
    float *out = malloc(sizeof(float) * (size_t)(M * N)), *want = malloc(sizeof(float) * (size_t)(M * N));
    fill(a, M * K, 3);
    fill(b, K * N, 4);
    tir_arg ra[3] = {{a, 0}, {b, 0}, {want, 0}}, ka[3] = {{a, 0}, {b, 0}, {out, 0}};
    tir_interp_opts io = {.uninit_params = 4};
    OK(ctx, tir_interp_run(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32), 3, ra, &io));
    tir_sim_opts so = {.uninit_params = 4, .check_uninit = true, .check_global_races = true};
    tir_sim_report rep;
    OK(ctx, tir_sim_run(ctx, k, 3, ka, &so, &rep));
    assert_int_equal(memcmp(out, want, sizeof(float) * (size_t)(M * N)), 0);
    free(a);
    free(b);
    free(out);
    free(want);
}

static const tir_prim_func *lower_to(tir_ctx *ctx, const tir_prim_func *f, const char *stop) {
    assert_non_null(f);
    tir_lower_opts o;
    tir_lower_opts_init(&o);
    o.stop_after = stop;
    const tir_prim_func *k = NULL;
    OK(ctx, tir_lower(ctx, f, &o, &k));
    return k;
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p++) n++;
    return n;
}

static void test_step4_ragged(void **state) {
    (void)state;
    static const int64_t sizes[][3] = {{37, 29, 45}, {33, 65, 31}, {20, 9, 70}};
    for (int i = 0; i < 3; i++) {
        tir_ctx *ctx = tir_ctx_create();
        int64_t M = sizes[i][0], N = sizes[i][1], K = sizes[i][2];
        const tir_prim_func *f = lk_shared(ctx, M, N, K, LK_LOCAL_ACC);
        const char *ir = tir_print(ctx, lower_to(ctx, f, "relax_guards"));
        assert_null(strstr(ir, "domain_guard")); /* no marker survives */
        assert_int_equal(count(ir, "= T.float32(0)\n"), 3); /* A, B fills; C_local init */
        assert_int_equal(count(ir, "else:"), 2);
        /* the accumulator's init and update run under the k guard only */
        assert_non_null(strstr(ir, "C_local[i_1_1, j_1_1] = C_local[i_1_1, j_1_1] +"));
        assert_null(strstr(ir, "i_1_1 < "));
        assert_null(strstr(ir, "j_1_1 < "));
        /* the store to C keeps its guard */
        assert_non_null(strstr(ir, "if i_0 * 32 + i_1_0 * 8 + ax0 < "));
        sim_matmul(ctx, lower_to(ctx, f, NULL), M, N, K);
        tir_ctx_destroy(ctx);
    }
}

/* 5x3 against 32x32 tiles: a tile more than 4x the shape is not
 * allocated whole (compact_alloc), so the shared tiles' guards cannot be
 * zero fills, and the accumulator's update, which reads them, keeps its
 * guards too (relaxed, it would read elements nobody wrote: the simulator's
 * uninitialised-read check would fire). */
static void test_small_shape_keeps_guards(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = lk_shared(ctx, 5, 3, 70, LK_LOCAL_ACC);
    const char *ir = tir_print(ctx, lower_to(ctx, f, "relax_guards"));
    assert_null(strstr(ir, "else:"));
    assert_non_null(strstr(ir, "i_1_1 < 5"));
    sim_matmul(ctx, lower_to(ctx, f, NULL), 5, 3, 70);
    tir_ctx_destroy(ctx);
}

static void test_divisible_has_no_guard(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = lk_shared(ctx, 64, 64, 64, LK_LOCAL_ACC);
    const char *ir = tir_print(ctx, lower_to(ctx, f, NULL));
    /* (the init's `if k == 0` is not a guard) */
    assert_null(strstr(ir, " < 64"));
    assert_null(strstr(ir, "else:"));
    sim_matmul(ctx, lower_to(ctx, f, NULL), 64, 64, 64);
    tir_ctx_destroy(ctx);
}

/* A user predicate (every other row) is not a domain guard: it stays on
 * the copy and on the update, and the result stays right. */
static void test_user_predicate_kept(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const char *text =
        "@T.prim_func\n"
        "def half(A: T.Buffer((32, 32), \"float32\"), D: T.Buffer((32, 32), \"float32\")):\n"
        "    T.func_attr({\"global_symbol\": \"half\", \"tir.noalias\": 1})\n"
        "    with T.block(\"root\"):\n"
        "        B = T.alloc_buffer((32, 32), \"float32\", scope=\"local\")\n"
        "        for i in T.thread_binding(0, 32, thread=\"blockIdx.x\"):\n"
        "            for j in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "                with T.block(\"B\"):\n"
        "                    vi, vj = T.axis.remap(\"SS\", [i, j])\n"
        "                    T.where(i % 2 < 1)\n"
        "                    T.reads(A[vi, vj])\n"
        "                    T.writes(B[vi, vj])\n"
        "                    B[vi, vj] = A[vi, vj] * T.float32(2)\n"
        "                with T.block(\"D\"):\n"
        "                    vi, vj = T.axis.remap(\"SS\", [i, j])\n"
        "                    T.where(i % 2 < 1)\n"
        "                    T.reads(B[vi, vj])\n"
        "                    T.writes(D[vi, vj])\n"
        "                    D[vi, vj] = B[vi, vj] + T.float32(1)\n";
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
    const char *ir = tir_print(ctx, lower_to(ctx, f, "relax_guards"));
    assert_int_equal(count(ir, "% 2 < 1"), 2);
    assert_null(strstr(ir, "else:"));
    assert_null(strstr(ir, "domain_guard"));
    tir_ctx_destroy(ctx);
}

/* Tensor tiles: a fill of tiles 0-1 (i < 2, three iterations) into a
 * 48-row fragment whose third tile another fill sets to 1.  Tile i = 2 is
 * inside the fragment's shape, so the guard is not a ragged edge: dropped,
 * it would zero the third tile.  It must stay, and the kernel must store
 * [0 x 32 rows, 1 x 16 rows] (block "lanes" only binds the 32 lanes).  (With a 32-row fragment and a domain of 2
 * the guard would be the ragged edge's; tests/test_hgemm_sim.c checks that
 * the tensor-core rule's ragged kernels lose theirs.) */
static const char tile_text[] =
    "@T.prim_func\n"
    "def tiles(C: T.Buffer((48, 8), \"float32\"), D: T.Buffer((32,), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"tiles\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        C_frag = T.alloc_buffer((48, 8), \"float32\", scope=\"frag.acc\")\n"
    "        for b in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
    "            for w in T.thread_binding(0, 1, thread=\"threadIdx.y\"):\n"
    "                for t in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "                    with T.block(\"lanes\"):\n"
    "                        vt = T.axis.spatial(32, t)\n"
    "                        T.reads()\n"
    "                        T.writes(D[vt])\n"
    "                        D[vt] = T.float32(0)\n"
    "                with T.block(\"one\"):\n"
    "                    T.reads()\n"
    "                    T.writes(C_frag[32:48, 0:8])\n"
    "                    T.frag_fill(T.address_of(C_frag[32, 0]), T.float32(1))\n"
    "                for i in T.serial(3):\n"
    "                    with T.block(\"zero\"):\n"
    "                        vi = T.axis.spatial(2, i)\n"
    "                        T.where(i < 2)\n"
    "                        T.reads()\n"
    "                        T.writes(C_frag[vi * 16:vi * 16 + 16, 0:8])\n"
    "                        T.frag_fill(T.address_of(C_frag[vi * 16, 0]), T.float32(0))\n"
    "                for i in T.serial(3):\n"
    "                    with T.block(\"store\"):\n"
    "                        vi = T.axis.spatial(3, i)\n"
    "                        T.reads(C_frag[vi * 16:vi * 16 + 16, 0:8])\n"
    "                        T.writes(C[vi * 16:vi * 16 + 16, 0:8])\n"
    "                        T.frag_store(T.address_of(C_frag[vi * 16, 0]), T.address_of(C[vi * 16, 0]))\n";

static void test_tile_inside_shape_kept(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, tile_text, strlen(tile_text), &f));
    const char *ir = tir_print(ctx, lower_to(ctx, f, "relax_guards"));
    assert_non_null(strstr(ir, "if i < 2:"));
    assert_null(strstr(ir, "domain_guard"));
    float out[48 * 8], d[32];
    for (int i = 0; i < 48 * 8; i++) out[i] = -7.0f;
    tir_arg a[2] = {{out, 0}, {d, 0}};
    tir_sim_opts so = {.check_uninit = true, .check_global_races = true};
    tir_sim_report rep;
    OK(ctx, tir_sim_run(ctx, lower_to(ctx, f, NULL), 2, a, &so, &rep));
    for (int i = 0; i < 48 * 8; i++) assert_true(out[i] == (i < 32 * 8 ? 0.0f : 1.0f));
    tir_ctx_destroy(ctx);
}

/* Hand-written tile kernels a review of the tensor-tile relaxation found
 * unsound (tests/data/relax/): a fill over fewer tiles than the mma that
 * reads them under the same bound (the extra mma read an accumulator tile
 * nobody wrote), a frag_load straight from global memory at a decreasing
 * row (the extra tiles read before the buffer), and a relaxed copy of a
 * shared buffer that only a clipping frag_store writes (invisible to the
 * pass, so the copy read past what it wrote).  Each must now keep the
 * guards that matter: lowered, it runs in the simulator with its
 * uninitialised-read and global-race checks and equals the interpreter. */
static void sim_file(const char *name) {
    const char *dir = getenv("MINITIR_TEST_DATA");
    if (!dir) fail_msg("MINITIR_TEST_DATA is not set (run the test through meson test)");
    char path[4096];
    snprintf(path, sizeof path, "%s/relax/%s", dir, name);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = '\0';
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = NULL;
    OK(ctx, tir_parse_func(ctx, text, n, &f));
    const tir_prim_func *k = lower_to(ctx, f, NULL);
    assert_int_equal(lk_interp_sim_equal(ctx, f, k), 0);
    tir_ctx_destroy(ctx);
}

/* A tile call whose operand is not an address (hand-written IR): the
 * pass leaves its guard alone, and lowering refuses it cleanly. */
static void test_tile_malformed_operand(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    char *text = strdup(tile_text);
    const char *from = "T.frag_fill(T.address_of(C_frag[vi * 16, 0]), T.float32(0))";
    char *at = strstr(text, from);
    assert_non_null(at);
    const char *to = "T.frag_fill(C_frag[vi * 16, 0], T.float32(0))";
    memmove(at + strlen(to), at + strlen(from), strlen(at + strlen(from)) + 1);
    memcpy(at, to, strlen(to));
    const tir_prim_func *f = NULL, *k = NULL;
    OK(ctx, tir_parse_func(ctx, text, strlen(text), &f));
    tir_lower_opts o;
    tir_lower_opts_init(&o);
    assert_int_not_equal(tir_lower(ctx, f, &o, &k), TIR_OK);
    assert_true(strlen(tir_ctx_error(ctx)) > 0);
    free(text);
    tir_ctx_destroy(ctx);
}

static void test_tile_review_cases(void **state) {
    (void)state;
    sim_file("tile_short_writer.tir");
    sim_file("tile_global_source.tir");
    sim_file("frag_store_reader.tir");
}

/* T.domain_guard is lowering's own mark (lower_blocks): written by a user,
 * relax_guards dropped it (kind 0, C[2] and C[3] stored too) or zero-filled
 * past it (kind 1), silently wrong before the sixteenth session.  Now
 * gpu_check refuses it, naming it; the same condition written plainly
 * lowers and computes what the interpreter does. */
static void test_user_domain_guard_refused(void **state) {
    (void)state;
    static const char fmt[] =
        "@T.prim_func\n"
        "def dg(A: T.Buffer((8,), \"float32\"), C: T.Buffer((8,), \"float32\")):\n"
        "    for bx in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
        "        for tx in T.thread_binding(0, 4, thread=\"threadIdx.x\"):\n"
        "            if %s:\n"
        "                C[tx] = A[tx] + T.float32(1)\n";
    static const char *const conds[] = {"T.domain_guard(tx < 2, 0)", "T.domain_guard(tx < 2, 1)",
                                        "tx < 2"};
    for (int i = 0; i < 3; i++) {
        tir_ctx *ctx = tir_ctx_create();
        char t[1024];
        snprintf(t, sizeof t, fmt, conds[i]);
        const tir_prim_func *f, *k = NULL;
        OK(ctx, tir_parse_func(ctx, t, strlen(t), &f));
        tir_status r = tir_lower(ctx, f, NULL, &k);
        if (i < 2) {
            assert_int_equal(r, TIR_ERR_LOWER);
            assert_null(k);
            assert_non_null(strstr(tir_ctx_error(ctx), "gpu_check: T.domain_guard is lowering's own"));
        } else {
            OK(ctx, r);
            assert_int_equal(lk_interp_sim_equal(ctx, f, k), 0);
        }
        tir_ctx_destroy(ctx);
    }
}

/* Block blk's innermost loop split [None, 1, f], the 1 bound to
 * threadIdx.x. */
static void one_thread(tir_ctx *ctx, tir_schedule *s, tir_block_rv blk, int64_t f,
                       tir_loop_rv *parts) {
    const tir_loop_rv *ls;
    int n;
    OK(ctx, tir_sched_get_loops(s, blk, &ls, &n));
    OK(ctx, tir_sched_split(s, ls[n - 1], 3, (const int64_t[]){TIR_SPLIT_INFER, 1, f}, parts));
    OK(ctx, tir_sched_bind(s, parts[1], "threadIdx.x"));
}

/* GPU-path fuzzer, seed 2220000000 case 10473 (minimised): the chain
 * B -> C -> D at 1x1, all three at B's block tile, B's j split by 3, C's
 * by 2 and D's by 1, B and C shared.  B's guard became a zero fill
 * (written over [0, 3)), and C's was relaxed because B writes past the
 * shape too, but C's extra instances read B[3], which nothing wrote (an
 * uninitialised read; a wrong C[3] that only extra instances of D would
 * read).  A scalar reader's range must now be spanned by the writers', as
 * a tile reader's was: C keeps its guard. */
static void test_scalar_reader_past_writer(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = tir_def_elementwise_chain(ctx, 1, 1, TIR_F32), *k = NULL;
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    tir_block_rv b, c, d;
    const tir_loop_rv *ls;
    int n;
    tir_loop_rv bp[3], cp[3], dp[3];
    OK(ctx, tir_sched_get_block(s, "B", &b));
    OK(ctx, tir_sched_get_block(s, "C", &c));
    OK(ctx, tir_sched_get_block(s, "D", &d));
    OK(ctx, tir_sched_get_loops(s, b, &ls, &n));
    OK(ctx, tir_sched_bind(s, ls[0], "blockIdx.x"));
    one_thread(ctx, s, b, 3, bp);
    OK(ctx, tir_sched_reverse_compute_at(s, c, bp[0], false));
    one_thread(ctx, s, c, 2, cp);
    OK(ctx, tir_sched_reverse_compute_at(s, d, bp[0], false));
    one_thread(ctx, s, d, 1, dp);
    OK(ctx, tir_sched_set_scope(s, b, 0, "shared"));
    OK(ctx, tir_sched_set_scope(s, c, 0, "shared"));
    OK(ctx, tir_lower(ctx, tir_sched_func(s), NULL, &k));
    assert_int_equal(lk_interp_sim_equal(ctx, f, k), 0);
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step4_ragged),
        cmocka_unit_test(test_small_shape_keeps_guards),
        cmocka_unit_test(test_divisible_has_no_guard),
        cmocka_unit_test(test_user_predicate_kept),
        cmocka_unit_test(test_tile_inside_shape_kept),
        cmocka_unit_test(test_tile_review_cases),
        cmocka_unit_test(test_tile_malformed_operand),
        cmocka_unit_test(test_user_domain_guard_refused),
        cmocka_unit_test(test_scalar_reader_past_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
