"""Where the time of ingest goes per kept game, stage by stage, every game kept (CPU time).

    python bench/stages.py FILE.pgn.zst [--plies 20] [--repeat 3]

Runs the ingest stages of the checkout it is run from (PYTHONPATH) in one process, on one
core, and prints microseconds of CPU per kept game for each: decompress, scan and filter,
movetext (SAN tokens or cut text), the SAN walk (with the Polyglot keys), the rest of the replay,
summing into a run, and writing and merging runs into the month's file. Run it with another
checkout on PYTHONPATH to compare.
"""

from __future__ import annotations

import argparse
import inspect
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import zstandard


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", type=Path)
    parser.add_argument("--plies", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from pipelines.games.game_filter import GameFilter, ScanStats
    from pipelines.games.scan import game_blocks, kept_games_in_blocks
    from pipelines.ingest import counting, runs
    from schemas.speed import Speed

    spent: dict[str, float] = defaultdict(float)

    def timed(name, function):
        def wrapper(*args, **kwargs):
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.process_time() - start

        return wrapper

    # The SAN walk: compiled, keys and all (this checkout), or the Rust parser and NumPy keys
    # (older checkouts, which had pipelines/ingest/replay.py).
    try:
        from pipelines.games import sanwalk

        sanwalk.walk_openings = timed("SAN walk", sanwalk.walk_openings)
    except ImportError:
        import rust_pgn_reader_python_binding as reader

        from pipelines.ingest import replay

        reader.parse_games_from_strings = timed("SAN walk", reader.parse_games_from_strings)
        for name in ("polyglot_keys", "_game_piece_keys", "_state_keys"):
            if hasattr(replay, name):
                setattr(replay, name, timed("keys", getattr(replay, name)))
    for name in ("san_tokens", "opening_text", "plain_moves"):
        if hasattr(counting, name):
            setattr(counting, name, timed("movetext", getattr(counting, name)))
    rules = GameFilter(0, frozenset(Speed), True)
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        spent.clear()
        start = time.process_time()
        with open(args.source, "rb") as handle:
            stream = zstandard.ZstdDecompressor().stream_reader(handle, read_across_frames=True)
            chunks = []
            while chunk := stream.read(1 << 20):
                chunks.append(chunk)
        spent["decompress"] = time.process_time() - start
        stats = ScanStats()
        start = time.process_time()
        kept = list(kept_games_in_blocks(game_blocks(chunks, stats, check_end=True), rules, stats))
        spent["scan and filter"] = time.process_time() - start
        counter = counting.MoveCounter(args.plies, stats)
        start = time.process_time()
        for game in kept:
            counter.add(game)
        rows = counter.take_rows()
        spent["replay, the rest"] = (
            time.process_time() - start
            - spent["movetext"] - spent["SAN walk"] - spent["keys"]
        )  # fmt: skip
        start = time.process_time()
        columns = runs.from_rows(rows)
        spent["summing into a run"] = time.process_time() - start
        with tempfile.TemporaryDirectory() as folder:
            start = time.process_time()
            run = Path(folder) / "run-0"
            runs.write_run(columns, run)
            target = Path(folder) / "month.parquet"
            if "staging" in inspect.signature(runs.merge_runs).parameters:
                runs.merge_runs([run], target, Path(folder), in_memory_rows=4_000_000)
            else:
                runs.merge_runs([run], target, in_memory_rows=4_000_000)
            spent["run file and month file"] = time.process_time() - start
        for name, seconds in spent.items():
            best[name] = min(best.get(name, seconds), seconds)
    games = stats.games_kept
    per_game = {name: round(seconds / games * 1e6, 2) for name, seconds in best.items()}
    per_game["total"] = round(sum(per_game.values()), 2)
    print(json.dumps({"games_kept": games, "microseconds_per_kept_game": per_game}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
