"""`chesspipe probe`: what the Syzygy tables say about one position."""

from __future__ import annotations

import argparse
from typing import Any

from pipelines.commands.endgames import table_folders
from pipelines.commands.options import add_table_options


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "probe",
        help="WDL, DTZ50 and the DTZ-optimal line of a position, like probetool",
        description="Print a board diagram, WDL in words, DTZ50 and the DTZ-optimal mating "
        "line (PGN with a FEN tag) of FEN. Tables come from --syzygy, else SYZYGY_PATH.",
    )
    parser.add_argument("fen", help="the position, as a FEN (quote it)")
    parser.add_argument("--uci", "-u", action="store_true", help="moves in UCI, not SAN")
    parser.add_argument("-r", "--ranks", action="store_true", help="also list ranked root moves")
    add_table_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.endgames.labeller import Labeller
    from pipelines.endgames.probe import format_report, probe

    with Labeller(table_folders(args), args.backend) as labeller:
        report = probe(labeller, args.fen)
        print(format_report(report, len(labeller.tables.tables), args.uci, args.ranks))
    return 0
