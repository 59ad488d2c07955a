"""The explorer's games and players (`chesspipe explorer index`, then `chesspipe serve`),
read with berserk from a real uvicorn server, against a python-chess recount of the real
samples done as lila-openingexplorer does it (tests/explorer_recount.py).

- `/lichess`: counts of the first 50 plies, each position once per game (plies 21-50 too),
  topGames and recentGames, each move's `game`, the tournament filter, `/lichess/history`,
  `opening` for a FEN.
- `/player`: stream_player_games and get_player_games, names in any case, performance.
- `/masters` from a collection: the over-the-board samples with TimeControl and Elo tags
  added by the fixture (until the filter keeps games without them), since/until in years,
  topGames, `/masters/pgn/{id}`.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest

from pipelines.explorer.index import index_month
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from schemas.speed import Speed
from tests.conftest import GAMES_2013, GAMES_2021, OTB, file_hashes, first_games, need
from tests.explorer_recount import (
    Game,
    counts,
    lila_games,
    performance,
    read_games,
    white_view,
)
from tests.serving import served_in_thread

berserk = pytest.importorskip("berserk")

MIN_RATING = 1600
ALL_SPEEDS = {s.value for s in Speed}
#: Games of the 2013-01 sample read (its first ones, with the whole 2021-10 sample): enough for
#: full answers of 8 games on every path tested, in seconds.
GAMES_OF_2013 = 9000


#: One openings cache for this module, away from the user's (conftest.module_cache).
pytestmark = pytest.mark.usefixtures("module_cache")


@pytest.fixture(scope="module")
def lichess(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Game]]:
    """The two samples ingested (20 plies, for books) and indexed for the explorer."""
    folder = tmp_path_factory.mktemp("warehouse")
    months = {
        "2013-01": first_games(
            GAMES_2013, GAMES_OF_2013, tmp_path_factory.mktemp("games") / "2013-01-first.pgn"
        ),
        "2021-10": need(GAMES_2021, "real Lichess games (2021-10)"),
    }
    rules = GameFilter(min_rating=MIN_RATING, speeds=frozenset(Speed))
    for month, path in months.items():
        ingest(str(path), month, folder, IngestSettings(rules), runtime=Runtime(workers=1))
        index_month(str(path), month, folder, ExplorerSettings(rules))
    return folder, read_games(months, MIN_RATING, ALL_SPEEDS)


def otb_collection(folder: Path) -> Path:
    """The over-the-board samples as one collection the filter keeps today: a classical
    TimeControl and Elo 0 where the tags are empty (games without a result are left out)."""
    parts = []
    for name in ("Capablanca.pgn", "London1851.pgn"):
        text = need(OTB / name, "over-the-board games").read_bytes().decode("utf-8", "replace")
        text = text.replace("\r\n", "\n")
        text = re.sub(r'\[(White|Black)Elo ""\]', r'[\1Elo "0"]', text)
        text = text.replace('[Result "', '[TimeControl "5400+30"]\n[Result "')
        parts.append(text.strip() + "\n\n")
    path = folder / "otb.pgn"
    path.write_text("".join(parts))
    return path


@pytest.fixture(scope="module")
def masters(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Game], Path]:
    folder = tmp_path_factory.mktemp("masters")
    source = otb_collection(tmp_path_factory.mktemp("otb"))
    rules = GameFilter(min_rating=0, speeds=frozenset(Speed))
    index_month(str(source), "2000-01", folder, ExplorerSettings(rules, plies=None))
    games = read_games({"2000-01": source}, 0, ALL_SPEEDS, plies=None)
    return folder, games, source


@pytest.fixture(scope="module")
def server(
    lichess: tuple[Path, list[Game]], masters: tuple[Path, list[Game], Path]
) -> Iterator[str]:
    from pipelines.serve.app import ServeSettings, open_app

    before = file_hashes(lichess[0]), file_hashes(masters[0])
    app = open_app(ServeSettings(str(lichess[0]), masters=str(masters[0])))
    with served_in_thread(app) as url:
        yield url
    assert (file_hashes(lichess[0]), file_hashes(masters[0])) == before, "the server wrote"


@pytest.fixture(scope="module")
def client(server: str) -> Any:
    return berserk.Client(explorer_url=server)


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url) as response:
            body = response.read()
            kind = response.headers.get("content-type", "")
            return response.status, json.loads(body) if "json" in kind else body.decode()
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def board_after(path: list[str]) -> chess.Board:
    board = chess.Board()
    for uci in path:
        board.push_uci(uci)
    return board


def shown(answer: dict[str, Any]) -> dict[str, dict[str, int]]:
    fields = ("white", "draws", "black", "averageRating")
    return {m["uci"]: {k: m[k] for k in fields} for m in answer["moves"]}


def paths(games: list[Game], plies: tuple[int, ...], count: int) -> list[list[str]]:
    """The most common move paths of these lengths."""
    found: Counter[tuple[str, ...]] = Counter()
    for game in games:
        for n in plies:
            if len(game.uci) >= n:
                found[tuple(game.uci[:n])] += 1
    return [list(p) for p, _ in found.most_common(count)]


def check_game(game: dict[str, Any], by_id: dict[str, Game], board: chess.Board) -> Game:
    """A returned game is a real game of the data that reached the position and played the
    move there (its last visit), with its players, ratings and result."""
    found = by_id[game["id"]]
    key = chess.polyglot.zobrist_hash(board)
    assert found.positions[key][0] == game["uci"]
    assert game["white"] == {"name": found.white, "rating": found.white_elo}
    assert game["black"] == {"name": found.black, "rating": found.black_elo}
    winner = {"1-0": "white", "0-1": "black", "1/2-1/2": None}[found.result]
    assert game["winner"] == winner and game["month"] == found.month
    assert game["speed"] == Speed(found.speed).api_name and game["mode"] == "rated"
    return found


# --- /lichess --------------------------------------------------------------------------------


@pytest.mark.slow
def test_counts_as_lichess_counts(client: Any, lichess: tuple[Path, list[Game]]) -> None:
    """The first 50 plies, each position once per game: paths of 0 to 6 plies and of 21 to
    50 plies (which the books' statistics never reach)."""
    _, games = lichess
    checked = deep = 0
    for path in paths(games, (0, 1, 2, 4, 6), 25) + paths(games, (21, 30, 40, 49), 12):
        board = board_after(path)
        answer = client.opening_explorer.get_lichess_games(play=path or None)
        want = counts(games, board)
        assert shown(answer) == want, path
        assert answer["white"] == sum(r["white"] for r in want.values())
        checked += 1
        deep += len(path) > 20 and bool(want)
    assert checked == 37 and deep >= 8
    beyond = paths(games, (50,), 1)[0]
    assert client.opening_explorer.get_lichess_games(play=beyond)["moves"] == []


def test_top_and_recent_games(client: Any, lichess: tuple[Path, list[Game]]) -> None:
    _, games = lichess
    by_id = {g.id: g for g in games}
    seen_top = 0
    for path in paths(games, (0, 1, 2, 3, 5, 8), 20):
        board = board_after(path)
        for groups in (None, {2000, 2200, 2500}, {1600, 1800}):
            ratings = sorted(map(str, groups)) if groups else None
            answer = client.opening_explorer.get_lichess_games(play=path or None, ratings=ratings)
            top, recent = lila_games(games, board, groups)
            assert [(g["uci"], g["id"]) for g in answer["topGames"]] == top, (path, groups)
            assert [(g["uci"], g["id"]) for g in answer["recentGames"]] == recent
            assert len(top) <= 4 and len(top) + len(recent) <= 8
            for game in answer["topGames"] + answer["recentGames"]:
                check_game(game, by_id, board)
            numbers = [by_id[g["id"]].number for g in answer["recentGames"]]
            assert numbers == sorted(numbers, reverse=True)
            seen_top += bool(top)
    assert seen_top >= 10
    few = client.opening_explorer.get_lichess_games(play=["e2e4"], top_games=1, recent_games=2)
    assert len(few["topGames"]) <= 1 and len(few["recentGames"]) == 2


def test_each_move_played_once_names_its_game(
    client: Any, lichess: tuple[Path, list[Game]]
) -> None:
    _, games = lichess
    by_id = {g.id: g for g in games}
    singles = 0
    for path in paths(games, (3, 5), 15):
        board = board_after(path)
        for move in client.opening_explorer.get_lichess_games(play=path)["moves"]:
            total = move["white"] + move["draws"] + move["black"]
            if total == 1:
                singles += 1
                check_game({**move["game"], "uci": move["uci"]}, by_id, board)
            else:
                assert move["game"] is None
    assert singles >= 10


def test_tournament_filter_and_history(client: Any, server: str, lichess: Any) -> None:
    _, games = lichess
    board = board_after(["e2e4"])
    for flag in (True, False):
        subset = [g for g in games if g.tournament == flag]
        status, answer = get(f"{server}/lichess?play=e2e4&tournament={str(flag).lower()}")
        assert status == 200 and shown(answer) == counts(subset, board) and answer["moves"]
    status, history = get(f"{server}/lichess/history?play=e2e4")
    full = client.opening_explorer.get_lichess_games(play=["e2e4"], history=True)
    assert status == 200 and history["history"] == full["history"]
    assert history["moves"] == [] and history["topGames"] == [] == history["recentGames"]
    for month in ("2013-01", "2021-10"):
        subset = [
            g
            for g in games
            if g.month == month and chess.polyglot.zobrist_hash(board) in g.positions
        ]
        row = next(h for h in history["history"] if h["month"] == month)
        assert row["white"] + row["draws"] + row["black"] == len(subset)
    assert get(f"{server}/lichess?tournament=maybe")[0] == 400
    assert get(f"{server}/lichess?since=2021-10&until=2013-01")[0] == 400


def test_opening_of_a_fen(client: Any) -> None:
    """The position after 1.e4 e5 2.Nf3 Nc6 given by FEN is named as by `play` (C44)."""
    board = board_after(["e2e4", "e7e5", "g1f3", "b8c6"])
    by_fen = client.opening_explorer.get_lichess_games(position=board.fen())
    by_play = client.opening_explorer.get_lichess_games(play=["e2e4", "e7e5", "g1f3", "b8c6"])
    assert by_fen["opening"] == by_play["opening"] and by_fen["opening"]["eco"] == "C44"
    further = client.opening_explorer.get_lichess_games(position=board.fen(), play=["f1b5"])
    assert further["opening"]["eco"].startswith("C6")


# --- /player ---------------------------------------------------------------------------------


def player_counts(games: list[Game], name: str, color: str, board: chess.Board) -> dict[str, Any]:
    key = chess.polyglot.zobrist_hash(board)
    found: dict[str, dict[str, int]] = {}
    opponents: dict[str, int] = {}
    for game in games:
        if (game.white if color == "white" else game.black).lower() != name.lower():
            continue
        if key in game.positions:
            uci = game.positions[key][0]
            row = found.setdefault(uci, {"white": 0, "draws": 0, "black": 0})
            row[white_view(game.result)] += 1
            opponents[uci] = opponents.get(uci, 0) + (
                game.black_elo if color == "white" else game.white_elo
            )
    for uci, row in found.items():
        total = row["white"] + row["draws"] + row["black"]
        points = 2 * row[color] + row["draws"]
        row["averageOpponentRating"] = (2 * opponents[uci] + total) // (2 * total)
        row["performance"] = performance(points, total, opponents[uci])
    return found


def test_player(client: Any, server: str, lichess: tuple[Path, list[Game]]) -> None:
    _, games = lichess
    names = Counter(g.white for g in games)
    name = names.most_common(1)[0][0]
    mine = [g for g in games if g.white == name]
    assert len(mine) >= 20
    fields = ("white", "draws", "black", "averageOpponentRating", "performance")
    for path in paths(mine, (0, 1, 2, 4), 8):
        board = board_after(path)
        lines = list(
            client.opening_explorer.stream_player_games(
                player=name.swapcase(), color="white", play=path or None
            )
        )
        assert len(lines) == 1 and lines[0]["queuePosition"] == 0
        answer = lines[0]
        want = player_counts(games, name, "white", board)
        assert {m["uci"]: {k: m[k] for k in fields} for m in answer["moves"]} == want, path
        recent = sorted(
            (g for g in mine if chess.polyglot.zobrist_hash(board) in g.positions),
            key=lambda g: -g.number,
        )[:8]
        assert [g["id"] for g in answer["recentGames"]] == [g.id for g in recent]
        assert "topGames" not in answer
    whole = client.opening_explorer.get_player_games(player=name, color="white")
    assert whole["white"] + whole["draws"] + whole["black"] == len(mine)
    unknown = client.opening_explorer.get_player_games(player="nobody-here-at-all", color="black")
    assert unknown["moves"] == [] and unknown["white"] == 0 and unknown["recentGames"] == []
    for query, word in (("color=white", "player"), (f"player={name}", "color")):
        status, body = get(f"{server}/player?{query}")
        assert status == 400 and word in body["error"], query


# --- /masters --------------------------------------------------------------------------------


def masters_counts(games: list[Game], board: chess.Board, since: int, until: int) -> dict[str, Any]:
    key = chess.polyglot.zobrist_hash(board)
    found: dict[str, dict[str, int]] = {}
    for game in games:
        if key in game.positions and game.year is not None and since <= game.year <= until:
            row = found.setdefault(game.positions[key][0], {"white": 0, "draws": 0, "black": 0})
            row[white_view(game.result)] += 1
    return found


def key_of(board: chess.Board) -> int:
    return chess.polyglot.zobrist_hash(board)


def masters_games(games: list[Game], board: chess.Board, since: int, until: int) -> list[Game]:
    """The games that reached the position in those years, as topGames orders them: the
    highest rating sum first, then the most recent."""
    key = key_of(board)
    inside = [g for g in games if key in g.positions and g.year is not None]
    inside = [g for g in inside if since <= g.year <= until]  # type: ignore[operator]
    return sorted(inside, key=lambda g: (-(g.white_elo + g.black_elo), -g.number))


def shown_game(game: dict[str, Any], uci: str) -> tuple[Any, ...]:
    """What identifies a masters game in an answer (collections have no Lichess ids)."""
    white, black = game["white"], game["black"]
    return (uci, white["name"], black["name"], white["rating"], black["rating"], game["year"])


def recounted_game(game: Game, uci: str) -> tuple[Any, ...]:
    return (uci, game.white, game.black, game.white_elo, game.black_elo, game.year)


def masters_average(played: list[Game], board: chess.Board) -> int | None:
    """The movers' mean rating, rounded half up (lila's rounding)."""
    key = key_of(board)
    ratings = [g.white_elo if g.positions[key][1] else g.black_elo for g in played]
    if not ratings:
        return None
    mean, rest = divmod(sum(ratings), len(ratings))
    return mean + (2 * rest >= len(ratings))


def test_masters(client: Any, server: str, masters: tuple[Path, list[Game], Path]) -> None:
    _, games, source = masters
    fields = ("white", "draws", "black")
    deep = 0
    for path in paths(games, (0, 1, 2, 4, 6), 10) + paths(games, (30,), 2):
        board = board_after(path)
        for since, until in ((0, 9999), (1910, 1920), (1851, 1851)):
            answer = client.opening_explorer.get_masters_games(
                play=path or None, since=since, until=until
            )
            got = {m["uci"]: {k: m[k] for k in fields} for m in answer["moves"]}
            assert got == masters_counts(games, board, since, until), (path, since)
            inside = masters_games(games, board, since, until)
            top = [shown_game(g, g["uci"]) for g in answer["topGames"]]
            key = key_of(board)
            assert top == [recounted_game(g, g.positions[key][0]) for g in inside[:15]], path
            for move in answer["moves"]:
                played = [g for g in inside if g.positions[key][0] == move["uci"]]
                assert move["averageRating"] == masters_average(played, board), path
                single = [recounted_game(g, move["uci"]) for g in played if len(played) == 1]
                game = [shown_game(move["game"], move["uci"])] if move["game"] else []
                assert game == single, (path, move["uci"])
        deep += len(path) == 30
    assert deep >= 1
    start = client.opening_explorer.get_masters_games()
    assert len(start["topGames"]) == 15
    # /masters/pgn/{id}: the game's PGN, the same moves and players as the source
    by_moves = {" ".join(g.uci): g for g in games}
    for game in start["topGames"][:5]:
        text = client.opening_explorer.get_otb_master_game(game["id"])
        parsed = chess.pgn.read_game(__import__("io").StringIO(text))
        assert parsed is not None
        original = by_moves[" ".join(m.uci() for m in parsed.mainline_moves())]
        assert parsed.headers["White"] == original.white == game["white"]["name"]
        assert parsed.headers["Result"] == original.result
        assert parsed.headers["Date"] == original.headers["Date"]
    status, _ = get(f"{server}/masters/pgn/{start['topGames'][0]['id']}")
    assert status == 200
    assert get(f"{server}/masters/pgn/zzzzzzzz")[0] == 404
    assert get(f"{server}/masters?since=1920&until=1910")[0] == 400
    assert get(f"{server}/masters?since=19x0")[0] == 400


# --- the page in Debian's chromium -------------------------------------------------------------


@pytest.mark.slow
def test_page(
    server: str,
    lichess: tuple[Path, list[Game]],
    masters: tuple[Path, list[Game], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Drag a piece, click a move, paste a FEN, the Player and Masters tabs, a top game and
    the browser's Back, each checked against the API; screenshots kept in the test's folder."""
    from tests.browser import chromium_driver

    _, games = lichess
    name = Counter(g.white for g in games).most_common(1)[0][0]
    shots: list[Path] = []
    with chromium_driver(1200, 900) as driver:
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        from selenium.webdriver.support.ui import WebDriverWait

        wait = WebDriverWait(driver, 30)
        last = {"mark": None}

        def settled(contains: str = "") -> str:
            def changed(d: Any) -> bool:
                mark = d.find_element(By.TAG_NAME, "body").get_attribute("data-ready")
                return bool(mark) and mark != last["mark"] and contains in mark

            wait.until(changed)
            last["mark"] = driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready")
            return str(last["mark"])

        def rows() -> dict[str, int]:
            return {
                str(r.get_attribute("data-uci")): int(r.find_element(By.CLASS_NAME, "count").text)
                for r in driver.find_elements(By.CSS_SELECTOR, "tr.move")
            }

        def api(path: str) -> dict[str, int]:
            status, body = get(f"{server}{path}")
            if isinstance(body, str):  # NDJSON: the last line
                body = json.loads(body.strip().splitlines()[-1])
            assert status == 200, body
            return {m["uci"]: m["white"] + m["draws"] + m["black"] for m in body["moves"]}

        def shot(label: str) -> None:
            path = tmp_path / f"explorer-{len(shots)}-{label}.png"
            driver.save_screenshot(str(path))
            shots.append(path)

        driver.get(server + "/")
        settled()
        assert rows() == api("/lichess?play=")
        assert len(driver.find_elements(By.CSS_SELECTOR, "#board .pc")) == 32
        # drag e2 to e4
        piece = driver.find_element(By.CSS_SELECTOR, "#sq-e2 .pc")
        target = driver.find_element(By.ID, "sq-e4")
        ActionChains(driver).click_and_hold(piece).move_to_element(target).release().perform()
        settled()
        assert "play=e2e4" in driver.current_url
        assert driver.find_element(By.ID, "line").text == "1. e4"
        assert rows() == api("/lichess?play=e2e4")
        assert driver.find_element(By.CSS_SELECTOR, "#sq-e4 .pc").get_attribute("data-piece") == "P"
        # click e7, then e5
        driver.find_element(By.ID, "sq-e7").click()
        driver.find_element(By.ID, "sq-e5").click()
        settled()
        assert rows() == api("/lichess?play=e2e4,e7e5")
        assert driver.find_elements(By.CSS_SELECTOR, "#top tr.game, #recent tr.game")
        shot("lichess")
        # paste a FEN: the opening is named as by play
        fen = board_after(["e2e4", "e7e5", "g1f3", "b8c6"]).fen()
        box = driver.find_element(By.ID, "fen")
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(fen, Keys.ENTER)
        settled("fen=")
        assert driver.find_element(By.ID, "opening").text.startswith("C44")
        assert rows() == api(f"/lichess?fen={urllib.parse.quote(fen)}")
        # the Player tab
        driver.find_element(By.ID, "tab-player").click()
        settled()
        driver.find_element(By.ID, "reset").click()
        settled()
        driver.find_element(By.ID, "player").send_keys(name.upper())
        driver.find_element(By.ID, "player-go").click()
        settled()
        assert rows() == api(f"/player?player={urllib.parse.quote(name)}&color=white&play=")
        assert rows()
        shot("player")
        # the Masters tab, a top game, and Back
        driver.find_element(By.ID, "tab-masters").click()
        settled()
        assert rows() == api("/masters?play=")
        shot("masters")
        first = driver.find_elements(By.CSS_SELECTOR, "#top tr.game")[0]
        game_id = first.get_attribute("data-id")
        first.click()
        settled("play=")
        status, pgn = get(f"{server}/masters/pgn/{game_id}")
        game = chess.pgn.read_game(__import__("io").StringIO(pgn))
        assert status == 200 and game is not None
        line = driver.find_element(By.ID, "line").text
        assert line == game.board().variation_san(list(game.mainline_moves()))
        assert driver.find_element(By.ID, "pgn").get_attribute("value").strip() == pgn.strip()
        shot("masters-game")
        driver.back()
        settled()
        assert "tab=masters" in driver.current_url and rows() == api("/masters?play=")
        driver.back()  # the browser's Back steps through the page's states
        settled()
        assert "tab=masters" not in driver.current_url
    for path in shots:
        assert path.stat().st_size > 1000
    with capsys.disabled():
        print("\nscreenshots of the explorer page:", *map(str, shots), sep="\n  ")


@pytest.mark.slow
def test_explorer_index_shows_its_progress_as_ingest_does(tmp_path: Path) -> None:
    """`explorer index` showed no progress on a terminal: it draws ingest's line (here asked
    with --progress, as a pipe is no terminal), ending on the run's own counts."""
    from tests.conftest import run_cli
    from tests.sample_tool import make_sample

    month = make_sample.SAMPLE_MONTHS[0]
    for partition in (("--month", month), ("--month-by", "date")):
        proc = run_cli("explorer", "index", str(make_sample.sample_path(month)), *partition,
                       "--warehouse", str(tmp_path / partition[0]), "--min-rating", "0",
                       "--progress")  # fmt: skip
        summary = json.loads(proc.stdout)
        lines = proc.stderr.splitlines()
        last = [line for line in lines if line.startswith("[")][-1]
        assert "100.0%" in last
        assert f"{summary['games_read']:,} games" in last
