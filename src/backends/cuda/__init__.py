"""The CUDA backend: CUDA C kernels built with nvcc, launched on CuPy arrays.

``cuda_gpu_pipeline(cache_directory)`` composes the shared frontend, ``CudaTranslation``,
``NvccCompilation`` (both cached on disk) and ``load_cuda``; ``backends.cuda_gpu`` is the named
instance, built for the current device's architecture. Importing this package imports neither
CuPy nor nvcc: translation and compilation run without a GPU, loading reads the fatbin, and
the first call loads it on the device.
"""

from __future__ import annotations

from pathlib import Path

from backends.cache import CompiledPipeline, cached_pipeline
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

CudaPipeline = CompiledPipeline[CudaProgram]


def cuda_gpu_pipeline(
    cache_directory: Path,
    *,
    translation: CudaTranslation | None = None,
    compilation: NvccCompilation | None = None,
    arch: str = DEFAULT_ARCH,
    cache_url: str | None = None,
    cache_secret: bytes | None = None,
) -> CudaPipeline:
    """The ``cuda_gpu`` pipeline with translation and compilation cached under
    ``cache_directory`` (fatbins under ``cache_directory / "cuda"``).

    Args:
        cache_directory: a private directory (see ``backends.cache``).
        translation: the translation step (default ``CudaTranslation()``).
        compilation: the compilation step (default ``NvccCompilation`` for ``arch``).
        arch: the GPU architecture the default compilation builds for.
        cache_url: the shared cache behind the local one, as for ``c_cpu_pipeline``.
        cache_secret: its secret, as for ``c_cpu_pipeline``.

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
        cache_url=cache_url,
        cache_secret=cache_secret,
    )
