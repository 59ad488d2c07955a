"""The text of the games ingest keeps, as the source has it: `ingest --write-kept FILE`.

While a scan runs, each game that passes the filter is staged in a part file (one per scan in
order: the whole source, or one unit of frames). Counting may still drop a few of them (no
moves, an illegal move, a bad FEN): ScanStats.rejected names them by their place in the part.
The parts, in source order and less those games, then make the file.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.errors import ChesspipeError
from pipelines.games.frames import FramedWriter

#: A staged game: its length, then the scanner's text of it (without the leading "[").
_LENGTH = struct.Struct("<I")

#: Text per zstd frame of the file written: a pzstd-style file, read again on several cores.
FRAME_BYTES = 1 << 20


class KeptText:
    """Stages the text of the games that pass the filter in one scan, in order, in a file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()

    def add(self, game: bytes) -> None:
        """Stage a game's text as the scanner split it (without its leading "[")."""
        self._file.write(_LENGTH.pack(len(game)))
        self._file.write(game)

    def close(self) -> None:
        self._file.close()


@dataclass(frozen=True)
class KeptPart:
    """A staged part and the places of its games that counting dropped."""

    path: Path
    rejected: list[int] = field(default_factory=list)


def staged_games(part: KeptPart) -> Iterator[bytes]:
    """Yield a part's staged games that counting kept, in order, each without its "["."""
    rejected = set(part.rejected)
    with open(part.path, "rb") as handle:
        place = 0
        while head := handle.read(_LENGTH.size):
            game = handle.read(_LENGTH.unpack(head)[0])
            if place not in rejected:
                yield game
            place += 1


def write_kept_games(
    parts: list[KeptPart],
    target: Path,
    *,
    crlf: bool = False,
    compressed: bool = True,
    expected: int | None = None,
) -> int:
    """Write the parts' kept games in order to `target`; return how many.

    Each game is written as the source has it, headers and movetext, followed by one blank
    line; CRLF line ends (`crlf`) are written back as they were. The one change the scanner
    makes to a game, a blank line before "[" inside a brace comment read as a space, stays.
    `compressed` text is written as pzstd-style zstd frames. With `expected`, staging any
    other number of games is an error. The caller makes the file appear whole (atomic_path).
    """
    games = 0
    with open(target, "wb") as handle:
        framed = FramedWriter(handle, frame_size=FRAME_BYTES, level=3)
        write = framed.write if compressed else handle.write
        for part in parts:
            for game in staged_games(part):
                text = b"[" + game.rstrip(b"\n") + b"\n\n"
                write(text.replace(b"\n", b"\r\n") if crlf else text)
                games += 1
        framed.flush()
        if expected is not None and games != expected:
            raise ChesspipeError(
                f"{games:,} games staged for the kept games file where {expected:,} were kept"
            )
    return games
