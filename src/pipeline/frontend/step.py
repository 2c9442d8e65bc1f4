"""The frontend step: ``ProgramDefinition -> CompilableProgram``.

Parsing then the IR passes, each a ``Step[ProgramIR, ProgramIR]`` held in a named field, so a
toolchain can swap one (``attrs.evolve(frontend, common_subexpressions=identity)``) or drop
one (replace it with ``identity``).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from pipeline.caching import CachedStep
from pipeline.frontend.parsing import parse_program
from pipeline.ir.nodes import ProgramIR
from pipeline.passes.cse import eliminate_common_subexpressions
from pipeline.passes.extents import analyse_extents
from pipeline.passes.folding import fold_constants
from pipeline.passes.inlining import inline_operators
from pipeline.passes.splitting import split_by_output_dimensions
from pipeline.passes.typing_ import infer_types
from pipeline.stages import CompilableProgram, ProgramDefinition
from pipeline.workflow import Step

__all__ = ["Frontend", "default_frontend", "frontend_in_memory", "shared_frontend"]


@attrs.frozen
class Frontend:
    """Parse a definition and run the IR passes in order (the definition alone: the
    pipeline adds the compile-time arguments to the result).

    Raises:
        DSLError: (and subclasses) located in the user's source.
    """

    parsing: Callable[[ProgramDefinition], ProgramIR] = parse_program
    type_inference: Step[ProgramIR, ProgramIR] = infer_types
    inlining: Step[ProgramIR, ProgramIR] = inline_operators
    constant_folding: Step[ProgramIR, ProgramIR] = fold_constants
    common_subexpressions: Step[ProgramIR, ProgramIR] = eliminate_common_subexpressions
    splitting: Step[ProgramIR, ProgramIR] = split_by_output_dimensions
    extent_analysis: Step[ProgramIR, ProgramIR] = analyse_extents

    def __call__(self, definition: ProgramDefinition, /) -> CompilableProgram:
        ir = self.parsing(definition)
        ir = self.type_inference(ir)
        ir = self.inlining(ir)
        ir = self.constant_folding(ir)
        ir = self.common_subexpressions(ir)
        ir = self.splitting(ir)
        ir = self.extent_analysis(ir)
        return CompilableProgram(definition, ir)


default_frontend = Frontend()


def frontend_in_memory(
    frontend: Frontend = default_frontend,
) -> CachedStep[ProgramDefinition, CompilableProgram]:
    """``frontend`` behind a process-local LRU of its own (see ``shared_frontend``)."""
    return CachedStep.in_memory(frontend, maxsize=512)


#: The step every built-in pipeline holds as its frontend: one in-memory cache per process, so
#: a definition is parsed once whatever the number of backends and signatures.
shared_frontend = frontend_in_memory()
