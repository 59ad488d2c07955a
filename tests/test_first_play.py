"""First-play ranks: books equal PolyGlot's make-book byte for byte, moves of equal points in
the order the games first played them, however the games were read (in process, by units of
frames or blocks of games in worker processes, by date), over several months and a compacted
year; months without ranks give the books they gave before.

The truths: PolyGlot's make-book on the same games (in month order for several months) and
python-chess's replay of them (tests/polyglot_order.py).
"""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import chess.pgn
import pyarrow.parquet as pq
import pytest

from pipelines.books.build import build_book
from pipelines.books.settings import BookSettings
from pipelines.games.frames import write_framed_zstd
from pipelines.games.plan import Strategy, plan_read
from pipelines.ingest.by_date import ingest_by_date
from pipelines.ingest.options import Runtime, Tuning
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.sources.open import open_source
from pipelines.warehouse.layout import partition_file
from pipelines.warehouse.yearly import compact_year, yearly_file
from schemas.first_play import LAST_VISIT
from tests.conftest import OTB, need
from tests.legacy_partition import write_manifest_for, write_unranked_partition
from tests.polyglot_order import first_plays, moves_by_first_play, rank_order, ties_by_move
from tests.recount import read_text, split_in_turn
from tests.test_any_games import EVERY_GAME, decided_games, make_book, python_chess_games

SETTINGS = IngestSettings(EVERY_GAME)
#: PolyGlot's -min-game 1 (every move a game played) and higher.
BOOKS = [BookSettings(1, 0.0), BookSettings(3, 0.35)]


@pytest.fixture
def capablanca(tmp_path: Path) -> Path:
    """The Capablanca collection's games with a decided result (the ones ingest keeps)."""
    source = need(OTB / "Capablanca.pgn", "the Capablanca collection (otb/)")
    folder = tmp_path / "capablanca"
    folder.mkdir()
    return decided_games(source, folder)


@pytest.fixture
def london(tmp_path: Path) -> Path:
    source = need(OTB / "London1851.pgn", "the London 1851 collection (otb/)")
    folder = tmp_path / "london"
    folder.mkdir()
    return decided_games(source, folder)


def assert_books_equal_polyglot(warehouse: Path, months: str, pgn: Path, folder: Path) -> None:
    """Each of BOOKS over `months` is PolyGlot's make-book on `pgn`, byte for byte."""
    for settings in BOOKS:
        ours = folder / f"ours-{months}-{settings.min_games}.bin"
        build_book(warehouse, months, ours, settings)
        reference = make_book(pgn, folder, settings.min_games, settings.min_score)
        assert ours.stat().st_size > 1000
        assert ours.read_bytes() == reference.read_bytes(), (months, settings)


@pytest.mark.slow
def test_parallel_ingest_ranks_as_in_process(
    tmp_path: Path, capablanca: Path, london: Path
) -> None:
    """Units of frames and blocks of games read by two worker processes give the month file
    of one process (the units' ranks moved on by the games before them), whose ranks are
    python-chess's first plays and whose books are PolyGlot's."""
    both = tmp_path / "both.pgn"
    both.write_text(read_text(capablanca) + "\n" + read_text(london))
    framed = tmp_path / "both.pgn.zst"
    write_framed_zstd(framed, both.read_bytes(), frame_size=20_000, level=1)
    expected = moves_by_first_play(first_plays(both))
    files = set()
    runs = {
        "in process": (both, 1, Strategy.IN_PROCESS),
        "units of frames": (framed, 2, Strategy.UNITS),
        "blocks of games": (both, 2, Strategy.BLOCKS),
        # (as on Dask's: the units scanned there, the runs merged here)
        "units of frames on an executor": (framed, 2, Strategy.UNITS),
    }
    for name, (source, workers, strategy) in runs.items():
        executor = ProcessPoolExecutor(2) if "executor" in name else None
        with open_source(str(source), "standard") as opened:
            plan = plan_read(
                opened, workers=workers, executor=executor, keep_partial=False, parallel_min_bytes=0
            )
            assert plan.strategy is strategy, name
            assert strategy is not Strategy.UNITS or len(plan.units) > 4
        warehouse = tmp_path / name.replace(" ", "-")
        try:
            manifest = ingest(
                str(source),
                "1901-01",
                warehouse,
                SETTINGS,
                runtime=Runtime(workers=workers, executor=executor),
                tuning=Tuning(parallel_min_bytes=0),
            )
        finally:
            if executor is not None:
                executor.shutdown()
        assert manifest.workers == (workers if executor is None else "executor"), name
        ranks = pq.read_table(partition_file(warehouse, "1901-01"))["first_play"]
        assert ranks.null_count == 0
        assert rank_order(partition_file(warehouse, "1901-01")) == expected, name
        assert_books_equal_polyglot(warehouse, "1901-01", both, tmp_path)
        files.add(partition_file(warehouse, "1901-01").read_bytes())
    assert len(files) == 1


def test_books_over_two_months_equal_polyglot_on_their_games_in_month_order(
    tmp_path: Path, capablanca: Path, london: Path
) -> None:
    warehouse = tmp_path / "w"
    ingest(str(london), "1901-01", warehouse, SETTINGS, runtime=Runtime(workers=1))
    ingest(str(capablanca), "1901-02", warehouse, SETTINGS, runtime=Runtime(workers=1))
    ingest(str(london), "1901-03", warehouse, SETTINGS, runtime=Runtime(workers=1))
    in_order = tmp_path / "london-capablanca.pgn"
    in_order.write_text(read_text(london) + "\n" + read_text(capablanca))
    assert_books_equal_polyglot(warehouse, "1901-01..1901-02", in_order, tmp_path)
    # The other month order gives PolyGlot (and chesspipe) another book.
    other_order = tmp_path / "capablanca-london.pgn"
    other_order.write_text(read_text(capablanca) + "\n" + read_text(london))
    assert_books_equal_polyglot(warehouse, "1901-02..1901-03", other_order, tmp_path)
    two = [tmp_path / f"ours-1901-0{m}..1901-0{m + 1}-1.bin" for m in (1, 2)]
    assert two[0].read_bytes() != two[1].read_bytes()


def month_of(game: chess.pgn.Game) -> str:
    """The month a game's Date tag names, as docs/ingest's --month-by date reads it: a date
    without its month in January of its year, one without a year in 0000-01 (UNDATED)."""
    found = re.match(r"(\d{4})(?:[.\-/](\d{2}))?", game.headers.get("Date", ""))
    if found is None or found.group(1) == "0000":
        return "0000-01"
    month = found.group(2)
    return f"{found.group(1)}-{month if month and '01' <= month <= '12' else '01'}"


@pytest.mark.slow
def test_books_of_a_collection_landed_by_date_equal_polyglot(
    tmp_path: Path, capablanca: Path
) -> None:
    """Each game into its date's month (the collection's dates are years: their Januaries):
    the book over the months is PolyGlot's on the games in month order (each month's in file
    order); a range of years' book, on those years' games."""
    warehouse = tmp_path / "w"
    dated = ingest_by_date(str(capablanca), warehouse, SETTINGS)
    assert len(dated.months) > 12
    games = python_chess_games(read_text(capablanca))
    by_month = sorted(games, key=month_of)  # (a stable sort: file order within a month)

    def pgn_of(chosen: list[chess.pgn.Game], name: str) -> Path:
        path = tmp_path / name
        exporter = chess.pgn.StringExporter
        path.write_text("".join(g.accept(exporter(columns=79)) + "\n\n" for g in chosen))
        return path

    assert_books_equal_polyglot(warehouse, "all", pgn_of(by_month, "by-month.pgn"), tmp_path)
    years = [g for g in by_month if "1914-01" <= month_of(g) <= "1927-12"]
    assert len({month_of(g) for g in years}) > 5
    chosen = pgn_of(years, "1914-1927.pgn")
    assert_books_equal_polyglot(warehouse, "1914-01..1927-12", chosen, tmp_path)


@pytest.fixture
def year_of_capablanca(tmp_path: Path, capablanca: Path) -> tuple[Path, Path]:
    """Twelve months of 1901, a twelfth of the collection each; their games in month order."""
    folder = tmp_path / "parts"
    folder.mkdir()
    parts = split_in_turn(capablanca, 12, folder)
    warehouse = tmp_path / "year"
    for month, part in enumerate(parts, start=1):
        ingest(str(part), f"1901-{month:02d}", warehouse, SETTINGS, runtime=Runtime(workers=1))
    in_order = tmp_path / "in-month-order.pgn"
    in_order.write_text("".join(part.read_text() for part in parts))
    return warehouse, in_order


def test_a_compacted_year_keeps_the_months_order(
    tmp_path: Path, year_of_capablanca: tuple[Path, Path]
) -> None:
    warehouse, in_order = year_of_capablanca
    assert_books_equal_polyglot(warehouse, "1901-01..1901-12", in_order, tmp_path)
    months_book = (tmp_path / "ours-1901-01..1901-12-1.bin").read_bytes()
    compact_year(warehouse, "1901")
    year = pq.read_table(yearly_file(warehouse, "1901"))
    assert year["first_play"].null_count == 0
    assert max(year["first_play"].to_pylist()) >> 60 == 11  # (December in the top bits)
    assert_books_equal_polyglot(warehouse, "1901-01..1901-12", in_order, tmp_path)
    assert (tmp_path / "ours-1901-01..1901-12-1.bin").read_bytes() == months_book


def unranked_copy(warehouse: Path, folder: Path, months: list[str]) -> Path:
    """A copy of a warehouse whose `months` lack first_play, as chesspipe wrote them before."""
    copy = folder / "unranked"
    shutil.copytree(warehouse, copy)
    for month in months:
        partition = partition_file(copy, month)
        write_unranked_partition(partition_file(warehouse, month), partition)
        write_manifest_for(partition)
    return copy


def test_months_without_ranks_build_the_books_they_built_before(
    tmp_path: Path, year_of_capablanca: tuple[Path, Path]
) -> None:
    """A month without first_play among those read: moves of equal points go by move in the
    whole book, as before the ranks (PolyGlot's book with such moves by move); a year
    compacted from such months, the same."""
    warehouse, in_order = year_of_capablanca
    every = [f"1901-{m:02d}" for m in range(1, 13)]
    for unranked_months in (every, ["1901-07"]):
        folder = tmp_path / str(len(unranked_months))
        folder.mkdir()
        copy = unranked_copy(warehouse, folder, unranked_months)
        for settings in BOOKS:
            reference = make_book(in_order, folder, settings.min_games, settings.min_score)
            ours = folder / f"ours-{settings.min_games}.bin"
            build_book(copy, "1901-01..1901-12", ours, settings)
            assert ours.read_bytes() == ties_by_move(reference) != reference.read_bytes()
            if "1901-08" not in unranked_months:  # a ranked month alone: ranked as it was
                build_book(copy, "1901-08", ours, settings)
                month = folder / f"ranked-{settings.min_games}.bin"
                build_book(warehouse, "1901-08", month, settings)
                assert ours.read_bytes() == month.read_bytes()
        compact_year(copy, "1901")
        assert pq.read_table(yearly_file(copy, "1901"))["first_play"].null_count > 0
        for settings in BOOKS:
            reference = make_book(in_order, folder, settings.min_games, settings.min_score)
            ours = folder / f"year-{settings.min_games}.bin"
            build_book(copy, "1901-01..1901-12", ours, settings)
            assert ours.read_bytes() == ties_by_move(reference)


#: Games that come back to a position and play another move from it: by ply (Nh3 before Nc3,
#: then d4 in the next game), not by move (Nc3, Nh3, d4).
SHUFFLE = " ".join(f"{n * 2 + 1}. Nf3 Nf6 {n * 2 + 2}. Ng1 Ng8" for n in range(20))
REPEATING = "".join(
    f'[Event "{event}"]\n[Result "{result}"]\n\n{moves} {result}\n\n'
    for event, result, moves in (
        ("a", "1-0", "1. Nh3 Nf6 2. Ng1 Ng8 3. Nc3 e5 4. Nb1 Nc6 5. Nf3"),
        ("b", "1-0", "1. d4 d5 2. Nc3 Nc6 3. Nb1 Nb8 4. c4 Nf6"),
        ("c", "0-1", f"{{shuffle}} {SHUFFLE} 41. c4"),
    )
)


@pytest.mark.parametrize("plies", [20, 80])
def test_a_game_coming_back_to_a_position_ranks_its_moves_by_ply(
    tmp_path: Path, plies: int
) -> None:
    """Both ways of counting (the compiled walk in batches, python-chess a game at a time)
    give the same ranks, a position's visits counted (the third game's more than the field
    holds too: longer than the compared plies at 80); the book at -min-game 1 is PolyGlot's."""
    from pipelines.games.game_filter import ScanStats
    from pipelines.games.scan import kept_games_in_blocks, split_games
    from pipelines.ingest.counting import MoveCounter

    pgn = tmp_path / "repeating.pgn"
    pgn.write_text(REPEATING)
    stats = ScanStats()
    games = list(split_games([pgn.read_bytes()], stats))
    kept = list(kept_games_in_blocks([b"".join(b"\n\n[" + g for g in games)], EVERY_GAME, stats))
    assert len(kept) == 3
    rows = []
    for batched in (True, False):
        counter = MoveCounter(plies, ScanStats(), batched=batched)
        for game in kept:
            counter.add(game)
        counted = counter.take_rows()
        rows.append({name: list(getattr(counted, name)) for name in counted.__dataclass_fields__})
    assert rows[0] == rows[1]
    visits = [rank & LAST_VISIT for rank in rows[0]["first_plays"]]
    assert max(visits) == (LAST_VISIT if plies == 80 else 4)  # (game c: plies 0, 4, ..., 16)
    warehouse = tmp_path / f"w-{plies}"
    ingest(str(pgn), "1901-01", warehouse, IngestSettings(EVERY_GAME, plies))
    ranks = rank_order(partition_file(warehouse, "1901-01"))
    assert ranks == moves_by_first_play(first_plays(pgn, plies=plies))
    if plies == 20:  # PolyGlot's -max-ply 20
        ours = tmp_path / "ours.bin"
        build_book(warehouse, "1901-01", ours, BookSettings(1, 0.0))
        assert ours.read_bytes() == make_book(pgn, tmp_path, 1, 0.0).read_bytes()
        assert ours.read_bytes() != ties_by_move(ours)
