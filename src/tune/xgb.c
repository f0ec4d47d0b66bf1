/* xgb.c: the XGBoost cost model's library side: libxgboost loaded at run
 * time with dlopen (as the runtime loads the CUDA driver and cuBLAS), so
 * minitir has no hard dependency on it and builds without it, and a
 * regressor fitted and queried through its C API (the few entry points
 * declared here, matching xgboost/c_api.h of XGBoost 1.x and 2.x).
 *
 * The booster's parameters follow TVM's XGBoost cost model (max_depth 10,
 * eta 0.2, gamma 0.001, min_child_weight 0) with a fixed number of
 * boosting rounds instead of early stopping on a validation split: the
 * search fits on tens to a few hundred rows.  One thread and a fixed seed
 * make a fit deterministic, which the replay's seeded evaluation needs.
 * The library stays loaded once it has loaded.
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

typedef uint64_t xgb_ulong;
typedef void *xgb_handle;

typedef struct xgb_api {
    const char *(*GetLastError)(void);
    int (*DMatrixCreateFromMat)(const float *data, xgb_ulong nrow, xgb_ulong ncol, float missing,
                                xgb_handle *out);
    int (*DMatrixSetFloatInfo)(xgb_handle h, const char *field, const float *a, xgb_ulong len);
    int (*DMatrixFree)(xgb_handle h);
    int (*BoosterCreate)(const xgb_handle dmats[], xgb_ulong len, xgb_handle *out);
    int (*BoosterFree)(xgb_handle h);
    int (*BoosterSetParam)(xgb_handle h, const char *name, const char *value);
    int (*BoosterUpdateOneIter)(xgb_handle h, int iter, xgb_handle dtrain);
    int (*BoosterPredict)(xgb_handle h, xgb_handle dmat, int option_mask, unsigned ntree_limit,
                          int training, xgb_ulong *out_len, const float **out_result);
} xgb_api;

static const struct {
    const char *sym;
    size_t off;
} xgb_syms[] = {
    {"XGBGetLastError", offsetof(xgb_api, GetLastError)},
    {"XGDMatrixCreateFromMat", offsetof(xgb_api, DMatrixCreateFromMat)},
    {"XGDMatrixSetFloatInfo", offsetof(xgb_api, DMatrixSetFloatInfo)},
    {"XGDMatrixFree", offsetof(xgb_api, DMatrixFree)},
    {"XGBoosterCreate", offsetof(xgb_api, BoosterCreate)},
    {"XGBoosterFree", offsetof(xgb_api, BoosterFree)},
    {"XGBoosterSetParam", offsetof(xgb_api, BoosterSetParam)},
    {"XGBoosterUpdateOneIter", offsetof(xgb_api, BoosterUpdateOneIter)},
    {"XGBoosterPredict", offsetof(xgb_api, BoosterPredict)},
};

static pthread_mutex_t xgb_mu = PTHREAD_MUTEX_INITIALIZER;
static xgb_api xgb;
static bool xgb_ready;

/* Boosting rounds: at eta 0.2 they leave 0.8^60 (about 1e-6) of a
 * residual the trees can fit, and a fit on 150 rows costs about 10 ms of
 * CPU (docs/tuning.md). */
enum { XGB_ROUNDS = 60 };

struct tune_xgb {
    xgb_handle booster;
};

/* Resolves every entry point of lib into api (false: why gets the name). */
static bool resolve(void *lib, xgb_api *api, const char **missing) {
    for (size_t i = 0; i < sizeof xgb_syms / sizeof xgb_syms[0]; i++) {
        void *p = dlsym(lib, xgb_syms[i].sym);
        if (!p) {
            *missing = xgb_syms[i].sym;
            return false;
        }
        memcpy((char *)api + xgb_syms[i].off, &p, sizeof p);
    }
    return true;
}

/* Under xgb_mu: tries each candidate file; why gets every failure. */
static bool load_locked(char *why, size_t cap) {
    const char *env = getenv("MINITIR_XGBOOST_LIB");
    const char *defaults[] = {"libxgboost.so.0", "libxgboost.so"};
    const char *const *paths = env && *env ? &env : defaults;
    size_t npaths = env && *env ? 1 : 2, used = 0;
    for (size_t i = 0; i < npaths; i++) {
        void *lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        const char *missing = NULL, *e = lib ? NULL : dlerror();
        if (lib && resolve(lib, &xgb, &missing)) return xgb_ready = true;
        if (lib) dlclose(lib); /* nothing of it ran */
        int k = missing ? snprintf(why + used, cap - used, "%s%s lacks %s", used ? "; " : "",
                                   paths[i], missing)
                        : snprintf(why + used, cap - used, "%s%s", used ? "; " : "",
                                   e ? e : paths[i]);
        if (k > 0) used = strlen(why);
    }
    return false;
}

tir_status tune_xgb_load(tir_ctx *ctx) {
    char why[1024] = "";
    pthread_mutex_lock(&xgb_mu);
    bool ok = xgb_ready || load_locked(why, sizeof why);
    pthread_mutex_unlock(&xgb_mu);
    if (ok) return TIR_OK;
    return tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED,
                        "tune: the xgb cost model needs libxgboost, which cannot be loaded: %s; "
                        "install libxgboost-dev (or set MINITIR_XGBOOST_LIB to the library), or "
                        "use the knn model",
                        why);
}

tir_status tir_tune_xgb_available(tir_ctx *ctx) {
    if (ctx) return tune_xgb_load(ctx);
    tir_ctx *own = tir_ctx_create(); /* for the message nobody reads */
    if (!own) return TIR_ERR_NOMEM;
    tir_status st = tune_xgb_load(own);
    tir_ctx_destroy(own);
    return st;
}

static tir_status xgb_fail(tir_ctx *ctx, const char *what) {
    return tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED, "tune: xgboost: %s: %s", what,
                        xgb.GetLastError());
}

/* TVM's XGBoost parameters, one thread, the seed. */
static int set_params(xgb_handle b, uint64_t seed) {
    static const char *const kv[][2] = {
        {"booster", "gbtree"}, {"objective", "reg:squarederror"}, {"max_depth", "10"},
        {"eta", "0.2"},        {"gamma", "0.001"},                {"min_child_weight", "0"},
        {"nthread", "1"},      {"verbosity", "0"},
    };
    char s[32];
    snprintf(s, sizeof s, "%u", (unsigned)(seed & 0x7fffffff));
    int rc = xgb.BoosterSetParam(b, "seed", s);
    for (size_t i = 0; rc == 0 && i < sizeof kv / sizeof kv[0]; i++)
        rc = xgb.BoosterSetParam(b, kv[i][0], kv[i][1]);
    return rc;
}

tir_status tune_xgb_fit(tir_ctx *ctx, const float *x, const float *y, int n, int nfeat,
                        uint64_t seed, tune_xgb **out) {
    *out = NULL;
    tune_xgb *m = calloc(1, sizeof *m);
    if (!m) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "tune: out of memory");
    xgb_handle d = NULL;
    tir_status st = TIR_OK;
    if (xgb.DMatrixCreateFromMat(x, (xgb_ulong)n, (xgb_ulong)nfeat, NAN, &d) != 0)
        st = xgb_fail(ctx, "training matrix");
    else if (xgb.DMatrixSetFloatInfo(d, "label", y, (xgb_ulong)n) != 0)
        st = xgb_fail(ctx, "labels");
    else if (xgb.BoosterCreate(&d, 1, &m->booster) != 0 || set_params(m->booster, seed) != 0)
        st = xgb_fail(ctx, "booster");
    for (int it = 0; st == TIR_OK && it < XGB_ROUNDS; it++)
        if (xgb.BoosterUpdateOneIter(m->booster, it, d) != 0) st = xgb_fail(ctx, "boosting");
    if (d) xgb.DMatrixFree(d);
    if (st != TIR_OK) {
        tune_xgb_free(m);
        return st;
    }
    *out = m;
    return TIR_OK;
}

tir_status tune_xgb_predict(tir_ctx *ctx, tune_xgb *m, const float *x, int n, int nfeat,
                            double *out) {
    xgb_handle d = NULL;
    xgb_ulong len = 0;
    const float *r = NULL;
    tir_status st = TIR_OK;
    if (xgb.DMatrixCreateFromMat(x, (xgb_ulong)n, (xgb_ulong)nfeat, NAN, &d) != 0)
        st = xgb_fail(ctx, "prediction matrix");
    else if (xgb.BoosterPredict(m->booster, d, 0, 0, 0, &len, &r) != 0)
        st = xgb_fail(ctx, "prediction");
    else if (len != (xgb_ulong)n)
        st = tir_ctx_fail(ctx, TIR_ERR_UNSUPPORTED, "tune: xgboost: %llu predictions for %d rows",
                          (unsigned long long)len, n);
    for (int i = 0; st == TIR_OK && i < n; i++) out[i] = r[i];
    if (d) xgb.DMatrixFree(d);
    return st;
}

void tune_xgb_free(tune_xgb *m) {
    if (!m) return;
    if (m->booster) xgb.BoosterFree(m->booster);
    free(m);
}
