"""numba's on-disk cache of the package's kernels is stamped with all of the package's sources
(rotate/_core/numba_cache.py): an edit to _schedules/chain.py alone must not leave _backends/cpu/'s cached kernels, which
inline its index math, running the old code."""

import importlib
import inspect
import os

from numba.core.dispatcher import Dispatcher

from rotate._core import numba_cache as _numba_cache

CACHED_MODULES = ("rotate._backends.cpu.kernels", "rotate._backends.cpu.lanes", "rotate._schedules.rowperm", "rotate._backends.cuda.schedules.lane_walks",
                  "rotate._backends.cuda.schedules.lane_swaps")


def cached_locators(module):
    """``(dispatcher, cache locator)`` of every disk-cached numba function defined at ``module``'s top level."""
    for value in vars(module).values():
        if isinstance(value, Dispatcher) and value._cache.__class__.__name__ != "NullCache":
            yield value, value._cache._impl._locator


def test_every_cached_kernel_of_the_package_is_stamped_with_the_package():
    from rotate._backends.cuda.schedules import lane_swaps as gpu_lane_swaps, lane_walks as gpu_lane_walks

    gpu_lane_walks._walk_traffic_compiled()  # built on first use
    gpu_lane_swaps._swap_traffic_compiled()
    found = 0
    for name in CACHED_MODULES:
        for value, locator in cached_locators(importlib.import_module(name)):
            assert getattr(type(locator), "_rotate_package", False), (name, value, type(locator))
            assert locator.get_source_stamp() == _numba_cache.package_stamp()
            found += 1
    assert found >= 20, found
    for traffic in (gpu_lane_walks._walk_traffic_compiled(), gpu_lane_swaps._swap_traffic_compiled()):
        assert getattr(type(traffic._cache._impl._locator), "_rotate_package", False)


def test_functions_of_other_packages_keep_numbas_locators():
    from numba import njit

    def elsewhere(x):
        return x + 1

    cached = njit(cache=True)(elsewhere)  # this test file is outside the package
    assert not getattr(type(cached._cache._impl._locator), "_rotate_package", False)
    assert os.path.abspath(inspect.getfile(elsewhere)).startswith(os.path.dirname(os.path.abspath(__file__)))


def test_the_stamp_changes_with_any_source_of_the_package_and_only_those(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "sub" / "b.py").write_text("B = 2\n")
    first = _numba_cache.package_stamp(str(tmp_path))
    (tmp_path / "notes.txt").write_text("not a source\n")
    (tmp_path / "__pycache__" / "c.py").write_text("cached\n")
    assert _numba_cache.package_stamp(str(tmp_path)) == first
    (tmp_path / "sub" / "b.py").write_text("B = 3\n")  # same size, other contents
    second = _numba_cache.package_stamp(str(tmp_path))
    assert second != first
    (tmp_path / "sub" / "c.py").write_text("")
    assert _numba_cache.package_stamp(str(tmp_path)) not in (first, second)


def test_install_is_idempotent():
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    before = list(impl._locator_classes)
    _numba_cache.install()
    assert impl._locator_classes == before
    ours = [c for c in before if getattr(c, "_rotate_package", False)]
    assert ours and before[:len(ours)] == ours  # ahead of numba's own


def test_waveops_cached_kernels_are_stamped_with_all_of_waveops_sources():
    """waveops/cpu.py's cached kernels inline waveops/_core.py: their stamp is every waveops source's,
    and differs from rotate's (each package is stamped with its own files)."""
    import waveops.cpu as wave_cpu

    root = os.path.dirname(os.path.abspath(wave_cpu.__file__))
    found = 0
    for value, locator in cached_locators(wave_cpu):
        assert getattr(type(locator), "_rotate_package", False), (value, type(locator))
        assert locator.get_source_stamp() == _numba_cache.package_stamp(root) != _numba_cache.package_stamp()
        found += 1
    assert found >= 2, found
    assert _numba_cache.package_of(os.path.join(root, "_core.py")) == root
    assert _numba_cache.package_of(__file__) is None
