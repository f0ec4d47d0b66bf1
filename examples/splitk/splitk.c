/* splitk.c: the split-K SGEMM schedule (see splitk.h).  A simple thread
 * mapping (one output element per thread, no shared-memory tiles) that
 * shows the two kernels split-K lowers to; the Step 8 tiles are to be
 * combined with it. */
#include "splitk.h"

#define TRY(x)                                                                            \
    do {                                                                                  \
        tir_status st_ = (x);                                                             \
        if (st_ != TIR_OK) return st_;                                                    \
    } while (0)

enum { TILE = 16 };

/* Loops i, j of a nest into blockIdx.y/x tiles of TILE x TILE threads;
 * outer (may be a zero handle) goes first, bound to blockIdx.z. */
static tir_status tile_2d(tir_schedule *s, tir_loop_rv i, tir_loop_rv j, tir_loop_rv outer,
                          tir_loop_rv inner) {
    tir_loop_rv pi[2], pj[2];
    const int64_t f[2] = {TIR_SPLIT_INFER, TILE};
    TRY(tir_sched_split(s, i, 2, f, pi));
    TRY(tir_sched_split(s, j, 2, f, pj));
    if (outer.id) {
        const tir_loop_rv order[6] = {outer, pi[0], pj[0], pi[1], pj[1], inner};
        TRY(tir_sched_reorder(s, 6, order));
        TRY(tir_sched_bind(s, outer, "blockIdx.z"));
    } else {
        const tir_loop_rv order[5] = {pi[0], pj[0], pi[1], pj[1], inner};
        TRY(tir_sched_reorder(s, 5, order));
    }
    TRY(tir_sched_bind(s, pi[0], "blockIdx.y"));
    TRY(tir_sched_bind(s, pj[0], "blockIdx.x"));
    TRY(tir_sched_bind(s, pi[1], "threadIdx.y"));
    TRY(tir_sched_bind(s, pj[1], "threadIdx.x"));
    return TIR_OK;
}

tir_status splitk_schedule(tir_schedule *s, int split) {
    tir_block_rv c, c_rf;
    const tir_loop_rv *l;
    int n;
    TRY(tir_sched_get_block(s, "C", &c));
    TRY(tir_sched_get_loops(s, c, &l, &n));
    tir_loop_rv i = l[0], j = l[1], k2[2];
    const int64_t f[2] = {split, TIR_SPLIT_INFER};
    TRY(tir_sched_split(s, l[2], 2, f, k2));
    TRY(tir_sched_rfactor(s, k2[0], 0, &c_rf));
    /* C_rf: (ko) x (row tiles) x (column tiles) blocks, k_1 serial */
    TRY(tile_2d(s, i, j, k2[0], k2[1]));
    /* C: the write-back, summing the split partial results per element */
    TRY(tir_sched_get_loops(s, c, &l, &n));
    return tile_2d(s, l[0], l[1], (tir_loop_rv){0}, l[2]);
}
