/* launch.c: the launch sizes of a lowered kernel, checked once for every
 * layer that needs them (tir_launch_check, tir_launch_eval_extent).
 *
 * The grid and block of a kernel are the extents of its thread-binding
 * loops (docs/lowered-ir.md).  Lowering (check_kernel), codegen (which
 * stores them in the tir_module), the simulator (which runs that many
 * blocks and threads) and the runtime (tir_module_launch_dims) all read
 * them through this one walk and this one evaluator, with the limits of a
 * tir_target_limits, so that they cannot disagree on what a legal launch
 * is.  Block extents are constants; grid extents may use scalar
 * parameters, evaluated per launch from the arguments.
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

/* ------------------------------------------------------------ evaluation */

static bool cast_value(tir_dtype t, int64_t v, int64_t *out) {
    *out = t.bits == 64   ? v
           : t.bits == 32 ? (t.code == TIR_TYPE_UINT ? (int64_t)(uint32_t)v : (int64_t)(int32_t)v)
           : t.code == TIR_TYPE_UINT ? (int64_t)(uint8_t)v
                                     : (int64_t)(int8_t)v;
    return true;
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

static bool eval_in(const tir_expr *e, int nvars, const tir_var *const *vars,
                    const int64_t *values, int64_t *out, const char **why);

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
    if (!eval_in(e, nvars, vars, values, out, why)) return false;
    if (tir_dtype_is_int(e->dtype) && !fits(e->dtype, *out)) {
        *why = e->kind == TIR_KIND_VAR ? "an argument that does not fit its parameter's dtype"
                                       : "an overflow of its dtype";
        return false;
    }
    return true;
}

static bool eval_in(const tir_expr *e, int nvars, const tir_var *const *vars,
                    const int64_t *values, int64_t *out, const char **why) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: *out = tir_as_tir_int_imm(e)->value; return true;
    case TIR_KIND_VAR:
        for (int i = 0; i < nvars; i++)
            if (vars[i] == tir_as_tir_var(e)) {
                *out = values[i];
                return true;
            }
        *why = "a variable that is not a parameter";
        return false;
    case TIR_KIND_CAST: {
        int64_t v;
        if (!tir_launch_eval_extent(tir_as_tir_cast(e)->value, nvars, vars, values, &v, why))
            return false;
        return cast_value(e->dtype, v, out);
    }
    default: break;
    }
    const tir_binop *b = tir_as_tir_binop(e);
    int64_t x, y;
    if (!b) {
        *why = "an expression that is not integer arithmetic";
        return false;
    }
    if (!tir_launch_eval_extent(b->a, nvars, vars, values, &x, why) ||
        !tir_launch_eval_extent(b->b, nvars, vars, values, &y, why))
        return false;
    bool ovf = false;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_ADD: ovf = __builtin_add_overflow(x, y, out); break;
    case TIR_KIND_SUB: ovf = __builtin_sub_overflow(x, y, out); break;
    case TIR_KIND_MUL: ovf = __builtin_mul_overflow(x, y, out); break;
    case TIR_KIND_MIN: *out = x < y ? x : y; break;
    case TIR_KIND_MAX: *out = x > y ? x : y; break;
    case TIR_KIND_DIV:
    case TIR_KIND_MOD:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD: return div_mod((tir_kind)e->kind, x, y, out, why);
    default: *why = "an expression that is not integer arithmetic"; return false;
    }
    if (ovf) {
        *why = "an overflow";
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ loop bounds */

typedef struct pb_state {
    tir_visitor v;
    const tir_prim_func *k;
    ir_vec out;
    bool other; /* only_params: a variable that is not a scalar parameter */
} pb_state;

static bool param_pre(tir_visitor *v, const tir_node *n) {
    pb_state *st = v->user;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_VAR:
        st->other |= !is_scalar_param(st->k, (const tir_var *)n) ||
                     !tir_dtype_is_int(((const tir_var *)n)->base.dtype);
        break;
    /* what tir_launch_eval_extent evaluates; a bound of another form (a
       Select, a load) is left to the kernel, never refused for its form */
    case TIR_KIND_INT_IMM:
    case TIR_KIND_CAST:
    case TIR_KIND_ADD:
    case TIR_KIND_SUB:
    case TIR_KIND_MUL:
    case TIR_KIND_MIN:
    case TIR_KIND_MAX:
    case TIR_KIND_DIV:
    case TIR_KIND_MOD:
    case TIR_KIND_FLOORDIV:
    case TIR_KIND_FLOORMOD: break;
    default: st->other = true; break;
    }
    return !st->other;
}

/* e names scalar parameters of k and nothing else (no loop variable, no
 * load) in integer arithmetic tir_launch_eval_extent evaluates. */
static bool only_params(const tir_prim_func *k, const tir_expr *e) {
    if (e->kind == TIR_KIND_INT_IMM || !tir_dtype_is_int(e->dtype) || e->dtype.lanes != 1)
        return false;
    pb_state st = {{.pre = param_pre}, k, {0}, false};
    st.v.user = &st;
    tir_visit(&st.v, e);
    return !st.other;
}

static void add_bound(pb_state *st, const tir_expr *e) {
    if (!only_params(st->k, e)) return;
    /* by identity: tir_struct_equal equates n * 2 and m * 2 (equal up to
       renaming), and a repeat only costs an evaluation */
    for (int i = 0; i < st->out.n; i++)
        if (st->out.items[i] == (const void *)e) return;
    ir_vec_push(&st->out, e);
}

static bool bound_pre(tir_visitor *v, const tir_node *n) {
    pb_state *st = v->user;
    if (n->kind == TIR_KIND_FOR) {
        const tir_for *f = (const tir_for *)n;
        add_bound(st, f->min);
        add_bound(st, f->extent);
    }
    return true;
}

void tir_launch_param_bounds(tir_ctx *ctx, const tir_prim_func *kernel, int *n,
                             const tir_expr *const **out) {
    pb_state st = {{.pre = bound_pre}, kernel, {0}, false};
    st.v.user = &st;
    tir_visit(&st.v, kernel->body);
    const tir_expr **r = IR_NEWN(ctx, const tir_expr *, st.out.n);
    for (int i = 0; i < st.out.n; i++) r[i] = st.out.items[i];
    *n = st.out.n;
    *out = r;
    ir_vec_free(&st.out);
}
