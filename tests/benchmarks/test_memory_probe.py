"""The memory probe: its kernels move what they say, and its shares are read as documented."""

from __future__ import annotations

import numpy as np
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
    # traffic_floors checks the output is the inputs' sum (it raises otherwise).
    floors = traffic_floors(probe, "small", 2, lambda: None, 10e9)
    assert [floor.row for floor in floors] == [f"{name} small" for name in WORKLOADS]
    for floor, workload in zip(floors, WORKLOADS.values(), strict=True):
        points = int(np.prod((16, 16, 8)))
        assert floor.reads == len(workload.inputs)
        assert floor.bytes_per_call == (floor.reads + 1) * points * 8
        assert floor.seconds > 0
        assert floor.copy_bound == pytest.approx(floor.bytes_per_call / 10e9)


def test_the_landing_probe_reads_its_region_every_way(probe: Probe) -> None:
    # prefetch_landing checks each read's sum against the region's (it raises otherwise).
    landing = prefetch_landing(probe, 2**20, 2, copy_kernel(2**22).run)
    assert set(landing.seconds) == {"not asked", "back to back", "paced", "from the caches"}
    assert landing.nbytes == 128 * 1024
    assert all(seconds > 0 for seconds in landing.seconds.values())


def test_the_overlap_probe_times_each_part(probe: Probe) -> None:
    both = streaming_overlap(probe, 2**18, 2)
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


def test_the_quick_run_prints_the_three_measurements(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--quick"])
    printed = capsys.readouterr().out
    if "nothing measured" in printed:
        pytest.skip("no C compiler here that builds the probe's AVX kernels")
    for heading in ("traffic floor", "prefetch landing", "overlap"):
        assert heading in printed
