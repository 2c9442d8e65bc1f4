"""How fast a new process gets its first hdiff result from each cache level.

``python -m benchmarks.cache_warm_start [--runs N]`` starts a ``redis-server`` on loopback
and, per run, times whole new processes (interpreter start to first result) that call c_cpu's
hdiff on 16x16x8:

- ``cold``: an empty cache (translation and compilation, written through to Redis);
- ``local warm``: the same cache again;
- ``fleet warm``: an empty local cache with the same Redis (the build travels);

then, in this process, what checking a warm entry costs: opening the stored translation and
artifact entries (key and SHA-256 checked, then unpickled) against unpickling alone.
"""

from __future__ import annotations

import argparse
import os
import pickle
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CHILD = textwrap.dedent('''
    import numpy as np
    import backends
    from benchmarks.workloads import WORKLOADS

    workload = WORKLOADS["hdiff"]
    arguments = workload.host_arguments((16, 16, 8))
    workload.program.with_backend(backends.c_cpu)(*[arguments[n] for n in workload.parameters])
''')


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# The fleet's secret of this benchmark's own Redis (entries are authenticated with it).
_SECRET = secrets.token_hex(32)


def _process_seconds(cache: Path, url: str, script: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(script)],
        check=True,
        env={
            **os.environ,
            "STENCILFORGE_CACHE_DIR": str(cache),
            "STENCILFORGE_CACHE_URL": url,
            "STENCILFORGE_CACHE_SECRET": _SECRET,
        },
    )
    return time.perf_counter() - started


def _check_cost(cache: Path) -> tuple[float, float]:
    """Seconds to open every stored entry with its checks, and to unpickle it alone."""
    import diskcache  # noqa: PLC0415

    from pipeline.caching import open_entry  # noqa: PLC0415

    entries = []
    for store in sorted(cache.glob("*/entries")):
        with diskcache.Cache(str(store)) as opened:
            entries += [(key, opened.get(key)) for key in opened.iterkeys()]
    repeats = 200
    started = time.perf_counter()
    for _ in range(repeats):
        for key, sealed in entries:
            open_entry(key, sealed)
    checked = (time.perf_counter() - started) / repeats
    payloads = [sealed.split(b"\n", 3)[3] for _, sealed in entries]
    started = time.perf_counter()
    for _ in range(repeats):
        for payload in payloads:
            pickle.loads(payload)
    plain = (time.perf_counter() - started) / repeats
    return checked, plain


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args(argv)
    binary = shutil.which("redis-server")
    if binary is None:
        print("redis-server is not installed (Debian package redis-server)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        port = _free_port()
        server = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", scratch],
            stdout=subprocess.DEVNULL,
        )
        try:
            time.sleep(0.3)
            script = root / "hdiff_first_result.py"
            script.write_text(CHILD)
            rows: dict[str, list[float]] = {"cold": [], "local warm": [], "fleet warm": []}
            for run in range(options.runs):
                url = f"redis://127.0.0.1:{port}/{run}"
                rows["cold"].append(_process_seconds(root / f"a{run}", url, script))
                rows["local warm"].append(_process_seconds(root / f"a{run}", url, script))
                rows["fleet warm"].append(_process_seconds(root / f"b{run}", url, script))
            checked, plain = _check_cost(root / "a0")
        finally:
            server.kill()
            server.wait()
    print("first hdiff result (16x16x8, c_cpu) in a new process, medians of", options.runs)
    for name, seconds in rows.items():
        print(f"  {name:<11} {statistics.median(seconds) * 1e3:8.1f} ms   {seconds}")
    local, fleet = statistics.median(rows["local warm"]), statistics.median(rows["fleet warm"])
    print(f"  fleet warm / local warm: {fleet / local:.2f}x")
    print(
        f"checking the warm entries (key, SHA-256, then unpickling): {checked * 1e6:.0f} us "
        f"against {plain * 1e6:.0f} us unpickling alone"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
