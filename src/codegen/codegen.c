/* codegen.c: tir_codegen, from a lowered kernel to PTX.
 *
 * Order of work: check the kernel against the lowered form (no LLVM yet),
 * emit LLVM IR into a fresh LLVMContext (one per call, so concurrent calls
 * on different ctxs do not share LLVM state), verify it, run the O3
 * pipeline (or a short one for kernels without loops for LLVM to unroll:
 * TIR_CG_PIPELINE_SHORT, from facts emission records), and let the NVPTX
 * backend (at a level tir_cg_pipeline picks) print PTX into memory.  LLVM
 * reports some backend errors through the context's diagnostic handler,
 * whose default exits the process; ours records the first error instead.
 */
#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/Support.h>
#include <pthread.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

static const char *const nvptx_triple = "nvptx64-nvidia-cuda";

void tir_codegen_opts_init(tir_codegen_opts *o) {
    memset(o, 0, sizeof *o);
    o->arch = "sm_90";
    o->fma_contract = true;
    o->opt_level = 3;
    /* FAST: the same kernel speed at 4095^3, 4096^3 and 1000x520x333 for
     * Steps 4-8 on the H200 (docs/performance.md, 2026-12-03), less
     * emission time; SHORT: FAST with less optimisation time where the
     * kernel allows, with the same PTX counts for the seed's Steps 7-9;
     * DIRECT: no LLVM for the kernels the direct emitter takes, the same
     * kernel speed for Step 8 at the sizes of issue 13 (within 0.3%, run
     * 153) in a tenth of the compile time; SHORT for the others */
    o->pipeline = TIR_CG_PIPELINE_DIRECT;
    /* MINITIR_CG_PIPELINE=opt|fast|short|direct|direct-unroll|direct-all: another default, so that
     * whole test suites and benchmarks run with one pipeline (A/B runs) */
    const char *env = getenv("MINITIR_CG_PIPELINE");
    if (env && !strcmp(env, "opt")) o->pipeline = TIR_CG_PIPELINE_OPT;
    if (env && !strcmp(env, "fast")) o->pipeline = TIR_CG_PIPELINE_FAST;
    if (env && !strcmp(env, "short")) o->pipeline = TIR_CG_PIPELINE_SHORT;
    if (env && !strncmp(env, "direct", 6)) o->pipeline = TIR_CG_PIPELINE_DIRECT;
    o->direct_all_loops = env && !strcmp(env, "direct-all");
    o->direct_unroll = env && !strcmp(env, "direct-unroll");
    o->ssa_locals = true;
}

/* Loop strength reduction.  The NVPTX backend runs LLVM's LSR before
 * instruction selection; on GPU kernels it often rewrites a loop's 32-bit
 * counter into a 64-bit byte offset compared after a truncation, a loop
 * ptxas no longer recognises as counted, so it does not unroll it: the
 * seed's Step 5 ran at half the speed of Step 4 for one such loop
 * (docs/performance.md, 2026-12-02 run 16).  ptxas does its own strength
 * reduction, so LSR is off unless a kernel asks for it
 * (loop_strength_reduction = 1; some fully unrolled kernels gain from it).
 * LLVM reads the switch, a process-wide command-line option, when it
 * builds the backend's pipeline; emissions with LSR off share a read
 * lock, an emission that turns it on holds the write lock throughout. */
static pthread_rwlock_t lsr_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_once_t lsr_once = PTHREAD_ONCE_INIT;

static void lsr_set(bool disable) {
    const char *argv[] = {"minitir", disable ? "-disable-lsr=true" : "-disable-lsr=false"};
    LLVMParseCommandLineOptions(2, argv, NULL);
}

static void lsr_init(void) { lsr_set(true); }

static void lsr_acquire(bool lsr) {
    pthread_once(&lsr_once, lsr_init);
    if (!lsr) {
        pthread_rwlock_rdlock(&lsr_lock);
        return;
    }
    pthread_rwlock_wrlock(&lsr_lock);
    lsr_set(false);
}

static void lsr_release(bool lsr) {
    if (lsr) lsr_set(true);
    pthread_rwlock_unlock(&lsr_lock);
}

typedef struct diag_state {
    char *msg; /* first error, heap */
} diag_state;

static void diag_handler(LLVMDiagnosticInfoRef di, void *user) {
    diag_state *d = user;
    if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || d->msg) return;
    char *s = LLVMGetDiagInfoDescription(di);
    d->msg = ir_xstrdup(s ? s : "?");
    LLVMDisposeMessage(s);
}

/* A kernel name PTX accepts. */
static const char *entry_name(tir_ctx *ctx, const char *name) {
    size_t n = strlen(name);
    char *s = tir_ctx_alloc(ctx, n + 2);
    char *p = s;
    if (n == 0 || (name[0] >= '0' && name[0] <= '9')) *p++ = '_';
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        *p++ = ok ? c : '_';
    }
    *p = 0;
    return s;
}

static bool dump_wanted(const tir_codegen_opts *o) {
    return o->dump_llvm || ir_dump_wanted("llvm", false);
}

static void dump_module(LLVMModuleRef mod, const char *what, const char *name) {
    char *s = LLVMPrintModuleToString(mod);
    fprintf(stderr, "=== minitir: LLVM IR of %s %s ===\n%s", name, what, s);
    LLVMDisposeMessage(s);
}

static const char *arena_copy(tir_ctx *ctx, const char *s, size_t n) {
    char *d = tir_ctx_alloc(ctx, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* The NVPTX backend's level.  At Aggressive its IR passes run GVN twice
 * before instruction selection, at Default EarlyCSE: for the Step 8
 * kernel GVN is ~30% of the backend's time and ptxas makes nearly the
 * same code either way (docs/performance.md, compile time), hence the
 * fast pipeline's choice.  At Less (the short pipeline's) it skips a few
 * more IR passes; the PTX of the seed's Steps 1-9 is byte-identical to
 * Default's. */
static LLVMCodeGenOptLevel backend_level(const tir_codegen_opts *o) {
    if (o->opt_level == 0) return LLVMCodeGenLevelNone;
    if (o->opt_level == 1) return LLVMCodeGenLevelLess;
    if (o->opt_level == 2 || o->pipeline == TIR_CG_PIPELINE_FAST) return LLVMCodeGenLevelDefault;
    if (o->pipeline == TIR_CG_PIPELINE_SHORT) return LLVMCodeGenLevelLess;
    return LLVMCodeGenLevelAggressive;
}

/* The short pipeline (TIR_CG_PIPELINE_SHORT): the passes of default<O3>
 * that change the PTX of the kernels it is for (the seed's Steps 7-9 at
 * 4096^3, 4095^3, 1000x520x333, split-K, tensor cores), found by leaving
 * out each pass in turn and keeping it out when no kernel's PTX changed
 * (docs/performance.md); plus always-inline (cg_math_fn's helpers) and
 * speculative execution (without it split-K at 1000x520x333 spilled).
 * Without loops to unroll, the unrollers and vectorisers have nothing to
 * do.  O3's second LICM (after GVN) went too, once cg_emit kept vector
 * accesses of local arrays as SSA values: the PTX of all those kernels is
 * byte-identical without it, and it was the dearer of the two (its
 * MemorySSA rebuilt after GVN: ~2 of Step 8's ~17 ms CPU in opt-19).
 * Fourth round: O3's GVN became EarlyCSE with MemorySSA and O3's last
 * VectorCombine went.  On the kernels above, what GVN still did after
 * the first EarlyCSE<memssa> was CSE of the address arithmetic the second
 * InstCombine re-forms, which EarlyCSE does as well (the same optimised IR
 * for Step 8 4096^3), at ~15% of the pipeline's instructions executed
 * (callgrind); every kernel's PTX is byte-identical except ragged split-K's
 * small summation kernel (a mul.wide for a cvt+shl). */
#define CG_SIMPLIFYCFG(opts)                                                                       \
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;no-switch-to-lookup;"              \
    "keep-loops;" opts ";speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>"
#define CG_INSTCOMBINE "instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>"
#define CG_NO_HOIST_SINK "no-hoist-common-insts;no-sink-common-insts"
static const char short_passes[] =
    "always-inline,"
    "function(nvvm-intr-range,"
    CG_SIMPLIFYCFG("no-switch-range-to-icmp;" CG_NO_HOIST_SINK) ","
    "sroa<modify-cfg>,early-cse<>),"
    "ipsccp,"
    "function(" CG_INSTCOMBINE ",early-cse<memssa>,"
    "speculative-execution<only-if-divergent-target>,reassociate,"
    "loop-mssa(loop-rotate<header-duplication;no-prepare-for-lto>),"
    "loop-mssa(licm<allowspeculation>),"
    CG_SIMPLIFYCFG("switch-range-to-icmp;" CG_NO_HOIST_SINK) ","
    CG_INSTCOMBINE ",loop(indvars),vector-combine,early-cse<memssa>,"
    CG_SIMPLIFYCFG("switch-range-to-icmp;hoist-common-insts;sink-common-insts") ")";

/* Whether a kernel may get the short pipeline (tir_cg_pipeline). */
static bool short_ok(const cg_emit_facts *f) {
    return !f->var_local && !f->unroll_hint && f->min_loop_body >= CG_SHORT_MIN_BODY &&
           f->min_loop_work >= CG_SHORT_MIN_WORK;
}

/* Runs the optimisation pipeline on mod: default<On>, or the short one
 * where o asks for it and the kernel qualifies (m->pipeline says which). */
static tir_status optimise(tir_ctx *ctx, const tir_prim_func *kernel, const tir_codegen_opts *o,
                           const cg_emit_facts *facts, LLVMModuleRef mod, LLVMTargetMachineRef tm,
                           tir_module *m) {
    char passes[32];
    snprintf(passes, sizeof passes, "default<O%d>", o->opt_level);
    m->pipeline = o->pipeline;
    if (o->pipeline == TIR_CG_PIPELINE_SHORT && !(o->opt_level == 3 && short_ok(facts)))
        m->pipeline = TIR_CG_PIPELINE_FAST;
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e =
        LLVMRunPasses(mod, m->pipeline == TIR_CG_PIPELINE_SHORT ? short_passes : passes, tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (!e) return TIR_OK;
    char *msg = LLVMGetErrorMessage(e);
    tir_status s = tir_ctx_fail(ctx, TIR_ERR_LLVM, "codegen: LLVM optimisation of '%s' failed: %s",
                                kernel->name, msg);
    LLVMDisposeErrorMessage(msg);
    return s;
}

/* The LLVM half of tir_codegen: everything made here is freed here. */
const char *cg_features(const tir_codegen_opts *o) {
    const tir_target *t = tir_target_find(o->arch);
    return o->features ? o->features : t ? t->ptx_features : NULL;
}

static tir_status run_llvm(tir_ctx *ctx, const tir_prim_func *kernel, const cg_info *info,
                           const tir_codegen_opts *o, const char *name,
                           tir_module *m) {
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(nvptx_triple, &target, &err)) {
        tir_status s =
            tir_ctx_fail(ctx, TIR_ERR_LLVM, "codegen: %s", err ? err : "no NVPTX target");
        LLVMDisposeMessage(err);
        return s;
    }
    const char *features = cg_features(o);
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, nvptx_triple, o->arch, features,
                                                      backend_level(o), LLVMRelocDefault,
                                                      LLVMCodeModelDefault);
    if (!tm)
        return tir_ctx_fail(ctx, TIR_ERR_LLVM,
                            "codegen: LLVM could not create a target "
                            "machine for %s (%s)",
                            o->arch, features);
    LLVMContextRef lc = LLVMContextCreate();
    diag_state diag = {0};
    LLVMContextSetDiagnosticHandler(lc, diag_handler, &diag);
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(name, lc);
    LLVMSetTarget(mod, nvptx_triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    char *dl = LLVMCopyStringRepOfTargetData(td);
    LLVMSetDataLayout(mod, dl);
    LLVMDisposeMessage(dl);
    LLVMDisposeTargetData(td);

    bool dump = dump_wanted(o);
    int64_t shared = 0;
    double t0 = ir_now_ms();
    cg_emit_facts facts;
    tir_status s = cg_emit_kernel(ctx, kernel, info, o, mod, name, false, &shared, &facts);
    /* emission places the buffers as cg_check's layout says */
    TIR_ASSERT(s != TIR_OK || shared == info->shared_bytes);
    *(info->dyn_shared ? &m->dyn_shared_bytes : &m->shared_bytes) = shared;
    if (s == TIR_OK && dump) dump_module(mod, "before optimisation", name);
    if (s == TIR_OK && LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) {
        s = tir_ctx_fail(ctx, TIR_ERR_LLVM, "codegen: LLVM rejects the module of '%s': %s",
                         kernel->name, err ? err : "?");
    }
    LLVMDisposeMessage(err);
    err = NULL;
    double t1 = ir_now_ms();
    m->build_ms = t1 - t0;
    if (s == TIR_OK) s = optimise(ctx, kernel, o, &facts, mod, tm, m);
    if (s == TIR_OK) cg_ptxas_guard(mod, false); /* after the passes, which could re-form a pattern */
    double t2 = ir_now_ms();
    m->opt_ms = t2 - t1;
    if (s == TIR_OK) {
        if (dump) dump_module(mod, "after optimisation", name);
        if (o->keep_llvm_ir) { /* on demand: nothing else reads it */
            char *ir = LLVMPrintModuleToString(mod);
            m->llvm_ir = arena_copy(ctx, ir, strlen(ir));
            LLVMDisposeMessage(ir);
            double t3 = ir_now_ms();
            m->ir_text_ms = t3 - t2;
            t2 = t3;
        }
        LLVMMemoryBufferRef buf = NULL;
        lsr_acquire(info->lsr);
        LLVMBool failed = LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf);
        lsr_release(info->lsr);
        if (failed) {
            s = tir_ctx_fail(ctx, TIR_ERR_LLVM, "codegen: PTX emission of '%s' failed: %s",
                             kernel->name, err ? err : "?");
            LLVMDisposeMessage(err);
        } else {
            m->ptx_len = LLVMGetBufferSize(buf);
            m->ptx = arena_copy(ctx, LLVMGetBufferStart(buf), m->ptx_len);
            LLVMDisposeMemoryBuffer(buf);
        }
        m->ptx_ms = ir_now_ms() - t2;
    }
    if (s == TIR_OK && diag.msg)
        s = tir_ctx_fail(ctx, TIR_ERR_LLVM, "codegen: LLVM error in '%s': %s", kernel->name,
                         diag.msg);
    free(diag.msg);
    LLVMDisposeModule(mod);
    LLVMContextDispose(lc);
    LLVMDisposeTargetMachine(tm);
    return s;
}

/* run_llvm through the codegen cache (cg_cache.c): a hit gives the PTX
 * and pipeline LLVM gave before; the shared bytes are the layout's, as
 * run_llvm checks. */
static tir_status cached_llvm(tir_ctx *ctx, const tir_prim_func *kernel, const cg_info *info,
                              const tir_codegen_opts *o, tir_module *m) {
    double t0 = ir_now_ms();
    cg_cache_key_t key;
    cg_cache_value v;
    bool use = cg_cache_key(ctx, kernel, o, &key);
    m->cache_hit = use ? cg_cache_find(ctx, &key, &v) : TIR_CG_CACHE_MISS;
    m->cache_ms = ir_now_ms() - t0;
    if (m->cache_hit != TIR_CG_CACHE_MISS) {
        m->ptx = v.ptx;
        m->ptx_len = v.ptx_len;
        m->pipeline = v.pipeline;
        *(info->dyn_shared ? &m->dyn_shared_bytes : &m->shared_bytes) = info->shared_bytes;
        return TIR_OK;
    }
    TIR_TRY(run_llvm(ctx, kernel, info, o, m->kernel_name, m));
    if (use) {
        double t1 = ir_now_ms();
        cg_cache_store(&key, &(cg_cache_value){m->ptx, m->ptx_len, m->pipeline});
        m->cache_ms += ir_now_ms() - t1;
    }
    return TIR_OK;
}

/* The direct emitter where it is asked for and takes the kernel (not when
 * LLVM IR is asked for, unless direct_only), else LLVM with SHORT's choice
 * of pipeline (direct_only: an error with the emitter's reason). */
static tir_status direct_or_llvm(tir_ctx *ctx, const tir_prim_func *kernel, const cg_info *info,
                                 tir_codegen_opts *o, tir_module *m) {
    if (o->pipeline != TIR_CG_PIPELINE_DIRECT) return cached_llvm(ctx, kernel, info, o, m);
    o->pipeline = TIR_CG_PIPELINE_SHORT;
    if (!o->direct_only && (o->keep_llvm_ir || dump_wanted(o))) return cached_llvm(ctx, kernel, info, o, m);
    if (cg_direct_ptx(ctx, kernel, info, o, m->kernel_name, m)) {
        m->pipeline = TIR_CG_PIPELINE_DIRECT;
        return TIR_OK;
    }
    if (o->direct_only)
        return tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED, "codegen: the direct emitter refuses kernel '%s': %s",
                            kernel->name, m->direct_refusal);
    return cached_llvm(ctx, kernel, info, o, m);
}

/* Static shared arrays up to the target's 48 KiB, which is what a launch
 * gets without opting in; past it (or with opts->dynamic_shared) one
 * dynamic array, for which the runtime raises the kernel's limit and
 * launches with dyn_shared_bytes.  Past the opt-in maximum: a user error
 * naming the buffers. */
static tir_status shared_placement(tir_ctx *ctx, const tir_prim_func *kernel,
                                   const tir_codegen_opts *o, const tir_target *t, cg_info *info) {
    if (info->shared_bytes > t->limits.max_shared_dynamic)
        return tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED,
                            "codegen: kernel '%s' needs %lld bytes of shared memory per block, "
                            "more than %s's opt-in maximum of %lld: %s",
                            kernel->name, (long long)info->shared_bytes, t->arch,
                            (long long)t->limits.max_shared_dynamic, info->shared_names);
    info->dyn_shared = info->shared_bytes > t->limits.max_shared_static ||
                       (o->dynamic_shared && info->shared_bytes > 0);
    return TIR_OK;
}

/* A kernel with wgmma_sync (cg_check: the target is sm_90 or sm_90a) is
 * emitted for sm_90a, whose PTX (`.target sm_90a`, PTX ISA 8.0) has
 * wgmma; the driver's JIT runs it on compute capability 9.0 devices only,
 * which is what an sm_90 target means.  Every other kernel keeps its
 * target.  Features given in o that ask for a PTX ISA before 8.0 are a
 * user error (LLVM would print PTX that ptxas rejects). */
static tir_status wgmma_target(tir_ctx *ctx, const tir_prim_func *kernel, tir_codegen_opts *o,
                               const tir_target **target) {
    if (strcmp(o->arch, "sm_90") == 0) o->arch = "sm_90a";
    *target = tir_target_find(o->arch);
    TIR_ASSERT(*target);
    const char *features = cg_features(o);
    if (cg_ptx_version(features) >= CG_WGMMA_PTX) return TIR_OK;
    return tir_ctx_fail(ctx, TIR_ERR_ARCH,
                        "codegen: kernel '%s' uses wgmma_sync, which needs PTX ISA 8.0 or later; "
                        "the features '%s' ask for an older one",
                        kernel->name, features ? features : "");
}

tir_status tir_codegen(tir_ctx *ctx, const tir_prim_func *kernel, const tir_codegen_opts *opts,
                       const tir_module **out) {
    double t0 = ir_now_ms();
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!out || !kernel)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "codegen: no kernel or no output");
    *out = NULL;
    tir_codegen_opts o;
    if (opts)
        o = *opts;
    else
        tir_codegen_opts_init(&o);
    if (!o.arch) o.arch = "sm_90";
    TIR_TRY(tir_codegen_check_arch(ctx, o.arch));
    if (o.opt_level < 0 || o.opt_level > 3)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "codegen: opt_level %d is not in 0..3",
                            o.opt_level);
    if (o.pipeline != TIR_CG_PIPELINE_OPT && o.pipeline != TIR_CG_PIPELINE_FAST &&
        o.pipeline != TIR_CG_PIPELINE_SHORT && o.pipeline != TIR_CG_PIPELINE_DIRECT)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "codegen: pipeline %d is not a tir_cg_pipeline",
                            (int)o.pipeline);
    cg_info info;
    const tir_target *target = tir_target_find(o.arch);
    TIR_ASSERT(target); /* tir_codegen_check_arch accepted it */
    TIR_TRY(cg_check(ctx, kernel, target, &info));
    if (info.wgmma) TIR_TRY(wgmma_target(ctx, kernel, &o, &target));
    TIR_TRY(shared_placement(ctx, kernel, &o, target, &info));
    cg_llvm_init();

    tir_module *m = IR_NEW(ctx, tir_module);
    m->kernel_name = entry_name(ctx, kernel->name);
    m->arch = tir_intern(ctx, o.arch);
    TIR_TRY(direct_or_llvm(ctx, kernel, &info, &o, m));

    tir_kernel_param *ps = IR_NEWN(ctx, tir_kernel_param, kernel->nparams);
    for (int i = 0; i < kernel->nparams; i++) {
        const tir_buffer *b = kernel->buffer_map[i];
        ps[i].var = kernel->params[i];
        ps[i].buffer = b;
        ps[i].kind = b ? TIR_PARAM_BUFFER : TIR_PARAM_SCALAR;
        ps[i].name = b ? b->name : kernel->params[i]->name;
        ps[i].dtype = b ? b->dtype : kernel->params[i]->base.dtype;
        ps[i].read_only = b && !info.written[i];
    }
    m->nparams = kernel->nparams;
    m->params = ps;
    for (int i = 0; i < CG_NAXES; i++) {
        tir_launch_dim *d = i < 3 ? &m->grid[i] : &m->block[i - 3];
        d->extent = info.dims[i] ? info.dims[i] : tir_i32(ctx, 1);
        d->is_const = tir_expr_const_int(d->extent, &d->value);
        if (!d->is_const) d->value = 0;
        d->zero_ok = (info.empty_ok >> i) & 1u;
    }
    TIR_TRY(tir_launch_plan_build(ctx, kernel, &info.launch, &m->launch_plan));
    m->compile_ms = ir_now_ms() - t0;
    *out = m;
    return TIR_OK;
}

/* ---------------------------------------------------------- launch sizes */

/* The module's launch sizes, by lowering's one launch-time check
 * (tir_launch_plan_eval, the simulator's too) with the scalar arguments. */
tir_status tir_module_launch_dims(tir_ctx *ctx, const tir_module *m, int nargs, const tir_arg *args,
                                  int64_t grid[3], int64_t block[3]) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!m || !grid || !block || (nargs > 0 && !args))
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "launch dims: missing argument");
    if (!m->launch_plan)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "launch dims: module '%s' has no launch plan (not made by tir_codegen)",
                            m->kernel_name ? m->kernel_name : "?");
    /* Parameters past nargs are left out: using one is "too few arguments". */
    int n = nargs < m->nparams ? nargs : m->nparams;
    const tir_var **vars = calloc((size_t)(n > 0 ? n : 1), sizeof *vars);
    int64_t *values = calloc((size_t)(n > 0 ? n : 1), sizeof *values);
    tir_status s = vars && values ? TIR_OK
                                  : tir_ctx_fail(ctx, TIR_ERR_NOMEM, "launch dims: out of memory");
    for (int i = 0; s == TIR_OK && i < n; i++) {
        vars[i] = m->params[i].var;
        values[i] = args[i].scalar;
    }
    int64_t dims[TIR_NLAUNCH_AXES];
    if (s == TIR_OK) s = tir_launch_plan_eval(ctx, m->launch_plan, n, vars, values, dims);
    for (int i = 0; s == TIR_OK && i < 3; i++) {
        grid[i] = dims[i];
        block[i] = dims[3 + i];
    }
    free(vars);
    free(values);
    return s;
}
