"""``python -m benchmarks.jax_call``: jax_jit's small repeat call, layer by layer."""

import pytest

from benchmarks import jax_call

pytestmark = pytest.mark.requires_jax

LAYERS = ["program", "fast entry", "executable", "jitted", "jax peer"]


def test_every_layer_of_the_call_is_timed_beside_the_peer():
    found = jax_call.measure(["laplacian", "tridiagonal"], sync=True, repeat=3)

    assert list(found) == ["laplacian", "tridiagonal"]
    for medians in found.values():
        assert list(medians) == LAYERS
        assert all(seconds > 0 for seconds in medians.values())


def test_the_report_gives_each_layer_against_the_peer(capsys):
    jax_call.main(["--workloads", "laplacian", "--repeat", "3"])

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "laplacian (small, async dispatch on):"
    assert [line.split("  ")[1].strip() for line in lines[1:]] == LAYERS
    assert lines[-1].endswith("1.00x the JAX peer")


def test_an_unknown_workload_is_refused_with_the_known_ones(capsys):
    with pytest.raises(SystemExit):
        jax_call.main(["--workloads", "laplacain"])

    assert "unknown workloads ['laplacain']; known:" in capsys.readouterr().err


def test_synchronous_dispatch_is_undone_after_the_measurement():
    import jax

    before = jax.config.read("jax_cpu_enable_async_dispatch")
    jax_call.measure(["laplacian"], sync=True, repeat=2)

    assert jax.config.read("jax_cpu_enable_async_dispatch") == before
