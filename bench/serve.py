"""Benchmark `chesspipe serve`: explorer and tablebase requests per second, latency.

Twelve months of statistics the size of a real month at min rating 1600 (about 1.3 M rows each),
made from the 2013-01 sample: the sample ingested with `--min-rating 1600` (76,538 rows), each row
repeated under 17 rating bands (its own and 16 more, 100 apart, with the rating group and rating
sum moved alike) so that a month holds 1.3 M rows and a position the rows of many bands, written
under the names 2013-01 .. 2013-12.
Explorer requests: positions of the first 10 plies of the sample's games (fen = start, play =
the moves), all speeds and ratings, `history=true`, from 8 concurrent clients with keep-alive
connections. Tablebase requests: random positions of the 3-4-piece tables (Fathom when
installed), 8 clients.

    python bench/serve.py [--requests 3000] [--warehouse DIR] [--previous CHECKOUT]

Each configuration is a `chesspipe serve` subprocess started in turn (clients are threads
here): this version without and with the answer cache (`--cache 0`, default), in one and in two
processes (`--workers 2`); `--previous` names a checkout of an earlier version (e.g. `git
archive` of a commit) to measure beside them in the same run. The tablebase is never cached:
every request is a different position.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

import chess
import chess.pgn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import GAMES_2013, SYZYGY_DIR, read_text  # noqa: E402
from pipelines.endgames.positions import random_position  # noqa: E402

CLIENTS = 8


BANDS = 17  # copies of each sample row: a month of 1.3 M rows


def make_warehouse(folder: Path) -> None:
    """Twelve months of 1.3 M rows each from the 2013-01 sample (see the module's docstring)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.warehouse.layout import partition_file
    from schemas.dimensions import rating_group
    from schemas.move_stats import MOVE_STATS_SCHEMA

    months = [f"2013-{month:02d}" for month in range(1, 13)]
    if all(partition_file(folder, m).exists() for m in months):
        return
    sample = folder / "sample"
    if not partition_file(sample, "2013-01").exists():
        subprocess.run(
            [sys.executable, "-m", "pipelines", "ingest", "--month", "2013-01", "--warehouse",
             str(sample), "--min-rating", "1600", "--quiet", "--workers", "1", str(GAMES_2013)],
            check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    table = pq.read_table(partition_file(sample, "2013-01"))
    parts = []
    for shift in range(BANDS):
        games = table["games"].to_numpy()
        rating_sum = table["rating_sum"].to_numpy() + np.uint64(100 * shift) * games
        groups = [rating_group(int(r // g)) for r, g in zip(rating_sum, games, strict=True)]
        parts.append(
            table.set_column(3, "rating_band", pa.array(table["rating_band"].to_numpy() + 100 * shift,
                                                        pa.uint16()))
            .set_column(4, "rating_group", pa.array(groups, pa.uint16()))
            .set_column(9, "rating_sum", pa.array(rating_sum, pa.uint64()))
        )  # fmt: skip
    month = (
        pa.concat_tables(parts)
        .sort_by(
            [
                (name, "ascending")
                for name in ("key", "move", "speed", "rating_band", "rating_group")
            ]
        )
        .cast(MOVE_STATS_SCHEMA)
    )
    for name in months:
        target = partition_file(folder, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(month, target, compression="zstd", row_group_size=1_000_000)


def explorer_paths(limit: int = 3000) -> list[str]:
    stream = io.StringIO(read_text(GAMES_2013))
    paths: list[str] = []
    while len(paths) < limit and (game := chess.pgn.read_game(stream)) is not None:
        moves = [m.uci() for m in list(game.mainline_moves())[:10]]
        for n in range(len(moves) + 1):
            paths.append(",".join(moves[:n]))
    return paths


def tablebase_fens(count: int = 500) -> list[str]:
    """Random legal positions of the tables' materials (as `endgames sample` draws them)."""
    rng = random.Random(1)
    materials = sorted(p.stem for p in SYZYGY_DIR.glob("*.rtbw"))
    fens = []
    while len(fens) < count:
        board = random_position(rng.choice(materials), rng)
        if not board.is_checkmate() and not board.is_stalemate():
            fens.append(board.fen())
    return fens


def load(port: int, urls: list[str], requests: int) -> dict[str, float]:
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        mine = []
        for i in counter:
            start = time.perf_counter()
            conn.request("GET", urls[i % len(urls)])
            response = conn.getresponse()
            body = response.read()
            mine.append(time.perf_counter() - start)
            assert response.status == 200, body[:200]
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "requests": len(latencies),
        "per_second": round(len(latencies) / elapsed, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 2),
        "p95_ms": round(1000 * latencies[int(0.95 * len(latencies))], 2),
    }


class Server:
    """A `chesspipe serve` subprocess from a checkout; its start-up time and memory."""

    def __init__(self, checkout: Path, warehouse: Path, extra: list[str]) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        start = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pipelines", "serve", "--warehouse", str(warehouse),
             "--syzygy", str(SYZYGY_DIR), "--port", str(self.port), *extra],
            cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
        )  # fmt: skip
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                break
            except OSError:
                if self.process.poll() is not None:
                    raise SystemExit(f"server from {checkout} exited") from None
                time.sleep(0.1)
        self.start_s = round(time.perf_counter() - start, 1)

    def rss_mb(self) -> int:
        """Resident memory of the server and its worker processes."""
        pids = [self.process.pid]
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        pids += [int(p) for p in children.read_text().split()]
        total = 0
        for pid in pids:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        return total // 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def measure(
    checkout: Path,
    warehouse: Path,
    extra: list[str],
    urls: list[str],
    tb_urls: list[str],
    requests: int,
) -> dict[str, object]:
    """Explorer first pass (and a repeat), tablebase: one server from a checkout."""
    server = Server(checkout, warehouse, extra)
    try:
        found: dict[str, object] = {"start_s": server.start_s}
        found["explorer_first_pass"] = load(server.port, urls, min(requests, len(urls)))
        found["explorer_repeat"] = load(server.port, urls, requests)
        found["tablebase"] = load(server.port, tb_urls, requests)
        found["rss_mb"] = server.rss_mb()
        return found
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--warehouse", type=Path)
    parser.add_argument("--previous", type=Path, help="a checkout of an earlier version")
    args = parser.parse_args()
    folder = args.warehouse or Path(tempfile.mkdtemp(prefix="serve-bench-"))
    make_warehouse(folder)
    paths = explorer_paths()
    urls = [f"/lichess?history=true&play={p}" for p in paths]
    tb_urls = [f"/standard?fen={urllib.parse.quote(f)}" for f in tablebase_fens(args.requests)]
    runs: dict[str, object] = {
        "warehouse": str(folder), "explorer_requests": len(urls),
        "distinct_explorer_requests": len(set(urls)), "tablebase_positions": len(set(tb_urls)),
    }  # fmt: skip
    if args.previous:
        runs["previous"] = measure(args.previous, folder, [], urls, tb_urls, args.requests)
    configurations = {
        "index": ["--cache", "0"],
        "index_cache": [],
        "index_2_workers": ["--cache", "0", "--workers", "2"],
        "index_cache_2_workers": ["--workers", "2"],
    }
    for name, extra in configurations.items():
        runs[name] = measure(ROOT, folder, extra, urls, tb_urls, args.requests)
    print(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
