"""Deprecated path: moved to ``memaudit_fast.experiments.reproduce.run`` (kept for one release)."""

from ._deprecated import moved

__getattr__ = moved(__name__, "memaudit_fast.experiments.reproduce.run", "memaudit_fast.experiments.parallel")
