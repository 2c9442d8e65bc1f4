"""The compilation of ``jax_jit``: ``jax.jit`` of the embedded executable over ``jax.numpy``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, ClassVar

import attrs

from backends.arrayapi import EmbeddedExecutable
from pipeline.dsl.stages import CompilableProgram
from pipeline.dsl.types import FieldType
from pipeline.stages import ProgramSource, SourceFormat

__all__ = ["JaxJitCompilation", "JittedProgram"]


@attrs.frozen
class JittedProgram:
    """What ``JaxJitCompilation`` makes: one program's definition under ``jax.jit``, twice.

    Attributes:
        name: the program's name.
        traced: scalar parameters traced (one compilation serves every value).
        static: scalar parameters static (one compilation per value), for definitions that
            need a scalar's value in Python: an ``if`` on it, a ``domain=`` bound, a
            ``concat_where`` condition.
        scalar_positions: the positions of the scalar parameters.

    Both hold JAX's own in-memory cache of compiled code, per argument signature (shapes,
    dtypes, weak types, placement; and the values of static arguments). Not picklable: a new
    process compiles again.
    """

    name: str
    traced: Callable[..., Any] = attrs.field(repr=False)
    static: Callable[..., Any] = attrs.field(repr=False)
    scalar_positions: tuple[int, ...]


@attrs.frozen
class JaxJitCompilation:
    """``ProgramSource("jax") -> JittedProgram``.

    Nothing runs on XLA here: ``jax.jit`` traces the definition and XLA compiles it at the
    first call of each argument signature, and keeps the result in memory. The step is
    ``process_local``: its artifacts live in this process only, by design (so its backend is
    not warned about a compilation without a disk cache).

    Attributes:
        accepts: ``SourceFormat("jax", device type)``.

    Raises:
        TypeError: the source does not carry its ``CompilableProgram`` (not from
            ``JaxTranslation``).
        ValueError: the program came from another process without its definition.
    """

    accepts: SourceFormat
    process_local: ClassVar[bool] = True

    def __call__(self, source: ProgramSource, /) -> JittedProgram:
        program = source.metadata
        if not isinstance(program, CompilableProgram):
            raise TypeError(
                f"JaxJitCompilation compiles the ProgramSource of a JaxTranslation, whose "
                f"metadata is the CompilableProgram; {source!r} carries {type(program).__name__}"
            )
        if program.definition is None:
            raise ValueError(
                f"{program.ir.name}: jax_jit traces the Python definition, so it compiles in "
                "the process that has it, and this program came from another process"
            )
        jax = importlib.import_module("jax")
        executable = EmbeddedExecutable(
            program.definition, program.ir, importlib.import_module("jax.numpy")
        )
        scalars = tuple(
            index for index, param in enumerate(program.ir.params)
            if not isinstance(param.type, FieldType)
        )
        return JittedProgram(
            name=program.ir.name,
            traced=jax.jit(executable),
            static=jax.jit(_with_constants_evaluated(jax, executable), static_argnums=scalars),
            scalar_positions=scalars,
        )


def _with_constants_evaluated(jax: Any, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with what depends on no traced value computed while it is traced, so that
    its Python code can read it: the 0-d array of a static bool (``if flag:``), say."""

    def evaluating_constants(*args: Any) -> Any:
        with jax.ensure_compile_time_eval():
            return function(*args)

    return evaluating_constants
