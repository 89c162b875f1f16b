"""MEMAUDIT-Small: synthetic packages drawn from a hidden event graph.

The MEMAUDIT paper (Bhargava & Sobral Barrento, 2026) evaluates memory writers on small
synthetic packages whose ground truth is known by construction. This module builds such
packages from scratch, one per ``(distribution, seed, scale)``.

The hidden event graph
----------------------
*Entities* (people the user talks about) have *attributes* (city, employer, diet, ...). An
attribute of an entity is a *slot*; its value forms a chain ``v0 -> v1 -> ... -> vk`` over time.
The stream of *experiences* (utterances, split into sessions) is a random interleaving of:

- ``state``: the first statement of a slot's value ``v0``;
- ``update``: the value changes ``v(j-1) -> vj`` (this also invalidates the old value);
- ``mention``: a restatement of the value current at that moment (redundancy);
- ``hedge``: a slot discussed but never settled ("may move soon, no city chosen");
- ``chatter``: small talk, carrying only the session's context;
- ``lure``: a trivial remark placed at the very start of the stream (density traps).

The order inside each slot is kept (state, then its updates, mentions after the version they
restate); across slots the interleaving is uniform at random.

Evidence units (``kind``, ``state``)
------------------------------------
- ``current_truth`` (``current``): the last value of a slot.
- ``stale_or_superseded`` (``superseded``): an earlier value and the interval it held.
- ``invalidation`` (``invalidated``): "the old value no longer holds", one per update.
- ``context`` (``background``): the setting of a session, or the content of a lure.
- ``abstention`` (``unknown``): a hedged slot's value was never settled.

Weights are **explicit kind weights**, not query demand: every unit gets a weight drawn
uniformly from its kind's levels in ``KNOBS[distribution]["weights"]`` (the current value of
a slot that changed uses the ``current_changed`` levels: questions about changed values are the
ones a memory must get right). Packages therefore report the ``explicit`` weights rule. The
queries are still generated (current value, history, interval, abstention) and name the units
that answer them.

Candidates (group = experience id: at most one representation per experience)
-----------------------------------------------------------------------------
- ``raw_span``: the utterance itself; covers what the experience states, the old value an
  update names (0.25, or ``1 - interval_split`` when larger), and its session's context
  (``raw_context``).
- ``fact``: a compact ``Entity.attribute: value`` record; covers the stated value.
- ``summary``: a recap of the experience and the ``summary_window`` experiences before it in
  the same session, at partial coverage (``summary_own``, ``summary_prior``).
- ``update`` (updates only): new value plus the invalidation, ``Entity.attr: new (¬old)``.
- ``tombstone`` (updates only): the invalidation alone, ``¬Entity.attr:old``.

Only updates and tombstones cover ``invalidation`` units, so removing them (the paper's
no-tombstone ablation) lowers OPT. Coverage values are multiples of 0.25. In ``base``, under
the ``words`` cost model, a tombstone costs 1, a fact 2, an update 3, a summary 2-4 and a raw
span 4-8 (dated records in ``temporal_interval`` cost one more); the default budgets are the
paper's B = 2, 4, 8, 16.

Distributions and their knobs
-----------------------------
``KNOBS[name]`` holds every knob of a distribution (``entities``, ``chatter``, ``lures``,
``hedges`` and ``never_said`` are multiplied by ``scale``):

``entities``, ``attributes``
    Entities, and stated attributes per entity (slots = entities x attributes).
``update_prob``, ``updates``
    Chance that a slot changes, and the inclusive range of its number of changes.
``mentions``
    Mean number of restatements per slot (Poisson).
``chatter``, ``lures``, ``hedges``, ``hedge_repeats``, ``never_said``
    Chatter experiences; early lure experiences; hedged slots and how often each is hedged
    (inclusive range); queries about facts never mentioned at all (no evidence).
``scopes``, ``scope_blind_prob``
    Scoped values per entity-attribute (1 = unscoped) and the chance a fact drops its scope
    (it then covers half the unit; summaries always blur scope, at half their level).
``session_len``
    Inclusive range of experiences per session.
``summary_window``, ``summary_own``, ``summary_prior``
    Earlier experiences a summary recaps, and its coverage of its own / recapped units.
``interval_split``
    Share of a superseded value's unit covered by candidates of the experience that stated
    it; the rest (``1 - interval_split``) is covered by the update and tombstone that end it.
    1 makes the interval implicit; 0.5 means an interval needs both of its endpoints.
``dated_facts``
    Facts, tombstones and updates carry the time (``@t12``), as interval questions need.
``raw_context``, ``raw_padding``
    Raw-span coverage of the session context; extra filler words in raw spans.
``hedge_fact_coverage``
    Coverage of an abstention unit by the tentative fact extracted from a hedge.
``interval_query_prob``
    Chance of an interval question for each superseded value.
``weights``
    Weight levels per unit kind (plus ``current_changed`` and ``lure``).

What each stress distribution changes with respect to ``base``:

- ``update_chain``: few slots, every one changing 3-5 times: long update chains, many
  invalidation units, tombstones and updates.
- ``temporal_interval``: superseded values carry real weight and are asked about by date; an
  interval is covered half at its start and half by the update that ends it
  (``interval_split`` 0.5, ``dated_facts``).
- ``density_trap``: several lures open the stream, each with a one-word fact of low value; a
  writer that takes the densest candidate of each experience in arrival order fills a small
  budget with them.
- ``scope_shift``: values hold per scope (home, work, travel, weekends); facts often drop the
  scope, summaries blur it, and a new scope comes with a misleading update/tombstone that
  invalidates nothing.
- ``summary_tradeoff``: summaries recap three earlier experiences at 0.75, while raw spans are
  wordier: one summary competes with several facts.
- ``redundancy_heavy``: many restatements of the same values, so many candidates cover the
  same units and saturation (``cap1``) rewards diverse stores.
- ``abstention_hard``: many hedged slots with heavy abstention units, repeated hedges, and
  tentative facts that cover little of them; more questions about things never said.

Determinism
-----------
A package depends only on ``(distribution, seed, scale)`` (plus the cost model and budgets,
which change costs and budgets but not the structure): the generator is a
``numpy.random.Generator`` seeded from a SHA-256 of those three, never from Python's ``hash``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UsageError
from .costs import budgets_from_fractions, check_budgets, get_cost_model

FORMAT = "memaudit.package/1"
GENERATOR_VERSION = 1

DISTRIBUTIONS: tuple[str, ...] = (
    "base",
    "update_chain",
    "temporal_interval",
    "density_trap",
    "scope_shift",
    "summary_tradeoff",
    "redundancy_heavy",
    "abstention_hard",
)

#: The paper's budgets, in words.
DEFAULT_WORD_BUDGETS: tuple[int, ...] = (2, 4, 8, 16)

UNIT_KINDS: tuple[str, ...] = (
    "current_truth",
    "invalidation",
    "stale_or_superseded",
    "context",
    "abstention",
)

REPRESENTATIONS: tuple[str, ...] = ("raw_span", "fact", "summary", "update", "tombstone")

_BASE_KNOBS: dict[str, Any] = {
    "entities": 3,
    "attributes": 2,
    "update_prob": 0.4,
    "updates": (1, 2),
    "mentions": 0.3,
    "chatter": 2,
    "lures": 0,
    "hedges": 1,
    "hedge_repeats": (1, 1),
    "never_said": 1,
    "scopes": 1,
    "scope_blind_prob": 0.0,
    "session_len": (4, 6),
    "summary_window": 1,
    "summary_own": 0.75,
    "summary_prior": 0.5,
    "interval_split": 1.0,
    "dated_facts": False,
    "raw_context": 0.25,
    "raw_padding": 0,
    "hedge_fact_coverage": 0.5,
    "interval_query_prob": 0.25,
    "weights": {
        "current_truth": (1.0, 1.2, 1.4),
        "current_changed": (2.0, 2.25, 2.5),
        "invalidation": (2.0, 2.25, 2.5),
        "stale_or_superseded": (0.1, 0.15, 0.2),
        "context": (0.3, 0.35, 0.4),
        "lure": (0.3, 0.4, 0.5),
        "abstention": (1.0, 1.25, 1.5),
    },
}


def _with(**overrides: Any) -> dict[str, Any]:
    knobs = dict(_BASE_KNOBS)
    weights = dict(_BASE_KNOBS["weights"])
    weights.update(overrides.pop("weights", {}))
    knobs.update(overrides)
    knobs["weights"] = weights
    return knobs


#: Every knob of every distribution (see the module docstring for their meaning).
KNOBS: dict[str, dict[str, Any]] = {
    "base": _with(),
    "update_chain": _with(
        entities=2, attributes=1, update_prob=1.0, updates=(3, 5), mentions=0.5, hedges=0,
        never_said=0,
    ),
    "temporal_interval": _with(
        entities=2, attributes=2, update_prob=0.8, updates=(1, 2), mentions=0.2,
        interval_split=0.5, dated_facts=True, interval_query_prob=1.0,
        weights={"stale_or_superseded": (1.0, 1.2, 1.4)},
    ),
    "density_trap": _with(
        entities=3, attributes=2, update_prob=0.5, lures=4, chatter=1, hedges=0, mentions=0.0,
    ),
    "scope_shift": _with(
        entities=2, attributes=1, scopes=3, scope_blind_prob=0.5, update_prob=0.3, updates=(1, 1),
        mentions=0.2, hedges=0,
    ),
    "summary_tradeoff": _with(
        entities=3, attributes=2, update_prob=0.3, mentions=0.2, chatter=3, summary_window=3,
        summary_own=0.75, summary_prior=0.75, raw_padding=3, session_len=(5, 7), hedges=0,
    ),
    "redundancy_heavy": _with(
        entities=2, attributes=2, update_prob=0.3, mentions=2.0, chatter=1, summary_window=2,
        hedges=0,
    ),
    "abstention_hard": _with(
        entities=2, attributes=2, update_prob=0.3, mentions=0.2, chatter=1, hedges=3,
        hedge_repeats=(1, 2), never_said=2, hedge_fact_coverage=0.25,
        weights={"abstention": (2.0, 2.25, 2.5)},
    ),
}


@dataclass(frozen=True)
class Attribute:
    """An attribute with its value pool and the sentences that state, change or restate it."""

    name: str
    values: tuple[str, ...]
    state: str
    update: str
    mention: str
    question: str
    hedge: str = ""


_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("city", ("Lisbon", "Porto", "Berlin", "Oslo", "Madrid", "Kyoto", "Denver", "Dublin"),
              "{E} lives in {v} now.", "{E} moved from {old} to {v}.",
              "{E} still likes living in {v}.", "Where does {E} live?",
              "{E} may move soon, no city chosen."),
    Attribute("employer", ("Acme", "Globex", "Initech", "Hooli", "Umbrella", "Tyrell", "Wonka"),
              "{E} works at {v}.", "{E} left {old} and joined {v}.",
              "{E} had a long week at {v}.", "Where does {E} work?",
              "{E} is interviewing but has no offer."),
    Attribute("diet", ("vegetarian", "vegan", "pescatarian", "keto", "omnivore", "paleo",
                       "flexitarian"),
              "{E} eats {v} these days.", "{E} went from {old} to {v}.",
              "{E} cooked a {v} dinner again.", "What diet does {E} follow?",
              "{E} is rethinking their diet, undecided."),
    Attribute("pet", ("cat", "dog", "parrot", "rabbit", "hamster", "turtle", "ferret"),
              "{E} has a {v} at home.", "{E} rehomed the {old} and got a {v}.",
              "{E} posted photos of the {v}.", "What pet does {E} have?",
              "{E} wants a pet, has not chosen."),
    Attribute("hobby", ("climbing", "chess", "pottery", "running", "guitar", "painting", "sailing"),
              "{E} has taken up {v} lately.", "{E} dropped {old} for {v}.",
              "{E} spent Sunday on {v} again.", "What is {E}'s hobby?",
              "{E} wants a new hobby, still unsure."),
    Attribute("car", ("Volvo", "Tesla", "Fiat", "Honda", "Subaru", "Mini", "Skoda"),
              "{E} drives a {v}.", "{E} sold the {old} and bought a {v}.",
              "{E} drove the {v} to the coast.", "What car does {E} drive?",
              "{E} is shopping for a car, undecided."),
    Attribute("role", ("manager", "designer", "engineer", "analyst", "teacher", "nurse", "chef"),
              "{E} works as a {v}.", "{E} switched jobs from {old} to {v}.",
              "{E} enjoys being a {v}.", "What is {E}'s job?",
              "{E} might change careers, unclear how."),
    Attribute("gym", ("FitHub", "IronWorks", "PulseGym", "CoreLab", "Apex", "Zenith", "Motion"),
              "{E} trains at {v}.", "{E} cancelled {old} and joined {v}.",
              "{E} met a friend at {v}.", "Which gym does {E} use?",
              "{E} is comparing gyms, none picked."),
    Attribute("phone", ("Pixel", "iPhone", "Galaxy", "Fairphone", "Xperia", "Nokia", "Moto"),
              "{E} uses a {v} phone.", "{E} swapped the {old} for a {v}.",
              "{E} dropped the {v} again.", "What phone does {E} use?",
              "{E} needs a new phone, undecided."),
    Attribute("language", ("Spanish", "Japanese", "German", "Arabic", "Italian", "Korean", "Dutch"),
              "{E} is learning {v}.", "{E} paused {old} to learn {v}.",
              "{E} practised {v} on the train.", "Which language is {E} learning?",
              "{E} wants to learn a language, unsure which."),
)

# Attributes whose value sensibly differs by scope (scope_shift).
_SCOPED_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("drink", ("espresso", "tea", "water", "cola", "juice", "latte", "cocoa"),
              "{E} drinks {v}.", "{E} swapped {old} for {v}.", "{E} ordered {v} again.",
              "What does {E} drink?"),
    Attribute("music", ("jazz", "techno", "folk", "classical", "silence", "podcasts", "ambient"),
              "{E} listens to {v}.", "{E} replaced {old} with {v}.", "{E} had {v} on again.",
              "What does {E} listen to?"),
    Attribute("seat", ("aisle", "window", "front", "back", "corner", "middle", "standing"),
              "{E} prefers the {v} seat.", "{E} moved from {old} to {v} seats.",
              "{E} grabbed the {v} seat again.", "Which seat does {E} prefer?"),
    Attribute("transport", ("bike", "bus", "train", "car", "tram", "scooter", "foot"),
              "{E} gets around by {v}.", "{E} gave up the {old} for the {v}.",
              "{E} took the {v} again.", "How does {E} get around?"),
)

_SCOPES = ("home", "work", "travel", "weekends")
_SCOPE_PHRASES = {"home": "at home", "work": "at work", "travel": "when travelling",
                  "weekends": "on weekends"}

_NAMES = (
    "Ana", "Bo", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena", "Milo",
    "Nia", "Omar", "Pia", "Quin", "Rosa", "Sami", "Tess", "Uma", "Vik", "Wren", "Xia", "Yusuf",
    "Zoe",
)

_SETTINGS = ("at a cafe", "on a call", "at the office", "on a walk", "at dinner", "on a train",
             "at the park", "in the car")
_TOPICS = ("the weather", "a film", "lunch", "traffic", "a podcast", "the weekend", "football",
           "a new bakery", "the news", "a concert")
_CHATTER = (
    "Chatting {setting} about {topic}.",
    "Chatted {setting} about {topic}.",
    "Talked {setting} about {topic}.",
)
_LURES = (("wifi", "reset"), ("printer", "jammed"), ("lunch", "pizza"), ("weather", "sunny"),
          ("parking", "full"), ("coffee", "cold"), ("meeting", "moved"), ("badge", "lost"),
          ("lift", "broken"), ("heating", "off"))
_PADDING = ("you know", "as I said", "by the way", "honestly", "anyway", "so yes")


# ---------------------------------------------------------------------------------------------
# The hidden event graph


@dataclass
class _Slot:
    key: str
    entity: str
    attr: Attribute
    scope: str | None
    values: list[str]
    # Filled while building experiences: timestamp at which each version was stated.
    starts: list[int] = field(default_factory=list)


@dataclass
class _Hedge:
    key: str
    entity: str
    attr: Attribute
    guess: str


@dataclass
class _Event:
    kind: str  # state | update | mention | hedge | chatter | lure
    slot: _Slot | None = None
    version: int = 0
    hedge: _Hedge | None = None
    lure: tuple[str, str] | None = None
    topic: str = ""


def _rng_for(distribution: str, seed: int, scale: int) -> np.random.Generator:
    digest = hashlib.sha256(
        f"memaudit-small/{GENERATOR_VERSION}|{distribution}|{seed}|{scale}".encode()
    ).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def _inclusive(rng: np.random.Generator, bounds: tuple[int, int]) -> int:
    return int(rng.integers(bounds[0], bounds[1] + 1))


def _entity_names(rng: np.random.Generator, count: int) -> list[str]:
    order = [_NAMES[i] for i in rng.permutation(len(_NAMES))]
    # Past the pool, a numeric suffix keeps names unique (Ana, Ana2, ...).
    return [order[i % len(order)] + (str(i // len(order) + 1) if i >= len(order) else "")
            for i in range(count)]


def _build_graph(
    rng: np.random.Generator, k: dict[str, Any], scale: int
) -> tuple[list[_Slot], list[_Hedge], list[tuple[str, Attribute]], list[_Event]]:
    """Slots with their value chains, hedges, never-said pairs, and the ordered event stream."""
    names = _entity_names(rng, k["entities"] * scale)
    scoped = k["scopes"] > 1
    pool = _SCOPED_ATTRIBUTES if scoped else _ATTRIBUTES
    n_attrs = min(k["attributes"], len(pool))
    slots: list[_Slot] = []
    free_pairs: list[tuple[str, Attribute]] = []
    for name in names:
        order = rng.permutation(len(pool))
        for a in order[:n_attrs]:
            attr = pool[int(a)]
            scopes: list[str | None] = (
                [_SCOPES[int(s)] for s in rng.permutation(len(_SCOPES))[: k["scopes"]]]
                if scoped else [None]
            )
            for scope in scopes:
                changes = _inclusive(rng, k["updates"]) if rng.random() < k["update_prob"] else 0
                changes = min(changes, len(attr.values) - 1)
                picks = rng.permutation(len(attr.values))[: changes + 1]
                values = [attr.values[int(v)] for v in picks]
                key = f"{name}.{attr.name}" + (f"@{scope}" if scope else "")
                slots.append(_Slot(key, name, attr, scope, values))
        if not scoped:
            free_pairs.extend((name, _ATTRIBUTES[int(a)]) for a in order[n_attrs:])
    if scoped:
        # Hedges and never-said questions use the unscoped attributes, free for every entity.
        free_pairs = [(name, attr) for name in names for attr in _ATTRIBUTES]
    free_order = [free_pairs[int(i)] for i in rng.permutation(len(free_pairs))]
    n_hedges = min(k["hedges"] * scale, len(free_order))
    hedges = []
    for name, attr in free_order[:n_hedges]:
        hedges.append(_Hedge(f"{name}.{attr.name}", name, attr, _pick(rng, attr.values)))
    rest = free_order[n_hedges:]
    never_said = rest[: min(k["never_said"] * scale, len(rest))]

    # Each slot is a queue: its state, its updates, and mentions after the version they restate.
    queues: list[list[_Event]] = []
    for slot in slots:
        per_version: list[list[_Event]] = [
            [_Event("state" if j == 0 else "update", slot, j)] for j in range(len(slot.values))
        ]
        for _ in range(int(rng.poisson(k["mentions"]))):
            j = int(rng.integers(len(slot.values)))
            per_version[j].append(_Event("mention", slot, j))
        queues.append([e for events in per_version for e in events])
    for hedge in hedges:
        repeats = _inclusive(rng, k["hedge_repeats"])
        queues.append([_Event("hedge", hedge=hedge) for _ in range(repeats)])
    for _ in range(k["chatter"] * scale):
        queues.append([_Event("chatter", topic=_pick(rng, _TOPICS))])

    # A uniform interleaving that keeps each queue's order: shuffle the multiset of queue labels.
    labels = np.repeat(np.arange(len(queues)), [len(q) for q in queues])
    heads = [0] * len(queues)
    stream: list[_Event] = []
    for label in rng.permutation(labels):
        q = int(label)
        stream.append(queues[q][heads[q]])
        heads[q] += 1
    lures = [_Event("lure", lure=_LURES[int(rng.integers(len(_LURES)))])
             for _ in range(k["lures"] * scale)]
    return slots, hedges, never_said, lures + stream


# ---------------------------------------------------------------------------------------------
# Units, experiences and candidates


def _quantize(x: float) -> float:
    """Nearest multiple of 0.25 (coverage levels 0.25, 0.5, 0.75, 1)."""
    return min(1.0, math.floor(x * 4 + 0.5) / 4)


class _Builder:
    def __init__(self, rng: np.random.Generator, knobs: dict[str, Any]) -> None:
        self.rng = rng
        self.k = knobs
        self.units: list[dict[str, Any]] = []
        self.unit_index: dict[str, dict[str, Any]] = {}
        self.experiences: list[dict[str, Any]] = []
        self.candidates: list[dict[str, Any]] = []
        self.queries: list[dict[str, Any]] = []

    def weight(self, level_key: str) -> float:
        return float(_pick(self.rng, self.k["weights"][level_key]))

    def add_unit(self, unit_id: str, kind: str, state: str, text: str, level_key: str) -> str:
        unit = {"unit_id": unit_id, "kind": kind, "text": text, "weight": self.weight(level_key),
                "state": state}
        self.units.append(unit)
        self.unit_index[unit_id] = unit
        return unit_id

    def add_candidate(self, exp_id: str, representation: str, text: str,
                      coverage: dict[str, float], **extra: Any) -> None:
        cov = {u: _quantize(v) for u, v in coverage.items() if _quantize(v) > 0}
        cand = {"candidate_id": f"{exp_id}:{representation}", "experience_id": exp_id,
                "group": exp_id, "representation": representation, "text": text, "cost": 0,
                "coverage": cov}
        cand.update(extra)
        self.candidates.append(cand)


def _version_unit(slot: _Slot, j: int) -> str:
    return f"{slot.key}:v{j}"


def _invalidation_unit(slot: _Slot, j: int) -> str:
    return f"{slot.key}:inv{j}"


def _fact_text(slot: _Slot, value: str, scoped: bool, stamp: str) -> str:
    where = f"@{slot.scope}" if scoped and slot.scope else ""
    return f"{slot.entity}.{slot.attr.name}{where}: {value}{stamp}"


def _build_units(b: _Builder, slots: list[_Slot], hedges: list[_Hedge],
                 ends: dict[tuple[str, int], int]) -> None:
    for slot in slots:
        last = len(slot.values) - 1
        label = f"{slot.entity}'s {slot.attr.name}" + (
            f" {_SCOPE_PHRASES[slot.scope]}" if slot.scope else "")
        for j, value in enumerate(slot.values):
            if j == last:
                b.add_unit(_version_unit(slot, j), "current_truth", "current",
                           f"{label} is {value}",
                           "current_changed" if last > 0 else "current_truth")
            else:
                b.add_unit(_version_unit(slot, j), "stale_or_superseded", "superseded",
                           f"{label} was {value} from t{slot.starts[j]} to t{ends[(slot.key, j)]}",
                           "stale_or_superseded")
        for j in range(1, len(slot.values)):
            b.add_unit(_invalidation_unit(slot, j), "invalidation", "invalidated",
                       f"{label} is no longer {slot.values[j - 1]} (since t{slot.starts[j]})",
                       "invalidation")
    for hedge in hedges:
        b.add_unit(f"{hedge.key}:abstain", "abstention", "unknown",
                   f"{hedge.entity}'s {hedge.attr.name} was never settled", "abstention")


def _pad(b: _Builder, text: str) -> str:
    n = b.k["raw_padding"]
    if n <= 0:
        return text
    words: list[str] = []
    while len(words) < n:
        words.extend(_pick(b.rng, _PADDING).split())
    return f"{text[:-1]}, {' '.join(words[:n])}{text[-1]}"


def generate_package(
    distribution: str,
    seed: int,
    scale: int = 1,
    cost_model: str = "words",
    budgets: Sequence[float] | None = None,
    budget_fracs: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Generate one MEMAUDIT-Small package (a ``memaudit.package/1`` dict).

    Parameters
    ----------
    distribution : str
        One of :data:`DISTRIBUTIONS`.
    seed : int
        Non-negative seed; with ``distribution`` and ``scale`` it fixes the package.
    scale : int
        Multiplies entities and experiences (1 gives about 20-60 candidates, 100 a few
        thousand).
    cost_model : str
        ``words``, ``bytes`` or ``tokens`` (see :mod:`memaudit_fast.suites.costs`).
    budgets : sequence of float, optional
        Absolute budgets, in the cost model's units.
    budget_fracs : sequence of float, optional
        Budgets as fractions of the package's total candidate cost, floored to integers.

    Without ``budgets`` and ``budget_fracs`` the budgets are the paper's (2, 4, 8, 16) in words;
    under another cost model those four are multiplied by the ratio of the package's mean
    candidate cost under that model to its mean word cost, rounded up and raised to at least
    the cheapest candidate's cost (so the smallest budget still stores something); equal
    results are listed once.

    Raises
    ------
    UsageError
        For an unknown distribution or cost model, a bad seed or scale, or both budget options.
    """
    if distribution not in KNOBS:
        raise UsageError(
            f"unknown distribution {distribution!r}; expected one of {', '.join(DISTRIBUTIONS)}"
        )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UsageError(f"seed {seed!r} is not an integer >= 0")
    if isinstance(scale, bool) or not isinstance(scale, (int, np.integer)) or scale < 1:
        raise UsageError(f"scale {scale!r} is not an integer >= 1")
    if budgets is not None and budget_fracs is not None:
        raise UsageError("give budgets or budget_fracs, not both")
    seed, scale = int(seed), int(scale)
    cost_fn = get_cost_model(cost_model)
    k = KNOBS[distribution]
    rng = _rng_for(distribution, seed, scale)
    slots, hedges, never_said, stream = _build_graph(rng, k, scale)
    sessions = _session_numbers(rng, k["session_len"], len(stream))
    ends = _date_versions(slots, stream)

    b = _Builder(rng, k)
    _build_units(b, slots, hedges, ends)
    settings = [_pick(rng, _SETTINGS) for _ in range(sessions[-1] + 1 if sessions else 0)]
    for sid, setting in enumerate(settings):
        b.add_unit(f"ctx:s{sid}", "context", "background",
                   f"Session s{sid} took place {setting}", "context")

    recap: list[_Recap] = []
    for t, event in enumerate(stream):
        exp_id, ctx = f"e{t}", f"ctx:s{sessions[t]}"
        speaker = "user"
        if event.kind in ("state", "update", "mention"):
            text, own = _slot_experience(b, event, exp_id, t, ctx, slots)
        elif event.kind == "hedge":
            text, own = _hedge_experience(b, event, exp_id, ctx)
        elif event.kind == "lure":
            text, own = _lure_experience(b, event, exp_id, t, ctx)
        else:
            speaker = "user" if b.rng.random() < 0.5 else "assistant"
            text = _pick(b.rng, _CHATTER).format(setting=settings[sessions[t]], topic=event.topic)
            own = _Recap({ctx: 1.0}, f"chat {event.topic.split()[-1]}")
            b.add_candidate(exp_id, "raw_span", text, {ctx: 1.0})
        recap.append(own)
        _add_summary(b, exp_id, t, sessions, recap)
        b.experiences.append({"experience_id": exp_id, "session_id": f"s{sessions[t]}",
                              "timestamp": t, "text": text, "speaker": speaker})
    _add_queries(b, slots, hedges, never_said, ends)

    for cand in b.candidates:
        cand["cost"] = cost_fn(cand["text"])
    package_id = f"small/{distribution}/s{seed:04d}"
    if scale != 1:
        package_id += f"/x{scale}"
    if cost_model != "words":
        package_id += f"/{cost_model}"
    return {
        "format": FORMAT,
        "package_id": package_id,
        "objective": {"saturation": "cap1"},
        "budgets": _resolve_budgets(b.candidates, cost_model, budgets, budget_fracs),
        "cost_model": cost_model,
        "experiences": b.experiences,
        "units": b.units,
        "candidates": b.candidates,
        "queries": b.queries,
        "meta": {
            "suite": "memaudit-small",
            "generator_version": GENERATOR_VERSION,
            "distribution": distribution,
            "seed": seed,
            "scale": scale,
            "weights_rule": "explicit kind weights (KNOBS[distribution]['weights'])",
            "budget_rule": _budget_rule(cost_model, budgets, budget_fracs),
            "knobs": _jsonable(k),
            "event_graph": _event_graph(slots, hedges, never_said, stream),
        },
    }


@dataclass
class _Recap:
    """What a summary can recap of one experience: the units it states, and a short phrase."""

    units: dict[str, float]
    phrase: str


def _session_numbers(rng: np.random.Generator, bounds: tuple[int, int], n: int) -> list[int]:
    sessions: list[int] = []
    while len(sessions) < n:
        number = sessions[-1] + 1 if sessions else 0
        sessions.extend([number] * _inclusive(rng, bounds))
    return sessions[:n]


def _date_versions(slots: list[_Slot], stream: list[_Event]) -> dict[tuple[str, int], int]:
    """Record when each version starts; return when each superseded version ends."""
    for t, event in enumerate(stream):
        if event.kind in ("state", "update"):
            assert event.slot is not None
            event.slot.starts.append(t)
    return {(s.key, j): s.starts[j + 1] for s in slots for j in range(len(s.values) - 1)}


def _slot_experience(b: _Builder, event: _Event, exp_id: str, t: int, ctx: str,
                     slots: list[_Slot]) -> tuple[str, _Recap]:
    """A state, update or mention of a slot, with its candidates."""
    slot, j, k = event.slot, event.version, b.k
    assert slot is not None
    # A superseded version's unit is shared between its start and its end (interval_split).
    share = 1.0 if j == len(slot.values) - 1 else k["interval_split"]
    value = slot.values[j]
    template = {"state": slot.attr.state, "update": slot.attr.update,
                "mention": slot.attr.mention}[event.kind]
    text = template.format(E=slot.entity, v=value, old=slot.values[j - 1] if j else "")
    if slot.scope:
        lead = _SCOPE_PHRASES[slot.scope]
        text = f"{lead[0].upper()}{lead[1:]}, {text}"
    text = _pad(b, text)
    stamp = f" @t{t}" if k["dated_facts"] else ""
    unit = _version_unit(slot, j)
    raw_cov = {unit: share, ctx: k["raw_context"]}
    if event.kind == "update":
        # The utterance names the old value, and with its time it dates the old value's end.
        raw_cov[_version_unit(slot, j - 1)] = max(0.25, 1.0 - k["interval_split"])
    b.add_candidate(exp_id, "raw_span", text, raw_cov)
    blind = slot.scope is not None and b.rng.random() < k["scope_blind_prob"]
    b.add_candidate(exp_id, "fact", _fact_text(slot, value, not blind, stamp),
                    {unit: share * (0.5 if blind else 1.0)})
    if event.kind == "update":
        _add_invalidation_candidates(b, slot, j, exp_id, stamp, share)
    elif event.kind == "state" and slot.scope:
        other = _other_scope_value(slot, slots, t)
        if other is not None:
            # A value for a new scope reads like a change of another scope's value; these
            # records invalidate nothing (a scope shift is not an update).
            note = "scope shift taken for an update"
            attr = f"{slot.entity}.{slot.attr.name}"
            b.add_candidate(exp_id, "update", f"{attr}: {value} (¬{other}){stamp}",
                            {unit: share * 0.5}, misreads=note)
            b.add_candidate(exp_id, "tombstone", f"¬{attr}:{other}{stamp}", {}, misreads=note)
    return text, _Recap({unit: share}, f"{slot.entity} {value}")


def _add_invalidation_candidates(b: _Builder, slot: _Slot, j: int, exp_id: str, stamp: str,
                                 share: float) -> None:
    """The update and tombstone of version ``j``: the only candidates covering invalidations."""
    old = slot.values[j - 1]
    where = f"@{slot.scope}" if slot.scope else ""
    attr = f"{slot.entity}.{slot.attr.name}{where}"
    ended = {_invalidation_unit(slot, j): 1.0,
             _version_unit(slot, j - 1): 1.0 - b.k["interval_split"]}
    b.add_candidate(exp_id, "update", f"{attr}: {slot.values[j]} (¬{old}){stamp}",
                    {_version_unit(slot, j): share, **ended})
    b.add_candidate(exp_id, "tombstone", f"¬{attr}:{old}{stamp}", ended)


def _hedge_experience(b: _Builder, event: _Event, exp_id: str, ctx: str) -> tuple[str, _Recap]:
    hedge = event.hedge
    assert hedge is not None
    unit = f"{hedge.key}:abstain"
    text = _pad(b, hedge.attr.hedge.format(E=hedge.entity))
    b.add_candidate(exp_id, "raw_span", text, {unit: 1.0, ctx: b.k["raw_context"]})
    # The extracted fact states a guess: it keeps little of "this was never settled".
    b.add_candidate(exp_id, "fact", f"{hedge.entity}.{hedge.attr.name}: {hedge.guess}?",
                    {unit: b.k["hedge_fact_coverage"]})
    return text, _Recap({unit: 1.0}, f"{hedge.entity} {hedge.attr.name}?")


def _lure_experience(b: _Builder, event: _Event, exp_id: str, t: int,
                     ctx: str) -> tuple[str, _Recap]:
    assert event.lure is not None
    thing, state = event.lure
    unit = b.add_unit(f"lure:e{t}", "context", "background", f"The {thing} was {state} at t{t}",
                      "lure")
    text = f"Quick note: the {thing} is {state}."
    b.add_candidate(exp_id, "raw_span", text, {unit: 1.0, ctx: b.k["raw_context"]})
    b.add_candidate(exp_id, "fact", f"{thing}:{state}", {unit: 1.0})
    return text, _Recap({unit: 1.0}, f"{thing} {state}")


def _add_summary(b: _Builder, exp_id: str, t: int, sessions: list[int],
                 recap: list[_Recap]) -> None:
    """Recap experience ``t`` and up to ``summary_window`` earlier ones of its session."""
    k = b.k
    blur_scopes = k["scopes"] > 1
    cov: dict[str, float] = {}
    phrases: list[str] = []
    for back in range(max(0, t - k["summary_window"]), t + 1):
        if sessions[back] != sessions[t]:
            continue
        level = k["summary_own"] if back == t else k["summary_prior"]
        for unit, share in recap[back].units.items():
            blur = 0.5 if blur_scopes and b.unit_index[unit]["kind"] != "context" else 1.0
            cov[unit] = max(cov.get(unit, 0.0), _quantize(level * share * blur))
        phrases.append(recap[back].phrase)
    b.add_candidate(exp_id, "summary", "; ".join(phrases), cov)


def _event_graph(slots: list[_Slot], hedges: list[_Hedge],
                 never_said: list[tuple[str, Attribute]], stream: list[_Event]) -> dict[str, Any]:
    """The hidden graph, for analysis and tests (writers are not meant to read it)."""
    return {
        "slots": [
            {"slot": s.key, "entity": s.entity, "attribute": s.attr.name, "scope": s.scope,
             "values": s.values, "starts": s.starts,
             "unit_ids": [_version_unit(s, j) for j in range(len(s.values))],
             "invalidation_unit_ids": [_invalidation_unit(s, j) for j in range(1, len(s.values))]}
            for s in slots
        ],
        "hedges": [h.key for h in hedges],
        "never_said": [f"{name}.{attr.name}" for name, attr in never_said],
        "events": [e.kind for e in stream],
    }


def _other_scope_value(slot: _Slot, slots: list[_Slot], t: int) -> str | None:
    """For a scoped slot first stated at ``t``: the latest value another scope of the same
    entity-attribute already had at ``t``, or ``None`` if no other scope was stated before."""
    best: tuple[int, str] | None = None
    for other in slots:
        if other is slot or other.entity != slot.entity or other.attr is not slot.attr:
            continue
        for j, start in enumerate(other.starts):
            if start < t and (best is None or start > best[0]):
                best = (start, other.values[j])
    return best[1] if best else None


def _add_queries(b: _Builder, slots: list[_Slot], hedges: list[_Hedge],
                 never_said: list[tuple[str, Attribute]], ends: dict[tuple[str, int], int]) -> None:
    def add(text: str, category: str, required: list[str], answer: str) -> None:
        b.queries.append({"query_id": f"q{len(b.queries)}", "text": text, "category": category,
                          "required_unit_ids": required, "answer": answer})

    for slot in slots:
        last = len(slot.values) - 1
        question = slot.attr.question.format(E=slot.entity)
        if slot.scope:
            question = f"{question[:-1]} {_SCOPE_PHRASES[slot.scope]}?"
        lowered = question[0].lower() + question[1:]
        required = [_version_unit(slot, last)] + ([_invalidation_unit(slot, last)] if last else [])
        add(question, "current_value", required, slot.values[last])
        if last:
            add(f"Before {slot.values[last]}, {lowered}", "history",
                [_version_unit(slot, last - 1), _invalidation_unit(slot, last)],
                slot.values[last - 1])
        for j in range(last):
            if b.rng.random() < b.k["interval_query_prob"]:
                start, end = slot.starts[j], ends[(slot.key, j)]
                add(f"At t{(start + end) // 2}, {lowered}", "interval",
                    [_version_unit(slot, j)], slot.values[j])
    for hedge in hedges:
        add(hedge.attr.question.format(E=hedge.entity), "abstention",
            [f"{hedge.key}:abstain"], "Never settled: it was discussed but not decided.")
    for name, attr in never_said:
        add(attr.question.format(E=name), "abstention", [], "Never mentioned.")


def _resolve_budgets(candidates: list[dict[str, Any]], cost_model: str,
                     budgets: Sequence[float] | None,
                     budget_fracs: Sequence[float] | None) -> list[float]:
    if budgets is not None:
        return check_budgets(list(budgets))
    if budget_fracs is not None:
        if len(budget_fracs) == 0:
            raise UsageError("budget_fracs: give at least one fraction")
        return list(budgets_from_fractions(list(budget_fracs), sum(c["cost"] for c in candidates)))
    if cost_model == "words" or not candidates:
        return list(DEFAULT_WORD_BUDGETS)
    words = get_cost_model("words")
    ratio = sum(c["cost"] for c in candidates) / sum(words(c["text"]) for c in candidates)
    # Never below the cheapest candidate: a budget that stores nothing measures nothing.
    cheapest = min(c["cost"] for c in candidates)
    scaled = [max(math.ceil(b * ratio - 1e-9), cheapest) for b in DEFAULT_WORD_BUDGETS]
    return list(dict.fromkeys(scaled))


def _budget_rule(cost_model: str, budgets: Sequence[float] | None,
                 budget_fracs: Sequence[float] | None) -> str:
    if budgets is not None:
        return "absolute budgets as given"
    if budget_fracs is not None:
        return f"floor(f * total candidate cost) for f in {list(budget_fracs)}"
    if cost_model == "words":
        return "paper budgets 2, 4, 8, 16 (words)"
    return ("paper budgets 2, 4, 8, 16 scaled by mean candidate cost / mean word cost, rounded "
            "up, at least the cheapest candidate's cost")


def _jsonable(knobs: dict[str, Any]) -> dict[str, Any]:
    def conv(v: Any) -> Any:
        if isinstance(v, tuple):
            return [conv(x) for x in v]
        if isinstance(v, dict):
            return {key: conv(x) for key, x in v.items()}
        return v

    return {key: conv(v) for key, v in knobs.items()}


def generate_set(
    distribution: str | Iterable[str],
    seeds: Iterable[int],
    scale: int = 1,
    cost_model: str = "words",
    budgets: Sequence[float] | None = None,
    budget_fracs: Sequence[float] | None = None,
) -> Iterator[dict[str, Any]]:
    """Generate packages for every seed; ``distribution`` may be a name, several, or ``"all"``.

    With several distributions the order is distribution-major (every seed of the first, then
    every seed of the next), in the order given (``"all"``: :data:`DISTRIBUTIONS`).
    """
    names = (list(DISTRIBUTIONS) if distribution == "all" else [distribution]) \
        if isinstance(distribution, str) else list(distribution)
    for name in names:
        if name not in KNOBS:
            raise UsageError(
                f"unknown distribution {name!r}; expected one of {', '.join(DISTRIBUTIONS)} or all"
            )
    seed_list = list(seeds)
    for name in names:
        for seed in seed_list:
            yield generate_package(name, seed, scale=scale, cost_model=cost_model,
                                   budgets=budgets, budget_fracs=budget_fracs)
