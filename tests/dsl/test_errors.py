"""DSL errors: each class has the right type, points at the user's line, and says what to do."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import numpy as np
import pytest

import allocators
import backends
from pipeline import ArgumentError, metrics
from pipeline.dsl import (
    Dimension,
    DomainError,
    DSLError,
    DSLNameError,
    DSLSyntaxError,
    DSLTypeError,
    Field,
    field_operator,
    float32,
    float64,
    int32,
    program,
    scan_operator,
    where,
)

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
IJK = Field[[I, J, K], float64]
IK = Field[[I, K], float64]
IJK32 = Field[[I, J, K], float32]
IJKi = Field[[I, J, K], int32]

THIS_FILE = Path(__file__)
SOURCE = THIS_FILE.read_text().splitlines()


def line_of(marker: str) -> int:
    """The 1-based line carrying the comment ``# <marker>``."""
    for number, text in enumerate(SOURCE, start=1):
        if f"# {marker}" in text:
            return number
    raise AssertionError(f"marker {marker} not found")


@field_operator
def with_loop(f: IJK) -> IJK:
    for _ in range(3):  # E:loop
        f = f + 1.0
    return f


@field_operator
def with_attribute(f: IJK) -> IJK:
    return f.shape  # E:attribute


@field_operator
def with_subscript(f: IJK) -> IJK:
    return f[1]  # E:subscript


@field_operator
def with_unknown_name(f: IJK) -> IJK:
    return f + undefined_thing  # E:unknown  # noqa: F821


@field_operator
def with_bad_shift(f: IK) -> IK:
    return f(J + 1)  # E:shift


@field_operator
def with_mixed_dtypes(a: IJK, b: IJK32) -> IJK:
    return a + b  # E:mixed


@field_operator
def with_two_results(f: IJK) -> IJK:
    return f, f  # E:outputs


@field_operator
def with_unannotated(f) -> IJK:  # E:annotation
    return f


@field_operator
def with_no_return_annotation(f: IJK):  # E:return-annotation
    return f


@field_operator
def with_if(f: IJK) -> IJK:
    if f > 0:  # E:if
        return f
    return -f


@field_operator
def with_and(f: IJK) -> IJK:
    return (f > 0) and (f < 1)  # E:and


@field_operator
def with_ternary(f: IJK) -> IJK:
    return f if f else -f  # E:ternary


@field_operator
def with_float_and(f: IJK) -> IJK:
    return f & f  # E:bitand


@field_operator
def with_chained_compare(f: IJK) -> IJK:
    return 0.0 < f < 1.0  # E:chained


@field_operator
def with_wrong_result_dtype(f: IJKi) -> IJK:
    return f  # E:result-dtype


@field_operator
def identity_op(f: IJK) -> IJK:
    return f


@scan_operator(axis=K, forward=True, init=0.5)
def int_carry(carry: int32, a: int32) -> int32:  # E:scan-init
    return carry + a


@field_operator
def with_init_mismatch(f: IJKi) -> IJKi:
    return int_carry(f)


@scan_operator(axis=K, forward=True, init=0.0)
def wrong_return(carry: float64, a: float64) -> float32:  # E:scan-return
    return carry + a


@field_operator
def with_return_mismatch(f: IJK) -> IJK:
    return wrong_return(f)


@scan_operator(axis=K, forward=True, init=0.0)
def field_param(carry: float64, a: IJK) -> float64:  # E:scan-field-param
    return carry + a


@field_operator
def with_field_point_value(f: IJK) -> IJK:
    return field_param(f)


@scan_operator(axis=K, forward=True, init=0.0)
def running(carry: float64, a: float64) -> float64:
    return carry + a


@field_operator
def with_shifted_scan(f: IJK) -> IJK:
    return (running(f))(K - 1)  # E:scan-shift


@field_operator
def with_shifted_scan_local(f: IJK) -> IJK:
    total = running(f)
    return total(K - 1)  # E:scan-local-shift


@field_operator
def with_scan_off_axis(f: Field[[I, J], float64]) -> Field[[I, J], float64]:
    return running(f)  # E:scan-axis


@scan_operator(axis=K, forward=True, init=0.0)
def branching_scan(carry: float64, a: float64) -> float64:
    if carry > 0.0:  # E:scan-if
        return carry
    return a


@field_operator
def with_if_in_scan(f: IJK) -> IJK:
    return branching_scan(f)


@field_operator
def with_bool_of_field(f: IJK) -> IJK:
    return where(bool(f), f, -f)  # E:bool-field


@field_operator
def with_unknown_keyword(f: IJK) -> IJK:
    return identity_op(g=f)  # E:kw-unknown


@field_operator
def with_keyword_twice(f: IJK) -> IJK:
    return identity_op(f, f=f)  # E:kw-twice


@field_operator
def with_one_branch_local(f: IJK, s: float64) -> IJK:
    if s > 0.0:
        y = f
    return y  # E:one-branch  # noqa: F821


@field_operator
def with_one_branch_tuple_local(f: IJK, s: float64) -> IJK:
    if s > 0.0:
        pair = f, f
    else:
        pass
    g = f
    return g + pair[0]  # E:one-branch-tuple


@field_operator
def with_one_branch_local_read_in_a_later_if(f: IJK, s: float64) -> IJK:
    if s > 0.0:
        y = f
    else:
        g = f
    if s > 1.0:
        g = y  # E:one-branch-later
    else:
        g = f
    return g


@field_operator
def with_a_path_without_return(f: IJK, s: float64) -> IJK:
    if s > 0.0:  # E:no-return
        return f
    g = f  # noqa: F841


@field_operator
def with_a_nested_path_without_return(f: IJK, s: float64) -> IJK:
    if s > 0.0:
        if s > 1.0:  # E:nested-no-return
            return f
    else:
        return -f


@field_operator
def with_float_condition(f: IJK, s: float64) -> IJK:
    if s:  # E:float-if
        return f
    return -f


@field_operator
def with_one_value_unpacked(f: IJK) -> tuple[IJK, IJK, IJK]:
    a, b, c = 1  # E:unpack-one
    return a


Nested = tuple[IJK, tuple[IJK, IJK]]


@field_operator
def pack(f: IJK, g: IJK) -> Nested:
    return f, (f, g)


@field_operator
def with_nested_index(t: Nested) -> IJK:
    return t[1]  # E:nested-index


@field_operator
def with_nested_item_as_a_value(t: Nested) -> IJK:
    return t[0] + t[1]  # E:nested-item


@field_operator
def with_nested_index_past_the_end(t: Nested) -> IJK:
    return t[2]  # E:nested-past-end


@field_operator
def with_nested_unpacked_by_leaves(t: Nested) -> IJK:
    x, y, z = t  # E:nested-unpack
    return x + y + z


@field_operator
def with_nested_call_indexed(f: IJK, g: IJK) -> IJK:
    return f + pack(f, g)[1]  # E:nested-call-index


@field_operator
def with_nested_call_local_indexed(f: IJK, g: IJK) -> IJK:
    p = pack(f, g)
    return p[1] * g  # E:nested-call-local


@field_operator
def with_nested_literal_indexed(f: IJK, g: IJK) -> IJK:
    t = (f, (f, g))
    return t[-1] - f  # E:nested-literal


@field_operator
def with_nesting_unlike_the_annotation(f: IJK, g: IJK) -> Nested:
    return (f, f), g  # E:nested-return


@field_operator
def first(t: Nested) -> IJK:
    return t[0]


@field_operator
def with_argument_nested_unlike_the_parameter(f: IJK, g: IJK) -> IJK:
    return first(((f, g), f))  # E:nested-argument


CASES = [
    (with_loop, DSLSyntaxError, "E:loop", r"`for` loops are not supported"),
    (with_attribute, DSLSyntaxError, "E:attribute", r"attribute access on fields"),
    (with_subscript, DSLSyntaxError, "E:subscript", r"subscripts are not supported.*f\(I \+ 1\)"),
    (with_unknown_name, DSLNameError, "E:unknown", r"'undefined_thing' is not defined"),
    (with_bad_shift, DSLTypeError, "E:shift", r"shift along J, but 'f' has dimensions \(I, K\)"),
    (with_mixed_dtypes, DSLTypeError, "E:mixed", r"mixes float64 and float32.*astype"),
    (with_two_results, DSLTypeError, "E:outputs", r"returns 2 value\(s\) but its annotation declares 1"),
    (with_unannotated, DSLTypeError, "E:annotation", r"parameter 'f' has no type annotation"),
    (with_no_return_annotation, DSLTypeError, "E:return-annotation", r"has no return annotation"),
    (with_if, DSLTypeError, "E:if", r"condition is a field.*where\(cond, a, b\)"),
    (with_and, DSLSyntaxError, "E:and", r"use & and \|"),
    (with_ternary, DSLTypeError, "E:ternary", r"choose on scalars only.*where\(cond, a, b\)"),
    (with_float_and, DSLTypeError, "E:bitand", r"& needs boolean operands, got float64"),
    (with_chained_compare, DSLSyntaxError, "E:chained", r"chained comparisons"),
    (with_wrong_result_dtype, DSLTypeError, "E:result-dtype", r"dtype int32 but the annotation says float64"),
    (with_bool_of_field, DSLTypeError, "E:bool-field", r"bool\(\) converts scalars only.*astype"),
    (with_unknown_keyword, DSLTypeError, "E:kw-unknown", r"identity_op\(\) has no parameter 'g'"),
    (with_keyword_twice, DSLTypeError, "E:kw-twice", r"got argument 'f' twice"),
    (with_one_branch_local, DSLNameError, "E:one-branch", r"'y' is read here but is assigned in only one branch of the `if` at line 214 "),
    (with_one_branch_tuple_local, DSLNameError, "E:one-branch-tuple", r"'pair' is read here but is assigned in only one branch"),
    (with_one_branch_local_read_in_a_later_if, DSLNameError, "E:one-branch-later", r"'y' is read here"),
    (with_a_path_without_return, DSLSyntaxError, "E:no-return", r"when the condition of this `if` is false, 'with_a_path_without_return' reaches its end without a return"),
    (with_a_nested_path_without_return, DSLSyntaxError, "E:nested-no-return", r"is false, 'with_a_nested_path_without_return' reaches its end without a return"),
    (with_float_condition, DSLTypeError, "E:float-if", r"an `if` condition must be a bool scalar, got a float64 scalar"),
    (with_one_value_unpacked, DSLTypeError, "E:unpack-one", r"one value unpacked into 3 name\(s\)"),
    (with_init_mismatch, DSLTypeError, "E:scan-init", r"init of scan operator 'int_carry' value 0.5 does not match the carry's int32"),
    (with_return_mismatch, DSLTypeError, "E:scan-return", r"returns float32 but its carry is float64"),
    (with_field_point_value, DSLTypeError, "E:scan-field-param", r"parameter 'a' of a scan operator is a value at one point"),
    (with_shifted_scan, DSLTypeError, "E:scan-shift", r"scan's result is only read where it is computed"),
    (with_shifted_scan_local, DSLTypeError, "E:scan-local-shift", r"scan's result is read shifted"),
    (with_scan_off_axis, DSLTypeError, "E:scan-axis", r"sweeps K, but no argument has dimension K"),
    (with_if_in_scan, DSLSyntaxError, "E:scan-if", r"`if` is not supported in it"),
    (with_nested_index, DSLTypeError, "E:nested-index", r"'with_nested_index' returns 2 value\(s\) but its annotation declares 1"),
    (with_nested_item_as_a_value, DSLTypeError, "E:nested-item", r"'t\[1\]' is a tuple of 2 value\(s\), not a single value.*t\[1\]\[0\]"),
    (with_nested_index_past_the_end, DSLTypeError, "E:nested-past-end", r"index 2 of a tuple of 2 value\(s\)"),
    (with_nested_unpacked_by_leaves, DSLTypeError, "E:nested-unpack", r"2 value\(s\) unpacked into 3 name\(s\)"),
    (with_nested_call_indexed, DSLTypeError, "E:nested-call-index", r"'pack\(f, g\)\[1\]' is a tuple of 2 value\(s\)"),
    (with_nested_call_local_indexed, DSLTypeError, "E:nested-call-local", r"'p\[1\]' is a tuple of 2 value\(s\)"),
    (with_nested_literal_indexed, DSLTypeError, "E:nested-literal", r"'t\[-1\]' is a tuple of 2 value\(s\)"),
    (with_nesting_unlike_the_annotation, DSLTypeError, "E:nested-return", r"returns \(\(value, value\), value\) but its annotation declares \(value, \(value, value\)\)"),
    (with_argument_nested_unlike_the_parameter, DSLTypeError, "E:nested-argument", r"argument 't' of 'first' is a tuple \(value, \(value, value\)\); pass a tuple of that form"),
]


@pytest.mark.parametrize(("operator", "error_type", "marker", "message"), CASES,
                         ids=[c[2] for c in CASES])
def test_definition_errors_name_the_users_file_and_line(operator, error_type, marker, message):
    with pytest.raises(error_type) as info:
        operator.frontend()
    error = info.value
    assert isinstance(error, DSLError)
    assert re.search(message, error.message), error.message
    assert error.filename == str(THIS_FILE)
    assert error.line == line_of(marker)
    assert error.source_line is not None and marker in error.source_line


@pytest.mark.parametrize(("scan", "marker"), [(int_carry, "E:scan-init"),
                                               (wrong_return, "E:scan-return")])
def test_a_scan_operators_frontend_reports_the_errors_of_its_definition(scan, marker):
    with pytest.raises(DSLTypeError) as info:
        scan.frontend()
    assert info.value.line == line_of(marker)
    assert "tuple parameters" not in info.value.message and "program" not in info.value.message


def test_a_valid_scan_operators_frontend_says_it_is_compiled_in_its_caller():
    with pytest.raises(TypeError, match=r"scan operator 'running' has no program of its own.*"
                                        r"call frontend\(\) on that one"):
        running.frontend()


def test_error_text_shows_the_source_line_and_a_caret():
    with pytest.raises(DSLTypeError) as info:
        with_bad_shift.frontend()
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f'File "{THIS_FILE}", line {line_of("E:shift")}, column ')
    assert lines[1].strip().startswith("return f(J + 1)")
    caret_column = lines[2].index("^") - lines[1].index("return")
    assert lines[1][lines[1].index("return") + caret_column:].startswith("f(J + 1)")


def test_dsl_errors_carry_no_traceback_into_the_frontend():
    with pytest.raises(DSLError) as info:
        with_loop.frontend()
    frames = [entry.path for entry in info.traceback]
    assert not any("frontend" in str(path) or "passes" in str(path) for path in frames)


@program
def program_with_statement(inp: IJK, out: IJK):
    x = 1  # E:program-statement  # noqa: F841
    identity_op(inp, out=out)


@program
def program_without_out(inp: IJK, out: IJK):
    identity_op(inp)  # E:no-out


@program
def program_with_wrong_argument_dtype(inp: IJK32, out: IJK):
    identity_op(inp, out=out)  # E:arg-dtype


@pytest.mark.parametrize(("prog", "error_type", "marker", "message"), [
    (program_with_statement, DSLSyntaxError, "E:program-statement", "sequence of field operator calls"),
    (program_without_out, DSLTypeError, "E:no-out", r"needs out=\.\.\."),
    (program_with_wrong_argument_dtype, DSLTypeError, "E:arg-dtype", r"argument 'f' of 'identity_op' has dtype float64, got float32"),
])
def test_program_errors_name_the_users_line(prog, error_type, marker, message):
    with pytest.raises(error_type, match=message) as info:
        prog(np.zeros((3, 3, 3), np.float32 if "dtype" in marker else np.float64), np.zeros((3, 3, 3)))
    assert info.value.line == line_of(marker)


@program
def copy_interior(inp: IJK, out: IJK):
    identity_op(inp, out=out[1:-1, :, :])


def test_argument_errors_name_the_argument_before_anything_runs():
    out = np.full((4, 4, 2), -1.0)
    with pytest.raises(ArgumentError, match=r"argument 'inp' of copy_interior\(\) must have 3 dimension"):
        copy_interior(np.zeros((4, 4)), out)
    with pytest.raises(ArgumentError, match=r"argument 'inp' .* must have dtype float64; got float32"):
        copy_interior(np.zeros((4, 4, 2), np.float32), out)
    with pytest.raises(ArgumentError, match=r"argument 'out' .* must be an array"):
        copy_interior(np.zeros((4, 4, 2)), [1.0])
    with pytest.raises(ArgumentError, match="missing argument"):
        copy_interior(np.zeros((4, 4, 2)))
    with pytest.raises(ArgumentError, match="no parameter 'outt'"):
        copy_interior(np.zeros((4, 4, 2)), outt=out)
    assert (out == -1.0).all(), "nothing ran"


@field_operator
def shift_right(f: IJK) -> IJK:
    return f(I + 2)


@program
def shifted_copy(inp: IJK, out: IJK):
    shift_right(inp, out=out[1:-1, :, :])


def test_domain_error_names_field_dimension_and_missing_halo():
    out = np.zeros((6, 3, 2))
    with pytest.raises(DomainError) as info:
        shifted_copy(np.zeros((6, 3, 2)), out)
    message = str(info.value)
    assert "field 'inp'" in message and "along I" in message
    assert "missing halo: 1 at the upper end" in message
    assert isinstance(info.value, ValueError)


def test_backend_none_is_a_type_error_naming_embedded_numpy():
    with pytest.raises(TypeError, match=r"backends\.embedded_numpy"):
        program(backend=None)(copy_interior.function)
    with pytest.raises(TypeError, match=r"backends\.embedded_numpy"):
        copy_interior.with_backend(None)
    with pytest.raises(TypeError, match=r"backends\.embedded_numpy"):
        attrs.evolve(copy_interior, backend=None)
    with pytest.raises(TypeError, match=r"backends\.embedded_numpy"):
        field_operator(backend=None)(identity_op.function)


def test_default_backend_is_embedded_numpy_and_with_backend_makes_a_new_program():
    assert copy_interior.backend is backends.embedded_numpy
    import array_api_strict

    strict = backends.EmbeddedBackend("strict", array_api_strict)
    moved = copy_interior.with_backend(strict)
    assert moved.backend is strict and copy_interior.backend is backends.embedded_numpy


def test_compile_on_an_embedded_program_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="embedded programs are not compiled"):
        copy_interior.compile()


def test_programs_are_allocator_factories():
    field = allocators.zeros((3, 4, 5), float64, allocator=copy_interior)
    assert isinstance(field, np.ndarray) and field.shape == (3, 4, 5)


def test_metrics_are_recorded_under_program_at_backend_only_when_enabled():
    metrics.reset()
    inp, out = np.ones((4, 4, 2)), np.zeros((4, 4, 2))
    copy_interior(inp, out)
    with pytest.raises(KeyError):
        metrics.get("copy_interior@embedded_numpy")
    with metrics.collect():
        copy_interior(inp, out)
        copy_interior(inp, out)
    entry = metrics.get("copy_interior@embedded_numpy")
    assert entry.count == 2 and len(entry.run_seconds) == 2
    assert all(s > 0 for s in entry.run_seconds)


def test_field_operator_called_directly_with_out_and_domain():
    inp = np.arange(5 * 3 * 2, dtype=np.float64).reshape(5, 3, 2)
    out = np.zeros_like(inp)
    shift_right(inp, out=out, domain=(slice(0, -2),))
    np.testing.assert_array_equal(out[:-2], inp[2:])
    assert (out[-2:] == 0).all()
    with pytest.raises(TypeError, match="needs out="):
        shift_right(inp)


def test_passes_are_swappable_steps():
    from pipeline import identity
    from pipeline.dsl.frontend.step import default_passes

    @field_operator
    def twice(f: IJK) -> IJK:
        return (f + 1.0) * (f + 1.0)

    @program
    def twice_program(inp: IJK, out: IJK):
        twice(inp, out=out)

    with_cse = default_passes(twice_program.definition)
    without_cse = attrs.evolve(default_passes, common_subexpressions=identity)(twice_program.definition)
    assert "_cse0 = inp + 1.0" in str(with_cse)
    assert "_cse0" not in str(without_cse)


@field_operator
def _x64_laplacian(f: IJK) -> IJK:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@program
def _x64_lap(inp: IJK, out: IJK):
    _x64_laplacian(inp, out=out[1:-1, 1:-1, :])


@pytest.mark.requires_jax
def test_a_float32_jax_array_for_a_float64_field_says_how_to_enable_64_bit_jax():
    import jax  # noqa: PLC0415
    import jax.numpy as jnp  # noqa: PLC0415

    before = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", False)
    try:
        narrowed = jnp.zeros((4, 4, 3))  # float32: what JAX makes of a float64 request
        on_jax = _x64_lap.with_backend(backends.embedded_jax)
        with pytest.raises(ArgumentError) as raised:
            on_jax(narrowed, narrowed)
    finally:
        jax.config.update("jax_enable_x64", before)
    message = str(raised.value)
    assert "argument 'inp' of _x64_lap() must have dtype float64; got float32" in message
    assert 'jax.config.update("jax_enable_x64", True)' in message
