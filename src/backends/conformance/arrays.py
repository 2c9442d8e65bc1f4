"""Moving NumPy data onto a backend and back, and running a program the same way on any backend.

The conformance checks build their arguments with NumPy and compare with NumPy references;
these functions are the only place that knows how a backend's arrays differ: embedded backends
take arrays of their namespace (NumPy, array_api_strict, JAX, CuPy), compiled ones arrays of
their allocator (NumPy on the CPU, CuPy on a GPU), and functional backends (JAX) return their
outputs instead of writing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import allocators
from backends.base import Backend
from backends.conformance.corpus.cases import leaf_map
from pipeline.dsl.types import record_of

__all__ = ["bind", "run_program", "to_backend_array", "to_numpy"]


def to_backend_array(host: np.ndarray, backend: Backend) -> Any:
    """A copy of the NumPy array ``host`` on ``backend``'s device, in its array library.

    Raises:
        TypeError: the backend's allocator makes arrays of a library this module cannot fill
            (neither an array namespace, NumPy nor CuPy); the message names the backend.
    """
    host = np.asarray(host)
    if backend.array_namespace is not None:  # embedded backends, and jax_jit's jax.numpy
        return backend.array_namespace.asarray(host.copy())
    array = allocators.empty(host.shape, host.dtype, allocator=backend)
    if isinstance(array, np.ndarray):
        array[...] = host
    elif type(array).__module__.startswith("cupy"):
        array.set(np.require(host, requirements="C"))  # ascontiguousarray makes 0-d 1-d
    else:
        raise TypeError(
            f"backend {backend.name!r} allocated a {type(array).__qualname__}; give it an "
            "array namespace or a NumPy/CuPy allocator to run the conformance checks"
        )
    return array


def to_numpy(array: Any) -> np.ndarray:
    """A NumPy copy of ``array`` (NumPy, array_api_strict, CuPy, JAX, ...)."""
    if isinstance(array, np.ndarray):
        return array.copy()
    if type(array).__module__.startswith("cupy"):
        return np.asarray(array.get())
    try:
        return np.array(np.asarray(array))
    except (TypeError, ValueError, RuntimeError):
        return np.array(np.from_dlpack(array))


# A documented cache: compiled backends build a program once per process, not once per check.
# The program is kept beside its binding so that its id is not reused while the entry lives.
_bound_programs: dict[tuple[int, str], tuple[Any, Any]] = {}


def bind(program: Any, backend: Backend) -> Any:
    """``program.with_backend(backend)``, kept so that compiled backends compile once."""
    key = (id(program), backend.name)
    if key not in _bound_programs:
        _bound_programs[key] = (program, program.with_backend(backend))
    return _bound_programs[key][1]


def run_program(
    program: Any,
    backend: Backend,
    *args: Any,
    written: Sequence[str | int] = (),
    **kwargs: Any,
) -> dict[str | int, Any]:
    """Run ``program`` on ``backend`` and return every argument as it is after the call.

    Args:
        program: a DSL program (bound to any backend; it is re-bound to ``backend``).
        backend: the backend to run on.
        args, kwargs: the program's arguments (arrays of ``backend``, Python scalars).
        written: the parameters the program writes, in the order of the program's parameters,
            as keyword names or positional indices; needed only for functional backends. A
            written tuple parameter comes back leaf by leaf and is rebuilt nested as given.

    Returns:
        The arguments by position (int keys) and by name (str keys). In-place backends (NumPy,
        array_api_strict, compiled ones) return None and update the arrays given; functional
        ones (JAX) return a tuple of the written parameters' new arrays, which replace them.

    Raises:
        AssertionError: a functional backend returned another number of arrays than
            ``written`` names.
    """
    result = bind(program, backend)(*args, **kwargs)
    after: dict[str | int, Any] = dict(enumerate(args))
    after.update(kwargs)
    if result is None:
        return after
    updated = tuple(result) if isinstance(result, tuple | list) else (result,)
    # A written tuple parameter's leaves come back one by one, in order.
    if len(updated) != sum(_leaf_count(after[key]) for key in written):
        raise AssertionError(
            f"backend {backend.name!r} returned {len(updated)} arrays for the written "
            f"parameters {list(written)}"
        )
    # Each leaf of a written parameter (nested in tuples, named collections) is the next array.
    arrays = iter(updated)
    after.update((key, leaf_map(lambda _leaf: next(arrays), after[key])) for key in written)
    return after


def _leaf_count(value: Any) -> int:
    record = record_of(type(value))
    if record is not None:
        return sum(_leaf_count(item) for item in record.values(value))
    return sum(_leaf_count(item) for item in value) if isinstance(value, tuple) else 1
