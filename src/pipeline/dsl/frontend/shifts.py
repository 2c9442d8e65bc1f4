"""Shifting an IR expression: ``(a + b)(I + 1)`` reads ``a(I + 1) + b(I + 1)``."""

from __future__ import annotations

import attrs

from pipeline.dsl.ir.nodes import ConcatWhere, Expr, Ref, Shift
from pipeline.dsl.passes.traversal import map_children
from pipeline.dsl.types import Offset

__all__ = ["shift_expr"]


def shift_expr(expr: Expr, offsets: tuple[Offset, ...]) -> Expr:
    """``expr`` read at ``offsets``: every ``Ref`` inside moves by the offsets' array amounts
    (stencils commute with shifts), and a ``Shift`` around it keeps the offsets as written
    for type inference (which dimensions the value must have, which it gets)."""
    if not offsets:
        return expr
    moves = tuple((o.dimension.name, o.value) for o in offsets if o.value != 0)
    return Shift(_moved(expr, moves), offsets, loc=expr.loc)


def _moved(expr: Expr, moves: tuple[tuple[str, int], ...]) -> Expr:
    if not moves:
        return expr
    if isinstance(expr, Ref):
        return expr.shifted(moves)
    shifted = map_children(expr, lambda child: _moved(child, moves))
    if isinstance(shifted, ConcatWhere):
        # Read at x + offset: the condition holds there when x is in the region moved back.
        return attrs.evolve(shifted, region=shifted.region.shifted({d: -v for d, v in moves}))
    return shifted
