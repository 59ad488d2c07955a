"""One meaning of "kept": ingest, endgames from-games and training from-games keep the same games.

A kept game passed the filter and has a move; the truth is a python-chess pass over the games
(`tests/recount.py`), which keeps a game whose headers pass and whose mainline has a move.
Their manifests record the filter alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.endgames.build import game_labels
from pipelines.games.game_filter import GameFilter
from pipelines.progress import Progress
from tests.conftest import ROOT, run_cli
from tests.recount import recount

SAMPLE = ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"
STRONG = {"blitz", "rapid", "classical", "correspondence"}


def kept_counts(source: Path, min_rating: int, syzygy_dir: Path, work: Path) -> list[dict]:
    """The manifests' kept counts and drops of the three commands on one source."""
    common = ("--month", "2024-01", "--min-rating", str(min_rating), "--quiet")
    tables = ("--syzygy", str(syzygy_dir))
    outputs = [
        run_cli("ingest", str(source), *common, "--warehouse", str(work / "wh")),
        run_cli("endgames", "from-games", str(source), *common, *tables, "--out", str(work / "l")),
        run_cli("training", "from-games", str(source), *common, *tables,
                "--out", str(work / "t.plain")),
    ]  # fmt: skip
    return [json.loads(proc.stdout) for proc in outputs]


@pytest.mark.slow
@pytest.mark.parametrize(("which", "min_rating"), [("sample", 2200), ("real", 0)])
def test_the_three_commands_keep_the_same_games(
    which: str, min_rating: int, games_2021: Path, syzygy_dir: Path, tmp_path: Path
) -> None:
    source = SAMPLE if which == "sample" else games_2021
    ingest, endgames, training = kept_counts(source, min_rating, syzygy_dir, tmp_path)
    _, truth = recount(source, min_rating, STRONG, plies=10_000)
    assert ingest["games_kept"] == endgames["games_kept"] == training["games_kept"] == truth
    assert ingest["games_read"] == endgames["games_read"] == training["games_read"]
    if which == "sample":
        # The bundled sample holds games without moves: dropped by all three, under one name.
        no_moves = ingest["games_dropped"]["no_moves"]
        assert no_moves > 0 and training["games_skipped"]["no_moves"] == no_moves
        manifest = json.loads((tmp_path / "l" / "games-2024-01.json").read_text())
        assert manifest["games_dropped"]["no_moves"] == no_moves


def test_endgame_progress_counts_kept_games_not_replayed_ones(
    syzygy_dir: Path, tmp_path: Path
) -> None:
    reports: list[Progress] = []
    manifest = game_labels([syzygy_dir], str(SAMPLE), "2024-01", tmp_path, GameFilter(),
                           "auto", reports.append)  # fmt: skip
    assert reports[-1].games_kept == manifest["games_kept"] > manifest["games_replayed"]


def test_endgames_from_games_records_its_filter_as_ingest_does(
    syzygy_dir: Path, tmp_path: Path
) -> None:
    """The label set's manifest holds the filter as the ingest manifest does: speeds in Lichess's
    order, fastest first; what an older one holds (speeds sorted by name) reads as the same."""
    from pipelines.ingest.settings import IngestSettings
    from schemas.speed import Speed

    rules = GameFilter(2000, frozenset({Speed.CLASSICAL, Speed.BULLET, Speed.RAPID}))
    game_labels([syzygy_dir], str(SAMPLE), "2024-01", tmp_path, rules)
    manifest = json.loads((tmp_path / "games-2024-01.json").read_text())
    recorded = manifest["settings"]["filter"]
    ingest = {k: v for k, v in IngestSettings(rules).to_json().items() if k != "plies"}
    assert recorded == ingest
    assert recorded["speeds"] == ["bullet", "rapid", "classical"]
    assert GameFilter.from_json(recorded) == rules
    older = {**recorded, "speeds": sorted(recorded["speeds"])}
    assert GameFilter.from_json(older) == rules
