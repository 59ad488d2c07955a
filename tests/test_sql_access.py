"""What a query may open: the warehouse's statistics and the opening names, nothing else, and no
setting that would widen it; `chesspipe sql`, `run_query` and `connect` alike."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.serve.stats_index import StatsIndex
from pipelines.warehouse.layout import available_months
from pipelines.warehouse.read_only import WriteNotAllowed
from pipelines.warehouse.sql import (
    DEFAULT_TIMEOUT,
    QueryTimedOut,
    ReadNotAllowed,
    connect,
    run_query,
)
from schemas.speed import Speed
from tests.conftest import run_cli
from tests.sample_tool import make_sample

ANY = GameFilter(0, frozenset(Speed), allow_bots=True)
MONTH = make_sample.SAMPLE_MONTHS[0]


@pytest.fixture(scope="module")
def warehouse(sample_warehouse: Path) -> Path:
    return sample_warehouse


def _digests(folder: Path) -> dict[str, str]:
    """Every file under a folder with its sha256: what a refused query must leave as it was."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _partition(warehouse: Path) -> Path:
    return warehouse / "move_stats" / f"month={MONTH}" / "part-0.parquet"


def _manifest(warehouse: Path) -> Path:
    return warehouse / "move_stats" / f"month={MONTH}.json"


# The attacks an adversarial run found, and their kin: each would open, write or reconfigure.
WRITES = [
    "SET log_query_path = '{partition}'; SELECT 1",
    "PRAGMA enable_profiling = 'json'; SET profiling_output = '{manifest}'; SELECT 1",
    "SET enable_external_access = true",
    "COPY (SELECT 1 AS x) TO '{partition}' (FORMAT parquet, USE_TMP_FILE false)",
    "SELECT 1; COPY (SELECT 1 AS x) TO '{outside}'",
    "EXPORT DATABASE '{outside}'",
    "ATTACH '{outside}.db'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "CALL checkpoint()",
    "CREATE TABLE t AS SELECT 1",
]
READS_OUTSIDE = [
    ("SELECT * FROM read_text('/etc/passwd')", "/etc/passwd"),
    ("SELECT * FROM glob('/root/*')", "/root/*"),
    ("SELECT * FROM read_csv('/etc/passwd', sep = ':')", "/etc/passwd"),
    ("SELECT * FROM read_text('{manifest}')", "{manifest}"),
    ("SELECT count(*) FROM glob('{warehouse}/**')", "{warehouse}/**"),
    ("SELECT * FROM read_text('/proc/self/environ')", "/proc/self/environ"),
    ("SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')", "http://127.0.0.1:9/x.csv"),
]


def _fill(text: str, warehouse: Path, outside: Path) -> str:
    return text.format(
        partition=_partition(warehouse), manifest=_manifest(warehouse), warehouse=warehouse,
        outside=outside,
    )  # fmt: skip


@pytest.mark.parametrize("query", WRITES)
def test_a_query_that_writes_or_reconfigures_is_refused(
    warehouse: Path, tmp_path: Path, query: str
) -> None:
    before = _digests(warehouse)
    query = _fill(query, warehouse, tmp_path / "out")
    with pytest.raises(WriteNotAllowed):
        run_query(warehouse, query)
    proc = run_cli("sql", "--warehouse", str(warehouse), query, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("chesspipe: error: ") and line.endswith("(pass --allow-write to run it)")
    assert _digests(warehouse) == before
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("query", "path"), READS_OUTSIDE)
def test_a_query_reads_no_file_but_the_statistics(
    warehouse: Path, tmp_path: Path, query: str, path: str
) -> None:
    query, path = _fill(query, warehouse, tmp_path), _fill(path, warehouse, tmp_path)
    with pytest.raises(ReadNotAllowed) as refused:
        run_query(warehouse, query)
    assert refused.value.path == path
    proc = run_cli("sql", "--warehouse", str(warehouse), query, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"chesspipe: error: the query opens {path}: a query reads the warehouse's statistics "
        "and the bundled opening names, no other file (pass --allow-read PATH to let it)"
    ]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT count(*) FROM move_stats",
        "WITH m AS (SELECT games FROM move_stats) SELECT sum(games) FROM m",
        "FROM move_stats LIMIT 1",
        "VALUES (1), (2)",
        "DESCRIBE move_stats",
        "SHOW TABLES",
        "SUMMARIZE move_stats",
        "EXPLAIN SELECT count(*) FROM move_stats",
        "SELECT count(*) FROM move_stats_yearly",
        "SELECT name FROM openings WHERE key = key_after('1. e4 c5') ",
        "SELECT * FROM read_parquet('{partition}') LIMIT 1",
    ],
)
def test_what_reads_still_runs(warehouse: Path, tmp_path: Path, query: str) -> None:
    columns, rows = run_query(warehouse, _fill(query, warehouse, tmp_path))
    assert columns and rows


def test_allow_read_opens_that_folder_or_file_only(warehouse: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "a.csv").write_text("x\n1\n")
    sibling = tmp_path / "extra-sibling"  # begins with the allowed folder's name
    sibling.mkdir()
    (sibling / "b.csv").write_text("x\n2\n")
    read_a = f"SELECT x FROM read_csv('{extra / 'a.csv'}')"
    read_b = f"SELECT x FROM read_csv('{sibling / 'b.csv'}')"
    assert run_query(warehouse, read_a, allow_read=[extra])[1] == [(1,)]
    assert run_query(warehouse, read_a, allow_read=[extra / "a.csv"])[1] == [(1,)]
    with pytest.raises(ReadNotAllowed):
        run_query(warehouse, read_b, allow_read=[extra])
    with pytest.raises(ReadNotAllowed):
        run_query(warehouse, read_a)
    proc = run_cli("sql", "--warehouse", str(warehouse), "--allow-read", str(extra),
                   "--format", "csv", read_a)  # fmt: skip
    assert proc.stdout.splitlines() == ["x", "1"]
    # Reading is all it allows: no file appears in the folder.
    copy = f"COPY (SELECT 1) TO '{extra / 'c.csv'}'"
    with pytest.raises(WriteNotAllowed):
        run_query(warehouse, copy, allow_read=[extra])
    missing = run_cli("sql", "--warehouse", str(warehouse), "--allow-read",
                      str(tmp_path / "nowhere"), "SELECT 1", check=False)  # fmt: skip
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [
        f"chesspipe: error: --allow-read {tmp_path / 'nowhere'}: no such file or folder"
    ]


def test_allow_write_is_duckdb_as_it_comes(warehouse: Path, tmp_path: Path) -> None:
    out = tmp_path / "n.csv"
    run_query(warehouse, f"SET threads = 1; COPY (SELECT 7 AS n) TO '{out}'", allow_write=True)
    assert out.read_text().splitlines() == ["n", "7"]


def test_a_python_connection_is_locked_the_same_way(warehouse: Path, tmp_path: Path) -> None:
    """`connect` gives a DuckDB connection that opens the views' files and nothing else, and
    whose settings cannot change: no statement run on it creates or reads another file."""
    before = _digests(warehouse)
    con = connect(warehouse, chess_terms=True)
    try:
        assert con.execute("SELECT count(*) > 0 FROM move_stats").fetchone() == (True,)
        assert con.execute(
            "SELECT name FROM openings WHERE key = key_after('1. e4 c5') AND plies = 2"
        ).fetchall() == [("Sicilian Defense",)]
        for query in (
            "SELECT * FROM read_text('/etc/passwd')",
            f"SELECT * FROM read_text('{_manifest(warehouse)}')",
            f"SELECT * FROM glob('{tmp_path}/*')",
        ):
            with pytest.raises(duckdb.PermissionException):
                con.execute(query)
        # Beneath the statement check, DuckDB's own lock refuses the same writes and settings.
        raw = con._connection
        for query in (
            f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'",
            f"COPY (SELECT 1) TO '{warehouse / 'x.parquet'}' (FORMAT parquet)",
            f"COPY (SELECT 1) TO '{_partition(warehouse)}' (FORMAT parquet)",  # via a temp file
            f"EXPORT DATABASE '{tmp_path / 'dump'}'",
            f"ATTACH '{tmp_path / 'x.db'}'",
            "LOAD httpfs",
        ):
            with pytest.raises(WriteNotAllowed):
                con.execute(query)
            with pytest.raises(duckdb.PermissionException):
                raw.execute(query)
        for query in (
            "SET enable_external_access = true",
            "SET allowed_directories = ['/']",
            f"SET log_query_path = '{tmp_path / 'log'}'",
            "SET lock_configuration = false",
        ):
            with pytest.raises(WriteNotAllowed):
                con.execute(query)
            with pytest.raises(duckdb.InvalidInputException, match="configuration has been locked"):
                raw.execute(query)
    finally:
        con.close()
    assert _digests(warehouse) == before
    assert list(tmp_path.iterdir()) == []
    free = connect(warehouse, allow_write=True)
    try:
        free.execute(f"COPY (SELECT 1 AS x) TO '{tmp_path / 'x.csv'}'")
    finally:
        free.close()
    assert (tmp_path / "x.csv").read_text().splitlines() == ["x", "1"]


def test_a_python_connection_cannot_overwrite_the_views_files(
    warehouse: Path, tmp_path: Path
) -> None:
    """DuckDB's lock lets `COPY ... (USE_TMP_FILE false)` write the files the views read;
    `connect`'s connection refuses it, and every statement that does not read, wherever SQL
    enters it: execute, executemany, sql, query, from_query, a cursor, a relation's query."""
    copy = tmp_path / "warehouse"
    shutil.copytree(warehouse, copy)
    before = _digests(copy)
    target = _partition(copy)
    copy_over = f"COPY (SELECT 1 AS x) TO '{target}' (FORMAT parquet, USE_TMP_FILE false)"
    con = connect(copy, chess_terms=True)
    try:
        relation = con.sql("SELECT * FROM move_stats")
        attempts: list[Callable[[], object]] = [
            lambda: con.execute(copy_over),
            lambda: con.execute(f"SELECT 1; {copy_over}"),
            lambda: con.executemany(copy_over, [[], []]),
            lambda: con.sql(copy_over),
            lambda: con.query(copy_over),
            lambda: con.from_query(copy_over),
            lambda: con.cursor().execute(copy_over),
            lambda: con.duplicate().sql(copy_over),
            lambda: relation.query("r", copy_over),
            lambda: relation.filter("games > 0").query("r", copy_over),
            lambda: con.execute(con.extract_statements(copy_over)[0]),
            lambda: con.execute("PRAGMA enable_profiling = 'json'"),
        ]
        for attempt in attempts:
            with pytest.raises(WriteNotAllowed):
                attempt()
        with pytest.raises(AttributeError):
            relation._con  # noqa: B018 - DuckDB's unchecked connection stays out of reach
        with pytest.raises(WriteNotAllowed):  # a relation's own writers
            relation.limit(1).to_parquet(str(target))
        # What reads still reads, through every door.
        [(games,)] = con.execute("SELECT sum(games) FROM move_stats").fetchall()
        assert games > 0
        assert con.cursor().execute("SELECT sum(games) FROM move_stats").fetchall() == [(games,)]
        assert relation.query("r", "SELECT sum(games) FROM r").fetchall() == [(games,)]
        assert con.sql("SELECT sum(games) AS g FROM move_stats").fetchall() == [(games,)]
        assert "move_stats" in repr(con.sql("SHOW TABLES"))
    finally:
        con.close()
    assert _digests(copy) == before
    free = connect(copy, allow_write=True)  # DuckDB as it comes does what it is told
    try:
        free.execute(copy_over)
    finally:
        free.close()
    assert _digests(copy) != before


def test_only_month_folders_are_months(warehouse: Path, tmp_path: Path) -> None:
    """A stray `month=2024-01.bak` copy, or a folder named like markup, is no month: the
    statistics count each month once."""
    copy = tmp_path / "warehouse"
    shutil.copytree(warehouse, copy)
    months = copy / "move_stats"
    shutil.copytree(months / f"month={MONTH}", months / f"month={MONTH}.bak")
    shutil.copytree(months / f"month={MONTH}", months / "month=<img src=x onerror=alert(1)>")
    assert available_months(copy) == [MONTH]
    count = "SELECT month, sum(games) FROM move_stats GROUP BY month"
    assert run_query(copy, count) == run_query(warehouse, count)
    assert StatsIndex.load(copy).months == [MONTH]  # what `serve` answers and its page shows
    check = run_cli("warehouse", "check", str(copy), check=False)
    assert check.returncode == 1
    assert sorted(line.split()[0] for line in check.stdout.splitlines()) == ["not-a-month"] * 2


def test_a_warehouse_path_is_no_pattern(warehouse: Path, tmp_path: Path) -> None:
    """DuckDB reads `?` in a path as a pattern: `wh?q` would also read `whXq`'s files. Such a
    path is refused in one line, never read as a pattern."""
    pattern, other = tmp_path / "wh?q", tmp_path / "whXq"
    shutil.copytree(warehouse, pattern)
    shutil.copytree(warehouse, other)
    proc = run_cli("sql", "--warehouse", str(pattern), "SELECT count(*) FROM move_stats",
                   check=False)  # fmt: skip
    assert proc.returncode == 1 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert "DuckDB reads ? in a path as a pattern" in line
    book = run_cli("book", "build", "--warehouse", str(pattern), "--months", MONTH,
                   "--out", str(tmp_path / "b.bin"), check=False)  # fmt: skip
    assert book.returncode == 1 and "as a pattern" in book.stderr
    assert not (tmp_path / "b.bin").exists()


@pytest.mark.slow
def test_a_query_sees_one_version_of_a_month_being_replaced(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a run replaces a month again and again (a new file under the same name each
    time), every query and every book answers from one version of it: never an error, never
    a mix. Before, 6 of 95 queries failed with `TProtocolException: Invalid data`."""
    import random
    import threading

    from pipelines.books.build import build_book
    from pipelines.books.settings import BookSettings
    from pipelines.warehouse import sql

    # The month is replaced every 20-200 ms, far more often than runs publish: a read may
    # meet replacements several times in a row here.
    monkeypatch.setattr(sql, "READ_ATTEMPTS", 200)

    copy = tmp_path / "warehouse"
    shutil.copytree(warehouse, copy)
    other = tmp_path / "other"
    ingest(str(make_sample.sample_path(make_sample.SAMPLE_MONTHS[1])), MONTH, other,
           IngestSettings(ANY))  # fmt: skip
    versions = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    shutil.copy(_partition(warehouse), versions[0])
    shutil.copy(_partition(other), versions[1])
    manifests = [json.loads(_manifest(w).read_text()) for w in (warehouse, other)]
    query = "SELECT sum(games), count(*), sum(key % 1000003) FROM move_stats"
    expected = {tuple(run_query(w, query)[1][0]) for w in (warehouse, other)}
    assert len(expected) == 2
    books = []
    for n, w in enumerate((warehouse, other)):
        build_book(w, MONTH, tmp_path / f"{n}.bin", BookSettings(1, 0.0))
        books.append((tmp_path / f"{n}.bin").read_bytes())
    stop = threading.Event()
    # Replacements come every 0.5 to 3 times what a book build takes on this machine (20-200
    # ms when idle), so that reads meet them often, and still get through on a loaded machine.
    started = time.monotonic()
    build_book(copy, MONTH, tmp_path / "c.bin", BookSettings(1, 0.0))
    took = max(time.monotonic() - started, 0.02)

    def replace_again_and_again() -> None:
        """As ingest publishes a month: the new file, then its manifest, each renamed in."""
        target, rng, n = _partition(copy), random.Random(1), 0
        while not stop.is_set():
            staged = target.with_name(f".next-{n}.tmp")
            shutil.copy(versions[n % 2], staged)  # a new file, whole, then the rename
            written = staged.stat()
            recorded = manifests[n % 2] | {
                "output_size": written.st_size,
                "output_mtime_ns": written.st_mtime_ns,
            }
            staged_manifest = _manifest(copy).with_name(f".next-{n}.json.tmp")
            staged_manifest.write_text(json.dumps(recorded))
            os.replace(staged, target)
            os.replace(staged_manifest, _manifest(copy))
            n += 1
            time.sleep(rng.uniform(0.5 * took, 3 * took))

    replacer = threading.Thread(target=replace_again_and_again)
    replacer.start()
    try:
        for _ in range(120):
            assert tuple(run_query(copy, query)[1][0]) in expected
        for _ in range(20):
            build_book(copy, MONTH, tmp_path / "c.bin", BookSettings(1, 0.0))
            assert (tmp_path / "c.bin").read_bytes() in books
    finally:
        stop.set()
        replacer.join()


def test_no_query_reads_a_temp_folder(warehouse: Path, tmp_path: Path) -> None:
    """DuckDB lets every query read its temp_directory (`.tmp` under the current folder unless
    set): each connection spills to a private folder of its own, which holds no one's file."""
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "k.txt").write_text("SECRET\n")
    for query in ("SELECT * FROM read_text('.tmp/k.txt')", "SELECT * FROM glob('.tmp/*')"):
        proc = run_cli("sql", "--warehouse", str(warehouse), query, cwd=tmp_path, check=False)
        assert proc.returncode == 1, proc.stdout
        assert "SECRET" not in proc.stdout and "k.txt" not in proc.stdout
        assert proc.stderr.count("\n") == 1 and "the query opens" in proc.stderr
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(ReadNotAllowed):
            run_query(warehouse, "SELECT * FROM read_text('.tmp/k.txt')")
        con = connect(warehouse)
        try:
            with pytest.raises(duckdb.PermissionException):
                con.execute("SELECT * FROM read_text('.tmp/k.txt')").fetchall()
            spill = Path(con.execute("SELECT current_setting('temp_directory')").fetchone()[0])
            # What the lock lets through besides the views' files: the connection's own folder.
            allowed = con.execute("SELECT current_setting('allowed_directories')").fetchone()[0]
            assert [Path(folder) for folder in allowed] == [spill]
            assert spill.is_absolute() and not spill.is_relative_to(tmp_path)
            assert oct(spill.parent.stat().st_mode & 0o777) == "0o700"
            # A file put in another connection's spill folder is not readable from this one.
            other = connect(warehouse)
            other_spill = other.execute("SELECT current_setting('temp_directory')").fetchone()[0]
            Path(other_spill).mkdir()
            (Path(other_spill) / "k.txt").write_text("SECRET\n")
            with pytest.raises(duckdb.PermissionException):
                con.execute(f"SELECT * FROM read_text('{other_spill}/k.txt')").fetchall()
            other.close()
        finally:
            con.close()
    finally:
        os.chdir(cwd)


@pytest.mark.slow
def test_a_query_past_its_time_limit_is_stopped_in_one_line(warehouse: Path) -> None:
    """A cross join of 10^18 rows would run for days: --timeout stops it and says so."""
    endless = "SELECT count(*) FROM range(1000000000) a, range(1000000000) b"
    started = time.monotonic()
    proc = run_cli("sql", "--warehouse", str(warehouse), endless, "--timeout", "1", check=False)
    assert proc.returncode == 1
    assert proc.stderr == (
        "chesspipe: error: the query ran for 1 s and was stopped (its time limit)\n"
    )
    assert time.monotonic() - started < 60
    with pytest.raises(QueryTimedOut):
        run_query(warehouse, endless, timeout=0.5)
    # Under the limit a query answers as before, and the limit has a default a person would
    # not reach by accident.
    columns, rows = run_query(warehouse, "SELECT count(*) AS n FROM move_stats", timeout=30)
    assert columns == ["n"] and rows[0][0] > 0
    assert DEFAULT_TIMEOUT >= 60
    bad = run_cli("sql", "--warehouse", str(warehouse), "SELECT 1", "--timeout", "0", check=False)
    assert bad.returncode == 2 and "--timeout" in bad.stderr


def test_a_relation_cannot_create_or_change_a_table_or_view(warehouse: Path) -> None:
    """`rel.create_view('move_stats', replace=True)`, `to_table` and `create` succeeded and every
    later query failed with "infinite recursion": a read-only connection's relations refuse
    whatever creates or changes a table or a view, as the statements that do it are refused;
    so do the connection's methods that insert rows or load code."""
    con = connect(warehouse)
    try:
        relation = con.sql("SELECT * FROM move_stats")
        attempts: list[Callable[[], object]] = [
            lambda: relation.create_view("move_stats", replace=True),
            lambda: relation.to_view("move_stats"),
            lambda: relation.to_table("t"),
            lambda: relation.create("t"),
            lambda: relation.insert([1]),
            lambda: relation.insert_into("move_stats"),
            lambda: relation.update({"games": 0}),
            lambda: relation.filter("games > 0").create_view("move_stats", replace=True),
            lambda: relation.write_csv("/tmp/never.csv"),
            lambda: con.append("move_stats", relation.df()),
            lambda: con.install_extension("httpfs"),
            lambda: con.load_extension("httpfs"),
        ]
        for attempt in attempts:
            with pytest.raises(WriteNotAllowed):
                attempt()
        [(games,)] = con.execute("SELECT sum(games) FROM move_stats").fetchall()
        assert games > 0
        assert relation.aggregate("sum(games)").fetchall() == [(games,)]
    finally:
        con.close()
    assert not Path("/tmp/never.csv").exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wh?q", "wh[1]", "w*h"])
def test_no_command_writes_a_warehouse_it_could_not_read(tmp_path: Path, name: str) -> None:
    """ingest, explorer index and build-month wrote into `wh?q`, which sql and book build then
    refused: a warehouse path DuckDB would read as a pattern is refused before any write."""
    sample = str(make_sample.sample_path(MONTH))
    warehouse, books = tmp_path / name, tmp_path / "books"
    for args in (
        ("ingest", sample, "--month", MONTH, "--warehouse", str(warehouse)),
        ("explorer", "index", sample, "--month", MONTH, "--warehouse", str(warehouse)),
        ("build-month", sample, "--month", MONTH, "--warehouse", str(warehouse),
         "--books", str(books)),
        ("evals", "from-games", sample, "--warehouse", str(warehouse)),
    ):  # fmt: skip
        proc = run_cli(*args, check=False)
        assert proc.returncode == 1, (args, proc.stderr)
        [line] = proc.stderr.splitlines()
        assert "in a path as a pattern" in line
    assert not warehouse.exists() and not books.exists()
