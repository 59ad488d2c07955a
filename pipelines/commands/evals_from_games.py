"""`chesspipe evals from-games`: the `[%eval]` comments of kept games into the evaluation store."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    add_allow_empty_option,
    add_filter_options,
    existing_warehouse,
    positive_int,
    said_as_flags,
)


def register(subparsers: Any) -> None:
    from pipelines.ingest.settings import IngestSettings

    plies = IngestSettings().plies
    parser = subparsers.add_parser(
        "from-games",
        help="store the [%%eval] comments of the games ingest keeps",
        description="Read SOURCE (as ingest reads it: a file, a folder, a URL, lichess:YYYY-MM), "
        "keep the games the filter keeps (the same options and defaults as ingest, so the same "
        "games), and store the [%eval] comment after each of their first --plies moves as the "
        "evaluation of the position it follows, from the side to move, source `games`. Such "
        "comments give no depth or engine: an engine's or the Lichess dump's evaluation of a "
        "position ranks above them, and `evals analyse` analyses the position again.",
    )
    parser.add_argument("source", nargs="+", metavar="SOURCE")
    parser.add_argument("--warehouse", required=True, type=Path)
    add_filter_options(parser)
    parser.add_argument(
        "--plies", type=positive_int, default=plies, help=f"plies read per game ({plies})"
    )
    add_allow_empty_option(parser, "store nothing")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.commands.ingest import filter_from_args, progress_shown
    from pipelines.evals.game_comments import import_game_evals
    from pipelines.games.game_filter import NothingKept
    from pipelines.sources.open import as_source

    existing_warehouse(args.warehouse)
    rules = filter_from_args(args)
    with progress_shown(args) as bar, said_as_flags(NothingKept):
        result = import_game_evals(
            args.warehouse, as_source(args.source), rules, plies=args.plies, progress=bar,
            allow_empty=args.allow_empty,
        )  # fmt: skip
    print(json.dumps(result.to_json(), indent=2))
    return 0
