"""A helper process's life tied to the process that started it: the kernel ends it with its
parent (Linux), so that no helper goes on working, and writing files, for a parent killed with
SIGKILL. Used by ingest's worker processes, the training export's pool and a command's own Prefect
server, whose start-up waits on this module: it imports no more than it needs."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from contextlib import suppress

#: prctl(2) option: the signal this process gets when its parent thread dies.
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None) -> None:
    """Have the kernel kill this process when the one that started it dies (Linux only).

    `parent`, the pid of the process that started this one, closes the race where it died
    before this call: then this process exits at once. None: no such check (a helper started
    by a fork server, whose parent is the server).
    """
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(1)
