"""Batch scoring: one record per (package, budget), failure isolation, resume after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.experiments.batch import BatchOptions, run_batch
from memaudit_fast.model.sets import write_package_set
from memaudit_fast.solve.exact import solve
from memaudit_fast.suites.small import generate_package

BUDGETS = (2.0, 4.0, 8.0)


def make_set(path: Path, count: int, scale: int = 1) -> list[dict]:
    dists = ["base", "density_trap", "update_chain", "summary_tradeoff"]
    packages = [generate_package(dists[k % len(dists)], seed=k, scale=scale) for k in range(count)]
    write_package_set(packages, path)
    return packages


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def timings_removed(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def test_batch_one_record_per_package_and_budget_matching_solve(tmp_path):
    packages = make_set(tmp_path / "set.jsonl", 6)
    summary = run_batch([tmp_path / "set.jsonl"], tmp_path / "out.jsonl", BatchOptions(budgets=BUDGETS),
                        workers=1, backend="serial")
    assert summary.packages == 6 and summary.records == 18 and summary.failed == 0
    records = read(tmp_path / "out.jsonl")
    assert [(r["package_id"], r["budget"]) for r in records] == [
        (p["package_id"], b) for p in packages for b in BUDGETS]
    for pkg, start in zip(packages, range(0, 18, 3)):
        for result, record in zip(solve(pkg, budgets=list(BUDGETS)), records[start:start + 3]):
            assert record["opt"] == pytest.approx(result.value, rel=1e-12)
            assert record["status"] == "optimal" and record["proven_optimal"] is True
            assert record["source"].endswith(f"line {start // 3 + 1}")


def test_parallel_backends_give_the_same_records_in_the_same_order(tmp_path):
    make_set(tmp_path / "set.jsonl", 10)
    options = BatchOptions(budget_fracs=(0.05, 0.2), writers=("gvt", "density_only"))
    outputs = {}
    for backend in ("serial", "threads", "local"):
        out = tmp_path / f"{backend}.jsonl"
        run_batch([tmp_path / "set.jsonl"], out, options, workers=2, backend=backend, chunk_size=3)
        outputs[backend] = timings_removed(read(out))
    assert outputs["serial"] == outputs["threads"] == outputs["local"]
    assert all(r["writers"]["gvt"]["ratio"] <= 1 + 1e-9 for r in outputs["serial"])


def test_bad_packages_become_error_records_and_the_batch_goes_on(tmp_path, capsys):
    good = generate_package("base", seed=1)
    lines = [json.dumps(good), '{"format": "memaudit.package/1", "package_id": "broken"}', "{truncated",
             json.dumps(dict(good, package_id="nobudget", budgets=None))]
    (tmp_path / "set.jsonl").write_text("\n".join(lines) + "\n")
    code = main(["batch", str(tmp_path / "set.jsonl"), "--out", str(tmp_path / "out.jsonl"), "--workers", "1"])
    assert code == 3
    records = read(tmp_path / "out.jsonl")
    errors = [r for r in records if r["status"] == "error"]
    assert len(errors) == 3
    # An error record names the package its message names (the id was read and checked before
    # the error), and none where the id is not known.
    assert "units" in errors[0]["error"] and errors[0]["package_id"] == "broken"
    assert "not valid JSON" in errors[1]["error"] and errors[1]["package_id"] is None
    assert "budgets" in errors[2]["error"] and errors[2]["package_id"] == "nobudget"
    assert len([r for r in records if r["status"] == "optimal"]) == len(good["budgets"])
    assert "3 failed" in capsys.readouterr().err


def test_refuses_to_overwrite_results_without_resume_or_force(tmp_path):
    make_set(tmp_path / "set.jsonl", 1)
    (tmp_path / "out.jsonl").write_text("precious\n")
    assert main(["batch", str(tmp_path / "set.jsonl"), "--out", str(tmp_path / "out.jsonl")]) == 2
    assert (tmp_path / "out.jsonl").read_text() == "precious\n"


def test_resume_completes_a_partial_file_without_duplicates(tmp_path):
    make_set(tmp_path / "set.jsonl", 5)
    full = tmp_path / "full.jsonl"
    run_batch([tmp_path / "set.jsonl"], full, BatchOptions(budgets=BUDGETS), workers=1, backend="serial")
    expected = timings_removed(read(full))
    # A run that died after 7 records and in the middle of writing the 8th.
    lines = full.read_text().splitlines(keepends=True)
    partial = tmp_path / "partial.jsonl"
    partial.write_text("".join(lines[:7]) + lines[7][:25])
    summary = run_batch([tmp_path / "set.jsonl"], partial, BatchOptions(budgets=BUDGETS), workers=1,
                        backend="serial", resume=True)
    assert summary.truncated_tail
    got = timings_removed(read(partial))
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, expected))


def line_count(path):
    """Complete lines in a file that may not exist yet or may be mid-write."""
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_sigkill_at_any_moment_then_resume_loses_nothing(tmp_path):
    make_set(tmp_path / "set.jsonl", 400, scale=2)
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "memaudit_fast", "batch", str(tmp_path / "set.jsonl"), "--out", str(out),
           "--budgets", "2,4,8", "--workers", "2", "--chunk-size", "2"]
    kills = 0
    # Kill at different moments after the run has started writing (once it has added 1, 5, 20
    # and 60 records): between records, in the middle of one, while workers hold unfinished
    # chunks. The moments are counted in records written, not in seconds.
    for more in (1, 5, 20, 60):
        lines_before = line_count(out)
        proc = subprocess.Popen(cmd + (["--resume"] if out.exists() else []), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if line_count(out) >= lines_before + more:
                break
            try:
                proc.wait(timeout=0.005)  # wakes at once if the run ends
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 2, "the runs finished before they could be killed; grow the set"
    done = subprocess.run(cmd + ["--resume"], check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    records = read(out)
    keys = Counter((r["source"], r["budget"]) for r in records)
    assert len(keys) == 400 * 3 and set(keys.values()) == {1}
    assert all(r["status"] == "optimal" for r in records)


def test_a_ray_address_nothing_answers_at_is_refused_at_once(tmp_path, capsys):
    pytest.importorskip("ray")
    import socket

    make_set(tmp_path / "set.jsonl", 2)
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    out = tmp_path / "out.jsonl"
    # Refused before ray.init, which retries such an address for a minute or more.
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        assert main(["batch", str(tmp_path / "set.jsonl"), "--out", str(out), "--budgets", "2",
                     "--backend", "ray", "--ray-address", address]) == 2
        err = capsys.readouterr().err
        assert "nothing answers" in err and str(port) in err
    assert main(["batch", str(tmp_path / "set.jsonl"), "--out", str(out), "--budgets", "2",
                 "--backend", "ray", "--ray-address", "head:port"]) == 2
    assert "not a number" in capsys.readouterr().err
    assert not out.exists()


def test_a_ray_address_where_something_else_listens_is_refused_at_once(tmp_path, capsys):
    # A web server (or Ray's dashboard, 8265) at the address: ray.init waited on it for a
    # minute or more; the check now asks whether the port speaks gRPC, as Ray's GCS does.
    pytest.importorskip("ray")
    import http.server
    import threading

    make_set(tmp_path / "set.jsonl", 2)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
            began = time.monotonic()
            assert main(["batch", str(tmp_path / "set.jsonl"), "--out", str(out), "--budgets", "2",
                         "--backend", "ray", "--ray-address", address]) == 2
            assert time.monotonic() - began < 10
            err = capsys.readouterr().err
            assert "not as Ray" in err and str(port) in err
    finally:
        server.shutdown()
        server.server_close()
    assert out.read_bytes() == b""


@pytest.mark.parametrize("running", [True, False], ids=["ray-running", "ray-started-by-the-run"])
def test_ray_backend_matches_local_and_resumes_with_the_same_keys(tmp_path, running):
    ray = pytest.importorskip("ray")
    make_set(tmp_path / "set.jsonl", 8)
    options = BatchOptions(budgets=BUDGETS)
    run_batch([tmp_path / "set.jsonl"], tmp_path / "local.jsonl", options, workers=1, backend="serial")
    expected = timings_removed(read(tmp_path / "local.jsonl"))
    # A partial file (three packages and a torn record), finished on Ray with the same set given
    # twice: the driver writes, the keys stay unique, the records equal the local ones.
    lines = (tmp_path / "local.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "ray.jsonl").write_text("".join(lines[:9]) + lines[9][:30])
    # A Ray already running gets every chunk; one the run starts itself gets those that come
    # after it is up (the driver scores the others meanwhile) and is shut down by the run.
    if running:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning")
    try:
        summary = run_batch([tmp_path / "set.jsonl", tmp_path / "set.jsonl"], tmp_path / "ray.jsonl", options,
                            workers=2, backend="ray", chunk_size=2, resume=True)
        assert ray.is_initialized() == running
    finally:
        ray.shutdown()
    assert summary.truncated_tail and summary.skipped == 3 and summary.duplicates == 8
    assert timings_removed(read(tmp_path / "ray.jsonl")) == expected


def test_a_ray_on_this_machine_reads_the_lines_itself(tmp_path, monkeypatch):
    # On a Ray whose nodes are all this machine, tasks carry where each line is, not its bytes
    # (as the process pool's do); the records are the same.
    ray = pytest.importorskip("ray")
    from memaudit_fast.experiments import ray_runner

    make_set(tmp_path / "set.jsonl", 6)
    options = BatchOptions(budgets=BUDGETS)
    run_batch([tmp_path / "set.jsonl"], tmp_path / "local.jsonl", options, workers=1, backend="serial")
    sent = []
    real = ray_runner.RayRunner._task

    def task(self, chunk):
        sent.extend(kind for (_, kind, _), _, _ in chunk)
        return real(self, chunk)

    monkeypatch.setattr(ray_runner.RayRunner, "_task", task)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning")
    try:
        assert ray_runner._all_nodes_here(ray)
        run_batch([tmp_path / "set.jsonl"], tmp_path / "ray.jsonl", options, workers=2, backend="ray", chunk_size=2)
    finally:
        ray.shutdown()
    assert sent and set(sent) == {"span"}
    assert timings_removed(read(tmp_path / "ray.jsonl")) == timings_removed(read(tmp_path / "local.jsonl"))


def test_a_run_starts_its_own_ray_even_where_another_ray_is_the_default(tmp_path, monkeypatch):
    # Without --ray-address the run starts a Ray of its own. ray.init() alone joins the Ray that
    # RAY_ADDRESS (or a `ray start` on this machine) names, and refuses num_cpus there: the
    # run stopped with exit 2 once its first chunks were scored.
    ray = pytest.importorskip("ray")
    from memaudit_fast.experiments.batch import _score_chunk, _was_interrupted
    from memaudit_fast.experiments.ray_runner import RayRunner

    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    runner = RayRunner(_score_chunk, (BatchOptions(budgets=(2, 4)),), 2, None, _was_interrupted)
    try:
        assert runner.ready.wait(60)
        assert runner.failure is None, runner.failure
        make_set(tmp_path / "set.jsonl", 2)
        summary = run_batch([tmp_path / "set.jsonl"], tmp_path / "ray.jsonl", BatchOptions(budgets=(2, 4)),
                            backend="ray")  # on the Ray just started
        assert summary.packages == 2 and summary.failed == 0
    finally:
        runner.close()
    assert not ray.is_initialized()


def test_a_local_ray_starts_without_the_services_a_run_has_no_use_for():
    # A run's own Ray has no use for the autoscaler's monitor (nothing to scale), the log
    # monitor (no worker output goes to the driver) or the API server (nobody else reaches this
    # Ray); ray.init waited for the API server, and the monitor held the shut-down at the end
    # of every run for a second. What it does start, it stops.
    ray = pytest.importorskip("ray")
    from ray._private import ray_constants

    from memaudit_fast.experiments.ray_runner import RayRunner, _loaded

    params, api_server = ray._private.parameter.RayParams, ray._private.services.start_api_server
    runner = RayRunner(_loaded, (), workers=1, address=None)
    try:
        assert runner.ready.wait(120) and runner.failure is None
        # Only this run's start-up: a Ray started by anyone else starts as it does.
        assert ray._private.parameter.RayParams is params
        assert ray._private.services.start_api_server is api_server
        started = dict(ray._private.worker._global_node.all_processes)
        assert ray_constants.PROCESS_TYPE_RAYLET in started and ray_constants.PROCESS_TYPE_GCS_SERVER in started
        for unused in ("MONITOR", "LOG_MONITOR", "DASHBOARD"):
            assert getattr(ray_constants, f"PROCESS_TYPE_{unused}") not in started
        # It scores on its workers all the same.
        handle = runner.submit([None])
        assert runner.wait(handle, 60.0) and runner.result(handle) != os.getpid()
        services = [info.process for infos in started.values() for info in infos]
    finally:
        runner.close()
    assert not ray.is_initialized()
    assert all(p.poll() is not None for p in services)


def test_a_local_ray_scores_in_the_driver_until_it_is_up_then_on_its_workers():
    ray = pytest.importorskip("ray")
    from memaudit_fast.experiments.ray_runner import RayRunner, _loaded

    assert not ray.is_initialized()
    # _loaded returns the pid of the process that ran it.
    runner = RayRunner(_loaded, (), workers=1, address=None)
    try:
        first = runner.submit([None])
        assert runner.wait(first, 0.0) and runner.result(first) == os.getpid()
        assert runner.ready.wait(120) and runner.failure is None
        handle = runner.submit([None])
        assert runner.wait(handle, 60.0) and runner.result(handle) != os.getpid()
    finally:
        runner.close()
    assert not ray.is_initialized()


def test_the_summarys_rate_keeps_its_figures_below_one_package_a_second() -> None:
    from memaudit_fast.cli.batch import _rate

    assert [_rate(r) for r in (0.0, 0.1438, 1.5, 12.345, 250.4, 5015.3)] == ["0", "0.144", "1.5", "12.3", "250", "5015"]
