"""Long `play` lines replayed in a worker process of lower priority, off the server's interpreter.

A line of hundreds of plies costs milliseconds of python-chess, holding the interpreter lock
that the event loop and the short requests need: one client sending such lines slows every
other. The `Replayer` hands lines of at least `LONG_PLAY` plies to one process of its own
(spawned, at the lowest priority: `lower_priority`), one line at a time, and gets back the
position reached as a FEN with its keys. Shorter lines, and any line while the process is not
running (or not yet ready), are replayed in the calling thread (`explorer.board_of`), with the
same answers and the same errors. A process that dies is started again; the line it took is
replayed in the thread.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

import chess

from pipelines.serve.line import Position, replay_line
from pipelines.serve.params import BadRequest

if TYPE_CHECKING:
    from pipelines.serve.explorer import Query

#: Lines of at least this many plies are replayed in the worker process (a 40-ply line costs
#: about 1 ms of python-chess: on the other core, 8 clients' 40-ply lines answered at p50 22 ms
#: at 16x; in the request's thread, 35 ms).
LONG_PLAY = 40
#: How much lower the worker's priority is than the server's where Linux's `SCHED_IDLE` is not
#: offered (`lower_priority`).
NICENESS = 10


class Replayer:
    """Replays long lines in a worker process; `start` it, `close` it (both may be called
    again). Thread-safe: one line at a time goes to the process."""

    def __init__(self, *, long_play: int = LONG_PLAY) -> None:
        self.long_play = long_play
        self._lock = threading.Lock()
        self._process: Any = None
        self._connection: Connection | None = None
        self._closed = False
        #: Whether the worker said it is ready (until then, lines are replayed in the thread).
        self._ready = False

    def start(self) -> None:
        """Start the worker process (nothing if it runs)."""
        with self._lock:
            self._closed = False
            self._start()

    def _start(self) -> None:
        if self._process is not None and self._process.is_alive():
            return
        context = multiprocessing.get_context("spawn")
        here, there = context.Pipe()
        process = context.Process(target=_serve, args=(there,), daemon=True, name="replay")
        process.start()
        there.close()
        self._process, self._connection, self._ready = process, here, False

    def position(self, query: Query) -> Position:
        """The position `query` asks for, as explorer.board_of gives it."""
        from pipelines.serve.explorer import board_of

        if len(query.play) < self.long_play:
            return board_of(query)
        with self._lock:
            if self._closed or self._connection is None or not self._is_ready(0):
                reply = None
            else:
                try:
                    self._connection.send((query.variant, query.fen, query.play))
                    reply = self._connection.recv()
                except (EOFError, OSError):
                    self._stop()
                    self._start()
                    reply = None
        if reply is None:  # not running, or died on the way
            return board_of(query)
        if isinstance(reply, str):
            raise BadRequest(reply)
        fen, key, path, from_start = reply
        board = chess.Board(fen, chess960=query.variant == "chess960")
        return Position(board, key, path, from_start)

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the worker to be ready; whether it is."""
        with self._lock:
            return self._connection is not None and self._is_ready(timeout)

    def _is_ready(self, timeout: float) -> bool:
        if not self._ready:
            assert self._connection is not None
            try:
                if self._connection.poll(timeout):
                    self._ready = self._connection.recv() == _READY
            except (EOFError, OSError):
                self._stop()
                self._start()
        return self._ready

    def close(self) -> None:
        """Stop the worker process, without waiting for a line it replays."""
        with self._lock:
            self._closed = True
            self._stop()

    def _stop(self) -> None:
        process, connection = self._process, self._connection
        self._process = self._connection = None
        if connection is not None:
            connection.close()
        if process is not None:
            process.kill()
            process.join(5)


#: What the worker sends once it runs at its priority.
_READY = "ready"


def _serve(connection: Connection) -> None:
    """The worker: lines in, (fen, key, path, from start) or a BadRequest's reason out, until
    the server closes its end."""
    lower_priority()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a terminal's Ctrl-C is the server's to take)
    connection.send(_READY)
    while True:
        try:
            variant, fen, play = connection.recv()
        except (EOFError, OSError):
            return
        try:
            position = replay_line(variant, fen, play, offer_every=0)
            reply: object = (
                position.board.fen(),
                position.key,
                position.path,
                position.from_start,
            )
        except BadRequest as exc:
            reply = str(exc)
        try:
            connection.send(reply)
        except (OSError, BrokenPipeError):
            return


def lower_priority() -> None:
    """Make this process run only when no other wants the core: Linux's `SCHED_IDLE` policy,
    else (elsewhere) `NICENESS` steps nicer.

    Niced by 10, the worker still took its CFS share of a core whenever it contended with the
    server's clients on a 2-core machine, and each such turn delayed an ordinary request by a
    time slice: 4 clients sending 300-ply lines took the p95 of ordinary requests to 2.2-2.5x
    of quiet; under `SCHED_IDLE`, 1.5x (bench/RESULTS.md)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(NICENESS)
