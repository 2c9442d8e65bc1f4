"""Disk-cache keys see a step's code: an edited step is never served its old results.

Real processes: the first computes and stores, the module is edited, the second must compute
again (before keys saw code it was served the old translation).
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import attrs
import numpy as np
import pytest

import pipeline
from pipeline import CachedStep, fingerprint
from pipeline.errors import FingerprintError
from pipeline.fingerprint import code_digest, source_digest

_GENERATOR = '''
import attrs

VERSION = {version}


def header():
    return f"# generator version {{VERSION}}"


@attrs.frozen
class Generator:
    unroll: int = 1

    def __call__(self, name):
        return f"{{header()}}\\n{{name}} x{{self.unroll}}"
'''

_RUN = '''
import sys
from pipeline import CachedStep
import generator

step = CachedStep.on_disk(generator.Generator(), directory=sys.argv[1])
print(step("lap"), "|", step.cache.stats.misses)
'''


def _run(tmp_path, version: int) -> str:
    (tmp_path / "code" / "generator.py").write_text(_GENERATOR.format(version=version))
    result = subprocess.run(
        [sys.executable, "-c", _RUN, str(tmp_path / "cache")],
        cwd=tmp_path / "code",
        # No .pyc: an edit within the same second as the last import would be missed by the
        # interpreter itself (same size, same mtime).
        env={"PYTHONPATH": str(tmp_path / "code"), "PATH": "/usr/bin:/bin",
             "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def test_editing_a_step_module_between_processes_gives_a_new_result(tmp_path):
    (tmp_path / "code").mkdir()
    assert _run(tmp_path, 1) == "# generator version 1\nlap x1 | 1"
    assert _run(tmp_path, 1) == "# generator version 1\nlap x1 | 0"  # a hit: nothing computed
    assert _run(tmp_path, 2) == "# generator version 2\nlap x1 | 1"


@attrs.frozen
class BaseGenerator:
    name: str = "base"

    def __fingerprint__(self) -> object:
        return self.name

    def __call__(self, x: int) -> int:
        return x


@attrs.frozen
class UnrolledGenerator(BaseGenerator):
    unroll: int = 1


def test_a_base_class_fingerprint_hook_cannot_hide_fields_a_subclass_adds(tmp_path):
    assert fingerprint(UnrolledGenerator(unroll=1)) != fingerprint(UnrolledGenerator(unroll=4))
    one = CachedStep.on_disk(UnrolledGenerator(unroll=1), directory=tmp_path)
    four = CachedStep.on_disk(UnrolledGenerator(unroll=4), directory=tmp_path)
    assert one.cache_key(3) != four.cache_key(3)
    # The hook still decides for its own class.
    assert fingerprint(BaseGenerator("a")) != fingerprint(BaseGenerator("b"))


def test_the_code_digest_covers_the_steps_own_modules_and_the_modules_it_names():
    digest = code_digest(UnrolledGenerator())
    assert digest == code_digest(BaseGenerator())  # one module defines both
    assert digest != code_digest(np.sum)  # another module

    class NamesAModule(UnrolledGenerator):
        __fingerprint_modules__ = ("textwrap",)

    assert code_digest(NamesAModule()) != digest


def test_in_memory_caches_do_not_read_sources():
    step = CachedStep.in_memory(textwrap.dedent)
    assert step("  x") == "x"


def test_a_package_source_digest_sees_every_module_under_it_one_added_later_included(
    tmp_path, monkeypatch
):
    emitters = tmp_path / "sf_digest_generators" / "emitters"
    emitters.mkdir(parents=True)
    (emitters.parent / "__init__.py").write_text("")
    (emitters / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    empty = source_digest(packages=["sf_digest_generators"])
    (emitters / "vectors.py").write_text("WIDTH = 4\n")
    four = source_digest(packages=["sf_digest_generators"])
    (emitters / "vectors.py").write_text("WIDTH = 8\n")
    # Before, a generator's modules were listed by hand, and an edit of one left out
    # (backends.c.vectors) was served the old translation.
    assert len({empty, four, source_digest(packages=["sf_digest_generators"])}) == 3


def test_a_source_digest_of_a_module_named_as_a_package_is_an_error():
    with pytest.raises(FingerprintError, match="textwrap is not a package"):
        source_digest(packages=["textwrap"])



def _package(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "codegen.py").write_text("WIDTH = 8\n")
    return folder


def test_a_package_digest_reads_only_what_python_would_import(tmp_path, monkeypatch):
    folder = _package(tmp_path, "sf_digest_strays")
    monkeypatch.syspath_prepend(str(tmp_path))
    clean = source_digest(packages=["sf_digest_strays"])
    # An editor's lock file (a dangling link), a notebook's checkpoint copy in a folder that
    # is not a package, and compiled files: none is a module of the package.
    (folder / ".#codegen.py").symlink_to(tmp_path / "nowhere")
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints" / "codegen-checkpoint.py").write_text("WIDTH = 4\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "codegen.cpython-311.pyc").write_bytes(b"\0")
    assert source_digest(packages=["sf_digest_strays"]) == clean


def test_a_package_installed_without_sources_is_digested_by_its_compiled_modules(
    tmp_path, monkeypatch
):
    folder = tmp_path / "sf_digest_compiled"
    folder.mkdir()
    (folder / "__init__.pyc").write_bytes(b"init")
    (folder / "codegen.pyc").write_bytes(b"eight")
    monkeypatch.syspath_prepend(str(tmp_path))
    eight = source_digest(packages=["sf_digest_compiled"])
    (folder / "codegen.pyc").write_bytes(b"four")
    assert source_digest(packages=["sf_digest_compiled"]) != eight


def test_a_package_with_nothing_to_digest_is_an_error_not_an_empty_key(tmp_path, monkeypatch):
    (tmp_path / "sf_digest_empty").mkdir()  # a namespace package: folders, no modules
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(FingerprintError, match="no module files to digest"):
        source_digest(packages=["sf_digest_empty"])
    with pytest.raises(FingerprintError, match=r"sf_digest_missing\.inner is not a package"):
        source_digest(packages=["sf_digest_missing.inner"])
    with pytest.raises(TypeError, match="not the string 'sf_digest_empty'"):
        source_digest(packages="sf_digest_empty")

_INSTALLED_BACKEND = """
import attrs


@attrs.frozen
class Translation:
    unroll: int = 1

    def __call__(self, name):
        return f"{text} {{name}} x{{self.unroll}}"
"""

_RUN_INSTALLED = """
import sys
from pipeline import CachedStep
import mybackend

step = CachedStep.on_disk(mybackend.Translation(), directory=sys.argv[1])
print(step("lap"), "|", step.cache.stats.misses)
"""


def _wheel(directory: Path, text: str) -> Path:
    """A wheel of ``mybackend`` 0.1.0 whose module returns ``text``. Built by hand: the
    environment has no ``wheel`` package for setuptools to build one offline."""
    info = "mybackend-0.1.0.dist-info"
    files = {
        "mybackend.py": _INSTALLED_BACKEND.format(text=text).encode(),
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: mybackend\nVersion: 0.1.0\n",
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(
        f"{name},sha256="
        f"{base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
        f"{len(data)}\n"
        for name, data in files.items()
    )
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    path = directory / "mybackend-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def _install_and_run(tmp_path: Path, text: str) -> str:
    python = tmp_path / "env" / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "--no-index", "--no-deps", "--force-reinstall",
         "--disable-pip-version-check", "--quiet", _wheel(tmp_path, text)],
        capture_output=True, check=True,
    )
    result = subprocess.run(
        [python, "-c", _RUN_INSTALLED, tmp_path / "cache"],
        cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
        check=True,
    )
    return result.stdout.strip()


def test_reinstalling_an_edited_package_at_the_same_version_gives_a_new_result(tmp_path):
    # A fresh environment whose site-packages holds the installed backend; this project and
    # its dependencies come from .pth lines, after it.
    venv.create(tmp_path / "env", with_pip=False)
    (site_packages,) = (tmp_path / "env" / "lib").glob("python*/site-packages")
    (site_packages / "stencilforge_test.pth").write_text(
        f"{Path(pipeline.__file__).parents[1]}\n{sysconfig.get_paths()['purelib']}\n"
    )
    assert _install_and_run(tmp_path, "old") == "old lap x1 | 1"
    assert _install_and_run(tmp_path, "old") == "old lap x1 | 0"  # a hit: nothing computed
    # Before, the installed package counted by its version: "old lap x1 | 0".
    assert _install_and_run(tmp_path, "new") == "new lap x1 | 1"
