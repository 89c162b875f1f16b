"""memaudit certify: results matched by package id, failures reported with exit codes."""

from __future__ import annotations

import json

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.model.examples import example_package
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import write_package_set
from oracles.packages import claim, hard_package, small_package
from oracles.writers import brute_force


def write_results(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture
def package_set(tmp_path):
    out = tmp_path / "set.jsonl"
    write_package_set([example_package(), small_package(), hard_package()], out)
    return str(out)


def good_claims() -> list[dict]:
    records = []
    for pkg in (example_package(), small_package()):
        for budget in pkg.budgets:
            value, ids = brute_force(pkg, budget)
            records.append(claim(pkg, budget, value, ids))
    return records


def test_correct_results_certify_with_exit_0(tmp_path, package_set, capsys):
    results = write_results(tmp_path / "r.jsonl", good_claims())
    assert main(["certify", results, "--package", package_set, "--solver", "highs", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 4
    assert all(r["certificate"]["agrees"] is True and r["certificate"]["solver"] == "highs" for r in lines)
    # Records come back whole, in input order.
    assert [r["budget"] for r in lines] == [8.0, 16.0, 32.0, 3.0]


def test_infeasible_wrong_and_orphan_results_exit_3(tmp_path, package_set, capsys):
    pkg = small_package()
    records = good_claims() + [
        claim(pkg, 3, 3.0, ["a", "b"]),  # two of group g1
        claim(pkg, 3, 2.0, ["a"]),  # feasible but not optimal
        {**claim(pkg, 3, 3.0, ["a", "c"]), "package_id": "nowhere"},
    ]
    results = write_results(tmp_path / "r.jsonl", records)
    assert main(["certify", results, "--package", package_set, "--solver", "highs"]) == 3
    out, err = capsys.readouterr()
    assert "group 'g1' holds 2" in out
    assert "above the claimed bound" in out
    assert "no package 'nowhere'" in out
    assert "3 failed" in err


def test_time_limited_milp_exits_3(tmp_path, package_set, capsys):
    pkg = hard_package()
    from memaudit_fast.model.compiled import compile_package

    value = compile_package(pkg).objective([0])
    results = write_results(tmp_path / "r.jsonl", [
        {**claim(pkg, 60, value, ["c0"]), "status": "time_limit", "upper_bound": 1e9},
        {"format": "memaudit.result/1", "package_id": "hard", "status": "error", "error": "boom"},
    ])
    code = main(["certify", results, "--package", package_set, "--solver", "highs", "--time-limit", "1e-6", "--json"])
    assert code == 3
    certs = [json.loads(line)["certificate"] for line in capsys.readouterr().out.splitlines()]
    assert certs[0]["status"] == "time_limit" and certs[0]["agrees"] is None
    assert certs[1]["status"] == "not_certified" and certs[1]["agrees"] is None


def test_single_package_path_and_bad_results_file(tmp_path, capsys):
    pkg_path = tmp_path / "p.json"
    pkg_path.write_text(json.dumps(small_package().data), encoding="utf-8")
    value, ids = brute_force(small_package(), 3)
    ok = write_results(tmp_path / "ok.jsonl", [claim(small_package(), 3, value, ids)])
    assert main(["certify", ok, "--package", str(pkg_path), "--solver", "highs"]) == 0
    bad = write_results(tmp_path / "bad.jsonl", [{"format": "something/else"}])
    assert main(["certify", bad, "--package", str(pkg_path)]) == 2
    assert "memaudit.result/1" in capsys.readouterr().err


def test_log1p_results_are_bracketed(tmp_path, capsys):
    pkg = Package.from_dict({**small_package().data, "objective": {"saturation": "log1p"}})
    pkg_path = tmp_path / "p.json"
    pkg_path.write_text(json.dumps(pkg.data), encoding="utf-8")
    value, ids = brute_force(pkg, 3)
    results = write_results(tmp_path / "r.jsonl", [claim(pkg, 3, value, ids)])
    assert main(["certify", results, "--package", str(pkg_path), "--solver", "highs", "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)["certificate"]
    assert cert["agrees"] is None and cert["bracket"]["contains_result"] is True


def test_a_package_id_twice_in_the_set_leaves_its_results_unverified(tmp_path, capsys):
    # The second package of id p differs (c costs 1 there): a result right for it must not be
    # failed against the first, nor a result right for the first be certified by chance.
    base = small_package()
    other = Package.from_dict({**base.data, "candidates": [dict(c, cost=c["cost"] + 1) for c in base.data["candidates"]]})
    sets = tmp_path / "dup.jsonl"
    write_package_set([base, other], sets)
    records = [claim(other, b, *brute_force(other, b)) for b in other.budgets]
    results = write_results(tmp_path / "r.jsonl", records)
    assert main(["certify", results, "--package", str(sets), "--solver", "highs", "--json"]) == 3
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines and all(r["certificate"]["agrees"] is None and "more than once" in r["certificate"]["issues"][0]
                         for r in lines)
