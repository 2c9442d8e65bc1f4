"""Named backends and the classes they are made of.

``embedded_numpy`` (the default backend) is always here. ``c_cpu`` (needs a C compiler),
``embedded_cupy`` and ``embedded_jax`` are created on first attribute access and raise
``AttributeError`` naming what is missing (a compiler, an optional package).
"""

from __future__ import annotations

import importlib
import shutil
import threading
from collections.abc import Callable

import numpy as np

from backends.base import Backend, CompiledBackend, EmbeddedBackend

__all__ = [
    "DEFAULT_BACKEND",
    "Backend",
    "CompiledBackend",
    "EmbeddedBackend",
    "available_backends",
    "embedded_numpy",
]

embedded_numpy = EmbeddedBackend("embedded_numpy", np)
DEFAULT_BACKEND = embedded_numpy


def _embedded_cupy() -> Backend:
    return EmbeddedBackend("embedded_cupy", _require("cupy", "cuda"))


def _embedded_jax() -> Backend:
    return EmbeddedBackend("embedded_jax", _require("jax.numpy", "jax"))


def _c_cpu() -> Backend:
    from backends.c import c_cpu_pipeline  # noqa: PLC0415  (only when first used)
    from backends.c.compilation import default_compiler  # noqa: PLC0415
    from backends.cache import cache_directory  # noqa: PLC0415

    compiler = default_compiler()
    if shutil.which(compiler) is None:
        raise AttributeError(
            f"c_cpu needs a C compiler, and {compiler!r} was not found; install gcc or clang "
            "(e.g. `apt-get install gcc`) or set $CC"
        )
    import allocators  # noqa: PLC0415

    return CompiledBackend(
        "c_cpu", allocators.NumPyBufferAllocator(), c_cpu_pipeline(cache_directory())
    )


def _dace_cpu() -> Backend:
    _require("dace", "dace")
    from backends.cache import cache_directory  # noqa: PLC0415
    from backends.dace import dace_cpu_pipeline  # noqa: PLC0415  (only when first used)

    # dace_cpu is c_cpu with translation, compilation and loading replaced: both share
    # c_cpu's frontend step object.
    base = __getattr__("c_cpu")
    assert isinstance(base, CompiledBackend)
    return CompiledBackend(
        "dace_cpu", base.allocator, dace_cpu_pipeline(base.pipeline, cache_directory())
    )


def _dace_gpu() -> Backend:
    _require("dace", "dace")
    _require("cupy", "cuda")
    import allocators  # noqa: PLC0415
    from backends.cache import cache_directory  # noqa: PLC0415
    from backends.dace import dace_gpu_pipeline  # noqa: PLC0415

    base = __getattr__("dace_cpu")
    assert isinstance(base, CompiledBackend)
    return CompiledBackend(
        "dace_gpu",
        allocators.CuPyBufferAllocator(),
        dace_gpu_pipeline(base.pipeline, cache_directory()),
    )


def _require(module: str, extra: str) -> object:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        package = module.partition(".")[0]
        raise AttributeError(
            f"this backend needs the optional package {package!r}, which is "
            f"not installed ({error}); install it with "
            f"`pip install 'stencilforge[{extra}]'`"
        ) from error


# Backends created on first attribute access, because they import optional packages.
_LAZY: dict[str, Callable[[], Backend]] = {
    "c_cpu": _c_cpu,
    "embedded_cupy": _embedded_cupy,
    "embedded_jax": _embedded_jax,
    "dace_cpu": _dace_cpu,
    "dace_gpu": _dace_gpu,
}
_created: dict[str, Backend] = {}
# Re-entrant: creating dace_cpu creates c_cpu first, through the same path.
_creation_lock = threading.RLock()


def __getattr__(name: str) -> Backend:
    factory = _LAZY.get(name)
    if factory is None:
        raise AttributeError(f"module 'backends' has no attribute {name!r}")
    with _creation_lock:
        if name not in _created:
            _created[name] = factory()
        return _created[name]


def available_backends() -> dict[str, Backend]:
    """Every named backend that can be created here, by name (optional ones included)."""
    found: dict[str, Backend] = {"embedded_numpy": embedded_numpy}
    for name in _LAZY:
        try:
            found[name] = __getattr__(name)
        except AttributeError:
            continue
    return found
