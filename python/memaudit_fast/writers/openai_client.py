"""An OpenAI-compatible chat-completions client for the writers' LLM decisions.

Works with any server that speaks ``POST {base_url}/chat/completions`` (OpenAI, vLLM, llama.cpp
server, Ollama's OpenAI endpoint, ...). Every decision asks for one JSON object
(``response_format = {"type": "json_object"}``), which is parsed and validated; an answer that
is not valid JSON or does not have the expected shape is retried like a transient HTTP error.

Configuration, each from the constructor or else the environment:

* ``base_url``: ``MEMAUDIT_LLM_BASE_URL``, else ``OPENAI_BASE_URL``, else
  ``https://api.openai.com/v1``;
* ``model``: ``MEMAUDIT_LLM_MODEL`` (required one way or the other);
* ``api_key``: ``MEMAUDIT_LLM_API_KEY``, else ``OPENAI_API_KEY`` (optional for local servers).

Retries: up to ``max_retries`` more attempts after a connection error, a time-out, HTTP 408,
409, 429 or 5xx, or an invalid answer; before attempt ``i`` (1-based) it waits
``min(backoff_max, backoff * 2**(i-1))`` seconds, or the server's ``Retry-After`` when that is
longer (still capped by ``backoff_max``). Other HTTP errors (400, 401, 404, ...) fail at once.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import LLMError, UsageError
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
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.temperature = temperature
        self.json_mode = json_mode
        self.sleep = sleep
        self.calls = 0

    # -- transport ------------------------------------------------------------------------
    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=json.dumps(payload).encode("utf-8"),
            headers=headers, method="POST",
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            body: dict[str, Any] = json.loads(response.read().decode("utf-8"))
            return body

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = self.backoff * 2 ** (attempt - 1)
        if retry_after and retry_after.strip().isdigit():
            delay = max(delay, float(retry_after))
        return min(self.backoff_max, delay)

    def chat_json(
        self, system: str, user: str, parse: Callable[[dict[str, Any]], Any]
    ) -> Any:
        """Ask for one JSON object and return ``parse(obj)``, retrying as documented above."""
        payload: dict[str, Any] = {
            "model": self.model, "temperature": self.temperature,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        if self.json_mode:
            payload["response_format"] = {"type": "json_object"}
        last = "no attempt made"
        retry_after_header: str | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self._delay(attempt, retry_after_header))
            retry_after_header = None
            self.calls += 1
            try:
                body = self._post(payload)
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:300]
                last = f"HTTP {exc.code} from {self.base_url}: {detail}"
                if exc.code not in RETRY_STATUS:
                    raise LLMError(last) from None
                retry_after_header = exc.headers.get("Retry-After") if exc.headers else None
                continue
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = f"cannot reach {self.base_url}: {exc}"
                continue
            except json.JSONDecodeError:
                last = "the endpoint answered with a body that is not JSON"
                continue
            try:
                content = body["choices"][0]["message"]["content"]
                _need(isinstance(content, str), "message content is not a string")
                obj = json.loads(_FENCE.sub("", content))
                _need(isinstance(obj, dict), "the answer is not a JSON object")
                return parse(obj)
            except (KeyError, IndexError, TypeError):
                last = "the endpoint's reply has no choices[0].message.content"
            except json.JSONDecodeError as exc:
                last = f"the model's answer is not JSON ({exc.msg})"
            except InvalidAnswer as exc:
                last = f"the model's answer has the wrong shape: {exc}"
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
