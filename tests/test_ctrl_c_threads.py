"""Ctrl-C stops solves running in threads other than the main one (the signal reaches only the
main thread): each returns its anytime result with status ``interrupted``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def test_ctrl_c_stops_solves_in_threads() -> None:
    # In a child process, so that the signal and the handler are the child's alone.
    script = textwrap.dedent('''
        import os, signal, threading, time
        from memaudit_fast.solve.exact import solve
        from oracles.packages import strongly_correlated_knapsack

        results, started = {}, threading.Event()

        def work(k):
            started.set()
            # The search alone: the root LP's c-MIR cuts prove this knapsack in 0.02 s.
            results[k] = solve(strongly_correlated_knapsack(), finish=None)[0]

        threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        started.wait()
        time.sleep(0.2)  # let both searches get going (they would run for minutes)
        start = time.perf_counter()
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for t in threads:
                t.join()
        except KeyboardInterrupt:
            for t in threads:
                t.join()
        print(sorted(r.status for r in results.values()), round(time.perf_counter() - start, 1))
    ''')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    statuses, seconds = out.stdout.rsplit(" ", 1)
    assert statuses.strip() == "['interrupted', 'interrupted']"
    assert float(seconds) < 10.0  # without the hook both solves run to their end (minutes)


def test_a_second_ctrl_c_inside_the_first_ones_handler_does_not_wait_for_it() -> None:
    # The handler holds the lock of the running solves while it cancels them; a second SIGINT
    # runs the handler again inside it (GNU timeout -s INT sends two): it waited for itself.
    import importlib
    import signal

    import pytest

    exact = importlib.import_module("memaudit_fast.solve.exact")
    with exact._RUNNING_LOCK:  # as the first handler holds it
        assert exact._RUNNING_LOCK.acquire(blocking=False)  # the same thread takes it again
        exact._RUNNING_LOCK.release()
        with pytest.raises(KeyboardInterrupt):
            exact._interrupt(signal.SIGINT, None)
