/* fuzz_parser.c: libFuzzer target for the text parser.
 *
 * Build with clang:  CC=clang meson setup build-fuzz -Dfuzz=true
 *                    ninja -C build-fuzz tests/fuzz_parser
 * Run:               build-fuzz/tests/fuzz_parser -dict=fuzz/tir.dict \
 *                        -max_len=4096 fuzz/corpus tests/data/bad
 *
 * The property is the one tests/test_parser_fuzz.c checks in bounded
 * form: every input either fails cleanly ("line:col: message", TIR_ERR_PARSE
 * or TIR_ERR_TYPE, *out == NULL) or parses to a function that prints,
 * parses back structurally equal, and prints to the same text.  Violations
 * abort so libFuzzer records the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minitir/ir.h"

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_parser: %s\n%s\n", what, detail ? detail : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tir_ctx *ctx = tir_ctx_create();
    if (!ctx) return 0;
    const tir_prim_func *f = (const tir_prim_func *)data;
    tir_status s = tir_parse_func(ctx, (const char *)data, size, &f);
    if (s == TIR_OK) {
        if (!f) fail("TIR_OK without a function", NULL);
        const char *t = tir_print(ctx, f);
        const tir_prim_func *g = NULL;
        if (tir_parse_func(ctx, t, strlen(t), &g) != TIR_OK) fail(tir_ctx_error(ctx), t);
        char why[512];
        if (!tir_struct_equal_explain(f, g, why, sizeof why)) fail(why, t);
        if (strcmp(t, tir_print(ctx, g)) != 0) fail("reprint differs", t);
    } else {
        int line, col, used = 0;
        const char *msg = tir_ctx_error(ctx);
        if (f) fail("error with a function", msg);
        if (s != TIR_ERR_PARSE && s != TIR_ERR_TYPE) fail("unexpected status", msg);
        if (sscanf(msg, "%d:%d: %n", &line, &col, &used) != 2 || !used || !msg[used] || line < 1 ||
            col < 1)
            fail("malformed message", msg);
    }
    tir_ctx_destroy(ctx);
    return 0;
}
