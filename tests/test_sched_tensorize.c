/* Tests of the tensor-intrinsic registry and tensorize: a matmul whose
 * tiles were carved into outer blocks by hand (what blockize makes) is
 * tensorized block by block with the built-ins (golden text, trace
 * replay); one negative test per precondition and per kind of mismatch,
 * each checking the message names the part that differs and that nothing
 * changed; the registry (overloads, registration from several threads). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sched_check.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

/* C[M,N] = A[M,K] . B[K,N] (A, B of type DT) through fragments Af, Bf,
 * Cf, each stage an outer block over 16x16 / 16x8 / 16x8 tiles whose body
 * is the tile's loops and inner block (blockize's form).  M is MM (32
 * unless an edit says otherwise), N = 16, K = 32. */
#define DT "bfloat16"
static const char mm_text[] =
    "@T.prim_func\n"
    "def mm(A: T.Buffer((MM, 32), \"" DT "\"), B: T.Buffer((32, 16), \"" DT "\"), C: T.Buffer((MM, 16), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        Af = T.alloc_buffer((MM, 32), \"" DT "\", scope=\"frag.a\")\n"
    "        Bf = T.alloc_buffer((32, 16), \"" DT "\", scope=\"frag.b\")\n"
    "        Cf = T.alloc_buffer((MM, 16), \"float32\", scope=\"frag.acc\")\n"
    "        for io, ko in T.grid(2, 2):\n"
    "            with T.block(\"Af_o\"):\n"
    "                vio, vko = T.axis.remap(\"SS\", [io, ko])\n"
    "                T.reads(A[vio * 16:vio * 16 + 16, vko * 16:vko * 16 + 16])\n"
    "                T.writes(Af[vio * 16:vio * 16 + 16, vko * 16:vko * 16 + 16])\n"
    "                for ii, kk in T.grid(16, 16):\n"
    "                    with T.block(\"Af\"):\n"
    "                        vi, vk = T.axis.remap(\"SS\", [ii, kk])\n"
    "                        T.reads(A[vio * 16 + vi, vko * 16 + vk])\n"
    "                        T.writes(Af[vio * 16 + vi, vko * 16 + vk])\n"
    "                        Af[vio * 16 + vi, vko * 16 + vk] = A[vio * 16 + vi, vko * 16 + vk]\n"
    "        for ko, jo in T.grid(2, 2):\n"
    "            with T.block(\"Bf_o\"):\n"
    "                vko, vjo = T.axis.remap(\"SS\", [ko, jo])\n"
    "                T.reads(B[vko * 16:vko * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
    "                T.writes(Bf[vko * 16:vko * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
    "                for kk, jj in T.grid(16, 8):\n"
    "                    with T.block(\"Bf\"):\n"
    "                        vk, vj = T.axis.remap(\"SS\", [kk, jj])\n"
    "                        T.reads(B[vko * 16 + vk, vjo * 8 + vj])\n"
    "                        T.writes(Bf[vko * 16 + vk, vjo * 8 + vj])\n"
    "                        Bf[vko * 16 + vk, vjo * 8 + vj] = B[vko * 16 + vk, vjo * 8 + vj]\n"
    "        for io, jo in T.grid(2, 2):\n"
    "            with T.block(\"init_o\"):\n"
    "                vio, vjo = T.axis.remap(\"SS\", [io, jo])\n"
    "                T.writes(Cf[vio * 16:vio * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
    "                for ii, jj in T.grid(16, 8):\n"
    "                    with T.block(\"init\"):\n"
    "                        vi, vj = T.axis.remap(\"SS\", [ii, jj])\n"
    "                        T.writes(Cf[vio * 16 + vi, vjo * 8 + vj])\n"
    "                        Cf[vio * 16 + vi, vjo * 8 + vj] = T.float32(0)\n"
    "        for io, jo, ko in T.grid(2, 2, 2):\n"
    "            with T.block(\"C_o\"):\n"
    "                vio, vjo, vko = T.axis.remap(\"SSR\", [io, jo, ko])\n"
    "                T.reads(Cf[vio * 16:vio * 16 + 16, vjo * 8:vjo * 8 + 8], Af[vio * 16:vio * 16 + 16, vko * 16:vko * 16 + 16], Bf[vko * 16:vko * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
    "                T.writes(Cf[vio * 16:vio * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
    "                for ii, jj, kk in T.grid(16, 8, 16):\n"
    "                    with T.block(\"C\"):\n"
    "                        vi, vj, vk = T.axis.remap(\"SSR\", [ii, jj, kk])\n"
    "                        T.reads(Cf[vio * 16 + vi, vjo * 8 + vj], Af[vio * 16 + vi, vko * 16 + vk], Bf[vko * 16 + vk, vjo * 8 + vj])\n"
    "                        T.writes(Cf[vio * 16 + vi, vjo * 8 + vj])\n"
    "                        Cf[vio * 16 + vi, vjo * 8 + vj] = Cf[vio * 16 + vi, vjo * 8 + vj] + T.Cast(\"float32\", Af[vio * 16 + vi, vko * 16 + vk]) * T.Cast(\"float32\", Bf[vko * 16 + vk, vjo * 8 + vj])\n"
    "        for io, jo in T.grid(2, 2):\n"
    "            with T.block(\"store_o\"):\n"
    "                vio, vjo = T.axis.remap(\"SS\", [io, jo])\n"
    "                T.reads(Cf[vio * 16:vio * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
    "                T.writes(C[vio * 16:vio * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
    "                for ii, jj in T.grid(16, 8):\n"
    "                    with T.block(\"store\"):\n"
    "                        vi, vj = T.axis.remap(\"SS\", [ii, jj])\n"
    "                        T.reads(Cf[vio * 16 + vi, vjo * 8 + vj])\n"
    "                        T.writes(C[vio * 16 + vi, vjo * 8 + vj])\n"
    "                        C[vio * 16 + vi, vjo * 8 + vj] = Cf[vio * 16 + vi, vjo * 8 + vj]\n";

/* mm_text with each edits[2i] replaced by edits[2i+1] (every occurrence,
 * in order; NULL ends the list), MM by 32 unless an edit set it. */
static const tir_prim_func *parse_edits(tir_ctx *ctx, const char *const *edits) {
    char *cur = strdup(mm_text);
    for (int e = 0;; e += 2) {
        const char *from = edits ? edits[e] : NULL, *to = edits ? edits[e + 1] : NULL;
        bool last = !from;
        if (last) from = "MM", to = "32";
        size_t fl = strlen(from), tl = strlen(to), n = 0, cap = strlen(cur) * 2 + 4096;
        char *buf = malloc(cap);
        for (const char *p = cur; *p;) {
            if (strncmp(p, from, fl) == 0) {
                memcpy(buf + n, to, tl);
                n += tl;
                p += fl;
            } else {
                buf[n++] = *p++;
            }
            assert_true(n + 256 < cap);
        }
        buf[n] = 0;
        free(cur);
        cur = buf;
        if (last) break;
    }
    const tir_prim_func *f = NULL;
    tir_status st = tir_parse_func(ctx, cur, strlen(cur), &f);
    if (st != TIR_OK) fail_msg("parse: %s\n%s", tir_ctx_error(ctx), cur);
    free(cur);
    return f;
}

static const tir_prim_func *parse_edit(tir_ctx *ctx, const char *from, const char *to) {
    const char *edits[4] = {from, to, NULL, NULL};
    return parse_edits(ctx, from ? edits : NULL);
}

static void tensorize_all(tir_schedule *s) {
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "Af_o"), "frag_load_a_16x16"));
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "Bf_o"), "frag_load_b_16x8"));
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "init_o"), "frag_fill_f32"));
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "C_o"), "mma_m16n8k16_bf16"));
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "store_o"), "frag_store_16x8"));
}

static const char blocks_golden[] =
    "@T.prim_func\n"
    "def mm(A: T.Buffer((32, 32), \"bfloat16\"), B: T.Buffer((32, 16), \"bfloat16\"), C: T.Buffer((32, 16), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        Af = T.alloc_buffer((32, 32), \"bfloat16\", scope=\"frag.a\")\n"
    "        Bf = T.alloc_buffer((32, 16), \"bfloat16\", scope=\"frag.b\")\n"
    "        Cf = T.alloc_buffer((32, 16), \"float32\", scope=\"frag.acc\")\n"
    "        for io, ko in T.grid(2, 2):\n"
    "            with T.block(\"Af_o\"):\n"
    "                vio, vko = T.axis.remap(\"SS\", [io, ko])\n"
    "                T.reads(A[vio * 16:vio * 16 + 16, vko * 16:vko * 16 + 16])\n"
    "                T.writes(Af[vio * 16:vio * 16 + 16, vko * 16:vko * 16 + 16])\n"
    "                T.frag_load(T.address_of(Af[vio * 16, vko * 16]), T.address_of(A[vio * 16, vko * 16]))\n"
    "        for ko_1, jo in T.grid(2, 2):\n"
    "            with T.block(\"Bf_o\"):\n"
    "                vko_1, vjo = T.axis.remap(\"SS\", [ko_1, jo])\n"
    "                T.reads(B[vko_1 * 16:vko_1 * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
    "                T.writes(Bf[vko_1 * 16:vko_1 * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
    "                T.frag_load(T.address_of(Bf[vko_1 * 16, vjo * 8]), T.address_of(B[vko_1 * 16, vjo * 8]))\n"
    "        for io_1, jo_1 in T.grid(2, 2):\n"
    "            with T.block(\"init_o\"):\n"
    "                vio_1, vjo_1 = T.axis.remap(\"SS\", [io_1, jo_1])\n"
    "                T.writes(Cf[vio_1 * 16:vio_1 * 16 + 16, vjo_1 * 8:vjo_1 * 8 + 8])\n"
    "                T.frag_fill(T.address_of(Cf[vio_1 * 16, vjo_1 * 8]), T.float32(0))\n"
    "        for io_2, jo_2, ko_2 in T.grid(2, 2, 2):\n"
    "            with T.block(\"C_o\"):\n"
    "                vio_2, vjo_2, vko_2 = T.axis.remap(\"SSR\", [io_2, jo_2, ko_2])\n"
    "                T.reads(Cf[vio_2 * 16:vio_2 * 16 + 16, vjo_2 * 8:vjo_2 * 8 + 8], Af[vio_2 * 16:vio_2 * 16 + 16, vko_2 * 16:vko_2 * 16 + 16], Bf[vko_2 * 16:vko_2 * 16 + 16, vjo_2 * 8:vjo_2 * 8 + 8])\n"
    "                T.writes(Cf[vio_2 * 16:vio_2 * 16 + 16, vjo_2 * 8:vjo_2 * 8 + 8])\n"
    "                T.mma_sync(T.address_of(Cf[vio_2 * 16, vjo_2 * 8]), T.address_of(Af[vio_2 * 16, vko_2 * 16]), T.address_of(Bf[vko_2 * 16, vjo_2 * 8]))\n"
    "        for io_3, jo_3 in T.grid(2, 2):\n"
    "            with T.block(\"store_o\"):\n"
    "                vio_3, vjo_3 = T.axis.remap(\"SS\", [io_3, jo_3])\n"
    "                T.reads(Cf[vio_3 * 16:vio_3 * 16 + 16, vjo_3 * 8:vjo_3 * 8 + 8])\n"
    "                T.writes(C[vio_3 * 16:vio_3 * 16 + 16, vjo_3 * 8:vjo_3 * 8 + 8])\n"
    "                T.frag_store(T.address_of(Cf[vio_3 * 16, vjo_3 * 8]), T.address_of(C[vio_3 * 16, vjo_3 * 8]))\n";

static void dump_golden(tir_schedule *s, const char *name) {
    const char *dir = getenv("MINITIR_TENSORIZE_DUMP");
    if (!dir) return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s.txt", dir, name);
    FILE *fp = fopen(path, "w");
    if (fp) {
        fputs(tir_print(tir_sched_ctx(s), tir_sched_func(s)), fp);
        fclose(fp);
    }
}

static void test_tensorize_blocks(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, parse_edit(ctx, NULL, NULL));
    tensorize_all(s);
    dump_golden(s, "blocks");
    sched_expect_text(s, blocks_golden);
    sched_check_equiv(ctx, tir_sched_orig_func(s), tir_sched_func(s), 1);
    sched_check_equiv(ctx, tir_def_matmul_mixed(ctx, 32, 16, 32, TIR_BF16, TIR_F32),
                      tir_sched_func(s), 2);
    assert_int_equal(tir_verify(ctx, tir_sched_func(s)), TIR_OK);
    sched_check_roundtrip(s);
    tir_sched_destroy(s);
}


/* A T.where line after the axis line of an inner block. */
#define WHERE(axis, cond) axis, axis "\n                        T.where(" cond ")"
#define AXIS_AF "vi, vk = T.axis.remap(\"SS\", [ii, kk])"
#define AXIS_C "vi, vj, vk = T.axis.remap(\"SSR\", [ii, jj, kk])"
#define AXIS_IJ "vi, vj = T.axis.remap(\"SS\", [ii, jj])"

/* M = 30: every stage's tiles of the last row are ragged (predicated);
 * the fragments Af [30, 32] and Cf [30, 16] are padded to [32, ..]. */
static void test_tensorize_ragged(void **st) {
    tir_ctx *ctx = *st;
    const char *edits[] = {"MM", "30", WHERE(AXIS_AF, "vio * 16 + ii < 30"),
                           WHERE(AXIS_C, "vio * 16 + ii < 30"),
                           WHERE(AXIS_IJ, "vio * 16 + ii < 30"), NULL, NULL};
    tir_schedule *s = sched_new(ctx, parse_edits(ctx, edits));
    tensorize_all(s);
    dump_golden(s, "ragged");
    const char *text = tir_print(ctx, tir_sched_func(s));
    assert_non_null(strstr(text, "Af = T.alloc_buffer((32, 32), \"bfloat16\", scope=\"frag.a\")"));
    assert_non_null(strstr(text, "Cf = T.alloc_buffer((32, 16), \"float32\", scope=\"frag.acc\")"));
    assert_non_null(strstr(text, "A: T.Buffer((30, 32)"));
    assert_null(strstr(text, "T.where"));
    sched_check_equiv(ctx, tir_sched_orig_func(s), tir_sched_func(s), 1);
    sched_check_equiv(ctx, tir_def_matmul_mixed(ctx, 30, 16, 32, TIR_BF16, TIR_F32),
                      tir_sched_func(s), 2);
    assert_int_equal(tir_verify(ctx, tir_sched_func(s)), TIR_OK);
    sched_check_roundtrip(s);
    tir_sched_destroy(s);
}

/* Mismatches: each names the part that differs; nothing changes. */
static void expect_mismatch(tir_ctx *ctx, const tir_prim_func *f, const char *block,
                            const char *intrin, tir_status want, const char *needle) {
    tir_schedule *s = sched_new(ctx, f);
    tir_block_rv b = sched_block(s, block);
    SCHED_EXPECT_FAIL(s, want, "tensorize", tir_sched_tensorize(s, b, intrin));
    const char *msg = tir_ctx_error(ctx);
    if (!strstr(msg, needle)) fail_msg("expected \"%s\" in:\n%s", needle, msg);
    tir_sched_destroy(s);
}

static void test_tensorize_mismatch(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = parse_edit(ctx, NULL, NULL);
    /* a loop extent */
    expect_mismatch(ctx, f, "C_o", "mma_m16n8k8_tf32", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "loop 2 (kk): extent 16, the intrinsic's is 8");
    /* a buffer dtype */
    expect_mismatch(ctx, f, "C_o", "mma_m16n8k16_f16", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "buffer Af: dtype bfloat16, the intrinsic wants float16");
    /* the loop structure: a fill tile has two loops, the mma three */
    expect_mismatch(ctx, f, "init_o", "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "loop 2: BlockRealize found where the intrinsic has a loop of extent 16");
    /* a B pair (16x16) on one 16x8 B tile */
    expect_mismatch(ctx, f, "Bf_o", "frag_load_b_16x16", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "loop 1 (jj): extent 8, the intrinsic's is 16");
    /* the store direction: frag_store reads a fragment, the load writes one */
    expect_mismatch(ctx, f, "Af_o", "frag_store_16x8", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "loop 1 (kk): extent 16, the intrinsic's is 8");
    expect_mismatch(ctx, f, "Bf_o", "frag_store_16x8", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "buffer Bf: dtype bfloat16, the intrinsic wants float32");
    /* a cast in another place */
    expect_mismatch(
        ctx,
        parse_edit(ctx,
                   "T.Cast(\"float32\", Af[vio * 16 + vi, vko * 16 + vk]) * T.Cast(\"float32\", "
                   "Bf[vko * 16 + vk, vjo * 8 + vj])",
                   "T.Cast(\"float32\", Af[vio * 16 + vi, vko * 16 + vk] * Bf[vko * 16 + vk, "
                   "vjo * 8 + vj])"),
        "C_o", "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
        "store value, operand 1: T.Cast(\"float32\", A[vi, vk]) * T.Cast(\"float32\", B[vk, "
        "vj]) expected, found T.Cast(\"float32\", Af[vio * 16 + vi, vko * 16 + vk] * Bf[");
    /* a scope */
    expect_mismatch(ctx,
                    parse_edit(ctx, "scope=\"frag.a\"", "scope=\"shared\""), "C_o",
                    "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "buffer Af: scope shared, the intrinsic wants frag.a");
    /* a fragment where the description wants any other scope */
    expect_mismatch(ctx, parse_edit(ctx, "scope=\"frag.b\"", "scope=\"frag.a\""), "Bf_o",
                    "frag_load_b_16x8", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "buffer Bf: scope frag.a, the intrinsic wants frag.b");
    /* an iterator kind */
    expect_mismatch(ctx, parse_edit(ctx, AXIS_C, "vi, vj, vk = T.axis.remap(\"SSS\", [ii, jj, kk])"),
                    "C_o", "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "iterator 2 (vk): spatial, the intrinsic's is reduce");
    /* a binding */
    expect_mismatch(ctx, parse_edit(ctx, AXIS_C,
                                   "vi, vj = T.axis.remap(\"SS\", [ii, jj])\n"
                                   "                        vk = T.axis.reduce(16, 15 - kk)"),
                    "C_o", "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "iterator 2 (vk): bound to 15 - kk, the intrinsic's to kk");
    /* an index (the tile transposed) */
    expect_mismatch(ctx,
                    parse_edit(ctx, "Af[vio * 16 + vi, vko * 16 + vk]",
                               "Af[vio * 16 + vk, vko * 16 + vi]"),
                    "C_o", "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "index 0 of Af is vio * 16 + vk, the intrinsic's is vio * 16 + vi");
    /* a constant */
    expect_mismatch(ctx, parse_edit(ctx, "= T.float32(0)", "= T.float32(1)"), "init_o",
                    "frag_fill_f32", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "store value: T.float32(0) expected, found T.float32(1)");
    /* -0.0 is not the fill's 0.0, though == says so: the implementation
       stores +0.0 (it once matched) */
    expect_mismatch(ctx, parse_edit(ctx, "= T.float32(0)", "= T.float32(-0.0)"), "init_o",
                    "frag_fill_f32", TIR_ERR_SCHED_TENSORIZE_MISMATCH,
                    "store value: T.float32(0) expected, found T.float32(-0)");
}

static void test_tensorize_preconditions(void **st) {
    tir_ctx *ctx = *st;
    /* 1: the name */
    expect_mismatch(ctx, parse_edit(ctx, NULL, NULL), "C_o", "mma_m16n8k32_bf16",
                    TIR_ERR_SCHED_UNKNOWN_INTRIN, "\"mma_m16n8k32_bf16\"");
    /* 2: an init, on the block itself (the unscheduled matmul) ... */
    expect_mismatch(ctx, tir_def_matmul_mixed(ctx, 16, 8, 16, TIR_BF16, TIR_F32), "C",
                    "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_INIT, "decompose_reduction");
    /* ... or on the inner block */
    expect_mismatch(ctx,
                    parse_edit(ctx, AXIS_C,
                               AXIS_C "\n                        with T.init():\n"
                                      "                            Cf[vio * 16 + vi, vjo * 8 + "
                                      "vj] = T.float32(0)"),
                    "C_o", "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_INIT,
                    "block \"C\" has an init: decompose_reduction first");
    /* 4: see test_tensorize_mismatch.  5: a bound of the reduce iterator ... */
    expect_mismatch(ctx, parse_edit(ctx, WHERE(AXIS_C, "vko * 16 + kk < 30")), "C_o",
                    "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_PREDICATE,
                    "bounds reduction iterator vk: split that loop by a factor dividing");
    /* ... and a predicate that is not a bound of one iterator */
    expect_mismatch(ctx, parse_edit(ctx, WHERE(AXIS_C, "ii < jj")), "C_o",
                    "mma_m16n8k16_bf16", TIR_ERR_SCHED_TENSORIZE_PREDICATE,
                    "does not bound one spatial iterator");
    /* 6: a fragment tile origin off the tile grid.  With only the outer
       block's region moved to vjo * 4, the inner block writes outside it:
       tir_sched_create refuses that function (a block's accesses must lie
       in its declared regions; this once reached tensorize as a mismatch,
       4).  With the body at vjo * 4 too, instances vjo = 0 and 1 both fill
       columns 4..7 (jj = 4 and jj = 0): tir_sched_create refuses that as
       two instances storing one element.  At vjo * 8 + 4 (Cf widened to 24
       columns) the instances fill their own columns, the fill matches,
       and 6 refuses the origin, not a multiple of the 16x8 tile's 8
       columns */
    {
        const tir_prim_func *f =
            parse_edit(ctx, "Cf[vio * 16:vio * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
                            "                for ii, jj in T.grid(16, 8):\n"
                            "                    with T.block(\"init\")",
                       "Cf[vio * 16:vio * 16 + 16, vjo * 4:vjo * 4 + 8])\n"
                       "                for ii, jj in T.grid(16, 8):\n"
                       "                    with T.block(\"init\")");
        tir_schedule *s = NULL;
        assert_int_equal(tir_sched_create(ctx, f, &s), TIR_ERR_VERIFY);
        assert_non_null(
            strstr(tir_ctx_error(ctx), "block \"init_o\" stores outside its T.writes regions of Cf"));
    }
    {
        const char *edits[] = {
            "Cf[vio * 16:vio * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
            "                for ii, jj in T.grid(16, 8):\n"
            "                    with T.block(\"init\")",
            "Cf[vio * 16:vio * 16 + 16, vjo * 4:vjo * 4 + 8])\n"
            "                for ii, jj in T.grid(16, 8):\n"
            "                    with T.block(\"init\")",
            "T.writes(Cf[vio * 16 + vi, vjo * 8 + vj])\n"
            "                        Cf[vio * 16 + vi, vjo * 8 + vj] = T.float32(0)",
            "T.writes(Cf[vio * 16 + vi, vjo * 4 + vj])\n"
            "                        Cf[vio * 16 + vi, vjo * 4 + vj] = T.float32(0)",
            NULL, NULL};
        tir_schedule *s = NULL;
        assert_int_equal(tir_sched_create(ctx, parse_edits(ctx, edits), &s), TIR_ERR_VERIFY);
        assert_non_null(strstr(tir_ctx_error(ctx), "block \"init_o\" stores Cf from two instances"));
    }
    {
        const char *edits[] = {
            "Cf[vio * 16:vio * 16 + 16, vjo * 8:vjo * 8 + 8])\n"
            "                for ii, jj in T.grid(16, 8):\n"
            "                    with T.block(\"init\")",
            "Cf[vio * 16:vio * 16 + 16, vjo * 8 + 4:vjo * 8 + 12])\n"
            "                for ii, jj in T.grid(16, 8):\n"
            "                    with T.block(\"init\")",
            "T.writes(Cf[vio * 16 + vi, vjo * 8 + vj])\n"
            "                        Cf[vio * 16 + vi, vjo * 8 + vj] = T.float32(0)",
            "T.writes(Cf[vio * 16 + vi, vjo * 8 + 4 + vj])\n"
            "                        Cf[vio * 16 + vi, vjo * 8 + 4 + vj] = T.float32(0)",
            "Cf = T.alloc_buffer((MM, 16)", "Cf = T.alloc_buffer((MM, 24)",
            NULL, NULL};
        expect_mismatch(ctx, parse_edits(ctx, edits), "init_o", "frag_fill_f32",
                        TIR_ERR_SCHED_FRAG_TILE,
                        "fragment Cf is accessed from vjo * 8 + 4 in dimension 1, which is not "
                        "provably a multiple of its 16x8 tile");
        assert_non_null(strstr(tir_ctx_error(ctx), "init_o"));
    }
    /* 6: a fragment parameter (M = 30) does not hold whole tiles, and
       padding it would change the function's signature */
    {
        const char *edits[] = {
            "C: T.Buffer((MM, 16), \"float32\")):",
            "C: T.Buffer((MM, 16), \"float32\"), Cf: T.Buffer((MM, 16), \"float32\", "
            "scope=\"frag.acc\")):",
            "        Cf = T.alloc_buffer((MM, 16), \"float32\", scope=\"frag.acc\")\n", "",
            WHERE(AXIS_IJ, "vio * 16 + ii < 30"),
            "MM", "30", NULL, NULL};
        expect_mismatch(ctx, parse_edits(ctx, edits), "init_o", "frag_fill_f32",
                        TIR_ERR_SCHED_FRAG_TILE,
                        "fragment parameter Cf does not hold whole 16x8 tiles");
        assert_non_null(strstr(tir_ctx_error(ctx), "init_o"));
    }
}

/* A description that is not loops around a block, and a user intrinsic
 * registered next to the built-ins. */
static const tir_prim_func *desc_bad(tir_ctx *ctx) {
    (void)ctx;
    return NULL;
}
static const tir_prim_func *desc_fill_one(tir_ctx *ctx) {
    static const char text[] =
        "@T.prim_func\n"
        "def fill_one(C: T.Buffer((16, 8), \"float32\", scope=\"frag.acc\")):\n"
        "    for i, j in T.grid(16, 8):\n"
        "        with T.block(\"fill\"):\n"
        "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
        "            T.writes(C[vi, vj])\n"
        "            C[vi, vj] = T.float32(1)\n";
    const tir_prim_func *f = NULL;
    tir_parse_func(ctx, text, sizeof text - 1, &f);
    return f;
}
static const tir_stmt *impl_fill_one(tir_ctx *ctx, const tir_buffer *const *bufs,
                                     const tir_expr *const *const *origins) {
    const tir_expr *load = tir_load(ctx, bufs[0], bufs[0]->ndim, origins[0]);
    const tir_expr *args[2] = {tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &load),
                               tir_f32(ctx, 1.0)};
    return tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, TIR_INTRIN_FRAG_FILL, 2, args));
}

static void *register_many(void *arg) {
    (void)arg;
    for (int i = 0; i < 200; i++) {
        char name[32];
        snprintf(name, sizeof name, "test_thread_%d", i % 20);
        if (tir_tensor_intrin_register(name, desc_fill_one, impl_fill_one) != TIR_OK)
            return (void *)1;
    }
    return NULL;
}

static void test_registry(void **st) {
    tir_ctx *ctx = *st;
    assert_int_equal(tir_tensor_intrin_count("mma_m16n8k16_bf16"), 1);
    assert_int_equal(tir_tensor_intrin_count("frag_load_a_16x16"), 2); /* bf16, f16 */
    assert_int_equal(tir_tensor_intrin_count("frag_load_b_16x16"), 2); /* bf16, f16 */
    assert_int_equal(tir_tensor_intrin_count("no_such"), 0);
    assert_int_equal(tir_tensor_intrin_register("", desc_fill_one, impl_fill_one),
                     TIR_ERR_INVALID_ARG);
    assert_int_equal(tir_tensor_intrin_register("a b", desc_fill_one, impl_fill_one),
                     TIR_ERR_INVALID_ARG);
    assert_int_equal(tir_tensor_intrin_register("x", NULL, impl_fill_one), TIR_ERR_INVALID_ARG);
    assert_int_equal(tir_tensor_intrin_register(NULL, desc_fill_one, impl_fill_one),
                     TIR_ERR_INVALID_ARG);
    /* 3: an ill-formed description */
    assert_int_equal(tir_tensor_intrin_register("test_bad", desc_bad, impl_fill_one), TIR_OK);
    expect_mismatch(ctx, parse_edit(ctx, NULL, NULL), "init_o", "test_bad",
                    TIR_ERR_SCHED_BAD_INTRIN, "is not loops around one block");
    /* registering concurrently: the same pairs count once */
    pthread_t th[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, register_many, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *rc = NULL;
        pthread_join(th[i], &rc);
        assert_null(rc);
    }
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "test_thread_%d", i);
        assert_int_equal(tir_tensor_intrin_count(name), 1);
    }
    /* a user intrinsic: fill with 1 matches only a fill with 1 */
    assert_int_equal(tir_tensor_intrin_register("test_fill_one", desc_fill_one, impl_fill_one),
                     TIR_OK);
    expect_mismatch(ctx, parse_edit(ctx, NULL, NULL), "init_o", "test_fill_one",
                    TIR_ERR_SCHED_TENSORIZE_MISMATCH, "T.float32(1) expected, found T.float32(0)");
    tir_schedule *s = sched_new(ctx, parse_edit(ctx, "= T.float32(0)", "= T.float32(1)"));
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "init_o"), "test_fill_one"));
    assert_non_null(strstr(tir_print(ctx, tir_sched_func(s)), "T.float32(1))"));
    sched_check_roundtrip(s);
    tir_sched_destroy(s);
}

/* The trace: text replay (sched_check_roundtrip) and C. */
static void test_tensorize_trace(void **st) {
    tir_ctx *ctx = *st;
    tir_schedule *s = sched_new(ctx, parse_edit(ctx, NULL, NULL));
    tensorize_all(s);
    const char *text = tir_sched_trace_text(s);
    if (!strstr(text, "tensorize(b3, \"mma_m16n8k16_bf16\")")) fail_msg("%s", text);
    const char *c = tir_sched_trace_c(s, "f");
    assert_non_null(strstr(c, "tir_sched_tensorize(sch, "));
    assert_non_null(strstr(c, "\"frag_store_16x8\")"));
    tir_schedule *r = sched_new(ctx, tir_sched_orig_func(s));
    SCHED_OK(r, tir_sched_replay(r, text, strlen(text)));
    assert_true(tir_struct_equal(tir_sched_func(r), tir_sched_func(s)));
    assert_string_equal(tir_sched_trace_text(r), text);
    tir_sched_destroy(r);
    tir_sched_destroy(s);
}

/* The 50x20x48 user schedule: fragments padded to whole tiles, the
 * ragged predicates gone. */
static const char user_ragged_golden[] =
    "@T.prim_func\n"
    "def matmul(A: T.Buffer((50, 48), \"bfloat16\"), B: T.Buffer((48, 20), \"bfloat16\"), C: T.Buffer((50, 20), \"float32\")):\n"
    "    T.func_attr({\"global_symbol\": \"matmul\", \"tir.noalias\": 1})\n"
    "    with T.block(\"root\"):\n"
    "        C_frag_acc = T.alloc_buffer((64, 24), \"float32\", scope=\"frag.acc\")\n"
    "        A_frag_a = T.alloc_buffer((64, 48), \"bfloat16\", scope=\"frag.a\")\n"
    "        B_frag_b = T.alloc_buffer((48, 24), \"bfloat16\", scope=\"frag.b\")\n"
    "        for ax0_0, ax1_0 in T.grid(3, 3):\n"
    "            with T.block(\"B_frag_b_o\"):\n"
    "                v0_o, v1_o = T.axis.remap(\"SS\", [ax0_0, ax1_0])\n"
    "                T.reads(B[v0_o * 16:v0_o * 16 + 16, v1_o * 8:v1_o * 8 + 8])\n"
    "                T.writes(B_frag_b[v0_o * 16:v0_o * 16 + 16, v1_o * 8:v1_o * 8 + 8])\n"
    "                T.frag_load(T.address_of(B_frag_b[v0_o * 16, v1_o * 8]), T.address_of(B[v0_o * 16, v1_o * 8]))\n"
    "        for ax0_0_1, ax1_0_1 in T.grid(4, 3):\n"
    "            with T.block(\"A_frag_a_o\"):\n"
    "                v0_o_1, v1_o_1 = T.axis.remap(\"SS\", [ax0_0_1, ax1_0_1])\n"
    "                T.reads(A[v0_o_1 * 16:v0_o_1 * 16 + 16, v1_o_1 * 16:v1_o_1 * 16 + 16])\n"
    "                T.writes(A_frag_a[v0_o_1 * 16:v0_o_1 * 16 + 16, v1_o_1 * 16:v1_o_1 * 16 + 16])\n"
    "                T.frag_load(T.address_of(A_frag_a[v0_o_1 * 16, v1_o_1 * 16]), T.address_of(A[v0_o_1 * 16, v1_o_1 * 16]))\n"
    "        for i_0, j_0 in T.grid(4, 3):\n"
    "            with T.block(\"C_init_o\"):\n"
    "                vi_o, vj_o = T.axis.remap(\"SS\", [i_0, j_0])\n"
    "                T.writes(C_frag_acc[vi_o * 16:vi_o * 16 + 16, vj_o * 8:vj_o * 8 + 8])\n"
    "                T.frag_fill(T.address_of(C_frag_acc[vi_o * 16, vj_o * 8]), T.float32(0))\n"
    "            for k_0 in T.serial(3):\n"
    "                with T.block(\"C_o\"):\n"
    "                    vi_o_1, vj_o_1, vk_o = T.axis.remap(\"SSR\", [i_0, j_0, k_0])\n"
    "                    T.reads(A_frag_a[vi_o_1 * 16:vi_o_1 * 16 + 16, vk_o * 16:vk_o * 16 + 16], B_frag_b[vk_o * 16:vk_o * 16 + 16, vj_o_1 * 8:vj_o_1 * 8 + 8])\n"
    "                    T.writes(C_frag_acc[vi_o_1 * 16:vi_o_1 * 16 + 16, vj_o_1 * 8:vj_o_1 * 8 + 8])\n"
    "                    T.mma_sync(T.address_of(C_frag_acc[vi_o_1 * 16, vj_o_1 * 8]), T.address_of(A_frag_a[vi_o_1 * 16, vk_o * 16]), T.address_of(B_frag_b[vk_o * 16, vj_o_1 * 8]))\n"
    "        for ax0_0_2, ax1_0_2 in T.grid(4, 3):\n"
    "            with T.block(\"C_frag_acc_o\"):\n"
    "                v0_o_2, v1_o_2 = T.axis.remap(\"SS\", [ax0_0_2, ax1_0_2])\n"
    "                T.reads(C_frag_acc[v0_o_2 * 16:v0_o_2 * 16 + 16, v1_o_2 * 8:v1_o_2 * 8 + 8])\n"
    "                T.writes(C[v0_o_2 * 16:v0_o_2 * 16 + 16, v1_o_2 * 8:v1_o_2 * 8 + 8])\n"
    "                T.frag_store(T.address_of(C_frag_acc[v0_o_2 * 16, v1_o_2 * 8]), T.address_of(C[v0_o_2 * 16, v1_o_2 * 8]))\n";

/* Splits a loop by `inner` into out[0] (outer) and out[1]. */
static void split2(tir_schedule *s, tir_loop_rv l, int64_t inner, tir_loop_rv *out) {
    const int64_t f[2] = {TIR_SPLIT_INFER, inner};
    SCHED_OK(s, tir_sched_split(s, l, 2, f, out));
}

/* A copy block over (r, c): tiles of tr x tc, then tensorize_loop. */
static void tile_copy(tir_schedule *s, const char *block, int64_t tr, int64_t tc,
                      const char *intrin) {
    tir_loop_rv ls[16], a[2], b[2];
    assert_int_equal(sched_loops(s, block, ls), 2);
    split2(s, ls[0], tr, a);
    split2(s, ls[1], tc, b);
    SCHED_OK(s, tir_sched_reorder(s, 2, (tir_loop_rv[]){b[0], a[1]}));
    SCHED_OK(s, tir_sched_tensorize_loop(s, a[1], intrin));
}

/* The user's schedule of tc-design.md without the GPU parts (threads,
 * shared memory): caches in fragments, 16x8x16 tiles, decompose_reduction,
 * and every stage tensorized through tensorize_loop (blockize + match). */
static void test_tensorize_user_schedule(void **st) {
    tir_ctx *ctx = *st;
    const int64_t shapes[2][3] = {{32, 16, 32}, {50, 20, 48}};
    for (int c = 0; c < 2; c++) {
        tir_schedule *s = sched_new(ctx, tir_def_matmul_mixed(ctx, shapes[c][0], shapes[c][1],
                                                              shapes[c][2], TIR_BF16, TIR_F32));
        tir_block_rv cb = sched_block(s, "C"), out, init;
        SCHED_OK(s, tir_sched_cache_write(s, cb, 0, "frag.acc", 0, NULL, &out));
        SCHED_OK(s, tir_sched_cache_read(s, cb, 0, "frag.a", 0, NULL, &out));
        SCHED_OK(s, tir_sched_cache_read(s, cb, 1, "frag.b", 0, NULL, &out));
        tir_loop_rv ls[16], i[2], j[2], k[2];
        assert_int_equal(sched_loops(s, "C", ls), 3);
        split2(s, ls[0], 16, i);
        split2(s, ls[1], 8, j);
        split2(s, ls[2], 16, k);
        SCHED_OK(s, tir_sched_reorder(s, 6, (tir_loop_rv[]){i[0], j[0], k[0], i[1], j[1], k[1]}));
        /* tensorize refuses the reduction while it has its init */
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_TENSORIZE_INIT, "tensorize",
                          tir_sched_tensorize_loop(s, i[1], "mma_m16n8k16_bf16"));
        SCHED_OK(s, tir_sched_decompose_reduction(s, cb, k[0], &init));
        tir_loop_rv il[16];
        const tir_block *ib = NULL;
        SCHED_OK(s, tir_sched_get_block_node(s, init, &ib));
        assert_int_equal(sched_loops(s, ib->name, il), 4);
        /* a mismatch after the blockize leaves nothing behind */
        SCHED_EXPECT_FAIL(s, TIR_ERR_SCHED_TENSORIZE_MISMATCH, "tensorize",
                          tir_sched_tensorize_loop(s, il[2], "frag_store_16x8"));
        SCHED_OK(s, tir_sched_tensorize_loop(s, il[2], "frag_fill_f32"));
        SCHED_OK(s, tir_sched_tensorize_loop(s, i[1], "mma_m16n8k16_bf16"));
        tile_copy(s, "A_frag_a", 16, 16, "frag_load_a_16x16");
        tile_copy(s, "B_frag_b", 16, 8, "frag_load_b_16x8");
        tile_copy(s, "C_frag_acc", 16, 8, "frag_store_16x8");
        dump_golden(s, c ? "user_ragged" : "user");
        const char *text = tir_print(ctx, tir_sched_func(s));
        assert_null(strstr(text, "T.where"));
        assert_non_null(strstr(text, "mma_sync"));
        if (c) sched_expect_text(s, user_ragged_golden);
        sched_check_all(s);
        tir_sched_destroy(s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tensorize_blocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensorize_ragged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensorize_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensorize_preconditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_registry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensorize_trace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensorize_user_schedule, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
