"""Publishing files to object storage, each with the manifest that describes it.

An object store replaces one object at a time, whole, and never two together. So a month's
files go up in two phases:

1. every file is uploaded under a staging prefix of its root (`ROOT/.staging/MONTH-PID-XXXXXXXX/`)
   that no reader looks at: the slow part; a run killed there leaves every published object as
   it was;
2. then, pair by pair in the order given, the old manifest is deleted, the object is copied into
   place inside the store (no upload), and its manifest is copied beside it; the staged copies
   are deleted last.

Whenever a run is killed, a reader that finds a manifest finds the object it describes: the
previous pair, the new object without a manifest (as while a month is first published), or the
new pair. What a killed run staged is removed by the next run of the month (`remove_stale`).
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


def publish(items: Sequence[Described], *, month: str) -> None:
    """Publish files and their manifests in order, so no manifest is left beside another object."""
    name = staging_name(month)
    staged: list[tuple[Described, str, str]] = []
    for item in items:
        prefix = join(item.root, f".staging/{name}")
        file_copy = join(prefix, item.url.rsplit("/", 1)[-1])
        manifest_copy = join(prefix, item.manifest_url.rsplit("/", 1)[-1])
        upload(item.file, file_copy)
        upload(item.manifest, manifest_copy)
        staged.append((item, file_copy, manifest_copy))
    for item, file_copy, manifest_copy in staged:
        remove(item.manifest_url)
        copy(file_copy, item.url)
        copy(manifest_copy, item.manifest_url)
    for _, file_copy, manifest_copy in staged:
        remove(file_copy)
        remove(manifest_copy)


def remove_stale(root: str, month: str) -> list[str]:
    """Delete the staging folders runs of a month left under a root; return their URLs.

    Call holding the month's lock: no run of the month on this machine is publishing then.
    """
    return remove_tree(join(root, ".staging"), f"{month}-*")
