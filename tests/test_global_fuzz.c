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
 * writers of one element, and none.  A second test draws from a richer
 * generator (below: digits v // d, v % m, v // d % m, merged dimensions
 * (e // c, e % c), variables of any value, negative minima, lane_id(),
 * Ramps, int64 casts, threadIdx.y, blockIdx.y, in-place accumulation).
 * MINITIR_FUZZ_CASES=N runs N cases of each (default 300),
 * MINITIR_FUZZ_SEED picks the seed. */
#include <setjmp.h>
#include <stdbool.h>
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

/* ------------------------------------------------ the second generator
 *
 * Indices built from the digits global_share splits variables into:
 * v, v // d, v % m and v // d % m of b, by (blockIdx.y), t (threadIdx.x,
 * or lane_id() at blockDim.x 32), ty (threadIdx.y) and a serial j that
 * may start below 0 or run to a symbolic n (any value; b may run to a
 * symbolic nb too), with divisors that divide each other or not and may
 * exceed the range.  A form is either a mixed radix over digits (one
 * element per point, now and then perturbed) or random small
 * coefficients.  B is 1-D (its index maybe an int64 cast, a Ramp on
 * either side), 2-D, or 2-D indexed (e // c, e % c) on one or both sides
 * (the other side x, y with y in [0, c) or guarded to it).  The writer
 * may accumulate in place; the reader sits in its own thread loops or in
 * the writer's (where threads that communicate need the barrier, and the
 * interpreter's serial order is not the kernel's: compared only when the
 * lowered kernel has none). */
enum { V_B, V_BY, V_T, V_TY, V_J, NV2 };
static const char *const vname2[NV2] = {"b", "by", "t", "ty", "j"};

typedef struct atom2 {
    int var, kind, d, m; /* kind 0: v, 1: v // d, 2: v % m, 3: v // d % m */
} atom2;

typedef struct form2 {
    int n;
    atom2 a[8];
    int64_t c[8], k;
} form2;

typedef struct nest2 {
    int lo[NV2], ext[NV2]; /* ext 0: the variable absent */
    bool lane;             /* t printed as T.lane_id() (blockDim.x 32) */
} nest2;

static int64_t fdiv2(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
static int64_t fmod2(int64_t a, int64_t b) { return a - fdiv2(a, b) * b; }

static int64_t atom_val(const atom2 *a, const int64_t *v) {
    int64_t x = v[a->var];
    switch (a->kind) {
    case 1: return fdiv2(x, a->d);
    case 2: return fmod2(x, a->m);
    case 3: return fmod2(fdiv2(x, a->d), a->m);
    default: return x;
    }
}

static int64_t form_val(const form2 *f, const int64_t *v) {
    int64_t s = f->k;
    for (int i = 0; i < f->n; i++) s += f->c[i] * atom_val(&f->a[i], v);
    return s;
}

static int print_form(const form2 *f, const nest2 *ns, char *o, size_t n) {
    int w = snprintf(o, n, "%lld", (long long)f->k);
    for (int i = 0; i < f->n; i++) {
        const atom2 *a = &f->a[i];
        const char *v = a->var == V_T && ns->lane ? "T.lane_id()" : vname2[a->var];
        char at[64];
        if (a->kind == 0) snprintf(at, sizeof at, "%s", v);
        else if (a->kind == 1) snprintf(at, sizeof at, "%s // %d", v, a->d);
        else if (a->kind == 2) snprintf(at, sizeof at, "%s %% %d", v, a->m);
        else snprintf(at, sizeof at, "%s // %d %% %d", v, a->d, a->m);
        w += snprintf(o + w, n - (size_t)w, " + (%s) * %lld", at, (long long)f->c[i]);
    }
    return w;
}

static const int divs2[] = {1, 2, 3, 4, 6, 8, 16, 32};
static bool clean2; /* forms one element per point, the reader's often the writer's */
static int pick_div(void) { return pick(4) ? 1 << pick(5) : divs2[pick(8)]; }

/* The values of atom kind on v of range [lo, lo + ext) : its range. */
static void atom_range(const atom2 *a, int lo, int ext, int64_t *mn, int64_t *mx) {
    *mn = INT64_MAX, *mx = INT64_MIN;
    for (int64_t x = lo; x < lo + ext; x++) {
        int64_t v[NV2] = {0};
        v[a->var] = x;
        int64_t y = atom_val(a, v);
        if (y < *mn) *mn = y;
        if (y > *mx) *mx = y;
    }
}

/* A random form over ns's variables: structured (mixed radix over
 * digits of the variables, one element per point, perturbed now and
 * then) or random small coefficients. */
static void gen_form(form2 *f, const nest2 *ns) {
    memset(f, 0, sizeof *f);
    int vars[NV2], nvar = 0;
    for (int v = 0; v < NV2; v++)
        if (ns->ext[v]) vars[nvar++] = v;
    if (clean2 || pick(3)) { /* structured */
        atom2 at[8];
        int na = 0;
        for (int i = 0; i < nvar && na < 6; i++) {
            int v = vars[i];
            if (!clean2 && pick(5) == 0) continue; /* dropped: many points per element */
            int s = pick(4);
            int d = pick_div(), m = pick_div();
            if (s == 0 || ns->ext[v] == 1) at[na++] = (atom2){v, 0, 1, 1};
            else if (s == 1) at[na++] = (atom2){v, 2, 1, d}, at[na++] = (atom2){v, 1, d, 1};
            else if (s == 2)
                at[na++] = (atom2){v, 2, 1, d}, at[na++] = (atom2){v, 3, d, m},
                at[na++] = (atom2){v, 1, d * m, 1};
            else at[na++] = (atom2){v, 1, d, 1}, at[na++] = (atom2){v, 2, 1, d};
        }
        for (int i = na - 1; i > 0; i--) { /* shuffle */
            int j = pick(i + 1);
            atom2 t = at[i];
            at[i] = at[j], at[j] = t;
        }
        int64_t stride = 1;
        for (int i = 0; i < na; i++) {
            int64_t mn, mx;
            atom_range(&at[i], ns->lo[at[i].var], ns->ext[at[i].var], &mn, &mx);
            f->a[f->n] = at[i];
            int64_t c = stride;
            if (!clean2 && pick(8) == 0) c += pick(3) - 1; /* a near miss */
            if (pick(10) == 0) c = -c;
            f->c[f->n++] = c;
            stride = stride * (mx - mn + 1);
            if (!clean2 && pick(6) == 0) stride += pick(3);
        }
        f->k = pick(3);
        return;
    }
    int na = 1 + pick(4);
    for (int i = 0; i < na && nvar; i++) {
        atom2 a = {vars[pick(nvar)], pick(4), pick_div(), pick_div()};
        if (pick(2)) a.kind = 0;
        f->a[f->n] = a;
        f->c[f->n++] = pick(4) == 0 ? -(1 + pick(3)) : pick(10);
    }
    f->k = pick(4);
}

/* min / max of f over the points of ns (n: the value of a symbolic j). */
static void form_bounds(const form2 *f, const nest2 *ns, int64_t *mn, int64_t *mx) {
    *mn = INT64_MAX, *mx = INT64_MIN;
    int64_t v[NV2];
    int e[NV2];
    for (int i = 0; i < NV2; i++) e[i] = ns->ext[i] ? ns->ext[i] : 1;
    for (int p0 = 0; p0 < e[0]; p0++)
        for (int p1 = 0; p1 < e[1]; p1++)
            for (int p2 = 0; p2 < e[2]; p2++)
                for (int p3 = 0; p3 < e[3]; p3++)
                    for (int p4 = 0; p4 < e[4]; p4++) {
                        int p[NV2] = {p0, p1, p2, p3, p4};
                        for (int i = 0; i < NV2; i++) v[i] = ns->lo[i] + p[i];
                        int64_t x = form_val(f, v);
                        if (x < *mn) *mn = x;
                        if (x > *mx) *mx = x;
                    }
}

typedef struct draw2 {
    int nw, nr, nbuf, nsym, nbsym; /* A, C, B elements; the runtime n and nb */
    int rmw, readers;
    int lw, lr; /* Ramp lanes of the writer's and the reader's B index (1: scalar) */
    bool same; /* the reader in the writer's nest: threads communicate within it */
} draw2;

/* The loop nest text of ns at indent 4, its statements at *ind. */
static int print_nest(const nest2 *ns, bool symj, bool symb, bool launch, char *o, size_t n,
                      int *ind) {
    static const char *const tag[NV2] = {"blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y",
                                         NULL};
    int w = 0, in = launch ? 4 : *ind;
    for (int v = launch ? 0 : 2; v < NV2; v++) {
        if (!ns->ext[v]) continue;
        if (v == V_J) {
            if (symj) w += snprintf(o + w, n - (size_t)w, "%*sfor j in T.serial(n):\n", in, "");
            else
                w += snprintf(o + w, n - (size_t)w, "%*sfor j in T.serial(%d, %d):\n", in, "",
                              ns->lo[v], ns->lo[v] + ns->ext[v]);
        } else if (v == V_B && symb) {
            w += snprintf(o + w, n - (size_t)w,
                          "%*sfor b in T.thread_binding(0, nb, thread=\"blockIdx.x\"):\n", in, "");
        } else {
            w += snprintf(o + w, n - (size_t)w, "%*sfor %s in T.thread_binding(0, %d, thread=\"%s\"):\n",
                          in, "", vname2[v], ns->ext[v], tag[v]);
        }
        in += 4;
    }
    *ind = in;
    return w;
}

/* The linear point id of ns: sum (v - lo) * stride, j innermost. */
static int print_id(const nest2 *ns, bool symj, char *o, size_t n) {
    int w = snprintf(o, n, "0");
    for (int v = 0; v < NV2; v++) {
        if (!ns->ext[v]) continue;
        int64_t st = 1;
        for (int u = v + 1; u < NV2; u++)
            if (ns->ext[u] && !(u == V_J && symj)) st *= ns->ext[u];
        bool symst = symj && v != V_J && ns->ext[V_J];
        w += snprintf(o + w, n - (size_t)w, " + (%s - %d) * %lld%s", vname2[v], ns->lo[v],
                      (long long)st, symst ? " * n" : "");
    }
    return w;
}

static void make2(draw2 *d, char *src, size_t n) {
    memset(d, 0, sizeof *d);
    clean2 = pick(3) == 0;
    nest2 wn = {0}, rn;
    wn.ext[V_B] = 1 + pick(3);
    if (pick(4) == 0) wn.ext[V_BY] = 1 + pick(2);
    static const int tx[] = {1, 2, 4, 6, 8, 12, 16, 32, 64};
    wn.ext[V_T] = tx[pick(9)];
    if (pick(4) == 0) wn.ext[V_TY] = 1 + pick(3);
    if (pick(4)) wn.ext[V_J] = 1 + pick(4), wn.lo[V_J] = pick(3) ? 0 : -pick(4);
    rn = wn;
    if (rn.ext[V_J] || pick(3) == 0) rn.ext[V_J] = 1 + pick(3), rn.lo[V_J] = pick(3) ? 0 : -pick(4);
    bool symj = wn.ext[V_J] && wn.lo[V_J] == 0 && pick(5) == 0;
    d->readers = pick(6) ? 1 : 0;
    bool same = d->readers && pick(4) == 0; /* read in the writer's nest */
    if (same) rn = wn;
    d->same = same;
    bool symb = pick(6) == 0;
    if (wn.ext[V_T] == 32 && pick(3) == 0) wn.lane = true, rn.lane = same || pick(2);
    d->nsym = wn.ext[V_J], d->nbsym = wn.ext[V_B];
    if (symj) rn.ext[V_J] = wn.ext[V_J], rn.lo[V_J] = 0;
    /* B's dimensions: 1, 2, or merged (e // c, e % c) on the writer or the reader */
    int mode = pick(4); /* 0: 1-D, 1: 2-D, 2: merged on one side, 3: merged both */
    form2 fw[2], fr[2];
    int64_t size[2];
    int nd = mode == 0 ? 1 : 2;
    int cc = 1 + pick(8);
    char iw[800], ir[800], guard_r[700] = "", guard_w[700] = "";
    static const int strides[] = {1, 2, -1, 3, 0, 1};
    int sw_ = strides[pick(6)], sr_ = strides[pick(6)];
    d->lw = d->lr = 1;
    if (mode == 0 && pick(3) == 0) d->lw = 2 << pick(2);
    if (mode == 0 && pick(3) == 0) d->lr = 2 << pick(2);
    bool cw = pick(6) == 0, cr = pick(6) == 0; /* int64 indices */
    if (mode <= 1) {
        for (int k = 0; k < nd; k++) {
            gen_form(&fw[k], &wn);
            if (clean2 ? pick(3) != 0 : pick(3) == 0) fr[k] = fw[k];
            else gen_form(&fr[k], &rn);
            int64_t a0, a1, b0, b1;
            form_bounds(&fw[k], &wn, &a0, &a1);
            form_bounds(&fr[k], &rn, &b0, &b1);
            if (nd == 1) { /* lanes: the start's range widened by (lanes - 1) strides */
                int64_t sw = sw_, sr = sr_;
                a0 += sw * (d->lw - 1) < 0 ? sw * (d->lw - 1) : 0;
                a1 += sw * (d->lw - 1) > 0 ? sw * (d->lw - 1) : 0;
                b0 += sr * (d->lr - 1) < 0 ? sr * (d->lr - 1) : 0;
                b1 += sr * (d->lr - 1) > 0 ? sr * (d->lr - 1) : 0;
            }
            int64_t lo = a0 < b0 ? a0 : b0, hi = a1 > b1 ? a1 : b1;
            fw[k].k -= lo, fr[k].k -= lo;
            size[k] = hi - lo + 1;
        }
        int w = 0, q = 0;
        for (int k = 0; k < nd; k++) {
            char fa[400], fb[400];
            print_form(&fw[k], &wn, fa, sizeof fa);
            print_form(&fr[k], &rn, fb, sizeof fb);
            w += snprintf(iw + w, sizeof iw - (size_t)w, k ? ", " : "");
            q += snprintf(ir + q, sizeof ir - (size_t)q, k ? ", " : "");
            char ca[440], cb[440];
            if (cw) snprintf(ca, sizeof ca, "T.Cast(\"int64\", %s)", fa);
            else snprintf(ca, sizeof ca, "%s", fa);
            if (cr) snprintf(cb, sizeof cb, "T.Cast(\"int64\", %s)", fb);
            else snprintf(cb, sizeof cb, "%s", fb);
            if (d->lw > 1)
                w += snprintf(iw + w, sizeof iw - (size_t)w, "T.Ramp(%s, %s, %d)", ca,
                              cw ? (sw_ == 1 ? "T.int64(1)" : sw_ == 2 ? "T.int64(2)" : sw_ == -1 ? "T.int64(-1)" : sw_ == 3 ? "T.int64(3)" : "T.int64(0)")
                                 : (sw_ == 1 ? "1" : sw_ == 2 ? "2" : sw_ == -1 ? "-1" : sw_ == 3 ? "3" : "0"),
                              d->lw);
            else w += snprintf(iw + w, sizeof iw - (size_t)w, "%s", ca);
            if (d->lr > 1)
                q += snprintf(ir + q, sizeof ir - (size_t)q, "T.Ramp(%s, %s, %d)", cb,
                              cr ? (sr_ == 1 ? "T.int64(1)" : sr_ == 2 ? "T.int64(2)" : sr_ == -1 ? "T.int64(-1)" : sr_ == 3 ? "T.int64(3)" : "T.int64(0)")
                                 : (sr_ == 1 ? "1" : sr_ == 2 ? "2" : sr_ == -1 ? "-1" : sr_ == 3 ? "3" : "0"),
                              d->lr);
            else q += snprintf(ir + q, sizeof ir - (size_t)q, "%s", cb);
        }
    } else {
        /* e on the writer (or on the reader when swapped) */
        bool swap = pick(2);
        const nest2 *pn = swap ? &rn : &wn, *on = swap ? &wn : &rn;
        form2 e, e2, x, y;
        gen_form(&e, pn);
        int64_t lo, hi;
        form_bounds(&e, pn, &lo, &hi);
        e.k -= lo - pick(3), hi -= lo - pick(3);
        form_bounds(&e, pn, &lo, &hi);
        char pe[300], ps[700], os[700];
        print_form(&e, pn, pe, sizeof pe);
        snprintf(ps, sizeof ps, "(%s) // %d, (%s) %% %d", pe, cc, pe, cc);
        int64_t rows = hi / cc + 1;
        if (mode == 3) {
            bool ok = true;
            for (int i = 0; i < e.n; i++) ok &= on->ext[e.a[i].var] != 0;
            if (ok && (clean2 ? pick(3) != 0 : pick(3) == 0)) e2 = e;
            else gen_form(&e2, on);
            int64_t l2, h2;
            form_bounds(&e2, on, &l2, &h2);
            e2.k -= l2, h2 -= l2;
            if (h2 / cc + 1 > rows) rows = h2 / cc + 1;
            char p2[300];
            print_form(&e2, on, p2, sizeof p2);
            snprintf(os, sizeof os, "(%s) // %d, (%s) %% %d", p2, cc, p2, cc);
        } else {
            gen_form(&x, on);
            if (pick(2)) { /* y = v % cc for some variable, or a small form */
                memset(&y, 0, sizeof y);
                y.n = 1, y.c[0] = 1, y.a[0] = (atom2){V_T, 2, 1, cc};
            } else {
                gen_form(&y, on);
            }
            int64_t xl, xh, yl, yh;
            form_bounds(&x, on, &xl, &xh);
            x.k -= xl, xh -= xl;
            form_bounds(&y, on, &yl, &yh);
            if (xh + 1 > rows) rows = xh + 1;
            char px[300], py[300];
            print_form(&x, on, px, sizeof px);
            print_form(&y, on, py, sizeof py);
            snprintf(os, sizeof os, "%s, %s", px, py);
            if (yl < 0 || yh >= cc) /* guarded: only the elements of B */
                snprintf(guard_r, sizeof guard_r, "0 <= %s and %s < %d", py, py, cc);
        }
        size[0] = rows, size[1] = cc;
        snprintf(iw, sizeof iw, "%s", swap ? os : ps);
        snprintf(ir, sizeof ir, "%s", swap ? ps : os);
        if (swap && guard_r[0]) snprintf(guard_w, sizeof guard_w, "%s", guard_r), guard_r[0] = 0;
    }
    const char *gw = guard_w[0] ? guard_w : NULL, *gr = guard_r[0] ? guard_r : NULL;
    int64_t nbuf = nd == 1 ? size[0] : size[0] * size[1];
    d->nbuf = (int)nbuf;
    int64_t nw = 1, nr = 1;
    for (int v = 0; v < NV2; v++) {
        if (wn.ext[v]) nw *= wn.ext[v];
        if (rn.ext[v]) nr *= rn.ext[v];
    }
    d->nw = (int)nw, d->nr = (int)nr;
    d->rmw = pick(3) == 0;
    char shape[64], idw[400], idr[400];
    if (nd == 1) snprintf(shape, sizeof shape, "(%lld,)", (long long)size[0]);
    else snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)size[0], (long long)size[1]);
    print_id(&wn, symj, idw, sizeof idw);
    print_id(same ? &wn : &rn, symj, idr, sizeof idr);
    int w = snprintf(src, n,
                     "@T.prim_func\n"
                     "def gs(A: T.Buffer((%d,), \"float32\"), B: T.Buffer(%s, \"float32\"),\n"
                     "       C: T.Buffer((%d,), \"float32\"), n: T.int32, nb: T.int32):\n",
                     d->nw, shape, (same ? d->nw : d->nr) * d->lr);
    int ind = 0;
    /* the block loops hold the writer's thread loops, then the reader's */
    w += print_nest(&wn, symj, symb, true, src + w, n - (size_t)w, &ind);
    char body[4096];
    if (d->lw > 1 && d->rmw)
        snprintf(body, sizeof body, "B[%s] = B[%s] + T.Broadcast(A[%s], %d)", iw, iw, idw, d->lw);
    else if (d->lw > 1)
        snprintf(body, sizeof body, "B[%s] = T.Broadcast(A[%s] + T.float32(1), %d)", iw, idw, d->lw);
    else if (d->rmw) snprintf(body, sizeof body, "B[%s] = B[%s] + A[%s]", iw, iw, idw);
    else snprintf(body, sizeof body, "B[%s] = A[%s] + T.float32(1)", iw, idw);
    if (gw) {
        w += snprintf(src + w, n - (size_t)w, "%*sif %s:\n", ind, "", gw);
        w += snprintf(src + w, n - (size_t)w, "%*s%s\n", ind + 4, "", body);
    } else {
        w += snprintf(src + w, n - (size_t)w, "%*s%s\n", ind, "", body);
    }
    if (d->readers) {
        int rind = ind;
        char rb[4096];
        if (d->lr > 1)
            snprintf(rb, sizeof rb, "C[T.Ramp((%s) * %d, 1, %d)] = B[%s]", idr, d->lr, d->lr, ir);
        else snprintf(rb, sizeof rb, "C[%s] = B[%s]", idr, ir);
        if (!same) { /* the reader's thread loops under the block loops */
            rind = 4 + 4 * (wn.ext[V_B] > 0) + 4 * (wn.ext[V_BY] > 0);
            w += print_nest(&rn, symj, symb, false, src + w, n - (size_t)w, &rind);
        }
        if (gr) {
            w += snprintf(src + w, n - (size_t)w, "%*sif %s:\n", rind, "", gr);
            w += snprintf(src + w, n - (size_t)w, "%*s%s\n", rind + 4, "", rb);
        } else {
            w += snprintf(src + w, n - (size_t)w, "%*s%s\n", rind, "", rb);
        }
    }
}

static void one_case2(uint64_t seed, long c, tally *t) {
    fuzz_seed_case(seed, c);
    draw2 d;
    static char src[16384], ref[16384];
    make2(&d, src, sizeof src);
    /* the interpreter has no lane_id(): there it is t (blockDim.x 32) */
    const char *p = src;
    char *q = ref;
    while (*p)
        if (!strncmp(p, "T.lane_id()", 11)) *q++ = 't', p += 11;
        else *q++ = *p++;
    *q = 0;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = NULL, *fr = NULL, *k = NULL;
    if (tir_parse_func(ctx, src, strlen(src), &f) != TIR_OK ||
        tir_parse_func(ctx, ref, strlen(ref), &fr) != TIR_OK)
        fail_msg("case %ld: parse: %s\n%s", c, tir_ctx_error(ctx), src);
    t->cases++;
    if (tir_lower(ctx, f, NULL, &k) != TIR_OK) {
        const char *e = tir_ctx_error(ctx);
        /* C[.. n * t + j] (a symbolic stride) is C's race_check's too */
        if (!strstr(e, "race_check: global buffer") && !strstr(e, "gpu_check"))
            fail_msg("case %ld: unexpected refusal: %s\n%s", c, e, src);
        if (strstr(e, "different thread blocks")) t->refused_cross++;
        else t->refused_other++;
        tir_ctx_destroy(ctx);
        return;
    }
    t->lowered++;
    bool bar = count_syncs(tir_print(ctx, k)) > 0;
    t->barriers += bar;
    int nc = (d.nr > d.nw ? d.nr : d.nw) * d.lr;
    float *a = malloc(sizeof(float) * (size_t)d.nw), *b[2], *o[2];
    for (int i = 0; i < 2; i++) {
        b[i] = malloc(sizeof(float) * (size_t)d.nbuf), o[i] = malloc(sizeof(float) * (size_t)nc);
        for (int e = 0; e < d.nbuf; e++) b[i][e] = (float)(-e - 1);
        for (int e = 0; e < nc; e++) o[i][e] = 7.0f;
    }
    for (int e = 0; e < d.nw; e++) a[e] = (float)(e * 3 % 17);
    tir_arg ra[5] = {{.data = a}, {.data = b[0]}, {.data = o[0]}, {.scalar = d.nsym},
                     {.scalar = d.nbsym}};
    tir_arg sa[5] = {{.data = a}, {.data = b[1]}, {.data = o[1]}, {.scalar = d.nsym},
                     {.scalar = d.nbsym}};
    if (tir_interp_run(ctx, fr, 5, ra, NULL) != TIR_OK)
        fail_msg("case %ld: interpreter: %s\n%s", c, tir_ctx_error(ctx), ref);
    tir_sim_opts so = {.check_uninit = true, .check_global_races = true};
    if (tir_sim_run(ctx, k, 5, sa, &so, NULL) != TIR_OK)
        fail_msg("case %ld: accepted, but the simulator: %s\n%s\nlowered:\n%s", c,
                 tir_ctx_error(ctx), src, tir_print(ctx, k));
    if (!(d.same && bar) && (memcmp(b[0], b[1], sizeof(float) * (size_t)d.nbuf) ||
                             memcmp(o[0], o[1], sizeof(float) * (size_t)nc)))
        fail_msg("case %ld: simulator and interpreter differ\n%s\nlowered:\n%s", c, src,
                 tir_print(ctx, k));
    free(a);
    for (int i = 0; i < 2; i++) free(b[i]), free(o[i]);
    tir_ctx_destroy(ctx);
}

/* MINITIR_FUZZ_CASES cases (default 300) of one generator from
 * MINITIR_FUZZ_SEED (default 17), with its tally line. */
static void run_cases(void (*one)(uint64_t, long, tally *), const char *name) {
    const char *e = getenv("MINITIR_FUZZ_CASES");
    const char *sd = getenv("MINITIR_FUZZ_SEED");
    long cases = e ? atol(e) : 300;
    uint64_t seed = sd ? strtoull(sd, NULL, 10) : 17;
    tally t = {0};
    for (long c = 0; c < cases; c++) one(seed, c, &t);
    printf("# %s%d cases from seed %llu: %d lowered (%d with a barrier), %d refused across "
           "blocks, %d refused otherwise\n",
           name, t.cases, (unsigned long long)seed, t.lowered, t.barriers, t.refused_cross,
           t.refused_other);
    assert_true(t.lowered > 0 && t.barriers > 0 && t.refused_cross > 0);
}

static void test_global_share_vs_simulator(void **state) {
    (void)state;
    run_cases(one_case, "");
}

/* The second generator's cases. */
static void test_global_share_digits_vs_simulator(void **state) {
    (void)state;
    run_cases(one_case2, "digits: ");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_global_share_vs_simulator),
        cmocka_unit_test(test_global_share_digits_vs_simulator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
