"""Suite files: EPD (a position a line: the FEN's four fields and opcodes) and PGN (each
opening a game from the start, or from its FEN tag), as fastchess and cutechess-cli read them,
plain or zipped as fishtest's books are published."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import chess
import chess.pgn

from pipelines.errors import ChesspipeError

#: The suite formats, by the file's name.
FORMATS = ("epd", "pgn")


class SuitePosition(NamedTuple):
    """An opening of a suite: where it is in the file (line or game, from 1), its position,
    the moves that reach it (PGN; an EPD's `c0` when it is a legal line from the start
    position), and what an EPD's opcodes say: games, centipawns (`ce`, from the side to move),
    search depth (`acd`), the engine's win/draw/loss per mille (`c2 "wdl W D L"`)."""

    number: int
    board: chess.Board
    moves: tuple[chess.Move, ...] | None = None
    games: int | None = None
    cp: int | None = None
    depth: int | None = None
    wdl: tuple[int, int, int] | None = None

    @property
    def ply(self) -> int:
        """Its ply: the line's length where the suite gives one, else from the move number."""
        if self.moves is not None:
            return len(self.moves)
        return 2 * (self.board.fullmove_number - 1) + (self.board.turn == chess.BLACK)

    @property
    def position(self) -> str:
        """The position as a suite's duplicates are found: the FEN's four fields (en passant
        only where a capture is legal)."""
        return self.board.epd()


class SuiteProblem(NamedTuple):
    """An opening that cannot be used: where it is, and why."""

    number: int
    reason: str
    text: str


def suite_format(path: Path) -> str:
    """`epd` or `pgn`, from the file's name (`.epd`, `.pgn`, or either zipped)."""
    name = path.name.lower().removesuffix(".zip")
    for kind in FORMATS:
        if name.endswith("." + kind):
            return kind
    raise ChesspipeError(f"{path}: a suite is a .epd or .pgn file (or either zipped)")


def _text(path: Path) -> str:
    """The suite's text (a zip's first .epd or .pgn member)."""
    try:
        if path.name.lower().endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                members = [n for n in archive.namelist() if n.lower().endswith((".epd", ".pgn"))]
                if not members:
                    raise ChesspipeError(f"{path}: the archive holds no .epd or .pgn file")
                data = archive.read(members[0])
        else:
            data = path.read_bytes()
    except zipfile.BadZipFile as exc:
        raise ChesspipeError(f"{path}: not a readable zip archive ({exc})") from None
    except OSError as exc:
        raise ChesspipeError(f"{path}: {exc.strerror or exc}") from None
    return data.decode("utf-8", "replace").lstrip("\ufeff")


def suite_lines(path: Path) -> list[str]:
    """An EPD suite's lines, numbered as read_suite numbers them (from 1)."""
    return _text(path).splitlines()


_WDL = re.compile(r"wdl (\d+) (\d+) (\d+)")
_GAMES = re.compile(r"games (\d+)")


def _integer(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _epd_position(number: int, line: str) -> SuitePosition | SuiteProblem:
    text = line.strip()
    try:
        if ";" in text:  # opcodes, as fastchess tells an EPD from a FEN
            board, ops = chess.Board.from_epd(text)
        else:
            board, ops = chess.Board(text), {}
    except ValueError as exc:
        return SuiteProblem(number, "bad_position", f"{text[:80]}: {exc}")
    if board.status() != chess.STATUS_VALID:
        return SuiteProblem(number, "bad_position", f"{text[:80]}: not a legal position")
    moves = None
    line_text = ops.get("c0")
    if isinstance(line_text, str):
        moves = _san_line(line_text)
        if moves is not None:
            replay = chess.Board()
            for move in moves:
                replay.push(move)
            if replay.epd() != board.epd():
                return SuiteProblem(
                    number, "line_mismatch", f"{text[:80]}: c0 reaches another position"
                )
    found = [(_WDL, ops.get("c2")), (_GAMES, ops.get("c1"))]
    wdl, games = (
        pattern.fullmatch(value) if isinstance(value, str) else None for pattern, value in found
    )
    return SuitePosition(
        number,
        board,
        moves,
        games=int(games.group(1)) if games else None,
        cp=_integer(ops.get("ce")),
        depth=_integer(ops.get("acd")),
        wdl=(int(wdl.group(1)), int(wdl.group(2)), int(wdl.group(3))) if wdl else None,
    )


def _san_line(text: str) -> tuple[chess.Move, ...] | None:
    """The moves of a numbered SAN line from the start position, or None (not such a line)."""
    board = chess.Board()
    moves = []
    for token in text.split():
        if token[0].isdigit():
            continue
        try:
            move = board.push_san(token)
        except ValueError:
            return None
        moves.append(move)
    return tuple(moves) or None


def read_suite(path: Path) -> Iterator[SuitePosition | SuiteProblem]:
    """The openings of a suite, in its order, each a position or a problem."""
    if suite_format(path) == "epd":
        for number, line in enumerate(_text(path).splitlines(), 1):
            if line.strip() and not line.lstrip().startswith(("#", "%")):
                yield _epd_position(number, line)
        return
    handle = io.StringIO(_text(path))
    number = 0
    while True:
        game = chess.pgn.read_game(handle)
        if game is None:
            return
        number += 1
        if game.errors:
            yield SuiteProblem(number, "illegal_line", f"game {number}: {game.errors[0]}")
            continue
        try:
            board = game.board()
        except ValueError as exc:
            yield SuiteProblem(number, "bad_position", f"game {number}: {exc}")
            continue
        moves = tuple(game.mainline_moves())
        for move in moves:
            board.push(move)
        yield SuitePosition(number, board, moves)


def usable_positions(path: Path) -> list[SuitePosition]:
    """A suite's openings, for the commands that use every one (an analysis, a match's
    counts): an opening that cannot be used, or no opening at all, is refused."""
    positions = []
    for found in read_suite(path):
        if isinstance(found, SuiteProblem):
            raise ChesspipeError(
                f"{path}: opening {found.number}: {found.reason}: {found.text} (chesspipe "
                "suite check lists every such line)"
            )
        positions.append(found)
    if not positions:
        raise ChesspipeError(f"{path}: the suite holds no opening")
    return positions


def epd_line(
    board: chess.Board,
    *,
    line: str | None = None,
    games: int | None = None,
    cp: int | None = None,
    depth: int | None = None,
    wdl: tuple[int, int, int] | None = None,
) -> str:
    """An EPD line: the four fields, the clocks (`hmvc`, `fmvn`), then the opcodes given."""
    ops: dict[str, str | int] = {"hmvc": board.halfmove_clock, "fmvn": board.fullmove_number}
    if line is not None:
        ops["c0"] = line
    if games is not None:
        ops["c1"] = f"games {games}"
    if cp is not None:
        ops["ce"] = cp
    if depth is not None:
        ops["acd"] = depth
    if wdl is not None:
        ops["c2"] = "wdl {} {} {}".format(*wdl)
    return board.epd(**ops)  # type: ignore[arg-type]


def pgn_game(
    moves: tuple[chess.Move, ...], number: int, *, start: chess.Board | None = None
) -> str:
    """An opening as a PGN game (the line's moves, result `*`), as fastchess's `format=pgn`
    reads it."""
    game = chess.pgn.Game()
    if start is not None:
        game.setup(start)
    game.headers["Event"] = "chesspipe suite"
    game.headers["Round"] = str(number)
    game.add_line(moves)
    return str(game) + "\n\n"
