"""Program and field-operator objects: the user's handle on a definition and a backend.

``Program.__call__`` is the top of the data's walk: it tries the fast entry of the last
signature, else hands the bound arguments to the program's ``Dispatcher`` (``dispatch.py``),
which owns everything between here and the executable, told how stencil calls work by
``calls.StencilCalls``. A backend is a value that provides ``calls.ArrayBackend``; the
default one is found through an entry point, never by importing ``backends``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from types import MappingProxyType
from typing import Any, TypeVar, cast, overload

import attrs

from pipeline import metrics
from pipeline.dispatch import DispatchBackend, Dispatcher, bind_arguments, user_facing
from pipeline.dsl.calls import STENCIL_CALLS
from pipeline.dsl.default_backend import DEFAULT, check_backend, resolve_backend
from pipeline.dsl.direct import direct_domain, scan_call
from pipeline.dsl.evaluation import (
    current_output_domain,
    embedded_evaluation,
    evaluate_per_domain,
    evaluating_embedded,
    flattened,
    in_domain,
    output_domain,
    per_output,
)
from pipeline.dsl.frontend.annotations import parameter_nesting
from pipeline.dsl.frontend.operators import parse_scan_operator
from pipeline.dsl.frontend.source import captured_values, with_captured_globals
from pipeline.dsl.located_calls import call_with_located, has_located, located_variant
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition, ScanSettings
from pipeline.dsl.static_arguments import (
    StaticVariants,
    check_static_params,
    refuse_other_shapes,
    static_names,
)
from pipeline.dsl.tuple_arguments import Nesting, flatten_arguments, has_tuples
from pipeline.dsl.types import Dimension, Named, record_of
from pipeline.errors import SourceError
from pipeline.staged import Lowered

__all__ = [
    "FieldOperator",
    "Program",
    "ScanOperator",
    "field_operator",
    "program",
    "scan_operator",
]

F = TypeVar("F", bound=Callable[..., Any])


@attrs.frozen(eq=False)
class _Definition:
    """Common part of programs and field operators."""

    function: Callable[..., Any]
    backend: DispatchBackend = attrs.field(
        default=cast(DispatchBackend, DEFAULT),
        converter=resolve_backend,
        validator=check_backend,
        kw_only=True,
    )
    # Made after the backend is validated (see __attrs_post_init__).
    _dispatcher: Dispatcher[ProgramDefinition, CompilableProgram] = attrs.field(
        init=False, repr=False
    )
    _definition: list[ProgramDefinition] = attrs.field(factory=list, init=False, repr=False)
    # The function run when called on embedded fields, with the globals captured on first
    # use (see ``with_captured_globals``).
    _frozen: list[Any] = attrs.field(factory=list, init=False, repr=False)
    # The frontend's parameter names, kept from the first frontend output this object sees:
    # keywords are bound by them without running the frontend step at every call.
    _parameter_names: list[tuple[str, ...]] = attrs.field(factory=list, init=False, repr=False)
    # The parameters' nesting from their annotations, kept once read: None for a program
    # without tuple parameters, whose arguments go to the executable as they are.
    _nesting: list[Nesting | None] = attrs.field(factory=list, init=False, repr=False)
    # Set once the nesting is read and has no tuple: a call's arguments are the executable's.
    _leaves_as_given: bool = attrs.field(default=False, init=False, repr=False)

    kind = "program"

    def __attrs_post_init__(self) -> None:
        dispatcher = Dispatcher(self.backend, STENCIL_CALLS, self.metrics_key)
        object.__setattr__(self, "_dispatcher", dispatcher)

    @property
    def name(self) -> str:
        """The function's name."""
        return self.function.__name__

    @property
    def dispatcher(self) -> Dispatcher[ProgramDefinition, CompilableProgram]:
        """The program's table of compiled signatures (``pipeline.dispatch``)."""
        return self._dispatcher

    @property
    def metrics_key(self) -> str:
        """Where this program's metrics are kept: ``"<name>@<backend name>"``."""
        return f"{self.name}@{self.backend.name}"

    @property
    def definition(self) -> ProgramDefinition:
        """The definition, with the global and closure values its body uses."""
        if not self._definition:
            captured = captured_values(self.function)
            self._definition.append(
                ProgramDefinition(
                    self.function,
                    self.kind,
                    captured,
                    scan=self._scan_settings(),
                    bound=self._bound_values(),
                    static_shapes=self._static_shapes(),
                )
            )
        return self._definition[0]

    def _scan_settings(self) -> ScanSettings | None:
        return None

    def _bound_values(self) -> Mapping[str, Any]:
        return {}

    def _static_shapes(self) -> Mapping[str, tuple[int, ...]]:
        return {}

    def _takes_calls_as_given(self) -> bool:
        """Whether the fast entries may take the calls (a program with static parameters
        hands its calls to a variant instead)."""
        return True

    def _embedded_function(self) -> Any:
        """The function run on embedded fields, with the globals captured on first use."""
        if not self._frozen:
            definition = self.definition
            self._frozen.append(
                with_captured_globals(definition.function, dict(definition.captured))
            )
        return self._frozen[0]

    @property
    def __field_allocator__(self) -> Any:
        """The backend's allocator, so that ``allocators.zeros(..., allocator=prog)`` works."""
        return self.backend.__field_allocator__  # type: ignore[attr-defined]

    def __fingerprint__(self) -> object:
        return self.definition

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def with_backend(self, backend: DispatchBackend) -> Any:
        """The same definition on another backend (a new object; ``self`` is unchanged)."""
        return attrs.evolve(self, backend=backend)

    def frontend(self) -> CompilableProgram:
        """The frontend's output: typed, inlined IR with extents (``str(...ir)`` prints it).

        The backend pipeline's frontend makes it, the same one that compiles, checks
        arguments and binds keywords.

        Raises:
            DSLError: the definition is not valid DSL (located in the user's source).
        """
        return self._remembered(self._dispatcher.frontend(self.definition))

    def _remembered(self, program: CompilableProgram) -> CompilableProgram:
        if not self._parameter_names:
            # Keywords bind parameters as written: a tuple parameter by its own name.
            self._parameter_names.append(tuple(name for name, _ in program.ir.written))
        return program

    def _tuple_nesting(self) -> Nesting | None:
        """The parameters' nesting if any is a tuple, else None (read once)."""
        if not self._nesting:
            try:
                bound = self._bound_values()
                nesting = tuple(
                    item for item in parameter_nesting(self.function) if item[0] not in bound
                )
            except (SourceError, NameError):
                return None  # the frontend reports the annotation, located
            self._nesting.append(nesting if has_tuples(nesting) else None)
            as_given = self._nesting[0] is None and self._takes_calls_as_given()
            object.__setattr__(self, "_leaves_as_given", as_given)
        return self._nesting[0]

    def _leaves(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """``args`` as the executables take them: a tuple argument's leaves one by one.

        Raises:
            ArgumentError: a tuple argument not nested as its parameter's annotation.
        """
        nesting = self._tuple_nesting()
        return args if nesting is None else flatten_arguments(self.name, nesting, args)

    def _parameters(self) -> tuple[str, ...]:
        """The frontend's parameter names (the frontend runs on the first use only)."""
        if not self._parameter_names:
            self.frontend()
        return self._parameter_names[0]

    def _lower(
        self, definition: ProgramDefinition, args: tuple[Any, ...]
    ) -> Lowered[ProgramDefinition, CompilableProgram]:
        lowered = Lowered.of(self._dispatcher, definition, self._leaves(args) if args else args)
        self._remembered(lowered.program)
        return lowered


def _frozen(values: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(values))


@attrs.frozen(eq=False)
class Program(_Definition):
    """A ``@program``: a sequence of field-operator calls over its arguments.

    Call it with arrays of the backend's device (and Python numbers for scalar parameters),
    positionally or by keyword. Every argument is checked before anything runs.

    Returns:
        ``None``, or for functional namespaces (JAX) the tuple of written output arrays.

    Raises:
        ArgumentError: an argument of the wrong kind, rank, dtype or device.
        DomainError: an input that does not cover the output domain plus the halo.
        DSLError: on the first call, if the definition is not valid DSL.
    """

    #: The scalar parameters bound to values (``with_bound_args``), by name.
    bound: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen, kw_only=True)
    #: The scalar parameters whose values at each call key a compiled variant (ADR 0025).
    static_params: tuple[str, ...] = attrs.field(default=(), converter=static_names, kw_only=True)
    #: Whether the field arguments' shapes key a variant, whose domains are constants.
    static_domains: bool = attrs.field(default=False, kw_only=True)
    #: Whether a call may compile a variant; ``False``: only precompiled ones run.
    jit: bool = attrs.field(default=True, kw_only=True)
    #: For a static-domain variant: the field parameters' shapes it is compiled for.
    static_shapes: Mapping[str, tuple[int, ...]] = attrs.field(
        factory=dict, converter=_frozen, kw_only=True
    )
    _static: StaticVariants | None = attrs.field(default=None, init=False, repr=False)
    # A static-domain variant's shape checks, made once (static_arguments.refuse_other_shapes).
    _shape_checks: list[Any] = attrs.field(factory=list, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.static_params or self.static_domains:
            check_static_params(self)
            object.__setattr__(self, "_static", StaticVariants(self))

    @property
    def variants(self) -> tuple[Program, ...]:
        """The variants made so far (ordinary programs, the static values bound and the
        shapes fixed) of a program with static parameters or domains, else ``()``."""
        return () if self._static is None else self._static.variants()

    def _static_shapes(self) -> Mapping[str, tuple[int, ...]]:
        return self.static_shapes

    def _takes_calls_as_given(self) -> bool:
        return self._static is None and not self.static_shapes  # these check the shapes

    def with_bound_args(self, **values: Any) -> Program:
        """This program with scalar parameters bound to values (a new program; ``self`` is
        unchanged): compile-time constants of their parameters' dtypes, folded into the
        code, and no longer arguments of its calls (GT4Py's ``with_bound_args``).

        Raises:
            TypeError: a name that is no parameter of the program, or one bound already.
            DSLTypeError: (at the first call, ``lower()`` or ``compile()``) a bound parameter
                that is not a scalar, or a value that is not a number of its dtype.
        """
        names = list(inspect.signature(self.function).parameters)
        unknown = [name for name in values if name not in names]
        if unknown:
            raise TypeError(
                f"{self.name}() has no parameter {unknown[0]!r} to bind; its parameters are "
                f"{', '.join(names)}"
            )
        again: list[str] = [name for name in values if name in self.bound]
        if again:
            raise TypeError(
                f"{self.name}(): parameter {again[0]!r} is bound already (to "
                f"{self.bound[again[0]]!r}); bind the program's original instead"
            )
        static = tuple(name for name in self.static_params if name not in values)
        return attrs.evolve(self, bound={**self.bound, **values}, static_params=static)

    def _bound_values(self) -> Mapping[str, Any]:
        return self.bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dispatcher = self._dispatcher
        # The fast entries take the executable's parameters, the leaves: only a program
        # without tuple parameters (known once its nesting is read) hands them the call as is.
        if self._leaves_as_given and not metrics.ACTIVE:
            if kwargs:
                binding = dispatcher.fast_keywords  # binds natively, never runs the frontend
                if binding is not None:
                    result = binding.call_with(args, kwargs)  # no copy of either
                    if result is not NotImplemented:
                        return result
            else:
                fast = dispatcher.fast
                if fast is not None:
                    result = fast(*args)
                    if result is not NotImplemented:
                        return result
        static = self._static  # None but for static programs, which never take the fast path
        if static is not None:
            return static.call(args, kwargs)
        return self._call(args, kwargs)

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The call past a refusal of the fast entries (or before they exist): arguments bound
        by name and, for tuple parameters, flattened to their leaves (the fast entry tried on
        those), then the dispatcher (a static-domain variant checks its shapes first)."""
        if kwargs:
            args = self._bind(args, kwargs)
        nesting = self._tuple_nesting()
        leaves = args if nesting is None else flatten_arguments(self.name, nesting, args)
        if has_located(leaves):  # the variant for their origins (ADR 0026)
            return call_with_located(self, leaves)
        if self.static_shapes:
            refuse_other_shapes(self, leaves)
        dispatcher = self._dispatcher
        if nesting is None:
            return dispatcher.call(self.definition, args)
        fast = dispatcher.fast
        if fast is not None and not metrics.ACTIVE:
            result = fast(*leaves)
            if result is not NotImplemented:
                return result
        return dispatcher.call(self.definition, leaves)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        return bind_arguments(self.name, self._parameters(), args, kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered[ProgramDefinition, CompilableProgram]:
        """Frontend and translation for example ``args``: the IR and the generated source.

        Without arguments nothing is specialized (every field is taken as contiguous).
        Located arrays (``pipeline.dsl.located``) lower the variant for their origins, the
        one their calls run. ``.compile()`` on the result finishes the walk.

        Raises:
            ArgumentError: the arguments do not match the parameters.
            DSLError: the definition is not valid DSL.
        """
        if self._static is not None:
            return self._static.lower(args, kwargs)
        bound = self._bind(args, kwargs) if kwargs else args
        leaves = self._leaves(bound) if bound else bound
        if has_located(leaves):  # the variant for their origins (ADR 0026)
            return Lowered.of(self._dispatcher, *located_variant(self, leaves))
        return self._lower(self.definition, bound)

    def compile(self, *args: Any, executor: Executor | None = None, **kwargs: Any) -> Any:
        """``self.lower(*args).compile()``: the compiled program for ``args``'s signature,
        installed so that the first call with such arguments runs at once.

        With ``executor`` (any ``concurrent.futures.Executor``) translation and compilation
        run there and a ``Future`` of the compiled program is returned (see
        ``pipeline.compile_many``).

        A program with static parameters compiles one variant per value given: a list or
        tuple of values for a static parameter, several such parameters their product; it
        returns ``{(value, ...): compiled}`` by the values in ``static_params`` order (with
        static domains alone, the variant of the arguments' shapes, compiled).

        Raises:
            RuntimeError: on an embedded backend: embedded programs are not compiled.
        """
        if self._static is not None:
            return self._static.compile(args, kwargs, executor)
        if executor is None:
            return self.lower(*args, **kwargs).compile()
        from pipeline.runners import compile_in_background  # noqa: PLC0415  (runners imports us)

        bound = self._bind(args, kwargs) if kwargs else args
        return compile_in_background(self, self._leaves(bound) if bound else bound, executor)


@attrs.frozen(eq=False)
class FieldOperator(_Definition):
    """A ``@field_operator``: a stencil over fields, callable from programs and directly.

    Called inside a program or another field operator it is inlined (compiled) or evaluated
    on fields (embedded). Called directly with arrays, it needs ``out=`` (an array or tuple)
    and optionally ``domain=`` (a tuple of slices of the output, a dict of absolute bounds
    ``{I: (lo, hi)}``, or one such dict per output, nested like ``out=``), and runs on its
    backend.
    """

    kind = "field_operator"

    def __call__(self, *args: Any, out: Any = None, domain: Any = None, **kwargs: Any) -> Any:
        if embedded_evaluation() or any(
            hasattr(a, "__dsl_builtin__")
            for a in (*flattened(args), *flattened(tuple(kwargs.values())), *flattened(out))
        ):
            if per_output(domain):
                function = self._embedded_function()
                return evaluate_per_domain(self.name, function, args, kwargs, out, domain)
            return self._evaluate_embedded(args, kwargs, in_domain(out, domain))
        return self._dispatcher.call(*self._direct_call(args, kwargs, out, domain))

    def lower(
        self, *args: Any, out: Any = None, domain: Any = None, **kwargs: Any
    ) -> Lowered[ProgramDefinition, CompilableProgram]:
        """Frontend and translation of the direct call ``self(*args, out=out, domain=domain,
        **kwargs)`` on arrays (``.ir``, ``.as_text()``); ``.compile()`` finishes the walk.

        Raises:
            TypeError, ArgumentError: as the direct call would.
            DSLError: the definition is not valid DSL.
        """
        return Lowered.of(self._dispatcher, *self._direct_call(args, kwargs, out, domain))

    def _direct_call(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, domain: Any
    ) -> tuple[ProgramDefinition, tuple[Any, ...]]:
        """The definition of a direct call's program, and the arguments of its executables."""
        if out is None:
            raise TypeError(
                f"calling field operator {self.name!r} directly needs out=<array> (or a tuple "
                "of arrays), and optionally domain= for the output domain: slices, "
                "{I: (lo, hi)}, or one such dict per output"
            )
        outputs = flattened(out)
        definition = self.definition
        if domain is not None:
            definition = attrs.evolve(definition, **direct_domain(self.name, domain, outputs))
        # Tuple parameters are one parameter per component (t__0, t__1, ...).
        args = flattened(args)
        if kwargs:
            flat: dict[str, Any] = {}
            for key, value in kwargs.items():
                if isinstance(value, tuple) or record_of(type(value)) is not None:
                    flat.update({f"{key}__{i}": v for i, v in enumerate(flattened(value))})
                else:
                    flat[key] = value
            names = [n for n in self._parameters() if not n.startswith("__out")]
            args = bind_arguments(self.name, names, args, flat)
        return definition, (*args, *outputs)

    def _evaluate_embedded(self, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
        outputs = flattened(out)
        with evaluating_embedded(), output_domain(outputs):
            result = self._embedded_function()(*args, **kwargs)
        if out is None:
            return result
        results = flattened(result)
        if len(outputs) != len(results):
            raise TypeError(
                f"{self.name!r} returns {len(results)} field(s) but out= gives {len(outputs)}"
            )
        for target, value in zip(outputs, results, strict=True):
            target.__dsl_assign__(value)
        return None


@attrs.frozen(eq=False)
class ScanOperator(_Definition):
    """A ``@scan_operator``: ``(carry, *point values) -> new carry``, swept along an axis.

    Called from a field operator or a program (with ``out=``) on fields, it returns the carry
    at every point of the output domain: the first point along the axis (the last, swept
    backward) gets ``function(init, *values there)``, each next one the function of the
    previous carry. A tuple ``init`` makes a tuple carry and a tuple of results.

    Called directly with arrays, as a field operator is, it needs ``out=`` (an array, or a
    tuple of arrays for a tuple carry) and optionally ``domain=``, and runs on its backend
    as a program of one call. Plain arrays name no dimensions: the scan's axis is the last
    axis of every array, and an array of fewer dimensions than ``out=`` takes its last ones
    (NumPy's broadcasting).
    """

    settings: ScanSettings = attrs.field(kw_only=True)

    kind = "scan_operator"

    def _scan_settings(self) -> ScanSettings:
        return self.settings

    def frontend(self) -> CompilableProgram:
        """A scan operator has no program of its own: it is compiled inside the field
        operator or program that calls it, whose ``frontend()`` shows it; a direct call's
        program depends on its arrays' ranks, and ``lower(arrays..., out=...)`` shows it.

        Raises:
            DSLError: the scan's definition is not valid DSL (located in the user's source).
            TypeError: otherwise, saying so.
        """
        try:
            parse_scan_operator(self.definition)
        except SourceError as error:
            raise user_facing(error) from None
        raise TypeError(
            f"scan operator {self.name!r} has no program of its own: it is compiled inside "
            "the field operator or program that calls it; call frontend() on that one, or "
            f"{self.name}.lower(arrays..., out=...) for the program of a direct call"
        )

    def __call__(self, *args: Any, out: Any = None, domain: Any = None, **kwargs: Any) -> Any:
        values = (*args, *kwargs.values())
        fields = [v for v in values if hasattr(v, "__dsl_scan__")]
        if not fields:
            if embedded_evaluation():
                raise TypeError(
                    f"scan operator {self.name!r} runs on fields: pass it at least one field"
                )
            return self._call_directly(args, kwargs, out, domain)
        out = in_domain(out, domain)
        bound = inspect.signature(self.function).bind(None, *args, **kwargs)
        point_values = tuple(bound.arguments.values())[1:]
        outputs = flattened(out)
        with evaluating_embedded(), output_domain(outputs):
            result = fields[0].__dsl_scan__(
                self._embedded_function(), self.settings, point_values, current_output_domain()
            )
        if out is None:
            return result
        for target, value in zip(outputs, flattened(result), strict=True):
            target.__dsl_assign__(value)
        return None

    def _call_directly(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, domain: Any
    ) -> Any:
        """A call from Python on arrays: a program of this one call, on the operator's backend
        (compiled once per ranks and domain, checked as any program's call)."""
        return self._dispatcher.call(*self._direct_call(args, kwargs, out, domain))

    def lower(
        self, *args: Any, out: Any = None, domain: Any = None, **kwargs: Any
    ) -> Lowered[ProgramDefinition, CompilableProgram]:
        """Frontend and translation of the direct call ``self(*args, out=out, domain=domain,
        **kwargs)`` on arrays: the program of that one call (``.ir``, ``.as_text()``);
        ``.compile()`` finishes the walk.

        Raises:
            TypeError, ArgumentError: as the direct call would.
            DSLError: the definition is not valid DSL.
        """
        return Lowered.of(self._dispatcher, *self._direct_call(args, kwargs, out, domain))

    def _direct_call(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, domain: Any
    ) -> tuple[ProgramDefinition, tuple[Any, ...]]:
        changes, leaves = scan_call(self.name, self.function, self.settings, args, kwargs, out)
        changes.update(direct_domain(self.name, domain, flattened(out)))
        return attrs.evolve(self.definition, **changes), leaves


def scan_operator(
    *, axis: Dimension, forward: bool = True, init: Any, backend: Any = DEFAULT
) -> Callable[[F], ScanOperator]:
    """Declare a scan operator: ``@scan_operator(axis=K, forward=True, init=0.0)``.

    The function takes the carry (a scalar, or a tuple of scalars for a tuple ``init``, or
    a dataclass or NamedTuple of scalars for an ``init`` of that class) and one value per
    point argument, annotated with dtypes, and returns the new carry.

    Raises:
        TypeError: ``axis`` is not a Dimension.
    """
    if not isinstance(axis, Dimension):
        raise TypeError(f"scan_operator(axis=...) takes a Dimension, got {axis!r}")
    record = record_of(type(init))
    if record is not None:  # a named collection is a tuple with field names (ADR 0023)
        init = Named(record.values(init), record)
    settings = ScanSettings(axis.name, bool(forward), init)
    return lambda f: ScanOperator(f, backend=backend, settings=settings)


@overload
def field_operator(function: F, /) -> FieldOperator: ...
@overload
def field_operator(*, backend: Any = ...) -> Callable[[F], FieldOperator]: ...
def field_operator(function: Any = None, /, *, backend: Any = DEFAULT) -> Any:
    """Declare a field operator (``@field_operator`` or ``@field_operator(backend=...)``)."""
    if function is None:
        return lambda f: FieldOperator(f, backend=backend)
    return FieldOperator(function, backend=backend)


@overload
def program(function: F, /) -> Program: ...
@overload
def program(
    *,
    backend: Any = ...,
    static_params: tuple[str, ...] = ...,
    static_domains: bool = ...,
    jit: bool = ...,
) -> Callable[[F], Program]: ...
def program(
    function: Any = None, /, *, backend: Any = DEFAULT, static_params: tuple[str, ...] = (),
    static_domains: bool = False, jit: bool = True
) -> Any:  # fmt: skip
    """Declare a program (``@program`` or ``@program(backend=..., ...)``).

    Args:
        static_params: scalar parameters whose values at each call are compile-time
            constants: each distinct combination runs its own compiled variant (ADR 0025).
        static_domains: the field arguments' shapes are compile-time constants too: each
            distinct combination of shapes runs its own variant, whose domains are constants.
        jit: ``False``: a call whose values (and shapes) were not precompiled with
            ``compile(..., p=[...])`` is refused instead of compiling a variant.

    Raises:
        TypeError: ``backend=None`` (name ``backends.embedded_numpy`` instead), or a name
            in ``static_params`` that is no parameter of the function.
    """
    settings: dict[str, Any] = {"static_params": static_params, "jit": jit}
    settings["static_domains"] = static_domains
    if function is None:
        return lambda f: Program(f, backend=backend, **settings)
    return Program(function, backend=backend, **settings)
