"""`build-month` reads its source once: ingest writes the games it keeps, and the explorer
indexes those (on all cores) instead of the dump again. Its explorer data equals `explorer
index` of the dump; a build whose ingest would leave games out that the explorer keeps
(dedupe) still reads the dump again."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.books.settings import BookSettings
from pipelines.explorer.index import index_month
from pipelines.explorer.layout import (
    counts_file,
    explorer_manifest_path,
    games_file,
    positions_file,
    records_file,
)
from pipelines.explorer.manifest import ExplorerManifest
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.settings import IngestSettings
from pipelines.monthly.build import build_month, explorer_settings
from pipelines.monthly.settings import MonthSettings
from pipelines.sources.options import DownloadOptions
from tests.loopback_http import LoopbackServer

MONTH = "2021-10"
SETTINGS = MonthSettings(
    IngestSettings(GameFilter(min_rating=1200)), book=BookSettings(min_games=2)
)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHESSPIPE_CACHE", str(tmp_path / "cache"))


@pytest.mark.slow
def test_the_dump_is_read_once_and_the_explorer_equals_its_own_index(
    tmp_path: Path, games_2013: Path
) -> None:
    data = games_2013.read_bytes()
    with LoopbackServer() as server:
        url = server.add("/month.pgn.zst", data)
        download = DownloadOptions(verify=False, timeout=10.0, backoff=0.01)
        build_month(url, MONTH, tmp_path / "w", tmp_path / "books", SETTINGS, download)
        # A first request learns the size and is closed early (what the socket buffers took
        # is counted as sent); a second read of the dump would send it all again.
        assert len(data) <= server.bytes_sent < 1.5 * len(data), server.requests
    alone = tmp_path / "alone"
    index_month(str(games_2013), MONTH, alone, explorer_settings(SETTINGS))
    built = tmp_path / "w"
    assert pq.read_table(games_file(built, MONTH)) == pq.read_table(games_file(alone, MONTH))
    assert not positions_file(built, MONTH).exists()
    for file in (counts_file, records_file):
        assert file(built, MONTH).read_bytes() == file(alone, MONTH).read_bytes()
    manifest = ExplorerManifest.read(explorer_manifest_path(built, MONTH))
    assert manifest.source == url and manifest.games_kept > 10_000
    assert not list((tmp_path / "books" / ".staging").glob("*")), "the kept games are removed"


@pytest.mark.slow
def test_a_deduplicating_ingest_leaves_the_explorer_to_read_the_dump(
    tmp_path: Path, games_2013: Path
) -> None:
    deduped = replace(SETTINGS, ingest=replace(SETTINGS.ingest, dedupe=True))
    data = games_2013.read_bytes()
    with LoopbackServer() as server:
        url = server.add("/month.pgn.zst", data)
        download = DownloadOptions(verify=False, timeout=10.0, backoff=0.01)
        build_month(url, MONTH, tmp_path / "w", tmp_path / "books", deduped, download)
        assert server.bytes_sent >= 2 * len(data)
    alone = tmp_path / "alone"
    index_month(str(games_2013), MONTH, alone, explorer_settings(deduped))
    assert counts_file(tmp_path / "w", MONTH).read_bytes() == counts_file(alone, MONTH).read_bytes()
