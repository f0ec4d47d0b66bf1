/* test_global_fuzz.c: random kernels whose threads share a global buffer,
 * lowered and run in the SIMT simulator against the interpreter.
 *
 * Each case writes B (1-D or 2-D, a parameter with defined contents) at a
 * random index of (block b, thread t, serial j) under one blockIdx loop,
 * then reads it at another random index with another threadIdx loop:
 *     B[f(b, t, j)] = A[...] + k;   C[b, t, j] = B[g(b, t, j)]
 * f and g are affine with small coefficients (so that global_share's
 * proof decides some and leaves others to race_check's enumeration), g
 * sometimes wrapped in a floormod.  When tir_lower accepts, the simulator
 * (global races and reads of unwritten elements checked) must run the
 * kernel without error and give the interpreter's B and C; a refusal must
 * be race_check's or gpu_check's, and is counted.  The draws include
 * races across blocks (refused), within blocks (a barrier), between two
 * writers of one element, and none.  MINITIR_FUZZ_CASES=N runs N cases
 * (default 300), MINITIR_FUZZ_SEED picks the seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz_xorshift.h"
#include "minitir/lower.h"
#include "minitir/sim.h"

typedef struct draw {
    int nb, nt, nj;   /* blockIdx, threadIdx and serial extents */
    int rows, cols;   /* B's shape (rows 0: 1-D of cols) */
    char f[2][160], g[2][200];
} draw;

/* A random affine form c0 + c1*b + c2*t + c3*j, its largest value in *max. */
static void affine(const draw *d, char *out, size_t n, int64_t *max) {
    int c[4];
    for (int i = 0; i < 4; i++) c[i] = pick(3) == 0 ? 0 : pick(i == 0 ? 4 : 9);
    if (pick(2) == 0) { /* one element per (b, t, j): t, j mixed radix, b outermost or not */
        int inner = pick(2), ext[2] = {d->nt, d->nj};
        c[3 - inner] = 1, c[2 + inner] = ext[1 - inner] + pick(2);
        c[1] = pick(3) ? c[2 + inner] * ext[inner] + pick(2) : pick(3);
    }
    *max = c[0] + (int64_t)c[1] * (d->nb - 1) + (int64_t)c[2] * (d->nt - 1) +
           (int64_t)c[3] * (d->nj - 1);
    int sp = 2 << pick(2); /* t split into digits t // sp, t % sp (a fused thread index) */
    if (pick(3) == 0 && d->nt > sp) {
        int hi = pick(3), lo = pick(2) ? c[2] : pick(9); /* swapped, scaled or merged digits */
        if (hi == 0) hi = c[2] * sp;
        else hi = pick(2) ? c[2] * sp + pick(3) : pick(9);
        *max = c[0] + (int64_t)c[1] * (d->nb - 1) + (int64_t)hi * ((d->nt - 1) / sp) +
               (int64_t)lo * (sp - 1) + (int64_t)c[3] * (d->nj - 1);
        snprintf(out, n, "%d + b * %d + t // %d * %d + t %% %d * %d + j * %d", c[0], c[1], sp, hi,
                 sp, lo, c[3]);
        return;
    }
    snprintf(out, n, "%d + b * %d + t * %d + j * %d", c[0], c[1], c[2], c[3]);
}

static void make(draw *d, char *src, size_t n) {
    d->nb = 1 + pick(3), d->nt = 1 + pick(8), d->nj = 1 + pick(3);
    int ndim = 1 + pick(2);
    int64_t fmax[2], gmax[2];
    for (int k = 0; k < ndim; k++) {
        affine(d, d->f[k], sizeof d->f[k], &fmax[k]);
        char g[160];
        affine(d, g, sizeof g, &gmax[k]);
        if (pick(3) == 0) gmax[k] = 0; /* a copy of f: the same element */
        if (gmax[k] == 0) snprintf(g, sizeof g, "%s", d->f[k]), gmax[k] = fmax[k];
        int64_t size = (fmax[k] > gmax[k] ? fmax[k] : gmax[k]) + 1;
        if (pick(4) == 0)
            snprintf(d->g[k], sizeof d->g[k], "(%s + %d) %% %lld", g, pick(5), (long long)size);
        else
            snprintf(d->g[k], sizeof d->g[k], "%s", g);
        if (k == 0) d->rows = (int)size;
        else d->cols = (int)size;
    }
    if (ndim == 1) d->cols = d->rows, d->rows = 0;
    char shape[64], fi[340], gi[420];
    const char *bprm = "B";
    if (ndim == 1) {
        snprintf(shape, sizeof shape, "(%d,)", d->cols);
        snprintf(fi, sizeof fi, "%s", d->f[0]);
        snprintf(gi, sizeof gi, "%s", d->g[0]);
    } else {
        snprintf(shape, sizeof shape, "(%d, %d)", d->rows, d->cols);
        snprintf(fi, sizeof fi, "%s, %s", d->f[0], d->f[1]);
        snprintf(gi, sizeof gi, "%s, %s", d->g[0], d->g[1]);
    }
    int nc = d->nb * d->nt * d->nj;
    if (pick(5) == 0) /* B only written: two threads storing one element race too */
        snprintf(gi, sizeof gi, "b * %d + t * %d + j", d->nt * d->nj, d->nj), bprm = "A";
    snprintf(src, n,
             "@T.prim_func\n"
             "def gs(A: T.Buffer((%d,), \"float32\"), B: T.Buffer(%s, \"float32\"),\n"
             "       C: T.Buffer((%d,), \"float32\")):\n"
             "    for b in T.thread_binding(0, %d, thread=\"blockIdx.x\"):\n"
             "        for t in T.thread_binding(0, %d, thread=\"threadIdx.x\"):\n"
             "            for j in T.serial(%d):\n"
             "                B[%s] = A[b * %d + t * %d + j] + T.float32(1)\n"
             "        for t in T.thread_binding(0, %d, thread=\"threadIdx.x\"):\n"
             "            for j in T.serial(%d):\n"
             "                C[b * %d + t * %d + j] = %s[%s]\n",
             nc, shape, nc, d->nb, d->nt, d->nj, fi, d->nt * d->nj, d->nj, d->nt, d->nj,
             d->nt * d->nj, d->nj, bprm, gi);
}

typedef struct tally {
    int cases, lowered, barriers, refused_cross, refused_other;
} tally;

static int count_syncs(const char *text) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, "T.syncthreads()")); p++) n++;
    return n;
}

static void one_case(uint64_t seed, long c, tally *t) {
    fuzz_seed_case(seed, c);
    draw d;
    char src[4096];
    make(&d, src, sizeof src);
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = NULL, *k = NULL;
    if (tir_parse_func(ctx, src, strlen(src), &f) != TIR_OK)
        fail_msg("case %ld: parse: %s\n%s", c, tir_ctx_error(ctx), src);
    t->cases++;
    tir_status st = tir_lower(ctx, f, NULL, &k);
    if (st != TIR_OK) {
        const char *e = tir_ctx_error(ctx);
        if (!strstr(e, "race_check: global buffer B") && !strstr(e, "gpu_check"))
            fail_msg("case %ld: unexpected refusal: %s\n%s", c, e, src);
        if (strstr(e, "different thread blocks")) t->refused_cross++;
        else t->refused_other++;
        if (getenv("GF_VERBOSE")) printf("refused %ld: %.300s\n", c, e);
        tir_ctx_destroy(ctx);
        return;
    }
    t->lowered++;
    t->barriers += count_syncs(tir_print(ctx, k)) > 0;
    int na = d.nb * d.nt * d.nj, nbuf = (d.rows ? d.rows : 1) * d.cols;
    float *a = malloc(sizeof(float) * (size_t)na), *b[2], *o[2];
    for (int i = 0; i < 2; i++) {
        b[i] = malloc(sizeof(float) * (size_t)nbuf);
        o[i] = malloc(sizeof(float) * (size_t)na);
        for (int e = 0; e < nbuf; e++) b[i][e] = (float)(-e - 1);
    }
    for (int e = 0; e < na; e++) a[e] = (float)(e * 3 % 17);
    tir_arg ra[3] = {{.data = a}, {.data = b[0]}, {.data = o[0]}};
    tir_arg sa[3] = {{.data = a}, {.data = b[1]}, {.data = o[1]}};
    if (tir_interp_run(ctx, f, 3, ra, NULL) != TIR_OK)
        fail_msg("case %ld: interpreter: %s\n%s", c, tir_ctx_error(ctx), src);
    tir_sim_opts so = {.check_uninit = true, .uninit_params = 4, .check_global_races = true};
    if (tir_sim_run(ctx, k, 3, sa, &so, NULL) != TIR_OK)
        fail_msg("case %ld: accepted, but the simulator: %s\n%s\nlowered:\n%s", c,
                 tir_ctx_error(ctx), src, tir_print(ctx, k));
    if (memcmp(b[0], b[1], sizeof(float) * (size_t)nbuf) ||
        memcmp(o[0], o[1], sizeof(float) * (size_t)na))
        fail_msg("case %ld: simulator and interpreter differ\n%s\nlowered:\n%s", c, src,
                 tir_print(ctx, k));
    free(a);
    for (int i = 0; i < 2; i++) free(b[i]), free(o[i]);
    tir_ctx_destroy(ctx);
}

static void test_global_share_vs_simulator(void **state) {
    (void)state;
    const char *e = getenv("MINITIR_FUZZ_CASES");
    const char *sd = getenv("MINITIR_FUZZ_SEED");
    long cases = e ? atol(e) : 300;
    uint64_t seed = sd ? strtoull(sd, NULL, 10) : 17;
    tally t = {0};
    for (long c = 0; c < cases; c++) one_case(seed, c, &t);
    printf("# %d cases from seed %llu: %d lowered (%d with a barrier), %d refused across "
           "blocks, %d refused otherwise\n",
           t.cases, (unsigned long long)seed, t.lowered, t.barriers, t.refused_cross,
           t.refused_other);
    assert_true(t.lowered > 0 && t.barriers > 0 && t.refused_cross > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_global_share_vs_simulator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
