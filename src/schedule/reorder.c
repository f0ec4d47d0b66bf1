/* reorder.c: reorder the loops of one nest (TVM's Reorder).
 *
 * The given loops lie on one chain of directly nested loops; the slots
 * they occupy in that chain are refilled in the order given, and loops of
 * the chain that were not given stay in their slots.  Loop nodes are
 * rebuilt with their own variables, so every loop handle stays valid.
 */
#include "sched_internal.h"

static int depth_of(const tir_schedule *s, int i) {
    int d = 0;
    for (int p = s->srefs[i].parent; p >= 0; p = s->srefs[p].parent) d++;
    return d;
}

static bool feeds(const tir_block_realize *r, const tir_var *v, bool *reduce) {
    bool any = false;
    for (int k = 0; k < r->nvalues; k++)
        if (tir_uses_var(r->values[k], v)) {
            any = true;
            if (r->block->iters[k].kind == TIR_ITER_REDUCE) *reduce = true;
        }
    return any;
}

/* 10: a loop that feeds no iterator of a reduction block r (compute_at
 * recomputing the block over several iterations of a loop above it leaves
 * one) repeats every instance.  That is harmless while each repetition runs
 * the whole reduction from its init, but with a reduce loop above it each
 * update runs once per repetition and accumulates again. */
static tir_status check_repeat_above_reduce(sch_call *c, uint32_t rv, const tir_block_realize *r,
                                            int m, const tir_for *const *order) {
    if (!r->block->init) return TIR_OK;
    for (int k = 0; k < m; k++) {
        bool reduce = false;
        if (!feeds(r, order[k]->var, &reduce) || !reduce) continue;
        for (int j = k + 1; j < m; j++) {
            bool unused = false;
            if (feeds(r, order[j]->var, &unused) || sch_is_const(order[j]->extent, 1)) continue;
            const void *marks[2] = {order[k], order[j]};
            return sch_fail_marks(c, TIR_ERR_SCHED_REPEATED_INSTANCES, rv, 2, marks,
                                  "loop %s feeds a reduce iterator of block \"%s\" and would "
                                  "lie above loop %s, which feeds none of its iterators and so "
                                  "repeats every instance: each update would accumulate once "
                                  "per repetition",
                                  order[k]->var->name, r->block->name, order[j]->var->name);
        }
    }
    return TIR_OK;
}

/* The variables of the loops in a subtree, down to (not into) the blocks
 * under it: the loops whose iterations a reorder of the subtree's top
 * chain can interleave differently. */
typedef struct {
    tir_visitor v;
    ir_vec *out;
} loop_vars;

static bool loop_vars_pre(tir_visitor *v, const tir_node *n) {
    const tir_for *l = tir_as_tir_for(n);
    if (l) ir_vec_push(((loop_vars *)v)->out, l->var);
    return !tir_kind_is_expr((tir_kind)n->kind) && n->kind != TIR_KIND_BLOCK_REALIZE;
}

static void loop_vars_under(const tir_stmt *top, ir_vec *out) {
    loop_vars lv = {{loop_vars_pre, NULL, NULL}, out};
    tir_visit(&lv.v, top);
}

/* True when loop variable v feeds both a spatial and a reduce iterator
 * of r. */
static bool is_mixed(const tir_block_realize *r, const tir_var *v) {
    bool spatial = false, reduce = false;
    for (int j = 0; j < r->nvalues; j++) {
        if (!tir_uses_var(r->values[j], v)) continue;
        if (r->block->iters[j].kind == TIR_ITER_REDUCE)
            reduce = true;
        else
            spatial = true;
    }
    return spatial && reduce;
}

/* The position of loop f in order[]. */
static int pos_in(const tir_for *const *order, const tir_for *f) {
    int k = 0;
    while (order[k] != f) k++;
    return k;
}

/* Groups the loops of `below` that feed r's iterators into tangled
 * groups: comp[i] is the index in `below` of the mixed loop (one that
 * feeds both a spatial and a reduce iterator of r) that loop i is joined
 * to through iterators they both feed, transitively, or -1. */
static void tangled_groups(tir_ctx *ctx, const tir_block_realize *r, const ir_vec *below,
                           int *comp) {
    int *iter = IR_NEWN(ctx, int, r->nvalues);
    for (int j = 0; j < r->nvalues; j++) iter[j] = -1;
    for (int i = 0; i < below->n; i++) comp[i] = -1;
    for (int seed = 0; seed < below->n; seed++) {
        if (comp[seed] >= 0 || !is_mixed(r, below->items[seed])) continue;
        comp[seed] = seed;
        for (bool grew = true; grew;) {
            grew = false;
            for (int i = 0; i < below->n; i++)
                for (int j = 0; j < r->nvalues; j++) {
                    if (!tir_uses_var(r->values[j], below->items[i])) continue;
                    if (comp[i] == seed && iter[j] < 0) iter[j] = seed, grew = true;
                    if (iter[j] == seed && comp[i] < 0) comp[i] = seed, grew = true;
                }
        }
    }
}

/* 9: a loop fused from spatial and reduce loops (a "mixed" loop) feeds
 * iterators whose values carry into each other, so for one spatial point
 * the reduction's instances are spread over it and over every loop joined
 * to it through the iterators they feed (its tangled group).  The order of
 * the group's loops among themselves decides which instance of the point
 * runs first, and the init runs only in the first one (all reduce
 * iterators at their min), so two loops of one group may not swap.  The
 * rest may move: for a given spatial point the other loops' instances are
 * the product of each group's own, of the pure spatial loops' (fixed by
 * the point) and of the pure reduce loops' (free, at their min first
 * whatever the order); the first instance in lexicographic order is then
 * each group's first in its own order.  (A ragged split's predicate ties
 * only loops split from one, which feed the same iterator, so it stays
 * within a group.)  Mixed loops above the chain are fixed while it runs
 * and do not count.  rv_of[k]: the handle to blame for chain[k]. */
static tir_status check_tangled(sch_call *c, const uint32_t *rv_of, const tir_block_realize *r,
                                const ir_vec *below, int m, const tir_for *const *chain,
                                const tir_for *const *order) {
    if (!r->block->init) return TIR_OK;
    int *comp = IR_NEWN(c->ctx, int, below->n);
    tangled_groups(c->ctx, r, below, comp);
    int *cc = IR_NEWN(c->ctx, int, m); /* the group of each chain loop */
    for (int k = 0; k < m; k++) {
        int i = 0;
        while (below->items[i] != chain[k]->var) i++;
        cc[k] = comp[i];
    }
    for (int k = 0; k < m; k++)
        for (int j = 0; j < k; j++) {
            if (cc[k] < 0 || cc[j] != cc[k]) continue;
            if (pos_in(order, chain[j]) < pos_in(order, chain[k])) continue;
            const tir_var *mx = below->items[cc[k]];
            const void *marks[2] = {chain[j], chain[k]};
            const char *a = chain[j]->var->name, *b = chain[k]->var->name;
            if (mx == chain[j]->var || mx == chain[k]->var) {
                const char *other = mx == chain[j]->var ? b : a;
                return sch_fail_marks(
                    c, TIR_ERR_SCHED_MIXED_LOOP, rv_of[k], 2, marks,
                    "loops %s and %s of block \"%s\" would swap; %s feeds both spatial and "
                    "reduce iterators and %s is tied to it through the iterators they feed: "
                    "their order decides which instance of a spatial point runs first, and "
                    "only the first holds the init",
                    a, b, r->block->name, mx->name, other);
            }
            return sch_fail_marks(
                c, TIR_ERR_SCHED_MIXED_LOOP, rv_of[k], 2, marks,
                "loops %s and %s of block \"%s\" would swap, and both are tied to loop %s, "
                "which feeds both spatial and reduce iterators (through the iterators they "
                "feed): their order decides which instance of a spatial point runs first, and "
                "only the first holds the init",
                a, b, r->block->name, mx->name);
        }
    return TIR_OK;
}

/* 11: a reduction whose update does not commute (reduce_order.c) runs
 * its steps for one spatial point in the nesting order of the loops
 * feeding its reduce iterators; two of them (of extent other than 1)
 * swapping would run the recurrence in another order. */
static tir_status check_reduce_order(sch_call *c, const uint32_t *rv_of,
                                     const tir_block_realize *r, int m,
                                     const tir_for *const *chain, const tir_for *const *order) {
    if (sch_reduction_commutes(r->block)) return TIR_OK;
    for (int k = 0; k < m; k++)
        for (int j = k + 1; j < m; j++) {
            bool rk = false, rj = false;
            feeds(r, chain[k]->var, &rk);
            feeds(r, chain[j]->var, &rj);
            if (!rk || !rj || sch_is_const(chain[k]->extent, 1) ||
                sch_is_const(chain[j]->extent, 1) ||
                pos_in(order, chain[k]) < pos_in(order, chain[j]))
                continue;
            const void *marks[2] = {chain[k], chain[j]};
            return sch_fail_marks(c, TIR_ERR_SCHED_REDUCTION_ORDER, rv_of[j], 2, marks,
                                  "loops %s and %s feed reduce iterators of block \"%s\" "
                                  "and would swap; its update is not C = C op x with a "
                                  "commutative op (+, *, min, max) and x not reading C, so "
                                  "running its steps in another order changes the result",
                                  chain[k]->var->name, chain[j]->var->name, r->block->name);
        }
    return TIR_OK;
}

tir_status sch_prim_reorder(sch_call *c) {
    const tir_schedule *s = c->sch;
    tir_ctx *ctx = c->ctx;
    int n = c->args[0].n;
    const uint32_t *rvs = c->args[0].rvs;

    int *sr;
    TIR_TRY(sch_loop_list(c, "reorder", &sr));

    /* 3: one path, no block in between. */
    int bottom = 0, top = 0;
    for (int i = 1; i < n; i++) {
        if (depth_of(s, sr[i]) > depth_of(s, sr[bottom])) bottom = i;
        if (depth_of(s, sr[i]) < depth_of(s, sr[top])) top = i;
    }
    for (int i = 0; i < n; i++) {
        if (i == bottom) continue;
        if (!sch_is_ancestor(s, sr[i], sr[bottom])) {
            const void *marks[2] = {s->srefs[sr[i]].stmt, s->srefs[sr[bottom]].stmt};
            return sch_fail_marks(c, TIR_ERR_SCHED_NOT_NESTED, rvs[i], 2, marks,
                                  "loop %s does not enclose loop %s; the loops must lie on "
                                  "one path of nested loops",
                                  sch_sref_for(s, sr[i])->var->name,
                                  sch_sref_for(s, sr[bottom])->var->name);
        }
    }
    int m = 0;
    for (int p = sr[bottom];; p = s->srefs[p].parent) {
        if (!sch_sref_for(s, p)) {
            const void *marks[2] = {s->srefs[p].stmt, s->srefs[sr[top]].stmt};
            return sch_fail_marks(c, TIR_ERR_SCHED_NOT_NESTED, rvs[top], 2, marks,
                                  "block \"%s\" lies between the loops; loops of different "
                                  "blocks cannot be reordered",
                                  sch_sref_block(s, p)->name);
        }
        m++;
        if (p == sr[top]) break;
    }
    const tir_for **chain = IR_NEWN(ctx, const tir_for *, m);
    {
        int k = m;
        for (int p = sr[bottom];; p = s->srefs[p].parent) {
            chain[--k] = sch_sref_for(s, p);
            if (p == sr[top]) break;
        }
    }
    /* 4: a single branch. */
    for (int k = 0; k + 1 < m; k++)
        if (chain[k]->body != &chain[k + 1]->base) {
            const void *marks[1] = {chain[k]};
            return sch_fail_marks(c, TIR_ERR_SCHED_CHAIN_BRANCHES, rvs[top], 1, marks,
                                  "loop %s has more than one child (or something other than "
                                  "loop %s) between it and the next loop of the chain",
                                  chain[k]->var->name, chain[k + 1]->var->name);
        }
    /* 5: independent domains. */
    for (int k = 0; k < m; k++)
        for (int j = 0; j < m; j++)
            if (j != k && (tir_uses_var(chain[k]->min, chain[j]->var) ||
                           tir_uses_var(chain[k]->extent, chain[j]->var)))
                return sch_fail(c, TIR_ERR_SCHED_DEPENDENT_DOMAIN, rvs[top], chain[k],
                                "the range of loop %s uses %s, another loop of the chain",
                                chain[k]->var->name, chain[j]->var->name);
    /* 6-8 */
    const tir_var **vars = IR_NEWN(ctx, const tir_var *, m);
    for (int k = 0; k < m; k++) vars[k] = chain[k]->var;
    TIR_TRY(sch_check_blocks_under(c, rvs[top], &chain[0]->base, m, vars));
    /* The chain slots of the given loops, top to bottom, refilled in the
       given order. */
    const tir_for **order = IR_NEWN(ctx, const tir_for *, m);
    for (int k = 0; k < m; k++) order[k] = chain[k];
    int next = 0;
    for (int k = 0; k < m; k++)
        for (int i = 0; i < n; i++)
            if (sch_sref_for(s, sr[i]) == chain[k]) order[k] = sch_sref_for(s, sr[next++]);
    /* 9 */
    ir_vec rs = {0}, below = {0};
    sch_collect_child_realizes(&chain[0]->base, &rs);
    loop_vars_under(&chain[0]->base, &below);
    tir_status mixed = TIR_OK;
    uint32_t *rv_of = IR_NEWN(ctx, uint32_t, m);
    for (int k = 0; k < m; k++) {
        rv_of[k] = rvs[top];
        for (int i = 0; i < n; i++)
            if (sch_sref_for(s, sr[i]) == chain[k]) rv_of[k] = rvs[i];
    }
    for (int b = 0; b < rs.n && mixed == TIR_OK; b++)
        mixed = check_tangled(c, rv_of, rs.items[b], &below, m, chain, order);
    /* 10 */
    for (int b = 0; b < rs.n && mixed == TIR_OK; b++)
        mixed = check_repeat_above_reduce(c, rvs[top], rs.items[b], m, order);
    /* 11 */
    for (int b = 0; b < rs.n && mixed == TIR_OK; b++)
        mixed = check_reduce_order(c, rv_of, rs.items[b], m, chain, order);
    ir_vec_free(&rs);
    ir_vec_free(&below);
    TIR_TRY(mixed);
    const tir_stmt *body = chain[m - 1]->body;
    for (int k = m - 1; k >= 0; k--) {
        const tir_for *f = order[k];
        body = tir_for_new(ctx, f->var, f->min, f->extent, f->kind, f->thread_tag, f->nannots,
                           f->annots, body);
    }
    const tir_stmt *o[1] = {&chain[0]->base}, *nw[1] = {body};
    c->func = sch_replace(c, 1, o, nw);
    return TIR_OK;
}

tir_status tir_sched_reorder(tir_schedule *s, int nloops, const tir_loop_rv *loops) {
    if (!s) return sch_bad_arg(s, "reorder", "schedule is NULL");
    sch_arg args[1] = {sch_rv_list(s, nloops, loops)};
    return sch_run(s, SCH_INST_reorder, args, NULL, NULL);
}
