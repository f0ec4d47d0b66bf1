/* wgmma_sync codegen (src/codegen/cg_tensor.c, intrinsics.def): hand-written
 * lowered kernels of one warpgroup (128 threads) in TIR text, with one and
 * two groups of m64nRk8 TF32 (R = 8, 24, 64, 128, 256), accumulators shared
 * by two groups (k steps) or not, give PTX for sm_90a with exactly one
 * inline-PTX statement per call: the async-proxy fence, wgmma.fence, one
 * wgmma.mma_async per group in order with R/2 accumulator registers, four
 * cvt.rn.tf32 A registers and a descriptor with the 128-byte-swizzle
 * template, commit, wait 0; the tile's shared array starts 1024-byte
 * aligned in the static and the dynamic layout.  The PTX is read back
 * (register lists, distinct registers), and assembled by ptxas for sm_90a
 * when it is installed.  Malformed calls, a target other than sm_90 /
 * sm_90a, features before PTX 8.0, partial warpgroups, accumulators at
 * indices that are not constants and the host JIT are refused with
 * messages, before LLVM could fail.  Kernels without wgmma_sync keep
 * their target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cg_hostjit.h"
#include "cg_internal.h"
#include "ptxas_check.h"

/* A void wgmma_sync call in TIR text (the printer's T.<name> form would
 * give it the first argument's dtype: ir_text_call_dtype does not know
 * it), up to its arguments: WG ", args)". */
#define WG "T.call_intrin(\"void\", \"wgmma_sync\""

/* (1 << 62) | (64 << 32) | (1 << 16): swizzle mode 1, SBO 1024 bytes, LBO 1 */
#define DESC_TMPL "4611686293305360384"

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* ------------------------------------------------------------ kernels */

/* A one-warpgroup kernel: S (shared tile, s_elems of s_dtype, after an
 * optional 100-float shared pad buffer so that S is not first), Acc
 * (acc_elems of acc_dtype, loaded from X) and F (8 of f_dtype) local,
 * then `call` (TIR text of one statement), then Acc back to Y. */
typedef struct wg_kernel {
    int threads;
    int64_t s_elems, acc_elems;
    const char *s_dtype, *s_scope, *acc_dtype, *f_dtype;
    bool pad;
    bool no_sync; /* leave out the syncthreads before the call */
    const char *call;
} wg_kernel;

static const wg_kernel base_kernel = {
    .threads = 128, .s_elems = 8192, .acc_elems = 256, .s_dtype = "float32",
    .s_scope = "shared", .acc_dtype = "float32", .f_dtype = "float32"};

static const tir_prim_func *parse_kernel(tir_ctx *ctx, const wg_kernel *k) {
    char text[4096];
    int n = snprintf(
        text, sizeof text,
        "@T.prim_func\n"
        "def wg(X: T.Buffer((65536,), \"float32\"), Y: T.Buffer((65536,), \"float32\")):\n"
        "    for tx in T.thread_binding(0, %d, thread=\"threadIdx.x\"):\n"
        "%s"
        "        S = T.allocate((%lld,), \"%s\", scope=\"%s\")\n"
        "        Acc = T.allocate((%lld,), \"%s\", scope=\"local\")\n"
        "        F = T.allocate((8,), \"%s\", scope=\"local\")\n"
        "%s"
        "        for i in range(%lld):\n"
        "            S[i * %d + tx] = T.Cast(\"%s\", X[i * %d + tx])\n"
        "        for i in T.unroll(0, %lld):\n"
        "            Acc[i] = T.Cast(\"%s\", X[tx * 8 + i])\n"
        "        for i in T.unroll(0, 8):\n"
        "            F[i] = T.Cast(\"%s\", X[tx * 8 + i + 4096])\n"
        "%s"
        "        %s\n"
        "        for i in T.unroll(0, %lld):\n"
        "            Y[tx * %lld + i] = T.Cast(\"float32\", Acc[i])\n",
        k->threads, k->pad ? "        P = T.allocate((100,), \"float32\", scope=\"shared\")\n" : "",
        (long long)k->s_elems, k->s_dtype, k->s_scope, (long long)k->acc_elems, k->acc_dtype,
        k->f_dtype, k->pad ? "        P[tx % 100] = X[tx]\n        Y[tx] = P[99 - tx % 100]\n" : "",
        (long long)(k->s_elems / k->threads), k->threads, k->s_dtype, k->threads,
        (long long)k->acc_elems, k->acc_dtype, k->f_dtype,
        k->no_sync ? "" : "        T.syncthreads()\n", k->call, (long long)k->acc_elems,
        (long long)k->acc_elems);
    assert_true(n > 0 && n < (int)sizeof text);
    const tir_prim_func *f = NULL;
    if (tir_parse_func(ctx, text, strlen(text), &f) != TIR_OK)
        fail_msg("%s\n%s", tir_ctx_error(ctx), text);
    return f;
}

/* The kernel of base_kernel with `call`. */
static const tir_prim_func *kernel_with(tir_ctx *ctx, const char *call) {
    wg_kernel k = base_kernel;
    k.call = call;
    return parse_kernel(ctx, &k);
}

/* One group's TIR arguments: Acc[o] stride cs, F[p], S[x], R rows. */
static void group(char *buf, size_t n, int o, int cs, int p, int x, int rows) {
    snprintf(buf, n, "T.address_of(Acc[%d]), %d, T.address_of(F[%d]), T.address_of(S[%d]), %d", o,
             cs, p, x, rows);
}

static const tir_module *compile_opts(tir_ctx *ctx, const tir_prim_func *f,
                                      const tir_codegen_opts *o) {
    const tir_module *m = NULL;
    if (tir_codegen(ctx, f, o, &m) != TIR_OK) fail_msg("codegen failed: %s", tir_ctx_error(ctx));
    return m;
}

static const tir_module *compile(tir_ctx *ctx, const tir_prim_func *f) {
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.keep_llvm_ir = true;
    return compile_opts(ctx, f, &o);
}

/* ------------------------------------------------------------ reading PTX */

/* The registers of the brace list starting at *p ('{'): names into
 * regs (up to max), their count returned; *p moves past the '}'. */
static int reg_list(const char **p, char regs[][16], int max) {
    const char *s = *p;
    assert_int_equal(*s, '{');
    int n = 0;
    for (s++;;) {
        while (*s == ' ') s++;
        const char *e = s;
        while (*e && *e != ',' && *e != '}') e++;
        assert_true(e > s && e - s < 16 && n < max);
        memcpy(regs[n], s, (size_t)(e - s));
        regs[n][e - s] = '\0';
        n++;
        if (*e == '}') {
            *p = e + 1;
            return n;
        }
        assert_int_equal(*e, ',');
        s = e + 1;
    }
}

static int distinct(char regs[][16], int n) {
    int d = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(regs[i], regs[j]) == 0;
        d += !seen;
    }
    return d;
}

/* One wgmma.mma_async of the PTX: its accumulators and A registers. */
typedef struct wg_instr {
    int rows, nacc, na;
    char acc[128][16], a[4][16];
} wg_instr;

/* Reads the wgmma.mma_async instructions of ptx in order (at most max):
 * each m64n<R>k8 TF32 with R/2 accumulators, 4 A registers, a %rd
 * descriptor, the predicate and scale 1, 1. */
static int read_wgmmas(const char *ptx, wg_instr *w, int max) {
    static const char head[] = "wgmma.mma_async.sync.aligned.m64n";
    int n = 0;
    for (const char *p = strstr(ptx, head); p; p = strstr(p, head)) {
        assert_true(n < max);
        wg_instr *i = &w[n++];
        p += sizeof head - 1;
        i->rows = atoi(p);
        while (*p >= '0' && *p <= '9') p++;
        assert_int_equal(strncmp(p, "k8.f32.tf32.tf32 ", 17), 0);
        p += 17;
        i->nacc = reg_list(&p, i->acc, 128);
        assert_int_equal(strncmp(p, ", ", 2), 0);
        p += 2;
        i->na = reg_list(&p, i->a, 4);
        assert_int_equal(strncmp(p, ", %rd", 5), 0);
        p = strchr(p + 1, ',');
        assert_non_null(p);
        assert_int_equal(strncmp(p, ", p, 1, 1;", 10), 0);
    }
    return n;
}

/* What every wgmma_sync kernel's PTX has: sm_90a, PTX 8.0, `calls`
 * statements of `groups` wgmma in all, `waits` waits (one a statement,
 * one more before each group of another shape than the one before it,
 * each with its fence), a 1024-aligned shared tile, the descriptor
 * template, one TF32 conversion per A register. */
static void check_common_waits(const tir_module *m, int calls, int groups, int waits) {
    const char *ptx = m->ptx;
    assert_string_equal(m->arch, "sm_90a");
    assert_non_null(strstr(ptx, ".target sm_90a"));
    assert_non_null(strstr(ptx, ".version 8.0"));
    assert_int_equal(count(ptx, "fence.proxy.async.shared::cta;"), calls);
    assert_int_equal(count(ptx, "wgmma.fence.sync.aligned;"), waits);
    assert_int_equal(count(ptx, "wgmma.commit_group.sync.aligned;"), waits);
    assert_int_equal(count(ptx, "wgmma.wait_group.sync.aligned 0;"), waits);
    assert_int_equal(count(ptx, "wgmma.mma_async"), groups);
    assert_int_equal(count(ptx, "setp.ne.b32 p, 1, 0;"), calls);
    assert_int_equal(count(ptx, "cvt.rn.tf32.f32"), 4 * groups);
    assert_true(count(ptx, DESC_TMPL) >= 1);
    assert_non_null(strstr(ptx, ".align 1024"));
    /* the accumulators and A registers stay in registers */
    assert_null(strstr(ptx, "ld.local"));
    assert_null(strstr(ptx, "st.local"));
    assert_non_null(strstr(m->llvm_ir, "convergent"));
    ptxas_info pi;
    if (ptxas_assemble(m, &pi)) {
        assert_int_equal(pi.spill_stores, 0);
        assert_int_equal(pi.stack, 0);
    }
}

static void check_common(const tir_module *m, int calls, int groups) {
    check_common_waits(m, calls, groups, calls);
}

/* ------------------------------------------------------------ tests */

/* One group of R rows: R/2 distinct accumulators, 4 A registers. */
static void test_one_group(void **st) {
    (void)st;
    static const int rows[] = {8, 24, 64, 128, 256};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        tir_ctx *ctx = tir_ctx_create();
        char g[256], call[300];
        group(g, sizeof g, 0, 8, 0, 0, rows[i]);
        snprintf(call, sizeof call, WG ", %s)", g);
        const tir_module *m = compile(ctx, kernel_with(ctx, call));
        printf("# R %d: %zu bytes of PTX\n", rows[i], m->ptx_len);
        check_common(m, 1, 1);
        char text[64];
        snprintf(text, sizeof text, "wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32", rows[i]);
        assert_int_equal(count(m->ptx, text), 1);
        wg_instr w[1];
        assert_int_equal(read_wgmmas(m->ptx, w, 1), 1);
        assert_int_equal(w[0].rows, rows[i]);
        assert_int_equal(w[0].nacc, rows[i] / 2);
        assert_int_equal(distinct(w[0].acc, w[0].nacc), rows[i] / 2);
        assert_int_equal(w[0].na, 4);
        assert_int_equal(distinct(w[0].a, 4), 4);
        for (int r = 0; r < w[0].nacc; r++) assert_int_equal(strncmp(w[0].acc[r], "%f", 2), 0);
        for (int r = 0; r < 4; r++) assert_int_equal(strncmp(w[0].a[r], "%r", 2), 0);
        tir_ctx_destroy(ctx);
    }
}

/* Two k steps into one accumulator (F[0] / F[4], S[0] / S[8]): one
 * statement, the same R/2 registers in both wgmma (tied once), different
 * A registers, with ssa_locals on and off; two n tiles into Acc[0] and
 * Acc[64]: disjoint registers. */
static void test_two_groups(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char g0[256], g1[256], call[600];
    group(g0, sizeof g0, 0, 8, 0, 0, 64);
    group(g1, sizeof g1, 0, 8, 4, 8, 64);
    snprintf(call, sizeof call, WG ", %s, %s)", g0, g1);
    const tir_module *m = compile(ctx, kernel_with(ctx, call));
    check_common(m, 1, 2);
    wg_instr w[2];
    assert_int_equal(read_wgmmas(m->ptx, w, 2), 2);
    for (int r = 0; r < 32; r++) assert_string_equal(w[0].acc[r], w[1].acc[r]);
    assert_int_equal(distinct(w[0].acc, 32), 32);
    char a[8][16];
    memcpy(a, w[0].a, sizeof w[0].a);
    memcpy(a + 4, w[1].a, sizeof w[1].a);
    assert_int_equal(distinct(a, 8), 8);
    /* without ssa_locals the elements go through allocas, which SROA
     * promotes: the same statement */
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.keep_llvm_ir = true;
    o.ssa_locals = false;
    m = compile_opts(ctx, kernel_with(ctx, call), &o);
    check_common(m, 1, 2);
    assert_int_equal(read_wgmmas(m->ptx, w, 2), 2);
    for (int r = 0; r < 32; r++) assert_string_equal(w[0].acc[r], w[1].acc[r]);
    tir_ctx_destroy(ctx);

    ctx = tir_ctx_create();
    group(g0, sizeof g0, 0, 8, 0, 0, 128);
    group(g1, sizeof g1, 64, 8, 4, 4096, 128);
    snprintf(call, sizeof call, WG ", %s, %s)", g0, g1);
    m = compile(ctx, kernel_with(ctx, call));
    check_common(m, 1, 2);
    assert_int_equal(read_wgmmas(m->ptx, w, 2), 2);
    static char both[128][16];
    memcpy(both, w[0].acc, sizeof(char[16]) * 64);
    memcpy(both + 64, w[1].acc, sizeof(char[16]) * 64);
    assert_int_equal(distinct(both, 128), 128);
    tir_ctx_destroy(ctx);
}

/* Group order is kept and a stride cs > 8 places unit u at o + u cs:
 * R = 32 at cs 16 (Acc[0 .. 8) and Acc[16 .. 24)), then R = 8 at Acc[0]:
 * its four registers are the first four of the first group's.  The
 * hardware orders accumulators in flight only between wgmma of one shape
 * (PTX ISA, wgmma.fence), so the m64n8 waits for the m64n32 and fences
 * first. */
static void test_order_and_stride(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char g0[256], g1[256], call[600];
    group(g0, sizeof g0, 0, 16, 0, 0, 32);
    group(g1, sizeof g1, 0, 8, 4, 8, 8);
    snprintf(call, sizeof call, WG ", %s, %s)", g0, g1);
    const tir_module *m = compile(ctx, kernel_with(ctx, call));
    check_common_waits(m, 1, 2, 2);
    assert_non_null(strstr(m->ptx, "wgmma.wait_group.sync.aligned 0;\n\twgmma.fence.sync.aligned;"
                                    "\n\twgmma.mma_async.sync.aligned.m64n8k8"));
    wg_instr w[2];
    assert_int_equal(read_wgmmas(m->ptx, w, 2), 2);
    assert_int_equal(w[0].rows, 32);
    assert_int_equal(w[1].rows, 8);
    assert_int_equal(w[0].nacc, 16);
    assert_int_equal(w[1].nacc, 4);
    for (int r = 0; r < 4; r++) assert_string_equal(w[0].acc[r], w[1].acc[r]);
    assert_int_equal(distinct(w[0].acc, 16), 16);
    tir_ctx_destroy(ctx);
}

/* Two calls: two statements, each with its fence and wait. */
static void test_two_calls(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char g0[256], g1[256], call[600];
    group(g0, sizeof g0, 0, 8, 0, 0, 64);
    group(g1, sizeof g1, 0, 8, 4, 8, 64);
    snprintf(call, sizeof call, WG ", %s)\n        " WG ", %s)", g0, g1);
    const tir_module *m = compile(ctx, kernel_with(ctx, call));
    check_common(m, 2, 2);
    tir_ctx_destroy(ctx);
}

/* The tile starts on a 1024-byte boundary after a 400-byte shared buffer:
 * static (.shared .align 1024 S) and dynamic (the extern array aligned to
 * 1024, S at offset 1024); the pad buffer is not raised to 1024. */
static void test_alignment(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char g[256], call[300];
    group(g, sizeof g, 0, 8, 0, 0, 64);
    snprintf(call, sizeof call, WG ", %s)", g);
    wg_kernel k = base_kernel;
    k.call = call;
    k.pad = true;
    const tir_prim_func *f = parse_kernel(ctx, &k);
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.keep_llvm_ir = true;
    const tir_module *m = compile_opts(ctx, f, &o);
    check_common(m, 1, 1);
    assert_non_null(strstr(m->ptx, ".shared .align 1024 .b8 S_shared[32768];"));
    /* (LLVM raises the pad buffer's alignment to 64 on its own) */
    assert_null(strstr(m->ptx, ".align 1024 .b8 P_shared"));
    assert_int_equal(m->shared_bytes, 1024 + 32768);
    o.dynamic_shared = true;
    m = compile_opts(ctx, f, &o);
    check_common(m, 1, 1);
    assert_non_null(strstr(m->ptx, ".extern .shared .align 1024 .b8 minitir_dyn_shared[];"));
    assert_int_equal(m->dyn_shared_bytes, 1024 + 32768);
    assert_int_equal(m->shared_bytes, 0);
    /* the tile's address: the array's plus 1024 (its +32 for a k step) */
    assert_non_null(strstr(m->ptx, ", 1024;"));
    tir_ctx_destroy(ctx);
}

/* Only kernels with wgmma_sync change target: an sm_90 kernel without it
 * stays sm_90 with 16-byte shared alignment; sm_90a given is kept. */
static void test_target_choice(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    wg_kernel k = base_kernel;
    k.call = "T.syncthreads()";
    const tir_module *m = compile(ctx, parse_kernel(ctx, &k));
    assert_string_equal(m->arch, "sm_90");
    assert_non_null(strstr(m->ptx, ".target sm_90\n"));
    assert_null(strstr(m->ptx, ".align 1024"));
    assert_null(strstr(m->ptx, "wgmma"));
    char g[256], call[300];
    group(g, sizeof g, 0, 8, 0, 0, 16);
    snprintf(call, sizeof call, WG ", %s)", g);
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.keep_llvm_ir = true;
    o.arch = "sm_90a";
    m = compile_opts(ctx, kernel_with(ctx, call), &o);
    check_common(m, 1, 1);
    tir_ctx_destroy(ctx);
}

/* cg_check against target arch (sm_90's limits otherwise). */
static tir_status check_for(tir_ctx *ctx, const tir_prim_func *f, const char *arch) {
    tir_target t = *tir_target_find("sm_90");
    t.arch = arch;
    cg_info info;
    return cg_check(ctx, f, &t, &info);
}

/* f is refused by tir_codegen with code and a message containing want. */
static void refused_with(tir_ctx *ctx, const tir_prim_func *f, const tir_codegen_opts *o,
                         tir_status code, const char *want) {
    const tir_module *m = NULL;
    assert_int_equal(tir_codegen(ctx, f, o, &m), code);
    assert_null(m);
    const char *e = tir_ctx_error(ctx);
    printf("# %s\n", e);
    if (!strstr(e, want)) fail_msg("message lacks '%s': %s", want, e);
}

static void refused(tir_ctx *ctx, const tir_prim_func *f, const char *want) {
    refused_with(ctx, f, NULL, TIR_ERR_UNSUPPORTED, want);
}

/* Targets: sm_80 .. sm_89 refused by cg_check and tir_codegen (TIR_ERR_ARCH,
 * no LLVM), sm_90 and sm_90a accepted; features before PTX 8.0 refused. */
static void test_arch_refused(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char g[256], call[300];
    group(g, sizeof g, 0, 8, 0, 0, 64);
    snprintf(call, sizeof call, WG ", %s)", g);
    const tir_prim_func *f = kernel_with(ctx, call);
    assert_int_equal(check_for(ctx, f, "sm_90"), TIR_OK);
    assert_int_equal(check_for(ctx, f, "sm_90a"), TIR_OK);
    assert_int_equal(check_for(ctx, f, "sm_100a"), TIR_ERR_ARCH);
    static const char *const old[] = {"sm_80", "sm_86", "sm_89"};
    for (int i = 0; i < 3; i++) {
        tir_codegen_opts o;
        tir_codegen_opts_init(&o);
        o.arch = old[i];
        char want[64];
        snprintf(want, sizeof want, "wgmma_sync needs sm_90a; the target is %s", old[i]);
        refused_with(ctx, f, &o, TIR_ERR_ARCH, want);
    }
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.features = "+ptx78";
    refused_with(ctx, f, &o, TIR_ERR_ARCH, "needs PTX ISA 8.0");
    o.features = "+ptx81";
    const tir_module *m = compile_opts(ctx, f, &o);
    assert_non_null(strstr(m->ptx, ".version 8.1"));
    assert_non_null(strstr(m->ptx, ".target sm_90a"));
    tir_ctx_destroy(ctx);
}

/* Each cg_check refusal of a malformed group, with its message. */
static void test_bad_groups(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    static const struct {
        const char *args, *want;
    } bad[] = {
        {"Acc[0], 8, T.address_of(F[0]), T.address_of(S[0]), 64",
         "the accumulator must be address_of"},
        {"T.address_of(S[0]), 8, T.address_of(F[0]), T.address_of(S[0]), 64",
         "the accumulator buffer 'S' has scope shared"},
        {"T.address_of(Acc[0]), tx, T.address_of(F[0]), T.address_of(S[0]), 64",
         "the accumulator stride of group 0 must be an int constant"},
        {"T.address_of(Acc[0]), 8, T.address_of(F[0]), T.address_of(S[0]), 64 + tx",
         "the row count of group 0 must be an int constant"},
        {"T.address_of(Acc[0]), 8, T.address_of(F[0]), T.address_of(S[0]), 12",
         "the row count of group 0 is 12 (want a multiple of 8 in 8 .. 256)"},
        {"T.address_of(Acc[0]), 8, T.address_of(F[0]), T.address_of(S[0]), 264",
         "the row count of group 0 is 264"},
        {"T.address_of(Acc[0]), 8, T.address_of(F[0]), T.address_of(S[0]), 0",
         "the row count of group 0 is 0"},
        {"T.address_of(Acc[0]), 4, T.address_of(F[0]), T.address_of(S[0]), 64",
         "the accumulator stride of group 0 is 4 (want at least 8"},
        {"T.address_of(Acc[200]), 8, T.address_of(F[0]), T.address_of(S[0]), 128",
         "the accumulator registers Acc[200 .. 264) lie outside the array of 256"},
        {"T.address_of(Acc[0]), 32, T.address_of(F[0]), T.address_of(S[0]), 256",
         "the accumulator registers of group 0 span 488 elements, more than the 256 of 'Acc'"},
        {"T.address_of(Acc[0]), T.int64(1099511627776), T.address_of(F[0]), "
         "T.address_of(S[0]), 256",
         "the accumulator stride 1099511627776 of group 0 is past the 256 elements of 'Acc'"},
        {"T.address_of(Acc[0]), 8, T.address_of(F[6]), T.address_of(S[0]), 64",
         "the A operand registers F[6 .. 10) lie outside"},
        {"T.address_of(Acc[0]), 8, T.address_of(Acc[0]), T.address_of(F[0]), 64",
         "the tile buffer 'F' has scope local (want shared)"},
        {"T.address_of(Acc[0]), 8, T.address_of(F[0]), T.address_of(X[0]), 64",
         "the tile buffer 'X' has scope global"},
        {"T.address_of(Acc[0]), 8, T.address_of(F[0]), S[0], 64", "the tile must be address_of"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char g[256], call[600];
        group(g, sizeof g, 0, 8, 0, 0, 64);
        /* the bad group second, so that group numbers are checked */
        snprintf(call, sizeof call, WG ", %s)", bad[i].args);
        refused(ctx, kernel_with(ctx, call), bad[i].want);
        char want1[160];
        snprintf(want1, sizeof want1, "%s", bad[i].want);
        char *g0 = strstr(want1, "group 0");
        if (g0) g0[6] = '1';
        snprintf(call, sizeof call, WG ", %s, %s)", g, bad[i].args);
        refused(ctx, kernel_with(ctx, call), want1);
    }
    tir_ctx_destroy(ctx);
}

/* Operand dtypes: float32 only (accumulators, A registers, tile). */
static void test_bad_dtypes(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char g[256], call[300];
    group(g, sizeof g, 0, 8, 0, 0, 64);
    snprintf(call, sizeof call, WG ", %s)", g);
    wg_kernel k = base_kernel;
    k.call = call;
    k.acc_dtype = "float16";
    refused(ctx, parse_kernel(ctx, &k),
            "the accumulator 'Acc' of group 0 is float16 (want float32)");
    k = base_kernel;
    k.call = call;
    k.f_dtype = "int32";
    refused(ctx, parse_kernel(ctx, &k), "the A operand 'F' of group 0 is int32 (want float32)");
    k = base_kernel;
    k.call = call;
    k.s_dtype = "float16";
    refused(ctx, parse_kernel(ctx, &k), "the tile 'S' of group 0 is float16 (want float32)");
    tir_ctx_destroy(ctx);
}

/* Whole warpgroups only; a statement, not an operand; groups of 5 (a call
 * the constructors would not make, edited after the fact). */
static void test_bad_shape(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char g[256], call[600];
    group(g, sizeof g, 0, 8, 0, 0, 64);
    snprintf(call, sizeof call, WG ", %s)", g);
    wg_kernel k = base_kernel;
    k.call = call;
    k.threads = 96;
    k.s_elems = 96 * 64;
    refused(ctx, parse_kernel(ctx, &k), "threads per block, not a multiple of 128");
    k.threads = 256;
    k.s_elems = 8192;
    tir_codegen_opts o;
    tir_codegen_opts_init(&o);
    o.keep_llvm_ir = true;
    check_common(compile_opts(ctx, parse_kernel(ctx, &k), &o), 1, 1);

    snprintf(call, sizeof call,
             "Y[0] = T.Cast(\"float32\", T.call_intrin(\"int32\", \"wgmma_sync\", %s))", g);
    refused(ctx, kernel_with(ctx, call), "wgmma_sync() is a statement");

    snprintf(call, sizeof call, WG ", %s, %s)", g, g);
    const tir_prim_func *f = kernel_with(ctx, call);
    /* find the call and make it 7 arguments */
    const tir_stmt *s = f->body;
    tir_call *c = NULL;
    for (int depth = 0; depth < 64 && !c; depth++) {
        switch ((tir_kind)s->kind) {
        case TIR_KIND_FOR: s = tir_as_tir_for(s)->body; break;
        case TIR_KIND_ALLOCATE: s = tir_as_tir_allocate(s)->body; break;
        case TIR_KIND_SEQ: {
            const tir_seq *q = tir_as_tir_seq(s);
            for (int i = 0; i < q->n; i++)
                if (q->stmts[i]->kind == TIR_KIND_EVALUATE) {
                    const tir_call *e = tir_as_tir_call(tir_as_tir_evaluate(q->stmts[i])->value);
                    if (e && e->op == TIR_INTRIN_WGMMA_SYNC) c = (tir_call *)e;
                }
            s = q->stmts[q->n - 1];
            break;
        }
        default: fail_msg("unexpected statement kind %d", s->kind);
        }
    }
    assert_non_null(c);
    c->nargs = 7;
    refused(ctx, f, "wgmma_sync takes groups of 5 arguments (c, cs, b, a, rows); it has 7");
    tir_ctx_destroy(ctx);
}

/* Accumulators at an index that is not a constant after unrolling: the
 * groups' registers could not be matched, refused during emission; a
 * loop unrolled at emission gives constants and compiles. */
static void test_variable_index(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    refused(ctx,
            kernel_with(ctx, WG ", T.address_of(Acc[tx % 2 * 64]), 8, "
                             "T.address_of(F[0]), T.address_of(S[0]), 64)"),
            "the accumulator registers in 'Acc' are not at constant indices");
    /* constant only once unrolled, and past the array for n = 1 */
    refused(ctx,
            kernel_with(ctx, "for n in T.unroll(0, 2):\n"
                             "            " WG ", T.address_of(Acc[n * 200]), 8, "
                             "T.address_of(F[0]), T.address_of(S[0]), 128)"),
            "the accumulator register Acc[256] lies outside the array of 256 elements");
    const tir_module *m = compile(
        ctx, kernel_with(ctx, "for n in T.unroll(0, 2):\n"
                              "            " WG ", T.address_of(Acc[n * 64]), 8, "
                              "T.address_of(F[n * 4]), T.address_of(S[n * 4096]), 128)"));
    check_common(m, 2, 2);
    wg_instr w[2];
    assert_int_equal(read_wgmmas(m->ptx, w, 2), 2);
    static char both[128][16];
    memcpy(both, w[0].acc, sizeof(char[16]) * 64);
    memcpy(both + 64, w[1].acc, sizeof(char[16]) * 64);
    assert_int_equal(distinct(both, 128), 128);
    tir_ctx_destroy(ctx);
}

/* The host JIT (tests only) cannot run wgmma_sync. */
static void test_host_refused(void **st) {
    (void)st;
    tir_ctx *ctx = tir_ctx_create();
    char g[256], call[300];
    group(g, sizeof g, 0, 8, 0, 0, 64);
    snprintf(call, sizeof call, WG ", %s)", g);
    /* without the syncthreads, which the host refuses first */
    wg_kernel k = base_kernel;
    k.call = call;
    k.no_sync = true;
    const tir_prim_func *f = parse_kernel(ctx, &k);
    cg_jit *j = NULL;
    assert_int_equal(cg_jit_compile(ctx, f, NULL, &j), TIR_ERR_UNSUPPORTED);
    assert_null(j);
    printf("# %s\n", tir_ctx_error(ctx));
    assert_non_null(strstr(tir_ctx_error(ctx), "wgmma_sync cannot run on the host"));
    tir_ctx_destroy(ctx);
}

/* The helpers the gates use. */
static void test_helpers(void **st) {
    (void)st;
    assert_true(cg_arch_has_wgmma("sm_90"));
    assert_true(cg_arch_has_wgmma("sm_90a"));
    assert_false(cg_arch_has_wgmma("sm_89"));
    assert_false(cg_arch_has_wgmma("sm_100a"));
    assert_false(cg_arch_has_wgmma(NULL));
    assert_int_equal(cg_ptx_version("+ptx80"), 80);
    assert_int_equal(cg_ptx_version("+ptx78,+ptx81"), 81);
    assert_int_equal(cg_ptx_version(NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_group),      cmocka_unit_test(test_two_groups),
        cmocka_unit_test(test_order_and_stride), cmocka_unit_test(test_two_calls),
        cmocka_unit_test(test_alignment),      cmocka_unit_test(test_target_choice),
        cmocka_unit_test(test_arch_refused),   cmocka_unit_test(test_bad_groups),
        cmocka_unit_test(test_bad_dtypes),     cmocka_unit_test(test_bad_shape),
        cmocka_unit_test(test_variable_index), cmocka_unit_test(test_host_refused),
        cmocka_unit_test(test_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
