"""`chesspipe serve`: the Lichess opening explorer and tablebase APIs, and a page, over HTTP."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from pipelines.commands.options import non_negative_int, port, positive_int
from pipelines.errors import ChesspipeError
from pipelines.serve.answer_cache import CACHE_BYTES


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
    parser.add_argument(
        "--cache", type=non_negative_int, default=None, metavar="MB",
        help=f"memory for explorer answers, in MB (default {CACHE_BYTES >> 20}; 0: none)",
    )  # fmt: skip
    parser.add_argument(
        "--workers", type=positive_int, default=1,
        help="server processes (default 1); each loads the warehouse's index",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from pipelines.endgames.tables import split_paths
    from pipelines.serve.app import SETTINGS_VARIABLE, ServeSettings, open_app
    from pipelines.serve.http_guard import server_config

    if not args.warehouse.is_dir():
        raise ChesspipeError(f"warehouse {args.warehouse} does not exist")
    spec = args.syzygy or os.environ.get("SYZYGY_PATH")
    folders = [str(p) for p in split_paths(spec)] if spec else []
    cache = CACHE_BYTES if args.cache is None else args.cache * 1024 * 1024
    if cache < 0:
        raise ChesspipeError(f"--cache must be 0 or more, not {args.cache}")
    if args.workers < 1:
        raise ChesspipeError(f"--workers must be 1 or more, not {args.workers}")
    no_tables = "no Syzygy tables (--syzygy or SYZYGY_PATH)"
    settings = ServeSettings(str(args.warehouse.resolve()), folders, cache, no_tables)
    if args.workers == 1:
        app = open_app(settings)
        uvicorn.Server(server_config(app, host=args.host, port=args.port)).run()
        return 0
    os.environ[SETTINGS_VARIABLE] = settings.to_json()
    config = server_config(
        "pipelines.serve.app:app_from_environment", factory=True, workers=args.workers,
        host=args.host, port=args.port,
    )  # fmt: skip
    _serve_workers(config)
    return 0


def _serve_workers(config: Any) -> None:
    """uvicorn's worker processes over one listening socket, made a TCP socket in name too:
    uvicorn binds it without a protocol number, so asyncio in the workers does not set
    TCP_NODELAY on its connections and each answer waits for a delayed ACK (40 ms)."""
    import socket

    from uvicorn.supervisors import Multiprocess

    bound = config.bind_socket()
    sock = socket.socket(bound.family, bound.type, socket.IPPROTO_TCP, fileno=bound.detach())
    Multiprocess(config, sockets=[sock]).run()
