"""`evals from-games`: the [%eval] comments of kept games, checked against python-chess's own
reading of the comments (`GameNode.eval()`) on real Lichess games."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import chess
import chess.pgn
import chess.polyglot
import pytest
import zstandard

from pipelines.evals.game_comments import game_evaluations, import_game_evals
from pipelines.evals.store import read_evaluations, write_part
from pipelines.games.game_filter import GameFilter
from schemas.speed import Speed
from tests.conftest import GAMES_2021, need, run_cli

PLIES = 20
EVERY_GAME = GameFilter(0, frozenset(Speed), allow_bots=True)


def expected_rows(text: str, plies: int) -> dict[int, tuple[int | None, int | None, int | None]]:
    """Each position after one of a game's first `plies` moves with an [%eval], as python-chess
    reads the comment, from the side to move: (depth, cp, mate); of two games' comments on one
    position the deeper, then the higher cp, then the higher mate."""
    found: dict[int, list[tuple[int | None, int | None, int | None]]] = {}
    handle = io.StringIO(text)
    while (game := chess.pgn.read_game(handle)) is not None:
        if game.errors or not any(True for _ in game.mainline()):
            continue
        for ply, node in enumerate(game.mainline()):
            if ply >= plies:
                break
            score = node.eval()
            if score is None:
                continue
            board = node.board()
            pov = score.pov(board.turn)
            value = (node.eval_depth(), pov.score(), pov.mate())
            found.setdefault(chess.polyglot.zobrist_hash(board), []).append(value)

    def rank(v: tuple[int | None, int | None, int | None]) -> tuple[int, int, int, int, int]:
        depth, cp, mate = v
        return (depth is not None, depth or 0, cp is not None, cp or 0, mate or 0)

    return {key: max(values, key=rank) for key, values in found.items()}


@pytest.fixture(scope="module")
def games_text() -> str:
    source = need(GAMES_2021, "real Lichess games (2021-10 sample)")
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(source.read_bytes())).read()
    return raw.decode()


@pytest.mark.slow
def test_the_comments_of_every_kept_game_as_python_chess_reads_them(
    tmp_path: Path, games_text: str
) -> None:
    result = import_game_evals(tmp_path, str(GAMES_2021), EVERY_GAME, plies=PLIES)
    assert result.with_evals > 50 and result.skipped == {}
    stored = {k: e for k, e in read_evaluations(tmp_path).items()}
    assert {e.source for e in stored.values()} == {"games"}
    expected = expected_rows(games_text, PLIES)
    assert len(expected) > 500
    got = {k: (e.depth, e.cp, e.mate) for k, e in stored.items()}
    assert got == expected
    # The FEN is the position's, without clocks, as the store writes it.
    board = chess.Board()
    board.push_san("e4")
    assert stored[chess.polyglot.zobrist_hash(board)].fen == " ".join(board.fen().split()[:4])
    # Read again: the same rows (the choice between games never depends on the order).
    import_game_evals(tmp_path, str(GAMES_2021), EVERY_GAME, plies=PLIES)
    assert {k: (e.depth, e.cp, e.mate) for k, e in read_evaluations(tmp_path).items()} == got


@pytest.mark.slow
def test_the_default_filter_reads_the_games_ingest_keeps_and_engines_rank_above(
    tmp_path: Path,
) -> None:
    need(GAMES_2021, "real Lichess games (2021-10 sample)")
    warehouse, by_ingest = tmp_path / "w", tmp_path / "kept"
    warehouse.mkdir()
    by_ingest.mkdir()
    kept = tmp_path / "kept.pgn"
    ingested = run_cli("ingest", str(GAMES_2021), "--month", "2021-10", "--warehouse",
                       str(tmp_path / "stats"), "--write-kept", str(kept), "--quiet")  # fmt: skip
    assert ingested.returncode == 0 and kept.stat().st_size > 0
    proc = run_cli("evals", "from-games", str(GAMES_2021), "--warehouse", str(warehouse),
                   "--quiet")  # fmt: skip
    counts = json.loads(proc.stdout)
    # The default filter's games with comments are those of ingest's kept games.
    every = import_game_evals(by_ingest, str(kept), EVERY_GAME, plies=PLIES)
    assert counts["with_evals"] == every.with_evals > 0
    assert counts["comments"] == every.comments
    assert counts["games_read"] == json.loads(ingested.stdout)["games_read"]
    strip = lambda e: e._replace(analysed_at=None)  # noqa: E731
    stored = read_evaluations(warehouse)
    assert {k: strip(e) for k, e in stored.items()} == {
        k: strip(e) for k, e in read_evaluations(by_ingest).items()
    }
    # An engine's evaluation of a position (a depth, an engine) ranks above a comment.
    key, comment = next(iter(stored.items()))
    deeper = comment._replace(cp=(comment.cp or 0) + 1, mate=None, depth=12, nodes=5000,
                              limit="nodes 5000", engine="test", source="analyse",
                              analysed_at=datetime(2020, 1, 1, tzinfo=UTC))  # fmt: skip
    write_part(warehouse, [deeper])
    assert read_evaluations(warehouse, [key])[key] == deeper


def test_bad_comments_and_illegal_moves_are_counted() -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    rows, reason = game_evaluations(None, b"1. e4 { [%eval 0.3x] } e5 1-0", plies=20, when=when)
    assert (rows, reason) == ([], "bad_eval")
    movetext = b"1. e4 { [%eval 0.25] } 1... e5 { [%eval #-3,18] } 2. Ke3 { [%eval 9.9] } 1-0"
    rows, reason = game_evaluations(None, movetext, plies=20, when=when)
    assert reason == "illegal_move"
    # After 1. e4 Black is to move: White's +0.25 is -25 for Black; after 1... e5 White is to
    # move, and Black mates in 3: mate -3 for White, at depth 18.
    assert [(r.cp, r.mate, r.depth, r.fen.split()[1]) for r in rows] == [
        (-25, None, None, "b"),
        (None, -3, 18, "w"),
    ]
    rows, _ = game_evaluations(None, movetext, plies=1, when=when)
    assert len(rows) == 1
