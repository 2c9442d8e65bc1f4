"""The pipeline core: steps, compile pipelines, caching and fingerprints."""

from __future__ import annotations

from pipeline.caching import CachedStep, DiskStepCache, MemoryStepCache, StepCache
from pipeline.errors import FingerprintError, StepMismatchError, UnsafeCacheDirectoryError
from pipeline.fingerprint import fingerprint
from pipeline.stages import (
    CompilableProgram,
    CompiledArtifact,
    Executable,
    ProgramDefinition,
    ProgramSource,
    SourceFormat,
)
from pipeline.workflow import (
    CompilePipeline,
    StageEvent,
    StageSubscription,
    Step,
    identity,
    subscribe,
)

__all__ = [
    "CachedStep",
    "CompilableProgram",
    "CompilePipeline",
    "CompiledArtifact",
    "DiskStepCache",
    "Executable",
    "FingerprintError",
    "MemoryStepCache",
    "ProgramDefinition",
    "ProgramSource",
    "SourceFormat",
    "StageEvent",
    "StageSubscription",
    "Step",
    "StepCache",
    "StepMismatchError",
    "UnsafeCacheDirectoryError",
    "fingerprint",
    "identity",
    "subscribe",
]
