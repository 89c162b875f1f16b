"""The command line as a user of the scientific-Python tools expects it: stdin/stdout, tables in
the format the suffix names, certificates in the solve table, reports per budget fraction."""

from __future__ import annotations

import csv
import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import memaudit_fast as ma
from memaudit_fast.cli import common
from memaudit_fast.cli.main import main

EXAMPLE = ma.example_package_path()


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def _results(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Path:
    assert main(["sweep", str(EXAMPLE), "--writers", "gvt,density_only", "--json", *extra]) == 0
    path = tmp_path / "r.jsonl"
    path.write_text(capsys.readouterr().out)
    return path


def test_solve_reads_a_package_and_a_set_from_stdin(monkeypatch, capsys) -> None:
    _stdin(monkeypatch, EXAMPLE.read_text())  # pretty-printed JSON
    assert main(["solve", "-", "--budget", "8", "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert record["opt"] == 6.0
    one_line = json.dumps(json.loads(EXAMPLE.read_text()))
    other = json.dumps(json.loads(EXAMPLE.read_text()) | {"package_id": "other"})
    _stdin(monkeypatch, f"{one_line}\n{other}\n")
    assert main(["solve", "-", "--budget", "8", "--json"]) == 0
    assert [json.loads(line)["package_id"] for line in capsys.readouterr().out.splitlines()] == [
        "example/lisbon-porto", "other"]
    _stdin(monkeypatch, "{not json")
    assert main(["solve", "-", "--budget", "8"]) == 2  # nothing could be solved: bad input (cli.common)
    assert "<stdin>" in capsys.readouterr().err


def test_score_and_score_store_read_stdin(monkeypatch, capsys) -> None:
    _stdin(monkeypatch, EXAMPLE.read_text())
    assert main(["score", "-", "--budget", "16", "--ids", "c3_update,c4_update", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ratio"] == pytest.approx(0.95)
    assert main(["score", "-", "--budget", "16", "--store", "-"]) == 2


def test_solve_certify_shows_the_certificate_and_fails_when_it_cannot(monkeypatch, capsys) -> None:
    assert main(["solve", str(EXAMPLE), "--certify", "highs"]) == 0
    out = capsys.readouterr().out
    assert "agrees" in out.splitlines()[0] and "highs optimal" in out and " yes" in out

    from memaudit_fast.cli import solve as solve_cli

    def unmade(package, results, solver, time_limit=None, **_):
        return [dict(r.to_record(), certificate={"solver": solver, "status": "not_certified", "agrees": None,
                                                 "issues": ["too large for the licence"]}) for r in results]

    monkeypatch.setattr(solve_cli, "certify_results", unmade)
    assert main(["solve", str(EXAMPLE), "--certify", "highs"]) == 3
    assert "could not be made" in capsys.readouterr().err

    def contradicts(package, results, solver, time_limit=None, **_):
        return [dict(r.to_record(), certificate={"solver": solver, "status": "optimal", "value": 99.0,
                                                 "agrees": False}) for r in results]

    monkeypatch.setattr(solve_cli, "certify_results", contradicts)
    assert main(["solve", str(EXAMPLE), "--certify", "highs", "--json"]) == 3  # finished, a certificate disagrees
    capsys.readouterr()

    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gurobipy" else real(name, *a))
    assert main(["solve", str(EXAMPLE), "--certify", "gurobi"]) == 2
    captured = capsys.readouterr()
    assert "gurobipy" in captured.err and captured.out == ""  # nothing solved


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet", ".feather"])
def test_export_writes_the_format_its_suffix_names(tmp_path, capsys, suffix) -> None:
    pa = pytest.importorskip("pyarrow")
    results = _results(tmp_path, capsys)
    out = tmp_path / f"t{suffix}"
    assert main(["export", str(results), str(out)]) == 0
    records = [json.loads(line) for line in results.read_text().splitlines()]
    expected = ma.results_to_table(records, layout="wide")  # export's default: one row per record
    if suffix in (".csv", ".tsv"):
        with out.open(newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t" if suffix == ".tsv" else ","))
        assert float(rows[0]["writer_gvt_ratio"]) == expected.column("writer_gvt_ratio")[0].as_py()
        assert json.loads(rows[0]["selected"]) == expected.column("selected")[0].as_py()
        got_names = list(rows[0])
    elif suffix == ".jsonl":
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert rows == expected.to_pylist()
        got_names = list(rows[0])
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(out)
        assert table.equals(expected)
        got_names = table.column_names
    else:
        from pyarrow import feather

        table = feather.read_table(out)
        assert table.equals(expected)
        got_names = table.column_names
    assert got_names == expected.column_names and len(rows if suffix in (".csv", ".tsv", ".jsonl") else
                                                       table.to_pylist()) == expected.num_rows
    assert pa is not None


def test_export_to_stdout_and_refusals(tmp_path, capsys, monkeypatch) -> None:
    pytest.importorskip("pyarrow")
    results = _results(tmp_path, capsys)
    assert main(["export", str(results), "-", "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith('"package_id"') and "wrote" in captured.err
    assert main(["export", str(results), "-"]) == 2  # stdout needs --format
    assert main(["export", str(results), str(tmp_path / "t.xlsx")]) == 2  # unknown suffix
    pkg_set = tmp_path / "set.jsonl"
    ma.write_package_set([ma.example_package()], pkg_set)
    assert main(["export", str(pkg_set), str(tmp_path / "x.parquet")]) == 2
    assert "package set" in capsys.readouterr().err and not (tmp_path / "x.parquet").exists()
    assert main(["report", str(pkg_set), "--out", str(tmp_path / "rep")]) == 2
    _stdin(monkeypatch, results.read_text())
    assert main(["export", "-", str(tmp_path / "s.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] > 0


def test_report_plots_budget_fractions_and_shows_the_numbers(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    results = _results(tmp_path, capsys, "--budget-fracs", "0.1,0.2,0.4")
    assert main(["report", str(results), "--out", str(tmp_path / "rep"), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)["written"]
    assert any(p.endswith("sweep.png") for p in written)
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<table>" in page and "<th>budget_frac</th>" in page
    for frac in ("0.1", "0.2", "0.4"):
        assert f"<td>{frac}</td>" in page


def test_report_systems_and_solver_time(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    lines = []
    for k, budget in enumerate((8, 16)):
        lines.append({"format": "memaudit.result/1", "package_id": "u", "budget": budget, "opt": 10.0,
                      "status": "optimal", "seconds": 0.001 * (k + 1), "size": {"candidates": 10 * (k + 1)},
                      "systems": {"mem0": {"full_store_ratio": 0.0, "recency_pruned_ratio": 0.5 + k / 10},
                                  "letta": {"full_store_ratio": 0.0, "recency_pruned_ratio": 0.7}}})
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["report", str(path), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "mean over the 2 budget(s) 8, 16" in page and "not in the legend: full_store_ratio" in page
    assert "<td>0.55</td>" in page  # mem0's recency ratio, averaged over the budgets
    assert "median and 10%-90% band" in page


def test_score_store_says_each_note_once() -> None:
    from memaudit_fast.cli.score_store import merged_notes

    records = [{"budget": b, "systems": {"mem0": {"reasons": {"full_store_ratio": f"costs 27, above the budget {b}"}}}}
               for b in (8, 16)]
    assert merged_notes(records) == ["mem0 @ B = 8, 16: full_store_ratio: costs 27, above the budget B"]
    assert merged_notes(records[:1]) == ["mem0 @ 8: full_store_ratio: costs 27, above the budget 8"]


def test_tables_use_one_precision_per_column(capsys) -> None:
    common.print_table(["name", "x", "n"], [["a", 0.5, 3], ["b", 0.123456, 10], ["c", 2.0, 7]])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines[2:]] == ["0.500000", "0.123456", "2.000000"]
    assert [line.split()[2] for line in lines[2:]] == ["3", "10", "7"]
    common.print_table(["seconds"], [[5.9e-05], [0.25]])  # one needs an exponent: all get one
    assert capsys.readouterr().out.split()[2:] == ["5.900e-05", "2.500e-01"]


def test_quiet_silences_progress(tmp_path, capsys) -> None:
    assert main(["reproduce", "--quick", "--out", str(tmp_path / "r"), "--no-print", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["reproduce", "--quick", "--out", str(tmp_path / "r2"), "--no-print"]) == 0
    assert "MEMAUDIT-Small: 16/16 packages" in capsys.readouterr().err


def test_generate_validate_convert_info_through_pipes(monkeypatch, capsys) -> None:
    assert main(["generate", "--distribution", "base", "--seed", "0", "--count", "2", "--out", "-"]) == 0
    lines = capsys.readouterr().out
    _stdin(monkeypatch, lines)
    assert main(["validate", "-", "--json"]) == 0
    checked = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [c["valid"] for c in checked] == [True, True] and checked[1]["package_id"] == "small/base/s0001"
    _stdin(monkeypatch, EXAMPLE.read_text())
    assert main(["convert", "-", "-"]) == 0
    converted = capsys.readouterr().out
    assert json.loads(converted) == json.loads(EXAMPLE.read_text())
    _stdin(monkeypatch, converted)
    assert main(["info", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["package_id"] == "example/lisbon-porto"


def test_batch_records_carry_their_budget_fraction(tmp_path, capsys) -> None:
    pytest.importorskip("pandas")
    pkg_set = tmp_path / "set.jsonl"
    ma.write_package_set([ma.example_package()], pkg_set)
    out = tmp_path / "r.jsonl"
    assert main(["batch", str(pkg_set), "--out", str(out), "--budget-fracs", "0.1,0.5", "--backend", "serial",
                 "--writers", "gvt"]) == 0
    frame = ma.read_results(out)
    assert sorted(frame["budget_frac"]) == [0.1, 0.5]
    total = ma.example_package().total_cost()
    assert sorted(frame["budget"]) == pytest.approx([0.1 * total, 0.5 * total])


def _locomo(tmp_path: Path) -> Path:
    from memaudit_fast.writers.sample import mini_locomo

    second = mini_locomo()
    second["sample_id"] = "mini-2"
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([mini_locomo(), second]))
    return path


def test_natural_writes_a_set_to_stdout(tmp_path, capsys, monkeypatch) -> None:
    locomo = _locomo(tmp_path)
    assert main(["natural", "locomo", str(locomo), "--out", "-", "--json"]) == 0
    captured = capsys.readouterr()
    packages = [json.loads(line) for line in captured.out.splitlines()]
    assert [p["format"] for p in packages] == ["memaudit.package/1"] * 2
    summaries = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    assert [s["package_id"] for s in summaries] == [p["package_id"] for p in packages]
    assert "natural locomo: 2/2 conversations" in captured.err
    _stdin(monkeypatch, captured.out)
    assert main(["solve", "-", "--json", "--time-limit", "5"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == sum(len(p["budgets"]) for p in packages)


def test_write_reports_progress_unless_quiet(tmp_path, capsys) -> None:
    pytest.importorskip("faiss")
    locomo = _locomo(tmp_path)
    assert main(["write", "flat", "--locomo", str(locomo), "--out", str(tmp_path / "s"),
                 "--embedder", "hashing:64"]) == 0
    err = capsys.readouterr().err
    assert "write flat: 2/2 conversations" in err and "2 store(s) written" in err
    assert main(["write", "flat", "--locomo", str(locomo), "--out", str(tmp_path / "q"),
                 "--embedder", "hashing:64", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_import_reads_and_writes_the_union_through_pipes(tmp_path, capsys, monkeypatch) -> None:
    from oracles.exports import GET_ALL

    export = tmp_path / "get_all.json"
    export.write_text(json.dumps(GET_ALL))
    _stdin(monkeypatch, EXAMPLE.read_text())
    assert main(["import", "mem0", str(export), "--package", "-", "--out", "-", "--embedder", "hashing",
                 "--cache", str(tmp_path / "c.sqlite")]) == 0
    captured = capsys.readouterr()
    union = json.loads(captured.out)
    assert list(union["meta"]["systems"]) == ["mem0"] and "imported 2 mem0 memories" in captured.err
    _stdin(monkeypatch, captured.out)
    assert main(["score-store", "-", "--budgets", "16", "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert set(record["systems"]) == {"mem0"}
    assert main(["import", "mem0", str(export), "--package", str(EXAMPLE), "--out", str(tmp_path / "u.json"),
                 "--embedder", "hashing", "--cache", str(tmp_path / "c.sqlite"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["system"] == "mem0" and summary["memories"] == 2 and (tmp_path / "u.json").exists()


@pytest.mark.parametrize("command", [["solve", "--budget", "8"], ["sweep"]])
def test_an_error_record_names_the_package_its_message_names(tmp_path, capsys, command) -> None:
    good = json.loads(EXAMPLE.read_text())
    bad_units = good | {"package_id": "bad-units", "units": "oops"}
    bad_id = good | {"package_id": 5, "units": "oops"}  # its id is what is wrong first: none named
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in (bad_units, bad_id, good)))
    assert main([command[0], str(path), *command[1:], "--json"]) == 3
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    errors = [r for r in records if r["status"] == "error"]
    assert [r["package_id"] for r in errors] == ["bad-units", None]
    assert "'bad-units'" in errors[0]["error"] and "package_id" in errors[1]["error"]
    assert {r["package_id"] for r in records if r["status"] != "error"} == {good["package_id"]}


@pytest.mark.skipif(sys.platform == "win32", reason="closes a descriptor with a POSIX shell")
@pytest.mark.parametrize("command", [["solve", "-", "--budget", "8"], ["validate", "-"],
                                     ["batch", "-", "--out", "OUT", "--budgets", "8"]])
def test_a_closed_stdin_is_bad_usage_said_plainly(tmp_path, command) -> None:
    out = tmp_path / "out.jsonl"
    args = " ".join(shlex.quote(str(out) if a == "OUT" else a) for a in command)
    run = subprocess.run(["sh", "-c", f"exec {shlex.quote(sys.executable)} -m memaudit_fast {args} <&-"],
                         check=False, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "standard input is closed" in run.stderr and "internal error" not in run.stderr
    assert not out.exists()  # a batch refused touches nothing


@pytest.mark.skipif(sys.platform == "win32", reason="closes a descriptor with a POSIX shell")
def test_a_closed_stdout_drops_the_output_as_print_does(tmp_path) -> None:
    script = f"exec {shlex.quote(sys.executable)} -m memaudit_fast solve {shlex.quote(str(EXAMPLE))} --budget 8 --json >&-"
    run = subprocess.run(["sh", "-c", script], check=False, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stderr == ""


def test_tables_show_control_characters_of_ids_escaped(tmp_path, capsys) -> None:
    package = json.loads(EXAMPLE.read_text()) | {"package_id": "bad\nid\x1b[31m"}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(package))
    assert main(["solve", str(path), "--budget", "8"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "bad\\nid\\x1b[31m" in out
    assert len(out.splitlines()) == 3  # header, rule, one row


def test_score_store_object_must_be_for_this_package_and_budget(tmp_path, capsys) -> None:
    record = tmp_path / "r.json"
    record.write_text(json.dumps({"package_id": "other", "budget": 16, "selected": ["c3_update"]}))
    assert main(["score", str(EXAMPLE), "--store", str(record), "--budget", "16"]) == 2
    assert "'other'" in capsys.readouterr().err
    record.write_text(json.dumps({"package_id": "example/lisbon-porto", "budget": 10, "selected": ["c3_update"]}))
    assert main(["score", str(EXAMPLE), "--store", str(record), "--budget", "16"]) == 2
    assert "budget 10" in capsys.readouterr().err
    # Without --budget, the record's own budget is the one scored.
    assert main(["score", str(EXAMPLE), "--store", str(record), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["budget"] == 10


def test_score_ids_are_taken_as_written_and_empty_entries_refused(tmp_path, capsys) -> None:
    package = json.loads(EXAMPLE.read_text())
    twin = dict(package["candidates"][0], candidate_id=package["candidates"][0]["candidate_id"] + " ",
                group="twin-group")
    package["candidates"].append(twin)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(package))
    first = package["candidates"][0]["candidate_id"]
    assert main(["score", str(path), "--budget", "16", "--ids", first + " ", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["selected"] == [first + " "]  # the id as written
    assert main(["score", str(path), "--budget", "16", "--ids", "c3_update, c4_update", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["selected"] == ["c3_update", "c4_update"]
    assert main(["score", str(path), "--budget", "16", "--ids", "c3_update,"]) == 2
    assert "empty entry" in capsys.readouterr().err
