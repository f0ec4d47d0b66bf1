/* test_copy_fuzz.c: random hand-written kernels that fill a shared buffer
 * with T.cp_async copies and read it back ("copy spans"), lowered and run
 * in the SIMT simulator against a direct computation and the interpreter.
 *
 * A copy through an address covers bytes / element size elements from it,
 * and every pass that counts a buffer's elements from indices must count
 * them all (lower_span_operand: compact_alloc's sizes, thread_sync's
 * barriers; gpu_check refuses a malformed copy).  No other fuzzer writes
 * such copies by hand (the passes' own come after compact_alloc).  Each
 * case draws, under one blockIdx loop of 1-2 blocks:
 *   - a shared S, 1-D or 2-D, of a random element type (int8 ... float64),
 *     often larger than the copies need, with a prefix below them;
 *   - a copy loop: each thread (maybe only the first k: a guard) issues
 *     1-3 copies of 4, 8 or 16 bytes (what the types allow) from A (of the
 *     same type, or another integer type: bytes are bytes) at affine,
 *     thread-dependent offsets, now and then reversed in the thread, as a
 *     T.Ramp, with a zero-filling src_bytes; commit and wait once, per
 *     copy, at the start of the reader loop, or (mistakes) not at all,
 *     wait(1), no commit; thread p may store one element of S besides; a
 *     thread may read its own copies after its wait;
 *   - a reader loop: each thread reads elements other threads copied (an
 *     index over the copied elements, rotated), only those past each
 *     copy's first, only those past the first of the last copy (beyond
 *     every copy's first element: only the span makes the dependence), the
 *     stored element, or any affine index; an ldmatrix loop (16- and
 *     32-bit types, one warp; x1, x2, x4, .trans; some of L's registers
 *     read) over 16-byte rows the copies filled;
 *   - sometimes a second round of copies into S (after the reads: a
 *     barrier must come before them) and a second reader.
 * Mistakes come from the same draws: overlapping copies (a race), offsets
 * that misalign a copy or an ldmatrix row, S a few elements short, reads
 * of elements nothing wrote or of copies still in flight, sizes and
 * src_bytes the intrinsic does not take.
 *
 * The direct computation (`model`) runs the draw on bytes and classifies
 * it.  A well-formed, race-free case must lower, run in the simulator
 * (shared races, uninitialised reads and global races checked) and equal
 * the computation bit for bit, and so must the interpreter on the
 * unlowered function where it can run it (it has no ldmatrix).  A race must
 * be refused; a malformed copy refused by gpu_check; a case that fails at
 * run time (misaligned, out of bounds, unwritten, in flight) refused or
 * failing in the simulator too (and in the interpreter where it says so).
 * compact_alloc may refuse a copy whose span may pass its row over the
 * loops' ranges.  An index outside its dimension but inside S is the
 * interpreter's to report: lowering may take it, and then nothing is
 * checked.  A refusal must be a clean status with a message, never an
 * internal error.
 * MINITIR_FUZZ_CASES=N (or argv[1]) runs N cases (default 1000),
 * MINITIR_FUZZ_SEED picks the seed (default 23); CF_VERBOSE=1 prints each
 * refusal and run-time failure, CF_SHOW=N prints case N's text,
 * CF_KEEP_GOING=1 counts failed cases instead of stopping at the first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz_args.h"
#include "fuzz_xorshift.h"
#include "minitir/lower.h"
#include "minitir/sim.h"

/* ------------------------------------------------ element types */

enum { K_INT, K_UINT, K_F16, K_BF16, K_F32, K_F64 };
typedef struct dtinfo {
    const char *name;
    int bytes, kind;
} dtinfo;
static const dtinfo dts[] = {
    {"int8", 1, K_INT},     {"uint8", 1, K_UINT},    {"int32", 4, K_INT},   {"int64", 8, K_INT},
    {"float16", 2, K_F16},  {"bfloat16", 2, K_BF16}, {"float32", 4, K_F32}, {"float64", 8, K_F64},
};
enum { NDT = sizeof dts / sizeof dts[0] };
static bool is_int(int dt) { return dts[dt].kind <= K_UINT; }

static uint16_t half_of(int64_t v) { /* exact for |v| < 2048 */
    if (v == 0) return 0;
    uint16_t s = v < 0 ? 0x8000 : 0;
    uint64_t m = (uint64_t)(v < 0 ? -v : v);
    int e = 0;
    while ((m >> (e + 1)) != 0) e++;
    return (uint16_t)(s | (uint16_t)((e + 15) << 10) | (uint16_t)(((m << 10) >> e) & 0x3ff));
}

/* v (a small integer) as an element of dt, little-endian, at p. */
static void put_val(int dt, int64_t v, uint8_t *p) {
    float f = (float)v;
    double g = (double)v;
    uint32_t u;
    uint16_t h;
    switch (dts[dt].kind) {
    case K_F16: h = half_of(v), memcpy(p, &h, 2); break;
    case K_BF16: memcpy(&u, &f, 4), h = (uint16_t)(u >> 16), memcpy(p, &h, 2); break;
    case K_F32: memcpy(p, &f, 4); break;
    case K_F64: memcpy(p, &g, 8); break;
    default: memcpy(p, &v, (size_t)dts[dt].bytes); /* the low bytes (a little-endian host) */
    }
}

/* ------------------------------------------------ the draw */

/* Group modes of a copy loop: where commit and wait go (GM_WAIT_READER:
 * the wait begins the reader loop, whose reads of other threads' copies
 * then need a barrier after it).  The last three are mistakes: copies
 * still in flight when read. */
enum { GM_END, GM_EACH, GM_EACH_WAIT, GM_WAIT_READER, GM_NO_WAIT, GM_WAIT1, GM_NO_COMMIT };
/* What a reader loop reads: the copied elements (rotated), only those
 * past each copy's first, only those past the first of the copy furthest
 * into S (outside the range of the copies' first elements: a pass counting
 * one element per copy sees no dependence), the stored element, an
 * arbitrary affine index. */
enum { RD_SLOTS, RD_TAIL, RD_LAST, RD_STORED, RD_AFFINE };

typedef struct form {
    int k0, kt, kj; /* k0 + t * kt + j * kj */
} form;

typedef struct reader {
    int kind, r, k2, rot; /* r reads per thread, threads below k2 read */
    form raw_r, raw_c;    /* RD_AFFINE: row and column in (tx, i) */
} reader;

typedef struct draw {
    int dt, st;                   /* S's (O's) element type, A's */
    int bytes, sb, n, ns;         /* copy size, src_bytes (-1: none), elements of S, of A */
    bool malformed;               /* a size or src_bytes gpu_check refuses */
    int nb, nt, nj, k;            /* blocks, threads, copies per thread, copying threads */
    bool two_d, ramp_d, ramp_s;   /* S 2-D; Ramp operands */
    int rows, cols;               /* S (rows 1 when 1-D) */
    form dr, dc, src;             /* destination row and column (flat when 1-D), source */
    bool rev;                     /* the source indexed by nt - 1 - tx */
    int pb, na;                   /* A's elements per block, in all */
    int mode[2], shift2;          /* group modes; round 2's source shift */
    bool round2, own_read, guard_span;
    int store_t, store_r, store_c, store_v; /* thread p's store (store_t < 0: none) */
    reader rd[2];
    bool ldm;
    int trans, num, lrot, chunk_n, nchunk, cgroups; /* cgroups 0: a chunk is one copy */
    int lread;                    /* registers of L read (the others written only) */
    bool ldm_span;                /* a lane's row passes S's row (maybe a lane whose row
                                   * ldmatrix does not read): compact_alloc may refuse */
    int opb, off_own, off_rd[2], off_ldm, no;
} draw;

static int form_at(const form *f, int t, int j) { return f->k0 + t * f->kt + j * f->kj; }

static const int widths[] = {4, 8, 16};

/* A copy size both element types take, or (a mistake) one gpu_check refuses. */
static void draw_size(draw *d) {
    int eb = dts[d->dt].bytes, es = dts[d->st].bytes, ok[3], nok = 0;
    for (int i = 0; i < 3; i++)
        if (widths[i] % eb == 0 && widths[i] % es == 0) ok[nok++] = widths[i];
    d->bytes = ok[pick(nok)];
    if (d->bytes < 16 && pick(3) == 0 && 16 % eb == 0 && 16 % es == 0) d->bytes = 16;
    d->sb = pick(4) == 0 ? es * pick(d->bytes / es + 1) : -1;
    if (pick(25) == 0) {
        static const int bad[] = {2, 6, 12, 32};
        d->malformed = true;
        switch (pick(3)) {
        case 0: d->bytes = bad[pick(4)]; break;
        case 1: d->sb = d->bytes + es; break;
        default:
            if (es > 1) d->sb = es + 1;
            else if (eb == 8) d->bytes = 4;
            else d->bytes = 6;
        }
    }
    d->n = d->bytes / eb > 0 ? d->bytes / eb : 1;
    d->ns = d->bytes / es > 0 ? d->bytes / es : 1;
}

/* The destination's column (flat) form: dense by thread or by copy,
 * gapped, or random multiples of n (overlaps: races). */
static form draw_dst_col(const draw *d) {
    int n = d->n;
    form f = {n * pick(4), 0, 0};
    int w = pick(d->two_d ? 10 : 20); /* dense 35 %, by copy 25 %, gapped 25 %, any 15 % */
    if (w < 7) f.kt = d->two_d ? 0 : d->nj * n, f.kj = n;
    else if (w < 12) f.kt = n, f.kj = d->nt * n;
    else if (w < 17) f.kt = d->nj * n + n * pick(3), f.kj = n * (1 + pick(2));
    else f.kt = n * pick(4), f.kj = n * pick(4);
    if (d->two_d && pick(4) == 0) f.kt = n * pick(3);
    if (pick(30) == 0 && n > 1) f.k0 += 1 + pick(n - 1); /* misaligned */
    return f;
}

static void draw_source(draw *d) {
    int ns = d->ns;
    d->rev = pick(4) == 0;
    d->src = (form){ns * pick(3), d->nj * ns, ns};
    if (pick(3) == 0) d->src.kt = ns * pick(3), d->src.kj = ns * pick(3);
    if (pick(30) == 0 && ns > 1) d->src.k0 += 1 + pick(ns - 1); /* misaligned */
    d->shift2 = ns * (1 + pick(4));
    int mx = 0;
    for (int t = 0; t < d->nt; t++)
        for (int j = 0; j < d->nj; j++)
            if (form_at(&d->src, t, j) > mx) mx = form_at(&d->src, t, j);
    d->pb = (mx + d->shift2 + ns + ns - 1) / ns * ns;
    d->na = d->nb * d->pb;
}

/* The largest row and column any thread below `threads` copies to. */
static void dst_max(const draw *d, int threads, int *mr, int *mc) {
    *mr = *mc = 0;
    for (int t = 0; t < threads; t++)
        for (int j = 0; j < d->nj; j++) {
            if (form_at(&d->dr, t, j) > *mr) *mr = form_at(&d->dr, t, j);
            if (form_at(&d->dc, t, j) > *mc) *mc = form_at(&d->dc, t, j);
        }
}

/* S's shape: what the copies need (of the threads that copy, or of all:
 * compact_alloc's bound is over the loops, not the guard), often more, now
 * and then (a mistake) a few elements short. */
static void draw_shape(draw *d) {
    int mr, mc, n = d->n;
    dst_max(d, pick(2) ? d->k : d->nt, &mr, &mc);
    d->rows = d->two_d ? mr + 1 + pick(3) : 1;
    d->cols = mc + n + (pick(3) == 0 ? 0 : pick(12));
    if (d->two_d && pick(20)) d->cols = (d->cols + n - 1) / n * n;
    if (pick(15) == 0 && mc + n > 1) d->cols = mc + n - 1 - pick(n < mc + n - 1 ? n : mc + n - 1);
    if (d->cols < 1) d->cols = 1;
    int ma, mra;
    dst_max(d, d->nt, &mra, &ma);
    /* the guarded threads' copies fit, the loops' bound passes the row:
     * compact_alloc's refusal */
    if (!d->two_d && d->k < d->nt && n > 1 && pick(3) == 0 && ma + n - 1 >= mc + n)
        d->cols = ma + 1 + pick(n - 1) > mc + n ? ma + 1 + pick(n - 1) : mc + n;
    d->guard_span = ma + n > d->cols || mra >= d->rows; /* compact_alloc may refuse */
}

/* The destination and S, within 32 KB of shared memory (check_kernel
 * refuses more than a block has): redrawn until it fits, 1-D and dense at
 * last. */
static void draw_dest(draw *d) {
    for (int tries = 0; tries < 8; tries++) {
        d->two_d = pick(3) == 0;
        d->dr = d->two_d ? (form){pick(2), pick(8) == 0 ? 0 : 1 + pick(2), pick(3) == 0}
                         : (form){0, 0, 0};
        d->dc = draw_dst_col(d);
        draw_shape(d);
        if (d->rows * d->cols * dts[d->dt].bytes <= 32768) return;
    }
    d->two_d = false, d->dr = (form){0, 0, 0}, d->dc = (form){0, d->nj * d->n, d->n};
    draw_shape(d);
}

/* Thread p stores one element, where no copy lands when there is one. */
static void draw_store(draw *d) {
    d->store_t = -1;
    if (pick(3)) return;
    int size = d->rows * d->cols;
    bool *hit = calloc((size_t)size, 1);
    for (int t = 0; t < d->k; t++)
        for (int j = 0; j < d->nj; j++)
            for (int e = 0; e < d->n; e++) {
                int f = form_at(&d->dr, t, j) * d->cols + form_at(&d->dc, t, j) + e;
                if (f >= 0 && f < size) hit[f] = true;
            }
    int at = pick(size);
    for (int i = 0; i < size && pick(10) && hit[at]; i++) at = (at + 1) % size;
    free(hit);
    d->store_t = pick(d->nt), d->store_r = at / d->cols, d->store_c = at % d->cols;
    d->store_v = 100 + pick(20);
}

/* The copy (of a thread that copies) that starts furthest into S. */
static void last_slot(const draw *d, int *lt, int *lj) {
    int best = -1;
    for (int t = 0; t < d->k; t++)
        for (int j = 0; j < d->nj; j++) {
            int f = form_at(&d->dr, t, j) * d->cols + form_at(&d->dc, t, j);
            if (f > best) best = f, *lt = t, *lj = j;
        }
}

static void draw_reader(draw *d, reader *r) {
    int w = pick(20);
    r->kind = w < 9 ? RD_SLOTS : w < 13 ? RD_TAIL : w < 17 ? RD_LAST
            : w < 19 ? (d->store_t >= 0 ? RD_STORED : RD_SLOTS) : RD_AFFINE;
    if ((r->kind == RD_TAIL || r->kind == RD_LAST) && d->n == 1) r->kind = RD_SLOTS;
    r->r = 1 + pick(4);
    r->k2 = pick(3) == 0 ? 1 + pick(d->nt) : d->nt;
    r->rot = pick(d->k * d->nj * d->n);
    r->raw_r = (form){pick(d->rows), pick(2), 0};
    r->raw_c = (form){pick(d->cols), pick(3), pick(3)};
}

/* ldmatrix rows: 16 bytes each, a copy of 16 bytes, or 16 bytes of a
 * thread's contiguous copies (kj == n). */
static void draw_ldm(draw *d) {
    int eb = dts[d->dt].bytes;
    d->chunk_n = 16 / eb;
    if (d->n * eb == 16) d->cgroups = 0, d->nchunk = d->k * d->nj;
    else if (d->dc.kj == d->n && d->nj * d->n * eb % 16 == 0)
        d->cgroups = d->nj * d->n * eb / 16, d->nchunk = d->k * d->cgroups;
    else return;
    d->ldm = true;
    d->num = 1 << pick(3);
    d->trans = eb == 2 ? pick(2) : pick(20) == 0; /* .trans of 32-bit rows: a mistake */
    d->lrot = pick(d->nchunk);
    int per = (eb == 4 ? 1 : 2) * d->num;
    d->lread = pick(3) == 0 ? 1 + pick(per) : per;
}

static void ldm_addr(const draw *d, int tid, int *r, int *col);

/* Whether some lane's row passes S's row. */
static bool ldm_passes_row(const draw *d) {
    for (int tid = 0; tid < d->nt; tid++) {
        int r, col;
        ldm_addr(d, tid, &r, &col);
        if (col + d->chunk_n > d->cols) return true;
    }
    return false;
}

static int draw_mode(void) {
    static const int bad[] = {GM_NO_WAIT, GM_WAIT1, GM_NO_COMMIT};
    return pick(8) == 0 ? bad[pick(3)] : pick(4);
}

static void draw_layout(draw *d) {
    d->off_own = 0;
    d->off_rd[0] = d->off_own + (d->own_read ? d->nt * d->n : 0);
    d->off_ldm = d->off_rd[0] + d->nt * d->rd[0].r;
    int per = d->ldm ? (dts[d->dt].bytes == 4 ? 1 : 2) * d->num : 0;
    d->off_rd[1] = d->off_ldm + d->nt * per;
    d->opb = d->off_rd[1] + (d->round2 ? d->nt * d->rd[1].r : 0);
    d->no = d->nb * d->opb;
}

static void draw_case(draw *d) {
    memset(d, 0, sizeof *d);
    d->dt = pick(NDT);
    d->st = is_int(d->dt) && pick(3) == 0 ? (int[]){0, 1, 2, 3}[pick(4)] : d->dt;
    bool want_ldm = (dts[d->dt].bytes == 2 || dts[d->dt].bytes == 4) && pick(2) == 0;
    draw_size(d);
    if (want_ldm && d->st == d->dt && !d->malformed && pick(2)) /* a row per copy */
        d->bytes = 16, d->n = 16 / dts[d->dt].bytes, d->ns = d->n;
    d->nb = 1 + pick(2), d->nj = 1 + pick(3);
    d->nt = want_ldm ? 32 : 1 + pick(40); /* lower_fragments: threadIdx.x is the lane */
    d->k = pick(3) == 0 ? 1 + pick(d->nt) : d->nt;
    d->ramp_d = d->n > 1 && pick(6) == 0, d->ramp_s = d->ns > 1 && pick(6) == 0;
    draw_source(d);
    draw_dest(d);
    draw_store(d);
    d->mode[0] = draw_mode(), d->mode[1] = pick(4);
    d->own_read = pick(3) == 0 && d->mode[0] != GM_WAIT_READER;
    draw_reader(d, &d->rd[0]);
    d->round2 = pick(3) == 0;
    draw_reader(d, &d->rd[1]);
    if (want_ldm) draw_ldm(d);
    d->ldm_span = d->ldm && ldm_passes_row(d);
    draw_layout(d);
}

/* ------------------------------------------------ the text */

typedef struct text {
    char *p;
    size_t n, len;
} text;

static void put(text *t, int indent, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = snprintf(t->p + t->len, t->n - t->len, "%*s", indent * 4, "");
    t->len += (size_t)w;
    w = vsnprintf(t->p + t->len, t->n - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)w;
    if (t->len >= t->n) fail_msg("copy_fuzz: text buffer too small");
}

static void form_str(const form *f, const char *t, const char *j, char *o, size_t n) {
    snprintf(o, n, "%d + %s * %d + %s * %d", f->k0, t, f->kt, j, f->kj);
}

/* S's index of copy (t, j), plus k (NULL: none), as a Ramp of `lanes`
 * when lanes > 1. */
static void dst_str(const draw *d, const char *t, const char *j, const char *k, int lanes,
                    char *o, size_t n) {
    char c[512], r[256], lz[16];
    form_str(&d->dc, t, j, c, sizeof c);
    if (k) snprintf(c + strlen(c), sizeof c - strlen(c), " + %s", k);
    snprintf(lz, sizeof lz, ", 1, %d)", lanes);
    form_str(&d->dr, t, j, r, sizeof r);
    snprintf(o, n, "%s%s%s%s%s", d->two_d ? r : "", d->two_d ? ", " : "",
             lanes > 1 ? "T.Ramp(" : "", c, lanes > 1 ? lz : "");
}

static void print_copy_loop(const draw *d, text *x, int round) {
    int m = d->mode[round];
    char dst[1024], src[512], sz[16], sb[32] = "";
    dst_str(d, "tx", "j", NULL, d->ramp_d ? d->n : 1, dst, sizeof dst);
    char tt[32], sf[256];
    snprintf(tt, sizeof tt, d->rev ? "(%d - 1 - tx)" : "tx", d->nt);
    form_str(&d->src, tt, "j", sf, sizeof sf);
    snprintf(sz, sizeof sz, ", 1, %d)", d->ns);
    snprintf(src, sizeof src, "%sbx * %d + %d + %s%s", d->ramp_s ? "T.Ramp(" : "", d->pb,
             round ? d->shift2 : 0, sf, d->ramp_s ? sz : "");
    if (d->sb >= 0) snprintf(sb, sizeof sb, ", %d", d->sb);
    put(x, 2, "for tx in T.thread_binding(0, %d, thread=\"threadIdx.x\"):\n", d->nt);
    if (round == 0 && d->store_t >= 0) {
        put(x, 3, "if tx == %d:\n", d->store_t);
        if (d->two_d)
            put(x, 4, "S[%d, %d] = T.%s(%d)\n", d->store_r, d->store_c, dts[d->dt].name,
                d->store_v);
        else put(x, 4, "S[%d] = T.%s(%d)\n", d->store_c, dts[d->dt].name, d->store_v);
    }
    put(x, 3, "for j in T.serial(%d):\n", d->nj);
    int in = 4;
    if (d->k < d->nt) put(x, 4, "if tx < %d:\n", d->k), in = 5;
    put(x, in, "T.cp_async(T.address_of(S[%s]), T.address_of(A[%s]), %d%s)\n", dst, src, d->bytes,
        sb);
    if (m == GM_EACH || m == GM_EACH_WAIT || m == GM_WAIT1) put(x, 4, "T.cp_async_commit()\n");
    if (m == GM_EACH_WAIT) put(x, 4, "T.cp_async_wait(0)\n");
    if (m == GM_END || m == GM_NO_WAIT || m == GM_WAIT_READER) put(x, 3, "T.cp_async_commit()\n");
    if (m == GM_END || m == GM_EACH || m == GM_NO_COMMIT) put(x, 3, "T.cp_async_wait(0)\n");
    if (m == GM_WAIT1) put(x, 3, "T.cp_async_wait(1)\n");
    if (round || !d->own_read) return;
    char last[16];
    snprintf(last, sizeof last, "%d", d->nj - 1);
    dst_str(d, "tx", last, "i", 1, dst, sizeof dst);
    put(x, 3, "if tx < %d:\n", d->k);
    put(x, 4, "for i in T.serial(%d):\n", d->n);
    put(x, 5, "O[bx * %d + %d + tx * %d + i] = S[%s]\n", d->opb, d->off_own, d->n, dst);
}

/* The S index reader r reads at (tx, i). */
static void reader_index(const draw *d, const reader *r, char *o, size_t n) {
    char q[128], t[160], j[160], k[160];
    int nw = d->k * d->nj * d->n;
    if (r->kind == RD_STORED) {
        if (d->two_d) snprintf(o, n, "%d, %d", d->store_r, d->store_c);
        else snprintf(o, n, "%d", d->store_c);
        return;
    }
    if (r->kind == RD_LAST) {
        int lt, lj;
        last_slot(d, &lt, &lj);
        snprintf(t, sizeof t, "%d", lt);
        snprintf(j, sizeof j, "%d", lj);
        snprintf(k, sizeof k, "1 + (tx * %d + i) %% %d", r->r, d->n - 1);
        dst_str(d, t, j, k, 1, o, n);
        return;
    }
    if (r->kind == RD_AFFINE) {
        char c[256];
        form_str(&r->raw_c, "tx", "i", c, sizeof c);
        if (d->two_d) snprintf(o, n, "%d + tx * %d, %s", r->raw_r.k0, r->raw_r.kt, c);
        else snprintf(o, n, "%s", c);
        return;
    }
    int per = r->kind == RD_TAIL ? d->n - 1 : d->n;
    snprintf(q, sizeof q, "(tx * %d + i + %d) %% %d", r->r, r->rot, nw / d->n * per);
    snprintf(t, sizeof t, "(%s // %d)", q, d->nj * per);
    snprintf(j, sizeof j, "(%s // %d %% %d)", q, per, d->nj);
    snprintf(k, sizeof k, "%s%s %% %d", r->kind == RD_TAIL ? "1 + " : "", q, per);
    dst_str(d, t, j, k, 1, o, n);
}

static void print_reader(const draw *d, text *x, int round) {
    const reader *r = &d->rd[round];
    char idx[1024];
    reader_index(d, r, idx, sizeof idx);
    put(x, 2, "for tx in T.thread_binding(0, %d, thread=\"threadIdx.x\"):\n", d->nt);
    if (d->mode[round] == GM_WAIT_READER) put(x, 3, "T.cp_async_wait(0)\n");
    int in = 3;
    if (r->k2 < d->nt) put(x, 3, "if tx < %d:\n", r->k2), in = 4;
    put(x, in, "for i in T.serial(%d):\n", r->r);
    put(x, in + 1, "O[bx * %d + %d + tx * %d + i] = S[%s]\n", d->opb, d->off_rd[round], r->r,
        idx);
}

/* Lane tx's ldmatrix row: chunk c of the copied rows. */
static void ldm_index(const draw *d, char *o, size_t n) {
    char c[128], t[160], j[160], k[200];
    snprintf(c, sizeof c, "(tx %% 32 + tx // 32 * 5 + %d) %% %d", d->lrot, d->nchunk);
    if (!d->cgroups) {
        snprintf(t, sizeof t, "(%s // %d)", c, d->nj);
        snprintf(j, sizeof j, "(%s %% %d)", c, d->nj);
        dst_str(d, t, j, NULL, 1, o, n);
        return;
    }
    snprintf(t, sizeof t, "(%s // %d)", c, d->cgroups);
    snprintf(k, sizeof k, "%s %% %d * %d", c, d->cgroups, d->chunk_n);
    dst_str(d, t, "0", k, 1, o, n);
}

static void print_ldm(const draw *d, text *x) {
    int per = (dts[d->dt].bytes == 4 ? 1 : 2) * d->num;
    char row[1024];
    ldm_index(d, row, sizeof row);
    put(x, 2, "for tx in T.thread_binding(0, %d, thread=\"threadIdx.x\"):\n", d->nt);
    put(x, 3, "L = T.allocate((%d,), \"%s\", scope=\"local\")\n", per, dts[d->dt].name);
    put(x, 3, "T.ldmatrix(%d, %d, T.address_of(L[0]), T.address_of(S[%s]))\n", d->trans, d->num,
        row);
    put(x, 3, "for i in T.serial(%d):\n", d->lread);
    put(x, 4, "O[bx * %d + %d + tx * %d + i] = L[i]\n", d->opb, d->off_ldm, per);
}

static void print_case(const draw *d, char *buf, size_t n) {
    text x = {buf, n, 0};
    char shape[64];
    if (d->two_d) snprintf(shape, sizeof shape, "(%d, %d)", d->rows, d->cols);
    else snprintf(shape, sizeof shape, "(%d,)", d->cols);
    put(&x, 0, "@T.prim_func\n");
    put(&x, 0, "def cpf(A: T.Buffer((%d,), \"%s\"), O: T.Buffer((%d,), \"%s\")):\n", d->na,
        dts[d->st].name, d->no, dts[d->dt].name);
    put(&x, 1, "for bx in T.thread_binding(0, %d, thread=\"blockIdx.x\"):\n", d->nb);
    put(&x, 2, "S = T.allocate(%s, \"%s\", scope=\"shared\")\n", shape, dts[d->dt].name);
    print_copy_loop(d, &x, 0);
    print_reader(d, &x, 0);
    if (d->ldm) print_ldm(d, &x);
    if (!d->round2) return;
    print_copy_loop(d, &x, 1);
    print_reader(d, &x, 1);
}

/* ------------------------------------------------ the direct computation */

/* What a case is: well-formed and race-free (only the result is checked),
 * or why not. */
enum {
    F_MALFORMED = 1, /* gpu_check must refuse */
    F_RACE = 2,      /* must be refused */
    F_INTERP = 4,    /* fails at run time in the interpreter too */
    F_RUNTIME = 8,   /* fails at run time (refused, or the simulator reports it) */
    F_UNDEF = 16,    /* no defined result (overlapping copies of one thread in flight) */
    F_ROWX = 32,     /* a copy across a row of S: compact_alloc may refuse it */
    F_FLAT = 64,     /* an index outside its dimension, inside S: the interpreter reports
                      * it; lowering may refuse it or not, the flattened kernel is not
                      * checked (a race there need not be refused either) */
};

typedef struct model {
    const draw *d;
    int size, eb;
    uint8_t *s, *a, *o;
    bool *w, *fl; /* element written; element's copy still in flight */
    int *wr;      /* this phase's writer: -1 none, a thread, -2 several */
    unsigned flags;
} model;

static void note_write(model *m, int e, int t, bool copy_again) {
    if (m->wr[e] >= 0 && m->wr[e] != t) m->flags |= F_RACE;
    if (m->wr[e] == t && copy_again) m->flags |= F_UNDEF;
    if (m->fl[e]) m->flags |= F_UNDEF;
    m->wr[e] = m->wr[e] == -1 || m->wr[e] == t ? t : -2;
}

/* Copy (t, j) of block bx in round `round`. */
static void model_copy(model *m, int bx, int round, int t, int j, bool in_flight) {
    const draw *d = m->d;
    int row = form_at(&d->dr, t, j), col = form_at(&d->dc, t, j);
    int flat = row * d->cols + col, es = dts[d->st].bytes;
    int sidx = bx * d->pb + (round ? d->shift2 : 0) + form_at(&d->src, d->rev ? d->nt - 1 - t : t, j);
    int sb = d->sb < 0 ? d->bytes : d->sb;
    if ((flat * m->eb) % d->bytes || (sidx * es) % d->bytes) {
        m->flags |= F_INTERP | F_RUNTIME;
        return;
    }
    if (flat + d->n > m->size) {
        m->flags |= F_INTERP | F_RUNTIME;
        return;
    }
    if (col >= d->cols) m->flags |= F_INTERP | F_FLAT;
    if (col + d->n > d->cols) m->flags |= F_ROWX;
    if (sidx + sb / es > d->na) fail_msg("copy_fuzz: the draw reads past A");
    uint8_t *p = m->s + (size_t)flat * (size_t)m->eb;
    memset(p, 0, (size_t)d->bytes);
    memcpy(p, m->a + (size_t)sidx * (size_t)es, (size_t)sb);
    bool again = d->mode[round] != GM_EACH_WAIT;
    for (int e = flat; e < flat + d->n; e++) {
        note_write(m, e, t, again && m->wr[e] == t);
        m->w[e] = true;
        m->fl[e] = in_flight;
    }
}

/* Whether copy j of a thread is still in flight after its loop. */
static bool left_in_flight(int mode, int j, int nj) {
    return mode == GM_NO_WAIT || mode == GM_NO_COMMIT || mode == GM_WAIT_READER ||
           (mode == GM_WAIT1 && j == nj - 1);
}

/* Reads S[row, col] into O[at]; flags what fails. */
static void model_read(model *m, int row, int col, int at) {
    const draw *d = m->d;
    int e = row * d->cols + col;
    if (e < 0 || e >= m->size) {
        m->flags |= F_INTERP | F_RUNTIME;
        return;
    }
    if (row < 0 || row >= d->rows || col < 0 || col >= d->cols) m->flags |= F_INTERP | F_FLAT;
    if (!m->w[e]) m->flags |= F_INTERP | F_RUNTIME;
    if (m->fl[e]) m->flags |= F_RUNTIME;
    memcpy(m->o + (size_t)at * (size_t)m->eb, m->s + (size_t)e * (size_t)m->eb, (size_t)m->eb);
}

static void model_own_read(model *m, int bx, int t) {
    const draw *d = m->d;
    if (!d->own_read || t >= d->k) return;
    for (int i = 0; i < d->n; i++) {
        int row = form_at(&d->dr, t, d->nj - 1), col = form_at(&d->dc, t, d->nj - 1) + i;
        if (row >= 0 && row < d->rows && col >= 0 && col < d->cols) {
            int e = row * d->cols + col;
            if (m->wr[e] != t && m->wr[e] != -1) m->flags |= F_RACE;
        }
        model_read(m, row, col, bx * d->opb + d->off_own + t * d->n + i);
    }
}

static void model_copy_loop(model *m, int bx, int round) {
    const draw *d = m->d;
    for (int e = 0; e < m->size; e++) m->wr[e] = -1;
    for (int t = 0; t < d->nt; t++) {
        if (round == 0 && t == d->store_t) {
            int e = d->store_r * d->cols + d->store_c;
            note_write(m, e, t, false);
            put_val(d->dt, d->store_v, m->s + (size_t)e * (size_t)m->eb);
            m->w[e] = true;
        }
        for (int j = 0; j < d->nj && t < d->k; j++)
            model_copy(m, bx, round, t, j, left_in_flight(d->mode[round], j, d->nj));
    }
    /* own reads after the wait: other threads' copies race with them */
    for (int t = 0; t < d->nt && round == 0; t++) model_own_read(m, bx, t);
}

static void model_reader(model *m, int bx, int round) {
    const draw *d = m->d;
    const reader *r = &d->rd[round];
    int nw = d->k * d->nj * d->n;
    if (d->mode[round] == GM_WAIT_READER || round == 1) /* every group waited for */
        memset(m->fl, 0, (size_t)m->size);
    for (int t = 0; t < r->k2; t++)
        for (int i = 0; i < r->r; i++) {
            int row = d->store_r, col = d->store_c, per = d->n - (r->kind == RD_TAIL);
            int q = (t * r->r + i + r->rot) % (nw / d->n * per);
            if (r->kind == RD_AFFINE)
                row = d->two_d ? form_at(&r->raw_r, t, 0) : 0, col = form_at(&r->raw_c, t, i);
            if (r->kind == RD_LAST) {
                int lt, lj;
                last_slot(d, &lt, &lj);
                row = form_at(&d->dr, lt, lj);
                col = form_at(&d->dc, lt, lj) + 1 + (t * r->r + i) % (d->n - 1);
            }
            if (r->kind == RD_SLOTS || r->kind == RD_TAIL) {
                int tt = q / (d->nj * per), jj = q / per % d->nj;
                row = form_at(&d->dr, tt, jj);
                col = form_at(&d->dc, tt, jj) + (r->kind == RD_TAIL) + q % per;
            }
            model_read(m, row, col, bx * d->opb + d->off_rd[round] + t * r->r + i);
        }
}

/* Lane tid's row address: S[*r, *col]. */
static void ldm_addr(const draw *d, int tid, int *r, int *col) {
    int c = (tid % 32 + tid / 32 * 5 + d->lrot) % d->nchunk;
    if (!d->cgroups) {
        *r = form_at(&d->dr, c / d->nj, c % d->nj), *col = form_at(&d->dc, c / d->nj, c % d->nj);
        return;
    }
    int t = c / d->cgroups;
    *r = form_at(&d->dr, t, 0), *col = form_at(&d->dc, t, 0) + c % d->cgroups * d->chunk_n;
}

/* Lane tid's row (16 bytes) into row[]; false (flagged) when it fails. */
static bool ldm_row(model *m, int tid, uint8_t *row) {
    const draw *d = m->d;
    int r, col;
    ldm_addr(d, tid, &r, &col);
    int flat = r * d->cols + col;
    if (flat < 0 || flat + d->chunk_n > m->size || flat * m->eb % 16) {
        m->flags |= F_RUNTIME;
        return false;
    }
    if (r >= d->rows || col + d->chunk_n > d->cols) m->flags |= F_FLAT;
    for (int e = flat; e < flat + d->chunk_n; e++)
        if (!m->w[e] || m->fl[e]) m->flags |= F_RUNTIME;
    memcpy(row, m->s + (size_t)flat * (size_t)m->eb, 16);
    return true;
}

/* One warp's ldmatrix (the simulator's simw_ldmatrix, on bytes). */
static void model_ldm_warp(model *m, int bx, int w) {
    const draw *d = m->d;
    uint8_t rows[32][16];
    for (int l = 0; l < 8 * d->num; l++)
        if (!ldm_row(m, 32 * w + l, rows[l])) return;
    bool w32 = m->eb == 4;
    if (w32 && d->trans) {
        m->flags |= F_RUNTIME;
        return;
    }
    int per = w32 ? 1 : 2;
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < d->num; i++)
            for (int j = 0; j < per && per * i + j < d->lread; j++) {
                int r = l / 4, c = w32 ? l % 4 : 2 * (l % 4) + j;
                const uint8_t *src = d->trans ? &rows[8 * i + c][r * m->eb]
                                              : &rows[8 * i + r][c * m->eb];
                int at = bx * d->opb + d->off_ldm + (32 * w + l) * per * d->num + per * i + j;
                memcpy(m->o + (size_t)at * (size_t)m->eb, src, (size_t)m->eb);
            }
}

static void model_block(model *m, int bx) {
    const draw *d = m->d;
    memset(m->w, 0, (size_t)m->size);
    memset(m->fl, 0, (size_t)m->size);
    model_copy_loop(m, bx, 0);
    model_reader(m, bx, 0);
    for (int w = 0; d->ldm && w < d->nt / 32; w++) model_ldm_warp(m, bx, w);
    if (!d->round2) return;
    model_copy_loop(m, bx, 1);
    model_reader(m, bx, 1);
}

static void model_run(model *m) {
    for (int bx = 0; bx < m->d->nb; bx++) model_block(m, bx);
}

/* ------------------------------------------------ one case */

typedef struct tally {
    int cases, lowered, compared, interp_compared, ldm, barriers;
    int refused[5], sim_failed;
} tally;
static const char *const why_name[5] = {"malformed", "race", "run-time", "undefined",
                                        "guard span"};

static long cases_wanted = 1000;
static uint64_t seed_wanted = 23;

/* CF_KEEP_GOING=1: a failed case is counted and the run goes on (to
 * count the failures of a planted bug; memory of the failed case leaks). */
static bool keep_going;
static jmp_buf next_case;

/* Fails case c: the message, the kernel and the lowered one (NULL: none)
 * on stderr, where cmocka's message would cut them. */
static void case_fail(long c, const char *src, const char *lowered, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "copy_fuzz seed %llu case %ld: %s\n%s", (unsigned long long)seed_wanted, c,
            msg, src);
    if (lowered) fprintf(stderr, "lowered:\n%s", lowered);
    if (keep_going) longjmp(next_case, 1);
    fail_msg("seed %llu case %ld: %.300s", (unsigned long long)seed_wanted, c, msg);
}

static uint8_t *pattern(size_t n, uint8_t v) {
    uint8_t *p = malloc(n ? n : 1);
    memset(p, v, n);
    return p;
}

static int count_syncs(const char *txt) {
    int n = 0;
    for (const char *p = txt; (p = strstr(p, "T.syncthreads()")); p++) n++;
    return n;
}

/* The refusal of a case of these flags: must it be, and may it be? */
static void check_refusal(const draw *d, unsigned fl, const char *e, long c, const char *src,
                          tally *t) {
    if (!e || !*e || strstr(e, "internal error"))
        case_fail(c, src, NULL, "a refusal that is not clean: %s", e ? e : "(none)");
    if (getenv("CF_VERBOSE")) printf("# refused %ld (flags %u): %.300s\n", c, fl, e);
    if (fl & F_MALFORMED) {
        if (!strstr(e, "gpu_check: T.cp_async"))
            case_fail(c, src, NULL, "a malformed copy refused otherwise: %s", e);
        t->refused[0]++;
        return;
    }
    /* compact_alloc refuses a copy whose span may pass its row, over the
     * loops' ranges (not the guard's) */
    bool span = ((d->guard_span || (fl & F_ROWX)) && strstr(e, "compact_alloc: T.cp_async")) ||
                (d->ldm_span && strstr(e, "compact_alloc: T.ldmatrix"));
    int k = fl & F_RACE ? 1 : fl & (F_RUNTIME | F_FLAT) ? 2 : fl & F_UNDEF ? 3 : span ? 4 : -1;
    if (k < 0) case_fail(c, src, NULL, "a well-formed, race-free kernel refused: %s", e);
    t->refused[k]++;
}

static bool run_interp(tir_ctx *ctx, const tir_prim_func *f, const model *m, uint8_t *o) {
    memset(o, 0x5a, (size_t)m->d->no * (size_t)m->eb);
    tir_arg args[2] = {{.data = m->a}, {.data = o}};
    return tir_interp_run(ctx, f, 2, args, NULL) == TIR_OK;
}

static bool run_sim(tir_ctx *ctx, const tir_prim_func *k, const model *m, uint8_t *o) {
    memset(o, 0x5a, (size_t)m->d->no * (size_t)m->eb);
    tir_arg args[2] = {{.data = m->a}, {.data = o}};
    tir_sim_opts so = {.check_uninit = true, .check_global_races = true};
    return tir_sim_run(ctx, k, 2, args, &so, NULL) == TIR_OK;
}

/* The interpreter on the unlowered function, where it can run it: as the
 * computation says. */
static void check_interp(tir_ctx *ctx, const tir_prim_func *f, const model *m, long c,
                         const char *src, tally *t) {
    if (m->d->ldm || (m->flags & (F_MALFORMED | F_RACE | F_UNDEF))) return;
    size_t ob = (size_t)m->d->no * (size_t)m->eb;
    uint8_t *o = malloc(ob);
    bool ok = run_interp(ctx, f, m, o);
    if (getenv("CF_VERBOSE"))
        printf("# case %ld: flags %u, interpreter %s\n", c, m->flags, ok ? "ok" : tir_ctx_error(ctx));
    if ((m->flags & F_INTERP) && ok)
        case_fail(c, src, NULL, "the interpreter runs what the computation says fails");
    if (!(m->flags & (F_INTERP | F_RUNTIME))) {
        if (!ok) case_fail(c, src, NULL, "interpreter: %s", tir_ctx_error(ctx));
        if (memcmp(o, m->o, ob))
            case_fail(c, src, NULL, "the interpreter and the computation differ");
        t->interp_compared++;
    }
    free(o);
}

static void check_lowered(tir_ctx *ctx, const tir_prim_func *k, const model *m, long c,
                          const char *src, tally *t) {
    unsigned fl = m->flags;
    if (fl & F_FLAT) return; /* ill-formed: what the flattened kernel does is not defined */
    if (fl & (F_MALFORMED | F_RACE))
        case_fail(c, src, tir_print(ctx, k), "accepted, but it %s",
                  fl & F_MALFORMED ? "has a malformed copy" : "races");
    size_t ob = (size_t)m->d->no * (size_t)m->eb;
    uint8_t *o = malloc(ob);
    bool ok = run_sim(ctx, k, m, o);
    if (fl & F_RUNTIME) {
        if (ok)
            case_fail(c, src, tir_print(ctx, k), "accepted and simulated, but it fails at run "
                      "time (flags %u)", fl);
        t->sim_failed++;
        if (getenv("CF_VERBOSE")) printf("# case %ld: simulator %.200s\n", c, tir_ctx_error(ctx));
    } else if (!(fl & (F_UNDEF | F_FLAT))) {
        if (!ok)
            case_fail(c, src, tir_print(ctx, k), "accepted, but the simulator: %s",
                      tir_ctx_error(ctx));
        if (memcmp(o, m->o, ob))
            case_fail(c, src, tir_print(ctx, k), "the simulator and the computation differ");
        t->compared++;
        t->ldm += m->d->ldm;
    }
    free(o);
}

static void one_case(uint64_t seed, long c, tally *t) {
    fuzz_seed_case(seed, c);
    draw d;
    draw_case(&d);
    static char src[32768];
    print_case(&d, src, sizeof src);
    const char *show = getenv("CF_SHOW");
    if (show && atol(show) == c) printf("%s", src);
    model m = {.d = &d, .size = d.rows * d.cols, .eb = dts[d.dt].bytes};
    m.s = pattern((size_t)m.size * (size_t)m.eb, 0), m.o = pattern((size_t)d.no * (size_t)m.eb, 0x5a);
    m.a = pattern((size_t)d.na * (size_t)dts[d.st].bytes, 0);
    m.w = calloc((size_t)m.size, 1), m.fl = calloc((size_t)m.size, 1);
    m.wr = calloc((size_t)m.size, sizeof(int));
    for (int i = 0; i < d.na; i++)
        put_val(d.st, dts[d.st].kind == K_UINT ? (i * 37 + 11) % 97 : (i * 37 + 11) % 97 - 48,
                m.a + (size_t)i * (size_t)dts[d.st].bytes);
    if (d.malformed) m.flags = F_MALFORMED;
    else model_run(&m);

    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *f = NULL, *k = NULL;
    if (tir_parse_func(ctx, src, strlen(src), &f) != TIR_OK)
        case_fail(c, src, NULL, "parse: %s", tir_ctx_error(ctx));
    t->cases++;
    check_interp(ctx, f, &m, c, src, t);
    if (tir_lower(ctx, f, NULL, &k) != TIR_OK) {
        check_refusal(&d, m.flags, tir_ctx_error(ctx), c, src, t);
    } else {
        t->lowered++;
        t->barriers += count_syncs(tir_print(ctx, k)) > 0;
        check_lowered(ctx, k, &m, c, src, t);
    }
    tir_ctx_destroy(ctx);
    free(m.s), free(m.o), free(m.a), free(m.w), free(m.fl), free(m.wr);
}

static void test_copy_spans_vs_simulator(void **state) {
    (void)state;
    tally t = {0};
    volatile int failed = 0;
    keep_going = getenv("CF_KEEP_GOING") != NULL;
    for (volatile long c = 0; c < cases_wanted; c++) {
        if (keep_going && setjmp(next_case)) {
            failed++;
            continue;
        }
        one_case(seed_wanted, c, &t);
    }
    printf("# %d cases from seed %llu: %d lowered (%d with a barrier), %d compared with the "
           "computation (%d with ldmatrix), %d with the interpreter too, %d failing in the "
           "simulator as they should; refused:",
           t.cases, (unsigned long long)seed_wanted, t.lowered, t.barriers, t.compared, t.ldm,
           t.interp_compared, t.sim_failed);
    for (int i = 0; i < 5; i++) printf(" %d %s", t.refused[i], why_name[i]);
    printf("\n");
    if (failed) fail_msg("%d of %ld cases failed (CF_KEEP_GOING)", failed, cases_wanted);
    assert_true(t.compared > 0 && t.barriers > 0 && t.refused[0] + t.refused[1] > 0);
}

int main(int argc, char **argv) {
    fuzz_args(argc, argv, &cases_wanted, &seed_wanted);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_spans_vs_simulator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
