"""One rule for array and scalar types, the same on every backend (issue 16).

numpy.matrix and masked arrays are refused (their operators are not elementwise, and no
backend propagates masks); a subclass whose ``dtype`` lies is read as what its memory holds;
Python's and NumPy's bools are 0 and 1 wherever a number goes.
"""

from __future__ import annotations

import numpy as np
import pytest
from c_programs import stencils
from numpy_source_backend import numpy_source

import backends
from pipeline import ArgumentError

BACKENDS = ["embedded_numpy", "c_cpu", pytest.param("dace_cpu", marks=pytest.mark.requires_dace),
            "numpy_source"]


def _backend(name):
    return numpy_source if name == "numpy_source" else getattr(backends, name)


def _lap_arrays():
    inp = np.random.default_rng(4).uniform(-1, 1, (6, 5, 4))
    return inp, np.zeros_like(inp)


class LyingDtype(np.ndarray):
    @property
    def dtype(self):  # what some wrappers do
        return np.dtype(np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_matrix_and_masked_arrays_are_refused_with_what_to_do(backend):
    program = stencils.lap.with_backend(_backend(backend))
    inp, out = _lap_arrays()
    masked = np.ma.masked_array(inp, mask=inp > 0.5)
    with pytest.raises(ArgumentError, match=r"argument 'inp' of lap\(\) is a numpy.ma.MaskedArray.*filled"):
        program(masked, out)
    matrix_program = stencils.lap.with_backend(_backend(backend))
    with pytest.raises(ArgumentError, match="numpy.matrix"):
        matrix_program(inp, np.asmatrix(out[:, :, 0]))  # (also the wrong rank)
    assert np.all(out == 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_subclass_whose_dtype_lies_is_read_as_what_its_memory_holds(backend):
    program = stencils.lap.with_backend(_backend(backend))
    inp, out = _lap_arrays()
    program(inp.view(LyingDtype), out)
    expected = np.zeros_like(inp)
    stencils.lap_reference(inp, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flag", [True, np.bool_(True)], ids=["python bool", "numpy bool"])
def test_bools_are_one_wherever_a_number_goes(backend, flag):
    program = stencils.axpy_program.with_backend(_backend(backend))
    a, b = _lap_arrays()
    out_flag, out_one = np.zeros_like(a), np.zeros_like(a)
    program(a, b, flag, out_flag)
    program(a, b, 1.0, out_one)
    np.testing.assert_array_equal(out_flag, out_one)


class Interface:
    """A non-ndarray exporting big-endian data through ``__array_interface__``."""

    def __init__(self, array):
        self._array = array.astype(">f8")
        self.__array_interface__ = self._array.__array_interface__
        self.shape, self.dtype = self._array.shape, np.dtype(np.float64)


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "embedded_numpy"])
def test_compiled_backends_refuse_array_interface_objects_as_c_cpu_does(backend):
    program = stencils.lap.with_backend(_backend(backend))
    inp, out = _lap_arrays()
    with pytest.raises(ArgumentError, match="must be a numpy.ndarray for this backend"):
        program(Interface(inp), out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_legal_huge_broadcast_input_costs_what_its_output_costs(backend):
    program = stencils.lap.with_backend(_backend(backend))
    small = np.random.default_rng(6).uniform(-1, 1, (1, 5, 4))
    huge = np.broadcast_to(small, (2**40, 5, 4))  # 160 TiB of virtual elements
    out = np.zeros((6, 5, 4))
    program(huge, out)  # embedded_numpy raised MemoryError ("Unable to allocate 160. TiB")
    expected = np.zeros_like(out)
    stencils.lap_reference(np.broadcast_to(small, out.shape).copy(), expected)
    np.testing.assert_allclose(out, expected, rtol=1e-13)
