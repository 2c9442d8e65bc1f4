"""The copy bandwidth: the better of the measurements before and after the rows counts."""

from __future__ import annotations

import gc
import weakref

from benchmarks.machine import CopyBandwidth, better_copy_bandwidth, copy_kernel


def test_the_better_copy_bandwidth_counts_and_both_are_recorded():
    slow, fast = CopyBandwidth(10e9, 2**27, "C"), CopyBandwidth(12e9, 2**27, "C")
    for first, second in ((slow, fast), (fast, slow)):
        best = better_copy_bandwidth(first, second)
        assert best.bytes_per_second == 12e9
        assert best.measurements == (first.bytes_per_second, second.bytes_per_second)


def test_a_copy_kernels_run_keeps_its_arrays_alive_without_the_kernel():
    # The harness may keep only `run`; the arrays it writes must outlive the kernel.
    kernel = copy_kernel(2**20)
    run, source = kernel.run, weakref.ref(kernel._source)
    del kernel
    gc.collect()
    assert source() is not None
    run()
