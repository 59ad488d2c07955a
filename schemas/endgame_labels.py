"""Endgame labels: one row per position with its Syzygy WDL, DTZ and best move, as Parquet."""

from __future__ import annotations

import pyarrow as pa

#: Where a position came from.
SOURCES = ("sample", "game", "epd")

ENDGAME_LABELS_SCHEMA = pa.schema(
    [
        pa.field("fen", pa.string(), nullable=False),
        pa.field("material", pa.string(), nullable=False),
        pa.field("pieces", pa.uint8(), nullable=False),
        pa.field("in_check", pa.bool_(), nullable=False),
        pa.field("wdl", pa.int8(), nullable=False),
        pa.field("dtz", pa.int16(), nullable=False),
        pa.field("wdl50", pa.int8(), nullable=False),
        pa.field("best_move", pa.string(), nullable=True),
        pa.field("best_move_dtz", pa.int16(), nullable=False),
        pa.field("ply", pa.uint16(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("game_move", pa.string(), nullable=True),
        pa.field("game_result", pa.int8(), nullable=True),
    ],
    metadata={
        b"description": b"Syzygy labels of a position (FEN, halfmove clock included). "
        b"wdl: -2..2 from the side to move with the clock taken as 0 (python-chess probe_wdl); "
        b"dtz: as python-chess probe_dtz; wdl50: the result with the FEN's halfmove clock; "
        b"best_move: UCI, the highest-ranked move (null when there is no legal move); "
        b"best_move_dtz: its DTZ from the mover's view; material: table name, White first; "
        b"ply: game ply (0 when unknown); source: sample, game or epd; game_move and "
        b"game_result (1, 0, -1 from the side to move): what the game did, for game positions.",
    },
)
