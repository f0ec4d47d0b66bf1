/* test_codegen_cache.c: the codegen cache (src/codegen/cg_cache.c).  A
 * kernel compiled again gets the same PTX, pipeline and module from
 * memory, and from disk in a later "process" (the memory cleared); what
 * is not the same kernel under the same options is a miss (another
 * kernel, another option, LLVM IR asked for, no_cache); a corrupt, short,
 * foreign or other-format disk entry is a miss and is replaced; a
 * directory that cannot be written costs nothing but the cache; the
 * memory limit evicts the oldest entry; threads compiling the same
 * kernels with one disk directory all get the same PTX and leave no
 * temporary file.  Compile only (no GPU).
 */
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hgemm.h"
#include "minitir/codegen.h"
#include "minitir/lower.h"
#include "seed.h"

#define OK(ctx, call)                                                                     \
    do {                                                                                  \
        tir_status st_ = (call);                                                          \
        if (st_ != TIR_OK) fail_msg("%s: %s", #call, tir_ctx_error(ctx));                 \
    } while (0)

/* The seed's Step `step` of the float32 matmul at M x N x K, lowered: its
 * first kernel (Step 8's default splits K at small sizes, then a second
 * kernel sums the slices). */
static const tir_prim_func *kernel_of(tir_ctx *ctx, int step, int64_t M, int64_t N, int64_t K) {
    const tir_prim_func *f = tir_def_matmul(ctx, M, N, K, TIR_F32);
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    OK(ctx, seed_schedule(s, step, NULL, NULL));
    tir_kernel_set ks;
    OK(ctx, tir_lower_kernels(ctx, tir_sched_func(s), NULL, &ks));
    tir_sched_destroy(s);
    return ks.kernels[0];
}

/* k under another name (the .entry's). */
static const tir_prim_func *renamed(tir_ctx *ctx, const tir_prim_func *k, const char *name) {
    return tir_prim_func_new(ctx, name, k->nparams, k->params, k->buffer_map, k->body, k->nattrs,
                             k->attrs);
}

/* The defaults, but through LLVM: the cache keeps LLVM's PTX (the direct
 * emitter, the default pipeline, needs no cache). */
static void cache_opts_init(tir_codegen_opts *o) {
    tir_codegen_opts_init(o);
    o->pipeline = TIR_CG_PIPELINE_SHORT;
}

static const tir_module *compile_with(tir_ctx *ctx, const tir_prim_func *k,
                                      const tir_codegen_opts *o) {
    const tir_module *m = NULL;
    OK(ctx, tir_codegen(ctx, k, o, &m));
    assert_non_null(m);
    return m;
}

static const tir_module *compile_dir(tir_ctx *ctx, const tir_prim_func *k, const char *dir) {
    tir_codegen_opts o;
    cache_opts_init(&o);
    o.cache_dir = dir;
    return compile_with(ctx, k, &o);
}

static const tir_module *compile(tir_ctx *ctx, const tir_prim_func *k) {
    return compile_dir(ctx, k, "");
}

/* Everything a module says besides its timings and where it came from. */
static void assert_same_module(const tir_module *a, const tir_module *b) {
    assert_int_equal(a->ptx_len, b->ptx_len);
    assert_memory_equal(a->ptx, b->ptx, a->ptx_len + 1);
    assert_string_equal(a->kernel_name, b->kernel_name);
    assert_string_equal(a->arch, b->arch);
    assert_int_equal(a->pipeline, b->pipeline);
    assert_int_equal(a->shared_bytes, b->shared_bytes);
    assert_int_equal(a->dyn_shared_bytes, b->dyn_shared_bytes);
    assert_int_equal(a->nparams, b->nparams);
    for (int i = 0; i < a->nparams; i++) {
        assert_string_equal(a->params[i].name, b->params[i].name);
        assert_int_equal(a->params[i].read_only, b->params[i].read_only);
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a->grid[i].value, b->grid[i].value);
        assert_int_equal(a->block[i].value, b->block[i].value);
    }
}

static tir_codegen_cache_stats stats(void) {
    tir_codegen_cache_stats s;
    tir_codegen_cache_get_stats(&s);
    return s;
}

/* A fresh directory for disk entries (removed by rm_dir). */
static char *temp_dir(void) {
    char *d = strdup("/tmp/minitir-cgcache-XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

/* The names in dir (not . and ..), counted; *ptx gets the last ".ptx"
 * entry's path (malloc) when asked. */
static int dir_entries(const char *dir, int *tmp, char **ptx) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    if (tmp) *tmp = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        if (tmp && strstr(e->d_name, ".tmp")) (*tmp)++;
        size_t l = strlen(e->d_name);
        if (ptx && l > 4 && !strcmp(e->d_name + l - 4, ".ptx")) {
            free(*ptx);
            *ptx = malloc(strlen(dir) + l + 2);
            sprintf(*ptx, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return n;
}

static void rm_dir(char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    if (d) closedir(d);
    rmdir(dir);
    free(dir);
}

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void write_file(const char *path, const char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* Step 9 (tensor cores) at M x N x K with inputs of type in; wgmma:
 * tir_tc_config_wgmma's tiles (TF32 through wgmma on sm_90). */
static const tir_prim_func *tc_kernel_of(tir_ctx *ctx, tir_dtype in, bool wgmma, int64_t M,
                                         int64_t N, int64_t K) {
    const tir_prim_func *f = tir_def_matmul_mixed(ctx, M, N, K, in, TIR_F32);
    tir_schedule *s;
    OK(ctx, tir_sched_create(ctx, f, &s));
    hgemm_config c = wgmma ? tir_tc_config_wgmma() : hgemm_config_for(in, M, N, K, 132);
    OK(ctx, hgemm_schedule(s, &c, NULL, NULL));
    const tir_prim_func *kernel;
    OK(ctx, tir_lower(ctx, tir_sched_func(s), NULL, &kernel));
    tir_sched_destroy(s);
    return kernel;
}

/* ------------------------------------------------------------- the premise */

/* The cache keys a kernel by its text, so the text must fix the PTX.  A
 * kernel read back from text has one object per definition (lowering
 * reuses some: a loop variable for sibling loops, a local buffer for a
 * loop and its peeled tail; the printer names objects apart, and the
 * GPU-path fuzzer checks that such kernels read back simulate alike);
 * for those, text read back again must print the same and compile to
 * the same PTX byte for byte. */
static void test_text_fixes_ptx(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *ks[12];
    int n = 0;
    for (int step = 1; step <= 8; step++)
        ks[n++] = kernel_of(ctx, step, step % 2 ? 128 : 100, step % 2 ? 128 : 72, 40 + step * 8);
    ks[n++] = tc_kernel_of(ctx, TIR_BF16, false, 256, 256, 128);
    ks[n++] = tc_kernel_of(ctx, TIR_F16, false, 200, 136, 96);
    ks[n++] = tc_kernel_of(ctx, TIR_F32, false, 256, 256, 64);
    ks[n++] = tc_kernel_of(ctx, TIR_F32, true, 256, 256, 64);
    tir_codegen_opts o;
    cache_opts_init(&o);
    o.no_cache = true;
    for (int i = 0; i < n; i++) {
        const char *t = tir_print(ctx, ks[i]);
        const tir_prim_func *back, *again;
        OK(ctx, tir_parse_func(ctx, t, strlen(t), &back));
        const char *tb = tir_print(ctx, back);
        OK(ctx, tir_parse_func(ctx, tb, strlen(tb), &again));
        assert_string_equal(tir_print(ctx, again), tb);
        const tir_module *a = compile_with(ctx, back, &o), *b = compile_with(ctx, again, &o);
        if (a->ptx_len != b->ptx_len || memcmp(a->ptx, b->ptx, a->ptx_len))
            fail_msg("kernel %d: read back from the same text, it compiles to other PTX:\n%s", i,
                     tb);
    }
    assert_string_equal(compile_with(ctx, ks[n - 1], &o)->arch, "sm_90a"); /* wgmma */
    tir_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------ memory */

static void test_memory_hit(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_codegen_cache_clear();
    const tir_prim_func *k = kernel_of(ctx, 8, 256, 256, 256);
    tir_codegen_cache_stats s0 = stats();
    const tir_module *a = compile(ctx, k);
    assert_int_equal(a->cache_hit, TIR_CG_CACHE_MISS);
    assert_true(a->opt_ms > 0 && a->ptx_ms > 0);
    const tir_module *b = compile(ctx, k);
    assert_int_equal(b->cache_hit, TIR_CG_CACHE_MEMORY);
    assert_same_module(a, b);
    assert_true(b->opt_ms == 0 && b->ptx_ms == 0 && b->build_ms == 0);
    assert_true(b->ptx != a->ptx); /* a copy in the caller's ctx */
    tir_codegen_cache_stats s1 = stats();
    assert_int_equal(s1.misses - s0.misses, 1);
    assert_int_equal(s1.memory_hits - s0.memory_hits, 1);
    assert_int_equal(s1.stores - s0.stores, 1);
    assert_int_equal(s1.entries, 1);
    assert_true(s1.bytes > a->ptx_len);
    /* an equal kernel built again (other nodes, same text) hits too */
    const tir_module *c = compile(ctx, kernel_of(ctx, 8, 256, 256, 256));
    assert_int_equal(c->cache_hit, TIR_CG_CACHE_MEMORY);
    assert_same_module(a, c);
    /* and in another ctx */
    tir_ctx *ctx2 = tir_ctx_create();
    const tir_module *d = compile(ctx2, kernel_of(ctx2, 8, 256, 256, 256));
    assert_int_equal(d->cache_hit, TIR_CG_CACHE_MEMORY);
    assert_same_module(a, d);
    tir_ctx_destroy(ctx2);
    tir_ctx_destroy(ctx);
}

static void test_no_cache(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_codegen_cache_clear();
    const tir_prim_func *k = kernel_of(ctx, 3, 64, 64, 64);
    tir_codegen_opts o;
    cache_opts_init(&o);
    o.no_cache = true;
    tir_codegen_cache_stats s0 = stats();
    const tir_module *a = compile_with(ctx, k, &o);
    const tir_module *b = compile_with(ctx, k, &o);
    assert_int_equal(a->cache_hit, TIR_CG_CACHE_MISS);
    assert_int_equal(b->cache_hit, TIR_CG_CACHE_MISS);
    assert_same_module(a, b);
    tir_codegen_cache_stats s1 = stats();
    assert_int_equal(s1.stores, s0.stores);
    assert_int_equal(s1.misses, s0.misses); /* not even looked up */
    assert_int_equal(s1.entries, 0);
    /* the cached compile of it gives the same module */
    const tir_module *c = compile(ctx, k);
    assert_same_module(a, c);
    tir_ctx_destroy(ctx);
}

/* Each option that reaches LLVM is in the key: compiled once with it
 * (a miss) and once more (a hit), and the first differs from the
 * default's entry where LLVM's output does. */
static void test_options_in_key(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_codegen_cache_clear();
    const tir_prim_func *k = kernel_of(ctx, 8, 256, 256, 256);
    const tir_module *base = compile(ctx, k);
    assert_int_equal(base->cache_hit, TIR_CG_CACHE_MISS);
    for (int v = 0; v < 8; v++) {
        tir_codegen_opts o;
        cache_opts_init(&o);
        o.cache_dir = "";
        bool differs = true; /* LLVM's output differs from base's */
        switch (v) {
        case 0: o.fma_contract = false; break;
        case 1: o.arch = "sm_80"; break;
        case 2: o.features = "+ptx80"; break;
        case 3: o.pipeline = TIR_CG_PIPELINE_FAST; differs = false; break;
        case 4: o.opt_level = 2; differs = false; break;
        case 5: o.dynamic_shared = true; break;
        case 6: o.ssa_locals = false; differs = false; break;
        case 7: o.select_zero_fill = true; differs = false; break;
        }
        const tir_module *a = compile_with(ctx, k, &o), *b = compile_with(ctx, k, &o);
        assert_int_equal(a->cache_hit, TIR_CG_CACHE_MISS);
        assert_int_equal(b->cache_hit, TIR_CG_CACHE_MEMORY);
        assert_same_module(a, b);
        if (differs) assert_true(a->ptx_len != base->ptx_len || memcmp(a->ptx, base->ptx, a->ptx_len));
    }
    /* the target's features spelt out are the default's: the same entry */
    tir_codegen_opts o;
    cache_opts_init(&o);
    o.features = "+ptx78";
    assert_int_equal(compile_with(ctx, k, &o)->cache_hit, TIR_CG_CACHE_MEMORY);
    tir_ctx_destroy(ctx);
}

/* Another kernel (another size, or only another name) is a miss. */
static void test_kernel_in_key(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_codegen_cache_clear();
    const tir_prim_func *k = kernel_of(ctx, 3, 64, 64, 64);
    const tir_module *a = compile(ctx, k);
    const tir_module *b = compile(ctx, kernel_of(ctx, 3, 64, 64, 128));
    assert_int_equal(b->cache_hit, TIR_CG_CACHE_MISS);
    assert_true(a->ptx_len != b->ptx_len || memcmp(a->ptx, b->ptx, a->ptx_len));
    const tir_module *c = compile(ctx, renamed(ctx, k, "matmul_b"));
    assert_int_equal(c->cache_hit, TIR_CG_CACHE_MISS);
    assert_string_equal(c->kernel_name, "matmul_b");
    assert_non_null(strstr(c->ptx, ".entry matmul_b"));
    assert_int_equal(compile(ctx, k)->cache_hit, TIR_CG_CACHE_MEMORY);
    tir_ctx_destroy(ctx);
}

/* What only LLVM can give (its IR) bypasses the cache. */
static void test_llvm_ir_bypasses(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_codegen_cache_clear();
    const tir_prim_func *k = kernel_of(ctx, 3, 64, 64, 64);
    const tir_module *a = compile(ctx, k);
    tir_codegen_opts o;
    cache_opts_init(&o);
    o.keep_llvm_ir = true;
    const tir_module *b = compile_with(ctx, k, &o);
    assert_int_equal(b->cache_hit, TIR_CG_CACHE_MISS);
    assert_non_null(b->llvm_ir);
    assert_same_module(a, b);
    tir_ctx_destroy(ctx);
}

static void test_limit(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    tir_codegen_cache_clear();
    const tir_prim_func *k1 = kernel_of(ctx, 3, 64, 64, 64), *k2 = kernel_of(ctx, 3, 64, 64, 128);
    tir_codegen_cache_set_limit(0);
    assert_int_equal(compile(ctx, k1)->cache_hit, TIR_CG_CACHE_MISS);
    assert_int_equal(compile(ctx, k1)->cache_hit, TIR_CG_CACHE_MISS);
    assert_int_equal(stats().entries, 0);
    /* room for one entry: the second evicts the first */
    tir_codegen_cache_set_limit((size_t)64 << 20);
    compile(ctx, k1);
    tir_codegen_cache_stats s = stats();
    assert_int_equal(s.entries, 1);
    tir_codegen_cache_set_limit(s.bytes + s.bytes / 2);
    assert_int_equal(stats().entries, 1);
    assert_int_equal(compile(ctx, k2)->cache_hit, TIR_CG_CACHE_MISS);
    assert_int_equal(stats().entries, 1);
    assert_int_equal(compile(ctx, k2)->cache_hit, TIR_CG_CACHE_MEMORY);
    assert_int_equal(compile(ctx, k1)->cache_hit, TIR_CG_CACHE_MISS);
    tir_codegen_cache_set_limit((size_t)64 << 20);
    assert_int_equal(stats().limit, (size_t)64 << 20);
    tir_ctx_destroy(ctx);
}

/* -------------------------------------------------------------------- disk */

/* A fresh directory holding one kernel's entry, for the tests that damage
 * or replace it: the kernel, its module as compiled (the reference) and
 * the entry's path (malloc; the directory and ctx are the test's to free). */
typedef struct one_entry {
    tir_ctx *ctx;
    char *dir, *path;
    const tir_prim_func *k;
    const tir_module *ref;
} one_entry;

static one_entry one_entry_make(void) {
    one_entry e = {tir_ctx_create(), temp_dir(), NULL, NULL, NULL};
    tir_codegen_cache_clear();
    e.k = kernel_of(e.ctx, 3, 64, 64, 64);
    e.ref = compile_dir(e.ctx, e.k, e.dir);
    dir_entries(e.dir, NULL, &e.path);
    assert_non_null(e.path);
    return e;
}


static void test_disk_roundtrip(void **state) {
    (void)state;
    assert_true(stats().disk_enabled); /* meson links the library with a build id */
    tir_ctx *ctx = tir_ctx_create();
    char *dir = temp_dir();
    tir_codegen_cache_clear();
    const tir_prim_func *k = kernel_of(ctx, 8, 256, 256, 256);
    const tir_module *a = compile_dir(ctx, k, dir);
    assert_int_equal(a->cache_hit, TIR_CG_CACHE_MISS);
    int tmp;
    assert_int_equal(dir_entries(dir, &tmp, NULL), 1);
    assert_int_equal(tmp, 0);
    tir_codegen_cache_clear(); /* a later process */
    const tir_module *b = compile_dir(ctx, k, dir);
    assert_int_equal(b->cache_hit, TIR_CG_CACHE_DISK);
    assert_same_module(a, b);
    assert_int_equal(compile_dir(ctx, k, dir)->cache_hit, TIR_CG_CACHE_MEMORY);
    /* memory only: the disk entry is not read */
    tir_codegen_cache_clear();
    assert_int_equal(compile(ctx, k)->cache_hit, TIR_CG_CACHE_MISS);
    /* a directory that does not exist yet is made */
    char sub[256];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    tir_codegen_cache_clear();
    assert_int_equal(compile_dir(ctx, k, sub)->cache_hit, TIR_CG_CACHE_MISS);
    assert_int_equal(dir_entries(sub, NULL, NULL), 1);
    tir_codegen_cache_clear();
    assert_int_equal(compile_dir(ctx, k, sub)->cache_hit, TIR_CG_CACHE_DISK);
    rm_dir(strdup(sub));
    rm_dir(dir);
    tir_ctx_destroy(ctx);
}

/* MINITIR_CACHE_DIR when the options name no directory; "" turns it off. */
static void test_env_dir(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    char *dir = temp_dir();
    const tir_prim_func *k = kernel_of(ctx, 3, 64, 64, 64);
    setenv("MINITIR_CACHE_DIR", dir, 1);
    tir_codegen_cache_clear();
    const tir_module *a = compile_dir(ctx, k, "");
    assert_int_equal(dir_entries(dir, NULL, NULL), 0);
    tir_codegen_cache_clear();
    a = compile_dir(ctx, k, NULL);
    assert_int_equal(a->cache_hit, TIR_CG_CACHE_MISS);
    assert_int_equal(dir_entries(dir, NULL, NULL), 1);
    tir_codegen_cache_clear();
    assert_int_equal(compile_dir(ctx, k, NULL)->cache_hit, TIR_CG_CACHE_DISK);
    unsetenv("MINITIR_CACHE_DIR");
    rm_dir(dir);
    tir_ctx_destroy(ctx);
}

/* Each way an entry can be damaged: a miss, the right PTX, and the entry
 * replaced by a good one. */
static void test_disk_corrupt(void **state) {
    (void)state;
    one_entry e = one_entry_make();
    tir_ctx *ctx = e.ctx;
    char *dir = e.dir, *path = e.path;
    const tir_prim_func *k = e.k;
    const tir_module *ref = e.ref;
    size_t n;
    char *good = read_file(path, &n);
    const char *nl = memchr(good, '\n', n);
    assert_non_null(nl);
    size_t head = (size_t)(nl - good) + 1;
    for (int v = 0; v < 9; v++) {
        char *b = malloc(n + 1);
        memcpy(b, good, n);
        size_t len = n;
        switch (v) {
        case 0: b[n - 10] ^= 1; break;                   /* a PTX byte */
        case 1: b[head + 40] ^= 1; break;                /* a key byte */
        case 2: len = n / 2; break;                      /* short */
        case 3: len = 0; break;                          /* empty */
        case 4: b[n] = '\n', len = n + 1; break;         /* trailing byte */
        case 5: b[head - 2] ^= 1; break;                 /* the checksum */
        case 6: b[22] = '9'; break;                      /* the format */
        case 7: memcpy(b, "garbage", 7); break;          /* the magic */
        case 8: len = head; break;                       /* the header alone */
        }
        write_file(path, b, len);
        free(b);
        tir_codegen_cache_clear();
        const tir_module *m = compile_dir(ctx, k, dir);
        assert_int_equal(m->cache_hit, TIR_CG_CACHE_MISS);
        assert_same_module(ref, m);
        size_t n2;
        char *again = read_file(path, &n2); /* replaced by a good entry */
        assert_int_equal(n2, n);
        assert_memory_equal(again, good, n);
        free(again);
        tir_codegen_cache_clear();
        assert_int_equal(compile_dir(ctx, k, dir)->cache_hit, TIR_CG_CACHE_DISK);
    }
    free(good);
    free(path);
    rm_dir(dir);
    tir_ctx_destroy(ctx);
}

/* Another kernel's entry under this kernel's file name (as a hash
 * collision would leave it; the two keys are as long and both entries
 * whole): a miss, and this kernel's own PTX. */
static void test_disk_foreign_entry(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    char *da = temp_dir(), *db = temp_dir();
    tir_codegen_cache_clear();
    const tir_prim_func *k = kernel_of(ctx, 3, 64, 64, 64);
    const tir_prim_func *ka = renamed(ctx, k, "matmul_a"), *kb = renamed(ctx, k, "matmul_b");
    const tir_module *a = compile_dir(ctx, ka, da), *b = compile_dir(ctx, kb, db);
    char *pa = NULL, *pb = NULL;
    dir_entries(da, NULL, &pa);
    dir_entries(db, NULL, &pb);
    size_t n;
    char *ea = read_file(pa, &n);
    write_file(pb, ea, n);
    free(ea);
    tir_codegen_cache_clear();
    const tir_module *m = compile_dir(ctx, kb, db);
    assert_int_equal(m->cache_hit, TIR_CG_CACHE_MISS);
    assert_same_module(b, m);
    assert_true(a->ptx_len != m->ptx_len || memcmp(a->ptx, m->ptx, a->ptx_len));
    free(pa);
    free(pb);
    rm_dir(da);
    rm_dir(db);
    tir_ctx_destroy(ctx);
}

/* A directory that cannot be made or written: compiles as without one. */
static void test_disk_unwritable(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    char *dir = temp_dir();
    char file[256], under[300];
    snprintf(file, sizeof file, "%s/a-file", dir);
    write_file(file, "x", 1);
    snprintf(under, sizeof under, "%s/a-file/cache", dir); /* under a regular file */
    const tir_prim_func *k = kernel_of(ctx, 3, 64, 64, 64);
    tir_codegen_cache_clear();
    const tir_module *ref = compile_dir(ctx, k, "");
    const char *bad[] = {under, file, "/proc/minitir-no-such/dir"};
    for (int i = 0; i < 3; i++) {
        tir_codegen_cache_clear();
        const tir_module *m = compile_dir(ctx, k, bad[i]);
        assert_int_equal(m->cache_hit, TIR_CG_CACHE_MISS);
        assert_same_module(ref, m);
        assert_int_equal(compile_dir(ctx, k, bad[i])->cache_hit, TIR_CG_CACHE_MEMORY);
    }
    assert_int_equal(dir_entries(dir, NULL, NULL), 1); /* a-file alone */
    rm_dir(dir);
    tir_ctx_destroy(ctx);
}

/* The entry's path taken by something that is not an entry file: a
 * directory, a FIFO (opening one for reading blocks until a writer
 * comes: the look-up must not wait), a link to a device.  Each is a miss
 * that compiles as without the cache, and nothing is stored over it. */
static void test_disk_special_files(void **state) {
    (void)state;
    one_entry e = one_entry_make();
    tir_ctx *ctx = e.ctx;
    char *dir = e.dir, *path = e.path;
    const tir_prim_func *k = e.k;
    const tir_module *ref = e.ref;
    for (int v = 0; v < 3; v++) {
        assert_int_equal(remove(path), 0);
        switch (v) {
        case 0: assert_int_equal(mkdir(path, 0700), 0); break;
        case 1: assert_int_equal(mkfifo(path, 0600), 0); break;
        case 2: assert_int_equal(symlink("/dev/zero", path), 0); break;
        }
        tir_codegen_cache_clear();
        alarm(60); /* a blocked look-up fails the test instead of hanging it */
        const tir_module *m = compile_dir(ctx, k, dir);
        alarm(0);
        assert_int_equal(m->cache_hit, TIR_CG_CACHE_MISS);
        assert_same_module(ref, m);
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        int tmp;
        assert_int_equal(dir_entries(dir, &tmp, NULL), 1);
        assert_int_equal(tmp, 0);
    }
    free(path);
    rm_dir(dir);
    tir_ctx_destroy(ctx);
}

/* This process's resident memory in bytes (/proc/self/statm). */
static size_t resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    assert_non_null(f);
    unsigned long size = 0, res = 0;
    assert_int_equal(fscanf(f, "%lu %lu", &size, &res), 2);
    fclose(f);
    return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

/* A header whose PTX length is far past the file's end (as corruption or
 * a hostile file could write it) is a miss that costs no memory for the
 * length it claims: the caller's ctx keeps what is allocated in it, so
 * each look-up would keep that much. */
static void test_disk_huge_length(void **state) {
    (void)state;
    one_entry e = one_entry_make();
    tir_ctx *ctx = e.ctx;
    char *dir = e.dir, *path = e.path;
    const tir_prim_func *k = e.k;
    const tir_module *ref = e.ref;
    size_t n;
    char *good = read_file(path, &n);
    const char *nl = memchr(good, '\n', n);
    assert_non_null(nl);
    /* "minitir codegen cache <format> <key length> <PTX length> ..." */
    char magic[32];
    int fmt, pipe;
    unsigned long long kn, pn, sum;
    assert_int_equal(sscanf(good, "%21c %d %llu %llu %d %llx", magic, &fmt, &kn, &pn, &pipe, &sum),
                     6);
    char head[160];
    int hn = snprintf(head, sizeof head, "minitir codegen cache %d %llu %llu %d %016llx\n", fmt, kn,
                      (1ull << 28) - 1, pipe, sum);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(head, 1, (size_t)hn, f), (size_t)hn);
    size_t rest = n - (size_t)(nl + 1 - good); /* the key and the PTX */
    assert_int_equal(fwrite(nl + 1, 1, rest, f), rest);
    fclose(f);
    free(good);
    size_t before = resident_bytes();
    tir_codegen_cache_clear();
    const tir_module *m = compile_dir(ctx, k, dir);
    assert_int_equal(m->cache_hit, TIR_CG_CACHE_MISS);
    assert_same_module(ref, m);
    size_t after = resident_bytes();
    if (after > before + ((size_t)128 << 20))
        fail_msg("a look-up of a corrupt entry grew the process by %zu MiB",
                 (after - before) >> 20);
    free(path);
    rm_dir(dir);
    tir_ctx_destroy(ctx);
}

/* Names that the writer could choose for its temporary file, taken by
 * links to another file (as anyone who can write to a shared cache
 * directory could plant them): storing the entry never writes through
 * one. */
static void test_disk_tmp_symlink(void **state) {
    (void)state;
    one_entry e = one_entry_make();
    tir_ctx *ctx = e.ctx;
    char *dir = e.dir, *path = e.path;
    const tir_prim_func *k = e.k;
    const tir_module *ref = e.ref;
    assert_int_equal(remove(path), 0);
    char victim[300];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    write_file(victim, "precious", 8);
    /* <hash>.tmp<pid>.<n>: this process's next names */
    size_t pl = strlen(path) - 4;
    for (int i = 0; i < 512; i++) {
        char link[512];
        snprintf(link, sizeof link, "%.*s.tmp%ld.%d", (int)pl, path, (long)getpid(), i);
        assert_int_equal(symlink(victim, link), 0);
    }
    tir_codegen_cache_clear();
    const tir_module *m = compile_dir(ctx, k, dir);
    assert_int_equal(m->cache_hit, TIR_CG_CACHE_MISS);
    assert_same_module(ref, m);
    size_t vn;
    char *v = read_file(victim, &vn);
    assert_int_equal(vn, 8);
    assert_memory_equal(v, "precious", 8);
    free(v);
    free(path);
    rm_dir(dir);
    tir_ctx_destroy(ctx);
}

/* An entry file's modification time, seconds ago. */
static void age(const char *path, int seconds) {
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* The disk cache's size: tir_codegen_cache_trim removes the least recently
 * used entries past the limit (a hit counts as a use), temporary files
 * older than an hour, and nothing else. */
static void test_disk_trim(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    char *dir = temp_dir();
    setenv("MINITIR_CACHE_MAX_MB", "1024", 1);
    const tir_prim_func *k[3] = {kernel_of(ctx, 3, 64, 64, 64), kernel_of(ctx, 3, 64, 64, 96),
                                 kernel_of(ctx, 3, 64, 64, 128)};
    char *path[3] = {NULL, NULL, NULL};
    size_t size[3];
    for (int i = 0; i < 3; i++) {
        tir_codegen_cache_clear();
        compile_dir(ctx, k[i], dir);
        char *p = NULL;
        assert_int_equal(dir_entries(dir, NULL, NULL), i + 1);
        /* the new entry is the one not seen yet */
        DIR *d = opendir(dir);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char full[512];
            snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
            bool seen = false;
            for (int j = 0; j < i; j++) seen |= !strcmp(path[j], full);
            if (!seen) p = strdup(full);
        }
        closedir(d);
        path[i] = p;
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        size[i] = (size_t)st.st_size;
        age(p, 300 - 100 * i); /* k[0] oldest */
    }
    /* a hit makes k[0] the most recent */
    tir_codegen_cache_clear();
    assert_int_equal(compile_dir(ctx, k[0], dir)->cache_hit, TIR_CG_CACHE_DISK);
    /* foreign files and fresh and stale temporary files */
    char other[512], fresh[512], stale[512];
    snprintf(other, sizeof other, "%s/notes.txt", dir);
    snprintf(fresh, sizeof fresh, "%s/0123456789abcdef.tmp1.1", dir);
    snprintf(stale, sizeof stale, "%s/0123456789abcdef.tmp2.1", dir);
    write_file(other, "x", 1);
    write_file(fresh, "x", 1);
    write_file(stale, "x", 1);
    age(stale, 7200);
    age(other, 7200);
    /* room for two entries: k[1] (least recently used) goes */
    assert_int_equal(tir_codegen_cache_trim(dir, size[0] + size[2] + 1), 2); /* k[1], stale */
    struct stat st;
    assert_int_equal(stat(path[0], &st), 0);
    assert_int_not_equal(stat(path[1], &st), 0);
    assert_int_equal(stat(path[2], &st), 0);
    assert_int_equal(stat(fresh, &st), 0);
    assert_int_not_equal(stat(stale, &st), 0);
    assert_int_equal(stat(other, &st), 0);
    /* under the limit: nothing goes */
    assert_int_equal(tir_codegen_cache_trim(dir, (size_t)1 << 30), 0);
    /* limit 0: every entry goes, the others stay */
    assert_int_equal(tir_codegen_cache_trim(dir, 0), 2);
    assert_int_equal(dir_entries(dir, NULL, NULL), 2); /* notes.txt and the fresh tmp */
    /* eight entries of 100 bytes, ages in no particular order: room for
     * four keeps the four most recent */
    static const int ages[8] = {50, 700, 20, 400, 90, 800, 10, 300};
    char names[8][512];
    char body[100];
    memset(body, 'x', sizeof body);
    for (int i = 0; i < 8; i++) {
        snprintf(names[i], sizeof names[i], "%s/%016x.ptx", dir, 0xabc00 + i * 7919);
        write_file(names[i], body, sizeof body);
        age(names[i], ages[i]);
    }
    assert_int_equal(tir_codegen_cache_trim(dir, 400), 4);
    for (int i = 0; i < 8; i++)
        assert_int_equal(stat(names[i], &st) == 0, ages[i] <= 90);
    assert_int_equal(tir_codegen_cache_trim(dir, 0), 4);
    assert_int_equal(tir_codegen_cache_trim("/proc/minitir-no-such-dir", 0), -1);
    assert_int_equal(tir_codegen_cache_trim(NULL, 0), -1);
    for (int i = 0; i < 3; i++) free(path[i]);
    unsetenv("MINITIR_CACHE_MAX_MB");
    rm_dir(dir);
    tir_ctx_destroy(ctx);
}

/* ----------------------------------------------------------------- threads */

enum { NTHREADS = 4, NROUNDS = 6 };

typedef struct job {
    const char *dir;
    const char *ref[2];
    size_t ref_len[2];
    int bad;
} job;

static void *worker(void *arg) {
    job *j = arg;
    tir_ctx *ctx = tir_ctx_create();
    const tir_prim_func *k[2] = {kernel_of(ctx, 3, 64, 64, 64), kernel_of(ctx, 3, 64, 64, 128)};
    for (int r = 0; r < NROUNDS; r++) {
        if (r % 3 == 2) tir_codegen_cache_clear();
        const tir_module *m;
        if (tir_codegen(ctx, k[r % 2], &(tir_codegen_opts){0}, &m) != TIR_OK) {
            j->bad++;
            continue;
        }
        (void)m;
        tir_codegen_opts o;
        cache_opts_init(&o);
        o.cache_dir = j->dir;
        if (tir_codegen(ctx, k[r % 2], &o, &m) != TIR_OK || m->ptx_len != j->ref_len[r % 2] ||
            memcmp(m->ptx, j->ref[r % 2], m->ptx_len + 1))
            j->bad++;
    }
    tir_ctx_destroy(ctx);
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    tir_ctx *ctx = tir_ctx_create();
    char *dir = temp_dir();
    tir_codegen_cache_clear();
    tir_codegen_opts o;
    cache_opts_init(&o);
    o.no_cache = true;
    const tir_module *r0 = compile_with(ctx, kernel_of(ctx, 3, 64, 64, 64), &o);
    const tir_module *r1 = compile_with(ctx, kernel_of(ctx, 3, 64, 64, 128), &o);
    job jobs[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        jobs[i] = (job){dir, {r0->ptx, r1->ptx}, {r0->ptx_len, r1->ptx_len}, 0};
        assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].bad, 0);
    }
    int tmp;
    assert_int_equal(dir_entries(dir, &tmp, NULL), 2);
    assert_int_equal(tmp, 0);
    rm_dir(dir);
    tir_ctx_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_fixes_ptx),
        cmocka_unit_test(test_memory_hit),
        cmocka_unit_test(test_no_cache),
        cmocka_unit_test(test_options_in_key),
        cmocka_unit_test(test_kernel_in_key),
        cmocka_unit_test(test_llvm_ir_bypasses),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_disk_roundtrip),
        cmocka_unit_test(test_env_dir),
        cmocka_unit_test(test_disk_corrupt),
        cmocka_unit_test(test_disk_foreign_entry),
        cmocka_unit_test(test_disk_unwritable),
        cmocka_unit_test(test_disk_special_files),
        cmocka_unit_test(test_disk_huge_length),
        cmocka_unit_test(test_disk_tmp_symlink),
        cmocka_unit_test(test_disk_trim),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
