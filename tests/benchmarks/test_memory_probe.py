"""The memory probe: its kernels move what they say, and its shares are read as documented."""

from __future__ import annotations

import pytest

from benchmarks.machine import copy_kernel
from benchmarks.memory_probe import (
    Landing,
    Overlap,
    Probe,
    build_probe,
    main,
    prefetch_landing,
    streaming_overlap,
    traffic_floors,
)
from benchmarks.workloads import WORKLOADS


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Probe:
    built = build_probe(tmp_path_factory.mktemp("probe"))
    if built is None:
        pytest.skip("no C compiler here that builds the probe's AVX kernels")
    return built


def test_each_workloads_traffic_is_its_inputs_read_and_its_output_written(probe: Probe) -> None:
    # traffic_floors raises unless each output is the sum of its inputs.
    floors = traffic_floors(probe, "small", 2, lambda: None, 10e9)
    assert [floor.row for floor in floors] == [f"{name} small" for name in WORKLOADS]
    points = 16 * 16 * 8
    for floor, workload in zip(floors, WORKLOADS.values(), strict=True):
        assert floor.reads == len(workload.inputs)
        assert floor.bytes_per_call == (floor.reads + 1) * points * 8


def test_the_landing_probe_reads_its_region_every_way(probe: Probe) -> None:
    # prefetch_landing raises unless every read sums its region.
    landing = prefetch_landing(probe, 2**20, 2, copy_kernel(2**22).run)
    assert set(landing.seconds) == {"not asked", "back to back", "paced", "from the caches"}
    assert landing.nbytes == 128 * 1024


def test_the_overlap_probe_reads_every_block_of_every_stream(probe: Probe) -> None:
    # streaming_overlap raises unless each run read all of its streams (or none, for the
    # arithmetic alone), whatever threads share them.
    both = streaming_overlap(probe, 2**16 + 3 * 4096, 2)
    assert min(both.reads, both.arithmetic, both.together, both.together_asked) > 0


def test_shares_saved_and_hidden_are_read_against_their_extremes() -> None:
    landing = Landing(
        1024, {"not asked": 4.0, "back to back": 3.0, "paced": 1.0, "from the caches": 1.0}
    )
    assert landing.saved("back to back") == pytest.approx(1 / 3)
    assert landing.saved("paced") == pytest.approx(1.0)
    assert landing.saved("not asked") == 0.0
    both = Overlap(reads=4.0, arithmetic=3.0, together=5.0, together_asked=4.0)
    assert both.hidden(both.together) == pytest.approx(2 / 3)
    assert both.hidden(both.together_asked) == pytest.approx(1.0)
    assert both.hidden(7.0) == 0.0


def test_the_quick_run_prints_the_three_measurements(
    probe: Probe, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["--quick"])
    printed = capsys.readouterr().out
    for heading in ("traffic floor", "prefetch landing", "overlap"):
        assert heading in printed
