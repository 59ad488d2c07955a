"""SQL in chess terms: the chess functions and the openings view agree with python-chess.

The truth is python-chess itself (`chess.polyglot.zobrist_hash`, `Board.san`, `Board.fen`),
replaying the real Lichess samples, the opening names' lines and Chess960 positions.
"""

from __future__ import annotations

import csv
import io
import json
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import chess.polyglot
import duckdb
import pytest

from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse import openings as openings_module
from pipelines.warehouse.read_only import ReadOnlyConnection
from pipelines.warehouse.sql import connect, run_query
from schemas.polyglot import START_KEY, decode_move, encode_move
from schemas.speed import Speed
from tests.conftest import ROOT, run_cli
from tests.random_moves import random_move
from tests.recount import keeps, read_text, speed
from tests.sample_tool import make_sample

START_FEN = chess.STARTING_FEN
#: The games whose first plies are checked: what `ingest --min-rating 1800` keeps.
MIN_RATING = 1800
SPEEDS = {"blitz", "rapid", "classical", "correspondence"}
PLIES = 20


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One openings cache for this module's tests, away from the user's."""
    folder = Path(tmp_path_factory.getbasetemp()) / "chesspipe-cache"
    monkeypatch.setenv("CHESSPIPE_CACHE", str(folder))
    return folder


class FirstPlies(chess.pgn.BaseVisitor[tuple[chess.pgn.Headers, list[chess.Move]]]):
    """A game's headers and its first PLIES moves; the rest of the movetext is skipped."""

    def begin_game(self) -> None:
        self.headers = chess.pgn.Headers()
        self.moves: list[chess.Move] = []

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.headers[tagname] = tagvalue

    def begin_parse_san(self, board: chess.Board, san: str) -> chess.pgn.SkipType | None:
        return chess.pgn.SKIP if len(self.moves) >= PLIES else None

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        self.moves.append(move)

    def result(self) -> tuple[chess.pgn.Headers, list[chess.Move]]:
        return self.headers, self.moves


def kept_games(path: Path) -> Iterator[tuple[chess.pgn.Headers, list[chess.Move]]]:
    """The kept games' headers and first plies (headers read first; only kept games replayed)."""
    stream = io.StringIO(read_text(path))
    while True:
        offset = stream.tell()
        headers = chess.pgn.read_headers(stream)
        if headers is None:
            return
        if not keeps(headers, MIN_RATING, SPEEDS, allow_bots=False):
            continue
        after = stream.tell()
        stream.seek(offset)
        game = chess.pgn.read_game(stream, Visitor=FirstPlies)
        stream.seek(after)
        assert game is not None
        if game[1]:
            yield game


@pytest.fixture(scope="module")
def real_games(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[Path, list[tuple[chess.pgn.Headers, list[chess.Move]]]]]:
    from tests.conftest import GAMES_2013, GAMES_2021, need

    found = {}
    for month, path, what in (
        ("2013-01", GAMES_2013, "real Lichess games (2013-01 part 1)"),
        ("2021-10", GAMES_2021, "real Lichess games (2021-10 sample)"),
    ):
        need(path, what)
        found[month] = (path, list(kept_games(path)))
    return found


def query(con: ReadOnlyConnection, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return con.execute(sql, list(params)).fetchall()


@pytest.fixture
def con(tmp_path: Path) -> Iterator[ReadOnlyConnection]:
    # The tests load tables of their own from tmp_path: the connection may read there too.
    connection = connect(tmp_path / "empty-warehouse", chess_terms=True, allow_read=[tmp_path])
    yield connection
    connection.close()


def imported(*argv: str) -> set[str]:
    """Run the command line in a fresh interpreter; return the heavy libraries it imported."""
    code = (
        "import json, sys\n"
        "from pipelines.cli import main\n"
        "main(sys.argv[1:])\n"
        "heavy = {'duckdb', 'numpy', 'chess', 'pyarrow', 'pandas', 'prefect'}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


# --- the functions --------------------------------------------------------------------------


def test_start_position(con: ReadOnlyConnection) -> None:
    row = query(
        con,
        "SELECT key_after(''), key_of_fen(?), hexkey(key_of_fen(?)), fen_after(''), "
        "key_after('1. e4 c5 2. Nf3') = key_after('e2e4 c7c5 g1f3'), san(796, ?)",
        START_FEN,
        START_FEN,
        START_FEN,
    )[0]
    assert row == (START_KEY, START_KEY, "463b96181691fc9c", START_FEN, True, "e4")
    assert chess.polyglot.zobrist_hash(chess.Board()) == START_KEY
    typed = query(con, "SELECT typeof(key_after('e4')), typeof(key_of_fen(?))", START_FEN)
    assert typed == [("UBIGINT", "UBIGINT")]


def test_move_sequences_in_any_notation(con: ReadOnlyConnection) -> None:
    najdorf = chess.Board()
    for san in ["e4", "c5", "Nf3", "d6", "d4", "cxd4", "Nxd4", "Nf6", "Nc3", "a6"]:
        najdorf.push_san(san)
    key = chess.polyglot.zobrist_hash(najdorf)
    lines = [
        "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6",
        "1. e4 c5 2. Nf3 d6 3. d4 cxd4 4. Nxd4 Nf6 5. Nc3 a6",
        "1.e4 c5 2.Nf3 d6 3.d4 cxd4 4.Nxd4 Nf6 5.Nc3 a6 *",
        "1. e4 c5 2. Nf3 2... d6 3. d4 cxd4 4. Nxd4 Nf6 5. Nc3 a6!?",
        "e2e4 c7c5 g1f3 d7d6 d2d4 c5d4 f3d4 g8f6 b1c3 a7a6",
        "e2e4 c5 g1f3 d6  d4\tcxd4 Nxd4 g8f6 Nc3 a6",
    ]
    for line in lines:
        assert query(con, "SELECT key_after(?), fen_after(?)", line, line) == [
            (key, najdorf.fen())
        ], line
    # castling in every notation
    castled = chess.Board()
    for san in ["e4", "e5", "Nf3", "Nc6", "Bc4", "Bc5", "O-O"]:
        castled.push_san(san)
    for castle in ("O-O", "0-0", "e1g1", "e1h1"):
        line = f"e4 e5 Nf3 Nc6 Bc4 Bc5 {castle}"
        assert query(con, "SELECT key_after(?)", line) == [
            (chess.polyglot.zobrist_hash(castled),)
        ], line


def load(
    con: ReadOnlyConnection, folder: Path, name: str, columns: dict[str, str], rows: Any
) -> None:
    """Make a table of rows (through a TSV file: no pandas needed)."""
    path = folder / f"{name}.tsv"
    with open(path, "w", newline="") as handle:
        csv.writer(handle, delimiter="\t", lineterminator="\n").writerows(rows)
    # The connection only reads (no CREATE TABLE): the rows are registered as an Arrow table.
    rows_read = con.sql(
        f"SELECT * FROM read_csv('{path}', delim = '\\t', "
        f"header = false, quote = '', auto_detect = false, columns = {columns!r})"
    ).to_arrow_table()
    con.register(name, rows_read)


@pytest.mark.slow
def test_every_position_of_the_real_games(
    real_games: dict[str, tuple[Path, list[tuple[chess.pgn.Headers, list[chess.Move]]]]],
    con: ReadOnlyConnection,
    tmp_path: Path,
) -> None:
    """Every position before each of the first plies of every kept game of the real samples:
    its key from its FEN and from the moves that reach it (SAN with move numbers, and UCI),
    its FEN from those moves, and the move played as SAN from its Polyglot encoding."""
    positions: dict[tuple[str, int], tuple[int, str]] = {}
    lines: dict[str, tuple[str, int, str]] = {}
    games = 0
    for _path, kept in real_games.values():
        for _headers, moves in kept:
            games += 1
            board = chess.Board()
            for move in moves:
                key = chess.polyglot.zobrist_hash(board)
                positions[(board.fen(), encode_move(board, move))] = (key, board.san(move))
                numbered = chess.Board().variation_san(board.move_stack)
                uci = " ".join(m.uci() for m in board.move_stack)
                lines[numbered] = (uci, key, board.fen())
                board.push(move)
    assert games > 1000 and len(positions) > 15000

    load(
        con,
        tmp_path,
        "positions",
        {"fen": "VARCHAR", "move": "INTEGER", "key": "UBIGINT", "san": "VARCHAR"},
        ((fen, move, key, san) for (fen, move), (key, san) in positions.items()),
    )
    wrong = query(
        con,
        "SELECT fen, move, key, key_of_fen(fen), san, san(move, fen) FROM positions "
        "WHERE key_of_fen(fen) <> key OR san(move, fen) <> san",
    )
    assert wrong == []
    assert query(con, "SELECT count(*) FROM positions") == [(len(positions),)]

    load(
        con,
        tmp_path,
        "lines",
        {"numbered": "VARCHAR", "uci": "VARCHAR", "key": "UBIGINT", "fen": "VARCHAR"},
        ((numbered, uci, key, fen) for numbered, (uci, key, fen) in lines.items()),
    )
    wrong = query(
        con,
        "SELECT numbered, key, key_after(numbered), fen, fen_after(uci) FROM lines "
        "WHERE key_after(numbered) <> key OR fen_after(uci) <> fen",
    )
    assert wrong == []
    assert query(con, "SELECT count(*) FROM lines") == [(len(lines),)]


def chess960_positions() -> Iterator[chess.Board]:
    """Chess960 start positions and positions a few random moves later, castling made likely."""
    rng = random.Random(960)
    for number in (0, 1, 100, 359, 518, 959, *rng.sample(range(960), 6)):
        board = chess.Board.from_chess960_pos(number)
        yield board.copy()
        for _ in range(30):
            move = random_move(board, rng, special_share=0.9)
            if move is None:
                break
            board.push(move)
            yield board.copy()


@pytest.mark.slow
def test_chess960_castling_rights(con: ReadOnlyConnection, tmp_path: Path) -> None:
    """Keys, and every legal move as SAN (castling as king takes rook), of Chess960 positions
    written in X-FEN and in Shredder-FEN."""
    rows = set()
    castles = 0
    for board in chess960_positions():
        key = chess.polyglot.zobrist_hash(board)
        for fen in {board.fen(), board.fen(shredder=True)}:
            for move in board.legal_moves:
                rows.add((fen, encode_move(board, move), key, board.san(move)))
                castles += board.is_castling(move)
    assert len(rows) > 5000 and castles > 10
    columns = {"fen": "VARCHAR", "move": "INTEGER", "key": "UBIGINT", "san": "VARCHAR"}
    load(con, tmp_path, "chess960", columns, rows)
    wrong = query(
        con,
        "SELECT fen, move, key, key_of_fen(fen), san, san(move, fen) FROM chess960 "
        "WHERE key_of_fen(fen) <> key OR san(move, fen) <> san",
    )
    assert wrong == []
    assert query(con, "SELECT count(*) FROM chess960 WHERE san LIKE 'O-O%'")[0][0] > 10
    # The standard start position in Shredder-FEN is the standard start position.
    shredder = START_FEN.replace("KQkq", "HAha")
    assert query(con, "SELECT key_of_fen(?)", shredder) == [(START_KEY,)]


def test_nulls_give_nulls(con: ReadOnlyConnection) -> None:
    assert query(
        con, "SELECT key_of_fen(NULL), key_after(NULL), fen_after(NULL), san(NULL, NULL)"
    ) == [(None, None, None, None)]


# --- the openings view ----------------------------------------------------------------------


@pytest.mark.slow
def test_every_opening_key_is_python_chess_key_of_its_line(con: ReadOnlyConnection) -> None:
    files = sorted((ROOT / "data" / "openings").glob("*.tsv"))
    assert [p.name for p in files] == ["a.tsv", "b.tsv", "c.tsv", "d.tsv", "e.tsv"]
    source = []
    for path in files:
        with open(path, newline="") as handle:
            source += [
                (r["eco"], r["name"], r["pgn"])
                for r in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            ]
    assert len(source) == 3807
    rows = query(con, "SELECT eco, name, pgn, key, plies, fen FROM openings")
    assert sorted(r[:3] for r in rows) == sorted(source)
    assert [d[0] for d in con.description or []] == ["eco", "name", "pgn", "key", "plies", "fen"]
    for eco, name, pgn, key, plies, fen in rows:
        game = chess.pgn.read_game(io.StringIO(pgn))
        assert game is not None and not game.errors, (eco, name)
        board = game.end().board()
        assert (key, plies, fen) == (
            chess.polyglot.zobrist_hash(board),
            len(board.move_stack),
            board.fen(),
        ), (eco, name, pgn)
    najdorf = query(
        con,
        "SELECT name FROM openings WHERE key = key_after('e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6')",
    )
    assert najdorf == [("Sicilian Defense: Najdorf Variation",)]


def test_opening_keys_are_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = tmp_path / "fresh-cache"
    monkeypatch.setenv("CHESSPIPE_CACHE", str(fresh))
    monkeypatch.setattr(openings_module, "_loaded", {})
    cache = openings_module.cache_path(openings_module.openings_dir())
    assert cache.parent == fresh and not cache.exists()
    every = "SELECT eco, name, pgn, key, plies, fen FROM openings ORDER BY pgn"
    con = connect(tmp_path, chess_terms=True)
    computed = query(con, every)
    con.close()
    assert len(computed) == 3807
    assert cache.is_file() and len(cache.read_text().splitlines()) == 3807
    # read back from the cache: the same rows
    monkeypatch.setattr(openings_module, "_loaded", {})
    con = connect(tmp_path, chess_terms=True)
    assert query(con, every) == computed
    con.close()
    # a fresh process reads the keys from the cache: no python-chess
    got = imported("sql", "--warehouse", str(tmp_path), "SELECT sum(plies) FROM openings")
    assert got == {"duckdb", "numpy"}


def test_sql_imports_python_chess_only_for_chess_functions(tmp_path: Path) -> None:
    """Registering a Python function makes DuckDB import NumPy (about 0.1 s), and the functions
    import python-chess: a query that uses neither pays for neither."""
    assert imported("sql", "--warehouse", str(tmp_path), "SELECT 1 AS one") == {"duckdb"}
    chess_query = "SELECT hexkey(key_after('e4 e5'))"
    assert imported("sql", "--warehouse", str(tmp_path), chess_query) == {
        "duckdb",
        "numpy",
        "chess",
    }


# --- statistics joined to names -------------------------------------------------------------


@pytest.mark.slow
def test_openings_join_move_stats_as_python_chess_counts(
    real_games: dict[str, tuple[Path, list[tuple[chess.pgn.Headers, list[chess.Move]]]]],
    tmp_path: Path,
) -> None:
    """Moves played from each named position, per month, speed and band, by a join on key,
    equal a python-chess recount of the kept games' first plies."""
    opening_keys: dict[int, set[str]] = {}
    for path in sorted((ROOT / "data" / "openings").glob("*.tsv")):
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                game = chess.pgn.read_game(io.StringIO(row["pgn"]))
                assert game is not None
                key = chess.polyglot.zobrist_hash(game.end().board())
                opening_keys.setdefault(key, set()).add(row["pgn"])

    expected: Counter[tuple[str, str, int, str, str, str]] = Counter()
    for month, (path, kept) in real_games.items():
        ingest(
            str(path),
            month,
            tmp_path,
            IngestSettings(GameFilter(min_rating=MIN_RATING)),
            runtime=Runtime(workers=1),
        )
        for headers, moves in kept:
            band = min(int(headers["WhiteElo"]), int(headers["BlackElo"])) // 100 * 100
            white = {"1-0": "wins", "0-1": "losses", "1/2-1/2": "draws"}[headers["Result"]]
            board = chess.Board()
            for move in moves:
                key = chess.polyglot.zobrist_hash(board)
                outcome = white
                if board.turn == chess.BLACK:
                    outcome = {"wins": "losses", "losses": "wins", "draws": "draws"}[white]
                for pgn in opening_keys.get(key, ()):
                    where = (pgn, month, band, speed(headers["TimeControl"]) or "")
                    expected[(*where, board.san(move), "games")] += 1
                    expected[(*where, board.san(move), outcome)] += 1
                board.push(move)
    assert len(expected) > 1000

    con = connect(tmp_path, chess_terms=True)
    rows = query(
        con,
        "SELECT o.pgn, m.month, m.rating_band, m.speed, san(m.move, o.fen) AS san, "
        "sum(m.games), sum(m.wins), sum(m.draws), sum(m.losses) "
        "FROM openings o JOIN move_stats m ON m.key = o.key GROUP BY ALL",
    )
    con.close()
    got: Counter[tuple[str, str, int, str, str, str]] = Counter()
    for pgn, month, band, speed_name, san, games, wins, draws, losses in rows:
        for name, count in (("games", games), ("wins", wins), ("draws", draws), ("losses", losses)):
            if count:
                got[(pgn, month, band, speed_name, san, name)] += int(count)
    assert got == expected


# --- bad input through the command line -----------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "SELECT key_after('1. e4 e5 2. Nf3 Qxf3')",
            "illegal move Qxf3 after 1. e4 e5 2. Nf3",
        ),
        ("SELECT key_after('e4 e5 Ke3')", "illegal move Ke3 after 1. e4 e5"),
        ("SELECT fen_after('Nf6')", "illegal move Nf6 at the start position"),
        ("SELECT key_after('e4 e5 hello')", "invalid move hello after 1. e4 e5"),
        ("SELECT key_after('e4 -- e5')", "invalid move -- after 1. e4"),
        (
            "SELECT key_after('e4 d5 d4 e5 Nf3 Nc6 Nd2')",
            "ambiguous move Nd2 after 1. e4 d5 2. d4 e5 3. Nf3 Nc6",
        ),
        (
            "SELECT key_of_fen('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1')",
            "bad FEN 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1': expected 'w' or",
        ),
        ("SELECT key_of_fen('8/8/8/8/8/8/8/8 w - - 0 1')", "bad FEN '8/8/8/8/8/8/8/8 w - - 0 1': "),
        ("SELECT san(796, 'not a fen')", "bad FEN 'not a fen'"),
        (f"SELECT san(1, '{START_FEN}')", f"move a1b1 (1) is not legal in '{START_FEN}'"),
    ],
)
def test_bad_input_is_one_line_and_fails(tmp_path: Path, sql: str, message: str) -> None:
    proc = run_cli("sql", "--warehouse", str(tmp_path), sql, check=False)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"chesspipe: error: SQL error: {message}"), lines[0]


def test_bad_input_from_python_names_the_problem(con: ReadOnlyConnection, tmp_path: Path) -> None:
    with pytest.raises(duckdb.Error, match="illegal move Nf6 after 1. e4 e5 2. Nf3 Nf6"):
        query(con, "SELECT key_after('1. e4 e5 2. Nf3 Nf6 3. Nf6')")
    with pytest.raises(ValueError, match=r"^SQL error: illegal move Ke6 after 1\. e4 e5 2\. Nf3$"):
        run_query(tmp_path, "SELECT key_after('e4 e5 Nf3 Ke6')")


@pytest.mark.slow
def test_moves_after_is_a_recount_of_the_moves_from_a_line(tmp_path: Path) -> None:
    """`moves_after(line)` against a python-chess recount of the same games: every move played
    from the line's position, its games, White's and Black's wins and draws, in SAN."""
    from tests.recount import recount

    month = make_sample.SAMPLE_MONTHS[0]
    source = make_sample.sample_path(month)
    ingest(str(source), month, tmp_path, IngestSettings(GameFilter(0, frozenset(Speed), True)))
    counts, _ = recount(source, 0, {s.value for s in Speed}, allow_bots=True)
    for line in ("", "1. e4", "1. e4 c5 2. Nf3", "d4 Nf6 c4 e6"):
        board = chess.Board()
        for san in line.replace("1. ", "").replace("2. ", "").split():
            board.push_san(san)
        key = chess.polyglot.zobrist_hash(board)
        expected: dict[str, list[int]] = {}
        for (k, move, _speed, _band, outcome), n in counts.items():
            if k != key:
                continue
            san = board.san(decode_move(board, move))
            row = expected.setdefault(san, [0, 0, 0, 0])
            mover_won, draw = outcome == "win", outcome == "draw"
            white_won = mover_won if board.turn == chess.WHITE else outcome == "loss"
            black_won = not draw and not white_won
            row[0] += n
            row[1] += n * white_won
            row[2] += n * draw
            row[3] += n * black_won
        _, rows = run_query(
            tmp_path, f"SELECT san, games, white, draws, black FROM moves_after('{line}')"
        )
        assert expected, line  # the sample's games reach each line
        assert {san: [g, w, d, b] for san, g, w, d, b in rows} == expected, line
        assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True)
    _, [row] = run_query(tmp_path, "SELECT count(*) FROM moves_after('1. e4', speeds := 'blitz')")
    blitz = {m for (k, m, s, _b, _o) in counts if s == "blitz" and k == chess.polyglot.zobrist_hash(
        chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"))}  # fmt: skip
    assert row == (len(blitz),)


@pytest.mark.slow
def test_sql_warns_of_a_line_deeper_than_the_months_counted(tmp_path: Path) -> None:
    month = make_sample.SAMPLE_MONTHS[0]
    ingest(str(make_sample.sample_path(month)), month, tmp_path,
           IngestSettings(GameFilter(0, frozenset(Speed), True), plies=6))  # fmt: skip
    deep = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6"
    proc = run_cli("sql", "--warehouse", str(tmp_path),
                   f"SELECT count(*) FROM move_stats WHERE key = key_after('{deep}')")  # fmt: skip
    assert proc.stdout.splitlines()[2] == "0"
    assert proc.stderr.splitlines() == [
        f"chesspipe: warning: '{deep}' reaches ply 6, and {month} counted 6 plies at most: "
        "move_stats has no rows there (ingest with a larger --plies)"
    ]
    shallow = run_cli("sql", "--warehouse", str(tmp_path),
                      "SELECT count(*) FROM moves_after('1. e4 e5 2. Nf3')")  # fmt: skip
    assert shallow.stderr == "" and int(shallow.stdout.splitlines()[2]) > 0


def test_show_tables_lists_the_openings(tmp_path: Path) -> None:
    _, rows = run_query(tmp_path, "SHOW TABLES")
    assert {name for (name,) in rows} >= {"move_stats", "move_stats_yearly", "openings"}
