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
 *   wgmma_sync(c, cs, b, a, rows, ...): a warpgroup collective (128
 *     threads, four warps).  Per group of 5, in order: the shared tile S
 *     (a, rows: the same in every thread) is read once, unswizzled, as
 *     the instruction's B (k x rows); each warp gathers its A (16 x 8)
 *     from its lanes' 4 registers and its D (16 x rows) from their
 *     rows / 2 result registers, computes D += A.B per element with the
 *     interpreter's ir_wgmma_elem (A to nearest, B truncated to TF32) and
 *     scatters D back.  S is read as the warpgroup's first thread.
 *   shfl_xor(value, lane_mask): lane l's result is the value lane
 *     l ^ lane_mask passed.  The values were loaded by each lane before it
 *     reached the call, so an unwritten register it passes was already
 *     reported there (check_uninit), as the lane that read it.
 * Every element goes through the interpreter's checked access in the env
 * of the lane whose operand it is, so the simulator's race and
 * uninitialised-read checks see the shared rows ldmatrix reads as reads
 * by the lane that supplied the row, and errors name that lane.
 */
#include <stdio.h>

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

/* ========================================================== wgmma_sync */

/* "S[12]" for an address, or where it is not in a buffer. */
static const char *addr_str(ir_env *e, const void *p, char *out, size_t n) {
    int64_t byte = 0;
    ir_mbuf *m = ir_resolve_addr(e, p, &byte);
    if (!m) snprintf(out, n, "an address outside every buffer");
    else snprintf(out, n, "%s[%lld]", m->buffer->name,
                  (long long)(byte / m->elem_bytes - m->elem_offset));
    return out;
}

/* A lane's float32 local array operand `which` (need elements). */
static bool wg_local(ir_env *e, int which, const void *p, int64_t need, lane_ref *r) {
    if (!lane_operand(e, "wgmma_sync", which, p, TIR_SCOPE_LOCAL, need, r)) return false;
    if (tir_dtype_eq(r->m->buffer->dtype, TIR_F32)) return true;
    char b[32];
    ir_env_fail(e, TIR_ERR_EVAL, "wgmma_sync: operand %d (%s) has dtype %s, not float32", which,
                r->m->buffer->name, dts(r->m->buffer->dtype, b));
    return false;
}

/* Group g's shared tile: a and rows the same in all 128 threads, rows a
 * multiple of 8 up to 256, a a float32 shared element at a k slice of an
 * 8-row group (4x % 1024 = 0, 32, 64, 96).  Sets *s (x: s->off) and *R. */
static int wg_tile(ir_env *const *th, const ir_val *const *args, int g, int q, lane_ref *s,
                   int *R) {
    const ir_val *a0 = &args[0][5 * g];
    char b1[64], b2[64];
    for (int i = 1; i < SIM_WARPGROUP; i++) {
        const ir_val *ai = &args[i][5 * g];
        if (ai[3].p == a0[3].p && ai[4].i == a0[4].i) continue;
        ir_env_fail(th[i], TIR_ERR_EVAL,
                    "wgmma_sync: the warps of warpgroup %d pass different shared tiles (group %d: "
                    "this thread passes %s with %lld rows, the warpgroup's first thread %s with "
                    "%lld rows)",
                    q, g, addr_str(th[i], ai[3].p, b1, sizeof b1), (long long)ai[4].i,
                    addr_str(th[0], a0[3].p, b2, sizeof b2), (long long)a0[4].i);
        return i;
    }
    int64_t rows = a0[4].i;
    if (rows < 8 || rows > 256 || rows % 8) {
        ir_env_fail(th[0], TIR_ERR_EVAL,
                    "wgmma_sync: group %d: rows must be a multiple of 8 from 8 to 256, not %lld", g,
                    (long long)rows);
        return 0;
    }
    *R = (int)rows;
    if (!lane_operand(th[0], "wgmma_sync", 5 * g + 3, a0[3].p, TIR_SCOPE_SHARED, 1, s)) return 0;
    int64_t x = s->off - s->m->elem_offset;
    if (!tir_dtype_eq(s->m->buffer->dtype, TIR_F32) || x < 0 || (4 * x) % 1024 % 32 ||
        (4 * x) % 1024 > 96) {
        ir_env_fail(th[0], TIR_ERR_EVAL,
                    "wgmma_sync: group %d: the shared tile %s[%lld] (%s) must be a float32 element "
                    "whose byte offset 4x = %lld is 0, 32, 64 or 96 past a multiple of 1024 (a k "
                    "slice of an 8-row group of swizzled 128-byte rows)",
                    g, s->m->buffer->name, (long long)x, dts(s->m->buffer->dtype, b1),
                    (long long)(4 * x));
        return 0;
    }
    return -1;
}

/* The instruction's B (k < 8, n < R) from S at element x: B[k][n] is the
 * float at byte y = 4x + 1024 (n / 8) + 128 (n % 8) + 4k of S before the
 * 128-byte swizzle, which puts it at y ^ (((y >> 7) & 7) << 4) from S's
 * start.  Read as thread e; bt[n][k]. */
static bool wg_read_s(ir_env *e, const lane_ref *s, int R, float bt[][8]) {
    int64_t x = s->off - s->m->elem_offset;
    for (int n = 0; n < R; n++)
        for (int k = 0; k < 8; k++) {
            int64_t y = 4 * x + 1024 * (n / 8) + 128 * (n % 8) + 4 * k;
            int64_t off = s->m->elem_offset + ((y ^ (((y >> 7) & 7) << 4)) >> 2);
            if (off >= s->m->size) {
                ir_env_fail(e, TIR_ERR_OUT_OF_BOUNDS,
                            "wgmma_sync: the shared tile %s[%lld] with %d rows reads (row %d, k "
                            "%d) at %s[%lld], past its end (%lld elements)",
                            s->m->buffer->name, (long long)x, R, n, k, s->m->buffer->name,
                            (long long)(off - s->m->elem_offset),
                            (long long)(s->m->size - s->m->elem_offset));
                return false;
            }
            bt[n][k] = ir_load_off(e, s->m, off).f;
            if (e->status) return false;
        }
    return true;
}

/* Storage element of result register r of a lane: L[o + u cs + e] for
 * r = 8u + e, or -1 after an error (outside L). */
static int64_t wg_reg(ir_env *e, const lane_ref *c, int64_t cs, int r) {
    int u = r / 8, v = r % 8;
    int64_t off = c->off + u * cs + v;
    if (off >= c->m->elem_offset && off < c->m->size) return off;
    ir_env_fail(e, TIR_ERR_OUT_OF_BOUNDS,
                "wgmma_sync: result register %d is %s[%lld + %d * %lld + %d], outside %s (%lld "
                "elements)",
                r, c->m->buffer->name, (long long)(c->off - c->m->elem_offset), u, (long long)cs, v,
                c->m->buffer->name, (long long)(c->m->size - c->m->elem_offset));
    return -1;
}

/* Lane l's result register r holds D[m][n]: r = 4 (n / 8) + 2 (m / 8) +
 * n % 2 with g = m % 8, t = (n % 8) / 2. */
static int wg_m(int l, int r) { return l / 4 + 8 * (r / 2 % 2); }
static int wg_n(int l, int r) { return 8 * (r / 4) + 2 * (l % 4) + r % 2; }

/* One warp's share of group g (lanes th[0..32)): gathers A and D from
 * the lanes' registers, D += A.B (bt: B's columns), scatters D. */
static int wg_warp(ir_env *const *th, const ir_val *const *args, int g, int R,
                   const float bt[][8]) {
    float a[16][8], d[16][256];
    lane_ref c[SIM_WARP];
    int64_t cs[SIM_WARP];
    for (int l = 0; l < SIM_WARP; l++) {
        ir_env *e = th[l];
        const ir_val *ga = &args[l][5 * g];
        lane_ref b;
        cs[l] = ga[1].i;
        if (!wg_local(e, 5 * g, ga[0].p, 1, &c[l]) || !wg_local(e, 5 * g + 2, ga[2].p, 4, &b))
            return l;
        if (R > 16 && cs[l] < 8) {
            ir_env_fail(e, TIR_ERR_EVAL,
                        "wgmma_sync: group %d: the unit stride cs is %lld; with %d rows (%d "
                        "registers) it must be at least 8, so that registers do not overlap",
                        g, (long long)cs[l], R, R / 2);
            return l;
        }
        /* A[m][k] is register i with m = g + 8 (i % 2), k = t + 4 (i / 2) */
        for (int i = 0; i < 4; i++) {
            a[l / 4 + 8 * (i % 2)][l % 4 + 4 * (i / 2)] = ir_load_off(e, b.m, b.off + i).f;
            if (e->status) return l;
        }
        for (int r = 0; r < R / 2; r++) {
            int64_t off = wg_reg(e, &c[l], cs[l], r);
            if (off < 0) return l;
            d[wg_m(l, r)][wg_n(l, r)] = ir_load_off(e, c[l].m, off).f;
            if (e->status) return l;
        }
    }
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < R; n++) d[m][n] = ir_wgmma_elem(d[m][n], bt[n], a[m]);
    for (int l = 0; l < SIM_WARP; l++)
        for (int r = 0; r < R / 2; r++) {
            ir_val v;
            v.f = d[wg_m(l, r)][wg_n(l, r)];
            if (ir_store_off(th[l], c[l].m, wg_reg(th[l], &c[l], cs[l], r), v)) return l;
        }
    return -1;
}

int simw_wgmma(ir_env *const *th, const ir_val *const *args, int nargs, int q) {
    for (int g = 0; g < nargs / 5; g++) {
        lane_ref s;
        int R = 0;
        float bt[256][8];
        int bad = wg_tile(th, args, g, q, &s, &R);
        if (bad >= 0) return bad;
        if (!wg_read_s(th[0], &s, R, bt)) return 0;
        for (int w = 0; w < SIM_WARPGROUP / SIM_WARP; w++) {
            bad = wg_warp(th + SIM_WARP * w, args + SIM_WARP * w, g, R, (const float(*)[8])bt);
            if (bad >= 0) return SIM_WARP * w + bad;
        }
    }
    return -1;
}
