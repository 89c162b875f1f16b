"""Package suites: synthetic MEMAUDIT-Small packages and natural packages from real dialogue.

- :mod:`.small`: :func:`generate_package`, :func:`generate_set`, :data:`DISTRIBUTIONS`; its
  distributions' knobs in :mod:`.small_knobs`, its hidden event graph in :mod:`.small_graph`,
  its words in :mod:`.small_vocab`.
- :mod:`.locomo`: :func:`locomo_packages` builds one natural package per LoCoMo conversation.
- :mod:`.natural_out`: where ``memaudit natural`` writes them (safe file names, all or none).
- :mod:`.costs`: the ``words``, ``bytes`` and ``tokens`` cost models.
"""

from __future__ import annotations

from .costs import COST_MODELS, byte_cost, cost_of, get_cost_model, token_cost, word_cost
from .locomo import locomo_package, locomo_packages
from .small import DISTRIBUTIONS, KNOBS, generate_package, generate_set

__all__ = [
    "COST_MODELS",
    "DISTRIBUTIONS",
    "KNOBS",
    "byte_cost",
    "cost_of",
    "generate_package",
    "generate_set",
    "get_cost_model",
    "locomo_package",
    "locomo_packages",
    "token_cost",
    "word_cost",
]
