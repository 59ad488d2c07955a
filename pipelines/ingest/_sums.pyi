"""Types of the compiled summing of move statistics (`_sums.c`); `runs.py` is its Python face.

Each takes C-contiguous native-endian columns of one length and returns, as native-endian
bytes, each distinct (key, packed) in sort order (uint64, uint32), the least first-play rank
of its rows (uint64) and its summed wins, draws, losses and rating sum (uint64)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer

_Column: TypeAlias = Buffer | np.ndarray[Any, Any]
_Sums: TypeAlias = tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes]

def sum_plies(
    keys: _Column, packed: _Column, first_play: _Column, points: _Column, ratings: _Column, /
) -> _Sums: ...
def sum_counts(
    keys: _Column,
    packed: _Column,
    first_play: _Column,
    wins: _Column,
    draws: _Column,
    losses: _Column,
    rating_sum: _Column,
    /,
) -> _Sums: ...
