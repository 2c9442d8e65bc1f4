"""How a scan's block asks for the columns the next block reads (``backends.c.sweeps``).

A block's first reads would wait for memory, and the memory would idle while the block
computes. So where the copy-in goes in chunks (``sweep_columns.copy_in_chunk``), every piece
of a block's work asks for a share of the columns the next block reads into L2 (those that
follow the block's, for a thread whose next block comes next in memory): each column copied
in, each step of a later pass, each column copied out (``ahead_share``, ``prefetch_share``,
``sf_prefetch_columns``), the parts in proportion to their time (``AHEAD_WEIGHTS``). The
columns are the buffered fields' and those of fields read in place along the axis
(``sweep_fields.fields_ahead``). The C written here uses the sweep's names: ``p_<name>``,
``sf_levels`` (the domain's levels) and ``sf_ahead`` (whether the block asks at all, declared
by ``sweeps``).

Measured on the 2-core Zen 4: prefetching the next block from one phase of a block, or in
bursts, slowed the sweeps every time; spread this way, with the copy-in in L1-sized chunks,
tridiagonal's 256x256x64 runs in 5.9-7.0 ms in the harness against 7.1-7.5 with the
whole-block copy-in; in a driver, the chunks without the prefetches took 8.2 ms against 5.6
(docs/notes/2026-12-05-scans-chunks-and-the-next-block.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

__all__ = ["AHEAD_C", "AHEAD_WEIGHTS", "Ahead", "ahead_share", "prefetch_share"]

#: The next block's columns asked for ahead by the first pass's copy-in, the later passes'
#: steps and the copy-out, in these proportions: the block's time in each (tridiagonal on
#: 256x256x64, in cache: 73, 13 and 14 %).
AHEAD_WEIGHTS = (6, 1, 1)

#: ``sf_prefetch_columns``.
AHEAD_C = r"""
/* Columns [first, last) of those from `ahead`, `stride` bytes apart, asked for into L2 a line
   at a time, `bytes` of each. Addresses are formed as integers: past the array, a prefetch
   does nothing. */
static inline void sf_prefetch_columns(uintptr_t ahead, int64_t stride, int64_t bytes,
                                       int64_t first, int64_t last) {
    for (int64_t w = first; w < last; ++w)
        for (int64_t offset = 0; offset < bytes + 63; offset += 64)
            __builtin_prefetch((const void*)(ahead + (uintptr_t)(w * stride + offset)), 0, 2);
}
"""


@attrs.frozen
class Ahead:
    """Columns after the block's that the next block reads from memory, as this block asks
    for them into L2 (``prefetch_share``).

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


def prefetch_share(ahead: Sequence[Ahead], first: str, last: str, indent: str) -> list[str]:
    """Columns ``[first, last)`` (C) of each of ``ahead`` asked for into L2
    (``sf_prefetch_columns``) where ``sf_ahead``: a share of the next block's columns, so that
    its reads are spread over this block's work instead of waiting for memory at its
    start."""
    lines = [
        f"{indent}if (sf_ahead) {{",
        f"{indent}    const int64_t pf_first = {first}, pf_last = {last};",
    ]
    lines += [
        f"{indent}    sf_prefetch_columns((uintptr_t)p_{a.name} + (uintptr_t)({a.start}) * "
        f"sizeof({a.ctype}), {a.stride} * "
        f"(int64_t)sizeof({a.ctype}), ((int64_t)sf_levels + {a.extra}) * "
        f"(int64_t)sizeof({a.ctype}), pf_first, pf_last);"
        for a in ahead
    ]
    return [*lines, f"{indent}}}"]


def ahead_share(
    weights: Sequence[int], part: int, count: str, done: str, width: int, units: str
) -> tuple[str, str]:
    """The first and last (C) of the ``count`` (C) columns after the block's that ``width``
    pieces of ``part`` of the block's work ask for, after ``done`` (C) of that part's
    ``units`` (C) pieces: the parts take the columns in turn, each its ``weights`` share,
    spread evenly over its pieces. Whole columns, each asked for once: the shares of one
    part's pieces meet end to end, and where one part's end the next one's begin."""
    before, total = sum(weights[:part]), sum(weights)

    def column(pieces: str) -> str:
        return (
            f"({count}) * ({before} * ({units}) + ({pieces}) * {weights[part]}) / "
            f"({total} * ({units}))"
        )

    return column(done), column(f"{done} + {width}")
