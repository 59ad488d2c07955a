"""Outputs and the files already there: only a regular file is replaced, and one run at a time
writes an output set."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.games.game_filter import GameFilter
from pipelines.warehouse.locks import output_lock
from schemas.atomic_files import NotARegularFile, atomic_path
from schemas.speed import Speed
from tests.conftest import run_cli
from tests.sample_tool import make_sample

ANY = GameFilter(0, frozenset(Speed), allow_bots=True)
MONTH = make_sample.SAMPLE_MONTHS[0]


@pytest.fixture(scope="module")
def warehouse(sample_warehouse: Path) -> Path:
    return sample_warehouse


@pytest.fixture(scope="module")
def book(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("book") / "b.bin"
    run_cli("book", "build", "--warehouse", str(warehouse), "--months", MONTH,
            "--min-games", "1", "--out", str(out))  # fmt: skip
    return out


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return "a FIFO"


def _folder(path: Path) -> str:
    path.mkdir()
    return "a folder"


def _symlink(path: Path) -> str:
    target = path.with_name("target.bin")
    target.write_bytes(b"theirs")
    path.symlink_to(target)
    return f"a symlink to {target}"


def _dangling(path: Path) -> str:
    path.symlink_to(path.with_name("nowhere"))
    return f"a symlink to {path.with_name('nowhere')}"


def _device(path: Path) -> str:
    """A character device like /dev/null, made in the test's folder (root only)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return "a device"


MAKERS: list[Callable[[Path], str]] = [_fifo, _folder, _symlink, _dangling, _device]


def _snapshot(path: Path) -> tuple[int, str | None]:
    mode = os.lstat(path).st_mode
    return mode, os.readlink(path) if stat.S_ISLNK(mode) else None


@pytest.mark.parametrize("make", MAKERS, ids=lambda m: m.__name__.strip("_"))
def test_an_output_that_is_not_a_regular_file_is_left_as_it_is(
    make: Callable[[Path], str], warehouse: Path, book: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.bin"
    kind = make(out)
    before = _snapshot(out)
    for command in (
        ["book", "build", "--warehouse", str(warehouse), "--months", MONTH, "--min-games", "1",
         "--out", str(out)],
        ["book", "dump", str(book), "--out", str(out)],
        ["book", "report", str(book), "--out", str(out)],
        ["book", "merge", str(book), str(book), str(out)],
    ):  # fmt: skip
        proc = run_cli(*command, check=False)
        assert proc.returncode == 1, command
        assert proc.stderr.splitlines() == [
            f"chesspipe: error: {out}: exists and is {kind}; an output replaces only a regular file"
        ], command
        assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == sorted(
        p.name for p in [out, out.with_name("target.bin")] if os.path.lexists(p)
    )
    with pytest.raises(NotARegularFile), atomic_path(out) as tmp:
        tmp.write_bytes(b"x")
    assert _snapshot(out) == before


def test_the_manifest_beside_a_book_is_checked_before_the_book_is_built(
    warehouse: Path, tmp_path: Path
) -> None:
    out = tmp_path / "b.bin"
    _fifo(tmp_path / "b.json")
    proc = run_cli("book", "build", "--warehouse", str(warehouse), "--months", MONTH,
                   "--min-games", "1", "--out", str(out), check=False)  # fmt: skip
    assert proc.returncode == 1 and "b.json: exists and is a FIFO" in proc.stderr
    assert not out.exists()


def test_a_regular_file_is_replaced(warehouse: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.bin"
    out.write_bytes(b"old")
    run_cli("book", "build", "--warehouse", str(warehouse), "--months", MONTH,
            "--min-games", "1", "--out", str(out))  # fmt: skip
    assert out.stat().st_size > 0 and out.stat().st_size % 16 == 0


def test_two_book_builds_to_one_output_do_not_mix(warehouse: Path, tmp_path: Path) -> None:
    """While one run writes a book and its manifest, another to the same output fails at once
    and writes nothing; the first run's pair is whole."""
    out = tmp_path / "b.bin"
    with output_lock(out):
        proc = run_cli("book", "build", "--warehouse", str(warehouse), "--months", MONTH,
                       "--min-games", "1", "--out", str(out), check=False)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"chesspipe: error: {out} is being written by another run; try again later"
    ]
    assert not out.exists() and not out.with_suffix(".json").exists()
    run_cli("book", "build", "--warehouse", str(warehouse), "--months", MONTH,
            "--min-games", "1", "--out", str(out))  # fmt: skip
    assert out.exists() and out.with_suffix(".json").exists()


@pytest.mark.parametrize("make", MAKERS, ids=lambda m: m.__name__.strip("_"))
def test_kept_games_to_what_is_not_a_regular_file_publish_nothing(
    make: Callable[[Path], str], tmp_path: Path
) -> None:
    """`ingest --write-kept DIR` with DIR a folder published the partition without the kept
    file or the manifest; now it is refused before the source is read."""
    kept = tmp_path / "kept.pgn.zst"
    kind = make(kept)
    before = _snapshot(kept)
    proc = run_cli("ingest", str(make_sample.sample_path(MONTH)), "--month", MONTH,
                   "--warehouse", str(tmp_path / "wh"), "--write-kept", str(kept),
                   check=False)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"chesspipe: error: {kept}: exists and is {kind}; an output replaces only a regular file"
    ]
    assert _snapshot(kept) == before
    assert not (tmp_path / "wh" / "move_stats").exists()
