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
    module = sys.modules.get("bench_solver")
    large: list[dict[str, Any]] = getattr(module, "LARGE_ROWS", [])
    if large:
        _large_summary(terminalreporter.write_line, large)
    rows: list[dict[str, Any]] = getattr(module, "SOLVER_ROWS", [])
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


def _large_summary(write: Any, rows: list[dict[str, Any]]) -> None:
    write("")
    from memaudit_fast.solve.exact import DEFAULT_HANDOFF_AFTER

    write("large-budget suite: ours (branch-and-bound, HiGHS racing it in a second thread from "
          f"{DEFAULT_HANDOFF_AFTER:g} s) against HiGHS and Gurobi alone on the original MILP, one budget per case"
          f" (packages of seed {getattr(sys.modules.get('bench_solver'), 'LARGE_SEED', 0)})")
    bench = sys.modules.get("bench_solver")
    write(f"times: the median of {getattr(bench, 'LARGE_RUNS', 1)} runs, ours and HiGHS alternating, where the first "
          f"run of each ends within {getattr(bench, 'LARGE_REPEAT_UNDER', 0):g} s (runs: how many); else one run")
    write(f"{'case':24s} {'cands':>6s} {'ours':>10s} {'status':>10s} {'proved_by':>16s} {'HiGHS':>10s} "
          f"{'ratio':>8s} {'Gurobi':>10s} {'ratio':>8s} {'runs':>5s}")
    ratios: list[float] = []
    slowest = 0.0
    unproven = {"ours": 0, "highs": 0, "gurobi": 0}
    missed = 0  # cases HiGHS proves and ours does not
    under: list[str] = []  # cases HiGHS proves faster than ours
    over: list[str] = []  # of those, cases where ours takes more than 1.5x HiGHS's time
    for row in rows:
        ours_done = row["status"] == "optimal"
        h = row["highs_seconds"]
        ratio = h / row["ours_seconds"]
        ratios.append(ratio)
        unproven["ours"] += not ours_done
        unproven["highs"] += not row["highs_proved"]
        if row["highs_proved"]:
            slowest = max(slowest, row["ours_seconds"] / h)
            missed += not ours_done
            if row["ours_seconds"] > h:
                under.append(row["case"])
            if row["ours_seconds"] > 1.5 * h:
                over.append(row["case"])
        g = row.get("gurobi_seconds")
        if g is None:
            g_text, gr_text = "-", "-"
        else:
            unproven["gurobi"] += not row["gurobi_proved"]
            g_text = f"{g:8.3f}s" + ("" if row["gurobi_proved"] else "+")
            gr_text = f"{g / row['ours_seconds']:.1f}x"
        ours_text = f"{row['ours_seconds']:8.3f}s" + ("" if ours_done else "+")
        h_text = f"{h:8.3f}s" + ("" if row["highs_proved"] else "+")
        ratio_text = ("<" if not ours_done else ">" if not row["highs_proved"] else " ") + f"{ratio:.2f}x"
        write(f"{row['case']:24s} {row['candidates']:6d} {ours_text:>10s} {row['status']:>10s} "
              f"{row['proved_by']:>16s} {h_text:>10s} {ratio_text:>8s} {g_text:>10s} {gr_text:>8s} "
              f"{row.get('runs', 1):5d}")
    if ratios:
        write(f"median HiGHS time / ours: {statistics.median(ratios):.2f}x over {len(ratios)} cases; "
              f"slowest case where HiGHS proves: ours {slowest:.2f}x HiGHS's time")
        write(f"cases under HiGHS's speed: {len(under)}; over 1.5x HiGHS's time: {len(over)}"
              + (f" ({', '.join(over)})" if over else ""))
    gurobi_cases = sum(r.get("gurobi_seconds") is not None for r in rows)
    write(f"unproven: ours {unproven['ours']}, HiGHS {unproven['highs']}, Gurobi {unproven['gurobi']} "
          f"(of the {gurobi_cases} its licence took); cases HiGHS proves and ours does not: {missed}; "
          f"proved first by the racing HiGHS: {sum(r['proved_by'] == 'highs' for r in rows)}; "
          f"with the root LP's bound: {sum(r['proved_by'] == 'root_lp' for r in rows)}")
