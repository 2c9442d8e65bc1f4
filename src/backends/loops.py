"""What loop-nest translations (C, DaCe) decide the same way about a stencil.

``plan_sweeps`` orders the scans of a stencil into *phases*: passes along the scan axis, each
in one direction, a phase after every phase whose results it reads.

``StencilLayout`` gives a stencil's iteration dimensions (those of its first output, which
every other output must share), its locals, and which locals become *temporaries*: those
read at a shifted position somewhere, which would otherwise be recomputed at every use,
with the region around the output domain where each is needed.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from pipeline.dsl.ir.nodes import ConcatWhere, Expr, ProgramIR, Ref, Scan, ScanOperatorIR, Stencil
from pipeline.dsl.passes.traversal import children, walk
from pipeline.dsl.types import FieldType

__all__ = ["StencilLayout", "SweepKey", "SweepPlan", "plan_sweeps"]

#: A sweep: a scan operator and its point arguments (one sweep computes every component).
SweepKey = tuple[ScanOperatorIR, tuple[Expr, ...]]


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
        # A temporary is computed everywhere over its extent; inside a branch of concat_where
        # a local may read what exists only where the branch is chosen.
        chooses = any(
            isinstance(node, ConcatWhere)
            for expr in (*definitions.values(), *stencil.results)
            for node in walk(expr)
        )
        if temporaries and not chooses:
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


@attrs.frozen
class SweepPlan:
    """The passes of a stencil that runs scans along ``axis``.

    Attributes:
        axis: the scan dimension.
        phases: in order, each pass's direction (forward?) and the sweeps it computes, each
            after the sweeps it reads.
    """

    axis: str
    phases: tuple[tuple[bool, tuple[SweepKey, ...]], ...]

    def phase_of(self, key: SweepKey) -> int:
        """The pass that computes sweep ``key``."""
        return next(n for n, (_, keys) in enumerate(self.phases) if key in keys)


def plan_sweeps(stencil: Stencil) -> SweepPlan | None:
    """The passes of ``stencil`` (None when it runs no scan).

    A sweep runs in the first pass of its direction after the passes of every sweep it
    reads: a sweep reading another of its direction shares its pass, computed after it at
    each point. The first pass goes the way of the first scan found. (The extent pass made
    sure that all scans share one axis.)
    """
    definitions = {a.targets[0]: a.value for a in stencil.body}
    order: list[SweepKey] = []
    depends: dict[SweepKey, set[SweepKey]] = {}

    def scans_in(expr: Expr, seen: set[str]) -> list[Scan]:
        found = []
        for node in walk(expr):
            if isinstance(node, Scan):
                found.append(node)
            elif isinstance(node, Ref) and node.name in definitions and node.name not in seen:
                seen.add(node.name)
                found += scans_in(definitions[node.name], seen)
        return found

    def visit(scan: Scan) -> SweepKey:
        key = (scan.operator, scan.args)
        if key not in depends:
            depends[key] = set()
            for arg in scan.args:
                for inner in _outermost_scans(arg, definitions):
                    depends[key].add(visit(inner))
            order.append(key)
        return key

    for expr in (*stencil.results, *definitions.values()):
        for scan in scans_in(expr, set()):
            visit(scan)
    if not order:
        return None
    first = order[0][0].forward
    phase: dict[SweepKey, int] = {}
    for key in order:  # dependencies come first in ``order``
        forward = key[0].forward
        earliest = max((phase[d] + (d[0].forward != forward) for d in depends[key]), default=0)
        # Passes alternate directions, starting with ``first``'s.
        phase[key] = earliest + ((earliest % 2 == 0) != (forward == first))
    count = max(phase.values()) + 1
    phases = tuple(
        (first if n % 2 == 0 else not first, tuple(k for k in order if phase[k] == n))
        for n in range(count)
    )
    return SweepPlan(order[0][0].axis, phases)


def _outermost_scans(expr: Expr, definitions: Mapping[str, Expr]) -> list[Scan]:
    """The scans ``expr`` reads directly (through locals, not inside other scans' args)."""
    found: list[Scan] = []

    def visit(node: Expr, seen: frozenset[str]) -> None:
        if isinstance(node, Scan):
            found.append(node)
            return
        if isinstance(node, Ref) and node.name in definitions and node.name not in seen:
            visit(definitions[node.name], seen | {node.name})
            return
        for child in children(node):
            visit(child, seen)

    visit(expr, frozenset())
    return found
