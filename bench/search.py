"""Position search beside Scoutfish, in one run, on the same games.

    python bench/search.py [--games 95721] [--scales 1,10] [--runs 5] [--work bench/work/search]

1. A PGN of `--games` real Lichess games (the shared 2013-01 and 2021-10 samples, repeated to
   size, written again by python-chess: plain SAN, no comments; the held-out month's size by
   default), and one `scale` times as large for each scale.
2. chesspipe indexes each (`explorer index --plies 50 --min-rating 0 --speeds all --allow-bots`,
   2 workers: the games with their packed moves) and Scoutfish indexes each (`scoutfish make`).
3. Each query, as both read it: a sub-FEN, a material balance, an exact position (Scoutfish: the
   whole placement as a sub-FEN, the side to move as `stm`: castling rights not compared, so
   it may find a few more), a sequence. chesspipe on 1 and 2
   threads (`search_games`, in process: reading the Parquet file included), Scoutfish on 1 and 2
   threads (its `setoption name Threads`): the best of `--runs`, positions a second (Scoutfish's
   own "moves" count) and the games matched.
4. Bytes a game: the PGN, the PGN zstd-compressed (level 3 and 19), the games table, its
   packed moves (and a move), Scoutfish's .scout file.

Scoutfish is built by bench/build_tools.sh. Prints a Markdown section for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench.data import BUILT_TOOLS, GAMES_2013, GAMES_2021, read_text  # noqa: E402

SCOUTFISH = BUILT_TOOLS / "scoutfish" / "src" / "scoutfish"
EXACT = "rnbqkbnr/pp1ppppp/8/2p5/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"
#: Each query: its name, chesspipe's JSON, Scoutfish's JSON.
QUERIES = [
    ("sub-FEN", {"sub-fen": "8/8/p7/8/8/1B3N2/8/8"}, {"sub-fen": "8/8/p7/8/8/1B3N2/8/8"}),
    ("material", {"material": "KRPKR"}, {"material": "KRPKR"}),
    ("exact FEN", {"fen": EXACT}, {"sub-fen": EXACT.split()[0], "stm": "black"}),
    (
        "sequence",
        {"sequence": [{"white-move": "O-O-O"}, {"black-move": "O-O"}]},
        {"sequence": [{"white-move": "O-O-O"}, {"black-move": "O-O"}]},
    ),
]


def games_of(path: Path) -> list[str]:
    """A sample's games as python-chess writes them: its main lines in plain SAN, no comments
    (Scoutfish's PGN reader crashes on moves like Rh8h5, which 2013's games have)."""
    import chess.pgn

    stream = io.StringIO(read_text(path))
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        if game.errors or "FEN" in game.headers:
            continue
        exporter = chess.pgn.StringExporter(comments=False, variations=False)
        games.append(game.accept(exporter) + "\n")
    return games


def sample(count: int) -> str:
    pool = games_of(GAMES_2013) + games_of(GAMES_2021)
    return "\n".join(pool[i % len(pool)] for i in range(count))


def scoutfish(db: Path, query: dict[str, object], threads: int) -> tuple[float, int, int]:
    """Seconds of Scoutfish's own timing, moves it replayed, games matched."""
    script = f"setoption name Threads value {threads}\nscout {db} {json.dumps(query)}\nquit\n"
    done = subprocess.run([str(SCOUTFISH)], input=script, capture_output=True, text=True,
                          check=True)  # fmt: skip
    answer = json.loads(done.stdout[done.stdout.index("{") :])
    return answer["processing time (ms)"] / 1000, answer["moves"], answer["match count"]


def ours(warehouse: Path, query: dict[str, object], threads: int) -> tuple[float, int, int]:
    from pipelines.search.games import SearchStats, search_games
    from pipelines.search.query import query_from_json

    stats = SearchStats()
    started = time.perf_counter()
    found = sum(1 for _ in search_games(warehouse, query_from_json(query), workers=threads,
                                        stats=stats))  # fmt: skip
    return time.perf_counter() - started, stats.positions, found


#: Runs a command and prints the peak resident memory of it (KiB), alone in its own process.
_PEAK = (
    "import resource, subprocess, sys; "
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def command_search(warehouse: Path, query: dict[str, object]) -> tuple[float, float]:
    """`chesspipe search --format json` of the query over the warehouse, as a user runs it:
    seconds (start-up included) and the peak resident memory in MB."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "pipelines", "search",
         "--warehouse", str(warehouse), "--query", json.dumps(query), "--format", "json",
         "--quiet"],
        check=True, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    return time.perf_counter() - started, int(done.stdout.split()[-1]) / 1024


def strong(data: bytes, count: int) -> str:
    """Bytes a game of the PGN at zstd -19, from its first 100 MB (slow: 1-2 MB/s)."""
    import zstandard

    if len(data) > 100 << 20:
        share = (100 << 20) / len(data)
        return f"{len(zstandard.ZstdCompressor(level=19).compress(data[: 100 << 20])) / (count * share):.0f}"
    return f"{len(zstandard.ZstdCompressor(level=19).compress(data)) / count:.0f}"


def best(run: object, runs: int) -> tuple[float, int, int]:
    results = [run() for _ in range(runs)]  # type: ignore[operator]
    return min(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=95_721)
    parser.add_argument("--scales", default="1,10")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=HERE / "work" / "search")
    args = parser.parse_args()
    if not SCOUTFISH.exists():
        raise SystemExit(f"Scoutfish is not built at {SCOUTFISH}: run bash bench/build_tools.sh")
    import pyarrow.parquet as pq
    import zstandard

    from pipelines.explorer.layout import games_file

    print("## Position search beside Scoutfish (bench/search.py)\n")
    rows = []
    sizes = []
    memory = []
    for scale in (int(s) for s in args.scales.split(",")):
        folder = args.work / f"x{scale}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        count = args.games * scale
        pgn = folder / "games.pgn"
        pgn.write_text(sample(count))
        warehouse = folder / "wh"
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pipelines", "explorer", "index", str(pgn), "--month",
             "2024-01", "--warehouse", str(warehouse), "--min-rating", "0", "--speeds", "all",
             "--allow-bots",
             "--workers", "2", "--quiet"],
            check=True, capture_output=True, cwd=ROOT,
        )  # fmt: skip
        indexed = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run([str(SCOUTFISH), "make", str(pgn)], check=True, capture_output=True)
        made = time.perf_counter() - started
        db = pgn.with_suffix(".scout")
        for name, mine, theirs in QUERIES:
            for threads in (1, 2):
                t, positions, found = best(partial(ours, warehouse, mine, threads), args.runs)
                st, moves, sfound = best(partial(scoutfish, db, theirs, threads), args.runs)
                rows.append(
                    f"| {count:,} | {name} | {threads} | {positions / t / 1e6:.1f} M/s "
                    f"({found:,} games) | {moves / st / 1e6:.1f} M/s ({sfound:,} games, "
                    f"{moves:,} moves read) | {(moves / st) / (positions / t):.2f} |"
                )
        seconds, peak = command_search(warehouse, QUERIES[0][1])
        memory.append(f"| {count:,} | {seconds:.1f} s | {peak:.0f} MB |")
        data = pgn.read_bytes()
        table = games_file(warehouse, "2024-01")
        meta = pq.ParquetFile(table).metadata
        column = meta.schema.names.index("packed")
        packed = sum(meta.row_group(g).column(column).total_compressed_size
                     for g in range(meta.num_row_groups))  # fmt: skip
        plies = sum(pq.read_table(table, columns=["plies"]).column(0).to_pylist())
        kept = meta.num_rows
        sizes.append(
            f"| {count:,} | {len(data) / count:.0f} | "
            f"{len(zstandard.ZstdCompressor(level=3).compress(data)) / count:.0f} | "
            f"{strong(data, count)} | "
            f"{table.stat().st_size / kept:.0f} | {packed / kept:.0f} ({packed / plies:.2f} a move) "
            f"| {db.stat().st_size / count:.0f} | {indexed:.1f} s / {made:.1f} s |"
        )
    print("| games | query | threads | chesspipe | Scoutfish | Scoutfish / chesspipe |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    print("\nBytes a game, and the time to index (chesspipe explorer index, 2 workers / "
          "scoutfish make):\n")  # fmt: skip
    print("| games | PGN | PGN zstd -3 | PGN zstd -19 | games.parquet | its packed moves | "
          ".scout | index |")  # fmt: skip
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(sizes))
    print("\nThe command as a user runs it (sub-FEN, every match written as JSON, 2 threads): "
          "time and peak memory as the games grow:\n")  # fmt: skip
    print("| games | time | peak RSS |")
    print("| ---: | ---: | ---: |")
    print("\n".join(memory))


if __name__ == "__main__":
    main()
