"""A real HTTP server on 127.0.0.1 that misbehaves on purpose: drops, errors, slowness, bad sums."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Served:
    """A file the server holds, and how it misbehaves when asked for it."""

    data: bytes
    #: Byte offsets at which to cut the connection, each once, in order.
    drops: list[int] = field(default_factory=list)
    #: Statuses to answer first, one per request, before serving normally.
    errors: list[int] = field(default_factory=list)
    #: Serve the whole file with 200 even when a Range is asked for.
    ignore_range: bool = False
    #: Bytes per write and seconds to sleep between writes (a slow server).
    chunk: int = 64 * 1024
    delay: float = 0.0
    etag: str | None = None
    #: Content served from the first cut connection on (the file changes on the server).
    after_drop: bytes | None = None
    #: An event each GET waits for (up to a minute) before its first byte: a held download.
    gate: threading.Event | None = None
    #: A path to send the client to (302 Found, as signed bucket URLs often do) instead.
    moved_to: str | None = None


class LoopbackServer:
    """Serves `Served` files at paths; records each request's path and Range header."""

    def __init__(self) -> None:
        self.files: dict[str, Served] = {}
        self.requests: list[tuple[str, str, str | None]] = []
        self.bytes_sent = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self._serve(head=True)

            def do_GET(self) -> None:
                self._serve(head=False)

            def _serve(self, head: bool) -> None:
                path = self.path.split("?")[0]
                with server._lock:
                    server.requests.append((self.command, path, self.headers.get("Range")))
                    served = server.files.get(path)
                    error = served.errors.pop(0) if served and served.errors else None
                if served is None:
                    self._status(404)
                    return
                if error is not None:
                    self._status(error)
                    return
                if served.moved_to is not None:
                    self.send_response(302)
                    self.send_header("Location", served.moved_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = served.data
                start = 0
                wanted = self.headers.get("Range")
                if wanted and not served.ignore_range:
                    first, _, last = wanted.removeprefix("bytes=").partition("-")
                    start = int(first)
                    if last:  # a closed range: serve as if the file ended there
                        data = data[: int(last) + 1]
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(served.data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    total = len(served.data)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{total}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.send_header("Accept-Ranges", "bytes")
                if served.etag:
                    self.send_header("ETag", served.etag)
                self.end_headers()
                if head:
                    return
                if served.gate is not None:
                    served.gate.wait(60)
                position = start
                while position < len(data):
                    end = min(len(data), position + served.chunk)
                    with server._lock:
                        drop = next((d for d in served.drops if position <= d < end), None)
                        if drop is not None:
                            served.drops.remove(drop)
                    if drop is not None:
                        end = drop
                    try:
                        self.wfile.write(data[position:end])
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        return
                    with server._lock:
                        server.bytes_sent += end - position
                    position = end
                    if drop is not None:
                        if served.after_drop is not None:
                            served.data = served.after_drop
                        self.close_connection = True
                        return
                    if served.delay:
                        time.sleep(served.delay)

            def _status(self, status: int) -> None:
                body = f"status {status}\n".encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        """Return the server's base URL."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, path: str, data: bytes, **behaviour: Any) -> str:
        """Serve bytes at a path; return the URL."""
        self.files[path] = Served(data, **behaviour)
        return self.base + path

    def add_dump(
        self, folder: str, name: str, data: bytes, digest: str | None = None, **behaviour: Any
    ) -> str:
        """Serve a dump and a sha256sums.txt beside it (with `digest` to publish a wrong sum)."""
        digest = digest or hashlib.sha256(data).hexdigest()
        sums = f"{'0' * 64}  other-file.pgn.zst\n{digest}  {name}\n".encode()
        self.add(f"{folder}/sha256sums.txt", sums)
        return self.add(f"{folder}/{name}", data, **behaviour)

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
