"""`chesspipe serve`: the Lichess opening explorer and tablebase APIs, and a page, over HTTP."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from pipelines.commands.options import port
from pipelines.errors import ChesspipeError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve /lichess (opening explorer API), /standard (tablebase API) and a page",
        description="Serve the warehouse read-only: GET /lichess as explorer.lichess.ovh, "
        "GET /standard and /standard/mainline as tablebase.lichess.ovh (from --syzygy, else "
        "SYZYGY_PATH, when given), and an explorer page at /.",
    )
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument("--syzygy", help="Syzygy table folders (':'-separated)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port, default=9002)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from pipelines.endgames.tables import split_paths
    from pipelines.serve.app import open_app

    if not args.warehouse.is_dir():
        raise ChesspipeError(f"warehouse {args.warehouse} does not exist")
    spec = args.syzygy or os.environ.get("SYZYGY_PATH")
    folders = split_paths(spec) if spec else None
    app = open_app(args.warehouse, folders)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
