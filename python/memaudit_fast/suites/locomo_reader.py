"""One reader of LoCoMo files, shared by the natural packages (:mod:`.locomo`) and the memory
writers' turn stream (:mod:`memaudit_fast.writers.locomo_turns`).

LoCoMo (Maharana et al., ACL 2024) stores a list of conversations. Each has ``sample_id``,
``conversation`` (``speaker_a``, ``speaker_b``, ``session_N_date_time`` and ``session_N``, a list
of ``{speaker, dia_id, text}`` turns, some with ``blip_caption`` for a shared image) and ``qa``
(``question``, ``answer`` or ``adversarial_answer``, ``evidence`` dia ids, ``category``).

This module reads what both users need the same way: the file, the conversation header, the
turns (sessions by number, turns as listed, an image caption appended to its turn), the
speakers, LoCoMo dates, the category names, and the ``D<session>:<turn>`` ids inside an
evidence or observation reference. A handful of evidence ids in the public file are malformed
(``"D8:6; D9:17"``, ``"D:11:26"``): :func:`dia_ids` recovers every id inside such a string;
what a caller does with ids that name no turn is its own rule.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
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

SESSION_KEY = re.compile(r"^session_(\d+)$")
# A stray colon after the D is a known defect of the public file ("D:11:26").
DIA_ID = re.compile(r"D:?(\d+):(\d+)")
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


def read_locomo(path: str | Path) -> list[Any]:
    """The conversation records of a LoCoMo-format JSON file (a list, or one record)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"LoCoMo file not found: {p}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PackageError(f"not valid JSON ({exc})", source=str(p)) from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise PackageError("expected a list of conversations", source=str(p))
    return data


def conversation_header(record: Any, source: str | None) -> tuple[str, dict[str, Any]]:
    """``(sample_id, conversation object)`` of a record; ``PackageError`` when either is unusable."""
    if not isinstance(record, dict):
        raise PackageError("expected a conversation object", source=source)
    sample_id = record.get("sample_id")
    if not isinstance(sample_id, str) or not sample_id:
        raise PackageError("expected a non-empty string", field="sample_id", source=source)
    conv = record.get("conversation")
    if not isinstance(conv, dict):
        raise PackageError("expected an object of sessions", package_id=sample_id,
                           field="conversation", source=source)
    return sample_id, conv


def turn_text(raw: dict[str, Any]) -> str:
    """A turn's text, with the caption of an image it shared appended. The caller has checked
    that both are strings where given (:func:`read_turns`)."""
    text = str(raw.get("text", "")).strip()
    caption = raw.get("blip_caption")
    if caption:
        text = f"{text} [shares an image: {str(caption).strip()}]".strip()
    return text


def _turn_problem(raw: dict[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) of a turn whose speaker, text or caption is not a string: a
    number or a list would be written into memories as its Python spelling."""
    if not isinstance(raw["speaker"], str) or not raw["speaker"].strip():
        return "speaker", "expected a non-empty string"
    for name in ("text", "blip_caption"):
        if raw.get(name) is not None and not isinstance(raw[name], str):
            return name, f"expected a string, got {type(raw[name]).__name__} {json.dumps(raw[name])[:40]}"
    return None


def read_turns(conv: dict[str, Any], sample_id: str, source: str | None) -> list[Turn]:
    """Every turn of a conversation object, sessions by number and turns as listed.

    Raises ``PackageError`` naming the session and turn when a session is not a list, a turn
    lacks a ``dia_id`` string or a ``speaker``, or a ``dia_id`` appears twice.
    """
    sessions = sorted((int(m.group(1)), key) for key in conv if (m := SESSION_KEY.match(key)))
    turns: list[Turn] = []
    seen: set[str] = set()
    for number, key in sessions:
        raw_turns = conv[key]
        if not isinstance(raw_turns, list):
            raise PackageError("expected a list of turns", package_id=sample_id, field=key,
                               source=source)
        date = str(conv.get(f"{key}_date_time", ""))
        iso = parse_locomo_date(date)
        for i, raw in enumerate(raw_turns):
            if not (isinstance(raw, dict) and isinstance(raw.get("dia_id"), str)
                    and raw["dia_id"] and "speaker" in raw):
                raise PackageError("expected a turn with a 'dia_id' string, 'speaker' and 'text'",
                                   package_id=sample_id, record=f"{key}[{i}]", source=source)
            problem = _turn_problem(raw)
            if problem is not None:
                raise PackageError(problem[1], package_id=sample_id, record=f"{key}[{i}] ({raw['dia_id']})",
                                   field=problem[0], source=source)
            if raw["dia_id"] in seen:
                raise PackageError(f"dia_id {raw['dia_id']!r} appears twice",
                                   package_id=sample_id, record=f"{key}[{i}]", source=source)
            seen.add(raw["dia_id"])
            turns.append(Turn(raw["dia_id"], str(raw["speaker"]), number, date, turn_text(raw),
                              iso, len(turns)))
    return turns


def speakers_of(conv: dict[str, Any], turns: list[Turn]) -> list[str]:
    """``speaker_a`` and ``speaker_b``, or else every speaker in order of first turn."""
    named = [s for s in (conv.get("speaker_a"), conv.get("speaker_b")) if isinstance(s, str)]
    return named or list(dict.fromkeys(t.speaker for t in turns))


def dia_ids(text: str) -> list[str]:
    """Every ``D<session>:<turn>`` id written in a reference string, normalised, in order.

    ``"D8:6; D9:17"`` gives two ids, ``"D:11:26"`` gives ``D11:26``; a string without an id
    gives none.
    """
    return [f"D{s}:{t}" for s, t in DIA_ID.findall(text)]


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
