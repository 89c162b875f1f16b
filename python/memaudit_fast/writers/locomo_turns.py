"""Read LoCoMo conversations as a stream of turns, with their QA items.

LoCoMo (Maharana et al., ACL 2024) stores a list of conversations. Each has ``sample_id``,
``conversation`` (``speaker_a``, ``speaker_b``, ``session_N_date_time`` and ``session_N``, a list
of ``{speaker, dia_id, text}`` turns, some with ``blip_caption`` for a shared image) and ``qa``
(``question``, ``answer`` or ``adversarial_answer``, ``evidence`` dia ids, ``category``).

This loader is deliberately small: it gives the memory writers their input stream. A handful of
evidence ids in the public file are malformed (``"D8:6; D9:17"``, ``"D:11:26"``): every
``D<session>:<turn>`` inside an evidence string is recovered, ids that name no turn are dropped
and counted in :attr:`QAItem.unresolved_evidence`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import PackageError, UsageError

#: The usual reading of LoCoMo's integer QA categories.
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
_LOCOMO_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.IGNORECASE
)


@dataclass(frozen=True)
class Turn:
    """One utterance of a conversation, in stream order.

    Attributes
    ----------
    dia_id:
        LoCoMo's turn id ``D<session>:<i>`` (any unique string for other sources).
    speaker:
        Who said it.
    session:
        Session number (1-based in LoCoMo); a change of session is a hard topic boundary.
    session_date:
        The session's date as written in the source (``"1:56 pm on 8 May, 2023"``).
    text:
        The utterance. When the turn shared an image, its caption is appended as
        ``[shares an image: ...]`` so that what was shown can be remembered too.
    time:
        ISO 8601 form of ``session_date`` when it parses (``"2023-05-08T13:56"``), else ``None``.
    index:
        Position in the whole conversation (0-based).
    """

    dia_id: str
    speaker: str
    session: int
    session_date: str
    text: str
    time: str | None = None
    index: int = 0

    @property
    def day(self) -> str | None:
        """The ISO date (``YYYY-MM-DD``) of the turn's session, when known."""
        return self.time[:10] if self.time else None

    def render(self) -> str:
        """The turn as it appears in a context window: ``[date] Speaker: text``."""
        stamp = f"[{self.day}] " if self.day else ""
        return f"{stamp}{self.speaker}: {self.text}"


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


def parse_locomo_date(text: str) -> str | None:
    """ISO 8601 (minutes) of a LoCoMo date such as ``"1:56 pm on 8 May, 2023"``, or ``None``."""
    m = _LOCOMO_DATE.match(text or "")
    if not m:
        return None
    hour, minute, half, day, month, year = m.groups()
    try:
        month_no = datetime.strptime(month[:3].title(), "%b").month
        h = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
        return datetime(int(year), month_no, int(day), h, int(minute)).isoformat(timespec="minutes")
    except ValueError:
        return None


def parse_evidence(raw: Sequence[Any], known: set[str]) -> tuple[tuple[str, ...], int]:
    """Resolve evidence strings to known dia ids; return ``(ids, number not resolved)``.

    Each string may hold several ids (``"D8:6; D9:17"``) or a stray colon (``"D:11:26"``).
    Duplicates are dropped, the first occurrence keeps its place.
    """
    out: list[str] = []
    unresolved = 0
    for item in raw:
        found = [f"D{s}:{i}" for s, i in _EVIDENCE_ID.findall(str(item))]
        if not found:
            unresolved += 1
        for dia in found:
            if dia not in known:
                unresolved += 1
            elif dia not in out:
                out.append(dia)
    return tuple(out), unresolved


def _turn_text(raw: dict[str, Any]) -> str:
    text = str(raw.get("text", "")).strip()
    caption = raw.get("blip_caption")
    if caption:
        text = f"{text} [shares an image: {str(caption).strip()}]".strip()
    return text


def conversation_from_dict(obj: dict[str, Any], *, source: str | None = None) -> Conversation:
    """Build a :class:`Conversation` from one LoCoMo record; raise ``PackageError`` if malformed."""
    sample_id = obj.get("sample_id")
    conv = obj.get("conversation")
    if not isinstance(sample_id, str) or not sample_id:
        raise PackageError("expected a non-empty string", field="sample_id", source=source)
    if not isinstance(conv, dict):
        raise PackageError(
            "expected an object of sessions", package_id=sample_id, field="conversation",
            source=source,
        )
    sessions = sorted(
        (int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key))
    )
    turns: list[Turn] = []
    for number, key in sessions:
        raw_turns = conv[key]
        if not isinstance(raw_turns, list):
            raise PackageError(
                "expected a list of turns", package_id=sample_id, field=key, source=source
            )
        date = str(conv.get(f"{key}_date_time", ""))
        iso = parse_locomo_date(date)
        for i, raw in enumerate(raw_turns):
            if not isinstance(raw, dict) or not raw.get("dia_id") or "speaker" not in raw:
                raise PackageError(
                    "expected a turn with 'dia_id', 'speaker' and 'text'",
                    package_id=sample_id, record=f"{key}[{i}]", source=source,
                )
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]), speaker=str(raw["speaker"]), session=number,
                    session_date=date, text=_turn_text(raw), time=iso, index=len(turns),
                )
            )
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
    speakers = tuple(
        s for s in (conv.get("speaker_a"), conv.get("speaker_b")) if isinstance(s, str)
    ) or tuple(dict.fromkeys(t.speaker for t in turns))
    return Conversation(sample_id=sample_id, speakers=speakers, turns=turns, qa=qa)


def iter_locomo(path: str | Path) -> Iterator[Conversation]:
    """Yield the conversations of a LoCoMo JSON file (a list of conversation records)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"LoCoMo file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise PackageError(f"not valid JSON ({exc})", source=str(path)) from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise PackageError("expected a list of conversations", source=str(path))
    for i, obj in enumerate(data):
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
    if not sample_ids:
        return convs
    by_id = {c.sample_id: c for c in convs}
    absent = [s for s in sample_ids if s not in by_id]
    if absent:
        raise UsageError(
            f"sample id(s) {', '.join(absent)} not in {path}; it has: {', '.join(by_id)}"
        )
    return [by_id[s] for s in sample_ids]
