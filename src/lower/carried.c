/* carried.c: whether one iteration of a loop may read, in a buffer, a
 * value an earlier iteration wrote because it reads the buffer before
 * writing it (lower_reads_first).  plan_alloc does not move such a
 * buffer's Allocate into the loop (it would start unwritten in every
 * iteration) and sw_pipeline does not version it (iteration k would read
 * the copy of iteration k - V).
 *
 * The body is walked in execution order, and a read of the buffer before
 * any write to it answers yes.  Every write counts, under an If or not, and
 * whatever elements it writes: a read of other elements than a previous
 * write's, or after a write that did not happen in this iteration, is not
 * seen (docs/reliability.md lists this as known: exactness needs the
 * elements each iteration writes; the accesses the schedule language makes
 * write whole tiles before reading them).  A store's value is read before
 * the store writes; a call writing through an address (a fragment tile,
 * ldmatrix, cp.async) writes, and an mma's accumulator or an atomic add is
 * read first.
 */
#include "lower_internal.h"

typedef struct cwalk {
    const tir_buffer *buf;
    bool written, read_first;
    const tir_buffer_load *dst[8]; /* calls' destinations: written, not read */
    int ndst;
} cwalk;

/* The argument a call writes through (address_of), or -1; *rmw when it
 * reads it too. */
static int dest_arg(const tir_call *c, bool *rmw) {
    *rmw = c->op == TIR_INTRIN_MMA_SYNC || c->op == TIR_INTRIN_ATOMIC_ADD;
    switch (c->op) {
    case TIR_INTRIN_FRAG_FILL:
    case TIR_INTRIN_FRAG_LOAD:
    case TIR_INTRIN_CP_ASYNC:
    case TIR_INTRIN_MMA_SYNC:
    case TIR_INTRIN_ATOMIC_ADD: return 0;
    case TIR_INTRIN_FRAG_STORE: return 1;
    case TIR_INTRIN_LDMATRIX: return 2;
    default: return -1;
    }
}

static void on_read(cwalk *c) {
    if (!c->written) c->read_first = true;
}

static bool c_pre(tir_visitor *v, const tir_node *n) {
    cwalk *c = v->user;
    if (c->read_first || c->written) return false;
    switch ((tir_kind)n->kind) {
    case TIR_KIND_BUFFER_STORE: {
        const tir_buffer_store *st = (const tir_buffer_store *)n;
        if (st->buffer != c->buf) break;
        /* the value and indices are read first */
        tir_visit(v, st->value);
        for (int i = 0; i < st->nidx; i++) tir_visit(v, st->indices[i]);
        c->written = true;
        return false;
    }
    case TIR_KIND_BUFFER_LOAD: {
        const tir_buffer_load *l = (const tir_buffer_load *)n;
        for (int i = 0; i < c->ndst; i++)
            if (c->dst[i] == l) return true;
        if (l->buffer == c->buf) on_read(c);
        break;
    }
    case TIR_KIND_IF: {
        /* each branch from the state before the If: walked one after the
         * other, a write in the then branch hid a read first in the else
         * branch (`if k == 0: S = A[0] else: S = S + A[k]`: plan_alloc
         * moved S into the loop) */
        const tir_if *i = (const tir_if *)n;
        tir_visit(v, i->cond);
        tir_visit(v, i->then_s);
        bool then_written = c->written;
        c->written = false;
        if (i->else_s) tir_visit(v, i->else_s);
        c->written = c->written || then_written;
        return false;
    }
    case TIR_KIND_CALL: {
        bool rmw;
        int a = dest_arg((const tir_call *)n, &rmw);
        const tir_buffer_load *l = a >= 0 ? lower_addressed((const tir_call *)n, a) : NULL;
        if (!l || l->buffer != c->buf) break;
        if (rmw) on_read(c);
        if (c->ndst < 8) c->dst[c->ndst++] = l;
        /* the call's other operands are read before it writes */
        const tir_call *call = (const tir_call *)n;
        for (int i = 0; i < call->nargs; i++)
            if (i != a) tir_visit(v, call->args[i]);
        c->written = true;
        return false;
    }
    default: break;
    }
    return true;
}

bool lower_reads_first(const void *body, const tir_buffer *buf) {
    cwalk c = {.buf = buf};
    tir_visitor v = {.pre = c_pre, .user = &c};
    tir_visit(&v, body);
    return c.read_first;
}
