"""How wide the blocks of a scan sweep are (``backends.c.sweeps``): the points of the vector
dimension that each step of a pass runs, chosen for the rows the stencil reads a step and
the L1 data cache, and how far apart a block buffer's rows lie. ADR 0014 records the
measurements."""

from __future__ import annotations

from backends.loops import plan_sweeps
from pipeline.dsl.ir.nodes import Expr, ProgramIR, Ref, Stencil
from pipeline.dsl.passes.traversal import walk
from pipeline.dsl.types import FieldType

__all__ = ["BLOCKS", "ROW_PAD", "choose_block", "rows_read"]

#: Points of the vector dimension per block, by default (``CTranslation.sweep_block=None``)
#: the largest of these whose rows fit half the L1 data cache: each step of a pass touches
#: one cache line of every row it reads per point of the block, for the 8 steps that line
#: serves. More points give each step more independent chains (the carry update is a chain
#: of dependent operations, a division in a tridiagonal solve); fewer keep the rows in L1.
#: Measured on the 2-core Zen 4 (32 KiB L1d; 256x256x64, medians of 21 calls): the
#: tridiagonal solve (4 rows a step) took 14.6 ms with 16 points, 13.7 with 32, 12.4 with
#: 48, 9.7-9.8 with 64, 10.9 with 128; the vertical advection (6 rows) 18.1-18.2 with 16,
#: 17.5-18.1 with 32, 20.9-22.5 with 64.
BLOCKS = (64, 32, 16)

#: Points added to each row of a block's buffers. Rows of 16, 32 or 64 doubles are 128 to
#: 512 bytes apart, so the rows a column is copied into map to a quarter or less of the L1
#: sets and evict each other; a row one cache line longer spreads them over all sets.
#: Measured on the 2-core Zen 4 in a hand-written copy of the tridiagonal sweep (256x256x64,
#: 32 points a block, medians of 15 beside the copy kernel): 11.4 ms with rows of 32, 9.5
#: with 40, 9.6 with 36.
ROW_PAD = 8


def choose_block(rows: int, l1_bytes: int) -> int:
    """The sweep block for a stencil whose passes read ``rows`` rows a step."""
    for block in BLOCKS:
        if rows * block * 64 <= l1_bytes // 2:
            return block
    return BLOCKS[-1]


def rows_read(program: ProgramIR, stencil: Stencil) -> int:
    """How many rows along the scan axis a step of the stencil reads: distinct field reads
    apart from their offset along the axis (through locals)."""
    plan = plan_sweeps(stencil)
    assert plan is not None
    definitions = {a.targets[0]: a.value for a in stencil.body}
    rows: set[tuple[str, tuple[tuple[str, int], ...]]] = set()
    seen: set[str] = set()
    pending: list[Expr] = [*stencil.results]
    pending += [arg for _, keys in plan.phases for key in keys for arg in key[1]]
    while pending:
        for node in walk(pending.pop()):
            if not isinstance(node, Ref):
                continue
            if node.name in definitions:
                if node.name not in seen:
                    seen.add(node.name)
                    pending.append(definitions[node.name])
            elif isinstance(program.param(node.name).type, FieldType):
                rows.add((node.name, tuple(o for o in node.offsets if o[0] != plan.axis)))
    return max(1, len(rows))
