"""`.plain` <-> `.binpack` through the compiled codec (`_codec.c`), the bytes and errors of the
Python path (schemas/plain.py, schemas/binpack.py).

The compiled code takes the records of the plain shape Stockfish's tools and chesspipe write,
and refuses the rest: a `.plain` record it refuses is read and written by the Python reader and
writer, which go on from where the compiled writer stood (BinpackWriter.resume) and hand back
as soon as the compiled writer takes their state; a `.binpack` block it refuses is decoded
whole by the Python reader. So what the Python path would write, or the error it would raise
(naming the record, its line or block), comes out the same, only faster. Without the compiled
module (`available()` is False), `convert` keeps to the Python path.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import BinaryIO

from pipelines.errors import ChesspipeError, CorruptInput, write_error
from pipelines.progress import ReadCallback, ReadProgress
from pipelines.training.files import PROGRESS_RECORDS
from schemas.atomic_files import atomic_path
from schemas.binpack import (
    BinpackFormatError,
    BinpackWriter,
    WriterState,
    block_name,
    block_records,
    iter_blocks,
)
from schemas.plain import PlainFormatError, read_record_at

try:
    from pipelines.training import _codec
except ImportError:  # not built: the Python path
    _codec = None  # type: ignore[assignment]

#: Bytes of `.plain` read at a time.
CHUNK = 1 << 22
#: Why the encoder stopped: `limit` records taken, a record refused, a record unfinished.
_LIMIT, _REFUSED, _UNFINISHED = 0, 1, 2
#: Bytes past which an unfinished record is left to the Python reader (it fails on long lines).
MAX_PENDING = 1 << 16


def available() -> bool:
    """Whether the compiled codec is built."""
    return _codec is not None


def convert_file(source: Path, out: Path, *, progress: ReadCallback | None = None) -> int:
    """Write `source` (.plain or .binpack) as `out` (the other one), whole or not at all, as
    write_training(read_training(source), out, str(source)) would; return the records."""
    to_binpack = out.suffix.lower() == ".binpack"
    try:
        with atomic_path(out) as tmp, open(tmp, "wb") as sink:
            try:
                handle = open(source, "rb")  # noqa: SIM115 - closed below
            except OSError as exc:
                raise ChesspipeError(f"cannot read {source}: {exc.strerror or exc}") from None
            with handle:
                report = _Reporter(handle, progress)
                if to_binpack:
                    records = _plain_to_binpack(handle, sink, str(source), report)
                else:
                    records = _binpack_to_plain(handle, sink, str(source), report)
                report.done(records)
    except OSError as exc:
        raise write_error(exc, out) from None
    return records


class _Reporter:
    """Progress of a read, as files.read_training reports it (bytes and records so far)."""

    def __init__(self, handle: BinaryIO, progress: ReadCallback | None) -> None:
        self.handle = handle
        self.progress = progress
        self.total = os.fstat(handle.fileno()).st_size
        self.started = time.monotonic()

    def __call__(self, bytes_read: int, records: int) -> None:
        if self.progress is not None:
            seconds = time.monotonic() - self.started
            self.progress(ReadProgress(bytes_read, self.total, records, seconds))

    def done(self, records: int) -> None:
        if self.progress is not None:
            seconds = time.monotonic() - self.started
            self.progress(ReadProgress(self.total, self.total, records, seconds, done=True))


def _plain_to_binpack(handle: BinaryIO, sink: BinaryIO, name: str, report: _Reporter) -> int:
    encoder = _codec.Encoder()
    records = 0
    data = b""
    base = 0  # the file offset of data[0]; the handle stands at base + len(data)
    position = 0
    ended = False
    while True:
        if not ended and len(data) - position < CHUNK:
            more = handle.read(CHUNK)
            ended = not more
            data, base, position = data[position:] + more, base + position, 0
            if more:
                continue
        position, taken, stopped, blocks = encoder.encode(data, position, PROGRESS_RECORDS)
        sink.write(blocks)
        records += taken
        if taken:
            report(base + position, records)
        if position == len(data) and ended:
            sink.write(encoder.close())
            return records
        if stopped == _LIMIT or (
            stopped == _UNFINISHED and not ended and len(data) - position <= MAX_PENDING
        ):
            continue  # more records, or an unfinished one: read on
        offset, records, finished = _by_python(
            encoder, handle, sink, name, base + position, records
        )
        if finished:
            return records
        if base <= offset <= base + len(data):
            position = offset - base
            handle.seek(base + len(data))
        else:
            data, base, position = b"", offset, 0
            handle.seek(offset)
            ended = False


def _by_python(
    encoder: _codec.Encoder, handle: BinaryIO, sink: BinaryIO, name: str, offset: int, records: int
) -> tuple[int, int, bool]:
    """Read and write the records from file offset `offset` by the Python path until the
    compiled writer takes the Python writer's state again; return the offset reached, the
    records so far and whether the file ended (its last block written)."""
    writer = BinpackWriter.resume(sink, WriterState(*encoder.state()))
    handle.seek(offset)
    while True:
        try:
            record = read_record_at(handle, name, lines_before=6 * records, number=records + 1)
        except PlainFormatError as exc:
            raise CorruptInput(str(exc)) from None
        if record is None:
            writer.close()
            return handle.tell(), records, True
        records += 1
        try:
            writer.add(record)
        except ValueError as exc:
            raise ChesspipeError(f"{name}: record {records}: {exc}") from None
        if encoder.set_state(writer.state()):
            return handle.tell(), records, False


def _binpack_to_plain(handle: BinaryIO, sink: BinaryIO, name: str, report: _Reporter) -> int:
    records = 0
    try:
        for offset, block in iter_blocks(handle, name):
            decoded = _codec.decode_block(block)
            if decoded is None:
                for record in block_records(block, block_name(name, offset)):
                    sink.write(record.format().encode("ascii"))
                    records += 1
            else:
                text, count = decoded
                sink.write(text)
                records += count
            report(offset + 8 + len(block), records)
    except BinpackFormatError as exc:
        raise CorruptInput(str(exc)) from None
    return records
