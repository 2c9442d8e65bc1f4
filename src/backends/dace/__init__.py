"""The DaCe backends: the ``c_cpu`` pipeline with an SDFG translation, compilation, loading.

``dace_cpu_pipeline(base, cache_directory)`` replaces the translation, compilation and loading
of a pipeline (``c_cpu``'s) and keeps its frontend step object, so both backends parse a
definition once. ``backends.dace_cpu`` and ``backends.dace_gpu`` are the named instances.
Importing this package does not import DaCe; running a step does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from allocators import DeviceType
from backends.cache import step_cache, toolchain_directory
from backends.dace.compilation import (
    SDFGCompilation,
    SDFGCompilationError,
    sdfg_artifact_is_intact,
)
from backends.dace.loading import SDFGProgram, load_sdfg, load_sdfg_gpu
from backends.dace.recipe import Fusion, RowStorage, SDFGRecipe, Tasklets
from backends.dace.translation import SDFG_CPU, SDFG_CUDA, SDFGTranslation
from pipeline.caching import CachedStep
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


def _sdfg_pipeline(
    base: CompilePipeline[Any, Any, Any, Any, Any],
    cache_directory: Path,
    translation: SDFGTranslation,
    compilation: SDFGCompilation,
    loading: Any,
) -> CompilePipeline[Any, Any, Any, Any, Any]:
    # The shared cache (STENCILFORGE_CACHE_URL) carries DaCe's build folders as c_cpu's.
    translations = step_cache(cache_directory / "translations", cache_directory)
    artifacts = step_cache(cache_directory / "artifacts", cache_directory)
    return attrs.evolve(
        base,
        translation=CachedStep(translation, translations),
        compilation=CachedStep(compilation, artifacts, validate=sdfg_artifact_is_intact),
        loading=loading,
    )


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
    return _sdfg_pipeline(
        base,
        cache_directory,
        translation or SDFGTranslation(),
        compilation
        or SDFGCompilation(
            str(cache_directory / "dace"), toolchain_directory=str(toolchain_directory())
        ),
        load_sdfg,
    )


def dace_gpu_pipeline(
    base: CompilePipeline[Any, Any, Any, Any, Any],
    cache_directory: Path,
    *,
    translation: SDFGTranslation | None = None,
    compilation: SDFGCompilation | None = None,
) -> CompilePipeline[Any, Any, Any, Any, Any]:
    """Like ``dace_cpu_pipeline``, for CUDA: GPU maps over ``GPU_Global`` (CuPy) arrays."""
    return _sdfg_pipeline(
        base,
        cache_directory,
        translation or SDFGTranslation(device_type=DeviceType.CUDA),
        compilation
        or SDFGCompilation(
            str(cache_directory / "dace"),
            device_type=DeviceType.CUDA,
            toolchain_directory=str(toolchain_directory()),
        ),
        load_sdfg_gpu,
    )
