"""The Vulkan lowering of waveops' rotate: every SPIR-V module validated and read back.

``spirv-val`` (SPIRV-Tools, the ``spirv`` extra) validates every module
``waveops.spirv`` generates, for Vulkan 1.1 and 1.3; ``spirv-dis`` reads each
back so the tests see the instructions: the native lowering is one
``OpGroupNonUniformRotateKHR`` at Subgroup scope with its capability,
extension and ``ClusterSize``, the fallback one ``OpGroupNonUniformShuffle``
of the computed lane, and ``MaximallyReconvergesKHR`` where requested.
The checks are also run on the wrong module (a shuffle where the rotate
belongs) and the validator on a module missing its capability: both must
reject, so neither can pass vacuously.

Without SPIRV-Tools these skip, except under ``ROTATE_REQUIRE_SPIRV=1`` (CI,
after installing the extra), where they fail.
"""

import os
import re
import subprocess
import tempfile

import pytest

from waveops import spirv


def _version(val):
    out = subprocess.run([val, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"SPIRV-Tools v(\d{4})\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _tools():
    val, dis = spirv.find_tool("spirv-val"), spirv.find_tool("spirv-dis")
    if val and dis and (_version(val) or (0, 0)) >= (2024, 1):
        return val, dis
    if val and dis:  # e.g. Debian 12's spirv-tools 2023.1 on PATH: it rejects MaximallyReconvergesKHR
        why = (f"SPIRV-Tools at {val} is {_version(val)}, older than 2024.1 (it does not know "
               f"MaximallyReconvergesKHR): pip install -e '.[spirv]' brings 2025.5")
    else:
        why = "SPIRV-Tools (spirv-val, spirv-dis) not found: pip install -e '.[spirv]'"
    if os.environ.get("ROTATE_REQUIRE_SPIRV") == "1":
        pytest.fail(f"ROTATE_REQUIRE_SPIRV=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def tools():
    return _tools()


@pytest.fixture(scope="module")
def modules():
    return spirv.all_modules()


def _write(words, d, name):
    path = os.path.join(d, name + ".spv")
    with open(path, "wb") as f:
        f.write(spirv.to_bytes(words))
    return path


def validate(val, path, env):
    return subprocess.run([val, "--target-env", env, path], capture_output=True, text=True)


def disassemble(dis, words):
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([dis, "--raw-id", _write(words, d, "m")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_tool_version_knows_maximal_reconvergence(tools):
    val, _ = tools
    out = subprocess.run([val, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"SPIRV-Tools v(\d{4})\.(\d+)", out)
    assert m, out
    # MaximallyReconvergesKHR needs SPIRV-Tools from 2024 on (Debian 12's 2023.1 rejects it).
    assert (int(m.group(1)), int(m.group(2))) >= (2024, 1), out


@pytest.mark.parametrize("env", ["vulkan1.1", "vulkan1.3"])
def test_every_module_validates(tools, modules, env):
    val, _ = tools
    assert len(modules) == 2 * 6 * 7 + 6 * 7 * 2 * 2  # rotate (uniform) + shuffle (uniform, per lane), x MR
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for name, (_, words) in modules.items():
            r = validate(val, _write(words, d, name), env)
            if r.returncode != 0:
                failures.append(f"{name}: {r.stderr or r.stdout}")
    assert not failures, "\n".join(failures[:10])


def _ops(text, op):
    return re.findall(rf"= {op}\b.*", text)


def assert_native(text, width, mr):
    rot = _ops(text, "OpGroupNonUniformRotateKHR")
    assert len(rot) == 1, text
    assert not _ops(text, "OpGroupNonUniformShuffle\\w*"), text
    assert "OpCapability GroupNonUniformRotateKHR" in text
    assert 'OpExtension "SPV_KHR_subgroup_rotate"' in text
    # Execution scope is the constant 3 (Subgroup); then value, delta, [ClusterSize]
    consts = dict(re.findall(r"(%\d+) = OpConstant %\d+ (\d+)", text))
    operands = rot[0].split()[3:]
    assert consts[operands[0]] == "3", rot
    if width is None:
        assert len(operands) == 3, rot
    else:
        assert len(operands) == 4 and consts[operands[3]] == str(width), rot
    # delta from the push constant: dynamically uniform, as the op requires
    assert "PushConstant" in text
    assert_reconvergence(text, mr)


def assert_fallback(text, mr):
    assert len(_ops(text, "OpGroupNonUniformShuffle")) == 1, text
    assert not _ops(text, "OpGroupNonUniformRotateKHR"), text
    assert "GroupNonUniformRotateKHR" not in text and "SPV_KHR_subgroup_rotate" not in text
    assert "OpCapability GroupNonUniformShuffle" in text
    assert "BuiltIn SubgroupLocalInvocationId" in text
    assert_reconvergence(text, mr)


def assert_reconvergence(text, mr):
    has_mode = bool(re.search(r"OpExecutionMode %\d+ MaximallyReconvergesKHR", text))
    has_ext = 'OpExtension "SPV_KHR_maximal_reconvergence"' in text
    assert has_mode == has_ext == mr, text


def test_native_modules_use_the_rotate_op(tools, modules):
    _, dis = tools
    n = 0
    for name, (kw, words) in modules.items():
        if kw["lowering"] == "rotate":
            assert_native(disassemble(dis, words), kw["width"], kw["maximal_reconvergence"])
            n += 1
    assert n == 6 * 7 * 2


def test_fallback_modules_shuffle_the_computed_lane(tools, modules):
    _, dis = tools
    for name, (kw, words) in modules.items():
        if kw["lowering"] == "shuffle":
            assert_fallback(disassemble(dis, words), kw["maximal_reconvergence"])


def test_fallback_lane_arithmetic_is_the_core_formula(tools):
    """width 8: (lane & ~7) | ((lane + delta) & 7), the constants folded."""
    _, dis = tools
    text = disassemble(dis, spirv.rotate_module("uint32", 8, "shuffle"))
    for op, const in (("OpBitwiseAnd", 0xFFFFFFF8), ("OpBitwiseAnd", 7)):
        assert re.search(rf"= {op} %\d+ %\d+ %(\d+)", text)
        assert re.search(rf"OpConstant %\d+ {const}\b", text), text
    assert len(_ops(text, "OpIAdd")) == 3  # two in the lane index, one lane + delta
    assert len(_ops(text, "OpBitwiseOr")) == 1


def test_checks_reject_a_shuffle_in_the_rotate_path(tools):
    _, dis = tools
    wrong = disassemble(dis, spirv.rotate_module("uint32", 8, "shuffle"))
    with pytest.raises(AssertionError):
        assert_native(wrong, 8, True)
    with pytest.raises(AssertionError):
        assert_fallback(disassemble(dis, spirv.rotate_module("uint32", 8, "rotate")), True)


def test_validator_rejects_a_rotate_without_its_capability(tools):
    val, _ = tools
    words = spirv.rotate_module("uint32", None, "rotate")
    cap = [(2 << 16) | 17, 6026]  # OpCapability GroupNonUniformRotateKHR
    i = next(k for k in range(5, len(words)) if words[k:k + 2] == cap)
    broken = words[:i] + words[i + 2:]
    with tempfile.TemporaryDirectory() as d:
        assert validate(val, _write(words, d, "ok"), "vulkan1.1").returncode == 0
        r = validate(val, _write(broken, d, "broken"), "vulkan1.1")
    assert r.returncode != 0 and "GroupNonUniformRotateKHR" in (r.stderr + r.stdout)


def test_binary_header_and_names():
    words = spirv.rotate_module("float64", 4, "shuffle", per_lane_delta=True)
    assert words[:3] == [spirv.MAGIC, 0x00010300, 0]
    assert words[3] > max(2, len(words) // 100)  # id bound
    assert spirv.module_name("float64", 4, "shuffle", True, False) == "shuffle_float64_w4_perlane"


def test_bad_arguments():
    with pytest.raises(ValueError, match="dynamically uniform delta"):
        spirv.rotate_module("uint32", lowering="rotate", per_lane_delta=True)
    with pytest.raises(ValueError, match="dtype must be one of"):
        spirv.rotate_module("int8")
    with pytest.raises(ValueError, match="width must be a power of two"):
        spirv.rotate_module("uint32", width=12)
    with pytest.raises(ValueError, match="lowering must be"):
        spirv.rotate_module("uint32", lowering="readlane")
    with pytest.raises(ValueError, match="local_size"):
        spirv.rotate_module("uint32", local_size=48)


def test_module_doctests():
    import doctest

    result = doctest.testmod(spirv)
    assert result.attempted > 0 and result.failed == 0
