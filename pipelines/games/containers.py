"""PGN in other containers: gzip, bzip2 and zip, and sources of many files, decompressed on
the way in (nothing is stored decompressed).

Each is told by its first bytes, as zstd is (decompress.decompressed_chunks dispatches here).
Output is made a bounded piece at a time, whatever the compression ratio. A truncated or
corrupt stream raises CorruptInput, one line naming what is wrong.
"""

from __future__ import annotations

import bz2
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO, Any

from pipelines.errors import CorruptInput
from pipelines.sources.open import CountingReader, FileSequence, Readable

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
#: A zip archive starts with a member's local header (or, empty, with its end record).
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")

#: Most text made from one piece of input (decompressors are asked for no more at once).
_OUTPUT_BYTES = 1 << 20

#: Zip members read as PGN: names ending so (any case); other members are left out.
PGN_MEMBER_SUFFIXES = (".pgn",)


def container_of(head: bytes) -> str | None:
    """Return "gzip", "bzip2" or "zip" for the first bytes of such a stream, else None."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(BZIP2_MAGIC):
        return "bzip2"
    if head.startswith(ZIP_MAGICS):
        return "zip"
    return None


def container_chunks(
    kind: str, rest: Readable, source: Readable, read_size: int = 1 << 20
) -> Iterator[bytes]:
    """Yield the PGN text of a stream of container `kind` (see container_of).

    `rest` reads the whole stream (its first bytes included); `source` is the stream as it was
    opened, whose file a zip archive is read from where it has one.
    """
    if kind == "gzip":
        return gzip_chunks(rest, read_size)
    if kind == "bzip2":
        return bzip2_chunks(rest, read_size)
    return zip_chunks(rest, _seekable_file(source), read_size)


def gzip_chunks(stream: Readable, read_size: int = 1 << 20) -> Iterator[bytes]:
    """Yield the decompressed bytes of a gzip stream (any number of members, as `cat a.gz
    b.gz` makes), failing on a truncated or corrupt one."""
    decompressor = zlib.decompressobj(wbits=31)
    started = False  # a member has begun and not ended
    member_start = taken = 0
    while data := stream.read(read_size):
        taken += len(data)
        while data:
            try:
                out = decompressor.decompress(data, _OUTPUT_BYTES)
                started = True
                while len(out) == _OUTPUT_BYTES and not decompressor.eof:
                    yield out
                    out = decompressor.decompress(decompressor.unconsumed_tail, _OUTPUT_BYTES)
            except zlib.error as exc:
                raise CorruptInput(
                    f"corrupt gzip data in the member at compressed byte {member_start}: {exc}"
                ) from None
            if out:
                yield out
            data = decompressor.unconsumed_tail
            if decompressor.eof:
                data = decompressor.unused_data
                member_start = taken - len(data)
                decompressor = zlib.decompressobj(wbits=31)
                started = False
                if not data.strip(b"\x00"):
                    break  # (zeros padding the last member)
    if started:
        raise CorruptInput(
            f"truncated gzip stream: the member at compressed byte {member_start} ends early, "
            f"at byte {taken}"
        )


def bzip2_chunks(stream: Readable, read_size: int = 1 << 20) -> Iterator[bytes]:
    """Yield the decompressed bytes of a bzip2 stream (any number of streams, as pbzip2
    writes), failing on a truncated or corrupt one."""
    decompressor = bz2.BZ2Decompressor()
    started = False
    member_start = taken = 0
    while data := stream.read(read_size):
        taken += len(data)
        while True:
            try:
                out = decompressor.decompress(data, _OUTPUT_BYTES)
            except (OSError, ValueError) as exc:
                raise CorruptInput(
                    f"corrupt bzip2 data in the stream at compressed byte {member_start}: {exc}"
                ) from None
            data = b""
            started = True
            if out:
                yield out
            if decompressor.eof:
                data = decompressor.unused_data
                member_start = taken - len(data)
                decompressor = bz2.BZ2Decompressor()
                started = False
                if not data:
                    break
            elif decompressor.needs_input:
                break
    if started:
        raise CorruptInput(
            f"truncated bzip2 stream: the stream at compressed byte {member_start} ends early, "
            f"at byte {taken}"
        )


def zip_chunks(
    stream: Readable, file: IO[bytes] | None, read_size: int = 1 << 20
) -> Iterator[bytes]:
    """Yield the PGN text of a zip archive's .pgn members, in the archive's order, each
    member's text ending with a blank line (members are games of one source).

    A zip's index is at its end: the stream is read through first (so that it is counted and
    hashed), then the archive is read from `file`, the file it is in, or, for a stream that
    has none (stdin, a URL), from a temporary copy of its compressed bytes.
    """
    if file is not None:
        while stream.read(read_size):
            pass
        yield from _zip_members(file, read_size)
        return
    with tempfile.TemporaryFile(prefix="chesspipe-zip-") as copy:
        shutil.copyfileobj(stream, copy, read_size)
        copy.seek(0)
        yield from _zip_members(copy, read_size)


def _zip_members(file: IO[bytes], read_size: int) -> Iterator[bytes]:
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError) as exc:
        raise CorruptInput(f"corrupt zip archive: {exc}") from None
    with archive:
        members = [
            info
            for info in archive.infolist()
            if not info.is_dir() and info.filename.lower().endswith(PGN_MEMBER_SUFFIXES)
        ]
        if not members and archive.infolist():
            names = ", ".join(info.filename for info in archive.infolist()[:5])
            raise CorruptInput(f"zip archive without a .pgn member (it holds {names})")
        for info in members:
            yield from part_text(_member_chunks(archive, info, read_size))


def _member_chunks(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, read_size: int
) -> Iterator[bytes]:
    try:
        with archive.open(info) as member:
            while chunk := member.read(read_size):
                yield chunk
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
        raise CorruptInput(f"corrupt zip member {info.filename}: {exc}") from None


def part_text(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Yield the text of one part of a source of many (a zip member, a file of a folder) as
    the scanner reads a whole source: a UTF-8 byte order mark at its start left out, CRLF
    line ends read as LF, and a blank line at its end, so that its last game ends there."""
    first = True
    carry = b""  # a CR at the end of the last chunk, which a LF may follow
    for chunk in chunks:
        if not chunk:
            continue
        if first:
            chunk = chunk.removeprefix(b"\xef\xbb\xbf")
            first = False
        chunk = carry + chunk
        carry = b""
        if chunk.endswith(b"\r"):
            chunk, carry = chunk[:-1], b"\r"
        if b"\r\n" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n")
        if chunk:
            yield chunk
    yield carry + b"\n\n"


def _seekable_file(source: Readable) -> IO[bytes] | None:
    """Return the seekable file a source opened as a path reads, or None (stdin, a URL)."""
    stream: Any = source.stream if isinstance(source, CountingReader) else source
    if isinstance(stream, FileSequence):
        stream = stream.current
    try:
        if stream is not None and stream.seekable() and stream.name != 0:
            return stream
    except (AttributeError, ValueError, OSError):
        pass
    return None
