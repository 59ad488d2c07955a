"""Stopping a command that runs a flow: Ctrl-C and SIGTERM end it within seconds, in one line."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading

from pipelines.errors import Stopped
from pipelines.progress import stream_handlers

#: Seconds a stopped command has to unwind before it ends anyway, as a kill would end it.
STOP_GRACE = 5.0


def stop_on_signals(*, grace: float = STOP_GRACE) -> None:
    """Make Ctrl-C and SIGTERM end the command with its one line, outputs left unpublished.

    SIGTERM raises Stopped as SIGINT raises KeyboardInterrupt (during a flow run, Prefect's own
    SIGTERM handler raises its TerminationSignal), so the build unwinds: what it was writing is
    left unpublished, its locks released, its helpers stopped. Once a stop is asked, log records
    no longer reach the terminal (the flow and task runs' crash is still recorded on the Prefect
    server). Work that cannot be interrupted (a month ingesting on a thread of a backfill) does
    not hold the command: `grace` seconds after the signal, or at a second Ctrl-C, it ends at
    once, leaving what a kill leaves (nothing half-published; its helper processes die with it).

    Signals are noticed by a thread reading the interpreter's wakeup fd, whichever Python
    handler (this one, Prefect's) then runs in the main thread.
    """
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    os.register_at_fork(after_in_child=_no_wakeup_fd)
    watcher = threading.Thread(
        target=_watch, args=(read, grace), name="chesspipe-stop", daemon=True
    )
    watcher.start()

    def stop(signum: int, frame: object) -> None:
        if not _asked:
            _asked.append(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Stopped(signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def _watch(read: int, grace: float) -> None:
    """Mute the terminal's log output at the first stop signal, and end the command if it lasts."""
    asked: int | None = None
    while True:
        for signum in os.read(read, 64):
            if signum not in (signal.SIGINT, signal.SIGTERM):
                continue
            if asked is not None:
                if signum == signal.SIGINT:  # Ctrl-C again: no more waiting
                    _end_now(asked)
                continue  # (Prefect sends SIGTERM again once its run has ended)
            asked = signum
            _asked.append(signum)
            for handler in stream_handlers():
                handler.setLevel(logging.CRITICAL + 1)
            timer = threading.Timer(grace, _end_now, (signum,))
            timer.daemon = True
            timer.start()


#: The stop signal the command was sent, once it was (a list, so that the watcher can add it).
_asked: list[int] = []


def stop_asked() -> int | None:
    """The signal that asked the command to stop (SIGINT, SIGTERM), or None: whatever error a
    stop then raises, wrapped by a library (pydantic wraps it in a serialization error), the
    command says it stopped, in one line."""
    return _asked[0] if _asked else None


def stop_line(signum: int) -> str:
    """What a stopped command says."""
    return "interrupted" if signum == signal.SIGINT else str(Stopped(signum))


def _end_now(signum: int) -> None:
    print(f"chesspipe: {stop_line(signum)}", file=sys.stderr, flush=True)
    os._exit(128 + signum)


def _no_wakeup_fd() -> None:
    """In a forked child, stop writing its signals to the parent's pipe."""
    with contextlib.suppress(ValueError):  # not the main thread
        signal.set_wakeup_fd(-1)
