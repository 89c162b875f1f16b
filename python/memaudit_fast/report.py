"""Deprecated path: moved to ``memaudit_fast.results.report`` (kept for one release)."""

from ._deprecated import moved
from .results import report as _m0

__getattr__ = moved(__name__, _m0)
