/* sgemm.c: "Step 8", the 128 x 128 x 8 fp32 matmul schedule of sgemm.h,
 * on the plain matmul definition: the library's multi-level tiling rule
 * (tir_tune_tiling, src/tune/tiling.c, which describes the loop structure)
 * with a configuration chosen by shape.
 */
#include "sgemm.h"

#include <stdio.h>
#include <string.h>

typedef void (*hook_fn)(void *user, tir_schedule *s, const char *call);


sgemm_config sgemm_default_config(void) { return tir_tile_config_default(); }

sgemm_config sgemm_config_for(int64_t M, int64_t N, int64_t K, int nsm) {
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, M, N, K, TIR_RT_GEMM_F32};
    return tir_tune_default(&t, nsm);
}

void sgemm_config_step(sgemm_config *c, int step) {
    if (step == 7) c->staging = false, c->stages = 0;
    else c->staging = c->stages < 2;
}

tir_status sgemm_shape(tir_schedule *s, int64_t *M, int64_t *N, int64_t *K) {
    tir_block_rv c;
    const tir_block *b;
    tir_status st = tir_sched_get_block(s, "C", &c);
    if (st == TIR_OK) st = tir_sched_get_block_node(s, c, &b);
    if (st != TIR_OK) return st;
    const tir_buffer *out = b->writes[0].buffer;
    *K = 0;
    for (int i = 0; i < b->niters; i++)
        if (b->iters[i].kind == TIR_ITER_REDUCE) tir_expr_const_int(b->iters[i].dom.extent, K);
    if (out->ndim != 2 || !tir_expr_const_int(out->shape[0], M) ||
        !tir_expr_const_int(out->shape[1], N) || *K <= 0)
        return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                            "sgemm: block C is not a matmul with constant shapes");
    return TIR_OK;
}

/* The index of buffer `name` among the block's reads. */
tir_status sgemm_read_index(tir_schedule *s, tir_block_rv b, const char *name, int *out) {
    const tir_block *blk;
    tir_status st = tir_sched_get_block_node(s, b, &blk);
    if (st != TIR_OK) return st;
    for (int i = 0; i < blk->nreads; i++)
        if (!strcmp(blk->reads[i].buffer->name, name)) {
            *out = i;
            return TIR_OK;
        }
    return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG, "block %s does not read %s",
                        blk->name, name);
}

tir_status sgemm_schedule(tir_schedule *s, const sgemm_config *cfg, hook_fn hook, void *user) {
    return tir_tune_tiling(s, "C", cfg, hook, user);
}
