"""Batch durability: failures retried on resume, the estimator keyed by its model, signals to the
whole process group, and finished packages reaching the file while their chunk-mates still run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import UsageError
from memaudit_fast.evaluate.estimators import fit_ridge
from memaudit_fast.experiments.batch import BatchOptions, read_done, without_superseded_errors
from memaudit_fast.experiments.parallel import ProcessRunner, hand_in
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.results.frame import read_results
from memaudit_fast.suites.small import generate_package
from oracles.batch_runs import HANG, wait_for_lines
from oracles.packages import EASY, easy_then_hard


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def batch(*args: str | Path) -> int:
    return main(["batch", *map(str, args), "--quiet"])


@pytest.fixture
def small_set(tmp_path: Path) -> Path:
    path = tmp_path / "set.jsonl"
    write_package_set([generate_package("base", seed=k) for k in range(4)], path)
    return path


# 1. Error records do not count as done ---------------------------------------------------------
def test_members_that_failed_for_a_limit_since_raised_are_scored_on_resume(tmp_path, small_set, monkeypatch, capsys):
    out = tmp_path / "out.jsonl"
    monkeypatch.setenv("MEMAUDIT_MAX_CANDIDATES", "5")
    assert batch(small_set, "--out", out, "--budgets", "2,4", "--workers", "1") == 3
    first = read(out)
    assert [r["status"] for r in first] == ["error"] * 4
    capsys.readouterr()

    monkeypatch.delenv("MEMAUDIT_MAX_CANDIDATES")
    assert batch(small_set, "--out", out, "--budgets", "2,4", "--workers", "1", "--resume") == 0
    records = read(out)
    # The error records stay, each just before its member's new records (the set's order).
    assert [r for r in records if r["status"] == "error"] == first
    assert [r["status"] for r in records] == ["error", "optimal", "optimal"] * 4
    assert [r["member_digest"] for r in records[::3]] == [r["member_digest"] for r in first]
    err = capsys.readouterr().err
    assert "4 packages scored (8 records, 0 failed, 4 that had failed before retried)" in err

    # Nothing left to do, and the superseded error records are not counted by a reader.
    assert batch(small_set, "--out", out, "--budgets", "2,4", "--workers", "1", "--resume") == 0
    assert read(out) == records
    current = without_superseded_errors(records)
    assert current == [r for r in records if r["status"] != "error"]
    frame = read_results(out)  # the tables read the file through it
    assert len(frame) == 8 and set(frame["status"]) == {"optimal"}


def test_a_member_that_fails_again_on_resume_keeps_one_error_record_and_counts_as_failed(tmp_path, capsys):
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(generate_package("base", seed=1)) + "\n{broken\n")
    out = tmp_path / "out.jsonl"
    assert batch(path, "--out", out, "--budgets", "2", "--workers", "1") == 3
    before = out.read_bytes()
    capsys.readouterr()
    assert batch(path, "--out", out, "--budgets", "2", "--workers", "1", "--resume") == 3
    assert out.read_bytes() == before  # no second record for the same key
    err = capsys.readouterr().err
    assert "1 failed" in err and "1 already done" in err and "1 that had failed before retried" in err
    assert "failed: " in err and "line 2" in err


def test_without_superseded_errors_keeps_errors_of_other_options_and_other_members():
    error = {"status": "error", "budget": None, "member_digest": "m1", "options_digest": "o1"}
    other_options = dict(error, options_digest="o2")
    other_member = dict(error, member_digest="m2")
    solved = {"status": "optimal", "budget": 2, "member_digest": "m1", "options_digest": "o1"}
    plain = {"status": "error", "budget": None}  # not from a batch: no digests
    records = [error, other_options, other_member, solved, plain]
    assert without_superseded_errors(records) == [other_options, other_member, solved, plain]


# 2. and 3. The estimator: refused up front when it is not a model, keyed by the model ------------
def write_model(path: Path, alpha: float) -> Path:
    train = [Package.from_dict(generate_package("base", seed=seed)) for seed in range(100, 106)]
    path.write_text(json.dumps(fit_ridge(train, alpha=alpha).to_json(), indent=1))
    return path


@pytest.mark.parametrize(("content", "says"), [
    (None, "no such file"),
    ('{"format": "memaudit.result/1"}', "cannot be loaded as a memaudit.estimator/1 model"),
    ("{not json", "cannot be loaded as a memaudit.estimator/1 model"),
])
def test_an_estimator_that_is_not_a_model_is_refused_before_anything_is_written(
        tmp_path, small_set, capsys, content, says):
    model = tmp_path / "model.json"
    if content is not None:
        model.write_text(content)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"earlier results\n")  # --force must not empty it
    assert batch(small_set, "--out", out, "--budgets", "2", "--writers", "estimated_gvt",
                 "--estimator", model, "--force") == 2
    assert out.read_bytes() == b"earlier results\n"
    err = capsys.readouterr().err
    assert f"--estimator {model}: {says}" in err and "train-estimator" in err and "--estimator embed" in err
    with pytest.raises(UsageError):
        BatchOptions(budgets=(2,), estimator=str(model))


def test_the_estimator_is_keyed_by_its_model_not_its_path(tmp_path, small_set, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model = write_model(tmp_path / "model.json", alpha=1.0)
    out = tmp_path / "out.jsonl"
    common = ["--budgets", "2", "--writers", "estimated_gvt", "--workers", "1"]
    assert batch(small_set, "--out", out, *common, "--estimator", "model.json") == 0
    first = out.read_bytes()
    assert len(read(out)) == 4
    # The same model spelt otherwise, or re-indented: the same options, nothing to do.
    for spelling in ("./model.json", str(model)):
        assert batch(small_set, "--out", out, *common, "--estimator", spelling, "--resume") == 0
    model.write_text(json.dumps(json.loads(model.read_text())))
    assert batch(small_set, "--out", out, *common, "--estimator", "model.json", "--resume") == 0
    assert out.read_bytes() == first
    capsys.readouterr()

    # Another model at the same path: refused, the file untouched.
    write_model(model, alpha=100.0)
    assert batch(small_set, "--out", out, *common, "--estimator", "model.json", "--resume") == 2
    assert out.read_bytes() == first
    assert "the estimator model differs" in capsys.readouterr().err
    # The options read back from the file name the model by its digest.
    keys, errored, _ = read_done(out)
    assert len(keys) == 4 and not errored


def test_workers_score_with_the_model_the_options_digested(tmp_path, small_set, monkeypatch):
    from memaudit_fast.experiments import batch as batch_module
    from memaudit_fast.experiments import batch_scoring

    monkeypatch.setattr(batch_scoring, "_ESTIMATORS", {})  # nothing loaded before
    model = write_model(tmp_path / "model.json", alpha=1.0)
    options = BatchOptions(budgets=(2,), writers=("estimated_gvt",), estimator=str(model))
    write_model(model, alpha=100.0)  # changed after the options were made: not used
    batch_module.run_batch([small_set], tmp_path / "out.jsonl", options, workers=1, backend="serial")
    alphas = {r["writers"]["estimated_gvt"]["estimate"]["alpha"] for r in read(tmp_path / "out.jsonl")}
    assert alphas == {1.0}


# Resume reads the content, not st_size --------------------------------------------------------
@pytest.mark.skipif(not Path("/proc/self/comm").is_file(), reason="needs Linux /proc")
def test_resume_on_a_proc_file_reads_its_content_and_refuses_it(tmp_path, small_set, capsys):
    comm = Path("/proc/self/comm")  # size 0 by stat, but not empty, and writable by this process
    before = comm.read_bytes()
    assert batch(small_set, "--out", comm, "--budgets", "2", "--workers", "1", "--resume") == 2
    assert comm.read_bytes() == before
    assert "not a JSON record" in capsys.readouterr().err


# 4. and 5. Signals to the whole process group; finished packages reach the file at once ----------
# The hard packages are subset-sum knapsacks (even costs, odd budget, value = cost): the bound
# never meets the incumbent, so they run until their 600 s limit unless stopped. A run that does
# not do what it should hits the generous timeouts below; no assertion measures speed.


@pytest.fixture
def start():
    started: list[subprocess.Popen] = []

    def run(set_path: Path, out: Path, *extra: str) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "memaudit_fast", "batch", str(set_path), "--out", str(out),
               "--time-limit", "600", "--workers", "2", *extra]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        started.append(proc)
        return proc

    yield run
    for proc in started:  # a failed test must not leave a batch solving for 600 s
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and SIGUSR1 as on Linux")
@pytest.mark.parametrize("chunk", [[], ["--chunk-size", "1"]], ids=["default-chunk", "chunk-1"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_signal_to_the_whole_process_group_stops_in_order_and_keeps_what_finished(tmp_path, start, sig, chunk):
    # timeout -s TERM, systemd and docker stop signal the whole group, workers included.
    out = tmp_path / "out.jsonl"
    proc = start(easy_then_hard(tmp_path / "set.jsonl"), out, *chunk)
    wait_for_lines(out, EASY * 2, proc)
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "interrupted" in err and "--resume" in err
    records = read(out)
    assert len(records) == EASY * 2 and all(r["status"] == "optimal" for r in records)


@pytest.mark.skipif(sys.platform != "linux", reason="process groups as on Linux")
def test_packages_that_finished_survive_sigkill_while_a_chunk_mate_still_runs(tmp_path, start):
    # One chunk (the default size) holds the easy packages and then the hard ones: the easy
    # ones must be in the file while the chunk still runs, and so survive a SIGKILL.
    out = tmp_path / "out.jsonl"
    proc = start(easy_then_hard(tmp_path / "set.jsonl"), out)
    wait_for_lines(out, EASY * 2, proc)
    assert proc.poll() is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=HANG)
    records = read(out)
    assert [(r["package_id"], r["budget"]) for r in records] == [
        (f"small/base/s{k:04d}", b) for k in range(EASY) for b in (2, 4)]


def _slow_second(chunk: list[float]) -> list[float]:
    outcomes = []
    for seconds in chunk:
        threading.Event().wait(seconds)  # the work of a package that takes this long
        outcomes.append(seconds)
        hand_in(seconds)
    return outcomes


def test_a_process_runner_hands_in_outcomes_before_the_chunk_ends_once_each_in_order():
    runner = ProcessRunner(_slow_second, (), 2)
    try:
        handle = runner.submit([0.0, 0.01, 30.0])
        first: list[float] = []
        for _ in range(HANG * 10):
            first += runner.take(handle, 0.1)
            if len(first) == 2:
                break
        assert first == [0.0, 0.01] and not runner.finished(handle)
        quick = runner.submit([0.0, 0.0])
        assert runner.result(quick) == [0.0, 0.0]
    finally:
        runner.stop()


def test_default_chunks_start_small_and_double_so_a_small_set_keeps_every_worker_busy():
    from memaudit_fast.experiments.parallel import chunks

    assert [len(c) for c in chunks(iter(range(14)), 32)] == [14]  # one worker would get it all
    assert [len(c) for c in chunks(iter(range(14)), 32, first=1)] == [1, 2, 4, 7]
    assert [len(c) for c in chunks(iter(range(200)), 32, first=1)] == [1, 2, 4, 8, 16, 32, 32, 32, 32, 32, 9]
    assert [len(c) for c in chunks(iter(range(5)), 1, first=1)] == [1] * 5
    assert list(chunks(iter(range(6)), 4, first=1)) == [[0], [1, 2], [3, 4, 5]]


def test_the_batch_ramps_its_default_chunks_and_keeps_a_chosen_size(tmp_path, small_set, monkeypatch):
    from memaudit_fast.experiments import batch as batch_module
    from memaudit_fast.experiments.parallel import chunks

    sizes: list[list[int]] = []

    def recorded(items, size, first=None):
        sizes.append([])
        for chunk in chunks(items, size, first):
            sizes[-1].append(len(chunk))
            yield chunk

    monkeypatch.setattr(batch_module, "chunks", recorded)
    options = BatchOptions(budgets=(2.0,))
    batch_module.run_batch([small_set], tmp_path / "a.jsonl", options, workers=2, backend="threads")
    batch_module.run_batch([small_set], tmp_path / "b.jsonl", options, workers=2, backend="threads", chunk_size=4)
    assert sizes == [[1, 2, 1], [4]]
    # The same records in the same order either way.
    assert [r["member_digest"] for r in read(tmp_path / "a.jsonl")] == \
        [r["member_digest"] for r in read(tmp_path / "b.jsonl")]


def test_two_broken_artifact_directories_are_two_failures_not_one_repeated(tmp_path):
    # The directory digest counts every entry, read or not: a FIFO, a link or a folder where a
    # file goes are different contents, each reported with its own cause.
    from memaudit_fast.model.io import save_package

    package = Package.from_dict(generate_package("base", seed=3))
    root = tmp_path / "set"
    root.mkdir()
    names = ("a_fifo", "b_link", "c_folder", "d_fine")
    for name in names:
        save_package(package, root / name, layout="artifact")
    queries = root / "b_link" / "queries.jsonl"
    queries.rename(tmp_path / "elsewhere.jsonl")
    queries.symlink_to(tmp_path / "elsewhere.jsonl")
    (root / "a_fifo" / "queries.jsonl").unlink()
    os.mkfifo(root / "a_fifo" / "queries.jsonl")
    (root / "c_folder" / "queries.jsonl").unlink()
    (root / "c_folder" / "queries.jsonl").mkdir()
    out = tmp_path / "out.jsonl"
    assert batch(root, "--out", out, "--budgets", "1") == 3
    records = read(out)
    failed = sorted(r["source"] for r in records if r["status"] == "error")
    assert failed == [str(root / n) for n in names[:3]]
    assert [r["source"] for r in records if r["status"] != "error"] == [str(root / "d_fine")]


def test_a_package_spelt_with_escapes_is_the_same_member_as_its_plain_line(tmp_path):
    # Python's json.dump escapes every non-ASCII character (ensure_ascii): the same package as
    # a .jsonl line and as such a .json file is one member, scored once.
    package = generate_package("base", seed=5)
    package["meta"] = {"note": "caf\u00e9 \u00ac \U0001f600 \"q\" / \\ \n"}
    root = tmp_path / "dir"
    root.mkdir()
    (root / "a.json").write_text(json.dumps(package, indent=2, ensure_ascii=True))
    (root / "b.json").write_text(json.dumps(package, ensure_ascii=False).replace("/", "\\/"))
    line = tmp_path / "set.jsonl"
    line.write_text(json.dumps(package, ensure_ascii=False) + "\n")
    out = tmp_path / "out.jsonl"
    assert batch(root, line, "--out", out, "--budgets", "2") == 0
    records = read(out)
    assert len(records) == 1 and records[0]["status"] == "optimal"
