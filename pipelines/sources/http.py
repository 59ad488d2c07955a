"""The one HTTP client's streamer: a remote file read like a local one, with retries and resume."""

from __future__ import annotations

import http.client
import logging
import posixpath
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from contextlib import suppress
from typing import IO

from pipelines.errors import ChesspipeError
from pipelines.sources.retry import (
    BACKOFF,
    RETRIES,
    TIMEOUT,
    TRANSIENT,
    Retries,
    Transient,
    retryable_status,
    unresolved_host,
)
from schemas.version import __version__

USER_AGENT = f"chesspipe/{__version__}"

#: What a download is trying as it tries: connecting (info), a retry and its wait (warning).
#: The command line shows them (pipelines/cli.py); a library caller configures logging.
_log = logging.getLogger(__name__)


class HttpStatusError(ChesspipeError):
    """The server answered with an HTTP error status."""

    def __init__(self, url: str, status: int, reason: str) -> None:
        super().__init__(f"{url}: HTTP {status} {reason}".rstrip())
        self.status = status


class HttpStream:
    """A remote file read like a local one: reconnects with backoff and resumes with `Range`.

    `start` skips that many leading bytes (a download resumed from a cached part). `head`: ask
    with HEAD, for the size and ETag only (`remote_identity`); nothing is read.
    A dropped connection, a timeout or a 5xx answer is retried up to `retries` times in a row;
    any progress resets the count. 4xx answers fail at once.
    """

    def __init__(
        self,
        url: str,
        timeout: float = TIMEOUT,
        retries: int = RETRIES,
        backoff: float = BACKOFF,
        start: int = 0,
        sleep: Callable[[float], None] = time.sleep,
        *,
        head: bool = False,
    ) -> None:
        self.url = url
        self.head = head
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.offset = start
        self.size: int | None = None
        self.etag: str | None = None
        self.reconnects = 0
        self._response: http.client.HTTPResponse | None = None
        self._failures = Retries(retries, backoff, sleep)
        self._connect()

    def _request(self) -> http.client.HTTPResponse:
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
        if self.offset:
            headers["Range"] = f"bytes={self.offset}-"
            if self.etag:
                headers["If-Range"] = self.etag
        method = "HEAD" if self.head else "GET"
        request = urllib.request.Request(self.url, headers=headers, method=method)
        try:
            response: http.client.HTTPResponse = _OPENER.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            answer = exc.headers
            exc.close()
            if exc.code == 416 and self.offset:
                total = (answer.get("Content-Range") or "").rpartition("/")[2]
                if total.isdigit() and int(total) == self.offset:
                    self.size = int(total)
                    raise _AtEnd() from None
            error = HttpStatusError(self.url, exc.code, str(exc.reason))
            if retryable_status(exc.code):
                raise Transient(str(error)) from None
            raise error from None
        return response

    def _connect(self) -> None:
        """Open a response at the current offset, retrying transient failures."""
        while True:
            at = f" at byte {self.offset:,}" if self.offset else ""
            _log.info("connecting to %s%s", self.url, at)
            try:
                response = self._request()
                self._accept(response)
                return
            except _AtEnd:
                self._response = None
                return
            except (Transient, *TRANSIENT) as exc:
                self._failed(exc)

    def _failed(self, exc: BaseException) -> None:
        """Count a failure in a row; wait before the next try, or give up.

        A host that cannot be resolved (no network, a mistyped name) fails at once: waiting
        does not bring a name back.
        """
        self._close_response()
        unresolved = unresolved_host(exc)
        if unresolved is not None:
            host = urllib.parse.urlsplit(self.url).hostname
            raise ChesspipeError(
                f"{self.url}: cannot resolve the host {host} ({unresolved}): no network, "
                "or no such host"
            ) from None
        reason = str(exc) or type(exc).__name__
        said = reason if reason.startswith(self.url) else f"{self.url}: {reason}"

        def say(failures: int, retries: int, seconds: float) -> None:
            _log.warning("%s; retry %d of %d in %g s", said, failures, retries, seconds)

        if not self._failures.failed(before_wait=say):
            raise ChesspipeError(
                f"{self.url}: giving up after {self.retries} retries "
                f"at byte {self.offset}: {reason}"
            ) from None
        self.reconnects += 1

    def _accept(self, response: http.client.HTTPResponse) -> None:
        """Check a fresh response against the offset asked for, and learn the total size."""
        etag = response.headers.get("ETag")
        if self.offset == 0 or response.status == 200:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            if self.offset and response.status == 200:
                if self.etag and etag and etag != self.etag:
                    response.close()
                    raise ChesspipeError(
                        f"{self.url}: the file changed on the server during the download"
                    )
                # The server ignored Range: read past the bytes we already have.
                self._skip(response, self.offset)
        else:
            if response.status != 206:
                response.close()
                raise ChesspipeError(
                    f"{self.url}: unexpected HTTP {response.status} to a Range request"
                )
            first, total = _content_range(response.headers.get("Content-Range"))
            if first != self.offset:
                response.close()
                raise ChesspipeError(
                    f"{self.url}: asked for bytes from {self.offset}, server sent from {first}"
                )
        if total is not None and self.size is not None and total != self.size:
            response.close()
            raise ChesspipeError(
                f"{self.url}: the file changed on the server (size {self.size} became {total})"
            )
        if self.size is None:
            self.size = total
        if etag and not self.etag:
            self.etag = etag
        self._response = response

    def _skip(self, response: http.client.HTTPResponse, count: int) -> None:
        left = count
        while left:
            data = response.read(min(left, 1 << 20))
            if not data:
                raise Transient("connection closed while skipping to the resume point")
            left -= len(data)

    def read(self, size: int = -1) -> bytes:
        """Return up to `size` bytes (all the rest for -1); b'' only at the end of the file."""
        parts = []
        left = size if size is not None and size >= 0 else -1
        while left:
            block = self._read_some(left if left > 0 else 1 << 20)
            if not block:
                break
            parts.append(block)
            if left > 0:
                left -= len(block)
        return b"".join(parts)

    def _read_some(self, size: int) -> bytes:
        """Return the bytes that arrive next (at most `size`), reconnecting as needed."""
        while True:
            if self._response is None:
                if self.size is not None and self.offset >= self.size:
                    return b""
                self._connect()
                if self._response is None:
                    return b""
            try:
                data = self._response.read1(size)
            except TRANSIENT as exc:
                self._failed(exc)
                self._response = None
                continue
            if data:
                self.offset += len(data)
                self._failures.succeeded()
                return data
            self._close_response()
            if self.size is None or self.offset >= self.size:
                return b""
            # The connection ended early: resume from where it stopped.
            self._failed(ConnectionError(f"connection closed at byte {self.offset} of {self.size}"))

    def _close_response(self) -> None:
        if self._response is not None:
            with suppress(OSError):
                self._response.close()
            self._response = None

    def close(self) -> None:
        """Drop the connection."""
        self._close_response()


class _AtEnd(Exception):
    """A Range request past the end of a complete file."""


def _content_range(value: str | None) -> tuple[int, int | None]:
    """Return (first byte, total size or None) of a `Content-Range: bytes A-B/T` header."""
    if not value or not value.startswith("bytes "):
        raise ChesspipeError(f"bad Content-Range header {value!r}")
    span, _, total = value[len("bytes ") :].partition("/")
    first = span.partition("-")[0]
    if not first.isdigit():
        raise ChesspipeError(f"bad Content-Range header {value!r}")
    return int(first), int(total) if total.isdigit() else None


def fetch_text(
    url: str, timeout: float = TIMEOUT, retries: int = RETRIES, backoff: float = BACKOFF
) -> str:
    """Return a small text file from a URL, with the same retries as a download."""
    stream = HttpStream(url, timeout=timeout, retries=retries, backoff=backoff)
    try:
        return stream.read().decode("utf-8", errors="replace")
    finally:
        stream.close()


def url_file_name(url: str) -> str:
    """Return the last path segment of a URL."""
    return posixpath.basename(urllib.parse.urlsplit(url).path) or "download"


class _KeepHead(urllib.request.HTTPRedirectHandler):
    """Redirects as urllib's, but a HEAD stays a HEAD (urllib's asks the new place with GET,
    which moves the file a HEAD was there to spare)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        found = super().redirect_request(req, fp, code, msg, headers, newurl)
        if found is not None and req.get_method() == "HEAD":
            found.method = "HEAD"
        return found


#: The one HTTP client of the downloads: urllib's, its redirects keeping HEAD.
_OPENER = urllib.request.build_opener(_KeepHead())


def remote_identity(
    url: str, timeout: float = TIMEOUT, retries: int = RETRIES
) -> tuple[int | None, str | None]:
    """Return what identifies a remote file's version without reading it: size and ETag.

    Asked with HEAD: a GET closed at once still moves what the connection's buffers take (3.9
    of a 4.4 MB file over loopback). A server that refuses HEAD (405, or 403 from a URL signed
    for GET only) is asked with a GET, whose error, if any, is the one reported."""
    try:
        stream = HttpStream(url, timeout=timeout, retries=retries, head=True)
    except HttpStatusError:
        stream = HttpStream(url, timeout=timeout, retries=retries)
    try:
        return stream.size, stream.etag
    finally:
        stream.close()
