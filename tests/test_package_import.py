"""Importing the package is cheap, and its public names are what they were."""

from __future__ import annotations

import subprocess
import sys


def run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()


def test_importing_the_package_or_the_cli_loads_neither_numpy_nor_the_solver():
    loaded = run("import sys, memaudit_fast.cli.main, memaudit_fast.errors; "
                 "print(sorted(m for m in ('numpy', 'memaudit_fast._core', 'highspy') if m in sys.modules))")
    assert loaded == "[]"


def test_solve_is_the_function_whatever_was_imported_first():
    code = ("import memaudit_fast.solve.exact, memaudit_fast.solve.race, memaudit_fast.certify, memaudit_fast; "
            "from memaudit_fast import solve, certify; import inspect; "
            "print(inspect.isfunction(memaudit_fast.solve), solve is memaudit_fast.solve, "
            "inspect.isfunction(memaudit_fast.certify), certify is memaudit_fast.certify)")
    assert run(code) == "True True True True"
    assert run("import memaudit_fast as m; print(m.solve.__module__, 'solve' in dir(m))") == "memaudit_fast.solve.exact True"
