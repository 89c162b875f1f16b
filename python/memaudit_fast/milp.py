"""Deprecated path: moved to ``memaudit_fast.solve.milp`` (kept for one release)."""

from ._deprecated import moved

__getattr__ = moved(__name__, "memaudit_fast.solve.milp", "memaudit_fast.solve.backends", "memaudit_fast.model.compiled")
