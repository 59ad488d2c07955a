"""Two Polyglot books as one, as PolyGlot's `merge-book` merges them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pipelines.errors import ChesspipeError
from schemas.polyglot import BookFormatError, read_entries, write_entries

#: Weights are 16 bits; PolyGlot adds them in 16 bits, so a sum past 65535 wraps around.
WEIGHT_MODULUS = 1 << 16


class MergedBook(NamedTuple):
    """What a merge wrote: entries in all, and how many were summed from both books."""

    out: Path
    entries: int
    positions: int
    summed: int


def merge_entries(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, int]:
    """Return the entries of two key-sorted books merged, and how many moves were in both.

    PolyGlot 2.0.4's `merge-book`, as the tests check byte for byte against it: entries in key
    order; for a position in both books, the first book's entries come first, in their order,
    each adding to its weight (in 16 bits) the weights of the same move in the second book
    (its entries not yet added to an earlier one), with the first book's learn value; then the
    second book's other entries of the position, in their order.
    """
    both = np.concatenate([first, second])
    source = np.concatenate([np.zeros(len(first), np.int8), np.ones(len(second), np.int8)])
    order = np.lexsort((source, both["key"]))  # stable: by key, the first book's entries first
    merged, source = both[order].copy(), source[order]
    shared = np.intersect1d(first["key"], second["key"], assume_unique=False)
    keep = np.ones(len(merged), dtype=bool)
    summed = 0
    starts = np.searchsorted(merged["key"], shared, side="left")
    ends = np.searchsorted(merged["key"], shared, side="right")
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        seconds = [i for i in range(start, end) if source[i] == 1]
        for i in range(start, end):
            if source[i] != 0:
                break
            move = merged["move"][i]
            matches = [j for j in seconds if keep[j] and merged["move"][j] == move]
            if matches:
                total = int(merged["weight"][i]) + sum(int(merged["weight"][j]) for j in matches)
                merged["weight"][i] = total % WEIGHT_MODULUS
                keep[matches] = False
                summed += len(matches)
    return merged[keep], summed


def merge_books(first: Path, second: Path, out: Path) -> MergedBook:
    """Write the merge of two books (PolyGlot `merge-book -in1 FIRST -in2 SECOND -out OUT`)."""
    if os.path.realpath(out) in (os.path.realpath(first), os.path.realpath(second)):
        raise ChesspipeError(f"the merged book {out} would replace one of the books merged")
    try:
        entries, summed = merge_entries(read_entries(first), read_entries(second))
    except BookFormatError as exc:
        raise ChesspipeError(str(exc)) from None
    except OSError as exc:
        raise ChesspipeError(f"cannot read {exc.filename}: {exc.strerror}") from None
    write_entries(out, entries)
    positions = int(len(np.unique(entries["key"])))
    return MergedBook(Path(out), len(entries), positions, summed)
