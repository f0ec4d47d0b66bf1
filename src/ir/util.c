/* util.c: small helpers that several layers would otherwise each write
 * again: the chunked arena behind tir_ctx, the interpreter and the
 * analyzer's scratch memory; a pointer-keyed hash map; gcd; a monotonic
 * clock; the TIR_DUMP selection; float16 / bfloat16 rounding.  Declared in
 * ir_internal.h.  Out of memory here is fatal (TIR_ASSERT), like every
 * allocation of the IR layer.
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "ir_internal.h"

/* ------------------------------------------------------------------ arena */

struct ir_arena_chunk {
    struct ir_arena_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

static ir_arena_chunk *chunk_new(size_t cap) {
    ir_arena_chunk *c = ir_xmalloc(sizeof *c + cap);
    c->next = NULL;
    c->used = 0;
    c->cap = cap;
    return c;
}

/* A chunk with room for size bytes: the current one, a later one (after a
 * rewind), or a new one at the tail.  A big one-off block goes right behind
 * the current chunk, which stays current, so its free space stays usable. */
static ir_arena_chunk *chunk_for(ir_arena *a, size_t size) {
    ir_arena_chunk *c = a->cur;
    if (c && c->cap - c->used >= size) return c;
    if (c && size > a->chunk_size / 4) {
        ir_arena_chunk *nc = chunk_new(size);
        nc->next = c->next;
        c->next = nc;
        if (a->tail == c) a->tail = nc;
        return nc;
    }
    while (c && c->cap - c->used < size) c = c->next;
    if (!c) {
        c = chunk_new(size > a->chunk_size ? size : a->chunk_size);
        if (a->tail)
            a->tail->next = c;
        else
            a->head = c;
        a->tail = c;
    }
    a->cur = c;
    return c;
}

void *ir_arena_alloc(ir_arena *a, size_t size) {
    TIR_ASSERT(a->chunk_size > 0);
    size = (size + 15) & ~(size_t)15;
    if (size == 0) size = 16;
    ir_arena_chunk *c = chunk_for(a, size);
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

void ir_arena_rewind(ir_arena *a) {
    for (ir_arena_chunk *c = a->head; c; c = c->next) c->used = 0;
    a->cur = a->head;
}

void ir_arena_free(ir_arena *a) {
    ir_arena_chunk *c = a->head;
    while (c) {
        ir_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = a->cur = a->tail = NULL;
}

/* ------------------------------------------------------------ pointer map */

void *ir_ptr_map_get(const ir_ptr_map *m, const void *k) {
    if (!m->cap) return NULL;
    size_t i = ir_ptr_hash(k) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->keys[i] == k) return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

static void ptr_map_grow(ir_ptr_map *m) {
    ir_ptr_map nm = {0};
    nm.cap = m->cap ? m->cap * 2 : 64;
    nm.keys = ir_xcalloc(nm.cap, sizeof *nm.keys);
    nm.vals = ir_xcalloc(nm.cap, sizeof *nm.vals);
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) ir_ptr_map_put(&nm, m->keys[i], m->vals[i]);
    ir_ptr_map_free(m);
    *m = nm;
}

void ir_ptr_map_put(ir_ptr_map *m, const void *k, void *v) {
    TIR_ASSERT(k);
    if (2 * (m->n + 1) > m->cap) ptr_map_grow(m);
    size_t i = ir_ptr_hash(k) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != k) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = k;
    m->vals[i] = v;
}

void ir_ptr_map_free(ir_ptr_map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------ arithmetic */

int64_t ir_gcd64(int64_t x, int64_t y) {
    if (x == INT64_MIN || y == INT64_MIN) return 1;
    uint64_t p = x < 0 ? 0 - (uint64_t)x : (uint64_t)x, q = y < 0 ? 0 - (uint64_t)y : (uint64_t)y;
    while (q) {
        uint64_t t = p % q;
        p = q;
        q = t;
    }
    return p > (uint64_t)INT64_MAX ? 0 : (int64_t)p;
}

/* ------------------------------------------------------------ environment */

double ir_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool ir_is_zero_bits(const tir_expr *e) {
    const tir_broadcast *b = tir_as_tir_broadcast(e);
    if (b) e = b->value;
    const tir_float_imm *f = tir_as_tir_float_imm(e);
    int64_t k;
    return f ? f->value == 0 && !signbit(f->value) : tir_expr_const_int(e, &k) && k == 0;
}

bool ir_reads_memory(const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM:
    case TIR_KIND_VAR: return false;
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = tir_as_tir_buffer_load(e);
        for (int i = 0; i < l->nidx; i++)
            if (ir_reads_memory(l->indices[i])) return true;
        return l->buffer->scope != TIR_SCOPE_LOCAL;
    }
    case TIR_KIND_NOT: return ir_reads_memory(tir_as_tir_not(e)->a);
    case TIR_KIND_CAST: return ir_reads_memory(tir_as_tir_cast(e)->value);
    case TIR_KIND_BROADCAST: return ir_reads_memory(tir_as_tir_broadcast(e)->value);
    case TIR_KIND_RAMP:
        return ir_reads_memory(tir_as_tir_ramp(e)->start) || ir_reads_memory(tir_as_tir_ramp(e)->stride);
    case TIR_KIND_SELECT: {
        const tir_select *s = tir_as_tir_select(e);
        return ir_reads_memory(s->cond) || ir_reads_memory(s->t) || ir_reads_memory(s->f);
    }
    default:
        if (tir_kind_is_binop((tir_kind)e->kind))
            return ir_reads_memory(tir_as_tir_binop(e)->a) || ir_reads_memory(tir_as_tir_binop(e)->b);
        return true;
    }
}

bool ir_list_has(const char *list, const char *name) {
    if (!list) return false;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

bool ir_dump_wanted(const char *what, bool all_counts) {
    const char *sel = getenv("TIR_DUMP");
    return ir_list_has(sel, what) || (all_counts && ir_list_has(sel, "all"));
}

/* ---------------------------------------------------- float16 / bfloat16 */

/* Rounds x to a binary format with mbits stored mantissa bits and ebits
 * exponent bits (IEEE layout), to nearest even, and returns its bits.  A
 * NaN stays quiet and keeps the top bits of its payload. */
static uint16_t round_small(double x, int mbits, int ebits) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    uint32_t sign = (uint32_t)(b >> 63) << (mbits + ebits);
    int bias = (1 << (ebits - 1)) - 1, emax = (1 << ebits) - 1;
    int e = (int)((b >> 52) & 0x7ff);
    uint64_t m = b & ((1ull << 52) - 1);
    uint32_t inf = (uint32_t)emax << mbits;
    if (e == 0x7ff)
        return (uint16_t)(sign | inf |
                          (m ? (1u << (mbits - 1)) | (uint32_t)(m >> (52 - mbits)) : 0));
    if (e == 0) return (uint16_t)sign; /* double subnormals are far below */
    int ue = e - 1023;
    if (ue + bias >= emax) return (uint16_t)(sign | inf);
    uint64_t full = m | (1ull << 52);
    bool normal = ue >= 1 - bias;
    int shift = 52 - mbits + (normal ? 0 : 1 - bias - ue);
    if (shift >= 64) return (uint16_t)sign;
    uint64_t q = full >> shift, rem = full & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    uint32_t r = normal ? ((uint32_t)(ue + bias) << mbits) + (uint32_t)(q - (1ull << mbits))
                        : (uint32_t)q;
    if (r > inf) r = inf;
    return (uint16_t)(sign | r);
}

/* v (unsigned when u) as a double rounded to odd: v itself when it fits
 * 53 bits, else whichever of the two doubles around v has a last bit of
 * 1.  Rounding that again to a float of at most 51 bits (float32, float16,
 * bfloat16) rounds v once: a double (double)v already rounded to nearest
 * can round the other way a second time (2^60 + 2^36 + 1 as float32). */
double ir_int_to_double_odd(int64_t v, bool u) {
    double d = u ? (double)(uint64_t)v : (double)v;
    int below; /* -1: v < d, 1: v > d, 0: exact */
    if (u)
        below = d >= 0x1p64 ? -1 : (uint64_t)d == (uint64_t)v ? 0 : (uint64_t)d < (uint64_t)v ? 1 : -1;
    else
        below = d >= 0x1p63 ? -1 : (int64_t)d == v ? 0 : (int64_t)d < v ? 1 : -1;
    if (!below) return d;
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return bits & 1 ? d : nextafter(d, below > 0 ? INFINITY : -INFINITY);
}

uint16_t ir_f16_from_double(double x) { return round_small(x, 10, 5); }
uint16_t ir_bf16_from_double(double x) { return round_small(x, 7, 8); }

float ir_f16_to_float(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return s ? -v : v;
    }
    if (e == 31)
        bits = s | 0x7f800000u | (m << 13);
    else
        bits = s | ((e - 15 + 127) << 23) | (m << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float ir_bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
