/* The tuner's CPU side (src/tune/space.c, search.c): the design space is
 * generated from the shape and holds only configurations the rule accepts
 * (each a valid schedule that lowers); the rule-based default is in it for
 * the shapes the performance record uses; decisions print and parse back;
 * the knobs are sampling instructions whose decisions the trace records
 * and replays; and tir_tune against the fake CUDA driver (which runs no
 * generated kernel, so every candidate fails verification) records every
 * candidate in the database and fails cleanly; for a batch matmul its
 * cuBLAS reference is the strided-batched GEMM.  With two fake GPUs (and
 * the fake computing the candidates' matmul) tir_tune measures on both,
 * merges their results by speed against each GPU's own cuBLAS, records
 * each candidate under its GPU's target, and a GPU whose kernels fault
 * stops alone; the XGBoost and random cost models search there too.  Run
 * under fake_env. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "minitir/tune.h"

static const tir_target_limits *sm90(void) { return &tir_target_find("sm_90")->limits; }

static int index_of(const tir_tune_space *sp, const tir_tile_config *c) {
    for (int i = 0; i < sp->n; i++) {
        const tir_tile_config *x = &sp->configs[i];
        if (x->warps_m == c->warps_m && x->warps_n == c->warps_n &&
            x->threads_m == c->threads_m && x->tm == c->tm && x->tn == c->tn &&
            x->bk == c->bk && x->vec == c->vec && x->staging == c->staging &&
            x->splitk == c->splitk && x->lsr == c->lsr && x->stages == c->stages &&
            x->dunroll == c->dunroll)
            return i;
    }
    return -1;
}

/* Every point valid; the default of each shape in the space; sampled
 * points schedule and lower. */
static void test_space(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    static const int64_t shapes[][3] = {{512, 512, 512},   {1024, 1024, 1024}, {4096, 4096, 4096},
                                        {4095, 4095, 4095}, {1000, 520, 333},   {1024, 1024, 4096},
                                        {256, 256, 16384}, {33, 1000, 45},  {1, 4096, 4096},
                                        {8, 4096, 4096},   {4096, 8, 4096},   {64, 4096, 4096},
                                        {1536, 1536, 1536}, {64, 64, 65536}};
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        tir_tune_task t = {TIR_TUNE_MATMUL, 1, shapes[k][0], shapes[k][1], shapes[k][2], TIR_RT_GEMM_F32};
        tir_tune_space sp;
        assert_int_equal(tir_tune_space_make(ctx, &t, sm90(), &sp), TIR_OK);
        assert_true(sp.n > 100);
        for (int i = 0; i < sp.n; i++) assert_true(tir_tune_config_valid(&t, sm90(), &sp.configs[i]));
        tir_tile_config d = tir_tune_default(&t, 132);
        if (index_of(&sp, &d) < 0) fail_msg("default of shape %zu is not in the space", k);
        /* a few points lower (the rule accepts them) */
        for (int r = 0; r < 3; r++) {
            const tir_tile_config *c = &sp.configs[(r * 7919 + (int)k * 31) % sp.n];
            tir_schedule *s = NULL;
            assert_int_equal(tir_sched_create(ctx, tir_tune_task_func(ctx, &t), &s), TIR_OK);
            if (tir_tune_tiling(s, "C", c, NULL, NULL) != TIR_OK)
                fail_msg("rule refused a space point: %s", tir_ctx_error(ctx));
            tir_kernel_set ks;
            if (tir_lower_kernels(ctx, tir_sched_func(s), NULL, &ks) != TIR_OK)
                fail_msg("space point does not lower: %s", tir_ctx_error(ctx));
            tir_sched_destroy(s);
        }
        /* multistage points (3 and 4 stages, never with staging) at
         * every shape, ragged ones included (their edge copies are
         * cp.async with a source size) */
        int multi = 0;
        for (int i = 0; i < sp.n; i++) {
            const tir_tile_config *c = &sp.configs[i];
            if (c->stages < 2) continue;
            multi++;
            assert_true(c->stages == 3 || c->stages == 4);
            assert_false(c->staging);
        }
        if (multi == 0) fail_msg("shape %zu: no multistage points", k);
        /* dunroll: only where it may matter, each such point with its twin
         * without it just before */
        int du = 0;
        for (int i = 0; i < sp.n; i++) {
            if (!sp.configs[i].dunroll) continue;
            du++;
            tir_tile_config twin = sp.configs[i];
            twin.dunroll = false;
            char a[256], b[256];
            assert_true(i > 0);
            tir_tile_config_text(&sp.configs[i - 1], a, sizeof a);
            tir_tile_config_text(&twin, b, sizeof b);
            assert_string_equal(a, b);
        }
        if (du == 0 || du == sp.n / 2) fail_msg("shape %zu: %d dunroll points", k, du);
        tir_tune_space_free(&sp);
    }
    /* the default's 32x32 tiles at 1000x520x333 (a k loop the direct
     * emitter leaves to LLVM: both values), and its 128x128x8 tiles at
     * 4096³ (570+ instructions a k tile: dunroll 0 only) */
    static const int64_t du_shapes[2][3] = {{1000, 520, 333}, {4096, 4096, 4096}};
    for (int k = 0; k < 2; k++) {
        tir_tune_task t = {TIR_TUNE_MATMUL, 1, du_shapes[k][0], du_shapes[k][1], du_shapes[k][2],
                           TIR_RT_GEMM_F32};
        tir_tune_space sp;
        assert_int_equal(tir_tune_space_make(ctx, &t, sm90(), &sp), TIR_OK);
        tir_tile_config c = tir_tune_default(&t, 132);
        assert_int_equal(c.warps_m * c.threads_m * c.tm, k == 0 ? 32 : 128);
        assert_true(index_of(&sp, &c) >= 0);
        c.dunroll = true;
        assert_int_equal(index_of(&sp, &c) >= 0, k == 0);
        tir_tune_space_free(&sp);
    }
    /* a multistage point that lowers, with cp.async copies */
    tir_tune_task m = {TIR_TUNE_MATMUL, 1, 512, 512, 512, TIR_RT_GEMM_F32};
    tir_tile_config ms = tir_tune_default(&m, 132);
    ms.staging = false, ms.stages = 4;
    assert_true(tir_tune_config_valid(&m, sm90(), &ms));
    tir_tune_space sp;
    assert_int_equal(tir_tune_space_make(ctx, &m, sm90(), &sp), TIR_OK);
    assert_true(index_of(&sp, &ms) >= 0);
    tir_tune_space_free(&sp);
    /* refused: with staging, 5 stages, past the opt-in
     * shared memory (128 x 128 x 32 in 4 versions: 135 KiB against a
     * 100 KiB limit) */
    ms.staging = true;
    assert_false(tir_tune_config_valid(&m, sm90(), &ms));
    ms.staging = false, ms.stages = 5;
    assert_false(tir_tune_config_valid(&m, sm90(), &ms));
    ms.stages = 3;
    m.K = 500; /* ragged k tiles: valid */
    assert_true(tir_tune_config_valid(&m, sm90(), &ms));
    tir_tile_config big = tir_tile_config_default();
    big.bk = 32, big.staging = false, big.stages = 4;
    m.M = m.N = m.K = 4096;
    assert_true(tir_tune_config_valid(&m, sm90(), &big));
    tir_target_limits lim = *sm90();
    lim.max_shared_dynamic = 100 * 1024;
    assert_false(tir_tune_config_valid(&m, &lim, &big));
    /* batch: no split-K in the space */
    tir_tune_task b = {TIR_TUNE_BATCH_MATMUL, 16, 512, 512, 512, TIR_RT_GEMM_F32};
    assert_int_equal(tir_tune_space_make(ctx, &b, sm90(), &sp), TIR_OK);
    for (int i = 0; i < sp.n; i++) assert_int_equal(sp.configs[i].splitk, 1);
    tir_tune_space_free(&sp);
    tir_tune_task bad = {TIR_TUNE_MATMUL, 1, 0, 4, 4, TIR_RT_GEMM_F32};
    assert_int_equal(tir_tune_space_make(ctx, &bad, sm90(), &sp), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "sizes must be positive"));
    tir_ctx_destroy(ctx);
}

/* The defaults the performance record relies on. */
static void test_default(void **st) {
    (void)st;
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, 4096, 4096, 4096, TIR_RT_GEMM_F32};
    tir_tile_config c = tir_tune_default(&t, 132);
    assert_int_equal(c.warps_m * c.threads_m * c.tm, 128);
    assert_int_equal(c.splitk, 1);
    assert_true(c.lsr);
    t.M = t.N = t.K = 4095;
    assert_false(tir_tune_default(&t, 132).lsr); /* ragged 128x128: LSR off */
    t.M = t.N = 1024, t.K = 4096;
    assert_int_equal(tir_tune_default(&t, 132).splitk, 4);
    t.M = t.N = 256, t.K = 16384;
    assert_int_equal(tir_tune_default(&t, 132).splitk, 64);
    t.M = t.N = t.K = 512; /* 64x64 tiles of 256 threads, split 4 */
    c = tir_tune_default(&t, 132);
    assert_int_equal(tir_tile_config_threads(&c), 256);
    assert_int_equal(c.splitk, 4);
    t.M = 1000, t.N = 520, t.K = 333; /* 32x32 tiles */
    c = tir_tune_default(&t, 132);
    assert_int_equal(c.warps_m * c.threads_m * c.tm, 32);
    assert_int_equal(c.warps_n * c.threads_n * c.tn, 32);
    assert_int_equal(c.splitk, 1);
    t.M = t.N = t.K = 128; /* 32x32 tiles, split 4 (at most 4) */
    c = tir_tune_default(&t, 132);
    assert_int_equal(c.warps_m * c.threads_m * c.tm, 32);
    assert_int_equal(c.splitk, 4);
    t.M = t.N = t.K = 768; /* 64x64, split towards 3 waves */
    assert_int_equal(tir_tune_default(&t, 132).splitk, 4);
    /* skinny: 16 x 128 tiles split 16 (slices of 256), and transposed */
    t.M = 8, t.N = t.K = 4096;
    c = tir_tune_default(&t, 132);
    assert_int_equal(c.warps_m * c.threads_m * c.tm, 16);
    assert_int_equal(c.warps_n * c.threads_n * c.tn, 128);
    assert_int_equal(c.splitk, 16);
    t.M = 4096, t.N = 8;
    c = tir_tune_default(&t, 132);
    assert_int_equal(c.warps_m * c.threads_m * c.tm, 128);
    assert_int_equal(c.warps_n * c.threads_n * c.tn, 16);
    /* a small side of 25-32 in one tile of 32 (the long operand read
       once), both ways; 24 keeps tiles of 16 */
    for (int side = 24; side <= 32; side += 8) {
        t.M = side, t.N = t.K = 4096;
        c = tir_tune_default(&t, 132);
        assert_int_equal(c.warps_m * c.threads_m * c.tm, side == 32 ? 32 : 16);
        assert_int_equal(c.warps_n * c.threads_n * c.tn, 128);
        t.M = 4096, t.N = side;
        c = tir_tune_default(&t, 132);
        assert_int_equal(c.warps_m * c.threads_m * c.tm, 128);
        assert_int_equal(c.warps_n * c.threads_n * c.tn, side == 32 ? 32 : 16);
        assert_int_equal(c.splitk, 16);
    }
    t.M = 64, t.N = 4096; /* 32 x 128, split 8 */
    c = tir_tune_default(&t, 132);
    assert_int_equal(c.warps_m * c.threads_m * c.tm, 32);
    assert_int_equal(c.splitk, 8);
    t.M = 64, t.N = 64, t.K = 65536; /* both small: 64x64 split 64, 3 stages */
    c = tir_tune_default(&t, 132);
    assert_int_equal(c.splitk, 64);
    assert_true(!c.staging && c.stages == 3);
    t.M = t.N = t.K = 512; /* slices of 128: register staging */
    c = tir_tune_default(&t, 132);
    assert_true(c.staging && c.stages == 0);
    /* 64 x 128 tiles where the last wave is lighter (1536³: 2 of
     * 128 x 128 or 3 of 64 x 128 on an SM) or ties on a ragged,
     * vectorisable shape; 128 x 128 on other ties */
    t.M = t.N = t.K = 1536;
    c = tir_tune_default(&t, 132);
    assert_int_equal(c.warps_m * c.threads_m * c.tm, 64);
    assert_int_equal(tir_tile_config_threads(&c), 128);
    t.M = 2000, t.N = 3000, t.K = 500;
    assert_int_equal(tir_tune_default(&t, 132).warps_m, 1);
    t.M = t.N = t.K = 4095;
    assert_int_equal(tir_tune_default(&t, 132).warps_m, 2);
    t.M = t.N = t.K = 2048;
    assert_int_equal(tir_tune_default(&t, 132).warps_m, 2);
}

static void test_text(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_tile_config c = tir_tile_config_default(), d;
    c.splitk = 8, c.lsr = false, c.bk = 16;
    char buf[256];
    tir_tile_config_text(&c, buf, sizeof buf);
    assert_string_equal(buf, "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=1 pad=4 "
                             "splitk=8 lsr=0 stages=0");
    assert_int_equal(tir_tile_config_parse(ctx, buf, &d), TIR_OK);
    char again[256];
    tir_tile_config_text(&d, again, sizeof again);
    assert_string_equal(again, buf);
    c.staging = false, c.stages = 3;
    tir_tile_config_text(&c, buf, sizeof buf);
    assert_string_equal(buf, "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 pad=4 "
                             "splitk=8 lsr=0 stages=3");
    d.stages = 0;
    assert_int_equal(tir_tile_config_parse(ctx, buf, &d), TIR_OK);
    assert_int_equal(d.stages, 3);
    assert_false(d.staging);
    /* the text of records written before stages (12 fields): stages 0 */
    d.stages = 4;
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x2 lanes=4x8 thread=4x2 bk=16 vec=2 staging=1 "
                                           "pad=4 splitk=1 lsr=1",
                                           &d),
                     TIR_OK);
    assert_int_equal(d.stages, 0);
    assert_int_equal(d.warps_m * d.threads_m * d.tm, 32);
    assert_true(d.staging);
    /* gvec ends the text when set; 0 or 1 only */
    c.gvec = true;
    tir_tile_config_text(&c, buf, sizeof buf);
    assert_string_equal(buf, "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 pad=4 "
                             "splitk=8 lsr=0 stages=3 gvec=1");
    assert_int_equal(tir_tile_config_parse(ctx, buf, &d), TIR_OK);
    assert_true(d.gvec);
    c.gvec = false;
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 "
                                           "pad=4 splitk=8 lsr=0 stages=3 gvec=2",
                                           &d),
                     TIR_ERR_PARSE);
    /* dunroll ends the text when set, after gvec; without it: 0 */
    c.dunroll = true;
    tir_tile_config_text(&c, buf, sizeof buf);
    assert_string_equal(buf, "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 pad=4 "
                             "splitk=8 lsr=0 stages=3 dunroll=1");
    d.gvec = true;
    assert_int_equal(tir_tile_config_parse(ctx, buf, &d), TIR_OK);
    assert_true(d.dunroll);
    assert_false(d.gvec);
    tir_tile_config_text(&d, again, sizeof again);
    assert_string_equal(again, buf);
    c.gvec = true;
    tir_tile_config_text(&c, buf, sizeof buf);
    assert_string_equal(buf, "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 pad=4 "
                             "splitk=8 lsr=0 stages=3 gvec=1 dunroll=1");
    d.gvec = d.dunroll = false;
    assert_int_equal(tir_tile_config_parse(ctx, buf, &d), TIR_OK);
    assert_true(d.gvec && d.dunroll);
    c.gvec = c.dunroll = false;
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 "
                                           "pad=4 splitk=8 lsr=0 stages=3 dunroll=0",
                                           &d),
                     TIR_OK);
    assert_false(d.dunroll);
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 "
                                           "pad=4 splitk=8 lsr=0 stages=3",
                                           &d),
                     TIR_OK);
    assert_false(d.dunroll);
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 "
                                           "pad=4 splitk=8 lsr=0 stages=3 dunroll=2",
                                           &d),
                     TIR_ERR_PARSE);
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=0 "
                                           "pad=4 splitk=8 lsr=0 stages=3 dunroll=1 gvec=1",
                                           &d),
                     TIR_ERR_PARSE);
    assert_int_equal(tir_tile_config_parse(ctx, "warps=2x4 lanes=8", &d), TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "field 4 of 13"));
    /* after the 12 fields only " stages=N" */
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=1 "
                                           "pad=4 splitk=8 lsr=0 stage=3",
                                           &d),
                     TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "field 13 of 13"));
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=16 vec=4 staging=1 "
                                           "pad=4 splitk=8 lsr=0 stages=3 x",
                                           &d),
                     TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "field 13 of 13"));
    /* knobs out of range: a replay's pool or --config took them, and the
       cost model's prior multiplied 65536 x 65536 in int (overflow) */
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=65536x65536 bk=8 vec=4 "
                                           "staging=1 pad=4 splitk=1 lsr=1 stages=0",
                                           &d),
                     TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "out of range"));
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=0 vec=0 staging=1 "
                                           "pad=4 splitk=1 lsr=1 stages=0",
                                           &d),
                     TIR_ERR_PARSE);
    /* a number past INT_MAX: sscanf's %d is undefined for it (glibc
       saturates), so the text is refused before sscanf reads it; so is a
       long run of leading zeros (whose value would fit) */
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=99999999999 vec=4 "
                                           "staging=1 pad=4 splitk=1 lsr=1 stages=0",
                                           &d),
                     TIR_ERR_PARSE);
    assert_non_null(strstr(tir_ctx_error(ctx), "more than 9 digits"));
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=0000000008 vec=4 "
                                           "staging=1 pad=4 splitk=1 lsr=1 stages=0",
                                           &d),
                     TIR_ERR_PARSE);
    assert_int_equal(tir_tile_config_parse(ctx,
                                           "warps=2x4 lanes=8x4 thread=8x8 bk=000000008 vec=4 "
                                           "staging=1 pad=4 splitk=1 lsr=1 stages=0",
                                           &d),
                     TIR_OK);
    /* the switches that are not in the text (splitk_atomic, guard_tail,
     * no_swizzle) are the defaults', whatever *c held: tune replay
     * (src/tune/replay.c) parses into an uninitialised struct and tiles
     * with it; a failed parse leaves *c as it was */
    memset(&d, 0x5a, sizeof d);
    d.splitk_atomic = d.guard_tail = d.no_swizzle = true;
    assert_int_equal(tir_tile_config_parse(ctx, buf, &d), TIR_OK);
    c = tir_tile_config_default();
    assert_int_equal(d.splitk_atomic, c.splitk_atomic);
    assert_int_equal(d.guard_tail, c.guard_tail);
    assert_int_equal(d.no_swizzle, c.no_swizzle);
    tir_tile_config before;
    memcpy(&before, &d, sizeof d);
    assert_int_equal(tir_tile_config_parse(ctx, "warps=7x7 lanes=8", &d), TIR_ERR_PARSE);
    assert_memory_equal(&d, &before, sizeof d);
    tir_ctx_destroy(ctx);
}

/* The knobs are sampling instructions: the trace records the decisions,
 * replays to the same function, and a forced configuration outside the
 * candidates is refused. */
static void test_sampled(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = tir_def_matmul(ctx, 200, 136, 64, TIR_F32);
    tir_tile_config c = tir_tile_config_default(), used;
    c.splitk = 2, c.bk = 16;
    tir_schedule *s = NULL, *r = NULL;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
    assert_int_equal(tir_tune_tiling_sampled(s, "C", &c, &used), TIR_OK);
    assert_int_equal(used.splitk, 2);
    assert_int_equal(used.bk, 16);
    const tir_decision *dec;
    int nd;
    assert_int_equal(tir_sched_decisions(s, &dec, &nd), TIR_OK);
    assert_int_equal(nd, 12);
    const char *text = tir_sched_trace_text(s);
    assert_non_null(strstr(text, "sample_categorical([1, 2, 3, 4, 8, 16, 32, 64]"));
    assert_non_null(strstr(text, "sample_categorical([0, 1, 2, 3, 4]"));
    assert_int_equal(tir_sched_create(ctx, f, &r), TIR_OK);
    assert_int_equal(tir_sched_replay(r, text, strlen(text)), TIR_OK);
    assert_true(tir_struct_equal(tir_sched_func(r), tir_sched_func(s)));
    tir_sched_destroy(r);
    tir_sched_destroy(s);
    /* a multistage configuration: its decision recorded, replayed */
    c.staging = false, c.stages = 3;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
    assert_int_equal(tir_tune_tiling_sampled(s, "C", &c, &used), TIR_OK);
    assert_int_equal(used.stages, 3);
    assert_false(used.staging);
    assert_int_equal(tir_sched_decisions(s, &dec, &nd), TIR_OK);
    assert_int_equal(nd, 12);
    text = tir_sched_trace_text(s);
    assert_non_null(strstr(text, "software_pipeline"));
    tir_sched_destroy(s);
    /* gvec: its decision recorded, the annotation in the trace (N = 136 is
     * ragged against 128-wide tiles) */
    c.gvec = true;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
    assert_int_equal(tir_tune_tiling_sampled(s, "C", &c, &used), TIR_OK);
    assert_true(used.gvec);
    text = tir_sched_trace_text(s);
    assert_non_null(strstr(text, "vectorize_global_guarded"));
    c.gvec = false;
    assert_int_equal(tir_sched_create(ctx, f, &r), TIR_OK);
    assert_int_equal(tir_sched_replay(r, text, strlen(text)), TIR_OK);
    assert_true(tir_struct_equal(tir_sched_func(r), tir_sched_func(s)));
    tir_sched_destroy(r);
    tir_sched_destroy(s);
    /* dunroll: only where set, its decision recorded and the annotation in
     * the trace; the replayed schedule's kernels carry it */
    for (int du = 0; du < 2; du++) {
        c.dunroll = du;
        assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
        assert_int_equal(tir_tune_tiling_sampled(s, "C", &c, &used), TIR_OK);
        assert_int_equal(used.dunroll, du);
        text = tir_sched_trace_text(s);
        assert_int_equal(strstr(text, "\"direct_unroll\", 1") != NULL, du);
        assert_int_equal(tir_sched_create(ctx, f, &r), TIR_OK);
        assert_int_equal(tir_sched_replay(r, text, strlen(text)), TIR_OK);
        assert_true(tir_struct_equal(tir_sched_func(r), tir_sched_func(s)));
        tir_kernel_set ks;
        assert_int_equal(tir_lower_kernels(ctx, tir_sched_func(r), NULL, &ks), TIR_OK);
        for (int k = 0; k < ks.nkernels; k++) {
            const tir_annot *a = tir_annots_get(ks.kernels[k]->nattrs, ks.kernels[k]->attrs,
                                                TIR_ANN_DIRECT_UNROLL);
            assert_int_equal(a && a->kind == TIR_ANNOT_INT && a->i == 1, du);
        }
        tir_sched_destroy(r);
        tir_sched_destroy(s);
    }
    c.dunroll = false;
    c.stages = 5;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
    assert_int_equal(tir_tune_tiling_sampled(s, "C", &c, NULL), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "knob stages = 5"));
    tir_sched_destroy(s);
    c.stages = 0, c.staging = true;
    c.bk = 12;
    assert_int_equal(tir_sched_create(ctx, f, &s), TIR_OK);
    assert_int_equal(tir_tune_tiling_sampled(s, "C", &c, NULL), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "is not among the rule's candidates"));
    tir_sched_destroy(s);
    tir_ctx_destroy(ctx);
}

/* Device 0 (the fake's), or the test skipped (and ctx destroyed). */
static tir_rt_device *open_device(tir_ctx *ctx) {
    tir_rt_device *dev = NULL;
    if (tir_rt_device_create(ctx, 0, &dev) != TIR_OK) {
        tir_ctx_destroy(ctx);
        skip();
    }
    return dev;
}

/* tir_tune on the fake driver: every candidate compiled, measured and
 * recorded, none verified (the fake runs no generated kernel), a clean
 * error. */
/* A GPU that leaves the bench's hold at once (the fake's FAKE_CUDA_NO_HOLD):
 * cuBLAS's time is flagged as possibly host-bound. */
static void test_tune_host_bound(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_rt_device *dev = open_device(ctx);
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, 64, 48, 40, TIR_RT_GEMM_F32};
    tir_tune_opts o = {.trials = 2, .threads = 1, .batch = 2, .runs = 20, .seed = 2};
    tir_tune_result r;
    setenv("FAKE_CUDA_NO_HOLD", "1", 1);
    tir_status s = tir_tune(ctx, dev, &t, &o, &r);
    unsetenv("FAKE_CUDA_NO_HOLD");
    assert_true(s == TIR_OK || s == TIR_ERR_UNSUPPORTED);
    assert_true(r.gpus[0].cublas_ms > 0 && r.gpus[0].cublas_host_bound);
    tir_tune_result_free(&r);
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
}

static void test_tune_fake(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_rt_device *dev = open_device(ctx);
    char path[] = "/tmp/minitir-tune-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    tir_tune_db *db = NULL;
    assert_int_equal(tir_tune_db_open(ctx, path, &db), TIR_OK);
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, 64, 48, 40, TIR_RT_GEMM_F32};
    tir_tune_opts o = {.trials = 6, .threads = 2, .batch = 3, .runs = 20, .seed = 1, .db = db};
    tir_tune_result r;
    assert_int_equal(tir_tune(ctx, dev, &t, &o, &r), TIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tir_ctx_error(ctx), "none of the 6 candidates measured ran correctly"));
    assert_int_equal(r.trials, 6);
    assert_int_equal(r.failed, 6);
    int64_t n = 0;
    assert_int_equal(tir_tune_db_count(ctx, db, NULL, NULL, &n), TIR_OK);
    assert_int_equal(n, 6);
    tir_tune_result_free(&r);
    tir_tune_db_close(db);
    unlink(path);
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
}

/* The stand-in cuBLAS's count of calls to an entry point (-1 when
 * MINITIR_CUBLAS_LIB is not the stand-in). */
static long blas_calls(const char *entry) {
    const char *lib = getenv("MINITIR_CUBLAS_LIB");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    long (*f)(const char *) = NULL;
    if (h) *(void **)&f = dlsym(h, "fake_cuda_blas_calls");
    long n = f ? f(entry) : -1;
    if (h) dlclose(h);
    return n;
}

/* A batch matmul's cuBLAS reference (and cuBLAS's time) is the
 * strided-batched GEMM, called once per reference, never SGEMM per
 * batch. */
static void test_tune_fake_batched(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    tir_rt_device *dev = open_device(ctx);
    tir_tune_task t = {TIR_TUNE_BATCH_MATMUL, 3, 64, 48, 40, TIR_RT_GEMM_F32};
    tir_tune_opts o = {.trials = 2, .threads = 2, .batch = 2, .runs = 20, .seed = 2};
    tir_tune_result r;
    long sgemm = blas_calls("cublasSgemm_v2"), strided = blas_calls("cublasSgemmStridedBatched");
    assert_true(sgemm >= 0 && strided >= 0);
    assert_int_equal(tir_tune(ctx, dev, &t, &o, &r), TIR_ERR_UNSUPPORTED);
    assert_int_equal(r.trials, 2);
    assert_int_equal(blas_calls("cublasSgemm_v2"), sgemm);
    /* the reference of set 0, then at least 20 timed runs of it */
    assert_true(blas_calls("cublasSgemmStridedBatched") - strided >= 21);
    tir_tune_result_free(&r);
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
}

/* A fresh database file's path (removed). */
static void temp_db(char path[static 32]) {
    snprintf(path, 32, "/tmp/minitir-tune-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
}

/* The fake's switches for the multi-GPU tests: two devices, candidates
 * that compute the 64x48x40 matmul, and (fail >= 0) faults on a device. */
static void fake_gpus(int fail) {
    setenv("MINITIR_FAKE_GPUS", "2", 1);
    setenv("FAKE_CUDA_MATMUL", "64,48,40", 1);
    if (fail >= 0) setenv("FAKE_CUDA_FAIL_GPU", fail ? "1" : "0", 1);
}
static void fake_gpus_off(void) {
    unsetenv("MINITIR_FAKE_GPUS");
    unsetenv("FAKE_CUDA_MATMUL");
    unsetenv("FAKE_CUDA_FAIL_GPU");
}

static void keep_progress(void *user, const tir_tune_progress *p) {
    *(tir_tune_progress *)user = *p;
}

/* Two GPUs: both measure, the results merge (the best is device 0's,
 * whose kernels the fake runs 4x faster against the same cuBLAS time),
 * the progress counts each, and each record carries its GPU's target with
 * that GPU's times. */
static void test_tune_two_gpus(void **st) {
    (void)st;
    fake_gpus(-1);
    tir_ctx *ctx = tir_ctx_create();
    tir_rt_device *dev = open_device(ctx), *dev1 = NULL;
    assert_int_equal(tir_rt_device_create(ctx, 1, &dev1), TIR_OK);
    char path[32];
    temp_db(path);
    tir_tune_db *db = NULL;
    assert_int_equal(tir_tune_db_open(ctx, path, &db), TIR_OK);
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, 64, 48, 40, TIR_RT_GEMM_F32};
    tir_tune_progress p = {0};
    tir_tune_opts o = {.trials = 12, .threads = 2, .batch = 4, .runs = 20, .seed = 3, .db = db,
                       .progress = keep_progress, .user = &p, .ngpus = 2};
    tir_tune_result r;
    if (tir_tune(ctx, dev, &t, &o, &r) != TIR_OK) fail_msg("tune: %s", tir_ctx_error(ctx));
    assert_int_equal(r.trials, 12);
    assert_int_equal(r.failed, 0);
    assert_int_equal(r.ngpus, 2);
    assert_int_equal(r.gpus[0].ordinal, 0);
    assert_int_equal(r.gpus[1].ordinal, 1);
    assert_string_equal(r.gpus[1].name, "Fake GPU 1 (host emulation)");
    assert_true(r.gpus[0].trials > 0 && r.gpus[1].trials > 0);
    assert_int_equal(r.gpus[0].trials + r.gpus[1].trials, 12);
    assert_string_equal(r.gpus[0].error, "");
    assert_string_equal(r.gpus[1].error, "");
    assert_true(r.gpus[0].cublas_ms > 0 && r.gpus[1].cublas_ms > 0);
    /* the fake models the bench's hold: cuBLAS's samples were back to back */
    assert_true(!r.gpus[0].cublas_host_bound && !r.gpus[1].cublas_host_bound);
    assert_int_equal(r.best_gpu, 0);
    assert_true(r.best_ms < 0.2 && r.best_rel_err < 1e-5);
    assert_true(r.cublas_ms == r.gpus[0].cublas_ms);
    /* the last progress call saw every trial, per GPU */
    assert_int_equal(p.trials, 12);
    assert_int_equal(p.ngpus, 2);
    assert_int_equal(p.gpu_trials[0], r.gpus[0].trials);
    assert_int_equal(p.gpu_trials[1], r.gpus[1].trials);
    /* each record under its GPU's target, with that GPU's times */
    tir_tune_target t0, t1;
    tir_tune_target_from_props(tir_rt_device_props(dev), &t0);
    tir_tune_target_from_props(tir_rt_device_props(dev1), &t1);
    int64_t n0 = 0, n1 = 0;
    assert_int_equal(tir_tune_db_count(ctx, db, NULL, &t0, &n0), TIR_OK);
    assert_int_equal(tir_tune_db_count(ctx, db, NULL, &t1, &n1), TIR_OK);
    assert_int_equal(n0, r.gpus[0].trials);
    assert_int_equal(n1, r.gpus[1].trials);
    tir_tune_record b0, b1;
    const char *w;
    assert_int_equal(tir_tune_workload_key(ctx, tir_tune_task_func(ctx, &t), &w), TIR_OK);
    assert_int_equal(tir_tune_db_best(ctx, db, w, &t0, &b0), TIR_OK);
    assert_int_equal(tir_tune_db_best(ctx, db, w, &t1, &b1), TIR_OK);
    assert_true(b0.median_ms == r.best_ms);
    assert_true(b1.median_ms >= 0.2); /* device 1's kernels take 0.2 ms or more */
    tir_tune_result_free(&r);
    tir_tune_db_close(db);
    unlink(path);
    tir_rt_device_destroy(dev1);
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
    fake_gpus_off();
}

/* The search's other cost models on the fake GPU: XGBoost refits once per
 * round after the first (skipped, saying why, without libxgboost); random
 * search fits nothing; both measure every trial and find a best. */
static void test_tune_models(void **st) {
    (void)st;
    fake_gpus(-1);
    tir_ctx *ctx = tir_ctx_create();
    tir_rt_device *dev = open_device(ctx);
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, 64, 48, 40, TIR_RT_GEMM_F32};
    bool have_xgb = tir_tune_xgb_available(ctx) == TIR_OK;
    if (!have_xgb) printf("# skipping the xgb model: %s\n", tir_ctx_error(ctx));
    for (int m = TIR_TUNE_MODEL_XGB; m <= TIR_TUNE_MODEL_RANDOM; m++) {
        if (m == TIR_TUNE_MODEL_XGB && !have_xgb) continue;
        tir_tune_opts o = {.trials = 12, .threads = 2, .batch = 4, .runs = 20, .seed = 5,
                           .ngpus = 1, .model = (tir_tune_model)m};
        tir_tune_result r;
        if (tir_tune(ctx, dev, &t, &o, &r) != TIR_OK) fail_msg("tune: %s", tir_ctx_error(ctx));
        assert_int_equal(r.trials, 12);
        assert_true(r.best_ms < 0.2 && r.best_rel_err < 1e-5);
        assert_int_equal(r.model_fits, m == TIR_TUNE_MODEL_XGB ? 2 : 0); /* rounds 2 and 3 */
        if (m == TIR_TUNE_MODEL_XGB) assert_true(r.model_fit_ms > 0);
        tir_tune_result_free(&r);
    }
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
    fake_gpus_off();
}

/* A GPU whose kernels fault stops after its first candidate and says why;
 * the other measures the rest.  With one GPU that faults the search stops
 * with TIR_ERR_CUDA; more GPUs than there are is refused. */
static void test_tune_gpu_error(void **st) {
    (void)st;
    fake_gpus(1);
    tir_ctx *ctx = tir_ctx_create();
    tir_rt_device *dev = open_device(ctx);
    tir_tune_task t = {TIR_TUNE_MATMUL, 1, 64, 48, 40, TIR_RT_GEMM_F32};
    tir_tune_opts o = {.trials = 10, .threads = 2, .batch = 4, .runs = 20, .seed = 4,
                       .ngpus = TIR_TUNE_ALL_GPUS};
    tir_tune_result r;
    if (tir_tune(ctx, dev, &t, &o, &r) != TIR_OK) fail_msg("tune: %s", tir_ctx_error(ctx));
    assert_int_equal(r.ngpus, 2);
    assert_int_equal(r.trials, 10);
    assert_int_equal(r.gpus[1].trials, 1);
    assert_int_equal(r.gpus[1].failed, 1);
    assert_non_null(strstr(r.gpus[1].error, "the CUDA context is lost"));
    assert_non_null(strstr(r.gpus[1].error, "CUDA_ERROR_ILLEGAL_ADDRESS"));
    assert_int_equal(r.gpus[0].trials, 9);
    assert_int_equal(r.gpus[0].failed, 0);
    assert_int_equal(r.best_gpu, 0);
    tir_tune_result_free(&r);
    /* device 0 faults and is the only one */
    fake_gpus(0);
    o.ngpus = 1;
    assert_int_equal(tir_tune(ctx, dev, &t, &o, &r), TIR_ERR_CUDA);
    assert_non_null(strstr(tir_ctx_error(ctx), "tune: stopped after trial 1: the CUDA context is lost"));
    assert_int_equal(r.trials, 1);
    tir_tune_result_free(&r);
    o.ngpus = 3;
    assert_int_equal(tir_tune(ctx, dev, &t, &o, &r), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "asks for 3 GPUs but 2 are visible"));
    tir_tune_result_free(&r);
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
    fake_gpus_off();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space),   cmocka_unit_test(test_default),
        cmocka_unit_test(test_text),    cmocka_unit_test(test_sampled),
        cmocka_unit_test(test_tune_fake),
        cmocka_unit_test(test_tune_host_bound),  cmocka_unit_test(test_tune_fake_batched),
        cmocka_unit_test(test_tune_two_gpus), cmocka_unit_test(test_tune_gpu_error),
        cmocka_unit_test(test_tune_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
