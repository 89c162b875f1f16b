"""Deprecated path: moved to ``memaudit_fast.model.sets`` (kept for one release)."""

from ._deprecated import moved
from .model import sets as _m0

__getattr__ = moved(__name__, _m0)
