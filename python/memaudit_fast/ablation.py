"""Deprecated path: moved to ``memaudit_fast.evaluate.ablation`` (kept for one release)."""

from ._deprecated import moved
from .evaluate import ablation as _m0

__getattr__ = moved(__name__, _m0)
