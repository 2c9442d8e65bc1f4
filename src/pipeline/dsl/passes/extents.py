"""Extent analysis: how far each stencil reads each field, per dimension and direction.

Reads of a local at an offset are reads of its definition at that offset, so the reach of
program fields is found by following locals. The same walk gives each local's extent: the
region around the output domain where a translation that keeps temporaries must compute it.
"""

from __future__ import annotations

from collections import defaultdict

import attrs

from pipeline.dsl.errors import DSLTypeError
from pipeline.dsl.ir.nodes import (
    ConcatWhere,
    DimExtent,
    Expr,
    FieldExtent,
    GuardedRead,
    ProgramIR,
    Ref,
    Scan,
    Stencil,
    combine_offsets,
)
from pipeline.dsl.passes.traversal import children, contains_scan, walk
from pipeline.dsl.regions import Region
from pipeline.dsl.types import FieldType

__all__ = ["analyse_extents"]

Offsets = tuple[tuple[str, int], ...]


def _analyse(program_name: str, stencil: Stencil, field_params: dict[str, FieldType]) -> Stencil:
    definitions = {a.targets[0]: a.value for a in stencil.body}
    local_types = {a.targets[0]: a.value.type for a in stencil.body}
    reads: dict[str, set[Offsets]] = defaultdict(set)
    guarded: dict[tuple[str, Offsets, Region], None] = {}
    visited: set[tuple[str, Offsets, Region | None]] = set()

    def visit(expr: Expr, shift: Offsets, guard: Region | None) -> None:
        """Record the reads of ``expr`` evaluated at the output point moved by ``shift``,
        which happens only at the output points in ``guard`` (None: everywhere)."""
        match expr:
            case ConcatWhere(region=region, inside=inside, outside=outside):
                # Chosen at x + shift: x is in the region moved back by shift.
                here = region.shifted({d: -v for d, v in shift})
                for branch, where in ((inside, here), (outside, ~here)):
                    # Output points are element indices: never below 0.
                    narrowed = (where if guard is None else guard & where).nonnegative()
                    if narrowed.boxes:  # a branch chosen nowhere reads nothing
                        visit(branch, shift, None if narrowed == _EVERYWHERE else narrowed)
            case Scan(args=args):
                # A sweep runs over the whole domain, whichever branch reads it.
                for arg in args:
                    visit(arg, shift, None)
            case Ref(name=name):
                offsets = combine_offsets(expr.offsets, shift)
                if name in definitions:
                    if (name, offsets, guard) not in visited:
                        visited.add((name, offsets, guard))
                        reads[name].add(offsets)
                        visit(definitions[name], offsets, guard)
                elif name in field_params:
                    if guard is None:
                        reads[name].add(offsets)
                    else:
                        guarded[(name, offsets, guard)] = None
            case _:
                for child in children(expr):
                    visit(child, shift, guard)

    for result in stencil.results:
        visit(result, (), None)

    def extent(name: str, dims: tuple[str, ...], *, exact: bool = False) -> FieldExtent:
        """The box around ``name``'s reads; a field's includes the output point itself."""
        bounds = []
        for dim in dims:
            values = [dict(o).get(dim, 0) for o in reads[name]] or [0]
            if not exact:
                values.append(0)
            bounds.append(DimExtent(dim, min(values), max(values)))
        return FieldExtent(name, tuple(bounds))

    extents = tuple(
        extent(name, field_params[name].dim_names)
        for name in sorted(n for n in reads if n in field_params)
    )
    # A local's box is exactly where it is read: a temporary computed at one more point
    # would read the fields beyond their extents, outside the arrays the checks accepted.
    local_extents = tuple(
        extent(name, t.dim_names, exact=True)
        for name, t in local_types.items()
        if isinstance(t, FieldType) and name in reads
    )
    guarded_reads = tuple(GuardedRead(name, offsets, region) for name, offsets, region in guarded)
    _check_no_shifted_self_reads(program_name, stencil, extents, guarded_reads)
    _check_scans(program_name, stencil)
    return attrs.evolve(
        stencil, extents=extents, local_extents=local_extents, guarded=guarded_reads
    )


_EVERYWHERE = Region.everywhere()


def _check_no_shifted_self_reads(
    program_name: str,
    stencil: Stencil,
    extents: tuple[FieldExtent, ...],
    guarded: tuple[GuardedRead, ...],
) -> None:
    """A stencil may read its own output only at the point it writes.

    Reading it at a shifted position would make the result depend on the order in which
    points are computed (the embedded backend computes everything before writing; a compiled
    loop nest overwrites neighbours first), so such a program is refused everywhere.
    """
    written = {t.name for t in stencil.outputs}
    shifted_guarded = [r for r in guarded if r.name in written and r.offsets]
    if shifted_guarded:
        read = shifted_guarded[0]
        raise DSLTypeError.at(
            stencil.loc,
            f"{program_name}: the call of {stencil.operator_name!r} writes {read.name!r} "
            f"and also reads it at shifted positions ({dict(read.offsets)}); the result would "
            "depend on the order points are computed in. Pass the input and the output as "
            "separate arrays",
        )
    for extent in extents:
        if extent.name in written and any(d.lower or d.upper for d in extent.dims):
            reach = ", ".join(f"{d.dim}[{d.lower:+d}, {d.upper:+d}]" for d in extent.dims)
            raise DSLTypeError.at(
                stencil.loc,
                f"{program_name}: the call of {stencil.operator_name!r} writes {extent.name!r} "
                f"and also reads it at shifted positions ({reach}); the result would depend on "
                "the order points are computed in. Pass the input and the output as separate "
                "arrays",
            )


def _check_scans(program_name: str, stencil: Stencil) -> None:
    """A stencil sweeps one axis (in passes, forward and back), and what its scans compute
    is read where it is computed (a sweep has no value elsewhere yet)."""
    definitions = {a.targets[0]: a.value for a in stencil.body}
    exprs = (*definitions.values(), *stencil.results)
    scans = [node for expr in exprs for node in walk(expr) if isinstance(node, Scan)]
    if not scans:
        return
    axes = sorted({s.operator.axis for s in scans})
    if len(axes) > 1:
        raise DSLTypeError.at(
            stencil.loc,
            f"{program_name}: the call of {stencil.operator_name!r} sweeps along "
            f"{' and '.join(axes)}; one call sweeps one axis. Split it into calls in the "
            "program, passing the first sweep's result as a field",
        )
    for expr in exprs:
        for node in walk(expr):
            if (
                isinstance(node, Ref)
                and node.offsets
                and node.name in definitions
                and contains_scan(definitions[node.name], definitions)
            ):
                raise DSLTypeError.at(
                    node.loc or stencil.loc,
                    f"{program_name}: a scan's result is read shifted; a sweep has a value "
                    "only where it is computed. Write it to a field with out= in the program "
                    "and read that field shifted in the next call",
                )


def analyse_extents(program: ProgramIR) -> ProgramIR:
    """The extent-analysis pass (a ``Step[ProgramIR, ProgramIR]``)."""
    fields = {p.name: p.type for p in program.params if isinstance(p.type, FieldType)}
    return attrs.evolve(
        program, stencils=tuple(_analyse(program.name, s, fields) for s in program.stencils)
    )
