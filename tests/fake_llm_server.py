"""A scripted local HTTP server speaking the OpenAI Responses, OpenAI Chat Completions and
Anthropic Messages (SSE streaming) wire formats, for tests that drive the real SDKs.

    with FakeLLMServer() as server:
        server.script("/v1/responses", Step.json(responses_body("hi")))
        ...  # point OPENAI_BASE_URL at f"{server.url}/v1", ANTHROPIC_BASE_URL at server.url

Each path has a queue of scripted steps, served in order; an unscripted request gets a 500 with a
message saying so (and the SDK layer will retry it, which a test then notices by count).
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# models.toml for tests against this server: the aliases, and retries that back off for milliseconds, not seconds
FAST_CONFIG = """
[aliases.gpt]
model = "openai:gpt-5.5"
reasoning_effort = "high"
max_tokens = 32000

[aliases.claude]
model = "anthropic:claude-opus-5-5"
reasoning_effort = "high"
max_tokens = 32000

[providers.openai]
max_attempts = 3
backoff_initial_s = 0.01
backoff_max_s = 0.05

[providers.anthropic]
max_attempts = 3
backoff_initial_s = 0.01
backoff_max_s = 0.05

[providers.openai-compatible]
max_attempts = 3
backoff_initial_s = 0.01
backoff_max_s = 0.05
concurrency = 2
"""


@dataclass
class Step:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    content_type: str = "application/json"

    @classmethod
    def json(cls, payload: Any, status: int = 200, headers: dict[str, str] | None = None,
             delay_s: float = 0.0) -> Step:
        return cls(status, json.dumps(payload).encode(), headers or {}, delay_s)

    @classmethod
    def error(cls, status: int, message: str = "scripted error", headers: dict[str, str] | None = None,
              kind: str = "api_error") -> Step:
        # Both SDKs read {"error": {...}}; Anthropic also wants a top-level "type".
        payload = {"type": "error", "error": {"type": kind, "message": message}}
        return cls.json(payload, status, headers)

    @classmethod
    def sse(cls, events: list[tuple[str, dict]], headers: dict[str, str] | None = None,
            delay_s: float = 0.0) -> Step:
        body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        return cls(200, body.encode(), headers or {}, delay_s, "text/event-stream")

    @classmethod
    def raw(cls, body: bytes, status: int = 200, content_type: str = "application/json") -> Step:
        return cls(status, body, {}, 0.0, content_type)

    @classmethod
    def hang(cls, seconds: float, then: Step | None = None) -> Step:
        step = then or cls.error(500, "hung request finally answered")
        return cls(step.status, step.body, step.headers, seconds, step.content_type)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any
    at: float


class FakeLLMServer:
    def __init__(self) -> None:
        self._queues: dict[str, deque[Step]] = defaultdict(deque)
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, path: str, *steps: Step) -> None:
        with self._lock:
            self._queues[path].extend(steps)

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, path: str) -> Step:
        with self._lock:
            queue = self._queues[path]
            return queue.popleft() if queue else Step.error(500, f"fake server: nothing scripted for {path}")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                path = self.path.split("?")[0]
                with server._lock:
                    server.requests.append(Recorded(path, {k.lower(): v for k, v in self.headers.items()},
                                                    body, time.monotonic()))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                step = server._next(path)
                try:
                    if step.delay_s:
                        time.sleep(step.delay_s)
                    self.send_response(step.status)
                    self.send_header("content-type", step.content_type)
                    self.send_header("content-length", str(len(step.body)))
                    for k, v in step.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(step.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        return Handler


# ---- response builders ---------------------------------------------------------------------------

def responses_body(text: str, *, model: str = "gpt-5.5-2026-04-23", input_tokens: int = 1200,
                   cached: int = 1024, output_tokens: int = 900, reasoning: int = 700,
                   cache_write: int = 0, status: str = "completed", incomplete_reason: str | None = None) -> dict:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_760_000_000,
        "model": model,
        "status": status,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "error": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "output": [
            {"id": "rs_1", "type": "reasoning", "summary": []},
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
        ],
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": cache_write},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input_tokens + output_tokens,
        },
    }


def chat_body(text: str, *, model: str = "qwen3-coder", finish_reason: str = "stop", prompt_tokens: int = 50,
              completion_tokens: int = 20, usage: bool = True) -> dict:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": text}}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": prompt_tokens + completion_tokens}
    return body


def anthropic_events(text: str, *, thinking: str | None = "Let me think.", model: str = "claude-opus-5-5",
                     stop_reason: str = "end_turn", input_tokens: int = 100, cache_read: int = 800,
                     cache_write: int = 300, output_tokens: int = 500, thinking_tokens: int = 200
                     ) -> list[tuple[str, dict]]:
    """The SSE events of one streamed Message: optional thinking block, then the text in two deltas."""
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_read_input_tokens": cache_read,
                  "cache_creation_input_tokens": cache_write}}})]
    index = 0
    if thinking is not None:
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": {"type": "thinking_delta", "thinking": thinking}}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": {"type": "signature_delta", "signature": "sig=="}}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
        index += 1
    half = len(text) // 2
    events += [
        ("content_block_start", {"type": "content_block_start", "index": index,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": index,
                                 "delta": {"type": "text_delta", "text": text[:half]}}),
        ("content_block_delta", {"type": "content_block_delta", "index": index,
                                 "delta": {"type": "text_delta", "text": text[half:]}}),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                           "usage": {"output_tokens": output_tokens,
                                     "output_tokens_details": {"thinking_tokens": thinking_tokens}}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events
