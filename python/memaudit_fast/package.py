"""Deprecated path: moved to ``memaudit_fast.model.package`` (kept for one release)."""

from ._deprecated import moved

__getattr__ = moved(__name__, "memaudit_fast.model.package", "memaudit_fast.model.io", "memaudit_fast.model.jsonio")
