"""Helper processes: how to start them safely from this process."""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.context import ForkContext, ForkServerContext
from typing import Literal

#: How helper processes start: forked from this process, or from a fork server.
StartMethod = Literal["fork", "forkserver"]


def start_method() -> StartMethod:
    """Return how to start helper processes: "fork" when this process has a single thread.

    Forked helpers start at once with everything imported; forking a process with other
    threads (a Prefect flow's, a BLAS pool's) could deadlock, so those use a fork server.
    """
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        threads = 0  # unknown
    return "fork" if threads == 1 else "forkserver"


def process_context(method: StartMethod | None = None) -> ForkContext | ForkServerContext:
    """Return the multiprocessing context to start helper processes with.

    `method` None: the one start_method() judges safe for this process.
    """
    if (method or start_method()) == "fork":
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver")


def may_start_processes() -> bool:
    """Tell whether this process may start helper processes (a daemonic one may not)."""
    return not multiprocessing.current_process().daemon


def forking_parent(context: ForkContext | ForkServerContext) -> int | None:
    """Return this process's pid if `context` forks helpers from it (for
    `pipelines.lifetime.die_with_parent`)."""
    return os.getpid() if context.get_start_method() == "fork" else None
