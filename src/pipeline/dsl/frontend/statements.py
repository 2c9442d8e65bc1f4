"""The statements of a DSL body -> assignments of untyped IR, and the values it returns.

An ``if`` on a scalar becomes a choice per value: each local either branch assigns is
bound, after the ``if``, to ``SCALAR_CHOICE(cond, then-value, else-value)``. An ``if`` with a
``return`` anywhere in it continues each branch with the rest of the statements (which hold
the rest of the enclosing blocks too), so that both branches end where the function does,
and each returned value is such a choice. Statements after a ``return`` are unreachable and,
as in Python, not run.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from pipeline.dsl.builtins import SCALAR_CHOICE
from pipeline.dsl.errors import DSLSyntaxError, DSLTypeError
from pipeline.dsl.frontend.expressions import ExpressionParser, not_a_tuple
from pipeline.dsl.frontend.scope import Scope
from pipeline.dsl.frontend.tuples import (
    Names,
    Values,
    describe_shape,
    leaves,
    name_leaves,
    nest,
    shape,
)
from pipeline.dsl.ir.nodes import Assign, Call, ConcatWhere, Expr, Ref, SourceLocation
from pipeline.dsl.passes.traversal import substitute, walk
from pipeline.dsl.types import Named

__all__ = ["parse_block", "without_docstring"]

_UNSUPPORTED_STATEMENTS: dict[type[ast.stmt], str] = {
    ast.For: "`for` loops are not supported in a field operator; write the computation on "
    "whole fields, with shifts like f(I + 1)",
    ast.While: "`while` loops are not supported in a field operator",
    ast.With: "`with` is not supported in a field operator",
    ast.Try: "`try` is not supported in a field operator",
    ast.AugAssign: "augmented assignment (+=, ...) is not supported; write x = x + ...",
}


def without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    """A function body without its docstring."""
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1:]
    return body


def parse_block(
    statements: list[ast.stmt], parser: ExpressionParser, body: list[Assign]
) -> Values | None:
    """Append the assignments of ``statements`` to ``body``; the returned values (a single
    value as a tuple of one), if the block returns.

    Raises:
        DSLSyntaxError: a statement the DSL does not support.
        DSLTypeError: an unpacking that does not fit its value, branches that disagree.
    """
    source = parser.source
    for index, statement in enumerate(statements):
        match statement:
            case ast.Assign(targets=[target], value=value):
                loc = source.location(statement)
                _assign(parser, target, parser.structured(value), body, loc)
            case ast.AnnAssign(target=ast.Name(id=name), value=value) if value is not None:
                expr = parser.expr(value)
                targets = parser.scope.bind((name,))
                body.append(Assign(targets, expr, loc=source.location(statement)))
            case ast.Assign():
                raise source.error(
                    DSLSyntaxError, "chained assignment (a = b = ...) is not supported", statement
                )
            case ast.Return(value=value) if value is not None:
                result = parser.structured(value)
                return result if isinstance(result, tuple) else (result,)
            case ast.If() if parser.in_scan:
                raise source.error(
                    DSLSyntaxError,
                    "a scan operator's values are per point: `if` is not supported in it; "
                    "choose with where(c, a, b)",
                    statement,
                )
            case ast.If(test=test, body=then, orelse=otherwise):
                rest = statements[index + 1 :]
                if _has_return(then) or _has_return(otherwise):
                    then, otherwise, rest = then + rest, otherwise + rest, []
                condition = parser.expr(test)
                return _parse_if(statement, condition, (then, otherwise), rest, parser, body)
            case ast.Pass():
                continue
            case _:
                message = _UNSUPPORTED_STATEMENTS.get(
                    type(statement),
                    f"{type(statement).__name__} statements are not supported in a field operator",
                )
                raise source.error(DSLSyntaxError, message, statement)
    return None


def _assign(
    parser: ExpressionParser,
    target: ast.expr,
    value: Expr | Values,
    body: list[Assign],
    loc: SourceLocation | None,
) -> None:
    """Bind ``target`` to ``value`` as Python does: a name to a whole value (a tuple kept
    whole, one local per leaf), a tuple of targets item by item, every item as it was
    before the statement (``a, b = b, a`` swaps).

    Raises:
        DSLTypeError: a tuple of targets for a single value, or for a tuple of another length.
        DSLSyntaxError: a target that is not a name or a tuple of them.
    """
    pairs: list[tuple[str, Expr]] = []
    _unpack(parser, target, value, pairs)
    values = [item for _, item in pairs]
    for index, (name, _) in enumerate(pairs):
        (bound,) = parser.scope.bind((name,))
        later = values[index + 1 :]
        if any(_reads(item, bound) for item in later):
            # Python evaluates the whole right side first: keep the value this binding
            # overwrites for the items still to bind.
            saved = f"{bound}__old{parser.scope.fresh()}"
            body.append(Assign((saved,), Ref(bound, loc=loc), loc=loc))
            renamed = {bound: Ref(saved, loc=loc)}
            values[index + 1 :] = [substitute(item, renamed) for item in later]
        body.append(Assign((bound,), values[index], loc=loc))


def _reads(value: Expr, name: str) -> bool:
    """Whether ``value`` reads the local ``name`` (in an index condition too)."""
    return any(
        (isinstance(node, Ref) and node.name == name)
        or (isinstance(node, ConcatWhere) and name in node.region.params)
        for node in walk(value)
    )


def _unpack(
    parser: ExpressionParser,
    target: ast.expr,
    value: Expr | Values,
    pairs: list[tuple[str, Expr]],
) -> None:
    """Append to ``pairs`` each local ``target`` binds and its value, in order."""
    source = parser.source
    match target:
        case ast.Name(id=name) if isinstance(value, tuple):
            names = parser.scope.tuple_local(name, value)
            pairs += zip(name_leaves(names), leaves(value), strict=True)
        case ast.Name(id=name):
            assert not isinstance(value, tuple)
            parser.scope.single_local(name)
            pairs.append((name, value))
        case ast.Tuple(elts=targets) if not isinstance(value, tuple):
            raise source.error(
                DSLTypeError,
                f"one value unpacked into {len(targets)} name(s); assign it to one name",
                target,
            )
        case ast.Tuple(elts=targets):
            assert isinstance(value, tuple)
            if isinstance(value, Named) and not value.record.is_tuple:
                raise source.error(DSLTypeError, not_a_tuple(value, "the value"), target)
            if len(targets) != len(value):
                inner = any(isinstance(item, tuple) for item in value)
                raise source.error(
                    DSLTypeError,
                    f"{len(value)} value(s) unpacked into {len(targets)} name(s)"
                    + ("; an inner tuple counts as one value, as in Python" if inner else ""),
                    target,
                )
            for element, part in zip(targets, value, strict=True):
                _unpack(parser, element, part, pairs)
        case _:
            raise source.error(
                DSLSyntaxError,
                "only assignments to plain names are supported (x = ..., or a, b = op(...))",
                target,
            )


def _has_return(statements: list[ast.stmt]) -> bool:
    """Whether a ``return`` is among ``statements``, or in an ``if`` among them."""
    return any(isinstance(node, ast.Return) for s in statements for node in ast.walk(s))


def _parse_if(
    statement: ast.If,
    condition: Expr,
    branches: tuple[list[ast.stmt], list[ast.stmt]],
    rest: list[ast.stmt],
    parser: ExpressionParser,
    body: list[Assign],
) -> Values | None:
    """Parse both ``branches`` of ``statement`` from the same bindings, merge what they bind
    or return, then parse ``rest``."""
    scope = parser.scope
    outer = scope.save()
    results: list[Values | None] = []
    bound: list[dict[str, str]] = []
    tuples: list[dict[str, Names]] = []
    unbound: dict[str, int] = {}
    mixed: dict[str, int] = {}
    scope.branches += 1
    for block in branches:
        scope.restore(outer)
        results.append(parse_block(block, parser, body))
        bound.append(scope.bound_names())
        tuples.append(dict(scope.tuples))
        unbound.update(scope.unbound)
        mixed.update(scope.mixed)
    scope.branches -= 1
    scope.restore(outer)
    scope.unbound = unbound
    scope.mixed = mixed
    scope.tuples = _merge_tuples(
        statement, (tuples[0], tuples[1]), (bound[0], bound[1]), scope
    )
    if results[0] is not None and results[1] is not None:
        return _merge_results(statement, condition, (results[0], results[1]), parser)
    if results[0] is not None or results[1] is not None:
        path = "false" if results[1] is None else "true"
        raise parser.error(
            DSLSyntaxError,
            f"when the condition of this `if` is {path}, {parser.names.function.__name__!r} "
            "reaches its end without a return; return a value on that path too",
            statement,
        )
    _merge_locals(statement, condition, (bound[0], bound[1]), outer.renames, parser, body)
    return parse_block(rest, parser, body)


def _merge_tuples(
    statement: ast.If,
    tuples: tuple[dict[str, Names], dict[str, Names]],
    bound: tuple[dict[str, str], dict[str, str]],
    scope: Scope,
) -> dict[str, Names]:
    """The tuple-valued names after an ``if``. A name bound on both paths with different
    shapes (a tuple on one) has no one shape after it: only a read of it is an error
    (``Scope.mixed``). A name bound on one path only keeps that path's shape, and a read of
    it is the error of a local assigned in one branch."""
    merged = {}
    for name in set(tuples[0]) | set(tuples[1]):
        on_paths = [name in t or name in b for t, b in zip(tuples, bound, strict=True)]
        if tuples[0].get(name) == tuples[1].get(name) or not all(on_paths):
            merged[name] = tuples[0].get(name) or tuples[1][name]
        else:
            scope.mixed[name] = scope.source.location(statement).line
    return merged


def _merge_results(
    statement: ast.If,
    condition: Expr,
    results: tuple[Values, Values],
    parser: ExpressionParser,
) -> Values:
    """The values an ``if`` returns: a choice per value between its branches' results."""
    loc = parser.source.location(statement.test)
    then_leaves, else_leaves = leaves(results[0]), leaves(results[1])
    if len(then_leaves) != len(else_leaves):
        raise parser.error(
            DSLTypeError,
            f"the branches of this `if` return {len(then_leaves)} and "
            f"{len(else_leaves)} value(s)",
            statement,
        )
    nesting = shape(results[0])
    if shape(results[1]) != nesting:
        raise parser.error(
            DSLTypeError,
            f"the branches of this `if` return {describe_shape(nesting)} and "
            f"{describe_shape(shape(results[1]))}; nest both alike",
            statement,
        )
    assert isinstance(nesting, tuple)
    return nest(
        nesting,
        [
            Call(SCALAR_CHOICE, (condition, a, b), loc=loc)
            for a, b in zip(then_leaves, else_leaves, strict=True)
        ],
    )


def _merge_locals(
    statement: ast.If,
    condition: Expr,
    bound: tuple[dict[str, str], dict[str, str]],
    outer_renames: Mapping[str, str],
    parser: ExpressionParser,
    body: list[Assign],
) -> None:
    """After an ``if`` that does not return: bind each local a branch assigned to the choice
    between the branches' values (one that only one branch assigned is unbound after it)."""
    scope = parser.scope
    loc = parser.source.location(statement.test)
    for name in sorted(set(bound[0]) | set(bound[1])):
        known = name in scope.locals or name in parser.names.params
        before = outer_renames.get(name, name) if known else None
        choices = [names.get(name, before) for names in bound]
        if choices[0] == choices[1]:
            continue  # neither branch assigned it
        if None in choices:
            scope.unbound[name] = scope.source.location(statement).line
            continue
        value = Call(SCALAR_CHOICE, tuple([condition, *(Ref(c) for c in choices)]), loc=loc)  # type: ignore[arg-type]
        body.append(Assign(scope.bind((name,)), value, loc=loc))
