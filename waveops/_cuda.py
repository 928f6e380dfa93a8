"""CUDA backend of waveops: the NVIDIA seams and the device functions.

Imported lazily by ``waveops`` the first time ``waveops.rotate``,
``waveops.lane_id`` or ``waveops.width`` is looked up, so ``import waveops``
stays usable without numba-cuda.  Importing this module imports numba-cuda
but does not initialise the CUDA driver: nothing here touches a device until
a kernel that uses these functions is compiled for one.

Seams (see ``waveops._core``):

* ``lane_id``: the ``%laneid`` special register.
* ``width``: 32.
* ``shuffle_idx``: ``shfl.sync.idx.b32`` with a full member mask and a per-lane
  source; 64-bit values move as two 32-bit words.  Values are bit-cast, never
  converted, so NaN payloads and ``-0.0`` survive.
"""

from llvmlite import ir
from numba.cuda import cgutils, nvvmutils, types
from numba.cuda.core.errors import TypingError
from numba.cuda.extending import intrinsic, overload
from numba.cuda.typing import signature

from . import _core

__all__ = ["rotate", "lane_id", "width", "WAVE_WIDTH", "FULL_MASK"]

WAVE_WIDTH = 32
FULL_MASK = 0xFFFFFFFF

_WORD_TYPES = (types.int32, types.uint32, types.float32)
_DWORD_TYPES = (types.int64, types.uint64, types.float64)
_VALUE_TYPES = _WORD_TYPES + _DWORD_TYPES
_SUPPORTED = "int32, uint32, float32, int64, uint64 or float64"


# --------------------------------------------------------------------------
# Seams


@intrinsic
def _lane_id(typingctx):
    def codegen(context, builder, sig, args):
        lane = nvvmutils.call_sreg(builder, "laneid")
        # Tell LLVM 0 <= lane < 32, so the group base ``lane & ~(w - 1)`` of
        # the generic rotate folds away for w = 32 (as a raw shfl_sync has it).
        i32 = ir.IntType(32)
        lane.set_metadata(
            "range",
            builder.module.add_metadata(
                [ir.Constant(i32, 0), ir.Constant(i32, WAVE_WIDTH)]
            ),
        )
        return lane

    return signature(types.int32), codegen


@intrinsic
def _wave_width(typingctx):
    def codegen(context, builder, sig, args):
        return ir.Constant(ir.IntType(32), WAVE_WIDTH)

    return signature(types.int32), codegen


@intrinsic
def _to_i32(typingctx, x):
    # Wrapping conversion of any integer to int32.  Only the low five bits of
    # a lane offset matter, and doing it here (rather than relying on numba's
    # integer promotion) keeps uint64 + int32 from being typed as float64.
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        (v,) = args
        i32 = ir.IntType(32)
        bits = v.type.width
        if bits > 32:
            return builder.trunc(v, i32)
        if bits < 32:
            if sig.args[0].signed:
                return builder.sext(v, i32)
            return builder.zext(v, i32)
        return v

    return signature(types.int32, x), codegen


def _shfl_word(builder, word, src):
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(ir.LiteralStructType((i32, ir.IntType(1))), (i32,) * 5)
    fn = cgutils.get_or_insert_function(
        builder.module, fnty, "llvm.nvvm.shfl.sync.i32"
    )
    # mode 0 = idx; c = 0x1f: one segment of 32 lanes, the width handling is
    # already in ``src``, so every width shares one instruction form.
    args = (
        ir.Constant(i32, FULL_MASK),
        ir.Constant(i32, 0),
        word,
        src,
        ir.Constant(i32, 0x1F),
    )
    return builder.extract_value(builder.call(fn, args), 0)


@intrinsic
def _shuffle_idx(typingctx, value, src_lane):
    vt = types.unliteral(value)
    if vt not in _VALUE_TYPES or not isinstance(src_lane, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        v, src = args
        i32 = ir.IntType(32)
        i64 = ir.IntType(64)
        src = builder.trunc(src, i32) if src.type.width > 32 else src
        nbits = sig.args[0].bitwidth
        # bitcast, not fptosi/sitofp: the word moves untouched.
        word = builder.bitcast(v, ir.IntType(nbits))
        if nbits == 32:
            out = _shfl_word(builder, word, src)
        else:
            lo = builder.trunc(word, i32)
            hi = builder.trunc(builder.lshr(word, ir.Constant(i64, 32)), i32)
            lo = _shfl_word(builder, lo, src)
            hi = _shfl_word(builder, hi, src)
            out = builder.or_(
                builder.shl(builder.zext(hi, i64), ir.Constant(i64, 32)),
                builder.zext(lo, i64),
            )
        return builder.bitcast(out, context.get_value_type(sig.return_type))

    return signature(vt, vt, types.int32), codegen


_rotate_impl = _core.make_rotate(_lane_id, _shuffle_idx, _to_i32, WAVE_WIDTH)


# --------------------------------------------------------------------------
# Public device functions.  The Python bodies only run when called from host
# code by mistake; inside a kernel the overloads below replace them.


def _host_call(name):
    raise RuntimeError(
        f"waveops.{name}() is a CUDA device function: call it inside a "
        "@cuda.jit kernel, with every lane of the warp. For host code use "
        f"the software wave, waveops.cpu.{name}()."
    )


def rotate(value, delta, width=WAVE_WIDTH):
    """Lane shuffle inside a CUDA kernel: lane l gets the value of lane (l + delta) mod width.

    Lane ``l`` returns the ``value`` held by lane ``(l + delta) mod width`` of
    its aligned group of ``width`` lanes (``l & ~(width - 1)`` is the group's
    first lane).  Call it inside a ``@cuda.jit`` kernel, from every lane of
    the warp.

    Parameters
    ----------
    value : int32, uint32, float32, int64, uint64 or float64
        This lane's value.  32-bit values take one ``shfl.sync.idx``, 64-bit
        values two; the bits move untouched (NaN payloads and ``-0.0``
        survive).
    delta : int
        Rotation distance, any integer type, any sign or size (taken modulo
        ``width``); it may differ from lane to lane.
    width : int, optional
        The group of lanes that rotate together: a power of two from 1 to 32
        (default 32, the whole warp).

    Returns
    -------
    same type as value
        The ``value`` of lane ``(l + delta) mod width`` of this lane's group.

    Raises
    ------
    numba.core.errors.TypingError
        At compile time: an unsupported ``value`` type, or a non-integer
        ``delta`` or ``width``.
    ValueError
        At compile time: a literal ``width`` that is not a power of two from 1
        to 32.
    RuntimeError
        Called from host code (outside a kernel); without numba-cuda, or
        under the CUDA simulator (which has no warp shuffles), whenever it is
        called.

    Notes
    -----
    ``rotate`` is a full-warp collective, like ``shfl_sync`` with the full
    member mask: all 32 lanes of the warp must reach the same call, also when
    ``width < 32``.  Calling it from a divergent branch, or after some lanes
    of the warp returned (a partial last warp whose out-of-range threads
    exited early), is undefined behaviour.  Keep every lane alive, clamp its
    load index, and guard only the store.  A run-time ``width`` that is not a
    power of two from 1 to 32 gives unspecified lanes.

    See Also
    --------
    waveops.cpu.rotate : The same rotate over arrays of whole waves, on the CPU.
    lane_id : This thread's lane.
    source_lane : The lane each lane reads.

    Examples
    --------
    In a kernel (needs a CUDA GPU and numba-cuda)::

        from numba import cuda
        import waveops

        @cuda.jit
        def right_neighbour(out, x):
            i = cuda.grid(1)
            out[i] = waveops.rotate(x[i], 1)     # lane l gets lane (l + 1) % 32

    From host code it refuses to run, and names the CPU twin:

    >>> import waveops
    >>> waveops.rotate(1.0, 1)
    Traceback (most recent call last):
        ...
    RuntimeError: waveops.rotate() is a CUDA device function...
    """
    _host_call("rotate")


def lane_id():
    """This thread's lane in its warp, ``0 <= lane_id() < 32`` (CUDA device function).

    Returns
    -------
    int32
        The ``%laneid`` special register.

    Raises
    ------
    RuntimeError
        Called from host code (outside a kernel); without numba-cuda, or
        under the CUDA simulator, whenever it is called.

    See Also
    --------
    width : The warp width.
    waveops.cpu.lane_ids : The lanes of a CPU software wave.

    Examples
    --------
    In a kernel::

        @cuda.jit
        def lanes(out):
            out[cuda.grid(1)] = waveops.lane_id()

    >>> import waveops
    >>> waveops.lane_id()
    Traceback (most recent call last):
        ...
    RuntimeError: waveops.lane_id() is a CUDA device function...
    """
    _host_call("lane_id")


def width():
    """The warp width, 32 on NVIDIA (CUDA device function).

    Returns
    -------
    int32
        32, a compile-time constant.

    Raises
    ------
    RuntimeError
        Called from host code (outside a kernel); without numba-cuda, or
        under the CUDA simulator, whenever it is called.

    See Also
    --------
    lane_id : This thread's lane.
    waveops.cpu.width : The CPU software wave's default width.

    Examples
    --------
    In a kernel::

        @cuda.jit
        def last_lane(out, x):
            i = cuda.grid(1)
            out[i] = waveops.rotate(x[i], waveops.width() - 1)   # lane l reads lane l - 1

    >>> import waveops
    >>> waveops.width()
    Traceback (most recent call last):
        ...
    RuntimeError: waveops.width() is a CUDA device function...
    """
    _host_call("width")


def _check_width_literal(width):
    if isinstance(width, types.Omitted):
        return
    if isinstance(width, int):  # the Python default itself
        return
    if isinstance(width, types.IntegerLiteral):
        w = width.literal_value
        if not _core.is_pow2(w) or w > WAVE_WIDTH:
            # ValueError, not TypingError: numba would answer a TypingError
            # by retrying with the non-literal int64 type, which passes.
            raise ValueError(
                f"waveops.rotate: width must be a power of two from 1 to "
                f"{WAVE_WIDTH}, got width={w}; pass 1, 2, 4, 8, 16 or 32"
            )
        return
    if isinstance(width, types.Integer):
        return  # a run-time width: the caller promises a power of two
    raise TypingError(
        f"waveops.rotate: width must be an integer power of two from 1 to "
        f"{WAVE_WIDTH}, got an argument of type {width}; pass e.g. width=16"
    )


@overload(rotate, target="cuda", prefer_literal=True)
def _ol_rotate(value, delta, width=WAVE_WIDTH):
    vt = types.unliteral(value)
    if vt not in _VALUE_TYPES:
        raise TypingError(
            f"waveops.rotate: value must be {_SUPPORTED}, got {value}; "
            "cast it first (bools and narrower ints: to int32; "
            "complex/structured: rotate each 32/64-bit part)"
        )
    if not isinstance(delta, types.Integer):
        raise TypingError(
            f"waveops.rotate: delta must be an integer, got {delta}; "
            "pass an int (any sign or size; it is taken modulo the width)"
        )
    _check_width_literal(width)
    return _rotate_impl


@overload(lane_id, target="cuda")
def _ol_lane_id():
    return lambda: _lane_id()


@overload(width, target="cuda")
def _ol_width():
    return lambda: _wave_width()
