/* target.c: the GPU target contract (minitir/target.h): lookups over the
 * thread-axis table (minitir/thread_axes.def) and the limits of each arch
 * minitir generates code for.  Changing a limit or adding an arch is an
 * edit of the `targets` table below and nowhere else.
 */
#include <stdio.h>
#include <string.h>

#include "ir_internal.h"
#include "minitir/target.h"

static const struct {
    const char *name;
    int kind, dim;
} axes[TIR_THREAD_AXIS_COUNT] = {
#define TIR_THREAD_AXIS(E, NAME, KIND, DIM) {NAME, TIR_AXIS_KIND_##KIND, DIM},
#include "minitir/thread_axes.def"
#undef TIR_THREAD_AXIS
};

/* The tags, each after a space, for messages: all, and the launch axes. */
static const char all_tags[] =
#define TIR_THREAD_AXIS(E, NAME, KIND, DIM) " " NAME
#include "minitir/thread_axes.def"
#undef TIR_THREAD_AXIS
    ;
#define TAG_BLOCK(n) " " n
#define TAG_THREAD(n) " " n
#define TAG_VTHREAD(n)
static const char launch_tags[] =
#define TIR_THREAD_AXIS(E, NAME, KIND, DIM) TAG_##KIND(NAME)
#include "minitir/thread_axes.def"
#undef TIR_THREAD_AXIS
    ;

const char *tir_thread_axis_tags(bool launch_only) {
    return launch_only ? launch_tags : all_tags;
}

int tir_thread_axis_lookup(const char *tag) {
    if (!tag) return -1;
    for (int i = 0; i < TIR_THREAD_AXIS_COUNT; i++)
        if (strcmp(tag, axes[i].name) == 0) return i;
    return -1;
}

const char *tir_thread_axis_name(int axis) {
    return (unsigned)axis < TIR_THREAD_AXIS_COUNT ? axes[axis].name : "?";
}
int tir_thread_axis_kind(int axis) {
    return (unsigned)axis < TIR_THREAD_AXIS_COUNT ? axes[axis].kind : -1;
}
int tir_thread_axis_dim(int axis) {
    return (unsigned)axis < TIR_THREAD_AXIS_COUNT ? axes[axis].dim : -1;
}

int tir_launch_axis(const char *tag) {
    int a = tir_thread_axis_lookup(tag);
    return a >= 0 && a < TIR_NLAUNCH_AXES ? a : -1;
}

/* Every arch since Ampere shares the launch shape and the register file;
 * they differ in the shared memory a block may opt in to and in the
 * thread blocks a multiprocessor holds (CUDA C Programming Guide,
 * "Technical Specifications per Compute Capability").
 * The 16 KiB of local arrays per thread is lowering's budget, far below
 * the hardware's 512 KiB: local arrays past it spill and are slow. */
#define AMPERE_PLUS(SMEM_DYNAMIC, BLOCKS)                                      \
    {                                                                          \
        .max_threads_per_block = 1024, .max_block_dim = {1024, 1024, 64},      \
        .max_grid_dim = {2147483647, 65535, 65535},                            \
        .max_shared_static = 48 * 1024, .max_shared_dynamic = (SMEM_DYNAMIC),  \
        .max_local_bytes = 16 * 1024, .max_registers_per_thread = 255,         \
        .max_registers_per_block = 65536, .max_blocks_per_sm = (BLOCKS),       \
        .max_vector_bytes = 16, .warp_size = 32,                               \
    }

/* LLVM 19's NVPTX knows sm_20 .. sm_90a; minitir generates for Ampere and
 * later.  sm_90a (Hopper's arch-specific features) needs PTX 8.0. */
static const tir_target targets[] = {
    {"sm_80", "+ptx78", AMPERE_PLUS(163 * 1024, 32)},
    {"sm_86", "+ptx78", AMPERE_PLUS(99 * 1024, 16)},
    {"sm_87", "+ptx78", AMPERE_PLUS(163 * 1024, 16)},
    {"sm_89", "+ptx78", AMPERE_PLUS(99 * 1024, 24)},
    {"sm_90", "+ptx78", AMPERE_PLUS(227 * 1024, 32)},
    {"sm_90a", "+ptx80", AMPERE_PLUS(227 * 1024, 32)},
};
enum { NTARGETS = sizeof targets / sizeof targets[0], DEFAULT_TARGET = 4 };

int tir_target_count(void) { return NTARGETS; }

const tir_target *tir_target_at(int i) { return (unsigned)i < NTARGETS ? &targets[i] : NULL; }

const tir_target *tir_target_find(const char *arch) {
    if (!arch) return NULL;
    for (int i = 0; i < NTARGETS; i++)
        if (strcmp(arch, targets[i].arch) == 0) return &targets[i];
    return NULL;
}

const tir_target *tir_target_default(void) { return &targets[DEFAULT_TARGET]; }

char *tir_target_list(char *buf, size_t n) {
    size_t used = 0;
    if (n) buf[0] = '\0';
    for (int i = 0; i < NTARGETS && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", targets[i].arch);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}
