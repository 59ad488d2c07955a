"""Where games come from: a file, a folder or a glob of files, stdin, an HTTP(S) URL or a
Lichess month, as a byte stream."""

from __future__ import annotations

import glob
import hashlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from pipelines.errors import ChesspipeError

LICHESS_BASE = "https://database.lichess.org"
_LICHESS_RE = re.compile(r"^lichess:(\d{4}-\d{2})$")


def lichess_url(month: str, variant: str = "standard") -> str:
    """Return the official Lichess dump URL of a month."""
    return f"{LICHESS_BASE}/{variant}/lichess_db_{variant}_rated_{month}.pgn.zst"


@dataclass(frozen=True)
class SourceList:
    """Several SOURCE arguments read as one source, in the order given: each a file, a folder
    or a glob of files (not standard input, a URL or a Lichess month)."""

    items: tuple[str, ...]

    def __str__(self) -> str:
        return " ".join(self.items)

    def files(self) -> list[str]:
        """The files of the sources, in the order given (a folder's or a glob's sorted)."""
        found: list[str] = []
        for item in self.items:
            if item == "-" or is_url(item) or item.startswith("lichess:"):
                raise ChesspipeError(
                    f"{item}: several sources are read as one, each a file, a folder or a "
                    "glob of files (not -, a URL or lichess:YYYY-MM)"
                )
            listed = source_files(item)
            if listed is None:
                if not os.path.isfile(item):
                    raise ChesspipeError(f"cannot open {item}: no such file")
                listed = [item]
            found += listed
        return found


#: What a command reads games from: one SOURCE, or several read as one.
Source = str | SourceList


def as_source(texts: Sequence[str]) -> Source:
    """The source of one or more SOURCE arguments."""
    return texts[0] if len(texts) == 1 else SourceList(tuple(texts))


def resolve(source: Source, variant: str = "standard") -> str:
    """Return the path or URL a SOURCE argument names (several: their names, joined)."""
    if isinstance(source, SourceList):
        return str(source)
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
    kind: str  # "file", "files" (a folder or a glob: FileSequence), "stdin" or "url"


@contextmanager
def open_source(
    source: Source, variant: str = "standard", **http_options: object
) -> Iterator[OpenSource]:
    """Open a SOURCE for streaming: a path, a folder or a glob of files (read as one source:
    FileSequence), '-' for stdin, a URL or lichess:YYYY-MM; or several paths, folders and
    globs (a SourceList), read as one in the order given."""
    resolved = resolve(source, variant)
    files = source.files() if isinstance(source, SourceList) else source_files(resolved)
    if files is not None:
        sequence = FileSequence(files)
        with sequence:
            total = sum(os.stat(path).st_size for path in files)
            yield OpenSource(resolved, total, CountingReader(sequence), "files")
        return
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


#: What a file of games in a folder is called: PGN, compressed or not, or a zip archive.
GAME_FILE_SUFFIXES = (".pgn", ".pgn.zst", ".pgn.gz", ".pgn.bz2", ".zip")

_GLOB_CHARACTERS = re.compile(r"[*?\[]")


def source_files(resolved: str) -> list[str] | None:
    """Return the files a folder or a glob names (sorted by name), or None for a source of
    one stream. A folder's files are those with GAME_FILE_SUFFIXES, in it and below it; `**`
    in a glob matches folders at any depth."""
    if is_url(resolved) or resolved == "-":
        return None
    if os.path.isdir(resolved):
        found = [
            os.path.join(folder, name)
            for folder, _, names in os.walk(resolved)
            for name in names
            if name.lower().endswith(GAME_FILE_SUFFIXES)
        ]
        if not found:
            suffixes = ", ".join(GAME_FILE_SUFFIXES)
            raise ChesspipeError(f"no file of games ({suffixes}) in the folder {resolved}")
        return sorted(found)
    if os.path.exists(resolved) or not _GLOB_CHARACTERS.search(resolved):
        return None
    # `**` matches any depth of folders, as in a shell with globstar.
    found = sorted(path for path in glob.glob(resolved, recursive=True) if os.path.isfile(path))
    if not found:
        raise ChesspipeError(f"no file matches {resolved}")
    return found


class FileSequence:
    """Many files read as one source, a file at a time: `read` returns b"" at the end of
    each, `next_file` goes on to the next (readers of games treat each file as a part of the
    source: pipelines.games.decompress)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        self.index = -1
        self.current: BinaryIO | None = None

    def __enter__(self) -> FileSequence:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def name(self) -> str:
        """The file being read."""
        return self.paths[self.index] if 0 <= self.index < len(self.paths) else ""

    def next_file(self) -> bool:
        """Open the next file; return False when none is left."""
        self.close()
        self.index += 1
        if self.index >= len(self.paths):
            return False
        try:
            self.current = open(self.paths[self.index], "rb")  # noqa: SIM115 (closed in close)
        except OSError as exc:
            raise ChesspipeError(f"cannot open {self.name}: {exc.strerror}") from None
        return True

    def read(self, size: int = -1, /) -> bytes:
        return self.current.read(size) if self.current is not None else b""

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


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
