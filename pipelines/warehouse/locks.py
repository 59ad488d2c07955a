"""Locks: one run per month, or per output, at a time, released when the run ends or dies."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from glob import escape as glob_escape
from pathlib import Path

from pipelines.errors import ChesspipeError
from pipelines.warehouse.leftovers import remove_month_leftovers

#: File descriptors of the month locks this process holds.
_HELD_LOCKS: set[int] = set()


def _drop_locks_after_fork() -> None:
    """In a forked child, let go of the parent's lock files; the parent keeps its locks.

    A child holding a copy would keep a month locked after its parent was killed.
    """
    if not _HELD_LOCKS:
        return
    null = os.open(os.devnull, os.O_RDONLY)
    for fd in _HELD_LOCKS:
        os.dup2(null, fd)  # the number stays valid, now naming /dev/null
    os.close(null)
    _HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_drop_locks_after_fork)


#: How long a lock whose recorded holder is dead may stay held (by a helper forked from it
#: that has not yet let go of its copy, see _drop_locks_after_fork) before it counts as busy.
_DEAD_HOLDER_GRACE = 5.0


def _holder(fd: int) -> int | None:
    """Return the pid the lock file names as its holder, None if it names none."""
    text = os.pread(fd, 32, 0).strip()
    return int(text) if text.isdigit() else None


def _is_dead(pid: int) -> bool:
    """Tell whether no process `pid` exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists, owned by another user
        return False
    return False


def _flock_or_wait_out_dead_holder(fd: int) -> bool:
    """Take the lock on the open lock file `fd` without blocking; return whether it was taken.

    A busy lock whose recorded holder is dead is held by a helper forked from that holder
    between fork and letting go (a run killed while it started its workers): that is waited
    out, for up to _DEAD_HOLDER_GRACE seconds. A live holder means busy at once.
    """
    import fcntl

    deadline = None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pid = _holder(fd)
            if pid is None or not _is_dead(pid):
                return False
            deadline = deadline or time.monotonic() + _DEAD_HOLDER_GRACE
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)


@contextmanager
def exclusive_lock(lock_path: Path, busy: str) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` (created if missing), failing at once with
    ChesspipeError(busy) if another process holds it. Forked child processes do not hold it:
    the lock ends with this process. The lock file names its holder's pid while it is held."""
    import fcntl

    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        fd = handle.fileno()
        if not _flock_or_wait_out_dead_holder(fd):
            raise ChesspipeError(busy)
        _HELD_LOCKS.add(fd)
        try:
            with suppress(OSError):  # a hint only: a full disk must not stop the run
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
            yield
        finally:
            _HELD_LOCKS.discard(fd)
            with suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)


@contextmanager
def month_lock(warehouse: Path, month: str, clean: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on a month, failing at once if another run holds it.

    Once it is acquired, what dead runs of the month left in the warehouse (staging folders,
    temporary files) is removed, unless `clean` is false: no live run of the month exists then.
    Forked child processes do not hold it: the lock ends with this process.
    """
    lock_path = Path(warehouse) / ".locks" / f"{month}.lock"
    busy = f"month {month} is being built by another run (lock {lock_path}); try again later"
    with exclusive_lock(lock_path, busy):
        if clean:
            remove_month_leftovers(warehouse, month)
        yield


@contextmanager
def output_lock(out: Path, *others: Path) -> Iterator[None]:
    """Hold an exclusive lock on an output written with `others` beside it (a book and its
    manifest), so that two runs to one output cannot pair one's file with the other's: the
    lock file `.NAME.lock` stays beside it, empty once the run is over. Once it is held, the
    temporary files killed runs left beside `out` and `others` (`.NAME.XXXXXXXX.tmp`) go."""
    out = Path(out)
    lock_path = out.with_name(f".{out.name}.lock")
    with exclusive_lock(lock_path, f"{out} is being written by another run; try again later"):
        for path in (out, *others):
            for tmp in output_temp_files(Path(path)):
                tmp.unlink(missing_ok=True)
        yield


def output_temp_files(path: Path) -> list[Path]:
    """The temporary files of an output (`.NAME.XXXXXXXX.tmp` beside it) that runs writing it
    leave until they rename them in: a killed run's stay."""
    if not path.parent.is_dir():
        return []
    return [
        tmp
        for tmp in path.parent.glob(f".{glob_escape(path.name)}.*.tmp")
        if re.fullmatch(r"[0-9a-f]{8}", tmp.name[len(path.name) + 2 : -len(".tmp")])
    ]


def clean_month_if_free(warehouse: Path, month: str) -> bool:
    """Remove a month's dead leftovers if its lock is free; return whether it was free.

    A run that may not need the month's lock (it reuses the partition, or finds its book up to
    date) calls this so that what killed runs left does not stay for good.
    """
    try:
        with month_lock(warehouse, month):
            return True
    except ChesspipeError:
        return False
