"""Sphinx configuration: the README, the guides, the ADRs and notes, and the API reference
generated from the docstrings. Built in CI with warnings as errors:

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(_ROOT / "src"), str(_ROOT)]

project = "stencilforge"
author = "the stencilforge developers"
copyright = "2026, the stencilforge developers"  # noqa: A001  (Sphinx's name)

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Annotations stay strings (``from __future__ import annotations``); show them as written.
autodoc_type_aliases: dict[str, str] = {}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# ``Attributes:`` sections as fields of the class: a documented property is not listed twice.
napoleon_use_ivar = True

html_theme = "alabaster"
html_title = "stencilforge"
