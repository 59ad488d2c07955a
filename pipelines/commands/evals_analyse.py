"""`chesspipe evals analyse`: a UCI engine on a book's positions, into the evaluation store."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    SETTING_FLAGS,
    add_book_options,
    add_engine_options,
    add_progress_options,
    existing_warehouse,
    int_range,
    settings_from_args,
)
from pipelines.errors import ChesspipeError
from schemas.evals import MOST_LINES


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "analyse",
        help="evaluate a book's or a suite's positions with a UCI engine",
        description="Evaluate with a UCI engine (through python-chess; one engine per worker, "
        "Threads 1, a new game per position) every position of a book and the position after "
        "each of its moves: the book BOOK.bin, or the book --months would build (with the book "
        "options); or each opening of a suite (--suite). Positions stored at the same or a "
        "deeper limit are skipped, so a second month costs only its new positions. Evaluations "
        "are saved in batches: a killed run loses at most a batch, and running it again "
        "resumes. An engine that dies or hangs is started again and the position tried once "
        "more, then counted as failed.",
    )
    parser.add_argument("--warehouse", required=True, type=Path)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--book", type=Path, help="the positions of this Polyglot book")
    source.add_argument(
        "--months", help="the positions of the book these months build (as book build reads them)"
    )
    source.add_argument(
        "--suite",
        type=Path,
        help="the positions of this opening suite (.epd or .pgn, or zipped; chesspipe suite "
        "build writes them): each opening's position as the suite gives it",
    )
    add_book_options(parser)
    add_engine_options(parser)
    parser.add_argument(
        "--multipv",
        type=int_range(1, MOST_LINES),
        default=1,
        help="principal variations per position (1): with more, the store keeps each one's "
        "first move and score as the position's lines (the first is its evaluation)",
    )
    parser.add_argument(
        "--wdl",
        action="store_true",
        help="the engine must give its win/draw/loss model (UCI_ShowWDL), and positions "
        "stored without one are analysed again (a suite's --draw-rate needs it)",
    )
    add_progress_options(parser)
    parser.set_defaults(handler=run)


def _book_walk(args: argparse.Namespace) -> tuple[Any, dict[int, list[int]]]:
    """The book's walk (a board for each position it reaches) and its moves by key."""
    from pipelines.evals.positions import book_moves, walk
    from schemas.polyglot import BookFormatError, open_book

    if args.book is not None:
        try:
            book = open_book(args.book)
        except BookFormatError as exc:
            raise ChesspipeError(str(exc)) from None
    else:
        from pipelines.books.build import EmptyBook, build_book
        from pipelines.commands.book_build import book_settings_from_args

        settings = book_settings_from_args(args)
        with tempfile.TemporaryDirectory(prefix="chesspipe-evals-") as folder:
            out = Path(folder) / "book.bin"
            try:
                build_book(args.warehouse, args.months, out, settings, allow_empty=False)
            except EmptyBook as exc:
                raise ChesspipeError(exc.named(SETTING_FLAGS)) from None
            book = open_book(out)
    moves = book_moves(book)
    return walk(moves), moves


def run(args: argparse.Namespace) -> int:
    from pipelines.commands.ingest import progress_shown
    from pipelines.evals.analyse import analyse_positions, format_progress
    from pipelines.evals.settings import AnalysisSettings

    existing_warehouse(args.warehouse)
    limits = ("nodes", "depth", "movetime", "multipv", "wdl", "workers")
    settings = settings_from_args(AnalysisSettings, args, limits, hash_mb=args.hash)
    book = None if args.suite is not None else _book_walk(args)
    if book is None:
        from pipelines.suites.files import usable_positions

        boards = [position.board for position in usable_positions(args.suite)]
    else:
        boards = list(book[0].boards.values())
    with progress_shown(args) as bar:

        def progress(report: Any) -> None:
            if bar is not None:
                bar.show(format_progress(report), report.seconds, force=report.finished)

        result = analyse_positions(args.warehouse, boards, args.engine, settings, progress=progress)
        summary = result.to_json()
        failed = list(result.failed)
        if book is not None:
            # The positions after the engine's own best moves that are no book moves: the
            # reference a book move's loss is measured from (pipelines.evals.pruning).
            from pipelines.evals.positions import after_best_moves
            from pipelines.evals.store import read_evaluations

            walked, moves = book
            stored = read_evaluations(args.warehouse, [k for k in moves if k in walked.boards])
            after = list(after_best_moves(walked, moves, stored).values())
            more = analyse_positions(
                args.warehouse, after, args.engine, settings, progress=progress
            )
            summary["after_best_moves"] = more.to_json()
            failed += more.failed
    for failure in failed[:5]:
        sys.stderr.write(f"failed: {failure.fen}: {failure.reason}\n")
    print(json.dumps(summary, indent=2))
    return 0
