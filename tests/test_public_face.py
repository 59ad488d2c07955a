"""The Python face (`from pipelines import ...`): every name resolves, `import pipelines` stays
light, and what the names give agrees with python-chess and with the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import chess
import chess.polyglot
import pytest

import pipelines
from tests.conftest import ROOT, run_cli


def test_every_public_name_resolves_and_none_is_a_room() -> None:
    for name in pipelines.__all__:
        assert getattr(pipelines, name) is not None, name
        assert not (ROOT / "pipelines" / name).is_dir(), f"{name} would hide the room"
    assert set(dir(pipelines)) >= set(pipelines.__all__)
    with pytest.raises(AttributeError):
        pipelines.no_such_name  # noqa: B018


def test_importing_the_face_imports_no_library() -> None:
    code = (
        "import sys, pipelines; heavy = [m for m in ('duckdb', 'pyarrow', 'chess', "
        "'pipelines.books', 'pipelines.serve') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_face_reads_a_warehouse_a_book_and_the_explorer(
    sample_warehouse: Path, tmp_path: Path
) -> None:
    from pipelines import BookSettings, build_book, explore, open_book, open_warehouse

    month = sorted(p.name[6:] for p in (sample_warehouse / "move_stats").glob("month=*"))[0]
    con = open_warehouse(sample_warehouse)
    try:
        start = chess.polyglot.zobrist_hash(chess.Board())
        games = con.execute(f"SELECT sum(games) FROM move_stats WHERE key = {start}").fetchall()[0][
            0
        ]
        moves = dict(
            con.execute(
                f"SELECT uci(move), sum(games) FROM move_stats WHERE key = {start} GROUP BY 1"
            ).fetchall()
        )
    finally:
        con.close()
    # the explorer's answer for the start position: the same games as the statistics
    found = explore(sample_warehouse)
    assert found.games == games
    assert {m.uci: m.games for m in found.moves} == {
        ("e1g1" if u == "e1h1" else u): n for u, n in moves.items()
    }
    after = explore(sample_warehouse, play=["e2e4"])
    assert after.games == next(m.games for m in found.moves if m.uci == "e2e4")
    # a book built from Python equals the command line's, and python-chess reads it
    book = tmp_path / "face.bin"
    build_book(sample_warehouse, month, book, BookSettings(min_games=5))
    run_cli("book", "build", "--warehouse", str(sample_warehouse), "--months", month,
            "--out", str(tmp_path / "cli.bin"), "--min-games", "5")  # fmt: skip
    assert book.read_bytes() == (tmp_path / "cli.bin").read_bytes()
    entries = open_book(book).entries
    with chess.polyglot.open_reader(book) as reader:
        assert len(list(reader.find_all(chess.Board()))) == int((entries["key"] == start).sum())
