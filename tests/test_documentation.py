"""The README's and the guides' Python examples run, in order, as a reader would run them.

Each document's ```python blocks run in one namespace, top to bottom, in a fresh process whose
working directory is empty (so nothing of the checkout is importable by accident) and whose
path holds the installed packages and ``examples/``. What a reader would have defined before
a block, but the document does not show, is written in the document itself as an HTML comment
right before the block, so that it is visible to anyone editing it::

    <!-- invisible-code-block: python
    from pipeline.dsl import scan_operator
    -->

A block that cannot run here is preceded by ``<!-- docs-test: skip (why) -->``; the reason
is printed in the test's output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: ```python blocks, and the invisible blocks and skip markers written before them.
_FENCE = re.compile(
    r"^<!-- invisible-code-block: python\n(?P<invisible>.*?)^-->\n"
    r"|^<!-- docs-test: skip \((?P<skip>[^)]*)\) -->\n"
    r"|^```python\n(?P<code>.*?)^```\n",
    re.MULTILINE | re.DOTALL,
)


def program_of(document: Path) -> str:
    """The document's examples as one Python script: each block at its own line numbers, so a
    traceback's line is the document's line."""
    text = document.read_text()
    lines = [""] * (text.count("\n") + 1)
    skip_next = False
    for match in _FENCE.finditer(text):
        if match["skip"] is not None:
            skip_next = True
            continue
        code = match["invisible"] if match["invisible"] is not None else match["code"]
        if match["code"] is not None and skip_next:
            skip_next = False
            continue
        first = text.count("\n", 0, match.start()) + 1  # the fence's line; code starts after it
        for offset, line in enumerate(code.splitlines()):
            lines[first + offset] = line
    return "\n".join(lines)


DOCUMENTS = ["README.md", "docs/backend-guide.md", "docs/backend-contract.md"]


@pytest.mark.requires_dask  # the README's compile_many example starts a Dask LocalCluster
@pytest.mark.parametrize("name", DOCUMENTS)
def test_the_documents_examples_run(name: str, tmp_path: Path) -> None:
    document = ROOT / name
    script = tmp_path / f"{document.stem}_examples.py"
    script.write_text(program_of(document))
    environment = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT / "examples"), *sys.path]),
        STENCILFORGE_CACHE_DIR=str(tmp_path / "cache"),
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=environment, capture_output=True,
        text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, (
        f"the examples of {name} failed (line numbers are the document's):\n"
        f"{done.stderr.replace(str(script), name)[-4000:]}"
    )


def test_a_failing_example_names_the_documents_line(tmp_path: Path) -> None:
    document = tmp_path / "broken.md"
    document.write_text("# Title\n\ntext\n\n```python\nx = 1\nassert x == 2\n```\n")
    script = tmp_path / "broken.py"
    script.write_text(program_of(document))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          check=False)
    assert done.returncode != 0
    assert f'"{script}", line 7' in done.stderr


def test_invisible_blocks_run_and_skipped_blocks_do_not(tmp_path: Path) -> None:
    document = tmp_path / "doc.md"
    document.write_text(
        "<!-- invisible-code-block: python\nvalue = 41\n-->\n"
        "```python\nvalue += 1\n```\n"
        "<!-- docs-test: skip (needs a GPU) -->\n"
        "```python\nraise SystemExit('skipped blocks must not run')\n```\n"
        "```python\nassert value == 42\n```\n"
    )
    program = program_of(document)
    assert "value = 41" in program and "SystemExit" not in program
    exec(compile(program, str(document), "exec"), {})  # noqa: S102


def _contract_case_names() -> set[str]:
    """The corpus cases docs/backend-contract.md names: the last column of the number rules'
    table (section 5) and the "Corpus:" paragraphs."""
    text = (ROOT / "docs" / "backend-contract.md").read_text()
    rules = text[text.index("## 5."):text.index("## 6.")]
    names: set[str] = set()
    for line in rules.splitlines()[3:]:  # the heading, a blank line, the table's header
        if line.startswith("| "):
            names.update(re.findall(r"`([a-z0-9_]+)`", line.rsplit("|", 2)[-2]))
    for paragraph in re.findall(r"^Corpus:.*?(?:\n\n|\Z)", text, re.MULTILINE | re.DOTALL):
        names.update(re.findall(r"`([a-z0-9_]+)`", paragraph))
    return names


def test_every_rule_of_the_backend_contract_names_cases_that_exist() -> None:
    from backends.conformance.corpus import CASES  # noqa: PLC0415

    named = _contract_case_names()
    assert len(named) >= 25  # the number rules and the sections' lists
    missing = named - {case.name for case in CASES}
    assert not missing, f"docs/backend-contract.md names cases the corpus lacks: {missing}"


#: A line that only an unresolved merge leaves behind.
_CONFLICT_MARKER = re.compile(r"^(<{7}|>{7}) ", re.MULTILINE)
_TEXT_SUFFIXES = {".md", ".rst", ".py", ".toml", ".cfg", ".txt", ".sh", ".c", ".h", ".cu", ".yml"}


def test_no_file_of_the_checkout_holds_an_unresolved_merge() -> None:
    """A merge once left its conflict markers in the README, and every test still passed."""
    found = []
    for path in sorted(ROOT.rglob("*")):
        parts = set(path.relative_to(ROOT).parts)
        if path.suffix not in _TEXT_SUFFIXES or parts & {".git", ".venv", "build", ".eggs"}:
            continue
        if path.is_file() and _CONFLICT_MARKER.search(path.read_text(errors="replace")):
            found.append(str(path.relative_to(ROOT)))
    assert not found, f"unresolved merge conflict markers in: {', '.join(found)}"
