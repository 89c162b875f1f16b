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
                # Only fixed registries may import by name: the CLI's subcommand modules and the
                # package's lazily imported public names.
                in_cli_main = path.name == "main.py" and path.parent.name == "cli"
                in_package_init = path.name == "__init__.py" and path.parent == PACKAGE_DIR
                if name == "import_module" and not (in_cli_main or in_package_init):
                    problems.append(f"{path.name}:{node.lineno}: import_module")
    assert problems == []


def test_cli_imports_only_its_own_registry():
    from memaudit_fast.cli import main

    assert all(name.isidentifier() for name in main.SUBCOMMANDS)
    for name in main.SUBCOMMANDS:
        assert (PACKAGE_DIR / "cli" / f"{name}.py").is_file()


def test_the_package_imports_its_public_names_from_a_fixed_registry():
    lazy = memaudit_fast._LAZY
    assert all(module.startswith(".") and all(part.isidentifier() for part in module[1:].split("."))
               for module in lazy.values())
    assert set(lazy) <= set(memaudit_fast.__all__)
    # Every public name resolves, and to the object of the module named for it.
    import importlib

    for name, module in lazy.items():
        assert getattr(memaudit_fast, name) is getattr(importlib.import_module(module, "memaudit_fast"), name)
