/* alloc.c: the library's heap allocation helpers and its out-of-memory
 * policy (docs/architecture.md, "Out of memory").
 *
 * Internal bookkeeping (arenas, vectors, tables, messages, LLVM argument
 * arrays) allocates through ir_xmalloc and friends, which never return
 * NULL: running out of memory there is fatal and ends the process with one
 * line on stderr, like a failed assertion.  Memory whose size the user
 * chooses (interpreter and simulator buffers, host copies and device
 * objects of the runtime, a whole tir_ctx or tir_schedule) is allocated
 * directly and a failure returns TIR_ERR_NOMEM (or NULL from a create
 * function), so that user input never aborts the library.
 */
#include <string.h>

#include "ir_internal.h"

_Noreturn void ir_oom(size_t bytes) {
    fprintf(stderr, "minitir: out of memory (allocating %zu bytes)\n", bytes);
    fflush(stderr);
    abort();
}

void *ir_xmalloc(size_t size) {
    void *p = malloc(size ? size : 1);
    if (!p) ir_oom(size);
    return p;
}

void *ir_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) ir_oom(n * size);
    return p;
}

void *ir_xrealloc(void *p, size_t size) {
    void *q = realloc(p, size ? size : 1);
    if (!q) ir_oom(size);
    return q;
}

char *ir_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(ir_xmalloc(n), s, n);
}
