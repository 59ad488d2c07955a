"""What killed runs leave behind: staging folders and temporary files, found and removed.

A run writes into `ROOT/.staging/MONTH-PID-XXXXXXXX/` and into hidden `.NAME.*.tmp` files beside
its outputs, then renames its results into place. A run killed in between leaves them; the next
run that takes the month's lock removes them (no live run of the month can exist then), and
`chesspipe warehouse check` lists them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from pipelines.warehouse.layout import manifest_path, partition_file, stats_dir


def staging_root(root: Path) -> Path:
    """Return the folder of the runs' private staging folders under a warehouse or books root."""
    return Path(root) / ".staging"


def pid_of(name: str, month: str) -> int | None:
    """Return the pid in a staging name `MONTH-PID-XXXXXXXX` (or one ending a temp name)."""
    rest = name.split(f"{month}-", 1)[-1] if f"{month}-" in name else ""
    head = rest.split("-", 1)[0]
    return int(head) if head.isdigit() else None


def pid_alive(pid: int) -> bool:
    """Return whether a process with this id exists (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


def is_dead(pid: int | None) -> bool:
    """A leftover is a dead run's unless its pid names another live process.

    Called under the month's lock, where no live run of the month exists; the pid check spares
    worker processes a killed run may have left running for a moment.
    """
    return pid is None or pid == os.getpid() or not pid_alive(pid)


def month_staging(root: Path, month: str) -> list[Path]:
    """Return the staging folders of a month's runs under a root."""
    return sorted(staging_root(root).glob(f"{month}-*"))


def month_temp_files(warehouse: Path, month: str) -> list[Path]:
    """Return a month's temporary files in the warehouse: partition and manifest temps."""
    found = list(partition_file(warehouse, month).parent.glob(".*.tmp"))
    found += stats_dir(warehouse).glob(f".{manifest_path(warehouse, month).name}.*.tmp")
    return sorted(found)


def remove_leftovers(staging: Iterable[Path], temp_files: Iterable[Path], month: str) -> list[Path]:
    """Remove dead runs' staging folders and temp files of a month; return what was removed.

    Call only while holding the month's lock.
    """
    removed = []
    for folder in staging:
        if is_dead(pid_of(folder.name, month)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    for tmp in temp_files:
        if is_dead(pid_of(tmp.name, month)):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def remove_month_leftovers(warehouse: Path, month: str) -> list[Path]:
    """Remove what dead runs of a month left in the warehouse (call holding its lock)."""
    return remove_leftovers(
        month_staging(warehouse, month), month_temp_files(warehouse, month), month
    )
