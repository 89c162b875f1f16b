"""Old import paths of the flat layout, kept for one release as thin, warning re-exports."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any


def moved(old: str, *new: ModuleType) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old`` that finds each name in the ``new`` modules, warning."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        for module in new:
            target = module.__name__
            if hasattr(module, name):
                value = getattr(module, name)
                home = getattr(value, "__module__", None)
                home = home if isinstance(home, str) and home.startswith("memaudit_fast.") else target
                warnings.warn(
                    f"{old} is deprecated and goes away in the next release; "
                    f"import {name} from {home} instead",
                    DeprecationWarning,
                    stacklevel=2,
                )
                return value
        raise AttributeError(f"module {old!r} has no attribute {name!r}")

    return __getattr__
