/* trace.c: printing traces as text and as C, parsing text traces, and
 * replaying them.
 *
 * All four are driven by the signatures in instructions.def, so a new
 * primitive gets them for free.  Handle names are b<N> / l<N> with N the
 * handle's creation index; since every handle comes from a traced call,
 * replaying a trace on a fresh schedule recreates the same numbering and
 * therefore prints the same text.
 *
 * Sampling instructions print the decision they took as a keyword
 * argument, `decision=[...]` (in C, the decision argument), so a printed
 * trace replays the same choices; a line without it samples anew, and
 * tir_sched_replay_with_decisions rewrites or drops decisions of the
 * parsed text before applying it (how a search mutates a trace).
 * Probabilities print in the shortest form that reads back exactly.
 *
 * Split factor lists write TIR_SPLIT_INFER as `None` (TIR_SPLIT_INFER in
 * C).  Traces printed before the marker became -1 wrote it as 0; such a
 * line is now refused by split (TIR_ERR_SCHED_NONPOSITIVE_FACTOR, with
 * its line number) rather than silently reinterpreted: replace the 0 by
 * None.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

/* ------------------------------------------------------------- printing */

/* A string literal, in text (c = false) or C.  In C every '?' is written
 * \? : ISO C11 reads "??=" as '#' and "??/" as a backslash (trigraphs),
 * so an annotation value holding them would compile to another string or
 * not at all. */
static void put_string(ir_strbuf *sb, const char *s, bool c) {
    ir_sb_putc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '?': ir_sb_puts(sb, c ? "\\?" : "?"); break;
        case '"': ir_sb_puts(sb, "\\\""); break;
        case '\\': ir_sb_puts(sb, "\\\\"); break;
        case '\n': ir_sb_puts(sb, "\\n"); break;
        case '\t': ir_sb_puts(sb, "\\t"); break;
        default:
            if (*p < 0x20 || *p >= 0x7f)
                ir_sb_printf(sb, "\\%03o", *p);
            else
                ir_sb_putc(sb, (char)*p);
        }
    }
    ir_sb_putc(sb, '"');
}

static void put_int(ir_strbuf *sb, int64_t v, bool c) {
    if (c && v == INT64_MIN)
        ir_sb_puts(sb, "INT64_MIN");
    else if (c && (v > INT32_MAX || v < INT32_MIN))
        ir_sb_printf(sb, "INT64_C(%lld)", (long long)v);
    else
        ir_sb_printf(sb, "%lld", (long long)v);
}

static void put_rv(ir_strbuf *sb, const tir_schedule *s, uint32_t id) {
    ir_sb_puts(sb, sch_rv_name(s, id));
}

/* The shortest %g form of v that reads back as v. */
static void put_double(ir_strbuf *sb, double v) {
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    ir_sb_puts(sb, buf);
}

/* A probability list: as many as the int list before it (text or C). */
static void put_doubles(ir_strbuf *sb, int n, const double *v, bool c) {
    if (c && n == 0) {
        ir_sb_puts(sb, "NULL");
        return;
    }
    ir_sb_puts(sb, c ? "(const double[]){" : "[");
    for (int j = 0; j < n; j++) {
        if (j) ir_sb_puts(sb, ", ");
        put_double(sb, v[j]);
    }
    ir_sb_putc(sb, c ? '}' : ']');
}

static const char *list_ctype(char t) {
    return t == 'L' ? "tir_loop_rv" : t == 'B' ? "tir_block_rv" : t == 'V' ? "tir_value_rv"
                                                                           : "int64_t";
}

/* The arguments of in, comma separated, in text (c = false) or C form. */
static void put_args(ir_strbuf *sb, const tir_schedule *s, const sch_inst *in, bool c) {
    sch_sig sig;
    sch_sig_parse(in->kind, &sig);
    for (int i = 0; i < in->nargs; i++) {
        const sch_arg *a = &in->args[i];
        char t = i < sig.nin ? sig.in[i] : sig.attr[i - sig.nin];
        if (t == 'd' && !c && a->n == 0) continue; /* no decision: omitted */
        if (i > 0 || c) ir_sb_puts(sb, ", ");
        if (t == 'd' && !c) ir_sb_puts(sb, "decision=");
        switch (t) {
        case 'b':
        case 'l':
        case 'v': put_rv(sb, s, a->rv); break;
        case 'i': put_int(sb, a->i, c); break;
        case 's': put_string(sb, a->s, c); break;
        case 'D': put_doubles(sb, in->args[i - 1].n, a->dbls, c); break;
        case 'L':
        case 'B':
        case 'V':
        case 'I':
        case 'F':
        case 'd':
            if (c && a->n == 0) {
                ir_sb_puts(sb, "0, NULL");
                break;
            }
            if (c)
                ir_sb_printf(sb, "%d, (const %s[]){", a->n, list_ctype(t));
            else
                ir_sb_putc(sb, '[');
            for (int j = 0; j < a->n; j++) {
                if (j) ir_sb_puts(sb, ", ");
                if (!sch_sig_is_ints(t))
                    put_rv(sb, s, a->rvs[j]);
                else if (t == 'F' && a->ints[j] == TIR_SPLIT_INFER)
                    ir_sb_puts(sb, c ? "TIR_SPLIT_INFER" : "None");
                else
                    put_int(sb, a->ints[j], c);
            }
            ir_sb_putc(sb, c ? '}' : ']');
            break;
        default: TIR_UNREACHABLE();
        }
    }
}

static void put_inst_text(ir_strbuf *sb, const tir_schedule *s, const sch_inst *in) {
    sch_sig sig;
    sch_sig_parse(in->kind, &sig);
    if (sig.out == 'b' || sig.out == 'l' || sig.out == 'v') {
        put_rv(sb, s, in->outs[0]);
        ir_sb_puts(sb, " = ");
    } else if (sig.out && sig.out != 'c') {
        ir_sb_putc(sb, '[');
        for (int i = 0; i < in->nouts; i++) {
            if (i) ir_sb_puts(sb, ", ");
            put_rv(sb, s, in->outs[i]);
        }
        ir_sb_puts(sb, "] = ");
    }
    ir_sb_printf(sb, "%s(", sch_inst_table[in->kind].name);
    put_args(sb, s, in, false);
    ir_sb_putc(sb, ')');
}

const char *tir_sched_trace_text(const tir_schedule *s) {
    if (!s) return "";
    ir_strbuf sb;
    ir_sb_init(&sb);
    for (int i = 0; i < s->ntrace; i++) {
        put_inst_text(&sb, s, &s->trace[i]);
        ir_sb_putc(&sb, '\n');
    }
    if (!sb.data) return "";
    return ir_sb_finish(&sb, s->ctx);
}

const char *sch_inst_text(const tir_schedule *s, int i) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    put_inst_text(&sb, s, &s->trace[i]);
    return ir_sb_finish(&sb, s->ctx);
}

/* Whether identifier name (n characters) may be declared by the header
 * the generated code includes, minitir/schedule.h, and what it includes
 * (<stdbool.h>, <stddef.h>, <stdint.h>): a function of that name then
 * does not compile ("bool", "size_t", "NULL", "INT32_MAX", "TIR_OK",
 * "tir_status", "tir_sched_split").  The library's prefixes, names
 * reserved to the implementation, *_t and the standard headers' macros. */
static bool header_name(const char *name, size_t n) {
    static const char *const std[] = {"bool", "true", "false", "NULL", "offsetof"};
    for (size_t i = 0; i < sizeof std / sizeof std[0]; i++)
        if (strcmp(name, std[i]) == 0) return true;
    if (strncmp(name, "tir_", 4) == 0 || strncmp(name, "TIR_", 4) == 0 ||
        (name[0] == '_' && (name[1] == '_' || isupper((unsigned char)name[1]))) ||
        (n > 2 && strcmp(name + n - 2, "_t") == 0))
        return true;
    bool upper = true; /* INT32_MAX, UINT64_C, SIZE_MAX, PTRDIFF_MIN, ... */
    for (size_t i = 0; i < n; i++) upper = upper && !islower((unsigned char)name[i]);
    return upper && ((n > 4 && (strcmp(name + n - 4, "_MAX") == 0 ||
                                strcmp(name + n - 4, "_MIN") == 0)) ||
                     (n > 2 && strcmp(name + n - 2, "_C") == 0));
}

/* Whether name can name the C function (an identifier, not a C11
 * keyword): pasted as given, anything else would not compile, or compile
 * to something else ("f(void); int g"). */
static bool c_identifier(const char *name) {
    static const char *const kw[] = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
        "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
        "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
        "switch", "typedef", "union", "unsigned", "void", "volatile", "while"};
    /* the _Keywords are reserved names, which header_name refuses */
    size_t n = strlen(name);
    if (n == 0 || n > 255 || isdigit((unsigned char)name[0])) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_') return false;
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strcmp(name, kw[i]) == 0) return false;
    return !header_name(name, n);
}

const char *tir_sched_trace_c(const tir_schedule *s, const char *fn_name) {
    if (!s) return "";
    if (!fn_name) fn_name = "apply_schedule";
    if (!c_identifier(fn_name)) {
        tir_ctx_fail(s->ctx, TIR_ERR_INVALID_ARG,
                     "tir_sched_trace_c: \"%.80s\" is not a C identifier (letters, digits "
                     "and '_', not a digit first, not a keyword) that minitir/schedule.h "
                     "leaves free (not tir_* or TIR_*, *_t, bool, NULL, INT32_MAX, ...)",
                     fn_name);
        return "";
    }
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_puts(&sb, "/* Schedule trace printed by minitir (tir_sched_trace_c). */\n"
                    "#include \"minitir/schedule.h\"\n\n");
    ir_sb_printf(&sb, "tir_status %s(tir_schedule *sch) {\n", fn_name);
    ir_sb_puts(&sb, "    tir_status st = TIR_OK;\n");
    /* Declare every handle the trace creates. */
    for (char kind = 'b'; kind; kind = kind == 'b' ? 'l' : kind == 'l' ? 'v' : 0) {
        int col = 0;
        for (int i = 0; i < s->ntrace; i++)
            for (int j = 0; j < s->trace[i].nouts; j++) {
                uint32_t id = s->trace[i].outs[j];
                if (s->entries[id - 1].kind != kind) continue;
                if (col == 0)
                    ir_sb_printf(&sb, "    %s ", list_ctype((char)(kind - 'a' + 'A')));
                else
                    ir_sb_puts(&sb, ", ");
                put_rv(&sb, s, id);
                if (++col == 8) {
                    ir_sb_puts(&sb, ";\n");
                    col = 0;
                }
            }
        if (col) ir_sb_puts(&sb, ";\n");
    }
    for (int i = 0; i < s->ntrace; i++) {
        const sch_inst *in = &s->trace[i];
        sch_sig sig;
        sch_sig_parse(in->kind, &sig);
        const char *name = sch_inst_table[in->kind].name;
        /* The text form as a comment; a "*" "/" inside a string would end
           it, a "/" "*" is an error under -Werror=comment, and "??" could
           start a trigraph: each pair is split by a space. */
        ir_sb_puts(&sb, "    /* ");
        for (const char *t = sch_inst_text(s, i); *t; t++) {
            ir_sb_putc(&sb, *t);
            if ((t[0] == '*' && t[1] == '/') || (t[0] == '/' && t[1] == '*') ||
                (t[0] == '?' && t[1] == '?'))
                ir_sb_putc(&sb, ' ');
        }
        ir_sb_puts(&sb, " */\n");
        switch (sig.out) {
        case 0:
        case 'b':
        case 'l':
        case 'v':
        case 'c':
            ir_sb_printf(&sb, "    if ((st = tir_sched_%s(sch", name);
            put_args(&sb, s, in, true);
            if (sig.out == 'c') {
                /* Only calls that changed something are traced. */
                ir_sb_puts(&sb, ", NULL");
            } else if (sig.out) {
                ir_sb_puts(&sb, ", &");
                put_rv(&sb, s, in->outs[0]);
            }
            ir_sb_puts(&sb, ")) != TIR_OK) return st;\n");
            break;
        case 'L':
        case 'V':
            ir_sb_printf(&sb, "    {\n        %s o[%d];\n",
                         sig.out == 'L' ? "tir_loop_rv" : "tir_value_rv", in->nouts);
            ir_sb_printf(&sb, "        if ((st = tir_sched_%s(sch", name);
            put_args(&sb, s, in, true);
            ir_sb_puts(&sb, ", o)) != TIR_OK) return st;\n");
            for (int j = 0; j < in->nouts; j++) {
                ir_sb_puts(&sb, "        ");
                put_rv(&sb, s, in->outs[j]);
                ir_sb_printf(&sb, " = o[%d];\n", j);
            }
            ir_sb_puts(&sb, "    }\n");
            break;
        case 'M':
        case 'N':
            ir_sb_printf(&sb, "    {\n        const %s *o;\n        int n;\n",
                         sig.out == 'M' ? "tir_loop_rv" : "tir_block_rv");
            ir_sb_printf(&sb, "        if ((st = tir_sched_%s(sch", name);
            put_args(&sb, s, in, true);
            ir_sb_puts(&sb, ", &o, &n)) != TIR_OK) return st;\n");
            ir_sb_printf(&sb, "        if (n != %d) return TIR_ERR_SCHED_TRACE;\n", in->nouts);
            for (int j = 0; j < in->nouts; j++) {
                ir_sb_puts(&sb, "        ");
                put_rv(&sb, s, in->outs[j]);
                ir_sb_printf(&sb, " = o[%d];\n", j);
            }
            if (in->nouts == 0) ir_sb_puts(&sb, "        (void)o;\n");
            ir_sb_puts(&sb, "    }\n");
            break;
        default: TIR_UNREACHABLE();
        }
    }
    /* Handles the trace creates but never uses would warn. */
    for (int i = 0; i < s->ntrace; i++)
        for (int j = 0; j < s->trace[i].nouts; j++) {
            ir_sb_puts(&sb, "    (void)");
            put_rv(&sb, s, s->trace[i].outs[j]);
            ir_sb_puts(&sb, ";\n");
        }
    ir_sb_puts(&sb, "    return st;\n}\n");
    return ir_sb_finish(&sb, s->ctx);
}

/* -------------------------------------------------------------- parsing */

typedef enum { T_EOF, T_NL, T_IDENT, T_INT, T_FLOAT, T_STR, T_PUNCT } tok_kind;

typedef struct {
    tir_ctx *ctx;
    const char *p, *end, *line_start;
    int line;
    /* current token */
    tok_kind kind;
    const char *tok;
    size_t toklen;
    int tline, tcol;
    int64_t ival;
    double dval; /* T_FLOAT */
    const char *sval; /* interned, T_IDENT / T_STR */
    char punct;
    tir_status err;
} lexer;

static tir_status lex_fail(lexer *lx, const char *fmt, const char *arg) {
    if (lx->err) return lx->err;
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg);
    lx->err = tir_ctx_fail(lx->ctx, TIR_ERR_PARSE, "%d:%d: %s", lx->tline, lx->tcol, msg);
    return lx->err;
}

/* A number with a fraction or an exponent (a probability) at lx->p:
 * lexes it as T_FLOAT and returns true; false leaves lx alone. */
static bool lex_float(lexer *lx) {
    const char *q = lx->p + (*lx->p == '-');
    while (q < lx->end && isdigit((unsigned char)*q)) q++;
    if (q >= lx->end || (*q != '.' && *q != 'e' && *q != 'E')) return false;
    char buf[64];
    size_t n = 0;
    for (q = lx->p; q < lx->end && n + 1 < sizeof buf; q++) {
        bool sign = (*q == '-' || *q == '+') && (n == 0 || buf[n - 1] == 'e' || buf[n - 1] == 'E');
        if (!isdigit((unsigned char)*q) && *q != '.' && *q != 'e' && *q != 'E' && !sign) break;
        buf[n++] = *q;
    }
    buf[n] = '\0';
    char *endp;
    lx->dval = strtod(buf, &endp);
    if (*endp != '\0' || n + 1 == sizeof buf) {
        lex_fail(lx, "malformed number%s", "");
        lx->kind = T_EOF;
        return true;
    }
    lx->p += n;
    lx->kind = T_FLOAT;
    return true;
}

/* The byte an escape stands for (lx->p after the backslash), or -1.  Only
 * what put_string writes: \n, \t, \", \\, octal \1 to \377, and \? (C
 * traces write it; a line copied from one reads the same).  Anything else
 * was once read as the letter itself ("\r" as 'r'), and \000 as a NUL that
 * cut the string short ("C\000junk" named block "C"). */
static int lex_escape(lexer *lx) {
    if (lx->p >= lx->end) return -1;
    char e = *lx->p++;
    if (e == 'n') return '\n';
    if (e == 't') return '\t';
    if (e == '"' || e == '\\' || e == '?') return e;
    if (e < '0' || e > '7') return -1;
    int v = e - '0';
    for (int k = 0; k < 2 && lx->p < lx->end && *lx->p >= '0' && *lx->p <= '7'; k++)
        v = v * 8 + (*lx->p++ - '0');
    return v >= 1 && v <= 0377 ? v : -1;
}

/* A string literal (lx->p at its quote) as T_STR; T_EOF after an error. */
static void lex_string(lexer *lx) {
    lx->p++;
    ir_strbuf sb;
    ir_sb_init(&sb);
    const char *err = NULL;
    for (;;) {
        if (lx->p >= lx->end || *lx->p == '\n') {
            err = "unterminated string";
            break;
        }
        char d = *lx->p++;
        if (d == '"') break;
        int v = d == '\\' ? lex_escape(lx) : d;
        if (d == '\0' || v < 0) {
            err = d == '\0' ? "a NUL byte in string"
                            : "invalid escape in string (\\n, \\t, \\\", \\\\, \\? and octal "
                              "\\1 to \\377 only)";
            break;
        }
        ir_sb_putc(&sb, (char)v);
    }
    if (err) {
        ir_sb_free(&sb);
        lex_fail(lx, "%s", err);
        lx->kind = T_EOF;
        return;
    }
    ir_sb_putc(&sb, '\0');
    lx->sval = tir_intern(lx->ctx, sb.data);
    ir_sb_free(&sb);
    lx->kind = T_STR;
}

static void next(lexer *lx) {
    /* Skip blanks and comments, but not newlines. */
    for (;;) {
        while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\r')) lx->p++;
        if (lx->p < lx->end && *lx->p == '#')
            while (lx->p < lx->end && *lx->p != '\n') lx->p++;
        else
            break;
    }
    lx->tline = lx->line;
    lx->tcol = (int)(lx->p - lx->line_start) + 1;
    lx->tok = lx->p;
    if (lx->p >= lx->end) {
        lx->kind = T_EOF;
        return;
    }
    char ch = *lx->p;
    if (ch == '\n') {
        lx->p++;
        lx->line++;
        lx->line_start = lx->p;
        lx->kind = T_NL;
        return;
    }
    if (isalpha((unsigned char)ch) || ch == '_') {
        while (lx->p < lx->end && (isalnum((unsigned char)*lx->p) || *lx->p == '_')) lx->p++;
        lx->kind = T_IDENT;
        lx->sval = tir_intern_n(lx->ctx, lx->tok, (size_t)(lx->p - lx->tok));
        return;
    }
    if (isdigit((unsigned char)ch) || (ch == '-' && lx->p + 1 < lx->end &&
                                       isdigit((unsigned char)lx->p[1]))) {
        if (lex_float(lx)) return;
        bool neg = ch == '-';
        if (neg) lx->p++;
        uint64_t v = 0;
        bool overflow = false;
        while (lx->p < lx->end && isdigit((unsigned char)*lx->p)) {
            unsigned d = (unsigned)(*lx->p++ - '0');
            if (v > (UINT64_MAX - d) / 10) overflow = true;
            v = v * 10 + d;
        }
        if (overflow || v > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) {
            lex_fail(lx, "integer out of range%s", "");
            lx->kind = T_EOF;
            return;
        }
        lx->ival = neg ? (int64_t)(0 - v) : (int64_t)v;
        lx->kind = T_INT;
        return;
    }
    if (ch == '"') {
        lex_string(lx);
        return;
    }
    if (strchr("[](),=", ch)) {
        lx->p++;
        lx->kind = T_PUNCT;
        lx->punct = ch;
        return;
    }
    char bad[2] = {ch, 0};
    lex_fail(lx, "unexpected character '%s'", bad);
    lx->kind = T_EOF;
}

static bool is_punct(const lexer *lx, char c) { return lx->kind == T_PUNCT && lx->punct == c; }

static tir_status expect(lexer *lx, char c) {
    if (!is_punct(lx, c)) {
        char want[2] = {c, 0};
        return lex_fail(lx, "expected '%s'", want);
    }
    next(lx);
    return TIR_OK;
}

/* A parsed instruction: names instead of handle ids. */
typedef struct {
    sch_inst_kind kind;
    int line;
    sch_arg args[8];
    const char *in_names[8];       /* b, l */
    const char **list_names[8];    /* L */
    int nout_names;
    const char **out_names;
} parsed_inst;

/* Parses a bracketed list of identifiers (names) or integers (ints);
 * with factors, `None` stands for TIR_SPLIT_INFER. */
static tir_status parse_list(lexer *lx, bool names, bool factors, int *n,
                             const char ***names_out, int64_t **ints_out) {
    TIR_TRY(expect(lx, '['));
    ir_vec v = {0};
    int64_t *ints = NULL;
    int cnt = 0, cap = 0;
    while (!is_punct(lx, ']')) {
        if (cnt > 0 && expect(lx, ',') != TIR_OK) break;
        if (names) {
            if (lx->kind != T_IDENT) {
                lex_fail(lx, "expected a handle name%s", "");
                break;
            }
            ir_vec_push(&v, lx->sval);
        } else {
            bool none = factors && lx->kind == T_IDENT && strcmp(lx->sval, "None") == 0;
            if (lx->kind != T_INT && !none) {
                lex_fail(lx, factors ? "expected an integer or None%s" : "expected an integer%s",
                         "");
                break;
            }
            if (cnt == cap) {
                cap = cap ? 2 * cap : 8;
                int64_t *ni = IR_NEWN(lx->ctx, int64_t, cap);
                if (cnt) memcpy(ni, ints, sizeof *ints * (size_t)cnt);
                ints = ni;
            }
            ints[cnt] = none ? TIR_SPLIT_INFER : lx->ival;
        }
        cnt++;
        next(lx);
    }
    if (lx->err) {
        ir_vec_free(&v);
        return lx->err;
    }
    next(lx); /* ']' */
    *n = cnt;
    if (names) {
        *names_out = ir_copy_array(lx->ctx, v.items, sizeof(char *), v.n);
        ir_vec_free(&v);
    } else {
        *ints_out = ints;
    }
    return TIR_OK;
}

/* Parses a bracketed list of numbers (probabilities) into *out (arena). */
static tir_status parse_doubles(lexer *lx, int *n, const double **out) {
    TIR_TRY(expect(lx, '['));
    double *v = NULL;
    int cnt = 0, cap = 0;
    while (!is_punct(lx, ']')) {
        if (cnt > 0) TIR_TRY(expect(lx, ','));
        if (lx->kind != T_INT && lx->kind != T_FLOAT)
            return lex_fail(lx, "expected a number%s", "");
        if (cnt == cap) {
            cap = cap ? 2 * cap : 8;
            double *nv = IR_NEWN(lx->ctx, double, cap);
            if (cnt) memcpy(nv, v, sizeof *v * (size_t)cnt);
            v = nv;
        }
        v[cnt++] = lx->kind == T_INT ? (double)lx->ival : lx->dval;
        next(lx);
    }
    next(lx); /* ']' */
    *n = cnt;
    *out = v;
    return TIR_OK;
}

/* One argument of type t into a (names of handles into pi). */
static tir_status parse_arg(lexer *lx, parsed_inst *pi, int i, char t) {
    sch_arg *a = &pi->args[i];
    switch (t) {
    case 'b':
    case 'l':
    case 'v':
        if (lx->kind != T_IDENT) return lex_fail(lx, "expected a handle name%s", "");
        pi->in_names[i] = lx->sval;
        next(lx);
        return TIR_OK;
    case 'L':
    case 'B':
    case 'V': return parse_list(lx, true, false, &a->n, &pi->list_names[i], NULL);
    case 'd':
        if (lx->kind != T_IDENT || strcmp(lx->sval, "decision") != 0)
            return lex_fail(lx, "expected decision=[...]%s", "");
        next(lx);
        TIR_TRY(expect(lx, '='));
        /* fall through */
    case 'I':
    case 'F': {
        int64_t *ints = NULL;
        TIR_TRY(parse_list(lx, false, t == 'F', &a->n, NULL, &ints));
        a->ints = ints;
        return TIR_OK;
    }
    case 'D': {
        int n = 0;
        TIR_TRY(parse_doubles(lx, &n, &a->dbls));
        if (n != pi->args[i - 1].n)
            return lex_fail(lx, "expected as many probabilities as candidates%s", "");
        return TIR_OK;
    }
    case 'i':
        if (lx->kind != T_INT) return lex_fail(lx, "expected an integer%s", "");
        a->i = lx->ival;
        next(lx);
        return TIR_OK;
    case 's':
        if (lx->kind != T_STR) return lex_fail(lx, "expected a string%s", "");
        a->s = lx->sval;
        next(lx);
        return TIR_OK;
    default: TIR_UNREACHABLE();
    }
}

static tir_status parse_inst(lexer *lx, parsed_inst *pi) {
    memset(pi, 0, sizeof *pi);
    pi->line = lx->tline;
    /* Outputs. */
    const char *first = NULL, *first_tok = NULL;
    bool list_out = false;
    if (is_punct(lx, '[')) {
        TIR_TRY(parse_list(lx, true, false, &pi->nout_names, &pi->out_names, NULL));
        TIR_TRY(expect(lx, '='));
        list_out = true;
    } else if (lx->kind == T_IDENT) {
        first = lx->sval;
        first_tok = lx->tok;
        next(lx);
        if (is_punct(lx, '=')) {
            next(lx);
            pi->nout_names = 1;
            pi->out_names = IR_NEWN(lx->ctx, const char *, 1);
            pi->out_names[0] = first;
            first = NULL;
        }
    } else {
        return lex_fail(lx, "expected an instruction%s", "");
    }
    int name_line = lx->tline, name_col = lx->tcol;
    if (!first) {
        if (lx->kind != T_IDENT) return lex_fail(lx, "expected an instruction name%s", "");
        first = lx->sval;
        next(lx);
    } else {
        name_col = 1 + (int)(first_tok - lx->line_start);
    }
    int k = 0;
    while (k < SCH_INST_COUNT && strcmp(sch_inst_table[k].name, first) != 0) k++;
    if (k == SCH_INST_COUNT) {
        lx->tline = name_line;
        lx->tcol = name_col;
        return lex_fail(lx, "unknown instruction \"%s\"", first);
    }
    pi->kind = (sch_inst_kind)k;
    sch_sig sig;
    sch_sig_parse(pi->kind, &sig);
    bool want_list = sig.out == 'L' || sig.out == 'M' || sig.out == 'N' || sig.out == 'V';
    if ((sig.out == 0 || sig.out == 'c') && (pi->nout_names || list_out))
        return lex_fail(lx, "%s has no outputs", first);
    if ((sig.out == 'b' || sig.out == 'l' || sig.out == 'v') && (list_out || pi->nout_names != 1))
        return lex_fail(lx, "%s has one output: write `x = ...`", first);
    if (want_list && !list_out)
        return lex_fail(lx, "%s has a list of outputs: write `[x, y] = ...`", first);
    TIR_TRY(expect(lx, '('));
    int nargs = sig.nin + sig.nattr;
    for (int i = 0; i < nargs; i++) {
        char t = i < sig.nin ? sig.in[i] : sig.attr[i - sig.nin];
        if (t == 'd' && is_punct(lx, ')')) break; /* no decision: sample */
        if (i > 0) TIR_TRY(expect(lx, ','));
        TIR_TRY(parse_arg(lx, pi, i, t));
    }
    TIR_TRY(expect(lx, ')'));
    if (lx->kind != T_NL && lx->kind != T_EOF)
        return lex_fail(lx, "expected the end of the line%s", "");
    return TIR_OK;
}

/* ---------------------------------------------------------------- replay */

typedef struct {
    const char **names; /* interned */
    uint32_t *ids;
    int n, cap;
} name_env;

static void env_bind(name_env *e, const char *name, uint32_t id) {
    for (int i = 0; i < e->n; i++)
        if (e->names[i] == name) {
            e->ids[i] = id;
            return;
        }
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 32;
        e->names = ir_xrealloc(e->names, sizeof *e->names * (size_t)e->cap);
        e->ids = ir_xrealloc(e->ids, sizeof *e->ids * (size_t)e->cap);
    }
    e->names[e->n] = name;
    e->ids[e->n++] = id;
}

static bool env_get(const name_env *e, const char *name, uint32_t *id) {
    for (int i = 0; i < e->n; i++)
        if (e->names[i] == name) {
            *id = e->ids[i];
            return true;
        }
    return false;
}

/* Applies one parsed instruction. */
static tir_status apply(tir_schedule *s, name_env *env, parsed_inst *pi) {
    tir_ctx *ctx = s->ctx;
    sch_sig sig;
    sch_sig_parse(pi->kind, &sig);
    for (int i = 0; i < sig.nin + sig.nattr; i++) {
        sch_arg *a = &pi->args[i];
        char t = i < sig.nin ? sig.in[i] : sig.attr[i - sig.nin];
        if (t != 'b' && t != 'l' && t != 'v' && !sch_sig_is_rvs(t)) continue;
        if (sch_sig_is_rvs(t)) {
            uint32_t *ids = IR_NEWN(ctx, uint32_t, a->n), *tags = IR_NEWN(ctx, uint32_t, a->n);
            for (int j = 0; j < a->n; j++) tags[j] = s->serial;
            a->tags = tags;
            for (int j = 0; j < a->n; j++)
                if (!env_get(env, pi->list_names[i][j], &ids[j]))
                    return tir_ctx_fail(ctx, TIR_ERR_SCHED_TRACE,
                                        "trace line %d: %s: unknown handle %s", pi->line,
                                        sch_inst_table[pi->kind].name, pi->list_names[i][j]);
            a->rvs = ids;
        } else {
            a->tag = s->serial;
            if (!env_get(env, pi->in_names[i], &a->rv))
                return tir_ctx_fail(ctx, TIR_ERR_SCHED_TRACE,
                                    "trace line %d: %s: unknown handle %s", pi->line,
                                    sch_inst_table[pi->kind].name, pi->in_names[i]);
        }
    }
    if (sig.out == 'L') {
        /* Outputs as many as the first list argument has entries. */
        int want = -1;
        for (int i = 0; i < sig.nin + sig.nattr && want < 0; i++) {
            char t = i < sig.nin ? sig.in[i] : sig.attr[i - sig.nin];
            if (t == 'L' || t == 'V' || sch_sig_is_ints(t)) want = pi->args[i].n;
        }
        if (want != pi->nout_names)
            return tir_ctx_fail(ctx, TIR_ERR_SCHED_TRACE,
                                "trace line %d: %s makes %d handles but the line names %d",
                                pi->line, sch_inst_table[pi->kind].name, want, pi->nout_names);
    }
    const uint32_t *outs;
    int nouts;
    tir_status st = sch_run(s, pi->kind, pi->args, &outs, &nouts);
    if (st != TIR_OK) {
        const char *msg = tir_ctx_sprintf(ctx, "%s", tir_ctx_error(ctx));
        return tir_ctx_fail(ctx, st, "trace line %d: %s", pi->line, msg);
    }
    if (nouts != pi->nout_names)
        return tir_ctx_fail(ctx, TIR_ERR_SCHED_TRACE,
                            "trace line %d: %s made %d handles but the line names %d",
                            pi->line, sch_inst_table[pi->kind].name, nouts, pi->nout_names);
    for (int j = 0; j < nouts; j++) env_bind(env, pi->out_names[j], outs[j]);
    return TIR_OK;
}

/* The index of instruction kind k's decision argument, or -1. */
static int decision_arg(sch_inst_kind k) {
    sch_sig sig;
    sch_sig_parse(k, &sig);
    for (int i = 0; i < sig.nattr; i++)
        if (sig.attr[i] == 'd') return sig.nin + i;
    return -1;
}

/* Puts the overrides into the parsed instructions' decision arguments. */
static tir_status apply_overrides(tir_schedule *s, parsed_inst *insts, int n, int nov,
                                  const tir_decision *ov) {
    if (nov < 0 || (nov > 0 && !ov))
        return sch_bad_arg(s, "replay_with_decisions", "the override list is NULL or negative");
    bool *seen = IR_NEWN(s->ctx, bool, n + 1);
    for (int j = 0; j < nov; j++) {
        int i = ov[j].inst;
        if (i < 0 || i >= n)
            return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_TRACE,
                                "replay_with_decisions: override %d names instruction %d, but "
                                "the trace has %d",
                                j, i, n);
        int d = decision_arg(insts[i].kind);
        const char *name = sch_inst_table[insts[i].kind].name;
        if (d < 0 || seen[i])
            return tir_ctx_fail(s->ctx, TIR_ERR_SCHED_TRACE,
                                "replay_with_decisions: override %d: instruction %d (trace line "
                                "%d, %s) %s",
                                j, i, insts[i].line, name,
                                d < 0 ? "takes no decision" : "is overridden twice");
        if (ov[j].n < 0 || (ov[j].n > 0 && !ov[j].values))
            return tir_ctx_fail(s->ctx, TIR_ERR_INVALID_ARG,
                                "replay_with_decisions: override %d has %d values%s (n >= 0; "
                                "0 samples anew)",
                                j, ov[j].n, ov[j].values ? "" : " at NULL");
        seen[i] = true;
        insts[i].args[d].n = ov[j].n;
        insts[i].args[d].ints = ov[j].values;
    }
    return TIR_OK;
}

/* Parses all of text into *insts (heap) first: a syntax error then
 * changes nothing. */
static tir_status parse_all(tir_schedule *s, const char *text, size_t len, parsed_inst **insts,
                            int *n) {
    lexer lx = {.ctx = s->ctx, .p = text, .end = text + len, .line_start = text, .line = 1};
    int cap = 0;
    *insts = NULL;
    *n = 0;
    next(&lx);
    while (lx.kind != T_EOF && !lx.err) {
        if (lx.kind == T_NL) {
            next(&lx);
            continue;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            *insts = ir_xrealloc(*insts, sizeof **insts * (size_t)cap);
        }
        if (parse_inst(&lx, &(*insts)[*n]) != TIR_OK) break;
        (*n)++;
    }
    return lx.err;
}

tir_status tir_sched_replay_with_decisions(tir_schedule *s, const char *text, size_t len,
                                           int noverrides, const tir_decision *overrides) {
    if (!s || !text) return sch_bad_arg(s, "replay", "text is NULL");
    parsed_inst *insts;
    int n;
    tir_status st = parse_all(s, text, len, &insts, &n);
    if (st == TIR_OK) st = apply_overrides(s, insts, n, noverrides, overrides);
    if (st != TIR_OK) {
        free(insts);
        return st;
    }
    sch_snapshot snap;
    sch_snapshot_take(s, &snap);
    name_env env = {0};
    for (int i = 0; i < n && st == TIR_OK; i++) st = apply(s, &env, &insts[i]);
    if (st != TIR_OK)
        sch_snapshot_restore(s, &snap);
    else
        sch_snapshot_free(&snap);
    free(env.names);
    free(env.ids);
    free(insts);
    return st;
}

tir_status tir_sched_replay(tir_schedule *s, const char *text, size_t len) {
    return tir_sched_replay_with_decisions(s, text, len, 0, NULL);
}

tir_status tir_sched_decisions(const tir_schedule *s, const tir_decision **out, int *n) {
    if (!s || !out || !n) return s ? sch_bad_arg((tir_schedule *)s, "decisions", "out is NULL")
                                   : TIR_ERR_INVALID_ARG;
    tir_decision *r = IR_NEWN(s->ctx, tir_decision, s->ntrace + 1);
    int k = 0;
    for (int i = 0; i < s->ntrace; i++) {
        int d = decision_arg(s->trace[i].kind);
        if (d < 0) continue;
        const sch_arg *a = &s->trace[i].args[d];
        r[k++] = (tir_decision){i, sch_inst_table[s->trace[i].kind].name, a->n, a->ints};
    }
    *out = r;
    *n = k;
    return TIR_OK;
}
