"""`chesspipe ingest`: a month of games into Parquet move statistics."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.commands.options import (
    add_file_roles,
    add_ingest_options,
    add_no_explorer_option,
    add_partition_options,
    as_said,
    settings_as_flags,
)
from pipelines.errors import ChesspipeError, CutShort
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.game_filter import GameFilter, NothingKept
from pipelines.ingest.settings import WORKER_MODULES, IngestSettings

if TYPE_CHECKING:
    from pipelines.explorer.manifest import ExplorerManifest
    from pipelines.ingest.manifest import IngestManifest
    from pipelines.ingest.options import RunPolicy, Runtime
    from pipelines.sources.open import Source


def filter_from_args(args: argparse.Namespace) -> GameFilter:
    """Return the GameFilter the options describe."""
    speeds = frozenset(s.strip() for s in args.speeds.split(",") if s.strip())
    with settings_as_flags():  # the filter checks the speeds' names
        return GameFilter(
            args.min_rating,
            speeds,
            args.allow_bots,
            args.variant,
            getattr(args, "from_position", "drop"),
        )


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
    add_partition_options(parser, by_date="one partition each (the source read by one process)")
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
    add_no_explorer_option(parser)
    add_file_roles(parser, reads=("source",), writes=("write_kept",))
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.games.workers import WorkerPool
    from pipelines.sources.open import as_source

    settings = settings_from_args(args)
    source = as_source(args.source)
    if source == "-" and (sys.stdin is None or sys.stdin.closed):
        raise ChesspipeError("cannot read games from stdin: it is closed")
    # Started first, so that the workers' imports overlap with this process's; ingest closes
    # the pool if it reads alone.
    if args.month_by == "date" and args.write_kept is not None:
        raise ChesspipeError("--write-kept writes one month's games: give --month")
    alone = settings.dedupe or args.month_by == "date"  # the source read by this process
    workers = 1 if alone else args.workers or os.cpu_count() or 1
    pool = WorkerPool(workers, preload=WORKER_MODULES) if workers > 1 else None
    from pipelines.ingest.options import RunPolicy, Runtime
    from pipelines.ingest.run import ingest

    policy = RunPolicy(
        keep_partial=args.keep_partial,
        allow_empty=args.allow_empty,
        replace_month=args.force,
        write_kept=args.write_kept,
    )
    explorer = (
        None if args.no_explorer else ExplorerSettings(settings.rules, games=not args.no_games)
    )
    with progress_shown(args) as bar, ingest_errors_said():
        runtime = Runtime(progress=bar, workers=args.workers, pool=pool)
        if args.month_by == "date":
            summary, manifests = _by_date(args, settings, policy, runtime)
            if explorer is not None:
                summary["explorer"] = _explorer_by_date(args, source, explorer)
        elif explorer is not None and explorer.reads_kept_games(
            settings.rules, settings.plies, settings.dedupe
        ):
            from pipelines.explorer.index import with_ingest

            with with_ingest(
                args.warehouse, args.month, explorer, recorded_source=str(source),
                workers=args.workers or os.cpu_count() or 1,
            ) as indexed:  # fmt: skip
                manifest = ingest(
                    source, args.month, args.warehouse, settings,
                    policy=replace(policy, also_staged=indexed), runtime=runtime,
                )  # fmt: skip
            summary, manifests = _month_summary(manifest), [manifest]
            summary["explorer"] = _explorer_summary(indexed.manifest)
        else:
            manifest = ingest(
                source, args.month, args.warehouse, settings, policy=policy, runtime=runtime
            )
            summary, manifests = _month_summary(manifest), [manifest]
            if explorer is not None:
                summary["explorer"] = _explorer_again(args, source, explorer)
    print(json.dumps(summary, indent=2))
    for manifest in manifests:
        month = f"{manifest.month}: " if args.month_by else ""
        for warning in manifest.warnings:
            print(f"chesspipe: warning: {month}{warning}", file=sys.stderr)
    from_fen = sum(m.games_dropped.get("from_position", 0) for m in manifests)
    if from_fen:
        print(
            f"chesspipe: note: {from_fen:,} games start from a FEN and were dropped "
            "(--from-position keep counts them from their position)",
            file=sys.stderr,
        )
    partial = next((m for m in manifests if m.partial), None)
    if partial is not None:
        what = "partial month" if len(manifests) == 1 else "partial months"
        print(f"chesspipe: warning: {what} published: {partial.error}", file=sys.stderr)
    return 0


def _explorer_summary(manifest: ExplorerManifest | None) -> dict[str, Any] | None:
    """What the summary says of a month's explorer index (None: not indexed)."""
    if manifest is None:
        return None
    return {"month": manifest.month, "games_kept": manifest.games_kept,
            "positions": manifest.positions}  # fmt: skip


def _explorer_again(
    args: argparse.Namespace, source: Source, explorer: ExplorerSettings
) -> dict[str, Any] | None:
    """The explorer's index of a month whose ingest keeps other games (--dedupe, or plies past
    the explorer's), from the source read again (not standard input: it is said)."""
    from pipelines.explorer.index import index_month

    if source == "-":
        _not_indexed("standard input is read once, and this ingest keeps other games")
        return None
    return _explorer_summary(
        index_month(
            source,
            args.month,
            args.warehouse,
            explorer,
            allow_empty=args.allow_empty,
            workers=args.workers or os.cpu_count() or 1,
        )  # fmt: skip
    )


def _explorer_by_date(
    args: argparse.Namespace, source: Source, explorer: ExplorerSettings
) -> list[dict[str, Any] | None] | None:
    """The explorer's index by date, from the source read again (not standard input)."""
    from pipelines.explorer.index import index_by_date

    if source == "-":
        _not_indexed("standard input is read once, and --month-by date reads it by date")
        return None
    manifests, _ = index_by_date(source, args.warehouse, explorer, allow_empty=True)
    return [_explorer_summary(m) for m in manifests]


def _not_indexed(why: str) -> None:
    print(
        f"chesspipe: warning: the explorer is not indexed: {why}; run chesspipe explorer index "
        "on the file (or pass --no-explorer)",
        file=sys.stderr,
    )


#: What the summary of a run says of each month it published.
MONTH_SUMMARY = ("month", "games_read", "games_kept", "games_dropped", "rows", "output")


def _month_summary(manifest: IngestManifest) -> dict[str, Any]:
    return {k: getattr(manifest, k) for k in MONTH_SUMMARY}


def _by_date(
    args: argparse.Namespace, settings: IngestSettings, policy: RunPolicy, runtime: Runtime
) -> tuple[dict[str, Any], list[IngestManifest]]:
    """Ingest by date; return the run's summary (its counts, then each month's) and manifests."""
    from pipelines.ingest.by_date import ingest_by_date
    from pipelines.sources.open import as_source
    from pipelines.warehouse.months import month_runs

    done = ingest_by_date(
        as_source(args.source), args.warehouse, settings, policy=policy, runtime=runtime
    )
    summary = {
        "month_by": "date",
        "games_read": done.games_read,
        "games_kept": done.games_kept,
        "games_dropped": done.games_dropped,
        "months": [_month_summary(m) for m in done.months if m.games_read],
        # The months of the span no game's date names (or none of whose games was kept).
        "empty_months": month_runs(m.month for m in done.months if not m.games_read),
        "left_out": done.left_out,
    }
    return summary, list(done.months)
