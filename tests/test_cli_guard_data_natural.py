"""memaudit natural: never over its own input, safe bounded file names, all files or none."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from memaudit_fast.writers.sample import mini_locomo
from oracles.cli_runs import run, snapshot


def conversations(*ids: str) -> list[dict]:
    return [dict(mini_locomo(), sample_id=sample_id) for sample_id in ids]


def locomo_file(path: Path, *ids: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(conversations(*ids)))
    return path


# --- the input is never an output ---------------------------------------------------------------


@pytest.mark.parametrize("per_query", [False, True])
def test_a_set_named_as_the_input_is_refused(tmp_path: Path, per_query: bool,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "loc.jsonl", "mini-1")
    before = src.read_bytes()
    code, err = run(["natural", "locomo", str(src), "--out", str(src), "--force", "--quiet",
                     *(["--per-query"] if per_query else [])], capsys)
    assert code == 2
    assert "refusing to write over the input" in err
    assert src.read_bytes() == before


def test_a_hard_link_to_the_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "loc.json", "mini-1")
    link = tmp_path / "other.jsonl"
    os.link(src, link)
    before = snapshot(tmp_path)
    code, err = run(["natural", "locomo", str(src), "--out", str(link), "--force", "--quiet"], capsys)
    assert code == 2 and "refusing to write over the input" in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("per_query", "name"), [(False, "locomo-mini-1.json"), (True, "locomo-mini-1-q0.json")])
def test_a_directory_whose_file_would_be_the_input_is_left_alone(
        tmp_path: Path, per_query: bool, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "nd"
    src = locomo_file(out / name, "mini-1")
    before = snapshot(tmp_path)
    code, err = run(["natural", "locomo", str(src), "--out", str(out), "--force", "--quiet",
                     *(["--per-query"] if per_query else [])], capsys)
    assert code == 2
    assert f"refusing to write over the input {src}" in err
    assert snapshot(tmp_path) == before  # no other package of the run was written either


def test_the_input_as_the_output_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "loc.json", "mini-1")
    before = snapshot(tmp_path)
    code, err = run(["natural", "locomo", str(src), "--out", str(src), "--force", "--quiet"], capsys)
    assert code == 2 and "refusing to write over the input" in err
    assert snapshot(tmp_path) == before


# --- names from data ------------------------------------------------------------------------------


@pytest.mark.parametrize("per_query", [False, True])
def test_a_long_sample_id_gets_a_bounded_name_and_every_file_is_written(
        tmp_path: Path, per_query: bool, capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "loc.json", "mini-1", "x" * 400)
    out = tmp_path / "nd"
    code, err = run(["natural", "locomo", str(src), "--out", str(out), "--quiet",
                     *(["--per-query"] if per_query else [])], capsys)
    assert code == 0, err
    names = sorted(p.name for p in out.iterdir())
    assert all(len(os.fsencode(n)) <= 255 for n in names)
    long_ids = [json.loads((out / n).read_text())["meta"]["sample_id"] for n in names if "xxxx" in n]
    assert long_ids and set(long_ids) == {"x" * 400}
    assert any(n.startswith("locomo-mini-1") for n in names)


@pytest.mark.parametrize("sample_id", ["../escape", "/abs/path", "..", ".hidden", "a\x00b"])
def test_a_sample_id_that_is_a_path_stays_inside_out(tmp_path: Path, sample_id: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "in" / "loc.json", sample_id)
    out = tmp_path / "nd"
    code, err = run(["natural", "locomo", str(src), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    (written,) = out.iterdir()
    assert written.parent == out and written.name.startswith("locomo-") and not written.name.startswith("locomo-.")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "nd"]


@pytest.mark.parametrize(("ids", "said"), [
    (("a/b", "a_b"), "sample_ids 'a/b' and 'a_b' map to one file name"),
    (("Conv", "conv"), "sample_ids 'Conv' and 'conv' map to one file name"),
    (("mini-1", "mini-1"), "two packages have the sample_id 'mini-1'"),
])
def test_ids_that_share_a_file_name_are_refused_before_writing(
        tmp_path: Path, ids: tuple[str, str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "loc.json", *ids)
    out = tmp_path / "nd"
    code, err = run(["natural", "locomo", str(src), "--out", str(out), "--quiet"], capsys)
    assert code == 2
    assert said in err
    assert not out.exists()


# --- all files or none ----------------------------------------------------------------------------


def test_a_later_file_refused_leaves_the_earlier_ones_unwritten(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "loc.json", "a", "b")
    out = tmp_path / "nd"
    (out / "locomo-b.json").mkdir(parents=True)  # where the second package goes: never replaced
    before = snapshot(tmp_path)
    code, err = run(["natural", "locomo", str(src), "--out", str(out), "--force", "--quiet"], capsys)
    assert code == 2 and "locomo-b.json is a directory" in err
    assert snapshot(tmp_path) == before


def _fail_second(monkeypatch: pytest.MonkeyPatch, target: object, name: str) -> None:
    real = getattr(target, name)
    calls = []

    def failing(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, failing)


def test_a_full_disk_in_an_existing_directory_leaves_it_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "loc.json", "a", "b", "c")
    out = tmp_path / "nd"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "locomo-a.json").write_text("an earlier run")
    before = snapshot(tmp_path)
    _fail_second(monkeypatch, os, "fsync")
    code, err = run(["natural", "locomo", str(src), "--out", str(out), "--force", "--quiet"], capsys)
    assert code == 2
    assert "the disk is full" in err and "no package file was written" in err
    assert snapshot(tmp_path) == before  # no new file, no temporary file, the old one unchanged


def test_a_full_disk_in_a_new_directory_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "loc.json", "a", "b", "c")
    out = tmp_path / "nd"
    before = snapshot(tmp_path)
    _fail_second(monkeypatch, Path, "write_text")
    code, err = run(["natural", "locomo", str(src), "--out", str(out), "--quiet"], capsys)
    assert code == 2 and "the disk is full" in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("per_query", [False, True])
def test_an_empty_category_list_is_named(tmp_path: Path, per_query: bool,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    src = locomo_file(tmp_path / "loc.json", "mini-1")
    out = tmp_path / "nd"
    code, err = run(["natural", "locomo", str(src), "--out", str(out), "--categories", "", "--quiet",
                     *(["--per-query"] if per_query else [])], capsys)
    assert code == 2
    assert "--categories is empty; give one or more of 1=multi-hop" in err
    assert not out.exists()
