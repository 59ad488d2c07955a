"""Where games come from: a file, stdin, an HTTP(S) URL or a Lichess month, as a byte stream."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from pipelines.errors import ChesspipeError

LICHESS_BASE = "https://database.lichess.org"
_LICHESS_RE = re.compile(r"^lichess:(\d{4}-\d{2})$")


def lichess_url(month: str, variant: str = "standard") -> str:
    """Return the official Lichess dump URL of a month."""
    return f"{LICHESS_BASE}/{variant}/lichess_db_{variant}_rated_{month}.pgn.zst"


def resolve(source: str, variant: str = "standard") -> str:
    """Return the path or URL a SOURCE argument names."""
    match = _LICHESS_RE.match(source)
    if match:
        return lichess_url(match.group(1), variant)
    if source.startswith("lichess:"):
        raise ChesspipeError(f"bad source {source!r}: expected lichess:YYYY-MM")
    return source


def is_url(source: str) -> bool:
    """Tell whether a resolved source is an HTTP(S) URL."""
    return source.startswith(("http://", "https://"))


@dataclass
class CountingReader:
    """A binary reader that counts and hashes the bytes read through it."""

    stream: Readable
    bytes_read: int = 0
    sha256: hashlib._Hash = field(default_factory=hashlib.sha256)

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.bytes_read += len(data)
        self.sha256.update(data)
        return data


@dataclass
class OpenSource:
    """An opened source: its name, total compressed size if known, and a counting reader."""

    name: str
    size: int | None
    reader: CountingReader
    kind: str  # "file", "stdin" or "url"


@contextmanager
def open_source(
    source: str, variant: str = "standard", **http_options: object
) -> Iterator[OpenSource]:
    """Open a SOURCE for streaming: a path, '-' for stdin, a URL or lichess:YYYY-MM."""
    resolved = resolve(source, variant)
    if resolved == "-":
        yield OpenSource("-", None, CountingReader(sys.stdin.buffer), "stdin")
        return
    if is_url(resolved):
        from pipelines.sources.download import open_url

        with open_url(resolved, **http_options) as (stream, size):  # type: ignore[arg-type]
            yield OpenSource(resolved, size, CountingReader(stream), "url")
        return
    try:
        handle = open(resolved, "rb")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise ChesspipeError(f"cannot open {resolved}: {exc.strerror}") from None
    with handle:
        yield OpenSource(
            resolved, os.fstat(handle.fileno()).st_size, CountingReader(handle), "file"
        )


class Readable(Protocol):
    """Anything with a binary `read(size)`: files, sockets' responses, stdin."""

    def read(self, size: int = -1, /) -> bytes: ...


@contextmanager
def open_location(location: str, size: int) -> Iterator[BinaryIO]:
    """Open a local path, or an http(s) URL of `size` bytes read by byte ranges."""
    if location.startswith(("http://", "https://")):
        from pipelines.sources.ranges import RangeFile

        yield RangeFile(location, size)  # type: ignore[misc]
        return
    with open(location, "rb") as handle:
        yield handle
