"""Where do a kernel's warps stall, by instruction, opcode and stall reason?

Backs: the stall summaries docs/design.md and docs/performance.md cite, of ncu_target.py's profiles by opcode
and stall reason: docs/results/ncu-chain-4082604-summary.txt and ncu-pipeline-2007fe3-long-shifts-summary.txt.

Summarise an Nsight Compute source-counter report: where the warps' samples are.

    ncu -i rep.ncu-rep --page source --csv --print-source sass > rep.csv
    python benchmarks/probes/ncu_summary.py rep.csv [top]

Prints the total of warp samples, the instructions holding the most samples
(with their execution counts; a spin loop's branch names the mbarrier wait or
global load it follows), the samples by opcode and by stall reason.
"""
import csv
import sys


def column(header, *words):
    for name in header:
        if all(w.lower() in name.lower() for w in words):
            return name
    raise KeyError(f"no column with {words} in {header}")


def main(path, top=15):
    with open(path, newline="") as handle:
        lines = handle.readlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))  # after the kernel's name
    rows = list(csv.DictReader(lines[start:]))
    header = list(rows[0])
    samples = column(header, "Warp Stall Sampling (All")
    executed = column(header, "Instructions Executed")
    source = column(header, "Source")

    def number(row, name):
        try:
            return float(row[name].replace(",", "") or 0)
        except ValueError:
            return 0.0

    total = sum(number(r, samples) for r in rows) or 1.0
    print(f"{len(rows)} SASS instructions, {total:.0f} warp samples")
    kinds = {}
    for r in rows:
        op = r[source].split()[0] if r[source].split() else "?"
        if op.startswith("@"):
            op = r[source].split()[1]
        kinds[op.split(".")[0]] = kinds.get(op.split(".")[0], 0) + number(r, samples)
    print("samples by opcode:", ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in
                                            sorted(kinds.items(), key=lambda kv: -kv[1])[:12]))
    stalls = {name[len("stall_"):]: sum(number(r, name) for r in rows) for name in header
              if name and name.startswith("stall_")}
    stall_total = sum(stalls.values()) or 1.0
    print("stall reasons:", ", ".join(f"{k} {100 * v / stall_total:.1f}%" for k, v in
                                      sorted(stalls.items(), key=lambda kv: -kv[1])[:8]))
    for index, r in sorted(enumerate(rows), key=lambda ir: -number(ir[1], samples))[:top]:
        # A spin loop's samples sit on its branch; name the mbarrier wait (or global load) it follows.
        waits = [rows[j][source].strip() for j in range(max(0, index - 10), index)
                 if "TRYWAIT" in rows[j][source] or "LDG" in rows[j][source]]
        after = f"  (after {waits[-1]})" if waits and "BRA" in r[source] else ""
        print(f"  #{index:5d} {100 * number(r, samples) / total:5.1f}%  executed {number(r, executed):10.0f}  "
              f"{r[source].strip()}{after}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 15)
