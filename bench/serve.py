"""Benchmark `chesspipe serve`: explorer and tablebase requests per second, latency.

Twelve months of statistics: the 2013-01 sample ingested with `--min-rating 1600` under twelve
month names (2013-01 .. 2013-12; identical partitions, so every request reads twelve files).
Explorer requests: positions of the first 10 plies of the sample's games (fen = start, play =
the moves), all speeds and ratings, `history=true`, from 8 concurrent clients with keep-alive
connections. Tablebase requests: random positions of the 3-4-piece tables (Fathom when
installed), 8 clients.

    python bench/serve.py [--requests 4000] [--warehouse DIR]

The server runs as a `chesspipe serve` subprocess; clients are threads here.
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

from pipelines.endgames.positions import random_position  # noqa: E402
from tests.conftest import GAMES_2013, SYZYGY_DIR  # noqa: E402
from tests.recount import read_text  # noqa: E402

CLIENTS = 8


def make_warehouse(folder: Path) -> None:
    for month in range(1, 13):
        name = f"2013-{month:02d}"
        if (folder / "move_stats" / f"month={name}").exists():
            continue
        subprocess.run(
            [sys.executable, "-m", "pipelines", "ingest", "--month", name, "--warehouse",
             str(folder), "--min-rating", "1600", "--quiet", "--workers", "1", str(GAMES_2013)],
            check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
        )  # fmt: skip


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--warehouse", type=Path)
    args = parser.parse_args()
    folder = args.warehouse or Path(tempfile.mkdtemp(prefix="serve-bench-"))
    make_warehouse(folder)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "pipelines", "serve", "--warehouse", str(folder), "--syzygy",
         str(SYZYGY_DIR), "--port", str(port)],
        cwd=ROOT, env={**os.environ},
    )  # fmt: skip
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        paths = explorer_paths()
        urls = [f"/lichess?history=true&play={p}" for p in paths]
        cold = load(port, urls, min(args.requests, len(urls)))
        warm = load(port, urls, args.requests)
        fens = tablebase_fens()
        tb_urls = [f"/standard?fen={urllib.parse.quote(f)}" for f in fens]
        tablebase = load(port, tb_urls, args.requests)
        print(json.dumps({
            "warehouse": str(folder), "distinct_explorer_requests": len(set(urls)),
            "explorer_first_pass": cold, "explorer_cached": warm, "tablebase": tablebase,
        }, indent=2))  # fmt: skip
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
