"""tools/tables.py builds the docs' numbers from the committed JSON in docs/results/.

Runs on the CPU: the script must run on the committed data, and the
committed README.md and docs/performance.md must be exactly what it
generates (numbers are never written by hand).
"""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_tables():
    spec = importlib.util.spec_from_file_location("tables", ROOT / "tools" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tables_script_runs_on_the_committed_results():
    tables = load_tables()
    texts = tables.regenerate()
    assert set(texts) == {"README.md", "docs/performance.md"}
    for (path, kind, name), body in tables.blocks().items():
        assert body.strip(), name
        assert f"<!-- {kind}:{name} -->\n{body}\n<!-- /{kind} -->" in texts[path], name


def test_committed_docs_match_their_data():
    tables = load_tables()
    stale = [path for path, text in tables.regenerate().items() if (ROOT / path).read_text() != text]
    assert not stale, f"{stale} differ from docs/results/: run python tools/tables.py and commit"
    assert tables.main(["--check"]) == 0


def test_gate_tables_from_a_format_2_result():
    """The gate matrix and the peers table render a rotate.bench JSON (format 2) with a failed peer recorded."""
    tables = load_tables()
    row = {"size_bytes": 1 << 30, "dtype": "uint8", "shift_label": "3", "algorithm": "chain", "ms": 0.65,
           "pct_memcpy": 77.0, "sync_pct_memcpy": 70.0, "device_pct_memcpy": 80.0, "calls_back_to_back": 20,
           "memcpy_ms": 0.5, "cupy_ms": 0.8, "cupy_pct": 62.0, "cupy_device_pct": 63.0,
           "torch_error": "RuntimeError: no"}
    data = {"device": "H200", "environment": {"git_commit": "abc", "versions": {}, "gpu_knobs": {"gpu": "H200"}},
            "rows": [row, dict(row, size_bytes=4096, ms=0.2, pct_memcpy=1.0, cupy_ms=0.05, device_pct_memcpy=90.0)],
            "small_arrays": [{"case": "torch.roll", "us_per_call": 11.0}, {"case": "cupy.roll", "error": "ImportError"},
                             {"case": "rotate.roll (torch tensor)", "us_per_call": 33.0}]}
    data = json.loads(json.dumps(data))
    matrix = tables.gpu_chain_matrix([data], ["run.json"])
    assert "| 3 | 1.0 / 77.0 |" in matrix and "`docs/results/run.json`" in matrix
    assert "80.0-90.0%" in matrix and "at least 90% at 1 of them" in matrix
    peers = tables.gpu_chain_peers([data])
    assert "| uint8 | 1-77% | 62% | n/a | 1 of 2 | cupy.roll: 1 of 2 (by 4.00x) |" in peers
    small = tables.gpu_small_table(data)
    assert "| torch.roll | 11.0 |" in small and "n/a: ImportError" in small
    how_fast = " ".join(tables.readme_how_fast(None, None, data, None, None).split())  # unwrapped
    assert "77-77% of a" in how_fast and "uint8 at 4 KiB" in how_fast and "costs 33.0-33.0 us" in how_fast
    assert "`torch.roll` 11.0 us a call" in how_fast  # the peers of the same run
    assert "uint8 shift 3 at 1 GiB" in how_fast  # where rotate beats both peers
