"""The ``STENCILFORGE_*`` variables the framework reads, each read here, when asked.

| variable | read by | meaning |
|---|---|---|
| ``STENCILFORGE_CACHE_URL`` | ``cache_url`` | the fleet's shared cache (``redis://host:port/db``) |
| ``STENCILFORGE_CACHE_SECRET`` | ``cache_secret`` | the secret that authenticates its entries |
| ``STENCILFORGE_CACHE_SECRET_FILE`` | ``cache_secret`` | a file (mode 600) holding the secret |

The others are read where they apply: ``STENCILFORGE_BUILD_JOBS`` (``pipeline.runners``),
``STENCILFORGE_METRICS`` (``pipeline.metrics``), ``STENCILFORGE_DUMP_STAGES``
(``pipeline.events``), and the backends' own (``backends.cache``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pipeline.errors import CacheSecretError

__all__ = [
    "CACHE_SECRET_FILE_VARIABLE",
    "CACHE_SECRET_VARIABLE",
    "CACHE_URL_VARIABLE",
    "cache_secret",
    "cache_url",
]

CACHE_URL_VARIABLE = "STENCILFORGE_CACHE_URL"
CACHE_SECRET_VARIABLE = "STENCILFORGE_CACHE_SECRET"
CACHE_SECRET_FILE_VARIABLE = "STENCILFORGE_CACHE_SECRET_FILE"


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
