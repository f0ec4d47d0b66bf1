/* jsonl.c: export and import of records as JSON lines, one record an
 * object on a line (docs/tuning.md gives the fields).
 *
 * The format is flat (no nested objects or arrays), so the reader is a
 * small recursive-descent parser of exactly that: an object of string
 * keys whose values are strings, numbers or null.  It is strict (unknown
 * or repeated keys, a wrong type, trailing text are errors naming the line
 * and column) because a silently half-read record would be a tuning
 * result that was never measured.  The whole import is one transaction,
 * so an error anywhere leaves the database as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tune_internal.h"

/* --------------------------------------------------------------- export */

static void put_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void put_field(FILE *f, const char *key, const char *s) {
    fprintf(f, ",\"%s\":", key);
    if (s)
        put_string(f, s);
    else
        fputs("null", f);
}

/* %.17g gives back the same double when read. */
static void put_measure(FILE *f, const char *key, double v) {
    if (isnan(v) || isinf(v))
        fprintf(f, ",\"%s\":null", key);
    else
        fprintf(f, ",\"%s\":%.17g", key, v);
}

typedef struct export_to {
    FILE *f;
    int64_t n;
} export_to;

static bool put_record(void *user, const tir_tune_record *r) {
    export_to *e = user;
    FILE *f = e->f;
    e->n++;
    fputs("{\"workload\":", f);
    put_string(f, r->workload);
    put_field(f, "gpu", r->target.gpu);
    put_field(f, "arch", r->target.arch);
    fprintf(f, ",\"driver\":%d", r->target.driver_version);
    put_field(f, "trace", r->trace);
    put_field(f, "decisions", r->decisions);
    put_measure(f, "median_ms", r->median_ms);
    put_measure(f, "gflops", r->gflops);
    put_field(f, "error", r->error);
    put_measure(f, "compile_ms", r->compile_ms);
    fprintf(f, ",\"timestamp\":%" PRId64 "}\n", r->timestamp);
    return !ferror(f);
}

tir_status tir_tune_db_export_jsonl(tir_ctx *ctx, tir_tune_db *db, FILE *f, int64_t *count) {
    export_to e = {f, 0};
    tir_status st = tune_query(ctx, db, NULL, NULL, TUNE_ALL_BY_ID, -1, put_record, &e);
    if (st != TIR_OK) return st;
    if (fflush(f) != 0 || ferror(f))
        return tir_ctx_fail(ctx, TIR_ERR_IO, "tune db %s: export: write failed: %s", db->path,
                            strerror(errno));
    if (count) *count = e.n;
    return TIR_OK;
}

/* --------------------------------------------------------------- import */

enum { S_WORKLOAD, S_GPU, S_ARCH, S_TRACE, S_DECISIONS, S_ERROR, NSTR };
enum { N_MEDIAN, N_GFLOPS, N_COMPILE, NNUM };
enum { I_DRIVER, I_TIMESTAMP, NINT };

typedef enum jl_kind { JL_STR, JL_STR_OR_NULL, JL_NUM_OR_NULL, JL_INT } jl_kind;

/* The fields of a line and where each one goes. */
static const struct jl_field {
    const char *key;
    jl_kind kind;
    int slot;
    bool required;
} jl_fields[] = {
    {"workload", JL_STR, S_WORKLOAD, true},
    {"gpu", JL_STR, S_GPU, true},
    {"arch", JL_STR, S_ARCH, true},
    {"driver", JL_INT, I_DRIVER, true},
    {"trace", JL_STR, S_TRACE, true},
    {"decisions", JL_STR_OR_NULL, S_DECISIONS, false},
    {"median_ms", JL_NUM_OR_NULL, N_MEDIAN, false},
    {"gflops", JL_NUM_OR_NULL, N_GFLOPS, false},
    {"error", JL_STR_OR_NULL, S_ERROR, false},
    {"compile_ms", JL_NUM_OR_NULL, N_COMPILE, false},
    {"timestamp", JL_INT, I_TIMESTAMP, false},
};
#define NFIELDS ((int)(sizeof jl_fields / sizeof jl_fields[0]))

/* One line being read: the text, the position, and the values found. */
typedef struct jl_line {
    tir_ctx *ctx;
    const char *s;
    size_t pos, len;
    int64_t lineno;
    ir_strbuf str[NSTR];
    bool is_null[NSTR];
    double num[NNUM];
    int64_t ints[NINT];
    bool seen[NFIELDS];
} jl_line;

/* "line N, column C: <what>" and, if key is not NULL, ` "<key>"`. */
static tir_status jl_fail(jl_line *l, const char *what, const char *key) {
    return tir_ctx_fail(l->ctx, TIR_ERR_PARSE, "tune db import: line %lld, column %zu: %s%s%s%s",
                        (long long)l->lineno, l->pos + 1, what, key ? " \"" : "",
                        key ? key : "", key ? "\"" : "");
}

static void jl_ws(jl_line *l) {
    while (l->pos < l->len && strchr(" \t\r\n", l->s[l->pos])) l->pos++;
}

static bool jl_eat(jl_line *l, char c) {
    jl_ws(l);
    if (l->pos < l->len && l->s[l->pos] == c) {
        l->pos++;
        return true;
    }
    return false;
}

static void put_utf8(ir_strbuf *sb, uint32_t c) {
    if (c < 0x80) {
        ir_sb_putc(sb, (char)c);
    } else if (c < 0x800) {
        ir_sb_putc(sb, (char)(0xC0 | c >> 6));
        ir_sb_putc(sb, (char)(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        ir_sb_putc(sb, (char)(0xE0 | c >> 12));
        ir_sb_putc(sb, (char)(0x80 | (c >> 6 & 0x3F)));
        ir_sb_putc(sb, (char)(0x80 | (c & 0x3F)));
    } else {
        ir_sb_putc(sb, (char)(0xF0 | c >> 18));
        ir_sb_putc(sb, (char)(0x80 | (c >> 12 & 0x3F)));
        ir_sb_putc(sb, (char)(0x80 | (c >> 6 & 0x3F)));
        ir_sb_putc(sb, (char)(0x80 | (c & 0x3F)));
    }
}

/* Four hex digits after "\u". */
static bool jl_hex4(jl_line *l, uint32_t *out) {
    if (l->pos + 4 > l->len) return false;
    *out = 0;
    for (int i = 0; i < 4; i++) {
        char c = l->s[l->pos + i];
        int d = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return false;
        *out = *out << 4 | (uint32_t)d;
    }
    l->pos += 4;
    return true;
}

/* "\uXXXX" (l->pos after the 'u'), a surrogate pair joined. */
static tir_status jl_unicode(jl_line *l, ir_strbuf *sb) {
    uint32_t c, lo;
    if (!jl_hex4(l, &c)) return jl_fail(l, "\\u needs four hex digits", NULL);
    if (c >= 0xD800 && c < 0xDC00) {
        if (l->pos + 2 > l->len || l->s[l->pos] != '\\' || l->s[l->pos + 1] != 'u')
            return jl_fail(l, "a high surrogate must be followed by \\u and a low one", NULL);
        l->pos += 2;
        if (!jl_hex4(l, &lo) || lo < 0xDC00 || lo >= 0xE000)
            return jl_fail(l, "expected a low surrogate", NULL);
        c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
    } else if (c >= 0xDC00 && c < 0xE000) {
        return jl_fail(l, "a lone low surrogate", NULL);
    }
    if (c == 0) return jl_fail(l, "\\u0000 cannot be stored in a C string", NULL);
    put_utf8(sb, c);
    return TIR_OK;
}

/* One escape; l->pos is after the backslash. */
static tir_status jl_escape(jl_line *l, ir_strbuf *sb) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (l->pos >= l->len) return jl_fail(l, "unterminated string", NULL);
    char c = l->s[l->pos++];
    const char *k = strchr(from, c);
    if (c == 'u') return jl_unicode(l, sb);
    if (!k || !c) return jl_fail(l, "unknown escape in string", NULL);
    ir_sb_putc(sb, to[k - from]);
    return TIR_OK;
}

/* A string, l->pos at its opening quote (already checked). */
static tir_status jl_string(jl_line *l, ir_strbuf *sb) {
    l->pos++;
    ir_sb_puts(sb, ""); /* an empty string has data too */
    while (l->pos < l->len && l->s[l->pos] != '"') {
        unsigned char c = (unsigned char)l->s[l->pos];
        if (c < 0x20) return jl_fail(l, "control character in string (write it escaped)", NULL);
        l->pos++;
        tir_status st = TIR_OK;
        if (c == '\\')
            st = jl_escape(l, sb);
        else
            ir_sb_putc(sb, (char)c);
        if (st != TIR_OK) return st;
    }
    if (l->pos >= l->len) return jl_fail(l, "unterminated string", NULL);
    l->pos++;
    return TIR_OK;
}

static size_t jl_digits(const jl_line *l, size_t i) {
    while (i < l->len && l->s[i] >= '0' && l->s[i] <= '9') i++;
    return i;
}

/* The end of a JSON number starting at l->pos, or 0 if there is none
 * (strtod alone would also take "inf", "0x1p3" and " 1"). */
static size_t jl_number_end(const jl_line *l, bool *integral) {
    size_t i = l->pos, d;
    if (i < l->len && l->s[i] == '-') i++;
    if ((d = jl_digits(l, i)) == i) return 0;
    if (l->s[i] == '0' && d > i + 1) return 0; /* no leading zeros */
    i = d;
    *integral = true;
    if (i < l->len && l->s[i] == '.') {
        *integral = false;
        if ((d = jl_digits(l, i + 1)) == i + 1) return 0;
        i = d;
    }
    if (i < l->len && (l->s[i] == 'e' || l->s[i] == 'E')) {
        *integral = false;
        i++;
        if (i < l->len && (l->s[i] == '+' || l->s[i] == '-')) i++;
        if ((d = jl_digits(l, i)) == i) return 0;
        i = d;
    }
    return i;
}

static tir_status jl_number(jl_line *l, const struct jl_field *fd) {
    bool integral = false;
    size_t end = jl_number_end(l, &integral);
    if (!end) return jl_fail(l, "malformed number for", fd->key);
    errno = 0;
    if (fd->kind == JL_INT) {
        long long v = integral ? strtoll(l->s + l->pos, NULL, 10) : 0;
        if (!integral || errno || (fd->slot == I_DRIVER && (v < INT32_MIN || v > INT32_MAX)))
            return jl_fail(l, "expected an integer in range for", fd->key);
        l->ints[fd->slot] = v;
    } else {
        l->num[fd->slot] = strtod(l->s + l->pos, NULL);
        if (errno == ERANGE && isinf(l->num[fd->slot]))
            return jl_fail(l, "number out of range for", fd->key);
    }
    l->pos = end;
    return TIR_OK;
}

/* The value of field fd, of the type the field allows. */
static tir_status jl_value(jl_line *l, const struct jl_field *fd) {
    jl_ws(l);
    char c = l->pos < l->len ? l->s[l->pos] : '\0';
    bool nullable = fd->kind == JL_STR_OR_NULL || fd->kind == JL_NUM_OR_NULL;
    bool is_str = fd->kind == JL_STR || fd->kind == JL_STR_OR_NULL;
    if (c == 'n' && l->len - l->pos >= 4 && memcmp(l->s + l->pos, "null", 4) == 0) {
        if (!nullable) return jl_fail(l, "null is not allowed for", fd->key);
        l->pos += 4;
        if (is_str) l->is_null[fd->slot] = true;
        return TIR_OK;
    }
    if (c == '"') {
        if (!is_str) return jl_fail(l, "expected a number for", fd->key);
        return jl_string(l, &l->str[fd->slot]);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        if (is_str) return jl_fail(l, "expected a string for", fd->key);
        return jl_number(l, fd);
    }
    return jl_fail(l, "expected a value for", fd->key);
}

/* "key": value, l->pos at the key's quote. */
static tir_status jl_member(jl_line *l) {
    ir_strbuf key;
    ir_sb_init(&key);
    size_t start = l->pos;
    tir_status st = jl_string(l, &key);
    int i = 0;
    while (st == TIR_OK && i < NFIELDS && strcmp(jl_fields[i].key, key.data) != 0) i++;
    if (st == TIR_OK && (i == NFIELDS || l->seen[i])) l->pos = start; /* point at the key */
    if (st == TIR_OK && i == NFIELDS) st = jl_fail(l, "unknown key", key.data);
    if (st == TIR_OK && l->seen[i]) st = jl_fail(l, "repeated key", key.data);
    ir_sb_free(&key);
    if (st != TIR_OK) return st;
    l->seen[i] = true;
    if (!jl_eat(l, ':')) return jl_fail(l, "expected ':' after", jl_fields[i].key);
    return jl_value(l, &jl_fields[i]);
}

/* The object that makes up the line. */
static tir_status jl_object(jl_line *l) {
    if (!jl_eat(l, '{')) return jl_fail(l, "expected '{'", NULL);
    bool first = true;
    while (!jl_eat(l, '}')) {
        if (!first && !jl_eat(l, ',')) return jl_fail(l, "expected ',' or '}'", NULL);
        jl_ws(l);
        if (l->pos >= l->len || l->s[l->pos] != '"') return jl_fail(l, "expected a key", NULL);
        tir_status st = jl_member(l);
        if (st != TIR_OK) return st;
        first = false;
    }
    jl_ws(l);
    if (l->pos < l->len) return jl_fail(l, "text after the object", NULL);
    for (int i = 0; i < NFIELDS; i++)
        if (jl_fields[i].required && !l->seen[i])
            return jl_fail(l, "missing key", jl_fields[i].key);
    return TIR_OK;
}

static const char *jl_str(const jl_line *l, int slot) {
    if (l->is_null[slot] || !l->str[slot].data) return NULL;
    return l->str[slot].data;
}

/* The record the parsed line describes (its strings are l's). */
static tir_status jl_record(jl_line *l, tir_tune_record *r) {
    tir_tune_record_init(r);
    r->workload = jl_str(l, S_WORKLOAD);
    r->trace = jl_str(l, S_TRACE);
    r->decisions = jl_str(l, S_DECISIONS);
    r->error = jl_str(l, S_ERROR);
    r->median_ms = l->num[N_MEDIAN];
    r->gflops = l->num[N_GFLOPS];
    r->compile_ms = l->num[N_COMPILE];
    r->target.driver_version = (int)l->ints[I_DRIVER];
    r->timestamp = l->ints[I_TIMESTAMP];
    const char *gpu = jl_str(l, S_GPU), *arch = jl_str(l, S_ARCH);
    if (strlen(gpu) >= sizeof r->target.gpu || strlen(arch) >= sizeof r->target.arch)
        return tir_ctx_fail(l->ctx, TIR_ERR_INVALID_ARG,
                            "tune db import: line %lld: gpu name or arch too long (%zu, %zu "
                            "bytes; at most %zu, %zu)",
                            (long long)l->lineno, strlen(gpu), strlen(arch),
                            sizeof r->target.gpu - 1, sizeof r->target.arch - 1);
    memcpy(r->target.gpu, gpu, strlen(gpu) + 1);
    memcpy(r->target.arch, arch, strlen(arch) + 1);
    char where[48];
    snprintf(where, sizeof where, "import line %lld: ", (long long)l->lineno);
    return tune_check_record(l->ctx, r, where);
}

static void jl_reset(jl_line *l, tir_ctx *ctx, const char *s, size_t len, int64_t lineno) {
    memset(l, 0, sizeof *l);
    l->ctx = ctx;
    l->s = s;
    l->len = len;
    l->lineno = lineno;
    for (int i = 0; i < NNUM; i++) l->num[i] = NAN; /* null and absent alike */
}

static void jl_free(jl_line *l) {
    for (int i = 0; i < NSTR; i++) ir_sb_free(&l->str[i]);
}

static bool jl_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n", s[i])) return false;
    return true;
}

/* Parses and inserts one line inside the import's transaction. */
static tir_status import_line(tir_ctx *ctx, tir_tune_db *db, const char *s, size_t n,
                              int64_t lineno, int64_t counts[2]) {
    if (jl_blank(s, n)) return TIR_OK;
    jl_line l;
    jl_reset(&l, ctx, s, n, lineno);
    tir_tune_record r;
    bool added = false;
    tir_status st = jl_object(&l);
    if (st == TIR_OK) st = jl_record(&l, &r);
    if (st == TIR_OK) st = tune_insert(ctx, db, &r, &added);
    if (st == TIR_OK) counts[added ? 0 : 1]++;
    jl_free(&l);
    return st;
}

/* Every line of f, in the caller's transaction. */
static tir_status import_lines(tir_ctx *ctx, tir_tune_db *db, FILE *f, int64_t counts[2]) {
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    int64_t lineno = 0;
    tir_status st = TIR_OK;
    while (st == TIR_OK && (n = getline(&buf, &cap, f)) >= 0) {
        lineno++;
        if (memchr(buf, '\0', (size_t)n))
            st = tir_ctx_fail(ctx, TIR_ERR_PARSE, "tune db import: line %lld: a NUL byte",
                              (long long)lineno);
        else
            st = import_line(ctx, db, buf, (size_t)n, lineno, counts);
    }
    if (st == TIR_OK && ferror(f))
        st = tir_ctx_fail(ctx, TIR_ERR_IO, "tune db import: read failed after line %lld: %s",
                          (long long)lineno, strerror(errno));
    free(buf);
    return st;
}

tir_status tir_tune_db_import_jsonl(tir_ctx *ctx, tir_tune_db *db, FILE *f, int64_t *added,
                                    int64_t *skipped) {
    int64_t counts[2] = {0, 0};
    tir_status st = tune_begin(ctx, db);
    if (st != TIR_OK) return st;
    st = import_lines(ctx, db, f, counts);
    if (st != TIR_OK) {
        tune_rollback(db);
        return st;
    }
    st = tune_commit(ctx, db);
    if (st != TIR_OK) return st;
    if (added) *added = counts[0];
    if (skipped) *skipped = counts[1];
    return TIR_OK;
}
