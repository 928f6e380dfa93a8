"""Write docs/mutation.md from docs/results/mutation.json (numbers come from the result file)."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
result = json.loads((ROOT / "docs/results/mutation.json").read_text())
lines = [
    "# Mutation testing",
    "",
    "`tools/mutation.py` (CONTRIBUTING.md, \"Mutation testing\") applies one-line mutants of",
    "`rotate/` and `waveops/` one at a time and runs a fast subset of the suite against each.",
    f"Latest run (docs/results/mutation.json): **{result['killed']} of {result['total']} killed "
    f"= {result['score']:.0f}%**." + (f" {result['note']}" if result.get("note") else ""),
    "",
    "The mutants were written by the developers who wrote the tests, so the score is an",
    "upper bound: it shows these bug classes are caught, not that every one-line bug is.",
    "The GPU kernels themselves are not mutated here (they run only under the simulator",
    "or on a GPU); their schedules' index math and decision rules are (the chain schedule, the row cycles and",
    "their chunks, the lane swaps, the half-swaps, the strip step), and so is the quick path of repeated GPU calls",
    "(device stubbed).",
    "",
    f"Tests: {', '.join('`' + t + '`' for t in result['tests'])} (`-k \"{result['deselect']}\"`).",
    "",
]
blind = result.get("written_before_tests")
if blind:  # mutants written before the tests that kill them: the suite's score on them before those tests existed
    before, after = blind["before"], blind["after"]
    lines += [
        f"**Written before their tests** ({blind['what']}): {before['total']} mutants. The suite as it was "
        f"(the subset above without {', '.join('`' + t + '`' for t in before['without'])}) killed "
        f"**{before['killed']} of {before['run']} run** ({before['note']}): the honest figure, how blind "
        f"it was. With those tests: **{after['killed']} of {after['total']}** killed. "
        f"A mutant's result below says \"before its tests\" for these.",
        "",
    ]
lines += [
    "| mutant | file | result | seconds |",
    "|---|---|---|---|",
]
lines += [f"| {r['mutant']} | `{r['file']}` | {r['status']}"
          + (f" (before its tests: {r['before']})" if r.get("before") else "") + f" | {r['seconds']} |"
          for r in result["results"]]
(ROOT / "docs/mutation.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines[:6]))
