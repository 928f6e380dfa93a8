"""The AMD lowering of waveops' rotate, compiled to ISA without an AMD GPU.

``waveops.amdgpu`` builds kernels as LLVM IR (from the core rotate) and
compiles them with the AMDGPU target of numba's own llvmlite, so these run
in CI on a CPU machine.  For every target (wave64 gfx90a/gfx942, wave32
gfx1100/gfx1151), value type, group width and uniform or per-lane delta:
exactly one ``ds_bpermute_b32`` per 32-bit word, no ``readlane`` /
``readfirstlane``, no scratch (private segment) use, the target's wave size.
The same checks are run on the wrong lowering (``readlane``) and must reject
it, so they cannot pass vacuously.  The lane arithmetic itself is checked
against the CPU software wave with a model of ``ds_bpermute``.
"""

import re

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import waveops
from waveops import amdgpu

ARCHS = list(amdgpu.WAVE_SIZE)
DTYPES = list(amdgpu.VALUE_TYPES)


def isa_of(dtype, arch, width=None, per_lane=False, lowering=None):
    # The public call (no lowering named) is what the checks guard; only the
    # negative control names the wrong lowering.
    extra = {} if lowering is None else {"_lowering": lowering}
    ir_text = amdgpu.rotate_kernel_ir(dtype, arch, width, per_lane, **extra)
    return amdgpu.compile_isa(ir_text, arch)


def code_of(isa):
    """The kernel's instructions: the text before its descriptor sections."""
    start = isa.index("wave_rotate:")
    return isa[start:isa.index(".Lfunc_end0", start)]


def assert_bpermute_lowering(isa, arch, words):
    code = code_of(isa)
    assert code.count("ds_bpermute_b32") == words, code
    # The divergent source lane must never become a uniform one.
    bad = re.findall(r"\b[sv]_readlane\w*|\bv_readfirstlane\w*|\bv_writelane\w*", code)
    assert not bad, f"{bad} in\n{code}"
    # No scratch: no private segment, no stack, no scratch/buffer spills.
    assert re.search(r"\.amdhsa_private_segment_fixed_size 0\b", isa), isa
    assert re.search(r"\.amdhsa_uses_dynamic_stack 0\b", isa)
    assert re.search(r"\.private_seg_size, 0\b", isa)
    assert not re.search(r"\bscratch_\w+|\bbuffer_(load|store)\w*|\bflat_(load|store)\w*", code), code
    assert re.search(rf"\.wavefront_size:\s+{amdgpu.WAVE_SIZE[arch]}\b", isa)
    # The value moves as raw words: no float<->int conversion.
    assert not re.search(r"\bv_cvt_\w+", code), code


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("per_lane", [False, True], ids=["uniform", "per_lane"])
def test_one_bpermute_per_word(arch, dtype, per_lane):
    wave = amdgpu.WAVE_SIZE[arch]
    widths = [1 << k for k in range(wave.bit_length())]
    for width in widths:
        isa = isa_of(dtype, arch, width, per_lane)
        assert_bpermute_lowering(isa, arch, amdgpu.VALUE_TYPES[dtype])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ["uint32", "float64"])
def test_checks_reject_a_readlane_lowering(arch, dtype):
    """The assertions above fail on the lowering the specification forbids."""
    isa = isa_of(dtype, arch, per_lane=True, lowering="readlane")
    with pytest.raises(AssertionError):
        assert_bpermute_lowering(isa, arch, amdgpu.VALUE_TYPES[dtype])
    assert "ds_bpermute_b32" not in code_of(isa)
    assert re.search(r"v_readlane|v_readfirstlane", code_of(isa))


@pytest.mark.parametrize("arch", ARCHS)
def test_ir_byte_address_is_source_lane_times_four(arch):
    wave = amdgpu.WAVE_SIZE[arch]
    ir_text = amdgpu.rotate_kernel_ir("uint32", arch, width=8)
    assert ir_text.count('call i32 @"llvm.amdgcn.ds.bpermute"') == 1
    assert re.search(r"shl i32 %\S+, 2\n", ir_text)
    # lane_id is mbcnt: lo only on wave32, lo then hi on wave64
    assert ('call i32 @"llvm.amdgcn.mbcnt.hi"' in ir_text) == (wave == 64)
    assert "llvm.amdgcn.mbcnt.lo" in ir_text
    # the group base lane & ~(8 - 1) and the offset & (8 - 1), folded constants
    assert re.search(r"and i32 %\S+, 4294967288\b", ir_text)
    assert re.search(r"and i32 %\S+, 7\b", ir_text)


_raw_words = st.integers(0, 2**64 - 1)


@settings(max_examples=60, deadline=None)
@given(
    wave=st.sampled_from([32, 64]),
    wexp=st.integers(0, 6),
    nwaves=st.integers(1, 3),
    data=st.data(),
)
def test_bpermute_model_equals_software_wave(wave, wexp, nwaves, data):
    width = min(1 << wexp, wave)
    n = wave * nwaves
    lanes = np.array(data.draw(st.lists(_raw_words, min_size=n, max_size=n)), dtype=np.uint64)
    if data.draw(st.booleans()):
        delta = data.draw(st.integers(-(2**40), 2**40))
    else:
        delta = np.array(data.draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=n, max_size=n)),
                         dtype=np.int64)
    note(f"emulate_bpermute_rotate({lanes!r}, {delta!r}, width={width}, wave={wave})")
    got = amdgpu.emulate_bpermute_rotate(lanes, delta, width=width, wave=wave)
    want = waveops.cpu.rotate(lanes, delta, width=width)
    np.testing.assert_array_equal(got, want)


def test_bad_arguments():
    with pytest.raises(ValueError, match="dtype must be one of"):
        amdgpu.rotate_kernel_ir("int16", "gfx942")
    with pytest.raises(ValueError, match="arch must be one of"):
        amdgpu.rotate_kernel_ir("uint32", "gfx803")
    with pytest.raises(ValueError, match=r"power of two from 1 to 32 \(the wave size of gfx1100\)"):
        amdgpu.rotate_kernel_ir("uint32", "gfx1100", width=64)
    with pytest.raises(ValueError, match="power of two"):
        amdgpu.rotate_kernel_ir("uint32", "gfx942", width=12)


def test_llvm_version_string():
    assert re.fullmatch(r"\d+\.\d+\.\d+", amdgpu.llvm_version())


def test_module_doctests():
    import doctest

    result = doctest.testmod(amdgpu, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
