"""The compiled position scanner (pipelines/search/_scout.c through scan.py) finds the games and
the plies a plain python-chess search finds: each game replayed with `board.push`, each rule
read on the board as query.py and scan.py's docstrings say, Scoutfish's search loop written
again here. On real games (Lichess, Capablanca's), games from FEN starts and Chess960 games;
then damaged data, `limit`, and arrow input."""

from __future__ import annotations

import functools
import io
import random
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import chess
import chess.pgn
import numpy as np
import pyarrow as pa
import pytest

from bench.data import read_text
from pipelines.search.query import (
    PIECE_VALUES,
    RESULTS,
    Condition,
    Exact,
    Imbalance,
    Material,
    MovePattern,
    Query,
    SubFen,
    parse_exact,
    parse_material,
    parse_move,
    parse_query,
    parse_sub_fen,
)
from pipelines.search.scan import ScanResult, scan_games
from schemas.polyglot import encode_move
from tests.conftest import GAMES_2013, GAMES_2021, ODD_CASES, OTB, need
from tests.random_moves import random_move

WHITE, BLACK = chess.WHITE, chess.BLACK
P, N, B, R, Q, K = chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING


class MoveSeen(NamedTuple):
    """A move as python-chess sees it on its board."""

    color: chess.Color
    piece_type: chess.PieceType
    from_square: chess.Square
    to_square: chess.Square
    castle: int  # 0, 1 short, 2 long
    capture: bool
    captured: int  # the piece type taken, 0 none
    promotion: int
    en_passant: bool


class Seen(NamedTuple):
    """A position as python-chess sees it, and the move played from it (None: the last)."""

    masks: tuple[int, ...]
    counts: tuple[int, ...]
    turn: chess.Color
    castling: int
    move: MoveSeen | None


class Played(NamedTuple):
    """A game: its positions, its moves encoded for the scan, its result and start."""

    positions: list[Seen]
    moves: bytes
    result: int
    start: str | None


def replay(board: chess.Board, moves: Sequence[chess.Move], result: int) -> Played:
    """Play the moves with python-chess, noting what each position and move is."""
    start = None if board == chess.Board(chess960=board.chess960) else board.fen()
    seen, encoded = [], bytearray()
    for move in [*moves, None]:
        masks = tuple(
            int(board.pieces_mask(piece_type, color))
            for color in (WHITE, BLACK)
            for piece_type in chess.PIECE_TYPES
        )
        facts = None
        if move is not None:
            castle = 0
            if board.is_castling(move):
                castle = 1 if board.is_kingside_castling(move) else 2
            taken = board.piece_type_at(move.to_square) if board.is_capture(move) else None
            if board.is_en_passant(move):
                taken = P
            facts = MoveSeen(
                board.turn,
                board.piece_type_at(move.from_square) or 0,
                move.from_square,
                move.to_square,
                castle,
                board.is_capture(move),
                taken or 0,
                move.promotion or 0,
                board.is_en_passant(move),
            )
            encoded += encode_move(board, move).to_bytes(2, "little")
        counts = tuple(mask.bit_count() for mask in masks)
        seen.append(Seen(masks, counts, board.turn, int(board.clean_castling_rights()), facts))
        if move is not None:
            board.push(move)
    return Played(seen, bytes(encoded), result, start)


def read_games(path_text: str, count: int) -> list[Played]:
    """The first games of a PGN file (those python-chess reads without an error)."""
    handle = io.StringIO(read_text(need(Path(path_text), "real games")))
    played: list[Played] = []
    while len(played) < count:
        game = chess.pgn.read_game(handle)
        if game is None:
            break
        if game.errors:
            continue
        result = RESULTS.get(game.headers.get("Result", "*"), 255)
        played.append(replay(game.board(), list(game.mainline_moves()), result))
    return played


def random_games(count: int, seed: int, *, chess960: bool, starts: list[str]) -> list[Played]:
    """Games of random legal moves (castling, en passant and promotions made likely): Chess960
    games from random start positions, or games from the FENs of `starts`."""
    rng = random.Random(seed)
    played = []
    for _ in range(count):
        if chess960:
            board = chess.Board.from_chess960_pos(rng.choice([rng.randrange(960), 518]))
        else:
            board = chess.Board(rng.choice(starts))
        moves = []
        probe = board.copy()
        for _ in range(rng.randrange(0, 160)):
            move = random_move(probe, rng, special_share=0.6)
            if move is None:
                break
            moves.append(move)
            probe.push(move)
        played.append(replay(board, moves, rng.choice([0, 1, 2, 255])))
    return played


@functools.cache
def standard_games(size: int) -> list[Played]:
    """Real games (some from every source), and games from FEN starts taken from them."""
    played = (
        read_games(str(GAMES_2021), size)
        + read_games(str(GAMES_2013), size)
        + read_games(str(ODD_CASES), size)
        + read_games(str(OTB / "Capablanca.pgn"), size)
    )
    rng = random.Random(size)
    starts = []
    for game in rng.sample(played, 40):
        board = chess.Board()
        plies = rng.randrange(len(game.positions))
        for seen in game.positions[:plies]:
            assert seen.move is not None
            board.push(_move_of(board, seen.move))
        starts.append(board.fen())
    starts.append("r3k2r/1pp2ppp/8/2Pp4/8/8/1PP2PPP/R3K2R w KQkq d6 0 1")  # en passant first
    return played + random_games(size // 3, size, chess960=False, starts=starts)


@functools.cache
def chess960_games(size: int) -> list[Played]:
    return random_games(size // 3, size + 1, chess960=True, starts=[])


def _move_of(board: chess.Board, seen: MoveSeen) -> chess.Move:
    return chess.Move(seen.from_square, seen.to_square, seen.promotion or None)


# The brute force: the rules on python-chess's positions, and Scoutfish's loop.


def holds(condition: Condition, seen: Seen, result: int) -> bool | None:
    """Whether every rule of the condition holds (None: the result rule fails)."""
    if condition.results and result not in condition.results:
        return None
    move = seen.move
    if condition.sub_fens and not any(
        all(seen.masks[i] & mask == mask for i, mask in pieces_of(sub))
        for sub in condition.sub_fens
    ):
        return False
    if condition.materials and not any(m.counts == seen.counts for m in condition.materials):
        return False
    if condition.imbalances:
        pawns = seen.counts[0] - seen.counts[6]
        pieces = sum(
            value * (seen.counts[kind - 1] - seen.counts[kind + 5])
            for kind, value in PIECE_VALUES.items()
        )
        if not any(i.pawns == pawns and i.pieces == pieces for i in condition.imbalances):
            return False
    if condition.exact and not any(
        e.masks == seen.masks and e.turn == seen.turn and e.castling == seen.castling
        for e in condition.exact
    ):
        return False
    if condition.stm is not None and seen.turn != condition.stm:
        return False
    if condition.moves and not (move and any(move_matches(p, move) for p in condition.moves)):
        return False
    if condition.captured is not None:
        if move is None:
            return False
        if not condition.captured and move.captured:
            return False
        if condition.captured and move.captured not in condition.captured:
            return False
    return not (condition.moved and not (move and move.piece_type in condition.moved))


@functools.cache
def pieces_of(sub_fen: SubFen) -> tuple[tuple[int, int], ...]:
    """The pieces a sub-FEN names (the masks not empty), by index."""
    return tuple((i, mask) for i, mask in enumerate(sub_fen.masks) if mask)


def move_matches(pattern: MovePattern, move: MoveSeen) -> bool:
    if move.color != pattern.color or move.piece_type != pattern.piece_type:
        return False
    if pattern.castle:
        return move.castle == pattern.castle
    return (
        not move.castle
        and move.to_square == pattern.to
        and pattern.from_file in (-1, chess.square_file(move.from_square))
        and pattern.from_rank in (-1, chess.square_rank(move.from_square))
        and pattern.capture in (None, move.capture)
        and pattern.promotion in (0, move.promotion)
    )


def search(game: Played, query: Query) -> tuple[list[int] | None, int]:
    """Scoutfish's search loop over one game: the matched plies (None: no match), and the
    positions looked at."""
    conditions = query.conditions
    current, plies = 0, list[int]()
    for ply, seen in enumerate(game.positions):
        condition = conditions[current]
        first = current  # the first condition of the current streak
        while condition.streak and first and conditions[first - 1].streak == condition.streak:
            first -= 1
        if condition.streak and current > first and plies[-1] != ply - 1:
            current, plies = 0, []
        found = holds(conditions[current], seen, game.result)
        if found is None:
            return None, ply + 1
        if found:
            plies.append(ply)
            if current == len(conditions) - 1:
                return plies, ply + 1
            current += 1
    return None, len(game.positions)


class Found(NamedTuple):
    games: list[int]
    plies: list[list[int]]
    positions: int


def brute_force(games: list[Played], query: Query) -> Found:
    matched, all_plies, positions = [], [], 0
    for index, game in enumerate(games):
        plies, looked_at = search(game, query)
        positions += looked_at
        if plies is not None:
            matched.append(index)
            all_plies.append(plies)
    return Found(matched, all_plies, positions)


def same(found: ScanResult, truth: Found, query: Query) -> None:
    """The scan found what the brute force found (and looked at as many positions, for a query
    without a result rule: the scan does not replay a game of another result at all)."""
    assert found.games.tolist() == truth.games, query
    assert found.plies.tolist() == truth.plies, query
    assert found.plies.shape == (len(truth.games), len(query.conditions))
    if not any(condition.results for condition in query.conditions):
        assert found.positions == truth.positions, query


def scanned(games: list[Played], query: Query, *, chess960: bool = False) -> ScanResult:
    return scan_games(
        [game.moves for game in games],
        np.array([game.result for game in games], dtype=np.uint8),
        query,
        starts=[game.start for game in games],
        chess960=chess960,
    )


def check(queries: list[Query], size: int) -> int:
    """Every query finds the same games and plies both ways, in both sets; the matches."""
    total = 0
    for games, chess960 in ((standard_games(size), False), (chess960_games(size), True)):
        for query in queries:
            truth = brute_force(games, query)
            same(scanned(games, query, chess960=chess960), truth, query)
            total += len(truth.games)
    return total


# The queries, from positions and moves that occur.

#: Games in each source, for the quick tests and for the slow ones.
FEW, MANY = 60, 400


@pytest.fixture(scope="module")
def few() -> int:
    """The quick tests' games (FEW of each source), read once: their size."""
    standard_games(FEW)
    chess960_games(FEW)
    return FEW


def positions(size: int) -> list[Seen]:
    return [
        seen
        for games in (standard_games(size), chess960_games(size))
        for game in games
        for seen in game.positions
    ]


def sub_fen_queries(size: int) -> list[Query]:
    rng = random.Random(1)
    pool = positions(size)
    found = []
    for _ in range(10):
        items = []
        for _ in range(rng.choice([1, 1, 2])):
            seen = rng.choice(pool)
            pieces = [
                (i, square)
                for i, mask in enumerate(seen.masks)
                for square in chess.scan_forward(mask)
            ]
            masks = [0] * 12
            for i, square in rng.sample(pieces, min(len(pieces), rng.randrange(1, 5))):
                masks[i] |= 1 << square
            items.append(SubFen(tuple(masks)))
        found.append(Query((Condition(sub_fens=tuple(items)),)))
    for text in (
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R",
        "8/8/8/8/8/8/8/8",
        "8/8/8/3k4/8/8/8/8",
        "8/8/8/8/8/8/8/R3K2R",
        "8/8/8/8/4Q3/8/8/8",
    ):
        found.append(Query((Condition(sub_fens=(parse_sub_fen(text),)),)))
    return found


def material_queries(size: int) -> list[Query]:
    rng = random.Random(2)
    pool = [seen for seen in positions(size) if seen.move is None or rng.random() < 0.01]
    found = [Query((Condition(materials=(Material(rng.choice(pool).counts),)),)) for _ in range(10)]
    found.append(Query((Condition(materials=tuple(Material(s.counts) for s in pool[:30])),)))
    for texts in (["KRKR"], ["KQKQ"], ["KRPKR", "KRKRP"], ["KQRRBBNNPPPPPPPPKQRRBBNNPPPPPPPP"]):
        found.append(Query((Condition(materials=tuple(parse_material(t) for t in texts)),)))
    return found


def imbalance_queries(size: int) -> list[Query]:
    rng = random.Random(3)
    found = []
    for seen in rng.sample(positions(size), 12):
        pieces = sum(
            value * (seen.counts[kind - 1] - seen.counts[kind + 5])
            for kind, value in PIECE_VALUES.items()
        )
        found.append(
            Query((Condition(imbalances=(Imbalance(seen.counts[0] - seen.counts[6], pieces),)),))
        )
    found.append(parse_query('{"imbalance": ["PPvN", "vP"]}'))
    found.append(parse_query('{"imbalance": "v", "stm": "black"}'))
    found.append(parse_query('{"imbalance": "NvB"}'))
    return found


def exact_queries(size: int) -> list[Query]:
    rng = random.Random(4)
    pool = positions(size)
    found = [
        Query((Condition(exact=(Exact(seen.masks, seen.turn, seen.castling),)),))
        for seen in rng.sample(pool, 16)
    ]
    many = tuple(Exact(seen.masks, seen.turn, seen.castling) for seen in rng.sample(pool, 20))
    found.append(Query((Condition(exact=many),)))
    for fen in (
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w Kkq - 2 3",
    ):
        found.append(Query((Condition(exact=(parse_exact(fen),)),)))
    return found


def patterns_of(move: MoveSeen, rng: random.Random) -> MovePattern:
    """A pattern the move meets, some fields left open (or asked otherwise)."""
    if move.castle:
        return MovePattern(move.color, K, 0, move.castle, -1, -1, None, 0)
    return MovePattern(
        move.color,
        move.piece_type,
        move.to_square,
        0,
        rng.choice([-1, chess.square_file(move.from_square)]),
        rng.choice([-1, -1, chess.square_rank(move.from_square), 0]),
        rng.choice([None, move.capture, not move.capture]),
        rng.choice([0, move.promotion]),
    )


def move_queries(size: int) -> list[Query]:
    rng = random.Random(5)
    moves = [seen.move for seen in positions(size) if seen.move]
    kinds = {
        "any": moves,
        "castling": [m for m in moves if m.castle],
        "en passant": [m for m in moves if m.en_passant],
        "promotion": [m for m in moves if m.promotion],
        "capture": [m for m in moves if m.capture],
    }
    found = []
    for name, pool in kinds.items():
        assert pool, name
        for _ in range(6):
            items = tuple(patterns_of(rng.choice(pool), rng) for _ in range(rng.choice([1, 2])))
            found.append(Query((Condition(moves=items),)))
    for text, color in (
        ("O-O", WHITE),
        ("O-O", BLACK),
        ("O-O-O", WHITE),
        ("O-O-O", BLACK),
        ("exd5", WHITE),
        ("exd6", WHITE),
        ("dxe3", BLACK),
        ("e8=Q", WHITE),
        ("a1=N", BLACK),
        ("Rac1", WHITE),
        ("R1e2", WHITE),
        ("Nbd7", BLACK),
        ("Qxf7#", WHITE),
        ("Kxf2", BLACK),
        ("Nf3", WHITE),
        ("e4", WHITE),
        ("bxa8=Q", WHITE),
    ):
        found.append(Query((Condition(moves=(parse_move(text, color),)),)))
    return found


def piece_kind_queries(size: int) -> list[Query]:
    del size
    found = [
        Condition(captured=frozenset()),
        Condition(captured=frozenset({Q})),
        Condition(captured=frozenset({P}), stm=BLACK),
        Condition(captured=frozenset({R, N})),
        Condition(moved=frozenset({K}), captured=frozenset({B})),
        Condition(moved=frozenset({P, Q}), stm=WHITE, captured=frozenset({Q})),
        Condition(moved=frozenset()),
        Condition(moved=frozenset({K})),
        Condition(stm=BLACK),
        Condition(results=frozenset({RESULTS["1-0"]}), moved=frozenset({Q})),
        Condition(
            results=frozenset({RESULTS["0-1"], RESULTS["1/2-1/2"]}),
            captured=frozenset({Q}),
            stm=WHITE,
        ),
        Condition(results=frozenset({RESULTS["*"]})),
        Condition(),
    ]
    return [Query((condition,)) for condition in found]


def sequence_queries(size: int) -> list[Query]:
    del size
    found = [
        '{"sequence": [{"white-move": "e4"}, {"captured": "Q"}]}',
        '{"sequence": [{"sub-fen": "8/8/8/8/8/8/8/R3K2R"}, {"black-move": "O-O"}, '
        '{"material": "KRKR"}]}',
        '{"sequence": [{"pass": ""}, {"pass": ""}, {"pass": ""}]}',
        '{"sequence": [{"moved": "K"}, {"moved": "K", "stm": "white"}, {"captured": ""}]}',
        '{"sequence": [{"imbalance": "vP"}, {"imbalance": "v"}, {"result": "1-0"}]}',
        '{"sequence": [{"captured": "P"}, {"captured": "P"}, {"captured": "P"}, '
        '{"captured": "P"}]}',
    ]
    return [parse_query(text) for text in found]


def streak_queries(size: int) -> list[Query]:
    del size
    found = [
        '{"streak": [{"white-move": "e4"}, {"black-move": "e5"}, {"white-move": "Nf3"}]}',
        '{"streak": [{"moved": "P"}, {"moved": "P"}, {"moved": "P"}]}',
        '{"streak": [{"moved": "P"}, {"moved": "N"}]}',
        '{"streak": [{"captured": "QRBN"}, {"captured": "QRBN"}]}',
        '{"sequence": [{"white-move": "Nf3"}, {"streak": [{"captured": "Q"}, {"captured": "Q"}]}]}',
        '{"sequence": [{"moved": "P"}, {"streak": [{"moved": "N"}, {"moved": "N"}]}, '
        '{"captured": "R"}]}',
        '{"sequence": [{"streak": [{"moved": "N"}, {"moved": "N"}]}, '
        '{"streak": [{"moved": "B"}, {"moved": "B"}]}]}',
        '{"sequence": [{"streak": [{"moved": "K"}, {"pass": ""}]}, {"moved": "K"}, '
        '{"streak": [{"moved": "R"}, {"moved": "R"}]}]}',
        '{"streak": [{"stm": "white"}, {"pass": ""}, {"captured": "P"}, {"captured": "P"}]}',
    ]
    return [parse_query(text) for text in found]


FAMILIES = {
    "sub-fen": sub_fen_queries,
    "material": material_queries,
    "imbalance": imbalance_queries,
    "exact": exact_queries,
    "moves": move_queries,
    "piece kinds, stm, results": piece_kind_queries,
    "sequences": sequence_queries,
    "streaks": streak_queries,
}


@pytest.mark.parametrize("family", FAMILIES)
def test_each_rule_finds_what_python_chess_finds(family: str, few: int) -> None:
    queries = FAMILIES[family](few)
    assert check(queries, few) > 0


@pytest.mark.slow
def test_every_rule_finds_what_python_chess_finds_in_more_games() -> None:
    queries = [query for make in FAMILIES.values() for query in make(MANY)]
    assert check(queries, MANY) > len(queries)


def encoded(board: chess.Board, sans: str) -> bytes:
    """A game's moves from SAN, encoded for the scan (the board is played on)."""
    out = bytearray()
    for san in sans.split():
        move = board.parse_san(san)
        out += encode_move(board, move).to_bytes(2, "little")
        board.push(move)
    return bytes(out)


def test_a_broken_streak_starts_the_query_again_at_the_same_ply() -> None:
    moves = encoded(chess.Board(), "e4 e5 d4 Nc6 Nf3 Nf6")
    streak = parse_query('{"streak": [{"moved": "P"}, {"moved": "N"}]}')
    # e4 (ply 0), then e5 is no knight's move: at ply 2 the streak starts again, with d4.
    assert scan_games([moves], np.array([2]), streak).plies.tolist() == [[2, 3]]
    # A streak after a condition met long before: only the streak's own plies must follow.
    query = parse_query(
        '{"sequence": [{"white-move": "e4"}, {"streak": [{"moved": "N"}, {"moved": "N"}]}]}'
    )
    assert scan_games([moves], np.array([2]), query).plies.tolist() == [[0, 3, 4]]
    # A condition met is not tried again at its ply: the next is tried from the ply after.
    twice = parse_query('{"sequence": [{"stm": "white"}, {"stm": "white"}]}')
    assert scan_games([moves], np.array([2]), twice).plies.tolist() == [[0, 2]]
    # The last position has no move: a move rule never holds there.
    last = parse_query('{"sequence": [{"black-move": "Nf6"}, {"moved": "PNBRQK"}]}')
    assert scan_games([moves], np.array([2]), last).games.tolist() == []


def test_empty_games_and_rules_of_no_move() -> None:
    query = Query((Condition(),))
    found = scan_games([b"", None, b"\x01"], np.array([2, 0, 255]), query)
    assert (found.games.tolist(), found.plies.tolist(), found.positions) == (
        [0, 1, 2],
        [[0], [0], [0]],
        3,
    )
    for condition in (
        Condition(captured=frozenset()),
        Condition(moved=frozenset({P})),
        Condition(moves=(parse_move("e4", WHITE),)),
    ):
        found = scan_games([b"", None], np.array([2, 2]), Query((condition,)))
        assert found.games.tolist() == [] and found.positions == 2


def damaged(game: Played, ply: int, rng: random.Random) -> bytes | None:
    """The game's moves with the move at `ply` damaged (None: no damage of the kind drawn fits
    there)."""
    seen = game.positions[ply]
    mover = 0 if seen.turn == WHITE else 6
    occupied = [0, 0]
    for i, mask in enumerate(seen.masks):
        occupied[i >= 6] |= mask
    own, other = occupied[mover != 0], occupied[mover == 0]
    empty = ~(own | other) & chess.BB_ALL
    real = int.from_bytes(game.moves[2 * ply : 2 * ply + 2], "little")
    kind = rng.choice(["empty", "wrong side", "own piece", "bad code", "promotion", "odd"])
    if kind == "odd":
        return game.moves[: 2 * ply + 1]
    if kind == "bad code":
        raw = real | rng.choice([5, 6, 7, 8, 12]) << 12
    elif kind == "promotion":  # a promotion code on a move that promotes nothing
        if seen.move is None or seen.move.promotion:
            return None
        raw = real | 4 << 12
    else:
        froms = {"empty": empty, "wrong side": other, "own piece": own & ~seen.masks[mover + 5]}
        targets = list(chess.scan_forward(own)) if kind == "own piece" else list(range(64))
        squares = list(chess.scan_forward(froms[kind]))
        if not squares:
            return None
        source = rng.choice(squares)
        raw = rng.choice([t for t in targets if t != source]) | source << 6
    return game.moves[: 2 * ply] + raw.to_bytes(2, "little") + game.moves[2 * ply + 2 :]


def test_damaged_moves_end_the_game_there(few: int) -> None:
    rng = random.Random(7)
    games, cut = [], []
    for game in standard_games(few)[::3]:
        if len(game.positions) < 2:
            continue
        ply = rng.randrange(len(game.positions) - 1)
        moves = damaged(game, ply, rng)
        if moves is None:
            continue
        games.append(moves)
        last = game.positions[ply]._replace(move=None)
        cut.append(
            Played([*game.positions[:ply], last], game.moves[: 2 * ply], game.result, game.start)
        )
    assert len(games) > 50
    queries = [
        *material_queries(few)[:4],
        *move_queries(few)[:6],
        *streak_queries(few)[:3],
        Query((Condition(),)),
        Query((Condition(materials=(Material((0,) * 12),)),)),
    ]
    for query in queries:
        found = scan_games(
            games, np.array([g.result for g in cut]), query, starts=[g.start for g in cut]
        )
        same(found, brute_force(cut, query), query)


def test_garbage_never_crashes(few: int) -> None:
    rng = random.Random(8)
    games = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 60))) for _ in range(3000)]
    # Moves of pieces that are there, to squares anywhere: longer games of nonsense.
    for _ in range(300):
        board, out = chess.Board(), bytearray()
        for _ in range(rng.randrange(1, 80)):
            mine = list(chess.scan_forward(board.occupied_co[board.turn]))
            raw = rng.randrange(64) | rng.choice(mine) << 6 | rng.choice([0, 0, 0, 4]) << 12
            out += raw.to_bytes(2, "little")
            board.turn = not board.turn
        games.append(bytes(out))
    results = np.array([rng.choice([0, 1, 2, 7, 255]) for _ in games], dtype=np.uint8)
    for query in [
        Query((Condition(),)),
        *sub_fen_queries(few)[:3],
        *move_queries(few)[-6:],
        *piece_kind_queries(few),
        *streak_queries(few),
    ]:
        found = scan_games(games, results, query)
        assert found.positions >= len(found.games)
    # Unreadable FEN starts are games not looked at.
    found = scan_games(
        [b"", b""], np.array([2, 2]), Query((Condition(),)), starts=["not a FEN", None]
    )
    assert (found.games.tolist(), found.positions) == ([1], 1)


def test_limit_stops_after_that_many_games(few: int) -> None:
    games = standard_games(few)
    query = parse_query('{"captured": "Q"}')
    every = scanned(games, query)
    assert len(every.games) > 10
    moves, results = [g.moves for g in games], np.array([g.result for g in games])
    starts = [g.start for g in games]
    for limit in (0, 1, 7):
        found = scan_games(moves, results, query, starts=starts, limit=limit)
        assert found.games.tolist() == every.games[:limit].tolist()
        assert found.plies.tolist() == every.plies[:limit].tolist()
    assert scan_games(moves, results, query, starts=starts, limit=0).positions == 0
    stopped = scan_games(moves, results, query, starts=starts, limit=3).positions
    assert stopped < every.positions


def arrow_array(items: list[bytes | None], kind: pa.DataType) -> pa.Array:
    """An arrow array of the items, built from its buffers (pa.array of a list imports pandas:
    a second of a test's time)."""
    width = np.int64 if kind == pa.large_binary() else np.int32
    offsets = np.cumsum([0] + [len(item or b"") for item in items]).astype(width)
    present = np.array([item is not None for item in items], dtype=bool)
    buffers = [
        pa.py_buffer(np.packbits(present, bitorder="little").tobytes()),
        pa.py_buffer(offsets.tobytes()),
        pa.py_buffer(b"".join(item for item in items if item)),
    ]
    return pa.Array.from_buffers(kind, len(items), buffers, null_count=int((~present).sum()))


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary()])
def test_arrow_input_with_an_offset_and_nulls_equals_a_list(kind: pa.DataType, few: int) -> None:
    rng = random.Random(9)
    games = standard_games(few)[:120]
    listed: list[bytes | None] = [None if rng.random() < 0.2 else g.moves for g in games]
    padded = [b"\x00\x00" * 5, None, *listed, b"\xff" * 9]
    array = arrow_array(padded, kind).slice(2, len(listed))
    assert array.offset == 2 and array.null_count > 10
    results = np.array([g.result for g in games], dtype=np.uint8)
    starts = [g.start for g in games]
    for query in [*move_queries(few)[::5], *sequence_queries(few), Query((Condition(),))]:
        from_list = scan_games(listed, results, query, starts=starts)
        from_arrow = scan_games(array, results, query, starts=starts)
        assert from_list.games.tolist() == from_arrow.games.tolist()
        assert from_list.plies.tolist() == from_arrow.plies.tolist()
        assert from_list.positions == from_arrow.positions
    no_nulls = arrow_array([g.moves for g in games], kind)
    assert no_nulls.null_count == 0
    query = Query((Condition(captured=frozenset({Q})),))
    assert scan_games(no_nulls, results, query, starts=starts).games.tolist() == (
        brute_force(games, query).games
    )


def test_threads_scan_at_once(few: int) -> None:
    from concurrent.futures import ThreadPoolExecutor

    games = standard_games(few)
    queries = streak_queries(few) + sequence_queries(few)
    alone = [scanned(games, query).games.tolist() for query in queries]
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda q: scanned(games, q).games.tolist(), queries))
    assert together == alone


def test_wrong_input_is_refused() -> None:
    with pytest.raises(ValueError, match="results"):
        scan_games([b""], np.array([2, 2]), Query((Condition(),)))
    with pytest.raises(ValueError, match="starts"):
        scan_games([b""], np.array([2]), Query((Condition(),)), starts=[])
    with pytest.raises(ValueError, match="condition"):
        scan_games([b""], np.array([2]), Query(()))
    with pytest.raises(TypeError):
        scan_games(arrow_array([b"e4"], pa.string()), np.array([2]), Query((Condition(),)))
