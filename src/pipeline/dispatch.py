"""The dispatcher: the only code between a program call and an executable.

One ``Dispatcher`` per program holds the table from compile-time signature to executable, the
fast path, the metrics, the stage dump and the rebuild of a damaged artifact, for any
toolchain. What is specific to a frontend comes through one small protocol, ``CallConvention``
(the stencil DSL's is ``pipeline.dsl.calls.StencilCalls``). The data's walk::

    program.__call__(*args)
      |- fast path: the last signature's self-checking entry (``fast``; for a keyword
      |  call ``fast_keywords``, which binds them natively): the backend's ``NativeEntry``
      |  (one native call) runs the executable on arguments alike, in all the check reads,
      |  to those of a call it accepted, else its fallback: the executable's
      |  ``fast_entry(*args)``, or the ``RememberedEntry`` of arguments whose verdict cannot
      |  change (JAX arrays)
      '- Dispatcher.call(definition, args)
           key = (calls.definition_key(definition), backend.compile_time_args(args))
           miss -> pipeline.program(ConcreteDefinition(definition, compile-time args))
                -> translate -> compile -> load                (once per key, locked)
           entry.fast_entry(*args)                    (refused: the check explains why)
           or calls.argument_check(program, backend)(args) (remembered), then executable(*args)
           accepted: native_entry.remember(*args), the entry becomes ``fast``

An executable runs only for the key it was built for and only on arguments a check accepted
(or alike, in all the check reads, to arguments it accepted): its own native checks
(``SelfCheckingExecutable``) or its frontend's argument check, so a backend written from
scratch gets the same checks and messages as the built-in ones.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs

from allocators.immutable import frozen_metadata
from pipeline import metrics
from pipeline.errors import ArgumentError, DamagedArtifactError, SourceError, StepOutputError
from pipeline.events import StageDump, dump_directory, subscribe
from pipeline.stages import CompileTimeArgs, ConcreteDefinition, Executable, NamedDefinition
from pipeline.steps import step_name
from pipeline.verdicts import RememberedCheck, RememberedEntry
from pipeline.workflow import CompilePipeline

__all__ = [
    "CallConvention",
    "DispatchBackend",
    "Dispatcher",
    "NativeEntry",
    "NativeEntryType",
    "Specialization",
    "bind_arguments",
    "user_facing",
]

_log = logging.getLogger(__name__)

D = TypeVar("D", bound=NamedDefinition)
D_contra = TypeVar("D_contra", bound=NamedDefinition, contravariant=True)
P = TypeVar("P")


class DispatchBackend(Protocol):
    """What the dispatcher needs of a backend (``backends.Backend`` values provide it)."""

    @property
    def name(self) -> str: ...

    @property
    def pipeline(self) -> CompilePipeline[Any, Any, Any, Any, Any]: ...

    def compile_time_args(self, args: tuple[Any, ...]) -> CompileTimeArgs:
        """What of ``args`` an executable is specialized for."""
        ...


class NativeEntry(Protocol):
    """A native fast entry of one executable (``backends.entries``: ``sf_entries.Entry``).

    ``entry(*args, **kwargs)`` binds the arguments to the parameters and runs the executable
    if nothing the argument check reads tells them apart from the arguments of a call
    ``remember`` recorded; else it returns its fallback's answer, or ``NotImplemented``
    (nothing ran) when it has none or the binding failed.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def call_with(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``self(*args, **kwargs)``, without copying ``args`` and ``kwargs``."""
        ...

    def remember(self, *args: Any) -> bool:
        """Record ``args``, which the full check just accepted; whether they could be (only
        NumPy arrays, plain scalars and arrays whose metadata is frozen can; nothing for an
        entry without executable)."""
        ...


class NativeEntryType(Protocol):
    """What a backend's ``native_entries`` attribute holds (``None``: none, no compiler):
    ``Entry(executable or None, parameter names, self-checking fallback or None, frozen)``,
    where ``frozen(value)`` is not ``None`` for an argument whose checked properties cannot
    change (``allocators.frozen_metadata``)."""

    def __call__(
        self,
        executable: object,
        parameters: tuple[str, ...],
        fallback: object,
        frozen: Callable[[object], Hashable | None],
        /,
    ) -> NativeEntry: ...


class CallConvention(Protocol[D_contra, P]):
    """What a frontend tells the dispatcher about calls of its programs.

    ``D`` is the frontend's definition (what its pipeline's frontend reads, inside a
    ``ConcreteDefinition``); ``P`` its program (what the frontend makes of it).
    """

    def definition_key(self, definition: D_contra) -> Hashable:
        """What tells apart definitions that one dispatcher compiles separately (the DSL:
        a field operator's output domain); ``None`` for the program's own definition, whose
        calls alone take the fast path."""
        ...

    def program(self, output: object) -> P:
        """The frontend's ``output`` as a program of this frontend.

        Raises:
            TypeError: it is not one (the dispatcher names the frontend step).
        """
        ...

    def parameters(self, program: P) -> Sequence[str]:
        """The program's parameter names, in the order its executable takes them."""
        ...

    def argument_check(
        self, program: P, backend: DispatchBackend
    ) -> Callable[[tuple[Any, ...]], None]:
        """The check of a call's arguments (bound, in parameter order) run before the
        executable; it raises ``ArgumentError`` (or ``DomainError``) naming the argument."""
        ...


@attrs.frozen
class Specialization(Generic[P]):
    """Everything one signature of one program went through, kept by the dispatcher.

    Attributes:
        program: the frontend's output for the signature.
        parameters: its parameters' names, in the order the executable takes them.
        source: the translation's output.
        artifact: the compilation's output.
        executable: the loading's output.
        check: the frontend's argument check for ``program`` on this backend, skipped for
            arguments it accepted before that cannot have changed since
            (``pipeline.verdicts``: JAX arrays and plain scalars); returns whether the
            verdict is remembered.
        fast_entry: the executable's self-checking entry, if it offers one.
        remembered_entry: for an executable without ``fast_entry``, the entry that runs it on
            arguments ``check`` remembers (the fast slot once such a call was checked).
        native_entry: the backend's native entry (``None`` without one): it binds keywords,
            runs the executable on the arguments of accepted calls it remembers, and else
            falls back to ``fast_entry`` or ``remembered_entry``.
    """

    program: P
    parameters: tuple[str, ...]
    source: object
    artifact: object
    executable: Executable
    check: RememberedCheck = attrs.field(repr=False)
    fast_entry: Callable[..., Any] | None
    remembered_entry: RememberedEntry | None = attrs.field(repr=False)
    native_entry: NativeEntry | None = attrs.field(default=None, repr=False)


def user_facing(error: SourceError) -> SourceError:
    """``error`` without our frames: its message already points into the user's source."""
    return error.with_traceback(None)


def bind_arguments(
    program: str, names: Sequence[str], args: Sequence[Any], kwargs: Mapping[str, Any]
) -> tuple[Any, ...]:
    """Order positional and keyword arguments by parameter.

    Raises:
        ArgumentError: a missing, repeated or unknown argument, naming it.
    """
    if len(args) > len(names):
        raise ArgumentError(
            f"{program}() takes {len(names)} argument(s) ({', '.join(names)}), got {len(args)}"
        )
    bound = list(args) + [_UNSET] * (len(names) - len(args))
    for key, value in kwargs.items():
        if key not in names:
            raise ArgumentError(
                f"{program}() has no parameter {key!r}; it takes {', '.join(names)}"
            )
        index = names.index(key)
        if bound[index] is not _UNSET:
            raise ArgumentError(f"{program}() got argument {key!r} twice")
        bound[index] = value
    missing = [n for n, v in zip(names, bound, strict=True) if v is _UNSET]
    if missing:
        raise ArgumentError(f"{program}() is missing argument(s): {', '.join(missing)}")
    return tuple(bound)


class _Unset:
    pass


_UNSET = _Unset()


class Dispatcher(Generic[D, P]):
    """Per program: compile-time signature -> ``Specialization``, built on first use.

    ``fast`` is the self-checking entry of the last call's signature (``None`` until a
    self-checking executable ran, or a call the checks' memory keeps was accepted): the
    program's ``__call__`` tries it before anything else. ``fast_keywords`` is the same
    entry when it is a ``NativeEntry``, which binds keyword arguments natively (``None``: a
    keyword call binds them in Python, then tries ``fast``).

    Args:
        backend: the backend whose pipeline compiles the program.
        calls: what the program's frontend says of its calls.
        metrics_key: where the program's metrics are kept.
    """

    __slots__ = ("_lock", "_metrics_key", "_table", "backend", "calls", "fast", "fast_keywords")

    def __init__(
        self, backend: DispatchBackend, calls: CallConvention[D, P], metrics_key: str
    ) -> None:
        self.backend = backend
        self.calls = calls
        self.fast: Callable[..., Any] | None = None
        self.fast_keywords: NativeEntry | None = None
        self._metrics_key = metrics_key
        self._table: dict[tuple[Hashable, Hashable], Specialization[P]] = {}
        # Held while a signature compiles: concurrent first calls build it once.
        self._lock = threading.Lock()

    def refuse_unless_compiled(self, name: str) -> None:
        """Refuse to compile ``name`` ahead of its calls on a backend that does not compile.

        Raises:
            RuntimeError: the backend's pipeline does not compile (an embedded backend runs
                the Python definition itself), saying what to do.
        """
        if not self.backend.pipeline.compiles:
            raise RuntimeError(
                f"{name!r} runs on the embedded backend {self.backend.name!r}: embedded "
                "programs are not compiled; use .with_backend(<a compiled backend>), e.g. "
                "backends.c_cpu, to compile"
            )

    def concrete(self, definition: D, args: tuple[Any, ...]) -> ConcreteDefinition[D]:
        """``definition`` with the compile-time arguments of ``args`` (none without ``args``)."""
        if not args:
            return ConcreteDefinition(definition)
        return ConcreteDefinition(definition, self.backend.compile_time_args(args))

    def frontend(self, definition: D) -> P:
        """The pipeline's frontend output for ``definition`` (no compile-time arguments).

        Raises:
            SourceError: the definition is not valid (located in the user's source).
        """
        return self.program(ConcreteDefinition(definition))

    def program(self, concrete: ConcreteDefinition[D]) -> P:
        """The pipeline's frontend output for ``concrete``.

        Raises:
            SourceError: the definition is not valid (located in the user's source).
            StepOutputError: the frontend step returned no program of this frontend.
        """
        try:
            return self._program(concrete)
        except SourceError as error:
            raise user_facing(error) from None

    def lower(self, concrete: ConcreteDefinition[D], args: tuple[Any, ...]) -> tuple[P, object]:
        """Frontend and translation for ``concrete``, made from example ``args``.

        Raises:
            ArgumentError: the number of ``args`` does not match the parameters.
            SourceError: the definition is not valid (located in the user's source).
        """
        try:
            return self._lower(concrete, args)
        except SourceError as error:
            raise user_facing(error) from None

    def _lower(self, concrete: ConcreteDefinition[D], args: tuple[Any, ...]) -> tuple[P, object]:
        program = self._program(concrete)
        parameters = self.calls.parameters(program)
        if args and len(args) != len(parameters):
            bind_arguments(concrete.definition.name, parameters, args, {})
        return program, self.backend.pipeline.translate(program)

    def _program(self, concrete: ConcreteDefinition[D]) -> P:
        pipeline = self.backend.pipeline
        output = pipeline.program(concrete)
        try:
            return self.calls.program(output)
        except TypeError as error:
            raise StepOutputError(
                f"the frontend step {step_name(pipeline.frontend)} returned "
                f"{type(output).__module__}.{type(output).__qualname__}: {error}; fix the "
                "step's return value"
            ) from None

    def specialization(self, definition: D, args: tuple[Any, ...]) -> Specialization[P]:
        """The table's entry for ``args``'s signature, built (and recorded) on a miss."""
        compile_time_args = self.backend.compile_time_args(args)
        found = self._table.get((self.calls.definition_key(definition), compile_time_args))
        if found is None:
            found = self.compiled(ConcreteDefinition(definition, compile_time_args), args)
        return found

    def compiled(
        self,
        concrete: ConcreteDefinition[D],
        args: tuple[Any, ...] = (),
        lowered: tuple[P, object] | None = None,
        artifact: object | None = None,
    ) -> Specialization[P]:
        """The entry for ``concrete`` (made from example ``args``), built once.

        Args:
            lowered: its frontend and translation outputs, when the caller has them already.
            artifact: its compilation output, made elsewhere (a compile worker): only loading
                runs here (and, if the artifact turns out damaged, a compilation here).
        """
        key = (self.calls.definition_key(concrete.definition), concrete.compile_time_args)
        with self._lock:
            found = self._table.get(key)
            if found is None:
                found = self._build(concrete, args, lowered, artifact)
                self._table[key] = found
        return found

    def call(self, definition: D, args: tuple[Any, ...]) -> Any:
        """Run ``definition`` on ``args`` (bound, in parameter order): the slow path."""
        found = self.specialization(definition, args)
        if not metrics.ACTIVE:
            return self.run(found, definition, args)
        start = time.perf_counter()
        result = self.run(found, definition, args)
        metrics.record_call(self._metrics_key, time.perf_counter() - start)
        return result

    def run(self, found: Specialization[P], definition: D, args: tuple[Any, ...]) -> Any:
        """Run ``found``'s executable on ``args``, checked: natively by its ``fast_entry``
        (the check then explains a refusal), else by the frontend's check first.

        The entry that accepted a call of the program's own definition (``definition_key``
        None) becomes ``fast``: the ``fast_entry``, or the ``remembered_entry`` when the
        check remembers the verdict of ``args``.

        Raises:
            ArgumentError, DomainError: the number of arguments is not the number of
                parameters, or an argument fails a check.
        """
        own = self.calls.definition_key(definition) is None
        native = found.native_entry
        fast = found.fast_entry
        if fast is not None:
            result = fast(*args)
            if result is not NotImplemented:
                if own:
                    self._set_fast(fast, native)
                return result
        if len(args) != len(found.parameters):
            bind_arguments(definition.name, found.parameters, args, {})  # raises, naming them
        remembered = found.check(args)
        if own:
            # Only after the full check accepted ``args``: the native entry then runs the
            # executable on arguments alike to these in everything the check reads.
            if native is not None and (native.remember(*args) or remembered):
                self._set_fast(native, native)
            elif remembered and found.remembered_entry is not None:
                self._set_fast(found.remembered_entry, None)
        return found.executable(*args)

    def _set_fast(self, entry: Callable[..., Any], native: NativeEntry | None) -> None:
        """Make ``entry`` the fast slot, and ``native`` (``entry`` itself, or ``None``) the
        slot of keyword calls: each slot alone is always a self-checking entry."""
        self.fast = entry
        self.fast_keywords = native

    def _build(
        self,
        concrete: ConcreteDefinition[D],
        args: tuple[Any, ...],
        lowered: tuple[P, object] | None,
        artifact: object | None,
    ) -> Specialization[P]:
        """Walk the pipeline for one signature; a damaged artifact is rebuilt once."""
        start = time.perf_counter()
        dump = dump_directory()
        try:
            with subscribe(StageDump(dump)) if dump is not None else contextlib.nullcontext():
                program, source = self._lower(concrete, args) if lowered is None else lowered
                try:
                    found = self._load(concrete, program, source, artifact)
                except DamagedArtifactError as error:
                    _log.warning("%s; rebuilding %s", error, concrete.definition.name)
                    found = self._load(concrete, program, source, None)
        except SourceError as error:
            raise user_facing(error) from None
        if metrics.enabled():
            metrics.record_compile(self._metrics_key, time.perf_counter() - start)
        return found

    def _load(
        self, concrete: ConcreteDefinition[D], program: P, source: object, artifact: object | None
    ) -> Specialization[P]:
        """The rest of the walk from ``source``: compilation (unless ``artifact`` is its
        output already) and loading, and the checks the executable is run behind."""
        pipeline = self.backend.pipeline
        artifact = pipeline.compile(source) if artifact is None else artifact
        executable = pipeline.load(artifact)
        fast_entry = getattr(executable, "fast_entry", None)
        check = RememberedCheck(self.calls.argument_check(program, self.backend))
        remembered_entry = (
            None
            if fast_entry is not None
            else RememberedEntry(
                check, executable, self.backend.compile_time_args, concrete.compile_time_args
            )
        )
        parameters = tuple(self.calls.parameters(program))
        entries: NativeEntryType | None = getattr(self.backend, "native_entries", None)
        native = (
            None
            if entries is None
            # A self-checking executable is its own check: the entry only binds keywords.
            else entries(
                None if fast_entry is not None else executable,
                parameters,
                fast_entry if fast_entry is not None else remembered_entry,
                frozen_metadata,
            )
        )
        return Specialization(
            program,
            parameters,
            source,
            artifact,
            executable,
            check,
            fast_entry,
            remembered_entry,
            native,
        )
