"""The SPIR-V rotate modules run on a Vulkan driver, bit for bit against the CPU software wave.

Whatever Vulkan device the loader finds runs them: on CI's CPU machine that
is Mesa's lavapipe (Debian 12: Mesa 22.3, subgroup size 8 on AVX2, no
``shaderSubgroupRotate``, so the shuffle fallback runs there); on a GPU with
the feature, the native ``OpGroupNonUniformRotateKHR`` runs too (the H200's
NVIDIA driver: docs/results/waveops-vulkan-h200.json).  Every lowering the
device offers, 32- and 64-bit values with NaN payloads and ``-0.0``, every
width up to the subgroup, uniform and per-lane deltas; the output buffer is
poisoned before each run.

Skips without a Vulkan loader or device, except under
``ROTATE_REQUIRE_VULKAN=1`` (CI, after installing ``libvulkan1`` and
``mesa-vulkan-drivers``), where it fails.
"""

import os

import numpy as np
import pytest

import waveops
from waveops import vulkan


def _device():
    try:
        return vulkan.Device()
    except vulkan.VulkanUnavailable as exc:
        why = f"no usable Vulkan device: {exc}"
        if os.environ.get("ROTATE_REQUIRE_VULKAN") == "1":
            pytest.fail(f"ROTATE_REQUIRE_VULKAN=1 but {why}")
        pytest.skip(why)


@pytest.fixture(scope="module")
def dev():
    d = _device()
    yield d
    d.close()


def _lowerings(dev, width):
    out = ["shuffle"]
    if dev.best_lowering(width) == "rotate":
        out.append("rotate")
    return out


def _data(dtype, n, seed):
    rng = np.random.default_rng(seed)
    itemsize = np.dtype(dtype).itemsize
    raw = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) * np.uint64(3)
    words = raw.astype(np.uint32) if itemsize == 4 else raw
    x = words.view(dtype).copy()
    if x.dtype.kind == "f":  # NaN payloads, -0.0, inf: bits must survive
        x[:4] = np.array([-0.0, np.inf, np.nan, -np.nan], dtype=dtype)
        w = x.view(words.dtype)
        w[4] = w[2] | words.dtype.type(1)
    return x


def _widths(dev):
    s = dev.info["subgroup_size"]
    return [None] + [1 << k for k in range(s.bit_length()) if (1 << k) <= s]


@pytest.mark.parametrize("dtype", ["uint32", "float32", "int64", "float64"])
def test_uniform_delta_equals_software_wave(dev, dtype):
    s = dev.info["subgroup_size"]
    n = max(64, s) * 4
    x = _data(dtype, n, 7)
    words = np.uint32 if x.dtype.itemsize == 4 else np.uint64
    ran = set()
    for width in _widths(dev):
        for lowering in _lowerings(dev, width):
            for delta in (1, -1, 3, 2**31 + 5, s + 2):
                got = dev.rotate(x, delta, width, lowering=lowering)
                want = waveops.cpu.rotate(x, delta, width=width or s)
                assert dev.last_lowering == lowering
                assert np.array_equal(got.view(words), want.view(words)), (
                    f"dev.rotate(x, {delta}, {width}, lowering={lowering!r}) on {dev.info['device_name']}")
                ran.add(lowering)
    assert "shuffle" in ran
    if dev.info["shaderSubgroupRotate"]:
        assert "rotate" in ran


@pytest.mark.parametrize("dtype", ["int32", "uint64"])
def test_per_lane_delta_equals_software_wave(dev, dtype):
    s = dev.info["subgroup_size"]
    n = max(64, s) * 2
    x = _data(dtype, n, 11)
    deltas = np.random.default_rng(3).integers(-(2**31), 2**31, n)
    for width in _widths(dev):
        got = dev.rotate(x, deltas, width)
        assert dev.last_lowering == "shuffle"  # the native op needs a uniform delta
        np.testing.assert_array_equal(got, waveops.cpu.rotate(x, deltas, width=width or s))


def test_default_lowering_is_what_the_device_offers(dev):
    s = dev.info["subgroup_size"]
    x = np.arange(max(64, s), dtype=np.uint32)
    dev.rotate(x, 1)
    want = "rotate" if dev.info["shaderSubgroupRotate"] else "shuffle"
    assert dev.last_lowering == want
    info = dev.info
    assert info["subgroup_size"] >= 1 and "shuffle" in info["subgroup_operations"]
    if info["shaderSubgroupRotate"]:  # the feature is only read through its extension
        assert info["ext_subgroup_rotate"] is not None


def test_length_not_a_multiple_of_the_work_group(dev):
    with pytest.raises(ValueError, match="not a multiple of the work-group size"):
        dev.rotate(np.arange(max(64, dev.info["subgroup_size"]) + 1, dtype=np.uint32), 1)


def test_no_loader_message(monkeypatch):
    monkeypatch.setenv("WAVEOPS_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1")
    monkeypatch.setattr(vulkan.C, "CDLL", _raise_oserror)
    with pytest.raises(vulkan.VulkanUnavailable, match="no Vulkan loader.*libvulkan1"):
        vulkan.Device()
    assert vulkan.loader_available() is False


def _raise_oserror(name, *a, **k):
    raise OSError(f"{name}: cannot open shared object file")


def test_example_script(dev):
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples",
                        "wave_vulkan.py")
    spec = importlib.util.spec_from_file_location("wave_vulkan", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--n", "256", "--deltas", "1,-3"]) == 0
