/* test_ir_util.c: the helpers of src/ir/util.c and the string buffer that
 * every layer shares (arena, pointer map, gcd, TIR_DUMP selection,
 * float16 / bfloat16 rounding, formatting). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir/ir_internal.h"

static void test_arena(void **st) {
    (void)st;
    ir_arena a = {.chunk_size = 1024};
    unsigned char *p1 = ir_arena_alloc(&a, 3);
    unsigned char *p2 = ir_arena_alloc(&a, 1);
    assert_int_equal((uintptr_t)p1 % 16, 0);
    assert_ptr_equal(p2, p1 + 16); /* rounded up to 16 bytes */
    /* a block that does not fit and is bigger than a quarter chunk gets
     * its own chunk and leaves the current one current */
    unsigned char *big = ir_arena_alloc(&a, 1000);
    unsigned char *p3 = ir_arena_alloc(&a, 16);
    assert_ptr_equal(p3, p2 + 16);
    for (int i = 0; i < 1000; i++) assert_int_equal(big[i], 0);
    memset(big, 0xab, 1000);
    memset(p1, 0xcd, 3);
    /* many allocations spill into new chunks, all zeroed */
    for (int i = 0; i < 200; i++) {
        unsigned char *q = ir_arena_alloc(&a, 40);
        for (int k = 0; k < 40; k++) assert_int_equal(q[k], 0);
        memset(q, 0xee, 40);
    }
    /* rewind reuses the memory from the start, zeroed again */
    ir_arena_rewind(&a);
    unsigned char *r1 = ir_arena_alloc(&a, 8);
    assert_ptr_equal(r1, p1);
    for (int k = 0; k < 8; k++) assert_int_equal(r1[k], 0);
    ir_arena_free(&a);
    assert_null(a.head);
    ir_arena_free(&a); /* freeing an empty arena is fine */
}

static void test_ptr_map(void **st) {
    (void)st;
    ir_ptr_map m = {0};
    static int keys[1000];
    assert_null(ir_ptr_map_get(&m, &keys[0]));
    for (int i = 0; i < 1000; i++) ir_ptr_map_put(&m, &keys[i], &keys[(i * 7) % 1000]);
    assert_int_equal(m.n, 1000);
    for (int i = 0; i < 1000; i++)
        assert_ptr_equal(ir_ptr_map_get(&m, &keys[i]), &keys[(i * 7) % 1000]);
    ir_ptr_map_put(&m, &keys[5], NULL); /* overwrite, no new entry */
    assert_int_equal(m.n, 1000);
    assert_null(ir_ptr_map_get(&m, &keys[5]));
    int other;
    assert_null(ir_ptr_map_get(&m, &other));
    ir_ptr_map_free(&m);
    assert_int_equal(m.cap, 0);
}

static void test_gcd(void **st) {
    (void)st;
    assert_int_equal(ir_gcd64(12, 18), 6);
    assert_int_equal(ir_gcd64(-12, 18), 6);
    assert_int_equal(ir_gcd64(12, -18), 6);
    assert_int_equal(ir_gcd64(0, 5), 5);
    assert_int_equal(ir_gcd64(7, 0), 7);
    assert_int_equal(ir_gcd64(0, 0), 0);
    assert_int_equal(ir_gcd64(INT64_MAX, INT64_MAX), INT64_MAX);
    assert_int_equal(ir_gcd64(INT64_MIN, 4), 1); /* its gcd may not fit */
    assert_int_equal(ir_gcd64(6, INT64_MIN), 1);
}

static void test_dump_selection(void **st) {
    (void)st;
    assert_true(ir_list_has("a,bb,c", "bb"));
    assert_true(ir_list_has("a,bb,c", "a"));
    assert_true(ir_list_has("a,bb,c", "c"));
    assert_false(ir_list_has("a,bb,c", "b"));
    assert_false(ir_list_has("a,bb,c", "bbc"));
    assert_false(ir_list_has("", "a"));
    assert_false(ir_list_has(NULL, "a"));
    const char *old = getenv("TIR_DUMP");
    char *saved = old ? strdup(old) : NULL;
    setenv("TIR_DUMP", "flatten,all", 1);
    assert_true(ir_dump_wanted("flatten", false));
    assert_true(ir_dump_wanted("unroll", true));
    assert_false(ir_dump_wanted("unroll", false));
    setenv("TIR_DUMP", "xllvmx", 1);
    assert_false(ir_dump_wanted("llvm", false));
    setenv("TIR_DUMP", "flatten,llvm", 1);
    assert_true(ir_dump_wanted("llvm", false));
    unsetenv("TIR_DUMP");
    assert_false(ir_dump_wanted("llvm", true));
    if (saved) setenv("TIR_DUMP", saved, 1);
    free(saved);
}

static double bits_double(uint64_t b) {
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static void test_half(void **st) {
    (void)st;
    assert_int_equal(ir_f16_from_double(1.0), 0x3c00);
    assert_int_equal(ir_f16_from_double(-2.0), 0xc000);
    assert_int_equal(ir_f16_from_double(65504.0), 0x7bff);
    assert_int_equal(ir_f16_from_double(65520.0), 0x7c00); /* the tie rounds to inf */
    assert_int_equal(ir_f16_from_double(0x1p-24), 0x0001);  /* smallest subnormal */
    assert_int_equal(ir_f16_from_double(0x1p-26), 0x0000);
    assert_int_equal(ir_bf16_from_double(1.0), 0x3f80);
    assert_int_equal(ir_bf16_from_double(1.0 + 0x1p-8), 0x3f80); /* tie to even */
    assert_int_equal(ir_bf16_from_double(1.0 + 0x1p-8 + 0x1p-20), 0x3f81);
    /* a NaN stays quiet and keeps the top bits of its payload */
    double nan = bits_double(0x7ff0000000000000ull | (0x155ull << 42));
    assert_int_equal(ir_f16_from_double(nan), 0x7c00 | 0x200 | 0x155);
    assert_int_equal(ir_bf16_from_double(nan), 0x7f80 | 0x40 | (0x155 >> 3));
    assert_int_equal(ir_f16_from_double(-bits_double(0x7ff0000000000001ull)), 0xfe00);
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = ir_f16_to_float((uint16_t)h), g = ir_bf16_to_float((uint16_t)h);
        if (!isnan(f)) assert_int_equal(ir_f16_from_double(f), h);
        if (!isnan(g)) assert_int_equal(ir_bf16_from_double(g), h);
    }
}

static void test_format(void **st) {
    (void)st;
    ir_strbuf sb;
    ir_sb_init(&sb);
    for (int i = 0; i < 100; i++) ir_sb_printf(&sb, "%d,", i);
    assert_int_equal(sb.len, strlen(sb.data));
    assert_memory_equal(sb.data, "0,1,2,", 6);
    assert_string_equal(sb.data + sb.len - 3, "99,");
    ir_sb_free(&sb);
    tir_ctx *ctx = tir_ctx_create();
    assert_string_equal(tir_ctx_sprintf(ctx, "%s-%03d", "x", 7), "x-007");
    assert_string_equal(tir_ctx_sprintf(ctx, "%s", ""), "");
    assert_int_equal(tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "first %d", 1), TIR_ERR_INVALID_ARG);
    /* the message may quote the one it replaces */
    tir_ctx_fail(ctx, TIR_ERR_LOWER, "second after: %s", tir_ctx_error(ctx));
    assert_string_equal(tir_ctx_error(ctx), "second after: first 1");
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_LOWER);
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena),         cmocka_unit_test(test_ptr_map),
        cmocka_unit_test(test_gcd),           cmocka_unit_test(test_dump_selection),
        cmocka_unit_test(test_half),          cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
