/* fuzz_args.h: the command line every fuzzer test takes.  The number of
 * cases from MINITIR_FUZZ_CASES or argv[1] (a positive count; otherwise
 * *cases keeps its default), the seed from MINITIR_FUZZ_SEED. */
#ifndef MINITIR_TESTS_FUZZ_ARGS_H
#define MINITIR_TESTS_FUZZ_ARGS_H

#include <stdint.h>
#include <stdlib.h>

static inline void fuzz_args(int argc, char **argv, long *cases, uint64_t *seed) {
    const char *e = getenv("MINITIR_FUZZ_CASES");
    if (argc > 1) e = argv[1];
    if (e && atol(e) > 0) *cases = atol(e);
    const char *sd = getenv("MINITIR_FUZZ_SEED");
    if (sd) *seed = strtoull(sd, NULL, 10);
}

#endif
