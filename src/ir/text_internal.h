/* text_internal.h: pieces shared by the TVMScript-style printer (printer.c)
 * and parser (parser.c, lexer.c): the token stream, and the few rules both
 * sides must agree on for the text to round-trip (which names are
 * reserved, how a float immediate is spelled, when two expressions are the
 * same).  Not installed.
 */
#ifndef MINITIR_TEXT_INTERNAL_H
#define MINITIR_TEXT_INTERNAL_H

#include "ir_internal.h"

/* Deepest nesting the parser accepts (expressions, statements, indents);
 * bounds its recursion on hostile input. */
#define IR_TEXT_MAX_DEPTH 200

typedef enum ir_tok_kind {
    TK_EOF,
    TK_NEWLINE,
    TK_INDENT,
    TK_DEDENT,
    TK_NAME,
    TK_INT,    /* decimal digits; magnitude in ival */
    TK_FLOAT,  /* digits with '.' or an exponent */
    TK_STRING, /* quoted, escapes still in the text */
    TK_LPAREN,
    TK_RPAREN,
    TK_LBRACK,
    TK_RBRACK,
    TK_LBRACE,
    TK_RBRACE,
    TK_COMMA,
    TK_COLON,
    TK_DOT,
    TK_ASSIGN,
    TK_AT,
    TK_ARROW,
    TK_PLUS,
    TK_MINUS,
    TK_STAR,
    TK_SLASH,
    TK_DSLASH,
    TK_PERCENT,
    TK_EQ,
    TK_NE,
    TK_LT,
    TK_LE,
    TK_GT,
    TK_GE,
} ir_tok_kind;

typedef struct ir_token {
    ir_tok_kind kind;
    int line, col; /* 1-based; col counts bytes */
    size_t pos, len;
    uint64_t ival; /* TK_INT */
} ir_token;

/* Splits text into tokens with Python's layout rules (NEWLINE, INDENT and
 * DEDENT; newlines inside brackets are spaces; comments dropped).  On
 * success *toks is a heap array of *ntoks tokens ending in TK_EOF that the
 * caller frees.  On failure records "line:col: message" in ctx, sets *toks
 * to NULL and returns TIR_ERR_PARSE. */
tir_status ir_lex(tir_ctx *ctx, const char *text, size_t len, ir_token **toks, int *ntoks);

/* Decodes a TK_STRING token (already validated by ir_lex) into out, which
 * must hold tok->len bytes; returns the decoded length (no NUL added). */
size_t ir_lex_string(const char *text, const ir_token *tok, char *out);

/* A printable token name for messages ("')'", "a newline", "'for'"). */
const char *ir_tok_describe(const char *text, const ir_token *tok, char *buf, size_t n);

/* Identifiers the printer never gives to a variable or buffer because the
 * parser reads them as syntax (Python keywords, "T", "range"). */
bool ir_text_reserved(const char *s, size_t n);
/* True if s is a Python identifier that is not reserved. */
bool ir_text_is_ident(const char *s);

/* Writes the shortest decimal spelling of a finite double that reads back
 * bit-exactly with strtod. */
void ir_text_format_double(double v, char *buf, size_t n);
/* strtod in the C locale (the inverse of ir_text_format_double). */
double ir_text_strtod(const char *s);

/* Deep equality of expressions where free variables and buffers must be
 * the same objects (not up to renaming, unlike tir_struct_equal); only
 * the variables of Lets inside may differ, consistently.  The printer
 * and parser use it to recognise "stop = start + extent" and loop domains
 * that a block iterator reuses. */
bool ir_text_expr_same(const tir_expr *a, const tir_expr *b);

/* The dtype a call to op gets when the text does not spell it out (as
 * T.call_intrin("dtype", ...) does): void for barriers and async copies,
 * handle for address_of, else the first argument's. */
tir_dtype ir_text_call_dtype(tir_intrin op, int nargs, const tir_expr *const *args);

/* True if v is a value of the integer (or bool) type t. */
bool ir_text_int_fits(tir_dtype t, int64_t v);

/* An index map "lambda i, j: (j, i)": variables of one integer dtype and
 * output expressions over them (the tuple's parentheses, or brackets, are
 * optional).  Arena arrays. */
typedef struct ir_index_map {
    int nvars, nouts;
    const tir_var *const *vars;
    const tir_expr *const *outs;
} ir_index_map;
/* Parses an index map whose variables have dtype dt; every output must
 * have that dtype too.  TIR_ERR_PARSE / TIR_ERR_TYPE with "line:col:
 * message" in ctx on failure. */
tir_status ir_parse_index_map(tir_ctx *ctx, const char *text, size_t len, tir_dtype dt,
                              ir_index_map *out);

#endif
