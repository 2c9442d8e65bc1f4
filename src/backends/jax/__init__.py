"""The ``jax_jit`` backend: ``jax.jit`` of the embedded definition on ``jax.numpy``.

The same four stages as every compiled backend, three of them borrowed::

    shared frontend -> JaxTranslation -> JaxJitCompilation -> load_jitted
    ProgramDefinition  CompilableProgram -> ProgramSource("jax") -> JittedProgram
                                                                 -> JaxJitExecutable

The frontend is the one every backend shares; the function ``jax.jit`` traces is the
``EmbeddedExecutable`` of ``backends.arrayapi`` (what the embedded backends run) over
``jax.numpy``; the dispatcher and its argument checks are the framework's. Programs return
the new arrays of the parameters they write, as on ``embedded_jax`` (ADR 0017). Importing
this package imports JAX.
"""

from __future__ import annotations

from backends.jax.compilation import JaxJitCompilation, JittedProgram
from backends.jax.loading import JaxJitExecutable, load_jitted
from backends.jax.translation import JaxTranslation, jax_source_format
from pipeline.dsl.frontend.step import shared_frontend
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition
from pipeline.stages import ConcreteDefinition, ProgramSource
from pipeline.workflow import CompilePipeline

__all__ = [
    "JaxJitCompilation",
    "JaxJitExecutable",
    "JaxTranslation",
    "JittedProgram",
    "jax_jit_pipeline",
    "jax_source_format",
    "load_jitted",
]

JaxPipeline = CompilePipeline[
    ConcreteDefinition[ProgramDefinition],
    CompilableProgram,
    ProgramSource,
    JittedProgram,
    JaxJitExecutable,
]


def jax_jit_pipeline() -> JaxPipeline:
    """The shared frontend, ``JaxTranslation``, ``JaxJitCompilation`` and ``load_jitted``,
    for JAX's default device."""
    source_format = jax_source_format()
    return CompilePipeline(
        frontend=shared_frontend,
        translation=JaxTranslation(source_format),
        compilation=JaxJitCompilation(source_format),
        loading=load_jitted,
    )
