"""Stockfish's `.plain` training records: six lines per position (fen, move, score, ply, result, e).

`score` and `result` are from the side to move; `result` is 1, 0 or -1; `score` fits in 16 bits;
moves are UCI with castling as the king's destination; lines end with '\\n' only and hold at
most MAX_LINE_BYTES (a FEN line is under 100 bytes), so a reader's memory stays bounded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from schemas.atomic_files import atomic_path
from schemas.legal_record import legal_move, legal_position

SCORE_MIN, SCORE_MAX = -32768, 32767

#: Stockfish's "no score" value, which trainers skip.
SCORE_NONE = 32002

#: Longest line a reader takes, its newline included.
MAX_LINE_BYTES = 4096

_KEYS = ("fen", "move", "score", "ply", "result")
_INTEGER = re.compile(r"-?[0-9]+")


class PlainFormatError(ValueError):
    """A .plain file that breaks the record format."""


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


def _bounded_lines(handle: BinaryIO, name: str) -> Iterator[bytes]:
    """Yield the lines of a stream, failing on one longer than MAX_LINE_BYTES (unread)."""
    number = 0
    while line := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(line) > MAX_LINE_BYTES:
            raise PlainFormatError(
                f"{name}:{number}: record {(number + 5) // 6}: "
                f"a line longer than {MAX_LINE_BYTES} bytes"
            )
        yield line


def iter_records(
    handle: BinaryIO, name: str = "<plain>", *, legal: bool = False
) -> Iterator[PlainRecord]:
    """Yield the records of an open .plain stream, line by line.

    With `legal`, each record's position and move are checked too (schemas/legal_record.py).
    Errors name the stream, the line and the record (counted from 1).
    """
    lines = _bounded_lines(handle, name)
    for number, first in enumerate(lines, 1):
        start = 6 * number - 5
        chunk = [first, *islice(lines, 5)]
        values = []
        for index, line in enumerate(chunk):
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
                raise PlainFormatError(f"{where}: expected '{key} ...', got {text!r}")
            values.append(value)
        if len(chunk) < 6:
            where = f"{name}:{start + len(chunk) - 1}: record {number}"
            raise PlainFormatError(f"{where}: the file ends inside a record")
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
        yield record


def _check(record: PlainRecord, name: str, start: int, number: int) -> None:
    """Raise PlainFormatError unless the record's position and move are legal; the error names
    the FEN's line (`start`) or the move's."""
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
