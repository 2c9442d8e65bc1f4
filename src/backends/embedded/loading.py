"""The embedded loading step and pipeline: the Python definition runs over an array namespace."""

from __future__ import annotations

from types import ModuleType

import attrs

from allocators import namespace_name
from backends.embedded.execution import EmbeddedExecutable
from pipeline.frontend.step import shared_frontend
from pipeline.stages import CompilableProgram
from pipeline.workflow import CompilePipeline, identity

__all__ = ["EmbeddedLoading", "embedded_pipeline"]


@attrs.frozen
class EmbeddedLoading:
    """``CompilableProgram -> EmbeddedExecutable``: the definition itself, over ``namespace``."""

    namespace: ModuleType = attrs.field(repr=namespace_name)

    def __call__(self, program: CompilableProgram, /) -> EmbeddedExecutable:
        if program.definition is None:
            raise ValueError(
                f"{program.ir.name}: an embedded program loads in the process that has its "
                "definition, and this one came from another process"
            )
        return EmbeddedExecutable(program.definition, program.ir, self.namespace)


def embedded_pipeline(
    namespace: ModuleType,
) -> CompilePipeline[CompilableProgram, CompilableProgram, EmbeddedExecutable]:
    """The shared frontend, identity translation and compilation, and ``EmbeddedLoading``."""
    return CompilePipeline(
        frontend=shared_frontend,
        translation=identity,
        compilation=identity,
        loading=EmbeddedLoading(namespace),
    )
