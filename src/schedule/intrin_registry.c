/* intrin_registry.c: the tensor intrinsics tensorize can use (TVM's
 * TensorIntrin.register / TensorIntrin.get) and the built-in ones.
 *
 * An intrinsic is a name with a description (a function holding one block
 * under its loops: what the hardware computes) and an implementation (the
 * statement that computes it, built from the buffers the description's
 * parameters matched and the origins of their regions).  One process-wide
 * table, guarded by a mutex because the tuner schedules on several threads;
 * the built-ins are registered once, on first use of the table.  A name may
 * be registered several times (overloads: one per operand dtype, say);
 * tensorize tries them in registration order.
 *
 * The built-in descriptions are TVMScript text parsed into the caller's
 * ctx, so they read as what they match; their implementations emit the
 * logical tile intrinsics of docs/tensor-cores.md (frag_fill, frag_load,
 * frag_store, mma_sync), each operand address_of(buffer[origin]).
 */
#include <pthread.h>
#include <string.h>

#include "sched_internal.h"

typedef struct intrin_entry {
    char *name; /* heap */
    tir_intrin_desc_fn desc;
    tir_intrin_impl_fn impl;
} intrin_entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static intrin_entry *g_table; /* heap, lives for the process */
static int g_n, g_cap;

/* ------------------------------------------------------- the descriptions */

#define HEAD "@T.prim_func\n"
#define BUF(n, shape, dt, sc) n ": T.Buffer(" shape ", \"" dt "\", scope=\"" sc "\")"

static const tir_prim_func *parse_desc(tir_ctx *ctx, const char *text) {
    const tir_prim_func *f = NULL;
    tir_status st = tir_parse_func(ctx, text, strlen(text), &f);
    TIR_ASSERT(st == TIR_OK); /* the built-in texts are fixed */
    return f;
}

/* C[16,8] += f32(A[16,16]) * f32(B[16,8]) for a 16-bit operand dtype. */
#define MMA_K16_TEXT(dt)                                                                       \
    HEAD "def mma_m16n8k16(" BUF("A", "(16, 16)", dt, "frag.a") ", " BUF("B", "(16, 8)", dt,  \
                                                                       "frag.b") ", "         \
        BUF("C", "(16, 8)", "float32", "frag.acc") "):\n"                                      \
        "    for i, j, k in T.grid(16, 8, 16):\n"                                              \
        "        with T.block(\"update\"):\n"                                                  \
        "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"                          \
        "            T.reads(C[vi, vj], A[vi, vk], B[vk, vj])\n"                               \
        "            T.writes(C[vi, vj])\n"                                                    \
        "            C[vi, vj] = C[vi, vj] + T.Cast(\"float32\", A[vi, vk]) * "                \
        "T.Cast(\"float32\", B[vk, vj])\n"

static const tir_prim_func *desc_mma_bf16(tir_ctx *ctx) {
    return parse_desc(ctx, MMA_K16_TEXT("bfloat16"));
}
static const tir_prim_func *desc_mma_f16(tir_ctx *ctx) {
    return parse_desc(ctx, MMA_K16_TEXT("float16"));
}
static const tir_prim_func *desc_mma_tf32(tir_ctx *ctx) {
    return parse_desc(
        ctx, HEAD "def mma_m16n8k8_tf32(" BUF("A", "(16, 8)", "float32", "frag.a") ", " BUF(
                 "B", "(8, 8)", "float32", "frag.b") ", " BUF("C", "(16, 8)", "float32",
                                                             "frag.acc") "):\n"
                  "    for i, j, k in T.grid(16, 8, 8):\n"
                  "        with T.block(\"update\"):\n"
                  "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"
                  "            T.reads(C[vi, vj], A[vi, vk], B[vk, vj])\n"
                  "            T.writes(C[vi, vj])\n"
                  "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n");
}
static const tir_prim_func *desc_fill_f32(tir_ctx *ctx) {
    return parse_desc(ctx, HEAD "def frag_fill_f32(" BUF("C", "(16, 8)", "float32",
                                                         "frag.acc") "):\n"
                                "    for i, j in T.grid(16, 8):\n"
                                "        with T.block(\"fill\"):\n"
                                "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                                "            T.writes(C[vi, vj])\n"
                                "            C[vi, vj] = T.float32(0)\n");
}

/* Hopper's wgmma for TF32, one warp's share (intrinsics.def, "wgmma"):
 * C[R, 16] += A[R, 8] B[8, 16] with A a shared tile (the instruction reads
 * it from shared memory: scope "shared", not a fragment) and B and C
 * fragments of the swapped TF32 layout.  One description per R the tiling
 * rule uses (the block's rows). */
#define WGMMA_TEXT(R)                                                                          \
    HEAD "def wgmma_tf32_r" #R "(" BUF("A", "(" #R ", 8)", "float32", "shared") ", " BUF(      \
        "B", "(8, 16)", "float32", "frag.b") ", " BUF("C", "(" #R ", 16)", "float32",         \
                                                       "frag.acc") "):\n"                      \
        "    for i, j, k in T.grid(" #R ", 16, 8):\n"                                          \
        "        with T.block(\"update\"):\n"                                                  \
        "            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])\n"                          \
        "            T.reads(C[vi, vj], A[vi, vk], B[vk, vj])\n"                               \
        "            T.writes(C[vi, vj])\n"                                                    \
        "            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]\n"

static const tir_prim_func *desc_wgmma_64(tir_ctx *ctx) { return parse_desc(ctx, WGMMA_TEXT(64)); }
static const tir_prim_func *desc_wgmma_128(tir_ctx *ctx) { return parse_desc(ctx, WGMMA_TEXT(128)); }
static const tir_prim_func *desc_wgmma_256(tir_ctx *ctx) { return parse_desc(ctx, WGMMA_TEXT(256)); }

/* F[R, C] = S[R, C]: a fragment load (S "global": any non-fragment scope). */
#define LOAD_TEXT(name, R, C, dt, sc)                                                          \
    HEAD "def " name "(" BUF("S", "(" #R ", " #C ")", dt, "global") ", " BUF(                  \
        "F", "(" #R ", " #C ")", dt, sc) "):\n"                                                \
         "    for i, j in T.grid(" #R ", " #C "):\n"                                           \
         "        with T.block(\"load\"):\n"                                                   \
         "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"                                 \
         "            T.reads(S[vi, vj])\n"                                                    \
         "            T.writes(F[vi, vj])\n"                                                   \
         "            F[vi, vj] = S[vi, vj]\n"

static const tir_prim_func *desc_load_a_bf16(tir_ctx *ctx) {
    return parse_desc(ctx, LOAD_TEXT("frag_load_a_16x16", 16, 16, "bfloat16", "frag.a"));
}
static const tir_prim_func *desc_load_a_f16(tir_ctx *ctx) {
    return parse_desc(ctx, LOAD_TEXT("frag_load_a_16x16", 16, 16, "float16", "frag.a"));
}
static const tir_prim_func *desc_load_b_bf16(tir_ctx *ctx) {
    return parse_desc(ctx, LOAD_TEXT("frag_load_b_16x8", 16, 8, "bfloat16", "frag.b"));
}
static const tir_prim_func *desc_load_b_f16(tir_ctx *ctx) {
    return parse_desc(ctx, LOAD_TEXT("frag_load_b_16x8", 16, 8, "float16", "frag.b"));
}
/* Two adjacent B tiles (k 16 x n 16): one ldmatrix.x4.trans in lowering. */
static const tir_prim_func *desc_load_b2_bf16(tir_ctx *ctx) {
    return parse_desc(ctx, LOAD_TEXT("frag_load_b_16x16", 16, 16, "bfloat16", "frag.b"));
}
static const tir_prim_func *desc_load_b2_f16(tir_ctx *ctx) {
    return parse_desc(ctx, LOAD_TEXT("frag_load_b_16x16", 16, 16, "float16", "frag.b"));
}
static const tir_prim_func *desc_load_a_tf32(tir_ctx *ctx) {
    return parse_desc(ctx, LOAD_TEXT("frag_load_a_16x8_tf32", 16, 8, "float32", "frag.a"));
}
static const tir_prim_func *desc_load_b_tf32(tir_ctx *ctx) {
    return parse_desc(ctx, LOAD_TEXT("frag_load_b_8x8_tf32", 8, 8, "float32", "frag.b"));
}
static const tir_prim_func *desc_store(tir_ctx *ctx) {
    return parse_desc(ctx, HEAD "def frag_store_16x8(" BUF("F", "(16, 8)", "float32",
                                                           "frag.acc") ", " BUF(
                               "D", "(16, 8)", "float32", "global") "):\n"
                               "    for i, j in T.grid(16, 8):\n"
                               "        with T.block(\"store\"):\n"
                               "            vi, vj = T.axis.remap(\"SS\", [i, j])\n"
                               "            T.reads(F[vi, vj])\n"
                               "            T.writes(D[vi, vj])\n"
                               "            D[vi, vj] = F[vi, vj]\n");
}

/* ---------------------------------------------------- the implementations */

/* address_of(buf[origin]): a tile operand. */
static const tir_expr *tile_ptr(tir_ctx *ctx, const tir_buffer *buf, const tir_expr *const *o) {
    const tir_expr *load = tir_load(ctx, buf, buf->ndim, o);
    return tir_call_new(ctx, TIR_HANDLE, TIR_INTRIN_ADDRESS_OF, 1, &load);
}

static const tir_stmt *call_stmt(tir_ctx *ctx, tir_intrin op, int n, const tir_expr **args) {
    return tir_evaluate_new(ctx, tir_call_new(ctx, TIR_VOID, op, n, args));
}

/* Parameters in description order: A, B, C. */
static const tir_stmt *impl_mma(tir_ctx *ctx, const tir_buffer *const *bufs,
                                const tir_expr *const *const *origins) {
    const tir_expr *args[3] = {tile_ptr(ctx, bufs[2], origins[2]),
                               tile_ptr(ctx, bufs[0], origins[0]),
                               tile_ptr(ctx, bufs[1], origins[1])};
    return call_stmt(ctx, TIR_INTRIN_MMA_SYNC, 3, args);
}
static const tir_stmt *impl_fill(tir_ctx *ctx, const tir_buffer *const *bufs,
                                 const tir_expr *const *const *origins) {
    const tir_expr *args[2] = {tile_ptr(ctx, bufs[0], origins[0]), tir_f32(ctx, 0.0)};
    return call_stmt(ctx, TIR_INTRIN_FRAG_FILL, 2, args);
}
/* S, F */
static const tir_stmt *impl_load(tir_ctx *ctx, const tir_buffer *const *bufs,
                                 const tir_expr *const *const *origins) {
    const tir_expr *args[2] = {tile_ptr(ctx, bufs[1], origins[1]),
                               tile_ptr(ctx, bufs[0], origins[0])};
    return call_stmt(ctx, TIR_INTRIN_FRAG_LOAD, 2, args);
}
/* S, F over two B tiles side by side (columns c0 and c0 + 8): two
 * frag_loads, one per 16x8 tile, so the logical level (and the
 * interpreter) stays tile by tile; lower_fragments merges the adjacent
 * pair into one ldmatrix.x4.trans where it can.  A fragment whose width
 * is whole 8-column tiles but not whole pairs (N = 72) has a last pair
 * with one tile: the second load is then guarded by c0 + 8 < width (the
 * guard a split leaves on the pair stops at the pair, and tensorize drops
 * it). */
static const tir_stmt *impl_load_pair(tir_ctx *ctx, const tir_buffer *const *bufs,
                                      const tir_expr *const *const *origins) {
    const tir_stmt *half[2];
    for (int h = 0; h < 2; h++) {
        const tir_expr **o[2];
        for (int b = 0; b < 2; b++) {
            int nd = bufs[b]->ndim;
            o[b] = IR_NEWN(ctx, const tir_expr *, nd);
            for (int d = 0; d < nd; d++) o[b][d] = origins[b][d];
            const tir_expr *last = o[b][nd - 1];
            if (h) o[b][nd - 1] = tir_add(ctx, last, tir_int(ctx, last->dtype, 8));
        }
        const tir_expr *args[2] = {tile_ptr(ctx, bufs[1], (const tir_expr *const *)o[1]),
                                   tile_ptr(ctx, bufs[0], (const tir_expr *const *)o[0])};
        half[h] = call_stmt(ctx, TIR_INTRIN_FRAG_LOAD, 2, args);
    }
    const tir_buffer *f = bufs[1];
    const tir_expr *width = f->shape[f->ndim - 1], *c0 = origins[1][f->ndim - 1];
    int64_t w = 0;
    if (!tir_expr_const_int(width, &w) || w % 16) {
        const tir_expr *c8 = tir_add(ctx, c0, tir_int(ctx, c0->dtype, 8));
        if (!tir_dtype_eq(width->dtype, c8->dtype)) width = tir_cast_new(ctx, c8->dtype, width);
        half[1] = tir_if_new(ctx, tir_lt(ctx, c8, width), half[1], NULL);
    }
    return tir_seq_new(ctx, 2, half);
}
/* F, D */
static const tir_stmt *impl_store(tir_ctx *ctx, const tir_buffer *const *bufs,
                                  const tir_expr *const *const *origins) {
    const tir_expr *args[2] = {tile_ptr(ctx, bufs[0], origins[0]),
                               tile_ptr(ctx, bufs[1], origins[1])};
    return call_stmt(ctx, TIR_INTRIN_FRAG_STORE, 2, args);
}

/* A, B, C: wgmma(address_of(C), address_of(A), address_of(B), R), R the
 * rows of the description's C (the matched buffers are the program's). */
static const tir_stmt *wgmma_call(tir_ctx *ctx, const tir_buffer *const *bufs,
                                  const tir_expr *const *const *origins, int rows) {
    const tir_expr *args[4] = {tile_ptr(ctx, bufs[2], origins[2]),
                               tile_ptr(ctx, bufs[0], origins[0]),
                               tile_ptr(ctx, bufs[1], origins[1]), tir_i32(ctx, rows)};
    return call_stmt(ctx, TIR_INTRIN_WGMMA, 4, args);
}
#define IMPL_WGMMA(R)                                                                          \
    static const tir_stmt *impl_wgmma_##R(tir_ctx *ctx, const tir_buffer *const *bufs,        \
                                          const tir_expr *const *const *origins) {             \
        return wgmma_call(ctx, bufs, origins, R);                                              \
    }
IMPL_WGMMA(64)
IMPL_WGMMA(128)
IMPL_WGMMA(256)

/* ------------------------------------------------------------- the table */

/* Appends an entry; the caller holds the lock.  An identical entry is
 * already there: nothing to do. */
static void add_locked(const char *name, tir_intrin_desc_fn desc, tir_intrin_impl_fn impl) {
    for (int i = 0; i < g_n; i++)
        if (strcmp(g_table[i].name, name) == 0 && g_table[i].desc == desc &&
            g_table[i].impl == impl)
            return;
    if (g_n == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 32;
        g_table = ir_xrealloc(g_table, sizeof *g_table * (size_t)g_cap);
    }
    size_t len = strlen(name);
    char *copy = ir_xmalloc(len + 1);
    memcpy(copy, name, len + 1);
    g_table[g_n++] = (intrin_entry){copy, desc, impl};
}

static void register_builtins(void) {
    pthread_mutex_lock(&g_lock);
    add_locked("mma_m16n8k16_bf16", desc_mma_bf16, impl_mma);
    add_locked("mma_m16n8k16_f16", desc_mma_f16, impl_mma);
    add_locked("mma_m16n8k8_tf32", desc_mma_tf32, impl_mma);
    add_locked("frag_fill_f32", desc_fill_f32, impl_fill);
    add_locked("frag_load_a_16x16", desc_load_a_bf16, impl_load);
    add_locked("frag_load_a_16x16", desc_load_a_f16, impl_load);
    add_locked("frag_load_b_16x8", desc_load_b_bf16, impl_load);
    add_locked("frag_load_b_16x8", desc_load_b_f16, impl_load);
    add_locked("frag_load_b_16x16", desc_load_b2_bf16, impl_load_pair);
    add_locked("frag_load_b_16x16", desc_load_b2_f16, impl_load_pair);
    add_locked("frag_load_a_16x8_tf32", desc_load_a_tf32, impl_load);
    add_locked("frag_load_b_8x8_tf32", desc_load_b_tf32, impl_load);
    add_locked("frag_store_16x8", desc_store, impl_store);
    add_locked("wgmma_tf32_r64", desc_wgmma_64, impl_wgmma_64);
    add_locked("wgmma_tf32_r128", desc_wgmma_128, impl_wgmma_128);
    add_locked("wgmma_tf32_r256", desc_wgmma_256, impl_wgmma_256);
    pthread_mutex_unlock(&g_lock);
}

static bool name_ok(const char *name) {
    if (!name || !*name) return false;
    for (const char *p = name; *p; p++)
        if (!(*p == '_' || *p == '.' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')))
            return false;
    return true;
}

tir_status tir_tensor_intrin_register(const char *name, tir_intrin_desc_fn desc,
                                      tir_intrin_impl_fn impl) {
    if (!name_ok(name) || !desc || !impl) return TIR_ERR_INVALID_ARG;
    pthread_once(&g_once, register_builtins);
    pthread_mutex_lock(&g_lock);
    add_locked(name, desc, impl);
    pthread_mutex_unlock(&g_lock);
    return TIR_OK;
}

int tir_tensor_intrin_count(const char *name) {
    if (!name) return 0;
    pthread_once(&g_once, register_builtins);
    pthread_mutex_lock(&g_lock);
    int n = 0;
    for (int i = 0; i < g_n; i++) n += strcmp(g_table[i].name, name) == 0;
    pthread_mutex_unlock(&g_lock);
    return n;
}

int sch_intrin_lookup(const char *name, int max, tir_intrin_desc_fn *descs,
                      tir_intrin_impl_fn *impls) {
    pthread_once(&g_once, register_builtins);
    pthread_mutex_lock(&g_lock);
    int n = 0;
    for (int i = 0; i < g_n && n < max; i++)
        if (strcmp(g_table[i].name, name) == 0) {
            descs[n] = g_table[i].desc;
            impls[n++] = g_table[i].impl;
        }
    pthread_mutex_unlock(&g_lock);
    return n;
}
