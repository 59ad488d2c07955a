"""Types of the compiled position scanner (`_scout.c`); `scan.py` is its Python face."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer

#: A buffer handed over as it is: arrow's, or a C-contiguous array of scan.py's records.
_Table: TypeAlias = Buffer | np.ndarray[Any, Any]

#: The sizes of the records of the tables scan() reads (scan.py's dtypes).
POSITION_SIZE: int
CONDITION_SIZE: int
SUB_FEN_SIZE: int
MATERIAL_SIZE: int
IMBALANCE_SIZE: int
MOVE_SIZE: int

def scan(
    data: _Table,
    offsets: _Table,
    wide: bool,
    validity: _Table | None,
    first: int,
    count: int,
    results: _Table,
    start_of: _Table,
    starts: _Table,
    conditions: _Table,
    sub_fens: _Table,
    materials: _Table,
    imbalances: _Table,
    moves: _Table,
    exacts: _Table,
    allowed: _Table,
    limit: int,
    /,
) -> tuple[bytes, bytes, int]: ...
