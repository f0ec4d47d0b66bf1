/* minitir/schedule.h: schedules, the user-facing way to rewrite a
 * prim_func (TVM TensorIR's tir.Schedule, in C).
 *
 * A schedule holds the current function and rewrites it one primitive at
 * a time.  Users name blocks and loops through handles (tir_block_rv,
 * tir_loop_rv) returned by queries and primitives.  A handle follows its
 * node across rewrites: a loop handle names a loop variable, a block
 * handle a block name (block names are unique in a schedule).  When a
 * primitive removes the node a handle names (split and fuse remove their
 * loops), the handle becomes stale and every later use fails with
 * TIR_ERR_SCHED_STALE_HANDLE, naming the instruction that removed it.
 *
 * Every call either succeeds completely or changes nothing: on failure the
 * function, every handle and the trace are exactly as before, and the ctx
 * holds a message "primitive: rule (handle)" followed by the IR with the
 * offending loop or block marked.  Each primitive's numbered preconditions
 * below map one to one onto the status codes it returns.
 *
 * Every successful query and primitive is recorded in the trace.  A trace
 * prints as C code calling this API (tir_sched_trace_c) and as text
 * (tir_sched_trace_text) that tir_sched_replay parses and applies: replaying
 * on a fresh schedule of the same function gives a structurally equal
 * function and the same trace text.
 *
 * Handles print in traces as b<N> / l<N> / v<N>, N counting every handle
 * created by the schedule from 0.  A zero-initialised handle is invalid.
 *
 * Sampling instructions (sample_perfect_tile, sample_tile,
 * sample_categorical) draw from the schedule's random state and return
 * value handles (tir_value_rv: v<N>), which split_rv and annotate_*_rv
 * consume.  The trace records each sampling call with the decision it
 * took, so a tuned schedule is its trace: replaying it repeats the
 * decisions, and replaying it with a decision changed
 * (tir_sched_replay_with_decisions) gives a neighbouring schedule.
 */
#ifndef MINITIR_SCHEDULE_H
#define MINITIR_SCHEDULE_H

#include "minitir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tir_schedule tir_schedule;

/* Handles index the schedule's handle table (id 1 is the first handle,
 * printed b0 or l0; id 0 is never valid) and carry the serial number of
 * the schedule that made them, so a handle passed to another schedule is
 * refused rather than taken for that schedule's handle of the same id. */
typedef struct tir_block_rv {
    uint32_t id;
    uint32_t sched;
} tir_block_rv;
typedef struct tir_loop_rv {
    uint32_t id;
    uint32_t sched;
} tir_loop_rv;
/* A sampled integer (never stale); read it with tir_sched_value. */
typedef struct tir_value_rv {
    uint32_t id;
    uint32_t sched;
} tir_value_rv;

/* Split factor to infer: ceildiv(extent, product of the others).  It is a
 * value no real factor can be, so a factor of 0 given by mistake is
 * refused (TIR_ERR_SCHED_NONPOSITIVE_FACTOR) rather than taken for
 * "infer".  Text traces write it `None` (TVM's spelling); C traces write
 * TIR_SPLIT_INFER. */
#define TIR_SPLIT_INFER (-1)

/* ------------------------------------------------------------- lifecycle */

/* Creates a schedule of f.  Fails with TIR_ERR_VERIFY if f is ill formed
 * or a block (the root aside) accesses anything its T.reads / T.writes do
 * not declare (primitives trust the regions; the text parser, unlike
 * TVM's, infers none: a block without them accesses nothing), and
 * TIR_ERR_SCHED_DUPLICATE_BLOCK_NAME if two blocks share a name.  Each
 * load must lie in a read or write region of its buffer, each store in a
 * write region, and the regions of a nested block in its parent's, as the
 * analyzer proves over the iterators' domains and the loops' ranges; an
 * index that reads memory, calls or binds a Let needs only its buffer
 * declared.  A block with no iterators, no init and no regions that only
 * wraps blocks (software_pipeline's wrapper) is given, in the schedule's
 * function (tir_sched_func; tir_sched_orig_func stays f), the regions of
 * the blocks it wraps, relaxed over the loops between, so that the
 * primitives see what it accesses; those must lie in its parent's like
 * any nested block's, and every primitive recomputes them.  Likewise
 * TIR_ERR_VERIFY for a block with only spatial iterators where two
 * instances provably store one element (`C[vi + vj]`, `C[vi // 2]`,
 * `B[vi]` and `B[vi + 1]`: "the last one wins", an order that reorder,
 * bind and the inlines change), at any size and under a T.where: a witness
 * pair from the indices' affine form in the iterators' `// c` and `% c`
 * digits, checked by evaluation, or an enumeration of at most 2^16
 * instances (past that, a corner of the domain); every lane of a vector
 * store, and the stores of nested blocks (their iterators replaced by
 * their bindings) count as the block's; what that form proves injective
 * is accepted, and so, as in
 * TVM, is what is neither proved nor refuted (a scatter `B[I[vi]]`, a
 * symbolic coefficient, an iterator not bound densely to loops of its
 * own).  An iterator whose loop also runs other statements (a staging
 * copy's step, rewriting its buffer for a consumer of the same step) may
 * repeat.  A block with reduce iterators is held to the same rule along
 * its spatial iterators, its init's stores included: instances that
 * differ only in reduce iterators may store one element (they accumulate),
 * two that differ in a spatial iterator may not (`C[vi // 2] += A[vi,
 * vk]` with vi spatial, a spatial iterator no index uses, `C[vi + vk]`).
 * src/schedule/spatial_writes.c has the details.  The schedule
 * allocates IR in ctx, which must outlive it. */
TIR_API tir_status tir_sched_create(tir_ctx *ctx, const tir_prim_func *f, tir_schedule **out);
TIR_API void tir_sched_destroy(tir_schedule *s); /* NULL is fine */
TIR_API tir_ctx *tir_sched_ctx(const tir_schedule *s);
/* The current function (print it with tir_print for TVMScript text). */
TIR_API const tir_prim_func *tir_sched_func(const tir_schedule *s);
/* The function the schedule was created from. */
TIR_API const tir_prim_func *tir_sched_orig_func(const tir_schedule *s);

/* ------------------------------------------------------------- inspection
 * Not recorded in the trace. */

/* Number of handles created so far (ids 1..n). */
TIR_API int tir_sched_num_handles(const tir_schedule *s);
/* State of handle `id`: its kind ('b' or 'l'), whether it is stale, and
 * the node it names now (the For or the Block; NULL when stale).  Returns
 * TIR_ERR_SCHED_INVALID_HANDLE for an unknown id. */
TIR_API tir_status tir_sched_handle_info(const tir_schedule *s, uint32_t id, char *kind,
                                         bool *stale, const tir_node **node);
/* The node a handle names now, or an error for a stale / invalid handle. */
TIR_API tir_status tir_sched_get_for(tir_schedule *s, tir_loop_rv loop, const tir_for **out);
TIR_API tir_status tir_sched_get_block_node(tir_schedule *s, tir_block_rv block,
                                            const tir_block **out);
/* Whether two handles name the same loop (block) now.  Each query hands
 * out new handles, so two get_loops calls give different ids for one
 * loop; these compare what the handles name instead of their ids.  False
 * when either handle is invalid, of the other kind, stale, or made by
 * another schedule (never an error, and s may be NULL). */
TIR_API bool tir_sched_same_loop(const tir_schedule *s, tir_loop_rv a, tir_loop_rv b);
TIR_API bool tir_sched_same_block(const tir_schedule *s, tir_block_rv a, tir_block_rv b);

/* ---------------------------------------------------------------- queries
 * Output arrays are owned by the ctx. */

/* 1. a block with that name exists (TIR_ERR_SCHED_BLOCK_NOT_FOUND). */
TIR_API tir_status tir_sched_get_block(tir_schedule *s, const char *name, tir_block_rv *out);
/* The loops above a block up to its enclosing block, outermost first. */
TIR_API tir_status tir_sched_get_loops(tir_schedule *s, tir_block_rv block,
                                       const tir_loop_rv **out, int *n);
/* The blocks directly below a block (not inside those), in program order. */
TIR_API tir_status tir_sched_get_child_blocks(tir_schedule *s, tir_block_rv block,
                                              const tir_block_rv **out, int *n);
/* The blocks directly below a loop, in program order. */
TIR_API tir_status tir_sched_get_loop_child_blocks(tir_schedule *s, tir_loop_rv loop,
                                                   const tir_block_rv **out, int *n);
/* Blocks of the same scope that write a buffer `block` reads and come
 * before it (producers), or read a buffer it writes and come after it
 * (consumers), in program order. */
TIR_API tir_status tir_sched_get_producers(tir_schedule *s, tir_block_rv block,
                                           const tir_block_rv **out, int *n);
TIR_API tir_status tir_sched_get_consumers(tir_schedule *s, tir_block_rv block,
                                           const tir_block_rv **out, int *n);

/* ------------------------------------------------------------- primitives
 *
 * Every primitive first checks its handles (TIR_ERR_SCHED_INVALID_HANDLE,
 * TIR_ERR_SCHED_STALE_HANDLE) and pointer arguments (TIR_ERR_INVALID_ARG),
 * then the numbered preconditions in order.  Rewritten block bindings are
 * simplified with the analyzer, knowing every enclosing loop's range.
 *
 * Several primitives need the blocks under a loop to be "well formed"
 * (TVM's complete/reduction blocks with affine bindings), checked as:
 *   W1. no statement other than loops, sequences and block realizes lies
 *       between the loop and those blocks, and the loop variable is used
 *       only in their bindings and predicates (TIR_ERR_SCHED_OPAQUE_USE);
 *   W2. each binding is quasi-affine in the loop variables: sums of
 *       variables times constants, floordiv/floormod by positive constants
 *       (TIR_ERR_SCHED_NON_AFFINE_BINDING);
 *   W3. each block is complete (only spatial iters, no init, reads no
 *       buffer it writes) or a reduction (reduce iters do not index its
 *       written regions) (TIR_ERR_SCHED_BLOCK_NOT_COMPLETE).  Dominance
 *       (the only writer of its buffers) is not checked; that a block's
 *       instances (those differing in a spatial iterator) write distinct
 *       elements is tir_sched_create's check, which accepts what it can
 *       neither prove nor refute.
 *
 * The primitives come in families: loops (split .. unroll), annotations,
 * blocks (cache_read .. reverse_compute_inline, decompose_reduction, rfactor),
 * buffers (storage_align, set_scope, and transform_layout after fusion),
 * pipelining (software_pipeline) and fusion (fuse_reduction_epilogue).
 */

/* ------------------------------------------------------------------ loops */

/* Splits a loop into nfactors nested loops (outermost first), returned in
 * out[0..nfactors-1], named <var>_0, <var>_1, ...  The loop variable
 * becomes ((v0*f1 + v1)*f2 + v2)...  When the factors' product is not
 * provably the extent (1000 split by 32), `substituted < extent` is added
 * to the predicate of the block realizes directly below (statements
 * outside blocks are wrapped in an if), so non-divisible extents work;
 * after the existing conjuncts, or before them where they divide by
 * something that may be 0 (a fused loop's f // i, written for the loop's
 * own range: the guard masks the extra iterations first).
 * Preconditions:
 *   1. the loop is serial and not thread-bound (TIR_ERR_SCHED_LOOP_NOT_SERIAL);
 *   2. the loop has no annotations (TIR_ERR_SCHED_LOOP_ANNOTATED);
 *   3. the loop starts at 0 (TIR_ERR_SCHED_LOOP_MIN_NONZERO);
 *   4. nfactors >= 2 (TIR_ERR_SCHED_FACTOR_COUNT);
 *   5. at most one factor is TIR_SPLIT_INFER (TIR_ERR_SCHED_MULTIPLE_INFER);
 *   6. every other factor is positive: 0 and negative values other than
 *      TIR_SPLIT_INFER are refused (0 no longer means "infer")
 *      (TIR_ERR_SCHED_NONPOSITIVE_FACTOR);
 *   7. without an inferred factor, the product is provably >= the extent
 *      (TIR_ERR_SCHED_FACTOR_MISMATCH);
 *   8. every given factor is below 2^31 and their product below 2^61
 *      (TIR_ERR_SCHED_FACTOR_MISMATCH, "the factors' product overflows";
 *      checked before 7), and, where the extents are constant, the
 *      product of all the new loops' extents fits the loop variable's
 *      dtype (its values reach that product minus 1). */
TIR_API tir_status tir_sched_split(tir_schedule *s, tir_loop_rv loop, int nfactors,
                                   const int64_t *factors, tir_loop_rv *out);

/* Fuses directly nested loops (outermost first) into one loop named
 * <v1>_<v2>_..._fused whose extent is the product; each old variable is
 * recovered with floordiv/floormod.  Where two or more extents are not
 * provably >= 0 (symbolic), each of those enters the product as
 * max(e, 0): loops of negative extents run nothing, their product may be
 * positive.
 * Preconditions:
 *   1. nloops >= 2 (TIR_ERR_SCHED_LOOP_COUNT);
 *   2. no loop is given twice (TIR_ERR_SCHED_DUPLICATE_LOOP);
 *   3. each loop is the whole body of the previous one
 *      (TIR_ERR_SCHED_NOT_CONSECUTIVE);
 *   4. every loop is serial and not thread-bound (TIR_ERR_SCHED_LOOP_NOT_SERIAL);
 *   5. no loop has annotations (TIR_ERR_SCHED_LOOP_ANNOTATED);
 *   6. every loop starts at 0 (TIR_ERR_SCHED_LOOP_MIN_NONZERO);
 *   7. no loop's extent uses another fused loop's variable
 *      (TIR_ERR_SCHED_DEPENDENT_DOMAIN);
 *   8. the loop variables have one dtype (TIR_ERR_TYPE);
 *   9. no loop but the outermost provably never runs (range(x) where x
 *      is 0): its variable would be recovered dividing by 0, an
 *      expression later primitives may copy where it runs
 *      (TIR_ERR_SCHED_DEPENDENT_DOMAIN; checked after 7; fuzzer, helper
 *      h64). */
TIR_API tir_status tir_sched_fuse(tir_schedule *s, int nloops, const tir_loop_rv *loops,
                                  tir_loop_rv *out);

/* Reorders loops of one nest: the positions the given loops occupy are
 * refilled in the given order (outermost first); other loops of the chain
 * stay where they are.  Loop handles stay valid.
 * Preconditions:
 *   1. nloops >= 2 (TIR_ERR_SCHED_LOOP_COUNT);
 *   2. no loop is given twice (TIR_ERR_SCHED_DUPLICATE_LOOP);
 *   3. the loops lie on one path of nested loops with no block between
 *      them (TIR_ERR_SCHED_NOT_NESTED);
 *   4. every loop of that path except the innermost given one has exactly
 *      one child, a loop (TIR_ERR_SCHED_CHAIN_BRANCHES);
 *   5. no loop of the path has a min or extent using another path loop's
 *      variable (TIR_ERR_SCHED_DEPENDENT_DOMAIN);
 *   6.-8. the blocks under the outermost loop satisfy W1-W3;
 *   9. for a block with an init, no two loops of one tangled group
 *      swap.  A loop fused from spatial and reduce loops ("mixed": it
 *      feeds both a spatial and a reduce iterator) lies at or below the
 *      outermost given loop; its group is it and every loop joined to it
 *      through iterators they feed, transitively.  The order of a group's
 *      loops among themselves decides which instance of a spatial point
 *      runs first, and only the first (reduce iterators at their min) runs
 *      the init; other loops may move, past a group's loops too
 *      (TIR_ERR_SCHED_MIXED_LOOP);
 *  10. in the new order, no loop feeding a reduce iterator of a block
 *      with an init lies above a loop of extent other than 1 that feeds
 *      none of that block's iterators (compute_at can leave such a loop:
 *      it repeats every instance, which is harmless only while each
 *      repetition runs the whole reduction from its init)
 *      (TIR_ERR_SCHED_REPEATED_INSTANCES);
 *  11. no two loops of extent other than 1 that feed reduce iterators of
 *      a block whose update does not commute swap: an update other than
 *      C = C op x (op +, -, *, min or max, or a chain of one of them, with
 *      the accumulator once and not subtracted, x not reading C), such as
 *      Horner's C = C * 3 + A[k], a hash or an argmax with two stores,
 *      depends on the order of its steps (a commutative one only rounds
 *      differently, as rfactor makes it) (TIR_ERR_SCHED_REDUCTION_ORDER). */
TIR_API tir_status tir_sched_reorder(tir_schedule *s, int nloops, const tir_loop_rv *loops);

/* Binds a loop to a GPU thread axis: "blockIdx.x/y/z", "threadIdx.x/y/z"
 * or "vthread.x/y/z" (the interpreter runs bound loops as ordinary loops;
 * vthread support in lowering is up to that layer).
 * Preconditions:
 *   1. the axis is one of those names (TIR_ERR_SCHED_BAD_THREAD_AXIS);
 *   2. the loop is serial (TIR_ERR_SCHED_LOOP_NOT_SERIAL);
 *   3. the loop starts at 0 (TIR_ERR_SCHED_LOOP_MIN_NONZERO);
 *   4. no enclosing or enclosed loop is bound to the same axis, unless
 *      the two provably have the same extent and nothing in the inner
 *      one uses the outer one's variable: the inner loop then stands for
 *      the same thread index, and every outer instance does the same work
 *      (a cooperative fetch under the compute's thread loops)
 *      (TIR_ERR_SCHED_AXIS_REBOUND);
 *   5.-7. the blocks under the loop satisfy W1-W3;
 *   8. the loop variable appears only in bindings of spatial iterators,
 *      never of reduce iterators, threadIdx included (strict: no
 *      cross-thread reductions) (TIR_ERR_SCHED_REDUCTION_LOOP). */
TIR_API tir_status tir_sched_bind(tir_schedule *s, tir_loop_rv loop, const char *thread_axis);

/* Marks a loop vectorized.
 * Preconditions:
 *   1. the loop is serial (TIR_ERR_SCHED_LOOP_NOT_SERIAL);
 *   2. the loop starts at 0 (TIR_ERR_SCHED_LOOP_MIN_NONZERO);
 *   3. the extent is a constant (TIR_ERR_SCHED_NON_CONST_EXTENT);
 *   4.-6. the blocks under the loop satisfy W1-W3;
 *   7. the loop variable appears only in bindings of spatial iterators
 *      (TIR_ERR_SCHED_REDUCTION_LOOP). */
TIR_API tir_status tir_sched_vectorize(tir_schedule *s, tir_loop_rv loop);

/* Marks a loop parallel (CPU threads).
 * Preconditions:
 *   1. the loop is serial (TIR_ERR_SCHED_LOOP_NOT_SERIAL);
 *   2. the loop starts at 0 (TIR_ERR_SCHED_LOOP_MIN_NONZERO);
 *   3.-5. the blocks under the loop satisfy W1-W3;
 *   6. the loop variable appears only in bindings of spatial iterators
 *      (TIR_ERR_SCHED_REDUCTION_LOOP). */
TIR_API tir_status tir_sched_parallel(tir_schedule *s, tir_loop_rv loop);

/* Marks a loop unrolled.  Unrolling never changes results.
 * Preconditions:
 *   1. the loop is serial (TIR_ERR_SCHED_LOOP_NOT_SERIAL). */
TIR_API tir_status tir_sched_unroll(tir_schedule *s, tir_loop_rv loop);

/* ------------------------------------------------------------ annotations */

/* Sets annotation `key` on a loop or block (replacing a previous value of
 * that key), e.g. "software_pipeline_stage" = [0, 0, 1, 2] or
 * "pragma_auto_unroll_max_step" = 16.  Any identifier is a valid key (as
 * in TVM); the keys the library itself reads are those of
 * minitir/annotations.def (TIR_ANN_*, tir_annot_key_str), others are kept
 * and ignored.  The occupancy controls "launch_bounds_max_threads",
 * "launch_bounds_min_blocks_per_sm" and "max_registers" go on the root
 * block (get_block("root")); codegen checks their values against the
 * kernel and the target (docs/lowering.md, "Occupancy controls").
 * Preconditions:
 *   1. key is a non-empty identifier ([A-Za-z_][A-Za-z0-9_.]*)
 *      (TIR_ERR_SCHED_BAD_ANNOTATION). */
TIR_API tir_status tir_sched_annotate_loop_int(tir_schedule *s, tir_loop_rv loop,
                                               const char *key, int64_t value);
TIR_API tir_status tir_sched_annotate_loop_str(tir_schedule *s, tir_loop_rv loop,
                                               const char *key, const char *value);
TIR_API tir_status tir_sched_annotate_loop_ints(tir_schedule *s, tir_loop_rv loop,
                                                const char *key, int n, const int64_t *values);
TIR_API tir_status tir_sched_annotate_block_int(tir_schedule *s, tir_block_rv block,
                                                const char *key, int64_t value);
TIR_API tir_status tir_sched_annotate_block_str(tir_schedule *s, tir_block_rv block,
                                                const char *key, const char *value);
TIR_API tir_status tir_sched_annotate_block_ints(tir_schedule *s, tir_block_rv block,
                                                 const char *key, int n,
                                                 const int64_t *values);
/* Removes annotation `key`.
 * Preconditions:
 *   1. the loop or block has an annotation `key` (TIR_ERR_SCHED_NO_ANNOTATION). */
TIR_API tir_status tir_sched_unannotate_loop(tir_schedule *s, tir_loop_rv loop,
                                             const char *key);
TIR_API tir_status tir_sched_unannotate_block(tir_schedule *s, tir_block_rv block,
                                              const char *key);

/* ----------------------------------------------------------------- blocks
 *
 * These create, move and remove blocks.  "The scope" of a block is its
 * nearest enclosing block; producers and consumers are blocks of that
 * scope that write a buffer a block reads, or read one it writes.
 */

/* Reads buffer reads[read_index] of `block` through a cache: a new block
 * (returned in *out, named <buffer>_<scope>) copies the whole buffer into
 * a new buffer <buffer>_<scope> of that scope, allocated in the scope
 * block, and placed in the scope right after the buffer's writer (first,
 * for an input).  The consumers (all readers of the buffer in the scope,
 * or only the nconsumers blocks given) then read the cache.  compute_at
 * then shrinks the copy to the tile a loop needs; the cache buffer keeps
 * the full shape (lowering compacts it to the region used).
 * Preconditions:
 *   1. the block is not the root block, and every consumer given lies in
 *      its scope (checked after 2-3) (TIR_ERR_SCHED_DIFFERENT_SCOPE);
 *   2. 0 <= read_index < the block's number of reads
 *      (TIR_ERR_SCHED_INDEX_OUT_OF_RANGE);
 *   3. scope is "shared", "local" or a fragment scope "frag.a", "frag.b",
 *      "frag.acc" (TIR_ERR_SCHED_BAD_SCOPE);
 *   4. every consumer reads the buffer and does not write it
 *      (TIR_ERR_SCHED_NOT_CONSUMER);
 *   5. at most one block of the scope writes the buffer
 *      (TIR_ERR_SCHED_MULTIPLE_WRITERS);
 *   6. every consumer lies in a later statement of the scope than the
 *      writer (TIR_ERR_SCHED_NOT_STAGE_PIPELINE).  An input's cache goes
 *      first in the scope, so the order of cache_read and compute_at is
 *      free for inputs; a writer and consumer that compute_at or
 *      reverse_compute_at put in one statement leave the whole-buffer copy
 *      no place, and the message names the call to make the cache before
 *      (the cache block then moves with compute_at like any other);
 *   7. the scope is the root block: inside a block made by blockize the
 *      whole-buffer copy would read elements the producers, computed at a
 *      tile, never write (TIR_ERR_SCHED_DIFFERENT_SCOPE; checked after 3);
 *   8. the buffer's writer writes every element of it over all the loops
 *      of the scope: its bounding box (by relaxation) spans the buffer,
 *      and, with constant extents, every element is written (instances
 *      enumerated up to 2^16; past that, at least as many elements
 *      written as the buffer has): a writer that compute_at narrowed to
 *      what its consumers read (make the cache before compute_at), or a
 *      strided one (`T[2 * i]`), leaves elements the copy would read
 *      unwritten (TIR_ERR_SCHED_REGION_NOT_COVERED); predicate conjuncts
 *      over scalar parameters alone (n > 0) are read as true here (9
 *      says what they mask);
 *   9. where the buffer is allocated (not a parameter, whose old values
 *      are the caller's), its writer, and every block inside it, skips no
 *      element when it runs: no reduce domain that may be empty (K = 0)
 *      and a predicate that masks no element nor its init (as cache_write
 *      11, a scalar's conjunct included: where n > 0 fails nothing is
 *      written), or the copy would read elements nothing wrote
 *      (TIR_ERR_SCHED_REGION_NOT_COVERED; fuzzer, helper h64). */
TIR_API tir_status tir_sched_cache_read(tir_schedule *s, tir_block_rv block, int read_index,
                                        const char *scope, int nconsumers,
                                        const tir_block_rv *consumers, tir_block_rv *out);

/* Makes `block` write buffer writes[write_index]'s values into a new
 * buffer <buffer>_<scope> of that scope (allocated in the scope block)
 * and adds a block (returned in *out, named <buffer>_<scope>) right after
 * it in the scope that copies the whole cache back.  Readers keep reading
 * the original buffer, except the nconsumers blocks given, which read the
 * cache.
 * Preconditions:
 *   1. the block is not the root block, and every consumer given lies in
 *      its scope (checked after 2-3) (TIR_ERR_SCHED_DIFFERENT_SCOPE);
 *   2. 0 <= write_index < the block's number of writes
 *      (TIR_ERR_SCHED_INDEX_OUT_OF_RANGE);
 *   3. scope is "shared", "local" or a fragment scope "frag.a", "frag.b",
 *      "frag.acc" (the accumulator of a tensor-core schedule:
 *      docs/tensor-cores.md) (TIR_ERR_SCHED_BAD_SCOPE);
 *   4. every consumer given reads the buffer and does not write it
 *      (TIR_ERR_SCHED_NOT_CONSUMER);
 *   5. no other block of the scope writes the buffer
 *      (TIR_ERR_SCHED_MULTIPLE_WRITERS);
 *   6. every other reader of the buffer in the scope lies in a later
 *      statement of the scope (TIR_ERR_SCHED_NOT_STAGE_PIPELINE);
 *   7. the scope is the root block: inside a block made by blockize each
 *      instance writes part of the buffer, and the whole-cache write-back
 *      would copy elements never written (TIR_ERR_SCHED_DIFFERENT_SCOPE;
 *      checked after 3);
 *   8. the block writes every element of the buffer over all the loops
 *      of the scope, as precondition 8 of cache_read asks of a writer:
 *      compute_at narrows a producer to what its consumers read (make the
 *      cache before compute_at), and a strided block (`Y[2 * i]`) skips
 *      elements; the write-back would copy elements never written over
 *      the buffer (TIR_ERR_SCHED_REGION_NOT_COVERED);
 * Preconditions 9 to 11 apply to the block and to each block inside it
 * (blockize's) that writes the buffer, 9 to the block alone:
 *   9. the block does not read the buffer's old values (it reads the
 *      buffer only with an init): the cache starts unwritten, so an
 *      accumulation without init (`C[i] = C[i] + A[i, k]`) or an in-place
 *      update would read elements nothing wrote
 *      (TIR_ERR_SCHED_REGION_NOT_COVERED);
 *  10. where the block's reduce domain may be empty (a reduce iterator of
 *      symbolic extent: K = 0), its extents name only scalar parameters:
 *      over an empty domain the block runs no instance and the buffer
 *      keeps its values, so the write-back block is predicated on the
 *      domain not being empty (`K > 0`) and needs to say where
 *      (TIR_ERR_SCHED_REGION_NOT_COVERED);
 *  11. each conjunct of the block's predicate names only scalar
 *      parameters (T.where(n > 0): the write-back runs under it too), or
 *      masks no element the block writes nor the init of one: a bound of
 *      its bindings, or a condition on loops feeding only its reduce
 *      iterators that holds with them at their min (the reduction's first
 *      step, which runs the init).  T.where(i % 2 == 0) leaves odd
 *      elements as they were and T.where(k % 2 == 1) skips the init, and
 *      the write-back would copy elements of the cache nothing wrote
 *      (TIR_ERR_SCHED_REGION_NOT_COVERED; fuzzer, helper h64);
 *  12. where the write-back is predicated (10, 11), no consumers are
 *      given: they would read the cache where the block wrote nothing
 *      and the buffer kept its values (TIR_ERR_SCHED_REGION_NOT_COVERED). */
TIR_API tir_status tir_sched_cache_write(tir_schedule *s, tir_block_rv block, int write_index,
                                         const char *scope, int nconsumers,
                                         const tir_block_rv *consumers, tir_block_rv *out);

/* Moves a producer block under `loop`, before the first statement of the
 * loop's body that holds one of its consumers.  Its old loops (those left
 * empty) are removed; new loops ax0, ax1, ... (one per iterator, in
 * iterator order; unit loops dropped unless preserve_unit_loops) run it
 * over the region its consumers read during one iteration of the loop:
 * their read regions with every loop between the loop and them relaxed,
 * and also the thread-bound loops above `loop` that share the written
 * buffer (threadIdx/vthread for "shared", every thread-bound loop for
 * "global", none for "local"), so a shared copy computes the whole
 * thread block's tile, ready to be split and bound to threads for a
 * cooperative fetch.  Reduce iterators run over their whole domain.  Where
 * the region exceeds the block's domain (non-divisible tiles), the realize
 * gets a bounds predicate.  The block's old predicate is dropped (it can
 * only have masked iterations outside the domain, as split makes).
 * Preconditions:
 *   1. the loop and the block are in the same scope
 *      (TIR_ERR_SCHED_DIFFERENT_SCOPE);
 *   2. the loop does not enclose the block (TIR_ERR_SCHED_LOOP_IS_ANCESTOR);
 *   3. the block is complete or a reduction (TIR_ERR_SCHED_BLOCK_NOT_COMPLETE);
 *   4. it writes one buffer, indexed by distinct spatial iterators, one
 *      element each (TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS);
 *   5. no other block of the scope writes that buffer
 *      (TIR_ERR_SCHED_MULTIPLE_WRITERS);
 *   6. every consumer of the block lies under the loop
 *      (TIR_ERR_SCHED_CONSUMER_OUTSIDE);
 *   7. it has at least one consumer (TIR_ERR_SCHED_NO_CONSUMER);
 *   8. no block that comes after the block writes what it reads, outside
 *      the loop or under it (the moved block would run after it and read
 *      its values), and under the loop no producer of the block comes
 *      in the same or a later statement than its first consumer
 *      (TIR_ERR_SCHED_NOT_STAGE_PIPELINE);
 *   9. the region can be bounded, within half its type's range and
 *      with no division by what may be 0 (a bound over a split of k < n
 *      relaxed through n's type wraps; f // min(y, 1) of a fused loop
 *      holds only where that loop runs) (TIR_ERR_SCHED_REGION_UNBOUNDED);
 *  10. the buffer is not a function parameter (the caller reads all of it,
 *      the moved block would write only what the consumers read), and
 *      each consumer provably reads under the loop only elements inside
 *      the block's domain (by its relaxed region, its iterators' domains,
 *      or that domain spanning the buffer's shape), all of which the moved
 *      block writes there (TIR_ERR_SCHED_REGION_NOT_COVERED);
 *  11. every other writer, in the scope, of a buffer the block reads has
 *      written what the moved block reads before it runs: either it lies
 *      in a loop nest sharing no loop with the loop (it finishes first),
 *      or, for the innermost loop it shares with the loop, it comes in an
 *      earlier statement of that loop's body (or lies under the loop
 *      itself) and during one iteration of that loop it writes (as
 *      proven in reverse_compute_at 11: its own iterators, a dense box,
 *      other iterators in full) every element the moved block reads
 *      during that iteration, the moved block's region relaxed over the
 *      loops from the loop up to that one.  A thread-bound loop counts as
 *      a loop: a global or shared block relaxed over one reads what other
 *      threads' producers write only in later iterations
 *      (TIR_ERR_SCHED_REGION_NOT_COVERED).  Producers reading only
 *      parameters, as shared-memory copies do, have nothing to check;
 *  12. a reduction with an init, once moved, runs each of its instances
 *      once: the loops from its scope down to it form a dense box of its
 *      iterators, every loop of extent above 1 feeding one (a region
 *      relaxed over a thread loop it does not depend on, or overlapping
 *      between iterations, would repeat instances; harmless while the init
 *      runs with each repetition, a double sum after a reorder or
 *      decompose_reduction) (TIR_ERR_SCHED_REPEATED_INSTANCES);
 *  13. each conjunct of the block's predicate that uses a loop feeding a
 *      reduce iterator only bounds a binding, as in reverse_compute_at 8:
 *      the predicate is dropped and reduce iterators run over their whole
 *      domain, so a conjunct masking points inside it (rfactor's C_rf after
 *      a split that does not divide the reduction) would be lost
 *      (TIR_ERR_SCHED_PREDICATED_PRODUCER);
 *  14. a reduction whose update does not commute (reorder 11) already
 *      runs its steps in the order of its reduce iterators (outer
 *      iterators first, each increasing), the order of the regenerated
 *      loops: proved by enumerating its loops' steps (up to 2^16) or, past
 *      that, from bindings linear in the loops whose strides nest
 *      (TIR_ERR_SCHED_REDUCTION_ORDER);
 *  15. the conjuncts of the block's predicate other than bounds of its
 *      bindings (which the new loops regenerate) move with it, a user's
 *      T.where(i % 2 == 0) or a write-back's K > 0 (cache_write 10): each
 *      may name scalar parameters, the loop and the loops around it, and
 *      loops bound alone to an iterator (vi = i, replaced by the
 *      iterator's new binding); one naming another loop (of a fused or
 *      split binding) cannot be said at the new place
 *      (TIR_ERR_SCHED_PREDICATED_PRODUCER);
 *  16. the block's iterator domains name only scalar parameters: a
 *      triangle's vk over [0, i), i a loop of its nest, would name a loop
 *      the new loops do not define (TIR_ERR_SCHED_DEPENDENT_DOMAIN;
 *      checked after 1-2; fuzzer, helper h64). */
TIR_API tir_status tir_sched_compute_at(tir_schedule *s, tir_block_rv block, tir_loop_rv loop,
                                        bool preserve_unit_loops);

/* Moves a consumer block under `loop`, at the end of the loop's body
 * (before any statement holding a consumer of it), with new loops as in
 * compute_at running it over the region its producers write during one
 * iteration of the loop (relaxed over the loops inside it; never over
 * thread-bound loops above it, since one thread's instance would read
 * what later threads have not produced yet).  Iterators the produced
 * buffers do not index run over their whole domain; with several produced
 * buffers the regions are intersected.
 * Preconditions:
 *   1. the loop and the block are in the same scope
 *      (TIR_ERR_SCHED_DIFFERENT_SCOPE);
 *   2. the loop does not enclose the block (TIR_ERR_SCHED_LOOP_IS_ANCESTOR);
 *   3. the block is complete or a reduction (TIR_ERR_SCHED_BLOCK_NOT_COMPLETE);
 *   4. no other block of the scope writes what it writes
 *      (TIR_ERR_SCHED_MULTIPLE_WRITERS);
 *   5. every producer of the block lies under the loop
 *      (TIR_ERR_SCHED_PRODUCER_OUTSIDE);
 *   6. it has at least one producer (TIR_ERR_SCHED_NO_PRODUCER);
 *   7. it reads each produced buffer at distinct spatial iterators, one
 *      element each (TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS);
 *   8. the producers' predicates only keep their bindings inside their
 *      iterators' domains (each conjunct is `binding < end`, or `f < d *
 *      end` for a binding floordiv(f, d), as a fused loop split by a
 *      factor not dividing its extent leaves), or only skip reduction
 *      steps (a conjunct over loops feeding reduce iterators that holds
 *      with those at their first value, as rfactor's C_rf after a split not
 *      dividing k has), so they mask no point of the region
 *      (TIR_ERR_SCHED_PREDICATED_PRODUCER);
 *   9. under the loop, no consumer of the block comes in the same or an
 *      earlier statement than its last producer
 *      (TIR_ERR_SCHED_NOT_STAGE_PIPELINE);
 *  10. the region can be bounded, as compute_at 9
 *      (TIR_ERR_SCHED_REGION_UNBOUNDED);
 *  11. it is provable that every producer writes, during one iteration of
 *      the loop, all the elements the block then reads (TVM's region
 *      cover): each producer writes the buffer at its own iterators; the
 *      instances it runs there form a box, each binding being affine in
 *      the loops inside the loop (a fused loop may appear only as
 *      floordiv(f, c) and floormod(f, c), c dividing its extent), each of
 *      those loops feeding one iterator, with strides forming a dense
 *      mixed radix (1, e1, e1*e2, ...), so no strided or partial set (as
 *      reorder, or fuse then split, make); its
 *      other iterators (reduce ones included) run over their whole domain,
 *      so what it writes is final; that box is the block's new range for
 *      each iterator reading it; and the block's domain lies inside the
 *      producer's, so every instance of the block still runs once
 *      (TIR_ERR_SCHED_REGION_NOT_COVERED);
 *  12. as compute_at 13 for the moved block itself: each conjunct of its
 *      predicate using a loop that feeds a reduce iterator only bounds a
 *      binding (TIR_ERR_SCHED_PREDICATED_PRODUCER);
 *  13. the loop comes before the block, and no block under the loop or
 *      between it and the block reads what the block writes (it read the
 *      old values, and would see the new ones)
 *      (TIR_ERR_SCHED_NOT_STAGE_PIPELINE);
 *  14. as compute_at 14 for the moved block
 *      (TIR_ERR_SCHED_REDUCTION_ORDER);
 *  15. as compute_at 15: the other conjuncts of its predicate move with
 *      it (TIR_ERR_SCHED_PREDICATED_PRODUCER);
 *  16. the loop and each loop above it in the scope that feeds no
 *      spatial iterator of a producer under it provably run at least
 *      once: a reduce loop of extent min(j, 1) or range(i) completes its
 *      producer's reduction in one iteration (11), but where it is empty
 *      the producer still covers its spatial instances (keeping the old
 *      values) and the block placed in it would run none of its own
 *      (TIR_ERR_SCHED_REGION_NOT_COVERED; checked after 11; fuzzer,
 *      helper h64);
 *  17. as compute_at 16 (TIR_ERR_SCHED_DEPENDENT_DOMAIN; checked after
 *      1-2). */
TIR_API tir_status tir_sched_reverse_compute_at(tir_schedule *s, tir_block_rv block,
                                                tir_loop_rv loop, bool preserve_unit_loops);

/* Inlines a block X[v...] = f(v...) into every load of X (which becomes
 * f(indices)); readers' regions read f's inputs instead; the block, the
 * loops it leaves empty and X's allocation disappear (its handle becomes
 * stale).
 * Preconditions:
 *   1. the block is not the root block (TIR_ERR_SCHED_DIFFERENT_SCOPE);
 *   2. it is complete (TIR_ERR_SCHED_BLOCK_NOT_COMPLETE);
 *   3. its body is one store to the one buffer it writes, and it
 *      allocates nothing (TIR_ERR_SCHED_NOT_SINGLE_STORE);
 *   4. the store's indices are its iterators, each once, all of them
 *      (TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS);
 *   5. the buffer is not a function parameter (TIR_ERR_SCHED_OUTPUT_BUFFER);
 *   6. no other block writes it (TIR_ERR_SCHED_MULTIPLE_WRITERS);
 *   7. no block after it writes a buffer it reads
 *      (TIR_ERR_SCHED_NOT_STAGE_PIPELINE). */
TIR_API tir_status tir_sched_compute_inline(tir_schedule *s, tir_block_rv block);

/* Inlines a consumer Q: Y[g(v...)] = f(X[v...], ...) into the producer P:
 * X[u...] = e(u...) of X, which becomes Y[g(u...)] = f(e(u...), ...) and
 * keeps its name, loops and bindings; Q, the loops it leaves empty and X's
 * allocation disappear (Q's handle becomes stale).
 * Preconditions:
 *   1. Q is not the root block (TIR_ERR_SCHED_DIFFERENT_SCOPE);
 *   2. Q is complete (TIR_ERR_SCHED_BLOCK_NOT_COMPLETE);
 *   3. Q's body is one store to the one buffer it writes, and Q allocates
 *      nothing (TIR_ERR_SCHED_NOT_SINGLE_STORE);
 *   4. exactly one block of the scope (P) writes what Q reads, one buffer X
 *      (TIR_ERR_SCHED_MULTIPLE_WRITERS);
 *   5. there is such a block (TIR_ERR_SCHED_NO_PRODUCER);
 *   6. P is complete, its body one store to X, and it allocates nothing
 *      (TIR_ERR_SCHED_NOT_SINGLE_STORE);
 *   7. P stores X and Q loads it at their iterators, each once, all of
 *      them, Q always at the same indices (TIR_ERR_SCHED_NOT_TRIVIAL_ACCESS);
 *   8. X is not a function parameter (TIR_ERR_SCHED_OUTPUT_BUFFER);
 *   9. no block other than P and Q reads X (TIR_ERR_SCHED_NOT_STAGE_PIPELINE);
 *  10. Q's iterators run over exactly X's shape
 *      (TIR_ERR_SCHED_DOMAIN_MISMATCH);
 *  11. P comes before Q, and no block from P's place up to Q (P itself,
 *      the blocks after it, those in loops it shares with them) reads or
 *      writes what Q writes, since Q's stores move to P's place
 *      (TIR_ERR_SCHED_NOT_STAGE_PIPELINE);
 *  12. Q's predicate only bounds its iterators to their domains: a
 *      condition beyond that (T.where(i % 2 == 0), n > 0) masks stores
 *      that P, which keeps its own predicate, would run
 *      (TIR_ERR_SCHED_PREDICATED_PRODUCER). */
TIR_API tir_status tir_sched_reverse_compute_inline(tir_schedule *s, tir_block_rv block);

/* Moves a reduction block's init into a new block "<name>_init" (fresh
 * iterator and loop variables) placed right before `loop`, in a copy of
 * the loops from `loop` down to the block that feed its spatial iterators
 * (same kinds and thread tags, no annotations); the block keeps only its
 * update.  The init block keeps the predicate's conjuncts (copying the
 * loops they use) except those that use only loops below `loop` that the
 * init does not copy (the reduction's own split guards), which are
 * dropped.  The init ran with the reduction's first step (every reduce
 * iterator at its min) and only where the predicate held there, so a
 * conjunct over a loop feeding a reduce iterator that is not a bound of
 * the bindings is taken at that step, the loops feeding only reduce
 * iterators at their mins (precondition 10): split-K's k_0 * 96 + k_1 <
 * 333 becomes k_0 * 96 < 333 and copies no k_1 loop, T.where(k % 2 == 1)
 * becomes False (the init never ran).  A kept bound `a < b` (or <=)
 * whose other loops below `loop` have constant ranges, appear in no other
 * conjunct or loop range, and enter a affinely and b not at all, becomes
 * `min(a) < b` over them instead; a conjunct that always holds over the
 * loops around the init is dropped, one with no variable (a predicate
 * simplified to False) kept.  Returns the
 * init block's handle in *out.
 * Preconditions:
 *   1. the block has an init and a reduce iterator, and reduce iterators do
 *      not index what it writes (TIR_ERR_SCHED_NOT_REDUCTION);
 *   2. the loop encloses the block, with no other block in between
 *      (TIR_ERR_SCHED_NOT_ANCESTOR);
 *   3. every loop feeding a reduce iterator of the block is the loop or
 *      lies inside it, so the init runs before the whole reduction
 *      (TIR_ERR_SCHED_LOOP_HEIGHT);
 *   4.-6. the blocks under the loop satisfy W1-W3;
 *   7. the loop and the loops inside it provably run each instance of the
 *      block once (with the init moved out, a repeated update instance
 *      would accumulate twice; compute_at recomputes a block over
 *      overlapping regions in successive iterations of the loops above
 *      its target): the bindings are affine in those loops with a dense
 *      mixed radix of strides, as in reverse_compute_at 11 (the predicate,
 *      which only drops instances, aside), and each of the loops of extent
 *      above 1 feeds an iterator or is held at its first value by a
 *      predicate conjunct (TIR_ERR_SCHED_REPEATED_INSTANCES);
 *   8. the init, now run before the whole loop, is seen early by no other
 *      block under the loop: none writes what the block writes, none reads
 *      it before the block, and none reads it after the block when its old
 *      values mean something (a parameter, or a buffer another block of
 *      the scope writes: elements of later iterations now hold the init)
 *      (TIR_ERR_SCHED_NOT_STAGE_PIPELINE);
 *   9. where the reduce domain may be empty (a reduce iterator of symbolic
 *      extent: K = 0), its extents name only scalar parameters: over an
 *      empty domain the block runs no instance and no init, so the init
 *      block is predicated on the domain not being empty (`K > 0`) and
 *      needs to say where (TIR_ERR_SCHED_NOT_REDUCTION);
 *  10. each predicate conjunct using a loop that feeds a reduce iterator
 *      and is not a bound of the bindings can be taken at the first step:
 *      with the loops feeding only reduce iterators at their mins every
 *      reduce binding is provably its domain's min, and the conjunct uses
 *      no loop feeding both kinds (a fused spatial and reduce loop, whose
 *      first step differs per element) (TIR_ERR_SCHED_PREDICATED_PRODUCER;
 *      fuzzer, helper h64). */
TIR_API tir_status tir_sched_decompose_reduction(tir_schedule *s, tir_block_rv block,
                                                 tir_loop_rv loop, tir_block_rv *out);

/* Factorizes a reduction over one of its reduction loops (TVM's rfactor;
 * split-K for a matmul).  With `loop` (extent n) feeding a reduce
 * iterator of block C, which writes buffer B, a new block "C_rf" computes
 * n partial results into a new global buffer "B_rf" (B's shape with n
 * inserted at factor_axis, allocated by C's scope block): it runs under
 * the original loops (so their handles now name its loops) and reduces
 * over every reduction loop but `loop`, whose value becomes a spatial
 * iterator of C_rf indexing B_rf at factor_axis; each reduce iterator of C
 * bound with `loop` gives way to one iterator per loop its binding uses,
 * named v<loop>.  C keeps its name, handle, init and annotations, and now
 * reduces B_rf over a reduce iterator bound to `loop`'s copy, in a new
 * nest placed right after C_rf's: fresh copies of the loops feeding C's
 * spatial iterators and of `loop`, in their order, kinds and thread tags
 * (no annotations), with the predicate's conjuncts over only those loops.
 * A negative factor_axis counts from the end (numpy's convention: -1 is
 * the last of the ndim + 1 positions).  Returns C_rf's handle in *out.
 * Preconditions:
 *   1. the loop is serial (TIR_ERR_SCHED_LOOP_NOT_SERIAL);
 *   2. it starts at 0 (TIR_ERR_SCHED_LOOP_MIN_NONZERO);
 *   3. exactly one block lies under the loop, and the outermost loop above
 *      that block in its scope holds no other block
 *      (TIR_ERR_SCHED_RFACTOR_NEST);
 *   4. the block is a reduction with an init (TIR_ERR_SCHED_NOT_REDUCTION);
 *   5.-7. the blocks under that outermost loop satisfy W1-W3 (7, the
 *      block is complete or a reduction, follows from 3 and 4: a
 *      defence, with no input that reaches it);
 *   8. the loop has a constant extent of at least 1 (0 would give B_rf
 *      a dimension of 0: a loop range(i) simplified at i = 0) and feeds
 *      reduce iterators of the
 *      block and no spatial one, and every loop feeding a reduce iterator
 *      with it has constant bounds (TIR_ERR_SCHED_RFACTOR_LOOP);
 *   9. each loop above the block in its scope feeds only spatial or only
 *      reduce iterators, and one that feeds none has extent 1
 *      (TIR_ERR_SCHED_MIXED_LOOP);
 *  10. the block writes one buffer B and allocates none; its body is
 *      B[idx] = B[idx] op x or x op B[idx], op one of +, *, min, max and x
 *      not reading B; its init is B[idx] = the identity of op (0, 1, +inf
 *      or the type's largest value, -inf or the smallest)
 *      (TIR_ERR_SCHED_REDUCER_PATTERN);
 *  11. -(ndim + 1) <= factor_axis <= ndim, ndim being B's rank
 *      (TIR_ERR_SCHED_BAD_AXIS);
 *  12. every iteration of the loop runs the block: each predicate conjunct
 *      using a reduction loop is provably true with the other reduction
 *      loops at their start (otherwise, as after a split [4, None] of a
 *      reduction of 9, a slice of B_rf would stay unwritten and C would
 *      read it) (TIR_ERR_SCHED_RFACTOR_EMPTY_SLICE);
 *  13. where the block's reduce domain may be empty (another reduction
 *      loop of symbolic extent: K = 0), its extents name only scalar
 *      parameters: the block then runs no instance and B keeps its
 *      values, while C_rf writes nothing, so C's nest is predicated on the
 *      domain not being empty (`K > 0`) and needs to say where
 *      (TIR_ERR_SCHED_RFACTOR_EMPTY_SLICE; fuzzer, helper h64). */
TIR_API tir_status tir_sched_rfactor(tir_schedule *s, tir_loop_rv loop, int factor_axis,
                                     tir_block_rv *out);

/* Makes the loops from `loop` down and the one block B at their bottom the
 * body of a new block "<B>_o" placed where the loop was (TVM's blockize;
 * tensorize carves a tile operation out this way).  Each iterator v of B
 * is divided by its binding: one using only loops above `loop` moves (the
 * same variable, domain and binding) to the outer block; one using only
 * loops from `loop` down stays on B; one using both must be outer + inner,
 * inner over the loops from `loop` down with values in [0, e) and outer a
 * multiple of e: the outer block gets an iterator v_o (same kind, domain
 * [0, ceil(extent / e)), bound to outer / e) and B keeps v with domain
 * [0, e) bound to inner, its body and regions reading v_o * e + v.
 * Predicate conjuncts of B that use no loop from `loop` down move to the
 * outer block, the others stay on B (reading a loop above through the
 * iterator it is bound to: precondition 7); when a split iterator's outer
 * binding may leave [0, ceil(extent / e)) (factors whose product exceeds
 * the extent) the outer block also gets the bound `outer / e <
 * ceil(extent / e)`.  The outer block's reads and writes are B's relaxed
 * over B's iterators.  If B has an init and a reduce iterator moves out
 * or is split, the init moves to the outer block as TVM does: a block
 * "<B>_init" (spatial iterators v_init of B) under fresh copies of the
 * loops feeding B's spatial iterators, with B's conjuncts that use those
 * loops (its reads relaxed over the loops and blocks inside B's init, when
 * an earlier blockize made that init a nest); B keeps no init.  With every reduce iterator inside, each outer
 * instance runs whole reductions: B keeps its init and the outer block is
 * complete.  B keeps its name, annotations
 * and allocations; the loops keep their handles.  Returns the outer
 * block's handle in *out.
 * Preconditions:
 *   1. the loop's body is a chain of loops ending in one block realize,
 *      with no other statement (TIR_ERR_SCHED_BLOCKIZE_NEST);
 *   2. neither the loop nor a loop inside it is bound to a thread
 *      (TIR_ERR_SCHED_BLOCKIZE_THREAD);
 *   3.-5. the block satisfies W1-W3 for those loops;
 *   6. each binding divides as above: using both kinds of loops, its part
 *      over the inner loops (the binding with them at 0 subtracted) uses
 *      no loop above, has constant bounds [0, e), and the rest is
 *      provably a multiple of e, and the iterator's domain starts at 0
 *      (TIR_ERR_SCHED_BLOCKIZE_BINDING);
 *   7. each predicate conjunct using loops from `loop` down uses loops
 *      above it only where such a loop is bound alone to an iterator that
 *      moves out or is split (i_0 in i_0 * 16 + i_1 < 30, read then as
 *      vi_o), since those loops are not visible inside the outer block
 *      (TIR_ERR_SCHED_BLOCKIZE_BINDING);
 *   8. the block's regions relax to bounded regions over its inner
 *      iterators (TIR_ERR_SCHED_REGION_UNBOUNDED);
 *   9. where the init moves out, the block ran it only with its first
 *      step (every reduce iterator at its min) and the outer block runs
 *      it before every inner step: each reduce iterator that does not
 *      move out has a domain provably not empty, each loop from `loop`
 *      down feeding only reduce iterators provably runs (for rx in
 *      range(n): n = 0 ran no init), and each predicate conjunct using
 *      such a loop is a bound of the bindings or, using no loop from
 *      `loop` down that feeds a spatial iterator, provably holds with
 *      those loops at their mins (T.where(k % 2 == 1) skipped the init)
 *      (TIR_ERR_SCHED_NOT_REDUCTION; fuzzer, helper h64). */
TIR_API tir_status tir_sched_blockize(tir_schedule *s, tir_loop_rv loop, tir_block_rv *out);

/* ---------------------------------------------------------------- buffers */

/* Pads the strides of the buffer the block writes at `buffer_index` so
 * that stride[axis] % factor == offset (e.g. factor 32, offset 1 for
 * shared-memory rows without bank conflicts), TVM's storage_align.  The
 * request is recorded like TVM's, as the block annotation
 * "buffer_dim_align" (TIR_ANN_BUFFER_DIM_ALIGN): a flat int list of [buffer_index, axis, factor,
 * offset] quadruples (a later request for the same buffer and axis
 * replaces the earlier one), and applied by giving the allocated buffer
 * explicit strides computed from all of that block's requests for it,
 * innermost axis first: stride[n-1] = 1 unless aligned, stride[d] =
 * stride[d+1] * shape[d+1], raised to the next value = offset mod factor
 * on aligned axes.  Lowering flattens with these strides (docs/lowered-ir.md).
 * Preconditions:
 *   1. 0 <= buffer_index < the block's number of written buffers
 *      (TIR_ERR_SCHED_INDEX_OUT_OF_RANGE);
 *   2. the buffer is allocated by a block, not a function parameter
 *      (TIR_ERR_SCHED_OUTPUT_BUFFER);
 *   3. 0 <= axis < the buffer's rank (TIR_ERR_SCHED_BAD_AXIS);
 *   4. factor > 0 and 0 <= offset < factor (TIR_ERR_SCHED_BAD_ALIGNMENT). */
TIR_API tir_status tir_sched_storage_align(tir_schedule *s, tir_block_rv block,
                                           int64_t buffer_index, int64_t axis, int64_t factor,
                                           int64_t offset);

/* Sets the storage scope ("global", "shared" or "local") of the buffer the
 * block writes at `buffer_index`, everywhere it is used.
 * Preconditions:
 *   1. 0 <= buffer_index < the block's number of written buffers
 *      (TIR_ERR_SCHED_INDEX_OUT_OF_RANGE);
 *   2. the scope is one of those names (TIR_ERR_SCHED_UNKNOWN_SCOPE);
 *   3. the buffer is allocated by a block, not a function parameter
 *      (TIR_ERR_SCHED_OUTPUT_BUFFER). */
TIR_API tir_status tir_sched_set_scope(tir_schedule *s, tir_block_rv block,
                                       int64_t buffer_index, const char *scope);

/* ------------------------------------------------------------- pipelining */

/* Marks a loop for software pipelining (TVM's software_pipeline_stage /
 * _order / _async_stages annotations; lowering expands it).  The pipeline's
 * components are the loop body's direct children: the statements of the
 * body when it is a sequence, the body itself otherwise, looking through
 * a block realize of a block without iterators (a wrapper).  Component i
 * runs in stage stages[i] and is emitted at position orders[i]; stages in
 * async_stages run asynchronously (cp.async).  With nasync == 0, lowering
 * still makes a stage of plain global->shared copies asynchronous
 * (docs/lowering.md, sw_pipeline; tir_lower_opts.sync_pipeline_copies).  Sets the loop annotations
 * "software_pipeline_stage", "software_pipeline_order" and, when nasync >
 * 0, "software_pipeline_async_stages" (removing an older one otherwise).
 * Preconditions:
 *   1. the loop is serial (TIR_ERR_SCHED_LOOP_NOT_SERIAL);
 *   2. nstages and norders equal the number of components
 *      (TIR_ERR_SCHED_PIPELINE_COUNT);
 *   3. every stage is >= 0 (TIR_ERR_SCHED_PIPELINE_STAGE);
 *   4. orders is a permutation of 0..n-1 (TIR_ERR_SCHED_PIPELINE_ORDER);
 *   5. async stages are distinct and each is the stage of some component
 *      (TIR_ERR_SCHED_PIPELINE_ASYNC);
 *   6. a component that reads a buffer an earlier component writes is in
 *      the same or a later stage (otherwise it would read the previous
 *      iteration's data) (TIR_ERR_SCHED_PIPELINE_DEPENDENCE);
 *   7. a component that reads a buffer an earlier component of the same
 *      stage writes comes later in the order (otherwise it would read data
 *      not yet written) (TIR_ERR_SCHED_PIPELINE_ORDER_DEPENDENCE).
 * By default lowering peels the pipeline's epilogue: the last S time steps
 * (S the largest stage) are emitted after the loop, a second copy of the
 * compute.  The loop annotation "software_pipeline_guard_tail" = 1 (set
 * with tir_sched_annotate_loop_int, before or after this call) makes the
 * loop run those time steps too, with the components of stages < S under
 * `if (k < min + extent)` (CUTLASS's predicated main loop; less code for
 * LLVM).  0 peels; any other value or kind is refused by tir_lower
 * (TIR_ERR_LOWER); a loop with extent <= S is peeled anyway (no steady
 * state); tir_lower_opts.pipeline_peel_tail ignores it (docs/lowering.md,
 * sw_pipeline).  "software_pipeline_clamp_tail" = 1 instead runs those
 * components unguarded on the last iteration, min(k, min + extent - 1)
 * (no branch; the last tile loaded again into a version nobody reads);
 * tir_lower refuses it (TIR_ERR_LOWER) where a component of stage < S
 * writes a buffer used outside the loop (by a store, an atomic_add or a
 * cp_async), and with
 * the guarded tail asked as well.  tir_lower also refuses stages and an
 * order that would let one iteration see another's value in a buffer the
 * pipeline does not version (global, or used outside the loop), reorder
 * one iteration's accesses to a versioned buffer, or version a buffer that
 * carries a value between iterations (docs/lowering.md, sw_pipeline). */
TIR_API tir_status tir_sched_software_pipeline(tir_schedule *s, tir_loop_rv loop, int nstages,
                                               const int64_t *stages, int norders,
                                               const int64_t *orders, int nasync,
                                               const int64_t *async_stages);

/* ----------------------------------------------------------------- fusion */

/* Fuses an elementwise epilogue D[...] = g(temp[...], ...) into the
 * reduction that produces temp, exactly: the result computes the same
 * values as before (in exact arithmetic; float sums are reassociated as
 * with any reduction schedule), unlike TVM's FuseReductionEpilogue, which
 * applies non-linear epilogues on every reduction step.
 *
 * g is split at temp's load into an additive part c and the rest h:
 * g = h(temp + c), where c is the sum of the terms added to temp directly
 * (bias loads, constants) and h everything above (max, min, casts,
 * scaling).  For a sum reduction, c moves into the init (init' = init + c,
 * e.g. 0 -> 0 + bias[j]; c alone where init is an exact identity, integer
 * 0 or float -0.0: a float +0.0 is not one, since a sum from +0.0 never
 * ends at -0.0, while one from bias[j] = -0.0 can; c alone also where
 * init is a float zero and h ignores the sign of a zero, h = max(x, k)
 * with k >= 0 (ReLU) or min(x, k) with k <= 0, k a number, since the two
 * sums are equal or both zeros, in any order of additions or fused
 * multiply-adds; a subtracted term
 * enters as -0.0 - x, which is -x exactly); for max and min
 * reductions nothing moves (adding
 * after a max does not commute with it) and c stays in h.  Then:
 *   - h is the identity (D = temp + bias): the reduction writes D directly
 *     and the epilogue block is removed;
 *   - otherwise (ReLU, clip, scaling, ...): the reduction accumulates
 *     temp + c and the epilogue block stays, now D = h(temp), applied
 *     once per element after the reduction is complete.  It is an ordinary
 *     elementwise consumer, so it can later be moved into the thread tile
 *     (reverse_compute_at) with temp in local scope.
 * With nothing to move (clip without bias, temp * 2 + C, any non-identity
 * epilogue of a max or min reduction), the call succeeds and changes
 * nothing: the function, the handles and the trace stay exactly as they
 * were (the call is not traced).  *changed (changed may be NULL) is set
 * to true when the call rewrote the function, false otherwise (also on
 * failure).
 * When another block also reads temp, or temp is a function parameter,
 * temp keeps its values: the reduction then writes both temp and the
 * accumulator (D, or a new buffer "<temp>_acc" read by the epilogue),
 * repeating the reduction's update for each.
 * Preconditions:
 *   1. the reduction block writes exactly one buffer, has an init and
 *      a reduce iterator, and its update is temp = temp + f, max(temp, f)
 *      or min(temp, f) with f not reading temp, its init temp = value
 *      (TIR_ERR_SCHED_NOT_REDUCTION);
 *   2. the epilogue is a later block of the same scope whose reads
 *      include temp (TIR_ERR_SCHED_EPILOGUE_NOT_CONSUMER);
 *   3. the epilogue is complete (spatial iterators only, no init, reads no
 *      buffer it writes), has a true predicate and a single store whose
 *      value loads temp exactly once (TIR_ERR_SCHED_EPILOGUE_PATTERN);
 *   4. the epilogue's iterators index temp's load one each, covering the
 *      reduction's spatial domain, and the reduction writes temp at its
 *      spatial iterators, one per dimension (TIR_ERR_SCHED_INDEX_MAP);
 *   5. no block between the two writes temp or a buffer the epilogue
 *      reads, or touches D (TIR_ERR_SCHED_INTERVENING_ACCESS);
 *   6. where something moves, the reduction runs its first step for
 *      every element: no reduce domain that may be empty (K = 0) and a
 *      predicate masking no element nor its first step (as reverse_compute_at
 *      8): the epilogue ran for every element, from the old values where
 *      the reduction wrote none, the fused init only with the first step
 *      (TIR_ERR_SCHED_PREDICATED_PRODUCER; fuzzer, helper h64). */
TIR_API tir_status tir_sched_fuse_reduction_epilogue(tir_schedule *s,
                                                     tir_block_rv reduction_block,
                                                     tir_block_rv epilogue_block,
                                                     bool *changed);

/* ------------------------------------------------------- buffers: layouts */

/* Changes the layout of the buffer the block reads (is_write false) or
 * writes (is_write true) at `buffer_index` through an index map, TVM's
 * transform_layout: the buffer's new shape is the bounding box [0, hi) of
 * the map's image of its domain, and every access to it in the function
 * (loads, stores, block read and write regions, its allocation) goes
 * through the map; a region's image is exact for a point and its bounding
 * box otherwise.  The map is text, "lambda i, j: (j, i)": one variable
 * per dimension of the buffer (of the shape's index type) and the new
 * indices as expressions over them, with the operators + - * // %
 * (floor division and modulo), min and max and integer literals, e.g.
 *     "lambda i, k: (k, i)"                   k-major tile
 *     "lambda i: (i // 8, i % 8)"             reshape (8 must divide the
 *                                             extent)
 *     "lambda i, j: (i, (j + i) % 8 + j // 8 * 8)"   rotation swizzle
 * The IR has no xor, so XOR swizzles are written as such rotations.  The
 * image must fill its box: no padding (a split that does not divide),
 * because nothing writes the holes while cache_read and cache_write copy
 * whole buffers (TVM's pad_value, filling them, is not supported).
 * Function parameters are refused (their layout is the caller's), so the
 * function's signature never changes.  The trace records the map text as
 * given.
 * Preconditions:
 *   1. 0 <= buffer_index < the block's number of read (written) buffers
 *      (TIR_ERR_SCHED_INDEX_OUT_OF_RANGE);
 *   2. the buffer is allocated by a block, not a function parameter
 *      (TIR_ERR_SCHED_OUTPUT_BUFFER);
 *   3. the map parses and each output is built from integer literals,
 *      its variables and the operators above (TIR_ERR_SCHED_BAD_INDEX_MAP);
 *   4. the map has one variable per dimension of the buffer and at least
 *      one output (TIR_ERR_SCHED_MAP_ARITY);
 *   5. the buffer has a positive constant shape and no explicit strides
 *      or element offset (apply storage_align afterwards)
 *      (TIR_ERR_SCHED_LAYOUT_BUFFER);
 *   6. at every point of the domain the map evaluates without overflow
 *      (int32) or division by zero to non-negative indices, and, unless it
 *      only permutes the variables, the domain has at most 2^22 elements
 *      and the image's box at most 2^26 (TIR_ERR_SCHED_LAYOUT_LIMIT);
 *   7. the map is injective on the domain, checked at every point
 *      (TIR_ERR_SCHED_MAP_NOT_INJECTIVE);
 *   8. the image fills its box (TIR_ERR_SCHED_LAYOUT_PADDING);
 *   9. no call but atomic_add takes the address of one of its elements
 *      (a tensorized frag_load / frag_store / mma_sync / frag_fill, or a
 *      cp_async, accesses a row-major region from that address, which the
 *      map would not follow: transform the layout before tensorize)
 *      (TIR_ERR_SCHED_LAYOUT_BUFFER). */
TIR_API tir_status tir_sched_transform_layout(tir_schedule *s, tir_block_rv block,
                                              int64_t buffer_index, bool is_write,
                                              const char *index_map);

/* --------------------------------------------------------------- sampling
 *
 * TVM's sampling instructions (sample_perfect_tile, sample_categorical)
 * plus sample_tile for ragged extents.  Each takes a decision argument:
 * ndecision = 0 samples one from the schedule's random state (advancing
 * it); otherwise the given decision is checked and used, and the state is
 * left alone.  Either way the trace records the decision taken, printed
 * `decision=[...]` in text and passed as the decision in C, so a printed
 * trace replays exactly.  A failing call changes nothing, the random
 * state included. */

/* Seed of a new schedule's random state. */
#define TIR_SCHED_DEFAULT_SEED UINT64_C(0x6d696e6974697221)
/* Sampling factors per call at most. */
#define TIR_SAMPLE_MAX_FACTORS 16

/* Sets the random state (splitmix64: the same seed gives the same draws
 * on every platform).  Not traced: a trace's decisions, not the seed,
 * make it reproducible. */
TIR_API void tir_sched_seed(tir_schedule *s, uint64_t seed);
/* The current random state (to fork a seed for another schedule, or to
 * check that a failed call left it alone); 0 for NULL. */
TIR_API uint64_t tir_sched_rand_state(const tir_schedule *s);
/* The integer a value handle holds.  TIR_ERR_SCHED_INVALID_HANDLE for a
 * handle that is not a value handle of s. */
TIR_API tir_status tir_sched_value(tir_schedule *s, tir_value_rv v, int64_t *out);

/* Samples n factors (outermost first) whose product is the loop's extent,
 * the innermost at most max_innermost, into n value handles out[0..n-1]
 * (TVM's sample_perfect_tile).  Drawn as TVM does: the innermost uniformly
 * among the divisors of the extent <= max_innermost, then each prime
 * factor of the rest into one of the n - 1 outer factors uniformly, so
 * every perfect tiling has a positive probability.  A decision is n
 * factors.  Text: `[v4, v5, v6] = sample_perfect_tile(l1, 3, 16,
 * decision=[4, 8, 32])`.
 * Preconditions:
 *   1. the loop's extent is a constant in [1, 2^31)
 *      (TIR_ERR_SCHED_NON_CONST_EXTENT);
 *   2. 1 <= n <= TIR_SAMPLE_MAX_FACTORS (TIR_ERR_SCHED_FACTOR_COUNT);
 *   3. max_innermost >= 1, and when n = 1 the extent <= max_innermost
 *      (the only tiling is [extent]) (TIR_ERR_SCHED_BAD_SAMPLE);
 *   4. a given decision has n positive factors whose product is the
 *      extent, the innermost <= max_innermost (TIR_ERR_SCHED_BAD_DECISION). */
TIR_API tir_status tir_sched_sample_perfect_tile(tir_schedule *s, tir_loop_rv loop, int n,
                                                 int64_t max_innermost, int ndecision,
                                                 const int64_t *decision, tir_value_rv *out);

/* Samples n factors covering a ragged extent (4095, 1000): the inner n - 1
 * are powers of two, the innermost at most max_innermost, and the
 * outermost is ceildiv(extent, product of the inner ones), so the product
 * P >= extent; the waste P - extent is at most max_waste_pct percent of
 * the extent (0: only exact tilings).  Split then masks the extra
 * iterations with a predicate.  TVM samples perfect tilings only, which
 * for 4095 = 3^2*5*7*13 never gives the power-of-two tiles a GPU wants
 * (4095 -> [32, 128] wastes 1 of 4096).  Drawn as: the inner product 2^t
 * uniformly among the t allowed by the bounds, then the innermost's
 * exponent uniformly in what max_innermost allows, then each remaining
 * factor of two into one of the middle factors uniformly.  A decision is
 * n factors; it need not be powers of two (a mutator may try 96), but
 * must meet the other rules.
 * Preconditions:
 *   1. the loop's extent is a constant in [1, 2^31)
 *      (TIR_ERR_SCHED_NON_CONST_EXTENT);
 *   2. 1 <= n <= TIR_SAMPLE_MAX_FACTORS (TIR_ERR_SCHED_FACTOR_COUNT);
 *   3. max_innermost >= 1, max_waste_pct >= 0, and when n = 1 the extent
 *      <= max_innermost (TIR_ERR_SCHED_BAD_SAMPLE);
 *   4. a given decision has n positive factors, the outermost
 *      ceildiv(extent, product of the others), the innermost <=
 *      max_innermost (when n >= 2) and the waste within max_waste_pct
 *      (TIR_ERR_SCHED_BAD_DECISION). */
TIR_API tir_status tir_sched_sample_tile(tir_schedule *s, tir_loop_rv loop, int n,
                                         int64_t max_innermost, int64_t max_waste_pct,
                                         int ndecision, const int64_t *decision,
                                         tir_value_rv *out);

/* Samples one of n candidates with probability probs[i] / sum(probs)
 * (TVM's sample_categorical) into *out.  The decision is the index of
 * the candidate: one entry.  Text: `v7 = sample_categorical([1, 2, 4],
 * [0.5, 0.25, 0.25], decision=[2])`.
 * Preconditions:
 *   1. n >= 1 (TIR_ERR_SCHED_BAD_SAMPLE);
 *   2. every prob is finite and >= 0 and their sum is positive
 *      (TIR_ERR_SCHED_BAD_SAMPLE);
 *   3. a given decision is one index in [0, n) (TIR_ERR_SCHED_BAD_DECISION). */
TIR_API tir_status tir_sched_sample_categorical(tir_schedule *s, int n,
                                                const int64_t *candidates, const double *probs,
                                                int ndecision, const int64_t *decision,
                                                tir_value_rv *out);

/* tir_sched_split with sampled factors: factors[i] is a value handle, so
 * the split follows the sample's decision when the trace is replayed
 * with another one.  Same preconditions as split (with the values). */
TIR_API tir_status tir_sched_split_rv(tir_schedule *s, tir_loop_rv loop, int nfactors,
                                      const tir_value_rv *factors, tir_loop_rv *out);
/* tir_sched_annotate_loop_int / _block_int with a sampled value (an
 * unroll depth, a vector width).  Same preconditions. */
TIR_API tir_status tir_sched_annotate_loop_rv(tir_schedule *s, tir_loop_rv loop,
                                              const char *key, tir_value_rv value);
TIR_API tir_status tir_sched_annotate_block_rv(tir_schedule *s, tir_block_rv block,
                                               const char *key, tir_value_rv value);

/* One decision of a trace: instruction `inst` (0-based index among the
 * trace's instructions, which is also its index among the non-empty,
 * non-comment lines of the text), a sampling instruction named `kind`
 * ("sample_perfect_tile", ...), took the n values (factors, or the one
 * categorical index).  In an override, n = 0 means "sample anew". */
typedef struct tir_decision {
    int inst;
    const char *kind;
    int n;
    const int64_t *values;
} tir_decision;

/* The decisions of s's trace, in trace order, into *out (owned by the
 * ctx; kind is ignored in overrides). */
TIR_API tir_status tir_sched_decisions(const tir_schedule *s, const tir_decision **out, int *n);

/* tir_sched_replay, with the decisions of the instructions named in
 * overrides replaced (n > 0) or drawn anew from s's random state (n = 0)
 * (how a search mutates a tuned trace).  All or nothing as replay.  An
 * override naming no instruction of the text, or one that is not a
 * sampling instruction, or two overrides of one instruction, fail with
 * TIR_ERR_SCHED_TRACE; an invalid decision fails with
 * TIR_ERR_SCHED_BAD_DECISION, the message naming the trace line. */
TIR_API tir_status tir_sched_replay_with_decisions(tir_schedule *s, const char *text, size_t len,
                                                   int noverrides,
                                                   const tir_decision *overrides);

/* ----------------------------------------------------------- tensorization
 *
 * Tensor intrinsics (TVM's TensorIntrin): a name bound to a description
 * and an implementation.  The description is a function whose body (or
 * whose root block's body) is a chain of loops around one block: the
 * computation the hardware performs, on buffer parameters whose dtypes
 * and scopes it requires.  A description buffer of scope global stands for
 * any non-fragment scope (global, shared, local).  The implementation
 * builds the statement that replaces a matched block's body from the
 * program buffers the description's buffer parameters matched (bufs[i]
 * for the i-th buffer parameter, in parameter order) and, for each, the
 * origin of its region in the block: origins[i] has bufs[i]->ndim
 * indices, over the block's iterators.
 *
 * Built-ins (registered once, on first use of the registry), in the
 * logical tile intrinsics of docs/tensor-cores.md:
 *   mma_m16n8k16_bf16   (A[16,16] frag.a, B[16,8] frag.b, C[16,8] frag.acc):
 *                       for i, j, k in grid(16, 8, 16) (S, S, R):
 *                       C[i,j] = C[i,j] + f32(A[i,k]) * f32(B[k,j]), A, B
 *                       bfloat16, C float32 -> mma_sync(C, A, B)
 *   mma_m16n8k16_f16    the same with float16 operands
 *   mma_m16n8k8_tf32    A[16,8], B[8,8], C[16,8] all float32, k extent 8,
 *                       C[i,j] = C[i,j] + A[i,k] * B[k,j] (no casts)
 *   frag_fill_f32       (C[16,8] frag.acc float32): C[i,j] = 0 -> frag_fill
 *   frag_load_a_16x16   (S[16,16], F[16,16] frag.a): F[i,j] = S[i,j],
 *                       two overloads: bfloat16 and float16 -> frag_load
 *   frag_load_b_16x8    (S[16,8], F[16,8] frag.b), bfloat16 / float16
 *   frag_load_b_16x16   (S[16,16], F[16,16] frag.b), bfloat16 / float16:
 *                       two B tiles side by side -> two frag_loads
 *                       (columns c0, c0 + 8; the second under
 *                       if (c0 + 8 < F's width) when F's width is not a
 *                       constant multiple of 16), which lower_fragments
 *                       makes one ldmatrix.x4.trans
 *   frag_load_a_16x8_tf32  (S[16,8], F[16,8] frag.a), float32
 *   frag_load_b_8x8_tf32   (S[8,8], F[8,8] frag.b), float32
 *   frag_store_16x8     (F[16,8] frag.acc, D[16,8]) float32: D[i,j] =
 *                       F[i,j] -> frag_store
 * (S and D: any non-fragment scope.)
 */

/* Builds the description in ctx (NULL: none). */
typedef const tir_prim_func *(*tir_intrin_desc_fn)(tir_ctx *ctx);
/* Builds the implementation statement in ctx (never NULL). */
typedef const tir_stmt *(*tir_intrin_impl_fn)(tir_ctx *ctx, const tir_buffer *const *bufs,
                                              const tir_expr *const *const *origins);

/* Registers a tensor intrinsic for every schedule of the process.  Thread
 * safe.  A name may be registered several times with different functions
 * (overloads, e.g. one per dtype): tensorize tries them in registration
 * order.  Registering the same (name, desc, impl) again changes nothing.
 * TIR_ERR_INVALID_ARG for a NULL function or a name that is empty or
 * holds characters other than letters, digits, '_' and '.'. */
TIR_API tir_status tir_tensor_intrin_register(const char *name, tir_intrin_desc_fn desc,
                                              tir_intrin_impl_fn impl);
/* Number of overloads registered as `name` (0: unknown). */
TIR_API int tir_tensor_intrin_count(const char *name);

/* Replaces the body of a block by a tensor intrinsic's implementation
 * (TVM's tensorize on a block; blockize a loop first to make one).  The
 * block keeps its iterators, bindings, predicate and regions.  The block's
 * body must match the description (the first overload that does):
 *   - the same chain of loops: extents equal, starting at 0, serial or
 *     unrolled; then one block realize with the same number of iterators,
 *     each of the same kind, domain [0, extent of the description's) and
 *     binding (proved equal with the analyzer);
 *   - the same body: statements, operators, constants, dtypes and casts
 *     alike, each description buffer standing for one program buffer of
 *     its dtype and scope (global: any non-fragment scope), and every
 *     index of an access equal to the description's index plus the origin
 *     of that buffer's region in the block's writes (else reads); a
 *     program buffer may have more dimensions than the description's,
 *     whose indices then equal the origin.
 * The inner block's predicate is dropped when every conjunct is X < E
 * with X the binding of a spatial iterator plus terms of loops outside
 * the block (the bound a non-dividing split adds: the tile intrinsics
 * clip at the buffer's edge, and what a fragment holds outside it is never
 * stored).  Fragment buffers are padded to whole tiles (their last two
 * dimensions rounded up to the tile of tir_frag_layout_of), since the
 * intrinsics read and write whole tiles.
 * Preconditions:
 *   1. an intrinsic of that name is registered (TIR_ERR_SCHED_UNKNOWN_INTRIN);
 *   2. the block and its inner block have no init: decompose_reduction
 *      first (TIR_ERR_SCHED_TENSORIZE_INIT);
 *   3. the description is loops around one block (TIR_ERR_SCHED_BAD_INTRIN);
 *   4. the body matches the description, the message naming the first
 *      part that differs (a loop's extent, an iterator's kind, a buffer's
 *      scope or dtype, an index, a cast ...) for each overload
 *      (TIR_ERR_SCHED_TENSORIZE_MISMATCH);
 *   5. each conjunct of the inner predicate bounds a spatial iterator as
 *      above; a bound of a reduce iterator (K not divided by the k split)
 *      is refused: split k by a factor dividing K
 *      (TIR_ERR_SCHED_TENSORIZE_PREDICATE);
 *   6. each fragment buffer matched has a dtype its scope holds, constant
 *      trailing dimensions, provably tile-aligned origins, and is not a
 *      parameter unless it holds whole tiles (TIR_ERR_SCHED_FRAG_TILE). */
TIR_API tir_status tir_sched_tensorize(tir_schedule *s, tir_block_rv block, const char *intrin);
/* Tensorize on a loop (TVM's tensorize of a loop): tir_sched_blockize of
 * the loop, then tir_sched_tensorize of the block it makes, as one call:
 * when either fails the schedule is left as it was.  The trace records
 * both instructions (blockize, then tensorize of its block).  The
 * preconditions are blockize's, then tensorize's. */
TIR_API tir_status tir_sched_tensorize_loop(tir_schedule *s, tir_loop_rv loop,
                                            const char *intrin);

/* ----------------------------------------------------------------- traces */

/* Number of recorded instructions. */
TIR_API int tir_sched_trace_len(const tir_schedule *s);
/* The trace as text, one instruction a line, e.g.
 *     b0 = get_block("C")
 *     [l1, l2, l3] = get_loops(b0)
 *     [l4, l5] = split(l1, [None, 32])
 *     bind(l4, "blockIdx.x")
 * TIR_SPLIT_INFER is written None.  Owned by the ctx. */
TIR_API const char *tir_sched_trace_text(const tir_schedule *s);
/* The trace as a C function `tir_status <fn_name>(tir_schedule *sch)` that
 * makes the same calls; it needs only "minitir/schedule.h".  Owned by the
 * ctx.  fn_name NULL is "apply_schedule"; one that is not a C identifier
 * (or is a C11 keyword) gives "" and TIR_ERR_INVALID_ARG in the ctx. */
TIR_API const char *tir_sched_trace_c(const tir_schedule *s, const char *fn_name);
/* Parses a text trace and applies it to s.  Names in the text are local to
 * it (outputs bind names, inputs must be bound earlier).  All or nothing:
 * on a parse error (TIR_ERR_PARSE, "line:col: ..."), a count mismatch
 * (TIR_ERR_SCHED_TRACE) or a failing instruction (its own code, the
 * message prefixed by the line) s is left as it was.  A split factor of 0,
 * as traces printed while TIR_SPLIT_INFER was 0 wrote it, is refused
 * (TIR_ERR_SCHED_NONPOSITIVE_FACTOR), not read as None.  Sampling
 * instructions take the decision written (`decision=[...]`), or sample
 * from s's random state when the line has none. */
TIR_API tir_status tir_sched_replay(tir_schedule *s, const char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif
