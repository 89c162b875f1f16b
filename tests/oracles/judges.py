"""A stand-in judge for the arbiter (systems/arbiter): it says no memory covers any unit, so a
union's OPT is the package's own, and nothing is embedded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class ZeroJudge:
    """Covers nothing; enough to build unions without embedding anything."""

    def config(self) -> dict[str, Any]:
        return {"judge": "zero"}

    def judge(self, memories: Sequence[str], units: Sequence[str]) -> np.ndarray:
        return np.zeros((len(memories), len(units)))

    def salience(self, memories: Sequence[str], queries: Sequence[str]) -> np.ndarray | None:
        return None
