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
