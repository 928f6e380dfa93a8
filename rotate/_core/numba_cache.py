"""numba's on-disk cache for this package, stamped with all of the package's sources.

numba stamps a function's cache with its own source file only. The cached
kernels here inline index math from other modules (``_backends/cpu/`` and
``_backends/cpu/lanes.py`` from ``_schedules/``, the planner's replays from
``_schedules/chain.py``), so after an edit to ``_schedules/chain.py`` alone (an editable
install and a ``git pull``, or a mutant of ``tools/mutation.py``) numba would
load their old machine code: a CPU roll could run the old schedule. Found
when the planner's cached ``walk_traffic`` kept the old choice after
``_schedules/chain.py`` changed. ``install()``, run before any module of the package
defines a cached function, puts locators first in numba's list that stamp
the cache of every function defined in this package with a hash of all of
its ``.py`` files (cache files stay where numba puts them); functions of
other packages keep numba's own locators. ``waveops`` registers itself the
same way (``install(its folder)``): its cached CPU kernels inline
``waveops/_core.py``.
"""

from __future__ import annotations

import functools
import hashlib
import os

from numba.core import caching

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # rotate/, this module being in rotate/_core/


def source_files(root: str) -> list:
    """The ``.py`` files under ``root``, in a fixed order (``__pycache__`` left out)."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        found.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))
    return found


def package_stamp(root: str = PACKAGE_DIR) -> bytes:
    """A hash of every ``.py`` file under ``root``: their paths relative to it and their contents."""
    stamps = []
    for path in source_files(root):
        st = os.stat(path)
        stamps.append((os.path.relpath(path, root), st.st_mtime_ns, st.st_size))
    return _hash_files(root, tuple(stamps))


@functools.lru_cache(maxsize=8)
def _hash_files(root: str, stamps: tuple) -> bytes:
    """Keyed by every file's modification time and size, so an edit in a running process rehashes."""
    digest = hashlib.sha256()
    for relpath, _, _ in stamps:
        digest.update(relpath.encode())
        with open(os.path.join(root, relpath), "rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
    return digest.digest()


#: Package folders whose functions' caches are stamped with all of their package's sources.
_ROOTS: list = []


def package_of(py_file: str):
    """The registered package folder ``py_file`` lies in, or None."""
    path = os.path.abspath(py_file)
    for root in _ROOTS:
        if path.startswith(root + os.sep):
            return root
    return None


def _package_locator(base):
    """``base`` (one of numba's locators backed by a source file) for the registered packages' functions
    only, stamped with the sources of the function's package."""

    class PackageLocator(base):
        def get_source_stamp(self):
            return package_stamp(self._package_root)

        @classmethod
        def from_function(cls, py_func, py_file):
            root = package_of(py_file)
            if root is None:
                return None
            locator = super().from_function(py_func, py_file)
            if locator is not None:
                locator._package_root = root
            return locator

    PackageLocator.__name__ = PackageLocator.__qualname__ = f"Package{base.__name__.lstrip('_')}"
    return PackageLocator


def install(root: str = PACKAGE_DIR) -> None:
    """Stamp the caches of the functions defined under the package folder ``root`` with all of its sources
    (call it before the package defines a cached function). The first call puts a package twin of each of
    numba's source-file locators (a ``NUMBA_CACHE_DIR`` setting's, the in-tree ``__pycache__``, the
    user-wide directory) ahead of numba's own, in numba's order."""
    root = os.path.abspath(root)
    if root not in _ROOTS:
        _ROOTS.append(root)
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")  # public from numba 0.64
    classes = impl._locator_classes
    if any(getattr(c, "_rotate_package", False) for c in classes):
        return
    ours = [_package_locator(c) for c in classes if issubclass(c, caching._SourceFileBackedLocatorMixin)]
    for locator in ours:
        locator._rotate_package = True
    classes[0:0] = ours
