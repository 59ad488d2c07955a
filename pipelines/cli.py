"""The `chesspipe` command line."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pipelines import __version__
from pipelines.errors import ChesspipeError

#: Subcommand modules, in the order `--help` lists them.
COMMAND_MODULES = (
    "pipelines.commands.ingest",
    "pipelines.commands.book",
    "pipelines.commands.sql",
    "pipelines.commands.build_month",
    "pipelines.commands.backfill",
    "pipelines.commands.serve_monthly",
    "pipelines.commands.endgames",
    "pipelines.commands.export",
    "pipelines.commands.probe",
    "pipelines.commands.syzygy",
    "pipelines.commands.chess960",
)


def build_parser() -> argparse.ArgumentParser:
    """Return the parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="chesspipe",
        description="Opening books and endgame training data from Lichess games.",
    )
    parser.add_argument("--version", action="version", version=f"chesspipe {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.handler(args)
    except ChesspipeError as exc:
        print(f"chesspipe: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("chesspipe: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return int(status or 0)


if __name__ == "__main__":
    raise SystemExit(main())
