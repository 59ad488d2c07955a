"""Polyglot book files as arrays of 16-byte entries (NumPy only, no python-chess)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

#: One book entry: key u64, move u16, weight u16, learn u32, all big-endian.
ENTRY_DTYPE = np.dtype([("key", ">u8"), ("move", ">u2"), ("weight", ">u2"), ("learn", ">u4")])
ENTRY_SIZE = ENTRY_DTYPE.itemsize


class BookFormatError(ValueError):
    """A file is not a valid Polyglot book."""


def read_entries(path: str | os.PathLike[str]) -> np.ndarray:
    """Return all entries of a book file, checking its size and key order."""
    size = os.path.getsize(path)
    if size % ENTRY_SIZE:
        raise BookFormatError(
            f"{path}: size {size} is not a multiple of {ENTRY_SIZE} bytes; not a Polyglot book"
        )
    entries = np.fromfile(path, dtype=ENTRY_DTYPE)
    keys = entries["key"]
    if len(keys) > 1:
        unsorted = np.flatnonzero(keys[1:] < keys[:-1])
        if len(unsorted):
            raise BookFormatError(
                f"{path}: keys are not sorted (entry {int(unsorted[0]) + 1}); not a Polyglot book"
            )
    return entries


def write_entries(path: str | os.PathLike[str], entries: np.ndarray) -> None:
    """Write entries to a book file atomically (the file appears whole or not at all)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(np.ascontiguousarray(entries, dtype=ENTRY_DTYPE).tobytes())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
