"""The translation of ``jax_jit``: a program, as the function that ``jax.jit`` will trace."""

from __future__ import annotations

import importlib

import attrs

from allocators import namespace_device_type
from pipeline.dsl.stages import CompilableProgram
from pipeline.stages import ProgramSource, SourceFormat

__all__ = ["JaxTranslation", "jax_source_format"]


def jax_source_format() -> SourceFormat:
    """``SourceFormat("jax", <device type of JAX's default backend>)``."""
    return SourceFormat("jax", namespace_device_type(importlib.import_module("jax.numpy")))


@attrs.frozen
class JaxTranslation:
    """``CompilableProgram -> ProgramSource``: the program's Python definition, to be run on
    ``jax.numpy`` under ``jax.jit``.

    The source's text is the typed IR, which is what the definition computes; the definition
    itself travels in ``metadata`` (the ``CompilableProgram``). What JAX makes of it depends on
    the arguments' shapes: ``JaxJitExecutable.as_text(*args)`` shows the StableHLO of one call.

    Attributes:
        emits: ``SourceFormat("jax", device type)``.

    Raises:
        ValueError: the program came from another process without its definition (JAX traces
            the Python function, so it must be in this process).
    """

    emits: SourceFormat

    def __call__(self, program: CompilableProgram, /) -> ProgramSource:
        if program.definition is None:
            raise ValueError(
                f"{program.ir.name}: jax_jit traces the Python definition, so it translates in "
                "the process that has it, and this program came from another process"
            )
        return ProgramSource(self.emits, str(program.ir), program.ir.name, metadata=program)
