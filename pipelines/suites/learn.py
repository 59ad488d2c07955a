"""`suite learn`: the matches played with a suite (fastchess or cutechess-cli PGN, each
opening played twice with the colours swapped: `-repeat`), counted per exit (W/D/L and
pentanomial pairs), and the exits whose draw rate leaves a window dropped from the suite, as
fishtest's second UHO suite was pruned."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import chess
import chess.pgn

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_json
from pipelines.suites.build import suite_manifest_path
from pipelines.suites.files import (
    SuitePosition,
    epd_line,
    pgn_game,
    suite_format,
    usable_positions,
)
from pipelines.suites.settings import LearnSettings
from pipelines.warehouse.locks import output_lock
from schemas.atomic_files import OutputSet, check_output
from schemas.version import __version__

#: A game's result as White's points, doubled (a pair's points then are 0 to 4).
_POINTS = {"1-0": 2, "1/2-1/2": 1, "0-1": 0}


@dataclass
class ExitGames:
    """An exit's games: White wins, draws, Black wins; the pairs' points (0 to 4, doubled)
    for the reference engine, by round."""

    white: int = 0
    draws: int = 0
    black: int = 0
    #: round -> the reference engine's doubled points so far, and the games in the round.
    rounds: dict[str, list[int]] = field(default_factory=dict)

    @property
    def games(self) -> int:
        return self.white + self.draws + self.black

    @property
    def draw_rate(self) -> float:
        return self.draws / self.games if self.games else 0.0

    def pentanomial(self) -> list[int]:
        """Pairs by the reference engine's points: 0, 0.5, 1, 1.5, 2 (two games a pair)."""
        counts = [0] * 5
        for points, games in self.rounds.values():
            if games == 2:
                counts[points] += 1
        return counts


class PlayedExit(NamedTuple):
    """A played exit as the manifest lists it: its place in the suite (line or game), its
    position (the FEN's four fields), its games by result, its draw rate, its pentanomial
    pairs, and whether it was dropped."""

    number: int
    position: str
    white: int
    draws: int
    black: int
    draw_rate: float
    pentanomial: tuple[int, ...]
    dropped: bool

    @property
    def games(self) -> int:
        return self.white + self.draws + self.black


@dataclass(frozen=True)
class LearnResult:
    """What `suite learn` read and did."""

    suite: str
    out: str
    engine: str | None
    games_read: int
    matched: int
    skipped: dict[str, int]
    openings: int
    played: int
    dropped: int
    kept: int
    pentanomial: list[int]
    settings: LearnSettings
    exits: list[PlayedExit]
    sha256: str
    seconds: float

    def summary(self) -> dict[str, Any]:
        """The result without the per-exit list (what the command prints)."""
        data = self.manifest()
        del data["exits"]
        return data

    def manifest(self) -> dict[str, Any]:
        return {
            "chesspipe_version": __version__,
            "suite": self.suite,
            "out": self.out,
            "engine": self.engine,
            "games_read": self.games_read,
            "matched": self.matched,
            "skipped": dict(sorted(self.skipped.items())),
            "openings": self.openings,
            "played": self.played,
            "dropped": self.dropped,
            "kept": self.kept,
            "pentanomial": self.pentanomial,
            "settings": self.settings.record(),
            "exits": [
                {**played._asdict(), "games": played.games, "pentanomial": list(played.pentanomial)}
                for played in self.exits
            ],
            "sha256": self.sha256,
            "seconds": self.seconds,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }


def _games(paths: Sequence[Path]) -> Iterator[chess.pgn.Game]:
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                while (game := chess.pgn.read_game(handle)) is not None:
                    yield game
        except OSError as exc:
            raise ChesspipeError(f"{path}: {exc.strerror or exc}") from None


def learn_suite(
    matches: Sequence[Path],
    suite: Path,
    out: Path,
    settings: LearnSettings | None = None,
    *,
    engine: str | None = None,
) -> LearnResult:
    """Count the match games of each exit of `suite` and write the suite without the exits
    whose draw rate, after at least `settings.min_games` games, lies outside the window, to
    `out` (with its manifest beside it: every played exit's counts). A game is an exit's when
    its start position (its FEN tag), or a position of its first moves (a PGN suite's line
    played as book moves), is the exit's. `engine`: whose points the pentanomial pairs count
    (by default the White player of the first game)."""
    settings = settings or LearnSettings()
    started = time.monotonic()
    kind = suite_format(out)
    for path in (out, suite_manifest_path(out)):
        check_output(path)
    positions = usable_positions(suite)
    index: dict[str, int] = {}
    for number, position in enumerate(positions):
        index.setdefault(position.position, number)
    deepest = max(p.ply for p in positions)
    counted: dict[int, ExitGames] = {}
    skipped: Counter[str] = Counter()
    read = matched = 0
    for game in _games(matches):
        read += 1
        points = _POINTS.get(game.headers.get("Result", "*"))
        if points is None:
            skipped["unfinished"] += 1
            continue
        try:
            board = game.board()
        except ValueError:
            skipped["bad_fen"] += 1
            continue
        place = index.get(board.epd())
        if place is None:
            for ply, move in enumerate(game.mainline_moves(), 1):
                if ply > deepest:
                    break
                board.push(move)
                place = index.get(board.epd())
                if place is not None:
                    break
        if place is None:
            skipped["not_in_suite"] += 1
            continue
        matched += 1
        white, black = game.headers.get("White", "?"), game.headers.get("Black", "?")
        if engine is None:
            engine = white  # (the reference engine: the first game's White)
        tally = counted.setdefault(place, ExitGames())
        if points == 2:
            tally.white += 1
        elif points == 1:
            tally.draws += 1
        else:
            tally.black += 1
        if engine in (white, black):
            mine = points if engine == white else 2 - points
            pair = tally.rounds.setdefault(game.headers.get("Round", "?"), [0, 0])
            pair[0] += mine
            pair[1] += 1
    if not matched:
        raise ChesspipeError(
            f"none of the {read:,} games starts from an opening of {suite} "
            f"({', '.join(f'{r} {n:,}' for r, n in sorted(skipped.items()))}); nothing written"
        )
    low, high = settings.draw_rate
    dropped = {
        place
        for place, tally in counted.items()
        if tally.games >= settings.min_games and not low <= tally.draw_rate <= high
    }
    kept = [p for place, p in enumerate(positions) if place not in dropped]
    if not kept:
        raise ChesspipeError(f"every exit of {suite} is dropped: the suite would be empty")
    total = [0] * 5
    for tally in counted.values():
        total = [a + b for a, b in zip(total, tally.pentanomial(), strict=True)]
    exits = [
        PlayedExit(
            positions[place].number,
            positions[place].position,
            tally.white,
            tally.draws,
            tally.black,
            round(tally.draw_rate, 4),
            tuple(tally.pentanomial()),
            place in dropped,
        )  # fmt: skip
        for place, tally in sorted(counted.items())
    ]
    outputs = OutputSet(out, suite_manifest_path(out), sync=True)
    with output_lock(out, suite_manifest_path(out)), outputs:
        staged = outputs.path(out)
        staged.write_text(_written(kept, kind, suite))
        result = LearnResult(
            suite=str(suite), out=str(out), engine=engine, games_read=read, matched=matched,
            skipped=dict(skipped), openings=len(positions), played=len(counted),
            dropped=len(dropped), kept=len(kept), pentanomial=total, settings=settings,
            exits=exits, sha256=file_sha256(staged),
            seconds=round(time.monotonic() - started, 3),
        )  # fmt: skip
        write_json(outputs.path(suite_manifest_path(out)), result.manifest())
    return result


def _written(kept: list[SuitePosition], kind: str, suite: Path) -> str:
    """The kept openings in `kind`: an EPD suite's own lines where both are EPD."""
    if kind == "epd" and suite_format(suite) == "epd":
        from pipelines.suites.files import suite_lines

        lines = suite_lines(suite)
        return "".join(lines[p.number - 1].rstrip("\r\n") + "\n" for p in kept)
    parts = []
    for number, position in enumerate(kept, 1):
        board = position.board
        start = board.root() if board.move_stack else chess.Board()
        moves = tuple(board.move_stack) or position.moves or ()
        standard = start.fen() == chess.STARTING_FEN
        if kind == "epd":
            line = start.variation_san(moves) if moves and standard else None
            parts.append(epd_line(board, line=line) + "\n")
        elif moves:
            parts.append(pgn_game(moves, number, start=None if standard else start))
        else:
            parts.append(pgn_game((), number, start=board))
    return "".join(parts)
