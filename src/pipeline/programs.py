"""Program and field-operator objects: the user's handle on a definition and a backend.

``Program.__call__`` is the top of the data's walk: it asks the backend for the
dispatch key of the arguments, finds the executable in the program's dispatch table (a
miss compiles or prepares it once per key) and calls it. Backends implement the small
``ProgramBackend`` protocol; this module never imports ``backends`` except to resolve the
default backend lazily.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar, cast, overload

import attrs

from pipeline import metrics
from pipeline.arguments import bind_arguments
from pipeline.errors import DSLError
from pipeline.frontend.source import captured_values, with_captured_globals
from pipeline.stages import CompilableProgram, Executable, ProgramDefinition, ProgramSource

__all__ = ["FieldOperator", "Program", "ProgramBackend", "field_operator", "program"]

F = TypeVar("F", bound=Callable[..., Any])


class ProgramBackend(Protocol):
    """What a program needs from its backend (``backends.Backend`` implements it)."""

    name: str

    def dispatch_key(self, args: tuple[Any, ...]) -> Hashable:
        """The part of the arguments an executable is specialized for."""
        ...

    def load_program(self, definition: ProgramDefinition, args: tuple[Any, ...]) -> Executable:
        """An executable for ``definition`` specialized for ``args``'s dispatch key."""
        ...

    def translate_program(
        self, definition: ProgramDefinition, args: tuple[Any, ...]
    ) -> ProgramSource:
        """The generated source for ``definition`` and ``args`` (compiled backends only)."""
        ...

    def frontend_program(self, definition: ProgramDefinition) -> CompilableProgram:
        """The frontend's output for ``definition`` (typed, inlined IR)."""
        ...

    @property
    def __field_allocator__(self) -> Any: ...


def _default_backend() -> ProgramBackend:
    # Resolved lazily: `backends` imports `pipeline`, so `pipeline` cannot import it at load.
    return importlib.import_module("backends").DEFAULT_BACKEND  # type: ignore[no-any-return]


class _DefaultBackend:
    def __repr__(self) -> str:
        return "backends.DEFAULT_BACKEND"


DEFAULT = _DefaultBackend()


def _check_backend(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        raise TypeError(
            f"backend=None is not accepted for {getattr(instance, 'name', 'a program')!r}; "
            "pass backends.embedded_numpy to run the Python definition on NumPy (the default), "
            "or a compiled backend such as backends.c_cpu"
        )
    if not callable(getattr(value, "dispatch_key", None)) or not isinstance(
        getattr(value, "name", None), str
    ):
        raise TypeError(f"backend must be a backends.Backend, got {value!r}")


def _resolve_backend(value: object) -> Any:
    return _default_backend() if value is DEFAULT else value


@attrs.frozen(eq=False)
class _Definition:
    """Common part of programs and field operators."""

    function: Callable[..., Any]
    backend: ProgramBackend = attrs.field(
        default=cast(ProgramBackend, DEFAULT),
        converter=_resolve_backend,
        validator=_check_backend,
        kw_only=True,
    )
    _table: dict[tuple[Any, Hashable], Executable] = attrs.field(
        factory=dict, init=False, repr=False
    )
    _definition: list[ProgramDefinition] = attrs.field(factory=list, init=False, repr=False)
    # The executable of the last call (its native entry when it has one): one try before
    # the dispatch table, which makes a repeated call one native call.
    _fast: list[Any] = attrs.field(factory=lambda: [None], init=False, repr=False)
    # The function run embedded, with the globals captured on first use (see
    # ``with_captured_globals``).
    _frozen: list[Any] = attrs.field(factory=list, init=False, repr=False)

    kind = "program"

    @property
    def name(self) -> str:
        """The function's name."""
        return self.function.__name__

    @property
    def metrics_key(self) -> str:
        """Where this program's metrics are kept: ``"<name>@<backend name>"``."""
        return f"{self.name}@{self.backend.name}"

    @property
    def definition(self) -> ProgramDefinition:
        """The definition, with the global and closure values its body uses."""
        if not self._definition:
            self._definition.append(
                ProgramDefinition(self.function, self.kind, captured_values(self.function))
            )
        return self._definition[0]

    @property
    def __field_allocator__(self) -> Any:
        """The backend's allocator, so that ``allocators.zeros(..., allocator=prog)`` works."""
        return self.backend.__field_allocator__

    def __fingerprint__(self) -> object:
        return self.definition

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def with_backend(self, backend: ProgramBackend) -> Any:
        """The same definition on another backend (a new object; ``self`` is unchanged)."""
        return attrs.evolve(self, backend=backend)

    def frontend(self) -> CompilableProgram:
        """The frontend's output: typed, inlined IR with extents (``str(...ir)`` prints it).

        Raises:
            DSLError: the definition is not valid DSL (located in the user's source).
        """
        try:
            return self.backend.frontend_program(self.definition)
        except DSLError as error:
            raise _user_facing(error) from None

    def _executable(self, definition: ProgramDefinition, args: tuple[Any, ...]) -> Executable:
        key = (definition.output_slices, self.backend.dispatch_key(args))
        executable = self._table.get(key)
        if executable is None:
            start = time.perf_counter()
            try:
                executable = self.backend.load_program(definition, args)
            except DSLError as error:
                raise _user_facing(error) from None
            if metrics.enabled():
                metrics.record_compile(self.metrics_key, time.perf_counter() - start)
            self._table[key] = executable
        return executable

    def _run(self, definition: ProgramDefinition, args: tuple[Any, ...]) -> Any:
        executable = self._executable(definition, args)
        if definition.output_slices is None:
            self._fast[0] = getattr(executable, "fast_entry", executable)
        if not metrics.enabled():
            return executable(*args)
        start = time.perf_counter()
        result = executable(*args)
        metrics.record_call(self.metrics_key, time.perf_counter() - start)
        return result


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

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fast = self._fast[0]
        if fast is not None and not kwargs and not metrics.ACTIVE:
            result = fast(*args)
            if result is not NotImplemented:
                return result
        if kwargs:
            names = [p.name for p in self.frontend().ir.params]
            args = bind_arguments(self.name, names, args, kwargs)
        return self._run(self.definition, args)

    def compile(self, *args: Any) -> Executable:
        """Compile (or fetch) the executable for example ``args`` without running it.

        Raises:
            RuntimeError: on an embedded backend: embedded programs are not compiled.
        """
        if not hasattr(self.backend, "pipeline") or _is_embedded(self.backend):
            raise RuntimeError(
                f"{self.name!r} runs on the embedded backend {self.backend.name!r}: embedded "
                "programs are not compiled; use .with_backend(backends.c_cpu) to compile"
            )
        return self._executable(self.definition, args)

    def translate(self, *args: Any) -> ProgramSource:
        """The generated source for example ``args`` (frontend + translation only)."""
        if _is_embedded(self.backend):
            raise RuntimeError(
                f"{self.name!r} runs on the embedded backend {self.backend.name!r}, which "
                "generates no source; use .with_backend(...) with a compiled backend"
            )
        return self.backend.translate_program(self.definition, args)


def _user_facing(error: DSLError) -> DSLError:
    # The message already points into the user's source; our parser's frames would only
    # push it off the screen.
    return error.with_traceback(None)


def _is_embedded(backend: object) -> bool:
    return getattr(backend, "is_embedded", False) is True


@attrs.frozen(eq=False)
class FieldOperator(_Definition):
    """A ``@field_operator``: a stencil over fields, callable from programs and directly.

    Called inside a program or another field operator it is inlined (compiled) or evaluated
    on fields (embedded). Called directly with arrays, it needs ``out=`` (an array or tuple)
    and optionally ``domain=`` (a tuple of slices of the output), and runs on its backend.
    """

    kind = "field_operator"

    def __call__(self, *args: Any, out: Any = None, domain: Any = None) -> Any:
        outputs = out if isinstance(out, tuple) else (out,)
        if any(hasattr(a, "__dsl_builtin__") for a in (*args, *outputs)):
            return self._evaluate_embedded(args, out)
        if out is None:
            raise TypeError(
                f"calling field operator {self.name!r} directly needs out=<array> (or a tuple "
                "of arrays), and optionally domain=(slice, ...) for the output domain"
            )
        definition = self._direct_definition(domain)
        return self._run(definition, (*args, *outputs))

    def _evaluate_embedded(self, args: tuple[Any, ...], out: Any) -> Any:
        if not self._frozen:
            definition = self.definition
            self._frozen.append(
                with_captured_globals(definition.function, dict(definition.captured))
            )
        result = self._frozen[0](*args)
        if out is None:
            return result
        outputs = out if isinstance(out, tuple) else (out,)
        results = result if isinstance(result, tuple) else (result,)
        if len(outputs) != len(results):
            raise TypeError(
                f"{self.name!r} returns {len(results)} field(s) but out= gives {len(outputs)}"
            )
        for target, value in zip(outputs, results, strict=True):
            target.__dsl_assign__(value)
        return None

    def _direct_definition(self, domain: Any) -> ProgramDefinition:
        if domain is None:
            return self.definition
        items = domain if isinstance(domain, tuple) else (domain,)
        if not all(isinstance(s, slice) and s.step is None for s in items):
            raise TypeError(f"domain= must be a tuple of slices without step, got {domain!r}")
        slices = tuple((s.start, s.stop) for s in items)
        return attrs.evolve(self.definition, output_slices=slices)


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
def program(*, backend: Any = ...) -> Callable[[F], Program]: ...
def program(function: Any = None, /, *, backend: Any = DEFAULT) -> Any:
    """Declare a program (``@program`` or ``@program(backend=...)``).

    Raises:
        TypeError: ``backend=None`` (name ``backends.embedded_numpy`` instead).
    """
    if function is None:
        return lambda f: Program(f, backend=backend)
    return Program(function, backend=backend)
