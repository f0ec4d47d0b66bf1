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
 *
 * Added in the twenty-seventh session, each from a stream of its own
 * (draw_features), so a case without them is the kernel it was before:
 *   - a hand-written multi-stage pipeline (a quarter of the cases,
 *     make_pipe): S holds 2-4 stages of the copies' rows, a prologue
 *     commits one group per stage, a serial k loop issues the chunk
 *     `pre` ahead into its stage, commits (empty groups at the end),
 *     waits with cp_async_wait(wn) and reads a stage.  Mistakes: wn one
 *     more than `pre` (the stage read is still in flight), a prefetch
 *     distance equal to the stages (the copy overwrites the stage being
 *     read, maybe in flight), reading another stage (in flight,
 *     uninitialised or defined).  The barriers between the wait and the
 *     reads and at the end of the body (the next copy overwrites the
 *     stage read) are thread_sync's to place: minitir puts them, so a
 *     missing one is a lowering bug the simulator's race check finds;
 *   - a threadIdx.y axis (a quarter): the thread id in every index is
 *     ty * nx + tx; ldmatrix over 2-4 warps on threadIdx.y;
 *   - a run-time src_bytes (a sixth from the thread index and copy,
 *     `(tid * a + j * b + c) % m * es`, and a seventh of the rest loaded
 *     from an int32 buffer B), now and then past the size or not whole
 *     elements: the simulator and the interpreter must report it;
 *   - PTX (an eighth): tir_codegen (sm_80) on an accepted kernel must
 *     succeed and emit cp.async (and commit_group, wait_group, ldmatrix
 *     where the kernel has them); one that fails at run time may instead
 *     be refused with a clean message.  Since the seventh review's follow-up
 *     the PTX also runs in the PTX interpreter (tests/ptx_interp.c, with
 *     ldmatrix per warp) on the simulator's inputs and must leave O as
 *     the computation does, byte for byte (run_ptx).
 * The interpreter does not run pipelines (it runs one thread's loop at a
 * time, so reads of other threads' copies in one thread loop are unwritten
 * to it); the simulator is their oracle.
 *
 * Added in the twenty-eighth session, from a third stream (draw_more), so
 * that a case without them is the kernel it was (checked: the 11,668 such
 * cases of the first 20,000 at seed 23 print the same text as before):
 *   - a 3-D S (a third of the 2-D ones, make_s3): planes of rows x cols,
 *     the destination's plane an affine form (a constant, or by thread or
 *     copy), a pipeline's stages in planes; the copies, the reads, the
 *     store and the ldmatrix rows index it in three dimensions;
 *   - a 3-D A (a quarter, make_a3): A[bx, row, col], the source's row a
 *     form of its own and its column the drawn one or a tile fetch's
 *     (a row per thread, or per copy); chunks and shifts in whole rows;
 *   - in a pipeline (pipe_extras), each at random: an ldmatrix of the
 *     stage read, mostly instead of the plain reads (which otherwise meet
 *     every landing element first and force every barrier), before or
 *     after them; a store of thread p into the stage read after the wait
 *     (value 100 + kk, maybe read); a second round in the body after the
 *     reads: chunk kk shifted, copied into the stage just read, with its
 *     own commits and waits (the mistakes too: copies in flight when
 *     read), and its reads.  The groups are counted copy by copy (an
 *     uncommitted copy joins the next commit's group, as in PTX).  Some
 *     ldmatrix cases are made pipelines for it (they were rare).
 *   A store over an element another thread copied earlier in the same
 *   thread loop (F_WAW) may be refused: thread_sync orders only a read
 *   and a write, as TVM's ThreadSync, and race_check refuses the two
 *   writes where no read between put a barrier; accepted, it must be
 *   right.
 * Not drawn: storage_align (`dim_align`), buffers of four or more
 * dimensions, hand-written barriers, an ldmatrix or a store of the
 * non-pipelined draw's second round, a second round after a pipeline's
 * loop.
 *
 * Seen failing at the default 1,000 cases (seed 23), each break undone
 * after (the fuzzer before these draws passed the first four):
 *   - the simulator's cp_async_wait(n) completing one group too many for
 *     n >= 2: 27 cases, all pipelines ("accepted and simulated, but it
 *     fails at run time"); for n >= 1: 52 (29 pipelines; the older draws'
 *     wait(1) mistake meets this one too);
 *   - thread_sync's barrier at the end of a loop body with a barrier (the
 *     back edge) never placed: 108, all pipelines (race_check refuses the
 *     well-formed kernel);
 *   - race_check's thread id leaving out threadIdx.y: 2 (11 in 5,000),
 *     all threadIdx.y races accepted;
 *   - the simulator's whole-elements check of src_bytes off: 11, all
 *     run-time src_bytes;
 *   - and the PTX check found, before eea0925, 22: codegen refused a
 *     cp_async operand T.Ramp(b, 1, n) (21) and ldmatrix into int32 (1),
 *     both accepted by tir_lower and run by the simulator.
 * And with the twenty-eighth session's draws (the fuzzer before them
 * passed the first six, and failed 18 on the last):
 *   - flatten's row-major stride of dimension d the next dimension's
 *     extent only (right for 2-D), for shared buffers: 52 (all 3-D S, 5
 *     of them ldmatrix rows); for global ones: 128 (all 3-D A);
 *   - thread_sync not counting an ldmatrix row as a read: 25, all
 *     pipelines with ldmatrix (race_check refuses them); the row counted
 *     as one element instead of 16 bytes: 2 in 5,000, both such;
 *   - thread_sync's "same expression, same thread's element" rule also
 *     for an index no thread variable is in (S[36] stored by one thread,
 *     read by all): 11, 9 of them pipeline stores;
 *   - thread_sync taking two accesses indexed by a loop's variable as
 *     different versions without comparing them: 51, 44 with a pipeline
 *     second round (the stage read, then copied into), 7 with a store;
 *   - thread_sync not counting a cp_async as a write at its issue (only
 *     where it lands): 60, 40 with a pipeline second round (18 before).
 *
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

#include "direct_check.h"
#include "fuzz_args.h"
#include "fuzz_xorshift.h"
#include "minitir/codegen.h"
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
    int raw_p;            /* RD_AFFINE of a 3-D S: the plane */
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
    /* Drawn from a stream of their own (feature_stream), so that a case
     * without them is the draw it was before they were added: */
    int ny;                       /* threadIdx.y's extent (1: threadIdx.x only) */
    char tid[40];                 /* the linear thread id in the text: tx, (ty * nx + tx) */
    bool pipe;                    /* a multi-stage pipeline (make_pipe) */
    int stages, pre, kn, wn, roff, cs; /* stages, prefetch distance, iterations, the wait's
                                        * count, the stage read (kk + roff), A per chunk */
    int srows, scols;             /* S's shape as allocated (stages of rows x cols) */
    int rsb;                      /* run-time src_bytes: RSB_NONE, RSB_THREAD, RSB_LOADED */
    int rsa, rsb_j, rsc, rsm, rse; /* RSB_THREAD: (tid * rsa + j * rsb_j + rsc) % rsm * rse */
    int sbtab[512];               /* RSB_LOADED: B[tid * nj + j] */
    bool ptx;                     /* compiled to PTX when accepted */
    /* Drawn from a third stream (draw_more), so that a case without them
     * is the draw it was before they were added: */
    bool s3;                      /* S of 3 dimensions: planes of rows x cols (from a 2-D S) */
    int planes;                   /* S's planes (1 unless s3) */
    form dp;                      /* s3: the destination's plane */
    bool a3;                      /* A of 3 dimensions: (blocks, rows, acols) */
    form sr;                      /* a3: the source's row (src is then its column) */
    int acols;                    /* a3: A's columns */
    bool pipe_ldm, pipe_store, pipe_r2; /* a pipeline's ldmatrix, store, second round */
    bool ldm_pipe;                /* an ldmatrix case made a pipeline (with pipe_ldm) */
    bool ldm_first;               /* a pipeline's ldmatrix before its reads */
    bool ldm_only;                /* a pipeline's ldmatrix instead of its plain reads */
    int pit;                      /* a pipeline iteration's elements of O */
} draw;

enum { RSB_NONE, RSB_THREAD, RSB_LOADED };

static int form_at(const form *f, int t, int j) { return f->k0 + t * f->kt + j * f->kj; }

/* Copy (t, j)'s row of S, counted over the planes (plane * rows + row). */
static int crow(const draw *d, int t, int j) {
    return form_at(&d->dp, t, j) * d->rows + form_at(&d->dr, t, j);
}

/* The rows of S (one stage of a pipeline), over its planes. */
static int prows(const draw *d) { return d->planes * d->rows; }

/* Copy (t, j)'s source element, from its block's (or chunk's) first. */
static int src_at(const draw *d, int t, int j) {
    return (d->a3 ? form_at(&d->sr, t, j) * d->acols : 0) + form_at(&d->src, t, j);
}

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

/* Thread p's store of one element, where no copy lands when there is one
 * (store_r counts rows over S's planes). */
static void place_store(draw *d) {
    int size = prows(d) * d->cols;
    bool *hit = calloc((size_t)size, 1);
    for (int t = 0; t < d->k; t++)
        for (int j = 0; j < d->nj; j++)
            for (int e = 0; e < d->n; e++) {
                int f = crow(d, t, j) * d->cols + form_at(&d->dc, t, j) + e;
                if (f >= 0 && f < size) hit[f] = true;
            }
    int at = pick(size);
    for (int i = 0; i < size && pick(10) && hit[at]; i++) at = (at + 1) % size;
    free(hit);
    d->store_t = pick(d->nt), d->store_r = at / d->cols, d->store_c = at % d->cols;
    d->store_v = 100 + pick(20);
}

/* Thread p stores one element (a third of the cases). */
static void draw_store(draw *d) {
    d->store_t = -1;
    if (pick(3)) return;
    place_store(d);
}

/* The copy (of a thread that copies) that starts furthest into S. */
static void last_slot(const draw *d, int *lt, int *lj) {
    int best = -1;
    for (int t = 0; t < d->k; t++)
        for (int j = 0; j < d->nj; j++) {
            int f = crow(d, t, j) * d->cols + form_at(&d->dc, t, j);
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
    if (d->pipe) { /* iteration kk's at kk * pit: reads, ldmatrix, the second round's reads */
        d->off_rd[0] = 0, d->off_ldm = d->ldm_only ? 0 : d->nt * d->rd[0].r;
        d->off_rd[1] = d->off_ldm + d->nt * per;
        d->pit = d->off_rd[1] + (d->round2 ? d->nt * d->rd[1].r : 0);
        d->opb = d->kn * d->pit;
    }
    d->no = d->nb * d->opb;
}

/* The features added after the first version, from a stream of their
 * own: threadIdx.y, a pipeline, run-time src_bytes, PTX. */
static void draw_features(draw *d) {
    d->ny = pick(4) == 0 ? 2 + pick(3) : 1;
    d->pipe = pick(4) == 0;
    d->rsb = pick(6) == 0 ? RSB_THREAD : pick(6) == 0 ? RSB_LOADED : RSB_NONE;
    d->ptx = pick(8) == 0;
}

/* The features of the third stream (each case draws them; draw_case
 * drops those its case cannot have): a 3-D S (of a 2-D one), a 3-D A,
 * a pipeline's ldmatrix, store and second round. */
static void draw_more(draw *d) {
    d->s3 = pick(3) == 0;
    d->a3 = pick(4) == 0;
    d->pipe_ldm = pick(2) == 0;
    d->pipe_store = pick(3) == 0;
    d->pipe_r2 = pick(3) == 0;
    d->ldm_pipe = pick(2) == 0;
    d->ldm_first = pick(2) == 0;
    d->ldm_only = pick(3) != 0;
}

/* S of three dimensions: the 2-D draw's rows become a plane's, the
 * destination's plane an affine form (often a constant, or by thread or
 * copy: then maybe two copies meet, a race).  The store moves to a random
 * plane, RD_AFFINE readers read one.  Dropped where S would pass 32 KB. */
static void make_s3(draw *d) {
    d->dp = (form){pick(2), pick(3) == 0 ? 1 + pick(2) : 0, pick(3) == 0};
    int mp = 0;
    for (int t = 0; t < d->nt; t++)
        for (int j = 0; j < d->nj; j++)
            if (form_at(&d->dp, t, j) > mp) mp = form_at(&d->dp, t, j);
    d->planes = mp + 1 + pick(2);
    if (d->planes * d->rows * d->cols * dts[d->dt].bytes > 32768) {
        d->s3 = false, d->planes = 1, d->dp = (form){0, 0, 0};
        return;
    }
    if (d->store_t >= 0) d->store_r += pick(d->planes) * d->rows;
    for (int i = 0; i < 2; i++) d->rd[i].raw_p = pick(d->planes);
}

/* A of three dimensions, A[bx, row, col]: the source's column is the
 * drawn form's or, as a tile fetch would, contiguous in a row per thread
 * or per copy; its row another form.  The second round's shift (and a
 * pipeline's chunks) are whole rows; A's columns a multiple of the copy's
 * elements, so rows keep the alignment. */
static void make_a3(draw *d) {
    int ns = d->ns, k0 = d->src.k0 % ns + ns * pick(2), w = pick(3);
    if (w == 0) d->sr = (form){pick(2), 1, 0}, d->src = (form){k0, 0, ns};
    else if (w == 1) d->sr = (form){pick(2), 0, 1}, d->src = (form){k0, ns, 0};
    else d->sr = (form){pick(2), pick(2), pick(2)};
    int mr = 0, mc = 0;
    for (int t = 0; t < d->nt; t++)
        for (int j = 0; j < d->nj; j++) {
            if (form_at(&d->sr, t, j) > mr) mr = form_at(&d->sr, t, j);
            if (form_at(&d->src, t, j) > mc) mc = form_at(&d->src, t, j);
        }
    d->acols = (mc + ns + ns - 1) / ns * ns + ns * pick(2);
    int shift = 1 + pick(2);
    d->shift2 = shift * d->acols;
    d->pb = (mr + 1 + shift) * d->acols;
    d->na = d->nb * d->pb;
}

/* Run-time src_bytes: whole source elements from 0 to the size, from the
 * thread and the copy, or loaded from B; now and then (a mistake the
 * simulator and the interpreter must report) past the size or not whole
 * elements. */
static void draw_rt_sb(draw *d) {
    int es = dts[d->st].bytes, m = d->bytes / es + 1;
    bool bad = pick(8) == 0;
    if (d->rsb == RSB_THREAD) {
        d->rsa = 1 + pick(3), d->rsb_j = pick(3), d->rsc = pick(4), d->rsm = m, d->rse = es;
        if (bad && es > 1 && pick(2)) d->rsm = d->bytes + 1, d->rse = 1;
        else if (bad) d->rsm = m + 1;
        return;
    }
    int nv = d->nt * d->nj;
    for (int i = 0; i < nv; i++) d->sbtab[i] = es * pick(m);
    if (bad) d->sbtab[pick(nv)] = es > 1 && pick(2) ? es + 1 : d->bytes + es;
}

/* Copy (t, j)'s src_bytes. */
static int copy_sb(const draw *d, int t, int j) {
    if (d->rsb == RSB_THREAD) return (t * d->rsa + j * d->rsb_j + d->rsc) % d->rsm * d->rse;
    if (d->rsb == RSB_LOADED) return d->sbtab[t * d->nj + j];
    return d->sb < 0 ? d->bytes : d->sb;
}

/* A multi-stage pipeline of the copies: S holds `stages` versions of the
 * copies' rows x cols; a prologue issues chunks 0 .. pre-1 of A into
 * stages 0 .. pre-1, one group each; iteration kk of a serial loop issues
 * chunk kk + pre (while there is one) into its stage, commits (a group,
 * maybe empty), waits with wait(wn) and reads stage kk + roff.  wn <= pre
 * leaves chunk kk complete; wn = pre + 1 (a mistake) reads it in flight;
 * pre = stages (a mistake) overwrites the stage being read, maybe in
 * flight; roff != 0 reads another stage (uninitialised, in flight or
 * defined).  The stage of chunk kk + pre is the one read in iteration
 * kk + pre - stages: the barrier before the copies' issue is thread_sync's
 * to place (back edge), as is the one between the wait and the reads.
 * Every thread's copies fit in a stage (S grown to fit), so a race is two
 * threads' copies meeting in one stage.  Since the twenty-eighth session
 * (draw_more's flags, pipe_extras) the body may also store into the stage
 * read, ldmatrix it and copy into it again. */
static void make_pipe(draw *d) {
    static draw before; /* restored when S's stages do not fit */
    before = *d;
    d->round2 = d->pipe_r2;
    d->ldm = d->ldm && d->pipe_ldm;
    d->own_read = d->ldm_span = d->guard_span = false;
    if (!d->pipe_store) {
        d->store_t = -1;
        if (d->rd[0].kind == RD_STORED) d->rd[0].kind = RD_SLOTS;
    }
    int mr, mc, eb = dts[d->dt].bytes;
    dst_max(d, d->nt, &mr, &mc);
    if (d->two_d && d->rows < mr + 1) {
        if (d->s3 && d->store_t >= 0) /* store_r counts rows over the planes */
            d->store_r = d->store_r / d->rows * (mr + 1) + d->store_r % d->rows;
        d->rows = mr + 1;
    }
    if (d->cols < mc + d->n) d->cols = mc + d->n;
    if (pick(20)) d->cols = (d->cols + d->n - 1) / d->n * d->n; /* else stages may misalign */
    d->stages = 2 + pick(3);
    while (d->stages > 2 && d->stages * prows(d) * d->cols * eb > 32768) d->stages--;
    if (d->stages * prows(d) * d->cols * eb > 32768) { /* the one-round draw as it was */
        *d = before;
        d->pipe = false;
        return;
    }
    d->pre = pick(15) == 0 ? d->stages : 1 + pick(d->stages - 1);
    d->kn = 1 + pick(6);
    d->wn = pick(8) == 0 ? d->pre + 1 : pick(d->pre + 1);
    d->roff = pick(6) == 0 ? pick(d->stages) : 0;
    d->cs = d->pb;
    d->pb = (d->pre > d->kn ? d->pre : d->kn) * d->cs;
    d->na = d->nb * d->pb;
}

/* A pipeline's features of the third stream: a store where none was
 * drawn (maybe read), a second round's group mode with its mistakes
 * (copies in flight when read), ldmatrix rows that may pass a row. */
static void pipe_extras(draw *d) {
    if (d->pipe_store && d->store_t < 0) {
        place_store(d);
        if (pick(3) == 0) d->rd[pick(2)].kind = RD_STORED;
    }
    if (d->round2 && pick(8) == 0) d->mode[1] = (int[]){GM_NO_WAIT, GM_WAIT1, GM_NO_COMMIT}[pick(3)];
    d->ldm_span = d->ldm && ldm_passes_row(d);
}

/* The draws after the first stream's, each from its own stream (rs at
 * feat and more): the third's 3-D shapes, the feature stream's pipeline
 * and src_bytes as before, the third's pipeline extras; then S's
 * extents and O's layout. */
static void draw_rest(draw *d, uint64_t feat, uint64_t more) {
    rs = more;
    d->s3 &= d->two_d;
    if (d->s3) make_s3(d);
    if (d->a3) make_a3(d);
    more = rs;
    rs = feat;
    /* pipelines with ldmatrix are rare: some ldmatrix cases become one
     * (where S's stages do not fit, the feature stream is as it was) */
    bool forced = !d->pipe && d->ldm && d->pipe_ldm && d->ldm_pipe;
    uint64_t fs = rs;
    d->pipe |= forced;
    if (d->pipe) make_pipe(d);
    if (forced && !d->pipe) rs = fs;
    if (d->malformed) d->rsb = RSB_NONE;
    if (d->rsb) draw_rt_sb(d);
    rs = more;
    if (d->pipe) pipe_extras(d);
    else d->pipe_ldm = d->pipe_store = d->pipe_r2 = false;
    d->pipe_ldm &= d->ldm, d->pipe_store &= d->store_t >= 0;
    d->ldm_only &= d->pipe_ldm;
    d->srows = (d->pipe && d->two_d ? d->stages : 1) * prows(d);
    d->scols = d->pipe && !d->two_d ? d->stages * d->cols : d->cols;
    draw_layout(d);
}

static void draw_case(draw *d, uint64_t seed, long c) {
    memset(d, 0, sizeof *d);
    d->planes = 1;
    fuzz_seed_case(seed ^ 0x5eed0f7ea7u, c);
    draw_features(d);
    uint64_t feat = rs;
    fuzz_seed_case(seed ^ 0x3d0b1ec75u, c);
    draw_more(d);
    uint64_t more = rs;
    fuzz_seed_case(seed, c);
    d->dt = pick(NDT);
    d->st = is_int(d->dt) && pick(3) == 0 ? (int[]){0, 1, 2, 3}[pick(4)] : d->dt;
    bool want_ldm = (dts[d->dt].bytes == 2 || dts[d->dt].bytes == 4) && pick(2) == 0;
    draw_size(d);
    if (want_ldm && d->st == d->dt && !d->malformed && pick(2)) /* a row per copy */
        d->bytes = 16, d->n = 16 / dts[d->dt].bytes, d->ns = d->n;
    d->nb = 1 + pick(2), d->nj = 1 + pick(3);
    /* lower_fragments: threadIdx.x is the lane; warps on threadIdx.y */
    d->nt = want_ldm ? 32 * d->ny : (1 + pick(40) + d->ny - 1) / d->ny * d->ny;
    if (d->ny > 1) snprintf(d->tid, sizeof d->tid, "(ty * %d + tx)", d->nt / d->ny);
    else snprintf(d->tid, sizeof d->tid, "tx");
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
    draw_rest(d, feat, more);
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

/* The stage the text's S indices are in (NULL: not a pipeline): set while
 * a pipeline's copies and reads are printed. */
static const char *stage_of;

/* A pipeline's stage offset of S's first index ("" outside one): in
 * rows when 2-D, planes when 3-D, columns when 1-D. */
static void stage_str(const draw *d, char *o, size_t n) {
    *o = 0;
    if (stage_of)
        snprintf(o, n, "%s * %d + ", stage_of,
                 d->s3 ? d->planes : d->two_d ? d->rows : d->cols);
}

/* S's index of copy (t, j), plus k (NULL: none), as a Ramp of `lanes`
 * when lanes > 1; in stage stage_of of a pipeline. */
static void dst_str(const draw *d, const char *t, const char *j, const char *k, int lanes,
                    char *o, size_t n) {
    char c[640], r[384], p[448] = "", f[320], lz[16], st[96], sr[96] = "", sc[96] = "";
    stage_str(d, st, sizeof st);
    if (d->s3) { /* the stage is in planes */
        form_str(&d->dp, t, j, f, sizeof f);
        snprintf(p, sizeof p, "%s%s, ", st, f);
    } else snprintf(d->two_d ? sr : sc, sizeof sr, "%s", st);
    form_str(&d->dc, t, j, c, sizeof c);
    if (k) snprintf(c + strlen(c), sizeof c - strlen(c), " + %s", k);
    snprintf(lz, sizeof lz, ", 1, %d)", lanes);
    form_str(&d->dr, t, j, r, sizeof r);
    snprintf(o, n, "%s%s%s%s%s%s%s%s", p, d->two_d ? sr : "", d->two_d ? r : "",
             d->two_d ? ", " : "", lanes > 1 ? "T.Ramp(" : "", sc, c, lanes > 1 ? lz : "");
}

/* The stored element's index (store_r over S's planes), in stage
 * stage_of of a pipeline. */
static void store_str(const draw *d, char *o, size_t n) {
    char st[96];
    stage_str(d, st, sizeof st);
    if (d->s3)
        snprintf(o, n, "%s%d, %d, %d", st, d->store_r / d->rows, d->store_r % d->rows, d->store_c);
    else if (d->two_d) snprintf(o, n, "%s%d, %d", st, d->store_r, d->store_c);
    else snprintf(o, n, "%s%d", st, d->store_c);
}

/* The thread loops (threadIdx.y when drawn, threadIdx.x) at indent in;
 * returns their body's indent. */
static int put_threads(const draw *d, text *x, int in) {
    if (d->ny > 1) put(x, in++, "for ty in T.thread_binding(0, %d, thread=\"threadIdx.y\"):\n", d->ny);
    put(x, in, "for tx in T.thread_binding(0, %d, thread=\"threadIdx.x\"):\n", d->nt / d->ny);
    return in + 1;
}

/* Copy j's src_bytes argument (", N", "" for none). */
static void sb_str(const draw *d, char *o, size_t n) {
    if (d->rsb == RSB_THREAD)
        snprintf(o, n, ", (%s * %d + j * %d + %d) %% %d * %d", d->tid, d->rsa, d->rsb_j, d->rsc,
                 d->rsm, d->rse);
    else if (d->rsb == RSB_LOADED) snprintf(o, n, ", B[%s * %d + j]", d->tid, d->nj);
    else if (d->sb >= 0) snprintf(o, n, ", %d", d->sb);
    else *o = 0;
}

/* The copies of one thread (the j loop, guarded) at indent in; chunk is
 * the source's offset (an expression). */
static void put_copies(const draw *d, text *x, int in, const char *chunk) {
    char dst[1024], src[640], sz[16], sb[96], tt[64], sf[256];
    dst_str(d, d->tid, "j", NULL, d->ramp_d ? d->n : 1, dst, sizeof dst);
    if (d->rev) snprintf(tt, sizeof tt, "(%d - 1 - %s)", d->nt, d->tid);
    else snprintf(tt, sizeof tt, "%s", d->tid);
    form_str(&d->src, tt, "j", sf, sizeof sf);
    snprintf(sz, sizeof sz, ", 1, %d)", d->ns);
    if (d->a3) { /* chunk counts rows */
        char rf[256];
        form_str(&d->sr, tt, "j", rf, sizeof rf);
        snprintf(src, sizeof src, "bx, %s + %s, %s%s%s", chunk, rf, d->ramp_s ? "T.Ramp(" : "",
                 sf, d->ramp_s ? sz : "");
    } else
        snprintf(src, sizeof src, "%sbx * %d + %s + %s%s", d->ramp_s ? "T.Ramp(" : "", d->pb,
                 chunk, sf, d->ramp_s ? sz : "");
    sb_str(d, sb, sizeof sb);
    put(x, in, "for j in T.serial(%d):\n", d->nj);
    if (d->k < d->nt) put(x, ++in, "if %s < %d:\n", d->tid, d->k);
    put(x, in + 1, "T.cp_async(T.address_of(S[%s]), T.address_of(A[%s]), %d%s)\n", dst, src,
        d->bytes, sb);
}

/* Thread p's store at indent in (the value plus `plus`, an expression or
 * NULL), in stage stage_of of a pipeline. */
static void put_store(const draw *d, text *x, int in, const char *plus) {
    char idx[160];
    store_str(d, idx, sizeof idx);
    put(x, in, "if %s == %d:\n", d->tid, d->store_t);
    put(x, in + 1, "S[%s] = T.%s(%d%s%s)\n", idx, dts[d->dt].name, d->store_v, plus ? " + " : "",
        plus ? plus : "");
}

/* The commits and waits of group mode m after put_copies at indent in
 * (GM_WAIT_READER's wait is the reader's). */
static void put_groups(text *x, int in, int m) {
    if (m == GM_EACH || m == GM_EACH_WAIT || m == GM_WAIT1) put(x, in + 1, "T.cp_async_commit()\n");
    if (m == GM_EACH_WAIT) put(x, in + 1, "T.cp_async_wait(0)\n");
    if (m == GM_END || m == GM_NO_WAIT || m == GM_WAIT_READER) put(x, in, "T.cp_async_commit()\n");
    if (m == GM_END || m == GM_EACH || m == GM_NO_COMMIT) put(x, in, "T.cp_async_wait(0)\n");
    if (m == GM_WAIT1) put(x, in, "T.cp_async_wait(1)\n");
}

static void print_copy_loop(const draw *d, text *x, int round) {
    char dst[1024], chunk[16];
    int in = put_threads(d, x, 2);
    if (round == 0 && d->store_t >= 0) put_store(d, x, in, NULL);
    snprintf(chunk, sizeof chunk, "%d", round ? d->shift2 / (d->a3 ? d->acols : 1) : 0);
    put_copies(d, x, in, chunk);
    put_groups(x, in, d->mode[round]);
    if (round || !d->own_read) return;
    char last[16];
    snprintf(last, sizeof last, "%d", d->nj - 1);
    dst_str(d, d->tid, last, "i", 1, dst, sizeof dst);
    put(x, in, "if %s < %d:\n", d->tid, d->k);
    put(x, in + 1, "for i in T.serial(%d):\n", d->n);
    put(x, in + 2, "O[bx * %d + %d + %s * %d + i] = S[%s]\n", d->opb, d->off_own, d->tid, d->n,
        dst);
}

/* The S index reader r reads at (tid, i). */
static void reader_index(const draw *d, const reader *r, char *o, size_t n) {
    char q[160], t[200], j[200], k[200];
    int nw = d->k * d->nj * d->n;
    if (r->kind == RD_STORED) {
        store_str(d, o, n);
        return;
    }
    if (r->kind == RD_LAST) {
        int lt, lj;
        last_slot(d, &lt, &lj);
        snprintf(t, sizeof t, "%d", lt);
        snprintf(j, sizeof j, "%d", lj);
        snprintf(k, sizeof k, "1 + (%s * %d + i) %% %d", d->tid, r->r, d->n - 1);
        dst_str(d, t, j, k, 1, o, n);
        return;
    }
    if (r->kind == RD_AFFINE) {
        char c[256], st[96];
        stage_str(d, st, sizeof st);
        form_str(&r->raw_c, d->tid, "i", c, sizeof c);
        if (d->s3)
            snprintf(o, n, "%s%d, %d + %s * %d, %s", st, r->raw_p, r->raw_r.k0, d->tid,
                     r->raw_r.kt, c);
        else if (d->two_d)
            snprintf(o, n, "%s%d + %s * %d, %s", st, r->raw_r.k0, d->tid, r->raw_r.kt, c);
        else snprintf(o, n, "%s%s", st, c);
        return;
    }
    int per = r->kind == RD_TAIL ? d->n - 1 : d->n;
    snprintf(q, sizeof q, "(%s * %d + i + %d) %% %d", d->tid, r->r, r->rot, nw / d->n * per);
    snprintf(t, sizeof t, "(%s // %d)", q, d->nj * per);
    snprintf(j, sizeof j, "(%s // %d %% %d)", q, per, d->nj);
    snprintf(k, sizeof k, "%s%s %% %d", r->kind == RD_TAIL ? "1 + " : "", q, per);
    dst_str(d, t, j, k, 1, o, n);
}

/* Reader r's loop (guarded) at indent in, into O from `at` on. */
static void put_reads(const draw *d, const reader *r, text *x, int in, const char *at) {
    char idx[1200];
    reader_index(d, r, idx, sizeof idx);
    if (r->k2 < d->nt) put(x, in++, "if %s < %d:\n", d->tid, r->k2);
    put(x, in, "for i in T.serial(%d):\n", r->r);
    put(x, in + 1, "O[%s + %s * %d + i] = S[%s]\n", at, d->tid, r->r, idx);
}

static void print_reader(const draw *d, text *x, int round) {
    char at[64];
    int in = put_threads(d, x, 2);
    if (d->mode[round] == GM_WAIT_READER) put(x, in, "T.cp_async_wait(0)\n");
    snprintf(at, sizeof at, "bx * %d + %d", d->opb, d->off_rd[round]);
    put_reads(d, &d->rd[round], x, in, at);
}

static void put_ldm(const draw *d, text *x, int in, const char *at);

/* After a pipeline iteration's wait, in the stage it reads (stage_of):
 * thread p's store, the reads, an ldmatrix, and a second round of copies
 * (chunk kk shifted, into the stage read) with its reads. */
static void put_pipe_body(const draw *d, text *x, int in) {
    char at[96], chunk[64];
    if (d->pipe_store) put_store(d, x, in, "kk");
    snprintf(at, sizeof at, "bx * %d + kk * %d + %d", d->opb, d->pit, d->off_ldm);
    if (d->ldm && d->ldm_first) put_ldm(d, x, in, at);
    snprintf(at, sizeof at, "bx * %d + kk * %d", d->opb, d->pit); /* off_rd[0] is 0 */
    if (!d->ldm_only) put_reads(d, &d->rd[0], x, in, at);
    snprintf(at, sizeof at, "bx * %d + kk * %d + %d", d->opb, d->pit, d->off_ldm);
    if (d->ldm && !d->ldm_first) put_ldm(d, x, in, at);
    if (!d->round2) return;
    int u = d->a3 ? d->acols : 1;
    snprintf(chunk, sizeof chunk, "kk * %d + %d", d->cs / u, d->shift2 / u);
    put_copies(d, x, in, chunk);
    put_groups(x, in, d->mode[1]);
    if (d->mode[1] == GM_WAIT_READER) put(x, in, "T.cp_async_wait(0)\n");
    snprintf(at, sizeof at, "bx * %d + kk * %d + %d", d->opb, d->pit, d->off_rd[1]);
    put_reads(d, &d->rd[1], x, in, at);
}

/* The pipeline (make_pipe): prologue, then the serial loop over chunks. */
static void print_pipe(const draw *d, text *x) {
    char stage[64], chunk[64];
    int in = put_threads(d, x, 2), u = d->a3 ? d->acols : 1; /* chunks of A in rows when 3-D */
    put(x, in, "for s in T.serial(%d):\n", d->pre);
    stage_of = "s";
    snprintf(chunk, sizeof chunk, "s * %d", d->cs / u);
    put_copies(d, x, in + 1, chunk);
    put(x, in + 1, "T.cp_async_commit()\n");
    put(x, in, "for kk in T.serial(%d):\n", d->kn);
    put(x, in + 1, "if kk + %d < %d:\n", d->pre, d->kn);
    snprintf(stage, sizeof stage, "(kk + %d) %% %d", d->pre, d->stages);
    stage_of = stage;
    snprintf(chunk, sizeof chunk, "(kk + %d) * %d", d->pre, d->cs / u);
    put_copies(d, x, in + 2, chunk);
    put(x, in + 1, "T.cp_async_commit()\n");
    put(x, in + 1, "T.cp_async_wait(%d)\n", d->wn);
    snprintf(stage, sizeof stage, "(kk + %d) %% %d", d->roff, d->stages);
    put_pipe_body(d, x, in + 1);
    stage_of = NULL;
}

/* Lane tid's ldmatrix row: chunk c of the copied rows. */
static void ldm_index(const draw *d, char *o, size_t n) {
    char c[128], t[160], j[160], k[200];
    snprintf(c, sizeof c, "(%s %% 32 + %s // 32 * 5 + %d) %% %d", d->tid, d->tid, d->lrot,
             d->nchunk);
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

/* The ldmatrix at indent in (in stage stage_of of a pipeline), its
 * registers read into O from `at` on. */
static void put_ldm(const draw *d, text *x, int in, const char *at) {
    int per = (dts[d->dt].bytes == 4 ? 1 : 2) * d->num;
    char row[1024];
    ldm_index(d, row, sizeof row);
    put(x, in, "L = T.allocate((%d,), \"%s\", scope=\"local\")\n", per, dts[d->dt].name);
    put(x, in, "T.ldmatrix(%d, %d, T.address_of(L[0]), T.address_of(S[%s]))\n", d->trans, d->num,
        row);
    put(x, in, "for i in T.serial(%d):\n", d->lread);
    put(x, in + 1, "O[%s + %s * %d + i] = L[i]\n", at, d->tid, per);
}

static void print_ldm(const draw *d, text *x) {
    char at[64];
    snprintf(at, sizeof at, "bx * %d + %d", d->opb, d->off_ldm);
    put_ldm(d, x, put_threads(d, x, 2), at);
}

static void print_case(const draw *d, char *buf, size_t n) {
    text x = {buf, n, 0};
    char shape[64], ashape[64], sbuf[64] = "";
    if (d->s3)
        snprintf(shape, sizeof shape, "(%d, %d, %d)", d->srows / d->rows, d->rows, d->scols);
    else if (d->two_d) snprintf(shape, sizeof shape, "(%d, %d)", d->srows, d->scols);
    else snprintf(shape, sizeof shape, "(%d,)", d->scols);
    if (d->a3)
        snprintf(ashape, sizeof ashape, "(%d, %d, %d)", d->nb, d->pb / d->acols, d->acols);
    else snprintf(ashape, sizeof ashape, "(%d,)", d->na);
    if (d->rsb == RSB_LOADED)
        snprintf(sbuf, sizeof sbuf, ", B: T.Buffer((%d,), \"int32\")", d->nt * d->nj);
    put(&x, 0, "@T.prim_func\n");
    put(&x, 0, "def cpf(A: T.Buffer(%s, \"%s\"), O: T.Buffer((%d,), \"%s\")%s):\n", ashape,
        dts[d->st].name, d->no, dts[d->dt].name, sbuf);
    put(&x, 1, "for bx in T.thread_binding(0, %d, thread=\"blockIdx.x\"):\n", d->nb);
    put(&x, 2, "S = T.allocate(%s, \"%s\", scope=\"shared\")\n", shape, dts[d->dt].name);
    if (d->pipe) {
        print_pipe(d, &x);
        return;
    }
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
    F_WAW = 128,     /* a write, in a later statement of the same thread loop, of an element
                      * another thread wrote: thread_sync orders only a read and a write
                      * (as TVM's ThreadSync), so race_check may refuse it where no read
                      * between put a barrier; accepted, it must be right */
};

typedef struct model {
    const draw *d;
    int size, eb;
    uint8_t *s, *a, *o;
    bool *w, *fl; /* element written; element's copy still in flight */
    int *wr;      /* this phase's writer: -1 none, a thread, -2 several */
    int *grp;     /* a pipeline's element in flight: the group of its copy */
    int *lw;      /* the last thread that wrote the element in this thread loop (-1 none) */
    int ng;       /* a pipeline's groups committed so far (the next copy's group) */
    unsigned flags;
} model;

static void note_write(model *m, int e, int t, bool copy_again) {
    if (m->wr[e] >= 0 && m->wr[e] != t) m->flags |= F_RACE;
    if (m->wr[e] == -1 && m->lw[e] >= 0 && m->lw[e] != t) m->flags |= F_WAW;
    m->lw[e] = t;
    if (m->wr[e] == t && copy_again) m->flags |= F_UNDEF;
    if (m->fl[e]) m->flags |= F_UNDEF;
    m->wr[e] = m->wr[e] == -1 || m->wr[e] == t ? t : -2;
}

/* Copy (t, j) from A[src0 + ...] into S[dst0 + ...] (dst0: a pipeline's
 * stage); `again`: a second copy of the thread into an element in this
 * phase has no defined result (both may be in flight). */
static void model_copy(model *m, int src0, int dst0, int t, int j, bool in_flight, bool again) {
    const draw *d = m->d;
    int row = crow(d, t, j), col = form_at(&d->dc, t, j);
    int flat = dst0 + row * d->cols + col, es = dts[d->st].bytes;
    int sidx = src0 + src_at(d, d->rev ? d->nt - 1 - t : t, j);
    int sb = copy_sb(d, t, j);
    if (sb < 0 || sb > d->bytes || sb % es) { /* a run-time src_bytes the intrinsic refuses */
        m->flags |= F_INTERP | F_RUNTIME;
        return;
    }
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
    for (int e = flat; e < flat + d->n; e++) {
        note_write(m, e, t, again && m->wr[e] == t);
        m->w[e] = true;
        m->fl[e] = in_flight;
        m->grp[e] = m->ng;
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
    int e = row * d->scols + col;
    if (e < 0 || e >= m->size) {
        m->flags |= F_INTERP | F_RUNTIME;
        return;
    }
    if (row < 0 || row >= d->srows || col < 0 || col >= d->scols) m->flags |= F_INTERP | F_FLAT;
    if (!m->w[e]) m->flags |= F_INTERP | F_RUNTIME;
    if (m->fl[e]) m->flags |= F_RUNTIME;
    memcpy(m->o + (size_t)at * (size_t)m->eb, m->s + (size_t)e * (size_t)m->eb, (size_t)m->eb);
}

static void model_own_read(model *m, int bx, int t) {
    const draw *d = m->d;
    if (!d->own_read || t >= d->k) return;
    /* No race of its own: another thread's write of an element thread t
     * copied is a write-write race already (note_write), and where t's
     * copy failed (misaligned, ...) the case fails at run time; the read
     * itself gets thread_sync's barrier after the wait.  (Flagging a race
     * here wrongly classified a store read back past a misaligned copy:
     * seed 2512052301 case 27423.) */
    for (int i = 0; i < d->n; i++) {
        int row = crow(d, t, d->nj - 1), col = form_at(&d->dc, t, d->nj - 1) + i;
        model_read(m, row, col, bx * d->opb + d->off_own + t * d->n + i);
    }
}

static void model_copy_loop(model *m, int bx, int round) {
    const draw *d = m->d;
    for (int e = 0; e < m->size; e++) m->wr[e] = m->lw[e] = -1; /* a thread loop of its own */
    for (int t = 0; t < d->nt; t++) {
        if (round == 0 && t == d->store_t) {
            int e = d->store_r * d->cols + d->store_c;
            note_write(m, e, t, false);
            put_val(d->dt, d->store_v, m->s + (size_t)e * (size_t)m->eb);
            m->w[e] = true;
        }
        for (int j = 0; j < d->nj && t < d->k; j++)
            model_copy(m, bx * d->pb + (round ? d->shift2 : 0), 0, t, j,
                       left_in_flight(d->mode[round], j, d->nj), d->mode[round] != GM_EACH_WAIT);
    }
    /* own reads after the wait */
    for (int t = 0; t < d->nt && round == 0; t++) model_own_read(m, bx, t);
}

/* Reader r's reads of stage `stage` (0: not a pipeline) into O[at + ...]. */
static void model_reads(model *m, const reader *r, int stage, int at) {
    const draw *d = m->d;
    int nw = d->k * d->nj * d->n;
    for (int t = 0; t < r->k2; t++)
        for (int i = 0; i < r->r; i++) {
            int row = d->store_r, col = d->store_c, per = d->n - (r->kind == RD_TAIL);
            int q = (t * r->r + i + r->rot) % (nw / d->n * per);
            if (r->kind == RD_AFFINE) {
                row = d->two_d ? form_at(&r->raw_r, t, 0) : 0, col = form_at(&r->raw_c, t, i);
                if (d->s3 && row >= d->rows) m->flags |= F_INTERP | F_FLAT; /* past its plane */
                row += r->raw_p * d->rows;
            }
            if (r->kind == RD_LAST) {
                int lt, lj;
                last_slot(d, &lt, &lj);
                row = crow(d, lt, lj);
                col = form_at(&d->dc, lt, lj) + 1 + (t * r->r + i) % (d->n - 1);
            }
            if (r->kind == RD_SLOTS || r->kind == RD_TAIL) {
                int tt = q / (d->nj * per), jj = q / per % d->nj;
                row = crow(d, tt, jj);
                col = form_at(&d->dc, tt, jj) + (r->kind == RD_TAIL) + q % per;
            }
            if (d->two_d) row += stage * prows(d);
            else col += stage * d->cols;
            model_read(m, row, col, at + t * r->r + i);
        }
}

static void model_reader(model *m, int bx, int round) {
    const draw *d = m->d;
    if (d->mode[round] == GM_WAIT_READER || round == 1) /* every group waited for */
        memset(m->fl, 0, (size_t)m->size);
    model_reads(m, &d->rd[round], 0, bx * d->opb + d->off_rd[round]);
}

/* Where stage `stage` of a pipeline's S begins (flat). */
static int stage_base(const draw *d, int stage) {
    return stage * (d->two_d ? prows(d) * d->cols : d->cols);
}

/* A pipeline's copies of chunk c into stage c % stages (one issue: a
 * phase of its own, see make_pipe), committed as group m->ng. */
static void model_pipe_issue(model *m, int bx, int c) {
    const draw *d = m->d;
    int dst0 = stage_base(d, c % d->stages);
    for (int e = 0; e < m->size; e++) m->wr[e] = -1;
    for (int t = 0; t < d->k; t++)
        for (int j = 0; j < d->nj; j++) model_copy(m, bx * d->pb + c * d->cs, dst0, t, j, true, true);
}

/* cp_async_wait(n) with m->ng groups committed: the older ones land. */
static void model_pipe_wait(model *m, int n) {
    for (int e = 0; e < m->size; e++)
        if (m->fl[e] && m->grp[e] < m->ng - n) m->fl[e] = false;
}

/* Thread p's store into stage `stage` of a pipeline in iteration kk,
 * after the wait (a phase of its own: thread_sync's barrier). */
static void model_pipe_store(model *m, int stage, int kk) {
    const draw *d = m->d;
    int e = stage_base(d, stage) + d->store_r * d->cols + d->store_c;
    for (int i = 0; i < m->size; i++) m->wr[i] = -1;
    note_write(m, e, d->store_t, false);
    put_val(d->dt, d->store_v + kk, m->s + (size_t)e * (size_t)m->eb);
    m->w[e] = true;
}

/* A pipeline's second round in iteration kk: chunk kk shifted into the
 * stage read (a phase of its own), its groups counted as they are
 * committed (an uncommitted copy joins the next commit's group). */
static void model_pipe_round2(model *m, int bx, int kk, int stage) {
    const draw *d = m->d;
    int md = d->mode[1], src0 = bx * d->pb + kk * d->cs + d->shift2;
    for (int e = 0; e < m->size; e++) m->wr[e] = -1;
    for (int j = 0; j < d->nj; j++) {
        for (int t = 0; t < d->k; t++) model_copy(m, src0, stage_base(d, stage), t, j, true, false);
        if (md == GM_EACH || md == GM_EACH_WAIT || md == GM_WAIT1) m->ng++;
        if (md == GM_EACH_WAIT) model_pipe_wait(m, 0);
    }
    if (md == GM_END || md == GM_NO_WAIT || md == GM_WAIT_READER) m->ng++;
    if (md == GM_END || md == GM_EACH || md == GM_NO_COMMIT || md == GM_WAIT_READER)
        model_pipe_wait(m, 0);
    if (md == GM_WAIT1) model_pipe_wait(m, 1);
}

static void model_ldm_warp(model *m, int w, int stage, int at0);

static void model_pipe(model *m, int bx) {
    const draw *d = m->d;
    m->ng = 0;
    for (int s = 0; s < d->pre; s++, m->ng++) model_pipe_issue(m, bx, s);
    for (int kk = 0; kk < d->kn; kk++) {
        int stage = (kk + d->roff) % d->stages, at = bx * d->opb + kk * d->pit;
        if (kk + d->pre < d->kn) model_pipe_issue(m, bx, kk + d->pre);
        m->ng++;
        model_pipe_wait(m, d->wn);
        if (d->pipe_store) model_pipe_store(m, stage, kk);
        for (int w = 0; d->ldm && d->ldm_first && w < d->nt / 32; w++)
            model_ldm_warp(m, w, stage, at + d->off_ldm);
        if (!d->ldm_only) model_reads(m, &d->rd[0], stage, at + d->off_rd[0]);
        for (int w = 0; d->ldm && !d->ldm_first && w < d->nt / 32; w++)
            model_ldm_warp(m, w, stage, at + d->off_ldm);
        if (!d->round2) continue;
        model_pipe_round2(m, bx, kk, stage);
        model_reads(m, &d->rd[1], stage, at + d->off_rd[1]);
    }
}

/* Lane tid's row address: S[*r, *col]. */
static void ldm_addr(const draw *d, int tid, int *r, int *col) {
    int c = (tid % 32 + tid / 32 * 5 + d->lrot) % d->nchunk;
    if (!d->cgroups) {
        *r = crow(d, c / d->nj, c % d->nj), *col = form_at(&d->dc, c / d->nj, c % d->nj);
        return;
    }
    int t = c / d->cgroups;
    *r = crow(d, t, 0), *col = form_at(&d->dc, t, 0) + c % d->cgroups * d->chunk_n;
}

/* Lane tid's row (16 bytes) of stage `stage` (0 outside a pipeline) into
 * row[]; false (flagged) when it fails. */
static bool ldm_row(model *m, int tid, int stage, uint8_t *row) {
    const draw *d = m->d;
    int r, col;
    ldm_addr(d, tid, &r, &col);
    int flat = stage_base(d, stage) + r * d->cols + col;
    if (flat < 0 || flat + d->chunk_n > m->size || flat * m->eb % 16) {
        m->flags |= F_RUNTIME;
        return false;
    }
    /* outside its dimension (a 1-D pipeline's row may run on into the next stage) */
    if (r >= prows(d) || (d->two_d ? col + d->chunk_n > d->cols
                                   : stage * d->cols + col + d->chunk_n > d->scols))
        m->flags |= F_FLAT;
    for (int e = flat; e < flat + d->chunk_n; e++)
        if (!m->w[e] || m->fl[e]) m->flags |= F_RUNTIME;
    memcpy(row, m->s + (size_t)flat * (size_t)m->eb, 16);
    return true;
}

/* One warp's ldmatrix (the simulator's simw_ldmatrix, on bytes) of stage
 * `stage`, its registers into O from at0 on. */
static void model_ldm_warp(model *m, int w, int stage, int at0) {
    const draw *d = m->d;
    uint8_t rows[32][16];
    for (int l = 0; l < 8 * d->num; l++)
        if (!ldm_row(m, 32 * w + l, stage, rows[l])) return;
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
                int at = at0 + (32 * w + l) * per * d->num + per * i + j;
                memcpy(m->o + (size_t)at * (size_t)m->eb, src, (size_t)m->eb);
            }
}

static void model_block(model *m, int bx) {
    const draw *d = m->d;
    memset(m->w, 0, (size_t)m->size);
    memset(m->fl, 0, (size_t)m->size);
    for (int e = 0; e < m->size; e++) m->lw[e] = -1;
    if (d->pipe) {
        model_pipe(m, bx);
        return;
    }
    model_copy_loop(m, bx, 0);
    model_reader(m, bx, 0);
    for (int w = 0; d->ldm && w < d->nt / 32; w++)
        model_ldm_warp(m, w, 0, bx * d->opb + d->off_ldm);
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
    int pipes, pipes_compared, ty_compared, rsb_compared, rsb_failed, ptx;
    int s3_compared, a3_compared, pldm_compared, pstore_compared, pr2_compared, pr2_failed;
    int waw_compared;
    int refused[6], sim_failed;
    /* the PTX in the PTX interpreter: compared with the computation (with
     * ldmatrix), failing as they should, run-time failures it does not
     * see (run, not compared), undefined or ill-formed (not run) */
    int ptx_compared, ptx_ldm, ptx_failed, ptx_unseen, ptx_skipped;
} tally;
static const char *const why_name[6] = {"malformed", "race", "run-time", "undefined",
                                        "guard span", "write after write"};

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
    bool waw = (fl & F_WAW) && strstr(e, "race_check: ") && strstr(e, "(write) and ") &&
               strstr(e, ") (write) may touch");
    int k = fl & F_RACE ? 1 : fl & (F_RUNTIME | F_FLAT) ? 2 : fl & F_UNDEF ? 3 : span ? 4
          : waw ? 5 : -1;
    if (k < 0) case_fail(c, src, NULL, "a well-formed, race-free kernel refused: %s", e);
    t->refused[k]++;
}

/* The arguments: A, O (0x5a bytes) and, for loaded src_bytes, B. */
static int case_args(const model *m, uint8_t *o, tir_arg *args) {
    memset(o, 0x5a, (size_t)m->d->no * (size_t)m->eb);
    args[0] = (tir_arg){.data = m->a}, args[1] = (tir_arg){.data = o};
    args[2] = (tir_arg){.data = (void *)m->d->sbtab};
    return m->d->rsb == RSB_LOADED ? 3 : 2;
}

static bool run_interp(tir_ctx *ctx, const tir_prim_func *f, const model *m, uint8_t *o) {
    tir_arg args[3];
    int n = case_args(m, o, args);
    return tir_interp_run(ctx, f, n, args, NULL) == TIR_OK;
}

static bool run_sim(tir_ctx *ctx, const tir_prim_func *k, const model *m, uint8_t *o) {
    tir_arg args[3];
    int n = case_args(m, o, args);
    tir_sim_opts so = {.check_uninit = true, .check_global_races = true};
    return tir_sim_run(ctx, k, n, args, &so, NULL) == TIR_OK;
}

/* The interpreter on the unlowered function, where it can run it: as the
 * computation says. */
static void check_interp(tir_ctx *ctx, const tir_prim_func *f, const model *m, long c,
                         const char *src, tally *t) {
    /* a pipeline's reads of other threads' copies need the barriers
     * lowering places: the interpreter runs one thread's loop at a time */
    if (m->d->ldm || m->d->pipe || (m->flags & (F_MALFORMED | F_RACE | F_UNDEF))) return;
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
        t->rsb_failed += m->d->rsb != RSB_NONE;
        t->pr2_failed += m->d->pipe_r2;
        if (getenv("CF_VERBOSE")) printf("# case %ld: simulator %.200s\n", c, tir_ctx_error(ctx));
    } else if (!(fl & (F_UNDEF | F_FLAT))) {
        if (!ok)
            case_fail(c, src, tir_print(ctx, k), "accepted, but the simulator: %s",
                      tir_ctx_error(ctx));
        if (memcmp(o, m->o, ob))
            case_fail(c, src, tir_print(ctx, k), "the simulator and the computation differ");
        t->compared++;
        t->ldm += m->d->ldm;
        t->pipes_compared += m->d->pipe;
        t->ty_compared += m->d->ny > 1;
        t->rsb_compared += m->d->rsb != RSB_NONE;
        t->s3_compared += m->d->s3, t->a3_compared += m->d->a3;
        t->pldm_compared += m->d->pipe_ldm, t->pstore_compared += m->d->pipe_store;
        t->pr2_compared += m->d->pipe_r2;
        t->waw_compared += (fl & F_WAW) != 0;
    }
    free(o);
}

/* The PTX of an accepted kernel in the PTX interpreter (tests/
 * ptx_interp.c: cp.async copies at issue, ldmatrix per warp) on the
 * simulator's inputs (A, O as 0x5a bytes, B): a well-formed case must run
 * and leave O as the computation does, byte for byte.  One that fails at
 * run time is counted as failing there too, or, where the interpreter
 * runs it, as unseen: copying at issue and filling shared memory with
 * 0xff, it cannot tell a read of an unwritten element or of a copy in
 * flight (misaligned and out-of-bounds accesses it reports).  Undefined
 * (overlapping copies in flight) and ill-formed (F_FLAT) cases are not
 * run.  CF_PTX=1 prints the PTX of a failing case. */
static void run_ptx(tir_ctx *ctx, const tir_prim_func *k, const tir_module *mod, const model *m,
                    long c, const char *src, tally *t) {
    if (m->flags & (F_UNDEF | F_FLAT)) {
        t->ptx_skipped++;
        return;
    }
    const draw *d = m->d;
    size_t ob = (size_t)d->no * (size_t)m->eb;
    uint8_t *o = malloc(ob);
    tir_arg args[3];
    int n = case_args(m, o, args);
    size_t bytes[3] = {(size_t)d->na * (size_t)dts[d->st].bytes, ob, (size_t)d->nt * (size_t)d->nj * 4};
    char e[1024] = "";
    if (mod->nparams != n) snprintf(e, sizeof e, "the module has %d parameters, not %d", mod->nparams, n);
    bool ok = !e[0] && dc_run(ctx, mod, args, bytes, e, sizeof e) == 0;
    if (getenv("CF_VERBOSE")) printf("# case %ld: PTX interpreter %s\n", c, ok ? "ok" : e);
    if (m->flags & F_RUNTIME) {
        if (ok) t->ptx_unseen++;
        else t->ptx_failed++;
    } else {
        for (size_t i = 0; ok && !e[0] && i < ob; i++)
            if (o[i] != m->o[i])
                snprintf(e, sizeof e, "O differs from the computation at byte %zu (element %zu): "
                         "0x%02x, want 0x%02x", i, i / (size_t)m->eb, o[i], m->o[i]);
        if (!ok || e[0]) {
            if (getenv("CF_PTX")) fprintf(stderr, "# PTX:\n%s\n", mod->ptx);
            free(o);
            case_fail(c, src, tir_print(ctx, k), "the PTX in the PTX interpreter: %s", e);
        }
        t->ptx_compared++;
        t->ptx_ldm += d->ldm;
    }
    free(o);
}

/* PTX of an accepted kernel (d->ptx: an eighth of the cases): codegen
 * must take it and emit the copies, commits, waits and ldmatrix it has,
 * and it runs in the PTX interpreter (run_ptx).  One that fails at run
 * time may be refused instead (cleanly: .trans of 32-bit rows), or
 * compiled (a misaligned copy is the GPU's to meet). */
static void check_ptx(tir_ctx *ctx, const tir_prim_func *k, const model *m, long c,
                      const char *src, tally *t) {
    const draw *d = m->d;
    if (!d->ptx) return;
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.arch = "sm_80", o.no_cache = true; /* cp.async and ldmatrix: sm_80 on */
    const tir_module *mod = NULL;
    if (tir_codegen(ctx, k, &o, &mod) != TIR_OK) {
        const char *e = tir_ctx_error(ctx);
        if (!(m->flags & F_RUNTIME) || !e || !strstr(e, "codegen: ") ||
            strstr(e, "internal error"))
            case_fail(c, src, tir_print(ctx, k), "codegen: %s", e ? e : "(no message)");
        return;
    }
    bool waits = strstr(src, "T.cp_async_wait("), commits = strstr(src, "T.cp_async_commit(");
    if (!strstr(mod->ptx, "cp.async.c") || (waits && !strstr(mod->ptx, "cp.async.wait_group")) ||
        (commits && !strstr(mod->ptx, "cp.async.commit_group")))
        case_fail(c, src, tir_print(ctx, k), "the PTX lacks a cp.async copy, commit or wait:\n%s",
                  mod->ptx);
    if (d->ldm && !strstr(mod->ptx, "ldmatrix.sync"))
        case_fail(c, src, tir_print(ctx, k), "the PTX has no ldmatrix:\n%s", mod->ptx);
    t->ptx++;
    run_ptx(ctx, k, mod, m, c, src, t);
}

static void one_case(uint64_t seed, long c, tally *t) {
    static draw d;
    draw_case(&d, seed, c);
    static char src[32768];
    print_case(&d, src, sizeof src);
    const char *show = getenv("CF_SHOW");
    if (show && atol(show) == c) printf("%s", src);
    model m = {.d = &d, .size = d.srows * d.scols, .eb = dts[d.dt].bytes};
    m.s = pattern((size_t)m.size * (size_t)m.eb, 0), m.o = pattern((size_t)d.no * (size_t)m.eb, 0x5a);
    m.a = pattern((size_t)d.na * (size_t)dts[d.st].bytes, 0);
    m.w = calloc((size_t)m.size, 1), m.fl = calloc((size_t)m.size, 1);
    m.wr = calloc((size_t)m.size, sizeof(int)), m.grp = calloc((size_t)m.size, sizeof(int));
    m.lw = calloc((size_t)m.size, sizeof(int));
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
        check_ptx(ctx, k, &m, c, src, t);
    }
    t->pipes += d.pipe;
    tir_ctx_destroy(ctx);
    free(m.s), free(m.o), free(m.a), free(m.w), free(m.fl), free(m.wr), free(m.grp), free(m.lw);
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
    for (int i = 0; i < 6; i++) printf(" %d %s", t.refused[i], why_name[i]);
    printf("\n# %d pipelines (%d compared), %d compared with threadIdx.y, run-time src_bytes: "
           "%d compared, %d failing as they should; %d compiled to PTX\n",
           t.pipes, t.pipes_compared, t.ty_compared, t.rsb_compared, t.rsb_failed, t.ptx);
    printf("# PTX interpreter: %d runs compared with the computation (%d with ldmatrix), %d failing "
           "as they should, %d run-time failures it does not see (unwritten or in-flight reads), "
           "%d undefined or ill-formed not run\n",
           t.ptx_compared, t.ptx_ldm, t.ptx_failed, t.ptx_unseen, t.ptx_skipped);
    printf("# compared: %d with a 3-D S, %d with a 3-D A; pipelines with ldmatrix %d, with a "
           "store %d (%d writing after another thread), with a second round %d (%d failing in "
           "the simulator as they should)\n",
           t.s3_compared, t.a3_compared, t.pldm_compared, t.pstore_compared, t.waw_compared,
           t.pr2_compared, t.pr2_failed);
    if (failed) fail_msg("%d of %ld cases failed (CF_KEEP_GOING)", failed, cases_wanted);
    assert_true(t.compared > 0 && t.barriers > 0 && t.refused[0] + t.refused[1] > 0);
    /* the PTX runs must not all have gone to the uncompared counts */
    if (t.ptx >= 20) assert_true(t.ptx_compared > 0);
}

int main(int argc, char **argv) {
    fuzz_args(argc, argv, &cases_wanted, &seed_wanted);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_spans_vs_simulator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
