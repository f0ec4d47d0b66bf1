/* ptxas_check.h: assembles a module's PTX with ptxas (TIR_PTXAS, default
 * /usr/local/cuda/bin/ptxas) for its arch when ptxas is installed, for the
 * tests that compile kernels on machines without a GPU.  Header-only.
 */
#ifndef MINITIR_TESTS_PTXAS_CHECK_H
#define MINITIR_TESTS_PTXAS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "minitir/codegen.h"

/* False (after a TAP comment) when ptxas is not installed; a rejection
 * fails the test with the PTX. */
static inline bool ptxas_check(const tir_module *m) {
    const char *ptxas = getenv("TIR_PTXAS");
    if (!ptxas) ptxas = "/usr/local/cuda/bin/ptxas";
    if (access(ptxas, X_OK) != 0) {
        printf("# ptxas not found: %s not assembled\n", m->kernel_name);
        return false;
    }
    char path[] = "/tmp/tir_ptxas_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, m->ptx, m->ptx_len), (ssize_t)m->ptx_len);
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -arch=%s -o /dev/null %s 2>&1", ptxas, m->arch, path);
    int rc = system(cmd);
    unlink(path);
    if (rc != 0) fail_msg("ptxas rejected the PTX of %s (%s):\n%s", m->kernel_name, m->arch, m->ptx);
    return true;
}

#endif
