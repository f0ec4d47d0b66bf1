/* race_check.c: the static shared-memory race check, the last pass of
 * tir_lower (also tir_lower_check_races on any lowered kernel).
 *
 * thread_sync places barriers by a syntactic rule; this pass checks the
 * result independently, so a kernel it lets through has no shared-memory
 * race the simulator could find.  Two steps:
 *
 * Paths.  Each statement is summarised, as in thread_sync, by the shared
 * accesses reachable from its entry without a barrier (head), those from
 * which its exit is reachable without one (tail) and whether a path
 * through it has no barrier at all (through).  Accesses of one statement
 * pair with each other; in a sequence the pending tail pairs with the next
 * head; a serial loop that may iterate more than once pairs its body's
 * tail with its head (the back edge).  Every write also pairs with itself
 * (other threads run the same store in the same interval).  A cp_async is
 * a write where it is issued and again, with the same index, at every
 * cp_async_wait it may still be in flight at (cp_inflight.c; where its
 * data lands).
 *
 * Elements.  A pair conflicts when both touch one buffer, one writes, and
 * some element is touched by two different threads.  Each access's index
 * is evaluated at every point of the ranges of the variables it uses (all
 * loop variables other than threadIdx are free on both sides, so different
 * iterations are covered); each element gets its owner thread, or "many".
 * An index the evaluator cannot handle (a variable without a constant
 * range, a Let or a load, more than RC_MAX_POINTS points), a buffer that
 * is not flat or has no constant size up to RC_MAX_ELEMS, conflict with
 * every access by another thread.  A threadIdx loop without a constant
 * extent is refused (gpu_check rules it out before).
 *
 * Same iteration.  A pair met inside a serial loop is in one iteration of
 * it (pairs from different iterations meet at the loop's back edge, where
 * its variable is free on both sides), so when the free comparison finds a
 * conflict it is tried again with one enclosing loop variable k fixed to
 * each of its values (one period when neither side's conditions use k,
 * or when there are too many, those conditions then left out):
 * the two versions floormod(k, 2) and floormod(k + 1, 2) of a pipeline in
 * one interval are then told apart.  A cp_async landing at a wait keeps its
 * issue's index, whose k is an earlier iteration's: never fixed.  The check
 * is sound and may reject race-free kernels; docs/lowering.md has the
 * limits.
 *
 * Warp fragments.  lane_id() (lower_fragments' per-lane code) is
 * threadIdx.x, which is the lane in a kernel with fragments: it stands
 * for a pseudo loop variable of range [0, 32) on threadIdx.x's axis (free,
 * like every thread axis, in the check across blocks: period() counts
 * lane_id() as that variable, not as a constant).  An
 * ldmatrix reads 16 bytes of shared memory from its address (the row
 * this lane gives); mma_sync touches registers only.
 */
#include <stdlib.h>
#include <string.h>

#include <assert.h>

#include "ir/arith_internal.h"
#include "lower_internal.h"

enum { RC_MAX_LOOPS = 32, RC_MAX_CONDS = 16, RC_MAX_VARS = 24 };
/* points enumerated per access: at most, and with conditions */
enum { RC_MAX_POINTS = 1 << 22, RC_COND_POINTS = 1 << 14 };
enum { OWN_NONE = -2, OWN_MANY = -1 };
/* larger buffers or thread blocks are not analysed (conflict) */
enum { RC_MAX_ELEMS = 1 << 20, RC_MAX_THREADS = 1 << 16 };
/* values of a fixed loop variable tried, and their elements in all */
enum { RC_MAX_FIXED = 256, RC_FIXED_ELEMS = 1 << 24 };

typedef struct rloop {
    const tir_var *var;
    int64_t lo, hi; /* inclusive; lo > hi: no constant range */
    int dim;        /* 0..2 for threadIdx.x/y/z, 3..5 for blockIdx.x/y/z, else -1 */
} rloop;

typedef struct racc {
    const tir_buffer *buf;
    bool write;
    const tir_expr *idx;   /* flat index (Ramp for vector accesses) */
    int64_t span;          /* elements from each index value: a cp_async's width */
    const tir_stmt *stmt;  /* for the message */
    rloop loops[RC_MAX_LOOPS];
    int nloops;
    const tir_expr *conds[RC_MAX_CONDS]; /* enclosing conditions, all hold */
    bool neg[RC_MAX_CONDS];              /* ... or, in an else, do not */
    int nconds;
    int64_t *owner; /* per element: thread id, OWN_NONE or OWN_MANY; lazily */
    int64_t olo, ohi; /* the elements of owner that are not OWN_NONE lie in [olo, ohi] */
    bool landed;    /* a cp_async landing at a wait (its index: the issue's) */
    const tir_call *issue; /* the cp_async call of an issue (NULL otherwise) */
    bool borrowed;  /* owner is another access's (see owner_twin): not freed */
    int64_t otext[6]; /* the threadIdx and blockIdx extents owner was computed with */
    bool global;      /* a global buffer of global_share's: blocks own elements too */
    bool second;      /* from the second walk (the cross-block check's accesses) */
} racc;

typedef struct summ {
    ir_vec head, tail; /* racc* */
    bool through;
} summ;

typedef struct rc {
    lower_state *st;
    tir_analyzer *an;
    rloop stack[RC_MAX_LOOPS];
    int nstack;
    const tir_expr *conds[RC_MAX_CONDS];
    bool neg[RC_MAX_CONDS];
    int nconds;
    int64_t text[6]; /* threadIdx extents, then blockIdx extents */
    bool blockwise;  /* owners are blocks, not threads (cross_block) */
    ir_vec all;      /* every racc, freed at the end */
    ir_vec async;    /* cp_async issues, copied at each wait they may land at */
    lower_inflight inflight;
    bool collect;    /* first walk: only the cp_async issues */
    const racc *bad[2];
    bool cross; /* bad[] meet across thread blocks */
    const tir_stmt *cur;
    const tir_for *odd_thread; /* a threadIdx loop not understood */
    const tir_call *odd_copy;  /* a cp_async without a shared destination */
    ir_vec owned;     /* the accesses whose owner was enumerated (owner_twin) */
    int64_t *scratch; /* nscratch elements, all OWN_NONE between owner calls */
    int64_t nscratch;
} rc;

/* ---------------------------------------------------------- index values */

/* The pseudo variable lane_id() stands for (only its address is used). */
static const tir_var lane_key;

typedef struct env {
    const tir_var *vars[RC_MAX_VARS];
    int64_t val[RC_MAX_VARS], lo[RC_MAX_VARS], hi[RC_MAX_VARS];
    int dim[RC_MAX_VARS];     /* owner axis (0..5, see rloop) or -1 */
    bool capped[RC_MAX_VARS]; /* one period only (see period) */
    int n;
    int64_t points; /* product of the ranges, times the lanes */
    int64_t lane;
} env;

static int64_t fdiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* An integer type narrower than the int32 the indices' arithmetic is
 * evaluated in without wrapping (second review of the sixteenth session:
 * carried.c evaluated such arithmetic unwrapped too). */
static bool narrow(tir_dtype t) {
    return (t.code == TIR_TYPE_INT || t.code == TIR_TYPE_UINT) && t.bits < 32;
}

/* The value of integer expression e; *ok cleared for what is not handled. */
static int64_t eval(const tir_expr *e, const env *en, bool *ok) {
    if (!*ok) return 0;
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: return ((const tir_int_imm *)e)->value;
    case TIR_KIND_VAR:
        for (int i = 0; i < en->n; i++)
            if (en->vars[i] == (const tir_var *)e) return en->val[i];
        *ok = false;
        return 0;
    case TIR_KIND_CAST: return narrow(e->dtype) ? ar_wrap(e->dtype, eval(((const tir_cast *)e)->value, en, ok))
                                                : eval(((const tir_cast *)e)->value, en, ok);
    case TIR_KIND_CALL:
        if (((const tir_call *)e)->op != TIR_INTRIN_LANE_ID) break;
        for (int i = 0; i < en->n; i++)
            if (en->vars[i] == &lane_key) return en->val[i];
        break;
    case TIR_KIND_BROADCAST: return eval(((const tir_broadcast *)e)->value, en, ok);
    case TIR_KIND_RAMP: {
        const tir_ramp *r = (const tir_ramp *)e;
        return eval(r->start, en, ok) + en->lane * eval(r->stride, en, ok);
    }
    case TIR_KIND_NOT: return !eval(((const tir_not *)e)->a, en, ok);
    case TIR_KIND_EQ: case TIR_KIND_NE: case TIR_KIND_LT: case TIR_KIND_LE: case TIR_KIND_GT:
    case TIR_KIND_GE: case TIR_KIND_AND: case TIR_KIND_OR: {
        const tir_binop *b = (const tir_binop *)e;
        int64_t x = eval(b->a, en, ok), y = eval(b->b, en, ok);
        switch ((tir_kind)e->kind) {
        case TIR_KIND_EQ: return x == y;
        case TIR_KIND_NE: return x != y;
        case TIR_KIND_LT: return x < y;
        case TIR_KIND_LE: return x <= y;
        case TIR_KIND_GT: return x > y;
        case TIR_KIND_GE: return x >= y;
        case TIR_KIND_AND: return x && y;
        default: return x || y;
        }
    }
    case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: case TIR_KIND_DIV:
    case TIR_KIND_MOD: case TIR_KIND_FLOORDIV: case TIR_KIND_FLOORMOD: case TIR_KIND_MIN:
    case TIR_KIND_MAX: {
        const tir_binop *b = (const tir_binop *)e;
        int64_t x = eval(b->a, en, ok), y = eval(b->b, en, ok);
        bool div = e->kind == TIR_KIND_DIV || e->kind == TIR_KIND_MOD ||
                   e->kind == TIR_KIND_FLOORDIV || e->kind == TIR_KIND_FLOORMOD;
        if (!*ok || (div && y == 0)) {
            *ok = false;
            return 0;
        }
        if (narrow(e->dtype)) { /* uint8 255 + 1 is 0: the element the hardware touches */
            switch ((tir_kind)e->kind) {
            case TIR_KIND_ADD: return ar_wrap(e->dtype, x + y);
            case TIR_KIND_SUB: return ar_wrap(e->dtype, x - y);
            case TIR_KIND_MUL: return ar_wrap(e->dtype, x * y);
            default: break;
            }
        }
        switch ((tir_kind)e->kind) {
        case TIR_KIND_ADD: return x + y;
        case TIR_KIND_SUB: return x - y;
        case TIR_KIND_MUL: return x * y;
        case TIR_KIND_DIV: return x / y;
        case TIR_KIND_MOD: return x % y;
        case TIR_KIND_FLOORDIV: return fdiv(x, y);
        case TIR_KIND_FLOORMOD: return x - fdiv(x, y) * y;
        case TIR_KIND_MIN: return x < y ? x : y;
        default: return x > y ? x : y;
        }
    }
    default: break;
    }
    *ok = false;
    return 0;
}

/* An index expression compiled for one env (fill_owner evaluates it at
 * up to RC_MAX_POINTS points): postfix, its variables resolved to env
 * slots.  Same values as eval, which it replaces only where it compiles
 * (what eval does not handle, or a tree deeper than the stack, stays with
 * eval); Step 9's swizzled shared tiles made eval's tree walk with its
 * variable search most of this pass's time. */
enum { RC_PROG_MAX = 256, RC_PROG_STACK = 32 };
enum { P_K, P_VAR, P_LANE, P_NOT, P_EQ, P_NE, P_LT, P_LE, P_GT, P_GE, P_AND, P_OR,
       P_ADD, P_SUB, P_MUL, P_DIV, P_MOD, P_FLOORDIV, P_FLOORMOD, P_MIN, P_MAX };
typedef struct rc_prog {
    struct {
        int op, slot;
        int64_t k;
    } ins[RC_PROG_MAX];
    int n;
} rc_prog;

static bool prog_push(rc_prog *p, int op, int slot, int64_t k) {
    if (p->n == RC_PROG_MAX) return false;
    p->ins[p->n].op = op, p->ins[p->n].slot = slot, p->ins[p->n].k = k;
    p->n++;
    return true;
}

static int env_slot(const env *en, const void *v) {
    for (int i = 0; i < en->n; i++)
        if (en->vars[i] == v) return i;
    return -1;
}

/* Appends e's code; false where eval would not give a value (or the
 * program is full, or deeper than the stack). */
static bool prog_add(rc_prog *p, const tir_expr *e, const env *en, int depth) {
    if (depth >= RC_PROG_STACK || narrow(e->dtype)) return false; /* eval wraps them */
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: return prog_push(p, P_K, 0, ((const tir_int_imm *)e)->value);
    case TIR_KIND_VAR: {
        int i = env_slot(en, e);
        return i >= 0 && prog_push(p, P_VAR, i, 0);
    }
    case TIR_KIND_CAST: return prog_add(p, ((const tir_cast *)e)->value, en, depth);
    case TIR_KIND_CALL: {
        int i = ((const tir_call *)e)->op == TIR_INTRIN_LANE_ID ? env_slot(en, &lane_key) : -1;
        return i >= 0 && prog_push(p, P_VAR, i, 0);
    }
    case TIR_KIND_BROADCAST: return prog_add(p, ((const tir_broadcast *)e)->value, en, depth);
    case TIR_KIND_RAMP: {
        const tir_ramp *r = (const tir_ramp *)e;
        return prog_add(p, r->start, en, depth) && prog_push(p, P_LANE, 0, 0) &&
               prog_add(p, r->stride, en, depth + 2) && prog_push(p, P_MUL, 0, 0) &&
               prog_push(p, P_ADD, 0, 0);
    }
    case TIR_KIND_NOT: return prog_add(p, ((const tir_not *)e)->a, en, depth) && prog_push(p, P_NOT, 0, 0);
    default: break;
    }
    static const struct {
        tir_kind kind;
        int op;
    } bin[] = {{TIR_KIND_EQ, P_EQ},   {TIR_KIND_NE, P_NE},   {TIR_KIND_LT, P_LT},
               {TIR_KIND_LE, P_LE},   {TIR_KIND_GT, P_GT},   {TIR_KIND_GE, P_GE},
               {TIR_KIND_AND, P_AND}, {TIR_KIND_OR, P_OR},   {TIR_KIND_ADD, P_ADD},
               {TIR_KIND_SUB, P_SUB}, {TIR_KIND_MUL, P_MUL}, {TIR_KIND_DIV, P_DIV},
               {TIR_KIND_MOD, P_MOD}, {TIR_KIND_FLOORDIV, P_FLOORDIV},
               {TIR_KIND_FLOORMOD, P_FLOORMOD}, {TIR_KIND_MIN, P_MIN}, {TIR_KIND_MAX, P_MAX}};
    for (size_t i = 0; i < sizeof bin / sizeof *bin; i++)
        if (bin[i].kind == (tir_kind)e->kind) {
            const tir_binop *b = (const tir_binop *)e;
            return prog_add(p, b->a, en, depth) && prog_add(p, b->b, en, depth + 1) &&
                   prog_push(p, bin[i].op, 0, 0);
        }
    return false;
}

/* p as registers, one per instruction, re-run by fill_owner only where
 * the point's change reaches.  An instruction's level is the fastest-
 * changing input it depends on: 0 lane, 1 + slot for a variable (slot 0
 * is the odometer's fastest), RC_LVL_NEVER for constants.  Ordered by
 * level, highest first (operands never have a lower level than their
 * user, and keep their order within a level), the instructions of level
 * <= l are a suffix, from start[l]: after a step of the odometer that
 * changed slots 0..i, re-running from start[i + 1] gives every register
 * the value p's evaluation at the new point has, the others being
 * unchanged inputs' results.  A division by zero is counted (nzero), not
 * returned at once: that point may be one whose conditions do not hold,
 * which eval never sees.  Every instruction belongs to the root's tree,
 * so p's evaluation fails at a point exactly when nzero > 0 there.  Most
 * of a swizzled index does not depend on the fastest slots: fill_owner's
 * own instructions in the bf16 4096^3 kernel went from 126 to 58 million
 * (callgrind). */
enum { RC_LVL_NEVER = RC_MAX_VARS + 2 };
typedef struct rc_staged {
    struct {
        int op, a, b, slot; /* a, b: operand registers */
        int64_t k;
    } ins[RC_PROG_MAX];
    int n, root;
    int start[RC_LVL_NEVER + 1];
    int64_t r[RC_PROG_MAX];
    bool zero[RC_PROG_MAX]; /* a division instruction's divisor is 0 */
    int nzero;
} rc_staged;

/* s from p (which prog_add filled). */
static void stage(const rc_prog *p, rc_staged *s) {
    int lvl[RC_PROG_MAX], opa[RC_PROG_MAX], opb[RC_PROG_MAX], stk[RC_PROG_STACK + 2], sp = 0;
    for (int i = 0; i < p->n; i++) {
        int op = p->ins[i].op;
        opa[i] = opb[i] = -1;
        if (op == P_K) lvl[i] = RC_LVL_NEVER;
        else if (op == P_VAR) lvl[i] = 1 + p->ins[i].slot;
        else if (op == P_LANE) lvl[i] = 0;
        else if (op == P_NOT) opa[i] = stk[--sp], lvl[i] = lvl[opa[i]];
        else {
            opb[i] = stk[--sp], opa[i] = stk[--sp];
            lvl[i] = lvl[opa[i]] < lvl[opb[i]] ? lvl[opa[i]] : lvl[opb[i]];
        }
        stk[sp++] = i;
    }
    int pos[RC_PROG_MAX], n = 0;
    /* stable, highest level first; start[l]: the first of level <= l */
    for (int l = RC_LVL_NEVER; l >= 0; l--) {
        s->start[l] = n;
        for (int i = 0; i < p->n; i++)
            if (lvl[i] == l) pos[i] = n++;
    }
    for (int i = 0; i < p->n; i++) {
        s->ins[pos[i]].op = p->ins[i].op;
        s->ins[pos[i]].slot = p->ins[i].slot;
        s->ins[pos[i]].k = p->ins[i].k;
        s->ins[pos[i]].a = opa[i] >= 0 ? pos[opa[i]] : -1;
        s->ins[pos[i]].b = opb[i] >= 0 ? pos[opb[i]] : -1;
        s->zero[pos[i]] = false;
    }
    s->n = n;
    s->root = pos[p->n - 1];
    s->nzero = 0;
}

/* Re-runs the registers of level <= l at en (every one: RC_LVL_NEVER). */
static void staged_run(rc_staged *s, const env *en, int l) {
    for (int j = s->start[l]; j < s->n; j++) {
        int op = s->ins[j].op;
        if (op == P_K) { s->r[j] = s->ins[j].k; continue; }
        if (op == P_VAR) { s->r[j] = en->val[s->ins[j].slot]; continue; }
        if (op == P_LANE) { s->r[j] = en->lane; continue; }
        if (op == P_NOT) { s->r[j] = !s->r[s->ins[j].a]; continue; }
        int64_t x = s->r[s->ins[j].a], y = s->r[s->ins[j].b], r;
        switch (op) {
        case P_EQ: r = x == y; break;
        case P_NE: r = x != y; break;
        case P_LT: r = x < y; break;
        case P_LE: r = x <= y; break;
        case P_GT: r = x > y; break;
        case P_GE: r = x >= y; break;
        case P_AND: r = x && y; break;
        case P_OR: r = x || y; break;
        case P_ADD: r = x + y; break;
        case P_SUB: r = x - y; break;
        case P_MUL: r = x * y; break;
        case P_MIN: r = x < y ? x : y; break;
        case P_MAX: r = x > y ? x : y; break;
        default:
            s->nzero += (y == 0) - s->zero[j];
            s->zero[j] = y == 0;
            r = y == 0 ? 0 : op == P_DIV ? x / y : op == P_MOD ? x % y
                       : op == P_FLOORDIV ? fdiv(x, y) : x - fdiv(x, y) * y;
        }
        s->r[j] = r;
    }
}

/* The loop of a's context defining v, or NULL. */
static const rloop *loop_of(const racc *a, const void *v) {
    for (int i = a->nloops - 1; i >= 0; i--)
        if (a->loops[i].var == v) return &a->loops[i];
    return NULL;
}

/* The period in v of e's value when every occurrence of v sits under a
 * floormod by a constant c reached through +, -, * and casts only (such a
 * value repeats when v grows by c: the version index floormod(k, 2) of a
 * pipeline); 1 when v does not occur; -1 otherwise. */
static int64_t period(const tir_expr *e, const tir_var *v, int64_t mod) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_VAR: return (const tir_var *)e != v ? 1 : mod > 0 ? mod : -1;
    case TIR_KIND_CALL: /* lane_id() is the variable lane_key */
        if (((const tir_call *)e)->op == TIR_INTRIN_LANE_ID)
            return v != &lane_key ? 1 : mod > 0 ? mod : -1;
        break;
    case TIR_KIND_INT_IMM: return 1;
    case TIR_KIND_CAST: return period(((const tir_cast *)e)->value, v, mod);
    case TIR_KIND_FLOORMOD: case TIR_KIND_ADD: case TIR_KIND_SUB: case TIR_KIND_MUL: {
        const tir_binop *b = (const tir_binop *)e;
        int64_t c = 0;
        if (e->kind == TIR_KIND_FLOORMOD)
            mod = tir_expr_const_int(b->b, &c) && c > 0 && c <= RC_MAX_POINTS ? c : 0;
        int64_t x = period(b->a, v, mod), y = period(b->b, v, mod);
        if (x < 0 || y < 0) return -1;
        int64_t l = x / ir_gcd64(x, y) * y;
        return l <= RC_MAX_POINTS ? l : -1;
    }
    default: break;
    }
    {
        ir_vec vars = {0};
        lower_collect_vars(e, &vars);
        bool uses = v == &lane_key && lower_uses_lane(e);
        for (int i = 0; i < vars.n; i++) uses |= vars.items[i] == v;
        ir_vec_free(&vars);
        if (!uses) return 1;
        if (e->kind == TIR_KIND_RAMP || e->kind == TIR_KIND_BROADCAST) {
            /* lanes: only the start and the stride hold v */
            const tir_expr *a = e->kind == TIR_KIND_RAMP ? ((const tir_ramp *)e)->start
                                                         : ((const tir_broadcast *)e)->value;
            const tir_expr *b = e->kind == TIR_KIND_RAMP ? ((const tir_ramp *)e)->stride : NULL;
            int64_t x = period(a, v, 0), y = b ? period(b, v, 0) : 1;
            return x < 0 || y < 0 ? -1 : x / ir_gcd64(x, y) * y;
        }
        return -1;
    }
}

/* Adds the variables of e to en with their ranges; false, en unchanged,
 * when one has no constant range in a's context, there are too many, or
 * the points would exceed `budget`.  idx: e is the index, whose periodic
 * variables (see period) need only one period. */
/* The owner axis of loop l for a's elements: a thread axis (not when
 * blocks own them), a block axis for a global buffer; -1 for a variable
 * that is free (every value on both sides). */
static int owner_dim(const rc *c, const racc *a, const rloop *l) {
    if (l->dim < 0) return -1;
    if (l->dim < 3) return c->blockwise ? -1 : l->dim;
    return a->global ? l->dim : -1;
}

static bool add_vars(const rc *c, const racc *a, const tir_expr *e, bool idx, int64_t budget,
                     env *en) {
    ir_vec vars = {0};
    lower_collect_vars(e, &vars);
    if (lower_uses_lane(e)) ir_vec_push(&vars, &lane_key);
    env t = *en;
    bool ok = true;
    for (int i = 0; ok && i < vars.n; i++) {
        int j = 0;
        while (j < t.n && t.vars[j] != vars.items[i]) j++;
        if (j < t.n) {
            ok = !t.capped[j]; /* a condition on it would need every value */
            continue;
        }
        const rloop *l = loop_of(a, vars.items[i]);
        ok = l && l->lo <= l->hi && t.n < RC_MAX_VARS;
        if (!ok) break;
        /* a thread variable is never cut to one period: free in the
           check across blocks, its conditions (a ragged tile's clipping
           by warp) must stay */
        int dim = owner_dim(c, a, l);
        bool thread = l->dim >= 0 && l->dim < 3;
        int64_t hi = l->hi, p = idx && dim < 0 && !thread ? period(e, l->var, 0) : -1;
        t.capped[t.n] = p > 0 && l->lo + p - 1 < hi;
        if (t.capped[t.n]) hi = l->lo + p - 1;
        t.vars[t.n] = l->var;
        t.lo[t.n] = t.val[t.n] = l->lo;
        t.hi[t.n] = hi;
        t.dim[t.n] = dim;
        t.points *= hi - l->lo + 1;
        ok = t.points <= budget;
        t.n++;
    }
    ir_vec_free(&vars);
    if (ok) *en = t;
    return ok;
}

/* Do a's enclosing conditions (those kept, the first nk) hold at en? */
static bool conds_hold(const racc *a, const int *keep, int nk, const env *en) {
    for (int i = 0; i < nk; i++) {
        bool ok = true;
        bool v = eval(a->conds[keep[i]], en, &ok) != 0;
        if (ok && v == a->neg[keep[i]]) return false; /* unknown: may hold */
    }
    return true;
}

static bool fill_points(const rc *c, const racc *a, const env *start, const int *keep, int nk,
                        bool shared, rc_staged *sp, int64_t *own, int64_t base, int64_t size,
                        int64_t *lo, int64_t *hi);

/* Enumerates a's index over the ranges of its variables, restricted by
 * those of its conditions that stay within RC_COND_POINTS points (the
 * others are left out: more points, still sound); false when it cannot. */
static bool fill_owner(const rc *c, const racc *a, int64_t *own, int64_t base, int64_t size,
                       const rloop *fix, int64_t val, bool drop_fix_conds, int64_t *lo,
                       int64_t *hi) {
    int lanes = a->idx->dtype.lanes > 1 ? a->idx->dtype.lanes : 1;
    env en = {.n = 0, .points = lanes};
    if (fix) { /* one value only (see "Same iteration") */
        en.vars[0] = fix->var;
        en.val[0] = en.lo[0] = en.hi[0] = val;
        en.dim[0] = -1;
        en.capped[0] = false;
        en.n = 1;
    }
    if (!add_vars(c, a, a->idx, true, RC_MAX_POINTS, &en)) return false;
    /* first the conditions over the index's variables (free), then others */
    int keep[RC_MAX_CONDS], nk = 0;
    bool kept[RC_MAX_CONDS] = {false};
    int64_t free_points = en.points;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < a->nconds; i++)
            if (!kept[i] && !(drop_fix_conds && tir_uses_var(a->conds[i], fix->var)) &&
                add_vars(c, a, a->conds[i], false, pass ? RC_COND_POINTS : free_points, &en))
                kept[i] = true, keep[nk++] = i;
    bool dim_used[6] = {false};
    for (int i = 0; i < en.n; i++)
        if (en.dim[i] >= 0) dim_used[en.dim[i]] = true;
    /* an owner axis the index ignores: every element has several owners */
    bool shared = false;
    for (int d = 0; d < 6; d++)
        shared |= !dim_used[d] && c->text[d] > 1 && (d < 3 ? !c->blockwise : a->global);
    static _Thread_local rc_prog prog; /* 6 KB: not on the stack */
    prog.n = 0;
    bool compiled = prog_add(&prog, a->idx, &en, 0);
    /* on the heap, not thread-local: that cost a look-up per point */
    rc_staged *sp = compiled ? ir_xmalloc(sizeof *sp) : NULL;
    if (compiled) stage(&prog, sp);
    bool done = fill_points(c, a, &en, keep, nk, shared, sp, own, base, size, lo, hi);
    free(sp);
    return done;
}

/* fill_owner's enumeration: sp is a's index staged, NULL to use eval. */
static bool fill_points(const rc *c, const racc *a, const env *start, const int *keep, int nk,
                        bool shared, rc_staged *sp, int64_t *own, int64_t base, int64_t size,
                        int64_t *lo, int64_t *hi) {
    env en = *start;
    int lanes = a->idx->dtype.lanes > 1 ? a->idx->dtype.lanes : 1;
    bool ok = true, compiled = sp != NULL;
    int dirty = RC_LVL_NEVER; /* the registers to re-run at the next point */
    for (;;) {
        int64_t tid = 0;
        for (int i = 0; i < en.n; i++)
            if (en.dim[i] >= 0) {
                int64_t mul = 1;
                for (int d = 0; d < en.dim[i]; d++) mul *= c->text[d];
                tid += en.val[i] * mul;
            }
        bool hold = conds_hold(a, keep, nk, &en); /* scalar: the same for every lane */
        for (en.lane = 0; hold && en.lane < lanes; en.lane++) {
            int64_t el = 0;
            if (compiled) {
                staged_run(sp, &en, en.lane ? 0 : dirty);
                dirty = -1;
                if (sp->nzero) ok = false; /* eval's result there: 0, not ok */
                else el = sp->r[sp->root];
            } else {
                el = eval(a->idx, &en, &ok);
            }
            /* a compiler bug would be a race let through: eval checks the
               points whose first variable is a multiple of 64 (all of
               them when that variable's range is below 64, such as a
               thread index of 8; with every point checked, race_fuzz,
               hgemm_sim, lower_fragments, smem_swizzle and 400 GPU-path
               fuzz cases found them equal) */
            assert(!compiled || (en.val[0] & 63) || el == eval(a->idx, &en, &(bool){true}));
            if (!ok) return false;
            if (el < *lo && el + a->span > 0) *lo = el > 0 ? el : 0;
            if (el + a->span - 1 > *hi && el < size)
                *hi = el + a->span - 1 < size ? el + a->span - 1 : size - 1;
            for (int64_t k = el; own && k < el + a->span; k++) {
                if (k < 0 || k >= size) continue;
                int64_t *o = &own[k - base];
                *o = shared || (*o != OWN_NONE && *o != tid) ? OWN_MANY : tid;
            }
        }
        int i = 0; /* next point, odometer order */
        while (i < en.n && ++en.val[i] > en.hi[i]) {
            en.val[i] = en.lo[i];
            i++;
        }
        if (i == en.n) return true;
        if (dirty < i + 1) dirty = i + 1; /* slots 0..i changed */
    }
}

/* Does fill_owner give a and b the same result?  It reads only the
 * buffer (its size), the index, the span, the loops (ranges of the index's
 * and conditions' variables), the conditions and the threadIdx extents:
 * equal fields, equal owners.  A cp_async landing at a wait is its
 * issue's index, loops and conditions again (one issue lands at up to six
 * waits in Step 9: two thirds of the accesses). */
static bool same_owner(const racc *a, const racc *b, const int64_t text[6]) {
    if (a->buf != b->buf || a->idx != b->idx || a->span != b->span ||
        a->nloops != b->nloops || a->nconds != b->nconds)
        return false;
    for (int d = 0; d < 6; d++)
        if (b->otext[d] != text[d]) return false;
    for (int i = 0; i < a->nloops; i++) {
        const rloop *x = &a->loops[i], *y = &b->loops[i];
        if (x->var != y->var || x->lo != y->lo || x->hi != y->hi || x->dim != y->dim)
            return false;
    }
    for (int i = 0; i < a->nconds; i++)
        if (a->conds[i] != b->conds[i] || a->neg[i] != b->neg[i]) return false;
    return true;
}

/* An access already enumerated whose owner a would get, or NULL. */
static const racc *owner_twin(const rc *c, const racc *a) {
    for (int i = 0; i < c->owned.n; i++) {
        const racc *b = c->owned.items[i];
        if (same_owner(a, b, c->text)) return b;
    }
    return NULL;
}

/* c's scratch array for a buffer of size elements, all OWN_NONE. */
static int64_t *scratch(rc *c, int64_t size) {
    if (c->nscratch < size) {
        free(c->scratch);
        c->scratch = ir_xmalloc(sizeof(int64_t) * (size_t)size);
        for (int64_t i = 0; i < size; i++) c->scratch[i] = OWN_NONE;
        c->nscratch = size;
    }
    return c->scratch;
}

/* NULL when the buffer has no constant size below RC_MAX_ELEMS.  One
 * enumeration into a whole-buffer scratch array, of which the elements'
 * range is kept (whole-buffer arrays per access were most of Step 9's
 * lowering time; enumerating twice, for the range and then the array,
 * was half of this pass's). */
static const int64_t *owner(rc *c, racc *a) {
    if (a->owner) return a->owner;
    int64_t size = tir_buffer_const_size(a->buf);
    if (size < 0 || size > RC_MAX_ELEMS) return NULL;
    const racc *twin = owner_twin(c, a);
    if (twin) {
        a->owner = twin->owner, a->olo = twin->olo, a->ohi = twin->ohi;
        a->borrowed = true;
        return a->owner;
    }
    memcpy(a->otext, c->text, sizeof a->otext);
    int64_t *own = scratch(c, size);
    a->olo = size, a->ohi = -1;
    bool ok = a->idx && fill_owner(c, a, own, 0, size, NULL, 0, false, &a->olo, &a->ohi);
    int64_t tlo = a->olo, thi = a->ohi; /* what fill_owner wrote lies in here */
    if (!ok) a->olo = 0, a->ohi = size - 1;
    int64_t n = a->ohi >= a->olo ? a->ohi - a->olo + 1 : 1;
    a->owner = ir_xmalloc(sizeof(int64_t) * (size_t)n);
    if (ok && a->ohi >= a->olo)
        memcpy(a->owner, own + a->olo, sizeof(int64_t) * (size_t)n);
    else
        for (int64_t i = 0; i < n; i++) a->owner[i] = ok ? OWN_NONE : OWN_MANY; /* anything, anyone */
    for (int64_t i = tlo; i <= thi; i++) own[i] = OWN_NONE; /* back to empty */
    ir_vec_push(&c->owned, a);
    return a->owner;
}

/* Some element in [lo, hi] owned by both, not by one thread alone.  The
 * callers pass the intersection of the two accesses' element ranges
 * (elements outside it are OWN_NONE on one side): an interleaved
 * pipeline's many copy pieces made whole-buffer scans 3.5x the lowering
 * time of Step 9. */
static bool owners_meet(const int64_t *x, const int64_t *y, int64_t lo, int64_t hi) {
    for (int64_t i = 0; i <= hi - lo; i++) {
        if (x[i] == OWN_NONE || y[i] == OWN_NONE) continue;
        if (x[i] == OWN_MANY || y[i] == OWN_MANY || x[i] != y[i]) return true;
    }
    return false;
}

static bool conds_use(const racc *a, const tir_var *v) {
    for (int i = 0; i < a->nconds; i++)
        if (tir_uses_var(a->conds[i], v)) return true;
    return false;
}

/* The values of l to try for a and b: all, or one period of both indices
 * when no condition uses l's variable or (*drop: those conditions left
 * out, more elements, still sound) when all would be too many; 0 when
 * too many. */
static int64_t fixed_values(const rloop *l, const racc *a, const racc *b, bool *drop) {
    int64_t n = l->hi - l->lo + 1;
    int64_t pa = period(a->idx, l->var, 0), pb = period(b->idx, l->var, 0);
    bool conds = conds_use(a, l->var) || conds_use(b, l->var);
    *drop = false;
    if (pa > 0 && pb > 0 && (!conds || n > RC_MAX_FIXED)) {
        int64_t p = pa / ir_gcd64(pa, pb) * pb;
        *drop = conds && p < n;
        if (p < n) n = p;
    }
    return n <= RC_MAX_FIXED ? n : 0;
}

/* Do a and b, both in one iteration of loop l, touch no element from two
 * threads for every value of its variable? */
static bool apart_fixed(const rc *c, const racc *a, const racc *b, const rloop *l,
                        int64_t size) {
    bool drop;
    int64_t n = fixed_values(l, a, b, &drop);
    if (n == 0 || n * size > RC_FIXED_ELEMS) return false;
    int64_t *x = ir_xmalloc(sizeof(int64_t) * (size_t)size * 2), *y = x + size;
    for (int64_t i = 0; i < 2 * size; i++) x[i] = OWN_NONE;
    bool apart = true;
    for (int64_t v = l->lo; apart && v < l->lo + n; v++) {
        int64_t xlo = size, xhi = -1, ylo = size, yhi = -1;
        apart = fill_owner(c, a, x, 0, size, l, v, drop, &xlo, &xhi) &&
                fill_owner(c, b, y, 0, size, l, v, drop, &ylo, &yhi);
        int64_t lo = xlo > ylo ? xlo : ylo, hi = xhi < yhi ? xhi : yhi;
        apart = apart && !owners_meet(x + lo, y + lo, lo, hi);
        for (int64_t i = xlo; i <= xhi; i++) x[i] = OWN_NONE; /* back to empty */
        for (int64_t i = ylo; i <= yhi; i++) y[i] = OWN_NONE;
    }
    free(x);
    return apart;
}

/* May a and b touch one element from two different threads?  First with
 * every loop variable free, then with one of the enclosing loops fixed. */
static bool collide(rc *c, racc *a, racc *b) {
    if (a->buf != b->buf || (!a->write && !b->write)) return false;
    const int64_t *x = owner(c, a), *y = owner(c, b);
    if (!x || !y) return true;
    int64_t lo = a->olo > b->olo ? a->olo : b->olo, hi = a->ohi < b->ohi ? a->ohi : b->ohi;
    if (lo > hi || !owners_meet(x + (lo - a->olo), y + (lo - b->olo), lo, hi)) return false;
    int64_t size = tir_buffer_const_size(a->buf);
    if (!a->idx || !b->idx || a->landed || b->landed) return true;
    for (int i = c->nstack - 1; i >= 0; i--) {
        const rloop *l = &c->stack[i];
        if ((l->dim < 0 || l->dim >= 3) && l->lo <= l->hi && tir_uses_var(a->idx, l->var) &&
            tir_uses_var(b->idx, l->var) && apart_fixed(c, a, b, l, size))
            return false;
    }
    return true;
}

static void check_pair(rc *c, racc *a, racc *b) {
    if (!c->bad[0] && !c->collect && collide(c, a, b)) {
        c->bad[0] = a;
        c->bad[1] = b;
    }
}

/* May a and b (global, one a write) touch one element from two thread
 * blocks?  No barrier orders blocks, so this holds whatever the paths. */
static bool blocks_meet(rc *c, const racc *a, const racc *b) {
    int64_t size = tir_buffer_const_size(a->buf);
    if (size < 0 || size > RC_MAX_ELEMS || !a->idx || !b->idx) return true;
    int64_t *x = ir_xmalloc(sizeof(int64_t) * (size_t)size * 2), *y = x + size;
    for (int64_t i = 0; i < 2 * size; i++) x[i] = OWN_NONE;
    int64_t xlo = size, xhi = -1, ylo = size, yhi = -1;
    c->blockwise = true;
    bool meet = !fill_owner(c, a, x, 0, size, NULL, 0, false, &xlo, &xhi) ||
                !fill_owner(c, b, y, 0, size, NULL, 0, false, &ylo, &yhi);
    c->blockwise = false;
    int64_t lo = xlo > ylo ? xlo : ylo, hi = xhi < yhi ? xhi : yhi;
    meet = meet || owners_meet(x + lo, y + lo, lo, hi);
    free(x);
    return meet;
}

/* Every write of a global buffer of global_share's against every access
 * of it in the kernel: one element in two blocks is a race no barrier
 * fixes (the first such pair goes to c->bad, c->cross set). */
static void cross_block(rc *c) {
    for (int i = 0; i < c->all.n && !c->bad[0]; i++) {
        racc *a = (racc *)c->all.items[i];
        if (!a->global || !a->second || !a->write) continue;
        for (int j = 0; j < c->all.n && !c->bad[0]; j++) {
            racc *b = (racc *)c->all.items[j];
            if (b->buf != a->buf || !b->second || b->landed) continue;
            if (blocks_meet(c, a, b)) c->bad[0] = a, c->bad[1] = b, c->cross = true;
        }
    }
}

/* ------------------------------------------------------------------ paths */

static racc *new_acc(rc *c, const tir_buffer *b, bool write, const tir_expr *idx) {
    racc *a = ir_xcalloc(1, sizeof *a);
    *a = (racc){.buf = b, .write = write, .idx = idx, .span = 1, .stmt = c->cur,
                .nloops = c->nstack};
    memcpy(a->loops, c->stack, sizeof(rloop) * (size_t)c->nstack);
    a->nconds = c->nconds;
    memcpy(a->conds, c->conds, sizeof a->conds[0] * (size_t)c->nconds);
    memcpy(a->neg, c->neg, sizeof a->neg[0] * (size_t)c->nconds);
    ir_vec_push(&c->all, a);
    return a;
}

typedef struct leafc {
    rc *c;
    ir_vec *out;
} leafc;

/* A buffer that is not flat (not a lowered kernel): any element (idx NULL). */
static void add_acc(leafc *l, const tir_buffer *b, bool write, const tir_expr *idx) {
    bool global = lower_sync_global(l->c->st, b);
    if (b->scope != TIR_SCOPE_SHARED && !global) return;
    racc *a = new_acc(l->c, b, write, b->ndim == 1 ? idx : NULL);
    a->global = global;
    a->second = !l->c->collect;
    ir_vec_push(l->out, a);
}

static bool leaf_pre(tir_visitor *v, const tir_node *n) {
    leafc *l = v->user;
    if (n->kind == TIR_KIND_BUFFER_LOAD) {
        const tir_buffer_load *ld = (const tir_buffer_load *)n;
        add_acc(l, ld->buffer, false, ld->indices[0]);
    } else if (n->kind == TIR_KIND_BUFFER_STORE) {
        const tir_buffer_store *s = (const tir_buffer_store *)n;
        add_acc(l, s->buffer, true, s->indices[0]);
    } else if (n->kind == TIR_KIND_CALL) {
        const tir_call *call = (const tir_call *)n;
        if (call->op == TIR_INTRIN_CP_ASYNC_WAIT) {
            /* the copies land: each issue that may be in flight here
             * (cp_inflight.c) again, as a write by its thread */
            for (int i = 0; i < l->c->async.n; i++) {
                const racc *is = l->c->async.items[i];
                if (!lower_inflight_has(&l->c->inflight, call, is->issue)) continue;
                racc *a = new_acc(l->c, is->buf, true, is->idx);
                a->span = is->span;
                memcpy(a->loops, is->loops, sizeof(rloop) * (size_t)is->nloops);
                a->nloops = is->nloops;
                memcpy(a->conds, is->conds, sizeof a->conds[0] * (size_t)is->nconds);
                memcpy(a->neg, is->neg, sizeof a->neg[0] * (size_t)is->nconds);
                a->nconds = is->nconds;
                a->landed = true;
                ir_vec_push(l->out, a);
            }
            return false;
        }
        if (call->op == TIR_INTRIN_LDMATRIX) {
            /* this lane's row: 16 bytes (8 or 4 elements) from its address */
            const tir_call *src = call->nargs == 4 ? tir_as_tir_call(call->args[3]) : NULL;
            const tir_buffer_load *ld =
                src && src->nargs == 1 ? tir_as_tir_buffer_load(src->args[0]) : NULL;
            if (!ld) return true;
            int n0 = l->out->n;
            add_acc(l, ld->buffer, false, ld->indices[0]);
            if (l->out->n > n0)
                ((racc *)l->out->items[n0])->span = lower_ldmatrix_row(ld->buffer->dtype);
            return false;
        }
        if (call->op == TIR_INTRIN_WGMMA_SYNC) { /* the warpgroup reads whole rows */
            for (int g = 0; g * 5 < call->nargs; g++) {
                const tir_expr *lo;
                int64_t span;
                const tir_buffer_load *ld = lower_wgmma_tile(l->c->st->ctx, call, g, &lo, &span);
                if (!ld) continue; /* check_kernel refuses it */
                int n0 = l->out->n;
                add_acc(l, ld->buffer, false, lo);
                if (l->out->n > n0) ((racc *)l->out->items[n0])->span = span;
            }
            return false;
        }
        if (call->op == TIR_INTRIN_ATOMIC_ADD) { /* a write of a global's element */
            const tir_buffer_load *ld = lower_addressed(call, 0);
            if (ld) add_acc(l, ld->buffer, true, ld->indices[0]);
            tir_visit(v, call->args[1]);
            return false;
        }
        if (call->op == TIR_INTRIN_CP_ASYNC) {
            const tir_call *dst = tir_as_tir_call(call->args[0]);
            const tir_buffer_load *ld =
                dst && dst->nargs == 1 ? tir_as_tir_buffer_load(dst->args[0]) : NULL;
            if (!ld || (call->nargs != 3 && call->nargs != 4)) {
                l->c->odd_copy = call; /* not the lowered form: refused */
                return false;
            }
            int n0 = l->out->n;
            add_acc(l, ld->buffer, true, ld->indices[0]);
            int64_t bytes = 0;
            if (l->out->n > n0) {
                racc *a = (racc *)l->out->items[n0];
                /* bytes of a scalar destination: that many elements from it */
                if (tir_expr_const_int(call->args[2], &bytes) && ld->indices[0]->dtype.lanes <= 1)
                    a->span = bytes / tir_dtype_bytes(ld->buffer->dtype);
                if (a->span < 1) a->span = 1;
                a->issue = call;
                if (l->c->collect) ir_vec_push(&l->c->async, a);
            }
            int n1 = l->out->n;
            tir_visit(v, call->args[1]);
            for (int i = n1; i < l->out->n; i++) { /* a global source: its bytes */
                racc *s = (racc *)l->out->items[i];
                if (s->global && bytes > 0 && s->idx && s->idx->dtype.lanes <= 1)
                    s->span = bytes / tir_dtype_bytes(s->buf->dtype) > 1
                                  ? bytes / tir_dtype_bytes(s->buf->dtype) : 1;
            }
            return false;
        }
    }
    return true;
}

static void pairs(rc *c, const ir_vec *x, const ir_vec *y) {
    for (int i = 0; i < x->n; i++)
        for (int j = 0; j < y->n; j++) check_pair(c, (racc *)x->items[i], (racc *)y->items[j]);
}

static void add_all(ir_vec *v, const ir_vec *w) {
    for (int i = 0; i < w->n; i++) ir_vec_push(v, w->items[i]);
}

static void summ_free(summ *r) {
    ir_vec_free(&r->head);
    ir_vec_free(&r->tail);
}

/* Every access of s pairs with every other (and each write with itself). */
static void leaf(rc *c, const tir_stmt *s, summ *r) {
    c->cur = s;
    leafc l = {c, &r->head};
    tir_visitor v = {.pre = leaf_pre, .user = &l};
    tir_visit(&v, s);
    pairs(c, &r->head, &r->head);
    add_all(&r->tail, &r->head);
    r->through = true;
}

static void walk(rc *c, const tir_stmt *s, summ *r);

/* More than RC_MAX_CONDS: the inner ones are left out (fewer known, sound). */
static void push_conjuncts(rc *c, const tir_expr *e) {
    if (e->kind == TIR_KIND_AND) {
        push_conjuncts(c, ((const tir_binop *)e)->a);
        push_conjuncts(c, ((const tir_binop *)e)->b);
    } else if (c->nconds < RC_MAX_CONDS) {
        c->conds[c->nconds] = e;
        c->neg[c->nconds++] = false;
    }
}

static void walk_seq(rc *c, const tir_seq *q, summ *r) {
    ir_vec pending = {0};
    r->through = true;
    for (int i = 0; i < q->n; i++) {
        summ cr = {{0}, {0}, false};
        walk(c, q->stmts[i], &cr);
        pairs(c, &pending, &cr.head);
        if (r->through) add_all(&r->head, &cr.head);
        r->through = r->through && cr.through;
        if (!cr.through) pending.n = 0;
        add_all(&pending, &cr.tail);
        summ_free(&cr);
    }
    add_all(&r->tail, &pending);
    ir_vec_free(&pending);
}

/* Loops deeper than RC_MAX_LOOPS are not pushed: their variables have no
 * known range (sound).  A thread axis with no constant extent of at most
 * RC_MAX_THREADS is recorded in c->odd_thread (the kernel is refused). */
static void walk_for(rc *c, const tir_for *f, summ *r) {
    tir_analyzer_bind(c->an, f->var, f->min, f->extent);
    tir_int_bound b = tir_analyzer_const_bound(c->an, (const tir_expr *)f->var);
    bool bounded = b.min > INT32_MIN && b.max < INT32_MAX;
    bool push = c->nstack < RC_MAX_LOOPS;
    /* a launch axis's extent even when the loop is not pushed (deeper
       than RC_MAX_LOOPS): an axis left at extent 1 would make its threads
       (blocks) one owner; a block axis of no constant extent counts as
       several blocks (its variable has no range, so an index using it
       conflicts; one ignoring it has several owners) */
    int odim = -1;
    if (lower_is_thread_loop(f)) {
        int dim = tir_thread_axis_dim(tir_thread_axis_lookup(f->thread_tag));
        if (dim < 0 || dim > 2 || !bounded || b.max - b.min + 1 > RC_MAX_THREADS)
            c->odd_thread = f;
        else
            c->text[dim] = b.max - b.min + 1, odim = dim;
    } else if (lower_is_block_loop(f)) {
        int dim = tir_thread_axis_dim(tir_thread_axis_lookup(f->thread_tag));
        int64_t e = bounded ? b.max - b.min + 1 : 2;
        if (dim >= 0 && dim <= 2) {
            if (c->text[3 + dim] < e) c->text[3 + dim] = e;
            odim = 3 + dim;
        }
    }
    if (push)
        c->stack[c->nstack++] = (rloop){f->var, bounded ? b.min : 1, bounded ? b.max : 0, odim};
    walk(c, f->body, r);
    if (push) c->nstack--;
    int64_t ext = 0;
    bool once = tir_expr_const_int(f->extent, &ext) && ext <= 1;
    if (f->kind != TIR_FOR_THREAD_BINDING && !once)
        pairs(c, &r->tail, &r->head); /* the next iteration after this one */
    if (!tir_expr_const_int(f->extent, &ext) || ext < 1) r->through = true; /* maybe none */
}

/* The condition's loads, then either branch. */
static void walk_if(rc *c, const tir_if *i, summ *r) {
    summ a = {{0}, {0}, false}, b = {{0}, {0}, true};
    ir_vec cv = {0};
    c->cur = (const tir_stmt *)i;
    leafc l = {c, &cv};
    tir_visitor v = {.pre = leaf_pre, .user = &l};
    tir_visit(&v, i->cond);
    pairs(c, &cv, &cv);
    /* the then branch knows each conjunct, the else branch the negation */
    int n0 = c->nconds;
    push_conjuncts(c, i->cond);
    walk(c, i->then_s, &a);
    c->nconds = n0;
    if (c->nconds < RC_MAX_CONDS) {
        c->conds[c->nconds] = i->cond;
        c->neg[c->nconds++] = true;
    }
    if (i->else_s) walk(c, i->else_s, &b);
    c->nconds = n0;
    pairs(c, &cv, &a.head);
    pairs(c, &cv, &b.head);
    add_all(&r->head, &cv);
    add_all(&r->head, &a.head);
    add_all(&r->head, &b.head);
    r->through = a.through || b.through;
    if (r->through) add_all(&r->tail, &cv);
    add_all(&r->tail, &a.tail);
    add_all(&r->tail, &b.tail);
    ir_vec_free(&cv);
    summ_free(&a);
    summ_free(&b);
}

static void walk(rc *c, const tir_stmt *s, summ *r) {
    switch ((tir_kind)s->kind) {
    case TIR_KIND_SEQ: walk_seq(c, (const tir_seq *)s, r); return;
    case TIR_KIND_ALLOCATE: walk(c, ((const tir_allocate *)s)->body, r); return;
    case TIR_KIND_FOR: walk_for(c, (const tir_for *)s, r); return;
    case TIR_KIND_IF: walk_if(c, (const tir_if *)s, r); return;
    default:
        if (lower_is_intrin_stmt(s, TIR_INTRIN_SYNCTHREADS)) {
            r->through = false;
            return;
        }
        leaf(c, s, r);
        return;
    }
}

/* lane_id() as a loop over threadIdx.x's axis, around everything (the
 * kernel's threadIdx.x loops, if any, have extent 32: lower_fragments). */
static void push_lane(rc *c) {
    c->stack[c->nstack++] = (rloop){&lane_key, 0, 31, 0};
    if (c->text[0] < 32) c->text[0] = 32;
}

/* The first line of s's text ("..." when there are more). */
static const char *stmt_text(tir_ctx *ctx, const tir_stmt *s) {
    const char *t = tir_print(ctx, s);
    size_t n = strcspn(t, "\n");
    bool more = t[n] && t[n + 1];
    char *r = tir_ctx_alloc(ctx, n + 5);
    memcpy(r, t, n);
    strcpy(r + n, more ? " ..." : "");
    return r;
}

tir_status lower_race_check(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    rc c = {.st = st, .an = tir_analyzer_create(st->ctx), .text = {1, 1, 1, 1, 1, 1},
            .collect = true};
    summ r = {{0}, {0}, false};
    lower_inflight_compute(in->body, &c.inflight);
    bool lane = lower_uses_lane(in->body);
    if (lane) push_lane(&c);
    walk(&c, in->body, &r); /* the cp_async issues, for the waits */
    summ_free(&r);
    c.collect = false;
    c.nstack = 0;
    if (lane) push_lane(&c);
    summ r2 = {{0}, {0}, false};
    walk(&c, in->body, &r2);
    summ_free(&r2);
    if (!c.bad[0] && st->nsync_globals) cross_block(&c);
    tir_status s = TIR_OK;
    if (c.odd_thread)
        s = lower_fail_marked(st, in, 1, (const void *const[]){c.odd_thread},
                              "race_check: thread loop %s (%s) has no constant extent of at "
                              "most %d",
                              c.odd_thread->var->name, c.odd_thread->thread_tag, RC_MAX_THREADS);
    else if (c.odd_copy)
        s = tir_ctx_fail(st->ctx, TIR_ERR_LOWER,
                         "race_check: %s is not a cp_async of the lowered form "
                         "(address_of a shared element, a source, a byte count, optionally the source bytes)",
                         tir_print(st->ctx, c.odd_copy));
    else if (c.bad[0] && c.bad[0]->global) {
        const racc *a = c.bad[0], *b = c.bad[1];
        const void *marks[2] = {a->stmt, b->stmt};
        s = lower_fail_marked(
            st, in, a->stmt == b->stmt ? 1 : 2, marks,
            "race_check: global buffer %s: %s (%s) and %s (%s) may touch one element from %s; "
            "give each element one thread (bind the loops its index uses), compute a consumer "
            "in its own kernel (at the root block), or keep an intermediate in shared or local "
            "memory",
            a->buf->name, stmt_text(st->ctx, a->stmt), a->write ? "write" : "read",
            a->stmt == b->stmt ? "itself" : stmt_text(st->ctx, b->stmt),
            b->write ? "write" : "read",
            c.cross ? "different thread blocks, which nothing orders within a kernel"
                    : "different threads with no syncthreads between them (or more elements "
                      "than the check enumerates)");
    } else if (c.bad[0]) {
        const racc *a = c.bad[0], *b = c.bad[1];
        const void *marks[2] = {a->stmt, b->stmt};
        s = lower_fail_marked(
            st, in, a->stmt == b->stmt ? 1 : 2, marks,
            "race_check: shared buffer %s: %s (%s) and %s (%s) may touch one element from "
            "different threads with no syncthreads between them",
            a->buf->name, stmt_text(st->ctx, a->stmt), a->write ? "write" : "read",
            a->stmt == b->stmt ? "itself" : stmt_text(st->ctx, b->stmt),
            b->write ? "write" : "read");
    }
    for (int i = 0; i < c.all.n; i++) {
        racc *a = (racc *)c.all.items[i];
        if (!a->borrowed) free(a->owner);
        free(a);
    }
    ir_vec_free(&c.all);
    ir_vec_free(&c.owned);
    free(c.scratch);
    ir_vec_free(&c.async);
    lower_inflight_free(&c.inflight);
    tir_analyzer_destroy(c.an);
    if (s == TIR_OK) *out = in;
    return s;
}
