"""Lineage of whole-game training records: one Parquet row per record, in record order."""

from __future__ import annotations

import pyarrow as pa

TRAINING_LINEAGE_SCHEMA = pa.schema(
    [
        pa.field("month", pa.string(), nullable=False),
        pa.field("speed", pa.string(), nullable=False),
        pa.field("rating_band", pa.uint16(), nullable=False),
        pa.field("game_id", pa.string(), nullable=False),
        pa.field("ply", pa.uint16(), nullable=False),
        pa.field("result_changed", pa.bool_(), nullable=False),
        pa.field("first_covered_ply", pa.uint16(), nullable=True),
    ],
    metadata={
        b"description": b"Where each record of a training file made from whole games came from, "
        b"row i for record i. month: YYYY-MM; speed: Lichess speed; rating_band: the lower "
        b"rating floored to 100; game_id: the Lichess id from the Site tag (the tag's value when "
        b"it is not a lichess.org address, '' without one); ply: the record's game ply; "
        b"result_changed: the record's result differs from the game's (rescored by the "
        b"tablebases); first_covered_ply: ply of the game's first position the tables cover "
        b"(null when none is).",
    },
)


def lineage_path_for(output: str) -> str:
    """Return the lineage sidecar's path for a training file: OUT.lineage.parquet."""
    return f"{output}.lineage.parquet"
