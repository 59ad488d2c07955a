"""`chesspipe book check`: a book's moves judged by the stored evaluations."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    existing_warehouse,
    fraction,
    non_negative_int,
    positive_int,
    settings_as_flags,
)
from pipelines.errors import ChesspipeError


def register(subparsers: Any) -> None:
    from pipelines.evals.settings import CheckSettings

    default = CheckSettings()
    parser = subparsers.add_parser(
        "check",
        help="judge a book's moves by the evaluations a warehouse stores",
        description="Play the book as an engine plays it (both sides draw moves in proportion to "
        "the weights) and list every book move reached with at least --min-probability, with "
        "its loss (the best value among the position's book moves, or the engine's own "
        "best move's, minus its own, from the mover's view); the probability-weighted mean "
        "loss; the moves losing more than --losing cp; and the evaluation where the book ends "
        "(White's view). A table, or JSON with --json.",
    )
    parser.add_argument("book", type=Path)
    parser.add_argument(
        "--evals", required=True, type=Path, help="the warehouse whose evaluations judge the book"
    )
    parser.add_argument(
        "--min-probability",
        type=fraction,
        default=default.min_probability,
        help=f"moves reached at least this often ({default.min_probability:g})",
    )
    parser.add_argument(
        "--losing",
        type=non_negative_int,
        default=default.losing,
        help=f"list the moves losing more than this many centipawns ({default.losing})",
    )
    parser.add_argument(
        "--plies", type=positive_int, default=default.plies, help="how deep the book is played"
    )
    parser.add_argument("--json", action="store_true", help="JSON instead of a table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.evals.check import check_book
    from pipelines.evals.settings import CheckSettings
    from schemas.polyglot import BookFormatError, open_book

    existing_warehouse(args.evals)
    with settings_as_flags():
        settings = CheckSettings(args.min_probability, args.losing, args.plies)
    try:
        book = open_book(args.book)
    except BookFormatError as exc:
        raise ChesspipeError(str(exc)) from None
    checked = check_book(book, args.evals, settings)
    print(json.dumps(checked.to_json(), indent=2) if args.json else checked.table())
    return 0
