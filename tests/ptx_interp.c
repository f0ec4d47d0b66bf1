/* ptx_interp.c: a CPU interpreter for the subset of PTX that LLVM's NVPTX
 * backend emits for minitir's kernels and that a direct PTX emitter
 * prints, used by the tests as an oracle (no GPU here or in CI).
 *
 * The text is tokenised, then parsed once into an array of decoded
 * instructions per .entry (an opcode enum, its types and modifiers, and
 * typed operands: register slots, immediates already converted to the
 * instruction's type, addresses as base register or resolved symbol plus
 * offset, vector operand lists); labels become instruction indices.  A
 * run gives each thread of a block a file of 64-bit register slots (f32
 * as its bits) and runs the threads one after the other, each until it
 * reaches a barrier, a warp-collective instruction or exits.  A warp (32
 * consecutive linear thread ids; the last one may be partial) whose
 * threads all wait at one warp-collective instruction (ldmatrix, mma,
 * shfl) runs it once for the whole warp with every lane's operands, and
 * they go on;
 * a warp with some threads there and others elsewhere (another
 * instruction, a barrier, exited) or with a guard that differs across it
 * is an error (PTX: .aligned, undefined).  A thread that goes around the
 * instruction and reaches it later is not told from one that waited (the
 * interpreter does not track dynamic instances).  When every thread waits
 * at the same barrier instruction they are all released.  Any construct
 * outside the subset is an error that names its line: an oracle must
 * never guess.
 *
 * Memory: global addresses are host pointers and must fall inside one
 * buffer argument; shared memory is a per-block array seen at the window
 * SHARED_BASE (static arrays laid out in declaration order with their
 * alignment, then the dynamic .extern array); local memory is a
 * per-thread array at LOCAL_BASE.  Generic (space-less) ld/st resolve by
 * those windows.  cp.async copies at issue (a legal execution of the
 * asynchronous copy), so commit/wait are no-ops.
 *
 * Floating point is IEEE-exact where PTX is: f32 results are rounded to
 * nearest even by computing in float (the file is C11, which has
 * FP_CONTRACT off in GCC's ISO mode; fma is fmaf), denormals are kept
 * (.ftz is refused), NaN results of f32 arithmetic are the canonical
 * 0x7fffffff as on NVIDIA GPUs.  min/max.f32 return the non-NaN operand,
 * and order -0 below +0.
 *
 * The subset.  Directives: .version .target .address_size 64, .visible
 * .entry with .param .u/.s/.b 8-64 and .f32/.f64 (.ptr .global .align
 * allowed), .maxntid .reqntid (checked against the launch) .minnctapersm
 * .maxnctapersm .maxnreg, .reg (any scalar type, %r<N> or single names,
 * plain ones such as LLVM's `tmp` too, scoped by { }), .shared / .local
 * arrays with .align, .extern .shared at module scope, .pragma,
 * .loc/.file.  Instructions (any may be guarded by
 * @%p or @!%p): ld (.param .global .shared .local or generic, .nc and
 * cache hints, .v2 .v4, 8-64-bit and f32/f64 elements) and st; mov
 * (registers, immediates, special registers %tid %ntid %ctaid %nctaid
 * .x/.y/.z, %laneid, %warpid, array addresses, vector pack/unpack); cvta
 * (identity); integer add sub mul.lo/hi/wide mad.lo/hi/wide div rem neg
 * abs min max not cnot and or xor shl shr bfe bfi prmt (default mode)
 * popc clz; float add sub mul
 * (.rn or none) fma/mad/div/sqrt/rcp .rn, neg abs min max (f32, f64);
 * setp (all comparisons, .and/.or/.xor with a predicate, p|q); selp slct;
 * cvt between integers, integer <-> float (.rn; .rni/.rzi/.rmi/.rpi,
 * saturating, NaN -> 0), f32 <-> f64, cvt.rn.{f16,bf16}.f32 and
 * cvt.f32.{f16,bf16} (f16 and bf16 are otherwise bits: ld, st, mov),
 * float rounding to integral; bra
 * (.uni) ret exit; bar.sync / barrier.sync(.aligned) with a constant id
 * and no thread count; cp.async.ca/.cg.shared.global (with src-size),
 * commit_group, wait_group, wait_all; membar/fence (no-ops); atom.add
 * (f32, 32/64-bit integers), atom.exch, red.add.  Warp-collective:
 * ldmatrix.sync.aligned.m8n8.x1/.x2/.x4[.trans][.shared].b16 (rows of 16
 * bytes, 16-byte aligned, in shared memory, from lanes 0 .. 8 num - 1 as
 * on sm_80 on; the others' addresses are not read) and
 * mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.same.f32 and
 * m16n8k8.row.col.f32.tf32.tf32.f32 (a full warp; the PTX ISA's fragment
 * layouts, as src/ir/frag.c; d = c, then d = fmaf(a[i][k], b[k][j], d)
 * for k in order, in float, where the hardware's order is unspecified;
 * a tf32 register must have its low 13 bits clear), and
 * shfl.sync.{up,down,bfly,idx}.b32 (d|p too; the member mask must be the
 * warp's threads, and the warp converged at it).  Not: .ftz .sat .approx
 * and other rounding modes, .func and calls, .global/.const variables,
 * f16/bf16 arithmetic, cvt with .tf32, mma with f16 accumulators or other
 * shapes, ldmatrix .b8 and other shapes, vote/wgmma/tex and the rest.
 */
#include "ptx_interp.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARED_BASE 0x10000000ull
#define LOCAL_BASE 0x20000000ull
#define MAX_OPS 5
#define DEFAULT_STEPS (1ll << 28)

/* ------------------------------------------------------------------ types */

typedef enum ty {
    T_NONE, T_PRED, T_B8, T_B16, T_B32, T_B64, T_U8, T_U16, T_U32, T_U64,
    T_S8, T_S16, T_S32, T_S64, T_F32, T_F64, T_F16, T_BF16, T_NTY /* f16, bf16: bits, cvt */
} ty;
static const char *const ty_name[T_NTY] = {"",    "pred", "b8",  "b16", "b32", "b64",
                                           "u8",  "u16",  "u32", "u64", "s8",  "s16",
                                           "s32", "s64",  "f32", "f64", "f16", "bf16"};
static const uint8_t ty_bytes[T_NTY] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 2, 2};

static bool ty_signed(int t) { return t >= T_S8 && t <= T_S64; }
static bool ty_float(int t) { return t == T_F32 || t == T_F64; }
static bool ty_int(int t) { return t >= T_B8 && t <= T_S64; }
static int ty_bits(int t) { return t == T_PRED ? 1 : 8 * ty_bytes[t]; }

static uint64_t mask_bits(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

/* v as a value of type t: masked, or sign-extended to 64 bits. */
static inline uint64_t norm(uint64_t v, int t) {
    int sh = 64 - ty_bits(t);
    if (sh <= 0) return v;
    return ty_signed(t) ? (uint64_t)((int64_t)(v << sh) >> sh) : (v << sh) >> sh;
}

/* The type with twice t's width and its signedness (mul.wide). */
static int ty_wide(int t) {
    if (t == T_S16 || t == T_U16) return t + 1;
    if (t == T_S32 || t == T_U32) return t + 1;
    return T_NONE;
}

enum { SP_NONE, SP_GLOBAL, SP_SHARED, SP_LOCAL, SP_PARAM, SP_CONST };
static const char *const sp_name[] = {"generic", "global", "shared", "local", "param", "const"};

enum { OP_NONE, OP_MOV, OP_LD, OP_ST, OP_CVTA, OP_ADD, OP_SUB, OP_MUL, OP_MAD, OP_FMA, OP_DIV,
       OP_REM, OP_NEG, OP_ABS, OP_MIN, OP_MAX, OP_NOT, OP_CNOT, OP_AND, OP_OR, OP_XOR, OP_SHL,
       OP_SHR, OP_SETP, OP_SELP, OP_SLCT, OP_CVT, OP_BFE, OP_POPC, OP_CLZ, OP_SQRT, OP_RCP,
       OP_BRA, OP_RET, OP_BAR, OP_CPASYNC, OP_NOP, OP_ATOM, OP_RED, OP_BFI, OP_PRMT,
       OP_LDMATRIX, OP_MMA, OP_SHFL, OP_NOPS }; /* the warp-collectives last (run_thread) */

static const struct { const char *name; int op; } op_table[] = {
    {"mov", OP_MOV},   {"ld", OP_LD},       {"st", OP_ST},     {"cvta", OP_CVTA},
    {"add", OP_ADD},   {"sub", OP_SUB},     {"mul", OP_MUL},   {"mad", OP_MAD},
    {"fma", OP_FMA},   {"div", OP_DIV},     {"rem", OP_REM},   {"neg", OP_NEG},
    {"abs", OP_ABS},   {"min", OP_MIN},     {"max", OP_MAX},   {"not", OP_NOT},
    {"cnot", OP_CNOT}, {"and", OP_AND},     {"or", OP_OR},     {"xor", OP_XOR},
    {"shl", OP_SHL},   {"shr", OP_SHR},     {"setp", OP_SETP}, {"selp", OP_SELP},
    {"slct", OP_SLCT}, {"cvt", OP_CVT},     {"bfe", OP_BFE},   {"popc", OP_POPC},
    {"clz", OP_CLZ},   {"sqrt", OP_SQRT},   {"rcp", OP_RCP},   {"bra", OP_BRA},
    {"ret", OP_RET},   {"exit", OP_RET},    {"bar", OP_BAR},   {"barrier", OP_BAR},
    {"cp", OP_CPASYNC}, {"membar", OP_NOP}, {"fence", OP_NOP}, {"atom", OP_ATOM},
    {"red", OP_RED},   {"bfi", OP_BFI},   {"prmt", OP_PRMT},
    {"ldmatrix", OP_LDMATRIX}, {"mma", OP_MMA}, {"shfl", OP_SHFL},
};

/* Modifiers: rounding, comparisons, multiply halves, atomics. */
enum { R_NONE, R_RN, R_RZ, R_RM, R_RP, R_RNI, R_RZI, R_RMI, R_RPI };
static const char *const rnd_name[] = {"", "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"};
enum { C_NONE, C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE, C_LO, C_LS, C_HI, C_HS, C_EQU, C_NEU,
       C_LTU, C_LEU, C_GTU, C_GEU, C_NUM, C_NAN, C_NCMP };
static const char *const cmp_name[C_NCMP] = {"",   "eq",  "ne",  "lt",  "le",  "gt",  "ge",
                                             "lo", "ls",  "hi",  "hs",  "equ", "neu", "ltu",
                                             "leu", "gtu", "geu", "num", "nan"};
enum { M_NONE, M_LO, M_HI, M_WIDE };
enum { B_NONE, B_AND, B_OR, B_XOR };
enum { A_NONE, A_ADD, A_EXCH };
/* cp.async kinds */
enum { CP_COPY, CP_COMMIT, CP_WAIT };
/* shfl.sync modes */
enum { SH_NONE, SH_UP, SH_DOWN, SH_BFLY, SH_IDX };
static const char *const sh_name[] = {"", "up", "down", "bfly", "idx"};
/* mma: the shape (K) and the element type of A and B */
enum { MT_NONE, MT_F32, MT_BF16, MT_F16, MT_TF32 };
static const char *const mt_name[] = {"", "f32", "bf16", "f16", "tf32"};

/* ---------------------------------------------------------------- operands */

enum { O_NONE, O_REG, O_IMM, O_SPEC, O_ADDR, O_VEC, O_SYM, O_SINK, O_LABEL };
enum { L_INT, L_F32, L_F64, L_DEC }; /* literal kinds before typing */
enum { AB_REG, AB_ABS, AB_PARAM, AB_SYM };
enum { S_TIDX, S_TIDY, S_TIDZ, S_NTIDX, S_NTIDY, S_NTIDZ, S_CTAX, S_CTAY, S_CTAZ, S_NCTAX,
       S_NCTAY, S_NCTAZ, S_LANE, S_WARP, S_NSPEC };
static const char *const spec_name[S_NSPEC] = {
    "%tid.x",   "%tid.y",    "%tid.z",    "%ntid.x",   "%ntid.y",  "%ntid.z",  "%ctaid.x",
    "%ctaid.y", "%ctaid.z",  "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%warpid"};

typedef struct opnd {
    uint8_t kind;
    uint8_t neg;  /* !%p */
    uint8_t lit;  /* L_* of an immediate before typing */
    uint8_t base; /* AB_* of an address */
    int32_t reg;  /* REG/ADDR(reg): slot; SPEC: id; VEC: first pool index; SYM: token;
                   * PARAM: param index; LABEL: instruction index */
    int32_t n;    /* VEC: element count; REG: second setp destination (0: none) */
    uint64_t imm; /* IMM: bits; ADDR: offset (absolute: the whole address) */
} opnd;

typedef struct insn {
    uint8_t op, t, t2, space, vec, rnd, cmp, mode, boolop, aop, cpk;
    uint8_t nops, gneg;
    uint8_t num, trans, mk, mab; /* ldmatrix: .xN, .trans; mma: K (16 or 8), A/B type;
                                  * shfl: the mode in mk (SH_*) */
    int32_t guard; /* predicate slot, 0: none */
    int line;
    opnd o[MAX_OPS];
} insn;

/* A .shared/.local array. */
typedef struct sym {
    const char *name;
    int len, space;
    bool ext;
    int64_t align, size, off;
} sym;

typedef struct param {
    const char *name;
    int len, t;
} param;

typedef struct entry {
    char *name;
    param *params;
    int nparams;
    insn *code;
    int ncode;
    opnd *pool; /* vector elements */
    int npool;
    uint64_t *rmask; /* per register slot: its width's mask (slot 0: the sink) */
    int nregs;
    sym *syms; /* the function's arrays, then the module's used when it was parsed */
    int nsyms;
    int64_t static_shared, dyn_off, local_size;
    bool has_dyn;
    int64_t maxntid[3], reqntid[3];
} entry;

typedef struct module {
    entry *entries;
    int nentries;
    sym *syms; /* module-level .shared arrays */
    int nsyms;
} module;

/* ------------------------------------------------------------------ lexer */

enum { TK_WORD, TK_PUNCT, TK_STR, TK_EOF };
typedef struct tok {
    int kind, len, line;
    const char *s;
} tok;

/* A register declaration: `%r<N>` (count N) or a single `%x` (count 0). */
typedef struct regdecl {
    const char *name;
    int len, count, base, depth;
} regdecl;

typedef struct label {
    const char *name;
    int len, at;
} label;

typedef struct parser {
    tok *toks;
    int ntok, cap, pos;
    char *err;
    size_t errlen;
    module *m;
    entry *e;
    regdecl *regs;
    int nregdecl, regcap, depth;
    label *labels;
    int nlabels, labcap;
    int codecap, poolcap, msymcap, esymcap, maskcap;
    int64_t m_static_end; /* shared bytes of the module-level arrays so far */
} parser;

static int perr(parser *p, int line, const char *fmt, ...) {
    if (p->errlen && p->err && !p->err[0]) {
        int n = snprintf(p->err, p->errlen, "line %d: ", line);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < p->errlen) vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Grows *arr (elements of sz bytes) so that it holds n + 1. */
static void *grow(void *arr, int *cap, int n, size_t sz) {
    if (n < *cap) return arr;
    int nc = *cap ? *cap * 2 : 16;
    void *q = realloc(arr, (size_t)nc * sz);
    if (!q) abort();
    memset((char *)q + (size_t)*cap * sz, 0, (size_t)(nc - *cap) * sz);
    *cap = nc;
    return q;
}

static bool wordch(char c) {
    return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.';
}

static void push_tok(parser *p, int kind, const char *s, int len, int line) {
    p->toks = grow(p->toks, &p->cap, p->ntok, sizeof(tok));
    p->toks[p->ntok++] = (tok){kind, len, line, s};
}

/* A decimal number may have an exponent sign: 1.5e-3 is one word. */
static bool exp_sign(const char *b, const char *s) {
    if (!isdigit((unsigned char)b[0]) || (b[0] == '0' && strchr("fFdDxXbB", b[1]))) return false;
    return (s[-1] == 'e' || s[-1] == 'E') && (s[0] == '+' || s[0] == '-');
}

static const char *lex_word(const char *s) {
    const char *b = s;
    for (;;) {
        if (wordch(*s)) s++;
        else if (s[0] == ':' && s[1] == ':' && wordch(s[2])) s += 2; /* shared::cta */
        else if (s > b && exp_sign(b, s)) s++;
        else return s;
    }
}

static int lex(parser *p, const char *s) {
    int line = 1;
    while (*s) {
        char c = *s;
        if (c == '\n') line++, s++;
        else if (isspace((unsigned char)c)) s++;
        else if (c == '/' && s[1] == '/') { while (*s && *s != '\n') s++; }
        else if (c == '/' && s[1] == '*') {
            int l0 = line;
            for (s += 2; *s && !(s[0] == '*' && s[1] == '/'); s++) line += *s == '\n';
            if (!*s) return perr(p, l0, "unterminated comment");
            s += 2;
        } else if (c == '"') {
            const char *b = s++;
            while (*s && *s != '"' && *s != '\n') s++;
            if (*s != '"') return perr(p, line, "unterminated string");
            push_tok(p, TK_STR, b, (int)(++s - b), line);
        } else if (wordch(c)) {
            const char *e = lex_word(s);
            push_tok(p, TK_WORD, s, (int)(e - s), line);
            s = e;
        } else if (strchr(",;[]{}()<>+-@!:|=", c)) {
            push_tok(p, TK_PUNCT, s++, 1, line);
        } else {
            return perr(p, line, "unexpected character '%c'", c);
        }
    }
    push_tok(p, TK_EOF, s, 0, line);
    return 0;
}

/* --------------------------------------------------------- token helpers */

static tok *peek(parser *p) { return &p->toks[p->pos]; }
static tok *next(parser *p) { return p->pos < p->ntok - 1 ? &p->toks[p->pos++] : &p->toks[p->pos]; }
static bool is_punct(const tok *t, char c) { return t->kind == TK_PUNCT && t->s[0] == c; }
static bool tok_is(const tok *t, const char *w) {
    return t->kind == TK_WORD && (int)strlen(w) == t->len && !memcmp(t->s, w, (size_t)t->len);
}
static bool seq(const char *s, int len, const char *w) {
    return (int)strlen(w) == len && !memcmp(s, w, (size_t)len);
}

static int expect(parser *p, char c) {
    tok *t = next(p);
    if (!is_punct(t, c)) return perr(p, t->line, "expected '%c' before '%.*s'", c, t->len, t->s);
    return 0;
}

/* Skips the rest of a directive that ends at its line's end (.version). */
static void skip_line(parser *p, int line) {
    while (peek(p)->kind != TK_EOF && peek(p)->line == line) next(p);
}

/* Parses an integer or float literal: *lit gets L_*, *bits the value
 * (L_DEC: the double's bits). */
static int parse_number(parser *p, const tok *t, int *lit, uint64_t *bits) {
    char buf[80];
    if (t->kind != TK_WORD || t->len >= (int)sizeof buf || !isdigit((unsigned char)t->s[0]))
        return perr(p, t->line, "expected a number, not '%.*s'", t->len, t->s);
    memcpy(buf, t->s, (size_t)t->len);
    buf[t->len] = 0;
    char *end;
    if ((buf[1] == 'f' || buf[1] == 'F') && buf[0] == '0' && t->len == 10) {
        *lit = L_F32, *bits = strtoull(buf + 2, &end, 16);
    } else if ((buf[1] == 'd' || buf[1] == 'D') && buf[0] == '0' && t->len == 18) {
        *lit = L_F64, *bits = strtoull(buf + 2, &end, 16);
    } else if ((buf[1] == 'b' || buf[1] == 'B') && buf[0] == '0') {
        *lit = L_INT, *bits = strtoull(buf + 2, &end, 2);
    } else if (strpbrk(buf, ".eE") && !strpbrk(buf, "xX")) {
        double d = strtod(buf, &end);
        *lit = L_DEC;
        memcpy(bits, &d, 8);
    } else {
        *lit = L_INT, *bits = strtoull(buf, &end, 0);
    }
    if (*lit == L_INT && *end == 'U') end++;
    if (*end) return perr(p, t->line, "bad number '%s'", buf);
    return 0;
}

static int parse_int(parser *p, int64_t *v) {
    tok *t = next(p);
    int lit;
    uint64_t b;
    if (parse_number(p, t, &lit, &b) < 0) return -1;
    if (lit != L_INT) return perr(p, t->line, "expected an integer, not '%.*s'", t->len, t->s);
    *v = (int64_t)b;
    return 0;
}

/* ------------------------------------------------------------- registers */

static int parse_type_word(const tok *t) {
    if (t->kind != TK_WORD || t->s[0] != '.') return T_NONE;
    for (int i = 1; i < T_NTY; i++)
        if (seq(t->s + 1, t->len - 1, ty_name[i])) return i;
    return T_NONE;
}

static int new_slots(parser *p, int n, int t) {
    entry *e = p->e;
    int base = e->nregs;
    while (e->nregs + n >= p->maskcap) e->rmask = grow(e->rmask, &p->maskcap, p->maskcap, 8);
    for (int i = 0; i < n; i++) e->rmask[base + i] = mask_bits(ty_bits(t));
    e->nregs += n;
    return base;
}

static void add_regdecl(parser *p, const tok *name, int count, int t) {
    p->regs = grow(p->regs, &p->regcap, p->nregdecl, sizeof(regdecl));
    int base = new_slots(p, count ? count : 1, t);
    p->regs[p->nregdecl++] = (regdecl){name->s, name->len, count, base, p->depth};
}

/* `.reg .TYPE %r<N>;`, `.reg .TYPE %x, %y;` */
static int parse_reg_decl(parser *p, int line) {
    int t = parse_type_word(next(p));
    if (t == T_NONE) return perr(p, line, "bad .reg type");
    for (;;) {
        tok *name = next(p); /* %r, or a plain name: LLVM's `{ .reg .b16 tmp; ... }` */
        if (name->kind != TK_WORD || name->s[0] == '.' || isdigit((unsigned char)name->s[0]))
            return perr(p, line, "bad register name '%.*s'", name->len, name->s);
        int64_t count = 0;
        if (is_punct(peek(p), '<')) {
            next(p);
            if (parse_int(p, &count) < 0 || expect(p, '>') < 0) return -1;
            if (count <= 0 || count > (1 << 20)) return perr(p, line, "bad register count");
        }
        add_regdecl(p, name, (int)count, t);
        tok *sep = next(p);
        if (is_punct(sep, ';')) return 0;
        if (!is_punct(sep, ',')) return perr(p, line, "expected ',' or ';' in .reg");
    }
}

/* The slot of a register name, or -1. */
static int find_reg(parser *p, const char *s, int len) {
    int k = len;
    while (k > 1 && isdigit((unsigned char)s[k - 1])) k--;
    long idx = k < len ? strtol(s + k, NULL, 10) : -1;
    for (int i = p->nregdecl - 1; i >= 0; i--) {
        const regdecl *r = &p->regs[i];
        if (r->count == 0 && r->len == len && !memcmp(r->name, s, (size_t)len)) return r->base;
        if (r->count > 0 && idx >= 0 && r->len == k && !memcmp(r->name, s, (size_t)k) &&
            idx < r->count && (idx == 0 || s[k] != '0'))
            return r->base + (int)idx;
    }
    return -1;
}

static void pop_scope(parser *p) {
    while (p->nregdecl > 0 && p->regs[p->nregdecl - 1].depth > p->depth) p->nregdecl--;
}

/* ------------------------------------------------------------- variables */

/* `[.extern] .shared|.local [.align A] .TYPE name[N][M]... ;` after the space word. */
static int parse_var(parser *p, int space, bool ext, int line, sym **arr, int *n, int *cap) {
    int64_t align = 0, size = 1;
    if (tok_is(peek(p), ".align")) {
        next(p);
        if (parse_int(p, &align) < 0) return -1;
        if (align <= 0 || (align & (align - 1))) return perr(p, line, "bad .align");
    }
    int t = parse_type_word(next(p));
    if (t == T_NONE || t == T_PRED) return perr(p, line, "bad variable type");
    tok *name = next(p);
    if (name->kind != TK_WORD || name->s[0] == '%' || name->s[0] == '.')
        return perr(p, line, "bad variable name");
    bool unsized = false;
    while (is_punct(peek(p), '[')) {
        next(p);
        if (is_punct(peek(p), ']')) unsized = true;
        else {
            int64_t d;
            if (parse_int(p, &d) < 0) return -1;
            if (d < 0 || d > (1ll << 32)) return perr(p, line, "bad array size");
            size *= d;
        }
        if (expect(p, ']') < 0) return -1;
    }
    if (unsized != ext) return perr(p, line, ext ? "an .extern array has no size" : "array size missing");
    if (expect(p, ';') < 0) return -1;
    if (ext && space != SP_SHARED) return perr(p, line, "only .extern .shared is supported");
    *arr = grow(*arr, cap, *n, sizeof(sym));
    (*arr)[(*n)++] = (sym){name->s, name->len, space, ext, align ? align : ty_bytes[t],
                           unsized ? 0 : size * ty_bytes[t], 0};
    return 0;
}

/* ---------------------------------------------------------------- opcode */

typedef struct mods {
    int types[3], ntypes;
    bool cache, cg, uni, sync, to, aligned, l2size, m8n8, row, col;
    int mt[4], nmt; /* mma's types in order: D, A, B, C */
} mods;

static bool in_list(const char *s, int len, const char *const *list) {
    for (; *list; list++)
        if (seq(s, len, *list)) return true;
    return false;
}

static const char *const cache_mods[] = {"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt",
                                         "volatile", "relaxed", "acquire", "release", "weak",
                                         "sys", "gpu", "cta", "acq_rel", "sc", "gl", NULL};

/* A modifier of ldmatrix or mma: 1 taken, 0 not theirs. */
static int warp_mod(insn *in, mods *m, const char *s, int len) {
    if (seq(s, len, "sync")) return m->sync = true, 1;
    if (seq(s, len, "aligned")) return m->aligned = true, 1;
    if (in->op == OP_SHFL) {
        for (int k = SH_UP; k <= SH_IDX; k++)
            if (seq(s, len, sh_name[k])) return in->mk = (uint8_t)k, 1;
        return 0;
    }
    if (in->op == OP_LDMATRIX) {
        if (seq(s, len, "m8n8")) return m->m8n8 = true, 1;
        if (seq(s, len, "x1") || seq(s, len, "x2") || seq(s, len, "x4"))
            return in->num = (uint8_t)(s[1] - '0'), 1;
        if (seq(s, len, "trans")) return in->trans = 1, 1;
        return 0;
    }
    if (seq(s, len, "m16n8k16") || seq(s, len, "m16n8k8")) return in->mk = len == 8 ? 16 : 8, 1;
    if (seq(s, len, "row")) return m->row = !m->col, 1; /* .row.col in that order */
    if (seq(s, len, "col")) return m->col = true, 1;
    for (int k = MT_F32; k <= MT_TF32; k++)
        if (seq(s, len, mt_name[k])) {
            if (m->nmt < 4) m->mt[m->nmt] = k;
            return m->nmt++, 1;
        }
    return 0;
}

/* One modifier of the opcode; unknown ones are errors. */
static int opcode_mod(parser *p, insn *in, mods *m, const char *s, int len, int line) {
    if (in->op >= OP_LDMATRIX && warp_mod(in, m, s, len)) return 0;
    for (int t = 1; t < T_NTY; t++)
        if (seq(s, len, ty_name[t])) {
            if (m->ntypes == 3) break;
            m->types[m->ntypes++] = t;
            return 0;
        }
    for (int sp = 1; sp <= SP_CONST; sp++)
        if (seq(s, len, sp_name[sp]) || (sp == SP_SHARED && seq(s, len, "shared::cta"))) {
            if (in->op == OP_CPASYNC && in->space) /* .shared.global: dst, src */
                return sp == SP_GLOBAL ? 0 : perr(p, line, "cp.async reads .global only");
            in->space = (uint8_t)sp;
            return 0;
        }
    if (seq(s, len, "v2") || seq(s, len, "v4")) return in->vec = (uint8_t)(s[1] - '0'), 0;
    for (int r = 1; r <= R_RPI; r++)
        if (seq(s, len, rnd_name[r])) return in->rnd = (uint8_t)r, 0;
    if (in->op == OP_SETP) {
        for (int c = 1; c < C_NCMP; c++)
            if (!in->cmp && seq(s, len, cmp_name[c])) return in->cmp = (uint8_t)c, 0;
        if (seq(s, len, "and")) return in->boolop = B_AND, 0;
        if (seq(s, len, "or")) return in->boolop = B_OR, 0;
        if (seq(s, len, "xor")) return in->boolop = B_XOR, 0;
    }
    if (in->op == OP_MUL || in->op == OP_MAD) {
        if (seq(s, len, "lo")) return in->mode = M_LO, 0;
        if (seq(s, len, "hi")) return in->mode = M_HI, 0;
        if (seq(s, len, "wide")) return in->mode = M_WIDE, 0;
    }
    if ((in->op == OP_ATOM || in->op == OP_RED) && seq(s, len, "add")) return in->aop = A_ADD, 0;
    if (in->op == OP_ATOM && seq(s, len, "exch")) return in->aop = A_EXCH, 0;
    if (in->op == OP_CPASYNC) {
        if (seq(s, len, "async")) return 0;
        if (seq(s, len, "ca") || seq(s, len, "cg")) return m->cg = s[1] == 'g', m->cache = true, 0;
        if (seq(s, len, "commit_group")) return in->cpk = CP_COMMIT, 0;
        if (seq(s, len, "wait_group") || seq(s, len, "wait_all")) return in->cpk = CP_WAIT, 0;
    }
    if ((in->op == OP_CPASYNC || in->op == OP_LD) &&
        (seq(s, len, "L2::64B") || seq(s, len, "L2::128B") || seq(s, len, "L2::256B")))
        return m->l2size = true, 0; /* a prefetch hint */
    if (seq(s, len, "uni") && in->op == OP_BRA) return m->uni = true, 0;
    if (seq(s, len, "sync") && in->op == OP_BAR) return m->sync = true, 0;
    if (seq(s, len, "aligned") && in->op == OP_BAR) return 0;
    if (seq(s, len, "to") && in->op == OP_CVTA) return m->to = true, 0;
    if (in_list(s, len, cache_mods) &&
        (in->op == OP_LD || in->op == OP_ST || in->op == OP_ATOM || in->op == OP_RED ||
         in->op == OP_NOP || in->op == OP_CPASYNC))
        return m->cache = true, 0;
    return perr(p, line, "unsupported modifier '.%.*s'", len, s);
}

/* Splits the opcode word at its dots into op and modifiers. */
static int parse_opcode(parser *p, insn *in, const tok *t, mods *m) {
    const char *s = t->s, *end = t->s + t->len, *dot = memchr(s, '.', (size_t)t->len);
    int blen = (int)((dot ? dot : end) - s);
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (seq(s, blen, op_table[i].name)) in->op = (uint8_t)op_table[i].op;
    if (!in->op) return perr(p, t->line, "unsupported instruction '%.*s'", t->len, t->s);
    while (dot) {
        s = dot + 1;
        dot = memchr(s, '.', (size_t)(end - s));
        /* a dot inside "L2::128B"-like words does not occur; split plainly */
        if (opcode_mod(p, in, m, s, (int)((dot ? dot : end) - s), t->line) < 0) return -1;
    }
    in->t = (uint8_t)(m->ntypes > 0 ? m->types[0] : T_NONE);
    in->t2 = (uint8_t)(m->ntypes > 1 ? m->types[1] : T_NONE);
    if (!in->vec) in->vec = 1;
    return 0;
}

/* --------------------------------------------------------------- operands */

static int spec_id(const char *s, int len) {
    for (int i = 0; i < S_NSPEC; i++)
        if (seq(s, len, spec_name[i])) return i;
    return -1;
}

static int parse_reg_opnd(parser *p, const tok *t, opnd *o) {
    int sp = spec_id(t->s, t->len);
    if (sp >= 0) return o->kind = O_SPEC, o->reg = sp, 0;
    int r = find_reg(p, t->s, t->len);
    if (r < 0) return perr(p, t->line, "undeclared register or unsupported special register '%.*s'", t->len, t->s);
    o->kind = O_REG, o->reg = r;
    return 0;
}

static int parse_addr(parser *p, opnd *o) {
    tok *t = next(p);
    o->kind = O_ADDR;
    if (t->kind == TK_WORD && t->s[0] == '%') {
        if (parse_reg_opnd(p, t, o) < 0) return -1;
        if (o->kind != O_REG) return perr(p, t->line, "a special register as an address");
        o->kind = O_ADDR, o->base = AB_REG;
    } else if (t->kind == TK_WORD && isdigit((unsigned char)t->s[0])) {
        int lit;
        if (parse_number(p, t, &lit, &o->imm) < 0) return -1;
        if (lit != L_INT) return perr(p, t->line, "bad address");
        o->base = AB_ABS;
    } else if (t->kind == TK_WORD) {
        o->base = AB_SYM, o->reg = (int32_t)(t - p->toks);
    } else {
        return perr(p, t->line, "bad address");
    }
    while (is_punct(peek(p), '+') || is_punct(peek(p), '-')) {
        int64_t sign = is_punct(next(p), '-') ? -1 : 1, v;
        if (is_punct(peek(p), '-')) next(p), sign = -sign;
        if (parse_int(p, &v) < 0) return -1;
        o->imm += (uint64_t)(sign * v);
    }
    return expect(p, ']');
}

static int parse_simple(parser *p, opnd *o);

/* `{a, b, c, d}`: the elements go to the entry's pool. */
static int parse_vec(parser *p, opnd *o) {
    entry *e = p->e;
    o->kind = O_VEC, o->reg = e->npool, o->n = 0;
    for (;;) {
        opnd el = {0};
        if (parse_simple(p, &el) < 0) return -1;
        if (el.kind != O_REG && el.kind != O_IMM && el.kind != O_SINK)
            return perr(p, peek(p)->line, "bad vector element");
        e->pool = grow(e->pool, &p->poolcap, e->npool, sizeof(opnd));
        e->pool[e->npool++] = el;
        o->n++;
        tok *t = next(p);
        if (is_punct(t, '}')) { /* {%r1}: ldmatrix.x1's one register */
            bool one = o->n == 1 && e->code[e->ncode].op == OP_LDMATRIX;
            return o->n == 2 || o->n == 4 || one ? 0 : perr(p, t->line, "a vector of %d", o->n);
        }
        if (!is_punct(t, ',')) return perr(p, t->line, "expected ',' or '}' in a vector");
    }
}

/* A register, special register, immediate, symbol or `_`. */
static int parse_simple(parser *p, opnd *o) {
    tok *t = next(p);
    if (is_punct(t, '!')) {
        if (parse_simple(p, o) < 0) return -1;
        if (o->kind != O_REG) return perr(p, t->line, "'!' before a non-register");
        return o->neg = 1, 0;
    }
    if (is_punct(t, '-')) {
        if (parse_simple(p, o) < 0) return -1;
        if (o->kind != O_IMM) return perr(p, t->line, "'-' before a non-number");
        if (o->lit == L_INT) o->imm = 0 - o->imm; /* -9223372036854775808: no signed overflow */
        else o->imm ^= o->lit == L_F32 ? 0x80000000ull : 0x8000000000000000ull;
        return 0;
    }
    if (t->kind != TK_WORD) return perr(p, t->line, "unexpected '%.*s'", t->len, t->s);
    if (t->s[0] == '%') return parse_reg_opnd(p, t, o);
    if (isdigit((unsigned char)t->s[0])) {
        int lit;
        if (parse_number(p, t, &lit, &o->imm) < 0) return -1;
        return o->kind = O_IMM, o->lit = (uint8_t)lit, 0;
    }
    if (seq(t->s, t->len, "_")) return o->kind = O_SINK, 0;
    int r = find_reg(p, t->s, t->len); /* a register declared with a plain name */
    if (r >= 0) return o->kind = O_REG, o->reg = r, 0;
    o->kind = O_SYM, o->reg = (int32_t)(t - p->toks);
    return 0;
}

static int parse_operand(parser *p, opnd *o) {
    if (is_punct(peek(p), '[')) return next(p), parse_addr(p, o);
    if (is_punct(peek(p), '{')) return next(p), parse_vec(p, o);
    if (parse_simple(p, o) < 0) return -1;
    if (o->kind == O_REG && is_punct(peek(p), '|')) { /* setp's p|q */
        next(p);
        opnd q = {0};
        if (parse_simple(p, &q) < 0) return -1;
        if (q.kind != O_REG) return perr(p, peek(p)->line, "bad p|q destination");
        o->n = q.reg;
    }
    return 0;
}

/* ------------------------------------------------------ operand checking */

/* Converts a literal to the bits of type t. */
static int type_literal(parser *p, int line, opnd *o, int t) {
    uint64_t b = o->imm;
    double d;
    float f;
    memcpy(&d, &b, 8);
    if (t == T_F32) {
        if (o->lit == L_F32) return o->imm = b & 0xffffffffu, 0;
        f = o->lit == L_INT ? (float)(int64_t)b : (float)d; /* L_F64, L_DEC */
        uint32_t u;
        memcpy(&u, &f, 4);
        o->imm = u;
    } else if (t == T_F64) {
        if (o->lit == L_F32) {
            uint32_t u = (uint32_t)b;
            memcpy(&f, &u, 4);
            d = f;
        } else if (o->lit == L_INT) {
            d = (double)(int64_t)b;
        }
        memcpy(&o->imm, &d, 8);
    } else if (o->lit == L_DEC) {
        return perr(p, line, "a decimal float literal for .%s", ty_name[t]);
    } else if (t == T_PRED) {
        o->imm = b != 0;
    } else {
        o->imm = b & mask_bits(ty_bits(t ? t : T_B64));
    }
    o->lit = L_INT;
    return 0;
}

/* The type of source operand i (immediates are converted to it). */
static int opnd_type(const insn *in, int i) {
    switch (in->op) {
    case OP_CVT: return i == 1 ? in->t2 : in->t;
    case OP_SHL:
    case OP_SHR: return i == 2 ? T_U32 : in->t;
    case OP_BFE: return i >= 2 ? T_U32 : in->t;
    case OP_BFI: return i >= 3 ? T_U32 : in->t;
    case OP_MAD: return i == 3 && in->mode == M_WIDE ? ty_wide(in->t) : in->t;
    case OP_SETP: return i == 3 ? T_PRED : in->t;
    case OP_SELP: return i == 3 ? T_PRED : in->t;
    case OP_SLCT: return i == 3 ? in->t2 : in->t;
    case OP_CPASYNC:
    case OP_BAR: return T_U32;
    default: return in->t;
    }
}

static int type_operands(parser *p, insn *in) {
    for (int i = 0; i < in->nops; i++) {
        opnd *o = &in->o[i];
        int t = opnd_type(in, i);
        if (o->kind == O_IMM && type_literal(p, in->line, o, t) < 0) return -1;
        if (o->kind == O_VEC)
            for (int k = 0; k < o->n; k++) {
                opnd *el = &p->e->pool[o->reg + k];
                if (el->kind == O_IMM && type_literal(p, in->line, el, in->t) < 0) return -1;
            }
    }
    return 0;
}

/* Checks operand kinds against spec: d dest register, s source value,
 * a address, v dest register or vector, w source or vector, l label, i
 * immediate, ? the rest optional. */
static int check_ops(parser *p, const insn *in, const char *spec) {
    int i = 0, opt = 0;
    for (const char *c = spec; *c; c++) {
        if (*c == '?') { opt = 1; continue; }
        if (i >= in->nops) {
            if (opt) return 0;
            return perr(p, in->line, "too few operands");
        }
        int k = in->o[i].kind;
        bool ok = (*c == 'd' && (k == O_REG || k == O_SINK)) ||
                  (*c == 's' && (k == O_REG || k == O_IMM || k == O_SPEC)) ||
                  (*c == 'a' && k == O_ADDR) || (*c == 'l' && k == O_LABEL) ||
                  (*c == 'i' && k == O_IMM) ||
                  (*c == 'v' && (k == O_REG || k == O_VEC || k == O_SINK)) ||
                  (*c == 'w' && (k == O_REG || k == O_IMM || k == O_VEC));
        if (!ok) return perr(p, in->line, "operand %d has the wrong kind", i + 1);
        i++;
    }
    if (i != in->nops) return perr(p, in->line, "too many operands");
    return 0;
}

/* ------------------------------------------------------------ validation */

static int need_type(parser *p, const insn *in, bool ok) {
    if (ok) return 0;
    return perr(p, in->line, "unsupported type '.%s' for this instruction", ty_name[in->t]);
}

static int check_float_rnd(parser *p, const insn *in, bool required) {
    if (in->rnd == R_RN || (in->rnd == R_NONE && !required)) return 0;
    if (in->rnd == R_NONE) return perr(p, in->line, "needs a rounding modifier (.rn)");
    return perr(p, in->line, "unsupported rounding '.%s' (only .rn)", rnd_name[in->rnd]);
}

/* add sub mul mad fma div rem. */
static int check_arith(parser *p, insn *in) {
    bool f = ty_float(in->t), i = ty_int(in->t);
    if (need_type(p, in, f || i) < 0) return -1;
    if (i && in->rnd) return perr(p, in->line, "a rounding modifier on an integer operation");
    int ns = in->op == OP_MAD || in->op == OP_FMA ? 3 : 2;
    if (f) {
        if (in->mode) return perr(p, in->line, ".lo/.hi/.wide on a float operation");
        if (in->op == OP_REM) return need_type(p, in, false);
        if (in->op == OP_MAD) in->op = OP_FMA; /* mad.rn.f32 is fma.rn.f32 */
        bool req = in->op == OP_FMA || in->op == OP_DIV;
        if (check_float_rnd(p, in, req) < 0) return -1;
    } else {
        if (in->op == OP_FMA) return need_type(p, in, false);
        if ((in->op == OP_MUL || in->op == OP_MAD) && !in->mode)
            return perr(p, in->line, "integer mul/mad needs .lo, .hi or .wide");
        if (in->mode == M_WIDE && ty_wide(in->t) == T_NONE) return need_type(p, in, false);
        if ((in->op == OP_DIV || in->op == OP_REM) && in->t <= T_B64)
            return need_type(p, in, false);
    }
    return check_ops(p, in, ns == 3 ? "dsss" : "dss");
}

static int check_unary(parser *p, insn *in) {
    bool f = ty_float(in->t);
    switch (in->op) {
    case OP_NEG:
    case OP_ABS:
        if (need_type(p, in, f || ty_signed(in->t)) < 0) return -1;
        break;
    case OP_NOT:
    case OP_CNOT: if (need_type(p, in, in->t == T_PRED || (in->t >= T_B8 && in->t <= T_B64)) < 0) return -1;
        break;
    case OP_POPC:
    case OP_CLZ: if (need_type(p, in, in->t == T_B32 || in->t == T_B64) < 0) return -1;
        break;
    default: /* sqrt rcp */
        if (need_type(p, in, f) < 0 || check_float_rnd(p, in, true) < 0) return -1;
    }
    if (in->rnd && (in->op != OP_SQRT && in->op != OP_RCP))
        return perr(p, in->line, "unexpected rounding modifier");
    return check_ops(p, in, "ds");
}

static int check_logic(parser *p, insn *in) {
    bool bits = in->t == T_PRED || (in->t >= T_B8 && in->t <= T_B64);
    if (in->op == OP_MIN || in->op == OP_MAX) bits = ty_int(in->t) || ty_float(in->t);
    if (in->op == OP_SHR) bits = ty_int(in->t);
    if (in->op == OP_SHL) bits = in->t >= T_B8 && in->t <= T_B64;
    if (in->op == OP_BFE) bits = in->t == T_U32 || in->t == T_S32 || in->t == T_U64 || in->t == T_S64;
    if (in->op == OP_BFI) bits = in->t == T_B32 || in->t == T_B64;
    if (in->op == OP_PRMT) bits = in->t == T_B32;
    if (need_type(p, in, bits) < 0) return -1;
    bool three = in->op == OP_BFE || in->op == OP_PRMT;
    return check_ops(p, in, three ? "dsss" : in->op == OP_BFI ? "dssss" : "dss");
}

static int check_setp(parser *p, insn *in) {
    if (!in->cmp) return perr(p, in->line, "setp without a comparison");
    if (need_type(p, in, ty_int(in->t) || ty_float(in->t)) < 0) return -1;
    if (in->cmp >= C_EQU && !ty_float(in->t))
        return perr(p, in->line, "'.%s' needs a float type", cmp_name[in->cmp]);
    if (in->cmp >= C_LO && in->cmp <= C_HS && ty_float(in->t))
        return perr(p, in->line, "'.%s' on a float type", cmp_name[in->cmp]);
    return check_ops(p, in, in->boolop ? "dsss" : "dss");
}

static int check_cvt(parser *p, insn *in) {
    int d = in->t, s = in->t2;
    bool h16 = d == T_F16 || d == T_BF16, s16 = s == T_F16 || s == T_BF16;
    if ((h16 && (s == T_F32 || ty_int(s)) && in->rnd == R_RN) || (s16 && d == T_F32 && in->rnd == R_NONE))
        return check_ops(p, in, "ds"); /* cvt.rn.{f16,bf16}.{f32,int}, cvt.f32.{f16,bf16} */
    if (!(ty_int(d) || ty_float(d)) || !(ty_int(s) || ty_float(s)))
        return perr(p, in->line, "cvt needs two integer or float types");
    bool ok;
    if (ty_int(d) && ty_int(s)) ok = in->rnd == R_NONE;
    else if (ty_float(d) && ty_int(s)) ok = in->rnd == R_RN;
    else if (ty_int(d)) ok = in->rnd >= R_RNI;
    else if (d == T_F64 && s == T_F32) ok = in->rnd == R_NONE;
    else if (d == T_F32 && s == T_F64) ok = in->rnd == R_RN;
    else ok = in->rnd >= R_RNI; /* f32.f32, f64.f64: round to an integral value */
    if (!ok) return perr(p, in->line, "unsupported rounding for cvt.%s.%s", ty_name[d], ty_name[s]);
    return check_ops(p, in, "ds");
}

static int check_vec_opnd(parser *p, const insn *in, const opnd *o) {
    if (o->kind == O_VEC ? o->n != in->vec : in->vec != 1)
        return perr(p, in->line, "vector operand does not match .v%d", in->vec);
    return 0;
}

static int check_mem(parser *p, insn *in) {
    if (in->t == T_NONE || in->t == T_PRED) return perr(p, in->line, "ld/st needs a type");
    if (in->space == SP_CONST) return perr(p, in->line, ".const memory is not supported");
    if (in->op == OP_ST && in->space == SP_PARAM) return perr(p, in->line, "st.param is not supported");
    if (in->space == SP_PARAM && in->vec != 1) return perr(p, in->line, "vector ld.param");
    if (in->op == OP_LD) return check_ops(p, in, "va") < 0 ? -1 : check_vec_opnd(p, in, &in->o[0]);
    return check_ops(p, in, "aw") < 0 ? -1 : check_vec_opnd(p, in, &in->o[1]);
}

static int check_mov(parser *p, insn *in) {
    if (in->t == T_NONE) return perr(p, in->line, "mov needs a type");
    if (in->nops == 2 && (in->o[0].kind == O_VEC || in->o[1].kind == O_VEC)) { /* pack/unpack */
        const opnd *v = in->o[0].kind == O_VEC ? &in->o[0] : &in->o[1];
        const opnd *s = v == &in->o[0] ? &in->o[1] : &in->o[0];
        if (s->kind != O_REG || ty_float(in->t) || in->t == T_PRED || ty_bytes[in->t] < 4)
            return perr(p, in->line, "unsupported vector mov");
        if (v == &in->o[1]) /* pack reads registers only */
            for (int k = 0; k < v->n; k++)
                if (p->e->pool[v->reg + k].kind != O_REG) return perr(p, in->line, "bad vector mov");
        in->vec = (uint8_t)v->n;
        return 0;
    }
    if (in->nops == 2 && in->o[1].kind == O_SYM) /* the address of an array */
        return in->o[0].kind == O_REG ? 0 : perr(p, in->line, "bad mov destination");
    return check_ops(p, in, "ds");
}

static int check_cp(parser *p, insn *in, const mods *m) {
    if (in->cpk == CP_COMMIT) return check_ops(p, in, "");
    if (in->cpk == CP_WAIT) return check_ops(p, in, "?i");
    if (in->space != SP_SHARED || !m->cache)
        return perr(p, in->line, "cp.async needs .ca or .cg and .shared.global");
    if (check_ops(p, in, "aai?s") < 0) return -1;
    uint64_t n = in->o[2].imm;
    if (n != 4 && n != 8 && n != 16) return perr(p, in->line, "cp.async size %llu", (unsigned long long)n);
    if (in->t != T_NONE) return perr(p, in->line, "cp.async takes no type");
    if (m->cg && n != 16) return perr(p, in->line, "cp.async.cg copies 16 bytes");
    return 0;
}

/* Operand o is a vector of n 32-bit registers (imm: f32 immediates too;
 * n == 1: a plain register also). */
static int check_regs(parser *p, const insn *in, const opnd *o, int n, bool imm, const char *what) {
    const opnd *v = o->kind == O_VEC ? &p->e->pool[o->reg] : o;
    if (o->kind == O_VEC ? o->n != n : !(n == 1 && o->kind == O_REG))
        return perr(p, in->line, "%s: want {} of %d registers", what, n);
    for (int k = 0; k < n; k++) {
        if (v[k].kind == O_IMM && imm) continue;
        if (v[k].kind != O_REG || v[k].neg || p->e->rmask[v[k].reg] != 0xffffffffu)
            return perr(p, in->line, "%s: element %d is not a 32-bit register", what, k + 1);
    }
    return 0;
}

/* ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans][.shared].b16 {r..}, [a]. */
static int check_ldm(parser *p, insn *in, const mods *m) {
    if (!m->sync || !m->aligned || !m->m8n8 || !in->num || in->t != T_B16 || in->t2 || in->vec != 1)
        return perr(p, in->line, "only ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16");
    if (in->space != SP_SHARED && in->space != SP_NONE)
        return perr(p, in->line, "ldmatrix reads .shared (or a generic address into it)");
    if (check_ops(p, in, "va") < 0) return -1;
    return check_regs(p, in, &in->o[0], in->num, false, "ldmatrix destination");
}

/* mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 and
 * m16n8k8 ... .f32.tf32.tf32.f32: d, a, b, c. */
static int check_mma(parser *p, insn *in, const mods *m) {
    int ab = m->nmt == 4 ? m->mt[1] : MT_NONE;
    bool types = m->nmt == 4 && m->mt[0] == MT_F32 && m->mt[3] == MT_F32 && m->mt[2] == ab &&
                 (in->mk == 16 ? ab == MT_BF16 || ab == MT_F16 : ab == MT_TF32);
    if (!m->sync || !m->aligned || !m->row || !m->col || !types || m->ntypes || in->space ||
        in->vec != 1 || in->rnd)
        return perr(p, in->line, "only mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.same.f32 "
                    "and m16n8k8.row.col.f32.tf32.tf32.f32");
    in->mab = (uint8_t)ab, in->t = T_F32; /* the type of C's immediates */
    if (in->nops != 4) return perr(p, in->line, "mma takes d, a, b, c");
    if (check_regs(p, in, &in->o[0], 4, false, "mma d") < 0 ||
        check_regs(p, in, &in->o[1], 4, false, "mma a") < 0 ||
        check_regs(p, in, &in->o[2], 2, false, "mma b") < 0)
        return -1;
    return check_regs(p, in, &in->o[3], 4, true, "mma c");
}

/* shfl.sync.{up,down,bfly,idx}.b32 d[|p], a, b, c, membermask. */
static int check_shfl(parser *p, insn *in, const mods *m) {
    if (!m->sync || m->aligned || !in->mk || in->t != T_B32 || in->t2 || in->vec != 1)
        return perr(p, in->line, "only shfl.sync.{up,down,bfly,idx}.b32");
    return check_ops(p, in, "dssss");
}

static int check_insn(parser *p, insn *in, const mods *m) {
    switch (in->op) {
    case OP_MOV: return check_mov(p, in);
    case OP_LD:
    case OP_ST: return check_mem(p, in);
    case OP_CVTA:
        if (in->t != T_U64 && in->t != T_U32) return need_type(p, in, false);
        if (in->space != SP_GLOBAL && in->space != SP_SHARED && in->space != SP_LOCAL)
            return perr(p, in->line, "cvta needs .global, .shared or .local");
        return check_ops(p, in, "ds");
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_MAD: case OP_FMA: case OP_DIV: case OP_REM:
        return check_arith(p, in);
    case OP_NEG: case OP_ABS: case OP_NOT: case OP_CNOT: case OP_POPC: case OP_CLZ:
    case OP_SQRT: case OP_RCP:
        return check_unary(p, in);
    case OP_MIN: case OP_MAX: case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR:
    case OP_BFE: case OP_BFI: case OP_PRMT:
        return check_logic(p, in);
    case OP_SETP: return check_setp(p, in);
    case OP_SELP: return need_type(p, in, in->t > T_PRED) < 0 ? -1 : check_ops(p, in, "dsss");
    case OP_SLCT:
        if (in->t2 != T_S32 && in->t2 != T_F32) return perr(p, in->line, "slct needs .s32 or .f32");
        return check_ops(p, in, "dsss");
    case OP_CVT: return check_cvt(p, in);
    case OP_BRA: return check_ops(p, in, "l");
    case OP_RET: return check_ops(p, in, "");
    case OP_BAR:
        if (!m->sync) return perr(p, in->line, "only bar.sync / barrier.sync are supported");
        if (in->nops == 2) return perr(p, in->line, "bar.sync with a thread count is not supported");
        return check_ops(p, in, "i");
    case OP_CPASYNC: return check_cp(p, in, m);
    case OP_LDMATRIX: return check_ldm(p, in, m);
    case OP_MMA: return check_mma(p, in, m);
    case OP_SHFL: return check_shfl(p, in, m);
    case OP_NOP: return check_ops(p, in, "");
    case OP_ATOM:
    case OP_RED:
        if (!in->aop || (in->op == OP_RED && in->aop != A_ADD))
            return perr(p, in->line, "only atom.add/atom.exch/red.add are supported");
        if (in->t != T_F32 && in->t != T_U32 && in->t != T_S32 && in->t != T_U64 && in->t != T_B32 &&
            in->t != T_B64)
            return need_type(p, in, false);
        if (in->space != SP_GLOBAL && in->space != SP_SHARED)
            return perr(p, in->line, "atomics need .global or .shared");
        return check_ops(p, in, in->op == OP_ATOM ? "das" : "as");
    default: return perr(p, in->line, "unsupported instruction");
    }
}

/* ----------------------------------------------------------- statements */

static int parse_guard(parser *p, insn *in) {
    tok *t = next(p);
    if (is_punct(t, '!')) in->gneg = 1, t = next(p);
    int r = t->kind == TK_WORD ? find_reg(p, t->s, t->len) : -1;
    if (r < 0 || p->e->rmask[r] != 1) return perr(p, t->line, "bad guard predicate");
    in->guard = r;
    return 0;
}

static int parse_insn(parser *p) {
    entry *e = p->e;
    e->code = grow(e->code, &p->codecap, e->ncode, sizeof(insn));
    insn *in = &e->code[e->ncode];
    memset(in, 0, sizeof *in);
    tok *t = next(p);
    in->line = t->line;
    if (is_punct(t, '@')) {
        if (parse_guard(p, in) < 0) return -1;
        t = next(p);
    }
    if (t->kind != TK_WORD) return perr(p, t->line, "unexpected '%.*s'", t->len, t->s);
    mods m = {0};
    if (parse_opcode(p, in, t, &m) < 0) return -1;
    if (is_punct(peek(p), ';')) next(p);
    else
        for (;;) {
            if (in->nops == MAX_OPS) return perr(p, in->line, "too many operands");
            if (parse_operand(p, &in->o[in->nops++]) < 0) return -1;
            tok *s = next(p);
            if (is_punct(s, ';')) break;
            if (!is_punct(s, ',')) return perr(p, s->line, "expected ',' or ';', not '%.*s'", s->len, s->s);
        }
    if (in->op == OP_BRA && in->nops == 1 && in->o[0].kind == O_SYM) in->o[0].kind = O_LABEL;
    for (int i = 0; i < in->nops; i++) /* as ptxas: [123] only for .local */
        if (in->o[i].kind == O_ADDR && in->o[i].base == AB_ABS && in->space != SP_LOCAL)
            return perr(p, in->line, "immediate addresses are allowed only for .local");
    if (check_insn(p, in, &m) < 0 || type_operands(p, in) < 0) return -1;
    e->ncode++;
    return 0;
}

static int parse_label(parser *p) {
    tok *t = next(p);
    next(p); /* ':' */
    for (int i = 0; i < p->nlabels; i++)
        if (p->labels[i].len == t->len && !memcmp(p->labels[i].name, t->s, (size_t)t->len))
            return perr(p, t->line, "duplicate label '%.*s'", t->len, t->s);
    p->labels = grow(p->labels, &p->labcap, p->nlabels, sizeof(label));
    p->labels[p->nlabels++] = (label){t->s, t->len, p->e->ncode};
    return 0;
}

/* .reg, .shared, .local, .extern .shared, .pragma, .loc inside a body. */
static int parse_body_directive(parser *p) {
    tok *t = next(p);
    entry *e = p->e;
    if (tok_is(t, ".reg")) return parse_reg_decl(p, t->line);
    if (tok_is(t, ".shared")) return parse_var(p, SP_SHARED, false, t->line, &e->syms, &e->nsyms, &p->esymcap);
    if (tok_is(t, ".local")) return parse_var(p, SP_LOCAL, false, t->line, &e->syms, &e->nsyms, &p->esymcap);
    if (tok_is(t, ".extern")) /* ptxas refuses it there too */
        return perr(p, t->line, ".extern inside a function (declare it at module scope)");
    if (tok_is(t, ".pragma")) {
        while (!is_punct(peek(p), ';') && peek(p)->kind != TK_EOF) next(p);
        return expect(p, ';');
    }
    if (tok_is(t, ".loc") || tok_is(t, ".file")) return skip_line(p, t->line), 0;
    return perr(p, t->line, "unsupported directive '%.*s' in a function", t->len, t->s);
}

static int parse_body(parser *p) {
    for (;;) {
        tok *t = peek(p);
        if (t->kind == TK_EOF) return perr(p, t->line, "unterminated function body");
        if (is_punct(t, '}')) {
            next(p);
            if (p->depth == 0) return 0;
            p->depth--;
            pop_scope(p);
        } else if (is_punct(t, '{')) {
            next(p);
            p->depth++;
        } else if (t->kind == TK_WORD && t->s[0] == '.') {
            if (parse_body_directive(p) < 0) return -1;
        } else if (t->kind == TK_WORD && is_punct(t + 1, ':')) {
            if (parse_label(p) < 0) return -1;
        } else if (parse_insn(p) < 0) {
            return -1;
        }
    }
}

/* --------------------------------------------------------- symbols, layout */

static int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* Offsets of the function's arrays: shared after the module's statics,
 * the dynamic array after all statics, local from 0. */
static void layout(parser *p, entry *e) {
    int64_t sh = p->m_static_end, loc = 0, dyn_align = 16;
    for (int i = 0; i < e->nsyms; i++) {
        sym *s = &e->syms[i];
        if (s->ext) {
            dyn_align = s->align > dyn_align ? s->align : dyn_align;
            e->has_dyn = true;
        } else if (s->space == SP_SHARED) {
            s->off = sh = align_up(sh, s->align), sh += s->size;
        } else {
            s->off = loc = align_up(loc, s->align), loc += s->size;
        }
    }
    for (int i = 0; i < p->m->nsyms; i++)
        if (p->m->syms[i].ext) {
            e->has_dyn = true;
            if (p->m->syms[i].align > dyn_align) dyn_align = p->m->syms[i].align;
        }
    e->static_shared = sh;
    e->dyn_off = align_up(sh, dyn_align);
    e->local_size = loc;
}

static const sym *find_sym(const sym *arr, int n, const tok *t) {
    for (int i = 0; i < n; i++)
        if (arr[i].len == t->len && !memcmp(arr[i].name, t->s, (size_t)t->len)) return &arr[i];
    return NULL;
}

/* The window address of a .shared/.local array named by t, or 0. */
static uint64_t sym_addr(parser *p, const entry *e, const tok *t) {
    const sym *s = find_sym(e->syms, e->nsyms, t);
    if (!s) s = find_sym(p->m->syms, p->m->nsyms, t);
    if (!s) return 0;
    if (s->space == SP_LOCAL) return LOCAL_BASE + (uint64_t)s->off;
    return SHARED_BASE + (uint64_t)(s->ext ? e->dyn_off : s->off);
}

static int resolve_label(parser *p, opnd *o) {
    const tok *t = &p->toks[o->reg];
    for (int i = 0; i < p->nlabels; i++)
        if (p->labels[i].len == t->len && !memcmp(p->labels[i].name, t->s, (size_t)t->len))
            return o->reg = p->labels[i].at, 0;
    return perr(p, t->line, "undefined label '%.*s'", t->len, t->s);
}

static int resolve_addr(parser *p, entry *e, insn *in, opnd *o) {
    const tok *t = &p->toks[o->reg];
    for (int i = 0; i < e->nparams; i++)
        if (e->params[i].len == t->len && !memcmp(e->params[i].name, t->s, (size_t)t->len)) {
            if (in->op != OP_LD || in->space != SP_PARAM)
                return perr(p, in->line, "a parameter outside ld.param");
            o->base = AB_PARAM, o->reg = i;
            return 0;
        }
    uint64_t a = sym_addr(p, e, t);
    if (!a) return perr(p, t->line, "undefined symbol '%.*s'", t->len, t->s);
    o->base = AB_ABS, o->imm += a;
    return 0;
}

static int resolve(parser *p, entry *e) {
    for (int k = 0; k < e->ncode; k++) {
        insn *in = &e->code[k];
        for (int i = 0; i < in->nops; i++) {
            opnd *o = &in->o[i];
            if (o->kind == O_LABEL && in->op == OP_BRA) {
                if (resolve_label(p, o) < 0) return -1;
            } else if (o->kind == O_LABEL || o->kind == O_SYM) { /* mov %rd, array */
                uint64_t a = sym_addr(p, e, &p->toks[o->reg]);
                if (!a) return perr(p, in->line, "undefined symbol '%.*s'", p->toks[o->reg].len, p->toks[o->reg].s);
                o->kind = O_IMM, o->imm = a;
            } else if (o->kind == O_ADDR && o->base == AB_SYM) {
                if (resolve_addr(p, e, in, o) < 0) return -1;
            }
        }
        if (in->op == OP_LD && in->space == SP_PARAM && in->o[1].base != AB_PARAM)
            return perr(p, in->line, "ld.param needs a parameter name");
    }
    return 0;
}

/* ----------------------------------------------------------------- entry */

static int parse_params(parser *p, entry *e) {
    int cap = 0;
    if (is_punct(peek(p), ')')) return next(p), 0;
    for (;;) {
        tok *t = next(p);
        if (!tok_is(t, ".param")) return perr(p, t->line, "expected .param");
        int ty = parse_type_word(next(p));
        if (ty == T_NONE || ty == T_PRED) return perr(p, t->line, "unsupported parameter type");
        while (tok_is(peek(p), ".ptr") || tok_is(peek(p), ".global") || tok_is(peek(p), ".align")) {
            int64_t a;
            if (tok_is(next(p), ".align") && parse_int(p, &a) < 0) return -1;
        }
        tok *name = next(p);
        if (name->kind != TK_WORD || name->s[0] == '.' || is_punct(peek(p), '['))
            return perr(p, t->line, "unsupported parameter declaration");
        e->params = grow(e->params, &cap, e->nparams, sizeof(param));
        e->params[e->nparams++] = (param){name->s, name->len, ty};
        tok *s = next(p);
        if (is_punct(s, ')')) return 0;
        if (!is_punct(s, ',')) return perr(p, s->line, "expected ',' or ')' in parameters");
    }
}

/* .maxntid / .reqntid x[, y[, z]] and the ignored performance tunings. */
static int parse_perf(parser *p, entry *e) {
    while (!is_punct(peek(p), '{')) {
        tok *t = next(p);
        int64_t *dims = tok_is(t, ".maxntid") ? e->maxntid : tok_is(t, ".reqntid") ? e->reqntid : NULL;
        if (dims) {
            for (int i = 0; i < 3; i++) {
                if (parse_int(p, &dims[i]) < 0) return -1;
                if (!is_punct(peek(p), ',')) break;
                next(p);
            }
        } else if (tok_is(t, ".minnctapersm") || tok_is(t, ".maxnctapersm") || tok_is(t, ".maxnreg")) {
            int64_t v;
            if (parse_int(p, &v) < 0) return -1;
        } else if (tok_is(t, ".noreturn")) {
        } else {
            return perr(p, t->line, "unsupported entry directive '%.*s'", t->len, t->s);
        }
    }
    next(p);
    return 0;
}

static int parse_entry(parser *p) {
    tok *name = next(p);
    if (name->kind != TK_WORD) return perr(p, name->line, "bad .entry name");
    module *m = p->m;
    m->entries = realloc(m->entries, sizeof(entry) * (size_t)(m->nentries + 1));
    if (!m->entries) abort();
    entry *e = p->e = &m->entries[m->nentries++];
    memset(e, 0, sizeof *e);
    e->name = strndup(name->s, (size_t)name->len);
    p->nregdecl = p->nlabels = p->depth = 0;
    p->codecap = p->poolcap = p->esymcap = p->maskcap = 0;
    new_slots(p, 1, T_B64); /* slot 0: sink and "no guard" */
    for (int i = 0; i < 3; i++) e->maxntid[i] = e->reqntid[i] = 0;
    if (expect(p, '(') < 0 || parse_params(p, e) < 0 || parse_perf(p, e) < 0) return -1;
    if (parse_body(p) < 0) return -1;
    layout(p, e);
    if (resolve(p, e) < 0) return -1;
    /* a branch to the end of the body runs off it: give it a ret */
    e->code = grow(e->code, &p->codecap, e->ncode, sizeof(insn));
    e->code[e->ncode++] = (insn){.op = OP_RET, .line = peek(p)->line};
    return 0;
}

/* ---------------------------------------------------------------- module */

static int parse_module_var(parser *p, const tok *t, bool ext) {
    module *m = p->m;
    if (parse_var(p, SP_SHARED, ext, t->line, &m->syms, &m->nsyms, &p->msymcap) < 0) return -1;
    sym *s = &m->syms[m->nsyms - 1];
    if (!ext) s->off = p->m_static_end = align_up(p->m_static_end, s->align), p->m_static_end += s->size;
    return 0;
}

static int parse_module(parser *p) {
    for (;;) {
        tok *t = next(p);
        if (t->kind == TK_EOF) return 0;
        if (tok_is(t, ".version") || tok_is(t, ".target") || tok_is(t, ".file") || tok_is(t, ".loc")) {
            skip_line(p, t->line);
        } else if (tok_is(t, ".address_size")) {
            int64_t v;
            if (parse_int(p, &v) < 0) return -1;
            if (v != 64) return perr(p, t->line, "only .address_size 64 is supported");
        } else if (tok_is(t, ".visible") || tok_is(t, ".weak")) {
            if (!tok_is(peek(p), ".entry")) return perr(p, t->line, "only .entry functions are supported");
        } else if (tok_is(t, ".entry")) {
            if (parse_entry(p) < 0) return -1;
        } else if (tok_is(t, ".shared")) {
            if (parse_module_var(p, t, false) < 0) return -1;
        } else if (tok_is(t, ".extern") && tok_is(peek(p), ".shared")) {
            next(p);
            if (parse_module_var(p, t, true) < 0) return -1;
        } else {
            return perr(p, t->line, "unsupported directive or token '%.*s'", t->len, t->s);
        }
    }
}

static void module_free(module *m) {
    for (int i = 0; i < m->nentries; i++) {
        entry *e = &m->entries[i];
        free(e->name), free(e->params), free(e->code), free(e->pool), free(e->rmask), free(e->syms);
    }
    free(m->entries);
    free(m->syms);
}

/* -------------------------------------------------------------- executor */

typedef struct gbuf {
    uint64_t lo, len;
    uint8_t *p;
} gbuf;

enum { TS_RUN, TS_BAR, TS_EXIT, TS_WARP }; /* TS_WARP: at a warp-collective instruction */

typedef struct run {
    const entry *e;
    int64_t grid[3], block[3], cta[3];
    int nthreads, nregs;
    uint64_t *regs; /* nthreads x nregs */
    uint8_t *shared, *local;
    int64_t shared_size, local_size;
    gbuf *bufs;
    int nbufs;
    uint64_t *pvals; /* parameter values (little-endian bytes of each) */
    int *pc;
    uint8_t *state;
    int64_t *left; /* steps left per thread */
    int64_t max_steps;
    uint8_t fill;
    ptx_interp_stats st;
    char *err;
    size_t errlen;
} run;

/* The thread's index (x, y, z) within the block. */
static void tid3(const run *r, int t, int64_t id[3]) {
    id[0] = t % r->block[0];
    id[1] = t / r->block[0] % r->block[1];
    id[2] = t / (r->block[0] * r->block[1]);
}

static int rerr(run *r, int t, int line, const char *fmt, ...) {
    if (r->errlen && !r->err[0]) {
        int64_t id[3];
        tid3(r, t, id);
        int n = snprintf(r->err, r->errlen, "line %d, block (%lld,%lld,%lld) thread (%lld,%lld,%lld): ",
                         line, (long long)r->cta[0], (long long)r->cta[1], (long long)r->cta[2],
                         (long long)id[0], (long long)id[1], (long long)id[2]);
        va_list ap;
        va_start(ap, fmt);
        if (n >= 0 && (size_t)n < r->errlen) vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static uint64_t special(const run *r, int t, int id) {
    int64_t tid[3];
    tid3(r, t, tid);
    switch (id) {
    case S_TIDX: case S_TIDY: case S_TIDZ: return (uint64_t)tid[id - S_TIDX];
    case S_NTIDX: case S_NTIDY: case S_NTIDZ: return (uint64_t)r->block[id - S_NTIDX];
    case S_CTAX: case S_CTAY: case S_CTAZ: return (uint64_t)r->cta[id - S_CTAX];
    case S_NCTAX: case S_NCTAY: case S_NCTAZ: return (uint64_t)r->grid[id - S_NCTAX];
    case S_LANE: return (uint64_t)(t % 32);
    default: return (uint64_t)(t / 32); /* %warpid */
    }
}

static inline uint64_t sval(const run *r, const uint64_t *R, const opnd *o, int t) {
    if (o->kind == O_REG) return o->neg ? (R[o->reg] & 1) ^ 1 : R[o->reg];
    if (o->kind == O_IMM) return o->imm;
    return special(r, t, o->reg);
}

static inline void wreg(const run *r, uint64_t *R, int slot, uint64_t v) {
    R[slot] = v & r->e->rmask[slot];
}

/* ----------------------------------------------------------------- memory */

static uint8_t *in_window(uint8_t *p, int64_t len, uint64_t base, uint64_t a, int size) {
    uint64_t off = a - base;
    if (a < base || off > (uint64_t)len || (uint64_t)len - off < (uint64_t)size) return NULL;
    return p + off;
}

static uint8_t *in_global(const run *r, uint64_t a, int size) {
    for (int i = 0; i < r->nbufs; i++) {
        uint64_t off = a - r->bufs[i].lo;
        if (a >= r->bufs[i].lo && off <= r->bufs[i].len && r->bufs[i].len - off >= (uint64_t)size)
            return r->bufs[i].p + off;
    }
    return NULL;
}

/* The host bytes of an access of size bytes at a in space, or NULL with
 * the error set.  align: the alignment the access needs. */
static uint8_t *mem(run *r, int t, int space, uint64_t a, int size, int align, int line) {
    if (align > 1 && a % (uint64_t)align)
        return rerr(r, t, line, "misaligned .%s access of %d bytes at 0x%llx", sp_name[space], size,
                    (unsigned long long)a), NULL;
    uint8_t *sh = r->shared, *lo = r->local + (size_t)t * (size_t)r->local_size, *p = NULL;
    if (space == SP_GLOBAL || space == SP_NONE) p = in_global(r, a, size);
    if (!p && (space == SP_SHARED || space == SP_NONE))
        p = in_window(sh, r->shared_size, SHARED_BASE, a, size);
    if (!p && (space == SP_LOCAL || space == SP_NONE))
        p = in_window(lo, r->local_size, LOCAL_BASE, a, size);
    if (!p)
        rerr(r, t, line, "out-of-bounds .%s access of %d bytes at 0x%llx", sp_name[space], size,
             (unsigned long long)a);
    return p;
}

static uint64_t eff_addr(const uint64_t *R, const opnd *o) {
    return o->base == AB_REG ? R[o->reg] + o->imm : o->imm;
}

static uint64_t load_val(const uint8_t *m, int t) {
    uint64_t v = 0;
    memcpy(&v, m, ty_bytes[t]);
    return norm(v, t);
}

static int exec_ld(run *r, uint64_t *R, const insn *in, int t) {
    int eb = ty_bytes[in->t], n = in->vec;
    const opnd *d = &in->o[0], *a = &in->o[1];
    if (in->space == SP_PARAM) {
        if (a->imm > (uint64_t)(8 - eb)) return rerr(r, t, in->line, "ld.param past its parameter");
        uint64_t v = r->pvals[a->reg] >> (8 * a->imm);
        wreg(r, R, d->reg, norm(v, in->t));
        return 0;
    }
    uint8_t *m = mem(r, t, in->space, eff_addr(R, a), eb * n, eb * n, in->line);
    if (!m) return -1;
    if (d->kind != O_VEC) return wreg(r, R, d->reg, load_val(m, in->t)), 0;
    const opnd *v = &r->e->pool[d->reg];
    for (int i = 0; i < n; i++)
        if (v[i].kind == O_REG) wreg(r, R, v[i].reg, load_val(m + i * eb, in->t));
    return 0;
}

static int exec_st(run *r, uint64_t *R, const insn *in, int t) {
    int eb = ty_bytes[in->t], n = in->vec;
    const opnd *s = &in->o[1];
    uint8_t *m = mem(r, t, in->space, eff_addr(R, &in->o[0]), eb * n, eb * n, in->line);
    if (!m) return -1;
    const opnd *v = s->kind == O_VEC ? &r->e->pool[s->reg] : s;
    for (int i = 0; i < n; i++) {
        uint64_t x = sval(r, R, &v[i], t);
        memcpy(m + i * eb, &x, (size_t)eb);
    }
    return 0;
}

/* cp.async: the copy is done at issue (a legal order of the async copy);
 * bytes past src-size are zeroed. */
static int exec_cp(run *r, uint64_t *R, const insn *in, int t) {
    int n = (int)in->o[2].imm;
    uint64_t ss = in->nops > 3 ? (uint32_t)sval(r, R, &in->o[3], t) : (uint64_t)n;
    if (ss > (uint64_t)n) return rerr(r, t, in->line, "cp.async src-size %llu > %d", (unsigned long long)ss, n);
    uint8_t *d = mem(r, t, SP_SHARED, eff_addr(R, &in->o[0]), n, n, in->line);
    if (!d) return -1;
    uint64_t sa = eff_addr(R, &in->o[1]);
    if (sa % (uint64_t)n) return rerr(r, t, in->line, "misaligned cp.async source 0x%llx", (unsigned long long)sa);
    if (ss) {
        uint8_t *s = mem(r, t, SP_GLOBAL, sa, (int)ss, 1, in->line);
        if (!s) return -1;
        memcpy(d, s, ss);
    }
    memset(d + ss, 0, (size_t)n - ss);
    return 0;
}

static uint64_t f32_bits(float f) {
    uint32_t u;
    if (f != f) return 0x7fffffffu; /* canonical NaN, as the GPU */
    memcpy(&u, &f, 4);
    return u;
}
static float bits_f32(uint64_t v) {
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint64_t f64_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
static double bits_f64(uint64_t v) {
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static double as_double(uint64_t v, int t) { return t == T_F32 ? bits_f32(v) : bits_f64(v); }

static int exec_atom(run *r, uint64_t *R, const insn *in, int t) {
    int eb = ty_bytes[in->t], ai = in->op == OP_ATOM ? 1 : 0;
    uint8_t *m = mem(r, t, in->space, eff_addr(R, &in->o[ai]), eb, eb, in->line);
    if (!m) return -1;
    uint64_t old = load_val(m, in->t), b = sval(r, R, &in->o[ai + 1], t), v = b;
    if (in->aop == A_ADD) v = in->t == T_F32 ? f32_bits(bits_f32(old) + bits_f32(b)) : old + b;
    memcpy(m, &v, (size_t)eb);
    if (ai) wreg(r, R, in->o[0].reg, old);
    return 0;
}

/* ------------------------------------------------------------- integers */

static uint64_t mul_hi(uint64_t a, uint64_t b, int t) {
    int w = ty_bits(t);
    bool s = ty_signed(t);
    if (w == 64)
        return s ? (uint64_t)(((__int128)(int64_t)a * (int64_t)b) >> 64)
                 : (uint64_t)(((unsigned __int128)a * b) >> 64);
    uint64_t prod = s ? (uint64_t)((int64_t)a * (int64_t)b) : a * b;
    return s ? (uint64_t)((int64_t)prod >> w) : prod >> w;
}

/* a * b of normalized operands in mode lo, hi or wide. */
static uint64_t imul(uint64_t a, uint64_t b, int t, int mode) {
    if (mode == M_HI) return mul_hi(a, b, t);
    if (mode == M_WIDE) return ty_signed(t) ? (uint64_t)((int64_t)a * (int64_t)b) : a * b;
    return a * b;
}

static int idiv(run *r, const insn *in, int t, uint64_t a, uint64_t b, uint64_t *out) {
    if (b == 0) return rerr(r, t, in->line, "integer division by zero");
    if (ty_signed(in->t)) {
        int64_t sa = (int64_t)a, sb = (int64_t)b, mn = (int64_t)norm(1ull << (ty_bits(in->t) - 1), in->t);
        if (sa == mn && sb == -1) return rerr(r, t, in->line, "integer division overflow (MIN / -1)");
        *out = (uint64_t)(in->op == OP_DIV ? sa / sb : sa % sb);
    } else {
        *out = in->op == OP_DIV ? a / b : a % b;
    }
    return 0;
}

static uint64_t shift(const insn *in, uint64_t a, uint64_t amt) {
    int w = ty_bits(in->t);
    if (in->op == OP_SHL) return amt >= (uint64_t)w ? 0 : a << amt;
    if (ty_signed(in->t)) return (uint64_t)((int64_t)a >> (amt >= (uint64_t)w ? 63 : amt));
    return amt >= (uint64_t)w ? 0 : a >> amt;
}

/* bfe: len bits of a from pos, zero- or sign-extended. */
static uint64_t bfe(uint64_t a, uint64_t pos, uint64_t len, int t) {
    int w = ty_bits(t);
    pos &= 0xff, len &= 0xff;
    if (len == 0) return 0;
    uint64_t top = pos + len - 1 < (uint64_t)w - 1 ? pos + len - 1 : (uint64_t)w - 1;
    uint64_t sbit = ty_signed(t) ? (a >> top) & 1 : 0, d = 0;
    for (int i = 0; i < w; i++) {
        uint64_t bit = ((uint64_t)i < len && pos + (uint64_t)i < (uint64_t)w) ? (a >> (pos + i)) & 1 : sbit;
        d |= bit << i;
    }
    return d;
}

/* bfi: b with its bits pos .. pos + len - 1 (those below the width) the
 * low bits of a. */
static uint64_t bfi(uint64_t a, uint64_t b, uint64_t pos, uint64_t len, int t) {
    int w = ty_bits(t);
    pos &= 0xff, len &= 0xff;
    for (uint64_t i = 0; i < len && pos + i < (uint64_t)w; i++)
        b = (b & ~(1ull << (pos + i))) | ((a >> i) & 1) << (pos + i);
    return b;
}

/* prmt.b32 (the default mode): byte i of d is byte c[4i+2:4i] of the
 * eight bytes b:a (a the low four), or with c[4i+3] set that byte's sign
 * bit replicated. */
static uint64_t prmt(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t src = (b & 0xffffffffu) << 32 | (a & 0xffffffffu), d = 0;
    for (int i = 0; i < 4; i++) {
        unsigned sel = (unsigned)(c >> (4 * i)) & 0xf;
        uint64_t byte = src >> (8 * (sel & 7)) & 0xff;
        if (sel & 8) byte = byte & 0x80 ? 0xff : 0;
        d |= byte << (8 * i);
    }
    return d;
}

static int exec_int(run *r, uint64_t *R, const insn *in, int t) {
    int ty = in->t;
    uint64_t a = norm(sval(r, R, &in->o[1], t), ty), v = 0;
    uint64_t b = in->nops > 2 ? norm(sval(r, R, &in->o[2], t), opnd_type(in, 2)) : 0;
    switch (in->op) {
    case OP_ADD: v = a + b; break;
    case OP_SUB: v = a - b; break;
    case OP_MUL: v = imul(a, b, ty, in->mode); break;
    case OP_MAD: v = imul(a, b, ty, in->mode) + norm(sval(r, R, &in->o[3], t), opnd_type(in, 3)); break;
    case OP_DIV:
    case OP_REM: if (idiv(r, in, t, a, b, &v) < 0) return -1; break;
    case OP_MIN:
    case OP_MAX: {
        bool lt = ty_signed(ty) ? (int64_t)a < (int64_t)b : a < b;
        v = (in->op == OP_MIN) == lt ? a : b;
        break;
    }
    case OP_NEG: v = -a; break;
    case OP_ABS: v = (int64_t)a < 0 ? -a : a; break;
    case OP_NOT: v = ~a; break;
    case OP_CNOT: v = a == 0; break;
    case OP_AND: v = a & b; break;
    case OP_OR: v = a | b; break;
    case OP_XOR: v = a ^ b; break;
    case OP_SHL:
    case OP_SHR: v = shift(in, a, b); break;
    case OP_BFE: v = bfe(a, b, norm(sval(r, R, &in->o[3], t), T_U32), ty); break;
    case OP_PRMT: v = prmt(a, b, sval(r, R, &in->o[3], t)); break;
    case OP_BFI:
        v = bfi(a, b, norm(sval(r, R, &in->o[3], t), T_U32), norm(sval(r, R, &in->o[4], t), T_U32), ty);
        break;
    case OP_POPC: v = (uint64_t)__builtin_popcountll(a); break;
    case OP_CLZ: v = a ? (uint64_t)(__builtin_clzll(a) - (64 - ty_bits(ty))) : (uint64_t)ty_bits(ty); break;
    default: return rerr(r, t, in->line, "internal: integer op %d", in->op);
    }
    wreg(r, R, in->o[0].reg, v);
    return 0;
}

/* --------------------------------------------------------------- floats */

/* min/max.f32: the non-NaN operand, canonical NaN if both; -0 < +0. */
static uint64_t fminmax(uint64_t a, uint64_t b, int t, bool is_max) {
    double x = as_double(a, t), y = as_double(b, t);
    int sb = t == T_F32 ? 31 : 63;
    if (x != x && y != y) return t == T_F32 ? 0x7fffffffu : 0x7fffffffffffffffull;
    if (x != x) return b;
    if (y != y) return a;
    if (x == y) { /* equal, or zeros of both signs */
        bool na = (a >> sb) & 1;
        return is_max == na ? b : a;
    }
    return (is_max ? x > y : x < y) ? a : b;
}

static uint64_t flt32(const insn *in, uint64_t a, uint64_t b, uint64_t c) {
    float x = bits_f32(a), y = bits_f32(b);
    switch (in->op) {
    case OP_ADD: return f32_bits(x + y);
    case OP_SUB: return f32_bits(x - y);
    case OP_MUL: return f32_bits(x * y);
    case OP_FMA: return f32_bits(fmaf(x, y, bits_f32(c)));
    case OP_DIV: return f32_bits(x / y);
    case OP_SQRT: return f32_bits(sqrtf(x));
    case OP_RCP: return f32_bits(1.0f / x);
    case OP_NEG: return (a ^ 0x80000000u) & 0xffffffffu;
    case OP_ABS: return a & 0x7fffffffu;
    default: return fminmax(a & 0xffffffffu, b & 0xffffffffu, T_F32, in->op == OP_MAX);
    }
}

static uint64_t flt64(const insn *in, uint64_t a, uint64_t b, uint64_t c) {
    double x = bits_f64(a), y = bits_f64(b);
    switch (in->op) {
    case OP_ADD: return f64_bits(x + y);
    case OP_SUB: return f64_bits(x - y);
    case OP_MUL: return f64_bits(x * y);
    case OP_FMA: return f64_bits(fma(x, y, bits_f64(c)));
    case OP_DIV: return f64_bits(x / y);
    case OP_SQRT: return f64_bits(sqrt(x));
    case OP_RCP: return f64_bits(1.0 / x);
    case OP_NEG: return a ^ 0x8000000000000000ull;
    case OP_ABS: return a & 0x7fffffffffffffffull;
    default: return fminmax(a, b, T_F64, in->op == OP_MAX);
    }
}

static int exec_flt(run *r, uint64_t *R, const insn *in, int t) {
    uint64_t a = sval(r, R, &in->o[1], t);
    uint64_t b = in->nops > 2 ? sval(r, R, &in->o[2], t) : 0;
    uint64_t c = in->nops > 3 ? sval(r, R, &in->o[3], t) : 0;
    wreg(r, R, in->o[0].reg, in->t == T_F32 ? flt32(in, a, b, c) : flt64(in, a, b, c));
    return 0;
}

/* ----------------------------------------------------- compare, select, cvt */

static bool fcmp(int cmp, double x, double y) {
    bool un = x != x || y != y;
    switch (cmp) {
    case C_EQ: return !un && x == y;
    case C_NE: return !un && x != y;
    case C_LT: return !un && x < y;
    case C_LE: return !un && x <= y;
    case C_GT: return !un && x > y;
    case C_GE: return !un && x >= y;
    case C_EQU: return un || x == y;
    case C_NEU: return un || x != y;
    case C_LTU: return un || x < y;
    case C_LEU: return un || x <= y;
    case C_GTU: return un || x > y;
    case C_GEU: return un || x >= y;
    case C_NUM: return !un;
    default: return un; /* C_NAN */
    }
}

static bool icmp(int cmp, int t, uint64_t a, uint64_t b) {
    bool s = ty_signed(t);
    uint64_t ua = norm(a, t) & mask_bits(ty_bits(t)), ub = norm(b, t) & mask_bits(ty_bits(t));
    int64_t sa = (int64_t)norm(a, t), sb = (int64_t)norm(b, t);
    switch (cmp) {
    case C_EQ: return ua == ub;
    case C_NE: return ua != ub;
    case C_LT: return s ? sa < sb : ua < ub;
    case C_LE: return s ? sa <= sb : ua <= ub;
    case C_GT: return s ? sa > sb : ua > ub;
    case C_GE: return s ? sa >= sb : ua >= ub;
    case C_LO: return ua < ub;
    case C_LS: return ua <= ub;
    case C_HI: return ua > ub;
    default: return ua >= ub; /* C_HS */
    }
}

static bool combine(int op, bool x, bool c) {
    return op == B_AND ? x && c : op == B_OR ? x || c : op == B_XOR ? x != c : x;
}

static void exec_setp(run *r, uint64_t *R, const insn *in, int t) {
    uint64_t a = sval(r, R, &in->o[1], t), b = sval(r, R, &in->o[2], t);
    bool x = ty_float(in->t) ? fcmp(in->cmp, as_double(a, in->t), as_double(b, in->t))
                             : icmp(in->cmp, in->t, a, b);
    bool c = in->boolop ? sval(r, R, &in->o[3], t) & 1 : false;
    wreg(r, R, in->o[0].reg, combine(in->boolop, x, c));
    if (in->o[0].n) wreg(r, R, in->o[0].n, combine(in->boolop, !x, c));
}

static void exec_slct(run *r, uint64_t *R, const insn *in, int t) {
    uint64_t c = sval(r, R, &in->o[3], t);
    bool ge = in->t2 == T_S32 ? (int32_t)(uint32_t)c >= 0 : bits_f32(c) >= 0.0f;
    wreg(r, R, in->o[0].reg, sval(r, R, ge ? &in->o[1] : &in->o[2], t));
}

static double round_int(double x, int rnd) {
    switch (rnd) {
    case R_RZI: return trunc(x);
    case R_RMI: return floor(x);
    case R_RPI: return ceil(x);
    default: return nearbyint(x); /* R_RNI: to nearest even */
    }
}

/* float -> integer: rounded, saturated, NaN -> 0. */
static uint64_t f2i(double x, int rnd, int t) {
    if (x != x) return 0;
    x = round_int(x, rnd);
    int w = ty_bits(t);
    if (ty_signed(t)) {
        double lim = ldexp(1.0, w - 1);
        if (x >= lim) return mask_bits(w - 1);
        if (x < -lim) return (uint64_t)1 << (w - 1);
        return (uint64_t)(int64_t)x;
    }
    if (x <= 0) return 0;
    if (x >= ldexp(1.0, w)) return mask_bits(w);
    return (uint64_t)x;
}

static float half_float(uint32_t h);

/* f32 to f16 or bf16 bits, to nearest even; NaN: the canonical 0x7fff. */
static uint64_t f32_to_16(uint64_t v, int d) {
    uint32_t u = (uint32_t)v, sign = u >> 16 & 0x8000, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7fff;
    if (d == T_BF16) return (u + 0x7fffu + (u >> 16 & 1)) >> 16; /* Inf stays, overflow carries to it */
    if (a >= 0x477ff000u) return sign | 0x7c00;                     /* from 65520 on: Inf */
    if (a < 0x38800000u) /* below 2^-14: a subnormal, in units of 2^-24 (exact scaling) */
        return sign | (uint32_t)nearbyintf(bits_f32(a) * 16777216.0f);
    return sign | (((a + 0xfffu + (a >> 13 & 1)) >> 13) - (112u << 10));
}

/* An integer of type s to f16 or bf16 bits, to nearest even: its
 * magnitude rounded to the format's significant bits (11, 8) first, which
 * float then holds exactly (no double rounding). */
static uint64_t int_to_16(uint64_t a, int s, int d) {
    int64_t v = (int64_t)norm(a, s);
    uint64_t u = ty_signed(s) && v < 0 ? 0 - (uint64_t)v : norm(a, s) & mask_bits(ty_bits(s));
    int p = u ? 63 - __builtin_clzll(u) : 0, keep = d == T_F16 ? 11 : 8, sh = 0;
    if (p >= keep) {
        sh = p - keep + 1;
        uint64_t rem = u & ((1ull << sh) - 1), half = 1ull << (sh - 1);
        u = (u >> sh) + (rem > half || (rem == half && (u >> sh & 1)));
    }
    float f = ldexpf((float)u, sh); /* exact: at most keep + 1 significant bits, below 2^65 */
    return f32_to_16(f32_bits(ty_signed(s) && v < 0 ? -f : f), d);
}

static uint64_t cvt_val(const insn *in, uint64_t a) {
    int d = in->t, s = in->t2;
    if ((d == T_F16 || d == T_BF16) && ty_int(s)) return int_to_16(a, s, d);
    if (d == T_F16 || d == T_BF16) return f32_to_16(a, d);
    if (s == T_BF16) return (a & 0xffff) << 16;
    if (s == T_F16) return f32_bits(half_float((uint32_t)a & 0xffff));
    /* to the destination type: cvt.s8.s32 of 248 is -8 (sign-extended to
     * a wider register), not 248 */
    if (ty_int(d) && ty_int(s)) return norm(norm(a, s), d);
    if (ty_int(d)) return f2i(as_double(a, s), in->rnd, d);
    if (ty_int(s)) { /* correctly rounded by the C conversions */
        int64_t sv = (int64_t)norm(a, s);
        uint64_t uv = norm(a, s);
        if (d == T_F32) return f32_bits(ty_signed(s) ? (float)sv : (float)uv);
        return f64_bits(ty_signed(s) ? (double)sv : (double)uv);
    }
    if (d == T_F64 && s == T_F32) return f64_bits(bits_f32(a));
    if (d == T_F32 && s == T_F64) return f32_bits((float)bits_f64(a));
    if (d == T_F32) return f32_bits((float)round_int(bits_f32(a), in->rnd));
    return f64_bits(round_int(bits_f64(a), in->rnd));
}

/* mov, including vector pack ({a, b} -> d) and unpack (d -> {a, b}). */
static void exec_mov(run *r, uint64_t *R, const insn *in, int t) {
    const opnd *d = &in->o[0], *s = &in->o[1];
    if (d->kind != O_VEC && s->kind != O_VEC) return wreg(r, R, d->reg, sval(r, R, s, t));
    int ew = ty_bits(in->t) / in->vec;
    const opnd *v = &r->e->pool[(d->kind == O_VEC ? d : s)->reg];
    if (s->kind == O_VEC) {
        uint64_t x = 0;
        for (int i = 0; i < in->vec; i++) x |= (R[v[i].reg] & mask_bits(ew)) << (i * ew);
        return wreg(r, R, d->reg, x);
    }
    uint64_t x = R[s->reg];
    for (int i = 0; i < in->vec; i++)
        if (v[i].kind == O_REG) wreg(r, R, v[i].reg, (x >> (i * ew)) & mask_bits(ew));
}

/* ------------------------------------------------------------ scheduling */

/* Runs thread t until it waits at a barrier or exits: TS_BAR, TS_EXIT or -1. */
static int run_thread(run *r, int t) {
    const insn *code = r->e->code;
    uint64_t *R = r->regs + (size_t)t * (size_t)r->nregs;
    int pc = r->pc[t], rc = 0;
    int64_t left = r->left[t], start = left;
    for (;; pc++) {
        const insn *in = &code[pc];
        if (--left < 0) {
            rc = rerr(r, t, in->line, "step limit exceeded (%lld instructions)", (long long)r->max_steps);
            break;
        }
        /* a warp-collective stops its thread even when predicated off:
         * warp_step checks that the whole warp agrees */
        if (in->guard && (R[in->guard] & 1) == in->gneg && in->op < OP_LDMATRIX) continue;
        switch (in->op) {
        case OP_BRA: pc = in->o[0].reg - 1; continue;
        case OP_RET: rc = TS_EXIT; break;
        case OP_BAR: rc = TS_BAR; break;
        case OP_LDMATRIX:
        case OP_MMA:
        case OP_SHFL: rc = TS_WARP; break;
        case OP_NOP: continue;
        case OP_CPASYNC: rc = in->cpk == CP_COPY ? exec_cp(r, R, in, t) : 0; break;
        case OP_LD: rc = exec_ld(r, R, in, t); break;
        case OP_ST: rc = exec_st(r, R, in, t); break;
        case OP_ATOM:
        case OP_RED: rc = exec_atom(r, R, in, t); break;
        case OP_MOV: exec_mov(r, R, in, t); continue;
        case OP_CVTA: wreg(r, R, in->o[0].reg, sval(r, R, &in->o[1], t)); continue;
        case OP_SETP: exec_setp(r, R, in, t); continue;
        case OP_SELP:
            wreg(r, R, in->o[0].reg, sval(r, R, &in->o[(sval(r, R, &in->o[3], t) & 1) ? 1 : 2], t));
            continue;
        case OP_SLCT: exec_slct(r, R, in, t); continue;
        case OP_CVT: wreg(r, R, in->o[0].reg, cvt_val(in, sval(r, R, &in->o[1], t))); continue;
        default: rc = ty_float(in->t) ? exec_flt(r, R, in, t) : exec_int(r, R, in, t); break;
        }
        if (rc != 0) break;
    }
    r->st.insns += start - (left < 0 ? 0 : left);
    r->pc[t] = pc, r->left[t] = left;
    return rc;
}

/* After a round: every live thread waits at one barrier instruction
 * (release them: 1), all exited (0), or an error (-1). */
static int barrier_check(run *r) {
    int first = -1, nexit = 0;
    for (int t = 0; t < r->nthreads; t++) {
        if (r->state[t] == TS_EXIT) nexit++;
        else if (first < 0) first = t;
        else if (r->pc[t] != r->pc[first])
            return rerr(r, t, r->e->code[r->pc[t]].line,
                        "waits at a barrier other than thread %d's (line %d): divergent barriers",
                        first, r->e->code[r->pc[first]].line);
    }
    if (first < 0) return 0;
    if (nexit)
        return rerr(r, first, r->e->code[r->pc[first]].line,
                    "waits at a barrier that %d of the block's %d threads exited without reaching",
                    nexit, r->nthreads);
    return 1;
}

/* ------------------------------------------------- warp-collective ops */

/* The 32-bit register v[k] of lane thread t (an f32 immediate of mma's c). */
static uint32_t lane_reg(const run *r, int t, const opnd *o, int k) {
    const opnd *v = o->kind == O_VEC ? &r->e->pool[o->reg + k] : o;
    if (v->kind == O_IMM) return (uint32_t)v->imm;
    return (uint32_t)r->regs[(size_t)t * (size_t)r->nregs + (size_t)v->reg];
}

static void lane_wreg(run *r, int t, const opnd *o, int k, uint32_t x) {
    const opnd *v = o->kind == O_VEC ? &r->e->pool[o->reg + k] : o;
    wreg(r, r->regs + (size_t)t * (size_t)r->nregs, v->reg, x);
}

/* ldmatrix over the warp of threads w0 .. w0 + n - 1 (PTX ISA, "Warp-level
 * matrix load instruction: ldmatrix"): lane l < 8 num gives the address
 * of row l % 8 of matrix l / 8, 16 bytes, 16-byte aligned, in shared
 * memory; lane l gets, of each matrix i, the b16 pair at row l / 4,
 * columns 2 (l % 4) and 2 (l % 4) + 1 (the first in the low half), or
 * with .trans the pair at rows 2 (l % 4), 2 (l % 4) + 1 of column l / 4.
 * All rows are read before any register is written (a destination may
 * be an address register). */
static int exec_ldmatrix(run *r, int w0, int n, const insn *in) {
    int nrows = 8 * in->num;
    uint16_t rows[32][8];
    if (n < nrows)
        return rerr(r, w0, in->line, "ldmatrix.x%d needs the row addresses of lanes 0-%d, the warp "
                    "has %d threads", in->num, nrows - 1, n);
    for (int l = 0; l < nrows; l++) {
        uint64_t a = eff_addr(r->regs + (size_t)(w0 + l) * (size_t)r->nregs, &in->o[1]);
        if (a % 16)
            return rerr(r, w0 + l, in->line, "ldmatrix: lane %d's row address 0x%llx is not 16-byte "
                        "aligned", l, (unsigned long long)a);
        uint8_t *p = in_window(r->shared, r->shared_size, SHARED_BASE, a, 16);
        if (!p)
            return rerr(r, w0 + l, in->line, "ldmatrix: lane %d's row (16 bytes at 0x%llx) is not "
                        "in shared memory", l, (unsigned long long)a);
        memcpy(rows[l], p, 16);
    }
    for (int l = 0; l < n; l++)
        for (int i = 0; i < in->num; i++) {
            int g = l / 4, c = 2 * (l % 4);
            const uint16_t *m = rows[8 * i];
            uint32_t lo = in->trans ? m[8 * c + g] : m[8 * g + c];
            uint32_t hi = in->trans ? m[8 * (c + 1) + g] : m[8 * g + c + 1];
            lane_wreg(r, w0 + l, &in->o[0], i, lo | hi << 16);
        }
    return 0;
}

static float half_float(uint32_t h) {
    int e = (int)(h >> 10 & 0x1f);
    uint32_t mant = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)mant, -24)
            : e == 31 ? (mant ? NAN : INFINITY)
                      : ldexpf((float)(mant | 0x400), e - 25);
    return h & 0x8000 ? -v : v;
}

/* An element of mma's A or B as a float: b16 halves of a register, or the
 * register as tf32.  A tf32 register must have its low 13 bits clear (as
 * cvt.rn.tf32.f32 and codegen's rounding leave them): what the hardware
 * makes of others is not the oracle's to guess.  false: such a register. */
static bool mma_elem(int ab, uint32_t reg, int half, float *x) {
    uint32_t b = reg >> (16 * half) & 0xffff;
    if (ab == MT_BF16) *x = bits_f32(b << 16);
    else if (ab == MT_F16) *x = half_float(b);
    else *x = bits_f32(reg);
    return ab != MT_TF32 || !(reg & 0x1fffu);
}

/* The tile rows and columns of lane l's fragment elements (PTX ISA,
 * "Matrix Fragments for mma.m16n8k16 / mma.m16n8k8", as src/ir/frag.c):
 * g = l / 4, t = l % 4; element v of A, B and C/D. */
static void frag_a(int k, int g, int t, int v, int *row, int *col) {
    if (k == 16) *row = g + 8 * (v / 2 % 2), *col = 2 * t + v % 2 + 8 * (v / 4);
    else *row = g + 8 * (v % 2), *col = t + 4 * (v / 2);
}
static void frag_b(int k, int g, int t, int v, int *row, int *col) {
    if (k == 16) *row = 2 * t + v % 2 + 8 * (v / 2), *col = g;
    else *row = t + 4 * v, *col = g;
}

/* mma over a full warp: D = A B + C on a 16 x 8 tile, A 16 x K, B K x 8,
 * computed in float as d = c, then d = fmaf(a[i][q], b[q][j], d) for q =
 * 0 .. K-1 in order (the hardware's order of the sum is unspecified; the
 * products of bf16, f16 and tf32 are exact in float).  A NaN result is
 * the canonical one. */
static int exec_mma(run *r, int w0, int n, const insn *in) {
    int K = in->mk, per = in->mab == MT_TF32 ? 1 : 2; /* elements per register */
    float a[16][16], b[16][8], c[16][8];
    if (n != 32) return rerr(r, w0, in->line, "mma needs a full warp, this one has %d threads", n);
    for (int l = 0; l < 32; l++) {
        int g = l / 4, t = l % 4, row, col;
        bool ok = true;
        for (int v = 0; v < 4 * per; v++) {
            frag_a(K, g, t, v, &row, &col);
            ok &= mma_elem(in->mab, lane_reg(r, w0 + l, &in->o[1], v / per), v % per, &a[row][col]);
        }
        for (int v = 0; v < 2 * per; v++) {
            frag_b(K, g, t, v, &row, &col);
            ok &= mma_elem(in->mab, lane_reg(r, w0 + l, &in->o[2], v / per), v % per, &b[row][col]);
        }
        if (!ok) return rerr(r, w0 + l, in->line, "mma: a .tf32 operand with its low 13 bits set");
        for (int v = 0; v < 4; v++)
            c[g + 8 * (v / 2)][2 * t + v % 2] = bits_f32(lane_reg(r, w0 + l, &in->o[3], v));
    }
    for (int l = 0; l < 32; l++)
        for (int v = 0; v < 4; v++) {
            int i = l / 4 + 8 * (v / 2), j = 2 * (l % 4) + v % 2;
            float d = c[i][j];
            for (int q = 0; q < K; q++) d = fmaf(a[i][q], b[q][j], d);
            lane_wreg(r, w0 + l, &in->o[0], v, (uint32_t)f32_bits(d));
        }
    return 0;
}

/* shfl.sync over the warp of threads w0 .. w0 + n - 1 (PTX ISA, shfl.sync):
 * lane l reads a from lane j of its mode (bfly: l ^ b; idx: b within l's
 * segment; up: l - b; down: l + b), clamped by c (c[4:0] the bound,
 * c[12:8] the segment mask): out of range, its own a, and p false.  The
 * member mask must be the warp's threads, all of them here (a lane that
 * is not there to read from is undefined). */
static int exec_shfl(run *r, int w0, int n, const insn *in) {
    uint32_t a[32], want = n == 32 ? 0xffffffffu : (1u << n) - 1;
    for (int l = 0; l < n; l++)
        a[l] = (uint32_t)sval(r, r->regs + (size_t)(w0 + l) * (size_t)r->nregs, &in->o[1], w0 + l);
    for (int l = 0; l < n; l++) {
        int t = w0 + l;
        uint64_t *R = r->regs + (size_t)t * (size_t)r->nregs;
        uint32_t b = (uint32_t)sval(r, R, &in->o[2], t) & 0x1f, c = (uint32_t)sval(r, R, &in->o[3], t);
        uint32_t mask = (uint32_t)sval(r, R, &in->o[4], t);
        if (mask != want)
            return rerr(r, t, in->line, "shfl.sync's member mask 0x%x is not the warp's %d threads "
                        "(0x%x)", mask, n, want);
        int seg = (int)(c >> 8 & 0x1f), maxl = (l & seg) | ((int)(c & 0x1f) & ~seg), minl = l & seg;
        int j = in->mk == SH_BFLY ? l ^ (int)b : in->mk == SH_IDX ? minl | ((int)b & ~seg)
              : in->mk == SH_UP ? l - (int)b : l + (int)b;
        bool p = in->mk == SH_UP ? j >= maxl : j <= maxl;
        if (!p) j = l;
        if (j < 0 || j >= n)
            return rerr(r, t, in->line, "shfl.sync reads lane %d, which the warp of %d threads "
                        "does not have", j, n);
        wreg(r, R, in->o[0].reg, a[j]);
        if (in->o[0].n) wreg(r, R, in->o[0].n, p);
    }
    return 0;
}

/* Why the warp of threads w0 .. w0 + n - 1 cannot run the collective at
 * thread t0's pc: -1 with the error, or 0. */
static int warp_converged(run *r, int w0, int n, int t0) {
    const insn *in = &r->e->code[r->pc[t0]];
    for (int t = w0; t < w0 + n; t++) {
        if (r->state[t] == TS_EXIT)
            return rerr(r, t0, in->line, "a warp-collective instruction that lane %d of the warp "
                        "exited without reaching", t - w0);
        if (r->state[t] != TS_WARP || r->pc[t] != r->pc[t0])
            return rerr(r, t, r->e->code[r->pc[t]].line, "lane %d waits at another instruction "
                        "than lane %d's warp-collective (line %d): a divergent warp", t - w0,
                        t0 - w0, in->line);
    }
    bool on = !in->guard || (r->regs[(size_t)t0 * (size_t)r->nregs + (size_t)in->guard] & 1) != in->gneg;
    for (int t = w0; t < w0 + n; t++) {
        bool o = !in->guard || (r->regs[(size_t)t * (size_t)r->nregs + (size_t)in->guard] & 1) != in->gneg;
        if (o != on)
            return rerr(r, t, in->line, "the guard of a warp-collective instruction differs across "
                        "the warp (lane %d: %d, lane %d: %d)", t - w0, o, t0 - w0, on);
    }
    return 0;
}

/* After a round: each warp with a thread at a warp-collective instruction
 * must have all its threads there (a warp: 32 consecutive linear thread
 * ids; the last may be partial); it runs once for the warp and they go
 * on.  Returns 1 if a warp went on, 0 if none waits, -1 on an error. */
static int warp_step(run *r) {
    int moved = 0;
    for (int w0 = 0; w0 < r->nthreads; w0 += 32) {
        int n = r->nthreads - w0 < 32 ? r->nthreads - w0 : 32, t0 = -1;
        for (int t = w0; t < w0 + n && t0 < 0; t++)
            if (r->state[t] == TS_WARP) t0 = t;
        if (t0 < 0) continue;
        if (warp_converged(r, w0, n, t0) < 0) return -1;
        const insn *in = &r->e->code[r->pc[t0]];
        bool on = !in->guard || (r->regs[(size_t)t0 * (size_t)r->nregs + (size_t)in->guard] & 1) != in->gneg;
        int rc = !on                     ? 0
               : in->op == OP_LDMATRIX ? exec_ldmatrix(r, w0, n, in)
               : in->op == OP_SHFL     ? exec_shfl(r, w0, n, in)
                                       : exec_mma(r, w0, n, in);
        if (rc < 0) return -1;
        r->st.warp_ops += on;
        for (int t = w0; t < w0 + n; t++) r->pc[t]++, r->state[t] = TS_RUN;
        moved = 1;
    }
    return moved;
}

static int run_block(run *r) {
    memset(r->regs, 0, sizeof(uint64_t) * (size_t)r->nthreads * (size_t)r->nregs);
    memset(r->shared, r->fill, (size_t)r->shared_size);
    memset(r->local, r->fill, (size_t)r->local_size * (size_t)r->nthreads);
    for (int t = 0; t < r->nthreads; t++) r->pc[t] = 0, r->state[t] = TS_RUN, r->left[t] = r->max_steps;
    for (;;) {
        for (int t = 0; t < r->nthreads; t++) {
            int s = r->state[t] == TS_RUN ? run_thread(r, t) : r->state[t];
            if (s < 0) return -1;
            r->state[t] = (uint8_t)s;
        }
        int ws = warp_step(r);
        if (ws < 0) return -1;
        if (ws) continue;
        int rel = barrier_check(r);
        if (rel <= 0) return rel;
        for (int t = 0; t < r->nthreads; t++) r->pc[t]++, r->state[t] = TS_RUN;
        r->st.barriers++;
    }
}

static int run_grid(run *r) {
    for (int64_t z = 0; z < r->grid[2]; z++)
        for (int64_t y = 0; y < r->grid[1]; y++)
            for (int64_t x = 0; x < r->grid[0]; x++) {
                r->cta[0] = x, r->cta[1] = y, r->cta[2] = z;
                if (run_block(r) < 0) return -1;
                r->st.blocks++;
            }
    return 0;
}

/* ------------------------------------------------------------------ setup */

static int setup_err(char *err, size_t errlen, const char *fmt, ...) {
    if (errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int check_launch(const entry *e, const int64_t grid[3], const int64_t block[3],
                        int64_t dyn_shared, char *err, size_t errlen) {
    int64_t n = 1, maxn = 1;
    for (int i = 0; i < 3; i++) {
        if (grid[i] < 1 || block[i] < 1 || grid[i] > (1ll << 31) || block[i] > 1024)
            return setup_err(err, errlen, "bad launch dimensions");
        if (e->reqntid[0] && block[i] != (e->reqntid[i] ? e->reqntid[i] : 1))
            return setup_err(err, errlen, "block does not match .reqntid");
        n *= block[i];
        maxn *= e->maxntid[i] ? e->maxntid[i] : 1;
    }
    if (n > 1024) return setup_err(err, errlen, "%lld threads per block", (long long)n);
    if (e->maxntid[0] && n > maxn)
        return setup_err(err, errlen, "%lld threads per block exceed .maxntid (%lld)", (long long)n, (long long)maxn);
    if (dyn_shared < 0 || dyn_shared > (1ll << 30)) return setup_err(err, errlen, "bad dynamic shared size");
    return 0;
}

static int setup_args(run *r, const ptx_arg *args, int nargs, char *err, size_t errlen) {
    const entry *e = r->e;
    if (nargs != e->nparams)
        return setup_err(err, errlen, "%s takes %d parameters, %d given", e->name, e->nparams, nargs);
    r->pvals = calloc((size_t)nargs + 1, 8);
    r->bufs = calloc((size_t)nargs + 1, sizeof(gbuf));
    if (!r->pvals || !r->bufs) return setup_err(err, errlen, "out of memory");
    for (int i = 0; i < nargs; i++) {
        int t = e->params[i].t;
        if (args[i].is_buffer) {
            if (ty_bytes[t] != 8 || ty_float(t))
                return setup_err(err, errlen, "parameter %d (.%s) is not a pointer", i, ty_name[t]);
            r->pvals[i] = (uint64_t)(uintptr_t)args[i].data;
            if (args[i].data && args[i].bytes)
                r->bufs[r->nbufs++] = (gbuf){(uint64_t)(uintptr_t)args[i].data, args[i].bytes, args[i].data};
        } else {
            r->pvals[i] = (uint64_t)args[i].scalar & mask_bits(ty_bits(t));
        }
    }
    return 0;
}

static int setup_memory(run *r, int64_t dyn_shared, char *err, size_t errlen) {
    const entry *e = r->e;
    r->nregs = e->nregs;
    r->shared_size = dyn_shared > 0 || e->has_dyn ? e->dyn_off + dyn_shared : e->static_shared;
    r->local_size = e->local_size;
    size_t n = (size_t)r->nthreads;
    r->regs = malloc(sizeof(uint64_t) * n * (size_t)r->nregs);
    r->shared = malloc((size_t)r->shared_size + 1);
    r->local = malloc((size_t)r->local_size * n + 1);
    r->pc = malloc(sizeof(int) * n);
    r->state = malloc(n);
    r->left = malloc(sizeof(int64_t) * n);
    if (!r->regs || !r->shared || !r->local || !r->pc || !r->state || !r->left)
        return setup_err(err, errlen, "out of memory");
    r->st.shared_bytes = r->shared_size, r->st.local_bytes = r->local_size, r->st.ninsns = e->ncode;
    return 0;
}

static void run_free(run *r) {
    free(r->regs), free(r->shared), free(r->local), free(r->pc), free(r->state), free(r->left);
    free(r->pvals), free(r->bufs);
}

static const entry *find_entry(const module *m, const char *name) {
    for (int i = 0; i < m->nentries; i++)
        if (!strcmp(m->entries[i].name, name)) return &m->entries[i];
    return NULL;
}

static int run_entry(const module *m, const char *name, const int64_t grid[3], const int64_t block[3],
                     const ptx_arg *args, int nargs, int64_t dyn_shared, const ptx_interp_opts *o,
                     ptx_interp_stats *stats, char *err, size_t errlen) {
    run r = {0};
    r.e = find_entry(m, name);
    if (!r.e) return setup_err(err, errlen, "no .entry named %s", name);
    if (check_launch(r.e, grid, block, dyn_shared, err, errlen) < 0) return -1;
    for (int i = 0; i < 3; i++) r.grid[i] = grid[i], r.block[i] = block[i];
    r.nthreads = (int)(block[0] * block[1] * block[2]);
    r.max_steps = o && o->max_steps_per_thread > 0 ? o->max_steps_per_thread : DEFAULT_STEPS;
    r.fill = o && o->fill ? o->fill : 0xff;
    r.err = err, r.errlen = errlen;
    int rc = setup_args(&r, args, nargs, err, errlen);
    if (rc == 0) rc = setup_memory(&r, dyn_shared, err, errlen);
    if (rc == 0) rc = run_grid(&r);
    if (stats) *stats = r.st;
    run_free(&r);
    return rc;
}

int ptx_interp_run_ex(const char *ptx, const char *entry_name, const int64_t grid[3],
                      const int64_t block[3], const ptx_arg *args, int nargs, int64_t dyn_shared,
                      const ptx_interp_opts *opts, ptx_interp_stats *stats, char *err,
                      size_t errlen) {
    module m = {0};
    parser p = {0};
    p.err = err, p.errlen = errlen, p.m = &m;
    if (errlen) err[0] = 0;
    if (stats) memset(stats, 0, sizeof *stats);
    int rc = lex(&p, ptx);
    if (rc == 0) rc = parse_module(&p);
    free(p.toks), free(p.regs), free(p.labels);
    if (rc == 0)
        rc = run_entry(&m, entry_name, grid, block, args, nargs, dyn_shared, opts, stats, err, errlen);
    module_free(&m);
    return rc;
}

int ptx_interp_run(const char *ptx, const char *entry, const int64_t grid[3], const int64_t block[3],
                   const ptx_arg *args, int nargs, int64_t dyn_shared, char *err, size_t errlen) {
    return ptx_interp_run_ex(ptx, entry, grid, block, args, nargs, dyn_shared, NULL, NULL, err, errlen);
}
