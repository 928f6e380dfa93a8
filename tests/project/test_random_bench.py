"""benchmarks/random_bench.py (issue #33): the seeded draw (reproducible, covering every op, item size,
dimension count and kind of side), a small CPU run end to end (every case checked, the JSON's schema),
the summary and the plot from result files, and --gpu refused without a GPU. No timing is asserted."""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "random_bench.py"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

spec = importlib.util.spec_from_file_location("random_bench", SCRIPT)
rb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rb)
from _harness import shapes  # noqa: E402 (on sys.path once random_bench is loaded)

RANGES = [rb.GPU_BYTES, rb.CPU_BYTES, rb.CPU_QUICK_BYTES]


# --- the draw ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lo, hi", RANGES)
def test_the_draw_is_reproducible_from_the_seed_and_each_case_from_its_index(lo, hi):
    cases = rb.draw_cases(11, 200, lo, hi)
    assert cases == rb.draw_cases(11, 200, lo, hi)
    assert cases[137] == rb.draw_case(11, 137, lo, hi)  # one case without the others (--only)
    other = rb.draw_cases(12, 200, lo, hi)
    assert sum(a["shape"] != b["shape"] for a, b in zip(cases, other)) > 150
    rows = [c for c in cases if c["op"] == "roll_rows" and c["lanes"] <= 100_000]  # GPU-sized shifts take seconds
    assert rows
    for case in rows:
        shifts = rb.lane_shifts(case)
        n = case["shape"][-1]
        assert shifts.dtype == np.int64 and shifts.shape == tuple(case["shape"][:-1])
        assert np.array_equal(shifts, rb.lane_shifts(dict(case)))
        assert shifts.min(initial=-n) >= -n and shifts.max(initial=n) <= n


@pytest.mark.parametrize("lo, hi", RANGES)
def test_the_draw_covers_every_op_item_size_dimension_count_and_kind_of_side(lo, hi):
    cases = rb.draw_cases(3, 400, lo, hi)
    assert {c["op"] for c in cases} == set(rb.OPS)
    assert {c["itemsize"] for c in cases} == {1, 2, 4, 8, 16}
    assert {c["dtype"] for c in cases} == {d for names in rb.DTYPES.values() for d in names}
    assert {len(c["shape"]) for c in cases} == {1, 2, 3, 4}
    for op in rb.OPS:
        assert {len(c["shape"]) for c in cases if c["op"] == op} >= {2, 3, 4}
    sides = [s for c in cases for s in c["shape"] if s > 2]
    kinds = {"power of two": [s for s in sides if s & (s - 1) == 0],
             "prime": [s for s in sides if shapes.is_prime(s)],
             "power of two +-1": [s for s in sides if (s - 1) & (s - 2) == 0 or (s + 1) & s == 0],
             "odd, not prime": [s for s in sides if s % 2 and not shapes.is_prime(s)],
             "even, not a power of two": [s for s in sides if s % 2 == 0 and s & (s - 1)]}
    for kind, found in kinds.items():
        assert len(found) > 0.04 * len(sides), (kind, len(found), len(sides))
    assert max(s for c in cases for s in c["shape"]) >= min(shapes.MAX_SIDE, hi // 16) // 2  # long sides reached
    fft = [c for c in cases if c["op"] in ("fftshift", "ifftshift")]
    assert any(c["axes"] is None for c in fft) and any(c["axes"] is not None for c in fft)
    assert {len(c["axes"]) for c in cases if c["op"] == "roll-axes"} == {1, 2, 3, 4}
    lanes = [c["lane_length"] * c["itemsize"] for c in cases if c["op"] == "roll_rows" and len(c["shape"]) > 1]
    assert min(lanes) < 256 and max(lanes) >= min(hi // 4, 1 << 20)  # short and long lanes
    # Log-uniform totals: every octave of the range is drawn.
    octaves = {int(math.log2(c["nbytes"] / lo)) for c in cases}
    assert octaves >= set(range(int(math.log2(hi / lo))))
    for c in cases:
        assert np.dtype(c["dtype"]).itemsize == c["itemsize"]
        assert c["nbytes"] == int(np.prod(c["shape"])) * c["itemsize"] and lo <= c["nbytes"] <= hi, c
        shape, size = c["shape"], int(np.prod(c["shape"]))
        if c["op"] == "roll":
            assert -size <= c["shift"] <= size and c["shift"] % size, c  # it moves
        elif c["op"] == "roll-axes":
            assert len(set(c["axes"])) == len(c["axes"]) and all(0 <= a < len(shape) for a in c["axes"])
            assert all(-shape[a] <= s <= shape[a] for s, a in zip(c["shift"], c["axes"]))
            assert any(s % shape[a] for s, a in zip(c["shift"], c["axes"])), c
        elif c["op"] == "roll_rows":
            assert c["lanes"] * c["lane_length"] == size and c["lane_length"] >= 2
        else:
            assert any(shape[a] > 1 for a in rb.fft_axes(c)), c


def test_reproduction_lines_make_the_call_they_name():
    import rotate

    cases = [c for c in rb.draw_cases(4, 60, 64, 4096)]
    seen = set()
    for c in cases:
        if c["op"] in seen:
            continue
        seen.add(c["op"])
        x = np.random.default_rng(0).integers(1, 255, c["shape"], dtype=np.uint8).astype(c["dtype"])
        want = x.copy()
        if c["op"] == "roll_rows":
            n = c["shape"][-1]
            s = np.asarray(rb.lane_shifts(c))
            want = np.take_along_axis(want, (np.arange(n) - s[..., None]) % n, -1)
        elif c["op"] in ("roll", "roll-axes"):
            want = np.roll(want, *rb.roll_args(c))
        else:
            want = getattr(np.fft, c["op"])(want, rb.fft_axes(c))
        line = rb.reproduction(c)
        exec(line.split("  #")[0], {"rotate": rotate, "np": np, "x": x})
        assert np.array_equal(x, want), line
    assert seen == set(rb.OPS)


# --- a CPU run end to end ------------------------------------------------------------------------------

def _run(args, cwd):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=ENV,
                          cwd=cwd, timeout=600)


def test_a_quick_cpu_run_checks_every_case_and_writes_the_json_and_its_summary(tmp_path, capsys):
    r = _run(["--cpu", "--quick", "--seed", "5", "--cases", "10", "--repeat", "1", "--flush-mib", "0",
              "--json", "out.json", "--allow-busy"], tmp_path)  # a test proves the command, not a number
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "[1/10]" in r.stderr and "[10/10] done in" in r.stderr  # the progress line
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["benchmark"] == "random_bench" and data["mode"] == "cpu" and data["seed"] == 5
    assert data["cases_drawn"] == data["cases_run"] == 10 and data["stopped_by_budget"] is False
    assert (data["min_bytes"], data["max_bytes"]) == rb.CPU_QUICK_BYTES
    prov = data["provenance"]
    assert prov["commit"] and prov["dirty"] in (True, False, None)
    assert set(prov["versions"]) >= {"python", "numpy", "numba", "numba-cuda", "cupy", "torch"}
    assert len(data["load_average"]["start"]) == 3 and len(data["load_average"]["end"]) == 3
    assert len(data["load_check"]["start"]) == 3 and isinstance(data["usable_for_docs"], bool)  # rotate/bench_env.py
    assert "--seed" in data["argv"]
    assert data["rerun"].endswith("--cpu --seed 5 --min-bytes 4096 --max-bytes 262144 --only INDEX")
    drawn = rb.draw_cases(5, 10, *rb.CPU_QUICK_BYTES)
    for case, want in zip(data["cases"], drawn):
        for key in ("index", "op", "shape", "dtype", "axes", "shift", "nbytes"):
            assert case[key] == want[key], (key, case, want)
        assert case["verified"] is True and "error" not in case, case
        assert case["plan"]["algorithm"] and case["plan"]["summary"].startswith("Plan(")
        assert case["plan_1thread"]["algorithm"]
        rot = case["rotate"]
        assert case["copyto_ms"] > 0 and rot["ms_1thread"] > 0 and rot["ms_threads"] > 0
        assert rot["x_copyto_1thread"] == pytest.approx(100 / rot["pct_1thread"])
        timed = {k: v for k, v in case["peers"].items() if "ms" in v}
        assert timed and case["best_peer"] in timed
        assert case["best_peer_pct"] == max(v["pct_1thread"] for v in timed.values())
        if case["op"] == "roll_rows":
            assert case["shifts_seed"] == [5, case["index"], 1] and case["shift"] is None
    assert set(data["summary"]) == {c["op"] for c in data["cases"] if not c["noop"]}
    # The docs' table from the file, no run.
    assert rb.main(["--from", str(tmp_path / "out.json"), "--summary-md", "--allow-busy"]) == 0
    out = capsys.readouterr().out
    assert "seed 5" in out and "| op | cases | rotate, 1 thread" in out
    for op, entry in data["summary"].items():
        assert f"| {op} | {entry['cases']} |" in out
        assert f"{len(entry['peer_faster'])} of {entry['cases']} |" in out
    assert out.count("rotate.") >= len(data["summary"])  # the worst points' reproduction lines


# --- summary, plot, refusals (no run) ------------------------------------------------------------------

def _fake(index, op, pct, peer_pct, mode="gpu"):
    case = next(c for c in (rb.draw_case(9, j, 1 << 20, 1 << 24) for j in range(100 * index, 100 * index + 100))
                if c["op"] == op)
    case["index"], case["noop"], case["verified"] = index, False, True
    case["plan"] = {"algorithm": "chain", "summary": "Plan(...)"}
    key = rb.HEADLINE[mode]
    if mode == "gpu":
        case["rotate"] = {key: pct, "sync_pct_memcpy": pct / 2, "device_pct_memcpy": pct + 1}
    else:
        case["rotate"] = {key: pct, "pct_threads": 2 * pct}
    case["peers"] = {"peer.a": {key: peer_pct}, "peer.b": {"error": "no kernel"}}
    case["best_peer"], case["best_peer_pct"] = "peer.a", peer_pct
    return case


def test_the_summary_gives_min_p10_median_peer_wins_and_the_worst_points():
    cases = [_fake(i, "roll", pct, peer) for i, (pct, peer) in enumerate([(90, 95), (50, 40), (70, 60), (80, 99)])]
    cases.append(_fake(4, "fftshift", 88, 70))
    noop = _fake(5, "fftshift", 1000, 1)
    noop["noop"] = True  # nothing moved: not a measurement
    summary = rb.summarize(cases + [noop], "gpu")
    roll = summary["roll"]
    assert roll["cases"] == 4 and roll["rotate"]["min"] == 50 and roll["rotate"]["median"] == 75
    assert roll["rotate"]["p10"] == pytest.approx(np.percentile([90, 50, 70, 80], 10))
    assert roll["sync_pct_memcpy"]["min"] == 25 and roll["device_pct_memcpy"]["median"] == 76
    assert roll["best_peer"]["min"] == 40 and roll["peer_faster"] == [0, 3]
    assert [w["index"] for w in roll["worst"]] == [1, 2, 3, 0]
    assert summary["fftshift"]["cases"] == 1 and summary["fftshift"]["peer_faster"] == []
    md = rb.summary_markdown(summary, "gpu")
    assert "| roll | 4 | 50% / 56% / 75% |" in md and "| 2 of 4 |" in md
    assert "A peer was faster at 2 of 5 points." in md
    assert "* roll: 50% (chain, best peer peer.a 40%): `rotate." in md
    # CPU: shown as times np.copyto's time, the worst first.
    cpu = rb.summarize([_fake(0, "roll", 50, 25, "cpu"), _fake(1, "roll", 100, 20, "cpu")], "cpu")
    md = rb.summary_markdown(cpu, "cpu")
    assert "| roll | 2 | 2.00x / 1.82x / 1.33x | 1.00x / 0.91x / 0.67x | 5.00x / 4.88x / 4.44x | 0 of 2 |" in md


def _write(path, mode, cases, seed=1):
    path.write_text(json.dumps({"benchmark": "random_bench", "format": 1, "mode": mode, "seed": seed,
                                "device": "test", "provenance": {"commit": "abc", "dirty": False},
                                "cases": cases}))
    return str(path)


def test_result_files_of_both_modes_or_of_other_benchmarks_are_refused(tmp_path):
    gpu = _write(tmp_path / "g.json", "gpu", [_fake(0, "roll", 80, 90)])
    cpu = _write(tmp_path / "c.json", "cpu", [_fake(0, "roll", 80, 90, "cpu")])
    with pytest.raises(ValueError, match="different references"):
        rb.load([gpu, cpu])
    other = tmp_path / "o.json"
    other.write_text(json.dumps({"benchmark": "rotate.bench"}))
    with pytest.raises(ValueError, match="not a result"):
        rb.load([str(other)])
    cases, mode, sources = rb.load([gpu, gpu])
    assert mode == "gpu" and len(cases) == 2 and "seed 1" in sources[0]


@pytest.mark.parametrize("mode", ["gpu", "cpu"])
def test_the_plot_draws_each_op_from_a_result_file(tmp_path, mode, capsys):
    pytest.importorskip("matplotlib")
    cases = [_fake(i, op, 60 + i, 70 - i, mode) for i, op in enumerate(rb.OPS * 2)]
    path = _write(tmp_path / "r.json", mode, cases)
    assert rb.main(["--from", path, "--plot", str(tmp_path / "r.png")]) == 0
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_budget_stops_before_a_case_that_would_not_fit():
    budget = rb.Budget(100, started=0.0)
    assert budget.allows(10, now=0.0)  # nothing measured yet
    budget.record(50, 10)  # the first case compiled: 5 s a unit
    budget.record(10, 10)
    budget.record(10, 10)  # then 1 s a unit: the first is left out
    assert budget.allows(30, now=60.0) and not budget.allows(50, now=60.0)
    assert not budget.allows(1, now=100.0)
    assert rb.Budget(0, 0.0).allows(10 ** 9, now=10 ** 6)  # 0: no budget


def test_gpu_is_refused_clearly_without_a_gpu(capsys):
    from rotate import bench

    if bench.gpu_available():
        pytest.skip("a GPU is here")
    assert rb.main(["--gpu", "--quick"]) == 1
    assert "--gpu: no usable CUDA GPU here" in capsys.readouterr().err


def test_sizes_read_with_suffixes():
    assert [rb.parse_bytes(t) for t in ("256M", "8G", "64KiB", "4096", "1.5G")] == [
        256 << 20, 8 << 30, 64 << 10, 4096, 3 << 29]


class _Wrong:
    """rotate's API with every call off by one element: what a broken kernel would do."""

    def __init__(self, rotate):
        self.rotate = rotate
        self.plan, self.plan_roll_rows = rotate.plan, rotate.plan_roll_rows

    def roll(self, x, shift, axis=None):
        shift = shift + 1 if axis is None else tuple(s + (i == 0) for i, s in enumerate(shift))
        return self.rotate.roll(x, shift, axis)

    def roll_rows(self, x, shifts):
        return self.rotate.roll_rows(x, np.asarray(shifts) + 1)

    def fftshift(self, x, axes=None):
        return self.rotate.roll(x, 1, axes)

    ifftshift = fftshift


@pytest.mark.parametrize("chunk", [rb.CHECK_CHUNK, 8])
def test_the_check_catches_a_wrong_result_for_every_op(monkeypatch, chunk):
    """Each op's check passes rotate's result and fails one off by an element; with chunk 8 roll_rows' check
    runs in chunks of lanes and, for lanes longer than a chunk, a roll a lane."""
    import rotate

    monkeypatch.setattr(rb, "CHECK_CHUNK", chunk)
    lib = rb.ArrayLib(np, "numpy")
    seen = set()
    for c in rb.draw_cases(21, 200, 64, 8192):
        key = (c["op"], c["op"] == "roll_rows" and c["lane_length"] > chunk)
        if key in seen:
            continue
        seen.add(key)
        shifts = None
        if c["op"] == "roll_rows":
            host = rb.lane_shifts(c)
            shifts = int(host) if host.ndim == 0 else host
        for module, want in ((rotate, True), (_Wrong(rotate), False)):
            x = lib.shaped(lib.random_bytes(c["nbytes"], 0), c)
            assert rb.verify(lib, module, c, x, shifts) is want, (rb.describe(c), module)
    assert {op for op, _ in seen} == set(rb.OPS)
    assert (chunk == 8) == (("roll_rows", True) in seen and ("roll_rows", False) in seen)


class _Cuda:
    """numba.cuda's events, stubbed: every call measures ``probe_ms``."""

    def __init__(self, probe_ms):
        self.probe_ms = probe_ms

    def synchronize(self):
        pass

    def event(self):
        return type("Event", (), {"record": lambda self, stream: None, "synchronize": lambda self: None})()

    def event_elapsed_time(self, start, stop):
        return self.probe_ms


@pytest.mark.parametrize("probe_ms", [0.5, 10_000.0])
def test_the_gpu_case_runs_every_op_with_numpy_standing_in_for_cupy(monkeypatch, probe_ms):
    """gpu_case's logic without a GPU: numpy has CuPy's names (roll, fft.fftshift, take_along_axis), the
    memcpy, the events and the three timers are stubs that run the call. Checks the check, the peers'
    calls and the record; a call whose timings would take longer than --slow-seconds is timed once.
    The real timers and libraries run only on a GPU."""
    from rotate import bench

    monkeypatch.setattr(bench, "_memcpy", lambda cuda, size, stream: ((lambda: None), None))

    def timer(ms):
        def time_it(fn, repeat):
            fn()
            return ms
        return time_it

    timers = (timer(2.0), timer(3.0), timer(1.0))
    args = type("Args", (), {"repeat": 1, "calls": 20, "slow_seconds": 20.0})()
    lib = rb.ArrayLib(np, "numpy")
    seen = set()
    for case in rb.draw_cases(8, 100, 64, 1 << 16):
        if case["op"] in seen:
            continue
        seen.add(case["op"])
        record = dict(case)
        rb.gpu_case(record, args, lib, np, None, _Cuda(probe_ms), None, timers, lambda: None)
        assert record["verified"] is True and record["memcpy_ms"] == 1.0, record
        peer = {"roll": "cupy.roll", "roll-axes": "cupy.roll", "roll_rows": "cupy.take_along_axis",
                "fftshift": "cupy.fft.fftshift", "ifftshift": "cupy.fft.ifftshift"}[case["op"]]
        assert set(record["peers"]) == {peer} and record["best_peer"] == peer
        for timing in (record["rotate"], record["peers"][peer]):
            if probe_ms < 100:
                assert timing["pct_memcpy"] == 50 and timing["device_pct_memcpy"] == 100
                assert timing["sync_pct_memcpy"] == pytest.approx(100 / 3) and "reduced" not in timing
            else:  # 10 s a call: timed once
                assert timing["pct_memcpy"] == timing["sync_pct_memcpy"] == 100 / probe_ms
                assert timing["reduced"].startswith("one synchronised call")
        assert "slow: one call timed" in rb.format_case(record, "gpu") or probe_ms < 100
    assert seen == set(rb.OPS)


def test_the_docs_table_refuses_a_busy_cpu_run(tmp_path, capsys):
    """--summary-md (the docs' table) takes no CPU result marked unusable or taken on a busy machine, unless
    --allow-busy says so; GPU results have no load check."""
    _write(tmp_path / "c.json", "cpu", [_fake(0, "roll", 80, 90, "cpu")])
    busy = json.loads((tmp_path / "c.json").read_text())
    busy.update(usable_for_docs=False, load_check={"problems": ["1-minute load average 3.00 at the start"]})
    (tmp_path / "c.json").write_text(json.dumps(busy))
    with pytest.raises(ValueError, match="not for the docs: marked unusable"):
        rb.main(["--from", str(tmp_path / "c.json"), "--summary-md"])
    assert rb.main(["--from", str(tmp_path / "c.json"), "--summary-md", "--allow-busy"]) == 0
    assert "--summary-md refuses it" in capsys.readouterr().err
    gpu = _write(tmp_path / "g.json", "gpu", [_fake(0, "roll", 80, 90)])
    assert rb.main(["--from", gpu, "--summary-md"]) == 0
    with pytest.raises(SystemExit) as exc:  # and a run on a machine over the threshold does not start
        rb.main(["--cpu", "--quick", "--max-load", "-1"])
    assert exc.value.code == 3
