"""`chesspipe build-month`: the monthly Prefect flow, from a dump to a published book."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipelines.commands.book_build import book_settings_from_args
from pipelines.commands.options import (
    SETTING_FLAGS,
    add_build_options,
    add_file_roles,
    add_locations,
    add_output_options,
    as_said,
    settings_as_flags,
)
from pipelines.ingest.settings import IngestSettings
from pipelines.monthly.settings import MonthSettings
from pipelines.sources.options import DownloadOptions


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
    with settings_as_flags():
        settings = MonthSettings(
            ingest=IngestSettings(rules, args.plies),
            book=book,
            keep_partial=args.keep_partial,
            explorer=not args.no_explorer,
            games=not args.no_games,
            allow_empty=args.allow_empty,
            workers=args.workers,
        )
    download = DownloadOptions(
        verify=not args.no_verify, cache=args.cache, timeout=args.timeout, retries=args.retries
    )
    return BuildOptions(settings=settings, download=download)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "build-month",
        help="Prefect flow: ingest a month, build its book, publish BOOKS/lichess-YYYY-MM.bin",
        description="Run the monthly Prefect flow (on a local Prefect server started and stopped "
        "with the command, unless PREFECT_API_URL names one): stream SOURCE, ingest it into "
        "WAREHOUSE, build the month's book and publish BOOKS/lichess-YYYY-MM.bin with a "
        "manifest BOOKS/lichess-YYYY-MM.json. Nothing is rebuilt when the source and settings "
        "are unchanged. Ctrl-C or SIGTERM stops it within seconds (exit status 130 or 143), each "
        "output whole; a build stopped after its ingest leaves the new statistics beside the "
        "previous book, which `warehouse check --books` reports and --repair builds again.",
    )
    parser.add_argument("source", help="path, URL, '-' or lichess:YYYY-MM ({month} is replaced)")
    parser.add_argument("--month", required=True, help="YYYY-MM")
    add_locations(parser)
    add_file_roles(parser, reads=("source",), writes=("books",))
    add_build_options(parser)
    add_output_options(parser)
    parser.set_defaults(handler=run)


def prefect_console(args: argparse.Namespace) -> None:
    """Set what of Prefect's logging reaches the terminal; call before Prefect is imported.

    Only Prefect's console handler is set (PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL): the flow
    run's logs on the Prefect server keep what PREFECT_LOGGING_LEVEL records.
    """
    setting = "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"
    if args.quiet:
        os.environ[setting] = "ERROR"
    elif args.verbose:
        os.environ[setting] = "NOTSET"
    else:
        os.environ.setdefault(setting, "WARNING")


@contextmanager
def flow_command(args: argparse.Namespace) -> Iterator[Any]:
    """Set up a command that runs a flow; yield the flows' BuildOptions its options describe.

    Prefect's terminal output follows --verbose/--quiet, Ctrl-C and SIGTERM stop it cleanly,
    and a local Prefect server boots (unless PREFECT_API_URL names one) while the flow's
    libraries are imported; it is stopped when the block ends. An existing Dask cluster
    (--dask-address) is asked first whether it answers and its workers reach that server.
    """
    from pipelines.commands.stopping import stop_on_signals
    from pipelines.flows.server import LocalApi

    prefect_console(args)
    stop_on_signals()
    with LocalApi() as api:
        gc.disable()  # while importing: many objects, little garbage, ~30 % faster
        try:
            options = options_from_args(args)
            from pipelines.flows.monthly import preload, quiet_user_errors

            preload()  # while the server boots
        finally:
            gc.freeze()  # the imported modules stay: never scan them again
            gc.enable()
        local_server = api.connect()
        if getattr(args, "dask_address", None):  # before any work: reachable, and reaching us
            from pipelines.flows.cluster import check_cluster

            check_cluster(args.dask_address, local_server=local_server)
        quiet_user_errors()
        yield options


def run(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from pipelines.commands.ingest import ingest_errors_said, progress_shown
    from pipelines.errors import ChesspipeError
    from pipelines.monthly.source import check_source
    from pipelines.warehouse.layout import check_month

    check_month(args.month)
    check_source(args.source, args.variant)  # at once, not after seconds of Prefect
    with flow_command(args) as options:
        from pipelines.books.build import EmptyBook
        from pipelines.flows.monthly import build_month_flow
        from pipelines.monthly.manifest import MonthManifest
        from pipelines.sources.checksums import CannotVerify

        with progress_shown(args) as bar:
            apart = bar.apart_from_logs() if bar is not None else nullcontext()
            try:
                with ingest_errors_said(), apart:
                    recorded = build_month_flow(
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
            except EmptyBook as exc:
                raise ChesspipeError(as_said(exc)) from None
        manifest = MonthManifest.from_json(recorded)  # as the flow run returns it: JSON
    if manifest.status == "up-to-date":
        print(
            f"chesspipe: {manifest.book_file} is up to date (same source and settings); "
            "nothing changed (use --force to rebuild)",
            file=sys.stderr,
        )
    if manifest.status == "empty":
        from pipelines.books.build import no_move_passes

        read, kept = manifest.ingest.games_read, manifest.ingest.games_kept
        why = (
            f"no game of {args.month} is kept ({read:,} read)"
            if kept == 0
            else no_move_passes([args.month], book_settings_from_args(args), SETTING_FLAGS)
        )
        print(f"chesspipe: warning: {why}: no book published (--allow-empty)", file=sys.stderr)
    summary = {
        "month": manifest.month,
        "status": manifest.status,
        "book": (
            None
            if manifest.status == "empty"
            else args.books.rstrip("/") + "/" + manifest.book_file
        ),
        "games_read": manifest.ingest.games_read,
        "games_kept": manifest.ingest.games_kept,
        "entries": manifest.book.entries,
    }
    print(json.dumps(summary, indent=2))
    return 0
