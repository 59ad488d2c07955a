"""`chesspipe book show`: a position's book moves, or a summary of a book."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipelines.commands.options import add_evals_view_option, evals_view_warehouse


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "show",
        help="show a position's book moves, or summarise a book",
        description="Without a position, summarise the book. With --fen or --moves, list the "
        "position's legal book moves in SAN with weights and percentages, heaviest first, "
        "their games and White/draw/Black shares (when the statistics the book was built "
        "from are at hand), the stored evaluation after each move (when the warehouse holds "
        "evaluations: chesspipe evals) and opening names.",
    )
    parser.add_argument("book", type=Path)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--fen", help="position as FEN")
    where.add_argument(
        "--moves",
        help="moves from the start position: SAN, UCI or pasted PGN movetext, e.g. "
        '"e4 e5 Nf3", "e2e4 e7e5" or "1. e4 e5 2. Nf3 {comment} $1"',
    )
    parser.add_argument("--chess960", action="store_true", help="read --fen as Chess960")
    parser.add_argument(
        "--warehouse",
        type=Path,
        help="the statistics behind the moves (games, White/draw/Black) from this warehouse; "
        "by default from the one the book's manifest names, when it is at hand",
    )
    add_evals_view_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import chess

    from pipelines.books.show import (
        book_evaluations,
        describe_book,
        describe_position,
        position_from,
        statistics_for,
    )
    from pipelines.errors import ChesspipeError
    from schemas.polyglot import BookFormatError

    board = position_from(args.fen, args.moves, args.chess960)
    try:
        statistics = statistics_for(args.book, args.warehouse)
        evals_from = evals_view_warehouse(args, statistics)
        shown = board if board is not None else chess.Board()
        evaluations = None
        if evals_from is not None:
            evaluations = book_evaluations(args.book, shown, evals_from)
        if board is None:
            text = describe_book(args.book, statistics=statistics, evaluations=evaluations)
        else:
            text = describe_position(
                args.book, board, statistics=statistics, evaluations=evaluations
            )
    except BookFormatError as exc:
        raise ChesspipeError(str(exc)) from None
    print(text)
    return 0
