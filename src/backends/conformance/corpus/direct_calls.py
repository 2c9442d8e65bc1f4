"""Operators called directly from Python: scan operators on arrays (forward, backward, tuple
carries, broadcasting, scalars, ``domain=``), and a field operator with a domain per output.

A case's "program" is a :class:`DirectCall`: the operator, called with the case's arguments
by keyword (``out=`` and ``domain=`` among them), and for inspection the program that call
compiles. Cases of the DSL corpus (``backends.conformance.corpus``); no ``from __future__
import annotations``, since the DSL reads the annotations.
"""

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from pipeline.dsl import bool_, field_operator, float64, int64, scan_operator, where

from .cases import OUT, SCALAR, F, Feature, arguments, bools
from .grid import IJK, SHAPE, I, J, K

DIRECT_CALLS = Feature("operators called directly")


@attrs.frozen(eq=False)
class DirectCall:
    """An operator called directly as a corpus case's program: ``operator(**arguments)``.

    ``definition``, ``frontend()`` and ``lower()`` are those of the program of one call that
    the operator compiles for the case's own arguments (``arguments``'s, seed 0: only their
    ranks and dtypes count).
    """

    operator: Any
    arguments: Callable[[np.random.Generator], dict[str, Any]] = attrs.field(repr=False)

    @property
    def name(self) -> str:
        """The operator's name."""
        return str(self.operator.name)

    @property
    def definition(self) -> Any:
        """The definition of the direct call's program."""
        return self.lower(**self.arguments(np.random.default_rng(0))).concrete.definition

    def with_backend(self, backend: Any) -> "DirectCall":
        """The same call on another backend."""
        return attrs.evolve(self, operator=self.operator.with_backend(backend))

    def __call__(self, **arguments: Any) -> Any:
        return self.operator(**arguments)

    def lower(self, **arguments: Any) -> Any:
        """The direct call's program lowered for ``arguments``."""
        return self.operator.lower(**arguments)

    def frontend(self) -> Any:
        """The frontend's output for the direct call's program."""
        return self.lower(**self.arguments(np.random.default_rng(0))).program


@scan_operator(axis=K, forward=True, init=0.0)
def damped_running_sum(total: float64, value: float64, weight: float64) -> float64:
    return total * weight + value


def _sweep(values, step, init, forward=True):
    """Carries along the last axis: ``step(carry, k)`` from ``init``."""
    result = np.empty(np.broadcast_shapes(values.shape, SHAPE) if values.ndim else SHAPE)
    carry = init
    ks = range(result.shape[-1]) if forward else reversed(range(result.shape[-1]))
    for k in ks:
        carry = step(carry, k)
        result[..., k] = carry
    return result


def damped_reference(value, weight, out):
    out[...] = _sweep(value, lambda c, k: c * weight + value[..., k], 0.0)


_damped_args = arguments(value=F(), weight=SCALAR(0.5), out=OUT())
DIRECT_CALLS.add("direct_scan_forward_with_a_scalar",
                 DirectCall(damped_running_sum, _damped_args),
                 _damped_args, damped_reference, rtol=1e-12)


@scan_operator(axis=K, forward=False, init=(0.0, 1.0))
def totals_and_products_from_top(
    carry: tuple[float64, float64], value: float64, factor: float64
) -> tuple[float64, float64]:
    total, product = carry
    return (total + value, product * factor)


def totals_reference(value, factor, out):
    total, product = out
    total[...] = _sweep(value, lambda c, k: c + value[..., k], 0.0, forward=False)
    column = np.cumprod(factor[::-1])[::-1]
    product[...] = np.broadcast_to(column, SHAPE)


_totals_args = arguments(value=F(), factor=F(0.5, 1.5, shape=(SHAPE[-1],)),
                         out=lambda rng: (OUT()(rng), OUT()(rng)))
DIRECT_CALLS.add("direct_scan_backward_tuple_carry_broadcast_column",
                 DirectCall(totals_and_products_from_top, _totals_args),
                 _totals_args, totals_reference,
                 rtol=1e-12)


@scan_operator(axis=K, forward=True, init=0)
def capped_count(count: int64, flag: bool_, cap: int64) -> int64:
    return where(count >= cap, count, where(flag, count + 1, count))


def capped_reference(flag, cap, out, domain):
    (lo, hi), = domain.values()
    count = np.zeros(SHAPE[:-1], dtype=np.int64)
    for k in range(lo, hi):
        count = np.where(count >= cap, count, count + flag[..., k])
        out[..., k] = count


_capped_args = arguments(flag=bools, cap=SCALAR(3), out=OUT(np.int64),
                         domain=SCALAR({K: (1, SHAPE[-1] - 1)}))
DIRECT_CALLS.add("direct_scan_integer_carry_of_bools_in_a_domain",
                 DirectCall(capped_count, _capped_args),
                 _capped_args, capped_reference)


@field_operator
def shifted_differences(f: IJK) -> tuple[IJK, IJK]:
    return f(I + 1) - f, f(J + 1) - f(J - 1)


def shifted_differences_reference(f, out, domain):
    di, dj = out
    di[:-1] = f[1:] - f[:-1]
    dj[:, 1:-1] = f[:, 2:] - f[:, :-2]


_differences_args = arguments(
    f=F(), out=lambda rng: (OUT()(rng), OUT()(rng)),
    domain=SCALAR(({I: (0, SHAPE[0] - 1)}, {J: (1, SHAPE[1] - 1)})))
DIRECT_CALLS.add("direct_field_operator_call_with_a_domain_per_output",
                 DirectCall(shifted_differences, _differences_args),
                 _differences_args, shifted_differences_reference)
