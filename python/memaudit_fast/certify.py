"""Deprecated path: moved to ``memaudit_fast.solve.certify`` (kept for one release)."""

from ._deprecated import moved
from .model import compiled as _m1
from .solve import certify as _m0

__getattr__ = moved(__name__, _m0, _m1)
