"""Figures and an HTML page from a results file (``memaudit report``).

Each figure is drawn only when the records hold what it needs:

* ``sweep.png``: mean ratio to OPT of each writer against the budget;
* ``heatmap.png``: stress distribution x writer, mean ratio to OPT (records carry
  ``distribution``, or a package id of the form ``small/<distribution>/...``);
* ``ablation.png``: OPT without dropped candidate families as a fraction of full OPT,
  against the budget (records with an ``ablation`` block);
* ``systems.png``: per external system, extraction ceiling and selected-store ratios
  (records with a ``systems`` block, from union-denominator scoring);
* ``solver_time.png``: solver seconds against package size (candidates), log-log.

Needs matplotlib (``pip install 'memaudit_fast[report]'``).
"""

from __future__ import annotations

import html
import math
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from ..errors import UsageError
from .export import read_records


def distribution_of(record: dict[str, Any]) -> str | None:
    if isinstance(record.get("distribution"), str):
        return str(record["distribution"])
    parts = str(record.get("package_id") or "").split("/")
    return parts[1] if len(parts) >= 3 else None


def _ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("status") != "error" and r.get("budget") is not None]


def writer_ratios(records: list[dict[str, Any]]) -> dict[str, dict[float, list[float]]]:
    out: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in _ok(records):
        for name, block in (r.get("writers") or {}).items():
            if isinstance(block, dict) and isinstance(block.get("ratio"), (int, float)):
                out[name][float(r["budget"])].append(float(block["ratio"]))
    return out


def make_report(results: str | Path, out_dir: str | Path, *, force: bool = False) -> list[Path]:
    """Write the figures and ``index.html`` into ``out_dir``; returns the files written.

    The output rules are :class:`~memaudit_fast.model.jsonio.OutputPath`'s: an existing
    ``out_dir`` is replaced only with ``force`` and only when it is an earlier report (holds
    ``index.html``) or empty; the new report is built beside it and appears complete.
    """
    from ..model.jsonio import OutputPath

    target = OutputPath(out_dir, inputs=(Path(results),), force=force, kind="dir", marker="index.html").check()
    with target.directory() as tmp:
        written = _draw_report(results, tmp)
    return [Path(out_dir) / path.name for path in written]


def _draw_report(results: str | Path, out_dir: str | Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("reports need matplotlib: pip install 'memaudit_fast[report]'") from None
    records = read_records(results)
    if not records:
        raise UsageError(f"{results} holds no records")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    captions: dict[str, str] = {}

    def save(fig: Any, name: str, caption: str) -> None:
        path = out / name
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
        captions[name] = caption

    ratios = writer_ratios(records)
    if ratios:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for name in sorted(ratios):
            budgets = sorted(ratios[name])
            ax.plot(budgets, [mean(ratios[name][b]) for b in budgets], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("budget B")
        ax.set_ylabel("mean F(X) / OPT(B)")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title("Writers against the exact optimum")
        save(fig, "sweep.png", "Mean ratio to OPT of each writer, per budget.")

    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in _ok(records):
        dist = distribution_of(r)
        for name, block in (r.get("writers") or {}).items():
            if dist and isinstance(block, dict) and isinstance(block.get("ratio"), (int, float)):
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
        ax.set_title("Stress distribution x writer")
        save(fig, "heatmap.png", "Mean ratio to OPT per stress distribution and writer (all budgets).")

    ablation: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in _ok(records):
        for label, block in (r.get("ablation") or {}).items():
            if isinstance(block, dict) and isinstance(block.get("fraction_of_opt"), (int, float)):
                ablation[label][float(r["budget"])].append(float(block["fraction_of_opt"]))
    if ablation:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for label in sorted(ablation):
            budgets = sorted(ablation[label])
            ax.plot(budgets, [mean(ablation[label][b]) for b in budgets], marker="s", label=f"without {label}")
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("budget B")
        ax.set_ylabel("ablated OPT / full OPT")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title("Candidate generation as a bottleneck")
        save(fig, "ablation.png", "OPT without the dropped candidate families, as a fraction of full OPT.")

    systems: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in _ok(records):
        for system, block in (r.get("systems") or {}).items():
            if isinstance(block, dict):
                for key, value in block.items():
                    if isinstance(value, (int, float)) and not isinstance(value, bool) and key.endswith("ratio"):
                        systems[system][key].append(float(value))
    if systems:
        names = sorted(systems)
        keys = sorted({k for s in systems.values() for k in s})
        fig, ax = plt.subplots(figsize=(1.5 + 1.4 * len(names), 4.2))
        width = 0.8 / max(1, len(keys))
        for k, key in enumerate(keys):
            ax.bar([i + k * width for i in range(len(names))],
                   [mean(systems[n][key]) if systems[n][key] else 0.0 for n in names], width, label=key)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("ratio to OPT(union)")
        ax.legend(fontsize=8)
        ax.set_title("External systems: extraction vs selection")
        save(fig, "systems.png", "Per system: extraction ceiling and selected-store ratios over OPT(union).")

    sizes = [(r["size"]["candidates"], r["seconds"]) for r in _ok(records)
             if isinstance(r.get("size"), dict) and isinstance(r.get("seconds"), (int, float))
             and r["size"].get("candidates")]
    if sizes:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        ax.scatter([s[0] for s in sizes], [max(s[1], 1e-6) for s in sizes], s=10, alpha=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("candidates")
        ax.set_ylabel("solver seconds")
        ax.grid(alpha=0.3, which="both")
        ax.set_title("Exact solver time against package size")
        save(fig, "solver_time.png", "Branch-and-bound seconds per (package, budget) against candidates.")

    statuses: dict[str, int] = defaultdict(int)
    for r in records:
        statuses[str(r.get("status"))] += 1
    page = ["<!doctype html><html><head><meta charset='utf-8'><title>memaudit report</title>",
            "<style>body{font-family:sans-serif;max-width:900px;margin:2em auto}img{max-width:100%}</style>",
            "</head><body>", f"<h1>memaudit report: {html.escape(str(results))}</h1>",
            f"<p>{len(records)} records; status counts: "
            + ", ".join(f"{html.escape(k)} {v}" for k, v in sorted(statuses.items())) + "</p>"]
    for path in written:
        page.append(f"<h2>{html.escape(path.stem)}</h2><p>{html.escape(captions[path.name])}</p>"
                    f"<img src='{html.escape(path.name)}' alt='{html.escape(path.stem)}'>")
    if not written:
        page.append("<p>No figure applies: the records hold no writer, ablation, system or size data.</p>")
    page.append("</body></html>")
    index = out / "index.html"
    index.write_text("\n".join(page), encoding="utf-8")
    written.append(index)
    return written
