"""Benchmark `chesspipe serve` against hostile clients: memory, and ordinary latency beside them.

The warehouse: the 2013-01 sample ingested with `--min-rating 1600`. Normal requests: positions
of the first 10 plies of the sample's games, `history=true` (as bench/serve.py). Hostile
requests, each one different (no cache absorbs them), in turn:

- `play` of the longest accepted line (`params.MAX_PLAY` plies of a random legal game);
- `play` over the cap (400 plies), and of 2,000 and 26,000 moves (10 KB and 130 KB URLs);
- numbers the server must refuse: `moves=²`, `ratings=١٦٠٠`, 5,000 digits, `since=2013-01ZZZ`.

Measured, each on a fresh `chesspipe serve` subprocess:

- memory: the server's resident memory after 5,000 normal requests, and after 5,000 hostile
  ones (goal: within 20%);
- latency: p50/p95 of 5,000 normal requests from 2 keep-alive clients, quiet and while 4
  hostile clients (threads of a separate process, so that their work does not slow the
  measuring clients) send hostile requests back to back, in turn on one server for `--rounds`
  rounds (goal: the median round's p95 within 2x of quiet).

    python bench/serve_hostile.py [--requests 5000] [--rounds 5] [--warehouse DIR]
        [--previous CHECKOUT]

`--previous` names a checkout of an earlier version to measure beside this one. The figures
are written to bench/RESULTS.md between this script's marks (`--out` another file).
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import chess

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import GAMES_2013  # noqa: E402
from bench.run_benchmarks import splice_between  # noqa: E402
from bench.serve import Server, explorer_paths  # noqa: E402

NORMAL_CLIENTS = 2
HOSTILE_CLIENTS = 4
#: The longest accepted `play` (pipelines/serve/params.py: MAX_PLAY); a fixed number here, so
#: that a previous version is sent the same requests.
LONGEST = 300
BEGIN = "<!-- begin: written by bench/serve_hostile.py; edit outside these marks -->"
END = "<!-- end: written by bench/serve_hostile.py -->"


def make_warehouse(folder: Path) -> None:
    from pipelines.warehouse.layout import partition_file

    if partition_file(folder, "2013-01").exists():
        return
    subprocess.run(
        [sys.executable, "-m", "pipelines", "ingest", "--month", "2013-01", "--warehouse",
         str(folder), "--min-rating", "1600", "--quiet", "--workers", "1", str(GAMES_2013)],
        check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
    )  # fmt: skip


def random_line(rng: random.Random, plies: int) -> str:
    """The UCI moves of a random legal line of `plies` plies from the start position."""
    while True:
        board = chess.Board()
        moves = []
        while len(moves) < plies and not board.is_game_over(claim_draw=False):
            move = rng.choice(list(board.legal_moves))
            moves.append(move.uci())
            board.push(move)
        if len(moves) == plies:
            return ",".join(moves)


def hostile_requests(count: int, seed: int) -> list[bytes]:
    """`count` different hostile requests (see the module's docstring), whole, raw."""
    rng = random.Random(seed)
    knights = ("g1f3", "g8f6", "f3g1", "f6g8")

    def shuffle(plies: int) -> str:
        return ",".join(knights[i % 4] for i in range(plies))

    targets = []
    for i in range(count):
        kind = i % 8
        if kind < 4:
            target = f"/lichess?history=true&play={random_line(rng, LONGEST)}"
        elif kind == 4:
            target = f"/lichess?play={shuffle(400 + 4 * (i // 8 % 100))}"
        elif kind == 5:
            target = f"/lichess?play={shuffle(2_000 + 4 * (i // 8 % 100))}"
        elif kind == 6:
            target = f"/lichess?play={shuffle(26_000 + 4 * (i // 8 % 100))}"
        else:
            bad = ("moves=%C2%B2", "ratings=%D9%A1%D9%A6%D9%A0%D9%A0", "since=2013-01ZZZ",
                   "moves=" + "9" * 5000)  # fmt: skip
            target = f"/lichess?{bad[i // 8 % 4]}&play=e2e4&n={i}"
        targets.append(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    return targets


def send(port: int, request: bytes) -> None:
    """One request on its own connection; whatever the answer (or a reset)."""
    try:
        with socket.create_connection(("127.0.0.1", port), 30) as sock:
            sock.sendall(request)
            while sock.recv(65536):
                pass
    except OSError:
        pass


def hostile_process(port: int, requests: list[bytes], stop: object) -> None:
    """Hostile clients (threads) sending their requests back to back until `stop` is set."""
    event = stop  # a multiprocessing.Event

    def client(mine: list[bytes]) -> None:
        i = 0
        while not event.is_set():  # type: ignore[attr-defined]
            send(port, mine[i % len(mine)])
            i += 1

    threads = [threading.Thread(target=client, args=(requests[k::HOSTILE_CLIENTS],))
               for k in range(HOSTILE_CLIENTS)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def normal_load(port: int, urls: list[str], requests: int) -> dict[str, float]:
    """p50, p95 of `requests` normal requests from keep-alive clients."""
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine = []
        for i in counter:
            start = time.perf_counter()
            conn.request("GET", urls[i % len(urls)])
            response = conn.getresponse()
            body = response.read()
            mine.append(time.perf_counter() - start)
            assert response.status == 200, body[:200]
            if response.getheader("connection") == "close":
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(NORMAL_CLIENTS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "per_second": round(len(latencies) / elapsed, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 2),
        "p95_ms": round(1000 * latencies[int(0.95 * len(latencies))], 2),
    }


def measure(checkout: Path, warehouse: Path, urls: list[str], hostile: list[bytes],
            requests: int, rounds: int) -> dict[str, object]:  # fmt: skip
    """Memory after normal and after hostile requests; latency quiet and under hostile load,
    `rounds` times each in turn (medians)."""
    found: dict[str, object] = {}
    server = Server(checkout, warehouse, [])
    try:
        found["rss_start_mb"] = server.rss_mb()
        normal_load(server.port, urls, requests)
        found["rss_normal_mb"] = server.rss_mb()
    finally:
        server.stop()
    server = Server(checkout, warehouse, [])
    try:
        start = time.perf_counter()
        for request in hostile[:requests]:
            send(server.port, request)
        found["hostile_serial_s"] = round(time.perf_counter() - start, 1)
        found["rss_hostile_mb"] = server.rss_mb()
    finally:
        server.stop()
    server = Server(checkout, warehouse, [])
    try:
        normal_load(server.port, urls, len(urls))  # the cache warmed, as in a long run
        quiet, loaded = [], []
        for _ in range(rounds):  # quiet and loaded in turn: the machine's own load hits both
            quiet.append(normal_load(server.port, urls, requests))
            stop = multiprocessing.Event()
            process = multiprocessing.Process(
                target=hostile_process, args=(server.port, hostile, stop)
            )
            process.start()
            time.sleep(1)
            try:
                loaded.append(normal_load(server.port, urls, requests))
            finally:
                stop.set()
                process.join(120)
        found["quiet"] = _medians(quiet)
        found["hostile_load"] = _medians(loaded)
        found["p95_ratios"] = [
            round(b["p95_ms"] / a["p95_ms"], 2) for a, b in zip(quiet, loaded, strict=True)
        ]
        found["rss_after_load_mb"] = server.rss_mb()
    finally:
        server.stop()
    return found


def _medians(phases: list[dict[str, float]]) -> dict[str, float]:
    """Each figure of several phases, its median."""
    return {name: round(statistics.median(p[name] for p in phases), 2) for name in phases[0]}


def report(runs: dict[str, dict[str, object]], requests: int, rounds: int) -> str:
    lines = [
        "## The server against hostile clients (bench/serve_hostile.py)",
        "",
        f"{requests:,} requests a phase; warehouse: the 2013-01 sample at `--min-rating 1600`; "
        f"normal: {NORMAL_CLIENTS} keep-alive clients, positions of the sample's first 10 plies "
        f"with `history=true`; hostile: {HOSTILE_CLIENTS} clients (a separate process) sending "
        f"distinct {LONGEST}-ply lines, lines over the cap, 10 KB and 130 KB URLs and bad "
        "numbers back to back. Memory on fresh servers; latency on one, quiet and under load "
        f"in turn, {rounds} rounds: medians, and each round's p95 ratio (loaded / quiet). "
        "The 2-core machine is shared.",
        "",
        "| version | RSS at start | after normal | after hostile | hostile / normal "
        "| quiet p50, p95 | under hostile load p50, p95 | p95 ratio: median (rounds) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        quiet, loaded = run["quiet"], run["hostile_load"]
        assert isinstance(quiet, dict) and isinstance(loaded, dict)
        normal, hostile = run["rss_normal_mb"], run["rss_hostile_mb"]
        assert isinstance(normal, int) and isinstance(hostile, int)
        ratios = run["p95_ratios"]
        assert isinstance(ratios, list)
        lines.append(
            f"| {name} | {run['rss_start_mb']} MB | {normal} MB | {hostile} MB | "
            f"{hostile / normal:.2f} | {quiet['p50_ms']} ms, {quiet['p95_ms']} ms | "
            f"{loaded['p50_ms']} ms, {loaded['p95_ms']} ms | "
            f"{statistics.median(ratios):.2f} ({', '.join(f'{r:.2f}' for r in ratios)}) |"
        )
    lines += [
        "",
        "Goals: hostile / normal memory at most 1.2; p95 ratio at most 2 (the median).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5, help="quiet and loaded phases in turn")
    parser.add_argument("--warehouse", type=Path)
    parser.add_argument("--previous", type=Path, help="a checkout of an earlier version")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS.md")
    args = parser.parse_args()
    folder = args.warehouse or Path(tempfile.mkdtemp(prefix="serve-hostile-"))
    make_warehouse(folder)
    urls = [f"/lichess?history=true&play={p}" for p in explorer_paths()]
    hostile = hostile_requests(args.requests, seed=1)
    runs: dict[str, dict[str, object]] = {}
    if args.previous:
        runs["before"] = measure(args.previous, folder, urls, hostile, args.requests, args.rounds)
    runs["this version"] = measure(ROOT, folder, urls, hostile, args.requests, args.rounds)
    print(json.dumps(runs, indent=2))
    existing = args.out.read_text() if args.out.exists() else ""
    args.out.write_text(
        splice_between(existing, report(runs, args.requests, args.rounds), BEGIN, END)
    )


if __name__ == "__main__":
    main()
