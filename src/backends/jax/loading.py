"""The loading of ``jax_jit``: the executable the dispatcher calls on checked arguments."""

from __future__ import annotations

import importlib
import logging
from typing import Any

import attrs
import numpy as np

from backends.jax.compilation import JittedProgram

__all__ = ["JaxJitExecutable", "load_jitted"]

_log = logging.getLogger(__name__)


def _tracing_needs_values() -> tuple[type[Exception], ...]:
    """JAX's errors for Python code that asked a traced value for its value."""
    errors = importlib.import_module("jax.errors")
    return (
        errors.ConcretizationTypeError,
        errors.TracerBoolConversionError,
        errors.TracerIntegerConversionError,
        errors.TracerArrayConversionError,
    )


@attrs.define
class JaxJitExecutable:
    """Runs a ``JittedProgram`` (``Executable`` contract: checked arguments, one per
    parameter); returns the new arrays of the written parameters, in parameter order.

    Scalars are traced, so that one compilation serves every value, until tracing the
    definition shows that it needs a scalar's value in Python (an ``if`` on it, a ``domain=``
    bound): from then on this program's scalars are static, one compilation per value.
    NumPy scalars are passed as Python numbers, so that JAX types them weakly, as the
    embedded backends type them.
    """

    program: JittedProgram
    _scalars_static: bool = False
    _needs_values: tuple[type[Exception], ...] = attrs.field(
        factory=_tracing_needs_values, init=False, repr=False
    )

    @property
    def scalars_static(self) -> bool:
        """Whether the scalar parameters are compile-time constants (see above)."""
        return self._scalars_static

    def __call__(self, *args: Any) -> Any:
        args = self._prepared(args)
        if not self._scalars_static:
            try:
                return self.program.traced(*args)
            except self._needs_values as error:
                _log.debug(
                    "%s needs the values of its scalars while traced (%s); they are static "
                    "from now on", self.program.name, type(error).__name__,
                )
                self._scalars_static = True
        return self.program.static(*args)

    def as_text(self, *args: Any) -> str:
        """The StableHLO that JAX lowers this program to for ``args`` (checked arguments)."""
        jitted: Any = self.program.static if self._scalars_static else self.program.traced
        return str(jitted.lower(*self._prepared(args)).as_text())

    def _prepared(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        positions = self.program.scalar_positions
        for position in positions:
            if isinstance(args[position], np.generic):
                break
        else:
            return args
        prepared = list(args)
        for index in positions:
            value = prepared[index]
            if isinstance(value, np.generic):
                prepared[index] = value.item()
        return tuple(prepared)


def load_jitted(program: JittedProgram, /) -> JaxJitExecutable:
    """``JittedProgram -> JaxJitExecutable``."""
    return JaxJitExecutable(program)
