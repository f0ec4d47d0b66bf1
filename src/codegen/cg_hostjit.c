/* cg_hostjit.c: running lowered kernels on the host, for tests only.
 *
 * PTX cannot run here, but the IR codegen emits can: compiled in host mode
 * (cg_emit_kernel's `host`) and JIT-compiled with LLVM's ORC for the host
 * CPU, a kernel without thread cooperation computes the same values as on
 * the GPU (the arithmetic, casts, floor division and math expansions are
 * target-independent IR).  The tests use it to check semantics and the
 * accuracy of the math functions.  This file is linked into test programs
 * only, together with LLVM's ORC and native target libraries.
 */
#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <string.h>

#include "cg_hostjit.h"
#include "cg_internal.h"

struct cg_jit {
    LLVMOrcLLJITRef jit;
    void (*fn)(void **);
};

static tir_status llvm_err(tir_ctx *ctx, const char *what, LLVMErrorRef e) {
    char *m = LLVMGetErrorMessage(e);
    tir_status s = tir_ctx_fail(ctx, TIR_ERR_LLVM, "host jit: %s: %s", what, m);
    LLVMDisposeErrorMessage(m);
    return s;
}

/* void wrapper(void **args): loads scalars through args[i], passes buffer
 * pointers as they are, and calls the kernel. */
static void build_wrapper(LLVMModuleRef mod, LLVMValueRef kernel, const tir_prim_func *f) {
    LLVMContextRef lc = LLVMGetModuleContext(mod);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(lc, 0);
    LLVMValueRef w = LLVMAddFunction(mod, "tir_jit_wrapper",
                                     LLVMFunctionType(LLVMVoidTypeInContext(lc), &ptr, 1, 0));
    LLVMBuilderRef b = LLVMCreateBuilderInContext(lc);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(lc, w, "entry"));
    LLVMTypeRef kty = LLVMGlobalGetValueType(kernel);
    int n = f->nparams;
    LLVMValueRef *args = ir_xmalloc(sizeof *args * (size_t)(n ? n : 1));
    LLVMTypeRef *pts = ir_xmalloc(sizeof *pts * (size_t)(n ? n : 1));
    LLVMGetParamTypes(kty, pts);
    for (int i = 0; i < n; i++) {
        LLVMValueRef idx = LLVMConstInt(LLVMInt64TypeInContext(lc), (unsigned long long)i, 0);
        LLVMValueRef slot = LLVMBuildGEP2(b, ptr, LLVMGetParam(w, 0), &idx, 1, "");
        LLVMValueRef p = LLVMBuildLoad2(b, ptr, slot, "");
        args[i] = f->buffer_map[i] ? p : LLVMBuildLoad2(b, pts[i], p, "");
    }
    LLVMBuildCall2(b, kty, kernel, args, (unsigned)n, "");
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    free(args);
    free(pts);
}

/* Whether i calls a float16 fma or fmuladd, scalar or vector. */
static bool is_f16_fma(LLVMValueRef i) {
    if (!LLVMIsACallInst(i)) return false;
    LLVMValueRef callee = LLVMGetCalledValue(i);
    if (!callee || !LLVMIsAFunction(callee)) return false;
    size_t len;
    const char *name = LLVMGetValueName2(callee, &len);
    if (strncmp(name, "llvm.fma.", 9) && strncmp(name, "llvm.fmuladd.", 13)) return false;
    LLVMTypeRef t = LLVMTypeOf(i);
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
    return LLVMGetTypeKind(t) == LLVMHalfTypeKind;
}

/* x86 without AVX512-FP16 has no float16 fma: LLVM computes it in float32
 * and rounds again to float16, a double rounding (fma(92.625, 2.5, 2^-24)
 * is 231.5625 in float32, a float16 tie, 231.5 instead of 231.625).  The
 * GPU's fma.rn.f16 and the interpreter round once, so on the host each
 * float16 fma becomes fptrunc(fma(double a, b, c)): the product of two
 * float16 is exact in double and the sum of anything inside float16's
 * range too, so that is the one rounding.  fmuladd (fused or not, as the
 * target likes) is taken fused, as NVPTX does.  Host JIT only: the PTX
 * path is untouched.  Returns the number of calls rewritten. */
static int exact_f16_fma(LLVMModuleRef mod) {
    LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
    LLVMTypeRef dbl = LLVMDoubleTypeInContext(LLVMGetModuleContext(mod));
    int n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb), next; i; i = next) {
                next = LLVMGetNextInstruction(i);
                if (!is_f16_fma(i)) continue;
                LLVMTypeRef t = LLVMTypeOf(i), wide = dbl;
                if (LLVMGetTypeKind(t) == LLVMVectorTypeKind)
                    wide = LLVMVectorType(dbl, LLVMGetVectorSize(t));
                LLVMPositionBuilderBefore(b, i);
                LLVMValueRef a[3];
                for (int k = 0; k < 3; k++) a[k] = LLVMBuildFPExt(b, LLVMGetOperand(i, k), wide, "");
                LLVMValueRef r = cg_call_intrinsic(mod, b, "llvm.fma", &wide, 1, a, 3);
                LLVMReplaceAllUsesWith(i, LLVMBuildFPTrunc(b, r, t, ""));
                LLVMInstructionEraseFromParent(i);
                n++;
            }
    LLVMDisposeBuilder(b);
    return n;
}

tir_status cg_jit_compile(tir_ctx *ctx, const tir_prim_func *f, const tir_codegen_opts *opts,
                          cg_jit **out) {
    *out = NULL;
    tir_codegen_opts o;
    if (opts)
        o = *opts;
    else
        tir_codegen_opts_init(&o);
    cg_info info;
    TIR_TRY(cg_check(ctx, f, tir_target_default(), &info));
    cg_llvm_init();
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();

    LLVMOrcLLJITRef jit;
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&jit, NULL);
    if (e) return llvm_err(ctx, "cannot create the JIT", e);
    LLVMOrcDefinitionGeneratorRef gen;
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit),
                                                             NULL, NULL);
    if (e) {
        LLVMOrcDisposeLLJIT(jit);
        return llvm_err(ctx, "cannot search the process", e);
    }
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);

    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef lc = LLVMOrcThreadSafeContextGetContext(tsc);
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("hostjit", lc);
    LLVMSetTarget(mod, LLVMOrcLLJITGetTripleString(jit));
    LLVMSetDataLayout(mod, LLVMOrcLLJITGetDataLayoutStr(jit));
    int64_t shared = 0;
    tir_status s = cg_emit_kernel(ctx, f, &info, &o, mod, "tir_jit_kernel", true, &shared, NULL);
    char *err = NULL;
    if (s == TIR_OK) {
        build_wrapper(mod, LLVMGetNamedFunction(mod, "tir_jit_kernel"), f);
        if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err))
            s = tir_ctx_fail(ctx, TIR_ERR_LLVM, "host jit: invalid module: %s", err);
        LLVMDisposeMessage(err);
    }
    if (s == TIR_OK) {
        char passes[32];
        snprintf(passes, sizeof passes, "default<O%d>", o.opt_level);
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        e = LLVMRunPasses(mod, passes, NULL, po);
        LLVMDisposePassBuilderOptions(po);
        if (e) s = llvm_err(ctx, "optimisation failed", e);
        /* as for PTX, so that the host JIT's comparison with the
         * interpreter checks the rewrites too */
        else cg_ptxas_guard(mod, true);
        if (s == TIR_OK) exact_f16_fma(mod);
    }
    if (s != TIR_OK) {
        LLVMDisposeModule(mod);
        LLVMOrcDisposeThreadSafeContext(tsc);
        LLVMOrcDisposeLLJIT(jit);
        return s;
    }
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
    LLVMOrcDisposeThreadSafeContext(tsc);
    e = LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm);
    if (e) {
        LLVMOrcDisposeThreadSafeModule(tsm);
        LLVMOrcDisposeLLJIT(jit);
        return llvm_err(ctx, "cannot add the module", e);
    }
    LLVMOrcExecutorAddress addr = 0;
    e = LLVMOrcLLJITLookup(jit, &addr, "tir_jit_wrapper");
    if (e) {
        LLVMOrcDisposeLLJIT(jit);
        return llvm_err(ctx, "cannot compile", e);
    }
    cg_jit *j = ir_xcalloc(1, sizeof *j);
    j->jit = jit;
    j->fn = (void (*)(void **))(uintptr_t)addr;
    *out = j;
    return TIR_OK;
}

void cg_jit_call(cg_jit *j, void **args) { j->fn(args); }

void cg_jit_free(cg_jit *j) {
    if (!j) return;
    LLVMOrcDisposeLLJIT(j->jit);
    free(j);
}
