"""`chesspipe chess960`: the FEN of a Chess960 starting position, by number."""

from __future__ import annotations

import argparse
from typing import Any

from pipelines.commands.options import int_range


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chess960",
        help="print the FEN of a Chess960 starting position",
        description="Print the FEN of Chess960 starting position N (0-959, Scharnagl's "
        "numbering; 518 is the standard position).",
    )
    parser.add_argument("number", type=int_range(0, 959), metavar="N")
    parser.add_argument(
        "--shredder", action="store_true", help="write castling rights as rook files (HAha)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from engine.chess960 import start_fen
    from pipelines.errors import ChesspipeError

    try:
        print(start_fen(args.number, shredder=args.shredder))
    except ValueError as exc:
        raise ChesspipeError(str(exc)) from None
    return 0
