"""Files written whole or not at all, and their checksums."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from schemas.atomic_files import atomic_path


def file_sha256(path: Path) -> str:
    """Return the sha256 of a file's bytes, as hex."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write a JSON document so that it appears whole or not at all."""
    write_bytes_atomic(path, (json.dumps(payload, indent=2, sort_keys=True) + "\n").encode())


def write_bytes_atomic(path: Path, data: bytes, sync: bool = False) -> None:
    """Write a file so that it appears whole or not at all (flushed to disk first if `sync`)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
        if sync:
            handle.flush()
            os.fsync(handle.fileno())
