"""Moving benchmark data to a backend's arrays and back, and waiting for a backend to finish.

Every field is allocated with the backend's own allocator (``allocator=backend``) and then
filled from the deterministic NumPy data, so a backend is measured on the arrays its users get.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import allocators
from pipeline.dsl import float64

__all__ = ["output_of", "synchronize", "to_backend", "to_numpy"]


def to_backend(host: np.ndarray, backend: object) -> Any:
    """An array allocated with ``allocator=backend`` holding the values of ``host``.

    Mutable arrays (NumPy, CuPy) are filled in place; immutable ones (JAX) are replaced by the
    namespace's ``asarray`` of the data, which is how their users create them.
    """
    array = allocators.empty(host.shape, float64, allocator=backend)
    if isinstance(array, np.ndarray):
        array[...] = host
        return array
    namespace = array.__array_namespace__()
    device_data = namespace.asarray(host)
    try:
        array[...] = device_data
    except TypeError:  # immutable arrays (JAX) do not support item assignment
        return device_data
    return array


def to_numpy(array: Any) -> np.ndarray:
    """A NumPy copy (or view) of a backend array: CuPy through ``.get()``, others ``asarray``."""
    if isinstance(array, np.ndarray):
        return array
    if hasattr(array, "get") and callable(array.get):
        return np.asarray(array.get())
    return np.asarray(array)


def output_of(result: object, out: Any) -> Any:
    """The written output of a program call: the returned tuple's first element for
    functional namespaces (JAX programs return their outputs), else ``out`` itself."""
    if isinstance(result, tuple) and result:
        return result[0]
    return out


def synchronize(array: Any) -> None:
    """Wait until the work that writes ``array`` has finished (JAX and CuPy are asynchronous)."""
    block = getattr(array, "block_until_ready", None)
    if callable(block):
        block()
    elif type(array).__module__.startswith("cupy"):
        sys.modules["cupy"].cuda.get_current_stream().synchronize()
