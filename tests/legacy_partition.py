"""Partitions as chesspipe wrote them before the statistics kept rating groups and sums, or
first-play ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from pipelines.files import file_sha256
from pipelines.warehouse.layout import manifest_path

DIMENSIONS = ["key", "move", "speed", "rating_band"]
COUNTS = ["games", "wins", "draws", "losses"]


def write_legacy_partition(source: Path, target: Path) -> None:
    """Rewrite a partition without `rating_group` and `rating_sum`: one row per (key, move,
    speed, band), sorted, as earlier versions wrote it (no `first_play` either)."""
    table = pq.read_table(source)
    later = [c for c in ("rating_group", "rating_sum", "first_play") if c in table.column_names]
    table = table.drop_columns(later)
    summed = table.group_by(DIMENSIONS).aggregate([(c, "sum") for c in COUNTS])
    summed = summed.rename_columns([n.removesuffix("_sum") for n in summed.column_names])
    summed = summed.select(DIMENSIONS + COUNTS).sort_by([(d, "ascending") for d in DIMENSIONS])
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(summed, target)


def write_unranked_partition(source: Path, target: Path) -> None:
    """Rewrite a partition without `first_play`, as chesspipe wrote it before the ranks."""
    table = pq.read_table(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.drop_columns(["first_play"]), target)


def write_manifest_for(partition: Path) -> None:
    """Write the manifest of a partition written by hand (`.../move_stats/month=M/part-0.parquet`):
    a month is published when its manifest is there. Only what readers look at: the month, the
    output and its sha256."""
    month = partition.parent.name.removeprefix("month=")
    warehouse = partition.parent.parent.parent
    record = {
        "month": month,
        "output": str(partition.relative_to(warehouse)),
        "output_sha256": file_sha256(partition),
    }
    manifest_path(warehouse, month).write_text(json.dumps(record))


def write_sideless_partition(source: Path, target: Path) -> None:
    """Rewrite a partition without `white_to_move`, as chesspipe wrote it before the column."""
    table = pq.read_table(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.drop_columns(["white_to_move"]), target)
