"""One exit-code rule for every command: 0 ok, 2 bad input or usage, 3 finished with
failures, 1 internal error, 130 interrupted; failure lines do not repeat their label."""

from __future__ import annotations

import argparse
import errno
import json

import pytest

from memaudit_fast.cli import main as cli_main
from memaudit_fast.cli.common import finished_exit_code
from memaudit_fast.cli.main import main
from memaudit_fast.writers.errors import LLMError


def good() -> dict:
    return {
        "format": "memaudit.package/1", "package_id": "x/1", "budgets": [2],
        "units": [{"unit_id": "u", "weight": 1.0}],
        "candidates": [{"candidate_id": "c", "cost": 1, "coverage": {"u": 1.0}}],
    }


@pytest.mark.parametrize("command", [
    ["solve", "missing.json"], ["info", "missing.json"], ["validate", "missing.json"],
    ["convert", "missing.json", "out.json"], ["sweep", "missing.json", "--budgets", "2"],
    ["certify", "missing.jsonl", "--package", "missing.json"], ["score", "missing.json", "--ids", "c", "--budget", "2"],
])
def test_missing_inputs_exit_2_everywhere(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "missing" in err


def test_some_failed_is_3_all_failed_is_2(tmp_path, capsys):
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(good()))
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["solve", str(ok), str(bad)]) == 3
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("failed:"))
    assert line.count(str(bad)) == 1  # "x.json: x.json: ..." never
    assert main(["solve", str(bad)]) == 2
    assert finished_exit_code(5, 0) == 0 and finished_exit_code(5, 1) == 3 and finished_exit_code(0, 2) == 2


def test_info_on_a_set_says_it_takes_one_package(tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(good()) + "\n" + json.dumps(good()) + "\n")
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert "one package" in err and "not valid JSON" not in err


def run_with(monkeypatch, exc: BaseException) -> int:
    def boom(args: argparse.Namespace) -> int:
        raise exc

    parser = cli_main.build_parser()
    real = parser.parse_args

    def parse(argv=None):
        args = real(argv)
        args.run = boom
        return args

    monkeypatch.setattr(parser, "parse_args", parse)
    monkeypatch.setattr(cli_main, "build_parser", lambda: parser)
    return main(["validate", "x"])


@pytest.mark.parametrize(
    ("exc", "code", "needle"),
    [
        (RuntimeError("bug"), 1, "internal error"),
        (KeyboardInterrupt(), 130, "interrupted"),
        (OSError(errno.ENOSPC, "No space left on device"), 2, "No space left"),
        (PermissionError(errno.EACCES, "Permission denied", "/x"), 2, "Permission denied"),
        (RecursionError(), 2, "nests too deeply"),
        (LLMError("cannot reach http://localhost:9: connection refused"), 2, "cannot reach"),
    ],
    ids=["internal", "interrupt", "disk-full", "permission", "recursion", "llm-unreachable"],
)
def test_exceptions_map_to_one_code_without_traceback(monkeypatch, capsys, exc, code, needle):
    assert run_with(monkeypatch, exc) == code
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_unreachable_llm_endpoint_exits_2(tmp_path, capsys):
    pytest.importorskip("faiss")
    from memaudit_fast.writers.sample import mini_locomo

    src = tmp_path / "l.json"
    src.write_text(json.dumps([mini_locomo()]))
    code = main(["write", "membox", "--locomo", str(src), "--out", str(tmp_path / "o"), "--embedder", "hashing:64",
                 "--llm", "openai", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m",
                 "--llm-retries", "0", "--llm-timeout", "2"])
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert not (tmp_path / "o" / "conv-26").exists() or not any((tmp_path / "o").rglob("memories.jsonl"))


@pytest.mark.parametrize("json_out", [False, True])
def test_an_interrupted_sweep_exits_130_keeping_what_it_printed(tmp_path, monkeypatch, capsys, json_out):
    import dataclasses

    from memaudit_fast.solve import exact

    real = exact.solve
    calls = []

    def stopped_on_the_second(*args, **kwargs):
        calls.append(1)
        results = real(*args, **kwargs)
        if len(calls) == 2:  # Ctrl-C during the second package's solve
            return [dataclasses.replace(r, status="interrupted", proven_optimal=False) for r in results]
        return results

    monkeypatch.setattr(exact, "solve", stopped_on_the_second)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(good() | {"package_id": f"x/{k}"}) + "\n" for k in range(3)))
    assert main(["sweep", str(path), "--writers", "gvt", *(["--json"] if json_out else [])]) == 130
    out, err = capsys.readouterr()
    assert "interrupted" in err and len(calls) == 2  # the third package is not begun
    if json_out:
        assert [json.loads(line)["status"] for line in out.splitlines()] == ["optimal", "interrupted"]
    else:
        assert "x/0" in out and "x/1" in out and "x/2" not in out


def test_sweep_refuses_a_negative_seed_and_every_command_an_empty_set(tmp_path, capsys):
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(good()))
    assert main(["sweep", str(ok), "--seed", "-1"]) == 2
    assert "--seed -1" in capsys.readouterr().err
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    for command in (["sweep", str(empty)], ["solve", str(empty)], ["validate", str(empty)]):
        assert main(command) == 2
        assert "no packages found" in capsys.readouterr().err


def test_score_refuses_an_opt_that_cannot_be_opt(tmp_path, capsys):
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(good()))  # c is worth 1 and fits B = 2
    for opt in ("-1", "nan", "inf", "0.5"):
        assert main(["score", str(ok), "--budget", "2", "--ids", "c", "--opt", opt]) == 2, opt
        assert "opt" in capsys.readouterr().err
    assert main(["score", str(ok), "--budget", "2", "--ids", "c", "--opt", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ratio"] == 1.0


def test_sweep_says_when_a_dropped_family_removes_nothing(capsys):
    import memaudit_fast as ma

    assert main(["sweep", str(ma.example_package_path()), "--writers", "gvt", "--drop", "tombstones"]) == 0
    err = capsys.readouterr().err
    assert "--drop tombstones" in err and "removed nothing" in err and "tombstone" in err
    assert main(["sweep", str(ma.example_package_path()), "--writers", "gvt", "--drop", "update"]) == 0
    assert "removed nothing" not in capsys.readouterr().err


@pytest.mark.parametrize("names", ["gvt,,greedy", "gvt,", ","])
def test_an_empty_name_in_a_list_is_refused(tmp_path, capsys, names):
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(good()))
    assert main(["sweep", str(ok), "--writers", names]) == 2
    assert "empty entry" in capsys.readouterr().err


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_sigterm_stops_a_command_as_ctrl_c_does(tmp_path, sig):
    # Every command ended with the raw signal (exit 143, no word); batch only while its run
    # went on, so a SIGTERM in the moments after the run ended it so too.
    import signal
    import subprocess
    import sys
    import time

    from oracles.packages import strongly_correlated_knapsack

    path = tmp_path / "hard.json"
    path.write_text(json.dumps(strongly_correlated_knapsack(n=300)))
    proc = subprocess.Popen([sys.executable, "-m", "memaudit_fast", "solve", str(path), "--finish", "none",
                             "--time-limit", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3.0)  # past the start-up: in the solve
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
