"""Summarise an Nsight Compute source-counter report by source line of the kernel, with each line's SASS.

    ROTATE_LINEINFO=1 ncu --kernel-name regex:^kernel --launch-skip 1 --launch-count 1 \\
        --section SourceCounters -o rep python benchmarks/ncu_rows_target.py 35 long_lanes="'walks'"
    ncu -i rep.ncu-rep --page source --csv --print-source cuda,sass > src.csv    # (or src.csv.gz)
    python benchmarks/ncu_lines.py src.csv [--top 30] [--line 1102 --line 1115]

Prints the warp samples by source line (device functions inlined into the
kernel count at their call site), then for each ``--line`` its SASS: the
instructions executed and the samples by opcode, and the samples by stall
reason. ``benchmarks/ncu_summary.py`` does the same by instruction for a
``--print-source sass`` export.
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip


def _number(text: str) -> int:
    text = text.strip()
    return int(text) if text.lstrip("-").isdigit() else 0


def read(path: str):
    """``(lines, sass, header)``: samples by ``(file, line)`` with the line's source text, and the SASS rows
    (samples, executed, instruction, stall samples by reason) under each line."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as handle:
        rows = list(csv.reader(handle))
    header = next(r for r in rows if r and r[0] == "Line No")
    samples = header.index("Warp Stall Sampling (All Samples)")
    executed = header.index("Instructions Executed")
    stalls = [(h, i) for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
    lines, text, sass = collections.Counter(), {}, collections.defaultdict(list)
    current_file, current = "?", None
    for r in rows:
        if not r:
            continue
        if r[0] == "File Path":
            current_file = r[1].rsplit("/", 1)[-1]
            continue
        if r[0] in ("Function Name", "Line No") or len(r) < 5:
            continue
        if r[0]:
            current = (current_file, int(r[0])) if r[0].isdigit() else None
            if current:
                lines[current] += _number(r[samples])
                text[current] = r[1].strip()
            continue
        if current:
            sass[current].append((_number(r[samples]), _number(r[executed]), r[3].strip(),
                                  {h: _number(r[i]) for h, i in stalls}))
    return lines, text, sass


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--line", type=int, action="append", default=[], help="a kernel line to break down")
    args = parser.parse_args(argv)
    lines, text, sass = read(args.path)
    total = sum(lines.values()) or 1
    print(f"total samples {total}")
    for (name, line), count in lines.most_common(args.top):
        print(f"{100 * count / total:5.1f}%  {name}:{line}: {text[(name, line)][:100]}")
    for wanted in args.line:
        for key in [k for k in sass if k[1] == wanted]:
            rows = sass[key]
            by_samples, by_executed, by_stall = collections.Counter(), collections.Counter(), collections.Counter()
            for count, executed, instruction, stalls in rows:
                words = instruction.split()
                opcode = (words[1] if words[0].startswith("@") and len(words) > 1 else words[0]).split(".")[0]
                by_samples[opcode] += count
                by_executed[opcode] += executed
                by_stall.update(stalls)
            print(f"\n{key[0]}:{key[1]} {text[key][:90]}")
            print(f"  {len(rows)} SASS instructions, {sum(r[0] for r in rows)} samples, "
                  f"{sum(r[1] for r in rows)} warp instructions executed")
            print("  samples by opcode:", ", ".join(f"{op} {n}" for op, n in by_samples.most_common(12)))
            print("  executed by opcode:", ", ".join(f"{op} {n}" for op, n in by_executed.most_common(12)))
            print("  samples by stall:", ", ".join(f"{s[6:]} {n}" for s, n in by_stall.most_common(8)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
