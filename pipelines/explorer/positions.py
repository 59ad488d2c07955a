"""The positions of kept games as lila-openingexplorer indexes them: the first plies of each
game, each position once per game, keeping the move played from it last (its `without_loops`
map, src/indexer/lichess.rs).

Standard games are walked in batches by the compiled SAN walk (`pipelines.games.sanwalk`);
python-chess decides every game the walk refuses or reads otherwise, and replays the games
whose moves are kept (whole games of collections) or that start from a FEN.
"""

from __future__ import annotations

from typing import NamedTuple

import chess
import numpy as np

from pipelines.games.game_filter import KeptGame
from schemas.movetext import san_tokens
from schemas.polyglot import encode_move, polyglot_key, push_with_key


class GamePositions(NamedTuple):
    """A game's positions once each, in the order of the move last played from them."""

    keys: np.ndarray  # uint64 Polyglot keys of the positions before the moves
    moves: np.ndarray  # uint16 Polyglot moves
    plies: np.ndarray  # uint16 plies of the moves from the game's start (White's even)
    uci: str | None  # the whole game in UCI when moves are kept


def without_loops(games: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The rows (indexes, ascending) that keep each (game, key) once: its last row."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    backwards = np.arange(len(keys) - 1, -1, -1)
    pairs = np.empty(len(keys), dtype=[("game", np.int64), ("key", np.uint64)])
    pairs["game"], pairs["key"] = games[backwards], keys[backwards]
    _, first = np.unique(pairs, return_index=True)
    return np.sort(backwards[first])


def replay_one(
    game: KeptGame, sans: list[bytes], *, keep_moves: bool, chess960: bool = False
) -> GamePositions | str:
    """A game's positions by python-chess, or why it is dropped (`illegal_move`, `bad_fen`)."""
    try:
        board = chess.Board(game.fen, chess960=chess960) if game.fen else chess.Board()
    except ValueError:
        return "bad_fen"
    key = polyglot_key(board)
    first_ply = 0 if board.turn == chess.WHITE else 1
    keys: list[int] = []
    moves: list[int] = []
    ucis: list[str] = []
    for san in sans:
        try:
            move = board.parse_san(san.decode("utf-8", "replace"))
        except ValueError:
            return "illegal_move"
        keys.append(key)
        moves.append(encode_move(board, move))
        if keep_moves:
            ucis.append(board.uci(move))
        key = push_with_key(board, move, key)
    key_array = np.array(keys, dtype=np.uint64)
    keep = without_loops(np.zeros(len(keys), dtype=np.int64), key_array)
    uci = " ".join(ucis) if keep_moves else None
    plies = (keep + first_ply).astype(np.uint16)
    return GamePositions(key_array[keep], np.array(moves, dtype=np.uint16)[keep], plies, uci)


def replay_games(
    games: list[KeptGame], *, plies: int | None, keep_moves: bool, chess960: bool = False
) -> list[GamePositions | str]:
    """Each game's positions, or the reason it is dropped (`no_moves`, `illegal_move`,
    `bad_fen`), in order."""
    tokens = [san_tokens(game.movetext, plies) for game in games]
    results: list[GamePositions | str | None] = [None] * len(games)
    batch: list[int] = []
    for place, (game, sans) in enumerate(zip(games, tokens, strict=True)):
        if not sans:
            results[place] = "no_moves"
        elif keep_moves or game.fen is not None or chess960:
            results[place] = replay_one(game, sans, keep_moves=keep_moves, chess960=chess960)
        else:
            batch.append(place)
    if batch:
        from pipelines.games.sanwalk import walk_openings

        walked = walk_openings([b" ".join(tokens[p]) for p in batch])
        expected = np.array([len(tokens[p]) for p in batch], dtype=np.int64)
        redo = walked.lengths != expected  # (a refused text's length, -1, is never expected)
        walked_games = np.repeat(np.arange(len(batch)), np.maximum(walked.lengths, 0))
        keep = without_loops(walked_games, walked.keys)
        rows_game = walked_games[keep]
        keys, moves = walked.keys[keep], walked.moves[keep]
        first_row = np.searchsorted(walked_games, np.arange(len(batch)))
        ply_of: np.ndarray = (keep - first_row[rows_game]).astype(np.uint16)
        bounds = np.searchsorted(rows_game, np.arange(len(batch) + 1))
        for i, place in enumerate(batch):
            if redo[i]:
                results[place] = replay_one(games[place], tokens[place], keep_moves=False)
            else:
                low, high = bounds[i], bounds[i + 1]
                results[place] = GamePositions(
                    keys[low:high], moves[low:high], ply_of[low:high], None
                )
    return [r if r is not None else "no_moves" for r in results]
