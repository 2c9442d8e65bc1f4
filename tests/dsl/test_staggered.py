"""Staggered (half-index) dimensions (issue 41, ADR 0027): ``IHalf = staggered(I)`` is the
cell edges beside the cells ``I``; ``IHalf`` point ``j`` sits half a cell below ``I`` point
``j``. A half shift moves between them: ``a(IHalf + 0.5)`` reads an ``I`` field at the edges
(``IHalf`` point ``j`` reads ``I`` point ``j``), ``e(I + 0.5)`` reads an ``IHalf`` field at
the cells (``I`` point ``j`` reads ``IHalf`` point ``j + 1``). A field over ``IHalf`` is an
array of its own along ``I``'s axis: ``n + 1`` edges beside ``n`` cells.

The nine cases of GT4Py's ``test_staggered.py``, re-expressed in the DSL (arrays start at
index 0, so GT4Py's domains starting at 1 or -1 become out slices), run on every backend
against NumPy; then the misuses, each a DSL error at the user's file and line. No ``from
__future__ import annotations``: the DSL reads the annotations.
"""

import numpy as np
import pytest

from pipeline.dsl import (
    Dimension,
    DomainError,
    DSLSyntaxError,
    DSLTypeError,
    Field,
    field_operator,
    float64,
    int32,
    program,
    staggered,
)

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IHalf, KHalf = staggered(I), staggered(K)
IField, IHalfField = Field[[I], float64], Field[[IHalf], float64]
KField, KHalfField = Field[[K], int32], Field[[KHalf], int32]
IJField, IHalfJField = Field[[I, J], int32], Field[[IHalf, J], int32]
N, NJ = 5, 4  # cells along I (and K), points along J


# ----------------------------------------------------------------------- GT4Py's nine cases


@field_operator
def copy_half(a: IHalfField) -> IHalfField:
    pair = (a, a)
    first = pair[0]
    second = pair[1]  # noqa: F841  (as in GT4Py's case: an unused item)
    return first


@program
def copy_half_field(a: IHalfField, out: IHalfField):
    copy_half(a, out=out)


@field_operator
def shift_plus(a: IField) -> IField:
    return a(I + 1)


@program
def cartesian_shift_plus(a: IField, out: IField):
    shift_plus(a, out=out)


@field_operator
def to_edges_above(a: IField) -> IHalfField:
    return a(IHalf + 0.5)


@program
def half_shift_plus(a: IField, out: IHalfField):
    to_edges_above(a, out=out[:N])  # the top edge has no cell above it


@field_operator
def there_and_back(a: IHalfField) -> IHalfField:
    return a(I + 0.5)(IHalf - 0.5)


@program
def half_shift_back(a: IHalfField, out: IHalfField):
    there_and_back(a, out=out)


@field_operator
def half_plus1(a: IHalfField) -> IHalfField:
    return a(IHalf + 1)


@program
def half_shift_plus1(a: IHalfField, out: IHalfField):
    half_plus1(a, out=out[:N])


@field_operator
def to_edges_below(a: IField) -> IHalfField:
    return a(IHalf - 0.5)


@program
def half_shift_minus(a: IField, out: IHalfField):
    # The bottom edge has no cell below it; and a field read covers the output's indices
    # (ADR 0027), so cells 0..N-1 give edges 1..N-1.
    to_edges_below(a, out=out[1:N])


@field_operator
def half_to_center(a: IHalfField) -> IField:
    return 2.0 * a(I + 0.5)


@program
def half_shift_half2center(a: IHalfField, out: IField):
    half_to_center(a, out=out)


@field_operator
def to_interfaces(a: KField) -> KHalfField:
    return a(KHalf + 0.5)


@program
def half_shift_vertical(a: KField, out: KHalfField):
    to_interfaces(a, out=out[:N])


@field_operator
def to_i_edges(a: IJField) -> IHalfJField:
    return a(IHalf + 0.5)


@program
def half_shift_multi_dim(a: IJField, out: IHalfJField):
    to_i_edges(a, out=out[:N, :])


def _copy(a, out):
    out[:] = a


def _plus(a, out):
    out[:] = a[1:]


def _above(a, out):
    out[:N] = a


def _plus1(a, out):
    out[:N] = a[1:]


def _below(a, out):
    out[1:N] = a[:-1]


def _center(a, out):
    out[:] = 2.0 * a[1:]


# (program, a's shape and dtype, out's shape, reference writing out from a)
GT4PY_CASES = {
    "copy_half_field": (copy_half_field, (N + 1,), np.float64, (N + 1,), _copy),
    "cartesian_shift_plus": (cartesian_shift_plus, (N + 1,), np.float64, (N,), _plus),
    "half_shift_plus": (half_shift_plus, (N,), np.float64, (N + 1,), _above),
    "half_shift_back": (half_shift_back, (N + 1,), np.float64, (N + 1,), _copy),
    "half_shift_plus1": (half_shift_plus1, (N + 1,), np.float64, (N + 1,), _plus1),
    "half_shift_minus": (half_shift_minus, (N,), np.float64, (N + 1,), _below),
    "half_shift_half2center": (half_shift_half2center, (N + 1,), np.float64, (N,), _center),
    "half_shift_vertical": (half_shift_vertical, (N,), np.int32, (N + 1,), _above),
    "half_shift_multi_dim": (half_shift_multi_dim, (N, NJ), np.int32, (N + 1, NJ), _above),
}


@pytest.mark.parametrize("case", sorted(GT4PY_CASES))
def test_gt4py_staggered_cases_agree_with_numpy(case, dsl_backend, to_backend_array, to_numpy,
                                                 run_program):
    program_, a_shape, dtype, out_shape, reference = GT4PY_CASES[case]
    rng = np.random.default_rng(sum(map(ord, case)))
    a = rng.integers(-50, 50, a_shape).astype(dtype)
    out = np.full(out_shape, -7, dtype)
    expected = out.copy()
    reference(a, expected)
    written = run_program(program_, dsl_backend, to_backend_array(a, dsl_backend),
                          out=to_backend_array(out, dsl_backend), written=("out",))
    np.testing.assert_array_equal(to_numpy(written["out"]), expected)


@field_operator
def cells_and_edges(a: IField, f: IHalfField) -> tuple[IField, IHalfField]:
    return a + f(I + 0.5), f * 2.0


@program
def both_grids(a: IField, f: IHalfField, c: IField, e: IHalfField):
    cells_and_edges(a, f, out=(c, e))  # N cells and N + 1 edges: one domain each


def test_a_result_over_cells_and_edges_computes_each_over_its_own_points(
        dsl_backend, to_backend_array, to_numpy, run_program):
    a, f = np.arange(N, dtype=np.float64), np.arange(N + 1, dtype=np.float64) ** 2
    c, e = np.zeros(N), np.zeros(N + 1)
    written = run_program(both_grids, dsl_backend, *(to_backend_array(x, dsl_backend)
                                                     for x in (a, f, c, e)), written=(2, 3))
    np.testing.assert_array_equal(to_numpy(written[2]), a + f[1:])
    np.testing.assert_array_equal(to_numpy(written[3]), f * 2.0)


def test_the_staggered_counterpart_shares_the_axis_not_the_identity():
    assert IHalf != I and IHalf.name == I.name == "I" and str(IHalf) == "IHalf"
    assert IHalf.counterpart == I and I.counterpart == IHalf and staggered(I) == IHalf
    assert (IHalf + 0.5).value == 0 and (IHalf - 0.5).value == -1  # reads I at j, j - 1
    assert (I + 0.5).value == 1 and (I - 0.5).value == 0  # reads IHalf at j + 1, j
    assert str(I - 1.5) == "I - 1.5" and (I + 2.0).value == 2 and not (I + 2.0).half


# --------------------------------------------------------------------------------- misuses


def _frontend_error(program_, error, match):
    with pytest.raises(error, match=match) as caught:
        program_.frontend()
    assert __file__ in str(caught.value)
    return str(caught.value)


def test_a_shift_by_a_quarter_is_refused_where_it_is_written():
    @field_operator
    def quarter(a: IField) -> IField:
        return a(I + 0.25)

    @program
    def run(a: IField, out: IField):
        quarter(a, out=out)

    message = _frontend_error(run, DSLTypeError, r"not by 0\.25")
    assert "a(I + 0.25)" in message and "IHalf + 0.5" in message
    with pytest.raises(TypeError, match=r"not by 0\.25"):
        I + 0.25


def test_adding_a_cell_field_and_an_edge_field_names_both_dimensions():
    @field_operator
    def mixed(a: IField, e: IHalfField) -> IField:
        return a + e

    @program
    def run(a: IField, e: IHalfField, out: IField):
        mixed(a, e, out=out)

    message = _frontend_error(run, DSLTypeError, "a field over I with a field over IHalf")
    assert "a + e" in message and "y(I + 0.5) a field y over IHalf" in message


def test_a_half_shift_of_a_field_already_at_the_edges_is_refused():
    @field_operator
    def twice(e: IHalfField) -> IHalfField:
        return e(IHalf + 0.5)

    @program
    def run(e: IHalfField, out: IHalfField):
        twice(e, out=out)

    _frontend_error(run, DSLTypeError, r"IHalf \+ 0.5 reads a field over I and gives one over "
                                       r"IHalf, but this value is over \(IHalf\)")


def test_a_whole_shift_along_the_counterpart_is_refused():
    @field_operator
    def along_cells(e: IHalfField) -> IHalfField:
        return e(I + 1)

    @program
    def run(e: IHalfField, out: IHalfField):
        along_cells(e, out=out)

    _frontend_error(run, DSLTypeError, r"moves along I, but this value is over IHalf.*IHalf \+ 1")


def test_a_dimension_and_its_counterpart_in_one_shift_are_refused():
    @field_operator
    def both(a: IJField) -> IHalfJField:
        return a(I + 1, IHalf + 0.5)

    @program
    def run(a: IJField, out: IHalfJField):
        both(a, out=out)

    _frontend_error(run, DSLSyntaxError, "I and IHalf share one array axis")


def test_a_result_over_cells_for_an_edge_output_is_refused():
    @field_operator
    def cells(a: IField) -> IField:
        return a

    @program
    def run(a: IField, out: IHalfField):
        cells(a, out=out)

    _frontend_error(run, DSLTypeError, r"produces a field over \(I\) but out= field 'out' has "
                                       r"\(IHalf\)")


def test_a_field_over_a_dimension_and_its_counterpart_is_refused():
    with pytest.raises(TypeError, match="both I and its staggered counterpart IHalf"):
        Field[[IHalf, I], float64]
    with pytest.raises(TypeError, match="IHalf is staggered already"):
        staggered(IHalf)


def test_edges_past_the_cells_are_a_missing_halo(dsl_backend, to_backend_array):
    # Every edge of n + 1 reads the cell above it: the top edge has none.
    program_ = half_shift_plus.with_backend(dsl_backend)

    @program(backend=dsl_backend)
    def all_edges(a: IField, out: IHalfField):
        to_edges_above(a, out=out)

    a, out = np.zeros(N), np.zeros(N + 1)
    with pytest.raises(DomainError, match=r"field 'a' is too small along I .*missing halo: 1 "
                                          r"at the upper end"):
        all_edges(to_backend_array(a, dsl_backend), to_backend_array(out, dsl_backend))
    program_(to_backend_array(a, dsl_backend), to_backend_array(out, dsl_backend))  # edges[:N]
