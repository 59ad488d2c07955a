"""`chesspipe search` against Scoutfish, built from ../shared/tools (bench/build_tools.sh), on the
over-the-board collections it reads whole: the same games and the same plies for the same JSON
queries. The search over months, row groups, threads and filters against one scan of the whole
table filtered in plain Python; the command's outputs read back by python-chess; bad input."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from bisect import bisect_left
from pathlib import Path

import chess
import chess.pgn
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.data import BUILT_TOOLS
from pipelines.explorer.index import index_month
from pipelines.explorer.layout import games_file
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.game_filter import GameFilter
from pipelines.search.games import SearchSettings, SearchStats, search_games
from pipelines.search.query import BadQuery, parse_query
from pipelines.search.scan import scan_games
from tests.conftest import GAMES_2013, OTB, need, need_built, run_cli

EVERY_GAME = GameFilter(0, frozenset({"all"}))
SCOUTFISH = BUILT_TOOLS / "scoutfish" / "src" / "scoutfish"
COLLECTIONS = {"1900-01": "Capablanca.pgn", "1851-01": "London1851.pgn"}

#: Queries whose meaning Scoutfish and chesspipe share (its README's examples among them; no
#: "x" in a piece move, no pawn move: see pipelines/search/query.py for where they differ).
SHARED_QUERIES = [
    {"sub-fen": "8/8/p7/8/8/1B3N2/8/8"},
    {"sub-fen": ["8/8/8/q7/8/8/8/8", "8/8/8/r7/8/8/8/8"]},
    {"sub-fen": "rnbqkbnr/pp2pppp/2p5/3p4/3PP3/8/PPP2PPP/RNBQKBNR"},
    {"sub-fen": "rnbqkb1r/pppp1ppp/5n2/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R"},
    {"sub-fen": "8/8/8/8/8/8/8/R6R", "result": "1-0"},
    {"material": "KRPKR"},
    {"material": ["KRPKR", "KRKRP", "KRPPKRP"]},
    {"material": "KRPPKR", "stm": "black"},
    {"imbalance": "PPvN"},
    {"imbalance": ["vP", "Pv"]},
    {"imbalance": "NvB"},
    {"result": ["1-0", "0-1"], "material": ["KRPKR", "KRPPKR"]},
    {"white-move": "O-O-O"},
    {"black-move": ["O-O-O", "O-O"]},
    {"white-move": "Rac1"},
    {"white-move": "Nf3", "stm": "white"},
    {"black-move": "Qd8"},
    {"moved": "KB", "captured": "Q"},
    {"captured": "", "material": ["KRPPKRP", "KRPKRP"]},
    {"captured": "R", "stm": "black"},
    {"moved": "N", "sub-fen": "8/8/8/3N4/8/8/8/8"},
    {"sequence": [{"sub-fen": "8/8/8/8/2B5/8/8/8"}, {"sub-fen": "8/8/8/8/8/5B2/8/8"}]},
    {
        "sequence": [
            {"sub-fen": "r1bqkb1r/pppp1ppp/2n2n2/1B2p3/4P3/2N2N2/PPPP1PPP/R1BQK2R"},
            {"sub-fen": "8/8/8/8/2B5/8/8/8"},
        ]
    },
    {"streak": [{"imbalance": "vP"}, {"imbalance": "vP"}, {"imbalance": "vP"}]},
    {"streak": [{"captured": ""}, {"stm": "white", "captured": "Q"}, {"captured": ""}]},
    {"streak": [{"white-move": "Nf3"}, {"pass": ""}, {"white-move": "Bc4"}]},
    {
        "sequence": [
            {"material": "KQRRBBNNPPPPPPPPKQRRBBNNPPPPPPP"},
            {"streak": [{"captured": "P"}, {"captured": "P"}]},
            {"stm": "white", "imbalance": "v"},
        ]
    },
    {"skip": 3, "limit": 4, "sub-fen": "8/8/8/8/8/5N2/8/8"},
    {"pass": ""},
]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two collections, whole (as /masters indexes them), a month each."""
    folder = tmp_path_factory.mktemp("search")
    for month, name in COLLECTIONS.items():
        pgn = need(OTB / name, "over-the-board collection")
        index_month(str(pgn), month, folder, ExplorerSettings(EVERY_GAME, None))
    return folder


def need_scoutfish() -> str:
    return need_built(SCOUTFISH, "Scoutfish")


@pytest.fixture(scope="module")
def scout_dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each collection indexed by Scoutfish (`scoutfish make`), beside a copy of it."""
    program = need_scoutfish()
    folder = tmp_path_factory.mktemp("scoutfish")
    found = {}
    for month, name in COLLECTIONS.items():
        pgn = folder / name
        shutil.copyfile(need(OTB / name, "over-the-board collection"), pgn)
        subprocess.run([program, "make", str(pgn)], check=True, capture_output=True)
        found[month] = pgn.with_suffix(".scout")
    return found


def scoutfish(db: Path, query: dict[str, object]) -> list[tuple[int, tuple[int, ...]]]:
    """Scoutfish's matches of a query: (the game's place in the file, its plies); its offset is
    where the game's text starts, the blank lines before its first tag included."""
    done = subprocess.run([need_scoutfish(), "scout", str(db), json.dumps(query)],
                          check=True, capture_output=True, text=True)  # fmt: skip
    answer = json.loads(done.stdout)
    data = db.with_suffix(".pgn").read_bytes()
    starts = [i for i in range(len(data)) if data.startswith(b"[Event ", i)
              and (i == 0 or data[i - 1] == 10)]  # fmt: skip
    return [(bisect_left(starts, m["ofs"]), tuple(m["ply"])) for m in answer["matches"]]


def source_places(warehouse: Path, month: str) -> list[int]:
    """Each kept game's place in its collection (its seq's), by players and round, in order."""
    text = (OTB / COLLECTIONS[month]).read_text(errors="replace")
    stream = io.StringIO(text)
    heads = []
    while (headers := chess.pgn.read_headers(stream)) is not None:
        heads.append((headers.get("White"), headers.get("Black"), headers.get("Round")))
    rows = pq.read_table(games_file(warehouse, month), columns=["white", "black", "round"])
    places, at = [], 0
    for row in rows.to_pylist():
        while heads[at] != (row["white"], row["black"], row["round"]):
            at += 1
        places.append(at)
        at += 1
    return places


@pytest.mark.slow
@pytest.mark.parametrize("query", SHARED_QUERIES, ids=[json.dumps(q)[:60] for q in SHARED_QUERIES])
def test_the_same_games_and_plies_as_scoutfish(
    warehouse: Path, scout_dbs: dict[str, Path], query: dict[str, object]
) -> None:
    for month in COLLECTIONS:
        places = source_places(warehouse, month)
        ours = [
            (places[m.seq], m.plies)
            for m in search_games(
                warehouse, parse_query(json.dumps(query)), SearchSettings(months=month)
            )  # fmt: skip
        ]
        kept = set(places)  # (the explorer keeps no game without a result)
        theirs = [found for found in scoutfish(scout_dbs[month], query) if found[0] in kept]
        assert ours == theirs, (month, len(ours), len(theirs))
    if "skip" not in query and "pass" not in query:
        assert any(scoutfish(db, query) for db in scout_dbs.values()), "a query that finds none"


@pytest.mark.slow
def test_where_scoutfish_errs_python_chess_decides(
    warehouse: Path, scout_dbs: dict[str, Path]
) -> None:
    """Scoutfish takes a promotion that captures for a capture of a pawn: London 1851's game 6
    ends 33... gxf1=Q#, a pawn taking a queen, which it does not find and we do."""
    query = {"moved": "P", "captured": "Q"}
    places = source_places(warehouse, "1851-01")
    ours = [(places[m.seq], m.plies) for m in search_games(
        warehouse, parse_query(json.dumps(query)), SearchSettings(months="1851-01"))]  # fmt: skip
    theirs = scoutfish(scout_dbs["1851-01"], query)
    assert set(ours) - set(theirs) == {(6, (65,))}
    assert set(theirs) <= set(ours)
    game = python_chess_game(OTB / "London1851.pgn", 6)
    board = game.board()
    for move in list(game.mainline_moves())[:65]:
        board.push(move)
    move = game.end().move
    assert board.san(move) == "gxf1=Q#" and board.piece_type_at(move.to_square) == chess.QUEEN


def python_chess_game(path: Path, place: int) -> chess.pgn.Game:
    with path.open(errors="replace") as handle:
        for _ in range(place):
            chess.pgn.skip_game(handle)
        game = chess.pgn.read_game(handle)
    assert game is not None
    return game


@pytest.fixture(scope="module")
def lichess_month(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Lichess month of 25,000 games (7 row groups), 50 plies indexed, moves kept whole."""
    folder = tmp_path_factory.mktemp("lichess")
    index_month(str(need(GAMES_2013, "Lichess sample")), "2013-01", folder,
                ExplorerSettings(EVERY_GAME))  # fmt: skip
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(
    ("query", "settings"),
    [
        ('{"material": "KRPKR"}', SearchSettings()),
        ('{"sub-fen": "8/8/8/8/4P3/8/8/8", "stm": "black"}', SearchSettings(min_rating=1700)),
        ('{"imbalance": "vN"}', SearchSettings(speeds=frozenset({"blitz", "bullet"}))),
        ('{"sequence": [{"white-move": "O-O"}, {"black-move": "O-O-O"}]}', SearchSettings()),
        ('{"captured": "Q", "result": "1-0"}', SearchSettings(player="chikipuki")),
    ],
)
def test_months_row_groups_threads_and_filters_match_one_scan(
    lichess_month: Path, query: str, settings: SearchSettings
) -> None:
    """Row groups read on two threads, filters applied by Arrow, and the seq numbering: the same
    as one scan of the whole month's table, its rows filtered in plain Python."""
    table = pq.read_table(games_file(lichess_month, "2013-01"))
    assert table.num_rows > 20000
    rows = table.select(["speed", "white_elo", "black_elo", "white", "black"]).to_pylist()
    keep = [
        i
        for i, row in enumerate(rows)
        if (settings.speeds is None or row["speed"] in settings.speeds)
        and (row["white_elo"] or 0) >= settings.min_rating
        and (row["black_elo"] or 0) >= settings.min_rating
        and (settings.player is None
             or settings.player.lower() in (row["white"].lower(), row["black"].lower()))
    ]  # fmt: skip
    kept = table.take(pa.array(keep, pa.int64()))
    whole = scan_games(kept.column("packed").combine_chunks(), kept.column("result").to_numpy(),
                       parse_query(query), starts=kept.column("fen").to_pylist())  # fmt: skip
    expected = [(keep[g], tuple(p)) for g, p in zip(whole.games.tolist(), whole.plies.tolist(),
                                                    strict=True)]  # fmt: skip
    stats = SearchStats()
    found = [(m.seq, m.plies) for m in search_games(lichess_month, parse_query(query), settings,
                                                     workers=2, stats=stats)]  # fmt: skip
    assert found == expected
    assert expected, "a query that finds none"
    assert stats.games == len(keep) and stats.positions == whole.positions


@pytest.mark.slow
def test_the_command_streams_tables_json_and_pgn(warehouse: Path) -> None:
    pattern = "8/8/p7/8/8/1B3N2/8/8"
    done = run_cli(*["search", "--warehouse", str(warehouse), "--subfen", pattern,
                    "--format", "json"])  # fmt: skip
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines and all(set(line) >= {"month", "id", "plies"} for line in lines)
    assert "games matched" in done.stderr
    pgn = run_cli(*["search", "--warehouse", str(warehouse), "--subfen", pattern, "--format",
                   "pgn", "--limit", "3"]).stdout  # fmt: skip
    stream, games = io.StringIO(pgn), 0
    while (game := chess.pgn.read_game(stream)) is not None:
        games += 1
        marked = [node for node in game.mainline() if node.comment == "matched"]
        assert len(marked) == 1
        board = marked[0].board()
        assert board.piece_at(chess.A6) == chess.Piece.from_symbol("p")
        assert board.piece_at(chess.B3) == chess.Piece.from_symbol("B")
        assert board.piece_at(chess.F3) == chess.Piece.from_symbol("N")
    assert games == 3
    table = run_cli(*["search", "--warehouse", str(warehouse), "--material", "KRPKR",
                     "--material", "KRKR", "--months", "1900-01", "--quiet"]).stdout  # fmt: skip
    assert table.splitlines()[0].split() == ["month", "game", "white", "black", "result", "plies"]
    assert len(table.splitlines()) > 3


def test_an_exact_fen_finds_the_position_with_its_side_and_castling(warehouse: Path) -> None:
    """--fen: the games reaching that position, its side to move and castling rights as
    python-chess reads them (checked on each game's moves)."""
    fen = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"
    found = list(search_games(warehouse, parse_query(json.dumps({"fen": fen}))))
    assert found
    for match in found:
        board = chess.Board()
        for move in chess.pgn.read_game(io.StringIO(match.pgn())).mainline_moves():
            if len(board.move_stack) == match.plies[0]:
                break
            board.push(move)
        assert board.board_fen() == fen.split()[0] and board.turn == chess.BLACK
        assert board.clean_castling_rights() == chess.BB_CORNERS


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--subfen", "8/8/8/8/8/8/8"], "bad sub-fen '8/8/8/8/8/8/8': eight ranks"),
        (["--subfen", "8/8/8/8/8/8/8/9"], "bad sub-fen"),
        (["--material", "RKR"], "bad material 'RKR'"),
        (["--imbalance", "PP"], "bad imbalance 'PP'"),
        (["--fen", "not a fen"], "bad FEN 'not a fen'"),
        (["--query", '{"sub-fen": "8/8/8/8/8/8/8/8", "colour": "white"}'], "unknown rule 'colour'"),
        (["--query", '{"white-move": "Nz9"}'], "bad move 'Nz9'"),
        (["--query", "{not json"], "the query is not JSON"),
        (["--query", '{"material": "KRKR"}', "--stm", "white"], "--query goes alone"),
        ([], "say what to find"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(warehouse: Path, argv: list[str], said: str) -> None:
    done = run_cli(*["search", "--warehouse", str(warehouse), *argv], check=False)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_bad_number_is_argparse_s_usage_error(warehouse: Path) -> None:
    done = run_cli("search", "--warehouse", str(warehouse), "--stm", "white", "--limit", "0",
                   check=False)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("argument --limit: must be at least 1, got '0'")


def test_queries_are_read_strictly() -> None:
    with pytest.raises(BadQuery, match="a streak inside a sequence"):
        parse_query('{"sequence": [{"streak": [{"pass": ""}], "stm": "white"}]}')
    with pytest.raises(BadQuery, match="skip is a whole number"):
        parse_query('{"skip": -1, "pass": ""}')
    with pytest.raises(BadQuery, match="result '2-0'"):
        parse_query('{"result": "2-0"}')
    with pytest.raises(BadQuery, match="stm is white or black"):
        parse_query('{"stm": "both"}')
    assert parse_query('{"pass": ""}').conditions[0] == parse_query('{"pass": 1}').conditions[0]


def test_a_damaged_month_is_refused_and_an_unknown_month_named(
    warehouse: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "w"
    shutil.copytree(warehouse, copy)
    with games_file(copy, "1851-01").open("ab") as handle:
        handle.write(b"\0")
    done = run_cli(*["search", "--warehouse", str(copy), "--stm", "white"], check=False)
    assert done.returncode == 1 and "manifest says" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = run_cli(*["search", "--warehouse", str(warehouse), "--stm", "white", "--months",
                    "2020-01"], check=False)  # fmt: skip
    assert done.returncode == 1 and "2020-01" in done.stderr


@pytest.mark.slow
def test_sql_games_and_the_search_functions(warehouse: Path) -> None:
    """The `games` view holds every kept game; fen_at and material_at are python-chess's
    positions of the games' moves; matches_subfen and scout find what the search finds."""
    from pipelines import open_warehouse

    con = open_warehouse(warehouse)
    counted = dict(con.execute("SELECT month, count(*) FROM games GROUP BY month").fetchall())
    assert counted == {m: len(source_places(warehouse, m)) for m in COLLECTIONS}
    rows = con.execute(
        "SELECT seq, fen_at(packed, 30), material_at(packed, plies), plies FROM games "
        "WHERE month = '1900-01' ORDER BY seq LIMIT 40"
    ).fetchall()
    for seq, fen, material, plies in rows:
        game = python_chess_game(OTB / "Capablanca.pgn", source_places(warehouse, "1900-01")[seq])
        moves = list(game.mainline_moves())
        assert plies == len(moves)
        board = game.board()
        for move in moves[:30]:
            board.push(move)
        assert fen == (board.fen() if len(moves) >= 30 else None)
        for move in moves[30:]:
            board.push(move)
        white, black = material.split("v")
        assert sorted(white + black.lower()) == sorted(
            p.symbol() for p in board.piece_map().values()
        )
    pattern = "8/8/p7/8/8/1B3N2/8/8"
    found = con.execute(
        "SELECT month, seq, matches_subfen(packed, ?, fen) AS ply FROM games "
        "WHERE ply IS NOT NULL ORDER BY month, seq",
        [pattern],
    ).fetchall()
    searched = search_games(warehouse, parse_query(json.dumps({"sub-fen": pattern})))
    assert found == [(m.month, m.seq, m.plies[0]) for m in searched]
    query = {"sequence": [{"material": "KRPPKRP"}, {"material": "KRPKRP", "result": "1-0"}]}
    scouted = con.execute(
        "SELECT month, seq, scout(packed, ?, fen, result) AS matched FROM games "
        "WHERE matched IS NOT NULL ORDER BY month, seq",
        [json.dumps(query)],
    ).fetchall()
    searched = search_games(warehouse, parse_query(json.dumps(query)))
    assert scouted == [(m.month, m.seq, list(m.plies)) for m in searched]
    assert scouted


@pytest.mark.slow
def test_sql_command_calls_the_functions_and_says_a_bad_query_in_a_line(warehouse: Path) -> None:
    count = "SELECT count(*) FROM games WHERE matches_subfen(packed, '8/8/8/8/8/5B2/8/8') > 0"
    done = run_cli("sql", "--warehouse", str(warehouse), "--format", "csv", count)
    assert int(done.stdout.split()[-1]) > 100
    bad = "SELECT scout(packed, '{\"colour\": 1}') FROM games"
    done = run_cli("sql", "--warehouse", str(warehouse), bad, check=False)
    assert done.returncode == 1 and "unknown rule 'colour'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_api_streams_ndjson_and_answers_400_with_the_reason(warehouse: Path) -> None:
    from starlette.testclient import TestClient

    from pipelines.serve.app import ServeSettings, open_app

    pattern = "8/8/p7/8/8/1B3N2/8/8"
    with TestClient(open_app(ServeSettings(str(warehouse)))) as client:
        answer = client.get("/games/search", params={"subfen": pattern, "limit": "4"})
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in answer.text.splitlines()]
        query = parse_query(json.dumps({"sub-fen": pattern, "limit": 4}))
        assert lines == [m.to_json() for m in search_games(warehouse, query)]
        sequence = '{"sequence": [{"stm": "white"}, {"material": "KRPKR"}]}'
        answer = client.get("/games/search", params={"query": sequence, "months": "1851-01"})
        assert answer.status_code == 200 and answer.text.count("\n") > 0
        for params, said in [
            ({"subfen": "8/8"}, "bad sub-fen"),
            ({"query": '{"colour": 1}'}, "unknown rule 'colour'"),
            ({"stm": "white", "months": "1999-01"}, "1999-01"),
            ({"stm": "white", "limit": "0"}, "limit must be at least 1"),
            ({"stm": "white", "limit": "\u00b2"}, "limit must be a number of at most"),
            ({"stm": "white", "pgn": "yes"}, "pgn must be true or false"),
            ({"stm": "white", "speeds": "hyper"}, "unknown speed(s) ['hyper']"),
            ({"colour": "white"}, "unknown parameter 'colour'"),
            ({}, "say what to find"),
        ]:
            answer = client.get("/games/search", params=params)
            assert answer.status_code == 400, params
            assert said in answer.json()["error"], (params, answer.json())


def test_the_games_view_knows_the_games_schema() -> None:
    from pipelines.warehouse.explorer_files import GAMES_COLUMNS
    from schemas.explorer import GAMES_SCHEMA

    kinds = {"uint32": "UINTEGER", "uint16": "USMALLINT", "uint8": "UTINYINT",
             "string": "VARCHAR", "bool": "BOOLEAN", "binary": "BLOB",
             "list<item: int32>": "INTEGER[]", "list<item: int16>": "SMALLINT[]"}  # fmt: skip
    assert tuple((f.name, kinds[str(f.type)]) for f in GAMES_SCHEMA) == GAMES_COLUMNS


@pytest.mark.slow
def test_a_month_indexed_again_during_a_search_is_read_in_one_version(tmp_path: Path) -> None:
    """A search that has begun a month reads it whole in the version it opened, though the month
    is indexed again (its files replaced) before the search ends."""
    first, second = OTB / "Capablanca.pgn", OTB / "London1851.pgn"
    settings = ExplorerSettings(EVERY_GAME, None)
    index_month(str(need(first, "collection")), "1900-01", tmp_path, settings)
    query = parse_query('{"sub-fen": "8/8/8/8/8/5N2/8/8"}')
    whole = [(m.seq, m.id, m.plies) for m in search_games(tmp_path, query)]
    assert len(whole) > 100
    found = search_games(tmp_path, query)
    seen = [next(found)]
    index_month(str(need(second, "collection")), "1900-01", tmp_path, settings)
    seen += list(found)
    assert [(m.seq, m.id, m.plies) for m in seen] == whole
    again = [(m.seq, m.id, m.plies) for m in search_games(tmp_path, query)]
    assert again != whole and again  # the new version, once the search starts again


@pytest.mark.slow
def test_the_page_finds_the_games_with_a_position(warehouse: Path) -> None:
    """In Chromium: the page's sub-FEN box and "games with this position" list what the API
    finds; a game clicked is played up to the position it matched at."""
    from pipelines.serve.app import ServeSettings, open_app
    from tests.browser import chromium_driver
    from tests.serving import served_in_thread

    pattern = "8/8/p7/8/8/1B3N2/8/8"
    expected = list(search_games(warehouse, parse_query(json.dumps({"sub-fen": pattern}))))
    with (
        served_in_thread(open_app(ServeSettings(str(warehouse)))) as url,
        chromium_driver(1100, 900) as driver,
    ):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        wait = WebDriverWait(driver, 20)
        driver.get(url + "/")
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))

        def found() -> list[str]:
            wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-found"))
            rows = driver.find_elements(By.CSS_SELECTOR, "#found tr.found")
            return [str(row.get_attribute("data-id")) for row in rows]

        driver.find_element(By.ID, "subfen").send_keys(pattern)
        driver.find_element(By.ID, "search-subfen").click()
        assert found() == [m.id for m in expected]
        driver.execute_script("document.body.dataset.ready=''")
        driver.find_elements(By.CSS_SELECTOR, "#found tr.found")[0].click()
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
        line = driver.find_element(By.ID, "line").text.split()
        assert len([w for w in line if not w.endswith(".")]) == expected[0].plies[0]
        pieces = {
            piece.find_element(By.XPATH, "..").get_attribute("data-square"): piece.get_attribute(
                "data-piece"
            )
            for piece in driver.find_elements(By.CSS_SELECTOR, "#board .pc")
        }
        assert (pieces["a6"], pieces["b3"], pieces["f3"]) == ("p", "B", "N")
        driver.execute_script("document.body.dataset.found=''")
        driver.find_element(By.ID, "search-here").click()
        here = found()
        assert expected[0].id in here
        driver.execute_script("document.body.dataset.found=''")
        driver.find_element(By.ID, "subfen").clear()
        driver.find_element(By.ID, "subfen").send_keys("8/8")
        driver.find_element(By.ID, "search-subfen").click()
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-found"))
        assert "bad sub-fen" in driver.find_element(By.ID, "found-total").text


def test_no_games_keeps_the_records_without_their_moves(tmp_path: Path) -> None:
    """--no-games: the month's game records stay, their moves are not kept, and a search says
    the month was not searched."""
    pgn = need(OTB / "London1851.pgn", "collection")
    run_cli("explorer", "index", str(pgn), "--month", "1851-01", "--warehouse", str(tmp_path),
            "--min-rating", "0", "--speeds", "all", "--no-games", "--quiet")  # fmt: skip
    table = pq.read_table(games_file(tmp_path, "1851-01"))
    assert table.num_rows > 200 and table.column("packed").null_count == table.num_rows
    done = run_cli("search", "--warehouse", str(tmp_path), "--stm", "white")
    assert done.stdout.splitlines()[1:] == []
    assert "1 months keep no moves of their games" in done.stderr
