"""One error for a bad setting: settings name the setting, the command line names its flag."""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.books.settings import BookSettings, DumpSettings, ReportSettings
from pipelines.commands.options import SETTING_FLAGS, settings_as_flags
from pipelines.errors import ChesspipeError, SettingError
from pipelines.evals.settings import AnalysisSettings, CheckSettings, ImportSettings, PruneSettings
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.settings import IngestSettings
from pipelines.search.games import SearchSettings
from pipelines.suites.settings import LearnSettings, SuiteSettings
from pipelines.training.settings import FromGamesSettings
from pipelines.training.skip_settings import SkipSettings
from tests.conftest import run_cli

SETTINGS = (
    GameFilter, IngestSettings, BookSettings, ReportSettings, DumpSettings, ExplorerSettings,
    SkipSettings, AnalysisSettings, ImportSettings, PruneSettings, CheckSettings,
    SuiteSettings, LearnSettings, SearchSettings,
)  # fmt: skip


@pytest.mark.parametrize(
    ("make", "field", "library", "command"),
    [
        (lambda: ExplorerSettings(plies=0), "plies",
         "plies must be at least 1 (or None: every ply), not 0",
         "--plies must be at least 1 (or None: every ply), not 0"),
        (lambda: IngestSettings(plies=0), "plies", "plies must be at least 1",
         "--plies must be at least 1"),
        (lambda: BookSettings(min_games=0), "min_games", "min_games must be at least 1",
         "--min-games must be at least 1"),
        (lambda: DumpSettings(plies=0), "plies", "plies must be from 1 to 400",
         "--depth must be from 1 to 400"),
        (lambda: ReportSettings(max_plies=-1), "plies",
         "plies and max_positions must be at least 1, max_plies at least 0",
         "--plies and --max-positions must be at least 1, --max-plies at least 0"),
        (lambda: GameFilter(speeds=frozenset({"hyper"})), "speeds",
         "unknown speed(s) ['hyper']; choose from ultrabullet, bullet, blitz, rapid, classical, "
         "correspondence, otb or all", None),
        (lambda: FromGamesSettings(from_ply=-1), "from_ply", "from_ply must be 0 or more", None),
        (lambda: SkipSettings(min_pieces=9, max_pieces=8), "min_pieces",
         "pieces: need 2 <= min_pieces <= max_pieces <= 32",
         "pieces: need 2 <= --min-pieces <= --max-pieces <= 32"),
    ],
)  # fmt: skip
def test_a_bad_setting_is_named_by_the_library_and_by_its_flag(
    make: Callable[[], object], field: str, library: str, command: str | None
) -> None:
    with pytest.raises(SettingError) as raised:
        make()
    error = raised.value
    assert isinstance(error, ChesspipeError) and isinstance(error, ValueError)
    assert (error.field, str(error)) == (field, library)
    assert str(pickle.loads(pickle.dumps(error))) == library
    with pytest.raises(ChesspipeError) as shown, settings_as_flags():
        make()
    assert str(shown.value) == (command or library)


def test_every_flag_of_the_table_names_a_setting_that_exists() -> None:
    fields = {f"{cls.__name__}.{f.name}" for cls in SETTINGS for f in dataclasses.fields(cls)}
    assert set(SETTING_FLAGS) <= fields
    assert all(flag.startswith("--") for flag in SETTING_FLAGS.values())


@pytest.mark.slow
def test_a_backfill_failure_says_each_month_as_the_command_line_does() -> None:
    from pipelines.commands.options import as_said
    from pipelines.errors import CutShort
    from pipelines.flows.backfill import MonthsFailed

    failed = MonthsFailed(3, [("2021-10", CutShort("x.pgn was cut short; nothing published"))])
    library = "backfill: 1 of 3 months failed: 2021-10 (x.pgn was cut short; nothing published)"
    assert str(failed) == library
    assert str(pickle.loads(pickle.dumps(failed))) == library
    assert failed.said(as_said) == library.removesuffix(")") + (
        " (--keep-partial keeps what was read))"
    )
    assert as_said(ChesspipeError("other")) == "other"


def test_workers_are_cut_to_the_cores_and_said(tmp_path: Path) -> None:
    """`--workers 1000` on a 3.5 MB input had not finished after 120 s: more workers than cores
    only share the cores, so the number is cut to them, in one line on stderr."""
    from pipelines.commands.options import usable_cores
    from tests.sample_tool import make_sample

    month = make_sample.SAMPLE_MONTHS[0]
    proc = run_cli("ingest", str(make_sample.sample_path(month)), "--month", month,
                   "--warehouse", str(tmp_path / "wh"), "--workers", "1000", "--quiet")  # fmt: skip
    cores = usable_cores()
    assert proc.stderr == (
        f"chesspipe: --workers 1000 is more than the {cores} cores here: {cores} used\n"
    )
    manifest = json.loads((tmp_path / "wh" / "move_stats" / f"month={month}.json").read_text())
    assert manifest["workers"] in (cores, 1)  # 1: a source too small to split
