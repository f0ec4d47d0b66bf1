/* fuzz_xorshift.h: the xorshift generator the simplifier and index
 * fuzzers draw from: one state per test program, started for each case
 * by fuzz_seed_case, so a seed and a case number name one case. */
#ifndef MINITIR_TESTS_FUZZ_XORSHIFT_H
#define MINITIR_TESTS_FUZZ_XORSHIFT_H

#include <stdint.h>

static uint64_t rs;
static inline uint64_t rnd(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return rs;
}
static inline int pick(int n) { return (int)(rnd() % (uint64_t)n); }
/* The state for case c of seed (never 0, which xorshift keeps). */
static inline void fuzz_seed_case(uint64_t seed, long c) {
    rs = seed * 0x9e3779b97f4a7c15ull + (uint64_t)c * 0xbf58476d1ce4e5b9ull + 1;
}

#endif
