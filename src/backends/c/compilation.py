"""The C compilation step: ``ProgramSource -> CompiledArtifact`` with the system compiler.

A program is plain C (no Python or NumPy headers: the launcher, ``backends.c.launcher``, is
the only extension), so its build and its key do not depend on the interpreter.

The build happens in a fresh temporary directory inside the build cache; the finished shared
object is published with one atomic ``os.replace`` into ``builds/`` under a name derived from
everything that determines it, and its SHA-256 is recorded in the artifact. A build killed at
any moment leaves at most a stale temporary directory (swept later), never a published file
that loads wrong.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import attrs

from backends.build_cache import BuildCache
from backends.c import support, units
from backends.c.units import split_units
from backends.clike.compiler import (
    CompilationError,
    compiler_identity,
    default_compiler,
    made_again_where_unpickled,
    step_fingerprint,
)
from backends.clike.source import C_SOURCE
from pipeline.fingerprint import fingerprint, fingerprint_bytes
from pipeline.stages import CompiledArtifact, ProgramSource, SourceFormat

__all__ = [
    "GCC_TUNING",
    "REQUIRED_FLAGS",
    "CCompilation",
    "artifact_is_intact",
    "is_gcc",
]

_log = logging.getLogger(__name__)


#: Flags for gcc only: they tune gcc's optimizer for the generated tile sweeps.
GCC_TUNING = (
    # gcc would split each sweep loop at its tile-edge guards and copy the whole loop body per
    # part, doubling the build time of a stencil for no measurable speed.
    "-fno-split-loops",
    # The induction-variable pass costs the most on the fused sweep loop, whose address uses
    # number in the dozens; past 50 uses gcc skips it there (small loops keep it): 18% of
    # hdiff's build, no measurable speed on the grid (ADR 0009).
    "--param=iv-max-considered-uses=50",
)


def is_gcc(compiler: str, memo_directory: str | None = None) -> bool:
    """Whether ``compiler`` is gcc (its ``--version`` banner; ``False`` if it cannot run)."""
    try:
        identity = compiler_identity(compiler, memo_directory)
    except CompilationError:
        return False
    return _names_gcc(identity)


def _names_gcc(identity: str) -> bool:
    return "Free Software Foundation" in identity and "clang" not in identity.lower()


#: What every build needs to be a loadable shared object of OpenMP code, whatever the user's
#: ``flags``: they are always passed, before the optimization flags.
REQUIRED_FLAGS = ("-fPIC", "-shared", "-fopenmp")


def _identity_of(compilation: CCompilation) -> str | None:
    try:
        return compiler_identity(compilation.compiler, compilation.build_directory)
    except CompilationError:
        return None  # a compiler that cannot run is reported when the step is used


def _default_flags(compilation: CCompilation) -> tuple[str, ...]:
    # -ffp-contract=off: no fused multiply-add, so results match NumPy's rounding.
    tuning = GCC_TUNING if _names_gcc(compilation.compiler_identity or "") else ()
    return ("-O3", *tuning, "-march=native", "-ffp-contract=off", "-fno-math-errno")


@attrs.frozen
class CCompilation:
    """Build a ``ProgramSource`` in C into a shared object (for c_cpu: a plain-C program that
    the launcher loads).

    Attributes:
        build_directory: the build cache (``builds/`` and ``tmp/`` live inside).
        compiler: the C compiler executable.
        flags: the optimization flags (the cache key records them, and what
            ``-march=native`` means); by default ``-O3 -march=native``, no FMA contraction,
            and with gcc its ``GCC_TUNING``. Chosen for ``compiler`` at construction: an
            ``attrs.evolve`` that changes the compiler keeps the old flags unless it passes new
            ones. ``REQUIRED_FLAGS`` (``-fPIC -shared -fopenmp``) come first in every build
            whatever ``flags`` says, so ``flags=("-O2",)`` builds a working extension.
        extra_flags: added after ``flags``, to tune the defaults rather than replace them
            (``extra_flags=("-funroll-loops",)``).
        compiler_identity: what ``compiler`` says it is (``compiler_identity``), asked when
            the step is made (an ``attrs.evolve`` or an unpickling asks again), so that
            fingerprinting the step runs nothing; None when the compiler cannot run, which
            the first build reports.
    """

    build_directory: str
    compiler: str = attrs.field(factory=default_compiler)
    compiler_identity: str | None = attrs.field(
        default=attrs.Factory(_identity_of, takes_self=True), init=False, repr=False
    )
    flags: tuple[str, ...] = attrs.field(
        default=attrs.Factory(_default_flags, takes_self=True), converter=tuple
    )
    extra_flags: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    accepts: SourceFormat = attrs.field(default=C_SOURCE, init=False)

    @property
    def command_flags(self) -> tuple[str, ...]:
        """Every flag a build passes: the required ones, ``flags``, then ``extra_flags``."""
        return (*REQUIRED_FLAGS, *self.flags, *self.extra_flags)

    def __reduce__(self) -> tuple[object, ...]:
        return made_again_where_unpickled(self)

    def __fingerprint__(self) -> object:
        support_c = fingerprint_bytes(support.SUPPORT_C.encode())  # linked into every build
        return step_fingerprint(
            self.compiler,
            self.command_flags,
            self.compiler_identity,
            support_c,
            code=(sys.modules[__name__], units, support),
        )

    def __call__(self, source: ProgramSource, /) -> CompiledArtifact:
        """Build ``source`` (or find its build) and publish it; its artifact.

        Raises:
            CompilationError: the compiler could not run when the step was made, or failed.
        """
        self.require_compiler()
        # Every directory on the way to a published object must be ours alone: whoever can
        # write one of them can replace code that will be loaded (BuildCache refuses them).
        builds = BuildCache(Path(self.build_directory))
        return builds.program(self, source, ".so", lambda workdir: self._build(source, workdir))

    def require_compiler(self) -> None:
        """Nothing, when the compiler ran when this step was made.

        Raises:
            CompilationError: it did not (why, and what to do).
        """
        if self.compiler_identity is None:
            compiler_identity(self.compiler)  # raises, saying why
            raise CompilationError(
                f"the C compiler {self.compiler!r} could not run when this compilation step "
                "was made; make the step again (attrs.evolve) now that it runs"
            )

    def _build(self, source: ProgramSource, workdir: Path) -> Path:
        """Compile ``source``'s units in ``workdir`` and link them; the shared object."""
        built = workdir / f"{source.entry_point}.so"
        return self.build_units(source.entry_point, source.text, workdir, built)

    def build_units(
        self,
        program: str,
        text: str,
        workdir: Path,
        output: Path,
        includes: tuple[str, ...] = (),
        *,
        shared: bool = True,
    ) -> Path:
        """Compile the translation units of ``text`` in ``workdir`` with this compilation's
        flags and link them, with the support object (``backends.c.support``), into
        ``output``: a shared object, or with ``shared=False`` an executable. Returns
        ``output``.

        Raises:
            CompilationError: the compiler could not run when the step was made, or failed
                (naming ``program`` and where the sources were kept).
        """
        self.require_compiler()
        files = []
        for name, unit in split_units(text, output.stem):
            files.append(workdir / f"{name}.c")
            files[-1].write_text(unit)
        flags = self.command_flags
        link = flags if shared else tuple(flag for flag in flags if flag != "-shared")
        # A program finds libm in the Python process that loads it; an executable links it.
        libraries = (str(self.support_object(workdir)), *(() if shared else ("-lm",)))
        if len(files) == 1:
            _run_all(program, [[self.compiler, *link, *includes, str(files[0]), "-o", str(output), *libraries]])
        else:
            # Units compile concurrently (the machine's other cores are otherwise idle), then
            # one link.
            objects = [str(file.with_suffix(".o")) for file in files]
            _run_all(
                program,
                [
                    [self.compiler, *flags, *includes, "-c", str(file), "-o", obj]
                    for file, obj in zip(files, objects, strict=True)
                ],
            )
            _run_all(program, [[self.compiler, *link, *objects, "-o", str(output), *libraries]])
        return output


    def support_object(self, workdir: Path) -> Path:
        """A checked copy, in ``workdir``, of the support object these flags build (built
        and published in the build cache the first time).

        Raises:
            CompilationError: the compiler failed.
        """
        key = fingerprint((self, support.SUPPORT_C))[:24]

        def compile_object(source: Path, output: Path) -> None:
            flags = [flag for flag in self.command_flags if flag != "-shared"]
            _run_all("the C support object", [[self.compiler, *flags, "-c", str(source), "-o", str(output)]])

        # Beside the programs' builds, not among them: no cache entry names it, and the
        # cache's inventory, pruning and clearing are about programs.
        cache = BuildCache(Path(self.build_directory) / "support")
        return support.copy_into(workdir, cache, key, compile_object)


def _run_all(program: str, commands: list[list[str]]) -> None:
    """Run the compiler ``commands`` for ``program`` at once and wait for all of them.

    Raises:
        CompilationError: one failed (the first, with its command, its error output and
            where the sources were kept).
    """
    running = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command in commands
    ]
    outcomes = [(process.communicate()[1], process.returncode) for process in running]
    for command, (stderr, returncode) in zip(commands, outcomes, strict=True):
        if returncode != 0:
            raise CompilationError(
                f"compiling {program} failed (exit {returncode}); sources kept in "
                f"{Path(command[-1]).parent}\n{' '.join(command)}\n{stderr[-4000:]}"
            )


def artifact_is_intact(artifact: CompiledArtifact) -> bool:
    """Whether the published file still exists with the bytes recorded at publish time."""
    return BuildCache.intact(Path(artifact.path), artifact.content_hash)
