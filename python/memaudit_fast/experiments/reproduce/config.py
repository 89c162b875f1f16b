"""What a reproduction runs (:class:`ReproduceConfig`), the paper's figures it is compared
with, and the finished run (:class:`Reproduction`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ...errors import UsageError
from ...evaluate.baselines import BASELINE_WRITERS
from ...suites.locomo import DEFAULT_BUDGET_FRACS
from ...suites.small import DEFAULT_WORD_BUDGETS, DISTRIBUTIONS

FORMAT = "memaudit.reproduce/1"

#: Paper figures (mean of ratios over the artifact's 500 base packages, words budgets).
PAPER_DENSITY_ONLY: dict[float, float] = {2.0: 0.2637, 4.0: 0.3494, 8.0: 0.3612}
PAPER_NO_TOMBSTONE: dict[float, float] = {2.0: 0.5226, 4.0: 0.6539, 8.0: 0.6891, 16.0: 0.8148}
#: The paper's stress-suite no-tombstone figures, at B = 6 only.
PAPER_STRESS_NO_TOMBSTONE_B6: dict[str, float] = {"update_chain": 0.513, "temporal_interval": 0.700}
#: Mean invalidation units covered in the paper's base sweep: GVT 2.00 at every budget,
#: density-only 0 at B = 2, 4, 8.
PAPER_INVALIDATION: dict[str, dict[float, float]] = {
    "gvt": {2.0: 2.0, 4.0: 2.0, 8.0: 2.0, 16.0: 2.0},
    "density_only": {2.0: 0.0, 4.0: 0.0, 8.0: 0.0},
}
#: Mean absolute ratio change, human vs model coverage labels, on the paper's Natural-87.
PAPER_LABEL_MAD = 0.035

#: Writers of the main table (the paper's exact-small figure plus greedy).
TABLE_WRITERS: tuple[str, ...] = (
    "density_only", "greedy", "gvt", "recency_raw", "fact_only", "summary_only",
)
#: Writers ranked in the stability checks: every baseline.
RANKED_WRITERS: tuple[str, ...] = BASELINE_WRITERS

#: The paper's seed count; 4000 packages take about 75 s on two busy cores.
DEFAULT_SEEDS = 500
DEFAULT_NOISE: tuple[float, ...] = (0.05, 0.1, 0.2)
QUICK_SEEDS = 2
QUICK_NOISE: tuple[float, ...] = (0.1,)
QUICK_LOCOMO_CONVERSATIONS = 1

#: The value a *full* label takes when noise flips it to *partial*.
PARTIAL_LEVEL = 0.5
#: Weight noise sigma per unit of flip probability.
WEIGHT_SIGMA_PER_P = 0.5
#: A writer may not beat an exact OPT by more than this (float round-off only).
RATIO_TOLERANCE = 1e-9


# --- configuration --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReproduceConfig:
    """What to run. ``budgets`` are words budgets of MEMAUDIT-Small packages."""

    seeds: int = DEFAULT_SEEDS
    budgets: tuple[float, ...] = tuple(float(b) for b in DEFAULT_WORD_BUDGETS)
    distributions: tuple[str, ...] = DISTRIBUTIONS
    noise_levels: tuple[float, ...] = DEFAULT_NOISE
    noise_seed: int = 0
    locomo: str | None = None
    locomo_budget_fracs: tuple[float, ...] = DEFAULT_BUDGET_FRACS
    locomo_limit: int | None = None  # first N conversations only
    time_limit: float | None = 10.0  # seconds per budget, MEMAUDIT-Small
    locomo_time_limit: float | None = 5.0  # seconds per budget, LoCoMo
    workers: int = 1
    quick: bool = False

    @classmethod
    def quick_config(cls, **overrides: Any) -> ReproduceConfig:
        """A run of a few seconds: every distribution, two seeds, one noise level."""
        base = cls(seeds=QUICK_SEEDS, noise_levels=QUICK_NOISE,
                   locomo_limit=QUICK_LOCOMO_CONVERSATIONS, locomo_time_limit=2.0, quick=True)
        return replace(base, **overrides)

    def check(self, names: Mapping[str, str] | None = None) -> None:
        """Raise UsageError for a value no run can use.

        ``names`` says how each field is named in the message (the command passes
        :data:`CLI_OPTIONS`, so that ``--seeds`` is named as the user typed it); by default the
        field's own name.
        """
        def name(field_name: str) -> str:
            return (names or {}).get(field_name, field_name)

        if self.seeds < 1:
            raise UsageError(f"{name('seeds')}: expected a number >= 1, got {self.seeds}")
        if not self.budgets or any(not (math.isfinite(b) and b >= 0) for b in self.budgets):
            raise UsageError(f"{name('budgets')}: expected finite numbers >= 0, got {list(self.budgets)}")
        valid = ", ".join(DISTRIBUTIONS)
        if not self.distributions:
            raise UsageError(f"{name('distributions')} is empty; give one or more of {valid}")
        unknown = [d for d in self.distributions if d not in DISTRIBUTIONS]
        if unknown:
            raise UsageError(f"{name('distributions')}: unknown {', '.join(map(repr, unknown))}; "
                             f"expected some of {valid}")
        for p in self.noise_levels:
            if not (0.0 <= p <= 1.0):
                raise UsageError(f"{name('noise_levels')}: noise level {p!r}: expected a probability in [0, 1]")
        if self.noise_seed < 0:
            raise UsageError(f"{name('noise_seed')}: expected a number >= 0, got {self.noise_seed}")
        if self.workers < 1:
            raise UsageError(f"{name('workers')}: expected a number >= 1, got {self.workers}")
        if self.locomo_limit is not None and self.locomo_limit < 1:
            raise UsageError(f"{name('locomo_limit')}: expected a number >= 1, got {self.locomo_limit}")
        for field_name in ("time_limit", "locomo_time_limit"):
            seconds = getattr(self, field_name)
            if seconds is not None and not seconds >= 0:  # (NaN too)
                raise UsageError(f"{name(field_name)}: expected a number of seconds >= 0, got {seconds}")


#: How the ``memaudit reproduce`` options name the fields of :class:`ReproduceConfig`.
CLI_OPTIONS: dict[str, str] = {
    "seeds": "--seeds", "budgets": "--budgets", "distributions": "--distributions",
    "noise_levels": "--noise", "noise_seed": "--noise-seed", "workers": "--workers",
    "locomo": "--locomo", "locomo_limit": "--locomo-limit", "time_limit": "--time-limit",
    "locomo_time_limit": "--locomo-time-limit",
}


def _level_key(p: float) -> str:
    return repr(float(p))



@dataclass
class Reproduction:
    """A finished run: configuration, per-package records and summary tables."""

    config: ReproduceConfig
    small: list[dict[str, Any]]
    locomo: list[dict[str, Any]]
    seconds: float
    command: str = ""
    small_seconds: float = 0.0
    summary: dict[str, Any] = field(default_factory=dict)
