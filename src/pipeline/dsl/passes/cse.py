"""Common sub-expression elimination within each stencil.

A non-trivial expression that occurs more than once (structurally equal, types included) is
computed once into a new local ``_cseN``, placed before its first use. The largest repeated
expression is taken first, so nested repeats collapse into one local.
"""

from __future__ import annotations

import itertools
from collections import Counter

import attrs

from pipeline.dsl.ir.nodes import Assign, Expr, Literal, ProgramIR, Ref, Stencil
from pipeline.dsl.passes.traversal import map_children, walk

__all__ = ["eliminate_common_subexpressions"]


def _size(expr: Expr) -> int:
    return sum(1 for _ in walk(expr))


def _replace(expr: Expr, target: Expr, replacement: Expr) -> Expr:
    if expr == target:
        return replacement
    return map_children(expr, lambda child: _replace(child, target, replacement))


def _eliminate(stencil: Stencil, used: set[str]) -> Stencil:
    body = list(stencil.body)
    results = list(stencil.results)
    counter = itertools.count()
    while True:
        exprs = [a.value for a in body] + results
        counts = Counter(e for top in exprs for e in walk(top) if not isinstance(e, Ref | Literal))
        repeated = [e for e, n in counts.items() if n > 1]
        if not repeated:
            break
        target = max(repeated, key=_size)
        name = next(f"_cse{n}" for n in counter if f"_cse{n}" not in used)
        used.add(name)
        ref = Ref(name, type=target.type, loc=target.loc)
        first = next(
            (i for i, a in enumerate(body) if any(e == target for e in walk(a.value))), len(body)
        )
        body = [attrs.evolve(a, value=_replace(a.value, target, ref)) for a in body]
        body.insert(first, Assign((name,), target, loc=target.loc))
        results = [_replace(r, target, ref) for r in results]
    return attrs.evolve(stencil, body=tuple(body), results=tuple(results))


def eliminate_common_subexpressions(program: ProgramIR) -> ProgramIR:
    """The CSE pass (a ``Step[ProgramIR, ProgramIR]``)."""
    used = {p.name for p in program.params}
    for stencil in program.stencils:
        used.update(t for a in stencil.body for t in a.targets)
    return attrs.evolve(program, stencils=tuple(_eliminate(s, used) for s in program.stencils))
