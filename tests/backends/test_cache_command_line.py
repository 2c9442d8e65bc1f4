"""``stencilforge cache info | clear | prune`` and the cache's size bound, on real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import attrs
import numpy as np
import pytest

import backends
from backends.cache_inventory import inventory, parse_size
from pipeline.dsl import Dimension, Field, field_operator, float64, program

PROGRAMS = textwrap.dedent('''
    import sys
    import numpy as np
    import backends
    from pipeline.dsl import Dimension, Field, field_operator, float64, program

    I = Dimension("I")
    F = Field[[I], float64]

    def make(weight):
        @field_operator
        def weighted(f: F) -> F:
            return weight * f(I - 1) + f

        @program(backend=backends.c_cpu)
        def run(f: F, out: F):
            weighted(f, out=out[1:])

        return run

    f = np.arange(10.0)
    for name in sys.argv[1:]:
        out = np.zeros(10)
        make(float(name))(f, out)
        assert out[1:].tolist() == (float(name) * f[:-1] + f[1:]).tolist(), name
    print("ok")
''')


def run_programs(tmp_path: Path, cache: Path, *weights: str, **env: str) -> None:
    script = tmp_path / "weighted.py"
    script.write_text(PROGRAMS)
    done = subprocess.run([sys.executable, str(script), *weights], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "STENCILFORGE_CACHE_DIR": str(cache), **env})
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def command(cache: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "backends.command_line", *args],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "STENCILFORGE_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def sizes(cache: Path) -> dict[str, tuple[int, int]]:
    return {part.name: (part.size, part.entries) for part in inventory(cache)}


def test_info_shows_location_parts_entries_and_counts(tmp_path):
    cache = tmp_path / "cache"
    run_programs(tmp_path, cache, "1", "2")
    run_programs(tmp_path, cache, "1")
    text = command(cache, "cache", "info")
    assert f"build cache: {cache}" in text
    rows = {line.split()[0]: line.split() for line in text.splitlines()[3:] if line.strip()}
    assert rows["translations"][3] == "2" and rows["artifacts"][3] == "2"  # entries
    assert int(rows["artifacts"][4]) >= 1  # the second process hit
    assert rows["c/builds"][3] == "2"
    assert "bound 4.0 GiB (STENCILFORGE_CACHE_MAX_SIZE)" in text


def test_prune_removes_the_least_recently_used_with_their_builds(tmp_path):
    cache = tmp_path / "cache"
    for weight in ("1", "2", "3"):
        run_programs(tmp_path, cache, weight)
    run_programs(tmp_path, cache, "1")  # 1 is now the most recently used
    before = sizes(cache)
    builds = sorted((cache / "c" / "builds").iterdir())
    budget = sum(size for size, _ in before.values()) - before["c/builds"][0] // 3
    command(cache, "cache", "prune", "--max-size", str(budget))
    after = sizes(cache)
    assert sum(size for size, _ in after.values()) <= budget
    assert after["artifacts"][1] == 2 and after["c/builds"][1] == 2
    assert len([b for b in builds if b.exists()]) == 2
    run_programs(tmp_path, cache, "1", "2", "3")  # every program still runs (one rebuilt)


def test_pruning_a_build_a_process_has_loaded_does_not_disturb_it(tmp_path):
    cache = tmp_path / "cache"
    script = tmp_path / "loaded.py"
    script.write_text(PROGRAMS.replace('print("ok")', textwrap.dedent('''
        import subprocess
        subprocess.run([sys.executable, "-m", "backends.command_line", "cache", "clear"],
                       check=True)
        for name in sys.argv[1:]:   # the same programs, their builds gone from the disk
            out = np.zeros(10)
            make(float(name))(f, out)
            assert out[1:].tolist() == (float(name) * f[:-1] + f[1:]).tolist(), name
        print("ok")
    ''')))
    done = subprocess.run([sys.executable, str(script), "4"], capture_output=True, text=True,
                          timeout=300, check=False,
                          env={**os.environ, "STENCILFORGE_CACHE_DIR": str(cache)})
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_clear_empties_the_cache_and_programs_rebuild(tmp_path):
    cache = tmp_path / "cache"
    run_programs(tmp_path, cache, "5", "6")
    text = command(cache, "cache", "clear")
    assert text.startswith("freed ")
    assert all(entries == 0 for _, entries in sizes(cache).values())
    run_programs(tmp_path, cache, "5")
    assert sizes(cache)["c/builds"][1] == 1


def test_the_size_bound_holds_as_programs_are_built(tmp_path):
    cache = tmp_path / "cache"
    run_programs(tmp_path, cache, "1")
    one_program = sum(size for size, _ in sizes(cache).values())
    bound = 2 * one_program
    run_programs(tmp_path, cache, "2", "3", "4", "5", "6",
                 STENCILFORGE_CACHE_MAX_SIZE=str(bound))
    total = sum(size for size, _ in sizes(cache).values())
    assert total <= bound + one_program  # pruned after each publish that went over
    assert sizes(cache)["c/builds"][1] < 6


@pytest.mark.parametrize(("text", "size"), [
    ("123", 123), ("1K", 1024), ("1.5m", 1536 * 1024), ("4G", 4 * 1024**3), ("2GiB", 2 * 1024**3),
    ("10 MB", 10 * 1024**2),
])
def test_sizes_are_written_with_binary_units(text, size):
    assert parse_size(text) == size


def test_a_bad_size_says_how_to_write_one():
    with pytest.raises(ValueError, match=r"not a size; write bytes, or a number with K, M, G"):
        parse_size("lots")


def test_a_build_directory_outside_the_cache_prunes_nothing_beside_it(tmp_path, monkeypatch):
    # A build directory of the user's own, in a shared parent (think /tmp), with a bound the
    # first build exceeds: the bound is the cache directory's, and nothing beside is touched.
    bystander = tmp_path / "someone-else" / "builds" / "old-build"
    bystander.parent.mkdir(parents=True)
    bystander.write_text("not ours")
    hours_ago = time.time() - 7200
    os.utime(bystander, (hours_ago, hours_ago))
    monkeypatch.setenv("STENCILFORGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("STENCILFORGE_CACHE_MAX_SIZE", "1")
    mine = tmp_path / "mine"
    backend = attrs.evolve(
        backends.c_cpu,
        name="c_cpu_own_directory",
        pipeline=backends.c_cpu.pipeline.evolve_step("compilation", build_directory=str(mine)),
    )
    inp, out = np.arange(10.0), np.zeros(10)
    _weighted_sum().with_backend(backend)(inp, out)
    assert out[1:].tolist() == (2.0 * inp[:-1] + inp[1:]).tolist()
    assert bystander.read_text() == "not ours"
    assert any((mine / "builds").iterdir())  # the build is kept where the user said


I = Dimension("I")
F = Field[[I], float64]


def _weighted_sum():
    @field_operator
    def weighted(f: F) -> F:
        return 2.0 * f(I - 1) + f

    @program
    def run(f: F, out: F):
        weighted(f, out=out[1:])

    return run
