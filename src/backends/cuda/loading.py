"""The CUDA loading step: ``CompiledArtifact -> CudaProgram`` (a launcher of the fatbin's
kernels).

Loading reads the fatbin and checks its bytes against the recorded hash; those verified bytes
are what the driver later loads (once per device, on the first call there), so a file changed
after the check cannot be run. Loading needs no GPU.

Calls: the full path (``CudaProgram.__call__``, on arguments the dispatcher's
``ArgumentChecker`` accepted) checks what the kernels need of device arrays
(``backends.cuda.checks``), then prepares the call: the argument struct filled once
(pointers, strides, scalars, domains), each kernel's grid, and the scratch buffers of scans,
remembered by the arguments' signature (``backends.prepared_calls``). ``fast_entry`` (what
``Program.__call__`` tries first) reuses it when the same arrays arrive again, unchanged, on
the same device, and returns ``NotImplemented`` otherwise; a repeat call is then a
comparison and one launch per stencil.

A launch goes to the driver (``cuLaunchKernel`` through ``cupy.cuda.driver.launchKernel``)
with the kernel's parameter block prepared with the call: a pointer to the argument
struct. CuPy's ``Function.__call__`` converts its arguments on every launch, which cost
5.6 us of an 8.7 us launch on the H200 (2.9-3.2 us through the driver).
"""

from __future__ import annotations

import ctypes
import importlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from backends.build_cache import verified_bytes
from backends.cuda.checks import check_device_arguments
from backends.cuda.interface import CudaInterface, KernelPlan
from backends.cuda.specialization import MAX_GRID_YZ
from backends.prepared_calls import ArgumentSignature, PreparedCalls
from pipeline.dsl.arguments import resolve_domain
from pipeline.dsl.types import FieldType
from pipeline.errors import DamagedArtifactError
from pipeline.stages import CompiledArtifact

__all__ = ["MAX_GRID_YZ", "CudaProgram", "grid_for", "load_cuda", "plan_launches"]



def _cupy() -> Any:
    return importlib.import_module("cupy")


def grid_for(
    plan: KernelPlan, domain: dict[str, tuple[int, int]]
) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
    """The (grid, block) of ``plan``'s kernel over ``domain`` (start, stop per dimension);
    ``None`` when the domain is empty (nothing to launch).

    Raises:
        RuntimeError: the kernel computes one point per thread (``plan.grid_covers``) but
            the domain needs more blocks than a grid may have: the compile-time arguments
            that chose that kernel were not those of these arrays (a bug to report).
    """
    extents = {d: hi - lo for d, (lo, hi) in domain.items() if d in plan.dims}
    if any(extents[d] <= 0 for d in plan.dims):
        return None
    counts = []
    for dims in plan.threads:
        count = 1
        for d in dims:
            count *= extents[d]
        counts.append(count)
    bx, by, bz = plan.block
    blocks = (-(-counts[0] // bx), -(-counts[1] // by), -(-counts[2] // bz))
    if plan.grid_covers and max(blocks[1:]) > MAX_GRID_YZ:
        raise RuntimeError(
            f"internal error: kernel {plan.name} computes one point per thread, but its domain "
            f"{domain} needs {blocks} blocks, more than a grid may have along y or z; please "
            "report this with the arrays' shapes"
        )
    grid = (blocks[0], min(blocks[1], MAX_GRID_YZ), min(blocks[2], MAX_GRID_YZ))
    return grid, plan.block


@attrs.frozen(eq=False)
class _Launches:
    """A prepared call: the filled argument struct and the launches.

    Attributes:
        record: the argument struct (one element), passed by value to every kernel.
        launches: per non-empty stencil: the kernel's function handle, grid and block
            (x, y, z each).
        keep: the scan scratch buffers, alive as long as the prepared call.
        parameters: the kernels' parameter block: one pointer, to ``record``.
    """

    record: np.ndarray[Any, Any]
    launches: tuple[tuple[int, int, int, int, int, int, int], ...]
    keep: tuple[Any, ...]
    parameters: Any = attrs.field(
        init=False,
        default=attrs.Factory(
            lambda self: (ctypes.c_void_p * 1)(self.record.ctypes.data), takes_self=True
        ),
    )


class CudaProgram:
    """A loaded CUDA program (a ``SelfCheckingExecutable``).

    ``fast_entry(*args)`` launches when ``args`` match the signature of a call an earlier
    full call prepared (same array objects, shapes, strides and dtypes, same scalar values,
    same current device) and returns ``NotImplemented`` otherwise. Calling the object runs
    arguments the dispatcher's checks accepted: it checks the device arrays, prepares the call
    and launches. Launches go to CuPy's current stream and return without waiting, as CuPy's own
    operations do.
    """

    def __init__(self, interface: CudaInterface, fatbin: bytes, path: str) -> None:
        self.interface = interface
        self.path = path
        self._fatbin = fatbin
        ir = interface.ir
        self._fields = tuple(i for i, p in enumerate(ir.params) if isinstance(p.type, FieldType))
        self._scalars = tuple(
            i for i, p in enumerate(ir.params) if not isinstance(p.type, FieldType)
        )
        self._dtype = interface.struct.numpy_dtype()
        #: per device: the loaded module and its kernels, by name
        self._modules: dict[int, tuple[Any, dict[str, Any]]] = {}
        self._calls: PreparedCalls[_Launches] = PreparedCalls()
        self._lock = threading.Lock()
        self._get_device: Callable[[], int] | None = None
        #: CuPy's ``driver.launchKernel`` and ``get_current_stream``, set by the first call
        self._driver: tuple[Callable[..., None], Callable[[], Any]] | None = None

    def __repr__(self) -> str:
        return f"CudaProgram({self.interface.ir.name}, {self.path!r})"

    # -- the fast path ------------------------------------------------------------------------
    def fast_entry(self, *args: Any) -> Any:
        """Launch a call prepared for ``args``, or return ``NotImplemented``."""
        get_device = self._get_device
        if get_device is None:
            return NotImplemented
        prepared = self._calls.find(args, get_device())
        if prepared is None:
            return NotImplemented
        self._launch(prepared)
        return None

    def _launch(self, prepared: _Launches) -> None:
        assert self._driver is not None  # set before the first call is prepared
        launch, current_stream = self._driver
        stream = current_stream().ptr
        parameters = ctypes.addressof(prepared.parameters)
        for function, gx, gy, gz, bx, by, bz in prepared.launches:
            launch(function, gx, gy, gz, bx, by, bz, 0, stream, parameters, 0)

    # -- the full path ------------------------------------------------------------------------
    def __call__(self, *args: Any) -> None:
        if self.fast_entry(*args) is None:
            return
        cupy = _cupy()
        if self._get_device is None:
            self._driver = (cupy.cuda.driver.launchKernel, cupy.cuda.get_current_stream)
            self._get_device = cupy.cuda.runtime.getDevice
        device = int(cupy.cuda.runtime.getDevice())
        check_device_arguments(self.interface.ir, args, device, cupy)
        self._launch(self._prepare(args, device, cupy))

    def _kernels(self, device: int, cupy: Any) -> dict[str, Any]:
        """The kernels loaded on ``device`` (the current one), loading the module once."""
        loaded = self._modules.get(device)
        if loaded is None:
            module = cupy.cuda.function.Module()
            module.load(self._fatbin)
            functions = {p.name: module.get_function(p.name) for p in self.interface.kernels}
            loaded = self._modules[device] = (module, functions)
        return loaded[1]

    def _prepare(self, args: tuple[Any, ...], device: int, cupy: Any) -> _Launches:
        record = np.zeros(1, self._dtype)
        launches, keep = plan_launches(
            self.interface,
            args,
            record,
            pointer=lambda array: int(array.data.ptr),
            allocate=lambda elements, dtype: cupy.empty(elements, dtype=dtype),
        )
        with self._lock:
            kernels = self._kernels(device, cupy)
        prepared = _Launches(
            record,
            tuple((int(kernels[plan.name].ptr), *grid, *block) for plan, grid, block in launches),
            tuple(keep),
        )
        signature = ArgumentSignature.of(args, self._fields, self._scalars, context=device)
        self._calls.remember(args, signature, prepared)
        return prepared


Launch = tuple[KernelPlan, tuple[int, int, int], tuple[int, int, int]]


def plan_launches(
    interface: CudaInterface,
    args: tuple[Any, ...],
    record: np.ndarray[Any, Any],
    *,
    pointer: Callable[[Any], int],
    allocate: Callable[[int, str], Any],
) -> tuple[list[Launch], list[Any]]:
    """Fill ``record`` (one ``sf_args``) for ``args`` and plan the kernels' launches.

    Args:
        interface: the program's launch plans.
        args: one value per parameter (checked), arrays of the memory the kernels read.
        record: the argument struct to fill: pointers, strides, scalars, domains, buffers.
        pointer: an array's address.
        allocate: a scratch buffer of so many elements of a dtype (by name), in that memory.

    Returns:
        Per stencil whose domain is not empty, in order: its plan, grid and block; and the
        scan scratch buffers, which must live as long as the launches may run.
    """
    ir = interface.ir
    shapes: dict[str, tuple[int, ...]] = {}
    scalars: dict[str, Any] = {}
    for param, value in zip(ir.params, args, strict=True):
        if isinstance(param.type, FieldType):
            shapes[param.name] = tuple(value.shape)
            record[f"p_{param.name}"] = pointer(value)
            if param.type.dims:
                record[f"s_{param.name}"] = [s // value.itemsize for s in value.strides]
        else:
            scalars[param.name] = value
            record[f"sc_{param.name}"] = value
    launches: list[Launch] = []
    keep: list[Any] = []
    for plan in interface.kernels:
        stencil = ir.stencils[plan.stencil]
        target = stencil.outputs[0]
        target_type = ir.param(target.name).type
        assert isinstance(target_type, FieldType)
        bounds = resolve_domain(target.slices, shapes[target.name], scalars)
        domain = dict(zip(target_type.dim_names, bounds, strict=True))
        if plan.dims:
            record[f"lo{plan.stencil}"] = [domain[d][0] for d in plan.dims]
            record[f"hi{plan.stencil}"] = [domain[d][1] for d in plan.dims]
        config = grid_for(plan, domain)
        if config is None:
            continue
        if plan.kept:
            assert plan.sequential is not None
            elements = 1
            for d in plan.dims:
                elements *= domain[d][1] - domain[d][0]
            for member, dtype in plan.kept:
                buffer = allocate(elements, dtype)
                keep.append(buffer)
                record[member] = pointer(buffer)
        launches.append((plan, *config))
    return launches, keep


def load_cuda(artifact: CompiledArtifact, /) -> CudaProgram:
    """Read the fatbin of ``artifact`` and check its content hash; never needs a GPU.

    Raises:
        DamagedArtifactError: the file is missing or its bytes changed since publish.
    """
    path = Path(artifact.path)
    data = verified_bytes(path, artifact.content_hash, "built CUDA program")
    interface = artifact.source.metadata
    if not isinstance(interface, CudaInterface):
        raise DamagedArtifactError(
            f"the artifact {path} carries no CUDA launch plan; delete the cache entry to rebuild it"
        )
    return CudaProgram(interface, data, str(path))
