"""The names every part of the package model shares: format, saturations, record locators.

A module of its own so that the validators (:mod:`.validate`, :mod:`.fastpath`) and the model
(:mod:`.package`) can all use them without importing one another in a circle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

FORMAT = "memaudit.package/1"
#: The format of result records (solve writes them; results.records reads them; named here so
#: the package readers can tell one where a package was expected).
RESULT_FORMAT = "memaudit.result/1"
SATURATIONS = ("cap1", "linear", "log1p")
#: At most this many errors are reported for one package.
MAX_ERRORS = 50
# Prefix of the group of a candidate with neither group nor experience (its own group).
OWN_GROUP = "\x00own:"

Locator = Callable[[str, int], str]


def _default_locator(list_name: str, index: int) -> str:
    return f"{list_name}[{index}]"


@dataclass(frozen=True)
class SaturationSpec:
    """One saturation h: a named family or a concave piecewise-linear function.

    ``points`` holds the PWL breakpoints ``[(0, 0), (z1, h1), ...]``; h is constant after
    the last one.
    """

    name: str
    points: tuple[tuple[float, float], ...] = ()

    def to_json(self) -> Any:
        if self.name == "pwl":
            return {"pwl": [list(p) for p in self.points]}
        return self.name


def locate_sources(mapping: Mapping[str, Callable[[int], str]]) -> Locator:
    """A locator that names records by their file and line (used by the artifact reader)."""

    def locate(list_name: str, index: int) -> str:
        if list_name in mapping:
            return mapping[list_name](index)
        return _default_locator(list_name, index)

    return locate
