"""Benchmark the explorer's games and players: `/lichess` with topGames/recentGames, `/player`
for a player of 5,000 games, `/masters`; and what `chesspipe explorer index` costs per kept
game beside `chesspipe ingest`.

Twelve months as in bench/serve.py (the 2013-01 sample's move statistics repeated over 17
rating bands, 2013-01 .. 2013-12), and the explorer's data of the same sample (`explorer
index --min-rating 1600`) copied under the twelve months, the White of each month's first 420
games renamed `bench-player` (5,040 games). Requests as bench/serve.py's: the positions of the
first 10 plies of the sample's games, 8 keep-alive clients, answer cache off (`--cache 0`) so
that every request is worked out.

    python bench/explorer_games.py [--requests 2000] [--warehouse DIR] [--previous CHECKOUT]

`--previous` names a checkout of an earlier version (e.g. `git archive` of a commit) whose
`/masters` is measured beside this version's in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import GAMES_2013  # noqa: E402
from bench.serve import Server, explorer_paths, load, make_warehouse  # noqa: E402

PLAYER = "bench-player"
RENAMED = 420


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def index_months(folder: Path) -> dict[str, object]:
    """The explorer's data for the twelve months, and the cost of indexing the sample."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from pipelines.explorer.layout import explorer_manifest_path, games_file, positions_file

    sample = folder / "explorer-sample"
    common = ["--month", "2013-01", "--min-rating", "1600", "--quiet", str(GAMES_2013)]
    ingest_s = timed(
        [sys.executable, "-m", "pipelines", "ingest", "--warehouse", str(sample / "ingest"),
         "--workers", "1", *common]
    )  # fmt: skip
    index_s = timed(
        [sys.executable, "-m", "pipelines", "explorer", "index", "--warehouse", str(sample / "x"),
         *common]
    )  # fmt: skip
    manifest = json.loads(explorer_manifest_path(sample / "x", "2013-01").read_text())
    kept = manifest["games_kept"]
    games = pq.read_table(games_file(sample / "x", "2013-01"))
    renamed = pc.if_else(pa.array([i < RENAMED for i in range(len(games))]), PLAYER, games["white"])
    games = games.set_column(games.schema.get_field_index("white"), "white", renamed)
    for month in range(1, 13):
        name = f"2013-{month:02d}"
        games_file(folder, name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(games, games_file(folder, name), compression="zstd")
        shutil.copy(positions_file(sample / "x", "2013-01"), positions_file(folder, name))
        explorer_manifest_path(folder, name).write_text(json.dumps({**manifest, "month": name}))
    return {
        "games_kept": kept,
        "positions": manifest["positions"],
        "ingest_s": round(ingest_s, 2),
        "explorer_index_s": round(index_s, 2),
        "ingest_ms_per_game": round(1000 * ingest_s / kept, 3),
        "explorer_index_ms_per_game": round(1000 * index_s / kept, 3),
        "explorer_bytes_per_game": round(
            (manifest["games_bytes"] + manifest["positions_bytes"]) / kept
        ),
    }


def masters_only(
    checkout: Path, folder: Path, extra: list[str], urls: list[str], requests: int
) -> dict[str, object]:
    """`/masters` of a server from another checkout: its start, load and memory."""
    server = Server(checkout, folder, extra)
    try:
        found = {"start_s": server.start_s, "masters": load(server.port, urls, requests)}
        return {**found, "rss_mb": server.rss_mb()}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warehouse", type=Path)
    parser.add_argument("--previous", type=Path, help="a checkout of an earlier version")
    args = parser.parse_args()
    folder = args.warehouse or Path(tempfile.mkdtemp(prefix="explorer-bench-"))
    make_warehouse(folder)
    cost = index_months(folder)
    paths = explorer_paths(args.requests)
    lichess = [f"/lichess?play={p}&history=true" for p in paths]
    player = [f"/player?player={PLAYER}&color=white&play={p}" for p in paths]
    masters = [f"/masters?play={p}" for p in paths]
    extra = ["--cache", "0", "--masters", str(folder)]
    found: dict[str, object] = {}
    if args.previous:
        found["previous"] = masters_only(args.previous, folder, extra, masters, args.requests)
    server = Server(ROOT, folder, extra)
    try:
        found |= {
            "index": cost,
            "start_s": server.start_s,
            "lichess_with_games": load(server.port, lichess, args.requests),
            "player_5040_games": load(server.port, player, args.requests),
            "masters": load(server.port, masters, args.requests),
            "rss_mb": server.rss_mb(),
        }
    finally:
        server.stop()
    print(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
