"""`chesspipe book report`: a book as one self-contained HTML page with charts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


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
        "lines from the start position in SAN with weights and percentages, book size, "
        "coverage by ply, and charts.",
    )
    parser.add_argument("book", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    parser.add_argument("--plies", type=int, default=4, help="depth of the opening tree (4)")
    parser.add_argument(
        "--width",
        type=_widths,
        default=(5, 3),
        help="moves shown per position, by ply, the last repeating (5,3)",
    )
    parser.add_argument(
        "--max-plies", type=int, default=60, help="depth limit of the coverage walk (60)"
    )
    parser.add_argument(
        "--max-positions",
        type=int,
        default=200_000,
        help="position limit of the coverage walk (200000)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.books.report import write_report
    from pipelines.errors import ChesspipeError

    if args.plies < 1 or args.max_plies < 0 or args.max_positions < 1:
        raise ChesspipeError(
            "--plies and --max-positions must be at least 1, --max-plies at least 0"
        )
    out = write_report(
        args.book,
        args.out,
        plies=args.plies,
        width=args.width,
        max_plies=args.max_plies,
        max_positions=args.max_positions,
    )
    print(out)
    return 0
