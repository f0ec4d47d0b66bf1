/* text_builder.h: a growing text buffer for tests that write kernels as
 * TVMScript text (lower_kernels.c, tc_kernels.c): put() appends one line
 * at an indentation of 4 * indent spaces. */
#ifndef MINITIR_TESTS_TEXT_BUILDER_H
#define MINITIR_TESTS_TEXT_BUILDER_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minitir/ir.h"

typedef struct tb {
    char *buf;
    size_t len, cap;
} tb;

static inline void put(tb *t, int indent, const char *fmt, ...) TIR_PRINTF(3, 4);
static inline void put(tb *t, int indent, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t need = t->len + (size_t)indent * 4 + strlen(line) + 2;
    if (need > t->cap) {
        t->cap = need * 2;
        t->buf = realloc(t->buf, t->cap);
    }
    t->len += (size_t)sprintf(t->buf + t->len, "%*s%s\n", indent * 4, "", line);
}

#endif
