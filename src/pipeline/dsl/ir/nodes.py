"""The DSL's intermediate representation: frozen, typed, fingerprintable nodes.

Shape of a program after the frontend::

    ProgramIR(params, stencils=(Stencil(body=(Assign...), results=(Expr...),
                                        outputs=(OutputTarget...)), ...))

Field accesses are ``Ref(name, offsets)`` with offsets on named dimensions; shifting an
arbitrary expression is pushed down to its ``Ref`` leaves by the frontend. Before the inlining
pass an expression may contain ``OperatorCall`` nodes; after it, none remain. Expression types
(``FieldType``/``ScalarType``) are ``None`` until the type-inference pass fills them in.

Source locations are kept for error messages but excluded from equality and fingerprints, so
moving a definition in its file does not change its IR.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

import attrs
import numpy as np

from pipeline.dsl.regions import Bound, Region
from pipeline.dsl.types import FieldType, Named, Offset, ScalarType

__all__ = [
    "Assign",
    "BinaryOp",
    "Call",
    "Cast",
    "ConcatWhere",
    "DimExtent",
    "Expr",
    "FieldExtent",
    "FieldOperatorIR",
    "GuardedRead",
    "Literal",
    "Names",
    "OperatorCall",
    "Origins",
    "OutputTarget",
    "Param",
    "ProgramIR",
    "Ref",
    "Scan",
    "ScanOperatorIR",
    "Shift",
    "SourceLocation",
    "Stencil",
    "Type",
    "UnaryOp",
    "shown_parameter",
]

Type: TypeAlias = FieldType | ScalarType
# The leaves' names of a tuple-typed parameter, nested as its annotation.
Names: TypeAlias = tuple["str | Names", ...]
#: Per located parameter (ADR 0026), the grid index of its element 0 along each dimension
#: where it is not 0: ``(("f", (("I", -1),)),)``, parameters and dimensions in order.
Origins: TypeAlias = tuple[tuple[str, tuple[tuple[str, int], ...]], ...]


@attrs.frozen
class SourceLocation:
    """Where a node came from in the user's source (1-based line and column)."""

    filename: str
    line: int
    column: int
    source_line: str | None = attrs.field(default=None, repr=False)


@attrs.frozen
class _Expression:
    """What every expression node has besides its operands: its type (``None`` until the
    type-inference pass fills it in) and where it was written (not compared)."""

    type: Type | None = attrs.field(default=None, kw_only=True)
    loc: SourceLocation | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)


@attrs.frozen
class Ref(_Expression):
    """A read of the parameter or local ``name`` at ``offsets`` (dimension name, shift)."""

    name: str
    offsets: tuple[tuple[str, int], ...] = ()

    def shifted(self, offsets: tuple[tuple[str, int], ...]) -> Ref:
        """This read moved further by ``offsets``."""
        return attrs.evolve(self, offsets=combine_offsets(self.offsets, offsets))


@attrs.frozen
class Literal(_Expression):
    """A Python literal (typed as a NumPy 2 weak scalar) or a folded constant."""

    value: bool | int | float


@attrs.frozen
class UnaryOp(_Expression):
    """``op`` is one of ``-``, ``+``, ``~`` (and ``not`` before typing, which makes it ``~``
    of a bool scalar)."""

    op: str
    operand: Expr


@attrs.frozen
class BinaryOp(_Expression):
    """``op`` is an arithmetic, comparison or logical operator written as in Python."""

    op: str
    left: Expr
    right: Expr


@attrs.frozen
class Call(_Expression):
    """A builtin: ``where`` or a math function (``sqrt``, ``minimum``, ``abs``, ...)."""

    function: str
    args: tuple[Expr, ...]


@attrs.frozen
class Cast(_Expression):
    """``astype(value, dtype)``, ``float64(value)``; ``constructor`` names the Python type
    (``"bool"``, ``"int"``, ``"float"``) when written as ``bool(value)``, which takes scalars
    only."""

    value: Expr
    dtype: np.dtype[Any]
    constructor: str | None = attrs.field(default=None, kw_only=True, eq=False)


@attrs.frozen
class OperatorCall(_Expression):
    """A call of another field operator, replaced by its body in the inlining pass."""

    operator: FieldOperatorIR
    args: tuple[Expr, ...]


@attrs.frozen
class Scan(_Expression):
    """Component ``component`` of a scan operator's carry, swept along its axis over the
    stencil's domain, with ``args`` the point values at each position.

    Several ``Scan`` nodes with the same operator and arguments are one sweep (one per
    component of a tuple carry). A scan's value is only read where it is computed: never at
    a shifted position.
    """

    operator: ScanOperatorIR
    args: tuple[Expr, ...]
    component: int = 0


@attrs.frozen
class ConcatWhere(_Expression):
    """``concat_where(region, inside, outside)``: ``inside`` at the points of ``region``,
    ``outside`` elsewhere; each is evaluated only where it is chosen."""

    region: Region
    inside: Expr
    outside: Expr


@attrs.frozen
class Shift(_Expression):
    """``value`` shifted by ``offsets`` as written (``IHalf + 0.5``), for type inference only.

    The frontend has already moved ``value``'s ``Ref`` leaves by the offsets' array amounts;
    this node keeps what types need: which dimension the value must have and which it gets
    (a half shift turns an ``I`` value into an ``IHalf`` one). The type-inference pass checks
    it and replaces it by ``value``: no later pass, and no translation, sees it.
    """

    value: Expr
    offsets: tuple[Offset, ...]


Expr: TypeAlias = (
    Ref | Literal | UnaryOp | BinaryOp | Call | Cast | OperatorCall | Scan | ConcatWhere | Shift
)


@attrs.frozen
class Assign:
    """Bind ``value`` to the local(s) ``targets`` (several only when unpacking a tuple call)."""

    targets: tuple[str, ...]
    value: Expr
    loc: SourceLocation | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Param:
    """A parameter of a field operator or program."""

    name: str
    type: Type


@attrs.frozen
class FieldOperatorIR:
    """A field operator: statements then the returned expressions.

    ``params`` are flat: a tuple-typed parameter ``t`` is one parameter per component
    (``t__0``, ``t__1``, ...); ``tuples`` names those, by the parameter as written.
    """

    name: str
    params: tuple[Param, ...]
    body: tuple[Assign, ...]
    results: tuple[Expr, ...]
    result_types: tuple[FieldType, ...]
    tuples: tuple[tuple[str, tuple[str, ...]], ...] = ()
    loc: SourceLocation | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def signature(self) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
        """The parameters as written: each name, with its components if it is a tuple."""
        tuples = dict(self.tuples)
        result: list[tuple[str, tuple[str, ...] | None]] = []
        for param in self.params:
            owner = next((n for n, parts in tuples.items() if param.name in parts), None)
            if owner is None:
                result.append((param.name, None))
            elif not result or result[-1][0] != owner:
                result.append((owner, tuples[owner]))
        return tuple(result)


@attrs.frozen
class ScanOperatorIR:
    """A scan operator: ``(carry, *point values) -> new carry``, swept along ``axis``.

    Attributes:
        axis: the dimension swept, from its first point (``forward``) or its last.
        init: the carry before the first point, one value per component.
        carry: one scalar parameter per component of the carry.
        params: the point values, scalars at each position.
        body: statements over the carry and the point values (no shifts).
        results: the new carry, one expression per component.
    """

    name: str
    axis: str
    forward: bool
    init: tuple[bool | int | float, ...]
    carry: tuple[Param, ...]
    params: tuple[Param, ...]
    body: tuple[Assign, ...]
    results: tuple[Expr, ...]
    loc: SourceLocation | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class OutputTarget:
    """The output domain: program field ``name`` sliced by ``(start, stop)`` per dimension.

    Integer bounds follow Python slice rules (``None`` is the array's end, negative counts
    from it); a ``Bound`` (from ``domain=``) is an absolute index, possibly of a scalar
    parameter, that must lie inside the array.
    """

    name: str
    slices: tuple[tuple[int | Bound | None, int | Bound | None], ...]
    loc: SourceLocation | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class DimExtent:
    """How far reads reach along ``dim``: from ``lower`` to ``upper`` (a field's extent holds
    0, the output point: ``lower <= 0 <= upper``; a local's need not)."""

    dim: str
    lower: int
    upper: int


@attrs.frozen
class FieldExtent:
    """The reach of one stencil's reads of field ``name``, per dimension of the field."""

    name: str
    dims: tuple[DimExtent, ...]


@attrs.frozen
class GuardedRead:
    """A read of field ``name`` at ``offsets`` that happens only at the output points in
    ``region`` (a branch of ``concat_where``): its reach depends on the domain and the
    scalars, so it is resolved at each call."""

    name: str
    offsets: tuple[tuple[str, int], ...]
    region: Region


@attrs.frozen
class Stencil:
    """One field-operator call of a program, inlined: locals, results and where they go.

    ``extents`` (filled in by the extent pass) has one entry per program field the stencil
    reads everywhere; ``guarded`` the reads that happen only in a region (``concat_where``);
    ``local_extents`` one per local field, for translations that keep temporaries: exactly
    the box of the points where it is read (which need not hold the output point).
    """

    body: tuple[Assign, ...]
    results: tuple[Expr, ...]
    outputs: tuple[OutputTarget, ...]
    operator_name: str
    extents: tuple[FieldExtent, ...] = ()
    local_extents: tuple[FieldExtent, ...] = ()
    guarded: tuple[GuardedRead, ...] = ()
    loc: SourceLocation | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen(repr=False)
class ProgramIR:
    """A program: its parameters and the stencils it runs in order.

    ``params`` are flat, one per field or scalar: a tuple-typed parameter ``t`` is one
    parameter per leaf, named by its path (``t__0``, ``t__1__0`` for ``t[1][0]``);
    ``tuples`` holds, per such parameter as written, its leaves' names nested as its
    annotation. The nesting is left out of equality and fingerprints, as locations are:
    translations read the leaves alone (whose names carry their paths), so a program compiles
    to the same code whether its leaves were written as tuples or not. ``origins`` holds the
    parameters passed as located arrays until the ``array_origins`` pass reads the stencils
    in their outputs' element indices (ADR 0026); empty after it. ``repr`` is one line;
    ``str`` prints the whole program.
    """

    name: str
    params: tuple[Param, ...]
    stencils: tuple[Stencil, ...]
    tuples: tuple[tuple[str, Names], ...] = attrs.field(default=(), eq=False)
    loc: SourceLocation | None = attrs.field(default=None, eq=False, repr=False)
    # Out of equality and fingerprints, as the nesting: empty once the array_origins pass
    # ran, and the passes before it are cached by the definition, which holds the origins.
    origins: Origins = attrs.field(default=(), kw_only=True, eq=False)

    def param(self, name: str) -> Param:
        """The parameter called ``name``."""
        for param in self.params:
            if param.name == name:
                return param
        raise KeyError(name)

    @property
    def written(self) -> tuple[tuple[str, Names | None], ...]:
        """The parameters as the user wrote them, in order: each name, with its leaves
        nested as its annotation if it is a tuple (None otherwise)."""
        tuples = dict(self.tuples)
        owners = {leaf: name for name, names in self.tuples for leaf in _name_leaves(names)}
        result: list[tuple[str, Names | None]] = []
        for param in self.params:
            owner = owners.get(param.name)
            if owner is None:
                result.append((param.name, None))
            elif not result or result[-1][0] != owner:
                result.append((owner, tuples[owner]))
        return tuple(result)

    def shown(self, name: str) -> str:
        """Parameter ``name`` as the user writes it: a tuple's leaf as ``t[1][0]``."""
        return shown_parameter(name, self.tuples)

    def __repr__(self) -> str:
        return f"ProgramIR({self.name}, {len(self.params)} params, {len(self.stencils)} stencil(s))"

    def __str__(self) -> str:
        from pipeline.dsl.ir.printer import format_program  # noqa: PLC0415  (printer imports nodes)

        return format_program(self)


def _name_leaves(names: Names) -> tuple[str, ...]:
    return tuple(
        leaf
        for item in names
        for leaf in (_name_leaves(item) if isinstance(item, tuple) else (item,))
    )


def shown_parameter(name: str, tuples: Iterable[tuple[str, Names]]) -> str:
    """Leaf parameter ``name`` as the user writes it, ``t[1][0]``, given the tuple parameters
    ``tuples`` (as ``ProgramIR.tuples``); any other name as it is."""
    for written, names in tuples:
        path = _path_of(name, names)
        if path is not None:
            return written + path
    return name


def _path_of(name: str, names: Names) -> str | None:
    """The indexing (``[1][0]``) that reaches leaf ``name`` in ``names``; None if absent."""
    steps = (
        [f".{field}" for field in names.record.fields]
        if isinstance(names, Named)
        else [f"[{index}]" for index in range(len(names))]
    )
    for step, item in zip(steps, names, strict=True):
        if item == name:
            return step
        if isinstance(item, tuple):
            inner = _path_of(name, item)
            if inner is not None:
                return step + inner
    return None


def combine_offsets(
    a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]
) -> tuple[tuple[str, int], ...]:
    """Add two offset lists; the result is sorted by dimension name, without zeros."""
    total: dict[str, int] = dict(a)
    for dim, value in b:
        total[dim] = total.get(dim, 0) + value
    return tuple(sorted((d, v) for d, v in total.items() if v != 0))
