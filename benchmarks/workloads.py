"""The reference workloads and the grid sizes they run at.

A workload is one DSL program plus a NumPy-slicing kernel that computes the same interior, so
every backend's result can be checked before it is timed. ``WORKLOADS`` is the registry (the
module's documented global state); a new workload is one ``register(Workload(...))`` call.

Every workload reads the fields named in ``inputs``, writes ``out[h:-h, h:-h, :]`` (``h`` is the
halo) and leaves the rest of ``out`` untouched. Arrays are float64 with K contiguous (C order
over ``(I, J, K)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs
import numpy as np

from pipeline.dsl import (
    Dimension,
    Field,
    Program,
    field_operator,
    float64,
    program,
    scan_operator,
    where,
)

__all__ = [
    "SIZES",
    "WORKLOADS",
    "HostArguments",
    "Workload",
    "register",
]

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741  (the DSL's names)
IJK = Field[[I, J, K], float64]

#: The grid sizes by name: ``small`` measures call overhead, ``large`` memory bandwidth.
SIZES: Mapping[str, tuple[int, int, int]] = MappingProxyType(
    {"small": (16, 16, 8), "large": (256, 256, 64)}
)

#: What ``out`` holds outside the written domain, so that a stray write shows in the check.
OUT_SENTINEL = -7.0

HostArguments = dict[str, "np.ndarray | float"]

# A kernel takes the array namespace, then the input fields and scalars by name, and returns
# the values of ``out`` on its domain (the interior inside the halo).
Kernel = Callable[..., Any]


@attrs.frozen
class Workload:
    """One benchmark workload.

    Attributes:
        name: the registry key, shown in tables.
        program: the DSL program (on the default backend; the harness rebinds it).
        kernel: ``kernel(xp, **inputs, **scalars) -> interior`` in array-namespace slicing
            (NumPy for the reference; JAX's ``jnp`` works too, for the peers).
        halo: the width of the untouched border in I and J (the stencil's reach).
        inputs: names of the input fields, in the program's parameter order.
        scalars: scalar parameters and their values, in the program's parameter order after
            the inputs; the output ``out`` is the last parameter.
        k_halo: the width of the untouched border in K.
        input_ranges: per input, the interval its values are drawn from (default -1 to 1).
    """

    name: str
    program: Program
    kernel: Kernel
    halo: int
    inputs: tuple[str, ...] = ("inp",)
    scalars: Mapping[str, float] = attrs.field(factory=dict)
    k_halo: int = 0
    input_ranges: Mapping[str, tuple[float, float]] = attrs.field(factory=dict)

    @property
    def parameters(self) -> tuple[str, ...]:
        """The program's parameters in call order: inputs, scalars, ``out``."""
        return (*self.inputs, *self.scalars, "out")

    @property
    def domain(self) -> tuple[slice, slice, slice]:
        """The slice of ``out`` that the program writes."""
        h, k = self.halo, self.k_halo
        return (slice(h, -h or None), slice(h, -h or None), slice(k, -k or None))

    def host_arguments(self, shape: tuple[int, int, int], seed: int = 0) -> HostArguments:
        """Deterministic NumPy arguments by parameter name (``out`` filled with a sentinel)."""
        rng = np.random.default_rng(seed)
        arguments: HostArguments = {
            name: rng.uniform(*self.input_ranges.get(name, (-1.0, 1.0)), shape)
            for name in self.inputs
        }
        arguments.update(self.scalars)
        arguments["out"] = np.full(shape, OUT_SENTINEL)
        return arguments

    def reference(self, arguments: HostArguments) -> None:
        """Compute the workload with NumPy slicing into ``arguments["out"]`` (in place)."""
        out = arguments["out"]
        assert isinstance(out, np.ndarray)
        values = {name: arguments[name] for name in (*self.inputs, *self.scalars)}
        out[self.domain] = self.kernel(np, **values)

    def bytes_per_call(self, shape: tuple[int, int, int]) -> int:
        """Bytes of the input and output arrays: what one call must move at the least."""
        return (len(self.inputs) + 1) * math.prod(shape) * np.dtype(np.float64).itemsize


_registry: dict[str, Workload] = {}
#: Read-only view of the registered workloads, by name, in registration order.
WORKLOADS: Mapping[str, Workload] = MappingProxyType(_registry)


def register(workload: Workload) -> Workload:
    """Add ``workload`` to ``WORKLOADS``.

    Raises:
        ValueError: a workload of that name is already registered.
    """
    if workload.name in _registry:
        raise ValueError(f"a workload named {workload.name!r} is already registered")
    _registry[workload.name] = workload
    return workload


# --------------------------------------------------------------------------- laplacian


@field_operator
def laplacian(f: IJK) -> IJK:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@program
def lap(inp: IJK, out: IJK):
    laplacian(inp, out=out[1:-1, 1:-1, :])


def lap_kernel(xp: Any, inp: Any) -> Any:
    """The 5-point Laplacian on ``inp[1:-1, 1:-1, :]``."""
    return (
        -4.0 * inp[1:-1, 1:-1]
        + inp[2:, 1:-1]
        + inp[:-2, 1:-1]
        + inp[1:-1, 2:]
        + inp[1:-1, :-2]
    )


register(Workload("laplacian", lap, lap_kernel, halo=1))


# --------------------------------------------------------------------------- hdiff


@field_operator
def horizontal_diffusion(inp: IJK, coeff: float64) -> IJK:
    lap = 4.0 * inp - (inp(I - 1) + inp(I + 1) + inp(J - 1) + inp(J + 1))
    flx = lap(I + 1) - lap
    flx = where(flx * (inp(I + 1) - inp) > 0.0, 0.0, flx)
    fly = lap(J + 1) - lap
    fly = where(fly * (inp(J + 1) - inp) > 0.0, 0.0, fly)
    return inp - coeff * (flx - flx(I - 1) + fly - fly(J - 1))


@program
def hdiff(inp: IJK, coeff: float64, out: IJK):
    horizontal_diffusion(inp, coeff, out=out[2:-2, 2:-2, :])


def hdiff_kernel(xp: Any, inp: Any, coeff: float) -> Any:
    """COSMO horizontal diffusion on ``inp[2:-2, 2:-2, :]``, with flux limiting."""
    # lap on [1:-1, 1:-1]: one point wider than the output on each side.
    lap = 4.0 * inp[1:-1, 1:-1] - (
        inp[:-2, 1:-1] + inp[2:, 1:-1] + inp[1:-1, :-2] + inp[1:-1, 2:]
    )
    # flx on I in [1:-2] (of the full grid), J in [2:-2]; fly on I in [2:-2], J in [1:-2].
    flx = lap[1:, 1:-1] - lap[:-1, 1:-1]
    flx = xp.where(flx * (inp[2:-1, 2:-2] - inp[1:-2, 2:-2]) > 0.0, 0.0, flx)
    fly = lap[1:-1, 1:] - lap[1:-1, :-1]
    fly = xp.where(fly * (inp[2:-2, 2:-1] - inp[2:-2, 1:-2]) > 0.0, 0.0, fly)
    return inp[2:-2, 2:-2] - coeff * (flx[1:] - flx[:-1] + fly[:, 1:] - fly[:, :-1])


register(Workload("hdiff", hdiff, hdiff_kernel, halo=2, scalars={"coeff": 0.025}))


# --------------------------------------------------------------------------- tridiagonal


@scan_operator(axis=K, forward=True, init=(0.0, 0.0))
def thomas_forward(
    state: tuple[float64, float64], a: float64, b: float64, c: float64, d: float64
) -> tuple[float64, float64]:
    """The Thomas algorithm's forward sweep: the modified upper diagonal and right side."""
    cp, dp = state
    divided = 1.0 / (b - a * cp)
    return c * divided, (d - a * dp) * divided


@scan_operator(axis=K, forward=False, init=0.0)
def thomas_backward(x_above: float64, cp: float64, dp: float64) -> float64:
    """The Thomas algorithm's back substitution, from the top level down."""
    return dp - cp * x_above


@field_operator
def solve_tridiagonal(a: IJK, b: IJK, c: IJK, d: IJK) -> IJK:
    """The systems along K with ``a`` below, ``b`` on and ``c`` above the diagonal and ``d``
    on the right: one call, a forward and a backward pass per column."""
    cp, dp = thomas_forward(a, b, c, d)
    return thomas_backward(cp, dp)


@program
def tridiagonal(a: IJK, b: IJK, c: IJK, d: IJK, out: IJK):
    solve_tridiagonal(a, b, c, d, out=out)


def thomas_kernel(xp: Any, a: Any, b: Any, c: Any, d: Any) -> Any:
    """Solve the tridiagonal systems along K (``a`` below, ``b`` on, ``c`` above the
    diagonal): a Python loop over K with whole-plane operations."""
    levels = a.shape[2]
    cp: list[Any] = []
    dp: list[Any] = []
    for k in range(levels):
        below_c = cp[-1] if cp else 0.0
        below_d = dp[-1] if dp else 0.0
        divided = 1.0 / (b[:, :, k] - a[:, :, k] * below_c)
        cp.append(c[:, :, k] * divided)
        dp.append((d[:, :, k] - a[:, :, k] * below_d) * divided)
    x: list[Any] = [None] * levels
    above: Any = 0.0
    for k in reversed(range(levels)):
        above = dp[k] - cp[k] * above
        x[k] = above
    return xp.stack(x, axis=2)


register(
    Workload(
        "tridiagonal",
        tridiagonal,
        thomas_kernel,
        halo=0,
        inputs=("a", "b", "c", "d"),
        input_ranges={"a": (0.0, 1.0), "b": (3.0, 4.0), "c": (0.0, 1.0)},
    )
)


# --------------------------------------------------------------------------- vertical advection

#: The implicit weights of the vertical advection (Crank-Nicolson: half and half).
BET_M = 0.5
BET_P = 0.5


@field_operator
def vadv_coefficients(
    wcon: IJK, u_stage: IJK, u_pos: IJK, utens: IJK, utens_stage: IJK, dtr_stage: float64
) -> tuple[IJK, IJK, IJK, IJK]:
    """The tridiagonal system of one implicit vertical advection step of a dycore (the
    COSMO ``vertical_advection_dycore``): ``wcon`` is staggered in I and K."""
    gav = -0.25 * (wcon(I + 1) + wcon)
    gcv = 0.25 * (wcon(I + 1, K + 1) + wcon(K + 1))
    below = gav * BET_P
    above = gcv * BET_P
    diagonal = dtr_stage - below - above
    correction = -gav * BET_M * (u_stage(K - 1) - u_stage) - gcv * BET_M * (
        u_stage(K + 1) - u_stage
    )
    right = dtr_stage * u_pos + utens + utens_stage + correction
    return below, diagonal, above, right


@field_operator
def vadv_step(
    wcon: IJK, u_stage: IJK, u_pos: IJK, utens: IJK, utens_stage: IJK, dtr_stage: float64
) -> IJK:
    """The new ``utens_stage``: solve the system along K, then the tendency."""
    a, b, c, d = vadv_coefficients(wcon, u_stage, u_pos, utens, utens_stage, dtr_stage)
    return dtr_stage * (solve_tridiagonal(a, b, c, d) - u_pos)


@program
def vertical_advection(
    wcon: IJK, u_stage: IJK, u_pos: IJK, utens: IJK, utens_stage: IJK, dtr_stage: float64, out: IJK
):
    vadv_step(wcon, u_stage, u_pos, utens, utens_stage, dtr_stage, out=out[1:-1, 1:-1, 1:-1])


def vadv_kernel(
    xp: Any, wcon: Any, u_stage: Any, u_pos: Any, utens: Any, utens_stage: Any, dtr_stage: float
) -> Any:
    """``vertical_advection`` on ``[1:-1, 1:-1, 1:-1]`` in NumPy slicing."""
    inner = (slice(1, -1), slice(1, -1), slice(1, -1))
    gav = -0.25 * (wcon[2:, 1:-1, 1:-1] + wcon[1:-1, 1:-1, 1:-1])
    gcv = 0.25 * (wcon[2:, 1:-1, 2:] + wcon[1:-1, 1:-1, 2:])
    below, above = gav * BET_P, gcv * BET_P
    diagonal = dtr_stage - below - above
    centre = u_stage[inner]
    correction = -gav * BET_M * (u_stage[1:-1, 1:-1, :-2] - centre) - gcv * BET_M * (
        u_stage[1:-1, 1:-1, 2:] - centre
    )
    right = dtr_stage * u_pos[inner] + utens[inner] + utens_stage[inner] + correction
    return dtr_stage * (thomas_kernel(xp, below, diagonal, above, right) - u_pos[inner])


register(
    Workload(
        "vertical_advection",
        vertical_advection,
        vadv_kernel,
        halo=1,
        inputs=("wcon", "u_stage", "u_pos", "utens", "utens_stage"),
        scalars={"dtr_stage": 3.0},
        k_halo=1,
    )
)
