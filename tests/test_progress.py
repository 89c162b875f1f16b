"""Progress lines: plain and periodic off a terminal, silent when quiet."""

from __future__ import annotations

import io

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
