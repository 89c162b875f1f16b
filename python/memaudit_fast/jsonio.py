"""Deprecated path: moved to ``memaudit_fast.model.jsonio`` (kept for one release)."""

from ._deprecated import moved
from .model import jsonio as _m0

__getattr__ = moved(__name__, _m0)
