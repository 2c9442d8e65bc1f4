"""What the code of a slicing plan is written into: its lines, the slices it reads, its
constants, and the names it has handed out."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from pipeline.dsl.ir.nodes import ProgramIR, ScanOperatorIR

__all__ = ["Box", "PlanWriter", "Read", "Unplanned"]

Box = tuple[tuple[int, int], ...]  # (lower, upper) offsets around the domain, per dimension


class Unplanned(Exception):
    """A construct the plan does not cover (the definition runs instead)."""


@attrs.frozen
class Read:
    """One slice a call takes: of a parameter or a local, over ``box`` moved by ``offsets``.

    ``origin`` is None for parameters (indexed absolutely), else where the sliced local
    starts relative to the domain's start (its extent's lower bounds); ``axes`` says per
    dimension of the domain whether the array has it (else: a new axis, or a local's axis of
    size 1).
    """

    stencil: int
    offsets: tuple[int, ...]
    box: Box
    origin: tuple[int, ...] | None
    axes: tuple[bool, ...]


class PlanWriter:
    """The text of ``run`` as it is written: one block per stencil, one line per operation.

    Attributes:
        lines: the body of ``run``.
        functions: the scan steps, defined before ``run``.
        reads: the slices of the table, in slot order (after one flag per stencil).
        constants: the names the generated code reads, with their values.
        steps: the name of each scan operator's step function, once written.
    """

    def __init__(self, ir: ProgramIR) -> None:
        self.ir = ir
        self.params = {p.name: p.type for p in ir.params}
        self.lines: list[str] = []
        self.reads: list[Read] = []
        self.constants: dict[str, Any] = {}
        self.functions: list[str] = []
        self.steps: dict[ScanOperatorIR, str] = {}
        self._counter = 0
        # Converted scalar parameters, by name: each is converted once per call.
        self._scalars: dict[str, str] = {}

    def new_name(self, prefix: str = "v") -> str:
        """A variable name not handed out before."""
        self._counter += 1
        return f"{prefix}{self._counter}"

    def slot(self, read: Read) -> int:
        """The index in the table of the slices of ``read``, a new one."""
        self.reads.append(read)
        # The table starts with one flag per stencil (its domain is non-empty).
        return len(self.ir.stencils) + len(self.reads) - 1

    def scalar(self, name: str, dtype: np.dtype[Any]) -> str:
        """The variable holding scalar parameter ``name`` as a NumPy scalar of ``dtype``."""
        known = self._scalars.get(name)
        if known is None:
            known = f"s_{name}"
            self._scalars[name] = known
            self.constants[f"t_{name}"] = dtype.type
            self.lines.insert(0, f"    {known} = t_{name}(a_{name})")
        return known

    def constant(self, value: Any) -> str:
        """The name by which the generated code reads ``value``."""
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return name
