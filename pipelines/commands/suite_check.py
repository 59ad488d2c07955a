"""`chesspipe suite check`: what an opening suite holds, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipelines.commands.options import existing_warehouse


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="count a suite's openings, plies, sides, duplicates, problems and evaluations",
        description="Read an opening suite (.epd or .pgn, or either zipped, as fishtest "
        "publishes them) and report its openings, their plies and sides to move, duplicate "
        "positions, lines that cannot be used (by reason), and the spread of its evaluations, "
        "of the bias for White and of the engine's draw rates (from the suite's ce and "
        'c2 "wdl ..." opcodes, or from --evals).',
    )
    parser.add_argument("suite", type=Path, metavar="SUITE")
    parser.add_argument("--evals", type=Path, help="take evaluations from this warehouse's store")
    parser.add_argument("--json", action="store_true", help="the report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.suites.check import check_suite

    if args.evals is not None:
        existing_warehouse(args.evals)
    report = check_suite(args.suite, evals=args.evals)
    print(json.dumps(report.to_json(), indent=2) if args.json else report.table())
    return 0
