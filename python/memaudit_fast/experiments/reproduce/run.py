"""Run a whole reproduction and write its files (``reproduce.json``, ``reproduce.md``,
``records.jsonl``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ...model.jsonio import dumps
from ...model.outputs import OutputPath
from .config import (
    FORMAT,
    PAPER_DENSITY_ONLY,
    PAPER_INVALIDATION,
    PAPER_LABEL_MAD,
    PAPER_NO_TOMBSTONE,
    PAPER_STRESS_NO_TOMBSTONE_B6,
    PARTIAL_LEVEL,
    RANKED_WRITERS,
    TABLE_WRITERS,
    WEIGHT_SIGMA_PER_P,
    ReproduceConfig,
    Reproduction,
)
from .measure import locomo_records, small_records
from .render import render_markdown
from .summary import comparison_rows, summarize


def run_reproduction(cfg: ReproduceConfig, *, command: str = "",
                     progress: Callable[[str], None] | None = None,
                     track: Callable[[str, int | None], Any] | None = None) -> Reproduction:
    """Run every measurement of ``cfg`` and summarize it.

    ``track(label, total)`` returns a :class:`~memaudit_fast.progress.Progress` (or anything with
    ``update()`` and ``close()``) counting the packages of each part.
    """
    cfg.check()
    start = time.perf_counter()
    if progress:
        progress(f"MEMAUDIT-Small: {len(cfg.distributions)} distribution(s) x {cfg.seeds} seed(s)")
    bar = track("MEMAUDIT-Small", len(cfg.distributions) * cfg.seeds) if track else None
    small = small_records(cfg, bar.update if bar is not None else None)
    if bar is not None:
        bar.close()
    small_seconds = time.perf_counter() - start
    if progress and cfg.locomo:
        progress(f"LoCoMo natural packages from {cfg.locomo}")
    bar = track("LoCoMo", cfg.locomo_limit) if track and cfg.locomo else None
    locomo = locomo_records(cfg, bar.update if bar is not None else None)
    if bar is not None:
        bar.close()
    result = Reproduction(cfg, small, locomo, time.perf_counter() - start, command,
                          small_seconds=small_seconds)
    result.summary = {"small": summarize(small, cfg.noise_levels),
                      "locomo": summarize(locomo, cfg.noise_levels)}
    return result


def reproduction_json(run: Reproduction) -> dict[str, Any]:
    """The ``reproduce.json`` document (per-package records go to ``records.jsonl``)."""
    return {
        "format": FORMAT,
        "command": run.command,
        "config": asdict(run.config),
        "seconds": run.seconds,
        "seconds_small": run.small_seconds,
        "aggregation": "mean of per-package ratios F(X)/OPT (OPT = 0 scores 1); 'overall' "
                       "pools every package of every distribution",
        "writers_ranked": list(RANKED_WRITERS),
        "table_writers": list(TABLE_WRITERS),
        "noise_model": {"partial_level": PARTIAL_LEVEL,
                        "weight_sigma": f"{WEIGHT_SIGMA_PER_P} * p",
                        "stores": "chosen on the clean package, re-scored on the noisy one"},
        "paper": {
            "density_only": _keyed(PAPER_DENSITY_ONLY),
            "no_tombstone_opt": _keyed(PAPER_NO_TOMBSTONE),
            "stress_no_tombstone_b6": PAPER_STRESS_NO_TOMBSTONE_B6,
            "invalidation_covered": {w: _keyed(v) for w, v in PAPER_INVALIDATION.items()},
            "label_ratio_mad": PAPER_LABEL_MAD,
        },
        "small": run.summary.get("small"),
        "locomo": run.summary.get("locomo"),
        "comparison": comparison_rows(run),
    }


def _keyed(d: dict[float, float]) -> dict[str, float]:
    return {f"{k:g}": v for k, v in d.items()}


# --- files ----------------------------------------------------------------------------------

OUTPUT_NAMES = ("reproduce.json", "reproduce.md", "records.jsonl")


def check_outputs(cfg: ReproduceConfig, out_dir: str | Path, *, overwrite: bool = False) -> list[OutputPath]:
    """The run's output files in ``out_dir``, checked: never the ``--locomo`` input (nor a
    hard link to it), existing ones only with ``overwrite``. Called before a long run."""
    inputs = (Path(cfg.locomo),) if cfg.locomo else ()
    out = Path(out_dir)
    return [OutputPath(out / name, inputs=inputs, force=overwrite).check() for name in OUTPUT_NAMES]


def write_outputs(run: Reproduction, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write ``reproduce.json`` (tables), ``reproduce.md`` (report) and ``records.jsonl``
    (one line per package) into ``out_dir``; existing files only with ``overwrite``, the
    run's own input never."""
    outputs = check_outputs(run.config, out_dir, overwrite=overwrite)
    document = dumps(reproduction_json(run)) + "\n"
    markdown = render_markdown(run)
    outputs[0].write_text(document)
    outputs[1].write_text(markdown)

    def lines(handle: Any) -> None:
        for record in [*run.small, *run.locomo]:
            handle.write(dumps(record, indent=None) + "\n")

    outputs[2].write(lines)
    return [o.path for o in outputs]


def __getattr__(name: str) -> Any:
    """The names this module held before the split (config, measures, summaries, the report)
    still resolve here, so that imports from ``experiments.reproduce.run`` keep working."""
    from . import config, measure, render, summary

    for module in (config, measure, summary, render):
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
