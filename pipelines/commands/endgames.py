"""`chesspipe endgames`: Syzygy-labelled endgame positions as Parquet."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    add_action,
    add_actions,
    add_allow_empty_option,
    add_file_roles,
    add_filter_options,
    add_frame_workers_option,
    add_month_source,
    add_progress_options,
    add_table_options,
    integer,
)
from pipelines.sources.open import as_source


def table_folders(args: argparse.Namespace) -> list[Path]:
    """Return the tablebase folders of --syzygy, else of SYZYGY_PATH."""
    from pipelines.endgames.tables import NoTablebasePath, syzygy_path
    from pipelines.errors import ChesspipeError

    try:
        return syzygy_path(args.syzygy)
    except NoTablebasePath:
        raise ChesspipeError("no tablebase folder: pass --syzygy DIR or set SYZYGY_PATH") from None


def add_overwrite_option(parser: argparse.ArgumentParser) -> None:
    """Add --overwrite: without it, a label set already in --out is never replaced."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a label set of the same name in --out (default: refuse)",
    )


@contextmanager
def _explain_existing() -> Iterator[None]:
    from pipelines.endgames.dataset import LabelSetExists
    from pipelines.errors import ChesspipeError

    try:
        yield
    except LabelSetExists as exc:
        raise ChesspipeError(
            f"{exc.path} exists: pass --overwrite to replace it, or choose another --out"
        ) from None


def register(subparsers: Any) -> None:
    actions = add_actions(
        subparsers,
        "endgames",
        dest="endgames_command",
        help="label endgame positions with Syzygy tablebases (Parquet)",
    )

    sample = add_action(
        actions,
        "sample",
        run_sample,
        help="uniformly random legal positions of given materials",
        description="Sample distinct, uniformly random legal positions of each material (no "
        "castling, no en passant), label them, and write OUT/sample-seedN.parquet + .json "
        "(never replacing one already there unless --overwrite).",
    )
    sample.add_argument("--materials", required=True, help="e.g. KRvKP:1000,KQvKR:500")
    sample.add_argument("--seed", type=integer, default=1)
    sample.add_argument("--out", required=True, type=Path)
    add_file_roles(sample, writes=("out",))
    add_table_options(sample)
    add_overwrite_option(sample)
    add_progress_options(sample)

    epd = add_action(
        actions,
        "from-epd",
        run_epd,
        help="positions of an EPD or FEN list",
        description="Label every position of FILE (one FEN or EPD a line; '#' comments) and "
        "write OUT/epd-STEM.parquet + .json.",
    )
    epd.add_argument("file", type=Path)
    epd.add_argument("--out", required=True, type=Path)
    add_file_roles(epd, reads=("file",), writes=("out",))
    epd.add_argument(
        "--skip-uncovered",
        action="store_true",
        help="skip positions the tables cannot label (counted) instead of failing",
    )
    add_table_options(epd)
    add_overwrite_option(epd)

    games = add_action(
        actions,
        "from-games",
        run_games,
        help="tablebase-phase positions of a month's kept games",
        description="Stream SOURCE (as for ingest), keep the games that pass the filter, replay "
        "those with enough captures to reach the tables, and label each distinct covered "
        "position once, with the move played, the result and the ply: OUT/games-MONTH.parquet.",
    )
    add_month_source(games, "YYYY-MM the games belong to")
    games.add_argument("--out", required=True, type=Path)
    add_file_roles(games, reads=("source",), writes=("out",))
    add_table_options(games)
    add_overwrite_option(games)
    add_filter_options(games)
    add_allow_empty_option(games, "write an empty label set")
    add_frame_workers_option(games)


def _report(manifest: Mapping[str, object], keys: tuple[str, ...]) -> None:
    print(json.dumps({k: manifest[k] for k in keys if k in manifest}, indent=2))


def run_sample(args: argparse.Namespace) -> int:
    import time

    from pipelines.commands.ingest import progress_shown
    from pipelines.endgames.build import sample_labels
    from pipelines.progress import bar

    with progress_shown(args) as shown, _explain_existing():
        started = time.monotonic()

        def progress(done: int, total: int) -> None:
            if shown is not None:
                line = f"{bar(done / total)} {done / total:6.1%}  {done:,} of {total:,} positions"
                shown.show(line, time.monotonic() - started, force=done == total)

        manifest = sample_labels(
            table_folders(args),
            args.materials,
            args.seed,
            args.out,
            args.backend,
            overwrite=args.overwrite,
            progress=progress,
        )
    _report(manifest, ("output", "rows", "backend", "seconds"))
    return 0


def run_epd(args: argparse.Namespace) -> int:
    from pipelines.endgames.build import epd_labels

    with _explain_existing():
        manifest = epd_labels(
            table_folders(args),
            args.file,
            args.out,
            args.backend,
            args.skip_uncovered,
            overwrite=args.overwrite,
        )
    _report(manifest, ("output", "rows", "uncovered_skipped", "backend", "seconds"))
    return 0


def run_games(args: argparse.Namespace) -> int:
    import os

    from pipelines.commands.ingest import filter_from_args, progress_shown
    from pipelines.commands.options import as_said
    from pipelines.endgames.build import game_labels
    from pipelines.errors import ChesspipeError
    from pipelines.games.game_filter import NothingKept

    folders = table_folders(args)
    try:
        with progress_shown(args) as bar, _explain_existing():
            manifest = game_labels(
                folders,
                as_source(args.source),
                args.month,
                args.out,
                filter_from_args(args),
                args.backend,
                bar,
                overwrite=args.overwrite,
                allow_empty=args.allow_empty,
                workers=args.workers or os.cpu_count() or 1,
            )
    except NothingKept as exc:
        raise ChesspipeError(as_said(exc)) from None
    _report(
        manifest,
        (
            "output",
            "rows",
            "games_read",
            "games_kept",
            "games_replayed",
            "games_reaching_tables",
            "backend",
            "seconds",
        ),
    )
    return 0
