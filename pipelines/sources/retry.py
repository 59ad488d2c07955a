"""Retrying HTTP requests: the defaults, which failures are worth another try, the backoff."""

from __future__ import annotations

import http.client
import socket
import time
import urllib.error
from collections.abc import Callable

#: Seconds each request may wait for the server, the tries after failures in a row, and the
#: wait after the first failure (doubling after each next one): the one home of the defaults.
TIMEOUT = 60.0
RETRIES = 5
BACKOFF = 1.0

#: Errors after which a request is worth repeating.
TRANSIENT = (
    urllib.error.URLError,
    http.client.HTTPException,
    ConnectionError,
    socket.timeout,
    TimeoutError,
    OSError,
)


class Transient(Exception):
    """A failure worth retrying."""


def retryable_status(status: int) -> bool:
    """Whether an HTTP error status is worth another try (5xx, timeouts, too many requests)."""
    return status >= 500 or status in (408, 425, 429)


def backoff_delay(backoff: float, failures: int) -> float:
    """Return the seconds to wait after `failures` failures in a row: doubling, at most 30."""
    return min(30.0, backoff * 2 ** (failures - 1))


class Retries:
    """The failures in a row of one request, and the wait before it is tried again."""

    def __init__(
        self, retries: int, backoff: float, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.retries = retries
        self.backoff = backoff
        self.failures = 0
        self._sleep = sleep

    def failed(self, *, before_wait: Callable[[int, int, float], None] | None = None) -> bool:
        """Count a failure; wait and return True when another try is left, else False.

        `before_wait(failures, retries, seconds)` is called before the wait (to say it).
        """
        self.failures += 1
        if self.failures > self.retries:
            return False
        delay = backoff_delay(self.backoff, self.failures)
        if before_wait is not None:
            before_wait(self.failures, self.retries, delay)
        self._sleep(delay)
        return True

    def succeeded(self) -> None:
        """Progress was made: the next failure is the first in a row."""
        self.failures = 0


def unresolved_host(exc: BaseException) -> str | None:
    """Return why a host name could not be resolved, if that is what failed (else None):
    waiting does not bring a name back, so such a failure is not retried."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, socket.gaierror):
        return str(reason.strerror or reason)
    return None
