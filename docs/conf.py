"""Sphinx configuration for the inplace-rotate documentation site.

Build it from the repository root (the ``docs`` extra installs what it needs)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The API reference is generated from the numpydoc docstrings of ``rotate``,
``rotate.distributed`` and ``waveops``; the narrative pages are the markdown
files of docs/ (rendered by myst-parser), which stay readable on GitHub as they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# Document the tree the docs belong to, not whichever copy of the package is installed.
sys.path.insert(0, str(ROOT))

import rotate  # noqa: E402

project = "inplace-rotate"
author = "inplace-rotate developers"
copyright = "the inplace-rotate developers"
release = version = getattr(rotate, "__version__", "")

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_copybutton",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# results/ holds the benchmark result files and their manifest: cited by the pages, not pages themselves.
exclude_patterns = ["_build", "results", "Thumbs.db", ".DS_Store"]

# --- autodoc / numpydoc -------------------------------------------------------------------------------
autodoc_typehints = "none"  # the numpydoc Parameters sections give the types; signatures stay readable
autodoc_member_order = "bysource"
autosummary_generate = False  # the API pages list their functions by hand (a page per module)
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# Every documented function must keep these sections; a build with -W fails on a gap.
#   PR01: a parameter is not documented   PR02: a documented parameter does not exist
#   RT01: no Returns section              EX01: no Examples section      SA01: no See Also section
#   GL08: no docstring at all             SS01: no summary line
numpydoc_validation_checks = {"PR01", "PR02", "RT01", "EX01", "SA01", "GL08", "SS01"}
# Classes and their attributes are described in prose (Attributes sections), not checked section by section.
numpydoc_validation_exclude = {
    r"\.Plan$", r"\.Plan\.", r"\.Step$", r"\.Step\.", r"\.DistPlan$", r"\.DistPlan\.",
    r"\.Device$", r"\.Device\.close$", r"\.VulkanUnavailable$", r"\.AxisError$",
    r"\.[A-Z][A-Z0-9_]*$",  # module constants: a line of prose each
}

# --- myst ---------------------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3  # "#the-gpu-chain-schedule" style anchors for the markdown pages' headings

# --- HTML ---------------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"inplace-rotate {release}"
html_static_path = []
html_theme_options = {
    "description": "In-place array roll/rotate on GPUs and CPUs, and the per-lane wave rotate",
    "fixed_sidebar": True,
    "page_width": "1200px",  # the design and performance pages carry wide tables and code
    "sidebar_width": "240px",
    "show_relbars": True,
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True


# --- the changelog: ../CHANGELOG.md when it exists ------------------------------------------------------
CHANGELOG = ROOT / "CHANGELOG.md"


def _changelog_placeholder(app, docname, source):
    """changelog.md includes ../CHANGELOG.md; a checkout without that file gets a one-line page instead."""
    if docname == "changelog" and not CHANGELOG.exists():
        source[0] = "# Changelog\n\nThis checkout has no CHANGELOG.md.\n"


def setup(app):
    app.connect("source-read", _changelog_placeholder)
