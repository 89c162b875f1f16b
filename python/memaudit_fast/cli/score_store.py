"""memaudit score-store: diagnostic ratios of imported stores over OPT(union)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from .common import add_subparser, load_one, name_list, number_list, print_json_line, print_table


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_subparser(
        subparsers, "score-store",
        "Score the systems of a union package (from 'memaudit import'). Per system and budget: "
        "full store (0 when it exceeds the budget), recency- and salience-pruned stores, and "
        "the best budget-feasible subset of the system's own memories, solved exactly "
        "(extraction ceiling) beside the greedy estimate, each over OPT(union) and over the "
        "package's own OPT. Selection quality = pruned value / exact ceiling.",
        "memaudit score-store union.json --system mem0 --budgets 50,100 --json",
    )
    p.add_argument("union", metavar="UNION.json", help="union package written by 'memaudit import' (- for stdin)")
    p.add_argument("--system", type=name_list, action="extend", metavar="NAME[,NAME]",
                   help="systems to report (repeatable; default: all in the union)")
    p.add_argument("--budgets", type=number_list, metavar="B,...",
                   help="budgets in the package's cost units (default: the package's own)")
    p.add_argument("--time-limit", type=float, metavar="S",
                   help="seconds per exact solve; a stopped solve reports its incumbent and bound")
    p.add_argument("--json", action="store_true",
                   help="one memaudit.result/1-like JSON line per budget, with a 'systems' block")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..systems.diagnostics import score_store

    union = load_one(args.union)
    records = score_store(union, args.budgets, args.system, time_limit=args.time_limit)
    if args.json:
        for record in records:
            print_json_line(record)
        return 0
    rows = []
    for rec in records:
        for name, block in rec["systems"].items():
            rows.append([
                name, rec["budget"], rec["opt"], rec["package_opt"]["value"], block["memories"],
                block["store_cost"], _r(block["full_store_ratio"]), _r(block["recency_pruned_ratio"]),
                _r(block["salience_pruned_ratio"]), _r(block["upper_pruned_ratio"]),
                _r(block["upper_pruned_greedy_ratio"]), _r(block["recency_selection_quality"]),
            ])
    print_table(
        ["system", "budget", "OPT(union)", "OPT(pkg)", "memories", "cost", "full", "recency",
         "salience", "upper", "upper_greedy", "rec/upper"],
        rows,
    )
    notes = merged_notes(records)
    unproven = [rec["budget"] for rec in records if not rec["proven_optimal"]]
    if unproven:
        print(f"note: OPT(union) not proven at budgets {unproven}; ratios use the incumbent")
    for line in notes:
        print(f"note: {line}")
    return 0


def merged_notes(records: list[dict[str, Any]]) -> list[str]:
    """Each note once: the same reason at several budgets is one line listing the budgets."""
    merged: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    for rec in records:
        shown = f"{rec['budget']:g}"
        for name, block in rec["systems"].items():
            for key, why in block["reasons"].items():
                text = re.sub(rf"(?<![\w.]){re.escape(shown)}(?![\w.])", "B", str(why))
                merged.setdefault((name, key, text), []).append((shown, str(why)))
    out = []
    for (name, key, text), seen in merged.items():
        if len(seen) == 1:
            out.append(f"{name} @ {seen[0][0]}: {key}: {seen[0][1]}")
        else:
            out.append(f"{name} @ B = {', '.join(b for b, _ in seen)}: {key}: {text}")
    return out


def _r(value: float | None) -> Any:
    return "-" if value is None else round(value, 4)
