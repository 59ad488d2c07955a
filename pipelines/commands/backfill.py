"""`chesspipe backfill`: many months' books in parallel through a Prefect task runner."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    add_build_options,
    add_file_roles,
    add_locations,
    add_output_options,
    add_source_template,
    positive_int,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "backfill",
        help="Prefect flow: build the books of a range of months in parallel (threads or Dask)",
        description="Run the monthly build for every month of MONTHS in parallel. SOURCE holds "
        "{month}, e.g. lichess:{month} or /data/lichess_db_standard_rated_{month}.pgn.zst. "
        "With --dask-address the months run on an existing Dask cluster; with --dask-workers "
        "on a local one; otherwise on threads of this process.",
    )
    parser.add_argument(
        "--months",
        required=True,
        help="YYYY-MM..YYYY-MM, a comma-separated list of months and ranges, or all (the "
        "months a local warehouse holds)",
    )
    add_source_template(parser)
    add_locations(parser)
    parser.add_argument(
        "--book",
        metavar="NAME",
        help="then also build one book over all the months: BOOKS/NAME.bin and NAME.json "
        "(with --dask-address, its key ranges summed on the cluster)",
    )
    runner = parser.add_mutually_exclusive_group()
    runner.add_argument("--dask-address", help="scheduler of a running Dask cluster (tcp://...)")
    runner.add_argument(
        "--dask-workers", type=positive_int, help="start a local Dask cluster of N workers"
    )
    runner.add_argument(
        "--threads", type=positive_int, default=2, help="months at once on threads (2)"
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="with a Dask cluster: read each month's source by units of frames on all its "
        "workers (a pzstd-style file or URL they reach; with --no-verify for a URL, whose "
        "published checksum cannot be checked when it is read by ranges)",
    )
    add_build_options(parser)
    add_output_options(parser)
    add_file_roles(parser, writes=("books",))
    parser.set_defaults(handler=run)


def task_runner(args: argparse.Namespace) -> Any:
    """Return the Prefect task runner the options ask for."""
    if args.dask_address or args.dask_workers:
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            from pipelines.errors import ChesspipeError

            raise ChesspipeError(
                "Dask backfills need the dask extra: pip install 'chesspipe[dask]'"
            ) from None

        if args.dask_address:
            return DaskTaskRunner(address=args.dask_address)
        return DaskTaskRunner(
            cluster_kwargs={"n_workers": args.dask_workers, "threads_per_worker": 1}
        )
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=args.threads)


def run(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from pipelines.commands.build_month import flow_command, location
    from pipelines.commands.ingest import progress_shown
    from pipelines.monthly.publish import range_book_url
    from pipelines.progress import MonthsProgress
    from pipelines.sources.object_store import is_remote
    from pipelines.warehouse.layout import available_months
    from pipelines.warehouse.months import month_runs, select_months

    if args.split and not (args.dask_address or args.dask_workers):
        from pipelines.errors import ChesspipeError

        raise ChesspipeError(
            "--split reads a month on a Dask cluster: give --dask-address or --dask-workers"
        )
    remote = is_remote(args.warehouse)
    available = None if remote else available_months(Path(args.warehouse))
    wanted = select_months(args.months, available=available)
    months = ",".join(month_runs(wanted))
    if args.book is not None:
        range_book_url(args.books, args.book, wanted)  # a bad name fails before the months
    # One local Prefect server for this process and its Dask workers.
    with flow_command(args) as options:
        from pipelines.commands.options import as_said
        from pipelines.errors import ChesspipeError
        from pipelines.flows.backfill import MonthsFailed, backfill_flow

        flow = backfill_flow.with_options(task_runner=task_runner(args))
        with progress_shown(args) as bar:
            # Months on threads of this process report to the bar; Dask's workers only log.
            on_threads = not (args.dask_address or args.dask_workers)
            progress = MonthsProgress(bar, len(wanted)) if bar is not None and on_threads else None
            try:
                with bar.apart_from_logs() if bar is not None else nullcontext():
                    recorded = flow(
                        months=months,
                        source=args.source,
                        warehouse=location(args.warehouse),
                        books=location(args.books),
                        options=options,
                        force=args.force,
                        book=args.book,
                        progress=progress,
                        dask_address=args.dask_address,
                        split=args.split,
                    )
            except MonthsFailed as exc:
                raise ChesspipeError(exc.said(as_said)) from None
        from pipelines.monthly.manifest import MonthManifest

        manifests = [MonthManifest.from_json(m) for m in recorded]  # the flow run's JSON
    summary = [
        {
            "month": m.month,
            "status": m.status,
            "book": None if m.status == "empty" else args.books.rstrip("/") + "/" + m.book_file,
            "games_kept": m.ingest.games_kept,
            "entries": m.book.entries,
        }
        for m in manifests
    ]
    if args.book:
        summary.append(range_book_summary(args.books, args.book, months))
    print(json.dumps(summary, indent=2))
    return 0


def range_book_summary(books: str, name: str, months: str) -> dict[str, Any]:
    """The summary of the book over all the months, from the manifest beside it."""
    from pipelines.books.manifest import read_manifest_beside
    from pipelines.monthly.publish import range_book_url
    from pipelines.sources.object_store import is_remote, read_bytes
    from pipelines.warehouse.months import select_months

    book = range_book_url(books, name, select_months(months))
    entries = None
    if is_remote(book):  # its manifest, published with it as a pair
        record = json.loads(read_bytes(book.removesuffix(".bin") + ".json"))
        entries = record.get("entries") if isinstance(record, dict) else None
    else:
        manifest = read_manifest_beside(Path(book))
        entries = manifest.entries if manifest is not None else None
    return {"months": months, "status": "built", "book": book, "entries": entries}
