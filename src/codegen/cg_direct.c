/* cg_direct.c: PTX printed directly from a lowered kernel, without LLVM.
 *
 * Issue 13 asks a tuned kernel to compile in 20 ms; through LLVM the
 * tiling rule's 128x128 kernel takes ~30 ms of optimisation and instruction
 * selection on its ~2,900 instructions (docs/performance.md, "compile
 * time"), and nearly all of that work is redone by the PTX assembler anyway
 * (ptxas: CSE, LICM, strength reduction, scheduling, register allocation).
 * So for the kernels it covers, this emitter prints PTX in one walk: index
 * arithmetic folded where it is constant and built once per basic block,
 * unrolled loops unrolled, serial loops rolled (a kernel with a loop
 * small enough for LLVM's O3 unroller to unroll goes to LLVM, whose
 * kernels ran faster; with direct_unroll (the option for every kernel, or
 * the kernel's direct_unroll attr) such loops are unrolled here as
 * that unroller would for NVPTX: fully, or partially by 2-8 copies with a
 * remainder, partial_count, deciding on the size of a trial emission
 * that a snapshot undoes, dsnap), local arrays as one virtual
 * register per element (every index must be a constant after unrolling),
 * addresses as a register plus a constant offset, and a*b + c on float32
 * as one fma.rn.f32.  MINITIR_CG_PIPELINE=direct-all (direct_all_loops)
 * leaves every serial loop of any size rolled instead.
 *
 * The subset (everything else makes tir_codegen fall back to LLVM, with the
 * reason in tir_module.direct_refusal): int32/int64 index arithmetic,
 * float32 data (add, sub, mul, div, min, max, fma contraction), int32 data
 * without float comparisons, dense vector accesses of up to 16 bytes, the
 * zero-filling and predicated copies of ragged tiles, shared and local
 * arrays, syncthreads and cp.async.  Integer min/max of a negation, float
 * comparisons, 8/16-bit types and math calls are outside it, which keeps
 * the PTX assembler patterns cg_ptxas.c works around out of it; so are
 * local arrays indexed by a loop that LLVM would leave rolled (it keeps
 * them in local memory, which this emitter has no form for).  The
 * semantics are docs/lowered-ir.md's, operation by operation as cg_emit.c
 * gives them to LLVM; tests/test_ptx_interp.c runs both through a PTX
 * interpreter (and ptxas where installed), and test_gpu_fuzz and
 * test_expr_fuzz run every kernel this emitter takes through it
 * (tests/direct_check.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

enum { RC_P, RC_R, RC_RD, RC_F, RC_N }; /* register classes: pred, b32, b64, f32 */
static const char *const rc_name[RC_N] = {"%p", "%r", "%rd", "%f"};
static const char *const rc_decl[RC_N] = {".pred", ".b32", ".b64", ".f32"};

/* An operand: a register or an immediate of class rc. */
typedef struct dop {
    bool imm;
    bool mut; /* a register written in place: a local array's element */
    int8_t rc;
    int32_t reg;
    int64_t i; /* integer and predicate immediates */
    uint32_t f; /* float32 immediates: the bits */
} dop;

enum { DV_MAX = 4 }; /* lanes of a vector value (16 bytes of float32) */
typedef struct dval {
    int lanes;
    dop l[DV_MAX];
} dval;

typedef struct dtext {
    char *s;
    size_t n, cap;
} dtext;

typedef struct dvar {
    const tir_var *var;
    dop val;
    cg_mod mod;
    int level; /* the serial loops around its binding (index_sum's order) */
} dvar;

enum { SP_GLOBAL, SP_SHARED, SP_LOCAL };
typedef struct dbuf {
    const tir_buffer *buf;
    int space;
    dop base; /* global and shared: the data pointer (b64) */
    unsigned align;
    bool readonly;
    int64_t n;     /* local: elements */
    int32_t *home; /* local: each element's register, -1 before its first use */
    int rc;        /* local: the elements' class */
    const char *sym; /* static shared: its PTX symbol */
} dbuf;

/* Integer operations built once and reused where they dominate: an entry
 * is valid while the region (loop body, branch) it was built in is open. */
typedef struct dcse {
    uint32_t region;
    int op;
    dop a, b, r;
} dcse;
enum { DCSE_SIZE = 2039 };

/* A serial loop being emitted: what is hoisted out of it goes to its
 * preheader, valid in the region around it. */
enum { DL_MAXIND = 16 };
typedef struct dind {
    dop p, base, x;
    bool has_x;
    int64_t coeff, step;
} dind;
typedef struct dloop {
    dtext hoist;
    uint32_t region;
    const tir_var *var; /* its variable, from min */
    dop min;
    /* induction pointers (loop strength reduction): p advances by step
     * bytes per iteration; key: buffer base, invariant index x, coeff */
    int nind;
    dind ind[DL_MAXIND];
} dloop;

typedef struct dg {
    tir_ctx *ctx;
    const tir_prim_func *f;
    const cg_info *info;
    const tir_codegen_opts *opts;
    dtext pro, body; /* the entry's parameter loads, and everything else */
    dtext *out;      /* where instructions go: body, a loop's body or preheader */
    dloop *loops;    /* per serial loop around the emission point, outermost first */
    int caploops;
    int nreg[RC_N];
    dvar *vars;
    int nvars, capvars;
    dbuf *bufs;
    int nbufs, capbufs;
    dtext shared_decl;
    int64_t shared_bytes;
    dop dyn_base;
    bool has_dyn;
    int nlabels;
    int64_t unrolled;
    dcse *cse;
    uint32_t region, nregions, capregions;
    bool *open;  /* per region: still open */
    int *rlevel; /* per region: its nesting */
    int depth;   /* serial loops around the emission point */
    tir_analyzer *an; /* the ranges of loop and thread variables here */
    const char *why; /* the first construct outside the subset */
    int nloops;       /* rolled loops emitted so far */
    int trials;       /* open trial emissions (dsnap) */
    struct dundo *undo; /* while one is open: what restore must put back */
    int nundo, capundo;
    struct dmemo *memo; /* the unrolling chosen per serial loop (llvm_unrolled) */
    int nmemo, capmemo;
} dg;

/* A serial loop's unrolling, chosen once: a loop inside one that a trial
 * emits and then emits again (unrolled) keeps it, as LLVM unrolls inner
 * loops before it looks at the outer ones; else a nest of small loops
 * would cost 2^depth trials. */
enum { DM_ROLLED, DM_FULL, DM_PARTIAL };
typedef struct dmemo {
    const tir_for *f;
    int kind, copies;
} dmemo;

/* A change a trial emission made outside the text it wrote: a CSE entry
 * overwritten (cse >= 0) or a local element's register assigned. */
typedef struct dundo {
    int cse;
    dcse old;
    int buf;
    int64_t k;
} dundo;

/* ------------------------------------------------------------- text */

static void put(dtext *t, const char *fmt, ...) TIR_PRINTF(2, 3);
static void put(dtext *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->n;
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? room : 0, fmt, ap);
        va_end(ap);
        TIR_ASSERT(k >= 0);
        if (t->s && (size_t)k < room) {
            t->n += (size_t)k;
            return;
        }
        size_t cap = t->cap ? t->cap : 4096;
        while (cap - t->n <= (size_t)k) cap *= 2;
        t->s = ir_xrealloc(t->s, cap);
        t->cap = cap;
    }
}

static void log_undo(dg *d, dundo u) {
    if (!d->trials) return;
    if (d->nundo == d->capundo) {
        d->capundo = d->capundo ? 2 * d->capundo : 64;
        d->undo = ir_xrealloc(d->undo, sizeof *d->undo * (size_t)d->capundo);
    }
    d->undo[d->nundo++] = u;
}

static bool refuse(dg *d, const char *why) {
    if (!d->why) d->why = why;
    return false;
}

static dop reg(dg *d, int rc) { return (dop){.rc = (int8_t)rc, .reg = d->nreg[rc]++}; }
static dop imm(int rc, int64_t v) { return (dop){.imm = true, .rc = (int8_t)rc, .i = v}; }
static dop fimm(float x) {
    dop o = {.imm = true, .rc = RC_F};
    memcpy(&o.f, &x, sizeof o.f);
    return o;
}

/* An operand's text (buffers of 24 bytes). */
static const char *ot(dop o, char *s) {
    if (!o.imm)
        snprintf(s, 24, "%s%d", rc_name[o.rc], o.reg);
    else if (o.rc == RC_F)
        snprintf(s, 24, "0f%08X", (unsigned)o.f);
    else
        snprintf(s, 24, "%lld", (long long)o.i);
    return s;
}

static void ins2(dg *d, const char *op, dop r, dop a) {
    char s0[24], s1[24];
    put(d->out, "\t%s \t%s, %s;\n", op, ot(r, s0), ot(a, s1));
}
static void ins3(dg *d, const char *op, dop r, dop a, dop b) {
    char s0[24], s1[24], s2[24];
    put(d->out, "\t%s \t%s, %s, %s;\n", op, ot(r, s0), ot(a, s1), ot(b, s2));
}
static void ins4(dg *d, const char *op, dop r, dop a, dop b, dop c) {
    char s0[24], s1[24], s2[24], s3[24];
    put(d->out, "\t%s \t%s, %s, %s, %s;\n", op, ot(r, s0), ot(a, s1), ot(b, s2), ot(c, s3));
}

static const char *mov_of(int rc) {
    return rc == RC_F ? "mov.f32" : rc == RC_RD ? "mov.b64" : rc == RC_P ? "mov.pred" : "mov.b32";
}

/* A new register holding o's value now. */
static dop copied(dg *d, dop o) {
    dop r = reg(d, o.rc);
    ins2(d, mov_of(o.rc), r, o);
    return r;
}

/* o, or a copy of it where it is a register written in place (a local
 * array's element): a value that must not follow later writes. */
static dop frozen(dg *d, dop o) { return o.mut ? copied(d, o) : o; }

static int label(dg *d) { return d->nlabels++; }
static void place(dg *d, int l) { put(d->out, "$L__D%d:\n", l); }

/* Opens a region (a loop body or a branch); returns the enclosing one,
 * for leave.  What is built inside is reused only inside. */
static uint32_t enter(dg *d) {
    if (d->nregions + 1 >= d->capregions) {
        d->capregions = d->capregions ? 2 * d->capregions : 64;
        d->open = ir_xrealloc(d->open, sizeof *d->open * d->capregions);
        d->rlevel = ir_xrealloc(d->rlevel, sizeof *d->rlevel * d->capregions);
    }
    uint32_t outer = d->region;
    d->region = ++d->nregions;
    d->open[d->region] = true;
    d->rlevel[d->region] = d->rlevel[outer] + 1;
    return outer;
}

static void leave(dg *d, uint32_t outer) {
    d->open[d->region] = false;
    d->region = outer;
}

/* A register holding o (an immediate is moved into one). */
static dop in_reg(dg *d, dop o) { return o.imm ? copied(d, o) : o; }

/* --------------------------------------------------------------- types */

static bool is_i32(tir_dtype t) { return t.code == TIR_TYPE_INT && t.bits == 32; }
static bool is_i64(tir_dtype t) { return t.code == TIR_TYPE_INT && t.bits == 64; }
static bool is_f32(tir_dtype t) { return t.code == TIR_TYPE_FLOAT && t.bits == 32; }
static bool is_bool(tir_dtype t) { return t.code == TIR_TYPE_BOOL; }

/* The register class of a scalar of dtype t, -1 outside the subset. */
static int rc_of(tir_dtype t) {
    if (is_i32(t)) return RC_R;
    if (is_i64(t)) return RC_RD;
    if (is_f32(t)) return RC_F;
    if (is_bool(t)) return RC_P;
    return -1;
}

/* A value wrapped to the width of class rc (two's complement). */
static int64_t wrap_to(int rc, int64_t v) {
    if (rc == RC_P) return v & 1;
    return rc == RC_R ? (int64_t)(int32_t)(uint32_t)(uint64_t)v : v;
}

/* ----------------------------------------------------------- variables */

static void push_var(dg *d, const tir_var *v, dop val, cg_mod m) {
    int level = d->depth;
    if (d->nvars == d->capvars) {
        d->capvars = d->capvars ? 2 * d->capvars : 32;
        d->vars = ir_xrealloc(d->vars, sizeof *d->vars * (size_t)d->capvars);
    }
    d->vars[d->nvars++] = (dvar){v, val, m, level};
}

static const dvar *find_var(const dg *d, const tir_var *v) {
    for (int i = d->nvars - 1; i >= 0; i--)
        if (d->vars[i].var == v) return &d->vars[i];
    return NULL;
}

static cg_mod var_mod(void *env, const tir_var *v) {
    const dvar *x = find_var(env, v);
    return x ? x->mod : CG_MOD_ANY;
}

static dbuf *find_buf(dg *d, const tir_buffer *b) {
    for (int i = 0; i < d->nbufs; i++)
        if (d->bufs[i].buf == b) return &d->bufs[i];
    return NULL;
}

static dbuf *add_buf(dg *d, const tir_buffer *b, int space) {
    if (d->nbufs == d->capbufs) {
        d->capbufs = d->capbufs ? 2 * d->capbufs : 16;
        d->bufs = ir_xrealloc(d->bufs, sizeof *d->bufs * (size_t)d->capbufs);
    }
    dbuf *x = &d->bufs[d->nbufs++];
    *x = (dbuf){.buf = b, .space = space};
    return x;
}

/* -------------------------------------------------- integer operations */

static bool dop_eq(dop a, dop b) {
    return a.imm == b.imm && a.mut == b.mut && a.rc == b.rc && a.reg == b.reg && a.i == b.i &&
           a.f == b.f;
}

/* A pure integer operation, reused within the basic block (operands that
 * are local arrays' registers change, so those are built every time). */
static dop cse_op(dg *d, int op, const char *opc, int rc, dop a, dop b, bool mutable_in) {
    uint64_t h = ((uint64_t)op * 131u + (uint64_t)(a.imm ? a.i : a.reg) * 31u + (uint64_t)a.imm) *
                     1000003u +
                 (uint64_t)(b.imm ? b.i : b.reg) * 7u + (uint64_t)b.imm + (uint64_t)b.rc * 3u;
    dcse *c = &d->cse[h % DCSE_SIZE];
    /* open and around the current region (code hoisted into a loop's
     * preheader must not use what the loop's body built) */
    if (!mutable_in && d->open[c->region] && d->rlevel[c->region] <= d->rlevel[d->region] &&
        c->op == op && dop_eq(c->a, a) && dop_eq(c->b, b))
        return c->r;
    dop r = reg(d, rc);
    ins3(d, opc, r, a, b);
    if (!mutable_in) {
        log_undo(d, (dundo){.cse = (int)(c - d->cse), .old = *c});
        *c = (dcse){d->region, op, a, b, r};
    }
    return r;
}

/* Whether o is a register whose value changes: a local array's element,
 * written in place.  (A serial loop's variable changes only at the end of
 * its body, where a basic block ends.) */
static bool is_mutable(const dg *d, dop o) {
    (void)d;
    return o.mut;
}

static int64_t fold_floordiv(int64_t a, int64_t b) { return cg_floordiv64(a, b); }

static const char *sfx(int rc) { return rc == RC_RD ? "64" : "32"; }

/* Integer binary op kind k on a and b of class rc. */
static bool int_binop(dg *d, tir_kind k, int rc, dop a, dop b, dop *out) {
    char opc[32];
    bool mut = is_mutable(d, a) || is_mutable(d, b);
    if (a.imm && b.imm) {
        int64_t x = a.i, y = b.i, v;
        switch (k) {
        case TIR_KIND_ADD: v = (int64_t)((uint64_t)x + (uint64_t)y); break;
        case TIR_KIND_SUB: v = (int64_t)((uint64_t)x - (uint64_t)y); break;
        case TIR_KIND_MUL: v = (int64_t)((uint64_t)x * (uint64_t)y); break;
        case TIR_KIND_FLOORDIV: v = fold_floordiv(x, y); break;
        case TIR_KIND_FLOORMOD: v = x - fold_floordiv(x, y) * y; break;
        case TIR_KIND_DIV: v = x / y; break;
        case TIR_KIND_MOD: v = x % y; break;
        case TIR_KIND_MIN: v = x < y ? x : y; break;
        case TIR_KIND_MAX: v = x > y ? x : y; break;
        default: return refuse(d, "an integer operation");
        }
        *out = imm(rc, wrap_to(rc, v));
        return true;
    }
    switch (k) {
    case TIR_KIND_ADD:
        if (a.imm) {
            dop t = a;
            a = b, b = t;
        }
        if (b.imm && b.i == 0) return *out = a, true;
        snprintf(opc, sizeof opc, "add.s%s", sfx(rc));
        *out = cse_op(d, k, opc, rc, a, b, mut);
        return true;
    case TIR_KIND_SUB:
        if (b.imm && b.i == 0) return *out = a, true;
        if (a.imm) a = in_reg(d, a);
        snprintf(opc, sizeof opc, "sub.s%s", sfx(rc));
        *out = cse_op(d, k, opc, rc, a, b, mut);
        return true;
    case TIR_KIND_MUL:
        if (a.imm) {
            dop t = a;
            a = b, b = t;
        }
        if (b.imm && b.i == 1) return *out = a, true;
        if (b.imm && b.i == 0) return *out = imm(rc, 0), true;
        snprintf(opc, sizeof opc, "mul.lo.s%s", sfx(rc));
        *out = cse_op(d, k, opc, rc, a, b, mut);
        return true;
    default: break;
    }
    if (!b.imm || b.i <= 0) return refuse(d, "a division by a non-constant or non-positive divisor");
    if (a.imm) a = in_reg(d, a);
    int64_t n = b.i;
    bool pow2 = (n & (n - 1)) == 0;
    if ((k == TIR_KIND_FLOORDIV || k == TIR_KIND_FLOORMOD) && pow2) {
        if (n == 1) return *out = k == TIR_KIND_FLOORDIV ? a : imm(rc, 0), true;
        if (k == TIR_KIND_FLOORMOD) {
            snprintf(opc, sizeof opc, "and.b%s", sfx(rc));
            *out = cse_op(d, k, opc, rc, a, imm(rc, n - 1), mut);
        } else {
            snprintf(opc, sizeof opc, "shr.s%s", sfx(rc));
            *out = cse_op(d, k, opc, rc, a, imm(RC_R, __builtin_ctzll((unsigned long long)n)), mut);
        }
        return true;
    }
    snprintf(opc, sizeof opc, "div.s%s", sfx(rc));
    dop q = cse_op(d, TIR_KIND_DIV, opc, rc, a, b, mut);
    snprintf(opc, sizeof opc, "rem.s%s", sfx(rc));
    dop r = cse_op(d, TIR_KIND_MOD, opc, rc, a, b, mut);
    if (k == TIR_KIND_DIV) return *out = q, true;
    if (k == TIR_KIND_MOD) return *out = r, true;
    /* floor = truncation adjusted where the remainder is negative (the
     * divisor is positive) */
    dop neg = reg(d, RC_P);
    snprintf(opc, sizeof opc, "setp.lt.s%s", sfx(rc));
    ins3(d, opc, neg, r, imm(rc, 0));
    dop adj = reg(d, rc), res = reg(d, rc);
    snprintf(opc, sizeof opc, "selp.b%s", sfx(rc));
    if (k == TIR_KIND_FLOORDIV) {
        ins4(d, opc, adj, imm(rc, 1), imm(rc, 0), neg);
        snprintf(opc, sizeof opc, "sub.s%s", sfx(rc));
        ins3(d, opc, res, q, adj);
    } else {
        ins4(d, opc, adj, b, imm(rc, 0), neg);
        snprintf(opc, sizeof opc, "add.s%s", sfx(rc));
        ins3(d, opc, res, r, adj);
    }
    *out = res;
    return true;
}

/* ------------------------------------------------------------ expressions */

static bool ex(dg *d, const tir_expr *e, const dop *dst, dval *out);

static bool ex1(dg *d, const tir_expr *e, dop *o) {
    if (e->dtype.lanes != 1) return refuse(d, "a vector where a scalar is needed");
    dval v;
    if (!ex(d, e, NULL, &v)) return false;
    *o = v.l[0];
    return true;
}

/* Whether e contains a negation-like integer form (0 - x, x * -c): the PTX
 * assembler has miscompiled one feeding min/max (cg_ptxas.c pattern 5). */
static bool has_negation(const tir_expr *e) {
    const tir_binop *b = tir_as_tir_binop(e);
    if (!b) {
        const tir_cast *c = tir_as_tir_cast(e);
        return c && has_negation(c->value);
    }
    int64_t k;
    if (e->kind == TIR_KIND_SUB && tir_expr_const_int(b->a, &k)) return true;
    if (e->kind == TIR_KIND_MUL &&
        ((tir_expr_const_int(b->a, &k) && k < 0) || (tir_expr_const_int(b->b, &k) && k < 0)))
        return true;
    return has_negation(b->a) || has_negation(b->b);
}

static bool compare_int(dg *d, tir_kind k, int rc, dop a, dop b, dop *out) {
    static const char *const cmp[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    int i = k - TIR_KIND_EQ;
    if (a.imm && b.imm) {
        int64_t x = a.i, y = b.i;
        bool v = i == 0 ? x == y : i == 1 ? x != y : i == 2 ? x < y : i == 3 ? x <= y : i == 4 ? x > y : x >= y;
        return *out = imm(RC_P, v), true;
    }
    static const int swapped[] = {0, 1, 4, 5, 2, 3}; /* a op b is b swapped[op] a */
    if (a.imm) {
        dop t = a;
        a = b, b = t;
        i = swapped[i];
    }
    char opc[32];
    snprintf(opc, sizeof opc, "setp.%s.s%s", cmp[i], sfx(rc));
    /* keyed by the comparison emitted: 5 < x (setp.gt x, 5) under the
     * key of x < 5 made a later x < 5 reuse its predicate */
    *out = cse_op(d, 100 + i, opc, RC_P, a, b, is_mutable(d, a) || is_mutable(d, b));
    return true;
}

static bool index_sum(dg *d, const tir_expr *e, int64_t *c, bool *has_x, dop *x);

/* Whether [lo - c, hi - c] lies inside the range of class rc. */
static bool fits_shifted(int rc, int64_t lo, int64_t hi, int64_t c) {
    int64_t a, b;
    if (__builtin_sub_overflow(lo, c, &a) || __builtin_sub_overflow(hi, c, &b)) return false;
    return wrap_to(rc, a) == a && wrap_to(rc, b) == b;
}

/* x k c (k a comparison) for x = e - ca where e's values are {m j + r}
 * (ma): c moved to the member of x's class nearest it on the side that
 * keeps the answer for every member (x < c as x < the least member >= c;
 * x <= c as x <= the greatest member <= c).  A vector-aligned ragged
 * tile's guards x + j < N for j < m then share one predicate where N is
 * in the class (LLVM's known bits do the same); without it ptxas kept
 * eight predicates per row of Step 8's 3000³ write-back and spilled 164
 * bytes (LLVM's PTX: none). */
static int64_t class_bound(tir_kind k, cg_mod ma, int64_t ca, int64_t c, int rc) {
    int64_t r, b;
    if (ma.coeff < 2 || ma.coeff > ((int64_t)1 << 40) || __builtin_sub_overflow(ma.base, ca, &r))
        return c;
    cg_mod m = cg_mod_norm(ma.coeff, r);
    bool ovf;
    if (k == TIR_KIND_LT || k == TIR_KIND_GE)
        ovf = __builtin_add_overflow(c, cg_floormod64(m.base - c % m.coeff, m.coeff), &b);
    else if (k == TIR_KIND_LE || k == TIR_KIND_GT)
        ovf = __builtin_sub_overflow(c, cg_floormod64(c % m.coeff - m.base, m.coeff), &b);
    else
        return c;
    return !ovf && wrap_to(rc, b) == b ? b : c;
}

/* A comparison of index sums, xa + ca < xb + cb, as xa < xb + (cb - ca):
 * the guards of a ragged tile's elements then share xa (LLVM's
 * InstCombine does the same where no new sum can overflow).  Only for
 * comparisons that read no data: index arithmetic does not overflow, user
 * data wraps (docs/lowered-ir.md); and only where the variables' ranges
 * keep xa and xb + (cb - ca) inside the dtype, since the program's sums
 * not overflowing does not make the new ones safe (t * 33000000 -
 * 1500000000 < t * 10000000 + 500000000 became t * 33000000 < t *
 * 10000000 + 2000000000, which wraps for t >= 15). */
static bool compare_index(dg *d, const tir_binop *e, int rc, dop *out) {
    /* decided by the variables' ranges (a ragged tile's guards that an
     * unrolled index keeps in range), as LLVM's range analysis does */
    tir_int_bound la = tir_analyzer_const_bound(d->an, e->a), lb = tir_analyzer_const_bound(d->an, e->b);
    tir_kind k = (tir_kind)e->base.kind;
    int known = -1;
    if (k == TIR_KIND_LT) known = la.max < lb.min ? 1 : la.min >= lb.max ? 0 : -1;
    if (k == TIR_KIND_LE) known = la.max <= lb.min ? 1 : la.min > lb.max ? 0 : -1;
    if (k == TIR_KIND_GT) known = la.min > lb.max ? 1 : la.max <= lb.min ? 0 : -1;
    if (k == TIR_KIND_GE) known = la.min >= lb.max ? 1 : la.max < lb.min ? 0 : -1;
    if (k == TIR_KIND_EQ || k == TIR_KIND_NE)
        known = la.max < lb.min || la.min > lb.max ? (k == TIR_KIND_NE)
                : la.min == la.max && lb.min == lb.max && la.min == lb.min ? (k == TIR_KIND_EQ) : -1;
    if (known >= 0) return *out = imm(RC_P, known), true;
    int64_t ca, cb, c;
    bool ha, hb;
    dop xa, xb;
    if (!index_sum(d, e->a, &ca, &ha, &xa) || !index_sum(d, e->b, &cb, &hb, &xb)) return false;
    if (__builtin_sub_overflow(cb, ca, &c) || wrap_to(rc, c) != c ||
        !fits_shifted(rc, la.min, la.max, ca) || !fits_shifted(rc, lb.min, lb.max, ca)) {
        if (!int_binop(d, TIR_KIND_ADD, rc, ha ? xa : imm(rc, 0), imm(rc, ca), &xa) ||
            !int_binop(d, TIR_KIND_ADD, rc, hb ? xb : imm(rc, 0), imm(rc, cb), &xb))
            return false;
        return compare_int(d, (tir_kind)e->base.kind, rc, xa, xb, out);
    }
    if (ha && !hb) c = class_bound(k, cg_mod_of(e->a, var_mod, d), ca, c, rc);
    dop rhs;
    if (!int_binop(d, TIR_KIND_ADD, rc, hb ? xb : imm(rc, 0), imm(rc, c), &rhs)) return false;
    return compare_int(d, (tir_kind)e->base.kind, rc, ha ? xa : imm(rc, 0), rhs, out);
}

static bool minmax(dg *d, tir_kind k, int rc, dop a, dop b, dop *out) {
    char opc[32];
    dop p = reg(d, RC_P), r = reg(d, rc);
    if (a.imm) a = in_reg(d, a);
    if (rc == RC_F) {
        /* a NaN operand loses: a < b (a > b) or b is NaN ? a : b */
        dop q = reg(d, RC_P);
        ins3(d, k == TIR_KIND_MIN ? "setp.lt.f32" : "setp.gt.f32", p, a, b);
        dop bb = in_reg(d, b);
        ins3(d, "setp.nan.f32", q, bb, bb);
        ins3(d, "or.pred", p, p, q);
        ins4(d, "selp.f32", r, a, b, p);
    } else {
        snprintf(opc, sizeof opc, "setp.%s.s%s", k == TIR_KIND_MIN ? "lt" : "gt", sfx(rc));
        ins3(d, opc, p, a, b);
        snprintf(opc, sizeof opc, "selp.b%s", sfx(rc));
        ins4(d, opc, r, a, b, p);
    }
    *out = r;
    return true;
}

/* The destination of a value: the hinted register (a local element) or a
 * new one. */
static dop dest(dg *d, const dop *dst, int rc) { return dst && dst->rc == rc ? *dst : reg(d, rc); }

static bool float_binop(dg *d, const tir_binop *e, const dop *dst, dop *out) {
    tir_kind k = (tir_kind)e->base.kind;
    const tir_binop *m = NULL;
    const tir_expr *other = NULL;
    if (k == TIR_KIND_ADD && d->opts->fma_contract) {
        const tir_binop *ma = e->a->kind == TIR_KIND_MUL ? tir_as_tir_binop(e->a) : NULL;
        const tir_binop *mb = e->b->kind == TIR_KIND_MUL ? tir_as_tir_binop(e->b) : NULL;
        m = mb ? mb : ma;
        other = mb ? e->a : e->b;
    }
    if (m) { /* x + a*b: one rounding (fma_contract) */
        dop x, y, z;
        if (!ex1(d, m->a, &x) || !ex1(d, m->b, &y) || !ex1(d, other, &z)) return false;
        dop r = dest(d, dst, RC_F);
        ins4(d, "fma.rn.f32", r, in_reg(d, x), y, z);
        return *out = r, true;
    }
    dop a, b;
    if (!ex1(d, e->a, &a) || !ex1(d, e->b, &b)) return false;
    if (k == TIR_KIND_MIN || k == TIR_KIND_MAX) return minmax(d, k, RC_F, a, b, out);
    const char *opc = k == TIR_KIND_ADD   ? "add.rn.f32"
                      : k == TIR_KIND_SUB ? "sub.rn.f32"
                      : k == TIR_KIND_MUL ? "mul.rn.f32"
                      : k == TIR_KIND_DIV ? "div.rn.f32"
                                          : NULL;
    if (!opc) return refuse(d, "a float32 comparison, modulo or floor division");
    dop r = dest(d, dst, RC_F);
    ins3(d, opc, r, in_reg(d, a), b);
    return *out = r, true;
}

static bool binop(dg *d, const tir_binop *e, const dop *dst, dop *out) {
    tir_kind k = (tir_kind)e->base.kind;
    tir_dtype t = e->a->dtype;
    if (t.lanes != 1) return refuse(d, "a vector operation");
    if (is_f32(t)) return float_binop(d, e, dst, out);
    if (is_bool(t)) {
        dop a, b;
        if (k != TIR_KIND_AND && k != TIR_KIND_OR) return refuse(d, "a bool comparison");
        if (!ex1(d, e->a, &a)) return false;
        if (a.imm && (k == TIR_KIND_AND) != (a.i != 0)) return *out = a, true; /* decided */
        if (!ex1(d, e->b, &b)) return false;
        if (a.imm) return *out = b, true;
        if (b.imm) return *out = (k == TIR_KIND_AND) == (b.i != 0) ? a : b, true;
        return *out = cse_op(d, k, k == TIR_KIND_AND ? "and.pred" : "or.pred", RC_P, a, b, false),
               true;
    }
    int rc = rc_of(t);
    if (rc != RC_R && rc != RC_RD) return refuse(d, "an operation outside int32, int64, float32 and bool");
    if ((k == TIR_KIND_MIN || k == TIR_KIND_MAX) && (has_negation(e->a) || has_negation(e->b)))
        return refuse(d, "an integer min/max of a negation");
    if (k >= TIR_KIND_EQ && k <= TIR_KIND_GE && !tir_reads_buffer(e)) return compare_index(d, e, rc, out);
    dop a, b;
    if (!ex1(d, e->a, &a) || !ex1(d, e->b, &b)) return false;
    if (k >= TIR_KIND_EQ && k <= TIR_KIND_GE) return compare_int(d, k, rc, a, b, out);
    if ((k == TIR_KIND_MIN || k == TIR_KIND_MAX) && !(a.imm && b.imm))
        return minmax(d, k, rc, a, b, out);
    return int_binop(d, k, rc, a, b, out);
}

static bool cast(dg *d, const tir_cast *c, dop *out) {
    tir_dtype to = c->base.dtype, from = c->value->dtype;
    dop v;
    if (!ex1(d, c->value, &v)) return false;
    if (tir_dtype_eq(to, from)) return *out = v, true;
    int rt = rc_of(to), rf = rc_of(from);
    if (rt < 0 || rf < 0 || rt == RC_P || rf == RC_P) return refuse(d, "a cast outside int32, int64 and float32");
    if (v.imm && rt != RC_F && rf != RC_F) return *out = imm(rt, wrap_to(rt, v.i)), true;
    v = in_reg(d, v);
    dop r = reg(d, rt);
    const char *opc = rt == RC_RD && rf == RC_R   ? "cvt.s64.s32"
                      : rt == RC_R && rf == RC_RD ? "cvt.u32.u64"
                      : rt == RC_F && rf == RC_R  ? "cvt.rn.f32.s32"
                      : rt == RC_F && rf == RC_RD ? "cvt.rn.f32.s64"
                      : rt == RC_R && rf == RC_F  ? "cvt.rzi.s32.f32" /* saturates, NaN to 0 */
                                                  : "cvt.rzi.s64.f32";
    ins2(d, opc, r, v);
    return *out = r, true;
}

/* ------------------------------------------------------------- memory */

/* The element size and PTX type of a buffer's elements, 0 outside the
 * subset. */
static int elem_bytes(const tir_buffer *b, const char **ty) {
    if (is_f32(b->dtype)) return *ty = "f32", 4;
    if (is_i32(b->dtype)) return *ty = "b32", 4;
    if (is_i64(b->dtype)) return *ty = "b64", 8;
    return 0;
}

/* The bytes of one element of b for its addresses: any dtype (a
 * cp_async's global source may be of one elem_bytes refuses, its bytes
 * are only copied); loads, stores and shared arrays refuse those first. */
static int addr_bytes(const tir_buffer *b) { return (int)tir_dtype_bytes(b->dtype); }

/* The deepest serial loop whose variable e reads (0: none). */
static int level_of(const dg *d, const tir_expr *e) {
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM:
    case TIR_KIND_FLOAT_IMM: return 0;
    case TIR_KIND_VAR: {
        const dvar *v = find_var(d, tir_as_tir_var(e));
        return !v ? d->depth : v->val.imm ? 0 : v->level; /* an unrolled copy's constant: none */
    }
    case TIR_KIND_CAST: return level_of(d, tir_as_tir_cast(e)->value);
    default:
        if (tir_kind_is_binop((tir_kind)e->kind)) {
            int a = level_of(d, tir_as_tir_binop(e)->a), b = level_of(d, tir_as_tir_binop(e)->b);
            return a > b ? a : b;
        }
        return d->depth; /* loads, selects: where they are */
    }
}

enum { DT_MAX = 32 };
typedef struct dterm {
    const tir_expr *e;
    bool neg;
    int level;
} dterm;

/* The terms of a sum of indices (Add/Sub trees), up to DT_MAX. */
static void terms(const dg *d, const tir_expr *e, bool neg, dterm *t, int *n) {
    int rc = rc_of(e->dtype);
    if ((e->kind == TIR_KIND_ADD || e->kind == TIR_KIND_SUB) && (rc == RC_R || rc == RC_RD) &&
        *n + 2 <= DT_MAX) {
        const tir_binop *b = tir_as_tir_binop(e);
        terms(d, b->a, neg, t, n);
        terms(d, b->b, e->kind == TIR_KIND_SUB ? !neg : neg, t, n);
        return;
    }
    t[(*n)++] = (dterm){e, neg, level_of(d, e)};
}

/* The sum of terms t[0..n) of level at most maxlv as x + c, c the sum of
 * the constant ones (*has_x false: no other); *xlevel is the deepest
 * level among the others.  The terms are added outer loops' first, each
 * loop's share in the preheader of the loop inside it (loops[lv]), so
 * that the partial sum a loop does not change is built once, before it. */
static bool sum_terms(dg *d, const dterm *t, int n, int rc, int maxlv, int64_t *c, bool *has_x,
                      dop *x, int *xlevel) {
    *c = 0;
    *has_x = false;
    *xlevel = 0;
    dtext *out = d->out;
    uint32_t region = d->region;
    bool ok = true;
    for (int lv = 0; ok && lv <= maxlv; lv++) {
        if (lv < d->depth) d->out = &d->loops[lv].hoist, d->region = d->loops[lv].region;
        for (int i = 0; ok && i < n; i++) {
            if (t[i].level != lv && !(lv == d->depth && t[i].level > lv)) continue;
            dop v;
            if (!(ok = ex1(d, t[i].e, &v))) break;
            if (v.imm) {
                *c = wrap_to(rc, (int64_t)(t[i].neg ? (uint64_t)*c - (uint64_t)v.i : (uint64_t)*c + (uint64_t)v.i));
                continue;
            }
            if (!*has_x && !t[i].neg)
                *x = v;
            else
                ok = int_binop(d, t[i].neg ? TIR_KIND_SUB : TIR_KIND_ADD, rc, *has_x ? *x : imm(rc, 0), v, x);
            *has_x = true;
            *xlevel = lv;
        }
        d->out = out, d->region = region;
    }
    return ok;
}

/* An index as x + c, c the sum of its constant terms (*has_x false: the
 * index is the constant c): the constant becomes the access's immediate
 * offset, so that neighbouring elements share one address register, as
 * LLVM's addressing does.  The sum is reassociated, which index
 * arithmetic allows (it does not overflow, docs/lowered-ir.md). */
static bool index_sum(dg *d, const tir_expr *e, int64_t *c, bool *has_x, dop *x) {
    dterm t[DT_MAX];
    int n = 0, xlevel;
    terms(d, e, false, t, &n);
    return sum_terms(d, t, n, rc_of(e->dtype), d->depth, c, has_x, x, &xlevel);
}

/* Whether an int32 index idx split as x + k + c (c the constant terms'
 * sum as emitted, wrapped; k in [klo, khi] the induction pointer's term,
 * 0 without one) has a part x that fits int32, so that the address
 * sext(x) * eb + k * eb + c * eb is the index's.  The program's own sums
 * not overflowing does not make x safe: Y[(t * 1073741829 - 2147483648) +
 * t * 1073741829 + 10] is 20 at t = 1, but x = t * 2147483658 wraps.  An
 * accessed index lies in [0, INT32_MAX], so a constant c >= 0 without k
 * is always safe; else the analyzer's bounds of idx must show it. */
static bool split_fits(dg *d, const tir_expr *idx, int64_t c, int64_t klo, int64_t khi) {
    if (c >= 0 && klo == 0 && khi == 0) return true;
    tir_int_bound b = tir_analyzer_const_bound(d->an, idx);
    int64_t lo = b.min > 0 ? b.min : 0, hi = b.max < INT32_MAX ? b.max : INT32_MAX, a, z;
    return !__builtin_sub_overflow(lo, khi, &a) && !__builtin_sub_overflow(a, c, &a) && a >= INT32_MIN &&
           !__builtin_sub_overflow(hi, klo, &z) && !__builtin_sub_overflow(z, c, &z) && z <= INT32_MAX;
}

/* The coefficient of the innermost serial loop's variable when term t is
 * that variable or it times a constant, else 0. */
static int64_t loop_coeff(const dg *d, const dterm *t) {
    const tir_var *v = d->loops[d->depth - 1].var;
    if (t->neg || t->e->dtype.bits != 32) return 0;
    if (t->e->kind == TIR_KIND_VAR) return tir_as_tir_var(t->e) == v;
    const tir_binop *m = t->e->kind == TIR_KIND_MUL ? tir_as_tir_binop(t->e) : NULL;
    int64_t k;
    if (m && m->a->kind == TIR_KIND_VAR && tir_as_tir_var(m->a) == v && tir_expr_const_int(m->b, &k)) return k;
    if (m && m->b->kind == TIR_KIND_VAR && tir_as_tir_var(m->b) == v && tir_expr_const_int(m->a, &k)) return k;
    return 0;
}

/* The least step, in bytes per iteration, of an induction pointer.  Step
 * 8 4096^3 (docs/performance.md, runs 149-150): with the index of every
 * loop-carried access recomputed each iteration ptxas needs 128
 * registers and the kernel is 0.9% slower than LLVM's; with pointers for
 * both the A column (32 bytes a k tile) and the B row (128 KiB) 2.2%
 * slower (ptxas issues the global loads later); with a pointer for B only,
 * the choice LLVM's strength reduction makes there, within 0.3%. */
enum { DIRECT_MIN_IND_STEP = 4096 };

/* Loop strength reduction (the kernel's loop_strength_reduction, as LLVM
 * does it): an access whose index is x + k * coeff + c in the innermost
 * serial loop k, x invariant, and whose step is large (DIRECT_MIN_IND_STEP)
 * goes through a pointer made in the loop's preheader and advanced at its
 * end.  False (nothing emitted) when the index is not so. */
static bool induction(dg *d, dbuf *b, const tir_expr *idx, const dterm *t, int n, dop *base, int64_t *off,
                      bool *ok) {
    *ok = true;
    if (d->depth == 0 || !d->info->lsr || !d->loops[d->depth - 1].var) return false;
    int at = -1;
    for (int i = 0; i < n; i++) {
        if (t[i].level < d->depth) continue;
        if (at >= 0 || !loop_coeff(d, &t[i])) return false;
        at = i;
    }
    dloop *lp = &d->loops[d->depth - 1];
    int eb = addr_bytes(b->buf);
    if (at < 0 || lp->nind == DL_MAXIND || llabs(loop_coeff(d, &t[at]) * eb) < DIRECT_MIN_IND_STEP)
        return false;
    int64_t coeff = loop_coeff(d, &t[at]), c;
    /* the preheader's mad.wide.s32 takes coeff * eb as a 32-bit immediate */
    if (coeff * eb != (int32_t)(coeff * eb)) return false;
    bool has;
    dop x;
    int xlevel;
    dterm rest[DT_MAX];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (i != at) rest[m++] = t[i];
    if (!(*ok = sum_terms(d, rest, m, RC_R, d->depth - 1, &c, &has, &x, &xlevel))) return true;
    tir_int_bound kb = tir_analyzer_const_bound(d->an, t[at].e);
    if (!split_fits(d, idx, c, kb.min, kb.max)) return false;
    *off = c * eb; /* c is an int32 */
    for (int i = 0; i < lp->nind; i++)
        if (dop_eq(lp->ind[i].base, b->base) && lp->ind[i].has_x == has && lp->ind[i].coeff == coeff &&
            (!has || dop_eq(lp->ind[i].x, x)))
            return *base = lp->ind[i].p, true;
    dtext *out = d->out;
    uint32_t region = d->region;
    d->out = &lp->hoist, d->region = lp->region;
    dop p = reg(d, RC_RD), start = lp->min;
    if (has)
        ins4(d, "mad.wide.s32", p, x, imm(RC_R, eb), b->base);
    else
        ins2(d, "mov.b64", p, b->base);
    if (!start.imm)
        ins4(d, "mad.wide.s32", p, start, imm(RC_R, coeff * eb), p);
    else if (start.i != 0)
        ins3(d, "add.s64", p, p, imm(RC_RD, start.i * (coeff * eb)));
    d->out = out, d->region = region;
    lp->ind[lp->nind++] = (dind){p, b->base, x, has, coeff, coeff * eb};
    *base = p;
    return true;
}

/* The address of element idx of a global or shared buffer: a b64 register
 * and a byte offset. */
static bool address(dg *d, dbuf *b, const tir_expr *idx, dop *base, int64_t *off) {
    int eb = addr_bytes(b->buf);
    dterm t[DT_MAX];
    int n = 0, xlevel;
    terms(d, idx, false, t, &n);
    bool ok;
    if (induction(d, b, idx, t, n, base, off, &ok)) return ok;
    int64_t c;
    bool has;
    dop i;
    if (!sum_terms(d, t, n, rc_of(idx->dtype), d->depth, &c, &has, &i, &xlevel)) return false;
    /* (addresses wrap at 64 bits: an int64 index's c * eb too) */
    if (!has) return *off = (int64_t)((uint64_t)c * (uint64_t)eb), *base = b->base, true;
    /* an invariant address is made where its index is */
    dtext *out = d->out;
    uint32_t region = d->region;
    if (xlevel < d->depth) d->out = &d->loops[xlevel].hoist, d->region = d->loops[xlevel].region;
    /* the constant goes back into the sum where the rest alone may wrap */
    if (i.rc == RC_R && !split_fits(d, idx, c, 0, 0)) {
        if (!int_binop(d, TIR_KIND_ADD, RC_R, i, imm(RC_R, c), &i)) return d->out = out, d->region = region, false;
        c = 0;
    }
    *off = (int64_t)((uint64_t)c * (uint64_t)eb);
    dop w = i.rc == RC_R ? cse_op(d, 200, "mul.wide.s32", RC_RD, i, imm(RC_R, eb), is_mutable(d, i))
                         : cse_op(d, 201, "mul.lo.s64", RC_RD, i, imm(RC_RD, eb), is_mutable(d, i));
    *base = cse_op(d, 202, "add.s64", RC_RD, b->base, w, is_mutable(d, w));
    d->out = out, d->region = region;
    return true;
}

static void addr_text(dop base, int64_t off, char *s) {
    char b[24];
    if (off)
        snprintf(s, 64, "[%s+%lld]", ot(base, b), (long long)off);
    else
        snprintf(s, 64, "[%s]", ot(base, b));
}

/* A local element's register (made at its first use). */
static dop home(dg *d, dbuf *b, int64_t k) {
    if (b->home[k] < 0) {
        log_undo(d, (dundo){.cse = -1, .buf = (int)(b - d->bufs), .k = k});
        b->home[k] = d->nreg[b->rc]++;
    }
    return (dop){.mut = true, .rc = (int8_t)b->rc, .reg = b->home[k]};
}

/* The start of a dense (stride 1) access of `lanes` elements, or idx. */
static const tir_expr *access_start(dg *d, const tir_expr *idx, int lanes, bool *ok) {
    *ok = true;
    if (lanes == 1) return idx;
    const tir_ramp *r = tir_as_tir_ramp(idx);
    int64_t s;
    if (!r || !tir_expr_const_int(r->stride, &s) || s != 1) *ok = refuse(d, "a strided vector access");
    return r ? r->start : idx;
}

static const char why_local_var[] = "a local array indexed by a variable";

/* Local elements [k, k + lanes) of b, which must be constant indices. */
static bool local_range(dg *d, dbuf *b, const tir_expr *start, int lanes, int64_t *k) {
    dop s;
    if (!ex1(d, start, &s)) return false;
    if (!s.imm) return refuse(d, why_local_var);
    if (s.i < 0 || s.i + lanes > b->n) return refuse(d, "a local array indexed out of range");
    *k = s.i;
    return true;
}

/* Whether a vector access of b at start is aligned to its whole size. */
static bool vec_aligned(dg *d, const dbuf *b, const tir_expr *start, int lanes, int eb) {
    cg_mod m = cg_mod_of(start, var_mod, d);
    unsigned a = cg_access_align(m, (cg_mod){0, 0}, (unsigned)eb, b->align);
    /* PTX vectors of 2 or 4 elements, at most 16 bytes (256-bit accesses
     * need sm_100 and PTX 8.8) */
    return a % (unsigned)(lanes * eb) == 0 && (lanes == 2 || lanes == 4) && lanes * eb <= 16;
}

static char vec_list(const dop *l, int lanes, char *s) {
    char b[24];
    size_t n = 0;
    n += (size_t)snprintf(s + n, 160 - n, "{");
    for (int j = 0; j < lanes; j++)
        n += (size_t)snprintf(s + n, 160 - n, "%s%s", j ? ", " : "", ot(l[j], b));
    snprintf(s + n, 160 - n, "}");
    return 0;
}

/* A global or shared load into dst (registers) lane by lane or as one
 * vector; pred: a predicate guarding it (zero fill), or NULL. */
static bool mem_load(dg *d, dbuf *b, const tir_expr *idx, int lanes, const dop *dst, const dop *pred,
                     dval *out) {
    const char *ty;
    int eb = elem_bytes(b->buf, &ty);
    if (!eb) return refuse(d, "a buffer of another dtype than int32, int64 and float32");
    bool ok;
    const tir_expr *start = access_start(d, idx, lanes, &ok);
    if (!ok) return false;
    dop base;
    int64_t off;
    if (!address(d, b, start, &base, &off)) return false;
    int rc = eb == 8 ? RC_RD : is_f32(b->buf->dtype) ? RC_F : RC_R;
    out->lanes = lanes;
    for (int j = 0; j < lanes; j++) out->l[j] = dst && dst[j].rc == rc ? dst[j] : reg(d, rc);
    const char *sp = b->space == SP_SHARED ? "shared" : b->readonly ? "global.nc" : "global";
    char a[64], pr[32] = "", v[160], s0[24];
    if (pred) {
        for (int j = 0; j < lanes; j++)
            ins2(d, rc == RC_F ? "mov.f32" : rc == RC_RD ? "mov.b64" : "mov.b32", out->l[j], imm(rc, 0));
        snprintf(pr, sizeof pr, "@%s ", ot(*pred, s0));
    }
    if (lanes > 1 && vec_aligned(d, b, start, lanes, eb)) {
        addr_text(base, off, a);
        vec_list(out->l, lanes, v);
        put(d->out, "\t%sld.%s.v%d.%s \t%s, %s;\n", pr, sp, lanes, ty, v, a);
        return true;
    }
    for (int j = 0; j < lanes; j++) {
        addr_text(base, (int64_t)((uint64_t)off + (uint64_t)(j * eb)), a);
        put(d->out, "\t%sld.%s.%s \t%s, %s;\n", pr, sp, ty, ot(out->l[j], s0), a);
    }
    return true;
}

static bool load(dg *d, const tir_buffer_load *l, const dop *dst, const dop *pred, dval *out) {
    dbuf *b = find_buf(d, l->buffer);
    TIR_ASSERT(b);
    int lanes = l->base.dtype.lanes;
    if (lanes > DV_MAX) return refuse(d, "a vector of more than 4 lanes");
    if (b->space != SP_LOCAL) return mem_load(d, b, l->indices[0], lanes, dst, pred, out);
    if (pred) return refuse(d, "a zero-filled local load");
    bool ok;
    const tir_expr *start = access_start(d, l->indices[0], lanes, &ok);
    int64_t k;
    if (!ok || !local_range(d, b, start, lanes, &k)) return false;
    out->lanes = lanes;
    for (int j = 0; j < lanes; j++) out->l[j] = home(d, b, k + j);
    return true;
}

static bool may_trap(const tir_expr *e) { return tir_reads_buffer(e); }

static bool select_expr(dg *d, const tir_select *s, const dop *dst, dval *out) {
    if (s->cond->dtype.lanes != 1) return refuse(d, "a vector select");
    dop c;
    if (!ex1(d, s->cond, &c)) return false;
    if (c.imm) return ex(d, c.i ? s->t : s->f, dst, out);
    if (may_trap(s->t) || may_trap(s->f)) return refuse(d, "a select of loads");
    int rc = rc_of(s->base.dtype);
    if (rc < 0 || rc == RC_P || s->base.dtype.lanes != 1) return refuse(d, "a select of bool or vector values");
    dop t, f;
    if (!ex1(d, s->t, &t) || !ex1(d, s->f, &f)) return false;
    dop r = dest(d, dst, rc);
    ins4(d, rc == RC_F ? "selp.f32" : rc == RC_RD ? "selp.b64" : "selp.b32", r, t, f, c);
    out->lanes = 1;
    out->l[0] = r;
    return true;
}

static bool ex(dg *d, const tir_expr *e, const dop *dst, dval *out) {
    out->lanes = 1;
    int rc = rc_of(tir_dtype_with_lanes(e->dtype, 1));
    if (rc < 0) return refuse(d, "a value outside int32, int64, float32 and bool");
    switch ((tir_kind)e->kind) {
    case TIR_KIND_INT_IMM: out->l[0] = imm(rc, wrap_to(rc, tir_as_tir_int_imm(e)->value)); return true;
    case TIR_KIND_FLOAT_IMM: out->l[0] = fimm((float)tir_as_tir_float_imm(e)->value); return true;
    case TIR_KIND_VAR: {
        const dvar *v = find_var(d, tir_as_tir_var(e));
        TIR_ASSERT(v); /* cg_check: every variable is defined */
        out->l[0] = v->val;
        return true;
    }
    case TIR_KIND_NOT: {
        dop a;
        if (!ex1(d, tir_as_tir_not(e)->a, &a)) return false;
        if (a.imm) return out->l[0] = imm(RC_P, !a.i), true;
        out->l[0] = reg(d, RC_P);
        ins2(d, "not.pred", out->l[0], a);
        return true;
    }
    case TIR_KIND_SELECT: return select_expr(d, tir_as_tir_select(e), dst, out);
    case TIR_KIND_CAST: return e->dtype.lanes == 1 ? cast(d, tir_as_tir_cast(e), &out->l[0]) : refuse(d, "a vector cast");
    case TIR_KIND_BUFFER_LOAD: return load(d, tir_as_tir_buffer_load(e), dst, NULL, out);
    case TIR_KIND_BROADCAST: {
        const tir_broadcast *b = tir_as_tir_broadcast(e);
        if (b->lanes > DV_MAX) return refuse(d, "a vector of more than 4 lanes");
        dop v;
        if (!ex1(d, b->value, &v)) return false;
        out->lanes = b->lanes;
        for (int j = 0; j < b->lanes; j++) out->l[j] = v;
        return true;
    }
    case TIR_KIND_RAMP: return refuse(d, "a Ramp value");
    case TIR_KIND_CALL: return refuse(d, "a call in an expression");
    case TIR_KIND_LET: return refuse(d, "a Let");
    default:
        TIR_ASSERT(tir_kind_is_binop((tir_kind)e->kind));
        return binop(d, tir_as_tir_binop(e), dst, &out->l[0]);
    }
}

/* ------------------------------------------------------------- statements */

static bool stmt(dg *d, const tir_stmt *s);

/* Stores v (lanes wide) to b at idx; pred guards a global store. */
static bool mem_store(dg *d, dbuf *b, const tir_expr *idx, dval v, const dop *pred) {
    const char *ty;
    int eb = elem_bytes(b->buf, &ty);
    if (!eb) return refuse(d, "a buffer of another dtype than int32, int64 and float32");
    bool ok;
    const tir_expr *start = access_start(d, idx, v.lanes, &ok);
    dop base;
    int64_t off;
    if (!ok || !address(d, b, start, &base, &off)) return false;
    for (int j = 0; j < v.lanes; j++) v.l[j] = in_reg(d, v.l[j]);
    const char *sp = b->space == SP_SHARED ? "shared" : "global";
    char a[64], pr[32] = "", l[160], s0[24];
    if (pred) snprintf(pr, sizeof pr, "@%s ", ot(*pred, s0));
    if (v.lanes > 1 && vec_aligned(d, b, start, v.lanes, eb)) {
        addr_text(base, off, a);
        vec_list(v.l, v.lanes, l);
        put(d->out, "\t%sst.%s.v%d.%s \t%s, %s;\n", pr, sp, v.lanes, ty, a, l);
        return true;
    }
    for (int j = 0; j < v.lanes; j++) {
        addr_text(base, (int64_t)((uint64_t)off + (uint64_t)(j * eb)), a);
        put(d->out, "\t%sst.%s.%s \t%s, %s;\n", pr, sp, ty, a, ot(v.l[j], s0));
    }
    return true;
}

static bool store(dg *d, const tir_buffer_store *s, const dop *pred) {
    dbuf *b = find_buf(d, s->buffer);
    TIR_ASSERT(b);
    int lanes = s->value->dtype.lanes;
    if (lanes > DV_MAX) return refuse(d, "a vector of more than 4 lanes");
    dval v;
    if (b->space != SP_LOCAL) return ex(d, s->value, NULL, &v) && mem_store(d, b, s->indices[0], v, pred);
    bool ok;
    const tir_expr *start = access_start(d, s->indices[0], lanes, &ok);
    int64_t k;
    if (!ok || !local_range(d, b, start, lanes, &k)) return false;
    if (pred) return refuse(d, "a predicated local store");
    dop dst[DV_MAX] = {{0}};
    for (int j = 0; j < lanes; j++) dst[j] = home(d, b, k + j);
    if (!ex(d, s->value, dst, &v)) return false;
    /* the lanes are moved one after the other: a lane whose source is an
     * earlier lane's destination (an overlapping copy within one local
     * array, L[1:5] = L[0:4]) is read into a register of its own first */
    for (int j = 1; j < lanes; j++)
        for (int i = 0; i < j; i++)
            if (dop_eq(v.l[j], dst[i])) {
                dop t = reg(d, b->rc);
                ins2(d, mov_of(b->rc), t, v.l[j]);
                v.l[j] = t;
                break;
            }
    for (int j = 0; j < lanes; j++)
        if (!dop_eq(v.l[j], dst[j])) ins2(d, mov_of(b->rc), dst[j], v.l[j]);
    return true;
}

/* relax_guards' zero-filling copy `if c: S[i] = G[j] else: S[i] = 0` of a
 * read-only float32 parameter: a predicated load after a move of zero, no
 * branch (as cg_emit.c's masked_load).  The load's index is computed
 * whether or not c holds, so it must read no memory but local arrays: a
 * load in it (G[I[k]], where c keeps k in I's range) would run unguarded. */
static const tir_buffer_load *zero_fill_load(dg *d, const tir_if *f) {
    const tir_buffer_store *t = tir_as_tir_buffer_store(f->then_s);
    const tir_buffer_store *e = f->else_s ? tir_as_tir_buffer_store(f->else_s) : NULL;
    if (!t || !e || t->buffer != e->buffer || !tir_struct_equal(t->indices[0], e->indices[0]) ||
        !ir_is_zero_bits(e->value) || f->cond->dtype.lanes != 1)
        return NULL;
    const tir_buffer_load *l = tir_as_tir_buffer_load(t->value);
    if (l && ir_reads_memory(l->indices[0])) return NULL;
    const dbuf *b = l ? find_buf(d, l->buffer) : NULL;
    return b && b->space == SP_GLOBAL && b->readonly && is_f32(b->buf->dtype) ? l : NULL;
}

static bool zero_fill(dg *d, const tir_if *f, const tir_buffer_load *l) {
    const tir_buffer_store *t = tir_as_tir_buffer_store(f->then_s);
    dbuf *sb = find_buf(d, t->buffer);
    int lanes = l->base.dtype.lanes;
    if (lanes > DV_MAX) return refuse(d, "a vector of more than 4 lanes");
    dop c;
    if (!ex1(d, f->cond, &c)) return false;
    if (c.imm) return stmt(d, c.i ? f->then_s : f->else_s);
    dop dst[DV_MAX] = {{0}};
    bool ok;
    int64_t k = 0;
    bool local = sb->space == SP_LOCAL;
    const tir_expr *start = access_start(d, t->indices[0], lanes, &ok);
    if (!ok || (local && !local_range(d, sb, start, lanes, &k))) return false;
    for (int j = 0; j < lanes; j++) dst[j] = local ? home(d, sb, k + j) : reg(d, RC_F);
    dval v;
    if (!mem_load(d, find_buf(d, l->buffer), l->indices[0], lanes, dst, &c, &v)) return false;
    return local || mem_store(d, sb, t->indices[0], v, NULL);
}

/* A guarded scalar store to a global buffer whose value and index read no
 * memory: a predicated store (cg_emit.c's masked_store), no branch.  Both
 * are computed whether or not the guard holds, so a load in either (an
 * index read from a buffer, Y[X[i]], where the guard keeps i in X's
 * range) would run unguarded. */
static bool predicated_store(dg *d, const tir_if *f) {
    const tir_buffer_store *t = tir_as_tir_buffer_store(f->then_s);
    const dbuf *b = t ? find_buf(d, t->buffer) : NULL;
    return !f->else_s && b && b->space == SP_GLOBAL && t->value->dtype.lanes == 1 &&
           f->cond->dtype.lanes == 1 && !ir_reads_memory(t->value) &&
           !ir_reads_memory(t->indices[0]);
}

static bool if_stmt(dg *d, const tir_if *f) {
    const tir_buffer_load *zl = zero_fill_load(d, f);
    /* select_zero_fill asks for cg_emit.c's selects (an A/B form) */
    if (zl && d->opts->select_zero_fill) return refuse(d, "a zero-filling copy with select_zero_fill");
    if (zl) return zero_fill(d, f, zl);
    if (f->cond->dtype.lanes != 1) return refuse(d, "a vector condition");
    dop c;
    if (predicated_store(d, f)) {
        if (!ex1(d, f->cond, &c)) return false;
        if (c.imm) return !c.i || stmt(d, f->then_s);
        return store(d, tir_as_tir_buffer_store(f->then_s), &c);
    }
    if (!ex1(d, f->cond, &c)) return false;
    if (c.imm) return c.i ? stmt(d, f->then_s) : !f->else_s || stmt(d, f->else_s);
    char s0[24];
    int le = label(d), lend = f->else_s ? label(d) : le;
    put(d->out, "\t@!%s bra \t$L__D%d;\n", ot(c, s0), le);
    uint32_t outer = enter(d);
    bool ok = stmt(d, f->then_s);
    leave(d, outer);
    if (!ok) return false;
    if (f->else_s) {
        put(d->out, "\tbra.uni \t$L__D%d;\n", lend);
        place(d, le);
        outer = enter(d);
        ok = stmt(d, f->else_s);
        leave(d, outer);
        if (!ok) return false;
    }
    place(d, lend);
    return true;
}

static bool thread_loop(dg *d, const tir_for *f) {
    int axis = tir_launch_axis(f->thread_tag);
    TIR_ASSERT(axis >= 0);
    int rc = rc_of(f->var->base.dtype);
    if (rc != RC_R && rc != RC_RD) return refuse(d, "a thread index of another dtype than int32 or int64");
    dop r = reg(d, RC_R);
    put(d->out, "\tmov.u32 \t%%r%d, %%%s.%c;\n", r.reg,
        tir_thread_axis_kind(axis) == TIR_AXIS_KIND_BLOCK ? "ctaid" : "tid",
        "xyz"[tir_thread_axis_dim(axis)]);
    if (rc == RC_RD) {
        dop w = reg(d, RC_RD);
        ins2(d, "cvt.u64.u32", w, r);
        r = w;
    }
    push_var(d, f->var, r, CG_MOD_ANY);
    tir_analyzer_bind(d->an, f->var, f->min, f->extent);
    bool ok = stmt(d, f->body);
    tir_analyzer_unbind(d->an, f->var);
    d->nvars--;
    return ok;
}

/* ------------------------------------------------------- trial emission */

/* What a trial emission may change, to undo it (restore) or keep it
 * (commit): the text around it and the preheaders of the loops around it,
 * the induction pointers of those loops, registers, labels, local arrays
 * and (through the undo log) CSE entries and local elements' registers. */
typedef struct dsnap {
    dtext *out;
    size_t out_n;
    int depth, nreg[RC_N], nlabels, nbufs, nloops, nundo;
    size_t *hoist_n;
    int *nind;
    const char *why;
} dsnap;

static void snap(dg *d, dsnap *s) {
    *s = (dsnap){.out = d->out, .out_n = d->out->n, .depth = d->depth, .nlabels = d->nlabels,
                 .nbufs = d->nbufs, .nloops = d->nloops, .nundo = d->nundo, .why = d->why};
    memcpy(s->nreg, d->nreg, sizeof s->nreg);
    s->hoist_n = ir_xrealloc(NULL, sizeof *s->hoist_n * (size_t)(d->depth + 1));
    s->nind = ir_xrealloc(NULL, sizeof *s->nind * (size_t)(d->depth + 1));
    for (int lv = 0; lv < d->depth; lv++) {
        s->hoist_n[lv] = d->loops[lv].hoist.n;
        s->nind[lv] = d->loops[lv].nind;
    }
    d->trials++;
}

static void cut(dtext *t, size_t n) {
    t->n = n;
    if (t->s) t->s[n] = 0;
}

static void commit(dg *d, dsnap *s) {
    free(s->hoist_n);
    free(s->nind);
    if (--d->trials == 0) d->nundo = 0;
}

static void restore(dg *d, dsnap *s) {
    while (d->nundo > s->nundo) {
        dundo *u = &d->undo[--d->nundo];
        if (u->cse >= 0)
            d->cse[u->cse] = u->old;
        else if (u->buf < s->nbufs)
            d->bufs[u->buf].home[u->k] = -1;
    }
    cut(s->out, s->out_n);
    for (int lv = 0; lv < s->depth; lv++) {
        cut(&d->loops[lv].hoist, s->hoist_n[lv]);
        d->loops[lv].nind = s->nind[lv];
    }
    memcpy(d->nreg, s->nreg, sizeof s->nreg);
    d->nlabels = s->nlabels, d->nbufs = s->nbufs, d->nloops = s->nloops, d->why = s->why;
    commit(d, s);
}

static int64_t lines_from(const dtext *t, size_t from) {
    int64_t n = 0;
    for (size_t i = from; i < t->n; i++) n += t->s[i] == '\n';
    return n;
}

/* ---------------------------------------------------------------- loops */

/* Copies [first, first + count) of f's body with its variable the
 * constant mn + first + k each (a fully unrolled loop, or a partially
 * unrolled one's remainder), so that guards and local indices fold.
 * cap > 0 (a trial): gives up, false without a reason, once the copies
 * pass cap instructions. */
static bool unrolled_loop(dg *d, const tir_for *f, int rc, dop mn, int64_t first, int64_t count,
                          int64_t cap) {
    cg_mod mm = cg_mod_of(f->min, var_mod, d);
    int64_t outer = d->unrolled;
    d->unrolled *= count > 1 ? count : 1;
    size_t from = d->out->n;
    bool ok = true;
    for (int64_t k = first; ok && k < first + count; k++) {
        dop v;
        ok = int_binop(d, TIR_KIND_ADD, rc, mn, imm(rc, k), &v);
        if (!ok) break;
        push_var(d, f->var, v, cg_mod_norm(mm.coeff, mm.base + k));
        if (v.imm)
            tir_analyzer_bind_const(d->an, f->var, v.i, 1);
        else
            tir_analyzer_unbind(d->an, f->var);
        ok = stmt(d, f->body);
        tir_analyzer_unbind(d->an, f->var);
        d->nvars--;
        if (ok && cap && lines_from(d->out, from) > cap) ok = false;
    }
    d->unrolled = outer;
    return ok;
}

/* f as a rolled loop over v = start, start + copies, ... while v < lim,
 * its body `copies` times an iteration with f's variable v + k (copies >
 * 1: partially unrolled; its accesses then get no induction pointers, as
 * a pointer per copy would cost what it saves), guarded at the top unless
 * it runs at least once.  *nbody: one copy's instructions; *inner: the
 * body has a rolled loop of its own. */
static bool rolled_loop(dg *d, const tir_for *f, int rc, dop start, dop lim, int copies, bool guard,
                        int64_t *nbody, bool *inner) {
    char opc[32], s0[24];
    if (d->depth == d->caploops) {
        d->caploops = d->caploops ? 2 * d->caploops : 4;
        d->loops = ir_xrealloc(d->loops, sizeof *d->loops * (size_t)d->caploops);
    }
    dloop *lp = &d->loops[d->depth];
    *lp = (dloop){.region = d->region, .var = rc == RC_R && copies == 1 ? f->var : NULL, .min = start};
    dtext loop_text = {0}, *around = d->out;
    d->out = &loop_text;
    dop v = reg(d, rc), p = reg(d, RC_P);
    ins2(d, mov_of(rc), v, start);
    int top = label(d), out = label(d);
    if (guard) {
        snprintf(opc, sizeof opc, "setp.ge.s%s", sfx(rc));
        ins3(d, opc, p, v, lim);
        put(d->out, "\t@%s bra \t$L__D%d;\n", ot(p, s0), out);
    }
    place(d, top);
    uint32_t outer = enter(d);
    d->depth++;
    int nloops = d->nloops;
    tir_analyzer_bind(d->an, f->var, f->min, f->extent);
    size_t b0 = loop_text.n;
    bool ok = true;
    for (int k = 0; ok && k < copies; k++) {
        dop x = v;
        if (k && !(ok = int_binop(d, TIR_KIND_ADD, rc, v, imm(rc, k), &x))) break;
        push_var(d, f->var, x, CG_MOD_ANY);
        ok = stmt(d, f->body);
        d->nvars--;
    }
    tir_analyzer_unbind(d->an, f->var);
    d->depth--;
    *inner = d->nloops != nloops;
    d->nloops++;
    *nbody = lines_from(&loop_text, b0) / copies;
    if (ok) {
        lp = &d->loops[d->depth]; /* (the array may have grown) */
        for (int i = 0; i < lp->nind; i++)
            ins3(d, "add.s64", lp->ind[i].p, lp->ind[i].p, imm(RC_RD, lp->ind[i].step));
        snprintf(opc, sizeof opc, "add.s%s", sfx(rc));
        ins3(d, opc, v, v, imm(rc, copies));
        snprintf(opc, sizeof opc, "setp.lt.s%s", sfx(rc));
        ins3(d, opc, p, v, lim);
        put(d->out, "\t@%s bra \t$L__D%d;\n", ot(p, s0), top);
    }
    leave(d, outer);
    if (ok) place(d, out);
    d->out = around;
    lp = &d->loops[d->depth];
    if (ok) put(around, "%s%s", lp->hoist.s ? lp->hoist.s : "", loop_text.s ? loop_text.s : "");
    free(lp->hoist.s);
    free(loop_text.s);
    return ok;
}

/* LLVM's O3 loop unroller as NVPTX configures it (NVPTXTTIImpl::
 * getUnrollingPreferences: Partial and Runtime on, PartialThreshold =
 * Threshold / 4), the choice whose kernels the direct emitter must match:
 *   - full unrolling of a constant trip count n when n x body stays under
 *     Threshold (300 IR instructions), or, for an innermost loop and n <=
 *     10 (its UnrollMaxIterationsCountToAnalyze), when the unrolled loop after
 *     constant folding stays under Threshold x min(4, rolled / unrolled
 *     cost) (its "up to 4x" boost where it predicts simplification);
 *   - else partial unrolling of an innermost loop by the most copies whose
 *     body stays under PartialThreshold (75), for a constant trip count
 *     the most that divide it, else a power of two up to 8 with a
 *     remainder; for another trip count (runtime unrolling) a power of
 *     two up to 8 with a remainder loop; a loop with a barrier (convergent)
 *     gets no remainder, so neither a count that does not divide n nor
 *     runtime unrolling.
 * In this emitter's PTX instructions, which are fewer than LLVM's IR ones
 * (its index arithmetic is folded and hoisted as it goes): the seed's
 * Steps 1-3, whose copy loops (10 instructions) LLVM unrolls by 4 and
 * compute loops (15) by 2, put PartialThreshold near 50 and so Threshold
 * near 200. */
/* The fewest PTX instructions in the body of a loop this emitter leaves
 * rolled by default: fewer, and LLVM's O3 unroller might unroll it, which
 * is worth more than the compile time.  The seed's Steps 1-6 have loop
 * bodies of 17-42 PTX instructions, the tiling rule's k loops 570 or
 * more. */
enum { DIRECT_MIN_BODY = 300 };

enum {
    DIRECT_FULL_UNROLL = 200,
    DIRECT_PARTIAL_UNROLL = 50,
    DIRECT_LATCH = 3,          /* a rolled loop's own instructions: add, setp, bra */
    DIRECT_UNROLL_ANALYZE = 10, /* the trip counts whose folding is measured */
    DIRECT_UNROLL_BOOST = 4,
    DIRECT_RUNTIME_UNROLL = 8,
};

/* The copies an iteration of a loop LLVM would partially unroll gets
 * (1: it stays rolled). */
static int partial_count(bool cext, int64_t n, int64_t nbody, bool inner, bool sync) {
    if (inner || nbody <= 0) return 1;
    int64_t c = (DIRECT_PARTIAL_UNROLL - DIRECT_LATCH) / nbody;
    if (cext) {
        if (c > n) c = n;
        while (c > 1 && n % c) c--;
        if (c > 1 || sync) return c > 1 ? (int)c : 1;
    } else if (sync) {
        return 1;
    }
    c = DIRECT_RUNTIME_UNROLL;
    while (c > 1 && c * nbody + DIRECT_LATCH > DIRECT_PARTIAL_UNROLL) c >>= 1;
    return (int)c;
}

/* f partially unrolled, c copies an iteration: for a constant trip count
 * n the remainder's n % c copies unrolled after the loop; else (runtime
 * unrolling) a rolled remainder loop after one that runs
 * max(extent, 0) & -c iterations (c a power of two; ext the extent). */
static bool partial_loop(dg *d, const tir_for *f, int rc, dop mn, dop ext, dop end, bool cext, int64_t n,
                         int c) {
    int64_t nbody;
    bool inner;
    if (cext) {
        int64_t r = n % c;
        dop lim = end;
        if (r && !int_binop(d, TIR_KIND_ADD, rc, end, imm(rc, -r), &lim)) return false;
        if (n >= c && !rolled_loop(d, f, rc, mn, lim, c, false, &nbody, &inner)) return false;
        return !r || unrolled_loop(d, f, rc, mn, n - r, r, 0);
    }
    char opc[32];
    dop e = reg(d, rc), q = reg(d, rc), lim = reg(d, rc);
    snprintf(opc, sizeof opc, "max.s%s", sfx(rc));
    ins3(d, opc, e, in_reg(d, ext), imm(rc, 0));
    snprintf(opc, sizeof opc, "and.b%s", sfx(rc));
    ins3(d, opc, q, e, imm(rc, -c));
    snprintf(opc, sizeof opc, "add.s%s", sfx(rc));
    ins3(d, opc, lim, in_reg(d, mn), q);
    return rolled_loop(d, f, rc, mn, lim, c, true, &nbody, &inner) &&
           rolled_loop(d, f, rc, lim, end, 1, true, &nbody, &inner);
}

/* A trial of f fully unrolled (n copies, within the unroll budget), kept
 * where LLVM would unroll it so; else nothing emitted and false, with
 * *why the reason where a copy was outside the subset (NULL: too large).
 * rolled: the rolled body's instructions x n (0: unknown). */
static bool try_full(dg *d, const tir_for *f, int rc, dop mn, int64_t n, int64_t rolled, const char **why) {
    *why = NULL;
    if (n > 1 && d->unrolled > CG_MAX_UNROLLED / n) return false;
    int64_t cap = n <= DIRECT_UNROLL_ANALYZE ? DIRECT_FULL_UNROLL * DIRECT_UNROLL_BOOST : DIRECT_FULL_UNROLL;
    dsnap s;
    snap(d, &s);
    size_t from = d->out->n;
    bool ok = unrolled_loop(d, f, rc, mn, 0, n, cap);
    if (!ok) *why = d->why;
    int64_t u = lines_from(d->out, from);
    /* LLVM's boost: Threshold x rolled / unrolled cost, at most 4x */
    if (ok && rolled && n <= DIRECT_UNROLL_ANALYZE && u >= DIRECT_FULL_UNROLL)
        ok = u * u < (int64_t)DIRECT_FULL_UNROLL * rolled;
    if (ok && !rolled && n > DIRECT_UNROLL_ANALYZE) ok = u < DIRECT_FULL_UNROLL;
    if (ok)
        commit(d, &s);
    else
        restore(d, &s);
    return ok;
}

/* The slot of f's choice in d->memo (open addressing; f NULL: none yet). */
static dmemo *memo_slot(dg *d, const tir_for *f) {
    if (2 * (d->nmemo + 1) > d->capmemo) {
        dmemo *old = d->memo;
        int cap = d->capmemo;
        d->capmemo = cap ? 2 * cap : 64;
        d->memo = ir_xcalloc((size_t)d->capmemo, sizeof *d->memo);
        d->nmemo = 0;
        for (int i = 0; i < cap; i++)
            if (old[i].f) *memo_slot(d, old[i].f) = old[i], d->nmemo++;
        free(old);
    }
    size_t h = ((uintptr_t)f >> 4) * 2654435761u;
    for (size_t i = h & (size_t)(d->capmemo - 1);; i = (i + 1) & (size_t)(d->capmemo - 1))
        if (!d->memo[i].f || d->memo[i].f == f) return &d->memo[i];
}

static bool chosen(dg *d, const tir_for *f, int kind, int copies) {
    dmemo *m = memo_slot(d, f);
    if (!m->f) d->nmemo++;
    *m = (dmemo){f, kind, copies};
    return true;
}

/* f emitted as chosen before (m, a copy: emission may grow d->memo). */
static bool as_chosen(dg *d, dmemo m, int rc, dop mn, dop ext, dop end, bool cext, int64_t n, bool guard) {
    int64_t nbody;
    bool inner;
    if (m.kind == DM_FULL && n > 1 && d->unrolled > CG_MAX_UNROLLED / n)
        return refuse(d, "a loop LLVM would unroll past the unroll budget");
    if (m.kind == DM_FULL) return unrolled_loop(d, m.f, rc, mn, 0, n, 0);
    if (m.kind == DM_PARTIAL) return partial_loop(d, m.f, rc, mn, ext, end, cext, n, m.copies);
    return rolled_loop(d, m.f, rc, mn, end, 1, guard, &nbody, &inner);
}

/* f (min mn, extent ext, end mn + ext; n the extent where cext; guard:
 * whether it may run no iteration) unrolled as LLVM's O3 would unroll it
 * (partial_count). */
static bool llvm_unrolled(dg *d, const tir_for *f, int rc, dop mn, dop ext, dop end, bool cext, int64_t n,
                          bool guard) {
    int64_t nbody;
    bool inner;
    if (memo_slot(d, f)->f) return as_chosen(d, *memo_slot(d, f), rc, mn, ext, end, cext, n, guard);
    /* a single iteration: its copy, as LLVM's (no trial) */
    if (cext && n == 1) {
        chosen(d, f, DM_FULL, 1);
        return unrolled_loop(d, f, rc, mn, 0, 1, 0);
    }
    /* LLVM's choice (partial_count) needs the rolled body's size: a trial */
    dsnap s;
    snap(d, &s);
    if (!rolled_loop(d, f, rc, mn, end, 1, guard, &nbody, &inner)) {
        /* a local array indexed by this loop's variable: unrolled as
         * LLVM would unroll it (its registers need that too); a loop
         * LLVM leaves rolled keeps the array in local memory, outside
         * the subset */
        if (!cext || d->why != why_local_var) {
            commit(d, &s);
            return false;
        }
        restore(d, &s);
        const char *why;
        if (try_full(d, f, rc, mn, n, 0, &why)) return chosen(d, f, DM_FULL, (int)n);
        /* (an outer loop's variable in the index: that loop may unroll) */
        return refuse(d, why ? why : "a local array indexed by a loop LLVM would not fully unroll");
    }
    bool sync = strstr(s.out->s + s.out_n, "bar.sync") != NULL;
    int c = partial_count(cext, n, nbody, inner, sync);
    /* LLVM measures the folding of innermost loops only; a trial whose
     * copies would have to fold more than half away is not worth it */
    bool full = cext && n * nbody < DIRECT_FULL_UNROLL,
         analyze = cext && !inner && n <= DIRECT_UNROLL_ANALYZE &&
                   n * nbody < DIRECT_FULL_UNROLL * DIRECT_UNROLL_BOOST;
    if (!full && !analyze && c <= 1) { /* rolled, as emitted */
        commit(d, &s);
        return chosen(d, f, DM_ROLLED, 1);
    }
    restore(d, &s);
    const char *why;
    if (!full && analyze && try_full(d, f, rc, mn, n, n * nbody, &why)) return chosen(d, f, DM_FULL, (int)n);
    chosen(d, f, full ? DM_FULL : c > 1 ? DM_PARTIAL : DM_ROLLED, c);
    return as_chosen(d, *memo_slot(d, f), rc, mn, ext, end, cext, n, guard);
}

static bool serial_loop(dg *d, const tir_for *f) {
    if (tir_annots_get(f->nannots, f->annots, TIR_ANN_PRAGMA_UNROLL_MAX_STEP))
        return refuse(d, "a loop with pragma_unroll_max_step");
    int rc = rc_of(f->var->base.dtype);
    if (rc != RC_R && rc != RC_RD) return refuse(d, "a loop variable of another dtype than int32 or int64");
    dop mn, ext, end;
    if (!ex1(d, f->min, &mn)) return false;
    /* min and extent are evaluated once, before the first iteration: a
     * local array's element (a register the body may write) is copied,
     * else the unrolled copies' variable or the loop's end would read
     * the body's writes (`for i in range(L[0]): L[0] = ...`) */
    mn = frozen(d, mn);
    int64_t n;
    bool cext = tir_expr_const_int(f->extent, &n);
    if (f->kind == TIR_FOR_UNROLLED) {
        if (cext && n <= 1024 && (n <= 1 || d->unrolled <= CG_MAX_UNROLLED / n))
            return unrolled_loop(d, f, rc, mn, 0, n, 0);
        return refuse(d, "an unrolled loop past the unroll budget");
    }
    if (!ex1(d, f->extent, &ext)) return false;
    ext = frozen(d, ext);
    if (!int_binop(d, TIR_KIND_ADD, rc, mn, ext, &end)) return false;
    end = frozen(d, end);
    if ((mn.imm && end.imm && mn.i >= end.i) || (cext && n <= 0)) return true; /* no iteration */
    bool guard = !cext && !(mn.imm && end.imm); /* else it runs at least once */
    int64_t nbody;
    bool inner;
    if (d->opts->direct_all_loops) return rolled_loop(d, f, rc, mn, end, 1, guard, &nbody, &inner);
    /* the kernel's direct_unroll attr asks for it per kernel (a tuner
     * decision, cg_occupancy.c) */
    if (d->opts->direct_unroll || d->info->direct_unroll)
        return llvm_unrolled(d, f, rc, mn, ext, end, cext, n, guard);
    if (!rolled_loop(d, f, rc, mn, end, 1, guard, &nbody, &inner)) return false;
    /* a loop LLVM's O3 pipeline would unroll (codegen.c, short_ok) goes to
     * LLVM: this emitter's own unrolling of such loops (direct_unroll) ran
     * Steps 1-3 35-65% and Step 8 at 1000x520x333 18% slower than LLVM's
     * kernels on the H100 (docs/performance.md, run 160), though 12-16%
     * faster for the 32x32 tiles at 100^3, 257^3 and 333^3 (run 161) */
    if (nbody < DIRECT_MIN_BODY || (cext && n * nbody < CG_SHORT_MIN_WORK))
        return refuse(d, "a loop small enough for LLVM to unroll");
    return true;
}

static void sanitize(char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            *s = '_';
}

static bool shared_sym_used(const dg *d, const char *name) {
    for (int i = 0; i < d->nbufs; i++)
        if (d->bufs[i].sym && !strcmp(d->bufs[i].sym, name)) return true;
    return false;
}

/* A shared buffer at its place in cg_check's layout (info->shared_bytes). */
static bool shared_buf(dg *d, const tir_buffer *b, int64_t n) {
    const char *ty;
    int eb = elem_bytes(b, &ty);
    if (!eb) return refuse(d, "a shared buffer of another dtype than int32, int64 and float32");
    int64_t align = cg_shared_align(d->info, b);
    int64_t start = (d->shared_bytes + align - 1) / align * align;
    d->shared_bytes = start + n * eb;
    dbuf *x = add_buf(d, b, SP_SHARED);
    x->align = (unsigned)align;
    x->base = reg(d, RC_RD);
    char s0[24];
    if (d->info->dyn_shared) {
        if (!d->has_dyn) {
            d->has_dyn = true;
            d->dyn_base = reg(d, RC_RD);
            put(&d->pro, "\tmov.u64 \t%s, minitir_dyn_shared;\n", ot(d->dyn_base, s0));
        }
        char s1[24];
        put(&d->pro, "\tadd.s64 \t%s, %s, %lld;\n", ot(x->base, s0), ot(d->dyn_base, s1), (long long)start);
        return true;
    }
    /* one symbol per buffer: two buffers may share a name (S allocated in
     * both branches of an if), and ptxas rejects a second definition */
    char name[160];
    snprintf(name, sizeof name, "%s%s_shared", b->name[0] >= '0' && b->name[0] <= '9' ? "_" : "", b->name);
    sanitize(name);
    size_t len = strlen(name);
    for (int k = 1; shared_sym_used(d, name); k++) snprintf(name + len, sizeof name - len, "_%d", k);
    x->sym = tir_intern(d->ctx, name);
    put(&d->shared_decl, "\t.shared .align %lld .b8 %s[%lld];\n", (long long)align, name, (long long)(n * eb));
    put(&d->pro, "\tmov.u64 \t%s, %s;\n", ot(x->base, s0), name);
    return true;
}

/* The shared buffers in first-Allocate order, placed before emission as
 * cg_check's layout has them: emission skips a branch whose condition
 * folds, a loop without iterations and an unrolled loop of extent 0, so
 * placing them as it reached them left out those buffers (and the layout
 * assertion aborted the process). */
static bool layout_shared(dg *d, const tir_stmt *s) {
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: return layout_shared(d, tir_as_tir_for(s)->body);
    case TIR_KIND_SEQ: {
        const tir_seq *q = tir_as_tir_seq(s);
        for (int i = 0; i < q->n; i++)
            if (!layout_shared(d, q->stmts[i])) return false;
        return true;
    }
    case TIR_KIND_IF: {
        const tir_if *f = tir_as_tir_if(s);
        return layout_shared(d, f->then_s) && (!f->else_s || layout_shared(d, f->else_s));
    }
    case TIR_KIND_ALLOCATE: {
        const tir_allocate *a = tir_as_tir_allocate(s);
        if (a->buffer->scope == TIR_SCOPE_SHARED && !find_buf(d, a->buffer) &&
            !shared_buf(d, a->buffer, tir_buffer_const_size(a->buffer)))
            return false;
        return layout_shared(d, a->body);
    }
    default: return true;
    }
}

static bool allocate(dg *d, const tir_allocate *a) {
    const tir_buffer *b = a->buffer;
    if (!find_buf(d, b)) {
        int64_t n = tir_buffer_const_size(b);
        if (b->scope == TIR_SCOPE_SHARED) {
            TIR_ASSERT(!"layout_shared placed every shared buffer");
        } else {
            int rc = rc_of(b->dtype);
            if (rc != RC_R && rc != RC_RD && rc != RC_F) return refuse(d, "a local array of another dtype than int32, int64 and float32");
            if (n > 4096) return refuse(d, "a local array of more than 4096 elements");
            dbuf *x = add_buf(d, b, SP_LOCAL);
            x->rc = rc;
            x->n = n;
            x->home = tir_ctx_alloc(d->ctx, sizeof *x->home * (size_t)(n ? n : 1));
            for (int64_t k = 0; k < n; k++) x->home[k] = -1;
        }
    }
    return stmt(d, a->body);
}

/* The address of an address_of(buf[i]) (a cp_async operand). */
static bool address_of(dg *d, const tir_expr *e, dbuf **b, char *text) {
    const tir_call *c = tir_as_tir_call(e);
    const tir_buffer_load *l = c && c->op == TIR_INTRIN_ADDRESS_OF ? tir_as_tir_buffer_load(c->args[0]) : NULL;
    if (!l) return refuse(d, "a cp_async operand that is not address_of");
    *b = find_buf(d, l->buffer);
    if ((*b)->space == SP_LOCAL) return refuse(d, "a cp_async of a local array");
    const tir_ramp *r = tir_as_tir_ramp(l->indices[0]);
    dop base;
    int64_t off;
    if (!address(d, *b, r ? r->start : l->indices[0], &base, &off)) return false;
    addr_text(base, off, text);
    return true;
}

static bool evaluate(dg *d, const tir_evaluate *ev) {
    const tir_call *c = tir_as_tir_call(ev->value);
    if (!c) return true; /* other expressions are ignored */
    char dst[64], src[64], s0[24];
    switch (c->op) {
    case TIR_INTRIN_SYNCTHREADS: put(d->out, "\tbar.sync \t0;\n"); return true;
    case TIR_INTRIN_CP_ASYNC_COMMIT: put(d->out, "\tcp.async.commit_group;\n"); return true;
    case TIR_INTRIN_CP_ASYNC_WAIT: {
        int64_t n = 0;
        tir_expr_const_int(c->args[0], &n);
        put(d->out, "\tcp.async.wait_group \t%lld;\n", (long long)n);
        return true;
    }
    case TIR_INTRIN_CP_ASYNC: {
        int64_t bytes = 0;
        tir_expr_const_int(c->args[2], &bytes);
        dbuf *bd, *bs;
        if (!address_of(d, c->args[0], &bd, dst) || !address_of(d, c->args[1], &bs, src)) return false;
        if (bd->space != SP_SHARED || bs->space != SP_GLOBAL) return refuse(d, "a cp_async other than global to shared");
        const char *kind = bytes == 16 ? "cg" : "ca";
        if (c->nargs == 4) {
            dop n;
            if (!ex1(d, c->args[3], &n)) return false;
            if (n.rc != RC_R) return refuse(d, "a cp_async source size of another dtype than int32");
            put(d->out, "\tcp.async.%s.shared.global \t%s, %s, %lld, %s;\n", kind, dst, src, (long long)bytes, ot(n, s0));
        } else {
            put(d->out, "\tcp.async.%s.shared.global \t%s, %s, %lld;\n", kind, dst, src, (long long)bytes);
        }
        return true;
    }
    default: return refuse(d, "a call other than syncthreads and cp_async");
    }
}

static bool stmt(dg *d, const tir_stmt *s) {
    switch ((tir_kind)s->kind) {
    case TIR_KIND_FOR: {
        const tir_for *f = tir_as_tir_for(s);
        return f->kind == TIR_FOR_THREAD_BINDING ? thread_loop(d, f) : serial_loop(d, f);
    }
    case TIR_KIND_SEQ: {
        const tir_seq *q = tir_as_tir_seq(s);
        for (int i = 0; i < q->n; i++)
            if (!stmt(d, q->stmts[i])) return false;
        return true;
    }
    case TIR_KIND_IF: return if_stmt(d, tir_as_tir_if(s));
    case TIR_KIND_BUFFER_STORE: return store(d, tir_as_tir_buffer_store(s), NULL);
    case TIR_KIND_ALLOCATE: return allocate(d, tir_as_tir_allocate(s));
    case TIR_KIND_EVALUATE: return evaluate(d, tir_as_tir_evaluate(s));
    default: return refuse(d, "a statement outside the lowered form");
    }
}

/* ----------------------------------------------------------------- kernel */

static bool params(dg *d, const char *name) {
    const tir_prim_func *f = d->f;
    for (int i = 0; i < f->nparams; i++) {
        const tir_buffer *b = f->buffer_map[i];
        char s0[24];
        if (b) {
            int64_t off;
            if (!tir_expr_const_int(b->elem_offset, &off) || off != 0)
                return refuse(d, "a buffer parameter with an elem_offset");
            dbuf *x = add_buf(d, b, SP_GLOBAL);
            x->base = reg(d, RC_RD);
            x->align = (unsigned)b->align;
            x->readonly = !d->info->written[i];
            put(&d->pro, "\tld.param.u64 \t%s, [%s_param_%d];\n", ot(x->base, s0), name, i);
            continue;
        }
        int rc = rc_of(f->params[i]->base.dtype);
        if (rc != RC_R && rc != RC_RD && rc != RC_F) return refuse(d, "a scalar parameter outside int32, int64 and float32");
        dop r = reg(d, rc);
        put(&d->pro, "\tld.param.%s \t%s, [%s_param_%d];\n", rc == RC_R ? "u32" : rc == RC_RD ? "u64" : "f32",
            ot(r, s0), name, i);
        push_var(d, f->params[i], r, CG_MOD_ANY);
    }
    return true;
}

static void head(dg *d, dtext *t, const char *name, const char *arch, int ptx) {
    put(t, "//\n// Generated by minitir's direct PTX emitter (src/codegen/cg_direct.c)\n//\n\n");
    put(t, ".version %d.%d\n.target %s\n.address_size 64\n\n", ptx / 10, ptx % 10, arch);
    if (d->has_dyn)
        put(t, ".extern .shared .align %lld .b8 minitir_dyn_shared[];\n\n",
            (long long)(d->info->shared_align > 16 ? d->info->shared_align : 16));
    put(t, ".visible .entry %s(\n", name);
    const tir_prim_func *f = d->f;
    for (int i = 0; i < f->nparams; i++) {
        int rc = f->buffer_map[i] ? RC_RD : rc_of(f->params[i]->base.dtype);
        put(t, "\t.param .%s %s_param_%d%s\n", rc == RC_R ? "u32" : rc == RC_RD ? "u64" : "f32", name, i,
            i + 1 < f->nparams ? "," : "");
    }
    put(t, ")\n");
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        v[i] = 1;
        if (d->info->max_threads)
            v[i] = i == 0 ? d->info->max_threads : 1;
        else if (d->info->dims[3 + i])
            tir_expr_const_int(d->info->dims[3 + i], &v[i]);
    }
    put(t, ".maxntid %lld, %lld, %lld\n", (long long)v[0], (long long)v[1], (long long)v[2]);
    if (d->info->min_blocks) put(t, ".minnctapersm %lld\n", (long long)d->info->min_blocks);
    if (d->info->max_regs) put(t, ".maxnreg %lld\n", (long long)d->info->max_regs);
    put(t, "{\n");
    for (int c = 0; c < RC_N; c++)
        if (d->nreg[c]) put(t, "\t.reg %s \t%s<%d>;\n", rc_decl[c], rc_name[c], d->nreg[c]);
}

bool cg_direct_ptx(tir_ctx *ctx, const tir_prim_func *f, const cg_info *info, const tir_codegen_opts *o,
                   const char *name, tir_module *m) {
    dg d = {.ctx = ctx, .f = f, .info = info, .opts = o, .unrolled = 1};
    d.cse = ir_xcalloc(DCSE_SIZE, sizeof *d.cse);
    d.capregions = 64;
    d.open = ir_xcalloc(d.capregions, sizeof *d.open);
    d.rlevel = ir_xcalloc(d.capregions, sizeof *d.rlevel);
    d.open[0] = true;
    d.out = &d.body;
    d.an = tir_analyzer_create(ctx);
    double t0 = ir_now_ms();
    bool ok = params(&d, name) && layout_shared(&d, f->body) && stmt(&d, f->body);
    if (ok) {
        /* emission places the buffers as cg_check's layout says */
        TIR_ASSERT(d.shared_bytes == info->shared_bytes);
        int ptx = cg_ptx_version(cg_features(o));
        dtext t = {0};
        head(&d, &t, name, o->arch, ptx ? ptx : 78);
        put(&t, "%s%s%s\tret;\n}\n", d.shared_decl.s ? d.shared_decl.s : "", d.pro.s ? d.pro.s : "",
            d.body.s ? d.body.s : "");
        m->ptx_len = t.n;
        char *p = tir_ctx_alloc(ctx, t.n + 1);
        memcpy(p, t.s, t.n + 1);
        m->ptx = p;
        free(t.s);
        *(info->dyn_shared ? &m->dyn_shared_bytes : &m->shared_bytes) = info->shared_bytes;
        m->ptx_ms = ir_now_ms() - t0;
    } else {
        m->direct_refusal = tir_intern(ctx, d.why ? d.why : "?");
    }
    free(d.pro.s);
    free(d.body.s);
    free(d.shared_decl.s);
    free(d.vars);
    free(d.bufs);
    free(d.cse);
    free(d.open);
    free(d.rlevel);
    free(d.loops);
    free(d.undo);
    free(d.memo);
    tir_analyzer_destroy(d.an);
    return ok;
}
