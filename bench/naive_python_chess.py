"""The Python baseline: `chess.pgn.read_game` on every game, the same filter, Polyglot keys.

Usage: python bench/naive_python_chess.py INPUT.pgn.zst [--max-seconds S]
Prints JSON: games read and kept, PGN bytes read, seconds, (key, move) rows.
"""

from __future__ import annotations

import argparse
import io
import json
import time
from collections import Counter

import chess
import chess.pgn
import chess.polyglot
import zstandard


class Counting(io.RawIOBase):
    def __init__(self, raw: io.RawIOBase) -> None:
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = self.raw.readinto(buffer)
        self.count += n or 0
        return n or 0


def speed(tc: str) -> str:
    if tc == "-":
        return "correspondence"
    base, _, inc = tc.partition("+")
    seconds = int(base) + 40 * int(inc or 0)
    for limit, name in (
        (30, "ultrabullet"),
        (180, "bullet"),
        (480, "blitz"),
        (1500, "rapid"),
        (21600, "classical"),
    ):
        if seconds < limit:
            return name
    return "correspondence"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("--max-seconds", type=float, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    raw = zstandard.ZstdDecompressor().stream_reader(
        open(args.input, "rb"), read_across_frames=True
    )
    counting = Counting(raw)  # type: ignore[arg-type]
    text = io.TextIOWrapper(
        io.BufferedReader(counting, 1 << 20), encoding="utf-8", errors="replace"
    )
    counts: Counter[tuple[int, int]] = Counter()
    read = kept = 0
    while (game := chess.pgn.read_game(text)) is not None:
        read += 1
        h = game.headers
        try:
            ok = (
                int(h["WhiteElo"]) >= 2200
                and int(h["BlackElo"]) >= 2200
                and speed(h.get("TimeControl", ""))
                in ("blitz", "rapid", "classical", "correspondence")
                and "BOT" not in (h.get("WhiteTitle"), h.get("BlackTitle"))
                and h.get("Result") in ("1-0", "0-1", "1/2-1/2")
            )
        except (KeyError, ValueError):
            ok = False
        if ok:
            kept += 1
            board = game.board()
            for move in list(game.mainline_moves())[:20]:
                counts[
                    (chess.polyglot.zobrist_hash(board), move.from_square * 64 + move.to_square)
                ] += 1
                board.push(move)
        if (
            args.max_seconds
            and read % 200 == 0
            and time.perf_counter() - started > args.max_seconds
        ):
            break
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "games_read": read,
                "games_kept": kept,
                "pgn_bytes": counting.count,
                "seconds": seconds,
                "rows": len(counts),
                "complete": game is None,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
