/* dtype.c: data types, their names and sizes. */
#include <string.h>

#include "ir_internal.h"

bool tir_dtype_eq(tir_dtype a, tir_dtype b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
tir_dtype tir_dtype_with_lanes(tir_dtype t, int lanes) {
    t.lanes = (uint16_t)lanes;
    return t;
}
tir_dtype tir_dtype_element(tir_dtype t) { return tir_dtype_with_lanes(t, 1); }
bool tir_dtype_is_int(tir_dtype t) { return t.code == TIR_TYPE_INT || t.code == TIR_TYPE_UINT; }
bool tir_dtype_is_float(tir_dtype t) {
    return t.code == TIR_TYPE_FLOAT || t.code == TIR_TYPE_BFLOAT;
}
bool tir_dtype_is_bool(tir_dtype t) { return t.code == TIR_TYPE_BOOL; }

size_t tir_dtype_bytes(tir_dtype t) {
    size_t b = t.code == TIR_TYPE_BOOL ? 1 : (size_t)(t.bits + 7) / 8;
    return b * t.lanes;
}

static const char *base_name(tir_dtype t) {
    switch ((tir_type_code)t.code) {
    case TIR_TYPE_BOOL: return "bool";
    case TIR_TYPE_INT: return t.bits == 8 ? "int8" : t.bits == 32 ? "int32" : t.bits == 64 ? "int64" : NULL;
    case TIR_TYPE_UINT: return t.bits == 8 ? "uint8" : NULL;
    case TIR_TYPE_FLOAT: return t.bits == 16 ? "float16" : t.bits == 32 ? "float32" : t.bits == 64 ? "float64" : NULL;
    case TIR_TYPE_BFLOAT: return t.bits == 16 ? "bfloat16" : NULL;
    case TIR_TYPE_HANDLE: return "handle";
    case TIR_TYPE_VOID: return "void";
    }
    return NULL;
}

const char *tir_dtype_str(tir_dtype t, char *buf, size_t n) {
    const char *b = base_name(t);
    if (!b) b = "invalid";
    if (t.lanes > 1)
        snprintf(buf, n, "%sx%u", b, (unsigned)t.lanes);
    else
        snprintf(buf, n, "%s", b);
    return buf;
}

bool tir_dtype_parse(const char *s, size_t len, tir_dtype *out) {
    static const struct {
        const char *name;
        tir_dtype t;
    } names[] = {
        {"bool", {TIR_TYPE_BOOL, 1, 1}},      {"int8", {TIR_TYPE_INT, 8, 1}},
        {"int32", {TIR_TYPE_INT, 32, 1}},     {"int64", {TIR_TYPE_INT, 64, 1}},
        {"uint8", {TIR_TYPE_UINT, 8, 1}},     {"float16", {TIR_TYPE_FLOAT, 16, 1}},
        {"bfloat16", {TIR_TYPE_BFLOAT, 16, 1}}, {"float32", {TIR_TYPE_FLOAT, 32, 1}},
        {"float64", {TIR_TYPE_FLOAT, 64, 1}}, {"handle", {TIR_TYPE_HANDLE, 64, 1}},
        {"void", {TIR_TYPE_VOID, 0, 1}},
    };
    size_t base = len;
    unsigned lanes = 1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == 'x') {
            base = i;
            if (i + 1 == len) return false;
            lanes = 0;
            for (size_t j = i + 1; j < len; j++) {
                if (s[j] < '0' || s[j] > '9') return false;
                lanes = lanes * 10 + (unsigned)(s[j] - '0');
                if (lanes > 4096) return false;
            }
            if (lanes < 1) return false;
            break;
        }
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) == base && memcmp(names[i].name, s, base) == 0) {
            *out = tir_dtype_with_lanes(names[i].t, (int)lanes);
            return true;
        }
    }
    return false;
}

const char *tir_scope_name(tir_scope s) {
    switch (s) {
    case TIR_SCOPE_GLOBAL: return "global";
    case TIR_SCOPE_SHARED: return "shared";
    case TIR_SCOPE_LOCAL: return "local";
    case TIR_SCOPE_FRAG_A: return "frag.a";
    case TIR_SCOPE_FRAG_B: return "frag.b";
    case TIR_SCOPE_FRAG_ACC: return "frag.acc";
    }
    return "?";
}

bool tir_scope_parse(const char *s, size_t len, tir_scope *out) {
    for (int i = TIR_SCOPE_GLOBAL; i <= TIR_SCOPE_LAST; i++) {
        const char *n = tir_scope_name((tir_scope)i);
        if (strlen(n) == len && memcmp(n, s, len) == 0) {
            *out = (tir_scope)i;
            return true;
        }
    }
    return false;
}

const char *tir_for_kind_name(tir_for_kind k) {
    switch (k) {
    case TIR_FOR_SERIAL: return "serial";
    case TIR_FOR_PARALLEL: return "parallel";
    case TIR_FOR_VECTORIZED: return "vectorized";
    case TIR_FOR_UNROLLED: return "unroll";
    case TIR_FOR_THREAD_BINDING: return "thread_binding";
    }
    return "?";
}
