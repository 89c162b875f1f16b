"""Progress lines: plain and periodic off a terminal, silent when quiet."""

from __future__ import annotations

import io
import threading
from typing import Any

from memaudit_fast.progress import Progress


def test_plain_lines_off_a_terminal_end_with_a_summary() -> None:
    out = io.StringIO()
    with Progress("batch", total=3, unit="package", stream=out, interval=0.0) as p:
        p.update()
        p.update(2, failed=1)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("batch: 1/3 packages")
    assert "ETA" in lines[0]
    assert lines[-1].startswith("batch: 3/3 packages") and lines[-1].endswith("1 failed, done")


def test_quiet_writes_nothing_but_still_counts() -> None:
    out = io.StringIO()
    with Progress("x", stream=out, quiet=True, interval=0.0) as p:
        p.update(5, failed=2)
        p.note("hello")
    assert out.getvalue() == ""
    assert (p.count, p.failed) == (5, 2)


def test_interval_limits_the_lines() -> None:
    out = io.StringIO()
    with Progress("x", stream=out, interval=3600.0) as p:
        for _ in range(100):
            p.update()
    assert len(out.getvalue().splitlines()) == 1  # only the final line


def test_work_that_raises_is_not_reported_done() -> None:
    out = io.StringIO()
    try:
        with Progress("batch", unit="package", stream=out, interval=3600.0):
            raise ValueError("refused before any package")
    except ValueError:
        pass
    assert out.getvalue() == ""  # nothing was done: no line at all
    out = io.StringIO()
    try:
        with Progress("batch", unit="package", stream=out, interval=3600.0) as p:
            p.update(2)
            raise ValueError("a failure after two packages")
    except ValueError:
        pass
    assert out.getvalue().splitlines()[-1].startswith("batch: 2 packages")
    assert out.getvalue().rstrip().endswith("stopped")


def test_a_quiet_batch_does_not_count_its_set(tmp_path, monkeypatch) -> None:
    # Counting a set is for the display's total: a quiet run reads its set once.
    import memaudit_fast.experiments.batch as batch_module
    from memaudit_fast.experiments import batch_count
    from memaudit_fast.model.sets import write_package_set
    from memaudit_fast.suites.small import generate_package

    path = tmp_path / "set.jsonl"
    write_package_set([generate_package("base", seed=s) for s in range(3)], path)
    counted: list[object] = []
    real = batch_count._count_members
    monkeypatch.setattr(batch_count, "_count_members", lambda *a, **k: counted.append(a) or real(*a, **k))
    options = batch_module.BatchOptions(budgets=(2.0,))
    with Progress("batch", unit="package", quiet=True) as quiet:
        batch_module.run_batch([path], tmp_path / "q.jsonl", options, workers=1, progress=quiet)
    assert counted == [] and quiet.count == 3
    with Progress("batch", unit="package", stream=io.StringIO()) as shown:
        batch_module.run_batch([path], tmp_path / "s.jsonl", options, workers=1, progress=shown)
    for thread in threading.enumerate():  # the counting thread may still be on its way
        if thread.name == "memaudit-batch-count":
            thread.join(timeout=30)
    assert len(counted) == 1 and shown.count == 3


def test_close_is_once_and_an_interrupted_run_is_stopped() -> None:
    out = io.StringIO()
    with Progress("batch", unit="package", stream=out, interval=3600.0) as p:
        p.update(2)
        p.close(failed=True)  # an interrupted run: the command closes it itself
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].endswith("stopped")


def test_a_long_first_item_still_gets_its_periodic_lines() -> None:
    # Off a terminal the lines used to come only with updates: a first package that took 10 s
    # left the log silent for 10 s. A timer writes the line that is due.
    import time

    out = io.StringIO()
    with Progress("batch", total=2, unit="package", stream=out, interval=0.1):
        time.sleep(0.45)
        during = out.getvalue().splitlines()
    assert len(during) >= 2 and all(line.startswith("batch: 0/2 packages") for line in during)
    assert out.getvalue().splitlines()[-1].endswith("done")


def _pty_stream(columns: int) -> tuple[int, Any]:
    import fcntl
    import os
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    return master, os.fdopen(slave, "w")


def _drain(master: int) -> str:
    import os
    import select

    data = b""
    while select.select([master], [], [], 0.2)[0]:
        chunk = os.read(master, 65536)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").replace("\r\n", "\n")


def test_a_terminal_that_reports_no_width_gets_plain_lines() -> None:
    # A bar sized to 0 columns prints nothing at all (script(1) with no terminal behind it
    # makes such a pseudo-terminal): plain lines there, the bar on a sized terminal.
    import os

    for columns, bar in ((0, False), (80, True)):
        master, stream = _pty_stream(columns)
        try:
            with Progress("batch", total=1, unit="package", stream=stream, interval=0.0) as p:
                p.update()
            stream.flush()
            text = _drain(master)
        finally:
            stream.close()
            os.close(master)
        assert ("\r" in text) == bar, (columns, text)
        assert "batch" in text and ("1/1 packages" in text or bar)


def test_a_display_never_closed_stops_its_timer_when_dropped_or_its_stream_closes() -> None:
    # An exception between creating a display and closing it must not leave a timer writing
    # forever (to a stream that may be closed by then).
    import gc
    import time

    out = io.StringIO()
    Progress("x", stream=out, interval=0.05)  # dropped at once, never closed
    gc.collect()
    time.sleep(0.2)
    assert out.getvalue() == ""
    before = {t for t in threading.enumerate() if t.name == "progress y"}
    out = io.StringIO()
    kept = Progress("y", stream=out, interval=0.05)
    out.close()
    time.sleep(0.2)
    assert not [t for t in threading.enumerate() if t.name == "progress y" and t not in before]
    assert kept.count == 0
