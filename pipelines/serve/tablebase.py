"""The lila-tablebase API (`/standard`, `/standard/mainline`) from local Syzygy tables.

Answers come from the endgames labeller's backend (Fathom when installed, else python-chess).
Fathom keeps global state, so every probe holds one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess

from pipelines.endgames.labeller import Labeller
from pipelines.endgames.probing import TablebaseError, label_from_root, move_rank

#: The longest mainline returned (plies); a DTZ-optimal line of the 3-7-piece tables is shorter.
MAX_MAINLINE = 1000


class NotCovered(Exception):
    """A position the tables cannot answer (HTTP 404)."""


def category(wdl: int, dtz: int, precise: bool, clock: int) -> str:
    """Lila-tablebase's category of a position from the side to move.

    ``wdl`` and ``dtz`` are as python-chess's probes give them (halfmove clock taken as 0);
    the 50-move rule is applied with the position's own ``clock``. A rounded DTZ may be one ply
    above the true value, so a result the rounding could flip is ``maybe-win``/``maybe-loss``.
    """
    if wdl == 0 or dtz == 0:
        return "draw"
    if wdl == 1:
        return "cursed-win"
    if wdl == -1:
        return "blessed-loss"
    plies = abs(dtz) + clock
    low = plies - (0 if precise else 1)
    if plies <= 100:
        outcome = "win"
    elif low > 100:
        outcome = "cursed-win"
    else:
        outcome = "maybe-win"
    if wdl > 0:
        return outcome
    return {"win": "loss", "cursed-win": "blessed-loss", "maybe-win": "maybe-loss"}[outcome]


def precise(dtz: int) -> bool:
    """Whether a DTZ is certainly exact: 0, or 1 ply (a zeroing move next), which Syzygy
    derives from WDL. Larger values may be stored in full moves (rounded) by the DTZ tables;
    this server does not read the tables' per-side precision flags, so it leaves them null."""
    return abs(dtz) <= 1


class Tablebase:
    """Syzygy answers in lila-tablebase's JSON shapes."""

    def __init__(self, folders: Sequence[Path], backend: str = "auto") -> None:
        self.labeller = Labeller(folders, backend)
        self.lock = threading.Lock()

    @property
    def backend_name(self) -> str:
        return self.labeller.backend_name

    def close(self) -> None:
        self.labeller.close()

    def _check(self, board: chess.Board) -> None:
        if board.is_checkmate() or board.is_stalemate() or board.occupied == board.kings:
            return
        try:
            self.labeller.tables.check(board)
        except TablebaseError as exc:
            raise NotCovered(str(exc)) from None

    def _wdl_dtz(self, board: chess.Board) -> tuple[int, int]:
        """WDL and DTZ (halfmove clock as 0) of a covered position; terminal ones included."""
        if board.is_checkmate():
            return -2, 0
        if board.is_stalemate() or board.occupied == board.kings:
            return 0, 0
        root = self.labeller.backend.root(board)
        return root.wdl, root.dtz

    def _info(
        self, board: chess.Board, wdl: int, dtz: int, mate: bool, stalemate: bool
    ) -> dict[str, Any]:
        exact = precise(dtz)
        return {
            "category": "loss" if mate else category(wdl, dtz, exact, board.halfmove_clock),
            "dtz": dtz,
            "precise_dtz": dtz if exact else None,
            "dtm": None,
            "checkmate": mate,
            "stalemate": stalemate,
            "variant_win": False,
            "variant_loss": False,
            "insufficient_material": board.is_insufficient_material(),
        }

    def standard(self, board: chess.Board) -> dict[str, Any]:
        """The `/standard` answer: the position and every legal move, best first (ranked as
        the labeller ranks them: mates, then wins within the 50-move budget shortest first,
        draws, losses longest first).

        One root probe answers for the position and, through each move's DTZ, for the
        positions after its moves (`child_wdl_dtz`); only positions after zeroing moves, whose
        move DTZ says only the result, are probed again."""
        self._check(board)
        with self.lock:
            wdl, dtz = self._wdl_dtz(board)
            answer = self._info(board, wdl, dtz, board.is_checkmate(), board.is_stalemate())
            root = self.labeller.backend.root(board) if any(board.legal_moves) else None
            moves = []
            for move, v in root.moves if root else ():
                zeroing = board.is_zeroing(move)
                san = board.san(move)
                child = board.copy(stack=False)
                child.push(move)
                stuck = not any(child.generate_legal_moves())
                mate = stuck and child.is_check()
                stalemate = stuck and not mate
                if zeroing or stuck:
                    child_wdl, child_dtz = self._wdl_dtz(child)
                else:
                    child_wdl, child_dtz = child_wdl_dtz(v)
                entry: dict[str, Any] = {"uci": move.uci(), "san": san, "zeroing": zeroing}
                entry.update(self._info(child, child_wdl, child_dtz, mate, stalemate))
                rank = 10_000 if mate else move_rank(v, board.halfmove_clock)
                moves.append((entry, (-rank, *_tie_key(move))))
        moves.sort(key=lambda item: item[1])
        answer["moves"] = [entry for entry, _ in moves]
        return answer

    def mainline(self, board: chess.Board) -> dict[str, Any]:
        """The `/standard/mainline` answer: the DTZ-optimal line to mate, or to a 50-move
        draw claim, or nothing for a drawn position."""
        self._check(board)
        board = board.copy(stack=False)
        with self.lock:
            _, dtz = self._wdl_dtz(board)
            line: list[dict[str, Any]] = []
            winner: str | None = None
            while len(line) < MAX_MAINLINE:
                if board.is_checkmate():
                    winner = "b" if board.turn == chess.WHITE else "w"
                    break
                if board.is_game_over() or board.halfmove_clock >= 100:
                    break
                root = self.labeller.backend.root(board)
                label = label_from_root(root, board.halfmove_clock)
                if label.wdl50 == 0 or label.best_move is None:
                    break
                line.append(
                    {
                        "uci": label.best_move.uci(),
                        "san": board.san(label.best_move),
                        "dtz": root.dtz,
                    }
                )
                board.push(label.best_move)
        return {
            "dtz": dtz,
            "precise_dtz": dtz if precise(dtz) else None,
            "mainline": line,
            "winner": winner,
        }


def child_wdl_dtz(move_dtz: int) -> tuple[int, int]:
    """WDL and DTZ (halfmove clock as 0, from the side to move there) of the position after a
    move that does not zero the halfmove clock, from the move's DTZ: a backend gives such a move
    the child's DTZ negated and moved one ply away from 0 (`probing.RootProbe`). The WDL follows
    from the DTZ as python-chess's `probe_dtz` documents it: 1..100 a win, above 100 a cursed
    win, and the same negated for losses."""
    if move_dtz == 0:
        return 0, 0
    dtz = -(move_dtz - 1) if move_dtz > 0 else -(move_dtz + 1)
    wdl = 2 if abs(dtz) <= 100 else 1
    return (wdl if dtz > 0 else -wdl), dtz


def _tie_key(move: chess.Move) -> tuple[int, int, int]:
    """Equal ranks in a fixed order: from, to, stronger promotion first (as the labeller)."""
    return (move.from_square, move.to_square, -(move.promotion or 0))
