"""Records per second of `chesspipe training from-games` beside a plain python-chess script.

    python bench/training_from_games.py [--syzygy DIR] [--lichess DIR] [--rounds 1]

Input: the real samples `standard-2021-10-sample.pgn.zst` (999 games) and
`standard-2013-01-part1.pgn.zst` (25,611 games), every game kept (`--min-rating 0`, all speeds,
bots), tablebase rescoring with the 3-4-piece tables. Two modes:

- `--require-eval` (the default): the games with an eval after every move (9,958 records);
- `--no-require-eval`: also the positions the tables cover in every other game.

Each command runs as its own process under `bench/measure.py` (wall, CPU, peak memory); the
python-chess script is `bench/naive_training_from_games.py`, whose `.plain` output must equal
chesspipe's byte for byte. chesspipe runs twice in each mode: on the samples as they are (one
zstd frame: read in order), and on the samples rewritten as pzstd-style frames of 1 MB, read
by units of frames in 2 worker processes (`export_games(workers=2, parallel_min_bytes=0)`:
the command splits only files of 16 MB and more); its CPU time includes the workers'. Start-up
dominates such small inputs, so the units also export the 2013 sample's text 4 times over as one
framed file (78 MB of PGN), whose output must be the 2013 output 4 times; its ratio is
records/s over the script's records/s in the same mode. Memory is also measured on each sample
alone (flat: it does not grow with the input).

Stockfish's own `convert` (from its `tools` branch) is not compared: the Stockfish at hand
(Debian's 15.1) is built without it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
SAMPLES = (("2021-10", "standard-2021-10-sample.pgn.zst"),
           ("2013-01", "standard-2013-01-part1.pgn.zst"))  # fmt: skip
#: Copies of the 2013 sample in the month-sized input exported by units.
BIG = 4
ALL = "--min-rating 0 --speeds ultrabullet,bullet,blitz,rapid,classical,correspondence --allow-bots"


def measure(command: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "measure.py"), command],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    result = json.loads(done.stdout)
    if result["returncode"] != 0:
        raise SystemExit(f"{command} failed: {result['stderr']}")
    return result


def chesspipe(lichess: Path, syzygy: Path, out: Path, mode: str, months: tuple[str, ...]) -> str:
    parts = [
        f"{sys.executable} -m pipelines training from-games {lichess / name} --month {month} "
        f"--out {out}.{month}.plain --syzygy {syzygy} {ALL} {mode} --quiet"
        for month, name in SAMPLES
        if month in months
    ]
    return " && ".join(parts) + " >/dev/null"


#: Exports argv[1] (a month's source) to argv[3] with tables argv[4] and options argv[5:] in
#: 2 worker processes, any pzstd-style file split among them.
UNITS = (
    "import os, sys\n"
    "from pathlib import Path\n"
    "from pipelines.commands.training import TableOutcomes\n"
    "from pipelines.games.game_filter import GameFilter\n"
    "from pipelines.training.from_games import export_games\n"
    "from pipelines.training.settings import FromGamesSettings\n"
    "from schemas.speed import Speed\n"
    "rules = GameFilter(0, frozenset(Speed), allow_bots=True)\n"
    "settings = FromGamesSettings(rules, require_eval='--no-require-eval' not in sys.argv)\n"
    "manifest = export_games(sys.argv[1], sys.argv[2], Path(sys.argv[3]), settings,\n"
    "    TableOutcomes([Path(sys.argv[4])]), workers=2, parallel_min_bytes=0)\n"
    "assert manifest.workers == 2\n"
    "# Workers started by a fork server are its children: their CPU time is in its cutime.\n"
    "from multiprocessing import forkserver\n"
    "pid = forkserver._forkserver._forkserver_pid\n"
    "stat = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split() if pid else []\n"
    "ticks = sum(int(field) for field in stat[11:15])  # utime, stime, cutime, cstime\n"
    "print('workers_cpu', ticks / os.sysconf('SC_CLK_TCK'))\n"
)


def units(framed: dict[str, Path], syzygy: Path, out: Path, mode: str) -> str:
    """The command exporting the framed samples by units of frames in 2 worker processes."""
    parts = [
        f'{sys.executable} -c "$UNITS" {path} {month} {out}.{month}.plain {syzygy} {mode}'
        for month, path in framed.items()
    ]
    return f"export UNITS={shlex.quote(UNITS)}; " + " && ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--syzygy", type=Path, default=SHARED / "syzygy" / "3-4")
    parser.add_argument("--lichess", type=Path, default=SHARED / "lichess")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import zstandard

    from pipelines.games.frames import write_framed_zstd

    months = tuple(month for month, _ in SAMPLES)
    print("Stockfish's convert: not compared (Debian's Stockfish 15.1 has no tools build)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        framed = {}
        for month, name in SAMPLES:
            with open(args.lichess / name, "rb") as handle:
                text = zstandard.ZstdDecompressor().stream_reader(handle).read()
            framed[month] = work / f"framed-{name}"
            write_framed_zstd(framed[month], text, frame_size=1 << 20, level=3)
        # A month-sized input where the units pay for their start-up: 2013's text 4 times.
        big = {"2013-01": work / "big.pgn.zst"}
        write_framed_zstd(big["2013-01"], text * BIG, frame_size=1 << 20, level=3)
        for mode in ("", "--no-require-eval"):
            label = mode or "--require-eval"
            for round_ in range(args.rounds):
                ours = measure(chesspipe(args.lichess, args.syzygy, work / "ours", mode, months))
                pgns = " ".join(str(args.lichess / name) for _, name in SAMPLES)
                naive = measure(
                    f"{sys.executable} bench/naive_training_from_games.py {work / 'naive.plain'} "
                    f"--syzygy {args.syzygy} {mode} {pgns}"
                )
                ours_bytes = b"".join(
                    (work / f"ours.{month}.plain").read_bytes() for month in months
                )
                naive_bytes = (work / "naive.plain").read_bytes()
                assert ours_bytes == naive_bytes, "the outputs differ"
                by_units = measure(units(framed, args.syzygy, work / "units", mode))
                # (not waited for by the command: a fork server's children, counted by it)
                by_units["cpu"] += sum(
                    float(line.split()[1])
                    for line in by_units["stdout"].splitlines()
                    if line.startswith("workers_cpu")
                )
                units_bytes = b"".join(
                    (work / f"units.{month}.plain").read_bytes() for month in months
                )
                assert units_bytes == ours_bytes, "the outputs by units differ"
                on_big = measure(units(big, args.syzygy, work / "big", mode))
                on_big["cpu"] += sum(
                    float(line.split()[1])
                    for line in on_big["stdout"].splitlines()
                    if line.startswith("workers_cpu")
                )
                big_bytes = (work / "big.2013-01.plain").read_bytes()
                assert big_bytes == (work / "ours.2013-01.plain").read_bytes() * BIG
                records = ours_bytes.count(b"\ne\n")
                for name, run in (("chesspipe", ours), ("chesspipe, 2 workers", by_units),
                                  ("python-chess script", naive)):  # fmt: skip
                    print(f"{label:<18} round {round_ + 1}  {name:<20} {records:>7,} records "
                          f"{run['wall']:7.2f} s wall {records / run['wall']:>8,.0f}/s  "
                          f"{run['cpu']:7.2f} s CPU {records / run['cpu']:>8,.0f}/s  "
                          f"{run['peak_total_rss_mb']:6.0f} MB", flush=True)  # fmt: skip
                big_records = big_bytes.count(b"\ne\n")
                run = on_big
                print(f"{label:<18} round {round_ + 1}  {'chesspipe, 2 workers, 2013 x' + str(BIG):<20} "
                      f"{big_records:>7,} records "
                      f"{run['wall']:7.2f} s wall {big_records / run['wall']:>8,.0f}/s  "
                      f"{run['cpu']:7.2f} s CPU {big_records / run['cpu']:>8,.0f}/s  "
                      f"{run['peak_total_rss_mb']:6.0f} MB", flush=True)  # fmt: skip
                for name, run, count in (
                    ("in order", ours, records),
                    ("2 workers", by_units, records),
                    (f"2 workers, 2013 x{BIG}", on_big, big_records),
                ):
                    # records/s over the script's records/s
                    wall = count / run["wall"] / (records / naive["wall"])
                    cpu = count / run["cpu"] / (records / naive["cpu"])
                    print(f"{label:<18} round {round_ + 1}  ratio ({name}): "
                          f"{wall:.1f}x wall, {cpu:.1f}x CPU", flush=True)  # fmt: skip
        for month in months:
            run = measure(chesspipe(args.lichess, args.syzygy, work / "one", "", (month,)))
            print(f"memory, {month} alone: {run['peak_total_rss_mb']:.0f} MB peak", flush=True)


if __name__ == "__main__":
    main()
