"""`warehouse check`: dead runs' leftovers found and removed under the month's lock, bad pairs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.check import check_warehouse
from pipelines.warehouse.layout import manifest_path, partition_file
from pipelines.warehouse.locks import month_lock
from tests.conftest import run_cli

SETTINGS = IngestSettings(rules=GameFilter(min_rating=0))


def dead_pid() -> int:
    """Return the id of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def leave_leftovers(warehouse: Path, month: str, pid: int) -> list[Path]:
    """Make what a run of `month` killed as it publishes leaves: staging and temp files."""
    staging = warehouse / ".staging" / f"{month}-{pid}-0123abcd"
    staging.mkdir(parents=True)
    (staging / "unit-0.parquet").write_bytes(b"x" * 100)
    part_tmp = partition_file(warehouse, month).with_name(
        f".part-0.parquet.{month}-{pid}-0123abcd.tmp"
    )
    part_tmp.parent.mkdir(parents=True, exist_ok=True)
    part_tmp.write_bytes(b"x")
    manifest_tmp = manifest_path(warehouse, month).with_name(f".month={month}.json.89abcdef.tmp")
    manifest_tmp.write_text("{")
    return [staging, part_tmp, manifest_tmp]


def test_check_lists_repairs_and_spares_a_live_run(tmp_path: Path, games_2021: Path) -> None:
    warehouse = tmp_path / "wh"
    ingest(str(games_2021), "2021-10", warehouse, SETTINGS, runtime=Runtime(workers=1))
    assert check_warehouse(warehouse) == []
    # A clean warehouse says so (it printed nothing before, like a command that did nothing).
    assert run_cli("warehouse", "check", str(warehouse)).stdout == f"{warehouse}: clean: 1 month\n"

    dead = leave_leftovers(warehouse, "2021-10", dead_pid())
    live = warehouse / ".staging" / "2021-11-1-0123abcd"  # pid 1 is alive: a live run's
    live.mkdir()
    findings = check_warehouse(warehouse)
    assert sorted(f.path for f in findings) == sorted(dead)
    assert {f.kind for f in findings} == {"stale-staging", "temp-file"}
    assert {f.month for f in findings} == {"2021-10"}
    proc = run_cli("warehouse", "check", str(warehouse), check=False)
    assert proc.returncode == 1 and len(proc.stdout.splitlines()) == 3

    # A month in use is skipped; a free one is repaired.
    with month_lock(warehouse, "2021-10", clean=False):
        skipped = check_warehouse(warehouse, repair=True)
        assert [(f.kind, f.month) for f in skipped] == [("in-use", "2021-10")]
        assert all(p.exists() for p in dead)
    proc = run_cli("warehouse", "check", str(warehouse), "--repair")
    assert len(proc.stdout.splitlines()) == 3 and "removed" in proc.stdout
    assert not any(p.exists() for p in dead) and live.exists()
    assert run_cli("warehouse", "check", str(warehouse)).returncode == 0


@pytest.mark.slow
def test_a_clean_line_counts_the_books_of_the_books_folder(
    tmp_path: Path, games_2021: Path
) -> None:
    warehouse, books = tmp_path / "wh", tmp_path / "books"
    ingest(str(games_2021), "2021-10", warehouse, SETTINGS, runtime=Runtime(workers=1))
    books.mkdir()
    check = ("warehouse", "check", str(warehouse), "--books", str(books))
    assert run_cli(*check).stdout == f"{warehouse}: clean: 1 month, 0 books\n"
    for name in ("lichess-2021-10.bin", "openings.bin"):
        run_cli("book", "build", "--warehouse", str(warehouse), "--months", "2021-10",
                "--min-games", "1", "--out", str(books / name))  # fmt: skip
    # Beside them: their manifests, a killed build's temporary file, a stray note.
    (books / ".openings.bin.0123abcd.tmp").write_bytes(b"x")
    (books / "notes.txt").write_text("not a book")
    assert sorted(p.name for p in books.glob("*.json")) == ["lichess-2021-10.json",
                                                             "openings.json"]  # fmt: skip
    # The killed build's temporary file is reported, and removed by --repair.
    found = run_cli(*check, check=False)
    assert found.returncode == 1
    assert found.stdout == (
        f"temp-file {books / '.openings.bin.0123abcd.tmp'}: left by a killed book build or "
        "build-month; --repair removes it\n"
    )
    run_cli(*check, "--repair")
    assert run_cli(*check).stdout == f"{warehouse}: clean: 1 month, 2 books\n"
    missing = run_cli("warehouse", "check", str(warehouse), "--books", str(tmp_path / "no"),
                      check=False)  # fmt: skip
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip().splitlines() == [
        f"chesspipe: error: {tmp_path / 'no'}: no such books folder"
    ]


def test_mismatched_and_orphan_partitions_are_reported_never_removed(
    tmp_path: Path, games_2021: Path
) -> None:
    warehouse = tmp_path / "wh"
    ingest(str(games_2021), "2021-10", warehouse, SETTINGS, runtime=Runtime(workers=1))
    ingest(str(games_2021), "2021-11", warehouse, SETTINGS, runtime=Runtime(workers=1))
    ingest(str(games_2021), "2021-12", warehouse, SETTINGS, runtime=Runtime(workers=1))
    recorded = json.loads(manifest_path(warehouse, "2021-10").read_text())
    recorded["output_sha256"] = "0" * 64
    manifest_path(warehouse, "2021-10").write_text(json.dumps(recorded))
    manifest_path(warehouse, "2021-11").unlink()
    partition_file(warehouse, "2021-12").unlink()
    for repair in (False, True):
        findings = check_warehouse(warehouse, repair=repair)
        assert [(f.kind, f.month) for f in findings] == [
            ("sha256-mismatch", "2021-10"),
            ("no-manifest", "2021-11"),
            ("no-partition", "2021-12"),
        ]
        assert all("re-ingest" in f.detail for f in findings)
    assert partition_file(warehouse, "2021-10").exists()
    assert partition_file(warehouse, "2021-11").exists()
    assert manifest_path(warehouse, "2021-12").exists()
    proc = run_cli("warehouse", "check", str(warehouse), "--repair", check=False)
    assert proc.returncode == 1 and "sha256-mismatch [2021-10]" in proc.stdout


def test_taking_the_lock_removes_dead_runs_leftovers(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    dead = leave_leftovers(warehouse, "2021-10", dead_pid())
    other = leave_leftovers(warehouse, "2021-09", dead_pid())
    with month_lock(warehouse, "2021-10"):
        assert not any(p.exists() for p in dead)
    assert all(p.exists() for p in other)  # another month's lock was not taken


def test_the_explorers_data_is_checked_as_move_stats_are(tmp_path: Path, games_2021: Path) -> None:
    """`explorer/` months: files against their manifest's sha256, files or manifest alone,
    stray names, dead index runs' temp files (removed by a repair, spared while a run holds
    the month)."""
    import shutil

    from pipelines.explorer.index import index_month
    from pipelines.explorer.layout import counts_file, explorer_manifest_path, games_file
    from pipelines.explorer.settings import ExplorerSettings
    from pipelines.warehouse.explorer_files import explorer_lock

    warehouse = tmp_path / "wh"
    for month in ("2021-10", "2021-11", "2021-12"):
        index_month(str(games_2021), month, warehouse, ExplorerSettings(SETTINGS.rules))
    assert check_warehouse(warehouse) == []

    damaged = counts_file(warehouse, "2021-10")
    damaged.write_bytes(damaged.read_bytes()[:-1] + b"\0")
    explorer_manifest_path(warehouse, "2021-11").unlink()
    games_file(warehouse, "2021-12").unlink()
    stray = warehouse / "explorer" / "month=2021-1"
    stray.mkdir()
    temp = games_file(warehouse, "2021-10").with_name(".games.parquet.0123abcd.tmp")
    temp.write_bytes(b"x")
    found = {(f.kind, f.month, f.path) for f in check_warehouse(warehouse)}
    assert found == {
        ("sha256-mismatch", "2021-10", damaged),
        ("no-manifest", "2021-11", games_file(warehouse, "2021-11").parent),
        ("no-partition", "2021-12", explorer_manifest_path(warehouse, "2021-12")),
        ("not-a-month", None, stray),
        ("temp-file", "2021-10", temp),
    }
    proc = run_cli("warehouse", "check", str(warehouse), check=False)
    assert proc.returncode == 1 and len(proc.stdout.splitlines()) == 5, proc.stdout

    # A run holding the month: its temp file is its own, left alone.
    with explorer_lock(warehouse, "2021-10"):
        held = check_warehouse(warehouse, repair=True)
    assert ("in-use", "2021-10") in {(f.kind, f.month) for f in held} and temp.exists()
    repaired = [f for f in check_warehouse(warehouse, repair=True) if f.kind == "temp-file"]
    assert [(f.path, f.repaired) for f in repaired] == [(temp, True)] and not temp.exists()
    # Nothing else is removed: the data and manifests are the user's to redo.
    assert damaged.exists() and explorer_manifest_path(warehouse, "2021-12").exists()
    shutil.rmtree(stray)
    index_month(str(games_2021), "2021-10", warehouse, ExplorerSettings(SETTINGS.rules))
    left = {f.kind for f in check_warehouse(warehouse)}
    assert left == {"no-manifest", "no-partition"}
