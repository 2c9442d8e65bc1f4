"""Exception types of the ``pipeline`` package.

Each subclasses the closest built-in so that ``except ValueError`` (and friends) keeps
working for callers who do not know our names.
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "CacheDegradedWarning",
    "CacheSecretError",
    "CacheStoreError",
    "CompileError",
    "DamagedArtifactError",
    "FingerprintError",
    "SourceError",
    "StepMismatchError",
    "StepOutputError",
    "UnsafeCacheDirectoryError",
]


class FingerprintError(TypeError):
    """An object cannot be fingerprinted stably (strict mode).

    Raised instead of falling back to an identity-based key, because a disk cache keyed by
    such a fingerprint would silently miss (or, worse, hit the wrong entry) in another process.
    """


class StepMismatchError(ValueError):
    """Two steps of a pipeline disagree about the artifact that passes between them."""


class UnsafeCacheDirectoryError(PermissionError):
    """A cache directory that other users could write to, or that another user owns.

    Cache entries are code that will be loaded and run, so such a directory is refused.
    """


class StepOutputError(TypeError):
    """A step returned something its stage does not allow (named with the stage and step)."""


class CompileError(RuntimeError):
    """One program of a batch (``compile_many``) failed: which program, at which stage, why.

    Picklable, so a compile worker can report it.
    """

    def __init__(self, program: str, stage: str, detail: str) -> None:
        super().__init__(program, stage, detail)
        self.program = program
        self.stage = stage
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.program}: {self.stage} failed: {self.detail}"


class CacheStoreError(TypeError):
    """A disk-cached step returned a value that its cache cannot store (it cannot be pickled)."""


class CacheDegradedWarning(RuntimeWarning):
    """The build cache cannot store new entries (read-only, full disk): it serves what it
    holds and computes the rest uncached."""


class CacheSecretError(ValueError):
    """A shared cache without a usable secret: none set, too short, or in a file that others
    can read.

    The secret authenticates the shared cache's entries (they are code that will be run), so
    such a cache is refused rather than trusted.
    """


class DamagedArtifactError(RuntimeError):
    """A built artifact whose bytes differ from those recorded when it was published.

    Loading steps raise it; compiled backends rebuild once, with a logged warning.
    """


class ArgumentError(TypeError):
    """A program argument has the wrong kind, rank, dtype or device for its annotation."""


class SourceError(Exception):
    """An error in the user's own source, located there (file, line): the framework reports
    it without its own frames. A frontend's errors subclass it (the DSL's ``DSLError``)."""
