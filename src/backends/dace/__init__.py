"""The DaCe backends: the ``c_cpu`` pipeline with an SDFG translation, compilation, loading.

``dace_cpu_pipeline(base, cache_directory)`` (an ``SDFGPipelines``) replaces the translation,
compilation and loading of a pipeline (``c_cpu``'s) and keeps its frontend step object, so
both backends parse a definition once. ``backends.dace_cpu`` and ``backends.dace_gpu`` are the
named instances. Importing this package does not import DaCe; running a step does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Unpack

import attrs

from allocators import DeviceType
from backends.cache import SharedCache, cached_pipeline, toolchain_directory
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
    "SDFGPipelines",
    "SDFGProgram",
    "SDFGRecipe",
    "SDFGTranslation",
    "Tasklets",
    "dace_cpu_pipeline",
    "dace_gpu_pipeline",
    "load_sdfg",
    "load_sdfg_gpu",
]


@attrs.frozen
class SDFGPipelines:
    """Makes a DaCe backend's pipeline for ``device_type``: called with ``base`` (``c_cpu``'s
    pipeline) and a cache directory, it returns ``base`` with SDFG translation, compilation
    and loading.

    Translation and compilation are cached on disk under ``cache_directory`` (DaCe's build
    folders under ``cache_directory / "dace"``, its machine-wide build cache in
    ``backends.cache.toolchain_directory()``), with the shared cache behind them as for
    ``c_cpu`` (``backends.cache.SharedCache``); the frontend step object is ``base``'s, so
    both backends parse a definition once. On ``DeviceType.CUDA`` the maps run on the GPU
    over ``GPU_Global`` (CuPy) arrays.
    """

    device_type: DeviceType

    def __call__(
        self,
        base: CompilePipeline[Any, Any, Any, Any, Any],
        cache_directory: Path,
        *,
        translation: SDFGTranslation | None = None,
        compilation: SDFGCompilation | None = None,
        **shared: Unpack[SharedCache],
    ) -> CompilePipeline[Any, Any, Any, Any, Any]:
        on_cpu = self.device_type == DeviceType.CPU
        return cached_pipeline(
            cache_directory,
            base.frontend,
            translation or SDFGTranslation(device_type=self.device_type),
            compilation
            or SDFGCompilation(
                str(cache_directory / "dace"),
                device_type=self.device_type,
                toolchain_directory=str(toolchain_directory()),
            ),
            load_sdfg if on_cpu else load_sdfg_gpu,
            validate=sdfg_artifact_is_intact,
            **shared,
        )


#: ``dace_cpu``'s pipeline from ``c_cpu``'s: ``dace_cpu_pipeline(base, cache_directory)``.
dace_cpu_pipeline = SDFGPipelines(DeviceType.CPU)
#: ``dace_gpu``'s pipeline from ``c_cpu``'s, for CUDA.
dace_gpu_pipeline = SDFGPipelines(DeviceType.CUDA)
