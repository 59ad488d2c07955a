"""`chesspipe training`: the trainers' file tools for .plain and chained .binpack files."""

from __future__ import annotations

import argparse
import functools
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.commands.options import (
    add_action,
    add_actions,
    add_file_roles,
    add_frame_workers_option,
    add_progress_options,
    int_range,
    integer,
    non_negative_int,
    positive_int,
)
from pipelines.sources.open import as_source

if TYPE_CHECKING:
    from pipelines.progress import ReadCallback

#: Pieces on a board, kings included.
_pieces = int_range(2, 32)


def register(subparsers: Any) -> None:
    actions = add_actions(
        subparsers,
        "training",
        dest="training_command",
        help="convert, describe, shuffle and mix .plain / .binpack training files",
    )

    _add_copy(
        actions,
        "convert",
        run_convert,
        help=".plain <-> .binpack, by extension",
        description="Copy every record of IN into OUT, the formats chosen by the extensions "
        "(.plain or .binpack; chained .binpack exactly as Stockfish's tools write it). "
        "Streams any size; OUT appears whole or not at all.",
    )

    stats = add_action(
        actions,
        "stats",
        run_stats,
        help="records, results, material, scores, checks, captures, plies",
        description="Count FILE's records by result (side to move), pieces on the board, "
        "score band and ply, and the shares in check and of captures.",
    )
    stats.add_argument("file", type=Path, metavar="FILE")
    stats.add_argument("--json", action="store_true", help="print JSON for a program")
    add_progress_options(stats)

    shuffle = _add_copy(
        actions,
        "shuffle",
        run_shuffle,
        help="shuffle the records, in bounded memory",
        description="Write IN's records to OUT in a random order fixed by --seed, through "
        "temporary bucket files beside OUT (memory holds one bucket).",
    )
    shuffle.add_argument("--seed", type=integer, required=True)
    shuffle.add_argument(
        "--buckets",
        type=positive_int,
        help="temporary buckets (default: about 250,000 records each)",
    )

    interleave = add_action(
        actions,
        "interleave",
        run_interleave,
        help="mix several files, each in proportion to its size",
        description="Mix the records of the inputs into OUT: each next record comes from an "
        "input with probability its remaining records / all remaining records (seeded); every "
        "input keeps its own order.",
    )
    interleave.add_argument("inputs", type=Path, nargs="+", metavar="IN")
    interleave.add_argument("--out", type=Path, required=True)
    add_file_roles(interleave, reads=("inputs",), writes=("out",))
    interleave.add_argument("--seed", type=integer, required=True)

    _add_from_games(actions)
    _add_filter(actions)
    _add_rescore(actions)
    for name, handler, about in _COPIES:
        _add_skip_bad(_add_copy(actions, name, handler, **about))


def _add_copy(actions: Any, name: str, handler: Any, **about: str) -> argparse.ArgumentParser:
    """Add an action that reads the training file IN and writes OUT (a progress bar over IN
    on a terminal, --progress and --quiet as ingest's)."""
    parser: argparse.ArgumentParser = add_action(actions, name, handler, **about)
    parser.add_argument("input", type=Path, metavar="IN")
    parser.add_argument("output", type=Path, metavar="OUT")
    add_file_roles(parser, reads=("input",), writes=("output",))
    add_progress_options(parser)
    return parser


@contextmanager
def _read_shown(args: argparse.Namespace) -> Iterator[ReadCallback | None]:
    """Yield the callback that draws a file read on the options' progress bar (None when
    quiet), the bar closed when the block ends."""
    from pipelines.commands.ingest import progress_shown
    from pipelines.progress import read_progress

    with progress_shown(args) as bar:
        yield read_progress(bar) if bar is not None else None


def _add_skip_bad(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--skip-bad",
        action="store_true",
        help="pass over bad input (a .plain record, the rest of a .binpack block or file) and "
        "count it, instead of failing",
    )


#: The loader's skip rates and thresholds of N (SkipSettings fields, --field-with-dashes): their
#: types and help.
_SKIPPING: tuple[tuple[str, Any, str], ...] = (
    (
        "random_fen_skipping",
        non_negative_int,
        "skip each position with probability N/(N+1) (0: none)",
    ),
    ("early_fen_skipping", integer, "skip plies 0..N (-1: none)"),
    (
        "simple_eval_skipping",
        integer,
        "skip positions whose material balance is under N in size (0 or less: none)",
    ),
)


def _add_skip_options(parser: argparse.ArgumentParser) -> None:
    """Add the skips of nnue-pytorch's loader (defaults: SkipSettings), as `filter` and
    `from-games` take them."""
    from pipelines.training.skip_settings import SkipSettings

    default = SkipSettings()
    parser.add_argument(
        "--filtered", action="store_true", help="skip positions in check and captures"
    )
    parser.add_argument(
        "--wld-filtered",
        action="store_true",
        help="skip at random by how unlikely the result is for the score (the loader's model)",
    )
    for field, kind, said in _SKIPPING:
        flag = "--" + field.replace("_", "-")
        parser.add_argument(
            flag, type=kind, default=getattr(default, field), metavar="N", help=said
        )
    parser.add_argument("--min-score", type=integer, default=default.min_score)
    parser.add_argument("--max-score", type=integer, default=default.max_score)
    parser.add_argument(
        "--min-pieces",
        type=_pieces,
        default=default.min_pieces,
        help=f"fewest pieces on the board, kings included ({default.min_pieces})",
    )
    parser.add_argument(
        "--max-pieces",
        type=_pieces,
        default=default.max_pieces,
        help=f"most pieces on the board ({default.max_pieces})",
    )
    parser.add_argument(
        "--seed", type=integer, default=default.seed, help="seed of the random skips (0)"
    )


def _add_filter(actions: Any) -> None:
    parser = _add_copy(
        actions,
        "filter",
        run_filter,
        help="drop the records nnue-pytorch's loader would skip",
        description="Write IN's records to OUT without those nnue-pytorch's data loader "
        "would skip with the same options (make_skip_predicate): always scores of VALUE_NONE "
        "(32002) and the loader's placeholder zeros; --filtered, --wld-filtered, "
        "--random-fen-skipping, --early-fen-skipping, --simple-eval-skipping as it names "
        "them; and score and piece-count ranges. Chains stay chains where the kept records "
        "follow one another.",
    )
    _add_skip_options(parser)
    _add_skip_bad(parser)


def _add_rescore(actions: Any) -> None:
    from pipelines.commands.options import add_table_options

    parser = _add_copy(
        actions,
        "rescore",
        run_rescore,
        help="results corrected by the tablebases, carried back along each game",
        description="Write IN's records to OUT with the results of positions the tables cover "
        "taken from the tables (50-move rule included) and carried back to the game's earlier "
        "positions; OUT.json counts what changed. Both whole or not at all.",
    )
    add_table_options(parser)
    parser.add_argument(
        "--tb-scores",
        action="store_true",
        help="covered positions also take the tablebase score (Stockfish's TB range)",
    )
    _add_skip_bad(parser)


def _add_from_games(actions: Any) -> None:
    from pipelines.commands.options import (
        add_allow_empty_option,
        add_filter_options,
        add_month_source,
        add_table_options,
    )

    parser = add_action(
        actions,
        "from-games",
        run_from_games,
        help="every position of a month's kept games, results rescored by the tablebases",
        description="Write every position of SOURCE's kept games as training records (score: "
        "the Lichess [%eval] after the move, from the mover's view; result: the game's, "
        "rescored from the first position the tables cover), less the positions the "
        "position filters drop and the records the loader's skips (as `training filter` "
        "takes them) drop. Writes OUT, OUT.lineage.parquet and the run manifest OUT.json, "
        "each whole or not at all.",
    )
    add_month_source(parser, "YYYY-MM of the games", metavar="SOURCE")
    parser.add_argument("--out", required=True, type=Path, help="FILE.binpack or FILE.plain")
    add_file_roles(parser, reads=("source",), writes=("out",))
    add_table_options(parser)
    parser.add_argument(
        "--no-tables", action="store_true", help="no rescoring: keep every game's own result"
    )
    add_filter_options(parser, from_position=False)  # (records replay from the start)
    add_allow_empty_option(parser, "write an empty training file")
    parser.add_argument(
        "--no-require-eval",
        dest="require_eval",
        action="store_false",
        help="keep games with moves lacking an eval (positions without a score are dropped)",
    )
    parser.add_argument("--skip-in-check", action="store_true", help="drop positions in check")
    parser.add_argument(
        "--skip-captures",
        action="store_true",
        help="drop positions whose move captures or promotes",
    )
    parser.add_argument(
        "--from-ply", type=non_negative_int, default=0, help="drop the first N plies (0)"
    )
    _add_skip_options(parser)
    add_frame_workers_option(parser)


class TableOutcomes:
    """The tablebases for rescoring, as the endgame labels read them.

    A position is covered when it has no castling rights, few enough pieces and every table
    it needs; its result is the WDL under the 50-move rule from DTZ and the halfmove clock
    (cursed wins and blessed losses are draws), its score the export's tablebase scheme.
    Probed by Fathom when installed (`backend`), else python-chess; tests hold both to
    python-chess's own prober.
    """

    def __init__(self, folders: list[Path], backend: str = "auto") -> None:
        from pipelines.endgames.labeller import open_backend
        from pipelines.endgames.tables import TableSet

        self.folders = [str(folder) for folder in folders]
        self.backend_name = backend
        self.tables = TableSet(folders)
        self.largest = self.tables.largest
        self.backend = open_backend(folders, backend)

    def outcome(self, board: Any) -> tuple[int, int] | None:
        from pipelines.endgames.export import result_of, score_of
        from pipelines.endgames.probing import TablebaseError, dtz_to_wdl

        try:
            # replayed games' positions are legal: no validity test needed
            self.tables.check(board, validated=True)
        except TablebaseError:
            return None
        if board.is_checkmate():
            return -1, -score_of(2, 1, "tb")
        if abs(self.backend.probe_wdl(board)) < 2:
            return 0, 0  # a draw, or a win or loss the 50-move rule draws at any clock
        tablebase = getattr(self.backend, "tablebase", None)  # python-chess: DTZ alone
        dtz = tablebase.probe_dtz(board) if tablebase is not None else self.backend.root(board).dtz
        wdl50 = dtz_to_wdl(dtz, board.halfmove_clock)
        return result_of(wdl50), score_of(wdl50, dtz, "tb")

    def close(self) -> None:
        self.backend.close()

    def __reduce__(self) -> tuple[Any, tuple[tuple[str, ...], str]]:
        # Sent to a worker process as where the tables are: each process opens them once.
        return _opened_outcomes, (tuple(self.folders), self.backend_name)


@functools.lru_cache(maxsize=4)
def _opened_outcomes(folders: tuple[str, ...], backend: str) -> TableOutcomes:
    """Return the tables of `folders`, opened once in this process."""
    return TableOutcomes([Path(folder) for folder in folders], backend)


def run_from_games(args: argparse.Namespace) -> int:
    from pipelines.commands.ingest import filter_from_args, progress_shown
    from pipelines.commands.options import as_said, settings_from_args
    from pipelines.errors import ChesspipeError
    from pipelines.games.game_filter import NothingKept
    from pipelines.training.from_games import export_games
    from pipelines.training.settings import FromGamesSettings
    from pipelines.training.skip_settings import SkipSettings

    skips = settings_from_args(SkipSettings, args)
    settings = settings_from_args(
        FromGamesSettings, args, rules=filter_from_args(args), skips=skips
    )
    outcomes = None
    folders: list[Path] = []
    if not args.no_tables:
        from pipelines.commands.endgames import table_folders

        folders = table_folders(args)
        outcomes = TableOutcomes(folders, args.backend)
    try:
        with progress_shown(args) as bar:
            manifest = export_games(
                as_source(args.source),
                args.month,
                args.out,
                settings,
                outcomes,
                [str(f) for f in folders],
                progress=bar,
                workers=args.workers or os.cpu_count() or 1,
                allow_empty=args.allow_empty,
            )
    except NothingKept as exc:
        raise ChesspipeError(as_said(exc)) from None
    finally:
        if outcomes is not None:
            outcomes.close()
    summary = manifest.to_json()
    shown = (
        "month",
        "output",
        "lineage",
        "games_read",
        "games_kept",
        "games_exported",
        "games_skipped",
        "results_changed",
        "records",
        "records_skipped",
        "seconds",
    )
    print(json.dumps({k: summary[k] for k in shown}, indent=2))
    return 0


def run_convert(args: argparse.Namespace) -> int:
    from pipelines.training.convert import convert

    with _read_shown(args) as progress:
        summary = convert(args.input, args.output, progress=progress)
    print(json.dumps(summary, indent=2))
    return 0


def run_stats(args: argparse.Namespace) -> int:
    from pipelines.training.stats import file_stats, format_stats

    with _read_shown(args) as progress:
        stats = file_stats(args.file, progress=progress)
    print(json.dumps(stats, indent=2) if args.json else format_stats(stats))
    return 0


def run_shuffle(args: argparse.Namespace) -> int:
    from pipelines.training.mixing import shuffle_file

    with _read_shown(args) as progress:
        summary = shuffle_file(args.input, args.output, args.seed, args.buckets, progress=progress)
    print(json.dumps(summary, indent=2))
    return 0


def run_interleave(args: argparse.Namespace) -> int:
    from pipelines.training.mixing import interleave_files

    print(json.dumps(interleave_files(args.inputs, args.out, args.seed), indent=2))
    return 0


def run_filter(args: argparse.Namespace) -> int:
    from pipelines.commands.options import settings_from_args
    from pipelines.training.filter import filter_file
    from pipelines.training.skip_settings import SkipSettings

    settings = settings_from_args(SkipSettings, args)
    with _read_shown(args) as progress:
        result = filter_file(
            args.input, args.output, settings, skip_bad=args.skip_bad, progress=progress
        )
    print(json.dumps(result.to_json(), indent=2))
    return 0


def run_rescore(args: argparse.Namespace) -> int:
    from pipelines.commands.endgames import table_folders
    from pipelines.training.rescore import rescore_file

    folders = table_folders(args)
    outcomes = TableOutcomes(folders, args.backend)
    try:
        with _read_shown(args) as progress:
            manifest = rescore_file(
                args.input,
                args.output,
                outcomes,
                [str(folder) for folder in folders],
                tb_scores=args.tb_scores,
                skip_bad=args.skip_bad,
                progress=progress,
            )
    finally:
        outcomes.close()
    print(json.dumps(manifest.to_json(), indent=2))
    return 0


def run_dedupe(args: argparse.Namespace) -> int:
    from pipelines.training.dedupe import dedupe_file

    with _read_shown(args) as progress:
        result = dedupe_file(args.input, args.output, skip_bad=args.skip_bad, progress=progress)
    print(json.dumps(result.to_json(), indent=2))
    return 0


def run_to_pgn(args: argparse.Namespace) -> int:
    from pipelines.training.to_pgn import to_pgn_file

    with _read_shown(args) as progress:
        result = to_pgn_file(args.input, args.output, skip_bad=args.skip_bad, progress=progress)
    print(json.dumps(result.to_json(), indent=2))
    return 0


#: The actions of IN and OUT whose one option is --skip-bad: name, handler, help and description.
_COPIES: tuple[tuple[str, Any, dict[str, str]], ...] = (
    (
        "dedupe",
        run_dedupe,
        {
            "help": "one record per position, the later kept, in bounded memory",
            "description": "Write the last record of each position of IN (pieces, side, "
            "castling, en passant) to OUT in file order, through sorted runs beside OUT.",
        },
    ),
    (
        "to-pgn",
        run_to_pgn,
        {
            "help": "the games of a training file as PGN",
            "description": "Write IN's games (records that follow one another) to OUT as PGN, "
            "each move's score in a comment.",
        },
    ),
)
