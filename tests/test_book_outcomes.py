"""Games, White/draw/Black and opening names in `book show` and `book report`, board diagrams at
the report's top positions, and its layout in Chromium.

The truths: the warehouse's Parquet files read by DuckDB in queries written here, python-chess's
book reader and replay, the openings TSV files replayed by python-chess, chess.svg.
"""

from __future__ import annotations

import csv
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import chess.polyglot
import chess.svg
import duckdb
import pytest

from pipelines.books.build import build_book
from pipelines.books.manifest import read_manifest_beside
from pipelines.books.outcomes import BookStatistics
from pipelines.books.report import DIAGRAM_SIZE, render_report
from pipelines.books.settings import BookSettings
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from schemas.speed import Speed
from tests.browser import chromium_driver
from tests.conftest import GAMES_2021, ROOT, need, run_cli
from tests.test_book_report import PageReader

SETTINGS = BookSettings(min_games=3, speeds=("blitz", "rapid", "classical", "bullet"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A book built from the real 2021-10 games, and its warehouse."""
    games = need(GAMES_2021, "real Lichess games (2021-10 sample)")
    root = tmp_path_factory.mktemp("outcomes")
    rules = GameFilter(min_rating=0, speeds=frozenset(Speed))
    ingest(
        str(games), "2021-10", root / "warehouse", IngestSettings(rules), runtime=Runtime(workers=1)
    )
    build_book(root / "warehouse", "2021-10", root / "book.bin", SETTINGS)
    return root / "book.bin", root / "warehouse"


def recount(warehouse: Path, board: chess.Board) -> dict[str, tuple[int, int, int, int]]:
    """(games, White wins, draws, Black wins) per move (UCI) of a position, from the Parquet
    files with DuckDB; the book's speeds; moves named by python-chess's book reader."""
    files = str(warehouse / "move_stats" / "month=*" / "*.parquet")
    rows = duckdb.sql(
        f"SELECT move, sum(games), sum(wins), sum(draws), sum(losses) FROM read_parquet('{files}') "
        f"WHERE key = {chess.polyglot.zobrist_hash(board)} "
        f"AND speed IN {tuple(SETTINGS.speeds or ())} GROUP BY move"
    ).fetchall()
    raw_to_uci = {}
    for move in board.legal_moves:
        for promotion_raw in _raw_moves(board, move):
            raw_to_uci[promotion_raw] = move.uci()
    out = {}
    for raw, games, wins, draws, losses in rows:
        white, black = (wins, losses) if board.turn == chess.WHITE else (losses, wins)
        out[raw_to_uci[raw]] = (int(games), int(white), int(draws), int(black))
    return out


def _raw_moves(board: chess.Board, move: chess.Move) -> Iterator[int]:
    """The Polyglot encodings of a move, as PolyGlot's book format documents them."""
    to_square = move.to_square
    if board.is_castling(move):  # king takes its rook
        to_square = (chess.H1 if chess.square_file(move.to_square) == 6 else chess.A1) ^ (
            0 if board.turn == chess.WHITE else 56
        )
    promotion = {None: 0, chess.KNIGHT: 1, chess.BISHOP: 2, chess.ROOK: 3, chess.QUEEN: 4}
    yield to_square | (move.from_square << 6) | (promotion[move.promotion] << 12)


def described(games: int, white: int, draws: int, black: int) -> str:
    return (
        f"games {games:,} (white {white / games:.1%}, draws {draws / games:.1%}, "
        f"black {black / games:.1%})"
    )


def tsv_names() -> dict[int, tuple[str, str]]:
    """key -> (eco, name) from the openings TSV files replayed by python-chess (shortest line)."""
    best: dict[int, tuple[int, str, str]] = {}
    for path in sorted((ROOT / "data" / "openings").glob("*.tsv")):
        with open(path, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                board = chess.Board()
                plies = 0
                for token in row["pgn"].split():
                    if not token.endswith("."):
                        board.push_san(token)
                        plies += 1
                key = chess.polyglot.zobrist_hash(board)
                if key not in best or plies < best[key][0]:
                    best[key] = (plies, row["eco"], row["name"])
    return {key: (eco, name) for key, (_, eco, name) in best.items()}


@pytest.fixture(scope="module")
def names() -> dict[int, tuple[str, str]]:
    return tsv_names()


@pytest.mark.slow
def test_show_gives_games_results_and_names(
    built: tuple[Path, Path], names: dict[int, tuple[str, str]], tmp_path: Path
) -> None:
    book, warehouse = built
    board = chess.Board()
    board.push_san("e4")
    proc = run_cli("book", "show", str(book), "--moves", "e4")
    lines = proc.stdout.splitlines()
    eco, name = names[chess.polyglot.zobrist_hash(board)]
    assert lines[1] == f"opening  {eco} {name}"
    expected = recount(warehouse, board)
    with chess.polyglot.open_reader(book) as reader:
        book_moves = {entry.move for entry in reader.find_all(board)}
    assert len(lines) - 2 == len(book_moves) > 3
    for line in lines[2:]:
        san = line.split()[0]
        move = board.parse_san(san)
        assert move in book_moves
        assert described(*expected[move.uci()]) in line
        board.push(move)
        named = names.get(chess.polyglot.zobrist_hash(board))
        board.pop()
        assert line.endswith(f"  {named[0]} {named[1]}") if named else "%)" in line[-3:]

    # Without the warehouse at hand, the moves and names only; a warehouse named on purpose
    # must hold the book's months.
    moved = tmp_path / "moved"
    shutil.copytree(warehouse, moved)
    shutil.move(warehouse, tmp_path / "away")
    try:
        plain = run_cli("book", "show", str(book), "--moves", "e4").stdout
        assert "games" not in plain and plain.splitlines()[1] == lines[1]
        again = run_cli("book", "show", str(book), "--moves", "e4", "--warehouse", str(moved))
        assert again.stdout == proc.stdout
        empty = run_cli(
            "book", "show", str(book), "--warehouse", str(tmp_path / "none"), check=False
        )
        assert empty.returncode == 1 and "2021-10" in empty.stderr
        assert len(empty.stderr.strip().splitlines()) == 1
    finally:
        shutil.move(tmp_path / "away", warehouse)


class Figures(PageReader):
    """Also the report's diagrams: each figure's attributes and its SVG text."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        super().handle_starttag(tag, attrs)
        if tag == "figure":
            self.figures.append({k: v or "" for k, v in attrs})


def test_report_gives_games_results_names_and_diagrams(
    built: tuple[Path, Path], names: dict[int, tuple[str, str]]
) -> None:
    book, warehouse = built
    statistics = BookStatistics.find(read_manifest_beside(book))
    assert statistics.warehouse == warehouse.resolve()
    html = render_report(book, plies=3, width=(4, 2), statistics=statistics)
    page = Figures()
    page.feed(html)
    assert page.items
    for item in page.items:
        line = item["data-line"].split()
        board = chess.Board()
        for san in line[:-1]:
            board.push_san(san)
        move = board.parse_san(line[-1])
        games, white, draws, black = recount(warehouse, board)[move.uci()]
        found = tuple(int(item[f"data-{k}"]) for k in ("games", "white", "draws", "black"))
        assert found == (games, white, draws, black), line
        board.push(move)
        named = names.get(chess.polyglot.zobrist_hash(board))
        assert (item.get("data-eco"), item.get("data-opening")) == (named or (None, None)), line

    # One diagram per first move of the tree, at the end of its heaviest line, as chess.svg
    # draws that position.
    firsts = [i["data-line"] for i in page.items if len(i["data-line"].split()) == 1]
    assert len(page.figures) == len(firsts) > 1
    with chess.polyglot.open_reader(book) as reader:
        for figure, first in zip(page.figures, firsts, strict=True):
            line = figure["data-line"].split()
            assert line[0] == first
            board = chess.Board()
            for ply, san in enumerate(line):
                move = board.parse_san(san)
                if ply:  # after the first move, each is a heaviest book move
                    weights = {e.move: e.weight for e in reader.find_all(board)}
                    assert weights[move] == max(weights.values())
                board.push(move)
            # As deep as the tree, or where the book has no move.
            assert len(line) == 3 or not list(reader.find_all(board))
            assert figure["data-fen"] == board.fen()
            assert chess.svg.board(board, lastmove=board.peek(), size=DIAGRAM_SIZE) in html

    # Without the statistics: the same tree and names, no games.
    plain = PageReader()
    plain.feed(render_report(book, plies=3, width=(4, 2)))
    assert [i["data-line"] for i in plain.items] == [i["data-line"] for i in page.items]
    assert all("data-games" not in i for i in plain.items)


def measure(page: Path, width: int) -> dict[str, Any]:
    """Load the page in Chromium (selenium) at a window width; return what the layout gives."""
    with chromium_driver(width, 1200) as driver:
        driver.get(page.resolve().as_uri())
        return driver.execute_script(  # type: ignore[no-any-return]
            """
            const charts = [...document.querySelectorAll('svg.chart')].map(svg => {
              const box = svg.getBoundingClientRect();
              const texts = [...svg.querySelectorAll('text')].map(t => {
                const b = t.getBoundingClientRect();  // as drawn, transforms included
                return {text: t.textContent, left: b.left - box.left, right: b.right - box.left};
              });
              return {width: box.width, right: box.right, texts: texts};
            });
            const rights = [...document.querySelectorAll('svg.chart, figure.diagram, #tree li')]
              .map(e => e.getBoundingClientRect().right);
            return {charts: charts, right: Math.max(...rights),
                    inner: document.documentElement.clientWidth};
            """
        )


@pytest.mark.slow
def test_report_layout_in_chromium(built: tuple[Path, Path], tmp_path: Path) -> None:
    book, _ = built
    out = tmp_path / "report.html"
    run_cli("book", "report", str(book), "--out", str(out))
    found = measure(out, 1800)
    assert len(found["charts"]) == 3
    for chart in found["charts"]:
        for text in chart["texts"]:
            # Every label and value text lies inside its chart: none is clipped.
            assert text["left"] >= 0 and text["right"] <= chart["width"], text
    # The page's width is used: content reaches past two thirds of a wide window.
    assert found["right"] > found["inner"] * 2 / 3


@pytest.mark.slow
def test_a_published_monthly_book_finds_its_statistics(tmp_path: Path) -> None:
    from pipelines.monthly.build import build_month
    from pipelines.monthly.publish import published_paths
    from pipelines.monthly.settings import MonthSettings

    games = need(GAMES_2021, "real Lichess games (2021-10 sample)")
    settings = MonthSettings(IngestSettings(GameFilter(min_rating=0)), book=SETTINGS)
    build_month(str(games), "2021-10", tmp_path / "wh", tmp_path / "books", settings)
    book, _ = published_paths(tmp_path / "books", "2021-10")
    board = chess.Board()
    expected = recount(tmp_path / "wh", board)
    shown = run_cli("book", "show", str(book), "--fen", board.fen()).stdout.splitlines()[1:]
    lines = [line for line in shown if not line.startswith("opening ")]
    assert len(lines) > 3
    for line in lines:
        move = board.parse_san(line.split()[0])
        assert described(*expected[move.uci()]) in line
