/* now_ms.h: a monotonic clock in milliseconds for the tests and tools,
 * which see only the public API (the library's own is ir_now_ms). */
#ifndef MINITIR_TESTS_NOW_MS_H
#define MINITIR_TESTS_NOW_MS_H

#include <time.h>

static inline double mt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#endif
