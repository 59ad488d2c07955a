"""The notebooks run top to bottom on the sample data, and what they print is checked against
python-chess (first moves, books) and Fathom (endgame labels)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import chess
import chess.pgn
import chess.polyglot
import pytest
import zstandard

from tests.conftest import GAMES_2013, GAMES_2021, ROOT, need, need_program
from tests.recount import ratings

# The notebooks' extra (pip install '.[notebooks]'): skipped locally when absent, required in CI.
for _module in ("nbformat", "nbclient", "ipykernel", "matplotlib", "pandas"):
    if not os.environ.get("CI"):
        pytest.importorskip(_module, reason="pip install '.[notebooks]' to run the notebooks")
import nbclient  # noqa: E402
import nbformat  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
BUNDLED_SAMPLE = ROOT / "data" / "sample"
MONTH = re.compile(r"(\d{4}-\d{2})")


def monthly_files(folder: Path) -> dict[str, Path]:
    return {
        m.group(1): path for path in sorted(folder.glob("*.pgn*")) if (m := MONTH.search(path.name))
    }


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample; until it exists, two months cut from the shared real games."""
    if monthly_files(BUNDLED_SAMPLE):
        return BUNDLED_SAMPLE
    folder = tmp_path_factory.mktemp("sample")
    (folder / "lichess_2021-10.pgn.zst").symlink_to(need(GAMES_2021, "real Lichess games"))
    games_2013 = need(GAMES_2013, "real Lichess games (2013-01)")
    with open(games_2013, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
        text = io.TextIOWrapper(stream, encoding="utf-8")
        lines, games = [], 0
        for line in text:
            if line.startswith("[Event ") and (games := games + 1) > 3000:
                break
            lines.append(line)
    (folder / "lichess_2013-01.pgn").write_text("".join(lines), encoding="utf-8")
    return folder


def execute(name: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Run a notebook in a fresh python3 kernel from the repository root; return its cells."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def images(cells: list[dict]) -> int:
    return sum("image/png" in out.get("data", {}) for cell in cells for out in cell.outputs)


def last_json(cells: list[dict]) -> dict:
    streams = [out.text for out in cells[-1].outputs if out.output_type == "stream"]
    return json.loads(streams[-1])


def test_every_notebook_is_tested() -> None:
    tested = {
        "01-move-statistics.ipynb",
        "02-book-settings.ipynb",
        "03-endgame-labels.ipynb",
        "04-chess-terms.ipynb",
    }
    assert {path.name for path in NOTEBOOKS.glob("*.ipynb")} == tested
    for path in NOTEBOOKS.glob("*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code"), (
            f"{path.name} is committed with outputs; clear them"
        )


# --- 1: first moves by month, rating band and speed ---------------------------------------------


class FirstMove(chess.pgn.BaseVisitor[tuple[dict[str, str], chess.Move | None]]):
    """Reads a game's headers and its first move, skipping the rest of the movetext."""

    def begin_game(self) -> None:
        self.headers: dict[str, str] = {}
        self.first: chess.Move | None = None

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.headers[tagname] = tagvalue

    def begin_parse_san(self, board: chess.Board, san: str) -> chess.pgn.SkipType | None:
        return chess.pgn.SKIP if self.first is not None else None

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        self.first = move

    def result(self) -> tuple[dict[str, str], chess.Move | None]:
        return self.headers, self.first


def kept_by_rules(headers: dict[str, str]) -> bool:
    """Any rating (a missing one counts as 0, as docs/ingest.md says of --min-rating 0), any
    speed, no bots, standard chess, a decided or drawn result."""
    if ratings(headers, 0) is None:
        return False
    control = headers.get("TimeControl", "")
    if control != "-" and not re.fullmatch(r"\d+\+\d+", control):
        return False
    if "BOT" in (headers.get("WhiteTitle"), headers.get("BlackTitle")):
        return False
    if headers.get("Variant", "Standard") != "Standard" or "FEN" in headers:
        return False
    return headers.get("Result") in ("1-0", "0-1", "1/2-1/2")


def first_move_counts(path: Path) -> Counter[str]:
    """First moves of the games the notebook's filter keeps, recounted with python-chess."""
    counts: Counter[str] = Counter()
    with open(path, "rb") as raw:
        binary = zstandard.ZstdDecompressor().stream_reader(raw) if path.suffix == ".zst" else raw
        text = io.TextIOWrapper(binary, encoding="utf-8", errors="replace")
        while (game := chess.pgn.read_game(text, Visitor=FirstMove)) is not None:
            headers, first = game
            if first is not None and kept_by_rules(headers):
                counts[first.uci()] += 1
    return counts


@pytest.mark.slow
def test_move_statistics(sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"CHESSPIPE_SAMPLE": str(sample), "CHESSPIPE_NOTEBOOK_OUT": str(tmp_path)}
    cells = execute("01-move-statistics.ipynb", env, monkeypatch)
    assert images(cells) == 3
    shown = last_json(cells)["first_moves"]
    expected = {
        month: dict(first_move_counts(path)) for month, path in monthly_files(sample).items()
    }
    assert shown == expected


# --- 2: books with different settings -----------------------------------------------------------


@pytest.mark.slow
def test_book_settings(sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"CHESSPIPE_SAMPLE": str(sample), "CHESSPIPE_NOTEBOOK_OUT": str(tmp_path)}
    cells = execute("02-book-settings.ipynb", env, monkeypatch)
    assert images(cells) == 3
    books = last_json(cells)
    assert len(books) >= 6
    sizes = {}
    for name, facts in books.items():
        path = Path(facts["path"])
        assert path.parent == tmp_path, name
        with chess.polyglot.open_reader(path) as reader:
            entries = list(reader)
            assert len(entries) == facts["entries"], name
            assert len({e.key for e in entries}) == facts["positions"], name
        sizes[name] = facts["entries"]
    assert sizes["min 2 games"] > sizes["min 3 games"] > sizes["min 10 games"] > 0


# --- 3: endgame labels --------------------------------------------------------------------------

FATHOM_WDL = {"Win": 2, "CursedWin": 1, "Draw": 0, "BlessedLoss": -1, "Loss": -2}


def fathom_probe(fathom: str, tables: Path, fen: str) -> tuple[int, int]:
    """WDL and DTZ of a position as the Fathom command-line prober reports them."""
    proc = subprocess.run(
        [fathom, f"--path={tables}", fen], capture_output=True, text=True, check=True, timeout=60
    )
    tags = dict(re.findall(r'^\[(\w+) "([^"]*)"\]$', proc.stdout, flags=re.MULTILINE))
    return FATHOM_WDL[tags["WDL"]], int(tags["DTZ"])


@pytest.mark.slow
def test_endgame_labels(syzygy_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fathom = need_program("fathom")
    env = {"CHESSPIPE_SYZYGY": str(syzygy_dir), "CHESSPIPE_NOTEBOOK_OUT": str(tmp_path)}
    cells = execute("03-endgame-labels.ipynb", env, monkeypatch)
    assert images(cells) == 2
    summary = last_json(cells)
    with open(summary["labels"], newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == summary["positions"] > 0

    by_material: dict[str, Counter[int]] = defaultdict(Counter)
    for row in rows:
        board = chess.Board(row["fen"])
        assert board.is_valid() and not board.castling_rights
        white = "".join(
            p.symbol() for p in sorted(board.piece_map().values(), key=_order) if p.color
        )
        black = "".join(
            p.symbol().upper()
            for p in sorted(board.piece_map().values(), key=_order)
            if not p.color
        )
        assert f"{white}v{black}" == row["material"]
        wdl = int(row["wdl"])
        assert int(row["wdl_white"]) == (wdl if board.turn == chess.WHITE else -wdl)
        by_material[row["material"]][int(row["wdl_white"])] += 1
    assert {m: {int(k): v for k, v in c.items() if v} for m, c in summary["wdl"].items()} == {
        m: dict(c) for m, c in by_material.items()
    }

    for row in rows[::6]:
        wdl, dtz = fathom_probe(fathom, syzygy_dir, row["fen"])
        assert (wdl, abs(dtz)) == (int(row["wdl"]), abs(int(row["dtz"]))), row["fen"]


def _order(piece: chess.Piece) -> int:
    """K first, then Q R B N P, as Syzygy names materials."""
    return "KQRBNP".index(piece.symbol().upper())


# --- 4: questions in chess terms ----------------------------------------------------------------


class FirstPlies(chess.pgn.BaseVisitor[tuple[dict[str, str], list[chess.Move]]]):
    """Reads a game's headers and its first 20 moves (ingest's default plies)."""

    def begin_game(self) -> None:
        self.headers: dict[str, str] = {}
        self.moves: list[chess.Move] = []

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.headers[tagname] = tagvalue

    def begin_parse_san(self, board: chess.Board, san: str) -> chess.pgn.SkipType | None:
        return chess.pgn.SKIP if len(self.moves) >= 20 else None

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        self.moves.append(move)

    def result(self) -> tuple[dict[str, str], list[chess.Move]]:
        return self.headers, self.moves


def opening_lines() -> dict[int, list[tuple[str, str]]]:
    """{key: [(name, pgn)]} of the bundled opening names, replayed with python-chess."""
    lines: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for path in sorted((ROOT / "data" / "openings").glob("*.tsv")):
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                game = chess.pgn.read_game(io.StringIO(row["pgn"]))
                assert game is not None
                key = chess.polyglot.zobrist_hash(game.end().board())
                lines[key].append((row["name"], row["pgn"]))
    return lines


@pytest.mark.slow
def test_chess_terms(sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "CHESSPIPE_SAMPLE": str(sample),
        "CHESSPIPE_NOTEBOOK_OUT": str(tmp_path),
        "CHESSPIPE_CACHE": str(tmp_path / "cache"),
    }
    cells = execute("04-chess-terms.ipynb", env, monkeypatch)
    shown = last_json(cells)

    # python-chess recount of the same games: every position of their first 20 plies
    lines = opening_lines()
    (ruy,) = [k for k, named in lines.items() if shown["opening"] in {n for n, _ in named}]
    sicilian_board = chess.Board()
    for san in ("e4", "c5"):
        sicilian_board.push_san(san)
    sicilian = chess.polyglot.zobrist_hash(sicilian_board)
    start = chess.polyglot.zobrist_hash(chess.Board())
    replies: defaultdict[tuple[int, str, str], float] = defaultdict(float)
    share: Counter[tuple[str, str]] = Counter()
    moves_from: defaultdict[tuple[str, str, str, str], float] = defaultdict(float)
    for month, path in monthly_files(sample).items():
        with open(path, "rb") as raw:
            binary = (
                zstandard.ZstdDecompressor().stream_reader(raw) if path.suffix == ".zst" else raw
            )
            text = io.TextIOWrapper(binary, encoding="utf-8", errors="replace")
            while (game := chess.pgn.read_game(text, Visitor=FirstPlies)) is not None:
                headers, moves = game
                if not moves or not kept_by_rules(headers):
                    continue
                band = min(ratings(headers, 0) or (0, 0)) // 400 * 400
                white = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[headers["Result"]]
                board = chess.Board()
                for move in moves:
                    key = chess.polyglot.zobrist_hash(board)
                    points = white if board.turn == chess.WHITE else 1 - white
                    san = board.san(move)
                    if key == ruy:
                        replies[(band, san, "games")] += 1
                        replies[(band, san, "points")] += points
                    share[(month, "sicilian")] += key == sicilian
                    share[(month, "all_games")] += key == start
                    for name, pgn in lines.get(key, ()):
                        moves_from[(name, pgn, san, "games")] += 1
                        moves_from[(name, pgn, san, "points")] += points
                    board.push(move)

    def close(score: float, games: int, points: float) -> bool:
        return abs(score - points / games) <= 0.0005 + 1e-9

    # 1: the three most played replies per band
    bands = sorted({band for band, _, _ in replies})
    assert len(bands) > 2
    assert sorted({row["band"] for row in shown["replies"]}) == bands
    for band in bands:
        played = sorted(
            ((-n, san) for (b, san, what), n in replies.items() if b == band and what == "games")
        )[:3]
        rows = [r for r in shown["replies"] if r["band"] == band]
        assert [(r["reply"], r["games"]) for r in rows] == [(san, -n) for n, san in played]
        for r in rows:
            assert close(r["score"], r["games"], replies[(band, r["reply"], "points")])

    # 2: the Sicilian's share by month
    months = sorted(monthly_files(sample))
    assert [(r["month"], r["sicilian"], r["all_games"]) for r in shown["share"]] == [
        (month, share[(month, "sicilian")], share[(month, "all_games")]) for month in months
    ]
    for r in shown["share"]:
        assert abs(r["percent"] - 100 * r["sicilian"] / r["all_games"]) <= 0.05 + 1e-9

    # 3: every move from a named position with at least MIN_GAMES games, best score first
    expected = {
        (name, pgn, san): int(n)
        for (name, pgn, san, what), n in moves_from.items()
        if what == "games" and n >= shown["min_games"]
    }
    best = shown["best"]
    assert {(r["name"], r["pgn"], r["move"]): r["games"] for r in best} == expected
    assert len(best) == len(expected) > 10
    for r in best:
        assert close(r["score"], r["games"], moves_from[(r["name"], r["pgn"], r["move"], "points")])
    assert [r["score"] for r in best] == sorted((r["score"] for r in best), reverse=True)
