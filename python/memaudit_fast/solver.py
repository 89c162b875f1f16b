"""Deprecated path: moved to ``memaudit_fast.solve.exact`` (kept for one release)."""

from ._deprecated import moved
from .solve import exact as _m0

__getattr__ = moved(__name__, _m0)
