"""The cuda_gpu backend: CUDA translation, nvcc builds, launch plans and device checks.

Without a GPU: every corpus program translates to CUDA that nvcc compiles for sm_90
(``requires_nvcc``), the argument struct the launcher fills has the C layout the kernels read,
grids cover their domains, builds are published and verified through the build cache, and
the checks before a launch refuse what the kernels cannot run. With a GPU (``requires_gpu``),
the DSL corpus runs on cuda_gpu through ``tests/dsl`` (it is an available backend there), and
the tests at the end of this module check what is specific to launching.
"""

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import numpy as np
import pytest

import backends
from allocators import DeviceType
from backends.conformance import corpus
from backends.cuda import (
    CudaProgram,
    CudaTranslation,
    NvccCompilation,
    UnsupportedConstructError,
    cuda_gpu_pipeline,
    load_cuda,
)
from backends.cuda.checks import check_device_arguments
from backends.cuda.loading import MAX_GRID_YZ, grid_for
from pipeline import ArgumentError
from pipeline.dsl.arguments import ArgumentChecker
from pipeline.dsl.frontend.step import shared_frontend
from pipeline.dsl.ir.nodes import Param
from pipeline.errors import DamagedArtifactError
from pipeline.stages import CompileTimeArgs, ConcreteDefinition


def _program(case_or_program):
    program = getattr(case_or_program, "program", case_or_program)
    return shared_frontend(ConcreteDefinition(program.definition))


def _case(name):
    (case,) = [c for c in corpus.CASES if c.name == name]
    return case


def _translate(name, **options):
    return CudaTranslation(**options)(_program(_case(name)))


# --------------------------------------------------------------------------- translation


def test_each_stencil_becomes_one_kernel_taking_the_argument_struct():
    source = _translate("scan_tridiagonal_two_calls")
    assert source.format.language == "cuda"
    assert source.format.device_type is DeviceType.CUDA
    plans = source.metadata.kernels
    assert [p.name for p in plans] == ["sf_kernel_0", "sf_kernel_1"]
    for plan in plans:
        assert f'extern "C" __global__ void __launch_bounds__(' in source.text
        assert f"{plan.name}(const sf_args a)" in source.text


def test_points_put_the_innermost_dimension_on_x_and_loop_over_nothing():
    (plan,) = _translate("hdiff").metadata.kernels
    assert plan.threads == (("K",), ("J",), ("I",))
    assert plan.sequential is None
    assert plan.block == (16, 8, 1)


def test_columns_loop_over_the_innermost_dimension_in_each_thread():
    source = _translate("hdiff", parallelization="columns")
    (plan,) = source.metadata.kernels
    assert plan.threads == (("J",), ("I",), ())
    assert plan.sequential == "K"
    assert plan.block == (16, 8, 1)  # z's threads fold into y: none here
    assert "for (int64_t x_K = lo_K; x_K < hi_K; ++x_K)" in source.text


def test_reads_add_constant_multiples_of_strides_to_the_points_offset():
    text = _translate("hdiff").text
    assert "const int64_t o_inp = x_I * s_inp_0 + x_J * s_inp_1 + x_K;" in text
    assert "p_inp[o_inp + 1 * s_inp_0 + -1 * s_inp_1]" in text
    assert "p_out[o_out] = " in text
    # The columns kernel's point leaves out its loop's dimension.
    columns = _translate("hdiff", parallelization="columns").text
    assert "const int64_t o_inp = x_I * s_inp_0 + x_J * s_inp_1;" in columns
    assert "p_inp[o_inp + 2 * s_inp_0 + x_K]" in columns


def test_a_block_keeps_its_threads_when_the_kernel_has_fewer_grid_axes():
    (plan,) = _translate("scan_backward_along_i_mixed_carry").metadata.kernels
    assert plan.sequential == "I"
    assert plan.threads == (("J",), (), ())
    assert plan.block == (128, 1, 1)
    (single,) = _translate("scan_one_column").metadata.kernels
    assert single.threads == ((), (), ()) and single.block == (1, 1, 1)


def test_scans_walk_their_axis_in_each_pass_direction_and_keep_earlier_passes():
    source = _translate("scan_three_passes_and_a_chain")
    (plan,) = source.metadata.kernels
    assert plan.sequential == "K"
    # Two passes before the last: their sweeps are kept for the passes that read them.
    assert plan.kept and all(dtype == "float64" for _, dtype in plan.kept)
    assert source.text.count("for (int64_t x_K = lo_K; x_K < hi_K; ++x_K)") == 2
    assert source.text.count("for (int64_t x_K = hi_K - 1; x_K >= lo_K; --x_K)") == 1


def test_concat_where_branches_are_computed_only_where_chosen():
    text = _translate("concat_where_vertical_boundaries").text
    assert "if (((x_K + 0) >= 0LL && (x_K + 0) < 1LL))" in text


def test_translation_options_are_validated_and_enter_the_fingerprint():
    with pytest.raises(ValueError, match="parallelization"):
        CudaTranslation(parallelization="tiles")
    with pytest.raises(ValueError, match="at most 1024"):
        CudaTranslation(block=(64, 32, 1))
    a, b = _translate("laplacian"), _translate("laplacian", block=(64, 4, 1))
    assert a.entry_point != b.entry_point


def test_an_unsupported_construct_is_an_error_naming_the_program_and_the_call():
    """Outputs of one call over different dimensions cannot share one kernel: the translation
    says which program and call (the frontend normally splits such calls)."""
    program = _program(_case("concat_where_vertical_boundaries"))
    ir = program.ir
    ends = ir.param("ends").type
    surface = Param("surface", attrs.evolve(ends, dims=ends.dims[:2]))
    stencil = ir.stencils[0]
    second = attrs.evolve(stencil.outputs[1], name="surface", slices=stencil.outputs[1].slices[:2])
    broken = attrs.evolve(
        ir,
        params=(*ir.params, surface),
        stencils=(attrs.evolve(stencil, outputs=(stencil.outputs[0], second)),),
    )
    with pytest.raises(UnsupportedConstructError) as info:
        CudaTranslation()(attrs.evolve(program, ir=broken))
    message = str(info.value)
    assert "vertical_boundaries_program" in message
    assert "'vertical_boundaries'" in message
    assert "different dimensions" in message
    assert issubclass(UnsupportedConstructError, NotImplementedError)


# --------------------------------------------------------------------------- the struct


_LAYOUT_CASES = ["hdiff", "if_statements_and_keywords", "scan_three_passes_and_a_chain",
                 "builtins_float32", "domain_keyword_with_scalar_bounds",
                 "scan_backward_along_i_mixed_carry"]


@pytest.mark.parametrize("name", _LAYOUT_CASES)
def test_the_struct_the_launcher_fills_has_the_layout_the_kernels_read(name, tmp_path):
    """The NumPy dtype and the C declaration come from one description; the host C compiler
    (the same ABI as nvcc's device code) gives the offsets the kernels use."""
    struct = _translate(name).metadata.struct
    dtype = struct.numpy_dtype()
    checks = "\n".join(
        f'    printf("{m.name} %zu\\n", offsetof(sf_args, {m.name}));' for m in struct.members
    )
    program = tmp_path / "layout.c"
    program.write_text(textwrap.dedent("""\
        #include <stddef.h>
        #include <stdint.h>
        #include <stdio.h>
        typedef unsigned char sf_bool;
        """) + struct.c_declaration() + "\nint main(void) {\n" + checks
        + '\n    printf("size %zu\\n", sizeof(sf_args));\n    return 0;\n}\n')
    subprocess.run(["cc", "-o", str(tmp_path / "layout"), str(program)], check=True)
    output = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True,
                            check=True).stdout.split()
    measured = dict(zip(output[::2], map(int, output[1::2]), strict=True))
    assert measured.pop("size") == dtype.itemsize == struct.size
    assert measured == {m: dtype.fields[m][1] for m in dtype.names}


# --------------------------------------------------------------------------- grids


def _plan(name, **options):
    return _translate(name, **options).metadata.kernels[0]


def test_the_grid_covers_the_domain_with_whole_blocks():
    plan = _plan("laplacian")
    grid, block = grid_for(plan, {"I": (1, 511), "J": (1, 511), "K": (0, 80)})
    assert block == (16, 8, 1)
    assert grid == (5, 64, 510)  # 80 levels on x, 510 rows of J on y, 510 of I on z


def test_grids_beyond_the_y_and_z_limits_are_walked_in_grid_stride_loops():
    plan = _plan("laplacian")
    grid, _ = grid_for(plan, {"I": (1, 200_000), "J": (0, 2_000_000), "K": (0, 8)})
    assert grid[1] == MAX_GRID_YZ and grid[2] == MAX_GRID_YZ
    text = _translate("laplacian").text
    assert "x_J += (int64_t)gridDim.y * blockDim.y" in text
    assert "z += (int64_t)gridDim.z * blockDim.z" in text
    # Almost always run once: not unrolled (unrolled, every thread set up four iterations).
    assert text.count("#pragma unroll 1\n") == 2


def test_an_empty_domain_launches_nothing():
    assert grid_for(_plan("laplacian"), {"I": (1, 1), "J": (0, 9), "K": (0, 6)}) is None


# --------------------------------------------------------------------------- nvcc


def _sources(names, tmp_path, **options):
    files = []
    for name in names:
        source = _translate(name, **options)
        file = tmp_path / f"{name}.cu"
        file.write_text(source.text)
        files.append((file, source))
    return files


def _compile_all(compilation, files, directory):
    """Two nvcc runs side by side (the machine has two cores), each over half the files."""
    halves = [files[0::2], files[1::2]]
    with ThreadPoolExecutor(2) as pool:
        built = list(pool.map(lambda part: compilation.build([f for f, _ in part], directory),
                              halves))
    return dict(zip([f for part in halves for f, _ in part],
                    [b for part in built for b in part], strict=True))


@pytest.mark.requires_nvcc
def test_every_corpus_program_translates_to_cuda_that_nvcc_compiles_for_sm_90(tmp_path):
    compilation = NvccCompilation(str(tmp_path / "cache"), arch="sm_90")
    files = _sources([case.name for case in corpus.CASES], tmp_path)
    built = _compile_all(compilation, files, tmp_path)
    assert len(built) == len(corpus.CASES)
    for file, source in files:
        binary = built[file].read_bytes()
        for plan in source.metadata.kernels:
            assert plan.name.encode() in binary, f"{file.stem}: no kernel {plan.name}"


_COLUMN_CASES = ["laplacian", "hdiff", "concat_where_corner_and_shifted_local",
                 "tuple_return_mixed_dtypes_shifted", "broadcast_shifted_ij_field",
                 "builtins_predicates", "int64_remainder_negative_operands"]


_NARROW = CompileTimeArgs((("index_bits", 32), ("grid_covers", True)))


@pytest.mark.requires_nvcc
@pytest.mark.parametrize("parallelization", ["points", "columns"])
def test_kernels_with_32_bit_indices_and_one_point_per_thread_compile(tmp_path, parallelization):
    compilation = NvccCompilation(str(tmp_path / "cache"))
    files = []
    for name in [*_COLUMN_CASES, "scan_tridiagonal_two_calls", "workload_vertical_advection"]:
        program = attrs.evolve(_program(_case(name)), compile_time_args=_NARROW)
        source = CudaTranslation(parallelization=parallelization)(program)
        assert "32-bit indices, one point per thread" in source.text.splitlines()[0]
        assert all(plan.grid_covers for plan in source.metadata.kernels)
        file = tmp_path / f"{name}.cu"
        file.write_text(source.text)
        files.append((file, source))
    built = _compile_all(compilation, files, tmp_path)
    assert all(built[file].stat().st_size > 0 for file, _ in files)


def test_a_kernel_for_covering_grids_is_never_launched_on_a_domain_past_the_grid_limit():
    program = attrs.evolve(_program(_case("laplacian")), compile_time_args=_NARROW)
    (plan,) = CudaTranslation()(program).metadata.kernels
    assert grid_for(plan, {"I": (0, 9), "J": (0, 9), "K": (0, 6)}) is not None
    with pytest.raises(RuntimeError, match="one point per thread.*please report"):
        grid_for(plan, {"I": (0, 9), "J": (0, 8 * MAX_GRID_YZ + 8), "K": (0, 6)})


@pytest.mark.requires_nvcc
def test_the_columns_parallelization_compiles_too(tmp_path):
    compilation = NvccCompilation(str(tmp_path / "cache"))
    files = _sources(_COLUMN_CASES, tmp_path, parallelization="columns")
    built = _compile_all(compilation, files, tmp_path)
    assert all(built[file].stat().st_size > 0 for file, _ in files)


@pytest.mark.requires_nvcc
def test_a_build_is_published_once_and_verified_when_loaded(tmp_path):
    pipeline = cuda_gpu_pipeline(tmp_path / "cache")
    source = pipeline.translate(pipeline.program(ConcreteDefinition(corpus.lap.definition)))
    artifact = pipeline.compile(source)
    path = Path(artifact.path)
    assert path.parent == tmp_path / "cache" / "cuda" / "builds"
    assert path.suffix == ".fatbin"
    assert pipeline.compile(source).path == artifact.path  # a cache hit, not a rebuild
    executable = load_cuda(artifact)
    assert isinstance(executable, CudaProgram)
    assert executable.fast_entry() is NotImplemented  # nothing prepared yet
    damaged = bytearray(path.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    path.write_bytes(bytes(damaged))
    with pytest.raises(DamagedArtifactError, match="does not match its recorded hash"):
        load_cuda(artifact)
    rebuilt = pipeline.compile(source)  # the damaged entry fails validation: built again
    assert load_cuda(rebuilt).path == rebuilt.path


@pytest.mark.requires_nvcc
def test_nvcc_errors_name_the_program_and_keep_the_source(tmp_path):
    from backends.cuda import CudaCompilationError  # noqa: PLC0415

    source = _translate("laplacian")
    broken = attrs.evolve(source, text=source.text + "\nthis is not CUDA;\n")
    with pytest.raises(CudaCompilationError, match=r"sources kept in .*\n.*nvcc") as info:
        NvccCompilation(str(tmp_path / "cache"))(broken)
    assert source.entry_point in str(info.value)


def test_the_arch_must_name_a_gpu_architecture(tmp_path):
    with pytest.raises(ValueError, match="sm_90"):
        NvccCompilation(str(tmp_path), arch="hopper")


# --------------------------------------------------------------------------- argument checks


def test_a_numpy_array_for_a_gpu_backend_is_told_how_to_move_it():
    checker = ArgumentChecker(_program(corpus.lap).ir)
    with pytest.raises(ArgumentError, match=r"'inp' of lap\(\) is on CPU, but this backend "
                                            r"runs on CUDA.*cupy\.asarray\(x\)"):
        checker.check((np.ones((8, 7, 3)), np.zeros((8, 7, 3))), DeviceType.CUDA)


class _Memory:
    def __init__(self, ptr, size):
        self.ptr, self.size = ptr, size


class _Pointer:
    def __init__(self, ptr, mem):
        self.ptr, self.mem = ptr, mem


class _Device:
    def __init__(self, id):
        self.id = id


class _DeviceArray:
    """What the checks read of a CuPy array (``data.ptr``, ``data.mem``, ``device.id``)."""

    def __init__(self, shape, strides=None, device=0, offset=0, allocation=None, base=4096):
        self.shape, self.itemsize = tuple(shape), 8
        self.strides = tuple(strides) if strides else tuple(
            int(np.prod(shape[i + 1:])) * 8 for i in range(len(shape)))
        self.size = int(np.prod(shape))
        nbytes = allocation if allocation is not None else self.size * 8
        self.data = _Pointer(base + offset, _Memory(base, nbytes))
        self.device = _Device(device)


class _FakeLibrary:
    ndarray = _DeviceArray


def _check(*args):
    check_device_arguments(_program(corpus.lap).ir, args, 0, _FakeLibrary)


def test_device_arrays_that_fit_pass_the_checks():
    _check(_DeviceArray((8, 7, 3)), _DeviceArray((8, 7, 3), base=1 << 20))


def test_an_array_on_another_gpu_is_refused_naming_both_devices():
    with pytest.raises(ArgumentError, match=r"'out' of lap\(\) is on GPU 1, but the program "
                                            r"runs on the current device, GPU 0.*Device\(1\)"):
        _check(_DeviceArray((8, 7, 3)), _DeviceArray((8, 7, 3), device=1, base=1 << 20))


def test_a_host_array_that_reaches_the_launcher_is_told_to_use_cupy_asarray():
    with pytest.raises(ArgumentError, match=r"'inp' of lap\(\) must be a cupy.ndarray.*"
                                            r"cupy.asarray"):
        _check(np.ones((8, 7, 3)), _DeviceArray((8, 7, 3)))


def test_a_view_beyond_its_allocation_is_refused():
    with pytest.raises(ArgumentError, match="claims memory it does not have"):
        _check(_DeviceArray((8, 7, 3), allocation=100), _DeviceArray((8, 7, 3), base=1 << 20))


def test_a_written_broadcast_view_is_refused():
    with pytest.raises(ArgumentError, match=r"'out' .*broadcast view"):
        _check(_DeviceArray((8, 7, 3)), _DeviceArray((8, 7, 3), strides=(0, 24, 8),
                                                      base=1 << 20, allocation=7 * 3 * 8))


def test_strides_of_partial_elements_and_misaligned_data_are_refused():
    with pytest.raises(ArgumentError, match="not whole elements"):
        _check(_DeviceArray((8, 7, 3), strides=(170, 24, 8), allocation=8 * 170),
               _DeviceArray((8, 7, 3), base=1 << 20))
    with pytest.raises(ArgumentError, match="not aligned"):
        _check(_DeviceArray((8, 7, 3), offset=4, allocation=8 * 7 * 3 * 8 + 8),
               _DeviceArray((8, 7, 3), base=1 << 20))


def test_an_output_sharing_memory_with_the_input_is_refused():
    with pytest.raises(ArgumentError, match=r"output 'out' of 'laplacian' shares memory with "
                                            r"'inp'"):
        _check(_DeviceArray((8, 7, 3)), _DeviceArray((8, 7, 3), offset=8,
                                                      allocation=8 * 7 * 3 * 8 + 8))


# --------------------------------------------------------------------------- the backend


@pytest.mark.simulates_missing_package
def test_cuda_gpu_without_cupy_names_cupy(monkeypatch):
    monkeypatch.delitem(backends._created, "cuda_gpu", raising=False)
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(AttributeError, match=r"'cupy'.*stencilforge\[cuda\]"):
        backends.cuda_gpu


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_cuda_gpu_is_a_cuda_backend_with_the_cupy_allocator_built_for_this_device():
    import cupy  # noqa: PLC0415  (optional package, under its marker)

    import allocators  # noqa: PLC0415
    from pipeline.steps import unwrap_step  # noqa: PLC0415

    backend = backends.cuda_gpu
    assert backend.device_type is DeviceType.CUDA
    assert isinstance(backend.__field_allocator__, allocators.CuPyBufferAllocator)
    compilation = unwrap_step(backend.pipeline.compilation)
    assert compilation.arch == f"sm_{cupy.cuda.Device().compute_capability}"


def _on_gpu(case, backend, parallelization=None):
    import cupy  # noqa: PLC0415  (optional package, under its marker)

    if parallelization is not None:
        pipeline = backend.pipeline.evolve_step("translation", parallelization=parallelization)
        backend = attrs.evolve(backend, name=f"{backend.name}_{parallelization}",
                               pipeline=pipeline)
    host = case.build()
    expected = {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in host.items()}
    case.reference(**expected)
    args = {k: cupy.asarray(v) if isinstance(v, np.ndarray) else v for k, v in host.items()}
    case.program.with_backend(backend)(**args)
    for out in case.outputs:
        rtol, atol = case.tolerance(expected[out].dtype)
        np.testing.assert_allclose(args[out].get(), expected[out], rtol=rtol, atol=atol)


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
@pytest.mark.parametrize("name", ["laplacian", "hdiff", "scan_three_passes_and_a_chain",
                                  "concat_where_corner_and_shifted_local",
                                  "broadcast_shifted_ij_field"])
def test_cuda_gpu_columns_match_numpy(name):
    _on_gpu(_case(name), backends.cuda_gpu, parallelization="columns")


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_cuda_gpu_refuses_numpy_arrays_saying_how_to_move_them():
    with pytest.raises(ArgumentError, match=r"is on CPU, but this backend runs on CUDA.*"
                                            r"cupy\.asarray"):
        corpus.lap.with_backend(backends.cuda_gpu)(np.ones((8, 7, 3)), np.zeros((8, 7, 3)))


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_a_repeat_call_reuses_the_prepared_signature(monkeypatch):
    import cupy  # noqa: PLC0415  (optional package, under its marker)

    program = corpus.lap.with_backend(backends.cuda_gpu)
    inp, out = cupy.ones((8, 7, 3)), cupy.zeros((8, 7, 3))
    executable = program.compile(inp, out).executable
    program(inp, out)
    prepared = []
    original = executable._prepare
    monkeypatch.setattr(executable, "_prepare",
                        lambda *a: prepared.append(1) or original(*a))
    inp[3, 3, 1] = 5.0
    program(inp, out)
    assert float(out[3, 3, 1]) == -16.0
    assert prepared == []
    other = cupy.zeros((8, 7, 3))
    program(inp, other)  # new arguments: checked and prepared
    assert prepared == [1]
    assert float(other[3, 3, 1]) == -16.0


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_launches_go_to_cupys_current_stream_and_can_be_captured_in_a_graph():
    import cupy  # noqa: PLC0415  (optional package, under its marker)

    program = corpus.lap.with_backend(backends.cuda_gpu)
    inp, out = cupy.ones((8, 7, 3)), cupy.zeros((8, 7, 3))
    program(inp, out)  # prepares the signature outside the capture
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        # A launch on any other stream than the capturing one is an error during a capture.
        stream.begin_capture()
        program(inp, out)
        graph = stream.end_capture()
    inp[3, 3, 1] = 5.0
    cupy.cuda.Device().synchronize()
    assert float(out[3, 3, 1]) == 0.0  # captured, not run
    graph.launch(stream)
    stream.synchronize()
    assert float(out[3, 3, 1]) == -16.0


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_an_array_on_another_gpu_is_refused_before_any_launch():
    import cupy  # noqa: PLC0415  (optional package, under its marker)

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    program = corpus.lap.with_backend(backends.cuda_gpu)
    inp = cupy.ones((8, 7, 3))
    with cupy.cuda.Device(1):
        out = cupy.zeros((8, 7, 3))
    with pytest.raises(ArgumentError, match=r"'out' of lap\(\) is on GPU 1"):
        program(inp, out)
