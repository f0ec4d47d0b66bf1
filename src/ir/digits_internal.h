/* digits_internal.h: the digits of affine indices, and the forcing step of
 * the proofs built on them, shared by the two proofs that accesses touch
 * elements of their own: the schedule's spatial_writes.c (no two instances
 * of a block store one element) and lowering's global_share.c (no two
 * threads of a kernel share an element of a global buffer).  Not installed.
 *
 * A variable used as v // c, v % c or (v // m) % c is split at those
 * boundaries into digits, each a variable of its own of a known range
 * (ir_digit_var), so that such an index is a sum of digits times constants
 * (an affine form, ir_lin).  Two accesses of one element give, per
 * dimension, an equation over the differences of digits; a slot (a
 * coefficient times one such difference) whose coefficient exceeds what
 * every other slot and the constant can add up to must be zero
 * (ir_force_dim).  What is left to the callers is where the two proofs
 * differ: which expressions are variables (a block's iterators and inner
 * loops and a Ramp's lane, or loop variables and lane_id()), which terms
 * of the two sides pair into one slot, and what a full table of forced
 * slots means.
 */
#ifndef MINITIR_DIGITS_INTERNAL_H
#define MINITIR_DIGITS_INTERNAL_H

#include "ir_internal.h"

/* IR_DIGIT_BOUNDS: boundaries of one variable (its digits); IR_LIN_TERMS:
 * the most terms an ir_lin can hold (a caller may set fewer);
 * IR_FORCED_MAX: the forced slots one proof remembers. */
enum { IR_DIGIT_BOUNDS = 8, IR_LIN_TERMS = 32, IR_FORCED_MAX = 64 };

/* A variable's values split at boundaries 1 = b[0] < b[1] < ..., each
 * dividing the next (ir_digits_nested): digit i is (v // b[i]) % (b[i + 1]
 * // b[i]), the last v // b[nb - 1], so that v, v // b[j], v % b[j] and
 * (v // b[j]) % (b[k] // b[j]) are sums of digits times constants.  The
 * address of b[i] names digit i (a term's key). */
typedef struct ir_digit_var {
    int64_t lo, hi; /* the variable's range, where !any */
    bool any;       /* no constant range: its last digit takes any value */
    int tag;        /* the caller's class of the variable, copied to its terms */
    int64_t b[IR_DIGIT_BOUNDS];
    int nb;
} ir_digit_var;

/* A variable of range [lo, hi] (any: of any value), not split yet. */
ir_digit_var ir_digit_var_make(int64_t lo, int64_t hi, bool any, int tag);

/* Splits d at v as well (nothing when v is a boundary already); false
 * when v < 1 or d has IR_DIGIT_BOUNDS boundaries already. */
bool ir_digit_split(ir_digit_var *d, int64_t v);

/* Whether every boundary of d divides the next (else digits are not
 * digits: v // 4 and v // 6 do not split v into independent parts). */
bool ir_digits_nested(const ir_digit_var *d);

/* The index of boundary v of d, or -1. */
int ir_digit_at(const ir_digit_var *d, int64_t v);

/* Digit i's range [*lo, *hi]; *any (then *lo = *hi = 0): the last digit of
 * a variable of any value.  Floor division keeps the lower digits in [0,
 * b[i + 1] / b[i]) for any v, negative too. */
void ir_digit_range(const ir_digit_var *d, int i, int64_t *lo, int64_t *hi, bool *any);

/* A term of an affine form: coef times a variable (a digit) of range [lo,
 * hi] (any: of any value); key names the variable (&ir_digit_var.b[i], or
 * whatever else the caller makes a variable of: a Ramp's lane). */
typedef struct ir_lin_term {
    const void *key;
    int64_t coef, lo, hi;
    bool any;
    int tag; /* the digit var's tag (or the caller's for its own keys) */
} ir_lin_term;

/* sum t[i].coef * t[i] + k; max (at most IR_LIN_TERMS) is the caller's
 * limit on terms, past which a form is not affine. */
typedef struct ir_lin {
    ir_lin_term t[IR_LIN_TERMS];
    int n, max;
    int64_t k;
} ir_lin;

/* l = 0, holding at most max terms. */
void ir_lin_init(ir_lin *l, int max);

/* l += coef * key (a key already there adds to its coefficient); false
 * when the coefficient overflows or l is full. */
bool ir_lin_add_term(ir_lin *l, const void *key, int64_t coef, int64_t lo, int64_t hi, bool any,
                     int tag);

/* l += scale * (digits from up to to (excluded) of d, each times b[i] /
 * b[from]): v // b[from] for to = nb, v % b[to] for from = 0. */
bool ir_lin_add_digits(ir_lin *l, const ir_digit_var *d, int from, int to, int64_t scale);

/* What the caller takes as a variable: l += scale * e for an expression
 * other than the ones ir_lin_add decomposes itself (a Var, a division, a
 * call, ...); false when e is none of its variables. */
typedef bool (*ir_lin_leaf_fn)(void *user, const tir_expr *e, int64_t scale, ir_lin *l);

/* l += scale * e: integer constants, widening integer casts, +, - and
 * products with a constant are taken apart here, everything else goes to
 * leaf; false when e is not affine or a product or sum overflows. */
bool ir_lin_add(const tir_expr *e, int64_t scale, ir_lin *l, ir_lin_leaf_fn leaf, void *user);

/* Whether e is an integer constant, folded: literals and +, -, * of
 * constants (a builder's `1 * 2048` stride, which tir_mul leaves
 * unfolded), without overflow.  The proofs take divisors and coefficients
 * through it, so an unfolded constant is no reason to give up. */
bool ir_const_int(const tir_expr *e, int64_t *out);

/* Is (x, y) (e // c, e % c) for one e and a constant c > 0?  Two such
 * index dimensions are the one dimension e (a fused loop's bindings, a
 * reshape of a sum). */
bool ir_divmod_pair(const tir_expr *x, const tir_expr *y, const tir_expr **e, int64_t *c);

/* Sums of slots in 128 bits: 64 products of two int64 cannot overflow. */
typedef __int128 ir_wide;

/* c * [lo, hi] as an interval [*rlo, *rhi]. */
void ir_wide_scaled(int64_t c, int64_t lo, int64_t hi, ir_wide *rlo, ir_wide *rhi);

/* A slot of one dimension's equation: coef * x with x in [dlo, dhi] (any:
 * of any value), x the difference of the two sides' variables (key1,
 * key2), the same across dimensions; key1 NULL: a term of one side only,
 * never forced. */
typedef struct ir_slot {
    int64_t coef, dlo, dhi;
    bool any;
    const void *key1, *key2;
} ir_slot;

/* The slots proved zero so far. */
typedef struct ir_forced {
    const void *k1[IR_FORCED_MAX], *k2[IR_FORCED_MAX];
    int n;
    bool full; /* one more did not fit (what that means is the caller's) */
} ir_forced;

/* Whether slot (k1, k2) is forced; never for k1 NULL. */
bool ir_forced_has(const ir_forced *f, const void *k1, const void *k2);

/* One dimension (the slots s[0..n) plus the constant k = 0): forces, and
 * forces again, every slot whose coefficient exceeds in absolute value
 * what the others can add up to (a slot of any value only while no other
 * unforced slot is of any value); *never when the dimension cannot be
 * zero (a forced slot whose range excludes 0 included).  True when it
 * forced a slot; when f is full it sets f->full and stops there. */
bool ir_force_dim(const ir_slot *s, int n, ir_wide k, ir_forced *f, bool *never);

#endif
