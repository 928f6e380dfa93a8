"""Unaligned loads and stores of 1-8 bytes at any byte index of a uint8 array (numba CPU code).

numba indexes an array only in units of its own item, so a kernel that moves
bytes in 8-byte windows at arbitrary byte offsets (``rotate._backends.cpu.lanes``'
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


def _has_ssse3() -> bool:
    """Whether numba compiles for an x86-64 host with SSSE3 (``pshufb``): numba targets the host CPU."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        from llvmlite import binding

        return bool(binding.get_host_cpu_features().get("ssse3", False))
    except Exception:  # no feature list: keep the portable path
        return False


#: ``shuffle_store16`` is one ``pshufb`` here; elsewhere it is 16 extracts and inserts (correct, slower), and
#: the planner keeps those lanes on the two-word path (``rotate._backends.cpu.lanes``).
HAS_BYTE_SHUFFLE = _has_ssse3()


@intrinsic
def shuffle_store16(typingctx, buf, index, masks, mask_index, tail):
    """Permute the 16 bytes ``buf[index:index+16]`` by the 16 indices (each below 16) at
    ``masks[mask_index:mask_index+16]``, then store the result's low 8 bytes at ``buf[index]`` and its high 8
    at ``buf[index + tail]``. Both loads come before either store. One ``pshufb`` on x86-64."""
    i8x16 = ir.VectorType(ir.IntType(8), 16)

    def codegen(context, builder, sig, args):
        data, at, table, table_at, offset = args
        x = builder.load(builder.bitcast(_pointer(context, builder, sig.args[0], data, at, 8),
                                         i8x16.as_pointer()), align=1)
        mask = builder.load(builder.bitcast(_pointer(context, builder, sig.args[2], table, table_at, 8),
                                            i8x16.as_pointer()), align=1)
        if HAS_BYTE_SHUFFLE:
            pshufb = builder.module.declare_intrinsic("llvm.x86.ssse3.pshuf.b.128", fnty=ir.FunctionType(
                i8x16, [i8x16, i8x16]))
            y = builder.call(pshufb, [x, mask])
        else:
            y = ir.Constant(i8x16, None)
            for j in range(16):
                source = builder.and_(builder.extract_element(mask, ir.Constant(ir.IntType(32), j)),
                                      ir.Constant(ir.IntType(8), 15))
                y = builder.insert_element(y, builder.extract_element(x, source), ir.Constant(ir.IntType(32), j))
        words = builder.bitcast(y, ir.VectorType(ir.IntType(64), 2))
        for lane, position in ((0, at), (1, builder.add(at, offset))):
            word = builder.extract_element(words, ir.Constant(ir.IntType(32), lane))
            builder.store(word, _pointer(context, builder, sig.args[0], data, position, 64), align=1)
        return context.get_dummy_value()

    return types.void(buf, index, masks, mask_index, tail), codegen


@intrinsic
def copy16(typingctx, dst, dst_at, src, src_at):
    """``dst[dst_at:dst_at+16] = src[src_at:src_at+16]`` as one 16-byte load and store (a later 16-byte
    load of the same bytes is forwarded from the store; two 8-byte stores would make it wait)."""
    i8x16 = ir.VectorType(ir.IntType(8), 16)

    def codegen(context, builder, sig, args):
        data, at, source, source_at = args
        x = builder.load(builder.bitcast(_pointer(context, builder, sig.args[2], source, source_at, 8),
                                         i8x16.as_pointer()), align=1)
        builder.store(x, builder.bitcast(_pointer(context, builder, sig.args[0], data, at, 8), i8x16.as_pointer()),
                      align=1)
        return context.get_dummy_value()

    return types.void(dst, dst_at, src, src_at), codegen


@intrinsic
def shuffle3_store16(typingctx, dst, dst_at, src, src_at, masks, mask_at):
    """Store at ``dst[dst_at:dst_at+16]`` the bytes picked from the 48 at ``src[src_at-16:src_at+32]``: three
    16-byte loads, each permuted by its 16 indices at ``masks[mask_at + 16 i:]`` (an index of 0x80 or more
    picks a zero byte), ORed. Three ``pshufb`` on x86-64 with SSSE3 (``HAS_BYTE_SHUFFLE``); elsewhere
    16 extracts and inserts each (correct, slower)."""
    i8x16 = ir.VectorType(ir.IntType(8), 16)

    def shuffle(builder, x, mask):
        if HAS_BYTE_SHUFFLE:
            pshufb = builder.module.declare_intrinsic("llvm.x86.ssse3.pshuf.b.128", fnty=ir.FunctionType(
                i8x16, [i8x16, i8x16]))
            return builder.call(pshufb, [x, mask])
        y = ir.Constant(i8x16, None)
        for j in range(16):
            index = builder.extract_element(mask, ir.Constant(ir.IntType(32), j))
            byte = builder.extract_element(x, builder.and_(index, ir.Constant(ir.IntType(8), 15)))
            zero = builder.icmp_unsigned(">=", index, ir.Constant(ir.IntType(8), 0x80))
            byte = builder.select(zero, ir.Constant(ir.IntType(8), 0), byte)
            y = builder.insert_element(y, byte, ir.Constant(ir.IntType(32), j))
        return y

    def codegen(context, builder, sig, args):
        data, at, source, source_at, table, table_at = args
        out = None
        for i in range(3):
            where = builder.add(source_at, ir.Constant(source_at.type, 16 * (i - 1)))
            x = builder.load(builder.bitcast(_pointer(context, builder, sig.args[2], source, where, 8),
                                             i8x16.as_pointer()), align=1)
            mask_where = builder.add(table_at, ir.Constant(table_at.type, 16 * i))
            mask = builder.load(builder.bitcast(_pointer(context, builder, sig.args[4], table, mask_where, 8),
                                                i8x16.as_pointer()), align=1)
            y = shuffle(builder, x, mask)
            out = y if out is None else builder.or_(out, y)
        builder.store(out, builder.bitcast(_pointer(context, builder, sig.args[0], data, at, 8), i8x16.as_pointer()),
                      align=1)
        return context.get_dummy_value()

    return types.void(dst, dst_at, src, src_at, masks, mask_at), codegen
