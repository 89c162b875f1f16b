"""Deprecated path: moved to ``memaudit_fast.evaluate.baselines`` (kept for one release)."""

from ._deprecated import moved
from .evaluate import baselines as _m0
from .evaluate import scoring as _m1
from .solve import exact as _m2

__getattr__ = moved(__name__, _m0, _m1, _m2)
