"""The plots the product benchmarks draw (``--plot PNG``), from a run or from its JSON (``--from RUN.json``).

Every benchmark the README names writes a PNG of what it measured, and can redraw one from a result file
without measuring anything (so the committed results in docs/results/ plot on any machine, GPU runs
included). They share the drawing here, in ``python -m rotate.bench``'s style (rotate/bench.py's
``plot``: a grid of panels, the legend below, the source file's commit and machine in the title):

* ``add_arguments(parser)``: ``--plot PNG`` and ``--from RUN.json``;
* ``replot(args, parser, draw, benchmark)``: with ``--from``, load the file and draw it (exit status 0);
  otherwise check that ``--plot`` can be drawn (matplotlib installed) before a long run starts;
* ``write(args, draw, data)``: after a run, its ``--plot``;
* ``Panel`` and ``bars(panels, path, ...)``: grouped bars, one group a case, one bar a contender (rotate
  and its peers on the same axes, one colour each across panels), reference lines (memcpy, a bound) drawn
  and named in the legend;
* ``split(...)``: a long list of cases as several panels of at most ``most`` cases;
* ``source(path, data)``: "file (machine, commit)", from the file's ``environment`` (or ``meta``) block.

Nothing private is read here; it lives in _harness because the benchmarks share it, and rotate/bench.py
(installed, where benchmarks/ is not) keeps its own ``plot``.
"""

from __future__ import annotations

import json
import math
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

#: At most this many columns of panels, each this many inches wide; a row of panels this many inches high.
MAX_COLUMNS = 3
COLUMN_INCHES = 5.0
ROW_INCHES = 3.8
#: Contenders' colours: rotate first (blue, as in rotate.bench's plots), then the peers in order of appearance.
COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive"]
#: Reference lines' styles, in order.
REFERENCE_STYLES = ["-", "--", ":", "-."]


@dataclass
class Panel:
    """One axes: ``categories`` along x (one group of bars each), ``series`` name -> one value a category
    (None: not measured, or it failed: marked "n/a")."""

    title: str
    categories: list
    series: dict
    ylabel: str = ""
    references: list = field(default_factory=list)  # (y, label): drawn on this panel only
    xlabel: str = ""


def size_label(nbytes: int) -> str:
    """``4 KiB``, ``1 GiB``, ``12 B``, ``1.22 GiB``: binary units, as rotate.bench's tables write sizes
    (three significant digits where a size is not a whole number of its unit)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale if nbytes % scale == 0 else f'{nbytes / scale:.3g}'} {unit}"
    return f"{int(nbytes)} B"


def split(title: str, categories: list, series: dict, ylabel: str = "", most: int = 8, xlabel: str = "") -> list:
    """``Panel``s of at most ``most`` categories each, as evenly filled as they can be ("title (1/3)", ...)."""
    parts = max(1, math.ceil(len(categories) / most))
    if parts == 1:
        return [Panel(title, list(categories), dict(series), ylabel, xlabel=xlabel)]
    size = math.ceil(len(categories) / parts)
    return [Panel(f"{title} ({i + 1}/{parts})", list(categories[i * size:(i + 1) * size]),
                  {name: list(values[i * size:(i + 1) * size]) for name, values in series.items()}, ylabel,
                  xlabel=xlabel)
            for i in range(parts)]


def commit(data: dict) -> str:
    """The commit a result was measured at, 12 hex digits (and "-dirty" or "+note" as recorded)."""
    env = data.get("environment") or {}
    text = env.get("git_commit") or (data.get("provenance") or {}).get("commit") or data.get("commit")
    if not text:
        return "commit not recorded"
    head, sep, rest = str(text).partition("-")
    return f"commit {head[:12]}{sep}{rest}"


def machine(data: dict) -> str:
    """The machine a result was measured on: the GPU's name where one was timed, the CPU count, the OS."""
    env = data.get("environment") or {}
    meta = data.get("meta") or {}
    parts = []
    gpu = (env.get("gpu_knobs") or {}).get("gpu") or meta.get("device")
    if gpu:
        parts.append(str(gpu))
    if env.get("cpus") and "cpus" not in " ".join(parts):  # wave_bench's CPU device names its cpus
        parts.append(f"{env['cpus']} cpus")
    if env.get("platform"):
        parts.append(str(env["platform"]).split("-with-")[0])
    return ", ".join(parts) or "machine not recorded"


def source(path, data: dict) -> str:
    """``docs/results/x.json (machine, commit c)``; a result marked unusable for the docs says so."""
    shown = str(path)
    shown = shown[shown.index("docs/results/"):] if "docs/results/" in shown else Path(shown).name
    text = f"{shown} ({machine(data)}, {commit(data)})"
    if data.get("usable_for_docs") is False:
        text += " [busy machine: not for the docs]"
    return text


def add_arguments(parser) -> None:
    """``--plot PNG`` and ``--from RUN.json`` (the drawing needs matplotlib: the bench extra)."""
    parser.add_argument("--plot", metavar="PNG", help="also draw the results as a PNG here (needs matplotlib: "
                                                      "pip install -e '.[bench]')")
    parser.add_argument("--from", dest="source", metavar="RUN.json",
                        help="measure nothing: draw --plot from this earlier result of this benchmark "
                             "(e.g. one in docs/results/); no GPU needed")


def load(path, benchmark: str) -> dict:
    """The JSON a run of ``benchmark`` wrote; another benchmark's file is refused (ValueError)."""
    data = json.loads(Path(path).read_text())
    found = data.get("benchmark") if isinstance(data, dict) else None
    if benchmark == "wave_bench":  # its files carry "meta" and "rows", no "benchmark" key
        found = benchmark if isinstance(data, dict) and "meta" in data and "rows" in data else found
    if found != benchmark:
        raise ValueError(f"{path}: not a result of benchmarks/{benchmark}.py (benchmark={found!r})")
    return data


def replot(args, parser, draw, benchmark: str):
    """With ``--from``: draw ``args.source`` into ``args.plot`` through ``draw(data, png, source)`` and
    return 0 (1 for a file of another benchmark). Without: None, after checking that a ``--plot`` asked
    for can be drawn, so a long run does not end without its plot."""
    if args.plot or args.source:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            parser.error("--plot needs matplotlib: pip install -e '.[bench]' (or pip install 'matplotlib>=3.7')")
    if args.source is None:
        return None
    if not args.plot:
        parser.error("--from RUN.json draws a plot: give --plot out.png")
    try:
        data = load(args.source, benchmark)
    except (OSError, ValueError) as exc:
        print(f"--from: {exc}", file=sys.stderr)
        return 1
    draw(data, args.plot, args.source)
    print(f"wrote {args.plot}")
    return 0


def write(args, draw, data: dict) -> None:
    """After a run: its ``--plot``, if one was asked for, titled with its ``--json`` file (or "this run")."""
    if args.plot:
        draw(data, args.plot, getattr(args, "json", None) or "this run")
        print(f"wrote {args.plot}")


def bars(panels, path, *, title: str, sources=(), references=(), log: bool = False, top=None) -> dict:
    """A PNG of ``panels`` in a grid of at most three columns: grouped bars, one colour a series (the same
    in every panel), reference lines ``(y, label)`` across every panel (and each panel's own), the legend
    below and ``title`` with the ``sources`` above. ``log``: a log y axis (ratios spanning decades);
    ``top``: the y axis' upper limit on a linear axis (default: the tallest bar, 8% above).
    Returns what it drew: grid, panels' titles, series, references and the size in pixels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    panels = [p for p in panels if p.categories]
    if not panels:
        raise ValueError("nothing to plot: no measured cases")
    names = []
    for panel in panels:
        names += [name for name in panel.series if name not in names]
    colours = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(names)}
    lines = []  # every reference line's label, in order: one style each
    for y, label in [*references, *(r for p in panels for r in p.references)]:
        if label not in lines:
            lines.append(label)
    styles = {label: REFERENCE_STYLES[i % len(REFERENCE_STYLES)] for i, label in enumerate(lines)}
    ncols = min(MAX_COLUMNS, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(COLUMN_INCHES * ncols, ROW_INCHES * nrows + 1.3),
                             squeeze=False)
    for index, ax in enumerate(axes.flat):
        if index >= len(panels):
            ax.set_visible(False)
            continue
        _panel(ax, panels[index], colours, styles, references, log, top)
    handles = [Patch(facecolor=colours[name], label=name) for name in names]
    handles += [Line2D([], [], color="k", linestyle=styles[label], linewidth=1, label=label) for label in lines]
    per_row = min(len(handles), 2 if ncols == 1 else 4)
    fig.legend(handles=handles, loc="lower center", ncol=per_row, fontsize=8, frameon=False)
    wrap = int(15 * COLUMN_INCHES * ncols)  # characters of 9-point text a line of the figure's width holds
    heading = "\n".join(textwrap.fill(text, wrap) for text in [title, "; ".join(sources)] if text)
    fig.suptitle(heading, fontsize=9)
    legend_rows = math.ceil(len(handles) / per_row)
    fig.tight_layout(rect=(0, min(0.3, (0.25 + 0.22 * legend_rows) / (ROW_INCHES * nrows + 1.3)), 1, 1))
    fig.savefig(path, dpi=100)
    width, height = (fig.get_size_inches() * 100).round().astype(int)
    plt.close(fig)
    return {"grid": (nrows, ncols), "panels": [p.title for p in panels], "series": names, "references": lines,
            "size_px": (int(width), int(height))}


def _panel(ax, panel, colours, styles, references, log, top) -> None:
    import numpy as np

    names = list(panel.series)
    width = 0.8 / max(1, len(names))
    x = np.arange(len(panel.categories))
    values = [v for name in names for v in panel.series[name] if v is not None]
    for j, name in enumerate(names):
        offset = (j - (len(names) - 1) / 2) * width
        for i, value in enumerate(panel.series[name]):
            if value is None:  # not measured, or it failed: say so where the bar would stand
                ax.text(x[i] + offset, 0.02, "n/a", rotation=90, fontsize=6, ha="center", va="bottom",
                        color=colours[name], transform=ax.get_xaxis_transform())
            else:
                ax.bar(x[i] + offset, value, width * 0.92, color=colours[name], zorder=3)
    for y, label in [*references, *panel.references]:
        ax.axhline(y, color="k", linestyle=styles[label], linewidth=1, zorder=4)
        values.append(y)
    if log:  # ticks at 1, 2 and 5 of each decade, written as plain numbers (0.5, 1, 2, 5, 10, ...)
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_yscale("log")
        positive = [v for v in values if v > 0]
        if positive:
            ax.set_ylim(min(positive) / 1.6, max(positive) * 1.6)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(0, top if top is not None else max(values + [0]) * 1.08 or 1)
    # Tilted where two neighbouring labels would overlap: 7-point text is about 5.3 pixels a character,
    # and a group of bars has its share of the panel's ~440 pixels.
    widths = [max(len(line) for line in str(c).split("\n")) for c in panel.categories]
    crowded = max([(a + b) / 2 for a, b in zip(widths, widths[1:])] + [0]) * 5.3
    tilted = crowded > 0.9 * COLUMN_INCHES * 88 / len(panel.categories)
    ax.set_xticks(x)
    ax.set_xticklabels(panel.categories, fontsize=7, rotation=30 if tilted else 0, ha="right" if tilted else "center")
    ax.set_xlim(-0.6, len(panel.categories) - 0.4)
    ax.grid(True, axis="y", alpha=0.3, which="both" if log else "major", zorder=0)
    ax.set_title(panel.title, fontsize=10)
    ax.set_ylabel(panel.ylabel, fontsize=8)
    ax.set_xlabel(panel.xlabel, fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
