"""Natural packages from LoCoMo conversations.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
ACL 2024) holds long two-speaker conversations with QA items whose ``evidence`` names the
turns that answer them, plus extracted observations and session/event summaries. MEMAUDIT
scores memory writing on natural packages cut from such dialogue; this module builds **one
package per conversation** (the whole conversation is the experience stream a writer sees,
and every question of the conversation is a future need), so nothing depends on which
conversations a file holds.

The package
-----------
- **Experiences**: every turn, in order (sessions by number, turns as listed):
  ``experience_id`` = ``dia_id``, ``session_id`` = ``session_<N>``, ``timestamp`` = position in
  the conversation, ``speaker``, ``session_date`` (as written in the file), ``text``. A turn that
  shared an image gets its caption appended as ``[shares an image: ...]``.
- **Evidence units**: one per turn named as evidence by at least one kept question,
  ``unit_id`` = ``ev:<dia_id>``, ``kind`` = ``evidence``, text = the turn's text, ``weight`` = the
  number of kept questions that name it (explicit; equal to the query-demand rule), and
  ``categories`` = how many of those questions fall in each LoCoMo category.
- **Queries**: one per kept question, ``query_id`` = ``q<index in qa>``, ``category`` = the
  category's usual name (``locomo_category`` keeps the number), ``answer`` (or the
  ``adversarial_answer``), ``required_unit_ids`` = its evidence units.
- **Candidates**, all costed by the cost model (words by default):

  ``raw_span`` ``<dia_id>:raw``
      The turn itself; covers the turn's unit at 1.0.
  ``fact`` ``<dia_id>:obs<k>``
      The dataset's observations (``session_N_observation``), each tied to the turn(s) it
      cites; covers each cited turn's unit at 1.0. An observation citing several turns is
      placed at the **latest** of them (it can only be written once all were seen).
  ``summary`` ``session_<N>:summary`` and ``session_<N>:event<k>``
      The session summary and each event of ``events_session_N``, attached to the session's
      **last** turn (a summary exists once the session is over). Coverage is partial, by
      :func:`summary_coverage_level`.

Groups: candidates derived from one turn share ``group`` = that turn's ``dia_id`` (one
representation per turn). Session and event summaries are not representations of their
attachment turn, so each is its own group (``group`` = its candidate id): storing a summary
never excludes the last turn's raw span or observations.

Summary coverage rule
---------------------
A summary covers an evidence turn of its own session by lexical overlap: with ``C(x)`` the set
of content words of ``x`` (lower-cased runs of letters and digits, at least 3 characters, not a
stop word, not a speaker's name), ``overlap = |C(turn) & C(summary)| / |C(turn)|``; the level is
0.75 when ``overlap >= 0.5``, 0.5 when ``>= 0.25``, 0.25 when ``>= 0.1`` (and at least two
shared words), else 0. A summary never covers a turn fully: it paraphrases.

Budgets
-------
In the cost model's units (words by default): by default the fractions
:data:`DEFAULT_BUDGET_FRACS` of the total cost of the raw turns, floored; or absolute budgets.

Defects in the file
-------------------
A few evidence ids are malformed. Each evidence string is read for ``D<session>:<turn>`` ids
(so ``"D8:6; D9:17"`` gives two, ``"D:11:26"`` gives ``D11:26``); when that changes what was
written the change is listed in ``meta["repaired"]``. An id that names no turn, a question left
without evidence, an observation citing no turn, and a summary of a session without turns are
listed in ``meta["skipped"]`` and left out; none of them stops the build.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .costs import budgets_from_fractions, check_budgets, get_cost_model
from .locomo_reader import (
    CATEGORY_NAMES,
    DIA_ID,
    SESSION_KEY,
    Turn,
    conversation_header,
    dia_ids,
    read_locomo,
    read_turns,
    speakers_of,
    turn_text,
)

__all__ = [
    "CATEGORY_NAMES", "DEFAULT_BUDGET_FRACS", "FORMAT", "content_words", "locomo_package",
    "locomo_packages", "read_locomo", "summary_coverage_level",
]

FORMAT = "memaudit.package/1"

#: Budgets as fractions of the total raw-turn cost of a conversation.
DEFAULT_BUDGET_FRACS: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1)

_SUMMARY = re.compile(r"^session_(\d+)_summary$")
_EVENTS = re.compile(r"^events_session_(\d+)$")
_OBSERVATION = re.compile(r"^session_(\d+)_observation$")
_WORD = re.compile(r"[a-z0-9]+")

# Function words and chat fillers that say nothing about content.
_STOPWORDS = frozenset(
    """
    the and for are but not you your yours with this that these those they them their theirs
    was were will would could should have has had having been being from into onto over under
    about after again also any because before both can did does doing done each few more most
    other our ours out own same she her hers him his how its itself just now only then than
    there here what when where which while who whom why yes yet all too very some such much
    many really just like get got gets going gonna yeah okay wow hey thanks thank great awesome
    cool glad good love know think feel see mean make made thing things stuff lot lots always
    never something anything everything time times day days today yesterday tomorrow sure
    definitely totally maybe pretty still right tell told say said one two let lets shares
    image
    """.split()
)


# The names these helpers had here before the one reader (locomo_reader) took them over.
_Turn = Turn
_read_turns = read_turns
_turn_text = turn_text
_SESSION = SESSION_KEY
_DIA_ID = DIA_ID


@dataclass
class _Report:
    skipped: list[dict[str, Any]] = field(default_factory=list)
    repaired: list[dict[str, Any]] = field(default_factory=list)

    def skip(self, item: str, what: str, reason: str, value: Any = None) -> None:
        entry: dict[str, Any] = {"item": item, "what": what, "reason": reason}
        if value is not None:
            entry["value"] = value
        self.skipped.append(entry)


def content_words(text: str, names: Iterable[str] = ()) -> set[str]:
    """Content words of ``text``: see the module docstring's coverage rule."""
    drop = _STOPWORDS | {n.lower() for n in names}
    words = _WORD.findall(text.lower().replace("’", "'").replace("'s", ""))
    return {w for w in words if len(w) >= 3 and w not in drop}


def summary_coverage_level(turn_words: set[str], summary_words: set[str]) -> float:
    """Coverage of a turn by a summary from their content-word sets (0, 0.25, 0.5 or 0.75)."""
    if not turn_words:
        return 0.0
    shared = len(turn_words & summary_words)
    overlap = shared / len(turn_words)
    if overlap >= 0.5:
        return 0.75
    if overlap >= 0.25:
        return 0.5
    if overlap >= 0.1 and shared >= 2:
        return 0.25
    return 0.0


def _resolve_ids(raw: Any, known: dict[str, Turn]) -> tuple[list[str], list[str]]:
    """Turn ids read from one reference (a string or a list of strings): (known, unknown)."""
    items = raw if isinstance(raw, list) else [raw]
    found: list[str] = []
    unknown: list[str] = []
    for item in items:
        ids = dia_ids(item) if isinstance(item, str) else []
        if not ids:
            unknown.append(str(item))
        for dia in ids:
            if dia not in known:
                unknown.append(dia)
            elif dia not in found:
                found.append(dia)
    return found, unknown


def _category_filter(categories: Iterable[int | str] | None) -> set[int] | None:
    if categories is None:
        return None
    by_name = {name: number for number, name in CATEGORY_NAMES.items()}
    wanted: set[int] = set()
    for c in categories:
        if isinstance(c, str) and c.strip().isdigit():
            c = int(c)
        if isinstance(c, int) and not isinstance(c, bool):
            wanted.add(c)
        elif isinstance(c, str) and c in by_name:
            wanted.add(by_name[c])
        else:
            raise UsageError(
                f"unknown LoCoMo category {c!r}; expected a number or one of "
                f"{', '.join(CATEGORY_NAMES.values())}"
            )
    return wanted


def locomo_package(
    record: dict[str, Any],
    *,
    cost_model: str = "words",
    budgets: Sequence[float] | None = None,
    budget_fracs: Sequence[float] | None = None,
    categories: Iterable[int | str] | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """Build the natural package of one LoCoMo conversation record.

    Parameters
    ----------
    record : dict
        One element of a LoCoMo file (``sample_id``, ``conversation``, ``qa``, ...).
    cost_model : str
        ``words`` (default), ``bytes`` or ``tokens``.
    budgets, budget_fracs : sequence of float, optional
        Absolute budgets, or fractions of the total raw-turn cost (default
        :data:`DEFAULT_BUDGET_FRACS`); not both.
    categories : iterable of int or str, optional
        Keep only questions of these categories (numbers or names); default all.
    source : str, optional
        Where the record came from, for messages and ``meta``.

    Raises
    ------
    PackageError
        When the record's structure is unusable (no ``sample_id``, turns without ``dia_id``,
        repeated ``dia_id``). Defects in evidence, observations and summaries are reported in
        ``meta`` instead.
    UsageError
        For a bad cost model, budget option or category.
    """
    if budgets is not None and budget_fracs is not None:
        raise UsageError("give budgets or budget_fracs, not both")
    cost_fn = get_cost_model(cost_model)
    wanted = _category_filter(categories)
    sample_id, conv = conversation_header(record, source)
    turns = read_turns(conv, sample_id, source)
    by_id = {t.dia_id: t for t in turns}
    speakers = speakers_of(conv, turns)
    report = _Report()

    queries, demand = _queries(record.get("qa"), by_id, wanted, report)
    units = [
        {"unit_id": f"ev:{t.dia_id}", "kind": "evidence", "text": t.text,
         "weight": float(sum(demand[t.dia_id].values())),
         "categories": dict(sorted(demand[t.dia_id].items()))}
        for t in turns if t.dia_id in demand
    ]
    evidence = {t.dia_id for t in turns if t.dia_id in demand}

    candidates: list[dict[str, Any]] = [
        {"candidate_id": f"{t.dia_id}:raw", "experience_id": t.dia_id, "group": t.dia_id,
         "representation": "raw_span", "text": t.text,
         "coverage": {f"ev:{t.dia_id}": 1.0} if t.dia_id in evidence else {}}
        for t in turns
    ]
    candidates += _observation_candidates(record.get("observation"), by_id, evidence, report)
    candidates += _summary_candidates(record, turns, evidence, speakers, report)
    for cand in candidates:
        cand["cost"] = cost_fn(cand["text"])
    raw_total = sum(c["cost"] for c in candidates if c["representation"] == "raw_span")

    if budgets is not None:
        package_budgets = check_budgets(list(budgets))
        budget_rule = "absolute budgets as given"
    else:
        fracs = list(DEFAULT_BUDGET_FRACS if budget_fracs is None else budget_fracs)
        if not fracs:
            raise UsageError("budget_fracs: give at least one fraction")
        package_budgets = list(budgets_from_fractions(fracs, raw_total))
        budget_rule = f"floor(f * total raw-turn cost {raw_total}) for f in {fracs}"

    return {
        "format": FORMAT,
        "package_id": f"locomo/{sample_id}",
        "objective": {"saturation": "cap1"},
        "budgets": package_budgets,
        "cost_model": cost_model,
        "experiences": [
            {"experience_id": t.dia_id, "session_id": f"session_{t.session}",
             "timestamp": t.index, "text": t.text, "speaker": t.speaker,
             "session_date": t.session_date}
            for t in turns
        ],
        "units": units,
        "candidates": candidates,
        "queries": queries,
        "meta": {
            "suite": "locomo",
            "sample_id": sample_id,
            "source": source,
            "speakers": speakers,
            "categories": sorted(wanted) if wanted is not None else "all",
            "weights_rule": "explicit: number of kept questions naming the turn as evidence",
            "budget_rule": budget_rule,
            "group_rule": "one group per turn (raw span and its observations); "
                          "each session or event summary its own group",
            "coverage_rule": "raw 1.0 and observation 1.0 for their turns; summaries by "
                             "content-word overlap with the session's evidence turns, "
                             "levels 0.75/0.5/0.25",
            "skipped": report.skipped,
            "repaired": report.repaired,
        },
    }


def _queries(
    qa: Any, by_id: dict[str, Turn], wanted: set[int] | None, report: _Report
) -> tuple[list[dict[str, Any]], dict[str, Counter[str]]]:
    """The kept questions, and per evidence turn how many questions of each category need it."""
    queries: list[dict[str, Any]] = []
    demand: dict[str, Counter[str]] = {}
    for i, item in enumerate(qa if isinstance(qa, list) else []):
        where = f"qa[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            report.skip(where, "question", "not a QA item with a 'question' string")
            continue
        category = item.get("category")
        if wanted is not None and not (isinstance(category, int) and category in wanted):
            continue
        raw_evidence = item.get("evidence")
        if not isinstance(raw_evidence, list):
            raw_evidence = [] if raw_evidence is None else [raw_evidence]
        required: list[str] = []
        for raw in raw_evidence:
            found, unknown = _resolve_ids(raw, by_id)
            if found != [raw]:
                if found:
                    report.repaired.append({"item": where, "what": "evidence", "value": raw,
                                            "read_as": found})
                for bad in unknown:
                    report.skip(where, "evidence", "names no turn of this conversation", bad)
            required.extend(d for d in found if d not in required)
        if not required:
            reason = "no evidence given" if not raw_evidence else "no evidence id names a turn"
            report.skip(where, "question", reason, item["question"])
            continue
        name = CATEGORY_NAMES.get(category, f"category-{category}") \
            if isinstance(category, int) else "unknown"
        answer = item.get("answer", item.get("adversarial_answer", ""))
        queries.append({
            "query_id": f"q{i}", "text": item["question"], "category": name,
            "locomo_category": category, "required_unit_ids": [f"ev:{d}" for d in required],
            "answer": answer if isinstance(answer, str) else json.dumps(answer),
        })
        for d in required:
            demand.setdefault(d, Counter())[name] += 1
    return queries, demand


def _observation_candidates(
    observations: Any, by_id: dict[str, Turn], evidence: set[str], report: _Report
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    per_turn: Counter[str] = Counter()
    if not isinstance(observations, dict):
        return out
    keys = sorted((int(m.group(1)), key) for key in observations
                  if (m := _OBSERVATION.match(key)))
    for _, key in keys:
        by_speaker = observations[key]
        if not isinstance(by_speaker, dict):
            report.skip(key, "observation", "expected an object {speaker: [[fact, dia_id], ...]}")
            continue
        for speaker, facts in by_speaker.items():
            for j, entry in enumerate(facts if isinstance(facts, list) else []):
                where = f"{key}/{speaker}[{j}]"
                if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
                    report.skip(where, "observation", "expected a pair [fact, dia_id]")
                    continue
                found, unknown = _resolve_ids(entry[1], by_id)
                for bad in unknown:
                    report.skip(where, "observation reference", "names no turn", bad)
                if not found:
                    report.skip(where, "observation", "cites no turn of this conversation")
                    continue
                # Written once every cited turn was seen: at the latest of them.
                turn = max((by_id[d] for d in found), key=lambda t: t.index)
                k = per_turn[turn.dia_id]
                per_turn[turn.dia_id] += 1
                out.append({
                    "candidate_id": f"{turn.dia_id}:obs{k}", "experience_id": turn.dia_id,
                    "group": turn.dia_id, "representation": "fact", "text": entry[0].strip(),
                    "coverage": {f"ev:{d}": 1.0 for d in found if d in evidence},
                    "cites": found,
                })
    return out


def _summary_candidates(
    record: dict[str, Any], turns: list[Turn], evidence: set[str], speakers: list[str],
    report: _Report,
) -> list[dict[str, Any]]:
    by_session: dict[int, list[Turn]] = {}
    for t in turns:
        by_session.setdefault(t.session, []).append(t)
    turn_words = {t.dia_id: content_words(t.text, speakers) for t in turns if t.dia_id in evidence}

    def candidate(cid: str, session: int, text: str, origin: str) -> dict[str, Any]:
        words = content_words(text, speakers)
        coverage = {}
        for t in by_session[session]:
            if t.dia_id in evidence:
                level = summary_coverage_level(turn_words[t.dia_id], words)
                if level > 0:
                    coverage[f"ev:{t.dia_id}"] = level
        last = by_session[session][-1]
        return {"candidate_id": cid, "experience_id": last.dia_id, "group": cid,
                "representation": "summary", "text": text, "coverage": coverage,
                "source": origin}

    out: list[dict[str, Any]] = []
    summaries = record.get("session_summary")
    for number, key, text in _numbered(summaries, _SUMMARY):
        if number not in by_session:
            report.skip(key, "session_summary", "its session has no turns")
        elif not isinstance(text, str) or not text.strip():
            report.skip(key, "session_summary", "expected a non-empty string")
        else:
            out.append(candidate(f"session_{number}:summary", number, text.strip(),
                                 "session_summary"))
    events = record.get("event_summary")
    for number, key, payload in _numbered(events, _EVENTS):
        if number not in by_session:
            report.skip(key, "event_summary", "its session has no turns")
            continue
        if not isinstance(payload, dict):
            report.skip(key, "event_summary", "expected an object {speaker: [event, ...]}")
            continue
        k = 0
        for speaker, items in payload.items():
            if speaker == "date" or not isinstance(items, list):
                continue
            for event in items:
                if isinstance(event, str) and event.strip():
                    out.append(candidate(f"session_{number}:event{k}", number, event.strip(),
                                         "event_summary"))
                    k += 1
    return out


def _numbered(mapping: Any, pattern: re.Pattern[str]) -> list[tuple[int, str, Any]]:
    """``(session number, key, value)`` for the keys matching ``pattern``, by session number."""
    if not isinstance(mapping, dict):
        return []
    found = [(int(m.group(1)), key, value) for key, value in mapping.items()
             if (m := pattern.match(key))]
    return sorted(found, key=lambda entry: entry[0])


def locomo_packages(
    path: str | Path,
    *,
    cost_model: str = "words",
    budgets: Sequence[float] | None = None,
    budget_fracs: Sequence[float] | None = None,
    categories: Iterable[int | str] | None = None,
) -> Iterator[dict[str, Any]]:
    """One natural package per conversation of a LoCoMo-format file, in file order."""
    records = read_locomo(path)
    for i, record in enumerate(records):
        yield locomo_package(record, cost_model=cost_model, budgets=budgets,
                             budget_fracs=budget_fracs, categories=categories,
                             source=f"{path}[{i}]")
