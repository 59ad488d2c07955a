"""The position search's scan: games stored as Polyglot moves, replayed in compiled code
(`_scout.c`), and the games a query matches with the plies its conditions matched at.

The search loop is Scoutfish's: per game, the conditions are tried in order, from the game's
start position (ply 0) to its last (ply = the number of moves, where no move is played); a
condition that holds at a ply is recorded and the next is tried from the following ply, and the
game matches when its last condition holds. A condition of a streak past the streak's first must
hold at the ply after the one before it; when it does not by then, the whole query starts again,
at that same ply. query.py says what each rule reads.

The query and the games' starts are laid out here once a call as flat tables of records (the
dtypes below, the C structs' twins), and arrow's buffers are handed to C as they are: nothing is
copied per game, and C scans without the GIL, so that batches may be scanned on several threads.
The query's own `skip` and `limit` are the caller's to apply; `limit` here stops the scan.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import chess
import numpy as np
import pyarrow as pa

from pipelines.search import _scout
from pipelines.search.query import Exact, Imbalance, Material, MovePattern, Query, SubFen

#: A whole position (a game's start, an `exact` item): 12 bitboards in piece_index's order, the
#: castling rights (rook squares) and the side to move (1: White).
POSITION = np.dtype([("masks", "=u8", (12,)), ("castling", "=u8"), ("turn", "=u8")])
#: A condition: its streak's first condition (itself when none), the side to move (-1 either),
#: the kinds of piece taken (bits; bit 0: nothing; 0: no rule) and moved (bits; 0: no rule),
#: and each listed rule's items as (first, count) in its table.
CONDITION = np.dtype(
    [(name, "=i4") for name in ("streak_first", "stm", "captured", "moved")]
    + [
        (f"{rule}_{part}", "=i4")
        for rule in ("sub_fens", "materials", "imbalances", "moves", "exact")
        for part in ("first", "count")
    ]
)
#: A sub-FEN: the squares each side must occupy, then the 12 pieces' masks.
SUB_FEN = np.dtype([("occupied", "=u8", (2,)), ("masks", "=u8", (12,))])
#: Piece counts, a byte a piece type (pawn first), White's word then Black's.
MATERIAL = np.dtype([("counts", "=u8", (2,))])
IMBALANCE = np.dtype([("pawns", "=i8"), ("pieces", "=i8")])
#: A move pattern, against the move's key: (key & mask) == value.
MOVE = np.dtype([("value", "=u4"), ("mask", "=u4")])

for _dtype, _size in (
    (POSITION, _scout.POSITION_SIZE),
    (CONDITION, _scout.CONDITION_SIZE),
    (SUB_FEN, _scout.SUB_FEN_SIZE),
    (MATERIAL, _scout.MATERIAL_SIZE),
    (IMBALANCE, _scout.IMBALANCE_SIZE),
    (MOVE, _scout.MOVE_SIZE),
):
    assert _dtype.itemsize == _size, "scan.py's records and _scout.c's structs differ"

# The move key's fields (_scout.c's KEY_*): to-square bits 0-5, from file 6-8, from rank 9-11,
# piece type 12-14, White 15, castling 16-17 (1 short, 2 long), a capture 18, promotion 19-21.
_FROM_FILE, _FROM_RANK, _TYPE, _WHITE, _CASTLE, _CAPTURE, _PROMOTION = 6, 9, 12, 15, 16, 18, 19
#: A pattern no move matches (the key's bit 31 is never set).
_NEVER = (1 << 31, 1 << 31)
#: Kinds of piece as bits; a rule of no real kind is one no move meets (bit 7).
_NO_KIND = 1 << 7
#: Every square (masks are cut to 64 bits).
_ALL = (1 << 64) - 1
#: Counts are bytes: a material item of a count beyond holds never (nor does its record).
_MOST = 256
#: Pawns no side has more of: an imbalance item too large to be held holds never.
_NEVER_PAWNS = 1 << 40


class ScanResult(NamedTuple):
    """The games matched (their indexes, ascending), the ply each condition matched at in each
    (a row a game, a column a condition), and the positions looked at (a game is replayed up to
    its match; a game of a result a condition rules out, or of an unreadable start, not at
    all)."""

    games: np.ndarray  # int64
    plies: np.ndarray  # int32, (len(games), len(query.conditions))
    positions: int


def scan_games(
    moves: pa.Array | Sequence[bytes | None],
    results: np.ndarray,
    query: Query,
    *,
    starts: Sequence[str | None] | None = None,
    chess960: bool = False,
    limit: int | None = None,
) -> ScanResult:
    """The games whose positions meet the query, by Scoutfish's search loop.

    `moves`: per game its Polyglot moves, uint16 little-endian a ply (arrow binary or
    large_binary, a slice or with nulls, or a list; null or None: no moves). `results`: per
    game its result (query.RESULTS' values). `starts`: per game its start's FEN, read by
    python-chess with `chess960`, or None for the standard start; a FEN python-chess cannot
    read is damage: the game is not looked at. `limit`: stop after that many matched games.

    Damaged moves (an odd last byte, a move from an empty square or of the side not to move...,
    see _scout.c) end their game there: the position before them is its last. The ply of a
    position is the number of moves played from the game's start to it.
    """
    if not query.conditions:
        raise ValueError("a query has one condition or more")
    data, offsets, wide, validity, first, count = _games_buffers(moves)
    results = np.ascontiguousarray(results, dtype=np.uint8)
    if len(results) != count:
        raise ValueError(f"{count} games but {len(results)} results")
    if starts is not None and len(starts) != count:
        raise ValueError(f"{count} games but {len(starts)} starts")
    start_of, table = start_table(starts, count, chess960=chess960)
    games, plies, positions = _scout.scan(
        data,
        offsets,
        wide,
        validity,
        first,
        count,
        results,
        start_of,
        table,
        *compile_query(query),
        -1 if limit is None else max(limit, 0),
    )
    return ScanResult(
        np.frombuffer(games, dtype=np.int64),
        np.frombuffer(plies, dtype=np.int32).reshape(-1, len(query.conditions)),
        positions,
    )


#: The games as _scout.scan reads them: the data, the offsets (8 bytes each when `wide`), the
#: validity bitmap (None: no nulls), the first game's place in them and the games' count.
_Buffers = tuple[Any, Any, bool, Any, int, int]


def _games_buffers(moves: pa.Array | Sequence[bytes | None]) -> _Buffers:
    """The buffers of the games: arrow's as they are, a list's joined into new ones."""
    if isinstance(moves, pa.ChunkedArray):
        raise TypeError("scan the chunks of a chunked array one by one")
    if isinstance(moves, pa.Array):
        if not (pa.types.is_binary(moves.type) or pa.types.is_large_binary(moves.type)):
            raise TypeError(f"the moves are binary or large_binary, not {moves.type}")
        validity, offsets, data = moves.buffers()
        return (
            b"" if data is None else data,
            np.zeros(moves.offset + len(moves) + 1, np.int64) if offsets is None else offsets,
            pa.types.is_large_binary(moves.type) or offsets is None,
            validity if moves.null_count else None,
            moves.offset,
            len(moves),
        )
    games = list(moves)
    sizes = np.fromiter((len(game or b"") for game in games), dtype=np.int64, count=len(games))
    offsets = np.zeros(len(games) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    present = np.fromiter((game is not None for game in games), dtype=bool, count=len(games))
    validity = None if present.all() else np.packbits(present, bitorder="little")
    return b"".join(game for game in games if game), offsets, True, validity, 0, len(games)


def start_table(
    starts: Sequence[str | None] | None, count: int, *, chess960: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Each game's start as an index into a table of the distinct starts (POSITION records; 0:
    the standard start; -1: a FEN python-chess cannot read), and the table."""
    records = [start_record(None, chess960)]
    start_of = np.zeros(count, dtype=np.int32)
    index: dict[str | None, int] = {None: 0}
    for game, fen in enumerate(starts or ()):
        found = index.get(fen)
        if found is None:
            record = start_record(fen, chess960)
            found = -1 if record is None else len(records)
            if record is not None:
                records.append(record)
            index[fen] = found
        start_of[game] = found
    return start_of, np.array(records, dtype=POSITION)


@functools.lru_cache(maxsize=1 << 16)
def start_record(fen: str | None, chess960: bool) -> tuple[object, ...] | None:
    """A start's POSITION record (placement, castling rights as python-chess cleans them, side
    to move), its FEN read by python-chess (None: the standard start); None if unreadable.
    Kept: batches of the same games are scanned again for each query."""
    try:
        board = chess.Board(fen or chess.STARTING_FEN, chess960=chess960)
    except ValueError:
        return None
    return (_masks(board), int(board.clean_castling_rights()), int(board.turn))


def _masks(board: chess.BaseBoard) -> tuple[int, ...]:
    return tuple(
        int(board.pieces_mask(piece_type, color))
        for color in (chess.WHITE, chess.BLACK)
        for piece_type in chess.PIECE_TYPES
    )


class Tables(NamedTuple):
    """A query's tables for _scout.scan: the conditions (CONDITION records), the items of the
    listed rules, which each condition's (first, count) pairs point into, and per result
    (0-255) whether a game of it is looked at (a result rule that fails fails at every
    position)."""

    conditions: np.ndarray
    sub_fens: np.ndarray
    materials: np.ndarray
    imbalances: np.ndarray
    moves: np.ndarray
    exacts: np.ndarray
    allowed: np.ndarray  # uint8


def compile_query(query: Query) -> Tables:
    """The query's tables, for _scout.scan."""
    conditions = np.zeros(len(query.conditions), dtype=CONDITION)
    tables: dict[str, list[tuple[object, ...]]] = {rule: [] for rule in _RULES}
    allowed = np.ones(256, dtype=np.uint8)
    for number, condition in enumerate(query.conditions):
        row = conditions[number]
        # A condition of a streak past its first: the streak's first condition.
        in_streak = number > 0 and condition.streak > 0
        if in_streak and query.conditions[number - 1].streak == condition.streak:
            row["streak_first"] = conditions[number - 1]["streak_first"]
        else:
            row["streak_first"] = number
        row["stm"] = -1 if condition.stm is None else int(condition.stm)
        if condition.captured is not None:
            row["captured"] = _kind_bits(condition.captured) if condition.captured else 1
        if condition.moved:
            row["moved"] = _kind_bits(condition.moved)
        if condition.results:
            allowed &= np.isin(np.arange(256), list(condition.results))
        for rule, read in _RULES.items():
            items = [read(item) for item in getattr(condition, rule)]
            row[f"{rule}_first"] = len(tables[rule])
            row[f"{rule}_count"] = len(items)
            tables[rule].extend(items)
    return Tables(
        conditions,
        np.array(tables["sub_fens"], dtype=SUB_FEN),
        np.array(tables["materials"], dtype=MATERIAL),
        np.array(tables["imbalances"], dtype=IMBALANCE),
        np.array(tables["moves"], dtype=MOVE),
        np.array(tables["exact"], dtype=POSITION),
        allowed,
    )


def _kind_bits(kinds: frozenset[chess.PieceType]) -> int:
    """Kinds of piece as bits (bit 1 pawn .. bit 6 king); none real: a bit no move has."""
    bits = sum(1 << kind for kind in kinds if chess.PAWN <= kind <= chess.KING)
    return bits or _NO_KIND


def _sub_fen(sub_fen: SubFen) -> tuple[object, ...]:
    masks = tuple(mask & _ALL for mask in sub_fen.masks)
    return ((_or(masks[:6]), _or(masks[6:])), masks)


def _material(material: Material) -> tuple[object, ...]:
    if any(not 0 <= count < _MOST for count in material.counts):
        return ((_ALL, _ALL),)  # (no position has 255 of every piece)
    words = tuple(
        sum(count << 8 * kind for kind, count in enumerate(material.counts[side : side + 6]))
        for side in (0, 6)
    )
    return (words,)


def _imbalance(imbalance: Imbalance) -> tuple[object, ...]:
    if not all(abs(value) < 1 << 62 for value in imbalance):
        return (_NEVER_PAWNS, 0)
    return (imbalance.pawns, imbalance.pieces)


def _move(pattern: MovePattern) -> tuple[object, ...]:
    """A move pattern as (value, mask) against the move's key (_scout.c's move_key)."""
    if not chess.PAWN <= pattern.piece_type <= chess.KING or pattern.castle not in (0, 1, 2):
        return _NEVER
    value = int(bool(pattern.color)) << _WHITE | pattern.piece_type << _TYPE
    mask = 1 << _WHITE | 7 << _TYPE | 3 << _CASTLE
    if pattern.castle:
        return (value | pattern.castle << _CASTLE, mask)
    if not 0 <= pattern.to <= 63:
        return _NEVER
    fields = (
        (pattern.to, 0, 63),
        (pattern.from_file, _FROM_FILE, 7),
        (pattern.from_rank, _FROM_RANK, 7),
        (-1 if pattern.capture is None else int(pattern.capture), _CAPTURE, 1),
        (pattern.promotion or -1, _PROMOTION, 7),
    )
    for wanted, shift, most in fields:
        if wanted < 0:
            continue
        if wanted > most:
            return _NEVER
        value |= wanted << shift
        mask |= most << shift
    return (value, mask)


def _exact(exact: Exact) -> tuple[object, ...]:
    return (tuple(mask & _ALL for mask in exact.masks), exact.castling & _ALL, int(exact.turn))


def _or(masks: Iterable[int]) -> int:
    found = 0
    for mask in masks:
        found |= mask
    return found


#: The listed rules (Condition's fields), each item's record, in the tables' order.
_RULES: dict[str, Callable[[Any], tuple[object, ...]]] = {
    "sub_fens": _sub_fen,
    "materials": _material,
    "imbalances": _imbalance,
    "moves": _move,
    "exact": _exact,
}
