"""MEMAUDIT_MAX_* values are integers in ASCII digits within a stated range: anything else is
a usage error (exit 2) naming the variable and the range, never an internal error; a huge but
allowed cap reads as usual (no read asks for the whole cap at once); an error record never
holds a long echo of its input."""

from __future__ import annotations

import gzip
import json

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.model.limits import Limits
from memaudit_fast.results.records import MAX_ERROR_CHARS, error_record
from memaudit_fast.suites.small import generate_package

NAMES = ["MEMAUDIT_MAX_CANDIDATES", "MEMAUDIT_MAX_FILE_BYTES", "MEMAUDIT_MAX_SET_BYTES", "MEMAUDIT_MAX_UNITS",
         "MEMAUDIT_MAX_NONZEROS", "MEMAUDIT_MAX_BUDGETS", "MEMAUDIT_MAX_PWL_POINTS"]


@pytest.fixture
def package(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(generate_package("base", seed=0)))
    return path


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("value", "why"), [
    ("99999999999999999999", "too large"), (str(2**63), "too large"), (str(2**64), "too large"),
    (str(Limits.CEILING + 1), "too large"), ("9" * 5000, "too large"),
    ("-1", "negative"), ("x", "not an integer"), ("\u0663", "not an integer"), ("1e3", "not an integer"),
    ("1_000", "not an integer"), ("", "not an integer"),
])
def test_out_of_range_or_malformed_limit_is_a_usage_error(monkeypatch, capsys, package, name, value, why):
    monkeypatch.setenv(name, value)
    assert main(["validate", str(package)]) == 2
    err = capsys.readouterr().err
    assert f"{name}=" in err and why in err and f"from 0 to {Limits.CEILING}" in err
    assert "internal error" not in err and len(err) < 400


def test_depth_has_its_own_range(monkeypatch, capsys, package):
    monkeypatch.setenv("MEMAUDIT_MAX_DEPTH", str(2**63))
    assert main(["validate", str(package)]) == 2
    assert f"from 0 to {Limits.DEPTH_CEILING}" in capsys.readouterr().err


@pytest.mark.parametrize("name", NAMES)
def test_largest_allowed_cap_reads_as_usual(monkeypatch, capsys, tmp_path, package, name):
    monkeypatch.setenv(name, str(Limits.CEILING))
    packed = tmp_path / "p.json.gz"
    packed.write_bytes(gzip.compress(package.read_bytes()))
    line = tmp_path / "s.jsonl"
    line.write_text(json.dumps(generate_package("base", seed=0)) + "\n")
    assert main(["validate", str(package), str(packed), str(line)]) == 0
    assert "3 valid, 0 invalid" in capsys.readouterr().out


def test_batch_with_a_bad_limit_writes_nothing(monkeypatch, capsys, tmp_path, package):
    monkeypatch.setenv("MEMAUDIT_MAX_CANDIDATES", str(2**64))
    out = tmp_path / "res.jsonl"
    assert main(["batch", str(package), "--out", str(out), "--quiet", "--finish", "none"]) == 2
    assert not out.exists() and "MEMAUDIT_MAX_CANDIDATES" in capsys.readouterr().err


def test_error_record_cuts_a_long_cause():
    text = "x" * 100_000
    record = error_record(f"internal error: TypeError: Invoked with: {text}")
    assert len(record["error"]) <= MAX_ERROR_CHARS and record["error"].endswith("chars)")
    assert error_record("short")["error"] == "short"
