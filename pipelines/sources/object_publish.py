"""Publishing a set of files to object storage, each with the manifest that describes it.

An object store replaces one object at a time, whole, and never two together. So a month's
files go up in two phases:

1. every file is uploaded under a staging prefix of its root (`ROOT/.staging/MONTH-PID-XXXXXXXX/`)
   that no reader looks at: the slow part; a run killed there leaves every published object as
   it was;
2. then every old manifest is deleted, the last one given first, and pair by pair in the order
   given the object is copied into place inside the store (no upload) and its manifest beside it;
   the staged copies are deleted last.

The last manifest given is the set's record (a month's run manifest records the partition and
the book by sha256): while it is there, every pair of the set is the one it was published with,
the previous set or the new one, never a mix. Whenever a run is killed, a reader that finds any
manifest finds the object it describes; an object without its manifest is the previous or the
new one (as while a month is first published). What a killed run staged is removed by the next
run of the month (`remove_stale`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipelines.sources.object_store import copy, join, remove, remove_tree, upload


@dataclass(frozen=True)
class Described:
    """A finished local file and its manifest, the URLs they go to, and the root holding them."""

    file: Path
    url: str
    manifest: Path
    manifest_url: str
    root: str


def staging_name(month: str) -> str:
    """Return a run's own staging folder name: MONTH-PID-XXXXXXXX."""
    return f"{month}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Staged:
    """A file and its manifest uploaded under a run's staging prefix, not yet in place."""

    item: Described
    file_copy: str
    manifest_copy: str


def stage(items: Sequence[Described], *, month: str) -> list[Staged]:
    """Upload files and their manifests under a staging prefix no reader looks at (phase 1)."""
    name = staging_name(month)
    staged: list[Staged] = []
    for item in items:
        prefix = join(item.root, f".staging/{name}")
        file_copy = join(prefix, item.url.rsplit("/", 1)[-1])
        manifest_copy = join(prefix, item.manifest_url.rsplit("/", 1)[-1])
        upload(item.file, file_copy)
        upload(item.manifest, manifest_copy)
        staged.append(Staged(item, file_copy, manifest_copy))
    return staged


def put_in_place(staged: Sequence[Staged]) -> None:
    """Copy staged pairs into place, every old manifest deleted first, the last one given
    first (phase 2); then delete the staged copies."""
    for pair in reversed(staged):  # the set's record first: no manifest beside a mixed set
        remove(pair.item.manifest_url)
    for pair in staged:
        copy(pair.file_copy, pair.item.url)
        copy(pair.manifest_copy, pair.item.manifest_url)
    for pair in staged:
        remove(pair.file_copy)
        remove(pair.manifest_copy)


def remove_stale(root: str, month: str) -> list[str]:
    """Delete the staging folders runs of a month left under a root; return their URLs.

    Call holding the month's lock: no run of the month on this machine is publishing then.
    """
    return remove_tree(join(root, ".staging"), f"{month}-*")
