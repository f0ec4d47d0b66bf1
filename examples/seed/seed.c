/* seed.c: the seed schedules (see seed.h), written once for the examples,
 * tirc and the tests.  Only the public API is used.
 *
 * Every primitive goes through CALL, which stops at the first error and
 * reports the call to the hook, so the examples can print the IR after
 * each primitive exactly as it is written here.
 */
#include "seed.h"

#include "sgemm.h"

#include <string.h>

#define CALL(s, hook, user, call)                                                         \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) return st_;                                                    \
        if (hook) hook(user, s, #call);                                                   \
    } while (0)

const char *seed_step_title(int step) {
    static const char *const t[] = {"Step 0: unscheduled",
                                    "Step 1: bind",
                                    "Step 2: tiling and reordering",
                                    "Step 3: shared memory",
                                    "Step 4: local accumulator and vectorized fetch",
                                    "Step 5: software pipeline annotation",
                                    "Step 6: unroll k_inner",
                                    "Step 7: 128x128x8 tiles, k-major A, float4",
                                    "Step 8: register staging pipeline"};
    return step >= 0 && step <= SEED_NSTEPS ? t[step] : "";
}

const seed_tiles seed_tiles_default = {.bm = 32, .bn = 32, .bk = 32, .tm = 8, .tn = 4};

/* The tile sizes under the names the calls print with (the hook gets the
 * call as written). */
#define TILE_NAMES(sz)                                                                  \
    const int64_t BM = (sz)->bm, BN = (sz)->bn, BK = (sz)->bk, THREADS_X = BM / (sz)->tm, \
                  THREADS_Y = BN / (sz)->tn;                                            \
    (void)BM, (void)BN, (void)BK, (void)THREADS_X, (void)THREADS_Y

/* The handles later steps build on. */
typedef struct tiles {
    seed_tiles sz;
    tir_block_rv c;
    tir_loop_rv i_block, j_block, i_thread, j_thread, k_outer, i_elem, j_elem, k_inner;
    tir_loop_rv thread; /* the innermost thread-bound loop */
} tiles;

static tir_status step1(tir_schedule *s, tiles *t, seed_hook hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(s, hook, user, tir_sched_get_loops(s, t->c, &loops, &n));
    tir_loop_rv i = loops[0], j = loops[1];
    CALL(s, hook, user, tir_sched_bind(s, i, "blockIdx.x"));
    CALL(s, hook, user, tir_sched_bind(s, j, "threadIdx.x"));
    t->thread = j;
    return TIR_OK;
}

/* Step 2: i -> [i_block, 32] -> i_block, [i_thread 4, i_elem 8];
 * j -> [j_block, 32] -> j_block, [j_thread 8, j_elem 4]; k -> [k_outer,
 * k_inner 32]; reorder so that k is innermost but for the thread tile. */
static tir_status step2(tir_schedule *s, tiles *t, seed_hook hook, void *user) {
    const tir_loop_rv *loops;
    int n;
    CALL(s, hook, user, tir_sched_get_loops(s, t->c, &loops, &n));
    tir_loop_rv i = loops[0], j = loops[1], k = loops[2];
    tir_loop_rv ib[2], jb[2], kb[2], it[2], jt[2];
    TILE_NAMES(&t->sz);
    CALL(s, hook, user, tir_sched_split(s, i, 2, (const int64_t[]){TIR_SPLIT_INFER, BM}, ib));
    CALL(s, hook, user, tir_sched_split(s, j, 2, (const int64_t[]){TIR_SPLIT_INFER, BN}, jb));
    CALL(s, hook, user, tir_sched_split(s, k, 2, (const int64_t[]){TIR_SPLIT_INFER, BK}, kb));
    CALL(s, hook, user,
         tir_sched_split(s, ib[1], 2, (const int64_t[]){THREADS_X, TIR_SPLIT_INFER}, it));
    CALL(s, hook, user,
         tir_sched_split(s, jb[1], 2, (const int64_t[]){THREADS_Y, TIR_SPLIT_INFER}, jt));
    t->i_block = ib[0], t->j_block = jb[0], t->k_outer = kb[0], t->k_inner = kb[1];
    t->i_thread = it[0], t->i_elem = it[1], t->j_thread = jt[0], t->j_elem = jt[1];
    CALL(s, hook, user,
         tir_sched_reorder(s, 8, (const tir_loop_rv[]){t->i_block, t->j_block, t->i_thread,
                                                       t->j_thread, t->k_outer, t->i_elem,
                                                       t->j_elem, t->k_inner}));
    CALL(s, hook, user, tir_sched_bind(s, t->i_block, "blockIdx.x"));
    CALL(s, hook, user, tir_sched_bind(s, t->j_block, "blockIdx.y"));
    CALL(s, hook, user, tir_sched_bind(s, t->i_thread, "threadIdx.x"));
    CALL(s, hook, user, tir_sched_bind(s, t->j_thread, "threadIdx.y"));
    t->thread = t->j_thread;
    return TIR_OK;
}

/* Cooperative fetch of a shared cache block: its two loops (the 32 x 32
 * tile) fused and split so that the 4 x 8 threads of the compute share
 * the copy.  The seed splits the fused loop by [threads_y, None] and binds
 * the parts to threadIdx.y and threadIdx.x, which would make a threadIdx.x
 * extent of 128 against the compute's 4: schematic.  Here the parts bound
 * to threadIdx.y and threadIdx.x have exactly the compute's extents (8 and
 * 4), so each of the 32 threads copies 1024 / 32 = 32 elements; with
 * vec > 1 the innermost part is a vectorized run of vec elements. */
static tir_status cooperative_fetch(tir_schedule *s, const tiles *t, tir_block_rv cache, int vec,
                                    seed_hook hook, void *user) {
    TILE_NAMES(&t->sz);
    const tir_loop_rv *loops;
    int n;
    CALL(s, hook, user, tir_sched_get_loops(s, cache, &loops, &n));
    tir_loop_rv fused, parts[4];
    CALL(s, hook, user, tir_sched_fuse(s, 2, loops + n - 2, &fused));
    if (vec > 1) {
        CALL(s, hook, user,
             tir_sched_split(s, fused, 4,
                             (const int64_t[]){TIR_SPLIT_INFER, THREADS_Y, THREADS_X, vec},
                             parts));
        CALL(s, hook, user, tir_sched_vectorize(s, parts[3]));
    } else {
        CALL(s, hook, user,
             tir_sched_split(s, fused, 3, (const int64_t[]){TIR_SPLIT_INFER, THREADS_Y, THREADS_X},
                             parts));
    }
    CALL(s, hook, user, tir_sched_bind(s, parts[1], "threadIdx.y"));
    CALL(s, hook, user, tir_sched_bind(s, parts[2], "threadIdx.x"));
    return TIR_OK;
}

/* Step 3: A and B tiles cached in shared memory at k_outer.  compute_at
 * relaxes the region over the thread loops (the buffers are shared), so
 * each cache block computes the thread block's whole 32 x 32 tile. */
static tir_status step3(tir_schedule *s, tiles *t, int vec, seed_hook hook, void *user) {
    tir_block_rv a_sh, b_sh;
    int ia, ib;
    tir_status st = sgemm_read_index(s, t->c, "A", &ia);
    if (st != TIR_OK) return st;
    CALL(s, hook, user, tir_sched_cache_read(s, t->c, ia, "shared", 0, NULL, &a_sh));
    if ((st = sgemm_read_index(s, t->c, "B", &ib)) != TIR_OK) return st;
    CALL(s, hook, user, tir_sched_cache_read(s, t->c, ib, "shared", 0, NULL, &b_sh));
    CALL(s, hook, user, tir_sched_compute_at(s, a_sh, t->k_outer, false));
    CALL(s, hook, user, tir_sched_compute_at(s, b_sh, t->k_outer, false));
    st = cooperative_fetch(s, t, a_sh, vec, hook, user);
    return st != TIR_OK ? st : cooperative_fetch(s, t, b_sh, vec, hook, user);
}

/* Step 4's accumulator.  The seed's Korean post puts the copy-back at
 * k_outer, which writes every partial sum back to global memory once per
 * k tile; here it goes under j_thread, the innermost thread loop, so each
 * thread writes its 8 x 4 results once, after the whole k reduction. */
static tir_status step4_acc(tir_schedule *s, tiles *t, seed_hook hook, void *user) {
    tir_block_rv c_local;
    CALL(s, hook, user, tir_sched_cache_write(s, t->c, 0, "local", 0, NULL, &c_local));
    CALL(s, hook, user, tir_sched_reverse_compute_at(s, c_local, t->j_thread, false));
    return TIR_OK;
}

/* Step 5: software pipelining of k_outer.  Its body holds three
 * statements: the A fetch, the B fetch and the compute (the seed's four,
 * [0, 0, 1, 2], counted the copy-back it placed under k_outer; ours sits
 * at thread level).  Fetches are stage 0, the compute stage 1: the next
 * tile loads while the current one is computed. */
static tir_status step5(tir_schedule *s, tiles *t, seed_hook hook, void *user) {
    CALL(s, hook, user,
         tir_sched_annotate_loop_ints(s, t->k_outer,
                                      tir_annot_key_str(TIR_ANN_SOFTWARE_PIPELINE_STAGE), 3,
                                      (const int64_t[]){0, 0, 1}));
    CALL(s, hook, user,
         tir_sched_annotate_loop_ints(s, t->k_outer,
                                      tir_annot_key_str(TIR_ANN_SOFTWARE_PIPELINE_ORDER), 3,
                                      (const int64_t[]){0, 1, 2}));
    return TIR_OK;
}

/* Steps 1..step; acc: Step 4 adds the local accumulator (cache_write). */
static tir_status steps(tir_schedule *s, tiles *t, int step, bool acc, seed_hook hook,
                        void *user) {
    tir_status st = TIR_OK;
    if (step < 0 || step > 6)
        return tir_ctx_fail(tir_sched_ctx(s), TIR_ERR_INVALID_ARG,
                            "seed step %d does not exist here: use 0..6 (Steps 7 and 8 are "
                            "sgemm_schedule's, for the plain matmul)",
                            step);
    CALL(s, hook, user, tir_sched_get_block(s, "C", &t->c));
    if (step == 1) return step1(s, t, hook, user);
    if (step >= 2) st = step2(s, t, hook, user);
    if (st == TIR_OK && step >= 3) st = step3(s, t, step >= 4 ? 4 : 1, hook, user);
    if (st == TIR_OK && step >= 4 && acc) st = step4_acc(s, t, hook, user);
    if (st == TIR_OK && step >= 5) st = step5(s, t, hook, user);
    if (st == TIR_OK && step >= 6) CALL(s, hook, user, tir_sched_unroll(s, t->k_inner));
    return st;
}

tir_status seed_schedule(tir_schedule *s, int step, seed_hook hook, void *user) {
    return seed_schedule_tiles(s, step, NULL, hook, user);
}

tir_status seed_schedule_tiles(tir_schedule *s, int step, const seed_tiles *sz, seed_hook hook,
                               void *user) {
    if (step == 7 || step == 8) { /* sgemm.c's own tiles */
        int64_t M, N, K;
        tir_status st = sgemm_shape(s, &M, &N, &K);
        if (st != TIR_OK) return st;
        /* 132: the H200's multiprocessors (the schedule does not see the
         * device; the autotuner will measure instead) */
        sgemm_config cfg = sgemm_config_for(M, N, K, 132);
        sgemm_config_step(&cfg, step);
        return sgemm_schedule(s, &cfg, hook, user);
    }
    tiles t = {.sz = sz ? *sz : seed_tiles_default};
    tir_ctx *ctx = tir_sched_ctx(s);
    const seed_tiles *z = &t.sz;
    if (z->bm <= 0 || z->bn <= 0 || z->bk <= 0 || z->tm <= 0 || z->tn <= 0 || z->bm % z->tm ||
        z->bn % z->tn)
        return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG,
                            "seed tiles %dx%dx%d with thread tile %dx%d: sizes must be "
                            "positive and the thread tile must divide the block tile",
                            z->bm, z->bn, z->bk, z->tm, z->tn);
    return steps(s, &t, step, true, hook, user);
}

/* ------------------------------------------------------- fused epilogues */

const char *seed_epi_name(seed_epi e) {
    static const char *const n[] = {"bias", "bias+relu", "clip"};
    return e >= 0 && e < SEED_NEPI ? n[e] : "?";
}

int seed_epi_parse(const char *name) {
    if (!strcmp(name, "bias")) return SEED_EPI_BIAS;
    if (!strcmp(name, "bias+relu") || !strcmp(name, "relu")) return SEED_EPI_RELU;
    if (!strcmp(name, "clip")) return SEED_EPI_CLIP;
    return -1;
}

float seed_epi_apply(seed_epi e, float v) {
    if (e == SEED_EPI_RELU) return v > 0 ? v : 0;
    if (e == SEED_EPI_CLIP) return v < SEED_CLIP_LO ? SEED_CLIP_LO : v > SEED_CLIP_HI ? SEED_CLIP_HI : v;
    return v;
}

typedef struct clip_prog {
    tir_te_tensor *A, *B, *bias, *C;
} clip_prog;

static const tir_expr *mm(tir_ctx *c, const tir_var *const *ax, const tir_var *const *rx,
                          void *user) {
    clip_prog *p = user;
    const tir_expr *ia[2] = {&ax[0]->base, &rx[0]->base}, *ib[2] = {&rx[0]->base, &ax[1]->base};
    return tir_mul(c, tir_te_at(c, p->A, 2, ia), tir_te_at(c, p->B, 2, ib));
}

static const tir_expr *clip(tir_ctx *c, const tir_var *const *ax, const tir_var *const *rx,
                            void *user) {
    (void)rx;
    clip_prog *p = user;
    const tir_expr *ij[2] = {&ax[0]->base, &ax[1]->base}, *j[1] = {&ax[1]->base};
    const tir_expr *u = tir_add(c, tir_te_at(c, p->C, 2, ij), tir_te_at(c, p->bias, 1, j));
    return tir_min(c, tir_max(c, u, tir_f32(c, SEED_CLIP_LO)), tir_f32(c, SEED_CLIP_HI));
}

/* The TE callbacks run inside tir_te_reduce/compute, so the tensors can
 * live on the stack. */
static const tir_prim_func *matmul_bias_clip(tir_ctx *ctx, int64_t M, int64_t N, int64_t K) {
    clip_prog p;
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    p.A = tir_te_placeholder(ctx, "A", TIR_F32, 2, sa);
    p.B = tir_te_placeholder(ctx, "B", TIR_F32, 2, sb);
    p.bias = tir_te_placeholder(ctx, "bias", TIR_F32, 1, &N);
    if (!p.A || !p.B || !p.bias) return NULL;
    p.C = tir_te_reduce(ctx, "C", 2, sc, TIR_TE_SUM, 1, &K, mm, &p);
    if (!p.C) return NULL;
    tir_te_tensor *D = tir_te_compute(ctx, "D", 2, sc, clip, &p);
    if (!D) return NULL;
    tir_te_tensor *args[4] = {p.A, p.B, p.bias, D};
    return tir_te_create_prim_func(ctx, "matmul_bias_clip", 4, args);
}

const tir_prim_func *seed_def_fused(tir_ctx *ctx, seed_epi e, int64_t M, int64_t N, int64_t K) {
    switch (e) {
    case SEED_EPI_BIAS: return tir_def_matmul_bias(ctx, M, N, K, TIR_F32);
    case SEED_EPI_RELU: return tir_def_matmul_bias_relu(ctx, M, N, K, TIR_F32);
    case SEED_EPI_CLIP: return matmul_bias_clip(ctx, M, N, K);
    default: break;
    }
    tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "unknown epilogue %d", (int)e);
    return NULL;
}

tir_status seed_fused(tir_schedule *s, int step, seed_hook hook, void *user) {
    tir_block_rv c, d;
    CALL(s, hook, user, tir_sched_get_block(s, "C", &c));
    CALL(s, hook, user, tir_sched_get_block(s, "D", &d));
    CALL(s, hook, user, tir_sched_fuse_reduction_epilogue(s, c, d, NULL));
    /* Bias: the reduction now writes D and the epilogue block is gone. */
    bool has_epi = tir_sched_get_block(s, "D", &d) == TIR_OK;
    tiles t = {.sz = seed_tiles_default};
    tir_status st = steps(s, &t, step, !has_epi, hook, user);
    if (st != TIR_OK || !has_epi || step == 0) return st;
    /* The surviving epilogue D = h(C) runs in each thread right after its
     * accumulation, reading C from registers. */
    CALL(s, hook, user, tir_sched_reverse_compute_at(s, d, t.thread, false));
    CALL(s, hook, user, tir_sched_set_scope(s, t.c, 0, "local"));
    return TIR_OK;
}
