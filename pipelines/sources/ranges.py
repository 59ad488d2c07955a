"""A remote file read by byte ranges, for reads spread over many processes or machines."""

from __future__ import annotations

import urllib.error
import urllib.request

from pipelines.errors import ChesspipeError
from pipelines.sources.http import USER_AGENT, HttpStatusError
from pipelines.sources.retry import (
    BACKOFF,
    RETRIES,
    TIMEOUT,
    TRANSIENT,
    Retries,
    Transient,
    retryable_status,
)


class RangeFile:
    """A remote file read by byte ranges (HTTP `Range: bytes=a-b`), seekable like a local one."""

    def __init__(
        self,
        url: str,
        size: int,
        timeout: float = TIMEOUT,
        retries: int = RETRIES,
        backoff: float = BACKOFF,
    ) -> None:
        self.url = url
        self.size = size
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.position = 0
        self.requests = 0

    def seek(self, offset: int, whence: int = 0) -> int:
        """Move to a byte offset (from the start, the current position or the end)."""
        base = {0: 0, 1: self.position, 2: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def tell(self) -> int:
        """Return the current byte offset."""
        return self.position

    def read(self, size: int = -1) -> bytes:
        """Read up to `size` bytes (all that is left for -1) with one ranged request."""
        end = self.size if size < 0 else min(self.size, self.position + size)
        if end <= self.position:
            return b""
        headers = {
            "User-Agent": USER_AGENT,
            "Accept-Encoding": "identity",
            "Range": f"bytes={self.position}-{end - 1}",
        }
        retries = Retries(self.retries, self.backoff)
        while True:
            self.requests += 1
            try:
                request = urllib.request.Request(self.url, headers=headers)
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    if response.status != 206:
                        raise ChesspipeError(
                            f"{self.url}: the server ignores byte ranges (HTTP {response.status})"
                        )
                    data: bytes = response.read(end - self.position)
                if len(data) != end - self.position:
                    raise Transient(f"short range answer: {len(data)} bytes")
                self.position = end
                return data
            except urllib.error.HTTPError as exc:
                exc.close()
                if not retryable_status(exc.code) or not retries.failed():
                    raise HttpStatusError(self.url, exc.code, str(exc.reason)) from None
            except (Transient, *TRANSIENT) as exc:
                if not retries.failed():
                    raise ChesspipeError(f"{self.url}: giving up on a byte range: {exc}") from None
