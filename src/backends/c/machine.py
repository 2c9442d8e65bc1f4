"""Which machine a measured choice belongs to.

A choice between code variants (``backends.c.variants``) measured on one machine says
nothing about another: the winner depends on the CPU (model, vector extensions), how many
cores the stencils may use, and the caches. ``machine_identity()`` names all of these in one
digest; choice records and automatic translations are keyed by it, so a build chosen on
another machine is never served here.
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

from pipeline.fingerprint import fingerprint

__all__ = [
    "l1_data_cache_bytes",
    "last_level_cache_bytes",
    "machine_description",
    "machine_identity",
    "usable_cores",
]


def usable_cores() -> int:
    """The cores the stencils' OpenMP threads run on: ``OMP_NUM_THREADS`` when set to a
    number, else the CPUs this process may use."""
    configured = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpuinfo() -> tuple[str, str]:
    """The first CPU's model name and feature flags (Linux), else the platform's words."""
    model, flags = "", ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in {"model name", "Hardware", "cpu model"} and not model:
                    model = value.strip()
                elif key in {"flags", "Features"} and not flags:
                    flags = " ".join(sorted(value.split()))
                if model and flags:
                    break
    except OSError:
        pass
    return model or platform.processor() or platform.machine(), flags


@functools.cache
def _cache_sizes() -> tuple[str, ...]:
    """The first CPU's caches as ``level/type/size`` (sysfs; empty where it does not say)."""
    sizes = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            parts = [(index / name).read_text().strip() for name in ("level", "type", "size")]
        except OSError:
            continue
        sizes.append("/".join(parts))
    return tuple(sizes)


@functools.cache
def _identity(cores: int) -> tuple[str, str]:
    model, flags = _cpuinfo()
    caches = _cache_sizes()
    description = f"{model}, {cores} core(s), caches {' '.join(caches) or 'unknown'}"
    return description, fingerprint((model, flags, cores, caches, platform.machine()))[:24]


def machine_description() -> str:
    """This machine in words, as a choice record names it (CPU model, cores, caches)."""
    return _identity(usable_cores())[0]


def machine_identity() -> str:
    """A digest of what makes a measured choice hold: the CPU model and feature flags, the
    cores the stencils may use, the cache sizes and the architecture."""
    return _identity(usable_cores())[1]


def _cache_bytes(levels: set[str]) -> int | None:
    """The largest data (or unified) cache of the first CPU among ``levels``, in bytes."""
    found = []
    for entry in _cache_sizes():
        level, kind, size = entry.split("/", 2)
        size = size.upper()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1:], 1)
        digits = size.rstrip("KMG")
        if level in levels and kind in {"Data", "Unified"} and digits.isdigit():
            found.append(int(digits) * scale)
    return max(found, default=None)


def l1_data_cache_bytes() -> int:
    """The first CPU's level-1 data cache (sysfs), 32 KiB where it does not say."""
    return _cache_bytes({"1"}) or 32 * 2**10


def last_level_cache_bytes() -> int:
    """The first CPU's largest data cache (sysfs), 32 MiB where it does not say."""
    return _cache_bytes({"1", "2", "3", "4"}) or 32 * 2**20
