"""`chesspipe sql`, URL and lichess: sources, and the bundled sample."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.sources.open import lichess_url, resolve
from schemas.polyglot import move_to_uci
from schemas.speed import Speed
from tests.conftest import run_cli
from tests.loopback_http import LoopbackServer
from tests.sample_tool import make_sample

ANY = GameFilter(0, frozenset(Speed), allow_bots=True)


@pytest.mark.slow
def test_url_source_streams_like_a_file(tmp_path: Path, games_2021: Path) -> None:
    with LoopbackServer() as server:
        url = server.add("/month.pgn.zst", games_2021.read_bytes())
        from_url = ingest(url, "2021-10", tmp_path / "a", IngestSettings(ANY))
        from_file = ingest(str(games_2021), "2021-10", tmp_path / "b", IngestSettings(ANY))
        assert from_url.output_sha256 == from_file.output_sha256
        assert from_url.source_sha256 == from_file.source_sha256
        assert from_url.source_kind == "url"
        missing = run_cli(
            "ingest",
            f"{server.base}/nope.pgn.zst",
            "--month",
            "2021-10",
            "--warehouse",
            str(tmp_path / "c"),
            check=False,
        )
    assert missing.returncode == 1 and "404" in missing.stderr
    assert not (tmp_path / "c" / "move_stats").exists()


def test_lichess_source_names_the_official_dump() -> None:
    assert resolve("lichess:2024-01") == (
        "https://database.lichess.org/standard/lichess_db_standard_rated_2024-01.pgn.zst"
    )
    assert lichess_url("2024-01", "chess960").endswith(
        "/chess960/lichess_db_chess960_rated_2024-01.pgn.zst"
    )
    proc = run_cli(
        "ingest", "lichess:2024-1", "--month", "2024-01", "--warehouse", "/nonexistent", check=False
    )
    assert proc.returncode == 1 and "lichess:YYYY-MM" in proc.stderr


@pytest.mark.slow
def test_sql_over_two_months(tmp_path: Path) -> None:
    for month in make_sample.SAMPLE_MONTHS:
        ingest(str(make_sample.sample_path(month)), month, tmp_path, IngestSettings(ANY))
    query = (
        "SELECT month, uci(move) AS uci, move, sum(games) AS games FROM move_stats "
        "WHERE hexkey(key) = '463b96181691fc9c' GROUP BY ALL ORDER BY month, games DESC"
    )
    proc = run_cli("sql", "--warehouse", str(tmp_path), query, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert proc.stdout.splitlines()[0] == "month,uci,move,games"
    assert {r["month"] for r in rows} == set(make_sample.SAMPLE_MONTHS)
    for row in rows:
        assert row["uci"] == move_to_uci(int(row["move"]))
    as_json = json.loads(
        run_cli("sql", "--warehouse", str(tmp_path), query, "--format", "json").stdout
    )
    assert [str(r["games"]) for r in as_json] == [r["games"] for r in rows]
    table = run_cli("sql", "--warehouse", str(tmp_path), query).stdout
    assert table.splitlines()[0].split() == ["month", "uci", "move", "games"]
    bad = run_cli("sql", "--warehouse", str(tmp_path), "SELEC nonsense", check=False)
    assert bad.returncode == 1 and bad.stderr.startswith("chesspipe: error: SQL error")


def test_sql_says_when_the_warehouse_is_missing_or_empty(tmp_path: Path) -> None:
    count = "SELECT count(*) AS n FROM move_stats"
    missing = tmp_path / "nowhere"
    proc = run_cli("sql", "--warehouse", str(missing), count, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"chesspipe: error: warehouse {missing} does not exist"]
    afile = tmp_path / "file"
    afile.write_text("")
    proc = run_cli("sql", "--warehouse", str(afile), count, check=False)
    assert proc.returncode == 1 and "is not a folder" in proc.stderr
    # An empty folder: the query runs (as DuckDB would run it) and a warning says why 0 rows.
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli("sql", "--warehouse", str(empty), count, "--format", "csv")
    assert proc.stdout.splitlines() == ["n", "0"]
    assert "no month of move statistics" in proc.stderr and len(proc.stderr.splitlines()) == 1
    # A query that does not read the statistics needs no warning.
    proc = run_cli("sql", "--warehouse", str(empty), "SELECT 1 AS x", "--format", "csv")
    assert proc.stdout.splitlines() == ["x", "1"] and proc.stderr == ""


@pytest.mark.slow
def test_sql_reads_only_unless_writing_is_allowed(tmp_path: Path) -> None:
    month = make_sample.SAMPLE_MONTHS[0]
    ingest(str(make_sample.sample_path(month)), month, tmp_path, IngestSettings(ANY))
    partition = next((tmp_path / "move_stats").glob("month=*/part-0.parquet"))
    before = partition.read_bytes()
    overwrite = f"COPY (SELECT 1 AS x) TO '{partition}' (FORMAT parquet)"
    for query in (overwrite, f"EXPORT DATABASE '{tmp_path / 'dump'}'",
                  f"ATTACH '{tmp_path / 'x.db'}'", "CREATE TABLE t AS SELECT 1"):  # fmt: skip
        refused = run_cli("sql", "--warehouse", str(tmp_path), query, check=False)
        assert refused.returncode == 1
        assert refused.stderr.strip().endswith("(pass --allow-write to run it)")
    assert partition.read_bytes() == before
    assert not (tmp_path / "dump").exists() and not (tmp_path / "x.db").exists()
    copy = tmp_path / "out.csv"
    run_cli("sql", "--warehouse", str(tmp_path), "--allow-write",
            f"COPY (SELECT count(*) AS n FROM move_stats) TO '{copy}'")  # fmt: skip
    assert copy.read_text().splitlines()[0] == "n"
    assert "--allow-write" in run_cli("sql", "--help").stdout


def test_sql_errors_keep_duckdb_hints(tmp_path: Path) -> None:
    """A misspelt column or table: the one-line error keeps what DuckDB suggests."""
    import duckdb

    from pipelines.warehouse.sql import connect

    month = make_sample.SAMPLE_MONTHS[0]
    ingest(str(make_sample.sample_path(month)), month, tmp_path, IngestSettings(ANY))
    con = connect(tmp_path)
    for query, hint in [
        ("SELECT gamez FROM move_stats", "Candidate bindings"),
        ("SELECT * FROM move_stat", "Did you mean"),
    ]:
        with pytest.raises(duckdb.Error) as raised:
            con.execute(query)
        hints = [line for line in str(raised.value).splitlines() if line.startswith(hint)]
        assert hints, str(raised.value)  # DuckDB's own suggestion, e.g. 'Did you mean "..."?'
        bad = run_cli("sql", "--warehouse", str(tmp_path), query, check=False)
        assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1
        assert bad.stderr.startswith("chesspipe: error: SQL error")
        assert hints[0] in bad.stderr
        assert "LINE 1" not in bad.stderr
    con.close()
