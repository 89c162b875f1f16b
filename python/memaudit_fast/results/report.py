"""Figures and an HTML page from a results file (``memaudit report``).

Each figure is drawn only when the records hold what it needs, and ``index.html`` shows the
numbers of each figure as a table beside it:

* ``sweep.png``: mean ratio to OPT of each writer against the budget. When the budgets came
  from fractions of each package's total cost (``budget_frac``, from ``--budget-fracs``) the
  x axis is that fraction: the absolute budgets differ from package to package, and a mean
  per absolute budget would mix packages at unrelated points;
* ``heatmap.png``: stress distribution x writer, mean ratio to OPT over all budgets (records
  carry ``distribution``, or a package id of the form ``small/<distribution>/...``);
* ``ablation.png``: OPT without dropped candidate families as a fraction of full OPT,
  against the budget (records with an ``ablation`` block);
* ``systems.png``: per external system, extraction ceiling and selected-store ratios, each the
  mean over the budgets scored (records with a ``systems`` block, from ``score-store``);
* ``solver_time.png``: solver seconds against package size (candidates): median and the
  10-90% band per size bin, log-log.

Needs matplotlib (``pip install 'memaudit_fast[report]'``).
"""

from __future__ import annotations

import html
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np

from ..errors import UsageError
from .export import read_records


def distribution_of(record: dict[str, Any]) -> str | None:
    if isinstance(record.get("distribution"), str):
        return str(record["distribution"])
    parts = str(record.get("package_id") or "").split("/")
    return parts[1] if len(parts) >= 3 else None


def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("status") != "error" and r.get("budget") is not None]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def budget_axis(records: list[dict[str, Any]]) -> tuple[str, Callable[[dict[str, Any]], float]]:
    """The x axis of budget figures: ``budget_frac`` when every record has one, else ``budget``."""
    ok = _ok(records)
    if ok and all(_number(r.get("budget_frac")) for r in ok):
        return "budget as a fraction of the package's total cost", lambda r: float(r["budget_frac"])
    return "budget B", lambda r: float(r["budget"])


def writer_ratios(records: list[dict[str, Any]]) -> dict[str, dict[float, list[float]]]:
    """writer -> x (budget or fraction) -> ratios."""
    _, x_of = budget_axis(records)
    out: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in _ok(records):
        for name, block in (r.get("writers") or {}).items():
            if isinstance(block, dict) and _number(block.get("ratio")):
                out[name][x_of(r)].append(float(block["ratio"]))
    return out


@dataclass
class Table:
    """The numbers behind one figure, for the HTML page."""

    headers: list[str]
    rows: list[list[Any]] = field(default_factory=list)

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(str(h))}</th>" for h in self.headers)
        digits = [_decimals([row[i] for row in self.rows]) for i in range(len(self.headers))]
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(c, digits[i]))}</td>" for i, c in enumerate(row))
                       + "</tr>" for row in self.rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _decimals(values: list[Any]) -> int | None:
    """One precision per column: decimals showing each float to 4 significant digits, or None
    (scientific notation for the whole column) when some value needs an exponent."""
    decimals = 0
    for v in values:
        if isinstance(v, float) and math.isfinite(v):
            text = f"{v:.4g}"
            if "e" in text or 0 < abs(v) < 0.01:  # fixed decimals would drop its digits
                return None
            decimals = max(decimals, len(text.partition(".")[2]))
    return min(decimals, 4)


def _cell(value: Any, decimals: int | None = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.3e}" if decimals is None else f"{value:.{decimals}f}"
    return str(value)


def _log_scale(ax: Any, xs: list[float]) -> None:
    """Log x for budgets that span octaves; ticks at the budgets measured, in plain numbers."""
    from matplotlib.ticker import NullFormatter

    positive = [x for x in xs if x > 0]
    if positive and len(positive) == len(xs) and max(positive) / min(positive) >= 8:
        ax.set_xscale("log", base=2)
    if len(xs) <= 12:
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.xaxis.set_minor_formatter(NullFormatter())


def _plain_log_ticks(axis: Any) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def make_report(results: str | Path, out_dir: str | Path, *, force: bool = False) -> list[Path]:
    """Write the figures and ``index.html`` into ``out_dir``; returns the files written.

    The output rules are :class:`~memaudit_fast.model.jsonio.OutputPath`'s: an existing
    ``out_dir`` is replaced only with ``force`` and only when it is empty or an earlier report
    holding nothing but the report's own files (:data:`REPORT_FILES`, an ``index.html`` this
    command wrote); any other file in it is named and nothing is changed. The new report is
    built beside it and appears complete.
    """
    from ..model.jsonio import OutputPath

    target = OutputPath(out_dir, inputs=(Path(results),), force=force, kind="dir", marker="index.html",
                        owns=is_report_file, what="memaudit report", option="--out").check()
    with target.directory() as tmp:
        written = _draw_report(results, tmp)
    return [Path(out_dir) / path.name for path in written]


#: Every file a report writes; --force replaces a directory holding nothing else.
REPORT_FILES = frozenset({"index.html", "sweep.png", "heatmap.png", "ablation.png", "systems.png",
                          "solver_time.png"})
# The first bytes of every index.html a report writes: a user's own index.html is not one.
_PAGE_START = "<!doctype html><html><head><meta charset='utf-8'><title>memaudit report</title>"


def is_report_file(path: Path) -> bool:
    """Whether ``path`` (an entry of an existing --out) is a file a report writes."""
    if path.name not in REPORT_FILES:
        return False
    if path.is_symlink():
        return True  # only the link goes, never what it points to
    if not path.is_file():
        return False
    if path.name != "index.html":
        return True
    try:
        with path.open("rb") as handle:
            return handle.read(len(_PAGE_START)).decode("utf-8", "replace") == _PAGE_START
    except OSError:
        return False


def _draw_report(results: str | Path, out_dir: str | Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("reports need matplotlib: pip install 'memaudit_fast[report]'") from None
    records = read_records(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    captions: dict[str, str] = {}
    tables: dict[str, Table] = {}
    x_label, x_of = budget_axis(records)
    x_name = "budget_frac" if x_label.startswith("budget as") else "budget"

    def save(fig: Any, name: str, caption: str, table: Table) -> None:
        path = out / name
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
        captions[name] = caption
        tables[name] = table

    ratios = writer_ratios(records)
    if ratios:
        names = sorted(ratios)
        xs = sorted({x for n in names for x in ratios[n]})
        fig, ax = plt.subplots(figsize=(7.6, 4.2))
        for name in names:
            pts = sorted(ratios[name])
            ax.plot(pts, [mean(ratios[name][b]) for b in pts], marker="o", label=name)
        _log_scale(ax, xs)
        ax.set_xlabel(x_label)
        ax.set_ylabel("mean F(X) / OPT(B)")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        ax.set_title("Writers against the exact optimum")
        counts = {len(ratios[n][x]) for n in names for x in ratios[n]}
        per = f"{min(counts)}" if len(counts) == 1 else f"{min(counts)}-{max(counts)}"
        table = Table([x_name, *names])
        for x in xs:
            table.rows.append([x, *[mean(ratios[n][x]) if x in ratios[n] else None for n in names]])
        save(fig, "sweep.png", f"Mean ratio to OPT of each writer, per {x_name} ({per} packages a point).",
             table)

    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in _ok(records):
        dist = distribution_of(r)
        for name, block in (r.get("writers") or {}).items():
            if dist and isinstance(block, dict) and _number(block.get("ratio")):
                cells[(dist, name)].append(float(block["ratio"]))
    if cells:
        dists = sorted({d for d, _ in cells})
        names = sorted({n for _, n in cells})
        grid = [[mean(cells[(d, n)]) if (d, n) in cells else math.nan for n in names] for d in dists]
        fig, ax = plt.subplots(figsize=(max(5.0, 2.0 + 1.1 * len(names)), max(3.0, 1.4 + 0.45 * len(dists))))
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        ax.set_yticks(range(len(dists)), dists)
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                if not math.isnan(value):
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center",
                            color="white" if value < 0.6 else "black", fontsize=8)
        fig.colorbar(image, ax=ax, label="mean ratio to OPT")
        ax.set_title("Stress distribution x writer (mean over budgets)")
        save(fig, "heatmap.png", "Mean ratio to OPT per stress distribution and writer, over all budgets.",
             Table(["distribution", *names], [[d, *row] for d, row in zip(dists, grid)]))

    ablation: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in _ok(records):
        for label, block in (r.get("ablation") or {}).items():
            if isinstance(block, dict) and _number(block.get("fraction_of_opt")):
                ablation[label][x_of(r)].append(float(block["fraction_of_opt"]))
    if ablation:
        labels = sorted(ablation)
        xs = sorted({x for a in ablation.values() for x in a})
        fig, ax = plt.subplots(figsize=(7.6, 4.2))
        for label in labels:
            pts = sorted(ablation[label])
            ax.plot(pts, [mean(ablation[label][b]) for b in pts], marker="s", label=f"without {label}")
        _log_scale(ax, xs)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel(x_label)
        ax.set_ylabel("ablated OPT / full OPT")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        ax.set_title("Candidate generation as a bottleneck")
        table = Table([x_name, *[f"without {a}" for a in labels]],
                      [[x, *[mean(ablation[a][x]) if x in ablation[a] else None for a in labels]] for x in xs])
        save(fig, "ablation.png", "OPT without the dropped candidate families, as a fraction of full OPT.",
             table)

    systems: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    system_budgets: set[float] = set()
    for r in _ok(records):
        for system, block in (r.get("systems") or {}).items():
            if isinstance(block, dict):
                system_budgets.add(float(r["budget"]))
                for key, value in block.items():
                    if _number(value) and key.endswith("ratio"):
                        systems[system][key].append(float(value))
    if systems:
        names = sorted(systems)
        keys = sorted({k for s in systems.values() for k in s})
        means = {key: [mean(systems[n][key]) if systems[n][key] else math.nan for n in names] for key in keys}
        zero = [k for k in keys if all(v == 0 or math.isnan(v) for v in means[k])]
        fig, ax = plt.subplots(figsize=(2.5 + 1.6 * len(names), 4.2))
        width = 0.8 / max(1, len(keys))
        for k, key in enumerate(keys):
            values = [0.0 if math.isnan(v) else v for v in means[key]]
            bars = ax.bar([i + k * width for i in range(len(names))], values, width,
                          label=None if key in zero else key.removesuffix("_ratio").replace("_", " "))
            for bar, value in zip(bars, values):
                ax.text(bar.get_x() + bar.get_width() / 2, value + 0.01, f"{value:.2f}", ha="center",
                        va="bottom", fontsize=6, rotation=90)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
        ax.set_ylim(0, 1.15)
        ax.set_ylabel("mean ratio to OPT(union)")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        shown = ", ".join(f"{b:g}" for b in sorted(system_budgets))
        over = f"mean over budgets {shown}" if len(system_budgets) > 1 else f"budget {shown}"
        ax.set_title(f"External systems, {over}", fontsize=10)
        if zero:
            pretty = ", ".join(k.removesuffix("_ratio").replace("_", " ") for k in zero)
            ax.set_xlabel(f"0 for every system (bars at 0.00, not in the legend): {pretty}", fontsize=8)
        note = (f" Zero for every system, so not in the legend: {', '.join(zero)}." if zero else "")
        save(fig, "systems.png",
             f"Per system: extraction ceiling and selected-store ratios over OPT(union), each the mean "
             f"over the {len(system_budgets)} budget(s) {shown}.{note}",
             Table(["system", *keys], [[n, *[means[k][i] for k in keys]] for i, n in enumerate(names)]))

    sizes = [(float(r["size"]["candidates"]), float(r["seconds"])) for r in _ok(records)
             if isinstance(r.get("size"), dict) and _number(r.get("seconds"))
             and _number(r["size"].get("candidates")) and r["size"]["candidates"] > 0]
    if sizes:
        table = _time_table(sizes)
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        mids = [row[1] for row in table.rows]
        ax.fill_between(mids, [max(row[4], 1e-6) for row in table.rows], [max(row[5], 1e-6) for row in table.rows],
                        alpha=0.25, label="10%-90% of solves")
        ax.plot(mids, [max(row[3], 1e-6) for row in table.rows], marker="o", label="median")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax.xaxis)
        ax.set_xlabel("candidates (bin median)")
        ax.set_ylabel("solver seconds per (package, budget)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
        ax.set_title(f"Exact solver time against package size ({len(sizes)} solves)")
        save(fig, "solver_time.png",
             "Branch-and-bound seconds per (package, budget): median and 10%-90% band per bin of "
             "package size.", table)

    statuses: dict[str, int] = defaultdict(int)
    for r in records:
        statuses[str(r.get("status"))] += 1
    page = [_PAGE_START,
            ("<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
            "img{max-width:100%}.fig{display:flex;gap:1.5em;align-items:flex-start}"
            ".fig>div{flex:1;overflow-x:auto}table{border-collapse:collapse;font-size:0.85em}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
            "td:first-child,th:first-child{text-align:left}</style>"),
            "</head><body>", f"<h1>memaudit report: {html.escape(str(results))}</h1>",
            f"<p>{len(records)} records; status counts: "
            + ", ".join(f"{html.escape(k)} {v}" for k, v in sorted(statuses.items())) + "</p>"]
    for path in written:
        page.append(f"<h2>{html.escape(path.stem)}</h2><p>{html.escape(captions[path.name])}</p>"
                    f"<div class='fig'><div><img src='{html.escape(path.name)}' alt='{html.escape(path.stem)}'>"
                    f"</div><div>{tables[path.name].to_html()}</div></div>")
    if not written:
        page.append("<p>No figure applies: the records hold no writer, ablation, system or size data.</p>")
    page.append("</body></html>")
    index = out / "index.html"
    index.write_text("\n".join(page), encoding="utf-8")
    written.append(index)
    return written


def _time_table(sizes: list[tuple[float, float]], bins: int = 12) -> Table:
    """Solver seconds per bin of package size (log-spaced bins, empty ones left out)."""
    n = np.array([s[0] for s in sizes])
    t = np.array([s[1] for s in sizes])
    lo, hi = float(n.min()), float(n.max())
    edges = np.geomspace(lo, hi * (1 + 1e-9), bins + 1) if hi > lo else np.array([lo, hi + 1])
    table = Table(["candidates", "bin median", "solves", "median s", "p10 s", "p90 s", "max s"])
    which = np.clip(np.searchsorted(edges, n, side="right") - 1, 0, len(edges) - 2)
    for b in range(len(edges) - 1):
        mask = which == b
        if not mask.any():
            continue
        tb = t[mask]
        span = f"{n[mask].min():g}-{n[mask].max():g}"
        table.rows.append([span, float(np.median(n[mask])), int(mask.sum()), float(np.median(tb)),
                           float(np.quantile(tb, 0.1)), float(np.quantile(tb, 0.9)), float(tb.max())])
    return table
