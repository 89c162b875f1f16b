"""The promises of the README's "Guarantees" section, each with a test that fails if it breaks."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from memaudit_fast.experiments.batch import BatchOptions, run_batch
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.solve.exact import CancelToken, solve
from memaudit_fast.suites.small import DISTRIBUTIONS, generate_package
from oracles.packages import strongly_correlated_knapsack


def test_threads_solving_different_packages_agree_with_one_thread():
    packages = [compile_package(generate_package(d, seed=s, scale=3)) for d in DISTRIBUTIONS for s in range(3)]
    budgets = [2.0, 8.0, 32.0]
    # The branch-and-bound alone: a racing HiGHS may prove first with another store of equal value.
    expected = [[(r.value, r.selected, r.status) for r in solve(p, budgets=budgets, finish=None)] for p in packages]
    got: dict[int, list] = {}

    def work(k: int) -> None:
        for _ in range(3):
            got.setdefault(k, []).append(
                [(r.value, r.selected, r.status) for r in solve(packages[k], budgets=budgets, finish=None)])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(packages))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, runs in got.items():
        assert all(run == expected[k] for run in runs), packages[k].package_id


def test_cancel_from_another_thread_is_prompt_and_honest():
    compiled = compile_package(strongly_correlated_knapsack())
    token = CancelToken()
    out: dict = {}
    started = threading.Event()

    def run() -> None:
        started.set()
        # The search alone: the root LP's c-MIR cuts prove this knapsack in 0.02 s.
        out["result"] = solve(compiled, time_limit=60, cancel=token, finish=None)[0]
        out["done"] = time.monotonic()

    thread = threading.Thread(target=run)
    thread.start()
    # Cancel once the solve is under way; whenever it lands (before the search or inside it),
    # the answer must be prompt, interrupted and bounded.
    assert started.wait(timeout=10)
    cancelled_at = time.monotonic()
    token.cancel()
    thread.join(timeout=10)
    assert not thread.is_alive()
    result = out["result"]
    assert result.status == "interrupted" and not result.proven_optimal
    assert out["done"] - cancelled_at < 1.0
    assert result.upper_bound >= result.value > 0
    # No corrupt state: the same compiled package solves again, with the same limits honoured.
    again = solve(compiled, node_limit=1000)[0]
    assert again.status == "node_limit" and again.upper_bound >= result.value - 1e-9


def test_limits_never_claim_optimal_and_bound_the_optimum():
    compiled = compile_package(strongly_correlated_knapsack(120, seed=3))
    for kwargs, status in (({"node_limit": 50}, "node_limit"), ({"time_limit": 0.05}, "time_limit")):
        result = solve(compiled, **kwargs, finish=None)[0]  # the search's own limits (HiGHS takes 0.04 s here)
        assert result.status == status and not result.proven_optimal
        assert result.upper_bound >= result.value
        assert result.gap == pytest.approx((result.upper_bound - result.value) / result.upper_bound)


def test_adversarial_size_stops_within_limits(monkeypatch):
    # ~10^6 non-zeros: either solved or stopped honestly by the time limit, never a crash.
    rng = np.random.default_rng(5)
    n, m = 2000, 1000
    units = [{"unit_id": f"u{r}", "weight": 1.0} for r in range(m)]
    cands = []
    for i in range(n):
        cols = rng.choice(m, size=500, replace=False)
        cands.append({"candidate_id": f"c{i}", "experience_id": None, "cost": int(rng.integers(1, 5)),
                      "coverage": {f"u{int(r)}": 0.5 for r in cols}})
        del cands[-1]["experience_id"]
    data = {"format": "memaudit.package/1", "package_id": "big", "units": units, "candidates": cands, "budgets": [6]}
    compiled = compile_package(data)
    assert compiled.indices.size == n * 500
    result = solve(compiled, time_limit=2.0)[0]
    assert result.status in ("optimal", "time_limit")
    assert result.upper_bound >= result.value > 0
    monkeypatch.setenv("MEMAUDIT_MAX_NONZEROS", "100000")
    with pytest.raises(Exception, match="above the limit"):
        compile_package(data)


def test_results_are_byte_identical_apart_from_timings(tmp_path):
    packages = [generate_package(d, seed=7) for d in DISTRIBUTIONS]
    write_package_set(packages, tmp_path / "set.jsonl")
    outputs = []
    for k in range(2):
        out = tmp_path / f"out{k}.jsonl"
        run_batch([tmp_path / "set.jsonl"], out, BatchOptions(budgets=(2, 8), writers=("gvt", "greedy")),
                  workers=2, backend="local" if k else "serial")
        lines = []
        for line in out.read_text().splitlines():
            record = json.loads(line)
            record.pop("seconds")
            record.get("certificate", {}).pop("seconds", None)
            lines.append(json.dumps(record, sort_keys=False))
        outputs.append("\n".join(lines))
    assert outputs[0] == outputs[1]
