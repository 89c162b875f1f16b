"""memaudit reproduce: the paper's findings measured on this project's suites."""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import replace
from typing import Any

from ..experiments.reproduce import (
    CLI_OPTIONS,
    DEFAULT_NOISE,
    DEFAULT_SEEDS,
    QUICK_NOISE,
    QUICK_SEEDS,
    ReproduceConfig,
    check_outputs,
    render_markdown,
    reproduction_json,
    run_reproduction,
    write_outputs,
)
from ..model.jsonio import dumps
from ..progress import Progress
from ..suites.small import DISTRIBUTIONS
from .common import add_quiet, add_subparser, name_list, number_list


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_subparser(
        subparsers, "reproduce",
        "Reproduce the MEMAUDIT paper's findings (writers vs exact OPT, no-tombstone ablation, "
        "rank stability across cost models and under annotation noise) and write a report.",
        "memaudit reproduce --out repro/ --locomo locomo10.json",
    )
    p.description = (
        "Generate MEMAUDIT-Small packages over every stress distribution and seeds 0..N-1, solve "
        "each exactly, run the baseline writers, and report next to the paper's figures: "
        "density-only / greedy / GVT as a fraction of OPT, OPT without tombstone/update "
        "candidates as a fraction of full OPT, Kendall tau of writer rankings between the words "
        "and bytes cost models and under annotation noise. With --locomo, the same on the "
        "LoCoMo natural packages. Writes DIR/reproduce.json, DIR/reproduce.md and "
        "DIR/records.jsonl (one line per package) and prints the markdown report. Figures are "
        "means of per-package ratios. The default run (500 seeds, the paper's count, x 8 "
        "distributions: 4000 packages, 96000 exact solves) takes under two minutes on two "
        "cores, LoCoMo about 30 s more; --quick takes about a second."
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--seeds", type=int, metavar="N",
                   help=f"seeds per distribution (default {DEFAULT_SEEDS}, --quick {QUICK_SEEDS})")
    p.add_argument("--budgets", type=number_list, metavar="B,...",
                   help="words budgets of the synthetic packages (default 2,4,8,16)")
    p.add_argument("--distributions", type=name_list, metavar="NAME,...",
                   help="stress distributions (default all: " + ", ".join(DISTRIBUTIONS) + ")")
    p.add_argument("--noise", type=number_list, metavar="P,...",
                   help="annotation-noise flip probabilities (default "
                        f"{','.join(f'{x:g}' for x in DEFAULT_NOISE)}, --quick "
                        f"{','.join(f'{x:g}' for x in QUICK_NOISE)})")
    p.add_argument("--noise-seed", type=int, default=0, metavar="S",
                   help="seed of the annotation noise (>= 0; default 0)")
    p.add_argument("--locomo", metavar="PATH", help="a LoCoMo JSON file (data/locomo10.json of the LoCoMo repository)")
    p.add_argument("--locomo-limit", type=int, metavar="N",
                   help="only the first N conversations (default all; --quick 1)")
    p.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="exact-solve time limit per budget for synthetic packages (default 10)")
    p.add_argument("--locomo-time-limit", type=float, metavar="SECONDS",
                   help="exact-solve time limit per budget for LoCoMo packages (default 5; "
                        "unproven solves are counted and scored against the best store found)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="processes for the synthetic packages (default 1)")
    p.add_argument("--quick", action="store_true",
                   help="a few-second run: 2 seeds, one noise level, one LoCoMo conversation")
    p.add_argument("--force", action="store_true",
                   help="replace existing output files (never the --locomo input, never through a symbolic link)")
    p.add_argument("--no-print", action="store_true", help="do not print the report")
    p.add_argument("--json", action="store_true",
                   help="print the reproduce.json document instead of the markdown report")
    add_quiet(p)
    p.set_defaults(run=run)
    return p


def config_from_args(args: argparse.Namespace) -> ReproduceConfig:
    """The run configuration: --quick defaults, then every option given explicitly."""
    cfg = ReproduceConfig.quick_config() if args.quick else ReproduceConfig()
    overrides: dict[str, Any] = {"noise_seed": args.noise_seed, "workers": args.workers,
                                 "locomo": args.locomo}
    if args.seeds is not None:
        overrides["seeds"] = args.seeds
    if args.budgets is not None:
        overrides["budgets"] = tuple(args.budgets)
    if args.distributions is not None:
        overrides["distributions"] = tuple(args.distributions)
    if args.noise is not None:
        overrides["noise_levels"] = tuple(args.noise)
    if args.locomo_limit is not None:
        overrides["locomo_limit"] = args.locomo_limit
    if args.time_limit is not None:
        overrides["time_limit"] = args.time_limit
    if args.locomo_time_limit is not None:
        overrides["locomo_time_limit"] = args.locomo_time_limit
    return replace(cfg, **overrides)


def command_line(cfg: ReproduceConfig, out: str) -> str:
    """The explicit command that repeats this run (every default spelled out)."""
    parts = ["memaudit", "reproduce", "--out", out, "--seeds", str(cfg.seeds),
             "--budgets", ",".join(f"{b:g}" for b in cfg.budgets)]
    if tuple(cfg.distributions) != DISTRIBUTIONS:
        parts += ["--distributions", ",".join(cfg.distributions)]
    if cfg.noise_levels:
        parts += ["--noise", ",".join(f"{x:g}" for x in cfg.noise_levels)]
    if cfg.locomo:
        parts += ["--locomo", cfg.locomo]
        if cfg.locomo_limit is not None:
            parts += ["--locomo-limit", str(cfg.locomo_limit)]
    if cfg.workers != 1:
        parts += ["--workers", str(cfg.workers)]
    return " ".join(shlex.quote(p) for p in parts)


def run(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    cfg.check(CLI_OPTIONS)
    check_outputs(cfg, args.out, overwrite=args.force)  # fail before a long run, not after it
    command = command_line(cfg, args.out)
    result = run_reproduction(
        cfg, command=command,
        track=lambda label, total: Progress(label, total, unit="package", quiet=args.quiet),
    )
    paths = write_outputs(result, args.out, overwrite=args.force)
    if args.json:
        print(dumps(reproduction_json(result)))
    elif not args.no_print:
        print(render_markdown(result))
    if not args.quiet:
        for path in paths:
            print(f"wrote {path}", file=sys.stderr)
    return 0
