"""`chesspipe ingest` indexes the explorer by default, from the games it keeps (one read of the
source), and publishes it with the month's statistics as one set: the same files as
`chesspipe explorer index` of the source makes alone, or nothing of either."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import zstandard

from pipelines.explorer.layout import counts_file, explorer_manifest_path, games_file, records_file
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import RunPolicy, Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import manifest_path, partition_file
from schemas.speed import Speed
from tests.conftest import ROOT, run_cli

SAMPLE = ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"
MONTH = "2024-01"
OPEN = ("--speeds", "all", "--min-rating", "0")


def same_explorer(one: Path, two: Path) -> None:
    """Two warehouses hold the same explorer month (counts and records byte for byte)."""
    assert pq.read_table(games_file(one, MONTH)) == pq.read_table(games_file(two, MONTH))
    for file in (counts_file, records_file):
        assert file(one, MONTH).read_bytes() == file(two, MONTH).read_bytes()
    a = json.loads(explorer_manifest_path(one, MONTH).read_text())
    b = json.loads(explorer_manifest_path(two, MONTH).read_text())
    for field in ("games_kept", "positions", "settings"):  # (read: of the kept games)
        assert a[field] == b[field], field


def test_ingest_indexes_the_explorer_as_explorer_index_does(tmp_path: Path) -> None:
    found = run_cli("ingest", str(SAMPLE), "--month", MONTH, "--warehouse", str(tmp_path / "i"),
                    "--quiet", *OPEN)  # fmt: skip
    summary = json.loads(found.stdout)
    assert summary["explorer"]["games_kept"] == summary["games_kept"] > 400
    run_cli("explorer", "index", str(SAMPLE), "--month", MONTH, "--warehouse",
            str(tmp_path / "e"), "--quiet", *OPEN)  # fmt: skip
    same_explorer(tmp_path / "i", tmp_path / "e")
    assert json.loads(explorer_manifest_path(tmp_path / "i", MONTH).read_text())["source"] == str(
        SAMPLE
    )
    assert run_cli("warehouse", "check", str(tmp_path / "i")).returncode == 0
    assert not list((tmp_path / "i" / ".staging").glob("*")), "the kept games are removed"

    run_cli("ingest", str(SAMPLE), "--month", MONTH, "--warehouse", str(tmp_path / "n"),
            "--quiet", "--no-explorer", *OPEN)  # fmt: skip
    assert not (tmp_path / "n" / "explorer").exists()


@pytest.mark.slow  # (1.5 s or more: the fast lane leaves it out)
def test_games_ingest_counts_otherwise_are_read_again_but_not_from_stdin(tmp_path: Path) -> None:
    # --dedupe leaves out games the explorer counts: the explorer reads the source again.
    run_cli("ingest", str(SAMPLE), "--month", MONTH, "--warehouse", str(tmp_path / "d"),
            "--quiet", "--dedupe", *OPEN)  # fmt: skip
    run_cli("explorer", "index", str(SAMPLE), "--month", MONTH, "--warehouse",
            str(tmp_path / "e"), "--quiet", *OPEN)  # fmt: skip
    same_explorer(tmp_path / "d", tmp_path / "e")
    # Standard input is read once: said, and the statistics published alone.
    text = zstandard.ZstdDecompressor().stream_reader(SAMPLE.open("rb")).read()
    found = run_cli("ingest", "-", "--month", MONTH, "--warehouse", str(tmp_path / "s"),
                    "--quiet", "--dedupe", *OPEN, stdin=text)  # fmt: skip
    assert "the explorer is not indexed: standard input is read once" in found.stderr
    assert json.loads(found.stdout)["explorer"] is None
    assert manifest_path(tmp_path / "s", MONTH).is_file()
    assert not (tmp_path / "s" / "explorer").exists()
    # Without --dedupe, standard input is indexed from the games ingest kept.
    found = run_cli("ingest", "-", "--month", MONTH, "--warehouse", str(tmp_path / "t"),
                    "--quiet", *OPEN, stdin=text)  # fmt: skip
    same_explorer(tmp_path / "t", tmp_path / "e")


def test_the_statistics_and_the_explorer_appear_together_or_not_at_all(tmp_path: Path) -> None:
    from pipelines.explorer.index import with_ingest

    rules = GameFilter(min_rating=0, speeds=frozenset(Speed))
    warehouse = tmp_path / "w"

    class Failing(Exception):
        pass

    with with_ingest(warehouse, MONTH, ExplorerSettings(rules), recorded_source="x") as indexed:

        def fails_after_staging(kept: Path, output: object) -> None:
            indexed(kept, output)  # type: ignore[arg-type]
            raise Failing("stopped before the set is published")

        with pytest.raises(Failing):
            ingest(str(SAMPLE), MONTH, warehouse, IngestSettings(rules),
                   policy=RunPolicy(also_staged=fails_after_staging),
                   runtime=Runtime(workers=1))  # fmt: skip
    assert indexed.manifest is not None and indexed.manifest.games_kept > 400
    assert not partition_file(warehouse, MONTH).exists()
    assert not manifest_path(warehouse, MONTH).exists()
    assert not explorer_manifest_path(warehouse, MONTH).exists()
    assert not games_file(warehouse, MONTH).exists()
    leftovers = [p for p in warehouse.rglob("*") if p.is_file() and ".locks" not in p.parts]
    assert leftovers == []
