/* frag.c: the lane layouts of tensor-core fragments.
 *
 * mma.sync spreads each operand tile over the 32 lanes of a warp in a
 * fixed pattern (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k8").
 * Lowering (registers of a fragment buffer), the simulator (what each
 * lane's registers mean to the instruction) and the tests all read the
 * pattern from here, so there is one copy of it.  The formulas are in
 * ir.h next to tir_frag_layout. */
#include "ir_internal.h"

bool tir_scope_is_frag(tir_scope s) {
    return s == TIR_SCOPE_FRAG_A || s == TIR_SCOPE_FRAG_B || s == TIR_SCOPE_FRAG_ACC;
}

static bool is_b16(tir_dtype t) {
    return tir_dtype_eq(t, TIR_F16) || tir_dtype_eq(t, TIR_BF16);
}

bool tir_frag_layout_of(tir_scope s, tir_dtype t, tir_frag_layout *out) {
    static const tir_frag_layout tab[] = {
        [TIR_FRAG_K16_A] = {16, 16, 8, TIR_FRAG_K16_A},
        [TIR_FRAG_K16_B] = {16, 8, 4, TIR_FRAG_K16_B},
        [TIR_FRAG_K8_A] = {16, 8, 4, TIR_FRAG_K8_A},
        [TIR_FRAG_K8_B] = {8, 8, 2, TIR_FRAG_K8_B},
        [TIR_FRAG_ACC] = {16, 8, 4, TIR_FRAG_ACC},
    };
    bool f32 = tir_dtype_eq(t, TIR_F32);
    int k;
    if (s == TIR_SCOPE_FRAG_A && (is_b16(t) || f32)) k = f32 ? TIR_FRAG_K8_A : TIR_FRAG_K16_A;
    else if (s == TIR_SCOPE_FRAG_B && (is_b16(t) || f32)) k = f32 ? TIR_FRAG_K8_B : TIR_FRAG_K16_B;
    else if (s == TIR_SCOPE_FRAG_ACC && f32) k = TIR_FRAG_ACC;
    else return false;
    *out = tab[k];
    return true;
}

int tir_frag_row(const tir_frag_layout *l, int lane, int v) {
    int g = lane / 4, t = lane % 4;
    switch (l->kind) {
    case TIR_FRAG_K16_A: return g + 8 * ((v / 2) % 2);
    case TIR_FRAG_K16_B: return 2 * t + v % 2 + 8 * (v / 2);
    case TIR_FRAG_K8_A: return g + 8 * (v % 2);
    case TIR_FRAG_K8_B: return t + 4 * v;
    default: return g + 8 * (v / 2);
    }
}

int tir_frag_col(const tir_frag_layout *l, int lane, int v) {
    int g = lane / 4, t = lane % 4;
    switch (l->kind) {
    case TIR_FRAG_K16_A: return 2 * t + v % 2 + 8 * (v / 4);
    case TIR_FRAG_K16_B: return g;
    case TIR_FRAG_K8_A: return t + 4 * (v / 2);
    case TIR_FRAG_K8_B: return g;
    default: return 2 * t + v % 2;
    }
}
