"""Deprecated path: moved to ``memaudit_fast.evaluate.scoring`` (kept for one release)."""

from ._deprecated import moved
from .evaluate import scoring as _m0

__getattr__ = moved(__name__, _m0)
