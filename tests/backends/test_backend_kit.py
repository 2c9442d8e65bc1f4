"""The backend developer's kit: register a backend, evolve one option, compiler flags.

Entry points are discovered from a small distribution installed (as a ``.dist-info`` on the
path) for a subprocess, as pip would install it.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import attrs
import numpy as np
import pytest
from c_programs import stencils
from c_programs.support import CompilerWrapper

import allocators
import backends
from backends import CompiledBackend, EmbeddedBackend
from backends.c import CCompilation, c_cpu_pipeline
from backends.c.compilation import REQUIRED_FLAGS
from pipeline import CachedStep

# --------------------------------------------------------------------------- the registry


def test_a_registered_backend_resolves_by_name_and_is_available():
    backend = backends.register(EmbeddedBackend("kit_registered", np))
    assert backends.kit_registered is backend
    assert backends.available_backends()["kit_registered"] is backend
    assert "kit_registered" in dir(backends)


def test_registering_a_taken_name_names_both_backends():
    with pytest.raises(ValueError, match=r"'c_cpu'.*taken by the built-in backend backends\.c_cpu"):
        backends.register(EmbeddedBackend("c_cpu", np))
    first = backends.register(EmbeddedBackend("kit_twice", np))
    with pytest.raises(ValueError, match=r"taken by the registered backend") as info:
        backends.register(EmbeddedBackend("kit_twice", np))
    assert repr(first) in str(info.value)


def test_register_refuses_what_is_not_a_backend_with_a_pipeline():
    with pytest.raises(TypeError, match="CompiledBackend or an EmbeddedBackend"):
        backends.register(backends.Backend("plain", np))


def test_dir_lists_the_lazy_built_ins():
    assert {"c_cpu", "dace_cpu", "embedded_jax", "register", "available_backends"} <= set(
        dir(backends)
    )


_PROVIDER = '''
import numpy as np
from backends import EmbeddedBackend

numpy_again = EmbeddedBackend("numpy_again", np)
misnamed = EmbeddedBackend("something_else", np)
'''

_PROBE = '''
import backends
print("listed", "numpy_again" in dir(backends))
print("loaded", "kit_provider" in __import__("sys").modules)
backend = backends.numpy_again
print("resolved", backend.name, "kit_provider" in __import__("sys").modules)
print("available", "numpy_again" in backends.available_backends())
try:
    backends.misnamed
except AttributeError as error:
    print("misnamed", error)
'''


def test_an_installed_entry_point_provides_a_backend_loaded_when_asked_for(tmp_path):
    site = tmp_path / "site"
    (site / "kit_provider-1.0.dist-info").mkdir(parents=True)
    (site / "kit_provider.py").write_text(_PROVIDER)
    (site / "kit_provider-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: kit-provider\nVersion: 1.0\n"
    )
    (site / "kit_provider-1.0.dist-info" / "entry_points.txt").write_text(textwrap.dedent("""\
        [stencilforge.backends]
        numpy_again = kit_provider:numpy_again
        misnamed = kit_provider:misnamed
    """))
    result = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert lines[:4] == ["listed True", "loaded False", "resolved numpy_again True",
                         "available True"]
    assert "gives a backend named 'something_else'" in lines[4]


# --------------------------------------------------------------------------- one option


def private_backend(cache, compiler, name="c_cpu_kit"):
    compilation = CCompilation(str(cache / "c"), compiler=str(compiler.path))
    return CompiledBackend(
        name, allocators.NumPyBufferAllocator(), c_cpu_pipeline(cache, compilation=compilation)
    )


def test_evolve_step_changes_the_inner_step_and_keeps_its_disk_cache(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")
    base = private_backend(tmp_path / "cache", compiler)
    variant = attrs.evolve(
        base,
        name="c_cpu_kit_o2",
        pipeline=base.pipeline.evolve_step("compilation", flags=("-O2",)),
    )
    compilation = variant.pipeline.compilation
    assert isinstance(compilation, CachedStep)
    assert compilation.cache is base.pipeline.compilation.cache
    assert compilation.step.flags == ("-O2",)
    assert compilation.cache_key("x") != base.pipeline.compilation.cache_key("x")

    inp = np.random.default_rng(1).uniform(-1, 1, (8, 7, 3))
    out = np.zeros_like(inp)
    stencils.lap.with_backend(variant)(inp, out)
    expected = np.zeros_like(inp)
    stencils.lap_reference(inp, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    (build,) = compiler.lines("compile")
    assert " -O2 " in build and all(f" {flag} " in build for flag in REQUIRED_FLAGS)
    assert " -O3 " not in build

    # A second process with the same variant builds nothing: the disk cache was kept.
    again = attrs.evolve(
        private_backend(tmp_path / "cache", compiler),
        name="c_cpu_kit_o2_again",
        pipeline=private_backend(tmp_path / "cache", compiler).pipeline.evolve_step(
            "compilation", flags=("-O2",)
        ),
    )
    stencils.lap.with_backend(again)(inp, out)
    assert len(compiler.lines("compile")) == 1


def test_evolve_step_names_the_stage_or_option_that_does_not_exist():
    pipeline = backends.c_cpu.pipeline
    with pytest.raises(ValueError, match="'compile' is not a stage.*'compilation'"):
        pipeline.evolve_step("compile", flags=())
    with pytest.raises(TypeError, match=r"no option\(s\) flagz.*flags, extra_flags"):
        pipeline.evolve_step("compilation", flagz=())
    with pytest.raises(TypeError, match=r"no option\(s\) anything.*launcher"):
        pipeline.evolve_step("loading", anything=1)


def test_extra_flags_add_to_the_defaults(tmp_path):
    default = CCompilation(str(tmp_path / "c"))
    tuned = attrs.evolve(default, extra_flags=("-funroll-loops",))
    assert tuned.command_flags == (*REQUIRED_FLAGS, *default.flags, "-funroll-loops")
    assert "-fopenmp" not in default.flags  # required, so not the user's to drop


def test_a_backend_whose_compilation_is_not_on_disk_warns_once(caplog):
    pipeline = backends.c_cpu.pipeline
    uncached = attrs.evolve(pipeline, compilation=pipeline.compilation.step)
    with caplog.at_level(logging.WARNING, logger="backends.base"):
        CompiledBackend("kit_uncached", allocators.NumPyBufferAllocator(), uncached)
        CompiledBackend("kit_uncached", allocators.NumPyBufferAllocator(), uncached)
        CompiledBackend("kit_cached", allocators.NumPyBufferAllocator(), pipeline)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1
    assert "'kit_uncached'" in messages[0] and "every process compiles" in messages[0]


# --------------------------------------------------------------------------- reprs


def _steps_of(step: object) -> list[object]:
    """``step`` and every attrs object among its fields, recursively (a CachedStep's step,
    a sequence's sub-steps, a translation's tuning and its compilation)."""
    found = [step]
    if attrs.has(type(step)):
        for field in attrs.fields(type(step)):
            value = getattr(step, field.name)
            for item in value if isinstance(value, tuple) else (value,):
                if attrs.has(type(item)):
                    found.extend(_steps_of(item))
    return found


@pytest.mark.parametrize("name", sorted(backends.available_backends()))
def test_every_steps_repr_shows_all_of_its_options(name):
    backend = backends.available_backends()[name]
    pipeline = getattr(backend, "pipeline", None)
    if pipeline is None:
        pytest.skip(f"{name} runs the definition as Python: it has no steps")
    for stage in ("frontend", "translation", "compilation", "loading"):
        for step in _steps_of(getattr(pipeline, stage)):
            text = repr(step)
            assert "\n" not in text
            for field in attrs.fields(type(step)) if attrs.has(type(step)) else ():
                if field.init:
                    assert f"{field.name.lstrip('_')}=" in text, (stage, step)


def test_c_translations_repr_shows_its_tuning_and_where_its_records_are(tmp_path):
    translation = c_cpu_pipeline(cache_directory=tmp_path).translation
    text = repr(translation)
    # Before, the tuning was left out: two translations that measure differently looked alike.
    assert "tuning=Tuning(" in text and "rounds=5" in text
    assert f"records=DiskStepCache({str(tmp_path / 'choices')!r})" in text
