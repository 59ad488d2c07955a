"""`chesspipe training`: the trainers' file tools for .plain and chained .binpack files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "training", help="convert, describe, shuffle and mix .plain / .binpack training files"
    )
    actions = parser.add_subparsers(dest="training_command", metavar="ACTION", required=True)

    convert = actions.add_parser(
        "convert",
        help=".plain <-> .binpack, by extension",
        description="Copy every record of IN into OUT, the formats chosen by the extensions "
        "(.plain or .binpack; chained .binpack exactly as Stockfish's tools write it). "
        "Streams any size; OUT appears whole or not at all.",
    )
    convert.add_argument("input", type=Path, metavar="IN")
    convert.add_argument("output", type=Path, metavar="OUT")
    convert.set_defaults(handler=run_convert)

    stats = actions.add_parser(
        "stats",
        help="records, results, material, scores, checks, captures, plies",
        description="Count FILE's records by result (side to move), pieces on the board, "
        "score band and ply, and the shares in check and of captures.",
    )
    stats.add_argument("file", type=Path, metavar="FILE")
    stats.add_argument("--json", action="store_true", help="print JSON for a program")
    stats.set_defaults(handler=run_stats)

    shuffle = actions.add_parser(
        "shuffle",
        help="shuffle the records, in bounded memory",
        description="Write IN's records to OUT in a random order fixed by --seed, through "
        "temporary bucket files beside OUT (memory holds one bucket).",
    )
    shuffle.add_argument("input", type=Path, metavar="IN")
    shuffle.add_argument("output", type=Path, metavar="OUT")
    shuffle.add_argument("--seed", type=int, required=True)
    shuffle.add_argument(
        "--buckets", type=int, help="temporary buckets (default: about 250,000 records each)"
    )
    shuffle.set_defaults(handler=run_shuffle)

    interleave = actions.add_parser(
        "interleave",
        help="mix several files, each in proportion to its size",
        description="Mix the records of the inputs into OUT: each next record comes from an "
        "input with probability its remaining records / all remaining records (seeded); every "
        "input keeps its own order.",
    )
    interleave.add_argument("inputs", type=Path, nargs="+", metavar="IN")
    interleave.add_argument("--out", type=Path, required=True)
    interleave.add_argument("--seed", type=int, required=True)
    interleave.set_defaults(handler=run_interleave)


def run_convert(args: argparse.Namespace) -> int:
    from pipelines.training.convert import convert

    print(json.dumps(convert(args.input, args.output), indent=2))
    return 0


def run_stats(args: argparse.Namespace) -> int:
    from pipelines.training.stats import file_stats, format_stats

    stats = file_stats(args.file)
    print(json.dumps(stats, indent=2) if args.json else format_stats(stats))
    return 0


def run_shuffle(args: argparse.Namespace) -> int:
    from pipelines.training.mixing import shuffle_file

    print(json.dumps(shuffle_file(args.input, args.output, args.seed, args.buckets), indent=2))
    return 0


def run_interleave(args: argparse.Namespace) -> int:
    from pipelines.training.mixing import interleave_files

    print(json.dumps(interleave_files(args.inputs, args.out, args.seed), indent=2))
    return 0
