"""`chesspipe ingest`: a month of games into Parquet move statistics."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    add_ingest_options,
    add_partition_options,
    as_said,
    settings_as_flags,
)
from pipelines.errors import ChesspipeError, CutShort
from pipelines.games.game_filter import GameFilter, NothingKept
from pipelines.ingest.settings import WORKER_MODULES, IngestSettings


def filter_from_args(args: argparse.Namespace) -> GameFilter:
    """Return the GameFilter the options describe."""
    speeds = frozenset(s.strip() for s in args.speeds.split(",") if s.strip())
    with settings_as_flags():  # the filter checks the speeds' names
        return GameFilter(args.min_rating, speeds, args.allow_bots, args.variant)


def settings_from_args(args: argparse.Namespace) -> IngestSettings:
    """Return the IngestSettings the options describe."""
    rules = filter_from_args(args)
    with settings_as_flags():
        return IngestSettings(rules, args.plies, getattr(args, "dedupe", False))


def progress_from_args(args: argparse.Namespace) -> Any:
    """Return a progress bar for the options, or None when quiet."""
    from pipelines.progress import ProgressBar

    if args.quiet or not (args.progress or sys.stderr.isatty()):
        return None
    return ProgressBar(interval=0.0 if sys.stderr.isatty() else 5.0)


@contextmanager
def progress_shown(args: argparse.Namespace) -> Iterator[Any]:
    """Yield the progress bar of the options (None when quiet), closed when the block ends."""
    bar = progress_from_args(args)
    try:
        yield bar
    finally:
        if bar is not None:
            bar.close()


@contextmanager
def ingest_errors_said() -> Iterator[None]:
    """Re-raise the errors that stop a month's ingest as the command line says them: a month
    it would shrink (with the flag that replaces it anyway), a cut stream and no game kept
    (with the flag that avoids each)."""
    from pipelines.ingest.run import WouldShrinkMonth

    try:
        yield
    except WouldShrinkMonth as exc:
        raise ChesspipeError(f"{exc}; pass --force to replace it") from None
    except (CutShort, NothingKept) as exc:
        raise ChesspipeError(as_said(exc)) from None


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="stream a month of games into Parquet move statistics",
        description="Stream SOURCE (a .pgn, .pgn.zst, .pgn.gz, .pgn.bz2 or .zip path, a folder "
        "or a glob of them, '-' for stdin, an http(s) URL, or lichess:YYYY-MM), keep the games "
        "that pass the filter, and write their first plies' statistics to "
        "WAREHOUSE/move_stats/month=YYYY-MM/. Games that are not from Lichess (no TimeControl, "
        "no ratings): --speeds all --min-rating 0.",
    )
    add_partition_options(parser)
    add_ingest_options(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace a published month even with a run that read fewer than a tenth of its "
        "games (otherwise refused: a cut download or an empty file must not replace a month)",
    )
    parser.add_argument(
        "--dedupe",
        action="store_true",
        help="drop a game whose main line repeats one kept before, as pgn-extract -D does "
        "(counted as duplicate; the source is then read by one process)",
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
    from pipelines.games.workers import WorkerPool

    settings = settings_from_args(args)
    if args.source == "-" and (sys.stdin is None or sys.stdin.closed):
        raise ChesspipeError("cannot read games from stdin: it is closed")
    # Started first, so that the workers' imports overlap with this process's; ingest closes
    # the pool if it reads alone.
    workers = 1 if settings.dedupe else args.workers or os.cpu_count() or 1
    pool = WorkerPool(workers, preload=WORKER_MODULES) if workers > 1 else None
    from pipelines.ingest.options import RunPolicy, Runtime
    from pipelines.ingest.run import ingest

    with progress_shown(args) as bar, ingest_errors_said():
        manifest = ingest(
            args.source,
            args.month,
            args.warehouse,
            settings,
            policy=RunPolicy(
                keep_partial=args.keep_partial,
                allow_empty=args.allow_empty,
                replace_month=args.force,
                write_kept=args.write_kept,
            ),
            runtime=Runtime(progress=bar, workers=args.workers, pool=pool),
        )
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
