"""The batch replay (rust-pgn-reader + NumPy) agrees with python-chess on every game."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import chess.polyglot
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.ingest.counting import IllegalMove, MoveCounter, OpeningTree
from pipelines.ingest.game_filter import GameFilter, KeptGame, ScanStats
from pipelines.ingest.replay import polyglot_keys, replay
from pipelines.ingest.scan import kept_games, split_games
from schemas.movetext import san_tokens
from schemas.speed import Speed
from tests.random_moves import random_move
from tests.recount import read_text


def python_chess_rows(
    token_lists: list[list[bytes]],
) -> tuple[list[int], list[int], list[int], list[int]]:
    tree = OpeningTree()
    keys, moves, games, rejected = [], [], [], []
    for index, tokens in enumerate(token_lists):
        try:
            walked = tree.walk(tokens)
        except IllegalMove:
            rejected.append(index)
            continue
        for key, move in walked:
            keys.append(key)
            moves.append(move)
            games.append(index)
    return keys, moves, games, rejected


@pytest.mark.parametrize(
    "name", ["standard-2013-01-part1.pgn.zst", "standard-2021-10-sample.pgn.zst", "odd-cases.pgn"]
)
def test_every_real_game_agrees(name: str) -> None:
    from tests.conftest import LICHESS_DIR, need

    path = need(LICHESS_DIR / name, "real Lichess games")
    stats = ScanStats()
    games = list(
        kept_games(
            split_games([read_text(path).encode()], stats),
            GameFilter(0, frozenset(Speed), True),
            stats,
        )
    )
    tokens = [t for t in (san_tokens(g.movetext, 20) for g in games) if t]
    result = replay([b" ".join(t).decode() for t in tokens])
    keys, moves, owners, rejected = python_chess_rows(tokens)
    assert result.rejected == rejected == []
    assert result.keys.tolist() == keys
    assert result.moves.tolist() == moves
    assert result.games.tolist() == owners
    assert len(keys) > 10000 or name != "standard-2013-01-part1.pgn.zst"


def random_game_tokens(rng: random.Random, plies: int) -> list[bytes]:
    board = chess.Board()
    tokens = []
    for _ in range(plies):
        move = random_move(board, rng, special_share=0.7)
        if move is None:
            break
        tokens.append(board.san(move).encode())
        board.push(move)
    return tokens


def test_random_games_with_special_moves_agree() -> None:
    rng = random.Random(11)
    tokens = [random_game_tokens(rng, rng.randrange(1, 200)) for _ in range(300)]
    result = replay([b" ".join(t).decode() for t in tokens])
    keys, moves, owners, rejected = python_chess_rows(tokens)
    assert result.rejected == rejected == []
    assert (result.keys.tolist(), result.moves.tolist(), result.games.tolist()) == (
        keys,
        moves,
        owners,
    )


MANGLE = st.sampled_from(
    [
        b"Ke3",
        b"O-O",
        b"O-O-O",
        b"0-0",
        b"e5",
        b"exd6",
        b"Nbd7",
        b"Qh5+",
        b"e8=Q",
        b"e8Q",
        b"Nf3#",
        b"Zz9",
        b"--",
        b"e4!",
        b"Bb5+!?",
        b"R1e2",
        b"Kxe2",
        b"h8=N+",
        b"a1",
    ]
)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), cut=st.integers(0, 40), junk=MANGLE)
def test_mangled_games_are_rejected_exactly_when_python_chess_rejects(
    seed: int, cut: int, junk: bytes
) -> None:
    """A game the batch parser accepts must be one python-chess accepts, with the same rows."""
    rng = random.Random(seed)
    tokens = random_game_tokens(rng, 40)
    tokens = tokens[:cut] + [junk] + tokens[cut + 1 :]
    stats = ScanStats()
    game = KeptGame(2300, 2300, Speed.BLITZ, 2, None, b" ".join(tokens))
    batched = MoveCounter(20, stats, batched=True)
    batched.add(game)
    batched.flush()
    plain_stats = ScanStats()
    plain = MoveCounter(20, plain_stats, batched=False)
    plain.add(game)
    assert stats.dropped == plain_stats.dropped
    assert stats.games_kept == plain_stats.games_kept
    assert bytes(batched.rows.keys) == bytes(plain.rows.keys)
    assert bytes(batched.rows.moves) == bytes(plain.rows.moves)
    assert bytes(batched.rows.points) == bytes(plain.rows.points)


def test_en_passant_key_only_with_a_capturer() -> None:
    for fen in (
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
        "rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2",
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
    ):
        board = chess.Board(fen)
        grid = np.zeros((1, 8, 8), dtype=np.uint8)
        for square, piece in board.piece_map().items():
            code = piece.piece_type + (0 if piece.color else 6)
            grid[0, chess.square_rank(square), chess.square_file(square)] = code
        castling = np.array(
            [
                [
                    board.has_kingside_castling_rights(chess.WHITE),
                    board.has_queenside_castling_rights(chess.WHITE),
                    board.has_kingside_castling_rights(chess.BLACK),
                    board.has_queenside_castling_rights(chess.BLACK),
                ]
            ]
        )
        ep = np.array(
            [chess.square_file(board.ep_square) if board.ep_square is not None else -1],
            dtype=np.int8,
        )
        key = polyglot_keys(grid, castling, ep, np.array([board.turn]))
        assert int(key[0]) == chess.polyglot.zobrist_hash(board)


def test_counter_batches_equal_one_by_one(games_2021: Path) -> None:
    stats = ScanStats()
    games = list(
        kept_games(
            split_games([read_text(games_2021).encode()], stats),
            GameFilter(0, frozenset(Speed), True),
            stats,
        )
    )
    results = []
    for batched in (True, False):
        counts = ScanStats()
        counter = MoveCounter(20, counts, batched=batched, batch_size=64)
        for game in games:
            counter.add(game)
        counter.flush()
        results.append(
            (
                counts.games_kept,
                dict(counts.dropped),
                bytes(counter.rows.keys),
                bytes(counter.rows.moves),
                bytes(counter.rows.points),
                bytes(counter.rows.bands),
                bytes(counter.rows.speeds),
                bytes(counter.rows.groups),
                bytes(counter.rows.ratings),
            )
        )
    assert results[0] == results[1]
