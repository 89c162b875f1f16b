"""The command surface: an unknown option is reported by its subcommand, a repeated id or
writer is never shown two ways."""

from __future__ import annotations

import json

import pytest

import memaudit_fast as ma
from memaudit_fast.cli.main import main


@pytest.fixture(scope="module")
def pkg_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("pkg") / "p.json"
    path.write_text(json.dumps(ma.load_package(ma.example_package_path()).data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("argv", "command", "named"), [
    (["solve", "{p}", "--bogus"], "solve", "--bogus"),
    (["solve", "--bogus", "{p}", "--budget", "4"], "solve", "--bogus"),
    (["score", "{p}", "--ids", "a", "--nope=3"], "score", "--nope=3"),
    (["score", "{p}", "--ids", "a", "stray"], "score", "stray"),
    (["validate", "{p}", "-z"], "validate", "-z"),
    (["info", "{p}", "--bogus", "--other"], "info", "--bogus --other"),
    (["sweep", "{p}", "--budgets", "4", "--writer", "gvt", "--x"], "sweep", "--x"),
])
def test_an_unknown_option_shows_the_subcommand_usage(pkg_path, capsys, argv, command, named):
    assert main([a.format(p=pkg_path) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"usage: memaudit {command} " in err
    assert "usage: memaudit [-h]" not in err
    assert f"memaudit {command}: error: unrecognized arguments: {named}" in err


def test_an_unknown_option_before_the_command_stays_top_level(pkg_path, capsys):
    assert main(["--bogus", "solve", pkg_path]) == 2
    err = capsys.readouterr().err
    assert "usage: memaudit [-h]" in err and "unrecognized arguments: --bogus" in err


def test_known_options_still_parse(pkg_path, capsys):
    assert main(["solve", pkg_path, "--budget", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["budget"] == 4


def test_score_shows_one_cost_for_a_repeated_id(pkg_path, capsys):
    first = ma.load_package(pkg_path).candidates[0]
    cid, cost = first["candidate_id"], float(first["cost"])
    assert main(["score", pkg_path, "--ids", f"{cid},{cid}", "--budget", f"{cost / 2!r}", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["cost"] == cost and not record["feasible"]
    assert record["reason"].startswith(f"listed more than once: {cid!r}")
    assert f"cost {cost:g} exceeds" in record["reason"]
    assert f"cost {2 * cost:g}" not in record["reason"]


@pytest.mark.parametrize("writers", ["gvt,gvt", "gvt,density_only,gvt", "density_only,gvt,density_only,gvt"])
def test_sweep_refuses_a_writer_named_twice(pkg_path, capsys, writers):
    assert main(["sweep", pkg_path, "--budgets", "4", "--writers", writers, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "--writers names" in err and "more than once" in err


def test_sweep_with_distinct_writers_has_one_column_each(pkg_path, capsys):
    assert main(["sweep", pkg_path, "--budgets", "4", "--writers", "gvt,density_only", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert sorted(record["writers"]) == ["density_only", "gvt"]
