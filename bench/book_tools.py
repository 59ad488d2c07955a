"""The book tools side by side with PolyGlot's: merge, one side's book, dump to PGN.

    python bench/book_tools.py [--rounds 5]

On the real 2013 games (both players 1500+, all speeds, bots allowed) and performance.bin:
- merge: `chesspipe book merge` against `polyglot merge-book` (the same bytes out);
- one side: `chesspipe book build --only-white` from the ingested statistics, against the same
  build of both sides (what finding whose move it is costs) and `polyglot make-book
  -only-white` on the PGN of the same games (PolyGlot reads the games; we read statistics);
- dump: `chesspipe book dump --depth 12` against `polyglot dump-book -color white` (not the
  same output: PolyGlot dumps one side's repertoire with its own transposition rule).
The commands of a round run one after another, in turn; medians of the rounds; start-up
included. Prints a JSON record with the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench.data import GAMES_2013 as GAMES  # noqa: E402
from bench.data import POLYGLOT_BOOK as PERFORMANCE  # noqa: E402
from bench.peers import pgn_extract_elo  # noqa: E402


def seconds(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=cwd)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    polyglot = shutil.which("polyglot") or "/usr/games/polyglot"
    chesspipe = [sys.executable, "-m", "pipelines"]
    env_root = str(ROOT)
    os.environ["PYTHONPATH"] = env_root + os.pathsep + os.environ.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        subprocess.run(
            [*chesspipe, "ingest", str(GAMES), "--month", "2013-01", "--warehouse", "wh",
             "--min-rating", "1500", "--allow-bots", "--quiet",
             "--speeds", "ultrabullet,bullet,blitz,rapid,classical,correspondence"],
            check=True, capture_output=True, cwd=tmp,
        )  # fmt: skip
        kept = pgn_extract_elo(GAMES, 1500, tmp)
        build = [*chesspipe, "book", "build", "--warehouse", "wh", "--months", "2013-01",
                 "--min-games", "3"]  # fmt: skip
        subprocess.run([*build, "--out", "ours.bin"], check=True, capture_output=True, cwd=tmp)
        commands = {
            "merge, chesspipe": [*chesspipe, "book", "merge", str(PERFORMANCE), "ours.bin", "m1"],
            "merge, polyglot": [polyglot, "merge-book", "-in1", str(PERFORMANCE), "-in2",
                                "ours.bin", "-out", "m2"],
            "white book, chesspipe": [*build, "--out", "w1.bin", "--only-white"],
            "both sides' book, chesspipe": [*build, "--out", "b1.bin"],
            "white book, polyglot make-book": [polyglot, "make-book", "-pgn", str(kept), "-bin",
                                               "w2.bin", "-max-ply", "20", "-min-game", "3",
                                               "-only-white"],
            "dump, chesspipe": [*chesspipe, "book", "dump", str(PERFORMANCE), "--out", "d.pgn"],
            "dump, polyglot": [polyglot, "dump-book", "-bin", str(PERFORMANCE), "-color",
                               "white", "-out", "d.txt"],
        }  # fmt: skip
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, command in commands.items():
                times[name].append(seconds(command, tmp))
        same = (tmp / "m1").read_bytes() == (tmp / "m2").read_bytes()
    median = {name: round(statistics.median(runs), 3) for name, runs in times.items()}
    record = {
        "rounds": args.rounds,
        "median_seconds": median,
        "merge_ratio": round(median["merge, chesspipe"] / median["merge, polyglot"], 2),
        "merged_bytes_equal": same,
        "white_book_ratio_to_polyglot": round(
            median["white book, chesspipe"] / median["white book, polyglot make-book"], 2
        ),
        "white_book_ratio_to_both_sides": round(
            median["white book, chesspipe"] / median["both sides' book, chesspipe"], 2
        ),
        "dump_ratio": round(median["dump, chesspipe"] / median["dump, polyglot"], 2),
    }
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
