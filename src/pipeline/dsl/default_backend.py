"""The backend of a program given none: found through an entry point, never by importing
``backends`` (which imports the DSL), and checked when a program is made."""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Any

import attrs

from pipeline.dispatch import DispatchBackend

__all__ = ["DEFAULT", "DEFAULT_BACKEND_GROUP", "check_backend", "resolve_backend"]


#: The entry-point group whose one entry names the backend of programs given none
#: (stencilforge's own: ``backends:DEFAULT_BACKEND``, the embedded NumPy backend).
DEFAULT_BACKEND_GROUP = "stencilforge.default_backend"


@functools.cache
def _default_backend() -> DispatchBackend:
    """The installed default backend, found through its entry point on first use: the DSL
    imports no backend package (``backends`` imports the DSL)."""
    entries = list(importlib.metadata.entry_points(group=DEFAULT_BACKEND_GROUP))
    if len(entries) != 1:
        found = ", ".join(entry.value for entry in entries) or "none"
        raise RuntimeError(
            f"the entry-point group {DEFAULT_BACKEND_GROUP!r} must name one default backend "
            f"(found {found}); reinstall stencilforge, or pass backend= to the decorator"
        )
    return entries[0].load()  # type: ignore[no-any-return]


class _DefaultBackend:
    def __repr__(self) -> str:
        return "backends.DEFAULT_BACKEND"


DEFAULT = _DefaultBackend()


def check_backend(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        raise TypeError(
            f"backend=None is not accepted for {getattr(instance, 'name', 'a program')!r}; "
            "pass backends.embedded_numpy to run the Python definition on NumPy (the default), "
            "or a compiled backend such as backends.c_cpu"
        )
    pipeline = getattr(value, "pipeline", None)
    if not isinstance(getattr(value, "name", None), str) or not callable(pipeline):
        raise TypeError(
            f"backend must be a backends.Backend with a pipeline (a CompiledBackend or an "
            f"EmbeddedBackend), got {value!r}"
        )


def resolve_backend(value: object) -> Any:
    return _default_backend() if value is DEFAULT else value
