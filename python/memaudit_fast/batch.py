"""Deprecated path: moved to ``memaudit_fast.experiments.batch`` (kept for one release)."""

from ._deprecated import moved
from .experiments import batch as _m0

__getattr__ = moved(__name__, _m0)
