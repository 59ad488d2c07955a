"""`chesspipe ingest`: a month of games into Parquet move statistics."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from schemas.dimensions import SPEEDS


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """Add the game filter's options and the progress options."""
    parser.add_argument("--min-rating", type=int, default=2200, help="both players at least (2200)")
    parser.add_argument(
        "--speeds",
        default="blitz,rapid,classical,correspondence",
        help=f"comma-separated speeds to keep, of {','.join(SPEEDS)}",
    )
    parser.add_argument("--allow-bots", action="store_true", help="keep games with BOT accounts")
    parser.add_argument("--variant", choices=("standard", "chess960"), default="standard")
    parser.add_argument(
        "--progress", action="store_true", help="show progress even when not a terminal"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def add_ingest_options(parser: argparse.ArgumentParser) -> None:
    """Add the filter and counting options shared by ingest and build-month."""
    add_filter_options(parser)
    parser.add_argument("--plies", type=int, default=20, help="plies counted per game (20)")
    parser.add_argument(
        "--keep-partial",
        action="store_true",
        help="on a truncated or corrupt stream, publish what was read (marked partial)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes for pzstd-framed files (default: all cores; 1 reads in order)",
    )


def filter_from_args(args: argparse.Namespace) -> Any:
    """Return the GameFilter the options describe."""
    from pipelines.errors import ChesspipeError
    from pipelines.ingest.game_filter import GameFilter

    speeds = frozenset(s.strip() for s in args.speeds.split(",") if s.strip())
    try:
        return GameFilter(args.min_rating, speeds, args.allow_bots, args.variant)
    except ValueError as exc:
        raise ChesspipeError(str(exc)) from None


def progress_from_args(args: argparse.Namespace) -> Any:
    """Return a progress bar for the options, or None when quiet."""
    from pipelines.progress import ProgressBar

    if args.quiet or not (args.progress or sys.stderr.isatty()):
        return None
    return ProgressBar(interval=0.0 if sys.stderr.isatty() else 5.0)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="stream a month of games into Parquet move statistics",
        description="Stream SOURCE (a .pgn or .pgn.zst path, '-' for stdin, an http(s) URL, "
        "or lichess:YYYY-MM), keep the games that pass the filter, and write their first "
        "plies' statistics to WAREHOUSE/move_stats/month=YYYY-MM/.",
    )
    parser.add_argument("source")
    parser.add_argument("--month", required=True, help="YYYY-MM partition to write")
    parser.add_argument("--warehouse", required=True, type=Path)
    add_ingest_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.ingest.counting_process import CountingProcess

    # Started first, so that its imports overlap with this process's; ingest closes it if the
    # source is read by several workers instead.
    counting = CountingProcess() if (args.workers or os.cpu_count() or 1) > 1 else None
    from pipelines.ingest.run import ingest

    bar = progress_from_args(args)
    try:
        manifest = ingest(
            args.source,
            args.month,
            args.warehouse,
            filter_from_args(args),
            plies=args.plies,
            keep_partial=args.keep_partial,
            progress=bar,
            workers=args.workers,
            counting=counting,
        )
    finally:
        if bar is not None:
            bar.close()
    summary = {
        k: manifest[k]
        for k in ("month", "games_read", "games_kept", "games_dropped", "rows", "output")
    }
    print(json.dumps(summary, indent=2))
    if manifest["partial"]:
        print(f"chesspipe: warning: partial month published: {manifest['error']}", file=sys.stderr)
    return 0
