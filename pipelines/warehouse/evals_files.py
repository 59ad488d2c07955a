"""Where the evaluation store lives in a warehouse: its part files, their names, its lock.

`DIR/evals/part-STAMP-PID-XXXXXXXX.parquet`: each part holds one row per position
(schemas.evals.evals_schema()) sorted by key. Every batch of an analysis and every import adds a
part (written beside its place and renamed in, so a part is whole or absent); a compaction
merges the parts into one, the deepest evaluation of each position winning, and removes the
parts it merged only once the merged file is in place. Readers take every part and rank each
position's rows (schemas.evals.EVALS_ORDER), so a part merged twice counts once.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from pipelines.warehouse.locks import exclusive_lock

#: A part's name; `.part-....parquet.XXXXXXXX.tmp` beside it is one being written.
PART_RE = re.compile(r"part-[0-9]{8}T[0-9]{6}-[0-9]+-[0-9a-f]{8}\.parquet")


def evals_dir(warehouse: Path) -> Path:
    """Return the folder of the evaluation store."""
    return Path(warehouse) / "evals"


def eval_parts(warehouse: Path) -> list[Path]:
    """Return the store's part files, oldest first (their names start with when they were
    made)."""
    root = evals_dir(warehouse)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if PART_RE.fullmatch(p.name) and p.is_file())


def new_part_path(warehouse: Path) -> Path:
    """Return the name of a new part: when, which process, and a random tail."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return evals_dir(warehouse) / f"part-{stamp}-{os.getpid()}-{uuid.uuid4().hex[:8]}.parquet"


@contextmanager
def evals_lock(warehouse: Path) -> Iterator[None]:
    """Hold the store's lock: one run writes evaluations at a time (analyse, import, a
    compaction); readers need none."""
    lock_path = Path(warehouse) / ".locks" / "evals.lock"
    busy = (
        f"the evaluations of {warehouse} are being written by another run "
        f"(lock {lock_path}); try again later"
    )
    with exclusive_lock(lock_path, busy):
        yield
