/* hgemm.c: "Step 9", the tensor-core matmul schedule of hgemm.h: the
 * library's tensor-core rule (tir_tune_tc_tiling, src/tune/tiling_tc.c,
 * which describes the schedule) with a configuration chosen by shape
 * (tir_tune_tc_default).  The autotuner searches the same rule's knobs.
 */
#include "hgemm.h"

hgemm_config hgemm_default_config(void) { return tir_tc_config_default(); }

hgemm_config hgemm_config_for(tir_dtype in, int64_t M, int64_t N, int64_t K, int nsm) {
    tir_rt_gemm_kind kind = tir_dtype_eq(in, TIR_F32)   ? TIR_RT_GEMM_TF32
                            : tir_dtype_eq(in, TIR_F16) ? TIR_RT_GEMM_F16
                                                        : TIR_RT_GEMM_BF16;
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, M, N, K, kind};
    return tir_tune_tc_default(&t, nsm);
}

tir_status hgemm_schedule(tir_schedule *s, const hgemm_config *cfg,
                          void (*hook)(void *user, tir_schedule *s, const char *call),
                          void *user) {
    return tir_tune_tc_tiling(s, "C", cfg, hook, user);
}
