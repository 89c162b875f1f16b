"""A batch budget that the branch-and-bound alone leaves open after BATCH_ALONE_SECONDS is solved
again with HiGHS racing it, as ``solve()`` does (experiments/batch_scoring.py): the record is
OPT, proven, and counts both solves; a node limit keeps the branch-and-bound alone; a race
that ends unproven keeps the better store and the smaller bound of the two solves."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memaudit_fast.experiments import batch_scoring
from memaudit_fast.experiments.batch import BatchOptions
from memaudit_fast.experiments.batch_scoring import lean_records, score_compiled
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve import exact
from memaudit_fast.solve.exact import solve
from memaudit_fast.suites.small import generate_package


@pytest.fixture(scope="module")
def compiled():
    return compile_package(Package.from_dict(generate_package("base", seed=3, scale=3)))


def budgets_of(compiled) -> list[float]:
    total = float(compiled.cost.sum())
    return [round(0.05 * total), round(0.2 * total)]


def test_a_budget_left_open_alone_is_raced_to_opt(compiled, monkeypatch) -> None:
    monkeypatch.setattr(batch_scoring, "BATCH_ALONE_SECONDS", 0.0)  # what the root does not prove stays open
    calls: list[float] = []
    raced = batch_scoring._raced_record

    def counted(compiled, first, limit, cancel):
        calls.append(float(first.budget))
        assert first.status == "time_limit"
        return raced(compiled, first, limit, cancel)

    monkeypatch.setattr(batch_scoring, "_raced_record", counted)
    budgets = budgets_of(compiled)
    records = lean_records(compiled, budgets, BatchOptions(writers=("greedy",)), None)
    assert budgets[1] in calls and set(calls) <= set(budgets)  # 20% is not proven at the root
    for budget, record in zip(budgets, records):
        alone = solve(compiled, budget=budget)  # the reference (a proof, whichever engine's)
        assert alone.proven_optimal
        assert record["status"] == "optimal" and record["proven_optimal"] is True
        assert record["budget"] == budget and record["proved_by"] in ("branch_and_bound", "highs", "root_lp")
        assert record["opt"] == pytest.approx(alone.value, rel=1e-9)
        assert record["upper_bound"] == pytest.approx(record["opt"], rel=1e-8)
        ids = {c: i for i, c in enumerate(compiled.candidate_ids)}
        assert float(compiled.objective(sorted(ids[c] for c in record["selected"]))) == pytest.approx(record["opt"], rel=1e-12)
        assert record["nodes"] >= 1 and record["seconds"] > 0
        greedy = record["writers"]["greedy"]  # scored against the raced OPT
        assert greedy["ratio"] == pytest.approx(greedy["value"] / record["opt"]) and greedy["ratio"] <= 1.0 + 1e-9


def test_the_full_path_races_too(compiled, monkeypatch) -> None:
    monkeypatch.setattr(batch_scoring, "BATCH_ALONE_SECONDS", 0.0)
    budgets = budgets_of(compiled)
    records = score_compiled(compiled, budgets, BatchOptions(certify="highs"), None)
    for budget, record in zip(budgets, records):
        assert record["status"] == "optimal"
        assert record["opt"] == pytest.approx(solve(compiled, budget=budget).value, rel=1e-9)
        assert record["certificate"]["agrees"] is True


def test_a_node_limit_keeps_the_branch_and_bound_alone(compiled, monkeypatch) -> None:
    monkeypatch.setattr(batch_scoring, "BATCH_ALONE_SECONDS", 0.0)

    def never(*args, **kwargs):
        raise AssertionError("a node limit must keep the branch-and-bound alone")

    monkeypatch.setattr(batch_scoring, "_raced_record", never)
    records = lean_records(compiled, budgets_of(compiled), BatchOptions(node_limit=5), None)
    assert all(r["proved_by"] in ("branch_and_bound", None) for r in records)


def test_a_time_limit_at_most_the_alone_seconds_keeps_it_alone(compiled, monkeypatch) -> None:
    def never(*args, **kwargs):
        raise AssertionError("a limit within BATCH_ALONE_SECONDS leaves no time for a race")

    monkeypatch.setattr(batch_scoring, "_raced_record", never)
    lean_records(compiled, budgets_of(compiled), BatchOptions(time_limit=batch_scoring.BATCH_ALONE_SECONDS), None)


def test_an_unproven_race_keeps_the_better_store_and_the_smaller_bound(compiled, monkeypatch) -> None:
    budget = budgets_of(compiled)[1]
    first = exact.solve_core(compiled.problem, [budget], None, None, None)[0]  # proven: a stand-in
    assert first.proven_optimal
    opt = float(first.value)

    class Open:  # the engine alone at its limit: OPT's store, a bound 1.0 above it
        def __getattr__(self, name):
            return getattr(first, name)

        status, proven_optimal, upper_bound, nodes, seconds = "time_limit", False, opt + 1.0, 7, 0.25

    def worse_race(compiled_, budget=None, time_limit=None, cancel=None):
        # A race stopped by the limit: a poorer store, but a tighter bound (0.4 above OPT).
        alone = solve(compiled_, budget=budget, finish=None, node_limit=50)
        return replace(alone, status="time_limit", proven_optimal=False, value=alone.value - 0.5,
                       upper_bound=opt + 0.4, nodes=11, seconds=0.5, proved_by=None)

    monkeypatch.setattr(exact, "solve", worse_race)
    record = batch_scoring._raced_record(compiled, Open(), 10.0, None)
    assert record is not None
    assert record["status"] == "time_limit" and record["proven_optimal"] is False
    assert record["opt"] == pytest.approx(opt) and record["upper_bound"] == pytest.approx(opt + 0.4)
    assert record["gap"] == pytest.approx(0.4 / (opt + 0.4))
    assert record["nodes"] == 7 + 11 and record["seconds"] == pytest.approx(0.75)


def test_finish_none_keeps_the_branch_and_bound_alone_and_is_not_digested(compiled, monkeypatch) -> None:
    from memaudit_fast.errors import UsageError

    monkeypatch.setattr(batch_scoring, "BATCH_ALONE_SECONDS", 0.0)

    def never(*args, **kwargs):
        raise AssertionError("finish=None must keep the branch-and-bound alone")

    monkeypatch.setattr(batch_scoring, "_raced_record", never)
    budgets = budgets_of(compiled)
    records = lean_records(compiled, budgets, BatchOptions(finish=None), None)
    assert [r["proved_by"] for r in records] == ["branch_and_bound"] * len(budgets)  # alone, to the end
    # Either way a record states OPT or proven bounds: a resume may change it.
    assert BatchOptions(finish=None).digest == BatchOptions().digest
    with pytest.raises(UsageError, match="finish"):
        BatchOptions(finish="highs")


def test_the_cli_takes_finish_none_and_its_resume_command_keeps_it(tmp_path) -> None:
    import shlex

    from memaudit_fast.cli.batch import resume_command
    from memaudit_fast.cli.main import build_parser

    args = build_parser().parse_args(["batch", "set.jsonl", "--out", str(tmp_path / "r.jsonl"), "--finish", "none"])
    assert args.finish == "none" and "--finish none" in resume_command(args)
    plain = build_parser().parse_args(["batch", "set.jsonl", "--out", str(tmp_path / "r.jsonl")])
    assert plain.finish == "auto" and "--finish" not in shlex.split(resume_command(plain))
