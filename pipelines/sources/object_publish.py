"""Publishing a set of files to object storage, each with the manifest that describes it.

An object store replaces one object at a time, whole, and never two together. So a month's
files go up in two phases:

1. every file is uploaded under a staging prefix of its root (`ROOT/.staging/MONTH-PID-XXXXXXXX/`)
   that no reader looks at: the slow part; a run killed there leaves every published object as
   it was;
2. then every old manifest is deleted, the last one given first, and item by item in the order
   given its objects are copied into place inside the store (no upload), then its manifest (an
   item may hold several files: an explorer month's four); the staged copies are deleted last.

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
    """A finished local file and its manifest, the URLs they go to, and the root holding them;
    `more`: other files the manifest describes (local file, URL), put in place before it."""

    file: Path
    url: str
    manifest: Path
    manifest_url: str
    root: str
    more: tuple[tuple[Path, str], ...] = ()

    def files(self) -> tuple[tuple[Path, str], ...]:
        """Every file the manifest describes, in the order they go into place."""
        return (*self.more, (self.file, self.url))


def staging_name(month: str) -> str:
    """Return a run's own staging folder name: MONTH-PID-XXXXXXXX."""
    return f"{month}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Staged:
    """A file and its manifest uploaded under a run's staging prefix, not yet in place:
    `copies` of the item's files (Described.files), in their order."""

    item: Described
    copies: tuple[str, ...]
    manifest_copy: str


def stage(items: Sequence[Described], *, month: str) -> list[Staged]:
    """Upload files and their manifests under a staging prefix no reader looks at (phase 1)."""
    name = staging_name(month)
    staged: list[Staged] = []
    for item in items:
        copies = []
        for file, url in item.files():
            copies.append(_staged_copy(item, name, url))
            upload(file, copies[-1])
        manifest_copy = _staged_copy(item, name, item.manifest_url)
        upload(item.manifest, manifest_copy)
        staged.append(Staged(item, tuple(copies), manifest_copy))
    return staged


def _staged_copy(item: Described, name: str, url: str) -> str:
    """Where a file of an item goes under the run's staging prefix: its path under the root,
    so that files of one name in several folders never meet."""
    return join(join(item.root, f".staging/{name}"), url.removeprefix(item.root.rstrip("/") + "/"))


def put_in_place(staged: Sequence[Staged]) -> None:
    """Copy staged pairs into place, every old manifest deleted first, the last one given
    first (phase 2); then delete the staged copies."""
    for pair in reversed(staged):  # the set's record first: no manifest beside a mixed set
        remove(pair.item.manifest_url)
    for pair in staged:
        for copied, (_, url) in zip(pair.copies, pair.item.files(), strict=True):
            copy(copied, url)
        copy(pair.manifest_copy, pair.item.manifest_url)
    for pair in staged:
        for copied in pair.copies:
            remove(copied)
        remove(pair.manifest_copy)


def remove_stale(root: str, month: str) -> list[str]:
    """Delete the staging folders runs of a month left under a root; return their URLs.

    Call holding the month's lock: no run of the month on this machine is publishing then.
    """
    return remove_tree(join(root, ".staging"), f"{month}-*")
