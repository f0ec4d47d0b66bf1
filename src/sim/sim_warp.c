/* sim_warp.c: what the warp-collective tensor-core intrinsics do, given
 * the 32 lanes of a warp gathered at one call (sim.c makes them meet).
 *
 * In a lowered kernel (docs/lowered-ir.md) a fragment is a per-thread
 * local array: lane l's registers of a tile are `regs` consecutive
 * elements from the element whose address the lane passes, and register
 * v holds tile element (tir_frag_row(l, v), tir_frag_col(l, v)).
 *   mma_sync(d, a, b): gathers the A, B and D tiles from all lanes'
 *     registers, computes D += A.B with the interpreter's ir_mma_tile
 *     (so the simulator and the interpreter agree bit for bit), and
 *     scatters D back.
 *   ldmatrix(trans, num, dst, src): lane l < 8 num supplies row l % 8 of
 *     matrix l / 8, 16 bytes at src in shared memory (16-byte aligned);
 *     of 16-bit elements (8 a row) lane l receives elements (l/4, 2(l%4)
 *     + j), j = 0, 1, of matrix i (of its transpose with trans) in
 *     dst[2i + j]; of 32-bit ones (4 a row, each a pair of the hardware's
 *     16-bit elements; no trans) element (l/4, l%4) of matrix i in dst[i].
 *   shfl_xor(value, lane_mask): lane l's result is the value lane
 *     l ^ lane_mask passed.  The values were loaded by each lane before it
 *     reached the call, so an unwritten register it passes was already
 *     reported there (check_uninit), as the lane that read it.
 * Every element goes through the interpreter's checked access in the env
 * of the lane whose operand it is, so the simulator's race and
 * uninitialised-read checks see the shared rows ldmatrix reads as reads
 * by the lane that supplied the row, and errors name that lane.
 */
#include "sim_warp.h"

/* A lane's operand: the buffer and storage element an address points at. */
typedef struct lane_ref {
    ir_mbuf *m;
    int64_t off; /* storage element */
} lane_ref;

static const char *dts(tir_dtype t, char *b) { return tir_dtype_str(t, b, 32); }

/* Resolves operand `which` of op (the address p, in lane e) to an element
 * of a buffer of `scope`; `need` elements from there must lie inside it. */
static bool lane_operand(ir_env *e, const char *op, int which, const void *p, tir_scope scope,
                         int64_t need, lane_ref *out) {
    int64_t byte = 0;
    ir_mbuf *m = ir_resolve_addr(e, p, &byte);
    if (!m) {
        ir_env_fail(e, TIR_ERR_EVAL, "%s: operand %d is not the address of a buffer element", op,
                    which);
        return false;
    }
    if (m->buffer->scope != scope) {
        ir_env_fail(e, TIR_ERR_EVAL,
                    "%s: operand %d points into %s buffer %s, but must point into a %s buffer%s",
                    op, which, tir_scope_name(m->buffer->scope), m->buffer->name,
                    tir_scope_name(scope),
                    tir_scope_is_frag(m->buffer->scope)
                        ? " (fragments are lowered to local arrays by lower_fragments)"
                        : "");
        return false;
    }
    out->m = m;
    out->off = byte / m->elem_bytes;
    if (out->off + need > m->size) {
        ir_env_fail(e, TIR_ERR_OUT_OF_BOUNDS,
                    "%s: operand %d needs %lld elements of %s from element %lld, past its end "
                    "(%lld elements)",
                    op, which, (long long)need, m->buffer->name,
                    (long long)(out->off - m->elem_offset), (long long)(m->size - m->elem_offset));
        return false;
    }
    return true;
}

/* The layout of the fragment a lane's operand `which` holds (scope says
 * which operand of mma it is), from the array's dtype. */
static bool operand_layout(ir_env *e, int which, const lane_ref *r, tir_scope s,
                           tir_frag_layout *l) {
    if (tir_frag_layout_of(s, r->m->buffer->dtype, l)) return true;
    char b[32];
    ir_env_fail(e, TIR_ERR_EVAL,
                "mma_sync: operand %d (%s) has dtype %s; A and B must be float16, bfloat16 or "
                "float32, D float32",
                which, r->m->buffer->name, dts(r->m->buffer->dtype, b));
    return false;
}

/* Reads (gather) or writes (scatter) lane l's registers of tile t (row
 * stride ld) through its operand r. */
static bool lane_tile(ir_env *e, const lane_ref *r, const tir_frag_layout *l, int lane, float *t,
                      int ld, bool store) {
    for (int v = 0; v < l->regs; v++) {
        float *x = &t[tir_frag_row(l, lane, v) * ld + tir_frag_col(l, lane, v)];
        if (store) {
            ir_val val;
            val.f = *x;
            ir_store_off(e, r->m, r->off + v, val);
        } else {
            *x = ir_load_off(e, r->m, r->off + v).f;
        }
        if (e->status) return false;
    }
    return true;
}

int simw_mma(ir_env *const *lanes, const ir_val *const *args) {
    static const tir_scope scopes[3] = {TIR_SCOPE_FRAG_ACC, TIR_SCOPE_FRAG_A, TIR_SCOPE_FRAG_B};
    float tiles[3][16 * 16];
    const int ld[3] = {8, 16, 8};
    tir_frag_layout l[3];
    lane_ref r[SIM_WARP][3];
    for (int lane = 0; lane < SIM_WARP; lane++) {
        ir_env *e = lanes[lane];
        for (int k = 0; k < 3; k++) {
            tir_frag_layout want;
            /* the register count comes from the dtype: resolve with 1, check below */
            if (!lane_operand(e, "mma_sync", k, args[lane][k].p, TIR_SCOPE_LOCAL, 1, &r[lane][k]) ||
                !operand_layout(e, k, &r[lane][k], scopes[k], &want) ||
                !lane_operand(e, "mma_sync", k, args[lane][k].p, TIR_SCOPE_LOCAL, want.regs,
                              &r[lane][k]))
                return lane;
            l[k] = want;
        }
        if (!tir_dtype_eq(r[lane][1].m->buffer->dtype, r[lane][2].m->buffer->dtype)) {
            char b1[32], b2[32];
            ir_env_fail(e, TIR_ERR_EVAL, "mma_sync: A (%s, %s) and B (%s, %s) differ in dtype",
                        r[lane][1].m->buffer->name, dts(r[lane][1].m->buffer->dtype, b1),
                        r[lane][2].m->buffer->name, dts(r[lane][2].m->buffer->dtype, b2));
            return lane;
        }
        for (int k = 0; k < 3; k++)
            if (!lane_tile(e, &r[lane][k], &l[k], lane, tiles[k], ld[k], false)) return lane;
    }
    bool tf32 = l[1].kind == TIR_FRAG_K8_A;
    ir_mma_tile((float(*)[8])tiles[0], (const float(*)[16])tiles[1],
                (const float(*)[8])tiles[2], tf32 ? 8 : 16, tf32);
    for (int lane = 0; lane < SIM_WARP; lane++)
        if (!lane_tile(lanes[lane], &r[lane][0], &l[0], lane, tiles[0], 8, true)) return lane;
    return -1;
}

/* trans and num of every lane: the same, and valid. */
static int ldmatrix_shape(ir_env *const *lanes, const ir_val *const *args, int *trans, int *num) {
    *trans = (int)args[0][0].i;
    *num = (int)args[0][1].i;
    for (int lane = 0; lane < SIM_WARP; lane++) {
        int64_t t = args[lane][0].i, n = args[lane][1].i;
        if ((t != 0 && t != 1) || (n != 1 && n != 2 && n != 4) || t != *trans || n != *num) {
            ir_env_fail(lanes[lane], TIR_ERR_EVAL,
                        "ldmatrix(%lld, %lld, ..): trans must be 0 or 1 and num 1, 2 or 4, the "
                        "same in every lane (lane 0 has %d, %d)",
                        (long long)t, (long long)n, *trans, *num);
            return lane;
        }
    }
    return -1;
}

/* Lane `lane`'s row: 16 bytes of a shared buffer of 16- or 32-bit
 * elements (8 or 4 of them) at a 16-byte aligned address, read as this
 * lane (race and uninitialised checks). */
static bool ldmatrix_row(ir_env *e, const void *p, float row[8], tir_dtype *dt) {
    lane_ref r;
    if (!lane_operand(e, "ldmatrix", 3, p, TIR_SCOPE_SHARED, 4, &r)) return false;
    char b[32];
    int eb = r.m->elem_bytes, n = eb ? 16 / eb : 0;
    if ((eb != 2 && eb != 4) || (r.off * eb) % 16) {
        ir_env_fail(e, TIR_ERR_EVAL,
                    "ldmatrix: the row address %s[%lld] (%s) must be a 16-byte aligned element of "
                    "a 16-bit or 32-bit buffer",
                    r.m->buffer->name, (long long)(r.off - r.m->elem_offset),
                    dts(r.m->buffer->dtype, b));
        return false;
    }
    if (n == 8 && !lane_operand(e, "ldmatrix", 3, p, TIR_SCOPE_SHARED, 8, &r)) return false;
    *dt = r.m->buffer->dtype;
    for (int j = 0; j < n; j++) {
        row[j] = ir_load_off(e, r.m, r.off + j).f;
        if (e->status) return false;
    }
    return true;
}

/* Lane `lane`'s registers from the matrices' rows (w32: 32-bit
 * elements); true when a store failed (reported). */
static bool ldmatrix_scatter(ir_env *e, const lane_ref *d, float rows[][8], int lane, int trans,
                             int num, bool w32) {
    int per = w32 ? 1 : 2;
    for (int i = 0; i < num; i++)
        for (int j = 0; j < per; j++) {
            int r = lane / 4, c = w32 ? lane % 4 : 2 * (lane % 4) + j;
            ir_val v;
            v.f = trans ? rows[8 * i + c][r] : rows[8 * i + r][c];
            if (ir_store_off(e, d->m, d->off + per * i + j, v)) return true;
        }
    return false;
}

int simw_ldmatrix(ir_env *const *lanes, const ir_val *const *args) {
    int trans, num;
    int bad = ldmatrix_shape(lanes, args, &trans, &num);
    if (bad >= 0) return bad;
    float rows[SIM_WARP][8];
    tir_dtype dt[SIM_WARP];
    char b1[32], b2[32];
    for (int lane = 0; lane < 8 * num; lane++) {
        if (!ldmatrix_row(lanes[lane], args[lane][3].p, rows[lane], &dt[lane])) return lane;
        if (!tir_dtype_eq(dt[lane], dt[0])) {
            ir_env_fail(lanes[lane], TIR_ERR_EVAL, "ldmatrix: this lane's row is %s, lane 0's %s",
                        dts(dt[lane], b1), dts(dt[0], b2));
            return lane;
        }
    }
    bool w32 = tir_dtype_bytes(dt[0]) == 4;
    if (w32 && trans) {
        ir_env_fail(lanes[0], TIR_ERR_EVAL,
                    "ldmatrix: .trans transposes 16-bit elements; the rows are %s",
                    dts(dt[0], b1));
        return 0;
    }
    for (int lane = 0; lane < SIM_WARP; lane++) {
        ir_env *e = lanes[lane];
        lane_ref d;
        if (!lane_operand(e, "ldmatrix", 2, args[lane][2].p, TIR_SCOPE_LOCAL,
                          (w32 ? 1 : 2) * num, &d))
            return lane;
        if (!tir_dtype_eq(d.m->buffer->dtype, dt[0])) {
            ir_env_fail(e, TIR_ERR_EVAL, "ldmatrix: destination %s has dtype %s, the rows %s",
                        d.m->buffer->name, dts(d.m->buffer->dtype, b1), dts(dt[0], b2));
            return lane;
        }
        if (ldmatrix_scatter(e, &d, rows, lane, trans, num, w32)) return lane;
    }
    return -1;
}

int simw_shfl_xor(ir_env *const *lanes, const ir_val *const *args, ir_val *const *results) {
    int64_t mask = args[0][1].i;
    for (int lane = 0; lane < SIM_WARP; lane++) {
        int64_t m = args[lane][1].i;
        if (m != mask || m < 1 || m > 16 || (m & (m - 1))) {
            ir_env_fail(lanes[lane], TIR_ERR_EVAL,
                        "shfl_xor(.., %lld): the lane mask must be 1, 2, 4, 8 or 16, the same in "
                        "every lane (lane 0 has %lld)",
                        (long long)m, (long long)mask);
            return lane;
        }
    }
    ir_val v[SIM_WARP];
    for (int lane = 0; lane < SIM_WARP; lane++) v[lane] = args[lane][0];
    for (int lane = 0; lane < SIM_WARP; lane++) *results[lane] = v[lane ^ mask];
    return -1;
}
