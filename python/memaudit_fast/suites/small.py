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

The distributions' knobs are documented in :mod:`.small_knobs`, the event graph's types in
:mod:`.small_graph`, and the words drawn from in :mod:`.small_vocab`.

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
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UsageError
from .costs import budgets_from_fractions, check_budgets, get_cost_model
from .small_graph import Event, Hedge, Slot, build_graph, inclusive, pick
from .small_knobs import DISTRIBUTIONS, KNOBS
from .small_vocab import CHATTER, PADDING, SCOPE_PHRASES, SETTINGS, Attribute

FORMAT = "memaudit.package/1"
GENERATOR_VERSION = 1

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


# ---------------------------------------------------------------------------------------------
# Seeding


def _rng_for(distribution: str, seed: int, scale: int) -> np.random.Generator:
    digest = hashlib.sha256(
        f"memaudit-small/{GENERATOR_VERSION}|{distribution}|{seed}|{scale}".encode()
    ).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


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
        return float(pick(self.rng, self.k["weights"][level_key]))

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


def _version_unit(slot: Slot, j: int) -> str:
    return f"{slot.key}:v{j}"


def _invalidation_unit(slot: Slot, j: int) -> str:
    return f"{slot.key}:inv{j}"


def _fact_text(slot: Slot, value: str, scoped: bool, stamp: str) -> str:
    where = f"@{slot.scope}" if scoped and slot.scope else ""
    return f"{slot.entity}.{slot.attr.name}{where}: {value}{stamp}"


def _build_units(b: _Builder, slots: list[Slot], hedges: list[Hedge],
                 ends: dict[tuple[str, int], int]) -> None:
    for slot in slots:
        last = len(slot.values) - 1
        label = f"{slot.entity}'s {slot.attr.name}" + (
            f" {SCOPE_PHRASES[slot.scope]}" if slot.scope else "")
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
        words.extend(pick(b.rng, PADDING).split())
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
    slots, hedges, never_said, stream = build_graph(rng, k, scale)
    sessions = _session_numbers(rng, k["session_len"], len(stream))
    ends = _date_versions(slots, stream)

    b = _Builder(rng, k)
    _build_units(b, slots, hedges, ends)
    settings = [pick(rng, SETTINGS) for _ in range(sessions[-1] + 1 if sessions else 0)]
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
            text = pick(b.rng, CHATTER).format(setting=settings[sessions[t]], topic=event.topic)
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
        sessions.extend([number] * inclusive(rng, bounds))
    return sessions[:n]


def _date_versions(slots: list[Slot], stream: list[Event]) -> dict[tuple[str, int], int]:
    """Record when each version starts; return when each superseded version ends."""
    for t, event in enumerate(stream):
        if event.kind in ("state", "update"):
            assert event.slot is not None
            event.slot.starts.append(t)
    return {(s.key, j): s.starts[j + 1] for s in slots for j in range(len(s.values) - 1)}


def _slot_experience(b: _Builder, event: Event, exp_id: str, t: int, ctx: str,
                     slots: list[Slot]) -> tuple[str, _Recap]:
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
        lead = SCOPE_PHRASES[slot.scope]
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


def _add_invalidation_candidates(b: _Builder, slot: Slot, j: int, exp_id: str, stamp: str,
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


def _hedge_experience(b: _Builder, event: Event, exp_id: str, ctx: str) -> tuple[str, _Recap]:
    hedge = event.hedge
    assert hedge is not None
    unit = f"{hedge.key}:abstain"
    text = _pad(b, hedge.attr.hedge.format(E=hedge.entity))
    b.add_candidate(exp_id, "raw_span", text, {unit: 1.0, ctx: b.k["raw_context"]})
    # The extracted fact states a guess: it keeps little of "this was never settled".
    b.add_candidate(exp_id, "fact", f"{hedge.entity}.{hedge.attr.name}: {hedge.guess}?",
                    {unit: b.k["hedge_fact_coverage"]})
    return text, _Recap({unit: 1.0}, f"{hedge.entity} {hedge.attr.name}?")


def _lure_experience(b: _Builder, event: Event, exp_id: str, t: int,
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


def _event_graph(slots: list[Slot], hedges: list[Hedge],
                 never_said: list[tuple[str, Attribute]], stream: list[Event]) -> dict[str, Any]:
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


def _other_scope_value(slot: Slot, slots: list[Slot], t: int) -> str | None:
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


def _add_queries(b: _Builder, slots: list[Slot], hedges: list[Hedge],
                 never_said: list[tuple[str, Attribute]], ends: dict[tuple[str, int], int]) -> None:
    def add(text: str, category: str, required: list[str], answer: str) -> None:
        b.queries.append({"query_id": f"q{len(b.queries)}", "text": text, "category": category,
                          "required_unit_ids": required, "answer": answer})

    for slot in slots:
        last = len(slot.values) - 1
        question = slot.attr.question.format(E=slot.entity)
        if slot.scope:
            question = f"{question[:-1]} {SCOPE_PHRASES[slot.scope]}?"
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
