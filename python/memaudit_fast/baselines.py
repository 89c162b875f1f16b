"""Deprecated path: moved to ``memaudit_fast.evaluate.baselines`` (kept for one release)."""

from ._deprecated import moved

__getattr__ = moved(__name__, "memaudit_fast.evaluate.baselines", "memaudit_fast.evaluate.scoring", "memaudit_fast.solve.exact")
