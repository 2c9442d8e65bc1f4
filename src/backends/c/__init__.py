"""The compiled CPU backend: C with OpenMP, one plain-C shared object per program, called
through one launcher extension per machine and interpreter (``backends.c.launcher``).

``c_cpu_pipeline()`` composes the four steps and ``compile_time_args`` is what its executables
are specialized for (unit strides and inner extents); ``backends.c_cpu`` is the named
instance, ``CompiledBackend("c_cpu", allocator, c_cpu_pipeline(...),
compile_time_args=compile_time_args)``. With the default ``unit_strides`` instead, the same
pipeline builds one executable per stride signature whose inner extents are runtime values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

from backends.c.compilation import CCompilation, artifact_is_intact
from backends.c.deferred import measure_deferred
from backends.c.launcher import Launcher
from backends.c.loading import CLoading, CompiledProgram, DamagedArtifactError
from backends.c.specialization import compile_time_args
from backends.c.translation import CTranslation
from backends.c.tuning import MeasurementWarning, Tuning
from backends.c.variants import Choice, Variant
from backends.cache import (
    CompiledPipeline,
    SharedCache,
    cached_pipeline,
    step_cache,
    toolchain_directory,
)
from backends.clike.compiler import CompilationError
from pipeline.caching import ensure_private_directory
from pipeline.config import tuning
from pipeline.dsl.frontend.step import shared_frontend

__all__ = [
    "CCompilation",
    "CLoading",
    "CTranslation",
    "Choice",
    "CompilationError",
    "CompiledProgram",
    "DamagedArtifactError",
    "Launcher",
    "MeasurementWarning",
    "Tuning",
    "Variant",
    "c_cpu_pipeline",
    "compile_time_args",
    "measure_deferred",
]

def c_cpu_pipeline(
    cache_directory: Path,
    *,
    translation: CTranslation | None = None,
    compilation: CCompilation | None = None,
    **shared: Unpack[SharedCache],
) -> CompiledPipeline[CompiledProgram]:
    """The ``c_cpu`` pipeline with translation and compilation cached under ``cache_directory``.

    Args:
        cache_directory: a private directory (see ``backends.cache``).
        translation: the translation step (default ``CTranslation()`` with a ``Tuning`` that
            measures its automatic options with ``compilation`` on the schedule of
            ``STENCILFORGE_TUNING``, read now, and keeps the choice records under
            ``cache_directory / "choices"``).
        compilation: the compilation step (default ``CCompilation`` building into the cache).
            Its compiler also builds the launcher, kept in the toolchain directory
            (``backends.cache.toolchain_directory() / "c-launcher"``, else
            ``cache_directory / "launcher"``).
        shared: ``cache_url`` and ``cache_secret``, the shared cache behind the local one
            (``backends.cache.SharedCache``).

    Raises:
        CacheSecretError: a shared cache is named and there is no usable secret.
        ValueError: ``STENCILFORGE_TUNING`` names no schedule.
    """
    cache_directory = ensure_private_directory(cache_directory)
    compilation = compilation or CCompilation(str(cache_directory / "c"))
    if translation is None:
        # Choice records are this machine's (their key names it): never shared over the URL.
        records = step_cache(cache_directory / "choices", cache_directory, "")
        translation = CTranslation(tuning=Tuning(compilation, records, schedule=tuning()))
    launcher = Launcher(
        str(toolchain_directory() / "c-launcher"),
        str(cache_directory / "launcher"),
        compilation.compiler,
    )
    return cached_pipeline(
        cache_directory,
        shared_frontend,
        translation,
        compilation,
        CLoading(launcher),
        validate=artifact_is_intact,
        **shared,
    )
