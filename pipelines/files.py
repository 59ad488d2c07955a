"""Files written whole or not at all, their checksums, and the folders they go in."""

from __future__ import annotations

import errno
import hashlib
import json
from pathlib import Path

from schemas.atomic_files import atomic_path


def file_sha256(path: Path) -> str:
    """Return the sha256 of a file's bytes, as hex."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def json_bytes(payload: object) -> bytes:
    """A JSON document as chesspipe writes its manifests: indented, keys sorted, one newline."""
    return (json.dumps(payload, indent=2, sort_keys=True) + "\n").encode()


def write_json(path: Path, payload: object) -> None:
    """Write a JSON document to `path` as it is (a file of an OutputSet, renamed later)."""
    Path(path).write_bytes(json_bytes(payload))


def write_json_atomic(path: Path, payload: object) -> None:
    """Write a JSON document so that it appears whole or not at all."""
    write_bytes_atomic(path, json_bytes(payload))


def write_bytes_atomic(path: Path, data: bytes, sync: bool = False) -> None:
    """Write a file so that it appears whole or not at all (flushed to disk first if `sync`)."""
    with atomic_path(path, sync=sync) as tmp:
        tmp.write_bytes(data)


def make_folder(path: Path) -> Path:
    """Create the folder `path` and its parents unless it is one; refuse a file in its place."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", str(path)) from None
    return path
