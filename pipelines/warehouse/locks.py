"""Month locks: one run per month at a time, released when the run ends or dies."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def month_lock(warehouse: Path, month: str, clean: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on a month, failing at once if another run holds it.

    Once it is acquired, what dead runs of the month left in the warehouse (staging folders,
    temporary files) is removed, unless `clean` is false: no live run of the month exists then.
    Forked child processes do not hold it: the lock ends with this process.
    """
    import fcntl

    lock_path = Path(warehouse) / ".locks" / f"{month}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ChesspipeError(
                f"month {month} is being built by another run (lock {lock_path}); try again later"
            ) from None
        _HELD_LOCKS.add(handle.fileno())
        try:
            if clean:
                remove_month_leftovers(warehouse, month)
            yield
        finally:
            _HELD_LOCKS.discard(handle.fileno())
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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
