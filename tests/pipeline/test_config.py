"""The ``STENCILFORGE_*`` variables: one module reads them, one table documents them."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline import config

ROOT = Path(__file__).parents[2]
VARIABLES = {getattr(config, name) for name in config.__all__ if name.endswith("_VARIABLE")}


def test_every_variable_the_code_reads_is_in_the_readme_table_and_the_config_table():
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"^\| `(STENCILFORGE_[A-Z_]+)` \|", readme, re.MULTILINE))
    assert documented >= VARIABLES
    assert all(f"``{name}``" in (config.__doc__ or "") for name in VARIABLES)


def test_no_module_but_config_reads_a_stencilforge_variable_from_the_environment():
    readers = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("src", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "config.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"(environ(\.get)?|getenv)\(\s*[\"']STENCILFORGE_", line)
        or re.search(r"environ\.get\(\s*[A-Z_]+_VARIABLE", line)
    ]
    assert readers == []


def test_a_variable_set_after_import_is_obeyed_when_its_moment_comes(monkeypatch, tmp_path):
    monkeypatch.setenv(config.CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setenv(config.BUILD_JOBS_VARIABLE, " process:2 ")
    assert config.cache_dir() == tmp_path / "cache"
    assert config.build_jobs() == "process:2"
    monkeypatch.delenv(config.CACHE_DIR_VARIABLE)
    assert config.cache_dir() is None
