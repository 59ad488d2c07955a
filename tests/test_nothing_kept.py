"""Runs that keep no game fail in one line, naming why the games were dropped and the option
that keeps them, and publish nothing; --allow-empty accepts the empty result.

The counts are python-chess's: its header reader over the same games.
"""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path

import chess.pgn
import pytest
import zstandard

from pipelines.games.game_filter import GameFilter, NothingKept
from pipelines.ingest.options import Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import manifest_path, partition_file
from tests.conftest import GAMES_2013, SYZYGY_DIR, need, run_cli


def below(path: Path, min_rating: int) -> tuple[int, int]:
    """(games with both ratings numeric and one below `min_rating`, games) by python-chess."""
    raw = path.read_bytes()
    text = zstandard.ZstdDecompressor().decompress(raw, max_output_size=1 << 30).decode()
    handle = io.StringIO(text)
    games = low = 0
    while (headers := chess.pgn.read_headers(handle)) is not None:
        games += 1
        white, black = headers.get("WhiteElo", ""), headers.get("BlackElo", "")
        if white.isdigit() and black.isdigit() and min(int(white), int(black)) < min_rating:
            low += 1
    return low, games


@pytest.fixture(scope="module")
def games_2013_below() -> tuple[Path, str]:
    """The 2013 games (ratings were low then) and what the default filter makes of them."""
    path = need(GAMES_2013, "real Lichess games (2013-01)")
    low, games = below(path, 2200)
    assert low > games // 2  # most games: the main reason
    return path, f"{low:,} of {games:,} games are below"


@pytest.mark.slow
def test_ingest_keeping_no_game_fails_naming_the_reason_and_its_flag(
    tmp_path: Path, games_2013_below: tuple[Path, str]
) -> None:
    source, counted = games_2013_below
    args = ("ingest", str(source), "--month", "2013-01", "--warehouse", str(tmp_path), "--quiet")
    proc = run_cli(*args, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"chesspipe: error: no game of {source} is kept: {counted} --min-rating 2200; "
        "nothing published (--allow-empty accepts an empty result)"
    ]
    assert not partition_file(tmp_path, "2013-01").exists()
    assert not manifest_path(tmp_path, "2013-01").exists()
    # Accepted: the empty month is published.
    summary = json.loads(run_cli(*args, "--allow-empty").stdout)
    assert summary["games_kept"] == summary["rows"] == 0
    assert partition_file(tmp_path, "2013-01").exists()


def test_the_library_error_names_settings_and_survives_pickling(tmp_path: Path) -> None:
    game = (
        b'[Event "Rated Blitz game"]\n[Result "1-0"]\n[WhiteElo "2500"]\n[BlackElo "2400"]\n'
        b'[WhiteTitle "BOT"]\n[TimeControl "180+0"]\n\n1. e4 e5 1-0\n\n'
    )
    source = tmp_path / "bots.pgn"
    source.write_bytes(game * 3)
    with pytest.raises(NothingKept) as raised:
        ingest(
            str(source),
            "2024-01",
            tmp_path / "wh",
            IngestSettings(GameFilter()),
            runtime=Runtime(workers=1),
        )
    said = f"no game of {source} is kept: 3 of 3 games have a BOT player"
    assert str(raised.value) == f"{said} (allow_bots keeps them); nothing published"
    again = pickle.loads(pickle.dumps(raised.value))  # as a worker process sends it
    assert str(again) == str(raised.value)
    assert again.named({"GameFilter.allow_bots": "--allow-bots"}) == (
        f"{said} (--allow-bots keeps them); nothing published"
    )
    assert not partition_file(tmp_path / "wh", "2024-01").exists()


@pytest.mark.slow
def test_training_and_endgames_from_games_keeping_no_game_fail_alike(
    tmp_path: Path, games_2013_below: tuple[Path, str]
) -> None:
    source, counted = games_2013_below
    line = (
        f"chesspipe: error: no game of {source} is kept: {counted} --min-rating 2200; "
        "nothing published (--allow-empty accepts an empty result)"
    )
    out = tmp_path / "train" / "positions.plain"
    training = ("training", "from-games", str(source), "--month", "2013-01", "--out", str(out))
    proc = run_cli(*training, "--no-tables", "--quiet", check=False)
    assert proc.returncode == 1 and proc.stderr.splitlines() == [line]
    # Nothing written but the output's lock file (`.NAME.lock`, empty, as a book's).
    assert not out.parent.exists() or [p.name for p in out.parent.iterdir()] in (
        [],
        [f".{out.name}.lock"],
    )
    run_cli(*training, "--no-tables", "--quiet", "--allow-empty")
    assert out.exists() and out.stat().st_size == 0
    labels = tmp_path / "labels"
    syzygy = str(need(SYZYGY_DIR, "Syzygy tables"))
    endgames = ("endgames", "from-games", str(source), "--month", "2013-01", "--out", str(labels))
    proc = run_cli(*endgames, "--syzygy", syzygy, "--quiet", check=False)
    assert proc.returncode == 1 and proc.stderr.splitlines() == [line]
    assert not labels.exists() or list(labels.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("partition", [("--month", "2013-01"), ("--month-by", "date")])
def test_explorer_index_keeping_no_game_fails_alike(
    tmp_path: Path, games_2013_below: tuple[Path, str], partition: tuple[str, str]
) -> None:
    source, counted = games_2013_below
    warehouse = tmp_path / "wh"
    args = ("explorer", "index", str(source), *partition, "--warehouse", str(warehouse))
    proc = run_cli(*args, "--quiet", check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"chesspipe: error: no game of {source} is kept: {counted} --min-rating 2200; "
        "nothing published (--allow-empty accepts an empty result)"
    ]
    assert not (warehouse / "explorer").exists() or not any((warehouse / "explorer").rglob("*.*"))
    summary = json.loads(run_cli(*args, "--quiet", "--allow-empty").stdout)
    assert summary["games_kept"] == 0
    if partition[0] == "--month":  # the empty month is published
        assert any((warehouse / "explorer").rglob("*.parquet"))
    else:  # no game gave a date: no month to publish
        assert summary["months"] == []


def _commented_game(white_elo: int, comments: bool) -> bytes:
    moves = "1. e4 { [%eval 0.2] } 1... e5 { [%eval 0.25] } 1-0" if comments else "1. e4 e5 1-0"
    return (
        f'[Event "Rated Blitz game"]\n[Result "1-0"]\n[WhiteElo "{white_elo}"]\n'
        f'[BlackElo "2400"]\n[TimeControl "180+0"]\n\n{moves}\n\n'
    ).encode()


@pytest.mark.slow
def test_evals_from_games_storing_nothing_fails_saying_why(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    run_cli("ingest", str(_write(tmp_path / "kept.pgn", _commented_game(2500, False))),
            "--month", "2024-01", "--warehouse", str(warehouse), "--quiet")  # fmt: skip
    no_comment = _write(tmp_path / "plain.pgn", _commented_game(2500, False) * 2)
    low = _write(
        tmp_path / "low.pgn", _commented_game(1500, True) * 3 + _commented_game(2500, False)
    )
    said = {
        no_comment: f"no game of {no_comment} has an [%eval] comment (2 games read); "
        "nothing stored",
        low: f"no game of {low} (its 3 games with [%eval] comments) is kept: 3 of 3 games are "
        "below --min-rating 2200; nothing published (--allow-empty accepts an empty result)",
    }
    for source, line in said.items():
        args = ("evals", "from-games", str(source), "--warehouse", str(warehouse))
        proc = run_cli(*args, check=False)
        assert (proc.returncode, proc.stdout, proc.stderr.splitlines()) == (
            1, "", [f"chesspipe: error: {line}"]
        )  # fmt: skip
        assert not (warehouse / "evals").exists() or not any(
            (warehouse / "evals").rglob("*.parquet")
        )
        assert json.loads(run_cli(*args, "--allow-empty").stdout)["comments"] == 0
    stored = _write(tmp_path / "good.pgn", _commented_game(2500, True))
    assert json.loads(run_cli("evals", "from-games", str(stored), "--warehouse",
                              str(warehouse)).stdout)["comments"] == 2  # fmt: skip


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
