"""stencilforge's framework: staged compile pipelines for any toolchain.

A program goes ``frontend -> translation -> compilation -> loading``; the framework knows
none of the stages' types, and a toolchain brings its own. The map:

- **Steps** (``pipeline.steps``): any callable is a ``Step``; ``Chain`` (a then b),
  ``StepSequence`` (named sub-steps in order), ``Split`` (two tracks combined) compose them;
  ``identity`` skips one. ``CachedStep`` (``pipeline.caching``) remembers results in memory
  (``MemoryStepCache``) or on disk (``DiskStepCache``, code-aware keys, single flight;
  behind it a fleet's Redis, ``pipeline.shared_cache``).
- **The pipeline** (``pipeline.workflow``): ``CompilePipeline(frontend, translation,
  compilation, loading)``, frozen, with ``evolve_step``/``replace_step`` by dotted path.
- **Stage artifacts** (``pipeline.stages``): ``ConcreteDefinition`` (a definition and its
  ``CompileTimeArgs``), ``ProgramSource`` of a ``SourceFormat`` (a language for a
  ``DeviceType``), ``CompiledArtifact``, ``Executable``.
- **Calls** (``pipeline.dispatch``, ``pipeline.staged``): a program's ``Dispatcher`` (the
  table per compile-time signature, checks before native code, the fast path, metrics);
  what a frontend must say of its calls is one protocol, ``CallConvention``; ``Lowered`` and
  ``Compiled`` are a program lowered, then compiled, for one signature.
- **Scale-out** (``pipeline.runners``): ``compile_many`` over any executor; a program says
  what a call with its example arguments compiles as a ``CompileTarget``.
- **Observing**: ``subscribe`` to ``StageEvent``\\ s (``pipeline.events``), ``metrics``,
  ``fingerprint``.

The stencil DSL, the framework's reference frontend, is ``pipeline.dsl``; backends for it are
in ``backends``. The framework imports neither.
"""

from __future__ import annotations

from pipeline._shadowing import shadowing_error

try:
    from allocators import DeviceType
except ImportError as error:
    shadowing = shadowing_error("allocators")
    if shadowing is None:
        raise
    raise shadowing from error

from pipeline import metrics
from pipeline.caching import CachedStep, DiskStepCache, StepCache
from pipeline.dispatch import CallConvention, Dispatcher
from pipeline.errors import (
    ArgumentError,
    CompileError,
    FingerprintError,
    SourceError,
    StepMismatchError,
    UnsafeCacheDirectoryError,
)
from pipeline.events import StageEvent, StageSubscription, subscribe
from pipeline.fingerprint import fingerprint
from pipeline.memory_cache import MemoryStepCache
from pipeline.runners import CompileTarget, compile_many
from pipeline.staged import Compiled, Lowered
from pipeline.stages import (
    CompiledArtifact,
    CompileTimeArgs,
    ConcreteDefinition,
    Executable,
    ProgramSource,
    SourceFormat,
)
from pipeline.steps import Chain, Split, Step, StepSequence, identity
from pipeline.workflow import CompilePipeline

__all__ = [
    "ArgumentError",
    "CachedStep",
    "CallConvention",
    "Chain",
    "CompileError",
    "CompilePipeline",
    "CompileTarget",
    "CompileTimeArgs",
    "Compiled",
    "CompiledArtifact",
    "ConcreteDefinition",
    "DeviceType",
    "DiskStepCache",
    "Dispatcher",
    "Executable",
    "FingerprintError",
    "Lowered",
    "MemoryStepCache",
    "ProgramSource",
    "SourceError",
    "SourceFormat",
    "Split",
    "StageEvent",
    "StageSubscription",
    "Step",
    "StepCache",
    "StepMismatchError",
    "StepSequence",
    "UnsafeCacheDirectoryError",
    "compile_many",
    "fingerprint",
    "identity",
    "metrics",
    "subscribe",
]
