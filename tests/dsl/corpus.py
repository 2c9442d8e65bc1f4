"""The DSL correctness corpus: programs, their inputs, and hand-written NumPy references.

Each :class:`Case` pairs a DSL program (defined at module level, so that its source can be read
with ``inspect.getsource``) with a builder of deterministic arguments and a NumPy reference that
writes, with plain slicing, exactly the cells the program's ``out=`` slices cover. Output
arguments arrive pre-filled with a sentinel, so a reference leaves every other cell as it was,
and a test can check that the program did too.

Together the cases cover every construct of "The DSL" in docs/design: shifts (several in one
call, asymmetric, in K), each arithmetic operator, each comparison, ``& | ~``, ``where``
(nested, with literals), every math builtin and ``abs``, ``astype`` both ways, each dtype,
scalar parameters of several dtypes, literals typed like NumPy 2 weak scalars, locals and
shifted locals, inlined calls of other field operators, tuple returns, 2D/1D fields broadcast
against 3D ones, multi-call programs with temporaries, and out slices with different halos per
dimension; plus the reference workloads ``laplacian`` and ``hdiff``.

No ``from __future__ import annotations`` here on purpose: the DSL reads the annotations, and a
user's module usually does not stringify them.
"""

import dataclasses
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from pipeline.dsl import (
    Dimension,
    Field,
    arccos,
    arcsin,
    arctan,
    astype,
    bool_,
    ceil,
    cos,
    cosh,
    exp,
    field_operator,
    float32,
    float64,
    floor,
    int32,
    int64,
    log,
    maximum,
    minimum,
    power,
    program,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    where,
)

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741

IJK = Field[[I, J, K], float64]
IJK32 = Field[[I, J, K], float32]
IJKi32 = Field[[I, J, K], int32]
IJKi64 = Field[[I, J, K], int64]
IJKb = Field[[I, J, K], bool_]
IJ = Field[[I, J], float64]
IK = Field[[I, K], float64]
KF = Field[[K], float64]

#: The default grid: no two extents equal, so a transposed index cannot pass unnoticed.
SHAPE = (10, 9, 6)
SHAPE_2D = SHAPE[:2]

FLOAT_SENTINEL = -777.25
INT_SENTINEL = -12345


# --------------------------------------------------------------------------- the case record


@dataclasses.dataclass(frozen=True)
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
    """

    name: str
    program: Any
    arguments: Callable[[np.random.Generator], dict[str, Any]]
    outputs: tuple[str, ...]
    reference: Callable[..., None]
    rtol: float | None = None
    atol: float | None = None

    @property
    def seed(self) -> int:
        return zlib.crc32(self.name.encode())

    def build(self) -> dict[str, Any]:
        """The case's arguments (NumPy), the same on every call."""
        return self.arguments(np.random.default_rng(self.seed))

    def tolerance(self, dtype: np.dtype) -> tuple[float, float]:
        rtol, atol = tolerance(dtype)
        return (self.rtol if self.rtol is not None else rtol,
                self.atol if self.atol is not None else atol)

    def check_on(self, backend: Any, label: str = "") -> None:
        """Run the program on ``backend`` over the case's arguments and assert that every
        output matches the reference (``label`` names the run in a failure)."""
        host = self.build()
        expected = {n: np.copy(v) if isinstance(v, np.ndarray) else v for n, v in host.items()}
        self.reference(**expected)
        self.program.with_backend(backend)(**host)
        for name in self.outputs:
            rtol, atol = self.tolerance(expected[name].dtype)
            np.testing.assert_allclose(host[name], expected[name], rtol=rtol, atol=atol,
                                       err_msg=f"{self.name} {label}: {name}" if label else "")


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing results of ``dtype``: exact for integers and booleans."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return 1e-12, 1e-12
    if dtype == np.float32:
        return 1e-5, 1e-5
    return 0.0, 0.0


CASES: list[Case] = []


def add(name: str, program_: Any, arguments: Callable[[np.random.Generator], dict[str, Any]],
        reference: Callable[..., None], outputs: tuple[str, ...] = ("out",),
        rtol: float | None = None, atol: float | None = None) -> None:
    if any(case.name == name for case in CASES):
        raise ValueError(f"duplicate corpus case {name!r}")
    CASES.append(Case(name, program_, arguments, outputs, reference, rtol, atol))


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


# =========================================================================== reference workloads


@field_operator
def laplacian(f: IJK) -> IJK:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@program
def lap(inp: IJK, out: IJK):
    laplacian(inp, out=out[1:-1, 1:-1, :])


def lap_at(f: np.ndarray, d: tuple[slice, ...], di: int = 0, dj: int = 0) -> np.ndarray:
    return (-4.0 * at(f, d, di, dj) + at(f, d, di + 1, dj) + at(f, d, di - 1, dj)
            + at(f, d, di, dj + 1) + at(f, d, di, dj - 1))


def lap_reference(inp, out):
    d = dom(out.shape, np.s_[1:-1, 1:-1, :])
    out[d] = lap_at(inp, d)


add("laplacian", lap, arguments(inp=F(), out=OUT()), lap_reference)


@field_operator
def hdiff(inp: IJK, coeff: float64) -> IJK:
    lap_field = 4.0 * inp - (inp(I - 1) + inp(I + 1) + inp(J - 1) + inp(J + 1))
    flx_raw = lap_field(I + 1) - lap_field
    flx = where(flx_raw * (inp(I + 1) - inp) > 0.0, 0.0, flx_raw)
    fly_raw = lap_field(J + 1) - lap_field
    fly = where(fly_raw * (inp(J + 1) - inp) > 0.0, 0.0, fly_raw)
    return inp - coeff * (flx - flx(I - 1) + fly - fly(J - 1))


@program
def hdiff_program(inp: IJK, coeff: float64, out: IJK):
    hdiff(inp, coeff, out=out[2:-2, 2:-2, :])


def hdiff_reference(inp, coeff, out):
    d = dom(out.shape, np.s_[2:-2, 2:-2, :])

    def lap_(di, dj):
        return 4.0 * at(inp, d, di, dj) - (at(inp, d, di - 1, dj) + at(inp, d, di + 1, dj)
                                           + at(inp, d, di, dj - 1) + at(inp, d, di, dj + 1))

    def flx(di, dj):
        raw = lap_(di + 1, dj) - lap_(di, dj)
        return np.where(raw * (at(inp, d, di + 1, dj) - at(inp, d, di, dj)) > 0.0, 0.0, raw)

    def fly(di, dj):
        raw = lap_(di, dj + 1) - lap_(di, dj)
        return np.where(raw * (at(inp, d, di, dj + 1) - at(inp, d, di, dj)) > 0.0, 0.0, raw)

    out[d] = at(inp, d) - coeff * (flx(0, 0) - flx(-1, 0) + fly(0, 0) - fly(0, -1))


add("hdiff", hdiff_program,
    arguments(inp=F(shape=(16, 16, 8)), coeff=SCALAR(0.025), out=OUT(shape=(16, 16, 8))),
    hdiff_reference)


# =========================================================================== float arithmetic


@field_operator
def arith_fields(a: IJK, b: IJK) -> IJK:
    return a + b - a * b


@program
def arith_fields_program(a: IJK, b: IJK, out: IJK):
    arith_fields(a, b, out=out)


def arith_fields_reference(a, b, out):
    out[...] = a + b - a * b


add("full_domain_add_sub_mul", arith_fields_program, arguments(a=F(), b=F(), out=OUT()),
    arith_fields_reference)


@field_operator
def true_divide(a: IJK, b: IJK) -> IJK:
    return a / b


@program
def true_divide_program(a: IJK, b: IJK, out: IJK):
    true_divide(a, b, out=out[:, 1:, :-1])


def true_divide_reference(a, b, out):
    d = dom(out.shape, np.s_[:, 1:, :-1])
    out[d] = at(a, d) / at(b, d)


add("true_divide", true_divide_program,
    arguments(a=F(-5, 5), b=away_from_zero, out=OUT()), true_divide_reference)


@field_operator
def floor_divide_float(a: IJK, b: IJK) -> IJK:
    return a // b


@program
def floor_divide_float_program(a: IJK, b: IJK, out: IJK):
    floor_divide_float(a, b, out=out)


def floor_divide_float_reference(a, b, out):
    out[...] = a // b


add("floor_divide_float64", floor_divide_float_program,
    arguments(a=F(-5, 5), b=away_from_zero, out=OUT()),
    floor_divide_float_reference)


@field_operator
def remainder_float(a: IJK, b: IJK) -> IJK:
    return a % b


@program
def remainder_float_program(a: IJK, b: IJK, out: IJK):
    remainder_float(a, b, out=out)


def remainder_float_reference(a, b, out):
    out[...] = a % b


add("remainder_float64_mixed_signs", remainder_float_program,
    arguments(a=F(-5, 5), b=away_from_zero, out=OUT()),
    remainder_float_reference)


@field_operator
def power_fields(a: IJK, b: IJK) -> IJK:
    return a ** b


@program
def power_fields_program(a: IJK, b: IJK, out: IJK):
    power_fields(a, b, out=out)


def power_fields_reference(a, b, out):
    out[...] = a ** b


add("power_operator_fields", power_fields_program, arguments(a=F(0.1, 3), b=F(-2, 2), out=OUT()),
    power_fields_reference)


@field_operator
def power_int_literal(a: IJK) -> IJK:
    return a ** 2 - a ** 3


@program
def power_int_literal_program(a: IJK, out: IJK):
    power_int_literal(a, out=out)


def power_int_literal_reference(a, out):
    out[...] = a ** 2 - a ** 3


add("power_operator_int_literal", power_int_literal_program, arguments(a=F(-2, 2), out=OUT()),
    power_int_literal_reference)


@field_operator
def negate(a: IJK, b: IJK) -> IJK:
    return -(a * b) - a


@program
def negate_program(a: IJK, b: IJK, out: IJK):
    negate(a, b, out=out)


def negate_reference(a, b, out):
    out[...] = -(a * b) - a


add("unary_minus", negate_program, arguments(a=F(), b=F(), out=OUT()), negate_reference)


# =========================================================================== comparisons


def _comparison_args(rng: np.random.Generator) -> dict[str, Any]:
    return {"a": ties(rng), "b": ties(rng), "out": sentinel(SHAPE, np.bool_)}


@field_operator
def less(a: IJK, b: IJK) -> IJKb:
    return a < b


@program
def less_program(a: IJK, b: IJK, out: IJKb):
    less(a, b, out=out)


def less_reference(a, b, out):
    out[...] = a < b


add("compare_less", less_program, _comparison_args, less_reference)


@field_operator
def less_equal(a: IJK, b: IJK) -> IJKb:
    return a <= b


@program
def less_equal_program(a: IJK, b: IJK, out: IJKb):
    less_equal(a, b, out=out)


def less_equal_reference(a, b, out):
    out[...] = a <= b


add("compare_less_equal", less_equal_program, _comparison_args, less_equal_reference)


@field_operator
def greater(a: IJK, b: IJK) -> IJKb:
    return a(I + 1) > b


@program
def greater_program(a: IJK, b: IJK, out: IJKb):
    greater(a, b, out=out[:-1, :, :])


def greater_reference(a, b, out):
    d = dom(out.shape, np.s_[:-1, :, :])
    out[d] = at(a, d, 1) > at(b, d)


add("compare_greater_shifted", greater_program, _comparison_args, greater_reference)


@field_operator
def greater_equal(a: IJK, b: IJK) -> IJKb:
    return a >= b


@program
def greater_equal_program(a: IJK, b: IJK, out: IJKb):
    greater_equal(a, b, out=out[1:, 1:, 1:])


def greater_equal_reference(a, b, out):
    d = dom(out.shape, np.s_[1:, 1:, 1:])
    out[d] = at(a, d) >= at(b, d)


add("compare_greater_equal", greater_equal_program, _comparison_args, greater_equal_reference)


@field_operator
def equal_ints(a: IJKi32, b: IJKi32) -> IJKb:
    return a == b


@program
def equal_ints_program(a: IJKi32, b: IJKi32, out: IJKb):
    equal_ints(a, b, out=out)


def equal_ints_reference(a, b, out):
    out[...] = a == b


add("compare_equal_int32", equal_ints_program,
    arguments(a=lambda rng: ints(rng, lo=0, hi=2), b=lambda rng: ints(rng, lo=0, hi=2),
              out=OUT(np.bool_)),
    equal_ints_reference)


@field_operator
def not_equal_literal(a: IJK) -> IJKb:
    return a != 0.5


@program
def not_equal_literal_program(a: IJK, out: IJKb):
    not_equal_literal(a, out=out)


def not_equal_literal_reference(a, out):
    out[...] = a != 0.5


add("compare_not_equal_float_literal", not_equal_literal_program,
    arguments(a=ties, out=OUT(np.bool_)), not_equal_literal_reference)


# =========================================================================== boolean logic


@field_operator
def bool_logic(a: IJKb, b: IJKb, c: IJKb) -> IJKb:
    return (a & b) | ~c


@program
def bool_logic_program(a: IJKb, b: IJKb, c: IJKb, out: IJKb):
    bool_logic(a, b, c, out=out)


def bool_logic_reference(a, b, c, out):
    out[...] = (a & b) | ~c


add("bool_and_or_invert", bool_logic_program,
    arguments(a=bools, b=bools, c=bools, out=OUT(np.bool_)), bool_logic_reference)


@field_operator
def combined_comparisons(a: IJK, b: IJK) -> IJKb:
    return (a > 0.0) & ~(b < 0.5) | (a == b)


@program
def combined_comparisons_program(a: IJK, b: IJK, out: IJKb):
    combined_comparisons(a, b, out=out)


def combined_comparisons_reference(a, b, out):
    out[...] = (a > 0.0) & ~(b < 0.5) | (a == b)


add("bool_logic_of_comparisons", combined_comparisons_program, _comparison_args,
    combined_comparisons_reference)


# =========================================================================== where


@field_operator
def where_select(a: IJK, b: IJK) -> IJK:
    return where(a(I + 1) > a, a(I + 1), b)


@program
def where_select_program(a: IJK, b: IJK, out: IJK):
    where_select(a, b, out=out[:-1, :, :])


def where_select_reference(a, b, out):
    d = dom(out.shape, np.s_[:-1, :, :])
    out[d] = np.where(at(a, d, 1) > at(a, d), at(a, d, 1), at(b, d))


add("where_select_shifted", where_select_program, arguments(a=F(), b=F(), out=OUT()),
    where_select_reference)


@field_operator
def where_nested(a: IJK) -> IJK:
    return where(a > 0.5, a, where(a < -0.5, -a, 0.0))


@program
def where_nested_program(a: IJK, out: IJK):
    where_nested(a, out=out)


def where_nested_reference(a, out):
    out[...] = np.where(a > 0.5, a, np.where(a < -0.5, -a, 0.0))


add("where_nested", where_nested_program, arguments(a=F(), out=OUT()), where_nested_reference)


@field_operator
def where_mask(mask: IJKb, a: IJK, b: IJK) -> IJK:
    return where(mask, a, -b)


@program
def where_mask_program(mask: IJKb, a: IJK, b: IJK, out: IJK):
    where_mask(mask, a, b, out=out[1:-1, :, :])


def where_mask_reference(mask, a, b, out):
    d = dom(out.shape, np.s_[1:-1, :, :])
    out[d] = np.where(at(mask, d), at(a, d), -at(b, d))


add("where_bool_field", where_mask_program, arguments(mask=bools, a=F(), b=F(), out=OUT()),
    where_mask_reference)


@field_operator
def where_literals(a: IJK, b: IJK) -> IJK:
    return where(a > b, 1.0, -1.0)


@program
def where_literals_program(a: IJK, b: IJK, out: IJK):
    where_literals(a, b, out=out)


def where_literals_reference(a, b, out):
    out[...] = np.where(a > b, 1.0, -1.0)


add("where_both_branches_literals", where_literals_program, arguments(a=F(), b=F(), out=OUT()),
    where_literals_reference)


# =========================================================================== math builtins
# Each unary builtin writes out[1:, :-1, :] so the sentinel border is checked too.

BUILTIN_SLICE = np.s_[1:, :-1, :]


def unary_reference(function: Callable[[np.ndarray], np.ndarray]) -> Callable[..., None]:
    def reference(a, out):
        d = dom(out.shape, BUILTIN_SLICE)
        out[d] = function(at(a, d))
    reference.__name__ = f"{function.__name__}_reference"
    return reference


@field_operator
def sqrt_op(a: IJK) -> IJK:
    return sqrt(a)


@program
def sqrt_program(a: IJK, out: IJK):
    sqrt_op(a, out=out[1:, :-1, :])


add("builtin_sqrt", sqrt_program, arguments(a=F(0.1, 4), out=OUT()), unary_reference(np.sqrt))


@field_operator
def exp_op(a: IJK) -> IJK:
    return exp(a)


@program
def exp_program(a: IJK, out: IJK):
    exp_op(a, out=out[1:, :-1, :])


add("builtin_exp", exp_program, arguments(a=F(-3, 3), out=OUT()), unary_reference(np.exp))


@field_operator
def log_op(a: IJK) -> IJK:
    return log(a)


@program
def log_program(a: IJK, out: IJK):
    log_op(a, out=out[1:, :-1, :])


add("builtin_log", log_program, arguments(a=F(0.1, 4), out=OUT()), unary_reference(np.log))


@field_operator
def sin_op(a: IJK) -> IJK:
    return sin(a)


@program
def sin_program(a: IJK, out: IJK):
    sin_op(a, out=out[1:, :-1, :])


add("builtin_sin", sin_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.sin))


@field_operator
def cos_op(a: IJK) -> IJK:
    return cos(a)


@program
def cos_program(a: IJK, out: IJK):
    cos_op(a, out=out[1:, :-1, :])


add("builtin_cos", cos_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.cos))


@field_operator
def tan_op(a: IJK) -> IJK:
    return tan(a)


@program
def tan_program(a: IJK, out: IJK):
    tan_op(a, out=out[1:, :-1, :])


add("builtin_tan", tan_program, arguments(a=F(-1.2, 1.2), out=OUT()), unary_reference(np.tan))


@field_operator
def arcsin_op(a: IJK) -> IJK:
    return arcsin(a)


@program
def arcsin_program(a: IJK, out: IJK):
    arcsin_op(a, out=out[1:, :-1, :])


add("builtin_arcsin", arcsin_program, arguments(a=F(-0.9, 0.9), out=OUT()),
    unary_reference(np.arcsin))


@field_operator
def arccos_op(a: IJK) -> IJK:
    return arccos(a)


@program
def arccos_program(a: IJK, out: IJK):
    arccos_op(a, out=out[1:, :-1, :])


add("builtin_arccos", arccos_program, arguments(a=F(-0.9, 0.9), out=OUT()),
    unary_reference(np.arccos))


@field_operator
def arctan_op(a: IJK) -> IJK:
    return arctan(a)


@program
def arctan_program(a: IJK, out: IJK):
    arctan_op(a, out=out[1:, :-1, :])


add("builtin_arctan", arctan_program, arguments(a=F(-4, 4), out=OUT()),
    unary_reference(np.arctan))


@field_operator
def sinh_op(a: IJK) -> IJK:
    return sinh(a)


@program
def sinh_program(a: IJK, out: IJK):
    sinh_op(a, out=out[1:, :-1, :])


add("builtin_sinh", sinh_program, arguments(a=F(-3, 3), out=OUT()), unary_reference(np.sinh))


@field_operator
def cosh_op(a: IJK) -> IJK:
    return cosh(a)


@program
def cosh_program(a: IJK, out: IJK):
    cosh_op(a, out=out[1:, :-1, :])


add("builtin_cosh", cosh_program, arguments(a=F(-3, 3), out=OUT()), unary_reference(np.cosh))


@field_operator
def tanh_op(a: IJK) -> IJK:
    return tanh(a)


@program
def tanh_program(a: IJK, out: IJK):
    tanh_op(a, out=out[1:, :-1, :])


add("builtin_tanh", tanh_program, arguments(a=F(-3, 3), out=OUT()), unary_reference(np.tanh))


@field_operator
def floor_op(a: IJK) -> IJK:
    return floor(a)


@program
def floor_program(a: IJK, out: IJK):
    floor_op(a, out=out[1:, :-1, :])


add("builtin_floor", floor_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.floor))


@field_operator
def ceil_op(a: IJK) -> IJK:
    return ceil(a)


@program
def ceil_program(a: IJK, out: IJK):
    ceil_op(a, out=out[1:, :-1, :])


add("builtin_ceil", ceil_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.ceil))


@field_operator
def abs_op(a: IJK) -> IJK:
    return abs(a)


@program
def abs_program(a: IJK, out: IJK):
    abs_op(a, out=out[1:, :-1, :])


add("builtin_abs", abs_program, arguments(a=F(-4, 4), out=OUT()), unary_reference(np.abs))


@field_operator
def minimum_op(a: IJK, b: IJK) -> IJK:
    return minimum(a, b)


@program
def minimum_program(a: IJK, b: IJK, out: IJK):
    minimum_op(a, b, out=out)


def minimum_reference(a, b, out):
    out[...] = np.minimum(a, b)


add("builtin_minimum", minimum_program, arguments(a=F(), b=F(), out=OUT()), minimum_reference)


@field_operator
def maximum_op(a: IJK) -> IJK:
    return maximum(a, 0.0)


@program
def maximum_program(a: IJK, out: IJK):
    maximum_op(a, out=out)


def maximum_reference(a, out):
    out[...] = np.maximum(a, 0.0)


add("builtin_maximum_with_literal", maximum_program, arguments(a=F(), out=OUT()),
    maximum_reference)


@field_operator
def power_op(a: IJK, b: IJK) -> IJK:
    return power(a, b)


@program
def power_program(a: IJK, b: IJK, out: IJK):
    power_op(a, b, out=out)


def power_reference(a, b, out):
    out[...] = np.power(a, b)


add("builtin_power", power_program, arguments(a=F(0.1, 3), b=F(-2, 2), out=OUT()),
    power_reference)


@field_operator
def builtins_float32(a: IJK32, b: IJK32) -> IJK32:
    return sqrt(a) + exp(b) * sin(a) - abs(b) + arctan(a * b)


@program
def builtins_float32_program(a: IJK32, b: IJK32, out: IJK32):
    builtins_float32(a, b, out=out)


def builtins_float32_reference(a, b, out):
    out[...] = np.sqrt(a) + np.exp(b) * np.sin(a) - np.abs(b) + np.arctan(a * b)


add("builtins_float32", builtins_float32_program,
    arguments(a=F(0.1, 2, np.float32), b=F(-1, 1, np.float32), out=OUT(np.float32)),
    builtins_float32_reference)


# =========================================================================== astype


@field_operator
def to_float32(a: IJK) -> IJK32:
    return astype(a, float32)


@program
def to_float32_program(a: IJK, out: IJK32):
    to_float32(a, out=out[1:-1, :, :])


def to_float32_reference(a, out):
    d = dom(out.shape, np.s_[1:-1, :, :])
    out[d] = at(a, d).astype(np.float32)


add("astype_float64_to_float32", to_float32_program,
    arguments(a=F(-10, 10), out=OUT(np.float32)), to_float32_reference)


@field_operator
def to_float64(a: IJK32, b: IJK) -> IJK:
    return astype(a, float64) + b


@program
def to_float64_program(a: IJK32, b: IJK, out: IJK):
    to_float64(a, b, out=out)


def to_float64_reference(a, b, out):
    out[...] = a.astype(np.float64) + b


add("astype_float32_to_float64", to_float64_program,
    arguments(a=F(-10, 10, np.float32), b=F(), out=OUT()), to_float64_reference)


@field_operator
def int_to_float(n: IJKi32, a: IJK) -> IJK:
    return astype(n, float64) * a


@program
def int_to_float_program(n: IJKi32, a: IJK, out: IJK):
    int_to_float(n, a, out=out)


def int_to_float_reference(n, a, out):
    out[...] = n.astype(np.float64) * a


add("astype_int32_to_float64", int_to_float_program,
    arguments(n=ints, a=F(), out=OUT()), int_to_float_reference)


@field_operator
def float_to_int(a: IJK) -> IJKi32:
    return astype(a * 10.0, int32)


@program
def float_to_int_program(a: IJK, out: IJKi32):
    float_to_int(a, out=out[:, :, 1:])


def float_to_int_reference(a, out):
    d = dom(out.shape, np.s_[:, :, 1:])
    out[d] = (at(a, d) * 10.0).astype(np.int32)


add("astype_float64_to_int32_truncates", float_to_int_program,
    arguments(a=F(-3, 3), out=OUT(np.int32)), float_to_int_reference)


@field_operator
def bool_to_int(a: IJK, b: IJK, n: IJKi64) -> IJKi64:
    return astype(a > b, int64) + n


@program
def bool_to_int_program(a: IJK, b: IJK, n: IJKi64, out: IJKi64):
    bool_to_int(a, b, n, out=out)


def bool_to_int_reference(a, b, n, out):
    out[...] = (a > b).astype(np.int64) + n


add("astype_bool_to_int64", bool_to_int_program,
    arguments(a=F(), b=F(), n=lambda rng: ints(rng, dtype=np.int64), out=OUT(np.int64)),
    bool_to_int_reference)


@field_operator
def narrow_int(n: IJKi64, m: IJKi32) -> IJKi32:
    return astype(n, int32) - m


@program
def narrow_int_program(n: IJKi64, m: IJKi32, out: IJKi32):
    narrow_int(n, m, out=out)


def narrow_int_reference(n, m, out):
    out[...] = n.astype(np.int32) - m


add("astype_int64_to_int32", narrow_int_program,
    arguments(n=lambda rng: ints(rng, lo=-10**6, hi=10**6, dtype=np.int64),
              m=ints, out=OUT(np.int32)),
    narrow_int_reference)


# =========================================================================== dtypes and literals


@field_operator
def stencil_float32(a: IJK32) -> IJK32:
    return 2 * a + 0.5 * a(I + 1) - a(J - 1)


@program
def stencil_float32_program(a: IJK32, out: IJK32):
    stencil_float32(a, out=out[:-1, 1:, :])


def stencil_float32_reference(a, out):
    d = dom(out.shape, np.s_[:-1, 1:, :])
    out[d] = 2 * at(a, d) + 0.5 * at(a, d, 1) - at(a, d, 0, -1)


add("float32_stencil_with_int_and_float_literals", stencil_float32_program,
    arguments(a=F(dtype=np.float32), out=OUT(np.float32)), stencil_float32_reference)


@field_operator
def float_literals_float32(a: IJK32) -> IJK32:
    return a * 0.5 + 1.25


@program
def float_literals_float32_program(a: IJK32, out: IJK32):
    float_literals_float32(a, out=out)


def float_literals_float32_reference(a, out):
    out[...] = a * 0.5 + 1.25


add("float_literals_keep_float32", float_literals_float32_program,
    arguments(a=F(dtype=np.float32), out=OUT(np.float32)), float_literals_float32_reference)


@field_operator
def int_literal_float64(a: IJK) -> IJK:
    return 3 * a - 1


@program
def int_literal_float64_program(a: IJK, out: IJK):
    int_literal_float64(a, out=out)


def int_literal_float64_reference(a, out):
    out[...] = 3 * a - 1


add("int_literals_with_float64", int_literal_float64_program, arguments(a=F(), out=OUT()),
    int_literal_float64_reference)


@field_operator
def int32_arithmetic(a: IJKi32, b: IJKi32) -> IJKi32:
    return a * 3 + b - 7


@program
def int32_arithmetic_program(a: IJKi32, b: IJKi32, out: IJKi32):
    int32_arithmetic(a, b, out=out)


def int32_arithmetic_reference(a, b, out):
    out[...] = a * 3 + b - 7


add("int32_arithmetic_with_literals", int32_arithmetic_program,
    arguments(a=ints, b=ints, out=OUT(np.int32)),
    int32_arithmetic_reference)


@field_operator
def int_floor_divide(a: IJKi32, b: IJKi32) -> IJKi32:
    return a // b


@program
def int_floor_divide_program(a: IJKi32, b: IJKi32, out: IJKi32):
    int_floor_divide(a, b, out=out)


def int_floor_divide_reference(a, b, out):
    out[...] = a // b


add("int32_floor_divide_negative_operands", int_floor_divide_program,
    arguments(a=lambda rng: ints(rng, lo=-50, hi=50), b=nonzero_ints,
              out=OUT(np.int32)),
    int_floor_divide_reference)


@field_operator
def int_remainder(a: IJKi64, b: IJKi64) -> IJKi64:
    return a % b


@program
def int_remainder_program(a: IJKi64, b: IJKi64, out: IJKi64):
    int_remainder(a, b, out=out)


def int_remainder_reference(a, b, out):
    out[...] = a % b


add("int64_remainder_negative_operands", int_remainder_program,
    arguments(a=lambda rng: ints(rng, lo=-50, hi=50, dtype=np.int64),
              b=lambda rng: nonzero_ints(rng, dtype=np.int64), out=OUT(np.int64)),
    int_remainder_reference)


@field_operator
def int64_stencil(a: IJKi64) -> IJKi64:
    return a(I + 1) * a(I - 1) - a


@program
def int64_stencil_program(a: IJKi64, out: IJKi64):
    int64_stencil(a, out=out[1:-1, :, :])


def int64_stencil_reference(a, out):
    d = dom(out.shape, np.s_[1:-1, :, :])
    out[d] = at(a, d, 1) * at(a, d, -1) - at(a, d)


add("int64_shifted_product", int64_stencil_program,
    arguments(a=lambda rng: ints(rng, lo=-1000, hi=1000, dtype=np.int64), out=OUT(np.int64)),
    int64_stencil_reference)


@field_operator
def int_literal_int64(a: IJKi64) -> IJKi64:
    return 2 * a + 1 - a(K + 1)


@program
def int_literal_int64_program(a: IJKi64, out: IJKi64):
    int_literal_int64(a, out=out[:, :, :-1])


def int_literal_int64_reference(a, out):
    d = dom(out.shape, np.s_[:, :, :-1])
    out[d] = 2 * at(a, d) + 1 - at(a, d, 0, 0, 1)


add("int_literals_with_int64", int_literal_int64_program,
    arguments(a=lambda rng: ints(rng, dtype=np.int64), out=OUT(np.int64)),
    int_literal_int64_reference)


@field_operator
def int_abs_negate(a: IJKi32) -> IJKi32:
    return abs(-a + 3)


@program
def int_abs_negate_program(a: IJKi32, out: IJKi32):
    int_abs_negate(a, out=out)


def int_abs_negate_reference(a, out):
    out[...] = np.abs(-a + 3)


add("int32_unary_minus_and_abs", int_abs_negate_program,
    arguments(a=ints, out=OUT(np.int32)), int_abs_negate_reference)


@field_operator
def int_power(a: IJKi32) -> IJKi32:
    return a ** 2


@program
def int_power_program(a: IJKi32, out: IJKi32):
    int_power(a, out=out)


def int_power_reference(a, out):
    out[...] = a ** 2


add("int32_power_operator", int_power_program,
    arguments(a=lambda rng: ints(rng, lo=-10, hi=10), out=OUT(np.int32)), int_power_reference)


@field_operator
def int_clamp(a: IJKi32, b: IJKi32) -> IJKi32:
    return maximum(minimum(a, b), 0)


@program
def int_clamp_program(a: IJKi32, b: IJKi32, out: IJKi32):
    int_clamp(a, b, out=out)


def int_clamp_reference(a, b, out):
    out[...] = np.maximum(np.minimum(a, b), 0)


add("int32_minimum_maximum", int_clamp_program,
    arguments(a=ints, b=ints, out=OUT(np.int32)),
    int_clamp_reference)


@field_operator
def int_compare_literal(a: IJKi64) -> IJKb:
    return a >= 3


@program
def int_compare_literal_program(a: IJKi64, out: IJKb):
    int_compare_literal(a, out=out)


def int_compare_literal_reference(a, out):
    out[...] = a >= 3


add("int64_compare_with_literal", int_compare_literal_program,
    arguments(a=lambda rng: ints(rng, lo=0, hi=6, dtype=np.int64), out=OUT(np.bool_)),
    int_compare_literal_reference)


@field_operator
def bool_literals(a: IJKb, b: IJKb) -> IJKb:
    return (a | False) & (b != True)  # noqa: E712


@program
def bool_literals_program(a: IJKb, b: IJKb, out: IJKb):
    bool_literals(a, b, out=out)


def bool_literals_reference(a, b, out):
    out[...] = (a | False) & (b != True)  # noqa: E712


add("bool_literals_with_bool_fields", bool_literals_program,
    arguments(a=bools, b=bools, out=OUT(np.bool_)), bool_literals_reference)


# =========================================================================== scalar parameters


@field_operator
def axpb(a: IJK, alpha: float64, beta: float64) -> IJK:
    return alpha * a + beta


@program
def axpb_program(a: IJK, alpha: float64, beta: float64, out: IJK):
    axpb(a, alpha, beta, out=out[1:, 1:, 1:])


def axpb_reference(a, alpha, beta, out):
    d = dom(out.shape, np.s_[1:, 1:, 1:])
    out[d] = alpha * at(a, d) + beta


add("scalar_float64_parameters", axpb_program,
    arguments(a=F(), alpha=SCALAR(-1.75), beta=SCALAR(0.3), out=OUT()), axpb_reference)


@field_operator
def scale_float32(a: IJK32, alpha: float32) -> IJK32:
    return alpha * a


@program
def scale_float32_program(a: IJK32, alpha: float32, out: IJK32):
    scale_float32(a, alpha, out=out)


def scale_float32_reference(a, alpha, out):
    out[...] = np.float32(alpha) * a


add("scalar_float32_parameter", scale_float32_program,
    arguments(a=F(dtype=np.float32), alpha=SCALAR(0.3), out=OUT(np.float32)),
    scale_float32_reference)


@field_operator
def scale_int32(a: IJKi32, n: int32) -> IJKi32:
    return a * n + n


@program
def scale_int32_program(a: IJKi32, n: int32, out: IJKi32):
    scale_int32(a, n, out=out)


def scale_int32_reference(a, n, out):
    out[...] = a * np.int32(n) + np.int32(n)


add("scalar_int32_parameter", scale_int32_program,
    arguments(a=ints, n=SCALAR(-3), out=OUT(np.int32)), scale_int32_reference)


@field_operator
def scale_int64(a: IJKi64, n: int64) -> IJKi64:
    return a - n * a(J + 1)


@program
def scale_int64_program(a: IJKi64, n: int64, out: IJKi64):
    scale_int64(a, n, out=out[:, :-1, :])


def scale_int64_reference(a, n, out):
    d = dom(out.shape, np.s_[:, :-1, :])
    out[d] = at(a, d) - np.int64(n) * at(a, d, 0, 1)


add("scalar_int64_parameter", scale_int64_program,
    arguments(a=lambda rng: ints(rng, dtype=np.int64), n=SCALAR(3_000_000_000),
              out=OUT(np.int64)),
    scale_int64_reference)


@field_operator
def select_by_flag(a: IJKb, b: IJKb, flag: bool_) -> IJKb:
    return (a & flag) | (b & ~flag)


@program
def select_by_flag_program(a: IJKb, b: IJKb, flag: bool_, out: IJKb):
    select_by_flag(a, b, flag, out=out)


def select_by_flag_reference(a, b, flag, out):
    flag = np.bool_(flag)
    out[...] = (a & flag) | (b & ~flag)


add("scalar_bool_parameter_inverted", select_by_flag_program,
    arguments(a=bools, b=bools, flag=SCALAR(False), out=OUT(np.bool_)),
    select_by_flag_reference)


# =========================================================================== locals


@field_operator
def locals_chain(a: IJK, b: IJK) -> IJK:
    t = a + b
    u = t * t
    return u - a


@program
def locals_chain_program(a: IJK, b: IJK, out: IJK):
    locals_chain(a, b, out=out)


def locals_chain_reference(a, b, out):
    t = a + b
    out[...] = t * t - a


add("local_variables", locals_chain_program, arguments(a=F(), b=F(), out=OUT()),
    locals_chain_reference)


@field_operator
def shifted_local(f: IJK) -> IJK:
    t = f(I + 1) - f
    return t - t(I - 1)


@program
def shifted_local_program(f: IJK, out: IJK):
    shifted_local(f, out=out[1:-1, :, :])


def shifted_local_reference(f, out):
    d = dom(out.shape, np.s_[1:-1, :, :])

    def t(di):
        return at(f, d, di + 1) - at(f, d, di)

    out[d] = t(0) - t(-1)


add("shifted_local", shifted_local_program, arguments(f=F(), out=OUT()),
    shifted_local_reference)


@field_operator
def shifted_locals_jk(f: IJK) -> IJK:
    t = f(J + 1) + f(K - 1)
    u = t(K + 1) - t
    return u(J - 1)


@program
def shifted_locals_jk_program(f: IJK, out: IJK):
    shifted_locals_jk(f, out=out[:, 1:, 1:-1])


def shifted_locals_jk_reference(f, out):
    d = dom(out.shape, np.s_[:, 1:, 1:-1])

    def t(dj, dk):
        return at(f, d, 0, dj + 1, dk) + at(f, d, 0, dj, dk - 1)

    def u(dj, dk):
        return t(dj, dk + 1) - t(dj, dk)

    out[d] = u(-1, 0)


add("shifted_locals_in_j_and_k", shifted_locals_jk_program, arguments(f=F(), out=OUT()),
    shifted_locals_jk_reference)


# =========================================================================== inlined calls


@field_operator
def bilaplacian(f: IJK) -> IJK:
    return laplacian(laplacian(f))


@program
def bilaplacian_program(f: IJK, out: IJK):
    bilaplacian(f, out=out[2:-2, 2:-2, :])


def bilaplacian_reference(f, out):
    d = dom(out.shape, np.s_[2:-2, 2:-2, :])
    out[d] = (-4.0 * lap_at(f, d) + lap_at(f, d, 1, 0) + lap_at(f, d, -1, 0)
              + lap_at(f, d, 0, 1) + lap_at(f, d, 0, -1))


add("nested_call_bilaplacian", bilaplacian_program, arguments(f=F(), out=OUT()),
    bilaplacian_reference)


@field_operator
def axpy(x: IJK, y: IJK, alpha: float64) -> IJK:
    return alpha * x + y


@field_operator
def smooth_step(f: IJK, g: IJK, alpha: float64) -> IJK:
    return axpy(laplacian(f), g, alpha)


@program
def smooth_step_program(f: IJK, g: IJK, alpha: float64, out: IJK):
    smooth_step(f, g, alpha, out=out[1:-1, 1:-1, :])


def smooth_step_reference(f, g, alpha, out):
    d = dom(out.shape, np.s_[1:-1, 1:-1, :])
    out[d] = alpha * lap_at(f, d) + at(g, d)


add("nested_call_with_scalar_passed_through", smooth_step_program,
    arguments(f=F(), g=F(), alpha=SCALAR(0.125), out=OUT()), smooth_step_reference)


@field_operator
def lap_gradient(f: IJK) -> IJK:
    lap_field = laplacian(f)
    return lap_field(I + 1) - lap_field


@program
def lap_gradient_program(f: IJK, out: IJK):
    lap_gradient(f, out=out[1:-2, 1:-1, :])


def lap_gradient_reference(f, out):
    d = dom(out.shape, np.s_[1:-2, 1:-1, :])
    out[d] = lap_at(f, d, 1) - lap_at(f, d)


add("nested_call_result_shifted", lap_gradient_program, arguments(f=F(), out=OUT()),
    lap_gradient_reference)


@field_operator
def diff_i(f: IJK) -> IJK:
    return f(I + 1) - f


@field_operator
def diff_product(a: IJK, b: IJK) -> IJK:
    return diff_i(a) * diff_i(b)


@program
def diff_product_program(a: IJK, b: IJK, out: IJK):
    diff_product(a, b, out=out[:-1, :, :])


def diff_product_reference(a, b, out):
    d = dom(out.shape, np.s_[:-1, :, :])
    out[d] = (at(a, d, 1) - at(a, d)) * (at(b, d, 1) - at(b, d))


add("nested_calls_of_one_operator_on_two_fields", diff_product_program,
    arguments(a=F(), b=F(), out=OUT()), diff_product_reference)


# =========================================================================== tuple returns


@field_operator
def sum_diff(a: IJK, b: IJK) -> tuple[IJK, IJK]:
    return a + b, a - b


@program
def sum_diff_program(a: IJK, b: IJK, s: IJK, d: IJK):
    sum_diff(a, b, out=(s[1:-1, :, :], d[1:-1, :, :]))


def sum_diff_reference(a, b, s, d):
    dm = dom(s.shape, np.s_[1:-1, :, :])
    s[dm] = at(a, dm) + at(b, dm)
    d[dm] = at(a, dm) - at(b, dm)


add("tuple_return_sliced", sum_diff_program, arguments(a=F(), b=F(), s=OUT(), d=OUT()),
    sum_diff_reference, outputs=("s", "d"))


@field_operator
def gradient_and_sign(f: IJK) -> tuple[IJK, IJKb]:
    return f(I + 1) - f, f > 0.0


@program
def gradient_and_sign_program(f: IJK, grad: IJK, positive: IJKb):
    gradient_and_sign(f, out=(grad[:-1, :, :], positive[:-1, :, :]))


def gradient_and_sign_reference(f, grad, positive):
    d = dom(grad.shape, np.s_[:-1, :, :])
    grad[d] = at(f, d, 1) - at(f, d)
    positive[d] = at(f, d) > 0.0


add("tuple_return_mixed_dtypes_shifted", gradient_and_sign_program,
    arguments(f=F(), grad=OUT(), positive=OUT(np.bool_)), gradient_and_sign_reference,
    outputs=("grad", "positive"))


@field_operator
def product_and_sum(a: IJK, b: IJK) -> tuple[IJK, IJK]:
    return a * b, a + b


@program
def product_and_sum_program(a: IJK, b: IJK, p: IJK, q: IJK):
    product_and_sum(a, b, out=(p, q))


def product_and_sum_reference(a, b, p, q):
    p[...] = a * b
    q[...] = a + b


add("tuple_return_full_domain", product_and_sum_program,
    arguments(a=F(), b=F(), p=OUT(), q=OUT()), product_and_sum_reference, outputs=("p", "q"))


# =========================================================================== broadcasting


@field_operator
def add_ij(f: IJK, g: IJ) -> IJK:
    return f + g


@program
def add_ij_program(f: IJK, g: IJ, out: IJK):
    add_ij(f, g, out=out)


def add_ij_reference(f, g, out):
    out[...] = f + g[:, :, None]


add("broadcast_ij_field", add_ij_program, arguments(f=F(), g=F(shape=SHAPE_2D), out=OUT()),
    add_ij_reference)


@field_operator
def scale_by_shifted_ij(f: IJK, g: IJ) -> IJK:
    return f * g(I + 1, J - 1) + g


@program
def scale_by_shifted_ij_program(f: IJK, g: IJ, out: IJK):
    scale_by_shifted_ij(f, g, out=out[:-1, 1:, :])


def scale_by_shifted_ij_reference(f, g, out):
    d = dom(out.shape, np.s_[:-1, 1:, :])
    out[d] = at(f, d) * at_ij(g, d, 1, -1) + at_ij(g, d)


add("broadcast_shifted_ij_field", scale_by_shifted_ij_program,
    arguments(f=F(), g=F(shape=SHAPE_2D), out=OUT()), scale_by_shifted_ij_reference)


@field_operator
def laplacian_2d(f: IJ) -> IJ:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@program
def laplacian_2d_program(inp: IJ, out: IJ):
    laplacian_2d(inp, out=out[1:-1, 1:-1])


def laplacian_2d_reference(inp, out):
    d = dom(out.shape, np.s_[1:-1, 1:-1])
    out[d] = (-4.0 * at(inp, d) + at(inp, d, 1) + at(inp, d, -1) + at(inp, d, 0, 1)
              + at(inp, d, 0, -1))


add("two_dimensional_program", laplacian_2d_program,
    arguments(inp=F(shape=SHAPE_2D), out=OUT(shape=SHAPE_2D)), laplacian_2d_reference)


@field_operator
def scale_by_profile(f: IJK, p: KF) -> IJK:
    return f * p + p(K + 1)


@program
def scale_by_profile_program(f: IJK, p: KF, out: IJK):
    scale_by_profile(f, p, out=out[:, :, :-1])


def scale_by_profile_reference(f, p, out):
    d = dom(out.shape, np.s_[:, :, :-1])
    out[d] = at(f, d) * at(p, d[2:])[None, None, :] + at(p, d[2:], 1)[None, None, :]


add("broadcast_shifted_k_profile", scale_by_profile_program,
    arguments(f=F(), p=F(shape=SHAPE[2:]), out=OUT()), scale_by_profile_reference)


@field_operator
def subtract_ik(f: IJK, h: IK) -> IJK:
    return f - h


@program
def subtract_ik_program(f: IJK, h: IK, out: IJK):
    subtract_ik(f, h, out=out)


def subtract_ik_reference(f, h, out):
    out[...] = f - h[:, None, :]


add("broadcast_ik_field_by_dimension_name", subtract_ik_program,
    arguments(f=F(), h=F(shape=(SHAPE[0], SHAPE[2])), out=OUT()), subtract_ik_reference)


# =========================================================================== multi-call programs


@program
def two_stage_laplacian(inp: IJK, tmp: IJK, out: IJK):
    laplacian(inp, out=tmp[1:-1, 1:-1, :])
    laplacian(tmp, out=out[2:-2, 2:-2, :])


def two_stage_laplacian_reference(inp, tmp, out):
    d1 = dom(tmp.shape, np.s_[1:-1, 1:-1, :])
    tmp[d1] = lap_at(inp, d1)
    d2 = dom(out.shape, np.s_[2:-2, 2:-2, :])
    out[d2] = lap_at(tmp, d2)


add("two_calls_through_a_temporary", two_stage_laplacian,
    arguments(inp=F(), tmp=OUT(), out=OUT()), two_stage_laplacian_reference,
    outputs=("tmp", "out"))


@field_operator
def double(f: IJK) -> IJK:
    return 2.0 * f


@field_operator
def minus(f: IJK) -> IJK:
    return -f


@program
def split_k_program(inp: IJK, out: IJK):
    double(inp, out=out[:, :, :2])
    minus(inp, out=out[:, :, 2:])


def split_k_reference(inp, out):
    out[:, :, :2] = 2.0 * inp[:, :, :2]
    out[:, :, 2:] = -inp[:, :, 2:]


add("two_calls_writing_disjoint_k_ranges", split_k_program, arguments(inp=F(), out=OUT()),
    split_k_reference)


@program
def three_stage_program(a: IJK, b: IJK, alpha: float64, tmp: IJK, x: IJK, out: IJK):
    arith_fields(a, b, out=tmp)
    laplacian(tmp, out=x[1:-1, 1:-1, :])
    axpy(x, a, alpha, out=out[1:-1, 2:-2, 1:])


def three_stage_reference(a, b, alpha, tmp, x, out):
    tmp[...] = a + b - a * b
    d = dom(x.shape, np.s_[1:-1, 1:-1, :])
    x[d] = lap_at(tmp, d)
    d = dom(out.shape, np.s_[1:-1, 2:-2, 1:])
    out[d] = alpha * at(x, d) + at(a, d)


add("three_calls_with_scalar_and_temporaries", three_stage_program,
    arguments(a=F(), b=F(), alpha=SCALAR(-0.5), tmp=OUT(), x=OUT(), out=OUT()),
    three_stage_reference, outputs=("tmp", "x", "out"))


@program
def same_operator_twice(a: IJK, b: IJK, x: IJK, y: IJK):
    laplacian(a, out=x[1:-1, 1:-1, :])
    laplacian(b, out=y[2:-2, 1:-1, 1:])


def same_operator_twice_reference(a, b, x, y):
    d = dom(x.shape, np.s_[1:-1, 1:-1, :])
    x[d] = lap_at(a, d)
    d = dom(y.shape, np.s_[2:-2, 1:-1, 1:])
    y[d] = lap_at(b, d)


add("same_operator_called_twice", same_operator_twice,
    arguments(a=F(), b=F(), x=OUT(), y=OUT()), same_operator_twice_reference,
    outputs=("x", "y"))


# =========================================================================== shifts and domains


@field_operator
def asymmetric_shift(f: IJK) -> IJK:
    return f(I - 2, J + 1)


@program
def asymmetric_shift_program(f: IJK, out: IJK):
    asymmetric_shift(f, out=out[2:, :-1, :])


def asymmetric_shift_reference(f, out):
    d = dom(out.shape, np.s_[2:, :-1, :])
    out[d] = at(f, d, -2, 1)


add("asymmetric_shift_in_one_call", asymmetric_shift_program, arguments(f=F(), out=OUT()),
    asymmetric_shift_reference)


@field_operator
def k_second_difference(f: IJK) -> IJK:
    return f(K + 1) - 2.0 * f + f(K - 1)


@program
def k_second_difference_program(f: IJK, out: IJK):
    k_second_difference(f, out=out[:, :, 1:-1])


def k_second_difference_reference(f, out):
    d = dom(out.shape, np.s_[:, :, 1:-1])
    out[d] = at(f, d, 0, 0, 1) - 2.0 * at(f, d) + at(f, d, 0, 0, -1)


add("shifts_in_k", k_second_difference_program, arguments(f=F(), out=OUT()),
    k_second_difference_reference)


@field_operator
def three_dim_shift(f: IJK) -> IJK:
    return f(I - 1, J - 1, K + 1) + f(I + 2)


@program
def three_dim_shift_program(f: IJK, out: IJK):
    three_dim_shift(f, out=out[1:-2, 1:, :-1])


def three_dim_shift_reference(f, out):
    d = dom(out.shape, np.s_[1:-2, 1:, :-1])
    out[d] = at(f, d, -1, -1, 1) + at(f, d, 2)


add("shift_in_three_dimensions_at_once", three_dim_shift_program, arguments(f=F(), out=OUT()),
    three_dim_shift_reference)


@field_operator
def different_halos(f: IJK) -> IJK:
    return f(I + 1, J - 2) + f(I - 3) * f(K + 2)


@program
def different_halos_program(f: IJK, out: IJK):
    different_halos(f, out=out[3:-1, 2:, :-2])


def different_halos_reference(f, out):
    d = dom(out.shape, np.s_[3:-1, 2:, :-2])
    out[d] = at(f, d, 1, -2) + at(f, d, -3) * at(f, d, 0, 0, 2)


add("different_halo_per_dimension_and_side", different_halos_program,
    arguments(f=F(), out=OUT()), different_halos_reference)


@field_operator
def cross_difference(f: IJK) -> IJK:
    return f(I + 1) - f(J - 1)


@program
def explicit_bounds_program(f: IJK, out: IJK):
    cross_difference(f, out=out[2:7, 1:5, 1:3])


def explicit_bounds_reference(f, out):
    d = dom(out.shape, np.s_[2:7, 1:5, 1:3])
    out[d] = at(f, d, 1) - at(f, d, 0, -1)


add("out_slice_with_explicit_bounds", explicit_bounds_program, arguments(f=F(), out=OUT()),
    explicit_bounds_reference)


@program
def negative_start_program(f: IJK, out: IJK):
    cross_difference(f, out=out[1:9, -8:-1, 0:])


def negative_start_reference(f, out):
    d = dom(out.shape, np.s_[1:9, -8:-1, 0:])
    out[d] = at(f, d, 1) - at(f, d, 0, -1)


add("out_slice_with_negative_start", negative_start_program, arguments(f=F(), out=OUT()),
    negative_start_reference)


# =========================================================================== domain errors
# Not corpus cases: programs whose out slice leaves the stencil's reach outside the input.
# The field operator's parameter has the program argument's name, so "the field" is unambiguous.


@field_operator
def reach(wind_speed: IJK) -> IJK:
    return wind_speed(I + 2) + wind_speed(J - 1) + wind_speed(K + 3)


@program
def reach_fits(wind_speed: IJK, out: IJK):
    reach(wind_speed, out=out[:-2, 1:, :-3])


@program
def reach_misses_i(wind_speed: IJK, out: IJK):
    reach(wind_speed, out=out[:, 1:, :-3])


@program
def reach_misses_j(wind_speed: IJK, out: IJK):
    reach(wind_speed, out=out[:-2, :, :-3])


@program
def reach_misses_k(wind_speed: IJK, out: IJK):
    reach(wind_speed, out=out[:-2, 1:, :])


#: Grid for the reach programs: extents without the digits of the missing amounts.
REACH_SHAPE = (9, 8, 7)


@dataclasses.dataclass(frozen=True)
class MissingHalo:
    """A program that must raise DomainError, and what the message must name."""

    name: str
    program: Any
    field: str
    dimension: str
    missing: int


MISSING_HALOS = [
    MissingHalo("i_upper_by_2", reach_misses_i, "wind_speed", "I", 2),
    MissingHalo("j_lower_by_1", reach_misses_j, "wind_speed", "J", 1),
    MissingHalo("k_upper_by_3", reach_misses_k, "wind_speed", "K", 3),
]


def check_corpus() -> None:
    """Sanity of the corpus itself: each reference runs and writes some, but not all, cells."""
    for case in CASES:
        args = case.build()
        before = {name: args[name].copy() for name in case.outputs}
        case.reference(**args)
        for name in case.outputs:
            assert args[name].dtype == before[name].dtype, case.name
            assert not np.array_equal(args[name], before[name]), f"{case.name}: {name} unwritten"


# =========================================================================== more builtins
# Grouped into tuple results: one build per backend for each group.

from pipeline.dsl import (  # noqa: E402  (the section's own names)
    arccosh,
    arcsinh,
    arctanh,
    cbrt,
    fmod,
    gamma,
    isfinite,
    isinf,
    isnan,
    trunc,
)


@field_operator
def float_builtins(a: IJK, b: IJK, c: IJK) -> tuple[IJK, IJK, IJK, IJK, IJK, IJK, IJK]:
    return arcsinh(a), arccosh(b), arctanh(a * 0.9), cbrt(a), trunc(a * 3.0), gamma(c), fmod(
        a * 5.0, b)


@program
def float_builtins_program(a: IJK, b: IJK, c: IJK, o1: IJK, o2: IJK, o3: IJK, o4: IJK,
                           o5: IJK, o6: IJK, o7: IJK):
    float_builtins(a, b, c, out=(o1[1:, :-1, :], o2[1:, :-1, :], o3[1:, :-1, :],
                                 o4[1:, :-1, :], o5[1:, :-1, :], o6[1:, :-1, :],
                                 o7[1:, :-1, :]))


def float_builtins_reference(a, b, c, o1, o2, o3, o4, o5, o6, o7):
    import math
    d = dom(o1.shape, BUILTIN_SLICE)
    av, bv, cv = at(a, d), at(b, d), at(c, d)
    o1[d], o2[d], o3[d] = np.arcsinh(av), np.arccosh(bv), np.arctanh(av * 0.9)
    o4[d], o5[d] = np.cbrt(av), np.trunc(av * 3.0)
    o6[d] = np.vectorize(math.gamma)(cv)
    o7[d] = np.fmod(av * 5.0, bv)


add("builtins_float_group", float_builtins_program,
    arguments(a=F(-1, 1), b=F(1.0, 3.0), c=F(-3.7, 4.5), **{f"o{n}": OUT() for n in range(1, 8)}),
    float_builtins_reference, outputs=tuple(f"o{n}" for n in range(1, 8)), rtol=1e-10)


def with_specials(rng: np.random.Generator) -> np.ndarray:
    """Floats where about a third of the points are inf, -inf or NaN."""
    values = floats(rng)
    choice = rng.integers(0, 9, SHAPE)
    values[choice == 0] = np.inf
    values[choice == 1] = -np.inf
    values[choice == 2] = np.nan
    return values


@field_operator
def predicates(a: IJK, n: IJKi32) -> tuple[IJKb, IJKb, IJKb, IJKb, IJKb]:
    return isfinite(a), isinf(a), isnan(a), isfinite(n) & ~isinf(n), isnan(n)


@program
def predicates_program(a: IJK, n: IJKi32, o1: IJKb, o2: IJKb, o3: IJKb, o4: IJKb, o5: IJKb):
    predicates(a, n, out=(o1[1:, :-1, :], o2[1:, :-1, :], o3[1:, :-1, :], o4[1:, :-1, :],
                          o5[1:, :-1, :]))


def predicates_reference(a, n, o1, o2, o3, o4, o5):
    d = dom(o1.shape, BUILTIN_SLICE)
    o1[d], o2[d], o3[d] = np.isfinite(at(a, d)), np.isinf(at(a, d)), np.isnan(at(a, d))
    o4[d], o5[d] = True, False


add("builtins_predicates", predicates_program,
    arguments(a=with_specials, n=lambda rng: ints(rng),
              **{f"o{n}": OUT(np.bool_) for n in range(1, 6)}),
    predicates_reference, outputs=tuple(f"o{n}" for n in range(1, 6)))


@field_operator
def int_builtins(a: IJKi32, b: IJKi32) -> tuple[IJKi32, IJKi32, IJK]:
    return fmod(a, b), trunc(a), cbrt(a)


@program
def int_builtins_program(a: IJKi32, b: IJKi32, o1: IJKi32, o2: IJKi32, o3: IJK):
    int_builtins(a, b, out=(o1[1:, :-1, :], o2[1:, :-1, :], o3[1:, :-1, :]))


def int_builtins_reference(a, b, o1, o2, o3):
    d = dom(o1.shape, BUILTIN_SLICE)
    o1[d], o2[d], o3[d] = np.fmod(at(a, d), at(b, d)), at(a, d), np.cbrt(at(a, d))


add("builtins_int_fmod_trunc", int_builtins_program,
    arguments(a=lambda rng: ints(rng, lo=-50, hi=50), b=nonzero_ints,
              o1=OUT(np.int32), o2=OUT(np.int32), o3=OUT()),
    int_builtins_reference, outputs=("o1", "o2", "o3"), rtol=1e-10)


@field_operator
def constructors(a: IJK, s: float64, n: int64) -> tuple[IJKi32, IJK32, IJKb, IJK]:
    return int32(a * 10.0), float32(a), bool_(a > 0.0), a * float(n) + float64(int(s))


@program
def constructors_program(a: IJK, s: float64, n: int64, o1: IJKi32, o2: IJK32, o3: IJKb,
                         o4: IJK):
    constructors(a, s, n, out=(o1[1:, :-1, :], o2[1:, :-1, :], o3[1:, :-1, :],
                               o4[1:, :-1, :]))


def constructors_reference(a, s, n, o1, o2, o3, o4):
    d = dom(o1.shape, BUILTIN_SLICE)
    av = at(a, d)
    o1[d], o2[d], o3[d] = (av * 10.0).astype(np.int32), av.astype(np.float32), av > 0.0
    o4[d] = av * float(n) + float(int(s))


add("type_constructors", constructors_program,
    arguments(a=F(-3, 3), s=SCALAR(2.75), n=SCALAR(3), o1=OUT(np.int32), o2=OUT(np.float32),
              o3=OUT(np.bool_), o4=OUT()),
    constructors_reference, outputs=("o1", "o2", "o3", "o4"))


# =========================================================================== 0-D fields

Z32 = Field[[], int32]
Ii32 = Field[[I], int32]


@field_operator
def increment_0d(a: Z32) -> Z32:
    return a + 1


@field_operator
def broadcast_0d(a: Z32, b: Ii32) -> Ii32:
    return a * b


@program
def zero_dim_program(a: Z32, b: Ii32, o0: Z32, o1: Ii32):
    increment_0d(a, out=o0)
    broadcast_0d(a, b, out=o1[1:])


def zero_dim_reference(a, b, o0, o1):
    o0[...] = a + 1
    o1[1:] = a * b[1:]


add("zero_dim_fields", zero_dim_program,
    arguments(a=lambda rng: np.array(7, dtype=np.int32), b=lambda rng: ints(rng, (6,)),
              o0=OUT(np.int32, ()), o1=OUT(np.int32, (6,))),
    zero_dim_reference, outputs=("o0", "o1"))


# =========================================================================== scalar control flow


@field_operator
def branchy(a: IJK, s: float64, flag: bool_) -> IJK:
    x = a * 2.0
    if flag:
        y = x + s
        if s > 1.0:
            y = y * 10.0
    elif s < 0.0:
        y = -x
    else:
        y = x
        x = x + 100.0
    if s > 100.0:
        return y
    return y + x if s > 0.5 else y - x


@program
def branchy_program(a: IJK, s1: float64, s2: float64, s3: float64, flag: bool_,
                    noflag: bool_, o1: IJK, o2: IJK, o3: IJK, o4: IJK):
    branchy(a, s1, flag, out=o1[1:, :, :])
    branchy(a, s=s2, flag=flag, out=o2[:, 1:, :])
    branchy(flag=noflag, s=s3, a=a, out=o3[:, :, 1:])
    branchy(a, s1, noflag, out=o4[:-1, :, :])


def branchy_value(a, s, flag):
    """The definition itself, on NumPy arrays and Python scalars: compiled control flow must
    choose as Python does."""
    return branchy.function(a, s, flag)


def branchy_reference(a, s1, s2, s3, flag, noflag, o1, o2, o3, o4):
    o1[1:, :, :] = branchy_value(a, s1, flag)[1:, :, :]
    o2[:, 1:, :] = branchy_value(a, s2, flag)[:, 1:, :]
    o3[:, :, 1:] = branchy_value(a, s3, not flag)[:, :, 1:]
    o4[:-1, :, :] = branchy_value(a, s1, not flag)[:-1, :, :]


add("if_statements_and_keywords", branchy_program,
    arguments(a=F(), s1=SCALAR(2.0), s2=SCALAR(-1.0), s3=SCALAR(200.0), flag=SCALAR(True),
              noflag=SCALAR(False), o1=OUT(), o2=OUT(), o3=OUT(), o4=OUT()),
    branchy_reference, outputs=("o1", "o2", "o3", "o4"))


@field_operator
def branch_local(a: IJK, b: IJK, s: float64) -> IJK:
    if s > 0.0:
        tmp = a * 2.0  # assigned in one branch only, and read in that branch only
        result = tmp + b
    else:
        result = b
    return result


@program
def branch_local_program(a: IJK, b: IJK, s1: float64, s2: float64, o1: IJK, o2: IJK):
    branch_local(a, b, s1, out=o1[1:, :, :])
    branch_local(a, b, s2, out=o2[:, :-1, :])


def branch_local_reference(a, b, s1, s2, o1, o2):
    o1[1:, :, :] = branch_local.function(a, b, s1)[1:, :, :]
    o2[:, :-1, :] = branch_local.function(a, b, s2)[:, :-1, :]


add("if_local_of_one_branch", branch_local_program,
    arguments(a=F(), b=F(), s1=SCALAR(1.5), s2=SCALAR(-1.5), o1=OUT(), o2=OUT()),
    branch_local_reference, outputs=("o1", "o2"))


@field_operator
def early_returns(a: IJK, b: IJK, s: float64) -> IJK:
    if s > 2.0:
        pass
    else:
        if s < -2.0:
            return b  # a return in the else branch only, nested
        x = a + 1.0
        if s > 0.0:
            if s > 1.0:
                return x  # a return in a nested `if` whose enclosing block continues
            x = x * 2.0
        else:
            return a - x
        return x + b
    if s > 3.0:
        return a * 3.0
    else:
        return a
    return b  # unreachable, as in Python


@program
def early_returns_program(a: IJK, b: IJK, s1: float64, s2: float64, s3: float64,
                          s4: float64, s5: float64, s6: float64, o1: IJK, o2: IJK, o3: IJK,
                          o4: IJK, o5: IJK, o6: IJK):
    early_returns(a, b, s1, out=o1)
    early_returns(a, b, s2, out=o2)
    early_returns(a, b, s3, out=o3)
    early_returns(a, b, s4, out=o4)
    early_returns(a, b, s5, out=o5)
    early_returns(a, b, s6, out=o6)


def early_returns_reference(a, b, s1, s2, s3, s4, s5, s6, o1, o2, o3, o4, o5, o6):
    for s, o in ((s1, o1), (s2, o2), (s3, o3), (s4, o4), (s5, o5), (s6, o6)):
        o[...] = early_returns.function(a, b, s)


add("if_returns_on_every_path", early_returns_program,
    arguments(a=F(), b=F(), s1=SCALAR(3.5), s2=SCALAR(2.5), s3=SCALAR(1.5), s4=SCALAR(0.5),
              s5=SCALAR(-1.0), s6=SCALAR(-3.0), o1=OUT(), o2=OUT(), o3=OUT(), o4=OUT(),
              o5=OUT(), o6=OUT()),
    early_returns_reference, outputs=("o1", "o2", "o3", "o4", "o5", "o6"))


# =========================================================================== scans

from pipeline.dsl import scan_operator  # noqa: E402

Ii64 = Field[[I], int64]
IJf = Field[[I, J], float64]


from benchmarks.workloads import (  # noqa: E402  (the harness's own definitions)
    WORKLOADS,
    solve_tridiagonal,
    thomas_backward,
    thomas_forward,
)


@program
def tridiagonal_program(a: IJK, b: IJK, c: IJK, d: IJK, cp: IJK, dp: IJK, x: IJK):
    thomas_forward(a, b, c, d, out=(cp[1:, :-1, :], dp[1:, :-1, :]))
    thomas_backward(cp, dp, out=x[1:, :-1, :])


def thomas(a, b, c, d):
    """The Thomas algorithm along the last axis, whole planes at a time."""
    cp, dp, x = (np.zeros_like(a) for _ in range(3))
    previous_c = previous_d = np.zeros(a.shape[:-1])
    for k in range(a.shape[-1]):
        divided = 1.0 / (b[..., k] - a[..., k] * previous_c)
        previous_c, previous_d = (c[..., k] * divided,
                                  (d[..., k] - a[..., k] * previous_d) * divided)
        cp[..., k], dp[..., k] = previous_c, previous_d
    above = np.zeros(a.shape[:-1])
    for k in reversed(range(a.shape[-1])):
        above = dp[..., k] - cp[..., k] * above
        x[..., k] = above
    return cp, dp, x


def tridiagonal_reference(a, b, c, d, cp, dp, x):
    d_ = dom(cp.shape, np.s_[1:, :-1, :])
    rcp, rdp, rx = thomas(a[d_], b[d_], c[d_], d[d_])
    cp[d_], dp[d_], x[d_] = rcp, rdp, rx


add("scan_tridiagonal_two_calls", tridiagonal_program,
    arguments(a=F(0, 1), b=F(3, 4), c=F(0, 1), d=F(), cp=OUT(), dp=OUT(), x=OUT()),
    tridiagonal_reference, outputs=("cp", "dp", "x"), rtol=1e-10, atol=1e-12)


@program
def fused_tridiagonal_program(a: IJK, b: IJK, c: IJK, d: IJK, x: IJK):
    solve_tridiagonal(a, b, c, d, out=x[:, 1:, 1:-1])


def fused_tridiagonal_reference(a, b, c, d, x):
    d_ = dom(x.shape, np.s_[:, 1:, 1:-1])
    x[d_] = thomas(a[d_], b[d_], c[d_], d[d_])[2]


add("scan_tridiagonal_forward_and_backward_in_one_call", fused_tridiagonal_program,
    arguments(a=F(0, 1), b=F(3, 4), c=F(0, 1), d=F(), x=OUT()),
    fused_tridiagonal_reference, outputs=("x",), rtol=1e-10, atol=1e-12)


def vertical_advection_reference(wcon, u_stage, u_pos, utens, utens_stage, dtr_stage, out):
    workload = WORKLOADS["vertical_advection"]
    out[workload.domain] = workload.kernel(np, wcon, u_stage, u_pos, utens, utens_stage,
                                           dtr_stage)


add("workload_vertical_advection", WORKLOADS["vertical_advection"].program,
    arguments(wcon=F(), u_stage=F(), u_pos=F(), utens=F(), utens_stage=F(),
              dtr_stage=SCALAR(3.0), out=OUT()),
    vertical_advection_reference, rtol=1e-10, atol=1e-12)


@scan_operator(axis=K, forward=True, init=0.0)
def damped_sum(total: float64, value: float64, weight: float64) -> float64:
    return total * weight + value


@field_operator
def running_sum(f: IJK, weight: float64) -> IJK:
    return 2.0 * damped_sum(f(K - 1) + f(I + 1), weight) - f


@program
def running_sum_program(f: IJK, weight: float64, out: IJK):
    running_sum(f, weight, out=out[:-1, :, 1:])


def running_sum_reference(f, weight, out):
    d = dom(out.shape, np.s_[:-1, :, 1:])
    values = at(f, d, 0, 0, -1) + at(f, d, 1, 0, 0)
    total = np.zeros(values.shape[:2])
    result = np.empty_like(values)
    for k in range(values.shape[2]):
        total = total * weight + values[..., k]
        result[..., k] = total
    out[d] = 2.0 * result - at(f, d)


add("scan_inside_a_field_operator", running_sum_program,
    arguments(f=F(), weight=SCALAR(0.75), out=OUT()), running_sum_reference, rtol=1e-11)


@scan_operator(axis=I, forward=False, init=(0.0, 0))
def count_and_max(state: tuple[float64, int64], value: float64, flag: bool_
                  ) -> tuple[float64, int64]:
    largest, count = state
    return maximum(largest, value), count + where(flag, 1, 0)


@field_operator
def from_the_east(value: IJf, flag: Field[[I, J], bool_]) -> tuple[IJf, Field[[I, J], int64]]:
    largest, count = count_and_max(value, flag)
    return largest, count


@program
def backward_along_i_program(value: IJf, flag: Field[[I, J], bool_], largest: IJf,
                             count: Field[[I, J], int64]):
    from_the_east(value, flag, out=(largest[1:, 1:], count[1:, 1:]))


def backward_along_i_reference(value, flag, largest, count):
    sub, subflag = value[1:, 1:], flag[1:, 1:]
    best = np.zeros(sub.shape[1])
    seen = np.zeros(sub.shape[1], dtype=np.int64)
    for i in reversed(range(sub.shape[0])):
        best = np.maximum(best, sub[i])
        seen = seen + subflag[i]
        largest[1 + i, 1:], count[1 + i, 1:] = best, seen


add("scan_backward_along_i_mixed_carry", backward_along_i_program,
    arguments(value=F(-1, 1, shape=SHAPE_2D), flag=lambda rng: bools(rng, SHAPE_2D),
              largest=OUT(shape=SHAPE_2D), count=OUT(np.int64, SHAPE_2D)),
    backward_along_i_reference, outputs=("largest", "count"))


@scan_operator(axis=K, forward=True, init=1.0)
def product_scan(product: float64, value: float64) -> float64:
    return product * value


@program
def column_product_program(f: KF, out: KF):
    product_scan(f, out=out[2:])


def column_product_reference(f, out):
    out[2:] = np.cumprod(f[2:])


add("scan_one_column", column_product_program,
    arguments(f=F(0.5, 1.5, shape=(7,)), out=OUT(shape=(7,))), column_product_reference,
    rtol=1e-12)


@scan_operator(axis=K, forward=False, init=0.0)
def damped_sum_down(total: float64, value: float64, weight: float64) -> float64:
    return total * weight + value


@field_operator
def passes(f: IJK) -> tuple[IJK, IJK]:
    up = damped_sum(f, 0.5)
    chained = damped_sum(up * 2.0, 0.25)  # reads a forward sweep: the same pass
    down = damped_sum_down(up, 0.5)  # reads a forward sweep: a second pass
    again = damped_sum(down + f(I - 1), 0.75)  # reads the backward one: a third pass
    return chained, again - up


@program
def passes_program(f: IJK, o1: IJK, o2: IJK):
    passes(f, out=(o1[1:, :, :], o2[1:, :, :]))


def passes_reference(f, o1, o2):
    def sweep(values, weight, forward):
        total, result = np.zeros(values.shape[:2]), np.empty_like(values)
        levels = range(values.shape[2]) if forward else reversed(range(values.shape[2]))
        for k in levels:
            total = total * weight + values[..., k]
            result[..., k] = total
        return result

    inner = f[1:]
    up = sweep(inner, 0.5, True)
    o1[1:] = sweep(up * 2.0, 0.25, True)
    down = sweep(up, 0.5, False)
    o2[1:] = sweep(down + f[:-1], 0.75, True) - up


add("scan_three_passes_and_a_chain", passes_program,
    arguments(f=F(), o1=OUT(), o2=OUT()), passes_reference, outputs=("o1", "o2"), rtol=1e-11)


# =========================================================================== boundary conditions

from pipeline.dsl import concat_where  # noqa: E402


@field_operator
def vertical_boundaries(f: IJK, n: int64) -> tuple[IJK, IJKb]:
    inner = 0.5 * (f(K - 1) + f(K + 1))
    ends = concat_where(K == 0, 0.0, concat_where(K == n - 1, f(K - 1) * 10.0, inner))
    mask = concat_where(~(K > 2) & (K != 1), f > 0.0, f < -0.5)
    return ends, mask


@program
def vertical_boundaries_program(f: IJK, n: int64, ends: IJK, mask: IJKb):
    vertical_boundaries(f, n, out=(ends[1:, :, :], mask[1:, :, :]))


def vertical_boundaries_reference(f, n, ends, mask):
    k = np.arange(f.shape[2])
    inner = np.zeros_like(f)
    inner[:, :, 1:-1] = 0.5 * (f[:, :, :-2] + f[:, :, 2:])
    expected = np.where(k == 0, 0.0, inner)
    expected[:, :, n - 1] = f[:, :, n - 2] * 10.0
    ends[1:] = expected[1:]
    mask[1:] = np.where(~(k > 2) & (k != 1), f > 0.0, f < -0.5)[1:]


add("concat_where_vertical_boundaries", vertical_boundaries_program,
    arguments(f=F(), n=SCALAR(SHAPE[2]), ends=OUT(), mask=OUT(np.bool_)),
    vertical_boundaries_reference, outputs=("ends", "mask"))


@field_operator
def corner_and_shifted(f: IJK, m: int32) -> IJK:
    below = concat_where(K == 0, f, f(K - 1))  # read shifted below: the condition moves too
    corner = concat_where((I < m) & (J >= 2), -f, f)
    return below(K + 1) - below + corner


@program
def corner_and_shifted_program(f: IJK, m: int32, out: IJK):
    corner_and_shifted(f, m, out=out[:, :, :-1])


def corner_and_shifted_reference(f, m, out):
    i, j = np.arange(f.shape[0])[:, None, None], np.arange(f.shape[1])[None, :, None]
    below = f.copy()
    below[:, :, 1:] = f[:, :, :-1]
    corner = np.where((i < m) & (j >= 2), -f, f)
    out[:, :, :-1] = (below[:, :, 1:] - below[:, :, :-1] + corner[:, :, :-1])


add("concat_where_corner_and_shifted_local", corner_and_shifted_program,
    arguments(f=F(), m=SCALAR(np.int32(4)), out=OUT()), corner_and_shifted_reference)


# =========================================================================== domains


@field_operator
def doubled(f: IJK) -> IJK:
    return 2.0 * f(I - 1)


@program
def domain_program(f: IJK, lo: int64, hi: int32, out: IJK, other: IJK):
    doubled(f, out=out, domain={I: (1, hi), K: (lo, lo + 3)})
    doubled(f, out=other[:, 1:, :], domain={I: (lo, 7)})


def domain_reference(f, lo, hi, out, other):
    out[1:hi, :, lo:lo + 3] = 2.0 * f[0:hi - 1, :, lo:lo + 3]
    other[lo:7, 1:, :] = 2.0 * f[lo - 1:6, 1:, :]


add("domain_keyword_with_scalar_bounds", domain_program,
    arguments(f=F(), lo=SCALAR(2), hi=SCALAR(np.int32(8)), out=OUT(), other=OUT()),
    domain_reference, outputs=("out", "other"))


# =========================================================================== tuples


@field_operator
def swap_scale(pair: tuple[IJ, IJ], s: float64) -> tuple[IJ, tuple[IJ, IJ]]:
    a, b = pair
    t = (b * s, a)
    u = t[1] + pair[0]
    return u, (t[0], t[1] - b)


@field_operator
def swap_scale_shifted(x: IJ, y: IJ) -> tuple[IJ, tuple[IJ, IJ]]:
    return swap_scale((x, y(I + 1)), s=2.0)


@program
def tuples_program(x: IJ, y: IJ, o1: IJ, o2: IJ, o3: IJ):
    swap_scale_shifted(x, y, out=(o1[:-1, :], (o2[:-1, :], o3[:-1, :])))
    swap_scale((x, y), 3.0, out=(o1[-1:, :], (o2[-1:, :], o3[-1:, :])))


def tuples_reference(x, y, o1, o2, o3):
    o1[:] = 2.0 * x
    o2[:-1], o2[-1:] = 2.0 * y[1:], 3.0 * y[-1:]
    o3[:-1], o3[-1:] = x[:-1] - y[1:], x[-1:] - y[-1:]


add("tuple_parameters_values_and_nested_results", tuples_program,
    arguments(x=F(shape=SHAPE_2D), y=F(shape=SHAPE_2D), o1=OUT(shape=SHAPE_2D),
              o2=OUT(shape=SHAPE_2D), o3=OUT(shape=SHAPE_2D)),
    tuples_reference, outputs=("o1", "o2", "o3"))


@field_operator
def scaled_pair(pair: tuple[IJ, IJ], s: float64) -> tuple[IJ, IJ]:
    return pair[0] * s, pair[1]


@field_operator
def nested_as_in_python(t: tuple[IJ, tuple[IJ, IJ]]) -> tuple[IJ, IJ, IJ]:
    # Each read means what it means in Python: t[1] is the inner pair, not a leaf.
    x, pair = t
    a, (b, c) = t
    u = t[1][0] - pair[1] + t[-1][-1]
    v, w = scaled_pair(t[1], s=2.0)
    return x + a * t[0], u + b - c, v + w


@field_operator
def nested_from_a_call(x: IJ, y: IJ) -> IJ:
    inner = swap_scale((x, y), s=3.0)[1]
    return inner[0] + swap_scale((x, y), s=1.0)[1][1]


@program
def nested_indexing_program(x: IJ, y: IJ, z: IJ, o1: IJ, o2: IJ, o3: IJ, o4: IJ):
    nested_as_in_python((x, (y, z)), out=(o1, o2, o3))
    nested_from_a_call(x, y, out=o4)


def nested_indexing_reference(x, y, z, o1, o2, o3, o4):
    o1[:] = x + x * x
    o2[:] = 2.0 * y - z
    o3[:] = 2.0 * y + z
    o4[:] = 3.0 * y + (x - y)


add("nested_tuples_indexed_and_unpacked_as_in_python", nested_indexing_program,
    arguments(x=F(shape=SHAPE_2D), y=F(shape=SHAPE_2D), z=F(shape=SHAPE_2D),
              o1=OUT(shape=SHAPE_2D), o2=OUT(shape=SHAPE_2D), o3=OUT(shape=SHAPE_2D),
              o4=OUT(shape=SHAPE_2D)),
    nested_indexing_reference, outputs=("o1", "o2", "o3", "o4"))


@field_operator
def volume_and_surface(a: IJK, b: IJ) -> tuple[IJK, IJ, IJK]:
    s = b * 2.0
    return a + s, s(I + 1), a * s


@program
def mixed_dimensions_program(a: IJK, b: IJ, x: IJK, y: IJ, z: IJK):
    volume_and_surface(a, b, out=(x[:-1], y[:-1], z[:-1]))


def mixed_dimensions_reference(a, b, x, y, z):
    x[:-1] = a[:-1] + 2.0 * b[:-1, :, None]
    y[:-1] = 2.0 * b[1:]
    z[:-1] = a[:-1] * 2.0 * b[:-1, :, None]


add("tuple_result_over_different_dimensions", mixed_dimensions_program,
    arguments(a=F(), b=F(shape=SHAPE_2D), x=OUT(), y=OUT(shape=SHAPE_2D), z=OUT()),
    mixed_dimensions_reference, outputs=("x", "y", "z"))
