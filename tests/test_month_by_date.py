"""ingest --month-by date: each game into the month its Date tag names, checked against a
python-chess recount of the games grouped by their dates (tests/recount.py)."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from pathlib import Path

import chess.pgn
import pytest

from pipelines.books.build import build_book
from pipelines.books.settings import BookSettings
from pipelines.errors import ChesspipeError
from pipelines.ingest.by_date import ingest_by_date
from pipelines.ingest.dates import UNDATED, date_month, game_month
from pipelines.ingest.options import RunPolicy
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import available_months, month_range
from tests.conftest import run_cli
from tests.recount import read_text, recount
from tests.test_any_games import ALL_NAMES, EVERY_GAME
from tests.test_ingest import stats_counter


@pytest.mark.parametrize(
    ("date", "month"),
    [
        ("1921.03.15", "1921-03"),
        ("1921.03.??", "1921-03"),
        ("1921.??.??", "1921-01"),  # a year only: its January
        ("1921.??.15", "1921-01"),
        ("1921.13.01", "1921-01"),  # no month: the year only
        ("1921.00.00", "1921-01"),
        ("1921", "1921-01"),
        ("1921-04-02", "1921-04"),
        ("1921/4/2", "1921-04"),
        ("????.??.??", UNDATED),
        ("0000.00.00", UNDATED),
        ("21.03.15", UNDATED),
        ("1021.03.15", UNDATED),  # before chess as played now
        ("9999.01.01", UNDATED),
        ("", UNDATED),
        ("?", UNDATED),
    ],
)
def test_a_date_names_its_month(date: str, month: str) -> None:
    assert date_month(date) == month


def test_the_date_tag_is_read_from_the_tags_whatever_its_case() -> None:
    assert game_month(b'Event "x"]\n[date "1930.05.??"]\n\n1. e4 1-0\n') == "1930-05"
    assert game_month(b'Date "1930.06.01"]\r\n[Event "x"]\r\n\r\n1. e4 1-0\r\n') == "1930-06"
    assert game_month(b'Event "x"]\n[UTCDate "1930.05.01"]\n\n1. e4 1-0\n') == UNDATED
    assert game_month(b'Event "x"]\n\n1. e4 {\n[Date "1930.05.01"]} 1-0\n') == UNDATED


def by_month(text: str, folder: Path) -> dict[str, Path]:
    """The games of `text` in one PGN file per month their Date tag names (python-chess's
    reading of the tag)."""
    games: dict[str, list[str]] = defaultdict(list)
    stream = io.StringIO(text)
    while (game := chess.pgn.read_game(stream)) is not None:
        month = date_month(game.headers.get("Date", ""))
        games[month].append(str(game))
    files = {}
    for month, texts in games.items():
        files[month] = folder / f"{month}.pgn"
        files[month].write_text("\n\n".join(texts) + "\n")
    return files


@pytest.mark.slow
def test_a_collection_lands_by_its_games_dates(tmp_path: Path, capablanca: Path) -> None:
    """Capablanca's 597 games, 1901-1941, dated by year only: each year's January holds the
    year's games, every other month of 1901-1941 is there and empty, and the book over
    1901-01..1941-12 is the book of the collection ingested under one label."""
    warehouse = tmp_path / "dated"
    done = ingest_by_date(str(capablanca), warehouse, IngestSettings(EVERY_GAME))
    assert (done.games_read, done.games_kept, done.games_dropped) == (597, 596, {"result": 1})
    expected = by_month(read_text(capablanca), tmp_path)
    assert UNDATED not in expected and len(expected) > 20
    span = month_range("1901-01..1941-12")
    assert available_months(warehouse) == span == [m.month for m in done.months]
    for month in span:
        if month in expected:
            counts, kept = recount(expected[month], 0, ALL_NAMES)
            assert stats_counter(warehouse, month) == counts, month
            manifest = next(m for m in done.months if m.month == month)
            assert manifest.games_kept == kept and manifest.dated, month
        else:
            assert not stats_counter(warehouse, month), month
    assert sum(m.games_read for m in done.months) == 597
    labelled = tmp_path / "labelled"
    ingest(str(capablanca), "1901-01", labelled, IngestSettings(EVERY_GAME))
    for name, where, months in (
        ("dated", warehouse, "1901-01..1941-12"),
        ("one", labelled, "1901-01"),
    ):
        build_book(where, months, tmp_path / f"{name}.bin", BookSettings(3, 0.35))
    assert (tmp_path / "dated.bin").read_bytes() == (tmp_path / "one.bin").read_bytes()
    # Whole years choose their games too.
    build_book(warehouse, "1921-01..1925-12", tmp_path / "years.bin", BookSettings(1, 0.0))
    assert (tmp_path / "years.bin").stat().st_size


def _game(date: str | None, moves: str, result: str = "1-0") -> str:
    tags = '[Event "x"]\n' + (f"{date}\n" if date is not None else "") + f'[Result "{result}"]\n'
    return f"{tags}\n{moves} {result}\n"


def test_odd_dates_and_the_undated_month(tmp_path: Path) -> None:
    """Every odd date goes where dates.py says, the undated games to 0000-01, which a book
    chooses by name and `all` holds; a month whose games were all dropped is published empty;
    with dedupe a game repeated under another date is a duplicate in the second's month."""
    source = tmp_path / "odd.pgn"
    source.write_text(
        "\n".join(
            [
                _game('[Date "1930.05.02"]', "1. e4 e5"),
                _game('[date "1930.05.??"]', "1. d4 d5"),
                _game('[Date "1930.??.??"]', "1. c4 e5"),
                _game('[Date "1931.13.01"]', "1. Nf3 d5"),
                _game('[Date "????.??.??"]', "1. e4 c5"),
                _game(None, "1. e4 e6"),
                _game('[Date "1929.03.01"]', "1. g3 d5", result="*"),  # dropped
                _game('[Date "1931.02.01"]', "1. e4 e5"),  # 1930.05.02's game again
            ]
        )
    )
    warehouse = tmp_path / "w"
    summary = json.loads(
        run_cli(
            "ingest", str(source), "--month-by", "date", "--warehouse", str(warehouse),
            "--speeds", "all", "--min-rating", "0", "--dedupe", "--quiet",
        ).stdout
    )  # fmt: skip
    found = {m["month"]: (m["games_read"], m["games_kept"]) for m in summary["months"]}
    assert found == {
        UNDATED: (2, 2),
        "1929-03": (1, 0),
        "1930-01": (1, 1),
        "1930-05": (2, 2),
        "1931-01": (1, 1),
        "1931-02": (1, 0),
    }
    assert summary["games_dropped"] == {"duplicate": 1, "result": 1}
    assert summary["empty_months"] == [
        "1929-01..1929-02", "1929-04..1929-12", "1930-02..1930-04", "1930-06..1930-12",
        "1931-03..1931-12",
    ]  # fmt: skip
    assert available_months(warehouse) == [UNDATED, *month_range("1929-01..1931-12")]
    undated = tmp_path / "undated.bin"
    build_book(warehouse, UNDATED, undated, BookSettings(1, 0.0))
    assert undated.stat().st_size == 16  # 1. e4 (the replies lost: no points)
    everything = tmp_path / "all.bin"
    assert build_book(warehouse, "all", everything, BookSettings(1, 0.0)).entries > 3
    manifest = json.loads((warehouse / "move_stats" / "month=1931-02.json").read_text())
    assert manifest["dated"] and manifest["games_dropped"] == {"duplicate": 1}


def test_month_by_date_refuses_what_it_cannot_do(tmp_path: Path, capablanca: Path) -> None:
    both = run_cli(
        "ingest", str(capablanca), "--month", "1901-01", "--month-by", "date",
        "--warehouse", str(tmp_path), check=False,
    )  # fmt: skip
    assert both.returncode != 0 and "not allowed with argument" in both.stderr
    kept = run_cli(
        "ingest", str(capablanca), "--month-by", "date", "--warehouse", str(tmp_path),
        "--write-kept", str(tmp_path / "k.pgn"), check=False,
    )  # fmt: skip
    assert kept.returncode != 0 and "--write-kept writes one month's games" in kept.stderr
    with pytest.raises(ChesspipeError, match="not by date"):
        ingest_by_date(
            str(capablanca), tmp_path, IngestSettings(EVERY_GAME),
            policy=RunPolicy(write_kept=tmp_path / "k.pgn"),
        )  # fmt: skip
    assert not available_months(tmp_path)
