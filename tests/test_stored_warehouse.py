"""A warehouse in a bucket (moto's S3 server), read where it is: `book build`, `sql` and
`backfill --book` give what they give over the same months in a local folder; a damaged or
replaced partition is never read as the one its manifest records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from pipelines.monthly.build import build_month
from pipelines.warehouse.stored import StoredMonth, partition_url, stored_months, stored_read
from tests.conftest import run_cli
from tests.moto_s3 import MotoServer
from tests.test_object_storage import SAMPLE, moto, s3_env, settings  # noqa: F401

MONTHS = ("2024-01", "2024-02")


def two_months(moto: MotoServer, bucket: str, local: Path) -> str:  # noqa: F811
    """Build the sample's two months into a new bucket (WAREHOUSE and BOOKS under it) and into
    a local folder (`local`/wh, `local`/books); return the bucket's warehouse URL."""
    import os

    moto.create_bucket(bucket)
    saved = dict(os.environ)
    os.environ.update(moto.env)
    try:
        with moto.fresh_clients():
            for month in MONTHS:
                source = SAMPLE.format(month=month)
                build_month(source, month, f"s3://{bucket}/wh", f"s3://{bucket}/books", settings())
                local_settings = replace(settings(), explorer=False)
                build_month(source, month, local / "wh", local / "books", local_settings)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return f"s3://{bucket}/wh"


@pytest.fixture(scope="module")
def filled(
    moto: MotoServer,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, Path]]:
    """A bucket and a local folder holding the same two months: (warehouse URL, folder)."""
    local = tmp_path_factory.mktemp("local")
    yield two_months(moto, "stored", local), local


def copied(moto: MotoServer, bucket: str, prefix: str) -> str:  # noqa: F811
    """A copy of the bucket's warehouse under another prefix (the other tests keep theirs)."""
    client = moto.client()
    for key in moto.objects(bucket, "wh/"):
        source = {"Bucket": bucket, "Key": key}
        client.copy_object(Bucket=bucket, Key=f"{prefix}/{key[3:]}", CopySource=source)
    return f"s3://{bucket}/{prefix}"


@pytest.mark.slow
def flip_bytes(moto: MotoServer, bucket: str, key: str) -> tuple[bytes, bytes]:  # noqa: F811
    """Replace an object by one of the same size with 50 bytes flipped; return (was, now)."""
    good = moto.objects(bucket, key)[key]
    flipped = good[:-100] + bytes(b ^ 0xFF for b in good[-100:-50]) + good[-50:]
    moto.client().put_object(Bucket=bucket, Key=key, Body=flipped)
    return good, flipped


@pytest.mark.slow
def test_a_book_built_from_the_bucket_is_the_local_book(
    filled: tuple[str, Path],
    s3_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    warehouse, local = filled
    assert stored_months(warehouse) == list(MONTHS)
    books = {}
    for name, where in (("stored", warehouse), ("local", str(local / "wh"))):
        out = tmp_path / f"{name}.bin"
        run_cli(
            "book", "build", "--warehouse", where, "--months", "2024-01..2024-02",
            "--out", str(out), "--min-games", "2",
        )  # fmt: skip
        books[name] = out.read_bytes()
        record = json.loads(out.with_suffix(".json").read_text())
        assert record["warehouse"] == (where if name == "stored" else str(Path(where).resolve()))
    assert books["stored"] == books["local"] and len(books["local"]) > 16 * 100


@pytest.mark.slow
def test_sql_over_the_bucket_answers_as_over_the_folder(
    filled: tuple[str, Path],
    s3_env: dict[str, str],  # noqa: F811
) -> None:
    warehouse, local = filled
    queries = (
        "SELECT month, count(*), sum(games) FROM move_stats GROUP BY month ORDER BY month",
        # chess terms and the bundled opening names, read with the bucket
        "SELECT uci(move), sum(games) AS n FROM move_stats WHERE key = key_after('e4 c5') "
        "GROUP BY ALL ORDER BY n DESC, 1 LIMIT 3",
        "SELECT count(*) FROM move_stats_yearly",
    )
    for query in queries:
        stored = run_cli("sql", "--warehouse", warehouse, query, "--format", "json").stdout
        folder = run_cli("sql", "--warehouse", str(local / "wh"), query, "--format", "json").stdout
        assert stored == folder and json.loads(stored), query
    # Still only reads, and only the warehouse's objects and the opening names.
    other = warehouse.rsplit("/", 1)[0] + "/books/lichess-2024-01.json"
    proc = run_cli("sql", "--warehouse", warehouse, f"SELECT * FROM read_text('{other}')",
                   check=False)  # fmt: skip
    said = proc.stderr.strip()
    assert proc.returncode != 0 and "\n" not in said and f"the query opens {other}" in said, said


@pytest.mark.slow
def test_a_damaged_partition_in_the_bucket_is_never_read_as_its_manifests(
    moto: MotoServer,  # noqa: F811
    s3_env: dict[str, str],  # noqa: F811
    filled: tuple[str, Path],
    tmp_path: Path,
) -> None:
    warehouse, _ = filled
    bucket = warehouse.split("/")[2]
    copy, client = copied(moto, bucket, "copy"), moto.client()
    key = partition_url(copy, "2024-02").split("/", 3)[3]
    good, _ = flip_bytes(moto, bucket, key)  # only the sha256 tells, as the book is read
    out = tmp_path / "book.bin"
    proc = run_cli("book", "build", "--warehouse", copy, "--months", "all", "--out", str(out),
                   check=False)  # fmt: skip
    said = proc.stderr.strip()
    assert proc.returncode != 0 and "\n" not in said and "Traceback" not in said, said
    assert "month 2024-02" in said and "is not the file its manifest records" in said, said
    assert not out.exists()
    # Cut short: the size tells, before anything is read, to `sql` too.
    client.put_object(Bucket=bucket, Key=key, Body=good[: len(good) // 2])
    proc = run_cli("sql", "--warehouse", copy, "SELECT count(*) FROM move_stats", check=False)
    said = proc.stderr.strip()
    assert proc.returncode != 0 and "\n" not in said and "the manifest says" in said, said


@pytest.mark.slow
def test_a_month_republished_during_a_read_is_read_again(
    moto: MotoServer,  # noqa: F811
    s3_env: dict[str, str],  # noqa: F811
    filled: tuple[str, Path],
) -> None:
    warehouse, _ = filled
    bucket = warehouse.split("/")[2]
    copy, client = copied(moto, bucket, "again"), moto.client()
    objects = moto.objects(bucket, "again/")
    january, february = (partition_url(copy, m).split("/", 3)[3] for m in MONTHS)
    manifest = february.replace("/part-0.parquet", ".json")
    seen: list[list[str]] = []

    def read(pinned: list[StoredMonth]) -> str:
        seen.append([month.etag for month in pinned])
        if len(seen) == 1:  # a run publishes February as January's bytes meanwhile
            client.put_object(Bucket=bucket, Key=february, Body=objects[january])
            record = json.loads(objects[january.replace("/part-0.parquet", ".json")])
            client.put_object(Bucket=bucket, Key=manifest, Body=json.dumps(record).encode())
        return pinned[1].etag

    found = stored_read(copy, list(MONTHS), read)
    assert len(seen) == 2 and seen[0][1] != seen[1][1]
    assert found == seen[1][1] == seen[1][0]  # the version the second read pinned


@pytest.mark.slow
def test_a_backfill_book_over_a_bucket_goes_into_the_bucket(
    moto: MotoServer,  # noqa: F811
    s3_env: dict[str, str],  # noqa: F811
    filled: tuple[str, Path],
    tmp_path: Path,
) -> None:
    warehouse, local = filled
    bucket = warehouse.split("/")[2]
    proc = run_cli(
        "backfill", "--months", "2024-01..2024-02", "--source", SAMPLE,
        "--warehouse", warehouse, "--books", f"s3://{bucket}/books",
        "--min-rating", "0", "--min-games", "2", "--threads", "2", "--book", "both",
        env={"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": "",
             "PREFECT_SERVER_ANALYTICS_ENABLED": "false"},
    )  # fmt: skip
    summary = json.loads(proc.stdout)
    assert [m["status"] for m in summary[:2]] == ["up-to-date", "up-to-date"]
    assert summary[2]["book"] == f"s3://{bucket}/books/both.bin" and summary[2]["entries"] > 100
    reference = tmp_path / "both.bin"
    run_cli(
        "book", "build", "--warehouse", str(local / "wh"), "--months", "2024-01..2024-02",
        "--out", str(reference), "--min-games", "2",
    )  # fmt: skip
    objects = moto.objects(bucket, "books/")
    assert objects["books/both.bin"] == reference.read_bytes()
    record = json.loads(objects["books/both.json"])
    assert record["entries"] == summary[2]["entries"] and record["warehouse"] == warehouse
    assert not [k for k in objects if "/.staging/" in k or "/.locks/" in k]


@pytest.mark.slow
def test_warehouse_check_of_a_bucket_finds_and_repairs_what_a_folders_does(
    moto: MotoServer,  # noqa: F811
    s3_env: dict[str, str],  # noqa: F811
    filled: tuple[str, Path],
) -> None:
    import time

    from pipelines.sources.object_lease import Holder

    warehouse, _ = filled
    bucket = warehouse.split("/")[2]
    clean = run_cli("warehouse", "check", warehouse)
    assert clean.stdout.strip() == f"{warehouse}: clean: 2 months"
    copy, client = copied(moto, bucket, "checked"), moto.client()
    january, february = (partition_url(copy, m).split("/", 3)[3] for m in MONTHS)
    _, flipped = flip_bytes(moto, bucket, february)
    # The explorer's months: a file damaged, a manifest gone.
    flip_bytes(moto, bucket, "checked/explorer/month=2024-01/counts.bin")
    client.delete_object(Bucket=bucket, Key="checked/explorer/month=2024-02.json")
    # A partition published without its manifest (a run killed between the two copies).
    client.copy_object(Bucket=bucket, Key=january.replace("2024-01", "2024-03"),
                       CopySource={"Bucket": bucket, "Key": january})  # fmt: skip
    # A dead run's staging and lease (another machine, expired), and a live run's.
    gone = Holder("feedbeef", "worker-7.example", "boot", 4242, time.time() - 5)
    live = Holder("5ca1ab1e", "worker-8.example", "boot", 4343, time.time() + 600)
    for key, body in (
        ("checked/.staging/2024-04-4242-feedbeef/part-0.parquet", b"half"),
        ("checked/.locks/2024-04.lease", gone.encode()),
        ("checked/.staging/2024-05-4343-5ca1ab1e/part-0.parquet", b"busy"),
        ("checked/.locks/2024-05.lease", live.encode()),
    ):
        client.put_object(Bucket=bucket, Key=key, Body=body)
    found = run_cli("warehouse", "check", copy, check=False)
    lines = found.stdout.splitlines()
    assert found.returncode == 1 and len(lines) == 7, found.stdout
    expected = {
        f"stale-lease {copy}/.locks/2024-04.lease: the lease of run feedbeef on worker-7.example",
        f"stale-staging [2024-04] {copy}/.staging/2024-04-4242-feedbeef: left by a dead run; "
        "--repair removes it",
        f"in-use [2024-05] {copy}/.staging/2024-05-4343-5ca1ab1e: a live run's staging",
        f"sha256-mismatch [2024-02] {copy}/move_stats/month=2024-02/part-0.parquet: its sha256",
        f"no-manifest [2024-03] {copy}/move_stats/month=2024-03/part-0.parquet: a partition",
        f"sha256-mismatch [2024-01] {copy}/explorer/month=2024-01/counts.bin: does not match",
        f"no-manifest [2024-02] {copy}/explorer/month=2024-02: explorer data without a manifest",
    }
    assert all(any(line.startswith(start) for line in lines) for start in expected), lines
    repaired = run_cli("warehouse", "check", copy, "--repair", check=False)
    assert repaired.returncode == 1  # the partitions stay: months to build again
    assert f"stale-staging [2024-04] {copy}/.staging/2024-04-4242-feedbeef: removed" in (
        repaired.stdout
    )
    left = moto.objects(bucket, "checked/.")
    assert sorted(left) == [
        "checked/.locks/2024-05.lease",
        "checked/.staging/2024-05-4343-5ca1ab1e/part-0.parquet",
    ]
    assert moto.objects(bucket, february)[february] == flipped  # never touched
