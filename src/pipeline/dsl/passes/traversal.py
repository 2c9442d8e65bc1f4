"""Generic helpers over IR expressions: children, rebuilding, substitution."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import attrs

from pipeline.dsl.ir import nodes as ir
from pipeline.dsl.regions import Bound

__all__ = ["children", "contains_scan", "map_children", "substitute", "walk"]


def children(expr: ir.Expr) -> tuple[ir.Expr, ...]:
    """The direct sub-expressions of ``expr``."""
    match expr:
        case ir.UnaryOp(operand=operand):
            return (operand,)
        case ir.BinaryOp(left=left, right=right):
            return (left, right)
        case ir.Call(args=args) | ir.OperatorCall(args=args) | ir.Scan(args=args):
            return args
        case ir.Cast(value=value) | ir.Shift(value=value):
            return (value,)
        case ir.ConcatWhere(inside=inside, outside=outside):
            return (inside, outside)
    return ()


def map_children(expr: ir.Expr, function: Callable[[ir.Expr], ir.Expr]) -> ir.Expr:
    """``expr`` with ``function`` applied to each direct sub-expression."""
    match expr:
        case ir.UnaryOp(operand=operand):
            return attrs.evolve(expr, operand=function(operand))
        case ir.BinaryOp(left=left, right=right):
            return attrs.evolve(expr, left=function(left), right=function(right))
        case ir.Call(args=args) | ir.OperatorCall(args=args) | ir.Scan(args=args):
            return attrs.evolve(expr, args=tuple(function(a) for a in args))
        case ir.Cast(value=value) | ir.Shift(value=value):
            return attrs.evolve(expr, value=function(value))
        case ir.ConcatWhere(inside=inside, outside=outside):
            return attrs.evolve(expr, inside=function(inside), outside=function(outside))
    return expr


def walk(expr: ir.Expr) -> Iterator[ir.Expr]:
    """``expr`` and all its sub-expressions, parents first."""
    yield expr
    for child in children(expr):
        yield from walk(child)


def substitute(expr: ir.Expr, mapping: Mapping[str, ir.Expr]) -> ir.Expr:
    """Replace reads of the names in ``mapping``; a shifted read shifts the replacement.

    Replacements must be ``Ref`` or ``Literal`` nodes (reads or constants), which is what the
    inliner binds parameters and locals to.
    """
    if isinstance(expr, ir.ConcatWhere) and expr.region.params & set(mapping):
        bounds = {
            name: Bound(0, value.name) if isinstance(value, ir.Ref) else Bound(int(value.value))
            for name, value in mapping.items()
            if name in expr.region.params and isinstance(value, ir.Ref | ir.Literal)
        }
        expr = attrs.evolve(expr, region=expr.region.renamed(bounds))
    if isinstance(expr, ir.Ref) and expr.name in mapping:
        replacement = mapping[expr.name]
        if isinstance(replacement, ir.Ref):
            # The read keeps its own location: errors about it point where it is written.
            return attrs.evolve(replacement.shifted(expr.offsets), loc=expr.loc or replacement.loc)
        assert isinstance(replacement, ir.Literal)
        return replacement
    return map_children(expr, lambda child: substitute(child, mapping))


def contains_scan(expr: ir.Expr, definitions: Mapping[str, ir.Expr] | None = None) -> bool:
    """Whether ``expr`` computes a scan, directly or through the locals in ``definitions``."""
    definitions = definitions or {}
    for node in walk(expr):
        if isinstance(node, ir.Scan):
            return True
        if (
            isinstance(node, ir.Ref)
            and node.name in definitions
            and contains_scan(definitions[node.name], definitions)
        ):
            return True
    return False
