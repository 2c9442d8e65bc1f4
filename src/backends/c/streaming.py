"""Non-temporal (streaming) stores, for outputs too large to stay in the cache.

A plain store first reads the line it writes (write-allocate); a streaming store does not,
so an output that would be evicted before anything reads it again moves once, not twice.
Stencils stage such outputs in a buffer of their own and write it out through these helpers:
tiled stencils a chunk of a row at a time (``sf_stream_row``), scans a column gathered from
their block buffer (``sf_stream_column_f64``). Streaming stores are weakly ordered: a stencil
that used them calls ``sf_stream_fence()`` before it returns.

A unit takes ``STREAM_FENCE_C`` and then what its stencils call: ``STREAM_ROW_C``, the
declaration of ``sf_stream_row`` (never inlined, so it is compiled once, in the support
object, ``backends.c.support``, from ``STREAM_SUPPORT_C``), or ``STREAM_STORES_C``, the inline
stores of the scans.

The helpers use the compilers' builtins, not ``<immintrin.h>``: that header takes about
0.15 s to parse with ``-O3 -march=native``, on every cold build. Where neither gcc nor clang
targets x86-64, ``SF_STREAMS`` is 0 and the helpers use ordinary stores.
"""

from __future__ import annotations

__all__ = ["STREAM_FENCE_C", "STREAM_ROW_C", "STREAM_STORES_C", "STREAM_SUPPORT_C"]

#: ``SF_STREAMS`` and ``sf_stream_fence``: first in every unit that streams.
STREAM_FENCE_C = r"""
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define SF_STREAMS 1
static inline void sf_stream_fence(void) { __builtin_ia32_sfence(); }
#else
#define SF_STREAMS 0
static inline void sf_stream_fence(void) {}
#endif
"""

#: The declaration of the support object's ``sf_stream_row`` (tiled stencils).
STREAM_ROW_C = r"""
/* Copies `bytes` from src to dst, past the caches when `nt` (and dst and bytes are
   multiples of 8). Not inlined: gcc would otherwise unswitch the caller's whole sweep on
   `nt` and build it twice. */
__attribute__((visibility("hidden"))) void sf_stream_row(void* restrict dst, const void* restrict src,
                                                        int64_t bytes, int nt);
"""

#: The inline streaming stores of one value, one line and one column (scans).
STREAM_STORES_C = r"""
#include <string.h>
#if SF_STREAMS
typedef long long sf_line __attribute__((vector_size(64), aligned(64)));
typedef long long sf_half __attribute__((vector_size(16), aligned(16)));
typedef long long sf_wide __attribute__((vector_size(32), aligned(32)));
static inline void sf_stream_8(void* d, const void* s) {
    long long x; memcpy(&x, s, 8);
#if defined(__clang__)
    __builtin_nontemporal_store(x, (long long*)d);
#else
    __builtin_ia32_movnti64((long long*)d, x);
#endif
}
static inline void sf_stream_4(void* d, const void* s) {
    int x; memcpy(&x, s, 4);
#if defined(__clang__)
    __builtin_nontemporal_store(x, (int*)d);
#else
    __builtin_ia32_movnti((int*)d, x);
#endif
}
/* One 64-byte line to a 64-byte aligned d. */
static inline void sf_stream_line(void* d, const void* s) {
#if defined(__clang__)
    sf_line line; memcpy(&line, s, 64);
    __builtin_nontemporal_store(line, (sf_line*)d);
#elif defined(__AVX512F__)
    sf_line line; memcpy(&line, s, 64);
    __builtin_ia32_movntdq512((sf_line*)d, line);
#elif defined(__AVX__)
    /* Two 32-byte stores, not four of 16: half the store-queue entries per line, which
       the sweep's arithmetic waits behind when the queue fills (ADR 0009). */
    for (int h = 0; h < 2; ++h) {
        sf_wide part; memcpy(&part, (const char*)s + 32 * h, 32);
        __builtin_ia32_movntdq256((sf_wide*)((char*)d + 32 * h), part);
    }
#else
    for (int h = 0; h < 4; ++h) {
        sf_half part; memcpy(&part, (const char*)s + 16 * h, 16);
        __builtin_ia32_movntdq((sf_half*)((char*)d + 16 * h), part);
    }
#endif
}
/* dst[k] = src[k * stride] for k < n, past the caches. A double's address is a multiple of
   8, so the scalar head reaches a line boundary within 7 stores. */
static inline void sf_stream_column_f64(double* restrict dst, const double* restrict src,
                                        int64_t stride, int64_t n) {
    int64_t k = 0;
    for (; k < n && ((uintptr_t)(dst + k) & 63) != 0; ++k) sf_stream_8(dst + k, src + k * stride);
    for (; k + 8 <= n; k += 8) {
        double line[8] __attribute__((aligned(64)));
        for (int j = 0; j < 8; ++j) line[j] = src[(k + j) * stride];
        sf_stream_line(dst + k, line);
    }
    for (; k < n; ++k) sf_stream_8(dst + k, src + k * stride);
}
#endif
"""

#: What the support object compiles: the stores and ``sf_stream_row``.
STREAM_SUPPORT_C = (
    STREAM_FENCE_C
    + STREAM_STORES_C
    + r"""
void sf_stream_row(void* restrict dst, const void* restrict src, int64_t bytes, int nt) {
#if SF_STREAMS
    char* d = (char*)dst;
    const char* s = (const char*)src;
    if (nt && (((uintptr_t)d | (uintptr_t)bytes) & 7) == 0) {
        for (; ((uintptr_t)d & 63) != 0 && bytes > 0; d += 8, s += 8, bytes -= 8) sf_stream_8(d, s);
        for (; bytes >= 64; d += 64, s += 64, bytes -= 64) sf_stream_line(d, s);
        for (; bytes > 0; d += 8, s += 8, bytes -= 8) sf_stream_8(d, s);
        return;
    }
#else
    (void)nt;
#endif
    memcpy(dst, src, (size_t)bytes);
}
"""
)
