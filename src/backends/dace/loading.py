"""The SDFG loading step: ``CompiledArtifact -> SDFGProgram`` (a built SDFG, callable).

Loading never compiles: the SDFG is rebuilt from the JSON the artifact carries and bound to
the published library through DaCe's ``get_program_handle``. A library is loaded once per
process (DaCe refuses, or copies the file, when one path is loaded twice).

Calls: the full path (``SDFGProgram.__call__``, on arguments the dispatcher's checks accepted,
so with the same errors as every other backend) builds DaCe's argument vector (pointers,
sizes, strides, domains and the mode of each stencil) and calls ``fast_call``. The vector is
remembered per argument signature (``backends.prepared_calls``): ``fast_entry`` (what
``Program.__call__`` tries first) reuses it when the same arrays arrive again with unchanged
shapes, strides and dtypes, and returns ``NotImplemented`` otherwise, so the dispatcher
checks the new arguments. The full path tries ``fast_entry`` first too, so an executable
called directly is as fast on a repeat call. A repeat call without DaCe call hooks enters
the translation's packed entry with the vector's prepared argument words (one ctypes
argument instead of one per SDFG argument).

Transients with external memory (CPU SDFGs): one buffer per loaded library, grown when a
call needs more, is handed to the SDFG's state whenever the running argument vector changes
(``_ExternalMemory``). The state is shared by every call of the library, so handing over and
running happen under one lock.
"""

from __future__ import annotations

import ctypes
import functools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from allocators import DeviceType
from backends.dace import naming
from backends.dace.compilation import artifact_files, artifact_hash
from backends.dace.naming import SDFGInterface
from backends.prepared_calls import ArgumentSignature, PreparedCalls
from pipeline.dsl.arguments import resolve_domain
from pipeline.dsl.types import FieldType
from pipeline.errors import ArgumentError, DamagedArtifactError
from pipeline.stages import CompiledArtifact

__all__ = ["SDFGProgram", "load_sdfg", "load_sdfg_gpu"]

_CTYPES: dict[str, Any] = {
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "bool": ctypes.c_bool,
}

# Libraries loaded in this process, by path and content hash (a documented registry: a
# library cannot be loaded twice, and its handle stays valid for the life of the process).
_loaded: dict[tuple[str, str], Any] = {}
_loaded_lock = threading.Lock()


@attrs.frozen(eq=False)
class _ArgumentVector:
    """A prepared call: DaCe's argument vector.

    Attributes:
        callargs: the SDFG's arguments, in its order.
        initargs: those of them its initialization takes (the free symbols).
        words: ``callargs`` as 64-bit words, for the packed entry.
        words_address: where ``words`` are (``ndarray.ctypes`` costs microseconds: read once).
    """

    callargs: tuple[Any, ...]
    initargs: tuple[Any, ...]
    words: np.ndarray = attrs.field(
        init=False, default=attrs.Factory(lambda self: _words(self.callargs), takes_self=True)
    )
    words_address: int = attrs.field(
        init=False, default=attrs.Factory(lambda self: self.words.ctypes.data, takes_self=True)
    )


def _words(callargs: tuple[Any, ...]) -> np.ndarray:
    """``callargs`` as the packed entry reads them: pointers and integers by value, floats
    by their bits (a ``float`` in the low 32)."""
    words = np.zeros(max(len(callargs), 1), np.int64)
    for index, value in enumerate(callargs):
        if isinstance(value, ctypes.c_double):
            words[index] = np.float64(value.value).view(np.int64)
        elif isinstance(value, ctypes.c_float):
            words[index] = int(np.float32(value.value).view(np.int32))
        else:
            words[index] = int(value.value or 0)
    return words


class _ExternalMemory:
    """The buffer behind a loaded SDFG's external transients, and the lock of its state.

    DaCe sizes and lays out external memory from the symbols (``initargs``), so the buffer
    is handed over again when the argument vector changes. It is reused across calls: allocating
    the transients on every call page-faulted through all of them (about 100 MB for hdiff
    at 256x256x64).
    """

    def __init__(self, compiled: Any, storage: Any) -> None:
        self.lock = threading.Lock()
        self._size = compiled.get_exported_function(
            f"__dace_get_external_memory_size_{storage.name}", restype=ctypes.c_size_t
        )
        self._set = compiled.get_exported_function(f"__dace_set_external_memory_{storage.name}")
        if self._size is None or self._set is None:
            raise DamagedArtifactError(
                f"the built SDFG {compiled.filename} has external {storage.name} memory but "
                "no functions to size or set it; delete the cache entry to rebuild it"
            )
        self._buffer: np.ndarray | None = None
        #: the state and the argument vector the memory was last set for
        self._current: tuple[int | None, _ArgumentVector] | None = None

    def bind(self, handle: Any, vector: _ArgumentVector) -> None:
        """Give the state at ``handle`` memory for ``vector`` (the caller holds ``lock``).

        A new state (DaCe re-initializes after a failed call) gets it again too.
        """
        current = (handle.value, vector)
        previous = self._current
        if previous is not None and previous[0] == handle.value and previous[1] is vector:
            return
        needed = int(self._size(handle, *vector.initargs))
        if self._buffer is None or self._buffer.nbytes < needed:
            self._buffer = None  # the old buffer goes before the new one is allocated
            self._buffer = np.empty(max(needed, 64), np.uint8)
        self._set(handle, ctypes.c_void_p(self._buffer.ctypes.data), *vector.initargs)
        self._current = current


class SDFGProgram:
    """A loaded SDFG program.

    ``fast_entry(*args)`` runs the program when ``args`` match the signature of an argument
    vector an earlier full call prepared (same array objects, shapes, strides, dtypes, scalar
    values), and returns ``NotImplemented`` without touching memory otherwise (a
    ``SelfCheckingExecutable``: the arguments were checked when the vector was prepared).
    Calling the object runs arguments the dispatcher checked: it prepares their vector and
    runs.
    """

    def __init__(
        self,
        compiled: Any,
        interface: SDFGInterface,
        path: str,
        device_type: DeviceType,
        memory: _ExternalMemory | None = None,
    ) -> None:
        self.compiled = compiled
        self._memory = memory
        self.interface = interface
        self.path = path
        self.device_type = device_type
        ir = interface.ir
        self._fields = tuple(i for i, p in enumerate(ir.params) if isinstance(p.type, FieldType))
        written = {t.name for s in ir.stencils for t in s.outputs}
        self._written = frozenset(i for i, p in enumerate(ir.params) if p.name in written)
        self._scalars = tuple(
            i for i, p in enumerate(ir.params) if not isinstance(p.type, FieldType)
        )
        sdfg = compiled.sdfg
        self._order: tuple[str, ...] = tuple(
            sdfg.signature_arglist(with_types=False, arglist=sdfg.arglist())
        )
        free = set(map(str, sdfg.free_symbols))
        self._init_positions = tuple(i for i, n in enumerate(self._order) if n in free)
        self._unit = dict(interface.unit_stride)
        self._calls: PreparedCalls[_ArgumentVector] = PreparedCalls()
        #: DaCe's entry function and library handle, once a call has initialized the SDFG
        self._entry: tuple[Callable[..., Any], Any] | None = None
        #: the translation's packed entry (``__sf_packed_<name>``), when the library has one
        self._packed = compiled.get_exported_function(f"__sf_packed_{sdfg.name}")
        if self._packed is not None:
            self._packed.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    def __repr__(self) -> str:
        return f"SDFGProgram({self.interface.ir.name}, {self.path!r})"

    # -- the fast path ---------------------------------------------------------------------
    def fast_entry(self, *args: Any) -> Any:
        """Run the argument vector prepared for ``args``, or return ``NotImplemented``."""
        vector = self._calls.find(args)
        if vector is None:
            return NotImplemented
        self._run(vector)
        return None

    def _run(self, vector: _ArgumentVector) -> None:
        memory = self._memory
        if memory is None:
            self._enter(vector)
            return
        with memory.lock:
            if not self.compiled._initialized:
                # DaCe initializes on the first call (as fast_call does: load, initialize);
                # the memory must be set before the SDFG first runs.
                self.compiled._lib.load()
                self.compiled._initialize(vector.initargs)
            memory.bind(self.compiled._libhandle, vector)
            self._enter(vector)

    def _enter(self, vector: _ArgumentVector) -> None:
        entry = self._entry
        if entry is not None and not _compiled_sdfg_hooks():
            if self._packed is not None:
                self._packed(entry[1], vector.words_address)
            else:
                entry[0](entry[1], *vector.callargs)
        else:
            self.compiled.fast_call(vector.callargs, vector.initargs)
            if self._entry is None:
                self._entry = _initialized_entry(self.compiled)

    # -- the full path ---------------------------------------------------------------------
    def __call__(self, *args: Any) -> None:
        # The executable called directly is as fast as the program on a repeat call: the
        # checks ran when the vector was prepared, and its signature holds them unchanged.
        if self.fast_entry(*args) is None:
            return
        self._run(self._prepare(args))

    def _prepare(self, args: tuple[Any, ...]) -> _ArgumentVector:
        ir = self.interface.ir
        values: dict[str, Any] = {}
        for param, value in zip(ir.params, args, strict=True):
            if not isinstance(param.type, FieldType):
                values[naming.scalar(param.name)] = _CTYPES[param.type.dtype.name](value)
                continue
            itemsize = param.type.dtype.itemsize
            shape, strides = tuple(value.shape), tuple(value.strides)
            if self._unit.get(param.name, False) and shape[-1] > 1 and strides[-1] != itemsize:
                raise ArgumentError(
                    f"argument {ir.shown(param.name)!r} of {ir.name}(): this executable was "
                    "compiled "
                    "for arrays whose last dimension is contiguous; call the program itself "
                    "(it compiles a variant for other layouts)"
                )
            values[naming.array(param.name)] = ctypes.c_void_p(_data_pointer(value))
            for axis, (n, s) in enumerate(zip(shape, strides, strict=True)):
                values[naming.size(param.name, axis)] = n
                values[naming.stride(param.name, axis)] = s // itemsize
        scalar_values = {
            p.name: v
            for p, v in zip(ir.params, args, strict=True)
            if not isinstance(p.type, FieldType)
        }
        shapes = {
            p.name: tuple(v.shape)
            for p, v in zip(ir.params, args, strict=True)
            if isinstance(p.type, FieldType)
        }
        for index, (stencil, dims) in enumerate(
            zip(ir.stencils, self.interface.iteration_dims, strict=True)
        ):
            target = stencil.outputs[0]
            target_type = ir.param(target.name).type
            assert isinstance(target_type, FieldType)
            domain = dict(
                zip(
                    target_type.dim_names,
                    resolve_domain(target.slices, shapes[target.name], scalar_values),
                    strict=True,
                )
            )
            points = 1
            for dim in dims:
                low, high = domain[dim]
                values[naming.domain_low(index, dim)] = low
                values[naming.domain_high(index, dim)] = high
                points *= high - low
            if points == 0:
                mode = naming.SKIP
            elif self.device_type != DeviceType.CPU or points >= self.interface.parallel_min_points:
                mode = naming.PARALLEL
            else:
                mode = naming.SEQUENTIAL
            values[naming.mode(index)] = mode
        callargs = tuple(
            value if isinstance(value, ctypes._SimpleCData) else ctypes.c_int64(value)
            for value in (values[name] for name in self._order)
        )
        initargs = tuple(callargs[i] for i in self._init_positions)
        vector = _ArgumentVector(callargs, initargs)
        signature = ArgumentSignature.of(args, self._fields, self._scalars, written=self._written)
        self._calls.remember(args, signature, vector)
        return vector


def _initialized_entry(compiled: Any) -> tuple[Callable[..., Any], Any] | None:
    """The entry function and handle of an initialized ``CompiledSDFG``, or ``None``.

    ``CompiledSDFG.fast_call`` wraps the same ctypes call in its call hooks and error
    handling, about 1.3 us of a small call's 5; a repeat call with a prepared vector
    calls the entry directly while no hook is registered. These are DaCe 2.0's attributes
    (the extra pins that version); without them every call goes through ``fast_call``.
    """
    entry = getattr(compiled, "_cfunc", None)
    handle = getattr(compiled, "_libhandle", None)
    ready = getattr(compiled, "_initialized", False) is True
    running = getattr(compiled, "do_not_execute", True) is False
    if entry is None or handle is None or not ready or not running:
        return None
    return entry, handle


def _compiled_sdfg_hooks() -> bool:
    """Whether a DaCe compiled-SDFG call hook is registered (then calls go through DaCe)."""
    hooks = _hook_registry()
    return bool(hooks) and any(hook is not None for hook in hooks)


@functools.cache
def _hook_registry() -> list[Any]:
    # DaCe registers and unregisters hooks in this list in place.
    import dace.hooks  # noqa: PLC0415  (optional package, loaded with the SDFG)

    registry: list[Any] = getattr(dace.hooks, "_COMPILED_SDFG_CALL_HOOKS", [object()])
    return registry


def _data_pointer(array: Any) -> int:
    if isinstance(array, np.ndarray):
        return int(array.__array_interface__["data"][0])
    cuda = getattr(array, "__cuda_array_interface__", None)
    if cuda is not None:
        return int(cuda["data"][0])
    return int(array.__array_interface__["data"][0])


def _load(artifact: CompiledArtifact, device_type: DeviceType) -> SDFGProgram:
    library = Path(artifact.path)
    library, stub = artifact_files(library.parent, artifact.entry_point)
    try:
        content_hash = artifact_hash(library, stub)
    except OSError as error:
        raise DamagedArtifactError(f"built SDFG {library} cannot be read: {error}") from error
    if content_hash != artifact.content_hash:
        raise DamagedArtifactError(f"built SDFG {library} does not match its recorded hash")
    interface = artifact.source.metadata
    key = (str(library), content_hash)
    with _loaded_lock:
        loaded = _loaded.get(key)
        if loaded is None:
            import dace  # noqa: PLC0415  (optional package)
            from dace.codegen.compiler import get_program_handle  # noqa: PLC0415

            sdfg = dace.SDFG.from_json(json.loads(artifact.source.text))
            compiled = get_program_handle(library, sdfg, stub)
            storages = sorted(compiled.external_memory_types, key=lambda storage: storage.name)
            if len(storages) > 1 or any(s != dace.StorageType.CPU_Heap for s in storages):
                raise DamagedArtifactError(
                    f"the built SDFG {library} keeps external memory in "
                    f"{[s.name for s in storages]}; this loader provides only CPU_Heap"
                )
            memory = _ExternalMemory(compiled, storages[0]) if storages else None
            loaded = _loaded[key] = (compiled, memory)
    compiled, memory = loaded
    return SDFGProgram(compiled, interface, str(library), device_type, memory)


def load_sdfg(artifact: CompiledArtifact, /) -> SDFGProgram:
    """Load a built CPU SDFG after checking its content hash; never compiles.

    Raises:
        DamagedArtifactError: the library or its stub is missing or changed since publish.
    """
    return _load(artifact, DeviceType.CPU)


def load_sdfg_gpu(artifact: CompiledArtifact, /) -> SDFGProgram:
    """Load a built CUDA SDFG (CuPy arguments) after checking its content hash."""
    return _load(artifact, DeviceType.CUDA)
