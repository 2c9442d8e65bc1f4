"""Shifting an IR expression: ``(a + b)(I + 1)`` reads ``a(I + 1) + b(I + 1)``."""

from __future__ import annotations

import attrs

from pipeline.dsl.ir.nodes import (
    BinaryOp,
    Call,
    Cast,
    ConcatWhere,
    Expr,
    Literal,
    OperatorCall,
    Ref,
    UnaryOp,
)

__all__ = ["shift_expr"]


def shift_expr(expr: Expr, offsets: tuple[tuple[str, int], ...]) -> Expr:
    """``expr`` read at ``offsets``: every ``Ref`` inside moves (stencils commute with shifts).

    Raises:
        TypeError: ``expr`` is not an IR expression the parser makes before typing.
    """
    if not offsets:
        return expr
    match expr:
        case Ref():
            return expr.shifted(offsets)
        case Literal():
            return expr
        case UnaryOp(operand=operand):
            return attrs.evolve(expr, operand=shift_expr(operand, offsets))
        case BinaryOp(left=left, right=right):
            return attrs.evolve(
                expr, left=shift_expr(left, offsets), right=shift_expr(right, offsets)
            )
        case Call(args=args) | OperatorCall(args=args):
            return attrs.evolve(expr, args=tuple(shift_expr(a, offsets) for a in args))
        case Cast(value=value):
            return attrs.evolve(expr, value=shift_expr(value, offsets))
        case ConcatWhere(region=region, inside=inside, outside=outside):
            # Read at x + offset: the condition holds there when x is in the region moved back.
            return attrs.evolve(
                expr,
                region=region.shifted({d: -v for d, v in offsets}),
                inside=shift_expr(inside, offsets),
                outside=shift_expr(outside, offsets),
            )
    raise TypeError(f"not an IR expression: {expr!r}")
