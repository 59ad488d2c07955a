"""Stockfish's `.plain` training records: six lines per position (fen, move, score, ply, result, e).

`score` and `result` are from the side to move; `result` is 1, 0 or -1; `score` fits in 16 bits;
moves are UCI with castling as the king's destination; lines end with '\\n' only and hold at
most MAX_LINE_BYTES (a FEN line is under 100 bytes), so a reader's memory stays bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from schemas.atomic_files import atomic_path

SCORE_MIN, SCORE_MAX = -32768, 32767

#: Stockfish's "no score" value, which trainers skip.
SCORE_NONE = 32002

#: Longest line a reader takes, its newline included.
MAX_LINE_BYTES = 4096

_KEYS = ("fen", "move", "score", "ply", "result")
_INTEGER = re.compile(r"-?[0-9]+")


class PlainFormatError(ValueError):
    """A .plain file that breaks the record format."""

    def __init__(self, message: str, *, long_line: bytes | None = None) -> None:
        super().__init__(message)
        #: The first bytes of a line too long to read, for a reader that passes over it.
        self.long_line = long_line


@dataclass(frozen=True)
class PlainRecord:
    """One training position."""

    fen: str
    move: str
    score: int
    ply: int
    result: int

    def __post_init__(self) -> None:
        if not SCORE_MIN <= self.score <= SCORE_MAX:
            raise ValueError(f"score {self.score} outside the signed 16-bit range")
        if self.result not in (-1, 0, 1):
            raise ValueError(f"result {self.result} is not -1, 0 or 1")
        if self.ply < 0:
            raise ValueError(f"negative ply {self.ply}")
        if any(c in self.fen + self.move for c in "\r\n"):
            raise ValueError("line break inside a field")

    def format(self) -> str:
        """Return the record's six lines."""
        return (
            f"fen {self.fen}\nmove {self.move}\nscore {self.score}\n"
            f"ply {self.ply}\nresult {self.result}\ne\n"
        )


def write_records(records: Iterable[PlainRecord], path: Path) -> int:
    """Write records to a .plain file that appears whole or not at all; return the count."""
    count = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="ascii", newline="\n") as handle:
        for record in records:
            handle.write(record.format())
            count += 1
    return count


def read_records(path: Path, *, legal: bool = False) -> Iterator[PlainRecord]:
    """Yield the records of a .plain file, failing on anything outside the format."""
    with open(path, "rb") as handle:
        yield from iter_records(handle, str(path), legal=legal)


#: What a reader's `bad` callback is told of a record it skipped: (reason, one-line message).
BadRecord = Callable[[str, str], None]


class _Lines:
    """The lines of a stream, counted, with one line of look-ahead; a line longer than
    MAX_LINE_BYTES fails unread (`skip_long` passes over it instead)."""

    def __init__(self, handle: BinaryIO, name: str) -> None:
        self.handle = handle
        self.name = name
        self.number = 0
        self._back: bytes | None = None

    def next(self) -> bytes | None:
        if self._back is not None:
            line, self._back = self._back, None
            self.number += 1
            return line
        line = self.handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return None
        self.number += 1
        if len(line) > MAX_LINE_BYTES:
            raise PlainFormatError(
                f"{self.name}:{self.number}: a line longer than {MAX_LINE_BYTES} bytes",
                long_line=line,
            )
        return line

    def push_back(self, line: bytes) -> None:
        self._back = line
        self.number -= 1

    def resync(self, long_line: bytes | None) -> None:
        """Pass over lines up to the next one that starts a record (`fen ...`)."""
        line = long_line
        while True:
            while line is not None and not line.endswith(b"\n"):  # the rest of a long line
                line = self.handle.readline(MAX_LINE_BYTES + 1) or None
            try:
                line = self.next()
            except PlainFormatError as exc:
                line = exc.long_line
                continue
            if line is None:
                return
            if line.startswith(b"fen "):
                self.push_back(line)
                return


def iter_records(
    handle: BinaryIO,
    name: str = "<plain>",
    *,
    legal: bool = False,
    bad: BadRecord | None = None,
) -> Iterator[PlainRecord]:
    """Yield the records of an open .plain stream, line by line.

    With `legal`, each record's position and move are checked too (schemas/legal_record.py).
    Errors name the stream, the line and the record (counted from 1). With `bad`, a record
    that breaks the format is reported to it (reason `bad_record`, the error's message) and
    skipped: the reader passes on to the next line that starts a record (`fen ...`).
    """
    lines = _Lines(handle, name)
    number = 0
    while True:
        number += 1
        try:
            first = lines.next()
            if first is None:
                return
            record = _one_record(first, lines, name, number, legal)
        except PlainFormatError as exc:
            if bad is None:
                raise PlainFormatError(_with_record(exc, number)) from None
            bad("bad_record", _with_record(exc, number))
            lines.resync(exc.long_line)
            continue
        yield record


def read_record_at(
    handle: BinaryIO, name: str, *, lines_before: int, number: int
) -> PlainRecord | None:
    """Read the one record that starts at `handle`'s position, as iter_records reads it there:
    `lines_before` lines and `number` - 1 records precede it, so its errors name the same line
    and record. Return None at the end of the stream; leave `handle` just past the record."""
    lines = _Lines(handle, name)
    lines.number = lines_before
    try:
        first = lines.next()
        if first is None:
            return None
        return _one_record(first, lines, name, number, False)
    except PlainFormatError as exc:
        raise PlainFormatError(_with_record(exc, number)) from None


def _with_record(error: PlainFormatError, number: int) -> str:
    """The message of an error, naming its record when the line reader could not."""
    if error.long_line is None:
        return str(error)
    where, _, what = str(error).partition(": ")
    return f"{where}: record {number}: {what}"


def _one_record(first: bytes, lines: _Lines, name: str, number: int, legal: bool) -> PlainRecord:
    """Read the record whose first line is `first`; raise PlainFormatError naming its line."""
    start = lines.number
    values = []
    line: bytes | None = first
    for index in range(6):
        if index:
            line = lines.next()
            if line is None:
                where = f"{name}:{lines.number}: record {number}"
                raise PlainFormatError(f"{where}: the file ends inside a record")
        assert line is not None
        where = f"{name}:{start + index}: record {number}"
        if b"\r" in line:
            raise PlainFormatError(f"{where}: carriage return in the line")
        try:
            text = line.decode("ascii").removesuffix("\n")
        except UnicodeDecodeError:
            raise PlainFormatError(f"{where}: a byte that is not ASCII") from None
        if index == 5:
            if text != "e":
                raise PlainFormatError(f"{where}: expected 'e', got {text!r}")
            break
        key = _KEYS[index]
        label, space, value = text.partition(" ")
        if label != key or not space:
            if index and text.startswith("fen "):  # the next record: read it next
                lines.push_back(line)
            raise PlainFormatError(f"{where}: expected '{key} ...', got {text!r}")
        values.append(value)
    fen, move, score, ply, result = values
    try:
        record = PlainRecord(
            fen,
            move,
            _integer(score, "score"),
            _integer(ply, "ply"),
            _integer(result, "result"),
        )
    except ValueError as exc:
        raise PlainFormatError(f"{name}:{start}: record {number}: {exc}") from None
    if legal:
        _check(record, name, start, number)
    return record


def _check(record: PlainRecord, name: str, start: int, number: int) -> None:
    """Raise PlainFormatError unless the record's position and move are legal; the error names
    the FEN's line (`start`) or the move's."""
    from schemas.legal_record import legal_move, legal_position  # python-chess, when checking

    try:
        board = legal_position(record.fen)
    except ValueError as exc:
        raise PlainFormatError(f"{name}:{start}: record {number}: {exc}") from None
    try:
        legal_move(board, record.move)
    except ValueError as exc:
        raise PlainFormatError(f"{name}:{start + 1}: record {number}: {exc}") from None


def _integer(text: str, key: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ValueError(f"{key} {text!r} is not an integer")
    return int(text)
