"""Helper processes: how to start them safely from this process."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from multiprocessing.context import ForkContext, ForkServerContext
from typing import Literal

#: prctl(2) option: the signal this process gets when its parent thread dies.
_PR_SET_PDEATHSIG = 1


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
    """Return this process's pid if `context` forks helpers from it (for die_with_parent)."""
    return os.getpid() if context.get_start_method() == "fork" else None


def die_with_parent(parent: int | None) -> None:
    """Have the kernel kill this helper process when the one that started it dies (Linux).

    A helper must not go on working, and writing files, for a parent killed with SIGKILL.
    `parent` (from forking_parent) closes the race where a forking parent died before this
    call. Elsewhere than Linux this does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(1)
