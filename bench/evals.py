"""Books that play well, measured: raw, pruned and performance.bin side by side in one run.

    python bench/evals.py [--games 200] [--prune-nodes 5000] [--judge-nodes 20000]
                          [--match-nodes 1000] [--work bench/work/evals]

1. The real samples as two months (2013-01 part 1 as "2013-01", the 2021-10 sample as
   "2021-10"), every game kept; the book of the first month analysed by Stockfish
   (`evals analyse`, 2 workers), then the book of both months: the second run pays only its new
   positions. Throughput, and chesspipe's overhead beside the engine's own time.
2. Books built with the same settings from both months: raw, pruned at --max-loss 50, and
   ../shared/data/polyglot/performance.bin.
3. `book check` figures for each, judged by a separate store: Stockfish at --judge-nodes (deeper
   than the pruning's), over the positions each book reaches with probability >= 0.001.
4. Matches: Stockfish at --match-nodes on both sides, one side playing book A to its end, the
   other book B, colours alternating, --games games each; the score of A with a 95% interval.

Prints a Markdown section for bench/RESULTS.md. Not run by the tests.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import chess
import chess.engine
import chess.polyglot

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipelines.evals.analyse import analyse_positions  # noqa: E402
from pipelines.evals.check import check_book  # noqa: E402
from pipelines.evals.positions import book_moves, walk  # noqa: E402
from pipelines.evals.settings import AnalysisSettings, CheckSettings  # noqa: E402
from schemas.polyglot import open_book  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
MONTHS = {
    "2013-01": SHARED / "lichess" / "standard-2013-01-part1.pgn.zst",
    "2021-10": SHARED / "lichess" / "standard-2021-10-sample.pgn.zst",
}
PERFORMANCE = SHARED / "polyglot" / "performance.bin"
BOOK_OPTIONS = ["--min-games", "10", "--min-score", "0.35"]
STOCKFISH = shutil.which("stockfish") or "/usr/games/stockfish"
MAX_PLIES = 200


def cli(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines", *args], capture_output=True, text=True, cwd=ROOT
    )
    if proc.returncode:
        raise SystemExit(f"chesspipe {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def reached_boards(book_path: Path, min_probability: float) -> list[chess.Board]:
    """The positions a check of the book looks at: the position of each move reached with at
    least `min_probability`, and the position after it."""
    listed = check_book(open_book(book_path), Path("."), CheckSettings(min_probability),
                        evaluations={})  # fmt: skip
    wanted: dict[int, chess.Board] = {}
    for move in listed.moves:
        board = chess.Board()
        for token in move.line.split():
            if not token[0].isdigit():
                board.push_san(token)
        wanted[chess.polyglot.zobrist_hash(board)] = board.copy()
        board.push_san(move.san)
        wanted[chess.polyglot.zobrist_hash(board)] = board
    return list(wanted.values())


def analyse(warehouse: Path, boards: list[chess.Board], nodes: int) -> dict[str, float]:
    result = analyse_positions(
        warehouse, boards, STOCKFISH, AnalysisSettings(nodes=nodes, workers=2)
    )
    busy = result.search_seconds / (result.workers * result.seconds) if result.seconds else 0
    return {
        "positions": result.positions,
        "analysed": result.analysed,
        "skipped": result.skipped,
        "seconds": result.seconds,
        "per_second": result.analysed / result.seconds if result.seconds else 0.0,
        "search_share": busy,
        "engine_seconds": result.engine_seconds,
        "search_seconds": result.search_seconds,
    }


def play(
    engine: chess.engine.SimpleEngine, book_white: Path, book_black: Path, nodes: int, seed: int
) -> float:
    """One game: White plays its book to its end, Black its own; then Stockfish at `nodes` on
    both sides (a new game for the engine). Returns White's points."""
    rng = random.Random(seed)
    books = {chess.WHITE: open_book(book_white), chess.BLACK: open_book(book_black)}
    in_book = {chess.WHITE: True, chess.BLACK: True}
    board = chess.Board()
    game = object()
    while not board.is_game_over(claim_draw=True) and board.ply() < MAX_PLIES:
        move = None
        if in_book[board.turn]:
            chosen = books[board.turn].weighted_choice(board, rng)
            if chosen is None:
                in_book[board.turn] = False
            else:
                move = chosen.move
        if move is None:
            move = engine.play(board, chess.engine.Limit(nodes=nodes), game=game).move
        assert move is not None
        board.push(move)
    outcome = board.outcome(claim_draw=True)
    if outcome is None or outcome.winner is None:
        return 0.5
    return 1.0 if outcome.winner == chess.WHITE else 0.0


def match(a: Path, b: Path, games: int, nodes: int) -> tuple[float, float, float]:
    """A's score over `games` games (colours alternating, two games at a time): mean and the
    95% interval's half width, and the draw rate."""
    points: list[float] = [0.0] * games
    draws = [False] * games

    def worker(start: int) -> None:
        with chess.engine.SimpleEngine.popen_uci(STOCKFISH) as engine:
            engine.configure({"Threads": 1, "Hash": 16})
            for n in range(start, games, 2):
                a_white = n % 2 == 0  # games 2k and 2k+1: one seed, colours swapped
                white, black = (a, b) if a_white else (b, a)
                p = play(engine, white, black, nodes, seed=n // 2)
                points[n] = p if a_white else 1 - p
                draws[n] = p == 0.5

    threads = [threading.Thread(target=worker, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mean = sum(points) / games
    sd = math.sqrt(sum((p - mean) ** 2 for p in points) / (games - 1))
    return mean, 1.96 * sd / math.sqrt(games), sum(draws) / games


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--prune-nodes", type=int, default=5000)
    parser.add_argument("--judge-nodes", type=int, default=20000)
    parser.add_argument("--match-nodes", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "work" / "evals")
    args = parser.parse_args()
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    warehouse, judge = work / "warehouse", work / "judge"
    judge.mkdir(parents=True)
    for month, source in MONTHS.items():
        cli("ingest", str(source), "--month", month, "--warehouse", str(warehouse), "--quiet",
            "--min-rating", "0", "--speeds", "ultrabullet,bullet,blitz,rapid,classical,correspondence",
            "--allow-bots")  # fmt: skip
    books = {}
    costs = {}
    for label, months in (("first month", "2013-01"), ("both months", "2013-01,2021-10")):
        out = work / f"raw-{months.replace(',', '+')}.bin"
        cli("book", "build", "--warehouse", str(warehouse), "--months", months, "--out", str(out),
            *BOOK_OPTIONS)  # fmt: skip
        boards = list(walk(book_moves(open_book(out))).boards.values())
        costs[label] = analyse(warehouse, boards, args.prune_nodes)
        books["raw"] = out
    pruned = work / "pruned.bin"
    built = json.loads(cli("book", "build", "--warehouse", str(warehouse), "--months",
                           "2013-01,2021-10", "--out", str(pruned), *BOOK_OPTIONS, "--evals",
                           str(warehouse), "--max-loss", "50"))  # fmt: skip
    books["pruned --max-loss 50"] = pruned
    books["performance.bin"] = PERFORMANCE
    judged = {}
    for name, path in books.items():
        analyse(judge, reached_boards(path, 0.001), args.judge_nodes)
        judged[name] = check_book(open_book(path), judge, CheckSettings(0.001))
    started = time.monotonic()
    matches = {
        "pruned vs raw": match(pruned, books["raw"], args.games, args.match_nodes),
        "pruned vs performance.bin": match(pruned, PERFORMANCE, args.games, args.match_nodes),
    }
    match_seconds = time.monotonic() - started

    print(
        f"## Books that play well (bench/evals.py), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
    )
    print(
        f"Real samples as two months (2013-01 part 1, 25,611 games; the 2021-10 sample, 999 games), every game kept; books at `{' '.join(BOOK_OPTIONS)}`. Stockfish 15.1, Threads 1, Hash 16, a new game per position, 2 workers.\n"
    )
    print(f"### Analysis (`evals analyse`, the pruning's limit: nodes {args.prune_nodes})\n")
    print(
        "| run | positions | analysed | skipped | wall s | analysed/s | workers busy in the engine | engine's own time / time waited |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, c in costs.items():
        own = c["engine_seconds"] / c["search_seconds"] if c["search_seconds"] else 0
        print(
            f"| {label} | {c['positions']:,} | {c['analysed']:,} | {c['skipped']:,} | {c['seconds']:.1f} | {c['per_second']:.1f} | {c['search_share']:.1%} | {own:.1%} |"
        )
    print(
        f"\nPruned book: {built['entries']:,} entries (raw: {open_book(books['raw']).entries.size:,}); manifest counts {json.dumps(built['evals'])}.\n"
    )
    print(f"### `book check`, judged by a separate store: Stockfish at nodes {args.judge_nodes}\n")
    print(
        "| book | reachable moves (p >= 0.001) | judged | mean loss cp | losing > 100 cp | book ends: mean (White) | ends in -20..20 | ends unknown |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, c in judged.items():
        mean = "n/a" if c.mean_loss is None else f"{c.mean_loss:.1f}"
        end = "n/a" if c.end_mean is None else f"{c.end_mean:+.1f}"
        print(
            f"| {name} | {len(c.moves):,} | {c.checked_share:.1%} | {mean} | {len(c.losing)} | {end} | {c.ends['-20..20']:.1%} | {c.ends['unknown']:.1%} |"
        )
    print(
        f"\n### Matches: Stockfish at nodes {args.match_nodes} on both sides, each side to its own book's end, {args.games} games each, colours alternating ({match_seconds:.0f} s)\n"
    )
    print("| match | score of the first | 95% interval | draws |")
    print("|---|---|---|---|")
    for name, (mean, half, draw) in matches.items():
        print(f"| {name} | {mean:.3f} | {mean - half:.3f} - {mean + half:.3f} | {draw:.0%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
