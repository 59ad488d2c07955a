"""The HTTP server: `/lichess`, `/standard`, `/standard/mainline`, `/` and `/board.svg`.

Read-only over the warehouse (an in-memory index of its months, `stats_index`). Bad requests
answer 400 with the reason as JSON (`{"error": ...}`), unknown paths 404. The answers are
worked out in threads, off the event loop: short requests in `SHORT_THREADS`, long ones (a
`play` of more than `LONG_PLAY` plies, a tablebase mainline) in `LONG_THREADS`, so that long
requests wait for each other and not the short ones; the long lines themselves are replayed
in a worker process of lower priority (`replay.Replayer`), so that they do not hold the
interpreter the short requests need. Request heads are bounded (`http_guard.HeadLimit`) and
refusals sent late (`http_guard.SlowRefusals`). Several worker processes (uvicorn's `workers`)
each open the application from `SETTINGS_VARIABLE` (`app_from_environment`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import chess
import chess.svg
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pipelines.errors import ChesspipeError
from pipelines.explorer.blocks import CACHE_BYTES as BLOCK_CACHE_BYTES
from pipelines.explorer.blocks import SHARED_CACHE
from pipelines.lifetime import die_with_parent
from pipelines.serve import params
from pipelines.serve.answer_cache import CACHE_BYTES
from pipelines.serve.explorer import Explorer, board_of, encode
from pipelines.serve.games_search import search_answers
from pipelines.serve.http_guard import HeadLimit, SlowRefusals
from pipelines.serve.lookup_store import SERVE_MEMORY, DamagedLookup
from pipelines.serve.masters import Masters
from pipelines.serve.page import PAGE
from pipelines.serve.params import BadRequest
from pipelines.serve.player import player_answer
from pipelines.serve.replay import LONG_PLAY, Replayer
from pipelines.serve.tablebase import NotCovered, Tablebase

#: Threads answering short requests at once (index queries, tablebase probes, short lines);
#: the event loop only reads requests and writes answers. More would only share the interpreter.
SHORT_THREADS = 4
#: Threads answering long requests at once (an explorer request is long from LONG_PLAY plies).
LONG_THREADS = 1


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


def _pgn_play(text: str) -> list[str]:
    """The UCI moves of pasted PGN (a game, or moves alone) from the start position."""
    import io

    import chess.pgn

    if len(text) > 100_000:
        raise BadRequest("pgn holds more than 100,000 characters")
    game = chess.pgn.read_game(io.StringIO(text))
    if game is None or game.errors:
        reason = str(game.errors[0]) if game is not None and game.errors else "no moves"
        raise BadRequest(f"pgn cannot be read: {reason}")
    moves = [move.uci() for move in game.mainline_moves()]
    if len(moves) > params.MAX_PLAY:
        raise BadRequest(f"pgn holds {len(moves)} moves; at most {params.MAX_PLAY} are replayed")
    return moves


def make_app(
    explorer: Explorer | None,
    tablebase: Tablebase | None,
    no_tables: str = "no Syzygy tables",
    masters: Masters | None = None,
    no_masters: str = "no masters warehouse",
    *,
    replayer: Replayer | None = None,
) -> Starlette:
    """The application over an explorer (a warehouse), optional Syzygy tables and an optional
    masters warehouse; without tables, a tablebase request is answered 404 with `no_tables`,
    without a masters warehouse a masters request 404 with `no_masters`. A `replayer` replays
    the explorer's long lines from the application's start to its end (replay.Replayer)."""

    short_lane = anyio.CapacityLimiter(SHORT_THREADS)
    long_lane = anyio.CapacityLimiter(LONG_THREADS)

    def off_loop(
        work: Callable[[Request], Response], *, long: bool = False
    ) -> Callable[[Request], Any]:
        """A handler whose work runs in a thread of its lane: the long lane when `long`, or
        when the request's `play` is longer than `LONG_PLAY` plies."""

        async def handler(request: Request) -> Response:
            heavy = long or (request.query_params.get("play") or "").count(",") >= LONG_PLAY
            lane = long_lane if heavy else short_lane
            return await anyio.to_thread.run_sync(work, request, limiter=lane)

        return handler

    def _explorer_answer(
        request: Request, answer: Callable[[Explorer, dict[str, str]], bytes], media_type: str
    ) -> Response:
        """An explorer route's answer to the request's parameters, or its 400 or 404."""
        if explorer is None:
            return _error(404, "no warehouse")
        try:
            body = answer(explorer, dict(request.query_params))
        except BadRequest as exc:
            return _error(400, str(exc))
        except DamagedLookup as exc:  # a block failed its checksum: an error, not a count
            print(f"chesspipe: {exc}", file=sys.stderr, flush=True)
            return _error(503, str(exc))
        return Response(body, media_type=media_type)

    def lichess(request: Request) -> Response:
        return _explorer_answer(request, Explorer.lichess_json, "application/json")

    def lichess_history(request: Request) -> Response:
        return _explorer_answer(
            request,
            lambda served, query: served.lichess_json(query, history_only=True),
            "application/json",
        )

    def player(request: Request) -> Response:
        return _explorer_answer(
            request,
            lambda served, query: encode(player_answer(served, query)) + b"\n",
            "application/x-ndjson",
        )

    def masters_games(request: Request) -> Response:
        if masters is None:
            return _error(404, no_masters)
        try:
            answer = masters.answer(dict(request.query_params))
        except BadRequest as exc:
            return _error(400, str(exc))
        return Response(encode(answer), media_type="application/json")

    def masters_pgn(request: Request) -> Response:
        if masters is None:
            return _error(404, no_masters)
        text = masters.pgn(request.path_params["id"])
        if text is None:
            return _error(404, "no such game")
        return Response(text, media_type="application/x-chess-pgn")

    def _tablebase(request: Request, mainline: bool) -> Response:
        if tablebase is None:
            return _error(404, no_tables)
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

    def standard(request: Request) -> Response:
        return _tablebase(request, mainline=False)

    def mainline(request: Request) -> Response:
        return _tablebase(request, mainline=True)

    def _played(request: Request) -> chess.Board:
        query = request.query_params
        board = chess.Board((query.get("fen") or chess.STARTING_FEN).replace("_", " "))
        if board.status() != chess.STATUS_VALID:
            raise BadRequest("invalid fen: not a legal position")
        for text in params.play(query.get("play")):
            try:
                board.push(board.parse_uci(text))
            except ValueError:
                raise BadRequest(f"illegal move {text!r} in play") from None
        return board

    def position(request: Request) -> Response:
        pgn = request.query_params.get("pgn")
        if pgn is not None:
            try:
                return JSONResponse({"play": _pgn_play(pgn)})
            except BadRequest as exc:
                return _error(400, str(exc))
        try:
            board = _played(request)
        except ValueError as exc:  # BadRequest, or python-chess's reading of the FEN
            return _error(400, str(exc))
        pieces = chess.popcount(board.occupied)
        covered = tablebase is not None and pieces <= tablebase.labeller.tables.largest
        line = []
        replay = chess.Board(board.root().fen()) if board.move_stack else None
        for move in board.move_stack:
            assert replay is not None
            line.append(replay.san(move))
            replay.push(move)
        return JSONResponse(
            {
                "fen": board.fen(),
                "pieces": pieces,
                "tablebase": covered,
                "legal": [board.uci(m) for m in board.legal_moves],
                "san": line,
            }
        )

    def board_svg(request: Request) -> Response:
        try:
            board = _played(request)
        except ValueError as exc:
            return _error(400, str(exc))
        lastmove = board.peek() if board.move_stack else None
        svg = chess.svg.board(board, lastmove=lastmove, size=360)
        return Response(svg, media_type="image/svg+xml")

    def page(request: Request) -> Response:
        return HTMLResponse(PAGE)

    def games_search(request: Request) -> Response:
        if explorer is None:
            return _error(404, "no warehouse")
        try:
            found = search_answers(explorer.warehouse, request.query_params)
            first = next(found, None)
        except (ChesspipeError, BadRequest) as exc:  # a bad query, setting or number, a month
            # not explored
            return _error(400, str(exc))

        def lines() -> Iterator[bytes]:
            if first is None:
                return
            yield encode(first) + b"\n"
            for line in found:
                yield encode(line) + b"\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    routes = [
        Route("/", page),
        Route("/lichess", off_loop(lichess)),
        Route("/lichess/history", off_loop(lichess_history)),
        Route("/player", off_loop(player)),
        Route("/personal", off_loop(player)),
        Route("/masters", off_loop(masters_games)),
        Route("/master", off_loop(masters_games)),
        Route("/masters/pgn/{id}", off_loop(masters_pgn)),
        Route("/master/pgn/{id}", off_loop(masters_pgn)),
        Route("/standard", off_loop(standard)),
        Route("/standard/mainline", off_loop(mainline, long=True)),
        Route("/board.svg", off_loop(board_svg)),
        Route("/position", off_loop(position)),
        Route("/games/search", off_loop(games_search, long=True)),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if replayer is None or explorer is None:
            yield
            return
        await anyio.to_thread.run_sync(replayer.start)
        explorer.position_of = replayer.position
        try:
            yield
        finally:
            explorer.position_of = board_of
            replayer.close()

    return Starlette(
        routes=routes,
        middleware=[Middleware(SlowRefusals), Middleware(HeadLimit)],
        lifespan=lifespan,
    )


#: The environment variable that hands `ServeSettings` to worker processes.
SETTINGS_VARIABLE = "CHESSPIPE_SERVE_SETTINGS"

#: The server process that started uvicorn's workers, for them to die with it.
PARENT_VARIABLE = "CHESSPIPE_SERVE_PARENT"


@dataclass(frozen=True)
class ServeSettings:
    """What the server opens: the warehouse, Syzygy table folders (none: no tablebase), and
    the bytes of explorer answers to keep in memory (0: none), and what a tablebase request
    is answered without tables (the command says how to give them)."""

    warehouse: str
    syzygy: list[str] = field(default_factory=list)
    cache_bytes: int = CACHE_BYTES
    no_tables: str = "no Syzygy tables"
    masters: str | None = None
    no_masters: str = "no masters warehouse"
    #: Server processes: each holds its share of the caches (answers, blocks, DuckDB's), so
    #: that several hold what one would.
    workers: int = 1

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeSettings:
        return cls(**json.loads(text))


def open_app(settings: ServeSettings) -> Starlette:
    """Open the warehouse (and tables, when given) and return the application; what it serves
    is in `app.state.serves` (`serves`), the explorer in `app.state.explorer`."""
    share = max(settings.workers, 1)
    SHARED_CACHE.resize(BLOCK_CACHE_BYTES // share)
    explorer = Explorer(
        Path(settings.warehouse),
        cache_bytes=settings.cache_bytes // share,
        memory_limit=SERVE_MEMORY // share,
    )
    tablebase = Tablebase([Path(p) for p in settings.syzygy]) if settings.syzygy else None
    masters = Masters(Path(settings.masters), explorer) if settings.masters else None
    app = make_app(
        explorer, tablebase, settings.no_tables, masters, settings.no_masters, replayer=Replayer()
    )
    app.state.serves = serves(explorer, settings.syzygy)
    app.state.explorer = explorer
    return app


def serves(explorer: Explorer, syzygy: list[str]) -> str:
    """What a server answers from, in a few words: the months, the rows in memory (months
    without explorer data) and the games on disk, the tables."""
    months = explorer.months
    parts = [f"{months[0]}..{months[-1]}"] if months else []
    if len(explorer.index) or not explorer.lookup.months:
        parts.append(f"{len(explorer.index):,} index rows")
    if explorer.lookup.months:
        parts.append(f"{explorer.lookup.game_count():,} games on disk")
    count = f"{len(months)} month{'s' if len(months) != 1 else ''}"
    tables = f"Syzygy tables in {', '.join(syzygy)}" if syzygy else "no tablebase"
    return f"explorer over {count} ({', '.join(parts)}), {tables}"


def app_from_environment() -> Starlette:
    """The application of the settings in `SETTINGS_VARIABLE` (for uvicorn's workers), in a
    worker that dies with the server process named by `PARENT_VARIABLE` (its replay worker
    and the resource tracker follow when their pipes close)."""
    parent = os.environ.get(PARENT_VARIABLE)
    if parent is not None:
        die_with_parent(int(parent))
    return open_app(ServeSettings.from_json(os.environ[SETTINGS_VARIABLE]))
