"""The engine's own book through python-chess's UCI client: moves drawn in proportion to weights."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import chess
import chess.engine
import chess.polyglot
import pytest

from pipelines.books.build import build_book
from pipelines.books.settings import BookSettings
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from schemas.speed import Speed
from tests.engine_support import raw_engine, uci_engine

#: Draws per test position, and the allowed deviation of each move's share in standard errors.
DRAWS = 400
SIGMAS = 5.0


@pytest.fixture(scope="module")
def own_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A book the project builds itself from real Lichess games."""
    from tests.conftest import GAMES_2021, need

    games = need(GAMES_2021, "real Lichess games (2021-10 sample)")
    work = tmp_path_factory.mktemp("own-book")
    rules = GameFilter(min_rating=0, speeds=frozenset(Speed))
    ingest(str(games), "2021-10", work / "warehouse", IngestSettings(rules))
    out = work / "book.bin"
    build_book(work / "warehouse", "2021-10", out, BookSettings(min_games=3))
    return out


def _weights(book: Path, board: chess.Board) -> dict[chess.Move, int]:
    """The position's book weights as python-chess's own Polyglot reader sees them."""
    with chess.polyglot.open_reader(book) as reader:
        weights: Counter[chess.Move] = Counter()
        for entry in reader.find_all(board):
            weights[entry.move] += entry.weight
    return dict(weights)


def _first_uneven_position(book: Path) -> chess.Board:
    """The first position (breadth first from the start) with 3+ book moves of unequal weight."""
    frontier = [chess.Board()]
    with chess.polyglot.open_reader(book) as reader:
        for _ in range(4):
            following = []
            for board in frontier:
                weights = _weights(book, board)
                if len(weights) >= 3 and len(set(weights.values())) > 1:
                    top = max(weights.values()) / sum(weights.values())
                    if top > 0.5:
                        return board
                for entry in reader.find_all(board):
                    child = board.copy()
                    child.push(entry.move)
                    following.append(child)
            frontier = following
    raise AssertionError(f"{book}: no position with uneven book weights near the start")


def _check_proportions(counts: Counter[chess.Move], weights: dict[chess.Move, int]) -> None:
    total_weight = sum(weights.values())
    draws = sum(counts.values())
    assert set(counts) <= set(weights), f"moves outside the book: {set(counts) - set(weights)}"
    for move, weight in weights.items():
        expected = weight / total_weight
        error = math.sqrt(expected * (1 - expected) / draws)
        seen = counts[move] / draws
        assert abs(seen - expected) <= SIGMAS * error + 1e-9, (move.uci(), seen, expected)
    # The test can fail: a uniform choice would break the tolerance for the heaviest move.
    heaviest = max(weights.values()) / total_weight
    uniform = 1 / len(weights)
    assert abs(uniform - heaviest) > SIGMAS * math.sqrt(heaviest * (1 - heaviest) / draws)


def _play_many(book: Path, board: chess.Board) -> Counter[chess.Move]:
    counts: Counter[chess.Move] = Counter()
    with uci_engine(OwnBook=True, BookFile=str(book)) as engine:
        for _ in range(DRAWS):
            result = engine.play(board, chess.engine.Limit(depth=1))
            assert result.move is not None and board.is_legal(result.move)
            counts[result.move] += 1
    return counts


def test_moves_follow_weights_in_a_published_book(polyglot_book: Path) -> None:
    board = _first_uneven_position(polyglot_book)
    _check_proportions(_play_many(polyglot_book, board), _weights(polyglot_book, board))


@pytest.mark.slow
def test_moves_follow_weights_in_our_own_book(own_book: Path) -> None:
    board = chess.Board()
    weights = _weights(own_book, board)
    assert len(weights) >= 3
    _check_proportions(_play_many(own_book, board), weights)


def test_a_book_move_comes_with_a_score_for_an_analysing_client(own_book: Path) -> None:
    board = chess.Board()
    weights = _weights(own_book, board)
    with uci_engine(OwnBook=True, BookFile=str(own_book)) as engine:
        for _ in range(3):
            info = engine.analyse(board, chess.engine.Limit(depth=6))
            # The book answers at once (depth 1, not 6), with the book move's score and line.
            assert info["pv"][0] in weights and info["depth"] == 1, info
            score = info["score"].relative
            assert not score.is_mate() and abs(score.score()) < 300, info
            result = engine.play(board, chess.engine.Limit(depth=6), info=chess.engine.INFO_ALL)
            assert result.move in weights and result.move == result.info["pv"][0]


def test_book_is_skipped_for_infinite_and_searchmoves(own_book: Path) -> None:
    board = chess.Board()
    weights = _weights(own_book, board)
    outside = next(m for m in board.legal_moves if m not in weights)
    with uci_engine(OwnBook=True, BookFile=str(own_book)) as engine:
        # searchmoves: the engine searches the moves it was given, book or not.
        for _ in range(5):
            result = engine.play(board, chess.engine.Limit(depth=1), root_moves=[outside])
            assert result.move == outside
        # go infinite: analysis, which reports search lines until stopped.
        with engine.analysis(board) as analysis:
            for info in analysis:
                if info.get("depth", 0) >= 2:
                    break
        assert analysis.info.get("depth", 0) >= 2


def test_book_off_by_default_and_bad_book_files_reported(own_book: Path, tmp_path: Path) -> None:
    with raw_engine() as engine:
        engine.ask(f"setoption name BookFile value {own_book}")
        engine.send("position startpos", "go depth 2")
        lines = engine.until("bestmove")
        assert any(line.startswith("info depth 2") for line in lines), lines

        missing = tmp_path / "missing.bin"
        assert engine.ask(f"setoption name BookFile value {missing}") == [
            f"info string no book loaded: {missing}: no such file"
        ]
        broken = tmp_path / "broken.bin"
        broken.write_bytes(b"\x00" * 17)
        (reply,) = engine.ask(f"setoption name BookFile value {broken}")
        assert reply.startswith("info string no book loaded:") and "not a Polyglot book" in reply
        # No book is loaded now, so OwnBook changes nothing: the engine searches.
        engine.ask("setoption name OwnBook value true")
        engine.send("go depth 1")
        assert engine.until("bestmove")[0].startswith("info depth 1")
