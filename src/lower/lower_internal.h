/* lower_internal.h: what the lowering passes share: the pass signature, the
 * state threaded through the pipeline, and small IR helpers.  Not installed.
 */
#ifndef MINITIR_LOWER_INTERNAL_H
#define MINITIR_LOWER_INTERNAL_H

#include "ir/ir_internal.h"
#include "minitir/lower.h"

/* The Allocate annotation that carries storage_align requests from
 * lower_blocks (which reads the blocks' "buffer_dim_align") to
 * compact_alloc (which pads the strides and drops it): flat
 * [axis, factor, offset] triples, applied in order.  Being in the IR, a
 * dump between the two passes shows it. */
#define LOWER_DIM_ALIGN tir_annot_key_str(TIR_ANN_DIM_ALIGN)

typedef struct lower_state {
    tir_ctx *ctx;
    tir_lower_opts opts;
    const tir_prim_func *scheduled; /* the input, for error messages */
    /* Set by compact_alloc: the allocated buffers that hold every access
     * for every value of the loops around it, whatever ifs guard it (their
     * regions are relaxed over the loops only); relax_guards relies on it. */
    const tir_buffer **covered;
    int ncovered;
    /* Set by unify_threads: (local buffer, thread variable) pairs where a
     * loop of that variable's tag nested inside the buffer's Allocate was
     * removed.  In the function's meaning that loop ran every iteration
     * inside each outer one, on the same array; after unification each
     * thread runs one, so such a buffer is not "one copy per thread" in the
     * function's meaning for local_check. */
    const tir_buffer **lost_buf;
    const tir_var **lost_var;
    int nlost;
    /* Set by global_share (flatten maps them to the flat buffers): the
     * global buffers of the kernel that thread_sync and race_check treat
     * like shared ones, since threads may share their elements. */
    const tir_buffer **sync_globals;
    int nsync_globals;
} lower_state;

typedef tir_status (*lower_pass_fn)(lower_state *st, const tir_prim_func *in,
                                    const tir_prim_func **out);

/* The passes, in pipeline order (lower_passes[] in src/lower/pipeline.c is
 * the one list; keep this one in its order). */
tir_status lower_gpu_check(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_init_block(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_blocks(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_unify_threads(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_local_check(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_plan_alloc(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_compact_alloc(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_relax_guards(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
/* c without its domain_guard marker (the condition it stands for). */
const tir_expr *lower_unmark_guard(const tir_expr *c);
/* A realize's predicate (unless it is true) around its lowered body,
 * ragged-tile guards and a tensor tile's inner bounds ifs marked for
 * relax_guards (relax_guards.c). */
const tir_stmt *lower_guard_predicate(tir_ctx *ctx, const tir_block_realize *r,
                                      const tir_stmt *body);
/* Warp fragments -> per-lane local arrays, tile ops -> per-lane code
 * (lower_fragments.c). */
tir_status lower_fragments(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_global_share(lower_state *st, const tir_prim_func *in,
                              const tir_prim_func **out);
/* Is b a global buffer of st->sync_globals (global_share.c)? */
bool lower_sync_global(const lower_state *st, const tir_buffer *b);
tir_status lower_flatten(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
/* The column flatten stores element (i, j) of a swizzled shared tile of
 * eb-byte elements at (its 16-byte chunk moved within its 128-byte
 * segment by the row; flatten.c); exposed for its unit test. */
const tir_expr *lower_swizzle_col(tir_ctx *ctx, const tir_expr *i, const tir_expr *j, int64_t eb);
tir_status lower_vectorize(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_sw_pipeline(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_unroll(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_wgmma_group(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_interleave(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_tile_prefetch(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_thread_sync(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_simplify(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_check_kernel(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);
tir_status lower_race_check(lower_state *st, const tir_prim_func *in, const tir_prim_func **out);

/* The target limits of lowering's options (those not in the options are
 * the default target's). */
void lower_opts_limits(const tir_lower_opts *o, tir_target_limits *out);
/* f with another body (and the same parameters and attributes). */
const tir_prim_func *lower_with_body(tir_ctx *ctx, const tir_prim_func *f, const tir_stmt *body);
/* True for thread-binding loops over a threadIdx / blockIdx axis
 * (minitir/thread_axes.def). */
bool lower_is_thread_loop(const tir_for *f);
bool lower_is_block_loop(const tir_for *f);
/* Records an error with the marked IR of `where` (a function or statement)
 * under the message. */
tir_status lower_fail_marked(lower_state *st, const void *where, int nmarks,
                             const void *const *marks, const char *fmt, ...) TIR_PRINTF(5, 6);
/* An Allocate of buf around body with a's annotations (a moved or
 * rebuilt Allocate keeps what it carries). */
const tir_stmt *lower_alloc_like(tir_ctx *ctx, const tir_allocate *a, const tir_buffer *buf,
                                 const tir_stmt *body);
/* A vector index e (lanes wide; Ramps, Broadcasts, their sums and
 * products by a Broadcast) as base + lane * stride, *base and *stride
 * scalar (when not NULL; ctx may then be NULL); false for anything else (a
 * gather, which the passes after flatten do not take: gpu_check refuses
 * it). */
bool lower_ramp_parts(tir_ctx *ctx, const tir_expr *e, const tir_expr **base,
                      const tir_expr **stride);
/* A Seq of two (either may be NULL). */
const tir_stmt *lower_seq2(tir_ctx *ctx, const tir_stmt *a, const tir_stmt *b);
/* Evaluate(call) of a void GPU intrinsic. */
const tir_stmt *lower_intrin_stmt(tir_ctx *ctx, tir_intrin op, int nargs,
                                  const tir_expr *const *args);
/* Appends to vars each distinct variable node mentions (first-seen order). */
void lower_collect_vars(const void *node, ir_vec *vars);
/* True when s is Evaluate(call) of intrinsic op (e.g. a syncthreads). */
bool lower_is_intrin_stmt(const tir_stmt *s, tir_intrin op);
/* True when e mentions a threadIdx variable of the loops in `thread_vars`. */
bool lower_uses_any(const void *node, int nvars, const tir_var *const *vars);

/* The element argument i of call points at (address_of(BufferLoad) of one
 * element), or NULL (lower_util.c). */
const tir_buffer_load *lower_addressed(const tir_call *call, int i);
/* The argument call writes through (an address_of), or -1; *rmw when it
 * reads that element too (an mma's accumulator, an atomic add). */
int lower_dest_arg(const tir_call *call, bool *rmw);
/* Whether one iteration of the loop may read, in buf, a value an earlier
 * iteration wrote (carried.c: for elements it can name, a write counts
 * where every path makes it, or where conditions alike in every iteration
 * hold and no other write could carry; a write of elements it cannot name
 * covers everything). */
bool lower_reads_first(const tir_for *loop, const tir_buffer *buf, const ir_vec *threads);
/* The variables of root's thread-binding loops, for lower_reads_first. */
void lower_thread_vars(const void *root, ir_vec *out);
/* The buffer and indices of n when it is a BufferLoad or BufferStore
 * (true), else false (lower_util.c). */
bool lower_access(const tir_node *n, const tir_buffer **b, int *nidx,
                  const tir_expr *const **idx);
/* Elements of dtype in one ldmatrix row, 16 bytes: 8 (16-bit), 4 (TF32
 * as 32-bit), the span lower_fragments addresses and race_check and
 * thread_sync see read (lower_util.c). */
int lower_ldmatrix_row(tir_dtype dtype);
/* Operand i of call when it is address_of(*load) of the first of several
 * elements the call copies (cp_async's destination and source, ldmatrix's
 * row and registers): how many, along the last dimension from *load's
 * index (1 for a vector index, whose lanes count them); -1 when the count
 * is not a constant the call allows; 0 (*load may be set) for any other
 * operand or call (lower_util.c).  A tile operand of frag_fill,
 * frag_load, frag_store or mma_sync is lower_tile_operand's. */
int64_t lower_span_operand(const tir_call *call, int i, const tir_buffer_load **load);

/* Operand i of a tile operation (frag_fill, frag_load, frag_store,
 * mma_sync) that is address_of(*load): true with the tile it covers from
 * there, rows x cols (the fragment's tile, also for the other buffer of a
 * frag_load / frag_store); false for anything else (lower_util.c). */
/* Group g's shared tile of a flat wgmma_sync: its buffer access, and in
 * *lo / *span the elements it reads (whole rows of 32 floats, the
 * swizzle moves chunks within a row), or NULL when not of that form. */
const tir_buffer_load *lower_wgmma_tile(tir_ctx *ctx, const tir_call *call, int g,
                                        const tir_expr **lo, int64_t *span);
bool lower_tile_operand(const tir_call *call, int i, const tir_buffer_load **load, int *rows,
                        int *cols);

/* True when node calls lane_id() (lower_util.c). */
bool lower_uses_lane(const void *node);
/* True when node contains a node of the kind (itself included). */
bool lower_has_kind(const void *node, tir_kind kind);
/* Whether node loads from buffer b (lower_util.c). */
bool lower_reads_buffer(const void *node, const tir_buffer *b);

/* How a statement uses a buffer (split_kernels.c): loads it, stores it,
 * mentions it at all (regions and allocations included). */
typedef struct lower_use {
    bool load, store, any;
} lower_use;
lower_use lower_buffer_use(const tir_stmt *st, const tir_buffer *buf);

/* True when a block of f is annotated atomic_reduction (atomic_reduce.c). */
bool lower_has_atomic_reduction(const tir_prim_func *f);
/* The atomic split-K of f's annotated write-back block (atomic_reduce.c):
 * checks it (TIR_ERR_LOWER naming the block), then replaces the root's n
 * top-level statements *stmts by a zero nest of the output first and the
 * other statements with the partial results' stores turned into atomic
 * adds to the output, the write-back's statement dropped (n unchanged),
 * and drops the partial results from ks's workspace. */
tir_status lower_atomic_split(tir_ctx *ctx, const tir_prim_func *f, tir_kernel_set *ks,
                              int *n, const tir_stmt *const **stmts);

/* The cp_async copies that may be in flight at each cp_async_wait
 * (cp_inflight.c): where thread_sync and race_check let copies land. */
typedef struct lower_inflight_wait {
    const tir_call *wait;
    ir_vec copies; /* the cp_async calls */
} lower_inflight_wait;
typedef struct lower_inflight {
    lower_inflight_wait *waits;
    int nwaits, cap;
} lower_inflight;
void lower_inflight_compute(const tir_stmt *body, lower_inflight *out);
/* The copies that may land at `wait` (NULL: none). */
const ir_vec *lower_inflight_at(const lower_inflight *f, const tir_call *wait);
bool lower_inflight_has(const lower_inflight *f, const tir_call *wait, const tir_call *copy);
void lower_inflight_free(lower_inflight *f);

#endif
