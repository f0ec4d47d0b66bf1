/* tcpeak: measures the tensor-core ceilings of the GPU and checks which
 * wgmma shared-memory descriptor encodings are right, in one run.
 *
 *   tcpeak [--ordinal N] [--only peak|check] [--quick]
 *   tcpeak --emit DIR [--ptxas PATH]
 *                          write every kernel's PTX to DIR/<kernel>.ptx (no GPU),
 *                          checked for balance and, given ptxas, assembled for sm_90a
 *
 * Every kernel is PTX text generated here and loaded through the public
 * runtime (tir_rt_module_create); nothing goes through minitir's compiler,
 * so the numbers are ceilings of the instructions, not of our code.
 *  - mma.sync peak: register-only loops of independent
 *    mma.sync.m16n8k16 (bf16, f16) and m16n8k8 (tf32) over several
 *    accumulator sets, warp counts and grids; the accumulators are summed
 *    and stored at the end so nothing is dead.
 *  - wgmma peak (sm_90a): m64nNk16 (bf16, f16) and m64nNk8 (tf32) on the
 *    same 128-byte-swizzled shared tiles in a loop, fence / commit /
 *    wait_group as the PTX ISA requires, one or two warpgroups per block;
 *    and TF32's RS form (A from registers), which the TF32 path needs.
 *  - wgmma check: one warpgroup computes D = A(64x16) B(16xN), N = 8 and
 *    256, bf16, from a shared-memory image the host built in one of several
 *    layouts, with one of several descriptor encodings (LBO/SBO as the PTX
 *    ISA's canonical layouts say, and swapped; K-major and N-major B; no
 *    swizzle and 128-byte swizzle).  Every register of every thread comes
 *    back and is compared, through the accumulator lane layout we assume
 *    (acc_row, acc_col), with an exact CPU product of small integers.
 *  - TF32 check: the same for m64nNk8 tf32, SS and RS (the register layout
 *    of A we assume: xreg_row, xreg_col), K-major with and without the
 *    128-byte swizzle, at k slices 0 and 3 of a 32-deep tile.
 * Each measurement or check prints one line.  The exit status is 0 when
 * every check came out as the PTX ISA predicts and every peak kernel's
 * result was finite, 1 otherwise, 77 when there is no GPU.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "minitir/runtime.h"

static tir_ctx *ctx;
static tir_rt_device *dev;
static int failures;

#define CHECK(call)                                                                       \
    do {                                                                                  \
        tir_status s_ = (call);                                                           \
        if (s_ != TIR_OK) {                                                               \
            fprintf(stderr, "tcpeak: %s failed: %s: %s\n", #call, tir_status_name(s_),    \
                    tir_ctx_error(ctx));                                                  \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static void *xmalloc(size_t n) {
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "tcpeak: out of memory\n");
        exit(1);
    }
    return p;
}

/* ------------------------------------------------------------ dtypes */

typedef enum { DT_BF16, DT_F16, DT_TF32 } dt;
static const char *dt_name[] = {"bf16", "f16", "tf32"};
/* Random bit patterns are masked to finite values in [0.5, 1) of either
 * sign (two 16-bit values per word, or one tf32), so the tensor cores see
 * varied, realistic data and the sums stay finite. */
static const uint32_t dt_mask[] = {0x807F807Fu, 0x83FF83FFu, 0x807FFFFFu};
static const uint32_t dt_one[] = {0x3F003F00u, 0x38003800u, 0x3F000000u};
/* k of one mma.sync / wgmma instruction. */
static const int dt_k[] = {16, 16, 8};

/* ------------------------------------------------------ PTX generation */

/* A kernel's PTX text, written to a memory stream. */
typedef struct {
    char name[64];
    char *text;
    size_t len;
} ptx_kernel;

static FILE *ptx_begin(ptx_kernel *k, size_t *len) {
    FILE *f = open_memstream(&k->text, len);
    if (!f) {
        fprintf(stderr, "tcpeak: open_memstream failed\n");
        exit(1);
    }
    fprintf(f, ".version 8.0\n.target sm_90a\n.address_size 64\n\n");
    return f;
}

/* Stores f32 register s at out[global thread id]. */
static void ptx_store_sum(FILE *f) {
    fprintf(f, "  mov.u32 %%r1, %%ctaid.x;\n  mov.u32 %%r2, %%ntid.x;\n  mov.u32 %%r3, %%tid.x;\n"
               "  mad.lo.u32 %%r1, %%r1, %%r2, %%r3;\n  ld.param.u64 %%rd1, [out];\n"
               "  mul.wide.u32 %%rd2, %%r1, 4;\n  add.u64 %%rd1, %%rd1, %%rd2;\n"
               "  st.global.f32 [%%rd1], %%s;\n");
}

/* Sums f32 registers %d0 .. %d(n-1) into %s. */
static void ptx_sum(FILE *f, int n) {
    fprintf(f, "  mov.f32 %%s, 0f00000000;\n");
    for (int i = 0; i < n; i++) fprintf(f, "  add.f32 %%s, %%s, %%d%d;\n", i);
}

/* The operand list "{%d<first>, ..., %d<first+n-1>}". */
static void ptx_regs(FILE *f, int first, int n) {
    fputc('{', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%%d%d", i ? ", " : "", first + i);
    fputc('}', f);
}

/* mma.sync peak: each of the block's warps runs `iters` iterations of
 * nacc independent mma.sync on registers that came from the thread id. */
static void gen_mma_peak(ptx_kernel *k, dt t, int nacc) {
    size_t len;
    snprintf(k->name, sizeof k->name, "mma_peak_%s_a%d", dt_name[t], nacc);
    FILE *f = ptx_begin(k, &len);
    fprintf(f, ".visible .entry %s(.param .u64 out, .param .u32 iters)\n{\n", k->name);
    fprintf(f, "  .reg .pred %%p;\n  .reg .b32 %%a<4>, %%b<4>, %%r<4>, %%i, %%n;\n"
               "  .reg .f32 %%d<%d>, %%s;\n  .reg .u64 %%rd<3>;\n", 4 * nacc);
    fprintf(f, "  mov.u32 %%r1, %%tid.x;\n  mov.u32 %%r2, %%ctaid.x;\n"
               "  mad.lo.u32 %%r1, %%r2, 40503, %%r1;\n");
    for (int j = 0; j < 8; j++) {
        const char *reg = j < 4 ? "a" : "b";
        fprintf(f, "  mul.lo.u32 %%%s%d, %%r1, %u;\n  and.b32 %%%s%d, %%%s%d, 0x%08X;\n"
                   "  or.b32 %%%s%d, %%%s%d, 0x%08X;\n",
                reg, j % 4, 2654435761u * (2 * j + 1), reg, j % 4, reg, j % 4, dt_mask[t], reg,
                j % 4, reg, j % 4, dt_one[t]);
    }
    /* Distinct starting values: sets that share inputs must not be provably
     * equal, or ptxas could compute them once. */
    for (int i = 0; i < 4 * nacc; i++) {
        float v = (float)i;
        uint32_t bits;
        memcpy(&bits, &v, 4);
        fprintf(f, "  mov.f32 %%d%d, 0f%08X;\n", i, bits);
    }
    fprintf(f, "  ld.param.u32 %%n, [iters];\n  mov.u32 %%i, 0;\nLOOP:\n");
    const char *op = t == DT_TF32 ? "m16n8k8.row.col.f32.tf32.tf32.f32"
                     : t == DT_F16 ? "m16n8k16.row.col.f32.f16.f16.f32"
                                   : "m16n8k16.row.col.f32.bf16.bf16.f32";
    for (int a = 0; a < nacc; a++) {
        /* Two B operands alternate so consecutive mma differ in an input. */
        int b0 = (a % 2) * 2;
        fprintf(f, "  mma.sync.aligned.%s ", op);
        ptx_regs(f, 4 * a, 4);
        fprintf(f, ", {%%a0, %%a1, %%a2, %%a3}, {%%b%d, %%b%d}, ", b0, b0 + 1);
        ptx_regs(f, 4 * a, 4);
        fprintf(f, ";\n");
    }
    fprintf(f, "  add.u32 %%i, %%i, 1;\n  setp.lt.u32 %%p, %%i, %%n;\n  @%%p bra LOOP;\n");
    ptx_sum(f, 4 * nacc);
    ptx_store_sum(f);
    fprintf(f, "  ret;\n}\n");
    fclose(f);
    k->len = len;
}

/* One wgmma.mma_async of m64n<n> on descriptors %da, %db (plus `step`
 * 16-byte units, the k slice), accumulating into %d0.. (scale-d = %ps). */
static void ptx_wgmma(FILE *f, dt t, int n, int step, int trans_b) {
    int k = dt_k[t];
    fprintf(f, "  add.u64 %%rd5, %%da, %d;\n  add.u64 %%rd6, %%db, %d;\n", step, step);
    fprintf(f, "  wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s ", n, k, dt_name[t],
            dt_name[t]);
    ptx_regs(f, 0, n / 2);
    if (t == DT_TF32)
        fprintf(f, ", %%rd5, %%rd6, %%ps, 1, 1;\n");
    else
        fprintf(f, ", %%rd5, %%rd6, %%ps, 1, 1, 0, %d;\n", trans_b);
}

/* Copies `bytes` (a multiple of 16; register %n) from global [src] to the
 * shared address in %rd3, 16 bytes per thread per step, then makes the
 * stores visible to the async proxy (wgmma reads through it) and waits
 * for the block. */
static void ptx_stage(FILE *f) {
    fprintf(f, "  ld.param.u64 %%rd1, [src];\n  mov.u32 %%r1, %%tid.x;\n  shl.b32 %%r1, %%r1, 4;\n"
               "  mov.u32 %%r2, %%ntid.x;\n  shl.b32 %%r2, %%r2, 4;\n"
               "  setp.ge.u32 %%p, %%r1, %%n;\n  @%%p bra STAGED;\nSTAGE:\n"
               "  cvt.u64.u32 %%rd2, %%r1;\n  add.u64 %%rd4, %%rd1, %%rd2;\n"
               "  ld.global.v4.u32 {%%q0, %%q1, %%q2, %%q3}, [%%rd4];\n"
               "  add.u64 %%rd4, %%rd3, %%rd2;\n"
               "  st.shared.v4.u32 [%%rd4], {%%q0, %%q1, %%q2, %%q3};\n"
               "  add.u32 %%r1, %%r1, %%r2;\n  setp.lt.u32 %%p, %%r1, %%n;\n  @%%p bra STAGE;\n"
               "STAGED:\n  fence.proxy.async.shared::cta;\n  bar.sync 0;\n");
}

static void ptx_wg_decls(FILE *f, int n) {
    fprintf(f, "  .reg .pred %%p, %%ps;\n  .reg .b32 %%r<4>, %%q<4>, %%i, %%n;\n"
               "  .reg .f32 %%d<%d>, %%s;\n  .reg .u64 %%rd<8>, %%da, %%db;\n", n / 2);
    for (int i = 0; i < n / 2; i++) fprintf(f, "  mov.f32 %%d%d, 0f00000000;\n", i);
    fprintf(f, "  mov.pred %%ps, 1;\n"); /* scale-d = 1: D += A B */
}

/* Descriptor of the shared tile at %rd3 + off: the fixed fields `tmpl`
 * (immediate) or'ed with bits 0-13, (address & 0x3FFFF) >> 4. */
static void ptx_desc(FILE *f, const char *reg, const char *off, const char *tmpl) {
    fprintf(f, "  add.u64 %%rd7, %%rd3, %s;\n  and.b64 %%rd7, %%rd7, 0x3FFFF;\n"
               "  shr.u64 %%rd7, %%rd7, 4;\n  or.b64 %s, %%rd7, %s;\n",
            off, reg, tmpl);
}

/* The check kernels' end: register i of thread t to out[t * n/2 + i]. */
static void ptx_store_regs(FILE *f, int n) {
    fprintf(f, "  mov.u32 %%r1, %%tid.x;\n  mul.lo.u32 %%r1, %%r1, %d;\n"
               "  ld.param.u64 %%rd1, [out];\n  mul.wide.u32 %%rd2, %%r1, 4;\n"
               "  add.u64 %%rd1, %%rd1, %%rd2;\n", n / 2);
    for (int i = 0; i < n / 2; i++)
        fprintf(f, "  st.global.f32 [%%rd1+%d], %%d%d;\n", 4 * i, i);
    fprintf(f, "  ret;\n}\n");
}

/* The check kernels' start: the image (param bytes) into dynamic shared
 * memory at the first 1024-byte boundary (swizzled tiles start on one). */
static void ptx_stage_dsmem(FILE *f) {
    fprintf(f, "  ld.param.u32 %%n, [bytes];\n  mov.u64 %%rd3, dsmem;\n"
               "  add.u64 %%rd3, %%rd3, 1023;\n  and.b64 %%rd3, %%rd3, -1024;\n");
    ptx_stage(f);
}

/* 128-byte swizzle, K-major: SBO 1024 B between 8-row groups, LBO unused
 * (1), mode 1 in bits 62-63 (PTX ISA "Matrix Descriptor Format"). */
#define SW128_TMPL ((1ull << 62) | (64ull << 32) | (1ull << 16))
/* Shared tiles of the peak kernel: A 64 rows, B 256 rows of 128 B each. */
#define PEAK_A_BYTES (64 * 128)
#define PEAK_SMEM (PEAK_A_BYTES + 256 * 128)

/* A peak kernel's entry, its static shared tile and registers. */
static void ptx_peak_head(FILE *f, const ptx_kernel *k, int n) {
    fprintf(f, ".visible .entry %s(.param .u64 out, .param .u64 src, .param .u32 iters)\n{\n",
            k->name);
    fprintf(f, "  .shared .align 1024 .b8 tile[%d];\n", PEAK_SMEM);
    ptx_wg_decls(f, n);
}

/* The peak tiles' descriptor template and B's offset, as PTX immediates. */
static void peak_desc_fields(char tmpl[32], char boff[16]) {
    snprintf(tmpl, 32, "0x%016llX", (unsigned long long)SW128_TMPL);
    snprintf(boff, 16, "%d", PEAK_A_BYTES);
}

/* wgmma peak: A (64 x 64 bf16, or 64 x 32 tf32) and B (n rows) K-major in
 * 128-byte-swizzled shared tiles; each iteration runs the tile's four k
 * slices (+32 B each) into the same accumulators and keeps one commit
 * group in flight, as CUTLASS's mainloop does. */
static void gen_wgmma_peak(ptx_kernel *k, dt t, int n) {
    size_t len;
    snprintf(k->name, sizeof k->name, "wgmma_peak_%s_n%d", dt_name[t], n);
    FILE *f = ptx_begin(k, &len);
    ptx_peak_head(f, k, n);
    fprintf(f, "  mov.u32 %%n, %d;\n  mov.u64 %%rd3, tile;\n", PEAK_SMEM);
    ptx_stage(f);
    char tmpl[32], boff[16];
    peak_desc_fields(tmpl, boff);
    ptx_desc(f, "%da", "0", tmpl);
    ptx_desc(f, "%db", boff, tmpl);
    fprintf(f, "  ld.param.u32 %%n, [iters];\n  mov.u32 %%i, 0;\nLOOP:\n"
               "  wgmma.fence.sync.aligned;\n");
    for (int s = 0; s < 4; s++) ptx_wgmma(f, t, n, 2 * s, 0);
    fprintf(f, "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 1;\n"
               "  add.u32 %%i, %%i, 1;\n  setp.lt.u32 %%p, %%i, %%n;\n  @%%p bra LOOP;\n"
               "  wgmma.wait_group.sync.aligned 0;\n");
    ptx_sum(f, n / 2);
    ptx_store_sum(f);
    fprintf(f, "  ret;\n}\n");
    fclose(f);
    k->len = len;
}

/* wgmma check: copies the host's image (bytes at [src]) to dynamic shared
 * memory rounded up to 1024 B (swizzled tiles must start on a 1024-byte
 * boundary), runs one bf16 m64n<n>k16 with descriptors tmpl_a | addr(A),
 * tmpl_b | addr(image + b_off), and stores register i of thread t at
 * out[t * n/2 + i]. */
static void gen_wgmma_check(ptx_kernel *k, int n, int trans_b) {
    size_t len;
    snprintf(k->name, sizeof k->name, "wgmma_check_n%d_tb%d", n, trans_b);
    FILE *f = ptx_begin(k, &len);
    fprintf(f, ".extern .shared .align 1024 .b8 dsmem[];\n\n");
    fprintf(f, ".visible .entry %s(.param .u64 out, .param .u64 src, .param .u32 bytes,\n"
               "    .param .u64 tmpl_a, .param .u64 tmpl_b, .param .u32 b_off)\n{\n",
            k->name);
    ptx_wg_decls(f, n);
    ptx_stage_dsmem(f);
    fprintf(f, "  ld.param.u64 %%rd5, [tmpl_a];\n  ld.param.u64 %%rd6, [tmpl_b];\n"
               "  ld.param.u32 %%r3, [b_off];\n  cvt.u64.u32 %%rd4, %%r3;\n");
    ptx_desc(f, "%da", "0", "%rd5");
    ptx_desc(f, "%db", "%rd4", "%rd6");
    fprintf(f, "  wgmma.fence.sync.aligned;\n");
    ptx_wgmma(f, DT_BF16, n, 0, trans_b);
    fprintf(f, "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n");
    ptx_store_regs(f, n);
    fclose(f);
    k->len = len;
}

/* TF32 with A from registers (wgmma's "RS" form).  wgmma reads TF32
 * operands from shared memory only K-major, and a row-major B tile is
 * N-major; but C = A B is also C^T = B^T A^T, whose B operand (A^T) is A's
 * tile as stored (K-major) and whose A operand (B^T) may come from
 * registers, loaded per lane from B's tile as the mma.sync swap of
 * lower_fragments does.  So the TF32 path needs no transposing copy if
 * the RS form runs at wgmma's rate and the registers are laid out as we
 * assume: register i of thread t holds A[16 (t / 32) + (t % 32) / 4 +
 * 8 (i % 2)][t % 4 + 4 (i / 2)], mma.sync.m16n8k8's A fragment per warp
 * (xreg_row, xreg_col).  These kernels measure that rate and check that
 * layout, and the SS form's TF32 K-major encodings, k slices included. */
#define XREGS "{%%x0, %%x1, %%x2, %%x3}"

static void ptx_x_decls(FILE *f) { fprintf(f, "  .reg .b32 %%x<16>;\n"); }

/* RS peak: like gen_wgmma_peak, B in the 128-byte-swizzled tile at
 * PEAK_A_BYTES, A from 16 registers of masked TF32 values (four per k
 * slice, as a kernel holding a 64 x 32 tile of A would). */
static void gen_wgmma_rs_peak(ptx_kernel *k, int n) {
    size_t len;
    snprintf(k->name, sizeof k->name, "wgmma_rs_peak_tf32_n%d", n);
    FILE *f = ptx_begin(k, &len);
    ptx_peak_head(f, k, n);
    ptx_x_decls(f);
    fprintf(f, "  mov.u32 %%r1, %%tid.x;\n  mov.u32 %%r2, %%ctaid.x;\n"
               "  mad.lo.u32 %%r1, %%r2, 40503, %%r1;\n");
    for (int j = 0; j < 16; j++)
        fprintf(f, "  mul.lo.u32 %%x%d, %%r1, %u;\n  and.b32 %%x%d, %%x%d, 0x%08X;\n"
                   "  or.b32 %%x%d, %%x%d, 0x%08X;\n",
                j, 2654435761u * (2 * j + 1), j, j, dt_mask[DT_TF32], j, j, dt_one[DT_TF32]);
    fprintf(f, "  mov.u32 %%n, %d;\n  mov.u64 %%rd3, tile;\n", PEAK_SMEM);
    ptx_stage(f);
    char tmpl[32], boff[16];
    peak_desc_fields(tmpl, boff);
    ptx_desc(f, "%db", boff, tmpl);
    fprintf(f, "  ld.param.u32 %%n, [iters];\n  mov.u32 %%i, 0;\nLOOP:\n"
               "  wgmma.fence.sync.aligned;\n");
    for (int s = 0; s < 4; s++) {
        fprintf(f, "  add.u64 %%rd6, %%db, %d;\n"
                   "  wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 ", 2 * s, n);
        ptx_regs(f, 0, n / 2);
        fprintf(f, ", {%%x%d, %%x%d, %%x%d, %%x%d}, %%rd6, %%ps, 1, 1;\n", 4 * s, 4 * s + 1,
                4 * s + 2, 4 * s + 3);
    }
    fprintf(f, "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 1;\n"
               "  add.u32 %%i, %%i, 1;\n  setp.lt.u32 %%p, %%i, %%n;\n  @%%p bra LOOP;\n"
               "  wgmma.wait_group.sync.aligned 0;\n");
    ptx_sum(f, n / 2);
    ptx_store_sum(f);
    fprintf(f, "  ret;\n}\n");
    fclose(f);
    k->len = len;
}

/* TF32 check: one warpgroup computes D = A(64x8) B(8xN) from the host's
 * image (A at byte a_off of it, SS form only; B^T, N rows K-major, at
 * b_off), A from registers in the RS form (xsrc[t * 4 + i] is register i
 * of thread t); register i of thread t goes to out[t * n/2 + i]. */
static void gen_tf32_check(ptx_kernel *k, int n, int rs) {
    size_t len;
    snprintf(k->name, sizeof k->name, "wgmma_check_tf32_%s_n%d", rs ? "rs" : "ss", n);
    FILE *f = ptx_begin(k, &len);
    fprintf(f, ".extern .shared .align 1024 .b8 dsmem[];\n\n");
    fprintf(f, ".visible .entry %s(.param .u64 out, .param .u64 src, .param .u32 bytes,\n"
               "    .param .u64 tmpl_a, .param .u64 tmpl_b, .param .u32 a_off,\n"
               "    .param .u32 b_off, .param .u64 xsrc)\n{\n",
            k->name);
    ptx_wg_decls(f, n);
    ptx_x_decls(f);
    ptx_stage_dsmem(f);
    fprintf(f, "  ld.param.u64 %%rd5, [tmpl_a];\n  ld.param.u64 %%rd6, [tmpl_b];\n"
               "  ld.param.u32 %%r3, [a_off];\n  cvt.u64.u32 %%rd4, %%r3;\n");
    ptx_desc(f, "%da", "%rd4", "%rd5");
    fprintf(f, "  ld.param.u32 %%r3, [b_off];\n  cvt.u64.u32 %%rd4, %%r3;\n");
    ptx_desc(f, "%db", "%rd4", "%rd6");
    fprintf(f, "  ld.param.u64 %%rd1, [xsrc];\n  mov.u32 %%r1, %%tid.x;\n"
               "  mul.wide.u32 %%rd2, %%r1, 16;\n  add.u64 %%rd1, %%rd1, %%rd2;\n"
               "  ld.global.v4.u32 " XREGS ", [%%rd1];\n");
    fprintf(f, "  wgmma.fence.sync.aligned;\n"
               "  wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 ", n);
    ptx_regs(f, 0, n / 2);
    fprintf(f, rs ? ", " XREGS ", %%db, %%ps, 1, 1;\n" : ", %%da, %%db, %%ps, 1, 1;\n");
    fprintf(f, "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n");
    ptx_store_regs(f, n);
    fclose(f);
    k->len = len;
}

/* The kernels of one run, generated once. */
enum { NACC_N = 3, WG_N = 2 };
static const int nacc_list[NACC_N] = {4, 8, 16};
static const int wg_n_list[WG_N] = {128, 256};
static const int check_n[2] = {8, 256};
#define NKERNELS (3 * NACC_N + 4 * WG_N + 4 + 4)
static ptx_kernel kernels[NKERNELS];

static void gen_all(void) {
    int i = 0;
    for (int t = 0; t < 3; t++)
        for (int a = 0; a < NACC_N; a++) gen_mma_peak(&kernels[i++], (dt)t, nacc_list[a]);
    for (int t = 0; t < 3; t++)
        for (int n = 0; n < WG_N; n++) gen_wgmma_peak(&kernels[i++], (dt)t, wg_n_list[n]);
    for (int n = 0; n < 2; n++)
        for (int tb = 0; tb < 2; tb++) gen_wgmma_check(&kernels[i++], check_n[n], tb);
    for (int n = 0; n < WG_N; n++) gen_wgmma_rs_peak(&kernels[i++], wg_n_list[n]);
    for (int n = 0; n < 2; n++)
        for (int rs = 0; rs < 2; rs++) gen_tf32_check(&kernels[i++], check_n[n], rs);
}

static const ptx_kernel *find_kernel(const char *name) {
    for (int i = 0; i < NKERNELS; i++)
        if (!strcmp(kernels[i].name, name)) return &kernels[i];
    fprintf(stderr, "tcpeak: no kernel %s (bug)\n", name);
    exit(1);
}

/* A structural check of generated text: braces and parentheses balance,
 * and the .entry is there. */
static bool ptx_balanced(const ptx_kernel *k) {
    int brace = 0, paren = 0;
    for (const char *c = k->text; *c; c++) {
        brace += (*c == '{') - (*c == '}');
        paren += (*c == '(') - (*c == ')');
        if (brace < 0 || paren < 0) return false;
    }
    char entry[80];
    snprintf(entry, sizeof entry, ".entry %.63s(", k->name);
    return brace == 0 && paren == 0 && strstr(k->text, entry) != NULL;
}

/* Runs `ptxas -arch=sm_90a -v` on path; false when it fails or says
 * anything about wgmma being serialized or a fence being injected (those
 * are only info lines, C75xx, but mean a slower or wrong kernel). */
static bool ptxas_ok(const char *ptxas, const char *path) {
    char cmd[1200], line[512];
    snprintf(cmd, sizeof cmd, "'%.500s' -arch=sm_90a -v '%.500s' -o /dev/null 2>&1", ptxas, path);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    bool ok = true;
    while (fgets(line, sizeof line, p)) {
        if (strstr(line, "(C75") || strstr(line, "Performance") || strstr(line, "warning") ||
            strstr(line, "error")) {
            printf("  ptxas: %s", line);
            ok = false;
        }
    }
    return pclose(p) == 0 && ok;
}

/* Writes every kernel to dir (and assembles it when ptxas is given);
 * returns the exit status. */
static int emit_all(const char *dir, const char *ptxas) {
    mkdir(dir, 0777);
    int bad = 0;
    for (int i = 0; i < NKERNELS; i++) {
        char path[512];
        snprintf(path, sizeof path, "%.400s/%.63s.ptx", dir, kernels[i].name);
        FILE *f = fopen(path, "w");
        bool ok = f && fwrite(kernels[i].text, 1, kernels[i].len, f) == kernels[i].len;
        if (f) ok = (fclose(f) == 0) && ok;
        ok = ok && ptx_balanced(&kernels[i]);
        ok = ok && (!ptxas || ptxas_ok(ptxas, path));
        printf("%s %s (%zu bytes%s)\n", ok ? "wrote" : "FAILED", path, kernels[i].len,
               ptxas ? ", ptxas sm_90a clean" : "");
        bad += !ok;
    }
    return bad ? 1 : 0;
}

/* ----------------------------------------------------------- running */

typedef struct {
    tir_rt_kernel *k;
    unsigned grid[3], block[3], smem;
    int nargs;
    tir_rt_arg args[8];
} launch;

static tir_status launch_fn(tir_ctx *c, void *user, int set) {
    (void)set;
    launch *l = user;
    return tir_rt_launch(c, l->k, l->grid, l->block, l->smem, l->nargs, l->args);
}

/* JIT-compiles kernel `name` on first use (the modules live until the
 * device is closed). */
static tir_rt_kernel *load_kernel(const char *name) {
    static tir_rt_kernel *loaded[NKERNELS];
    const ptx_kernel *pk = find_kernel(name);
    tir_rt_kernel **k = &loaded[pk - kernels];
    if (!*k) {
        tir_rt_module *m;
        CHECK(tir_rt_module_create(ctx, dev, pk->text, &m));
        CHECK(tir_rt_kernel_get(ctx, m, name, k));
    }
    return *k;
}

static bool quick;

/* Times l (median of 20 samples, after 3 warm-up launches) and checks
 * that every thread's stored sum is finite (else NaN, and a failure). */
static double time_launch(launch *l, tir_rt_ptr out, size_t nthreads) {
    tir_rt_bench_opts o = TIR_RT_BENCH_DEFAULTS;
    o.warmup = 3;
    o.runs = 20;
    tir_rt_bench_result r;
    CHECK(tir_rt_memset8(ctx, dev, out, 0xff, nthreads * 4));
    CHECK(tir_rt_bench(ctx, dev, launch_fn, l, &o, &r));
    float *h = xmalloc(nthreads * 4);
    CHECK(tir_rt_copy_d2h(ctx, dev, h, out, nthreads * 4));
    size_t bad = 0;
    for (size_t i = 0; i < nthreads; i++) bad += !isfinite(h[i]);
    free(h);
    if (bad) {
        printf("FAIL: %zu of %zu threads stored a non-finite sum; not timed: ", bad, nthreads);
        failures++;
        return NAN; /* never the best */
    }
    return r.median_ms;
}

/* Iterations so that one launch does about 1e12 flops (a few ms). */
static unsigned iters_for(double flops_per_iter) {
    double it = (quick ? 2e11 : 1e12) / flops_per_iter;
    return it < 1 ? 1 : (unsigned)it;
}

static void peak_mma(int sms, tir_rt_ptr out) {
    static const int warps[] = {4, 8, 16}, per_sm[] = {1, 2, 4};
    for (int t = 0; t < 3; t++) {
        double best = 0;
        for (int a = 0; a < NACC_N; a++) {
            char name[64];
            snprintf(name, sizeof name, "mma_peak_%s_a%d", dt_name[t], nacc_list[a]);
            tir_rt_kernel *k = load_kernel(name);
            for (int w = 0; w < 3; w++)
                for (int g = 0; g < 3; g++) {
                    launch l = {k, {(unsigned)(sms * per_sm[g]), 1, 1},
                                {(unsigned)(32 * warps[w]), 1, 1}, 0, 2, {{0}}};
                    double flop_mma = 2.0 * 16 * 8 * dt_k[t];
                    double nwarps = (double)l.grid[0] * warps[w];
                    unsigned it = iters_for(flop_mma * nacc_list[a] * nwarps);
                    l.args[0] = tir_rt_arg_ptr(out);
                    l.args[1] = tir_rt_arg_i32((int32_t)it);
                    double ms = time_launch(&l, out, (size_t)l.grid[0] * l.block[0]);
                    double tf = flop_mma * nacc_list[a] * nwarps * it / (ms * 1e-3) / 1e12;
                    printf("mma.sync %-4s acc_sets=%-2d warps/block=%-2d grid=%-4u iters=%-7u "
                           "median %.3f ms  %.1f TFLOP/s\n",
                           dt_name[t], nacc_list[a], warps[w], l.grid[0], it, ms, tf);
                    best = tf > best ? tf : best;
                }
        }
        printf("PEAK mma.sync %s %.1f TFLOP/s (best of the lines above)\n", dt_name[t], best);
    }
}

/* Fills the peak kernel's shared image with finite values of dtype t. */
static void fill_peak_image(uint32_t *w, dt t) {
    tir_rt_rng r = tir_rt_rng_seed(7 + t);
    for (int i = 0; i < PEAK_SMEM / 4; i++)
        w[i] = ((uint32_t)tir_rt_rng_next(&r) & dt_mask[t]) | dt_one[t];
}

/* Times the wgmma peak kernels "<prefix>_<dtype>_n<N>" of dtype t over
 * warpgroups per block and blocks per SM, prints a line each (the form
 * named by `form`) and returns the best TFLOP/s. */
static double time_wgmma(int sms, tir_rt_ptr out, tir_rt_ptr img, dt t, const char *prefix,
                         const char *form) {
    static const int wgs[] = {1, 2}, per_sm[] = {1, 2};
    double best = 0;
    for (int n = 0; n < WG_N; n++) {
        char name[64];
        snprintf(name, sizeof name, "%s_%s_n%d", prefix, dt_name[t], wg_n_list[n]);
        tir_rt_kernel *k = load_kernel(name);
        for (int w = 0; w < 2; w++)
            for (int g = 0; g < 2; g++) {
                launch l = {k, {(unsigned)(sms * per_sm[g]), 1, 1},
                            {(unsigned)(128 * wgs[w]), 1, 1}, 0, 3, {{0}}};
                double flop_it = 4 * 2.0 * 64 * wg_n_list[n] * dt_k[t];
                double groups = (double)l.grid[0] * wgs[w];
                unsigned it = iters_for(flop_it * groups);
                l.args[0] = tir_rt_arg_ptr(out);
                l.args[1] = tir_rt_arg_ptr(img);
                l.args[2] = tir_rt_arg_i32((int32_t)it);
                double ms = time_launch(&l, out, (size_t)l.grid[0] * l.block[0]);
                double tf = flop_it * groups * it / (ms * 1e-3) / 1e12;
                printf("wgmma %-2s %-4s m64n%dk%d warpgroups/block=%d grid=%-4u iters=%-7u "
                       "median %.3f ms  %.1f TFLOP/s\n",
                       form, dt_name[t], wg_n_list[n], dt_k[t], wgs[w], l.grid[0], it, ms, tf);
                best = tf > best ? tf : best;
            }
    }
    return best;
}

/* The SS form (both operands from shared memory) for every dtype, then
 * the RS form (A from registers) for TF32. */
static void peak_wgmma(int sms, tir_rt_ptr out, tir_rt_ptr img) {
    uint32_t *h = xmalloc(PEAK_SMEM);
    for (int t = 0; t < 3; t++) {
        fill_peak_image(h, (dt)t);
        CHECK(tir_rt_copy_h2d(ctx, dev, img, h, PEAK_SMEM));
        double best = time_wgmma(sms, out, img, (dt)t, "wgmma_peak", "SS");
        printf("PEAK wgmma %s %.1f TFLOP/s (best of the lines above)\n", dt_name[t], best);
    }
    /* the image still holds TF32 values (t = 2 last) */
    double best = time_wgmma(sms, out, img, DT_TF32, "wgmma_rs_peak", "RS");
    printf("PEAK wgmma RS (A from registers) tf32 %.1f TFLOP/s (best of the lines above)\n",
           best);
    free(h);
}

/* ------------------------------------------------ wgmma layout checks */

/* Where element (r, k) of an operand with `rows` rows (M for A, N for B)
 * and 16 k lies in its shared tile, in bytes.  A core matrix is 8 rows of
 * 16 bytes: 8 k for K-major, 8 rows (m or n) for MN-major. */
typedef enum {
    L_K_KADJ, /* K-major; core (r/8, k/8) at (r/8)*256 + (k/8)*128 */
    L_K_RADJ, /* K-major; core at (k/8)*(rows*16) + (r/8)*128 */
    L_K_SW128, /* K-major; row r at r*128, 16-byte chunk c at c ^ (r % 8) */
    L_K_ROW128, /* K-major; row r at r*128, not swizzled (a control) */
    L_MN_RADJ, /* MN-major; core (r/8, k/8) at (k/8)*(rows*16) + (r/8)*128 */
    L_MN_KADJ, /* MN-major; core at (r/8)*256 + (k/8)*128 */
} layout;
static const char *layout_name[] = {"K-major, k-core pairs adjacent",
                                    "K-major, row cores adjacent",
                                    "K-major, 128B swizzle",
                                    "K-major, 128 B rows unswizzled",
                                    "N-major, n cores adjacent",
                                    "N-major, k-core pairs adjacent"};

static int elem_offset(layout l, int rows, int r, int k) {
    int in_k = (r % 8) * 16 + (k % 8) * 2;  /* K-major core matrix */
    int in_mn = (k % 8) * 16 + (r % 8) * 2; /* MN-major core matrix */
    switch (l) {
    case L_K_KADJ: return (r / 8) * 256 + (k / 8) * 128 + in_k;
    case L_K_RADJ: return (k / 8) * rows * 16 + (r / 8) * 128 + in_k;
    case L_K_SW128: return r * 128 + (((k * 2) / 16) ^ (r % 8)) * 16 + (k * 2) % 16;
    case L_K_ROW128: return r * 128 + k * 2;
    case L_MN_RADJ: return (k / 8) * rows * 16 + (r / 8) * 128 + in_mn;
    case L_MN_KADJ: return (r / 8) * 256 + (k / 8) * 128 + in_mn;
    }
    return 0;
}

/* One candidate: the image layouts of A and B, the LBO/SBO it encodes for
 * each (bytes; 0 stands for rows*16 of that operand), the swizzle mode
 * (descriptor bits 62-63: 0 none, 1 128B) and trans-b. */
typedef struct {
    layout la, lb;
    int lbo_a, sbo_a, lbo_b, sbo_b;
    int swizzle;
    int trans_b;
} candidate;

static const candidate candidates[] = {
    /* K-major, no swizzle, as the PTX ISA's canonical layout says (LBO =
     * k-direction core step, SBO = 8-row step), then swapped. */
    {L_K_KADJ, L_K_KADJ, 128, 256, 128, 256, 0, 0},
    {L_K_KADJ, L_K_KADJ, 256, 128, 256, 128, 0, 0},
    {L_K_RADJ, L_K_RADJ, 0, 128, 0, 128, 0, 0},
    {L_K_RADJ, L_K_RADJ, 128, 0, 128, 0, 0, 0},
    /* N-major B (trans-b 1), no swizzle: canonical ((T,1,m),(8,k)):
     * ((1,T,SBO),(1T,LBO)), SBO = n-direction core step, LBO = k step. */
    {L_K_KADJ, L_MN_RADJ, 128, 256, 0, 128, 0, 1},
    {L_K_KADJ, L_MN_RADJ, 128, 256, 128, 0, 0, 1},
    {L_K_KADJ, L_MN_KADJ, 128, 256, 128, 256, 0, 1},
    {L_K_KADJ, L_MN_KADJ, 128, 256, 256, 128, 0, 1},
    /* K-major, 128-byte swizzle: SBO = 1024 (8 rows of 128 B), LBO unused
     * (16, i.e. 1), then swapped. */
    {L_K_SW128, L_K_SW128, 16, 1024, 16, 1024, 1, 0},
    {L_K_SW128, L_K_SW128, 1024, 16, 1024, 16, 1, 0},
    /* Control: the 128B mode over unswizzled rows must not compute A B. */
    {L_K_ROW128, L_K_ROW128, 16, 1024, 16, 1024, 1, 0},
};
#define NCAND ((int)(sizeof candidates / sizeof candidates[0]))

/* Accumulator lane layout of m64nNk16 / m64nNk8 f32 that we assume (PTX
 * ISA "Matrix Fragments for wgmma .m64nNk16", and
 * shared/reference/tensor-cores-llvm19.md): register i of thread t. */
static int acc_row(int t, int i) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2); }
static int acc_col(int t, int i) { return 2 * (t % 4) + (i % 2) + 8 * (i / 4); }

/* Whether the PTX ISA's canonical layouts say an operand in layout l with
 * `rows` rows is read right with (lbo, sbo, swizzle) and trans flag. */
static bool canonical(layout l, int rows, int lbo, int sbo, int swizzle, int trans) {
    switch (l) {
    case L_K_KADJ: return !swizzle && !trans && lbo == 128 && (sbo == 256 || rows == 8);
    case L_K_RADJ: return !swizzle && !trans && lbo == rows * 16 && (sbo == 128 || rows == 8);
    case L_MN_RADJ: return !swizzle && trans && lbo == rows * 16 && (sbo == 128 || rows == 8);
    case L_MN_KADJ: return !swizzle && trans && lbo == 128 && (sbo == 256 || rows == 8);
    case L_K_SW128: return swizzle == 1 && !trans && (sbo == 1024 || rows == 8); /* no LBO */
    case L_K_ROW128: return false;
    }
    return false;
}

static uint64_t desc_tmpl(int lbo, int sbo, int swizzle) {
    return ((uint64_t)(lbo >> 4) & 0x3FFF) << 16 | ((uint64_t)(sbo >> 4) & 0x3FFF) << 32 |
           (uint64_t)swizzle << 62;
}

/* A bound on the bytes an operand's descriptor can reach, whichever way
 * the hardware reads LBO and SBO, so no candidate reads outside the image. */
static int reach(int rows, int lbo, int sbo) {
    int big = lbo > sbo ? lbo : sbo;
    return (rows / 8 + 2) * big + 1024;
}

/* A candidate's byte offsets for an operand of n rows (B) or 64 (A). */
typedef struct {
    int lbo_a, sbo_a, lbo_b, sbo_b;
} encoding;

static encoding resolve(const candidate *c, int n) {
    encoding e = {c->lbo_a ? c->lbo_a : 64 * 16, c->sbo_a ? c->sbo_a : 64 * 16,
                  c->lbo_b ? c->lbo_b : n * 16, c->sbo_b ? c->sbo_b : n * 16};
    return e;
}

/* Where the PTX ISA's canonical layouts say wgmma reads element (r, k) of
 * an operand (r in M or N) from its descriptor's fields: 8-row (or 8-k)
 * core matrices of 16-byte rows, SBO between row groups, LBO between k
 * groups; the 128B swizzle XORs address bits 4-6 with bits 7-9. */
static int canonical_offset(int lbo, int sbo, int swizzle, int trans, int r, int k) {
    if (swizzle) {
        int lin = (r / 8) * sbo + (r % 8) * 128 + k * 2;
        return lin ^ (((lin >> 7) & 7) << 4);
    }
    int in = trans ? (k % 8) * 16 + (r % 8) * 2 : (r % 8) * 16 + (k % 8) * 2;
    return (r / 8) * sbo + (k / 8) * lbo + in;
}

/* Host-side consistency of the candidates, for every N: each image puts
 * distinct elements at distinct offsets inside the bytes reserved for it,
 * and `canonical` predicts a match exactly when canonical_offset agrees
 * with the image at every element.  Run in every mode (--emit too), so a
 * GPU result that is NOT AS PREDICTED cannot come from a bug here. */
static bool self_check(void) {
    bool ok = true;
    for (int ni = 0; ni < 2; ni++)
        for (int ci = 0; ci < NCAND; ci++) {
            const candidate *c = &candidates[ci];
            int n = check_n[ni];
            encoding e = resolve(c, n);
            const layout l[2] = {c->la, c->lb};
            const int rows[2] = {64, n}, lbo[2] = {e.lbo_a, e.lbo_b}, sbo[2] = {e.sbo_a, e.sbo_b};
            const int trans[2] = {0, c->trans_b};
            for (int o = 0; o < 2; o++) {
                int limit = reach(rows[o], lbo[o], sbo[o]);
                uint8_t *seen = xmalloc((size_t)limit);
                bool agree = true, clash = false;
                for (int r = 0; r < rows[o]; r++)
                    for (int k = 0; k < 16; k++) {
                        int off = elem_offset(l[o], rows[o], r, k);
                        clash |= off < 0 || off + 2 > limit || seen[off]++;
                        agree &= off == canonical_offset(lbo[o], sbo[o], c->swizzle, trans[o], r, k);
                    }
                free(seen);
                bool pred = canonical(l[o], rows[o], lbo[o], sbo[o], c->swizzle, trans[o]);
                if (clash || pred != agree) {
                    printf("self-check FAILED: candidate %d, N=%d, operand %c: %s\n", ci, n,
                           "AB"[o], clash ? "overlapping or out-of-range image" : "prediction");
                    ok = false;
                }
            }
        }
    return ok;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int n;
    const uint16_t *A, *B; /* A[64][16], B[16][n] bf16 bit patterns */
    const double *ref;     /* [64][n] */
    tir_rt_ptr out, img;
} check_data;

/* Builds candidate c's shared image for cd into img (zeroed): A at 0, B
 * at b_off. */
static void build_image(const candidate *c, const check_data *cd, uint8_t *img, int b_off) {
    for (int r = 0; r < 64; r++)
        for (int k = 0; k < 16; k++)
            memcpy(img + elem_offset(c->la, 64, r, k), &cd->A[r * 16 + k], 2);
    for (int nn = 0; nn < cd->n; nn++)
        for (int k = 0; k < 16; k++)
            memcpy(img + b_off + elem_offset(c->lb, cd->n, nn, k), &cd->B[k * cd->n + nn], 2);
}

/* Launches the check kernel on the image of c and returns the registers
 * (out[t * n/2 + i], malloc'ed). */
static float *run_candidate(const candidate *c, const check_data *cd) {
    int n = cd->n;
    encoding e = resolve(c, n);
    int b_off = (reach(64, e.lbo_a, e.sbo_a) + 1023) / 1024 * 1024;
    int bytes = (b_off + reach(n, e.lbo_b, e.sbo_b) + 1023) / 1024 * 1024;
    uint8_t *img = xmalloc((size_t)bytes);
    build_image(c, cd, img, b_off);
    char name[64];
    snprintf(name, sizeof name, "wgmma_check_n%d_tb%d", n, c->trans_b);
    tir_rt_kernel *k = load_kernel(name);
    CHECK(tir_rt_kernel_set_max_dynamic_smem(ctx, k, bytes + 1024));
    CHECK(tir_rt_copy_h2d(ctx, dev, cd->img, img, (size_t)bytes));
    CHECK(tir_rt_memset8(ctx, dev, cd->out, 0xff, (size_t)64 * n * 4));
    launch l = {k, {1, 1, 1}, {128, 1, 1}, (unsigned)bytes + 1024, 6, {{0}}};
    l.args[0] = tir_rt_arg_ptr(cd->out);
    l.args[1] = tir_rt_arg_ptr(cd->img);
    l.args[2] = tir_rt_arg_i32(bytes);
    l.args[3] = tir_rt_arg_i64((int64_t)desc_tmpl(e.lbo_a, e.sbo_a, c->swizzle));
    l.args[4] = tir_rt_arg_i64((int64_t)desc_tmpl(e.lbo_b, e.sbo_b, c->swizzle));
    l.args[5] = tir_rt_arg_i32(b_off);
    CHECK(launch_fn(ctx, &l, 0));
    float *got = xmalloc((size_t)64 * n * 4);
    CHECK(tir_rt_copy_d2h(ctx, dev, got, cd->out, (size_t)64 * n * 4));
    free(img);
    return got;
}

/* Counts the registers that differ from the reference through the
 * accumulator layout we assume, and whether the values agree as a
 * multiset (then only that layout would be wrong). */
static int compare_acc(const check_data *cd, float *got, bool *same_values) {
    int n = cd->n, wrong = 0;
    float *want = xmalloc((size_t)64 * n * 4);
    for (int t = 0; t < 128; t++)
        for (int i = 0; i < n / 2; i++) {
            float w = (float)cd->ref[acc_row(t, i) * n + acc_col(t, i)];
            want[t * (n / 2) + i] = w;
            wrong += !(got[t * (n / 2) + i] == w);
        }
    qsort(got, (size_t)64 * n, 4, cmp_float);
    qsort(want, (size_t)64 * n, 4, cmp_float);
    *same_values = memcmp(got, want, (size_t)64 * n * 4) == 0;
    free(want);
    return wrong;
}

static void check_one(const candidate *c, const check_data *cd) {
    int n = cd->n;
    encoding e = resolve(c, n);
    bool predicted = canonical(c->la, 64, e.lbo_a, e.sbo_a, c->swizzle, 0) &&
                     canonical(c->lb, n, e.lbo_b, e.sbo_b, c->swizzle, c->trans_b);
    /* The description first, so that a fault still names the candidate. */
    printf("CHECK wgmma m64n%dk16 bf16 | A: %s, LBO=%d SBO=%d | B (trans-b %d): %s, LBO=%d "
           "SBO=%d | swizzle %s: ",
           n, layout_name[c->la], e.lbo_a, e.sbo_a, c->trans_b, layout_name[c->lb], e.lbo_b,
           e.sbo_b, c->swizzle ? "128B" : "none");
    fflush(stdout);
    bool same;
    float *got = run_candidate(c, cd);
    int wrong = compare_acc(cd, got, &same);
    free(got);
    bool ok = (wrong == 0) == predicted;
    printf("%s", wrong ? "MISMATCH" : "MATCH");
    if (wrong)
        printf(" (%d of %d wrong; same values elsewhere: %s)", wrong, 64 * n,
               same ? "yes, so the accumulator layout is what differs" : "no");
    printf("  [PTX ISA predicts %s: %s]\n", predicted ? "MATCH" : "MISMATCH",
           ok ? "as predicted" : "NOT AS PREDICTED");
    failures += !ok;
}

static void check_wgmma(void) {
    for (int ni = 0; ni < 2; ni++) {
        int n = check_n[ni];
        uint16_t *A = xmalloc(64 * 16 * 2), *B = xmalloc((size_t)16 * n * 2);
        double *ref = xmalloc((size_t)64 * n * 8);
        tir_rt_rng r = tir_rt_rng_seed(1234 + n);
        /* Small integers: every product and sum is exact in f32. */
        for (int i = 0; i < 64 * 16; i++)
            A[i] = tir_rt_f32_to_bf16((float)((int)(tir_rt_rng_next(&r) % 7) - 3));
        for (int i = 0; i < 16 * n; i++)
            B[i] = tir_rt_f32_to_bf16((float)((int)(tir_rt_rng_next(&r) % 7) - 3));
        CHECK(tir_rt_gemm_ref(ctx, TIR_BF16, 64, n, 16, A, B, TIR_RT_B_KN, ref));
        check_data cd = {n, A, B, ref, 0, 0};
        CHECK(tir_rt_alloc(ctx, dev, (size_t)64 * n * 4, &cd.out));
        CHECK(tir_rt_alloc(ctx, dev, 224 * 1024, &cd.img));
        for (int c = 0; c < NCAND; c++) check_one(&candidates[c], &cd);
        CHECK(tir_rt_free(ctx, dev, cd.out));
        CHECK(tir_rt_free(ctx, dev, cd.img));
        free(A);
        free(B);
        free(ref);
    }
}

/* ------------------------------------------------ TF32 layout checks */

/* Register i of thread t of the RS form's A operand (see gen_tf32_check). */
static int xreg_row(int t, int i) { return 16 * (t / 32) + (t % 32) / 4 + 8 * (i % 2); }
static int xreg_col(int t, int i) { return t % 4 + 4 * (i / 2); }

/* A TF32 candidate: the layout of both shared operands (TF32 element k
 * of a row is the 16-bit layouts' elements 2k and 2k + 1, so elem_offset
 * serves), LBO/SBO, swizzle, and the k slice: the image holds 32 k per
 * row (a BK 32 tile) and the instruction reads k 8 slice .. 8 slice + 7,
 * its descriptors advanced by 32 bytes a slice as a mainloop does. */
typedef struct {
    layout l;
    int lbo, sbo, swizzle, slice;
} tf32_candidate;

static const tf32_candidate tf32_candidates[] = {
    {L_K_KADJ, 128, 256, 0, 0},
    {L_K_SW128, 16, 1024, 1, 0},
    {L_K_SW128, 16, 1024, 1, 3},
    {L_K_ROW128, 16, 1024, 1, 1}, /* control: must not compute A B */
};
#define NTF32 ((int)(sizeof tf32_candidates / sizeof tf32_candidates[0]))

/* Writes operand rows x 8 (value(r, k)) into img at base; false when two
 * elements would share bytes or leave the `limit` bytes (a bug here). */
static bool put_tf32(uint8_t *img, uint8_t *seen, int base, int limit, const tf32_candidate *c,
                     int rows, const float *v, int stride_r, int stride_k) {
    bool ok = true;
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < 8; k++) {
            int off = base + elem_offset(c->l, rows, r, 2 * (8 * c->slice + k));
            ok &= off >= base && off + 4 <= limit && !seen[off] && !seen[off + 3];
            if (!ok) return false;
            memset(seen + off, 1, 4);
            memcpy(img + off, &v[r * stride_r + k * stride_k], 4);
        }
    return true;
}

static void check_tf32_one(const tf32_candidate *c, int n, int rs, const float *A,
                           const float *B, const double *ref, tir_rt_ptr out, tir_rt_ptr dimg,
                           tir_rt_ptr dx) {
    int rows_b = n, a_bytes = (reach(64, c->lbo, c->sbo) + 1023) / 1024 * 1024;
    int bytes = a_bytes + (reach(rows_b, c->lbo, c->sbo) + 1023) / 1024 * 1024;
    uint8_t *img = xmalloc((size_t)bytes), *seen = xmalloc((size_t)bytes);
    bool built = put_tf32(img, seen, 0, a_bytes, c, 64, A, 8, 1) &&
                 put_tf32(img, seen, a_bytes, bytes, c, n, B, 1, n);
    uint32_t x[128 * 4];
    for (int t = 0; t < 128; t++)
        for (int i = 0; i < 4; i++) memcpy(&x[t * 4 + i], &A[xreg_row(t, i) * 8 + xreg_col(t, i)], 4);
    bool predicted = canonical(c->l, 64, c->lbo, c->sbo, c->swizzle, 0) &&
                     canonical(c->l, n, c->lbo, c->sbo, c->swizzle, 0);
    printf("CHECK wgmma m64n%dk8 tf32 %s | %s, LBO=%d SBO=%d, swizzle %s, k slice %d: ", n,
           rs ? "RS (A from registers)" : "SS", layout_name[c->l], c->lbo, c->sbo,
           c->swizzle ? "128B" : "none", c->slice);
    fflush(stdout);
    if (!built) {
        printf("self-check FAILED (image)\n");
        failures++;
        free(img), free(seen);
        return;
    }
    char name[64];
    snprintf(name, sizeof name, "wgmma_check_tf32_%s_n%d", rs ? "rs" : "ss", n);
    tir_rt_kernel *k = load_kernel(name);
    CHECK(tir_rt_kernel_set_max_dynamic_smem(ctx, k, bytes + 1024));
    CHECK(tir_rt_copy_h2d(ctx, dev, dimg, img, (size_t)bytes));
    CHECK(tir_rt_copy_h2d(ctx, dev, dx, x, sizeof x));
    CHECK(tir_rt_memset8(ctx, dev, out, 0xff, (size_t)64 * n * 4));
    launch l = {k, {1, 1, 1}, {128, 1, 1}, (unsigned)bytes + 1024, 8, {{0}}};
    l.args[0] = tir_rt_arg_ptr(out);
    l.args[1] = tir_rt_arg_ptr(dimg);
    l.args[2] = tir_rt_arg_i32(bytes);
    l.args[3] = tir_rt_arg_i64((int64_t)desc_tmpl(c->lbo, c->sbo, c->swizzle));
    l.args[4] = tir_rt_arg_i64((int64_t)desc_tmpl(c->lbo, c->sbo, c->swizzle));
    l.args[5] = tir_rt_arg_i32(32 * c->slice);
    l.args[6] = tir_rt_arg_i32(a_bytes + 32 * c->slice);
    l.args[7] = tir_rt_arg_ptr(dx);
    CHECK(launch_fn(ctx, &l, 0));
    float *got = xmalloc((size_t)64 * n * 4);
    CHECK(tir_rt_copy_d2h(ctx, dev, got, out, (size_t)64 * n * 4));
    check_data cd = {n, NULL, NULL, ref, 0, 0};
    bool same;
    int wrong = compare_acc(&cd, got, &same);
    bool ok = (wrong == 0) == predicted;
    printf("%s", wrong ? "MISMATCH" : "MATCH");
    if (wrong)
        printf(" (%d of %d wrong; same values elsewhere: %s)", wrong, 64 * n, same ? "yes" : "no");
    printf("  [predicted %s: %s]\n", predicted ? "MATCH" : "MISMATCH",
           ok ? "as predicted" : "NOT AS PREDICTED");
    failures += !ok;
    free(got), free(img), free(seen);
}

static void check_tf32(void) {
    for (int ni = 0; ni < 2; ni++) {
        int n = check_n[ni];
        float *A = xmalloc(64 * 8 * 4), *B = xmalloc((size_t)8 * n * 4);
        double *ref = xmalloc((size_t)64 * n * 8);
        tir_rt_rng r = tir_rt_rng_seed(4321 + n);
        /* Small integers: exact in TF32, and every sum exact in f32. */
        for (int i = 0; i < 64 * 8; i++) A[i] = (float)((int)(tir_rt_rng_next(&r) % 7) - 3);
        for (int i = 0; i < 8 * n; i++) B[i] = (float)((int)(tir_rt_rng_next(&r) % 7) - 3);
        for (int i = 0; i < 64; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int k = 0; k < 8; k++) s += (double)A[i * 8 + k] * B[k * n + j];
                ref[i * n + j] = s;
            }
        tir_rt_ptr out, img, x;
        CHECK(tir_rt_alloc(ctx, dev, (size_t)64 * n * 4, &out));
        CHECK(tir_rt_alloc(ctx, dev, 224 * 1024, &img));
        CHECK(tir_rt_alloc(ctx, dev, 128 * 4 * 4, &x));
        for (int c = 0; c < NTF32; c++)
            for (int rs = 0; rs < 2; rs++)
                check_tf32_one(&tf32_candidates[c], n, rs, A, B, ref, out, img, x);
        CHECK(tir_rt_free(ctx, dev, out));
        CHECK(tir_rt_free(ctx, dev, img));
        CHECK(tir_rt_free(ctx, dev, x));
        free(A), free(B), free(ref);
    }
}

static void usage(void) {
    fprintf(stderr, "usage: tcpeak [--ordinal N] [--only peak|check] [--quick]\n"
                    "       tcpeak --emit DIR [--ptxas PATH]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int ordinal = 0;
    const char *only = NULL, *emit = NULL, *ptxas = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ordinal") && i + 1 < argc) ordinal = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--emit") && i + 1 < argc) emit = argv[++i];
        else if (!strcmp(argv[i], "--ptxas") && i + 1 < argc) ptxas = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else usage();
    }
    if (only && strcmp(only, "peak") && strcmp(only, "check")) usage();
    gen_all();
    if (!self_check()) return 1;
    if (emit) return emit_all(emit, ptxas);
    ctx = tir_ctx_create();
    if (!ctx) return 1;
    tir_status s = tir_rt_device_create(ctx, ordinal, &dev);
    if (s == TIR_ERR_NO_DRIVER || s == TIR_ERR_NO_DEVICE) {
        printf("tcpeak: no GPU: %s\n", tir_ctx_error(ctx));
        return 77;
    }
    CHECK(s);
    const tir_rt_props *p = tir_rt_device_props(dev);
    printf("device %s (%s), %d SMs, SM clock %d MHz\n", p->name, p->arch, p->sm_count,
           p->clock_khz / 1000);
    tir_rt_ptr out, img;
    CHECK(tir_rt_alloc(ctx, dev, (size_t)p->sm_count * 4 * 512 * 4, &out));
    CHECK(tir_rt_alloc(ctx, dev, PEAK_SMEM, &img));
    if (!only || !strcmp(only, "peak")) {
        peak_mma(p->sm_count, out);
        peak_wgmma(p->sm_count, out, img);
    }
    if (!only || !strcmp(only, "check")) {
        check_wgmma();
        check_tf32();
    }
    printf("tcpeak: %s (%d failed)\n", failures ? "FAIL" : "OK", failures);
    tir_rt_device_destroy(dev);
    tir_ctx_destroy(ctx);
    return failures ? 1 : 0;
}
