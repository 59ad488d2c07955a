"""A position search's query: Scoutfish's JSON query language, read into typed conditions.

A query is a list of conditions a game must meet at positions one after another (Scoutfish's
`sequence`; a lone condition is a sequence of one); conditions of a `streak` must be met at
consecutive positions. A condition holds when all of its rules hold at a position; a rule given
a list holds when any of its items does. The position at ply 0 is the game's start; a rule on
a move (`white-move`, `black-move`, `moved`, `captured`) reads the move played from the
position, so it never holds at the game's last position.

The rules, as Scoutfish reads them (its README.md), and where this reading is stricter:
- `sub-fen`: piece placement; every piece of the pattern on its square (empty squares: any).
- `material`: the pieces of both sides exactly, White's then Black's from the second K
  ("KBNKNN"; "KBNvKNN" too).
- `imbalance`: "PPvN": White's pawns less Black's, and White's pieces' value less Black's
  (Scoutfish's middle-game values: N 753, B 826, R 1285, Q 2513), each exactly.
- `stm`: "white" or "black". `result`: "1-0", "0-1", "1/2-1/2", "*".
- `white-move`/`black-move`: a move in SAN. Read as SAN says: `x` asks for a capture, a pawn's
  file in "exd5" for its file, "e8=Q" for the queen (Scoutfish matches "Nxe5" never, "exd5"
  from any file and "e8=Q" as any promotion on e8).
- `moved`: the moving piece's kind among the letters; `captured`: the taken piece's kind among
  the letters, "" for a move that takes nothing.
- `pass`: any position. `skip`, `limit`: of the matches, in the games' order.
- `fen` (chesspipe's own): the exact position of a FEN: placement, side to move and castling
  rights (the en passant square and the clocks are not compared).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import NamedTuple

import chess

from pipelines.errors import UsageError


class BadQuery(UsageError):
    """A query that cannot be read: its message says which part and why (one line)."""


#: Scoutfish's middle-game values of the pieces (its types.h), by which `imbalance` compares.
PIECE_VALUES = {chess.KNIGHT: 753, chess.BISHOP: 826, chess.ROOK: 1285, chess.QUEEN: 2513}

#: The results a `result` rule names, as the games' `result` column holds them (White's points
#: doubled; 255: unknown).
RESULTS = {"1-0": 2, "1/2-1/2": 1, "0-1": 0, "*": 255}

#: The keys a condition may have, and the query's own.
CONDITION_KEYS = ("sub-fen", "material", "imbalance", "stm", "result", "white-move",
                  "black-move", "moved", "captured", "pass", "fen")  # fmt: skip
QUERY_KEYS = ("sequence", "streak", "skip", "limit")


def piece_index(color: chess.Color, piece_type: chess.PieceType) -> int:
    """Where a piece's mask or count is in a condition's 12 (White's P..K, then Black's)."""
    return piece_type - 1 + (0 if color == chess.WHITE else 6)


class SubFen(NamedTuple):
    """A sub-FEN: the squares each piece must be on (12 masks, piece_index's order)."""

    masks: tuple[int, ...]


class Material(NamedTuple):
    """Both sides' pieces exactly: 12 counts, piece_index's order."""

    counts: tuple[int, ...]


class Imbalance(NamedTuple):
    """White's pawns less Black's, and White's pieces' value less Black's (PIECE_VALUES)."""

    pawns: int
    pieces: int


class MovePattern(NamedTuple):
    """A move in SAN, as a pattern: who moves what where (castling: `castle` 1 short, 2 long,
    `to` unused); the from file or rank when given (-1: any), whether it must take (`capture`
    True), must not (False) or may (None), and the promotion asked for (0: any)."""

    color: chess.Color
    piece_type: chess.PieceType
    to: int
    castle: int
    from_file: int
    from_rank: int
    capture: bool | None
    promotion: int


class Exact(NamedTuple):
    """A whole position: 12 masks, the side to move and the castling rights (rook squares)."""

    masks: tuple[int, ...]
    turn: chess.Color
    castling: int


@dataclass(frozen=True)
class Condition:
    """What a position must be for a condition to hold: every rule given (a tuple: any item)."""

    sub_fens: tuple[SubFen, ...] = ()
    materials: tuple[Material, ...] = ()
    imbalances: tuple[Imbalance, ...] = ()
    moves: tuple[MovePattern, ...] = ()
    exact: tuple[Exact, ...] = ()
    #: The games' results (RESULTS' values); empty: any.
    results: frozenset[int] = frozenset()
    #: The side to move, None: either.
    stm: chess.Color | None = None
    #: Kinds of piece the move may take; empty: a move that takes nothing; None: no rule.
    captured: frozenset[chess.PieceType] | None = None
    #: Kinds of piece that may move; None: no rule.
    moved: frozenset[chess.PieceType] | None = None
    #: Conditions with the same streak number (above 0) must hold at consecutive positions.
    streak: int = 0


@dataclass(frozen=True)
class Query:
    """The conditions, in order, and which matches to give."""

    conditions: tuple[Condition, ...]
    skip: int = 0
    limit: int | None = None

    def limited(self, limit: int) -> Query:
        """The query giving at most `limit` matches (its own limit if lower)."""
        return replace(self, limit=limit if self.limit is None else min(self.limit, limit))


def parse_query(text: str | bytes) -> Query:
    """A query from Scoutfish's JSON (and chesspipe's `fen`); BadQuery in one line if unread."""
    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadQuery(f"the query is not JSON: {error}") from None
    return query_from_json(document)


def query_from_json(document: object) -> Query:
    """A query from its JSON value (a dict)."""
    if not isinstance(document, dict):
        raise BadQuery('a query is a JSON object, like {"sub-fen": "8/8/8/8/8/8/8/8"}')
    skip = _count(document.get("skip", 0), "skip")
    limit = None if document.get("limit") is None else _count(document["limit"], "limit")
    if "sequence" in document or "streak" in document:
        extra = set(document) - set(QUERY_KEYS)
        if extra or ("sequence" in document and "streak" in document):
            raise BadQuery("a query with a sequence or a streak has nothing else beside it "
                           "but skip and limit")  # fmt: skip
    streaks = _Streaks()
    if "sequence" in document:
        conditions: list[Condition] = []
        for item in _items(document["sequence"], "sequence"):
            if isinstance(item, dict) and "streak" in item:
                if set(item) != {"streak"}:
                    raise BadQuery('a streak inside a sequence is {"streak": [...]} alone')
                conditions.extend(streaks.read(item["streak"]))
            else:
                conditions.append(condition_from_json(item))
    elif "streak" in document:
        conditions = streaks.read(document["streak"])
    else:
        rules = {k: v for k, v in document.items() if k not in ("skip", "limit")}
        conditions = [condition_from_json(rules)]
    return Query(tuple(conditions), skip=skip, limit=limit)


class _Streaks:
    """Numbers the streaks of a query from 1."""

    def __init__(self) -> None:
        self.number = 0

    def read(self, items: object) -> list[Condition]:
        self.number += 1
        found = [condition_from_json(item, streak=self.number) for item in _items(items, "streak")]
        return found


def _items(value: object, name: str) -> list[object]:
    if not isinstance(value, list) or not value:
        raise BadQuery(f"{name} is a non-empty list of conditions")
    return value


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadQuery(f"{name} is a whole number of 0 or more, not {json.dumps(value)}")
    return value


def _strings(value: object, key: str) -> list[str]:
    """A rule's value: a string or a list of strings."""
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, str) for item in items):
        raise BadQuery(f"{key} is a string or a list of strings, not {json.dumps(value)}")
    return items  # type: ignore[return-value]


def condition_from_json(item: object, *, streak: int = 0) -> Condition:
    """One condition from its JSON object."""
    if not isinstance(item, dict) or not item:
        raise BadQuery(f"a condition is a JSON object of rules, not {json.dumps(item)}")
    unknown = sorted(set(item) - set(CONDITION_KEYS))
    if unknown:
        if "sequence" in unknown or "streak" in unknown:
            raise BadQuery("a sequence or a streak goes at the query's top (or a streak in a "
                           "sequence), not inside a condition")  # fmt: skip
        raise BadQuery(f"unknown rule {unknown[0]!r} (the rules: {', '.join(CONDITION_KEYS)})")
    found: dict[str, object] = {}
    if "sub-fen" in item:
        found["sub_fens"] = tuple(parse_sub_fen(s) for s in _strings(item["sub-fen"], "sub-fen"))
    if "material" in item:
        found["materials"] = tuple(
            parse_material(s) for s in _strings(item["material"], "material")
        )
    if "imbalance" in item:
        found["imbalances"] = tuple(
            parse_imbalance(s) for s in _strings(item["imbalance"], "imbalance")
        )
    moves = [
        parse_move(s, color)
        for key, color in (("white-move", chess.WHITE), ("black-move", chess.BLACK))
        if key in item
        for s in _strings(item[key], key)
    ]
    if moves:
        found["moves"] = tuple(moves)
    if "fen" in item:
        found["exact"] = tuple(parse_exact(s) for s in _strings(item["fen"], "fen"))
    if "result" in item:
        results = set()
        for text in _strings(item["result"], "result"):
            if text not in RESULTS:
                raise BadQuery(f"result {text!r} is not one of {', '.join(RESULTS)}")
            results.add(RESULTS[text])
        found["results"] = frozenset(results)
    if "stm" in item:
        side = item["stm"]
        if not isinstance(side, str) or side.lower() not in ("white", "black"):
            raise BadQuery(f"stm is white or black, not {json.dumps(side)}")
        found["stm"] = side.lower() == "white"
    for key, name in (("captured", "captured"), ("moved", "moved")):
        if key in item:
            found[name] = _piece_kinds(item[key], key)
    return Condition(streak=streak, **found)  # type: ignore[arg-type]


def _piece_kinds(value: object, key: str) -> frozenset[chess.PieceType]:
    if not isinstance(value, str) or any(c not in "PNBRQKpnbrqk" for c in value):
        raise BadQuery(f"{key} is a string of piece letters (PNBRQK), not {json.dumps(value)}")
    return frozenset(chess.Piece.from_symbol(c.upper()).piece_type for c in value)


_PLACEMENT = re.compile(r"^[pnbrqkPNBRQK1-8]+(/[pnbrqkPNBRQK1-8]+){7}$")


def _masks(placement: str, what: str) -> tuple[int, ...]:
    if not _PLACEMENT.match(placement) or any(
        sum(int(c) if c.isdigit() else 1 for c in rank) != 8 for rank in placement.split("/")
    ):
        raise BadQuery(f"bad {what} {placement!r}: eight ranks of eight squares, "
                       "like rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR")  # fmt: skip
    board = chess.BaseBoard(placement)
    return tuple(
        int(board.pieces_mask(piece_type, color))
        for color in (chess.WHITE, chess.BLACK)
        for piece_type in chess.PIECE_TYPES
    )


def parse_sub_fen(text: str) -> SubFen:
    """A sub-FEN's pattern (a FEN's first field; the rest, if given, is not read)."""
    return SubFen(_masks(text.split(" ")[0], "sub-fen"))


def parse_exact(text: str) -> Exact:
    """A whole FEN, read as python-chess reads it."""
    try:
        board = chess.Board(text)
    except ValueError as error:
        raise BadQuery(f"bad FEN {text!r}: {error}") from None
    return Exact(_masks(board.board_fen(), "FEN"), board.turn, int(board.clean_castling_rights()))


_MATERIAL = re.compile(r"^K[PNBRQ]*v?K[PNBRQ]*$")


def parse_material(text: str) -> Material:
    """Both sides' pieces: "KRPKR" or "KRPvKR" (White's from the first K, Black's from the
    second)."""
    if not _MATERIAL.match(text):
        raise BadQuery(f"bad material {text!r}: White's pieces then Black's, each from its K, "
                       "like KRPvKR")  # fmt: skip
    text = text.replace("v", "")
    second = text.index("K", 1)
    counts = [0] * 12
    for color, part in ((chess.WHITE, text[:second]), (chess.BLACK, text[second:])):
        for letter in part:
            counts[piece_index(color, chess.Piece.from_symbol(letter).piece_type)] += 1
    return Material(tuple(counts))


_IMBALANCE = re.compile(r"^[PNBRQ]*v[PNBRQ]*$")


def parse_imbalance(text: str) -> Imbalance:
    """What White has more ("PPvN": two pawns more, a knight less)."""
    if not _IMBALANCE.match(text):
        raise BadQuery(f"bad imbalance {text!r}: White's extra pieces, v, Black's, like PPvN")
    white, black = text.split("v")
    pawns = white.count("P") - black.count("P")
    pieces = sum(
        sign * PIECE_VALUES[chess.Piece.from_symbol(letter).piece_type]
        for sign, side in ((1, white), (-1, black))
        for letter in side
        if letter != "P"
    )
    return Imbalance(pawns, pieces)


_SAN = re.compile(
    r"^(?:(?P<castle>O-O(?:-O)?)"
    r"|(?P<piece>[NBRQK])(?P<file>[a-h])?(?P<rank>[1-8])?(?P<x>x)?(?P<to>[a-h][1-8])"
    r"|(?P<pfile>[a-h])(?:(?P<px>x)(?P<pto_file>[a-h]))?(?P<pto_rank>[1-8])"
    r"(?:=?(?P<promotion>[NBRQ]))?)[+#]?$"
)


def parse_move(text: str, color: chess.Color) -> MovePattern:
    """A move in SAN as a pattern (see MovePattern)."""
    found = _SAN.match(text.strip())
    if not found:
        raise BadQuery(f"bad move {text!r}: a move in SAN, like Nf3, exd5, e8=Q, Rac1 or O-O")
    if found["castle"]:
        return MovePattern(color, chess.KING, 0, 1 if found["castle"] == "O-O" else 2,
                           -1, -1, None, 0)  # fmt: skip
    if found["piece"]:
        return MovePattern(
            color,
            chess.Piece.from_symbol(found["piece"]).piece_type,
            chess.parse_square(found["to"]),
            0,
            "abcdefgh".index(found["file"]) if found["file"] else -1,
            int(found["rank"]) - 1 if found["rank"] else -1,
            True if found["x"] else None,
            0,
        )
    to_file = found["pto_file"] or found["pfile"]
    to = chess.square("abcdefgh".index(to_file), int(found["pto_rank"]) - 1)
    promotion = found["promotion"]
    return MovePattern(
        color,
        chess.PAWN,
        to,
        0,
        "abcdefgh".index(found["pfile"]),
        -1,
        bool(found["px"]),
        chess.Piece.from_symbol(promotion).piece_type if promotion else 0,
    )
