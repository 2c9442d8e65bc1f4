"""Inlining: replace every call of a field operator by its body.

Arguments that are not plain reads are bound to fresh locals first, so no expression is
duplicated; the callee's locals get fresh names prefixed with its name. The result is typed
again, so broadcasting arguments give exact types.
"""

from __future__ import annotations

import itertools

import attrs

from pipeline.dsl.ir.nodes import Assign, Expr, Literal, OperatorCall, ProgramIR, Ref, Stencil
from pipeline.dsl.passes.traversal import map_children, substitute
from pipeline.dsl.passes.typing_ import refill_types

__all__ = ["inline_operators"]


class _Inliner:
    def __init__(self, reserved: set[str]) -> None:
        self.used = set(reserved)
        self.statements: list[Assign] = []

    def fresh(self, base: str) -> str:
        if base not in self.used:
            self.used.add(base)
            return base
        for n in itertools.count(1):
            name = f"{base}_{n}"
            if name not in self.used:
                self.used.add(name)
                return name
        raise AssertionError("unreachable")

    def expr(self, expr: Expr) -> Expr:
        if isinstance(expr, OperatorCall):
            results = self.inline(expr, prefix=f"{expr.operator.name}_")
            assert len(results) == 1, "the type pass rejects tuple calls in expressions"
            return results[0]
        return map_children(expr, self.expr)

    def bind(self, name: str, value: Expr, assign: Assign | None = None) -> Expr:
        """A read or constant standing for ``value``: itself if it is one, else a new local."""
        if isinstance(value, Literal | Ref):
            return value
        local = self.fresh(name)
        self.statements.append(Assign((local,), value, loc=assign.loc if assign else value.loc))
        return Ref(local, type=value.type, loc=value.loc)

    def inline(self, call: OperatorCall, prefix: str) -> tuple[Expr, ...]:
        operator = call.operator
        mapping: dict[str, Expr] = {}
        for param, arg in zip(operator.params, call.args, strict=True):
            mapping[param.name] = self.bind(prefix + param.name, self.expr(arg))
        for assign in operator.body:
            value = substitute(assign.value, mapping)
            if len(assign.targets) == 1:
                target = assign.targets[0]
                mapping[target] = self.bind(prefix + target, self.expr(value), assign)
            else:
                assert isinstance(value, OperatorCall)
                results = self.inline(value, prefix=f"{prefix}{value.operator.name}_")
                for target, result in zip(assign.targets, results, strict=True):
                    mapping[target] = self.bind(prefix + target, result, assign)
        return tuple(self.expr(substitute(r, mapping)) for r in operator.results)


def _inline_stencil(stencil: Stencil, reserved: set[str]) -> Stencil:
    inliner = _Inliner(reserved)
    for assign in stencil.body:
        inliner.statements.append(attrs.evolve(assign, value=inliner.expr(assign.value)))
    results: list[Expr] = []
    for result in stencil.results:
        if isinstance(result, OperatorCall):
            # The stencil's own operator: its locals keep their names where they can.
            results.extend(inliner.inline(result, prefix=""))
        else:
            results.append(inliner.expr(result))
    return attrs.evolve(stencil, body=tuple(inliner.statements), results=tuple(results))


def inline_operators(program: ProgramIR) -> ProgramIR:
    """The inlining pass (a ``Step[ProgramIR, ProgramIR]``): no ``OperatorCall`` remains."""
    reserved = {p.name for p in program.params}
    stencils = tuple(_inline_stencil(s, reserved) for s in program.stencils)
    return refill_types(attrs.evolve(program, stencils=stencils))
