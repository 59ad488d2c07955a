"""The explorer as a month grows: a ladder of 1x, 4x, 16x (and 64x) a ~100k-game month, every
game kept, measured for this version and, with `--previous`, an earlier one in the same run.

Each step's month is the 2013-01 sample's real games repeated with new game ids and new
player names (so neither games nor players collapse), the White of 5,000 games renamed
`bench-player`; one `chesspipe explorer index` (every game kept) makes the warehouse. Per
step: the index's wall time and peak memory, the explorer's bytes on disk per game, and a
`chesspipe serve --cache 0` of it: time until it answers, its memory after the load, and the
p50/p95 of 8 keep-alive clients for the start position, 10-ply and 40-ply lines of the
sample's games, each with and without since/until/speeds/ratings, and `/player` for the
5,000-game player.

    python bench/explorer_scale.py [--steps 1,4,16] [--requests 400] [--folder DIR]
                                   [--previous CHECKOUT] [--build-month STEP] [--history N]

`--previous` names a checkout of an earlier version (`git archive REV | tar -x -C DIR`, with
the compiled modules copied in): its server is measured over the same warehouses (it reads
the month's Parquet files). `--build-month STEP` times `build-month` of that step's month with
and without the explorer, and `ingest` alone. `--history N` indexes N months of the sample
(each with new ids and names, 5,000 of the player's games in all) and serves requests over all
of them: a file per month, then each year compacted (`explorer compact`).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import chess.pgn  # noqa: E402
import zstandard  # noqa: E402

from bench.data import GAMES_2013, read_text  # noqa: E402
from bench.measure import group_rss_mb  # noqa: E402
from bench.serve import Server, load  # noqa: E402

#: Copies of the sample (25,611 games) in the ladder's 1x step (~102k games).
BASE_COPIES = 4
PLAYER = "bench-player"
PLAYER_GAMES = 5000
MONTH = "2024-01"
FILTER = "&since=2024-01&until=2024-01&speeds=blitz,rapid&ratings=1600,1800"
_SITE = re.compile(rb'\[Site "https://lichess\.org/([A-Za-z0-9]{8})"\]')
_NAME = re.compile(rb'\[(White|Black) "([^"]*)"\]')
_ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def games_of(text: str) -> list[bytes]:
    """The sample's games, as text."""
    parts = re.split(r"\n\n(?=\[Event )", text.strip())
    return [part.encode() + b"\n\n" for part in parts]


def copy_game(game: bytes, copy: int, number: int) -> bytes:
    """A game with a new id (from its number) and new player names (from its copy)."""
    digits = bytearray()
    value = number
    for _ in range(8):
        value, digit = divmod(value, 62)
        digits.append(_ALPHABET[digit])
    game = _SITE.sub(b'[Site "https://lichess.org/' + bytes(digits) + b'"]', game, count=1)
    suffix = b"-%d" % copy
    return _NAME.sub(lambda m: b"[" + m.group(1) + b' "' + m.group(2) + suffix + b'"]', game)


def write_month(
    path: Path, copies: int, *, first: int = 0, player_games: int = PLAYER_GAMES
) -> int:
    """Write `copies` copies of the sample as one zstd PGN (numbered from copy `first`), the
    White of `player_games` of them PLAYER; return its games."""
    sample = games_of(read_text(GAMES_2013))
    renamed = 0
    number = first * len(sample)
    with path.open("wb") as raw, zstandard.ZstdCompressor(level=1).stream_writer(raw) as out:
        for copy in range(first, first + copies):
            for game in sample:
                text = copy_game(game, copy, number)
                if renamed < player_games and number % 7 == 0:
                    text = re.sub(rb'\[White "[^"]*"\]', b'[White "' + PLAYER.encode() + b'"]',
                                  text, count=1)  # fmt: skip
                    renamed += 1
                out.write(text)
                number += 1
    return number


def run_measured(command: list[str], cwd: Path) -> dict[str, float]:
    """A command's wall time and the peak summed memory of its processes."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, start_new_session=True,
                               stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(cwd)})  # fmt: skip
    peak = 0.0
    while process.poll() is None:
        peak = max(peak, group_rss_mb(process.pid))
        time.sleep(0.1)
    if process.returncode:
        raise SystemExit(f"{command} failed ({process.returncode})")
    return {"seconds": round(time.perf_counter() - start, 1), "peak_rss_mb": round(peak)}


def urls() -> dict[str, list[str]]:
    """Requests by kind: the start position, 10- and 40-ply lines, with and without a filter,
    and the player's."""
    stream = io.StringIO(read_text(GAMES_2013))
    ten: list[str] = []
    forty: list[str] = []
    while len(forty) < 200 and (game := chess.pgn.read_game(stream)) is not None:
        moves = [m.uci() for m in game.mainline_moves()]
        if len(moves) >= 10 and len(ten) < 200:
            ten.append(",".join(moves[:10]))
        if len(moves) >= 40:
            forty.append(",".join(moves[:40]))
    found = {
        "start": ["/lichess?"],
        "ply10": [f"/lichess?play={p}" for p in ten],
        "ply40": [f"/lichess?play={p}" for p in forty],
    }
    for name in list(found):
        found[f"{name}+filter"] = [u + FILTER for u in found[name]]
    found["player"] = [f"/player?player={PLAYER}&color=white&play={p}" for p in ["", *ten[:20]]]
    return found


def first_answer(port: int, started: float) -> float:
    """Seconds from `started` until the server answers the start position."""
    import urllib.request

    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/lichess", timeout=600) as got:
                if got.status == 200:
                    return round(time.perf_counter() - started, 2)
        except OSError:
            time.sleep(0.05)


def serve(
    checkout: Path, warehouse: Path, requests: int, kinds: dict[str, list[str]]
) -> dict[str, object]:
    started = time.perf_counter()
    server = Server(checkout, warehouse, ["--cache", "0"])
    try:
        ready = first_answer(server.port, started)
        found: dict[str, object] = {"ready_s": ready, "rss_mb_ready": server.rss_mb()}
        for name, wanted in kinds.items():
            found[name] = load(server.port, wanted, requests)
        found["rss_mb_after"] = server.rss_mb()
        return found
    finally:
        server.stop()


def explorer_bytes(warehouse: Path) -> dict[str, int]:
    folder = warehouse / "explorer"
    sizes: dict[str, int] = {}
    for file in folder.rglob("*"):
        if file.is_file():
            sizes[file.name] = sizes.get(file.name, 0) + file.stat().st_size
    return sizes


def exponent(sizes: list[int], values: list[float]) -> float | None:
    """The growth exponent of values over sizes (least squares on the logs)."""
    if len(sizes) < 2 or min(values) <= 0:
        return None
    xs, ys = [math.log(s) for s in sizes], [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return round(
        sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
        / sum((x - mx) ** 2 for x in xs),
        3,
    )


def build_month_cost(folder: Path, step: int) -> None:
    """`build-month` of a step's month with the explorer and without (`--no-explorer`), and
    `ingest` alone, each from nothing (every game kept)."""
    source = folder / f"build-{step}x.pgn.zst"
    games = write_month(source, BASE_COPIES * step)
    common = [str(source), "--month", MONTH, "--speeds", "all", "--min-rating", "0", "--quiet"]
    row: dict[str, object] = {"build_month_step": f"{step}x", "games": games}
    for name, extra in (("with_explorer", []), ("no_explorer", ["--no-explorer"])):
        where = folder / f"build-{name}"
        row[name] = run_measured(
            [sys.executable, "-m", "pipelines", "build-month", *common, "--warehouse",
             str(where / "w"), "--books", str(where / "books"), *extra],
            ROOT,
        )  # fmt: skip
    row["ingest"] = run_measured(
        [sys.executable, "-m", "pipelines", "ingest", *common, "--warehouse",
         str(folder / "build-ingest"), "--no-explorer"],
        ROOT,
    )  # fmt: skip
    print(json.dumps(row), flush=True)
    source.unlink()


def history(
    folder: Path, count: int, requests: int, kinds: dict[str, list[str]], previous: Path | None
) -> None:
    """`count` months of the sample (new ids and names each), served over all of them: as
    indexed (a file per month), then with each year compacted."""
    warehouse = folder / f"history-{count}"
    source = folder / "history-month.pgn.zst"
    seconds = 0.0
    for number in range(count):
        year, month = divmod(number, 12)
        write_month(source, 1, first=number, player_games=PLAYER_GAMES // count)
        done = run_measured(
            [sys.executable, "-m", "pipelines", "explorer", "index", str(source), "--month",
             f"{2020 + year}-{month + 1:02d}", "--warehouse", str(warehouse), "--speeds", "all",
             "--min-rating", "0", "--quiet"],
            ROOT,
        )  # fmt: skip
        seconds += done["seconds"]
    wide = {name: [u.replace("2024-01", "2020-01") for u in urls] for name, urls in kinds.items()}
    row: dict[str, object] = {"history_months": count, "index_seconds": round(seconds)}
    row["by_month"] = serve(ROOT, warehouse, requests, wide)
    if previous:
        row["previous"] = serve(previous, warehouse, requests, wide)
    compact = 0.0
    for year in range(2020, 2020 + (count + 11) // 12):
        done = run_measured(
            [sys.executable, "-m", "pipelines", "explorer", "compact", "--warehouse",
             str(warehouse), "--year", str(year)],
            ROOT,
        )  # fmt: skip
        compact += done["seconds"]
    row["compact_seconds"] = round(compact)
    row["by_year"] = serve(ROOT, warehouse, requests, wide)
    print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="1,4,16")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--previous", type=Path)
    parser.add_argument(
        "--build-month",
        type=int,
        default=0,
        metavar="STEP",
        help="also build-month with and without the explorer on that step",
    )
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        help="also N months of the sample, served as they are and compacted",
    )
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="explorer-scale-"))
    kinds = urls()
    results: list[dict[str, object]] = []
    for step in [int(s) for s in args.steps.split(",") if s]:
        source = folder / f"month-{step}x.pgn.zst"
        warehouse = folder / f"warehouse-{step}x"
        games = write_month(source, BASE_COPIES * step)
        index = run_measured(
            [sys.executable, "-m", "pipelines", "explorer", "index", str(source), "--month", MONTH,
             "--warehouse", str(warehouse), "--speeds", "all", "--min-rating", "0", "--quiet"],
            ROOT,
        )  # fmt: skip
        sizes = explorer_bytes(warehouse)
        row: dict[str, object] = {
            "step": f"{step}x",
            "games": games,
            "index": {**index, "games_per_s": round(games / index["seconds"])},
            "bytes_per_game": {name: round(size / games) for name, size in sizes.items()},
            "this": serve(ROOT, warehouse, args.requests, kinds),
        }
        if args.previous:
            row["previous"] = serve(args.previous, warehouse, args.requests, kinds)
        results.append(row)
        print(json.dumps(row), flush=True)
        source.unlink()
    if args.build_month:
        build_month_cost(folder, args.build_month)
    if args.history:
        history(folder, args.history, args.requests, kinds, args.previous)
    games = [int(r["games"]) for r in results]  # type: ignore[call-overload]
    for version in ("this", "previous"):
        if results and version in results[0]:
            rss = [float(r[version]["rss_mb_after"]) for r in results]  # type: ignore[index]
            ready = [float(r[version]["ready_s"]) for r in results]  # type: ignore[index]
            print(json.dumps({version: {"rss_exponent": exponent(games, rss),
                                        "ready_exponent": exponent(games, ready)}}))  # fmt: skip


if __name__ == "__main__":
    main()
