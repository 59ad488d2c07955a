"""Labelled endgame positions per second with each Syzygy backend (one core).

    python bench/endgame_labels.py [--syzygy DIR] [--per-material 300] [--python-per-material 20]

Positions: uniform samples of every material the folder holds. "label" is WDL + DTZ + ranked best
move for one position (Labeller.label, table coverage checked); "rows" also builds the Arrow
record batches the label files are written from; "wdl" is a bare WDL probe.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import Clock  # noqa: E402
from pipelines.endgames import fathom
from pipelines.endgames.dataset import label_batches
from pipelines.endgames.labeller import Labeller
from pipelines.endgames.positions import Position, sample_positions
from pipelines.endgames.tables import TableSet

DEFAULT_GAMES = (
    Path(__file__).resolve().parent.parent.parent
    / "shared" / "data" / "lichess" / "standard-2013-01-part1.pgn.zst"
)  # fmt: skip
DEFAULT_SYZYGY = (
    Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "syzygy" / "3-4"
)


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:>9,.0f}/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--syzygy", type=Path, default=Path(os.environ.get("SYZYGY_PATH", DEFAULT_SYZYGY))
    )
    parser.add_argument("--per-material", type=int, default=300)
    parser.add_argument("--python-per-material", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--games", type=Path, default=DEFAULT_GAMES, help="PGN(.zst) for from-games"
    )
    args = parser.parse_args()

    materials = sorted(TableSet([args.syzygy]).tables)
    boards = {
        n: [p.board for m in materials for p in sample_positions(m, n, args.seed)]
        for n in {args.per_material, args.python_per_material}
    }
    print(f"tables: {args.syzygy} ({len(materials)} materials)")
    backends = ["python"] + (["fathom"] if fathom.available() else [])
    for backend in backends:
        n = args.per_material if backend == "fathom" else args.python_per_material
        sample = boards[n]
        labeller = Labeller([args.syzygy], backend)
        for board in sample[:: max(1, len(sample) // 200)]:
            labeller.label(board)  # open the tables first
        with Clock() as label:
            for board in sample:
                labeller.label(board, validated=True)
        with Clock() as rows:
            positions = (Position(b, "sample") for b in sample)
            count = sum(batch.num_rows for batch in label_batches(positions, labeller))
        wdl_sample = boards[args.per_material]
        with Clock() as wdl:
            for board in wdl_sample:
                labeller.backend.probe_wdl(board)
        print(
            f"{backend:>7} ({len(sample):,} positions), per CPU second: "
            f"label {rate(len(sample), label.cpu)}  rows {rate(count, rows.cpu)}  "
            f"wdl {rate(len(wdl_sample), wdl.cpu)};  wall: label {rate(len(sample), label.wall)}"
        )

    if args.games.exists():
        bench_games(args.games, TableSet([args.syzygy]))


def bench_games(path: Path, tables: TableSet) -> None:
    """From-games scanning with the capture count first, against replaying every kept game."""
    from pipelines.endgames.from_games import GameScan, game_positions
    from pipelines.games.game_filter import GameFilter
    from schemas.speed import Speed

    rules = GameFilter(min_rating=0, speeds=frozenset(Speed))
    print(f"games: {path.name}")
    for label, every in (("capture count first", False), ("replay every game", True)):
        scan = GameScan()
        with Clock() as clock:
            positions = game_positions(str(path), rules, tables, scan, replay_every_game=every)
            found = sum(1 for _ in positions)
        print(
            f"  {label:>20}: {rate(scan.stats.games_read, clock.cpu)} games per CPU second, "
            f"{scan.replayed:,} of {scan.stats.games_kept:,} kept games replayed, "
            f"{found:,} positions"
        )


if __name__ == "__main__":
    main()
