/* llvm_target.c: initialising LLVM's NVPTX target and checking GPU arches.
 *
 * LLVM is initialised once per process; the initialisers are idempotent but
 * not documented as thread-safe, so a once-flag guards them.
 */
#include <llvm-c/Core.h>
#include <llvm-c/ErrorHandling.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <pthread.h>
#include <string.h>

#include "cg_internal.h"

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;

/* LLVM calls this on errors it cannot recover from (a backend failing to
 * select an instruction), then exits.  tir_codegen checks kernels so that
 * this should not happen; when it does, say whose bug it is. */
static void llvm_fatal(const char *reason) {
    fprintf(stderr,
            "minitir: fatal LLVM error during codegen (a minitir bug, please report "
            "it with TIR_DUMP=llvm output): %s\n",
            reason);
}

static void llvm_init(void) {
    LLVMInstallFatalErrorHandler(llvm_fatal);
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}

void cg_llvm_init(void) { pthread_once(&llvm_once, llvm_init); }

const char *tir_llvm_version(void) {
    static char buf[32];
    unsigned major, minor, patch;
    LLVMGetVersion(&major, &minor, &patch);
    snprintf(buf, sizeof buf, "%u.%u.%u", major, minor, patch);
    return buf;
}

tir_status tir_codegen_check_arch(tir_ctx *ctx, const char *arch) {
    if (!arch) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "codegen: no GPU arch given");
    cg_llvm_init();
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &target, &err)) {
        tir_status s = tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED,
                                    "codegen: LLVM has no NVPTX target: %s", err ? err : "?");
        LLVMDisposeMessage(err);
        return s;
    }
    /* The arches are minitir/target.h's targets. */
    if (tir_target_find(arch)) return TIR_OK;
    char list[256];
    return tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED, "codegen: unsupported GPU arch '%s' (supported: %s)",
                        arch, tir_target_list(list, sizeof list));
}
