"""A short match of chesspipe-engine against Stockfish at a low Skill Level: a sanity figure.

    python bench/engine_match.py [--games 4] [--tc 10+0.1] [--skill 0] [--syzygy DIR]

Prints each game's result and the score of chesspipe-engine. Not run by the tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import chess
import chess.engine
import chess.pgn

ROOT = Path(__file__).resolve().parent.parent

#: Short, balanced openings the games start from (each is played with both colours).
OPENINGS = [
    "e2e4 e7e5 g1f3 b8c6",
    "d2d4 d7d5 c2c4 e7e6",
    "e2e4 c7c5 g1f3 d7d6",
    "c2c4 g8f6 b1c3 e7e5",
]

#: Plies after which a game still going is called a draw.
MAX_PLIES = 300


def play_game(
    ours: chess.engine.SimpleEngine,
    stockfish: chess.engine.SimpleEngine,
    opening: str,
    ours_white: bool,
    base: float,
    increment: float,
) -> tuple[str, chess.Board, str, list[float]]:
    """Play a game from an opening under a Fischer clock: (result, board, reason, clocks).

    `clocks` holds the mover's remaining time after each move played after the opening.
    """
    board = chess.Board()
    for uci in opening.split():
        board.push_uci(uci)
    clocks = {chess.WHITE: base, chess.BLACK: base}
    remaining: list[float] = []
    while not board.is_game_over(claim_draw=True) and len(board.move_stack) < MAX_PLIES:
        ours_to_move = (board.turn == chess.WHITE) == ours_white
        engine = ours if ours_to_move else stockfish
        limit = chess.engine.Limit(
            white_clock=clocks[chess.WHITE],
            black_clock=clocks[chess.BLACK],
            white_inc=increment,
            black_inc=increment,
        )
        started = time.monotonic()
        move = engine.play(board, limit).move
        spent = time.monotonic() - started
        if clocks[board.turn] - spent < 0:
            loser_white = board.turn == chess.WHITE
            reason = f"time forfeit: {spent:.3f}s spent with {clocks[board.turn]:.3f}s left"
            return ("0-1" if loser_white else "1-0"), board, reason, remaining
        clocks[board.turn] -= spent
        remaining.append(clocks[board.turn])
        clocks[board.turn] += increment
        if move is None:
            break
        board.push(move)
    outcome = board.outcome(claim_draw=True)
    if outcome is None:
        return "1/2-1/2", board, f"adjudicated after {MAX_PLIES} plies", remaining
    return outcome.result(), board, outcome.termination.name.lower(), remaining


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4)
    parser.add_argument("--tc", default="10+0.1", help="base+increment in seconds")
    parser.add_argument("--skill", type=int, default=0, help="Stockfish Skill Level (0-20)")
    parser.add_argument("--stockfish", default=shutil.which("stockfish") or "/usr/games/stockfish")
    parser.add_argument("--syzygy", default=str(ROOT.parent / "shared" / "data" / "syzygy" / "3-4"))
    parser.add_argument("--pgn", type=Path, help="also write the games here")
    args = parser.parse_args(argv)
    base, _, inc = args.tc.partition("+")
    base_seconds, increment = float(base), float(inc or 0)

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    ours = chess.engine.SimpleEngine.popen_uci([sys.executable, "-m", "engine"], env=env)
    stockfish = chess.engine.SimpleEngine.popen_uci(args.stockfish)
    stockfish.configure({"Skill Level": args.skill, "Threads": 1, "Hash": 16})
    if Path(args.syzygy).is_dir():
        ours.configure({"SyzygyPath": args.syzygy})
    points = 0.0
    games = []
    try:
        for number in range(args.games):
            opening = OPENINGS[(number // 2) % len(OPENINGS)]
            ours_white = number % 2 == 0
            result, board, reason, remaining = play_game(
                ours, stockfish, opening, ours_white, base_seconds, increment
            )
            white_points = {"1-0": 1.0, "0-1": 0.0}.get(result, 0.5)
            points += white_points if ours_white else 1 - white_points
            colour = "white" if ours_white else "black"
            print(
                f"game {number + 1}: chesspipe {colour}, {result} ({reason}), "
                f"{len(board.move_stack)} plies",
                flush=True,
            )
            game = chess.pgn.Game.from_board(board)
            node: chess.pgn.GameNode = game
            opening_plies = len(opening.split())
            for ply in range(len(board.move_stack)):
                node = node.next()  # type: ignore[assignment]
                if ply >= opening_plies and ply - opening_plies < len(remaining):
                    node.set_clock(remaining[ply - opening_plies])
            game.headers["White"] = "chesspipe" if ours_white else f"Stockfish skill {args.skill}"
            game.headers["Black"] = f"Stockfish skill {args.skill}" if ours_white else "chesspipe"
            game.headers["Result"] = result
            game.headers["Termination"] = reason
            games.append(game)
    finally:
        ours.quit()
        stockfish.quit()
    print(
        f"chesspipe-engine vs Stockfish (Skill Level {args.skill}, {args.tc}): "
        f"{points:g}/{args.games}"
    )
    if args.pgn:
        args.pgn.write_text("\n\n".join(str(g) for g in games) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
