"""The distribution's version, from its one source: ``version`` in pyproject.toml's ``[project]`` table.

An installed copy (a wheel, or ``pip install -e .``) reads it from the metadata pip recorded at
install time; a source tree that was never installed (on ``PYTHONPATH``) reads the pyproject.toml
beside its packages. ``rotate.__version__`` and ``waveops.__version__`` are this.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "inplace-rotate"
#: What a copy reports when it is neither installed nor a source tree (a PEP 440 local version).
UNKNOWN = "0+unknown"


def version() -> str:
    """The version of ``inplace-rotate``: installed metadata, else the source tree's pyproject.toml."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    return pyproject_version(Path(__file__).resolve().parents[1] / "pyproject.toml") or UNKNOWN


def pyproject_version(path: Path) -> str | None:
    """``[project] version`` of the pyproject.toml at ``path`` when it is this distribution's, else None.

    A plain scan rather than tomllib, which Python 3.10 lacks; the table is the one we write.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    table = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if table is None or not re.search(rf'^name\s*=\s*"{re.escape(DISTRIBUTION)}"', table.group(1), re.M):
        return None
    found = re.search(r'^version\s*=\s*"([^"]+)"', table.group(1), re.M)
    return found.group(1) if found else None
