"""Whether the statistics a reader is about to read are the files their manifests record.

A month's manifest records its partition's sha256, size and modification time. Every reader
compares the size and the time on open (a stat: microseconds a month); where a book is built,
the whole file's sha256 too. A file that differs fails the read in one line naming the month
and `warehouse check`, never a silent different answer: bytes flipped in place, a file of
another schema put there, a truncated copy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_json_atomic
from pipelines.warehouse.layout import manifest_path, partition_file


class DamagedMonth(ChesspipeError):
    """A month's partition that is not the file its manifest records."""

    def __init__(self, warehouse: Path | str, what: str, path: Path | str, why: str) -> None:
        fix = (
            f"build it again with `chesspipe build-month --force` into {warehouse}"
            if "://" in str(warehouse)
            else f"run `chesspipe warehouse check {warehouse}`"
        )
        super().__init__(f"{what}: {path} is not the file its manifest records ({why}); {fix}")
        self.what = what
        self.path = path
        self.why = why


class Recorded(NamedTuple):
    """What a month's manifest records of its partition (None: not recorded there)."""

    sha256: str | None
    size: int | None
    mtime_ns: int | None


def recorded_output(warehouse: Path, month: str) -> Recorded:
    """What the month's manifest records of its partition; DamagedMonth if the manifest is
    not readable as one."""
    path = manifest_path(warehouse, month)
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not JSON"
        raise DamagedMonth(warehouse, f"month {month}", path, f"unreadable: {why}") from None
    if not isinstance(data, dict):
        raise DamagedMonth(warehouse, f"month {month}", path, "unreadable: not a JSON object")

    def number(name: str) -> int | None:
        value = data.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    sha256 = data.get("output_sha256")
    return Recorded(
        sha256 if isinstance(sha256, str) else None,
        number("output_size"),
        number("output_mtime_ns"),
    )


def recorded_sha256(warehouse: Path, month: str) -> str | None:
    """Return the sha256 a month's manifest records for its partition (None: no readable one)."""
    try:
        return recorded_output(warehouse, month).sha256
    except DamagedMonth:
        return None


def check_opened(warehouse: Path, months: Iterable[str]) -> None:
    """Raise DamagedMonth for the first month whose partition's size or modification time is
    not the one its manifest records (months whose manifest predates them are taken as they
    are: `warehouse check` compares their sha256)."""
    for month in months:
        recorded = recorded_output(warehouse, month)
        path = partition_file(warehouse, month)
        what = f"month {month}"
        try:
            found = os.stat(path)
        except OSError as exc:
            raise DamagedMonth(warehouse, what, path, exc.strerror or "unreadable") from None
        if recorded.size is not None and found.st_size != recorded.size:
            why = f"{found.st_size:,} bytes, the manifest says {recorded.size:,}"
            raise DamagedMonth(warehouse, what, path, why)
        if recorded.mtime_ns is not None and found.st_mtime_ns != recorded.mtime_ns:
            why = "modified since it was published, or copied without its times"
            raise DamagedMonth(warehouse, what, path, why)


class Expected(NamedTuple):
    """A file a reader is about to read, and the sha256 its manifest records (None: none)."""

    what: str
    path: Path
    sha256: str | None


def month_expected(warehouse: Path, month: str) -> Expected:
    """A month's partition and the sha256 its manifest records."""
    recorded = recorded_output(warehouse, month)
    return Expected(f"month {month}", partition_file(warehouse, month), recorded.sha256)


def check_contents(warehouse: Path, expected: Iterable[Expected], *, threads: int = 2) -> None:
    """Raise DamagedMonth for the first file (in order) whose sha256 is not the one its
    manifest records; the files are hashed on `threads` threads."""
    chosen = list(expected)

    def digest(path: Path) -> str | OSError:
        try:
            return file_sha256(path)
        except OSError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        digests = list(pool.map(digest, [item.path for item in chosen]))
    for item, found in zip(chosen, digests, strict=True):
        if isinstance(found, OSError):
            raise DamagedMonth(warehouse, item.what, item.path, found.strerror or "unreadable")
        if item.sha256 is not None and found != item.sha256:
            raise DamagedMonth(
                warehouse, item.what, item.path, "its sha256 is not the recorded one"
            )


def record_times(warehouse: Path, month: str) -> None:
    """Record the month's partition's present size and modification time in its manifest (a
    copy that kept the content and not the times: call once its sha256 is checked, holding
    the month's lock)."""
    path = manifest_path(warehouse, month)
    data = json.loads(path.read_bytes())
    found = os.stat(partition_file(warehouse, month))
    data["output_size"], data["output_mtime_ns"] = found.st_size, found.st_mtime_ns
    write_json_atomic(path, data)
