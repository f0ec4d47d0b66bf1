/* simplify.c: arithmetic simplification of the whole kernel with the loop
 * ranges known (tir_analyzer_simplify_stmt): indices fold into the
 * `... + ty * 64 + tx * 4` form the codegen proves alignment from, and the
 * bounds predicates of non-divisible shapes that are provably true inside a
 * tile disappear, while the others stay.
 */
#include "lower_internal.h"

tir_status lower_simplify(lower_state *st, const tir_prim_func *in, const tir_prim_func **out) {
    tir_analyzer *a = tir_analyzer_new(st->ctx);
    const tir_stmt *body = tir_analyzer_simplify_stmt(a, in->body);
    tir_analyzer_free(a);
    *out = lower_with_body(st->ctx, in, body);
    return TIR_OK;
}
