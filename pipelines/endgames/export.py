"""Labelled positions as Stockfish `.plain` training records.

Each record: `move` = the labelled best move, `result` from the side to move (1 win, -1 loss,
0 draw; a win or loss that the position's halfmove clock turns into a 50-move draw is 0), `ply`
from the game (0 for sampled positions), and `score` from one of these schemes, all from the side
to move and 0 for every result of 0:

- ``tb`` (default): Stockfish's tablebase-win band, 31753 - min(|DTZ|, 246), so 31507..31752
  (below nnue-pytorch's mate remapping at 31755): faster zeroing scores higher.
- ``cp``: centipawn-like, 2000 - 10 x min(|DTZ|, 100), so 1000..1990.
- ``wdl``: 1000 for a win, -1000 for a loss.

`.binpack` output holds the same records as stem-only chains (schemas/binpack.py).
The FEN's fullmove number is rewritten to ply / 2 + 1 and the en-passant square kept only where
a pawn can capture, as Stockfish's converters need to round-trip.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chess

from pipelines.endgames.dataset import label_files, read_label_batches
from pipelines.errors import ChesspipeError
from schemas.binpack import write_binpack
from schemas.plain import PlainRecord, write_records

#: Stockfish: VALUE_TB = VALUE_MATE_IN_MAX_PLY - 1; MAX_PLY = 246.
VALUE_TB = 31753
MAX_PLY = 246


def _tb(dtz: int) -> int:
    return VALUE_TB - min(abs(dtz), MAX_PLY)


def _cp(dtz: int) -> int:
    return 2000 - 10 * min(abs(dtz), 100)


def _wdl(dtz: int) -> int:
    return 1000


SCORE_SCHEMES: dict[str, Callable[[int], int]] = {"tb": _tb, "cp": _cp, "wdl": _wdl}


def result_of(wdl50: int) -> int:
    """Return the .plain result (1, 0, -1) of a result under the 50-move rule."""
    return 1 if wdl50 >= 2 else -1 if wdl50 <= -2 else 0


def score_of(wdl50: int, dtz: int, scheme: str) -> int:
    """Return a position's score from the side to move under a scheme."""
    result = result_of(wdl50)
    return result * SCORE_SCHEMES[scheme](dtz) if result else 0


def checked_record(fen: str, move: str, score: int, ply: int, result: int) -> PlainRecord:
    """Return a .plain record after checking its move is legal (castling as the king's move)."""
    try:
        board = chess.Board(fen)
        parsed = chess.Move.from_uci(move)
    except ValueError as exc:
        raise ChesspipeError(f"bad label row {fen!r} {move!r}: {exc}") from None
    if parsed not in board.legal_moves:
        raise ChesspipeError(f"bad label row: {move} is not legal in {fen}")
    board.fullmove_number = ply // 2 + 1
    return PlainRecord(board.fen(en_passant="legal"), parsed.uci(), score, ply, result)


def plain_records(labels_dir: Path, scheme: str, counts: dict[str, int]) -> Iterator[PlainRecord]:
    """Yield a .plain record for every labelled position that has a move."""
    if scheme not in SCORE_SCHEMES:
        raise ChesspipeError(f"unknown score scheme {scheme!r}; choose {', '.join(SCORE_SCHEMES)}")
    for batch in read_label_batches(labels_dir):
        columns = batch.to_pydict()
        for fen, move, wdl50, dtz, ply in zip(
            columns["fen"],
            columns["best_move"],
            columns["wdl50"],
            columns["dtz"],
            columns["ply"],
            strict=True,
        ):
            if move is None:
                counts["no_move"] += 1
                continue
            counts["records"] += 1
            yield checked_record(fen, move, score_of(wdl50, dtz, scheme), ply, result_of(wdl50))


def export_plain(
    labels_dir: Path, out: Path, scheme: str = "tb", binpack: bool = False
) -> dict[str, Any]:
    """Write every labelled position of a folder as one .plain (or .binpack) file; summarise."""
    started = time.monotonic()
    files = label_files(labels_dir)
    counts = {"records": 0, "no_move": 0}
    writer = write_binpack if binpack else write_records
    try:
        writer(plain_records(labels_dir, scheme, counts), out)
    except ValueError as exc:
        raise ChesspipeError(f"cannot export {labels_dir}: {exc}") from None
    return {
        "output": str(out),
        "records": counts["records"],
        "skipped_no_move": counts["no_move"],
        "label_files": [f.name for f in files],
        "format": "binpack" if binpack else "plain",
        "score_scheme": scheme,
        "seconds": round(time.monotonic() - started, 3),
    }
