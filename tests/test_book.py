"""Books: equal to PolyGlot's make-book on the same kept games, readable by python-chess."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from fractions import Fraction
from pathlib import Path

import chess
import chess.pgn
import chess.polyglot
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.books import build as book_module
from pipelines.books.build import RANGE_ROW_BYTES, build_book, key_ranges, ranges_for
from pipelines.books.manifest import BookManifest, book_manifest_path, read_manifest_beside
from pipelines.books.settings import BookSettings
from pipelines.errors import ChesspipeError
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import partition_file
from schemas.move_stats import MOVE_STATS_SCHEMA
from schemas.polyglot import read_entries
from schemas.speed import Speed
from tests.conftest import need_program, run_cli
from tests.legacy_partition import (
    write_legacy_partition,
    write_manifest_for,
    write_unranked_partition,
)
from tests.random_moves import chess960_games
from tests.recount import pgn_extract_elo, read_text

ALL = frozenset(Speed)


def entry_set(path: Path) -> set[tuple[int, int, int]]:
    entries = read_entries(path)
    return {
        (int(k), int(m), int(w))
        for k, m, w in zip(entries["key"], entries["move"], entries["weight"], strict=True)
    }


def make_book_reference(
    tmp_path: Path, source: Path, rating: int, games: int, score: float
) -> Path:
    """PolyGlot's own book from the games pgn-extract keeps with the same Elo criteria."""
    polyglot = need_program("polyglot")
    kept = pgn_extract_elo(source, rating, tmp_path)
    out = tmp_path / f"ref-{rating}-{games}-{score}.bin"
    subprocess.run(
        [
            polyglot,
            "make-book",
            "-pgn",
            str(kept),
            "-bin",
            str(out),
            "-max-ply",
            "20",
            "-min-game",
            str(games),
            "-min-score",
            f"{score * 100:g}",
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fixture", "rating", "settings"),
    [
        ("games_2021", 0, [(3, 0.35), (1, 0.0), (5, 0.5)]),
        ("games_2013", 1500, [(3, 0.35), (20, 0.35), (2, 0.6)]),
    ],
)
def test_book_equals_polyglot_make_book(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    fixture: str,
    rating: int,
    settings: list[tuple[int, float]],
) -> None:
    source: Path = request.getfixturevalue(fixture)
    ingest(
        str(source), "2020-01", tmp_path, IngestSettings(GameFilter(rating, ALL, allow_bots=True))
    )
    table = pq.read_table(partition_file(tmp_path, "2020-01"))
    top = (
        table.group_by(["key", "move"])
        .aggregate([("games", "sum")])
        .column("games_sum")
        .to_numpy()
        .max()
    )
    assert top < 16384, "PolyGlot halves counts from 16384 games on; pick a smaller sample"
    for games, score in settings:
        ours = tmp_path / f"ours-{games}-{score}.bin"
        manifest = build_book(tmp_path, "2020-01", ours, BookSettings(games, score))
        reference = make_book_reference(tmp_path, source, rating, games, score)
        # Byte for byte, moves of equal points in the order the games first played them.
        assert ours.read_bytes() == reference.read_bytes()
        assert manifest.entries == len(entry_set(reference)) > 0
        # Summed a key range at a time (as a book over many months is), and streamed in
        # batches (as a big book is, where a small one comes as one string): the same bytes.
        for ranges, stream_rows in ((7, book_module.STREAM_ROWS), (1, 0), (5, 0)):
            monkeypatch.setattr(book_module, "STREAM_ROWS", stream_rows)
            ranged = tmp_path / f"ranged-{games}-{score}-{ranges}-{stream_rows}.bin"
            again = build_book(
                tmp_path, "2020-01", ranged, BookSettings(games, score), ranges=ranges
            )
            assert ranged.read_bytes() == reference.read_bytes(), (ranges, stream_rows)
            assert again.positions == manifest.positions
            assert again.entry_games == manifest.entry_games


def test_key_ranges_cover_the_keys_once_and_follow_the_memory_limit() -> None:
    for count in (1, 2, 7, 64):
        ranges = key_ranges(count)
        assert ranges[0].first == 0 and ranges[-1].last == 2**64 - 1 and len(ranges) == count
        assert all(a.last + 1 == b.first for a, b in zip(ranges, ranges[1:], strict=False))
    assert ranges_for(1_000, 256 << 20) == 1
    assert ranges_for(48_000_000, 256 << 20) == -(-48_000_000 * RANGE_ROW_BYTES // (256 << 20))


def test_a_book_by_key_ranges_over_ranked_and_unranked_months_is_the_whole_book(
    tmp_path: Path, games_2021: Path
) -> None:
    """Whether moves of equal weight go by first play is the whole book's to say: one month
    without ranks sends every position's ties by move, in every range."""
    settings = IngestSettings(GameFilter(0, ALL, allow_bots=True))
    ingest(str(games_2021), "2021-10", tmp_path, settings)
    table = pq.read_table(partition_file(tmp_path, "2021-10"))
    first = table.slice(0, 3)
    synthetic_month(
        tmp_path,
        "2021-11",
        [(int(k), int(m), 1, 0, 0) for k, m in zip(first["key"], first["move"], strict=True)],
    )
    for months, book in (("2021-10", BookSettings(1, 0.0)), ("2021-10..2021-11", None)):
        whole, ranged = tmp_path / "whole.bin", tmp_path / "ranged.bin"
        build_book(tmp_path, months, whole, book or BookSettings(1, 0.0))
        build_book(tmp_path, months, ranged, book or BookSettings(1, 0.0), ranges=16)
        assert ranged.read_bytes() == whole.read_bytes() and whole.stat().st_size > 16 * 500
    # (The test can tell: ranked, some ties go otherwise than by move.)
    ranked = tmp_path / "ranked.bin"
    build_book(tmp_path, "2021-10", ranked, BookSettings(1, 0.0))
    entries = read_entries(ranked)
    order = list(
        zip(entries["key"], -entries["weight"].astype("int64"), entries["move"], strict=True)
    )
    assert order != sorted(order)


@pytest.mark.slow
def test_python_chess_reads_every_entry(tmp_path: Path, games_2021: Path) -> None:
    """Replaying the games with python-chess, its book reader finds exactly our entries."""
    import io

    ingest(str(games_2021), "2021-10", tmp_path, IngestSettings(GameFilter(0, ALL, True)))
    book = tmp_path / "b.bin"
    build_book(tmp_path, "2021-10", book, BookSettings(2, 0.3))
    expected = {
        (int(k), int(m), int(w))
        for k, m, w in read_entries(book)[["key", "move", "weight"]].tolist()
    }
    seen: set[tuple[int, int, int]] = set()
    stream = io.StringIO(read_text(games_2021))
    with chess.polyglot.open_reader(book) as reader:
        while (game := chess.pgn.read_game(stream)) is not None:
            board = game.board()
            for move in list(game.mainline_moves())[:20]:
                seen.update((e.key, e.raw_move, e.weight) for e in reader.find_all(board))
                board.push(move)
    assert seen == expected
    assert len(expected) > 100


def synthetic_month(
    warehouse: Path, month: str, rows: list[tuple[int, int, int, int, int]]
) -> None:
    """Write a partition by hand: (key, move, wins, draws, losses)."""
    path = partition_file(warehouse, month)
    path.parent.mkdir(parents=True)
    table = pa.table(
        {
            "key": [r[0] for r in rows],
            "move": [r[1] for r in rows],
            "speed": ["blitz"] * len(rows),
            "rating_band": [2200] * len(rows),
            "rating_group": [2200] * len(rows),
            "games": [sum(r[2:]) for r in rows],
            "wins": [r[2] for r in rows],
            "draws": [r[3] for r in rows],
            "losses": [r[4] for r in rows],
            "rating_sum": [2250 * sum(r[2:]) for r in rows],
            "first_play": [None] * len(rows),  # (no ranks: equal weights go by move)
            "white_to_move": [None] * len(rows),  # (hand-made positions: no side)
        },
        schema=MOVE_STATS_SCHEMA,
    )
    pq.write_table(table, path)
    write_manifest_for(path)


def test_scaling_ties_and_order(tmp_path: Path) -> None:
    rows = [
        (7, 100, 40000, 1000, 0),  # points 81000 > 65535: position 7 is scaled
        (7, 200, 20000, 500, 0),
        (7, 300, 10, 0, 10),  # points 20 -> rounds to 16
        (7, 400, 1, 0, 19),  # points 2 -> rounds to 2
        (7, 500, 0, 1, 39),  # points 1 -> would round to 0: at least 1
        (7, 600, 51, 0, 0),  # points 102 and 103 scale to one weight: the higher first,
        (7, 650, 51, 1, 0),  # as PolyGlot orders by points
        (3, 10, 30, 0, 0),
        (3, 11, 30, 0, 0),  # a tie
        (3, 12, 0, 0, 30),  # no points: out
        (5, 1, 5, 0, 0),  # too few games: out
    ]
    synthetic_month(tmp_path, "2024-01", rows)
    out = tmp_path / "b.bin"
    build_book(tmp_path, "2024-01", out, BookSettings(min_games=20, min_score=0.0))
    entries = read_entries(out)
    got = [(int(k), int(m), int(w)) for k, m, w in entries[["key", "move", "weight"]].tolist()]
    top = 81000

    def scaled(points: int) -> int:
        return max(1, int(Fraction(points * 65535, top) + Fraction(1, 2)))

    assert got == [
        (3, 10, 60),
        (3, 11, 60),
        (7, 100, 65535),
        (7, 200, scaled(40500)),
        (7, 650, scaled(103)),
        (7, 600, scaled(102)),
        (7, 300, scaled(20)),
        (7, 400, scaled(2)),
        (7, 500, 1),
    ]
    assert scaled(20) == 16 and scaled(2) == 2 and scaled(102) == scaled(103)
    assert all(entries["learn"] == 0)


def test_min_score_boundary_matches_polyglot_arithmetic(tmp_path: Path) -> None:
    # 14 points in 20 games is exactly 35%: kept, as PolyGlot keeps it ((14/20)/2 >= 0.35).
    synthetic_month(tmp_path, "2024-01", [(1, 1, 7, 0, 13), (1, 2, 6, 1, 13)])
    out = tmp_path / "b.bin"
    build_book(tmp_path, "2024-01", out, BookSettings(20, 0.35))
    assert entry_set(out) == {(1, 1, 14)}


def test_empty_book_and_missing_months(tmp_path: Path) -> None:
    synthetic_month(tmp_path, "2024-01", [(1, 1, 1, 0, 0)])
    out = tmp_path / "empty.bin"
    manifest = build_book(tmp_path, "2024-01", out, BookSettings(20, 0.35))
    assert manifest.entries == 0 and out.stat().st_size == 0
    with pytest.raises(ChesspipeError, match="2 of 3 months missing: 2024-02..2024-03 in"):
        build_book(tmp_path, "2024-01..2024-03", tmp_path / "x.bin")
    assert not (tmp_path / "x.bin").exists()
    proc = run_cli(
        "book",
        "build",
        "--warehouse",
        str(tmp_path),
        "--months",
        "2024-03..2024-01",
        "--out",
        str(tmp_path / "y.bin"),
        check=False,
    )
    assert proc.returncode == 1 and "ends before it starts" in proc.stderr


def test_book_build_refuses_to_write_an_empty_book(tmp_path: Path) -> None:
    synthetic_month(tmp_path, "2024-01", [(1, 1, 1, 0, 0), (2, 3, 0, 0, 5)])
    out = tmp_path / "book.bin"
    out.write_bytes(b"an earlier book")
    args = ("book", "build", "--warehouse", str(tmp_path), "--months", "2024-01", "--out")
    proc = run_cli(*args, str(out), "--book-speeds", "blitz", check=False)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "--min-games 20" in proc.stderr and "--min-score 0.35" in proc.stderr
    assert "--book-speeds blitz" in proc.stderr and "nothing written" in proc.stderr
    assert out.read_bytes() == b"an earlier book" and not book_manifest_path(out).exists()
    # The settings that let a move in make a book, which python-chess reads.
    run_cli(*args, str(out), "--min-games", "1")
    with chess.polyglot.open_reader(out) as reader:
        assert [(e.key, e.raw_move, e.weight) for e in reader] == [(1, 1, 2)]


def test_manifest_counts_entry_games_and_reads_the_older_games_key(tmp_path: Path) -> None:
    synthetic_month(tmp_path, "2024-01", [(1, 1, 15, 5, 5), (1, 2, 20, 0, 0), (2, 3, 30, 0, 0)])
    out = tmp_path / "b.bin"
    manifest = build_book(tmp_path, "2024-01", out, BookSettings(20, 0.0, speeds=("blitz",)))
    stored = json.loads(book_manifest_path(out).read_text())
    # A game counts once for each book move it played: the sum of n over the entries.
    assert stored["entry_games"] == manifest.entry_games == 25 + 20 + 30
    assert "games" not in stored
    assert BookManifest.from_json(stored) == manifest
    assert stored["settings"]["speeds"] == ["blitz"]
    # A manifest written before the field had its name still reads, with the same value.
    older = {k: v for k, v in stored.items() if k != "entry_games"} | {"games": 75}
    assert BookManifest.from_json(older) == manifest
    book_manifest_path(out).write_text(json.dumps(older))
    assert read_manifest_beside(out) == manifest


def test_month_range_sums_months(tmp_path: Path) -> None:
    synthetic_month(tmp_path, "2023-12", [(1, 1, 10, 0, 0)])
    synthetic_month(tmp_path, "2024-01", [(1, 1, 5, 2, 3), (1, 2, 20, 0, 0)])
    out = tmp_path / "b.bin"
    build_book(tmp_path, "2023-12..2024-01", out, BookSettings(20, 0.0))
    assert entry_set(out) == {(1, 1, 32), (1, 2, 40)}


def test_month_lists_ranges_and_all(tmp_path: Path) -> None:
    """--months takes lists and `all`; missing months are named once, runs as ranges."""
    import pandas as pd

    from pipelines.warehouse.months import month_runs, select_months

    def period_months(first: str, last: str) -> list[str]:
        return [str(p) for p in pd.period_range(first, last, freq="M")]

    spec = "2024-05,2023-11..2024-02,2023-12"
    assert select_months(spec) == period_months("2023-11", "2024-02") + ["2024-05"]
    every = period_months("2019-01", "2024-12")
    chosen = [m for i, m in enumerate(every) if (i * 7) % 5 < 3]
    runs = month_runs(chosen)
    assert select_months(",".join(runs)) == chosen
    ordinals = [pd.Period(m, freq="M").ordinal for m in chosen]
    assert len(runs) == 1 + sum(b - a > 1 for a, b in zip(ordinals, ordinals[1:], strict=False))

    synthetic_month(tmp_path, "2024-01", [(1, 1, 10, 0, 0)])
    synthetic_month(tmp_path, "2024-02", [(1, 1, 100, 0, 0)])
    synthetic_month(tmp_path, "2024-03", [(1, 1, 5, 2, 3), (1, 2, 20, 0, 0)])

    def built(months: str) -> tuple[set[tuple[int, int, int]], list[str]]:
        out = tmp_path / "b.bin"
        cli = run_cli("book", "build", "--warehouse", str(tmp_path), "--months", months,
                      "--out", str(out), "--min-games", "20", "--min-score", "0")  # fmt: skip
        return entry_set(out), json.loads(cli.stdout)["months"]

    assert built("2024-01,2024-03") == ({(1, 1, 32), (1, 2, 40)}, ["2024-01", "2024-03"])
    assert built("all") == ({(1, 1, 232), (1, 2, 40)}, ["2024-01", "2024-02", "2024-03"])
    proc = run_cli("book", "build", "--warehouse", str(tmp_path), "--months",
                   "2023-01..2024-06,2022-01", "--out", str(tmp_path / "x.bin"),
                   check=False)  # fmt: skip
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1
    assert "16 of 19 months missing: 2022-01, 2023-01..2023-12, 2024-04..2024-06 in" in proc.stderr
    empty = run_cli("book", "build", "--warehouse", str(tmp_path / "none"), "--months", "all",
                    "--out", str(tmp_path / "x.bin"), check=False)  # fmt: skip
    assert empty.returncode == 1 and "holds no months" in empty.stderr
    assert not (tmp_path / "x.bin").exists()


@pytest.mark.slow
def test_speed_and_band_filters_equal_filtering_at_ingest(tmp_path: Path, games_2021: Path) -> None:
    """Book filters on stored dimensions give the book of a narrower ingest."""
    ingest(str(games_2021), "2021-10", tmp_path / "all", IngestSettings(GameFilter(0, ALL, True)))
    ingest(
        str(games_2021),
        "2021-10",
        tmp_path / "blitz",
        IngestSettings(GameFilter(0, frozenset({"blitz"}), True)),
    )
    ingest(
        str(games_2021), "2021-10", tmp_path / "strong", IngestSettings(GameFilter(2000, ALL, True))
    )
    blitz = book_entries(tmp_path / "all", BookSettings(2, 0.0, speeds=("blitz",)))
    strong = book_entries(tmp_path / "all", BookSettings(2, 0.0, min_band=2000))
    assert blitz == book_entries(tmp_path / "blitz", BookSettings(2, 0.0))
    assert strong == book_entries(tmp_path / "strong", BookSettings(2, 0.0))
    assert blitz and strong and blitz != strong


def test_rating_groups_and_sums_leave_books_unchanged(tmp_path: Path, games_2021: Path) -> None:
    """A month written with rating groups and sums gives the same book bytes as the same month
    written without them (as before they were kept), alone or beside such a month (neither
    with first-play ranks: tests/test_first_play.py)."""
    ranked = tmp_path / "ranked"
    ingest(str(games_2021), "2021-10", ranked, IngestSettings(GameFilter(0, ALL, True)))
    new = tmp_path / "new"
    write_unranked_partition(partition_file(ranked, "2021-10"), partition_file(new, "2021-10"))
    write_manifest_for(partition_file(new, "2021-10"))
    old = tmp_path / "old"
    write_legacy_partition(partition_file(ranked, "2021-10"), partition_file(old, "2021-10"))
    write_manifest_for(partition_file(old, "2021-10"))
    assert "rating_group" in pq.read_schema(partition_file(new, "2021-10")).names
    for settings in (BookSettings(2, 0.0), BookSettings(1, 0.3, min_band=1800)):
        build_book(new, "2021-10", new / "book.bin", settings)
        build_book(old, "2021-10", old / "book.bin", settings)
        assert (new / "book.bin").read_bytes() == (old / "book.bin").read_bytes()
        assert (new / "book.bin").stat().st_size > 1000
    mixed = partition_file(old, "2021-11")
    mixed.parent.mkdir(parents=True)
    mixed.write_bytes(partition_file(new, "2021-10").read_bytes())
    write_manifest_for(mixed)
    build_book(old, "2021-10..2021-11", old / "two.bin", BookSettings(2, 0.0))
    doubled = tmp_path / "doubled"
    for month in ("2021-10", "2021-11"):
        write_legacy_partition(partition_file(new, "2021-10"), partition_file(doubled, month))
        write_manifest_for(partition_file(doubled, month))
    build_book(doubled, "2021-10..2021-11", doubled / "two.bin", BookSettings(2, 0.0))
    assert (old / "two.bin").read_bytes() == (doubled / "two.bin").read_bytes()


def book_entries(warehouse: Path, settings: BookSettings) -> set[tuple[int, int, int]]:
    out = warehouse / "tmp.bin"
    build_book(warehouse, "2021-10", out, settings)
    return entry_set(out)


@pytest.mark.slow
def test_chess960_book(tmp_path: Path) -> None:
    pgn = tmp_path / "c960.pgn"
    pgn.write_text(chess960_games(150, seed=5))
    manifest = ingest(
        str(pgn), "2024-01", tmp_path, IngestSettings(GameFilter(2200, ALL, False, "chess960"))
    )
    assert manifest.games_kept == 150
    out = tmp_path / "c960.bin"
    build_book(tmp_path, "2024-01", out, BookSettings(1, 0.0))
    # The truth: python-chess replays every game and its book reader decodes the moves.
    import io

    points: Counter[tuple[int, chess.Move]] = Counter()
    castles = 0
    stream = io.StringIO(pgn.read_text())
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        games.append(game)
        board = game.board()
        assert board.chess960
        white_points = {"1-0": 2, "1/2-1/2": 1, "0-1": 0}[game.headers["Result"]]
        for move in list(game.mainline_moves())[:20]:
            mover = white_points if board.turn == chess.WHITE else 2 - white_points
            points[(chess.polyglot.zobrist_hash(board), move)] += mover
            castles += board.is_castling(move)
            board.push(move)
    assert castles > 0
    with chess.polyglot.open_reader(out) as reader:
        for game in games:
            board = game.board()
            for move in list(game.mainline_moves())[:20]:
                found = {e.move: e.weight for e in reader.find_all(board)}
                wanted = points[(chess.polyglot.zobrist_hash(board), move)]
                assert found.get(move, 0) == wanted
                board.push(move)
    assert len(read_entries(out)) == sum(1 for p in points.values() if p > 0)


@pytest.mark.slow
def test_pasted_pgn_movetext_is_a_move_list(polyglot_book: Path, games_2021: Path) -> None:
    """book show --moves, book dump --moves and fen_after() read pasted PGN as python-chess does.

    Real Lichess movetext (move numbers, `{ [%clk ...] }` comments, `1...`), with NAGs,
    variations and a result added, and UCI lists: the position is python-chess's.
    """
    import io

    from pipelines.warehouse.chess_functions import fen_after

    stream = io.StringIO(read_text(games_2021))
    texts = ["1. e4 c5 2. Nf3", "1.e4 c5 2.Nf3 d6 *", "e2e4 c7c5 g1f3", "e4 c5 Nf3"]
    for _ in range(3):
        game = chess.pgn.read_game(stream)
        assert game is not None
        movetext = str(game).split("\n\n", 1)[1]
        texts.append(" ".join(movetext.split()[:40]))
    texts.append("1. d4 $1 { good } d5 (1... Nf6 2. c4 (2. Nf3)) 2. c4!? e6 $14 1-0")
    for text in texts:
        board = chess.pgn.read_game(io.StringIO(text)).end().board()  # type: ignore[union-attr]
        shown = run_cli("book", "show", str(polyglot_book), "--moves", text).stdout
        assert (
            shown.splitlines()[0] == f"key {chess.polyglot.zobrist_hash(board):016x}  {board.fen()}"
        )
        assert fen_after(text) == board.fen()
    dumped = run_cli("book", "dump", str(polyglot_book), "--moves", texts[-1], "--depth", "1")
    assert chess.pgn.read_game(io.StringIO(dumped.stdout)).board().fen() == board.fen()  # type: ignore[union-attr]
    bad = run_cli("book", "show", str(polyglot_book), "--moves", "1. e4 {x} e5 2. Ke3", check=False)
    assert bad.returncode == 1
    assert bad.stderr == "chesspipe: error: illegal move Ke3 after 1. e4 e5\n"


def test_book_show_cli(tmp_path: Path, polyglot_book: Path) -> None:
    proc = run_cli("book", "show", str(polyglot_book), "--moves", "e4 e5")
    board = chess.Board()
    board.push_san("e4")
    board.push_san("e5")
    with chess.polyglot.open_reader(polyglot_book) as reader:
        weights: dict[str, int] = {}
        for entry in reader.find_all(board):
            weights.setdefault(board.san(entry.move), entry.weight)
    total = sum(weights.values())
    lines = [line for line in proc.stdout.splitlines()[1:] if not line.startswith("opening ")]
    assert len(lines) == len(weights)
    for line in lines:
        san, _, weight, percent = line.split()[:4]  # then the name (tests/test_book_outcomes.py)
        assert int(weight) == weights[san]
        assert (
            percent == f"({weights[san] / total:.2%})"
            or percent.strip("()") == f"{weights[san] / total:.2%}"
        )
    summary = run_cli("book", "show", str(polyglot_book)).stdout
    assert f"entries    {polyglot_book.stat().st_size // 16:,}" in summary
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"x" * 20)
    proc = run_cli("book", "show", str(bad), check=False)
    assert proc.returncode == 1 and "not a multiple of 16" in proc.stderr
    proc = run_cli("book", "show", str(polyglot_book), "--fen", "not a fen", check=False)
    assert proc.returncode == 1 and "invalid FEN" in proc.stderr
    assert np.array_equal(
        read_entries(polyglot_book)["key"], np.sort(read_entries(polyglot_book)["key"])
    )


def test_large_book_is_sorted(tmp_path: Path) -> None:
    """Hundreds of thousands of entries: DuckDB's parallel ORDER BY must not leak into the file."""
    rng = np.random.default_rng(1)
    n = 400_000
    keys = rng.integers(0, 2**63, n // 2, dtype=np.uint64).repeat(2)
    path = partition_file(tmp_path, "2024-01")
    path.parent.mkdir(parents=True)
    wins = rng.integers(20, 40, n)
    moves = np.tile(np.array([1, 2], dtype=np.uint16), n // 2)
    ranks = rng.permutation(n).astype(np.uint64)
    table = pa.table(
        {
            "key": keys,
            "move": moves,
            "speed": ["blitz"] * n,
            "rating_band": np.full(n, 2200, dtype=np.uint16),
            "rating_group": np.full(n, 2200, dtype=np.uint16),
            "games": wins.astype(np.uint64),
            "wins": wins.astype(np.uint64),
            "draws": np.zeros(n, dtype=np.uint64),
            "losses": np.zeros(n, dtype=np.uint64),
            "rating_sum": 2250 * wins.astype(np.uint64),
            "first_play": ranks,
            "white_to_move": np.ones(n, dtype=bool),
        },
        schema=MOVE_STATS_SCHEMA,
    )
    pq.write_table(table, path)
    write_manifest_for(path)
    out = tmp_path / "big.bin"
    build_book(tmp_path, "2024-01", out, BookSettings(20, 0.35))
    entries = read_entries(out)  # rejects unsorted keys
    assert len(entries) == n
    same_key = entries["key"][1:] == entries["key"][:-1]
    assert np.all(entries["weight"][1:][same_key] <= entries["weight"][:-1][same_key])
    # Moves of equal weight by their first-play rank.
    rank_of = dict(
        zip(zip(keys.tolist(), moves.tolist(), strict=True), ranks.tolist(), strict=True)
    )
    pairs = zip(entries["key"].tolist(), entries["move"].tolist(), strict=True)
    entry_ranks = np.array([rank_of[pair] for pair in pairs])
    tied = same_key & (entries["weight"][1:] == entries["weight"][:-1])
    assert tied.any() and np.all(entry_ranks[1:][tied] > entry_ranks[:-1][tied])


@pytest.mark.parametrize(
    ("given", "quoted"),
    [("../x", "'../x'"), ("2024-01..", "'2024-01..'"), ("..2024-01", "'..2024-01'"),
     ("2024-01,2023-01..2024-13", "'2023-01..2024-13'"), ("2024-1", "'2024-1'")],
)  # fmt: skip
def test_a_bad_month_selection_is_quoted_as_given(tmp_path: Path, given: str, quoted: str) -> None:
    proc = run_cli("book", "build", "--warehouse", str(tmp_path), "--months", given,
                   "--out", str(tmp_path / "x.bin"), check=False)  # fmt: skip
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("chesspipe: error: month") and quoted in proc.stderr
    assert "''" not in proc.stderr
