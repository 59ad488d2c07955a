"""`chesspipe evals import`: the Lichess evaluation dump into the evaluation store."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    from pipelines.evals.settings import ImportSettings

    default = ImportSettings()
    parser = subparsers.add_parser(
        "import",
        help="import the Lichess evaluation dump (lichess_db_eval.jsonl.zst, or its Parquet form)",
        description="Stream DUMP (JSON lines, zstd-compressed or plain, or the Parquet form with "
        "columns fen, line, depth, knodes, cp, mate) into the warehouse's evaluation store: of "
        "each position the deepest evaluation's first line. Lines that cannot be used are "
        "counted by reason (not_json, bad_fen, no_evaluation, bad_value, illegal_line, "
        "mate_contradicts); memory stays bounded.",
    )
    parser.add_argument("dump", type=Path, metavar="DUMP")
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument(
        "--point-of-view",
        choices=("white", "side-to-move"),
        default=default.point_of_view,
        help=f"whose view the dump's scores are from ({default.point_of_view}, as Lichess's)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.commands.options import existing_warehouse, settings_as_flags
    from pipelines.evals.lichess_import import import_dump
    from pipelines.evals.settings import ImportSettings

    existing_warehouse(args.warehouse)
    with settings_as_flags():
        settings = ImportSettings(point_of_view=args.point_of_view)
    result = import_dump(args.warehouse, args.dump, settings)
    print(json.dumps(result.to_json(), indent=2))
    return 0
