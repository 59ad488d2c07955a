"""The server's guard on HTTP itself: bounded request heads, timeouts, a connection limit.

uvicorn (with its pure-Python h11 protocol) gives the keep-alive timeout
(`timeout_keep_alive`), the connection limit (`limit_concurrency`: requests over it answer 503)
and a bound on an *incomplete* request head (`h11_max_incomplete_event_size`); what it lacks is
added here:

- `GuardedProtocol`: a head that is not complete within `head_timeout` seconds of the
  connection (or of the previous answer) is answered 408 and the connection closed, however
  slowly it trickles in (uvicorn would hold it as long as bytes keep coming, or forever on a
  fresh connection). A head that grows past `HEAD_BYTES` answers 414 (the request line) or
  431 (the headers) instead of uvicorn's 400; the connection is then closed *after* reading
  what the client is still sending (for at most `LINGER` seconds and `LINGER_BYTES`), so the
  client reads the answer instead of a TCP reset.
- `HeadLimit`: the same bounds on heads that arrived whole in one read (h11 checks only the
  ones still incomplete): a request target over `MAX_TARGET` bytes answers 414, headers over
  `HEAD_BYTES` 431.
- `SlowRefusals`: every refusal (`REFUSED`: the application's 400s, and the 408, 414 and 431
  above) is sent `REFUSAL_DELAY` seconds late. A client that sends requests the server must
  refuse, one after the other, then waits instead of taking the event loop: four such clients
  sending 10 KB URLs had taken the p95 of ordinary requests from 1.7 to 17 ms, and took it to
  2.0 ms once refusals waited (bench/RESULTS.md). The wait costs the server nothing but a
  timer, and a person who mistyped a parameter does not notice 25 ms.

Refusals are JSON, `{"error": reason}`, as the application's own.
"""

from __future__ import annotations

import asyncio
import http
import json
from typing import Any

import h11
import uvicorn
from starlette.types import Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

#: The longest request target (path and query string), in bytes.
MAX_TARGET = 8 * 1024
#: The longest request head (request line and headers), in bytes.
HEAD_BYTES = 16 * 1024
#: Seconds a connection may take to send a whole request head.
HEAD_TIMEOUT = 10.0
#: Seconds an idle keep-alive connection is kept.
KEEP_ALIVE = 5
#: Connections at once (per server process); requests beyond answer 503.
MAX_CONNECTIONS = 256
#: After a refusal, how long (seconds) and how much (bytes) of the client's request is read
#: and dropped before the connection is closed.
LINGER = 2.0
LINGER_BYTES = 1024 * 1024
#: Seconds a refusal (a status in `REFUSED`) waits before it is sent.
REFUSAL_DELAY = 0.025
#: The statuses of requests refused for what they are: malformed or unacceptable parameters,
#: a head too slow or too long.
REFUSED = frozenset({400, 408, 414, 431})


def refusal(status: int, reason: str) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, with the reason as JSON."""
    body = json.dumps({"error": reason}).encode()
    phrase = http.HTTPStatus(status).phrase
    head = (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


def too_long(head: bytes) -> tuple[int, str]:
    """The status and reason for a request head over its bound."""
    line_end = head.find(b"\r\n")
    if line_end < 0 or line_end > MAX_TARGET:
        return 414, f"request line longer than {MAX_TARGET} bytes"
    return 431, f"request headers longer than {HEAD_BYTES} bytes"


class ServeConfig(uvicorn.Config):
    """uvicorn's settings, and the seconds a request head may take (`head_timeout`)."""

    def __init__(self, app: Any, *, head_timeout: float = HEAD_TIMEOUT, **settings: Any) -> None:
        super().__init__(app, **settings)
        self.head_timeout = head_timeout


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with a head timeout and answered, lingering refusals."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.head_timeout = getattr(config, "head_timeout", HEAD_TIMEOUT)
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._dropped = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self.transport.close()
            return
        scope = self.scope
        super().data_received(data)
        if self.scope is not scope:  # a whole head arrived
            self._stop_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.cycle.response_complete:
            self._await_head()

    def send_400_response(self, msg: str) -> None:
        """h11 refused the head: too long (414, 431), else malformed (400)."""
        buffered = self.conn.trailing_data[0]
        if len(buffered) > HEAD_BYTES:
            self._refuse(*too_long(buffered))
        else:
            self._refuse(400, "malformed HTTP request")

    def _await_head(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or (self.cycle and not self.cycle.response_complete):
            return
        if self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
            self.transport.close()  # idle: nothing to answer
            return
        self._refuse(408, f"request head not received within {self.head_timeout:g} s")

    def _refuse(self, status: int, reason: str) -> None:
        """Answer `status` in `REFUSAL_DELAY` seconds, then close the connection after reading
        (and dropping) what the client still sends, for at most `LINGER` seconds."""
        self._unset_keepalive_if_required()
        self._stop_head_timer()
        self._refused = True
        self.loop.call_later(REFUSAL_DELAY, self._send_refusal, refusal(status, reason))

    def _send_refusal(self, answer: bytes) -> None:
        if self.transport.is_closing():
            return
        self.transport.write(answer)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER, self.transport.close)


class HeadLimit:
    """ASGI middleware: 414 for a request target over `MAX_TARGET` bytes, 431 for headers over
    `HEAD_BYTES`, on heads h11 read whole."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            target = len(scope.get("raw_path") or b"") + 1 + len(scope.get("query_string", b""))
            headers = sum(len(k) + len(v) + 4 for k, v in scope.get("headers", ()))
            status, reason = 0, ""
            if target > MAX_TARGET:
                status, reason = 414, f"request line longer than {MAX_TARGET} bytes"
            elif headers > HEAD_BYTES:
                status, reason = 431, f"request headers longer than {HEAD_BYTES} bytes"
            if status:
                body = json.dumps({"error": reason}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"connection", b"close"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


class SlowRefusals:
    """ASGI middleware: an answer whose status is in `REFUSED` is sent `delay` seconds late
    (the wait is a timer on the event loop; other requests go on meanwhile)."""

    def __init__(self, app: Any, *, delay: float = REFUSAL_DELAY) -> None:
        self.app = app
        self.delay = delay

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_late(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in REFUSED:
                await asyncio.sleep(self.delay)
            await send(message)

        await self.app(scope, receive, send_late)


def server_config(
    app: Any,
    *,
    host: str,
    port: int,
    head_timeout: float = HEAD_TIMEOUT,
    keep_alive: int = KEEP_ALIVE,
    connections: int = MAX_CONNECTIONS,
    **settings: Any,
) -> ServeConfig:
    """uvicorn's settings for `chesspipe serve`: the guarded protocol and its bounds."""
    return ServeConfig(
        app,
        head_timeout=head_timeout,
        host=host,
        port=port,
        http=GuardedProtocol,
        h11_max_incomplete_event_size=HEAD_BYTES,
        timeout_keep_alive=keep_alive,
        limit_concurrency=connections,
        **{"log_level": "warning", **settings},
    )
