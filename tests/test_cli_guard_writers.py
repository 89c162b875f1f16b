"""``--writers`` of sweep and batch: an empty list or a writer named twice is refused (exit 2,
the option named, nothing solved or written), as eval-retrieval refuses an empty list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.model.examples import example_package_path

EMPTY = "--writers is empty; give writer names, e.g. gvt,greedy, or leave the option out"


@pytest.fixture
def package() -> str:
    return str(example_package_path())


@pytest.mark.parametrize("given", [["--writers", ""], ["--writers", "  "], ["--writers="]])
def test_sweep_refuses_an_empty_writer_list(package, capsys, given):
    assert main(["sweep", package, "--budgets", "8", "--json", *given]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing solved
    assert EMPTY in captured.err
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("given", [["--writers", ""], ["--writers", " "], ["--writers="]])
def test_batch_refuses_an_empty_writer_list_and_writes_nothing(package, tmp_path, capsys, given):
    out = tmp_path / "results.jsonl"
    assert main(["batch", package, "--out", str(out), "--budgets", "8", "--quiet", *given]) == 2
    assert EMPTY in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(("given", "named"), [
    ("gvt,gvt", "'gvt'"),
    ("gvt, greedy ,gvt,greedy", "'gvt', 'greedy'"),
])
def test_batch_refuses_a_writer_named_twice_as_sweep_does(package, tmp_path, capsys, given, named):
    out = tmp_path / "results.jsonl"
    assert main(["batch", package, "--out", str(out), "--budgets", "8", "--quiet", "--writers", given]) == 2
    err = capsys.readouterr().err
    assert f"--writers names {named} more than once; name each writer once" in err
    assert not out.exists()
    assert main(["sweep", package, "--budgets", "8", "--json", "--writers", given]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"--writers names {named} more than once" in captured.err


def test_a_resume_with_a_repeated_writer_leaves_the_file_as_it_was(package, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    assert main(["batch", package, "--out", str(out), "--budgets", "8", "--quiet", "--writers", "gvt"]) == 0
    before = out.read_bytes()
    assert main(["batch", package, "--out", str(out), "--budgets", "8", "--quiet", "--writers", "gvt,gvt",
                 "--resume"]) == 2
    assert out.read_bytes() == before
    capsys.readouterr()


def test_writer_lists_named_once_still_run(package, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    assert main(["batch", package, "--out", str(out), "--budgets", "8", "--quiet", "--writers", "gvt,greedy"]) == 0
    (record,) = [json.loads(line) for line in Path(out).read_text().splitlines()]
    assert sorted(record["writers"]) == ["greedy", "gvt"]
    assert main(["sweep", package, "--budgets", "8", "--json", "--writers", " gvt , greedy "]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(record["writers"]) == ["greedy", "gvt"]


def test_leaving_the_option_out_keeps_the_defaults(package, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    assert main(["batch", package, "--out", str(out), "--budgets", "8", "--quiet"]) == 0
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert not record.get("writers")  # batch scores no writer unless asked
    assert main(["sweep", package, "--budgets", "8", "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(record["writers"]) > 2
