"""Opening suites that tell engines apart, measured: ours beside fishtest's, in one run.

    python bench/suites.py [--pairs 300] [--nodes 2000] [--analyse-nodes 20000]
                           [--window 90..119] [--work bench/work/suites]
                           [--shared UHO_4060_v4,noob_3moves,8moves_v3]

1. A warehouse of the real 2013-01 sample and the bundled generated month, every game kept.
2. A raw suite of their exits (`suite build --plies 8..12 --min-games 3`), analysed by
   Stockfish (`evals analyse --suite`, 2 workers, with its WDL model): throughput, and
   chesspipe's overhead beside the engine's own time.
3. The suite built again with the evaluation window (`--window`), and `suite check` of it.
4. fastchess (built by bench/build_tools.sh) plays each suite: ours, UHO_4060_v4, noob_3moves
   and 8moves_v3 (PGN). Stockfish at --nodes against Stockfish at twice the nodes, --pairs
   pairs of games (`-repeat`), openings in a random order with one seed for all: normalized
   Elo with its 95% interval, draw ratio and pentanomial counts, the figures testers judge a
   suite by (a suite that tells the two engines apart more clearly has the larger nElo).

Prints a Markdown section for bench/RESULTS.md. Not run by the tests.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench.data import BUILT_TOOLS, GAMES_2013, SUITES_DIR  # noqa: E402

SAMPLE = ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"
SHARED = {
    "UHO_4060_v4": ("UHO_4060_v4.epd.zip", "epd"),
    "noob_3moves": ("noob_3moves.epd.zip", "epd"),
    "8moves_v3": ("8moves_v3.pgn.zip", "pgn"),
}


def chesspipe(*args: str) -> dict[str, Any]:
    """Run a chesspipe command; return its JSON summary."""
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines", *args], capture_output=True, text=True, cwd=ROOT
    )
    if proc.returncode != 0:
        raise SystemExit(f"chesspipe {' '.join(args)} failed: {proc.stderr}")
    return json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}


def match(fastchess: str, suite: Path, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """A fastchess match from the suite; its last report's figures."""
    stockfish = shutil.which("stockfish") or "/usr/games/stockfish"
    out = suite.with_suffix(".match.pgn")
    out.unlink(missing_ok=True)
    started = time.monotonic()
    proc = subprocess.run(
        [
            fastchess, "-engine", f"cmd={stockfish}", "name=n", f"nodes={args.nodes}",
            "-engine", f"cmd={stockfish}", "name=2n", f"nodes={2 * args.nodes}",
            "-each", "tc=inf", "option.Hash=16", "-rounds", str(args.pairs), "-games", "2",
            "-repeat", "-concurrency", "2", "-srand", "1",
            "-openings", f"file={suite}", f"format={kind}", "order=random",
            "-pgnout", f"file={out}",
        ],
        capture_output=True, text=True, cwd=suite.parent, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"fastchess failed on {suite}: {proc.stdout[-2000:]}{proc.stderr}")
    text = proc.stdout
    elo = re.findall(r"Elo: (-?[\d.]+) \+/- ([\d.]+), nElo: (-?[\d.]+) \+/- ([\d.]+)", text)[-1]
    draws = re.findall(r"DrawRatio: ([\d.]+) %", text)[-1]
    ptnml = re.findall(r"Ptnml\(0-2\): \[([\d, ]+)\]", text)[-1]
    games = re.findall(r"Games: (\d+), Wins: (\d+), Losses: (\d+), Draws: (\d+)", text)[-1]
    return {
        "elo": float(elo[0]), "elo_error": float(elo[1]),
        "nelo": float(elo[2]), "nelo_error": float(elo[3]),
        "draw_ratio": float(draws) / 100, "pentanomial": [int(n) for n in ptnml.split(",")],
        "games": int(games[0]), "seconds": round(time.monotonic() - started, 1),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--analyse-nodes", type=int, default=20000)
    parser.add_argument("--window", default="90..119")
    parser.add_argument("--work", type=Path, default=HERE / "work" / "suites")
    parser.add_argument("--shared", default=",".join(SHARED), help="the shared suites played")
    args = parser.parse_args()
    args.work = args.work.resolve()  # (fastchess runs in the suite's folder)
    fastchess = BUILT_TOOLS / "fastchess" / "fastchess"
    if not fastchess.exists():
        raise SystemExit(f"{fastchess} is not built: run bash bench/build_tools.sh")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    warehouse = args.work / "warehouse"
    every = ("--speeds", "all", "--min-rating", "0", "--allow-bots", "--no-explorer")
    chesspipe(
        "ingest", str(GAMES_2013), "--month", "2013-01", "--warehouse", str(warehouse), *every
    )
    chesspipe("ingest", str(SAMPLE), "--month", "2024-01", "--warehouse", str(warehouse), *every)

    shape = ("--plies", "8..12", "--min-games", "3")
    raw = args.work / "raw.epd"
    built = chesspipe("suite", "build", "--warehouse", str(warehouse), "--out", str(raw), *shape)
    analysed = chesspipe(
        "evals", "analyse", "--warehouse", str(warehouse), "--suite", str(raw),
        "--engine", "stockfish", "--nodes", str(args.analyse_nodes), "--workers", "2",
        "--wdl", "--quiet",
    )  # fmt: skip
    ours = args.work / "ours.epd"
    windowed = chesspipe(
        "suite", "build", "--warehouse", str(warehouse), "--out", str(ours), *shape,
        "--evals", str(warehouse), f"--window={args.window}",
    )  # fmt: skip
    suites: dict[str, tuple[Path, str]] = {"chesspipe (window)": (ours, "epd")}
    for name in args.shared.split(","):
        file, kind = SHARED[name]
        with zipfile.ZipFile(SUITES_DIR / file) as archive:
            target = args.work / f"{name}.{kind}"
            target.write_bytes(archive.read(archive.namelist()[0]))
        suites[name] = (target, kind)
    checks = {
        name: chesspipe("suite", "check", str(path), "--json") for name, (path, _) in suites.items()
    }
    results = {
        name: match(str(fastchess), path, kind, args) for name, (path, kind) in suites.items()
    }

    seconds, workers = analysed["seconds"], 2
    # chesspipe's own time: the workers' time not spent waiting for the engine's answers; the
    # rest of the engine's latency (a new game, the hash cleared, the pipe) beside its search
    own = 1 - analysed["search_seconds"] / (seconds * workers) if seconds else 0.0
    latency = (analysed["search_seconds"] - analysed["engine_seconds"]) / (seconds * workers)
    print("## Opening suites: ours beside fishtest's (bench/suites.py)\n")
    print(
        f"Raw suite: {built['counts']['written']:,} exits (plies 8..12, at least 3 games) of "
        f"{', '.join(built['months'])}. `evals analyse --suite` at {args.analyse_nodes:,} nodes, "
        f"2 workers: {analysed['analysed']:,} positions in {seconds:.1f} s "
        f"({analysed['analysed'] / seconds:.1f}/s); the engine searched "
        f"{analysed['engine_seconds']:.1f} s of the {seconds * workers:.1f} worker-seconds: "
        f"chesspipe's own time {own:.1%}, the engine's answers beyond its search {latency:.1%}. "
        f"Window {args.window}: "
        f"{windowed['counts']['written']:,} exits.\n"
    )
    print(
        f"Stockfish at {args.nodes:,} nodes against {2 * args.nodes:,}, {args.pairs} pairs "
        "each (fastchess, `-repeat`, random order, seed 1). Elo and nElo are the first (weaker) "
        "engine's: the larger their size, the better the suite tells the two apart.\n"
    )
    print("| suite | openings | mean eval (White) | nElo | Elo | draw ratio | pentanomial | s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for name, found in results.items():
        check = checks[name]
        bias = check["bias"]["mean"]
        print(
            f"| {name} | {check['openings']:,} | {'-' if bias is None else f'{bias:+.0f}'} | "
            f"{found['nelo']:.1f} ± {found['nelo_error']:.1f} | "
            f"{found['elo']:.1f} ± {found['elo_error']:.1f} | {found['draw_ratio']:.1%} | "
            f"{found['pentanomial']} | {found['seconds']:.0f} |"
        )
    print()
    print(json.dumps({"analysed": analysed, "matches": results}))


if __name__ == "__main__":
    main()
