"""The package's layering: imports point downward, no circles, no oversized modules."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import memaudit_fast

PACKAGE_DIR = Path(memaudit_fast.__file__).resolve().parent
# Layers in the order data flows; a module may import only from its own layer or below.
LAYERS = {
    "errors": 0, "_core": 0, "progress": 0, "_deprecated": 0,
    "model": 1, "solve": 2, "evaluate": 3, "suites": 3, "writers": 3,
    "systems": 4, "results": 5, "experiments": 6, "cli": 7,
}
# The flat layout's deprecated re-exports (one release) sit above everything they re-export.
SHIMS = {"package", "artifact", "package_set", "compiled", "jsonio", "limits", "examples", "solver",
         "milp", "certify", "baselines", "scoring", "ablation", "export", "report", "batch", "reproduce"}
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every memaudit_fast module ``name`` imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules or alias.name == "_core" else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("memaudit_fast") and m != name}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and parts[1] in SHIMS | {"__main__"}):
        return None  # the public face and the shims may import anything
    return LAYERS[parts[1]]


def test_every_import_points_downward() -> None:
    modules = _modules()
    upward = []
    for name, path in modules.items():
        mine = _layer(name)
        if mine is None:
            continue
        for target in _imports(name, path, modules):
            theirs = _layer(target)
            if target != "memaudit_fast" and theirs is not None and theirs > mine:
                upward.append(f"{name} -> {target}")
    assert upward == []


def test_no_import_circle() -> None:
    modules = _modules()
    graph = {n: {t for t in _imports(n, p, modules) if t in modules} for n, p in modules.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    # A package's __init__ importing its own submodules is not a circle of the layout.
    real = [c for c in cycles if not any(b.startswith(a + ".") for a, b in itertools.pairwise(c))]
    assert real == []


def test_no_module_over_the_size_cap() -> None:
    sizes = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in _modules().items()}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}


def test_no_test_module_imports_another() -> None:
    """Shared helpers live in tests/oracles (and tests/strategies.py), never in a test module."""
    tests_dir = Path(__file__).resolve().parent
    offenders = []
    for path in sorted(tests_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0].startswith("test_")]
    assert offenders == []
