"""An OpenAI-compatible chat-completions client for the writers' LLM decisions.

Built on the ``openai`` SDK (``pip install 'memaudit_fast[llm]'``), so it works with any server
that speaks the chat-completions API through ``base_url`` (OpenAI, vLLM, llama.cpp server,
Ollama's OpenAI endpoint, ...). Every decision asks for one JSON object
(``response_format = {"type": "json_object"}``), which is parsed and validated; an answer that
is not valid JSON or does not have the expected shape is retried like a transient HTTP error.

Configuration, each from the constructor or else the environment:

* ``base_url``: ``MEMAUDIT_LLM_BASE_URL``, else ``OPENAI_BASE_URL``, else
  ``https://api.openai.com/v1``;
* ``model``: ``MEMAUDIT_LLM_MODEL`` (required one way or the other);
* ``api_key``: ``MEMAUDIT_LLM_API_KEY``, else ``OPENAI_API_KEY`` (optional for local servers);
* ``cache``: ``MEMAUDIT_LLM_CACHE``, a SQLite file of answers already accepted, keyed by the
  endpoint, model, temperature and prompt, so that a rerun asks the endpoint nothing new.

Retries: up to ``max_retries`` more attempts after a connection error, a time-out, HTTP 408,
409, 429 or 5xx, or an invalid answer; before attempt ``i`` (1-based) it waits
``min(backoff_max, backoff * 2**(i-1))`` seconds, or the server's ``Retry-After`` when that is
longer (still capped by ``backoff_max``). Other HTTP errors (400, 401, 404, ...) fail at once.
The SDK's own retries are off, so that this one schedule (and its test hook ``sleep``) holds.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import DependencyMissing, LLMError, UsageError
from .llm import (
    CONTINUATION_LABELS,
    RECORD_KINDS,
    ROUTE_BITS,
    BoxExtraction,
    EventDraft,
    RecordDraft,
    mask_kinds,
)
from .locomo_turns import Turn

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")
# Local servers take any key; the SDK insists on one.
_NO_KEY = "no-key"


class InvalidAnswer(ValueError):
    """The model's answer is not the JSON object the decision needs."""


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise InvalidAnswer(what)


def _strings(value: Any, what: str) -> list[str]:
    _need(isinstance(value, list) and all(isinstance(v, str) for v in value), what)
    return list(value)


def _indices(value: Any, n: int, what: str) -> list[int]:
    _need(
        isinstance(value, list)
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n for v in value),
        what,
    )
    return list(value)


class AnswerCache:
    """Accepted answers on disk (SQLite), keyed by a hash of everything that shaped them."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, content TEXT NOT NULL)")
            self._db.commit()
        except sqlite3.Error as exc:
            raise UsageError(f"cannot use {self.path} as the LLM answer cache: {exc}") from None
        self.hits = 0

    @staticmethod
    def key(*parts: Any) -> str:
        return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()

    def get(self, key: str) -> str | None:
        row = self._db.execute("SELECT content FROM answers WHERE key = ?", (key,)).fetchone()
        if row is not None:
            self.hits += 1
        return None if row is None else str(row[0])

    def put(self, key: str, content: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (key, content))
        self._db.commit()


class OpenAIChatLLM:
    """:class:`~memaudit_fast.writers.llm.MemoryLLM` over an OpenAI-compatible endpoint.

    Parameters
    ----------
    timeout:
        Seconds per HTTP request.
    max_retries:
        Extra attempts after a retryable failure.
    backoff, backoff_max:
        Base and cap of the exponential wait between attempts (seconds; 0 disables waiting).
    cache:
        A SQLite file of accepted answers (default ``$MEMAUDIT_LLM_CACHE``; none when unset).
    sleep:
        The waiting function (tests record the delays instead of sleeping).
    """

    name = "openai"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        backoff_max: float = 30.0,
        temperature: float = 0.0,
        json_mode: bool = True,
        cache: str | Path | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        env = os.environ
        self.base_url = (
            base_url or env.get("MEMAUDIT_LLM_BASE_URL") or env.get("OPENAI_BASE_URL")
            or "https://api.openai.com/v1"
        ).rstrip("/")
        self.model = model or env.get("MEMAUDIT_LLM_MODEL")
        if not self.model:
            raise UsageError("the OpenAI-compatible LLM needs a model: pass it or set MEMAUDIT_LLM_MODEL")
        self.api_key = api_key or env.get("MEMAUDIT_LLM_API_KEY") or env.get("OPENAI_API_KEY")
        if max_retries < 0 or backoff < 0 or backoff_max < 0 or timeout <= 0:
            raise UsageError("timeout must be positive; retries and backoff non-negative")
        try:
            import openai
        except ImportError:
            raise DependencyMissing(
                "the OpenAI-compatible LLM needs the Python package 'openai', which is not installed; "
                "install it with: pip install 'memaudit_fast[llm]'"
            ) from None
        self._openai = openai
        self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or _NO_KEY,
                                     timeout=timeout, max_retries=0)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.temperature = temperature
        self.json_mode = json_mode
        cache = cache if cache is not None else env.get("MEMAUDIT_LLM_CACHE") or None
        self.cache = AnswerCache(cache) if cache is not None else None
        self.sleep = sleep
        self.calls = 0

    # -- transport ------------------------------------------------------------------------
    def _create(self, messages: list[dict[str, str]]) -> str:
        """The answer text of one chat completion (raises the SDK's errors, or InvalidAnswer)."""
        options: dict[str, Any] = {}
        if self.json_mode:
            options["response_format"] = {"type": "json_object"}
        completion = self._client.chat.completions.create(
            model=str(self.model), messages=messages,  # type: ignore[arg-type]
            temperature=self.temperature, **options,
        )
        try:
            content = completion.choices[0].message.content
        except (AttributeError, IndexError, TypeError, KeyError):
            raise InvalidAnswer("the endpoint's reply has no choices[0].message.content") from None
        _need(isinstance(content, str), "message content is not a string")
        return str(content)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = self.backoff * 2 ** (attempt - 1)
        if retry_after and retry_after.strip().isdigit():
            delay = max(delay, float(retry_after))
        return min(self.backoff_max, delay)

    def chat_json(
        self, system: str, user: str, parse: Callable[[dict[str, Any]], Any]
    ) -> Any:
        """Ask for one JSON object and return ``parse(obj)``, retrying as documented above."""
        openai = self._openai
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        key = AnswerCache.key(self.base_url, self.model, self.temperature, self.json_mode, system, user)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                try:
                    return parse(json.loads(_FENCE.sub("", cached)))
                except (json.JSONDecodeError, InvalidAnswer):
                    pass  # the decision's shape changed since: ask again
        last = "no attempt made"
        retry_after_header: str | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self._delay(attempt, retry_after_header))
            retry_after_header = None
            self.calls += 1
            try:
                content = self._create(messages)
                obj = json.loads(_FENCE.sub("", content))
                _need(isinstance(obj, dict), "the answer is not a JSON object")
                value = parse(obj)
            except openai.APIStatusError as exc:
                detail = exc.response.text[:300] if exc.response is not None else str(exc)
                last = f"HTTP {exc.status_code} from {self.base_url}: {detail}"
                if exc.status_code not in RETRY_STATUS:
                    raise LLMError(last) from None
                retry_after_header = exc.response.headers.get("Retry-After") if exc.response is not None else None
                continue
            except openai.APIConnectionError as exc:  # includes time-outs
                last = f"cannot reach {self.base_url}: {exc}"
                continue
            except openai.APIResponseValidationError:
                last = "the endpoint answered with a body that is not a chat completion"
                continue
            except json.JSONDecodeError as exc:
                last = f"the model's answer is not JSON ({exc.msg})"
                continue
            except InvalidAnswer as exc:
                last = f"the model's answer has the wrong shape: {exc}"
                continue
            if self.cache is not None:
                self.cache.put(key, content)
            return value
        raise LLMError(f"LLM call failed after {self.max_retries + 1} attempts: {last}")

    # -- decisions ------------------------------------------------------------------------
    @staticmethod
    def _lines(turns: Sequence[Turn]) -> str:
        return "\n".join(f"{i}. [{t.day or '?'}] {t.speaker}: {t.text}" for i, t in enumerate(turns))

    def topic_continuation(self, box: Sequence[Turn], turn: Turn) -> str:
        system = (
            "You segment a conversation into topic-continuous episodes. Given the open episode "
            "and the next message, answer with JSON {\"label\": L} where L is \"continuous\" "
            "(same local topic, even if worded differently), \"partial_shift\" (related but the "
            "focus moves) or \"discontinuous\" (a new topic)."
        )
        user = f"Open episode:\n{self._lines(box)}\n\nNext message:\n{turn.speaker}: {turn.text}"

        def parse(obj: dict[str, Any]) -> str:
            label = obj.get("label")
            _need(label in CONTINUATION_LABELS, f"label must be one of {CONTINUATION_LABELS}")
            return str(label)

        result: str = self.chat_json(system, user, parse)
        return result

    def extract_box(self, box: Sequence[Turn]) -> BoxExtraction:
        system = (
            "Summarise one topic-continuous episode of a conversation for long-term memory. "
            "Answer with JSON {\"topic\": short phrase, \"keywords\": [up to 8 words], "
            "\"events\": [{\"text\": one self-contained sentence naming who did, decided or "
            "planned what, \"turns\": [numbers of the messages it comes from]}]}."
        )

        def parse(obj: dict[str, Any]) -> BoxExtraction:
            topic = obj.get("topic")
            _need(isinstance(topic, str), "topic must be a string")
            keywords = _strings(obj.get("keywords", []), "keywords must be a list of strings")
            raw_events = obj.get("events", [])
            _need(isinstance(raw_events, list), "events must be a list")
            events = []
            for ev in raw_events:
                _need(isinstance(ev, dict) and isinstance(ev.get("text"), str), "bad event")
                idx = _indices(ev.get("turns", []), len(box), "event turns must be message numbers")
                sources = tuple(box[i].dia_id for i in idx) or tuple(t.dia_id for t in box)
                events.append(EventDraft(ev["text"].strip(), sources))
            return BoxExtraction(str(topic).strip(), tuple(keywords[:8]), tuple(events))

        result: BoxExtraction = self.chat_json(system, self._lines(box), parse)
        return result

    def verify_traces(
        self, events: Sequence[str], traces: Mapping[int, Sequence[str]]
    ) -> dict[int, tuple[int, ...]]:
        if not events or not traces:
            return {}
        system = (
            "You link new events to ongoing storylines (traces) of a conversation. An event joins "
            "a trace when it continues the same activity, goal, plan or development; it may join "
            "several traces or none. Answer with JSON {\"assignments\": [{\"event\": event "
            "number, \"traces\": [trace ids]}]}."
        )
        listing = "\n".join(
            f"Trace {t}:\n" + "\n".join(f"  - {e}" for e in members)
            for t, members in sorted(traces.items())
        )
        new = "\n".join(f"{i}. {e}" for i, e in enumerate(events))
        user = f"Traces:\n{listing}\n\nNew events:\n{new}"

        def parse(obj: dict[str, Any]) -> dict[int, tuple[int, ...]]:
            raw = obj.get("assignments")
            if not isinstance(raw, list):
                raise InvalidAnswer("assignments must be a list")
            out: dict[int, tuple[int, ...]] = {}
            for a in raw:
                _need(isinstance(a, dict), "each assignment must be an object")
                (i,) = _indices([a.get("event")], len(events), "event must be an event number")
                ids = a.get("traces", [])
                _need(
                    isinstance(ids, list) and all(t in traces for t in ids),
                    "traces must be listed trace ids",
                )
                out[i] = tuple(dict.fromkeys(out.get(i, ()) + tuple(ids)))
            return out

        result: dict[int, tuple[int, ...]] = self.chat_json(system, user, parse)
        return result

    def group_events(self, events: Sequence[str]) -> list[list[int]]:
        if not events:
            return []
        system = (
            "Group events that belong to the same storyline (activity, goal, plan). Answer with "
            "JSON {\"groups\": [[event numbers], ...]}; every event in at least one group."
        )
        user = "\n".join(f"{i}. {e}" for i, e in enumerate(events))

        def parse(obj: dict[str, Any]) -> list[list[int]]:
            raw = obj.get("groups")
            if not isinstance(raw, list) or not raw:
                raise InvalidAnswer("groups must be a non-empty list")
            groups = [_indices(g, len(events), "groups hold event numbers") for g in raw]
            return [g for g in groups if g]

        result: list[list[int]] = self.chat_json(system, user, parse)
        return result

    def route(self, turn: Turn) -> int:
        system = (
            "Decide which long-term memory stores a message should update. episodic: a "
            "time-bound event or experience; semantic: a stable fact or preference; procedural: "
            "an instruction, method or routine. Answer with JSON {\"episodic\": bool, "
            "\"semantic\": bool, \"procedural\": bool}; all false for small talk."
        )
        user = f"[{turn.day or '?'}] {turn.speaker}: {turn.text}"

        def parse(obj: dict[str, Any]) -> int:
            mask = 0
            for kind in RECORD_KINDS:
                value = obj.get(kind, False)
                _need(isinstance(value, bool), f"{kind} must be true or false")
                mask |= ROUTE_BITS[kind] if value else 0
            return mask

        result: int = self.chat_json(system, user, parse)
        return result

    def extract_records(self, turn: Turn, mask: int) -> list[RecordDraft]:
        kinds = mask_kinds(mask)
        if not kinds:
            return []
        shapes = {
            "episodic": '"episodic": [{"title": str, "summary": str, "time_anchor": str|null}]',
            "semantic": '"semantic": [{"fact": str, "time_anchor": str|null}]',
            "procedural": '"procedural": [{"title": str, "content": str, "time_anchor": str|null}]',
        }
        system = (
            "Turn a conversation message into normalised memory records. Name the speaker "
            "instead of using pronouns; resolve relative dates (yesterday, last week) against "
            "the message date into an ISO time_anchor. Answer with JSON {"
            + ", ".join(shapes[k] for k in kinds) + "}."
        )
        user = f"[{turn.day or '?'}] {turn.speaker}: {turn.text}"
        body_key = {"episodic": "summary", "semantic": "fact", "procedural": "content"}

        def parse(obj: dict[str, Any]) -> list[RecordDraft]:
            out: list[RecordDraft] = []
            for kind in kinds:
                items = obj.get(kind, [])
                _need(isinstance(items, list), f"{kind} must be a list")
                for item in items:
                    _need(isinstance(item, dict), f"{kind} records must be objects")
                    body = item.get(body_key[kind])
                    title = item.get("title", "") if kind != "semantic" else ""
                    anchor = item.get("time_anchor")
                    _need(isinstance(body, str) and body.strip() != "", f"{kind} needs {body_key[kind]}")
                    _need(isinstance(title, str), f"{kind} title must be a string")
                    _need(anchor is None or isinstance(anchor, str), "time_anchor must be a string")
                    out.append(RecordDraft(kind, title.strip(), body.strip(), anchor or turn.day))
            return out

        result: list[RecordDraft] = self.chat_json(system, user, parse)
        return result
