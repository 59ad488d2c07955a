"""A loopback TCP proxy that slows a client's uploads down once a given request starts.

Put between a client and a server: what the client sends is forwarded as is until `trigger`
(e.g. the start of a request line) is seen, then in small pieces with a pause between them, so a
test can kill the client while that request's body is on its way. Leaving the proxy cuts every
connection where it stands (what the proxy holds of a killed client's request is not sent on
later: the server sees the request end mid-body, as when a killed client's connection drops).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class SlowProxy:
    def __init__(
        self, target_port: int, *, trigger: bytes, piece: int = 1024, delay: float = 0.05
    ) -> None:
        self.target_port = target_port
        self.trigger = trigger
        self.piece = piece
        self.delay = delay
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        #: bytes forwarded since the trigger was seen (the slowed request's head and body)
        self.slowed = 0
        self._lock = threading.Lock()
        self._closed = False
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> SlowProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed = True
        self.listener.close()
        for thread in self._threads:  # (each stops at its next piece, or when its peer does)
            thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            upstream = threading.Thread(target=self._upstream, args=(client, server), daemon=True)
            upstream.start()
            self._threads.append(upstream)
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def _upstream(self, client: socket.socket, server: socket.socket) -> None:
        seen = b""
        slow = False
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                if not slow:
                    seen = (seen + data)[-len(self.trigger) - len(data) :]
                    at = seen.find(self.trigger)
                    if at < 0:
                        server.sendall(data)
                        continue
                    slow = True
                    head = max(0, len(data) - (len(seen) - at))
                    server.sendall(data[:head])
                    data = data[head:]
                for start in range(0, len(data), self.piece):
                    if self._closed:  # cut where it stands
                        raise OSError("the proxy is closed")
                    server.sendall(data[start : start + self.piece])
                    with self._lock:
                        self.slowed += len(data[start : start + self.piece])
                    time.sleep(self.delay)
        for end in (client, server):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
