"""``not`` of bool scalars: ``if not flag:``, ``a if not c else b``, of parameters, locals and
literals (``~`` of a Python bool is -2 where the definition runs; ``not`` is logical
everywhere).

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""

import numpy as np

from pipeline.dsl import field_operator, float64, program

from .cases import OUT, SCALAR, F, Feature, arguments, at, dom
from .grid import IJK, I

LOGICAL_NOT = Feature("not of bool scalars")


@field_operator
def unless(a: IJK, b: IJK, flag: bool, s: float64) -> IJK:
    if not flag:  # noqa: SIM108  (the statement form is what this case runs)
        picked = a(I + 1)
    else:
        picked = b
    small = s < 1.0
    return picked * (2.0 if not small else 3.0) + (1.0 if not flag else 0.0)


@program
def unless_program(a: IJK, b: IJK, flag: bool, s: float64, x: IJK, y: IJK):
    unless(a, b, flag, s, out=x[:-1, :, :])
    unless(a, b, False, 2.0, out=y[:-1, :, :])


def unless_reference(a, b, flag, s, x, y):
    d = dom(x.shape, np.s_[:-1, :, :])
    picked = b[d] if flag else at(a, d, 1, 0, 0)
    x[d] = picked * (2.0 if not s < 1.0 else 3.0) + (0.0 if flag else 1.0)
    y[d] = at(a, d, 1, 0, 0) * 2.0 + 1.0


LOGICAL_NOT.add("not_of_bool_parameters_locals_and_literals", unless_program,
    arguments(a=F(), b=F(), flag=SCALAR(True), s=SCALAR(0.5), x=OUT(), y=OUT()),
    unless_reference, outputs=("x", "y"))
