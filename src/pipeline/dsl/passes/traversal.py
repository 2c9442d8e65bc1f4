"""Generic helpers over IR expressions: children, rebuilding, substitution."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

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
    Scan,
    UnaryOp,
)
from pipeline.dsl.regions import Bound

__all__ = ["children", "contains_scan", "map_children", "substitute", "walk"]


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``expr``."""
    match expr:
        case UnaryOp(operand=operand):
            return (operand,)
        case BinaryOp(left=left, right=right):
            return (left, right)
        case Call(args=args) | OperatorCall(args=args) | Scan(args=args):
            return args
        case Cast(value=value):
            return (value,)
        case ConcatWhere(inside=inside, outside=outside):
            return (inside, outside)
    return ()


def map_children(expr: Expr, function: Callable[[Expr], Expr]) -> Expr:
    """``expr`` with ``function`` applied to each direct sub-expression."""
    match expr:
        case UnaryOp(operand=operand):
            return attrs.evolve(expr, operand=function(operand))
        case BinaryOp(left=left, right=right):
            return attrs.evolve(expr, left=function(left), right=function(right))
        case Call(args=args) | OperatorCall(args=args) | Scan(args=args):
            return attrs.evolve(expr, args=tuple(function(a) for a in args))
        case Cast(value=value):
            return attrs.evolve(expr, value=function(value))
        case ConcatWhere(inside=inside, outside=outside):
            return attrs.evolve(expr, inside=function(inside), outside=function(outside))
    return expr


def walk(expr: Expr) -> Iterator[Expr]:
    """``expr`` and all its sub-expressions, parents first."""
    yield expr
    for child in children(expr):
        yield from walk(child)


def substitute(expr: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """Replace reads of the names in ``mapping``; a shifted read shifts the replacement.

    Replacements must be ``Ref`` or ``Literal`` nodes (reads or constants), which is what the
    inliner binds parameters and locals to.
    """
    if isinstance(expr, ConcatWhere) and expr.region.params & set(mapping):
        bounds = {
            name: Bound(0, value.name) if isinstance(value, Ref) else Bound(int(value.value))
            for name, value in mapping.items()
            if name in expr.region.params and isinstance(value, Ref | Literal)
        }
        expr = attrs.evolve(expr, region=expr.region.renamed(bounds))
    if isinstance(expr, Ref) and expr.name in mapping:
        replacement = mapping[expr.name]
        if isinstance(replacement, Ref):
            # The read keeps its own location: errors about it point where it is written.
            return attrs.evolve(replacement.shifted(expr.offsets), loc=expr.loc or replacement.loc)
        assert isinstance(replacement, Literal)
        return replacement
    return map_children(expr, lambda child: substitute(child, mapping))


def contains_scan(expr: Expr, definitions: Mapping[str, Expr] | None = None) -> bool:
    """Whether ``expr`` computes a scan, directly or through the locals in ``definitions``."""
    definitions = definitions or {}
    for node in walk(expr):
        if isinstance(node, Scan):
            return True
        if (
            isinstance(node, Ref)
            and node.name in definitions
            and contains_scan(definitions[node.name], definitions)
        ):
            return True
    return False
