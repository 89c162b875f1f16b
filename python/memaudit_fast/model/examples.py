"""Built-in example data shipped inside the package, for demos and tests."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .io import load_package
from .package import Package


def example_package_path() -> Path:
    """Path of the built-in example package (a small hand-written package)."""
    return Path(str(resources.files("memaudit_fast.model") / "data" / "example_package.json"))


def example_package() -> Package:
    return load_package(example_package_path())
