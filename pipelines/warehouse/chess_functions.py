"""The warehouse's SQL functions in chess terms, as plain Python over python-chess.

`pipelines.warehouse.sql` registers them in DuckDB (importing this module on a function's first
call). Keys are Polyglot keys (`chess.polyglot.zobrist_hash`), moves Polyglot moves (castling as
king takes rook). Bad input raises `ChessInputError` with a one-line message naming the problem.
"""

from __future__ import annotations

import re

import chess
import chess.polyglot

from schemas.movetext import move_words
from schemas.polyglot import decode_move, move_to_uci, polyglot_key


class ChessInputError(ValueError):
    """A FEN, a move or a move sequence that cannot be read or played."""


_UCI = re.compile(r"^[a-h][1-8][a-h][1-8][qrbn]?$")
_NULL_MOVES = frozenset({"--", "Z0", "0000", "@@@@"})
_ANNOTATION = re.compile(r"[!?]+$")
_MOST_SHOWN = 80


def _shown(text: str) -> str:
    """Input text as quoted in a message: one line, not too long."""
    line = " ".join(text.split())
    return line if len(line) <= _MOST_SHOWN else line[: _MOST_SHOWN - 3] + "..."


def board_of_fen(fen: str) -> chess.Board:
    """Return the position of a FEN; Chess960 castling (Shredder-FEN or X-FEN) is understood.

    A FEN is read as Standard chess unless its castling rights only make sense in Chess960 (a
    king or rook off its standard square, or rook files as letters other than KQkq).
    """
    text = " ".join(fen.split())
    try:
        board = chess.Board(text)
        if board.clean_castling_rights() != board.castling_rights:
            board = chess.Board(text, chess960=True)
    except ValueError as exc:
        raise ChessInputError(f"bad FEN '{_shown(fen)}': {exc}") from None
    status = board.status()
    if status:
        problems = ", ".join(
            (flag.name or "").lower().replace("_", " ")
            for flag in chess.Status
            if flag and flag in status
        )
        raise ChessInputError(f"bad FEN '{_shown(fen)}': {problems}")
    return board


def board_after(moves: str) -> chess.Board:
    """Play a move sequence from the start position: SAN or UCI, or pasted PGN movetext.

    `"e4 c5 Nf3"`, `"1. e4 c5 2. Nf3"`, `"1.e4 {Sicilian} c5 $1 (1... e5) 2.Nf3 *"` and
    `"e2e4 c7c5 g1f3"` all reach the same position; castling may be written O-O, 0-0, e1g1 or
    e1h1. Move numbers, results, comments, NAGs and variations are left out, as PGN readers do.
    """
    return play_moves(chess.Board(), moves)


def play_moves(start: chess.Board, moves: str) -> chess.Board:
    """Return the position after a move sequence (as `board_after` reads it) from `start`.

    The one reader of move lists given by people: `book show --moves`, `book dump --moves` and
    the SQL functions; `start` is left as it is.
    """
    board = start.copy(stack=False)
    root = board.copy()
    tokens = move_words(moves.encode("utf-8", "replace"))
    for token in (t.decode("utf-8", "replace") for t in tokens):
        move_text = _ANNOTATION.sub("", token)
        try:
            if move_text in _NULL_MOVES:
                raise chess.InvalidMoveError(move_text)
            if _UCI.match(move_text):
                move = board.parse_uci(move_text)
            else:
                move = board.parse_san(move_text)
        except ValueError as exc:
            if isinstance(exc, chess.AmbiguousMoveError):
                what = "ambiguous move"
            elif isinstance(exc, chess.IllegalMoveError):
                what = "illegal move"
            else:
                what = "invalid move"
            where = (
                f"after {root.variation_san(board.move_stack)}"
                if board.move_stack
                else "at the start position"
                if root == chess.Board()
                else f"in '{root.fen()}'"
            )
            raise ChessInputError(f"{what} {_shown(token)} {where}") from None
        board.push(move)
    return board


def key_of_fen(fen: str) -> int:
    """The Polyglot key of a FEN's position."""
    return polyglot_key(board_of_fen(fen))


def key_after(moves: str) -> int:
    """The Polyglot key of the position after a move sequence from the start position."""
    return polyglot_key(board_after(moves))


def fen_after(moves: str) -> str:
    """The FEN of the position after a move sequence from the start position."""
    return board_after(moves).fen()


def san(move: int, fen: str) -> str:
    """A Polyglot move (castling as king takes rook) as SAN in a FEN's position."""
    board = board_of_fen(fen)
    if not 0 <= move <= 0xFFFF:
        raise ChessInputError(f"move {move} is not a Polyglot move (0 to 65535)")
    legal = decode_move(board, move)
    if legal is None:
        raise ChessInputError(f"move {move_to_uci(move)} ({move}) is not legal in '{_shown(fen)}'")
    return board.san(legal)


def opening_facts(pgn: str) -> tuple[int, int, str]:
    """The key, plies and FEN of the position a line reaches (the openings table's columns)."""
    board = board_after(pgn)
    return chess.polyglot.zobrist_hash(board), len(board.move_stack), board.fen()
