"""Unaligned loads and stores of 1-8 bytes at any byte index of a uint8 array (numba CPU code).

numba indexes an array only in units of its own item, so a kernel that moves
bytes in 8-byte windows at arbitrary byte offsets (``rotate._rows``'
``per-lane-byte-window``) needs these: each is one ``load``/``store`` of an
``iN`` through the array's data pointer with ``align 1``, which every LLVM
target lowers to a plain (unaligned) access on x86-64 and AArch64. No bounds
checks: the callers keep every access inside the array. Little-endian only
(the byte order the rotation formulas assume); the planner checks it.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


def _pointer(context, builder, array_type, array, index, bits):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [index]), ir.IntType(bits).as_pointer())


@intrinsic
def load_u64(typingctx, buf, index):
    """The 8 bytes ``buf[index:index+8]`` as one little-endian uint64."""

    def codegen(context, builder, sig, args):
        return builder.load(_pointer(context, builder, sig.args[0], args[0], args[1], 64), align=1)

    return types.uint64(buf, index), codegen


def _store(bits: int):
    def store(typingctx, buf, index, value):
        def codegen(context, builder, sig, args):
            word = context.cast(builder, args[2], sig.args[2], types.uint64)
            if bits < 64:
                word = builder.trunc(word, ir.IntType(bits))
            builder.store(word, _pointer(context, builder, sig.args[0], args[0], args[1], bits), align=1)
            return context.get_dummy_value()

        return types.void(buf, index, value), codegen

    store.__name__ = f"store_u{bits}"
    store.__doc__ = f"``buf[index:index+{bits // 8}]`` = the low {bits} bits of ``value`` (little-endian)."
    return intrinsic(store)


store_u64 = _store(64)
store_u32 = _store(32)
store_u16 = _store(16)
store_u8 = _store(8)
