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


@pytest.mark.slow
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


# Every command that reads a file and writes one: its arguments, with IN (the input) and OUT.
SAME_FILE_COMMANDS = {
    "book dump": ("book", "dump", "{book}", "--out", "{out}"),
    "book report": ("book", "report", "{book}", "--out", "{out}"),
    "book merge": ("book", "merge", "{book}", "{other}", "{out}"),
    "book merge (second)": ("book", "merge", "{other}", "{book}", "{out}"),
    "training convert": ("training", "convert", "{plain}", "{out}"),
    "training shuffle": ("training", "shuffle", "{plain}", "{out}", "--seed", "1"),
    "training filter": ("training", "filter", "{plain}", "{out}"),
    "training dedupe": ("training", "dedupe", "{plain}", "{out}"),
    "training to-pgn": ("training", "to-pgn", "{plain}", "{out}"),
    "training rescore": ("training", "rescore", "{plain}", "{out}", "--syzygy", "{tables}"),
    "training interleave": (
        "training", "interleave", "{other}", "{plain}", "--out", "{out}", "--seed", "1"
    ),
    "training from-games": ("training", "from-games", "{pgn}", "--month", MONTH, "--out", "{out}"),
    "endgames from-epd": (
        "endgames", "from-epd", "{plain}", "--out", "{out}", "--syzygy", "{tables}"
    ),
    "ingest --write-kept": (
        "ingest", "{pgn}", "--month", MONTH, "--warehouse", "{tmp}/wh", "--write-kept", "{out}"
    ),
}  # fmt: skip


@pytest.mark.parametrize("how", ["same path", "hard link", "symlinked folder"])
@pytest.mark.parametrize("command", sorted(SAME_FILE_COMMANDS))
def test_no_command_writes_over_its_own_input(
    book: Path, tmp_path: Path, plain_fixture: Path, syzygy_dir: Path, command: str, how: str
) -> None:
    """`book dump b.bin --out b.bin` turned the book into PGN, `training to-pgn g g` destroyed
    the file: an output that is the command's input (by any name) is refused before anything
    is read, in one line, and the input is left as it was."""
    args = SAME_FILE_COMMANDS[command]
    kind = "pgn" if "{pgn}" in args else "plain" if "{plain}" in args else "book"
    sources = {
        "book": book,
        "plain": plain_fixture,
        "pgn": make_sample.sample_path(MONTH),
    }
    victim = tmp_path / f"input.{kind}"
    victim.write_bytes(sources[kind].read_bytes())
    other = tmp_path / f"other.{'plain' if kind == 'plain' else 'bin'}"
    other.write_bytes((plain_fixture if kind == "plain" else book).read_bytes())
    if how == "same path":
        out = victim
    elif how == "hard link":
        out = tmp_path / f"linked.{kind}"
        os.link(victim, out)
    else:
        (tmp_path / "alias").symlink_to(tmp_path)
        out = tmp_path / "alias" / victim.name
    before = victim.read_bytes()
    filled = [
        a.format(book=victim, plain=victim, pgn=victim, other=other, out=out, tmp=tmp_path,
                 tables=syzygy_dir)
        for a in args
    ]  # fmt: skip
    proc = run_cli(*filled, check=False)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "an output never replaces what the command reads" in proc.stderr
    assert victim.read_bytes() == before
    assert not (tmp_path / "wh").exists()


#: Arguments whose names say file but that name none: a template of many months' sources, a
#: book's name under --books.
NOT_FILES = {
    ("chesspipe backfill", "source"),
    ("chesspipe backfill", "book"),
    ("chesspipe serve-monthly", "source"),
}


def test_every_output_argument_is_checked_against_the_inputs() -> None:
    """Each command's arguments that name what it writes are declared (add_file_roles), and
    so are those that name files it reads beside them: a new command cannot forget."""
    import argparse

    from pipelines.cli import build_parser

    writes_named = {"out", "output", "write_kept", "books", "dir"}
    reads_named = {
        "source", "input", "inputs", "book", "in1", "in2", "file", "labels", "matches", "suite",
    }  # fmt: skip
    seen = 0

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        nonlocal seen
        dests = {a.dest for a in parser._actions}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(child, f"{name} {sub}")
        written = dests & writes_named
        if not written:
            return
        seen += 1
        roles = parser.get_default("file_writes") or ()
        assert {dest for dest, _ in roles} == written, name
        read = {dest for dest in dests & reads_named if (name, dest) not in NOT_FILES}
        declared = {dest for dest, _ in parser.get_default("file_reads") or ()}
        assert declared == read, name

    walk(build_parser(), "chesspipe")
    assert seen >= 20


def _warehouse_with_everything(sample_warehouse: Path, tmp_path: Path) -> Path:
    """A copy of the sample warehouse with explorer and evaluation folders holding data."""
    import shutil

    wh = tmp_path / "wh"
    shutil.copytree(sample_warehouse, wh)
    (wh / "explorer" / f"month={MONTH}").mkdir(parents=True)
    (wh / "evals").mkdir()
    import pyarrow.parquet as pq

    from schemas.evals import evals_schema

    part = wh / "evals" / "part-20240101T000000-1-0123abcd.parquet"
    pq.write_table(evals_schema().empty_table(), part)
    return wh


@pytest.mark.slow
@pytest.mark.parametrize(
    "where",
    [
        "move_stats/month={month}/part-0.parquet",
        "move_stats/month={month}.json",
        "move_stats/book.bin",
        "explorer/month={month}/book.bin",
        "evals/book.bin",
    ],
)
def test_no_output_lands_in_a_warehouses_data(
    sample_warehouse: Path, tmp_path: Path, book: Path, where: str
) -> None:
    """`book build --out WH/move_stats/month=.../part-0.parquet` replaced the month with a
    book: an output inside a warehouse's data folders is refused, whatever command writes it,
    and the warehouse reads as before."""
    wh = _warehouse_with_everything(sample_warehouse, tmp_path)
    target = wh / where.format(month=MONTH)
    before = _digests_of(wh)
    for args in (
        ("book", "build", "--warehouse", str(wh), "--months", MONTH, "--out", str(target)),
        ("book", "dump", str(book), "--out", str(target)),
        ("book", "merge", str(book), str(book), str(target)),
    ):
        proc = run_cli(*args, check=False)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.count("\n") == 1
        assert "lies in the warehouse data folder" in proc.stderr, proc.stderr
    assert _digests_of(wh) == before
    run_cli("sql", "--warehouse", str(wh), "SELECT count(*) FROM move_stats")


def test_a_books_folder_inside_the_statistics_is_refused(
    sample_warehouse: Path, tmp_path: Path
) -> None:
    wh = _warehouse_with_everything(sample_warehouse, tmp_path)
    proc = run_cli(
        "build-month", str(make_sample.sample_path(MONTH)), "--month", MONTH,
        "--warehouse", str(wh), "--books", str(wh / "move_stats"), check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and "--books" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1
    # A folder beside the data, or one that merely shares a name with them, is fine.
    elsewhere = tmp_path / "mine" / "evals"
    elsewhere.mkdir(parents=True)
    out = elsewhere / "b.bin"
    run_cli("book", "build", "--warehouse", str(wh), "--months", MONTH, "--min-games", "1",
            "--out", str(out))  # fmt: skip
    assert out.stat().st_size > 0


def _digests_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_a_later_run_removes_what_a_killed_one_left_beside_its_outputs(
    warehouse: Path, tmp_path: Path, book: Path
) -> None:
    """`book build` killed with -9 left `.b.json.XXXXXXXX.tmp` beside the book, `training
    from-games` its file's and its lineage's: the next run to the same output removes them
    (under the output's lock), and `warehouse check --books --repair` removes a books folder's."""
    out = tmp_path / "b.bin"
    left = [tmp_path / ".b.bin.0123abcd.tmp", tmp_path / ".b.json.89abcdef.tmp"]
    other = tmp_path / ".other.bin.0123abcd.tmp"  # another output's: not this run's to remove
    for path in (*left, other):
        path.write_bytes(b"x")
    run_cli("book", "build", "--warehouse", str(warehouse), "--months", MONTH,
            "--min-games", "1", "--out", str(out))  # fmt: skip
    assert not any(p.exists() for p in left) and other.exists()
    training = tmp_path / "t.binpack"
    tails = ("", ".lineage.parquet", ".json")
    left = [tmp_path / f".t.binpack{tail}.0123abcd.tmp" for tail in tails]
    for path in left:
        path.write_bytes(b"x")
    run_cli("training", "from-games", str(make_sample.sample_path(MONTH)), "--month", MONTH,
            "--out", str(training), "--no-tables", "--no-require-eval", "--min-rating", "0",
            "--speeds", "all")  # fmt: skip
    assert training.exists() and not any(p.exists() for p in left)
    books = tmp_path / "books"
    books.mkdir()
    stale = books / ".lichess-2024-01.bin.0123abcd.tmp"
    stale.write_bytes(b"x")
    found = run_cli("warehouse", "check", str(warehouse), "--books", str(books), check=False)
    assert f"temp-file {stale}: left by a killed" in found.stdout and stale.exists()
    run_cli("warehouse", "check", str(warehouse), "--books", str(books), "--repair")
    assert not stale.exists()
