/* launch.c: the launch sizes of a lowered kernel, checked once for every
 * layer that needs them (tir_launch_check, tir_launch_eval_extent), and
 * the one check of a launch once its arguments are known
 * (tir_launch_plan_build, tir_launch_plan_eval).
 *
 * The grid and block of a kernel are the extents of its thread-binding
 * loops (docs/lowered-ir.md).  Lowering (check_kernel), codegen (which
 * stores them in the tir_module), the simulator (which runs that many
 * blocks and threads) and the runtime (tir_module_launch_dims) all read
 * them through this one walk and this one evaluator, with the limits of a
 * tir_target_limits, so that they cannot disagree on what a legal launch
 * is.  Block extents are constants; grid extents may use scalar
 * parameters, evaluated per launch from the arguments.  At that point the
 * runtime and the simulator also bound, through one helper with one set
 * of messages, every loop bound and condition of the kernel that depends
 * on the arguments over the ranges of the loop variables it names, and
 * refuse the launch where a value the kernel computes may pass its dtype
 * (a wrapped count or index, silently wrong).
 */
#include <string.h>

#include "lower_internal.h"

typedef struct lc {
    tir_ctx *ctx;
    const tir_prim_func *f;
    const tir_target_limits *lim;
    tir_launch *out;
    unsigned active; /* bit i: inside a loop bound to launch axis i */
    unsigned leaves; /* the axes every statement seen so far lies inside */
    tir_status status; /* the first error */
} lc;

/* Every refusal is TIR_ERR_UNSUPPORTED (callers re-label it). */
#define bad(c, ...) tir_ctx_fail((c)->ctx, TIR_ERR_UNSUPPORTED, __VA_ARGS__)

static bool is_scalar_param(const tir_prim_func *f, const tir_var *v) {
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i] == v && !f->buffer_map[i]) return true;
    return false;
}

/* True when a and b are the same expression with the same variables (no
 * renaming, unlike tir_struct_equal: two parameters are two extents). */
static bool same_expr(const tir_expr *a, const tir_expr *b) {
    if (a == b) return true;
    if (!a || !b || a->kind != b->kind || !tir_dtype_eq(a->dtype, b->dtype)) return false;
    switch ((tir_kind)a->kind) {
    case TIR_KIND_INT_IMM: return tir_as_tir_int_imm(a)->value == tir_as_tir_int_imm(b)->value;
    case TIR_KIND_VAR: return false; /* different pointers */
    case TIR_KIND_CAST: return same_expr(tir_as_tir_cast(a)->value, tir_as_tir_cast(b)->value);
    default:
        if (tir_kind_is_binop((tir_kind)a->kind)) {
            const tir_binop *x = tir_as_tir_binop(a), *y = tir_as_tir_binop(b);
            return same_expr(x->a, y->a) && same_expr(x->b, y->b);
        }
        return false;
    }
}

/* Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max: the integer
 * arithmetic of grid extents (consecutive in minitir/nodes.def). */
static bool int_arith(tir_kind k) { return k >= TIR_KIND_ADD && k <= TIR_KIND_MAX; }

/* Grid extents are evaluated per launch (tir_launch_eval_extent), so they
 * use only scalar parameters and the kinds it evaluates. */
static tir_status grid_expr(lc *c, const tir_expr *e, const char *tag) {
    tir_kind k = (tir_kind)e->kind;
    if (!tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1)
        return bad(c, "the extent of %s is not a scalar integer", tag);
    if (k == TIR_KIND_INT_IMM) return TIR_OK;
    if (k == TIR_KIND_CAST) return grid_expr(c, tir_as_tir_cast(e)->value, tag);
    if (k == TIR_KIND_VAR) {
        if (is_scalar_param(c->f, tir_as_tir_var(e))) return TIR_OK;
        return bad(c, "the extent of %s uses variable '%s', which is not a scalar parameter", tag,
                   tir_as_tir_var(e)->name);
    }
    if (int_arith(k)) {
        const tir_binop *b = tir_as_tir_binop(e);
        TIR_TRY(grid_expr(c, b->a, tag));
        return grid_expr(c, b->b, tag);
    }
    return bad(c,
               "the extent of %s contains a %s node (allowed: constants, scalar parameters and "
               "integer arithmetic)",
               tag, tir_kind_name(k));
}

/* The extent of one loop bound to launch axis `axis`. */
static tir_status axis_extent(lc *c, const tir_for *f, int axis) {
    const char *tag = f->thread_tag;
    int64_t v;
    if (!tir_expr_const_int(f->min, &v) || v != 0)
        return bad(c, "the %s loop over '%s' must start at 0", tag, f->var->name);
    if (tir_thread_axis_kind(axis) == TIR_AXIS_KIND_THREAD) {
        if (!tir_expr_const_int(f->extent, &v) || v <= 0)
            return bad(c,
                       "the %s loop over '%s' needs a positive constant extent (block sizes are "
                       "static)",
                       tag, f->var->name);
        int dim = tir_thread_axis_dim(axis);
        if (v > c->lim->max_block_dim[dim])
            return bad(c, "the %s loop over '%s' has extent %lld, more than the limit %d", tag,
                       f->var->name, (long long)v, c->lim->max_block_dim[dim]);
    } else {
        TIR_TRY(grid_expr(c, f->extent, tag));
        if (tir_expr_const_int(f->extent, &v) && v <= 0)
            return bad(c, "the %s loop over %s has extent %lld (must be positive)", tag,
                       f->var->name, (long long)v);
    }
    const tir_for *first = c->out->loop[axis];
    if (first && !same_expr(first->extent, f->extent)) {
        int64_t a, b;
        if (tir_expr_const_int(first->extent, &a) && tir_expr_const_int(f->extent, &b))
            return bad(c, "%s loops with different extents (%lld and %lld) in '%s' and '%s'",
                       tag, (long long)a, (long long)b, first->var->name, f->var->name);
        return bad(c, "%s loops with different extents (%s and %s) in '%s' and '%s'", tag,
                   tir_print(c->ctx, first->extent), tir_print(c->ctx, f->extent),
                   first->var->name, f->var->name);
    }
    if (!first) {
        c->out->loop[axis] = f;
        c->out->extent[axis] = f->extent;
    }
    return TIR_OK;
}

/* Checks a loop bound to a thread axis and marks its axis active. */
static tir_status enter_loop(lc *c, const tir_for *f) {
    int axis = tir_launch_axis(f->thread_tag);
    if (axis < 0)
        return bad(c,
                   "loop '%s' is bound to unknown thread tag '%s' (want one of%s)",
                   f->var->name, f->thread_tag ? f->thread_tag : "?", tir_thread_axis_tags(true));
    if (c->active & (1u << axis))
        return bad(c, "loop '%s' is bound to %s inside a loop bound to the same axis (a %s loop "
                      "nested in another %s loop)",
                   f->var->name, f->thread_tag, f->thread_tag, f->thread_tag);
    TIR_TRY(axis_extent(c, f, axis));
    c->active |= 1u << axis;
    return TIR_OK;
}

static const tir_for *bound_loop(const tir_node *n) {
    const tir_for *f = n->kind == TIR_KIND_FOR ? (const tir_for *)n : NULL;
    return f && f->kind == TIR_FOR_THREAD_BINDING ? f : NULL;
}

/* The statements (expressions hold no loops), stopping at the first error. */
static bool launch_pre(tir_visitor *v, const tir_node *n) {
    lc *c = v->user;
    if (c->status != TIR_OK || tir_kind_is_expr((tir_kind)n->kind)) return false;
    if (n->kind == TIR_KIND_BUFFER_STORE || n->kind == TIR_KIND_EVALUATE) c->leaves &= c->active;
    const tir_for *f = bound_loop(n);
    if (f) c->status = enter_loop(c, f);
    return c->status == TIR_OK;
}

static void launch_post(tir_visitor *v, const tir_node *n) {
    lc *c = v->user;
    const tir_for *f = bound_loop(n);
    int axis = f ? tir_launch_axis(f->thread_tag) : -1;
    if (axis >= 0 && c->status == TIR_OK) c->active &= ~(1u << axis);
}

tir_status tir_launch_check(tir_ctx *ctx, const tir_prim_func *kernel,
                            const tir_target_limits *lim, tir_launch *out) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!kernel || !out)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "launch check: no kernel or no output");
    memset(out, 0, sizeof *out);
    lc c = {ctx, kernel, lim ? lim : &tir_target_default()->limits, out, 0, ~0u, TIR_OK};
    tir_visitor vis = {launch_pre, launch_post, &c};
    tir_visit(&vis, kernel->body);
    if (c.status != TIR_OK) return c.status;
    for (int i = TIR_AXIS_BLOCK_X; i <= TIR_AXIS_BLOCK_Z; i++)
        if (out->loop[i] && (c.leaves & (1u << i))) out->empty_ok |= 1u << i;
    int64_t threads = 1, v;
    for (int i = TIR_AXIS_THREAD_X; i < TIR_NLAUNCH_AXES; i++)
        if (out->extent[i] && tir_expr_const_int(out->extent[i], &v)) threads *= v;
    if (threads > c.lim->max_threads_per_block)
        return bad(&c, "kernel '%s' uses %lld threads per block (at most %d)", kernel->name,
                   (long long)threads, c.lim->max_threads_per_block);
    return TIR_OK;
}

/* ------------------------------------------------------------ arithmetic */

/* v converted to integer dtype t: truncated to its bits, then extended by
 * its signedness (any width: int16 is not int8). */
static int64_t cast_value(tir_dtype t, int64_t v) {
    if (t.bits >= 64) return v;
    uint64_t u = (uint64_t)v & ((UINT64_C(1) << t.bits) - 1);
    if (t.code != TIR_TYPE_UINT && (u >> (t.bits - 1)) & 1) u |= ~((UINT64_C(1) << t.bits) - 1);
    return (int64_t)u;
}

static bool div_mod(tir_kind k, int64_t x, int64_t y, int64_t *out, const char **why) {
    if (y == 0 || (x == INT64_MIN && y == -1)) {
        *why = "a division by zero or an overflow";
        return false;
    }
    int64_t q = x / y, r = x % y;
    bool floor = k == TIR_KIND_FLOORDIV || k == TIR_KIND_FLOORMOD;
    if (floor && r != 0 && ((r < 0) != (y < 0))) {
        q -= 1;
        r += y;
    }
    *out = (k == TIR_KIND_DIV || k == TIR_KIND_FLOORDIV) ? q : r;
    return true;
}

/* True when v is a value of integer dtype t. */
static bool fits(tir_dtype t, int64_t v) {
    if (t.bits >= 64) return true;
    if (t.code == TIR_TYPE_UINT) return v >= 0 && v < (INT64_C(1) << t.bits);
    return v >= -(INT64_C(1) << (t.bits - 1)) && v < (INT64_C(1) << (t.bits - 1));
}

/* ------------------------------------------------------------ intervals */

/* Launch sizes and loop bounds are evaluated over ranges of values: a
 * scalar argument is the range [v, v], a loop variable the range of its
 * loop (its start to its start plus its extent, less one, over the ranges
 * of the variables those name), and each operation the range of its
 * results over its operands' ranges.  That range holds every value the
 * kernel computes there, so where it fits the expression's dtype nothing
 * wraps; where it does not, some value may (the range over-approximates
 * where operands are correlated: a refusal there is a possible wrap, not a
 * proved one).  Of arguments alone every range is one value, and this is
 * the exact evaluation of tir_launch_eval_extent. */
typedef struct iv {
    int64_t lo, hi;
} iv;

typedef enum iv_res {
    IV_OK,
    IV_UNKNOWN, /* a form ival does not bound (none the plan lists) */
    IV_FAIL,    /* a value may pass its dtype (ev.why, ev.at) */
} iv_res;

/* One evaluation: the arguments, the open loops' variables and ranges,
 * and the first failure. */
typedef struct ev {
    int nvars;
    const tir_var *const *vars;
    const int64_t *values;
    const tir_var *const *params; /* the kernel's scalar parameters, for */
    int nparams;                  /* "too few arguments" (NULL: none) */
    bool strict;                  /* an unknown variable fails (exact evaluation) */
    int nloops;
    const tir_var **lvar;
    iv *lrange;
    bool *lknown; /* false: the loop's range is not bounded here */
    int *lend;    /* the step past the loop's body */
    const char *why;
    const tir_expr *at; /* the subexpression that failed */
    bool has_range;     /* at_range is its range (else it passed int64) */
    iv at_range;
} ev;

/* The range of all values of integer dtype t. */
static iv full_range(tir_dtype t) {
    if (t.bits >= 64) return (iv){INT64_MIN, INT64_MAX};
    if (t.code == TIR_TYPE_UINT) return (iv){0, (INT64_C(1) << t.bits) - 1};
    return (iv){-(INT64_C(1) << (t.bits - 1)), (INT64_C(1) << (t.bits - 1)) - 1};
}

static iv_res fail_at(ev *e, const tir_expr *x, const char *why, const iv *r) {
    e->why = why;
    e->at = x;
    e->has_range = r != NULL;
    if (r) e->at_range = *r;
    return IV_FAIL;
}

static iv_res ival(ev *e, const tir_expr *x, iv *out);

static iv_res var_iv(ev *e, const tir_var *v, iv *out) {
    for (int i = e->nloops - 1; i >= 0; i--)
        if (e->lvar[i] == v) {
            /* a loop whose bounds did not evaluate: any value */
            *out = e->lknown[i] ? e->lrange[i] : full_range(v->base.dtype);
            return IV_OK;
        }
    for (int i = 0; i < e->nvars; i++)
        if (e->vars[i] == v) {
            *out = (iv){e->values[i], e->values[i]};
            if (tir_dtype_is_int(v->base.dtype) && !fits(v->base.dtype, e->values[i]))
                return fail_at(e, &v->base, "an argument that does not fit its parameter's dtype",
                               out);
            return IV_OK;
        }
    for (int i = 0; i < e->nparams; i++)
        if (e->params[i] == v) return fail_at(e, &v->base, "too few arguments", NULL);
    if (!e->strict) return IV_UNKNOWN;
    return fail_at(e, &v->base, "a variable that is not a parameter", NULL);
}

/* A cast wraps by definition (not refused), so a range that does not fit
 * the target maps to the wrapped ends where they stay in order over fewer
 * than 2^bits values, else to every value of the target. */
static iv_res cast_iv(ev *e, const tir_cast *c, iv *out) {
    iv v;
    iv_res r = ival(e, c->value, &v);
    if (r != IV_OK) return r;
    tir_dtype t = c->base.dtype;
    if (fits(t, v.lo) && fits(t, v.hi)) {
        *out = v;
        return IV_OK;
    }
    uint64_t span = (uint64_t)v.hi - (uint64_t)v.lo;
    int64_t lo = cast_value(t, v.lo), hi = cast_value(t, v.hi);
    *out = t.bits < 64 && span < (UINT64_C(1) << t.bits) && lo <= hi ? (iv){lo, hi} : full_range(t);
    return IV_OK;
}

static int64_t lo4(const int64_t c[4]) {
    int64_t m = c[0];
    for (int i = 1; i < 4; i++) m = c[i] < m ? c[i] : m;
    return m;
}

static int64_t hi4(const int64_t c[4]) {
    int64_t m = c[0];
    for (int i = 1; i < 4; i++) m = c[i] > m ? c[i] : m;
    return m;
}

/* a * b or a / b (kind k) at the four corners: the extremes of a product,
 * and of a quotient by a range without 0 (monotone in each operand). */
static iv_res corners(ev *e, const tir_expr *x, tir_kind k, iv a, iv b, iv *out) {
    int64_t c[4], xs[2] = {a.lo, a.hi}, ys[2] = {b.lo, b.hi};
    const char *why = "an overflow of its dtype";
    for (int i = 0; i < 4; i++) {
        bool ok = k == TIR_KIND_MUL ? !__builtin_mul_overflow(xs[i / 2], ys[i % 2], &c[i])
                                    : div_mod(k, xs[i / 2], ys[i % 2], &c[i], &why);
        if (!ok) return fail_at(e, x, why, NULL);
    }
    *out = (iv){lo4(c), hi4(c)};
    return IV_OK;
}

static int64_t magnitude(int64_t v) { return v >= 0 ? v : v == INT64_MIN ? INT64_MAX : -v; }

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* a % b (truncated, k Mod) or floormod(a, b): the exact range where one
 * divisor gives one quotient over a, else what the remainder's sign and
 * size allow (|r| < |b|, and a truncated r has a's sign and |r| <= |a|). */
static iv_res mod_iv(ev *e, const tir_expr *x, tir_kind k, iv a, iv b, iv *out) {
    const char *why;
    if (b.lo == b.hi) {
        tir_kind q = k == TIR_KIND_MOD ? TIR_KIND_DIV : TIR_KIND_FLOORDIV;
        int64_t q0, q1;
        if (!div_mod(q, a.lo, b.lo, &q0, &why) || !div_mod(q, a.hi, b.lo, &q1, &why))
            return fail_at(e, x, why, NULL);
        if (q0 == q1) { /* r = a - q * b rises with a */
            div_mod(k, a.lo, b.lo, &out->lo, &why);
            div_mod(k, a.hi, b.lo, &out->hi, &why);
            return IV_OK;
        }
    }
    int64_t m = (magnitude(b.lo) > magnitude(b.hi) ? magnitude(b.lo) : magnitude(b.hi)) - 1;
    if (k == TIR_KIND_FLOORMOD) { /* the sign of b */
        out->lo = b.lo > 0 ? 0 : -m;
        out->hi = b.hi < 0 ? 0 : b.lo > 0 && a.lo >= 0 ? min64(a.hi, m) : m;
        return IV_OK;
    }
    out->lo = a.lo >= 0 ? 0 : -min64(magnitude(a.lo), m);
    out->hi = a.hi <= 0 ? 0 : min64(a.hi, m);
    return IV_OK;
}

/* A division by 0 is refused where the divisor is 0 alone; a range of
 * divisors holding 0 is bounded over its other values: a quotient by a
 * nonzero integer is at most |a| in size (a remainder as above). */
static iv_res div_iv(ev *e, const tir_expr *x, tir_kind k, iv a, iv b, iv *out) {
    if (b.lo == 0 && b.hi == 0) return fail_at(e, x, "a division by zero or an overflow", NULL);
    bool quot = k == TIR_KIND_DIV || k == TIR_KIND_FLOORDIV;
    if (b.lo > 0 || b.hi < 0)
        return quot ? corners(e, x, k, a, b, out) : mod_iv(e, x, k, a, b, out);
    if (!quot) return mod_iv(e, x, k, a, b, out);
    if (a.lo == INT64_MIN) return fail_at(e, x, "an overflow of its dtype", NULL);
    int64_t m = magnitude(a.lo) > magnitude(a.hi) ? magnitude(a.lo) : magnitude(a.hi);
    *out = (iv){-m, m};
    return IV_OK;
}

static iv_res arith_iv(ev *e, const tir_expr *x, iv a, iv b, iv *out) {
    tir_kind k = (tir_kind)x->kind;
    bool ovf = false;
    switch (k) {
    case TIR_KIND_ADD:
        ovf = __builtin_add_overflow(a.lo, b.lo, &out->lo) ||
              __builtin_add_overflow(a.hi, b.hi, &out->hi);
        break;
    case TIR_KIND_SUB:
        ovf = __builtin_sub_overflow(a.lo, b.hi, &out->lo) ||
              __builtin_sub_overflow(a.hi, b.lo, &out->hi);
        break;
    case TIR_KIND_MUL: return corners(e, x, k, a, b, out);
    case TIR_KIND_MIN: *out = (iv){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi}; break;
    case TIR_KIND_MAX: *out = (iv){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi}; break;
    case TIR_KIND_DIV:
    case TIR_KIND_MOD:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD: return div_iv(e, x, k, a, b, out);
    default: return e->strict ? fail_at(e, x, "an expression that is not integer arithmetic", NULL)
                              : IV_UNKNOWN;
    }
    return ovf ? fail_at(e, x, "an overflow of its dtype", NULL) : IV_OK;
}

static iv_res binop_iv(ev *e, const tir_expr *x, iv *out) {
    const tir_binop *b = tir_as_tir_binop(x);
    iv u, v;
    iv_res ru = ival(e, b->a, &u);
    if (ru == IV_FAIL) return ru;
    iv_res rv = ival(e, b->b, &v);
    if (rv == IV_FAIL) return rv;
    if (ru != IV_OK || rv != IV_OK) return IV_UNKNOWN;
    return arith_iv(e, x, u, v, out);
}

/* The range of x; every subexpression's range must fit its dtype (the
 * kernel computes it in that dtype). */
static iv_res ival(ev *e, const tir_expr *x, iv *out) {
    iv_res r;
    switch ((tir_kind)x->kind) {
    case TIR_KIND_INT_IMM:
        out->lo = out->hi = tir_as_tir_int_imm(x)->value;
        return IV_OK;
    case TIR_KIND_VAR: return var_iv(e, tir_as_tir_var(x), out);
    case TIR_KIND_CAST: return cast_iv(e, tir_as_tir_cast(x), out);
    default:
        if (!int_arith((tir_kind)x->kind))
            return e->strict
                       ? fail_at(e, x, "an expression that is not integer arithmetic", NULL)
                       : IV_UNKNOWN;
        r = binop_iv(e, x, out);
        break;
    }
    if (r == IV_OK && tir_dtype_is_int(x->dtype) &&
        (!fits(x->dtype, out->lo) || !fits(x->dtype, out->hi)))
        return fail_at(e, x, "an overflow of its dtype", out);
    return r;
}

/* Each value is checked against its expression's dtype, not only int64:
 * the kernel computes its indices in that dtype (int32 for an int32
 * parameter), so a grid extent `(n + 2) // 3` whose `n + 2` passes
 * INT32_MAX (n within 2 of it) was evaluated in int64 and launched
 * ceil(n / 3) blocks, whose last thread's index `i_0 * 3 + i_1` then
 * wrapped to a negative value that passes the guard `< n` (a store far
 * below the buffer).  Every value of the extent fitting its dtype bounds
 * the split's indices, `i_0 * f + i_1 <= n + f - 2`, in the dtype; an
 * argument that does not fit its parameter's dtype is refused too. */
bool tir_launch_eval_extent(const tir_expr *e, int nvars, const tir_var *const *vars,
                            const int64_t *values, int64_t *out, const char **why) {
    ev x = {.nvars = nvars, .vars = vars, .values = values, .strict = true};
    iv r;
    iv_res res = ival(&x, e, &r);
    /* strict: every variable is an argument, so r is one value */
    TIR_ASSERT(res != IV_OK || r.lo == r.hi);
    if (res == IV_OK) {
        *out = r.lo;
        return true;
    }
    *why = res == IV_FAIL ? x.why : "an expression that cannot be evaluated";
    return false;
}

/* ------------------------------------------------------------ the plan */

/* What a launch checks beyond the launch sizes, found once per kernel:
 * the kernel computes its loop bounds and its conditions in their dtype,
 * and where one passes it the kernel silently runs a wrong count (a k
 * loop of (m + 2) // 3 at m = INT32_MAX ran nothing) or takes a wrapped
 * index past its guard.  The steps, in the kernel's order:
 *   a loop     whose start, extent or end (start + extent, which both
 *              emitters compute) depend on the arguments: each is
 *              bounded, and its variable's range is kept for the body;
 *   a condition operand  of an if or a select, bounded likewise.
 * Only expressions that depend on the arguments (name a scalar parameter,
 * or a loop variable whose range does) are checked: the others are the
 * same at every launch.  Expressions of other forms than those ival
 * bounds (a load, a select, a Let variable) are left to the kernel, never
 * refused for their form; so is anything naming a loop variable of such a
 * loop. */
enum { CK_MIN = 1, CK_EXT = 2, CK_END = 4 };

typedef struct lp_step {
    const tir_for *loop;      /* a loop, or NULL: a condition operand */
    int end;                  /* a loop: the step past its body's */
    unsigned check;           /* a loop: CK_* */
    const tir_expr *end_expr; /* CK_END: its start plus its extent, simplified */
    const tir_expr *expr;     /* a condition: the operand */
    const tir_expr *cond;     /* a condition: the comparison */
} lp_step;

struct tir_launch_plan {
    const char *name; /* the kernel's */
    tir_launch launch;
    int nparams; /* its scalar parameters */
    const tir_var **params;
    int nsteps;
    const lp_step *steps;
    int depth; /* the most loop steps open at once */
};

typedef struct pbuild {
    tir_ctx *ctx;
    const tir_prim_func *k;
    tir_analyzer *an;
    lp_step *steps;
    int n, cap;
    const tir_var **known; /* the loops in scope that ival bounds */
    bool *dep;             /* ... and whether their range depends on the arguments */
    int nknown, capk;
    int depth, maxdepth;
    int scope; /* the first step of the innermost open loop's body */
    bool nomem;
} pbuild;

/* e is an integer scalar expression of the forms ival bounds, naming
 * scalar parameters and loops in scope only; *dep is set where it names
 * a parameter or a loop whose range depends on one. */
static bool form_ok(const pbuild *b, const tir_expr *e, bool *dep) {
    if (!tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1) return false;
    tir_kind k = (tir_kind)e->kind;
    if (k == TIR_KIND_INT_IMM) return true;
    if (k == TIR_KIND_CAST) return form_ok(b, tir_as_tir_cast(e)->value, dep);
    if (k == TIR_KIND_VAR) {
        const tir_var *v = tir_as_tir_var(e);
        if (is_scalar_param(b->k, v)) return *dep = true;
        for (int i = b->nknown - 1; i >= 0; i--)
            if (b->known[i] == v) {
                *dep |= b->dep[i];
                return true;
            }
        return false;
    }
    if (!int_arith(k)) return false;
    const tir_binop *x = tir_as_tir_binop(e);
    bool a = form_ok(b, x->a, dep);
    return form_ok(b, x->b, dep) && a;
}

static int push_step(pbuild *b, const lp_step *s) {
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 16;
        lp_step *p = realloc(b->steps, (size_t)cap * sizeof *p);
        if (!p) {
            b->nomem = true;
            return -1;
        }
        b->steps = p;
        b->cap = cap;
    }
    b->steps[b->n] = *s;
    return b->n++;
}

static bool push_known(pbuild *b, const tir_var *v, bool dep) {
    if (b->nknown == b->capk) {
        int cap = b->capk ? 2 * b->capk : 16;
        const tir_var **k = realloc(b->known, (size_t)cap * sizeof *k);
        if (k) b->known = k;
        bool *d = k ? realloc(b->dep, (size_t)cap * sizeof *d) : NULL;
        if (!d) {
            b->nomem = true;
            return false;
        }
        b->dep = d;
        b->capk = cap;
    }
    b->known[b->nknown] = v;
    b->dep[b->nknown++] = dep;
    return true;
}

/* A condition operand, once per loop body: the same guard is often
 * written before each statement it covers. */
static void add_operand(pbuild *b, const tir_expr *cond, const tir_expr *e) {
    bool dep = false;
    if (e->kind == TIR_KIND_INT_IMM || e->kind == TIR_KIND_VAR || !form_ok(b, e, &dep) || !dep)
        return;
    for (int i = b->scope; i < b->n; i = b->steps[i].loop ? b->steps[i].end : i + 1)
        if (!b->steps[i].loop && same_expr(b->steps[i].expr, e)) return;
    push_step(b, &(lp_step){.expr = e, .cond = cond});
}

/* The integer comparisons of a condition. */
static void add_cond(pbuild *b, const tir_expr *c) {
    tir_kind k = (tir_kind)c->kind;
    if (k == TIR_KIND_NOT) {
        add_cond(b, tir_as_tir_not(c)->a);
    } else if (k == TIR_KIND_AND || k == TIR_KIND_OR) {
        add_cond(b, tir_as_tir_binop(c)->a);
        add_cond(b, tir_as_tir_binop(c)->b);
    } else if (tir_kind_is_compare(k)) {
        add_operand(b, c, tir_as_tir_binop(c)->a);
        add_operand(b, c, tir_as_tir_binop(c)->b);
    }
}

static bool select_pre(tir_visitor *v, const tir_node *n) {
    if (n->kind == TIR_KIND_SELECT) add_cond(v->user, tir_as_tir_select((const tir_expr *)n)->cond);
    return true;
}

/* The conditions of the selects inside e. */
static void add_selects(pbuild *b, const tir_expr *e) {
    if (!e) return;
    tir_visitor vis = {select_pre, NULL, b};
    tir_visit(&vis, e);
}

static void walk(pbuild *b, const tir_stmt *s);

/* The start plus the extent, as both emitters compute the loop's end,
 * simplified: `i + (n - i)` is n, whose range is exact where the sum of
 * the two ranges is not. */
static const tir_expr *loop_end(pbuild *b, const tir_for *f) {
    if (!tir_dtype_eq(f->min->dtype, f->extent->dtype)) return NULL;
    if (!b->an && !(b->an = tir_analyzer_create(b->ctx))) return NULL;
    const tir_expr *e = tir_analyzer_simplify(b->an, tir_add(b->ctx, f->min, f->extent));
    bool dep = false;
    return e && form_ok(b, e, &dep) && dep ? e : NULL;
}

static void walk_for(pbuild *b, const tir_for *f) {
    add_selects(b, f->min);
    add_selects(b, f->extent);
    bool md = false, ed = false, bound = f->kind == TIR_FOR_THREAD_BINDING;
    bool mok = form_ok(b, f->min, &md), eok = form_ok(b, f->extent, &ed);
    int64_t m0;
    lp_step st = {.loop = f};
    if (mok && md) st.check |= CK_MIN;
    if (eok && ed && !bound) st.check |= CK_EXT; /* a launch size: checked as one */
    if (mok && eok && (md || ed) && !(tir_expr_const_int(f->min, &m0) && m0 == 0) &&
        (st.end_expr = loop_end(b, f)))
        st.check |= CK_END;
    int at = push_step(b, &st), scope = b->scope;
    if (at < 0) return;
    b->scope = at + 1;
    if (++b->depth > b->maxdepth) b->maxdepth = b->depth;
    bool known = mok && eok && push_known(b, f->var, md || ed);
    walk(b, f->body);
    b->nknown -= known;
    b->depth--;
    b->scope = scope;
    if (b->n == at + 1 && !st.check)
        b->n = at; /* nothing to check in it */
    else
        b->steps[at].end = b->n;
}

static void walk(pbuild *b, const tir_stmt *s) {
    if (!s || b->nomem) return;
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: walk_for(b, (const tir_for *)s); break;
    case TIR_KIND_SEQ: {
        const tir_seq *q = (const tir_seq *)s;
        for (int i = 0; i < q->n; i++) walk(b, q->stmts[i]);
    } break;
    case TIR_KIND_IF: {
        const tir_if *i = (const tir_if *)s;
        add_cond(b, i->cond);
        add_selects(b, i->cond);
        walk(b, i->then_s);
        walk(b, i->else_s);
    } break;
    case TIR_KIND_ALLOCATE: walk(b, ((const tir_allocate *)s)->body); break;
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *x = (const tir_buffer_store *)s;
        for (int i = 0; i < x->nidx; i++) add_selects(b, x->indices[i]);
        add_selects(b, x->value);
    } break;
    case TIR_KIND_EVALUATE: add_selects(b, ((const tir_evaluate *)s)->value); break;
    default: break; /* no blocks in a lowered kernel (lower_blocks) */
    }
}

static tir_status build_out(pbuild *b, const tir_prim_func *kernel, const tir_launch *l,
                            const tir_launch_plan **out) {
    tir_launch_plan *p = IR_NEW(b->ctx, tir_launch_plan);
    p->name = kernel->name;
    p->launch = *l;
    p->params = IR_NEWN(b->ctx, const tir_var *, kernel->nparams);
    for (int i = 0; i < kernel->nparams; i++)
        if (!kernel->buffer_map[i]) p->params[p->nparams++] = kernel->params[i];
    lp_step *s = IR_NEWN(b->ctx, lp_step, b->n);
    if (b->n) memcpy(s, b->steps, (size_t)b->n * sizeof *s);
    p->nsteps = b->n;
    p->steps = s;
    p->depth = b->maxdepth;
    *out = p;
    return TIR_OK;
}

tir_status tir_launch_plan_build(tir_ctx *ctx, const tir_prim_func *kernel, const tir_launch *l,
                                 const tir_launch_plan **out) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!kernel || !l || !out)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "launch plan: no kernel, launch or output");
    pbuild b = {.ctx = ctx, .k = kernel};
    walk(&b, kernel->body);
    tir_status s = b.nomem ? tir_ctx_fail(ctx, TIR_ERR_NOMEM, "launch plan: out of memory")
                           : build_out(&b, kernel, l, out);
    if (b.an) tir_analyzer_destroy(b.an);
    free(b.steps);
    free(b.known);
    free(b.dep);
    return s;
}

/* ------------------------------------------------------------ at launch */

/* ": i_0 * 4 + 5 (int32) reaches [5, 2147483649] with i_0 in [0, 536870911]":
 * the subexpression that failed, its range and the loop ranges it names. */
static const char *detail(tir_ctx *ctx, const ev *e, char *buf, size_t n) {
    buf[0] = 0;
    if (!e->at || e->at->kind == TIR_KIND_VAR) return buf;
    char t[32];
    size_t k = 0;
    tir_dtype_str(e->at->dtype, t, sizeof t);
    const char *x = tir_print(ctx, e->at);
    if (!e->has_range)
        k = (size_t)snprintf(buf, n, ": %s (%s) passes int64", x, t);
    else if (e->at_range.lo == e->at_range.hi)
        k = (size_t)snprintf(buf, n, ": %s (%s) is %lld", x, t, (long long)e->at_range.lo);
    else
        k = (size_t)snprintf(buf, n, ": %s (%s) reaches [%lld, %lld]", x, t,
                             (long long)e->at_range.lo, (long long)e->at_range.hi);
    const char *sep = " with ";
    for (int i = 0; i < e->nloops && k < n; i++) {
        if (!e->lknown[i] || !tir_uses_var(e->at, e->lvar[i])) continue;
        k += (size_t)snprintf(buf + k, n - k, "%s%s in [%lld, %lld]", sep, e->lvar[i]->name,
                              (long long)e->lrange[i].lo, (long long)e->lrange[i].hi);
        sep = ", ";
    }
    return buf;
}

/* "launch of 'k': the loop bound i + 2 (the extent of the loop over k) has
 * an overflow of its dtype at these arguments: ...". */
static tir_status refuse_bound(tir_ctx *ctx, const tir_launch_plan *p, const ev *e,
                               const char *kind, const tir_expr *x, const char *role,
                               const tir_for *loop) {
    char buf[512], r[128] = "";
    if (role) snprintf(r, sizeof r, " (%s %s)", role, loop->var->name);
    return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                        "launch of '%s': %s %s%s has %s at these arguments%s", p->name, kind,
                        tir_print(ctx, x), r, e->why, detail(ctx, e, buf, sizeof buf));
}

/* Launch axis ax's size, which must be positive, or 0 where the kernel
 * then has nothing to do (empty_ok). */
static tir_status eval_axis(tir_ctx *ctx, const tir_launch_plan *p, ev *e, int ax, int64_t *out) {
    const tir_for *f = p->launch.loop[ax];
    char axis[16];
    snprintf(axis, sizeof axis, "%s.%c", ax < 3 ? "grid" : "block", "xyz"[ax % 3]);
    *out = 1;
    if (!f) return TIR_OK;
    iv r;
    iv_res res = ival(e, f->extent, &r);
    if (res != IV_OK) {
        char buf[512];
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "launch of '%s': the extent %s of the %s loop over %s (%s) has %s%s",
                            p->name, tir_print(ctx, f->extent), f->thread_tag, f->var->name, axis,
                            res == IV_FAIL ? e->why : "a form that cannot be evaluated",
                            detail(ctx, e, buf, sizeof buf));
    }
    *out = r.lo;
    if (r.lo > 0 || (r.lo == 0 && (p->launch.empty_ok >> ax & 1u))) return TIR_OK;
    return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                        "launch of '%s': the %s loop over %s has extent %lld (%s must be "
                        "positive%s)",
                        p->name, f->thread_tag, f->var->name, (long long)r.lo, axis,
                        r.lo == 0 ? ": a statement lies outside it, which 0 blocks would skip"
                                  : "");
}

/* A loop step: its bounds checked as asked, its variable's range opened
 * (or its body skipped, where it runs no iteration: *next). */
static tir_status eval_loop(tir_ctx *ctx, const tir_launch_plan *p, ev *e, const lp_step *s,
                            int *next) {
    const tir_for *f = s->loop;
    iv mn = {0, 0}, ex = {0, 0}, end;
    iv_res rm = ival(e, f->min, &mn);
    if (rm == IV_FAIL && (s->check & CK_MIN))
        return refuse_bound(ctx, p, e, "the loop bound", f->min, "the start of the loop over", f);
    iv_res re = ival(e, f->extent, &ex);
    if (re == IV_FAIL && (s->check & CK_EXT))
        return refuse_bound(ctx, p, e, "the loop bound", f->extent, "the extent of the loop over",
                            f);
    if ((s->check & CK_END) && ival(e, s->end_expr, &end) == IV_FAIL)
        return refuse_bound(ctx, p, e, "the loop bound", s->end_expr,
                            "the end (start plus extent) of the loop over", f);
    if (re == IV_OK && ex.hi <= 0) {
        *next = s->end; /* no iteration: nothing in it runs */
        return TIR_OK;
    }
    int i = e->nloops++;
    e->lvar[i] = f->var;
    e->lend[i] = s->end;
    e->lknown[i] = rm == IV_OK && re == IV_OK &&
                   !__builtin_add_overflow(mn.hi, ex.hi - 1, &e->lrange[i].hi);
    e->lrange[i].lo = mn.lo;
    return TIR_OK;
}

static tir_status eval_steps(tir_ctx *ctx, const tir_launch_plan *p, ev *e) {
    int d = p->depth > 0 ? p->depth : 1;
    e->lvar = calloc((size_t)d, sizeof *e->lvar);
    e->lrange = calloc((size_t)d, sizeof *e->lrange);
    e->lknown = calloc((size_t)d, sizeof *e->lknown);
    e->lend = calloc((size_t)d, sizeof *e->lend);
    tir_status s = e->lvar && e->lrange && e->lknown && e->lend
                       ? TIR_OK
                       : tir_ctx_fail(ctx, TIR_ERR_NOMEM, "launch: out of memory");
    for (int i = 0; s == TIR_OK && i < p->nsteps;) {
        while (e->nloops && i >= e->lend[e->nloops - 1]) e->nloops--;
        const lp_step *st = &p->steps[i];
        int next = i + 1;
        iv r;
        if (st->loop)
            s = eval_loop(ctx, p, e, st, &next);
        else if (ival(e, st->expr, &r) == IV_FAIL)
            s = refuse_bound(ctx, p, e, "the condition", st->cond, NULL, NULL);
        i = next;
    }
    free(e->lvar);
    free(e->lrange);
    free(e->lknown);
    free(e->lend);
    return s;
}

tir_status tir_launch_plan_eval(tir_ctx *ctx, const tir_launch_plan *p, int nvars,
                                const tir_var *const *vars, const int64_t *values,
                                int64_t dims[TIR_NLAUNCH_AXES]) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!p || !dims || (nvars > 0 && (!vars || !values)))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "launch: no plan, arguments or output");
    ev e = {.nvars = nvars, .vars = vars, .values = values, .params = p->params,
            .nparams = p->nparams, .strict = true};
    for (int ax = 0; ax < TIR_NLAUNCH_AXES; ax++) TIR_TRY(eval_axis(ctx, p, &e, ax, &dims[ax]));
    for (int ax = TIR_AXIS_BLOCK_X; ax <= TIR_AXIS_BLOCK_Z; ax++)
        if (dims[ax] == 0) return TIR_OK; /* 0 blocks: nothing runs, nothing can wrap */
    if (!p->nsteps) return TIR_OK;
    e.strict = false;
    return eval_steps(ctx, p, &e);
}
