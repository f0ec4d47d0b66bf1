/* Tests of the TE layer and the ready definitions: the structure of what
 * tir_te_create_prim_func builds (root block and its allocs, loop nests,
 * block names, iter kinds and names, T.reads / T.writes regions, init
 * statements and reducer identities, dtypes) and its errors. */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

/* ------------------------------------------------------------- helpers */

static const tir_block *root_block(const tir_prim_func *f) {
    const tir_block_realize *r = tir_as_tir_block_realize(f->body);
    assert_non_null(r);
    assert_int_equal(r->nvalues, 0);
    assert_string_equal(r->block->name, "root");
    assert_int_equal(r->block->niters, 0);
    assert_null(r->block->init);
    return r->block;
}

/* The stages under the root block, in order. */
static int stages(const tir_prim_func *f, const tir_stmt **out, int max) {
    const tir_block *root = root_block(f);
    const tir_seq *q = tir_as_tir_seq(root->body);
    if (!q) {
        out[0] = root->body;
        return 1;
    }
    assert_true(q->n <= max);
    for (int i = 0; i < q->n; i++) out[i] = q->stmts[i];
    return q->n;
}

/* Walks a stage's loop nest, checking loop names, extents and kinds, and
 * returns the BlockRealize inside. */
static const tir_block_realize *stage_nest(const tir_stmt *s, int n, const char *const *names,
                                           const int64_t *extents, const tir_var **loops) {
    for (int i = 0; i < n; i++) {
        const tir_for *f = tir_as_tir_for(s);
        assert_non_null(f);
        assert_string_equal(f->var->name, names[i]);
        int64_t v;
        assert_true(tir_expr_const_int(f->min, &v));
        assert_int_equal(v, 0);
        assert_true(tir_expr_const_int(f->extent, &v));
        assert_int_equal(v, extents[i]);
        assert_int_equal(f->kind, TIR_FOR_SERIAL);
        if (loops) loops[i] = f->var;
        s = f->body;
    }
    const tir_block_realize *r = tir_as_tir_block_realize(s);
    assert_non_null(r);
    return r;
}

/* Checks the block's iters: "v"+name, kinds from a string of 'S' / 'R',
 * domains [0, extent), bindings = the loop vars. */
static void check_iters(const tir_block_realize *r, const char *kinds, const char *const *names,
                        const int64_t *extents, const tir_var *const *loops) {
    const tir_block *b = r->block;
    int n = (int)strlen(kinds);
    assert_int_equal(b->niters, n);
    assert_int_equal(r->nvalues, n);
    for (int i = 0; i < n; i++) {
        char want[32];
        snprintf(want, sizeof want, "v%s", names[i]);
        assert_string_equal(b->iters[i].var->name, want);
        assert_int_equal(b->iters[i].kind, kinds[i] == 'R' ? TIR_ITER_REDUCE : TIR_ITER_SPATIAL);
        int64_t v;
        assert_true(tir_expr_const_int(b->iters[i].dom.min, &v));
        assert_int_equal(v, 0);
        assert_true(tir_expr_const_int(b->iters[i].dom.extent, &v));
        assert_int_equal(v, extents[i]);
        assert_ptr_equal(r->values[i], &loops[i]->base);
    }
    int64_t p;
    assert_true(tir_expr_const_int(r->predicate, &p));
    assert_int_equal(p, 1);
}

static const tir_expr *iv(const tir_block *b, int i) { return &b->iters[i].var->base; }

/* Region r is buffer `name` with unit-extent ranges at exactly `mins`. */
static void check_unit_region(const tir_buffer_region *r, const char *name, int n,
                              const tir_expr *const *mins) {
    assert_string_equal(r->buffer->name, name);
    assert_int_equal(r->ndim, n);
    for (int d = 0; d < n; d++) {
        assert_ptr_equal(r->ranges[d].min, mins[d]);
        int64_t e;
        assert_true(tir_expr_const_int(r->ranges[d].extent, &e));
        assert_int_equal(e, 1);
    }
}

/* store is buffer[iters...] with the block's first n iter vars. */
static const tir_buffer_store *check_store_at_iters(const tir_stmt *s, const tir_block *b,
                                                    const char *buf, int n) {
    const tir_buffer_store *st = tir_as_tir_buffer_store(s);
    assert_non_null(st);
    assert_string_equal(st->buffer->name, buf);
    assert_int_equal(st->nidx, n);
    for (int i = 0; i < n; i++) assert_ptr_equal(st->indices[i], iv(b, i));
    return st;
}

/* ---------------------------------------------------------------- tests */

static void test_matmul_structure(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = tir_def_matmul(ctx, 16, 12, 8, TIR_F32);
    assert_non_null(f);
    assert_string_equal(f->name, "matmul");
    assert_int_equal(f->nparams, 3);
    const char *pn[3] = {"A", "B", "C"};
    int64_t shapes[3][2] = {{16, 8}, {8, 12}, {16, 12}};
    for (int i = 0; i < 3; i++) {
        assert_string_equal(f->params[i]->name, pn[i]);
        assert_true(tir_dtype_eq(f->params[i]->base.dtype, TIR_HANDLE));
        const tir_buffer *b = f->buffer_map[i];
        assert_string_equal(b->name, pn[i]);
        assert_true(tir_dtype_eq(b->dtype, TIR_F32));
        assert_int_equal(b->ndim, 2);
        for (int d = 0; d < 2; d++) {
            int64_t v;
            assert_true(tir_expr_const_int(b->shape[d], &v));
            assert_int_equal(v, shapes[i][d]);
        }
        assert_null(b->strides);
    }
    assert_non_null(tir_annots_find(f->nattrs, f->attrs, "global_symbol"));
    assert_non_null(tir_annots_find(f->nattrs, f->attrs, "tir.noalias"));

    assert_int_equal(root_block(f)->nallocs, 0);
    const tir_stmt *s[4];
    assert_int_equal(stages(f, s, 4), 1);
    const char *names[3] = {"i", "j", "k"};
    int64_t ext[3] = {16, 12, 8};
    const tir_var *loops[3];
    const tir_block_realize *r = stage_nest(s[0], 3, names, ext, loops);
    const tir_block *b = r->block;
    assert_string_equal(b->name, "C");
    check_iters(r, "SSR", names, ext, loops);

    /* T.reads(A[vi, vk], B[vk, vj]); C (the accumulator) is not listed, as
     * in TVM's create_prim_func. */
    assert_int_equal(b->nreads, 2);
    const tir_expr *ra[2] = {iv(b, 0), iv(b, 2)}, *rb[2] = {iv(b, 2), iv(b, 1)};
    check_unit_region(&b->reads[0], "A", 2, ra);
    check_unit_region(&b->reads[1], "B", 2, rb);
    assert_int_equal(b->nwrites, 1);
    const tir_expr *wc[2] = {iv(b, 0), iv(b, 1)};
    check_unit_region(&b->writes[0], "C", 2, wc);
    assert_int_equal(b->nallocs, 0);

    /* init: C[vi, vj] = 0f */
    assert_non_null(b->init);
    const tir_buffer_store *init = check_store_at_iters(b->init, b, "C", 2);
    const tir_float_imm *zero = tir_as_tir_float_imm(init->value);
    assert_non_null(zero);
    assert_true(zero->value == 0.0);
    assert_true(tir_dtype_eq(zero->base.dtype, TIR_F32));

    /* body: C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj] */
    const tir_buffer_store *upd = check_store_at_iters(b->body, b, "C", 2);
    const tir_binop *add = tir_as_tir_binop(upd->value);
    assert_non_null(add);
    assert_int_equal(add->base.kind, TIR_KIND_ADD);
    const tir_buffer_load *acc = tir_as_tir_buffer_load(add->a);
    assert_non_null(acc);
    assert_ptr_equal(acc->buffer, f->buffer_map[2]);
    assert_ptr_equal(acc->indices[0], iv(b, 0));
    assert_ptr_equal(acc->indices[1], iv(b, 1));
    const tir_binop *mul = tir_as_tir_binop(add->b);
    assert_non_null(mul);
    assert_int_equal(mul->base.kind, TIR_KIND_MUL);
    const tir_buffer_load *la = tir_as_tir_buffer_load(mul->a), *lb = tir_as_tir_buffer_load(mul->b);
    assert_non_null(la);
    assert_non_null(lb);
    assert_ptr_equal(la->buffer, f->buffer_map[0]);
    assert_ptr_equal(lb->buffer, f->buffer_map[1]);
    assert_ptr_equal(la->indices[1], iv(b, 2));
    assert_ptr_equal(lb->indices[0], iv(b, 2));
}

static void test_matmul_nt_and_batch(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = tir_def_matmul_nt(ctx, 5, 7, 3, TIR_F16);
    assert_non_null(f);
    int64_t v;
    assert_true(tir_expr_const_int(f->buffer_map[1]->shape[0], &v));
    assert_int_equal(v, 7); /* B is [N, K] */
    const tir_stmt *s[2];
    assert_int_equal(stages(f, s, 2), 1);
    const char *names[3] = {"i", "j", "k"};
    int64_t ext[3] = {5, 7, 3};
    const tir_var *loops[3];
    const tir_block *b = stage_nest(s[0], 3, names, ext, loops)->block;
    const tir_expr *rb[2] = {iv(b, 1), iv(b, 2)}; /* B[vj, vk] */
    check_unit_region(&b->reads[1], "B", 2, rb);

    f = tir_def_batch_matmul(ctx, 2, 5, 7, 3, TIR_I32);
    assert_non_null(f);
    assert_int_equal(stages(f, s, 2), 1);
    const char *bn[4] = {"b", "i", "j", "k"};
    int64_t be[4] = {2, 5, 7, 3};
    const tir_var *bl[4];
    const tir_block_realize *r = stage_nest(s[0], 4, bn, be, bl);
    check_iters(r, "SSSR", bn, be, bl);
    b = r->block;
    assert_string_equal(b->name, "C");
    const tir_expr *ra[3] = {iv(b, 0), iv(b, 1), iv(b, 3)};
    const tir_expr *rbb[3] = {iv(b, 0), iv(b, 3), iv(b, 2)};
    check_unit_region(&b->reads[0], "A", 3, ra);
    check_unit_region(&b->reads[1], "B", 3, rbb);
    const tir_int_imm *z = tir_as_tir_int_imm(tir_as_tir_buffer_store(b->init)->value);
    assert_non_null(z);
    assert_int_equal(z->value, 0);
    assert_true(tir_dtype_eq(z->base.dtype, TIR_I32));
}

static void test_matmul_bias_relu_structure(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = tir_def_matmul_bias_relu(ctx, 4, 6, 5, TIR_F32);
    assert_non_null(f);
    assert_int_equal(f->nparams, 4);
    const char *pn[4] = {"A", "B", "bias", "D"};
    for (int i = 0; i < 4; i++) assert_string_equal(f->buffer_map[i]->name, pn[i]);
    assert_int_equal(f->buffer_map[2]->ndim, 1);
    const tir_block *root = root_block(f);
    assert_int_equal(root->nallocs, 1);
    assert_string_equal(root->allocs[0]->name, "C");
    const tir_stmt *s[4];
    assert_int_equal(stages(f, s, 4), 2);
    const char *names[3] = {"i", "j", "k"};
    int64_t ext[3] = {4, 6, 5};
    const tir_var *loops[3];
    const tir_block_realize *rc = stage_nest(s[0], 3, names, ext, loops);
    assert_string_equal(rc->block->name, "C");
    assert_ptr_equal(rc->block->writes[0].buffer, root->allocs[0]);
    const tir_block_realize *rd = stage_nest(s[1], 2, names, ext, loops);
    check_iters(rd, "SS", names, ext, loops);
    const tir_block *d = rd->block;
    assert_string_equal(d->name, "D");
    assert_null(d->init);
    assert_int_equal(d->nreads, 2);
    const tir_expr *rcm[2] = {iv(d, 0), iv(d, 1)}, *rbias[1] = {iv(d, 1)};
    check_unit_region(&d->reads[0], "C", 2, rcm);
    check_unit_region(&d->reads[1], "bias", 1, rbias);
    /* D[vi, vj] = T.max(C[vi, vj] + bias[vj], 0f) */
    const tir_buffer_store *ds = check_store_at_iters(d->body, d, "D", 2);
    const tir_binop *mx = tir_as_tir_binop(ds->value);
    assert_non_null(mx);
    assert_int_equal(mx->base.kind, TIR_KIND_MAX);
    assert_int_equal(mx->a->kind, TIR_KIND_ADD);
    assert_non_null(tir_as_tir_float_imm(mx->b));

    f = tir_def_matmul_bias(ctx, 4, 6, 5, TIR_F32);
    assert_non_null(f);
    assert_int_equal(stages(f, s, 4), 2);
    d = stage_nest(s[1], 2, names, ext, loops)->block;
    assert_int_equal(tir_as_tir_buffer_store(d->body)->value->kind, TIR_KIND_ADD);
}

static void test_conv2d_structure(void **st) {
    tir_ctx *ctx = *st;
    /* n=1, c=3, 9x7 input, o=4, 3x3 kernel, stride 2, pad 1: out 5x4 */
    const tir_prim_func *f = tir_def_conv2d_nchw(ctx, 1, 3, 9, 7, 4, 3, 3, 2, 1, TIR_F32);
    assert_non_null(f);
    assert_int_equal(f->nparams, 3);
    assert_string_equal(f->buffer_map[0]->name, "I");
    assert_string_equal(f->buffer_map[1]->name, "W");
    assert_string_equal(f->buffer_map[2]->name, "conv");
    int64_t oshape[4] = {1, 4, 5, 4}, v;
    for (int d = 0; d < 4; d++) {
        assert_true(tir_expr_const_int(f->buffer_map[2]->shape[d], &v));
        assert_int_equal(v, oshape[d]);
    }
    const tir_block *root = root_block(f);
    assert_int_equal(root->nallocs, 1);
    assert_string_equal(root->allocs[0]->name, "pad");
    int64_t pshape[4] = {1, 3, 11, 9};
    for (int d = 0; d < 4; d++) {
        assert_true(tir_expr_const_int(root->allocs[0]->shape[d], &v));
        assert_int_equal(v, pshape[d]);
    }
    const tir_stmt *s[2];
    assert_int_equal(stages(f, s, 2), 2);

    const char *pn[4] = {"n", "c", "h", "w"};
    const tir_var *pl[4];
    const tir_block_realize *rp = stage_nest(s[0], 4, pn, pshape, pl);
    check_iters(rp, "SSSS", pn, pshape, pl);
    const tir_block *p = rp->block;
    assert_string_equal(p->name, "pad");
    assert_null(p->init);
    /* T.reads(I[vn, vc, vh - 1, vw - 1]): the access itself */
    assert_int_equal(p->nreads, 1);
    const tir_buffer_region *ri = &p->reads[0];
    assert_string_equal(ri->buffer->name, "I");
    assert_ptr_equal(ri->ranges[0].min, iv(p, 0));
    assert_ptr_equal(ri->ranges[1].min, iv(p, 1));
    const tir_binop *hm = tir_as_tir_binop(ri->ranges[2].min);
    assert_non_null(hm);
    assert_int_equal(hm->base.kind, TIR_KIND_SUB);
    assert_ptr_equal(hm->a, iv(p, 2));
    assert_true(tir_expr_const_int(hm->b, &v));
    assert_int_equal(v, 1);
    assert_true(tir_expr_const_int(ri->ranges[3].extent, &v));
    assert_int_equal(v, 1);
    const tir_buffer_store *ps = check_store_at_iters(p->body, p, "pad", 4);
    const tir_select *sel = tir_as_tir_select(ps->value);
    assert_non_null(sel);
    assert_non_null(tir_as_tir_buffer_load(sel->t));
    assert_non_null(tir_as_tir_float_imm(sel->f));

    const char *cn[7] = {"n", "o", "y", "x", "rc", "ry", "rx"};
    int64_t ce[7] = {1, 4, 5, 4, 3, 3, 3};
    const tir_var *cl[7];
    const tir_block_realize *rcv = stage_nest(s[1], 7, cn, ce, cl);
    check_iters(rcv, "SSSSRRR", cn, ce, cl);
    const tir_block *c = rcv->block;
    assert_string_equal(c->name, "conv");
    assert_non_null(c->init);
    assert_int_equal(c->nreads, 2);
    assert_string_equal(c->reads[0].buffer->name, "pad");
    assert_string_equal(c->reads[1].buffer->name, "W");
    const tir_expr *rw[4] = {iv(c, 1), iv(c, 4), iv(c, 5), iv(c, 6)};
    check_unit_region(&c->reads[1], "W", 4, rw);
    /* pad[vn, vrc, vy * 2 + vry, vx * 2 + vrx] */
    const tir_binop *yi = tir_as_tir_binop(c->reads[0].ranges[2].min);
    assert_non_null(yi);
    assert_int_equal(yi->base.kind, TIR_KIND_ADD);
    assert_int_equal(yi->a->kind, TIR_KIND_MUL);
    assert_ptr_equal(yi->b, iv(c, 5));

    /* padding 0: a plain copy, no select */
    f = tir_def_conv2d_nchw(ctx, 1, 2, 5, 5, 2, 3, 3, 1, 0, TIR_F32);
    assert_non_null(f);
    assert_int_equal(stages(f, s, 2), 2);
    const tir_stmt *x = s[0];
    while (tir_as_tir_for(x)) x = tir_as_tir_for(x)->body;
    const tir_block *p0 = tir_as_tir_block_realize(x)->block;
    assert_int_equal(tir_as_tir_buffer_store(p0->body)->value->kind, TIR_KIND_BUFFER_LOAD);
}

static void test_elementwise_chain_structure(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = tir_def_elementwise_chain(ctx, 3, 4, TIR_I8);
    assert_non_null(f);
    assert_int_equal(f->nparams, 2);
    assert_string_equal(f->buffer_map[0]->name, "A");
    assert_string_equal(f->buffer_map[1]->name, "D");
    const tir_block *root = root_block(f);
    assert_int_equal(root->nallocs, 2);
    assert_string_equal(root->allocs[0]->name, "B");
    assert_string_equal(root->allocs[1]->name, "C");
    const tir_stmt *s[3];
    assert_int_equal(stages(f, s, 3), 3);
    const char *names[2] = {"i", "j"}, *bn[3] = {"B", "C", "D"}, *in[3] = {"A", "B", "C"};
    const tir_kind ops[3] = {TIR_KIND_MUL, TIR_KIND_ADD, TIR_KIND_MAX};
    const int64_t consts[3] = {2, 1, 0};
    int64_t ext[2] = {3, 4};
    for (int i = 0; i < 3; i++) {
        const tir_var *loops[2];
        const tir_block_realize *r = stage_nest(s[i], 2, names, ext, loops);
        check_iters(r, "SS", names, ext, loops);
        const tir_block *b = r->block;
        assert_string_equal(b->name, bn[i]);
        assert_null(b->init);
        const tir_expr *m[2] = {iv(b, 0), iv(b, 1)};
        assert_int_equal(b->nreads, 1);
        check_unit_region(&b->reads[0], in[i], 2, m);
        check_unit_region(&b->writes[0], bn[i], 2, m);
        const tir_buffer_store *w = check_store_at_iters(b->body, b, bn[i], 2);
        const tir_binop *op = tir_as_tir_binop(w->value);
        assert_non_null(op);
        assert_int_equal(op->base.kind, ops[i]);
        int64_t c;
        assert_true(tir_expr_const_int(op->b, &c));
        assert_int_equal(c, consts[i]);
        assert_true(tir_dtype_eq(op->b->dtype, TIR_I8));
    }
}

/* Every dtype: buffers and the init constant have it. */
static void test_all_dtypes(void **st) {
    tir_ctx *ctx = *st;
    const tir_dtype ts[9] = {TIR_BOOL, TIR_I8, TIR_I32, TIR_I64, TIR_U8,
                             TIR_F16,  TIR_BF16, TIR_F32, TIR_F64};
    for (int i = 0; i < 9; i++) {
        const tir_prim_func *f = tir_def_matmul_bias_relu(ctx, 2, 3, 4, ts[i]);
        assert_non_null(f);
        for (int p = 0; p < 4; p++) assert_true(tir_dtype_eq(f->buffer_map[p]->dtype, ts[i]));
        const tir_block *root = root_block(f);
        assert_true(tir_dtype_eq(root->allocs[0]->dtype, ts[i]));
        const tir_stmt *s[2];
        stages(f, s, 2);
        const tir_stmt *x = s[0];
        while (tir_as_tir_for(x)) x = tir_as_tir_for(x)->body;
        const tir_block *b = tir_as_tir_block_realize(x)->block;
        const tir_expr *init = tir_as_tir_buffer_store(b->init)->value;
        assert_true(tir_dtype_eq(init->dtype, ts[i]));
        int64_t iv0;
        if (tir_dtype_is_float(ts[i]))
            assert_true(tir_as_tir_float_imm(init)->value == 0.0);
        else
            assert_true(tir_expr_const_int(init, &iv0) && iv0 == 0);
        /* bool: the sum is Or, the product And */
        const tir_expr *upd = tir_as_tir_buffer_store(b->body)->value;
        assert_int_equal(upd->kind, tir_dtype_is_bool(ts[i]) ? TIR_KIND_OR : TIR_KIND_ADD);
        assert_int_equal(((const tir_binop *)upd)->b->kind,
                         tir_dtype_is_bool(ts[i]) ? TIR_KIND_AND : TIR_KIND_MUL);
        f = tir_def_conv2d_nchw(ctx, 1, 1, 3, 3, 1, 2, 2, 1, 1, ts[i]);
        assert_non_null(f);
        f = tir_def_elementwise_chain(ctx, 2, 2, ts[i]);
        assert_non_null(f);
        assert_true(tir_dtype_eq(root_block(f)->allocs[1]->dtype, ts[i]));
    }
}

static void test_shape_errors(void **st) {
    tir_ctx *ctx = *st;
    assert_null(tir_def_matmul(ctx, 0, 4, 4, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    assert_non_null(strstr(tir_ctx_error(ctx), "matmul"));
    tir_ctx_clear_error(ctx);
    assert_null(tir_def_matmul_nt(ctx, 4, -1, 4, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    assert_null(tir_def_matmul_bias(ctx, 4, 4, 0, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    assert_null(tir_def_matmul_bias_relu(ctx, -3, 4, 2, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    assert_null(tir_def_batch_matmul(ctx, 0, 4, 4, 4, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    assert_null(tir_def_elementwise_chain(ctx, 4, 0, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    assert_null(tir_def_matmul(ctx, (int64_t)1 << 40, 4, 4, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    /* conv: stride 0, negative padding, kernel larger than the padded input */
    assert_null(tir_def_conv2d_nchw(ctx, 1, 1, 5, 5, 1, 3, 3, 0, 1, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    assert_null(tir_def_conv2d_nchw(ctx, 1, 1, 5, 5, 1, 3, 3, 1, -1, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    assert_null(tir_def_conv2d_nchw(ctx, 1, 1, 2, 2, 1, 5, 5, 1, 1, TIR_F32));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    /* unsupported dtype */
    assert_null(tir_def_matmul(ctx, 2, 2, 2, TIR_DT(TIR_TYPE_INT, 16, 1)));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_TYPE);
    tir_ctx_clear_error(ctx);
}

/* --------------------------------------------------- user-defined stages */

typedef struct stencil {
    tir_te_tensor *A;
} stencil;

/* B[i] = A[i - 1] + A[i] + A[i + 1] over the interior (B has n - 2). */
static const tir_expr *stencil_body(tir_ctx *ctx, const tir_var *const *ax,
                                    const tir_var *const *rx, void *user) {
    (void)rx;
    const stencil *s = user;
    const tir_expr *i = tir_add(ctx, &ax[0]->base, tir_i32(ctx, 1));
    const tir_expr *im = tir_sub(ctx, i, tir_i32(ctx, 1)), *ip = tir_add(ctx, i, tir_i32(ctx, 1));
    return tir_add(ctx, tir_add(ctx, tir_te_at(ctx, s->A, 1, &im), tir_te_at(ctx, s->A, 1, &i)),
                   tir_te_at(ctx, s->A, 1, &ip));
}

static void test_stencil_region(void **st) {
    tir_ctx *ctx = *st;
    int64_t n = 10, m = 8;
    stencil s = {tir_te_placeholder(ctx, "A", TIR_F32, 1, &n)};
    tir_te_tensor *B = tir_te_compute(ctx, "B", 1, &m, stencil_body, &s);
    assert_non_null(B);
    tir_te_tensor *args[2] = {s.A, B};
    const tir_prim_func *f = tir_te_create_prim_func(ctx, "stencil", 2, args);
    assert_non_null(f);
    const tir_stmt *x = root_block(f)->body;
    const tir_for *loop = tir_as_tir_for(x);
    assert_non_null(loop);
    assert_string_equal(loop->var->name, "i");
    const tir_block *b = tir_as_tir_block_realize(loop->body)->block;
    /* A[vi + 1 - 1], A[vi + 1], A[vi + 1 + 1]: one region A[vi : vi + 3] */
    assert_int_equal(b->nreads, 1);
    const tir_range *r = &b->reads[0].ranges[0];
    assert_ptr_equal(r->min, iv(b, 0));
    int64_t e;
    assert_true(tir_expr_const_int(r->extent, &e));
    assert_int_equal(e, 3);

    /* and it runs */
    float a[10], out[8];
    for (int i = 0; i < 10; i++) a[i] = (float)(i * i) * 0.5f;
    tir_arg av[2] = {{a, 0}, {out, 0}};
    assert_int_equal(tir_interp_run(ctx, f, 2, av, NULL), TIR_OK);
    for (int i = 0; i < 8; i++) assert_true(out[i] == (a[i] + a[i + 1]) + a[i + 2]);
}

/* The bfloat16 pattern of a float with at most 8 significant bits. */
static uint16_t bf16_exact(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    assert_int_equal(u & 0xffff, 0);
    return (uint16_t)(u >> 16);
}

/* bfloat16 A, B; float32 C: the products are exact in float32, so the
 * interpreter's result is the float64 sum rounded per addition. */
static void test_matmul_mixed(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = tir_def_matmul_mixed(ctx, 3, 5, 4, TIR_BF16, TIR_F32);
    assert_non_null(f);
    assert_true(tir_dtype_eq(f->buffer_map[0]->dtype, TIR_BF16));
    assert_true(tir_dtype_eq(f->buffer_map[2]->dtype, TIR_F32));
    uint16_t a[12], b[20];
    float fa[12], fb[20], c[15];
    for (int i = 0; i < 12; i++) a[i] = bf16_exact(fa[i] = (float)(i - 5) * 0.375f);
    for (int i = 0; i < 20; i++) b[i] = bf16_exact(fb[i] = (float)(7 - i) * 1.25f);
    tir_arg av[3] = {{a, 0}, {b, 0}, {c, 0}};
    assert_int_equal(tir_interp_run(ctx, f, 3, av, NULL), TIR_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
            float want = 0;
            for (int k = 0; k < 4; k++) want += fa[i * 4 + k] * fb[k * 5 + j];
            assert_true(c[i * 5 + j] == want);
        }
    /* in == acc is the plain matmul */
    assert_true(tir_struct_equal(tir_def_matmul_mixed(ctx, 3, 5, 4, TIR_F32, TIR_F32),
                                 tir_def_matmul(ctx, 3, 5, 4, TIR_F32)));
}

/* Every fragment layout is a bijection between (lane, register) and the
 * tile's elements, and its formulas match the PTX ISA's tables at a few
 * points written out by hand. */
static void test_frag_layouts(void **st) {
    (void)st;
    const struct { tir_scope s; tir_dtype t; int rows, cols, regs; } cases[] = {
        {TIR_SCOPE_FRAG_A, TIR_BF16, 16, 16, 8}, {TIR_SCOPE_FRAG_A, TIR_F16, 16, 16, 8},
        {TIR_SCOPE_FRAG_B, TIR_BF16, 16, 8, 4},  {TIR_SCOPE_FRAG_A, TIR_F32, 16, 8, 4},
        {TIR_SCOPE_FRAG_B, TIR_F32, 8, 8, 2},    {TIR_SCOPE_FRAG_ACC, TIR_F32, 16, 8, 4},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tir_frag_layout l;
        assert_true(tir_frag_layout_of(cases[c].s, cases[c].t, &l));
        assert_int_equal(l.tile_rows, cases[c].rows);
        assert_int_equal(l.tile_cols, cases[c].cols);
        assert_int_equal(l.regs, cases[c].regs);
        assert_int_equal(32 * l.regs, l.tile_rows * l.tile_cols);
        int seen[16][16] = {{0}};
        for (int lane = 0; lane < 32; lane++)
            for (int v = 0; v < l.regs; v++) {
                int r = tir_frag_row(&l, lane, v), col = tir_frag_col(&l, lane, v);
                assert_in_range(r, 0, l.tile_rows - 1);
                assert_in_range(col, 0, l.tile_cols - 1);
                seen[r][col]++;
            }
        for (int r = 0; r < l.tile_rows; r++)
            for (int col = 0; col < l.tile_cols; col++) assert_int_equal(seen[r][col], 1);
    }
    tir_frag_layout a, b, acc, a8;
    assert_true(tir_frag_layout_of(TIR_SCOPE_FRAG_A, TIR_BF16, &a));
    assert_true(tir_frag_layout_of(TIR_SCOPE_FRAG_B, TIR_F16, &b));
    assert_true(tir_frag_layout_of(TIR_SCOPE_FRAG_ACC, TIR_F32, &acc));
    assert_true(tir_frag_layout_of(TIR_SCOPE_FRAG_A, TIR_F32, &a8));
    /* lane 9 (group 2, thread 1): A a5 = (2, 3 + 8); B b3 = (2+1+8, 2); C c2 = (10, 2) */
    assert_int_equal(tir_frag_row(&a, 9, 5), 2);
    assert_int_equal(tir_frag_col(&a, 9, 5), 11);
    assert_int_equal(tir_frag_row(&b, 9, 3), 11);
    assert_int_equal(tir_frag_col(&b, 9, 3), 2);
    assert_int_equal(tir_frag_row(&acc, 9, 2), 10);
    assert_int_equal(tir_frag_col(&acc, 9, 2), 2);
    /* tf32 A a2 = (g, t + 4) */
    assert_int_equal(tir_frag_row(&a8, 9, 2), 2);
    assert_int_equal(tir_frag_col(&a8, 9, 2), 5);
    assert_false(tir_frag_layout_of(TIR_SCOPE_FRAG_ACC, TIR_F16, &a));
    assert_false(tir_frag_layout_of(TIR_SCOPE_SHARED, TIR_F32, &a));
    assert_false(tir_frag_layout_of(TIR_SCOPE_FRAG_A, TIR_I32, &a));
    assert_true(tir_scope_is_frag(TIR_SCOPE_FRAG_B));
    assert_false(tir_scope_is_frag(TIR_SCOPE_LOCAL));
    tir_scope sc;
    assert_true(tir_scope_parse("frag.acc", 8, &sc));
    assert_int_equal(sc, TIR_SCOPE_FRAG_ACC);
}

typedef struct rinfo {
    tir_te_tensor *A;
} rinfo;

static const tir_expr *row_body(tir_ctx *ctx, const tir_var *const *ax, const tir_var *const *rx,
                                void *user) {
    const rinfo *r = user;
    const tir_expr *idx[3] = {&ax[0]->base, &rx[0]->base, &rx[1]->base};
    return tir_te_at(ctx, r->A, 3, idx);
}

static const tir_expr *copy3_body(tir_ctx *ctx, const tir_var *const *ax,
                                  const tir_var *const *rx, void *user) {
    (void)rx;
    const rinfo *r = user;
    const tir_expr *idx[3] = {&ax[0]->base, &ax[1]->base, &ax[2]->base};
    return tir_te_at(ctx, r->A, 3, idx);
}

/* max / min reductions: identities, names of many axes, and the values. */
static void test_reducers(void **st) {
    tir_ctx *ctx = *st;
    int64_t sa[3] = {3, 4, 5}, rex[2] = {4, 5};
    rinfo ri = {tir_te_placeholder(ctx, "A", TIR_F32, 3, sa)};
    tir_te_tensor *mx = tir_te_reduce(ctx, "mx", 1, sa, TIR_TE_MAX, 2, rex, row_body, &ri);
    tir_te_tensor *mn = tir_te_reduce(ctx, "mn", 1, sa, TIR_TE_MIN, 2, rex, row_body, &ri);
    tir_te_tensor *cp = tir_te_compute(ctx, "cp", 3, sa, copy3_body, &ri);
    assert_non_null(mx);
    assert_non_null(mn);
    assert_non_null(cp);
    tir_te_tensor *args[4] = {ri.A, mx, mn, cp};
    const tir_prim_func *f = tir_te_create_prim_func(ctx, "red", 4, args);
    assert_non_null(f);
    const tir_stmt *s[3];
    assert_int_equal(stages(f, s, 3), 3);
    const char *rn[3] = {"i", "k0", "k1"};
    int64_t re[3] = {3, 4, 5};
    const tir_var *loops[3];
    const tir_block_realize *r = stage_nest(s[0], 3, rn, re, loops);
    check_iters(r, "SRR", rn, re, loops);
    const tir_float_imm *id = tir_as_tir_float_imm(tir_as_tir_buffer_store(r->block->init)->value);
    assert_non_null(id);
    assert_true(id->value == -(double)FLT_MAX);
    assert_int_equal(tir_as_tir_buffer_store(r->block->body)->value->kind, TIR_KIND_MAX);
    r = stage_nest(s[1], 3, rn, re, loops);
    id = tir_as_tir_float_imm(tir_as_tir_buffer_store(r->block->init)->value);
    assert_true(id->value == (double)FLT_MAX);
    assert_int_equal(tir_as_tir_buffer_store(r->block->body)->value->kind, TIR_KIND_MIN);
    const char *cn[3] = {"i0", "i1", "i2"};
    r = stage_nest(s[2], 3, cn, sa, loops);
    check_iters(r, "SSS", cn, sa, loops);

    float a[60], omx[3], omn[3], ocp[60];
    for (int i = 0; i < 60; i++) a[i] = (float)((i * 37) % 23) - 11.5f;
    tir_arg av[4] = {{a, 0}, {omx, 0}, {omn, 0}, {ocp, 0}};
    tir_interp_opts o = {.uninit_params = 0xe};
    assert_int_equal(tir_interp_run(ctx, f, 4, av, &o), TIR_OK);
    for (int i = 0; i < 3; i++) {
        float x = -FLT_MAX, y = FLT_MAX;
        for (int j = 0; j < 20; j++) {
            x = a[i * 20 + j] > x ? a[i * 20 + j] : x;
            y = a[i * 20 + j] < y ? a[i * 20 + j] : y;
        }
        assert_true(omx[i] == x);
        assert_true(omn[i] == y);
    }
    assert_memory_equal(a, ocp, sizeof a);

    /* integer and bool identities */
    rinfo r8 = {tir_te_placeholder(ctx, "A8", TIR_I8, 3, sa)};
    tir_te_tensor *m8 = tir_te_reduce(ctx, "m8", 1, sa, TIR_TE_MAX, 2, rex, row_body, &r8);
    tir_te_tensor *a8[2] = {r8.A, m8};
    f = tir_te_create_prim_func(ctx, "m8", 2, a8);
    assert_non_null(f);
    assert_int_equal(stages(f, s, 3), 1);
    r = stage_nest(s[0], 3, rn, re, loops);
    int64_t v;
    assert_true(tir_expr_const_int(tir_as_tir_buffer_store(r->block->init)->value, &v));
    assert_int_equal(v, -128);
    rinfo rb = {tir_te_placeholder(ctx, "Ab", TIR_BOOL, 3, sa)};
    tir_te_tensor *all = tir_te_reduce(ctx, "all", 1, sa, TIR_TE_MIN, 2, rex, row_body, &rb);
    tir_te_tensor *ab[2] = {rb.A, all};
    f = tir_te_create_prim_func(ctx, "all", 2, ab);
    assert_non_null(f);
    stages(f, s, 3);
    r = stage_nest(s[0], 3, rn, re, loops);
    assert_true(tir_expr_const_int(tir_as_tir_buffer_store(r->block->init)->value, &v));
    assert_int_equal(v, 1);
    assert_int_equal(tir_as_tir_buffer_store(r->block->body)->value->kind, TIR_KIND_AND);
}

static const tir_expr *bad_rank_body(tir_ctx *ctx, const tir_var *const *ax,
                                     const tir_var *const *rx, void *user) {
    (void)rx;
    const rinfo *r = user;
    const tir_expr *idx[1] = {&ax[0]->base};
    return tir_te_at(ctx, r->A, 1, idx); /* A has rank 3 */
}

static void test_te_errors(void **st) {
    tir_ctx *ctx = *st;
    int64_t sa[3] = {3, 4, 5}, bad[2] = {3, 0};
    assert_null(tir_te_placeholder(ctx, "P", TIR_F32, 2, bad));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);

    rinfo ri = {tir_te_placeholder(ctx, "A", TIR_F32, 3, sa)};
    assert_null(tir_te_compute(ctx, "X", 1, sa, bad_rank_body, &ri));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    assert_non_null(strstr(tir_ctx_error(ctx), "rank 3"));
    tir_ctx_clear_error(ctx);

    assert_null(tir_te_compute(ctx, "X", 2, bad, copy3_body, &ri));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);
    int64_t rex = 0;
    assert_null(tir_te_reduce(ctx, "R", 1, sa, TIR_TE_SUM, 1, &rex, row_body, &ri));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_SHAPE);
    tir_ctx_clear_error(ctx);

    /* a stage reading a placeholder that is not an argument */
    tir_te_tensor *cp = tir_te_compute(ctx, "cp", 3, sa, copy3_body, &ri);
    assert_non_null(cp);
    tir_te_tensor *args[1] = {cp};
    assert_null(tir_te_create_prim_func(ctx, "f", 1, args));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "'A'"));
    assert_non_null(strstr(tir_ctx_error(ctx), "neither an argument nor computed"));
    tir_ctx_clear_error(ctx);

    /* a tensor passed twice */
    tir_te_tensor *twice[3] = {ri.A, cp, cp};
    assert_null(tir_te_create_prim_func(ctx, "f", 3, twice));
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_INVALID_ARG);
    tir_ctx_clear_error(ctx);

    /* an intermediate compute (not an argument) becomes a root alloc */
    rinfo r2 = {cp};
    tir_te_tensor *cp2 = tir_te_compute(ctx, "cp2", 3, sa, copy3_body, &r2);
    tir_te_tensor *chain[2] = {ri.A, cp2};
    const tir_prim_func *f = tir_te_create_prim_func(ctx, "chain", 2, chain);
    assert_non_null(f);
    assert_int_equal(root_block(f)->nallocs, 1);
    assert_ptr_equal(root_block(f)->allocs[0], tir_te_buffer(cp));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matmul_structure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_nt_and_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_bias_relu_structure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conv2d_structure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_elementwise_chain_structure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shape_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stencil_region, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reducers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_te_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_mixed, setup, teardown),
        cmocka_unit_test(test_frag_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
