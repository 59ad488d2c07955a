"""A tiny UCI engine that misbehaves on purpose, for the tests of `evals analyse`.

    python tests/fake_uci.py MODE

MODE `black-dies`: it exits in the middle of a search of a position with Black to move (and
answers the others with a one-ply score); `black-hangs`: it never answers those; `always-dies`:
it exits on every `go`; `silent`: it never answers `uci` (no UCI engine at all).
"""

from __future__ import annotations

import sys
import time

import chess


def main() -> int:
    mode = sys.argv[1]
    board = chess.Board()
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "uci" and mode != "silent":
            print("id name FakeUCI 0\nuciok", flush=True)
        elif words[0] == "isready":
            print("readyok", flush=True)
        elif words[0] == "position":
            fen = "startpos" if words[1] == "startpos" else " ".join(words[2:8])
            board = chess.Board() if fen == "startpos" else chess.Board(fen)
            if "moves" in words:
                for move in words[words.index("moves") + 1 :]:
                    board.push_uci(move)
        elif words[0] == "go":
            print("info depth 1 currmove e2e4", flush=True)
            if mode == "always-dies" or (mode == "black-dies" and board.turn == chess.BLACK):
                return 3
            if mode == "black-hangs" and board.turn == chess.BLACK:
                time.sleep(3600)
            move = next(iter(board.legal_moves))
            print(f"info depth 1 score cp 7 nodes 1 time 1 pv {move.uci()}", flush=True)
            print(f"bestmove {move.uci()}", flush=True)
        elif words[0] == "quit":
            return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
