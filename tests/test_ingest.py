"""Ingest: the move statistics equal a plain python-chess recount of the same games."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.games.game_filter import GameFilter
from pipelines.ingest.manifest import IngestManifest, read_manifest
from pipelines.ingest.options import Tuning
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import manifest_path, partition_file
from schemas.move_stats import MOVE_STATS_SCHEMA
from schemas.speed import Speed
from tests.conftest import run_cli
from tests.recount import pgn_extract_elo, read_text, recount

ALL_SPEEDS = frozenset(Speed)


def stats_counter(warehouse: Path, month: str) -> Counter[tuple[int, int, str, int, str]]:
    table = pq.read_table(partition_file(warehouse, month))
    counts: Counter[tuple[int, int, str, int, str]] = Counter()
    for row in table.to_pylist():
        assert row["games"] == row["wins"] + row["draws"] + row["losses"]
        base = (row["key"], row["move"], row["speed"], row["rating_band"])
        for outcome, column in (("win", "wins"), ("draw", "draws"), ("loss", "losses")):
            if row[column]:
                counts[(*base, outcome)] += row[column]
    return counts


@pytest.mark.slow
@pytest.mark.parametrize(
    ("min_rating", "speeds", "allow_bots"),
    [
        (0, ALL_SPEEDS, True),
        (2200, frozenset({"blitz", "rapid", "classical", "correspondence"}), False),
        (1800, frozenset({"bullet", "blitz"}), False),
    ],
)
def test_stats_equal_python_chess_recount(
    tmp_path: Path, games_2021: Path, min_rating: int, speeds: frozenset[str], allow_bots: bool
) -> None:
    rules = GameFilter(min_rating, speeds, allow_bots)
    manifest = ingest(str(games_2021), "2021-10", tmp_path, IngestSettings(rules))
    expected, kept = recount(games_2021, min_rating, set(speeds), allow_bots)
    assert stats_counter(tmp_path, "2021-10") == expected
    assert manifest.games_kept == kept
    assert manifest.games_read == manifest.games_kept + sum(manifest.games_dropped.values())
    assert manifest.games_read == 999


@pytest.mark.slow
def test_recount_on_a_week_of_2013_and_odd_cases(
    tmp_path: Path, games_2013: Path, odd_cases: Path
) -> None:
    for path, month, rating in ((games_2013, "2013-01", 1900), (odd_cases, "2013-02", 0)):
        rules = GameFilter(rating, ALL_SPEEDS, allow_bots=False)
        manifest = ingest(
            str(path), month, tmp_path, IngestSettings(rules), tuning=Tuning(flush_rows=5000)
        )  # several spill runs
        expected, kept = recount(path, rating, set(ALL_SPEEDS))
        assert manifest.games_kept == kept > 0
        assert stats_counter(tmp_path, month) == expected


def test_partition_schema_and_manifest(tmp_path: Path, games_2021: Path) -> None:
    manifest = ingest(str(games_2021), "2021-10", tmp_path)
    schema = pq.read_schema(partition_file(tmp_path, "2021-10"))
    assert [(f.name, f.type) for f in schema] == [(f.name, f.type) for f in MOVE_STATS_SCHEMA]
    on_disk = json.loads(manifest_path(tmp_path, "2021-10").read_text())
    assert on_disk == manifest.to_json()
    assert on_disk["source_size"] == games_2021.stat().st_size
    import hashlib

    assert on_disk["source_sha256"] == hashlib.sha256(games_2021.read_bytes()).hexdigest()
    assert on_disk["games_dropped"]["bot"] == 1  # the one BOT vs BOT game (SOURCE.md)
    assert set(on_disk["settings"]) == {"min_rating", "speeds", "allow_bots", "variant", "plies"}
    assert list(on_disk) == sorted(MANIFEST_KEYS)  # the file's fields, as before it was typed
    assert read_manifest(tmp_path, "2021-10") == manifest


#: The fields of an ingest manifest file, and one written before the manifest was a dataclass.
MANIFEST_KEYS = (
    "chesspipe_version", "month", "source", "source_resolved", "source_kind", "source_size",
    "source_bytes_read", "source_sha256", "source_sha256_verified", "settings", "games_read",
    "games_kept", "games_dropped", "pgn_bytes", "rows", "partial", "error", "output",
    "output_sha256", "opening_tree", "workers", "timings", "finished_at", "output_size",
    "output_mtime_ns",
)  # fmt: skip
OLD_MANIFEST = """{
  "chesspipe_version": "0.1.0",
  "error": null,
  "finished_at": "2026-11-30T21:14:05+00:00",
  "games_dropped": {"bot": 1, "rating_low": 874, "speed": 62},
  "games_kept": 62,
  "games_read": 999,
  "month": "2021-10",
  "opening_tree": {"hits": 511, "misses": 729},
  "output": "move_stats/month=2021-10/part-0.parquet",
  "output_sha256": "5b0e4f3d0c1f7d7b1c6a0c4b3e7f1a2d9e8c7b6a5f4e3d2c1b0a99887766554f",
  "partial": false,
  "pgn_bytes": 1203467,
  "rows": 1240,
  "settings": {
    "allow_bots": false, "min_rating": 2200, "plies": 20,
    "speeds": ["blitz", "rapid", "classical", "correspondence"], "variant": "standard"
  },
  "source": "lichess_db_standard_rated_2021-10.sample.pgn.zst",
  "source_bytes_read": 301552,
  "source_kind": "file",
  "source_resolved": "lichess_db_standard_rated_2021-10.sample.pgn.zst",
  "source_sha256": "0d4c6e0a2b1f3e5d7c9b8a6f4e2d0c1b3a5f7e9d8c6b4a2f0e1d3c5b7a9f8e6d",
  "source_sha256_verified": false,
  "source_size": 301552,
  "timings": {"scan_seconds": 0.412, "total_seconds": 0.47},
  "workers": 1
}
"""


def test_manifests_written_before_still_read(tmp_path: Path) -> None:
    path = manifest_path(tmp_path, "2021-10")
    path.parent.mkdir(parents=True)
    path.write_text(OLD_MANIFEST)
    manifest = read_manifest(tmp_path, "2021-10")
    assert manifest is not None
    assert manifest.settings == IngestSettings()  # the defaults
    assert manifest.opening_tree.misses == 729 and manifest.timings.scan_seconds == 0.412
    assert manifest.to_json() == json.loads(OLD_MANIFEST)  # read and written back unchanged
    assert read_manifest(tmp_path, "2021-11") is None
    # Older still: written before checksums were verified and sources split among workers.
    older = {k: v for k, v in json.loads(OLD_MANIFEST).items() if k not in ("workers",)}
    del older["source_sha256_verified"]
    assert IngestManifest.from_json(older).workers == 1


def test_speeds_as_lichess_computes_them() -> None:
    assert [speed.value for speed in Speed] == [
        "ultrabullet", "bullet", "blitz", "rapid", "classical", "correspondence", "otb",
    ]  # fmt: skip
    assert [speed.ordinal for speed in Speed] == list(range(7))
    cases = {
        b"-": Speed.CORRESPONDENCE, b"15+0": Speed.ULTRABULLET, b"0+1": Speed.BULLET,
        b"29+0": Speed.ULTRABULLET, b"30+0": Speed.BULLET, b"60+3": Speed.BLITZ,
        b"180+0": Speed.BLITZ, b"300+3": Speed.BLITZ, b"480+0": Speed.RAPID,
        b"600+5": Speed.RAPID, b"1500+0": Speed.CLASSICAL, b"1800+30": Speed.CLASSICAL,
        b"21600+0": Speed.CORRESPONDENCE, b"300": Speed.BLITZ, b"a+1": None, b"": None,
        b"?": None,
    }  # fmt: skip
    for time_control, speed in cases.items():
        assert Speed.from_time_control(time_control) is speed, time_control
    assert Speed.parse_many(["blitz", "rapid"]) == {Speed.BLITZ, Speed.RAPID}
    with pytest.raises(ValueError, match=r"unknown speed\(s\) \['hyper'\]"):
        Speed.parse_many(["blitz", "hyper"])


def test_settings_own_their_defaults_and_name_themselves_in_errors() -> None:
    rules = GameFilter()
    assert (rules.min_rating, rules.allow_bots, rules.variant) == (2200, False, "standard")
    assert rules.speeds == {Speed.BLITZ, Speed.RAPID, Speed.CLASSICAL, Speed.CORRESPONDENCE}
    assert IngestSettings() == IngestSettings(GameFilter(), 20)
    named = GameFilter(speeds=frozenset({"blitz"}))
    assert named == GameFilter(speeds=frozenset({Speed.BLITZ}))
    assert all(isinstance(speed, Speed) for speed in named.speeds)
    with pytest.raises(ValueError, match="^plies must be at least 1$"):
        IngestSettings(plies=0)
    with pytest.raises(ValueError, match="unknown variant"):
        GameFilter(variant="atomic")
    settings = IngestSettings(GameFilter(1800, frozenset({"rapid", "blitz"}), True, "chess960"), 8)
    assert IngestSettings.from_json(settings.to_json()) == settings
    assert settings.to_json()["speeds"] == ["blitz", "rapid"]  # in Lichess's order


def test_the_command_line_takes_its_defaults_from_the_settings() -> None:
    import argparse

    from pipelines.commands.ingest import add_ingest_options, settings_from_args
    from pipelines.errors import ChesspipeError

    parser = argparse.ArgumentParser()
    add_ingest_options(parser)
    assert settings_from_args(parser.parse_args([])) == IngestSettings()
    with pytest.raises(SystemExit):  # argparse refuses it, naming --plies
        parser.parse_args(["--plies", "0"])
    zero = parser.parse_args([])
    zero.plies = 0  # as a caller might set it: the settings' error still names the option
    with pytest.raises(ChesspipeError, match="^--plies must be at least 1$"):
        settings_from_args(zero)
    with pytest.raises(ChesspipeError, match="unknown speed"):
        settings_from_args(parser.parse_args(["--speeds", "blitz,hyper"]))


def test_filter_keeps_what_pgn_extract_keeps(
    tmp_path: Path, games_2021: Path, games_2013: Path
) -> None:
    """Same Elo criteria: our byte-level filter and pgn-extract keep the same games."""
    from pipelines.games.game_filter import ScanStats, filter_game
    from pipelines.games.scan import split_games

    for source, rating in ((games_2021, 2200), (games_2021, 1500), (games_2013, 1800)):
        out = pgn_extract_elo(source, rating, tmp_path)
        theirs = [line for line in out.read_text().splitlines() if line.startswith("[Site ")]
        stats = ScanStats()
        rules = GameFilter(rating, ALL_SPEEDS, allow_bots=True)
        ours = []
        for game in split_games([read_text(source).encode()], stats):
            if filter_game(game, rules, stats) is not None:
                site = game[game.index(b"[Site ") : game.index(b"\n", game.index(b"[Site "))]
                ours.append(site.decode())
        assert ours == theirs
        assert len(ours) > 0


def test_reingest_replaces_the_month(tmp_path: Path, games_2021: Path) -> None:
    rules = GameFilter(0, ALL_SPEEDS, True)
    ingest(str(games_2021), "2021-10", tmp_path, IngestSettings(rules))
    first = stats_counter(tmp_path, "2021-10")
    ingest(str(games_2021), "2021-10", tmp_path, IngestSettings(rules))
    assert stats_counter(tmp_path, "2021-10") == first
    files = sorted(p.name for p in partition_file(tmp_path, "2021-10").parent.iterdir())
    assert files == ["part-0.parquet"]


@pytest.mark.slow
def test_cli_sources_file_stdin_and_plain(tmp_path: Path, games_2021: Path) -> None:
    args = ["--min-rating", "1500", "--quiet"]
    run_cli(
        "ingest", str(games_2021), "--month", "2021-10", "--warehouse", str(tmp_path / "a"), *args
    )
    plain = tmp_path / "games.pgn"
    plain.write_text(read_text(games_2021))
    run_cli("ingest", str(plain), "--month", "2021-10", "--warehouse", str(tmp_path / "b"), *args)
    run_cli(
        "ingest",
        "-",
        "--month",
        "2021-10",
        "--warehouse",
        str(tmp_path / "c"),
        *args,
        stdin=plain.read_bytes(),
    )
    reference = stats_counter(tmp_path / "a", "2021-10")
    assert reference
    assert stats_counter(tmp_path / "b", "2021-10") == reference
    assert stats_counter(tmp_path / "c", "2021-10") == reference


def test_cli_rejects_bad_arguments(tmp_path: Path, games_2021: Path) -> None:
    bad_month = run_cli(
        "ingest", str(games_2021), "--month", "2021-13", "--warehouse", str(tmp_path), check=False
    )
    assert bad_month.returncode != 0 and "YYYY-MM" in bad_month.stderr
    bad_speed = run_cli(
        "ingest",
        str(games_2021),
        "--month",
        "2021-10",
        "--warehouse",
        str(tmp_path),
        "--speeds",
        "blitz,lightning",
        check=False,
    )
    assert bad_speed.returncode != 0 and "lightning" in bad_speed.stderr
    missing = run_cli(
        "ingest",
        str(tmp_path / "nope.pgn.zst"),
        "--month",
        "2021-10",
        "--warehouse",
        str(tmp_path),
        check=False,
    )
    assert missing.returncode != 0 and "cannot open" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_merges_range_by_range_write_the_same_file(tmp_path: Path, games_2013: Path) -> None:
    """Runs merged a range of keys at a time (a bound on memory) or all at once write the same
    file, byte for byte, in row groups of a fixed size (the last one shorter) in key order."""
    from pipelines.games.game_filter import ScanStats
    from pipelines.games.scan import game_blocks
    from pipelines.ingest.count_runs import IN_MEMORY_ROWS, count_games
    from pipelines.ingest.runs import merge_runs

    rules = GameFilter(1900, ALL_SPEEDS)
    files = []
    for limit in (IN_MEMORY_ROWS, 0):
        warehouse = tmp_path / f"limit-{limit}"
        ingest(
            str(games_2013), "2013-01", warehouse, IngestSettings(rules),
            tuning=Tuning(flush_rows=3000, in_memory_rows=limit),
        )  # fmt: skip
        files.append(partition_file(warehouse, "2013-01").read_bytes())
    assert files[0] == files[1]
    stats = ScanStats()
    text = read_text(games_2013).encode()
    every_game = IngestSettings(GameFilter(0, ALL_SPEEDS, allow_bots=True))
    runs, *_ = count_games(game_blocks([text], stats), every_game, stats, tmp_path, flush_rows=3000)
    assert len(runs) > 1
    written = set()
    for limit in (IN_MEMORY_ROWS, 0, 2500):
        target = tmp_path / f"merged-{limit}.parquet"
        rows = merge_runs(runs, target, in_memory_rows=limit, row_group_rows=1000)
        written.add(target.read_bytes())
    assert len(written) == 1
    table = pq.read_table(target)
    assert rows == table.num_rows > 5000
    metadata = pq.ParquetFile(target).metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert sizes[:-1] == [1000] * (len(sizes) - 1) and 0 < sizes[-1] <= 1000
    bounds = [
        (metadata.row_group(i).column(0).statistics.min,
         metadata.row_group(i).column(0).statistics.max)
        for i in range(metadata.num_row_groups)
    ]  # fmt: skip
    assert all(low <= high <= next_low for (low, high), (next_low, _) in itertools.pairwise(bounds))
    keys = [
        (r["key"], r["move"], r["speed"], r["rating_band"], r["rating_group"])
        for r in table.to_pylist()
    ]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
