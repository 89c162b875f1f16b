"""certify --write-model: every name checked before any file, each file whole, and nothing of a
failed run left behind; any legal package id gives a file name."""

from __future__ import annotations

import errno
import hashlib
import importlib
import json
import os
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import UsageError
from memaudit_fast.model.package import Package
from memaudit_fast.solve.exact import solve
from memaudit_fast.solve.milp import model_stem

certify_module = importlib.import_module("memaudit_fast.solve.certify")
model_files = importlib.import_module("memaudit_fast.solve.model_files")


def _package(package_id: str = "small/base", saturation: str = "cap1") -> Package:
    return Package.from_dict({
        "format": "memaudit.package/1", "package_id": package_id, "budgets": [2, 4, 8],
        "objective": {"saturation": saturation},
        "units": [{"unit_id": f"u{r}", "weight": 1 + r} for r in range(4)],
        "candidates": [{"candidate_id": f"c{i}", "group": f"g{i // 2}", "cost": 1 + i % 3,
                        "coverage": {f"u{i % 4}": 1.0, f"u{(i + 1) % 4}": 0.5}} for i in range(8)],
    })


def _files(pkg: Package, tmp_path: Path, budgets: list[float] | None = None) -> tuple[str, str]:
    pkg_path = tmp_path / "p.json"
    pkg_path.write_text(json.dumps(pkg.data), encoding="utf-8")
    results = tmp_path / "r.jsonl"
    records = [r.to_record() for r in solve(pkg, budgets=budgets or pkg.budgets)]
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(results), str(pkg_path)


def _listing(directory: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(directory.iterdir())} if directory.exists() else {}


def test_a_later_models_file_blocks_the_run_before_anything_is_written(tmp_path, capsys):
    results, pkg_path = _files(_package(), tmp_path)
    out = tmp_path / "models"
    out.mkdir()
    blocker = out / f"{model_stem('small/base', 8.0)}.lp"
    blocker.write_text("the user's own\n")
    before = _listing(out)
    assert main(["certify", results, "--package", pkg_path, "--solver", "highs", "--write-model", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"--write-model {out}: {blocker.name} exists already" in captured.err
    assert _listing(out) == before  # the B2 and B4 models were not written first
    blocker.unlink()
    assert main(["certify", results, "--package", pkg_path, "--solver", "highs", "--write-model", str(out),
                 "--json"]) == 0
    assert len(list(out.iterdir())) == 9  # three budgets, .mps .lp .columns.json each


@pytest.mark.parametrize("fail_at", [0, 1, 2])
def test_a_full_disk_leaves_nothing_and_names_the_file_and_option(tmp_path, capsys, monkeypatch, fail_at):
    results, pkg_path = _files(_package(), tmp_path)
    out = tmp_path / "new" / "models"
    real = model_files.write_milp
    calls = []

    def full_disk(model, c, directory, stem, *args):
        calls.append(stem)
        if len(calls) > fail_at:
            (Path(directory) / f"{stem}.mps").write_bytes(b"")  # what HiGHS left: 0 bytes
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(Path(directory) / f"{stem}.mps"))
        return real(model, c, directory, stem, *args)

    monkeypatch.setattr(model_files, "write_milp", full_disk)
    assert main(["certify", results, "--package", pkg_path, "--solver", "highs", "--write-model", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--write-model {out}: cannot write {calls[-1]}.mps (the disk is full)" in err
    assert not out.exists() and not out.parent.exists()  # the directories this run made, too
    monkeypatch.setattr(model_files, "write_milp", real)
    assert main(["certify", results, "--package", pkg_path, "--solver", "highs", "--write-model", str(out),
                 "--json"]) == 0  # and a rerun is not blocked by its own files


def test_a_model_file_cut_short_is_refused_and_removed(tmp_path, capsys, monkeypatch):
    results, pkg_path = _files(_package(), tmp_path, [4.0])
    out = tmp_path / "models"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    real = model_files.write_milp

    def truncated(model, c, directory, stem, *args):
        entry = real(model, c, directory, stem, *args)
        path = Path(directory) / f"{stem}.lp"
        path.write_bytes(path.read_bytes()[:50])  # HiGHS's writer does not report a short write
        return entry

    monkeypatch.setattr(model_files, "write_milp", truncated)
    assert main(["certify", results, "--package", pkg_path, "--solver", "highs", "--write-model", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {model_stem('small/base', 4.0)}.lp" in err and "stopped before the end" in err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]  # no temporary directory either


def test_the_api_writes_all_models_of_a_call_or_none(tmp_path):
    pkg = _package(saturation="log1p")
    (result,) = solve(pkg, budgets=[4])
    out = tmp_path / "m"
    out.mkdir()
    outer = out / f"{model_stem('small/base', 4.0, '__outer')}.columns.json"
    outer.write_text("{}")
    with pytest.raises(UsageError, match="exists already"):
        certify_module.certify(pkg, result, "highs", write_model=out)
    assert [p.name for p in out.iterdir()] == [outer.name]  # the inner model was not written first
    outer.unlink()
    cert = certify_module.certify(pkg, result, "highs", write_model=out)
    assert [e["role"] for e in cert.model_files] == ["inner", "outer"]
    for entry in cert.model_files:
        for f in entry["files"]:
            assert Path(f["path"]).parent == out
            assert hashlib.sha256(Path(f["path"]).read_bytes()).hexdigest() == f["sha256"]


def test_a_model_asked_for_twice_in_one_run_is_written_once(tmp_path, capsys):
    results, pkg_path = _files(_package(), tmp_path, [4.0, 4.0])
    out = tmp_path / "models"
    assert main(["certify", results, "--package", pkg_path, "--solver", "highs", "--write-model", str(out),
                 "--json"]) == 0
    first, second = (json.loads(x)["certificate"] for x in capsys.readouterr().out.splitlines())
    assert first["agrees"] is True and first["model_files"] == second["model_files"]
    assert len(list(out.iterdir())) == 3


def test_another_group_capacity_is_another_file(tmp_path, capsys):
    pkg = _package()
    results = tmp_path / "r.jsonl"
    wider = Package.from_dict({**pkg.data, "objective": {"saturation": "cap1", "group_capacity": 2}})
    records = [solve(pkg, 4).to_record(), solve(wider, 4).to_record()]
    assert records[1]["group_capacity"] == 2
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    pkg_path = tmp_path / "p.json"
    pkg_path.write_text(json.dumps(pkg.data), encoding="utf-8")
    out = tmp_path / "models"
    assert main(["certify", str(results), "--package", str(pkg_path), "--solver", "highs",
                 "--write-model", str(out), "--json"]) == 0
    one, two = (json.loads(x)["certificate"] for x in capsys.readouterr().out.splitlines())
    assert one["agrees"] is True and two["agrees"] is True
    assert Path(one["model_files"][0]["files"][0]["path"]).name == f"{model_stem('small/base', 4.0)}.mps"
    assert Path(two["model_files"][0]["files"][0]["path"]).name == f"{model_stem('small/base', 4.0, '__K2')}.mps"


@pytest.mark.parametrize("package_id", ["x" * 300, "é" * 200, "a/" * 150, "p" * 140 + "/q"])
def test_any_legal_package_id_gives_a_file_name(tmp_path, capsys, package_id):
    results, pkg_path = _files(_package(package_id), tmp_path, [4.0])
    out = tmp_path / "models"
    assert main(["certify", results, "--package", pkg_path, "--solver", "highs", "--write-model", str(out),
                 "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)["certificate"]
    assert cert["agrees"] is True and cert["status"] == "optimal"
    for f in out.iterdir():
        assert len(f.name.encode()) <= 255 and f.name.endswith(("__B4.mps", "__B4.lp", "__B4.columns.json"))


def test_bounded_stems_keep_long_ids_apart_and_short_ones_as_they_were():
    bounded = model_files.bounded_model_stem
    a, b = "x" * 300 + "a", "x" * 300 + "b"
    assert bounded(a, 4.0) != bounded(b, 4.0)
    assert len(bounded(a, 1000000.5, "__K7__inner")) <= model_files.MAX_MODEL_STEM
    assert bounded(a, 4.0).endswith(hashlib.sha256(a.encode()).hexdigest()[:8] + "__B4")
    for short in ("p", "small/base/s0000", "a_b"):
        assert bounded(short, 8.0) == model_stem(short, 8.0)


def test_a_link_or_a_file_at_write_model_is_refused(tmp_path, capsys):
    results, pkg_path = _files(_package(), tmp_path, [4.0])
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert main(["certify", results, "--package", pkg_path, "--write-model", str(tmp_path / "link")]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert list((tmp_path / "real").iterdir()) == []
