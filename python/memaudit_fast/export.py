"""Deprecated path: moved to ``memaudit_fast.results.export`` (kept for one release)."""

from ._deprecated import moved
from .results import export as _m0

__getattr__ = moved(__name__, _m0)
