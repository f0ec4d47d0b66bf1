/* thread_sync.c: placeholder */
#include "lower_internal.h"
tir_status lower_thread_sync(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    *out = in;
    return TIR_OK;
}
