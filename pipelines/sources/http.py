"""HTTP(S) downloads of dumps: streaming with retries, `Range` resume, checksums and a cache."""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import posixpath
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO

from pipelines.errors import ChesspipeError
from schemas.version import __version__

USER_AGENT = f"chesspipe/{__version__}"

#: What a download is trying as it tries: connecting (info), a retry and its wait (warning).
#: The command line shows them (pipelines/cli.py); a library caller configures logging.
_log = logging.getLogger(__name__)

#: Name of the checksum list Lichess publishes beside its dumps.
CHECKSUMS_NAME = "sha256sums.txt"

#: Errors after which a request is worth repeating.
_TRANSIENT = (
    urllib.error.URLError,
    http.client.HTTPException,
    ConnectionError,
    socket.timeout,
    TimeoutError,
    OSError,
)


class CannotVerify(ChesspipeError):
    """A dump's published checksum could not be found; the caller may turn verification off."""


class HttpStatusError(ChesspipeError):
    """The server answered with an HTTP error status."""

    def __init__(self, url: str, status: int, reason: str) -> None:
        super().__init__(f"{url}: HTTP {status} {reason}".rstrip())
        self.status = status


def _retryable_status(status: int) -> bool:
    return status >= 500 or status in (408, 425, 429)


def _backoff_delay(backoff: float, failures: int) -> float:
    """Return the seconds to wait after `failures` failures in a row: doubling, at most 30."""
    return min(30.0, backoff * 2 ** (failures - 1))


class HttpStream:
    """A remote file read like a local one: reconnects with backoff and resumes with `Range`.

    `start` skips that many leading bytes (a download resumed from a cached part).
    A dropped connection, a timeout or a 5xx answer is retried up to `retries` times in a row;
    any progress resets the count. 4xx answers fail at once.
    """

    def __init__(
        self,
        url: str,
        timeout: float = 60.0,
        retries: int = 5,
        backoff: float = 1.0,
        start: int = 0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.offset = start
        self.size: int | None = None
        self.etag: str | None = None
        self.reconnects = 0
        self._sleep = sleep
        self._response: http.client.HTTPResponse | None = None
        self._failures = 0
        self._connect()

    def _request(self) -> http.client.HTTPResponse:
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
        if self.offset:
            headers["Range"] = f"bytes={self.offset}-"
            if self.etag:
                headers["If-Range"] = self.etag
        request = urllib.request.Request(self.url, headers=headers)
        try:
            response: http.client.HTTPResponse = urllib.request.urlopen(
                request, timeout=self.timeout
            )
        except urllib.error.HTTPError as exc:
            answer = exc.headers
            exc.close()
            if exc.code == 416 and self.offset:
                total = (answer.get("Content-Range") or "").rpartition("/")[2]
                if total.isdigit() and int(total) == self.offset:
                    self.size = int(total)
                    raise _AtEnd() from None
            error = HttpStatusError(self.url, exc.code, str(exc.reason))
            if _retryable_status(exc.code):
                raise _Transient(str(error)) from None
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
            except (_Transient, *_TRANSIENT) as exc:
                self._failed(exc)

    def _failed(self, exc: BaseException) -> None:
        """Count a failure in a row; wait before the next try, or give up.

        A host that cannot be resolved (no network, a mistyped name) fails at once: waiting
        does not bring a name back.
        """
        self._close_response()
        unresolved = _unresolved_host(exc)
        if unresolved is not None:
            host = urllib.parse.urlsplit(self.url).hostname
            raise ChesspipeError(
                f"{self.url}: cannot resolve the host {host} ({unresolved}): no network, "
                "or no such host"
            ) from None
        self._failures += 1
        reason = str(exc) or type(exc).__name__
        if self._failures > self.retries:
            raise ChesspipeError(
                f"{self.url}: giving up after {self.retries} retries "
                f"at byte {self.offset}: {reason}"
            ) from None
        self.reconnects += 1
        delay = _backoff_delay(self.backoff, self._failures)
        said = reason if reason.startswith(self.url) else f"{self.url}: {reason}"
        _log.warning("%s; retry %d of %d in %g s", said, self._failures, self.retries, delay)
        self._sleep(delay)

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
                raise _Transient("connection closed while skipping to the resume point")
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
            except _TRANSIENT as exc:
                self._failed(exc)
                self._response = None
                continue
            if data:
                self.offset += len(data)
                self._failures = 0
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


def _unresolved_host(exc: BaseException) -> str | None:
    """Return why a host name could not be resolved, if that is what failed (else None)."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, socket.gaierror):
        return str(reason.strerror or reason)
    return None


class _Transient(Exception):
    """A failure worth retrying."""


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


def fetch_text(url: str, timeout: float = 60.0, retries: int = 5, backoff: float = 1.0) -> str:
    """Return a small text file from a URL, with the same retries as a download."""
    stream = HttpStream(url, timeout=timeout, retries=retries, backoff=backoff)
    try:
        return stream.read().decode("utf-8", errors="replace")
    finally:
        stream.close()


def checksums_url(url: str) -> str:
    """Return the URL of the checksum list beside a dump."""
    parts = urllib.parse.urlsplit(url)
    folder = posixpath.dirname(parts.path)
    return urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc, f"{folder}/{CHECKSUMS_NAME}", "", "")
    )


#: A `sha256sum` line: the digest, one space, a space (text mode) or `*` (binary), the name.
_CHECKSUM_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *]?(\S+)")


def parse_checksums(text: str, *, skip_bad_lines: bool = False) -> dict[str, str]:
    """Return {file name: sha256} from `sha256sum` output (`<hex>  <name>` lines).

    Blank lines and `#` comments are ignored; names lose any folder. Any other line that is
    not a checksum line is an error naming it, unless `skip_bad_lines`.
    """
    sums = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _CHECKSUM_LINE.fullmatch(line)
        if match is None:
            if skip_bad_lines:
                continue
            raise ChesspipeError(f"checksum list line {number} is not '<sha256>  <name>': {raw!r}")
        digest, name = match.groups()
        sums[name.rsplit("/", 1)[-1]] = digest.lower()
    return sums


def published_sha256(
    url: str, timeout: float = 60.0, retries: int = 5, backoff: float = 1.0
) -> str:
    """Return the sha256 published for a dump in the `sha256sums.txt` beside it."""
    list_url = checksums_url(url)
    try:
        text = fetch_text(list_url, timeout=timeout, retries=retries, backoff=backoff)
    except HttpStatusError as exc:
        raise CannotVerify(f"cannot verify {url}: {list_url} answered HTTP {exc.status}") from None
    name = url_file_name(url)
    # Only this dump's line matters: a stray line elsewhere in the list does not stop it.
    digest = parse_checksums(text, skip_bad_lines=True).get(name)
    if digest is None:
        raise CannotVerify(f"cannot verify {url}: {name} is not listed in {list_url}")
    return digest


def url_file_name(url: str) -> str:
    """Return the last path segment of a URL."""
    return posixpath.basename(urllib.parse.urlsplit(url).path) or "download"


def remote_identity(url: str, timeout: float = 60.0, retries: int = 5) -> dict[str, Any]:
    """Return what identifies a remote file's version without reading it: size and ETag."""
    stream = HttpStream(url, timeout=timeout, retries=retries)
    try:
        return {"url": url, "size": stream.size, "etag": stream.etag}
    finally:
        stream.close()


class CachingReader:
    """Reads a cached part file, then the rest from the network, appending it to the part.

    When the last byte has been read the part is checked (size, and sha256 when known) and
    renamed to its final name; a part that fails the check is deleted.
    """

    def __init__(
        self, part: Path, final: Path, stream: HttpStream, expected_sha256: str | None
    ) -> None:
        self.part = part
        self.final = final
        self.stream = stream
        self.expected_sha256 = expected_sha256
        self._have = part.stat().st_size if part.exists() else 0
        self._cached = open(part, "rb") if self._have else None  # noqa: SIM115 (closed in close)
        self._sink = open(part, "ab")  # noqa: SIM115
        self._digest = hashlib.sha256()
        self._done = False

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            parts = []
            while block := self.read(1 << 20):
                parts.append(block)
            return b"".join(parts)
        if self._cached is not None:
            data = self._cached.read(size)
            if data:
                self._digest.update(data)
                return data
            self._cached.close()
            self._cached = None
        data = self.stream.read(size)
        if data:
            self._sink.write(data)
            self._digest.update(data)
        elif not self._done:
            self._done = True
            self._finish()
        return data

    def _finish(self) -> None:
        self._sink.flush()
        os.fsync(self._sink.fileno())
        self._sink.close()
        got = self._digest.hexdigest()
        if self.expected_sha256 is not None and got != self.expected_sha256:
            self.part.unlink(missing_ok=True)
            raise ChesspipeError(
                f"{self.stream.url}: sha256 mismatch (got {got}, published {self.expected_sha256})"
            )
        os.replace(self.part, self.final)

    def close(self) -> None:
        """Close the files and the connection; a part stays for a later resume."""
        if self._cached is not None:
            self._cached.close()
        if not self._sink.closed:
            self._sink.close()
        self.stream.close()


class VerifiedFile:
    """Reads a cached download; at its end, deletes it and fails if it has the wrong sha256."""

    def __init__(self, handle: BinaryIO, path: Path, expected_sha256: str | None) -> None:
        self.handle = handle
        self.path = path
        self.expected_sha256 = expected_sha256
        self._digest = hashlib.sha256()
        self._done = False

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self._digest.update(data)
        at_end = size is None or size < 0 or (not data and size != 0)
        if at_end and not self._done:
            self._done = True
            got = self._digest.hexdigest()
            if self.expected_sha256 is not None and got != self.expected_sha256:
                self.path.unlink(missing_ok=True)
                raise ChesspipeError(
                    f"cached {self.path} does not match its published sha256 "
                    f"(got {got}); deleted it, run again to download it anew"
                )
        return data


def cache_paths(cache: Path, url: str) -> tuple[Path, Path]:
    """Return (final file, hidden part file) of a URL in a cache folder."""
    name = url_file_name(url)
    return Path(cache) / name, Path(cache) / f".{name}.part"


@contextmanager
def open_url(
    url: str,
    timeout: float = 60.0,
    retries: int = 5,
    backoff: float = 1.0,
    cache: Path | None = None,
    expected_sha256: str | None = None,
) -> Iterator[tuple[BinaryIO, int | None]]:
    """Open a URL for streaming; yield a reader and the total size if known.

    With `cache`, the compressed file is kept there: a complete copy is read instead of the
    network, and a part left by an interrupted run is resumed.
    """
    if cache is None:
        stream = HttpStream(url, timeout=timeout, retries=retries, backoff=backoff)
        try:
            yield stream, stream.size  # type: ignore[misc]
        finally:
            stream.close()
        return
    final, part = cache_paths(Path(cache), url)
    if final.exists():
        with open(final, "rb") as handle:
            yield VerifiedFile(handle, final, expected_sha256), os.fstat(handle.fileno()).st_size  # type: ignore[misc]
        return
    reader = _resumed(url, final, part, expected_sha256, timeout, retries, backoff)
    try:
        yield reader, reader.stream.size  # type: ignore[misc]
    finally:
        reader.close()


def _resumed(
    url: str,
    final: Path,
    part: Path,
    expected_sha256: str | None,
    timeout: float,
    retries: int,
    backoff: float,
) -> CachingReader:
    """Return a reader of a URL that resumes after the bytes of a part file and completes it.

    A part longer than the remote file (the server refuses the range, or says the file is
    shorter) is from another file: it is dropped and the download starts over.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.exists() else 0
    options: dict[str, Any] = {"timeout": timeout, "retries": retries, "backoff": backoff}
    try:
        stream = HttpStream(url, start=have, **options)
        too_long = have > 0 and stream.size is not None and have > stream.size
        if too_long:
            stream.close()
    except HttpStatusError as exc:
        too_long = have > 0 and exc.status == 416
        if not too_long:
            raise
    if too_long:
        part.unlink()
        stream = HttpStream(url, **options)
    return CachingReader(part, final, stream, expected_sha256)


def download_file(
    url: str,
    final: Path,
    part: Path,
    expected_sha256: str | None,
    progress: Callable[[int, int | None], None] | None = None,
    timeout: float = 60.0,
    retries: int = 5,
    backoff: float = 1.0,
) -> Path:
    """Download a URL to `final` through `part`, resuming a part left by an earlier run.

    The part is checked (size, and sha256 when given) before it is renamed to `final`; a part
    that fails the check is deleted. `progress(bytes done, total or None)` follows each block.
    """
    reader = _resumed(url, final, part, expected_sha256, timeout, retries, backoff)
    done = 0
    try:
        while block := reader.read(1 << 20):
            done += len(block)
            if progress is not None:
                progress(done, reader.stream.size)
    finally:
        reader.close()
    return final


class RangeFile:
    """A remote file read by byte ranges (HTTP `Range: bytes=a-b`), seekable like a local one."""

    def __init__(
        self, url: str, size: int, timeout: float = 60.0, retries: int = 5, backoff: float = 0.5
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
        for attempt in range(self.retries + 1):
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
                    raise _Transient(f"short range answer: {len(data)} bytes")
                self.position = end
                return data
            except urllib.error.HTTPError as exc:
                exc.close()
                if not _retryable_status(exc.code) or attempt == self.retries:
                    raise HttpStatusError(self.url, exc.code, str(exc.reason)) from None
            except (_Transient, *_TRANSIENT) as exc:
                if attempt == self.retries:
                    raise ChesspipeError(f"{self.url}: giving up on a byte range: {exc}") from None
            time.sleep(_backoff_delay(self.backoff, attempt + 1))
        raise AssertionError("unreachable")
