"""Reproduce the MEMAUDIT paper's findings on this project's suites.

The MEMAUDIT paper (Bhargava & Sobral Barrento, 2026) reports, over its 500 base packages:

- density-only keeps only 0.2637 / 0.3494 / 0.3612 of OPT at B = 2 / 4 / 8 words, while the
  package-oracle GVT writer stays near OPT;
- dropping tombstone and compound-update candidates lowers OPT itself to 0.5226 / 0.6539 /
  0.6891 / 0.8148 of the full OPT at B = 2 / 4 / 8 / 16;
- writer rankings do not hinge on the cost model (words vs ``8 + ceil(bytes / 24)``) nor on
  annotation noise.

:func:`run_reproduction` measures the same quantities on MEMAUDIT-Small packages (every
stress distribution, many seeds, each solved exactly) and, optionally, on LoCoMo natural
packages. Every figure is a **mean of per-package ratios** (the artifact's aggregation):

.. math::

    \\bar\\rho_w(B) = \\frac{1}{|P|} \\sum_{p \\in P} \\frac{F_p(X_w^p(B))}{OPT_p(B)},

with ``OPT = 0`` scoring 1 (the artifact's convention). "overall" pools every package of
every distribution (equal seed counts, so each distribution weighs the same).

Rank stability
--------------
Writers are ranked by their mean ratio in each cell (a distribution and a budget); two
rankings are compared with Kendall's tau-b (:func:`kendall_tau`), which handles ties.

- **Cost model**: the packages are generated again under the ``bytes`` cost model (same
  structure, new costs), with each words budget ``B`` rescaled by the generator's rule
  (``ceil(B * mean bytes cost / mean words cost)``, at least the cheapest candidate) but
  without merging equal budgets, so budget ``k`` of one model faces budget ``k`` of the
  other. Writers run again and are scored against the bytes OPT.
- **Annotation noise** (:func:`perturb_annotations`): the stores the writers chose on the
  clean package are re-scored against a perturbed annotation of the same package (and its
  own exact OPT), as an annotator disagreeing with the labels would: each non-zero coverage
  label flips between *full* (1) and *partial* (:data:`PARTIAL_LEVEL`) with probability
  ``p``, and each weight is multiplied by ``exp(sigma z)``, ``z ~ N(0, 1)``,
  ``sigma = WEIGHT_SIGMA_PER_P * p``. With ``p = 0`` nothing changes, so the noisy table
  equals the clean one. Reported: Kendall tau between clean and noisy rankings, and the mean
  absolute change of the ratios (the paper's "ratio MAD", 0.035 for human vs model labels).

When an exact solve stops at its time limit (large natural packages only), the denominator
is the best store known (the solver's incumbent or a better writer store), the package is
counted as unproven, and its proven upper bound is kept in the per-package records.

The package reads in the order the data flows: :mod:`.config` (what to run, the paper's
figures), :mod:`.measure` (one package's measurements and each suite's records),
:mod:`.summary` (tables and rank statistics), :mod:`.render` (the Markdown report) and
:mod:`.run` (the whole run and its files).
"""

from __future__ import annotations

from .config import (
    CLI_OPTIONS,
    DEFAULT_NOISE,
    DEFAULT_SEEDS,
    FORMAT,
    PAPER_DENSITY_ONLY,
    PAPER_INVALIDATION,
    PAPER_LABEL_MAD,
    PAPER_NO_TOMBSTONE,
    PAPER_STRESS_NO_TOMBSTONE_B6,
    PARTIAL_LEVEL,
    QUICK_LOCOMO_CONVERSATIONS,
    QUICK_NOISE,
    QUICK_SEEDS,
    RANKED_WRITERS,
    RATIO_TOLERANCE,
    TABLE_WRITERS,
    WEIGHT_SIGMA_PER_P,
    ReproduceConfig,
    Reproduction,
)
from .measure import (
    evaluate_pair,
    locomo_records,
    mapped_budgets,
    perturb_annotations,
    small_records,
)
from .render import render_markdown
from .run import OUTPUT_NAMES, check_outputs, reproduction_json, run_reproduction, write_outputs
from .summary import comparison_rows, kendall_tau, max_ratio, summarize

__all__ = [
    "CLI_OPTIONS", "DEFAULT_NOISE", "DEFAULT_SEEDS", "FORMAT", "OUTPUT_NAMES", "PAPER_DENSITY_ONLY",
    "PAPER_INVALIDATION", "PAPER_LABEL_MAD", "PAPER_NO_TOMBSTONE", "PAPER_STRESS_NO_TOMBSTONE_B6",
    "PARTIAL_LEVEL", "QUICK_LOCOMO_CONVERSATIONS", "QUICK_NOISE", "QUICK_SEEDS", "RANKED_WRITERS",
    "RATIO_TOLERANCE", "TABLE_WRITERS", "WEIGHT_SIGMA_PER_P", "ReproduceConfig", "Reproduction",
    "check_outputs", "comparison_rows", "evaluate_pair", "kendall_tau", "locomo_records", "mapped_budgets",
    "max_ratio", "perturb_annotations", "render_markdown", "reproduction_json", "run_reproduction",
    "small_records", "summarize", "write_outputs",
]
