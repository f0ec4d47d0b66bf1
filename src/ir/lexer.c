/* lexer.c: the tokenizer of the TVMScript-style text format.
 *
 * It follows Python's layout rules, because the format is (a subset of)
 * Python: a logical line ends in NEWLINE, a deeper indent opens an INDENT,
 * a shallower one closes DEDENTs back to a matching level, and newlines
 * inside (), [] or {} are plain spaces.  All tokens are produced up front
 * into one heap array so the parser can look ahead and rewind (it reads
 * the parameter list twice).  Every malformed input ends in a
 * "line:col: message" error, never in a crash: tabs in indentation,
 * inconsistent dedents, unterminated strings, bad escapes, stray bytes and
 * integer literals beyond 64 bits are all reported here.
 */
#include <string.h>

#include "text_internal.h"

typedef struct lexer {
    tir_ctx *ctx;
    const char *s;
    size_t n, i;
    int line;
    size_t line_start; /* offset of the current line's first byte */
    ir_token *toks;
    int ntoks, cap;
    int depth; /* bracket nesting */
    int indents[IR_TEXT_MAX_DEPTH + 1];
    int nindent;
} lexer;

static int col_of(const lexer *L, size_t pos) { return (int)(pos - L->line_start) + 1; }

static tir_status lex_fail(lexer *L, size_t pos, const char *msg) {
    return tir_ctx_fail(L->ctx, TIR_ERR_PARSE, "%d:%d: %s", L->line, col_of(L, pos), msg);
}

static void push(lexer *L, ir_tok_kind k, size_t pos, size_t len) {
    if (L->ntoks == L->cap) {
        int cap = L->cap ? L->cap * 2 : 256;
        ir_token *t = ir_xrealloc(L->toks, sizeof *t * (size_t)cap);
        L->toks = t;
        L->cap = cap;
    }
    ir_token *t = &L->toks[L->ntoks++];
    memset(t, 0, sizeof *t);
    t->kind = k;
    t->pos = pos;
    t->len = len;
    t->line = L->line;
    t->col = col_of(L, pos);
}

static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static int hexval(int c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Handles the indentation of a new logical line at L->i.  Blank and
 * comment-only lines produce nothing. */
static tir_status lex_indent(lexer *L) {
    size_t p = L->i;
    while (p < L->n && L->s[p] == ' ') p++;
    if (p < L->n && L->s[p] == '\t') return lex_fail(L, p, "tab character in indentation (use spaces)");
    if (p >= L->n || L->s[p] == '\n' || L->s[p] == '#' || L->s[p] == '\r') {
        L->i = p;
        return TIR_OK;
    }
    int width = (int)(p - L->i);
    int cur = L->indents[L->nindent - 1];
    if (width > cur) {
        if (L->nindent > IR_TEXT_MAX_DEPTH) return lex_fail(L, p, "too many indentation levels");
        L->indents[L->nindent++] = width;
        push(L, TK_INDENT, p, 0);
    } else {
        while (width < L->indents[L->nindent - 1]) {
            L->nindent--;
            push(L, TK_DEDENT, p, 0);
        }
        if (width != L->indents[L->nindent - 1])
            return lex_fail(L, p, "unindent does not match any outer indentation level");
    }
    L->i = p;
    return TIR_OK;
}

static tir_status lex_number(lexer *L) {
    size_t start = L->i, p = L->i;
    bool is_float = false;
    while (p < L->n && is_digit((unsigned char)L->s[p])) p++;
    if (p < L->n && L->s[p] == '.') {
        is_float = true;
        p++;
        while (p < L->n && is_digit((unsigned char)L->s[p])) p++;
    }
    if (p < L->n && (L->s[p] == 'e' || L->s[p] == 'E')) {
        is_float = true;
        p++;
        if (p < L->n && (L->s[p] == '+' || L->s[p] == '-')) p++;
        if (p >= L->n || !is_digit((unsigned char)L->s[p]))
            return lex_fail(L, start, "malformed number (exponent without digits)");
        while (p < L->n && is_digit((unsigned char)L->s[p])) p++;
    }
    if (p < L->n && (is_alpha((unsigned char)L->s[p]) || is_digit((unsigned char)L->s[p]) ||
                     L->s[p] == '.'))
        return lex_fail(L, start, "malformed number");
    if (p - start > 400) return lex_fail(L, start, "numeric literal too long");
    push(L, is_float ? TK_FLOAT : TK_INT, start, p - start);
    if (!is_float) {
        uint64_t v = 0;
        for (size_t q = start; q < p; q++) {
            unsigned d = (unsigned)(L->s[q] - '0');
            if (v > (UINT64_MAX - d) / 10) return lex_fail(L, start, "integer literal too large");
            v = v * 10 + d;
        }
        L->toks[L->ntoks - 1].ival = v;
    }
    L->i = p;
    return TIR_OK;
}

static tir_status lex_string(lexer *L) {
    size_t start = L->i;
    char q = L->s[start];
    size_t p = start + 1;
    for (;;) {
        if (p >= L->n || L->s[p] == '\n' || L->s[p] == '\r')
            return lex_fail(L, start, "unterminated string");
        char c = L->s[p];
        if (c == q) break;
        if (c == '\0') return lex_fail(L, p, "NUL byte in string");
        if (c == '\\') {
            if (p + 1 >= L->n) return lex_fail(L, start, "unterminated string");
            char e = L->s[p + 1];
            if (e == 'x') {
                int h1 = p + 2 < L->n ? hexval((unsigned char)L->s[p + 2]) : -1;
                int h2 = p + 3 < L->n ? hexval((unsigned char)L->s[p + 3]) : -1;
                if (h1 < 0 || h2 < 0) return lex_fail(L, p, "invalid \\x escape in string");
                if (h1 == 0 && h2 == 0) return lex_fail(L, p, "NUL byte in string");
                p += 4;
                continue;
            }
            if (!strchr("nrt\\\"'", e) || e == '\0')
                return lex_fail(L, p, "invalid escape sequence in string");
            p += 2;
            continue;
        }
        p++;
    }
    push(L, TK_STRING, start, p + 1 - start);
    L->i = p + 1;
    return TIR_OK;
}

static tir_status lex_all(lexer *L) {
    bool at_line_start = true;
    L->indents[0] = 0;
    L->nindent = 1;
    while (L->i < L->n || at_line_start) {
        if (at_line_start && L->depth == 0) {
            TIR_TRY(lex_indent(L));
            at_line_start = false;
            if (L->i >= L->n) break;
        }
        if (L->i >= L->n) break;
        size_t p = L->i;
        unsigned char c = (unsigned char)L->s[p];
        if (c == ' ' || c == '\r' || c == '\t') {
            L->i++;
            continue;
        }
        if (c == '#') {
            while (L->i < L->n && L->s[L->i] != '\n') L->i++;
            continue;
        }
        if (c == '\n') {
            /* A NEWLINE token ends a logical line that had tokens. */
            if (L->depth == 0 && L->ntoks > 0) {
                ir_tok_kind last = L->toks[L->ntoks - 1].kind;
                if (last != TK_NEWLINE && last != TK_INDENT && last != TK_DEDENT)
                    push(L, TK_NEWLINE, p, 0);
            }
            L->i++;
            L->line++;
            L->line_start = L->i;
            at_line_start = L->depth == 0;
            continue;
        }
        if (c == '\\') return lex_fail(L, p, "line continuation with '\\' is not supported");
        if (is_alpha(c)) {
            size_t q = p;
            while (q < L->n && (is_alpha((unsigned char)L->s[q]) || is_digit((unsigned char)L->s[q])))
                q++;
            if (q - p > 255) return lex_fail(L, p, "identifier too long");
            push(L, TK_NAME, p, q - p);
            L->i = q;
            continue;
        }
        if (is_digit(c) || (c == '.' && p + 1 < L->n && is_digit((unsigned char)L->s[p + 1]))) {
            TIR_TRY(lex_number(L));
            continue;
        }
        if (c == '"' || c == '\'') {
            TIR_TRY(lex_string(L));
            continue;
        }
        char c2 = p + 1 < L->n ? L->s[p + 1] : '\0';
        ir_tok_kind k;
        size_t len = 1;
        switch (c) {
        case '(': k = TK_LPAREN; L->depth++; break;
        case '[': k = TK_LBRACK; L->depth++; break;
        case '{': k = TK_LBRACE; L->depth++; break;
        case ')': k = TK_RPAREN; if (L->depth > 0) L->depth--; break;
        case ']': k = TK_RBRACK; if (L->depth > 0) L->depth--; break;
        case '}': k = TK_RBRACE; if (L->depth > 0) L->depth--; break;
        case ',': k = TK_COMMA; break;
        case ':': k = TK_COLON; break;
        case '.': k = TK_DOT; break;
        case '@': k = TK_AT; break;
        case '+': k = TK_PLUS; break;
        case '*': k = TK_STAR; break;
        case '%': k = TK_PERCENT; break;
        case '-':
            if (c2 == '>') k = TK_ARROW, len = 2;
            else k = TK_MINUS;
            break;
        case '/':
            if (c2 == '/') k = TK_DSLASH, len = 2;
            else k = TK_SLASH;
            break;
        case '=':
            if (c2 == '=') k = TK_EQ, len = 2;
            else k = TK_ASSIGN;
            break;
        case '!':
            if (c2 != '=') return lex_fail(L, p, "unexpected character '!'");
            k = TK_NE, len = 2;
            break;
        case '<':
            if (c2 == '=') k = TK_LE, len = 2;
            else k = TK_LT;
            break;
        case '>':
            if (c2 == '=') k = TK_GE, len = 2;
            else k = TK_GT;
            break;
        default:
            if (c >= 0x20 && c < 0x7f)
                return tir_ctx_fail(L->ctx, TIR_ERR_PARSE, "%d:%d: unexpected character '%c'",
                                    L->line, col_of(L, p), c);
            return tir_ctx_fail(L->ctx, TIR_ERR_PARSE, "%d:%d: unexpected byte 0x%02x", L->line,
                                col_of(L, p), c);
        }
        if (L->depth > IR_TEXT_MAX_DEPTH) return lex_fail(L, p, "brackets nested too deeply");
        push(L, k, p, len);
        L->i = p + len;
    }
    if (L->ntoks > 0) {
        ir_tok_kind last = L->toks[L->ntoks - 1].kind;
        if (last != TK_NEWLINE && last != TK_INDENT && last != TK_DEDENT)
            push(L, TK_NEWLINE, L->n, 0);
    }
    while (L->nindent > 1) {
        L->nindent--;
        push(L, TK_DEDENT, L->n, 0);
    }
    push(L, TK_EOF, L->n, 0);
    return TIR_OK;
}

tir_status ir_lex(tir_ctx *ctx, const char *text, size_t len, ir_token **toks, int *ntoks) {
    lexer L;
    memset(&L, 0, sizeof L);
    L.ctx = ctx;
    L.s = text;
    L.n = text ? len : 0;
    L.line = 1;
    tir_status s = lex_all(&L);
    if (s != TIR_OK) {
        free(L.toks);
        *toks = NULL;
        *ntoks = 0;
        return s;
    }
    *toks = L.toks;
    *ntoks = L.ntoks;
    return TIR_OK;
}

size_t ir_lex_string(const char *text, const ir_token *tok, char *out) {
    size_t n = 0;
    const char *s = text + tok->pos + 1, *end = text + tok->pos + tok->len - 1;
    while (s < end) {
        if (*s != '\\') {
            out[n++] = *s++;
            continue;
        }
        char e = s[1];
        switch (e) {
        case 'n': out[n++] = '\n'; s += 2; break;
        case 'r': out[n++] = '\r'; s += 2; break;
        case 't': out[n++] = '\t'; s += 2; break;
        case 'x':
            out[n++] = (char)(hexval((unsigned char)s[2]) * 16 + hexval((unsigned char)s[3]));
            s += 4;
            break;
        default: out[n++] = e; s += 2; break;
        }
    }
    return n;
}

const char *ir_tok_describe(const char *text, const ir_token *tok, char *buf, size_t n) {
    switch (tok->kind) {
    case TK_EOF: snprintf(buf, n, "end of input"); break;
    case TK_NEWLINE: snprintf(buf, n, "end of line"); break;
    case TK_INDENT: snprintf(buf, n, "an indent"); break;
    case TK_DEDENT: snprintf(buf, n, "a dedent"); break;
    case TK_STRING: snprintf(buf, n, "a string"); break;
    default: {
        int len = tok->len > 40 ? 40 : (int)tok->len;
        snprintf(buf, n, "'%.*s'", len, text + tok->pos);
        break;
    }
    }
    return buf;
}

static const char *const reserved[] = {
    "T",      "range", "False",  "None",   "True",     "and",   "as",     "assert",
    "async",  "await", "break",  "class",  "continue", "def",   "del",    "elif",
    "else",   "except", "finally", "for",  "from",     "global", "if",    "import",
    "in",     "is",    "lambda", "nonlocal", "not",    "or",    "pass",   "raise",
    "return", "try",   "while",  "with",   "yield",
};

bool ir_text_reserved(const char *s, size_t n) {
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strlen(reserved[i]) == n && memcmp(reserved[i], s, n) == 0) return true;
    return false;
}

bool ir_text_is_ident(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 255 || !is_alpha((unsigned char)s[0])) return false;
    for (size_t i = 1; i < n; i++)
        if (!is_alpha((unsigned char)s[i]) && !is_digit((unsigned char)s[i])) return false;
    return !ir_text_reserved(s, n);
}
