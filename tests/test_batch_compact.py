"""A resumed batch's results file describes the set it was resumed on (experiments/batch_compact).

Records of members edited or removed between two runs are moved to ``NAME.superseded.jsonl``
once the resume has read its whole set, and the records kept say where their member is now:
the file then holds what a fresh run on the edited set writes, and export counts each package
of the set once.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.experiments import batch as batch_module
from memaudit_fast.experiments.batch import BatchOptions, run_batch
from memaudit_fast.experiments.batch_compact import _append_new_lines, same_place, superseded_path
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.suites.small import generate_package
from oracles.batch_runs import locked

DISTS = ["base", "density_trap", "update_chain", "summary_tradeoff", "scope_shift"]


def packages(count: int, first_seed: int = 0) -> list[dict]:
    return [generate_package(DISTS[k % len(DISTS)], seed=first_seed + k) for k in range(count)]


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def batch(*args: str | Path) -> int:
    return main(["batch", *map(str, args), "--quiet"])


def essence(records: list[dict]) -> list[tuple]:
    """What a record says, without what varies between two solves of it (time, nodes)."""
    return sorted((r["member_digest"], r["options_digest"], r["package_id"], r["source"], r["budget"], r["opt"],
                   r["status"]) for r in records)


def with_costs_raised(package: dict) -> dict:
    changed = json.loads(json.dumps(package))
    for candidate in changed["candidates"]:
        candidate["cost"] += 1
    return changed


def scored_set(tmp_path: Path, count: int) -> tuple[list[dict], Path, Path, BatchOptions]:
    """(packages, set path, results path, options) of a set scored once at budget 2."""
    members = packages(count)
    path = tmp_path / "set.jsonl"
    write_package_set(members, path)
    out = tmp_path / "out.jsonl"
    options = BatchOptions(budgets=(2,))
    run_batch([path], out, options, workers=1, backend="serial")
    return members, path, out, options


@pytest.mark.parametrize("backend", ["serial", "local"])
def test_a_resumed_edited_set_leaves_the_file_a_fresh_run_writes(tmp_path, backend):
    members = packages(7)
    path = tmp_path / "set.jsonl"
    write_package_set(members, path)
    out, fresh = tmp_path / "out.jsonl", tmp_path / "fresh.jsonl"
    options = BatchOptions(budgets=(2, 4))
    run_batch([path], out, options, workers=2, backend=backend)
    # The first line removed (its record carried the options), one package changed, one added.
    edited = [*members[1:4], with_costs_raised(members[4]), *members[5:], packages(1, first_seed=70)[0]]
    write_package_set(edited, path, overwrite=True)
    summary = run_batch([path], out, options, workers=2, backend=backend, resume=True)
    assert summary.compaction is not None
    assert (summary.compaction.moved_members, summary.compaction.moved_records) == (2, 4)
    run_batch([path], fresh, options, workers=2, backend=backend)
    assert essence(read(out)) == essence(read(fresh))
    # The first record states the options again, so a resume with other ones still says what differs.
    assert "options" in read(out)[0]
    assert main(["batch", str(path), "--out", str(out), "--budgets", "2,8", "--resume", "--quiet"]) == 2
    # The records taken out are kept beside the file.
    aside = read(superseded_path(out))
    assert {r["package_id"] for r in aside} == {members[0]["package_id"], members[4]["package_id"]}
    assert len(aside) == 4


def test_export_after_an_edited_resume_counts_each_package_of_the_set_once(tmp_path, capsys):
    members = packages(4)
    path = tmp_path / "set.jsonl"
    write_package_set(members, path)
    out = tmp_path / "out.jsonl"
    assert batch(path, "--out", out, "--budgets", "2,4", "--workers", "1") == 0
    write_package_set([members[0], with_costs_raised(members[1]), members[3]], path, overwrite=True)
    capsys.readouterr()
    assert batch(path, "--out", out, "--budgets", "2,4", "--workers", "1", "--resume") == 0
    err = capsys.readouterr().err
    assert "2 packages with records" in err and "4 records were moved to" in err and "out.superseded.jsonl" in err
    table = tmp_path / "t.csv"
    assert main(["export", str(out), str(table), "--quiet"]) == 0
    with table.open() as f:
        rows = list(csv.DictReader(f))
    assert sorted(row["package_id"] for row in rows) == sorted(p["package_id"] for p in (members[0], members[1], members[3])
                                                               for _ in range(2))
    costs = {row["package_id"]: float(row["opt"]) for row in rows if row["budget"] == "4"}
    fresh = tmp_path / "fresh.jsonl"
    assert batch(path, "--out", fresh, "--budgets", "2,4", "--workers", "1") == 0
    assert costs == {r["package_id"]: r["opt"] for r in read(fresh) if r["budget"] == 4}


def test_a_resume_of_an_unchanged_set_rewrites_nothing(tmp_path):
    path = tmp_path / "set.jsonl"
    write_package_set(packages(4), path)
    out = tmp_path / "out.jsonl"
    options = BatchOptions(budgets=(2,))
    run_batch([path], out, options, workers=1, backend="serial")
    before, inode = out.read_bytes(), out.stat().st_ino
    summary = run_batch([path], out, options, workers=1, backend="serial", resume=True)
    assert summary.compaction is None and summary.stale == 0
    assert out.read_bytes() == before and out.stat().st_ino == inode
    assert not superseded_path(out).exists()


def test_an_interrupted_resume_moves_nothing(tmp_path, monkeypatch):
    members = packages(5)
    path = tmp_path / "set.jsonl"
    write_package_set(members, path)
    out = tmp_path / "out.jsonl"
    options = BatchOptions(budgets=(2,))
    run_batch([path], out, options, workers=1, backend="serial")
    write_package_set([with_costs_raised(members[0]), *members[1:]], path, overwrite=True)
    before = out.read_bytes()
    real = batch_module.score_member

    def stop_at_once(task, options, cancel=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(batch_module, "score_member", stop_at_once)
    summary = run_batch([path], out, options, workers=1, backend="serial", resume=True)
    assert summary.interrupted and summary.compaction is None and summary.stale == 0
    assert out.read_bytes() == before and not superseded_path(out).exists()
    monkeypatch.setattr(batch_module, "score_member", real)
    summary = run_batch([path], out, options, workers=1, backend="serial", resume=True)
    assert summary.compaction is not None and summary.compaction.moved_records == 1
    assert len(read(out)) == 5


def test_a_compaction_done_again_adds_no_line_twice(tmp_path):
    side = tmp_path / "r.superseded.jsonl"
    lines = [b'{"a":1}\n', b'{"b":2}\n']
    _append_new_lines(side, lines)
    _append_new_lines(side, [*lines, b'{"c":3}\n'])
    assert side.read_bytes() == b'{"a":1}\n{"b":2}\n{"c":3}\n'


def test_superseded_records_in_the_set_directory_are_not_read_as_members(tmp_path):
    directory = tmp_path / "runs"
    directory.mkdir()
    members = packages(3)
    write_package_set(members, directory / "a.jsonl")
    out = directory / "results.jsonl"
    assert batch(directory, "--out", out, "--budgets", "2") == 0
    write_package_set(members[:2], directory / "a.jsonl", overwrite=True)
    assert batch(directory, "--out", out, "--budgets", "2", "--resume") == 0
    assert superseded_path(out).is_file()
    assert batch(directory, "--out", out, "--budgets", "2", "--resume") == 0
    records = read(out)
    assert len(records) == 2 and all(r["status"] == "optimal" for r in records)


def test_the_compacted_file_keeps_its_mode_and_its_lock(tmp_path):
    members, path, out, options = scored_set(tmp_path, 3)
    os.chmod(out, 0o640)
    write_package_set(members[1:], path, overwrite=True)
    held = []
    real = batch_module.compact

    def compact_then_try_the_lock(output, *args):
        result = real(output, *args)
        held.append(locked(out))
        return result

    batch_module.compact, saved = compact_then_try_the_lock, real
    try:
        run_batch([path], out, options, workers=1, backend="serial", resume=True)
    finally:
        batch_module.compact = saved
    assert held == [True]
    assert out.stat().st_mode & 0o777 == 0o640
    assert not list(tmp_path.glob(".out.jsonl.compact-*"))


def test_a_run_that_wins_the_lock_of_a_replaced_file_opens_the_new_one(tmp_path):
    # A resume that moved records aside renames its new file over the old one and then lets the
    # old one go; a second run that opened the old one just before wins its lock. It must not
    # write into that file, which no longer has a name.
    from memaudit_fast.experiments import batch_resume

    _, path, out, options = scored_set(tmp_path, 2)
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(out.read_bytes())
    real = batch_resume.lock_file
    calls = []

    def replaced_before_the_lock(fd):
        if not calls:
            os.replace(replacement, out)
        calls.append(os.fstat(fd).st_ino)
        return real(fd)

    batch_resume.lock_file = replaced_before_the_lock
    try:
        summary = run_batch([path], out, options, workers=1, backend="serial", resume=True)
    finally:
        batch_resume.lock_file = real
    assert len(calls) == 2 and calls[0] != calls[1] == out.stat().st_ino
    assert summary.skipped == 2 and len(read(out)) == 2


@pytest.mark.parametrize("edit", ["insert", "reorder", "duplicate"])
def test_members_that_moved_get_their_new_source_and_nothing_is_moved_aside(tmp_path, edit):
    members = packages(5)
    path = tmp_path / "set.jsonl"
    write_package_set(members, path)
    out, fresh = tmp_path / "out.jsonl", tmp_path / "fresh.jsonl"
    options = BatchOptions(budgets=(2,))
    run_batch([path], out, options, workers=1, backend="serial")
    edited = {"insert": [packages(1, first_seed=80)[0], *members], "reorder": members[::-1],
              "duplicate": [members[3], *members]}[edit]
    write_package_set(edited, path, overwrite=True)
    summary = run_batch([path], out, options, workers=1, backend="serial", resume=True)
    run_batch([path], fresh, options, workers=1, backend="serial")
    assert essence(read(out)) == essence(read(fresh))
    assert summary.compaction is not None and summary.compaction.moved_records == 0
    assert not superseded_path(out).exists()


@pytest.mark.parametrize(("recorded", "now", "same"), [
    ("set.jsonl line 3", "set.jsonl line 3", True),
    ("set.jsonl line 3", "/data/runs/set.jsonl line 3", True),  # the set by another path
    ("set.jsonl line 3", "set.jsonl line 4", False),
    ("a.jsonl line 3", "b.jsonl line 3", False),
    ("dir/p.json", "/abs/dir/p.json", True),
    ("dir/p.json", "dir/q.json", False),
    ("dir/p.json", "set.jsonl line 1", False),
    ("<stdin> line 2", "set.jsonl line 2", False),
    ("a/set.jsonl line 3", "b/set.jsonl line 3", False),  # two files of one name
    ("/a/set.jsonl line 3", "/b/set.jsonl line 3", False),
    ("sets/x.jsonl line 1", "x.jsonl line 1", True),  # resumed from inside sets/
    ("../sets/x.jsonl line 1", "/work/sets/x.jsonl line 1", True),
    ("./d/p.json", "d/p.json", True),
    ("d/p.json", "d2/p.json", False),  # a directory set split into two folders
])
def test_same_place(recorded, now, same, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # none of these paths is a file from here
    assert same_place(recorded, now) is same


def test_same_place_asks_the_files_it_finds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "set.jsonl").write_text("")
    (tmp_path / "b" / "set.jsonl").write_text("")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "a" / "set.jsonl")
    assert not same_place("a/set.jsonl line 1", f"{tmp_path}/b/set.jsonl line 1")
    assert same_place("a/set.jsonl line 1", f"{tmp_path}/a/set.jsonl line 1")
    assert same_place("link.jsonl line 1", "a/set.jsonl line 1")  # one file, two names


def test_two_files_of_one_name_that_swapped_contents_swap_their_sources(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first, second = Path("a/set.jsonl"), Path("b/set.jsonl")
    first.parent.mkdir()
    second.parent.mkdir()
    write_package_set(packages(2), first)
    write_package_set(packages(2, first_seed=40), second)
    options = BatchOptions(budgets=(2,))
    run_batch([first, second], "out.jsonl", options, workers=1, backend="serial")
    swapped = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(swapped)
    summary = run_batch([first, second], "out.jsonl", options, workers=1, backend="serial", resume=True)
    run_batch([first, second], "fresh.jsonl", options, workers=1, backend="serial")
    assert summary.skipped == 4 and summary.compaction is not None and summary.compaction.relabelled == 4
    assert essence(read(Path("out.jsonl"))) == essence(read(Path("fresh.jsonl")))


def test_a_directory_set_split_in_two_folders_says_where_each_package_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder, other = Path("d"), Path("d2")
    folder.mkdir()
    for k, package in enumerate(packages(4)):
        (folder / f"p{k}.json").write_text(json.dumps(package))
    options = BatchOptions(budgets=(2,))
    run_batch([folder], "out.jsonl", options, workers=1, backend="serial")
    other.mkdir()
    for k in (2, 3):
        (folder / f"p{k}.json").rename(other / f"p{k}.json")
    summary = run_batch([folder, other], "out.jsonl", options, workers=1, backend="serial", resume=True)
    run_batch([folder, other], "fresh.jsonl", options, workers=1, backend="serial")
    assert summary.compaction is not None and summary.compaction.relabelled == 2
    assert essence(read(Path("out.jsonl"))) == essence(read(Path("fresh.jsonl")))


def test_records_that_cannot_be_moved_aside_stay_and_the_run_says_so(tmp_path, capsys):
    members, path, out, _ = scored_set(tmp_path, 3)
    superseded_path(out).symlink_to(tmp_path / "elsewhere.jsonl")  # not followed
    write_package_set(members[1:], path, overwrite=True)
    before = out.read_bytes()
    capsys.readouterr()
    assert batch(path, "--out", out, "--budgets", "2", "--workers", "1", "--resume") == 0
    assert out.read_bytes() == before
    err = capsys.readouterr().err
    assert "could not be moved aside" in err and "superseded" in err
    assert not (tmp_path / "elsewhere.jsonl").exists()


def test_a_resume_on_a_set_emptied_since_refuses_and_keeps_every_record(tmp_path, capsys):
    _, path, out, _ = scored_set(tmp_path, 3)
    before = out.read_bytes()
    path.write_bytes(b"")
    capsys.readouterr()
    assert batch(path, "--out", out, "--budgets", "2", "--resume") == 2
    err = capsys.readouterr().err
    assert f"no packages in SET {path}" in err and "left with the records it had" in err
    assert out.read_bytes() == before and not superseded_path(out).exists()


@pytest.mark.parametrize("name", ["out.superseded.jsonl", "sub/r.superseded.jsonl"])
@pytest.mark.parametrize("mode", [(), ("--resume",), ("--force",)])
def test_a_superseded_file_is_not_a_results_file_to_write(tmp_path, capsys, name, mode):
    _, path, out, _ = scored_set(tmp_path, 3)
    write_package_set(packages(2, first_seed=30), path, overwrite=True)
    assert batch(path, "--out", out, "--budgets", "2", "--resume") == 0  # moves 3 members aside
    side = superseded_path(out)
    target = tmp_path / name
    before = side.read_bytes()
    capsys.readouterr()
    assert batch(path, "--out", target, "--budgets", "2", *mode) == 2
    assert "keeps the records of packages no longer in the set" in capsys.readouterr().err
    assert side.read_bytes() == before
    assert target == side or not target.exists()
