/* sw_pipeline.c: placeholder */
#include "lower_internal.h"
tir_status lower_sw_pipeline(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    *out = in;
    return TIR_OK;
}
