"""The disk cache under faults, each injected between real processes (issue #15).

Every fault must end in the right result, the damaged entry recomputed (once) and a
warning naming the cache; nothing unreadable surfaces as a crash or a wrong result, and
nothing planted in the store is unpickled.
"""

from __future__ import annotations

import json
import os
import pickle
import stat
import subprocess
import sys
import time
from pathlib import Path

import diskcache
import pytest
from cache_fault_steps import Doubling

from pipeline import CachedStep
from pipeline.caching import DiskStepCache

HERE = Path(__file__).parent


def run(directory: Path, log: Path, *xs: int, size: int = 0, umask: int | None = None
        ) -> tuple[dict, str]:
    """Run the driver in a fresh interpreter; its JSON report and its stderr."""
    def preexec() -> None:
        if umask is not None:
            os.umask(umask)

    done = subprocess.run(
        [sys.executable, str(HERE / "cache_fault_steps.py"), str(directory), str(log),
         str(size), *map(str, xs)],
        capture_output=True, text=True, timeout=120, preexec_fn=preexec, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def computed(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def key_of(directory: Path, log: Path, x: int, size: int = 0) -> str:
    return CachedStep.on_disk(Doubling(str(log), size), directory=directory).cache_key(x)


def store(directory: Path) -> diskcache.Cache:
    return diskcache.Cache(str(directory / "entries"))


def test_a_damaged_sqlite_store_is_moved_aside_and_recreated(tmp_path):
    cache, log = tmp_path / "c", tmp_path / "log"
    run(cache, log, 3)
    (cache / "entries" / "cache.db").write_bytes(b"this is not a database" * 100)
    report, stderr = run(cache, log, 3, 4)
    assert report["results"] == [6, 8]
    assert computed(log) == ["3", "3", "4"]
    assert "is damaged" in stderr and str(cache / "entries") in stderr
    assert list(cache.glob("entries.damaged-*"))
    report, _ = run(cache, log, 3, 4)
    assert report["hits"] == 2 and computed(log) == ["3", "3", "4"]


def test_a_value_of_the_wrong_type_is_evicted_and_recomputed(tmp_path):
    cache, log = tmp_path / "c", tmp_path / "log"
    run(cache, log, 5)
    store(cache).set(key_of(cache, log, 5), 42)
    report, stderr = run(cache, log, 5)
    assert report["results"] == [10] and report["damaged"] == 1
    assert "evicting damaged cache entry" in stderr and str(cache) in stderr
    assert computed(log) == ["5", "5"]


def test_an_altered_payload_is_detected_before_it_is_used(tmp_path):
    cache, log = tmp_path / "c", tmp_path / "log"
    run(cache, log, 7)
    key = key_of(cache, log, 7)
    sealed = store(cache).get(key)
    # Change the stored result (14 -> 15) inside the pickle, keeping it a valid pickle.
    altered = sealed.replace(pickle.dumps(14)[2:-1], pickle.dumps(15)[2:-1])
    assert altered != sealed and pickle.loads(altered.split(b"\n", 3)[3])["twice"] == 15
    store(cache).set(key, altered)
    report, stderr = run(cache, log, 7)
    assert report["results"] == [14]
    assert "does not match its SHA-256" in stderr


def test_swapped_entries_never_answer_for_each_other(tmp_path):
    cache, log = tmp_path / "c", tmp_path / "log"
    run(cache, log, 1, 2)
    a, b = key_of(cache, log, 1), key_of(cache, log, 2)
    entries = store(cache)
    first, second = entries.get(a), entries.get(b)
    entries.set(a, second)
    entries.set(b, first)
    report, stderr = run(cache, log, 1, 2)
    assert report["results"] == [2, 4] and report["damaged"] == 2
    assert "another key" in stderr


def test_a_planted_pickle_is_never_unpickled(tmp_path):
    cache, log = tmp_path / "c", tmp_path / "log"
    run(cache, log, 9)
    marker = tmp_path / "pwned"

    class Planted:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    store(cache).set(key_of(cache, log, 9), Planted())  # stored pickled (diskcache mode 4)
    report, stderr = run(cache, log, 9)
    assert report["results"] == [18]
    assert not marker.exists()
    assert "never stores" in stderr


def test_under_umask_000_the_cache_is_still_private(tmp_path):
    cache, log = tmp_path / "parent" / "c", tmp_path / "log"
    run(cache, log, 1, umask=0)
    for path in [tmp_path / "parent", cache, *cache.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            assert mode == 0o700, f"{path}: {oct(mode)}"
        else:
            assert not mode & (stat.S_IWGRP | stat.S_IWOTH), f"{path}: {oct(mode)}"


def test_under_umask_000_a_c_cpu_cache_and_toolchain_hold_only_private_files(tmp_path):
    # Everything a first c_cpu compile writes (translations, builds, the support object,
    # compiler memos, the launcher) is code that will be loaded or keys that choose it.
    cache, toolchain = tmp_path / "stencilforge", tmp_path / "toolchain"
    report = _c_programs(cache, "smoothed", script_directory=tmp_path, umask=0,
                         STENCILFORGE_TOOLCHAIN_DIR=str(toolchain))
    assert report["results"]["smoothed"] == pytest.approx(_c_programs_reference()["smoothed"])
    paths = [cache, toolchain, *cache.rglob("*"), *toolchain.rglob("*")]
    assert any(p.name.endswith(".so") for p in paths)
    readable = {
        str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.lstat().st_mode))
        for p in paths
        if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) & 0o077
    }
    assert readable == {}


def test_a_cache_under_a_world_writable_parent_without_sticky_bit_is_refused(tmp_path):
    parent = tmp_path / "shared"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(PermissionError, match=r"writable by everyone.*sticky"):
        DiskStepCache(parent / "c")
    parent.chmod(0o1777)  # like /tmp: others cannot replace what is ours
    DiskStepCache(parent / "c")


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True, check=False).returncode == 0


def _tmpfs(tmp_path: Path, size: str):
    """A tmpfs of ``size`` mounted for the test (skipped where this process may not mount)."""
    point = tmp_path / "disk"
    point.mkdir()
    if not _mount("-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(point)):
        pytest.skip("mounting a tmpfs needs privileges this process lacks")
    yield point
    subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs."""
    yield from _tmpfs(tmp_path, "4m")


def test_a_read_only_cache_serves_warm_entries_and_computes_the_rest(small_disk, tmp_path):
    cache, log = small_disk / "c", tmp_path / "log"
    run(cache, log, 1, 2)
    assert _mount("-o", "remount,ro", str(small_disk))
    report, _ = run(cache, log, 1, 2, 3, 3)
    assert report["results"] == [2, 4, 6, 6]
    assert report["hits"] == 2
    assert computed(log) == ["1", "2", "3", "3"]  # the miss is computed, uncached, each time
    assert len([w for w in report["warnings"] if "cannot store new entries" in w]) == 1


def _fill(disk: Path) -> Path:
    """Write a file until ``disk`` is full; the file."""
    filler = disk / "filler"
    try:
        with open(filler, "wb") as out:
            while True:
                out.write(b"\0" * 4096)
                out.flush()
    except OSError:
        pass  # the disk is full
    return filler


def test_a_full_disk_compiles_uncached_and_damages_nothing(small_disk, tmp_path):
    cache, log = small_disk / "c", tmp_path / "log"
    run(cache, log, 1, size=100_000)
    filler = _fill(small_disk)
    report, _ = run(cache, log, 1, 2, size=100_000)
    assert report["results"] == [2, 4] and report["hits"] == 1
    assert any("cannot store new entries" in w for w in report["warnings"])
    assert computed(log) == ["1", "2"]
    filler.unlink()
    report, _ = run(cache, log, 1, 2, size=100_000)
    assert report["results"] == [2, 4]
    assert report["hits"] == 1 and report["damaged"] == 0 and report["warnings"] == []
    report, _ = run(cache, log, 1, 2, size=100_000)
    assert report["hits"] == 2 and computed(log) == ["1", "2", "2"]


@pytest.fixture
def roomy_disk(tmp_path):
    """A 64 MiB tmpfs, for a c_cpu cache."""
    yield from _tmpfs(tmp_path, "64m")


def _c_programs(cache: Path, *names: str, script_directory: Path | None = None,
                umask: int | None = None, **environment: str) -> dict:
    from cache_fault_steps import PROGRAMS  # noqa: PLC0415

    def preexec() -> None:
        if umask is not None:
            os.umask(umask)

    # Beside the mount (the DSL reads the script's source; a remount would hide it).
    script = (script_directory or cache.parent.parent) / "c_programs.py"
    script.write_text(PROGRAMS)
    done = subprocess.run(
        [sys.executable, str(script), *names], capture_output=True, text=True, timeout=300,
        env={**os.environ, "STENCILFORGE_CACHE_DIR": str(cache),
             "PYTHONPATH": os.pathsep.join(sys.path), **environment}, check=False,
        preexec_fn=preexec,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_read_only_c_cache_runs_warm_programs_and_compiles_the_others_uncached(roomy_disk):
    cache = roomy_disk / "stencilforge"
    warm = _c_programs(cache, "smoothed")
    assert _mount("-o", "remount,ro", str(roomy_disk))
    report = _c_programs(cache, "smoothed", "sharpened", "sharpened")
    assert report["results"]["smoothed"] == warm["results"]["smoothed"]
    expected = _c_programs_reference()
    assert report["results"] == pytest.approx(expected)
    assert sum("cannot store new entries" in w for w in report["warnings"]) >= 1


def _c_programs_reference() -> dict:
    import numpy as np  # noqa: PLC0415

    f = np.arange(30.0).reshape(5, 6) ** 1.5
    smooth = np.zeros_like(f)
    smooth[1:-1] = 0.5 * f[1:-1] + 0.25 * (f[:-2] + f[2:])
    sharp = np.zeros_like(f)
    sharp[:, 1:-1] = 2.0 * f[:, 1:-1] - 0.5 * (f[:, :-2] + f[:, 2:])
    return {"smoothed": float(smooth.sum()), "sharpened": float(sharp.sum())}


def test_what_a_killed_compiler_memo_write_leaves_is_swept(tmp_path):
    # A kill between writing and renaming the memo leaves its temporary in c/tmp/, where
    # the sweep of stale builds (an hour old) now removes files too.
    cache = tmp_path / "stencilforge"
    _c_programs_in(tmp_path, cache, "smoothed")
    leftover = cache / "c" / "tmp" / "compiler-0123.txt.4242.tmp"
    leftover.write_text("half a memo")
    an_hour_ago = time.time() - 3700
    os.utime(leftover, (an_hour_ago, an_hour_ago))
    _c_programs_in(tmp_path, cache, "sharpened")  # a build sweeps
    assert not leftover.exists()
    assert not list((cache / "c").glob("compiler-*.tmp"))  # none outside tmp/ either


def _c_programs_in(tmp_path: Path, cache: Path, *names: str) -> dict:
    return _c_programs(cache, *names, script_directory=tmp_path)


def test_a_full_disk_during_a_build_compiles_outside_the_cache(small_disk, tmp_path):
    cache = small_disk / "stencilforge"
    warm = _c_programs_in(tmp_path, cache, "smoothed")
    filler = _fill(small_disk)
    report = _c_programs_in(tmp_path, cache, "smoothed", "sharpened")
    assert report["results"]["smoothed"] == warm["results"]["smoothed"]
    assert report["results"] == pytest.approx(_c_programs_reference())
    assert any("building outside it, uncached" in w for w in report["warnings"])
    filler.unlink()
    again = _c_programs_in(tmp_path, cache, "smoothed", "sharpened")
    assert again["results"] == report["results"]
