/* Tests of lower_fragments (src/lower/lower_fragments.c) and of what the
 * other lowering passes know about warp fragments: hand-written
 * tensorized matmuls (tests/lower_kernels.c, lk_tc) lowered, checked for
 * the register offsets of the tiles, the ldmatrix choice and its per-lane
 * fallback, B pairs as one ldmatrix.x4.trans, the clipping ifs at ragged sizes and their absence at
 * divisible ones, barriers around the shared tiles, and each user error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* cmocka needs the headers above first */
#include <cmocka.h>

#include "lower_kernels.h"
#include "minitir/lower.h"

static tir_ctx *ctx;

static int setup(void **state) {
    (void)state;
    ctx = tir_ctx_create();
    return ctx ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tir_ctx_destroy(ctx);
    return 0;
}

#define OK(x)                                                                                      \
    do {                                                                                           \
        tir_status s_ = (x);                                                                       \
        if (s_ != TIR_OK) fail_msg("%s: %s", #x, tir_ctx_error(ctx));                              \
    } while (0)

/* The text after pass `stop` (NULL: the whole pipeline). */
static const char *lowered(const tir_prim_func *f, const char *stop) {
    tir_lower_opts o;
    tir_lower_opts_init(&o);
    o.stop_after = stop;
    const tir_prim_func *k = NULL;
    OK(tir_lower(ctx, f, &o, &k));
    return tir_print(ctx, k);
}

static const tir_prim_func *tc(int64_t M, int64_t N, int64_t K, int flags) {
    const tir_prim_func *f = lk_tc(ctx, M, N, K, flags);
    if (!f) fail_msg("lk_tc: %s", tir_ctx_error(ctx));
    return f;
}

static int count(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

#define HAS(text, needle)                                                                          \
    do {                                                                                           \
        if (!strstr((text), (needle))) fail_msg("expected \"%s\" in:\n%s", (needle), (text));      \
    } while (0)
#define HASNT(text, needle)                                                                        \
    do {                                                                                           \
        if (strstr((text), (needle))) fail_msg("did not expect \"%s\" in:\n%s", (needle), (text)); \
    } while (0)

/* text with the first `from` replaced by `to` (arena). */
static const char *replace(const char *text, const char *from, const char *to) {
    const char *p = strstr(text, from);
    if (!p) fail_msg("\"%s\" not in the kernel text", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *r = tir_ctx_alloc(ctx, n);
    snprintf(r, n, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
    return r;
}

static const tir_prim_func *parse(const char *text) {
    const tir_prim_func *f = NULL;
    OK(tir_parse_func(ctx, text, strlen(text), &f));
    return f;
}

/* Fragments become local arrays of prod(shape) / 32 registers, tiles
 * tile-major: the warp's 16x16 accumulator (two 16x8 tiles of 4
 * registers) is Cf[8], tile nj at nj * 4; A's 16x16 tile is 8 registers,
 * B's 16x8 one 4; mma_sync takes their addresses. */
static void test_registers(void **state) {
    (void)state;
    const char *t = lowered(tc(32, 16, 32, 0), "lower_fragments");
    HAS(t, "Cf = T.allocate((8,), \"float32\", scope=\"local\")");
    HAS(t, "Af = T.allocate((8,), \"bfloat16\", scope=\"local\")");
    HAS(t, "Bf = T.allocate((4,), \"bfloat16\", scope=\"local\")");
    HASNT(t, "frag.");
    HASNT(t, "frag_");
    HAS(t, "Cf[nj * 4 + 3] = T.float32(0)");
    HAS(t, "T.mma_sync(T.address_of(Cf[nj_1 * 4]), T.address_of(Af[0]), "
           "T.address_of(Bf[0])");
    /* the accumulator layout: register 2 is row g + 8, column 2t */
    HAS(t, "C[wy * 16 + T.lane_id() // 4 + 8, nj_2 * 8 + "
           "T.lane_id() % 4 * 2] = Cf[nj_2 * 4 + 2]");
    /* tf32: A tiles 16x8 (4 registers), B 8x8 (2) */
    t = lowered(tc(32, 16, 32, LK_TC_TF32), "lower_fragments");
    HAS(t, "Af = T.allocate((4,), \"float32\", scope=\"local\")");
    HAS(t, "Bf = T.allocate((2,), \"float32\", scope=\"local\")");
}

/* A tile load from a shared bfloat16 tile with 16-byte rows is one
 * ldmatrix (A: x4, B: x2.trans); from global memory, or of float32, it is
 * per-lane loads. */
static void test_ldmatrix_choice(void **state) {
    (void)state;
    const char *t = lowered(tc(32, 16, 32, 0), "lower_fragments");
    assert_int_equal(count(t, "T.ldmatrix(0, 4, T.address_of(Af[0]), T.address_of(As[wy * 16 "
                              "+ T.lane_id() % 16, "
                              "T.lane_id() // 16 * 8])"),
                     1);
    assert_int_equal(count(t, "T.ldmatrix(1, 2, T.address_of(Bf[0]), "
                              "T.address_of(Bs[T.lane_id() % 16, "
                              "nj_1 * 8])"),
                     1);
    /* A from global: 8 per-lane loads, B still ldmatrix */
    t = lowered(tc(32, 16, 32, LK_TC_A_GLOBAL), "lower_fragments");
    assert_int_equal(count(t, "T.ldmatrix(0, 4"), 0);
    assert_int_equal(count(t, "T.ldmatrix(1, 2"), 1);
    for (int v = 0; v < 8; v++) {
        char r[32];
        snprintf(r, sizeof r, v ? "Af[%d] = A[" : "Af[0] = A[", v);
        assert_int_equal(count(t, r), 1);
    }
    /* float32 (tf32): A by ldmatrix.x4 of 4-float rows (columns 4 apart),
     * B per lane (no .trans of 32-bit elements) */
    t = lowered(tc(32, 16, 32, LK_TC_TF32), "lower_fragments");
    assert_int_equal(count(t, "T.ldmatrix(0, 4"), 1);
    assert_int_equal(count(t, "T.lane_id() // 16 * 4"), 1);
    assert_int_equal(count(t, "T.ldmatrix(1"), 0);
    assert_int_equal(count(t, "Bf[1] = Bs["), 1);
    assert_int_equal(count(t, "Af[1] = As["), 0);
    /* A shared tile whose first element is not 16-byte aligned (an
     * elem_offset of 1 element, or 2 floats): per-lane loads, no ldmatrix
     * (the simulator refuses a misaligned row address, the GPU faults);
     * an elem_offset of 16 bytes keeps it */
    static const struct {
        int flags;
        const char *off;
        int ldm;
    } eo[] = {{0, "1", 0}, {0, "8", 1}, {LK_TC_TF32, "1", 0}, {LK_TC_TF32, "2", 0},
              {LK_TC_TF32, "4", 1}};
    for (size_t i = 0; i < sizeof eo / sizeof eo[0]; i++) {
        const char *dt = eo[i].flags & LK_TC_TF32 ? "float32" : "bfloat16";
        char from[96], to[128];
        snprintf(from, sizeof from, "As = T.allocate((32, 32), \"%s\", scope=\"shared\")", dt);
        snprintf(to, sizeof to,
                 "As = T.allocate((32, 32), \"%s\", scope=\"shared\", elem_offset=%s)", dt,
                 eo[i].off);
        const char *k = lowered(parse(replace(lk_tc_text(ctx, 32, 16, 32, eo[i].flags), from, to)),
                                "lower_fragments");
        print_message("# %s elem_offset %s\n", dt, eo[i].off);
        assert_int_equal(count(k, "T.ldmatrix(0, 4"), eo[i].ldm);
    }
}

/* lk_tc's kernel with both B tiles of the warp loaded as one pair in
 * its first nj step (what frag_load_b_16x16 emits), the second load
 * under `guard` (NULL: none). */
static const tir_prim_func *tc_pair(int64_t N, const char *guard) {
    char from[256], to[1024];
    snprintf(from, sizeof from,
             "T.frag_load(T.address_of(Bf[ko * 16, bx * 16 + nj * 8]), "
             "T.address_of(Bs[ko * 16, bx * 16 + nj * 8]))\n");
    const char *ind = "                        "; /* 6 levels */
    int n = snprintf(to, sizeof to,
                     "if nj == 0:\n%s    T.frag_load(T.address_of(Bf[ko * 16, bx * 16]), "
                     "T.address_of(Bs[ko * 16, bx * 16]))\n",
                     ind);
    const char *second = "T.frag_load(T.address_of(Bf[ko * 16, bx * 16 + 8]), "
                         "T.address_of(Bs[ko * 16, bx * 16 + 8]))";
    if (guard && !strcmp(guard, "@swap")) { /* the right tile first */
        n = snprintf(to, sizeof to, "if nj == 0:\n%s    %s\n", ind, second);
        snprintf(to + n, sizeof to - (size_t)n,
                 "%s    T.frag_load(T.address_of(Bf[ko * 16, bx * 16]), "
                 "T.address_of(Bs[ko * 16, bx * 16]))\n",
                 ind);
    } else if (guard)
        snprintf(to + n, sizeof to - (size_t)n, "%s    if %s:\n%s        %s\n", ind, guard, ind,
                 second);
    else
        snprintf(to + n, sizeof to - (size_t)n, "%s    %s\n", ind, second);
    return parse(replace(lk_tc_text(ctx, 32, N, 32, 0), from, to));
}

/* Two consecutive frag_loads of B tiles side by side are one
 * ldmatrix.x4.trans with A's lane addresses into the first tile's
 * registers (the second's follow); behind a guard that cannot be decided,
 * x4.trans where it holds and the first tile's x2.trans where not; a
 * guard known false leaves the first load alone; the right tile first is
 * no pair.  (guard "@swap": no guard, the two loads swapped.) */
static void test_b_pairs(void **state) {
    (void)state;
    const char *t = lowered(tc_pair(32, NULL), "lower_fragments");
    assert_int_equal(count(t, "T.ldmatrix(1, 4, T.address_of(Bf[0]), T.address_of(Bs[T.lane_id() "
                              "% 16, T.lane_id() // 16 * 8])"),
                     1);
    assert_int_equal(count(t, "T.ldmatrix(1, 2"), 0);
    t = lowered(tc_pair(24, "bx * 16 + 8 < 24"), "lower_fragments");
    assert_int_equal(count(t, "T.ldmatrix(1, 4, T.address_of(Bf[0])"), 1);
    assert_int_equal(count(t, "T.ldmatrix(1, 2, T.address_of(Bf[0])"), 1);
    HAS(t, "if bx * 16 + 8 < 24:");
    t = lowered(tc_pair(32, "bx * 16 + 8 < 0"), "lower_fragments");
    assert_int_equal(count(t, "T.ldmatrix(1, 4"), 0);
    assert_int_equal(count(t, "T.ldmatrix(1, 2, T.address_of(Bf[0])"), 1);
    /* the right tile first: not a pair, two x2.trans */
    t = lowered(tc_pair(32, "@swap"), "lower_fragments");
    assert_int_equal(count(t, "T.ldmatrix(1, 4"), 0);
    assert_int_equal(count(t, "T.ldmatrix(1, 2"), 2);
}

/* The clipping ifs: none at a divisible size; at a ragged one the stores
 * to C are guarded per register, the per-lane loads from global A zero
 * fill past M. */
static void test_clipping(void **state) {
    (void)state;
    const char *t = lowered(tc(32, 16, 32, LK_TC_A_GLOBAL), "lower_fragments");
    /* no clipping: the tiles fit (the copies' guards go in simplify) */
    HASNT(t, "Af[0] = T.bfloat16(0)");
    assert_int_equal(count(t, "T.lane_id() // 4 <"), 0);
    t = lowered(tc(37, 29, 32, LK_TC_A_GLOBAL), "lower_fragments");
    /* 4 stores per tile to C, each under its own if */
    assert_int_equal(count(t, "] = Cf[nj_2 * 4"), 4);
    assert_int_equal(count(t, "< 37 and bx * 8 + nj_2 * 4 + T.lane_id() % 4 < 15:"),
                     1);
    /* A's 8 registers: zero past row 37 (rows g and g + 8) */
    assert_int_equal(count(t, "Af[1] = T.bfloat16(0)"), 1);
    assert_int_equal(count(t, "Af[7] = T.bfloat16(0)"), 1);
    HAS(t, "if by * 32 + wy * 16 + T.lane_id() // 4 < 37:");
    HAS(t, "if by * 32 + wy * 16 + T.lane_id() // 4 < 29:");
}

/* A lowering error whose message contains `want`. */
static void lower_fails(const tir_prim_func *f, const char *want) {
    const tir_prim_func *k = NULL;
    tir_status s = tir_lower(ctx, f, NULL, &k);
    if (s != TIR_ERR_LOWER || !strstr(tir_ctx_error(ctx), want))
        fail_msg("expected TIR_ERR_LOWER with \"%s\", got %s: %s", want, tir_status_name(s),
                 tir_ctx_error(ctx));
    assert_null(k);
}

static void test_errors(void **state) {
    (void)state;
    const char *text = lk_tc_text(ctx, 32, 16, 32, 0);
    /* blockDim.x must be 32 */
    lower_fails(parse(replace(text, "T.thread_binding(0, 32, thread=\"threadIdx.x\")",
                              "T.thread_binding(0, 16, thread=\"threadIdx.x\")")),
                "blockDim.x must be 32 (threadIdx.x is the lane in the warp; warps are "
                "threadIdx.y/z), but threadIdx.x has extent 16");
    /* a tile operation under a threadIdx.x loop */
    lower_fails(parse(replace(text,
                              "for nj in T.serial(2):\n"
                              "                    T.frag_fill",
                              "for nj in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
                              "                    T.frag_fill")),
                "lower_fragments: frag_fill runs under threadIdx.x loop nj");
    /* a fragment read by a plain load */
    lower_fails(parse(replace(text, "T.float32(0))",
                              "T.float32(0))\n                    C[0, 0] = Cf[0, 0]")),
                "fragment Cf (scope frag.acc) is read outside the tensor intrinsics");
    /* frag_store of an A fragment */
    lower_fails(parse(replace(text, "T.frag_store(T.address_of(Cf[", "T.frag_store(T.address_of(Af[")),
                "argument 0 of frag_store is in Af (scope frag.a); it must be a fragment of "
                "scope frag.acc");
    /* frag_load into a fragment from a fragment */
    lower_fails(parse(replace(text, "T.address_of(As[by * 32", "T.address_of(Cf[by * 32")),
                "argument 1 of frag_load is in Cf (scope frag.acc); it must be a buffer that is "
                "not a fragment");
    /* a tile origin that is not a multiple of the tile */
    lower_fails(parse(replace(text, "T.frag_fill(T.address_of(Cf[by * 32 + wy * 16, bx * 16 + nj * 8])",
                              "T.frag_fill(T.address_of(Cf[by * 32 + wy * 16, bx * 16 + nj * 4])")),
                "is not provably the origin of a tile of fragment Cf (its column index must be "
                "a multiple of 8");
    /* a fragment type the scope does not have */
    lower_fails(parse(replace(text, "\"float32\", scope=\"frag.acc\"",
                              "\"bfloat16\", scope=\"frag.acc\"")),
                "lower_fragments: fragment buffer Cf (scope frag.acc, bfloat16");
}

/* thread_sync puts barriers between the copies into the shared tiles and
 * the ldmatrix reading them, and after the k step (the next copies
 * overwrite what ldmatrix read); race_check refuses the kernel with either
 * removed (ldmatrix reads shared memory, by lane). */
static void test_barriers(void **state) {
    (void)state;
    for (int ragged = 0; ragged < 2; ragged++) {
        const char *t = lowered(tc(ragged ? 37 : 32, ragged ? 29 : 16, 32, 0), NULL);
        assert_int_equal(count(t, "T.syncthreads()"), 2);
        const char *first = replace(t, "T.syncthreads()\n", "T.evaluate(0)\n");
        const char *p = strstr(t, "T.syncthreads()");
        const char *second = replace(p + 1, "T.syncthreads()\n", "T.evaluate(0)\n");
        second = replace(t, p + 1, second); /* t with the second barrier removed */
        for (int k = 0; k < 2; k++) {
            const tir_prim_func *broken = parse(k ? second : first);
            tir_status s = tir_lower_check_races(ctx, broken);
            if (s != TIR_ERR_LOWER || !strstr(tir_ctx_error(ctx), "race_check: shared buffer"))
                fail_msg("barrier %d removed (ragged %d): got %s: %s", k, ragged,
                         tir_status_name(s), tir_ctx_error(ctx));
        }
        OK(tir_lower_check_races(ctx, parse(t)));
    }
}

/* TF32 with A and B swapped (lower_fragments: the instruction takes 16
 * columns of B as its A operand and A's tile as its B operand, B's columns
 * 2g and 2g + 1 in a register pair).  A hand-written 16x16x8 TF32 kernel
 * whose B, fill, mma and store loops run over two 8-column tiles swaps
 * (the mma's second operand is then the B fragment); planted variants
 * that treat the two tiles of a unit differently must not: a fill value
 * that depends on the tile, an mma whose A tile depends on it, the two
 * mma written out without a loop, three tiles, the fill's tiles in
 * reverse, the mma in a loop inside the tile loop, a store guard reading
 * memory (helper review).  Every variant lowered and
 * simulated against the interpreter (lk_interp_sim_equal: exact); with the
 * unit check skipped the first two compute wrong columns. */
static const char *sw_kernel =
    "@T.prim_func\n"
    "def sw(A: T.Buffer((32, 8), \"float32\"), B: T.Buffer((8, 24), \"float32\"), "
    "C: T.Buffer((16, 24), \"float32\"), D: T.Buffer((32,), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"sw\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        Cf = T.alloc_buffer((16, 24), \"float32\", scope=\"frag.acc\")\n"
    "        Af = T.alloc_buffer((32, 8), \"float32\", scope=\"frag.a\")\n"
    "        Bf = T.alloc_buffer((8, 24), \"float32\", scope=\"frag.b\")\n"
    "        for b in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
    "            for w in T.thread_binding(0, 1, thread=\"threadIdx.y\"):\n"
    "                for t in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
    "                    with T.block(\"lanes\"):\n"
    "                        vt = T.axis.spatial(32, t)\n"
    "                        T.reads()\n"
    "                        T.writes(D[vt])\n"
    "                        D[vt] = T.float32(0)\n"
    "                for i in T.serial(2):\n"
    "                    with T.block(\"la\"):\n"
    "                        vi = T.axis.spatial(2, i)\n"
    "                        T.reads(A[vi * 16:vi * 16 + 16, 0:8])\n"
    "                        T.writes(Af[vi * 16:vi * 16 + 16, 0:8])\n"
    "                        T.frag_load(T.address_of(Af[vi * 16, 0]), T.address_of(A[vi * 16, 0]))\n"
    "                for j in T.serial(NT):\n"
    "                    with T.block(\"lb\"):\n"
    "                        vj = T.axis.spatial(3, j)\n"
    "                        T.reads(B[0:8, vj * 8:vj * 8 + 8])\n"
    "                        T.writes(Bf[0:8, vj * 8:vj * 8 + 8])\n"
    "                        T.frag_load(T.address_of(Bf[0, vj * 8]), T.address_of(B[0, vj * 8]))\n"
    "                for j in T.serial(NT):\n"
    "                    with T.block(\"z\"):\n"
    "                        vj = T.axis.spatial(3, j)\n"
    "                        T.reads()\n"
    "                        T.writes(Cf[0:16, vj * 8:vj * 8 + 8])\n"
    "                        T.frag_fill(T.address_of(Cf[0, vj * 8]), FILL)\n"
    "MMA"
    "                for j in T.serial(NT):\n"
    "                    with T.block(\"st\"):\n"
    "                        vj = T.axis.spatial(3, j)\n"
    "                        T.reads(Cf[0:16, vj * 8:vj * 8 + 8])\n"
    "                        T.writes(C[0:16, vj * 8:vj * 8 + 8])\n"
    "                        T.frag_store(T.address_of(Cf[0, vj * 8]), T.address_of(C[0, vj * 8]))\n";

static const char *sw_mma_loop =
    "                for j in T.serial(NT):\n"
    "                    with T.block(\"m\"):\n"
    "                        vj = T.axis.spatial(3, j)\n"
    "                        T.reads(Cf[0:16, vj * 8:vj * 8 + 8], Af[AROW:AROW + 16, 0:8], "
    "Bf[0:8, vj * 8:vj * 8 + 8])\n"
    "                        T.writes(Cf[0:16, vj * 8:vj * 8 + 8])\n"
    "                        T.mma_sync(T.address_of(Cf[0, vj * 8]), T.address_of(Af[AROW, 0]), "
    "T.address_of(Bf[0, vj * 8]))\n";

static const char *sw_mma_nested =
    "                for j in T.serial(NT):\n"
    "                    for i2 in T.serial(1):\n"
    "                        with T.block(\"m\"):\n"
    "                            vj = T.axis.spatial(3, j)\n"
    "                            T.reads(Cf[0:16, vj * 8:vj * 8 + 8], Af[AROW:AROW + 16, 0:8], "
    "Bf[0:8, vj * 8:vj * 8 + 8])\n"
    "                            T.writes(Cf[0:16, vj * 8:vj * 8 + 8])\n"
    "                            T.mma_sync(T.address_of(Cf[0, vj * 8]), T.address_of(Af[AROW, 0]), "
    "T.address_of(Bf[0, vj * 8]))\n";

static const char *sw_mma_two =
    "                with T.block(\"m0\"):\n"
    "                    T.reads(Cf[0:16, 0:8], Af[0:16, 0:8], Bf[0:8, 0:8])\n"
    "                    T.writes(Cf[0:16, 0:8])\n"
    "                    T.mma_sync(T.address_of(Cf[0, 0]), T.address_of(Af[0, 0]), "
    "T.address_of(Bf[0, 0]))\n"
    "                with T.block(\"m1\"):\n"
    "                    T.reads(Cf[0:16, 8:16], Af[0:16, 0:8], Bf[0:8, 8:16])\n"
    "                    T.writes(Cf[0:16, 8:16])\n"
    "                    T.mma_sync(T.address_of(Cf[0, 8]), T.address_of(Af[0, 0]), "
    "T.address_of(Bf[0, 8]))\n";

/* text with every `from` replaced by `to`. */
static const char *replace_all(const char *text, const char *from, const char *to) {
    while (strstr(text, from)) text = replace(text, from, to);
    return text;
}

/* Does the lowered kernel's first mma_sync take the B fragment second? */
static bool swapped(const char *ir) {
    const char *m = strstr(ir, "T.mma_sync(");
    if (!m) fail_msg("no mma_sync in:\n%s", ir);
    const char *second = strstr(strstr(m, "T.address_of(") + 1, "T.address_of(");
    return second && strncmp(second, "T.address_of(Bf[", 16) == 0;
}

/* Lowers and simulates kernel text against the interpreter; returns
 * whether the swap applied. */
static bool sw_case(const char *text) {
    const tir_prim_func *f = parse(text);
    const tir_prim_func *k = NULL;
    OK(tir_lower(ctx, f, NULL, &k));
    const char *ir = tir_print(ctx, k);
    assert_int_equal(lk_interp_sim_equal(ctx, f, k), 0);
    return swapped(ir);
}

static const char *sw_text(const char *nt, const char *fill, const char *mma, const char *arow) {
    const char *t = replace(sw_kernel, "MMA", mma);
    t = replace_all(t, "NT", nt);
    t = replace(t, "FILL", fill);
    return replace_all(t, "AROW", arow);
}

static void test_tf32_swap(void **state) {
    (void)state;
    const char *zero = "T.float32(0)";
    assert_true(sw_case(sw_text("2", zero, sw_mma_loop, "16")));
    /* a fill value that differs between the unit's tiles */
    assert_false(sw_case(sw_text("2", "T.Cast(\"float32\", vj)", sw_mma_loop, "16")));
    /* an mma whose A tile differs between them */
    assert_false(sw_case(sw_text("2", zero, sw_mma_loop, "vj * 16")));
    /* the two mma as two statements */
    assert_false(sw_case(sw_text("2", zero, sw_mma_two, "0")));
    /* three tiles: the last unit would be half */
    assert_false(sw_case(sw_text("3", zero, sw_mma_loop, "0")));
    /* the fill's tiles in reverse (column (1 - j) * 8) */
    const char *rev = replace(sw_text("2", zero, sw_mma_loop, "16"),
                              "T.writes(Cf[0:16, vj * 8:vj * 8 + 8])\n"
                              "                        T.frag_fill(T.address_of(Cf[0, vj * 8])",
                              "T.writes(Cf[0:16, (1 - vj) * 8:(1 - vj) * 8 + 8])\n"
                              "                        T.frag_fill(T.address_of(Cf[0, (1 - vj) * 8])");
    assert_false(sw_case(rev));
    /* the mma in a loop inside the tile loop */
    assert_false(sw_case(sw_text("2", zero, sw_mma_nested, "16")));
    /* a store guard that reads memory (the store could change it between
     * a unit's tiles) */
    const char *g = replace(sw_text("2", zero, sw_mma_loop, "16"),
                            "                for j in T.serial(2):\n"
                            "                    with T.block(\"st\"):",
                            "                for j in T.serial(2):\n"
                            "                    with T.block(\"st\"):\n"
                            "                        T.where(A[0, 0] < T.float32(100))");
    assert_false(sw_case(g));
    /* the option */
    tir_lower_opts o;
    tir_lower_opts_init(&o);
    o.no_tf32_swap = true;
    const tir_prim_func *k = NULL;
    OK(tir_lower(ctx, parse(sw_text("2", zero, sw_mma_loop, "16")), &o, &k));
    assert_false(swapped(tir_print(ctx, k)));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registers),
        cmocka_unit_test(test_ldmatrix_choice),
        cmocka_unit_test(test_b_pairs),
        cmocka_unit_test(test_clipping),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_barriers),
        cmocka_unit_test(test_tf32_swap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
