"""Splitting: a call whose outputs span different dimensions or domains becomes one stencil
per group.

Loop-nest translations iterate one domain per stencil, so ``op(..., out=(field_3d,
field_2d))`` is split into a stencil for the 3-D outputs and one for the 2-D ones, and
``op(..., out=(x, y), domain=(dom_x, dom_y))`` (or outputs sliced differently) into one per
domain, each with the whole body (translations compute only the locals their results read).
Outputs with the same dimensions and the same slices stay one stencil (their domains may
still differ at run time, with arrays of different shapes: the argument checks refuse that).
The order of writes changes, so a call whose group reads a field another group writes is
refused.
"""

from __future__ import annotations

import attrs

from pipeline.dsl.errors import DSLTypeError
from pipeline.dsl.ir.nodes import ProgramIR, Ref, Stencil
from pipeline.dsl.passes.traversal import walk
from pipeline.dsl.types import Dimension, FieldType

__all__ = ["split_by_output_dimensions"]


def _split(program: ProgramIR, stencil: Stencil) -> tuple[Stencil, ...]:
    groups: dict[tuple[frozenset[Dimension], object], list[int]] = {}
    for position, target in enumerate(stencil.outputs):
        target_type = program.param(target.name).type
        assert isinstance(target_type, FieldType)
        key = (frozenset(target_type.dims), target.slices)  # IHalf apart from I
        groups.setdefault(key, []).append(position)
    if len(groups) == 1:
        return (stencil,)
    definitions = {a.targets[0]: a.value for a in stencil.body}

    def reads(position: int) -> set[str]:
        names: set[str] = set()
        pending = [stencil.results[position]]
        while pending:
            for node in walk(pending.pop()):
                if isinstance(node, Ref) and node.name not in names:
                    names.add(node.name)
                    if node.name in definitions:
                        pending.append(definitions[node.name])
        return names

    for members in groups.values():
        written = {stencil.outputs[p].name for p in members}
        others = [p for p in range(len(stencil.outputs)) if p not in members]
        for position in others:
            clash = written & reads(position)
            if clash:
                raise DSLTypeError.at(
                    stencil.loc,
                    f"{program.name}: the call of {stencil.operator_name!r} writes fields over "
                    f"different dimensions or domains and also reads {sorted(clash)[0]!r}, "
                    "which it writes; pass the input and the output as separate arrays",
                )
    return tuple(
        attrs.evolve(
            stencil,
            results=tuple(stencil.results[p] for p in members),
            outputs=tuple(stencil.outputs[p] for p in members),
        )
        for members in groups.values()
    )


def split_by_output_dimensions(program: ProgramIR) -> ProgramIR:
    """The splitting pass (a ``Step[ProgramIR, ProgramIR]``)."""
    stencils = tuple(piece for s in program.stencils for piece in _split(program, s))
    return attrs.evolve(program, stencils=stencils)
