"""`chesspipe book merge`: two Polyglot books as one, as PolyGlot's merge-book does it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipelines.commands.options import add_file_roles


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="merge two Polyglot books into one (PolyGlot merge-book)",
        description="Write OUT with the entries of IN1 and IN2 in key order, as PolyGlot's "
        "merge-book does: where a position is in both books, IN1's moves come first, a move in "
        "both gets the sum of its weights (16 bits, as PolyGlot adds them), IN2's other moves "
        "follow.",
    )
    parser.add_argument("in1", type=Path, metavar="IN1")
    parser.add_argument("in2", type=Path, metavar="IN2")
    parser.add_argument("out", type=Path, metavar="OUT")
    add_file_roles(parser, reads=("in1", "in2"), writes=("out",))
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.books.merge import merge_books

    merged = merge_books(args.in1, args.in2, args.out)
    summary = merged._asdict() | {"out": str(merged.out)}
    print(json.dumps(summary, indent=2))
    return 0
