"""`chesspipe build-month`: the monthly Prefect flow, from a dump to a published book."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipelines.commands.book_build import (
    add_book_options,
    book_settings_from_args,
    named_as_options,
)
from pipelines.commands.ingest import add_ingest_options
from pipelines.commands.options import non_negative_int, positive_number
from pipelines.monthly.settings import DownloadOptions, MonthSettings


def add_build_options(parser: argparse.ArgumentParser) -> None:
    """Add the ingest, book and download options shared by build-month, backfill and serve."""
    add_ingest_options(parser)
    add_book_options(parser)
    default = DownloadOptions()
    parser.add_argument(
        "--cache", type=Path, default=None, help="keep the compressed download in this folder"
    )
    parser.add_argument(
        "--no-verify", action="store_true", help="do not check URLs against sha256sums.txt"
    )
    parser.add_argument(
        "--retries",
        type=non_negative_int,
        default=default.retries,
        help=f"retries after a failure ({default.retries})",
    )
    parser.add_argument(
        "--timeout",
        type=positive_number,
        default=default.timeout,
        help=f"network timeout ({default.timeout:g} s)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")


def location(value: str) -> str:
    """Return a warehouse or books location: an object storage URL as is, a folder absolute."""
    from pipelines.sources.object_store import is_remote

    return value if is_remote(value) else str(Path(value).resolve())


def options_from_args(args: argparse.Namespace) -> Any:
    """Return the flows' BuildOptions the command-line options describe, checked here."""
    from pipelines.commands.ingest import filter_from_args
    from pipelines.flows.options import BuildOptions

    rules = filter_from_args(args)  # validates speeds and variant with a clear error
    book = book_settings_from_args(args)
    with named_as_options({"plies": "--plies"}):
        settings = MonthSettings(
            rules=rules,
            plies=args.plies,
            book=book,
            keep_partial=args.keep_partial,
            workers=args.workers,
        )
    download = DownloadOptions(
        verify=not args.no_verify, cache=args.cache, timeout=args.timeout, retries=args.retries
    )
    return BuildOptions.from_settings(settings, download)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "build-month",
        help="Prefect flow: ingest a month, build its book, publish BOOKS/lichess-YYYY-MM.bin",
        description="Run the monthly Prefect flow (local ephemeral mode unless PREFECT_API_URL "
        "is set): stream SOURCE, ingest it into WAREHOUSE, build the month's book and publish "
        "BOOKS/lichess-YYYY-MM.bin with a manifest BOOKS/lichess-YYYY-MM.json. Nothing is "
        "rebuilt when the source and settings are unchanged.",
    )
    parser.add_argument("source", help="path, URL, '-' or lichess:YYYY-MM ({month} is replaced)")
    parser.add_argument("--month", required=True, help="YYYY-MM")
    parser.add_argument("--warehouse", required=True, help="folder or s3://... URL")
    parser.add_argument("--books", required=True, help="folder or s3://... URL")
    add_build_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.commands.ingest import progress_from_args
    from pipelines.errors import ChesspipeError
    from pipelines.flows.monthly import build_month_flow, quiet_user_errors
    from pipelines.ingest.run import WouldShrinkMonth
    from pipelines.sources.http import CannotVerify
    from pipelines.warehouse.layout import check_month

    check_month(args.month)
    options = options_from_args(args)
    quiet_user_errors()
    bar = progress_from_args(args)
    try:
        manifest = build_month_flow(
            source=args.source,
            warehouse=location(args.warehouse),
            books=location(args.books),
            month=args.month,
            options=options,
            force=args.force,
            progress=bar,
        )
    except CannotVerify as exc:
        raise ChesspipeError(f"{exc} (pass --no-verify to skip the check)") from None
    except WouldShrinkMonth as exc:
        raise ChesspipeError(f"{exc}; pass --force to replace it") from None
    finally:
        if bar is not None:
            bar.close()
    if manifest["status"] == "up-to-date":
        print(
            f"chesspipe: {manifest['book_file']} is up to date (same source and settings); "
            "nothing changed (use --force to rebuild)",
            file=sys.stderr,
        )
    summary = {
        "month": manifest["month"],
        "status": manifest["status"],
        "book": args.books.rstrip("/") + "/" + manifest["book_file"],
        "games_read": manifest["ingest"]["games_read"],
        "games_kept": manifest["ingest"]["games_kept"],
        "entries": manifest["book"]["entries"],
    }
    print(json.dumps(summary, indent=2))
    return 0
