"""The CUDA backend: CUDA C kernels built with nvcc, launched on CuPy arrays.

``cuda_gpu_pipeline(cache_directory)`` composes the shared frontend, ``CudaTranslation``,
``NvccCompilation`` (both cached on disk) and ``load_cuda``; ``backends.cuda_gpu`` is the named
instance, built for the current device's architecture. Importing this package imports neither
CuPy nor nvcc: translation and compilation run without a GPU, loading reads the fatbin, and
the first call loads it on the device.
"""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

from backends.cache import CompiledPipeline, SharedCache, cached_pipeline
from backends.cuda.compilation import (
    DEFAULT_ARCH,
    NvccCompilation,
    cuda_artifact_is_intact,
    default_nvcc,
)
from backends.cuda.errors import CudaCompilationError, UnsupportedConstructError
from backends.cuda.loading import CudaProgram, load_cuda
from backends.cuda.translation import CUDA_SOURCE, CudaTranslation
from pipeline.caching import ensure_private_directory
from pipeline.dsl.frontend.step import shared_frontend

__all__ = [
    "CUDA_SOURCE",
    "DEFAULT_ARCH",
    "CudaCompilationError",
    "CudaProgram",
    "CudaTranslation",
    "NvccCompilation",
    "UnsupportedConstructError",
    "cuda_gpu_pipeline",
    "default_nvcc",
    "load_cuda",
]

def cuda_gpu_pipeline(
    cache_directory: Path,
    *,
    arch: str = DEFAULT_ARCH,
    translation: CudaTranslation | None = None,
    compilation: NvccCompilation | None = None,
    **shared: Unpack[SharedCache],
) -> CompiledPipeline[CudaProgram]:
    """The ``cuda_gpu`` pipeline with translation and compilation cached under
    ``cache_directory`` (fatbins under ``cache_directory / "cuda"``).

    Args:
        cache_directory: a private directory (see ``backends.cache``).
        arch: the GPU architecture the default compilation builds for.
        translation: the translation step (default ``CudaTranslation()``).
        compilation: the compilation step (default ``NvccCompilation`` for ``arch``).
        shared: ``cache_url`` and ``cache_secret``, the shared cache behind the local one
            (``backends.cache.SharedCache``).

    Raises:
        CacheSecretError: a shared cache is named and there is no usable secret.
    """
    cache_directory = ensure_private_directory(cache_directory)
    translation = translation or CudaTranslation()
    compilation = compilation or NvccCompilation(str(cache_directory / "cuda"), arch=arch)
    return cached_pipeline(
        cache_directory,
        shared_frontend,
        translation,
        compilation,
        load_cuda,
        validate=cuda_artifact_is_intact,
        **shared,
    )
