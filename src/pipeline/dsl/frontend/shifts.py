"""Shifting an IR expression: ``(a + b)(I + 1)`` reads ``a(I + 1) + b(I + 1)``."""

from __future__ import annotations

import attrs

from pipeline.dsl.ir.nodes import ConcatWhere, Expr, Ref
from pipeline.dsl.passes.traversal import map_children

__all__ = ["shift_expr"]


def shift_expr(expr: Expr, offsets: tuple[tuple[str, int], ...]) -> Expr:
    """``expr`` read at ``offsets``: every ``Ref`` inside moves (stencils commute with shifts)."""
    if not offsets:
        return expr
    if isinstance(expr, Ref):
        return expr.shifted(offsets)
    shifted = map_children(expr, lambda child: shift_expr(child, offsets))
    if isinstance(shifted, ConcatWhere):
        # Read at x + offset: the condition holds there when x is in the region moved back.
        return attrs.evolve(shifted, region=shifted.region.shifted({d: -v for d, v in offsets}))
    return shifted
