/* Runtime tests on a real GPU: device properties, memory, hand-written PTX
 * kernels (vector add, >48 KiB dynamic shared memory, a PTX error with its
 * JIT log), events, cuBLAS SGEMM and GemmEx (fp16, bf16, tf32) against the
 * float64 host reference for both B layouts, the strided-batched GEMM
 * against per-batch GEMMs and its argument checks, the GPU float64 reference,
 * the bias epilogue kernel and the benchmark helper; a generated kernel
 * with 64 KiB of dynamic shared memory through tir_rt_program; split-K's
 * two kernels and their workspace through tir_rt_program_set (on the
 * stand-in driver, which runs no generated kernel, its launch log shows
 * the kernels, their order and arguments).
 *
 * Without a driver or a GPU it prints "1..0 # SKIP ..." and passes; without
 * cuBLAS it runs the rest and says which tests it left out.  Every check
 * adds a row to a table printed at the end (as TAP comments), with the
 * errors measured, so one run on the GPU machine tells the whole story.
 */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "minitir/codegen.h"
#include "minitir/runtime.h"
#include "rt_test_kernels.h"
#include "splitk.h"

static tir_ctx *ctx;
static tir_rt_device *dev;
static tir_rt_blas *blas;

/* ------------------------------------------------------------ the table */

#define MAX_ROWS 128
static struct {
    char what[64];
    char detail[160];
    bool ok;
} rows[MAX_ROWS];
static int nrows;

static bool row(bool ok, const char *what, const char *fmt, ...) TIR_PRINTF(3, 4);
static bool row(bool ok, const char *what, const char *fmt, ...) {
    if (nrows < MAX_ROWS) {
        snprintf(rows[nrows].what, sizeof rows[nrows].what, "%s", what);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rows[nrows].detail, sizeof rows[nrows].detail, fmt, ap);
        va_end(ap);
        rows[nrows].ok = ok;
        nrows++;
    }
    return ok;
}

/* Prints text as TAP comment lines ("# " before each line). */
static void comment(const char *title, const char *text) {
    printf("# %s\n", title);
    while (*text) {
        const char *nl = strchr(text, '\n');
        int n = nl ? (int)(nl - text) : (int)strlen(text);
        printf("#   %.*s\n", n, text);
        text += n + (nl != NULL);
    }
}

/* Asserts s == want; on a mismatch prints the context's message first. */
#define EXPECT(s, want)                                                                   \
    do {                                                                                  \
        tir_status s_ = (s);                                                              \
        if (s_ != (want)) {                                                               \
            char where_[160];                                                             \
            snprintf(where_, sizeof where_, "%s:%d: got %s, wanted %s:", __FILE__,        \
                     __LINE__, tir_status_name(s_), tir_status_name(want));               \
            comment(where_, tir_ctx_error(ctx));                                          \
        }                                                                                 \
        assert_int_equal(s_, (want));                                                     \
    } while (0)

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    assert_non_null(p);
    return p;
}

/* --------------------------------------------------------------- device */

static void test_props(void **st) {
    (void)st;
    const tir_rt_props *p = tir_rt_device_props(dev);
    printf("# device %d: %s, %s, %d SMs, %.0f MHz, L2 %d KiB, %.1f GiB, driver %d.%d\n",
           p->ordinal, p->name, p->arch, p->sm_count, p->clock_khz / 1e3, p->l2_bytes / 1024,
           p->total_mem / (1024.0 * 1024 * 1024), p->driver_version / 1000,
           p->driver_version % 1000 / 10);
    printf("#   threads/block %d, threads/SM %d, smem/block %d (opt-in %d), smem/SM %d, "
           "regs/block %d, regs/SM %d, warp %d\n",
           p->max_threads_per_block, p->max_threads_per_sm, p->smem_per_block,
           p->smem_per_block_optin, p->smem_per_sm, p->max_regs_per_block, p->max_regs_per_sm,
           p->warp_size);
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", p->cc_major, p->cc_minor);
    bool ok = p->name[0] && strcmp(arch, p->arch) == 0 && p->cc_major >= 8 && p->sm_count > 0 &&
              p->warp_size == 32 && p->max_threads_per_block >= 1024 &&
              p->max_block_dim[0] >= 1024 && p->max_grid_dim[0] >= 65535 &&
              p->max_grid_dim[1] >= 65535 && p->smem_per_block >= 48 * 1024 &&
              p->smem_per_block_optin >= p->smem_per_block && p->smem_per_sm > 0 &&
              p->l2_bytes > 0 && p->total_mem > 0 && p->driver_version >= 12000;
    row(ok, "device properties", "%s %s, %d SMs, cc %d.%d (sm_80+ needed)", p->name, p->arch,
        p->sm_count, p->cc_major, p->cc_minor);
    assert_true(ok);

    int count = 0;
    EXPECT(tir_rt_device_count(ctx, &count), TIR_OK);
    assert_true(count >= 1);
    tir_rt_device *none = (tir_rt_device *)1;
    EXPECT(tir_rt_device_create(ctx, count, &none), TIR_ERR_NO_DEVICE);
    assert_null(none);
    assert_non_null(strstr(tir_ctx_error(ctx), "no device with ordinal"));
    size_t free_b = 0, total_b = 0;
    EXPECT(tir_rt_mem_info(ctx, dev, &free_b, &total_b), TIR_OK);
    assert_true(free_b > 0 && free_b <= total_b);
}

static void test_memory(void **st) {
    (void)st;
    enum { N = 1 << 18 };
    float *h = xmalloc(N * 4), *back = xmalloc(N * 4);
    EXPECT(tir_rt_fill_random(ctx, TIR_F32, h, N, 11), TIR_OK);
    tir_rt_ptr a, b;
    EXPECT(tir_rt_alloc(ctx, dev, N * 4, &a), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, N * 4, &b), TIR_OK);
    assert_true(a % 256 == 0 && b % 256 == 0);
    EXPECT(tir_rt_copy_h2d(ctx, dev, a, h, N * 4), TIR_OK);
    EXPECT(tir_rt_copy_d2d(ctx, dev, b, a, N * 4), TIR_OK);
    tir_rt_poison(back, N * 4);
    EXPECT(tir_rt_copy_d2h(ctx, dev, back, b, N * 4), TIR_OK);
    bool round = memcmp(h, back, N * 4) == 0;
    /* memsets: poison bytes, then a float pattern in the second half */
    EXPECT(tir_rt_memset8(ctx, dev, b, 0xff, N * 4), TIR_OK);
    EXPECT(tir_rt_memset32(ctx, dev, b + N * 2, 0x3f800000u, N / 2), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, back, b, N * 4), TIR_OK);
    int nan_ok = 0, one_ok = 0;
    for (int i = 0; i < N / 2; i++) nan_ok += isnan(back[i]);
    for (int i = N / 2; i < N; i++) one_ok += back[i] == 1.0f;
    /* a copy into the middle of an allocation */
    EXPECT(tir_rt_copy_h2d(ctx, dev, a + 4096, h, 1024), TIR_OK);
    float mid[256];
    EXPECT(tir_rt_copy_d2h(ctx, dev, mid, a + 4096, 1024), TIR_OK);
    bool offs = memcmp(mid, h, 1024) == 0;
    bool ok = round && nan_ok == N / 2 && one_ok == N / 2 && offs;
    row(ok, "memory", "H2D/D2D/D2H %s, memset8 NaN %d/%d, memset32 %d/%d, offset copy %s",
        round ? "equal" : "DIFFER", nan_ok, N / 2, one_ok, N / 2, offs ? "ok" : "WRONG");
    assert_true(ok);

    /* range checks happen on the host */
    EXPECT(tir_rt_copy_h2d(ctx, dev, a + 4, h, N * 4), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "past the end"));
    EXPECT(tir_rt_copy_d2h(ctx, dev, back, 12345, 4), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "not in a live allocation"));
    EXPECT(tir_rt_copy_d2d(ctx, dev, a + 4, a, 64), TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_memset32(ctx, dev, a + 2, 0, 4), TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_free(ctx, dev, a + 256), TIR_ERR_INVALID_ARG);
    tir_rt_ptr z;
    EXPECT(tir_rt_alloc(ctx, dev, 0, &z), TIR_ERR_INVALID_ARG);
    /* device memory exhausted is a CUDA error, not a crash */
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)1 << 50, &z), TIR_ERR_CUDA);
    assert_non_null(strstr(tir_ctx_error(ctx), "CUDA_ERROR_OUT_OF_MEMORY"));
    assert_true(z == 0);
    EXPECT(tir_rt_free(ctx, dev, a), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, a), TIR_ERR_INVALID_ARG); /* twice */
    EXPECT(tir_rt_free(ctx, dev, 0), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, b), TIR_OK);
    free(h);
    free(back);
}

/* -------------------------------------------------------------- kernels */

static void test_vadd(void **st) {
    (void)st;
    tir_rt_module *m;
    EXPECT(tir_rt_module_create(ctx, dev, rt_test_ptx, &m), TIR_OK);
    comment("JIT info log:", tir_rt_module_info_log(m));
    tir_rt_kernel *k, *k2;
    EXPECT(tir_rt_kernel_get(ctx, m, "vadd", &k), TIR_OK);
    EXPECT(tir_rt_kernel_get(ctx, m, "vadd", &k2), TIR_OK);
    assert_ptr_equal(k, k2);
    EXPECT(tir_rt_kernel_get(ctx, m, "nope", &k2), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "no kernel 'nope'"));
    tir_rt_kernel_info info;
    EXPECT(tir_rt_kernel_info_get(ctx, k, &info), TIR_OK);
    printf("# vadd: %d registers, %d params, ptx %d, binary %d, max threads %d\n", info.num_regs,
           info.nparams, info.ptx_version, info.binary_version, info.max_threads);
    assert_true(info.num_regs > 0 && info.max_threads >= 256);
    assert_true(info.nparams == 4 || info.nparams == -1);

    const unsigned n = 1000003; /* not a multiple of the block */
    float *a = xmalloc(n * 4), *b = xmalloc(n * 4), *c = xmalloc(n * 4);
    double *ref = xmalloc(n * sizeof(double));
    tir_rt_fill_random(ctx, TIR_F32, a, n, 1);
    tir_rt_fill_random(ctx, TIR_F32, b, n, 2);
    for (unsigned i = 0; i < n; i++) ref[i] = (double)(a[i] + b[i]);
    tir_rt_ptr da, db, dc;
    EXPECT(tir_rt_alloc(ctx, dev, n * 4, &da), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, n * 4, &db), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, n * 4, &dc), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, da, a, n * 4), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, db, b, n * 4), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, dc, 0xff, n * 4), TIR_OK);
    unsigned grid[3] = {(n + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
    tir_rt_arg args[] = {tir_rt_arg_ptr(da), tir_rt_arg_ptr(db), tir_rt_arg_ptr(dc),
                         tir_rt_arg_i32((int32_t)n)};
    EXPECT(tir_rt_launch(ctx, k, grid, block, 0, 4, args), TIR_OK);
    EXPECT(tir_rt_sync(ctx, dev), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, c, dc, n * 4), TIR_OK);
    tir_rt_error_stats es;
    tir_status s = tir_rt_check(ctx, "vadd", TIR_F32, c, ref, 1, n, 0.0, &es);
    row(s == TIR_OK, "vadd n=1000003", "rel err %.1e (exact expected), %lld unwritten",
        es.rel_err, (long long)es.nonfinite);
    EXPECT(s, TIR_OK);

    /* launch checks before the driver sees anything */
    if (info.nparams == 4) {
        EXPECT(tir_rt_launch(ctx, k, grid, block, 0, 3, args), TIR_ERR_INVALID_ARG);
        assert_non_null(strstr(tir_ctx_error(ctx), "takes 4 parameters, got 3"));
        tir_rt_arg wrong[] = {args[0], args[1], args[2], tir_rt_arg_i64(n)};
        EXPECT(tir_rt_launch(ctx, k, grid, block, 0, 4, wrong), TIR_ERR_INVALID_ARG);
        assert_non_null(strstr(tir_ctx_error(ctx), "argument 3 is 8 bytes"));
    }
    unsigned big[3] = {2048, 1, 1}, zero[3] = {0, 1, 1};
    EXPECT(tir_rt_launch(ctx, k, grid, big, 0, 4, args), TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_launch(ctx, k, zero, block, 0, 4, args), TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_launch(ctx, k, grid, block, 64 * 1024, 4, args), TIR_ERR_INVALID_ARG);

    /* events around a launch */
    tir_rt_event *e0, *e1;
    EXPECT(tir_rt_event_create(ctx, dev, &e0), TIR_OK);
    EXPECT(tir_rt_event_create(ctx, dev, &e1), TIR_OK);
    EXPECT(tir_rt_event_record(ctx, e0), TIR_OK);
    EXPECT(tir_rt_launch(ctx, k, grid, block, 0, 4, args), TIR_OK);
    EXPECT(tir_rt_event_record(ctx, e1), TIR_OK);
    float ms = -1;
    EXPECT(tir_rt_event_elapsed_ms(ctx, e0, e1, &ms), TIR_OK);
    row(ms > 0 && ms < 1000, "events", "vadd n=1000003 took %.4f ms", ms);
    assert_true(ms > 0 && ms < 1000);
    tir_rt_event_destroy(e0);
    tir_rt_event_destroy(e1);

    tir_rt_module_destroy(m);
    EXPECT(tir_rt_free(ctx, dev, da), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, db), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dc), TIR_OK);
    free(a);
    free(b);
    free(c);
    free(ref);
}

/* Device buffers of bytes for a kernel's input and output: din holding
 * in, dout filled with 0xff bytes. */
static void dev_io(const void *in, size_t bytes, tir_rt_ptr *din, tir_rt_ptr *dout) {
    EXPECT(tir_rt_alloc(ctx, dev, bytes, din), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, bytes, dout), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, *din, in, bytes), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, *dout, 0xff, bytes), TIR_OK);
}

static void test_dynamic_smem(void **st) {
    (void)st;
    const tir_rt_props *p = tir_rt_device_props(dev);
    tir_rt_module *m;
    EXPECT(tir_rt_module_create(ctx, dev, rt_test_ptx, &m), TIR_OK);
    tir_rt_kernel *k;
    EXPECT(tir_rt_kernel_get(ctx, m, "smem_reverse", &k), TIR_OK);
    const int bytes = 96 * 1024, words = bytes / 4; /* above the 48 KiB default */
    assert_true(p->smem_per_block_optin >= bytes);
    float in[256], out[256];
    tir_rt_fill_random(ctx, TIR_F32, in, 256, 5);
    tir_rt_ptr din, dout;
    dev_io(in, sizeof in, &din, &dout); /* sizeof out == sizeof in */
    unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1};
    tir_rt_arg args[] = {tir_rt_arg_ptr(din), tir_rt_arg_ptr(dout), tir_rt_arg_i32(words)};
    EXPECT(tir_rt_launch(ctx, k, grid, block, bytes, 3, args), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "tir_rt_kernel_set_max_dynamic_smem"));
    EXPECT(tir_rt_kernel_set_max_dynamic_smem(ctx, k, p->smem_per_block_optin + 1),
           TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_kernel_set_max_dynamic_smem(ctx, k, bytes), TIR_OK);
    tir_rt_kernel_info info;
    EXPECT(tir_rt_kernel_info_get(ctx, k, &info), TIR_OK);
    assert_int_equal(info.max_dynamic_smem, bytes);
    EXPECT(tir_rt_launch(ctx, k, grid, block, bytes, 3, args), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, out, dout, sizeof out), TIR_OK);
    int good = 0;
    for (int t = 0; t < 256; t++) good += out[t] == in[255 - t];
    row(good == 256, "dynamic smem 96 KiB", "%d/256 elements right (opt-in max %d bytes)", good,
        p->smem_per_block_optin);
    assert_int_equal(good, 256);
    tir_rt_module_destroy(m);
    EXPECT(tir_rt_free(ctx, dev, din), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dout), TIR_OK);
}

/* A generated kernel with 64 KiB of shared memory (past the static
 * 48 KiB, so codegen puts it in dynamic shared memory): B is A reversed
 * through shared memory.  tir_rt_program must opt the kernel in and
 * launch with the module's dyn_shared_bytes (the stand-in driver checks
 * the launch's dynamic bytes as the real one does). */
static const char *dyn_reverse_tir =
    "@T.prim_func\n"
    "def dyn_reverse(A: T.Buffer((16384,), \"float32\"), B: T.Buffer((16384,), \"float32\")):\n"
    "    for b in T.thread_binding(0, 1, thread=\"blockIdx.x\"):\n"
    "        S = T.allocate((16384,), \"float32\", scope=\"shared\")\n"
    "        for t in T.thread_binding(0, 256, thread=\"threadIdx.x\"):\n"
    "            for k in T.serial(64):\n"
    "                S[k * 256 + t] = A[k * 256 + t]\n"
    "            T.syncthreads()\n"
    "            for k2 in T.serial(64):\n"
    "                B[k2 * 256 + t] = S[16383 - (k2 * 256 + t)]\n";

/* The kernel of TIR text, compiled with the default options. */
static const tir_module *compile_text(const char *text) {
    const tir_prim_func *f;
    EXPECT(tir_parse_func(ctx, text, strlen(text), &f), TIR_OK);
    const tir_module *m;
    EXPECT(tir_codegen(ctx, f, NULL, &m), TIR_OK);
    return m;
}

static void test_program_dyn_smem(void **st) {
    (void)st;
    const tir_module *m = compile_text(dyn_reverse_tir);
    assert_int_equal(m->dyn_shared_bytes, 65536);
    enum { N = 16384 };
    float *in = xmalloc(N * 4), *out = xmalloc(N * 4);
    tir_rt_fill_random(ctx, TIR_F32, in, N, 7);
    tir_rt_ptr din, dout;
    dev_io(in, N * 4, &din, &dout);
    tir_rt_program *p;
    EXPECT(tir_rt_program_create(ctx, dev, m, &p), TIR_OK);
    tir_rt_kernel_info info;
    EXPECT(tir_rt_kernel_info_get(ctx, tir_rt_program_kernel(p), &info), TIR_OK);
    assert_int_equal(info.max_dynamic_smem, 65536);
    tir_rt_arg args[] = {tir_rt_arg_ptr(din), tir_rt_arg_ptr(dout)};
    EXPECT(tir_rt_program_launch(ctx, p, 2, args), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, out, dout, N * 4), TIR_OK);
    int good = 0;
    for (int i = 0; i < N; i++) good += out[i] == in[N - 1 - i];
    row(good == N, "program, 64 KiB dynamic smem", "%d/%d elements right, static %d bytes",
        good, N, info.static_smem);
    assert_int_equal(good, N);
    tir_rt_program_destroy(p);
    /* past the device's opt-in maximum: a clear error before any launch */
    tir_module big = *m;
    big.dyn_shared_bytes = tir_rt_device_props(dev)->smem_per_block_optin + 16;
    p = (tir_rt_program *)1;
    EXPECT(tir_rt_program_create(ctx, dev, &big, &p), TIR_ERR_INVALID_ARG);
    assert_null(p);
    assert_non_null(strstr(tir_ctx_error(ctx), "'dyn_reverse'"));
    assert_non_null(strstr(tir_ctx_error(ctx), "opt-in maximum"));
    EXPECT(tir_rt_free(ctx, dev, din), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dout), TIR_OK);
    free(in);
    free(out);
}

/* The stand-in driver's launch log (NULL on a real driver). */
typedef int (*nlaunches_fn)(void);
typedef bool (*launch_fn)(int, const char **, unsigned[3], int *, const uint64_t **);
static void *fake_lib(void) {
    const char *lib = getenv("MINITIR_CUDA_LIB");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    return h && dlsym(h, "fake_cuda_nlaunches") ? h : NULL;
}

/* An empty tensor: vector add over n elements at n = 0 launches nothing
 * (CUDA refuses 0 blocks) and returns TIR_OK, as a loop nest of 0
 * iterations does; n = 1000 launches 4 blocks; -1 blocks is an error.
 * On the stand-in driver its launch log shows that nothing was launched. */
static const char *vadd_n_tir =
    "@T.prim_func\n"
    "def vadd_n(A: T.Buffer((1024,), \"float32\"), B: T.Buffer((1024,), \"float32\"), "
    "n: T.int32):\n"
    "    for bx in T.thread_binding(0, (n + 255) // 256, thread=\"blockIdx.x\"):\n"
    "        for tx in T.thread_binding(0, 256, thread=\"threadIdx.x\"):\n"
    "            if bx * 256 + tx < n:\n"
    "                B[bx * 256 + tx] = A[bx * 256 + tx] + T.float32(1)\n";

static void test_program_empty(void **st) {
    (void)st;
    const tir_module *m = compile_text(vadd_n_tir);
    assert_true(m->grid[0].zero_ok);
    enum { N = 1024 };
    float *in = xmalloc(N * 4), *out = xmalloc(N * 4);
    for (int i = 0; i < N; i++) in[i] = (float)i;
    tir_rt_ptr din, dout;
    dev_io(in, N * 4, &din, &dout);
    tir_rt_program *p;
    EXPECT(tir_rt_program_create(ctx, dev, m, &p), TIR_OK);
    void *fake = fake_lib();
    nlaunches_fn nl = fake ? (nlaunches_fn)dlsym(fake, "fake_cuda_nlaunches") : NULL;
    int from = nl ? nl() : 0;
    tir_rt_arg args[] = {tir_rt_arg_ptr(din), tir_rt_arg_ptr(dout), tir_rt_arg_i32(0)};
    EXPECT(tir_rt_program_launch(ctx, p, 3, args), TIR_OK);
    if (nl) assert_int_equal(nl(), from);
    args[2] = tir_rt_arg_i32(-300); /* -1 blocks */
    EXPECT(tir_rt_program_launch(ctx, p, 3, args), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "has extent -1 (grid.x must be positive)"));
    EXPECT(tir_rt_sync(ctx, dev), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, out, dout, N * 4), TIR_OK);
    int untouched = 0;
    for (int i = 0; i < N; i++) untouched += isnan(out[i]);
    args[2] = tir_rt_arg_i32(1000);
    EXPECT(tir_rt_program_launch(ctx, p, 3, args), TIR_OK);
    if (nl) assert_int_equal(nl(), from + 1);
    EXPECT(tir_rt_sync(ctx, dev), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, out, dout, N * 4), TIR_OK);
    int good = 0;
    for (int i = 0; i < 1000; i++) good += out[i] == (float)i + 1.0f;
    row(untouched == N && (fake || good == 1000), "program, n = 0 (empty) then n = 1000",
        "%d/%d untouched after n = 0, %d/1000 right after n = 1000", untouched, N, good);
    assert_int_equal(untouched, N);
    if (!fake) assert_int_equal(good, 1000); /* the stand-in runs no kernel */
    tir_rt_program_destroy(p);
    EXPECT(tir_rt_free(ctx, dev, din), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dout), TIR_OK);
    free(in);
    free(out);
}

/* Split-K (examples/splitk) at 33x20x70, split 3, compiled to a module
 * set. */
static void splitk_modules(int64_t M, int64_t N, int64_t K, int split, tir_module_set *ms) {
    tir_schedule *s;
    EXPECT(tir_sched_create(ctx, tir_def_matmul(ctx, M, N, K, TIR_F32), &s), TIR_OK);
    EXPECT(splitk_schedule(s, split), TIR_OK);
    EXPECT(tir_build_kernels(ctx, tir_sched_func(s), NULL, ms), TIR_OK);
    tir_sched_destroy(s);
}

/* The launches since launch `from` on the stand-in: split-K's two
 * kernels in order, each with A, B, C and then the workspace. */
static void check_launch_log(void *fake, int from, const tir_rt_ptr want[4]) {
    nlaunches_fn n = (nlaunches_fn)dlsym(fake, "fake_cuda_nlaunches");
    launch_fn get = (launch_fn)dlsym(fake, "fake_cuda_launch");
    assert_true(n && get);
    assert_int_equal(n() - from, 2);
    for (int k = 0; k < 2; k++) {
        const char *name;
        unsigned grid[3];
        int np;
        const uint64_t *p;
        assert_true(get(from + k, &name, grid, &np, &p));
        assert_string_equal(name, k == 0 ? "matmul_k0" : "matmul_k1");
        assert_int_equal(np, 4);
        for (int i = 0; i < 4; i++) assert_true(p[i] == want[i]);
        assert_int_equal(grid[2], k == 0 ? 3 : 1); /* the split on blockIdx.z */
    }
}

static void test_program_set(void **st) {
    (void)st;
    enum { M = 33, N = 20, K = 70 };
    tir_module_set ms;
    splitk_modules(M, N, K, 3, &ms);
    assert_int_equal(ms.nmodules, 2);
    assert_int_equal(ms.nparams, 3);
    assert_int_equal(ms.nworkspace, 1);
    float *a = xmalloc(M * K * 4), *b = xmalloc(K * N * 4), *c = xmalloc(M * N * 4);
    double *ref = xmalloc(M * N * sizeof(double));
    tir_rt_fill_random(ctx, TIR_F32, a, M * K, 21);
    tir_rt_fill_random(ctx, TIR_F32, b, K * N, 22);
    EXPECT(tir_rt_gemm_ref(ctx, TIR_F32, M, N, K, a, b, TIR_RT_B_KN, ref), TIR_OK);
    tir_rt_ptr d[4];
    EXPECT(tir_rt_alloc(ctx, dev, M * K * 4, &d[0]), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, K * N * 4, &d[1]), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, M * N * 4, &d[2]), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, d[0], a, M * K * 4), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, d[1], b, K * N * 4), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, d[2], 0xff, M * N * 4), TIR_OK);
    tir_rt_program_set *ps;
    EXPECT(tir_rt_program_set_create(ctx, dev, &ms, &ps), TIR_OK);
    assert_int_equal(tir_rt_program_set_count(ps), 2);
    d[3] = tir_rt_program_set_workspace(ps, 0);
    assert_true(d[3] != 0 && tir_rt_program_set_workspace(ps, 1) == 0);
    void *fake = fake_lib();
    int from = fake ? ((nlaunches_fn)dlsym(fake, "fake_cuda_nlaunches"))() : 0;
    tir_rt_arg args[3] = {tir_rt_arg_ptr(d[0]), tir_rt_arg_ptr(d[1]), tir_rt_arg_ptr(d[2])};
    EXPECT(tir_rt_program_set_launch(ctx, ps, 3, args), TIR_OK);
    EXPECT(tir_rt_sync(ctx, dev), TIR_OK);
    if (fake) {
        check_launch_log(fake, from, d);
        row(true, "program set, split-K (stand-in)", "2 launches in order, workspace passed");
    } else {
        EXPECT(tir_rt_copy_d2h(ctx, dev, c, d[2], M * N * 4), TIR_OK);
        tir_rt_error_stats es;
        tir_status s = tir_rt_check(ctx, "split-K", TIR_F32, c, ref, M, N,
                                    tir_rt_gemm_tolerance(TIR_RT_GEMM_F32, K), &es);
        row(s == TIR_OK, "program set, split-K 33x20x70/3", "rel err %.2e", es.rel_err);
        EXPECT(s, TIR_OK);
    }
    /* the function's own arguments only: the workspace is the set's */
    EXPECT(tir_rt_program_set_launch(ctx, ps, 2, args), TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "the function takes 3"));
    tir_rt_program_set_destroy(ps);
    for (int i = 0; i < 3; i++) EXPECT(tir_rt_free(ctx, dev, d[i]), TIR_OK);
    free(a), free(b), free(c), free(ref);
}

/* A workspace the device cannot hold: a clear error naming it, nothing
 * left allocated (the stand-in has 1 GiB; 8 x 8192 x 8192 floats is 2). */
static void test_program_set_no_memory(void **st) {
    (void)st;
    if (!fake_lib()) skip();
    tir_module_set ms;
    splitk_modules(8192, 8192, 16, 8, &ms);
    size_t free0, free1, total;
    EXPECT(tir_rt_mem_info(ctx, dev, &free0, &total), TIR_OK);
    tir_rt_program_set *ps = (tir_rt_program_set *)1;
    EXPECT(tir_rt_program_set_create(ctx, dev, &ms, &ps), TIR_ERR_CUDA);
    assert_null(ps);
    assert_non_null(strstr(tir_ctx_error(ctx), "workspace buffer 'C_rf'"));
    EXPECT(tir_rt_mem_info(ctx, dev, &free1, &total), TIR_OK);
    assert_true(free0 == free1);
}

static void test_bad_ptx(void **st) {
    (void)st;
    tir_rt_module *m = (tir_rt_module *)1;
    tir_status s = tir_rt_module_create(ctx, dev, rt_bad_ptx, &m);
    const char *msg = tir_ctx_error(ctx);
    const char *log = strstr(msg, "JIT error log:\n");
    bool ok = s == TIR_ERR_CUDA && !m && strstr(msg, "cuModuleLoadDataEx") &&
              strstr(msg, "CUDA_ERROR_INVALID_PTX") && log &&
              strlen(log) > strlen("JIT error log:\n") && !strstr(log, "(empty)");
    row(ok, "bad PTX", "%s", ok ? "TIR_ERR_CUDA, CUDA_ERROR_INVALID_PTX + JIT log" : msg);
    comment("bad PTX message:", msg);
    assert_true(ok);
    /* the device is still fine */
    EXPECT(tir_rt_module_create(ctx, dev, rt_test_ptx, &m), TIR_OK);
    tir_rt_module_destroy(m);
    EXPECT(tir_rt_module_create(ctx, dev, "", &m), TIR_ERR_INVALID_ARG);
}

/* The PTX assembler's optimiser takes abs(x) > -55.5 as true, which is
 * false for a NaN (found by the expression fuzzer; docs/reliability.md, "The
 * PTX assembler").  tir_rt_device_set_jit_opt_level(0) is the way round it: at
 * level 0 the kernel must compute what PTX says.  What the default level
 * gives is printed, not asserted (a fixed driver may change it). */
static const char jit_abs_ptx[] =
    ".version 7.8\n.target sm_90\n.address_size 64\n"
    ".visible .entry absgt(.param .u64 pin, .param .u64 pout)\n{\n"
    "  .reg .pred %p<2>; .reg .f32 %f<4>; .reg .b64 %rd<3>;\n"
    "  ld.param.u64 %rd1, [pin]; ld.param.u64 %rd2, [pout];\n"
    "  ld.global.f32 %f1, [%rd1];\n  abs.f32 %f2, %f1;\n"
    "  setp.gt.f32 %p1, %f2, 0fC25E0000;\n"
    "  selp.f32 %f3, 0f3F800000, 0f40000000, %p1;\n"
    "  st.global.f32 [%rd2], %f3;\n  ret;\n}\n";

static float run_abs_probe(float x) {
    tir_rt_module *m;
    tir_rt_kernel *k;
    tir_rt_ptr din, dout;
    float y = -1;
    EXPECT(tir_rt_module_create(ctx, dev, jit_abs_ptx, &m), TIR_OK);
    EXPECT(tir_rt_kernel_get(ctx, m, "absgt", &k), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, 4, &din), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, 4, &dout), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, din, &x, 4), TIR_OK);
    unsigned one[3] = {1, 1, 1};
    tir_rt_arg args[] = {tir_rt_arg_ptr(din), tir_rt_arg_ptr(dout)};
    EXPECT(tir_rt_launch(ctx, k, one, one, 0, 2, args), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, &y, dout, 4), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, din), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dout), TIR_OK);
    tir_rt_module_destroy(m);
    return y;
}

/* The stand-in driver runs no PTX it does not know: there the test checks
 * what reaches cuModuleLoadDataEx. */
static void jit_level_fake(void *fake) {
    int (*level)(void) = (int (*)(void))dlsym(fake, "fake_cuda_last_jit_level");
    assert_non_null(level);
    tir_rt_module *m;
    EXPECT(tir_rt_module_create(ctx, dev, rt_test_ptx, &m), TIR_OK);
    assert_int_equal(level(), -1); /* the driver's default: no option */
    tir_rt_module_destroy(m);
    EXPECT(tir_rt_device_set_jit_opt_level(ctx, dev, 0), TIR_OK);
    EXPECT(tir_rt_module_create(ctx, dev, rt_test_ptx, &m), TIR_OK);
    assert_int_equal(level(), 0);
    tir_rt_module_destroy(m);
    EXPECT(tir_rt_device_set_jit_opt_level(ctx, dev, 3), TIR_OK);
    EXPECT(tir_rt_module_create(ctx, dev, rt_test_ptx, &m), TIR_OK);
    assert_int_equal(level(), 3);
    tir_rt_module_destroy(m);
    EXPECT(tir_rt_device_set_jit_opt_level(ctx, dev, -1), TIR_OK);
    EXPECT(tir_rt_module_create(ctx, dev, rt_test_ptx, &m), TIR_OK);
    assert_int_equal(level(), -1);
    tir_rt_module_destroy(m);
    row(true, "JIT level", "levels -1, 0, 3, -1 passed to the (stand-in) driver as asked");
}

static void test_jit_opt_level(void **st) {
    (void)st;
    EXPECT(tir_rt_device_set_jit_opt_level(ctx, dev, 5), TIR_ERR_INVALID_ARG);
    void *fake = fake_lib();
    if (fake) {
        jit_level_fake(fake);
        return;
    }
    EXPECT(tir_rt_device_set_jit_opt_level(ctx, dev, 0), TIR_OK);
    float at0 = run_abs_probe(NAN), at0_num = run_abs_probe(-3.0f);
    EXPECT(tir_rt_device_set_jit_opt_level(ctx, dev, -1), TIR_OK);
    float dflt = run_abs_probe(NAN);
    row(at0 == 2.0f && at0_num == 1.0f, "JIT level 0",
        "abs(NaN) > -55.5 false at level 0 (%g), at the default level %s (%g)", at0,
        dflt == 2.0f ? "false too" : "TRUE: the assembler's bug", dflt);
    assert_true(at0 == 2.0f && at0_num == 1.0f);
}

/* --------------------------------------------------------------- cuBLAS */

/* C = A·B through cuBLAS, checked against the float64 host reference. */
static void gemm_case(tir_rt_gemm_kind kind, int64_t M, int64_t N, int64_t K,
                      tir_rt_b_layout layout, uint64_t seed) {
    tir_dtype in = tir_rt_gemm_kind_input(kind);
    size_t es = tir_dtype_bytes(in);
    void *A = xmalloc((size_t)(M * K) * es), *B = xmalloc((size_t)(K * N) * es);
    float *C = xmalloc((size_t)(M * N) * 4);
    double *ref = xmalloc((size_t)(M * N) * sizeof(double));
    EXPECT(tir_rt_fill_random(ctx, in, A, (size_t)(M * K), seed), TIR_OK);
    EXPECT(tir_rt_fill_random(ctx, in, B, (size_t)(K * N), seed + 1), TIR_OK);
    EXPECT(tir_rt_gemm_ref(ctx, in, M, N, K, A, B, layout, ref), TIR_OK);
    tir_rt_ptr dA, dB, dC;
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)(M * K) * es, &dA), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)(K * N) * es, &dB), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)(M * N) * 4, &dC), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, dA, A, (size_t)(M * K) * es), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, dB, B, (size_t)(K * N) * es), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, dC, 0xff, (size_t)(M * N) * 4), TIR_OK);
    EXPECT(tir_rt_blas_gemm(ctx, blas, kind, M, N, K, dA, dB, layout, dC), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, C, dC, (size_t)(M * N) * 4), TIR_OK);
    double tol = tir_rt_gemm_tolerance(kind, K);
    char what[64];
    snprintf(what, sizeof what, "gemm %s %lldx%lldx%lld B%s", tir_rt_gemm_kind_name(kind),
             (long long)M, (long long)N, (long long)K, layout == TIR_RT_B_NK ? "[N,K]" : "[K,N]");
    tir_rt_error_stats st;
    tir_status s = tir_rt_check(ctx, what, TIR_F32, C, ref, M, N, tol, &st);
    row(s == TIR_OK, what, "rel err %.2e (tol %.0e), max abs %.2e", st.rel_err, tol,
        st.max_abs_err);
    if (s != TIR_OK) comment("mismatch:", tir_ctx_error(ctx));
    EXPECT(s, TIR_OK);

    /* the GPU float64 reference agrees with the host one */
    if (kind != TIR_RT_GEMM_TF32 && kind != TIR_RT_GEMM_F32_PEDANTIC) {
        tir_rt_ptr dR;
        double *r2 = xmalloc((size_t)(M * N) * sizeof(double));
        EXPECT(tir_rt_alloc(ctx, dev, (size_t)(M * N) * 8, &dR), TIR_OK);
        EXPECT(tir_rt_memset8(ctx, dev, dR, 0xff, (size_t)(M * N) * 8), TIR_OK);
        EXPECT(tir_rt_gemm_ref_device(ctx, dev, in, M, N, K, dA, dB, layout, dR), TIR_OK);
        EXPECT(tir_rt_copy_d2h(ctx, dev, r2, dR, (size_t)(M * N) * 8), TIR_OK);
        snprintf(what, sizeof what, "gpu f64 ref %s %lldx%lldx%lld B%s",
                 tir_rt_gemm_kind_name(kind), (long long)M, (long long)N, (long long)K,
                 layout == TIR_RT_B_NK ? "[N,K]" : "[K,N]");
        s = tir_rt_check(ctx, what, TIR_F64, r2, ref, M, N, 1e-12, &st);
        row(s == TIR_OK, what, "rel err %.2e vs host f64 (tol 1e-12)", st.rel_err);
        if (s != TIR_OK) comment("mismatch:", tir_ctx_error(ctx));
        EXPECT(s, TIR_OK);
        EXPECT(tir_rt_free(ctx, dev, dR), TIR_OK);
        free(r2);
    }
    EXPECT(tir_rt_free(ctx, dev, dA), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dB), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dC), TIR_OK);
    free(A);
    free(B);
    free(C);
    free(ref);
}

static void test_sgemm(void **st) {
    (void)st;
    gemm_case(TIR_RT_GEMM_F32, 64, 48, 32, TIR_RT_B_KN, 100);
    gemm_case(TIR_RT_GEMM_F32, 64, 48, 32, TIR_RT_B_NK, 102);
    gemm_case(TIR_RT_GEMM_F32, 257, 129, 67, TIR_RT_B_KN, 104);
    gemm_case(TIR_RT_GEMM_F32, 257, 129, 67, TIR_RT_B_NK, 106);
    gemm_case(TIR_RT_GEMM_F32_PEDANTIC, 257, 129, 67, TIR_RT_B_KN, 108);
    /* a deep one, where accumulation error shows */
    gemm_case(TIR_RT_GEMM_F32, 33, 65, 4099, TIR_RT_B_NK, 110);
}

static void test_gemm_ex(void **st) {
    (void)st;
    gemm_case(TIR_RT_GEMM_BF16, 257, 129, 67, TIR_RT_B_KN, 200);
    gemm_case(TIR_RT_GEMM_BF16, 257, 129, 67, TIR_RT_B_NK, 202);
    gemm_case(TIR_RT_GEMM_F16, 257, 129, 67, TIR_RT_B_KN, 204);
    gemm_case(TIR_RT_GEMM_F16, 257, 129, 67, TIR_RT_B_NK, 206);
    gemm_case(TIR_RT_GEMM_TF32, 257, 129, 67, TIR_RT_B_KN, 208);
    gemm_case(TIR_RT_GEMM_TF32, 257, 129, 67, TIR_RT_B_NK, 210);
    gemm_case(TIR_RT_GEMM_BF16, 128, 256, 1024, TIR_RT_B_NK, 212);
}

static void test_gemm_errors(void **st) {
    (void)st;
    tir_rt_ptr a;
    EXPECT(tir_rt_alloc(ctx, dev, 64 * 64 * 4, &a), TIR_OK);
    /* B needs 64x65 floats: more than the allocation */
    EXPECT(tir_rt_blas_gemm(ctx, blas, TIR_RT_GEMM_F32, 64, 65, 64, a, a, TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "gemm B"));
    EXPECT(tir_rt_blas_gemm(ctx, blas, TIR_RT_GEMM_F32, 0, 1, 1, a, a, TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_free(ctx, dev, a), TIR_OK);
    row(true, "gemm argument checks", "oversized B and M=0 rejected on the host");
}

/* The stand-in's count of calls to a cuBLAS entry point; -1 on a real
 * cuBLAS. */
typedef long (*blas_calls_fn)(const char *);
static long blas_calls(void *fake, const char *entry) {
    blas_calls_fn f = fake ? (blas_calls_fn)dlsym(fake, "fake_cuda_blas_calls") : NULL;
    return f ? f(entry) : -1;
}

/* C[b] = A[b]·B[b] for `batch` contiguous batches in one strided-batched
 * call, checked batch by batch against tir_rt_blas_gemm on the same
 * device buffers (exactly on the stand-in, which computes both the same
 * way; within the kind's tolerance on a GPU, where cuBLAS may pick other
 * kernels).  C is NaN-poisoned first, so a batch left unwritten fails. */
static void batched_case(tir_rt_gemm_kind kind, int64_t batch, int64_t M, int64_t N, int64_t K,
                         tir_rt_b_layout layout, uint64_t seed) {
    tir_dtype in = tir_rt_gemm_kind_input(kind);
    size_t es = tir_dtype_bytes(in), na = (size_t)(batch * M * K), nb = (size_t)(batch * K * N),
           nc = (size_t)(batch * M * N), mn = (size_t)(M * N);
    void *A = xmalloc(na * es), *B = xmalloc(nb * es);
    float *C = xmalloc(nc * 4), *R = xmalloc(nc * 4);
    double *ref = xmalloc(mn * sizeof(double));
    EXPECT(tir_rt_fill_random(ctx, in, A, na, seed), TIR_OK);
    EXPECT(tir_rt_fill_random(ctx, in, B, nb, seed + 1), TIR_OK);
    tir_rt_ptr dA, dB, dC, dR;
    EXPECT(tir_rt_alloc(ctx, dev, na * es, &dA), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, nb * es, &dB), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, nc * 4, &dC), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, nc * 4, &dR), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, dA, A, na * es), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, dB, B, nb * es), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, dC, 0xff, nc * 4), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, dR, 0xff, nc * 4), TIR_OK);
    for (int64_t b = 0; b < batch; b++) {
        tir_rt_ptr a = dA + (tir_rt_ptr)((size_t)(b * M * K) * es),
                   bb = dB + (tir_rt_ptr)((size_t)(b * K * N) * es),
                   r = dR + (tir_rt_ptr)((size_t)(b * M * N) * 4);
        EXPECT(tir_rt_blas_gemm(ctx, blas, kind, M, N, K, a, bb, layout, r), TIR_OK);
    }
    void *fake = fake_lib();
    bool f32 = kind == TIR_RT_GEMM_F32;
    const char *entry = f32 ? "cublasSgemmStridedBatched" : "cublasGemmStridedBatchedEx";
    long before = blas_calls(fake, entry), plain = blas_calls(fake, "cublasSgemm_v2") +
                                                   blas_calls(fake, "cublasGemmEx");
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, kind, batch, M, N, K, dA, dB, layout, dC), TIR_OK);
    if (fake) { /* one batched call, no per-batch ones */
        assert_int_equal(blas_calls(fake, entry) - before, 1);
        assert_int_equal(blas_calls(fake, "cublasSgemm_v2") + blas_calls(fake, "cublasGemmEx"),
                         plain);
    }
    EXPECT(tir_rt_copy_d2h(ctx, dev, C, dC, nc * 4), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, R, dR, nc * 4), TIR_OK);
    if (fake) assert_memory_equal(C, R, nc * 4);
    double tol = tir_rt_gemm_tolerance(kind, K), worst = 0;
    char what[80];
    snprintf(what, sizeof what, "batched %s %lldx%lldx%lldx%lld B%s", tir_rt_gemm_kind_name(kind),
             (long long)batch, (long long)M, (long long)N, (long long)K,
             layout == TIR_RT_B_NK ? "[N,K]" : "[K,N]");
    tir_status s = TIR_OK;
    for (int64_t b = 0; b < batch && s == TIR_OK; b++) {
        for (size_t i = 0; i < mn; i++) ref[i] = R[(size_t)b * mn + i];
        tir_rt_error_stats es_;
        s = tir_rt_check(ctx, what, TIR_F32, C + (size_t)b * mn, ref, M, N, tol, &es_);
        if (es_.rel_err > worst) worst = es_.rel_err;
    }
    row(s == TIR_OK, what, "worst batch rel err %.2e vs per-batch gemm (tol %.0e)%s", worst, tol,
        fake ? ", one call" : "");
    EXPECT(s, TIR_OK);
    tir_rt_ptr d[4] = {dA, dB, dC, dR};
    for (int i = 0; i < 4; i++) EXPECT(tir_rt_free(ctx, dev, d[i]), TIR_OK);
    free(A);
    free(B);
    free(C);
    free(R);
    free(ref);
}

static void test_gemm_batched(void **st) {
    (void)st;
    batched_case(TIR_RT_GEMM_F32, 3, 33, 17, 20, TIR_RT_B_KN, 300);
    batched_case(TIR_RT_GEMM_F32, 4, 64, 48, 32, TIR_RT_B_NK, 302);
    batched_case(TIR_RT_GEMM_F32, 1, 16, 16, 16, TIR_RT_B_KN, 304);
    batched_case(TIR_RT_GEMM_F32_PEDANTIC, 2, 31, 9, 45, TIR_RT_B_KN, 306);
    batched_case(TIR_RT_GEMM_TF32, 3, 33, 17, 20, TIR_RT_B_NK, 308);
    batched_case(TIR_RT_GEMM_F16, 3, 40, 24, 36, TIR_RT_B_KN, 310);
    batched_case(TIR_RT_GEMM_BF16, 3, 40, 24, 36, TIR_RT_B_NK, 312);
}

/* Each refused call names its problem and leaves C as it was. */
static void test_gemm_batched_errors(void **st) {
    (void)st;
    const int64_t b = 3, M = 8, N = 8, K = 8;
    tir_rt_ptr a, c;
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)(b * M * K) * 4, &a), TIR_OK);
    /* C one float short of three 8x8 batches */
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)(b * M * N) * 4 - 4, &c), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, c, 0xff, (size_t)(b * M * N) * 4 - 4), TIR_OK);
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_F32, b, M, N, K, a, a, TIR_RT_B_KN, c),
           TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "batched gemm C"));
    /* four batches overrun A's allocation */
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_F32, 4, M, N, K, a, a, TIR_RT_B_NK, a),
           TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "batched gemm A"));
    /* six bf16 batches of A and B fit in it (2-byte elements), their C does not */
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_BF16, 6, M, N, K, a, a, TIR_RT_B_NK, a),
           TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "batched gemm C"));
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_F32, 0, M, N, K, a, a, TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "batch 0 must be in 1..2147483647"));
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_F32, (int64_t)INT32_MAX + 1, 1, 1, 1,
                                    a, a, TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "batch 2147483648"));
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_F32, b, M, 0, K, a, a, TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "N=0"));
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_F32, b, M, (int64_t)INT32_MAX + 1, K,
                                    a, a, TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    /* batch x M x K x 4 bytes past 2^64: refused, not wrapped */
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_F32, INT32_MAX, INT32_MAX, 1,
                                    INT32_MAX, a, a, TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "exceed the address space"));
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_F32, b, M, N, K, a, a,
                                    (tir_rt_b_layout)7, a),
           TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, (tir_rt_gemm_kind)42, b, M, N, K, a, a,
                                    TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_blas_gemm_batched(ctx, NULL, TIR_RT_GEMM_F32, b, M, N, K, a, a, TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    /* a pointer outside every allocation */
    EXPECT(tir_rt_blas_gemm_batched(ctx, blas, TIR_RT_GEMM_F32, 1, M, N, K, a, (tir_rt_ptr)16,
                                    TIR_RT_B_KN, a),
           TIR_ERR_INVALID_ARG);
    assert_non_null(strstr(tir_ctx_error(ctx), "batched gemm B"));
    EXPECT(tir_rt_sync(ctx, dev), TIR_OK);
    uint32_t *h = xmalloc((size_t)(b * M * N) * 4 - 4);
    EXPECT(tir_rt_copy_d2h(ctx, dev, h, c, (size_t)(b * M * N) * 4 - 4), TIR_OK);
    for (int64_t i = 0; i < b * M * N - 1; i++) assert_int_equal(h[i], 0xffffffffu);
    free(h);
    EXPECT(tir_rt_free(ctx, dev, a), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, c), TIR_OK);
    row(true, "batched gemm argument checks",
        "short C, A, batch 0 and 2^31, N=0 and 2^31, overflow, layout, kind, no handle refused");
}

/* ------------------------------------------------------------- epilogue */

static void test_epilogue(void **st) {
    (void)st;
    const int64_t M = 257, N = 129;
    const size_t n = (size_t)(M * N);
    float *C = xmalloc(n * 4), *D = xmalloc(n * 4), *want = xmalloc(n * 4);
    float bias[129];
    tir_rt_fill_random(ctx, TIR_F32, C, n, 300);
    tir_rt_fill_random(ctx, TIR_F32, bias, (size_t)N, 301);
    tir_rt_poison(&C[7], 4); /* an unwritten element must stay NaN */
    tir_rt_ptr dC, dB, dD;
    EXPECT(tir_rt_alloc(ctx, dev, n * 4, &dC), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)N * 4, &dB), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, n * 4, &dD), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, dB, bias, (size_t)N * 4), TIR_OK);
    const tir_rt_epilogue epis[] = {{TIR_RT_EPI_BIAS, 0, 0},
                                    {TIR_RT_EPI_BIAS_RELU, 0, 0},
                                    {TIR_RT_EPI_BIAS_CLIP, -0.25f, 0.5f}};
    const char *names[] = {"bias", "bias+relu", "bias+clip[-0.25,0.5]"};
    for (int e = 0; e < 3; e++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            tir_rt_ptr out = inplace ? dC : dD;
            EXPECT(tir_rt_copy_h2d(ctx, dev, dC, C, n * 4), TIR_OK);
            EXPECT(tir_rt_memset8(ctx, dev, dD, 0xff, n * 4), TIR_OK);
            EXPECT(tir_rt_bias_epilogue(ctx, dev, M, N, dC, dB, out, &epis[e]), TIR_OK);
            EXPECT(tir_rt_copy_d2h(ctx, dev, D, out, n * 4), TIR_OK);
            tir_rt_bias_epilogue_ref(M, N, C, bias, want, &epis[e]);
            size_t bad = 0, zeros = 0;
            for (size_t i = 0; i < n; i++) {
                bool same = isnan(want[i]) ? isnan(D[i]) : D[i] == want[i];
                bad += !same;
                zeros += D[i] == 0.0f;
            }
            char what[64];
            snprintf(what, sizeof what, "epilogue %s%s", names[e], inplace ? " in place" : "");
            bool ok = bad == 0 && isnan(D[7]);
            row(ok, what, "%zu of %zu differ from the host (bitwise), NaN kept: %s, %zu zeros",
                bad, n, isnan(D[7]) ? "yes" : "NO", zeros);
            assert_true(ok);
        }
    }
    tir_rt_epilogue empty = {TIR_RT_EPI_BIAS_CLIP, 1.0f, -1.0f};
    EXPECT(tir_rt_bias_epilogue(ctx, dev, M, N, dC, dB, dD, &empty), TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_bias_epilogue(ctx, dev, M, N + 1, dC, dB, dD, &epis[0]), TIR_ERR_INVALID_ARG);
    EXPECT(tir_rt_free(ctx, dev, dC), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dB), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dD), TIR_OK);
    free(C);
    free(D);
    free(want);
}

/* cuBLAS SGEMM then the ReLU epilogue, against float64 A·B + bias, ReLU. */
static void test_gemm_bias_relu(void **st) {
    (void)st;
    const int64_t M = 257, N = 129, K = 67;
    float *A = xmalloc((size_t)(M * K) * 4), *B = xmalloc((size_t)(K * N) * 4);
    float *D = xmalloc((size_t)(M * N) * 4), bias[129];
    double *ref = xmalloc((size_t)(M * N) * sizeof(double));
    tir_rt_fill_random(ctx, TIR_F32, A, (size_t)(M * K), 400);
    tir_rt_fill_random(ctx, TIR_F32, B, (size_t)(K * N), 401);
    tir_rt_fill_random(ctx, TIR_F32, bias, (size_t)N, 402);
    EXPECT(tir_rt_gemm_ref(ctx, TIR_F32, M, N, K, A, B, TIR_RT_B_KN, ref), TIR_OK);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double v = ref[i * N + j] + bias[j];
            ref[i * N + j] = v > 0 ? v : 0;
        }
    tir_rt_ptr dA, dB, dC, dbias;
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)(M * K) * 4, &dA), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)(K * N) * 4, &dB), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)(M * N) * 4, &dC), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, (size_t)N * 4, &dbias), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, dA, A, (size_t)(M * K) * 4), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, dB, B, (size_t)(K * N) * 4), TIR_OK);
    EXPECT(tir_rt_copy_h2d(ctx, dev, dbias, bias, (size_t)N * 4), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, dC, 0xff, (size_t)(M * N) * 4), TIR_OK);
    EXPECT(tir_rt_blas_gemm(ctx, blas, TIR_RT_GEMM_F32, M, N, K, dA, dB, TIR_RT_B_KN, dC),
           TIR_OK);
    tir_rt_epilogue relu = {TIR_RT_EPI_BIAS_RELU, 0, 0};
    EXPECT(tir_rt_bias_epilogue(ctx, dev, M, N, dC, dbias, dC, &relu), TIR_OK);
    EXPECT(tir_rt_copy_d2h(ctx, dev, D, dC, (size_t)(M * N) * 4), TIR_OK);
    tir_rt_error_stats es;
    tir_status s = tir_rt_check(ctx, "sgemm+bias+relu", TIR_F32, D, ref, M, N, 1e-5, &es);
    row(s == TIR_OK, "sgemm 257x129x67 + bias + relu", "rel err %.2e vs f64 (tol 1e-5)",
        es.rel_err);
    EXPECT(s, TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dA), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dB), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dC), TIR_OK);
    EXPECT(tir_rt_free(ctx, dev, dbias), TIR_OK);
    free(A);
    free(B);
    free(D);
    free(ref);
}

/* ---------------------------------------------------------------- bench */

typedef struct vadd_job {
    tir_rt_kernel *k;
    tir_rt_ptr a[2], b, c;
    unsigned n;
    int seen[2];
} vadd_job;

static tir_status run_vadd(tir_ctx *c, void *user, int set) {
    vadd_job *j = user;
    j->seen[set]++;
    unsigned grid[3] = {(j->n + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
    tir_rt_arg args[] = {tir_rt_arg_ptr(j->a[set]), tir_rt_arg_ptr(j->b), tir_rt_arg_ptr(j->c),
                         tir_rt_arg_i32((int32_t)j->n)};
    return tir_rt_launch(c, j->k, grid, block, 0, 4, args);
}

static void test_bench(void **st) {
    (void)st;
    tir_rt_module *m;
    EXPECT(tir_rt_module_create(ctx, dev, rt_test_ptx, &m), TIR_OK);
    vadd_job j = {.n = 1u << 22};
    EXPECT(tir_rt_kernel_get(ctx, m, "vadd", &j.k), TIR_OK);
    size_t bytes = (size_t)j.n * 4;
    EXPECT(tir_rt_alloc(ctx, dev, bytes, &j.a[0]), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, bytes, &j.a[1]), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, bytes, &j.b), TIR_OK);
    EXPECT(tir_rt_alloc(ctx, dev, bytes, &j.c), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, j.a[0], 0, bytes), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, j.a[1], 0, bytes), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, dev, j.b, 0, bytes), TIR_OK);
    tir_rt_bench_result warm, cold;
    /* 5 warm-up calls and 50 samples behind the hold (runtime.h): a launch
     * queues in microseconds, so the first 2 ms hold suffices (the fake
     * models the hold: events behind it pend until the host waits) */
    EXPECT(tir_rt_bench(ctx, dev, run_vadd, &j, NULL, &warm), TIR_OK);
    assert_int_equal(j.seen[0], 55);
    tir_rt_bench_opts o = {3, 30, 1, 2, true};
    EXPECT(tir_rt_bench(ctx, dev, run_vadd, &j, &o, &cold), TIR_OK);
    bool ok = warm.back_to_back && warm.hold_ms == 2.0 && cold.back_to_back &&
              warm.min_ms > 0 && warm.min_ms <= warm.median_ms &&
              warm.median_ms <= warm.max_ms && cold.min_ms > 0 && j.seen[1] == 33 / 2 &&
              cold.runs == 30;
    /* 3 arrays of 16 MiB move per call */
    row(ok, "bench vadd 4M", "warm median %.4f ms (min %.4f, %.0f GB/s); L2 flushed, 2 sets: "
        "median %.4f ms (%.0f GB/s)",
        warm.median_ms, warm.min_ms, 3.0 * bytes / (warm.median_ms * 1e6), cold.median_ms,
        3.0 * bytes / (cold.median_ms * 1e6));
    assert_true(ok);
    /* a GPU that is out of the hold before the host has queued: not back
     * to back, after holds up to the cap (the fake only) */
    if (strstr(tir_rt_device_props(dev)->name, "Fake")) {
        setenv("FAKE_CUDA_NO_HOLD", "1", 1);
        EXPECT(tir_rt_bench(ctx, dev, run_vadd, &j, &o, &cold), TIR_OK);
        unsetenv("FAKE_CUDA_NO_HOLD");
        assert_true(!cold.back_to_back && cold.hold_ms >= 2.0 && cold.median_ms > 0);
    }
    o.runs = 10;
    EXPECT(tir_rt_bench(ctx, dev, run_vadd, &j, &o, &cold), TIR_ERR_INVALID_ARG);
    tir_rt_module_destroy(m);
    /* the buffers are left for tir_rt_device_destroy to free */
}

/* A second handle on the same device, closed with things still alive. */
static void test_close_frees_leftovers(void **st) {
    (void)st;
    tir_rt_device *d2;
    EXPECT(tir_rt_device_create(ctx, 0, &d2), TIR_OK);
    const size_t big = (size_t)64 << 20;
    tir_rt_ptr p;
    EXPECT(tir_rt_alloc(ctx, d2, big, &p), TIR_OK);
    EXPECT(tir_rt_memset8(ctx, d2, p, 0, big), TIR_OK); /* really backed */
    tir_rt_module *m;
    EXPECT(tir_rt_module_create(ctx, d2, rt_test_ptx, &m), TIR_OK);
    tir_rt_event *e;
    EXPECT(tir_rt_event_create(ctx, d2, &e), TIR_OK);
    size_t free_before = 0, free_after = 0, total = 0;
    EXPECT(tir_rt_mem_info(ctx, d2, &free_before, &total), TIR_OK);
    tir_rt_device_destroy(d2);
    EXPECT(tir_rt_bind_thread(ctx, dev), TIR_OK);
    EXPECT(tir_rt_mem_info(ctx, dev, &free_after, &total), TIR_OK);
    /* Allow the driver half of it for its own bookkeeping. */
    bool ok = free_after >= free_before + big / 2;
    row(ok, "close frees leftovers",
        "%lld MiB more free after closing a handle holding 64 MiB, a module and an event",
        ((long long)free_after - (long long)free_before) >> 20);
    assert_true(ok);
}

int main(void) {
    ctx = tir_ctx_create();
    if (!ctx) return 1;
    tir_status s = tir_rt_device_create(ctx, 0, &dev);
    if (s == TIR_ERR_NO_DRIVER || s == TIR_ERR_NO_DEVICE) {
        printf("1..0 # SKIP no CUDA device (%s): %s\n", tir_status_name(s), tir_ctx_error(ctx));
        tir_ctx_destroy(ctx);
        return 0;
    }
    if (s != TIR_OK) {
        printf("Bail out! cannot open the GPU: %s\n", tir_ctx_error(ctx));
        tir_ctx_destroy(ctx);
        return 1;
    }
    int version = 0;
    s = tir_rt_blas_probe(ctx, &version);
    if (s == TIR_OK) s = tir_rt_blas_create(ctx, dev, &blas);
    if (s == TIR_OK)
        printf("# cuBLAS %d.%d.%d\n", version / 10000, version / 100 % 100, version % 100);
    else
        comment("cuBLAS not available, its tests are left out:", tir_ctx_error(ctx));

    struct CMUnitTest all[] = {
        cmocka_unit_test(test_props),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_vadd),
        cmocka_unit_test(test_dynamic_smem),
        cmocka_unit_test(test_program_dyn_smem),
        cmocka_unit_test(test_program_empty),
        cmocka_unit_test(test_program_set),
        cmocka_unit_test(test_program_set_no_memory),
        cmocka_unit_test(test_bad_ptx),
        cmocka_unit_test(test_jit_opt_level),
        cmocka_unit_test(test_sgemm),
        cmocka_unit_test(test_gemm_ex),
        cmocka_unit_test(test_gemm_errors),
        cmocka_unit_test(test_gemm_batched),
        cmocka_unit_test(test_gemm_batched_errors),
        cmocka_unit_test(test_epilogue),
        cmocka_unit_test(test_gemm_bias_relu),
        cmocka_unit_test(test_bench),
        cmocka_unit_test(test_close_frees_leftovers),
    };
    struct CMUnitTest tests[sizeof all / sizeof all[0]];
    size_t n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        bool needs_blas = all[i].test_func == test_sgemm || all[i].test_func == test_gemm_ex ||
                          all[i].test_func == test_gemm_errors ||
                          all[i].test_func == test_gemm_batched ||
                          all[i].test_func == test_gemm_batched_errors ||
                          all[i].test_func == test_gemm_bias_relu;
        if (needs_blas && !blas) continue;
        tests[n++] = all[i];
    }
    int failed = _cmocka_run_group_tests("runtime_gpu", tests, n, NULL, NULL);

    int npass = 0;
    for (int i = 0; i < nrows; i++) npass += rows[i].ok;
    printf("# ------------------------------------------------------------------------\n");
    printf("# runtime on %s: %d/%d checks passed\n", tir_rt_device_props(dev)->name, npass,
           nrows);
    for (int i = 0; i < nrows; i++)
        printf("# %-4s %-40s %s\n", rows[i].ok ? "ok" : "FAIL", rows[i].what, rows[i].detail);
    tir_rt_device_destroy(dev); /* also frees what failed tests left behind */
    tir_ctx_destroy(ctx);
    return failed;
}
