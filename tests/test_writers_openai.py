"""The OpenAI-compatible client against a chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, final

import pytest

from memaudit_fast.errors import UsageError
from memaudit_fast.writers.errors import LLMError
from memaudit_fast.writers.locomo_turns import Turn, conversation_from_dict
from memaudit_fast.writers.openai_client import OpenAIChatLLM
from memaudit_fast.writers.sample import mini_locomo


def _reply(content: str) -> tuple[int, dict[str, str], bytes]:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    return 200, {}, json.dumps(body).encode()


@final  # a test helper, never subclassed: __enter__ may name the class
class ChatServer:
    """Answers each POST with the next scripted reply, or with ``auto`` when the script is spent."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, str], bytes]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.auto: Any = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length))
                server.requests.append({"path": self.path, **payload})
                server.headers.append(dict(self.headers))
                if server.script:
                    status, headers, body = server.script.pop(0)
                else:
                    status, headers, body = _reply(json.dumps(server.auto(payload)))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as s:
        yield s


def _client(server: ChatServer, **kw: Any) -> tuple[OpenAIChatLLM, list[float]]:
    delays: list[float] = []
    options = {"timeout": 5.0, "max_retries": 3, "backoff": 0.0, "backoff_max": 0.0, **kw}
    llm = OpenAIChatLLM(server.url, "test-model", "sk-test", sleep=delays.append, **options)
    return llm, delays


TURN = Turn("D1:1", "Ana", 1, "", "I adopted a puppy yesterday.", "2023-03-03T14:00", 0)


def test_request_shape_and_json_mode(server: ChatServer) -> None:
    server.script = [_reply('{"episodic": true, "semantic": false, "procedural": true}')]
    llm, delays = _client(server)
    assert llm.route(TURN) == 0b101
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["model"] == "test-model" and req["temperature"] == 0.0
    assert req["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in req["messages"]] == ["system", "user"]
    assert "Ana: I adopted a puppy" in req["messages"][1]["content"]
    assert {k.lower(): v for k, v in server.headers[0].items()}["authorization"] == "Bearer sk-test"
    assert delays == []


def test_transient_errors_are_retried_with_exponential_backoff(server: ChatServer) -> None:
    server.script = [
        (503, {}, b'{"error": "overloaded"}'),
        (429, {}, b'{"error": "slow down"}'),
        _reply('{"label": "partial_shift"}'),
    ]
    llm, delays = _client(server, backoff=0.5, backoff_max=10.0)
    assert llm.topic_continuation([TURN], TURN) == "partial_shift"
    assert len(server.requests) == 3
    assert delays == [0.5, 1.0]  # recorded, not slept


def test_retry_after_is_honoured_up_to_the_cap(server: ChatServer) -> None:
    server.script = [(429, {"Retry-After": "7"}, b"{}"), _reply('{"label": "continuous"}')]
    llm, delays = _client(server, backoff=0.1, backoff_max=5.0)
    assert llm.topic_continuation([TURN], TURN) == "continuous"
    assert delays == [5.0]


def test_invalid_answers_are_retried_then_accepted(server: ChatServer) -> None:
    server.script = [
        _reply("this is not JSON"),
        _reply('{"label": "maybe"}'),
        _reply('```json\n{"label": "discontinuous"}\n```'),
    ]
    llm, _ = _client(server)
    assert llm.topic_continuation([TURN], TURN) == "discontinuous"
    assert len(server.requests) == 3


def test_client_errors_fail_at_once(server: ChatServer) -> None:
    server.script = [(401, {}, b'{"error": "bad key"}')]
    llm, _ = _client(server)
    with pytest.raises(LLMError, match="HTTP 401"):
        llm.route(TURN)
    assert len(server.requests) == 1


def test_retries_run_out(server: ChatServer) -> None:
    server.script = [(500, {}, b"{}")] * 4
    llm, delays = _client(server, max_retries=3)
    with pytest.raises(LLMError, match="after 4 attempts.*HTTP 500"):
        llm.route(TURN)
    assert len(server.requests) == 4 and len(delays) == 3


def test_unreachable_endpoint_is_an_llm_error() -> None:
    with ChatServer() as s:
        url = s.url
    llm = OpenAIChatLLM(url, "m", timeout=2.0, max_retries=1, backoff=0.0, sleep=lambda _: None)
    with pytest.raises(LLMError, match="cannot reach"):
        llm.route(TURN)


def test_model_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMAUDIT_LLM_MODEL", raising=False)
    with pytest.raises(UsageError, match="model"):
        OpenAIChatLLM("http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMAUDIT_LLM_MODEL", "from-env")
    monkeypatch.setenv("MEMAUDIT_LLM_BASE_URL", "http://127.0.0.1:9/v1/")
    llm = OpenAIChatLLM()
    assert llm.model == "from-env" and llm.base_url == "http://127.0.0.1:9/v1"


def _answer(payload: dict[str, Any]) -> dict[str, Any]:
    """A tiny rule-based 'model' that answers each decision with valid JSON."""
    system = payload["messages"][0]["content"]
    user = payload["messages"][1]["content"]
    if "segment a conversation" in system:
        return {"label": "discontinuous" if "By the way" in user.split("Next message:")[1] else "continuous"}
    if "Summarise one topic-continuous episode" in system:
        first = user.splitlines()[0].split(": ", 1)[1]
        return {"topic": first[:30], "keywords": ["k"], "events": [{"text": first, "turns": [0]}]}
    if "link new events" in system:
        return {"assignments": [{"event": 0, "traces": [0]}]}
    if "Group events" in system:
        return {"groups": [[i] for i, _ in enumerate(user.splitlines())]}
    if "Decide which long-term memory" in system:
        return {"episodic": True, "semantic": "favourite" in user, "procedural": False}
    if "normalised memory records" in system:
        text = user.split("] ", 1)[1]
        out: dict[str, Any] = {"episodic": [{"title": "t", "summary": text, "time_anchor": None}]}
        if "semantic" in system:
            out["semantic"] = [{"fact": text, "time_anchor": "2023"}]
        return out
    raise AssertionError(f"unexpected prompt: {system[:60]}")


def test_writers_run_end_to_end_through_the_http_client(server: ChatServer) -> None:
    pytest.importorskip("faiss")
    from memaudit_fast.writers.embed import HashingEmbedder
    from memaudit_fast.writers.engram import build_engram
    from memaudit_fast.writers.membox import build_membox

    server.auto = _answer
    conv = conversation_from_dict(mini_locomo())
    llm, _ = _client(server)
    engram = build_engram(conv.turns, HashingEmbedder(256), llm)
    stats = engram.stats()
    assert stats["episodic"] == len(conv.turns) and stats["semantic"] == 1
    assert engram.llm_name == "openai"
    membox = build_membox(conv.turns, HashingEmbedder(256), llm)
    # "By the way" seals the box: D1:1-D1:5, D1:6-D1:9, then session 2.
    assert [b.dia_ids[0] for b in membox.boxes.values()] == ["D1:1", "D1:6", "D2:1"]
    assert all(len(b.event_ids) == 1 for b in membox.boxes.values())
    assert any(p["messages"][0]["content"].startswith("You link") for p in server.requests)


def test_accepted_answers_are_cached_on_disk(server: ChatServer, tmp_path: Any) -> None:
    server.script = [_reply("not JSON"), _reply('{"label": "continuous"}')]
    cache = tmp_path / "answers.sqlite"
    llm, _ = _client(server, cache=cache)
    assert llm.topic_continuation([TURN], TURN) == "continuous"
    assert len(server.requests) == 2
    again, _ = _client(server, cache=cache)  # a new process would see the same file
    assert again.topic_continuation([TURN], TURN) == "continuous"
    assert len(server.requests) == 2 and again.cache is not None and again.cache.hits == 1
    server.script = [_reply('{"episodic": false, "semantic": true, "procedural": false}')]
    assert again.route(TURN) == 0b010 and len(server.requests) == 3  # another prompt: asked


def test_the_cache_comes_from_the_environment(server: ChatServer, tmp_path: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMAUDIT_LLM_CACHE", str(tmp_path / "env.sqlite"))
    llm, _ = _client(server)
    assert llm.cache is not None and llm.cache.path == tmp_path / "env.sqlite"


def test_without_the_sdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from memaudit_fast.writers.errors import DependencyMissing

    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(DependencyMissing, match=r"memaudit_fast\[llm\]"):
        OpenAIChatLLM("http://127.0.0.1:9/v1", "m")
