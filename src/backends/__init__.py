"""Named backends and the classes they are made of.

``embedded_numpy`` (the default backend) is always here. ``c_cpu`` (needs a C compiler),
``cuda_gpu`` (CuPy, nvcc and a GPU), ``cuda_emulated`` (cuda_gpu's kernels run thread by
thread on the CPU; needs a C++ compiler), ``dace_cpu``, ``dace_gpu``, ``embedded_cupy``,
``embedded_jax`` and ``jax_jit`` (``jax.jit`` of the embedded definition) are created on first
attribute access and raise ``AttributeError`` naming what is missing (a compiler, an optional
package, a device). Backends of your own join with
``register(backend)``, or from an installed package through the entry-point group
``stencilforge.backends`` (``name = "module:attribute"``), loaded when first asked for; both
then resolve as ``backends.<name>`` and appear in ``available_backends()``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import shutil
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from backends._shadowing import shadowing_error

try:
    from backends.base import Backend, CompiledBackend, EmbeddedBackend
except ImportError as error:
    shadowing = shadowing_error("allocators", "pipeline")
    if shadowing is None:
        raise
    raise shadowing from error

__all__ = [
    "DEFAULT_BACKEND",
    "ENTRY_POINT_GROUP",
    "Backend",
    "CompiledBackend",
    "EmbeddedBackend",
    "available_backends",
    "embedded_numpy",
    "register",
]

#: The entry-point group through which installed packages provide backends.
ENTRY_POINT_GROUP = "stencilforge.backends"

embedded_numpy = EmbeddedBackend("embedded_numpy", np)
DEFAULT_BACKEND = embedded_numpy


def _embedded_cupy() -> Backend:
    return EmbeddedBackend("embedded_cupy", _require("cupy", "cuda"))


def _embedded_jax() -> Backend:
    return EmbeddedBackend("embedded_jax", _require("jax.numpy", "jax"))


def _jax_jit() -> Backend:
    namespace = _require("jax.numpy", "jax")
    from backends.base import no_compile_time_args  # noqa: PLC0415
    from backends.jax import jax_jit_pipeline  # noqa: PLC0415  (imports JAX)

    # Nothing to specialize here: jax.jit keeps one compilation per argument signature itself.
    return CompiledBackend(
        "jax_jit", namespace, jax_jit_pipeline(), compile_time_args=no_compile_time_args
    )


def _c_cpu() -> Backend:
    from backends.c import c_cpu_pipeline, compile_time_args  # noqa: PLC0415  (when first used)
    from backends.cache import cache_directory  # noqa: PLC0415
    from backends.clike.compiler import default_compiler  # noqa: PLC0415

    _require_compiler("c_cpu", "a C compiler", default_compiler(), "gcc or clang", "gcc", "CC")
    import allocators  # noqa: PLC0415

    return CompiledBackend(
        "c_cpu",
        allocators.NumPyBufferAllocator(),
        c_cpu_pipeline(cache_directory()),
        compile_time_args=compile_time_args,
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


def _cuda_gpu() -> Backend:
    cupy: Any = _require("cupy", "cuda")
    import allocators  # noqa: PLC0415
    from backends.cache import cache_directory  # noqa: PLC0415
    from backends.cuda import cuda_gpu_pipeline, default_nvcc  # noqa: PLC0415
    from backends.cuda.specialization import compile_time_args  # noqa: PLC0415

    nvcc = default_nvcc()
    if shutil.which(nvcc) is None:
        raise AttributeError(
            f"cuda_gpu needs the CUDA compiler nvcc, and {nvcc!r} was not found; install the "
            "CUDA toolkit (or `pip install nvidia-cuda-nvcc`) and put nvcc on the PATH, or set "
            "$NVCC"
        )
    try:
        capability = str(cupy.cuda.Device().compute_capability)
    except Exception as error:  # CuPy's CUDA errors: no driver, no device
        raise AttributeError(
            f"cuda_gpu needs a CUDA GPU, and CuPy finds none ({type(error).__name__}: "
            f"{error}); run on a machine with an NVIDIA GPU and its driver"
        ) from error
    return CompiledBackend(
        "cuda_gpu",
        allocators.CuPyBufferAllocator(),
        cuda_gpu_pipeline(cache_directory(), arch=f"sm_{capability}"),
        compile_time_args=compile_time_args,
    )


def _cuda_emulated() -> Backend:
    import allocators  # noqa: PLC0415
    from backends.cache import cache_directory  # noqa: PLC0415
    from backends.cuda.emulation import cuda_emulated_pipeline, default_cxx  # noqa: PLC0415
    from backends.cuda.specialization import compile_time_args  # noqa: PLC0415

    _require_compiler(
        "cuda_emulated", "a C++ compiler", default_cxx(), "g++ or clang++", "g++", "CXX"
    )
    return CompiledBackend(
        "cuda_emulated",
        allocators.NumPyBufferAllocator(),
        cuda_emulated_pipeline(cache_directory()),
        compile_time_args=compile_time_args,
    )


def _require_compiler(
    backend: str, kind: str, compiler: str, names: str, package: str, variable: str
) -> None:
    """Nothing, when ``compiler`` is on the PATH.

    Raises:
        AttributeError: it is not, naming what to install or set.
    """
    if shutil.which(compiler) is None:
        raise AttributeError(
            f"{backend} needs {kind}, and {compiler!r} was not found; install {names} "
            f"(e.g. `apt-get install {package}`) or set ${variable}"
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
    "cuda_gpu": _cuda_gpu,
    "cuda_emulated": _cuda_emulated,
    "embedded_cupy": _embedded_cupy,
    "embedded_jax": _embedded_jax,
    "jax_jit": _jax_jit,
    "dace_cpu": _dace_cpu,
    "dace_gpu": _dace_gpu,
}
_created: dict[str, Backend] = {}
# Backends given to register(), by name: a documented registry, guarded by _creation_lock.
_registered: dict[str, Backend] = {}
# Re-entrant: creating dace_cpu creates c_cpu first, through the same path.
_creation_lock = threading.RLock()


@functools.cache
def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    # Read once per process: scanning the installed distributions costs milliseconds.
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def register(backend: Backend) -> Backend:
    """Make ``backend`` resolve as ``backends.<backend.name>`` and list it in
    ``available_backends()`` (and so in the benchmark harness's ``--backends``).

    Returns:
        ``backend``, so that ``register`` can wrap the expression that makes it.

    Raises:
        TypeError: ``backend`` is not a ``Backend`` with a pipeline.
        ValueError: the name is taken (by a built-in, an entry point or an earlier
            ``register``); the message names both backends.
    """
    if not isinstance(backend, CompiledBackend | EmbeddedBackend):
        raise TypeError(
            f"register() takes a CompiledBackend or an EmbeddedBackend, got {backend!r}"
        )
    name = backend.name
    with _creation_lock:
        taken = _taken_by(name)
        if taken is not None:
            raise ValueError(
                f"cannot register {backend!r} as {name!r}: the name is taken by {taken}; "
                f"give it another name (attrs.evolve(backend, name=...))"
            )
        _registered[name] = backend
    return backend


def _taken_by(name: str) -> str | None:
    if name == "embedded_numpy" or name in _LAZY:
        return f"the built-in backend backends.{name}"
    if name in _registered:
        return f"the registered backend {_registered[name]!r}"
    entry_point = _entry_points().get(name)
    if entry_point is not None:
        return f"the entry point {name} = {entry_point.value!r} ({ENTRY_POINT_GROUP})"
    return None


def _from_entry_point(entry_point: importlib.metadata.EntryPoint) -> Backend:
    try:
        backend = entry_point.load()
    except Exception as error:  # whatever the provider's import raises
        raise AttributeError(
            f"the backend {entry_point.name!r} of entry point {entry_point.value!r} "
            f"({ENTRY_POINT_GROUP}) cannot be loaded: {type(error).__name__}: {error}"
        ) from error
    if not isinstance(backend, CompiledBackend | EmbeddedBackend):
        raise AttributeError(
            f"entry point {entry_point.name} = {entry_point.value!r} ({ENTRY_POINT_GROUP}) "
            f"gives {backend!r}, not a CompiledBackend or EmbeddedBackend"
        )
    if backend.name != entry_point.name:
        raise AttributeError(
            f"entry point {entry_point.name} = {entry_point.value!r} ({ENTRY_POINT_GROUP}) "
            f"gives a backend named {backend.name!r}; name the entry point as the backend"
        )
    return backend


def __getattr__(name: str) -> Backend:
    with _creation_lock:
        if name in _created:
            return _created[name]
        if name in _registered:
            return _registered[name]
        factory = _LAZY.get(name)
        if factory is not None:
            _created[name] = factory()
            return _created[name]
        entry_point = _entry_points().get(name) if not name.startswith("__") else None
        if entry_point is not None:
            _created[name] = _from_entry_point(entry_point)
            return _created[name]
    raise AttributeError(f"module 'backends' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_registered, *_entry_points()})


def available_backends() -> dict[str, Backend]:
    """Every backend that can be created here, by name: the built-ins whose compiler or
    optional package is present, the registered ones and those of installed entry points."""
    found: dict[str, Backend] = {"embedded_numpy": embedded_numpy}
    for name in [*_LAZY, *_registered, *_entry_points()]:
        try:
            found[name] = __getattr__(name)
        except AttributeError:
            continue
    return found
