/* minitir/lower.h: from a scheduled function to a flat GPU kernel, and the
 * CPU SIMT simulator that checks such kernels.
 *
 * The lowered form is the contract in docs/lowered-ir.md: no blocks, 1-D
 * buffers, launch dimensions as thread-binding loops, shared/local buffers
 * as Allocate, barriers and async copies as intrinsic calls.
 */
#ifndef MINITIR_LOWER_H
#define MINITIR_LOWER_H

#include "minitir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- lowering */

/* (declarations added by the lowering passes) */

/* ----------------------------------------------------------- SIMT simulator */

/* (declarations added by the simulator) */

#ifdef __cplusplus
}
#endif
#endif
