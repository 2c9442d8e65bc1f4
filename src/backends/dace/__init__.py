"""The DaCe backends: the ``c_cpu`` pipeline with an SDFG translation, compilation, loading.

``dace_cpu_pipeline(base, cache_directory)`` replaces the translation, compilation and loading
of a pipeline (``c_cpu``'s) and keeps its frontend step object, so both backends parse a
definition once. ``backends.dace_cpu`` and ``backends.dace_gpu`` are the named instances.
Importing this package does not import DaCe; running a step does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from allocators import DeviceType
from backends.cache import cached_pipeline, toolchain_directory
from backends.dace.compilation import (
    SDFGCompilation,
    SDFGCompilationError,
    sdfg_artifact_is_intact,
)
from backends.dace.loading import SDFGProgram, load_sdfg, load_sdfg_gpu
from backends.dace.recipe import Fusion, RowStorage, SDFGRecipe, Tasklets
from backends.dace.translation import SDFG_CPU, SDFG_CUDA, SDFGTranslation
from pipeline.errors import DamagedArtifactError
from pipeline.workflow import CompilePipeline

__all__ = [
    "SDFG_CPU",
    "SDFG_CUDA",
    "DamagedArtifactError",
    "Fusion",
    "RowStorage",
    "SDFGCompilation",
    "SDFGCompilationError",
    "SDFGProgram",
    "SDFGRecipe",
    "SDFGTranslation",
    "Tasklets",
    "dace_cpu_pipeline",
    "dace_gpu_pipeline",
    "load_sdfg",
    "load_sdfg_gpu",
]


def dace_cpu_pipeline(
    base: CompilePipeline[Any, Any, Any, Any, Any],
    cache_directory: Path,
    *,
    translation: SDFGTranslation | None = None,
    compilation: SDFGCompilation | None = None,
) -> CompilePipeline[Any, Any, Any, Any, Any]:
    """``base`` (``c_cpu``'s pipeline) with SDFG translation, compilation and loading.

    Translation and compilation are cached on disk under ``cache_directory`` (DaCe's build
    folders under ``cache_directory / "dace"``, its machine-wide build cache in
    ``backends.cache.toolchain_directory()``); the frontend step object is ``base``'s.
    """
    return _sdfg_pipeline(base, cache_directory, DeviceType.CPU, translation, compilation)


def dace_gpu_pipeline(
    base: CompilePipeline[Any, Any, Any, Any, Any],
    cache_directory: Path,
    *,
    translation: SDFGTranslation | None = None,
    compilation: SDFGCompilation | None = None,
) -> CompilePipeline[Any, Any, Any, Any, Any]:
    """Like ``dace_cpu_pipeline``, for CUDA: GPU maps over ``GPU_Global`` (CuPy) arrays."""
    return _sdfg_pipeline(base, cache_directory, DeviceType.CUDA, translation, compilation)


def _sdfg_pipeline(
    base: CompilePipeline[Any, Any, Any, Any, Any],
    cache_directory: Path,
    device_type: DeviceType,
    translation: SDFGTranslation | None,
    compilation: SDFGCompilation | None,
) -> CompilePipeline[Any, Any, Any, Any, Any]:
    # The shared cache (STENCILFORGE_CACHE_URL) carries DaCe's build folders as c_cpu's.
    return cached_pipeline(
        cache_directory,
        base.frontend,
        translation or SDFGTranslation(device_type=device_type),
        compilation
        or SDFGCompilation(
            str(cache_directory / "dace"),
            device_type=device_type,
            toolchain_directory=str(toolchain_directory()),
        ),
        load_sdfg if device_type == DeviceType.CPU else load_sdfg_gpu,
        validate=sdfg_artifact_is_intact,
    )
