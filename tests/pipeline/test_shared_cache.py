"""The shared cache level (Redis) behind each machine's disk cache.

In process with fakeredis: a second machine's empty cache is served from the fleet, builds
travel with their artifacts, damaged shared entries are rebuilt, a Redis that is down costs
one warning, an entry written with another secret is ignored once and rebuilt, a shared
cache without a secret is refused. With a real ``redis-server`` on loopback
(``requires_redis``): a fresh process's first c_cpu result without compiling, eight racing
processes compiling once, a server stopped mid-run, and someone else writing the Redis (a
planted pickle, a planted shared object with an artifact recording its hash) running no code.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import pickle
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import attrs
import pytest

from pipeline import CompiledArtifact, ProgramSource, SourceFormat
from pipeline.caching import DiskStepCache
from pipeline.errors import CacheDegradedWarning, CacheSecretError
from pipeline.shared_cache import RedisStore, SharedStepCache

fakeredis = pytest.importorskip("fakeredis")


SECRET = b"a secret the fleet's machines hold"


def shared(root: Path, server, secret: bytes = SECRET) -> SharedStepCache:
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    remote = RedisStore(client=fakeredis.FakeRedis(server=server))
    return SharedStepCache(DiskStepCache(root / "translations"), remote, root, secret=secret)


def test_an_empty_machine_is_served_by_the_fleet(tmp_path):
    server = fakeredis.FakeServer()
    calls = []
    first = shared(tmp_path / "a", server)
    assert first.get_or_compute("k", lambda: calls.append(1) or {"v": 1}) == ({"v": 1}, False)
    second = shared(tmp_path / "b", server)
    assert second.get_or_compute("k", lambda: calls.append(2) or {"v": 2}) == ({"v": 1}, True)
    assert calls == [1]
    # Now in b's local cache: served even without the fleet.
    alone = SharedStepCache(DiskStepCache(tmp_path / "b" / "translations"), None, tmp_path / "b")
    assert alone.get_or_compute("k", lambda: {"v": 3}) == ({"v": 1}, True)


def _artifact(root: Path, content: bytes) -> CompiledArtifact:
    builds = root / "c" / "builds"
    builds.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = builds / "prog.1234.so"
    path.write_bytes(content)
    source = ProgramSource(SourceFormat("c", "cpu"), "int x;", "prog")
    return CompiledArtifact(str(path), hashlib.sha256(content).hexdigest(), "prog", source)


def _intact(artifact: CompiledArtifact) -> bool:
    path = Path(artifact.path)
    return path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() == artifact.content_hash


def test_a_build_travels_with_its_artifact_into_the_other_machines_cache(tmp_path):
    server = fakeredis.FakeServer()
    built = shared(tmp_path / "a", server).get_or_compute(
        "art", lambda: _artifact(tmp_path / "a", b"\x7fELF built once"), _intact
    )[0]
    served, hit = shared(tmp_path / "b", server).get_or_compute(
        "art", lambda: pytest.fail("built again"), _intact
    )
    assert hit and served.content_hash == built.content_hash
    assert Path(served.path) == tmp_path / "b" / "c" / "builds" / "prog.1234.so"
    assert Path(served.path).read_bytes() == b"\x7fELF built once"


def test_a_build_from_the_fleet_lands_private_whatever_modes_it_travelled_with(tmp_path):
    server = fakeredis.FakeServer()

    def permissive() -> CompiledArtifact:
        artifact = _artifact(tmp_path / "a", b"\x7fELF built once")
        Path(artifact.path).chmod(0o777)
        return artifact

    shared(tmp_path / "a", server).get_or_compute("art", permissive, _intact)
    served, hit = shared(tmp_path / "b", server).get_or_compute(
        "art", lambda: pytest.fail("built again"), _intact
    )
    assert hit
    assert stat.S_IMODE(Path(served.path).stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "b" / "c").stat().st_mode) == 0o700


def test_a_damaged_shared_entry_is_rebuilt_and_replaced(tmp_path):
    server = fakeredis.FakeServer()
    shared(tmp_path / "a", server).get_or_compute("k", lambda: "good")
    client = fakeredis.FakeRedis(server=server)
    stored = client.get("stencilforge:k")
    client.set("stencilforge:k", stored[:-3] + b"bad")
    with pytest.warns(CacheDegradedWarning, match=r"ignoring the shared cache's entry k"):
        value, hit = shared(tmp_path / "b", server).get_or_compute("k", lambda: "rebuilt")
    assert (value, hit) == ("rebuilt", False)
    assert shared(tmp_path / "c", server).get_or_compute("k", lambda: "again") == ("rebuilt", True)


def test_an_entry_written_with_another_secret_is_ignored_once_and_rebuilt(tmp_path):
    server = fakeredis.FakeServer()
    marker = tmp_path / "planted-code-ran"
    other = b"a secret of somebody else's fleet"
    shared(tmp_path / "a", server, other).get_or_compute("k", lambda: _Planted(marker))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value, hit = shared(tmp_path / "b", server).get_or_compute("k", lambda: "rebuilt")
    assert (value, hit) == ("rebuilt", False) and not marker.exists()
    ignored = [w for w in caught if "ignoring the shared cache's entry k" in str(w.message)]
    assert len(ignored) == 1 and "MAC does not verify" in str(ignored[0].message)
    assert shared(tmp_path / "c", server).get_or_compute("k", lambda: "again") == ("rebuilt", True)


def test_a_shared_cache_without_a_secret_is_refused_with_what_to_do(tmp_path, monkeypatch):
    from backends.cache import step_cache  # noqa: PLC0415

    monkeypatch.delenv("STENCILFORGE_CACHE_SECRET", raising=False)
    monkeypatch.delenv("STENCILFORGE_CACHE_SECRET_FILE", raising=False)
    url = "redis://fleet:hunter2hunter2@127.0.0.1:1/0"
    with pytest.raises(CacheSecretError, match="Set STENCILFORGE_CACHE_SECRET") as refused:
        step_cache(tmp_path / "translations", tmp_path, url)
    assert "hunter2" not in str(refused.value)  # the URL is shown without its password
    monkeypatch.setenv("STENCILFORGE_CACHE_SECRET", "short")
    with pytest.raises(CacheSecretError, match="its secret has 5 bytes"):
        step_cache(tmp_path / "translations", tmp_path, url)
    with pytest.raises(CacheSecretError, match="at least 16 bytes"):
        shared(tmp_path, fakeredis.FakeServer(), b"")


def _dace_cpu_pipeline(cache_directory, **shared):
    from backends.c import c_cpu_pipeline  # noqa: PLC0415
    from backends.dace import dace_cpu_pipeline  # noqa: PLC0415  (DaCe itself is not imported)

    return dace_cpu_pipeline(c_cpu_pipeline(cache_directory, cache_url=""), cache_directory, **shared)


@pytest.mark.parametrize(
    "factory",
    [
        "backends.c.c_cpu_pipeline",
        "backends.cuda.cuda_gpu_pipeline",
        "backends.cuda.emulation.cuda_emulated_pipeline",
        _dace_cpu_pipeline,
    ],
)
def test_a_compiled_pipeline_takes_the_shared_cache_and_its_secret_as_keywords(
    tmp_path, monkeypatch, factory
):
    if isinstance(factory, str):
        module, name = factory.rsplit(".", 1)
        factory = getattr(importlib.import_module(module), name)
    monkeypatch.delenv("STENCILFORGE_CACHE_SECRET", raising=False)
    monkeypatch.delenv("STENCILFORGE_CACHE_SECRET_FILE", raising=False)
    monkeypatch.delenv("STENCILFORGE_CACHE_URL", raising=False)
    url = "redis://127.0.0.1:1/0"  # never connected to: nothing is looked up
    pipeline = factory(tmp_path / "cache", cache_url=url, cache_secret=SECRET)
    assert pipeline.compilation.cache.secret == SECRET
    assert pipeline.translation.cache.secret == SECRET
    with pytest.raises(CacheSecretError, match="no secret is set"):
        factory(tmp_path / "cache", cache_url=url)
    assert isinstance(factory(tmp_path / "cache", cache_url="").compilation.cache, DiskStepCache)
    with pytest.raises(TypeError, match="cache_ulr"):
        factory(tmp_path / "cache", cache_ulr=url)  # a misspelled keyword is not ignored


def test_a_secret_file_others_can_read_is_refused(tmp_path, monkeypatch):
    from backends.cache import cache_secret  # noqa: PLC0415

    secret_file = tmp_path / "fleet.key"
    secret_file.write_text("a secret in a file, 32 bytes long\n")
    monkeypatch.delenv("STENCILFORGE_CACHE_SECRET", raising=False)
    monkeypatch.setenv("STENCILFORGE_CACHE_SECRET_FILE", str(secret_file))
    secret_file.chmod(0o644)
    with pytest.raises(CacheSecretError, match=f"chmod 600 {secret_file}"):
        cache_secret()
    secret_file.chmod(0o600)
    assert cache_secret() == b"a secret in a file, 32 bytes long"


def test_a_worker_reopens_the_shared_cache_with_its_own_secret(tmp_path, monkeypatch):
    root = tmp_path / "a"
    root.mkdir(mode=0o700)
    url = "redis://127.0.0.1:1/0"  # never connected to: nothing is looked up
    cache = SharedStepCache(
        DiskStepCache(root / "translations"), RedisStore(url), root, secret=SECRET
    )
    sent = pickle.dumps(cache)
    assert SECRET not in sent  # the secret never travels in a task
    monkeypatch.setenv("STENCILFORGE_CACHE_SECRET", SECRET.decode())
    assert pickle.loads(sent).secret == SECRET
    monkeypatch.delenv("STENCILFORGE_CACHE_SECRET")
    with pytest.raises(CacheSecretError, match="no secret is set"):
        pickle.loads(sent)


def test_a_redis_that_is_down_costs_one_warning_and_no_wait(tmp_path):
    server = fakeredis.FakeServer()
    server.connected = False
    cache = shared(tmp_path / "a", server)
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.get_or_compute("k", lambda: 1) == (1, False)
        assert cache.get_or_compute("j", lambda: 2) == (2, False)
    assert time.perf_counter() - started < 5
    assert len([w for w in caught if "unavailable" in str(w.message)]) == 1
    assert cache.get_or_compute("k", lambda: 3) == (1, True)  # the local cache kept it


def test_a_redis_that_goes_down_while_another_machine_holds_the_lock_degrades(tmp_path):
    server = fakeredis.FakeServer()
    fakeredis.FakeRedis(server=server).set("stencilforge:lock:k", "another machine's token")

    class DownAfterTheLockIsRefused(fakeredis.FakeRedis):
        def set(self, *args, **kwargs):
            answer = super().set(*args, **kwargs)
            server.connected = False
            return answer

    root = tmp_path / "a"
    root.mkdir(mode=0o700)
    remote = RedisStore(client=DownAfterTheLockIsRefused(server=server))
    cache = SharedStepCache(DiskStepCache(root / "translations"), remote, root, secret=SECRET)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.get_or_compute("k", lambda: 1) == (1, False)
    assert len([w for w in caught if "unavailable" in str(w.message)]) == 1


# --------------------------------------------------------------------------- a real server


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path):
    """A redis-server on loopback for this test (skipped where there is none)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (.ci/run installs the Debian package)")
    port = _free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    import redis  # noqa: PLC0415

    client = redis.Redis(port=port, socket_timeout=1)
    for _ in range(100):
        try:
            if client.ping():
                break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0", server
    server.kill()
    server.wait()


PROGRAM = textwrap.dedent('''
    import json, sys, time, warnings
    recording = warnings.catch_warnings(record=True)
    caught = recording.__enter__()
    warnings.simplefilter("always")
    import numpy as np
    import backends
    from pipeline.dsl import Dimension, Field, field_operator, float64, program
    from pipeline import subscribe

    I, J = Dimension("I"), Dimension("J")
    IJ = Field[[I, J], float64]

    @field_operator
    def smooth(f: IJ) -> IJ:
        return 0.5 * f + 0.25 * (f(I - 1) + f(I + 1))

    @program(backend=backends.c_cpu)
    def smoothed(f: IJ, out: IJ):
        smooth(f, out=out[1:-1, :])

    compiled = []
    with subscribe(lambda e: compiled.append(e.cache_hit) if e.stage == "compilation" else None):
        f = np.arange(30.0).reshape(5, 6) ** 1.5
        out = np.zeros_like(f)
        started = time.perf_counter()
        smoothed(f, out)
        seconds = time.perf_counter() - started
    print(json.dumps({"sum": float(out.sum()), "compiled": [not hit for hit in compiled],
                      "seconds": seconds, "warnings": [str(w.message) for w in caught]}))
''')


FLEET_SECRET = "the fleet's secret, 32 bytes long"


def _run(tmp_path: Path, cache: Path, url: str, secret: str = FLEET_SECRET) -> subprocess.Popen:
    script = tmp_path / f"smoothed_{cache.name}.py"  # one per process: none reads a rewrite
    script.write_text(PROGRAM)
    return subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "STENCILFORGE_CACHE_DIR": str(cache),
                        "STENCILFORGE_CACHE_URL": url, "STENCILFORGE_CACHE_SECRET": secret},
    )


def _report(process: subprocess.Popen) -> dict:
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.requires_redis
def test_a_fresh_machine_gets_its_first_result_from_the_fleet_without_compiling(
    tmp_path, redis_url
):
    url, _ = redis_url
    built = _report(_run(tmp_path, tmp_path / "machine-a", url))
    assert built["compiled"] == [True]
    served = _report(_run(tmp_path, tmp_path / "machine-b", url))
    assert served["compiled"] == [False] and served["sum"] == built["sum"]
    assert list((tmp_path / "machine-b" / "c" / "builds").iterdir())


@pytest.mark.requires_redis
def test_eight_machines_racing_compile_once(tmp_path, redis_url):
    url, _ = redis_url
    processes = [_run(tmp_path, tmp_path / f"machine-{n}", url) for n in range(8)]
    reports = [_report(p) for p in processes]
    degraded = [w for r in reports for w in r["warnings"] if "unavailable" in w]
    assert not degraded, degraded  # (a loaded machine's Redis answering after the timeout)
    assert sum(r["compiled"] == [True] for r in reports) == 1
    assert len({r["sum"] for r in reports}) == 1


@pytest.mark.requires_redis
def test_a_redis_stopped_mid_run_degrades_to_the_local_cache(tmp_path, redis_url):
    url, server = redis_url
    _report(_run(tmp_path, tmp_path / "machine-a", url))
    server.kill()
    server.wait()
    report = _report(_run(tmp_path, tmp_path / "machine-b", url))
    assert report["compiled"] == [True]
    assert sum("is unavailable" in w for w in report["warnings"]) == 1


# ------------------------------------------------------------- someone else writes the Redis


class _Planted:
    """A pickle that, when loaded, leaves ``marker`` behind (the attacker's code ran)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


def _forged(stored: bytes, payload: bytes) -> bytes:
    """``stored`` with its payload replaced, resealed as anyone with Redis access can: the
    magic line and the key kept, the SHA-256 of the new payload where the seal was."""
    magic, key, _seal, _payload = stored.split(b"\n", 3)
    return b"\n".join((magic, key, hashlib.sha256(payload).hexdigest().encode(), payload))


def _entries(url: str):
    import redis  # noqa: PLC0415

    client = redis.Redis.from_url(url)
    names = [n for n in client.keys("stencilforge:*") if not n.startswith(b"stencilforge:lock:")]
    assert names, "machine A published nothing"
    return client, names


@pytest.mark.requires_redis
def test_a_pickle_planted_in_the_shared_cache_never_runs(tmp_path, redis_url):
    url, _ = redis_url
    marker = tmp_path / "planted-code-ran"
    built = _report(_run(tmp_path, tmp_path / "machine-a", url))
    client, names = _entries(url)
    for name in names:
        client.set(name, _forged(client.get(name), pickle.dumps(_Planted(marker))))
    served = _report(_run(tmp_path, tmp_path / "machine-b", url))
    assert not marker.exists()
    assert served["sum"] == built["sum"] and served["compiled"] == [True]
    # One warning per planted entry read (B tunes its own translation, and under load may
    # choose another variant than A: then it never asks for A's artifact).
    ignored = [w for w in served["warnings"] if "ignoring the shared cache's entry" in w]
    assert 1 <= len(ignored) == len(set(ignored)), served["warnings"]
    assert all("MAC does not verify" in w for w in ignored)


def _planted_library(tmp_path: Path, marker: Path) -> bytes:
    """A shared object that leaves ``marker`` behind when it is loaded."""
    source = tmp_path / "planted.c"
    source.write_text(
        "#include <stdio.h>\n"
        "__attribute__((constructor)) static void planted(void) {\n"
        f'    FILE *f = fopen("{marker}", "w"); if (f) fclose(f);\n'
        "}\n"
    )
    library = tmp_path / "planted.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library.read_bytes()


@pytest.mark.requires_redis
def test_a_shared_object_planted_with_an_artifact_recording_its_hash_is_never_loaded(
    tmp_path, redis_url
):
    import tarfile  # noqa: PLC0415

    url, _ = redis_url
    marker = tmp_path / "planted-library-loaded"
    planted = _planted_library(tmp_path, marker)
    built = _report(_run(tmp_path, tmp_path / "machine-a", url))
    client, names = _entries(url)
    replaced = 0
    for name in names:
        stored = client.get(name)
        travelled = pickle.loads(stored.split(b"\n", 3)[3])  # the attacker reads it as-is
        kind, artifact, library, packed = travelled
        if kind != "artifact":
            continue
        archive = io.BytesIO()
        with (
            tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as original,
            tarfile.open(fileobj=archive, mode="w:gz") as forged,
        ):
            for member in original.getmembers():
                if member.name == library:
                    member.size = len(planted)
                    forged.addfile(member, io.BytesIO(planted))
                else:
                    forged.addfile(member, original.extractfile(member))
        artifact = attrs.evolve(artifact, content_hash=hashlib.sha256(planted).hexdigest())
        payload = pickle.dumps((kind, artifact, library, archive.getvalue()))
        client.set(name, _forged(stored, payload))
        replaced += 1
    assert replaced == 1
    served = _report(_run(tmp_path, tmp_path / "machine-b", url))
    assert not marker.exists()
    assert served["sum"] == built["sum"] and served["compiled"] == [True]
    # B took A's translation (intact), so it asked for the planted artifact and refused it.
    ignored = [w for w in served["warnings"] if "ignoring the shared cache's entry" in w]
    assert len(ignored) == 1 and "MAC does not verify" in ignored[0], served["warnings"]
