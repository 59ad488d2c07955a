"""The explorer's game records file: what an answer shows of a game, found by its place.

`records.bin` beside a month's lookup file: the month's games in order (seq), in a block file
(pipelines.explorer.blocks) of RECORD_BLOCK games a block. A request shows at most a few
dozen games: a read here takes a few microseconds once its block is cached.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines import arrow_arrays as arrays
from pipelines.explorer.blocks import BlockReader, BlockWriter, DamagedBlocks

RECORDS_FILE = "records.bin"
#: Games a block holds: a read decompresses one block (about 10 KB of records).
RECORD_BLOCK = 256
#: The columns kept, as the month's games.parquet has them (speed as its index there).
COLUMNS = ("seq", "id", "white", "black", "white_elo", "black_elo", "result", "speed", "rated")


class Record(NamedTuple):
    """What an answer shows of a game (ratings None when missing)."""

    id: str
    white: str
    black: str
    white_elo: int | None
    black_elo: int | None
    result: int  # White's points: 2, 1 or 0
    speed: int  # index in the speed names (255: none)
    rated: bool


def write_records(games: Path, out: Path, speeds: tuple[str, ...]) -> None:
    """Write the records file of a month's games.parquet (speed names numbered by `speeds`)."""
    number = {name: i for i, name in enumerate(speeds)}
    writer = BlockWriter(out, "seq", block_rows=RECORD_BLOCK)
    try:
        source = pq.ParquetFile(games)
        for batch in source.iter_batches(batch_size=8 * RECORD_BLOCK, columns=list(COLUMNS)):
            speed = [number.get(s, 255) for s in batch.column("speed").to_pylist()]
            columns = {name: batch.column(name) for name in COLUMNS}
            columns["seq"] = batch.column("seq").cast(pa.uint64())
            columns["speed"] = arrays.integers(np.array(speed, dtype=np.uint8))
            writer.write([pa.RecordBatch.from_pydict(columns)])
    finally:
        writer.close()


class RecordsReader:
    """Reads games' records from a records file by their place (seq)."""

    def __init__(self, path: Path) -> None:
        self.blocks = BlockReader(path, "seq")
        self.count = self.blocks.row_count

    def close(self) -> None:
        self.blocks.close()

    def get(self, seq: int) -> Record:
        """The record of the game at place `seq`."""
        found = self.blocks.row(seq)
        if found is None:
            raise DamagedBlocks(f"{self.blocks.path} has no game {seq}")
        batch, row = found
        return Record(*(batch.column(name)[row].as_py() for name in Record._fields))
