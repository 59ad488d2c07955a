"""Iterative deepening alpha-beta search with a transposition table, quiescence and tablebases."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from itertools import islice

import chess

from engine.evaluation import ORDER_VALUES, evaluate
from engine.tablebase import Outcome, RankedMove, Tablebases

#: Score of being checkmated now; a mate in n plies scores MATE - n.
MATE = 32000
#: Deepest ply the search reaches.
MAX_PLY = 128
#: Scores at or beyond this are real mates.
MATE_BOUND = MATE - MAX_PLY
#: A tablebase win at ply p scores TB_WIN - p: above every evaluation, below every real mate.
TB_WIN = 31000
#: Scores at or beyond this are tablebase wins or mates.
TB_BOUND = TB_WIN - MAX_PLY
INFINITY = MATE + 1

EXACT, LOWER, UPPER = 0, 1, 2

#: Bytes a transposition table entry takes in memory (dict slot, key tuple, entry tuple).
TT_ENTRY_BYTES = 600


class SearchStopped(Exception):
    """The search ran out of time or nodes, or was told to stop."""


@dataclass
class Limits:
    """What a `go` command asks for; times in milliseconds."""

    depth: int | None = None
    nodes: int | None = None
    movetime: int | None = None
    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    infinite: bool = False
    searchmoves: list[chess.Move] = field(default_factory=list)


@dataclass
class Info:
    """One progress report: the result of a finished iteration."""

    depth: int
    seldepth: int
    score: int | None
    nodes: int
    seconds: float
    pv: list[chess.Move]
    tbhits: int


@dataclass
class SearchResult:
    """The move chosen, with the score and line that back it."""

    best_move: chess.Move | None
    score: int = 0
    depth: int = 0
    pv: list[chess.Move] = field(default_factory=list)
    nodes: int = 0
    tbhits: int = 0


def time_budget(limits: Limits, turn: chess.Color, overhead_ms: int) -> tuple[float, float] | None:
    """Return (soft, hard) seconds for a search, or None when time does not limit it."""
    if limits.infinite:
        return None
    if limits.movetime is not None:
        usable = max(limits.movetime - overhead_ms, limits.movetime / 2, 1) / 1000
        return usable, usable
    left = limits.wtime if turn == chess.WHITE else limits.btime
    if left is None:
        return None
    increment = (limits.winc if turn == chess.WHITE else limits.binc) or 0
    moves_to_go = min(max(limits.movestogo or 30, 1), 50)
    left = max(left - overhead_ms, 1)
    target = left / moves_to_go + 0.75 * increment
    hard = min(3 * target, left / 2 if moves_to_go > 1 else left * 0.8)
    soft = min(target, hard) * 0.6
    return max(soft, 1) / 1000, max(hard, 2) / 1000


def tablebase_score(best: RankedMove) -> int:
    """Score the root from its best tablebase move: a win in DTZ plies scores TB_WIN - DTZ.

    Syzygy tables know the distance to the next zeroing move (DTZ), not to mate, so a table win
    is no `mate N`: it is a score in the tablebase band, nearer the top the sooner the win is
    secured. Wins and losses the 50-move rule turns into draws (cursed, blessed) score 0.
    """
    if best.outcome >= Outcome.WIN:
        return TB_WIN - abs(best.dtz)
    if best.outcome == Outcome.LOSS:
        return -TB_WIN + abs(best.dtz)
    return 0


def score_to_tt(score: int, ply: int) -> int:
    """Make a mate or tablebase score relative to the node (the table is shared across plies)."""
    if score >= TB_BOUND:
        return score + ply
    if score <= -TB_BOUND:
        return score - ply
    return score


def score_from_tt(score: int, ply: int) -> int:
    """Make a stored mate or tablebase score relative to the root again."""
    if score >= TB_BOUND:
        return score - ply
    if score <= -TB_BOUND:
        return score + ply
    return score


def position_key(board: chess.Board) -> Hashable:
    """Return a hashable key that is equal for equal positions (pieces, side, rights, ep)."""
    return (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        board.occupied_co[chess.WHITE],
        board.occupied,
        board.turn,
        board.castling_rights,
        board.ep_square,
    )


def _capture_value(board: chess.Board, move: chess.Move) -> int:
    """Most valuable victim, least valuable attacker."""
    victim = board.piece_type_at(move.to_square) or chess.PAWN
    attacker = board.piece_type_at(move.from_square) or chess.PAWN
    return 10 * ORDER_VALUES[victim] - ORDER_VALUES[attacker] // 10


class Searcher:
    """A search with its transposition table and tablebase settings, reused between moves."""

    def __init__(self, hash_mb: int = 16) -> None:
        self.tt: dict[Hashable, tuple[int, int, int, chess.Move | None]] = {}
        self.tt_limit = 1
        self.resize(hash_mb)
        self.tablebases: Tablebases | None = None
        self.probe_depth = 1
        self.probe_limit = 7
        self._reset_counters()

    def resize(self, hash_mb: int) -> None:
        """Bound the transposition table to about `hash_mb` megabytes (clearing it)."""
        self.tt_limit = max(1024, hash_mb * (1 << 20) // TT_ENTRY_BYTES)
        self.tt.clear()

    def clear(self) -> None:
        """Forget everything learnt (new game)."""
        self.tt.clear()

    def _reset_counters(self) -> None:
        self.nodes = 0
        self.tbhits = 0
        self.seldepth = 0
        self.next_check = 0
        self.node_limit: int | None = None
        self.deadline: float | None = None
        self.stop_event = threading.Event()
        self.pv: list[list[chess.Move]] = [[] for _ in range(MAX_PLY + 2)]
        self.killers: list[list[chess.Move | None]] = [[None, None] for _ in range(MAX_PLY + 2)]
        self.history: dict[tuple[bool, int, int], int] = {}
        self.keys: list[Hashable] = []

    def search(
        self,
        board: chess.Board,
        limits: Limits,
        stop: threading.Event | None = None,
        report: Callable[[Info], None] | None = None,
        budget: tuple[float, float] | None = None,
    ) -> SearchResult:
        """Search a position within the limits; return the best move found (None if no moves)."""
        started = time.monotonic()
        self._reset_counters()
        self.stop_event = stop or threading.Event()
        self.node_limit = limits.nodes
        soft = started + budget[0] if budget else None
        self.deadline = started + budget[1] if budget else None
        board = board.copy()
        self.keys = self._history_keys(board)

        root_moves = list(board.legal_moves)
        if limits.searchmoves:
            wanted = [m for m in root_moves if m in limits.searchmoves]
            root_moves = wanted or root_moves
        if not root_moves:
            return SearchResult(None)
        #: The tables' verdict on the root, which the reports show unless a mate is found.
        root_verdict: int | None = None
        if self.tablebases is not None and self.tablebases.covers(board, self.probe_limit):
            ranked = self.tablebases.rank_root_moves(board)
            if ranked:
                self.tbhits += len(ranked)
                ranked = [r for r in ranked if r.move in root_moves]
                best = ranked[0].key()
                root_moves = [r.move for r in ranked if r.key() == best]
                root_verdict = tablebase_score(ranked[0])
        root_moves = self._ordered(board, root_moves, self._tt_move(board), 0)

        def shown(score: int) -> int:
            if root_verdict is None or abs(score) >= MATE_BOUND:
                return score
            return root_verdict

        result = SearchResult(root_moves[0], nodes=0, pv=[root_moves[0]])
        reported = False
        max_depth = min(limits.depth or MAX_PLY - 1, MAX_PLY - 1)
        for depth in range(1, max_depth + 1):
            self.iteration_best: tuple[chess.Move, int, list[chess.Move]] | None = None
            try:
                score = self._root(board, root_moves, depth)
            except SearchStopped:
                if self.iteration_best is not None:
                    move, score, pv = self.iteration_best
                    result = SearchResult(move, shown(score), depth, pv)
                    reported = False
                break
            move = self.pv[0][0] if self.pv[0] else root_moves[0]
            score = shown(score)
            result = SearchResult(move, score, depth, list(self.pv[0]) or [move])
            root_moves.remove(move)
            root_moves.insert(0, move)
            reported = report is not None
            if report is not None:
                report(
                    Info(
                        depth,
                        max(self.seldepth, depth),
                        score,
                        self.nodes,
                        time.monotonic() - started,
                        result.pv,
                        self.tbhits,
                    )
                )
            if limits.infinite:
                continue
            if len(root_moves) == 1 and budget is not None:
                break
            if abs(score) >= MATE_BOUND and depth >= MATE - abs(score) + 2:
                break
            if soft is not None and time.monotonic() >= soft:
                break
        result.nodes = self.nodes
        result.tbhits = self.tbhits
        if report is not None and not reported:
            # Stopped inside an iteration: report what the bestmove rests on.
            report(
                Info(
                    result.depth,
                    max(self.seldepth, result.depth),
                    result.score if result.depth else None,
                    self.nodes,
                    time.monotonic() - started,
                    result.pv,
                    self.tbhits,
                )
            )
        return result

    def _history_keys(self, board: chess.Board) -> list[Hashable]:
        """Keys of the game's earlier positions that a repetition could still reach."""
        keys: list[Hashable] = []
        copy = board.copy()
        while copy.move_stack and len(keys) < board.halfmove_clock:
            copy.pop()
            keys.append(position_key(copy))
        keys.reverse()
        return keys

    def _tt_move(self, board: chess.Board) -> chess.Move | None:
        entry = self.tt.get(position_key(board))
        return entry[3] if entry else None

    def _check_limits(self) -> None:
        self.next_check = self.nodes + 128
        if self.node_limit is not None:
            if self.nodes >= self.node_limit:
                raise SearchStopped
            self.next_check = min(self.next_check, self.node_limit)
        if self.stop_event.is_set():
            raise SearchStopped
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise SearchStopped

    def _store(
        self, key: Hashable, depth: int, bound: int, score: int, move: chess.Move | None, ply: int
    ) -> None:
        if len(self.tt) >= self.tt_limit:
            # Full: forget the oldest quarter (a dict keeps insertion order).
            for old in list(islice(self.tt, self.tt_limit // 4)):
                del self.tt[old]
        self.tt[key] = (depth, bound, score_to_tt(score, ply), move)

    def _ordered(
        self, board: chess.Board, moves: list[chess.Move], tt_move: chess.Move | None, ply: int
    ) -> list[chess.Move]:
        """Order moves: table move, captures by MVV-LVA, promotions, killers, history."""
        them = board.occupied_co[not board.turn]
        killers = self.killers[ply]
        history = self.history
        turn = board.turn
        ep_square = board.ep_square

        def order(move: chess.Move) -> int:
            if move == tt_move:
                return 10_000_000
            if chess.BB_SQUARES[move.to_square] & them:
                return 1_000_000 + _capture_value(board, move)
            if move.promotion:
                return 900_000 + move.promotion
            if move.to_square == ep_square and board.pawns & chess.BB_SQUARES[move.from_square]:
                return 1_000_000 + 990
            if move == killers[0]:
                return 800_000
            if move == killers[1]:
                return 790_000
            return history.get((turn, move.from_square, move.to_square), 0)

        return sorted(moves, key=order, reverse=True)

    def _root(self, board: chess.Board, moves: list[chess.Move], depth: int) -> int:
        alpha, beta = -INFINITY, INFINITY
        self.pv[0] = []
        key = position_key(board)
        best_score = -INFINITY
        for index, move in enumerate(moves):
            board.push(move)
            self.keys.append(key)
            try:
                if index == 0:
                    score = -self._negamax(board, depth - 1, -beta, -alpha, 1)
                else:
                    score = -self._negamax(board, depth - 1, -alpha - 1, -alpha, 1)
                    if alpha < score < beta:
                        score = -self._negamax(board, depth - 1, -beta, -alpha, 1)
            finally:
                board.pop()
                self.keys.pop()
            if score > best_score:
                best_score = score
                if score > alpha:
                    alpha = score
                    self.pv[0] = [move, *self.pv[1]]
                    self.iteration_best = (move, score, list(self.pv[0]))
        best = self.pv[0][0] if self.pv[0] else moves[0]
        self._store(key, depth, EXACT, best_score, best, 0)
        return best_score

    def _enter(self, ply: int) -> None:
        """Count a node at `ply`: clear its line, check the limits now and then, track depth."""
        self.pv[ply] = []
        self.nodes += 1
        if self.nodes >= self.next_check:
            self._check_limits()
        if ply > self.seldepth:
            self.seldepth = ply

    def _negamax(self, board: chess.Board, depth: int, alpha: int, beta: int, ply: int) -> int:
        self._enter(ply)

        key = position_key(board)
        clock = board.halfmove_clock
        if clock >= 4 and key in self.keys[-clock:]:
            return 0
        if clock >= 100 and not board.is_checkmate():
            return 0
        if chess.popcount(board.occupied) <= 4 and board.is_insufficient_material():
            return 0
        if ply >= MAX_PLY - 1:
            return evaluate(board)
        alpha = max(alpha, -MATE + ply)
        beta = min(beta, MATE - ply - 1)
        if alpha >= beta:
            return alpha

        tablebases = self.tablebases
        if (
            tablebases is not None
            and clock == 0
            and depth >= self.probe_depth
            and not board.castling_rights
            and chess.popcount(board.occupied) <= min(self.probe_limit, tablebases.max_pieces)
        ):
            wdl = tablebases.probe_wdl(board)
            if wdl is not None:
                self.tbhits += 1
                score = TB_WIN - ply if wdl == 2 else -TB_WIN + ply if wdl == -2 else 0
                self._store(key, MAX_PLY, EXACT, score, None, ply)
                return score

        if depth <= 0:
            return self._quiesce(board, alpha, beta, ply)

        pv_node = beta - alpha > 1
        tt_move = None
        entry = self.tt.get(key)
        if entry is not None:
            entry_depth, bound, stored, tt_move = entry
            if entry_depth >= depth and not pv_node:
                score = score_from_tt(stored, ply)
                if (
                    bound == EXACT
                    or (bound == LOWER and score >= beta)
                    or (bound == UPPER and score <= alpha)
                ):
                    return score

        in_check = board.is_check()
        if in_check:
            depth += 1
        elif (
            not pv_node
            and depth >= 3
            and abs(beta) < TB_BOUND
            and board.occupied_co[board.turn] & ~(board.pawns | board.kings)
            and evaluate(board) >= beta
        ):
            board.push(chess.Move.null())
            self.keys.append(key)
            try:
                score = -self._negamax(board, depth - 3, -beta, -beta + 1, ply + 1)
            finally:
                board.pop()
                self.keys.pop()
            if score >= beta:
                return beta

        moves = self._ordered(board, list(board.generate_legal_moves()), tt_move, ply)
        if not moves:
            return -MATE + ply if in_check else 0

        original_alpha = alpha
        best_score = -INFINITY
        best_move = moves[0]
        them = board.occupied_co[not board.turn]
        for index, move in enumerate(moves):
            quiet = not (
                chess.BB_SQUARES[move.to_square] & them
                or move.promotion
                or board.is_en_passant(move)
            )
            board.push(move)
            self.keys.append(key)
            try:
                if index == 0:
                    score = -self._negamax(board, depth - 1, -beta, -alpha, ply + 1)
                else:
                    reduction = 0
                    if (
                        depth >= 3
                        and index >= 3
                        and quiet
                        and not in_check
                        and not board.is_check()
                    ):
                        reduction = 2 if index >= 8 and depth >= 5 else 1
                    score = -self._negamax(
                        board, depth - 1 - reduction, -alpha - 1, -alpha, ply + 1
                    )
                    if reduction and score > alpha:
                        score = -self._negamax(board, depth - 1, -alpha - 1, -alpha, ply + 1)
                    if alpha < score < beta:
                        score = -self._negamax(board, depth - 1, -beta, -alpha, ply + 1)
            finally:
                board.pop()
                self.keys.pop()
            if score > best_score:
                best_score = score
                best_move = move
                if score > alpha:
                    alpha = score
                    self.pv[ply] = [move, *self.pv[ply + 1]]
                    if alpha >= beta:
                        if quiet:
                            killers = self.killers[ply]
                            if killers[0] != move:
                                killers[1] = killers[0]
                                killers[0] = move
                            slot = (board.turn, move.from_square, move.to_square)
                            self.history[slot] = self.history.get(slot, 0) + depth * depth
                        break

        if best_score >= beta:
            bound = LOWER
        elif best_score > original_alpha:
            bound = EXACT
        else:
            bound = UPPER
        self._store(key, depth, bound, best_score, best_move, ply)
        return best_score

    def _quiesce(self, board: chess.Board, alpha: int, beta: int, ply: int) -> int:
        self._enter(ply)
        if ply >= MAX_PLY - 1:
            return evaluate(board)

        in_check = board.is_check()
        if in_check:
            moves = self._ordered(board, list(board.generate_legal_moves()), None, ply)
            if not moves:
                return -MATE + ply
            best_score = -INFINITY
        else:
            best_score = evaluate(board)
            if best_score >= beta:
                return best_score
            alpha = max(alpha, best_score)
            moves = list(board.generate_legal_captures())
            own_pawns = board.pawns & board.occupied_co[board.turn]
            seventh = chess.BB_RANK_7 if board.turn == chess.WHITE else chess.BB_RANK_2
            last = chess.BB_RANK_8 if board.turn == chess.WHITE else chess.BB_RANK_1
            if own_pawns & seventh:
                moves += [
                    m
                    for m in board.generate_legal_moves(own_pawns & seventh, last & ~board.occupied)
                    if m.promotion == chess.QUEEN
                ]
            # Delta pruning: skip captures that cannot lift the score to alpha.
            margin = alpha - best_score - 200
            moves = [
                m
                for m in moves
                if m.promotion
                or ORDER_VALUES[board.piece_type_at(m.to_square) or chess.PAWN] > margin
            ]
            moves.sort(
                key=lambda m: _capture_value(board, m) + (m.promotion or 0) * 1000, reverse=True
            )

        for move in moves:
            board.push(move)
            try:
                score = -self._quiesce(board, -beta, -alpha, ply + 1)
            finally:
                board.pop()
            if score > best_score:
                best_score = score
                if score > alpha:
                    alpha = score
                    self.pv[ply] = [move, *self.pv[ply + 1]]
                    if alpha >= beta:
                        break
        return best_score
