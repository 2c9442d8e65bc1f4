"""The stencil DSL: stencilforge's reference frontend, a client of the framework.

Cartesian stencils over named dimensions, run as plain Python on an array namespace
(embedded) or compiled by a backend (``backends.c_cpu`` and the others)::

    from pipeline.dsl import Dimension, Field, field_operator, program, float64

    I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
    IJK = Field[[I, J, K], float64]

    @field_operator
    def laplacian(f: IJK) -> IJK:
        return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)

The map: types and builtins (``types``, ``builtins``, ``regions``); the decorators and the
objects they make (``definitions``: what all share; ``programs``, with static arguments in
``static_arguments``; ``operators``, called directly through ``direct``); the frontend,
``ConcreteDefinition`` -> ``CompilableProgram`` (``frontend``: parsing, then the IR passes of
``passes`` over the IR of ``ir``); the argument checks (``arguments``), located arrays and
their calls (``located``, ``located_calls``) and how calls are dispatched (``calls``); the
stage artifacts (``stages``) and errors (``errors``). A backend's translation reads the IR
through ``pipeline.dsl.ir`` and starts its pipeline with ``shared_frontend``.
"""

from __future__ import annotations

from pipeline.dsl import builtins
from pipeline.dsl.builtins import *  # noqa: F403  (the builtins, as builtins.__all__ lists them)
from pipeline.dsl.errors import DomainError, DSLError, DSLNameError, DSLSyntaxError, DSLTypeError
from pipeline.dsl.frontend.step import shared_frontend
from pipeline.dsl.located import LocatedArray, located
from pipeline.dsl.operators import FieldOperator, ScanOperator, field_operator, scan_operator
from pipeline.dsl.programs import Program, program
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition, ScanSettings
from pipeline.dsl.types import Dimension, Field, FieldType, ScalarType, staggered

__all__ = [
    "CompilableProgram",
    "DSLError",
    "DSLNameError",
    "DSLSyntaxError",
    "DSLTypeError",
    "Dimension",
    "DomainError",
    "Field",
    "FieldOperator",
    "FieldType",
    "LocatedArray",
    "Program",
    "ProgramDefinition",
    "ScalarType",
    "ScanOperator",
    "ScanSettings",
    "field_operator",
    "located",
    "program",
    "scan_operator",
    "shared_frontend",
    "staggered",
]
__all__ += builtins.__all__
