/* ptxas_check.h: assembles a module's PTX with ptxas (TIR_PTXAS, default
 * /usr/local/cuda/bin/ptxas) for its arch when ptxas is installed, for the
 * tests that compile kernels on machines without a GPU: ptxas_check, or
 * ptxas_assemble for the registers and spills ptxas -v reports.
 * Header-only (include after cmocka.h).
 */
#ifndef MINITIR_TESTS_PTXAS_CHECK_H
#define MINITIR_TESTS_PTXAS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minitir/codegen.h"

/* The ptxas to use, NULL when it is not installed. */
static inline const char *ptxas_path(void) {
    const char *p = getenv("TIR_PTXAS");
    if (!p) p = "/usr/local/cuda/bin/ptxas";
    return access(p, X_OK) == 0 ? p : NULL;
}

typedef struct ptxas_info {
    int regs, spill_stores, spill_loads;
    int stack; /* bytes of stack frame (local memory) */
} ptxas_info;

/* Assembles m's PTX for its arch with ptxas -v and reads its registers and
 * spills into *info; fails the test when ptxas rejects it.  Returns false
 * when there is no ptxas. */
static inline bool ptxas_assemble(const tir_module *m, ptxas_info *info) {
    const char *ptxas = ptxas_path();
    if (!ptxas) {
        printf("# ptxas not found: %s not assembled\n", m->kernel_name);
        return false;
    }
    char path[] = "/tmp/tir_cg_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, m->ptx, m->ptx_len), (ssize_t)m->ptx_len);
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -arch=%s -v -o /dev/null %s 2>&1", ptxas, m->arch, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[8192];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    unlink(path);
    if (rc != 0) {
        printf("# ptxas failed on %s (%s):\n%s\n# PTX:\n%s\n", m->kernel_name, m->arch, out,
               m->ptx);
        fail_msg("ptxas rejected the PTX of %s", m->kernel_name);
    }
    memset(info, 0, sizeof *info);
    const char *s = strstr(out, "Used ");
    assert_non_null(s);
    info->regs = atoi(s + 5);
    s = strstr(out, " bytes stack frame");
    if (s) {
        while (s > out && s[-1] >= '0' && s[-1] <= '9') s--;
        info->stack = atoi(s);
    }
    s = strstr(out, "bytes spill stores");
    if (s) {
        while (s > out && s[-1] == ' ') s--;
        while (s > out && s[-1] >= '0' && s[-1] <= '9') s--;
        info->spill_stores = atoi(s);
    }
    s = strstr(out, "spill stores, ");
    if (s) info->spill_loads = atoi(s + 14);
    printf("# ptxas %s %s: %d registers, %d bytes spill stores, %d bytes spill loads, %lld bytes "
           "smem, codegen %.1f ms\n",
           m->kernel_name, m->arch, info->regs, info->spill_stores, info->spill_loads,
           (long long)m->shared_bytes, m->compile_ms);
    return true;
}

/* False (after a TAP comment) when ptxas is not installed; a rejection
 * fails the test with the PTX. */
static inline bool ptxas_check(const tir_module *m) {
    ptxas_info info;
    return ptxas_assemble(m, &info);
}

#endif
