"""Partitions as chesspipe wrote them before the statistics kept rating groups and sums."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

DIMENSIONS = ["key", "move", "speed", "rating_band"]
COUNTS = ["games", "wins", "draws", "losses"]


def write_legacy_partition(source: Path, target: Path) -> None:
    """Rewrite a partition without `rating_group` and `rating_sum`: one row per (key, move,
    speed, band), sorted, as earlier versions wrote it."""
    table = pq.read_table(source).drop_columns(["rating_group", "rating_sum"])
    summed = table.group_by(DIMENSIONS).aggregate([(c, "sum") for c in COUNTS])
    summed = summed.rename_columns([n.removesuffix("_sum") for n in summed.column_names])
    summed = summed.select(DIMENSIONS + COUNTS).sort_by([(d, "ascending") for d in DIMENSIONS])
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(summed, target)
