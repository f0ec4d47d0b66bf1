/* sched_block_util.h: small helpers of the tests of cache_read,
 * cache_write, compute_at, reverse_compute_at and the inlines: parsing a
 * hand-written function, and golden text checks. */
#ifndef MINITIR_TESTS_SCHED_BLOCK_UTIL_H
#define MINITIR_TESTS_SCHED_BLOCK_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_check.h"

static inline const tir_prim_func *blk_parse(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK) {
        fprintf(stderr, "parse: %s\n", tir_ctx_error(ctx));
        return NULL;
    }
    return f;
}

/* sched_expect_text; with MINITIR_DUMP_GOLDEN=dir set, writes the text to
 * dir/<name>.txt instead (to refresh goldens after a deliberate change). */
static inline void blk_expect_text(tir_schedule *s, const char *golden, const char *name) {
    const char *dir = getenv("MINITIR_DUMP_GOLDEN");
    if (dir) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.txt", dir, name);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(tir_print(tir_sched_ctx(s), tir_sched_func(s)), f);
            fclose(f);
        }
        return;
    }
    sched_expect_text(s, golden);
}

/* A loop of block `name` by position. */
static inline tir_loop_rv blk_loop(tir_schedule *s, const char *name, int i) {
    tir_loop_rv l[16];
    int n = sched_loops(s, name, l);
    if (i < 0) i += n;
    return l[i];
}

/* Hand-written functions with the shapes the ready definitions lack.
 * Element blocks over 6 x 5 float32 unless noted. */
#define BLK_HDR(name, params) "@T.prim_func\ndef " name "(" params "):\n    with T.block(\"root\"):\n"
#define BLK_BUF "T.Buffer((6, 5), \"float32\")"
#define BLK_ELEM(blk, i, j, reads, writes, body)                                          \
    "        for " i ", " j " in T.grid(6, 5):\n"                                      \
    "            with T.block(\"" blk "\"):\n"                                          \
    "                vi, vj = T.axis.remap(\"SS\", [" i ", " j "])\n"                   \
    "                T.reads(" reads ")\n"                                              \
    "                T.writes(" writes ")\n"                                            \
    "                " body "\n"

/* B = A * 2, read by C = B + 1 and by D = B * A. */
static const char blk_two_readers[] =
    BLK_HDR("two_readers", "A: " BLK_BUF ", C: " BLK_BUF ", D: " BLK_BUF)
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] * T.float32(2)")
    BLK_ELEM("C", "i1", "j1", "B[vi, vj]", "C[vi, vj]", "C[vi, vj] = B[vi, vj] + T.float32(1)")
    BLK_ELEM("D", "i2", "j2", "B[vi, vj], A[vi, vj]", "D[vi, vj]",
            "D[vi, vj] = B[vi, vj] * A[vi, vj]");

/* B written by B1 and then by B2; C = B + 1. */
static const char blk_two_writers[] =
    BLK_HDR("two_writers", "A: " BLK_BUF ", C: " BLK_BUF)
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("B1", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] * T.float32(2)")
    BLK_ELEM("B2", "i1", "j1", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] + T.float32(3)")
    BLK_ELEM("C", "i2", "j2", "B[vi, vj]", "C[vi, vj]", "C[vi, vj] = B[vi, vj] + T.float32(1)");

/* B[vi + 1, vj] = A[vi, vj] (B is 7 x 5); C reads B[vi + 1, vj]. */
static const char blk_shifted[] =
    BLK_HDR("shifted", "A: " BLK_BUF ", C: " BLK_BUF)
    "        B = T.alloc_buffer((7, 5), \"float32\")\n"
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi + 1, vj]", "B[vi + 1, vj] = A[vi, vj]")
    BLK_ELEM("C", "i1", "j1", "B[vi + 1, vj]", "C[vi, vj]", "C[vi, vj] = B[vi + 1, vj] * T.float32(2)");

/* Strided writers, a format: B writes Y[f(vi)] and T writes T0[f(vi)]
 * for vi over n (Y and T0 of len), C reads T0[f(vi)]; the arguments are
 * n, len, n, len, n, f, f, n, f, f, n, f, f (test_sched_cache). */
static const char blk_strided[] =
    "@T.prim_func\n"
    "def strided(X: T.Buffer((%d,), \"float32\"), Y: T.Buffer((%d,), \"float32\"), "
    "Z: T.Buffer((%d,), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        T0 = T.alloc_buffer((%d,), \"float32\")\n"
    "        for i in range(%d):\n"
    "            with T.block(\"B\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(X[vi])\n"
    "                T.writes(Y[%s])\n"
    "                Y[%s] = X[vi] + T.float32(1)\n"
    "        for i in range(%d):\n"
    "            with T.block(\"T\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(X[vi])\n"
    "                T.writes(T0[%s])\n"
    "                T0[%s] = X[vi] * T.float32(3)\n"
    "        for i in range(%d):\n"
    "            with T.block(\"C\"):\n"
    "                vi = T.axis.remap(\"S\", [i])\n"
    "                T.reads(T0[%s])\n"
    "                T.writes(Z[vi])\n"
    "                Z[vi] = T0[%s] + T.float32(1)\n";

/* Block B stores B and E; C = B + E. */
static const char blk_two_stores[] =
    BLK_HDR("two_stores", "A: " BLK_BUF ", C: " BLK_BUF)
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    "        E = T.alloc_buffer((6, 5), \"float32\")\n"
    "        for i, j in T.grid(6, 5):\n"
    "            with T.block(\"B\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(B[vi, vj], E[vi, vj])\n"
    "                B[vi, vj] = A[vi, vj]\n"
    "                E[vi, vj] = A[vi, vj] + T.float32(1)\n"
    BLK_ELEM("C", "i1", "j1", "B[vi, vj], E[vi, vj]", "C[vi, vj]",
            "C[vi, vj] = B[vi, vj] + E[vi, vj]");

/* B (a parameter) = B + A: not complete; C = B * 2. */
static const char blk_incomplete[] =
    BLK_HDR("incomplete", "A: " BLK_BUF ", B: " BLK_BUF ", C: " BLK_BUF)
    BLK_ELEM("B", "i", "j", "B[vi, vj], A[vi, vj]", "B[vi, vj]", "B[vi, vj] = B[vi, vj] + A[vi, vj]")
    BLK_ELEM("C", "i1", "j1", "B[vi, vj]", "C[vi, vj]", "C[vi, vj] = B[vi, vj] * T.float32(2)");

/* B is a parameter: B = A + 1; C = B * 2. */
static const char blk_param_mid[] =
    BLK_HDR("param_mid", "A: " BLK_BUF ", B: " BLK_BUF ", C: " BLK_BUF)
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] + T.float32(1)")
    BLK_ELEM("C", "i1", "j1", "B[vi, vj]", "C[vi, vj]", "C[vi, vj] = B[vi, vj] * T.float32(2)");

/* B = A + 1; C reads B at two places (B[vi, vj] + B[vi, 0]). */
static const char blk_two_loads[] =
    BLK_HDR("two_loads", "A: " BLK_BUF ", C: " BLK_BUF)
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] + T.float32(1)")
    BLK_ELEM("C", "i1", "j1", "B[vi, vj], B[vi, 0]", "C[vi, vj]",
            "C[vi, vj] = B[vi, vj] + B[vi, 0]");

/* B = A + 1, E = A * 3, D = B + E. */
static const char blk_two_producers[] =
    BLK_HDR("two_producers", "A: " BLK_BUF ", D: " BLK_BUF)
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    "        E = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] + T.float32(1)")
    BLK_ELEM("E", "i1", "j1", "A[vi, vj]", "E[vi, vj]", "E[vi, vj] = A[vi, vj] * T.float32(3)")
    BLK_ELEM("D", "i2", "j2", "B[vi, vj], E[vi, vj]", "D[vi, vj]",
            "D[vi, vj] = B[vi, vj] + E[vi, vj]");

/* B = A + 1 over 6 x 5; C (3 x 5) = B over the first 3 rows only. */
static const char blk_subdomain[] =
    BLK_HDR("subdomain", "A: " BLK_BUF ", C: T.Buffer((3, 5), \"float32\")")
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] + T.float32(1)")
    "        for i1, j1 in T.grid(3, 5):\n"
    "            with T.block(\"C\"):\n"
    "                vi, vj = T.axis.remap(\"SS\", [i1, j1])\n"
    "                T.reads(B[vi, vj])\n"
    "                T.writes(C[vi, vj])\n"
    "                C[vi, vj] = B[vi, vj] * T.float32(2)\n";

/* Under one loop i: block D (reads C) before block B (writes B); C = B + 1
 * after the loop.  Ill-ordered on purpose (D reads C before C exists). */
static const char blk_misordered[] =
    BLK_HDR("misordered", "A: " BLK_BUF ", D: " BLK_BUF)
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    "        C = T.alloc_buffer((6, 5), \"float32\")\n"
    "        for i in T.serial(6):\n"
    "            for j in T.serial(5):\n"
    "                with T.block(\"D\"):\n"
    "                    vi, vj = T.axis.remap(\"SS\", [i, j])\n"
    "                    T.reads(C[vi, vj])\n"
    "                    T.writes(D[vi, vj])\n"
    "                    D[vi, vj] = C[vi, vj]\n"
    "            for j1 in T.serial(5):\n"
    "                with T.block(\"B\"):\n"
    "                    vi, vj = T.axis.remap(\"SS\", [i, j1])\n"
    "                    T.reads(A[vi, vj])\n"
    "                    T.writes(B[vi, vj])\n"
    "                    B[vi, vj] = A[vi, vj]\n"
    BLK_ELEM("C", "i1", "j2", "B[vi, vj]", "C[vi, vj]", "C[vi, vj] = B[vi, vj] + T.float32(1)");

/* Regions that cannot be bounded: with a scalar n of unknown sign, C reads
 * B[vi, vj // n]; block E is bound at vj = j // n and feeds F. */
static const char blk_unbounded[] =
    BLK_HDR("unbounded", "A: " BLK_BUF ", C: " BLK_BUF ", F: " BLK_BUF ", n: T.int32")
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    "        E = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj]")
    BLK_ELEM("C", "i1", "j1", "B[vi, vj // n]", "C[vi, vj]", "C[vi, vj] = B[vi, vj // n]")
    "        for i2, j2 in T.grid(6, 5):\n"
    "            with T.block(\"E\"):\n"
    "                vi = T.axis.spatial(6, i2)\n"
    "                vj = T.axis.spatial(5, j2 // n)\n"
    "                T.reads(A[vi, vj])\n"
    "                T.writes(E[vi, vj])\n"
    "                E[vi, vj] = A[vi, vj]\n"
    BLK_ELEM("F", "i3", "j3", "E[vi, vj]", "F[vi, vj]", "F[vi, vj] = E[vi, vj]");

/* B = A * 2 at the root; block "outer" (one per row) holds block C = B + 1
 * in its own scope; D = B * 3 at the root. */
static const char blk_nested[] =
    BLK_HDR("nested", "A: " BLK_BUF ", C: " BLK_BUF ", D: " BLK_BUF)
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("B", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] * T.float32(2)")
    "        for i1 in T.serial(6):\n"
    "            with T.block(\"outer\"):\n"
    "                vo = T.axis.spatial(6, i1)\n"
    "                T.reads(B[vo, 0:5])\n"
    "                T.writes(C[vo, 0:5])\n"
    "                for j1 in T.serial(5):\n"
    "                    with T.block(\"C\"):\n"
    "                        vi = T.axis.spatial(6, vo)\n"
    "                        vj = T.axis.spatial(5, j1)\n"
    "                        T.reads(B[vi, vj])\n"
    "                        T.writes(C[vi, vj])\n"
    "                        C[vi, vj] = B[vi, vj] + T.float32(1)\n"
    BLK_ELEM("D", "i2", "j2", "B[vi, vj]", "D[vi, vj]", "D[vi, vj] = B[vi, vj] * T.float32(3)");

/* B1: B = A * 2; P: E = B + 1; B2: B = A + 3 (rewrites B); C = E * 2. */
static const char blk_rewritten[] =
    BLK_HDR("rewritten", "A: " BLK_BUF ", C: " BLK_BUF)
    "        B = T.alloc_buffer((6, 5), \"float32\")\n"
    "        E = T.alloc_buffer((6, 5), \"float32\")\n"
    BLK_ELEM("B1", "i", "j", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] * T.float32(2)")
    BLK_ELEM("P", "i1", "j1", "B[vi, vj]", "E[vi, vj]", "E[vi, vj] = B[vi, vj] + T.float32(1)")
    BLK_ELEM("B2", "i2", "j2", "A[vi, vj]", "B[vi, vj]", "B[vi, vj] = A[vi, vj] + T.float32(3)")
    BLK_ELEM("C", "i3", "j3", "E[vi, vj]", "C[vi, vj]", "C[vi, vj] = E[vi, vj] * T.float32(2)");

#endif
