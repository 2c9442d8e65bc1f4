"""Which backends a run measures: names in the registry, or ``module:attribute`` references.

A name is a built-in backend (``c_cpu``), one given to ``backends.register`` or one of an
installed ``stencilforge.backends`` entry point. ``module:attribute`` imports ``module``
(from the current directory too, as ``python -m`` would) and takes its ``attribute``, a
``Backend``; the probe subprocesses of the pipeline figures resolve the same reference.
"""

from __future__ import annotations

import importlib
import os
import sys

import attrs

import backends

__all__ = ["Selected", "resolve_backend", "select_backends"]

Runnable = backends.CompiledBackend | backends.EmbeddedBackend

#: Available backends a run without ``--backends`` leaves out, and why: they exist to check
#: code, not to time it (name them with ``--backends`` to time them anyway).
NOT_TIMED_BY_DEFAULT = {
    "cuda_emulated": "it runs cuda_gpu's kernels one thread after another on the CPU",
}


@attrs.frozen
class Selected:
    """A backend to measure and the reference that finds it again in another process."""

    reference: str
    backend: Runnable

    @property
    def name(self) -> str:
        return self.backend.name


def resolve_backend(reference: str) -> Runnable:
    """The backend ``reference`` names (a registered name or ``module:attribute``).

    Raises:
        ValueError: nothing by that name, or ``attribute`` is not a backend; the message lists
            the available names.
    """
    module_name, colon, attribute = reference.partition(":")
    if not colon:
        try:
            backend: object = getattr(backends, reference)
        except AttributeError as error:
            available = ", ".join(backends.available_backends())
            raise ValueError(
                f"backend {reference!r} is not available here ({error}); available: "
                f"{available}; or name one as module:attribute"
            ) from None
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            backend = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise ValueError(
                f"backend {reference!r}: {type(error).__name__}: {error} (the module must be "
                "importable from the current directory or PYTHONPATH)"
            ) from None
    if not isinstance(backend, backends.CompiledBackend | backends.EmbeddedBackend):
        raise ValueError(f"{reference!r} is {backend!r}, not a CompiledBackend or EmbeddedBackend")
    return backend


def select_backends(references: tuple[str, ...] | None) -> dict[str, Selected]:
    """The backends to measure by name, in the order given (``None``: every available one
    but those ``NOT_TIMED_BY_DEFAULT``).

    Raises:
        ValueError: a reference finds no backend, or two find backends of one name.
    """
    if references is None:
        return {
            name: Selected(name, backend)
            for name, backend in backends.available_backends().items()
            if isinstance(backend, backends.CompiledBackend | backends.EmbeddedBackend)
            and name not in NOT_TIMED_BY_DEFAULT
        }
    selected: dict[str, Selected] = {}
    for reference in references:
        chosen = Selected(reference, resolve_backend(reference))
        if chosen.name in selected:
            raise ValueError(
                f"{reference!r} and {selected[chosen.name].reference!r} are both backends "
                f"named {chosen.name!r}; rename one (attrs.evolve(backend, name=...))"
            )
        selected[chosen.name] = chosen
    return selected
