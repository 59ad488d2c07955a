"""The position search in SQL: functions over the `games` view's packed moves.

- `fen_at(packed, ply [, fen])`: the FEN after `ply` moves (NULL past the game's end).
- `material_at(packed, ply [, fen])`: both sides' pieces then, "KRPvKR" (K, Q, R, B, N, P).
- `matches_subfen(packed, pattern [, fen])`: the first ply whose position has the pattern's
  pieces on their squares, or NULL.
- `scout(packed, query [, fen, result])`: a Scoutfish query (JSON, pipelines.search.query):
  the ply each condition matched at, or NULL. `result` is the games' `result` column (a query
  with a `result` rule matches no game without it).

`fen` is the games' `fen` column (NULL: the standard start); pass it for games from a FEN.
fen_at and material_at replay with python-chess; matches_subfen and scout with the compiled
scan, a vector of rows (2,048) a call. Registered on `chesspipe sql`'s connection and on
`pipelines.open_warehouse`'s (`pipelines.warehouse.sql.connect(functions=SEARCH_FUNCTIONS)`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)

from pipelines import arrow_arrays as arrays
from pipelines.search.query import BadQuery, Query, parse_query
from pipelines.search.scan import scan_games
from pipelines.warehouse.sql import SqlFunction
from schemas.packed_moves import DamagedMoves, board_at, start_board

#: The order material_at names pieces in.
_ORDER = (chess.KING, chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT, chess.PAWN)


def _boards(packed: pa.Array, plies: pa.Array, fens: pa.Array) -> list[chess.Board | None]:
    found: list[chess.Board | None] = []
    for moves, ply, fen in zip(packed.to_pylist(), plies.to_pylist(), fens.to_pylist(),
                               strict=True):  # fmt: skip
        if moves is None or ply is None:
            found.append(None)
            continue
        try:
            found.append(board_at(start_board(fen), moves, ply))
        except (DamagedMoves, ValueError):
            found.append(None)
    return found


def fen_at(packed: pa.Array, plies: pa.Array, fens: pa.Array) -> pa.Array:
    """The FEN after each game's first `ply` moves (NULL past its end)."""
    boards = _boards(packed, plies, fens)
    return arrays.strings([None if b is None else b.fen() for b in boards])


def material_name(board: chess.Board) -> str:
    """Both sides' pieces, "KRPvKR"."""
    sides = [
        "".join(
            chess.piece_symbol(kind).upper() * len(board.pieces(kind, color)) for kind in _ORDER
        )
        for color in (chess.WHITE, chess.BLACK)
    ]
    return "v".join(sides)


def material_at(packed: pa.Array, plies: pa.Array, fens: pa.Array) -> pa.Array:
    """Both sides' pieces after each game's first `ply` moves (NULL past its end)."""
    boards = _boards(packed, plies, fens)
    return arrays.strings([None if b is None else material_name(b) for b in boards])


@lru_cache(maxsize=64)
def _query(text: str) -> Query:
    return parse_query(text)


def _scan(packed: pa.Array, texts: pa.Array, fens: pa.Array, results: pa.Array | None,
          query_of: type[str] | None) -> list[list[int] | None]:  # fmt: skip
    """Each row's plies where its query (`texts`: JSON, or sub-FEN patterns) matched."""
    count = len(packed)
    found: list[list[int] | None] = [None] * count
    rows_by_text: dict[str, list[int]] = {}
    for row, text in enumerate(texts.to_pylist()):
        if text is not None and packed[row].is_valid:
            rows_by_text.setdefault(text, []).append(row)
    codes = (
        np.full(count, 255, dtype=np.uint8)
        if results is None
        else arrays.numbers(results.fill_null(255)).astype(np.uint8)
    )
    starts = fens.to_pylist()
    for text, rows in rows_by_text.items():
        query = _query(text if query_of is None else json.dumps({"sub-fen": text}))
        chosen = arrays.integers(np.array(rows, dtype=np.uint32))
        scanned = scan_games(packed.take(chosen), codes[rows], query,
                             starts=[starts[r] for r in rows])  # fmt: skip
        for game, plies in zip(scanned.games.tolist(), scanned.plies.tolist(), strict=True):
            found[rows[game]] = plies
    return found


def matches_subfen(packed: pa.Array, patterns: pa.Array, fens: pa.Array) -> pa.Array:
    """The first ply at which each game has its pattern's pieces on their squares, or NULL."""
    found = _scan(packed, patterns, fens, None, str)
    firsts = arrays.int_lists([None if p is None else p[:1] for p in found])
    return pa.compute.list_element(firsts, 0)


def scout(packed: pa.Array, queries: pa.Array, fens: pa.Array, results: pa.Array) -> pa.Array:
    """The plies at which each game met its query's conditions, or NULL."""
    return arrays.int_lists(_scan(packed, queries, fens, results, None))


def _checked(function: Callable[..., pa.Array]) -> Callable[..., pa.Array]:
    """A function whose bad query is DuckDB's error in one line (BadQuery's message); its
    signature (which DuckDB reads) is the function's."""

    @wraps(function)
    def call(*columns: pa.Array) -> pa.Array:
        arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
        try:
            return function(*arrays)
        except BadQuery as error:
            raise ValueError(str(error)) from None

    return call


#: The functions and their macros (the optional `fen` and `result`).
SEARCH_FUNCTIONS = (
    SqlFunction("_fen_at", _checked(fen_at), ("BLOB", "INTEGER", "VARCHAR"), "VARCHAR",
                ("CREATE MACRO fen_at(packed, ply) AS _fen_at(packed, ply, NULL), "
                 "(packed, ply, fen) AS _fen_at(packed, ply, fen)",)),
    SqlFunction("_material_at", _checked(material_at), ("BLOB", "INTEGER", "VARCHAR"), "VARCHAR",
                ("CREATE MACRO material_at(packed, ply) AS _material_at(packed, ply, NULL), "
                 "(packed, ply, fen) AS _material_at(packed, ply, fen)",)),
    SqlFunction("_matches_subfen", _checked(matches_subfen), ("BLOB", "VARCHAR", "VARCHAR"),
                "INTEGER",
                ("CREATE MACRO matches_subfen(packed, pattern) AS "
                 "_matches_subfen(packed, pattern, NULL), (packed, pattern, fen) AS "
                 "_matches_subfen(packed, pattern, fen)",)),
    SqlFunction("_scout", _checked(scout), ("BLOB", "VARCHAR", "VARCHAR", "UTINYINT"),
                "INTEGER[]",
                ("CREATE MACRO scout(packed, query) AS _scout(packed, query, NULL, NULL), "
                 "(packed, query, fen, result) AS _scout(packed, query, fen, result)",)),
)  # fmt: skip


def open_warehouse(warehouse: Path | str, **options: Any) -> Any:
    """`pipelines.warehouse.sql.connect` with the search's functions (the public face's
    `open_warehouse`): DuckDB, read-only, over move_stats, games, evals and openings."""
    from pipelines.warehouse.sql import connect

    options.setdefault("games", True)
    return connect(warehouse, functions=SEARCH_FUNCTIONS, **options)
