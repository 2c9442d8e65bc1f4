"""How a scan's block asks for the columns the next block reads (``backends.c.sweeps``).

A block's first reads would wait for memory, and the memory would idle while the block
computes. So where the copy-in goes in chunks (``sweep_columns.copy_in_chunk``), the block's
copy-in asks for the lines of the columns the next block reads into L2 (those that follow the
block's, for a thread whose next block comes next in memory), a few lines with each piece it
copies (eight columns of a field a chunk, or one), so that the asking is spread over the
whole copy-in rather than issued in bursts. A cursor per field (``sf_next_<n>``,
``Asking.declarations``) gives its lines column after column, line after line; each piece of a
buffered field asks for its part of that field's lines (``sf_eight_<n>``, ``sf_one_<n>``:
the lines over the pieces, rounded up), and for a part of those of each field read in place
along the axis (``Asking``; the vertical advection's ``wcon`` at ``I`` and ``I + 1``:
``sweep_fields.fields_ahead``). Eight columns copied through a transpose owe it their own
field's part: it asks for a line after each of its loads and stores (``sf_ask_owed``), the
rest after its last level; the parts of the fields read in place are asked for before it, as
a column copied alone asks for all of its parts. The C written here uses the
sweep's names: ``p_<name>``, ``sf_levels`` (the domain's levels), ``sf_chunks`` and
``sf_ahead`` (whether the block asks at all), declared by ``sweeps``.

Measured on the 2-core Zen 4 (ADR 0014, third and fourth amendments): prefetches issued back
to back are mostly dropped (a 128 KiB region asked for so saved 28-47 % of its read's memory
time, asked for a line at a time between other work 91-100 %: ``python -m
benchmarks.memory_probe``). Asked for this way rather than in shares of whole columns over
every part of the block, tridiagonal's 256x256x64 ran 8-14 % faster (4-5 % in the caches),
the vertical advection's 8-12 % (docs/notes/2026-12-05-scans-asking-a-line-at-a-time.md).
One line after each load and store of a transpose rather than a piece's lines before it: the
same on the large grid, 8-11 % faster in the caches, where the asking is most of its cost
(docs/notes/2026-12-06-scans-what-the-asking-costs.md).
"""

from __future__ import annotations

import attrs

__all__ = ["AHEAD_C", "Ahead", "Asking"]

#: ``sf_cursor``, ``sf_ask``, ``sf_ask_owed``.
AHEAD_C = r"""
/* Where a block's copy-in is in asking for one field's lines of the columns after the block:
   the next line (`line`), the lines left in its column (`left`), and the columns after it
   (`rest`, `bytes` each from `column`'s first byte, `stride` bytes apart). */
typedef struct {
    uintptr_t line, column;
    int64_t left, rest, bytes, stride;
} sf_cursor;
/* The lines of the column of `bytes` from `start`: from the one its first byte is on to the
   one its last is on. */
static inline int64_t sf_lines_of(uintptr_t start, int64_t bytes) {
    return (int64_t)(((start & 63) + (uintptr_t)bytes + 63) / 64);
}
/* A cursor over `columns` columns of `bytes` each, the first from the address `start`, the
   others `stride` bytes apart. */
static inline sf_cursor sf_cursor_at(uintptr_t start, int64_t stride, int64_t bytes,
                                     int64_t columns) {
    const sf_cursor cursor = {start & ~(uintptr_t)63, start,
                              columns > 0 ? sf_lines_of(start, bytes) : 0, columns - 1, bytes,
                              stride};
    return cursor;
}
/* The most lines a column of the cursor spans: the first's where all lie alike on their
   lines (the stride a whole number of lines), else the most any can. */
static inline int64_t sf_most_lines(const sf_cursor* next) {
    return next->stride % 64 == 0 ? sf_lines_of(next->column, next->bytes)
                                  : (next->bytes + 126) / 64;
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
            next->left = sf_lines_of(next->column, next->bytes);
            --next->rest;
        }
    }
}
/* One line of `next`'s, where a piece copied in still owes its asking some (`*owed`). */
static inline __attribute__((always_inline)) void sf_ask_owed(sf_cursor* next, int64_t* owed) {
    if (*owed > 0) {
        sf_ask(next, 1);
        --*owed;
    }
}
"""


@attrs.frozen
class Ahead:
    """Columns after the block's that the next block reads from memory, as this block asks
    for them into L2 (``Asking``).

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


@attrs.frozen
class Asking:
    """How a block's copy-in asks for the lines of ``ahead``'s next columns: a cursor
    ``sf_next_<n>`` over each (``declarations``); a piece of a buffered field (one of
    ``buffered``) asks for its part of its own cursor's lines and of each cursor of a field
    read in place (not among ``buffered``).

    Attributes:
        ahead: the columns asked for, a cursor each: ``sf_next_<n>`` for ``ahead[n]``.
        buffered: the fields copied in (``sweep_columns.Column``), each among ``ahead``.
    """

    ahead: tuple[Ahead, ...]
    buffered: tuple[str, ...]

    def declarations(self, count: str, indent: str) -> list[str]:
        """The declarations, at a block's start, of the cursors over the lines of the
        ``count`` (C) columns after the block's (none where not ``sf_ahead``), and of the
        lines of each that a piece copied in asks for: ``sf_one_<n>`` for a column of a field a
        chunk (``sf_chunks``), ``sf_eight_<n>`` for eight. They are the cursor's lines (sized
        by the most a column spans) over the pieces that ask for them, rounded up, so that the
        pieces ask for all of them however the columns go."""
        lines = []
        for n, a in enumerate(self.ahead):
            start = f"(uintptr_t)p_{a.name} + (uintptr_t)({a.start}) * sizeof({a.ctype})"
            stride = f"{a.stride} * (int64_t)sizeof({a.ctype})"
            nbytes = f"((int64_t)sf_levels + {a.extra}) * (int64_t)sizeof({a.ctype})"
            split = 1 if a.name in self.buffered else len(self.buffered)
            total = f"({count}) * sf_most_lines(&sf_next_{n})"
            units = f"{split} * ({count}) * sf_chunks"
            lines += [
                f"{indent}sf_cursor sf_next_{n} = sf_cursor_at({start}, {stride}, {nbytes}, "
                f"sf_ahead ? {count} : 0);",
                f"{indent}const int64_t sf_one_{n} = ({total} + {units} - 1) / ({units});",
                f"{indent}const int64_t sf_eight_{n} = (8 * {total} + {units} - 1) / ({units});",
            ]
        return lines

    def column(self, field: str) -> list[str]:
        """The ``sf_ask`` calls before a column of ``field`` copied alone."""
        return [f"sf_ask(&sf_next_{n}, sf_one_{n});" for n in self._cursors(field)]

    def before_eight(self, field: str) -> list[str]:
        """The ``sf_ask`` calls before eight columns of ``field`` copied: for the fields read
        in place (their transpose asks for ``field``'s own part: ``own``)."""
        own = self.own(field)
        return [f"sf_ask(&sf_next_{n}, sf_eight_{n});" for n in self._cursors(field) if n != own]

    def own(self, field: str) -> int:
        """The number ``n`` of the buffered ``field``'s own cursor ``sf_next_<n>``.

        Raises:
            ValueError: ``field`` is not among ``ahead``.
        """
        for n, a in enumerate(self.ahead):
            if a.name == field:
                return n
        raise ValueError(f"no cursor asks for the columns of {field!r}")

    def _cursors(self, field: str) -> list[int]:
        """The numbers ``n`` of the cursors ``sf_next_<n>`` a piece of ``field`` asks of."""
        return [
            n
            for n, a in enumerate(self.ahead)
            if a.name == field or a.name not in self.buffered
        ]
