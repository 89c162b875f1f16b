"""The MEMAUDIT-Small distributions and their knobs.

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
"""

from __future__ import annotations

from typing import Any

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
