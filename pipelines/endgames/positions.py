"""Where endgame positions come from: uniform samples of a material, EPD/FEN lists, and games."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import chess

from pipelines.endgames.probing import parse_material
from pipelines.errors import ChesspipeError

_PIECES = {
    "K": chess.KING,
    "Q": chess.QUEEN,
    "R": chess.ROOK,
    "B": chess.BISHOP,
    "N": chess.KNIGHT,
    "P": chess.PAWN,
}
_BACK_RANKS = chess.BB_RANK_1 | chess.BB_RANK_8


@dataclass
class Position:
    """A legal position to label, with what a game did from it when it comes from one."""

    board: chess.Board
    source: str  # "sample", "game" or "epd"
    ply: int = 0
    game_move: str | None = None
    game_result: int | None = None  # 1, 0, -1 from the side to move


def parse_materials(spec: str) -> list[tuple[str, int]]:
    """Return (material, count) pairs from 'KRvKP:1000,KQvKR:500'."""
    pairs: list[tuple[str, int]] = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, colon, count = item.partition(":")
        if not colon or not count.strip().isdigit() or int(count) <= 0:
            raise ChesspipeError(f"bad material {item!r}: expected MATERIAL:COUNT like KRvKP:1000")
        pairs.append((parse_material(name), int(count)))
    if not pairs:
        raise ChesspipeError("no materials given: expected e.g. KRvKP:1000,KQvKR:500")
    return pairs


def random_position(material: str, rng: random.Random) -> chess.Board:
    """Return a uniformly random legal position of a material, no castling or en passant."""
    white, black = material.split("v")
    pieces = [(chess.WHITE, _PIECES[c]) for c in white] + [(chess.BLACK, _PIECES[c]) for c in black]
    while True:
        squares = rng.sample(chess.SQUARES, len(pieces))
        if any(
            piece == chess.PAWN and chess.BB_SQUARES[square] & _BACK_RANKS
            for (_, piece), square in zip(pieces, squares, strict=True)
        ):
            continue
        board = chess.Board(None)
        for (color, piece), square in zip(pieces, squares, strict=True):
            board.set_piece_at(square, chess.Piece(piece, color))
        board.turn = rng.random() < 0.5
        if board.is_valid():
            return board


def most_positions(material: str) -> int:
    """Return a bound no material's distinct positions exceed: the placements of its pieces
    (identical pieces interchangeable, pawns off the first and last ranks), both sides to move.
    Legal positions are fewer (kings apart, the side not to move not in check)."""
    white, black = material.split("v")
    groups = Counter([("w", c) for c in white] + [("b", c) for c in black])
    free, free_for_pawns, placements = 64, 48, 1
    for (_, piece), k in sorted(groups.items(), key=lambda group: group[0][1] != "P"):
        if piece == "P":
            placements *= math.comb(free_for_pawns, k)
            free_for_pawns -= k
        else:
            placements *= math.comb(free, k)
        free -= k
    return 2 * placements


def check_sample_size(material: str, count: int) -> None:
    """Fail at once when more distinct positions are asked for than a material can have."""
    bound = most_positions(material)
    if count > bound:
        raise ChesspipeError(
            f"{material} has at most {bound:,} distinct positions (placements of its pieces, "
            f"both sides to move); {count:,} asked for"
        )


def sample_positions(
    material: str,
    count: int,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Position]:
    """Yield `count` distinct uniformly random legal positions of a material, reproducibly.

    `progress` is called with the positions found so far, every 1,024 of them.
    """
    check_sample_size(material, count)
    rng = random.Random(f"chesspipe-sample:{seed}:{material}")
    seen: set[str] = set()
    attempts = 0
    limit = 50 * count + 10_000
    while len(seen) < count:
        attempts += 1
        if attempts > limit:
            raise ChesspipeError(
                f"{material}: found only {len(seen)} distinct positions of {count} asked for"
            )
        board = random_position(material, rng)
        fen = board.fen()
        if fen in seen:
            continue
        seen.add(fen)
        if progress is not None and not len(seen) & 0x3FF:
            progress(len(seen))
        yield Position(board, "sample")


def read_fen(text: str) -> chess.Board:
    """Return the board of a FEN or EPD line (EPD operations ignored), or fail with the reason."""
    fields = text.split()
    if len(fields) < 4:
        raise ChesspipeError(f"invalid FEN {text!r}: expected at least 4 fields")
    try:
        if len(fields) >= 6 and fields[4].isdigit() and fields[5].isdigit():
            board = chess.Board(" ".join(fields[:6]))
        else:
            board = chess.Board(" ".join(fields[:4]) + " 0 1")
    except ValueError as exc:
        raise ChesspipeError(f"invalid FEN {text!r}: {exc}") from None
    return board


def _numbered_lines(handle: BinaryIO, path: Path) -> Iterator[tuple[int, str]]:
    """A file's lines as text, with their numbers; a line that is not UTF-8 fails in one line
    naming it."""
    for number, raw in enumerate(handle, 1):
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ChesspipeError(f"{path}:{number}: not UTF-8 text") from None


def epd_positions(path: Path) -> Iterator[Position]:
    """Yield the positions of an EPD or FEN list, one a line ('#' comments and blanks skipped)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise ChesspipeError(f"cannot open {path}: {exc.strerror}") from None
    with handle:
        for number, line in _numbered_lines(handle, path):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                board = read_fen(line)
            except ChesspipeError as exc:
                raise ChesspipeError(f"{path}:{number}: {exc}") from None
            if not board.is_valid():
                raise ChesspipeError(f"{path}:{number}: not a legal position: {line}")
            ply = 2 * (board.fullmove_number - 1) + (board.turn == chess.BLACK)
            yield Position(board, "epd", ply=ply)
