"""The explorer's data: the games behind the numbers and their positions, as Parquet.

Written per month by `chesspipe explorer index` under `WAREHOUSE/explorer/month=YYYY-MM/`
(`games.parquet`, `positions.parquet`); the explorer (`chesspipe serve`) counts and picks its
games from them as lila-openingexplorer does. A month without these files (ingested before
the explorer's data existed) still reads: its counts come from the move statistics.
"""

from __future__ import annotations

import pyarrow as pa

#: One row per game the filter kept, in the order of the source.
GAMES_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.uint32(), nullable=False),
        pa.field("id", pa.string(), nullable=False),
        pa.field("event", pa.string(), nullable=False),
        pa.field("site", pa.string(), nullable=False),
        pa.field("round", pa.string(), nullable=False),
        pa.field("date", pa.string(), nullable=False),
        pa.field("white", pa.string(), nullable=False),
        pa.field("black", pa.string(), nullable=False),
        pa.field("white_elo", pa.uint16(), nullable=True),
        pa.field("black_elo", pa.uint16(), nullable=True),
        pa.field("white_title", pa.string(), nullable=True),
        pa.field("black_title", pa.string(), nullable=True),
        pa.field("result", pa.uint8(), nullable=False),
        pa.field("speed", pa.string(), nullable=False),
        pa.field("rated", pa.bool_(), nullable=False),
        pa.field("tournament", pa.bool_(), nullable=False),
        pa.field("moves", pa.string(), nullable=True),
        pa.field("time_control", pa.string(), nullable=True),
        pa.field("eco", pa.string(), nullable=True),
        pa.field("opening", pa.string(), nullable=True),
        pa.field("fen", pa.string(), nullable=True),
        pa.field("plies", pa.uint16(), nullable=True),
        pa.field("packed", pa.binary(), nullable=True),
        pa.field("clocks", pa.list_(pa.int32()), nullable=True),
        pa.field("evals", pa.list_(pa.int16()), nullable=True),
    ],
    metadata={
        b"description": b"seq: the game's place among the month's kept games (source order, "
        b"from 0); id: the Lichess game id from Site, else 8 letters and digits from a hash "
        b"of the game's text; event, site, round, date (PGN Date or UTCDate as written) and "
        b"the players' names as the tags give them; ratings null when missing; titles null "
        b"when absent; result: White's points (2 win, 1 draw, 0 loss); speed: the filter's "
        b"speed name; rated: Event does not start with 'Casual'; tournament: Event names an "
        b"arena, swiss or tournament; moves: the whole game in UCI, space-separated, when the "
        b"month was indexed with every ply (collections), else null; time_control, eco, "
        b"opening: those tags, null when absent; fen: the position the game starts from when "
        b"not the standard start (FEN tag, Chess960), else null; plies: the moves of its main "
        b"line kept (up to its first illegal move); packed: those moves, 2 bytes each "
        b"(schemas.packed_moves). plies and packed are null in months indexed before them or "
        b"with --no-games. clocks: the clock after each packed move in tenths of a second, "
        b"from the [%clk] comments; evals: the [%eval] after each, centipawns from White's "
        b"view, a mate in n as +-(32000 - n); null where the game has none, a null item "
        b"where a move has none.",
    },
)

#: One row per game and position reached in its first plies, each position once per game
#: (lila-openingexplorer's `without_loops`: a repeated position keeps the move played from
#: it last). Sorted by seq, then by the ply of the move.
POSITIONS_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.uint32(), nullable=False),
        pa.field("key", pa.uint64(), nullable=False),
        pa.field("move", pa.uint16(), nullable=False),
        pa.field("ply", pa.uint16(), nullable=False),
    ],
    metadata={
        b"description": b"seq: the game (GAMES_SCHEMA.seq); key: Polyglot key of the position "
        b"before the move; move: Polyglot move played from it (the last time the game was "
        b"there); ply: that move's ply from the game's start, White's moves even (so its "
        b"parity names the mover).",
    },
)
