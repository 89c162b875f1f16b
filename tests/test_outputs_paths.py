"""Writers: one output-path rule for every command (memaudit_fast.model.jsonio.OutputPath)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memaudit_fast.cli.main import main
from memaudit_fast.errors import UsageError
from memaudit_fast.model import jsonio
from memaudit_fast.model.io import save_package
from memaudit_fast.model.jsonio import OutputPath, safe_name, write_atomic
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import write_package_set


def pkg() -> dict:
    return {
        "format": "memaudit.package/1", "package_id": "o/1", "budgets": [2],
        "units": [{"unit_id": "u", "weight": 1.0}],
        "candidates": [{"candidate_id": "c", "cost": 1, "coverage": {"u": 1.0}}],
    }


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_existing_files_need_force_and_force_is_never_the_answer_to_force(tmp_path):
    dst = tmp_path / "x.json"
    dst.write_text("keep")
    with pytest.raises(UsageError, match="already exists; choose another path or pass --force"):
        OutputPath(dst).check()
    OutputPath(dst, force=True).write_text("new")
    assert dst.read_text() == "new"


def test_inputs_are_never_outputs(tmp_path):
    src = tmp_path / "in.json"
    src.write_text("x")
    os.link(src, tmp_path / "hard.json")
    for dst in (src, tmp_path / "." / "in.json", tmp_path / "hard.json"):
        with pytest.raises(UsageError, match="refusing to write over the input"):
            OutputPath(dst, inputs=(src,), force=True).check()


@pytest.mark.parametrize("dangling", [True, False])
def test_links_at_output_paths_are_refused_or_replaced_never_followed(tmp_path, dangling):
    elsewhere = tmp_path / "elsewhere.txt"
    if not dangling:
        elsewhere.write_text("precious")
    link = tmp_path / "out.json"
    os.symlink(elsewhere, link)
    with pytest.raises(UsageError, match="symbolic link"):
        OutputPath(link).check()
    OutputPath(link, force=True).write_text("new")
    assert not link.is_symlink() and link.read_text() == "new"
    assert (not elsewhere.exists()) if dangling else elsewhere.read_text() == "precious"


def test_directories_are_replaced_only_when_they_are_earlier_outputs(tmp_path):
    other = tmp_path / "home"
    other.mkdir()
    (other / "thesis.tex").write_text("years of work")
    with pytest.raises(UsageError, match="never replaced, even with --force"):
        OutputPath(other, kind="dir", force=True, marker="index.html").check()
    assert (other / "thesis.tex").exists()
    report = tmp_path / "report"
    report.mkdir()
    (report / "index.html").write_text("old")
    with OutputPath(report, kind="dir", force=True, marker="index.html").directory() as tmp:
        (tmp / "index.html").write_text("new")
    assert listing(report) == ["index.html"] and (report / "index.html").read_text() == "new"
    assert listing(tmp_path) == ["home", "home/thesis.tex", "report", "report/index.html"]


def test_a_failed_directory_build_leaves_nothing(tmp_path):
    out = tmp_path / "art"
    with pytest.raises(RuntimeError), OutputPath(out, kind="dir").directory() as tmp:
        (tmp / "half.jsonl").write_text("x")
        raise RuntimeError("boom")
    assert listing(tmp_path) == []


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EROFS])
def test_disk_full_or_permission_errors_leave_no_partial_file(tmp_path, code):
    dst = tmp_path / "r.jsonl"

    def writer(handle):
        handle.write("half")
        raise OSError(code, os.strerror(code))

    with pytest.raises(UsageError, match="cannot write") as info:
        write_atomic(dst, writer)
    assert "nothing was written" in str(info.value)
    assert listing(tmp_path) == []


def test_convert_to_an_artifact_dir_on_a_full_disk_leaves_nothing(tmp_path, monkeypatch, capsys):
    src = tmp_path / "p.json"
    src.write_text(json.dumps(pkg()))
    real = jsonio.write_atomic
    calls = {"n": 0}

    def failing(dst, writer, *, binary=False):
        calls["n"] += 1
        if calls["n"] == 4:
            raise UsageError(f"{dst}: cannot write (the disk is full); nothing was written there")
        real(dst, writer, binary=binary)

    monkeypatch.setattr("memaudit_fast.model.artifact.write_atomic", failing)
    assert main(["convert", str(src), str(tmp_path / "art")]) == 2
    assert "disk is full" in capsys.readouterr().err
    assert listing(tmp_path) == ["p.json"]


def test_read_only_directory_is_refused_before_any_work(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes everywhere")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(UsageError, match="permission denied"):
            OutputPath(ro / "x.json").check()
    finally:
        ro.chmod(0o755)


def test_umask_is_read_without_changing_it(tmp_path, monkeypatch):
    old = os.umask(0o027)
    try:
        def forbidden(mask):
            raise AssertionError("os.umask must not be called while writing")

        monkeypatch.setattr(os, "umask", forbidden)
        write_atomic(tmp_path / "f.txt", lambda h: h.write("x"))
        assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o640
    finally:
        monkeypatch.undo()
        os.umask(old)


def test_package_writers_follow_the_rules(tmp_path):
    package = Package.from_dict(pkg())
    write_package_set([package], tmp_path / "s.jsonl")
    with pytest.raises(UsageError, match="--force"):
        write_package_set([package], tmp_path / "s.jsonl")
    os.symlink(tmp_path / "gone", tmp_path / "l.json")
    with pytest.raises(UsageError, match="symbolic link"):
        save_package(package, tmp_path / "l.json")
    save_package(package, tmp_path / "art")
    with pytest.raises(UsageError, match="--force"):
        save_package(package, tmp_path / "art")
    save_package(package, tmp_path / "art", overwrite=True)


@given(st.text(min_size=0, max_size=60))
def test_safe_names_stay_one_path_component(name):
    safe = safe_name(name)
    assert safe and safe not in (".", "..") and "/" not in safe and "\\" not in safe and "\x00" not in safe
    assert not safe.startswith(".") and len(safe) <= 120
    root = Path("/out")
    assert (root / safe).resolve().parent == root.resolve()


def test_report_needs_force_and_never_writes_through_links(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"format": "memaudit.result/1", "package_id": "small/base/s0", "budget": 2,
                                   "opt": 1.0, "status": "optimal", "seconds": 0.01, "nodes": 1,
                                   "writers": {"gvt": {"value": 1.0, "ratio": 1.0}}}) + "\n")
    out = tmp_path / "rep"
    assert main(["report", str(results), "--out", str(out)]) == 0
    assert main(["report", str(results), "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    target = tmp_path / "elsewhere.html"
    target.write_text("precious")
    (out / "index.html").unlink()
    os.symlink(target, out / "index.html")
    assert main(["report", str(results), "--out", str(out), "--force"]) == 0
    assert target.read_text() == "precious" and not (out / "index.html").is_symlink()


def test_the_old_check_never_lets_a_caller_write_through_a_link(tmp_path):
    from memaudit_fast.model.jsonio import check_output_path

    target = tmp_path / "target.txt"
    target.write_text("precious")
    link = tmp_path / "out.parquet"
    os.symlink(target, link)
    with pytest.raises(UsageError, match="symbolic link"):
        check_output_path(link)
    check_output_path(link, overwrite=True)
    assert not link.exists() and target.read_text() == "precious"
    link.write_text("new")  # what a caller does next: a plain file, the target untouched
    assert target.read_text() == "precious"


@pytest.mark.parametrize("command", [
    ["generate", "--distribution", "base", "--seed", "0", "--out", "OUT", "--force"],
    ["convert", "SET", "OUT", "--force"],
    ["batch", "SET", "--out", "r.jsonl", "--quiet", "--parquet", "OUT", "--force"],
])
def test_a_fifo_at_an_output_path_is_never_replaced_even_with_force(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    save_package(Package.from_dict(pkg()), tmp_path / "p.json")
    out = "out.parquet" if "--parquet" in command else "out.json"
    os.mkfifo(tmp_path / out)
    argv = [{"SET": "p.json", "OUT": out}.get(a, a) for a in command]
    assert main(argv) == 2
    assert "is not a regular file (a device, a FIFO or a socket)" in capsys.readouterr().err
    assert (tmp_path / out).is_fifo() and not (tmp_path / "r.jsonl").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_an_output_where_no_file_can_be_made_is_refused_before_the_work(tmp_path, monkeypatch, capsys):
    # os.access says yes to root on /proc: the batch scored every package and wrote its results,
    # then failed on --parquet with exit 2 (which says nothing was done).
    monkeypatch.chdir(tmp_path)
    save_package(Package.from_dict(pkg()), tmp_path / "p.json")
    assert main(["batch", "p.json", "--out", "r.jsonl", "--quiet", "--parquet", "/proc/r.parquet"]) == 2
    assert "/proc/r.parquet: cannot write" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()
    assert main(["generate", "--distribution", "base", "--seed", "0", "--out", "/proc/p.json"]) == 2
    assert not any(name.startswith(".memaudit-probe") for name in os.listdir(tmp_path))
