"""Stockfish's `.plain` training records: six lines per position (fen, move, score, ply, result, e).

`score` and `result` are from the side to move; `result` is 1, 0 or -1; `score` fits in 16 bits;
moves are UCI with castling as the king's destination; lines end with '\\n' only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from schemas.atomic_files import atomic_path

SCORE_MIN, SCORE_MAX = -32768, 32767

_KEYS = ("fen", "move", "score", "ply", "result")


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


def read_records(path: Path) -> Iterator[PlainRecord]:
    """Yield the records of a .plain file, failing on anything outside the format."""
    with open(path, "rb") as handle:
        data = handle.read()
    if b"\r" in data:
        raise PlainFormatError(f"{path}: carriage return in the file")
    lines = data.decode("ascii").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) % 6:
        raise PlainFormatError(f"{path}: {len(lines)} lines is not a whole number of records")
    for start in range(0, len(lines), 6):
        chunk = lines[start : start + 6]
        values = {}
        for key, line in zip(_KEYS, chunk, strict=False):
            name, space, value = line.partition(" ")
            if name != key or not space:
                raise PlainFormatError(f"{path}:{start + 1}: expected '{key} ...', got {line!r}")
            values[key] = value
        if chunk[5] != "e":
            raise PlainFormatError(f"{path}:{start + 6}: expected 'e', got {chunk[5]!r}")
        try:
            yield PlainRecord(
                values["fen"],
                values["move"],
                int(values["score"]),
                int(values["ply"]),
                int(values["result"]),
            )
        except ValueError as exc:
            raise PlainFormatError(f"{path}:{start + 1}: {exc}") from None
