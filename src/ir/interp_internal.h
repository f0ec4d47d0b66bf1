/* interp_internal.h: the reference interpreter's compiled form and
 * evaluator, shared with later executors (the SIMT simulator).  Not
 * installed.
 *
 * Running a function has two phases:
 *
 *   1. ir_prog_compile turns a prim_func into an ir_prog: a tree of
 *      ir_cstmt / ir_cexpr nodes in which every variable definition has a
 *      slot (an index into an environment's `vars`) and every distinct
 *      buffer has a buffer slot (an index into `bufs`).  Type dispatch is
 *      decided here (each node carries its type class), so evaluation does
 *      no lookups and no allocation per access.  The prog is immutable and
 *      may be shared by any number of environments.
 *
 *   2. An ir_env is one thread of execution: its own variable values, its
 *      own buffer table, the first error it hit, and hooks.  ir_exec runs
 *      the whole body (or ir_exec_stmt one compiled statement) in it.
 *
 * Memory is pluggable: a buffer slot points at an ir_mbuf (data pointer,
 * per-element "written" bytes, evaluated shape and strides).  The
 * interpreter fills the parameter slots itself (ir_env_bind_params); a
 * simulator that wants global memory shared between thread environments
 * binds one set of ir_mbufs into every env with ir_env_set_buf.  Storage
 * for Allocate statements and block alloc_buffers comes from
 * hooks->alloc / hooks->release when given (a SIMT simulator returns the
 * same shared-scope storage to all threads of a thread block), else from
 * malloc, fresh and unwritten at each entry.
 *
 * GPU intrinsics go to hooks->intrin first; without a hook (or when it
 * declines) syncthreads and cp_async_commit / cp_async_wait are no-ops,
 * cp_async copies at once, atomic_add adds at once (one thread runs at a
 * time), and address_of gives a pointer into the buffer's storage that
 * cp_async and atomic_add resolve back to its buffer.
 *
 * Thread-bound loops: by default every For runs as an ordinary loop.  With
 * env->simt set, a THREAD_BINDING loop over blockIdx.* / threadIdx.* does
 * not iterate: its variable takes env->thread_idx[axis] (+ min) and the
 * body runs once, or not at all when that index is outside the extent.
 * vthread loops always iterate.
 *
 * Errors: evaluation records the first error in env->status (with the
 * message in env->ctx) and yields zeros from then on; statements check the
 * status after each expression and stop, so nothing is stored after an
 * error.  Nothing in the evaluator keeps global or per-node state: all of
 * it is in the env and on the C stack, so environments can run on
 * separate stacks (coroutines) and interleave at barriers.
 */
#ifndef MINITIR_INTERP_INTERNAL_H
#define MINITIR_INTERP_INTERNAL_H

#include "ir_internal.h"

#define IR_MAX_LANES 64 /* masks are uint64_t */
#define IR_MAX_DIMS 16
/* Arguments of a call: 8, except wgmma_sync's groups of 5 (up to
 * IR_WGMMA_MAX_GROUPS of them: wgmma_group merges no more). */
#define IR_MAX_CALL_ARGS (5 * IR_WGMMA_MAX_GROUPS)

/* One scalar value: `i` for bool / int / uint (bool as 0/1, unsigned
 * zero-extended, signed sign-extended, always wrapped to the width), `f`
 * for float32, float16 and bfloat16 (the latter two hold values exactly
 * representable in the 16-bit type), `d` for float64, `p` for handles. */
typedef union ir_val {
    int64_t i;
    float f;
    double d;
    void *p;
} ir_val;

/* Type classes: the dtypes the interpreter computes in. */
typedef enum ir_tc {
    IR_TC_BOOL,
    IR_TC_I8,
    IR_TC_I32,
    IR_TC_I64,
    IR_TC_U8,
    IR_TC_F16,
    IR_TC_BF16,
    IR_TC_F32,
    IR_TC_F64,
    IR_TC_HANDLE,
    IR_TC_VOID,
} ir_tc;

/* Thread axes for env->thread_idx: the launch axes of minitir/target.h. */
enum {
    IR_BLOCK_X = TIR_AXIS_BLOCK_X,
    IR_THREAD_X = TIR_AXIS_THREAD_X,
    IR_NAXES = TIR_NLAUNCH_AXES
};

/* The storage of one buffer as seen by one env.  elem_offset, shape and
 * strides are evaluated when the buffer is bound (parameters) or allocated
 * (Allocate, block alloc_buffers); strides are in elements. */
typedef struct ir_mbuf {
    const tir_buffer *buffer;
    unsigned char *data;
    uint8_t *written; /* one byte per storage element; NULL: all written */
    int64_t size;     /* storage elements: data holds size * elem_bytes bytes */
    int elem_bytes;
    ir_tc tc;
    int ndim;
    int64_t elem_offset;
    int64_t shape[IR_MAX_DIMS];
    int64_t strides[IR_MAX_DIMS];
    void *owner; /* for whoever allocated data (hooks->release) */
    bool watch;  /* every element access goes to hooks->access */
} ir_mbuf;

typedef struct ir_cexpr ir_cexpr;
typedef struct ir_cstmt ir_cstmt;

/* A compiled expression.  kind is the tir_kind of src except for the
 * address_of argument, which compiles as a BUFFER_LOAD with `addr` set. */
struct ir_cexpr {
    uint16_t kind;
    uint8_t tc;  /* result type class */
    uint8_t otc; /* operand type class (binops, compares, casts) */
    uint16_t lanes;
    const tir_expr *src;
    const ir_cexpr *a, *b, *c;
    union {
        ir_val k;  /* INT_IMM, FLOAT_IMM */
        int slot;  /* VAR (first of `lanes` slots), LET (its variable) */
        struct {
            int buf;
            int nidx;
            const ir_cexpr *const *idx;
            bool addr; /* address_of: yield the element's address */
        } ld;
        struct {
            tir_intrin op;
            int nargs;
            const ir_cexpr *const *args;
        } call;
    } u;
};

/* A buffer declaration: how to set up its ir_mbuf. */
typedef struct ir_cbuf {
    int slot;
    const tir_buffer *buffer;
    const ir_cexpr *elem_offset;
    const ir_cexpr *const *shape;
    const ir_cexpr *const *strides; /* NULL: row-major */
} ir_cbuf;

typedef struct ir_cblock {
    const tir_block *block;
    int niters;
    const int *iter_slots;
    const ir_cexpr *const *values;
    const ir_cexpr *predicate; /* NULL: true */
    const bool *iter_reduce;   /* [niters] */
    const ir_cexpr *const *dom_mins;    /* [niters] */
    const ir_cexpr *const *dom_extents; /* [niters] */
    const int64_t *dom_lo, *dom_ext;    /* the same when all constant, else NULL */
    int nallocs;
    const ir_cbuf *allocs;
    const ir_cstmt *init; /* NULL if none */
    const ir_cstmt *body;
} ir_cblock;

/* A compiled statement; kind is the tir_kind of src. */
struct ir_cstmt {
    uint16_t kind;
    const tir_stmt *src;
    union {
        struct {
            int slot;
            const ir_cexpr *min, *extent;
            int axis; /* IR_BLOCK_X.. for blockIdx / threadIdx, else -1 */
            const ir_cstmt *body;
        } loop;
        struct {
            int n;
            const ir_cstmt *const *stmts;
        } seq;
        struct {
            int buf;
            int nidx;
            const ir_cexpr *const *idx;
            const ir_cexpr *value;
        } store;
        struct {
            const ir_cexpr *cond;
            const ir_cstmt *then_s, *else_s;
        } ifs;
        struct {
            ir_cbuf buf;
            const ir_cstmt *body;
        } alloc;
        const ir_cexpr *eval;
        ir_cblock block; /* BLOCK_REALIZE, and a bare BLOCK (no iters) */
    } u;
};

typedef struct ir_prog {
    const tir_prim_func *func;
    int nslots; /* variable slots */
    int nbufs;  /* buffer slots */
    const ir_cbuf *params; /* [func->nparams]; slot -1 for scalars */
    const int *param_slots; /* [func->nparams] variable slot of each param */
    const ir_cstmt *body;
    ir_arena arena; /* private: holds the program itself */
} ir_prog;

typedef struct ir_env ir_env;

typedef struct ir_hooks {
    /* Provide storage for m (buffer, shape, strides, size, elem_bytes are
     * filled in): set m->data, m->written (all zero) and m->owner.  Return
     * TIR_OK or an error recorded in env->ctx. */
    tir_status (*alloc)(ir_env *env, ir_mbuf *m);
    void (*release)(ir_env *env, ir_mbuf *m);
    /* Called for every GPU intrinsic (syncthreads, address_of excluded,
     * cp_async*, atomic_add) with evaluated args; return true when handled (result
     * set), false for the default behaviour. */
    bool (*intrin)(ir_env *env, const ir_cexpr *call, const ir_val *args, ir_val *result);
    /* Called for every load and store of an element of a buffer whose
     * mbuf has `watch` set (a simulator's race and cp_async checks), after
     * the bounds check and before the "written" check; off is the storage
     * offset.  Reports errors with ir_env_fail. */
    void (*access)(ir_env *env, ir_mbuf *m, int64_t off, bool store);
} ir_hooks;

struct ir_env {
    const ir_prog *prog;
    tir_ctx *ctx;
    ir_val *vars;  /* [prog->nslots] */
    ir_mbuf **bufs; /* [prog->nbufs]: NULL while not allocated */
    ir_mbuf *own;   /* [prog->nbufs]: storage for the mbufs this env sets up */
    tir_status status;
    const tir_block *cur_block; /* for messages */
    const tir_stmt *cur_stmt;
    const ir_hooks *hooks; /* may be NULL */
    void *user;
    bool simt;
    int64_t thread_idx[IR_NAXES];
};

/* Compiles f.  Errors (unbound variables, unsupported dtypes, more than
 * IR_MAX_LANES lanes) return a status with the message in ctx. */
tir_status ir_prog_compile(tir_ctx *ctx, const tir_prim_func *f, ir_prog **out);
void ir_prog_free(ir_prog *p);

/* A zeroed env for p (no buffers bound); NULL when out of memory. */
ir_env *ir_env_new(const ir_prog *p, tir_ctx *ctx, const ir_hooks *hooks, void *user);
/* Releases buffers this env allocated and still holds, then the env. */
void ir_env_free(ir_env *e);
/* Sets scalar parameters and binds buffer parameters to args[i].data in
 * env-owned ir_mbufs (parameter i starts unwritten when bit i of uninit is
 * set).  nargs must equal the parameter count. */
tir_status ir_env_bind_params(ir_env *e, int nargs, const tir_arg *args, uint64_t uninit);
/* Points buffer slot `slot` at m (owned by the caller), e.g. another env's
 * parameter mbuf. */
void ir_env_set_buf(ir_env *e, int slot, ir_mbuf *m);

/* Runs the function body / one compiled statement. */
tir_status ir_exec(ir_env *e);
tir_status ir_exec_stmt(ir_env *e, const ir_cstmt *s);
/* Evaluates a scalar (lanes == 1) expression. */
ir_val ir_eval(ir_env *e, const ir_cexpr *x);

/* Records an error in e (only the first one sticks) naming the current
 * block and statement. */
tir_status ir_env_fail(ir_env *e, tir_status code, const char *fmt, ...) TIR_PRINTF(3, 4);
/* The buffer whose storage holds address p (*byte_off: p's offset in it),
 * or NULL: how cp.async finds its operands in the interpreter and the
 * simulator. */
ir_mbuf *ir_resolve_addr(ir_env *e, const void *p, int64_t *byte_off);
/* atomic_add(args[0] = address, args[1] = value): the element's buffer
 * and storage offset (*off, in elements), or NULL after recording an
 * error (an address outside every buffer; not a float32 global buffer). */
ir_mbuf *ir_atomic_target(ir_env *e, const ir_val *args, int64_t *off);
/* Adds v to element off of m (an uninitialised-read error if it was never
 * written); the simulator calls it after its race check. */
void ir_atomic_apply(ir_env *e, ir_mbuf *m, int64_t off, ir_val v);

/* Element access by indices with the checks of an ordinary BufferLoad /
 * BufferStore (bounds, hooks->access on watched buffers, unwritten
 * elements; a store marks the element written); zero / the status after
 * recording an error. */
ir_val ir_load_idx(ir_env *e, ir_mbuf *m, const int64_t *idx);
tir_status ir_store_idx(ir_env *e, ir_mbuf *m, const int64_t *idx, ir_val v);
/* The same by storage offset (already known to be inside m's storage). */
ir_val ir_load_off(ir_env *e, ir_mbuf *m, int64_t off);
tir_status ir_store_off(ir_env *e, ir_mbuf *m, int64_t off, ir_val v);
/* The buffer bound to slot, or NULL after recording an error naming b. */
ir_mbuf *ir_need_buf(ir_env *e, int slot, const tir_buffer *b);
/* v of type class `from` converted as a Cast to type class `to` does. */
ir_val ir_cast_val(int from, int to, ir_val v);

/* Tensor cores (interp_tc.c).  The interpreter's semantics of the logical
 * tile intrinsics frag_fill / frag_load / frag_store / mma_sync / wgmma
 * on fragment buffers, and the error for the lowered-only lane_id,
 * ldmatrix, shfl_xor and wgmma_sync; call x is one of these (after hooks->intrin declined). */
ir_val ir_tc_call(ir_env *e, const ir_cexpr *x);
/* One mma.sync tile: d (16x8) += a (16 x k) . b (k x 8) with k = 16
 * (m16n8k16) or 8 (m16n8k8); with tf32 the inputs are first rounded to
 * TF32 (ir_tf32_round).  Exact products, summed with d in double in k
 * order, rounded once to float32: the interpreter and the simulator share
 * it so they agree bit for bit. */
void ir_mma_tile(float d[16][8], const float a[16][16], const float b[16][8], int k, bool tf32);
/* x rounded to TF32 (10 mantissa bits), to nearest, ties to even, as
 * cvt.rn.tf32.f32 (and codegen's emulation of it before sm_90); Inf and
 * NaN unchanged, a finite x past the largest TF32 value becomes Inf. */
float ir_tf32_round(float x);
/* x truncated to TF32 (the low 13 mantissa bits cleared: toward zero),
 * what the tensor core does to a float32 operand it reads from shared
 * memory; Inf and NaN unchanged. */
float ir_tf32_trunc(float x);
/* d + sum over q < k of a[q] b[q] (inputs already rounded to the mma's
 * precision, so the products are exact in double), summed in double in q
 * order and rounded once to float32: ir_mma_tile's and wgmma's sum. */
float ir_mma_dot(float d, const float *a, const float *b, int k);
/* One element of a wgmma: c + sum over k < 8 of trunc(s[k]) rn(b[k])
 * (ir_tf32_trunc, ir_tf32_round; ir_mma_dot).  The interpreter's wgmma
 * and the simulator's wgmma_sync share it so they agree bit for bit. */
float ir_wgmma_elem(float c, const float s[8], const float b[8]);

#endif
