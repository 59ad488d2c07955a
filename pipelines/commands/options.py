"""What the subcommands share about options, in one place: the argparse `type=` checks (every
command reads numbers alike), the groups of options several subcommands add (`add_*`: their
defaults read from the settings that own them, imported when a parser is made), the flag of
each setting (`SETTING_FLAGS`: a settings error names the flag, not the setting) and the flag a
library error points to (`as_said`): library messages name no flag, the command line does."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from pipelines.errors import ChesspipeError, CutShort, SettingError

T = TypeVar("T")

_INTEGER = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: int() also takes "３" and "٣"
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def integer(text: str) -> int:
    """Any integer (a seed), in ASCII digits."""
    if not _INTEGER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    return int(text)


def positive_int(text: str) -> int:
    """An integer of at least 1."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An integer of at least 0."""
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text!r}")
    return value


def usable_cores() -> int:
    """The cores this process may run on."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def workers(text: str) -> int:
    """A number of processes (or engines) working at once, at least 1 and at most the cores
    this process may use: more only share the same cores (1,000 took minutes to start); a
    larger number is cut to the cores, saying so on stderr."""
    import sys

    value = positive_int(text)
    cores = usable_cores()
    if value > cores:
        print(
            f"chesspipe: --workers {value} is more than the {cores} cores here: {cores} used",
            file=sys.stderr,
        )
        return cores
    return value


def fraction(text: str) -> float:
    """A number from 0 to 1."""
    if not _NUMBER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    value = float(text)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text!r}")
    return value


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An integer from `low` to `high` (both included)."""

    def check(text: str) -> int:
        value = integer(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {text!r}")
        return value

    check.__name__ = f"int_range({low}, {high})"
    return check


#: A TCP port to listen on.
port = int_range(1, 65535)


def positive_number(text: str) -> float:
    """A finite number above 0 (seconds, say)."""
    if not _NUMBER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    value = float(text)
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f"must be above 0, got {text!r}")
    return value


# Commands of several actions.


def add_actions(
    subparsers: Any, name: str, *, dest: str, metavar: str | None = "ACTION", **about: str
) -> Any:
    """Add the command `name` (`about`: its help and description), whose subcommands are its
    actions (the one chosen stored as `dest`); return what its actions are added to."""
    parser = subparsers.add_parser(name, **about)
    return parser.add_subparsers(dest=dest, metavar=metavar, required=True)


def add_action(actions: Any, name: str, handler: Callable[..., int], **about: str) -> Any:
    """Add the action `name` (`about`: its help and description) that `handler` runs; return
    its parser."""
    parser = actions.add_parser(name, **about)
    parser.set_defaults(handler=handler)
    return parser


# The files a command reads and those it writes.


def add_file_roles(
    parser: argparse.ArgumentParser, *, reads: tuple[str, ...] = (), writes: tuple[str, ...]
) -> None:
    """Say which of a command's arguments (their `dest`, added before) name files or folders
    it reads and which name what it writes; before the command runs, `check_file_roles`
    refuses an output that is one of its inputs or lies in a warehouse's data."""
    labels = {}
    for action in parser._actions:
        if action.dest in (*reads, *writes):
            metavar = action.metavar if isinstance(action.metavar, str) else None
            labels[action.dest] = (
                action.option_strings[0]
                if action.option_strings
                else metavar or action.dest.upper()
            )
    missing = set(reads + writes) - set(labels)
    if missing:
        raise ValueError(f"{parser.prog} has no argument {', '.join(sorted(missing))}")
    parser.set_defaults(
        file_reads=tuple((dest, labels[dest]) for dest in reads),
        file_writes=tuple((dest, labels[dest]) for dest in writes),
    )


#: The arguments that name a warehouse (statistics, explorer, evaluations) on every command.
WAREHOUSE_ARGUMENTS = ("warehouse", "masters", "evals")


def _paths(value: object) -> list[str]:
    """The local paths an argument's value names: none for None, '-' (standard input or
    output) or a URL."""
    values = value if isinstance(value, list | tuple) else [value]
    return [str(v) for v in values if v is not None and str(v) != "-" and "://" not in str(v)]


def check_file_roles(args: argparse.Namespace) -> None:
    """Refuse (ChesspipeError) an output of the command that is the same file as one of its
    inputs (hard links and symlinks included), or that lies inside a warehouse's data folders
    (`move_stats/`, `explorer/`, `evals/`, ...), which only the runs that own them write; and a
    warehouse path that DuckDB would read as a pattern, before anything is written there."""
    import os

    from pipelines.warehouse.layout import check_no_pattern, data_folder_holding

    for dest in WAREHOUSE_ARGUMENTS:  # written there, or read: never a pattern for DuckDB
        for path in _paths(getattr(args, dest, None)):
            check_no_pattern(path)

    reads = [
        (label, path)
        for dest, label in getattr(args, "file_reads", ())
        for path in _paths(getattr(args, dest))
    ]
    for dest, label in getattr(args, "file_writes", ()):
        for out in _paths(getattr(args, dest)):
            for read_label, read in reads:
                try:
                    same = os.path.samefile(out, read)
                except (OSError, ValueError):
                    continue  # one of them does not exist (yet): not the same file
                if same:
                    raise ChesspipeError(
                        f"{label} {out} is the input {read_label} {read}: an output never "
                        "replaces what the command reads"
                    )
            folder = data_folder_holding(Path(out))
            if folder is not None:
                raise ChesspipeError(
                    f"{out} lies in the warehouse data folder {folder}, which only the runs "
                    f"that own it write; give {label} a path outside it"
                )


# Groups of options several subcommands add.


def add_resources_options(parser: argparse.ArgumentParser) -> None:
    """Add --memory-limit and --temp-dir, what DuckDB may use (defaults: QueryResources)."""
    parser.add_argument(
        "--memory-limit",
        metavar="SIZE",
        help="memory DuckDB may hold before it spills to disk, as 4GB or 512MiB (default: half "
        "of this machine's)",
    )
    parser.add_argument(
        "--temp-dir",
        type=Path,
        metavar="DIR",
        help="where DuckDB spills past its memory limit: a private folder made in DIR for the "
        "run, removed after (default: the system's temp folder)",
    )


def resources_from_args(args: argparse.Namespace) -> Any:
    """The QueryResources of --memory-limit and --temp-dir."""
    from pipelines.warehouse.resources import QueryResources, parse_size

    limit = parse_size(args.memory_limit) if args.memory_limit is not None else None
    return QueryResources(limit, args.temp_dir)


def stored_or_folder(value: str) -> Path | str:
    """A warehouse to read: its URL in object storage (s3://...) as is, else a folder."""
    from pipelines.sources.object_store import is_remote

    return value if is_remote(value) else Path(value)


def existing_warehouse(path: Path) -> Path:
    """Return `path` when it is a folder (a warehouse), else raise an error naming it."""
    if not path.is_dir():
        raise ChesspipeError(f"{path}: no such warehouse folder")
    return path


def add_evals_view_option(parser: argparse.ArgumentParser) -> None:
    """`--evals DIR` of the commands that show a book's moves (`book show`, `book report`)."""
    parser.add_argument(
        "--evals",
        type=Path,
        help="each move's evaluation (after it, from the mover's view) from this warehouse's "
        "evaluation store; by default from the statistics' warehouse, when it holds one",
    )


def evals_view_warehouse(args: argparse.Namespace, statistics: Any) -> Path | None:
    """The warehouse whose evaluations a book view shows: `--evals`, else the statistics'
    (a BookStatistics, or None)."""
    if args.evals is not None:
        return existing_warehouse(args.evals)
    return statistics.warehouse if statistics is not None else None


def add_month_source(
    parser: argparse.ArgumentParser, month_help: str, *, metavar: str | None = None
) -> None:
    """Add SOURCE, a month's games as ingest reads them (several read as one), and --month,
    the month (YYYY-MM)."""
    parser.add_argument("source", nargs="+", metavar=metavar or "SOURCE")
    parser.add_argument("--month", required=True, help=month_help)


def add_partition_options(parser: argparse.ArgumentParser, *, by_date: str) -> None:
    """Add SOURCE, where its games go (--month, a label; or --month-by date, each game into
    the month its Date tag names: `by_date` says what for) and --warehouse, of the commands
    that write months of the warehouse from games (ingest, explorer index)."""
    parser.add_argument(
        "source",
        nargs="+",
        metavar="SOURCE",
        help="games: a file, a folder or a glob of files ('**' recurses), '-', a URL or "
        "lichess:YYYY-MM; several files, folders or globs are read as one, in that order",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--month", help="YYYY-MM partition to write (a label: any source)")
    where.add_argument(
        "--month-by",
        choices=["date"],
        help="date: each game into the month its Date tag names (a year only: the year's "
        f"January, YYYY-01; no year: 0000-01), {by_date}",
    )
    parser.add_argument("--warehouse", required=True, type=Path)


def add_filter_options(parser: argparse.ArgumentParser, *, from_position: bool = True) -> None:
    """Add the game filter's options (defaults: GameFilter) and the progress options;
    `--from-position` where the command replays games from their FEN."""
    from pipelines.games.game_filter import VARIANTS, GameFilter
    from schemas.speed import Speed

    default = GameFilter()
    parser.add_argument(
        "--min-rating",
        type=non_negative_int,
        default=default.min_rating,
        help=f"both players at least ({default.min_rating}); 0 also keeps games without ratings",
    )
    parser.add_argument(
        "--speeds",
        default=",".join(speed for speed in Speed if speed in default.speeds),
        help=f"comma-separated speeds to keep, of {','.join(Speed)} (otb: no TimeControl, or "
        "one not read), or all",
    )
    parser.add_argument("--allow-bots", action="store_true", help="keep games with BOT accounts")
    parser.add_argument("--variant", choices=VARIANTS, default=default.variant)
    if from_position:
        parser.add_argument(
            "--from-position",
            choices=("drop", "keep"),
            default=default.from_position,
            help="Standard games that start from a FEN (engine matches from an opening suite): "
            f"dropped, or counted from their position ({default.from_position})",
        )
    add_progress_options(parser)


def add_progress_options(parser: argparse.ArgumentParser) -> None:
    """Add --progress and --quiet (a progress line on a terminal by default)."""
    parser.add_argument(
        "--progress", action="store_true", help="show progress even when not a terminal"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def add_ingest_options(parser: argparse.ArgumentParser) -> None:
    """Add the filter and counting options shared by ingest and build-month."""
    from pipelines.ingest.settings import IngestSettings

    add_filter_options(parser)
    plies = IngestSettings().plies
    # Checked by IngestSettings too, whose error names the option (settings_as_flags).
    parser.add_argument(
        "--plies", type=positive_int, default=plies, help=f"plies counted per game ({plies})"
    )
    parser.add_argument(
        "--keep-partial",
        action="store_true",
        help="on a truncated or corrupt stream, publish what was read (marked partial)",
    )
    add_allow_empty_option(parser, "publish an empty month")
    parser.add_argument(
        "--workers",
        type=workers,
        default=None,
        help="processes that scan and count (default: all cores; 1: this process alone)",
    )


def add_allow_empty_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add --allow-empty: a run that keeps no game succeeds (otherwise it fails, naming why
    the games were dropped and the option that keeps them)."""
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help=f"when no game is kept, {what} and succeed (otherwise it fails, naming why the "
        "games were dropped)",
    )


def add_frame_workers_option(parser: argparse.ArgumentParser) -> None:
    """Add --workers for the commands that read pzstd-style files by units of frames
    (training from-games, endgames from-games, explorer index --month)."""
    parser.add_argument(
        "--workers",
        type=workers,
        default=None,
        help="processes for pzstd-framed files (default: all cores; 1 reads in order)",
    )


def add_book_options(parser: argparse.ArgumentParser) -> None:
    """Add the book options shared by book build and build-month (defaults: BookSettings)."""
    from pipelines.books.settings import BookSettings

    default = BookSettings()
    parser.add_argument(
        "--min-games",
        type=positive_int,
        default=default.min_games,
        help=f"games a move needs ({default.min_games})",
    )
    parser.add_argument(
        "--min-score",
        type=fraction,
        default=default.min_score,
        help=f"score a move needs ({default.min_score})",
    )
    parser.add_argument("--book-speeds", default=None, help="only these speeds (comma-separated)")
    parser.add_argument(
        "--min-band", type=non_negative_int, default=None, help="only rating bands >= this"
    )


def add_build_options(parser: argparse.ArgumentParser) -> None:
    """Add the ingest, book and download options and --force, shared by build-month, backfill
    and serve-monthly."""
    add_ingest_options(parser)
    add_book_options(parser)
    add_download_options(parser)
    add_no_explorer_option(parser)
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")


def add_no_explorer_option(parser: argparse.ArgumentParser) -> None:
    """Add --no-explorer, shared by ingest and the builds."""
    parser.add_argument(
        "--no-explorer",
        action="store_true",
        help="do not index the month for the explorer (chesspipe serve's games, players and "
        "plies 21-50: by default indexed from the games ingest keeps and published with the "
        "statistics)",
    )
    add_no_games_option(parser)


def add_no_games_option(parser: argparse.ArgumentParser) -> None:
    """Add --no-games, shared by explorer index, ingest and the builds."""
    parser.add_argument(
        "--no-games",
        action="store_true",
        help="keep the explorer's game records without their moves (about 110 bytes a game "
        "less; `chesspipe search` then has nothing to replay in the month)",
    )


def add_download_options(parser: argparse.ArgumentParser) -> None:
    """Add how a remote source is fetched (defaults: DownloadOptions)."""
    from pipelines.sources.options import DownloadOptions

    default = DownloadOptions()
    parser.add_argument(
        "--cache", type=Path, default=None, help="keep the compressed download in this folder"
    )
    parser.add_argument(
        "--no-verify", action="store_true", help="do not check URLs against sha256sums.txt"
    )
    parser.add_argument(
        "--retries",
        type=non_negative_int,
        default=default.retries,
        help=f"retries after a failure ({default.retries})",
    )
    parser.add_argument(
        "--timeout",
        type=positive_number,
        default=default.timeout,
        help=f"network timeout ({default.timeout:g} s)",
    )


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """Add --verbose (Prefect's log lines on the terminal) to a command that runs a flow."""
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show Prefect's log lines (flow and task runs); by default only its warnings and "
        "errors reach the terminal, and with --quiet only its errors",
    )


def add_table_options(parser: argparse.ArgumentParser) -> None:
    """Add --syzygy and --backend (the labelling commands, probe, training from-games)."""
    parser.add_argument(
        "--syzygy",
        help="tablebase folder(s), joined by ':' (default: the SYZYGY_PATH variable)",
    )
    parser.add_argument(
        "--backend",
        choices=("auto", "python", "fathom"),
        default="auto",
        help="prober: python-chess, Fathom (libfathom), or Fathom when installed (auto)",
    )


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """Add the engine, its limit and its workers (defaults: AnalysisSettings), for the
    commands that run a UCI engine."""
    from pipelines.evals.settings import DEFAULT_NODES, AnalysisSettings

    default = AnalysisSettings()
    parser.add_argument(
        "--engine", required=True, help="a UCI engine: a path, or a program on PATH (stockfish)"
    )
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument(
        "--nodes", type=positive_int, help=f"nodes per position ({DEFAULT_NODES} by default)"
    )
    limit.add_argument("--depth", type=int_range(1, 245), help="plies per position")
    limit.add_argument("--movetime", type=positive_int, help="milliseconds per position")
    parser.add_argument(
        "--workers",
        type=workers,
        default=default.workers,
        help=f"engines run at once, one thread each ({default.workers})",
    )
    parser.add_argument(
        "--hash", type=positive_int, default=default.hash_mb, help="each engine's hash in MB"
    )


def add_locations(parser: argparse.ArgumentParser) -> None:
    """Add --warehouse and --books of the commands that build months (local or remote)."""
    parser.add_argument("--warehouse", required=True, help="folder or s3://... URL")
    parser.add_argument("--books", required=True, help="folder or s3://... URL")


def add_source_template(parser: argparse.ArgumentParser) -> None:
    """Add --source, the template of many months' sources."""
    from pipelines.monthly.schedule import SOURCE_TEMPLATE

    parser.add_argument("--source", default=SOURCE_TEMPLATE, help="template with {month}")


#: The flag that sets each setting, by "Settings.field" (the settings dataclass's name): what
#: a command calls a setting in its messages. A setting without a flag here keeps its name.
SETTING_FLAGS = {
    "GameFilter.min_rating": "--min-rating",
    "GameFilter.speeds": "--speeds",
    "GameFilter.allow_bots": "--allow-bots",
    "GameFilter.variant": "--variant",
    "GameFilter.from_position": "--from-position",
    "IngestSettings.plies": "--plies",
    "ExplorerSettings.plies": "--plies",
    "BookSettings.min_games": "--min-games",
    "BookSettings.min_score": "--min-score",
    "BookSettings.speeds": "--book-speeds",
    "BookSettings.min_band": "--min-band",
    "ReportSettings.plies": "--plies",
    "ReportSettings.width": "--width",
    "ReportSettings.max_plies": "--max-plies",
    "ReportSettings.max_positions": "--max-positions",
    "DumpSettings.plies": "--depth",
    "DumpSettings.min_weight": "--min-weight",
    "SkipSettings.random_fen_skipping": "--random-fen-skipping",
    "SkipSettings.early_fen_skipping": "--early-fen-skipping",
    "SkipSettings.min_score": "--min-score",
    "SkipSettings.max_score": "--max-score",
    "SkipSettings.min_pieces": "--min-pieces",
    "SkipSettings.max_pieces": "--max-pieces",
    "AnalysisSettings.nodes": "--nodes",
    "AnalysisSettings.depth": "--depth",
    "AnalysisSettings.movetime": "--movetime",
    "AnalysisSettings.workers": "--workers",
    "AnalysisSettings.hash_mb": "--hash",
    "PruneSettings.max_loss": "--max-loss",
    "PruneSettings.min_eval": "--min-eval",
    "CheckSettings.min_probability": "--min-probability",
    "CheckSettings.losing": "--losing",
    "CheckSettings.plies": "--plies",
    "ImportSettings.point_of_view": "--point-of-view",
    "SuiteSettings.first_ply": "--plies",
    "SuiteSettings.last_ply": "--plies",
    "SuiteSettings.min_games": "--min-games",
    "SuiteSettings.stop_early": "--stop-early",
    "SuiteSettings.side": "--side",
    "SuiteSettings.white_share": "--white-share",
    "SuiteSettings.count": "--count",
    "SuiteSettings.window": "--window",
    "SuiteSettings.draw_rate": "--draw-rate",
    "LearnSettings.min_games": "--min-games",
    "LearnSettings.draw_rate": "--draw-rate",
    "SearchSettings.speeds": "--speeds",
    "SearchSettings.min_rating": "--min-rating",
}


@contextmanager
def settings_as_flags() -> Iterator[None]:
    """Re-raise a SettingError as the command line's error, naming the setting's flag."""
    try:
        yield
    except SettingError as exc:
        raise ChesspipeError(exc.named(SETTING_FLAGS)) from None


def settings_from_args(
    kind: type[T], args: argparse.Namespace, fields: Iterable[str] | None = None, **given: Any
) -> T:
    """Return the settings `kind` (a dataclass) the options describe: each of `fields` (by
    default every field not `given`) the option of its name, the `given` ones as given; a
    SettingError is said by its flag (settings_as_flags)."""
    import dataclasses

    if fields is None:
        fields = [f.name for f in dataclasses.fields(cast(Any, kind)) if f.name not in given]
    with settings_as_flags():
        return kind(**given, **{name: getattr(args, name) for name in fields})


#: What the command line adds to the message of a library error that a flag would have avoided.
FLAG_HINTS: tuple[tuple[type[ChesspipeError], str], ...] = (
    (CutShort, " (--keep-partial keeps what was read)"),
)


def _flag_hints() -> tuple[tuple[type[ChesspipeError], str], ...]:
    """FLAG_HINTS, and the hints of errors whose rooms a command may not import otherwise
    (imported once an error is being said)."""
    from pipelines.books.build import EmptyBook
    from pipelines.games.game_filter import NothingKept

    return (
        *FLAG_HINTS,
        (NothingKept, " (--allow-empty accepts an empty result)"),
        (EmptyBook, " (--allow-empty accepts it: no book is published then)"),
    )


@contextmanager
def said_as_flags(*kinds: type[ChesspipeError]) -> Iterator[None]:
    """Re-raise a library error of `kinds` as the command line says it (as_said): for the
    errors a command has the flags of."""
    try:
        yield
    except kinds as exc:
        raise ChesspipeError(as_said(exc)) from None


def as_said(error: BaseException) -> str:
    """Return a library error's message as the command line says it: each setting it names
    called by its flag (an error with a `named` method: SettingError, NothingKept, EmptyBook),
    with the flag that would have avoided it, if one would."""
    named = getattr(error, "named", None)
    message = named(SETTING_FLAGS) if callable(named) else str(error)
    for kind, hint in _flag_hints():
        if isinstance(error, kind):
            return f"{message}{hint}"
    return message
