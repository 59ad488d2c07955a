"""`chesspipe explorer index`: a month of games into the explorer's data (games and their
positions, counted as Lichess counts), beside the move statistics."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    add_action,
    add_actions,
    add_allow_empty_option,
    add_filter_options,
    add_frame_workers_option,
    add_no_games_option,
    add_partition_options,
    add_resources_options,
    said_as_flags,
    settings_as_flags,
)


def _plies(text: str) -> int | None:
    if text == "all":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of plies nor 'all': {text!r}") from None


def register(subparsers: Any) -> None:
    from pipelines.explorer.settings import EXPLORER_PLIES

    actions = add_actions(
        subparsers,
        "explorer",
        dest="action",
        metavar=None,
        help="the explorer's data: games and positions for topGames, /player and /masters",
        description="Index a month of games for `chesspipe serve`: each kept game's record "
        "and its positions once per game (lila-openingexplorer's counting), under "
        "WAREHOUSE/explorer/month=YYYY-MM/.",
    )
    index = add_action(actions, "index", run, help="index a month of games (the ingest filter)")
    add_partition_options(
        index,
        by_date="as for a player's own export (`/player` with since and until) or a collection "
        "spanning years",
    )
    add_filter_options(index)
    index.add_argument(
        "--plies",
        type=_plies,
        default=EXPLORER_PLIES,
        help=f"plies indexed per game ({EXPLORER_PLIES}, as Lichess); 'all' for collections "
        "served as /masters (their moves are kept for their PGN)",
    )
    add_no_games_option(index)
    add_allow_empty_option(index, "publish an empty month")
    add_frame_workers_option(index)
    compact = add_action(
        actions,
        "compact",
        run_compact,
        help="merge a year's explored months into one lookup file the server reads",
        description="Merge the lookup files of a year's explored months into "
        "WAREHOUSE/explorer_yearly/year=YYYY/lookup.duckdb, with a manifest recording each "
        "month's lookup sha256: `chesspipe serve` then reads one file for those months "
        "instead of one per month, while they still match it (a month indexed again is read "
        "from its own file until the year is compacted again).",
    )
    compact.add_argument("--warehouse", type=Path, required=True, help="the warehouse folder")
    compact.add_argument("--year", required=True, metavar="YYYY", help="the year to compact")
    add_resources_options(compact)


def run(args: argparse.Namespace) -> int:
    from pipelines.commands.ingest import filter_from_args, progress_shown
    from pipelines.explorer.index import index_by_date, index_month
    from pipelines.explorer.settings import ExplorerSettings
    from pipelines.games.game_filter import NothingKept
    from pipelines.sources.open import as_source

    source = as_source(args.source)
    rules = filter_from_args(args)
    with settings_as_flags():
        settings = ExplorerSettings(rules, args.plies, games=not args.no_games)
    if args.month is not None:
        with said_as_flags(NothingKept), progress_shown(args) as shown:
            manifest = index_month(
                source, args.month, args.warehouse, settings, allow_empty=args.allow_empty,
                progress=shown, workers=args.workers or os.cpu_count() or 1,
            )  # fmt: skip
        print(json.dumps(manifest.to_json(), indent=2, sort_keys=True))
        manifests = [manifest]
    else:
        with said_as_flags(NothingKept), progress_shown(args) as shown:
            manifests, stats = index_by_date(
                source, args.warehouse, settings, allow_empty=args.allow_empty,
                progress=shown,
            )  # fmt: skip
        summary = {
            "games_read": stats.games_read,
            "games_kept": stats.games_kept,
            "games_dropped": dict(sorted(stats.dropped.items())),
            "months": [m.to_json() for m in manifests],
        }
        print(json.dumps(summary, indent=2, sort_keys=True))
    if not args.quiet:
        games = sum(m.games_kept for m in manifests)
        positions = sum(m.positions for m in manifests)
        size = (
            sum(
                m.games_bytes
                + m.positions_bytes
                + (m.lookup_bytes or 0)
                + (m.counts_bytes or 0)
                + (m.records_bytes or 0)
                for m in manifests
            )
            / 1e6
        )
        where = manifests[0].month if args.month is not None else f"{len(manifests)} months"
        print(
            f"chesspipe: indexed {games:,} games of {where} for the explorer "
            f"({positions:,} positions, {size:.1f} MB)",
            file=sys.stderr,
        )
    return 0


def run_compact(args: argparse.Namespace) -> int:
    from pipelines.commands.options import existing_warehouse, resources_from_args
    from pipelines.errors import ChesspipeError
    from pipelines.explorer.compact import compact_year

    existing_warehouse(args.warehouse)
    if not (len(args.year) == 4 and args.year.isdigit()):
        raise ChesspipeError(f"--year must be a year (YYYY), not {args.year!r}")
    manifest = compact_year(args.warehouse, args.year, resources=resources_from_args(args))
    print(json.dumps(manifest.to_json(), indent=2, sort_keys=True))
    return 0
