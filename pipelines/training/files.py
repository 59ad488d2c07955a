"""Training files by extension (.plain or .binpack): read streaming, written whole or not at all.

Every format error becomes a one-line `CorruptInput` naming the file and where; a record the
writer cannot take (an illegal move, a ply past 14 bits) names its input and its number.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pipelines.errors import ChesspipeError, CorruptInput, write_error
from pipelines.progress import ReadCallback, ReadProgress
from schemas.atomic_files import atomic_path
from schemas.binpack import BinpackFormatError, BinpackWriter, iter_binpack
from schemas.plain import PlainFormatError, PlainRecord, iter_records

FORMATS = ("plain", "binpack")


def training_format(path: Path) -> str:
    """Return 'plain' or 'binpack' from a file name's extension."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ChesspipeError(f"{path}: a training file ends in .plain or .binpack")
    return suffix


@dataclass
class BadInput:
    """What a tool passed over in its input with `skip_bad`: counts by reason (`bad_record`, a
    `.plain` record; `bad_chain`, the rest of a `.binpack` block from a chain that does not
    decode; `bad_block`, the rest of a `.binpack` from a block that cannot be read) and the
    first message, naming the place."""

    counts: dict[str, int] = field(default_factory=dict)
    first: str | None = None

    def __call__(self, reason: str, message: str) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if self.first is None:
            self.first = message

    def to_json(self) -> dict[str, Any]:
        return {"counts": dict(sorted(self.counts.items())), "first": self.first}


def read_training(
    path: Path,
    *,
    legal: bool = False,
    bad: BadInput | None = None,
    progress: ReadCallback | None = None,
) -> Iterator[PlainRecord]:
    """Yield the records of a .plain or .binpack file, streaming.

    With `legal`, each .plain record's position and move are checked as the .binpack writer
    checks them (schemas/legal_record.py), the error naming its line; a .binpack's records are
    always checked as they are decoded. With `bad`, what breaks the format is counted there and
    passed over (schemas' readers say how much); otherwise it fails as `CorruptInput`.
    `progress` hears of the bytes and records read every PROGRESS_RECORDS records, and once
    the file is read whole.
    """
    kind = training_format(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, also when the caller stops early
    except OSError as exc:
        raise ChesspipeError(f"cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        records = (
            iter_binpack(handle, str(path), bad=bad)
            if kind == "binpack"
            else iter_records(handle, str(path), legal=legal, bad=bad)
        )
        if progress is not None:
            records = _reported(records, handle, progress)
        try:
            yield from records
        except (BinpackFormatError, PlainFormatError) as exc:
            raise CorruptInput(str(exc)) from None


#: Records read between two progress reports (a report asks the file where it is).
PROGRESS_RECORDS = 8192


def _reported(
    records: Iterator[PlainRecord], handle: BinaryIO, progress: ReadCallback
) -> Iterator[PlainRecord]:
    """Yield `records`, reporting the bytes of `handle` read and the records read so far."""
    started = time.monotonic()
    total = os.fstat(handle.fileno()).st_size
    count = 0
    for record in records:
        count += 1
        if count % PROGRESS_RECORDS == 0:
            progress(ReadProgress(handle.tell(), total, count, time.monotonic() - started))
        yield record
    progress(ReadProgress(total, total, count, time.monotonic() - started, done=True))


@contextmanager
def training_writer(
    path: Path, *, kind: str | None = None
) -> Iterator[Callable[[PlainRecord], None]]:
    """Yield a function that writes one record to `path`; the file appears only if all went well.

    With `kind` ('plain' or 'binpack'), `path` is a file of an OutputSet, written as it is
    (the set publishes it); otherwise the format is `path`'s extension.
    """
    if kind is None:
        with atomic_path(path) as tmp, training_writer(tmp, kind=training_format(path)) as write:
            yield write
        return
    with open(path, "wb") as handle:
        if kind == "plain":

            def write_plain(record: PlainRecord) -> None:
                handle.write(record.format().encode("ascii"))

            yield write_plain
        else:
            writer = BinpackWriter(handle)
            yield writer.add
            writer.close()


def write_training(
    records: Iterable[PlainRecord], path: Path, source: str | Callable[[int], str]
) -> int:
    """Write records to a .plain or .binpack file whole or not at all; return the count.

    `source` names the records' origin in the error about one that cannot be written: a name
    (the error adds "record N") or a function of N that says where the Nth record came from.
    """
    count = 0
    try:
        with training_writer(path) as write:
            for count, record in enumerate(records, 1):  # noqa: B007 - the count is returned
                try:
                    write(record)
                except ValueError as exc:
                    where = source(count) if callable(source) else f"{source}: record {count}"
                    raise ChesspipeError(f"{where}: {exc}") from None
    except OSError as exc:
        raise write_error(exc, path) from None
    return count


def count_records(path: Path) -> int:
    """Return how many records a training file holds (a .binpack is decoded to count them)."""
    if training_format(path) == "plain":
        lines = 0
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    lines += chunk.count(b"\n")
        except OSError as exc:
            raise ChesspipeError(f"cannot read {path}: {exc.strerror or exc}") from None
        return -(-lines // 6)
    return sum(1 for _ in read_training(path))
