"""Ingest and book building, side by side with the peer programs, in one run.

    python bench/run_benchmarks.py [--mb 300] [--no-10x] [--out bench/RESULTS.md]

On the same .pgn.zst inputs: (a) `zstd -dc` alone, the floor; (b) `zstd -dc | pgn-extract`
(Elo >= 2200) `| polyglot make-book -max-ply 20`, what a user would otherwise run; (c) a naive
python-chess script (`read_game` on every game); (d) `chesspipe ingest` + `chesspipe book build`.
Also chesspipe on one core, and its filter stage alone (nothing passes the rating filter).
Inputs: the real Lichess samples (CHESSPIPE_LICHESS, default ../shared/data/lichess), and dumps
generated from them by bench/make_dump.py with about 2% of games passing the default filter.
Only the part of --out between its marker lines (BEGIN, END) is rewritten: the sections kept by
hand around it (the other benchmarks' figures) stay.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / "work"
PY = sys.executable

#: Each measurement is the median of this many interleaved runs (the machine may be shared).
REPEAT = 5

#: Inputs of under a second a program get more runs: their timings vary the most.
REPEAT_SMALL = 15
SMALL_PGN_BYTES = 100 << 20


def measure_once(command: str) -> dict:
    """Run a shell command in a fresh measuring process; return wall, CPU and peak memory."""
    env = dict(os.environ)
    env["PATH"] = env.get("PATH", "") + ":/usr/games"
    env["PYTHONPATH"] = str(ROOT)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # cached bytecode, as on a normal install
    out = subprocess.run(
        [PY, str(HERE / "measure.py"), command], capture_output=True, text=True, env=env, check=True
    )
    result: dict = json.loads(out.stdout)
    if result["returncode"] != 0:
        raise SystemExit(f"benchmark command failed: {command}\n{result['stderr']}")
    return result


def measure(commands: dict[str, str], repeat: int = REPEAT) -> dict[str, dict]:
    """Measure commands in `repeat` interleaved rounds after one unmeasured run of each.

    Return each command's median run by wall time. Interleaving gives every program the same
    share of whatever else the machine is doing.
    """
    for command in commands.values():
        measure_once(command)  # warms the page cache and Python's bytecode cache
    rounds = [
        {key: measure_once(command) for key, command in commands.items()} for _ in range(repeat)
    ]
    results = {}
    for key in commands:
        runs = sorted((round_[key] for round_ in rounds), key=lambda run: run["wall"])
        results[key] = runs[len(runs) // 2]
        results[key]["walls"] = [round(run["wall"], 3) for run in runs]
        results[key]["round_walls"] = [round(round_[key]["wall"], 3) for round_ in rounds]
    return results


def rounds_won(runs: dict[str, dict], faster: str, slower: str, factor: float = 1.0) -> str:
    """Return "k of n rounds" in which `faster` took at most `factor` times `slower`'s wall."""
    mine, theirs = runs[faster].get("round_walls", []), runs[slower].get("round_walls", [])
    won = sum(a <= factor * b for a, b in zip(mine, theirs, strict=True))
    return f"{won} of {len(mine)} rounds" if mine else "(rounds not recorded)"


def pgn_size(path: Path) -> int:
    out = subprocess.run(
        f"zstd -dc '{path}' | wc -c", shell=True, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def real_input(lichess: Path) -> Path:
    target = WORK / "real.pgn.zst"
    with open(target, "wb") as out:
        for path in sorted(lichess.glob("*.pgn.zst")):
            out.write(path.read_bytes())  # concatenated zstd streams are one valid stream
    return target


def chesspipe_ingest(path: Path, name: str, extra: str = "") -> str:
    """Return the shell command that ingests into a fresh warehouse (removing it is measured)."""
    warehouse = WORK / f"wh-{name}"
    return (
        f"rm -rf '{warehouse}' && "
        f"{PY} -m pipelines ingest '{path}' --month 2000-01 --warehouse '{warehouse}' --quiet {extra}"
    )


def chesspipe(path: Path, name: str, extra: str = "", min_games: int = 20) -> str:
    warehouse = WORK / f"wh-{name}"
    return (
        f"{chesspipe_ingest(path, name, extra)} && "
        f"{PY} -m pipelines book build --warehouse '{warehouse}' --months 2000-01 --out '{warehouse}/book.bin'"
        f" --min-games {min_games}"
    )


def run_input(path: Path, label: str, naive_cap: float | None, min_games: int = 20) -> dict:
    """Measure (a) to (d) on one input; both books need `min_games` games a move.

    (`book build` refuses an empty book where PolyGlot writes an empty file: an input keeping
    too few games for 20 a move is measured with a lower minimum, the same for both.)
    """
    tags = WORK / "elo-2200.txt"
    tags.write_text('WhiteElo >= "2200"\nBlackElo >= "2200"\n')
    size = pgn_size(path)
    repeat = REPEAT_SMALL if size < SMALL_PGN_BYTES else REPEAT
    runs = measure(
        {
            "a": f"zstd -dc '{path}' > /dev/null",
            "b": f"zstd -dc '{path}' | pgn-extract -s -t '{tags}' 2>/dev/null | "
            f"polyglot make-book -pgn /dev/stdin -bin '{WORK}/peer.bin' -max-ply 20 "
            f"-min-game {min_games} -min-score 35 > /dev/null",
            "d": chesspipe(path, label, min_games=min_games),
            "d1": chesspipe(path, label + "-1", "--workers 1", min_games=min_games),
            "f": chesspipe_ingest(path, label + "-filter", "--min-rating 99999 --allow-empty"),
        },
        repeat,
    )
    cap = f" --max-seconds {naive_cap}" if naive_cap else ""
    runs["c"] = measure_once(f"{PY} '{HERE}/naive_python_chess.py' '{path}'{cap}")
    naive = json.loads(runs["c"]["stdout"].strip().splitlines()[-1])
    if not naive["complete"]:  # scale the capped run to the whole input by its measured rate
        scale = size / naive["pgn_bytes"]
        runs["c"]["wall"] *= scale
        runs["c"]["cpu"] *= scale
        runs["c"]["extrapolated_from_mb"] = naive["pgn_bytes"] / 1e6
    manifest = json.loads((WORK / f"wh-{label}" / "move_stats" / "month=2000-01.json").read_text())
    return {
        "label": label,
        "path": str(path),
        "pgn_bytes": size,
        "compressed_bytes": path.stat().st_size,
        "games": manifest["games_read"],
        "kept": manifest["games_kept"],
        "repeat": repeat,
        "min_games": min_games,
        "runs": runs,
    }


def row(name: str, run: dict, result: dict) -> str:
    mb = result["pgn_bytes"] / 1e6
    note = (
        f" (extrapolated from {run['extrapolated_from_mb']:.0f} MB)"
        if "extrapolated_from_mb" in run
        else ""
    )
    runs = result["runs"]
    ratios = " | ".join(f"{run['wall'] / runs[k]['wall']:.2f}" for k in ("a", "b", "c"))
    return (
        f"| {name}{note} | {run['wall']:.2f} | {run['cpu']:.2f} | {run['max_rss_mb']:.0f} | "
        f"{run['peak_total_rss_mb']:.0f} | "
        f"{mb / run['wall']:.0f} | {result['games'] / run['wall']:,.0f} | {ratios} |"
    )


def book_bench() -> dict:
    """Run bench/book_build.py (8 million rows of statistics) and return its figures."""
    out = subprocess.run(
        [PY, str(HERE / "book_build.py")], capture_output=True, text=True, check=True
    )
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def report(results: list[dict], big: dict | None, ran_at: str, book: dict | None = None) -> str:
    lines = [
        "# Benchmarks",
        "",
        f"Run by `python bench/run_benchmarks.py` on {ran_at} UTC, "
        f"{os.cpu_count()} cores. Times in seconds; peak MB is the largest single process's "
        "peak RSS, all processes MB the peak of their summed RSS (sampled every 0.1 s); "
        "MB/s is decompressed PGN per wall second; ratios are wall time divided by the wall time of "
        "(a), (b) and (c) (below 1 is faster). CPU covers every process that was waited for, "
        "chesspipe's forked workers included. Each figure is the median of "
        f"{REPEAT} runs ({REPEAT_SMALL} for inputs under {SMALL_PGN_BYTES >> 20} MB of PGN), "
        "the programs taking turns after an unmeasured run of each ((c): one run, last), with "
        "Python's bytecode cache on. The walls of every run are in bench/work/results.json.",
        "",
    ]
    names = {
        "a": "(a) zstd -dc (floor)",
        "b": "(b) zstd -dc \\| pgn-extract \\| polyglot make-book",
        "c": "(c) naive python-chess",
        "d": "(d) chesspipe ingest + book build",
        "d1": "(d) chesspipe, --workers 1",
        "f": "chesspipe ingest, filter stage only (nothing kept)",
    }
    for result in results:
        lines += [
            f"## {result['label']}: {result['pgn_bytes'] / 1e6:.0f} MB of PGN "
            f"({result['compressed_bytes'] / 1e6:.1f} MB compressed), {result['games']:,} games, "
            f"{result['kept']:,} kept ({result['kept'] / max(1, result['games']):.1%}); "
            f"medians of {result.get('repeat', REPEAT)} runs"
            + (
                f"; both books at {result['min_games']} game(s) a move (20 would make none)"
                if result.get("min_games", 20) != 20
                else ""
            ),
            "",
            "| program | wall | CPU | peak MB | all processes MB | MB/s | games/s | ÷(a) | ÷(b) | ÷(c) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [
            row(names[key], result["runs"][key], result) for key in ("a", "b", "c", "d", "d1", "f")
        ]
        lines.append("")
    if big is not None:
        mb = big["pgn_bytes"] / 1e6
        floor, filtered, full = big["a"], big["f"], big["d"]
        lines += [
            f"## 10x: {mb:.0f} MB of PGN, chesspipe and the floor",
            "",
            "| program | wall | CPU | peak MB | all processes MB | MB/s |",
            "|---|---|---|---|---|---|",
        ]
        for name, run in (
            ("(a) zstd -dc (floor)", floor),
            ("(d) chesspipe ingest + book build", full),
            ("chesspipe ingest, filter stage only (nothing kept)", filtered),
        ):
            lines.append(
                f"| {name} | {run['wall']:.2f} | {run['cpu']:.2f} | {run['max_rss_mb']:.0f} | "
                f"{run['peak_total_rss_mb']:.0f} | {mb / run['wall']:.0f} |"
            )
        lines.append("")
    lines += goals(results, big)
    if book is not None:
        lines += [
            "## Book building from month-sized statistics (bench/book_build.py)",
            "",
            f"{book['rows']:,} generated (key, move, speed, band) rows: `chesspipe book build` "
            f"took {book['wall']:.1f} s wall, {book['cpu']:.1f} s CPU, peak "
            f"{book['peak_total_rss_mb']:.0f} MB, and wrote {book['entries']:,} entries for "
            f"{book['positions']:,} positions (min 20 games, score >= 35%).",
            "",
        ]
    return "\n".join(lines)


#: The part of RESULTS.md this script writes lies between these lines; the rest (sections kept
#: by hand, from the other benchmarks) is left as it is.
BEGIN = "<!-- begin: written by bench/run_benchmarks.py; edit outside these marks -->"
END = "<!-- end: written by bench/run_benchmarks.py -->"


def splice(existing: str, generated: str) -> str:
    """Return the text of a RESULTS.md, `existing`, with its generated part now `generated`.

    The generated part is what lies between the BEGIN and END lines; a text without them is
    kept whole after the new generated part.
    """
    return splice_between(existing, generated, BEGIN, END, first=True)


def splice_between(
    existing: str, generated: str, begin: str, end: str, *, first: bool = False
) -> str:
    """`existing` with what lies between the lines `begin` and `end` now `generated`; a text
    without them gets the marked part first (`first`) or last, and is otherwise kept whole."""
    block = f"{begin}\n{generated.strip()}\n{end}\n"
    start = existing.find(begin)
    stop = existing.find(end, start)
    if start < 0 or stop < 0:
        if not existing.strip():
            return block
        if first:
            return block + "\n" + existing.lstrip("\n")
        return existing.rstrip("\n") + "\n\n" + block
    rest = existing[stop + len(end) :]
    return existing[:start] + block + rest.removeprefix("\n")


def write_results(path: Path, generated: str) -> None:
    """Write `generated` as the generated part of the RESULTS.md at `path` (see splice)."""
    existing = path.read_text() if path.exists() else ""
    path.write_text(splice(existing, generated))


def goals(results: list[dict], big: dict | None) -> list[str]:
    """Return the issue's goals with the measured figure for each."""
    real, dump = results[0]["runs"], results[-1]["runs"]
    lines = [
        "## Goals",
        "",
        f"- (d) on the generated dump: {dump['d']['wall'] / dump['b']['wall']:.2f}x the wall "
        "time of (b) (goal: at most 0.5x).",
        f"- (d) on the real games, start-up included: {real['d']['wall']:.2f} s against "
        f"{real['b']['wall']:.2f} s for (b), {real['d']['wall'] / real['b']['wall']:.2f}x; "
        f"(d) was no slower in {rounds_won(real, 'd', 'b')} (goal: at most 1x).",
        f"- (c) takes {dump['c']['wall'] / dump['d']['wall']:.0f} times as long as (d) on the "
        "generated dump (goal: at least 100).",
    ]
    for label, result in (("the generated dump", results[-1]),):
        runs = result["runs"]
        share = runs["a"]["wall"] / runs["f"]["wall"]
        lines.append(
            f"- Filter stage on {label}: {result['pgn_bytes'] / 1e6 / runs['f']['wall']:.0f} "
            f"MB/s, {share:.0%} of (a)'s throughput; at least 50% in "
            f"{rounds_won(runs, 'f', 'a', 2.0)} (goal: at least 50%)."
        )
    if big is not None:
        share = big["a"]["wall"] / big["f"]["wall"]
        lines += [
            f"- Filter stage at 10x: {big['pgn_bytes'] / 1e6 / big['f']['wall']:.0f} MB/s, "
            f"{share:.0%} of (a)'s throughput.",
            f"- Peak memory at 10x, all processes together: "
            f"{big['d']['peak_total_rss_mb']:.0f} MB (goal: under 2 GB).",
        ]
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--no-10x", action="store_true")
    parser.add_argument(
        "--naive-cap", type=float, default=60.0, help="seconds for (c) on generated dumps"
    )
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    shared = Path(os.environ.get("CHESSPIPE_SHARED_DATA", ROOT.parent / "shared" / "data"))
    parser.add_argument(
        "--lichess",
        type=Path,
        default=Path(os.environ.get("CHESSPIPE_LICHESS", shared / "lichess")),
    )
    parser.add_argument(
        "--report-only", action="store_true", help="re-render the last run's results"
    )
    args = parser.parse_args()
    if args.report_only:
        saved = json.loads((WORK / "results.json").read_text())
        ran_at = saved.get("ran_at", "an earlier run")
        text = report(saved["results"], saved["big"], ran_at, saved.get("book"))
        write_results(args.out, text)
        return 0
    for program in ("zstd", "pzstd"):
        if shutil.which(program) is None:
            raise SystemExit(f"{program} is needed (Debian package zstd)")
    for program in ("pgn-extract", "polyglot"):
        if shutil.which(program) is None and shutil.which(program, path="/usr/games") is None:
            raise SystemExit(f"{program} is needed (Debian package {program})")
    WORK.mkdir(exist_ok=True)
    # Its 22 games kept make no move of 20 games: its books are built at 1 game a move.
    results = [run_input(real_input(args.lichess), "real Lichess games", None, min_games=1)]
    dump = WORK / f"dump-{args.mb}.pgn.zst"
    subprocess.run(
        [
            PY,
            str(HERE / "make_dump.py"),
            str(dump),
            "--mb",
            str(args.mb),
            "--lichess",
            str(args.lichess),
        ],
        check=True,
    )
    results.append(run_input(dump, f"generated dump, {args.mb} MB", args.naive_cap))
    big: dict[str, Any] | None = None
    if not args.no_10x:
        big_dump = WORK / f"dump-{args.mb * 10}.pgn.zst"
        subprocess.run(
            [
                PY,
                str(HERE / "make_dump.py"),
                str(big_dump),
                "--mb",
                str(args.mb * 10),
                "--seed",
                "2",
                "--lichess",
                str(args.lichess),
            ],
            check=True,
        )
        runs = measure(
            {
                "a": f"zstd -dc '{big_dump}' > /dev/null",
                "d": chesspipe(big_dump, "10x"),
                "f": chesspipe_ingest(big_dump, "10x-filter", "--min-rating 99999 --allow-empty"),
            }
        )
        big = {**runs, "pgn_bytes": pgn_size(big_dump)}
    book = book_bench()
    ran_at = f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
    text = report(results, big, ran_at, book)
    write_results(args.out, text)
    saved = {"results": results, "big": big, "ran_at": ran_at, "book": book}
    (WORK / "results.json").write_text(json.dumps(saved, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
