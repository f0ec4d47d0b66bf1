/* cg_internal.h: what the files of src/codegen share.  Only src/codegen
 * includes LLVM headers; this header is not installed.
 */
#ifndef MINITIR_CG_INTERNAL_H
#define MINITIR_CG_INTERNAL_H

#include <llvm-c/Core.h>

#include "ir/ir_internal.h"
#include "minitir/codegen.h"
#include "minitir/lower.h"

/* Initialises LLVM's NVPTX target once per process (llvm_target.c). */
void cg_llvm_init(void);

/* Launch axes (minitir/target.h): blockIdx.x..z are 0..2, threadIdx.x..z
 * are 3..5. */
enum { CG_NAXES = TIR_NLAUNCH_AXES };

/* What checking a kernel against the lowered form finds out. */
typedef struct cg_info {
    const tir_expr *dims[CG_NAXES]; /* launch extents; NULL: axis unused */
    unsigned empty_ok;              /* tir_launch.empty_ok */
    tir_launch launch;              /* tir_launch_check's whole result (the launch plan) */
    bool *written;                  /* per param: the kernel stores to it (arena) */
    /* occupancy controls (cg_occupancy.c); 0: not requested */
    int64_t max_threads, min_blocks, max_regs;
    bool lsr; /* run LLVM's loop strength reduction (loop_strength_reduction) */
    /* the direct emitter unrolls small serial loops itself, as
     * tir_codegen_opts.direct_unroll (direct_unroll) */
    bool direct_unroll;
    /* The shared buffers (distinct, in first-Allocate order, as emission
     * places them): their bytes with each start aligned to
     * max(16, buffer align), and the largest such alignment. */
    int64_t shared_bytes, shared_align;
    const char *shared_names; /* "A_shared (4096 bytes), ..." for messages */
    /* Set by tir_codegen before emission: the shared buffers live in one
     * dynamic (extern) shared array instead of static ones. */
    bool dyn_shared;
    /* wgmma_sync: the kernel uses it (codegen.c then emits for sm_90a),
     * and the shared buffers it reads through matrix descriptors, which
     * cg_shared_align places on 1024-byte boundaries (arena) */
    bool wgmma;
    const tir_buffer **wgmma_shared;
    int nwgmma_shared;
} cg_info;

/* The alignment of shared buffer b in the layout of info: max(16, its
 * align), and 1024 for an operand of wgmma_sync (the 128-byte swizzle
 * works on absolute shared address bits 4-9). */
int64_t cg_shared_align(const cg_info *info, const tir_buffer *b);

/* Checks f against docs/lowered-ir.md and the target t (its limits; its
 * arch for the instructions it has).  TIR_ERR_UNSUPPORTED (naming the
 * node) when it does not conform, TIR_ERR_ARCH when it uses an
 * instruction t lacks. */
tir_status cg_check(tir_ctx *ctx, const tir_prim_func *f, const tir_target *t, cg_info *info);

/* Checks f's occupancy attrs (launch_bounds_max_threads,
 * launch_bounds_min_blocks_per_sm, max_registers) against its launch
 * (info->dims, filled) and lim, and records them in info, with the
 * switches loop_strength_reduction and direct_unroll.
 * TIR_ERR_UNSUPPORTED naming the kernel and the attr when one is not an
 * int, not positive, past the target's limit, or (max threads) below the
 * kernel's threads per block; or a switch is not the int 0 or 1. */
tir_status cg_check_occupancy(tir_ctx *ctx, const tir_prim_func *f, const tir_target_limits *lim,
                              cg_info *info);
/* The product of the threadIdx extents of info->dims. */
int64_t cg_threads_per_block(const cg_info *info);

/* What emission found out about the function it emitted, for the choice
 * of LLVM pipeline (codegen.c, TIR_CG_PIPELINE_SHORT). */
typedef struct cg_emit_facts {
    int nloops;            /* serial loops emitted as loops (not unrolled here) */
    int64_t min_loop_body; /* the fewest instructions emitted for one's body
                            * (INT64_MAX without loops) */
    int64_t min_loop_work; /* the least of trip count x body instructions over
                            * the loops of constant trip count (INT64_MAX: none) */
    bool unroll_hint;      /* a loop asks LLVM to unroll it (llvm.loop metadata) */
    bool var_local;        /* a local array is addressed other than by constant
                            * indices: only unrolling can put it in registers */
} cg_emit_facts;

/* At most this many copies of a body are unrolled at emission (the
 * product of the extents of the unrolled loops around it); the seed's
 * kernels make at most a few hundred (docs/lowered-ir.md). */
enum { CG_MAX_UNROLLED = 4096 };

/* The smallest loop body, in emitted LLVM instructions, of a kernel that
 * gets the short pipeline.  default<O3> on NVPTX unrolls a loop fully
 * when trip count x body size stays under 300 (up to 4x that where it
 * predicts simplification) and partially when the body is under 75; a
 * body of 600 or more with a trip count of 2 or more is past both, so
 * O3 leaves it rolled and the short pipeline loses no unrolling.  The
 * seed's kernels have either bodies of at most ~60 (Steps 1-6) or at
 * least ~750 (Steps 7-9). */
enum { CG_SHORT_MIN_BODY = 600 };
/* ... and the least trip count x body of a loop with a constant trip
 * count: O3 fully unrolled a 2-trip k loop of ~700 instructions (a Step 9
 * kernel at K = 2 k tiles: its "up to 4x" where it predicts
 * simplification), so a loop must be well past 4 x 300 to stay rolled;
 * and one of 1,248 (test_cg_pipeline's 64x64x96 bf16 kernel once
 * flatten swizzles its B tile: the swizzle's address arithmetic, which
 * folds, took it from 1,163), which left rolled spills. */
enum { CG_SHORT_MIN_WORK = 3000 };

/* The modular analysis of index expressions (cg_mod.c): value == base
 * (mod coeff); coeff 0: the value is exactly base. */
typedef struct cg_mod {
    int64_t coeff, base;
} cg_mod;
extern const cg_mod CG_MOD_ANY;
/* Floor division and its remainder (b != 0). */
int64_t cg_floordiv64(int64_t a, int64_t b);
int64_t cg_floormod64(int64_t a, int64_t b);
/* {coeff * k + base} with coeff >= 0 and base reduced modulo it. */
cg_mod cg_mod_norm(int64_t coeff, int64_t base);
/* The set of a variable's values in the caller's environment env. */
typedef cg_mod (*cg_var_mod_fn)(void *env, const tir_var *v);
/* The values of the scalar integer expression e (CG_MOD_ANY otherwise). */
cg_mod cg_mod_of(const tir_expr *e, cg_var_mod_fn var_mod, void *env);
/* The alignment in bytes of an element at index m (+ elem_offset o) of a
 * buffer of elem-byte elements whose data pointer is aligned to align. */
unsigned cg_access_align(cg_mod m, cg_mod o, unsigned elem, unsigned align);

/* Prints f's PTX into m (ptx, ptx_len, shared bytes, ptx_ms) without LLVM
 * (cg_direct.c) when f lies in that emitter's subset; otherwise returns
 * false with the reason in m->direct_refusal and nothing else changed.
 * name is the entry name; info is cg_check's (shared placement done). */
bool cg_direct_ptx(tir_ctx *ctx, const tir_prim_func *f, const cg_info *info,
                   const tir_codegen_opts *o, const char *name, tir_module *m);

/* Emits the kernel function `name` for f into mod.  Adds the shared memory
 * it allocates (static, or with info->dyn_shared dynamic) to *shared_bytes.
 *
 * host: emit a plain C-callable function for the host instead (tests run
 * kernels this way): thread-binding loops become serial loops, pointers
 * are generic, shared arrays are stack arrays, and kernels that need
 * threads to cooperate (syncthreads, cp_async) are refused.  facts (may
 * be NULL) receives what cg_emit_facts describes. */
tir_status cg_emit_kernel(tir_ctx *ctx, const tir_prim_func *f, const cg_info *info,
                          const tir_codegen_opts *opts, LLVMModuleRef mod, const char *name,
                          bool host, int64_t *shared_bytes, cg_emit_facts *facts);

/* The helper function computing a math intrinsic (exp, log, tanh, pow,
 * sigmoid) on float (f64 false) or double (f64 true) in mod, created on
 * first use.  It is internal and always-inline; it uses only target-neutral
 * LLVM intrinsics (fma, rint, floor, fabs), so it also runs on the host. */
LLVMValueRef cg_math_fn(LLVMModuleRef mod, tir_intrin op, bool f64);
/* __tir_fmod_f32 / _f64: C's exact fmod (cg_math.c; LLVM's frem is not
 * exact on NVPTX). */
LLVMValueRef cg_fmod_fn(LLVMModuleRef mod, bool f64);

/* Calls an LLVM intrinsic by name (non-overloaded, or overloaded on the
 * types in `over`). */
LLVMValueRef cg_call_intrinsic(LLVMModuleRef mod, LLVMBuilderRef b, const char *name,
                               LLVMTypeRef *over, int nover, LLVMValueRef *args, int nargs);

/* --------------------------------------------- tensor cores (cg_tensor.c)
 *
 * Emission of lane_id, mma_sync, ldmatrix, shfl_xor and wgmma_sync
 * (docs/lowered-ir.md) works on
 * cg_emit.c's state through the hooks below, so that fragment registers
 * go through the ordinary local-array path (and stay SSA values with
 * tir_codegen_opts.ssa_locals). */
typedef struct cg cg;

/* The compute capability of an arch name ("sm_90a" -> 90), 0 when it is
 * not of the form sm_<digits>. */
int cg_arch_sm(const char *arch);
/* The oldest compute capability that has intrinsic op (0: any). */
int cg_tensor_min_sm(tir_intrin op);
/* Emits a tensor-core call (lane_id, mma_sync, ldmatrix, shfl_xor, wgmma_sync) checked by
 * cg_check; NULL on failure (the ctx has the error). */
LLVMValueRef cg_tensor_call(cg *g, const tir_call *c);
/* The PTX ISA version an LLVM NVPTX feature string asks for ("+ptx78" ->
 * 78; the last "+ptxNN" wins, as in LLVM), 0 when it names none. */
int cg_ptx_version(const char *features);
/* The PTX ISA version wgmma needs (8.0) and whether arch has wgmma
 * (sm_90 and sm_90a: codegen emits sm_90a for kernels that use it; later
 * architectures dropped it). */
enum { CG_WGMMA_PTX = 80 };
bool cg_arch_has_wgmma(const char *arch);
/* Whether PTX's cvt.rn.tf32.f32 is valid for arch with LLVM NVPTX
 * features (sm_90 and later, PTX ISA 7.8 and later: "+ptx78" or above). */
bool cg_has_cvt_rn_tf32(const char *arch, const char *features);
/* The LLVM NVPTX features codegen uses for o (o->features, else its
 * target's ptx_features; NULL when neither; codegen.c). */
const char *cg_features(const tir_codegen_opts *o);
/* The float x rounded to TF32 as cvt.rn.tf32.f32 does it (10 mantissa bits
 * kept, to nearest, ties to even; Inf and NaN unchanged), as the bits of an
 * i32 with the 13 low bits zero, built from integer operations at b (any
 * target: the emulation for targets without that instruction). */
LLVMValueRef cg_tf32_round_ints(LLVMBuilderRef b, LLVMValueRef x);

/* Rewrites the patterns the PTX assembler's optimiser miscompiles into
 * equivalent ones (cg_ptxas.c), on an optimised module; returns how many
 * instructions it replaced.  host: the module runs on the host (the host
 * JIT), which leaves out the rewrites into inline PTX. */
int cg_ptxas_guard(LLVMModuleRef mod, bool host);

/* Hooks of cg_emit.c for cg_tensor.c. */
LLVMBuilderRef cg_builder(cg *g);
LLVMModuleRef cg_module(cg *g);
/* The codegen options of the emission (arch set). */
const tir_codegen_opts *cg_opts(cg *g);
/* The value of an argument-less intrinsic without side effects (a special
 * register such as %laneid), read once per kernel in its entry block. */
LLVMValueRef cg_entry_intrinsic(cg *g, const char *name);
/* The pointer address_of(load) denotes. */
LLVMValueRef cg_address_of(cg *g, const tir_expr *addr);
/* The value of expression e (NULL on failure: the ctx has the error). */
LLVMValueRef cg_expr(cg *g, const tir_expr *e);
/* Element o + k of the local array L, where addr is address_of(L[o]):
 * loaded, or v stored, as a scalar BufferLoad / BufferStore of it would
 * be.  NULL / false on failure. */
LLVMValueRef cg_local_load(cg *g, const tir_expr *addr, int64_t k);
bool cg_local_store(cg *g, const tir_expr *addr, int64_t k, LLVMValueRef v);
LLVMTypeRef cg_scalar_ty(cg *g, tir_dtype t);
/* The index of element o + k of the local array of addr = address_of(L[o])
 * as emitted (a ConstantInt where o folds to a constant, for instance in
 * a loop unrolled at emission); NULL on failure. */
LLVMValueRef cg_local_index(cg *g, const tir_expr *addr, int64_t k);
/* Records a user error (TIR_ERR_UNSUPPORTED with msg) found during
 * emission; returns NULL. */
LLVMValueRef cg_fail_unsupported(cg *g, const char *msg);

/* The codegen cache (cg_cache.c).  A key: the text of everything the PTX
 * depends on (in ctx's arena), its hash, and the disk directory (NULL:
 * memory only). */
typedef struct cg_cache_key_t {
    const char *text;
    size_t len;
    uint64_t hash;
    const char *dir;
} cg_cache_key_t;
/* What an entry gives back: the PTX (NUL-terminated) and the pipeline. */
typedef struct cg_cache_value {
    const char *ptx;
    size_t ptx_len;
    tir_cg_pipeline pipeline;
} cg_cache_value;
/* Fills key for kernel under o (after tir_codegen's adjustments of o);
 * false when o bypasses the cache (no_cache, LLVM IR asked for). */
bool cg_cache_key(tir_ctx *ctx, const tir_prim_func *kernel, const tir_codegen_opts *o,
                  cg_cache_key_t *key);
/* Looks key up (memory, then disk); a hit's PTX is copied into ctx's arena. */
tir_cg_cache_hit cg_cache_find(tir_ctx *ctx, const cg_cache_key_t *key, cg_cache_value *v);
/* Keeps v under key (a copy: in memory, and on disk when key->dir is set);
 * failures only cost the entry. */
void cg_cache_store(const cg_cache_key_t *key, const cg_cache_value *v);

#endif
