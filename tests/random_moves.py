"""Random legal moves and random games for tests, special moves made likely."""

from __future__ import annotations

import random

import chess
import chess.pgn


def random_move(board: chess.Board, rng: random.Random, special_share: float) -> chess.Move | None:
    """Return a random legal move, or None if there is none.

    When castling, en passant or a promotion is legal, one of those is chosen with probability
    `special_share`.
    """
    legal = list(board.legal_moves)
    if not legal:
        return None
    special = [m for m in legal if board.is_castling(m) or board.is_en_passant(m) or m.promotion]
    return rng.choice(special) if special and rng.random() < special_share else rng.choice(legal)


def chess960_games(count: int, seed: int) -> str:
    """PGN of random Chess960 games, rated 2300, castling often, with random results."""
    rng = random.Random(seed)
    out = []
    for number in range(count):
        board = chess.Board.from_chess960_pos(rng.choice([0, 518, 959, 123]))
        game = chess.pgn.Game()
        game.headers.update(
            {
                "Variant": "Chess960",
                "FEN": board.fen(),
                "SetUp": "1",
                "WhiteElo": "2300",
                "BlackElo": "2300",
                "TimeControl": "300+0",
                "Site": f"https://lichess.org/{number}",
            }
        )
        game.setup(board)
        node = game
        for _ in range(rng.randrange(4, 30)):
            moves = list(node.board().legal_moves)
            if not moves:
                break
            castles = [m for m in moves if node.board().is_castling(m)]
            node = node.add_variation(
                rng.choice(castles) if castles and rng.random() < 0.5 else rng.choice(moves)
            )
        game.headers["Result"] = rng.choice(["1-0", "0-1", "1/2-1/2"])
        out.append(str(game))
    return "\n\n".join(out) + "\n"
