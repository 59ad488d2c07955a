"""A warehouse in object storage (s3://, ...), read where it is: no copy to local disk.

DuckDB reads the partitions through fsspec (`register_filesystem`) with the endpoint and
credentials the build uses (pipelines.sources.object_store). What a reader of a local warehouse
is promised holds here too:

- only published months are read: a partition with its manifest beside it;
- each partition is the object its manifest records: its size is compared before the read, and
  where a book is built its sha256 while it is read (a second stream, as a local build hashes
  its files);
- one version of each month: the objects' ETags are taken before the read and compared after
  it; a month published meanwhile makes the read run again (`stored_read`).

Compacted years and the evaluation store are read from local warehouses only.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple, TypeVar

from pipelines.errors import ChesspipeError
from pipelines.sources.object_store import filesystem, join, reporting, storage_options
from pipelines.warehouse.integrity import DamagedMonth
from pipelines.warehouse.layout import MONTH_RE

#: Where the months are under a warehouse URL (pipelines.warehouse.layout's names).
STATS = "move_stats"
PARTITION = "part-0.parquet"

#: Bytes read at a time when a partition is hashed.
HASH_BLOCK = 8 << 20


class StoredMonth(NamedTuple):
    """A published month in a store: its partition's URL, what its manifest records of it
    (sha256, size; None where not recorded), the plies it counted, and the object's ETag."""

    month: str
    url: str
    sha256: str | None
    size: int | None
    plies: int | None
    etag: str


def partition_url(warehouse: str, month: str) -> str:
    return join(warehouse, f"{STATS}/month={month}/{PARTITION}")


def manifest_url(warehouse: str, month: str) -> str:
    return join(warehouse, f"{STATS}/month={month}.json")


def listed_months(warehouse: str) -> tuple[set[str], set[str]]:
    """The names after `month=` of a store's partitions, and of its manifests (one listing)."""
    fs, path = filesystem(join(warehouse, STATS))
    with reporting(warehouse):
        partitions = fs.glob(f"{path}/month=*/{PARTITION}")
        manifests = fs.glob(f"{path}/month=*.json")
    have = {name.rsplit("/", 2)[-2][len("month=") :] for name in partitions}
    described = {name.rsplit("/", 1)[-1][len("month=") : -len(".json")] for name in manifests}
    return have, described


def stored_months(warehouse: str) -> list[str]:
    """The published months of a warehouse in a store: a partition with its manifest, in order."""
    have, described = listed_months(warehouse)
    return sorted(m for m in have & described if MONTH_RE.fullmatch(m))


def _object_now(fs: Any, path: str) -> tuple[str, int | None]:
    """Which object a store holds at a path now, and its size: (its ETag, or its size where
    the store gives none; bytes). FileNotFoundError if there is none."""
    info = fs.info(path, refresh=True)
    size = info.get("size")
    return str(info.get("ETag") or info.get("etag") or size), size


def _pin(warehouse: str, month: str) -> StoredMonth:
    url = partition_url(warehouse, month)
    fs, path = filesystem(url)
    manifest = manifest_url(warehouse, month)
    _, manifest_path = filesystem(manifest)
    what = f"month {month}"
    with reporting(warehouse):
        try:
            record = json.loads(fs.cat_file(manifest_path))
            etag, size = _object_now(fs, path)
        except FileNotFoundError:
            raise ChesspipeError(f"{what} is not in {warehouse} (being published?)") from None
        except ValueError:
            raise DamagedMonth(warehouse, what, manifest, "unreadable: not JSON") from None
    if not isinstance(record, dict):
        raise DamagedMonth(warehouse, what, manifest, "unreadable: not a JSON object")

    def number(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    sha256 = record.get("output_sha256")
    settings = record.get("settings")
    pinned = StoredMonth(
        month,
        url,
        sha256 if isinstance(sha256, str) else None,
        number(record.get("output_size")),
        number(settings.get("plies")) if isinstance(settings, dict) else None,
        etag,
    )
    if pinned.size is not None and size != pinned.size:
        why = f"{size:,} bytes, the manifest says {pinned.size:,}"
        raise DamagedMonth(warehouse, what, url, why)
    return pinned


def pin_months(warehouse: str, months: Iterable[str]) -> list[StoredMonth]:
    """Each month's partition as its manifest records it, and the object's ETag now."""
    return [_pin(warehouse, month) for month in months]


def unchanged(pinned: Sequence[StoredMonth]) -> bool:
    """Tell whether every pinned partition is still the object it was (its ETag)."""
    for month in pinned:
        fs, path = filesystem(month.url)
        with reporting(month.url):
            try:
                etag, _ = _object_now(fs, path)
            except FileNotFoundError:
                return False
        if etag != month.etag:
            return False
    return True


def object_sha256(url: str) -> str:
    """The sha256 of an object, read whole in blocks."""
    fs, path = filesystem(url)
    digest = hashlib.sha256()
    with reporting(url), fs.open(path, "rb", block_size=HASH_BLOCK, cache_type="none") as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def check_stored(warehouse: str, pinned: Sequence[StoredMonth], *, threads: int = 2) -> None:
    """Raise DamagedMonth for the first partition whose sha256 is not the recorded one."""
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        digests = list(pool.map(object_sha256, [month.url for month in pinned]))
    for month, found in zip(pinned, digests, strict=True):
        if month.sha256 is not None and found != month.sha256:
            why = "its sha256 is not the recorded one"
            raise DamagedMonth(warehouse, f"month {month.month}", month.url, why)


T = TypeVar("T")


def stored_read(
    warehouse: str,
    months: Sequence[str],
    read: Callable[[list[StoredMonth]], T],
    *,
    attempts: int = 5,
) -> T:
    """Return what `read` read from the pinned months while none was replaced: a month
    published meanwhile makes it read again (as pipelines.warehouse.sql.stable_read does)."""
    import duckdb

    for _ in range(attempts):
        pinned = pin_months(warehouse, months)
        try:
            found = read(pinned)
        except (duckdb.Error, DamagedMonth):
            if unchanged(pinned):
                raise
            time.sleep(0.01)
            continue
        if unchanged(pinned):
            return found
    raise ChesspipeError(
        f"the statistics in {warehouse} were replaced during each of {attempts} reads "
        "(a run is publishing them); try again"
    )


#: How s3fs serves DuckDB's reads of a partition: each read asked of the store as it comes, no
#: block kept per open file (s3fs's own default, 50 MiB read ahead per file, held 2.1-2.5 GB
#: over 48 months; 1 MiB blocks 514 MB over 16 months, no cache 348 MB: bench/RESULTS.md).
READ_OPTIONS = {"default_block_size": 1 << 20, "default_cache_type": "none"}


def register(con: Any, warehouse: str) -> None:
    """Let a DuckDB connection read the store's URLs through its fsspec filesystem, keeping
    no copy of what it read (DuckDB's external file cache is off: its blocks of remote files
    grew with the months read)."""
    from fsspec.core import url_to_fs

    protocol = warehouse.split("://", 1)[0]
    options = storage_options(protocol)
    if protocol in ("s3", "s3a"):
        options = {**READ_OPTIONS, **options}
    with reporting(warehouse):
        fs, _ = url_to_fs(warehouse, **options)
    con.register_filesystem(fs)
    con.execute("SET enable_external_file_cache = false")
