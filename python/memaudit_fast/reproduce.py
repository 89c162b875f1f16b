"""Deprecated path: moved to ``memaudit_fast.experiments.reproduce`` (kept for one release)."""

from ._deprecated import moved

__getattr__ = moved(
    __name__, "memaudit_fast.experiments.reproduce",
    *(f"memaudit_fast.experiments.reproduce.{part}" for part in ("config", "measure", "summary", "render", "run")),
    "memaudit_fast.experiments.parallel",
)
