"""The corpus's record and the means its cases are built with.

A :class:`Case` pairs a DSL program (defined at module level, so that its source can be read
with ``inspect.getsource``) with a builder of deterministic arguments and a NumPy reference that
writes, with plain slicing, exactly the cells the program's ``out=`` slices cover. Output
arguments arrive pre-filled with a sentinel, so a reference leaves every other cell as it was,
and a check can see that the program did too. Each case belongs to one :class:`Feature` of the
DSL, the unit of the conformance summary.

No ``from __future__ import annotations`` here or in the feature modules on purpose: the DSL
reads the annotations, and a user's module usually does not stringify them.
"""

import zlib
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np

from backends.conformance.corpus.grid import SHAPE
from pipeline.dsl import Dimension, located
from pipeline.dsl.types import record_of

__all__ = [
    "OUT",
    "SCALAR",
    "Case",
    "F",
    "Feature",
    "MissingHalo",
    "arguments",
    "at",
    "at_ij",
    "away_from_zero",
    "bools",
    "copied",
    "dom",
    "floats",
    "ints",
    "labelled_leaves",
    "leaf_map",
    "nonzero_ints",
    "sentinel",
    "ties",
    "tolerance",
]

FLOAT_SENTINEL = -777.25
INT_SENTINEL = -12345


# --------------------------------------------------------------------------- the case record


@attrs.frozen
class Case:
    """One corpus entry.

    Attributes:
        name: unique, used as the test id.
        program: the DSL program (bound to the default backend).
        arguments: ``arguments(rng)`` -> every program argument by parameter name, in the
            program's parameter order: NumPy arrays (outputs pre-filled with :func:`sentinel`)
            and Python scalars.
        outputs: the parameters the program writes, in the program's parameter order.
        reference: ``reference(**arguments)`` writes the expected values into the output
            arrays, in place, touching exactly the cells the program's out slices cover.
        rtol, atol: tolerances for floating outputs; ``None`` means :func:`tolerance`'s.
        feature: the feature of the DSL the case exercises (its :class:`Feature`'s name).
        located: the arguments passed as located arrays (``pipeline.dsl.located``, ADR
            0026): by name, their dimensions and origin. ``arguments`` and ``reference``
            see the plain NumPy arrays; :meth:`call_arguments` wraps them for the call.
    """

    name: str
    program: Any
    arguments: Callable[[np.random.Generator], dict[str, Any]]
    outputs: tuple[str, ...]
    reference: Callable[..., None]
    rtol: float | None = None
    atol: float | None = None
    feature: str = ""
    located: Mapping[str, tuple[tuple[Dimension, ...], Mapping[Dimension, int]]] = attrs.field(
        factory=dict
    )

    @property
    def seed(self) -> int:
        return zlib.crc32(self.name.encode())

    def build(self) -> dict[str, Any]:
        """The case's arguments (NumPy), the same on every call."""
        return self.arguments(np.random.default_rng(self.seed))

    def call_arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` as the program is called with them: the located ones wrapped."""
        return {
            name: located(value, *self.located[name]) if name in self.located else value
            for name, value in args.items()
        }

    def tolerance(self, dtype: np.dtype) -> tuple[float, float]:
        rtol, atol = tolerance(dtype)
        return (self.rtol if self.rtol is not None else rtol,
                self.atol if self.atol is not None else atol)

    def check_on(self, backend: Any, label: str = "") -> None:
        """Run the program on ``backend`` over the case's arguments and assert that every
        output matches the reference (``label`` names the run in a failure)."""
        host = self.build()
        expected = {name: copied(value) for name, value in host.items()}
        self.reference(**expected)
        self.program.with_backend(backend)(**self.call_arguments(host))
        for name in self.outputs:
            pairs = zip(labelled_leaves(name, host[name]), labelled_leaves(name, expected[name]),
                        strict=True)
            for (leaf, got), (_, want) in pairs:
                rtol, atol = self.tolerance(want.dtype)
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                           err_msg=f"{self.name} {label}: {leaf}" if label else "")


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing results of ``dtype``: exact for integers and booleans."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return 1e-12, 1e-12
    if dtype == np.float32:
        return 1e-5, 1e-5
    return 0.0, 0.0


@attrs.frozen
class Feature:
    """A feature of the DSL and its corpus cases: one line of the conformance summary.

    A feature module makes its features and fills them with :meth:`add` as it is imported;
    ``backends.conformance.corpus`` gathers them.
    """

    name: str
    cases: list[Case] = attrs.field(factory=list, eq=False, repr=False)

    def add(self, name: str, program_: Any,
            arguments: Callable[[np.random.Generator], dict[str, Any]],
            reference: Callable[..., None], outputs: tuple[str, ...] = ("out",),
            rtol: float | None = None, atol: float | None = None,
            located: Mapping[str, tuple[tuple[Dimension, ...], Mapping[Dimension, int]]]
            | None = None) -> None:
        """Add the case ``name`` of this feature (see :class:`Case` for the rest)."""
        self.cases.append(
            Case(name, program_, arguments, outputs, reference, rtol, atol, feature=self.name,
                 located=dict(located or {}))
        )


@attrs.frozen
class MissingHalo:
    """A program that must raise DomainError, and what the message must name."""

    name: str
    program: Any
    field: str
    dimension: str
    missing: int

# --------------------------------------------------------------------------- nested arguments
# A tuple parameter's argument is a tuple of arrays and scalars, nested as its annotation; a
# named collection's is an instance of its dataclass or NamedTuple.


def leaf_map(function: Callable[[Any], Any], value: Any) -> Any:
    """``value`` with ``function`` applied to each leaf (a tuple's items, a collection's
    fields, nested alike and of the same class)."""
    record = record_of(type(value))
    if record is not None:
        return record.build(tuple(leaf_map(function, item) for item in record.values(value)))
    if isinstance(value, tuple):
        return tuple(leaf_map(function, item) for item in value)
    return function(value)


def copied(value: Any) -> Any:
    """``value`` with each array leaf copied (scalars as they are)."""
    return leaf_map(lambda leaf: np.copy(leaf) if isinstance(leaf, np.ndarray) else leaf, value)


def labelled_leaves(name: str, value: Any) -> list[tuple[str, Any]]:
    """The leaves of the argument ``name``, each labelled as the user reads it: ``t[1][0]``,
    ``state.u``."""
    record = record_of(type(value))
    if record is not None:
        return [pair for field, item in zip(record.fields, record.values(value), strict=True)
                for pair in labelled_leaves(f"{name}.{field}", item)]
    if isinstance(value, tuple):
        return [pair for index, item in enumerate(value)
                for pair in labelled_leaves(f"{name}[{index}]", item)]
    return [(name, value)]


# --------------------------------------------------------------------------- data and slicing


def floats(rng: np.random.Generator, shape: tuple[int, ...] = SHAPE, lo: float = -1.0,
           hi: float = 1.0, dtype: Any = np.float64) -> np.ndarray:
    return rng.uniform(lo, hi, shape).astype(dtype)


def away_from_zero(rng: np.random.Generator, shape: tuple[int, ...] = SHAPE, lo: float = 0.5,
                   hi: float = 2.0, dtype: Any = np.float64) -> np.ndarray:
    """Values with |x| in [lo, hi) and random sign: safe divisors."""
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (sign * rng.uniform(lo, hi, shape)).astype(dtype)


def ties(rng: np.random.Generator, shape: tuple[int, ...] = SHAPE,
         dtype: Any = np.float64) -> np.ndarray:
    """Multiples of 0.5 in [-2, 2]: comparisons see equal values often."""
    return (rng.integers(-4, 5, shape) / 2.0).astype(dtype)


def ints(rng: np.random.Generator, shape: tuple[int, ...] = SHAPE, lo: int = -20, hi: int = 20,
         dtype: Any = np.int32) -> np.ndarray:
    return rng.integers(lo, hi + 1, shape).astype(dtype)


def nonzero_ints(rng: np.random.Generator, shape: tuple[int, ...] = SHAPE, hi: int = 7,
                 dtype: Any = np.int32) -> np.ndarray:
    sign = np.where(rng.random(shape) < 0.5, -1, 1)
    return (sign * rng.integers(1, hi + 1, shape)).astype(dtype)


def bools(rng: np.random.Generator, shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    return rng.random(shape) < 0.5


def sentinel(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An output's initial contents: a value no program computes (a checkerboard for bool)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.indices(shape).sum(axis=0) % 2 == 0
    if np.issubdtype(dtype, np.integer):
        return np.full(shape, INT_SENTINEL, dtype)
    return np.full(shape, FLOAT_SENTINEL, dtype)


def dom(shape: tuple[int, ...], index: Any) -> tuple[slice, ...]:
    """The out slice ``index`` (``np.s_[1:-1, :, 2:]``) as concrete ``slice(start, stop)``s."""
    index = index if isinstance(index, tuple) else (index,)
    return tuple(slice(*s.indices(n)[:2]) for s, n in zip(index, shape, strict=True))


def at(a: np.ndarray, domain: tuple[slice, ...], *shift: int) -> np.ndarray:
    """``a`` over ``domain`` shifted by ``shift`` (per dimension, missing ones 0): ``a(I+1)``."""
    shift = shift + (0,) * (len(domain) - len(shift))
    index = []
    for s, offset, n in zip(domain, shift, a.shape, strict=True):
        lo, hi = s.start + offset, s.stop + offset
        assert lo >= 0 and hi <= n, "the reference reads outside its input (a corpus bug)"
        index.append(slice(lo, hi))
    return a[tuple(index)]


def at_ij(g: np.ndarray, domain: tuple[slice, ...], di: int = 0, dj: int = 0) -> np.ndarray:
    """An IJ field over a 3D ``domain``, broadcast along K."""
    return at(g, domain[:2], di, dj)[:, :, None]


def arguments(**spec: Callable[[np.random.Generator], Any]) -> Callable[
        [np.random.Generator], dict[str, Any]]:
    """A builder calling each ``spec`` value with the generator, in keyword order."""
    def build(rng: np.random.Generator) -> dict[str, Any]:
        return {name: make(rng) for name, make in spec.items()}
    return build


def F(lo: float = -1.0, hi: float = 1.0, dtype: Any = np.float64,
      shape: tuple[int, ...] = SHAPE) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: floats(rng, shape, lo, hi, dtype)


def OUT(dtype: Any = np.float64, shape: tuple[int, ...] = SHAPE) -> Callable[
        [np.random.Generator], np.ndarray]:
    return lambda rng: sentinel(shape, dtype)


def SCALAR(value: Any) -> Callable[[np.random.Generator], Any]:
    return lambda rng: value


