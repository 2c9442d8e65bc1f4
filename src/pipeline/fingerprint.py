"""Stable content fingerprints of Python values.

``fingerprint(value)`` is a hex SHA-256 digest that depends only on the value's content, so
the same value has the same fingerprint in another process and under another
``PYTHONHASHSEED``. Every encoding is type-tagged: ``1``, ``1.0`` and ``True`` differ, and so
do ``(1,)`` and ``[1]``.

Supported: ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``; tuples,
lists, dicts and (frozen)sets; attrs classes and dataclasses (by their fields); enums; types;
modules; NumPy dtypes, scalars and arrays; functions (module, qualified name, a hash of the
code, and the values of the closure); ``functools.partial``; and any object with a
``__fingerprint__()`` method returning a fingerprintable value.

In strict mode (the default, and what disk caches use) anything else raises
``FingerprintError``, naming the object. Non-strict mode identifies such objects by ``id``:
valid only within one process and only while the object is alive, which is what an in-memory
cache needs and nothing more.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import importlib.metadata
import importlib.util
import math
import os
import site
import struct
import sys
import sysconfig
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import attrs
import numpy as np

from pipeline.errors import FingerprintError

__all__ = ["code_digest", "fingerprint", "fingerprint_bytes", "source_digest"]

_MAX_DEPTH = 200


def fingerprint(value: object, *, strict: bool = True) -> str:
    """Return the hex SHA-256 content fingerprint of ``value``.

    Args:
        value: the object to fingerprint.
        strict: raise instead of falling back to a process-local identity.

    Raises:
        FingerprintError: (a ``TypeError``) in strict mode, for an object with no stable
            encoding; the message names the object and the path to it.
    """
    return _Encoder(strict).digest(value)


def fingerprint_bytes(data: bytes) -> str:
    """The hex SHA-256 of raw bytes (file contents, generated source)."""
    return hashlib.sha256(data).hexdigest()


def source_digest(*modules: types.ModuleType, packages: Iterable[str] = ()) -> str:
    """A digest of the source files of ``modules`` and of every module file under the
    ``packages`` named (dotted names; their subpackages included).

    Steps whose output depends on their own code (a translation's generator) put this in
    their fingerprint, so that a changed generator never reuses a disk-cached result made
    by the old one, even when the package version did not change. Naming a package rather
    than listing its modules cannot forget one, a module added later included.

    Raises:
        FingerprintError: a module has no source file, or a name is not a package's.
    """
    digest = hashlib.sha256()
    for module in modules:
        path = getattr(module, "__file__", None)
        if path is None:
            raise FingerprintError(f"module {module.__name__} has no source file to digest")
        with open(path, "rb") as handle:
            digest.update(module.__name__.encode() + b"\0" + handle.read())
    if isinstance(packages, str):
        raise TypeError(f"packages must be a collection of names, not the string {packages!r}")
    for package in packages:
        for name, path in _package_files(package):
            try:
                data = path.read_bytes()
            except OSError as error:
                message = f"cannot read {path} to digest {package}: {error}"
                raise FingerprintError(message) from error
            digest.update(f"{name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


def _package_files(package: str) -> list[tuple[str, Path]]:
    """The module files under ``package``'s folders, each named by its path from there: its
    modules' sources (``.py``), or in an install without sources the compiled modules that
    stand in their place (``.pyc`` beside ``__init__.pyc``). Only what Python would import
    counts: files and folders named as identifiers, folders that are packages."""
    try:
        spec = importlib.util.find_spec(package)
    except ImportError as error:
        raise FingerprintError(f"{package} is not a package with folders to digest") from error
    folders = spec.submodule_search_locations if spec is not None else None
    if not folders:
        raise FingerprintError(f"{package} is not a package with folders to digest")
    for suffix in (".py", ".pyc"):
        found = sorted(
            (f"{package}/{path.relative_to(folder).as_posix()}", path)
            for folder in map(Path, folders)
            for path in folder.rglob(f"*{suffix}")
            if _importable(path.relative_to(folder), folder, suffix)
        )
        if found:
            return found
    raise FingerprintError(
        f"{package} has no module files to digest (a zipped install?): install stencilforge "
        "from its files"
    )


def _importable(relative: Path, folder: Path, suffix: str) -> bool:
    """Whether ``folder / relative`` is a module Python would import from ``folder``'s
    package: identifiers all the way, every folder on the way a package."""
    *parents, name = relative.parts
    if not (name.endswith(suffix) and name[: -len(suffix)].isidentifier()):
        return False
    if not (folder / relative).is_file():
        return False
    inside = folder
    for part in parents:
        inside = inside / part
        if not (part.isidentifier() and (inside / f"__init__{suffix}").is_file()):
            return False
    return True


def _installed_roots() -> tuple[str, ...]:
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    roots.update(site.getsitepackages())
    user = site.getusersitepackages()
    if isinstance(user, str):
        roots.add(user)
    return tuple(os.path.join(os.path.realpath(root), "") for root in roots)


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


@functools.cache
def _module_digest(name: str) -> str:
    """A module's part of a code digest: its source, and for a module of an installed package
    (a file under site-packages) the hashes of every file its distribution installed. Once
    per module and process."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if module is None or path is None:
        return f"builtin:{name}"  # no source (builtins, C extensions without a file)
    real = os.path.realpath(path)
    try:
        with open(real, "rb") as handle:
            digest = f"source:{name}:{fingerprint_bytes(handle.read())}"
    except OSError as error:
        raise FingerprintError(
            f"cannot read the source of module {name} ({real}): {error}"
        ) from error
    if real.startswith(_installed_roots()):
        # A reinstall at the same version can change any file of the package, not only the
        # module that defines the step: the installed files' hashes see all of them.
        digest += f"\0installed:{_installed_files_digest(name.partition('.')[0])}"
    return digest


@functools.cache
def _installed_files_digest(package: str) -> str:
    """The hashes that the RECORDs of ``package``'s distributions list for their installed
    files (not the .dist-info metadata, so a version bump alone changes nothing; a
    distribution without a RECORD adds nothing, its module's source still counts)."""
    entries: list[str] = []
    for distribution in sorted(set(_distributions().get(package, []))):
        try:
            files = importlib.metadata.distribution(distribution).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        entries.extend(
            f"{distribution}:{file}:{file.hash.value}"
            for file in files
            if file.hash is not None and not file.parts[0].endswith(".dist-info")
        )
    return fingerprint_bytes("\0".join(sorted(entries)).encode())


def code_digest(step: object) -> str:
    """A digest of the code ``step``'s output depends on, for cache keys that see code.

    It covers the modules that define ``step``'s class and its bases (for a function, its
    module), and the modules a class names in ``__fingerprint_modules__`` (a tuple of module
    names, e.g. the code generator it calls). Modules of installed third-party packages count
    by their package's version, every other module by its source text, so editing a step's
    code changes the digest in the next process.

    Raises:
        FingerprintError: a module's source file cannot be read.
    """
    if isinstance(step, types.FunctionType | functools.partial):
        function = step.func if isinstance(step, functools.partial) else step
        names = [function.__module__]
    else:
        classes = [c for c in type(step).__mro__ if c.__module__ != "builtins"]
        names = [c.__module__ for c in classes]
        for cls in classes:
            names.extend(getattr(cls, "__fingerprint_modules__", ()))
    unique = sorted(set(names))
    return fingerprint_bytes("\0".join(_module_digest(name) for name in unique).encode())


class _Encoder:
    def __init__(self, strict: bool) -> None:
        self._strict = strict
        self._hash = hashlib.sha256()
        self._active: dict[int, int] = {}
        self._path: list[str] = []

    def digest(self, value: object) -> str:
        self._encode(value)
        return self._hash.hexdigest()

    def _tag(self, tag: str, payload: bytes = b"") -> None:
        # Length-prefixed, so that adjacent items can never run into each other.
        self._hash.update(tag.encode() + b":" + struct.pack("<Q", len(payload)) + payload)

    def _encode(self, value: object) -> None:
        # Leaves of the exact built-in types need no cycle tracking and no dispatch chain;
        # they are most of what artifacts contain.
        exact = type(value)
        if exact is str:
            self._tag("str", value.encode("utf-8", "surrogatepass"))  # type: ignore[attr-defined]
            return
        if exact is int:
            self._tag("int", str(value).encode())
            return
        if exact is bool:
            self._tag("bool", b"1" if value else b"0")
            return
        if exact is float:
            self._tag("float", _float_bytes(value))  # type: ignore[arg-type]
            return
        key = id(value)
        if key in self._active:
            self._tag("backref", struct.pack("<Q", len(self._active) - self._active[key]))
            return
        if len(self._active) > _MAX_DEPTH:
            raise FingerprintError(
                f"value nested deeper than {_MAX_DEPTH} levels at {self._where()}"
            )
        self._active[key] = len(self._active)
        try:
            self._encode_value(value)
        finally:
            del self._active[key]

    def _encode_value(self, value: object) -> None:
        if value is None or value is Ellipsis:
            self._tag(repr(value))
        elif isinstance(value, np.generic):  # before float: np.float64 subclasses float
            self._tag("npscalar", value.dtype.str.encode() + value.tobytes())
        elif isinstance(value, bool):
            self._tag("bool", b"1" if value else b"0")
        elif isinstance(value, enum.Enum):
            self._tag("enum", _qualified_name(type(value)).encode())
            self._encode(value.name)
        elif isinstance(value, int):
            self._tag("int", str(value).encode())
        elif isinstance(value, float):
            self._tag("float", _float_bytes(value))
        elif isinstance(value, complex):
            self._tag("complex", _float_bytes(value.real) + _float_bytes(value.imag))
        elif isinstance(value, str):
            self._tag("str", value.encode("utf-8", "surrogatepass"))
        elif isinstance(value, bytes | bytearray):
            self._tag(type(value).__name__, bytes(value))
        elif isinstance(value, tuple | list):
            self._tag(f"{_qualified_name(type(value))}[{len(value)}]")
            for index, item in enumerate(value):
                self._child(str(index), item)
        elif isinstance(value, dict | types.MappingProxyType):
            self._tag(f"{_qualified_name(type(value))}[{len(value)}]")
            for key_print, key, item in sorted(
                ((self._sub(k), k, v) for k, v in value.items()), key=lambda e: e[0]
            ):
                self._tag("key", key_print.encode())
                self._child(repr(key), item)
        elif isinstance(value, set | frozenset):
            prints = sorted(self._sub(item) for item in value)
            self._tag(f"{type(value).__name__}[{len(prints)}]", "".join(prints).encode())
        elif isinstance(value, np.dtype):
            self._tag("dtype", value.str.encode() + repr(value.descr).encode())
        elif isinstance(value, np.ndarray):
            self._encode_array(value)
        elif hasattr(value, "__fingerprint__") and not isinstance(value, type):
            self._tag("custom", _qualified_name(type(value)).encode())
            self._child("__fingerprint__()", value.__fingerprint__())
            # A hook written for a base class cannot know the fields a subclass adds.
            for name in _fields_added_after_hook(cast(Any, type(value))):
                self._child(name, getattr(value, name))
        elif isinstance(value, types.GenericAlias):  # e.g. tuple[IJK, IJK] in annotations
            self._tag("generic")
            self._child("__origin__", value.__origin__)
            self._child("__args__", value.__args__)
        elif attrs.has(type(value)):
            self._tag("attrs", _qualified_name(type(value)).encode())
            for name in _attrs_compared_fields(cast(Any, type(value))):
                self._child(name, getattr(value, name))
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            self._tag("dataclass", _qualified_name(type(value)).encode())
            for field in dataclasses.fields(value):
                if field.compare:
                    self._child(field.name, getattr(value, field.name))
        elif isinstance(value, type):
            self._tag("type", _qualified_name(value).encode())
        elif isinstance(value, types.ModuleType):
            self._tag("module", value.__name__.encode())
        elif isinstance(value, functools.partial):
            self._tag("partial")
            self._child("func", value.func)
            self._child("args", value.args)
            self._child("keywords", value.keywords)
        elif isinstance(value, types.MethodType):
            self._tag("method")
            self._child("__func__", value.__func__)
            self._child("__self__", value.__self__)
        elif isinstance(value, types.FunctionType):
            self._encode_function(value)
        elif isinstance(value, types.BuiltinFunctionType | np.ufunc):
            module = getattr(value, "__module__", None) or "builtins"
            self._tag("builtin", f"{module}.{value.__name__}".encode())
        elif isinstance(value, types.CodeType):
            self._encode_code(value)
        else:
            self._unstable(value)

    def _encode_array(self, array: np.ndarray[Any, Any]) -> None:
        if array.dtype.hasobject:
            self._unstable(array)
            return
        header = f"{array.dtype.str}{array.shape}".encode()
        self._tag("ndarray", header + np.ascontiguousarray(array).tobytes())

    def _encode_function(self, function: types.FunctionType) -> None:
        self._tag("function", f"{function.__module__}.{function.__qualname__}".encode())
        self._encode_code(function.__code__)
        self._child("__defaults__", function.__defaults__)
        self._child("__kwdefaults__", function.__kwdefaults__)
        closure = function.__closure__ or ()
        names = function.__code__.co_freevars
        for name, cell in zip(names, closure, strict=True):
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell: the variable is not bound yet
                self._tag("emptycell", name.encode())
                continue
            self._child(f"closure {name}", content)

    def _encode_code(self, code: types.CodeType) -> None:
        # co_code is the compiled bytecode: stable for one interpreter version, which is why
        # cache keys are also salted with the Python version.
        self._tag("code", code.co_code)
        self._child("co_names", code.co_names)
        self._child("co_varnames", code.co_varnames)
        self._child("co_freevars", code.co_freevars)
        self._child("co_consts", tuple(code.co_consts))

    def _child(self, label: str, value: object) -> None:
        # The path is only read when an error is raised; push it cheaply and pop on success.
        self._path.append(label)
        self._encode(value)
        self._path.pop()

    def _sub(self, value: object) -> str:
        encoder = _Encoder(self._strict)
        encoder._path = [*self._path, "<item>"]
        return encoder.digest(value)

    def _unstable(self, value: object) -> None:
        if self._strict:
            raise FingerprintError(
                f"cannot fingerprint {_describe(value)} at {self._where()} stably across "
                "processes; give its class a __fingerprint__() method returning a "
                "fingerprintable value, make it an attrs class or dataclass, or use an "
                "in-memory cache (non-strict fingerprints)"
            )
        self._tag("identity", f"{_qualified_name(type(value))}@{id(value)}".encode())

    def _where(self) -> str:
        return "value" + "".join(f"[{p}]" for p in self._path) if self._path else "the top level"


@functools.cache
def _fields_added_after_hook(cls: type) -> tuple[str, ...]:
    """The compared attrs fields of ``cls`` that the class defining its ``__fingerprint__``
    does not have (fields a subclass added under a base class's hook)."""
    if not attrs.has(cls):
        return ()
    owner = next(c for c in cls.__mro__ if "__fingerprint__" in c.__dict__)
    known = set(_attrs_compared_fields(owner)) if attrs.has(owner) else set()
    return tuple(name for name in _attrs_compared_fields(cls) if name not in known)


@functools.cache
def _attrs_compared_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in attrs.fields(cast(Any, cls)) if f.eq)


def _float_bytes(value: float) -> bytes:
    if math.isnan(value):
        return b"nan"
    return struct.pack("<d", value)


def _qualified_name(cls: type | Callable[..., Any]) -> str:
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}"


def _describe(value: object) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} (type {_qualified_name(type(value))})"
