"""Package content never drives code execution: no pickle, eval, exec or data-named imports."""

from __future__ import annotations

import ast
from pathlib import Path

import memaudit_fast

PACKAGE_DIR = Path(memaudit_fast.__file__).resolve().parent
FORBIDDEN_MODULES = {"pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle"}
FORBIDDEN_CALLS = {"eval", "exec", "__import__", "compile"}


def python_sources() -> list[Path]:
    files = sorted(PACKAGE_DIR.rglob("*.py"))
    assert len(files) > 20
    return files


def test_no_unsafe_deserialisation_or_dynamic_code():
    problems = []
    for path in python_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                problems += [f"{path.name}: import {a.name}" for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FORBIDDEN_MODULES:
                problems.append(f"{path.name}: from {node.module} import")
            elif isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name in FORBIDDEN_CALLS and not (isinstance(func, ast.Attribute) and name == "compile"):
                    problems.append(f"{path.name}:{node.lineno}: {name}(...)")
                # Only the CLI's fixed registry of subcommand modules may import by name.
                in_cli_main = path.name == "main.py" and path.parent.name == "cli"
                if name == "import_module" and not in_cli_main:
                    problems.append(f"{path.name}:{node.lineno}: import_module")
    assert problems == []


def test_cli_imports_only_its_own_registry():
    from memaudit_fast.cli import main

    assert all(name.isidentifier() for name in main.SUBCOMMANDS)
    for name in main.SUBCOMMANDS:
        assert (PACKAGE_DIR / "cli" / f"{name}.py").is_file()
