"""The stencil DSL's stage artifacts: what a decorator captures, and what its frontend makes.

``ProgramDefinition`` (inside a ``pipeline.ConcreteDefinition`` with the compile-time
arguments) -> the DSL's frontend -> ``CompilableProgram`` (typed IR and the compile-time
arguments) -> a backend's translation.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from pipeline.dsl.ir.nodes import Origins, ProgramIR
from pipeline.stages import CompileTimeArgs

__all__ = ["CompilableProgram", "ProgramDefinition", "ScanSettings"]


def _frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return types.MappingProxyType(dict(value))


@attrs.frozen
class ScanSettings:
    """What ``@scan_operator(axis=K, forward=True, init=0.0)`` says besides the function.

    Attributes:
        axis: the name of the dimension swept.
        forward: from the axis's first point to its last (True), or back.
        init: the carry before the first point: a number, or a tuple of numbers (a
            ``types.Named`` of them for a dataclass or NamedTuple carry).
    """

    axis: str
    forward: bool
    init: bool | int | float | tuple[bool | int | float, ...]


@attrs.frozen(eq=False)
class ProgramDefinition:
    """What a DSL decorator captures: the Python function and the values it closes over.

    Attributes:
        function: the user's Python function.
        kind: ``"field_operator"``, ``"scan_operator"`` or ``"program"``.
        captured: the global and closure values the function's body refers to, by name.
        output_slices: for an operator called directly, the output domain as (start, stop)
            per dimension of every output, in order; ``None`` means the whole outputs.
        output_bounds: for an operator called directly with ``domain={I: (lo, hi), ...}``,
            the absolute (dimension name, start, stop) of each output (one entry: of every
            output); ``None``: none given.
        call_dims: for a scan operator called directly, the dimension names of each point
            argument (``None``: a scalar) and then of each output, from the arrays' ranks
            (the scan's axis last; see ``ScanOperator``).
        scan: for a scan operator, its axis, direction and initial carry.
        bound: for a program, the scalar parameters bound to values
            (``Program.with_bound_args``): compile-time constants of their parameters'
            dtypes, no longer parameters of its executables.
        located: for a program called with located arrays (``pipeline.dsl.located``), per
            such parameter (a leaf's name, ``t__0``), the grid index of its element 0 along
            each dimension where it is not 0; the frontend reads the IR in the outputs'
            element indices, so the executables take the plain arrays (ADR 0026).
        static_shapes: for a variant of a ``@program(static_domains=True)``, the shape of
            each field parameter (by the frontend's parameter name) its calls are compiled
            for: the frontend makes every output domain a constant of the code.
    """

    function: Callable[..., Any]
    kind: str
    captured: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    output_slices: tuple[tuple[int | None, int | None], ...] | None = None
    scan: ScanSettings | None = None
    bound: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    located: Origins = ()
    static_shapes: Mapping[str, tuple[int, ...]] = attrs.field(
        factory=dict, converter=_frozen_mapping
    )
    output_bounds: tuple[tuple[tuple[str, int, int], ...], ...] | None = None
    call_dims: tuple[tuple[str, ...] | None, ...] | None = None

    @property
    def name(self) -> str:
        """The function's name, as the user wrote it."""
        return self.function.__name__

    def __fingerprint__(self) -> object:
        # The annotations carry the parameter types: two functions with the same code but
        # different annotations (made by a factory) are different programs.
        return (
            dict(getattr(self.function, "__annotations__", {})),
            self.function,
            self.kind,
            dict(self.captured),
            self.output_slices,
            self.scan,
            {name: (type(value).__name__, value) for name, value in self.bound.items()},
            # Each left out when empty: a plain program's fingerprint is what it was before.
            *((("located", self.located),) if self.located else ()),
            *((("static_shapes", dict(self.static_shapes)),) if self.static_shapes else ()),
            *((("output_bounds", self.output_bounds),) if self.output_bounds is not None else ()),
            *((("call_dims", self.call_dims),) if self.call_dims is not None else ()),
        )

    def __repr__(self) -> str:
        function = self.function
        return f"ProgramDefinition({self.kind} {function.__module__}.{function.__qualname__})"


@attrs.frozen(repr=False)
class CompilableProgram:
    """What the frontend produces: typed IR, with the compile-time arguments beside it.

    Attributes:
        definition: what the IR was made from (loadings that run the Python function itself,
            as the embedded one does, read it; it does not enter the fingerprint). ``None``
            once the program crossed a process boundary: it stays behind, so the user's
            function need not be importable in a compile worker.
        ir: the program's typed intermediate representation (``str(ir)`` prints it).
        compile_time_args: what the translation specializes the IR for.
    """

    definition: ProgramDefinition | None
    ir: ProgramIR
    compile_time_args: CompileTimeArgs = attrs.field(factory=CompileTimeArgs)

    def __fingerprint__(self) -> object:
        return (self.ir, self.compile_time_args)

    def __reduce__(self) -> tuple[type[CompilableProgram], tuple[None, ProgramIR, CompileTimeArgs]]:
        return (CompilableProgram, (None, self.ir, self.compile_time_args))

    def __str__(self) -> str:
        return str(self.ir)

    def __repr__(self) -> str:
        return (
            f"CompilableProgram({self.ir.name}, {len(self.ir.stencils)} stencil(s), "
            f"{self.compile_time_args!r})"
        )
