"""Engine evaluations of positions, by Polyglot key, as Parquet (the warehouse's `evals/`)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

#: A mate's score on the centipawn scale: mate in N for the side to move is MATE_SCORE - N,
#: being mated in N is -(MATE_SCORE - N), a position already mated -MATE_SCORE (python-chess's
#: `Score.score(mate_score=MATE_SCORE)`).
MATE_SCORE = 100_000

#: Moves of the principal variation kept after the best move.
PV_MOVES = 8

#: The most principal variations a position's `lines` keep (`evals analyse --multipv K`; the
#: Lichess dump gives up to 5).
MOST_LINES = 16

#: Columns a part may lack: parts written before the column came read it as null.
LATER_COLUMNS = ("lines", "wdl", "halfmove")

#: Where an evaluation came from: an engine run (`chesspipe evals analyse`), the Lichess
#: evaluation dump (`chesspipe evals import`), the `[%eval]` comments of kept games
#: (`chesspipe evals from-games`), or the rules (a position with no legal move: checkmate,
#: mate 0; stalemate, cp 0), which no search can deepen.
SOURCES = ("analyse", "lichess", "games", "rules")


def _line_type() -> pa.DataType:
    import pyarrow as pa

    return pa.struct(
        [
            pa.field("move", pa.uint16(), nullable=False),
            pa.field("cp", pa.int32()),
            pa.field("mate", pa.int16()),
            pa.field("pv", pa.string()),
        ]
    )


def _wdl_type() -> pa.DataType:
    import pyarrow as pa

    return pa.struct(
        [
            pa.field("win", pa.uint16()),
            pa.field("draw", pa.uint16()),
            pa.field("loss", pa.uint16()),
        ]
    )


@cache
def evals_schema() -> pa.Schema:
    """One row per position in a part file; the parts of the store are merged by `key`, the
    deepest evaluation winning (EVALS_ORDER). `cp` and `mate` are from the side to move.

    A function, so that what reads the store through DuckDB alone (`chesspipe sql`) imports
    no pyarrow.
    """
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("key", pa.uint64(), nullable=False),
            pa.field("fen", pa.string(), nullable=False),
            pa.field("cp", pa.int32()),
            pa.field("mate", pa.int16()),
            pa.field("best", pa.uint16()),
            pa.field("pv", pa.string()),
            pa.field("depth", pa.uint16()),
            pa.field("nodes", pa.uint64()),
            pa.field("limit", pa.string()),
            pa.field("engine", pa.string()),
            pa.field("source", pa.string(), nullable=False),
            pa.field("analysed_at", pa.timestamp("s", tz="UTC"), nullable=False),
            pa.field("lines", pa.list_(_line_type())),
            pa.field("wdl", _wdl_type()),
            pa.field("halfmove", pa.uint16()),
        ],
        metadata={
            b"description": b"Polyglot key and FEN (no clocks) of a position; its evaluation "
            b"from the side to move: cp (centipawns) or mate (moves, signed: > 0 the side to "
            b"move mates, <= 0 it is mated), exactly one of them; the best move as a Polyglot "
            b"move (castling as king takes rook), the principal variation's first moves in UCI; "
            b"the depth and nodes "
            b"reached, the limit asked (`nodes N`, `depth D`, `movetime MS`; null when imported), "
            b"the engine's name and version, the source (analyse, lichess, games, rules) and when; "
            b"lines: the principal variations of a search of several (in MultiPV order; "
            b"the first is the row's own evaluation), each its first move (Polyglot), cp or "
            b"mate from the side to move and its moves in UCI; null for a search of one line; "
            b"wdl: the engine's win/draw/loss expectation per mille from the side to move "
            b"(UCI_ShowWDL), null where the engine gave none; halfmove: the halfmove clock "
            b"of the position the engine searched (its score depends on it), null where not "
            b"known.",
        },
    )


#: The order in which one position's evaluations are ranked, best first, as DuckDB SQL over
#: the store's columns: the rules' (exact), then the deepest, then the most nodes, then the
#: newest; ties broken by source, engine and score (two games' comments on one position) so
#: that the choice never depends on file order.
EVALS_ORDER = (
    "(source = 'rules') DESC, depth DESC NULLS LAST, nodes DESC NULLS LAST, "
    "analysed_at DESC, source, engine NULLS LAST, fen, cp DESC NULLS LAST, mate DESC NULLS LAST"
)

#: The `lines` a position is read with, as DuckDB SQL over its rows: those of its search of the
#: most lines, then of the best-ranked such search. A deeper search of fewer lines keeps the
#: row's evaluation, and the lines of a search of more are not lost to it (nor analysed again
#: and again): the lines may then come from another search than the row's own evaluation.
LINES_SQL = (
    f"first_value(lines) OVER (PARTITION BY key ORDER BY len(lines) DESC NULLS LAST, {EVALS_ORDER})"
)

#: The evaluation as one number from the side to move (a mate on MATE_SCORE's scale).
SCORE_SQL = (
    f"CASE WHEN mate IS NULL THEN cp WHEN mate > 0 THEN {MATE_SCORE} - mate "
    f"ELSE -{MATE_SCORE} - mate END"
)

#: No evaluation, with every column of the store: a relation read `UNION ALL BY NAME` with the
#: parts gives the columns of LATER_COLUMNS as null where no part has them yet.
EMPTY_EVALS_SQL = (
    "SELECT NULL::UBIGINT AS key, NULL::VARCHAR AS fen, NULL::INTEGER AS cp, "
    "NULL::SMALLINT AS mate, NULL::USMALLINT AS best, NULL::VARCHAR AS pv, "
    'NULL::USMALLINT AS depth, NULL::UBIGINT AS nodes, NULL::VARCHAR AS "limit", '
    "NULL::VARCHAR AS engine, NULL::VARCHAR AS source, "
    "NULL::TIMESTAMP WITH TIME ZONE AS analysed_at, "
    "NULL::STRUCT(move USMALLINT, cp INTEGER, mate SMALLINT, pv VARCHAR)[] AS lines, "
    "NULL::STRUCT(win USMALLINT, draw USMALLINT, loss USMALLINT) AS wdl, "
    "NULL::USMALLINT AS halfmove WHERE false"
)


def parts_sql(paths: str) -> str:
    """The store's parts (`paths`: DuckDB's list of their paths) as one relation with every
    column of the store (those a part lacks, null)."""
    return (
        f"(SELECT * FROM read_parquet({paths}, union_by_name = true) "
        f"UNION ALL BY NAME {EMPTY_EVALS_SQL})"
    )
