"""The hidden event graph of a MEMAUDIT-Small package.

Slots (an entity's attribute, with its chain of values), hedges (slots discussed but never
settled), never-said pairs, and the ordered stream of events (state, update, mention, hedge,
chatter, lure) that the generator (:mod:`.small`) turns into experiences, units and candidates.
Every draw comes from the generator's ``numpy`` stream, in a fixed order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .small_vocab import ATTRIBUTES, LURES, NAMES, SCOPED_ATTRIBUTES, SCOPES, TOPICS, Attribute


@dataclass
class Slot:
    key: str
    entity: str
    attr: Attribute
    scope: str | None
    values: list[str]
    # Filled while building experiences: timestamp at which each version was stated.
    starts: list[int] = field(default_factory=list)


@dataclass
class Hedge:
    key: str
    entity: str
    attr: Attribute
    guess: str


@dataclass
class Event:
    kind: str  # state | update | mention | hedge | chatter | lure
    slot: Slot | None = None
    version: int = 0
    hedge: Hedge | None = None
    lure: tuple[str, str] | None = None
    topic: str = ""


def pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def inclusive(rng: np.random.Generator, bounds: tuple[int, int]) -> int:
    return int(rng.integers(bounds[0], bounds[1] + 1))


def entity_names(rng: np.random.Generator, count: int) -> list[str]:
    order = [NAMES[i] for i in rng.permutation(len(NAMES))]
    # Past the pool, a numeric suffix keeps names unique (Ana, Ana2, ...).
    return [order[i % len(order)] + (str(i // len(order) + 1) if i >= len(order) else "")
            for i in range(count)]


def build_graph(
    rng: np.random.Generator, k: dict[str, Any], scale: int
) -> tuple[list[Slot], list[Hedge], list[tuple[str, Attribute]], list[Event]]:
    """Slots with their value chains, hedges, never-said pairs, and the ordered event stream."""
    names = entity_names(rng, k["entities"] * scale)
    scoped = k["scopes"] > 1
    pool = SCOPED_ATTRIBUTES if scoped else ATTRIBUTES
    n_attrs = min(k["attributes"], len(pool))
    slots: list[Slot] = []
    free_pairs: list[tuple[str, Attribute]] = []
    for name in names:
        order = rng.permutation(len(pool))
        for a in order[:n_attrs]:
            attr = pool[int(a)]
            scopes: list[str | None] = (
                [SCOPES[int(s)] for s in rng.permutation(len(SCOPES))[: k["scopes"]]]
                if scoped else [None]
            )
            for scope in scopes:
                changes = inclusive(rng, k["updates"]) if rng.random() < k["update_prob"] else 0
                changes = min(changes, len(attr.values) - 1)
                picks = rng.permutation(len(attr.values))[: changes + 1]
                values = [attr.values[int(v)] for v in picks]
                key = f"{name}.{attr.name}" + (f"@{scope}" if scope else "")
                slots.append(Slot(key, name, attr, scope, values))
        if not scoped:
            free_pairs.extend((name, ATTRIBUTES[int(a)]) for a in order[n_attrs:])
    if scoped:
        # Hedges and never-said questions use the unscoped attributes, free for every entity.
        free_pairs = [(name, attr) for name in names for attr in ATTRIBUTES]
    free_order = [free_pairs[int(i)] for i in rng.permutation(len(free_pairs))]
    n_hedges = min(k["hedges"] * scale, len(free_order))
    hedges = []
    for name, attr in free_order[:n_hedges]:
        hedges.append(Hedge(f"{name}.{attr.name}", name, attr, pick(rng, attr.values)))
    rest = free_order[n_hedges:]
    never_said = rest[: min(k["never_said"] * scale, len(rest))]

    # Each slot is a queue: its state, its updates, and mentions after the version they restate.
    queues: list[list[Event]] = []
    for slot in slots:
        per_version: list[list[Event]] = [
            [Event("state" if j == 0 else "update", slot, j)] for j in range(len(slot.values))
        ]
        for _ in range(int(rng.poisson(k["mentions"]))):
            j = int(rng.integers(len(slot.values)))
            per_version[j].append(Event("mention", slot, j))
        queues.append([e for events in per_version for e in events])
    for hedge in hedges:
        repeats = inclusive(rng, k["hedge_repeats"])
        queues.append([Event("hedge", hedge=hedge) for _ in range(repeats)])
    for _ in range(k["chatter"] * scale):
        queues.append([Event("chatter", topic=pick(rng, TOPICS))])

    # A uniform interleaving that keeps each queue's order: shuffle the multiset of queue labels.
    labels = np.repeat(np.arange(len(queues)), [len(q) for q in queues])
    heads = [0] * len(queues)
    stream: list[Event] = []
    for label in rng.permutation(labels):
        q = int(label)
        stream.append(queues[q][heads[q]])
        heads[q] += 1
    lures = [Event("lure", lure=LURES[int(rng.integers(len(LURES)))])
             for _ in range(k["lures"] * scale)]
    return slots, hedges, never_said, lures + stream
