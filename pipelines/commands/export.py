"""`chesspipe export`: training files from labelled endgame positions."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("export", help="write training files from endgame labels")
    formats = parser.add_subparsers(dest="export_format", metavar="FORMAT", required=True)
    plain = formats.add_parser(
        "plain",
        help="Stockfish .plain records",
        description="Write every labelled position of LABELS (*.parquet) as a Stockfish .plain "
        "record: the best move, a score and result from the side to move, and the ply. "
        "Score schemes: tb (31507..31752 for wins, faster zeroing higher), cp "
        "(1000..1990), wdl (+-1000); 50-move draws score 0.",
    )
    plain.add_argument("--labels", required=True, type=Path, help="folder of label files")
    plain.add_argument("--out", required=True, type=Path, help="the .plain file to write")
    plain.add_argument("--score-scheme", choices=("tb", "cp", "wdl"), default="tb")
    plain.set_defaults(handler=run_plain, binpack=False)
    binpack = formats.add_parser(
        "binpack",
        help="Stockfish .binpack (the .plain records, chained as Stockfish's tools chain them)",
        description="Write the records `export plain` would write as a Stockfish .binpack: "
        "a chain per position (a 32-byte stem and a 2-byte count of further plies: 34 bytes a "
        "record), consecutive plies of a game chained after it, a few bits each.",
    )
    binpack.add_argument("--labels", required=True, type=Path, help="folder of label files")
    binpack.add_argument("--out", required=True, type=Path, help="the .binpack file to write")
    binpack.add_argument("--score-scheme", choices=("tb", "cp", "wdl"), default="tb")
    binpack.set_defaults(handler=run_plain, binpack=True)


def run_plain(args: argparse.Namespace) -> int:
    from pipelines.endgames.export import export_plain

    summary = export_plain(args.labels, args.out, args.score_scheme, args.binpack)
    print(json.dumps(summary, indent=2))
    return 0
