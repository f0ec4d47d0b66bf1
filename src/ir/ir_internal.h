/* ir_internal.h: helpers shared by the files of src/ir and by later layers
 * (schedule, lower, codegen) that build on the IR.  Not installed.
 */
#ifndef MINITIR_IR_INTERNAL_H
#define MINITIR_IR_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "minitir/ir.h"
#include "minitir/target.h"

/* Compiler bugs, not user errors: print where and abort. */
#define TIR_ASSERT(c)                                                                     \
    do {                                                                                  \
        if (!(c)) ir_assert_fail(#c, __FILE__, __LINE__);                                 \
    } while (0)
#define TIR_UNREACHABLE() ir_assert_fail("unreachable", __FILE__, __LINE__)

_Noreturn void ir_assert_fail(const char *what, const char *file, int line);

/* Heap allocation for internal bookkeeping (alloc.c): never NULL; out of
 * memory prints one line and aborts.  Sizes the user chooses use malloc
 * and return TIR_ERR_NOMEM instead (the policy: docs/architecture.md). */
_Noreturn void ir_oom(size_t bytes);
void *ir_xmalloc(size_t size);
void *ir_xcalloc(size_t n, size_t size);
void *ir_xrealloc(void *p, size_t size);
char *ir_xstrdup(const char *s);

/* Return early when a call fails. */
#define TIR_TRY(x)                                                                        \
    do {                                                                                  \
        tir_status tir_try_s_ = (x);                                                      \
        if (tir_try_s_ != TIR_OK) return tir_try_s_;                                      \
    } while (0)

/* Allocate n elements of T in the ctx arena. */
#define IR_NEW(ctx, T) ((T *)tir_ctx_alloc((ctx), sizeof(T)))
#define IR_NEWN(ctx, T, n) ((T *)tir_ctx_alloc((ctx), sizeof(T) * (size_t)((n) > 0 ? (n) : 1)))

/* The most groups (of 5 arguments) one wgmma_sync may have: the
 * interpreter and the simulator evaluate a call's arguments into arrays
 * of IR_MAX_CALL_ARGS (interp_internal.h); wgmma_group merges no more. */
#define IR_WGMMA_MAX_GROUPS 8

/* The alignment a buffer gets when none is given: 64 bytes (like TVM's
 * kAllocAlignment), so that 16-byte vector accesses and cp.async copies can
 * be proven aligned; cudaMalloc and the runtime's allocations give 256. */
static inline int ir_default_align(tir_dtype t) {
    int e = (int)tir_dtype_bytes(t);
    return e > 64 ? e : 64;
}

/* A constant buffer (or TE) extent must be in [1, 2^31): the one rule of
 * tir_def_*, the TE layer and the parser. */
static inline bool ir_extent_ok(int64_t v) { return v > 0 && v <= INT32_MAX; }

/* The thread axes a loop may be bound to (minitir/thread_axes.def):
 * tir_sched_bind accepts these and the parser reads no other thread tag.
 * The hint lists them for messages (keep it in step with the table). */
/* The table's tag equal to s (a static string), or NULL. */
const char *ir_thread_axis_find(const char *s);

/* A fresh id for variables and buffers (unique within ctx). */
uint32_t ir_ctx_next_id(tir_ctx *ctx);

/* Copies an array of n pointers into the arena (NULL if n == 0). */
void *ir_copy_array(tir_ctx *ctx, const void *src, size_t elem, int n);

/* A growable string buffer on the heap (for printers and messages). */
typedef struct ir_strbuf {
    char *data;
    size_t len, cap;
} ir_strbuf;
void ir_sb_init(ir_strbuf *sb);
void ir_sb_free(ir_strbuf *sb);
void ir_sb_putc(ir_strbuf *sb, char c);
void ir_sb_puts(ir_strbuf *sb, const char *s);
void ir_sb_printf(ir_strbuf *sb, const char *fmt, ...) TIR_PRINTF(2, 3);
void ir_sb_vprintf(ir_strbuf *sb, const char *fmt, va_list ap);
/* Moves the contents into the ctx arena and frees the heap buffer. */
const char *ir_sb_finish(ir_strbuf *sb, tir_ctx *ctx);

/* A growable array of pointers on the heap. */
typedef struct ir_vec {
    const void **items;
    int n, cap;
} ir_vec;
void ir_vec_push(ir_vec *v, const void *p);
void ir_vec_free(ir_vec *v);
/* Whether p is one of v's items (by identity). */
bool ir_vec_has(const ir_vec *v, const void *p);

/* ---- util.c: helpers written once for every layer ---- */

/* A chunked arena: zeroed, 16-byte aligned allocations that live until
 * ir_arena_free (or, for reuse, ir_arena_rewind).  Start one as
 * (ir_arena){.chunk_size = N}.  Out of memory is fatal, as everywhere in
 * the IR layer. */
typedef struct ir_arena_chunk ir_arena_chunk;
typedef struct ir_arena {
    ir_arena_chunk *head, *cur, *tail;
    size_t chunk_size;
} ir_arena;
void *ir_arena_alloc(ir_arena *a, size_t size);
/* Keeps the chunks but forgets what they hold. */
void ir_arena_rewind(ir_arena *a);
void ir_arena_free(ir_arena *a);

/* Whether e is a zero whose bits are all 0, a scalar constant or a
 * Broadcast of one (so -0.0 is not): what a zero fill writes (cp.async's
 * source size 0, codegen's predicated loads). */
bool ir_is_zero_bits(const tir_expr *e);

/* Whether evaluating e may read memory other than a thread's local arrays
 * (a load of a global or shared buffer, a call, anything unknown): what a
 * guard must keep from running where it is false (codegen's predicated
 * stores compute value and address unguarded). */
bool ir_reads_memory(const tir_expr *e);

/* A pointer hash (murmur3's finaliser): mixes the low bits that
 * alignment leaves at zero. */
static inline size_t ir_ptr_hash(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

/* An FNV-1a style hash of n bytes of p, continuing from h (chains hash
 * several pieces as one). */
static inline uint64_t ir_hash_more(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* ir_hash_more's start. */
#define IR_HASH_INIT 1469598103934665603ull

/* An FNV-1a style hash of n bytes of s (string sets, structural hashes). */
static inline uint64_t ir_str_hash(const char *s, size_t n) {
    return ir_hash_more(IR_HASH_INIT, s, n);
}

/* Pointer -> pointer on the heap, open addressing; keys are non-NULL and
 * a missing key reads as NULL.  Zero-initialise to start. */
typedef struct ir_ptr_map {
    const void **keys;
    void **vals;
    size_t n, cap;
} ir_ptr_map;
void *ir_ptr_map_get(const ir_ptr_map *m, const void *k);
void ir_ptr_map_put(ir_ptr_map *m, const void *k, void *v);
void ir_ptr_map_free(ir_ptr_map *m);

/* A common divisor of x and y, >= 0: the greatest, except that INT64_MIN
 * gives 1 (its gcd may not fit); callers only need some common divisor. */
int64_t ir_gcd64(int64_t x, int64_t y);

/* Milliseconds of a monotonic clock. */
double ir_now_ms(void);
/* Whether the comma-separated list (may be NULL) holds name exactly. */
bool ir_list_has(const char *list, const char *name);
/* Whether the environment's TIR_DUMP selects what (a pass name, "llvm"),
 * or, when all_counts, is "all". */
bool ir_dump_wanted(const char *what, bool all_counts);

/* float16 / bfloat16 bits, rounded to nearest even from a double (which
 * holds any float exactly), and back. */
uint16_t ir_f16_from_double(double x);
/* An int64 (uint64 when u) as a double rounded to odd, for rounding once
 * more to a narrower float: the integer rounded once (util.c). */
double ir_int_to_double_odd(int64_t v, bool u);
uint16_t ir_bf16_from_double(double x);
float ir_f16_to_float(uint16_t h);
float ir_bf16_to_float(uint16_t h);

#endif
