/* sim_warp.h: the warp-collective operations of the simulator
 * (sim_warp.c), given the 32 lanes of a warp gathered at one call.  Not
 * installed. */
#ifndef MINITIR_SIM_WARP_H
#define MINITIR_SIM_WARP_H

#include "ir/interp_internal.h"

#define SIM_WARP 32
#define SIM_WARPGROUP 128 /* four warps: wgmma_sync's threads */

/* Performs mma_sync / ldmatrix (lowered forms, docs/lowered-ir.md) for
 * the lanes lanes[0..32) of one warp, lane l's evaluated operands in
 * args[l].  Returns -1, or the lane whose env holds the error (operands,
 * bounds, races and unwritten elements, checked as that lane's accesses). */
int simw_mma(ir_env *const *lanes, const ir_val *const *args);
int simw_ldmatrix(ir_env *const *lanes, const ir_val *const *args);
/* shfl_xor(value, lane_mask): sets *results[l] to the value lane
 * l ^ lane_mask passed; the same for errors (a lane_mask other than the
 * constant 1, 2, 4, 8 or 16 of every lane). */
int simw_shfl_xor(ir_env *const *lanes, const ir_val *const *args, ir_val *const *results);
/* wgmma_sync with nargs operands (groups of 5) for the threads th[0..128)
 * of warpgroup q, thread i's evaluated operands in args[i]: each group in
 * order, each of the four warps its share (intrinsics.def).  Returns -1,
 * or the thread (0..127) whose env holds the error. */
int simw_wgmma(ir_env *const *th, const ir_val *const *args, int nargs, int q);

#endif
