"""Static parameters and static domains: a program's variants, one per compile-time value.

``@program(static_params=("lo",), static_domains=True, jit=False)`` makes a program whose
calls are each the call of a *variant*: the program with its static parameters bound to the
call's values (``Program.with_bound_args``: typed constants folded into the code) and, with
``static_domains``, its field parameters' shapes fixed (``ProgramDefinition.static_shapes``:
the frontend makes every output domain a constant). The data's walk::

    program(*args, **kwargs) -> (past the fast block, never taken) StaticVariants.call
      key = ((type, value) of each static argument, shape of each field argument)
      hit  -> the variant's fast entry on the other arguments (else its ``_call``)
      miss -> the variant of the values (made once, checked by its frontend; refused
              when the program was made with jit=False and they were not precompiled)

Each variant is an ordinary program with its own dispatcher, so its calls, its caches (in
memory and on disk) and its executables are those of ``with_bound_args``'s programs.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from pipeline import metrics
from pipeline.dispatch import bind_arguments
from pipeline.dsl.errors import DomainError
from pipeline.dsl.evaluation import flattened
from pipeline.dsl.types import FieldType, ScalarType
from pipeline.errors import ArgumentError

if TYPE_CHECKING:
    from pipeline.dsl.programs import Program
    from pipeline.dsl.stages import CompilableProgram, ProgramDefinition
    from pipeline.runners import CompileTarget
    from pipeline.staged import Lowered

__all__ = ["StaticVariants", "check_static_params"]

#: A variant's key: per static parameter ``(type, value)`` (``2``, ``2.0`` and ``True`` hash
#: alike but are not the same argument), then, with static domains, each argument's shape.
Key = tuple[Any, ...]


def static_names(values: Iterable[str]) -> tuple[str, ...]:
    """``@program(static_params=...)`` as a tuple of names.

    Raises:
        TypeError: one string (a tuple of its letters is never what was meant).
    """
    if isinstance(values, str):
        raise TypeError(f"static_params takes a tuple of names, like ({values!r},)")
    return tuple(values)


def check_static_params(program: Program) -> None:
    """Refuse, at decoration, ``static_params`` that name no parameter of the function or a
    bound one (whether each is a scalar is checked at the first use, by the frontend).

    Raises:
        TypeError: naming the program and the parameter.
    """
    names = program.function.__code__.co_varnames[: program.function.__code__.co_argcount]
    for name in program.static_params:
        if name not in names:
            raise TypeError(
                f"@program(static_params=...) of {program.name!r} names {name!r}, which is no "
                f"parameter of it; its parameters are {', '.join(names)}"
            )
        if name in program.bound:
            raise TypeError(
                f"{program.name}(): parameter {name!r} is bound (to {program.bound[name]!r}) "
                "and cannot be static too; leave it out of static_params"
            )
    if len(set(program.static_params)) != len(program.static_params):
        raise TypeError(f"static_params of {program.name!r} names a parameter twice")


class StaticVariants:
    """Per program with static parameters or static domains: its variants by key.

    Made by the program; ``call`` is its ``__call__`` past the program's own checks.
    """

    __slots__ = (
        "_arity",
        "_by_value",
        "_key",
        "_lock",
        "_names",
        "_others",
        "_others_of",
        "_positions",
        "_program",
        "_table",
    )

    def __init__(self, program: Program) -> None:
        self._program = program
        self._names: tuple[str, ...] | None = None  # the parameters, read at first use
        self._positions: tuple[int, ...] = ()  # where the static arguments are
        self._others: tuple[int, ...] = ()  # where the variants' arguments are
        self._arity = -1  # the number of parameters, once read (-1: bind the first call)
        # Made once the positions are known: the hot path calls them without a lookup.
        self._key: Callable[[tuple[Any, ...]], Key] = self._first_key
        self._others_of: Callable[[tuple[Any, ...]], tuple[Any, ...]] = tuple
        self._table: dict[Key, Program] = {}  # by key as called (numpy scalars included)
        self._by_value: dict[Key, Program] = {}  # by key of plain Python numbers
        self._lock = threading.Lock()

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run the variant of ``args``'s static values (and shapes), made on a miss.

        Raises:
            ArgumentError: a missing or unknown argument, an unhashable static value, or
                (``jit=False``) values that were not precompiled.
            DSLTypeError: a static value that does not fit its parameter's dtype.
        """
        if kwargs or len(args) != self._arity:
            names = self._names if self._names is not None else self._read_parameters()
            args = bind_arguments(self._program.name, names, args, kwargs)
        try:
            key = self._key(args)
            variant = self._table.get(key)
        except (TypeError, AttributeError):  # unhashable, or a field that is no array
            key = self._checked_key(args)
            variant = self._table.get(key)
        if variant is None:
            variant = self._variant(key, args, precompiling=False)
        # The key holds the shapes: the variant's fast entry takes the call as given.
        fast, nesting = variant._dispatcher.fast, variant._nesting
        if fast is not None and not metrics.ACTIVE and nesting and nesting[0] is None:
            result = fast(*self._others_of(args))
            if result is not NotImplemented:
                return result
        return variant._call(self._others_of(args), {})

    def compile(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], executor: Executor | None
    ) -> Any:
        """Compile the variants of the values given (a list or tuple of values for a static
        parameter gives several; several such parameters, their product).

        Returns:
            for static parameters, ``{(value, ...): compiled program}`` by the values in
            ``static_params`` order; else (static domains alone) the compiled program. With
            ``executor``, ``Future``\\ s of them.

        Raises:
            RuntimeError: on an embedded backend (embedded programs are not compiled).
        """
        names = self._names if self._names is not None else self._read_parameters()
        bound = bind_arguments(self._program.name, names, args, kwargs)
        choices = [_values(bound[i]) for i in self._positions]
        compiled: dict[tuple[Any, ...], Any] = {}
        for values in itertools.product(*choices):
            call = list(bound)
            for position, value in zip(self._positions, values, strict=True):
                call[position] = value
            key = self._checked_key(tuple(call))
            variant = self._variant(key, tuple(call), precompiling=True, remember=False)
            others = [call[i] for i in self._others]
            compiled[values] = variant.compile(*others, executor=executor)
            self._remember(key, variant)
        return compiled if self._program.static_params else compiled[()]

    def target(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> CompileTarget[ProgramDefinition, CompilableProgram]:
        """What ``call`` runs for these arguments: the target of the variant of their values
        (and shapes), made and remembered here (``compile_many`` precompiles it, so that
        with ``jit=False`` too the calls find it).

        Raises:
            ArgumentError: a missing or unknown argument, or a static parameter given
                several values or an unhashable one (give one job per value).
        """
        names = self._names if self._names is not None else self._read_parameters()
        bound = bind_arguments(self._program.name, names, args, kwargs)
        for name, position in zip(self._program.static_params, self._positions, strict=True):
            if isinstance(bound[position], list | tuple):
                raise ArgumentError(
                    f"argument {name!r} of {self._program.name}() is static: a call (and so "
                    f"a compile_many job) gives it one value, got {bound[position]!r}; give "
                    f"one job per value, or {self._program.name}.compile(..., {name}=[...])"
                )
        variant = self._variant(self._checked_key(bound), bound, precompiling=True)
        return variant.compile_target(self._others_of(bound), {})

    def variants(self) -> tuple[Program, ...]:
        """The variants made so far, in the order they were made."""
        with self._lock:
            return tuple(self._by_value.values())

    def lower(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Lowered[ProgramDefinition, CompilableProgram]:
        """The ``lower`` of the variant of ``args``'s values (nothing is remembered)."""
        names = self._names if self._names is not None else self._read_parameters()
        bound = bind_arguments(self._program.name, names, args, kwargs)
        variant = self._variant(self._checked_key(bound), bound, precompiling=True, remember=False)
        return variant.lower(*[bound[i] for i in self._others])

    def _checked_key(self, args: tuple[Any, ...]) -> Key:
        """``args``'s key, where the fast key function fails: an unhashable static value is
        refused; a field argument that is no array keys by what it is (its variant refuses it).

        Raises:
            ArgumentError: an unhashable static value, naming it.
        """
        try:
            key = self._key(args)
            hash(key)
        except TypeError:
            raise self._unhashable(args) from None
        except AttributeError:
            key = (*_typed_values(self._positions)(args), *map(_shape, args))
        return key

    def _first_key(self, args: tuple[Any, ...]) -> Key:
        if self._names is None:
            self._read_parameters()
        return self._key(args)

    def _read_parameters(self) -> tuple[str, ...]:
        """The parameters' names, once; static parameters that are not scalars refused.

        Raises:
            TypeError: a static parameter that is a field or a tuple, naming it.
        """
        program = self._program
        names = program._parameters()
        types = {param.name: param.type for param in program.frontend().ir.params}
        for name in program.static_params:
            if not isinstance(types.get(name), ScalarType):
                raise TypeError(
                    f"@program(static_params=...) of {program.name!r} names {name!r}, which "
                    "is not a scalar parameter; only scalar parameters can be static"
                )
        self._positions = tuple(names.index(name) for name in program.static_params)
        self._others = tuple(i for i in range(len(names)) if i not in self._positions)
        # Static domains: the shapes of the fields, and of the leaves of tuple parameters
        # (whose written names are not the IR's).
        fields = tuple(i for i, name in enumerate(names) if isinstance(types.get(name), FieldType))
        nested = tuple(i for i, name in enumerate(names) if name not in types)
        self._key = (
            _key_function(self._positions, fields, nested)
            if program.static_domains
            else _typed_values(self._positions)
        )
        self._others_of = _picker(self._others)
        self._names = names
        self._arity = len(names)
        return names

    def _variant(
        self, key: Key, args: tuple[Any, ...], *, precompiling: bool, remember: bool = True
    ) -> Program:
        """The variant of ``args``'s values: found by value, or made and checked (and, if
        ``remember``, recorded under ``key``).

        Raises:
            ArgumentError: ``jit=False`` and the values were not precompiled.
            DSLTypeError: a value that does not fit its parameter's dtype.
        """
        program = self._program
        values = {
            name: _plain(args[i])
            for name, i in zip(program.static_params, self._positions, strict=True)
        }
        shapes = self._shapes(args) if program.static_domains else {}
        plain = _plain_key(values, shapes)
        with self._lock:
            variant = self._by_value.get(plain)
            if variant is None:
                if not (program.jit or precompiling):
                    raise self._refusal(values, shapes)
                variant = attrs.evolve(
                    program,
                    bound={**program.bound, **values},
                    static_params=(),
                    static_domains=False,
                    jit=True,
                    static_shapes=shapes,
                )
                variant.frontend()  # a value that does not fit its dtype: DSLTypeError
            if remember:
                self._by_value[plain] = variant
                self._table[key] = variant
        return variant

    def _remember(self, key: Key, variant: Program) -> None:
        values = {name: variant.bound[name] for name in self._program.static_params}
        with self._lock:
            self._by_value[_plain_key(values, variant.static_shapes)] = variant
            self._table[key] = variant

    def _shapes(self, args: tuple[Any, ...]) -> dict[str, tuple[int, ...]]:
        """The shape of each field parameter (by the frontend's name: a tuple's leaves)."""
        program = self._program
        leaves = program._leaves(args)
        params = program.frontend().ir.params
        return {
            param.name: tuple(int(n) for n in leaf.shape)
            for param, leaf in zip(params, leaves, strict=False)
            if not isinstance(param.type, ScalarType) and hasattr(leaf, "shape")
        }

    def _refusal(
        self, values: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]
    ) -> ArgumentError:
        program = self._program
        made = sorted(
            {_describe(v.bound, v.static_shapes, program) for v in self._by_value.values()}
        )
        return ArgumentError(
            f"{program.name}() was made with jit=False and has no precompiled variant for "
            f"{_describe(values, shapes, program)} (precompiled: {'; '.join(made) or 'none'}); "
            f"precompile it with {program.name}.compile(..., <parameter>=[<values>]), or make "
            "the program with jit=True"
        )

    def _unhashable(self, args: tuple[Any, ...]) -> ArgumentError:
        found = [
            (self._program.static_params[n], args[i])
            for n, i in enumerate(self._positions)
            if not _hashable(args[i])
        ]
        if not found:  # an argument whose shape cannot be hashed (static domains)
            return ArgumentError(
                f"{self._program.name}() keys its variants by its fields' shapes, and an "
                "argument's shape is not a tuple of ints; pass arrays"
            )
        name, value = found[0]
        return ArgumentError(
            f"argument {name!r} of {self._program.name}() is static, so it must be a number; "
            f"got {type(value).__name__} {value!r}"
        )


def refuse_other_shapes(variant: Program, leaves: tuple[Any, ...]) -> None:
    """Refuse field arguments of other shapes than ``variant``'s static ones: its domains
    are constants for those (a longer array would be computed only in part).

    Raises:
        DomainError: naming the program, the argument and both shapes.
    """
    checks = variant._shape_checks
    if not checks:
        params = variant.frontend().ir.params
        shapes = variant.static_shapes
        checks.append(
            tuple((i, p.name, shapes[p.name]) for i, p in enumerate(params) if p.name in shapes)
        )
    for index, name, shape in checks[0]:
        got = getattr(leaves[index], "shape", None) if index < len(leaves) else None
        if got is not None and tuple(got) != shape:
            raise DomainError(
                f"argument {name!r} of {variant.name}() has shape {tuple(got)}, but this "
                f"variant of a static-domain program is compiled for {shape}; call the "
                "program itself, which runs the variant of each shape"
            )


def _typed_values(positions: tuple[int, ...]) -> Callable[[tuple[Any, ...]], Key]:
    """Per argument at ``positions``, ``(type, value)``: ``2``, ``2.0`` and ``True`` hash
    alike but are different arguments (of which one fits the parameter's dtype)."""
    if len(positions) == 1:
        (position,) = positions
        return lambda args: (_value_key(args[position]),)
    return lambda args: tuple([_value_key(args[i]) for i in positions])


def _value_key(value: Any) -> tuple[type, Any]:
    """A static value as a key: its type, and for a float its bits (``-0.0 == 0.0`` and NaN
    is unequal to itself, but each is a constant of its own in the code)."""
    if isinstance(value, float | np.floating):
        return value.__class__, float(value).hex()
    return value.__class__, value


_SHAPE = operator.attrgetter("shape")


def _key_function(
    positions: tuple[int, ...], fields: tuple[int, ...], nested: tuple[int, ...]
) -> Callable[[tuple[Any, ...]], Key]:
    """The key of a call of a static-domain program: the static values (``_typed_values``),
    then the shape of each field argument (at ``fields``) and of each leaf of the tuple
    arguments (at ``nested``).

    Raises:
        AttributeError: (from the key) a field argument without a shape.
    """
    values, pick = _typed_values(positions), _picker(fields)
    if not nested:
        return lambda args: (*values(args), *map(_SHAPE, pick(args)))
    pick_nested = _picker(nested)
    return lambda args: (
        *values(args),
        *map(_SHAPE, pick(args)),
        *map(_shape, pick_nested(args)),
    )


def _picker(positions: tuple[int, ...]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """The arguments at ``positions``, as a tuple."""
    if len(positions) > 1:
        return operator.itemgetter(*positions)
    if positions:
        (position,) = positions
        return lambda args: (args[position],)
    return lambda args: ()


def _plain_key(values: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]) -> Key:
    """A variant's key by plain values (a NumPy scalar's number) and shapes by name."""
    return (tuple(_value_key(v) for v in values.values()), tuple(sorted(shapes.items())))


def _describe(
    values: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]], program: Program
) -> str:
    shown = [f"{name}={value!r}" for name, value in values.items() if name in program.static_params]
    shown += [f"{name}: shape {shape}" for name, shape in shapes.items()]
    return ", ".join(shown)


def _values(value: Any) -> tuple[Any, ...]:
    """The values ``compile`` is given for a static parameter: a list or tuple, or one."""
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds (the same variant as that number)."""
    return value.item() if isinstance(value, np.generic) else value


def _shape(value: Any) -> Any:
    """What of an argument keys a static-domain variant: its shape, or its leaves' shapes."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return shape
    leaves = flattened(value)
    if len(leaves) == 1 and leaves[0] is value:
        return None  # a scalar
    return tuple(getattr(leaf, "shape", None) for leaf in leaves)


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
