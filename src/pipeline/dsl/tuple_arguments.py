"""A program's tuple (and named collection) arguments as the leaves its executables take.

A program with tuple-typed parameters (``t: tuple[F, tuple[F, int32]]``) is compiled with one
parameter per leaf (``ProgramIR.tuples``); its call flattens the user's nested tuples into
those leaves, in order, after checking that each is nested as its annotation (a dataclass or
``NamedTuple`` instance of the annotated class, flattened by its fields in declaration
order). The checks of the
leaves themselves (rank, dtype, halo, aliasing) are the program's argument checks, which name a
leaf as the user writes it (``t[1][0]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.dispatch import bind_arguments
from pipeline.dsl.types import Named
from pipeline.errors import ArgumentError

__all__ = ["describe_nesting", "flatten_arguments", "has_tuples"]

# Per parameter as written: its name and its nesting (None: a field or scalar; a tuple: the
# items' nestings), as ``frontend.annotations.parameter_nesting`` reads it.
Nesting = tuple[tuple[str, object], ...]


def has_tuples(nesting: Nesting) -> bool:
    """Whether any parameter of ``nesting`` is a tuple."""
    return any(isinstance(items, tuple) for _, items in nesting)


def describe_nesting(nesting: object) -> str:
    """A nesting as the user would write such a tuple: ``(value, (value, value))``, a named
    collection as ``State(u=value, v=value)``."""
    if isinstance(nesting, Named):
        fields = zip(nesting.record.fields, nesting, strict=True)
        inner = ", ".join(f"{field}={describe_nesting(item)}" for field, item in fields)
        return f"{nesting.record.name}({inner})"
    if isinstance(nesting, tuple):
        inner = ", ".join(describe_nesting(item) for item in nesting)
        return f"({inner},)" if len(nesting) == 1 else f"({inner})"
    return "value"


def flatten_arguments(program: str, nesting: Nesting, args: Sequence[Any]) -> tuple[Any, ...]:
    """The leaves of ``args`` (one value per parameter of ``nesting``, in order), in order.

    Raises:
        ArgumentError: a missing or extra argument, or a tuple parameter's argument that is not
            a tuple nested as its annotation; the message names the parameter (or the item,
            ``t[1]``) and the nesting expected.
    """
    if len(args) != len(nesting):
        bind_arguments(program, [name for name, _ in nesting], args, {})  # raises, naming them
    leaves: list[Any] = []
    # Indexing, not zip(strict=True) (~0.5 us a call): this runs on every call.
    for index in range(len(nesting)):
        name, items = nesting[index]
        value = args[index]
        if items is None:
            leaves.append(value)
        elif not _collect(items, value, leaves):  # type: ignore[arg-type]
            expected = (
                f"pass {name!r} as a {describe_nesting(items)}"
                if isinstance(items, Named)
                else f"pass {name!r} as a tuple nested as {describe_nesting(items)}"
            )
            _flatten(program, expected, name, items, value, [])  # raises, explaining
            raise AssertionError("unreachable: _collect and _flatten disagree")
    return tuple(leaves)


def _collect(items: tuple[object, ...], value: Any, leaves: list[Any]) -> bool:
    """Append the leaves of ``value`` nested as ``items``; False at the first mismatch (then
    ``_flatten`` walks again to explain it: messages are built only for a refusal)."""
    if isinstance(items, Named):
        if not isinstance(value, items.record.cls):
            return False
        value = items.record.values(value)
    elif not isinstance(value, tuple) or len(value) != len(items):
        return False
    for index in range(len(items)):
        item, part = items[index], value[index]
        if item is not None:
            if not _collect(item, part, leaves):  # type: ignore[arg-type]
                return False
        elif isinstance(part, tuple) or isinstance(part, list):  # noqa: SIM101  (faster)
            return False
        else:
            leaves.append(part)
    return True


def _flatten(
    program: str, expected: str, where: str, items: object, value: Any, leaves: list[Any]
) -> None:
    """``_collect``, raising at the first mismatch with the item's name (``t[1]``)."""
    if not isinstance(items, tuple):
        if isinstance(value, tuple | list):
            raise ArgumentError(
                f"argument {where!r} of {program}() is one field or scalar, but got a "
                f"{type(value).__name__} of {len(value)}; {expected}"
            )
        leaves.append(value)
        return
    if isinstance(items, Named):
        record = items.record
        if not isinstance(value, record.cls):
            raise ArgumentError(
                f"argument {where!r} of {program}() must be a {record.cls.__module__}."
                f"{record.cls.__qualname__}, got {_described(value)}; {expected}"
            )
        for field, item, part in zip(record.fields, items, record.values(value), strict=True):
            _flatten(program, expected, f"{where}.{field}", item, part, leaves)
        return
    if not isinstance(value, tuple) or len(value) != len(items):
        raise ArgumentError(
            f"argument {where!r} of {program}() must be a tuple of {len(items)}, got "
            f"{_described(value)}; {expected}"
        )
    for index, (item, part) in enumerate(zip(items, value, strict=True)):
        _flatten(program, expected, f"{where}[{index}]", item, part, leaves)


def _described(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if isinstance(value, list):
        return f"a list of {len(value)} (pass a tuple)"
    return f"a value of type {type(value).__module__}.{type(value).__qualname__}"
