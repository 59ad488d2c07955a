"""Warehouse and books on a real S3 endpoint (moto's server, its own process): a backfill's
objects and their order, kill -9 while publishing, DuckDB reading the bucket, one-line errors."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.books.settings import BookSettings
from pipelines.explorer.layout import MONTH_FILES, explorer_manifest_path, month_dir
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.settings import IngestSettings
from pipelines.monthly.build import build_month
from pipelines.monthly.publish import published_paths
from pipelines.monthly.settings import MonthSettings
from pipelines.warehouse.explorer_files import SHA256_FIELDS
from pipelines.warehouse.layout import manifest_path, partition_file
from tests.conftest import ROOT, need_module, run_cli
from tests.moto_s3 import MotoServer, Request, json_objects

SAMPLE = str(ROOT / "data" / "sample" / "lichess_sample_{month}.pgn.zst")
MONTHS = ("2024-01", "2024-02")
#: (and the book's warehouse: where the statistics were, not what they hold)
VOLATILE = {"timings", "finished_at", "seconds", "workers", "warehouse", "output_mtime_ns"}


def settings(min_rating: int = 0) -> MonthSettings:
    rules = GameFilter(min_rating=min_rating)
    return MonthSettings(IngestSettings(rules), BookSettings(min_games=2))


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    for module, install in (("moto", "'moto[server]'"), ("s3fs", "s3fs"), ("boto3", "boto3")):
        need_module(module, f"{install} (chesspipe's dev and s3 extras)")
    with MotoServer(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture
def s3_env(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """This process and the commands it runs reach the moto server, with no other AWS setting."""
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    for key, value in moto.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    with moto.fresh_clients():
        yield moto.env


def keys(month: str) -> dict[str, str]:
    """The keys a month is published at in a bucket holding wh/ and books/, in the order they
    are put in place: the statistics, the explorer's month, the book."""
    here = Path(".")
    explorer = {
        f"explorer {name}": f"wh/{(month_dir(here, month) / name).as_posix()}"
        for name in MONTH_FILES
    }
    return {
        "partition": f"wh/{partition_file(here, month).as_posix()}",
        "ingest manifest": f"wh/{manifest_path(here, month).as_posix()}",
        **explorer,
        "explorer manifest": f"wh/{explorer_manifest_path(here, month).as_posix()}",
        "book": f"books/{published_paths(here, month)[0].name}",
        "run manifest": f"books/{published_paths(here, month)[1].name}",
    }


def stable(manifest: dict[str, Any]) -> dict[str, Any]:
    """A manifest without what differs between identical runs."""
    out = {k: v for k, v in manifest.items() if k not in VOLATILE}
    for part in ("ingest", "book"):
        if isinstance(out.get(part), dict):
            out[part] = {k: v for k, v in out[part].items() if k not in VOLATILE}
    return out


def without_keys(manifest: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    return {k: v for k, v in stable(manifest).items() if k not in keys}


def without(objects: dict[str, bytes], *folders: str) -> dict[str, bytes]:
    """The objects of a bucket outside some folders (`/.staging/`, `/.locks/`)."""
    return {k: v for k, v in objects.items() if not any(f in f"/{k}" for f in folders)}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def steps_of(requests: list[Request], bucket: str, month: str) -> list[tuple[str, str]]:
    """The writes of a month's objects, in the order the server received them: (what, name)."""
    steps = []
    for request in requests:
        if not request.writes or month not in request.key or "/.locks/" in request.key:
            continue  # (the run's leases: tests/test_store_leases.py)
        key = request.key.removeprefix(f"{bucket}/")
        staged = "/.staging/" in f"/{key}"
        if request.copy_source is not None:
            assert "/.staging/" in request.copy_source, request
            steps.append(("copy", key))
        elif request.method == "DELETE":
            steps.append(("unstage" if staged else "delete", key.rsplit("/", 1)[-1]))
        else:
            assert staged, f"{key} was written in place, not copied from its staged upload"
            steps.append(("stage", key.rsplit("/", 1)[-1]))
    return steps


@pytest.mark.slow
def test_backfill_into_a_bucket_publishes_what_a_local_run_does_in_order(
    moto: MotoServer, s3_env: dict[str, str], tmp_path: Path
) -> None:
    bucket = moto.create_bucket("backfill")
    local_settings = settings()
    local = {
        month: build_month(
            SAMPLE.format(month=month), month, tmp_path / "wh", tmp_path / "books", local_settings
        )
        for month in MONTHS
    }
    with moto.recording_requests() as requests:
        proc = run_cli(
            "backfill", "--months", "2024-01..2024-02", "--source", SAMPLE,
            "--warehouse", f"s3://{bucket}/wh", "--books", f"s3://{bucket}/books",
            "--min-rating", "0", "--min-games", "2", "--threads", "2",
            env={"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": "",
                 "PREFECT_SERVER_ANALYTICS_ENABLED": "false"},
        )  # fmt: skip
    summary = json.loads(proc.stdout)
    assert [(m["month"], m["status"], m["book"]) for m in summary] == [
        (month, "built", f"s3://{bucket}/books/lichess-{month}.bin") for month in MONTHS
    ]
    objects = moto.objects(bucket)
    # Exactly the published objects: nothing staged is left.
    assert sorted(objects) == sorted(key for month in MONTHS for key in keys(month).values())
    for month in MONTHS:
        key = keys(month)
        # The same bytes as the local run's partition and book, and the manifests record them.
        assert objects[key["partition"]] == partition_file(tmp_path / "wh", month).read_bytes()
        assert objects[key["book"]] == published_paths(tmp_path / "books", month)[0].read_bytes()
        ingest_manifest = json.loads(objects[key["ingest manifest"]])
        run_manifest = json.loads(objects[key["run manifest"]])
        assert ingest_manifest["output_sha256"] == sha256(objects[key["partition"]])
        assert run_manifest["book_sha256"] == sha256(objects[key["book"]])
        assert run_manifest["book_sha256"] == local[month].book_sha256
        local_ingest = json.loads(manifest_path(tmp_path / "wh", month).read_text())
        assert stable(ingest_manifest) == stable(local_ingest)
        assert stable(run_manifest) == stable(local[month].to_json())
        assert run_manifest["book"]["warehouse"] == f"s3://{bucket}/wh"
        # The explorer's month, published with the statistics: the local run's.
        for name in ("games.parquet", "counts.bin", "records.bin"):
            here = month_dir(tmp_path / "wh", month) / name
            assert objects[key[f"explorer {name}"]] == here.read_bytes(), name
        explorer_manifest = json.loads(objects[key["explorer manifest"]])
        local_explorer = json.loads(explorer_manifest_path(tmp_path / "wh", month).read_text())
        lookup = {"lookup_sha256"}  # (DuckDB's file differs by the order its threads wrote)
        assert without_keys(explorer_manifest, lookup) == without_keys(local_explorer, lookup)
        assert explorer_manifest["lookup_sha256"] == sha256(objects[key["explorer lookup.duckdb"]])
        assert explorer_manifest["counts_sha256"] == sha256(objects[key["explorer counts.bin"]])
        # The documented order: each file uploaded under .staging/ first, then copied into
        # place, partition before its manifest, the explorer's files before theirs, book before
        # its manifest; the staged copies go.
        names = {name: k.rsplit("/", 1)[-1] for name, k in key.items()}
        order = tuple(key)
        assert steps_of(requests, bucket, month) == [
            *(("stage", names[name]) for name in order),
            *(("copy", key[name]) for name in order),
            *(("unstage", names[name]) for name in order),
        ]


#: A build of one month that stops before each request that writes to the store: it prints
#: `PAUSE operation key` and waits for a line on its standard input.
PAUSED_BUILD = """
import sys
import s3fs
from pipelines.books.settings import BookSettings
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.settings import IngestSettings
from pipelines.monthly.build import build_month
from pipelines.monthly.settings import MonthSettings

WRITES = {"put_object", "copy_object", "delete_object", "delete_objects",
          "create_multipart_upload", "upload_part", "complete_multipart_upload"}
call_s3 = s3fs.S3FileSystem._call_s3

async def paused(self, method, *args, **kwargs):
    if method in WRITES and "/.locks/" not in "/" + kwargs.get("Key", ""):  # (not its leases)
        print("PAUSE", method, kwargs.get("Key", ""), flush=True)
        if not sys.stdin.readline():
            raise SystemExit(3)
    return await call_s3(self, method, *args, **kwargs)

s3fs.S3FileSystem._call_s3 = paused
source, month, warehouse, books, rating = sys.argv[1:]
rules = GameFilter(min_rating=int(rating))
settings = MonthSettings(IngestSettings(rules), BookSettings(min_games=2))
build_month(source, month, warehouse, books, settings)
"""


class PausedBuild:
    """A build in its own process, stepped from one write to the store to the next."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PAUSED_BUILD, *args],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def next_write(self, timeout: float = 120) -> tuple[str, str] | None:
        """Wait until the build stops before a write; return (operation, key), None at its end."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "the build neither wrote nor ended"
        line = self.proc.stdout.readline()
        if not line:
            return None
        _, operation, key = (line.rstrip("\n").split(" ", 2) + [""])[:3]
        return operation, key

    def resume(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def wait(self) -> int:
        return self.proc.wait(timeout=120)


def assert_readers_see_whole_pairs(
    state: dict[str, bytes], previous: dict[str, bytes], new: dict[str, bytes], month: str
) -> None:
    """Each manifest found names the object beside it: the previous pair or the new one; an
    object without its manifest is the previous or the new object."""
    key = keys(month)
    for item, manifest, field in (
        ("partition", "ingest manifest", "output_sha256"),
        *((f"explorer {name}", "explorer manifest", SHA256_FIELDS[name]) for name in MONTH_FILES),
        ("book", "run manifest", "book_sha256"),
    ):
        found = state.get(key[item])
        assert found in (previous[key[item]], new[key[item]]), item
        if key[manifest] in state:
            pair = (found, state[key[manifest]])
            assert json.loads(pair[1])[field] == sha256(pair[0]), f"{manifest} names another {item}"
            assert pair in (
                (previous[key[item]], previous[key[manifest]]),
                (new[key[item]], new[key[manifest]]),
            ), item


def assert_a_run_manifest_records_the_month_beside_it(
    partition: bytes | None,
    ingest_manifest: bytes | None,
    book: bytes | None,
    run_manifest: bytes | None,
) -> None:
    """The run manifest is the month's record: while it is there, the partition, the ingest
    manifest and the book beside it are the ones it records, never a mix of two runs."""
    if run_manifest is None:
        return
    record = json.loads(run_manifest)
    assert partition is not None and ingest_manifest is not None and book is not None
    assert record["ingest"]["output_sha256"] == sha256(partition), "another run's partition"
    assert record["ingest"] == json.loads(ingest_manifest), "another run's ingest manifest"
    assert record["book_sha256"] == sha256(book), "another run's book"


@pytest.mark.slow
def test_kill_9_while_publishing_leaves_readers_whole_pairs(
    moto: MotoServer, s3_env: dict[str, str], tmp_path: Path
) -> None:
    month, source = "2024-01", SAMPLE.format(month="2024-01")
    bucket = moto.create_bucket("kill")
    warehouse, books = f"s3://{bucket}/wh", f"s3://{bucket}/books"
    build_month(source, month, warehouse, books, settings(0))
    previous = moto.objects(bucket)
    assert sorted(previous) == sorted(keys(month).values())
    # A new filter: a new partition, ingest manifest, book and run manifest.
    reference = build_month(source, month, tmp_path / "wh", tmp_path / "books", settings(1800))

    # Killed in the middle of its uploads: the partition and its manifest are staged, the
    # explorer's files and the book not yet. Readers see the previous objects, all of them,
    # untouched.
    killed = PausedBuild(source, month, warehouse, books, "1800")
    writes = []
    try:
        for n in range(3):
            if n:
                killed.resume()
            writes.append(killed.next_write())
    finally:
        killed.kill()
    assert [(op, key.rsplit("/", 1)[-1]) for op, key in writes] == [  # type: ignore[union-attr]
        ("put_object", "part-0.parquet"),
        ("put_object", f"month={month}.json"),
        ("put_object", "games.parquet"),
    ]
    assert killed.proc.returncode == -signal.SIGKILL
    after_kill = moto.objects(bucket)
    assert without(after_kill, "/.staging/", "/.locks/") == previous
    assert any("/.locks/" in f"/{k}" for k in after_kill)  # its leases: it is dead, they stay
    assert any("/.staging/" in f"/{k}" for k in after_kill)  # what it had staged

    # The rerun, stopped before each of its writes: whatever a kill there would leave, a reader
    # that finds a manifest finds the object it describes, previous or new.
    states: list[dict[str, bytes]] = []
    steps: list[tuple[str, str]] = []
    rerun = PausedBuild(source, month, warehouse, books, "1800")
    try:
        while (write := rerun.next_write()) is not None:
            states.append(moto.objects(bucket))
            steps.append(write)
            rerun.resume()
        assert rerun.wait() == 0
    finally:
        rerun.kill()
    new = moto.objects(bucket)
    states.append(new)
    assert sorted(new) == sorted(keys(month).values())  # the killed run's staging removed too
    key = keys(month)
    assert new[key["partition"]] == partition_file(tmp_path / "wh", month).read_bytes()
    assert new[key["book"]] == published_paths(tmp_path / "books", month)[0].read_bytes()
    assert json.loads(new[key["run manifest"]])["book_sha256"] == reference.book_sha256
    for state in states:
        assert_readers_see_whole_pairs(state, previous, new, month)
        record = ("partition", "ingest manifest", "book", "run manifest")
        assert_a_run_manifest_records_the_month_beside_it(*(state.get(key[k]) for k in record))
    # In order: the dead run's staging removed, every file staged (under its path in the
    # store), the old manifests deleted (the run manifest first), then set by set the objects
    # copied into place and their manifest after them.
    final = {name: k.removeprefix("wh/").removeprefix("books/") for name, k in key.items()}
    assert [(op, k.split("/.staging/")[-1].split("/", 1)[-1]) for op, k in steps] == [
        ("delete_objects", ""),  # (only the warehouse: the killed run staged no book)
        *(("put_object", k) for k in final.values()),
        ("delete_object", final["run manifest"]),
        ("delete_object", final["explorer manifest"]),
        ("delete_object", final["ingest manifest"]),
        *(("copy_object", k) for k in final.values()),
        *(("delete_object", k) for k in final.values()),
    ]


@pytest.mark.slow
def test_a_local_books_folder_gets_its_book_after_the_statistics_in_the_store(
    moto: MotoServer, s3_env: dict[str, str], tmp_path: Path
) -> None:
    """Warehouse in a bucket, books in a folder: the folder's run manifest never records a
    partition other than the bucket's, whenever the build is stopped."""
    month, source = "2024-01", SAMPLE.format(month="2024-01")
    bucket = moto.create_bucket("mixed")
    warehouse, books = f"s3://{bucket}/wh", tmp_path / "books"
    build_month(source, month, warehouse, books, settings(0))
    book, run_manifest = published_paths(books, month)
    previous = book.read_bytes()
    key = keys(month)

    def check(state: dict[str, bytes]) -> None:
        assert_a_run_manifest_records_the_month_beside_it(
            state.get(key["partition"]),
            state.get(key["ingest manifest"]),
            book.read_bytes() if book.exists() else None,
            run_manifest.read_bytes() if run_manifest.exists() else None,
        )

    check(moto.objects(bucket))
    rerun = PausedBuild(source, month, warehouse, str(books), "1800")
    writes = 0
    try:
        while rerun.next_write() is not None:
            writes += 1
            check(moto.objects(bucket))
            rerun.resume()
        assert rerun.wait() == 0
    finally:
        rerun.kill()
    check(moto.objects(bucket))
    assert writes >= 6 and book.read_bytes() != previous
    assert json.loads(run_manifest.read_text())["book"]["warehouse"] == warehouse
    assert not list(books.glob(".staging/*")) and not list(books.glob(".*.tmp"))


@pytest.mark.slow
def test_kill_9_in_the_middle_of_an_upload_leaves_the_previous_objects(
    moto: MotoServer, s3_env: dict[str, str], tmp_path: Path
) -> None:
    """build-month, killed while the partition's bytes are on their way to the store."""
    from tests.slow_proxy import SlowProxy

    month, source = "2024-01", SAMPLE.format(month="2024-01")
    bucket = moto.create_bucket("slow")
    warehouse, books = f"s3://{bucket}/wh", f"s3://{bucket}/books"
    build_month(source, month, warehouse, books, settings(0))
    previous = moto.objects(bucket)
    reference = build_month(source, month, tmp_path / "wh", tmp_path / "books", settings(1800))
    size = partition_file(tmp_path / "wh", month).stat().st_size
    with SlowProxy(moto.port, trigger=f"PUT /{bucket}/wh/.staging/".encode()) as proxy:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "pipelines", "build-month", source, "--month", month,
                "--warehouse", warehouse, "--books", books,
                "--min-rating", "1800", "--min-games", "2",
            ],
            cwd=ROOT,
            env=dict(
                os.environ, PYTHONPATH=str(ROOT), AWS_ENDPOINT_URL=proxy.url,
                PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_API_URL="",
                PREFECT_SERVER_ANALYTICS_ENABLED="false",
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 240
            while proxy.slowed < 16_384:
                assert proc.poll() is None, "the build ended before it uploaded"
                assert time.monotonic() < deadline, "the build never uploaded its partition"
                time.sleep(0.02)
            assert proc.poll() is None and proxy.slowed < size  # mid-upload
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    # Nothing of the new run is visible, nor even stored: readers have the previous objects.
    assert without(moto.objects(bucket), "/.locks/") == previous  # (its leases stay)
    assert moto.client().list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    rerun = build_month(source, month, warehouse, books, settings(1800))
    assert rerun.book_sha256 == reference.book_sha256
    assert sorted(moto.objects(bucket)) == sorted(previous)


def documented_block(marker: str) -> str:
    """The fenced block of docs/orchestration.md whose first line is `marker`."""
    text = (ROOT / "docs" / "orchestration.md").read_text()
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        if block.startswith(marker):
            return str(block)
    raise AssertionError(f"no block starting {marker!r} in docs/orchestration.md")


@pytest.mark.slow
def test_duckdb_and_pyarrow_read_the_bucket_as_documented(
    moto: MotoServer, s3_env: dict[str, str], tmp_path: Path
) -> None:
    import duckdb

    bucket = moto.create_bucket("read")
    for month in MONTHS:
        source = SAMPLE.format(month=month)
        build_month(source, month, f"s3://{bucket}/wh", f"s3://{bucket}/books", settings())
        build_month(source, month, tmp_path / "wh", tmp_path / "books", settings())
    warehouse = f"s3://{bucket}/wh"
    code = documented_block("import duckdb").replace(
        "s3://my-bucket/chesspipe/warehouse", warehouse
    )
    assert warehouse in code
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/orchestration.md", "exec"), namespace)
    local = (
        namespace["con"].sql(namespace["QUERY"].replace(warehouse, str(tmp_path / "wh"))).fetchall()
    )
    assert namespace["moves"] == local and len(local) >= 3
    assert namespace["table"].num_rows == sum(
        json.loads(manifest_path(tmp_path / "wh", m).read_text())["rows"] for m in MONTHS
    )
    assert sorted(set(namespace["table"].column("month").to_pylist())) == list(MONTHS)
    assert isinstance(namespace["con"], duckdb.DuckDBPyConnection)


@pytest.mark.slow  # a backfill: Prefect's server starts
@pytest.mark.parametrize("problem", ["no credentials", "closed port"])
def test_store_failures_end_in_one_line_within_seconds(
    moto: MotoServer,
    s3_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    problem: str,
) -> None:
    from tests.serving import free_port

    bucket = moto.create_bucket(problem.replace(" ", "-"))
    if problem == "no credentials":
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        expected = "no credentials found"
    else:
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
        expected = "Could not connect to the endpoint URL"
    started = time.monotonic()
    proc = run_cli(
        "backfill", "--months", "2024-01..2024-02", "--source", SAMPLE,
        "--warehouse", f"s3://{bucket}/wh", "--books", f"s3://{bucket}/books",
        "--min-rating", "0",
        env={"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": "",
             "PREFECT_SERVER_ANALYTICS_ENABLED": "false"},
        check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("chesspipe: error: backfill: 2 of 2 months failed: 2024-01 ")
    assert lines[0].count(f"object storage s3://{bucket}/wh: {expected}") == 2
    assert seconds < 90, f"{seconds:.0f} s"  # a Prefect server's start included
    assert moto.objects(bucket) == {}
    # Without Prefect, the library call fails as fast.
    started = time.monotonic()
    one = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom pipelines.monthly.build import build_month\n"
         "build_month(sys.argv[1], '2024-01', sys.argv[2], sys.argv[3])",
         SAMPLE.format(month="2024-01"), f"s3://{bucket}/wh", f"s3://{bucket}/books"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert one.returncode == 1
    assert f"ChesspipeError: object storage s3://{bucket}/wh: {expected}" in one.stderr
    assert time.monotonic() - started < 20


def test_s3_timeouts_and_retries_are_bounded_unless_the_user_sets_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fsspec.config import conf

    from pipelines.sources.object_store import S3_OPTIONS, storage_options

    need_module("s3fs", "s3fs (chesspipe's s3 extra)")
    from fsspec.core import url_to_fs

    for key in ("AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delitem(conf, "s3", raising=False)
    bounded = storage_options("s3")
    url_to_fs("s3://bucket/key", **storage_options("s3"))[0].connect()  # botocore reads them
    assert storage_options("s3") == bounded == S3_OPTIONS
    assert S3_OPTIONS["config_kwargs"]["retries"]["max_attempts"] <= 3
    assert S3_OPTIONS["config_kwargs"]["connect_timeout"] <= 5
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "10")  # botocore's own setting is left to botocore
    assert "retries" not in storage_options("s3")["config_kwargs"]
    monkeypatch.setitem(conf, "s3", {"use_listings_cache": True})  # fsspec's config wins
    assert storage_options("s3")["use_listings_cache"] is True
    assert storage_options("memory") == {}


def test_the_recording_is_read_when_two_requests_were_appended_at_once() -> None:
    # moto writes a request's JSON and its line end separately; two threads can interleave them.
    text = '{"method": "PUT", "n": 1}{"method": "HEAD", "n": 2}\n\n{"method": "GET", "n": 3}\n'
    assert [entry["n"] for entry in json_objects(text)] == [1, 2, 3]
