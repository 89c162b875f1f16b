"""Packages of entity profiles, made without the project's own suite generators and unlike
oracles/timeline.py: a solver tuned on the bench's other families meets it out of sample.

Entities (popularity from a Dirichlet draw, so a few dominate) have three to eight attributes.
Each experience states one to six (entity, attribute) values; a value changes with
probability 0.3, and then the new value, the old one and the change are units of their own.
Weights are real numbers that grow with the epoch (recent values are asked for more), the old
value of a change weighs little. Now and then an experience also states a relation between
its entities (a unit only it covers). Per experience: a raw span (cost in words, covers all it
states, a change at 0.7), one fact per stated value, a summary when it states several (each
value at 0.35-0.85, the relation at 0.6), and per change an update (new value, change, the
old value at 0.5) and a tombstone (the change, the old value at 0.3).

``tie=True``: integer costs 1-6, every weight 1, coverage 1 or 0.5, so many stores tie.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .packages import add_experience, cap1_package

# Offsets the seed so that profile and timeline packages of one seed share no draws.
SEED_OFFSET = 1000


def profile_package(n_candidates: int, seed: int = 0, *, tie: bool = False) -> dict[str, Any]:
    rng = np.random.default_rng(seed + SEED_OFFSET)
    n_entities = max(5, n_candidates // int(rng.integers(25, 60)))
    attributes = rng.integers(3, 9, size=n_entities)
    epoch: dict[tuple[int, int], int] = {}
    unit_of: dict[tuple[Any, ...], int] = {}
    weights: list[float] = []

    def unit(key: tuple[Any, ...], weight: float) -> int:
        if key not in unit_of:
            unit_of[key] = len(weights)
            weights.append(weight)
        return unit_of[key]

    def draw(low: float, high: float) -> float:
        return 1.0 if tie else float(np.round(rng.uniform(low, high), 3))

    popularity = rng.dirichlet(np.full(n_entities, 0.6))
    candidates: list[dict[str, Any]] = []
    group = 0
    while len(candidates) < n_candidates:
        stated: list[tuple[int, int | None, int | None]] = []  # (value, old value, change)
        for _ in range(int(rng.integers(1, 7))):
            e = int(rng.choice(n_entities, p=popularity))
            a = int(rng.integers(0, attributes[e]))
            changed = rng.random() < 0.3
            if changed:
                epoch[e, a] = epoch.get((e, a), 0) + 1
            now = epoch.get((e, a), 0)
            weight = 1.0 if tie else float(np.round(rng.gamma(2.0, 0.7) * (1.0 + 0.3 * now), 3))
            value = unit(("value", e, a, now), weight)
            old = unit(("value", e, a, now - 1), draw(0.1, 0.5)) if changed else None
            change = unit(("change", e, a, now), draw(0.3, 1.5)) if changed else None
            stated.append((value, old, change))
        relation = unit(("relation", group), draw(0.5, 2.5)) if len(stated) >= 2 and rng.random() < 0.15 else None

        reps: list[tuple[float, dict[int, float]]] = []
        raw: dict[int, float] = {}
        for value, _, change in stated:
            raw[value] = 1.0
            if change is not None:
                raw[change] = 1.0 if tie else 0.7
        if relation is not None:
            raw[relation] = 1.0
        words = int(sum(rng.integers(6, 20) for _ in stated)) + int(rng.integers(3, 15))
        reps.append((float(rng.integers(3, 7)) if tie else float(words), raw))
        for value, _, _ in stated:
            reps.append((float(rng.integers(1, 3)) if tie else float(rng.integers(3, 10)), {value: 1.0}))
        if len(stated) > 1:
            summary = {value: (0.5 if rng.random() < 0.5 else 1.0) if tie else float(np.round(rng.uniform(0.35, 0.85), 2))
                       for value, _, _ in stated}
            if relation is not None:
                summary[relation] = 1.0 if tie else 0.6
            reps.append((float(rng.integers(2, 4)) if tie else float(max(4, int(words * rng.uniform(0.3, 0.55)))),
                         summary))
        for value, old, change in stated:
            if change is not None and old is not None:
                reps.append((float(rng.integers(2, 4)) if tie else float(rng.integers(5, 12)),
                             {value: 1.0, change: 1.0, old: 0.5}))
                reps.append((1.0 if tie else float(rng.integers(2, 5)), {change: 1.0, old: 1.0 if tie else 0.3}))
        add_experience(candidates, group, reps, n_candidates)
        group += 1
    return cap1_package(f"profile-{n_candidates}-{seed}{'-tie' if tie else ''}", weights, candidates)
