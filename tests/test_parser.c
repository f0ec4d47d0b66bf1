/* Tests of the TVMScript-style parser: parse(print(f)) is structurally
 * equal to f and print(parse(t)) == t for the hand-built samples; text a
 * TVM user writes (comments, range, elif, 2-space indents, implicit root,
 * list shapes) parses to the expected IR and canonical text; ranges,
 * scopes and signatures follow the documented rules; floats survive
 * bit-exactly; every file of the bad corpus (tests/data/bad) fails with
 * its expected "line:col: message" and status. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/ir.h"
#include "text_samples.h"

static int setup(void **st) {
    *st = tir_ctx_create();
    return *st ? 0 : -1;
}
static int teardown(void **st) {
    tir_ctx_destroy(*st);
    return 0;
}

static const tir_prim_func *parse_ok(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    tir_status s = tir_parse_func(ctx, text, strlen(text), &f);
    if (s != TIR_OK) print_error("parse failed: %s\n%s", tir_ctx_error(ctx), text);
    assert_int_equal(s, TIR_OK);
    assert_non_null(f);
    return f;
}

/* Parses, expects failure with code and a message starting with want. */
static void parse_bad(tir_ctx *ctx, const char *text, size_t len, tir_status code,
                      const char *want) {
    const tir_prim_func *f = (const tir_prim_func *)ctx; /* must be reset */
    tir_status s = tir_parse_func(ctx, text, len, &f);
    if (s != code || strncmp(tir_ctx_error(ctx), want, strlen(want)) != 0)
        print_error("want %s '%s'\n got %s '%s'\n", tir_status_name(code), want,
                    tir_status_name(s), tir_ctx_error(ctx));
    assert_int_equal(s, code);
    assert_null(f);
    assert_int_equal(strncmp(tir_ctx_error(ctx), want, strlen(want)), 0);
}

static void expect_roundtrip(tir_ctx *ctx, const tir_prim_func *f) {
    const char *t = tir_print(ctx, f);
    const tir_prim_func *g = parse_ok(ctx, t);
    char why[512];
    if (!tir_struct_equal_explain(f, g, why, sizeof why)) print_error("%s\n%s", why, t);
    assert_true(tir_struct_equal(f, g));
    assert_string_equal(tir_print(ctx, g), t);
}

/* ---------------------------------------------------------------- roundtrip */

static void test_roundtrip_samples(void **st) {
    tir_ctx *ctx = *st;
    for (int i = 0; i < ts_nsamples; i++) expect_roundtrip(ctx, ts_samples[i].build(ctx));
}

/* The parsed matmul has the shape the constructors gave it. */
static void test_parsed_structure(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = parse_ok(ctx, tir_print(ctx, ts_matmul(ctx)));
    assert_string_equal(f->name, "matmul");
    assert_int_equal(f->nparams, 3);
    for (int i = 0; i < 3; i++) {
        assert_true(tir_dtype_eq(f->params[i]->base.dtype, TIR_HANDLE));
        assert_non_null(f->buffer_map[i]);
        assert_int_equal(f->buffer_map[i]->ndim, 2);
    }
    const tir_block_realize *root = tir_as_tir_block_realize(f->body);
    assert_non_null(root);
    assert_string_equal(root->block->name, "root");
    const tir_for *fi = tir_as_tir_for(root->block->body);
    const tir_for *fj = tir_as_tir_for(fi->body);
    const tir_for *fk = tir_as_tir_for(fj->body);
    assert_non_null(fk);
    const tir_block_realize *br = tir_as_tir_block_realize(fk->body);
    const tir_block *b = br->block;
    assert_int_equal(b->niters, 3);
    assert_int_equal(b->iters[2].kind, TIR_ITER_REDUCE);
    /* remap: bound to the loop vars over the loops' own domains */
    assert_ptr_equal(br->values[0], &fi->var->base);
    assert_ptr_equal(br->values[2], &fk->var->base);
    assert_ptr_equal(b->iters[1].dom.extent, fj->extent);
    assert_non_null(b->init);
    assert_int_equal(b->nreads, 2);
    assert_ptr_equal(b->reads[1].buffer, f->buffer_map[1]);
    const tir_buffer_store *upd = tir_as_tir_buffer_store(b->body);
    assert_ptr_equal(upd->buffer, f->buffer_map[2]);
    assert_int_equal(upd->value->kind, TIR_KIND_ADD);
    assert_ptr_equal(upd->indices[0], &b->iters[0].var->base);
}

/* ------------------------------------------------------------- user text */

static void test_user_text_add_one(void **st) {
    tir_ctx *ctx = *st;
    const char *src =
        "# written by hand\n"
        "from tvm.script import tir as T\n"
        "\n"
        "@T.prim_func\n"
        "def add_one(A: T.Buffer((16, 16), \"float32\"), B: T.Buffer((16, 16), 'float32')) -> None:\n"
        "  T.func_attr({\"global_symbol\": \"add_one\", \"tir.noalias\": True})\n"
        "\n"
        "  for i, j in T.grid(16, 16):   # a comment\n"
        "    with T.block(\"B\"):\n"
        "      vi, vj = T.axis.remap(\"SS\", [i, j])\n"
        "      T.reads(A[vi, vj])\n"
        "      T.writes(B[vi, vj])\n"
        "      B[vi, vj] = A[vi, vj] + 1.0\n";
    const char *canon =
        "@T.prim_func\n"
        "def add_one(A: T.Buffer((16, 16), \"float32\"), B: T.Buffer((16, 16), \"float32\")):\n"
        "    T.func_attr({\"global_symbol\": \"add_one\", \"tir.noalias\": 1})\n"
        "    for i, j in T.grid(16, 16):\n"
        "        with T.block(\"B\"):\n"
        "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
        "            T.reads(A[vi, vj])\n"
        "            T.writes(B[vi, vj])\n"
        "            B[vi, vj] = A[vi, vj] + T.float32(1)\n";
    const tir_prim_func *f = parse_ok(ctx, src);
    /* the body with blocks got its implicit root block */
    const tir_block_realize *root = tir_as_tir_block_realize(f->body);
    assert_non_null(root);
    assert_string_equal(root->block->name, "root");
    assert_int_equal(root->block->niters, 0);
    assert_non_null(tir_as_tir_for(root->block->body));
    const tir_annot *a = tir_annots_find(f->nattrs, f->attrs, "tir.noalias");
    assert_non_null(a);
    assert_int_equal(a->i, 1);
    assert_string_equal(tir_print(ctx, f), canon);
    assert_true(tir_struct_equal(f, parse_ok(ctx, canon)));
    expect_roundtrip(ctx, f);
}

static void test_user_text_variants(void **st) {
    tir_ctx *ctx = *st;
    const char *src =
        "@T.prim_func\n"
        "def g(A: T.Buffer([8], \"int32\"), n: T.int32):\n"
        "    for i in range(8):\n"
        "        if i < 2:\n"
        "            A[i] = -i\n"
        "        elif i < 4:\n"
        "            A[i] = T.floordiv(i, 2) + T.floormod(i, 3)\n"
        "        else:\n"
        "            A[i] = T.truncdiv(-7, 2)\n"
        "    for t in T.thread_binding(32, thread=\"threadIdx.x\"):\n"
        "        X = T.allocate([4], \"int32\", \"local\")\n"
        "        X[0] = t\n"
        "        A[0] = X[0]\n"
        "    with T.block(\"b\"):\n"
        "        vi = T.axis.S(8, n)\n"
        "        T.reads([A[0:8]])\n"
        "        T.writes(A[:])\n"
        "        A[vi] = T.Cast(\"int32\", T.Cast(\"float32\", vi) / T.float32(2))\n";
    const char *canon =
        "@T.prim_func\n"
        "def g(A: T.Buffer((8,), \"int32\"), n: T.int32):\n"
        "    for i in T.serial(8):\n"
        "        if i < 2:\n"
        "            A[i] = 0 - i\n"
        "        else:\n"
        "            if i < 4:\n"
        "                A[i] = i // 2 + i % 3\n"
        "            else:\n"
        "                A[i] = T.truncdiv(-7, 2)\n"
        "    for t in T.thread_binding(0, 32, thread=\"threadIdx.x\"):\n"
        "        X = T.allocate((4,), \"int32\", scope=\"local\")\n"
        "        X[0] = t\n"
        "        A[0] = X[0]\n"
        "    with T.block(\"b\"):\n"
        "        vi = T.axis.spatial(8, n)\n"
        "        T.reads(A[0:8])\n"
        "        T.writes(A[0:8])\n"
        "        A[vi] = T.Cast(\"int32\", T.Cast(\"float32\", vi) / T.float32(2))\n";
    const tir_prim_func *f = parse_ok(ctx, src);
    assert_string_equal(tir_print(ctx, f), canon);
    const tir_block *root = tir_as_tir_block_realize(f->body)->block;
    const tir_seq *q = tir_as_tir_seq(root->body);
    assert_int_equal(q->n, 3);
    /* elif is a nested If in the else branch */
    const tir_if *ifs = tir_as_tir_if(tir_as_tir_for(q->stmts[0])->body);
    assert_non_null(tir_as_tir_if(ifs->else_s));
    /* unary minus on a variable is 0 - i */
    const tir_buffer_store *neg = tir_as_tir_buffer_store(ifs->then_s);
    assert_int_equal(neg->value->kind, TIR_KIND_SUB);
    /* the concise allocate took the rest of the suite as its body */
    const tir_for *tf = tir_as_tir_for(q->stmts[1]);
    assert_int_equal(tf->kind, TIR_FOR_THREAD_BINDING);
    assert_string_equal(tf->thread_tag, "threadIdx.x");
    const tir_allocate *al = tir_as_tir_allocate(tf->body);
    assert_non_null(al);
    assert_int_equal(al->buffer->scope, TIR_SCOPE_LOCAL);
    assert_int_equal(tir_as_tir_seq(al->body)->n, 2);
    /* A[:] covers the whole dimension */
    const tir_block *b = tir_as_tir_block_realize(q->stmts[2])->block;
    int64_t v;
    assert_true(tir_expr_const_int(b->writes[0].ranges[0].min, &v) && v == 0);
    assert_true(tir_expr_const_int(b->writes[0].ranges[0].extent, &v) && v == 8);
    expect_roundtrip(ctx, parse_ok(ctx, canon));
}

/* (start, stop) -> (min, extent) per the documented rules. */
static void test_range_inverse(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = parse_ok(
        ctx,
        "@T.prim_func\n"
        "def r(A: T.Buffer((64,), \"float32\"), m: T.int32, n: T.int32):\n"
        "    for i in T.serial(m, m + n):\n"
        "        A[i] = T.float32(0)\n"
        "    for j in T.serial(2, 10):\n"
        "        A[j] = T.float32(0)\n"
        "    for k in T.serial(0, n):\n"
        "        A[k] = T.float32(0)\n"
        "    for l in T.serial(m, n):\n"
        "        A[l] = T.float32(0)\n");
    const tir_seq *q = tir_as_tir_seq(f->body);
    assert_int_equal(q->n, 4);
    const tir_expr *m = &f->params[1]->base, *n = &f->params[2]->base;
    const tir_for *l0 = tir_as_tir_for(q->stmts[0]), *l1 = tir_as_tir_for(q->stmts[1]),
                  *l2 = tir_as_tir_for(q->stmts[2]), *l3 = tir_as_tir_for(q->stmts[3]);
    assert_ptr_equal(l0->min, m);
    assert_ptr_equal(l0->extent, n);
    int64_t v;
    assert_true(tir_expr_const_int(l1->min, &v) && v == 2);
    assert_true(tir_expr_const_int(l1->extent, &v) && v == 8);
    assert_ptr_equal(l2->extent, n);
    const tir_binop *sub = tir_as_tir_binop(l3->extent);
    assert_int_equal(l3->extent->kind, TIR_KIND_SUB);
    assert_ptr_equal(sub->a, n);
    assert_ptr_equal(sub->b, m);
    assert_string_equal(tir_print(ctx, f),
                        "@T.prim_func\n"
                        "def r(A: T.Buffer((64,), \"float32\"), m: T.int32, n: T.int32):\n"
                        "    for i in T.serial(m, m + n):\n"
                        "        A[i] = T.float32(0)\n"
                        "    for j in T.serial(2, 10):\n"
                        "        A[j] = T.float32(0)\n"
                        "    for k in T.serial(n):\n"
                        "        A[k] = T.float32(0)\n"
                        "    for l in T.serial(m, m + (n - m)):\n"
                        "        A[l] = T.float32(0)\n");
    expect_roundtrip(ctx, f);
}

/* Every definition is a fresh object scoped to its suite. */
static void test_scopes(void **st) {
    tir_ctx *ctx = *st;
    const char *src =
        "@T.prim_func\n"
        "def s(A: T.Buffer((4,), \"float32\")):\n"
        "    for i in T.serial(4):\n"
        "        A[i] = T.float32(0)\n"
        "    for i in T.serial(4):\n"
        "        for i in T.serial(2):\n"
        "            A[i] = T.float32(1)\n";
    const tir_prim_func *f = parse_ok(ctx, src);
    const tir_seq *q = tir_as_tir_seq(f->body);
    const tir_for *a = tir_as_tir_for(q->stmts[0]), *b = tir_as_tir_for(q->stmts[1]);
    const tir_for *c = tir_as_tir_for(b->body);
    assert_ptr_not_equal(a->var, b->var);
    assert_ptr_not_equal(b->var, c->var);
    /* the store in the inner loop uses the inner i */
    assert_ptr_equal(tir_as_tir_buffer_store(c->body)->indices[0], &c->var->base);
    assert_string_equal(tir_print(ctx, f),
                        "@T.prim_func\n"
                        "def s(A: T.Buffer((4,), \"float32\")):\n"
                        "    for i in T.serial(4):\n"
                        "        A[i] = T.float32(0)\n"
                        "    for i_1, i_2 in T.grid(4, 2):\n"
                        "        A[i_2] = T.float32(1)\n");
    expect_roundtrip(ctx, f);
    /* a loop variable is gone after its loop */
    const char *after =
        "@T.prim_func\n"
        "def s(A: T.Buffer((4,), \"float32\")):\n"
        "    for i in T.serial(4):\n"
        "        A[i] = T.float32(0)\n"
        "    A[i] = T.float32(1)\n";
    parse_bad(ctx, after, strlen(after), TIR_ERR_PARSE, "5:7: name 'i' is not defined");
}

/* Scalars used in shapes before their declaration, implicit shape
 * variables (int32 bare, others through T.var), handles. */
static void test_signatures(void **st) {
    tir_ctx *ctx = *st;
    const tir_prim_func *f = parse_ok(
        ctx,
        "@T.prim_func\n"
        "def sig(A: T.Buffer((n, k), \"float32\"), B: T.Buffer((T.var(\"int64\", \"m\"), k), \"int8\"), n: T.int32, p: T.handle):\n"
        "    T.evaluate(0)\n");
    assert_int_equal(f->nparams, 4);
    const tir_buffer *A = f->buffer_map[0], *B = f->buffer_map[1];
    assert_ptr_equal(A->shape[0], &f->params[2]->base); /* n: the later parameter */
    const tir_var *k = tir_as_tir_var(A->shape[1]);
    assert_non_null(k);
    assert_true(tir_dtype_eq(k->base.dtype, TIR_I32));
    assert_ptr_equal(B->shape[1], A->shape[1]); /* the same implicit k */
    assert_true(tir_dtype_eq(B->shape[0]->dtype, TIR_I64));
    assert_null(f->buffer_map[3]);
    assert_true(tir_dtype_eq(f->params[3]->base.dtype, TIR_HANDLE));
    expect_roundtrip(ctx, f);
}

/* Float immediates read back bit for bit, including NaN payloads. */
static void test_float_bits(void **st) {
    tir_ctx *ctx = *st;
    int64_t sh[1] = {256};
    const tir_buffer *D = tir_buffer_simple(ctx, "D", TIR_F64, 1, sh, TIR_SCOPE_GLOBAL);
    const tir_var *pd = tir_var_new(ctx, "D", TIR_HANDLE);
    const tir_stmt *st_[256];
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 256; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        uint64_t bits = s;
        if (i % 4 == 1) bits &= 0x800fffffffffffffull;            /* subnormal or zero */
        if (i % 4 == 2) bits |= 0x7ff0000000000000ull;            /* inf or NaN */
        if (i % 8 == 3) bits = (bits & 0xbfffffffffffffffull);    /* small exponent */
        double v;
        memcpy(&v, &bits, sizeof v);
        const tir_expr *idx = tir_i32(ctx, i);
        st_[i] = tir_store(ctx, D, tir_float(ctx, TIR_F64, v), 1, &idx);
    }
    const tir_prim_func *f = tir_prim_func_new(ctx, "floats", 1, &pd, &D, tir_seq_new(ctx, 256, st_), 0, NULL);
    expect_roundtrip(ctx, f);
}

/* -------------------------------------------------------------- bad input */

static char *read_file(const char *path, size_t *len) {
    *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf) buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* Each file starts with "# expect: <message>" and "# status: ERR_X". */
static void test_bad_corpus(void **st) {
    tir_ctx *ctx = *st;
    const char *data = getenv("MINITIR_TEST_DATA");
    assert_non_null(data);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bad", data);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        if (nl < 5 || strcmp(e->d_name + nl - 4, ".tir") != 0) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = 0;
        char *text = read_file(path, &len);
        assert_non_null(text);
        char want[512] = "", status[64] = "";
        const char *l2 = strchr(text, '\n');
        assert_true(strncmp(text, "# expect: ", 10) == 0 && l2);
        snprintf(want, sizeof want, "%.*s", (int)(l2 - text - 10), text + 10);
        assert_int_equal(sscanf(l2 + 1, "# status: %63s", status), 1);
        tir_status code = strcmp(status, "ERR_TYPE") == 0 ? TIR_ERR_TYPE : TIR_ERR_PARSE;
        assert_true(strcmp(status, "ERR_TYPE") == 0 || strcmp(status, "ERR_PARSE") == 0);
        const tir_prim_func *f = NULL;
        tir_status s = tir_parse_func(ctx, text, len, &f);
        if (s != code || strcmp(tir_ctx_error(ctx), want) != 0)
            print_error("%s: want %s '%s'\n got %s '%s'\n", e->d_name, status, want,
                        tir_status_name(s), tir_ctx_error(ctx));
        assert_int_equal(s, code);
        assert_null(f);
        assert_string_equal(tir_ctx_error(ctx), want);
        free(text);
        count++;
    }
    closedir(d);
    assert_true(count >= 40);
}

static void test_input_edges(void **st) {
    tir_ctx *ctx = *st;
    parse_bad(ctx, NULL, 0, TIR_ERR_PARSE, "1:1: expected '@T.prim_func'");
    parse_bad(ctx, "", 0, TIR_ERR_PARSE, "1:1: expected '@T.prim_func'");
    /* len bounds the text: no terminating NUL is needed */
    const char *good = "@T.prim_func\ndef f():\n    T.evaluate(0)\n";
    size_t n = strlen(good);
    char *exact = malloc(n);
    memcpy(exact, good, n);
    const tir_prim_func *f = NULL;
    assert_int_equal(tir_parse_func(ctx, exact, n, &f), TIR_OK);
    assert_int_equal(f->nparams, 0);
    /* a cut in the middle of a line is an error at the cut */
    parse_bad(ctx, exact, n - 3, TIR_ERR_PARSE, "3:16: expected an expression, got end of line");
    free(exact);
    /* an embedded NUL byte */
    const char nul[] = "@T.prim_func\ndef f():\n    T.evaluate(0)\0\n";
    parse_bad(ctx, nul, sizeof nul - 1, TIR_ERR_PARSE, "3:18: unexpected byte 0x00");
    /* CRLF line ends and a missing final newline are fine */
    parse_ok(ctx, "@T.prim_func\r\ndef f():\r\n    T.evaluate(0)");
    /* errors leave the context usable */
    assert_int_equal(tir_ctx_error_code(ctx), TIR_ERR_PARSE);
    parse_ok(ctx, good);
    /* long input */
    size_t cap = 64 * 5000 + 256, len = 0;
    char *big = malloc(cap);
    len += (size_t)snprintf(big + len, cap - len, "@T.prim_func\ndef big(A: T.Buffer((5000,), \"int32\")):\n");
    for (int i = 0; i < 5000; i++) len += (size_t)snprintf(big + len, cap - len, "    A[%d] = %d * %d\n", i, i, i);
    f = NULL;
    assert_int_equal(tir_parse_func(ctx, big, len, &f), TIR_OK);
    assert_int_equal(tir_as_tir_seq(f->body)->n, 5000);
    free(big);
}

/* Type errors are caught before the asserting constructors run. */
/* T.allocate takes annotations= (lowering carries storage_align on the
 * Allocate that way); they are on the node, printed back, and part of
 * structural equality.  Buffer parameters take none. */
static void test_allocate_annotations(void **st) {
    tir_ctx *ctx = *st;
    const char *text =
        "@T.prim_func\n"
        "def f(A: T.Buffer((4,), \"int32\")):\n"
        "    for t in T.thread_binding(0, 4, thread=\"threadIdx.x\"):\n"
        "        with T.allocate((2, 4), \"int32\", scope=\"local\", "
        "annotations={\"x\": 1}) as Y:\n"
        "            Y[0, t] = t\n"
        "        X = T.allocate((2, 4), \"int32\", scope=\"local\", "
        "annotations={\"dim_align\": [0, 8, 1]})\n"
        "        X[0, t] = t\n"
        "        A[t] = X[0, t]\n";
    const tir_prim_func *f = parse_ok(ctx, text);
    assert_string_equal(tir_print(ctx, f), text);
    expect_roundtrip(ctx, f);
    const tir_seq *q = tir_as_tir_seq(tir_as_tir_for(f->body)->body);
    assert_non_null(q);
    const tir_allocate *y = tir_as_tir_allocate(q->stmts[0]), *x = tir_as_tir_allocate(q->stmts[1]);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(y->nannots, 1);
    assert_int_equal(y->annots[0].i, 1);
    const tir_annot *al = tir_annots_find(x->nannots, x->annots, "dim_align");
    assert_non_null(al);
    assert_int_equal(al->kind, TIR_ANNOT_INTS);
    assert_int_equal(al->nints, 3);
    assert_int_equal(al->ints[1], 8);
    /* the same without the annotations is another function */
    const tir_stmt *bare = tir_allocate_new(ctx, x->buffer, x->body);
    assert_false(tir_struct_equal(bare, x));
    assert_true(tir_struct_equal(
        tir_allocate_annotated(ctx, x->buffer, x->nannots, x->annots, x->body), x));
    assert_int_not_equal(tir_struct_hash(bare), tir_struct_hash(x));

    const char *param =
        "@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\", annotations={\"x\": 1})):\n"
        "    A[0] = 1\n";
    parse_bad(ctx, param, strlen(param), TIR_ERR_PARSE,
              "2:34: unknown buffer argument 'annotations'");
    const char *twice = "@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n"
                        "    X = T.allocate((4,), \"int32\", annotations={}, annotations={})\n"
                        "    A[0] = X[0]\n";
    parse_bad(ctx, twice, strlen(twice), TIR_ERR_PARSE, "3:51: argument 'annotations' given twice");
}

static void test_type_errors(void **st) {
    tir_ctx *ctx = *st;
    struct {
        const char *stmt;
        tir_status code;
        const char *msg;
    } cases[] = {
        {"A[0] = T.float32(1) + T.float16(1)", TIR_ERR_TYPE, "3:25: operand types differ: float32 + float16"},
        {"A[0] = T.Select(True, T.float32(1), T.float32(2)) + n", TIR_ERR_TYPE, "3:55: operand types differ: float32 + int32"},
        {"A[T.float32(0)] = T.float32(1)", TIR_ERR_TYPE, "3:5: index 0 of 'A' must be an integer, got float32"},
        {"A[T.Ramp(0, 1, 4)] = T.float32(1)", TIR_ERR_TYPE, "3:24: cannot store float32 into 'A' (needs float32x4)"},
        {"A[0] = T.Ramp(T.float32(0), 1, 4)", TIR_ERR_TYPE, "3:14: T.Ramp start and stride differ"},
        {"A[0] = T.Broadcast(T.Broadcast(T.float32(1), 2), 2)", TIR_ERR_TYPE, "3:14: T.Broadcast needs a scalar"},
        {"A[0] = T.exp(T.float32(1), T.float16(1))", TIR_ERR_PARSE, "3:14: T.exp takes 1 argument"},
        {"T.cp_async(T.address_of(A[0]), T.address_of(A[1]))", TIR_ERR_PARSE, "3:7: T.cp_async takes 3 arguments (or 4), got 2"},
        {"A[0] = T.fma(T.float32(1), T.float16(1), T.float32(1))", TIR_ERR_TYPE, "3:14: arguments of T.fma differ"},
        {"A[0] = T.Select(n, T.float32(1), T.float32(2))", TIR_ERR_TYPE, "3:14: T.Select condition must be bool"},
        {"A[0] = T.Select(T.Broadcast(True, 2), T.Broadcast(T.float32(1), 4), T.Broadcast(T.float32(1), 4))", TIR_ERR_TYPE, "3:14: T.Select condition has 2 lanes"},
        {"A[0] = T.float32(n < 1 and T.float32(1))", TIR_ERR_TYPE, "3:28: operand types differ: bool and float32"},
        {"if T.Broadcast(True, 4):\n        T.evaluate(0)", TIR_ERR_TYPE, "3:5: 'if' condition must be bool, got boolx4"},
        {"A[0] = T.Not(n)", TIR_ERR_TYPE, "3:14: operand of T.Not must be bool"},
        {"A[0] = T.Cast(\"float32\", T.Broadcast(n, 2))", TIR_ERR_TYPE, "3:19: cannot cast int32x2 to float32"},
        {"for i in T.serial(n, T.int64(4)):\n        T.evaluate(0)", TIR_ERR_TYPE, "3:22: loop bounds differ in type"},
        {"with T.block(\"b\"):\n        vi = T.axis.spatial(4, T.float32(0))\n        T.evaluate(0)", TIR_ERR_TYPE, "4:32: iterator bindings must be integers"},
        {"A[0] = T.min(n, T.int64(1))", TIR_ERR_TYPE, "3:14: operand types differ: int32 T.min int64"},
        {"A[0] = T.float32(T.handle(0))", TIR_ERR_PARSE, "3:24: there are no handle values"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\"), n: T.int32):\n    %s\n", cases[i].stmt);
        parse_bad(ctx, text, strlen(text), cases[i].code, cases[i].msg);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_samples, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parsed_structure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocate_annotations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_text_add_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_text_variants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_range_inverse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scopes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signatures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_float_bits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_corpus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_type_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
