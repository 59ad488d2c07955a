"""The lineage sidecar of a training file: where each record comes from, in record order."""

from __future__ import annotations

import array
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.training_lineage import TRAINING_LINEAGE_SCHEMA

if TYPE_CHECKING:
    from pipelines.training.records import GameRecord

#: Lineage rows held before they are written as a Parquet row group.
LINEAGE_BATCH = 1 << 16


def _bitmap(flags: list[bool]) -> bytes:
    """Arrow's bit-packed booleans (least significant bit first)."""
    value = 0
    for index, flag in enumerate(flags):
        if flag:
            value |= 1 << index
    return value.to_bytes((len(flags) + 7) // 8 or 1, "little")


# Arrow arrays built from buffers: pa.array on Python lists would import pandas (0.25 s).


def _uint16(values: list[int | None]) -> Any:
    import pyarrow as pa

    validity = None
    if None in values:
        validity = pa.py_buffer(_bitmap([v is not None for v in values]))
    data = array.array("H", [v or 0 for v in values])
    return pa.Array.from_buffers(pa.uint16(), len(values), [validity, pa.py_buffer(data)])


def _bools(values: list[bool]) -> Any:
    import pyarrow as pa

    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(_bitmap(values))])


def _strings(values: list[str]) -> Any:
    import pyarrow as pa

    encoded = [value.encode() for value in values]
    offsets = array.array("i", [0, *itertools.accumulate(map(len, encoded))])
    data = b"".join(encoded)
    return pa.Array.from_buffers(
        pa.string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


class LineageWriter:
    """Lineage rows written to Parquet a batch at a time."""

    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        self._pq = pq
        self._writer = pq.ParquetWriter(path, TRAINING_LINEAGE_SCHEMA, compression="zstd")
        self._columns: dict[str, list[Any]] = {name: [] for name in TRAINING_LINEAGE_SCHEMA.names}

    def add(self, month: str, speed: str, band: int, gid: str, rows: list[GameRecord]) -> None:
        columns = self._columns
        count = len(rows)
        columns["month"] += [month] * count
        columns["speed"] += [speed] * count
        columns["rating_band"] += [band] * count
        columns["game_id"] += [gid] * count
        columns["ply"] += [row.ply for row in rows]
        columns["result_changed"] += [row.result_changed for row in rows]
        columns["first_covered_ply"] += [row.first_covered_ply for row in rows]
        if len(columns["ply"]) >= LINEAGE_BATCH:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        columns = self._columns
        if columns["ply"]:
            arrays = [
                _strings(columns["month"]),
                _strings(columns["speed"]),
                _uint16(columns["rating_band"]),
                _strings(columns["game_id"]),
                _uint16(columns["ply"]),
                _bools(columns["result_changed"]),
                _uint16(columns["first_covered_ply"]),
            ]
            table = pa.Table.from_arrays(arrays, schema=TRAINING_LINEAGE_SCHEMA)
            self._writer.write_table(table)
            self._columns = {name: [] for name in TRAINING_LINEAGE_SCHEMA.names}

    def close(self) -> None:
        self.flush()
        self._writer.close()


def iter_lineage(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the lineage rows of a sidecar, in record order."""
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches():
        yield from batch.to_pylist()
