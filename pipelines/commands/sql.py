"""`chesspipe sql`: DuckDB over the warehouse."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    add_resources_options,
    positive_number,
    resources_from_args,
    stored_or_folder,
)
from pipelines.warehouse.sql import DEFAULT_TIMEOUT


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sql",
        help="run SQL over the move statistics (DuckDB)",
        description="Run a query with DuckDB. The view move_stats holds every month (with a "
        "month column); uci(move) shows a Polyglot move as UCI, hexkey(key) a key as hex. "
        "In chess terms: key_of_fen(fen), key_after(moves), fen_after(moves), san(move, fen) "
        "and the view openings (eco, name, pgn, key, plies, fen); see docs/sql.md.",
    )
    parser.add_argument("query")
    parser.add_argument(
        "--warehouse",
        required=True,
        type=stored_or_folder,
        help="a warehouse folder, or its URL in object storage (s3://...), read where it is",
    )
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument(
        "--allow-read",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="also let the query read this file or folder (repeatable); without it a query "
        "reads the warehouse's statistics and the bundled opening names, no other file",
    )
    parser.add_argument(
        "--allow-write",
        action="store_true",
        help="run any statement, on any file, with any setting (COPY ... TO, EXPORT, ATTACH, "
        "CREATE, SET, ...); without it a query only reads (SELECT, WITH, VALUES, DESCRIBE, "
        "SHOW, SUMMARIZE, EXPLAIN), cannot change a setting and cannot write a file",
    )
    parser.add_argument(
        "--timeout",
        type=positive_number,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"stop a query still running after this long (default {DEFAULT_TIMEOUT:g})",
    )
    add_resources_options(parser)
    parser.set_defaults(handler=run)


#: The search's functions, registered when a query names one (`chesspipe sql` starts light).
_SEARCH_TERMS = ("fen_at", "material_at", "matches_subfen", "scout")


def search_functions(query: str) -> tuple[Any, ...]:
    """The search's SQL functions (pipelines.search.sql) when the query calls one."""
    if not any(f"{name}(" in query.lower().replace(" (", "(") for name in _SEARCH_TERMS):
        return ()
    from pipelines.search.sql import SEARCH_FUNCTIONS

    return SEARCH_FUNCTIONS


def run(args: argparse.Namespace) -> int:
    from pipelines.errors import ChesspipeError
    from pipelines.warehouse.read_only import WriteNotAllowed
    from pipelines.warehouse.sql import ReadNotAllowed, run_query

    for extra in args.allow_read:
        if not extra.exists():
            raise ChesspipeError(f"--allow-read {extra}: no such file or folder")
    try:
        columns, rows = run_query(
            args.warehouse,
            args.query,
            allow_write=args.allow_write,
            allow_read=args.allow_read,
            timeout=args.timeout,
            resources=resources_from_args(args),
            functions=search_functions(args.query),
        )
    except WriteNotAllowed as exc:
        raise ChesspipeError(f"{exc} (pass --allow-write to run it)") from None
    except ReadNotAllowed as exc:
        raise ChesspipeError(f"{exc} (pass --allow-read PATH to let it)") from None
    except ValueError as exc:
        raise ChesspipeError(str(exc).splitlines()[0]) from None
    from pipelines.sources.object_store import is_remote
    from pipelines.warehouse.layout import available_months
    from pipelines.warehouse.sql import deep_lines
    from pipelines.warehouse.stored import stored_months

    remote = is_remote(args.warehouse)
    present = stored_months(args.warehouse) if remote else available_months(args.warehouse)
    if not present and "move_stats" in args.query.lower():
        print(
            f"chesspipe: warning: warehouse {args.warehouse} holds no month of move statistics "
            "yet: move_stats is empty (ingest a month first)",
            file=sys.stderr,
        )
    for deep in deep_lines(args.warehouse, args.query):
        months = ", ".join(deep.months) if len(deep.months) <= 3 else f"{len(deep.months)} months"
        print(
            f"chesspipe: warning: '{deep.line}' reaches ply {deep.plies}, and {months} counted "
            f"{deep.counted} plies at most: move_stats has no rows there (ingest with a larger "
            "--plies)",
            file=sys.stderr,
        )
    write_rows(columns, rows, args.format)
    return 0


def write_rows(columns: list[str], rows: list[tuple[Any, ...]], fmt: str) -> None:
    """Print a result as an aligned table, CSV (header then rows) or JSON (a list of objects)."""
    out = sys.stdout
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif fmt == "json":
        json.dump(
            [dict(zip(columns, row, strict=True)) for row in rows], out, default=str, indent=1
        )
        out.write("\n")
    else:
        cells = [[str(c) for c in columns]] + [
            ["NULL" if v is None else str(v) for v in row] for row in rows
        ]
        widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
        for n, row in enumerate(cells):
            out.write(
                "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n"
            )
            if n == 0:
                out.write("  ".join("-" * w for w in widths) + "\n")
        out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
