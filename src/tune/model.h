/* model.h: what the search (search.c) uses of the cost models' other
 * files: the XGBoost regressor loaded at run time (xgb.c) and the pool of
 * recorded candidates a replay searches (replay.c).  Not installed.
 */
#ifndef MINITIR_TUNE_MODEL_H
#define MINITIR_TUNE_MODEL_H

#include "ir/ir_internal.h"
#include "minitir/tune.h"

/* ------------------------------------------------------------ XGBoost */

/* A fitted booster (opaque). */
typedef struct tune_xgb tune_xgb;

/* Loads libxgboost once per process (MINITIR_XGBOOST_LIB, else
 * libxgboost.so.0, else libxgboost.so); a failure is not remembered, so a
 * later call tries again.  TIR_ERR_UNSUPPORTED naming the files tried and
 * the loader's messages. */
tir_status tune_xgb_load(tir_ctx *ctx);
/* Fits gradient-boosted regression trees to n rows of nfeat features x
 * (row-major) and labels y, deterministically for a seed (one thread).
 * Needs tune_xgb_load to have succeeded.  Errors: XGBoost's message as
 * TIR_ERR_UNSUPPORTED, TIR_ERR_NOMEM. */
tir_status tune_xgb_fit(tir_ctx *ctx, const float *x, const float *y, int n, int nfeat,
                        uint64_t seed, tune_xgb **out);
/* Predictions for n rows of x into out. */
tir_status tune_xgb_predict(tir_ctx *ctx, tune_xgb *m, const float *x, int n, int nfeat,
                            double *out);
void tune_xgb_free(tune_xgb *m);

/* ------------------------------------------------------------- replay */

/* The recorded candidates of a workload as a space (configs or
 * tc_configs, by the task's rule) with each point's record: GFLOP/s (0
 * for a failed one) and median. */
typedef struct tune_pool {
    tir_tune_space sp;
    double *gflops, *median_ms; /* heap, sp.n each */
} tune_pool;

/* The distinct decisions recorded for workload on target (NULL: any), the
 * first record of each.  Errors: TIR_ERR_TUNE_NO_RECORD (none),
 * TIR_ERR_PARSE (decisions that are not the rule's, naming the record),
 * the database's, TIR_ERR_NOMEM. */
tir_status tune_pool_load(tir_ctx *ctx, tir_tune_db *db, const tir_tune_target *target,
                          const char *workload, bool tc, tune_pool *out);
void tune_pool_free(tune_pool *p);

#endif
