"""AMD GPU lowering of the wave rotate: LLVM IR with ``ds_bpermute``, compiled to ISA.

AMD's indexed shuffle (``readlane``) needs a *uniform* source lane, while a
rotate's source lane differs per lane, so AMD GPUs rotate with
``ds_bpermute_b32``: every lane sends a byte address and receives the 32-bit
word of the lane at ``address / 4`` (modulo the wave size).  The address is
``source_lane(lane, delta, width) * 4``, i.e. ``((lane + delta) mod width) * 4``
inside the lane's aligned group of ``width`` lanes.  A 64-bit value moves as
two words, two ``ds_bpermute_b32``.

The IR comes from the same width-agnostic rotate as every backend (the
formula of ``waveops.source_lane``; docs/waveops.md, "How it is built"): its seams are given values that *emit* IR
when the core's formula combines them, so the core's ``&``, ``|``, ``+`` and
``~`` become ``and``/``or``/``add`` instructions, ``lane_id()`` becomes
``mbcnt`` and ``shuffle_idx`` becomes ``llvm.amdgcn.ds.bpermute``.

There is no AMD GPU here and no Numba target for one beside numba 0.68
(``numba-hip`` pins ``numba<0.64``), so this module builds whole kernels as
LLVM IR with llvmlite and compiles them with LLVM's AMDGPU target, which
numba's llvmlite includes, to ISA text that tests read::

    >>> from waveops import amdgpu
    >>> isa = amdgpu.compile_isa(amdgpu.rotate_kernel_ir("uint32", arch="gfx942"), "gfx942")
    >>> isa.count("ds_bpermute_b32")
    1

Targets: wave64 (``gfx90a``, ``gfx942``: CDNA) and wave32 (``gfx1100``,
``gfx1151``: RDNA 3/3.5); `WAVE_SIZE` lists them.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Optional, SupportsIndex, Union

from llvmlite import ir

from . import _core

if TYPE_CHECKING:  # numpy is imported where the emulator runs, not with this module
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "WAVE_SIZE", "VALUE_TYPES", "rotate_kernel_ir", "compile_isa",
    "llvm_version", "emulate_bpermute_rotate",
]

#: The targets this lowering is built and checked for, and their wave size.
WAVE_SIZE = {"gfx90a": 64, "gfx942": 64, "gfx1100": 32, "gfx1151": 32}

#: value dtype -> number of 32-bit words (one ``ds_bpermute_b32`` each).
VALUE_TYPES = {"int32": 1, "uint32": 1, "float32": 1, "int64": 2, "uint64": 2, "float64": 2}

TRIPLE = "amdgcn-amd-amdhsa"
BLOCK = 256  # work-items per work-group of the generated kernels

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_LLVM_TYPES = {
    "int32": _I32, "uint32": _I32, "float32": ir.FloatType(),
    "int64": _I64, "uint64": _I64, "float64": ir.DoubleType(),
}


class _IRInt:
    """An i32 SSA value whose Python operators emit IR (constants fold in Python).

    This is what lets the core's plain-Python rotate formula run as a code
    generator: ``lane & ~(w - 1)`` on these values writes the instructions.
    """

    def __init__(self, builder, value):
        self.b = builder
        if isinstance(value, int):
            value = ir.Constant(_I32, value & 0xFFFFFFFF)
        self.v = value

    def _const(self):
        return self.v.constant if isinstance(self.v, ir.Constant) else None

    def _bin(self, other, op, fold):
        other = other if isinstance(other, _IRInt) else _IRInt(self.b, other)
        a, c = self._const(), other._const()
        if a is not None and c is not None:
            return _IRInt(self.b, fold(a, c))
        return _IRInt(self.b, getattr(self.b, op)(self.v, other.v))

    def __and__(self, o):
        return self._bin(o, "and_", lambda a, c: a & c)

    def __or__(self, o):
        return self._bin(o, "or_", lambda a, c: a | c)

    def __add__(self, o):
        return self._bin(o, "add", lambda a, c: a + c)

    def __sub__(self, o):
        return self._bin(o, "sub", lambda a, c: a - c)

    def __invert__(self):
        a = self._const()
        if a is not None:
            return _IRInt(self.b, ~a)
        return _IRInt(self.b, self.b.not_(self.v))

    __rand__, __ror__, __radd__ = __and__, __or__, __add__


def _intrinsic(module, name, ret, args):
    fnty = ir.FunctionType(ret, args)
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, fnty, name)


def _lane_id_seam(builder, wave):
    """``lane_id()``: ``mbcnt`` of an all-ones mask (lo 32 lanes, then hi for wave64)."""
    m = builder.module
    lo = _intrinsic(m, "llvm.amdgcn.mbcnt.lo", _I32, (_I32, _I32))
    ones = ir.Constant(_I32, 0xFFFFFFFF)
    lane = builder.call(lo, (ones, ir.Constant(_I32, 0)))
    if wave == 64:
        hi = _intrinsic(m, "llvm.amdgcn.mbcnt.hi", _I32, (_I32, _I32))
        lane = builder.call(hi, (ones, lane))
    return lane


def _bpermute_word(builder, word, src_lane):
    """``ds_bpermute_b32``: this lane receives ``word`` of lane ``src_lane``."""
    fn = _intrinsic(builder.module, "llvm.amdgcn.ds.bpermute", _I32, (_I32, _I32))
    addr = builder.shl(src_lane, ir.Constant(_I32, 2))  # byte address: lane * 4
    return builder.call(fn, (addr, word))


def _readlane_word(builder, word, src_lane):
    """The *wrong* lowering (``v_readlane``: one uniform source lane for the whole
    wave).  Kept only so the codegen tests can show that their checks reject it."""
    fn = _intrinsic(builder.module, "llvm.amdgcn.readlane.i32", _I32, (_I32, _I32))
    return builder.call(fn, (word, src_lane))


_WORD_LOWERINGS = {"bpermute": _bpermute_word, "readlane": _readlane_word}


def _make_seams(builder, wave, lowering) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    move_word = _WORD_LOWERINGS[lowering]

    def lane_id():
        return _IRInt(builder, _lane_id_seam(builder, wave))

    def to_lane_int(x):
        if isinstance(x, _IRInt):
            return x
        if isinstance(x, int):
            return _IRInt(builder, x)
        v = x  # an IR integer of any width: wrap to i32 (only the low bits matter)
        if v.type.width > 32:
            v = builder.trunc(v, _I32)
        elif v.type.width < 32:
            v = builder.sext(v, _I32)
        return _IRInt(builder, v)

    def shuffle_idx(value, src):
        src = src.v
        nbits = 64 if value.type in (_I64, ir.DoubleType()) else 32
        word = builder.bitcast(value, ir.IntType(nbits))  # bits move, never the number
        if nbits == 32:
            out = move_word(builder, word, src)
        else:
            lo = builder.trunc(word, _I32)
            hi = builder.trunc(builder.lshr(word, ir.Constant(_I64, 32)), _I32)
            lo, hi = move_word(builder, lo, src), move_word(builder, hi, src)
            out = builder.or_(
                builder.shl(builder.zext(hi, _I64), ir.Constant(_I64, 32)),
                builder.zext(lo, _I64),
            )
        return builder.bitcast(out, value.type)

    return lane_id, shuffle_idx, to_lane_int


def _check(dtype, arch, width):
    if dtype not in VALUE_TYPES:
        raise ValueError(
            f"waveops.amdgpu: dtype must be one of {', '.join(VALUE_TYPES)}, got {dtype!r}"
        )
    if arch not in WAVE_SIZE:
        raise ValueError(
            f"waveops.amdgpu: arch must be one of {', '.join(WAVE_SIZE)}, got {arch!r}; "
            "other gfx targets compile too, but these are the ones checked"
        )
    wave = WAVE_SIZE[arch]
    if width is None:
        width = wave
    if not isinstance(width, int) or not _core.is_pow2(width) or width > wave:
        raise ValueError(
            f"waveops.amdgpu: width must be a power of two from 1 to {wave} "
            f"(the wave size of {arch}), got {width!r}"
        )
    return wave, width


def rotate_kernel_ir(dtype: str, arch: str = "gfx942", width: Optional[int] = None, per_lane_delta: bool = False,
                     name: str = "wave_rotate", _lowering: str = "bpermute") -> str:
    """LLVM IR of a kernel ``out[i] = rotate(x[i], delta, width)`` for an AMD GPU.

    Parameters
    ----------
    dtype : str
        Value type: int32, uint32, float32 (one ``ds_bpermute_b32``) or
        int64, uint64, float64 (two).
    arch : str
        ``gfx90a``/``gfx942`` (wave64) or ``gfx1100``/``gfx1151`` (wave32).
    width : int, optional
        Rotation group, a power of two up to the wave size (default: the wave).
    per_lane_delta : bool
        ``False``: one ``i32 delta`` kernel argument (uniform); ``True``: a
        pointer to one ``i32`` delta per work-item (divergent).
    name : str
        The kernel's symbol.
    _lowering : {'bpermute', 'readlane'}
        For the tests only: ``'readlane'`` builds the *wrong* lowering (one
        uniform source lane), which the ISA checks must reject.

    Returns
    -------
    str
        The module's LLVM IR.  Kernel arguments: ``ptr addrspace(1) out,
        ptr addrspace(1) x, i32 delta`` (or ``ptr addrspace(1) deltas``);
        work-groups of 256 work-items, work-item ``i`` of the grid is lane
        ``i mod wave`` of its wave.

    Raises
    ------
    ValueError
        An unknown ``dtype`` or ``arch``, or a ``width`` that is not a power
        of two up to the wave size.

    Notes
    -----
    The kernel's lane arithmetic is the shared core rotate (the formula of
    :func:`waveops.source_lane`), its seams emitting IR: ``lane_id`` is
    ``mbcnt`` and the shuffle is ``llvm.amdgcn.ds.bpermute`` with the byte
    address ``source_lane * 4``.  Nothing here runs the kernel: no AMD GPU is
    needed (or used).

    See Also
    --------
    compile_isa : Compile this IR to AMDGPU ISA.
    emulate_bpermute_rotate : The same lane arithmetic on the CPU.
    waveops.cpu.rotate : The reference the lowering is checked against.

    Examples
    --------
    >>> from waveops import amdgpu
    >>> ir = amdgpu.rotate_kernel_ir("float64", arch="gfx1100", width=16)
    >>> ir.count('call i32 @"llvm.amdgcn.ds.bpermute"')    # a 64-bit value: two words
    2
    """
    wave, width = _check(dtype, arch, width)
    vt = _LLVM_TYPES[dtype]
    gptr = ir.PointerType(addrspace=1)
    m = ir.Module(name=f"waveops_{name}")
    m.triple = TRIPLE
    fnty = ir.FunctionType(ir.VoidType(), (gptr, gptr, gptr if per_lane_delta else _I32))
    fn = ir.Function(m, fnty, name)
    fn.calling_convention = "amdgpu_kernel"
    fn.attributes.add("nounwind")
    out_p, x_p, delta_arg = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tid = b.call(_intrinsic(m, "llvm.amdgcn.workitem.id.x", _I32, ()), ())
    gid = b.call(_intrinsic(m, "llvm.amdgcn.workgroup.id.x", _I32, ()), ())
    i = b.zext(b.add(b.mul(gid, ir.Constant(_I32, BLOCK)), tid), _I64)
    x = b.load(b.gep(x_p, [i], source_etype=vt), typ=vt)
    if per_lane_delta:
        delta = b.load(b.gep(delta_arg, [i], source_etype=_I32), typ=_I32)
    else:
        delta = delta_arg
    rotate = _core.make_rotate(*_make_seams(b, wave, _lowering), default_width=wave)
    y = rotate(x, delta, width)
    b.store(y, b.gep(out_p, [i], source_etype=vt))
    b.ret_void()
    return str(m)


@functools.lru_cache(maxsize=None)
def _target_machine(arch, opt):
    import llvmlite.binding as ll

    ll.initialize_all_targets()
    ll.initialize_all_asmprinters()
    target = ll.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, opt=opt, reloc="pic", codemodel="default")


def compile_isa(ir_text: str, arch: str = "gfx942", opt: int = 3) -> str:
    """Optimise ``ir_text`` (LLVM's O``opt`` pipeline) and return AMDGPU ISA text.

    Uses numba's own llvmlite and its AMDGPU target: no ROCm, no GPU.  The
    text holds the instructions, the ``.amdhsa_*`` kernel descriptor and
    LLVM's ``; ScratchSize:`` / ``; NumVgprs:`` comments.

    Parameters
    ----------
    ir_text : str
        An LLVM IR module, e.g. from :func:`rotate_kernel_ir`.
    arch : str, optional
        The target processor (default ``gfx942``); the ones checked are the
        keys of :data:`WAVE_SIZE`, but any gfx target LLVM knows compiles.
    opt : int, optional
        Optimisation level 0-3 (default 3); 0 skips the optimisation passes.

    Returns
    -------
    str
        The assembly text.

    Raises
    ------
    RuntimeError
        IR that does not parse or verify (llvmlite's error, with LLVM's message).

    See Also
    --------
    rotate_kernel_ir : The kernels this compiles.
    llvm_version : The LLVM that compiles them.

    Examples
    --------
    >>> from waveops import amdgpu
    >>> isa = amdgpu.compile_isa(amdgpu.rotate_kernel_ir("uint32", arch="gfx942"), "gfx942")
    >>> isa.count("ds_bpermute_b32")
    1
    """
    import llvmlite.binding as ll

    tm = _target_machine(arch, opt)
    mod = ll.parse_assembly(ir_text)
    mod.triple = TRIPLE
    mod.data_layout = str(tm.target_data)
    mod.verify()
    if opt:
        pto = ll.PipelineTuningOptions(speed_level=min(opt, 3))
        pb = ll.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)


def llvm_version() -> str:
    """The LLVM version of the llvmlite that compiles these kernels, e.g. ``'22.1.0'``.

    Returns
    -------
    str
        ``major.minor.patch`` of llvmlite's LLVM.

    See Also
    --------
    compile_isa : Compiles with this LLVM.

    Examples
    --------
    >>> from waveops import amdgpu
    >>> int(amdgpu.llvm_version().split(".")[0]) >= 14
    True
    """
    import llvmlite.binding as ll

    return ".".join(map(str, ll.llvm_version_info))


def emulate_bpermute_rotate(lanes: npt.ArrayLike, delta: Union[SupportsIndex, npt.ArrayLike],
                            width: Optional[int] = None, wave: int = 64) -> np.ndarray:
    """Run the AMD lowering's lane arithmetic on the CPU, with a model of ``ds_bpermute``.

    The same core rotate as `rotate_kernel_ir`, but its seams are numpy: ``lane_id``
    is ``arange(n) mod wave`` and ``ds_bpermute`` reads, for each lane, the lane
    ``(address >> 2) mod wave`` of its own wave (the instruction's documented
    behaviour).  Equal to ``waveops.cpu.rotate`` when the address is right;
    this models the instruction, it does not run it.

    Parameters
    ----------
    lanes : array_like
        1-D values, one per lane, waves of ``wave`` lanes back to back.
    delta : int or array_like of int
        Rotation distance: one for all lanes, or one per lane.
    width : int, optional
        Rotation group, a power of two up to ``wave`` (default: ``wave``).
    wave : int, optional
        The wave size: 64 (CDNA, the default) or 32 (RDNA).

    Returns
    -------
    numpy.ndarray
        The rotated values, a new array of ``lanes``' dtype and shape.

    Raises
    ------
    IndexError
        ``lanes`` that do not hold whole waves of ``wave`` lanes.

    See Also
    --------
    rotate_kernel_ir : The IR whose arithmetic this runs.
    waveops.cpu.rotate : The reference it must equal.

    Examples
    --------
    >>> import numpy as np, waveops
    >>> from waveops import amdgpu
    >>> x = np.arange(128, dtype=np.int32)
    >>> y = amdgpu.emulate_bpermute_rotate(x, 3, width=16)
    >>> np.array_equal(y, waveops.cpu.rotate(x, 3, width=16))
    True
    """
    import numpy as np

    a = np.asarray(lanes)
    n = a.size
    width = wave if width is None else width
    lane = np.arange(n, dtype=np.int64) % wave
    base = np.arange(n, dtype=np.int64) - lane

    def shuffle_idx(value, src):
        addr = (np.asarray(src, dtype=np.int64) << 2) & 0xFFFFFFFF
        return value[base + ((addr >> 2) % wave)]

    rotate = _core.make_rotate(
        lambda: lane, shuffle_idx, lambda v: np.asarray(v, dtype=np.int64), wave
    )
    return rotate(a, delta, width)
