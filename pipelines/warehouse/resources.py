"""What DuckDB may use of the machine: memory before it spills, and where it spills.

One value for every DuckDB-backed command (`sql`, `book build`, `warehouse compact`, `serve`):
the memory limit defaults to half of what the machine (or its control group) has, not one
figure for every machine, and the spilled data go to a private folder made for the connection
in the temp folder given (the system's by default), removed with the connection.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.errors import ChesspipeError

if TYPE_CHECKING:
    import duckdb

#: A size as DuckDB reads one: a number and a unit (B, KB, MB, GB, TB, or KiB ... TiB).
SIZE_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)\s*", re.IGNORECASE)

#: The share of the machine's memory DuckDB may hold by default (DuckDB's own is 80%: a book
#: build beside a server or a month's ingest should leave them room).
DEFAULT_SHARE = 0.5

#: The least the default limit is (a small container still builds a book, by spilling).
LEAST_DEFAULT = 256 << 20


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its control group's limit
    where one is set (cgroup v2 `memory.max`), whichever is lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        return total
    return min(total, int(limit)) if limit.isdigit() else total


def default_memory_limit() -> int:
    """The default limit, in bytes: DEFAULT_SHARE of machine_memory(), LEAST_DEFAULT at least."""
    return max(LEAST_DEFAULT, int(machine_memory() * DEFAULT_SHARE))


def parse_size(text: str) -> int:
    """Bytes of a size written as DuckDB reads one ("4GB", "512 MiB"); ChesspipeError
    otherwise."""
    found = SIZE_RE.fullmatch(text)
    if found is None:
        raise ChesspipeError(f"not a size: {text!r} (a number and a unit: 512MB, 4GB, 2GiB)")
    number, unit = float(found.group(1)), found.group(2).upper()
    powers = {"B": 0, "K": 1, "M": 2, "G": 3, "T": 4}
    base = 1024 if "I" in unit else 1000
    return int(number * base ** powers[unit[0]])


@dataclass(frozen=True)
class QueryResources:
    """How much memory DuckDB may hold before it spills, and where it spills."""

    #: Bytes (None: default_memory_limit()).
    memory_limit: int | None = None
    #: The folder the connection's private spill folder is made in (None: the system's).
    temp_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.memory_limit is not None and self.memory_limit < 1 << 20:
            raise ChesspipeError(f"a memory limit of {self.memory_limit} bytes is under 1 MB")
        if self.temp_dir is not None and not Path(self.temp_dir).is_dir():
            raise ChesspipeError(f"temp folder {self.temp_dir}: no such folder")

    def memory(self) -> str:
        """The memory limit as DuckDB's setting takes it."""
        limit = default_memory_limit() if self.memory_limit is None else self.memory_limit
        return f"{limit // 1024}KiB"

    def spill_folder(self) -> Path:
        """A new folder for one connection's spilled data, that only this user may enter (in
        `temp_dir`, or the system's temp folder); DuckDB creates its `spill` folder in it
        when it first spills."""
        parent = tempfile.mkdtemp(prefix="chesspipe-duckdb-", dir=self.temp_dir)
        return Path(parent) / "spill"

    def connect(
        self, database: str = ":memory:", *, read_only: bool = False, **config: Any
    ) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection (to `database`, in memory by default; `config`: its other
        settings) held to the memory limit and spilling into a spill_folder() of its own,
        removed with the connection. DuckDB lets every query read its temp folder whatever its
        lock says (by default `.tmp` under the current folder), so no connection spills where
        another file may lie."""
        import duckdb

        spill = self.spill_folder()
        settings = {**config, "memory_limit": self.memory(), "temp_directory": str(spill)}
        con = duckdb.connect(database, read_only=read_only, config=settings)
        weakref.finalize(con, shutil.rmtree, spill.parent, ignore_errors=True)
        return con


#: The machine's defaults: half its memory, the system's temp folder.
DEFAULT_RESOURCES = QueryResources()
