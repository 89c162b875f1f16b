"""Deprecated path: moved to ``memaudit_fast.experiments.reproduce`` (kept for one release)."""

from ._deprecated import moved
from .experiments import parallel as _m6
from .experiments import reproduce as _m0
from .experiments.reproduce import config as _m1
from .experiments.reproduce import measure as _m2
from .experiments.reproduce import render as _m4
from .experiments.reproduce import run as _m5
from .experiments.reproduce import summary as _m3

__getattr__ = moved(__name__, _m0, _m1, _m2, _m3, _m4, _m5, _m6)
