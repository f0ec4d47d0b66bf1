/* minitir/tune.h: the autotuner's layer: the multi-level tiling rule
 * (tir_tune_tiling) and the tensor-core rule (tir_tune_tc_tiling), their
 * design spaces and search (tir_tune), and the tuning database: every measured schedule candidate
 * of every workload on every target, kept in one SQLite file
 * (docs/tuning.md, "The tuning database").
 *
 * A record is one measured candidate: the schedule's text trace
 * (tir_sched_trace_text, which tir_sched_replay applies again), its
 * sampling decisions as text, the median time, GFLOP/s, compile time and,
 * for a candidate that failed, the error.  Records are keyed by
 *   - the workload: a text key made from the unscheduled function
 *     (tir_tune_workload_key: name, structural hash, parameter shapes and
 *     dtypes), the same in every process that builds the same function;
 *   - the target: GPU name, architecture and driver version
 *     (tir_tune_target), filled from the runtime's device properties.
 * A (workload, target, trace, decisions) quadruple is stored once: adding
 * or importing it again keeps the first record and reports a duplicate.
 *
 * Safety: each tir_tune_db_add is one SQLite transaction in WAL mode with
 * synchronous=FULL, so a process killed at any point loses at most the
 * record it was adding and never corrupts older ones; several processes
 * may add to one file at once (each waits up to the busy timeout, 30 s,
 * for another's write).  An import is one transaction: all its lines or
 * none.
 *
 * Threads: a tir_tune_db handle is used by one thread at a time; threads
 * that write at once open a handle each (SQLite then serialises them as it
 * does processes).  Every function that can fail takes a tir_ctx * and
 * records its message there; strings a function returns are owned by that
 * ctx unless it says otherwise.
 */
#ifndef MINITIR_TUNE_H
#define MINITIR_TUNE_H

#include <stdio.h>

#include "minitir/ir.h"
#include "minitir/runtime.h"
#include "minitir/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- keys */

/* The text key of f's workload:
 *     <name>-<hash>-<param>,<param>,...
 * where <hash> is tir_struct_hash(f) in 16 hex digits and each <param> is
 * a buffer parameter's dtype and shape ("f32[1024,512]"; a dimension that
 * is not a constant prints as its expression) or a scalar's dtype ("i32").
 * The hash numbers variables and buffers by first use and hashes strings
 * by content, so the key holds no addresses and is the same in every
 * process; it changes when the IR's node, intrinsic or dtype enumerations
 * change (then old records no longer match; tests pin one key).  Errors:
 * TIR_ERR_INVALID_ARG when f is NULL. */
TIR_API tir_status tir_tune_workload_key(tir_ctx *ctx, const tir_prim_func *f,
                                         const char **out);

/* The machine a record was measured on.  Two targets are the same when
 * all three fields are. */
typedef struct tir_tune_target {
    char gpu[128];      /* "NVIDIA H200" */
    char arch[16];      /* "sm_90" */
    int driver_version; /* 13000 for CUDA 13.0 */
} tir_tune_target;

/* Fills *out from a device's properties (tir_rt_device_props). */
TIR_API void tir_tune_target_from_props(const tir_rt_props *props, tir_tune_target *out);

/* ------------------------------------------------------------- records */

/* One measured candidate.  Input to tir_tune_db_add; output of the
 * queries, whose strings live as long as the call says.  A value that was
 * not measured is NAN (stored as SQL NULL, written null in JSON). */
typedef struct tir_tune_record {
    const char *workload;   /* tir_tune_workload_key of the unscheduled function */
    tir_tune_target target;
    const char *trace;      /* text trace (tir_sched_trace_text); not NULL */
    const char *decisions;  /* sampling decisions as text; NULL reads as "" */
    double median_ms;       /* median kernel time; NAN if not measured */
    double gflops;          /* NAN if not measured */
    const char *error;      /* NULL when the candidate ran and was correct */
    double compile_ms;      /* schedule + lower + codegen + JIT; NAN if unknown */
    int64_t timestamp;      /* Unix seconds; 0 in tir_tune_db_add means now */
    int64_t id;             /* row id, set by the queries (ignored by add) */
} tir_tune_record;

/* A record with every measure NAN and every string NULL. */
TIR_API void tir_tune_record_init(tir_tune_record *r);

/* ------------------------------------------------------------ database */

typedef struct tir_tune_db tir_tune_db;

/* Opens (creating if needed) the database file at path and sets it up:
 * WAL journal, synchronous=FULL, a 30 s busy timeout, the schema of
 * version 1 (tables meta, workload, target, record; docs/tuning.md).
 * Several processes may open a new file at once.  Errors: TIR_ERR_IO when
 * the file cannot be opened or is not a database, TIR_ERR_UNSUPPORTED for
 * another schema version, TIR_ERR_TUNE_DB for any other SQLite failure
 * (the message quotes SQLite's). */
TIR_API tir_status tir_tune_db_open(tir_ctx *ctx, const char *path, tir_tune_db **out);
/* Closes the handle (NULL is fine).  Everything added is already on disk. */
TIR_API void tir_tune_db_close(tir_tune_db *db);
/* SQLite's integrity check of the whole file.  Errors: TIR_ERR_TUNE_DB
 * with the first problem it reports. */
TIR_API tir_status tir_tune_db_check(tir_ctx *ctx, tir_tune_db *db);

/* Adds one record in its own transaction.  *added (may be NULL) is false
 * when a record with the same workload, target, trace and decisions was
 * already there; that one is kept as it was.  Errors: TIR_ERR_INVALID_ARG
 * for a NULL or empty workload or trace, an empty GPU name or arch, a
 * measure (median_ms, gflops, compile_ms) that is negative or infinite;
 * TIR_ERR_TUNE_DB when SQLite fails (also when another writer holds the
 * file longer than the busy timeout). */
TIR_API tir_status tir_tune_db_add(tir_ctx *ctx, tir_tune_db *db, const tir_tune_record *r,
                                   bool *added);

/* The best record of a workload on a target: the lowest median among
 * records without an error (ties: the earliest added).  Its strings are
 * owned by ctx.  Errors: TIR_ERR_TUNE_NO_RECORD when there is none,
 * TIR_ERR_TUNE_DB. */
TIR_API tir_status tir_tune_db_best(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                                    const tir_tune_target *target, tir_tune_record *out);

/* Number of records of a workload on a target; a NULL workload or target
 * counts over all of them.  Errors: TIR_ERR_TUNE_DB. */
TIR_API tir_status tir_tune_db_count(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                                     const tir_tune_target *target, int64_t *out);

/* Called once per record; the record's strings are valid during the call
 * only.  Returning false stops the iteration. */
typedef bool (*tir_tune_record_fn)(void *user, const tir_tune_record *r);

/* Calls fn on every record of a workload on a target (NULL for either:
 * all), failed ones included, in the order they were added: a cost
 * model's training data.  fn must not use db.  Errors: TIR_ERR_TUNE_DB. */
TIR_API tir_status tir_tune_db_foreach(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                                       const tir_tune_target *target, tir_tune_record_fn fn,
                                       void *user);

/* Calls fn on the k best error-free records of a workload on a target,
 * fastest first (what a search starts from).  fn must not use db.
 * Errors: TIR_ERR_INVALID_ARG for k < 1, TIR_ERR_TUNE_DB. */
TIR_API tir_status tir_tune_db_top(tir_ctx *ctx, tir_tune_db *db, const char *workload,
                                   const tir_tune_target *target, int k, tir_tune_record_fn fn,
                                   void *user);

/* Replays the trace of the best record of s's workload (the key of
 * tir_sched_orig_func(s)) on target into s, which must be fresh (an empty
 * trace).  A record that does not replay (written by a minitir whose
 * trace language or preconditions differ), or whose kernel rounds to
 * TF32 (holds a float32 frag.a buffer, whichever intrinsic tensorized it:
 * read from a scratch replay, not from the trace's names) where the key
 * does not ask for TF32 or the other way round (a misfiled record: it
 * would change the kernel's arithmetic), is passed over for the next
 * fastest, up to 32.
 * *used (may be NULL) receives the record applied, its strings owned by
 * ctx.  All or nothing: on any error s is unchanged.  Errors:
 * TIR_ERR_INVALID_ARG when s has a trace already, TIR_ERR_TUNE_NO_RECORD,
 * TIR_ERR_TUNE_DB, or, when no record applies, the first one's status
 * (its replay's, or TIR_ERR_TUNE_DB for a TF32 mismatch), the message
 * naming it. */
TIR_API tir_status tir_tune_apply_best(tir_ctx *ctx, tir_tune_db *db,
                                       const tir_tune_target *target, tir_schedule *s,
                                       tir_tune_record *used);
/* tir_tune_apply_best for the records of an explicit workload key (a
 * tensor-core task's, tir_tune_task_key: TF32 records are kept apart from
 * float32 ones of the same function). */
TIR_API tir_status tir_tune_apply_best_key(tir_ctx *ctx, tir_tune_db *db,
                                           const tir_tune_target *target, const char *workload,
                                           tir_schedule *s, tir_tune_record *used);

/* ---------------------------------------------------------- JSON lines */

/* Writes every record, in the order added, as one JSON object a line:
 *   {"workload":"...","gpu":"...","arch":"sm_90","driver":13000,
 *    "trace":"...","decisions":"...","median_ms":0.41,"gflops":5230.1,
 *    "error":null,"compile_ms":104.5,"timestamp":1790000000}
 * Numbers round-trip exactly (%.17g); unmeasured ones are null.  *count
 * (may be NULL) receives the number of lines.  Errors: TIR_ERR_IO when
 * writing fails, TIR_ERR_TUNE_DB. */
TIR_API tir_status tir_tune_db_export_jsonl(tir_ctx *ctx, tir_tune_db *db, FILE *f,
                                            int64_t *count);

/* Reads JSON lines as export writes them (keys in any order; workload,
 * gpu, arch, driver and trace are required, the rest default to null, ""
 * or 0 (a timestamp of 0: the time of the import);
 * blank lines are skipped) and adds them in one transaction: a malformed
 * line (TIR_ERR_PARSE, "line N: ...") or an unknown key adds nothing.
 * Records already present are skipped, so importing a file twice adds it
 * once.  *added and *skipped (may be NULL) receive the counts.  Errors:
 * TIR_ERR_PARSE, TIR_ERR_INVALID_ARG (a record add would refuse, named by
 * line), TIR_ERR_IO, TIR_ERR_TUNE_DB. */
TIR_API tir_status tir_tune_db_import_jsonl(tir_ctx *ctx, tir_tune_db *db, FILE *f,
                                            int64_t *added, int64_t *skipped);

/* ------------------------------------------------ the multi-level tiling rule */

/* The knobs of the tiling rule (tir_tune_tiling).  Per thread block a
 * BM x BN tile of the output with BM = warps_m * threads_m * tm and
 * BN = warps_n * threads_n * tn; the k loop in tiles of bk. */
typedef struct tir_tile_config {
    int warps_m, warps_n;     /* warps per block along i and j */
    int threads_m, threads_n; /* lanes per warp along i and j (product 32) */
    int tm, tn;               /* outputs per thread along i and j */
    int bk;                   /* k tile */
    int vec;                  /* global, shared and output access width; divides tm, tn */
    bool staging;             /* register staging pipeline (global loads of the next k
                                 tile in flight during the compute) */
    int pad;                  /* elements of padding after each shared row (mod 32) */
    int splitk;               /* split-K slices (1: none); no batch loops then */
    bool splitk_atomic;       /* split-K summed by atomic adds into the output
                                 (atomic_reduction; nondeterministic order)
                                 instead of a second kernel (false) */
    bool lsr;                 /* LLVM loop strength reduction (the
                                 loop_strength_reduction annotation) */
    int stages;               /* 0 or 1: the pipeline `staging` says; 2..4: a
                                 multistage pipeline instead (staging must be
                                 false): the A and B tiles copied from global
                                 straight to shared memory in `stages`
                                 versions, the copies of k tile t + stages - 1
                                 issued before the compute of tile t (cp.async,
                                 a ragged tile's edge with a source size of 0) */
    bool gvec;                /* the output's vector stores stay vectors at a
                                 ragged N that the vector divides (the
                                 vectorize_global_guarded annotation); a tuner
                                 knob, drawn where N is ragged, " gvec=1" ends
                                 the text when set */
    bool dunroll;             /* the direct PTX emitter takes the kernels with
                                 its own unrolling of serial loops small
                                 enough for LLVM's O3 unroller (the
                                 direct_unroll annotation) instead of
                                 leaving them to LLVM; a tuner knob, drawn
                                 where the k loop may be such a loop
                                 (space.c), " dunroll=1" ends the text when
                                 set */
    bool guard_tail;          /* software_pipeline_guard_tail on the k-tile
                                 pipeline when the body has at least 512 FMAs
                                 per thread: no peeled epilogue, a third less
                                 compile time, but 2.5-3.6% slower kernels on
                                 the H200 (docs/performance.md, run 31); off by
                                 default, not a tuner knob, not in the text */
    bool clamp_tail;          /* software_pipeline_clamp_tail on the k-tile
                                 pipeline under the same condition (unless
                                 guard_tail): no peeled epilogue and no
                                 branch, the last tile loaded again; Step 8
                                 compiles in ~20 instead of ~28 ms but ran
                                 6% slower on the H200 (docs/performance.md,
                                 run 91); off by default, not a tuner knob,
                                 not in the text */
    bool no_swizzle;          /* blocks in raster order instead of groups of 8
                                 block rows on grids of 1024+ blocks (as
                                 tir_tc_config.no_swizzle); for A/B runs, not a
                                 tuner knob, not in the text */
} tir_tile_config;

/* 128 x 128 x 8: 2 x 4 warps of 8 x 4 lanes, 8 x 8 outputs per thread,
 * float4 accesses, staging, padding 4, no split-K, LSR on, stages 0. */
TIR_API tir_tile_config tir_tile_config_default(void);
/* Threads per block, and the shared bytes of the A and B tiles for
 * elements of dtype_bytes: one version of each, or `stages` versions of
 * each (each version rounded up to 16 bytes, as the lowering places them)
 * with a multistage pipeline. */
TIR_API int tir_tile_config_threads(const tir_tile_config *c);
TIR_API int64_t tir_tile_config_shared_bytes(const tir_tile_config *c, int dtype_bytes);

/* Applies the multi-level tiling rule with cfg to block `block` of s: a
 * block whose iterators are spatial ones (the last two the output's rows i
 * and columns j, any before them batch loops, bound to blockIdx.z) and
 * one reduction iterator k last, reading an input indexed by (i, k) and
 * one by (k, j) in either order (a matmul, matmul_nt, batch matmul, or a
 * matmul whose epilogue fuse_reduction_epilogue has fused).  It is the
 * schedule described in src/tune/tiling.c: warp and lane tiles, a k tile
 * in shared memory stored k-major, register fragments, an accumulator in
 * registers, a register-staging or multistage pipeline, split-K by
 * rfactor.  Every step
 * is a traced primitive.  hook (may be NULL) is called after each one
 * with the call as written.  Errors: TIR_ERR_INVALID_ARG (the block does
 * not fit the rule, or cfg is invalid: non-positive sizes, threads_m *
 * threads_n != 32, vec not dividing tm and tn, split-K with batch loops,
 * stages outside 0..4, stages >= 2 with staging; the message names the
 * block), or a primitive's error.  On error the
 * schedule holds the primitives applied before it (as with any sequence
 * of primitives; callers tune on a copy). */
TIR_API tir_status tir_tune_tiling(tir_schedule *s, const char *block, const tir_tile_config *cfg,
                                   void (*hook)(void *user, tir_schedule *s, const char *call),
                                   void *user);

/* ------------------------------------------------ the tensor-core rule */

/* The knobs of the tensor-core rule (tir_tune_tc_tiling, "Step 9"): per
 * thread block a bm x bn tile of C, the k loop in tiles of bk; warps_m x
 * warps_n warps (threadIdx.y; threadIdx.x is the lane), each a
 * bm/warps_m x bn/warps_n tile of whole 16 x 8 mma tiles. */
typedef struct tir_tc_config {
    int bm, bn, bk;        /* block tile and k tile (bk a multiple of the mma's k:
                              16, or 8 for TF32) */
    int warps_m, warps_n;  /* warps per block */
    int stages;            /* software pipeline stages: 1 none, 2 double buffer, ... */
    bool async_copy;       /* cp.async for the shared tiles (with stages >= 2): the
                              pipeline's async_stages annotation; without it
                              lowering's auto-async still makes plain and
                              zero-filling copies cp.async unless
                              tir_lower_opts.sync_pipeline_copies */
    int pad;               /* elements added to each shared row (conflict-free ldmatrix);
                              applied to a row only when smaller than it; A's
                              rows: tir_tc_pad_a, B's: tir_tc_pad_b (rows of
                              whole 128-byte segments that ldmatrix reads are
                              swizzled by lowering instead) */
    /* Switches that turn a speed-up off, for A/B measurements (zero, the
     * default and what the tuner uses, keeps it on; not tuner knobs):
     * no_b_pairs: B fragments by one ldmatrix.x2.trans per 16x8 tile
     *   instead of one x4.trans per two adjacent tiles (frag_load_b_16x16;
     *   16-bit inputs, warp tiles of a multiple of 16 columns);
     * no_frag_pipeline: the k steps of a k tile unrolled one after the
     *   other instead of software-pipelined two deep (the operand fragments
     *   of step s + 1 loaded before the mma of step s; bk of at least two
     *   k steps). */
    bool no_b_pairs;
    bool no_frag_pipeline;
    /* guard_tail: software_pipeline_guard_tail on the cp.async k-tile
     * pipeline (no peeled epilogue: compile time 287 -> 198 ms for
     * 128x256x64 in 4 stages, but bf16 9-10% slower on the H200, run 31);
     * off by default, not a tuner knob. */
    bool guard_tail;
    /* clamp_tail: software_pipeline_clamp_tail on that pipeline instead
     * (unless guard_tail): no peeled epilogue and no branch, the copies of
     * the last stages - 1 times load the last k tile again into versions
     * nobody reads.  Off in tir_tc_config_default(); tir_tune_tc_default()
     * sets it for the big tiles with 16-bit inputs and at least 32 k tiles
     * (faster there and ~35% less compile time, runs 91-92).  Not a tuner
     * knob, not in the text: tuned records replay without it. */
    bool clamp_tail;
    /* no_swizzle: blocks launched in raster order instead of in groups of
     * 8 block rows, on grids of 1024 or more blocks with whole groups
     * (src/tune/tiling_tc.c, bind_blocks). */
    bool no_swizzle;
    /* same_pad: A's shared rows padded by pad like B's instead of to an
     * odd number of 16-byte chunks (tir_tc_pad_a; changes TF32 only). */
    bool same_pad;
    /* no_smem_swizzle: every shared row padded by pad, as before the
     * swizzle, instead of leaving unpadded the rows ldmatrix reads that
     * are whole 128-byte segments (A; B of 16-bit inputs), whose 16-byte
     * chunks lowering then swizzles by the row (flatten, docs/lowering.md):
     * conflict-free ldmatrix either way, but a padded row splits the
     * 32-byte sectors the copies bring from L2 (1.5x the traffic for
     * bfloat16, docs/tensor-cores.md). */
    bool no_smem_swizzle;
    /* splitk: split-K, k cut into splitk slices of equal whole k tiles
     * (K / bk a multiple of splitk), each slice's partial sums on its own
     * blockIdx.z (rfactor into a float32 C_rf[splitk, M, N]) and a second
     * kernel summing them into C; 0 or 1: none. */
    int splitk;
    /* wgmma: TF32 through Hopper's warpgroup MMA (wgmma.mma_async m64nRk8,
     * A from registers, operands swapped: docs/tensor-cores.md "wgmma")
     * instead of mma.sync: every warp covers all bm rows (warps_m 1,
     * warps_n a multiple of 4: whole warpgroups), A's shared tile is read
     * by the instruction itself (bk 32: rows of one 128-byte segment, the
     * hardware's swizzle), bm 64, 128 or 256, M and N multiples of the
     * block tile, no split-K.  Needs an sm_90a target.  Not a tuner knob
     * and not in the text. */
    bool wgmma;
} tir_tc_config;

/* 128 x 128 x 32, 2 x 4 warps (64 x 32 each), double-buffered cp.async,
 * pad 8. */
TIR_API tir_tc_config tir_tc_config_default(void);
/* TF32 by wgmma (wgmma set): 128 x 128 x 32 tiles of 1 x 4 warps (one
 * warpgroup) in 3 stages, two blocks an SM (run 129, H100: 0.656x cuBLAS
 * at 4096^3 against 0.583x for 128 x 256 with two warpgroups, one block
 * an SM). */
TIR_API tir_tc_config tir_tc_config_wgmma(void);
/* The elements the rule pads each shared row of A by (elem_bytes per
 * element): 0 when the row is a whole number of 128-byte segments
 * (lowering swizzles it instead; unless c->no_smem_swizzle); else c->pad,
 * moved by 16 bytes when the padded row would be an even number of
 * 16-byte chunks (unless c->same_pad), so that the 8 rows an ldmatrix
 * phase reads (16 bytes each) fall in 8 different groups of banks.
 * 16-bit rows of whole k steps always are odd (pad 8: BK / 8 + 1 chunks);
 * TF32 at BK 32 with pad 8 is 10 chunks, 2-way conflicts, and gets pad 4.
 * 0 when c->pad is 0 or not below BK. */
TIR_API int tir_tc_pad_a(const tir_tc_config *c, int elem_bytes);
/* The same for B's rows (BN elements): 0 for 16-bit rows of whole
 * 128-byte segments (ldmatrix.trans reads them; swizzled by lowering,
 * unless c->no_smem_swizzle); else c->pad (TF32 B, read one element or
 * two per lane, keeps its pad); 0 when c->pad is 0 or not below BN. */
TIR_API int tir_tc_pad_b(const tir_tc_config *c, int elem_bytes);
/* Threads per block (32 per warp), and the shared bytes of the pipeline's
 * A and B tiles (stages copies, padded rows) for inputs of elem_bytes. */
TIR_API int tir_tc_config_threads(const tir_tc_config *c);
TIR_API int64_t tir_tc_config_shared_bytes(const tir_tc_config *c, int elem_bytes);

/* Applies the tensor-core rule with cfg to block `block` of s: a matmul
 * block C[i, j] += acc(A[i, k]) * acc(B[k, j]) (tir_def_matmul_mixed: the
 * block writes one buffer and reads two others, A first) whose inputs are
 * float16 or bfloat16 (m16n8k16) or float32 (TF32, m16n8k8), accumulating
 * in float32.  The schedule of src/tune/tiling_tc.c: accumulator
 * fragments, shared tiles (cp.async, `stages`-stage software pipeline),
 * operand fragments by ldmatrix (B in pairs of tiles unless no_b_pairs),
 * double-buffered across the k steps of a k tile (unless
 * no_frag_pipeline), every tile operation tensorized.  Every
 * step is a traced primitive; hook (may be NULL) is called after each
 * one with the call as written.  Errors: TIR_ERR_INVALID_ARG (the block
 * is not such a matmul, an input type tensor cores do not take, or cfg
 * invalid: a warp tile not whole 16 x 8 tiles or fewer than two along
 * either dimension, bk not a multiple of the
 * mma's k, stages < 1, pad < 0; the message names the block), or a
 * primitive's error (tensorize refuses a bk that does not divide K).  On
 * error the schedule holds the primitives applied before it. */
TIR_API tir_status tir_tune_tc_tiling(tir_schedule *s, const char *block,
                                      const tir_tc_config *cfg,
                                      void (*hook)(void *user, tir_schedule *s, const char *call),
                                      void *user);

/* ------------------------------------------------------------- tasks */

/* What is tuned: an operator of ir.h's ready definitions, its shape and
 * its inputs' type.  The scheduled block is "C" in each. */
typedef enum tir_tune_op {
    TIR_TUNE_MATMUL,           /* tir_def_matmul: C[M,N] = A[M,K] B[K,N] */
    TIR_TUNE_MATMUL_BIAS_RELU, /* tir_def_matmul_bias_relu: D = max(A B + bias[j], 0) */
    TIR_TUNE_BATCH_MATMUL,     /* tir_def_batch_matmul: C[b] = A[b] B[b] */
} tir_tune_op;

typedef struct tir_tune_task {
    tir_tune_op op;
    int64_t batch; /* TIR_TUNE_BATCH_MATMUL only */
    int64_t M, N, K;
    /* The inputs' type and the arithmetic, as cuBLAS's GEMM kinds name
     * them:
     * TIR_RT_GEMM_F32 is float32 on the CUDA cores, the tiling rule
     * (tir_tune_tiling); TIR_RT_GEMM_TF32 (float32 inputs rounded to TF32),
     * TIR_RT_GEMM_F16 and TIR_RT_GEMM_BF16 are tensor cores, the
     * tensor-core rule (tir_tune_tc_tiling) on tir_def_matmul_mixed, for
     * TIR_TUNE_MATMUL only.  TIR_RT_GEMM_F32_PEDANTIC is refused. */
    tir_rt_gemm_kind kind;
} tir_tune_task;

/* Whether t is a tensor-core task (kind TF32, F16 or BF16). */
TIR_API bool tir_tune_task_tc(const tir_tune_task *t);
/* The database key of t's workload: tir_tune_workload_key of its function,
 * with "+tf32" appended for TIR_RT_GEMM_TF32 (whose function is the
 * float32 matmul's: the suffix keeps TF32 records from float32 ones;
 * float16 and bfloat16 differ in the function already).  The string is
 * owned by ctx.  Errors: those of tir_tune_task_func. */
TIR_API tir_status tir_tune_task_key(tir_ctx *ctx, const tir_tune_task *t, const char **out);

/* "matmul", "matmul_bias_relu", "batch_matmul". */
TIR_API const char *tir_tune_op_name(tir_tune_op op);
/* The task's unscheduled function (NULL with an error for bad sizes, an
 * unknown kind, or a tensor-core kind with another operator than
 * TIR_TUNE_MATMUL). */
TIR_API const tir_prim_func *tir_tune_task_func(tir_ctx *ctx, const tir_tune_task *t);

/* -------------------------------------------------------- design space */

/* Every configuration of the tiling rule for a task on a target, generated
 * from its shape (src/tune/space.c says which).  Free with
 * tir_tune_space_free. */
typedef struct tir_tune_space {
    int n;
    tir_tile_config *configs; /* heap; NULL for a tensor-core task */
    tir_tc_config *tc_configs; /* heap; a tensor-core task's (else NULL) */
} tir_tune_space;

/* A tensor-core task's space is that of the tensor-core rule
 * (tir_tune_tc_config_valid, src/tune/space_tc.c).  Errors:
 * TIR_ERR_INVALID_ARG (non-positive sizes, a kind the operator does not
 * take, or nothing fits), TIR_ERR_NOMEM. */
TIR_API tir_status tir_tune_space_make(tir_ctx *ctx, const tir_tune_task *t,
                                       const tir_target_limits *lim, tir_tune_space *out);
TIR_API void tir_tune_space_free(tir_tune_space *sp);
/* Whether c is in the space's constraints for t on lim (a warp of lanes,
 * vec dividing the thread tile, at most 64 accumulators per thread, the
 * A and B tile copies whole rounds of the block's threads, stages 0..4
 * and no staging with stages >= 2, a multistage pipeline only with tiles
 * that divide M, N and K (its copies are cp.async only then), the tiles
 * in static shared memory (a multistage pipeline's versions in the opt-in
 * dynamic shared memory),
 * split-K slices of at least two k tiles, partial
 * sums addressable in 32 bits, and never with batch). */
TIR_API bool tir_tune_config_valid(const tir_tune_task *t, const tir_target_limits *lim,
                                   const tir_tile_config *c);
/* The decisions of c as text, "warps=2x4 lanes=8x4 thread=8x8 bk=8 vec=4
 * staging=1 pad=4 splitk=1 lsr=1 stages=0", then " gvec=1" and
 * " dunroll=1" where set (what the database stores as a record's
 * decisions), snprintf's return; and back.  The parser also takes the text
 * without " stages=N" (records written before the field existed) as
 * stages 0, and without gvec or dunroll as 0.  The switches not in the
 * text (splitk_atomic, guard_tail, no_swizzle) are
 * tir_tile_config_default()'s; *c is written only on success.  Parse
 * errors: TIR_ERR_PARSE naming the field, or a knob out of range
 * (1..4096, pad 0..4096: a record's text can hold any number, and the rule
 * and the cost model multiply the knobs). */
TIR_API int tir_tile_config_text(const tir_tile_config *c, char *buf, size_t cap);
TIR_API tir_status tir_tile_config_parse(tir_ctx *ctx, const char *text, tir_tile_config *c);
/* The tiling rule with its knobs as sampling instructions: one
 * sample_categorical per knob (warps_m, warps_n, lanes 8x4 or 4x8, tm, tn,
 * bk, staging, splitk, lsr, stages 0..4, gvec, dunroll; vec is min(tm,
 * tn, 4)), so the trace records the decisions (tir_sched_decisions) and
 * replays them.  With cfg the decisions are cfg's (an error when a value
 * is not a candidate); with NULL they are drawn from the schedule's random
 * state (the result may then be refused by the rule).  *used (may be
 * NULL) gets the configuration applied. */
TIR_API tir_status tir_tune_tiling_sampled(tir_schedule *s, const char *block,
                                           const tir_tile_config *cfg, tir_tile_config *used);
/* The configuration without tuning: a rule by shape for a GPU of nsm
 * multiprocessors (src/tune/space.c, measured on the H200). */
TIR_API tir_tile_config tir_tune_default(const tir_tune_task *t, int nsm);

/* The tensor-core rule's space (src/tune/space_tc.c).  Whether c fits the
 * tensor-core task t on lim: at most 32 warps and the target's threads;
 * whole 16 x 8 tiles per warp, at least 2 x 2 of them (the rule's minimum); bk a multiple of the mma's k that divides
 * K (tensorize refuses a ragged k tile); stages 2 to 4; the shared tiles
 * of every stage within the target's opt-in shared memory; the copies of
 * the A and B tiles whole rounds of 16-byte vectors over the block's
 * threads; padded rows 16-byte aligned (ldmatrix); at most 128
 * accumulators per thread, and accumulators + 64 registers per thread
 * within the block's register file; with split-K (splitk > 1) the k
 * tiles (K / bk) a multiple of splitk.  False for a task that is not a
 * tensor-core one. */
TIR_API bool tir_tune_tc_config_valid(const tir_tune_task *t, const tir_target_limits *lim,
                                      const tir_tc_config *c);
/* The decisions of c as text, "tile=128x128x32 warps=2x4 stages=2 async=1
 * pad=8", with " splitk=S" after it when c->splitk > 1 (so records from
 * before split-K read the same), snprintf's return; and back.  Parse
 * errors: TIR_ERR_PARSE naming the field, or a knob out of range (tiles
 * and warps 1..4096, stages 1..64, pad 0..4096). */
TIR_API int tir_tc_config_text(const tir_tc_config *c, char *buf, size_t cap);
TIR_API tir_status tir_tc_config_parse(tir_ctx *ctx, const char *text, tir_tc_config *c);
/* The tensor-core rule with its knobs as sampling instructions, as
 * tir_tune_tiling_sampled: one sample_categorical per knob (bm, bn, bk,
 * warps_m, warps_n, stages, async_copy, pad; candidates listed in
 * space_tc.c) recorded in the trace.  With cfg the decisions are cfg's
 * (an error when a value is not a candidate); with NULL they are drawn
 * from the schedule's random state (the result may then be refused by the
 * rule).  *used (may be NULL) gets the configuration applied. */
TIR_API tir_status tir_tune_tc_tiling_sampled(tir_schedule *s, const char *block,
                                              const tir_tc_config *cfg, tir_tc_config *used);
/* The tensor-core configuration without tuning (examples/hgemm.c's rule;
 * docs/tensor-cores.md, "The default by shape").  Where at least half a
 * wave (nsm / 2) of 128 x 256 blocks exists: whichever of 128 x 256 (2 x 4
 * warps, 4 cp.async stages), 128 x 192 (N a multiple of 192) and 128 x 128
 * (2 x 2 warps, 3 stages; two blocks an SM at least) scores best by its
 * measured rate times the part of the GPU its waves keep busy; else
 * 64 x 128, else 64 x 64 tiles of 2 x 2 warps in 3 stages, split-K in 8,
 * 4 or 2 slices where fewer than a wave of those tiles exist and K is long
 * (slices of 1024+); in TF32 with K of 4096+ there, 128 x 128 tiles in the
 * most of 8, 4, 2 slices within three waves (slices of 512+, at least
 * three quarters of a wave of blocks, M and N multiples of 128).  bk 64
 * (TF32: 32), or the largest multiple of the mma's k (16; TF32 8) below it
 * that divides K (tensorize refuses a ragged k tile; when K is not a
 * multiple of the mma's k, bk is that k and the rule refuses the shape). */
TIR_API tir_tc_config tir_tune_tc_default(const tir_tune_task *t, int nsm);
/* The default for a target: tir_tune_tc_default's, except TF32 where
 * codegen has wgmma for arch (tir_codegen_arch_has_wgmma) and it fits and
 * fills the GPU: M and N multiples of 128, K of 32 and at least nsm
 * 128 x 128 blocks: then tir_tc_config_wgmma() (run 129, H100: 0.656x
 * cuBLAS at 4096^3 where mma.sync's default ran 0.561x). */
TIR_API tir_tc_config tir_tune_tc_default_arch(const tir_tune_task *t, int nsm, const char *arch);

/* -------------------------------------------------------------- search */

/* The most GPUs one tir_tune measures on. */
enum { TIR_TUNE_MAX_GPUS = 16 };
/* opts.ngpus: every GPU the driver reports. */
#define TIR_TUNE_ALL_GPUS (-1)

typedef struct tir_tune_progress {
    int trials, failed;   /* candidates measured (or failed) so far */
    double best_gflops;   /* 0 before the first success */
    double cublas_gflops; /* of the GPU that measured the best (before one: the first GPU) */
    double elapsed_s;
    int max_trials;       /* the most it can measure: opts.trials, or the size of the
                           * space (a replay's pool) where smaller */
    int ngpus;                           /* measuring GPUs */
    int gpu_trials[TIR_TUNE_MAX_GPUS];   /* candidates each measured, as in res->gpus */
} tir_tune_progress;

/* The search's cost model (tir_tune_opts.model; docs/tuning.md compares
 * them on recorded measurements). */
typedef enum tir_tune_model {
    /* The default: TIR_TUNE_MODEL_XGB where libxgboost loads, else
     * TIR_TUNE_MODEL_KNN (on the H200, with the same 36 s at 1000x520x333
     * and no default measured first, XGBoost found 0.79x and 0.89x of
     * cuBLAS where kNN found 0.26x and 0.58x: docs/tuning.md, run 37). */
    TIR_TUNE_MODEL_AUTO = 0,
    /* An analytic prior times the inverse-distance-weighted ratio of
     * measured to prior of the 4 nearest measured points in knob space. */
    TIR_TUNE_MODEL_KNN,
    /* Gradient-boosted trees (XGBoost, as TVM's cost model) over the
     * knob features and the prior's logarithm, trained on log throughput,
     * refitted once per round.  libxgboost is loaded at run time
     * (MINITIR_XGBOOST_LIB, else libxgboost.so.0, else libxgboost.so);
     * without it tir_tune fails with TIR_ERR_UNSUPPORTED before
     * measuring anything. */
    TIR_TUNE_MODEL_XGB,
    /* No model: the default, then points drawn uniformly from those not
     * yet measured (the baseline). */
    TIR_TUNE_MODEL_RANDOM,
} tir_tune_model;

/* "auto", "knn", "xgb", "random"; and back (false for another name). */
TIR_API const char *tir_tune_model_name(tir_tune_model m);
TIR_API bool tir_tune_model_parse(const char *name, tir_tune_model *out);
/* Whether libxgboost can be loaded (TIR_TUNE_MODEL_XGB works); else ctx
 * (may be NULL) gets why: TIR_ERR_UNSUPPORTED naming the files tried and
 * the loader's messages. */
TIR_API tir_status tir_tune_xgb_available(tir_ctx *ctx);

typedef struct tir_tune_opts {
    int trials;        /* candidates to measure at most (>= 1) */
    double seconds;    /* wall-clock budget of the search (0: none) */
    int threads;       /* compile threads (>= 1) */
    int batch;         /* candidates per round (0: 16) */
    int runs;          /* timed runs per median (>= 20; smaller means 20) */
    uint64_t seed;     /* search and input seed */
    tir_tune_db *db;   /* every candidate recorded here (may be NULL) */
    /* Called after every candidate, from the thread that measured it, one
     * call at a time (the search holds its lock).  May be NULL. */
    void (*progress)(void *user, const tir_tune_progress *p);
    void *user;
    /* GPUs to measure on, one measuring worker each: 0 or 1 measures on
     * dev alone (on the calling thread); n >= 2 on dev and the devices of
     * the n - 1 ordinals after dev's (wrapping around), each opened by
     * the tuner; TIR_TUNE_ALL_GPUS on every GPU the driver reports. */
    int ngpus;
    tir_tune_model model; /* the cost model (0: TIR_TUNE_MODEL_AUTO) */
    /* Do not measure the rule-based default first (to evaluate a search
     * strategy alone: today's default was distilled from recorded runs). */
    bool no_default;
} tir_tune_opts;

/* One measuring GPU of a tir_tune. */
typedef struct tir_tune_gpu_stats {
    int ordinal;
    char name[128];
    int trials, failed;   /* candidates it measured, and those that failed */
    double cublas_ms;     /* cuBLAS's median on this GPU */
    bool cublas_host_bound; /* its samples were not back to back behind the
                             * bench's hold (tir_rt_bench_result): the host's
                             * gaps may be in cublas_ms */
    char error[512];      /* why its worker stopped early ("" if it did not) */
} tir_tune_gpu_stats;

typedef struct tir_tune_result {
    tir_tile_config best;     /* a float32 task's best */
    tir_tc_config best_tc;    /* a tensor-core task's best */
    char best_decisions[256]; /* the best's decisions as text (either rule's) */
    char *best_trace;     /* heap: the best schedule's text trace */
    double best_ms, best_gflops, best_rel_err;
    int best_regs;
    double cublas_ms, cublas_gflops;
    int trials, failed, verify_failures, space_size;
    double seconds;
    double *curve;        /* heap: best ms after each trial (NAN before a success) */
    int curve_cap;
    char db_error[256];   /* the first database error, if any ("" otherwise) */
    int ngpus;            /* measuring GPUs; dev's is gpus[0] */
    tir_tune_gpu_stats gpus[TIR_TUNE_MAX_GPUS];
    int best_gpu;         /* index into gpus of the GPU that measured (and verified) the best */
    /* The cost model's cost, in process CPU time (the search runs it
     * between rounds, when no compile or measuring thread runs): its fits
     * (XGBoost: one per round once there are samples; kNN: none, it is
     * lazy), their CPU time, and the CPU time of fitting and ranking
     * together. */
    int model_fits;
    double model_fit_ms, model_ms;
    tir_tune_model model; /* the model the search used (AUTO resolved) */
} tir_tune_result;

/* Tunes task on dev: the search of src/tune/search.c over the task's
 * design space, compiling on opts->threads threads and measuring on dev
 * (median of opts->runs runs over rotated inputs; a kernel with local
 * memory is refused as spilling), every new best verified against
 * cuBLAS's result (tir_rt_check's tolerance), every candidate recorded in
 * opts->db under tir_tune_task_key.  A tensor-core task (kind TF32, F16,
 * BF16) searches the tensor-core space with inputs of the kind's type,
 * cuBLAS's GemmEx of the kind as the reference speed, and every new best
 * verified against a float64 reference of the same inputs
 * (tir_rt_gemm_ref_device) within tir_rt_gemm_tolerance(kind, K); the
 * best is then res->best_tc (res->best for float32), its decisions text
 * in res->best_decisions either way.  Stops after opts->trials candidates or opts->seconds.
 *
 * Several GPUs (opts->ngpus): each gets a measuring worker thread with its
 * own device handle (dev for dev's ordinal), cuBLAS handle, inputs,
 * reference and cuBLAS time; a compiled candidate goes to whichever worker
 * is free.  Candidates are compared by their speed relative to the cuBLAS
 * time of the GPU that measured them (on one GPU: by median), a new best
 * is verified on the GPU that measured it, and each record carries the
 * target of its own GPU.  res->cublas_ms is then the best's GPU's.  All
 * GPUs must have dev's architecture (the candidates are compiled for it);
 * the design space follows dev's limits.
 *
 * Errors: TIR_ERR_INVALID_ARG (also: more GPUs asked for than the driver
 * reports, or one of another architecture), the runtime's (no cuBLAS, CUDA;
 * opening any GPU's session fails the call, naming the GPU),
 * TIR_ERR_UNSUPPORTED when no candidate ran correctly.  A CUDA error while
 * measuring (the context is then lost) stops that GPU's worker (recorded
 * in res->gpus[i].error); the others carry on.  When every worker has
 * stopped so, the search stops with TIR_ERR_CUDA, res keeping the best
 * found before it.  Free res with tir_tune_result_free (also after an
 * error). */
TIR_API tir_status tir_tune(tir_ctx *ctx, tir_rt_device *dev, const tir_tune_task *task,
                            const tir_tune_opts *opts, tir_tune_result *res);
TIR_API void tir_tune_result_free(tir_tune_result *res);

/* The search of tir_tune replayed on recorded measurements, without a GPU,
 * to evaluate a search strategy offline and deterministically (for a
 * seed).  The space is the pool of distinct decisions recorded in db for
 * task's workload (tir_tune_task_key) on target (NULL: any target); a
 * point's "measurement" is its record (the first one recorded with those
 * decisions: its median and GFLOP/s, or a failed trial when it has an
 * error or no median), so nothing outside the pool is ever proposed.  nsm
 * is the recorded GPU's multiprocessor count (for the cost model's
 * prior).  Of opts, trials, batch, seed, model and progress (called after
 * every trial) are used; opts->db must be NULL (a replay records nothing);
 * seconds, threads, runs and ngpus are ignored.  res as tir_tune's, with
 * space_size the pool's size, best_ms and best_gflops as recorded,
 * cublas_ms NAN, no trace, and the model's cost.  Errors:
 * TIR_ERR_INVALID_ARG (bad options or task), TIR_ERR_TUNE_NO_RECORD (no
 * record of the workload), TIR_ERR_PARSE (a record's decisions do not
 * parse as the task's rule's), TIR_ERR_UNSUPPORTED (the XGBoost model
 * without libxgboost), the database's. */
TIR_API tir_status tir_tune_replay(tir_ctx *ctx, tir_tune_db *db, const tir_tune_target *target,
                                   int nsm, const tir_tune_task *task, const tir_tune_opts *opts,
                                   tir_tune_result *res);

#ifdef __cplusplus
}
#endif
#endif
