"""What loop-nest translations (C, DaCe) decide the same way about a stencil.

``StencilLayout`` gives a stencil's iteration dimensions (those of its first output, which
every other output must share), its locals, and which locals become *temporaries*: those
read at a shifted position somewhere, which would otherwise be recomputed at every use,
with the region around the output domain where each is needed.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from pipeline.dsl.types import FieldType
from pipeline.ir.nodes import Expr, ProgramIR, Ref, Scan, Stencil
from pipeline.passes.traversal import walk

__all__ = ["StencilLayout", "scan_axis"]


@attrs.frozen
class StencilLayout:
    """How a loop-nest translation lays out one stencil.

    Attributes:
        dims: the iteration dimensions, outermost first (the first output's order).
        definitions: each local's defining expression.
        temporaries: for each local kept in a buffer, its (lower, upper) reach per
            iteration dimension around the output domain.
    """

    dims: tuple[str, ...]
    definitions: Mapping[str, Expr]
    temporaries: Mapping[str, Mapping[str, tuple[int, int]]]

    @classmethod
    def of(cls, program: ProgramIR, stencil: Stencil, *, temporaries: bool) -> StencilLayout:
        """The layout of ``stencil``; with ``temporaries=False`` no local is buffered.

        Raises:
            NotImplementedError: the outputs have different dimensions.
        """
        first = program.param(stencil.outputs[0].name).type
        assert isinstance(first, FieldType)
        dims = first.dim_names
        for target in stencil.outputs[1:]:
            other = program.param(target.name).type
            assert isinstance(other, FieldType)
            if set(other.dim_names) != set(dims):
                raise NotImplementedError(
                    f"outputs of {stencil.operator_name!r} have different dimensions; loop "
                    "translations need the outputs of one call to share their dimensions"
                )
        definitions = {a.targets[0]: a.value for a in stencil.body}
        buffered: dict[str, dict[str, tuple[int, int]]] = {}
        if temporaries:
            shifted = {
                node.name
                for expr in (*definitions.values(), *stencil.results)
                for node in walk(expr)
                if isinstance(node, Ref) and node.offsets and node.name in definitions
            }
            for extent in stencil.local_extents:
                if extent.name in shifted:
                    reach = {d.dim: (d.lower, d.upper) for d in extent.dims}
                    buffered[extent.name] = {d: reach.get(d, (0, 0)) for d in dims}
        return cls(dims, definitions, buffered)


def scan_axis(stencil: Stencil) -> tuple[str, bool] | None:
    """The axis and direction (forward?) the stencil's scans sweep, or None without scans
    (the extent pass made sure all its scans agree)."""
    for expr in (*(a.value for a in stencil.body), *stencil.results):
        for node in walk(expr):
            if isinstance(node, Scan):
                return node.operator.axis, node.operator.forward
    return None
