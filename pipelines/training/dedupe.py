"""`training dedupe`: one record per position, the later one kept, in bounded memory.

A position is its pieces, side to move, castling rights and en-passant square where a capture
is legal (the first four fields of `Board.fen(en_passant="legal")`; clocks, move, score and
result are not compared). Of the records of one position the last in the file is kept, as
Stockfish's "-dd" (deduplicated) data sets kept theirs; the records kept are written in
their order, so the output is a subsequence of the input and the same input gives the same
bytes (no randomness).

Two passes, each an external sort through temporary files beside OUT (removed afterwards):
every record's position and number are written in sorted runs of RUN_LINES and merged, which
gives, for each position, the number of its last record; those numbers are sorted the same
way, then the input is read again and the records whose numbers come up are written. Memory
holds one run (or one line per run being merged); merges take at most MERGE_FAN_IN runs at
once, merging in rounds when there are more.
"""

from __future__ import annotations

import heapq
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import chess

from pipelines.progress import ReadCallback
from pipelines.training.files import BadInput, read_training, training_format, write_training
from schemas.plain import PlainRecord

#: Lines sorted in memory at once (about 30 MB of Python strings).
RUN_LINES = 250_000
#: Most runs merged at once (each an open file).
MERGE_FAN_IN = 64
_NUMBER_DIGITS = 12


@dataclass
class DedupeResult:
    """What a dedupe run read and kept."""

    input: str
    output: str
    records_read: int
    records_kept: int
    #: Records dropped because a later record has their position.
    duplicates: int
    runs: int
    bad_input: BadInput | None
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def position_of(fen: str) -> str:
    """A record's position: pieces, side, castling rights, legal en-passant square."""
    board = chess.Board(fen)
    return board.fen(en_passant="legal").rsplit(" ", 2)[0]


class _Sorter:
    """Lines sorted through run files in a folder; `sorted()` yields them in order."""

    def __init__(self, folder: Path, name: str, run_lines: int) -> None:
        self.folder = folder
        self.name = name
        self.run_lines = run_lines
        self.runs: list[Path] = []
        self._made = 0

    def _write(self, lines: Iterable[str]) -> Path:
        path = self.folder / f"{self.name}-{self._made}.txt"
        self._made += 1
        with open(path, "w", encoding="ascii", newline="\n") as handle:
            handle.writelines(lines)
        return path

    def add_all(self, lines: Iterable[str]) -> None:
        stream = iter(lines)
        while True:
            chunk = list(islice(stream, self.run_lines))
            if not chunk:
                return
            chunk.sort()
            self.runs.append(self._write(chunk))
            del chunk  # before the next run is read: memory holds one run, not two

    def _merged(self, runs: list[Path]) -> Iterator[str]:
        with ExitStack() as stack:
            handles = [stack.enter_context(open(p, encoding="ascii")) for p in runs]
            yield from heapq.merge(*handles)
        for path in runs:
            path.unlink()

    def sorted(self) -> Iterator[str]:
        runs = self.runs
        while len(runs) > MERGE_FAN_IN:
            runs = [
                self._write(self._merged(runs[i : i + MERGE_FAN_IN]))
                for i in range(0, len(runs), MERGE_FAN_IN)
            ]
        yield from self._merged(runs)


def _position_lines(
    records: Iterator[PlainRecord], read: list[int], *, canonical: bool
) -> Iterator[str]:
    """Each record's position and number; `canonical`: the FENs are written as `position_of`
    writes them (a `.binpack`'s are), so their first four fields are the position."""
    for number, record in enumerate(records):
        read[0] = number + 1
        where = record.fen.rsplit(" ", 2)[0] if canonical else position_of(record.fen)
        yield f"{where}\t{number:0{_NUMBER_DIGITS}d}\n"


def _last_numbers(lines: Iterator[str]) -> Iterator[str]:
    """From position lines sorted, the number line of each position's last record."""
    previous_position = None
    previous_number = ""
    for line in lines:
        position, _, number = line.rpartition("\t")
        if position != previous_position and previous_position is not None:
            yield previous_number
        previous_position, previous_number = position, number
    if previous_position is not None:
        yield previous_number


def dedupe_file(
    source: Path,
    out: Path,
    *,
    skip_bad: bool = False,
    run_lines: int = RUN_LINES,
    progress: ReadCallback | None = None,
) -> DedupeResult:
    """Write the last record of each position of `source` to `out`, in file order.

    `progress` hears of the first read, which sorts the positions (read_training).
    """
    started = time.monotonic()
    training_format(out)
    bad = BadInput() if skip_bad else None
    out.parent.mkdir(parents=True, exist_ok=True)
    read = [0]
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as tmp:
        positions = _Sorter(Path(tmp), "positions", run_lines)
        records = read_training(source, legal=True, bad=bad, progress=progress)
        canonical = training_format(source) == "binpack"
        positions.add_all(_position_lines(records, read, canonical=canonical))
        runs = len(positions.runs)
        numbers = _Sorter(Path(tmp), "numbers", run_lines)
        numbers.add_all(_last_numbers(positions.sorted()))
        runs += len(numbers.runs)
        kept_numbers = (int(line) for line in numbers.sorted())

        def kept() -> Iterator[PlainRecord]:
            wanted = next(kept_numbers, None)
            # read again as the first pass read (bad input passed over the same way)
            again = read_training(source, legal=True, bad=BadInput() if bad else None)
            for number, record in enumerate(again):
                if number == wanted:
                    yield record
                    wanted = next(kept_numbers, None)

        written = write_training(kept(), out, f"{source}: a kept record")
    return DedupeResult(
        str(source),
        str(out),
        records_read=read[0],
        records_kept=written,
        duplicates=read[0] - written,
        runs=runs,
        bad_input=bad,
        seconds=round(time.monotonic() - started, 3),
    )
