"""`explorer index` on several cores: a pzstd-style file read by units of frames in worker
processes makes the month's data one process makes (games, positions, counts, records and
the lookup tables equal; the manifest's counts equal), games straddling frames and units."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from pipelines.explorer.index import index_month
from pipelines.explorer.layout import (
    counts_file,
    games_file,
    lookup_file,
    positions_file,
    records_file,
)
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.frames import write_framed_zstd
from pipelines.games.game_filter import GameFilter
from schemas.speed import Speed
from tests.conftest import run_cli
from tests.recount import read_text

RULES = GameFilter(min_rating=0, speeds=frozenset(Speed))
MONTH = "2020-01"


@pytest.mark.slow
def test_units_of_frames_make_the_month_one_process_makes(
    tmp_path: Path, games_2013: Path, games_2021: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Units are joined a batch at a time: batches smaller than a unit, as a real month's
    # (4 MB units of about 8,000 games, 4,096 a batch), renumber across batches too.
    monkeypatch.setattr("pipelines.explorer.index.BATCH_GAMES", 97)
    text = (read_text(games_2021) + "\n" + read_text(games_2013)).encode()
    path = tmp_path / "framed.pgn.zst"
    write_framed_zstd(path, text, frame_size=50_000, level=1)
    one = index_month(str(path), MONTH, tmp_path / "one", ExplorerSettings(RULES), workers=1)
    two = index_month(str(path), MONTH, tmp_path / "two", ExplorerSettings(RULES), workers=2,
                      parallel_min_bytes=0)  # fmt: skip
    for field in ("games_read", "games_kept", "games_dropped", "positions", "ends_inside_game"):
        assert getattr(one, field) == getattr(two, field), field
    assert one.games_kept > 25_000
    assert pq.read_table(games_file(tmp_path / "one", MONTH)) == pq.read_table(
        games_file(tmp_path / "two", MONTH)
    )
    assert not positions_file(tmp_path / "two", MONTH).exists(), "a 50-ply month's positions"
    for file in (counts_file, records_file):  # sorted rows in blocks of fixed size: same bytes
        assert (
            file(tmp_path / "one", MONTH).read_bytes() == file(tmp_path / "two", MONTH).read_bytes()
        )
    tables = {}
    for name in ("one", "two"):
        con = duckdb.connect(str(lookup_file(tmp_path / name, MONTH)), read_only=True)
        tables[name] = [con.sql(f"SELECT * FROM {t}").fetchall() for t in ("positions", "players")]
        con.close()
    assert tables["one"] == tables["two"]
    assert not list((tmp_path / "two" / ".staging").glob("*")), "the units' files are removed"


@pytest.mark.slow
def test_the_command_reads_by_units_with_workers(tmp_path: Path, games_2021: Path) -> None:
    path = tmp_path / "framed.pgn.zst"
    write_framed_zstd(path, read_text(games_2021).encode(), frame_size=20_000, level=1)
    found = run_cli(
        "explorer", "index", str(path), "--month", MONTH, "--warehouse", str(tmp_path / "w"),
        "--min-rating", "0", "--speeds", "all", "--workers", "2",
    )  # fmt: skip
    assert json.loads(found.stdout)["games_kept"] > 900
