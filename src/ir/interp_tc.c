/* interp_tc.c: the tensor-core intrinsics in the reference interpreter.
 *
 * Before lowering, fragments are ordinary buffers of scope frag.a /
 * frag.b / frag.acc whose last two dimensions are whole tiles
 * (tir_frag_layout_of), and the four logical intrinsics work on one tile
 * at a time with no notion of lanes (docs/tensor-cores.md, tc-design):
 *   frag_fill(F, v)   every element of the tile = v
 *   frag_load(F, S)   tile (r, c) = S[.., i0 + r, j0 + c], 0 outside S
 *   frag_store(F, D)  D[.., i0 + r, j0 + c] = tile (r, c) inside D only
 *   mma_sync(C, A, B) C += A . B, m16n8k16 (16-bit A, B) or m16n8k8
 *                     (float32 A, B rounded to TF32)
 *   wgmma(C, S, B, R) C (R x 16, frag.acc) += S (R x 8, a shared float32
 *                     tile, truncated to TF32) . B (8 x 16, frag.b, two
 *                     tiles, rounded to TF32): one warp's share of
 *                     Hopper's warpgroup MMA (intrinsics.def), whose
 *                     regions span several tiles and must lie inside
 *                     their buffers (no clipping)
 * Each operand is address_of(BufferLoad) and is read here from the
 * compiled load (buffer slot and indices), not from the evaluated
 * pointer, since a clipped frag_load / frag_store origin may lie outside
 * its buffer.  Element accesses go through the interpreter's checked
 * paths (bounds, unwritten elements, a simulator's watch hook).  lane_id,
 * ldmatrix, shfl_xor and wgmma_sync exist only per lane, after
 * lower_fragments: the interpreter refuses them (the simulator executes
 * them as warp and warpgroup collectives).
 *
 * The arithmetic of one mma tile, ir_mma_tile, is shared with the
 * simulator so both oracles round alike: products are exact in double
 * (16-bit and TF32 inputs have at most 11 significant bits), the sum
 * D + sum_k A[i,k] B[k,j] is accumulated in double in k order and rounded
 * once to float32; ir_wgmma_elem is the same sum for one element of a
 * wgmma, which the simulator's wgmma_sync shares.  The GPU's internal
 * order and precision differ within the verification tolerance.
 */
#include <string.h>

#include "interp_internal.h"

float ir_tf32_round(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return x; /* Inf, NaN: as they are */
    /* Keep 10 mantissa bits, to nearest, ties to even (cvt.rn.tf32.f32):
     * adding half an ulp of TF32 less one, plus the lowest kept bit, carries
     * on a tie only into an odd kept bit; a carry out of the mantissa
     * raises the exponent (to Inf past the largest finite), as it should. */
    u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    memcpy(&x, &u, 4);
    return x;
}

float ir_tf32_trunc(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return x; /* Inf, NaN: as they are */
    u &= 0xffffe000u; /* keep 10 mantissa bits, toward zero */
    memcpy(&x, &u, 4);
    return x;
}

float ir_mma_dot(float d, const float *a, const float *b, int k) {
    double s = d;
    for (int q = 0; q < k; q++) s += (double)a[q] * (double)b[q];
    return (float)s;
}

void ir_mma_tile(float d[16][8], const float a[16][16], const float b[16][8], int k, bool tf32) {
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) {
            float x[16], y[16];
            for (int q = 0; q < k; q++) {
                x[q] = tf32 ? ir_tf32_round(a[i][q]) : a[i][q];
                y[q] = tf32 ? ir_tf32_round(b[q][j]) : b[q][j];
            }
            d[i][j] = ir_mma_dot(d[i][j], x, y, k);
        }
}

float ir_wgmma_elem(float c, const float s[8], const float b[8]) {
    float x[8], y[8];
    for (int k = 0; k < 8; k++) {
        x[k] = ir_tf32_trunc(s[k]);
        y[k] = ir_tf32_round(b[k]);
    }
    return ir_mma_dot(c, x, y, 8);
}

/* ================================================================ operands */

/* One operand: its buffer, the evaluated indices of its origin and, for a
 * fragment, the tile layout. */
typedef struct tc_ref {
    ir_mbuf *m;
    int64_t idx[IR_MAX_DIMS];
    tir_frag_layout l;
} tc_ref;

static const char *op_name(const ir_cexpr *x) { return tir_intrin_name(x->u.call.op); }

static const tir_buffer *ref_buffer(const ir_cexpr *x, int i) {
    return ((const tir_buffer_load *)x->u.call.args[i]->u.call.args[0]->src)->buffer;
}

/* Operand i of call x, which must be address_of(BufferLoad) with scalar
 * indices: its buffer and origin, not bounds-checked. */
static bool operand(ir_env *e, const ir_cexpr *x, int i, tc_ref *out) {
    const ir_cexpr *a = x->u.call.args[i];
    if (a->kind != TIR_KIND_CALL || a->u.call.op != TIR_INTRIN_ADDRESS_OF) {
        ir_env_fail(e, TIR_ERR_EVAL, "%s: operand %d must be address_of(BufferLoad)",
                    op_name(x), i);
        return false;
    }
    const ir_cexpr *ld = a->u.call.args[0];
    out->m = ir_need_buf(e, ld->u.ld.buf, ref_buffer(x, i));
    if (!out->m) return false;
    for (int d = 0; d < ld->u.ld.nidx; d++) {
        if (ld->u.ld.idx[d]->lanes != 1) {
            ir_env_fail(e, TIR_ERR_EVAL, "%s: operand %d (%s) has a vector index", op_name(x), i,
                        out->m->buffer->name);
            return false;
        }
        out->idx[d] = ir_eval(e, ld->u.ld.idx[d]).i;
    }
    if (e->status) return false;
    if (out->m->ndim < 2) {
        ir_env_fail(e, TIR_ERR_EVAL, "%s: operand %d (%s) must have at least 2 dimensions",
                    op_name(x), i, out->m->buffer->name);
        return false;
    }
    return true;
}

/* Operand i as a fragment of one of `scopes` (a bit per tir_scope) at a
 * tile origin, with its whole tile inside the buffer. */
static bool frag_operand(ir_env *e, const ir_cexpr *x, int i, unsigned scopes, tc_ref *out) {
    if (!operand(e, x, i, out)) return false;
    const tir_buffer *b = out->m->buffer;
    char dt[32];
    tir_dtype_str(b->dtype, dt, sizeof dt);
    if (!(scopes >> b->scope & 1)) {
        ir_env_fail(e, TIR_ERR_EVAL, "%s: operand %d must be a fragment of scope %s, but %s is %s",
                    op_name(x), i,
                    scopes == 1u << TIR_SCOPE_FRAG_ACC ? "frag.acc"
                    : scopes == 1u << TIR_SCOPE_FRAG_A ? "frag.a"
                    : scopes == 1u << TIR_SCOPE_FRAG_B ? "frag.b"
                    : scopes == (1u << TIR_SCOPE_FRAG_A | 1u << TIR_SCOPE_FRAG_B)
                        ? "frag.a or frag.b"
                        : "frag.a, frag.b or frag.acc",
                    b->name, tir_scope_name(b->scope));
        return false;
    }
    if (!tir_frag_layout_of(b->scope, b->dtype, &out->l)) {
        ir_env_fail(e, TIR_ERR_EVAL,
                    "%s: fragment %s has dtype %s, not an element type of scope %s (frag.a, "
                    "frag.b: float16, bfloat16, float32; frag.acc: float32)",
                    op_name(x), b->name, dt, tir_scope_name(b->scope));
        return false;
    }
    int nd = out->m->ndim;
    int64_t r0 = out->idx[nd - 2], c0 = out->idx[nd - 1];
    bool lead_ok = true;
    for (int d = 0; d < nd - 2; d++) lead_ok &= (uint64_t)out->idx[d] < (uint64_t)out->m->shape[d];
    if (!lead_ok || r0 < 0 || c0 < 0 || r0 % out->l.tile_rows || c0 % out->l.tile_cols ||
        r0 + out->l.tile_rows > out->m->shape[nd - 2] ||
        c0 + out->l.tile_cols > out->m->shape[nd - 1]) {
        ir_env_fail(e, TIR_ERR_EVAL,
                    "%s: operand %d (%s[.., %lld, %lld], shape [.., %lld, %lld]) is not the origin "
                    "of a whole %dx%d tile of the fragment",
                    op_name(x), i, b->name, (long long)r0, (long long)c0,
                    (long long)out->m->shape[nd - 2], (long long)out->m->shape[nd - 1],
                    out->l.tile_rows, out->l.tile_cols);
        return false;
    }
    return true;
}

/* Operand i as a non-fragment buffer of f's dtype (frag_load / store). */
static bool mem_operand(ir_env *e, const ir_cexpr *x, int i, const tc_ref *f, tc_ref *out) {
    if (!operand(e, x, i, out)) return false;
    const tir_buffer *b = out->m->buffer;
    if (tir_scope_is_frag(b->scope)) {
        ir_env_fail(e, TIR_ERR_EVAL, "%s: operand %d (%s) must not be a fragment (scope %s)",
                    op_name(x), i, b->name, tir_scope_name(b->scope));
        return false;
    }
    if (!tir_dtype_eq(b->dtype, f->m->buffer->dtype)) {
        char d1[32], d2[32];
        ir_env_fail(e, TIR_ERR_EVAL, "%s: %s has dtype %s but fragment %s has %s", op_name(x),
                    b->name, tir_dtype_str(b->dtype, d1, sizeof d1), f->m->buffer->name,
                    tir_dtype_str(f->m->buffer->dtype, d2, sizeof d2));
        return false;
    }
    return true;
}

/* The indices of element (r, c) of the tile at ref's origin; false when
 * they fall outside the buffer (clipped). */
static bool at(const tc_ref *ref, int r, int c, int64_t *idx) {
    int nd = ref->m->ndim;
    memcpy(idx, ref->idx, sizeof(int64_t) * (size_t)nd);
    idx[nd - 2] += r;
    idx[nd - 1] += c;
    for (int d = 0; d < nd; d++)
        if ((uint64_t)idx[d] >= (uint64_t)ref->m->shape[d]) return false;
    return true;
}

/* ================================================================== ops */

static void frag_fill(ir_env *e, const ir_cexpr *x) {
    tc_ref f;
    unsigned any = 1u << TIR_SCOPE_FRAG_A | 1u << TIR_SCOPE_FRAG_B | 1u << TIR_SCOPE_FRAG_ACC;
    if (!frag_operand(e, x, 0, any, &f)) return;
    const ir_cexpr *vx = x->u.call.args[1];
    if (vx->lanes != 1 || vx->tc >= IR_TC_HANDLE) {
        ir_env_fail(e, TIR_ERR_EVAL, "frag_fill: the value must be a scalar number");
        return;
    }
    ir_val v = ir_cast_val(vx->tc, f.m->tc, ir_eval(e, vx));
    int64_t idx[IR_MAX_DIMS];
    for (int r = 0; r < f.l.tile_rows && !e->status; r++)
        for (int c = 0; c < f.l.tile_cols && !e->status; c++) {
            at(&f, r, c, idx);
            ir_store_idx(e, f.m, idx, v);
        }
}

static void frag_load(ir_env *e, const ir_cexpr *x) {
    tc_ref f, s;
    unsigned ab = 1u << TIR_SCOPE_FRAG_A | 1u << TIR_SCOPE_FRAG_B;
    if (!frag_operand(e, x, 0, ab, &f) || !mem_operand(e, x, 1, &f, &s)) return;
    int64_t fi[IR_MAX_DIMS], si[IR_MAX_DIMS];
    for (int r = 0; r < f.l.tile_rows && !e->status; r++)
        for (int c = 0; c < f.l.tile_cols && !e->status; c++) {
            ir_val v = {0}; /* 0 as float: all bits zero */
            if (at(&s, r, c, si)) v = ir_load_idx(e, s.m, si);
            at(&f, r, c, fi);
            if (!e->status) ir_store_idx(e, f.m, fi, v);
        }
}

static void frag_store(ir_env *e, const ir_cexpr *x) {
    tc_ref f, d;
    if (!frag_operand(e, x, 0, 1u << TIR_SCOPE_FRAG_ACC, &f) || !mem_operand(e, x, 1, &f, &d))
        return;
    int64_t fi[IR_MAX_DIMS], di[IR_MAX_DIMS];
    for (int r = 0; r < f.l.tile_rows && !e->status; r++)
        for (int c = 0; c < f.l.tile_cols && !e->status; c++) {
            if (!at(&d, r, c, di)) continue;
            at(&f, r, c, fi);
            ir_val v = ir_load_idx(e, f.m, fi);
            if (!e->status) ir_store_idx(e, d.m, di, v);
        }
}

/* Reads the tile at ref into t (row stride `ld` floats). */
static void read_tile(ir_env *e, const tc_ref *ref, float *t, int ld) {
    int64_t idx[IR_MAX_DIMS];
    for (int r = 0; r < ref->l.tile_rows && !e->status; r++)
        for (int c = 0; c < ref->l.tile_cols && !e->status; c++) {
            at(ref, r, c, idx);
            t[r * ld + c] = ir_load_idx(e, ref->m, idx).f;
        }
}

static void mma_sync(ir_env *e, const ir_cexpr *x) {
    tc_ref d, a, b;
    if (!frag_operand(e, x, 0, 1u << TIR_SCOPE_FRAG_ACC, &d) ||
        !frag_operand(e, x, 1, 1u << TIR_SCOPE_FRAG_A, &a) ||
        !frag_operand(e, x, 2, 1u << TIR_SCOPE_FRAG_B, &b))
        return;
    if (!tir_dtype_eq(a.m->buffer->dtype, b.m->buffer->dtype)) {
        char d1[32], d2[32];
        ir_env_fail(e, TIR_ERR_EVAL, "mma_sync: A (%s, %s) and B (%s, %s) differ in dtype",
                    a.m->buffer->name, tir_dtype_str(a.m->buffer->dtype, d1, sizeof d1),
                    b.m->buffer->name, tir_dtype_str(b.m->buffer->dtype, d2, sizeof d2));
        return;
    }
    float dt[16][8], at_[16][16], bt[16][8];
    read_tile(e, &d, &dt[0][0], 8);
    read_tile(e, &a, &at_[0][0], 16);
    read_tile(e, &b, &bt[0][0], 8);
    if (e->status) return;
    bool tf32 = a.l.kind == TIR_FRAG_K8_A;
    ir_mma_tile(dt, (const float(*)[16])at_, (const float(*)[8])bt, tf32 ? 8 : 16, tf32);
    int64_t idx[IR_MAX_DIMS];
    for (int r = 0; r < 16 && !e->status; r++)
        for (int c = 0; c < 8 && !e->status; c++) {
            ir_val v;
            v.f = dt[r][c];
            at(&d, r, c, idx);
            ir_store_idx(e, d.m, idx, v);
        }
}

/* ================================================================ wgmma */

/* Operand i of wgmma: a float32 buffer of `scope`. */
static bool wg_operand(ir_env *e, const ir_cexpr *x, int i, tir_scope scope, tc_ref *out) {
    if (!operand(e, x, i, out)) return false;
    const tir_buffer *b = out->m->buffer;
    if (b->scope == scope && tir_dtype_eq(b->dtype, TIR_F32)) return true;
    char dt[32];
    ir_env_fail(e, TIR_ERR_EVAL, "wgmma: operand %d (%s) must be a float32 buffer of scope %s, "
                "but is %s of scope %s",
                i, b->name, tir_scope_name(scope), tir_dtype_str(b->dtype, dt, sizeof dt),
                tir_scope_name(b->scope));
    return false;
}

/* ref's region of rows x cols elements from its origin: inside the
 * buffer (no clipping: a wgmma reads whole tiles), the origin's row a
 * multiple of ra and its column of ca (whole fragment tiles). */
static bool wg_region(ir_env *e, int i, const tc_ref *ref, int64_t rows, int64_t cols, int ra,
                      int ca) {
    int nd = ref->m->ndim;
    const int64_t *sh = ref->m->shape;
    int64_t r0 = ref->idx[nd - 2], c0 = ref->idx[nd - 1];
    const char *name = ref->m->buffer->name;
    bool lead_ok = true;
    for (int d = 0; d < nd - 2; d++) lead_ok &= (uint64_t)ref->idx[d] < (uint64_t)sh[d];
    if (!lead_ok || r0 < 0 || c0 < 0 || r0 + rows > sh[nd - 2] || c0 + cols > sh[nd - 1]) {
        ir_env_fail(e, TIR_ERR_OUT_OF_BOUNDS,
                    "wgmma: operand %d: the %lldx%lld region from %s[.., %lld, %lld] does not lie "
                    "inside %s (shape [.., %lld, %lld])",
                    i, (long long)rows, (long long)cols, name, (long long)r0, (long long)c0, name,
                    (long long)sh[nd - 2], (long long)sh[nd - 1]);
        return false;
    }
    if (r0 % ra || c0 % ca) {
        ir_env_fail(e, TIR_ERR_EVAL,
                    "wgmma: operand %d (%s[.., %lld, %lld], %lld rows) must start at a row that is "
                    "a multiple of %d and a column that is a multiple of %d (whole fragment tiles)",
                    i, name, (long long)r0, (long long)c0, (long long)rows, ra, ca);
        return false;
    }
    return true;
}

/* Element (r, c) of ref's region (inside it: wg_region). */
static float wg_load(ir_env *e, const tc_ref *ref, int r, int c) {
    int64_t idx[IR_MAX_DIMS];
    at(ref, r, c, idx);
    return ir_load_idx(e, ref->m, idx).f;
}

/* wgmma(c, a, b, rows): C[r0+i, c0+j] += sum_k trunc(S[i0+i, k0+k]) *
 * rn(B[q0+k, c1+j]), i < R, j < 16, k < 8 (intrinsics.def).  C's row
 * origin is a multiple of 16 unless R is an odd multiple of 8 (a half
 * tile at the end), then of 8. */
static void wgmma(ir_env *e, const ir_cexpr *x) {
    tc_ref c, s, b;
    if (!wg_operand(e, x, 0, TIR_SCOPE_FRAG_ACC, &c) ||
        !wg_operand(e, x, 1, TIR_SCOPE_SHARED, &s) || !wg_operand(e, x, 2, TIR_SCOPE_FRAG_B, &b))
        return;
    const ir_cexpr *rx = x->u.call.args[3];
    int64_t R = rx->lanes == 1 && rx->tc <= IR_TC_U8 ? ir_eval(e, rx).i : 0;
    if (e->status) return;
    if (R < 8 || R > 256 || R % 8) {
        ir_env_fail(e, TIR_ERR_EVAL, "wgmma: rows must be a multiple of 8 from 8 to 256, not %lld",
                    (long long)R);
        return;
    }
    if (!wg_region(e, 0, &c, R, 16, R % 16 ? 8 : 16, 16) || !wg_region(e, 1, &s, R, 8, 1, 1) ||
        !wg_region(e, 2, &b, 8, 16, 8, 16))
        return;
    float sv[256][8], bt[16][8]; /* S's rows, B's columns */
    for (int i = 0; i < R && !e->status; i++)
        for (int k = 0; k < 8; k++) sv[i][k] = wg_load(e, &s, i, k);
    for (int k = 0; k < 8; k++)
        for (int j = 0; j < 16; j++) bt[j][k] = wg_load(e, &b, k, j);
    int64_t idx[IR_MAX_DIMS];
    for (int i = 0; i < R && !e->status; i++)
        for (int j = 0; j < 16 && !e->status; j++) {
            ir_val v;
            v.f = ir_wgmma_elem(wg_load(e, &c, i, j), sv[i], bt[j]);
            at(&c, i, j, idx);
            if (!e->status) ir_store_idx(e, c.m, idx, v);
        }
}

ir_val ir_tc_call(ir_env *e, const ir_cexpr *x) {
    ir_val r = {0};
    switch (x->u.call.op) {
    case TIR_INTRIN_FRAG_FILL: frag_fill(e, x); break;
    case TIR_INTRIN_FRAG_LOAD: frag_load(e, x); break;
    case TIR_INTRIN_FRAG_STORE: frag_store(e, x); break;
    case TIR_INTRIN_MMA_SYNC: mma_sync(e, x); break;
    case TIR_INTRIN_WGMMA: wgmma(e, x); break;
    default:
        ir_env_fail(e, TIR_ERR_UNSUPPORTED,
                    "%s is an intrinsic of lowered kernels (per lane of a warp or warpgroup): the "
                    "interpreter runs the logical tile intrinsics (frag_fill, frag_load, "
                    "frag_store, mma_sync, wgmma on fragments); run a lowered kernel in the "
                    "simulator (tir_sim_run)",
                    op_name(x));
        break;
    }
    return r;
}
