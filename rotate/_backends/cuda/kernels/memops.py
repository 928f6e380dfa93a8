"""Global memory operations for the kernels, and their simulator twins.

numba emits 128-bit global accesses only through inline PTX (docs/design.md), so
on a GPU these are intrinsics. Each takes a *base* and a byte position (or an
element index for flags, counters and tables): on the GPU the base is either
a raw device address (an ``int64`` kernel argument: the chain kernel takes
only scalars, so a launch needs no per-call argument marshalling) or a numba
array; under the CUDA simulator (what CI runs, which cannot execute inline
PTX) it is the byte array itself and these are plain Python with the same
meaning. Positions may reach up to 15 bytes before a row or past its end,
because reads are over-copied to whole aligned vectors.

The simulator twins also check what the hardware would fault on: every
16-byte access must be 16-byte aligned in memory.
"""

from __future__ import annotations

from numba.core import config

SIMULATED = bool(config.ENABLE_CUDASIM)

if SIMULATED:

    class MisalignedAccess(AssertionError):
        """A 16-byte access at an address that is not a multiple of 16 (a fault on the GPU)."""

    def _base_address(data):
        return data.__array_interface__["data"][0] if hasattr(data, "__array_interface__") else \
            data._ary.__array_interface__["data"][0]

    def _check_aligned(data, pos):
        address = _base_address(data)
        if (address + pos) % 16:
            raise MisalignedAccess(f"16-byte access at byte {pos} of an array at address {address:#x}")

    def address_low(data, pos):
        """The low 32 bits of the address of byte ``pos`` of ``data`` (its phase within sectors and lines)."""
        return (_base_address(data) + pos) & 0xFFFFFFFF

    def load16(data, pos):
        """Four little-endian words of ``data[pos:pos + 16]``; bytes outside read 0."""
        _check_aligned(data, pos)
        words = [0, 0, 0, 0]
        size = data.shape[0]
        for i in range(16):
            p = pos + i
            if 0 <= p < size:
                words[i // 4] |= int(data[p]) << (8 * (i % 4))
        return words[0], words[1], words[2], words[3]

    def store16(data, pos, w0, w1, w2, w3):
        _check_aligned(data, pos)
        words = (int(w0), int(w1), int(w2), int(w3))
        for i in range(16):
            data[pos + i] = (words[i // 4] >> (8 * (i % 4))) & 0xFF

    def store8(data, pos, value):
        data[pos] = value & 0xFF

    def load_i64(table, index):
        return table[index]

    def store_u64(counters, index, value):
        counters[index] = value

else:
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    _i32 = ir.IntType(32)
    _i64 = ir.IntType(64)

    def _address(context, builder, base_type, base, pos):
        """``base + pos``: ``base`` is a raw device address (an integer) or a numba array."""
        if isinstance(base_type, types.Integer):
            start = context.cast(builder, base, base_type, types.int64)
        else:
            ary = context.make_array(base_type)(context, builder, base)
            start = builder.ptrtoint(ary.data, _i64)
        return builder.add(start, pos)

    def _scaled(builder, index, size):
        return builder.mul(index, ir.Constant(_i64, size))

    def _emit(builder, instruction, constraints, operands):
        """A PTX ``instruction`` with no result that must stay where it is and in order with every other
        memory access (side effects, a memory clobber): stores, copies, barriers."""
        fnty = ir.FunctionType(ir.VoidType(), [operand.type for operand in operands])
        builder.call(ir.InlineAsm(fnty, instruction, constraints + ",~{memory}" if constraints else "~{memory}",
                                  side_effect=True), operands)

    def _instruction(instruction):
        """An intrinsic with no operands that emits ``instruction`` where it stands: a fence, a barrier,
        or a commit or wait of asynchronous copies (the counts these take are immediates)."""

        @intrinsic
        def emit_instruction(typingctx):
            sig = types.void()

            def codegen(context, builder, signature, args):
                _emit(builder, instruction, "", [])
                return context.get_dummy_value()

            return sig, codegen

        return emit_instruction

    def _load_words(context, builder, return_type, address, instruction):
        """Emit a 4 x u32 vector load (``instruction`` reads address ``$4``) as a numba tuple."""
        fnty = ir.FunctionType(ir.LiteralStructType([_i32] * 4), [_i64])
        asm = ir.InlineAsm(fnty, instruction, "=r,=r,=r,=r,l,~{memory}", side_effect=True)
        result = builder.call(asm, [address])
        words = [builder.extract_value(result, i) for i in range(4)]
        return context.make_tuple(builder, return_type, words)

    @intrinsic
    def load16(typingctx, data, pos):
        """``ld.global.cg.v4.u32``: one 128-bit load, cached in L2 only.

        L2-only because every byte is read once and other blocks write the
        same lines during the kernel: an L1 copy could only ever be stale.
        """
        sig = types.UniTuple(types.uint32, 4)(data, types.int64)

        def codegen(context, builder, signature, args):
            array, position = args
            position = context.cast(builder, position, signature.args[1], types.int64)
            address = _address(context, builder, signature.args[0], array, position)
            return _load_words(context, builder, signature.return_type, address,
                               "ld.global.cg.v4.u32 {$0, $1, $2, $3}, [$4];")

        return sig, codegen

    @intrinsic
    def address_low(typingctx, data, pos):
        """The low 32 bits of the address of byte ``pos`` of ``data`` (its phase within sectors and lines)."""
        sig = types.uint32(data, types.int64)

        def codegen(context, builder, signature, args):
            pos = context.cast(builder, args[1], signature.args[1], types.int64)
            return builder.trunc(_address(context, builder, signature.args[0], args[0], pos), _i32)

        return sig, codegen

    @intrinsic
    def store16(typingctx, data, pos, w0, w1, w2, w3):
        """``st.global.v4.u32``: one 128-bit store."""
        sig = types.void(data, types.int64, types.uint32, types.uint32, types.uint32, types.uint32)

        def codegen(context, builder, signature, args):
            array, position = args[0], args[1]
            position = context.cast(builder, position, signature.args[1], types.int64)
            address = _address(context, builder, signature.args[0], array, position)
            words = [context.cast(builder, v, t, types.uint32) for v, t in zip(args[2:], signature.args[2:])]
            _emit(builder, "st.global.v4.u32 [$0], {$1, $2, $3, $4};", "l,r,r,r,r", [address] + words)
            return context.get_dummy_value()

        return sig, codegen


    @intrinsic
    def store8(typingctx, data, pos, value):
        """``st.global.u8``: one byte (the partial vectors at a row's two ends)."""
        sig = types.void(data, types.int64, types.uint32)

        def codegen(context, builder, signature, args):
            base, position, value = args
            position = context.cast(builder, position, signature.args[1], types.int64)
            value = context.cast(builder, value, signature.args[2], types.uint32)
            address = _address(context, builder, signature.args[0], base, position)
            _emit(builder, "st.global.u8 [$0], $1;", "l,r", [address, value])
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def store_u64(typingctx, counters, index, value):
        """``st.global.u64``: rewinding a ticket dispenser once every block is done."""
        sig = types.void(counters, types.int64, types.uint64)

        def codegen(context, builder, signature, args):
            base, index, value = args
            index = context.cast(builder, index, signature.args[1], types.int64)
            value = context.cast(builder, value, signature.args[2], types.uint64)
            address = _address(context, builder, signature.args[0], base, _scaled(builder, index, 8))
            _emit(builder, "st.global.u64 [$0], $1;", "l,l", [address, value])
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def load_i64(typingctx, table, index):
        """An entry of a table no block writes during the launch: a plain load the compiler may schedule freely.

        (Inline asm with a memory clobber would order it after every earlier
        memory access: each plan-table read would then wait a full round trip
        on thread 0's critical path.)
        """
        sig = types.int64(table, types.int64)

        def codegen(context, builder, signature, args):
            base, index = args
            index = context.cast(builder, index, signature.args[1], types.int64)
            address = _address(context, builder, signature.args[0], base, _scaled(builder, index, 8))
            pointer = builder.inttoptr(address, _i64.as_pointer(1))  # the global address space
            return builder.load(pointer, align=8)

        return sig, codegen


# --- asynchronous global -> shared copies and flag ordering ----------------

if SIMULATED:

    def copy16_async(smem, word, data, pos):
        """Start copying ``data[pos:pos + 16]`` into ``smem[word:word + 4]``."""
        w = load16(data, pos)
        smem[word] = w[0]
        smem[word + 1] = w[1]
        smem[word + 2] = w[2]
        smem[word + 3] = w[3]

    def load16_shared(smem, word):
        """Words ``smem[word:word + 4]`` (``word`` a multiple of 4)."""
        return smem[word], smem[word + 1], smem[word + 2], smem[word + 3]

    def copy16_async_at(smem, address, data, pos):
        """``copy16_async`` to a ``shared_address``."""
        if address % 16:
            raise MisalignedAccess(f"16-byte shared access at byte {address}")
        copy16_async(smem, address >> 2, data, pos)

    def shared_address(smem, word):
        """The address of ``smem[word]`` for ``load16_shared_at``: here its byte offset in ``smem``."""
        return 4 * word

    def load16_shared_at(smem, address):
        """Words at shared ``address`` (16-byte aligned), as ``load16_shared``."""
        if address % 16:
            raise MisalignedAccess(f"16-byte shared access at byte {address}")
        word = address >> 2
        return smem[word], smem[word + 1], smem[word + 2], smem[word + 3]

    def load_shared_at(smem, address):
        """The word at shared ``address`` (4-byte aligned)."""
        return smem[address >> 2]

    def funnel_right(lo, hi, bits):
        """Bits ``[bits, bits + 32)`` of the 64-bit pair ``hi:lo`` (``shf.r.clamp``; ``bits`` < 32)."""
        return ((int(hi) << 32 | int(lo)) >> int(bits)) & 0xFFFFFFFF

    def commit_copies():
        """Close this thread's current group of copies (``cp.async.commit_group``)."""

    def copies_waiter(pending):
        def wait_copies_but(): pass  # noqa: E704 - copies land at once in the simulator
        return wait_copies_but

    def load_acquire(flags, index):
        return flags[index]

    import threading as _threading
    import time as _time

    _barriers: dict = {}
    _barriers_lock = _threading.Lock()  # made here: threads creating it at their first barrier would race

    def named_barrier(barrier_id, count):
        """``bar.sync id, count``: a barrier for the first ``count`` threads of a block only.

        Here a ``threading.Barrier`` per simulated block (the simulator runs
        each thread of a block as a Python thread).
        """
        def bar_sync():
            _barrier_wait(_threading.current_thread(), barrier_id, count)

        return bar_sync

    def _barrier_wait(thread, name, count):
        """Wait at barrier ``name`` of ``thread``'s simulated block (the simulator's BlockThread) until
        ``count`` threads are there."""
        key = (tuple(thread.blockIdx), name, count)
        with _barriers_lock:
            if _barriers.get("launch") is not thread._manager:  # a new launch: forget the old barriers
                _barriers.clear()
                _barriers["launch"] = thread._manager
            barrier = _barriers.get(key)
            if barrier is None:
                barrier = _barriers[key] = _threading.Barrier(count)
        barrier.wait()

    def sync_warp():
        """``bar.warp.sync -1``: a barrier for the 32 threads of the caller's warp (a
        ``threading.Barrier`` per simulated warp, as ``named_barrier``)."""
        thread = _threading.current_thread()
        warp = thread.threadIdx.x // 32
        _barrier_wait(thread, ("warp", warp), min(32, thread._manager._block_dim[0] - 32 * warp))

    _atomic_lock = _threading.Lock()

    def atomic_add_u64(counters, index, value):
        """Add ``value`` to ``counters[index]``; return the old value (threads are Python threads here)."""
        with _atomic_lock:
            old = int(counters[index])
            counters[index] = (old + int(value)) & 0xFFFFFFFFFFFFFFFF  # wraps as the GPU's does
        return old

    def store_relaxed(flags, index, value):
        flags[index] = value


    # mbarriers: [expected arrivals, arrivals left, completed phases] per (barrier array, address).
    _mbarriers: dict = {}
    _mbarriers_lock = _threading.Lock()

    def mbar_address(bars, index):
        """The shared address of mbarrier ``bars[index]`` (an int64 array), for the ``mbar_*`` operations:
        here its byte offset in ``bars``."""
        return 8 * index

    def _mbar(bars, address):
        return _mbarriers[(id(bars), int(address))]

    def mbar_init(bars, address, count):
        """``mbarrier.init``: the barrier completes a phase once ``count`` threads arrive."""
        with _mbarriers_lock:
            _mbarriers[(id(bars), int(address))] = [int(count), int(count), 0]

    def mbar_init_fence():
        """``fence.mbarrier_init``: the initialised barriers are visible to the copy engine."""

    def mbar_arrive(bars, address):
        """``mbarrier.arrive`` (release): one arrival on the barrier's current phase."""
        with _mbarriers_lock:
            state = _mbar(bars, address)
            state[1] -= 1
            if state[1] == 0:
                state[1] = state[0]
                state[2] += 1

    def mbar_expect_tx(bars, address, nbytes):
        """``mbarrier.expect_tx``: the phase also waits for ``nbytes`` of bulk copies (which land at once here)."""

    def mbar_try_wait(bars, address, parity):
        """``mbarrier.try_wait.parity`` (acquire): whether the phase of parity ``parity`` has completed."""
        with _mbarriers_lock:
            done = (_mbar(bars, address)[2] & 1) != int(parity)
        if not done:
            _time.sleep(0)  # let the arriving Python thread run
        return done

    def bulk_load(smem, address, src, pos, nbytes, bars, barrier):
        """``cp.async.bulk`` of ``src[pos:pos + nbytes]`` to shared ``address``, completing on mbarrier
        ``barrier`` (here a copy at once; the addresses and the size must be multiples of 16, as on the GPU)."""
        if address % 16 or nbytes % 16:
            raise MisalignedAccess(f"bulk copy of {nbytes} bytes to shared byte {address}")
        for v in range(int(nbytes) >> 4):
            copy16_async(smem, (address >> 2) + 4 * v, src, pos + 16 * v)

    def proxy_fence_global():
        """``fence.proxy.async.global``: generic-proxy stores ordered before later bulk copies."""

else:

    @intrinsic
    def copy16_async(typingctx, smem, word, data, pos):
        """``cp.async.cg.shared.global``: 16 bytes to shared memory, no registers held.

        The copy engine path frees the registers a load-then-store staging
        would pin, so more blocks fit per SM and more bytes are in flight.
        """
        sig = types.void(smem, types.int64, data, types.int64)

        def codegen(context, builder, signature, args):
            s_array, s_word, g_array, g_pos = args
            s_word = context.cast(builder, s_word, signature.args[1], types.int64)
            g_pos = context.cast(builder, g_pos, signature.args[3], types.int64)
            s_addr = _address(context, builder, signature.args[0], s_array, builder.mul(s_word, ir.Constant(_i64, 4)))
            g_addr = _address(context, builder, signature.args[2], g_array, g_pos)
            _emit(builder, "{ .reg .u64 sa; .reg .u32 sa32; cvta.to.shared.u64 sa, $0; cvt.u32.u64 sa32, sa; "
                           "cp.async.cg.shared.global [sa32], [$1], 16; }", "l,l", [s_addr, g_addr])
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def load16_shared(typingctx, smem, word):
        """``ld.shared.v4.u32``: one 128-bit shared load, whatever the compiler can prove.

        Written out because LLVM vectorises four scalar loads only when it can
        prove 16-byte alignment, which it loses once the buffer offset is a
        run-time value passed between device functions.
        """
        sig = types.UniTuple(types.uint32, 4)(smem, types.int64)

        def codegen(context, builder, signature, args):
            s_array, s_word = args
            s_word = context.cast(builder, s_word, signature.args[1], types.int64)
            s_addr = _address(context, builder, signature.args[0], s_array, builder.mul(s_word, ir.Constant(_i64, 4)))
            return _load_words(context, builder, signature.return_type, s_addr,
                               "{ .reg .u64 sa; .reg .u32 sa32; cvta.to.shared.u64 sa, $4; cvt.u32.u64 sa32, sa; "
                               "ld.shared.v4.u32 {$0, $1, $2, $3}, [sa32]; }")

        return sig, codegen

    @intrinsic
    def shared_address(typingctx, smem, word):
        """The 32-bit ``.shared`` address of ``smem[word]``, for ``load16_shared_at`` and ``load_shared_at``.

        Converted once per run of loads: ``load16_shared`` converts the
        generic address on every call (``cvta`` and the CTA's window base,
        several instructions a vector on the write path).
        """
        sig = types.uint32(smem, types.int64)

        def codegen(context, builder, signature, args):
            s_array, s_word = args
            s_word = context.cast(builder, s_word, signature.args[1], types.int64)
            s_addr = _address(context, builder, signature.args[0], s_array, builder.mul(s_word, ir.Constant(_i64, 4)))
            asm = ir.InlineAsm(ir.FunctionType(_i32, [_i64]),
                               "{ .reg .u64 sa; cvta.to.shared.u64 sa, $1; cvt.u32.u64 $0, sa; }", "=r,l")
            return builder.call(asm, [s_addr])

        return sig, codegen

    @intrinsic
    def copy16_async_at(typingctx, smem, address, data, pos):
        """``cp.async.cg.shared.global`` to a ``shared_address``: ``copy16_async`` without the
        address conversion on every vector."""
        sig = types.void(smem, types.uint32, data, types.int64)

        def codegen(context, builder, signature, args):
            _, s_addr, g_array, g_pos = args
            g_pos = context.cast(builder, g_pos, signature.args[3], types.int64)
            g_addr = _address(context, builder, signature.args[2], g_array, g_pos)
            _emit(builder, "cp.async.cg.shared.global [$0], [$1], 16;", "r,l", [s_addr, g_addr])
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def load16_shared_at(typingctx, smem, address):
        """``ld.shared.v4.u32`` at a ``shared_address`` (16-byte aligned); ``smem`` only names the buffer."""
        sig = types.UniTuple(types.uint32, 4)(smem, types.uint32)

        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(ir.LiteralStructType([_i32] * 4), [_i32])
            asm = ir.InlineAsm(fnty, "ld.shared.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,r,~{memory}",
                               side_effect=True)
            result = builder.call(asm, [args[1]])
            words = [builder.extract_value(result, i) for i in range(4)]
            return context.make_tuple(builder, signature.return_type, words)

        return sig, codegen

    @intrinsic
    def load_shared_at(typingctx, smem, address):
        """``ld.shared.u32`` at a ``shared_address`` (4-byte aligned)."""
        sig = types.uint32(smem, types.uint32)

        def codegen(context, builder, signature, args):
            asm = ir.InlineAsm(ir.FunctionType(_i32, [_i32]), "ld.shared.u32 $0, [$1];", "=r,r,~{memory}",
                               side_effect=True)
            return builder.call(asm, [args[1]])

        return sig, codegen

    @intrinsic
    def funnel_right(typingctx, lo, hi, bits):
        """``shf.r.clamp.b32``: bits ``[bits, bits + 32)`` of the pair ``hi:lo``, one instruction."""
        sig = types.uint32(types.uint32, types.uint32, types.uint32)

        def codegen(context, builder, signature, args):
            words = [context.cast(builder, v, t, types.uint32) for v, t in zip(args, signature.args)]
            asm = ir.InlineAsm(ir.FunctionType(_i32, [_i32, _i32, _i32]), "shf.r.clamp.b32 $0, $1, $2, $3;",
                               "=r,r,r,r")
            return builder.call(asm, words)

        return sig, codegen

    # ``cp.async.commit_group``: the copies issued since the last commit form one group.
    commit_copies = _instruction("cp.async.commit_group;")

    def copies_waiter(pending):
        """An intrinsic waiting until at most ``pending`` of this thread's groups are in flight.

        ``cp.async.wait_group`` takes its count as an immediate, so each ring
        depth gets its own intrinsic.
        """
        return _instruction(f"cp.async.wait_group {int(pending)};")

    def named_barrier(barrier_id, count):
        """``bar.sync id, count``: a barrier for the first ``count`` threads of a block only
        (the data warps; the control warp never reaches it)."""
        return _instruction(f"bar.sync {int(barrier_id)}, {int(count)};")

    # A barrier for the caller's warp (all 32 threads) that also orders their shared-memory accesses:
    # what lets a warp write what its other threads staged.
    sync_warp = _instruction("bar.warp.sync -1;")

    @intrinsic
    def load_acquire(typingctx, flags, index):
        """``ld.acquire.gpu``: a poll the compiler cannot hoist, ordering later accesses after it."""
        sig = types.uint32(flags, types.int64)

        def codegen(context, builder, signature, args):
            array, index = args
            index = context.cast(builder, index, signature.args[1], types.int64)
            address = _address(context, builder, signature.args[0], array, builder.mul(index, ir.Constant(_i64, 4)))
            asm = ir.InlineAsm(ir.FunctionType(_i32, [_i64]), "ld.acquire.gpu.global.u32 $0, [$1];",
                               "=r,l,~{memory}", side_effect=True)
            return builder.call(asm, [address])

        return sig, codegen

    @intrinsic
    def store_relaxed(typingctx, flags, index, value):
        """``st.relaxed.gpu``: a strong store with no fence in front of it.

        Publishes "read done" for a tile whose copies have already landed in
        shared memory (``cp.async.wait_all`` returned): a load that has
        returned cannot be changed by a later store, so no fence is needed,
        and none waits for this thread's earlier stores to drain.
        """
        sig = types.void(flags, types.int64, types.uint32)

        def codegen(context, builder, signature, args):
            array, index, value = args
            index = context.cast(builder, index, signature.args[1], types.int64)
            value = context.cast(builder, value, signature.args[2], types.uint32)
            address = _address(context, builder, signature.args[0], array, builder.mul(index, ir.Constant(_i64, 4)))
            _emit(builder, "st.relaxed.gpu.global.u32 [$0], $1;", "l,r", [address, value])
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def atomic_add_u64(typingctx, counters, index, value):
        """``atom.global.add.u64``: the ticket dispensers (relaxed; nothing is ordered by them)."""
        sig = types.uint64(counters, types.int64, types.uint64)

        def codegen(context, builder, signature, args):
            base, index, value = args
            index = context.cast(builder, index, signature.args[1], types.int64)
            value = context.cast(builder, value, signature.args[2], types.uint64)
            address = _address(context, builder, signature.args[0], base, _scaled(builder, index, 8))
            asm = ir.InlineAsm(ir.FunctionType(_i64, [_i64, _i64]), "atom.global.add.u64 $0, [$1], $2;",
                               "=l,l,l,~{memory}", side_effect=True)
            return builder.call(asm, [address, value])

        return sig, codegen


    def _shared32(context, builder, array_type, array, byte_offset):
        """The 32-bit ``.shared`` address of byte ``byte_offset`` of a shared array."""
        generic = _address(context, builder, array_type, array, byte_offset)
        asm = ir.InlineAsm(ir.FunctionType(_i32, [_i64]),
                           "{ .reg .u64 sa; cvta.to.shared.u64 sa, $1; cvt.u32.u64 $0, sa; }", "=r,l")
        return builder.call(asm, [generic])

    @intrinsic
    def mbar_address(typingctx, bars, index):
        """The 32-bit shared address of mbarrier ``bars[index]`` (an int64 array), for the ``mbar_*``
        operations: converted once, so a loop holds one 32-bit register, not a generic pointer."""
        sig = types.uint32(bars, types.int64)

        def codegen(context, builder, signature, args):
            index = context.cast(builder, args[1], signature.args[1], types.int64)
            return _shared32(context, builder, signature.args[0], args[0], _scaled(builder, index, 8))

        return sig, codegen

    @intrinsic
    def mbar_init(typingctx, bars, address, count):
        """``mbarrier.init``: the barrier at ``address`` completes a phase once ``count`` threads arrive."""
        sig = types.void(bars, types.uint32, types.int32)

        def codegen(context, builder, signature, args):
            count = context.cast(builder, args[2], signature.args[2], types.int32)
            _emit(builder, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r", [args[1], count])
            return context.get_dummy_value()

        return sig, codegen

    # ``fence.mbarrier_init``: the initialised barriers are visible to the copy engine.
    mbar_init_fence = _instruction("fence.mbarrier_init.release.cluster;")

    @intrinsic
    def mbar_arrive(typingctx, bars, address):
        """``mbarrier.arrive`` (release, CTA scope): one arrival on the barrier's current phase."""
        sig = types.void(bars, types.uint32)

        def codegen(context, builder, signature, args):
            _emit(builder, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", [args[1]])
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def mbar_expect_tx(typingctx, bars, address, nbytes):
        """``mbarrier.expect_tx``: the current phase also waits for ``nbytes`` of bulk copies."""
        sig = types.void(bars, types.uint32, types.uint32)

        def codegen(context, builder, signature, args):
            nbytes = context.cast(builder, args[2], signature.args[2], types.uint32)
            _emit(builder, "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;", "r,r", [args[1], nbytes])
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def mbar_try_wait(typingctx, bars, address, parity):
        """``mbarrier.try_wait.parity`` (acquire, CTA scope): 1 once the phase of parity ``parity`` has
        completed (the hardware suspends the thread a while before answering 0)."""
        sig = types.uint32(bars, types.uint32, types.uint32)

        def codegen(context, builder, signature, args):
            parity = context.cast(builder, args[2], signature.args[2], types.uint32)
            asm = ir.InlineAsm(ir.FunctionType(_i32, [_i32, _i32]),
                               "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
                               "selp.u32 $0, 1, 0, p; }", "=r,r,r,~{memory}", side_effect=True)
            return builder.call(asm, [args[1], parity])

        return sig, codegen

    @intrinsic
    def bulk_load(typingctx, smem, address, src, pos, nbytes, bars, barrier):
        """``cp.async.bulk`` (the copy engine, issued by one thread) of ``nbytes`` from ``src + pos`` to
        shared ``address``, completing on the mbarrier at ``barrier``; addresses and size multiples of 16."""
        sig = types.void(smem, types.uint32, src, types.int64, types.uint32, bars, types.uint32)

        def codegen(context, builder, signature, args):
            _, s_addr, g_base, g_pos, nbytes, _, barrier = args
            g_pos = context.cast(builder, g_pos, signature.args[3], types.int64)
            g_addr = _address(context, builder, signature.args[2], g_base, g_pos)
            nbytes = context.cast(builder, nbytes, signature.args[4], types.uint32)
            _emit(builder, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
                  "r,l,r,r", [s_addr, g_addr, nbytes, barrier])
            return context.get_dummy_value()

        return sig, codegen

    # ``fence.proxy.async.global``: this thread's generic-proxy global accesses ordered with later
    # bulk copies (the copy engine is another proxy).
    proxy_fence_global = _instruction("fence.proxy.async.global;")
