"""The c_cpu backend in one process: inspection, composability, cache-directory safety, and
argument checks that run before any native code (with the same errors as embedded_numpy).

Process-level behaviour (kills, races, warm starts, stage dumps) is in
``test_c_cpu_processes.py``; random expressions against embedded_numpy in
``test_c_cpu_differential.py``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from c_programs import stencils
from c_programs.support import CompilerWrapper

import allocators
import backends
from allocators import DeviceType
from backends import CompiledBackend
from backends.c import (
    CCompilation,
    CLoading,
    DamagedArtifactError,
    Launcher,
    c_cpu_pipeline,
    compile_time_args,
)
from backends.cache import cache_directory
from backends.clike.source import C_SOURCE
from pipeline import (
    ArgumentError,
    CachedStep,
    CompiledArtifact,
    CompilePipeline,
    ProgramSource,
    SourceFormat,
    StepMismatchError,
    UnsafeCacheDirectoryError,
)
from pipeline.dsl import DomainError

SHAPE = (12, 11, 6)
COEFF = 0.025


def private_backend(
    cache: Path, compiler: CompilerWrapper, name: str = "c_cpu_private"
) -> CompiledBackend:
    """A c_cpu backend over ``cache`` that builds with the logging compiler wrapper."""
    compilation = CCompilation(str(cache / "c"), compiler=str(compiler.path))
    return CompiledBackend(
        name,
        allocators.NumPyBufferAllocator(),
        c_cpu_pipeline(cache, compilation=compilation),
        compile_time_args=compile_time_args,
    )


def lap_arguments(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    inp = np.random.default_rng(seed).uniform(-1.0, 1.0, SHAPE)
    return inp, np.full(SHAPE, -777.25)


# --------------------------------------------------------------------------- inspection


#: Translation options that leave nothing to measure.
GIVEN = {"temporaries": True, "tile_sizes": (8, 32), "prefetch_distance": 4,
         "streaming_stores": False}


def test_translate_returns_the_c_source_with_its_entry_point_and_compiles_nothing(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")
    automatic = private_backend(tmp_path / "cache", compiler)
    backend = attrs.evolve(
        automatic, pipeline=automatic.pipeline.evolve_step("translation", **GIVEN)
    )
    inp, out = lap_arguments()

    source = stencils.lap.with_backend(backend).lower(inp, out).source

    assert isinstance(source, ProgramSource)
    assert source.format == C_SOURCE and source.format.language == "c"
    assert source.entry_point.startswith("sf_lap")
    assert f'"{source.entry_point}"' in source.text and "sf_program_descriptor" in source.text
    assert "Python.h" not in source.text and "numpy" not in source.text and "omp" in source.text
    assert compiler.compiles == 0
    assert not (tmp_path / "cache" / "c" / "builds").exists()
    assert np.all(out == -777.25)
    # The named instance generates the same source (it does not depend on the cache).
    named = attrs.evolve(
        backends.c_cpu, pipeline=backends.c_cpu.pipeline.evolve_step("translation", **GIVEN)
    )
    assert stencils.lap.with_backend(named).lower(inp, out).source == source


def test_translate_specializes_for_the_strides_of_the_arguments(tmp_path):
    backend = private_backend(tmp_path / "cache", CompilerWrapper(tmp_path / "cc"))
    program = stencils.lap.with_backend(backend)
    inp, out = lap_arguments()

    contiguous = program.lower(inp, out).source
    strided = program.lower(inp[:, :, ::2], out[:, :, ::2]).source

    assert contiguous.entry_point != strided.entry_point
    assert contiguous.text != strided.text


def test_loading_refuses_a_missing_or_altered_object(tmp_path):
    load_extension = CLoading(Launcher(str(tmp_path / "launcher")))
    source = ProgramSource(C_SOURCE, "", "sf_nothing")
    missing = CompiledArtifact(str(tmp_path / "missing.so"), "0" * 64, "sf_nothing", source)
    with pytest.raises(DamagedArtifactError, match="cannot be read"):
        load_extension(missing)
    other = tmp_path / "other.so"
    other.write_bytes(b"\x7fELF not the recorded bytes")
    with pytest.raises(DamagedArtifactError, match="does not match its recorded hash"):
        load_extension(CompiledArtifact(str(other), "0" * 64, "sf_nothing", source))


# --------------------------------------------------------------------------- composability


CUDA_SOURCE = SourceFormat("cuda", DeviceType.CUDA)


@attrs.frozen
class CudaTranslation:
    """A translation that claims to emit CUDA (it is never called)."""

    emits: SourceFormat = CUDA_SOURCE

    def __call__(self, program: object) -> object:
        raise AssertionError("never called: construction must fail first")


@attrs.frozen
class CudaCompilation:
    accepts: SourceFormat = CUDA_SOURCE

    def __call__(self, source: object) -> object:
        raise AssertionError("never called")


def _results(backend: CompiledBackend) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    inp = rng.uniform(-1.0, 1.0, (40, 37, 5))  # several tiles of the default tile sizes
    lap_out = np.full(inp.shape, -777.25)
    hdiff_out = np.full(inp.shape, -777.25)
    stencils.lap.with_backend(backend)(inp, lap_out)
    stencils.hdiff_program.with_backend(backend)(inp, COEFF, hdiff_out)
    lap_expected, hdiff_expected = np.full(inp.shape, -777.25), np.full(inp.shape, -777.25)
    stencils.lap_reference(inp, lap_expected)
    stencils.hdiff_reference(inp, COEFF, hdiff_expected)
    return {
        "lap": lap_out,
        "hdiff": hdiff_out,
        "lap_ref": lap_expected,
        "hdiff_ref": hdiff_expected,
    }


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """c_cpu over a private cache and two variants made with attrs.evolve, and their results."""
    root = tmp_path_factory.mktemp("c_cpu_variants")
    compiler = CompilerWrapper(root / "cc")
    base = private_backend(root / "cache", compiler, "c_cpu")
    pipeline = base.pipeline
    # Variants of a backend are evolved from it: they keep its compile-time arguments.
    inline = attrs.evolve(
        base,
        name="c_cpu_inline",
        pipeline=attrs.evolve(
            pipeline,
            translation=attrs.evolve(
                pipeline.translation,
                step=attrs.evolve(pipeline.translation.step, temporaries=False, tile_sizes=(4, 16)),
            ),
        ),
    )
    o2_flags = tuple("-O2" if f == "-O3" else f for f in pipeline.compilation.step.flags)
    o2 = attrs.evolve(
        base,
        name="c_cpu_O2",
        pipeline=attrs.evolve(
            pipeline,
            compilation=attrs.evolve(
                pipeline.compilation, step=attrs.evolve(pipeline.compilation.step, flags=o2_flags)
            ),
        ),
    )
    backends_ = {"c_cpu": base, "c_cpu_inline": inline, "c_cpu_O2": o2}
    return {
        "compiler": compiler,
        "cache": root / "cache",
        "backends": backends_,
        "results": {name: _results(b) for name, b in backends_.items()},
    }


@pytest.mark.parametrize("variant", ["c_cpu_inline", "c_cpu_O2"])
@pytest.mark.parametrize("workload", ["lap", "hdiff"])
def test_evolved_variants_compute_what_c_cpu_computes(variants, variant, workload):
    base = variants["results"]["c_cpu"]
    result = variants["results"][variant][workload]
    np.testing.assert_array_equal(result, base[workload])
    np.testing.assert_allclose(result, base[f"{workload}_ref"], rtol=1e-12, atol=1e-13)


def test_evolved_variants_are_really_different_builds(variants):
    inline, o2 = variants["backends"]["c_cpu_inline"], variants["backends"]["c_cpu_O2"]
    assert inline.pipeline.translation.step.temporaries is False
    assert inline.pipeline.translation.step.tile_sizes == (4, 16)
    assert "-O2" in o2.pipeline.compilation.step.flags
    assert variants["backends"]["c_cpu"].pipeline.translation.step.temporaries is None
    compiles = variants["compiler"].lines("compile")
    assert len(compiles) == 6  # two programs, three configurations
    assert sum(" -O2 " in line for line in compiles) == 2
    assert len(list((variants["cache"] / "c" / "builds").glob("*.so"))) == 6
    inp = np.zeros((40, 37, 5))
    texts = {
        name: stencils.hdiff_program.with_backend(b).lower(inp, COEFF, inp.copy()).as_text()
        for name, b in variants["backends"].items()
    }
    assert texts["c_cpu_inline"] != texts["c_cpu"]
    assert texts["c_cpu_O2"] == texts["c_cpu"]


@pytest.mark.parametrize(
    "emits", [SourceFormat("cuda", DeviceType.CUDA), SourceFormat("cpp", DeviceType.CPU)], ids=str
)
def test_a_translation_emitting_another_language_fails_at_construction(tmp_path, emits):
    pipeline = c_cpu_pipeline(tmp_path / "cache")
    other = CudaTranslation(emits=emits)

    with pytest.raises(
        StepMismatchError,
        match=r"translation CudaTranslation emits .* compilation cached CCompilation "
        r"accepts c for CPU",
    ):
        attrs.evolve(pipeline, translation=other)
    with pytest.raises(ValueError, match=r"cached CudaTranslation .* CCompilation"):
        CompiledBackend(
            "c_cpu_cuda",
            allocators.NumPyBufferAllocator(),
            CompilePipeline(
                pipeline.frontend,
                CachedStep.in_memory(other),
                pipeline.compilation,
                pipeline.loading,
            ),
        )


def test_a_cuda_pipeline_with_the_numpy_allocator_fails_device_agreement(tmp_path):
    pipeline = c_cpu_pipeline(tmp_path / "cache")
    cuda = attrs.evolve(pipeline, translation=CudaTranslation(), compilation=CudaCompilation())

    with pytest.raises(
        ValueError, match=r"allocator allocates on CPU but .*CudaTranslation emits cuda for CUDA"
    ):
        CompiledBackend("cuda_numpy", allocators.NumPyBufferAllocator(), cuda)
    with pytest.raises(ValueError, match=r"array namespace allocates on CPU"):
        CompiledBackend("cuda_numpy", np, cuda)


# --------------------------------------------------------------------------- cache directory


def test_a_new_cache_directory_from_the_environment_is_created_private(tmp_path, monkeypatch):
    cache = tmp_path / "new" / "cache"
    monkeypatch.setenv("STENCILFORGE_CACHE_DIR", str(cache))

    assert cache_directory() == cache
    backend = private_backend(cache, CompilerWrapper(tmp_path / "cc"))
    stencils.lap.with_backend(backend)(*lap_arguments())

    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    for directory in [cache, *(p for p in cache.rglob("*") if p.is_dir())]:
        assert not directory.stat().st_mode & 0o022, f"{directory} is writable by others"


def test_a_new_cache_directory_given_to_c_cpu_pipeline_is_created_private(tmp_path):
    cache = tmp_path / "new" / "cache"
    c_cpu_pipeline(cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_a_new_cache_stays_private_under_a_permissive_umask(tmp_path):
    cache = tmp_path / "cache"
    backend = private_backend(cache, CompilerWrapper(tmp_path / "cc"))
    previous = os.umask(0o002)
    try:
        stencils.lap.with_backend(backend)(*lap_arguments())
    finally:
        os.umask(previous)

    writable = [p for p in [cache, *cache.rglob("*")] if p.is_dir() and p.stat().st_mode & 0o022]
    assert writable == []


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_cache_directory_from_the_environment_refuses_others_writing(tmp_path, monkeypatch, mode):
    unsafe = tmp_path / "cache"
    unsafe.mkdir()
    unsafe.chmod(mode)
    monkeypatch.setenv("STENCILFORGE_CACHE_DIR", str(unsafe))

    with pytest.raises(UnsafeCacheDirectoryError, match=r"writable by group or others.*chmod go-w"):
        cache_directory()


@pytest.mark.parametrize("mode", [0o770, 0o777])
def test_c_cpu_pipeline_refuses_a_cache_directory_others_can_write(tmp_path, mode):
    unsafe = tmp_path / "cache"
    unsafe.mkdir()
    unsafe.chmod(mode)

    with pytest.raises(UnsafeCacheDirectoryError, match="writable by group or others"):
        CompiledBackend("c_cpu_unsafe", allocators.NumPyBufferAllocator(), c_cpu_pipeline(unsafe))


def test_c_cpu_pipeline_refuses_a_cache_subdirectory_others_can_write(tmp_path):
    cache = tmp_path / "cache"
    (cache / "translations").mkdir(parents=True)
    cache.chmod(0o700)
    (cache / "translations").chmod(0o777)

    with pytest.raises(
        UnsafeCacheDirectoryError, match=r"translations is writable by group or others"
    ):
        c_cpu_pipeline(cache)


def test_a_build_directory_others_can_write_is_refused(tmp_path):
    cache = tmp_path / "cache"
    builds = cache / "c" / "builds"
    builds.mkdir(parents=True)
    for directory in (cache, cache / "c"):
        directory.chmod(0o700)
    builds.chmod(0o777)

    with pytest.raises(UnsafeCacheDirectoryError):
        backend = private_backend(cache, CompilerWrapper(tmp_path / "cc"))
        stencils.lap.with_backend(backend)(*lap_arguments())


# --------------------------------------------------------------------------- argument checks


class FakeDeviceArray:
    """Looks like a CuPy array on CUDA device 0: shape, dtype, strides and DLPack device."""

    def __init__(self, shape: tuple[int, ...], dtype: Any = np.float64) -> None:
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self.ndim = len(shape)
        self.strides = tuple(
            int(np.prod(shape[i + 1 :])) * self.dtype.itemsize for i in range(len(shape))
        )
        self.itemsize = self.dtype.itemsize

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)


def _outcome(
    program: Any, backend: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """What a call does: ("ok", copies of its array arguments) or (error type, message)."""
    try:
        program.with_backend(backend)(*args, **kwargs)
    except Exception as error:  # the error itself is what is compared
        return type(error), str(error)
    return ("ok", *(np.array(a) for a in (*args, *kwargs.values()) if isinstance(a, np.ndarray)))


_bound: dict[tuple[str, str], Any] = {}


def _program(name: str, backend: Any) -> Any:
    """The program on the backend, bound once (so c_cpu compiles each specialization once)."""
    key = (name, backend.name)
    if key not in _bound:
        _bound[key] = getattr(stencils, name).with_backend(backend)
    return _bound[key]


def _field(shape: tuple[int, ...] = SHAPE, dtype: Any = np.float64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape).astype(dtype)


def _out(shape: tuple[int, ...] = SHAPE, dtype: Any = np.float64) -> np.ndarray:
    return np.full(shape, -777, dtype)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _unaligned(shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    raw = bytearray(int(np.prod(shape)) * 8 + 1)
    array = np.frombuffer(raw, dtype=np.float64, offset=1, count=int(np.prod(shape))).reshape(shape)
    assert not array.flags.aligned
    return array


def _overlapping() -> tuple[np.ndarray, np.ndarray]:
    base = _field((SHAPE[0] + 1, *SHAPE[1:]))
    return base[:-1], base[1:]


def _aliased(program: str) -> tuple[Any, ...]:
    """Arguments whose output is an input (lap) or a reversed view of the second input (axpy)."""
    field = _field()
    if program == "lap":
        return field, field
    return _field(), field, 2.0, field[:, :, ::-1]


def _broadcast_output() -> np.ndarray:
    return np.lib.stride_tricks.as_strided(np.zeros(SHAPE[2]), SHAPE, (0, 0, 8), writeable=True)


# (program, argument factory) per case; each factory makes fresh arrays, so both backends get
# equal inputs and their outputs can be compared afterwards.
REFUSED: dict[str, tuple[str, Callable[[], tuple[Any, ...]]]] = {
    "cuda-like input": ("lap", lambda: (FakeDeviceArray(SHAPE), _out())),
    "cuda-like output": ("lap", lambda: (_field(), FakeDeviceArray(SHAPE))),
    "list input": ("lap", lambda: (_field().tolist(), _out())),
    "rank 2 input": ("lap", lambda: (_field(SHAPE[:2]), _out())),
    "rank 4 output": ("lap", lambda: (_field(), _out((*SHAPE, 1)))),
    "float32 input": ("lap", lambda: (_field(dtype=np.float32), _out())),
    "int64 field for int32": (
        "int_program",
        lambda: (_field(dtype=np.int64), 2, _out(dtype=np.int32)),
    ),
    "input smaller than the halo": ("lap", lambda: (_field((SHAPE[0] - 1, *SHAPE[1:])), _out())),
    "input without K halo": (
        "axpy_program",
        lambda: (_field(), _field((*SHAPE[:2], SHAPE[2] - 2)), 2.0, _out()),
    ),
    "input without I halo": (
        "axpy_program",
        lambda: (_field((SHAPE[0] - 1, *SHAPE[1:])), _field(), 2.0, _out()),
    ),
    "output aliases input": ("lap", lambda: _aliased("lap")),
    "output overlaps input": ("lap", _overlapping),
    "output overlaps second input": (
        "axpy_program",
        lambda: _aliased("axpy_program"),
    ),
    "read-only output": ("lap", lambda: (_field(), _read_only(_out()))),
    "broadcast output": ("lap", lambda: (_field(), _broadcast_output())),
    "big-endian input": ("lap", lambda: (_field().astype(">f8"), _out())),
    "big-endian output": ("lap", lambda: (_field(), _out().astype(">f8"))),
    "unaligned input": ("lap", lambda: (_unaligned(), _out())),
    "string scalar": ("axpy_program", lambda: (_field(), _field(), "2.0", _out())),
    "float for int32 scalar": (
        "int_program",
        lambda: (_field(dtype=np.int32), 2.5, _out(dtype=np.int32)),
    ),
    "missing argument": ("lap", lambda: (_field(),)),
    "extra argument": ("lap", lambda: (_field(), _out(), _out())),
}


@pytest.fixture(scope="module")
def warmed_up() -> None:
    """Call each program once correctly first, so that refusals also go through the fast path."""
    for name, args in (
        ("lap", (_field(), _out())),
        ("axpy_program", (_field(), _field(), 2.0, _out())),
        ("int_program", (_field(dtype=np.int32), 3, _out(dtype=np.int32))),
    ):
        _program(name, backends.c_cpu)(*args)


@pytest.mark.parametrize("case", list(REFUSED))
def test_bad_arguments_are_refused_before_native_code_as_embedded_numpy_refuses_them(
    warmed_up, case
):
    name, make = REFUSED[case]
    args = make()
    embedded = _outcome(
        _program(name, backends.embedded_numpy), backends.embedded_numpy, make(), {}
    )
    compiled = _outcome(_program(name, backends.c_cpu), backends.c_cpu, args, {})

    assert isinstance(compiled[0], type) and issubclass(compiled[0], (ArgumentError, DomainError))
    assert compiled == embedded
    for after, before in zip(args, make(), strict=True):  # nothing was written
        if isinstance(after, np.ndarray):
            np.testing.assert_array_equal(after, before)


def test_a_cuda_array_is_refused_naming_the_device(warmed_up):
    error_type, message = _outcome(
        _program("lap", backends.c_cpu), backends.c_cpu, (FakeDeviceArray(SHAPE), _out()), {}
    )
    assert error_type is ArgumentError
    assert "argument 'inp' of lap() is on CUDA, but this backend runs on CPU" in message


def test_a_refused_call_leaves_the_output_untouched(warmed_up):
    inp, out = _field((SHAPE[0] - 1, *SHAPE[1:])), _out()
    with pytest.raises(DomainError, match=r"field 'inp' is too small along I"):
        _program("lap", backends.c_cpu)(inp, out)
    assert np.all(out == -777)


def _transposed() -> tuple[np.ndarray, np.ndarray]:
    inp = np.ascontiguousarray(_field()[::-1].transpose(2, 1, 0)).transpose(2, 1, 0)[::-1]
    return inp, _out()


def _in_bigger(shape: tuple[int, ...]) -> np.ndarray:
    return np.full((shape[0] + 3, shape[1] + 2, shape[2] * 3 + 1), -777.0)[2:-1, 1:-1, 1::3]


# Views with other strides, offsets and orders: all must compute exactly what embedded computes.
ACCEPTED: dict[str, tuple[str, Callable[[], tuple[Any, ...]]]] = {
    "contiguous": ("lap", lambda: (_field(), _out())),
    "strided last dimension": (
        "lap",
        lambda: (_field((SHAPE[0], SHAPE[1], 2 * SHAPE[2]))[:, :, ::2], _out()),
    ),
    "strided output": (
        "lap",
        lambda: (_field(), _out((SHAPE[0], SHAPE[1], 2 * SHAPE[2]))[:, :, 1::2]),
    ),
    "negative strides": ("lap", lambda: (_field()[::-1, :, ::-1], _out()[:, ::-1, :])),
    "fortran order": ("lap", lambda: (np.asfortranarray(_field()), np.asfortranarray(_out()))),
    "transposed memory": ("lap", _transposed),
    "views into bigger arrays": (
        "lap",
        lambda: (_field((SHAPE[0] + 4, *SHAPE[1:]))[2:-2], _in_bigger(SHAPE)),
    ),
    "single point in K": (
        "lap",
        lambda: (_field((SHAPE[0], SHAPE[1], 3))[:, :, 1:2], _out((SHAPE[0], SHAPE[1], 1))),
    ),
    "empty domain": ("lap", lambda: (_field((2, 5, 4)), _out((2, 5, 4)))),
    "broadcast input": (
        "lap",
        lambda: (np.broadcast_to(_field((1, SHAPE[1], SHAPE[2])), SHAPE), _out()),
    ),
    "shifted inputs, strided": (
        "axpy_program",
        lambda: (
            _field()[:, ::-1],
            _field((SHAPE[0], SHAPE[1], 2 * SHAPE[2]))[:, :, ::2],
            0.5,
            _out(),
        ),
    ),
    "numpy scalar": ("axpy_program", lambda: (_field(), _field(), np.float32(0.5), _out())),
    "int32 scalar as numpy int64": (
        "int_program",
        lambda: (_field(dtype=np.int32) * 0, np.int64(7), _out(dtype=np.int32)),
    ),
    "bool for int32 scalar": (
        "int_program",
        lambda: (_field(dtype=np.int32), True, _out(dtype=np.int32)),
    ),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_views_with_any_strides_compute_what_embedded_numpy_computes(warmed_up, case):
    name, make = ACCEPTED[case]
    embedded = _outcome(
        _program(name, backends.embedded_numpy), backends.embedded_numpy, make(), {}
    )
    compiled = _outcome(_program(name, backends.c_cpu), backends.c_cpu, make(), {})

    assert embedded[0] == "ok", embedded
    assert compiled[0] == "ok", compiled
    assert len(compiled) == len(embedded)
    for got, expected in zip(compiled[1:], embedded[1:], strict=True):
        np.testing.assert_array_equal(got, expected)


def test_an_empty_output_array_is_accepted(warmed_up):
    inp, out = _field((5, 5, 0)), np.zeros((5, 5, 0))  # NumPy gives it strides (0, 0, 8)
    embedded = _outcome(
        _program("lap", backends.embedded_numpy), backends.embedded_numpy, (inp, out), {}
    )
    compiled = _outcome(_program("lap", backends.c_cpu), backends.c_cpu, (inp, out), {})

    assert compiled[0] == embedded[0] == "ok", (compiled, embedded)
    assert out.shape == (5, 5, 0)


def test_keyword_arguments_compute_what_positional_ones_do(warmed_up):
    inp = _field()
    by_position, by_keyword = _out(), _out()
    program = _program("lap", backends.c_cpu)
    program(inp, by_position)
    program(out=by_keyword, inp=inp)
    np.testing.assert_array_equal(by_keyword, by_position)


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("int_program", lambda: (_field(dtype=np.int32), 2**31, _out(dtype=np.int32))),
        ("axpy_program", lambda: (_field(), _field(), 10**400, _out())),
    ],
    ids=["int32 overflow", "float64 overflow"],
)
def test_an_out_of_range_scalar_is_refused_as_embedded_numpy_refuses_it(warmed_up, name, make):
    embedded = _outcome(
        _program(name, backends.embedded_numpy), backends.embedded_numpy, make(), {}
    )
    compiled = _outcome(_program(name, backends.c_cpu), backends.c_cpu, make(), {})

    assert compiled == embedded
