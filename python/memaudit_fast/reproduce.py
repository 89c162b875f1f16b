"""Deprecated path: moved to ``memaudit_fast.experiments.reproduce.run`` (kept for one release)."""

from ._deprecated import moved
from .experiments import parallel as _m1
from .experiments.reproduce import run as _m0

__getattr__ = moved(__name__, _m0, _m1)
