"""Every ``STENCILFORGE_*`` variable, read here and nowhere else, each when asked.

Nothing is read at import except ``STENCILFORGE_METRICS``; every other variable is read by
its function below, at the moment the table names, so a test or a program that sets one
before that moment is obeyed. The README's table of environment variables says the same for
users.

| variable | function | read when |
|---|---|---|
| ``STENCILFORGE_CACHE_DIR`` | ``cache_dir`` | a pipeline is made; a build is published |
| ``STENCILFORGE_TOOLCHAIN_DIR`` | ``toolchain_dir`` | a pipeline is made |
| ``STENCILFORGE_CACHE_MAX_SIZE`` | ``cache_max_size`` | a build is published; ``cache`` runs |
| ``STENCILFORGE_CACHE_URL`` | ``cache_url`` | a pipeline is made |
| ``STENCILFORGE_CACHE_SECRET`` | ``cache_secret`` | a pipeline is made |
| ``STENCILFORGE_CACHE_SECRET_FILE`` | ``cache_secret`` | a pipeline is made |
| ``STENCILFORGE_BUILD_JOBS`` | ``build_jobs`` | ``compile_many`` runs without ``executor=`` |
| ``STENCILFORGE_DUMP_STAGES`` | ``dump_stages`` | a program is compiled |
| ``STENCILFORGE_TUNING`` | ``tuning`` | a pipeline is made |
| ``STENCILFORGE_METRICS`` | ``metrics`` | ``pipeline.metrics`` is imported (once) |

("a pipeline is made": a backend's, e.g. ``c_cpu`` on first use; ``cache`` is the
``stencilforge cache`` command.) What each means, and its default, is in the README's table
and in the function's docstring.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pipeline.errors import CacheSecretError

__all__ = [
    "BUILD_JOBS_VARIABLE",
    "CACHE_DIR_VARIABLE",
    "CACHE_MAX_SIZE_VARIABLE",
    "CACHE_SECRET_FILE_VARIABLE",
    "CACHE_SECRET_VARIABLE",
    "CACHE_URL_VARIABLE",
    "DUMP_STAGES_VARIABLE",
    "METRICS_VARIABLE",
    "TOOLCHAIN_DIR_VARIABLE",
    "TUNING_SCHEDULES",
    "TUNING_VARIABLE",
    "build_jobs",
    "cache_dir",
    "cache_max_size",
    "cache_secret",
    "cache_url",
    "dump_stages",
    "metrics",
    "toolchain_dir",
    "tuning",
]

CACHE_DIR_VARIABLE = "STENCILFORGE_CACHE_DIR"
TOOLCHAIN_DIR_VARIABLE = "STENCILFORGE_TOOLCHAIN_DIR"
CACHE_MAX_SIZE_VARIABLE = "STENCILFORGE_CACHE_MAX_SIZE"
CACHE_URL_VARIABLE = "STENCILFORGE_CACHE_URL"
CACHE_SECRET_VARIABLE = "STENCILFORGE_CACHE_SECRET"
CACHE_SECRET_FILE_VARIABLE = "STENCILFORGE_CACHE_SECRET_FILE"
BUILD_JOBS_VARIABLE = "STENCILFORGE_BUILD_JOBS"
DUMP_STAGES_VARIABLE = "STENCILFORGE_DUMP_STAGES"
METRICS_VARIABLE = "STENCILFORGE_METRICS"
TUNING_VARIABLE = "STENCILFORGE_TUNING"

#: What ``STENCILFORGE_TUNING`` may say, the default first (``backends.c.tuning``, ADR 0009).
TUNING_SCHEDULES = ("exit", "now", "off")


def _path(variable: str) -> Path | None:
    configured = os.environ.get(variable)
    return Path(configured).expanduser() if configured else None


def cache_dir() -> Path | None:
    """The build cache's directory (``STENCILFORGE_CACHE_DIR``), read now; None when unset
    (the backends then use the per-user cache directory)."""
    return _path(CACHE_DIR_VARIABLE)


def toolchain_dir() -> Path | None:
    """Where toolchain-only build products live (``STENCILFORGE_TOOLCHAIN_DIR``), read now,
    made absolute; None when unset."""
    configured = _path(TOOLCHAIN_DIR_VARIABLE)
    return configured.absolute() if configured is not None else None


def cache_max_size() -> str:
    """The text of the cache's size bound (``STENCILFORGE_CACHE_MAX_SIZE``), read now, as
    written (``"4G"``); ``""`` when unset. Parsing it is the cache inventory's job."""
    return os.environ.get(CACHE_MAX_SIZE_VARIABLE, "")


def build_jobs() -> str:
    """Where ``compile_many`` compiles without ``executor=`` (``STENCILFORGE_BUILD_JOBS``),
    read now, stripped; ``""`` when unset (serial)."""
    return os.environ.get(BUILD_JOBS_VARIABLE, "").strip()


def dump_stages() -> Path | None:
    """The directory that receives every stage artifact of every compile
    (``STENCILFORGE_DUMP_STAGES``), read now; None when unset."""
    return _path(DUMP_STAGES_VARIABLE)


def metrics() -> bool:
    """Whether ``STENCILFORGE_METRICS`` asks for per-call metrics (``1``, ``true``, ``yes``,
    ``on``), read now (``pipeline.metrics`` asks once, when it is imported)."""
    return os.environ.get(METRICS_VARIABLE, "").lower() in {"1", "true", "yes", "on"}


def tuning() -> str:
    """When c_cpu measures the variants of a stencil it has no choice record for
    (``STENCILFORGE_TUNING``), read now, lower-cased: ``"exit"`` (the default: build the
    predicted variant at once, measure when the interpreter exits), ``"now"`` (measure
    before the first build) or ``"off"`` (predict, never measure).

    Raises:
        ValueError: another value; the message lists the values.
    """
    value = os.environ.get(TUNING_VARIABLE, "").strip().lower() or TUNING_SCHEDULES[0]
    if value not in TUNING_SCHEDULES:
        raise ValueError(
            f"{TUNING_VARIABLE}={value!r} is not a tuning schedule: set it to one of "
            f"{', '.join(TUNING_SCHEDULES)} or unset it"
        )
    return value


def cache_url() -> str:
    """The shared cache's URL (``STENCILFORGE_CACHE_URL``), read now; ``""`` for none."""
    return os.environ.get(CACHE_URL_VARIABLE, "")


def cache_secret() -> bytes | None:
    """The fleet's secret for the shared cache's entries, read now: ``STENCILFORGE_CACHE_SECRET``
    (the value) or the contents of ``STENCILFORGE_CACHE_SECRET_FILE`` (surrounding whitespace
    dropped); None when neither is set.

    Raises:
        CacheSecretError: both are set, or the file cannot be read or is readable or
            writable by group or others; the message names the file and what to do.
    """
    value = os.environ.get(CACHE_SECRET_VARIABLE, "")
    path = os.environ.get(CACHE_SECRET_FILE_VARIABLE, "")
    if value and path:
        raise CacheSecretError(
            f"both {CACHE_SECRET_VARIABLE} and {CACHE_SECRET_FILE_VARIABLE} are set; "
            "set one of them"
        )
    if value:
        return value.encode()
    if not path:
        return None
    secret_file = Path(path).expanduser()
    try:
        mode = secret_file.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise CacheSecretError(
                f"the shared cache's secret file {secret_file} ({CACHE_SECRET_FILE_VARIABLE}) "
                f"can be read or written by group or others (mode {stat.filemode(mode)}); "
                f"whoever reads it can run code on every machine of the fleet: run "
                f"`chmod 600 {secret_file}` and choose a new secret"
            )
        return secret_file.read_bytes().strip()
    except OSError as error:
        raise CacheSecretError(
            f"the shared cache's secret file {secret_file} ({CACHE_SECRET_FILE_VARIABLE}) "
            f"cannot be read: {error}"
        ) from error
