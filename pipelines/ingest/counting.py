"""The first plies of kept games as (Polyglot key, Polyglot move, result for the mover).

python-chess is the authority on the rules. Kept games share their openings, so positions reached
by a sequence of SAN moves are remembered in a bounded tree and not replayed again.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import chess

from pipelines.games.game_filter import KeptGame, ScanStats
from schemas import first_play
from schemas.dimensions import MAX_RATING, average_rating_group, rating_band
from schemas.movetext import san_tokens
from schemas.polyglot import encode_move, polyglot_key, push_with_key
from schemas.speed import Speed

if TYPE_CHECKING:
    import numpy as np


class IllegalMove(ValueError):
    """A SAN token is illegal, ambiguous or unparsable in its position."""


class BadFen(ValueError):
    """A game's FEN header is not a valid starting position."""


class OpeningTree:
    """Positions reached from a start position by SAN sequences, with their keys (bounded)."""

    def __init__(self, max_nodes: int = 2_000_000) -> None:
        self.max_nodes = max_nodes
        self.hits = 0
        self.misses = 0
        self._clear()

    def _clear(self) -> None:
        self._roots: dict[str, int] = {}
        self._keys: array[int] = array("Q")
        self._children: dict[tuple[int, bytes], tuple[int, int]] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def _root(self, fen: str | None, chess960: bool) -> tuple[int, chess.Board]:
        name = fen or chess.STARTING_FEN
        node = self._roots.get(name)
        board = self._board(fen, chess960)
        if node is None:
            node = len(self._keys)
            self._keys.append(polyglot_key(board))
            self._roots[name] = node
        return node, board

    @staticmethod
    def _board(fen: str | None, chess960: bool) -> chess.Board:
        if fen is None:
            return chess.Board(chess960=chess960)
        try:
            board = chess.Board(fen, chess960=chess960)
        except ValueError as exc:
            raise BadFen(f"invalid FEN {fen!r}: {exc}") from None
        status = board.status()
        if chess960:
            status &= ~chess.STATUS_BAD_CASTLING_RIGHTS  # python-chess drops impossible rights
        if status:
            raise BadFen(f"FEN is not a legal position: {fen!r}")
        return board

    def walk(
        self, sans: list[bytes], fen: str | None = None, chess960: bool = False
    ) -> list[tuple[int, int]]:
        """Return (key before the move, Polyglot move) for each SAN move, in order."""
        if len(self._keys) >= self.max_nodes:
            self._clear()
        node, board = self._root(fen, chess960)
        out: list[tuple[int, int]] = []
        replayed = 0  # how many of the moves so far have been pushed on `board`
        for ply, san in enumerate(sans):
            key = self._keys[node]
            cached = self._children.get((node, san))
            if cached is not None:
                self.hits += 1
                node, raw = cached
                out.append((key, raw))
                continue
            self.misses += 1
            for earlier in sans[replayed:ply]:
                board.push(board.parse_san(earlier.decode("ascii")))
            replayed = ply
            try:
                move = board.parse_san(san.decode("ascii"))
            except (ValueError, UnicodeDecodeError) as exc:
                raise IllegalMove(f"ply {ply + 1}: {san!r}: {exc}") from None
            if not move:
                raise IllegalMove(f"ply {ply + 1}: {san!r}: a null move")
            raw = encode_move(board, move)
            child_key = push_with_key(board, move, key)
            replayed = ply + 1
            child = len(self._keys)
            self._keys.append(child_key)
            self._children[(node, san)] = (child, raw)
            out.append((key, raw))
            node = child
        return out


@dataclass
class MoveRows:
    """Growing columns of per-ply rows: key, move, speed, rating band, mover's points, rating
    group of the game, the mover's rating and the ply's first-play rank (schemas.first_play),
    which carries whether Black is to move (first_play.BLACK_TO_MOVE) until a month is written."""

    keys: array[int] = field(default_factory=lambda: array("Q"))
    moves: array[int] = field(default_factory=lambda: array("H"))
    speeds: array[int] = field(default_factory=lambda: array("B"))
    bands: array[int] = field(default_factory=lambda: array("H"))
    points: array[int] = field(default_factory=lambda: array("B"))
    groups: array[int] = field(default_factory=lambda: array("H"))
    ratings: array[int] = field(default_factory=lambda: array("H"))
    first_plays: array[int] = field(default_factory=lambda: array("Q"))

    def __len__(self) -> int:
        return len(self.keys)


def count_game(
    game: KeptGame,
    plies: int,
    tree: OpeningTree,
    rows: MoveRows,
    chess960: bool = False,
    sans: list[bytes] | None = None,
    *,
    rank: int = 0,
) -> int:
    """Append the first plies of a kept game to rows; return how many were added.

    `rank`: the game's first-play rank (schemas.first_play.game_rank), which each ply's
    visit of its position adds to.
    """
    if sans is None:
        sans = san_tokens(game.movetext, plies)
    if not sans:
        return 0
    walked = tree.walk(sans, game.fen, chess960)
    white_to_move = True
    if game.fen is not None:
        white_to_move = game.fen.split()[1:2] != ["b"]
    speed = game.speed.ordinal
    band = game.rating_band
    group = game.rating_group
    white_points = game.result
    visits: dict[int, int] = {}
    for key, raw in walked:
        visit = visits.get(key, 0)
        visits[key] = visit + 1
        side = 0 if white_to_move else first_play.BLACK_TO_MOVE
        rows.first_plays.append(side | (rank + min(visit, first_play.LAST_VISIT)))
        rows.keys.append(key)
        rows.moves.append(raw)
        rows.speeds.append(speed)
        rows.bands.append(band)
        rows.points.append(white_points if white_to_move else 2 - white_points)
        rows.groups.append(group)
        rows.ratings.append(min(game.white_elo if white_to_move else game.black_elo, MAX_RATING))
        white_to_move = not white_to_move
    return len(walked)


#: Each speed's ordinal, as runs store it.
_ORDINALS = {speed: speed.ordinal for speed in Speed}


class MoveCounter:
    """Counts the first plies of kept games into rows, replaying Standard games in batches."""

    def __init__(
        self,
        plies: int,
        stats: ScanStats,
        tree: OpeningTree | None = None,
        chess960: bool = False,
        batch_size: int = 2048,
        batched: bool | None = None,
    ) -> None:
        self.plies = plies
        self.stats = stats
        self.tree = tree if tree is not None else OpeningTree()
        self.chess960 = chess960
        self.rows = MoveRows()
        self.batch_size = batch_size
        self.batched = not chess960 if batched is None else batched
        #: Games waiting for a batch, each with its place.
        self._pending: list[tuple[KeptGame, int]] = []
        #: The pending games' ratings (at most MAX_RATING), speed ordinals, White's points and
        #: places, five numbers a game.
        self._numbers: array[int] = array("q")
        #: Games added so far: the next one's place (see ScanStats.rejected).
        self.added = 0

    def add(self, game: KeptGame) -> None:
        """Count a kept game (perhaps later, in a batch)."""
        place = self.added
        self.added += 1
        if not self.batched or game.fen is not None:
            self._count_one(game, None, place)
            return
        self._queue(game, place)
        if len(self._pending) >= self.batch_size:
            self.flush()

    def skip(self, reason: str) -> None:
        """Count a game that passed the filter as dropped under `reason`, in its place."""
        self._reject(reason, self.added)
        self.added += 1

    def _queue(self, game: KeptGame, place: int) -> None:
        """Add a game to the next batch, in its place."""
        self._pending.append((game, place))
        white, black, speed, result = game[:4]
        self._numbers.extend(
            (min(white, MAX_RATING), min(black, MAX_RATING), _ORDINALS[speed], result, place)
        )

    def _reject(self, reason: str, place: int) -> None:
        self.stats.drop(reason)
        self.stats.rejected.append(place)

    def _count_one(self, game: KeptGame, sans: list[bytes] | None, place: int) -> None:
        rank = first_play.game_rank(place)
        try:
            added = count_game(
                game, self.plies, self.tree, self.rows, self.chess960, sans, rank=rank
            )
        except IllegalMove:
            self._reject("illegal_move", place)
            return
        except BadFen:
            self._reject("bad_fen", place)
            return
        if added:
            self.stats.games_kept += 1
        else:
            self._reject("no_moves", place)

    def take_rows(self) -> MoveRows:
        """Return the rows counted so far (waiting games included), and start new ones."""
        self.flush()
        rows, self.rows = self.rows, MoveRows()
        return rows

    def flush(self) -> None:
        """Count the games waiting for a batch.

        Each movetext goes to the compiled walk as it is; one it refuses (a variation, say) goes
        again as its SAN tokens, as python-chess's reader finds them. A game the walk refuses
        both ways, or in which it finds no move, is counted by python-chess from its movetext.
        """
        if not self._pending:
            return
        import numpy as np

        from pipelines.games.sanwalk import walk_openings

        pending, self._pending = self._pending, []
        numbers = np.frombuffer(self._numbers, dtype=np.int64).reshape(len(pending), 5).copy()
        self._numbers = array("q")
        walked = walk_openings([game.movetext for game, _ in pending], plies=self.plies)
        first_play.game_rank(int(numbers[-1, 4]))  # (the last place is the largest: it fits)
        ranks = numbers[:, 4].astype(np.uint64) << np.uint64(first_play.VISIT_BITS)
        self._add_walked(walked.keys, walked.moves, walked.lengths, numbers, ranks)
        redo = [int(i) for i in np.flatnonzero(walked.lengths <= 0)]
        tokens = [san_tokens(pending[i][0].movetext, self.plies) for i in redo]
        again = [i for i, sans in zip(redo, tokens, strict=True) if sans]
        if again:
            texts = [b" ".join(sans) for sans in tokens if sans]
            rewalked = walk_openings(texts, plies=self.plies)
            walked_all = rewalked.lengths == [len(sans) for sans in tokens if sans]
            keys, moves, lengths = rewalked
            if not walked_all.all():  # (a walk accepts only what it reads whole)
                rows = np.repeat(walked_all, np.maximum(lengths, 0))
                keys, moves, lengths = keys[rows], moves[rows], np.where(walked_all, lengths, 0)
            self._add_walked(keys, moves, lengths, numbers[again], ranks[again])
            decided = set(np.array(again)[walked_all].tolist())
            redo = [i for i in redo if i not in decided]
        self.stats.games_kept += len(pending) - len(redo)
        for index in redo:
            game, place = pending[index]
            self._count_one(game, None, place)  # python-chess decides

    def _add_walked(
        self,
        keys: np.ndarray,
        moves: np.ndarray,
        lengths: np.ndarray,
        numbers: np.ndarray,
        ranks: np.ndarray,
    ) -> None:
        """Add the rows a walk gave the games whose numbers are given (one row per game of
        `numbers`: ratings, speed ordinal, White's points, place; `ranks`: each one's first-play
        rank),
        `lengths` rows a game (none where not above 0)."""
        import numpy as np

        games = np.repeat(np.arange(len(lengths)), np.maximum(lengths, 0))
        if not len(games):
            return
        starts = np.flatnonzero(np.r_[True, games[1:] != games[:-1]])
        first_row = np.repeat(starts, np.diff(np.r_[starts, len(games)]))
        white_moves = (np.arange(len(games)) - first_row) % 2 == 0
        white_elo, black_elo, ordinal, white_points, _ = numbers.T
        band = rating_band(np.minimum(white_elo, black_elo)).astype(np.uint16)[games]
        # (Ratings beyond 16 bits, counted as MAX_RATING, leave the average in the top group
        # either way.)
        group = average_rating_group(white_elo, black_elo).astype(np.uint16)[games]
        speed = ordinal.astype(np.uint8)[games]
        points = white_points.astype(np.uint8)[games]
        points = np.where(white_moves, points, 2 - points).astype(np.uint8)
        rating = np.where(white_moves, white_elo[games], black_elo[games]).astype(np.uint16)
        self.rows.keys.frombytes(keys.astype(np.uint64).tobytes())
        self.rows.moves.frombytes(moves.astype(np.uint16).tobytes())
        self.rows.speeds.frombytes(speed.tobytes())
        self.rows.bands.frombytes(band.tobytes())
        self.rows.points.frombytes(points.tobytes())
        self.rows.groups.frombytes(group.tobytes())
        self.rows.ratings.frombytes(rating.tobytes())
        ranked = ranks[games]
        visits = _visits(keys, games, int(lengths.max()))
        if visits is not None:
            ranked += visits
        ranked |= np.where(white_moves, np.uint64(0), np.uint64(first_play.BLACK_TO_MOVE))
        self.rows.first_plays.frombytes(ranked.tobytes())


#: Games up to this many plies have their repeated positions found by comparing each ply with
#: those 4, 6, ... plies before it; longer ones by a sort.
_COMPARED_PLIES = 64


def _visits(keys: np.ndarray, games: np.ndarray, longest: int) -> np.ndarray | None:
    """Return for each row (a ply: its position's key and its game, the rows of a game
    together and in order) how many earlier plies of its game reached its position, at most
    schemas.first_play.LAST_VISIT, as uint64; None when no game comes back to a position."""
    import numpy as np

    visits = None
    if longest <= _COMPARED_PLIES:
        # A position comes back 4 plies later at the soonest, with the same side to move.
        for back in range(4, longest, 2):
            again = np.flatnonzero(keys[back:] == keys[:-back])
            again = again[games[again + back] == games[again]] + back
            if len(again):
                if visits is None:
                    visits = np.zeros(len(keys), dtype=np.uint64)
                visits[again] += np.uint64(1)
        if visits is None:
            return None
    else:
        visits = np.zeros(len(keys), dtype=np.uint64)
        order = np.lexsort((keys, games))  # (stable: a game's visits of a position by ply)
        ordered = np.column_stack((games[order], keys[order].astype(np.int64)))
        starts = np.r_[True, (ordered[1:] != ordered[:-1]).any(axis=1)]
        run_start = np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))
        visits[order] = np.arange(len(order)) - run_start
    np.minimum(visits, first_play.LAST_VISIT, out=visits)
    return visits
