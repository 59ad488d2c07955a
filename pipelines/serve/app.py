"""The HTTP server: `/lichess`, `/standard`, `/standard/mainline`, `/` and `/board.svg`.

Read-only over the warehouse (an in-memory index of its months, `stats_index`). Bad requests
answer 400 with the reason as JSON (`{"error": ...}`), unknown paths 404. Several worker
processes (uvicorn's `workers`) each open the application from `SETTINGS_VARIABLE`
(`app_from_environment`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import chess
import chess.svg
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from pipelines.serve.explorer import CACHE_SIZE, BadRequest, Explorer
from pipelines.serve.page import PAGE
from pipelines.serve.tablebase import NotCovered, Tablebase


def _error(status: int, reason: str) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=status)


def _board(request: Request) -> chess.Board:
    fen = request.query_params.get("fen")
    if not fen:
        raise BadRequest("fen is required")
    try:
        board = chess.Board(fen.replace("_", " "))
    except ValueError as exc:
        raise BadRequest(f"invalid fen: {exc}") from None
    if board.status() != chess.STATUS_VALID:
        raise BadRequest(f"invalid fen: not a legal position ({fen})")
    return board


def make_app(explorer: Explorer | None, tablebase: Tablebase | None) -> Starlette:
    """The application over an explorer (a warehouse) and optional Syzygy tables."""

    # The handlers answer on the event loop (async): each answer is a few milliseconds of
    # in-memory work, cheaper than a hop to the thread pool.
    async def lichess(request: Request) -> Response:
        if explorer is None:
            return _error(404, "no warehouse")
        try:
            return JSONResponse(explorer.lichess(dict(request.query_params)))
        except BadRequest as exc:
            return _error(400, str(exc))

    def _tablebase(request: Request, mainline: bool) -> Response:
        if tablebase is None:
            return _error(404, "no Syzygy tables (--syzygy or SYZYGY_PATH)")
        try:
            board = _board(request)
            answer: dict[str, Any] = (
                tablebase.mainline(board) if mainline else tablebase.standard(board)
            )
        except BadRequest as exc:
            return _error(400, str(exc))
        except NotCovered as exc:
            return _error(404, str(exc))
        return JSONResponse(answer)

    async def standard(request: Request) -> Response:
        return _tablebase(request, mainline=False)

    async def mainline(request: Request) -> Response:
        return _tablebase(request, mainline=True)

    def _played(request: Request) -> chess.Board:
        params = request.query_params
        board = chess.Board((params.get("fen") or chess.STARTING_FEN).replace("_", " "))
        if board.status() != chess.STATUS_VALID:
            raise BadRequest("invalid fen: not a legal position")
        for text in (params.get("play") or "").split(","):
            if text:
                try:
                    board.push(board.parse_uci(text))
                except ValueError:
                    raise BadRequest(f"illegal move {text!r} in play") from None
        return board

    def position(request: Request) -> Response:
        try:
            board = _played(request)
        except (BadRequest, ValueError) as exc:
            return _error(400, str(exc))
        pieces = chess.popcount(board.occupied)
        covered = tablebase is not None and pieces <= tablebase.labeller.tables.largest
        return JSONResponse({"fen": board.fen(), "pieces": pieces, "tablebase": covered})

    def board_svg(request: Request) -> Response:
        try:
            board = _played(request)
        except (BadRequest, ValueError) as exc:
            return _error(400, str(exc))
        lastmove = board.peek() if board.move_stack else None
        svg = chess.svg.board(board, lastmove=lastmove, size=360)
        return Response(svg, media_type="image/svg+xml")

    def page(request: Request) -> Response:
        return HTMLResponse(PAGE)

    routes = [
        Route("/", page),
        Route("/lichess", lichess),
        Route("/standard", standard),
        Route("/standard/mainline", mainline),
        Route("/board.svg", board_svg),
        Route("/position", position),
    ]
    return Starlette(routes=routes)


#: The environment variable that hands `ServeSettings` to worker processes.
SETTINGS_VARIABLE = "CHESSPIPE_SERVE_SETTINGS"


@dataclass(frozen=True)
class ServeSettings:
    """What the server opens: the warehouse, Syzygy table folders (none: no tablebase), and
    how many explorer answers to keep in memory (0: none)."""

    warehouse: str
    syzygy: list[str] = field(default_factory=list)
    cache_size: int = CACHE_SIZE

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeSettings:
        return cls(**json.loads(text))


def open_app(settings: ServeSettings) -> Starlette:
    """Open the warehouse (and tables, when given) and return the application."""
    explorer = Explorer(Path(settings.warehouse), cache_size=settings.cache_size)
    tablebase = Tablebase([Path(p) for p in settings.syzygy]) if settings.syzygy else None
    return make_app(explorer, tablebase)


def app_from_environment() -> Starlette:
    """The application of the settings in `SETTINGS_VARIABLE` (for uvicorn's workers)."""
    return open_app(ServeSettings.from_json(os.environ[SETTINGS_VARIABLE]))
