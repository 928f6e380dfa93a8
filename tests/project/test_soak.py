"""benchmarks/soak.py (issue #33's soak of every op): the draw reproducible and covering every op, dtype,
library and kind of shift; numpy's answer checked against a lane-by-lane roll; a small CPU run end to end;
and the soak seen failing: a wrong byte, a guard byte and a hang each turn it red."""

import importlib.util
import json
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("soak", ROOT / "benchmarks" / "soak.py")
soak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soak)

LIBS = {"gpu": soak.GPU_LIBS, "cpu": soak.CPU_LIBS}


@pytest.mark.parametrize("mode", sorted(LIBS))
def test_the_draw_is_reproducible_and_covers_every_op_dtype_library_and_shift_kind(mode):
    cases = [soak.draw_case(3, i, LIBS[mode], 1 << 22) for i in range(2000)]
    assert cases[1234] == soak.draw_case(3, 1234, LIBS[mode], 1 << 22)  # --only i reruns case i alone
    assert sum(a != b for a, b in zip(cases, (soak.draw_case(4, i, LIBS[mode], 1 << 22) for i in range(2000)))) > 1900
    assert {c["op"] for c in cases} == set(soak.OPS)
    assert {c["dtype"] for c in cases} == set(soak.DTYPES)
    assert {c["lib"] for c in cases} == set(LIBS[mode])
    assert {len(c["shape"]) for c in cases} == {1, 2, 3, 4}
    assert {c["offset"] for c in cases} == set(range(16))
    rows = [c for c in cases if c["op"] == "roll_rows"]
    kinds = {"single", "lanes", "broadcast"} | ({"device"} if mode == "gpu" else set())
    assert {c["shifts_kind"] for c in rows} == kinds
    assert {c["axis"] % len(c["shape"]) for c in rows if len(c["shape"]) == 3} == {0, 1, 2}  # every axis
    assert any(c["transposed"] for c in rows) and any(c["transposed"] for c in cases if c["op"] == "roll")
    assert not any(c["transposed"] for c in cases if c["op"] == "rotate" or c.get("axis", 0) is None)
    assert max(int(np.prod(c["shape"])) * soak.dtype_of(c["dtype"]).itemsize for c in cases) > 1 << 22
    multi = [c for c in cases if c["op"] == "roll-axes"]
    assert any(len(set(a % len(c["shape"]) for a in c["axis"])) < len(c["axis"]) for c in multi)  # repeats
    for c in cases:
        assert c["offset"] % soak.dtype_of(c["dtype"]).itemsize == 0 or not c["lib"].startswith("torch")


def test_roll_rows_answer_equals_a_roll_of_each_lane():
    for index in range(400):
        case = soak.draw_case(9, index, soak.CPU_LIBS, 1 << 12)
        if case["op"] != "roll_rows":
            continue
        raw = np.random.default_rng(index).integers(0, 256, soak.buffer_bytes(case), np.uint8)
        want = raw.copy()
        lanes = np.moveaxis(soak.host_view(want, case), case["axis"], -1)
        shifts = np.broadcast_to(np.asarray(soak.lane_shifts(case)), lanes.shape[:-1])
        for lane in np.ndindex(lanes.shape[:-1]):
            lanes[lane] = np.roll(lanes[lane].copy(), int(shifts[lane]))
        assert soak.expected(raw, case).tobytes() == want.tobytes(), soak.describe(case)


def test_a_small_cpu_soak_passes_every_op(tmp_path):
    out = tmp_path / "soak.json"
    assert soak.main(["--cpu", "--cases", "240", "--seed", "5", "--max-bytes", "65536", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["cases"] == 240 and data["wrong_cases"] == 0 and not data["hangs"]
    assert set(data["ops"]) == set(soak.OPS) and sum(data["ops"].values()) == 240
    assert data["knobs"]["seed"] == 5 and data["environment"]


@pytest.mark.parametrize("where", ["inside", "guard"])
def test_the_soak_reports_a_wrong_byte(monkeypatch, tmp_path, where):
    real = soak.call

    def corrupting(rotate, case, x, shifts):
        algorithm = real(rotate, case, x, shifts)
        buffer = x
        while buffer.base is not None:
            buffer = buffer.base
        start = soak.GUARD + case["offset"]  # the array's first byte, or the guard byte just past it
        buffer[start if where == "inside" else start + x.nbytes] ^= 1
        return algorithm

    monkeypatch.setattr(soak, "call", corrupting)
    out = tmp_path / "soak.json"
    libs = soak.Libraries(gpu=False).names  # as main draws (torch CPU tensors where torch is installed)
    only = next(str(i) for i in range(100) if soak.draw_case(1, i, libs, 4096)["lib"] == "numpy")
    code = soak.main(["--cpu", "--seed", "1", "--only", only, "--max-bytes", "4096", "--json", str(out)])
    data = json.loads(out.read_text())
    assert code == 1 and data["wrong_cases"] == 1 and data["wrong"][0]["wrong_bytes"] == 1


def test_the_watchdog_reports_a_hang_and_stops(monkeypatch, tmp_path):
    monkeypatch.setattr(soak, "call", lambda *args: time.sleep(3.5) or "stuck")
    out = tmp_path / "soak.json"
    code = soak.main(["--cpu", "--cases", "5", "--hang-s", "1", "--max-bytes", "256", "--json", str(out)])
    data = json.loads(out.read_text())
    assert code == 1 and len(data["hangs"]) == 1 and data["cases"] == 1


def test_a_call_that_raises_is_a_failure_with_its_case(monkeypatch, tmp_path):
    def raising(rotate, case, x, shifts):
        raise ValueError("refused")

    monkeypatch.setattr(soak, "call", raising)
    out = tmp_path / "soak.json"
    code = soak.main(["--cpu", "--cases", "3", "--max-bytes", "256", "--json", str(out)])
    data = json.loads(out.read_text())
    assert code == 1 and data["error_cases"] == 3 and data["cases"] == 3
    assert data["errors"][0]["error"] == "ValueError: refused" and data["errors"][0]["op"] in soak.OPS


def test_a_transposed_numba_array_is_a_view_of_the_buffer_not_a_copy():
    """numba's DeviceNDArray.T launches a transpose kernel into a new array (the soak once rolled that copy
    and reported the buffer unmoved): the soak builds the F-ordered view through the CUDA Array Interface."""
    class View:  # a C-ordered (3, 5) float32 device array, as numba exports it
        dtype = np.dtype(np.float32)
        __cuda_array_interface__ = {"shape": (3, 5), "strides": None, "typestr": "<f4", "data": (4096, False),
                                    "version": 3}

    made = {}

    class Cuda:
        @staticmethod
        def from_cuda_array_interface(desc, owner=None, sync=True):
            made.update(desc=desc, owner=owner)
            return "view"

    libs = soak.Libraries.__new__(soak.Libraries)
    libs.cuda = Cuda
    assert libs._transposed_view(View(), "buffer") == "view" and made["owner"] == "buffer"
    host = np.zeros((3, 5), np.float32).T
    assert made["desc"]["shape"] == host.shape and made["desc"]["strides"] == host.strides
    assert made["desc"]["data"] == (4096, False) and made["desc"]["typestr"] == "<f4"
