/* sim.c: the CPU SIMT simulator for lowered kernels (tir_sim_run).
 *
 * It reuses the reference interpreter's compiled program and evaluator
 * (src/ir/interp_internal.h): one ir_env per thread of a block, in SIMT
 * mode so that thread-binding loops take the thread's indices.  Memory is
 * wired through the env hooks: global buffers are the master env's
 * parameter mbufs, bound into every thread env; shared buffers come from a
 * per-block table (every thread of the block gets the same storage);
 * local buffers are fresh per thread.
 *
 * Execution model: every thread of a block is a coroutine (ucontext, one
 * small mmap'd stack per thread with a guard page) that runs until its
 * next syncthreads.  The scheduler resumes the threads of a block in
 * linear-id order; when none is runnable, either all wait at the same
 * syncthreads (the barrier opens: a new barrier interval begins) or the
 * block has a barrier error.  Interleaving only at barriers is exactly the
 * freedom the GPU's memory model leaves between barriers, so anything that
 * depends on a finer interleaving is a race, which the shadow memory
 * catches instead of hiding.  Kernels without syncthreads skip the
 * coroutines and run each thread straight through on the caller's stack.
 *
 * Race detection: every shared element has a shadow record with the last
 * writer (thread, barrier interval, statement) and a summary of the
 * readers in the current interval (first reader, and one other reader if
 * any).  A read of an element written by another thread in the same
 * interval, or a write of an element read or written by another thread in
 * the same interval, is a race.  Intervals are numbered by one counter
 * that runs over the whole simulation, so nothing needs resetting.
 *
 * cp_async: a copy is queued in the issuing thread (the source is read at
 * issue, the destination is poisoned and marked pending); cp_async_commit
 * closes a group and cp_async_wait(n) completes the oldest groups until at
 * most n are pending, writing the data as a store of the issuing thread.
 * Any access to a pending element is reported.
 *
 * With check_global_races, global buffers are watched too, with the last
 * writer and the last reader of each element: a load or store of an
 * element written by another thread of another block (blocks are never
 * ordered), or of the same block in the same barrier interval, is a race.
 * atomic_add is a write that does not race with other atomic adds, but
 * does with an unordered plain store or load (the last one) before or
 * after it.
 *
 * Under AddressSanitizer the stack switches are announced with
 * __sanitizer_start/finish_switch_fiber, and stacks are unpoisoned before
 * reuse, since threads abandoned after an error leave poisoned frames.
 */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "ir/interp_internal.h"
#include "minitir/sim.h"
#include "sim_warp.h"

#if defined(__SANITIZE_ADDRESS__)
#define SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIM_ASAN 1
#endif
#endif
#ifndef SIM_ASAN
#define SIM_ASAN 0
#endif
#if SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

/* Interpreter frames are small (its vector temporaries are in noinline
 * helpers of about 9 KiB); the deepest use measured in the sim tests,
 * error messages printed on the failing thread's stack included, was about
 * 21 KiB (27 KiB with ASan).  Under ASan every swapcontext also clears the
 * shadow of the whole target stack, so the stacks are kept modest. */
#if SIM_ASAN
#define SIM_STACK (256 * 1024)
#else
#define SIM_STACK (128 * 1024)
#endif

/* The launch and shared-memory limits: opts.limits, else the default
 * target's (minitir/target.h). */
#define SIM_LIMITS(s) ((s)->opts.limits ? (s)->opts.limits : &tir_target_default()->limits)

/* ================================================================ state */

typedef struct sh_shadow {
    const tir_stmt *wstmt, *rstmt, *rstmt2, *pstmt;
    uint32_t wepoch, repoch;
    int32_t wtid, rtid, rtid2; /* rtid2: a second reader, -1 if none */
    int32_t ptid;              /* issuer of a pending cp_async */
    uint8_t pending;
} sh_shadow;

/* One shared buffer of the current block. */
typedef struct sh_buf {
    const tir_buffer *buffer;
    unsigned char *data;
    uint8_t *written; /* NULL unless check_uninit */
    sh_shadow *shadow;
    int64_t size;
} sh_buf;

typedef struct cp_entry {
    ir_mbuf *dst;
    int64_t doff; /* bytes */
    int bytes;
    int64_t group;
    const tir_stmt *stmt;
    unsigned char data[16];
} cp_entry;

/* Global-memory shadow (check_global_races): the last writer (whether
 * by an atomic add) and the last reader. */
typedef struct g_shadow {
    int64_t wgtid; /* grid-wide thread id + 1; 0: never written in this run */
    int64_t rgtid; /* the same for the last plain load */
    uint32_t wepoch, repoch;
    bool watomic;
    const tir_stmt *wstmt, *rstmt;
} g_shadow;

enum { G_LOAD, G_STORE, G_ATOMIC }; /* global_access kinds */

typedef struct g_buf {
    const ir_mbuf *m;
    g_shadow *shadow; /* allocated at the first write */
} g_buf;

enum { TH_READY, TH_BARRIER, TH_WARP, TH_DONE }; /* TH_WARP: at a warp collective */

typedef struct sim sim;

typedef struct sim_thread {
    sim *s;
    ir_env *env;
    int32_t tid;
    int state;
    tir_status status;
    const ir_cexpr *barrier; /* the syncthreads or warp collective it waits at */
    const tir_stmt *barrier_stmt;
    ir_val wargs[IR_MAX_CALL_ARGS]; /* the collective's evaluated operands */
    ir_val *wresult; /* where a value-returning collective's result goes (on its stack) */
    ucontext_t uc;
    unsigned char *map; /* guard page + stack */
    cp_entry *cp;
    int ncp, capcp;
    int64_t committed; /* groups committed so far */
#if SIM_ASAN
    void *fake;
#endif
} sim_thread;

struct sim {
    tir_ctx *ctx;
    const ir_prog *prog;
    tir_sim_opts opts;
    ir_env *master;
    int64_t grid[3], block[3];
    int nthreads;
    sim_thread *th;
    int64_t bidx[3];
    uint32_t epoch;
    sh_buf *sh;
    int nsh, capsh;
    int64_t shared_bytes;
    g_buf *gb;
    int ngb;
    int64_t block_linear;
    bool fibers;
    uint64_t ops; /* bit i: the kernel calls intrinsic i */
    ucontext_t sched;
    size_t page;
#if SIM_ASAN
    const void *sched_bottom;
    size_t sched_size;
#endif
    tir_sim_report rep;
};

/* ============================================================= messages */

static void tid_xyz(const sim *s, int32_t tid, int64_t out[3]) {
    out[0] = tid % s->block[0];
    out[1] = (tid / s->block[0]) % s->block[1];
    out[2] = tid / (s->block[0] * s->block[1]);
}

static void put_tid(ir_strbuf *sb, const sim *s, int32_t tid) {
    int64_t t[3];
    tid_xyz(s, tid, t);
    ir_sb_printf(sb, "threadIdx (%lld, %lld, %lld)", (long long)t[0], (long long)t[1],
                 (long long)t[2]);
}

static void put_elem(ir_strbuf *sb, const ir_mbuf *m, int64_t off) {
    ir_sb_printf(sb, "%s %s[%lld]", tir_scope_name(m->buffer->scope), m->buffer->name,
                 (long long)(off - m->elem_offset));
}

/* Records an error of thread e whose message shows the kernel with the
 * statements `marks` marked (the current one first). */
static void sim_fail(ir_env *e, tir_status code, int nmarks, const tir_stmt *const *marks,
                     ir_strbuf *msg) {
    if (e->status != TIR_OK) {
        ir_sb_free(msg);
        return;
    }
    const void *m[4];
    int n = 0;
    for (int i = 0; i < nmarks && n < 4; i++)
        if (marks[i]) m[n++] = marks[i];
    ir_sb_printf(msg, "\n%s", tir_print_marked(e->ctx, e->prog->func, n, m));
    tir_ctx_fail(e->ctx, code, "%s", msg->data);
    ir_sb_free(msg);
    e->status = code;
}

static void put_stmt_line(ir_strbuf *sb, tir_ctx *ctx, const char *what, const tir_stmt *st) {
    if (!st) return;
    const char *p = tir_print(ctx, st);
    size_t n = strcspn(p, "\n");
    ir_sb_printf(sb, "\n  %s: %.*s", what, (int)n, p);
}

/* ============================================================== memory */

static sh_buf *shared_of(sim *s, const tir_buffer *b) {
    for (int i = 0; i < s->nsh; i++)
        if (s->sh[i].buffer == b) return &s->sh[i];
    return NULL;
}

static void free_shared(sim *s) {
    for (int i = 0; i < s->nsh; i++) {
        free(s->sh[i].data);
        free(s->sh[i].written);
        free(s->sh[i].shadow);
    }
    s->nsh = 0;
    s->shared_bytes = 0;
}

static tir_status sim_alloc(ir_env *e, ir_mbuf *m) {
    sim_thread *t = e->user;
    sim *s = t->s;
    size_t n = (size_t)(m->size ? m->size : 1), bytes = n * (size_t)m->elem_bytes;
    if (m->buffer->scope == TIR_SCOPE_SHARED) {
        sh_buf *b = shared_of(s, m->buffer);
        if (!b) {
            int64_t al = m->buffer->align > 16 ? m->buffer->align : 16;
            int64_t total = (s->shared_bytes + al - 1) / al * al + (int64_t)bytes;
            /* the opt-in maximum: past 48 KiB codegen uses dynamic shared memory */
            int64_t max_shared = SIM_LIMITS(s)->max_shared_dynamic;
            if (total > max_shared)
                return ir_env_fail(e, TIR_ERR_SIM_LAUNCH,
                                   "shared buffer %s takes the block's shared memory to %lld "
                                   "bytes (at most %lld)",
                                   m->buffer->name, (long long)total, (long long)max_shared);
            if (s->nsh == s->capsh) {
                int cap = s->capsh ? 2 * s->capsh : 8;
                sh_buf *nb = realloc(s->sh, (size_t)cap * sizeof *nb);
                if (!nb) return ir_env_fail(e, TIR_ERR_NOMEM, "simulator: out of memory");
                s->sh = nb;
                s->capsh = cap;
            }
            b = &s->sh[s->nsh];
            memset(b, 0, sizeof *b);
            b->buffer = m->buffer;
            b->size = (int64_t)n;
            b->data = malloc(bytes);
            b->shadow = calloc(n, sizeof *b->shadow);
            if (s->opts.check_uninit) b->written = calloc(n, 1);
            if (!b->data || !b->shadow || (s->opts.check_uninit && !b->written)) {
                free(b->data);
                free(b->shadow);
                free(b->written);
                return ir_env_fail(e, TIR_ERR_NOMEM, "simulator: out of memory");
            }
            memset(b->data, 0xff, bytes); /* stale data reads as NaN / -1 */
            s->nsh++;
            s->shared_bytes = total;
            if (total > s->rep.shared_bytes) s->rep.shared_bytes = total;
        }
        if (b->size != (int64_t)n)
            return ir_env_fail(e, TIR_ERR_EVAL, "shared buffer %s allocated with two sizes",
                               m->buffer->name);
        m->data = b->data;
        m->written = b->written;
        m->owner = b;
        m->watch = true;
        return TIR_OK;
    }
    m->data = malloc(bytes);
    m->written = s->opts.check_uninit ? calloc(n, 1) : NULL;
    m->owner = NULL;
    if (!m->data || (s->opts.check_uninit && !m->written)) {
        free(m->data);
        free(m->written);
        m->data = NULL;
        m->written = NULL;
        return ir_env_fail(e, TIR_ERR_NOMEM, "simulator: cannot allocate %s",
                           m->buffer->name);
    }
    memset(m->data, 0xff, bytes);
    return TIR_OK;
}

static void sim_release(ir_env *e, ir_mbuf *m) {
    (void)e;
    if (m->buffer->scope == TIR_SCOPE_SHARED) return; /* lives until the block ends */
    free(m->data);
    free(m->written);
}

/* ========================================================= race checks */

static void race(ir_env *e, const ir_mbuf *m, int64_t off, const char *mine, int32_t other,
                 const char *theirs, const tir_stmt *ostmt) {
    sim_thread *t = e->user;
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_puts(&sb, "shared-memory race on ");
    put_elem(&sb, m, off);
    ir_sb_printf(&sb, ": this thread %s it, and ", mine);
    put_tid(&sb, t->s, other);
    ir_sb_printf(&sb, " %s it in the same barrier interval (no syncthreads between)", theirs);
    put_stmt_line(&sb, e->ctx, "this thread", e->cur_stmt);
    put_stmt_line(&sb, e->ctx, "other thread", ostmt);
    const tir_stmt *marks[2] = {e->cur_stmt, ostmt};
    sim_fail(e, TIR_ERR_SIM_RACE, 2, marks, &sb);
}

static void pending_access(ir_env *e, const ir_mbuf *m, int64_t off, bool store,
                           const sh_shadow *w) {
    sim_thread *t = e->user;
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_printf(&sb, "%s of ", store ? "store" : "load");
    put_elem(&sb, m, off);
    ir_sb_puts(&sb, ", the destination of a cp_async by ");
    if (w->ptid == t->tid)
        ir_sb_puts(&sb, "this thread");
    else
        put_tid(&sb, t->s, w->ptid);
    ir_sb_puts(&sb, " that has not completed (no cp_async_wait covering it yet)");
    put_stmt_line(&sb, e->ctx, "access", e->cur_stmt);
    put_stmt_line(&sb, e->ctx, "cp_async", w->pstmt);
    const tir_stmt *marks[2] = {e->cur_stmt, w->pstmt};
    sim_fail(e, TIR_ERR_SIM_CP_ASYNC_PENDING, 2, marks, &sb);
}

/* The shadow update of one access of element off by thread t. */
static void shadow_access(ir_env *e, const ir_mbuf *m, sh_shadow *w, int64_t off, bool store,
                          const tir_stmt *stmt) {
    sim_thread *t = e->user;
    sim *s = t->s;
    if (s->opts.no_race_check) return;
    uint32_t ep = s->epoch;
    int32_t me = t->tid;
    if (store) {
        if (w->wepoch == ep && w->wtid != me) {
            race(e, m, off, "writes", w->wtid, "wrote", w->wstmt);
            return;
        }
        if (w->repoch == ep && (w->rtid != me || w->rtid2 >= 0)) {
            bool first = w->rtid != me;
            race(e, m, off, "writes", first ? w->rtid : w->rtid2, "read",
                 first ? w->rstmt : w->rstmt2);
            return;
        }
        w->wepoch = ep;
        w->wtid = me;
        w->wstmt = stmt;
    } else {
        if (w->wepoch == ep && w->wtid != me) {
            race(e, m, off, "reads", w->wtid, "wrote", w->wstmt);
            return;
        }
        if (w->repoch != ep) {
            w->repoch = ep;
            w->rtid = me;
            w->rstmt = stmt;
            w->rtid2 = -1;
        } else if (w->rtid != me && w->rtid2 < 0) {
            w->rtid2 = me;
            w->rstmt2 = stmt;
        }
    }
}

static void put_gtid(ir_strbuf *sb, const sim *s, int64_t g) {
    int64_t bl = g / s->nthreads, t[3];
    tid_xyz(s, (int32_t)(g % s->nthreads), t);
    ir_sb_printf(sb, "blockIdx (%lld, %lld, %lld), threadIdx (%lld, %lld, %lld)",
                 (long long)(bl % s->grid[0]), (long long)(bl / s->grid[0] % s->grid[1]),
                 (long long)(bl / (s->grid[0] * s->grid[1])), (long long)t[0], (long long)t[1],
                 (long long)t[2]);
}

/* True when grid-wide thread g (+ 1; 0: none) of interval ep is unordered
 * with the current thread: another thread of another block (blocks are
 * never ordered), or of this block in the same barrier interval. */
static bool g_unordered(const sim *s, int64_t me, int64_t g, uint32_t ep) {
    return g && g != me && ((g - 1) / s->nthreads != s->block_linear || ep == s->epoch);
}

static void global_race(ir_env *e, const ir_mbuf *m, int64_t off, const char *mine,
                        int64_t other, const char *theirs, const tir_stmt *ostmt) {
    sim *s = ((sim_thread *)e->user)->s;
    bool other_block = (other - 1) / s->nthreads != s->block_linear;
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_puts(&sb, "global-memory race on ");
    put_elem(&sb, m, off);
    ir_sb_printf(&sb, ": this thread %s it, and ", mine);
    put_gtid(&sb, s, other - 1);
    ir_sb_printf(&sb, " %s it %s", theirs,
                 other_block ? "(threads of different blocks are never ordered)"
                             : "in the same barrier interval (no syncthreads between)");
    put_stmt_line(&sb, e->ctx, "this thread", e->cur_stmt);
    put_stmt_line(&sb, e->ctx, "other thread", ostmt);
    const tir_stmt *marks[2] = {e->cur_stmt, ostmt};
    sim_fail(e, TIR_ERR_SIM_RACE, 2, marks, &sb);
}

/* Global memory: an access of an element last written by another thread
 * is a race when the two are unordered (g_unordered), except that atomic
 * adds never race with each other; an atomic add also races with the
 * last unordered plain load of the element. */
static void global_access(ir_env *e, const ir_mbuf *m, int64_t off, int kind) {
    sim_thread *t = e->user;
    sim *s = t->s;
    g_buf *g = NULL;
    for (int i = 0; i < s->ngb; i++)
        if (s->gb[i].m == m) g = &s->gb[i];
    if (!g) return;
    if (!g->shadow) {
        g->shadow = calloc((size_t)(m->size ? m->size : 1), sizeof *g->shadow);
        if (!g->shadow) {
            ir_env_fail(e, TIR_ERR_NOMEM, "simulator: out of memory");
            return;
        }
    }
    g_shadow *w = &g->shadow[off];
    int64_t me = s->block_linear * s->nthreads + t->tid + 1;
    static const char *const mine[] = {"reads", "writes", "atomically adds to"};
    if (g_unordered(s, me, w->wgtid, w->wepoch) && !(kind == G_ATOMIC && w->watomic)) {
        global_race(e, m, off, mine[kind], w->wgtid,
                    w->watomic ? "atomically added to" : "wrote", w->wstmt);
        return;
    }
    if (kind == G_ATOMIC && g_unordered(s, me, w->rgtid, w->repoch)) {
        global_race(e, m, off, mine[kind], w->rgtid, "read", w->rstmt);
        return;
    }
    if (kind == G_LOAD) {
        w->rgtid = me;
        w->repoch = s->epoch;
        w->rstmt = e->cur_stmt;
        return;
    }
    w->wgtid = me;
    w->wepoch = s->epoch;
    w->wstmt = e->cur_stmt;
    w->watomic = kind == G_ATOMIC;
}

static void sim_access(ir_env *e, ir_mbuf *m, int64_t off, bool store) {
    if (m->buffer->scope != TIR_SCOPE_SHARED) {
        global_access(e, m, off, store ? G_STORE : G_LOAD);
        return;
    }
    sh_buf *b = m->owner;
    sh_shadow *w = &b->shadow[off];
    if (w->pending) {
        pending_access(e, m, off, store, w);
        return;
    }
    shadow_access(e, m, w, off, store, e->cur_stmt);
}

/* ============================================================ cp_async */

static void cp_issue(ir_env *e, const ir_val *args, int nargs) {
    sim_thread *t = e->user;
    int64_t bytes = args[2].i, doff = 0, soff = 0, sb = nargs == 4 ? args[3].i : bytes;
    if ((nargs != 3 && nargs != 4) || sb < 0 || sb > bytes) {
        ir_env_fail(e, TIR_ERR_EVAL, "cp_async: %d arguments, src_bytes %lld of %lld", nargs,
                    (long long)sb, (long long)bytes);
        return;
    }
    ir_mbuf *dst = ir_resolve_addr(e, args[0].p, &doff);
    ir_mbuf *src = ir_resolve_addr(e, args[1].p, &soff);
    if (!dst || !src) {
        ir_env_fail(e, TIR_ERR_EVAL, "cp_async: the %s address is not inside any buffer",
                    dst ? "source" : "destination");
        return;
    }
    if (dst->buffer->scope != TIR_SCOPE_SHARED || src->buffer->scope != TIR_SCOPE_GLOBAL) {
        ir_env_fail(e, TIR_ERR_EVAL,
                    "cp_async from %s (%s) to %s (%s): must copy from global to shared",
                    src->buffer->name, tir_scope_name(src->buffer->scope), dst->buffer->name,
                    tir_scope_name(dst->buffer->scope));
        return;
    }
    if ((bytes != 4 && bytes != 8 && bytes != 16) || bytes % dst->elem_bytes ||
        bytes % src->elem_bytes) {
        ir_env_fail(e, TIR_ERR_EVAL, "cp_async of %lld bytes between %s and %s elements",
                    (long long)bytes, src->buffer->name, dst->buffer->name);
        return;
    }
    if (doff % bytes || soff % bytes || (uintptr_t)args[0].p % (uintptr_t)bytes ||
        (uintptr_t)args[1].p % (uintptr_t)bytes) {
        ir_env_fail(e, TIR_ERR_EVAL,
                    "cp_async of %lld bytes from %s (byte %lld) to %s (byte %lld) is misaligned",
                    (long long)bytes, src->buffer->name, (long long)soff, dst->buffer->name,
                    (long long)doff);
        return;
    }
    if (sb % src->elem_bytes) {
        ir_env_fail(e, TIR_ERR_EVAL, "cp_async: src_bytes %lld is not whole %s elements",
                    (long long)sb, src->buffer->name);
        return;
    }
    if (doff + bytes > dst->size * dst->elem_bytes || soff + sb > src->size * src->elem_bytes) {
        ir_env_fail(e, TIR_ERR_OUT_OF_BOUNDS,
                    "cp_async of %lld bytes from %s (byte %lld) to %s (byte %lld) runs past "
                    "the end of a buffer",
                    (long long)bytes, src->buffer->name, (long long)soff, dst->buffer->name,
                    (long long)doff);
        return;
    }
    if (src->written)
        for (int64_t i = soff / src->elem_bytes; i < (soff + sb) / src->elem_bytes; i++)
            if (!src->written[i]) {
                ir_env_fail(e, TIR_ERR_UNINIT_READ,
                            "cp_async reads element %lld of %s, which was never written",
                            (long long)(i - src->elem_offset), src->buffer->name);
                return;
            }
    sh_buf *b = dst->owner;
    int64_t first = doff / dst->elem_bytes, n = bytes / dst->elem_bytes;
    for (int64_t i = first; i < first + n; i++)
        if (b->shadow[i].pending) {
            pending_access(e, dst, i, true, &b->shadow[i]);
            return;
        }
    if (t->ncp == t->capcp) {
        int cap = t->capcp ? 2 * t->capcp : 16;
        cp_entry *nc = realloc(t->cp, (size_t)cap * sizeof *nc);
        if (!nc) {
            ir_env_fail(e, TIR_ERR_NOMEM, "simulator: out of memory");
            return;
        }
        t->cp = nc;
        t->capcp = cap;
    }
    cp_entry *c = &t->cp[t->ncp++];
    c->dst = dst;
    c->doff = doff;
    c->bytes = (int)bytes;
    c->group = t->committed;
    c->stmt = e->cur_stmt;
    memcpy(c->data, src->data + soff, (size_t)sb);
    memset(c->data + sb, 0, (size_t)(bytes - sb));
    memset(dst->data + doff, 0xff, (size_t)bytes);
    for (int64_t i = first; i < first + n; i++) {
        b->shadow[i].pending = 1;
        b->shadow[i].ptid = t->tid;
        b->shadow[i].pstmt = e->cur_stmt;
    }
}

/* Completes the copies of groups < upto, oldest first. */
static void cp_complete(ir_env *e, int64_t upto) {
    sim_thread *t = e->user;
    int keep = 0;
    for (int i = 0; i < t->ncp; i++) {
        cp_entry *c = &t->cp[i];
        if (c->group >= upto || e->status) {
            t->cp[keep++] = *c;
            continue;
        }
        sh_buf *b = c->dst->owner;
        int64_t first = c->doff / c->dst->elem_bytes, n = c->bytes / c->dst->elem_bytes;
        for (int64_t k = first; k < first + n && !e->status; k++) {
            b->shadow[k].pending = 0;
            shadow_access(e, c->dst, &b->shadow[k], k, true, c->stmt);
        }
        memcpy(c->dst->data + c->doff, c->data, (size_t)c->bytes);
        if (c->dst->written) memset(c->dst->written + first, 1, (size_t)n);
        t->s->rep.cp_async_copies++;
    }
    t->ncp = keep;
}

/* ========================================================== atomic_add */

/* An atomic add: checked against the plain accesses of other threads
 * (global_access), never against other atomic adds; the add itself is the
 * interpreter's (threads run one at a time). */
static void atomic_add(ir_env *e, const ir_val *args) {
    int64_t off;
    ir_mbuf *m = ir_atomic_target(e, args, &off);
    if (!m) return;
    if (m->watch) global_access(e, m, off, G_ATOMIC);
    if (e->status) return;
    ir_atomic_apply(e, m, off, args[1]);
    ((sim_thread *)e->user)->s->rep.atomic_adds++;
}

/* ========================================================= coroutines */

static void to_scheduler(sim_thread *t) {
    sim *s = t->s;
#if SIM_ASAN
    __sanitizer_start_switch_fiber(&t->fake, s->sched_bottom, s->sched_size);
#endif
    swapcontext(&t->uc, &s->sched);
#if SIM_ASAN
    __sanitizer_finish_switch_fiber(t->fake, &s->sched_bottom, &s->sched_size);
#endif
}

static void thread_main(unsigned lo, unsigned hi) {
    sim_thread *t = (sim_thread *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
    sim *s = t->s;
#if SIM_ASAN
    __sanitizer_finish_switch_fiber(NULL, &s->sched_bottom, &s->sched_size);
#endif
    t->status = ir_exec(t->env);
    t->state = TH_DONE;
#if SIM_ASAN
    __sanitizer_start_switch_fiber(NULL, s->sched_bottom, s->sched_size);
#endif
    /* Never resumed: the stack is reset by the next makecontext. */
    setcontext(&s->sched);
}

static void resume(sim *s, sim_thread *t) {
#if SIM_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, t->map + s->page, SIM_STACK);
#endif
    swapcontext(&s->sched, &t->uc);
#if SIM_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

static bool sim_intrin(ir_env *e, const ir_cexpr *call, const ir_val *args, ir_val *result) {
    sim_thread *t = e->user;
    switch (call->u.call.op) {
    case TIR_INTRIN_SYNCTHREADS:
        if (!t->s->fibers) return true; /* a single-thread block */
        t->state = TH_BARRIER;
        t->barrier = call;
        t->barrier_stmt = e->cur_stmt;
        to_scheduler(t);
        return true;
    case TIR_INTRIN_LANE_ID: result->i = t->tid % SIM_WARP; return true;
    case TIR_INTRIN_MMA_SYNC:
    case TIR_INTRIN_LDMATRIX:
    case TIR_INTRIN_SHFL_XOR:
    case TIR_INTRIN_WGMMA_SYNC:
        /* Wait for the other 31 lanes (127 threads of the warpgroup for
         * wgmma_sync); the scheduler performs the op (run_warps), writes
         * a result through wresult (this frame stays live while the
         * coroutine waits) and resumes the warp. */
        TIR_ASSERT(t->s->fibers && call->u.call.nargs <= IR_MAX_CALL_ARGS);
        t->state = TH_WARP;
        t->barrier = call;
        t->barrier_stmt = e->cur_stmt;
        memcpy(t->wargs, args, sizeof(ir_val) * (size_t)call->u.call.nargs);
        t->wresult = result;
        to_scheduler(t);
        return true;
    case TIR_INTRIN_CP_ASYNC: cp_issue(e, args, call->u.call.nargs); return true;
    case TIR_INTRIN_ATOMIC_ADD: atomic_add(e, args); return true;
    case TIR_INTRIN_CP_ASYNC_COMMIT: t->committed++; return true;
    case TIR_INTRIN_CP_ASYNC_WAIT:
        if (args[0].i < 0) {
            ir_env_fail(e, TIR_ERR_EVAL, "cp_async_wait(%lld)", (long long)args[0].i);
            return true;
        }
        cp_complete(e, t->committed - args[0].i);
        return true;
    default: return false;
    }
}

static const ir_hooks sim_hooks = {sim_alloc, sim_release, sim_intrin, sim_access};

/* ======================================================= launch dims */

/* The launch sizes: lower's one launch check (tir_launch_check) with the
 * simulator's limits, then its one launch-time check (tir_launch_plan_eval,
 * tir_module_launch_dims's too) with the bound scalar arguments.  Their
 * errors are launch errors here. */
static tir_status launch_fail(sim *s) {
    /* (tir_ctx_fail formats before it drops the old message) */
    return tir_ctx_fail(s->ctx, TIR_ERR_SIM_LAUNCH, "%s", tir_ctx_error(s->ctx));
}

static tir_status find_dims(sim *s, const tir_prim_func *f) {
    tir_launch l;
    const tir_launch_plan *plan;
    if (tir_launch_check(s->ctx, f, SIM_LIMITS(s), &l) != TIR_OK ||
        tir_launch_plan_build(s->ctx, f, &l, &plan) != TIR_OK)
        return launch_fail(s);
    const ir_prog *p = s->prog;
    const tir_var **vars = calloc((size_t)f->nparams + 1, sizeof *vars);
    int64_t *values = calloc((size_t)f->nparams + 1, sizeof *values);
    if (!vars || !values) {
        free(vars);
        free(values);
        return tir_ctx_fail(s->ctx, TIR_ERR_NOMEM, "simulator: out of memory");
    }
    int n = 0;
    for (int i = 0; i < f->nparams; i++)
        if (!f->buffer_map[i]) {
            vars[n] = f->params[i];
            values[n++] = s->master->vars[p->param_slots[i]].i;
        }
    int64_t dims[TIR_NLAUNCH_AXES];
    tir_status st = tir_launch_plan_eval(s->ctx, plan, n, vars, values, dims);
    free(vars);
    free(values);
    if (st != TIR_OK) return launch_fail(s);
    for (int ax = 0; ax < 3; ax++) {
        s->grid[ax] = dims[ax];
        s->block[ax] = dims[3 + ax];
    }
    return TIR_OK;
}

#define OP_BIT(op) (1ull << TIR_INTRIN_##op)
/* The warp and warpgroup collectives: the scheduler performs them
 * (run_warps). */
#define WARP_OPS (OP_BIT(MMA_SYNC) | OP_BIT(LDMATRIX) | OP_BIT(SHFL_XOR) | OP_BIT(WGMMA_SYNC))

/* The intrinsics an expression calls (a bit each), anywhere inside it. */
static uint64_t expr_ops(const ir_cexpr *x) {
    if (!x) return 0;
    uint64_t m = expr_ops(x->a) | expr_ops(x->b) | expr_ops(x->c);
    if (x->kind == TIR_KIND_BUFFER_LOAD) {
        for (int i = 0; i < x->u.ld.nidx; i++) m |= expr_ops(x->u.ld.idx[i]);
    } else if (x->kind == TIR_KIND_CALL) {
        TIR_ASSERT(x->u.call.op < 64);
        m |= 1ull << x->u.call.op;
        for (int i = 0; i < x->u.call.nargs; i++) m |= expr_ops(x->u.call.args[i]);
    }
    return m;
}

/* The intrinsics a statement calls: which need coroutines, which are
 * refused before the run. */
static uint64_t stmt_ops(const ir_cstmt *c) {
    if (!c) return 0;
    uint64_t m = 0;
    switch ((tir_kind)c->kind) {
    case TIR_KIND_FOR:
        return expr_ops(c->u.loop.min) | expr_ops(c->u.loop.extent) | stmt_ops(c->u.loop.body);
    case TIR_KIND_SEQ:
        for (int i = 0; i < c->u.seq.n; i++) m |= stmt_ops(c->u.seq.stmts[i]);
        return m;
    case TIR_KIND_IF:
        return expr_ops(c->u.ifs.cond) | stmt_ops(c->u.ifs.then_s) | stmt_ops(c->u.ifs.else_s);
    case TIR_KIND_ALLOCATE: return stmt_ops(c->u.alloc.body);
    case TIR_KIND_BLOCK_REALIZE:
    case TIR_KIND_BLOCK:
        for (int i = 0; i < c->u.block.niters; i++) m |= expr_ops(c->u.block.values[i]);
        return m | expr_ops(c->u.block.predicate) | stmt_ops(c->u.block.init) |
               stmt_ops(c->u.block.body);
    case TIR_KIND_BUFFER_STORE:
        for (int i = 0; i < c->u.store.nidx; i++) m |= expr_ops(c->u.store.idx[i]);
        return m | expr_ops(c->u.store.value);
    case TIR_KIND_EVALUATE: return expr_ops(c->u.eval);
    default: return 0;
    }
}

/* Refuses what a lowered kernel cannot contain for the simulator: the
 * logical fragment intrinsics (lower_fragments expands them), and warp
 * intrinsics in a block that is not whole warps, wgmma_sync in one that
 * is not whole warpgroups. */
static tir_status check_ops(sim *s) {
    static const tir_intrin logical[4] = {TIR_INTRIN_FRAG_FILL, TIR_INTRIN_FRAG_LOAD,
                                          TIR_INTRIN_FRAG_STORE, TIR_INTRIN_WGMMA};
    for (int i = 0; i < 4; i++)
        if (s->ops >> logical[i] & 1)
            return tir_ctx_fail(s->ctx, TIR_ERR_UNSUPPORTED,
                                "kernel '%s' calls %s, a logical tile intrinsic: the simulator "
                                "runs lowered kernels, in which lower_fragments has expanded it "
                                "into per-lane loads and stores",
                                s->prog->func->name, tir_intrin_name(logical[i]));
    static const tir_intrin warp[4] = {TIR_INTRIN_LANE_ID, TIR_INTRIN_MMA_SYNC,
                                       TIR_INTRIN_LDMATRIX, TIR_INTRIN_SHFL_XOR};
    for (int i = 0; i < 4; i++)
        if ((s->ops >> warp[i] & 1) && s->nthreads % SIM_WARP)
            return tir_ctx_fail(s->ctx, TIR_ERR_SIM_LAUNCH,
                                "kernel '%s' calls %s, a warp intrinsic, but its blocks have %d "
                                "threads, not a multiple of %d (whole warps)",
                                s->prog->func->name, tir_intrin_name(warp[i]), s->nthreads,
                                SIM_WARP);
    if ((s->ops >> TIR_INTRIN_WGMMA_SYNC & 1) && s->nthreads % SIM_WARPGROUP)
        return tir_ctx_fail(s->ctx, TIR_ERR_SIM_LAUNCH,
                            "kernel '%s' calls wgmma_sync, a warpgroup intrinsic, but its blocks "
                            "have %d threads, not a multiple of %d (whole warpgroups)",
                            s->prog->func->name, s->nthreads, SIM_WARPGROUP);
    return TIR_OK;
}

/* Compiles f and binds the arguments in a master env; computes the launch
 * dimensions. */
static tir_status sim_setup(sim *s, const tir_prim_func *f, int nargs, const tir_arg *args) {
    if (!f) return tir_ctx_fail(s->ctx, TIR_ERR_INVALID_ARG, "simulator: no kernel");
    if (nargs != f->nparams)
        return tir_ctx_fail(s->ctx, TIR_ERR_INVALID_ARG,
                            "kernel '%s' takes %d arguments, %d given", f->name, f->nparams,
                            nargs);
    ir_prog *p;
    TIR_TRY(ir_prog_compile(s->ctx, f, &p));
    s->prog = p;
    s->master = ir_env_new(p, s->ctx, NULL, NULL);
    if (!s->master) return tir_ctx_fail(s->ctx, TIR_ERR_NOMEM, "simulator: out of memory");
    TIR_TRY(ir_env_bind_params(s->master, nargs, args, s->opts.uninit_params));
    if (s->opts.check_global_races) {
        s->gb = calloc((size_t)f->nparams + 1, sizeof *s->gb);
        if (!s->gb) return tir_ctx_fail(s->ctx, TIR_ERR_NOMEM, "simulator: out of memory");
        for (int i = 0; i < f->nparams; i++) {
            if (!f->buffer_map[i]) continue;
            ir_mbuf *m = s->master->bufs[p->params[i].slot];
            m->watch = true;
            s->gb[s->ngb++].m = m;
        }
    }
    for (int i = 0; i < 3; i++) s->grid[i] = s->block[i] = 1;
    TIR_TRY(find_dims(s, f));
    /* tir_launch_check kept this within the limit */
    s->nthreads = (int)(s->block[0] * s->block[1] * s->block[2]);
    s->ops = stmt_ops(p->body);
    return check_ops(s);
}

static void sim_teardown(sim *s) {
    if (s->th) {
        for (int i = 0; i < s->nthreads; i++) {
            sim_thread *t = &s->th[i];
            ir_env_free(t->env);
            free(t->cp);
            if (t->map) {
#if SIM_ASAN
                ASAN_UNPOISON_MEMORY_REGION(t->map + s->page, SIM_STACK);
#endif
                munmap(t->map, s->page + SIM_STACK);
            }
        }
        free(s->th);
    }
    free_shared(s);
    free(s->sh);
    for (int i = 0; i < s->ngb; i++) free(s->gb[i].shadow);
    free(s->gb);
    ir_env_free(s->master);
    if (s->prog) ir_prog_free((ir_prog *)s->prog);
}

static tir_status make_threads(sim *s) {
    s->th = calloc((size_t)s->nthreads, sizeof *s->th);
    if (!s->th) return tir_ctx_fail(s->ctx, TIR_ERR_NOMEM, "simulator: out of memory");
    const ir_prog *p = s->prog;
    for (int i = 0; i < s->nthreads; i++) {
        sim_thread *t = &s->th[i];
        t->s = s;
        t->tid = i;
        t->env = ir_env_new(p, s->ctx, &sim_hooks, t);
        if (!t->env) return tir_ctx_fail(s->ctx, TIR_ERR_NOMEM, "simulator: out of memory");
        t->env->simt = true;
        for (int k = 0; k < p->func->nparams; k++) {
            if (p->func->buffer_map[k])
                ir_env_set_buf(t->env, p->params[k].slot, s->master->bufs[p->params[k].slot]);
            else
                t->env->vars[p->param_slots[k]] = s->master->vars[p->param_slots[k]];
        }
        if (s->fibers) {
            void *m = mmap(NULL, s->page + SIM_STACK, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (m == MAP_FAILED)
                return tir_ctx_fail(s->ctx, TIR_ERR_NOMEM, "simulator: cannot map a stack");
            t->map = m;
            mprotect(m, s->page, PROT_NONE); /* overflow faults instead of corrupting */
        }
    }
    return TIR_OK;
}

/* ========================================================== scheduling */

/* Moves thread t's error (already in ctx) to a message naming the thread. */
static tir_status thread_error(sim *s, sim_thread *t, tir_status st) {
    int64_t tx[3];
    tid_xyz(s, t->tid, tx);
    s->rep.has_thread = true;
    for (int i = 0; i < 3; i++) {
        s->rep.block_idx[i] = s->bidx[i];
        s->rep.thread_idx[i] = tx[i];
    }
    const char *old = tir_ctx_error(s->ctx);
    char *copy = malloc(strlen(old) + 1);
    if (!copy) return st;
    strcpy(copy, old);
    tir_ctx_fail(s->ctx, st, "blockIdx (%lld, %lld, %lld), threadIdx (%lld, %lld, %lld): %s",
                 (long long)s->bidx[0], (long long)s->bidx[1], (long long)s->bidx[2],
                 (long long)tx[0], (long long)tx[1], (long long)tx[2], copy);
    free(copy);
    return st;
}

static void start_thread(sim *s, sim_thread *t) {
    for (int a = 0; a < 3; a++) t->env->thread_idx[a] = s->bidx[a];
    int64_t tx[3];
    tid_xyz(s, t->tid, tx);
    for (int a = 0; a < 3; a++) t->env->thread_idx[IR_THREAD_X + a] = tx[a];
    t->state = TH_READY;
    t->status = TIR_OK;
    t->ncp = 0;
    t->committed = 0;
    if (!s->fibers) return;
#if SIM_ASAN
    ASAN_UNPOISON_MEMORY_REGION(t->map + s->page, SIM_STACK);
#endif
    getcontext(&t->uc);
    t->uc.uc_stack.ss_sp = t->map + s->page;
    t->uc.uc_stack.ss_size = SIM_STACK;
    t->uc.uc_link = NULL;
    uintptr_t p = (uintptr_t)t;
    makecontext(&t->uc, (void (*)(void))thread_main, 2, (unsigned)(p & 0xffffffffu),
                (unsigned)(p >> 32));
}

/* Ends a barrier or divergent-warp message sb (freed) with the kernel,
 * statements `first` and `second` (may be NULL) marked, and reports it as
 * thread `who`'s TIR_ERR_SIM_BARRIER. */
static tir_status sync_fail(sim *s, ir_strbuf *sb, const tir_stmt *first, const tir_stmt *second,
                            const sim_thread *who) {
    const void *marks[2] = {first, second};
    ir_sb_printf(sb, "\n%s", tir_print_marked(s->ctx, s->prog->func, second ? 2 : 1, marks));
    s->rep.has_thread = true;
    int64_t tx[3];
    tid_xyz(s, who->tid, tx);
    for (int i = 0; i < 3; i++) {
        s->rep.block_idx[i] = s->bidx[i];
        s->rep.thread_idx[i] = tx[i];
    }
    tir_status st = tir_ctx_fail(s->ctx, TIR_ERR_SIM_BARRIER, "%s", sb->data);
    ir_sb_free(sb);
    return st;
}

/* A barrier that cannot open: some threads wait at `w` while others
 * finished or wait elsewhere. */
static tir_status barrier_error(sim *s, sim_thread *w, sim_thread *other) {
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_printf(&sb, "blockIdx (%lld, %lld, %lld): syncthreads not reached by all threads: ",
                 (long long)s->bidx[0], (long long)s->bidx[1], (long long)s->bidx[2]);
    put_tid(&sb, s, w->tid);
    if (other->state == TH_DONE) {
        int ndone = 0, nwait = 0;
        for (int i = 0; i < s->nthreads; i++) {
            if (s->th[i].state == TH_DONE) ndone++;
            else nwait++;
        }
        ir_sb_puts(&sb, " waits at the barrier below, but ");
        put_tid(&sb, s, other->tid);
        ir_sb_printf(&sb, " finished without reaching it (%d threads wait, %d finished)", nwait,
                     ndone);
    } else {
        ir_sb_puts(&sb, " and ");
        put_tid(&sb, s, other->tid);
        ir_sb_puts(&sb, " wait at different syncthreads (divergent barrier)");
        put_stmt_line(&sb, s->ctx, "first", w->barrier_stmt);
        put_stmt_line(&sb, s->ctx, "second", other->barrier_stmt);
    }
    return sync_fail(s, &sb, w->barrier_stmt,
                     other->state == TH_DONE ? NULL : other->barrier_stmt, other);
}

/* "0-15, 20" */
static void put_lanes(ir_strbuf *sb, uint32_t mask) {
    const char *sep = "";
    for (int l = 0; l < SIM_WARP; l++) {
        if (!(mask >> l & 1)) continue;
        int h = l;
        while (h + 1 < SIM_WARP && (mask >> (h + 1) & 1)) h++;
        if (h > l) ir_sb_printf(sb, "%s%d-%d", sep, l, h);
        else ir_sb_printf(sb, "%s%d", sep, l);
        sep = ", ";
        l = h;
    }
}

/* Warp `lane` (its 32 threads) has lane w at a collective and lane odd
 * not at the same one. */
static tir_status warp_error(sim *s, sim_thread *lane, sim_thread *w, sim_thread *odd) {
    uint32_t at = 0;
    for (int l = 0; l < SIM_WARP; l++)
        if (lane[l].state == TH_WARP && lane[l].barrier == w->barrier) at |= 1u << l;
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_printf(&sb, "blockIdx (%lld, %lld, %lld): divergent warp: lanes ", (long long)s->bidx[0],
                 (long long)s->bidx[1], (long long)s->bidx[2]);
    put_lanes(&sb, at);
    ir_sb_puts(&sb, " of the warp of ");
    put_tid(&sb, s, lane->tid);
    ir_sb_printf(&sb, " wait at %s, a warp collective that all 32 lanes must reach together, but "
                 "lane %d ", tir_intrin_name(w->barrier->u.call.op), (int)(odd - lane));
    ir_sb_puts(&sb, odd->state == TH_DONE      ? "finished without reaching it"
                    : odd->state == TH_BARRIER ? "waits at a syncthreads"
                                               : "waits at another warp collective");
    put_stmt_line(&sb, s->ctx, "collective", w->barrier_stmt);
    const tir_stmt *other = odd->state == TH_DONE ? NULL : odd->barrier_stmt;
    put_stmt_line(&sb, s->ctx, "other lane", other);
    return sync_fail(s, &sb, w->barrier_stmt, other, odd);
}

/* Warpgroup `q` (its threads from `first`) has thread w at a wgmma_sync
 * and thread odd not at the same one. */
static tir_status group_error(sim *s, int q, sim_thread *first, sim_thread *w, sim_thread *odd) {
    int nat = 0;
    for (int i = 0; i < SIM_WARPGROUP; i++)
        nat += first[i].state == TH_WARP && first[i].barrier == w->barrier;
    ir_strbuf sb;
    ir_sb_init(&sb);
    ir_sb_printf(&sb, "blockIdx (%lld, %lld, %lld): divergent warpgroup: %d of the 128 threads of "
                 "warpgroup %d (from ",
                 (long long)s->bidx[0], (long long)s->bidx[1], (long long)s->bidx[2], nat, q);
    put_tid(&sb, s, first->tid);
    ir_sb_puts(&sb, ") wait at wgmma_sync, a warpgroup collective that all 128 threads must "
                    "reach together, but ");
    put_tid(&sb, s, odd->tid);
    ir_sb_puts(&sb, odd->state == TH_DONE      ? " finished without reaching it"
                    : odd->state == TH_BARRIER ? " waits at a syncthreads"
                    : odd->state == TH_WARP    ? " waits at another collective"
                                               : " did not reach it");
    put_stmt_line(&sb, s->ctx, "collective", w->barrier_stmt);
    const tir_stmt *other = odd->state == TH_DONE ? NULL : odd->barrier_stmt;
    put_stmt_line(&sb, s->ctx, "other thread", other);
    return sync_fail(s, &sb, w->barrier_stmt, other, odd);
}

/* Performs the wgmma_sync of every warpgroup whose 128 threads all wait
 * at the same one (*moved: some did).  One with only some threads there
 * is an error unless *moved says that another collective of this round
 * has let threads go on, which may still bring the others. */
static tir_status run_groups(sim *s, bool *moved) {
    bool progressed = *moved;
    for (int base = 0; base < s->nthreads; base += SIM_WARPGROUP) {
        sim_thread *th = &s->th[base], *w = NULL;
        for (int i = 0; i < SIM_WARPGROUP && !w; i++)
            if (th[i].state == TH_WARP && th[i].barrier->u.call.op == TIR_INTRIN_WGMMA_SYNC)
                w = &th[i];
        if (!w) continue;
        ir_env *envs[SIM_WARPGROUP];
        const ir_val *args[SIM_WARPGROUP];
        sim_thread *odd = NULL;
        for (int i = 0; i < SIM_WARPGROUP; i++) {
            if (!odd && (th[i].state != TH_WARP || th[i].barrier != w->barrier)) odd = &th[i];
            envs[i] = th[i].env;
            args[i] = th[i].wargs;
        }
        if (odd) {
            if (progressed) continue;
            return group_error(s, base / SIM_WARPGROUP, th, w, odd);
        }
        int bad = simw_wgmma(envs, args, w->barrier->u.call.nargs, base / SIM_WARPGROUP);
        if (bad >= 0) return thread_error(s, &th[bad], th[bad].env->status);
        s->rep.warp_ops++;
        for (int i = 0; i < SIM_WARPGROUP; i++) th[i].state = TH_READY;
        *moved = true;
    }
    return TIR_OK;
}

/* Performs the collective of every warp whose 32 lanes all wait at the
 * same one (*moved: some did), and resumes them; a warp with some lanes
 * at a collective and others elsewhere is an error.  Then the warpgroup
 * collectives (run_groups): a warp at a wgmma_sync waits for the other
 * warps of its group.  Runs when no thread of the block can go on. */
static tir_status run_warps(sim *s, bool *moved) {
    *moved = false;
    if (!(s->ops & WARP_OPS)) return TIR_OK;
    bool groups = false;
    for (int base = 0; base < s->nthreads; base += SIM_WARP) {
        sim_thread *lane = &s->th[base], *w = NULL;
        for (int l = 0; l < SIM_WARP && !w; l++)
            if (lane[l].state == TH_WARP) w = &lane[l];
        if (!w) continue;
        ir_env *envs[SIM_WARP];
        const ir_val *args[SIM_WARP];
        ir_val *results[SIM_WARP];
        for (int l = 0; l < SIM_WARP; l++) {
            if (lane[l].state != TH_WARP || lane[l].barrier != w->barrier)
                return warp_error(s, lane, w, &lane[l]);
            envs[l] = lane[l].env;
            args[l] = lane[l].wargs;
            results[l] = lane[l].wresult;
        }
        tir_intrin op = w->barrier->u.call.op;
        if (op == TIR_INTRIN_WGMMA_SYNC) {
            groups = true;
            continue;
        }
        int bad = op == TIR_INTRIN_MMA_SYNC   ? simw_mma(envs, args)
                  : op == TIR_INTRIN_LDMATRIX ? simw_ldmatrix(envs, args)
                                              : simw_shfl_xor(envs, args, results);
        if (bad >= 0) return thread_error(s, &lane[bad], lane[bad].env->status);
        s->rep.warp_ops++;
        for (int l = 0; l < SIM_WARP; l++) lane[l].state = TH_READY;
        *moved = true;
    }
    return groups ? run_groups(s, moved) : TIR_OK;
}

static tir_status run_block(sim *s) {
    s->epoch++;
    for (int i = 0; i < s->nthreads; i++) start_thread(s, &s->th[i]);
    s->rep.blocks_run++;
    if (!s->fibers) {
        for (int i = 0; i < s->nthreads; i++) {
            sim_thread *t = &s->th[i];
            s->rep.threads_run++;
            tir_status st = ir_exec(t->env);
            t->state = TH_DONE;
            if (st != TIR_OK) return thread_error(s, t, st);
        }
        free_shared(s);
        return TIR_OK;
    }
    s->rep.threads_run += s->nthreads;
    for (;;) {
        for (int i = 0; i < s->nthreads; i++) {
            sim_thread *t = &s->th[i];
            if (t->state != TH_READY) continue;
            resume(s, t);
            if (t->state == TH_DONE && t->status != TIR_OK) return thread_error(s, t, t->status);
        }
        bool moved;
        tir_status wst = run_warps(s, &moved);
        if (wst != TIR_OK) return wst;
        if (moved) continue;
        sim_thread *w = NULL, *done = NULL, *other = NULL;
        for (int i = 0; i < s->nthreads; i++) {
            sim_thread *t = &s->th[i];
            if (t->state == TH_DONE) {
                if (!done) done = t;
            } else if (!w) {
                w = t;
            } else if (!other && t->barrier != w->barrier) {
                other = t;
            }
        }
        if (!w) break;
        if (done) return barrier_error(s, w, done);
        if (other) return barrier_error(s, w, other);
        s->epoch++;
        s->rep.barriers++;
        for (int i = 0; i < s->nthreads; i++) s->th[i].state = TH_READY;
    }
    free_shared(s);
    return TIR_OK;
}

/* ========================================================== public API */

tir_status tir_sim_launch_dims(tir_ctx *ctx, const tir_prim_func *kernel, int nargs,
                               const tir_arg *args, int64_t grid[3], int64_t block[3]) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    if (!grid || !block) return tir_ctx_fail(ctx, TIR_ERR_INVALID_ARG, "launch dims: no output");
    sim s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    tir_status st = sim_setup(&s, kernel, nargs, args);
    if (st == TIR_OK)
        for (int i = 0; i < 3; i++) {
            grid[i] = s.grid[i];
            block[i] = s.block[i];
        }
    sim_teardown(&s);
    return st;
}

tir_status tir_sim_run(tir_ctx *ctx, const tir_prim_func *kernel, int nargs, const tir_arg *args,
                       const tir_sim_opts *opts, tir_sim_report *report) {
    if (!ctx) return TIR_ERR_INVALID_ARG;
    sim *s = calloc(1, sizeof *s);
    if (!s) return tir_ctx_fail(ctx, TIR_ERR_NOMEM, "simulator: out of memory");
    s->ctx = ctx;
    if (opts) s->opts = *opts;
    long pg = sysconf(_SC_PAGESIZE);
    s->page = pg > 0 ? (size_t)pg : 4096;
    tir_status st = sim_setup(s, kernel, nargs, args);
    if (st == TIR_OK) {
        for (int i = 0; i < 3; i++) {
            s->rep.grid[i] = s->grid[i];
            s->rep.block[i] = s->block[i];
        }
        s->fibers = s->nthreads > 1 &&
                    (s->ops & (OP_BIT(SYNCTHREADS) | WARP_OPS));
        s->rep.coroutines = s->fibers;
        st = make_threads(s);
    }
    for (int64_t z = 0; st == TIR_OK && z < s->grid[2]; z++)
        for (int64_t y = 0; st == TIR_OK && y < s->grid[1]; y++)
            for (int64_t x = 0; st == TIR_OK && x < s->grid[0]; x++) {
                s->bidx[0] = x;
                s->bidx[1] = y;
                s->bidx[2] = z;
                s->block_linear = x + s->grid[0] * (y + s->grid[1] * z);
                st = run_block(s);
            }
    if (report) *report = s->rep;
    sim_teardown(s);
    free(s);
    return st;
}
