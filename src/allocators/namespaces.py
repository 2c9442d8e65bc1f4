"""Array-API namespaces as allocators: validation, naming and device type.

An *array namespace* is a module-like object implementing the array-API standard (``numpy``,
``cupy``, ``jax.numpy``, ``array_api_strict``, ...). Optional libraries are never imported here
unless a namespace of theirs was passed in (then they are already imported).
"""

from __future__ import annotations

import importlib
import logging
import sys
import types
from collections.abc import Mapping
from typing import Any, TypeVar

from ._naming import describe
from .devices import DeviceType, device_of

__all__ = [
    "JAX_ENABLE_X64_ADVICE",
    "NAMESPACE_ATTRIBUTE_ALIASES",
    "REQUIRED_NAMESPACE_ATTRIBUTES",
    "disabled_dtype_reason",
    "is_array_namespace",
    "missing_namespace_attributes",
    "namespace_attribute",
    "namespace_device_type",
    "namespace_name",
    "validate_array_namespace",
]

_logger = logging.getLogger(__name__)

NamespaceT = TypeVar("NamespaceT")

#: Attributes an array namespace must have to serve as an allocator and to run the DSL.
REQUIRED_NAMESPACE_ATTRIBUTES: tuple[str, ...] = (
    # construction
    "asarray",
    "empty",
    "zeros",
    "ones",
    "full",
    # selection and conversion
    "where",
    "astype",
    # elementwise functions of the DSL
    "abs",
    "sqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "floor",
    "ceil",
    "minimum",
    "maximum",
    "pow",
    # dtypes
    "float32",
    "float64",
    "int32",
    "int64",
    "bool",
)

#: Pre-array-API spellings accepted for a required attribute (NumPy 1.x, CuPy < 14).
NAMESPACE_ATTRIBUTE_ALIASES: Mapping[str, str] = types.MappingProxyType(
    {
        "asin": "arcsin",
        "acos": "arccos",
        "atan": "arctan",
        "pow": "power",
        "bool": "bool_",
    }
)

# Namespaces whose device type is known from their module name alone. The value None marks
# namespaces whose device type has to be asked from the library (see namespace_device_type).
_KNOWN_NAMESPACE_DEVICES: Mapping[str, DeviceType | None] = types.MappingProxyType(
    {
        "numpy": DeviceType.CPU,
        "array_api_strict": DeviceType.CPU,
        "cupy": None,
        "jax.numpy": None,
    }
)

_COMPAT_PREFIX = "array_api_compat."


def _has_attribute(obj: object, name: str) -> bool:
    try:
        return hasattr(obj, name)
    except Exception:  # a broken __getattr__ means "not a namespace", never a crash
        _logger.debug("getattr(%r, %r) raised; treating it as missing", obj, name, exc_info=True)
        return False


def missing_namespace_attributes(obj: object) -> tuple[str, ...]:
    """Return the required attributes that ``obj`` lacks (under both spellings), in order.

    Args:
        obj: Any object.

    Returns:
        Names from :data:`REQUIRED_NAMESPACE_ATTRIBUTES` that ``obj`` has neither under the
        array-API name nor under the alias in :data:`NAMESPACE_ATTRIBUTE_ALIASES`; empty if
        ``obj`` is a complete namespace. Never raises.
    """
    missing = []
    for name in REQUIRED_NAMESPACE_ATTRIBUTES:
        alias = NAMESPACE_ATTRIBUTE_ALIASES.get(name)
        if not _has_attribute(obj, name) and (alias is None or not _has_attribute(obj, alias)):
            missing.append(name)
    return tuple(missing)


def is_array_namespace(obj: object) -> bool:
    """Tell whether ``obj`` has every attribute of :data:`REQUIRED_NAMESPACE_ATTRIBUTES`.

    Never raises: an object whose attribute lookup fails is not a namespace.
    """
    return not missing_namespace_attributes(obj)


def validate_array_namespace(obj: NamespaceT) -> NamespaceT:
    """Return ``obj`` unchanged if it is an array namespace.

    Raises:
        TypeError: If ``obj`` lacks required attributes; the message names the object and lists
            the missing attributes.
    """
    missing = missing_namespace_attributes(obj)
    if missing:
        raise TypeError(
            f"{describe(obj)} is not an array namespace usable as an allocator: it lacks "
            f"{', '.join(missing)}. Pass an array-API namespace such as numpy, cupy, jax.numpy "
            "or array_api_strict."
        )
    return obj


def namespace_attribute(namespace: object, name: str) -> Any:
    """Return ``namespace.<name>``, falling back to its pre-array-API alias.

    Args:
        namespace: An array namespace.
        name: An array-API attribute name, e.g. ``"asin"``.

    Returns:
        The attribute under its array-API name, or else under the alias from
        :data:`NAMESPACE_ATTRIBUTE_ALIASES`.

    Raises:
        AttributeError: If the namespace has neither spelling.
    """
    try:
        return getattr(namespace, name)
    except AttributeError:
        alias = NAMESPACE_ATTRIBUTE_ALIASES.get(name)
        if alias is None:
            raise
        return getattr(namespace, alias)


def namespace_name(namespace: object) -> str:
    """Return a readable name of a namespace: the module's ``__name__`` (``"jax.numpy"``), or
    the qualified type name for a namespace that is not a module. Never raises."""
    name = getattr(namespace, "__name__", None)
    if isinstance(name, str):
        return name
    cls = type(namespace)
    return f"{cls.__module__}.{cls.__qualname__}"


def namespace_device_type(namespace: object) -> DeviceType:
    """Return the type of device on which ``namespace`` allocates by default.

    Rules, in order:

    * ``numpy``, ``array_api_strict`` (and their ``array_api_compat`` wrappers): CPU.
    * ``cupy``: CUDA, or ROCM on a HIP build of CuPy.
    * ``jax.numpy``: from ``jax.default_backend()``: ``"cpu"`` -> CPU, ``"gpu"``/``"cuda"``
      -> CUDA (ROCM when the platform is ROCm), ``"rocm"`` -> ROCM, anything else (TPU) ->
      EXT_DEV.
    * any other namespace: the DLPack device of an empty array it allocates
      (``namespace.empty((0,))``); if that cannot be done, CPU, since a namespace that cannot
      report a device is assumed to be host-backed.

    Args:
        namespace: An array namespace (not validated here).

    Returns:
        The namespace's default :class:`DeviceType`.
    """
    name = namespace_name(namespace).removeprefix(_COMPAT_PREFIX)
    if name in _KNOWN_NAMESPACE_DEVICES:
        known = _KNOWN_NAMESPACE_DEVICES[name]
        if known is not None:
            return known
        if name == "cupy":
            return _cupy_device_type()
        return _jax_device_type()
    return _probed_device_type(namespace)


def _cupy_device_type() -> DeviceType:
    cupy = importlib.import_module("cupy")  # already imported: a cupy namespace was passed in
    return DeviceType.ROCM if bool(cupy.cuda.runtime.is_hip) else DeviceType.CUDA


def _jax_device_type() -> DeviceType:
    jax = importlib.import_module("jax")  # already imported: jax.numpy was passed in

    backend = str(jax.default_backend()).lower()
    if backend == "cpu":
        return DeviceType.CPU
    if backend == "rocm":
        return DeviceType.ROCM
    if backend in ("gpu", "cuda"):
        platform_version = str(getattr(jax.devices()[0].client, "platform_version", "")).lower()
        return DeviceType.ROCM if "rocm" in platform_version else DeviceType.CUDA
    # XLA devices without a DLPack code of their own (TPU, ...).
    return DeviceType.EXT_DEV


def _probed_device_type(namespace: object) -> DeviceType:
    try:
        return device_of(namespace_attribute(namespace, "empty")((0,))).type
    except Exception:  # any failure of a foreign library means "cannot tell" -> documented CPU
        _logger.debug(
            "could not probe the device of namespace %s; assuming CPU",
            namespace_name(namespace),
            exc_info=True,
        )
        return DeviceType.CPU


#: dtypes that JAX narrows (float64 -> float32, ...) while its 64-bit types are disabled.
_JAX_64_BIT_DTYPES = frozenset({"float64", "int64", "uint64", "complex128"})

#: How to turn JAX's 64-bit types on, for the messages that need it.
JAX_ENABLE_X64_ADVICE = (
    "enable JAX's 64-bit types once, at the start of the program and before any JAX array "
    'is made: jax.config.update("jax_enable_x64", True), or JAX_ENABLE_X64=1 in the '
    "environment"
)


def disabled_dtype_reason(namespace: object, dtype_name: str) -> str | None:
    """Why ``namespace`` would not hold ``dtype_name`` as asked, or ``None`` when it would.

    JAX with ``jax_enable_x64`` off (its default) replaces a 64-bit dtype by its 32-bit
    counterpart with only a warning: ``jnp.zeros(3, jnp.float64).dtype`` is float32. Every
    other namespace holds every dtype it names.

    Args:
        namespace: an array namespace.
        dtype_name: a NumPy dtype name (``"float64"``).

    Returns:
        A sentence that names the dtype and says how to enable it, or ``None``. Never raises.
    """
    if dtype_name not in _JAX_64_BIT_DTYPES:
        return None
    name = namespace_name(namespace).removeprefix(_COMPAT_PREFIX)
    if name.partition(".")[0] != "jax":
        return None
    jax = sys.modules.get("jax")  # imported: a jax namespace was passed in
    if jax is None or bool(jax.config.read("jax_enable_x64")):
        return None
    return (
        f"{dtype_name} is not available in {name} because JAX's 64-bit types are disabled "
        f"(jax_enable_x64 is off), so JAX would silently use a 32-bit dtype instead; "
        f"{JAX_ENABLE_X64_ADVICE}"
    )
