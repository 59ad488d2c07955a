"""Book tools from PolyGlot: merge-book, one side's books, dumps; each against the real program."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipelines.books.build import build_book
from pipelines.books.settings import BookSettings
from pipelines.errors import ChesspipeError
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from schemas.polyglot import ENTRY_DTYPE, write_entries
from schemas.speed import Speed
from tests.conftest import need_program, run_cli
from tests.sample_tool import make_sample

EVERY_GAME = IngestSettings(GameFilter(0, frozenset(Speed), allow_bots=True))


def polyglot_merge(first: Path, second: Path, out: Path) -> bytes:
    subprocess.run(
        [need_program("polyglot"), "merge-book", "-in1", str(first), "-in2", str(second),
         "-out", str(out)],
        check=True, capture_output=True, cwd=out.parent,
    )  # fmt: skip
    return out.read_bytes()


def entries(rows: list[tuple[int, int, int, int]]) -> np.ndarray:
    return np.array(rows, dtype=ENTRY_DTYPE)


@pytest.fixture
def sample_book(tmp_path: Path) -> Path:
    """A book of ours from the bundled sample's first month."""
    month = make_sample.SAMPLE_MONTHS[0]
    ingest(str(make_sample.sample_path(month)), month, tmp_path / "wh", EVERY_GAME)
    book = tmp_path / "sample.bin"
    build_book(tmp_path / "wh", month, book, BookSettings(min_games=2, min_score=0.0))
    return book


@pytest.mark.slow
def test_merge_equals_polyglot_merge_book(
    tmp_path: Path, sample_book: Path, polyglot_book: Path
) -> None:
    """Byte for byte PolyGlot's merge-book: shared moves summed (16 bits), order, learn values."""
    first, second = tmp_path / "a.bin", tmp_path / "b.bin"
    write_entries(first, entries([
        (3, 30, 60000, 5), (3, 30, 3, 0), (3, 31, 2, 0), (7, 1, 1, 0), (9, 1, 1, 0),
    ]))  # fmt: skip
    write_entries(second, entries([
        (2, 5, 1, 0), (3, 30, 10000, 7 << 16 | 8), (3, 28, 1, 0), (3, 27, 9, 0), (3, 31, 5, 1),
        (7, 2, 4, 0), (7, 1, 4, 9), (8, 1, 1, 0),
    ]))  # fmt: skip
    pairs = [(first, second), (second, first), (sample_book, polyglot_book),
             (polyglot_book, sample_book)]  # fmt: skip
    for n, (one, two) in enumerate(pairs):
        ours = tmp_path / f"ours-{n}.bin"
        summary = json.loads(run_cli("book", "merge", str(one), str(two), str(ours)).stdout)
        reference = polyglot_merge(one, two, tmp_path / f"ref-{n}.bin")
        assert ours.read_bytes() == reference
        assert summary["entries"] * 16 == len(reference)
    assert summary["summed"] > 0  # the sample's book and performance.bin share moves
    with pytest.raises(ChesspipeError, match="would replace"):
        from pipelines.books.merge import merge_books

        merge_books(first, second, first)
    bad = run_cli("book", "merge", str(first), str(tmp_path / "none.bin"), str(tmp_path / "x"),
                  check=False)  # fmt: skip
    assert bad.returncode == 1 and "none.bin" in bad.stderr and not (tmp_path / "x").exists()


def test_dump_writes_every_line_heaviest_first(tmp_path: Path, polyglot_book: Path) -> None:
    """Read back with python-chess: book moves in order, weight-sorted, every move followed."""
    import io
    import re

    import chess
    import chess.pgn
    import chess.polyglot

    depth, least = 7, 5
    out = tmp_path / "lines.pgn"
    proc = run_cli("book", "dump", str(polyglot_book), "--out", str(out), "--depth", str(depth),
                   "--min-weight", str(least), "--moves", "1. e4 e5")  # fmt: skip
    stream = io.StringIO(out.read_text())
    lines = []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors
        lines.append(game)
    assert proc.stderr.strip() == f"{len(lines)} lines written to {out}" and len(lines) > 10
    edges: dict[int, set[chess.Move]] = {}
    boards: dict[int, chess.Board] = {}
    ends: list[tuple[chess.Board, bool]] = []
    previous: list[tuple[chess.Move, int]] = []
    with chess.polyglot.open_reader(polyglot_book) as reader:
        for game in lines:
            board = game.board()
            path = []
            for node in game.mainline():
                weights = {e.move: e.weight for e in reader.find_all(board)}
                weight = int(re.match(r"weight (\d+)", node.comment).group(1))
                assert weights.get(node.move) == weight >= least
                key = chess.polyglot.zobrist_hash(board)
                edges.setdefault(key, set()).add(node.move)
                boards[key] = board.copy()
                path.append((node.move, weight))
                board.push(node.move)
            assert 1 <= len(path) <= depth
            ends.append((board.copy(), "transposition" in game.end().comment))
            # Heaviest first: where a line leaves the previous one, its move weighs no more.
            split = next(
                (i for i, (a, b) in enumerate(zip(previous, path, strict=False)) if a != b), None
            )
            if split is not None:
                assert previous[split][1] >= path[split][1]
            previous = path
        # Every book move of at least the least weight, from every position followed, is dumped.
        for key, moves in edges.items():
            found = reader.find_all(boards[key])
            assert moves == {e.move for e in found if e.weight >= least}
        for board, transposition in ends:
            key = chess.polyglot.zobrist_hash(board)
            if transposition:
                assert key in edges or len(board.move_stack) == depth
            elif len(board.move_stack) < depth:
                assert not [e for e in reader.find_all(board) if e.weight >= least]
    # performance.bin's first moves weigh 1: none followed, and the user is told.
    none = run_cli("book", "dump", str(polyglot_book), "--min-weight", "2")
    assert none.stdout == "" and "warning: the book has no move of weight 2" in none.stderr


@pytest.mark.slow
def test_one_side_books_equal_polyglot_only_white_and_black(
    tmp_path: Path, games_2021: Path
) -> None:
    """book build --only-white / --only-black: PolyGlot's make-book -only-white / -only-black.

    Some book positions of this sample are reached only through moves below --min-games, so
    the walk that finds whose move it is takes its second, every-move pass too.
    """
    from tests.recount import pgn_extract_elo
    from tests.test_book import entry_set

    source, rating = games_2021, 0
    ingest(
        str(source),
        "2020-01",
        tmp_path / "wh",
        IngestSettings(GameFilter(rating, frozenset(Speed), True)),
    )
    kept = pgn_extract_elo(source, rating, tmp_path)
    books = {}
    for side in ("white", "black"):
        ours = tmp_path / f"{side}.bin"
        run_cli("book", "build", "--warehouse", str(tmp_path / "wh"), "--months", "2020-01",
                "--out", str(ours), "--min-games", "3", f"--only-{side}")  # fmt: skip
        reference = tmp_path / f"ref-{side}.bin"
        subprocess.run(
            [need_program("polyglot"), "make-book", "-pgn", str(kept), "-bin", str(reference),
             "-max-ply", "20", "-min-game", "3", "-min-score", "35", f"-only-{side}"],
            check=True, capture_output=True, cwd=tmp_path,
        )  # fmt: skip
        books[side] = entry_set(ours)
        assert ours.read_bytes() == reference.read_bytes() and books[side]
    both = tmp_path / "both.bin"
    build_book(tmp_path / "wh", "2020-01", both, BookSettings(min_games=3))
    assert books["white"] | books["black"] == entry_set(both)
    assert not books["white"] & books["black"]


@pytest.mark.slow
def test_one_side_books_of_chess960_games(tmp_path: Path) -> None:
    """Chess960 games start from other positions and castle as king takes rook: python-chess's
    replay says whose move it is in each of the full book's positions."""
    import io

    import chess
    import chess.pgn
    import chess.polyglot

    from schemas.polyglot import read_entries
    from tests.random_moves import chess960_games

    pgn = tmp_path / "c960.pgn"
    pgn.write_text(chess960_games(60, seed=7))
    ingest(
        str(pgn),
        "2024-01",
        tmp_path,
        IngestSettings(GameFilter(0, frozenset(Speed), True, "chess960")),
    )
    turn: dict[int, chess.Color] = {}
    stream = io.StringIO(pgn.read_text())
    while (game := chess.pgn.read_game(stream)) is not None:
        board = game.board()
        for move in list(game.mainline_moves())[:20]:
            turn[chess.polyglot.zobrist_hash(board)] = board.turn
            board.push(move)
    build_book(tmp_path, "2024-01", tmp_path / "all.bin", BookSettings(1, 0.0))
    every = read_entries(tmp_path / "all.bin")
    for side, colour in (("white", chess.WHITE), ("black", chess.BLACK)):
        out = tmp_path / f"{side}.bin"
        build_book(tmp_path, "2024-01", out, BookSettings(1, 0.0, side=side))
        expected = every[[turn[int(k)] == colour for k in every["key"]]]
        assert read_entries(out).tobytes() == expected.tobytes() and len(expected)
