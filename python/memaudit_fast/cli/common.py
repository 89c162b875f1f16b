"""Small helpers shared by subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_subparser(subparsers: Any, name: str, summary: str, example: str) -> argparse.ArgumentParser:
    """A subparser whose --help ends with a worked example."""
    return subparsers.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def print_json_line(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    """A plain aligned table (no colour, so it pipes cleanly)."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for k, row in enumerate(cells):
        print("  ".join(c.rjust(w) if k and _numeric(c) else c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def number_list(text: str) -> list[float]:
    """Parse '2,4,8' (argparse type): finite numbers >= 0."""
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a number (expected e.g. 2,4,8)") from None
        if not (value >= 0) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{part!r} must be a finite number >= 0")
        values.append(value)
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number, e.g. 2,4,8")
    return values


def name_list(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]
