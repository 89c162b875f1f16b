"""Deprecated path: moved to ``memaudit_fast.model.compiled`` (kept for one release)."""

from ._deprecated import moved
from .model import compiled as _m0

__getattr__ = moved(__name__, _m0)
