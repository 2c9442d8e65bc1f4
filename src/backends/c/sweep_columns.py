"""How a scan sweep's block copies its fields' columns in and its staged outputs' out
(``backends.c.sweeps``).

Each buffered field's column ``v`` of the block, contiguous along the axis, becomes column
``v`` of a buffer whose rows are the axis's levels (``g_<name>[k * row + v]``), so that the
sweep's vector loop loads a row a vector at a time. Where every buffered field is float64 and
the domain may have eight levels or more, the copy-in goes a chunk of eight levels at a time,
before the first pass's steps over them (``copy_in_chunk``), eight columns at a time through
8x8 register transposes where the compiler targets AVX-512 (``sf_columns_in_f64``: eight
loads and eight stores of a vector per 64 points), the columns left over one at a time; a
field only the first pass reads keeps one chunk in its buffer, in L1. Each piece copied asks
for a few lines of the next block's columns, a transpose one after each of its loads and
stores (``backends.c.sweep_ahead``). Elsewhere,
every level of a column is copied before the passes, a scalar store per point (``copy_in``). A
staged output's block buffer goes out a column at a time (``copy_out``). The C written here
uses the sweep's names (declared by ``sweeps``): ``p_<name>``, ``g_<name>``, ``o_<name>``,
``st_<name>``, ``sf_levels``, and in a chunk ``sf_c`` of ``sf_chunks``, its first level
``sf_t`` and its levels ``sf_n``.

The transposes are inlined, so a domain known to have fewer than eight levels (c_cpu builds
per inner extent) gets no code for them: unused in its function, they cost the vertical
advection's 16x16x8 (six levels) 4 % (docs/notes/2026-12-05-scans-where-the-time-goes.md).
They are written with ``__builtin_shufflevector`` (clang, gcc 12 and later) rather than
``<immintrin.h>``, whose parse costs every cold build about 0.15 s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from backends.c.sweep_ahead import Asking
from backends.clike.expressions import C_TYPES

__all__ = [
    "COLUMNS_IN_C",
    "PREFETCH_COLUMN_C",
    "Column",
    "copy_in",
    "copy_in_chunk",
    "copy_out",
    "prefetch_next",
    "transposable",
]

#: ``SF_COLUMNS_8`` and ``sf_columns_in_f64``, where the compiler targets AVX-512 (after
#: ``sweep_ahead.AHEAD_C``: the transposes call its ``sf_ask`` and ``sf_ask_owed``).
COLUMNS_IN_C = r"""
#if defined(__AVX512F__) && defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 12)
#define SF_COLUMNS_8 1
typedef double sf_d8 __attribute__((vector_size(64)));
typedef double sf_d8u __attribute__((vector_size(64), aligned(8), may_alias));
#define SF_PAIRS(a, b, lo) \
    __builtin_shufflevector(a, b, lo, lo + 8, lo + 2, lo + 10, lo + 4, lo + 12, lo + 6, lo + 14)
#define SF_QUADS(a, b, lo) \
    __builtin_shufflevector(a, b, lo, lo + 1, lo + 8, lo + 9, lo + 4, lo + 5, lo + 12, lo + 13)
#define SF_HALVES(a, b, lo) \
    __builtin_shufflevector(a, b, lo, lo + 1, lo + 2, lo + 3, lo + 8, lo + 9, lo + 10, lo + 11)
/* Columns c < 8 of `levels` points at col + c * stride into g[k * row + c], eight levels at a
   time through an 8x8 transpose, asking for one of the `owed` lines of `next` after each load
   and store (AHEAD_C), and for the rest after the last level. */
static inline __attribute__((always_inline)) void sf_columns_in_f64(
    double* restrict g, int64_t row, const double* restrict col, int64_t stride, int64_t levels,
    sf_cursor* next, int64_t owed) {
    int64_t k = 0;
    for (; k + 8 <= levels; k += 8) {
        const double* restrict at = col + k;
        /* Written out: as loops over arrays of vectors, gcc 12 kept them in memory (the
           tridiagonal solve ran 2.4x slower in the caches). */
        const sf_d8 r0 = *(const sf_d8u*)at;
        sf_ask_owed(next, &owed);
        const sf_d8 r1 = *(const sf_d8u*)(at + stride);
        sf_ask_owed(next, &owed);
        const sf_d8 r2 = *(const sf_d8u*)(at + 2 * stride);
        sf_ask_owed(next, &owed);
        const sf_d8 r3 = *(const sf_d8u*)(at + 3 * stride);
        sf_ask_owed(next, &owed);
        const sf_d8 r4 = *(const sf_d8u*)(at + 4 * stride);
        sf_ask_owed(next, &owed);
        const sf_d8 r5 = *(const sf_d8u*)(at + 5 * stride);
        sf_ask_owed(next, &owed);
        const sf_d8 r6 = *(const sf_d8u*)(at + 6 * stride);
        sf_ask_owed(next, &owed);
        const sf_d8 r7 = *(const sf_d8u*)(at + 7 * stride);
        sf_ask_owed(next, &owed);
        const sf_d8 a0 = SF_PAIRS(r0, r1, 0), b0 = SF_PAIRS(r0, r1, 1);
        const sf_d8 a1 = SF_PAIRS(r2, r3, 0), b1 = SF_PAIRS(r2, r3, 1);
        const sf_d8 a2 = SF_PAIRS(r4, r5, 0), b2 = SF_PAIRS(r4, r5, 1);
        const sf_d8 a3 = SF_PAIRS(r6, r7, 0), b3 = SF_PAIRS(r6, r7, 1);
        /* q<j>: levels j and j + 4 of columns 0-3; q<j + 4>: of columns 4-7 */
        const sf_d8 q0 = SF_QUADS(a0, a1, 0), q1 = SF_QUADS(b0, b1, 0);
        const sf_d8 q2 = SF_QUADS(a0, a1, 2), q3 = SF_QUADS(b0, b1, 2);
        const sf_d8 q4 = SF_QUADS(a2, a3, 0), q5 = SF_QUADS(b2, b3, 0);
        const sf_d8 q6 = SF_QUADS(a2, a3, 2), q7 = SF_QUADS(b2, b3, 2);
        double* restrict to = g + k * row;
        *(sf_d8u*)to = SF_HALVES(q0, q4, 0);
        sf_ask_owed(next, &owed);
        *(sf_d8u*)(to + row) = SF_HALVES(q1, q5, 0);
        sf_ask_owed(next, &owed);
        *(sf_d8u*)(to + 2 * row) = SF_HALVES(q2, q6, 0);
        sf_ask_owed(next, &owed);
        *(sf_d8u*)(to + 3 * row) = SF_HALVES(q3, q7, 0);
        sf_ask_owed(next, &owed);
        *(sf_d8u*)(to + 4 * row) = SF_HALVES(q0, q4, 4);
        sf_ask_owed(next, &owed);
        *(sf_d8u*)(to + 5 * row) = SF_HALVES(q1, q5, 4);
        sf_ask_owed(next, &owed);
        *(sf_d8u*)(to + 6 * row) = SF_HALVES(q2, q6, 4);
        sf_ask_owed(next, &owed);
        *(sf_d8u*)(to + 7 * row) = SF_HALVES(q3, q7, 4);
        sf_ask_owed(next, &owed);
    }
    sf_ask(next, owed);
    for (int c = 0; c < 8; ++c)
        for (int64_t rest = k; rest < levels; ++rest) g[rest * row + c] = col[c * stride + rest];
}
#else
#define SF_COLUMNS_8 0
#endif
"""


#: With ``prefetch_next``: a column's bytes from ``start``, asked for into L2 a line at a time.
PREFETCH_COLUMN_C = r"""
static inline void sf_prefetch_column(uintptr_t start, int64_t bytes) {
    for (int64_t offset = 0; offset < bytes; offset += 64)
        __builtin_prefetch((const void*)(start + (uintptr_t)offset), 0, 2);
}
"""



@attrs.frozen
class Column:
    """A buffered field's column in the block, as the copy-in reads it.

    Attributes:
        name: the field (its pointer is ``p_<name>``).
        ctype: its C element type.
        start: the offset of column ``b + v``'s first point copied (C, in ``v``).
        stride: the C name of the field's stride from one column to the next.
        extra: levels copied beyond the domain's (``sf_levels``): the reach along the axis.
        buffer: the buffer row the first point copied goes to (C); column ``v`` of the block
            goes to its column ``v``.
    """

    name: str
    ctype: str
    start: str
    stride: str
    extra: int
    buffer: str


def copy_in(columns: Sequence[Column], count: str, row: int, indent: str) -> list[str]:
    """The copy-in of every level of ``count`` columns (C) of ``columns``, into buffers of
    ``row`` points a level, one column at a time: the fields of one reach side by side in one
    loop along the axis (streams the hardware prefetcher follows)."""
    if not columns:
        return []
    lines = [f"{indent}for (int64_t v = 0; v < {count}; ++v) {{"]
    lines += _columns_one_by_one(columns, row, "(int64_t)sf_levels", indent + "    ")
    return [*lines, f"{indent}}}"]


def copy_in_chunk(
    columns: Sequence[Column], count: str, row: int, indent: str, *, asking: Asking
) -> list[str]:
    """The copy-in of chunk ``sf_c`` of ``sf_chunks``: levels ``[sf_t, sf_t + sf_n)`` (and the
    reach beyond) of ``count`` columns (C) of ``columns`` (whose ``start`` and ``buffer`` say
    where that chunk is), eight columns at a time through ``sf_columns_in_f64`` where
    ``SF_COLUMNS_8``, which asks for the field's own part as it goes (``asking.own``), after
    the parts of the fields read in place (``asking.before_eight``); the columns left over
    one at a time, each after asking for its parts (``asking.column``)."""
    if not columns:
        return []
    lines = [f"{indent}{{", f"{indent}    int64_t v = 0;", "#if SF_COLUMNS_8"]
    lines.append(f"{indent}    for (; v + 8 <= {count}; v += 8) {{")
    for c in columns:
        lines += [f"{indent}        {line}" for line in asking.before_eight(c.name)]
        own = asking.own(c.name)
        lines.append(
            f"{indent}        sf_columns_in_f64({c.buffer} + v, {row}, p_{c.name} + {c.start}, "
            f"{c.stride}, sf_n + {c.extra}, &sf_next_{own}, sf_eight_{own});"
        )
    lines += [f"{indent}    }}", "#endif", f"{indent}    for (; v < {count}; ++v) {{"]
    lines += [f"{indent}        {line}" for c in columns for line in asking.column(c.name)]
    lines += _columns_one_by_one(columns, row, "sf_n", indent + "        ")
    return [*lines, f"{indent}    }}", f"{indent}}}"]


def copy_out(
    name: str,
    dtype: np.dtype[Any],
    start: str,
    count: str,
    row: int,
    indent: str,
) -> list[str]:
    """The copy-out of the staged output ``name`` (of ``dtype``): column ``v`` of its block
    buffer ``o_<name>`` (rows ``row`` points apart) to the output's column at ``start`` (C, in
    ``v``), for ``count`` (C) columns, with streaming stores where ``st_<name>``."""
    ctype = C_TYPES[dtype]
    lines = [f"{indent}for (int64_t v = 0; v < {count}; ++v) {{"]
    lines += [
        f"{indent}    {ctype}* restrict dst = p_{name} + {start};",
        f"{indent}    const {ctype}* restrict src = o_{name} + v;",
    ]
    if dtype == np.dtype(np.float64):
        stream = [f"{indent}        sf_stream_column_f64(dst, src, {row}, (int64_t)sf_levels);"]
    elif dtype.itemsize in (4, 8):
        stream = [
            f"{indent}        for (int64_t k = 0; k < (int64_t)sf_levels; ++k)",
            f"{indent}            sf_stream_{dtype.itemsize}(dst + k, src + k * {row});",
        ]
    else:
        stream = []
    if stream:
        lines += [
            "#if SF_STREAMS",
            f"{indent}    if (st_{name}) {{",
            *stream,
            f"{indent}        continue;",
            f"{indent}    }}",
            "#endif",
        ]
    return [
        *lines,
        f"{indent}    for (int64_t k = 0; k < (int64_t)sf_levels; ++k)",
        f"{indent}        dst[k] = src[k * {row}];",
        f"{indent}}}",
    ]


def prefetch_next(columns: Sequence[Column], count: str, step: str, indent: str) -> list[str]:
    """At step ``step`` (C) of the first pass, a share of the ``count`` (C) columns that
    follow the block's (the next block's, for a thread whose block comes next in memory) of
    ``columns`` prefetched into L2 (``CTranslation.sweep_prefetch``, where the copy-in is not
    chunked): the next block's copy-in then finds them there. Addresses are formed as
    integers: the columns after the last block lie past the domain, where a prefetch does
    nothing."""
    lines = [
        f"{indent}{{",
        f"{indent}    const int64_t pf_n = {count}, pf_s = {step};",
        f"{indent}    for (int64_t w = pf_s * pf_n / (int64_t)sf_levels; "
        "w < (pf_s + 1) * pf_n / (int64_t)sf_levels; ++w) {",
        f"{indent}        const int64_t v = pf_n + w;",
    ]
    lines += [
        f"{indent}        sf_prefetch_column((uintptr_t)p_{c.name} + (uintptr_t)({c.start}) * "
        f"sizeof({c.ctype}), ((int64_t)sf_levels + {c.extra}) * (int64_t)sizeof({c.ctype}));"
        for c in columns
    ]
    return [*lines, f"{indent}    }}", f"{indent}}}"]


def _columns_one_by_one(columns: Sequence[Column], row: int, levels: str, indent: str) -> list[str]:
    """Column ``v`` of ``columns``, ``levels`` (C) and each one's reach, a point at a time."""
    lines = []
    by_reach: dict[int, list[Column]] = {}
    for column in columns:
        by_reach.setdefault(column.extra, []).append(column)
    for extra, reach in by_reach.items():
        lines += [
            f"{indent}const {c.ctype}* restrict src_{c.name} = p_{c.name} + {c.start};"
            for c in reach
        ]
        lines.append(f"{indent}for (int64_t k = 0; k < {levels} + {extra}; ++k) {{")
        lines += [f"{indent}    {c.buffer}[k * {row} + v] = src_{c.name}[k];" for c in reach]
        lines.append(f"{indent}}}")
    return lines


def transposable(columns: Sequence[Column]) -> bool:
    """Whether ``sf_columns_in_f64`` can copy ``columns`` in: every one float64."""
    return bool(columns) and all(c.ctype == "double" for c in columns)
