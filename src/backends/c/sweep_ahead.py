"""How a scan's block asks for the columns the next block reads (``backends.c.sweeps``).

A block's first reads would wait for memory, and the memory would idle while the block
computes. So where the copy-in goes in chunks (``sweep_columns.copy_in_chunk``), the block's
copy-in asks for the lines of the columns the next block reads into L2 (those that follow the
block's, for a thread whose next block comes next in memory), a few lines before each piece
it copies, so that the asking is spread evenly over the whole copy-in rather than issued in
bursts. A cursor per field (``sf_next_<n>``, ``ask_cursors``) gives its lines column after
column, line after line; each piece of a buffered field asks for its share (``sf_per_<n>``,
the lines over the pieces, rounded up) of that field's, and of
the fields read in place along the axis that the field takes on (``asks``; the vertical
advection's ``wcon`` at ``I`` and ``I + 1``: ``sweep_fields.fields_ahead``). The C written
here uses the sweep's names: ``p_<name>``, ``sf_levels`` (the domain's levels) and
``sf_ahead`` (whether the block asks at all, declared by ``sweeps``).

Measured on the 2-core Zen 4: prefetches issued back to back are mostly dropped (a 128 KiB
region asked for so saved 18-29 % of its read's memory time, asked for a line at a time
between other work 100 %: ``python -m benchmarks.memory_probe``). Asked for a line at a time
over the copy-in, without the divisions of proportional shares, tridiagonal's 256x256x64 ran
10-15 % faster than with shares of whole columns over every part of the block, and in the
caches 10 % faster (docs/notes/2026-12-05-scans-asking-a-line-at-a-time.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

__all__ = ["AHEAD_C", "Ahead", "ask_cursors", "asks"]

#: ``sf_cursor``, ``sf_ask``.
AHEAD_C = r"""
/* Where a block's copy-in is in asking for one field's lines of the columns after the block:
   the next line (`line`), the lines left in its column (`left`) and in the columns after it
   (`rest`, `lines` a column, columns `stride` bytes apart from `column`). */
typedef struct {
    uintptr_t line, column;
    int64_t left, rest, lines, stride;
} sf_cursor;
/* A cursor over `columns` columns of `bytes` each from the address `start`, `stride` bytes
   apart: each column's lines from the one its first byte is on to the one its last is on (the
   first column's count for all: alike where the stride is a whole number of lines). */
static inline sf_cursor sf_cursor_at(uintptr_t start, int64_t stride, int64_t bytes,
                                     int64_t columns) {
    const int64_t lines = (int64_t)(((start & 63) + (uintptr_t)bytes + 63) / 64);
    const uintptr_t line = start & ~(uintptr_t)63;
    const sf_cursor cursor = {line, start, columns > 0 ? lines : 0, (columns - 1) * lines, lines,
                              stride};
    return cursor;
}
/* The cursor's next `count` lines asked for into L2, one after another, a column's at a time.
   Addresses are formed as integers: past the array, a prefetch does nothing. */
static inline __attribute__((always_inline)) void sf_ask(sf_cursor* next, int64_t count) {
    while (count > 0 && next->left > 0) {
        const int64_t run = count < next->left ? count : next->left;
        for (int64_t k = 0; k < run; ++k)
            __builtin_prefetch((const void*)(next->line + (uintptr_t)(64 * k)), 0, 2);
        next->line += (uintptr_t)(64 * run);
        next->left -= run;
        count -= run;
        if (next->left == 0 && next->rest > 0) {
            next->column += (uintptr_t)next->stride;
            next->line = next->column & ~(uintptr_t)63;
            next->left = next->lines;
            next->rest -= next->lines;
        }
    }
}
"""


@attrs.frozen
class Ahead:
    """Columns after the block's that the next block reads from memory, as this block asks
    for them into L2 (``ask_cursors``).

    Attributes:
        name: the field (its pointer is ``p_<name>``).
        ctype: its C element type.
        start: the offset of the first point of the first column after the block's (C).
        stride: the C name of the field's stride from one column to the next.
        extra: levels read beyond the domain's (``sf_levels``): the reach along the axis.
    """

    name: str
    ctype: str
    start: str
    stride: str
    extra: int


def ask_cursors(ahead: Sequence[Ahead], count: str, pieces: str, indent: str) -> list[str]:
    """The declarations, at a block's start, of a cursor ``sf_next_<n>`` over each of
    ``ahead``'s lines of the ``count`` (C) columns after the block's (none where not
    ``sf_ahead``), and of the lines ``sf_per_<n>`` that each of the ``pieces`` (C) of the
    block asks for of it: the least share with which the pieces ask for all of them."""
    lines = []
    for n, a in enumerate(ahead):
        start = f"(uintptr_t)p_{a.name} + (uintptr_t)({a.start}) * sizeof({a.ctype})"
        stride = f"{a.stride} * (int64_t)sizeof({a.ctype})"
        nbytes = f"((int64_t)sf_levels + {a.extra}) * (int64_t)sizeof({a.ctype})"
        columns = f"sf_ahead ? {count} : 0"
        lines += [
            f"{indent}sf_cursor sf_next_{n} = sf_cursor_at({start}, {stride}, {nbytes}, "
            f"{columns});",
            f"{indent}const int64_t sf_per_{n} = (({count}) * sf_next_{n}.lines + ({pieces}) - 1)"
            f" / ({pieces});",
        ]
    return lines


def asks(asking: Sequence[str], field: str, share: str) -> list[str]:
    """The ``sf_ask`` calls of a piece of ``field`` copied in: of each cursor ``n`` that
    ``asking[n]`` gives that field, ``share`` (C, ``{}`` for ``sf_per_<n>``) lines."""
    return [
        f"sf_ask(&sf_next_{n}, {share.format(f'sf_per_{n}')});"
        for n, name in enumerate(asking)
        if name == field
    ]
