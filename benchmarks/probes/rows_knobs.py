"""Which panel and saved-side sizes suit lane-panels and lane-swaps?

Backs: `cuda.default_panel_bytes` (docs/tuning.md, "GPU: lane-panels"), from
docs/results/rows-knobs-h200.json.

Sweep the GPU rows kernels' size knobs on a few cases of benchmarks/rows_gpu_bench.py.

The knobs: ``lane-panels``' panel bytes (``rotate._backends.cuda.kernels.panels.PANEL_BYTES``,
read when a plan is made, so each value runs in its own process) and
``lane-swaps``' panel and saved-side bytes (planner settings). Every run
checks its result against numpy like the benchmark does:

    python benchmarks/probes/rows_knobs.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from rotate._backends.cuda import tuning as cuda_tuning

PANEL_CASES = "0,1,2,5"  # roll_rows lanes of 4, 16 and 64 KiB at 1 GiB, 16 KiB at 4 GiB
SWAP_CASE = "7"  # 256 lanes of 4 MiB, random device shifts


def _run(code: str) -> list:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print(out.stdout[-4000:], out.stderr[-1500:] if out.returncode else "", flush=True)
    rows = []
    for line in out.stdout.splitlines():
        if line.startswith("JSON "):
            rows.extend(json.loads(line[5:]))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    results = []
    for panel in (16384, 32768, 49152):
        code = (
            "import json, sys, tempfile; sys.path.insert(0, 'benchmarks')\n"
            "from rotate._backends.cuda.kernels import panels\n"
            f"panels.PANEL_BYTES = {panel}\n"
            "import rows_gpu_bench\n"
            "path = tempfile.mktemp(suffix='.json')\n"
            f"rows_gpu_bench.main(['--only', '{PANEL_CASES}', '--repeat', '5', '--json', path])\n"
            f"print('JSON ' + json.dumps([dict(c, knob={{'PANEL_BYTES': {panel}}}) for c in json.load(open(path))['cases']]))\n"
        )
        results += _run(code)
    for panel, save in ((16384, None), (32768, None), (16384, 190000), (32768, 120000)):
        code = (
            "import json, sys, tempfile; sys.path.insert(0, 'benchmarks')\n"
            "import rows_gpu_bench\n"
            "from rotate._backends.cuda import tuning as cuda_tuning\n"
            "path = tempfile.mktemp(suffix='.json')\n"
            f"with cuda_tuning.override(swap_panel_bytes={panel}, swap_save_bytes={save}):\n"
            f"    rows_gpu_bench.main(['--only', '{SWAP_CASE}', '--repeat', '5', '--json', path])\n"
            f"print('JSON ' + json.dumps([dict(c, knob={{'swap_panel_bytes': {panel}, 'swap_save_bytes': {save}}}) "
            "for c in json.load(open(path))['cases']]))\n"
        )
        results += _run(code)
    for r in results:
        print(r.get("knob"), r.get("function"), r.get("shape"), r.get("algorithm"), r.get("correct"),
              round(r.get("device_pct_memcpy", 0), 1))
    if args.json:
        from rotate import _provenance

        with open(args.json, "w") as fh:
            json.dump({"benchmark": "rows_knobs", "environment": _provenance.environment(gpu=True),
                       "cases": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
