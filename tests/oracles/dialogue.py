"""Packages of a long dialogue, made without the project's own suite generators.

Facts (a few recur often, most rarely) are the evidence units; their weights mimic query
demand: 0, 1, 2, 3 or 5, so some units nobody asks for weigh 0. Each turn states one to three
facts and is an experience with a raw turn (cost in words, covers its facts fully), one
extracted fact per stated fact (covers it fully, and now and then a related fact at 0.25 or
0.5) and, for turns that state several, sometimes a turn summary (0.5-0.75 of each). Sessions
end at random; a session summary is a group of its own that covers every fact of its session
at 0.3 or 0.5. Partial covers from summaries and from other turns add up to full covers in the
LP relaxation, which is what makes the budgets large here hard.

``bytes_cost=True``: costs from the byte model ``8 + ceil(bytes / 24)`` instead of words.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def dialogue_package(n_candidates: int, seed: int = 0, *, bytes_cost: bool = False) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n_facts = max(10, n_candidates // 3)
    popularity = 1.0 / np.arange(1, n_facts + 1) ** 0.8
    popularity /= popularity.sum()
    weights = rng.choice([0, 1, 1, 2, 3, 5], size=n_facts).astype(float)

    def cost(words: int) -> float:
        return float(8 + math.ceil(words * 5.5 / 24)) if bytes_cost else float(words)

    candidates: list[dict[str, Any]] = []

    def add(group: str, representation: str, words: int, coverage: dict[int, float]) -> None:
        candidates.append({
            "candidate_id": f"c{len(candidates)}", "experience_id": group, "representation": representation,
            "cost": cost(words), "coverage": {f"r{r}": a for r, a in coverage.items()},
        })

    turn = session = 0
    in_session: list[int] = []
    while len(candidates) < n_candidates:
        facts = sorted({int(r) for r in rng.choice(n_facts, size=int(rng.integers(1, 4)), p=popularity)})
        group = f"t{turn}"
        add(group, "raw", int(rng.integers(8, 40)), {r: 1.0 for r in facts})
        for r in facts:
            coverage = {r: 1.0}
            if rng.random() < 0.4:
                related = int(rng.choice(n_facts, p=popularity))
                if related != r:
                    coverage[related] = float(rng.choice([0.25, 0.5]))
            add(group, "fact", int(rng.integers(4, 14)), coverage)
        if len(facts) > 1 and rng.random() < 0.5:
            add(group, "summary", int(rng.integers(6, 18)), {r: float(rng.choice([0.5, 0.6, 0.75])) for r in facts})
        in_session.extend(facts)
        turn += 1
        if rng.random() < 0.05:
            add(f"s{session}", "summary", int(rng.integers(20, 60)),
                {r: float(rng.choice([0.3, 0.5])) for r in sorted(set(in_session))})
            session += 1
            in_session = []
    covered = sorted({int(r[1:]) for c in candidates for r in c["coverage"]})
    return {
        "format": "memaudit.package/1",
        "package_id": f"dialogue-{n_candidates}-{seed}{'-bytes' if bytes_cost else ''}",
        "budgets": [1.0], "objective": {"saturation": "cap1"},
        "units": [{"unit_id": f"r{r}", "weight": float(weights[r])} for r in covered], "candidates": candidates,
    }
