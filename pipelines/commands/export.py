"""`chesspipe export`: training files from labelled endgame positions."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipelines.commands.options import add_action, add_actions, add_file_roles


def register(subparsers: Any) -> None:
    formats = add_actions(
        subparsers,
        "export",
        dest="export_format",
        metavar="FORMAT",
        help="write training files from endgame labels",
    )
    _add_format(
        formats,
        "plain",
        help="Stockfish .plain records",
        description="Write every labelled position of LABELS (*.parquet) as a Stockfish .plain "
        "record: the best move, a score and result from the side to move, and the ply. "
        "Score schemes: tb (31507..31752 for wins, faster zeroing higher), cp "
        "(1000..1990), wdl (+-1000); 50-move draws score 0.",
    )
    _add_format(
        formats,
        "binpack",
        help="Stockfish .binpack (the .plain records, chained as Stockfish's tools chain them)",
        description="Write the records `export plain` would write as a Stockfish .binpack: "
        "a chain per position (a 32-byte stem and a 2-byte count of further plies: 34 bytes a "
        "record), consecutive plies of a game chained after it, a few bits each.",
    )


def _add_format(formats: Any, name: str, **about: str) -> None:
    """Add the format `name` (a .plain or .binpack file; `about`: its help and description)."""
    parser = add_action(formats, name, run_plain, **about)
    parser.add_argument("--labels", required=True, type=Path, help="folder of label files")
    parser.add_argument("--out", required=True, type=Path, help=f"the .{name} file to write")
    add_file_roles(parser, reads=("labels",), writes=("out",))
    parser.add_argument("--score-scheme", choices=("tb", "cp", "wdl"), default="tb")
    parser.set_defaults(binpack=name == "binpack")


def run_plain(args: argparse.Namespace) -> int:
    from pipelines.endgames.export import export_plain

    summary = export_plain(args.labels, args.out, args.score_scheme, args.binpack)
    print(json.dumps(summary, indent=2))
    return 0
