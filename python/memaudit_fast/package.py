"""Deprecated path: moved to ``memaudit_fast.model.package`` (kept for one release)."""

from ._deprecated import moved
from .model import io as _m1
from .model import jsonio as _m2
from .model import package as _m0

__getattr__ = moved(__name__, _m0, _m1, _m2)
