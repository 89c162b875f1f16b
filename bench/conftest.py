"""Shared by the benchmark modules: the summary of the solver benchmark, printed at the end."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

# The references the benchmarks check against (tests/oracles) and the test strategies.
TESTS = Path(__file__).resolve().parents[1] / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))



def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    """Collect ``bench_*.py`` too, so ``pytest bench/`` runs every benchmark module."""
    if file_path.suffix == ".py" and file_path.name.startswith("bench_") and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}x over {len(values)} cases" if values else "n/a"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # One dict per case, filled by bench_solver.py as it runs.
    rows: list[dict[str, Any]] = getattr(sys.modules.get("bench_solver"), "SOLVER_ROWS", [])
    if not rows:
        return
    write = terminalreporter.write_line
    write("")
    write("exact solver against its peers (times per case, all budgets of the case)")
    header = (f"{'case':34s} {'budgets':>8s} {'ours':>11s} {'status':>10s} {'HiGHS':>12s} {'ratio':>9s} "
              f"{'Python':>12s} {'ratio':>9s}")
    write(header)
    both_proved: list[float] = []
    every_case: list[float] = []
    python_ratios: list[float] = []
    for row in rows:
        ours_done = row["status"] == "optimal"
        h = row["highs_seconds"]
        hr = h / row["ours_seconds"]
        every_case.append(hr)
        if row["highs_proved"] and ours_done:
            both_proved.append(hr)
        ours_text = f"{row['ours_seconds']:9.4f}s" + ("" if ours_done else "+")
        h_text = f"{h:10.3f}s" + ("" if row["highs_proved"] else "+")
        ratio_text = ("<" if not ours_done else ">" if not row["highs_proved"] else " ") + f"{hr:.1f}x"
        p = row.get("python_seconds")
        if p is None:
            p_text, pr_text = "-", "-"
        else:
            pr = p / row["ours_seconds"]
            p_text = f"{p:10.3f}s" + ("" if row["python_proved"] else "+")
            pr_text = ("" if row["python_proved"] else ">") + f"{pr:.0f}x"
            if row["python_proved"] and ours_done:
                python_ratios.append(pr)
        write(f"{row['case']:34s} {row['budgets']:8d} {ours_text:>11s} {row['status']:>10s} "
              f"{h_text:>12s} {ratio_text:>9s} {p_text:>12s} {pr_text:>9s}")
    write("('+': that solver hit its time limit, so its time is a lower bound and the ratio a bound: "
          "'>' at least, '<' at most)")
    write(f"median speed-up over HiGHS where both proved optimality: {_median(both_proved)}")
    write(f"median speed-up over HiGHS, all cases (times at their limits): {_median(every_case)}")
    write(f"median speed-up over the Python reference where it finished: {_median(python_ratios)}")
