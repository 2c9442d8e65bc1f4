"""Constant folding: evaluate operations whose operands are all Python literals.

Only weak literals are folded, with Python arithmetic where it agrees with NumPy's; anything
that would raise or leave the finite range is left for run time.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import attrs

from pipeline.dsl.ir.nodes import Assign, BinaryOp, Call, Expr, Literal, ProgramIR, Stencil, UnaryOp
from pipeline.dsl.passes.traversal import map_children
from pipeline.dsl.passes.typing_ import refill_types

__all__ = ["fold_constants"]

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "&": operator.and_,
    "|": operator.or_,
}
_UNARY: dict[str, Callable[[Any], Any]] = {"-": operator.neg, "+": operator.pos, "~": operator.not_}
_MATH: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "arcsin": math.asin,
    "arccos": math.acos,
    "arctan": math.atan,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "tanh": math.tanh,
    "arcsinh": math.asinh,
    "arccosh": math.acosh,
    "arctanh": math.atanh,
    "cbrt": math.cbrt,
    "gamma": math.gamma,
    "abs": abs,
    "minimum": min,
    "maximum": max,
}


def _fold(expr: Expr) -> Expr:
    expr = map_children(expr, _fold)
    values: list[Any]
    match expr:
        case UnaryOp(op=op, operand=Literal(value=value)):
            if op in "-+" and isinstance(value, bool):
                return expr
            return _literal(expr, _UNARY[op], [value])
        case BinaryOp(op=op, left=Literal(value=a), right=Literal(value=b)):
            if op == "**" and isinstance(a, int) and isinstance(b, int) and b < 0:
                return expr  # NumPy raises for integer ** negative; keep the run-time behaviour
            if op in "&|" and not (isinstance(a, bool) and isinstance(b, bool)):
                return expr
            return _literal(expr, _BINARY[op], [a, b])
        case Call(function=function, args=args) if function in _MATH and all(
            isinstance(a, Literal) for a in args
        ):
            values = [a.value for a in args]  # type: ignore[union-attr]
            if any(isinstance(v, bool) for v in values):
                return expr
            # Like NumPy: a float among the arguments makes every argument a float
            # (Python's max(3, 2.5) would return the int 3).
            if function not in {"abs", "minimum", "maximum"} or any(
                isinstance(v, float) for v in values
            ):
                values = [float(v) for v in values]
            return _literal(expr, _MATH[function], values)
    return expr


def _literal(expr: Expr, function: Callable[..., Any], values: list[Any]) -> Expr:
    if expr.type is None or not getattr(expr.type, "weak", False):
        return expr
    try:
        result = function(*values)
    except (ArithmeticError, ValueError):
        return expr
    if not isinstance(result, bool | int | float):
        return expr  # e.g. a negative number to a fractional power is complex in Python
    if isinstance(result, float) and not math.isfinite(result):
        return expr
    if isinstance(result, int) and not isinstance(result, bool) and abs(result) >= 2**63:
        return expr
    return Literal(result, loc=expr.loc)


def _fold_stencil(stencil: Stencil) -> Stencil:
    body = tuple(Assign(a.targets, _fold(a.value), loc=a.loc) for a in stencil.body)
    return attrs.evolve(stencil, body=body, results=tuple(_fold(r) for r in stencil.results))


def fold_constants(program: ProgramIR) -> ProgramIR:
    """The constant-folding pass (a ``Step[ProgramIR, ProgramIR]``)."""
    folded = attrs.evolve(program, stencils=tuple(_fold_stencil(s) for s in program.stencils))
    return refill_types(folded)
