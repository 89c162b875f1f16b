"""Deprecated path: moved to ``memaudit_fast.solve.milp`` (kept for one release)."""

from ._deprecated import moved
from .model import compiled as _m2
from .solve import backends as _m1
from .solve import milp as _m0

__getattr__ = moved(__name__, _m0, _m1, _m2)
