"""`chesspipe warehouse check` (dead runs' leftovers, partitions that disagree with manifests)
and `chesspipe warehouse compact` (a year summed into one file)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    add_action,
    add_actions,
    add_file_roles,
    add_progress_options,
    add_resources_options,
    existing_warehouse,
    stored_or_folder,
)


def register(subparsers: Any) -> None:
    actions = add_actions(
        subparsers,
        "warehouse",
        dest="action",
        help="check a warehouse folder (and repair what is safe to repair), compact a year",
        description="Tools for the warehouse folder.",
    )
    check = add_action(
        actions,
        "check",
        run_check,
        help="list stale staging, temporary files, partitions and manifests that disagree",
        description="List, one line each, the staging folders and temporary files dead runs "
        "left, partitions without a manifest or whose manifest's output_sha256 does not match, "
        "manifests without a partition, and compacted years that no longer match their months "
        "(stale-yearly). Exit 1 if any problem remains, 0 if clean. --repair removes stale "
        "staging and temporary files under each month's lock (a month in use is skipped), and "
        "a dead compaction's temporary files; partitions, manifests and stale compacted years "
        "are never removed: re-ingest those months, compact those years again. A clean "
        "warehouse says so in one line: its months and compacted years, and with --books the "
        "books of that folder.",
    )
    check.add_argument(
        "warehouse",
        type=stored_or_folder,
        metavar="DIR",
        help="a warehouse folder, or its URL in object storage (s3://...): its months, staging "
        "and leases there",
    )
    check.add_argument(
        "--books",
        type=Path,
        metavar="BOOKS",
        help="the books folder (build-month's --books): also check each month's book against "
        "the statistics its run manifest records (a book older than its month: --repair "
        "builds it again) and remove killed runs' temporary files there",
    )
    check.add_argument("--repair", action="store_true", help="remove what is safe to remove")
    add_file_roles(check, writes=("books",))
    compact = add_action(
        actions,
        "compact",
        run_compact,
        help="sum a year's twelve months into one sorted file that book build reads instead",
        description="Sum the statistics of a year's twelve months into "
        "DIR/move_stats_yearly/year=YYYY/part-0.parquet (sorted by key, in row groups like the "
        "months') with a manifest recording each month's partition. `book build` over months "
        "that include the whole year reads it instead of the twelve months while it still "
        "matches them; once a month is re-ingested it is stale and ignored (compact again). "
        "All twelve months must be there; they are locked while they are read.",
    )
    compact.add_argument("warehouse", type=Path, metavar="DIR")
    compact.add_argument("--year", required=True, metavar="YYYY", help="the year to compact")
    add_progress_options(compact)
    add_resources_options(compact)


def run_check(args: argparse.Namespace) -> int:
    from pipelines.errors import ChesspipeError
    from pipelines.warehouse.check import check_warehouse, clean_line

    if isinstance(args.warehouse, str):  # a URL
        return run_check_stored(args)
    existing_warehouse(args.warehouse)
    if args.books is not None and not args.books.is_dir():
        raise ChesspipeError(f"{args.books}: no such books folder")
    findings = check_warehouse(args.warehouse, repair=args.repair)
    if args.books is not None:
        from pipelines.monthly.check import check_books

        findings += check_books(args.warehouse, args.books, repair=args.repair)
    for finding in findings:
        sys.stdout.write(finding.line("--repair") + "\n")
    if not findings:
        sys.stdout.write(clean_line(args.warehouse, args.books) + "\n")
    return 1 if any(not f.repaired for f in findings) else 0


def run_check_stored(args: argparse.Namespace) -> int:
    """`warehouse check` of a warehouse in object storage."""
    from pipelines.errors import ChesspipeError
    from pipelines.warehouse.stored import stored_months
    from pipelines.warehouse.stored_check import check_stored_warehouse

    if args.books is not None:
        raise ChesspipeError("--books checks a books folder beside a warehouse folder, not a URL")
    findings = check_stored_warehouse(args.warehouse, repair=args.repair)
    for finding in findings:
        sys.stdout.write(finding.line("--repair") + "\n")
    if not findings:
        months = len(stored_months(args.warehouse))
        sys.stdout.write(f"{args.warehouse}: clean: {months} month{'' if months == 1 else 's'}\n")
    return 1 if any(not f.repaired for f in findings) else 0


def run_compact(args: argparse.Namespace) -> int:
    import json

    from pipelines.commands.ingest import progress_shown
    from pipelines.commands.options import resources_from_args
    from pipelines.warehouse.yearly import (
        CompactProgress,
        CompactSettings,
        compact_year,
        format_compact_progress,
    )

    existing_warehouse(args.warehouse)
    with progress_shown(args) as shown:

        def progress(report: CompactProgress) -> None:
            if shown is not None:
                shown.show(format_compact_progress(report), report.seconds, force=report.finished)

        settings = CompactSettings(resources=resources_from_args(args))
        manifest = compact_year(args.warehouse, args.year, settings=settings, progress=progress)
    record = manifest.to_json()
    summary = {k: record[k] for k in ("year", "output", "rows", "month_rows", "seconds")}
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0
