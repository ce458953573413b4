"""Sphinx configuration for the urandom-shim documentation.

tests/run builds it with warnings as errors (``sphinx-build -W --keep-going -n``) and then checks every link inside
the built site (tests/check_site.py).
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]  # the package (for autodoc and the CLI help), our extension

import urandom_shim  # noqa: E402

project = "urandom-shim"
author = "the urandom-shim developers"
copyright = "2026, the urandom-shim developers"  # noqa: A001 - the name Sphinx reads
release = version = urandom_shim.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "urandom_shim_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "examples", "requirements.txt"]
nitpicky = True  # every cross-reference must resolve
myst_heading_anchors = 3  # links to "page.md#a-heading" are checked by myst too
myst_enable_extensions = ["deflist"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Setting is generic for the type checker only (Setting[Policy], Setting[float | None]): its type variable has no page.
nitpick_ignore = [("py:class", "Settings"), ("py:class", "urandom_shim._policies.Settings"), ("py:class", "T")]

html_theme = "furo"
html_title = f"urandom-shim {release}"
html_static_path: list = []
html_show_sourcelink = False
