"""`chesspipe book dump`: a book's lines as PGN, the heaviest first."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipelines.books.settings import DUMP_MOST_PLIES, DumpSettings
from pipelines.commands.options import add_file_roles, positive_int


def register(subparsers: Any) -> None:
    default = DumpSettings()
    parser = subparsers.add_parser(
        "dump",
        help="write a book's lines as PGN, the heaviest first",
        description="Write every line of the book from the start position (or --fen / --moves) "
        "as a PGN game, following the heaviest moves first; each move's comment gives its "
        "weight and its share of the position's weights. A line ends at --depth, where the book "
        "has no move, or at a position an earlier line already followed (a transposition).",
    )
    parser.add_argument("book", type=Path)
    parser.add_argument("--out", type=Path, help="the PGN file to write (standard output)")
    add_file_roles(parser, reads=("book",), writes=("out",))
    parser.add_argument(
        "--depth",
        type=positive_int,
        default=default.plies,
        help=f"plies per line, at most {DUMP_MOST_PLIES} ({default.plies})",
    )
    parser.add_argument(
        "--min-weight",
        type=positive_int,
        default=default.min_weight,
        help=f"follow only moves of at least this weight ({default.min_weight})",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--fen", help="start from this position")
    where.add_argument("--moves", help='start after these moves, e.g. "1. e4 c5 2. Nf3"')
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from pipelines.books.dump import write_dump
    from pipelines.books.show import position_from
    from pipelines.commands.options import settings_as_flags

    with settings_as_flags():
        settings = DumpSettings(args.depth, args.min_weight)
    board = position_from(args.fen, args.moves)
    dump = write_dump(args.book, args.out, board=board, settings=settings)
    if dump.lines == 0:
        print(
            f"chesspipe: warning: the book has no move of weight {settings.min_weight} or more "
            "in this position: no lines",
            file=sys.stderr,
        )
    if dump.out is not None:
        print(f"{dump.lines} lines written to {dump.out}", file=sys.stderr)
    return 0
