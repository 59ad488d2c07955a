"""A damaged month is never read as good: readers compare each partition with what its manifest
records (size and time on every open, the whole sha256 where a book is built) and fail in one
line naming the month and `warehouse check`; `warehouse check` tells a copy that lost its
times from a damaged file."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.warehouse.integrity import DamagedMonth
from pipelines.warehouse.layout import manifest_path, partition_file
from pipelines.warehouse.sql import connect, run_query
from tests.conftest import run_cli
from tests.sample_tool import make_sample
from tests.serving import free_port

MONTH = make_sample.SAMPLE_MONTHS[0]


@pytest.fixture
def warehouse(sample_warehouse: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "wh"
    shutil.copytree(sample_warehouse, copy)  # copy2: the files keep their times
    return copy


def _part(warehouse: Path) -> Path:
    return partition_file(warehouse, MONTH)


def flip_a_byte(warehouse: Path) -> None:
    path = _part(warehouse)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def flip_a_byte_keeping_the_time(warehouse: Path) -> None:
    """The hardest case: the same size, the same modification time, other bytes."""
    path = _part(warehouse)
    before = path.stat()
    flip_a_byte(warehouse)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def foreign_schema(warehouse: Path) -> None:
    """A Parquet file of other columns: DuckDB's union_by_name read it as games = NULL."""
    pq.write_table(pa.table({"key": [1, 2, 3], "other": ["a", "b", "c"]}), _part(warehouse))


def truncate(warehouse: Path) -> None:
    path = _part(warehouse)
    path.write_bytes(path.read_bytes()[:1000])


def _book(warehouse: Path, out: Path) -> tuple[int, str]:
    proc = run_cli("book", "build", "--warehouse", str(warehouse), "--months", MONTH,
                   "--min-games", "1", "--out", str(out), check=False)  # fmt: skip
    return proc.returncode, proc.stderr


def _sql(warehouse: Path) -> tuple[int, str]:
    proc = run_cli("sql", "--warehouse", str(warehouse), "SELECT sum(games) FROM move_stats",
                   check=False)  # fmt: skip
    return proc.returncode, proc.stderr


def _says_the_month(stderr: str, warehouse: Path) -> None:
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith(f"chesspipe: error: month {MONTH}: "), stderr
    assert "is not the file its manifest records" in stderr
    assert f"chesspipe warehouse check {warehouse}" in stderr


@pytest.mark.slow
@pytest.mark.parametrize("damage", [flip_a_byte, foreign_schema, truncate])
def test_every_reader_refuses_a_damaged_month(
    warehouse: Path, tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    damage(warehouse)
    out = tmp_path / "b.bin"
    status, stderr = _book(warehouse, out)
    assert status == 1
    _says_the_month(stderr, warehouse)
    assert not out.exists() and not out.with_suffix(".json").exists()
    status, stderr = _sql(warehouse)
    assert status == 1
    _says_the_month(stderr, warehouse)
    with pytest.raises(DamagedMonth):
        connect(warehouse)
    with pytest.raises(DamagedMonth):
        run_query(warehouse, "SELECT 1")
    found = run_cli("warehouse", "check", str(warehouse), check=False)
    assert found.returncode == 1 and "sha256-mismatch" in found.stdout


def test_a_book_is_never_built_from_bytes_changed_under_the_same_time(
    warehouse: Path, tmp_path: Path
) -> None:
    """Size and time match, the bytes do not: the book's full sha256 check refuses it."""
    flip_a_byte_keeping_the_time(warehouse)
    out = tmp_path / "b.bin"
    status, stderr = _book(warehouse, out)
    assert status == 1
    _says_the_month(stderr, warehouse)
    assert "sha256" in stderr
    assert not out.exists()


def test_a_copy_without_its_times_is_told_apart_and_repaired(
    warehouse: Path, tmp_path: Path
) -> None:
    """`cp -r` without -p: the content is the recorded one, the times are not. Readers refuse
    it (they cannot tell it from a change without hashing); `warehouse check` hashes it, says
    so, and --repair records the new time; then it reads as before."""
    part = _part(warehouse)
    data = part.read_bytes()
    part.unlink()
    part.write_bytes(data)  # the same bytes, a new modification time
    os.utime(part, ns=(1, 1))
    status, stderr = _sql(warehouse)
    assert status == 1 and "copied without its times" in stderr
    found = run_cli("warehouse", "check", str(warehouse), check=False)
    assert found.returncode == 1
    assert found.stdout.startswith(f"times-changed [{MONTH}] "), found.stdout
    assert "--repair records the file's time" in found.stdout
    repaired = run_cli("warehouse", "check", str(warehouse), "--repair", check=False)
    assert repaired.returncode == 0, repaired.stdout
    assert json.loads(manifest_path(warehouse, MONTH).read_text())["output_mtime_ns"] == 1
    assert _sql(warehouse)[0] == 0
    assert _book(warehouse, tmp_path / "b.bin")[0] == 0
    assert run_cli("warehouse", "check", str(warehouse)).stdout.endswith("clean: 1 month\n")


def test_an_unreadable_manifest_is_named_as_such(warehouse: Path) -> None:
    manifest_path(warehouse, MONTH).write_text("{ not json")
    status, stderr = _sql(warehouse)
    assert status == 1 and "unreadable: not JSON" in stderr, stderr
    found = run_cli("warehouse", "check", str(warehouse), check=False)
    assert found.stdout.startswith(f"bad-manifest [{MONTH}] "), found.stdout
    assert "sha256-mismatch" not in found.stdout


def test_a_month_ingested_before_sizes_were_recorded_still_reads(warehouse: Path) -> None:
    """Manifests written before output_size and output_mtime_ns: nothing to compare on open;
    a book still compares the whole sha256."""
    path = manifest_path(warehouse, MONTH)
    data = json.loads(path.read_text())
    del data["output_size"], data["output_mtime_ns"]
    path.write_text(json.dumps(data))
    os.utime(_part(warehouse), ns=(1, 1))
    assert _sql(warehouse)[0] == 0
    flip_a_byte(warehouse)
    status, stderr = _book(warehouse, warehouse.parent / "b.bin")
    assert status == 1 and "sha256" in stderr


def test_serve_refuses_a_damaged_month_in_one_line(warehouse: Path) -> None:
    truncate(warehouse)
    port = str(free_port())
    proc = run_cli("serve", "--warehouse", str(warehouse), "--port", port, check=False)
    assert proc.returncode == 1
    _says_the_month(proc.stderr, warehouse)
