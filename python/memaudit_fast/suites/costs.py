"""Storage cost models: how much budget a memory's text uses.

Three models, each a function ``str -> int``:

``words``
    Whitespace-separated words, at least 1: ``max(1, len(text.split()))``. The MEMAUDIT
    paper's default unit (a normalised word-equivalent cost).
``bytes``
    A per-record overhead plus the serialised payload:
    ``8 + ceil(len(text.encode("utf-8")) / 24)``. The paper's alternative cost, used to check
    that rankings do not hinge on counting words. An empty text still costs the overhead, 8.
``tokens``
    An approximate subword count, at least 1: the number of matches of :data:`TOKEN_PATTERN`,
    which reads a text as runs of at most 10 letters, groups of at most 3 digits, and every
    other non-space character on its own. So ``"Ana.city: Lisbon"`` is ``Ana . city : Lisbon``
    (5 tokens) and ``"20230508"`` is ``202 305 08`` (3 tokens). The caps stand in for the way
    BPE tokenizers cut long words and numbers; no tokenizer model is needed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ..errors import UsageError

CostModel = Callable[[str], int]

#: Letter runs (at most 10), digit groups (at most 3), any other non-space character alone.
TOKEN_PATTERN = re.compile(r"[^\W\d_]{1,10}|\d{1,3}|\S")

#: Fixed per-record overhead and payload bytes per cost unit of the ``bytes`` model.
BYTE_OVERHEAD = 8
BYTES_PER_UNIT = 24


def word_cost(text: str) -> int:
    """Whitespace words, at least 1."""
    return max(1, len(text.split()))


def byte_cost(text: str) -> int:
    """``8 + ceil(utf8_bytes / 24)``."""
    return BYTE_OVERHEAD + math.ceil(len(text.encode("utf-8")) / BYTES_PER_UNIT)


def token_cost(text: str) -> int:
    """Matches of :data:`TOKEN_PATTERN`, at least 1."""
    return max(1, sum(1 for _ in TOKEN_PATTERN.finditer(text)))


COST_MODELS: dict[str, CostModel] = {
    "words": word_cost,
    "bytes": byte_cost,
    "tokens": token_cost,
}


def get_cost_model(name: str) -> CostModel:
    """The cost function called ``name``; a ``UsageError`` lists the known ones otherwise."""
    try:
        return COST_MODELS[name]
    except KeyError:
        raise UsageError(
            f"unknown cost model {name!r}; expected one of {', '.join(COST_MODELS)}"
        ) from None


def cost_of(text: str, model: str = "words") -> int:
    """The cost of ``text`` under the named model."""
    return get_cost_model(model)(text)


def budgets_from_fractions(
    fractions: list[float] | tuple[float, ...], reference: float
) -> list[int]:
    """Budgets ``floor(f * reference)`` for each fraction ``f``.

    Candidate costs are integers, so flooring keeps exactly the stores the real-valued
    budget ``f * reference`` allows. Raises ``UsageError`` for a negative or non-finite fraction.
    """
    out = []
    for f in fractions:
        if not (isinstance(f, (int, float)) and math.isfinite(f) and f >= 0):
            raise UsageError(f"budget fraction {f!r} is not a finite number >= 0")
        # The epsilon keeps 0.3 * 10 (2.9999999999999996) from flooring to 2.
        out.append(math.floor(f * reference + 1e-9))
    return out


def check_budgets(budgets: list[float] | tuple[float, ...]) -> list[float]:
    """Validate absolute budgets (finite, >= 0, at least one); integers stay integers."""
    if len(budgets) == 0:
        raise UsageError("budgets: give at least one budget")
    out: list[float] = []
    for b in budgets:
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b) or b < 0:
            raise UsageError(f"budget {b!r} is not a finite number >= 0")
        out.append(int(b) if float(b).is_integer() else float(b))
    return out
