"""`chesspipe book report` and the Markdown summary, checked against python-chess's book reader
and rendered by headless Chromium."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import zlib
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path

import chess
import chess.polyglot
import numpy as np
import pytest

from pipelines.books.analysis import coverage
from pipelines.books.build import build_book
from pipelines.books.charts import column_chart_svg
from pipelines.books.report import render_report
from pipelines.books.settings import BookSettings
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from schemas.polyglot import ENTRY_DTYPE, Book, encode_move, polyglot_key, write_entries
from schemas.speed import Speed
from tests.conftest import GAMES_2021, need, need_program, run_cli

BAR_RGB = (0x3B, 0x6E, 0xA8)
ACCENT_RGB = (0xD0, 0x8C, 0x2C)


# --- independent readings -------------------------------------------------------------------


def reader_moves(reader: chess.polyglot.MemoryMappedReader, board: chess.Board) -> list[tuple]:
    """python-chess's view of a position: (uci, weight) of legal entries, weight > 0."""
    return [(e.move.uci(), e.weight) for e in reader.find_all(board)]


def reader_coverage(path: Path, max_plies: int) -> list[int]:
    """Positions with book moves first reached at each ply, following python-chess's entries."""
    counts = []
    with chess.polyglot.open_reader(path) as reader:
        frontier, seen = [chess.Board()], {chess.polyglot.zobrist_hash(chess.Board())}
        for _ in range(max_plies + 1):
            nxt, here = [], 0
            for board in frontier:
                entries = list(reader.find_all(board))
                if not entries:
                    continue
                here += 1
                for entry in entries:
                    child = board.copy()
                    child.push(entry.move)
                    key = chess.polyglot.zobrist_hash(child)
                    if key not in seen:
                        seen.add(key)
                        nxt.append(child)
            if not here:
                break
            counts.append(here)
            frontier = nxt
    return counts


class PageReader(HTMLParser):
    """Collects the tree items, facts, coverage rows and SVG elements of a report page."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[dict[str, str]] = []
        self.facts: dict[str, str] = {}
        self.svgs = 0
        self.bars: list[dict[str, str]] = []
        self.coverage_rows: list[list[str]] = []
        self.text: list[str] = []
        self._fact: str | None = None
        self._in_coverage = False
        self._cells: list[str] | None = None
        self._cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "li" and "data-line" in a:
            self.items.append(a)
        elif tag == "svg" and "chart" in a.get("class", "").split():
            self.svgs += 1
        elif tag == "rect" and "bar" in a.get("class", ""):
            self.bars.append(a)
        elif tag == "td" and a.get("id", "").startswith(("book-", "manifest-")):
            self._fact = a["id"]
        elif tag == "table" and a.get("id") == "coverage":
            self._in_coverage = True
        elif tag == "tr" and self._in_coverage:
            self._cells = []
        elif tag == "td" and self._cells is not None:
            self._cell = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_coverage = False
        elif tag == "tr" and self._cells:
            self.coverage_rows.append(self._cells)
            self._cells = None
        elif tag == "td":
            self._fact, self._cell = None, False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._fact:
            self.facts[self._fact] = self.facts.get(self._fact, "") + data
        if self._cell and self._cells is not None:
            self._cells.append(data)


def read_page(text: str) -> PageReader:
    page = PageReader()
    page.feed(text)
    return page


def decode_png(data: bytes) -> np.ndarray:
    """Return an 8-bit, non-interlaced RGB or RGBA PNG's pixels as (height, width, channels)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, -1)
    out = np.zeros((height, width * bpp), dtype=np.int32)
    prior = np.zeros(width * bpp, dtype=np.int32)
    for y in range(height):
        kind, line = int(raw[y, 0]), raw[y, 1:].astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 1:
            row = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) % 256
        elif kind == 2:
            row = (line + prior) % 256
        else:
            row = np.array(_unfilter_row(kind, line.tolist(), prior.tolist(), bpp))
        out[y] = row
        prior = row
    return out.reshape(height, width, bpp).astype(np.uint8)


def _unfilter_row(kind: int, line: list[int], prior: list[int], bpp: int) -> list[int]:
    """Undo PNG filter 3 (average) or 4 (Paeth) on one row."""
    row = [0] * len(line)
    for i, value in enumerate(line):
        left = row[i - bpp] if i >= bpp else 0
        up = prior[i]
        if kind == 3:
            pred = (left + up) >> 1
        else:
            upleft = prior[i - bpp] if i >= bpp else 0
            p = left + up - upleft
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - upleft)
            pred = left if pa <= pb and pa <= pc else up if pb <= pc else upleft
        row[i] = (value + pred) & 255
    return row


def longest_run(pixels: np.ndarray, rgb: tuple[int, int, int]) -> int:
    """Return the longest horizontal run of one exact colour in an image."""
    hit = np.all(pixels[:, :, :3] == np.array(rgb, dtype=np.uint8), axis=2)
    best = 0
    for row in hit:
        if not row.any():
            continue
        edges = np.diff(np.concatenate(([0], row.astype(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        best = max(best, int((ends - starts).max()))
    return best


def chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    program = need_program("chromium")
    args = [
        program, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp / 'chromium-profile'}", *extra, page.resolve().as_uri(),
    ]  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, timeout=180, cwd=tmp, check=True)


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def own_book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict]:
    """A book the project builds from the real 2021-10 games: (path, ingest, book manifests)."""
    games = need(GAMES_2021, "real Lichess games (2021-10 sample)")
    root = tmp_path_factory.mktemp("own-book")
    rules = GameFilter(min_rating=0, speeds=frozenset(Speed))
    ingested = ingest(str(games), "2021-10", root / "warehouse", IngestSettings(rules))
    built = build_book(root / "warehouse", "2021-10", root / "own.bin", BookSettings(min_games=3))
    return root / "own.bin", ingested, built


@pytest.fixture(params=["performance", "own"])
def any_book(request: pytest.FixtureRequest, own_book: tuple[Path, dict, dict]) -> Path:
    if request.param == "performance":
        return request.getfixturevalue("polyglot_book")
    return own_book[0]


# --- the page's content against python-chess -----------------------------------------------------


def check_page_against_reader(page: PageReader, book: Path, plies: int, width: tuple) -> None:
    with chess.polyglot.open_reader(book) as reader:
        assert page.facts["book-entries"] == f"{len(reader):,}"
        keys = {entry.key for entry in reader}
        assert page.facts["book-positions"] == f"{len(keys):,}"
        assert page.facts["book-size"] == f"{book.stat().st_size:,} bytes"

        # Every tree item: a legal SAN move of its position with python-chess's weight and share;
        # each position shows its heaviest moves, as many as the width allows.
        children: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
        for item in page.items:
            line = tuple(item["data-line"].split())
            children[line[:-1]].append(item)
        assert children[()], "the tree shows no first move"
        for parent, items in children.items():
            board = chess.Board()
            for san in parent:
                board.push_san(san)
            expected = reader_moves(reader, board)
            total = sum(w for _, w in expected)
            shown = min(len(expected), width[min(len(parent), len(width) - 1)])
            assert len(items) == shown, parent
            weights = sorted((w for _, w in expected), reverse=True)[:shown]
            assert [int(i["data-weight"]) for i in items] == weights, parent
            for item in items:
                line = item["data-line"].split()
                move = board.parse_san(line[-1])
                assert (move.uci(), int(item["data-weight"])) in expected
                assert item["data-uci"] == move.uci()
                assert float(item["data-share"]) == pytest.approx(
                    int(item["data-weight"]) / total, abs=1e-6
                )
                if len(line) < plies:
                    board.push(move)
                    if reader_moves(reader, board):
                        assert children[tuple(line)], f"{line} has book replies but none shown"
                    board.pop()
        # First-move chart: one bar per start move (up to 12), python-chess's percentages.
        start = sorted(reader_moves(reader, chess.Board()), key=lambda m: -m[1])
        total = sum(w for _, w in start)
        board = chess.Board()
        shown = page.bars[: min(12, len(start))]
        assert sorted(float(b["data-value"]) for b in shown) == pytest.approx(
            sorted(100 * w / total for _, w in start[:12]), abs=1e-3
        )
        for bar in page.bars[: len(start[:12])]:
            move = board.parse_san(bar["data-label"])
            weight = dict(start)[move.uci()]
            assert float(bar["data-value"]) == pytest.approx(100 * weight / total, abs=1e-3)

    # Coverage by ply equals a walk over python-chess's entries.
    by_ply = [int(row[1].replace(",", "")) for row in page.coverage_rows]
    assert by_ply == reader_coverage(book, 60)[: len(by_ply)]
    assert page.facts["book-reached-positions"].startswith(f"{sum(by_ply):,} of ")


@pytest.mark.slow
def test_report_content_matches_python_chess(any_book: Path) -> None:
    page = read_page(render_report(any_book, plies=4, width=(5, 3)))
    check_page_against_reader(page, any_book, 4, (5, 3))
    assert page.svgs == 3


def test_report_other_depth_and_width(polyglot_book: Path) -> None:
    page = read_page(render_report(polyglot_book, plies=6, width=(2, 2, 1)))
    check_page_against_reader(page, polyglot_book, 6, (2, 2, 1))
    assert max(len(i["data-line"].split()) for i in page.items) == 6


def test_coverage_limits(polyglot_book: Path) -> None:
    book = Book.open(polyglot_book)
    full = coverage(book)
    assert full.positions_by_ply == reader_coverage(polyglot_book, 60)
    assert not full.truncated
    shallow = coverage(book, max_plies=5)
    assert shallow.positions_by_ply == full.positions_by_ply[:6] and shallow.truncated
    few = coverage(book, max_positions=100)
    assert few.truncated and few.positions_reached <= 100


def test_report_of_a_book_without_the_start_position(tmp_path: Path) -> None:
    board = chess.Board()
    board.push_san("e4")
    entries = np.zeros(2, dtype=ENTRY_DTYPE)
    entries["key"] = polyglot_key(board)
    entries["move"] = [encode_move(board, board.parse_san(s)) for s in ("c5", "e5")]
    entries["weight"] = [30, 10]
    write_entries(tmp_path / "after-e4.bin", entries)
    page = read_page(render_report(tmp_path / "after-e4.bin"))
    assert page.items == []
    assert "No book moves at the start position." in "".join(page.text)
    assert page.facts["book-entries"] == "2" and page.facts["book-reached-positions"] == "0 of 1"


def test_charts_are_self_contained_svg(any_book: Path) -> None:
    text = render_report(any_book)
    namespaces = (
        'xmlns="http://www.w3.org/2000/svg"',
        'xmlns:xlink="http://www.w3.org/1999/xlink"',
    )
    for namespace in namespaces:
        text = text.replace(namespace, "")
    assert "http://" not in text
    assert "https://" not in text and "<script" not in text and "<link" not in text
    svg = column_chart_svg([0, 5, 50, 500], "t", "x", "y", log=True)
    heights = [float(part.split('"')[0]) for part in svg.split('height="')[2:]]
    assert heights[0] == 0 and heights == sorted(heights)


# --- the command line ---------------------------------------------------------------------------


def test_cli_writes_the_page(polyglot_book: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    proc = run_cli("book", "report", str(polyglot_book), "--out", str(out), "--plies", "3")
    assert proc.stdout.strip() == str(out)
    page = read_page(out.read_text())
    assert max(len(i["data-line"].split()) for i in page.items) == 3
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_cli_errors(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    missing = run_cli("book", "report", str(tmp_path / "nope.bin"), "--out", str(out), check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"chesspipe: error: {tmp_path / 'nope.bin'}: no such file"
    (tmp_path / "bad.bin").write_bytes(b"\x00" * 17)
    bad = run_cli("book", "report", str(tmp_path / "bad.bin"), "--out", str(out), check=False)
    assert bad.returncode == 1 and "not a Polyglot book" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    (tmp_path / "ok.bin").write_bytes(b"")
    nodir = run_cli(
        "book", "report", str(tmp_path / "ok.bin"), "--out", str(tmp_path / "no" / "r.html"),
        check=False,
    )  # fmt: skip
    assert nodir.returncode == 1 and "no such directory" in nodir.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.bin", "ok.bin"]


# --- rendered by a browser ----------------------------------------------------------------------


@pytest.mark.slow
def test_chromium_renders_the_report(any_book: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    run_cli("book", "report", str(any_book), "--out", str(out))
    dom = chromium(out, tmp_path, "--dump-dom").stdout
    page = read_page(dom)
    assert page.svgs == 3 and page.items
    check_page_against_reader(page, any_book, 4, (5, 3))
    text = "".join(page.text)
    with chess.polyglot.open_reader(any_book) as reader:
        top = max(reader.find_all(chess.Board()), key=lambda e: e.weight)
    assert chess.Board().san(top.move) in text

    chromium(out, tmp_path, "--screenshot=shot.png", "--window-size=1200,2000")
    shot = (tmp_path / "shot.png").read_bytes()
    pixels = decode_png(shot)
    assert pixels.shape[:2] == (2000, 1200)
    rgb = pixels[:, :, :3].reshape(-1, 3)
    colours = np.unique(rgb, axis=0)
    assert len(colours) > 50, "the screenshot is nearly one colour"
    white = np.all(rgb == 255, axis=1).mean()
    assert 0.5 < white < 0.99
    # The first-move chart's longest bar is drawn 360 px wide (the tree's meters at most 120).
    assert longest_run(pixels, BAR_RGB) in range(356, 365)
    # The depth profile's columns are drawn in the accent colour.
    assert np.all(rgb == np.array(ACCENT_RGB, dtype=np.uint8), axis=1).sum() > 2000


def test_report_skips_illegal_and_zero_weight_entries(tmp_path: Path) -> None:
    board = chess.Board()
    raw = [
        (encode_move(board, chess.Move.from_uci("e2e4")), 10),
        (encode_move(board, chess.Move.from_uci("d2d4")), 0),
        (chess.Move.from_uci("e2e5").to_square | (chess.E2 << 6), 50),  # not a legal move
        (encode_move(board, chess.Move.from_uci("g1f3")), 5),
    ]
    entries = np.zeros(len(raw), dtype=ENTRY_DTYPE)
    entries["key"] = polyglot_key(board)
    entries["move"] = [move for move, _ in raw]
    entries["weight"] = [weight for _, weight in raw]
    write_entries(tmp_path / "odd.bin", entries)
    page = read_page(render_report(tmp_path / "odd.bin"))
    check_page_against_reader(page, tmp_path / "odd.bin", 4, (5, 3))
    assert [(i["data-line"], i["data-share"]) for i in page.items] == [
        ("e4", "0.666667"),
        ("Nf3", "0.333333"),
    ]
    assert page.facts["book-zero-weight"] == "1" and page.facts["book-entries"] == "4"
    assert page.facts["book-reached-entries"].startswith("4 of 4")


def test_report_of_an_empty_book(tmp_path: Path) -> None:
    (tmp_path / "empty.bin").write_bytes(b"")
    page = read_page(render_report(tmp_path / "empty.bin"))
    assert page.items == [] and page.facts["book-entries"] == "0"
    assert page.facts["book-positions"] == "0" and page.coverage_rows == []


def test_main_line_follows_the_heaviest_moves(any_book: Path) -> None:
    text = render_report(any_book, plies=6, width=(1,))
    line = re.search(r'<b id="main-line">([^<]*)</b>', text).group(1)  # type: ignore[union-attr]
    sans = [token for token in line.split() if not token[0].isdigit()]
    assert len(sans) == 6
    board = chess.Board()
    with chess.polyglot.open_reader(any_book) as reader:
        for san in sans:
            move = board.parse_san(san)
            weights = {e.move: e.weight for e in reader.find_all(board)}
            assert weights[move] == max(weights.values()), (line, san)
            board.push(move)


def test_manifest_shown_only_for_its_own_book(own_book: tuple[Path, dict, dict], tmp_path: Path):
    path, _, built = own_book
    page = read_page(render_report(path))
    assert page.facts["manifest-months"] == "2021-10"
    assert page.facts["manifest-games"] == f"{built.entry_games:,}"
    assert "min_games 3" in page.facts["manifest-settings"]
    other = tmp_path / "other.bin"
    other.write_bytes(path.read_bytes()[:-16])
    (tmp_path / "other.json").write_text(json.dumps(built.to_json()))
    assert not any(k.startswith("manifest-") for k in read_page(render_report(other)).facts)
