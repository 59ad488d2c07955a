"""Asking the tables about one position, like probetool: WDL, DTZ50, the DTZ-optimal line."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import chess

from pipelines.endgames.labeller import Labeller
from pipelines.endgames.positions import read_fen
from pipelines.endgames.probing import WDL_WORDS, RankedMove, dtz_to_wdl

#: Longest line followed (a guard; DTZ-optimal lines end in mate well before this).
MAX_LINE_PLIES = 2000


@dataclass(frozen=True)
class ProbeReport:
    """What the tables say about a position."""

    board: chess.Board
    wdl: int  # with the position's halfmove clock
    dtz: int
    line: list[chess.Move]  # the DTZ-optimal line, empty when drawn
    ranked: list[RankedMove]


def diagram(board: chess.Board) -> str:
    """Return a board diagram: White's pieces in capitals, rank numbers right, files below."""
    rule = "+---" * 8 + "+"
    rows = [rule]
    for rank in range(7, -1, -1):
        cells = []
        for file in range(8):
            piece = board.piece_at(chess.square(file, rank))
            cells.append(f" {piece.symbol() if piece else ' '} ")
        rows.append("|" + "|".join(cells) + f"| {rank + 1}")
        rows.append(rule)
    rows.append("  " + "   ".join("abcdefgh"))
    return "\n".join(rows)


def optimal_line(labeller: Labeller, board: chess.Board) -> list[chess.Move]:
    """Return the line both sides play following the best move until the game ends."""
    board = board.copy(stack=False)
    line: list[chess.Move] = []
    while len(line) < MAX_LINE_PLIES:
        if board.is_game_over(claim_draw=False):
            break
        label = labeller.label(board)
        if label.wdl50 == 0 or label.best_move is None:
            break
        line.append(label.best_move)
        board.push(label.best_move)
    return line


def probe(labeller: Labeller, fen: str) -> ProbeReport:
    """Probe a position given as FEN: WDL, DTZ, the DTZ-optimal line and ranked root moves."""
    board = read_fen(fen)
    ranked = labeller.ranked_moves(board)
    label = labeller.label(board)
    line = optimal_line(labeller, board) if label.wdl50 != 0 else []
    return ProbeReport(board, dtz_to_wdl(label.dtz, board.halfmove_clock), label.dtz, line, ranked)


def line_pgn(board: chess.Board, line: list[chess.Move], uci: bool = False) -> str:
    """Return the line as PGN with a FEN tag, in SAN or UCI."""
    end = board.copy(stack=False)
    for move in line:
        end.push(move)
    outcome = end.outcome()
    if outcome is not None and outcome.winner is not None:
        result = "1-0" if outcome.winner == chess.WHITE else "0-1"
    else:
        result = "*"
    if uci:
        tokens = []
        replay = board.copy(stack=False)
        for move in line:
            if replay.turn == chess.WHITE:
                tokens.append(f"{replay.fullmove_number}.")
            elif not tokens:
                tokens.append(f"{replay.fullmove_number}...")
            tokens.append(move.uci())
            replay.push(move)
        text = " ".join(tokens)
    else:
        text = board.variation_san(line)
    body = textwrap.fill(f"{text} {result}".strip(), width=79)
    return f'[FEN "{board.fen()}"]\n\n{body}'


def format_report(report: ProbeReport, tables: int, uci: bool = False, ranks: bool = False) -> str:
    """Return the probe's text, as probetool prints it."""
    board = report.board
    parts = [
        f"Found {tables} WDL and {tables} DTZ tablebase files.",
        diagram(board),
        f"WDL = {report.wdl} ({WDL_WORDS[report.wdl]})",
        f"DTZ50 = {report.dtz} ply",
    ]
    if board.is_checkmate():
        parts.append("Checkmate.")
    elif board.is_stalemate():
        parts.append("Stalemate.")
    elif report.line:
        parts.append("DTZ50-optimal mating line:")
        parts.append(line_pgn(board, report.line, uci))
    if ranks and report.ranked:
        parts.append("Ranked root moves:")
        clock = board.halfmove_clock
        for ranked in report.ranked:
            name = ranked.move.uci() if uci else board.san(ranked.move)
            result = WDL_WORDS[dtz_to_wdl(ranked.dtz, clock)]
            parts.append(f"{name:>8} rank = {ranked.rank:5d}  dtz = {ranked.dtz:4d}  ({result})")
    return "\n".join(parts)
