"""A refused batch leaves its results file byte for byte as it was; a resume puts it in order.

A SET that is no package set (a device, a FIFO, an unreadable file, a results file, or for a
resume one whose members all fail) is refused with exit 2 before anything is written, and the
file keeps even an incomplete last line. A resume that read its whole set leaves the records
in the set's order, as a fresh run on it writes them.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.experiments import batch as batch_module
from memaudit_fast.experiments.batch import BatchOptions, run_batch
from memaudit_fast.experiments.batch_compact import superseded_path
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.suites.small import generate_package

DISTS = ["base", "density_trap", "update_chain", "summary_tradeoff", "scope_shift"]


def packages(count: int, first_seed: int = 0) -> list[dict]:
    return [generate_package(DISTS[k % len(DISTS)], seed=first_seed + k) for k in range(count)]


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def without_seconds(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def batch(*args: str | Path) -> int:
    return main(["batch", *map(str, args), "--workers", "1", "--quiet"])


def with_costs_raised(package: dict) -> dict:
    changed = json.loads(json.dumps(package))
    for candidate in changed["candidates"]:
        candidate["cost"] += 1
    return changed


@pytest.fixture
def torn(tmp_path: Path) -> tuple[Path, Path]:
    """(set, results) where the results end in an incomplete line, as a kill leaves them."""
    path = tmp_path / "set.jsonl"
    write_package_set(packages(5), path)
    out = tmp_path / "out.jsonl"
    assert batch(path, "--out", out, "--budgets", "2,4") == 0
    with out.open("r+b") as f:
        f.truncate(out.stat().st_size - 100)
    return path, out


def no_package_set(tmp_path: Path, kind: str, results: Path) -> Path:
    if kind == "empty set":
        source = tmp_path / "empty.jsonl"
        source.write_bytes(b"")
    elif kind == "notes folder":
        source = tmp_path / "notes"
        source.mkdir()
        (source / "notes.txt").write_text("hi\n")
    elif kind == "lines that are not JSON":
        source = tmp_path / "bad.jsonl"
        source.write_bytes(b"{bad\nnope\n")
    elif kind == "results file":
        source = tmp_path / "old-results.jsonl"
        shutil.copyfile(results, source)
    elif kind == "device":
        source = Path(os.devnull)
    else:
        source = tmp_path / "fifo"
        os.mkfifo(source)
    return source


KINDS = ["empty set", "notes folder", "lines that are not JSON", "results file", "device", "fifo"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_resume_leaves_the_file_byte_for_byte_with_its_torn_tail(tmp_path, torn, capsys, kind):
    # The incomplete last line was cut before the set was read, so a refusal said the file
    # "was left with the records it had" about a file it had changed; a set of no package
    # (a folder of notes, lines that are not JSON) moved every record aside and exited 3.
    _, out = torn
    before = out.read_bytes()
    source = no_package_set(tmp_path, kind, out)
    capsys.readouterr()
    assert batch(source, "--out", out, "--budgets", "2,4", "--resume") == 2
    assert out.read_bytes() == before
    assert not superseded_path(out).exists()
    err = capsys.readouterr().err
    assert f"SET {source}" in err


@pytest.mark.parametrize("kind", ["notes folder", "lines that are not JSON"])
def test_a_resume_of_no_package_quotes_the_failures(tmp_path, torn, capsys, kind):
    _, out = torn
    source = no_package_set(tmp_path, kind, out)
    capsys.readouterr()
    assert batch(source, "--out", out, "--budgets", "2,4", "--resume") == 2
    err = capsys.readouterr().err
    assert "failed" in err and ("not read" in err or "not valid JSON" in err)
    assert f"{out} was left with the records it had, as it was" in err


def test_force_with_an_empty_set_leaves_the_old_file(tmp_path, torn):
    _, out = torn
    before = out.read_bytes()
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert batch(empty, "--out", out, "--budgets", "2,4", "--force") == 2
    assert out.read_bytes() == before


def test_a_fresh_run_on_a_set_of_no_package_still_writes_error_records(tmp_path):
    source = no_package_set(tmp_path, "notes folder", tmp_path)
    out = tmp_path / "out.jsonl"
    assert batch(source, "--out", out, "--budgets", "2") == 3
    assert [r["status"] for r in read(out)] == ["error"]


def test_a_resume_of_a_set_whose_members_failed_before_counts_them_failed_again(tmp_path):
    # Not a set foreign to the file: its members have error records there, so the resume
    # scores them again and, failing again, exits 3 without a second error record.
    source = no_package_set(tmp_path, "lines that are not JSON", tmp_path)
    out = tmp_path / "out.jsonl"
    assert batch(source, "--out", out, "--budgets", "2") == 3
    before = out.read_bytes()
    assert batch(source, "--out", out, "--budgets", "2", "--resume") == 3
    assert out.read_bytes() == before


def test_a_resume_writes_the_errors_held_before_a_package_in_order(tmp_path):
    members = packages(3)
    path = tmp_path / "set.jsonl"
    write_package_set(members, path)
    out, fresh = tmp_path / "out.jsonl", tmp_path / "fresh.jsonl"
    assert batch(path, "--out", out, "--budgets", "2") == 0
    path.write_bytes(b"{broken\n" + path.read_bytes())  # an error before members found done
    assert batch(path, "--out", out, "--budgets", "2", "--resume") == 3
    assert batch(path, "--out", fresh, "--budgets", "2") == 3
    assert without_seconds(read(out)) == without_seconds(read(fresh))


def test_an_interrupted_run_that_wrote_nothing_leaves_the_torn_tail(tmp_path, torn, monkeypatch):
    path, out = torn
    write_package_set([with_costs_raised(packages(1)[0]), *packages(5)[1:]], path, overwrite=True)
    before = out.read_bytes()

    def stop_at_once(task, options, cancel=None):
        raise KeyboardInterrupt

    real = batch_module.score_member
    monkeypatch.setattr(batch_module, "score_member", stop_at_once)
    options = BatchOptions(budgets=(2, 4))
    summary = run_batch([path], out, options, workers=1, backend="serial", resume=True)
    assert summary.interrupted and out.read_bytes() == before
    monkeypatch.setattr(batch_module, "score_member", real)
    summary = run_batch([path], out, options, workers=1, backend="serial", resume=True)
    assert summary.truncated_tail and not summary.interrupted
    fresh = tmp_path / "fresh.jsonl"
    run_batch([path], fresh, options, workers=1, backend="serial")
    assert without_seconds(read(out)) == without_seconds(read(fresh))


# A results file given as the set ----------------------------------------------------------------
@pytest.mark.parametrize("gz", [False, True], ids=["jsonl", "jsonl.gz"])
@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "resume"])
def test_a_results_file_given_as_the_set_is_refused(tmp_path, capsys, gz, resume):
    # The mirror of a package set given as --out: every record was scored as a failed member,
    # and on a resume every record of --out was moved aside.
    path = tmp_path / "set.jsonl"
    write_package_set(packages(3), path)
    results = tmp_path / "r.jsonl"
    assert batch(path, "--out", results, "--budgets", "2") == 0
    if gz:
        results = tmp_path / "r.jsonl.gz"
        results.write_bytes(gzip.compress(b"\n" + (tmp_path / "r.jsonl").read_bytes()))
    out = tmp_path / "r2.jsonl"
    if resume:
        assert batch(path, "--out", out, "--budgets", "2") == 0
    before = out.read_bytes() if resume else None
    capsys.readouterr()
    assert batch(results, "--out", out, "--budgets", "2", *(["--resume"] if resume else [])) == 2
    err = capsys.readouterr().err
    assert f"SET {results} is a results file" in err and "as --out with --resume" in err
    assert (out.read_bytes() == before) if resume else not out.exists()
    assert not superseded_path(out).exists()


# SETs that cannot be read --------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_set_that_is_a_device_or_a_fifo_is_refused_before_the_output_is_opened(tmp_path, capsys, kind):
    source = no_package_set(tmp_path, kind, tmp_path)
    out = tmp_path / "new" / "o.jsonl"
    capsys.readouterr()
    assert batch(source, "--out", out, "--budgets", "2") == 2
    err = capsys.readouterr().err
    assert f"SET {source} is a {'device' if kind == 'device' else 'FIFO'}" in err
    assert not out.exists() and not out.parent.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_an_unreadable_set_file_is_refused(tmp_path, capsys):
    path = tmp_path / "set.jsonl"
    write_package_set(packages(2), path)
    path.chmod(0)
    out = tmp_path / "o.jsonl"
    capsys.readouterr()
    assert batch(path, "--out", out, "--budgets", "2") == 2
    assert f"SET {path}: cannot be read (Permission denied)" in capsys.readouterr().err
    assert not out.exists()


def test_a_set_file_that_cannot_be_opened_is_refused(tmp_path, capsys, monkeypatch):
    # The case above, where it runs as root too.
    path = tmp_path / "set.jsonl"
    write_package_set(packages(2), path)
    real = os.open

    def refuse(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file) == path:
            raise PermissionError(13, "Permission denied", str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    out = tmp_path / "o.jsonl"
    capsys.readouterr()
    assert batch(path, "--out", out, "--budgets", "2") == 2
    assert f"SET {path}: cannot be read (Permission denied)" in capsys.readouterr().err
    assert not out.exists()


def test_a_fifo_inside_a_set_directory_is_a_failed_member(tmp_path):
    folder = tmp_path / "sd"
    folder.mkdir()
    write_package_set(packages(1), folder / "a.jsonl")
    os.mkfifo(folder / "b.fifo")
    out = tmp_path / "o.jsonl"
    assert batch(folder, "--out", out, "--budgets", "2") == 3
    assert [r["status"] for r in read(out)] == ["optimal", "error"]


# Order ---------------------------------------------------------------------------------------------
def check_like_a_fresh_run(tmp_path: Path, path: Path, out: Path) -> None:
    fresh = tmp_path / "fresh.jsonl"
    assert batch(path, "--out", fresh, "--budgets", "2,4") == 0
    records = read(out)
    assert [("options" in r) for r in records] == [True] + [False] * (len(records) - 1)
    assert without_seconds(records) == without_seconds(read(fresh))


@pytest.mark.parametrize("edit", ["reversed", "one edited", "one added first"])
def test_a_resume_leaves_the_records_in_the_sets_order(tmp_path, capsys, edit):
    members = packages(5)
    path = tmp_path / "set.jsonl"
    write_package_set(members, path)
    out = tmp_path / "out.jsonl"
    assert batch(path, "--out", out, "--budgets", "2,4") == 0
    if edit == "reversed":
        edited = members[::-1]
    elif edit == "one edited":
        edited = [*members[:2], with_costs_raised(members[2]), *members[3:]]
    else:
        edited = [*packages(1, first_seed=40), *members]
    write_package_set(edited, path, overwrite=True)
    capsys.readouterr()
    assert batch(path, "--out", out, "--budgets", "2,4", "--resume") == 0
    assert "put in the set's order" in capsys.readouterr().err
    check_like_a_fresh_run(tmp_path, path, out)


def test_a_resume_puts_back_in_order_what_an_interruption_wrote_out_of_order(tmp_path):
    # An interrupted run with several workers writes the chunks that finished, not only the
    # first ones: here the first package's records come last, and the first record has no options.
    path = tmp_path / "set.jsonl"
    write_package_set(packages(4), path)
    out = tmp_path / "out.jsonl"
    assert batch(path, "--out", out, "--budgets", "2,4") == 0
    lines = out.read_bytes().splitlines(keepends=True)
    first = json.loads(lines[0])
    del first["options"]
    lines[0] = json.dumps(first, separators=(",", ":")).encode() + b"\n"
    out.write_bytes(b"".join(lines[2:] + lines[:1]))  # the first package cut short at its second budget
    summary = run_batch([path], out, BatchOptions(budgets=(2, 4)), workers=1, backend="serial", resume=True)
    assert summary.packages == 1 and summary.compaction is not None and summary.compaction.reordered
    check_like_a_fresh_run(tmp_path, path, out)
    # In order now: a resume leaves it as it is.
    before, inode = out.read_bytes(), out.stat().st_ino
    assert run_batch([path], out, BatchOptions(budgets=(2, 4)), workers=1, backend="serial",
                     resume=True).compaction is None
    assert out.read_bytes() == before and out.stat().st_ino == inode


@pytest.mark.parametrize("spoil", [
    {"opt": "12"}, {"status": "bogus"}, {"opt": None}, {"selected": "c1"}, {"package_id": 7},
    {"budget": -1},
], ids=["opt-string", "status", "opt-null", "selected-string", "package-id", "budget"])
def test_a_resume_refuses_a_record_export_refuses_and_leaves_the_file(tmp_path, capsys, spoil):
    # Such a record counted as done: its package was never solved again, and the file stayed
    # one that export and report refuse.
    path = tmp_path / "set.jsonl"
    write_package_set(packages(3), path)
    out = tmp_path / "out.jsonl"
    assert batch(path, "--out", out, "--budgets", "2,4") == 0
    lines = out.read_bytes().split(b"\n")
    record = json.loads(lines[2])
    record.update(spoil)
    lines[2] = json.dumps(record).encode()
    out.write_bytes(b"\n".join(lines))
    before = out.read_bytes()
    capsys.readouterr()
    assert batch(path, "--out", out, "--budgets", "2,4", "--resume") == 2
    err = capsys.readouterr().err
    assert "line 3" in err and f"field '{next(iter(spoil))}'" in err
    assert out.read_bytes() == before


@pytest.mark.parametrize("agrees", [None, False])
def test_a_certificate_that_could_not_be_made_or_disagrees_ends_the_batch_with_3(tmp_path, capsys, monkeypatch,
                                                                                agrees):
    # solve --certify said so with exit 3; batch --certify said 0 failed and exited 0.
    from memaudit_fast.solve import certify as certify_module

    real = certify_module.certify

    def short(*args, **kwargs):
        import dataclasses

        return dataclasses.replace(real(*args, **kwargs), agrees=agrees)

    monkeypatch.setattr(certify_module, "certify", short)
    path = tmp_path / "set.jsonl"
    write_package_set(packages(2), path)
    out = tmp_path / "out.jsonl"
    assert batch(path, "--out", out, "--budgets", "2", "--certify", "highs") == 3
    said = "0 certificate(s) disagree, 2 could not be made" if agrees is None else "2 certificate(s) disagree, 0 could"
    assert said in capsys.readouterr().err
    assert [r["certificate"]["agrees"] for r in read(out)] == [agrees, agrees]
    monkeypatch.setattr(certify_module, "certify", real)
    assert batch(path, "--out", tmp_path / "fine.jsonl", "--budgets", "2", "--certify", "highs") == 0


def test_a_set_named_where_a_resume_moves_records_is_never_written_to(tmp_path, capsys):
    # r.jsonl's moved records go to r.superseded.jsonl: given as the set, a resume appended a
    # result record to it.
    path = tmp_path / "r.superseded.jsonl"
    write_package_set(packages(2), path)
    before = path.read_bytes()
    for extra in ([], ["--resume"], ["--force"]):
        assert batch(path, "--out", tmp_path / "r.jsonl", "--budgets", "2", *extra) == 2
        assert "which is an input" in capsys.readouterr().err
    os.link(path, tmp_path / "set.jsonl")  # the same file under another name
    assert batch(tmp_path / "set.jsonl", "--out", tmp_path / "r.jsonl", "--budgets", "2") == 2
    assert path.read_bytes() == before and not (tmp_path / "r.jsonl").exists()
