"""Shared test configuration: markers for optional dependencies skip cleanly when absent."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import tempfile

import pytest

OPTIONAL_PACKAGE_MARKERS = {
    "requires_cupy": "cupy",
    "requires_jax": "jax",
    "requires_dace": "dace",
    "requires_dask": "distributed",
    "requires_redis": "redis",
}


@functools.cache
def _has_package(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


@functools.cache
def _has_gpu() -> bool:
    if not _has_package("cupy"):
        return False
    try:
        import cupy  # noqa: PLC0415

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:  # noqa: BLE001  (no driver, no device: all mean "no GPU")
        return False


@functools.cache
def _has_nvcc() -> bool:
    from backends.cuda.compilation import default_nvcc  # noqa: PLC0415

    return shutil.which(default_nvcc()) is not None


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, package in OPTIONAL_PACKAGE_MARKERS.items():
        if item.get_closest_marker(marker) and not _has_package(package):
            pytest.skip(f"optional package {package!r} is not installed")
    if item.get_closest_marker("requires_gpu") and not _has_gpu():
        pytest.skip("no CUDA GPU (cupy with a visible device) is available")
    if item.get_closest_marker("requires_nvcc") and not _has_nvcc():
        pytest.skip("the CUDA compiler nvcc is not installed (set $NVCC or put it on the PATH)")


def _private_test_cache() -> None:
    """Give the test run its own build cache, so no test reuses (or pollutes) the user's.

    Run when this file is imported: pytest imports the conftest files of the folders it was
    given (tests/dsl's, which makes backends) before any ``pytest_configure`` hook runs.
    """
    if not os.environ.get("STENCILFORGE_KEEP_TEST_CACHE"):
        os.environ["STENCILFORGE_CACHE_DIR"] = tempfile.mkdtemp(prefix="stencilforge-test-cache-")


_private_test_cache()


def _predict_without_measuring() -> None:
    """c_cpu builds predicted variants and measures none (``STENCILFORGE_TUNING=off``) unless
    the run says otherwise: measuring at the interpreter's exit would hold each test process
    there for up to half a minute. The tests of the schedules set their own."""
    os.environ.setdefault("STENCILFORGE_TUNING", "off")


_predict_without_measuring()
