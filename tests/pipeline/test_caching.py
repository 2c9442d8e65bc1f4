"""CachedStep: in memory and on disk, single-flight, damaged entries recomputed."""

from __future__ import annotations

import logging
import multiprocessing
import os
import stat
import threading
import time
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import CachedStep, FingerprintError, UnsafeCacheDirectoryError
from pipeline.caching import DiskStepCache


@attrs.frozen
class Scale:
    factor: int

    def __call__(self, values: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(self.factor * v for v in values)


@attrs.define
class CountingStep:
    calls: int = 0

    def __call__(self, x: int) -> int:
        self.calls += 1
        return x * 2

    def __fingerprint__(self) -> str:
        return "counting-step"


@given(st.lists(st.integers(), max_size=5).map(tuple), st.integers(-3, 3))
def test_memory_cached_step_returns_what_the_step_returns(values, factor):
    cached = CachedStep.in_memory(Scale(factor))
    assert cached(values) == Scale(factor)(values)
    assert cached(values) == Scale(factor)(values)


def test_memory_cache_hits_after_the_first_call():
    step = CountingStep()
    cached = CachedStep.in_memory(step)
    assert [cached(3), cached(3), cached(4)] == [6, 6, 8]
    assert step.calls == 2
    assert (cached.cache.stats.hits, cached.cache.stats.misses) == (1, 2)


def test_memory_cache_evicts_least_recently_used():
    step = CountingStep()
    cached = CachedStep.in_memory(step, maxsize=2)
    for x in (1, 2, 1, 3, 1, 2):
        cached(x)
    assert step.calls == 4  # 1, 2, 3 and 2 again (evicted by 3)


def test_step_configuration_is_part_of_the_key(tmp_path):
    cache_dir = tmp_path / "cache"
    a = CachedStep.on_disk(Scale(2), directory=cache_dir)
    b = CachedStep.on_disk(Scale(3), directory=cache_dir)
    assert a((1,)) == (2,)
    assert b((1,)) == (3,)
    assert a.cache_key((1,)) != b.cache_key((1,))


def test_exceptions_are_not_cached(tmp_path):
    calls = []

    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise RuntimeError("first call fails")
        return x

    for cached in (CachedStep.in_memory(flaky), CachedStep.on_disk(flaky, directory=tmp_path / "c")):
        calls.clear()
        with pytest.raises(RuntimeError):
            cached(5)
        assert cached(5) == 5
        assert cached(5) == 5
        assert len(calls) == 2


def test_memory_cache_computes_once_for_concurrent_misses():
    started = threading.Event()
    calls = []

    def slow(x: int) -> int:
        calls.append(x)
        started.set()
        time.sleep(0.05)
        return x + 1

    cached = CachedStep.in_memory(slow)
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(cached(1))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [2] * 8
    assert calls == [1]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(), max_size=5).map(tuple), st.integers(-3, 3))
def test_disk_round_trip_returns_what_the_step_returns(tmp_path, values, factor):
    cached = CachedStep.on_disk(Scale(factor), directory=tmp_path / "disk")
    assert cached(values) == Scale(factor)(values)
    again = CachedStep.on_disk(Scale(factor), directory=tmp_path / "disk")
    assert again(values) == Scale(factor)(values)


def _disk_call(directory: str, x: int, log: str) -> int:
    def record(value: int) -> int:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(0.3)
        return value * 10

    record.__qualname__ = "record"  # the same step identity in every process
    return CachedStep.on_disk(record, directory=directory)(x)


def test_disk_cache_is_shared_across_processes(tmp_path):
    log = tmp_path / "calls.log"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        assert pool.apply(_disk_call, (str(tmp_path / "c"), 4, str(log))) == 40
    with ctx.Pool(1) as pool:
        assert pool.apply(_disk_call, (str(tmp_path / "c"), 4, str(log))) == 40
    assert len(log.read_text().split()) == 1


def _wait_then_call(directory: str, log: str, barrier: multiprocessing.synchronize.Barrier) -> int:  # type: ignore[name-defined]
    barrier.wait()
    return _disk_call(directory, 7, log)


def test_eight_processes_missing_on_one_key_compute_once(tmp_path):
    log = tmp_path / "calls.log"
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(8)
    procs = [
        ctx.Process(target=_wait_then_call, args=(str(tmp_path / "c"), str(log), barrier))
        for _ in range(8)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * 8
    assert len(log.read_text().split()) == 1
    assert CachedStep.on_disk(lambda x: -1, directory=tmp_path / "c").cache.stats.hits == 0


def test_damaged_entry_is_evicted_with_a_warning_and_recomputed(tmp_path, caplog):
    step = CountingStep()
    cached = CachedStep.on_disk(step, directory=tmp_path / "c")
    assert cached(21) == 42
    cache = cached.cache
    assert isinstance(cache, DiskStepCache)
    # Corrupt the stored pickle in place, as a torn write or a stale class would.
    key = cached.cache_key(21)
    cache._entries.set(key, b"placeholder")  # type: ignore[attr-defined]
    raw = cache._entries._sql(  # type: ignore[attr-defined]
        "UPDATE Cache SET value = ?, mode = 4 WHERE key = ?", (b"\x80\x04not a pickle", key)
    )
    del raw
    with caplog.at_level(logging.WARNING, logger="pipeline.caching"):
        assert cached(21) == 42
    assert step.calls == 2
    assert cache.stats.damaged == 1
    assert "damaged cache entry" in caplog.text
    assert cached(21) == 42 and step.calls == 2


def test_disk_cache_needs_stable_fingerprints(tmp_path):
    class Opaque:
        def __call__(self, x: int) -> int:
            return x

    with pytest.raises(FingerprintError, match="Opaque"):
        CachedStep.on_disk(Opaque(), directory=tmp_path / "c")
    cached = CachedStep.on_disk(Scale(1), directory=tmp_path / "c")
    with pytest.raises(FingerprintError):
        cached(object())


def test_disk_cache_directory_is_created_private(tmp_path):
    CachedStep.on_disk(Scale(1), directory=tmp_path / "new" / "cache")
    assert stat.S_IMODE((tmp_path / "new" / "cache").stat().st_mode) == 0o700


def test_disk_cache_refuses_a_directory_others_can_write(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UnsafeCacheDirectoryError, match=r"writable by group or others.*chmod go-w"):
        CachedStep.on_disk(Scale(1), directory=shared)
    assert isinstance(UnsafeCacheDirectoryError(), PermissionError)


def test_cached_step_keeps_the_wrapped_step_visible():
    step = Scale(2)
    cached = CachedStep.in_memory(step)
    assert cached.step is step
    assert attrs.evolve(cached, step=Scale(3))((1,)) == (3,)


def test_disk_entries_survive_a_new_cache_object(tmp_path: Path):
    step = CountingStep()
    CachedStep.on_disk(step, directory=tmp_path / "c")(1)
    CachedStep.on_disk(step, directory=tmp_path / "c")(1)
    assert step.calls == 1
