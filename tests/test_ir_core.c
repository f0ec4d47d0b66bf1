/* Tests of the IR core: context, interning, dtypes, constructors, the
 * mutator's sharing guarantee, substitution, structural equality and hash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/ir.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static void test_intern_and_errors(void **st) {
    tir_ctx *ctx = *st;
    char a[] = "hello", b[] = "hello";
    assert_ptr_equal(tir_intern(ctx, a), tir_intern(ctx, b));
    assert_ptr_not_equal(tir_intern(ctx, "x"), tir_intern(ctx, "y"));
    /* many strings: growth keeps identity */
    const char *first = tir_intern(ctx, "s0");
    for (int i = 0; i < 5000; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "s%d", i);
        tir_intern(ctx, buf);
    }
    assert_ptr_equal(first, tir_intern(ctx, "s0"));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_OK);
    assert_string_equal(tir_ctx_error(ctx), "");
    assert_int_equal(tir_ctx_fail(ctx, TIR_ERR_PARSE, "bad %d", 7), TIR_ERR_PARSE);
    assert_string_equal(tir_ctx_error(ctx), "bad 7");
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_PARSE);
    tir_ctx_clear_error(ctx);
    assert_int_equal(tir_ctx_error_code(ctx), TIR_OK);
    assert_string_equal(tir_status_name(TIR_ERR_OUT_OF_BOUNDS), "ERR_OUT_OF_BOUNDS");
    assert_string_equal(tir_status_str(TIR_OK), "ok");
    /* big allocations */
    char *big = tir_ctx_alloc(ctx, 1 << 20);
    big[(1 << 20) - 1] = 1;
    char *small = tir_ctx_alloc(ctx, 8);
    small[0] = 2;
    assert_int_equal(big[(1 << 20) - 1], 1);
}

static void test_dtypes(void **st) {
    (void)st;
    char buf[32];
    assert_string_equal(tir_dtype_str(TIR_F32, buf, sizeof buf), "float32");
    assert_string_equal(tir_dtype_str(tir_dtype_with_lanes(TIR_F32, 4), buf, sizeof buf),
                        "float32x4");
    assert_string_equal(tir_dtype_str(TIR_BF16, buf, sizeof buf), "bfloat16");
    tir_dtype t;
    const char *names[] = {"bool", "int8", "int32", "int64", "uint8", "float16", "bfloat16",
                           "float32", "float64", "float16x8", "int32x4"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        assert_true(tir_dtype_parse(names[i], strlen(names[i]), &t));
        assert_string_equal(tir_dtype_str(t, buf, sizeof buf), names[i]);
    }
    assert_false(tir_dtype_parse("float33", 7, &t));
    assert_false(tir_dtype_parse("float32x", 8, &t));
    assert_false(tir_dtype_parse("float32x0", 9, &t));
    assert_int_equal(tir_dtype_bytes(tir_dtype_with_lanes(TIR_F32, 4)), 16);
    assert_int_equal(tir_dtype_bytes(TIR_BF16), 2);
    assert_int_equal(tir_dtype_bytes(TIR_BOOL), 1);
    assert_true(tir_dtype_is_float(TIR_BF16));
    assert_true(tir_dtype_is_int(TIR_U8));
}

static void test_constructors(void **st) {
    tir_ctx *ctx = *st;
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32);
    const tir_expr *e = tir_add(ctx, &i->base, tir_i32(ctx, 1));
    assert_int_equal(e->kind, TIR_KIND_ADD);
    assert_true(tir_dtype_eq(e->dtype, TIR_I32));
    const tir_expr *c = tir_lt(ctx, e, tir_i32(ctx, 10));
    assert_true(tir_dtype_eq(c->dtype, TIR_BOOL));
    assert_non_null(tir_as_tir_binop(c));
    assert_null(tir_as_tir_var(c));
    int64_t v = 0;
    assert_true(tir_expr_const_int(tir_i32(ctx, 42), &v));
    assert_int_equal(v, 42);
    assert_false(tir_expr_const_int(e, &v));
    /* vector load through a ramp index */
    int64_t shape[] = {64};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 1, shape, TIR_SCOPE_GLOBAL);
    const tir_expr *idx = tir_ramp_new(ctx, tir_i32(ctx, 0), tir_i32(ctx, 1), 4);
    const tir_expr *ld = tir_load(ctx, A, 1, &idx);
    assert_int_equal(ld->dtype.lanes, 4);
    assert_int_equal(tir_buffer_const_size(A), 64);
    assert_int_equal(A->align, 64); /* the default: 16-byte vectors provable */
    /* seq flattening */
    const tir_stmt *s1 = tir_evaluate_new(ctx, tir_i32(ctx, 1));
    const tir_stmt *s2 = tir_evaluate_new(ctx, tir_i32(ctx, 2));
    const tir_stmt *inner[] = {s1, s2};
    const tir_stmt *q = tir_seq_new(ctx, 2, inner);
    const tir_stmt *outer[] = {q, NULL, s1};
    const tir_seq *flat = tir_as_tir_seq(tir_seq_new(ctx, 3, outer));
    assert_non_null(flat);
    assert_int_equal(flat->n, 3);
    assert_ptr_equal(tir_seq_new(ctx, 1, &s1), s1);
    assert_int_equal(tir_seq_new(ctx, 0, NULL)->kind, TIR_KIND_EVALUATE);
    /* annotations sorted by key */
    tir_annot an[2] = {{.key = "z", .kind = TIR_ANNOT_INT, .i = 1},
                       {.key = "a", .kind = TIR_ANNOT_STR, .s = "x"}};
    const tir_stmt *f = tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, 4), TIR_FOR_SERIAL,
                                    NULL, 2, an, s1);
    const tir_for *fl = tir_as_tir_for(f);
    assert_string_equal(fl->annots[0].key, "a");
    assert_ptr_equal(tir_annots_find(fl->nannots, fl->annots, "z"), &fl->annots[1]);
    assert_null(tir_annots_find(fl->nannots, fl->annots, "q"));
    assert_int_equal(tir_intrin_lookup("tanh", 4), TIR_INTRIN_TANH);
    assert_int_equal(tir_intrin_lookup("nope", 4), TIR_INTRIN_COUNT);
    assert_string_equal(tir_kind_name(TIR_KIND_BLOCK_REALIZE), "BlockRealize");
}

/* A small loop nest over C[i,j] = A[i,j] * 2 built with fresh variables. */
static const tir_stmt *make_nest(tir_ctx *ctx, const tir_buffer *A, const tir_buffer *C,
                                 const char *iname) {
    const tir_var *i = tir_var_new(ctx, iname, TIR_I32);
    const tir_var *j = tir_var_new(ctx, "j", TIR_I32);
    const tir_expr *idx[] = {&i->base, &j->base};
    const tir_expr *val = tir_mul(ctx, tir_load(ctx, A, 2, idx), tir_f32(ctx, 2.0));
    const tir_stmt *st = tir_store(ctx, C, val, 2, idx);
    st = tir_for_new(ctx, j, tir_i32(ctx, 0), tir_i32(ctx, 8), TIR_FOR_SERIAL, NULL, 0, NULL, st);
    return tir_for_new(ctx, i, tir_i32(ctx, 0), tir_i32(ctx, 8), TIR_FOR_SERIAL, NULL, 0, NULL,
                       st);
}

static void test_struct_equal(void **st) {
    tir_ctx *ctx = *st;
    int64_t shape[] = {8, 8};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 2, shape, TIR_SCOPE_GLOBAL);
    const tir_buffer *C = tir_buffer_simple(ctx, "C", TIR_F32, 2, shape, TIR_SCOPE_GLOBAL);
    const tir_buffer *A2 = tir_buffer_simple(ctx, "A_other_name", TIR_F32, 2, shape,
                                             TIR_SCOPE_GLOBAL);
    const tir_stmt *n1 = make_nest(ctx, A, C, "i");
    const tir_stmt *n2 = make_nest(ctx, A, C, "ii"); /* renamed vars */
    assert_true(tir_struct_equal(n1, n2));
    assert_int_equal(tir_struct_hash(n1), tir_struct_hash(n2));
    /* buffers are compared up to renaming as well */
    const tir_stmt *n3 = make_nest(ctx, A2, C, "i");
    assert_true(tir_struct_equal(n1, n3));
    /* but the pairing must be consistent: A and C both mapped to A breaks it */
    const tir_stmt *n4 = make_nest(ctx, A, A, "i");
    char why[256];
    assert_false(tir_struct_equal_explain(n1, n4, why, sizeof why));
    assert_non_null(strstr(why, "paired"));
    /* a changed constant is found with a path */
    const tir_for *f = tir_as_tir_for(n1);
    const tir_stmt *n5 = tir_for_new(ctx, f->var, f->min, tir_i32(ctx, 9), f->kind, NULL, 0,
                                     NULL, f->body);
    assert_false(tir_struct_equal_explain(n1, n5, why, sizeof why));
    assert_non_null(strstr(why, "extent"));
    assert_non_null(strstr(why, "[8 vs 9]"));
    assert_int_not_equal(tir_struct_hash(n1), tir_struct_hash(n5));
    /* x + x vs x + y: bijection */
    const tir_var *x = tir_var_new(ctx, "x", TIR_I32), *y = tir_var_new(ctx, "y", TIR_I32);
    const tir_expr *xx = tir_add(ctx, &x->base, &x->base);
    const tir_expr *xy = tir_add(ctx, &x->base, &y->base);
    assert_false(tir_struct_equal(xx, xy));
    assert_false(tir_struct_equal(xy, xx));
    assert_int_not_equal(tir_struct_hash(xx), tir_struct_hash(xy));
    /* dtype matters */
    assert_false(tir_struct_equal(tir_i32(ctx, 1), tir_int(ctx, TIR_I64, 1)));
    assert_false(tir_struct_equal(tir_f32(ctx, 0.0), tir_f32(ctx, -0.0)));
}

static int count_calls;
static const tir_node *count_var(tir_mutator *m, const tir_node *n) {
    (void)m;
    count_calls++;
    return n;
}

static void test_mutator_and_substitute(void **st) {
    tir_ctx *ctx = *st;
    int64_t shape[] = {8, 8};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 2, shape, TIR_SCOPE_GLOBAL);
    const tir_buffer *C = tir_buffer_simple(ctx, "C", TIR_F32, 2, shape, TIR_SCOPE_GLOBAL);
    const tir_stmt *n1 = make_nest(ctx, A, C, "i");
    /* identity mutation returns the same pointer */
    tir_mutator m = {.ctx = ctx};
    m.on[TIR_KIND_VAR] = count_var;
    count_calls = 0;
    assert_ptr_equal(tir_mutate(&m, n1), n1);
    assert_int_equal(count_calls, 4); /* uses only: i, j in load and in store */
    /* substitute j -> 3: the outer for is rebuilt, the loop extent shared */
    const tir_for *fi = tir_as_tir_for(n1);
    const tir_for *fj = tir_as_tir_for(fi->body);
    const tir_expr *three = tir_i32(ctx, 3);
    const tir_stmt *r = (const tir_stmt *)tir_substitute(ctx, n1, 1, &fj->var, &three);
    assert_ptr_not_equal(r, n1);
    const tir_for *ri = tir_as_tir_for(r);
    assert_ptr_equal(ri->extent, fi->extent);
    assert_ptr_equal(ri->var, fi->var);
    const tir_buffer_store *store = tir_as_tir_buffer_store(tir_as_tir_for(ri->body)->body);
    assert_ptr_equal(store->indices[1], three);
    assert_ptr_equal(store->indices[0], &fi->var->base);
    assert_true(tir_uses_var(n1, fj->var));
    assert_false(tir_uses_var(store, fj->var));
    assert_true(tir_reads_buffer(n1));           /* the nest loads A */
    assert_true(tir_reads_buffer(store->value));
    assert_false(tir_reads_buffer(store->indices[0]));
    assert_false(tir_reads_buffer(fi->extent));
    /* replace buffers */
    const tir_buffer *B = tir_buffer_simple(ctx, "B", TIR_F32, 2, shape, TIR_SCOPE_SHARED);
    const tir_stmt *rb = (const tir_stmt *)tir_replace_buffers(ctx, n1, 1, &A, &B);
    const tir_buffer_store *s2 =
        tir_as_tir_buffer_store(tir_as_tir_for(tir_as_tir_for(rb)->body)->body);
    const tir_binop *mul = tir_as_tir_binop(s2->value);
    assert_ptr_equal(tir_as_tir_buffer_load(mul->a)->buffer, B);
    assert_ptr_equal(s2->buffer, C);
    /* substituting a var that does not occur changes nothing */
    const tir_var *z = tir_var_new(ctx, "z", TIR_I32);
    assert_ptr_equal(tir_substitute(ctx, n1, 1, &z, &three), (const tir_node *)n1);
}

static void test_block_roundtrip(void **st) {
    tir_ctx *ctx = *st;
    int64_t shape[] = {4};
    const tir_buffer *A = tir_buffer_simple(ctx, "A", TIR_F32, 1, shape, TIR_SCOPE_GLOBAL);
    const tir_var *vi = tir_var_new(ctx, "vi", TIR_I32);
    tir_iter_var iv = {vi, {tir_i32(ctx, 0), tir_i32(ctx, 4)}, TIR_ITER_SPATIAL};
    const tir_expr *idx[] = {&vi->base};
    tir_range rg = {&vi->base, tir_i32(ctx, 1)};
    tir_buffer_region w = tir_region_new(ctx, A, 1, &rg);
    tir_block_desc d = {.name = "B", .niters = 1, .iters = &iv, .nwrites = 1, .writes = &w,
                        .body = tir_store(ctx, A, tir_f32(ctx, 1.0), 1, idx)};
    const tir_block *b = tir_block_new(ctx, &d);
    tir_block_desc d2;
    tir_block_describe(b, &d2);
    const tir_block *b2 = tir_block_new(ctx, &d2);
    assert_true(tir_struct_equal(b, b2));
    const tir_var *i = tir_var_new(ctx, "i", TIR_I32);
    const tir_expr *vals[] = {&i->base};
    const tir_stmt *br = tir_block_realize_new(ctx, 1, vals, NULL, b);
    assert_int_equal(tir_as_tir_int_imm(tir_as_tir_block_realize(br)->predicate)->value, 1);
    tir_buffer_region full = tir_region_full(ctx, A);
    assert_int_equal(full.ndim, 1);
    assert_ptr_equal(full.ranges[0].extent, A->shape[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_intern_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_constructors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_struct_equal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutator_and_substitute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_block_roundtrip, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
