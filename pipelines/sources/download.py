"""Downloads: a URL opened for streaming, through the download cache (resumed, checked) or not."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from pipelines.errors import ChesspipeError
from pipelines.sources.http import HttpStatusError, HttpStream, url_file_name
from pipelines.sources.retry import BACKOFF, RETRIES, TIMEOUT


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
    timeout: float = TIMEOUT,
    retries: int = RETRIES,
    backoff: float = BACKOFF,
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
    timeout: float = TIMEOUT,
    retries: int = RETRIES,
    backoff: float = BACKOFF,
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
