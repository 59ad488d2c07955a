"""A full disk at any write step: the run fails in one line naming what the user gave, and the
files a reader sees are the previous complete set, exactly; nothing new is left behind.

Each command runs for real on a small tmpfs (root only: CI runs as root) filled so that the
disk runs out at different moments: from the first write to the last byte of the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.sample_tool import make_sample

MONTH = make_sample.SAMPLE_MONTHS[0]
SAMPLE = make_sample.sample_path(MONTH)
DISK_BYTES = 24 << 20
PAGE = 4096
#: Room above a measured need that a run of the same command always has enough with.
SLACK = 4 * PAGE


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 24 MB tmpfs mounted for the test."""
    if os.geteuid() != 0 and not os.environ.get("CI"):
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(mount)],
                   check=True)  # fmt: skip
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def _state(root: Path) -> dict[str, str]:
    """Every regular file under `root` but the filler and lock files, with its sha256."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != "filler" and not path.name.endswith(".lock")
    }


class FullDisk:
    """Runs one command on the disk from the same starting files, with `free` bytes left."""

    def __init__(
        self, disk: Path, pristine: Path, command: list[str], env: dict[str, str] | None = None
    ) -> None:
        self.disk, self.pristine, self.command, self.env = disk, pristine, command, env

    def run(self, free: int) -> subprocess.CompletedProcess[str]:
        for child in self.disk.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        shutil.copytree(self.pristine, self.disk, dirs_exist_ok=True, symlinks=True)
        stat = os.statvfs(self.disk)
        filler = stat.f_bavail * stat.f_frsize - free
        fd = os.open(self.disk / "filler", os.O_CREAT | os.O_WRONLY)
        try:
            if filler > 0:
                os.posix_fallocate(fd, 0, filler)
        finally:
            os.close(fd)
        return run_cli(*self.command, check=False, env=self.env)

    def left_by_a_run(self) -> int:
        """The bytes a successful run leaves on the disk (what it needs at the least)."""
        free = DISK_BYTES // 2
        first = self.run(free)
        assert first.returncode == 0, first.stderr
        stat = os.statvfs(self.disk)
        return free - stat.f_bavail * stat.f_frsize

    def need(self, *, precision: int = PAGE) -> int:
        """The fewest free bytes (to `precision`) with which the command succeeds."""
        low, high = 0, DISK_BYTES // 2
        first = self.run(high)
        assert first.returncode == 0, first.stderr
        # A run needs at least what it leaves (to a page's rounding), and what it left takes
        # most of what it needed: search from there, up by steps until a run succeeds.
        # (A run that replaces larger files leaves less than it found: nothing, then.)
        stat = os.statvfs(self.disk)
        left = max(0, high - stat.f_bavail * stat.f_frsize)
        low = max(0, (left // PAGE - 2) * PAGE)
        for guess in (left + 16 * PAGE, 2 * left + 64 * PAGE):
            guess = guess // PAGE * PAGE
            if guess >= high:
                break
            if self.run(guess).returncode == 0:
                high = guess
                break
            low = guess
        while high - low > precision:
            middle = (low + high) // 2 // PAGE * PAGE
            low, high = (low, middle) if self.run(middle).returncode == 0 else (middle, high)
        return high


def _full_disk_runs(
    disk: Path,
    tmp_path: Path,
    prepare: Callable[[Path], None],
    command: Callable[[Path], list[str]],
    published: Callable[[Path], None],
    *,
    steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64),
    slack: int = SLACK,
) -> None:
    """`prepare` lays the starting files on the disk; `command` is run with the disk's path;
    `published` checks a successful run's set (each file whole and matching its manifest).
    The disk runs out `steps` pages short of what the run needs, and earlier."""
    prepare(disk)
    pristine = tmp_path / "pristine"
    shutil.copytree(disk, pristine, symlinks=True)
    before = _state(pristine)
    runs = FullDisk(disk, pristine, command(disk))
    need = runs.need(precision=PAGE * steps[0])
    failed = 0
    # From the first write to the last: every step of the staging and of the publishing.
    near = [need - k * PAGE for k in steps]
    levels = sorted({0, PAGE, need // 4, need // 2, *(n for n in near if n > 0)})
    for free in levels:
        proc = runs.run(free)
        if proc.returncode == 0:  # a page's rounding can leave room enough
            published(disk)
            continue
        failed += 1
        assert proc.returncode == 1, proc.stderr
        [line] = proc.stderr.splitlines()
        assert line.startswith("chesspipe: error: ") and str(disk) in line, line
        assert ".tmp" not in line and "No space left on device" in line, line
        assert _state(disk) == before, f"free={free}: {line}"
    assert failed >= len(levels) // 2
    # A run's files differ by a few bytes from one run to the next (the timings in its
    # manifest): with a little more room than the measured need it must succeed.
    done = runs.run(need + slack)
    assert done.returncode == 0, done.stderr
    published(disk)


def _ingest_manifest_matches(warehouse: Path) -> None:
    manifest = json.loads((warehouse / "move_stats" / f"month={MONTH}.json").read_text())
    part = warehouse / manifest["output"]
    assert hashlib.sha256(part.read_bytes()).hexdigest() == manifest["output_sha256"]


@pytest.mark.slow
@pytest.mark.parametrize("previous", [False, True], ids=["new-month", "replaced-month"])
def test_ingest_on_a_full_disk(disk: Path, tmp_path: Path, previous: bool) -> None:
    other = make_sample.sample_path(make_sample.SAMPLE_MONTHS[1])

    def prepare(root: Path) -> None:
        if previous:  # another month's games published as this month: the set to keep
            run_cli("ingest", str(other), "--month", MONTH, "--warehouse", str(root / "wh"),
                    "--write-kept", str(root / "kept.pgn.zst"), "--no-explorer")  # fmt: skip

    def published(root: Path) -> None:
        _ingest_manifest_matches(root / "wh")
        assert (root / "kept.pgn.zst").stat().st_size > 0

    _full_disk_runs(
        disk, tmp_path, prepare,
        lambda root: ["ingest", str(SAMPLE), "--month", MONTH, "--warehouse", str(root / "wh"),
                      "--write-kept", str(root / "kept.pgn.zst"), "--force", "--no-explorer"],
        published,
    )  # fmt: skip


@pytest.mark.slow
def test_ingest_with_its_explorer_on_a_full_disk(disk: Path, tmp_path: Path) -> None:
    """The month's statistics and its explorer's files, one set: whole, or nothing (DuckDB's
    lookup file included, its error said as a full disk naming the file)."""

    def published(root: Path) -> None:
        _ingest_manifest_matches(root / "wh")
        manifest = json.loads((root / "wh" / "explorer" / f"month={MONTH}.json").read_text())
        lookup = root / "wh" / "explorer" / f"month={MONTH}" / "lookup.duckdb"
        assert manifest["lookup_sha256"] == hashlib.sha256(lookup.read_bytes()).hexdigest()

    # DuckDB's file grows by blocks of 256 KB, as its threads fill them: a run needs a block
    # or two more than another.
    _full_disk_runs(
        disk, tmp_path, lambda root: None,
        lambda root: ["ingest", str(SAMPLE), "--month", MONTH, "--warehouse", str(root / "wh")],
        published, slack=4 << 20,
    )  # fmt: skip


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("warehouse")
    run_cli("ingest", str(SAMPLE), "--month", MONTH, "--warehouse", str(folder),
            "--min-rating", "0", "--speeds",
            "ultrabullet,bullet,blitz,rapid,classical,correspondence", "--allow-bots",
            "--no-explorer")  # fmt: skip
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("previous", [False, True], ids=["new-book", "replaced-book"])
def test_book_build_on_a_full_disk(
    disk: Path, tmp_path: Path, warehouse: Path, previous: bool
) -> None:
    def build(root: Path, *options: str) -> list[str]:
        return ["book", "build", "--warehouse", str(warehouse), "--months", MONTH,
                "--out", str(root / "b.bin"), *options]  # fmt: skip

    def prepare(root: Path) -> None:
        if previous:
            run_cli(*build(root, "--min-games", "5"))

    def published(root: Path) -> None:
        manifest = json.loads((root / "b.json").read_text())
        assert manifest["sha256"] == hashlib.sha256((root / "b.bin").read_bytes()).hexdigest()

    _full_disk_runs(disk, tmp_path, prepare, lambda root: build(root, "--min-games", "1"),
                    published)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("previous", [False, True], ids=["new-suite", "replaced-suite"])
def test_suite_build_on_a_full_disk(
    disk: Path, tmp_path: Path, warehouse: Path, previous: bool
) -> None:
    """An opening suite and its manifest: both, or the previous pair exactly."""

    def build(root: Path, *options: str) -> list[str]:
        return ["suite", "build", "--warehouse", str(warehouse), "--months", MONTH,
                "--out", str(root / "s.epd"), "--plies", "6..10", *options]  # fmt: skip

    def prepare(root: Path) -> None:
        if previous:
            run_cli(*build(root, "--min-games", "20"))

    def published(root: Path) -> None:
        manifest = json.loads((root / "s.json").read_text())
        assert manifest["sha256"] == hashlib.sha256((root / "s.epd").read_bytes()).hexdigest()

    _full_disk_runs(disk, tmp_path, prepare, lambda root: build(root, "--min-games", "3"),
                    published)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("previous", [False, True], ids=["new-file", "replaced-file"])
def test_training_from_games_on_a_full_disk(disk: Path, tmp_path: Path, previous: bool) -> None:
    def export(root: Path, source: Path) -> list[str]:
        return ["training", "from-games", str(source), "--month", MONTH,
                "--out", str(root / "t.binpack"), "--min-rating", "0", "--no-tables",
                "--no-require-eval", "--quiet"]  # fmt: skip

    def prepare(root: Path) -> None:
        if previous:
            run_cli(*export(root, make_sample.sample_path(make_sample.SAMPLE_MONTHS[1])))

    def published(root: Path) -> None:
        manifest = json.loads((root / "t.binpack.json").read_text())
        data = (root / "t.binpack").read_bytes()
        assert manifest["output_sha256"] == hashlib.sha256(data).hexdigest()
        assert (root / "t.binpack.lineage.parquet").stat().st_size > 0

    _full_disk_runs(disk, tmp_path, prepare, lambda root: export(root, SAMPLE), published)


@pytest.mark.slow
def test_warehouse_compact_on_a_full_disk(disk: Path, tmp_path: Path) -> None:
    year = "2023"

    def prepare(root: Path) -> None:
        for number in range(1, 13):
            run_cli("ingest", str(SAMPLE), "--month", f"{year}-{number:02d}",
                    "--warehouse", str(root / "wh"), "--no-explorer")  # fmt: skip

    def published(root: Path) -> None:
        folder = root / "wh" / "move_stats_yearly"
        [manifest_file] = folder.glob("*.json")
        manifest = json.loads(manifest_file.read_text())
        data = (root / "wh" / manifest["output"]).read_bytes()
        assert manifest["output_sha256"] == hashlib.sha256(data).hexdigest()

    _full_disk_runs(disk, tmp_path, prepare,
                    lambda root: ["warehouse", "compact", str(root / "wh"), "--year", year],
                    published)  # fmt: skip


@pytest.mark.slow
def test_explorer_compact_on_a_full_disk(disk: Path, tmp_path: Path) -> None:
    """A year of the explorer compacted (a DuckDB file and a block file): whole or nothing,
    DuckDB's full disk said as any full disk, naming the yearly file."""
    year = "2023"

    def prepare(root: Path) -> None:
        for number in (1, 2):
            run_cli("explorer", "index", str(SAMPLE), "--month", f"{year}-{number:02d}",
                    "--warehouse", str(root / "wh"), "--quiet")  # fmt: skip

    def published(root: Path) -> None:
        folder = root / "wh" / "explorer_yearly"
        manifest = json.loads((folder / f"year={year}.json").read_text())
        lookup = folder / f"year={year}" / "lookup.duckdb"
        assert manifest["lookup_sha256"] == hashlib.sha256(lookup.read_bytes()).hexdigest()

    _full_disk_runs(
        disk, tmp_path, prepare,
        lambda root: ["explorer", "compact", "--warehouse", str(root / "wh"), "--year", year],
        published, slack=4 << 20,
    )  # fmt: skip


@pytest.mark.slow
def test_build_month_on_a_full_disk(
    disk: Path, tmp_path: Path, prefect_api: dict[str, str]
) -> None:
    """The month's statistics and its book, two sets: each whole or as it was (the month may
    be published while the book is not: a rerun reuses it)."""

    def published(root: Path) -> None:
        _ingest_manifest_matches(root / "wh")
        manifest = json.loads((root / "books" / f"lichess-{MONTH}.json").read_text())
        book = (root / "books" / f"lichess-{MONTH}.bin").read_bytes()
        assert manifest["book_sha256"] == hashlib.sha256(book).hexdigest()

    def command(root: Path) -> list[str]:
        return ["build-month", str(SAMPLE), "--month", MONTH, "--warehouse", str(root / "wh"),
                "--books", str(root / "books"), "--quiet"]  # fmt: skip

    prepare_previous = lambda root: None  # noqa: E731 - a new month
    # Few, coarse steps: each run is seconds of Prefect (against a running server).
    _full_disk_runs_two_sets(disk, tmp_path, prepare_previous, command, published, prefect_api)


def _full_disk_runs_two_sets(
    disk: Path,
    tmp_path: Path,
    prepare: Callable[[Path], None],
    command: Callable[[Path], list[str]],
    published: Callable[[Path], None],
    env: dict[str, str] | None = None,
) -> None:
    """As _full_disk_runs, for a command that publishes two sets one after the other: a failed
    run leaves the state before, or the first set published whole and the second as before."""
    prepare(disk)
    pristine = tmp_path / "pristine"
    shutil.copytree(disk, pristine, symlinks=True)
    before = _state(pristine)
    runs = FullDisk(disk, pristine, command(disk), env)
    # Below what a run leaves, every run fails (each run is seconds of Prefect: no
    # search for the exact need), at the start, half-way and in its last pages.
    left = runs.left_by_a_run()
    published(disk)
    assert left > 56 * PAGE
    failed = 0
    for free in sorted({0, left // 2, left - 16 * PAGE}):
        proc = runs.run(free)
        if proc.returncode == 0:
            published(disk)
            continue
        failed += 1
        [line] = proc.stderr.splitlines()
        assert line.startswith("chesspipe: error: ") and str(disk) in line, line
        assert ".tmp" not in line and "No space left on device" in line, line
        after = _state(disk)
        if after != before:  # the month is published, whole; the book folder as it was
            _ingest_manifest_matches(disk / "wh")
            assert {k: v for k, v in after.items() if not k.startswith("wh/")} == {
                k: v for k, v in before.items() if not k.startswith("wh/")
            }
    assert failed >= 2
