"""Read LoCoMo conversations as a stream of turns, with their QA items.

LoCoMo (Maharana et al., ACL 2024) stores a list of conversations. Each has ``sample_id``,
``conversation`` (``speaker_a``, ``speaker_b``, ``session_N_date_time`` and ``session_N``, a list
of ``{speaker, dia_id, text}`` turns, some with ``blip_caption`` for a shared image) and ``qa``
(``question``, ``answer`` or ``adversarial_answer``, ``evidence`` dia ids, ``category``).

This loader is deliberately small: it gives the memory writers their input stream. The file,
the turns, the dates and the category names are read by :mod:`memaudit_fast.suites.locomo_reader`,
the one LoCoMo reader the natural packages use too. A handful of evidence ids in the public file
are malformed (``"D8:6; D9:17"``, ``"D:11:26"``): every
``D<session>:<turn>`` inside an evidence string is recovered, ids that name no turn are dropped
and counted in :attr:`QAItem.unresolved_evidence`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PackageError, UsageError
from ..model.jsonio import describe, find_defects
from ..suites.locomo_reader import (
    CATEGORY_NAMES,
    SESSION_KEY,
    Turn,
    conversation_header,
    dia_ids,
    parse_locomo_date,
    read_locomo,
    read_turns,
    speakers_of,
)

__all__ = [
    "CATEGORY_NAMES", "Conversation", "QAItem", "Turn", "conversation_from_dict", "iter_locomo",
    "load_locomo", "parse_evidence", "parse_locomo_date",
]


@dataclass(frozen=True)
class QAItem:
    """One LoCoMo question with its evidence turns (resolved against the conversation)."""

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    unresolved_evidence: int = 0

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES.get(self.category, f"category-{self.category}")


@dataclass
class Conversation:
    """A conversation: its turns in order, its speakers and its QA items."""

    sample_id: str
    speakers: tuple[str, ...]
    turns: list[Turn]
    qa: list[QAItem] = field(default_factory=list)

    def turn_ids(self) -> set[str]:
        return {t.dia_id for t in self.turns}

    def sessions(self) -> list[int]:
        return sorted({t.session for t in self.turns})


def parse_evidence(raw: Sequence[Any], known: set[str]) -> tuple[tuple[str, ...], int]:
    """Resolve evidence strings to known dia ids; return ``(ids, number not resolved)``.

    Each string may hold several ids (``"D8:6; D9:17"``) or a stray colon (``"D:11:26"``).
    Duplicates are dropped, the first occurrence keeps its place.
    """
    out: list[str] = []
    unresolved = 0
    for item in raw:
        found = dia_ids(str(item))
        if not found:
            unresolved += 1
        for dia in found:
            if dia not in known:
                unresolved += 1
            elif dia not in out:
                out.append(dia)
    return tuple(out), unresolved


def _check_fields(obj: dict[str, Any], conv: dict[str, Any], sample_id: str, source: str | None) -> None:
    """The fields the writers read, beyond what :func:`read_turns` checks: no lone surrogate in
    any string, speakers as strings, every session dated by a readable LoCoMo date, every turn
    with a ``text`` string, every QA's ``evidence`` a list of strings. A wrong one would be
    written into memories as its Python spelling, or dropped (a date read as no time)."""
    def fail(message: str, record: str | None, fld: str | None) -> None:
        raise PackageError(message, package_id=sample_id, record=record, field=fld, source=source)

    defects = find_defects(obj, limit=1)
    if defects:
        path, problem = defects[0]
        record, rest = None, path
        if len(path) >= 3 and path[0] == "conversation" and isinstance(path[2], int):
            record, rest = f"{path[1]}[{path[2]}]", path[3:]
        elif len(path) >= 2 and path[0] == "qa" and isinstance(path[1], int):
            record, rest = f"qa[{path[1]}]", path[2:]
        fail(problem, record, ".".join(str(p) for p in rest) or None)
    for key in ("speaker_a", "speaker_b"):
        if key in conv and not (isinstance(conv[key], str) and conv[key].strip()):
            fail(f"found {describe(conv[key])}, expected a speaker's name (a non-empty string)", None,
                 f"conversation.{key}")
    for key, session in conv.items():
        if not SESSION_KEY.match(key) or not isinstance(session, list):
            continue
        date_key = f"{key}_date_time"
        date = conv.get(date_key)
        if not isinstance(date, str) or parse_locomo_date(date) is None:
            fail(f"found {describe(date) if date_key in conv else 'nothing'}, expected the session's date "
                 "as LoCoMo writes it (e.g. '1:56 pm on 8 May, 2023')", None, f"conversation.{date_key}")
        for i, turn in enumerate(session):
            if isinstance(turn, dict) and "dia_id" in turn and turn.get("text") is None:
                # A wrong type is read_turns' to refuse, worded as the natural packages word it.
                fail(f"found {'null' if 'text' in turn else 'nothing'}, expected the turn's text (a string)",
                     f"{key}[{i}] ({turn['dia_id']})", "text")
    qa = obj.get("qa")
    if qa is not None and not isinstance(qa, list):
        fail(f"found {describe(qa)}, expected a list of QA items", None, "qa")
    for i, item in enumerate(qa or []):
        if not isinstance(item, dict):
            continue
        if not isinstance(item.get("question"), str):
            fail(f"found {describe(item.get('question'))}, expected a string", f"qa[{i}]", "question")
        evidence = item.get("evidence")
        if evidence is not None and not (isinstance(evidence, list) and all(isinstance(e, str) for e in evidence)):
            fail(f"found {describe(evidence)}, expected a list of dia_id strings", f"qa[{i}]", "evidence")


def conversation_from_dict(obj: dict[str, Any], *, source: str | None = None) -> Conversation:
    """Build a :class:`Conversation` from one LoCoMo record; raise ``PackageError`` if malformed."""
    sample_id, conv = conversation_header(obj, source)
    _check_fields(obj, conv, sample_id, source)
    turns = read_turns(conv, sample_id, source)
    if not turns:
        # A writer given no turn writes an empty store, which then scores as if nothing was lost.
        raise PackageError("the conversation has no turns (expected session_1, session_2, ... lists of turns)",
                           package_id=sample_id, field="conversation", source=source)
    known = {t.dia_id for t in turns}
    qa: list[QAItem] = []
    for i, item in enumerate(obj.get("qa") or []):
        if not isinstance(item, dict) or "question" not in item:
            raise PackageError(
                "expected a QA item with 'question'", package_id=sample_id, record=f"qa[{i}]",
                source=source,
            )
        evidence, unresolved = parse_evidence(item.get("evidence") or [], known)
        answer = item.get("answer", item.get("adversarial_answer", ""))
        qa.append(
            QAItem(
                question=str(item["question"]), answer=str(answer),
                category=int(item.get("category", 0)), evidence=evidence,
                unresolved_evidence=unresolved,
            )
        )
    return Conversation(sample_id=sample_id, speakers=tuple(speakers_of(conv, turns)), turns=turns, qa=qa)


def iter_locomo(path: str | Path) -> Iterator[Conversation]:
    """Yield the conversations of a LoCoMo JSON file (a list of conversation records)."""
    for i, obj in enumerate(read_locomo(path)):
        if not isinstance(obj, dict):
            raise PackageError("expected a conversation object", record=f"[{i}]", source=str(path))
        yield conversation_from_dict(obj, source=str(path))


def load_locomo(path: str | Path, sample_ids: Sequence[str] | None = None) -> list[Conversation]:
    """Load LoCoMo conversations, optionally only those whose ``sample_id`` is listed.

    Raises
    ------
    UsageError
        If a requested sample id is not in the file.
    """
    convs = list(iter_locomo(path))
    if not convs:
        raise PackageError("the file holds no conversation; expected a list of LoCoMo conversation records",
                           source=str(path))
    by_id: dict[str, Conversation] = {}
    for conv in convs:
        if conv.sample_id in by_id:
            # Two conversations under one id: stores and packages are named by it.
            raise PackageError("two conversations have this sample_id; give each its own",
                               package_id=conv.sample_id, field="sample_id", source=str(path))
        by_id[conv.sample_id] = conv
    if not sample_ids:
        return convs
    sample_ids = list(dict.fromkeys(sample_ids))  # an id asked for twice is written once
    absent = [s for s in sample_ids if s not in by_id]
    if absent:
        raise UsageError(
            f"sample id(s) {', '.join(absent)} not in {path}; it has: {', '.join(by_id)}"
        )
    return [by_id[s] for s in sample_ids]
