"""`chesspipe book report`: a book as one self-contained HTML page with charts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipelines.books.settings import ReportSettings
from pipelines.commands.options import (
    add_evals_view_option,
    add_file_roles,
    evals_view_warehouse,
    non_negative_int,
    positive_int,
    settings_as_flags,
)
from pipelines.errors import ChesspipeError


def _widths(text: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(part) for part in text.split(","))
    except ValueError:
        message = f"{text!r} is not a comma-separated list of counts"
        raise argparse.ArgumentTypeError(message) from None
    if not widths or min(widths) < 1:
        raise argparse.ArgumentTypeError("every width must be at least 1")
    return widths


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write an HTML report of a book: opening tree, coverage by ply, charts",
        description="Write one self-contained HTML page about any Polyglot book: the heaviest "
        "lines from the start position in SAN with weights and percentages, games and "
        "White/draw/Black per move (when the statistics the book was built from are at hand), "
        "the stored evaluation after each move (when a warehouse holds evaluations), "
        "opening names, board diagrams of the top positions, book size, coverage by ply, and "
        "charts.",
    )
    parser.add_argument("book", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    add_file_roles(parser, reads=("book",), writes=("out",))
    default = ReportSettings()
    parser.add_argument(
        "--plies",
        type=positive_int,
        default=default.plies,
        help=f"depth of the opening tree ({default.plies})",
    )
    parser.add_argument(
        "--width",
        type=_widths,
        default=default.width,
        help="moves shown per position, by ply, the last repeating "
        f"({','.join(map(str, default.width))})",
    )
    parser.add_argument(
        "--max-plies",
        type=non_negative_int,
        default=default.max_plies,
        help=f"depth limit of the coverage walk ({default.max_plies})",
    )
    parser.add_argument(
        "--max-positions",
        type=positive_int,
        default=default.max_positions,
        help=f"position limit of the coverage walk ({default.max_positions})",
    )
    parser.add_argument(
        "--warehouse",
        type=Path,
        help="games and White/draw/Black per move from this warehouse's statistics; by "
        "default from the one the book's manifest names, when it is at hand",
    )
    add_evals_view_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.books.report import write_report
    from pipelines.books.show import statistics_for
    from schemas.polyglot import BookFormatError

    with settings_as_flags():
        settings = ReportSettings(args.plies, args.width, args.max_plies, args.max_positions)
    try:
        statistics = statistics_for(args.book, args.warehouse)
        evals = evals_view_warehouse(args, statistics)
        print(write_report(args.book, args.out, settings, statistics=statistics, evals=evals))
    except BookFormatError as exc:
        raise ChesspipeError(str(exc)) from None
    return 0
