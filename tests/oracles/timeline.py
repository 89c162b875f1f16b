"""Packages of an entity timeline, made without the project's own suite generators.

Entities (a few popular, most rare) have four attributes whose values change now and then.
Each experience states one to four (entity, attribute) values; an evidence unit is one value
of one attribute in one epoch (the value before and after a change are different units), and
a change has a unit of its own (knowing that the value changed). Per experience the
candidates are a raw span (covers every stated value, the changes at 0.5), one fact per
stated value, a summary when it states several (0.5 or 0.6 of each), and per change an update
(the new value and the change) and a tombstone (the change alone). Values restated later make
several experiences cover one unit, so stores overlap.

``tie=True``: integer costs 1-4, every weight 1 and full coverage, so many stores tie.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .packages import add_experience, cap1_package

ATTRIBUTES = 4


def timeline_package(n_candidates: int, seed: int = 0, *, tie: bool = False) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n_entities = max(4, n_candidates // 40)
    epoch = np.zeros((n_entities, ATTRIBUTES), dtype=np.int64)
    unit_of: dict[tuple[int, int, int, int], int] = {}
    weights: list[float] = []

    def unit(key: tuple[int, int, int, int], weight: float) -> int:
        if key not in unit_of:
            unit_of[key] = len(weights)
            weights.append(weight)
        return unit_of[key]

    popularity = 1.0 / np.arange(1, n_entities + 1) ** 0.7
    popularity /= popularity.sum()
    candidates: list[dict[str, Any]] = []
    group = 0
    while len(candidates) < n_candidates:
        entities = sorted({int(e) for e in rng.choice(n_entities, size=int(rng.integers(1, 3)), p=popularity)})
        stated: list[tuple[int, int | None]] = []  # (value unit, change unit or None)
        for e in entities:
            for a in rng.choice(ATTRIBUTES, size=int(rng.integers(1, 3)), replace=False):
                change = None
                if rng.random() < 0.35:
                    epoch[e, a] += 1
                    change = unit((e, int(a), int(epoch[e, a]), 1), 1.0 if tie else float(rng.integers(1, 3)))
                weight = 1.0 if tie else float(rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2]))
                stated.append((unit((e, int(a), int(epoch[e, a]), 0), weight), change))
        reps: list[tuple[float, dict[int, float]]] = []
        raw: dict[int, float] = {}
        for value, change in stated:
            raw[value] = 1.0
            if change is not None:
                raw[change] = 1.0 if tie else 0.5
        reps.append((float(rng.integers(2, 5)) if tie else float(rng.integers(10, 16 + 8 * len(stated))), raw))
        for value, _ in stated:
            reps.append((float(rng.integers(1, 3)) if tie else float(rng.integers(3, 8)), {value: 1.0}))
        if len(stated) > 1:
            reps.append((float(rng.integers(1, 4)) if tie else float(rng.integers(5, 12)),
                         {value: 1.0 if tie else float(rng.choice([0.5, 0.6])) for value, _ in stated}))
        for value, change in stated:
            if change is not None:
                reps.append((float(rng.integers(1, 3)) if tie else float(rng.integers(4, 9)), {value: 1.0, change: 1.0}))
                reps.append((1.0 if tie else float(rng.integers(1, 4)), {change: 1.0}))
        add_experience(candidates, group, reps, n_candidates)
        group += 1
    return cap1_package(f"timeline-{n_candidates}-{seed}{'-tie' if tie else ''}", weights, candidates)
