"""`chesspipe serve`: the Lichess opening explorer and tablebase APIs, and a page, over HTTP."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from pathlib import Path
from typing import Any

from pipelines.commands.options import non_negative_int, port, workers
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
    parser.add_argument(
        "--warehouse",
        required=True,
        type=local_folder,
        help="a local folder (a warehouse in object storage is served from a synced copy)",
    )
    parser.add_argument(
        "--masters",
        type=Path,
        help="a warehouse of collections indexed for the explorer, served as /masters",
    )
    parser.add_argument("--syzygy", help="Syzygy table folders (':'-separated)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port, default=9002)
    parser.add_argument(
        "--cache",
        type=non_negative_int,
        default=None,
        metavar="MB",
        help=f"memory for explorer answers, in MB (default {CACHE_BYTES >> 20}; 0: none)",
    )
    parser.add_argument(
        "--workers",
        type=workers,
        default=1,
        help="server processes (default 1); they read the same files on disk and share the "
        "memory one would use (each holds its part of the caches)",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request (an access log)")
    parser.set_defaults(handler=run)


def local_folder(text: str) -> Path:
    """A warehouse the server reads: a local folder, not a URL (it reads a few blocks of its
    files a request, as a local disk serves them)."""
    from pipelines.sources.object_store import is_remote

    if is_remote(text):
        raise argparse.ArgumentTypeError(
            f"{text} is in object storage; serve reads a local folder: copy the warehouse "
            f"there first (aws s3 sync {text} DIR, or rclone) and serve DIR"
        )
    return Path(text)


def run(args: argparse.Namespace) -> int:

    from pipelines.endgames.tables import split_paths
    from pipelines.serve.app import PARENT_VARIABLE, SETTINGS_VARIABLE, ServeSettings, open_app
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
    masters = None
    if args.masters is not None:
        if not args.masters.is_dir():
            raise ChesspipeError(f"masters warehouse {args.masters} does not exist")
        masters = str(args.masters.resolve())
    no_masters = "no masters warehouse (chesspipe serve --masters DIR)"
    settings = ServeSettings(
        str(args.warehouse.resolve()), folders, cache, no_tables, masters, no_masters,
        workers=args.workers,
    )  # fmt: skip
    logging: dict[str, Any] = {"log_level": "info", "access_log": True} if args.verbose else {}
    sock = _listen(args.host, args.port)
    url = f"http://{args.host}:{sock.getsockname()[1]}/"
    if args.workers == 1:
        app = open_app(settings)
        config = server_config(app, host=args.host, port=args.port, **logging)
        _Announcing(config, f"chesspipe: serving {url}: {app.state.serves}").run(sockets=[sock])
        return 0
    from pipelines.explorer.layout import explorer_lookups
    from pipelines.serve.lookup_store import check_lookups

    check_lookups(explorer_lookups(args.warehouse))  # a damaged file: one line, before workers
    os.environ[SETTINGS_VARIABLE] = settings.to_json()
    os.environ[PARENT_VARIABLE] = str(os.getpid())  # its workers die with it, even by kill -9
    config = server_config(
        "pipelines.serve.app:app_from_environment",
        factory=True,
        workers=args.workers,
        host=args.host,
        port=args.port,
        **logging,
    )
    print(f"chesspipe: serving {url} with {args.workers} processes", file=sys.stderr, flush=True)
    _serve_workers(config, sock)
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound here so that a port in use is one line."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ChesspipeError(
                f"port {port} on {host} is in use (another server?); choose another --port"
            ) from None
        raise ChesspipeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class _Announcing:
    """uvicorn's server, which says where it is once it listens."""

    def __new__(cls, config: Any, line: str) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets=sockets)
                if self.started:
                    print(line, file=sys.stderr, flush=True)

        return Server(config)


def _serve_workers(config: Any, sock: socket.socket) -> None:
    """uvicorn's worker processes over one listening socket, a TCP socket in name too (made
    with its protocol number, so that asyncio in the workers sets TCP_NODELAY on its
    connections and no answer waits for a delayed ACK, 40 ms)."""
    from uvicorn.supervisors import Multiprocess

    Multiprocess(config, sockets=[sock]).run()
