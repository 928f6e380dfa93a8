"""The environment block every result file records: commit, versions, tuning knobs and machine load.

Why private: ``python -m rotate.bench`` writes the same block from ``rotate._provenance``, its one
implementation, and docs/results/MANIFEST.md and tools/tables.py read it the same way from every file.
"""

from __future__ import annotations


def environment(gpu: bool = False) -> dict:
    """``rotate._provenance.environment``: the commit (and whether the tree was dirty), package
    versions, the tuning knobs of the backend(s) timed, and the load average."""
    from rotate import _provenance

    return _provenance.environment(gpu=gpu)
