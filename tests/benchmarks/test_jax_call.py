"""``python -m benchmarks.jax_call``: jax_jit's small repeat call, layer by layer."""

import importlib
from types import ModuleType

import pytest

pytestmark = pytest.mark.requires_jax

LAYERS = ["program", "fast entry", "executable", "jitted", "jax peer"]


@pytest.fixture
def jax_call() -> ModuleType:
    """``benchmarks.jax_call``, imported once the marker has let the test run: the module
    needs jax_jit, which ``backends`` only offers where JAX is installed, so importing it at
    the top would fail the collection instead of skipping."""
    return importlib.import_module("benchmarks.jax_call")


def test_every_layer_of_the_call_is_timed_beside_the_peer(jax_call):
    found = jax_call.measure(["laplacian", "tridiagonal"], sync=True, repeat=3)

    assert list(found) == ["laplacian", "tridiagonal"]
    for medians in found.values():
        assert list(medians) == LAYERS
        assert all(seconds > 0 for seconds in medians.values())


def test_the_report_gives_each_layer_against_the_peer(jax_call, capsys):
    jax_call.main(["--workloads", "laplacian", "--repeat", "3"])

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "laplacian (small, async dispatch on):"
    assert [line.split("  ")[1].strip() for line in lines[1:]] == LAYERS
    assert lines[-1].endswith("1.00x the JAX peer")


def test_an_unknown_workload_is_refused_with_the_known_ones(jax_call, capsys):
    with pytest.raises(SystemExit):
        jax_call.main(["--workloads", "laplacain"])

    assert "unknown workloads ['laplacain']; known:" in capsys.readouterr().err


def test_synchronous_dispatch_is_undone_after_the_measurement(jax_call):
    import jax

    before = jax.config.read("jax_cpu_enable_async_dispatch")
    jax_call.measure(["laplacian"], sync=True, repeat=2)

    assert jax.config.read("jax_cpu_enable_async_dispatch") == before
