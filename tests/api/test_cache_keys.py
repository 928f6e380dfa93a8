"""Issue #35: every cache, each component of its key changed one at a time between otherwise identical calls.

The rest of the suite checks each call on a fresh layout, so a cache key that
forgets a component (the strides, the writeable flag, the shifts' dtype)
passes it while turning an ordinary second call into silent corruption. Here
every call of a sequence must give what the same call gives on empty caches:

* the CPU plan caches (``_api._fast_plans`` for int arguments, the
  ``_api._cached_plan`` LRU for the rest) and the host quick path
  (``_api._host_calls``, issue #36: a repeated call with int arguments runs
  its cached executable): rolls, rotates and fftshifts of real numpy arrays,
  compared byte for byte with numpy (the whole buffer, so bytes outside a
  strided view count too) and step for step with the plan a fresh call runs.
  Each CPU group runs three ways (``cpu_run``): each call once; twice (the
  second from the quick path), steps recorded; twice with ``cpu.runners.run_rows``
  left alone, so the quick path's own kernel calls run (bytes only);
* the GPU quick paths (``_api._quick_calls``/``_quick_layouts`` for ``roll``
  and ``fftshift``, ``rows._quick_lanes`` for ``roll_rows`` with device
  shifts), with the device stubbed: no GPU is needed and none is used. What a
  call hands the launcher (the array's description, the plan, the stream;
  for ``roll_rows`` the step, the shifts' address and stride) or the error it
  raises must be what a fresh call gives.

Each group varies one key component; its calls run in order and in reverse
(each call once after all the others of its group) on shared caches.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numba
import numpy as np
import pytest

import rotate
from rotate import _api, _backends
from rotate._core import arrays as _arrays
from rotate._backends.cpu import runners
from rotate import rows as _rows_api
from rotate._backends.cuda import tuning as cuda_tuning

# --- shared machinery ----------------------------------------------------------------------


def signature(value):
    """A hashable, ``==``-comparable form of plans, steps, infos and their details (arrays as bytes)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.dtype):
        return ("dtype", value.str, value.descr if value.names else None)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,) + tuple(signature(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, dict):
        return tuple(sorted((k, signature(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(signature(v) for v in value)
    return value


@pytest.fixture
def caches(monkeypatch):
    """Empty plan caches for the test (the module's own restored afterwards); ``caches()`` empties them again."""
    monkeypatch.setattr(_api, "_fast_plans", {})
    monkeypatch.setattr(_api, "_host_calls", {})
    monkeypatch.setattr(_api, "_quick_calls", {})
    monkeypatch.setattr(_api, "_quick_layouts", {})
    monkeypatch.setattr(_rows_api, "_quick_lanes", {})

    def clear():
        _api._fast_plans.clear()
        _api._host_calls.clear()
        _api._quick_calls.clear()
        _api._quick_layouts.clear()
        _rows_api._quick_lanes.clear()
        _api._cached_plan.cache_clear()

    clear()
    yield clear
    _api._cached_plan.cache_clear()


def check_sequence(clear, calls, run):
    """Each call on empty caches first; then all of them in order, and in reverse, on shared caches: the same."""
    fresh = []
    for call in calls:
        clear()
        fresh.append(run(call))
    for order in (list(range(len(calls))), list(range(len(calls)))[::-1]):
        clear()
        for i in order:
            got = run(calls[i])
            assert got == fresh[i], (f"call {i} ({calls[i][0]}) after calls {order[:order.index(i)]} differs from "
                                     f"the same call on empty caches:\n  got   {str(got)[:600]}\n  fresh "
                                     f"{str(fresh[i])[:600]}")
    return fresh


# --- the CPU plan caches: real arrays, numpy byte for byte --------------------------------------


def _raw(nbytes, seed):
    return np.random.default_rng(seed).integers(1, 256, nbytes, dtype=np.uint8)


def layout(name, shape=(6, 10), dtype="float32"):
    """``(base, view_of)``: a fresh buffer and how to cut the view of ``shape`` from it."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    if name == "C":
        return (size,), lambda b: b.reshape(shape)
    if name == "F":
        return (size,), lambda b: b.reshape(shape[::-1]).T
    if name == "strided":  # every other element of the last axis
        return (2 * size,), lambda b: b.reshape(shape[:-1] + (2 * shape[-1],))[..., ::2]
    if name == "reversed":  # the first axis reversed (a negative stride)
        return (size,), lambda b: b.reshape(shape)[::-1]
    if name == "reversed-last":
        return (size,), lambda b: b.reshape(shape)[..., ::-1]
    if name == "transposed":  # a column block of a wider array, transposed: neither C nor F
        return (size * 2,), lambda b: b.reshape(shape[::-1][0], 2 * shape[0])[:, :shape[0]].T
    raise KeyError(name)


def cpu_call(label, make, fn, *args, setting=None, **kwargs):
    """One CPU call: ``make`` gives (base length, dtype, view_of); ``fn`` is rotate's function name."""
    return (label, make, fn, args, kwargs, setting)


def _numpy_result(fn, view, args, kwargs):
    if fn == "roll":
        shift, axis = args[0], (args[1] if len(args) > 1 else kwargs.get("axis"))
        return np.roll(view, shift, axis)
    if fn == "rotate":
        return np.roll(view, -int(args[0]), None)
    if fn == "fftshift":
        return np.fft.fftshift(view, args[0] if args else None)
    raise KeyError(fn)


def _fill_expected(view, fn, args, kwargs):
    """numpy's result of the call, written into ``view`` (made writeable: the call's view may be read-only)."""
    view.flags.writeable = True
    view[...] = _numpy_result(fn, view.copy(), args, kwargs)


def run_cpu(call, seed=1, record=True):
    """Run a CPU call on random bytes: (the whole buffer's bytes or the error, the steps that ran).

    ``record=False`` leaves ``cpu.runners.run_rows`` alone (the host quick path then calls its kernels directly):
    the steps are not seen, the bytes are still checked.
    """
    if not record:
        return run_cpu_unrecorded(call, seed)
    label, (base_len, dtype, view_of), fn, args, kwargs, setting = call
    raw = _raw(base_len * np.dtype(dtype).itemsize, seed)
    buf = raw.copy().view(dtype)
    expected = raw.copy().view(dtype)
    _fill_expected(view_of(expected), fn, args, kwargs)
    executed = []
    saved = runners.run_rows, runners.run_strided

    def recording(run):
        def wrapper(target, step):
            executed.append(signature(step))
            return run(target, step)
        return wrapper

    runners.run_rows, runners.run_strided = recording(saved[0]), recording(saved[1])
    try:
        with (setting() if setting else contextlib.nullcontext()):
            getattr(rotate, fn)(view_of(buf), *args, **kwargs)
    except (ValueError, TypeError) as exc:
        assert buf.tobytes() == raw.tobytes(), f"{label}: a refused call moved bytes"
        return ("raised", type(exc).__name__, str(exc)[:60])
    finally:
        runners.run_rows, runners.run_strided = saved
    assert buf.tobytes() == expected.tobytes(), (
        f"{label}: {fn}{args} differs from numpy at bytes "
        f"{np.flatnonzero(buf.view(np.uint8) != expected.view(np.uint8))[:8]}")
    return ("ran", tuple(executed))


def run_cpu_unrecorded(call, seed=1):
    label, (base_len, dtype, view_of), fn, args, kwargs, setting = call
    raw = _raw(base_len * np.dtype(dtype).itemsize, seed)
    buf = raw.copy().view(dtype)
    expected = raw.copy().view(dtype)
    _fill_expected(view_of(expected), fn, args, kwargs)
    try:
        with (setting() if setting else contextlib.nullcontext()):
            getattr(rotate, fn)(view_of(buf), *args, **kwargs)
    except (ValueError, TypeError) as exc:
        assert buf.tobytes() == raw.tobytes(), f"{label}: a refused call moved bytes"
        return ("raised", type(exc).__name__, str(exc)[:60])
    assert buf.tobytes() == expected.tobytes(), (
        f"{label}: {fn}{args} differs from numpy at bytes "
        f"{np.flatnonzero(buf.view(np.uint8) != expected.view(np.uint8))[:8]}")
    return ("ran",)


@pytest.fixture(params=["once", "twice", "twice-direct"])
def cpu_run(request):
    """How a CPU group runs each call: once (the full path, or another call's cached plan); twice, steps
    recorded (the second call from the host quick path, through the recorder); twice with ``run_rows``
    left alone (the quick path's direct kernel calls)."""
    if request.param == "once":
        return run_cpu
    record = request.param == "twice"
    return lambda call: (run_cpu(call, record=record), run_cpu(call, seed=2, record=record))


def _made(name, shape=(6, 10), dtype="float32"):
    base_shape, view_of = layout(name, shape, dtype)
    return (base_shape[0], dtype, view_of)


LAYOUTS = ["C", "F", "strided", "reversed", "reversed-last", "transposed"]


@pytest.mark.parametrize("spelling", ["ints", "lists"])  # ints: _fast_plans; lists: the _cached_plan LRU only
@pytest.mark.parametrize("axis", [1, 0, None])
def test_cpu_roll_strides_vary(caches, cpu_run, spelling, axis):
    """Same shape, dtype, shift and axis; only the strides differ (C, F, strided, reversed, transposed)."""
    shift = 3
    if spelling == "lists":
        shift, axis = [shift], (None if axis is None else [axis])
    calls = [cpu_call(name, _made(name), "roll", shift, axis) for name in LAYOUTS]
    fresh = check_sequence(caches, calls, cpu_run)
    assert sum(str(outcome).startswith(("('ran'", "(('ran'")) for outcome in fresh) >= 2


@pytest.mark.parametrize("spelling", ["ints", "lists"])
def test_cpu_roll_1d_strides_vary(caches, cpu_run, spelling):
    """1-D views of 60 elements, axis None: contiguous, reversed, every second and every third from the end."""
    shift = 7 if spelling == "ints" else [7]
    views = {"contiguous": (60, lambda b: b), "reversed": (60, lambda b: b[::-1]), "step-2": (120, lambda b: b[::2]),
             "step-minus-3": (180, lambda b: b[::-3])}
    calls = [cpu_call(name, (n, "int16", cut), "roll", shift, None) for name, (n, cut) in views.items()]
    check_sequence(caches, calls, cpu_run)


@pytest.mark.parametrize("spelling", ["ints", "lists"])
def test_cpu_roll_dtype_varies(caches, cpu_run, spelling):
    """Same shape (12,) and strides (8,), same shift: int64 back to back, int32/uint16/uint8 strided views."""
    shift = 5 if spelling == "ints" else [5]
    calls = [cpu_call(dtype, (12 * 8 // np.dtype(dtype).itemsize, dtype,
                              lambda b, step=8 // np.dtype(dtype).itemsize: b[::step]), "roll", shift, 0)
             for dtype in ("int64", "int32", "uint16", "uint8")]
    check_sequence(caches, calls, cpu_run)
    # 2-D: strides (80, 8) as float64 C-contiguous and as every other float32.
    calls = [cpu_call("float64", (60, "float64", lambda b: b.reshape(6, 10)), "roll", shift, 1),
             cpu_call("float32", (120, "float32", lambda b: b.reshape(6, 20)[:, ::2]), "roll", shift, 1)]
    check_sequence(caches, calls, cpu_run)


@pytest.mark.parametrize("spelling", ["ints", "lists"])
def test_cpu_roll_shift_and_axis_vary(caches, cpu_run, spelling):
    wrap = (lambda v: v) if spelling == "ints" else (lambda v: v if v is None else list(np.atleast_1d(v)))
    c = _made("C", (6, 6))
    calls = [cpu_call(f"shift {s}", c, "roll", wrap(s), wrap(1)) for s in (1, 3, -3, 9, 0)]
    check_sequence(caches, calls, cpu_run)
    calls = [cpu_call(f"axis {a}", c, "roll", wrap(2), wrap(a)) for a in (0, 1, -1, None)]
    calls.append(cpu_call("axes (0, 1)", c, "roll", (2, 2) if spelling == "ints" else [2, 2], (0, 1)))
    check_sequence(caches, calls, cpu_run)


def test_cpu_rotate_middle_varies(caches, cpu_run):
    """rotate(a, m) is roll(a, 0) with middle=m to the cache: middle is part of the key."""
    line = (97, "uint8", lambda b: b)
    calls = [cpu_call("rotate 3", line, "rotate", 3), cpu_call("roll 0", line, "roll", 0),
             cpu_call("rotate 0", line, "rotate", 0), cpu_call("rotate 4", line, "rotate", 4),
             cpu_call("roll -3", line, "roll", -3)]
    check_sequence(caches, calls, cpu_run)


def test_cpu_roll_scratch_bound_and_settings_vary(caches, cpu_run, monkeypatch):
    line = (1000, "uint8", lambda b: b)
    calls = [cpu_call(f"max_scratch_bytes={m}", line, "roll", 377, max_scratch_bytes=m) for m in (None, 0, 64, 10**6)]
    check_sequence(caches, calls, cpu_run)

    @contextlib.contextmanager
    def threads(n):
        before = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            yield
        finally:
            numba.set_num_threads(before)

    def budget(**values):
        from rotate._backends.cpu import tuning as cpu_tuning

        return cpu_tuning.override(**values)

    big = (1 << 16, "uint8", lambda b: b.reshape(64, 1024))
    calls = [cpu_call("default", big, "roll", 300, 1), cpu_call("one thread", big, "roll", 300, 1,
                                                                 setting=lambda: threads(1)),
             cpu_call("small scratch", big, "roll", 300, 1, setting=lambda: budget(scratch_bytes=256, tile_bytes=64))]
    fresh = check_sequence(caches, calls, cpu_run)
    if fresh[0] != (("ran",), ("ran",)):  # steps recorded: the settings change the plan
        assert len({outcome for outcome in fresh}) >= 2


@pytest.mark.parametrize("axes", [None, 0, 1, (0, 1)])
def test_cpu_fftshift_layouts_vary(caches, cpu_run, axes):
    calls = [cpu_call(name, _made(name, (6, 9), "complex64"), "fftshift", axes) for name in LAYOUTS]
    check_sequence(caches, calls, cpu_run)


def _read_only(view):
    view.flags.writeable = False
    return view


def test_cpu_roll_shape_and_writeable_vary(caches, cpu_run):
    """Same strides, other shapes (1-D lengths, 2-D row counts); a read-only view of a layout a writeable
    call cached (the quick path checks the flag on every call: it must raise and move nothing)."""
    calls = [cpu_call(f"({n},)", (16, "float64", lambda b, n=n: b[:n]), "roll", 3, None) for n in (12, 13, 4, 16)]
    calls += [cpu_call(f"({r}, 4)", (16, "float64", lambda b, r=r: b.reshape(4, 4)[:r]), "roll", 3, 1)
              for r in (3, 4)]
    calls += [cpu_call("read-only (12,)", (16, "float64", lambda b: _read_only(b[:12])), "roll", 3, None),
              cpu_call("read-only (4, 4)", (16, "float64", lambda b: _read_only(b.reshape(4, 4))), "roll", 3, 1)]
    fresh = check_sequence(caches, calls, cpu_run)
    assert str(fresh[-1]).count("raised") >= 1


def test_cpu_quick_key_separates_every_component(caches):
    """One host quick-path entry per distinct call: every component of the key (shape, strides, dtype,
    shift, axis, middle, scratch bound) makes its own entry, and a repeated call makes none."""
    base = np.zeros(64, np.float64)
    variants = [
        ("roll", base[:12], 3, None), ("roll", base[:13], 3, None),            # shape
        ("roll", base[:24:2], 3, None),                                        # strides
        ("roll", base.view(np.int64)[:12], 3, None),                           # dtype
        ("roll", base[:12], 4, None), ("roll", base[:12], -3, None),           # shift
        ("roll", base[:12].reshape(3, 4), 3, 0), ("roll", base[:12].reshape(3, 4), 3, 1),  # axis
        ("roll", base[:12].reshape(3, 4), 3, None),
        ("roll", base[:12].reshape(3, 4), (1, 1), (0, 1)),                    # tuples
        ("rotate", base[:12], 3, None), ("rotate", base[:12], 4, None),        # middle
    ]
    for fn, a, arg, axis in variants:
        if fn == "roll":
            rotate.roll(a, arg, axis)
        else:
            rotate.rotate(a, arg)
    rotate.roll(base[:12], 3, max_scratch_bytes=0)                            # the scratch bound
    assert len(_api._host_calls) == len(variants) + 1
    for fn, a, arg, axis in variants:  # repeats: no new entry
        if fn == "roll":
            rotate.roll(a, arg, axis)
        else:
            rotate.rotate(a, arg)
    assert len(_api._host_calls) == len(variants) + 1


# --- the GPU quick paths, device stubbed ------------------------------------------------------------


class FakeDeviceArray:
    """A CUDA Array Interface exporter whose memory is never touched (the launcher is stubbed)."""

    def __init__(self, shape, typestr="<f4", strides=None, pointer=1 << 32, readonly=False, descr=None,
                 stream=None):
        self.shape = tuple(shape)
        self.typestr, self.strides, self.pointer = typestr, strides, pointer
        self.readonly, self.descr, self.cai_stream = readonly, descr, stream

    @property
    def __cuda_array_interface__(self):
        cai = {"shape": self.shape, "strides": self.strides, "data": (self.pointer, self.readonly),
               "typestr": self.typestr, "stream": self.cai_stream, "version": 3}
        if self.descr is not None:
            cai["descr"] = self.descr
        return cai

    def __repr__(self):
        return (f"FakeDeviceArray({self.shape}, {self.typestr!r}, strides={self.strides}, pointer={self.pointer:#x}, "
                f"readonly={self.readonly}, descr={self.descr}, stream={self.cai_stream})")


@pytest.fixture
def device(monkeypatch, caches):
    """The CUDA backend with the device stubbed (an H200's shape) and its launcher recording instead of running."""
    from rotate._backends.cuda.kernels import memops
    from rotate._backends.cuda import device as gpu_device, registry as gpu_registry, runtime as gpu_runtime

    if memops.SIMULATED:
        pytest.skip("the simulator's arrays take the full path")
    monkeypatch.setattr(gpu_device, "device_shape", lambda device_id=0: (132, 228 * 1024))
    monkeypatch.setattr(gpu_device, "_device_id", lambda: 0)
    monkeypatch.setattr(gpu_device, "_cooperative_config", lambda: False)
    monkeypatch.setattr(_arrays, "_device_usable", True)
    monkeypatch.setattr(gpu_runtime, "pointer_device", lambda pointer: 0)
    launched = []
    cuda = _backends.backend_named("cuda")
    monkeypatch.setattr(cuda, "execute", lambda target, info, plan, stream: launched.append(
        ("execute", signature(info), signature(plan), stream)))

    def run_lanes(target, info, step, handle, host_shifts, device_shifts, stride):
        if device_shifts is not None and not isinstance(device_shifts, int):  # the full path passes the array
            device_shifts = _arrays.describe_device(device_shifts).pointer
        launched.append(("run_lanes", signature(info), signature(step), handle, signature(host_shifts),
                         device_shifts, stride))

    monkeypatch.setattr(gpu_registry, "run_lanes", run_lanes)
    return types_namespace(registry=gpu_registry, launched=launched, clear=caches)


def types_namespace(**kw):
    import types

    return types.SimpleNamespace(**kw)


def device_runner(launched):
    def run(call):
        label, thunk = call
        launched.clear()
        try:
            thunk()
        except (ValueError, TypeError) as exc:
            assert not launched, f"{label}: a refused call launched"
            return ("raised", type(exc).__name__, str(exc)[:60])
        return ("ran", tuple(launched))
    return run


P = 1 << 32  # a 256-byte aligned device address


def roll_call(label, a, *args, **kwargs):
    return (label, lambda: rotate.roll(a, *args, **kwargs))


def test_gpu_roll_quick_path_pointer_varies(device):
    """Same layout and arguments at other addresses: the same 16-byte offset, and offsets 4 and 8 (the plan's
    tile grid follows the offset: a plan for offset 0 must never run at offset 8)."""
    n = 1 << 16
    calls = [roll_call(f"pointer +{d:#x}", FakeDeviceArray((n,), "|u1", pointer=P + d), 12345)
             for d in (0, 16, 8, 4, 1 << 20, (1 << 20) + 8)]
    fresh = check_sequence(device.clear, calls, device_runner(device.launched))
    assert len({signature(o[1][0][2]) for o in fresh}) >= 3  # plans for offsets 0, 8 and 4 differ


def test_gpu_roll_quick_path_layout_varies(device):
    """Same address and arguments; the typestr, shape, strides, writeable flag, descr or stream differ."""
    n = 4096
    variants = {
        "base": FakeDeviceArray((n,)),
        "int32": FakeDeviceArray((n,), "<i4"),
        "float64": FakeDeviceArray((n // 2,), "<f8"),
        "uint8": FakeDeviceArray((4 * n,), "|u1"),
        "shape 2048": FakeDeviceArray((n // 2,)),
        "shape (4096, 1)": FakeDeviceArray((n, 1)),
        "explicit strides": FakeDeviceArray((n,), strides=(4,)),
        "strided": FakeDeviceArray((n,), strides=(8,)),
        "read-only": FakeDeviceArray((n,), readonly=True),
        "stream 7": FakeDeviceArray((n,), stream=7),
        "stream 9": FakeDeviceArray((n,), stream=9),
    }
    calls = [roll_call(name, a, 1000) for name, a in variants.items()]
    fresh = check_sequence(device.clear, calls, device_runner(device.launched))
    assert [o[0] for o in fresh].count("raised") == 2  # the strided and the read-only array
    # A struct of two uint32 (typestr |V8): the same layout but with an object field must be refused.
    struct = [("a", "<u4"), ("b", "<u4")]
    calls = [roll_call("struct", FakeDeviceArray((n,), "|V8", descr=struct), 1000),
             roll_call("struct with an object field", FakeDeviceArray((n,), "|V8", descr=[("a", "<u4"), ("b", "|O")]),
                       1000),
             roll_call("struct, read-only", FakeDeviceArray((n,), "|V8", descr=struct, readonly=True), 1000)]
    fresh = check_sequence(device.clear, calls, device_runner(device.launched))
    assert [o[0] for o in fresh] == ["ran", "raised", "raised"]


def test_gpu_roll_quick_path_2d_layout_varies(device):
    """(64, 64) float32 rolled along axis 1: C-contiguous, F-contiguous (the same shape), read-only."""
    calls = [roll_call(name, FakeDeviceArray((64, 64), strides=strides, readonly=ro), 5, 1)
             for name, strides, ro in (("C", None, False), ("F", (4, 256), False), ("C explicit", (256, 4), False),
                                       ("C read-only", None, True), ("F read-only", (4, 256), True))]
    fresh = check_sequence(device.clear, calls, device_runner(device.launched))
    assert fresh[0] != fresh[1]


def test_gpu_roll_quick_path_arguments_vary(device):
    a = FakeDeviceArray((64, 64))
    calls = [roll_call(f"shift {s}", a, s, 1) for s in (3, 5, -3, 67, (3,))]
    calls += [roll_call(f"axis {ax}", a, 3, ax) for ax in (0, None, (0,), (0, 1))]
    calls += [roll_call(f"max_scratch_bytes={m}", a, 3, 1, max_scratch_bytes=m) for m in (0, 1 << 10)]
    calls += [("rotate 3", lambda: rotate.rotate(a, 3)), ("roll 0", lambda: rotate.roll(a, 0)),
              ("rotate 5", lambda: rotate.rotate(a, 5)), ("stream 5", lambda: rotate.roll(a, 3, 1, stream=5))]
    check_sequence(device.clear, calls, device_runner(device.launched))


def test_gpu_roll_quick_path_settings_vary(device):
    a = FakeDeviceArray((1 << 16,), "|u1")

    def under(**values):
        def thunk():
            with cuda_tuning.override(**values):
                rotate.roll(a, 12345)
        return thunk

    calls = [("defaults", lambda: rotate.roll(a, 12345)), ("tile 4096", under(grid=8, tile_bytes=4096)),
             ("tile 8192", under(grid=8, tile_bytes=8192))]
    fresh = check_sequence(device.clear, calls, device_runner(device.launched))
    assert len(set(fresh)) == 3


@pytest.mark.parametrize("axes", [None, 0, 1, (0, 1)])
def test_gpu_fftshift_quick_path_layout_varies(device, axes):
    """fftshift takes roll's quick path with tuple shifts: C, F, read-only and other offsets, one axes at a time."""
    calls = [(name, lambda a=a: rotate.fftshift(a, axes)) for name, a in (
        ("C", FakeDeviceArray((64, 96))), ("F", FakeDeviceArray((64, 96), strides=(4, 256))),
        ("C read-only", FakeDeviceArray((64, 96), readonly=True)),
        ("C +8", FakeDeviceArray((64, 96), pointer=P + 8)), ("C +4", FakeDeviceArray((64, 96), pointer=P + 4)),
        ("C int16", FakeDeviceArray((64, 96), "<i2")), ("shape (96, 64)", FakeDeviceArray((96, 64))))]
    check_sequence(device.clear, calls, device_runner(device.launched))


S = 1 << 36  # where the device shifts live


def rows_call(label, a, shifts, axis=-1, **kwargs):
    return (label, lambda: rotate.roll_rows(a, shifts, axis, **kwargs))


def test_gpu_roll_rows_quick_path_varies_each_key_component(device):
    """roll_rows with device shifts: the array's layout and address, the shifts' layout and address, the axis,
    the scratch bound, the settings and the stream, each changed alone."""
    a = FakeDeviceArray((8, 64))
    shifts = FakeDeviceArray((8,), "<i8", pointer=S)
    calls = [
        rows_call("base", a, shifts),
        # the array
        rows_call("a read-only", FakeDeviceArray((8, 64), readonly=True), shifts),
        rows_call("a F-ordered", FakeDeviceArray((8, 64), strides=(4, 32)), shifts),
        rows_call("a int16", FakeDeviceArray((8, 64), "<i2"), shifts),
        rows_call("a +8", FakeDeviceArray((8, 64), pointer=P + 8), shifts),
        rows_call("a stream 7", FakeDeviceArray((8, 64), stream=7), shifts),
        # the shifts
        rows_call("shifts big-endian", a, FakeDeviceArray((8,), ">i8", pointer=S)),
        rows_call("shifts int32", a, FakeDeviceArray((4, 2), "<i4", pointer=S)),
        rows_call("one shift", a, FakeDeviceArray((1,), "<i8", pointer=S)),
        rows_call("shifts strided", a, FakeDeviceArray((8,), "<i8", strides=(16,), pointer=S)),
        rows_call("shifts (2, 4)", a, FakeDeviceArray((2, 4), "<i8", pointer=S)),
        rows_call("shifts read-only", a, FakeDeviceArray((8,), "<i8", pointer=S, readonly=True)),
        rows_call("shifts elsewhere", a, FakeDeviceArray((8,), "<i8", pointer=S + 64)),
        # the arguments
        rows_call("axis 1", a, shifts, 1),
        rows_call("axis 0", a, shifts, 0),
        rows_call("max_scratch_bytes=0", a, shifts, max_scratch_bytes=0),
        rows_call("stream 5", a, shifts, stream=5),
    ]
    fresh = check_sequence(device.clear, calls, device_runner(device.launched))
    raised = [call[0] for call, outcome in zip(calls, fresh) if outcome[0] == "raised"]
    # An F-ordered array rolled along its last axis is columns (column-panels): it runs, like a C one.
    assert raised == ["a read-only", "shifts big-endian", "shifts int32", "shifts strided",
                      "shifts (2, 4)", "axis 0"], raised


def test_gpu_roll_rows_quick_path_settings_vary(device):
    a = FakeDeviceArray((8, 64))
    shifts = FakeDeviceArray((8,), "<i8", pointer=S)

    def under(**values):
        def thunk():
            with cuda_tuning.override(**values):
                rotate.roll_rows(a, shifts)
        return thunk

    calls = [("defaults", lambda: rotate.roll_rows(a, shifts)), ("warps", under(lane_warps=True)),
             ("no warps", under(lane_warps=False))]
    fresh = check_sequence(device.clear, calls, device_runner(device.launched))
    assert len(set(fresh)) >= 2, fresh


def test_gpu_roll_rows_host_shifts_never_take_the_quick_path(device):
    """Host shifts are read on every call: the same array with other host shift values launches other shifts."""
    a = FakeDeviceArray((8, 64))
    calls = [rows_call(f"shifts {s}", a, np.full(8, s, np.int64)) for s in (1, 2)]
    calls.append(rows_call("shifts >i8", a, np.arange(8, dtype=">i8")))
    calls.append(rows_call("shifts <i8", a, np.arange(8, dtype="<i8")))
    fresh = check_sequence(device.clear, calls, device_runner(device.launched))
    assert fresh[2] == fresh[3]


def test_gpu_lane_chains_follow_the_planners_tuning(device, tune):
    """lane-chains plan each run's chain step at plan time. Issue #35's tests found the launcher planning
    them itself from a cache keyed without the planner's module constants (MIN_SCRATCH, ...), so a patched
    constant kept a stale step; now a changed tuning field plans again, like every other GPU plan."""
    tune.cuda(min_chain_lane_bytes=0)  # lane-chains for a 1 MiB lane
    a = FakeDeviceArray((1, 1 << 20), "|u1")
    shift = (1 << 19) - 16
    before = rotate.plan_roll_rows(a, [shift])
    assert before.algorithm == "lane-chains"
    (first, end, sub), = before.steps[0].details["runs"]
    assert (first, end) == (0, 1) and sub.algorithm == "chain"  # only the 16 MiB floor lets it buffer
    tune.cuda(min_scratch=0)
    after = rotate.plan_roll_rows(a, [shift])
    fresh = device.registry.plan_step(None, shift, 1, 1 << 20, (1 << 20) - shift, 1, 0, None)
    assert fresh.algorithm != "chain"
    assert signature(after.steps[0].details["runs"][0][2]) == signature(fresh)


def test_gpu_lane_chains_plan_each_run_once(device, tune):
    """Host shifts are planned on every roll_rows call, and a huge lane's chain step takes seconds to plan:
    a repeated call takes the run step planned before (the same object, so its prepared launch and device
    table are reused too) while the problem, policy and device are the same, and plans again when one
    differs. (``plan_roll_rows`` hands out copies, so identity is checked on the planner's steps.)"""
    def runs(shifts, bound=None):
        step = device.registry.plan_long_lanes(1, 3, 1 << 20, 1, 0, bound, np.array(shifts, np.int64))
        assert step.algorithm == "lane-chains"
        return step.params.runs

    tune.cuda(min_chain_lane_bytes=0)
    first, second = runs([5, 5, -7]), runs([5, 5, -7])
    assert [r[:2] for r in first] == [(0, 2), (2, 3)]
    assert all(a[2] is b[2] for a, b in zip(first, second))
    assert [r[:2] for r in runs([5, 6, -7])] == [(0, 1), (1, 2), (2, 3)]
    assert runs([5, 6, -7])[0][2] is not first[0][2]  # one lane, not two: another problem
    bounded = runs([5, 5, -7], bound=4096)  # another scratch bound: planned again, within it
    assert bounded[0][2] is not first[0][2] and bounded[0][2].scratch_bytes <= 4096
    tune.cuda(min_scratch=0)
    assert not any(a[2] is b[2] for a, b in zip(first, runs([5, 5, -7])))
