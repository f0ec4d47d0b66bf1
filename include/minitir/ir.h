/* minitir/ir.h: the tensor IR (types, nodes, context, construction,
 * traversal, structural equality).
 *
 * Every node lives in the arena of one tir_ctx and is immutable once built;
 * a node is freed only when its context is destroyed (tir_ctx_destroy).  All
 * pointers returned by this API are owned by the context unless a function
 * says otherwise.  Node kinds come from minitir/nodes.def.
 *
 * Lifecycle: what the caller owns is made by tir_<obj>_create and released
 * by tir_<obj>_destroy (NULL is fine); IR nodes are made by tir_<node>_new
 * (or a helper such as tir_add) in the context's arena and never freed on
 * their own.
 *
 * Out of memory: internal bookkeeping aborts with "minitir: out of memory"
 * (one allocator, src/ir/alloc.c); memory whose size the user chooses
 * (interpreter buffers, a whole context or schedule, runtime objects)
 * fails with TIR_ERR_NOMEM, or NULL from tir_ctx_create.
 *
 * Errors: functions that can fail on user input return a tir_status and
 * leave a message in the context (tir_ctx_error).  Node constructors are
 * total for well-typed input; ill-typed construction is a caller bug and
 * trips an assertion.  Parsers and builders that take user input check
 * types first and return TIR_ERR_TYPE instead.
 */
#ifndef MINITIR_IR_H
#define MINITIR_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TIR_API __attribute__((visibility("default")))
#define TIR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TIR_API
#define TIR_PRINTF(f, a)
#endif

/* ------------------------------------------------------------------ status */

typedef enum tir_status {
#define TIR_STATUS(E, S) TIR_##E,
#include "minitir/status.def"
    TIR_STATUS_COUNT
} tir_status;

/* The fixed one-line meaning of a status ("out-of-bounds access"). */
TIR_API const char *tir_status_str(tir_status s);
/* The enum's name without prefix ("ERR_OUT_OF_BOUNDS"). */
TIR_API const char *tir_status_name(tir_status s);

/* ----------------------------------------------------------------- context */

typedef struct tir_ctx tir_ctx;

/* Creates a context.  Returns NULL only when memory is exhausted. */
TIR_API tir_ctx *tir_ctx_create(void);
/* Frees the context and every node, string and error in it.  NULL is fine. */
TIR_API void tir_ctx_destroy(tir_ctx *ctx);

/* The last error recorded in ctx: its code (TIR_OK if none) and message
 * ("" if none).  The message is owned by ctx and valid until the next
 * error is recorded or the error is cleared. */
TIR_API tir_status tir_ctx_error_code(const tir_ctx *ctx);
TIR_API const char *tir_ctx_error(const tir_ctx *ctx);
TIR_API void tir_ctx_clear_error(tir_ctx *ctx);
/* Records an error and returns code, so `return tir_ctx_fail(...)` works.
 * The arguments may include tir_ctx_error(ctx) (to re-label an error): the
 * message is formatted before the old one is freed. */
TIR_API tir_status tir_ctx_fail(tir_ctx *ctx, tir_status code, const char *fmt, ...)
    TIR_PRINTF(3, 4);

/* Arena allocation in ctx: zeroed, 16-byte aligned, freed with the ctx. */
TIR_API void *tir_ctx_alloc(tir_ctx *ctx, size_t size);
/* Interns a string: equal strings give the same pointer. */
TIR_API const char *tir_intern(tir_ctx *ctx, const char *s);
TIR_API const char *tir_intern_n(tir_ctx *ctx, const char *s, size_t n);
/* printf into the arena (not interned). */
TIR_API const char *tir_ctx_sprintf(tir_ctx *ctx, const char *fmt, ...) TIR_PRINTF(2, 3);

/* ------------------------------------------------------------------- types */

typedef enum tir_type_code {
    TIR_TYPE_BOOL,   /* bits 1 */
    TIR_TYPE_INT,    /* bits 8, 32, 64 */
    TIR_TYPE_UINT,   /* bits 8 */
    TIR_TYPE_FLOAT,  /* bits 16, 32, 64 */
    TIR_TYPE_BFLOAT, /* bits 16 */
    TIR_TYPE_HANDLE, /* an opaque pointer (buffer data) */
    TIR_TYPE_VOID,
} tir_type_code;

/* A scalar or vector type: lanes > 1 means a vector of `lanes` scalars. */
typedef struct tir_dtype {
    uint8_t code; /* tir_type_code */
    uint8_t bits;
    uint16_t lanes;
} tir_dtype;

#define TIR_DT(c, b, l) ((tir_dtype){(uint8_t)(c), (uint8_t)(b), (uint16_t)(l)})
#define TIR_BOOL TIR_DT(TIR_TYPE_BOOL, 1, 1)
#define TIR_I8 TIR_DT(TIR_TYPE_INT, 8, 1)
#define TIR_I32 TIR_DT(TIR_TYPE_INT, 32, 1)
#define TIR_I64 TIR_DT(TIR_TYPE_INT, 64, 1)
#define TIR_U8 TIR_DT(TIR_TYPE_UINT, 8, 1)
#define TIR_F16 TIR_DT(TIR_TYPE_FLOAT, 16, 1)
#define TIR_BF16 TIR_DT(TIR_TYPE_BFLOAT, 16, 1)
#define TIR_F32 TIR_DT(TIR_TYPE_FLOAT, 32, 1)
#define TIR_F64 TIR_DT(TIR_TYPE_FLOAT, 64, 1)
#define TIR_HANDLE TIR_DT(TIR_TYPE_HANDLE, 64, 1)
#define TIR_VOID TIR_DT(TIR_TYPE_VOID, 0, 1)

TIR_API bool tir_dtype_eq(tir_dtype a, tir_dtype b);
TIR_API tir_dtype tir_dtype_with_lanes(tir_dtype t, int lanes);
TIR_API tir_dtype tir_dtype_element(tir_dtype t); /* lanes = 1 */
TIR_API bool tir_dtype_is_int(tir_dtype t);       /* int or uint */
TIR_API bool tir_dtype_is_float(tir_dtype t);     /* float or bfloat */
TIR_API bool tir_dtype_is_bool(tir_dtype t);
/* Bytes of one value (all lanes); bool counts as one byte. */
TIR_API size_t tir_dtype_bytes(tir_dtype t);
/* "float32", "int32", "bool", "float32x4", ...  Writes at most n bytes of
 * buf (NUL included) and returns buf. */
TIR_API const char *tir_dtype_str(tir_dtype t, char *buf, size_t n);
/* Parses the names tir_dtype_str writes; returns false if unknown. */
TIR_API bool tir_dtype_parse(const char *s, size_t len, tir_dtype *out);

/* ------------------------------------------------------------------- nodes */

typedef enum tir_kind {
#define TIR_EXPR(K, S, N) TIR_KIND_##K,
#define TIR_STMT(K, S, N) TIR_KIND_##K,
#define TIR_OTHER(K, S, N) TIR_KIND_##K,
#include "minitir/nodes.def"
    TIR_KIND_COUNT
} tir_kind;

TIR_API const char *tir_kind_name(tir_kind k); /* "Add", "For", ... */
TIR_API bool tir_kind_is_expr(tir_kind k);
TIR_API bool tir_kind_is_stmt(tir_kind k);
TIR_API bool tir_kind_is_binop(tir_kind k);   /* ADD .. OR */
TIR_API bool tir_kind_is_compare(tir_kind k); /* EQ .. GE */

/* Common header of every node. */
typedef struct tir_node {
    uint16_t kind; /* tir_kind */
} tir_node;

/* Common header of every expression. */
typedef struct tir_expr {
    uint16_t kind;
    tir_dtype dtype;
} tir_expr;

/* Common header of every statement. */
typedef struct tir_stmt {
    uint16_t kind;
} tir_stmt;

typedef struct tir_buffer tir_buffer;
typedef struct tir_var tir_var;

typedef struct tir_int_imm {
    tir_expr base; /* int, uint or bool dtype */
    int64_t value;
} tir_int_imm;

typedef struct tir_float_imm {
    tir_expr base;
    double value;
} tir_float_imm;

/* A variable.  Identity is the pointer; `id` is unique within a context
 * and only used for stable ordering.  Names need not be unique. */
struct tir_var {
    tir_expr base;
    const char *name; /* interned */
    uint32_t id;
};

/* ADD .. OR.  Comparisons and And/Or give bool (with the operand lanes). */
typedef struct tir_binop {
    tir_expr base;
    const tir_expr *a, *b;
} tir_binop;

typedef struct tir_not {
    tir_expr base;
    const tir_expr *a;
} tir_not;

typedef struct tir_select {
    tir_expr base;
    const tir_expr *cond, *t, *f;
} tir_select;

typedef struct tir_cast {
    tir_expr base; /* the target dtype */
    const tir_expr *value;
} tir_cast;

/* buffer[indices].  A vector load has a Ramp as its last index and the
 * dtype of the buffer with that many lanes. */
typedef struct tir_buffer_load {
    tir_expr base;
    const tir_buffer *buffer;
    int nidx;
    const tir_expr *const *indices;
} tir_buffer_load;

/* base + [0, 1, ..., lanes-1] * stride */
typedef struct tir_ramp {
    tir_expr base;
    const tir_expr *start, *stride;
    int lanes;
} tir_ramp;

typedef struct tir_broadcast {
    tir_expr base;
    const tir_expr *value;
    int lanes;
} tir_broadcast;

typedef enum tir_intrin {
#define TIR_INTRIN(E, S, N) TIR_INTRIN_##E,
#include "minitir/intrinsics.def"
    TIR_INTRIN_COUNT
} tir_intrin;

TIR_API const char *tir_intrin_name(tir_intrin op);
TIR_API int tir_intrin_nargs(tir_intrin op); /* < 0: variadic */
/* Whether op takes n arguments: tir_intrin_nargs(op), or also 4 for
 * cp_async (the optional source size). */
TIR_API bool tir_intrin_nargs_ok(tir_intrin op, int n);
/* Looks an intrinsic up by name; returns TIR_INTRIN_COUNT if unknown. */
TIR_API tir_intrin tir_intrin_lookup(const char *name, size_t len);

typedef struct tir_call {
    tir_expr base;
    tir_intrin op;
    int nargs;
    const tir_expr *const *args;
} tir_call;

/* let var = value in body */
typedef struct tir_let {
    tir_expr base;
    const tir_var *var;
    const tir_expr *value, *body;
} tir_let;

/* An annotation value: key -> int, string or int array.  Annotation lists
 * are kept sorted by key (constructors sort them), so equality and printing
 * do not depend on insertion order. */
typedef enum tir_annot_kind { TIR_ANNOT_INT, TIR_ANNOT_STR, TIR_ANNOT_INTS } tir_annot_kind;
typedef struct tir_annot {
    const char *key; /* interned */
    tir_annot_kind kind;
    int64_t i;
    const char *s;       /* interned, for TIR_ANNOT_STR */
    int nints;           /* for TIR_ANNOT_INTS */
    const int64_t *ints; /* for TIR_ANNOT_INTS */
} tir_annot;

/* The annotation keys the library writes or reads (minitir/annotations.def).
 * Library code names them by enum; the strings are the text format. */
typedef enum tir_annot_key {
#define TIR_ANN(E, S, K) TIR_ANN_##E,
#include "minitir/annotations.def"
    TIR_ANN_COUNT
} tir_annot_key;

/* The prefix shared by the TIR_ANN_SOFTWARE_PIPELINE_* keys: lowering a
 * pipelined loop drops every annotation that carries it. */
#define TIR_ANN_PIPELINE_PREFIX "software_pipeline_"

TIR_API const char *tir_annot_key_str(tir_annot_key k);
/* The kind of value the library's readers of `k` expect. */
TIR_API tir_annot_kind tir_annot_key_kind(tir_annot_key k);
/* The key named `s`; TIR_ANN_COUNT if it is not one of the table's. */
TIR_API tir_annot_key tir_annot_key_lookup(const char *s);

typedef struct tir_range {
    const tir_expr *min, *extent;
} tir_range;

typedef enum tir_for_kind {
    TIR_FOR_SERIAL,
    TIR_FOR_PARALLEL,
    TIR_FOR_VECTORIZED,
    TIR_FOR_UNROLLED,
    TIR_FOR_THREAD_BINDING, /* thread_tag names the axis */
} tir_for_kind;

TIR_API const char *tir_for_kind_name(tir_for_kind k); /* "serial", ... */

typedef struct tir_for {
    tir_stmt base;
    const tir_var *var;
    const tir_expr *min, *extent;
    tir_for_kind kind;
    const char *thread_tag; /* interned "blockIdx.x", "threadIdx.y", ... or NULL */
    int nannots;
    const tir_annot *annots;
    const tir_stmt *body;
} tir_for;

typedef enum tir_iter_kind {
    TIR_ITER_SPATIAL, /* data parallel */
    TIR_ITER_REDUCE,
} tir_iter_kind;

/* A block's iteration variable: its domain and kind. */
typedef struct tir_iter_var {
    const tir_var *var;
    tir_range dom;
    tir_iter_kind kind;
} tir_iter_var;

/* buffer[min0 : min0+extent0, ...] */
typedef struct tir_buffer_region {
    const tir_buffer *buffer;
    int ndim;
    const tir_range *ranges;
} tir_buffer_region;

/* A block: the unit of computation that schedules move around.  Iter vars
 * are bound by the enclosing BlockRealize.  `init` (may be NULL) runs
 * before the first reduction step; `allocs` are buffers local to the
 * block. */
typedef struct tir_block {
    tir_stmt base;
    const char *name; /* interned */
    int niters;
    const tir_iter_var *iters;
    int nreads;
    const tir_buffer_region *reads;
    int nwrites;
    const tir_buffer_region *writes;
    const tir_stmt *init; /* may be NULL */
    const tir_stmt *body;
    int nallocs;
    const tir_buffer *const *allocs;
    int nannots;
    const tir_annot *annots;
} tir_block;

/* Binds a block's iter vars to values and guards it by a predicate. */
typedef struct tir_block_realize {
    tir_stmt base;
    int nvalues; /* == block->niters */
    const tir_expr *const *values;
    const tir_expr *predicate; /* bool */
    const tir_block *block;
} tir_block_realize;

/* buffer[indices] = value (a Ramp last index for vector stores) */
typedef struct tir_buffer_store {
    tir_stmt base;
    const tir_buffer *buffer;
    const tir_expr *value;
    int nidx;
    const tir_expr *const *indices;
} tir_buffer_store;

typedef struct tir_seq {
    tir_stmt base;
    int n;
    const tir_stmt *const *stmts;
} tir_seq;

typedef struct tir_if {
    tir_stmt base;
    const tir_expr *cond;
    const tir_stmt *then_s;
    const tir_stmt *else_s; /* may be NULL */
} tir_if;

/* Allocates `buffer` (its scope says where) for the duration of body.
 * Annotations carry layout requests that lowering applies later (e.g.
 * "dim_align", docs/lowering.md), so that a dump shows them. */
typedef struct tir_allocate {
    tir_stmt base;
    const tir_buffer *buffer;
    const tir_stmt *body;
    int nannots;
    const tir_annot *annots;
} tir_allocate;

typedef struct tir_evaluate {
    tir_stmt base;
    const tir_expr *value;
} tir_evaluate;

/* Warp fragments (frag.a, frag.b, frag.acc) are the tensor-core operand
 * scopes (TVM's "warp" / "wmma.matrix_a" ...): a fragment buffer belongs
 * to one warp, and each of its tiles is spread over the warp's 32 lanes
 * in the layout the mma.sync instruction defines (tir_frag_layout_of);
 * lowering turns it into per-thread registers.  Only tensor intrinsics
 * (mma_sync, ldmatrix, frag_fill, frag_load, frag_store) touch one. */
typedef enum tir_scope {
    TIR_SCOPE_GLOBAL,
    TIR_SCOPE_SHARED,
    TIR_SCOPE_LOCAL,
    TIR_SCOPE_FRAG_A,   /* "frag.a": the A (M x K) operand of mma.sync */
    TIR_SCOPE_FRAG_B,   /* "frag.b": the B (K x N) operand */
    TIR_SCOPE_FRAG_ACC, /* "frag.acc": the float32 accumulator (M x N) */
} tir_scope;
#define TIR_SCOPE_LAST TIR_SCOPE_FRAG_ACC

TIR_API const char *tir_scope_name(tir_scope s); /* "global", ... */
TIR_API bool tir_scope_is_frag(tir_scope s);

/* The lane layout of one tile of a fragment: which lane holds which
 * element of the tile in which of its registers (PTX ISA, "Matrix
 * Fragments for mma.m16n8k16" and "... mma.m16n8k8" with .tf32).  The
 * operand's element type picks the instruction: float16 / bfloat16
 * operands use m16n8k16, float32 operands (rounded to TF32) m16n8k8; the
 * accumulator is float32 for both.  Per lane l, g = l / 4, t = l % 4:
 *   m16n8k16 A 16x16, 8 regs: row g + 8*((v/2)%2), col 2t + v%2 + 8*(v/4)
 *   m16n8k16 B 16x8,  4 regs: row 2t + v%2 + 8*(v/2), col g
 *   m16n8k8  A 16x8,  4 regs: row g + 8*(v%2),        col t + 4*(v/2)
 *   m16n8k8  B 8x8,   2 regs: row t + 4*v,            col g
 *   acc      16x8,    4 regs: row g + 8*(v/2),        col 2t + v%2
 * (B rows are k, B columns n.)  A fragment buffer's last two dimensions
 * are whole numbers of tiles; lowering stores its tiles one after another
 * (row-major over tiles, leading dimensions outermost), `regs` registers
 * each, in every lane. */
typedef struct tir_frag_layout {
    int tile_rows, tile_cols; /* the tile's shape */
    int regs;                 /* registers (elements) per lane per tile */
    int kind;                 /* TIR_FRAG_* below */
} tir_frag_layout;
enum {
    TIR_FRAG_K16_A, /* m16n8k16 A, f16/bf16 */
    TIR_FRAG_K16_B, /* m16n8k16 B, f16/bf16 */
    TIR_FRAG_K8_A,  /* m16n8k8 A, tf32 (float32 storage) */
    TIR_FRAG_K8_B,  /* m16n8k8 B, tf32 (float32 storage) */
    TIR_FRAG_ACC,   /* accumulator, float32 */
};
/* The layout of a fragment of scope s and element type t; false when s
 * is not a fragment scope or t is not an operand type of that scope. */
TIR_API bool tir_frag_layout_of(tir_scope s, tir_dtype t, tir_frag_layout *out);
/* Row and column in the tile of register v (0 <= v < regs) of lane
 * (0 <= lane < 32). */
TIR_API int tir_frag_row(const tir_frag_layout *l, int lane, int v);
TIR_API int tir_frag_col(const tir_frag_layout *l, int lane, int v);
TIR_API bool tir_scope_parse(const char *s, size_t len, tir_scope *out);

/* A multi-dimensional buffer.  Identity is the pointer.  strides == NULL
 * means compact row-major; elem_offset is in elements. */
struct tir_buffer {
    tir_node base;
    const char *name; /* interned */
    uint32_t id;
    tir_dtype dtype; /* element type (lanes == 1) */
    int ndim;
    const tir_expr *const *shape;
    const tir_expr *const *strides; /* NULL or ndim entries */
    const tir_expr *elem_offset;    /* int32 */
    tir_scope scope;
    int align; /* bytes */
};

/* A function: params are variables; buffer_map[i] is the buffer bound to
 * params[i], or NULL for a scalar parameter.  body is normally a
 * BlockRealize of the root block. */
typedef struct tir_prim_func {
    tir_node base;
    const char *name;
    int nparams;
    const tir_var *const *params;
    const tir_buffer *const *buffer_map;
    const tir_stmt *body;
    int nattrs;
    const tir_annot *attrs;
} tir_prim_func;

/* Checked downcasts: NULL when the kind does not match (or n is NULL). */
#define TIR_DECL_AS(S, COND)                                                   \
    static inline const S *tir_as_##S(const void *n) {                         \
        return (n && (COND)) ? (const S *)n : NULL;                            \
    }
#define TIR_K(n) ((tir_kind)((const tir_node *)(n))->kind)
TIR_DECL_AS(tir_int_imm, TIR_K(n) == TIR_KIND_INT_IMM)
TIR_DECL_AS(tir_float_imm, TIR_K(n) == TIR_KIND_FLOAT_IMM)
TIR_DECL_AS(tir_var, TIR_K(n) == TIR_KIND_VAR)
TIR_DECL_AS(tir_binop, tir_kind_is_binop(TIR_K(n)))
TIR_DECL_AS(tir_not, TIR_K(n) == TIR_KIND_NOT)
TIR_DECL_AS(tir_select, TIR_K(n) == TIR_KIND_SELECT)
TIR_DECL_AS(tir_cast, TIR_K(n) == TIR_KIND_CAST)
TIR_DECL_AS(tir_buffer_load, TIR_K(n) == TIR_KIND_BUFFER_LOAD)
TIR_DECL_AS(tir_ramp, TIR_K(n) == TIR_KIND_RAMP)
TIR_DECL_AS(tir_broadcast, TIR_K(n) == TIR_KIND_BROADCAST)
TIR_DECL_AS(tir_call, TIR_K(n) == TIR_KIND_CALL)
TIR_DECL_AS(tir_let, TIR_K(n) == TIR_KIND_LET)
TIR_DECL_AS(tir_for, TIR_K(n) == TIR_KIND_FOR)
TIR_DECL_AS(tir_block_realize, TIR_K(n) == TIR_KIND_BLOCK_REALIZE)
TIR_DECL_AS(tir_block, TIR_K(n) == TIR_KIND_BLOCK)
TIR_DECL_AS(tir_buffer_store, TIR_K(n) == TIR_KIND_BUFFER_STORE)
TIR_DECL_AS(tir_seq, TIR_K(n) == TIR_KIND_SEQ)
TIR_DECL_AS(tir_if, TIR_K(n) == TIR_KIND_IF)
TIR_DECL_AS(tir_allocate, TIR_K(n) == TIR_KIND_ALLOCATE)
TIR_DECL_AS(tir_evaluate, TIR_K(n) == TIR_KIND_EVALUATE)
TIR_DECL_AS(tir_buffer, TIR_K(n) == TIR_KIND_BUFFER)
TIR_DECL_AS(tir_prim_func, TIR_K(n) == TIR_KIND_PRIM_FUNC)
#undef TIR_K

/* Constant value of an IntImm, or false if e is not one. */
TIR_API bool tir_expr_const_int(const tir_expr *e, int64_t *out);

/* ------------------------------------------------------------ construction
 *
 * Arrays passed in are copied into the arena.  Constructors assert on
 * ill-typed input (operand dtypes that differ, a non-bool condition, ...).
 */

TIR_API const tir_expr *tir_int(tir_ctx *ctx, tir_dtype t, int64_t v);
TIR_API const tir_expr *tir_i32(tir_ctx *ctx, int64_t v);
TIR_API const tir_expr *tir_bool(tir_ctx *ctx, bool v);
TIR_API const tir_expr *tir_float(tir_ctx *ctx, tir_dtype t, double v);
TIR_API const tir_expr *tir_f32(tir_ctx *ctx, double v);
/* A fresh variable (name may be NULL: "v"). */
TIR_API const tir_var *tir_var_new(tir_ctx *ctx, const char *name, tir_dtype t);
/* kind must satisfy tir_kind_is_binop. */
TIR_API const tir_expr *tir_binop_new(tir_ctx *ctx, tir_kind kind, const tir_expr *a,
                                      const tir_expr *b);
/* Binary helpers, one per binary kind (operands of one dtype; comparisons
 * give bool, and/or take bool).  tir_div and tir_mod are floor division
 * and modulo, as TVM's defaults for integers (`//`, `%`); tir_truncdiv
 * and tir_truncmod round toward zero (C's / and %, TIR_KIND_DIV/MOD). */
TIR_API const tir_expr *tir_add(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_sub(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_mul(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_floordiv(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_floormod(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_div(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_mod(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_truncdiv(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_truncmod(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_min(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_max(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_eq(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_ne(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_lt(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_le(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_gt(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_ge(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_and(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_or(tir_ctx *ctx, const tir_expr *a, const tir_expr *b);
TIR_API const tir_expr *tir_not_new(tir_ctx *ctx, const tir_expr *a);
TIR_API const tir_expr *tir_select_new(tir_ctx *ctx, const tir_expr *cond, const tir_expr *t,
                                       const tir_expr *f);
TIR_API const tir_expr *tir_cast_new(tir_ctx *ctx, tir_dtype t, const tir_expr *v);
/* dtype: the buffer's element type, widened to the lanes of a Ramp index. */
TIR_API const tir_expr *tir_load(tir_ctx *ctx, const tir_buffer *buf, int nidx,
                                 const tir_expr *const *indices);
TIR_API const tir_expr *tir_ramp_new(tir_ctx *ctx, const tir_expr *start,
                                     const tir_expr *stride, int lanes);
TIR_API const tir_expr *tir_broadcast_new(tir_ctx *ctx, const tir_expr *v, int lanes);
/* dtype: for math intrinsics the dtype of args[0]. */
TIR_API const tir_expr *tir_call_new(tir_ctx *ctx, tir_dtype t, tir_intrin op, int nargs,
                                     const tir_expr *const *args);
TIR_API const tir_expr *tir_let_new(tir_ctx *ctx, const tir_var *v, const tir_expr *value,
                                    const tir_expr *body);

/* Expression depth.  The walkers over the IR (printer, tir_struct_equal,
 * tir_struct_hash, visitor, mutator, simplifier, interpreter, verifier,
 * lowering passes, codegen) recurse on the C stack, a few frames per
 * level.  They are tested (tests/test_deep_ir.c, under ASan with an 8 MB
 * stack) on expressions TIR_MAX_EXPR_DEPTH deep inside statements nested
 * as deep as the parser allows, and work to several times that.  The
 * parser refuses deeper expressions (a chain a + b + c + ... is one level
 * per operator); trees built with the constructors should stay within it
 * too: far deeper ones can exhaust the stack. */
#define TIR_MAX_EXPR_DEPTH 1000
/* The depth of e (a leaf is 1, NULL is 0), or limit + 1 when it is deeper
 * than limit.  Uses no recursion and stops at the first path longer than
 * limit, so it is safe on any tree. */
TIR_API int tir_expr_depth(const tir_expr *e, int limit);

/* Copies and sorts annots by key.  Duplicate keys assert. */
TIR_API const tir_annot *tir_annots_copy(tir_ctx *ctx, int n, const tir_annot *annots);
TIR_API const tir_annot *tir_annots_find(int n, const tir_annot *annots, const char *key);
/* tir_annots_find for one of the table's keys. */
TIR_API const tir_annot *tir_annots_get(int n, const tir_annot *annots, tir_annot_key key);

TIR_API const tir_stmt *tir_for_new(tir_ctx *ctx, const tir_var *v, const tir_expr *min,
                                    const tir_expr *extent, tir_for_kind kind,
                                    const char *thread_tag, int nannots,
                                    const tir_annot *annots, const tir_stmt *body);
TIR_API const tir_stmt *tir_store(tir_ctx *ctx, const tir_buffer *buf, const tir_expr *value,
                                  int nidx, const tir_expr *const *indices);
/* Flattens nested SeqStmts and drops NULL entries; one statement is
 * returned as is; zero statements give Evaluate(0). */
TIR_API const tir_stmt *tir_seq_new(tir_ctx *ctx, int n, const tir_stmt *const *stmts);
TIR_API const tir_stmt *tir_if_new(tir_ctx *ctx, const tir_expr *cond, const tir_stmt *then_s,
                                   const tir_stmt *else_s);
TIR_API const tir_stmt *tir_allocate_new(tir_ctx *ctx, const tir_buffer *buf,
                                         const tir_stmt *body);
/* An Allocate with annotations (copied and sorted by key). */
TIR_API const tir_stmt *tir_allocate_annotated(tir_ctx *ctx, const tir_buffer *buf, int nannots,
                                               const tir_annot *annots, const tir_stmt *body);
TIR_API const tir_stmt *tir_evaluate_new(tir_ctx *ctx, const tir_expr *value);

/* Everything a block holds; used to build and to rebuild blocks. */
typedef struct tir_block_desc {
    const char *name;
    int niters;
    const tir_iter_var *iters;
    int nreads;
    const tir_buffer_region *reads;
    int nwrites;
    const tir_buffer_region *writes;
    const tir_stmt *init;
    const tir_stmt *body;
    int nallocs;
    const tir_buffer *const *allocs;
    int nannots;
    const tir_annot *annots;
} tir_block_desc;

TIR_API const tir_block *tir_block_new(tir_ctx *ctx, const tir_block_desc *d);
/* Fills d from an existing block (arrays alias the block's, read-only). */
TIR_API void tir_block_describe(const tir_block *b, tir_block_desc *d);
/* predicate NULL means true. */
TIR_API const tir_stmt *tir_block_realize_new(tir_ctx *ctx, int nvalues,
                                              const tir_expr *const *values,
                                              const tir_expr *predicate,
                                              const tir_block *block);
/* Copies ranges into the arena. */
TIR_API tir_buffer_region tir_region_new(tir_ctx *ctx, const tir_buffer *buf, int ndim,
                                         const tir_range *ranges);
/* The region covering the whole buffer. */
TIR_API tir_buffer_region tir_region_full(tir_ctx *ctx, const tir_buffer *buf);

typedef struct tir_buffer_desc {
    const char *name;
    tir_dtype dtype;
    int ndim;
    const tir_expr *const *shape;
    const tir_expr *const *strides; /* NULL: row-major */
    const tir_expr *elem_offset;    /* NULL: 0 */
    tir_scope scope;
    int align; /* 0: the element size */
} tir_buffer_desc;

TIR_API const tir_buffer *tir_buffer_new(tir_ctx *ctx, const tir_buffer_desc *d);
/* Shortcut: constant shape, row-major, global scope. */
TIR_API const tir_buffer *tir_buffer_simple(tir_ctx *ctx, const char *name, tir_dtype t,
                                            int ndim, const int64_t *shape, tir_scope scope);
TIR_API void tir_buffer_describe(const tir_buffer *b, tir_buffer_desc *d);
/* Number of elements when the shape is constant; -1 otherwise. */
TIR_API int64_t tir_buffer_const_size(const tir_buffer *b);

TIR_API const tir_prim_func *tir_prim_func_new(tir_ctx *ctx, const char *name, int nparams,
                                               const tir_var *const *params,
                                               const tir_buffer *const *buffer_map,
                                               const tir_stmt *body, int nattrs,
                                               const tir_annot *attrs);

/* --------------------------------------------------------------- traversal */

/* Pre-order visit.  pre() is called on every node reached (expressions,
 * statements, Block nodes, buffers at each use, the Var at each use and at
 * each definition); when it returns false the node's children are skipped.
 * post() (may be NULL) is called after the children.  Buffer shapes are not
 * entered. */
typedef struct tir_visitor tir_visitor;
struct tir_visitor {
    bool (*pre)(tir_visitor *v, const tir_node *n);
    void (*post)(tir_visitor *v, const tir_node *n);
    void *user;
};
TIR_API void tir_visit(tir_visitor *v, const void *node);

/* Mutator: on[kind] (may be NULL) replaces the default rewrite of nodes of
 * that kind; it may call tir_mutate_default to rewrite the children first.
 * The default rebuilds a node only when a child changed, so untouched
 * subtrees are shared.  Defining occurrences of variables (loop vars, iter
 * vars, let vars) are not passed to the mutator; buffers at each use are
 * (so a BUFFER entry can substitute buffers), while their shapes are not
 * entered. */
typedef struct tir_mutator tir_mutator;
typedef const tir_node *(*tir_mutate_fn)(tir_mutator *m, const tir_node *n);
struct tir_mutator {
    tir_ctx *ctx;
    tir_mutate_fn on[TIR_KIND_COUNT];
    void *user;
};
TIR_API const tir_node *tir_mutate(tir_mutator *m, const void *node);
TIR_API const tir_node *tir_mutate_default(tir_mutator *m, const void *node);
static inline const tir_expr *tir_mutate_expr(tir_mutator *m, const tir_expr *e) {
    return (const tir_expr *)tir_mutate(m, e);
}
static inline const tir_stmt *tir_mutate_stmt(tir_mutator *m, const tir_stmt *s) {
    return (const tir_stmt *)tir_mutate(m, s);
}

/* Replaces free uses of vars[i] by values[i] in node (expr, stmt, or func
 * body).  Values must have the dtype of their variable. */
TIR_API const tir_node *tir_substitute(tir_ctx *ctx, const void *node, int n,
                                       const tir_var *const *vars,
                                       const tir_expr *const *values);
/* Replaces every use of buffer old_bufs[i] by new_bufs[i] (loads, stores,
 * regions, allocations). */
TIR_API const tir_node *tir_replace_buffers(tir_ctx *ctx, const void *node, int n,
                                            const tir_buffer *const *old_bufs,
                                            const tir_buffer *const *new_bufs);
/* True if var occurs in node. */
TIR_API bool tir_uses_var(const void *node, const tir_var *var);
/* True if node loads from any buffer: a value of the user's data (which
 * wraps, unlike index arithmetic: docs/lowered-ir.md). */
TIR_API bool tir_reads_buffer(const void *node);

/* ------------------------------------------------------ structural equality
 *
 * Two nodes are structurally equal when they have the same shape and
 * values, with variables and buffers compared up to a consistent renaming
 * (a bijection built as they are first met, definitions and free uses
 * alike).  Names are ignored for variables and buffers, but not for blocks
 * and functions.
 */
TIR_API bool tir_struct_equal(const void *a, const void *b);
/* Like tir_struct_equal; on a mismatch writes the first difference (a path
 * from the root and both sides) into buf. */
TIR_API bool tir_struct_equal_explain(const void *a, const void *b, char *buf, size_t n);
/* A hash consistent with tir_struct_equal. */
TIR_API uint64_t tir_struct_hash(const void *node);

/* Checks that f is well formed: every variable used is defined (a
 * parameter, an enclosing loop / let / block iter var, or a buffer shape
 * variable of a parameter), every buffer used is a parameter or allocated
 * by an enclosing block or Allocate, block bindings match their iter vars
 * and dtypes, reduce iters appear only in blocks with an init or a
 * reduction update, indices match buffer ranks; no variable is defined
 * again inside its own scope.  Returns TIR_OK or TIR_ERR_VERIFY with a
 * message naming the offending variable, buffer or block and where it is
 * (function, innermost block, enclosing loops). */
TIR_API tir_status tir_verify(tir_ctx *ctx, const tir_prim_func *f);

/* ---------------------------------------------------------------- printing
 *
 * TVMScript-style text (T.prim_func, T.grid, T.block, T.axis.remap,
 * T.reads, T.writes, T.init, ...).  tir_parse_func reads the same text:
 * parse(print(f)) is structurally equal to f and print(parse(t)) == t for
 * printed text.
 */

/* Prints an expression, statement, buffer or function.  The string is owned
 * by ctx. */
TIR_API const char *tir_print(tir_ctx *ctx, const void *node);
/* Like tir_print, but each line holding one of the `marks` nodes (loops,
 * blocks, statements) is followed by a line of carets under it, as used by
 * error messages. */
TIR_API const char *tir_print_marked(tir_ctx *ctx, const void *node, int nmarks,
                                     const void *const *marks);

/* Parses one T.prim_func from text (len bytes, need not be NUL-terminated).
 * On failure returns TIR_ERR_PARSE (or TIR_ERR_TYPE for ill-typed text),
 * sets *out to NULL and leaves "line:col: message" in ctx. */
TIR_API tir_status tir_parse_func(tir_ctx *ctx, const char *text, size_t len,
                                  const tir_prim_func **out);

/* -------------------------------------------------------------- arithmetic
 *
 * An analyzer knows integer ranges of variables and uses them to simplify
 * expressions and prove facts, e.g. i*32 + j < 1024 given 0 <= i < 32 and
 * 0 <= j < 32.  The canonical form of an integer expression is a sum of
 * terms with constant coefficients, in a deterministic order.  Constant
 * folding follows each dtype (integers wrap, floats round to their
 * precision, division by zero is never folded); rules that reason with
 * ranges assume, like TVM's arith module, that integer index arithmetic
 * does not overflow.
 */
typedef struct tir_analyzer tir_analyzer;

/* Inclusive bounds; INT64_MIN / INT64_MAX mean unbounded. */
typedef struct tir_int_bound {
    int64_t min, max;
} tir_int_bound;

/* Creates an analyzer that allocates new nodes in ctx.  Free it with
 * tir_analyzer_destroy (NULL is fine). */
TIR_API tir_analyzer *tir_analyzer_create(tir_ctx *ctx);
TIR_API void tir_analyzer_destroy(tir_analyzer *a);
/* Declares min <= v < min + extent.  Rebinding a variable replaces its
 * range. */
TIR_API void tir_analyzer_bind(tir_analyzer *a, const tir_var *v, const tir_expr *min,
                               const tir_expr *extent);
TIR_API void tir_analyzer_bind_const(tir_analyzer *a, const tir_var *v, int64_t min,
                                     int64_t extent);
/* Forgets v's range. */
TIR_API void tir_analyzer_unbind(tir_analyzer *a, const tir_var *v);
/* Simplifies e (any dtype; only integer and boolean arithmetic is
 * rewritten beyond constant folding).  Returns e itself when nothing
 * changes. */
TIR_API const tir_expr *tir_analyzer_simplify(tir_analyzer *a, const tir_expr *e);
/* True only when cond (bool) is proven true for every value of the bound
 * variables.  False means "not proven". */
TIR_API bool tir_analyzer_can_prove(tir_analyzer *a, const tir_expr *cond);
/* Constant bounds of an integer expression (never wider than its dtype's
 * range, so an unknown int32 gives [INT32_MIN, INT32_MAX]). */
TIR_API tir_int_bound tir_analyzer_const_bound(tir_analyzer *a, const tir_expr *e);
/* Simplifies every expression in a statement, binding loop and block iter
 * variables to their ranges on the way down.  An IfThenElse whose
 * condition becomes constant is replaced by the branch that runs (kept
 * when it is false and has no else). */
TIR_API const tir_stmt *tir_analyzer_simplify_stmt(tir_analyzer *a, const tir_stmt *s);
/* The symbolic range covered by integer expression e when vars[0..nvars)
 * range over their bound domains, other variables kept symbolic: on
 * success out->min is the smallest value and out->extent the number of
 * values of [min, min + extent) (e.g. relaxing i*32 + j over j in [0, 32)
 * gives min i*32, extent 32).  Exact for affine expressions, a superset
 * otherwise.  Returns false when the range is unbounded (a relaxed
 * variable without a binding, a division by something of unknown sign). */
TIR_API bool tir_analyzer_relax(tir_analyzer *a, const tir_expr *e, int nvars,
                                const tir_var *const *vars, tir_range *out);
/* tir_analyzer_relax of each index (a buffer region); out has nidx
 * entries.  False if any dimension is unbounded. */
TIR_API bool tir_analyzer_relax_region(tir_analyzer *a, int nidx,
                                       const tir_expr *const *indices, int nvars,
                                       const tir_var *const *vars, tir_range *out);
/* Shortcut: simplify with no known ranges. */
TIR_API const tir_expr *tir_simplify(tir_ctx *ctx, const tir_expr *e);

/* ----------------------------------------------------- reference interpreter
 *
 * Runs a function with TIR's sequential semantics (thread-bound, parallel,
 * vectorized and unrolled loops run as ordinary loops) on host arrays.
 * Buffer arguments are dense arrays in the buffer's layout (row-major
 * unless strides say otherwise) of its dtype; float16/bfloat16 elements are
 * their 16-bit patterns.  Out-of-bounds accesses and reads of elements
 * never written are errors (TIR_ERR_OUT_OF_BOUNDS / TIR_ERR_UNINIT_READ)
 * whose message names the buffer, the indices and shows the statement.
 * The logical tensor-core intrinsics (frag_fill, frag_load, frag_store,
 * mma_sync, wgmma on fragment buffers) run at tile level (intrinsics.def);
 * misuse (not a tile origin, wrong scope or dtype) is TIR_ERR_EVAL, a
 * wgmma region outside its buffer TIR_ERR_OUT_OF_BOUNDS, and the
 * lowered-only lane_id, ldmatrix, shfl_xor and wgmma_sync are
 * TIR_ERR_UNSUPPORTED.
 */
typedef struct tir_arg {
    void *data;     /* buffer parameters */
    int64_t scalar; /* scalar parameters */
} tir_arg;

typedef struct tir_interp_opts {
    /* Bit i set: parameter i's buffer starts uninitialised (an output), so
     * reading an element before writing it is an error. */
    uint64_t uninit_params;
} tir_interp_opts;

/* args has f->nparams entries.  opts may be NULL (all parameters
 * initialised). */
TIR_API tir_status tir_interp_run(tir_ctx *ctx, const tir_prim_func *f, int nargs,
                                  const tir_arg *args, const tir_interp_opts *opts);

/* ------------------------------------------------------ tensor expressions
 *
 * A small TE layer: placeholders and computes (elementwise or reductions)
 * turned into a prim_func with one block per stage, like TVM's
 * te.create_prim_func.  Tensors live in the ctx.
 */
typedef struct tir_te_tensor tir_te_tensor;

typedef enum tir_te_reducer { TIR_TE_SUM, TIR_TE_MAX, TIR_TE_MIN } tir_te_reducer;

/* Builds the value of one output element from the spatial axes (and, for
 * reductions, the reduce axes). */
typedef const tir_expr *(*tir_te_fcompute)(tir_ctx *ctx, const tir_var *const *axes,
                                           const tir_var *const *raxes, void *user);

TIR_API tir_te_tensor *tir_te_placeholder(tir_ctx *ctx, const char *name, tir_dtype t,
                                          int ndim, const int64_t *shape);
/* An elementwise stage: out[axes] = f(axes).  dtype comes from the body. */
TIR_API tir_te_tensor *tir_te_compute(tir_ctx *ctx, const char *name, int ndim,
                                      const int64_t *shape, tir_te_fcompute f, void *user);
/* A reduction stage: out[axes] = reduce over raxes of f(axes, raxes). */
TIR_API tir_te_tensor *tir_te_reduce(tir_ctx *ctx, const char *name, int ndim,
                                     const int64_t *shape, tir_te_reducer r, int nraxes,
                                     const int64_t *rextents, tir_te_fcompute f, void *user);
TIR_API const tir_buffer *tir_te_buffer(const tir_te_tensor *t);
/* t[indices...] as an expression. */
TIR_API const tir_expr *tir_te_at(tir_ctx *ctx, const tir_te_tensor *t, int nidx,
                                  const tir_expr *const *indices);
/* Builds a function whose parameters are `args` in order (inputs and
 * outputs); stages not in args become buffers allocated in the root block.
 * Returns NULL and records an error if a stage depends on a tensor that is
 * neither an argument nor computed. */
TIR_API const tir_prim_func *tir_te_create_prim_func(tir_ctx *ctx, const char *name, int nargs,
                                                     tir_te_tensor *const *args);

/* Ready definitions.  Shapes are any positive integers.  Block names are
 * the stage names given in brackets; the last parameters are the outputs.
 *   matmul:            C[M,N] = sum_k A[M,K] B[K,N]                  [C]
 *   matmul_nt:         C[M,N] = sum_k A[M,K] B[N,K]                  [C]
 *   matmul_bias:       C = A·B; D[i,j] = C[i,j] + bias[j]            [C, D]
 *   matmul_bias_relu:  C = A·B; D[i,j] = max(C[i,j] + bias[j], 0)    [C, D]
 *   batch_matmul:      C[b,M,N] = sum_k A[b,M,K] B[b,K,N]            [C]
 *   conv2d_nchw:       pad, then conv: Out[n,o,y,x] = sum_{c,ry,rx}
 *                      Pad[n,c,y*s+ry,x*s+rx] W[o,c,ry,rx]           [pad, conv]
 *   elementwise_chain: B = A*2; C = B+1; D = max(C, 0)...           [B, C, D]
 * Return NULL with an error (TIR_ERR_SHAPE) for non-positive shapes. */
TIR_API const tir_prim_func *tir_def_matmul(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                            tir_dtype t);
/* C[i,j] (acc) = sum_k acc(A[i,k]) * acc(B[k,j]) with A and B of type `in`:
 * the tensor-core matmul (in = float16 / bfloat16, acc = float32).  With
 * in == acc it is tir_def_matmul. */
TIR_API const tir_prim_func *tir_def_matmul_mixed(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                                  tir_dtype in, tir_dtype acc);
TIR_API const tir_prim_func *tir_def_matmul_nt(tir_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                               tir_dtype t);
TIR_API const tir_prim_func *tir_def_matmul_bias(tir_ctx *ctx, int64_t M, int64_t N,
                                                 int64_t K, tir_dtype t);
TIR_API const tir_prim_func *tir_def_matmul_bias_relu(tir_ctx *ctx, int64_t M, int64_t N,
                                                      int64_t K, tir_dtype t);
TIR_API const tir_prim_func *tir_def_batch_matmul(tir_ctx *ctx, int64_t batch, int64_t M,
                                                  int64_t N, int64_t K, tir_dtype t);
TIR_API const tir_prim_func *tir_def_conv2d_nchw(tir_ctx *ctx, int64_t n, int64_t c,
                                                 int64_t h, int64_t w, int64_t o, int64_t kh,
                                                 int64_t kw, int64_t stride, int64_t pad,
                                                 tir_dtype t);
TIR_API const tir_prim_func *tir_def_elementwise_chain(tir_ctx *ctx, int64_t M, int64_t N,
                                                       tir_dtype t);

#ifdef __cplusplus
}
#endif
#endif
