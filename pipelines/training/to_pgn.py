"""`training to-pgn`: a training file's games (`chains.games`) as PGN, for looking at them.

Each game: `Event "training records"`, `Site` the input's name, `Round` the game's number (from
1), `Result` the first record's result from White's view, `FirstPly` the first record's ply,
`PlyCount`, and `SetUp "1"` with the first record's `FEN` unless it is the start position. Each
move is followed by a comment holding its record's score (side to move, as in the file), and
the record's result too (`{ score 0 result 0 }`) where it is not the game's (a game rescored by
the tables part way). Replaying a game's moves from its FEN gives the records' positions.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import chess

from pipelines.errors import write_error
from pipelines.progress import ReadCallback
from pipelines.training.chains import Game, games
from pipelines.training.files import BadInput, read_training
from schemas.atomic_files import atomic_path

#: PGN lines are cut before this many characters (the export format's 80, less one).
LINE_WIDTH = 79
_RESULTS = {1: "1-0", 0: "1/2-1/2", -1: "0-1"}


@dataclass
class ToPgnResult:
    """What a to-pgn run wrote."""

    input: str
    output: str
    records: int
    games: int
    bad_input: BadInput | None
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _wrapped(words: list[str]) -> Iterator[str]:
    line = ""
    for word in words:
        if line and len(line) + 1 + len(word) > LINE_WIDTH:
            yield line
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        yield line


def game_pgn(game: Game, number: int, site: str) -> str:
    """Return one game's PGN text (headers, movetext, a blank line after)."""
    first = game.positions[0]
    white_result = first.record.result if first.board.turn == chess.WHITE else -first.record.result
    result = _RESULTS[white_result]
    site = site.replace("\\", "\\\\").replace('"', '\\"')
    tags = [
        ("Event", "training records"),
        ("Site", site),
        ("Round", str(number)),
        ("White", "?"),
        ("Black", "?"),
        ("Result", result),
        ("FirstPly", str(first.record.ply)),
        ("PlyCount", str(len(game.positions))),
    ]
    if first.record.fen != chess.STARTING_FEN:
        tags += [("SetUp", "1"), ("FEN", first.record.fen)]
    board = first.board.copy(stack=False)
    words: list[str] = []
    for position in game.positions:
        # every move has a comment after it, so Black's moves take their number too
        dots = "." if board.turn == chess.WHITE else "..."
        words.append(f"{board.fullmove_number}{dots}")
        words.append(board.san(position.move))
        record = position.record
        own = white_result if board.turn == chess.WHITE else -white_result
        comment = f"score {record.score}"
        if record.result != own:
            comment += f" result {record.result}"
        words.append(f"{{ {comment} }}")  # one word: a comment is never cut across lines
        board.push(position.move)
    words.append(result)
    head = "".join(f'[{key} "{value}"]\n' for key, value in tags)
    return head + "\n" + "\n".join(_wrapped(words)) + "\n\n"


def to_pgn_file(
    source: Path, out: Path, *, skip_bad: bool = False, progress: ReadCallback | None = None
) -> ToPgnResult:
    """Write the games of `source` as PGN to `out`, whole or not at all; `progress` hears of
    the read (read_training)."""
    started = time.monotonic()
    bad = BadInput() if skip_bad else None
    records = count = 0
    try:
        with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            for count, game in enumerate(  # noqa: B007 - the count is returned
                games(read_training(source, legal=True, bad=bad, progress=progress)), 1
            ):
                handle.write(game_pgn(game, count, source.name))
                records += len(game.positions)
    except OSError as exc:
        raise write_error(exc, out) from None
    return ToPgnResult(
        str(source),
        str(out),
        records,
        count,
        bad,
        round(time.monotonic() - started, 3),
    )
