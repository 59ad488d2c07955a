"""The monthly build as plain functions: publish, idempotency, locks, checksums, kill -9."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, date, datetime
from pathlib import Path

import chess
import chess.polyglot
import pyarrow.parquet as pq
import pytest
import zstandard

from pipelines.books.build import build_book
from pipelines.books.settings import BookSettings
from pipelines.errors import ChesspipeError
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.monthly.build import build_lock, build_month
from pipelines.monthly.manifest import MonthManifest, summary_markdown
from pipelines.monthly.publish import published_paths
from pipelines.monthly.schedule import month_to_build
from pipelines.monthly.settings import MonthSettings
from pipelines.monthly.source import SourceIdentity
from pipelines.sources.checksums import CannotVerify
from pipelines.sources.options import DownloadOptions
from pipelines.warehouse.layout import manifest_path, partition_file
from tests.conftest import ROOT, run_cli
from tests.loopback_http import LoopbackServer

SETTINGS = MonthSettings(IngestSettings(GameFilter(min_rating=0)), book=BookSettings(min_games=2))
FAST = DownloadOptions(timeout=5.0, backoff=0.01)
NAME = "lichess_db_standard_rated_2021-10.pgn.zst"


def visible_files(root: Path) -> set[str]:
    """Return the files a reader of the folder sees: none under a dot-named part."""
    if not root.exists():
        return set()
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def stamp(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_ino, info.st_mtime_ns


def test_month_to_build_is_the_previous_month() -> None:
    assert month_to_build(date(2026, 1, 3)) == "2025-12"
    assert month_to_build(datetime(2026, 1, 1, 0, 0, tzinfo=UTC)) == "2025-12"
    assert month_to_build(datetime(2025, 12, 31, 23, 59, tzinfo=UTC)) == "2025-11"
    assert month_to_build(date(2024, 3, 3)) == "2024-02"
    assert month_to_build(date(2000, 2, 29)) == "2000-01"


@pytest.mark.slow
def test_build_publish_and_idempotency(tmp_path: Path, games_2021: Path) -> None:
    warehouse, books = tmp_path / "wh", tmp_path / "books"
    manifest = build_month(str(games_2021), "2021-10", warehouse, books, SETTINGS)
    book, manifest_file = published_paths(books, "2021-10")
    assert manifest.status == "built" and not manifest.ingest_reused
    assert visible_files(books) == {book.name, manifest_file.name}
    assert json.loads(manifest_file.read_text()) == manifest.to_json()

    # The same as running ingest and book build by hand.
    ingest(str(games_2021), "2021-10", tmp_path / "ref", SETTINGS.ingest)
    reference = build_book(tmp_path / "ref", ["2021-10"], tmp_path / "ref.bin", SETTINGS.book)
    assert book.read_bytes() == (tmp_path / "ref.bin").read_bytes()
    assert manifest.book_sha256 == reference.sha256
    assert manifest.source_identity.sha256 == hashlib.sha256(games_2021.read_bytes()).hexdigest()

    # The manifest's top moves are python-chess's reading of the published book.
    with chess.polyglot.open_reader(book) as reader:
        entries = sorted(reader.find_all(chess.Board()), key=lambda e: -e.weight)
    total = sum(e.weight for e in entries)
    assert [(m.move, m.weight) for m in manifest.top_moves] == [
        (e.move.uci(), e.weight) for e in entries[:5]
    ]
    assert manifest.top_moves[0].share == round(entries[0].weight / total, 4)
    text = summary_markdown(manifest)
    assert f"games read: {manifest.ingest.games_read:,}" in text
    assert f"| {manifest.top_moves[0].san} (" in text

    # Again with the same source and settings: nothing is rewritten.
    before = {p: stamp(p) for p in (book, manifest_file, partition_file(warehouse, "2021-10"))}
    again = build_month(str(games_2021), "2021-10", warehouse, books, SETTINGS)
    assert again.status == "up-to-date"
    assert {p: stamp(p) for p in before} == before

    # A manifest written before the book's `games` was named `entry_games` still reads.
    older = json.loads(manifest_file.read_text())
    older["book"]["games"] = older["book"].pop("entry_games")
    manifest_file.write_text(json.dumps(older))
    assert MonthManifest.read(manifest_file) == manifest
    assert (
        build_month(str(games_2021), "2021-10", warehouse, books, SETTINGS).status == "up-to-date"
    )
    manifest.write(manifest_file)

    # New book settings: the book is rebuilt from the partition already there.
    stricter = MonthSettings(SETTINGS.ingest, book=BookSettings(min_games=5))
    rebuilt = build_month(str(games_2021), "2021-10", warehouse, books, stricter)
    assert rebuilt.status == "built" and rebuilt.ingest_reused
    assert (
        stamp(partition_file(warehouse, "2021-10")) == before[partition_file(warehouse, "2021-10")]
    )
    assert rebuilt.book.entries < manifest.book.entries

    # --force redoes everything.
    forced = build_month(str(games_2021), "2021-10", warehouse, books, stricter, force=True)
    assert forced.status == "built" and not forced.ingest_reused
    assert forced.book_sha256 == rebuilt.book_sha256

    # A run already holding the month makes another fail at once, with a clear message.
    with build_lock(books, "2021-10"), pytest.raises(ChesspipeError, match="already running"):
        build_month(str(games_2021), "2021-10", warehouse, books, SETTINGS)


@pytest.mark.slow
def test_remote_source_checksum_and_cache(tmp_path: Path, games_2021: Path) -> None:
    data = games_2021.read_bytes()
    cache = tmp_path / "cache"
    with LoopbackServer() as server:
        good = server.add_dump("/standard", NAME, data, drops=[50_000, 300_000])
        bad = server.add_dump("/corrupt", NAME, data, digest="e" * 64)
        options = DownloadOptions(timeout=5.0, backoff=0.01, cache=cache)
        manifest = build_month(
            good, "2021-10", tmp_path / "wh", tmp_path / "books", SETTINGS, options
        )
        assert manifest.source_identity == SourceIdentity(hashlib.sha256(data).hexdigest())
        assert manifest.ingest.source_sha256_verified is True
        assert (cache / NAME).read_bytes() == data
        local = build_month(
            str(games_2021), "2021-10", tmp_path / "wh2", tmp_path / "books2", SETTINGS
        )
        assert manifest.book_sha256 == local.book_sha256
        # The second run sees the same published checksum: up to date without downloading.
        gets = sum(1 for m, p, _ in server.requests if m == "GET" and p.endswith(NAME))
        again = build_month(good, "2021-10", tmp_path / "wh", tmp_path / "books", SETTINGS, options)
        assert again.status == "up-to-date"
        assert sum(1 for m, p, _ in server.requests if m == "GET" and p.endswith(NAME)) == gets

        with pytest.raises(ChesspipeError, match="sha256 mismatch"):
            build_month(bad, "2021-10", tmp_path / "bad-wh", tmp_path / "bad-books", SETTINGS, FAST)
        assert visible_files(tmp_path / "bad-wh") == set()
        assert visible_files(tmp_path / "bad-books") == set()
        with pytest.raises(ChesspipeError, match="HTTP 404"):
            build_month(
                server.base + "/standard/nothing.pgn.zst",
                "2021-10",
                tmp_path / "x",
                tmp_path / "y",
                SETTINGS,
                DownloadOptions(verify=False, backoff=0.01),
            )


@pytest.mark.slow
def test_an_unverifiable_url_names_the_setting_and_the_command_names_its_option(
    tmp_path: Path, games_2021: Path
) -> None:
    with LoopbackServer() as server:
        url = server.add("/unlisted/" + NAME, games_2021.read_bytes())  # no sha256sums.txt
        with pytest.raises(CannotVerify, match="sha256sums.txt answered HTTP 404") as raised:
            build_month(url, "2021-10", tmp_path / "wh", tmp_path / "books", SETTINGS, FAST)
        assert "--" not in str(raised.value)
        proc = run_cli(
            "build-month", url, "--month", "2021-10", "--warehouse", str(tmp_path / "wh"),
            "--books", str(tmp_path / "books"), check=False,
        )  # fmt: skip
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("chesspipe: error:")]
    assert len(errors) == 1 and errors[0].endswith("(pass --no-verify to skip the check)")
    # What the command reports in its line is not logged again on the terminal by Prefect.
    assert "Encountered exception" not in proc.stderr and "failed with exception" not in proc.stderr
    assert visible_files(tmp_path / "books") == set()


@pytest.mark.slow
def test_kill_9_then_rerun_equals_an_uninterrupted_run(
    tmp_path: Path, games_2013: Path, prefect_api: dict[str, str]
) -> None:
    # A plain (uncompressed) slice of real games, re-compressed in several frames, served slowly.
    text = zstandard.ZstdDecompressor().decompress(games_2013.read_bytes(), max_output_size=1 << 30)
    games = text[: text.index(b"\n\n[Event ", 4_000_000) + 2]
    compressor = zstandard.ZstdCompressor(level=3)
    data = b"".join(
        compressor.compress(games[i : i + 500_000]) for i in range(0, len(games), 500_000)
    )
    settings = MonthSettings(
        IngestSettings(GameFilter(min_rating=0)), book=BookSettings(min_games=3)
    )
    options = ["--min-rating", "0", "--min-games", "3", "--retries", "1", "--timeout", "5"]
    (tmp_path / "dump.pgn.zst").write_bytes(data)
    reference = build_month(
        str(tmp_path / "dump.pgn.zst"),
        "2013-01",
        tmp_path / "ref-wh",
        tmp_path / "ref-books",
        settings,
    )
    warehouse, books = tmp_path / "wh", tmp_path / "books"
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        **prefect_api,  # a running Prefect server: the kill is of the build, not of a server
    )
    with LoopbackServer() as server:
        url = server.add_dump(
            "/standard", "lichess_db_standard_rated_2013-01.pgn.zst", data, chunk=16_384, delay=0.05
        )
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pipelines",
                "build-month",
                url,
                "--month",
                "2013-01",
                "--warehouse",
                str(warehouse),
                "--books",
                str(books),
                *options,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 240
            while server.bytes_sent < len(data) // 3:
                assert proc.poll() is None, "the build ended before it could be killed"
                assert time.monotonic() < deadline, "the build never started downloading"
                time.sleep(0.05)
            # A second run of the month, from another process, is refused with a clear message:
            # into the same books, and into another books folder over the same warehouse.
            with pytest.raises(ChesspipeError, match="build-month 2013-01 is already running"):
                build_month(url, "2013-01", warehouse, books, settings, FAST)
            with pytest.raises(ChesspipeError, match="month 2013-01 is being built by another run"):
                build_month(url, "2013-01", warehouse, tmp_path / "books-2", settings, FAST)
            assert proc.poll() is None and server.bytes_sent < len(data)
        finally:
            # kill -9 the build, and the temporary Prefect server it started (which a kill of
            # the build alone would leave running).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        # Nothing half-written is visible to readers of the warehouse or the books.
        assert visible_files(warehouse) == set()
        assert visible_files(books) == set()
        # The rerun (same code path, no Prefect) publishes what an uninterrupted run does.
        server.files["/standard/lichess_db_standard_rated_2013-01.pgn.zst"].delay = 0.0
        rerun = build_month(url, "2013-01", warehouse, books, settings, FAST)
    assert rerun.status == "built"
    assert rerun.book_sha256 == reference.book_sha256
    assert pq.read_table(partition_file(warehouse, "2013-01")).equals(
        pq.read_table(partition_file(tmp_path / "ref-wh", "2013-01"))
    )
    assert visible_files(warehouse) == visible_files(tmp_path / "ref-wh")
    assert visible_files(books) == visible_files(tmp_path / "ref-books")
    leftovers = [p for root in (books, warehouse) for p in root.glob(".staging/*")]
    assert leftovers == []


@pytest.mark.slow
def test_object_storage_warehouse_and_books(tmp_path: Path, games_2021: Path) -> None:
    import duckdb
    import fsspec

    fs = fsspec.filesystem("memory")
    warehouse, books = "memory://chesspipe-test/wh", "memory://chesspipe-test/books"
    try:
        manifest = build_month(str(games_2021), "2021-10", warehouse, books, SETTINGS)
        local = build_month(
            str(games_2021), "2021-10", tmp_path / "wh", tmp_path / "books", SETTINGS
        )
        assert manifest.status == "built"
        assert sorted(fs.find("/chesspipe-test")) == [
            "/chesspipe-test/books/lichess-2021-10.bin",
            "/chesspipe-test/books/lichess-2021-10.json",
            "/chesspipe-test/wh/explorer/month=2021-10.json",
            "/chesspipe-test/wh/explorer/month=2021-10/counts.bin",
            "/chesspipe-test/wh/explorer/month=2021-10/games.parquet",
            "/chesspipe-test/wh/explorer/month=2021-10/lookup.duckdb",
            "/chesspipe-test/wh/explorer/month=2021-10/records.bin",
            "/chesspipe-test/wh/move_stats/month=2021-10.json",
            "/chesspipe-test/wh/move_stats/month=2021-10/part-0.parquet",
        ]
        book = "/chesspipe-test/books/lichess-2021-10.bin"
        assert fs.cat(book) == published_paths(tmp_path / "books", "2021-10")[0].read_bytes()
        assert local.book_sha256 == manifest.book_sha256
        # DuckDB reads the Parquet statistics where they are stored.
        con = duckdb.connect()
        con.register_filesystem(fs)
        remote = con.sql(
            "SELECT * FROM read_parquet('memory://chesspipe-test/wh/move_stats/month=*/*.parquet',"
            " hive_partitioning = true) ORDER BY ALL"
        ).fetchall()
        here = con.sql(
            f"SELECT * FROM read_parquet('{tmp_path}/wh/move_stats/month=*/*.parquet',"
            " hive_partitioning = true) ORDER BY ALL"
        ).fetchall()
        assert remote == here and len(remote) == local.ingest.rows
        # Up to date: no object is rewritten.
        created = {path: fs.info(path)["created"] for path in fs.find("/chesspipe-test")}
        again = build_month(str(games_2021), "2021-10", warehouse, books, SETTINGS)
        assert again.status == "up-to-date"
        assert {path: fs.info(path)["created"] for path in fs.find("/chesspipe-test")} == created
        # New book settings reuse the stored partition and replace only the book and manifest.
        stricter = MonthSettings(SETTINGS.ingest, book=BookSettings(min_games=5))
        rebuilt = build_month(str(games_2021), "2021-10", warehouse, books, stricter)
        assert rebuilt.status == "built" and rebuilt.ingest_reused
        partition = "/chesspipe-test/wh/move_stats/month=2021-10/part-0.parquet"
        assert fs.info(partition)["created"] == created[partition]
        assert fs.info(book)["created"] != created[book]
    finally:
        if fs.exists("/chesspipe-test"):
            fs.rm("/chesspipe-test", recursive=True)


KILLABLE = (
    "import sys\n"
    "from pipelines.books.settings import BookSettings\n"
    "from pipelines.monthly.build import build_month\n"
    "from pipelines.monthly.settings import MonthSettings\n"
    "from pipelines.games.scan import GameFilter\n"
    "from pipelines.ingest.settings import IngestSettings\n"
    "ingest = IngestSettings(GameFilter(min_rating=0))\n"
    "settings = MonthSettings(ingest, BookSettings(min_games=3))\n"
    "build_month(sys.argv[1], '2013-01', sys.argv[2], sys.argv[3], settings)\n"
)


def assert_consistent(warehouse: Path, books: Path) -> None:
    """Whatever a killed run left visible is whole: readable, and matching its manifest."""
    stats = "move_stats/month=2013-01/part-0.parquet"
    stats_manifest = "move_stats/month=2013-01.json"
    explorer = (
        "explorer/month=2013-01/games.parquet",
        "explorer/month=2013-01/lookup.duckdb",
        "explorer/month=2013-01/counts.bin",
        "explorer/month=2013-01/records.bin",
    )
    explorer_manifest = "explorer/month=2013-01.json"
    assert visible_files(warehouse) <= {stats, stats_manifest, *explorer, explorer_manifest}
    if (warehouse / explorer_manifest).exists():
        recorded = json.loads((warehouse / explorer_manifest).read_text())
        fields = (
            "games_sha256",
            "lookup_sha256",
            "counts_sha256",
            "records_sha256",
        )
        for path, field in zip(explorer, fields, strict=True):
            assert recorded[field] == hashlib.sha256((warehouse / path).read_bytes()).hexdigest()
    if (warehouse / stats).exists():
        pq.read_table(warehouse / stats)
    if (warehouse / stats_manifest).exists():
        recorded = json.loads((warehouse / stats_manifest).read_text())
        assert (
            recorded["output_sha256"]
            == hashlib.sha256((warehouse / stats).read_bytes()).hexdigest()
        )
    book, manifest_file = published_paths(books, "2013-01")
    assert visible_files(books) <= {book.name, manifest_file.name}
    if book.exists():
        with chess.polyglot.open_reader(book) as reader:
            assert len(reader) * 16 == book.stat().st_size
    if manifest_file.exists():
        recorded = json.loads(manifest_file.read_text())
        assert recorded["book_sha256"] == hashlib.sha256(book.read_bytes()).hexdigest()


@pytest.mark.slow
def test_kill_9_at_any_moment(tmp_path: Path, games_2013: Path) -> None:
    text = zstandard.ZstdDecompressor().decompress(games_2013.read_bytes(), max_output_size=1 << 30)
    dump = tmp_path / "dump.pgn.zst"
    games = text[: text.index(b"\n\n[Event ", 4_000_000) + 2]
    dump.write_bytes(zstandard.ZstdCompressor(level=3).compress(games))
    settings = MonthSettings(
        IngestSettings(GameFilter(min_rating=0)), book=BookSettings(min_games=3)
    )
    reference = build_month(
        str(dump), "2013-01", tmp_path / "ref-wh", tmp_path / "ref-books", settings
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    partition = Path("move_stats/month=2013-01")
    # Kill points spread over the run: while scanning, while DuckDB writes the partition,
    # right after it is published, while the book is built, after the book is published.
    moments = {
        "scanning": lambda wh, bk: any(wh.glob(".staging/2013-01-*")),
        "merging": lambda wh, bk: any((wh / partition).glob(".part-0.parquet.*.tmp")),
        "partition published": lambda wh, bk: (wh / partition / "part-0.parquet").exists(),
        "building the book": lambda wh, bk: any(bk.glob(".staging/2013-01-*")),
        "book published": lambda wh, bk: published_paths(bk, "2013-01")[0].exists(),
    }
    killed = []
    for n, (moment, reached) in enumerate(moments.items()):
        warehouse, books = tmp_path / f"wh-{n}", tmp_path / f"books-{n}"
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLABLE, str(dump), str(warehouse), str(books)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while proc.poll() is None and not reached(warehouse, books):
                assert time.monotonic() < deadline
                time.sleep(0.001)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(moment)
        finally:
            proc.wait()
        assert_consistent(warehouse, books)
        rerun = build_month(str(dump), "2013-01", warehouse, books, settings)
        assert rerun.book_sha256 == reference.book_sha256
        assert pq.read_table(partition_file(warehouse, "2013-01")).equals(
            pq.read_table(partition_file(tmp_path / "ref-wh", "2013-01"))
        )
        assert visible_files(warehouse) == visible_files(tmp_path / "ref-wh")
        assert visible_files(books) == visible_files(tmp_path / "ref-books")
    # Each moment lasts long enough to be caught in practice (all five here); demand three.
    assert "scanning" in killed and len(killed) >= 3


#: Runs `chesspipe ARGS` and stops the process (SIGSTOP) right after it renames a file onto
#: TARGET, so that the test kills it at exactly that publish step.
STOP_AFTER_RENAME = (
    "import os, signal, sys\n"
    "target = os.path.abspath(sys.argv[1])\n"
    "rename = os.replace\n"
    "def replace(src, dst, *args, **kwargs):\n"
    "    rename(src, dst, *args, **kwargs)\n"
    "    if os.path.abspath(dst) == target:\n"
    "        os.kill(os.getpid(), signal.SIGSTOP)\n"
    "os.replace = replace\n"
    "from pipelines.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def stopped(pid: int) -> bool:
    """Return whether a process is stopped (state T in /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


@pytest.mark.slow
def test_kill_9_at_each_publish_step_leaves_nothing_behind(
    tmp_path: Path, games_2013: Path, prefect_api: dict[str, str]
) -> None:
    from pipelines.warehouse.check import check_warehouse

    # A real month in several zstd frames, as pzstd writes them: ingest stages one file per unit.
    text = zstandard.ZstdDecompressor().decompress(games_2013.read_bytes(), max_output_size=1 << 30)
    games = text[: text.index(b"\n\n[Event ", 2_000_000) + 2]
    compressor = zstandard.ZstdCompressor(level=3)
    dump = tmp_path / "lichess_db_standard_rated_2013-01.pgn.zst"
    dump.write_bytes(
        b"".join(compressor.compress(games[i : i + 250_000]) for i in range(0, len(games), 250_000))
    )
    settings = MonthSettings(
        IngestSettings(GameFilter(min_rating=0)), book=BookSettings(min_games=3)
    )
    reference = build_month(
        str(dump), "2013-01", tmp_path / "ref-wh", tmp_path / "ref-books", settings
    )
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        **prefect_api,  # a running Prefect server: the kill is of the build, not of a server
    )
    steps = {
        "partition renamed": lambda wh, bk: partition_file(wh, "2013-01"),
        "ingest manifest written": lambda wh, bk: manifest_path(wh, "2013-01"),
        "book renamed": lambda wh, bk: published_paths(bk, "2013-01")[0],
        "book manifest written": lambda wh, bk: published_paths(bk, "2013-01")[1],
    }
    for n, (step, file_of) in enumerate(steps.items()):
        warehouse, books = tmp_path / f"wh-{n}", tmp_path / f"books-{n}"
        target = file_of(warehouse, books)
        proc = subprocess.Popen(
            [
                sys.executable, "-c", STOP_AFTER_RENAME, str(target),
                "build-month", str(dump), "--month", "2013-01",
                "--warehouse", str(warehouse), "--books", str(books),
                "--min-rating", "0", "--min-games", "3",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 240
            while not (target.exists() and stopped(proc.pid)):
                assert proc.poll() is None, f"the build ended before {step}"
                assert time.monotonic() < deadline, f"the build never reached {step}"
                time.sleep(0.01)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert proc.returncode == -signal.SIGKILL, step
        assert_consistent(warehouse, books)
        if step == "partition renamed":  # the units the killed run staged are still there
            assert any(warehouse.glob(".staging/2013-01-*/*"))
        rerun = build_month(str(dump), "2013-01", warehouse, books, settings)
        assert rerun.book_sha256 == reference.book_sha256, step
        assert published_paths(books, "2013-01")[0].read_bytes() == (
            published_paths(tmp_path / "ref-books", "2013-01")[0].read_bytes()
        )
        assert pq.read_table(partition_file(warehouse, "2013-01")).equals(
            pq.read_table(partition_file(tmp_path / "ref-wh", "2013-01"))
        ), step
        assert visible_files(warehouse) == visible_files(tmp_path / "ref-wh")
        assert visible_files(books) == visible_files(tmp_path / "ref-books")
        # Nothing left behind: no staging, no temporary file, and the warehouse checks clean.
        for root in (warehouse, books):
            assert list(root.glob(".staging/*")) == [], step
            assert [p for p in root.rglob("*.tmp")] == [], step
        assert check_warehouse(warehouse) == [], step
        assert run_cli("warehouse", "check", str(warehouse)).returncode == 0


@pytest.mark.slow
def test_the_build_indexes_the_explorer(tmp_path: Path, games_2021: Path) -> None:
    """The month's build runs `explorer index` after ingest (the files it writes by hand),
    reuses them while the source and filter are unchanged, and leaves them out when asked."""
    from dataclasses import replace

    from pipelines.explorer.index import index_month
    from pipelines.explorer.layout import counts_file, explorer_manifest_path, games_file
    from pipelines.explorer.settings import ExplorerSettings

    warehouse, books = tmp_path / "wh", tmp_path / "books"
    files = (games_file(warehouse, "2021-10"), counts_file(warehouse, "2021-10"))
    built = build_month(str(games_2021), "2021-10", warehouse, books, SETTINGS)
    assert built.status == "built" and built.settings.explorer
    by_hand = index_month(
        str(games_2021), "2021-10", tmp_path / "ref", ExplorerSettings(SETTINGS.ingest.rules)
    )
    reference = (
        games_file(tmp_path / "ref", "2021-10"),
        counts_file(tmp_path / "ref", "2021-10"),
    )
    assert [p.read_bytes() for p in files] == [p.read_bytes() for p in reference]
    recorded = json.loads(explorer_manifest_path(warehouse, "2021-10").read_text())
    assert recorded["games_kept"] == by_hand.games_kept == built.ingest.games_kept
    assert recorded["source_sha256"] == built.source_identity.sha256
    assert recorded["games_sha256"] == hashlib.sha256(files[0].read_bytes()).hexdigest()

    # New book settings: the explorer's files stay as they are, like the partition.
    before = {p: stamp(p) for p in (*files, explorer_manifest_path(warehouse, "2021-10"))}
    stricter = replace(SETTINGS, book=BookSettings(min_games=5))
    assert build_month(str(games_2021), "2021-10", warehouse, books, stricter).ingest_reused
    assert {p: stamp(p) for p in before} == before
    # A file that no longer has its sha256 is indexed again.
    files[1].write_bytes(b"damaged")
    build_month(str(games_2021), "2021-10", warehouse, books, SETTINGS)
    assert files[1].read_bytes() == reference[1].read_bytes()

    # A book published before the build indexed the explorer is not up to date: the month is
    # indexed (the partition reused).
    _, manifest_file = published_paths(books, "2021-10")
    older = json.loads(manifest_file.read_text())
    del older["settings"]["explorer"]
    manifest_file.write_text(json.dumps(older))
    fresh = tmp_path / "wh-old"
    ingest(str(games_2021), "2021-10", fresh, SETTINGS.ingest)
    upgraded = build_month(str(games_2021), "2021-10", fresh, books, SETTINGS)
    assert upgraded.status == "built" and upgraded.ingest_reused
    assert games_file(fresh, "2021-10").read_bytes() == reference[0].read_bytes()

    # Turned off: no explorer data, and recorded so.
    off = replace(SETTINGS, explorer=False)
    other = build_month(str(games_2021), "2021-10", tmp_path / "wh-off", tmp_path / "b-off", off)
    assert other.status == "built" and not other.settings.explorer
    assert not (tmp_path / "wh-off" / "explorer").exists()


#: STOP_AFTER_RENAME, stopping at the first rename onto TARGET only (a stopped run that puts
#: the previous file back renames onto TARGET again).
STOP_ONCE_AFTER_RENAME = STOP_AFTER_RENAME.replace(
    "    if os.path.abspath(dst) == target:\n",
    "    if os.path.abspath(dst) == target and not replace.__dict__.get('done'):\n"
    "        replace.__dict__['done'] = True\n",
)


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_a_build_stopped_after_its_ingest_leaves_a_book_the_check_finds_and_rebuilds(
    tmp_path: Path, prefect_api: dict[str, str], stop: str
) -> None:
    """A month built from one dump, then built from another and stopped right after its
    ingest: the new statistics (and the explorer's month, published with them) stand beside
    the previous book, whose run manifest records the statistics it was built from. `warehouse
    check --books` reports the book as older than the month, `--repair` builds the book again
    from the statistics the month has, and the next build-month equals an uninterrupted one."""
    from pipelines.explorer.layout import explorer_manifest_path
    from pipelines.monthly.check import check_books
    from tests.sample_tool import make_sample

    month = make_sample.SAMPLE_MONTHS[0]
    first, second = (make_sample.sample_path(m) for m in make_sample.SAMPLE_MONTHS[:2])
    warehouse, books = tmp_path / "wh", tmp_path / "books"
    options = ("--month", month, "--warehouse", str(warehouse), "--books", str(books),
               "--min-rating", "0", "--min-games", "1", "--quiet")  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT), **prefect_api)
    subprocess.run([sys.executable, "-m", "pipelines", "build-month", str(first), *options],
                   cwd=ROOT, env=env, check=True, capture_output=True)  # fmt: skip
    book, run_manifest = published_paths(books, month)
    old_book = book.read_bytes()
    # Stopped as the month's set (statistics, then the explorer's) renames its last file, the
    # ingest manifest: the ingest step is done.
    target = manifest_path(warehouse, month)
    proc = subprocess.Popen(
        [sys.executable, "-c", STOP_ONCE_AFTER_RENAME, str(target), "build-month", str(second),
         *options],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not stopped(proc.pid):
            assert proc.poll() is None, "the build ended before its ingest manifest was renamed"
            assert time.monotonic() < deadline, "the build never renamed its ingest manifest"
            time.sleep(0.01)
        number = getattr(signal, stop)
        os.kill(proc.pid, number)
        os.kill(proc.pid, signal.SIGCONT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode in (-number, 128 + number), (proc.returncode, stderr)
    if stop != "SIGKILL":
        assert stderr.count(b"\n") == 1, stderr
    # The month's statistics are the second dump's; the book is still the first's.
    assert json.loads(manifest_path(warehouse, month).read_text())["source"] == str(second)
    assert book.read_bytes() == old_book
    checked = run_cli("warehouse", "check", str(warehouse), "--books", str(books), check=False)
    assert checked.returncode == 1
    lines = checked.stdout.splitlines()
    assert any(line.startswith(f"stale-book [{month}] {run_manifest}") for line in lines), lines
    assert not any(line.startswith(f"stale-explorer [{month}] ") for line in lines), lines
    recorded_source = json.loads(explorer_manifest_path(warehouse, month).read_text())["source"]
    assert recorded_source == str(second)
    repaired = run_cli("warehouse", "check", str(warehouse), "--books", str(books), "--repair",
                       check=False)  # fmt: skip
    assert f"stale-book [{month}] {book}: book built again" in repaired.stdout
    # The repaired book is the one `book build` makes from the statistics the month has now.
    reference = tmp_path / "reference.bin"
    run_cli("book", "build", "--warehouse", str(warehouse), "--months", month,
            "--min-games", "1", "--out", str(reference))  # fmt: skip
    assert book.read_bytes() == reference.read_bytes() != old_book
    recorded = MonthManifest.read(run_manifest)
    assert recorded is not None and recorded.status == "repaired"
    assert [f for f in check_books(warehouse, books) if f.kind == "stale-book"] == []
    # The next build of the month indexes the explorer again and equals an uninterrupted build.
    subprocess.run([sys.executable, "-m", "pipelines", "build-month", str(second), *options],
                   cwd=ROOT, env=env, check=True, capture_output=True)  # fmt: skip
    assert check_books(warehouse, books) == []
    clean = tmp_path / "clean"
    subprocess.run(
        [sys.executable, "-m", "pipelines", "build-month", str(second), "--month", month,
         "--warehouse", str(clean / "wh"), "--books", str(clean / "books"), "--min-rating", "0",
         "--min-games", "1", "--quiet"],
        cwd=ROOT, env=env, check=True, capture_output=True,
    )  # fmt: skip
    assert book.read_bytes() == published_paths(clean / "books", month)[0].read_bytes()
    assert partition_file(warehouse, month).read_bytes() == (
        partition_file(clean / "wh", month).read_bytes()
    )
