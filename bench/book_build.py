"""Book building from month-sized move statistics: time and memory.

    python bench/book_build.py [--rows 8000000] [--seed 1]

Writes a generated month of about ROWS (key, move, speed, band) rows in the warehouse layout,
with a realistic shape (a few very popular positions, a long tail of rare ones, several speeds
and rating bands per move), then runs `chesspipe book build` on it through bench/measure.py and
prints wall time, CPU time and peak memory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from schemas.move_stats import MOVE_STATS_SCHEMA  # noqa: E402
from schemas.speed import Speed  # noqa: E402


def month_of_rows(rows: int, seed: int) -> pa.Table:
    """Return generated move statistics of about `rows` rows."""
    rng = np.random.default_rng(seed)
    positions = rows // 6
    keys = rng.integers(0, 2**64 - 1, positions, dtype=np.uint64, endpoint=True)
    # Zipf-like popularity: position i is played about 1e6 / (i + 1) times.
    popularity = np.maximum(1, (2_000_000 / (np.arange(positions) + 1.0)).astype(np.int64))
    moves_per_position = rng.integers(1, 6, positions)
    position = np.repeat(np.arange(positions), moves_per_position)
    move = rng.integers(0, 4096, len(position)).astype(np.uint16)
    per_move = np.maximum(1, popularity[position] // moves_per_position[position])
    # Split each move over speeds and bands: up to four rows a move.
    splits = rng.integers(1, 5, len(position))
    row_move = np.repeat(np.arange(len(position)), splits)
    row_move = row_move[:rows]
    games = np.maximum(1, per_move[row_move] // splits[row_move]).astype(np.uint64)
    wins = (games * rng.uniform(0.2, 0.6, len(row_move))).astype(np.uint64)
    draws = ((games - wins) * rng.uniform(0.0, 0.4, len(row_move))).astype(np.uint64)
    losses = games - wins - draws
    speed = np.array([speed.value for speed in Speed])[rng.integers(2, 6, len(row_move))]
    band = (rng.integers(22, 30, len(row_move)) * 100).astype(np.uint16)
    group = np.where(band >= 2500, 2500, np.where(band >= 2200, 2200, 2000)).astype(np.uint16)
    table = pa.table(
        {
            "key": keys[position[row_move]],
            "move": move[row_move],
            "speed": speed,
            "rating_band": band,
            "rating_group": group,
            "games": games,
            "wins": wins,
            "draws": draws,
            "losses": losses,
            "rating_sum": games * (band.astype(np.uint64) + 50),
            "first_play": rng.permutation(len(row_move)).astype(np.uint64) << np.uint64(12),
            "white_to_move": rng.integers(0, 2, len(row_move)).astype(bool),
        },
        schema=MOVE_STATS_SCHEMA,
    )
    # One row per (key, move, speed, band, group), as ingest writes them.
    return table.group_by(["key", "move", "speed", "rating_band", "rating_group"]).aggregate(
        [(name, "sum") for name in ("games", "wins", "draws", "losses", "rating_sum")]
        + [("first_play", "min"), ("white_to_move", "min")]
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=8_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    warehouse = HERE / "work" / "book-bench"
    shutil.rmtree(warehouse, ignore_errors=True)
    partition = warehouse / "move_stats" / "month=2000-01"
    partition.mkdir(parents=True)
    grouped = month_of_rows(args.rows, args.seed)
    names = {f"{c}_sum": c for c in ("games", "wins", "draws", "losses", "rating_sum")}
    names["first_play_min"] = "first_play"
    names["white_to_move_min"] = "white_to_move"
    grouped = grouped.rename_columns([names.get(n, n) for n in grouped.column_names])
    table = grouped.select([f.name for f in MOVE_STATS_SCHEMA]).cast(MOVE_STATS_SCHEMA)
    pq.write_table(table, partition / "part-0.parquet", compression="zstd")
    # A month counts once its manifest is beside it (ingest publishes it last).
    sha256 = hashlib.sha256((partition / "part-0.parquet").read_bytes()).hexdigest()
    manifest = {"month": "2000-01", "output_sha256": sha256, "rows": table.num_rows}
    (partition.parent / "month=2000-01.json").write_text(json.dumps(manifest))
    command = (
        f"{sys.executable} -m pipelines book build --warehouse '{warehouse}' --months 2000-01 "
        f"--out '{warehouse}/book.bin'"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, str(HERE / "measure.py"), command],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result = json.loads(out.stdout)
    if result["returncode"] != 0:
        print(result["stderr"], file=sys.stderr)
        return 1
    manifest = json.loads((warehouse / "book.json").read_text())
    summary = {
        "rows": table.num_rows,
        "wall": result["wall"],
        "cpu": result["cpu"],
        "peak_total_rss_mb": result["peak_total_rss_mb"],
        "entries": manifest["entries"],
        "positions": manifest["positions"],
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
