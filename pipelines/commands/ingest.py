"""`chesspipe ingest`: a month of games into Parquet move statistics."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pipelines.commands.options import non_negative_int, positive_int, settings_as_flags
from pipelines.errors import ChesspipeError
from pipelines.ingest.game_filter import VARIANTS, GameFilter
from pipelines.ingest.settings import IngestSettings
from schemas.speed import Speed


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """Add the game filter's options and the progress options."""
    default = GameFilter()
    parser.add_argument(
        "--min-rating",
        type=non_negative_int,
        default=default.min_rating,
        help=f"both players at least ({default.min_rating})",
    )
    parser.add_argument(
        "--speeds",
        default=",".join(speed for speed in Speed if speed in default.speeds),
        help=f"comma-separated speeds to keep, of {','.join(Speed)}",
    )
    parser.add_argument("--allow-bots", action="store_true", help="keep games with BOT accounts")
    parser.add_argument("--variant", choices=VARIANTS, default=default.variant)
    add_progress_options(parser)


def add_progress_options(parser: argparse.ArgumentParser) -> None:
    """Add --progress and --quiet (a progress line on a terminal by default)."""
    parser.add_argument(
        "--progress", action="store_true", help="show progress even when not a terminal"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def add_ingest_options(parser: argparse.ArgumentParser) -> None:
    """Add the filter and counting options shared by ingest and build-month."""
    add_filter_options(parser)
    plies = IngestSettings().plies
    # Checked by IngestSettings too, whose error names the option (settings_as_flags).
    parser.add_argument(
        "--plies", type=positive_int, default=plies, help=f"plies counted per game ({plies})"
    )
    parser.add_argument(
        "--keep-partial",
        action="store_true",
        help="on a truncated or corrupt stream, publish what was read (marked partial)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="processes that scan and count (default: all cores; 1: this process alone)",
    )


def filter_from_args(args: argparse.Namespace) -> GameFilter:
    """Return the GameFilter the options describe."""
    speeds = frozenset(s.strip() for s in args.speeds.split(",") if s.strip())
    with settings_as_flags():  # the filter checks the speeds' names
        return GameFilter(args.min_rating, speeds, args.allow_bots, args.variant)


def settings_from_args(args: argparse.Namespace) -> IngestSettings:
    """Return the IngestSettings the options describe."""
    rules = filter_from_args(args)
    with settings_as_flags():
        return IngestSettings(rules, args.plies)


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
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace a published month even with a run that read fewer than a tenth of its "
        "games (otherwise refused: a cut download or an empty file must not replace a month)",
    )
    parser.add_argument(
        "--write-kept",
        type=Path,
        metavar="FILE.pgn.zst",
        help="also write the games kept, as the source has them, in its order, to FILE "
        "(zstd-compressed when it ends in .zst): check the filter, or reuse its games",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.ingest.workers import WorkerPool

    settings = settings_from_args(args)
    if args.source == "-" and (sys.stdin is None or sys.stdin.closed):
        raise ChesspipeError("cannot read games from stdin: it is closed")
    # Started first, so that the workers' imports overlap with this process's; ingest closes
    # the pool if it reads alone.
    workers = args.workers or os.cpu_count() or 1
    pool = WorkerPool(workers) if workers > 1 else None
    from pipelines.ingest.run import WouldShrinkMonth, ingest

    bar = progress_from_args(args)
    try:
        manifest = ingest(
            args.source,
            args.month,
            args.warehouse,
            settings,
            keep_partial=args.keep_partial,
            progress=bar,
            workers=args.workers,
            pool=pool,
            replace=args.force,
            write_kept=args.write_kept,
        )
    except WouldShrinkMonth as exc:
        raise ChesspipeError(f"{exc}; pass --force to replace it") from None
    finally:
        if bar is not None:
            bar.close()
    summary = {
        k: getattr(manifest, k)
        for k in ("month", "games_read", "games_kept", "games_dropped", "rows", "output")
    }
    print(json.dumps(summary, indent=2))
    for warning in manifest.warnings:
        print(f"chesspipe: warning: {warning}", file=sys.stderr)
    if manifest.partial:
        print(f"chesspipe: warning: partial month published: {manifest.error}", file=sys.stderr)
    return 0
