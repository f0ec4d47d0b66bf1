/* ctx.c: the context that owns all IR memory.
 *
 * Memory is a chain of large chunks (an arena): nodes are never freed one
 * by one, which is what makes sharing subtrees between old and new IR free
 * of ownership questions.  Strings are interned in a hash set so names can
 * be compared by pointer.  The context also holds the last error message.
 */
#include <stdarg.h>
#include <string.h>

#include "ir_internal.h"

/* GCC 12 with -fsanitize at -O2 misreads vsnprintf(NULL, 0, ...) (the
   standard way to measure a formatted length) as a null format string. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#pragma GCC diagnostic ignored "-Wformat"
#endif

#define CHUNK_SIZE (256 * 1024)

struct tir_ctx {
    ir_arena mem;
    const char **interned; /* open addressing */
    size_t nintern, capintern;
    tir_status err_code;
    char *err_msg; /* heap */
    uint32_t next_id;
};

/* Shared with node.c for fresh variable and buffer ids. */
uint32_t ir_ctx_next_id(tir_ctx *ctx) { return ++ctx->next_id; }

_Noreturn void ir_assert_fail(const char *what, const char *file, int line) {
    fprintf(stderr, "minitir internal error: %s:%d: assertion '%s' failed\n", file, line,
            what);
    fflush(stderr);
    abort();
}

static const char *const status_text[] = {
#define TIR_STATUS(E, S) S,
#include "minitir/status.def"
};
static const char *const status_name[] = {
#define TIR_STATUS(E, S) #E,
#include "minitir/status.def"
};

const char *tir_status_str(tir_status s) {
    return (unsigned)s < TIR_STATUS_COUNT ? status_text[s] : "unknown status";
}
const char *tir_status_name(tir_status s) {
    return (unsigned)s < TIR_STATUS_COUNT ? status_name[s] : "UNKNOWN";
}

tir_ctx *tir_ctx_create(void) {
    tir_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    ctx->mem.chunk_size = CHUNK_SIZE;
    ctx->capintern = 1024;
    ctx->interned = calloc(ctx->capintern, sizeof *ctx->interned);
    if (!ctx->interned) {
        free(ctx);
        return NULL;
    }
    return ctx;
}

void tir_ctx_destroy(tir_ctx *ctx) {
    if (!ctx) return;
    ir_arena_free(&ctx->mem);
    free(ctx->interned);
    free(ctx->err_msg);
    free(ctx);
}

void *tir_ctx_alloc(tir_ctx *ctx, size_t size) { return ir_arena_alloc(&ctx->mem, size); }

void *ir_copy_array(tir_ctx *ctx, const void *src, size_t elem, int n) {
    if (n <= 0) return NULL;
    void *p = tir_ctx_alloc(ctx, elem * (size_t)n);
    memcpy(p, src, elem * (size_t)n);
    return p;
}

static void intern_grow(tir_ctx *ctx) {
    size_t cap = ctx->capintern * 2;
    const char **t = ir_xcalloc(cap, sizeof *t);
    for (size_t i = 0; i < ctx->capintern; i++) {
        const char *s = ctx->interned[i];
        if (!s) continue;
        size_t j = ir_str_hash(s, strlen(s)) & (cap - 1);
        while (t[j]) j = (j + 1) & (cap - 1);
        t[j] = s;
    }
    free(ctx->interned);
    ctx->interned = t;
    ctx->capintern = cap;
}

const char *tir_intern_n(tir_ctx *ctx, const char *s, size_t n) {
    if (2 * (ctx->nintern + 1) > ctx->capintern) intern_grow(ctx);
    size_t j = ir_str_hash(s, n) & (ctx->capintern - 1);
    while (ctx->interned[j]) {
        const char *t = ctx->interned[j];
        if (strncmp(t, s, n) == 0 && t[n] == '\0') return t;
        j = (j + 1) & (ctx->capintern - 1);
    }
    char *copy = tir_ctx_alloc(ctx, n + 1);
    memcpy(copy, s, n);
    copy[n] = '\0';
    ctx->interned[j] = copy;
    ctx->nintern++;
    return copy;
}

const char *tir_intern(tir_ctx *ctx, const char *s) { return tir_intern_n(ctx, s, strlen(s)); }

/* The formatted text in a fresh string buffer. */
static ir_strbuf sb_format(const char *fmt, va_list ap) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_vprintf(&sb, fmt, ap);
    return sb;
}

const char *tir_ctx_sprintf(tir_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ir_strbuf sb = sb_format(fmt, ap);
    va_end(ap);
    return ir_sb_finish(&sb, ctx);
}

tir_status tir_ctx_error_code(const tir_ctx *ctx) { return ctx->err_code; }
const char *tir_ctx_error(const tir_ctx *ctx) { return ctx->err_msg ? ctx->err_msg : ""; }

void tir_ctx_clear_error(tir_ctx *ctx) {
    free(ctx->err_msg);
    ctx->err_msg = NULL;
    ctx->err_code = TIR_OK;
}

tir_status tir_ctx_fail(tir_ctx *ctx, tir_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ir_strbuf sb = sb_format(fmt, ap);
    va_end(ap);
    free(ctx->err_msg);
    ctx->err_msg = sb.data; /* the heap buffer changes hands */
    ctx->err_code = code;
    return code;
}

/* ----------------------------------------------------------- string buffer */

void ir_sb_init(ir_strbuf *sb) { memset(sb, 0, sizeof *sb); }
void ir_sb_free(ir_strbuf *sb) {
    free(sb->data);
    ir_sb_init(sb);
}

static void sb_reserve(ir_strbuf *sb, size_t extra) {
    if (sb->len + extra + 1 <= sb->cap) return;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) cap *= 2;
    char *d = ir_xrealloc(sb->data, cap);
    sb->data = d;
    sb->cap = cap;
}

void ir_sb_putc(ir_strbuf *sb, char c) {
    sb_reserve(sb, 1);
    sb->data[sb->len++] = c;
    sb->data[sb->len] = '\0';
}

void ir_sb_puts(ir_strbuf *sb, const char *s) {
    size_t n = strlen(s);
    sb_reserve(sb, n);
    memcpy(sb->data + sb->len, s, n + 1);
    sb->len += n;
}

void ir_sb_vprintf(ir_strbuf *sb, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    TIR_ASSERT(n >= 0);
    sb_reserve(sb, (size_t)n);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    sb->len += (size_t)n;
}

void ir_sb_printf(ir_strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ir_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

const char *ir_sb_finish(ir_strbuf *sb, tir_ctx *ctx) {
    char *p = tir_ctx_alloc(ctx, sb->len + 1);
    if (sb->len) memcpy(p, sb->data, sb->len);
    p[sb->len] = '\0';
    ir_sb_free(sb);
    return p;
}

void ir_vec_push(ir_vec *v, const void *p) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        const void **items = ir_xrealloc(v->items, sizeof(*items) * (size_t)cap);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = p;
}

bool ir_vec_has(const ir_vec *v, const void *p) {
    for (int i = 0; i < v->n; i++)
        if (v->items[i] == p) return true;
    return false;
}

void ir_vec_free(ir_vec *v) {
    free(v->items);
    v->items = NULL;
    v->n = v->cap = 0;
}
