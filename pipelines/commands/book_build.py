"""`chesspipe book build`: a weighted Polyglot book from the move statistics."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipelines.books.settings import BookSettings
from pipelines.commands.options import (
    SETTING_FLAGS,
    add_book_options,
    add_file_roles,
    add_resources_options,
    existing_warehouse,
    integer,
    non_negative_int,
    positive_int,
    resources_from_args,
    settings_as_flags,
    stored_or_folder,
)
from pipelines.errors import ChesspipeError


def book_settings_from_args(args: argparse.Namespace) -> BookSettings:
    """Return the BookSettings the options describe; errors name the options."""
    speeds = tuple(s for s in args.book_speeds.split(",") if s) if args.book_speeds else None
    with settings_as_flags():
        return BookSettings(
            args.min_games, args.min_score, speeds, args.min_band, side=getattr(args, "side", None)
        )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "build",
        help="build a Polyglot .bin book from move statistics",
        description="Aggregate the move statistics of MONTHS with DuckDB and write a weighted "
        "Polyglot book: weight = 2 x wins + draws, scaled per position to fit 16 bits.",
    )
    parser.add_argument(
        "--warehouse",
        required=True,
        type=stored_or_folder,
        help="a warehouse folder, or its URL in object storage (s3://...), read where it is",
    )
    parser.add_argument(
        "--months",
        required=True,
        help="YYYY-MM, YYYY-MM..YYYY-MM, a comma-separated list of these, or all (every month "
        "in the warehouse); every month chosen must be there",
    )
    parser.add_argument("--out", required=True, type=Path)
    add_file_roles(parser, writes=("out",))
    add_book_options(parser)
    add_resources_options(parser)
    parser.add_argument(
        "--ranges",
        type=positive_int,
        metavar="N",
        help="sum the book in N ranges of keys, one after the other (default: as many as keep "
        "each within the memory limit); the same bytes however many",
    )
    parser.add_argument(
        "--dask-address",
        metavar="tcp://HOST:8786",
        help="sum the key ranges on a running Dask cluster, whose workers read the warehouse "
        "(a bucket, or a folder each mounts); the book is written here, in key order",
    )
    side = parser.add_mutually_exclusive_group()
    side.add_argument(
        "--only-white",
        dest="side",
        action="store_const",
        const="white",
        help="only the positions where White is to move: a repertoire for White",
    )
    side.add_argument(
        "--only-black",
        dest="side",
        action="store_const",
        const="black",
        help="only the positions where Black is to move: a repertoire for Black",
    )
    parser.add_argument(
        "--evals",
        type=Path,
        help="prune the moves that lose by the evaluations this warehouse stores (with "
        "--max-loss or --min-eval)",
    )
    parser.add_argument(
        "--max-loss",
        type=non_negative_int,
        help="with --evals: drop a move more than this many centipawns below the position's best "
        "book move (or the engine's own best move, where the position after it is stored)",
    )
    parser.add_argument(
        "--min-eval",
        type=integer,
        help="with --evals: drop a move that leaves the mover below this many centipawns",
    )
    parser.set_defaults(handler=run)


def pruning_from_args(args: argparse.Namespace) -> Any:
    """Return the EvalPruning the options describe, or None without --evals."""
    if args.evals is None:
        if args.max_loss is not None or args.min_eval is not None:
            raise ChesspipeError("--max-loss and --min-eval prune by evaluation: give --evals")
        return None
    from pipelines.books.build import EvalPruning
    from pipelines.evals.settings import PruneSettings

    existing_warehouse(args.evals)
    with settings_as_flags():
        return EvalPruning(args.evals, PruneSettings(args.max_loss, args.min_eval))


def run(args: argparse.Namespace) -> int:
    from pipelines.books.build import EmptyBook, build_book

    settings = book_settings_from_args(args)
    pruning = pruning_from_args(args)
    notes: list[str] = []
    from pipelines.flows.cluster import cluster_executor

    try:
        with cluster_executor(args.dask_address) as executor:
            manifest = build_book(
                args.warehouse,
                args.months,
                args.out,
                settings,
                allow_empty=False,
                notes=notes,
                pruning=pruning,
                resources=resources_from_args(args),
                ranges=args.ranges,
                executor=executor,
            )
    except EmptyBook as exc:
        raise ChesspipeError(exc.named(SETTING_FLAGS)) from None
    finally:
        for note in notes:
            sys.stderr.write(f"note: {note}\n")
    record = manifest.to_json()
    # entry_games, as in the manifest: "games" alone means games read or kept elsewhere.
    summary = {k: record[k] for k in ("out", "months", "entries", "positions", "entry_games")}
    if "evals" in record:
        summary["evals"] = record["evals"]
    print(json.dumps(summary, indent=2))
    return 0
