/* arith_internal.h: the analyzer's state and the pieces that simplify.c,
 * analyzer.c and intset.c share.  Not installed.
 *
 * The analyzer keeps the ranges of bound variables and two memo tables
 * (simplified forms and constant bounds).  Every change of a binding bumps
 * a generation counter instead of clearing the tables: an entry is only
 * trusted when it was stored under the current generation, so binding a
 * loop variable costs O(1).  Temporary data of one query (linear sums)
 * lives in a scratch arena that is rewound when the outermost public call
 * returns, so simplification leaves no heap garbage behind.
 */
#ifndef MINITIR_ARITH_INTERNAL_H
#define MINITIR_ARITH_INTERNAL_H

#include <stddef.h>

#include "ir_internal.h"

#define AR_NEG_INF INT64_MIN
#define AR_POS_INF INT64_MAX

typedef struct ar_bind {
    const tir_var *var; /* NULL: empty slot */
    const tir_expr *min, *extent;
    tir_int_bound bound;
    bool active;   /* false after unbind (the slot stays) */
    bool symbolic; /* min or extent is not a constant */
} ar_bind;

typedef struct ar_memo_ent {
    const void *key;
    uint32_t gen;
    const tir_expr *expr;
    tir_int_bound bound;
} ar_memo_ent;

typedef struct ar_memo {
    ar_memo_ent *ents;
    size_t cap, used;
} ar_memo;

struct tir_analyzer {
    tir_ctx *ctx;
    ar_bind *binds; /* open addressing by var pointer */
    size_t bind_cap, bind_used;
    int nsymbolic; /* active symbolic bindings */
    uint32_t gen;
    ar_memo simp_memo, bound_memo;
    /* results found inside a symbolic proof (where nested proofs are off)
     * are kept apart, valid for that one proof: sym_gen changes with every
     * proof and every binding */
    ar_memo sym_memo;
    uint32_t sym_gen;
    ir_arena scratch;
    /* > 0 while a stored value is simplified (tir_analyzer_simplify_stmt):
     * its integer sums wrap as data does, whether or not they read a
     * buffer (the indices of its loads do not); see ar_set_wrap */
    int wrap_values;
    int depth;     /* nesting of public calls; scratch is rewound at 0 */
    int sym_depth; /* > 0 while a symbolic proof runs (no nesting) */
};

/* ---------------------------------------------------- analyzer.c */

/* Sets a->wrap_values; a change starts a new memo generation, since a
 * sum's bounds and simplified form depend on whether it wraps. */
void ar_set_wrap(tir_analyzer *a, int w);

/* Whether integer arithmetic of expression e wraps (a stored value, or a
 * value of the user's data), rather than index arithmetic, whose signed
 * overflow is undefined. */
bool ar_wraps(const tir_analyzer *a, const tir_expr *e);

/* Bracket every public entry point (scratch lifetime). */
void ar_enter(tir_analyzer *a);
void ar_leave(tir_analyzer *a);
/* Scratch memory valid until the outermost public call returns. */
void *ar_scratch(tir_analyzer *a, size_t size);

/* The active binding of v, or NULL. */
const ar_bind *ar_lookup(const tir_analyzer *a, const tir_var *v);
/* Saves v's binding state so a scoped bind can be undone exactly. */
ar_bind ar_bind_save(const tir_analyzer *a, const tir_var *v);
void ar_bind_restore(tir_analyzer *a, const ar_bind *saved);
/* Binds v to an inclusive constant range without a symbolic domain. */
void ar_bind_bound(tir_analyzer *a, const tir_var *v, tir_int_bound b);

bool ar_memo_get(const ar_memo *m, uint32_t gen, const void *key, ar_memo_ent **out);
ar_memo_ent *ar_memo_put(ar_memo *m, uint32_t gen, const void *key);

/* Interval bound of an integer (or bool) expression, structural only. */
tir_int_bound ar_bound(tir_analyzer *a, const tir_expr *e);
/* The range of values of an integer dtype (bool: [0, 1]). */
tir_int_bound ar_dtype_bound(tir_dtype t);

/* ---------------------------------------------------- simplify.c */

const tir_expr *ar_simplify(tir_analyzer *a, const tir_expr *e);
/* A total order on expressions (variables and buffers by id), 0 when
 * structurally identical with the same variables. */
int ar_expr_cmp(const tir_expr *x, const tir_expr *y);
static inline bool ar_expr_eq(const tir_expr *x, const tir_expr *y) {
    return x == y || ar_expr_cmp(x, y) == 0;
}
/* Value v wrapped to integer dtype t (two's complement; bool: v != 0). */
int64_t ar_wrap(tir_dtype t, int64_t v);

/* ---------------------------------------------------- intset.c */

/* Symbolic bound of e free of every variable with a symbolic binding:
 * upper ? max : min.  NULL when unbounded.  Not simplified. */
const tir_expr *ar_symbolic_bound(tir_analyzer *a, const tir_expr *e, bool upper);
/* True when an operation of e (built by the analyzer: a relaxed end) may
 * pass its dtype, or divide by zero, for the variables' constant bounds;
 * false when it cannot or that is not known. */
bool ar_may_wrap(tir_analyzer *a, const tir_expr *e);

/* ---------------------------------------------------- integer helpers */

static inline int64_t ar_floordiv(int64_t x, int64_t y) {
    if (y == -1) return (int64_t)(0 - (uint64_t)x);
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
    return q;
}
static inline int64_t ar_floormod(int64_t x, int64_t y) {
    if (y == -1) return 0;
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}
static inline int64_t ar_truncdiv(int64_t x, int64_t y) {
    return y == -1 ? (int64_t)(0 - (uint64_t)x) : x / y;
}
static inline int64_t ar_truncmod(int64_t x, int64_t y) { return y == -1 ? 0 : x % y; }

/* Saturating arithmetic on bounds where INT64_MIN/MAX stand for -inf/+inf.
 * `hi` says which infinity wins in -inf + +inf: the upper end of a bound
 * takes +inf, the lower end -inf, so the result stays conservative. */
static inline int64_t ar_sat_add(int64_t x, int64_t y, bool hi) {
    bool ninf = x == AR_NEG_INF || y == AR_NEG_INF, pinf = x == AR_POS_INF || y == AR_POS_INF;
    if (ninf && pinf) return hi ? AR_POS_INF : AR_NEG_INF;
    if (ninf) return AR_NEG_INF;
    if (pinf) return AR_POS_INF;
    int64_t r;
    if (__builtin_add_overflow(x, y, &r)) return x > 0 ? AR_POS_INF : AR_NEG_INF;
    return r;
}
static inline int64_t ar_sat_neg(int64_t x) {
    if (x == AR_NEG_INF) return AR_POS_INF;
    if (x == AR_POS_INF) return AR_NEG_INF;
    return -x;
}
static inline int64_t ar_sat_mul(int64_t x, int64_t y) {
    if (x == 0 || y == 0) return 0;
    bool neg = (x < 0) != (y < 0);
    if (x == AR_NEG_INF || x == AR_POS_INF || y == AR_NEG_INF || y == AR_POS_INF)
        return neg ? AR_NEG_INF : AR_POS_INF;
    int64_t r;
    if (__builtin_mul_overflow(x, y, &r)) return neg ? AR_NEG_INF : AR_POS_INF;
    return r;
}
static inline bool ar_bound_finite(tir_int_bound b) {
    return b.min != AR_NEG_INF && b.max != AR_POS_INF;
}

#endif
