"""The embedded loading step and pipeline: the Python definition runs over an array namespace."""

from __future__ import annotations

from types import ModuleType

import attrs

from allocators import namespace_name
from backends.arrayapi import EmbeddedExecutable
from backends.arrayapi.plan import LARGE_DOMAIN
from pipeline.dsl.frontend.step import shared_frontend
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition
from pipeline.stages import ConcreteDefinition
from pipeline.steps import identity
from pipeline.workflow import CompilePipeline

__all__ = ["EmbeddedLoading", "embedded_pipeline"]


@attrs.frozen
class EmbeddedLoading:
    """``CompilableProgram -> EmbeddedExecutable``: the definition itself, over ``namespace``.

    Attributes:
        planned: on NumPy, programs of pointwise arithmetic and shifted reads run as a plan
            of NumPy slicing written once from their IR (``backends.arrayapi.plan``); False
            runs the definition on every call, so breakpoints and prints in your field
            operators fire (``pipeline.evolve_step("loading", planned=False)``).
        large_domain: the number of points from which a stencil of the plan is evaluated in
            its outputs rather than in temporaries (``SlicePlan.large_domain``; 0: always).
    """

    namespace: ModuleType = attrs.field(repr=namespace_name)
    planned: bool = True
    large_domain: int = LARGE_DOMAIN

    def __call__(self, program: CompilableProgram, /) -> EmbeddedExecutable:
        if program.definition is None:
            raise ValueError(
                f"{program.ir.name}: an embedded program loads in the process that has its "
                "definition, and this one came from another process"
            )
        return EmbeddedExecutable(
            program.definition, program.ir, self.namespace, self.planned, self.large_domain
        )


def embedded_pipeline(
    namespace: ModuleType, *, planned: bool = True, large_domain: int = LARGE_DOMAIN
) -> CompilePipeline[
    ConcreteDefinition[ProgramDefinition],
    CompilableProgram,
    CompilableProgram,
    CompilableProgram,
    EmbeddedExecutable,
]:
    """The shared frontend, identity translation and compilation, and ``EmbeddedLoading``
    (``planned``, ``large_domain``: see ``EmbeddedLoading``)."""
    return CompilePipeline(
        frontend=shared_frontend,
        translation=identity,
        compilation=identity,
        loading=EmbeddedLoading(namespace, planned, large_domain),
    )
