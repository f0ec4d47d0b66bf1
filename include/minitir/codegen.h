/* minitir/codegen.h: code generation through LLVM (NVPTX).
 *
 * This layer is the only one that sees LLVM.  LLVM 19 is linked statically
 * into libminitir with its symbols hidden, so programs that use minitir do
 * not need LLVM installed.
 */
#ifndef MINITIR_CODEGEN_H
#define MINITIR_CODEGEN_H

#include "minitir/ir.h"
#include "minitir/lower.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the LLVM linked into the library ("19.1.7"). */
TIR_API const char *tir_llvm_version(void);

/* Checks that `arch` ("sm_80", "sm_90", "sm_90a") names a GPU the linked
 * LLVM can generate code for.  Returns TIR_OK, or TIR_ERR_UNSUPPORTED with a
 * message listing what is supported. */
TIR_API tir_status tir_codegen_check_arch(tir_ctx *ctx, const char *arch);
/* Whether codegen emits wgmma_sync for `arch` ("sm_90" or "sm_90a": such
 * kernels are built for sm_90a); the tensor-core rule's default and tirc
 * ask it before choosing wgmma. */
TIR_API bool tir_codegen_arch_has_wgmma(const char *arch);

/* ------------------------------------------------------------------ codegen
 *
 * tir_codegen turns a lowered kernel (the form described in
 * docs/lowered-ir.md: a prim_func of flattened buffers, thread-binding loops
 * for the launch dimensions, Allocate for shared/local arrays) into PTX.
 */

/* Which LLVM pipelines tir_codegen runs (tir_codegen_opts.pipeline). */
typedef enum tir_cg_pipeline {
    /* default<On> (n = opt_level), NVPTX backend at the same level: the
     * original pipeline */
    TIR_CG_PIPELINE_OPT = 0,
    /* default<On>, NVPTX backend at LLVM's Default level when opt_level is
     * 3 (EarlyCSE instead of two GVN runs before instruction selection):
     * less PTX emission time; see docs/performance.md for the PTX
     * comparison */
    TIR_CG_PIPELINE_FAST,
    /* FAST, except that the NVPTX backend runs at LLVM's Less level (the
     * same PTX as Default for all of the seed's kernels compared), and
     * that at opt_level 3 a kernel whose loops LLVM's optimisation would
     * not unroll gets a short pass pipeline (no unrollers or vectorisers;
     * ~60% of default<O3>'s time) instead of default<O3>: every local
     * array is indexed by constants only (after the unrolling codegen does
     * itself), no loop asks LLVM to unroll it, and every loop
     * body has at least 600 emitted instructions (LLVM's O3 unroller
     * leaves bodies that large alone).  The seed's Steps 7-9 qualify,
     * Steps 1-6 do not.  See docs/performance.md for the rule's measures
     * and the PTX comparison. */
    TIR_CG_PIPELINE_SHORT,
    /* No LLVM: the PTX printed directly from the kernel (src/codegen/
     * cg_direct.c) for kernels in that emitter's subset (int32/int64
     * indices, float32 and int32 data without float comparisons or math
     * calls, local arrays indexed by constants after unrolling, dense
     * vector accesses, ragged tiles' guarded copies, syncthreads,
     * cp_async; docs/lowered-ir.md), in a few ms; any other kernel gets
     * SHORT, and tir_module.direct_refusal says why.  The PTX assembler
     * then does the optimisation LLVM would have done. */
    TIR_CG_PIPELINE_DIRECT,
} tir_cg_pipeline;

/* tir_codegen's options.  Every field that can change the PTX is part of
 * the codegen cache's key (src/codegen/cg_cache.c, opts_text): a new one
 * must be added there, or a cached kernel would get another option's PTX. */
typedef struct tir_codegen_opts {
    const char *arch;     /* "sm_80", "sm_90" (default), ... see check_arch */
    const char *features; /* LLVM NVPTX features; NULL: "+ptx78" ("+ptx80" for sm_90a) */
    bool fma_contract;    /* let a*b+c on floats fuse into fma (default true) */
    int opt_level;        /* 0..3 (default 3): pipeline default<On> */
    tir_cg_pipeline pipeline; /* default TIR_CG_PIPELINE_DIRECT (docs/performance.md);
                               * MINITIR_CG_PIPELINE=opt|fast|short|direct
                               * changes the default */
    bool keep_llvm_ir;    /* keep the optimised LLVM IR in tir_module.llvm_ir
                           * (default false: printing it costs ~3 ms for a
                           * tuned kernel) */
    bool dump_llvm;       /* print LLVM IR before/after optimisation to stderr;
                           * also enabled by the environment TIR_DUMP=llvm */
    bool dynamic_shared;  /* place shared buffers in dynamic shared memory even
                           * when they fit the 48 KiB of static shared memory
                           * (default false: only past it) */
    bool ssa_locals;      /* keep the elements of local arrays that are accessed
                           * by constant index as SSA values while emitting
                           * (register promotion at emission; default true:
                           * less IR for LLVM, see docs/performance.md) */
    bool select_zero_fill; /* a zero-filled float32 element of a read-only
                            * parameter (a ragged tile's copy) as select(guard,
                            * address, start), load, select(guard, value, 0)
                            * instead of the default predicated load
                            * (`@p ld.global.nc.f32`, inline PTX) */
    /* The codegen cache (tir_codegen_cache_clear): a kernel compiled before
     * with the same options gets the PTX LLVM made then.  no_cache: neither
     * look up nor store (default false; for measuring a cold compile).
     * keep_llvm_ir, dump_llvm and TIR_DUMP=llvm bypass it too. */
    bool no_cache;
    /* A directory for the cache's disk entries, created if missing (one
     * level), shared by processes and threads; NULL: the environment's
     * MINITIR_CACHE_DIR; NULL or "": memory only.  A library without a
     * GNU build id keeps no disk entries (tir_codegen_cache_stats).  An
     * entry is trusted: whoever can write the directory chooses the PTX
     * that kernels compiled from it run, so it should be the user's own
     * (as CUDA's compute cache is), not a world-writable one. */
    const char *cache_dir;
    /* For tests and A/B runs of the direct emitter
     * (TIR_CG_PIPELINE_DIRECT).  By default it refuses a kernel with a
     * serial loop small enough for LLVM's O3 unroller to unroll (a body
     * under 300 PTX instructions, or under 3000 of work), which LLVM then
     * compiles: its kernels ran faster (docs/performance.md, run 160).
     * direct_unroll: such loops unrolled by the emitter itself as LLVM's
     * O3 unroller would (full, partial, runtime; docs/lowered-ir.md);
     * MINITIR_CG_PIPELINE=direct-unroll sets it with DIRECT.  A kernel's
     * direct_unroll attr (root-block annotation, 0 or 1; the tuner's
     * dunroll) asks for the same for that kernel alone.
     * direct_all_loops (over direct_unroll): every serial loop left
     * rolled; MINITIR_CG_PIPELINE=direct-all sets it with DIRECT. */
    bool direct_unroll;
    bool direct_all_loops;
    /* For tests of the direct emitter (TIR_CG_PIPELINE_DIRECT): no LLVM
     * for a kernel outside its subset; tir_codegen fails with
     * TIR_ERR_UNSUPPORTED and the message "codegen: the direct emitter
     * refuses kernel '<name>': <tir_module.direct_refusal's reason>", so
     * that a fuzzer pays nothing for the kernels it cannot check.  LLVM
     * never runs with it, so it is not part of the codegen cache's key. */
    bool direct_only;
} tir_codegen_opts;

/* Fills o with the defaults. */
TIR_API void tir_codegen_opts_init(tir_codegen_opts *o);

typedef enum tir_param_kind { TIR_PARAM_BUFFER, TIR_PARAM_SCALAR } tir_param_kind;

/* One kernel parameter, in the order of the prim_func's params (and of the
 * PTX entry's parameters: buffers are 64-bit global pointers, scalars are
 * passed by value in their dtype). */
typedef struct tir_kernel_param {
    const char *name;         /* the buffer's name, or the scalar var's name */
    tir_param_kind kind;
    tir_dtype dtype;          /* buffers: element type; scalars: value type */
    const tir_var *var;       /* the prim_func parameter */
    const tir_buffer *buffer; /* buffers only */
    bool read_only;           /* a buffer the kernel never writes */
} tir_kernel_param;

/* One launch dimension: an expression of the scalar parameters. */
typedef struct tir_launch_dim {
    const tir_expr *extent; /* IntImm 1 for an axis the kernel does not use */
    bool is_const;
    int64_t value; /* the constant when is_const */
    /* Grid axes: every statement of the kernel lies inside this axis's
     * loop (tir_launch.empty_ok), so an extent of 0 at run time means there
     * is nothing to do: tir_module_launch_dims gives 0, and the runtime
     * launches nothing. */
    bool zero_ok;
} tir_launch_dim;

/* Where tir_codegen's PTX came from (tir_module.cache_hit). */
typedef enum tir_cg_cache_hit {
    TIR_CG_CACHE_MISS = 0, /* compiled by LLVM (and stored, unless the cache is
                            * bypassed: no_cache, LLVM IR asked for) */
    TIR_CG_CACHE_MEMORY,   /* this process's cache */
    TIR_CG_CACHE_DISK,     /* a disk entry (tir_codegen_opts.cache_dir) */
} tir_cg_cache_hit;

/* A compiled kernel.  Everything is owned by the ctx. */
typedef struct tir_module {
    const char *kernel_name; /* the .entry name */
    const char *arch;        /* "sm_90" (what the PTX targets, see tir_codegen) */
    const char *ptx;         /* NUL-terminated PTX text */
    size_t ptx_len;
    const char *llvm_ir; /* the optimised LLVM IR (for debugging), NULL unless
                          * tir_codegen_opts.keep_llvm_ir */
    int nparams;
    const tir_kernel_param *params;
    tir_launch_dim grid[3];  /* blockIdx.x, y, z */
    tir_launch_dim block[3]; /* threadIdx.x, y, z (always constant) */
    /* What a launch checks (tir_launch_plan_build): tir_module_launch_dims
     * evaluates the launch sizes and refuses a launch where one of the
     * kernel's loop bounds or conditions may pass its dtype (the kernel
     * would loop a wrapped count, or let a wrapped index past a guard). */
    const tir_launch_plan *launch_plan;
    int64_t shared_bytes;    /* static shared memory, bytes */
    /* Dynamic shared memory, bytes: a launch must request exactly this many
     * (after raising the kernel's limit past 48 KiB; tir_rt_program does
     * both).  Shared buffers are either all static (up to the target's
     * 48 KiB) or all in one dynamic array (past it, up to the target's
     * opt-in maximum, or with tir_codegen_opts.dynamic_shared); one of the
     * two counts is 0. */
    int64_t dyn_shared_bytes;
    double compile_ms;       /* wall time of tir_codegen, of which: */
    double build_ms;         /*   the LLVM module built from the kernel, verified */
    double opt_ms;           /*   LLVM's optimisation pipeline (default<On>) */
    double ir_text_ms;       /*   the optimised IR printed into llvm_ir (0 unless kept) */
    double ptx_ms;           /*   PTX emission by the NVPTX backend */
    /* The optimisation pipeline that ran: as asked, except that
     * TIR_CG_PIPELINE_SHORT gives TIR_CG_PIPELINE_FAST (default<On>) for
     * a kernel that does not qualify or an opt_level other than 3, and
     * TIR_CG_PIPELINE_DIRECT gives SHORT's choice for a kernel outside the
     * direct emitter's subset.  DIRECT: no LLVM phase ran (their times are
     * 0 and ptx_ms is the printing). */
    tir_cg_pipeline pipeline;
    /* Why the direct emitter (TIR_CG_PIPELINE_DIRECT) left the kernel to
     * LLVM ("a float32 comparison, ..."), NULL when it was not asked or
     * took the kernel. */
    const char *direct_refusal;
    /* Where the PTX came from: LLVM (TIR_CG_CACHE_MISS; the LLVM phases
     * above are then its times, else 0) or the codegen cache. */
    tir_cg_cache_hit cache_hit;
    double cache_ms; /* the codegen cache: its key (the kernel printed), look-up
                      * and store */
} tir_module;

/* Compiles kernel to PTX.  opts may be NULL (defaults).  On success sets
 * *out.  Errors: TIR_ERR_UNSUPPORTED for constructs outside the lowered form
 * (the message names the node), an unsupported arch, or shared memory past
 * the arch's opt-in maximum (the message names the buffers), TIR_ERR_ARCH
 * for an intrinsic the arch lacks, TIR_ERR_LLVM when LLVM rejects the
 * module (with LLVM's message), TIR_ERR_INVALID_ARG.  A kernel that uses
 * wgmma_sync is emitted for sm_90a when opts ask for sm_90 (out->arch says
 * "sm_90a"); every other kernel for opts' arch. */
TIR_API tir_status tir_codegen(tir_ctx *ctx, const tir_prim_func *kernel,
                               const tir_codegen_opts *opts, const tir_module **out);

/* ----------------------------------------------------------- codegen cache
 *
 * LLVM's part of tir_codegen (nearly all of a compile: ~25-30 ms for Step
 * 8's tuned kernel) is a function of the lowered kernel and the options
 * alone, so tir_codegen keeps its result: in memory for the process (all
 * threads), and on disk where tir_codegen_opts.cache_dir or
 * MINITIR_CACHE_DIR names a directory.  A look-up costs printing the
 * kernel (its key, with the options and the library's build id) and a
 * comparison; an entry is used only when its whole key is equal, so a
 * rebuilt library, another LLVM or another option never gets an older
 * PTX.  A corrupt or foreign disk entry is a miss (and is replaced); disk
 * errors never fail a compile.  src/codegen/cg_cache.c has the details. */

/* Counters since the process started (the entries and bytes: now). */
typedef struct tir_codegen_cache_stats {
    long entries;      /* in memory */
    size_t bytes;      /* in memory (keys, PTX, bookkeeping) */
    size_t limit;      /* tir_codegen_cache_set_limit (default 64 MiB) */
    long memory_hits, disk_hits, misses, stores;
    bool disk_enabled; /* the library has a build id, so disk entries are kept */
} tir_codegen_cache_stats;

/* Forgets the in-memory entries (disk entries stay): what a new process
 * would find, for tests and measurements. */
TIR_API void tir_codegen_cache_clear(void);
/* Caps the in-memory cache at `bytes` (the oldest entries go first; 0 keeps
 * nothing in memory).  An entry larger than the cap is not kept. */
TIR_API void tir_codegen_cache_set_limit(size_t bytes);
/* Fills s with the cache's counters and size (s may be NULL: nothing). */
TIR_API void tir_codegen_cache_get_stats(tir_codegen_cache_stats *s);
/* Trims the disk cache in dir to at most max_bytes of entries, the least
 * recently used first (a hit refreshes an entry's time), and removes
 * temporary files older than an hour (left by a killed writer).  Only the
 * cache's own files (16 hex digits and .ptx or .tmp...) are touched.
 * tir_codegen does this itself on a process's first store to disk and
 * every 64th after, with the limit MINITIR_CACHE_MAX_MB (MiB, default
 * 1024).  Returns the number of files removed, or -1 when dir cannot be
 * read. */
TIR_API int tir_codegen_cache_trim(const char *dir, size_t max_bytes);

/* Lowers a scheduled function with the default lowering options
 * (tir_lower, minitir/lower.h) and compiles the kernel (tir_codegen).
 * Errors are those of either step. */
TIR_API tir_status tir_build(tir_ctx *ctx, const tir_prim_func *scheduled,
                             const tir_codegen_opts *opts, const tir_module **out);

/* ------------------------------------------------------- several kernels
 *
 * A function that lowers to several kernels (tir_lower_kernels: split-K's
 * partial sums and their sum) compiles to one module per kernel, each
 * with its own .entry, launch dimensions and parameters.
 */

typedef struct tir_module_set {
    int nmodules;
    const tir_module *const *modules; /* in launch order */
    /* The function's own parameters: the first nparams of every module's
     * parameters (the rest are the workspace buffers, in order). */
    int nparams;
    /* Workspace buffers as in tir_kernel_set: global buffers of constant
     * shape the caller allocates and passes to every module after the
     * function's parameters; their contents carry from one kernel to the
     * next, nothing initialises them. */
    int nworkspace;
    const tir_buffer *const *workspace;
} tir_module_set;

/* Compiles each kernel of ks (tir_codegen with opts, which may be NULL).
 * nparams is the function's own parameter count (the scheduled function's
 * nparams).  Errors are tir_codegen's, the message prefixed with the
 * kernel's name. */
TIR_API tir_status tir_codegen_kernels(tir_ctx *ctx, const tir_kernel_set *ks, int nparams,
                                       const tir_codegen_opts *opts, tir_module_set *out);

/* Lowers a scheduled function that may need several kernels with the
 * default lowering options (tir_lower_kernels) and compiles each
 * (tir_codegen_kernels).  A function without global intermediates gives
 * one module, tir_build's, and no workspace.  Errors are those of either
 * step. */
TIR_API tir_status tir_build_kernels(tir_ctx *ctx, const tir_prim_func *scheduled,
                                     const tir_codegen_opts *opts, tir_module_set *out);
/* tir_build_kernels with lowering options lower (NULL: the defaults, as
 * tir_build_kernels), e.g. tir_lower_opts.pipeline_peel_tail for A/B
 * comparisons. */
TIR_API tir_status tir_build_kernels_with(tir_ctx *ctx, const tir_prim_func *scheduled,
                                          const tir_lower_opts *lower,
                                          const tir_codegen_opts *opts, tir_module_set *out);

/* Evaluates the grid and block sizes for the given arguments (args as for
 * tir_interp_run: args[i].scalar for scalar params; buffer entries are
 * ignored), through the module's launch plan (tir_launch_plan_eval, the
 * simulator's check too).  Fails with TIR_ERR_INVALID_ARG when a size is
 * not positive or not computable (division by zero, nargs too small), or
 * a loop bound or condition of the kernel may pass its dtype at these
 * arguments; a grid size of 0 is given (TIR_OK) on an axis whose
 * tir_launch_dim.zero_ok is set: the kernel has nothing to do (an empty
 * tensor), and tir_rt_program_launch then launches nothing. */
TIR_API tir_status tir_module_launch_dims(tir_ctx *ctx, const tir_module *m, int nargs,
                                          const tir_arg *args, int64_t grid[3],
                                          int64_t block[3]);

#ifdef __cplusplus
}
#endif
#endif
