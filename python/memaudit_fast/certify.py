"""Deprecated path: moved to ``memaudit_fast.solve.certify`` (kept for one release)."""

from ._deprecated import moved

__getattr__ = moved(__name__, "memaudit_fast.solve.certify", "memaudit_fast.model.compiled")
