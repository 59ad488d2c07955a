"""`chesspipe serve-monthly`: serve the monthly build deployment on its cron schedule."""

from __future__ import annotations

import argparse
from typing import Any

from pipelines.commands.options import (
    add_build_options,
    add_file_roles,
    add_locations,
    add_source_template,
    port,
)
from pipelines.flows.server import UI_PORT
from pipelines.monthly.schedule import MONTHLY_CRON


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve-monthly",
        help="serve a Prefect deployment that builds the previous month's book on a cron",
        description="Serve the monthly deployment from this process (Ctrl-C stops it). Each "
        "scheduled run builds the month before its scheduled date from SOURCE ({month} is "
        "replaced). Uses the Prefect server of PREFECT_API_URL, or starts a local one "
        "(scheduler and UI on --port) for as long as it serves.",
    )
    add_locations(parser)
    add_source_template(parser)
    parser.add_argument(
        "--cron", default=MONTHLY_CRON, help=f"cron schedule (default {MONTHLY_CRON}, UTC)"
    )
    parser.add_argument(
        "--port",
        type=port,
        default=UI_PORT,
        help=f"port of the local Prefect server and UI ({UI_PORT})",
    )
    add_build_options(parser)
    add_file_roles(parser, writes=("books",))
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from functools import partial

    from pipelines.commands.build_month import location, options_from_args
    from pipelines.flows.deployment import monthly_deployment, serve_monthly

    serve_monthly(
        partial(
            monthly_deployment,
            location(args.warehouse),
            location(args.books),
            args.source,
            args.cron,
            options_from_args(args),
        ),
        port=args.port,
        hint="port in use? use --port, or set PREFECT_API_URL to a running server",
    )
    return 0
