"""Array origins: a program called with located arrays, read in its outputs' element indices.

A located array's element 0 lies at grid index ``o`` along a dimension (ADR 0026). Each
stencil computes over its outputs' elements, so in its frame the point ``p`` is the grid
index ``p + o_out``; a read ``f(I + d)`` there is grid index ``p + o_out + d``, which is
``f``'s element ``p + d + o_out - o_f``. Absolute positions (``domain=`` bounds, the
conditions of ``concat_where``) move by ``-o_out``, and their boxes below element 0 go.
After this pass the IR is one a user could have written for plain arrays: the extents, the
argument checks and every translation take it as it is, and the executables take the plain
arrays.
"""

from __future__ import annotations

import attrs

from pipeline.dsl.ir.nodes import (
    ConcatWhere,
    Expr,
    OutputTarget,
    ProgramIR,
    Ref,
    Stencil,
)
from pipeline.dsl.passes.traversal import map_children
from pipeline.dsl.regions import Bound
from pipeline.dsl.types import FieldType

__all__ = ["locate_arrays"]

Origin = dict[str, int]


def locate_arrays(program: ProgramIR) -> ProgramIR:
    """The array-origins pass (a ``Step[ProgramIR, ProgramIR]``): ``program`` with its
    stencils in their outputs' element indices and ``origins`` emptied, and the boxes of its
    ``concat_where`` conditions that lie below element 0 dropped (regions are exact on all
    integers, element indices are never negative).

    Raises:
        ValueError: the outputs of one stencil have different origins (the call path
            refuses such a call first, naming the arguments).
    """
    if not program.origins:
        return attrs.evolve(program, stencils=tuple(_pruned(s) for s in program.stencils))
    origins = {name: dict(dims) for name, dims in program.origins}
    fields = {p.name: p.type for p in program.params if isinstance(p.type, FieldType)}
    stencils = tuple(_located(program.name, s, origins, fields) for s in program.stencils)
    return attrs.evolve(program, stencils=stencils, origins=())


def _located(
    program: str, stencil: Stencil, origins: dict[str, Origin], fields: dict[str, FieldType]
) -> Stencil:
    frames = {tuple(sorted(origins.get(t.name, {}).items())) for t in stencil.outputs}
    if len(frames) > 1:
        names = ", ".join(t.name for t in stencil.outputs)
        raise ValueError(
            f"{program}: the outputs of the call of {stencil.operator_name!r} ({names}) have "
            "different origins; give the outputs of one call the same origin"
        )
    frame = dict(frames.pop()) if frames else {}
    # The frame's dimensions: an input's origin along a dimension the outputs lack is not
    # a position in the stencil (such an axis is read whole, from element 0).
    grid = set(fields[stencil.outputs[0].name].dim_names) if stencil.outputs else set()
    locals_ = {a.targets[0] for a in stencil.body}

    def moved(expr: Expr) -> Expr:
        if isinstance(expr, Ref):
            if expr.name in locals_ or expr.name not in fields:
                return expr
            dims = fields[expr.name].dim_names
            own = origins.get(expr.name, {})
            shift = tuple((d, frame.get(d, 0) - own.get(d, 0)) for d in dims if d in grid)
            return expr.shifted(shift)
        if isinstance(expr, ConcatWhere):
            moved_region = expr.region.shifted({d: -o for d, o in frame.items()})
            expr = attrs.evolve(expr, region=moved_region.nonnegative())
        return map_children(expr, moved)

    return attrs.evolve(
        stencil,
        body=tuple(attrs.evolve(a, value=moved(a.value)) for a in stencil.body),
        results=tuple(moved(r) for r in stencil.results),
        outputs=tuple(_target(t, fields, frame) for t in stencil.outputs),
    )


def _pruned(stencil: Stencil) -> Stencil:
    """``stencil`` with its conditions' boxes below element 0 dropped (a plain program's
    grid indices are its element indices)."""

    def pruned(expr: Expr) -> Expr:
        if isinstance(expr, ConcatWhere):
            expr = attrs.evolve(expr, region=expr.region.nonnegative())
        return map_children(expr, pruned)

    return attrs.evolve(
        stencil,
        body=tuple(attrs.evolve(a, value=pruned(a.value)) for a in stencil.body),
        results=tuple(pruned(r) for r in stencil.results),
    )


def _target(target: OutputTarget, fields: dict[str, FieldType], frame: Origin) -> OutputTarget:
    """``target`` with its ``domain=`` bounds (absolute, ``Bound``) in element indices;
    slices of the output (integers) are element indices already."""
    dims = fields[target.name].dim_names

    def element(bound: int | Bound | None, dim: str) -> int | Bound | None:
        return bound + -frame.get(dim, 0) if isinstance(bound, Bound) else bound

    slices = tuple(
        (element(start, dim), element(stop, dim))
        for (start, stop), dim in zip(target.slices, dims, strict=True)
    )
    return attrs.evolve(target, slices=slices)
