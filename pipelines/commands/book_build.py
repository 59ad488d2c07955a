"""`chesspipe book build`: a weighted Polyglot book from the move statistics."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_book_options(parser: argparse.ArgumentParser) -> None:
    """Add the book options shared by book build and build-month."""
    parser.add_argument("--min-games", type=int, default=20, help="games a move needs (20)")
    parser.add_argument("--min-score", type=float, default=0.35, help="score a move needs (0.35)")
    parser.add_argument("--book-speeds", default=None, help="only these speeds (comma-separated)")
    parser.add_argument("--min-band", type=int, default=None, help="only rating bands >= this")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "build",
        help="build a Polyglot .bin book from move statistics",
        description="Aggregate the move statistics of MONTHS with DuckDB and write a weighted "
        "Polyglot book: weight = 2 x wins + draws, scaled per position to fit 16 bits.",
    )
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument("--months", required=True, help="YYYY-MM or YYYY-MM..YYYY-MM")
    parser.add_argument("--out", required=True, type=Path)
    add_book_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.books.build import BookSettings, build_book

    settings = BookSettings(
        min_games=args.min_games,
        min_score=args.min_score,
        speeds=tuple(s for s in args.book_speeds.split(",") if s) if args.book_speeds else None,
        min_band=args.min_band,
    )
    manifest = build_book(args.warehouse, args.months, args.out, settings)
    print(
        json.dumps(
            {k: manifest[k] for k in ("out", "months", "entries", "positions", "games")}, indent=2
        )
    )
    return 0
