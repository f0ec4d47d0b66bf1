/* cg_cache.c: the codegen cache, so that a kernel compiled before costs a
 * look-up instead of LLVM's ~25-30 ms (Step 8's tuned kernel).
 *
 * A program that builds its kernels at run time (as a Triton user's does)
 * compiles the same kernel in every process, and often several times in
 * one.  LLVM's part of tir_codegen, which is nearly all of a compile, is a
 * pure function of the lowered kernel and the options, so its result (the
 * PTX and the pipeline that ran) is kept: in this process's memory, and
 * on disk in a directory (tir_codegen_opts.cache_dir, else the environment
 * MINITIR_CACHE_DIR).  The driver keeps its JIT's cubins the same way
 * (CUDA's compute cache), so a program's second run loads its kernels in
 * a few ms.
 *
 * The key is the text of everything the PTX depends on: the library's
 * build id (LLVM is linked into the library, so its version is in it too,
 * and a rebuilt library never reads an older one's entries), the options,
 * and the kernel as printed (docs/text-format.md).  Two kernels with one
 * text mean the same: the printer is lossless, and it names distinct
 * objects apart, so a variable or local buffer that lowering reuses
 * (sibling loops, a loop and its peeled tail) prints differently from two
 * of one name.  Their PTX can differ only in names (a shared array's, or
 * LLVM's register numbering); tests/test_codegen_cache.c and the GPU-path
 * fuzzer (kernels read back from their text simulate alike) check the
 * premise.  An entry holds its whole key and
 * is used only when the key is equal byte for byte; the hash only names
 * the entry.  A disk entry also carries a checksum: a file that is short,
 * corrupt, another key's or another format's is a miss, and the compile
 * that follows replaces it.  Entries are written to a temporary file and
 * renamed into place, so readers never see half an entry and processes
 * writing one entry at once leave one whole entry.  Disk errors are never
 * the compile's errors: the cache only ever saves time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cg_internal.h"

enum { CACHE_FORMAT = 2 }; /* 2: the checksum is ir_hash_more's */
static const char magic[] = "minitir codegen cache";
/* an entry's key or PTX past this is a corrupt file, not a kernel */
enum { CACHE_MAX_PART = 1 << 28 };

/* ------------------------------------------------------------ build id */

typedef struct bid_search {
    const void *addr;
    char hex[2 * 64 + 1];
} bid_search;

/* The GNU build id of the loaded object that holds s->addr, from its
 * PT_NOTE segments. */
static int bid_phdr(struct dl_phdr_info *info, size_t size, void *user) {
    (void)size;
    bid_search *s = user;
    uintptr_t a = (uintptr_t)s->addr;
    bool here = false;
    for (int i = 0; i < info->dlpi_phnum && !here; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr;
        here = p->p_type == PT_LOAD && a >= lo && a < lo + p->p_memsz;
    }
    if (!here) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_NOTE) continue;
        const unsigned char *n = (const unsigned char *)(info->dlpi_addr + p->p_vaddr);
        const unsigned char *end = n + p->p_memsz;
        while (n + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)n;
            size_t name = (h->n_namesz + 3u) & ~3u, desc = (h->n_descsz + 3u) & ~3u;
            const unsigned char *d = n + sizeof *h + name;
            if (d + desc > end) break;
            if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 &&
                memcmp(n + sizeof *h, "GNU", 4) == 0 && h->n_descsz > 0 && h->n_descsz <= 64) {
                for (size_t k = 0; k < h->n_descsz; k++)
                    snprintf(s->hex + 2 * k, 3, "%02x", d[k]);
                return 1;
            }
            n = d + desc;
        }
    }
    return 1; /* our object, without a build id */
}

static bid_search build_id;
static pthread_once_t build_id_once = PTHREAD_ONCE_INIT;

/* The object is found by the address of a variable of this file, not of
 * a public function: in a non-PIE program that takes tir_codegen's
 * address, the library's own references to it resolve to the program's
 * PLT stub (the function's canonical address), and the program's build
 * id would key the entries: a rebuilt library would read the old one's. */
static void build_id_find(void) {
    build_id.addr = (const void *)&build_id;
    dl_iterate_phdr(bid_phdr, &build_id);
}

/* The library's build id in hex, "" when it has none (the disk cache is
 * then off: nothing would tell a stale entry from a current one). */
static const char *cg_build_id(void) {
    pthread_once(&build_id_once, build_id_find);
    return build_id.hex;
}

/* ------------------------------------------------------------------ key */

/* The options that reach LLVM (o after tir_codegen's adjustments: arch,
 * and features as cg_features resolves them): every field of
 * tir_codegen_opts but those that bypass the cache (keep_llvm_ir,
 * dump_llvm, no_cache) and cache_dir, which says where, not what. */
static int opts_text(char *buf, size_t n, const tir_codegen_opts *o) {
    const char *f = cg_features(o);
    return snprintf(buf, n,
                    "arch %s\nfeatures %s\nfma_contract %d\nopt_level %d\npipeline %d\n"
                    "dynamic_shared %d\nssa_locals %d\nselect_zero_fill %d\n",
                    o->arch, f ? f : "-", o->fma_contract, o->opt_level, (int)o->pipeline,
                    o->dynamic_shared, o->ssa_locals, o->select_zero_fill);
}

bool cg_cache_key(tir_ctx *ctx, const tir_prim_func *kernel, const tir_codegen_opts *o,
                  cg_cache_key_t *key) {
    memset(key, 0, sizeof *key);
    if (o->no_cache || o->keep_llvm_ir || o->dump_llvm || ir_dump_wanted("llvm", false))
        return false; /* what those ask for comes from LLVM itself */
    const char *text = tir_print(ctx, kernel);
    if (!text) {
        tir_ctx_clear_error(ctx);
        return false;
    }
    char head[1024];
    int hn = snprintf(head, sizeof head, "%s %d\nlibrary %s\nllvm %s\n", magic, CACHE_FORMAT,
                      cg_build_id(), tir_llvm_version());
    if (hn < 0 || (size_t)hn >= sizeof head) return false;
    int on = opts_text(head + hn, sizeof head - (size_t)hn, o);
    if (on < 0 || (size_t)(hn + on) >= sizeof head) return false; /* long features: no cache */
    size_t tn = strlen(text), len = (size_t)(hn + on) + tn;
    char *k = tir_ctx_alloc(ctx, len + 1);
    memcpy(k, head, (size_t)(hn + on));
    memcpy(k + hn + on, text, tn + 1);
    key->text = k;
    key->len = len;
    key->hash = ir_str_hash(k, len);
    /* copied: the store comes after LLVM's run, by when another thread's
     * setenv may have freed getenv's string */
    const char *dir = o->cache_dir ? o->cache_dir : getenv("MINITIR_CACHE_DIR");
    key->dir = dir && *dir && *cg_build_id() ? tir_ctx_sprintf(ctx, "%s", dir) : NULL;
    return true;
}

/* --------------------------------------------------------------- memory */

typedef struct entry {
    struct entry *next; /* in insertion order, oldest first */
    uint64_t hash;
    char *key;
    size_t key_len;
    char *ptx;
    size_t ptx_len;
    tir_cg_pipeline pipeline;
} entry;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static entry *mem_head, *mem_tail;
static size_t mem_bytes;
/* 64 MiB: ~400 tuned kernels of ~150 KiB of PTX each */
static size_t mem_limit = (size_t)64 << 20;
static atomic_long stat_hits[3], stat_misses, stat_stores;

/* The memory cache: a list in insertion order, so that trimming drops
 * the oldest first (FIFO: cheaper than LRU, and a tuner's kernels are
 * mostly compiled once), searched by hash and then the whole key.  A few
 * hundred entries at most, so a list is enough. */
static void entry_free(entry *e) {
    free(e->key);
    free(e->ptx);
    free(e);
}

static size_t entry_bytes(const entry *e) {
    return e->key_len + e->ptx_len + sizeof *e;
}

/* Drops the oldest entries until the cache holds at most limit bytes
 * (mem_lock held). */
static void mem_trim(size_t limit) {
    while (mem_head && mem_bytes > limit) {
        entry *e = mem_head;
        mem_head = e->next;
        if (!mem_head) mem_tail = NULL;
        mem_bytes -= entry_bytes(e);
        entry_free(e);
    }
}

/* Copies key's PTX into ctx's arena: the entry may be evicted once the
 * lock is released, and a module's strings live in its ctx. */
static bool mem_find(const cg_cache_key_t *key, tir_ctx *ctx, cg_cache_value *v) {
    bool found = false;
    pthread_mutex_lock(&mem_lock);
    for (entry *e = mem_head; e && !found; e = e->next) {
        if (e->hash != key->hash || e->key_len != key->len || memcmp(e->key, key->text, key->len))
            continue;
        char *p = tir_ctx_alloc(ctx, e->ptx_len + 1);
        memcpy(p, e->ptx, e->ptx_len + 1);
        *v = (cg_cache_value){p, e->ptx_len, e->pipeline};
        found = true;
    }
    pthread_mutex_unlock(&mem_lock);
    return found;
}

/* Adds a heap copy of key and v, unless another thread added the key
 * first or the entry alone is past the limit.  Allocation failures only
 * cost the entry. */
static void mem_put(const cg_cache_key_t *key, const cg_cache_value *v) {
    entry *e = calloc(1, sizeof *e);
    char *k = malloc(key->len + 1), *p = malloc(v->ptx_len + 1);
    if (!e || !k || !p) {
        free(e), free(k), free(p);
        return;
    }
    memcpy(k, key->text, key->len + 1);
    memcpy(p, v->ptx, v->ptx_len);
    p[v->ptx_len] = 0;
    *e = (entry){NULL, key->hash, k, key->len, p, v->ptx_len, v->pipeline};
    pthread_mutex_lock(&mem_lock);
    bool dup = false; /* another thread stored it first */
    for (entry *x = mem_head; x && !dup; x = x->next)
        dup = x->hash == e->hash && x->key_len == e->key_len && !memcmp(x->key, k, e->key_len);
    if (!dup && entry_bytes(e) <= mem_limit) {
        if (mem_tail)
            mem_tail->next = e;
        else
            mem_head = e;
        mem_tail = e;
        mem_bytes += entry_bytes(e);
        mem_trim(mem_limit);
        e = NULL;
    }
    pthread_mutex_unlock(&mem_lock);
    if (e) entry_free(e);
}

/* ----------------------------------------------------------------- disk */

/* dir/<hash><suffix> (malloc; NULL when out of memory).  The suffixes
 * are ".ptx" and ".tmp<pid>.<n>", well under the 64 bytes added. */
static char *disk_path(const cg_cache_key_t *key, const char *suffix) {
    size_t n = strlen(key->dir) + 64;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%016llx%s", key->dir, (unsigned long long)key->hash, suffix);
    return p;
}

/* The checksum a disk entry carries: of the key, the PTX and the
 * pipeline, so that a damaged byte anywhere after the header is a miss. */
static uint64_t entry_sum(const char *k, size_t kn, const char *p, size_t pn, int pipeline) {
    uint64_t h = ir_str_hash(k, kn);
    h = ir_hash_more(h, p, pn);
    return ir_hash_more(h, &pipeline, sizeof pipeline);
}

/* Opens the entry file for reading: a regular file only.  O_NONBLOCK
 * because a FIFO in its place would block open() until a writer came;
 * anything but a regular file (a FIFO, a directory, a device a link
 * points to) is refused before a byte is read. */
static FILE *disk_open(const char *path, struct stat *st) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    FILE *f = NULL;
    if (fstat(fd, st) == 0 && S_ISREG(st->st_mode)) f = fdopen(fd, "rb");
    if (!f) close(fd);
    return f;
}

/* Reads the entry of key from disk into ctx's arena: false for a missing,
 * short, corrupt or foreign file.  The lengths in the header must add up
 * to the file's size before anything is allocated, and the key and PTX
 * are read into the heap and reach the arena (which keeps all it is
 * given) only once the whole entry checks. */
static bool disk_find(const cg_cache_key_t *key, tir_ctx *ctx, cg_cache_value *v) {
    char *path = disk_path(key, ".ptx");
    struct stat st;
    FILE *f = path ? disk_open(path, &st) : NULL;
    free(path);
    if (!f) return false;
    char line[160];
    int fmt, pipe;
    unsigned long long kn, pn, sum;
    char *buf = NULL;
    bool ok = fgets(line, sizeof line, f) && strchr(line, '\n') &&
              sscanf(line, "minitir codegen cache %d %llu %llu %d %llx", &fmt, &kn, &pn, &pipe,
                     &sum) == 5 &&
              fmt == CACHE_FORMAT && kn == key->len && pn > 0 && pn < CACHE_MAX_PART &&
              pipe >= TIR_CG_PIPELINE_OPT && pipe <= TIR_CG_PIPELINE_SHORT &&
              (unsigned long long)st.st_size == strlen(line) + kn + pn;
    if (ok) {
        buf = malloc(kn + pn);
        ok = buf && fread(buf, 1, kn + pn, f) == kn + pn && fgetc(f) == EOF &&
             memcmp(buf, key->text, kn) == 0 && entry_sum(buf, kn, buf + kn, pn, pipe) == sum;
    }
    if (ok) futimens(fileno(f), NULL); /* recently used: trimmed last */
    fclose(f);
    if (ok) {
        char *p = tir_ctx_alloc(ctx, pn + 1);
        memcpy(p, buf + kn, pn);
        p[pn] = 0;
        *v = (cg_cache_value){p, (size_t)pn, (tir_cg_pipeline)pipe};
    }
    free(buf);
    return ok;
}

/* Numbers this process's temporary file names. */
static atomic_uint tmp_counter;

/* Creates a temporary file for key's entry beside it, under a name no one
 * else has used: O_EXCL, so that the writer never opens a file another
 * process is writing (processes in other PID namespaces can share a pid)
 * nor follows a link planted in a shared directory.  0666: the umask
 * decides who may read the entries, as for any file the process makes.
 * Returns the stream and sets *tmp (malloc), or NULL. */
static FILE *disk_create_tmp(const cg_cache_key_t *key, char **tmp) {
    for (int tries = 0; tries < 16; tries++) {
        char suffix[64];
        snprintf(suffix, sizeof suffix, ".tmp%ld.%u", (long)getpid(),
                 atomic_fetch_add(&tmp_counter, 1));
        *tmp = disk_path(key, suffix);
        if (!*tmp) return NULL;
        int fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            FILE *f = fdopen(fd, "wb");
            if (f) return f;
            close(fd);
            remove(*tmp);
        }
        bool taken = fd < 0 && errno == EEXIST;
        free(*tmp);
        *tmp = NULL;
        if (!taken) return NULL;
    }
    return NULL;
}

/* Writes key's entry to a temporary file and renames it into place:
 * rename is atomic, so a reader sees the old entry or the new one whole,
 * and of two processes storing one entry the last rename wins.  Any
 * failure leaves no temporary file and no error. */
/* ------------------------------------------------------------ disk size */

/* Whether name is one of the cache's files: 16 hex digits and ".ptx" (an
 * entry) or ".tmp..." (a temporary one, *tmp set).  Nothing else in the
 * directory is ever removed. */
static bool cache_file(const char *name, bool *tmp) {
    for (int i = 0; i < 16; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
    *tmp = strncmp(name + 16, ".tmp", 4) == 0;
    return *tmp || strcmp(name + 16, ".ptx") == 0;
}

typedef struct dfile {
    char *path;
    struct timespec mtime;
    off_t size;
} dfile;

static int older_first(const void *a, const void *b) {
    const struct timespec *x = &((const dfile *)a)->mtime, *y = &((const dfile *)b)->mtime;
    return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec ? -1 : 1)
                                  : (x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec);
}

/* Doubles *fs's room (keeping it as it was when there is no memory). */
static bool grow(dfile **fs, size_t *cap) {
    size_t c = *cap ? 2 * *cap : 64;
    dfile *g = realloc(*fs, c * sizeof *g);
    if (!g) return false;
    *fs = g;
    *cap = c;
    return true;
}

/* A temporary file this old was left by a killed writer (a write takes
 * milliseconds). */
enum { STALE_TMP_S = 3600 };

int tir_codegen_cache_trim(const char *dir, size_t max_bytes) {
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) return -1;
    dfile *fs = NULL;
    size_t n = 0, cap = 0, total = 0;
    int removed = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        bool tmp;
        struct stat st;
        size_t pn = strlen(dir) + strlen(e->d_name) + 2;
        char *path = cache_file(e->d_name, &tmp) ? malloc(pn) : NULL;
        if (!path) continue;
        snprintf(path, pn, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
        } else if (tmp) {
            removed += now - st.st_mtime > STALE_TMP_S && unlink(path) == 0;
            free(path);
        } else if (n == cap && !grow(&fs, &cap)) {
            free(path);
            break;
        } else {
            fs[n++] = (dfile){path, st.st_mtim, st.st_size};
            total += (size_t)st.st_size;
        }
    }
    closedir(d);
    if (fs) qsort(fs, n, sizeof *fs, older_first);
    for (size_t i = 0; i < n; i++) {
        if (total > max_bytes && unlink(fs[i].path) == 0) {
            total -= (size_t)fs[i].size;
            removed++;
        }
        free(fs[i].path);
    }
    free(fs);
    return removed;
}

/* The disk cache's size limit: MINITIR_CACHE_MAX_MB (whole MiB, 0 keeps
 * nothing), default 1 GiB. */
static size_t disk_limit(void) {
    const char *s = getenv("MINITIR_CACHE_MAX_MB");
    char *end;
    unsigned long long mb = s && *s ? strtoull(s, &end, 10) : 1024;
    if (s && *s && (*end || mb > ((size_t)-1 >> 20))) mb = 1024;
    return (size_t)mb << 20;
}

/* Stores counted by this process: the first and every 64th trim the
 * directory (a listing costs ~1 ms per thousand entries). */
static atomic_uint disk_stores;

static void disk_put(const cg_cache_key_t *key, const cg_cache_value *v) {
    if (mkdir(key->dir, 0777) != 0 && errno != EEXIST) return;
    char *tmp = NULL, *path = disk_path(key, ".ptx");
    FILE *f = path ? disk_create_tmp(key, &tmp) : NULL;
    if (f) {
        int pipe = (int)v->pipeline;
        bool ok = fprintf(f, "%s %d %llu %llu %d %016llx\n", magic, CACHE_FORMAT,
                          (unsigned long long)key->len, (unsigned long long)v->ptx_len, pipe,
                          (unsigned long long)entry_sum(key->text, key->len, v->ptx, v->ptx_len,
                                                        pipe)) > 0 &&
                  fwrite(key->text, 1, key->len, f) == key->len &&
                  fwrite(v->ptx, 1, v->ptx_len, f) == v->ptx_len;
        ok = fclose(f) == 0 && ok;
        ok = ok && rename(tmp, path) == 0;
        if (!ok) remove(tmp);
        if (ok && atomic_fetch_add(&disk_stores, 1) % 64 == 0)
            tir_codegen_cache_trim(key->dir, disk_limit());
    }
    free(tmp);
    free(path);
}

/* -------------------------------------------------------------- the API */

tir_cg_cache_hit cg_cache_find(tir_ctx *ctx, const cg_cache_key_t *key, cg_cache_value *v) {
    tir_cg_cache_hit hit = TIR_CG_CACHE_MISS;
    if (mem_find(key, ctx, v))
        hit = TIR_CG_CACHE_MEMORY;
    else if (key->dir && disk_find(key, ctx, v)) {
        hit = TIR_CG_CACHE_DISK;
        mem_put(key, v);
    }
    if (hit)
        atomic_fetch_add(&stat_hits[hit], 1);
    else
        atomic_fetch_add(&stat_misses, 1);
    return hit;
}

void cg_cache_store(const cg_cache_key_t *key, const cg_cache_value *v) {
    atomic_fetch_add(&stat_stores, 1);
    mem_put(key, v);
    if (key->dir) disk_put(key, v);
}

void tir_codegen_cache_clear(void) {
    pthread_mutex_lock(&mem_lock);
    mem_trim(0);
    pthread_mutex_unlock(&mem_lock);
}

void tir_codegen_cache_set_limit(size_t bytes) {
    pthread_mutex_lock(&mem_lock);
    mem_limit = bytes;
    mem_trim(mem_limit);
    pthread_mutex_unlock(&mem_lock);
}

void tir_codegen_cache_get_stats(tir_codegen_cache_stats *s) {
    if (!s) return;
    pthread_mutex_lock(&mem_lock);
    s->entries = 0;
    for (entry *e = mem_head; e; e = e->next) s->entries++;
    s->bytes = mem_bytes;
    s->limit = mem_limit;
    pthread_mutex_unlock(&mem_lock);
    s->memory_hits = atomic_load(&stat_hits[TIR_CG_CACHE_MEMORY]);
    s->disk_hits = atomic_load(&stat_hits[TIR_CG_CACHE_DISK]);
    s->misses = atomic_load(&stat_misses);
    s->stores = atomic_load(&stat_stores);
    s->disk_enabled = *cg_build_id() != 0;
}
