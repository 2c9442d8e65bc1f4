"""The DSL's frontend step: ``ConcreteDefinition -> CompilableProgram``.

::

    ConcreteDefinition(definition, compile_time_args)
      | definition alone --Passes (cached per definition)--> ProgramIR
      '-> CompilableProgram(definition, ir, compile_time_args)

``Passes`` is a ``StepSequence``: parsing then the IR passes, each a named sub-step, so a
toolchain swaps one (``attrs.evolve(passes, common_subexpressions=identity)``), drops one or
reorders them; through a pipeline, ``pipeline.evolve_step("frontend.passes", inlining=...)``.
"""

from __future__ import annotations

import attrs

from pipeline.caching import CachedStep
from pipeline.dsl.frontend.program import parse_program
from pipeline.dsl.ir.nodes import ProgramIR
from pipeline.dsl.passes.cse import eliminate_common_subexpressions
from pipeline.dsl.passes.extents import analyse_extents
from pipeline.dsl.passes.folding import fold_constants
from pipeline.dsl.passes.inlining import inline_operators
from pipeline.dsl.passes.origins import locate_arrays
from pipeline.dsl.passes.splitting import split_by_output_dimensions
from pipeline.dsl.passes.typing_ import infer_types
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition
from pipeline.stages import ConcreteDefinition
from pipeline.steps import ReportsCacheHits, Step, StepSequence

__all__ = ["Frontend", "Passes", "default_passes", "frontend_in_memory", "shared_frontend"]


@attrs.frozen
class Passes(StepSequence):
    """``ProgramDefinition -> ProgramIR``: parsing, then the IR passes in order.

    Raises:
        DSLError: (and subclasses) located in the user's source.
    """

    parsing: Step[ProgramDefinition, ProgramIR] = parse_program
    type_inference: Step[ProgramIR, ProgramIR] = infer_types
    inlining: Step[ProgramIR, ProgramIR] = inline_operators
    constant_folding: Step[ProgramIR, ProgramIR] = fold_constants
    common_subexpressions: Step[ProgramIR, ProgramIR] = eliminate_common_subexpressions
    splitting: Step[ProgramIR, ProgramIR] = split_by_output_dimensions
    array_origins: Step[ProgramIR, ProgramIR] = locate_arrays
    extent_analysis: Step[ProgramIR, ProgramIR] = analyse_extents


default_passes = Passes()


@attrs.frozen
class Frontend:
    """``ConcreteDefinition -> CompilableProgram``: the passes read the definition alone
    (cached, they run once per definition whatever the number of signatures); the
    compile-time arguments travel beside the IR.

    Raises:
        DSLError: (and subclasses) located in the user's source.
    """

    passes: Step[ProgramDefinition, ProgramIR] = default_passes

    def __call__(self, inp: ConcreteDefinition[ProgramDefinition], /) -> CompilableProgram:
        return self.call_with_hit(inp)[0]

    def call_with_hit(
        self, inp: ConcreteDefinition[ProgramDefinition], /
    ) -> tuple[CompilableProgram, bool]:
        """The program for ``inp``, and whether the passes' cache answered."""
        if isinstance(self.passes, ReportsCacheHits):
            ir, hit = self.passes.call_with_hit(inp.definition)
        else:
            ir, hit = self.passes(inp.definition), False
        return CompilableProgram(inp.definition, ir, inp.compile_time_args), hit


def frontend_in_memory(passes: Step[ProgramDefinition, ProgramIR] = default_passes) -> Frontend:
    """A ``Frontend`` whose ``passes`` sit behind a process-local LRU of their own."""
    return Frontend(CachedStep.in_memory(passes, maxsize=512))


#: The step every built-in pipeline holds as its frontend: one in-memory cache per process, so
#: a definition is parsed once whatever the number of backends and signatures.
shared_frontend = frontend_in_memory()
