"""Backends for the DSL tests, and the helpers that move arrays to and from them.

Every DSL test takes ``dsl_backend``, which is parametrized over every backend the DSL must
agree on: the embedded NumPy backend, an embedded ``array_api_strict`` backend (the strictest
array-API namespace, so the embedded execution uses nothing outside the standard), the embedded
JAX backend and ``jax_jit`` (functional: programs return their outputs), and every other backend registered in
``backends.available_backends()`` (compiled backends such as ``c_cpu`` join by registering).

The helpers are fixtures (``to_backend_array``, ``to_numpy``, ``run_program``) because test
modules cannot import this conftest by name (``tests/conftest.py`` is also ``conftest``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from numpy_source_backend import numpy_source

import backends
from backends import EmbeddedBackend
from backends.conformance import arrays
from backends.embedded import embedded_pipeline

# The guide's example backend joins as a third-party backend would: by registering.
if "numpy_source" not in backends.available_backends():
    backends.register(numpy_source)

ARRAY_API_STRICT = "embedded_array_api_strict"
# embedded_numpy runs a slicing plan where it can; this one always runs the definition.
NUMPY_DEFINITION = "embedded_numpy_definition"
# The plan as it runs on large grids (stencils evaluated in their outputs), on the corpus's
# small ones.
NUMPY_IN_PLACE = "embedded_numpy_in_place"

# Optional backends and the markers that skip them where their package (or device) is absent.
# These are resolved by name inside the fixture, so collecting the tests imports none of them.
_OPTIONAL_BACKEND_MARKS: Mapping[str, tuple[pytest.MarkDecorator, ...]] = {
    "embedded_jax": (pytest.mark.requires_jax,),
    "jax_jit": (pytest.mark.requires_jax,),
    "embedded_cupy": (pytest.mark.requires_cupy, pytest.mark.requires_gpu),
}


def _marks_for_registered(name: str) -> tuple[pytest.MarkDecorator, ...]:
    """Markers for a backend found in the registry, guessed from its conventional name."""
    marks: list[pytest.MarkDecorator] = []
    if "dace" in name:
        marks.append(pytest.mark.requires_dace)
    # cuda_emulated runs cuda_gpu's kernels on the CPU: it needs no GPU.
    if ("gpu" in name or "cuda" in name or "cupy" in name) and name != "cuda_emulated":
        marks.append(pytest.mark.requires_gpu)
    if "jax" in name:
        marks.append(pytest.mark.requires_jax)
    return tuple(marks)


def _backend_params() -> list[Any]:
    params = [
        pytest.param("embedded_numpy", id="embedded_numpy"),
        pytest.param(NUMPY_DEFINITION, id=NUMPY_DEFINITION),
        pytest.param(NUMPY_IN_PLACE, id=NUMPY_IN_PLACE),
        pytest.param(ARRAY_API_STRICT, id=ARRAY_API_STRICT),
    ]
    params += [
        pytest.param(name, marks=marks, id=name) for name, marks in _OPTIONAL_BACKEND_MARKS.items()
    ]
    known = {p.values[0] for p in params}
    # Note: available_backends() creates the lazy optional backends that are installed.
    for name in backends.available_backends():
        if name not in known:
            params.append(pytest.param(name, marks=_marks_for_registered(name), id=name))
    return params


DSL_BACKEND_PARAMS = _backend_params()
_resolved: dict[str, Any] = {}


def resolve_backend(name: str) -> Any:
    """The backend called ``name``, created on first use (optional packages imported here)."""
    if name not in _resolved:
        if name == ARRAY_API_STRICT:
            import array_api_strict  # noqa: PLC0415

            _resolved[name] = EmbeddedBackend(ARRAY_API_STRICT, array_api_strict)
        elif name == NUMPY_DEFINITION:
            _resolved[name] = EmbeddedBackend(
                NUMPY_DEFINITION, np, pipeline=embedded_pipeline(np, planned=False)
            )
        elif name == NUMPY_IN_PLACE:
            _resolved[name] = EmbeddedBackend(
                NUMPY_IN_PLACE, np, pipeline=embedded_pipeline(np, large_domain=0)
            )
        else:
            if name in {"embedded_jax", "jax_jit"}:
                import jax  # noqa: PLC0415

                # The corpus is mostly float64 and int64; JAX truncates them without x64.
                jax.config.update("jax_enable_x64", True)
            backend = getattr(backends, name, None)
            if backend is None:
                backend = backends.available_backends()[name]
            _resolved[name] = backend
    return _resolved[name]


@pytest.fixture(scope="session", params=DSL_BACKEND_PARAMS)
def dsl_backend(request: pytest.FixtureRequest) -> Any:
    """Each backend the DSL must run on (session scoped, so hypothesis tests can use it)."""
    return resolve_backend(request.param)


@pytest.fixture(scope="session")
def reference_backend() -> Any:
    """The backend whose errors and results the others must reproduce."""
    return backends.embedded_numpy


# --------------------------------------------------------------------------- arrays and runs
# The shipped conformance suite's own functions (backends.conformance.arrays), so that these
# tests and a third party's conformance run move data and run programs alike.


@pytest.fixture(scope="session")
def to_backend_array() -> Callable[[np.ndarray, Any], Any]:
    """``to_backend_array(host, backend)``: copy a NumPy array onto the backend."""
    return arrays.to_backend_array


@pytest.fixture(scope="session")
def to_numpy() -> Callable[[Any], np.ndarray]:
    """``to_numpy(array)``: a NumPy copy of a backend array."""
    return arrays.to_numpy


@pytest.fixture(scope="session")
def run_program() -> Callable[..., dict[str | int, Any]]:
    """``run_program(program, backend, *args, written=(...), **kwargs)``; see
    ``backends.conformance.arrays.run_program``."""
    return arrays.run_program


@pytest.fixture(scope="session")
def bind_program() -> Callable[[Any, Any], Any]:
    """``bind_program(program, backend)``: the program on that backend (cached)."""
    return arrays.bind


# DaCe compiles take seconds: by default its run of the DSL tests is this representative
# subset of the corpus (every kind of construct at least once: shifts, temporaries, where,
# integer NumPy semantics, tuples, broadcasting, several calls, scalars); the rest of the
# DSL tests on DaCe backends carry the `slow` marker (`pytest -m slow` runs them; CI runs all).
DACE_REPRESENTATIVE_CASES = frozenset({
    "laplacian", "hdiff", "int32_floor_divide_negative_operands", "int64_remainder_negative_operands",
    "where_nested", "tuple_return_mixed_dtypes_shifted", "broadcast_shifted_ij_field",
    "two_calls_through_a_temporary", "shifted_locals_in_j_and_k", "scalar_bool_parameter_inverted",
    "builtins_float32", "astype_float64_to_int32_truncates",
})


# Single tests that take a minute on their own (cold cache, one worker): c_cpu compiles
# ``where``'s program of all accepted literal combinations in about 60 s, against 2 s for
# each other operation.
SLOW_TESTS = frozenset({"test_literal_combinations_agree_with_numpy[c_cpu-where]"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        callspec = getattr(item, "callspec", None)
        if callspec is None or "dace" not in str(callspec.params.get("dsl_backend", "")):
            continue
        case = callspec.params.get("case")
        if getattr(case, "name", None) not in DACE_REPRESENTATIVE_CASES:
            item.add_marker(pytest.mark.slow)
