/* Tests of tir_verify: a well-formed reduction function passes, and each
 * check has a function that breaks exactly it, whose message must name the
 * offending variable, buffer or block. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/ir.h"

static tir_ctx *C;

#define V(v) (&(v)->base)
#define I(c) tir_i32(C, (c))

static int setup(void **st) {
    (void)st;
    C = tir_ctx_create();
    return C ? 0 : -1;
}
static int teardown(void **st) {
    (void)st;
    tir_ctx_destroy(C);
    return 0;
}

/* The pieces of B[i] = sum_k A[i, k] that the tests take apart. */
typedef struct parts {
    const tir_var *pa, *pb;
    const tir_buffer *A, *B;
    const tir_var *i, *k, *vi, *vk;
    tir_iter_var iters[2];
    tir_buffer_region reads[2], writes[1];
} parts;

static void make_parts(parts *p) {
    int64_t sa[2] = {16, 16}, sb[1] = {16};
    p->pa = tir_var_new(C, "a", TIR_HANDLE);
    p->pb = tir_var_new(C, "b", TIR_HANDLE);
    p->A = tir_buffer_simple(C, "A", TIR_F32, 2, sa, TIR_SCOPE_GLOBAL);
    p->B = tir_buffer_simple(C, "B", TIR_F32, 1, sb, TIR_SCOPE_GLOBAL);
    p->i = tir_var_new(C, "i", TIR_I32);
    p->k = tir_var_new(C, "k", TIR_I32);
    p->vi = tir_var_new(C, "vi", TIR_I32);
    p->vk = tir_var_new(C, "vk", TIR_I32);
    p->iters[0] = (tir_iter_var){p->vi, {I(0), I(16)}, TIR_ITER_SPATIAL};
    p->iters[1] = (tir_iter_var){p->vk, {I(0), I(16)}, TIR_ITER_REDUCE};
    tir_range ra[2] = {{V(p->vi), I(1)}, {V(p->vk), I(1)}}, rb[1] = {{V(p->vi), I(1)}};
    p->reads[0] = tir_region_new(C, p->A, 2, ra);
    p->reads[1] = tir_region_new(C, p->B, 1, rb);
    p->writes[0] = tir_region_new(C, p->B, 1, rb);
}

static const tir_stmt *update_of(const parts *p) {
    const tir_expr *ia[2] = {V(p->vi), V(p->vk)}, *ib[1] = {V(p->vi)};
    const tir_expr *v = tir_add(C, tir_load(C, p->B, 1, ib), tir_load(C, p->A, 2, ia));
    return tir_store(C, p->B, v, 1, ib);
}

static const tir_stmt *init_of(const parts *p) {
    const tir_expr *ib[1] = {V(p->vi)};
    return tir_store(C, p->B, tir_f32(C, 0.0), 1, ib);
}

static const tir_block *block_of(const parts *p, const tir_stmt *init, const tir_stmt *body) {
    tir_block_desc d = {.name = "red", .niters = 2, .iters = p->iters, .nreads = 2,
                        .reads = p->reads, .nwrites = 1, .writes = p->writes,
                        .init = init, .body = body};
    return tir_block_new(C, &d);
}

/* for i, k: block red(vi = i, vk = k) inside a root block with allocs. */
static const tir_prim_func *func_of(const parts *p, const tir_block *blk, int nallocs,
                                    const tir_buffer *const *allocs) {
    const tir_expr *vals[2] = {V(p->i), V(p->k)};
    const tir_stmt *real = tir_block_realize_new(C, 2, vals, NULL, blk);
    const tir_stmt *loops = tir_for_new(
        C, p->i, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL,
        tir_for_new(C, p->k, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL, real));
    tir_block_desc rd = {.name = "root", .body = loops, .nallocs = nallocs, .allocs = allocs};
    const tir_stmt *root = tir_block_realize_new(C, 0, NULL, NULL, tir_block_new(C, &rd));
    const tir_var *params[2] = {p->pa, p->pb};
    const tir_buffer *bm[2] = {p->A, p->B};
    return tir_prim_func_new(C, "reduce", 2, params, bm, root, 0, NULL);
}

/* Expects TIR_ERR_VERIFY with every one of the words in the message. */
static void expect_error(const tir_prim_func *f, const char *w1, const char *w2) {
    tir_ctx_clear_error(C);
    tir_status s = tir_verify(C, f);
    const char *msg = tir_ctx_error(C);
    if (s != TIR_ERR_VERIFY || !strstr(msg, w1) || (w2 && !strstr(msg, w2)))
        fail_msg("status %s, message \"%s\"; wanted \"%s\" and \"%s\"", tir_status_name(s), msg,
                 w1, w2 ? w2 : "");
}

static void test_well_formed(void **st) {
    (void)st;
    parts p;
    make_parts(&p);
    assert_int_equal(tir_verify(C, func_of(&p, block_of(&p, init_of(&p), update_of(&p)), 0, NULL)),
                     TIR_OK);
    /* an update without init is a reduction too (after decompose_reduction) */
    assert_int_equal(tir_verify(C, func_of(&p, block_of(&p, NULL, update_of(&p)), 0, NULL)),
                     TIR_OK);
    /* a buffer shape variable is defined by its parameter buffer; a buffer
       allocated by the root block is visible in the blocks inside it */
    const tir_var *m = tir_var_new(C, "m", TIR_I32);
    const tir_expr *shape[1] = {V(m)};
    tir_buffer_desc bd = {.name = "D", .dtype = TIR_F32, .ndim = 1, .shape = shape};
    const tir_buffer *D = tir_buffer_new(C, &bd);
    int64_t st1[1] = {16};
    const tir_buffer *T = tir_buffer_simple(C, "T", TIR_F32, 1, st1, TIR_SCOPE_LOCAL);
    const tir_expr *idx[1] = {tir_sub(C, V(m), I(1))}, *ti[1] = {V(p.vi)};
    const tir_stmt *body = tir_seq_new(
        C, 2,
        (const tir_stmt *[]){tir_store(C, T, tir_load(C, D, 1, idx), 1, ti), update_of(&p)});
    const tir_block *blk = block_of(&p, init_of(&p), body);
    const tir_expr *vals[2] = {V(p.i), V(p.k)};
    const tir_stmt *loops = tir_for_new(
        C, p.i, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL,
        tir_for_new(C, p.k, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL,
                    tir_block_realize_new(C, 2, vals, NULL, blk)));
    tir_block_desc rd = {.name = "root", .body = loops, .nallocs = 1,
                         .allocs = (const tir_buffer *[]){T}};
    const tir_stmt *root = tir_block_realize_new(C, 0, NULL, NULL, tir_block_new(C, &rd));
    const tir_var *params[3] = {p.pa, p.pb, tir_var_new(C, "d", TIR_HANDLE)};
    const tir_buffer *bm[3] = {p.A, p.B, D};
    const tir_prim_func *f = tir_prim_func_new(C, "dyn", 3, params, bm, root, 0, NULL);
    if (tir_verify(C, f) != TIR_OK) fail_msg("%s", tir_ctx_error(C));
    /* a let variable is in scope in its body */
    const tir_var *lv = tir_var_new(C, "t", TIR_I32);
    const tir_expr *li[1] = {tir_let_new(C, lv, V(p.vi), V(lv))};
    const tir_stmt *ls = tir_store(C, p.B, tir_f32(C, 1.0), 1, li);
    tir_iter_var it1 = p.iters[0];
    tir_block_desc d1 = {.name = "let", .niters = 1, .iters = &it1, .body = ls};
    const tir_expr *v1[1] = {V(p.i)};
    const tir_stmt *r1 = tir_for_new(C, p.i, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL,
                                     tir_block_realize_new(C, 1, v1, NULL, tir_block_new(C, &d1)));
    f = tir_prim_func_new(C, "let", 2, params, bm, r1, 0, NULL);
    if (tir_verify(C, f) != TIR_OK) fail_msg("%s", tir_ctx_error(C));
}

static void test_undefined_var(void **st) {
    (void)st;
    parts p;
    make_parts(&p);
    const tir_var *q = tir_var_new(C, "q", TIR_I32);
    const tir_expr *ib[1] = {tir_add(C, V(p.vi), V(q))};
    const tir_stmt *bad = tir_store(C, p.B, tir_f32(C, 0.0), 1, ib);
    const tir_stmt *body = tir_seq_new(C, 2, (const tir_stmt *[]){bad, update_of(&p)});
    expect_error(func_of(&p, block_of(&p, init_of(&p), body), 0, NULL), "variable 'q'",
                 "block \"red\"");
}

static void test_var_out_of_scope(void **st) {
    (void)st;
    parts p;
    make_parts(&p);
    /* the loop var i used after its loop, in a sibling loop */
    const tir_var *j = tir_var_new(C, "j", TIR_I32);
    const tir_expr *ib[1] = {V(p.i)};
    const tir_stmt *first = tir_for_new(C, p.i, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL,
                                        tir_store(C, p.B, tir_f32(C, 0.0), 1, ib));
    const tir_stmt *second = tir_for_new(C, j, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL,
                                         tir_store(C, p.B, tir_f32(C, 1.0), 1, ib));
    tir_block_desc rd = {.name = "root",
                         .body = tir_seq_new(C, 2, (const tir_stmt *[]){first, second})};
    const tir_stmt *root = tir_block_realize_new(C, 0, NULL, NULL, tir_block_new(C, &rd));
    const tir_var *params[2] = {p.pa, p.pb};
    const tir_buffer *bm[2] = {p.A, p.B};
    expect_error(tir_prim_func_new(C, "f", 2, params, bm, root, 0, NULL), "variable 'i'",
                 "under loop j");
    /* a block iter var is not visible in its own binding */
    const tir_expr *vals[2] = {V(p.vi), V(p.k)};
    const tir_stmt *real =
        tir_block_realize_new(C, 2, vals, NULL, block_of(&p, init_of(&p), update_of(&p)));
    const tir_stmt *loops = tir_for_new(
        C, p.i, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL,
        tir_for_new(C, p.k, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL, real));
    expect_error(tir_prim_func_new(C, "g", 2, params, bm, loops, 0, NULL), "variable 'vi'",
                 "under loops i, k");
}

static void test_shadowed_var(void **st) {
    (void)st;
    parts p;
    make_parts(&p);
    const tir_expr *ib[1] = {V(p.i)};
    const tir_stmt *inner = tir_for_new(C, p.i, I(0), I(4), TIR_FOR_SERIAL, NULL, 0, NULL,
                                        tir_store(C, p.B, tir_f32(C, 0.0), 1, ib));
    const tir_stmt *outer = tir_for_new(C, p.i, I(0), I(4), TIR_FOR_SERIAL, NULL, 0, NULL, inner);
    const tir_var *params[2] = {p.pa, p.pb};
    const tir_buffer *bm[2] = {p.A, p.B};
    expect_error(tir_prim_func_new(C, "f", 2, params, bm, outer, 0, NULL), "loop variable 'i'",
                 "defined again");
}

static void test_undefined_buffer(void **st) {
    (void)st;
    parts p;
    make_parts(&p);
    int64_t s1[1] = {16};
    const tir_buffer *Z = tir_buffer_simple(C, "Z", TIR_F32, 1, s1, TIR_SCOPE_GLOBAL);
    const tir_expr *ib[1] = {V(p.vi)};
    const tir_stmt *bad = tir_store(C, Z, tir_load(C, p.B, 1, ib), 1, ib);
    const tir_stmt *body = tir_seq_new(C, 2, (const tir_stmt *[]){update_of(&p), bad});
    expect_error(func_of(&p, block_of(&p, init_of(&p), body), 0, NULL), "buffer 'Z'",
                 "block \"red\"");
    /* a buffer allocated by a block is not visible outside it */
    const tir_buffer *T = tir_buffer_simple(C, "T", TIR_F32, 1, s1, TIR_SCOPE_LOCAL);
    tir_block_desc inner = {.name = "owner", .body = tir_store(C, T, tir_f32(C, 0.0), 1, ib),
                            .nallocs = 1, .allocs = (const tir_buffer *[]){T},
                            .niters = 1, .iters = p.iters};
    const tir_expr *v1[1] = {V(p.i)};
    const tir_stmt *use = tir_store(C, p.B, tir_load(C, T, 1, v1), 1, v1);
    const tir_stmt *seq = tir_seq_new(
        C, 2,
        (const tir_stmt *[]){tir_block_realize_new(C, 1, v1, NULL, tir_block_new(C, &inner)), use});
    const tir_stmt *loop = tir_for_new(C, p.i, I(0), I(16), TIR_FOR_SERIAL, NULL, 0, NULL, seq);
    const tir_var *params[2] = {p.pa, p.pb};
    const tir_buffer *bm[2] = {p.A, p.B};
    expect_error(tir_prim_func_new(C, "f", 2, params, bm, loop, 0, NULL), "buffer 'T'",
                 "loaded");
    /* a region naming an unknown buffer */
    tir_buffer_region zr = tir_region_full(C, Z);
    tir_block_desc d = {.name = "regions", .niters = 2, .iters = p.iters, .nreads = 1,
                        .reads = &zr, .nwrites = 1, .writes = p.writes,
                        .init = init_of(&p), .body = update_of(&p)};
    expect_error(func_of(&p, tir_block_new(C, &d), 0, NULL), "buffer 'Z'", "read region");
    /* an Allocate shape may only use variables in scope */
    const tir_var *m = tir_var_new(C, "m", TIR_I32);
    const tir_expr *shape[1] = {V(m)};
    tir_buffer_desc bd = {.name = "S", .dtype = TIR_F32, .ndim = 1, .shape = shape};
    const tir_stmt *al = tir_allocate_new(C, tir_buffer_new(C, &bd), tir_evaluate_new(C, I(0)));
    expect_error(tir_prim_func_new(C, "f", 2, params, bm, al, 0, NULL), "variable 'm'", NULL);
}

static void test_index_rank(void **st) {
    (void)st;
    parts p;
    make_parts(&p);
    const tir_expr *ib[1] = {V(p.vi)};
    /* A is 2-d, loaded with one index */
    const tir_stmt *bad =
        tir_store(C, p.B, tir_add(C, tir_load(C, p.B, 1, ib), tir_load(C, p.A, 1, ib)), 1, ib);
    expect_error(func_of(&p, block_of(&p, init_of(&p), bad), 0, NULL), "buffer 'A'",
                 "1 indices but has 2 dimensions");
    /* B is 1-d, stored with two indices */
    const tir_expr *two[2] = {V(p.vi), V(p.vk)};
    const tir_stmt *bad2 = tir_store(C, p.B, tir_add(C, tir_load(C, p.B, 1, ib), tir_f32(C, 1.0)),
                                     2, two);
    expect_error(func_of(&p, block_of(&p, init_of(&p), bad2), 0, NULL), "buffer 'B'",
                 "stored to with 2 indices");
    /* a write region with the wrong rank */
    tir_range r2[2] = {{V(p.vi), I(1)}, {I(0), I(1)}};
    tir_buffer_region wr = tir_region_new(C, p.B, 2, r2);
    tir_block_desc d = {.name = "red", .niters = 2, .iters = p.iters, .nreads = 2,
                        .reads = p.reads, .nwrites = 1, .writes = &wr,
                        .init = init_of(&p), .body = update_of(&p)};
    expect_error(func_of(&p, tir_block_new(C, &d), 0, NULL), "write region of buffer 'B'",
                 "2 ranges");
}

static void test_binding_mismatch(void **st) {
    (void)st;
    parts p;
    make_parts(&p);
    const tir_prim_func *f = func_of(&p, block_of(&p, init_of(&p), update_of(&p)), 0, NULL);
    /* constructors refuse these, so break a built function by hand */
    const tir_block_realize *root = tir_as_tir_block_realize(f->body);
    const tir_for *li = tir_as_tir_for(root->block->body);
    const tir_for *lk = tir_as_tir_for(li->body);
    tir_block_realize *real = (tir_block_realize *)tir_as_tir_block_realize(lk->body);
    assert_non_null(real);
    const tir_expr *const *good = real->values;
    const tir_expr *wide[2] = {tir_cast_new(C, TIR_I64, V(p.i)), V(p.k)};
    real->values = wide;
    expect_error(f, "iter var 'vi' is int32", "int64");
    real->values = good;
    real->nvalues = 1;
    expect_error(f, "block \"red\" has 2 iter vars", "1 values");
    real->nvalues = 2;
    assert_int_equal(tir_verify(C, f), TIR_OK);
}

static void test_reduce_without_init(void **st) {
    (void)st;
    parts p;
    make_parts(&p);
    /* B[vi] = A[vi, vk] with vk a reduce iter: neither init nor update */
    const tir_expr *ia[2] = {V(p.vi), V(p.vk)}, *ib[1] = {V(p.vi)};
    const tir_stmt *body = tir_store(C, p.B, tir_load(C, p.A, 2, ia), 1, ib);
    expect_error(func_of(&p, block_of(&p, NULL, body), 0, NULL), "block \"red\"",
                 "reduction iter var 'vk'");
    /* reading B at another index is not an update of B[vi] */
    const tir_expr *other[1] = {tir_add(C, V(p.vi), I(1))};
    const tir_stmt *body2 = tir_store(
        C, p.B, tir_add(C, tir_load(C, p.B, 1, other), tir_load(C, p.A, 2, ia)), 1, ib);
    expect_error(func_of(&p, block_of(&p, NULL, body2), 0, NULL), "reduction iter var 'vk'",
                 NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_well_formed),      cmocka_unit_test(test_undefined_var),
        cmocka_unit_test(test_var_out_of_scope), cmocka_unit_test(test_shadowed_var),
        cmocka_unit_test(test_undefined_buffer), cmocka_unit_test(test_index_rank),
        cmocka_unit_test(test_binding_mismatch), cmocka_unit_test(test_reduce_without_init),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
