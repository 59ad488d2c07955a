"""The `chesspipe` command line."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from pipelines.commands.options import check_file_roles
from pipelines.errors import ChesspipeError, Stopped, UsageError
from schemas.version import __version__

#: Subcommands and their modules, in the order `--help` lists them.
COMMANDS = {
    "ingest": "pipelines.commands.ingest",
    "book": "pipelines.commands.book",
    "sql": "pipelines.commands.sql",
    "warehouse": "pipelines.commands.warehouse",
    "evals": "pipelines.commands.evals",
    "suite": "pipelines.commands.suite",
    "search": "pipelines.commands.search",
    "build-month": "pipelines.commands.build_month",
    "backfill": "pipelines.commands.backfill",
    "serve-monthly": "pipelines.commands.serve_monthly",
    "endgames": "pipelines.commands.endgames",
    "export": "pipelines.commands.export",
    "training": "pipelines.commands.training",
    "probe": "pipelines.commands.probe",
    "syzygy": "pipelines.commands.syzygy",
    "chess960": "pipelines.commands.chess960",
    "serve": "pipelines.commands.serve",
    "explorer": "pipelines.commands.explorer",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Return the parser for every subcommand, or for the one named `only`."""
    parser = argparse.ArgumentParser(
        prog="chesspipe",
        description="Opening books and endgame training data from Lichess games.",
    )
    parser.add_argument("--version", action="version", version=f"chesspipe {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(module).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line (sys.argv when argv is None); return the exit status."""
    try:
        return _run(list(sys.argv[1:] if argv is None else argv))
    finally:
        if argv is None:
            # The program exits next: spare the collector a last walk over every object the
            # libraries made (about 10 ms).
            gc.freeze()


def show_notices(args: argparse.Namespace) -> None:
    """Write what the library says it is trying (a connection, a retry and its wait: the
    `pipelines` loggers) to stderr as `chesspipe: ...` lines: its warnings always, what it
    tries too where progress is shown (a terminal, or --progress), none with --quiet."""
    import logging

    if getattr(args, "quiet", False):
        level = logging.ERROR
    elif getattr(args, "progress", False) or sys.stderr.isatty():
        level = logging.INFO
    else:
        level = logging.WARNING
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("chesspipe: %(message)s"))
    logger = logging.getLogger("pipelines")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False  # not again through the root logger's handlers (Prefect's)


def _run(argv: list[str]) -> int:
    # No linear algebra here: without a BLAS thread pool, ingest can fork its workers.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # Only the chosen subcommand's module is imported: start-up stays light.
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(chosen)
    args = parser.parse_args(argv)
    show_notices(args)
    try:
        check_file_roles(args)
        status = args.handler(args)
    except ChesspipeError as exc:
        if _stop_asked() is not None:  # what the stop broke (a worker, a download) says so
            return _stopped()
        print(f"chesspipe: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        print("chesspipe: interrupted", file=sys.stderr)
        return 130
    except Stopped as exc:
        print(f"chesspipe: {exc}", file=sys.stderr)
        return 128 + exc.signum
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if _stop_asked() is not None:
            return _stopped()
        # What the OS says about a path (a file where a folder should be, and so on), in a line.
        reason = exc.strerror or str(exc)
        where = f"{exc.filename}: " if exc.filename is not None else ""
        print(f"chesspipe: error: {where}{reason}", file=sys.stderr)
        return 1
    except Exception as exc:
        if _stop_asked() is not None:
            return _stopped()  # a stop a library wrapped in an error of its own
        said = _database_error(exc)
        if said is None:
            raise
        print(f"chesspipe: error: {said}", file=sys.stderr)
        return 1
    return int(status or 0)


def _database_error(exc: Exception) -> str | None:
    """A DuckDB error no layer below turned into its own (out of memory, an I/O error in a
    spill) in one line, or None for any other error. DuckDB is not imported here: a command
    that never loaded it cannot have met its errors."""
    duckdb = sys.modules.get("duckdb")
    if duckdb is None or not isinstance(exc, duckdb.Error):
        return None
    from pipelines.warehouse.sql import duckdb_message

    return f"DuckDB: {duckdb_message(str(exc))}"


def _stop_asked() -> int | None:
    """The signal that asked the command to stop, if it was (stopping.stop_asked); a command
    that never imported `stopping` installed no handler, and was never asked. Not imported
    here: every command would pay its imports at start-up."""
    stopping = sys.modules.get("pipelines.commands.stopping")
    return None if stopping is None else stopping.stop_asked()


def _stopped() -> int:
    """Say that the command stopped at the signal that asked it to; return its exit status."""
    from pipelines.commands.stopping import stop_line

    signum = _stop_asked() or 0
    print(f"chesspipe: {stop_line(signum)}", file=sys.stderr)
    return 128 + signum


if __name__ == "__main__":
    raise SystemExit(main())
