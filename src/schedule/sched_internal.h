/* sched_internal.h: the schedule's state and the helpers every primitive
 * uses.  Not installed.
 *
 * How a primitive is written (see split.c for a full example):
 *   - add a line to instructions.def: SCH_INST(name, "signature");
 *   - write `tir_status sch_prim_<name>(sch_call *c)` in its own file.  It
 *     reads c->sch (never writes it), resolves handles with sch_loop_sref /
 *     sch_block_sref (already checked valid and live by sch_run), checks
 *     its numbered preconditions in order, failing with sch_fail(), builds
 *     the new function (sch_replace) into c->func, and declares its output
 *     handles (sch_out_loops / sch_out_blocks) and any block it removed
 *     while keeping the name (sch_retire_block);
 *   - write the public wrapper tir_sched_<name>() that packs its arguments
 *     into sch_arg[] in signature order and calls sch_run().
 * sch_run() then verifies the new function and commits it, updates the
 * handle table (handles whose loop variable or block disappeared become
 * stale), creates the output handles and records the instruction.
 * Because primitives only read the schedule, a failure changes nothing.
 */
#ifndef MINITIR_SCHED_INTERNAL_H
#define MINITIR_SCHED_INTERNAL_H

#include <stdarg.h>

#include "ir/ir_internal.h"
#include "minitir/schedule.h"

typedef enum sch_inst_kind {
#define SCH_INST(name, sig) SCH_INST_##name,
#include "instructions.def"
    SCH_INST_COUNT
} sch_inst_kind;

/* One argument of an instruction (inputs then attrs, signature order). */
typedef struct sch_arg {
    uint32_t rv;         /* b, l */
    uint32_t tag;        /* b, l: the handle's schedule serial */
    const uint32_t *tags; /* L, B, V */
    int64_t i;           /* i */
    const char *s;       /* s */
    int n;               /* L, B, V, I, F, d: number of entries (D: see I) */
    const uint32_t *rvs; /* L, B, V */
    const int64_t *ints; /* I, F, d */
    const double *dbls;  /* D */
} sch_arg;

/* One handle-table entry.  Identity: a loop variable or a block name;
 * a value handle ('v') just holds its integer and is never stale. */
typedef struct sch_entry {
    char kind; /* 'b', 'l' or 'v' */
    const tir_var *loop_var;
    const char *block_name; /* interned */
    int64_t value;          /* 'v' */
    int retired_by;         /* -1: live; else the trace index that removed it */
} sch_entry;

/* A recorded instruction. */
typedef struct sch_inst {
    sch_inst_kind kind;
    int nargs;
    sch_arg *args; /* arena */
    int nouts;
    uint32_t *outs; /* arena */
} sch_inst;

/* The loop/block tree of the current function (TVM's sref tree): one
 * entry per For and per Block, in pre-order. */
typedef struct sch_sref {
    const tir_stmt *stmt;                /* a tir_for or a tir_block */
    const tir_block_realize *realize;    /* blocks: the realize around it */
    int parent;                          /* index, -1 for the root block */
} sch_sref;

struct tir_schedule {
    tir_ctx *ctx;
    uint32_t serial; /* stamped into every handle it makes */
    const tir_prim_func *orig, *func;
    sch_entry *entries; /* heap; handle id i is entries[i-1] */
    int nentries, capentries;
    sch_inst *trace; /* heap */
    int ntrace, captrace;
    sch_sref *srefs; /* heap, rebuilt on every commit */
    int nsrefs, capsrefs;
    uint64_t rng; /* splitmix64 state of the sampling instructions */
    /* The blocks that only wrap blocks (sch_fill_wrapper_regions): their
       regions are their nested blocks', recomputed on every commit. */
    const char **wrappers; /* arena */
    int nwrappers;
};

/* An output handle a primitive declares: a loop variable or block name,
 * or a value. */
typedef struct sch_out {
    char kind;
    const void *key;
    int64_t value;
} sch_out;

/* One primitive call in progress. */
typedef struct sch_call {
    const tir_schedule *sch;
    tir_ctx *ctx;
    sch_inst_kind kind;
    const char *prim; /* the instruction's name */
    const sch_arg *args;
    int nargs;
    /* results */
    const tir_prim_func *func; /* the new function; NULL: unchanged */
    /* A primitive of output kind 'c' found nothing to do: sch_run then
       commits and records nothing. */
    bool unchanged;
    sch_out *outs;             /* arena */
    int nouts, capouts;
    const char **retired; /* arena */
    int nretired, capretired;
    /* Sampling instructions: the decision taken (recorded in the 'd'
       argument's place) and the random state after the call (committed
       with it, so a failing call leaves the state as it was). */
    const int64_t *decision; /* arena */
    int ndecision;
    uint64_t rng;
} sch_call;

typedef tir_status (*sch_prim_fn)(sch_call *c);

typedef struct sch_inst_info {
    const char *name;
    const char *sig; /* "inputs:attrs:outputs" */
    sch_prim_fn impl;
} sch_inst_info;

#define SCH_INST(name, sig) tir_status sch_prim_##name(sch_call *c);
#include "instructions.def"

extern const sch_inst_info sch_inst_table[SCH_INST_COUNT];

/* The signature's three fields. */
typedef struct sch_sig {
    char in[8], attr[8], out;
    int nin, nattr;
} sch_sig;
void sch_sig_parse(sch_inst_kind k, sch_sig *out);
/* An int64 list argument: 'I', 'F' (split factors) or 'd' (a decision). */
static inline bool sch_sig_is_ints(char t) { return t == 'I' || t == 'F' || t == 'd'; }
/* A handle list argument: loops, blocks or values. */
static inline bool sch_sig_is_rvs(char t) { return t == 'L' || t == 'B' || t == 'V'; }

/* ---------------------------------------------------------------- state.c */

/* Runs one instruction: checks handles and pointers, calls the primitive,
 * commits on success.  *outs (may be NULL) receives the ids of the output
 * handles (arena), *nouts their count. */
tir_status sch_run(tir_schedule *s, sch_inst_kind k, const sch_arg *args,
                   const uint32_t **outs, int *nouts);
/* sch_run for an instruction of output kind 'c': *changed (may be NULL)
 * tells whether it changed the schedule (only then is it traced). */
tir_status sch_run_flag(tir_schedule *s, sch_inst_kind k, const sch_arg *args, bool *changed);
/* Packing handles into arguments and ids back into handles (wrappers). */
#define SCH_RV(h) ((sch_arg){.rv = (h).id, .tag = (h).sched})
sch_arg sch_rv_list(tir_schedule *s, int n, const tir_loop_rv *loops);
sch_arg sch_block_rv_list(tir_schedule *s, int n, const tir_block_rv *blocks);
sch_arg sch_value_rv_list(tir_schedule *s, int n, const tir_value_rv *values);
tir_loop_rv sch_loop_rv(const tir_schedule *s, uint32_t id);
tir_value_rv sch_value_rv(const tir_schedule *s, uint32_t id);
/* The integer of a value handle (sch_run checked it). */
int64_t sch_value(const tir_schedule *s, uint32_t id);
tir_block_rv sch_block_rv(const tir_schedule *s, uint32_t id);

/* A TIR_ERR_INVALID_ARG failure of a public wrapper (s may be NULL). */
tir_status sch_bad_arg(tir_schedule *s, const char *prim, const char *what);

/* Sref lookup: index or -1. */
int sch_find_loop(const tir_schedule *s, const tir_var *var);
int sch_find_block(const tir_schedule *s, const char *name);
/* The sref of a live handle (sch_run checked it). */
int sch_loop_sref(const sch_call *c, uint32_t id);
int sch_block_sref(const sch_call *c, uint32_t id);
/* The srefs of the loop list in c->args[0] of primitive prim: at least
 * two loops, none twice (else the status of the failure). */
tir_status sch_loop_list(sch_call *c, const char *prim, int **srefs);
static inline const tir_for *sch_sref_for(const tir_schedule *s, int i) {
    return tir_as_tir_for(s->srefs[i].stmt);
}
static inline const tir_block *sch_sref_block(const tir_schedule *s, int i) {
    return tir_as_tir_block(s->srefs[i].stmt);
}
/* The nearest enclosing block sref of sref i (-1 for the root). */
int sch_scope_of(const tir_schedule *s, int i);
/* True if sref a is a strict ancestor of sref b. */
bool sch_is_ancestor(const tir_schedule *s, int a, int b);

/* The function with each olds[i] statement replaced by news[i] (a For or
 * a BlockRealize, or any statement of the current function). */
const tir_prim_func *sch_replace(sch_call *c, int n, const tir_stmt *const *olds,
                                 const tir_stmt *const *news);
/* The statement in the tree for sref i: the For, or the BlockRealize. */
const tir_stmt *sch_sref_stmt(const tir_schedule *s, int i);

/* A block name not used in the current function: base, or base_1,
 * base_2, ...  Primitives that create blocks must name them with it. */
const char *sch_unique_block_name(const tir_schedule *s, const char *base);

/* Declare outputs / retired blocks. */
void sch_out_value(sch_call *c, int64_t value);
void sch_out_loop(sch_call *c, const tir_var *var);
void sch_out_block(sch_call *c, const char *name);
void sch_retire_block(sch_call *c, const char *name);

/* Trace name of a handle ("l3") and a description ("l3, loop i_0"). */
const char *sch_rv_name(const tir_schedule *s, uint32_t id);
const char *sch_rv_desc(const tir_schedule *s, uint32_t id);

/* ---------------------------------------------------------------- trace.c */

/* Instruction i of the trace in text form (no newline). */
const char *sch_inst_text(const tir_schedule *s, int i);

/* Snapshot of everything a call may change (for all-or-nothing replay). */
typedef struct sch_snapshot {
    const tir_prim_func *func;
    uint64_t rng;
    sch_entry *entries; /* heap copy */
    int nentries, ntrace;
} sch_snapshot;
void sch_snapshot_take(const tir_schedule *s, sch_snapshot *snap);
void sch_snapshot_restore(tir_schedule *s, sch_snapshot *snap); /* frees snap */
void sch_snapshot_free(sch_snapshot *snap);

/* ---------------------------------------------------------------- error.c */

/* Fails the call with "prim: rule (handle)" and the IR with `marks`
 * marked.  rv may be 0 (no handle).  Returns code. */
tir_status sch_fail(sch_call *c, tir_status code, uint32_t rv, const void *mark,
                    const char *fmt, ...) TIR_PRINTF(5, 6);
tir_status sch_fail_marks(sch_call *c, tir_status code, uint32_t rv, int nmarks,
                          const void *const *marks, const char *fmt, ...) TIR_PRINTF(6, 7);
tir_status sch_failv(tir_ctx *ctx, const tir_schedule *s, tir_status code, const char *prim,
                     uint32_t rv, int nmarks, const void *const *marks, const char *fmt,
                     va_list ap);

/* ------------------------------------------------------------- analysis.c */

/* Binds every enclosing loop's (and enclosing block's iter vars') range
 * of sref i, i itself included when it is a loop. */
void sch_bind_ancestors(const tir_schedule *s, tir_analyzer *a, int i);

/* Rewrites statement st (below a loop being transformed): replaces vars by
 * values everywhere; simplifies the binding values and predicates of block
 * realizes reached without entering a block, binding nested loops' ranges
 * on the way down; and when guard is non-NULL, ANDs it into those
 * predicates and wraps any other leaf statement in `if guard`. */
const tir_stmt *sch_rewrite_under(tir_ctx *ctx, tir_analyzer *a, const tir_stmt *st, int n,
                                  const tir_var *const *vars, const tir_expr *const *values,
                                  const tir_expr *guard);

/* The block realizes directly below a statement (not inside blocks), in
 * program order (heap vector). */
void sch_collect_child_realizes(const tir_stmt *st, ir_vec *out);

/* Well-formedness W1-W3 (see schedule.h) of the blocks under `st`, for
 * loop variables vars.  rv is the handle named in errors. */
tir_status sch_check_blocks_under(sch_call *c, uint32_t rv, const tir_stmt *st, int nvars,
                                  const tir_var *const *vars);
/* The loop variable feeds only spatial iters (TIR_ERR_SCHED_REDUCTION_LOOP). */
tir_status sch_check_spatial_only(sch_call *c, uint32_t rv, const tir_for *loop);

/* W1-W3 under the loop, then sch_check_spatial_only: the common
 * preconditions of bind, vectorize and parallel. */
tir_status sch_check_parallelizable(sch_call *c, uint32_t rv, const tir_for *loop);
/* TIR_ERR_SCHED_LOOP_NOT_SERIAL unless the loop is serial; `what` is the
 * participle for the message ("bound", "vectorized"). */
tir_status sch_check_serial(sch_call *c, uint32_t rv, const tir_for *loop, const char *what);
/* TIR_ERR_SCHED_LOOP_MIN_NONZERO unless the loop starts at 0. */
tir_status sch_check_min_zero(sch_call *c, uint32_t rv, const tir_for *loop);
/* The function with the loop's kind (and thread tag) changed. */
const tir_prim_func *sch_replace_loop_kind(sch_call *c, const tir_for *loop, tir_for_kind kind,
                                           const char *tag);

/* Quasi-affine check of W2. */
bool sch_is_quasi_affine(const tir_expr *e);

/* Block classes of W3. */
typedef enum { SCH_BLOCK_COMPLETE, SCH_BLOCK_REDUCTION, SCH_BLOCK_OTHER } sch_block_class;
sch_block_class sch_classify_block(const tir_block *b);

/* True when e is the constant c. */
bool sch_is_const(const tir_expr *e, int64_t c);

/* The conjuncts of predicate e (its And operands, recursively) that are
 * not the constant true, appended to out. */
void sch_conjuncts(const tir_expr *e, ir_vec *out);
/* True when node (an expression or statement) loads buffer buf. */
bool sch_loads_buffer(const void *node, const tir_buffer *buf);
/* root with the statement old (a block realize inside it) replaced by nw;
 * expressions are not entered. */
const tir_stmt *sch_replace_realize(tir_ctx *ctx, const tir_stmt *root, const tir_stmt *old,
                                    const tir_stmt *nw);

/* Rebuilds a loop with another kind / tag / annotations / body. */
const tir_stmt *sch_for_with(tir_ctx *ctx, const tir_for *f, tir_for_kind kind,
                             const char *tag, int nannots, const tir_annot *annots,
                             const tir_stmt *body);

/* ---------------------------------- blockops.c (the block primitives) */

bool sch_region_has(int n, const tir_buffer_region *rs, const tir_buffer *buf);
/* The point regions of the distinct loads in node (may be NULL), an arena
 * array of *n. */
tir_buffer_region *sch_load_regions(tir_ctx *ctx, const void *node, int *n);
/* r with vars[i] replaced by vals[i] in its ranges. */
tir_buffer_region sch_subst_region(tir_ctx *ctx, const tir_buffer_region *r, int n,
                                   const tir_var *const *vars, const tir_expr *const *vals);
/* The block srefs whose scope is block sref `scope`, in program order
 * (arena array); returns the count. */
int sch_scope_blocks(const tir_schedule *s, int scope, int **out);
/* The ancestor of sref i (or i) whose parent is `scope`. */
int sch_top_sref(const tir_schedule *s, int i, int scope);
/* Children of a body: the statements of a Seq, or the body itself. */
int sch_num_children(const tir_stmt *body);
const tir_stmt *sch_child_at(const tir_stmt *body, int i);
int sch_child_index(const tir_stmt *body, const tir_stmt *st);
/* Index of the child of loop/block sref `parent`'s body that holds sref i
 * (-1 if i is not below parent). */
int sch_child_holding(const tir_schedule *s, int parent, int i);
/* The highest sref that removing block sref bi removes: bi, or the
 * outermost loop of the chain of loops that hold nothing else. */
int sch_removable_root(const tir_schedule *s, int bi);

/* One rewrite of the current function: statements olds[i] become news[i]
 * (NULL removes them; loops and sequences left empty go too); inserts[i]
 * go before (after[i] false) or after the (rewritten) anchors[i]; the
 * block `scope` loses drop_alloc and gains add_alloc (either may be NULL). */
typedef struct sch_edit_spec {
    tir_ctx *ctx;
    int nrepl;
    const tir_stmt *const *olds;
    const tir_stmt *const *news;
    int nins;
    const tir_stmt *const *anchors;
    const tir_stmt *const *inserts;
    const bool *after;
    const tir_block *scope;
    const tir_buffer *add_alloc, *drop_alloc;
} sch_edit_spec;
const tir_prim_func *sch_edit(sch_call *c, const sch_edit_spec *e);

/* [lo, hi) of one dimension; lo NULL: not constrained. */
typedef struct sch_bound {
    const tir_expr *lo, *hi;
} sch_bound;
/* Unions into acc[0..reg->ndim) the part of region `reg` of block sref bi
 * (in its iterators) touched while the loops between bi and loop sref
 * `loop` run, also relaxing the thread-bound loops above `loop` (inside
 * block sref scope_sref) that share a buffer of scope buf_scope: all of
 * them for global, threadIdx/vthread for shared, none for local.  The
 * analyzer must know the ranges of every loop above bi.  False when
 * unbounded, bounded only through the range of a variable's type (a
 * constant of half that range or more: a symbolic extent split, whose
 * loops built from it would wrap), or bounded by a division by what may
 * be 0 (f // e of a fused loop of extent e: the loops relaxed over run
 * wherever the region is read, not where it may be moved). */
bool sch_relax_access(const tir_schedule *s, tir_analyzer *a, int bi, int loop, int scope_sref,
                      const tir_buffer_region *reg, tir_scope buf_scope, sch_bound *acc);
/* A region indexed by distinct spatial iterators of b, extent 1 each:
 * returns -1 and fills dim_of_iter[k] (-1: iterator k not used); else the
 * first offending dimension. */
int sch_trivial_dim(const tir_block *b, const tir_buffer_region *reg, int *dim_of_iter);
/* compute_at 16 and reverse_compute_at 17: the first iterator of block
 * sref bi whose domain names a variable other than the function's scalar
 * parameters (a triangle's vk over [0, i), i a loop of its nest, which
 * the loops made at the new place would not define), or NULL. */
const tir_iter_var *sch_dom_names_loops(const tir_schedule *s, int bi);
/* compute_at 16 and reverse_compute_at 17: refuses (TIR_ERR_SCHED_
 * DEPENDENT_DOMAIN) a block sref bi whose iterator domain names a loop of
 * its nest (sch_dom_names_loops). */
tir_status sch_check_dom_local(sch_call *c, uint32_t brv, int bi);
/* Loops (named ax0, ax1, ...) running block sref bi over rng[k] for each
 * iterator k (its whole domain when rng[k].lo is NULL), placed under loop
 * sref `loop`; the realize's predicate keeps the bindings inside the
 * domains where that is not provable, and the conjuncts of the block's
 * predicate that are not such bounds (a remapped loop in them becomes its
 * iterator's new binding).  Unit loops are dropped unless
 * preserve_unit_loops.  NULL, with the conjunct in *lost, where one names
 * a loop the new place cannot express (a fused or split binding's). */
const tir_stmt *sch_regen_loops(sch_call *c, int loop, int bi, const sch_bound *rng,
                                bool preserve_unit_loops, const tir_expr **lost);
/* sch_regen_loops for compute_at and reverse_compute_at (their
 * precondition 15): the loops in *out, or the refusal naming the
 * conjunct that cannot move (TIR_ERR_SCHED_PREDICATED_PRODUCER). */
tir_status sch_regen_moved(sch_call *c, uint32_t brv, int loop, int bi, const sch_bound *rng,
                           bool preserve_unit_loops, const tir_stmt **out);
/* A loop nest copying all of src into dst, block `name`, its realize
 * predicated by pred (NULL: none). */
const tir_stmt *sch_copy_nest(tir_ctx *ctx, const char *name, const tir_buffer *src,
                              const tir_buffer *dst, const tir_expr *pred);
/* cache_read's and cache_write's precondition 8: block sref bi writes
 * every element of buf over the loops of its scope sc, as far as
 * writes_whole.c can tell.  NULL when it holds, else why not (for the
 * message). */
const char *sch_writes_whole(const tir_schedule *s, int bi, int sc, const tir_buffer *buf);
/* The condition under which block sref bi's reduce domain is non-empty:
 * NULL where every reduce iterator's extent is provably positive, else
 * the conjunction of `extent > 0` over the others.  An empty reduce domain
 * runs no instance and so no init: the function leaves the output as it
 * was (TVM's semantics, the interpreter's), and a primitive that moves the
 * init or the writes elsewhere must keep it so (cache_write's write-back,
 * decompose_reduction's init).  *other is set where the condition names a
 * variable other than the function's scalar parameters (an extent over an
 * outer loop), which those primitives do not place. */
const tir_expr *sch_reduce_nonempty(const tir_schedule *s, int bi, bool *other);
/* Why block sref wi, or a block inside it, may leave elements of buf it
 * writes unwritten (or their init skipped) when it runs: a reduce domain
 * that may be empty, or a predicate conjunct other than those
 * sch_conj_keeps_writes accepts (a scalar's, n > 0, masks them all where
 * it fails); NULL when neither. */
const char *sch_may_skip_elements(const tir_schedule *s, int wi, const tir_buffer *buf);
/* Whether every variable in e is a scalar parameter of f. */
bool sch_params_only(const tir_prim_func *f, const tir_expr *e);
/* A compact buffer like b, named <b>_<scope>, in that scope. */
const tir_buffer *sch_cache_buffer(tir_ctx *ctx, const tir_buffer *b, tir_scope scope);
/* "shared" or "local". */
bool sch_parse_scope(const char *name, tir_scope *out);
bool sch_is_param_buffer(const tir_prim_func *f, const tir_buffer *b);
/* Whether v is one of f's scalar (non-buffer) parameters. */
bool sch_is_scalar_param(const tir_prim_func *f, const tir_var *v);

/* region_cover.c: what compute_at and reverse_compute_at prove. */
/* True when every conjunct of realize r's predicate e is a bound
 * `binding < end` of one of its iterators (or the equivalent `f < d *
 * end` for a binding floordiv(f, d), d > 0): then it masks only points
 * outside the block's domain.  (A split of a split part leaves conjuncts
 * such as j_1_0 * 2 + j_1_1 < 2, which mask points inside it.) */
bool sch_pred_bounds_only(tir_ctx *ctx, tir_analyzer *a, const tir_block_realize *r,
                          const tir_expr *e);
/* True when every conjunct of block sref bi's predicate that uses a loop
 * feeding a reduce iterator is a bound as in sch_pred_bounds_only:
 * compute_at and reverse_compute_at drop the predicate and run reduce
 * iterators over their whole domain, which is only right when it masks
 * nothing inside it (rfactor's C_rf after a non-divisible split masks
 * vk_0 * 5 + vk_1 >= 9 inside its domain). */
bool sch_reduce_pred_bounds_only(const tir_schedule *s, int bi);
/* True when the predicate of block sref bi masks no point of the region
 * it writes: every conjunct is a bound as in sch_pred_bounds_only, or
 * uses loops feeding only reduce iterators and holds with all of those
 * at their min for every value of the other enclosing loops (then every
 * instance of the spatial iterators runs at least that reduction step:
 * rfactor's C_rf after a split of k that does not divide it). */
bool sch_pred_keeps_writes(const tir_schedule *s, int bi);
/* The same for e, a part of that predicate (conjuncts of it). */
bool sch_conj_keeps_writes(const tir_schedule *s, int bi, const tir_expr *e);
/* When provable, the instances of block sref bi run during one iteration
 * of loop sref `loop` are exactly the box box[k] = [lo, hi) per iterator
 * (intersected with the block's domain): its predicate only bounds the
 * bindings, and each binding is affine in the loops between, each of them
 * feeding one iterator, with a dense mixed radix of strides.  The
 * analyzer must know the ranges of the loops above `loop` (and it).
 * False: not proven. */
bool sch_exec_box(const tir_schedule *s, tir_analyzer *a, int bi, int loop, sch_bound *box);
/* When provable, block sref wi writes buf at its own iterators (pdim[k]:
 * the dimension iterator k indexes, -1 none) and, during one iteration of
 * loop sref `loop`, final values of the elements box[k] (intersected with
 * its domain) on those dimensions: sch_exec_box holds, except that the
 * predicate may skip reduction steps as sch_pred_keeps_writes allows, and
 * every other iterator (reduce ones included) runs over its whole domain
 * (less the steps the predicate skips in the whole nest too).  pdim and
 * box hold one entry per iterator of the block. */
bool sch_writer_box(const tir_schedule *s, tir_analyzer *a, int wi, int loop,
                    const tir_buffer *buf, int *pdim, sch_bound *box);
/* regions_declared.c: NULL when every block of f (the root aside) accesses
 * only inside its declared T.reads / T.writes regions (loads: read or
 * write regions), else a message naming the block (*bad) and buffer. */
const char *sch_undeclared_access(tir_ctx *ctx, const tir_prim_func *f, const tir_block **bad);
/* f with each wrapper given the regions of the blocks it wraps, relaxed
 * over the loops between (inner wrappers first); f itself when nothing
 * changes.  With names NULL a wrapper is a block other than the root with
 * no iterators, no init and no regions, and *names / *n (when not NULL)
 * get their names (arena); else the n blocks named (whose regions are
 * recomputed: a primitive may have changed what they wrap). */
const tir_prim_func *sch_fill_wrapper_regions(tir_ctx *ctx, const tir_prim_func *f,
                                              const char ***names, int *n);
/* Whether b is one of s's wrappers: its regions only sum up blocks that a
 * scan of every block visits anyway. */
bool sch_is_wrapper(const tir_schedule *s, const tir_block *b);
/* spatial_writes.c: NULL unless two instances of block realize r, whose
 * iterators are all spatial, provably store one element (see there);
 * loops[0..nloops) are the loops around r, outermost first. */
const char *sch_spatial_write_collision(tir_ctx *ctx, const tir_block_realize *r,
                                        const tir_for *const *loops, int nloops);
/* writes_whole.c: the integer value of e with vars[i] = vals[i]; false
 * where e holds anything else (a load, a float) or a step overflows. */
bool sch_eval_int(const tir_expr *e, int nv, const tir_var *const *vars, const int64_t *vals,
                  int64_t *out);

/* True when provably the loops inside sref `loop` (a loop, or the scope
 * block for all of them) run no instance of block sref bi twice: the
 * bindings form a dense box as in sch_exec_box (the predicate, which only
 * drops instances, aside) and every loop of extent above 1 feeds an
 * iterator. */
bool sch_runs_once(const tir_schedule *s, tir_analyzer *a, int bi, int loop);
/* True when x <= y is proven (false for NULL or mixed dtypes). */
bool sch_prove_le(tir_ctx *ctx, tir_analyzer *a, const tir_expr *x, const tir_expr *y);

/* reduce_order.c: true when block b's update commutes (C = C op x with
 * op +/-, *, min or max, chains of them, x not reading C; a tensorized
 * tile operation; blocks it holds that all commute) or b has no reduce
 * iterator: its steps may run in any order. */
bool sch_reduction_commutes(const tir_block *b);
/* True when block sref bi's steps may be run in lexicographic order of its
 * reduce iterators (the order compute_at's regenerated loops run them):
 * its update commutes, or its loops up to its scope already run them in
 * that order (enumerated up to 2^16 steps; past that, linear bindings
 * whose strides nest). */
bool sch_reduce_steps_in_order(const tir_schedule *s, int bi);
/* compute_at's and reverse_compute_at's precondition 14: TIR_OK when
 * sch_reduce_steps_in_order holds for block sref bi (handle brv), else
 * TIR_ERR_SCHED_REDUCTION_ORDER naming the block. */
tir_status sch_check_reduce_order(sch_call *c, uint32_t brv, int bi);

/* cache_read.c: what cache_read and cache_write share. */
typedef struct sch_cache_target {
    uint32_t rv;           /* the block handle */
    int bi;                /* its sref */
    const tir_block *b;
    int sc;                /* the sref of its scope block */
    const tir_buffer *buf; /* the buffer read (written) at the index */
    tir_scope scope;       /* the cache's storage scope */
} sch_cache_target;
tir_status sch_cache_args(sch_call *c, bool is_read, sch_cache_target *t);
tir_status sch_cache_consumers(sch_call *c, uint32_t rv, int bi, int scope,
                               const sch_arg *list, const tir_buffer *buf, bool default_all,
                               int **cons, int *ncons);

/* intrin_registry.c: up to max overloads of tensor intrinsic `name`, in
 * registration order; returns how many. */
int sch_intrin_lookup(const char *name, int max, tir_intrin_desc_fn *descs,
                      tir_intrin_impl_fn *impls);

#endif
