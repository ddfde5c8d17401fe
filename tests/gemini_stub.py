"""Stubs of LLM APIs on 127.0.0.1: Gemini's REST API, enough for the real google-genai
client, and an OpenAI-compatible `POST /v1/chat/completions` (`OpenAIStub`).

It answers `POST /v1beta/models/{model}:generateContent`, records every request
(path, headers, JSON body) and replies from a script of queued replies, falling
back to `echo`: one summary per group it finds in the request, each naming the
first message's text so tests can check order and batching.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GENERATE = re.compile(r"/v1(?:beta|alpha)?/models/[\w.-]+:generateContent")
CHAT = re.compile(r"/v1/chat/completions")


@dataclass
class StubRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def groups(self) -> list[dict[str, Any]]:
        """The groups pamd sent (the JSON in the user turn)."""
        if "messages" in self.body:  # OpenAI: the user message after the system one
            text = self.body["messages"][-1]["content"]
        else:
            text = self.body["contents"][0]["parts"][0]["text"]
        return json.loads(text)["groups"]


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON, str -> raw text
    headers: dict[str, str] = field(default_factory=dict)
    # What the reply reported as usage (filled for generated answers).
    prompt_tokens: int = 0
    output_tokens: int = 0
    # A server dying mid-answer: Content-Length promises this many bytes more than are sent.
    cut: int = 0
    # Bytes sent instead of an HTTP response (a garbled status line), then the socket closes.
    raw: bytes = b""


def answer(texts: list[str] | str, prompt_tokens: int = 100, output_tokens: int = 20) -> Reply:
    """A 200 generateContent response whose text is `texts` (a list is sent as JSON)."""
    text = texts if isinstance(texts, str) else json.dumps(numbered(texts), ensure_ascii=False)
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": output_tokens,
            "totalTokenCount": prompt_tokens + output_tokens,
        },
        "modelVersion": "stub",
    }
    return Reply(200, body, prompt_tokens=prompt_tokens, output_tokens=output_tokens)


def numbered(texts: list[str]) -> list[dict[str, Any]]:
    """Summaries as pamd asks for them: each with its group's index, one fact citing the
    first message of its group (SOURCE(i), which the stub fills in from the request)."""
    return [{"i": i, "facts": [{"text": text, "sources": [source(i)]}]} for i, text in enumerate(texts)]


def source(i: int) -> str:
    """A placeholder the stub replaces with the id of group i's first message."""
    return f"@@src{i}@@"


SOURCE = re.compile(rb"@@src(\d+)@@")


def fill_sources(data: bytes, request: StubRequest) -> bytes:
    """Put the real entry ids in place of `source(i)` placeholders of a scripted answer."""
    try:
        groups = request.groups
    except (KeyError, IndexError, TypeError, ValueError):
        return data

    def one(m: re.Match[bytes]) -> bytes:
        i = int(m.group(1))
        return groups[i]["messages"][0]["id"].encode() if i < len(groups) else b"e-unknown"

    return SOURCE.sub(one, data)


def error(status: int, api_status: str, message: str = "stub error", details=None) -> Reply:
    payload = {"error": {"code": status, "message": message, "status": api_status}}
    if details is not None:
        payload["error"]["details"] = details
    return Reply(status, payload)


def echo(request: StubRequest) -> Reply:
    """One summary per group: "summary of <first message text>", sized from the request."""
    texts = [f"summary of {g['messages'][0]['text']}"[: g["max_chars"]] for g in request.groups]
    raw = json.dumps(request.body)
    return answer(texts, prompt_tokens=len(raw) // 4, output_tokens=sum(len(t) for t in texts) // 4)


def chat_answer(texts: list[str] | str, prompt_tokens: int = 100, output_tokens: int = 20,
                wrap: bool = True) -> Reply:
    """A 200 chat-completions response whose content is `texts`, numbered
    ({"summaries": [{"i": 0, "summary": ...}, ...]} when `wrap`, else the bare array; a str
    is sent as it is)."""
    if isinstance(texts, str):
        content = texts
    else:
        items = numbered(texts)
        content = json.dumps({"summaries": items} if wrap else items, ensure_ascii=False)
    body = {
        "id": "chatcmpl-stub", "object": "chat.completion", "model": "stub",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": output_tokens,
                  "total_tokens": prompt_tokens + output_tokens},
    }
    return Reply(200, body, prompt_tokens=prompt_tokens, output_tokens=output_tokens)


def chat_error(status: int, message: str = "stub error", headers: dict | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": "stub", "code": None}},
                 headers=dict(headers or {}))


def chat_echo(request: StubRequest) -> Reply:
    """As `echo`, in the chat-completions shape."""
    texts = [f"summary of {g['messages'][0]['text']}"[: g["max_chars"]] for g in request.groups]
    raw = json.dumps(request.body)
    return chat_answer(texts, prompt_tokens=len(raw) // 4,
                       output_tokens=sum(len(t) for t in texts) // 4)


class GeminiStub:
    route = GENERATE

    def __init__(self, responder: Callable[[StubRequest], Reply] = echo) -> None:
        self.responder = responder
        self.script: list[Reply] = []
        self.requests: list[StubRequest] = []
        self.replies: list[Reply] = []
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                request = StubRequest(
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(raw or b"{}"),
                )
                if not stub.route.fullmatch(self.path.split("?")[0]):
                    reply = error(404, "NOT_FOUND", f"no route {self.path}")
                    self._send(reply)
                    return
                with stub._lock:
                    stub.requests.append(request)
                    reply = stub.script.pop(0) if stub.script else None
                if reply is None:
                    reply = stub.responder(request)
                with stub._lock:
                    stub.replies.append(reply)
                self._send(reply, request)

            def _send(self, reply: Reply, request: StubRequest | None = None) -> None:
                if reply.raw:
                    self.wfile.write(reply.raw)
                    self.wfile.flush()
                    self.close_connection = True
                    return
                data = (
                    reply.body.encode() if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                if request is not None:
                    data = fill_sources(data, request)
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data) + reply.cut))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
                if reply.cut:
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> GeminiStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class OpenAIStub(GeminiStub):
    """`POST /v1/chat/completions`; `base_url` is the API root pamd is given (…/v1)."""

    route = CHAT

    def __init__(self, responder: Callable[[StubRequest], Reply] = chat_echo) -> None:
        super().__init__(responder)

    @property
    def base_url(self) -> str:
        return super().base_url + "/v1"


MESSAGES = re.compile(r"/v1/messages")


def messages_answer(texts: list[str] | Any, input_tokens: int = 100, output_tokens: int = 20,
                    cache_write: int = 0, cache_read: int = 0, stop_reason: str = "tool_use") -> Reply:
    """A 200 Anthropic Messages response calling the record_facts tool with `texts` as
    numbered summaries (any other value is sent as the tool's input as it is)."""
    data = {"summaries": numbered(texts)} if isinstance(texts, list) else texts
    body = {
        "id": "msg_stub", "type": "message", "role": "assistant", "model": "stub",
        "content": [{"type": "tool_use", "id": "toolu_stub", "name": "record_facts", "input": data}],
        "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read},
    }
    return Reply(200, body, prompt_tokens=input_tokens + cache_write + cache_read,
                 output_tokens=output_tokens)


def messages_error(status: int, kind: str, message: str = "stub error",
                   headers: dict | None = None) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}},
                 headers=dict(headers or {}))


class AnthropicStub(GeminiStub):
    """`POST /v1/messages`, as the anthropic SDK sends it. The echo answer counts tokens as
    the API would bill them (about 4 characters a token) and plays the prompt cache: the
    first request with a given cached system block writes it, later ones read it."""

    route = MESSAGES

    def __init__(self, responder: Callable[[StubRequest], Reply] | None = None,
                 min_cache_tokens: int = 0) -> None:
        self.cached: set[str] = set()
        # the API caches a prefix only from a model's minimum length up (4096 tokens for Haiku 4.5)
        self.min_cache_tokens = min_cache_tokens
        super().__init__(responder or self.echo)

    def cache(self, request: StubRequest) -> tuple[int, int, int]:
        """(uncached, written, read) prompt tokens of a request, as the API would bill them:
        the tools and the system block up to the cache breakpoint form the cached prefix."""
        body = request.body
        prefix = len(json.dumps(body.get("tools", []))) + sum(len(b["text"]) for b in body.get("system", []))
        rest = len(json.dumps(body["messages"]))
        key = json.dumps([body.get("tools"), body.get("system")])
        marked = any(b.get("cache_control") for b in body.get("system", []))
        if not marked or prefix // 4 < self.min_cache_tokens:
            return (prefix + rest) // 4, 0, 0
        hit = key in self.cached
        self.cached.add(key)
        return rest // 4, 0 if hit else prefix // 4, prefix // 4 if hit else 0

    def echo(self, request: StubRequest) -> Reply:
        texts = [f"summary of {g['messages'][0]['text']}"[: g["max_chars"]] for g in request.groups]
        plain, write, read = self.cache(request)
        return messages_answer(texts, input_tokens=plain, output_tokens=sum(len(t) for t in texts) // 4,
                               cache_write=write, cache_read=read)
