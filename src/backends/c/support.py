"""The support object: the C helpers programs call but do not inline, compiled once.

The threads' scratch blocks (``backends.c.scratch``, with ``<pthread.h>`` and ``<stdlib.h>``)
and the streamed copy of a row (``backends.c.streaming``) are the same code in every program.
Compiled into each unit, they cost hdiff's cold build about a fifth of its time. Instead they
are one object file per compilation (compiler, flags, machine), built the first time a
program needs it and published beside that compilation's builds the way a program is (in
``<cache>/c/support/``, which the cache's inventory, pruning and clearing leave alone, as they
leave the launcher):

    builds/sf_support.<key>/sf_support.o     the object
    builds/sf_support.<key>/COMPLETE         its SHA-256, written before the folder's publish

Every build links a copy of the object that was checked against the recorded hash first
(``copy_into``), so a damaged or altered object is never linked into a program: it is removed
with a logged warning and built again. Units hold only declarations (``scratch.SCRATCH_C``,
``streaming.STREAM_ROW_C``); the symbols are hidden, so each program keeps its own.
"""

from __future__ import annotations

import functools
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

from backends.build_cache import COMPLETE_MARKER, BuildCache, BuildSpace, verified_bytes
from backends.c.scratch import SCRATCH_SUPPORT_C
from backends.c.streaming import STREAM_SUPPORT_C
from pipeline.errors import DamagedArtifactError

__all__ = ["SUPPORT_C", "SUPPORT_OBJECT", "copy_into"]

_log = logging.getLogger(__name__)

#: The support object's source.
SUPPORT_C = "#include <stdint.h>\n" + SCRATCH_SUPPORT_C + STREAM_SUPPORT_C

#: The object's file name, in its published folder and in a build's work directory.
SUPPORT_OBJECT = "sf_support.o"

#: Compiles ``source`` into the object ``output`` (raises ``CompilationError`` on failure).
CompileObject = Callable[[Path, Path], None]


def copy_into(workdir: Path, cache: BuildCache, key: str, compile_object: CompileObject) -> Path:
    """A checked copy of the support object of ``key`` in ``workdir``, built and published
    in ``cache`` first when it has none (or a damaged one).

    Raises:
        CompilationError: the compiler failed.
        DamagedArtifactError: the object just built does not match its hash.
    """
    name = f"sf_support.{key}"
    folder = cache.space().builds / name

    def find() -> Path | None:
        if not folder.exists():
            return None
        try:
            return _checked_copy(folder, workdir)
        except DamagedArtifactError as error:
            _log.warning("%s: building it again", error)
            shutil.rmtree(folder, ignore_errors=True)
            return None

    def build() -> Path:
        built = cache.build("sf_support", functools.partial(_build, cache, name, compile_object))
        return _checked_copy(built, workdir)

    return cache.once(name, find, build)


def _checked_copy(folder: Path, workdir: Path) -> Path:
    try:
        digest = (folder / COMPLETE_MARKER).read_text()
    except OSError as error:
        raise DamagedArtifactError(
            f"C support object {folder} is incomplete (no {COMPLETE_MARKER}: {error})"
        ) from error
    copy = workdir / SUPPORT_OBJECT
    copy.write_bytes(verified_bytes(folder / SUPPORT_OBJECT, digest, "C support object"))
    return copy


def _build(
    cache: BuildCache, name: str, compile_object: CompileObject, space: BuildSpace, workdir: Path
) -> Path:
    built = workdir / name
    built.mkdir(mode=0o700)
    source = workdir / "sf_support.c"
    source.write_text(SUPPORT_C)
    compile_object(source, built / SUPPORT_OBJECT)
    return cache.publish(space, built, name, [SUPPORT_OBJECT])[0]
