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

from pipelines.games.eval_comments import move_annotations
from pipelines.games.game_filter import KeptGame
from pipelines.games.sanwalk import (
    NO_CLOCK,
    NO_EVAL,
    Annotated,
    last_visits,
    walk_annotated,
    walk_openings,
)
from schemas.movetext import san_tokens
from schemas.polyglot import encode_move, polyglot_key, push_with_key


class GamePositions(NamedTuple):
    """A game's positions once each, in the order of the move last played from them, and the
    moves of its whole main line, packed."""

    keys: np.ndarray  # uint64 Polyglot keys of the positions before the moves
    moves: np.ndarray  # uint16 Polyglot moves
    plies: np.ndarray  # uint16 plies of the moves from the game's start (White's even)
    uci: str | None  # the whole game in UCI when moves are kept
    packed: bytes | None  # the main line up to its first illegal move (schemas.packed_moves)
    #: The clock (tenths of a second) and the eval (White's view) after each packed move, from
    #: the game's [%clk] and [%eval] comments (sanwalk.NO_CLOCK, NO_EVAL where a move has
    #: none); None where the game has none at all.
    clocks: np.ndarray | None = None
    evals: np.ndarray | None = None


def replay_one(
    game: KeptGame,
    sans: list[bytes],
    *,
    plies: int | None = None,
    keep_moves: bool,
    chess960: bool = False,
) -> GamePositions | str:
    """A game's positions by python-chess, or why it is dropped (`illegal_move`, `bad_fen`):
    the positions of its first `plies` moves (None: all), its moves packed as far as they are
    legal (an illegal move past `plies` ends the line; within them, it drops the game)."""
    try:
        board = chess.Board(game.fen, chess960=chess960) if game.fen else chess.Board()
    except ValueError:
        return "bad_fen"
    key = polyglot_key(board)
    first_ply = 0 if board.turn == chess.WHITE else 1
    keys: list[int] = []
    codes: list[int] = []
    ucis: list[str] = []
    for index, san in enumerate(sans):
        within = plies is None or index < plies
        try:
            move = board.parse_san(san.decode("utf-8", "replace"))
        except ValueError:
            if within:
                return "illegal_move"
            break
        if within:
            keys.append(key)
        codes.append(encode_move(board, move))
        if keep_moves:
            ucis.append(board.uci(move))
        if within:
            key = push_with_key(board, move, key)
        else:  # (past the indexed plies no key is wanted)
            board.push(move)
    key_array = np.array(keys, dtype=np.uint64)
    keep = last_visits(key_array, np.array([len(keys)], dtype=np.int32))
    uci = " ".join(ucis) if keep_moves else None
    ply_numbers = (keep + first_ply).astype(np.uint16)
    code_array = np.array(codes, dtype="<u2")
    return GamePositions(
        key_array[keep], code_array[: len(keys)][keep].astype(np.uint16), ply_numbers, uci,
        code_array.tobytes(),
    )  # fmt: skip


def replay_games(
    games: list[KeptGame],
    *,
    plies: int | None,
    keep_moves: bool,
    chess960: bool = False,
    whole: bool = True,
) -> list[GamePositions | str]:
    """Each game's positions (its first `plies` moves) and, when `whole`, its packed moves
    (all; else None, and only the first plies are read), or the reason it is dropped
    (`no_moves`, `illegal_move`, `bad_fen`), in order.

    Standard games from the start position go to the compiled walk as their movetexts are (as
    ingest's counting sends them); a game the walk refuses, or in which it finds no move, is
    read by python-chess from its SAN tokens, as are games whose moves are kept or that start
    from a FEN.
    """
    results: list[GamePositions | str] = ["no_moves"] * len(games)
    batch: list[int] = []
    for place, game in enumerate(games):
        if keep_moves or game.fen is not None or chess960:
            results[place] = _replay_tokens(game, plies, keep_moves, chess960, whole)
        else:
            batch.append(place)
    if not batch:
        return results
    texts = [games[p].movetext for p in batch]
    walked = walk_annotated(texts) if whole else walk_openings(texts, plies=plies)
    lengths = walked.lengths
    counts = np.maximum(lengths, 0).astype(np.int64)
    first_row = np.concatenate(([0], np.cumsum(counts)))
    if plies is not None:  # the positions of the first plies only
        limited = np.minimum(lengths, plies).astype(np.int32)
        offset = np.arange(int(first_row[-1])) - np.repeat(first_row[:-1], counts)
        within = offset < np.repeat(np.maximum(limited, 0), counts)
        position_keys, position_moves = walked.keys[within], walked.moves[within]
    else:
        limited, position_keys, position_moves = lengths, walked.keys, walked.moves
    keep = last_visits(position_keys, limited)
    limited_counts = np.maximum(limited, 0).astype(np.int64)
    limited_first = np.concatenate(([0], np.cumsum(limited_counts)))
    rows_game = np.repeat(np.arange(len(batch)), limited_counts)[keep]
    keys, moves = position_keys[keep], position_moves[keep]
    ply_of: np.ndarray = (keep - limited_first[rows_game]).astype(np.uint16)
    bounds = np.searchsorted(rows_game, np.arange(len(batch) + 1))
    codes = walked.moves.astype("<u2", copy=False)
    if isinstance(walked, Annotated):  # which games have a clock, an eval (counts by rows)
        clocked = _counts_by_game(walked.clocks != NO_CLOCK, first_row)
        evaluated = _counts_by_game(walked.evals != NO_EVAL, first_row)
    for i, place in enumerate(batch):
        if lengths[i] <= 0:  # refused, or no move found: python-chess decides
            results[place] = _replay_tokens(games[place], plies, False, False, whole)
        else:
            low, high = bounds[i], bounds[i + 1]
            rows = slice(first_row[i], first_row[i + 1])
            found = GamePositions(keys[low:high], moves[low:high], ply_of[low:high], None, None)
            if isinstance(walked, Annotated):
                found = found._replace(
                    packed=codes[rows].tobytes(),
                    clocks=walked.clocks[rows] if clocked[i] else None,
                    evals=walked.evals[rows] if evaluated[i] else None,
                )
            results[place] = found
    return results


def _replay_tokens(
    game: KeptGame, plies: int | None, keep_moves: bool, chess960: bool, whole: bool = True
) -> GamePositions | str:
    """A game's positions from its SAN tokens by python-chess, or why it is dropped."""
    sans = san_tokens(game.movetext, None if whole else plies)
    if not sans:
        return "no_moves"
    found = replay_one(game, sans, plies=plies, keep_moves=keep_moves, chess960=chess960)
    if isinstance(found, str) or not whole:
        return found if isinstance(found, str) else found._replace(packed=None)
    if b"[%" not in game.movetext or found.packed is None:
        return found
    _, clocks, evals = move_annotations(game.movetext)
    moves = len(found.packed) // 2
    return found._replace(
        clocks=_present(_numbers(clocks[:moves], NO_CLOCK), NO_CLOCK),
        evals=_present(_numbers(evals[:moves], NO_EVAL), NO_EVAL),
    )


def _counts_by_game(present: np.ndarray, first_row: np.ndarray) -> np.ndarray:
    """How many rows of each game (rows first_row[i]..first_row[i + 1]) are present."""
    running = np.concatenate(([0], np.cumsum(present, dtype=np.int64)))
    return running[first_row[1:]] - running[first_row[:-1]]


def _numbers(values: list[int | None], missing: int) -> np.ndarray:
    return np.array([missing if v is None else v for v in values], dtype=np.int32)


def _present(values: np.ndarray, missing: int) -> np.ndarray | None:
    """A game's clocks or evals, None where none of its moves has one."""
    return values if bool((values != missing).any()) else None
