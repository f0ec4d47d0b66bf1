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
 * is the tile's loops and inner block (blockize's form).  M = 16*MT,
 * N = 8*NT, K = 16*KT. */
#define DT "bfloat16"
static const char mm_text[] =
    "@T.prim_func\n"
    "def mm(A: T.Buffer((32, 32), \"" DT "\"), B: T.Buffer((32, 16), \"" DT "\"), C: T.Buffer((32, 16), \"float32\")):\n"
    "    with T.block(\"root\"):\n"
    "        Af = T.alloc_buffer((32, 32), \"" DT "\", scope=\"frag.a\")\n"
    "        Bf = T.alloc_buffer((32, 16), \"" DT "\", scope=\"frag.b\")\n"
    "        Cf = T.alloc_buffer((32, 16), \"float32\", scope=\"frag.acc\")\n"
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

/* mm_text with `from` replaced by `to` (every occurrence). */
static const tir_prim_func *parse_edit(tir_ctx *ctx, const char *from, const char *to) {
    size_t cap = sizeof mm_text * 2 + 4096, n = 0;
    char *buf = malloc(cap);
    const char *p = mm_text;
    size_t fl = from ? strlen(from) : 0;
    while (*p) {
        if (fl && strncmp(p, from, fl) == 0) {
            size_t tl = strlen(to);
            memcpy(buf + n, to, tl);
            n += tl;
            p += fl;
        } else {
            buf[n++] = *p++;
        }
        assert_true(n + 256 < cap);
    }
    const tir_prim_func *f = NULL;
    tir_status st = tir_parse_func(ctx, buf, n, &f);
    if (st != TIR_OK) fail_msg("parse: %s\n%s", tir_ctx_error(ctx), buf);
    free(buf);
    return f;
}

static void tensorize_all(tir_schedule *s) {
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "Af_o"), "frag_load_a_16x16"));
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "Bf_o"), "frag_load_b_16x8"));
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "init_o"), "frag_fill_f32"));
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "C_o"), "mma_m16n8k16_bf16"));
    SCHED_OK(s, tir_sched_tensorize(s, sched_block(s, "store_o"), "frag_store_16x8"));
}

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
    const char *text = tir_print(ctx, tir_sched_func(s));
    assert_non_null(strstr(text, "frag_load"));
    assert_non_null(strstr(text, "mma_sync"));
    assert_null(strstr(text, "T.block(\"C\")"));
    assert_int_equal(tir_verify(ctx, tir_sched_func(s)), TIR_OK);
    sched_check_roundtrip(s);
    tir_sched_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tensorize_blocks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
