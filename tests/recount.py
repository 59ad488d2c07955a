"""A plain python-chess recount of move statistics: the independent truth for ingest tests.

Deliberately naive: `chess.pgn.read_game` on every game, headers read by python-chess, the
filter written again from docs/ingest.md's "What ingest keeps", keys from
`chess.polyglot.zobrist_hash`.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import chess
import chess.pgn
import chess.polyglot

from bench import peers
from bench.data import read_text
from schemas.polyglot import encode_move

SPEED_LIMITS = (
    (30, "ultrabullet"),
    (180, "bullet"),
    (480, "blitz"),
    (1500, "rapid"),
    (21600, "classical"),
)


def speed(time_control: str) -> str:
    """The speed of a TimeControl value as docs/ingest.md says: Lichess's "base+inc" and "-",
    the PGN standard's "300", "*300", "40/7200" (and further periods after ":"); otb for others."""
    if time_control == "-":
        return "correspondence"
    first = time_control.split(":")[0]
    if first.startswith("*"):
        first = first[1:]
    if match := re.fullmatch(r"([0-9]+)\+([0-9]+)", first):
        seconds = int(match[1]) + 40 * int(match[2])
    elif (match := re.fullmatch(r"([0-9]+)/([0-9]+)", first)) and int(match[1]) > 0:
        seconds = int(match[2]) * 40 // int(match[1])
    elif re.fullmatch(r"[0-9]+", first):
        seconds = int(first)
    else:
        return "otb"
    for limit, name in SPEED_LIMITS:
        if seconds < limit:
            return name
    return "correspondence"


def ratings(headers: chess.pgn.Headers, min_rating: int) -> tuple[int, int] | None:
    """Both ratings, or None when the game is dropped for want of them: at min_rating 0 a
    missing rating counts as 0."""
    found = []
    for tag in ("WhiteElo", "BlackElo"):
        value = headers.get(tag, "")
        if value.isascii() and value.isdigit():
            found.append(int(value))
        elif min_rating > 0:
            return None
        else:
            found.append(0)
    return found[0], found[1]


def keeps(headers: chess.pgn.Headers, min_rating: int, speeds: set[str], allow_bots: bool) -> bool:
    rated = ratings(headers, min_rating)
    if rated is None:
        return False
    white, black = rated
    if white < min_rating or black < min_rating:
        return False
    if speed(headers.get("TimeControl", "")) not in speeds:
        return False
    if not allow_bots and "BOT" in (headers.get("WhiteTitle"), headers.get("BlackTitle")):
        return False
    if headers.get("Variant", "Standard").lower() != "standard":
        return False
    if headers.get("FEN", chess.STARTING_FEN).strip() != chess.STARTING_FEN:
        return False
    return headers.get("Result") in ("1-0", "0-1", "1/2-1/2")


def games_where(
    stream: io.StringIO, wanted: Callable[[chess.pgn.Headers], bool]
) -> Iterator[chess.pgn.Game]:
    """The games of a PGN text whose headers `wanted` takes, each read whole by python-chess;
    the others have only their headers read (python-chess's read_headers, then a seek back)."""
    while True:
        offset = stream.tell()
        headers = chess.pgn.read_headers(stream)
        if headers is None:
            return
        if not wanted(headers):
            continue
        after = stream.tell()
        stream.seek(offset)
        game = chess.pgn.read_game(stream)
        assert game is not None
        stream.seek(after)
        yield game


def split_in_turn(pgn: Path, parts: int, folder: Path) -> list[Path]:
    """Cut a PGN file into `parts` files of whole games, in turn (game i to part i % parts),
    named so that they sort in that order (part-00.pgn, part-01.pgn, ...)."""
    games = read_text(pgn).split("\n\n[Event ")
    games = [games[0], *("[Event " + g for g in games[1:])]
    paths = []
    for index in range(parts):
        path = folder / f"part-{index:02d}.pgn"
        path.write_text("\n\n".join(g.strip() for g in games[index::parts]) + "\n\n")
        paths.append(path)
    return paths


def recount(
    path: Path, min_rating: int, speeds: set[str], allow_bots: bool = False, plies: int = 20
) -> tuple[Counter[tuple[int, int, str, int, str]], int]:
    """Return counts per (key, move, speed, band, outcome for the mover), and games kept."""
    counts: Counter[tuple[int, int, str, int, str]] = Counter()
    kept = 0
    stream = io.StringIO(read_text(path))
    for game in games_where(stream, lambda h: keeps(h, min_rating, speeds, allow_bots)):
        headers = game.headers
        moves = list(game.mainline_moves())[:plies]
        if not moves:
            continue
        kept += 1
        white_elo, black_elo = ratings(headers, min_rating) or (0, 0)
        band = min(white_elo, black_elo) // 100 * 100
        white_outcome = {"1-0": "win", "0-1": "loss", "1/2-1/2": "draw"}[headers["Result"]]
        flip = {"win": "loss", "loss": "win", "draw": "draw"}
        board = game.board()
        for move in moves:
            outcome = white_outcome if board.turn == chess.WHITE else flip[white_outcome]
            key = chess.polyglot.zobrist_hash(board)
            counts[
                (
                    key,
                    encode_move(board, move),
                    speed(headers.get("TimeControl", "")),
                    band,
                    outcome,
                )
            ] += 1
            board.push(move)
    return counts, kept


def pgn_extract_elo(source: Path, rating: int, folder: Path) -> Path:
    """Return a PGN file of the games `pgn-extract` keeps with both Elo ratings >= rating (the
    test skipped, or failed under CI, when it is not installed)."""
    from tests.conftest import need_program

    return peers.pgn_extract_elo(source, rating, folder, program=need_program("pgn-extract"))
