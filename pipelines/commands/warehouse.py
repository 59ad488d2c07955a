"""`chesspipe warehouse check`: dead runs' leftovers, partitions that disagree with manifests."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "warehouse",
        help="check a warehouse folder (and repair what is safe to repair)",
        description="Tools for the warehouse folder.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="list stale staging, temporary files, partitions and manifests that disagree",
        description="List, one line each, the staging folders and temporary files dead runs "
        "left, partitions without a manifest or whose manifest's output_sha256 does not match, "
        "and manifests without a partition. Exit 1 if any problem remains, 0 if clean. "
        "--repair removes stale staging and temporary files under each month's lock (a month in "
        "use is skipped); partitions and manifests are never removed: re-ingest those months.",
    )
    check.add_argument("warehouse", type=Path, metavar="DIR")
    check.add_argument("--repair", action="store_true", help="remove what is safe to remove")
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    from pipelines.errors import ChesspipeError
    from pipelines.warehouse.check import check_warehouse

    if not args.warehouse.is_dir():
        raise ChesspipeError(f"{args.warehouse}: no such warehouse folder")
    findings = check_warehouse(args.warehouse, repair=args.repair)
    for finding in findings:
        sys.stdout.write(finding.line() + "\n")
    return 1 if any(not f.repaired for f in findings) else 0
