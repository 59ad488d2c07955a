"""`chesspipe serve` against independent truths.

- The explorer API, read with berserk (the official Lichess client) from a real uvicorn server,
  against a plain python-chess recount of the real samples ingested into a temporary warehouse.
- The tablebase API, read with berserk, against python-chess's `chess.syzygy` on positions of
  every material of the 3-4-piece tables.
- The page in Debian's chromium (selenium with chromedriver), against the API.
- Bad requests: 400 with a reason; unknown paths 404; the warehouse's files unchanged.
"""

from __future__ import annotations

import io
import json
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import chess.polyglot
import chess.syzygy
import pytest

from pipelines.endgames.positions import random_position
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from schemas.speed import Speed
from tests.browser import chromium_driver
from tests.conftest import GAMES_2013, GAMES_2021, SYZYGY_DIR, file_hashes, need
from tests.legacy_partition import write_legacy_partition, write_manifest_for
from tests.recount import games_where, keeps, read_text, speed
from tests.serving import free_port, served_in_thread

berserk = pytest.importorskip("berserk")

MIN_RATING = 1600
PLIES = 20
ALL_SPEEDS = {s.value for s in Speed}
LICHESS_SPEEDS = {"ultrabullet": "ultraBullet"}
MONTHS = {"2013-01": GAMES_2013, "2021-10": GAMES_2021}

#: (key, uci) -> Counter of (month, speed, band, rating group, white-view result, mover's rating)
Truth = dict[tuple[int, str], Counter[tuple[str, str, int, int, str, int]]]

#: lila-openingexplorer's `RatingGroup::select_avg` bounds, written again from its source: a game
#: belongs to the group of (white + black) / 2 rounded down; 2500 and above answer as 2500.
LICHESS_GROUPS = (0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500)


def lichess_group(white: int, black: int) -> int:
    average = (white + black) // 2
    return max(bound for bound in LICHESS_GROUPS if average >= bound)


#: One openings cache for this module, away from the user's (conftest.module_cache).
pytestmark = pytest.mark.usefixtures("module_cache")


def recount(path: Path, month: str, truth: Truth, lines: list[list[str]]) -> None:
    """Count the first plies of every kept game with python-chess, from White's view."""
    stream = io.StringIO(read_text(path))
    for game in games_where(stream, lambda h: keeps(h, MIN_RATING, ALL_SPEEDS, allow_bots=False)):
        headers = game.headers
        moves = list(game.mainline_moves())[:PLIES]
        if not moves:
            continue
        white_elo, black_elo = int(headers["WhiteElo"]), int(headers["BlackElo"])
        band = min(white_elo, black_elo) // 100 * 100
        group = lichess_group(white_elo, black_elo)
        result = {"1-0": "white", "0-1": "black", "1/2-1/2": "draws"}[headers["Result"]]
        kind = speed(headers["TimeControl"]) or ""
        board = game.board()
        for move in moves:
            key = chess.polyglot.zobrist_hash(board)
            rating = white_elo if board.turn == chess.WHITE else black_elo
            found = truth.setdefault((key, move.uci()), Counter())
            found[(month, kind, band, group, result, rating)] += 1
            board.push(move)
        lines.append([m.uci() for m in moves])


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Truth, list[list[str]]]:
    folder = tmp_path_factory.mktemp("warehouse")
    truth: Truth = {}
    lines: list[list[str]] = []
    rules = GameFilter(min_rating=MIN_RATING, speeds=frozenset(Speed))
    for month, path in MONTHS.items():
        need(path, f"real Lichess games ({month})")
        ingest(
            str(path), month, folder, IngestSettings(rules, plies=PLIES), runtime=Runtime(workers=1)
        )
        recount(path, month, truth, lines)
    return folder, truth, lines


@pytest.fixture(scope="module")
def hashes_before(warehouse: tuple[Path, Truth, list[list[str]]]) -> dict[str, str]:
    return file_hashes(warehouse[0])


@pytest.fixture(scope="module")
def server(
    warehouse: tuple[Path, Truth, list[list[str]]], hashes_before: dict[str, str]
) -> Iterator[str]:
    """A real uvicorn server on a free port, in a thread; its base URL."""
    from pipelines.serve.app import ServeSettings, open_app

    syzygy = [str(SYZYGY_DIR)] if (SYZYGY_DIR / "KQvK.rtbw").exists() else []
    with served_in_thread(open_app(ServeSettings(str(warehouse[0]), syzygy))) as url:
        yield url


@pytest.fixture(scope="module")
def client(server: str) -> Any:
    return berserk.Client(explorer_url=server, tablebase_url=server)


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            return exc.code, json.loads(body)
        except ValueError:
            return exc.code, body.decode()


# --- the explorer ----------------------------------------------------------------------------


def expected(
    truth: Truth,
    board: chess.Board,
    months: set[str] | None = None,
    speeds: set[str] | None = None,
    groups: set[int] | None = None,
) -> dict[str, dict[str, int]]:
    """Counts per move from White's view and the movers' mean rating rounded half up (as
    lila-openingexplorer's `Stats::average_rating`)."""
    key = chess.polyglot.zobrist_hash(board)
    found: dict[str, dict[str, int]] = {}
    for move in board.legal_moves:
        counts = truth.get((key, move.uci()))
        if not counts:
            continue
        row = {"white": 0, "draws": 0, "black": 0}
        ratings = 0
        for (month, kind, _, group, result, rating), n in counts.items():
            if months is not None and month not in months:
                continue
            if speeds is not None and kind not in speeds:
                continue
            if groups is not None and group not in groups:
                continue
            row[result] += n
            ratings += rating * n
        games = sum(row.values())
        if games:
            average = int(Fraction(ratings, games) + Fraction(1, 2))
            found[move.uci()] = {**row, "averageRating": average}
    return found


def shown(answer: dict[str, Any]) -> dict[str, dict[str, int]]:
    fields = ("white", "draws", "black", "averageRating")
    return {m["uci"]: {k: m[k] for k in fields} for m in answer["moves"]}


def early_paths(lines: list[list[str]], plies: int = 6, count: int = 40) -> list[list[str]]:
    """Distinct move paths of up to `plies` plies from the games, the most common first."""
    paths: Counter[tuple[str, ...]] = Counter()
    for line in lines:
        for n in range(plies + 1):
            paths[tuple(line[:n])] += 1
    return [list(p) for p, _ in paths.most_common(count)]


@pytest.mark.slow
def test_explorer_counts_every_move(
    client: Any, warehouse: tuple[Path, Truth, list[list[str]]]
) -> None:
    _, truth, lines = warehouse
    for path in early_paths(lines):
        board = chess.Board()
        for uci in path:
            board.push_uci(uci)
        answer = client.opening_explorer.get_lichess_games(play=path or None)
        want = expected(truth, board)
        assert shown(answer) == want, path
        for key in ("white", "draws", "black"):
            assert answer[key] == sum(row[key] for row in want.values())
        for move in answer["moves"]:
            assert move["san"] == board.san(chess.Move.from_uci(move["uci"]))
        assert answer["topGames"] == [] and answer["recentGames"] == []


def test_explorer_from_a_fen_and_castling(
    client: Any, warehouse: tuple[Path, Truth, list[list[str]]]
) -> None:
    """Positions given by FEN; castling written e1g1 as Lichess writes it."""
    _, truth, lines = warehouse
    castled = 0
    for line in lines:
        board = chess.Board()
        for uci in line[:12]:
            move = chess.Move.from_uci(uci)
            if board.is_castling(move) and castled < 5:
                castled += 1
                answer = client.opening_explorer.get_lichess_games(position=board.fen())
                assert shown(answer) == expected(truth, board)
                assert uci in shown(answer) and uci[2] in "cg"
            board.push(move)
    assert castled == 5


def test_explorer_filters_and_history(
    client: Any, warehouse: tuple[Path, Truth, list[list[str]]]
) -> None:
    _, truth, _ = warehouse
    board = chess.Board()
    board.push_uci("e2e4")
    answer = client.opening_explorer.get_lichess_games(
        play=["e2e4"], speeds=["blitz", "ultraBullet"], ratings=["1600", "1800"]
    )
    want = expected(truth, board, speeds={"blitz", "ultrabullet"}, groups={1600, 1800})
    assert shown(answer) == want and want
    answer = client.opening_explorer.get_lichess_games(
        play=["e2e4"], since="2021-01", until="2021-12", history=True, moves=2
    )
    want = expected(truth, board, months={"2021-10"})
    top = sorted(
        want.items(), key=lambda kv: (-(kv[1]["white"] + kv[1]["draws"] + kv[1]["black"]), kv[0])
    )[:2]
    assert shown(answer) == dict(top)
    assert [h["month"] for h in answer["history"]] == ["2021-10"]
    total = {k: sum(r[k] for r in want.values()) for k in ("white", "draws", "black")}
    assert {k: answer["history"][0][k] for k in total} == total
    assert {k: answer[k] for k in total} == total
    both = client.opening_explorer.get_lichess_games(play=["e2e4"], history=True)
    assert [h["month"] for h in both["history"]] == ["2013-01", "2021-10"]


def test_explorer_rating_groups_are_lichess_averages(
    client: Any, warehouse: tuple[Path, Truth, list[list[str]]]
) -> None:
    """`ratings` selects games by the group of the players' average rating (not the weaker
    player's), one group or several; a number names the group it falls in, as on Lichess."""
    _, truth, lines = warehouse
    checked = 0
    for path in early_paths(lines, plies=4, count=12):
        board = chess.Board()
        for uci in path:
            board.push_uci(uci)
        for group in LICHESS_GROUPS:
            answer = client.opening_explorer.get_lichess_games(
                play=path or None, ratings=[str(group)]
            )
            want = expected(truth, board, groups={group})
            assert shown(answer) == want, (path, group)
            checked += bool(want)
        answer = client.opening_explorer.get_lichess_games(
            play=path or None, ratings=["1800", "2200"], speeds=["blitz"]
        )
        assert shown(answer) == expected(truth, board, groups={1800, 2200}, speeds={"blitz"})
    assert checked >= 30
    weaker = client.opening_explorer.get_lichess_games(ratings=["1500"])
    assert shown(weaker) == expected(truth, chess.Board(), groups={1400})
    assert client.opening_explorer.get_lichess_games(ratings=["2900"])["moves"] == []


def test_months_ingested_before_rating_groups(
    warehouse: tuple[Path, Truth, list[list[str]]], tmp_path: Path
) -> None:
    """A warehouse whose 2013-01 partition predates the rating columns: counts as before,
    averageRating null with a note for those moves, `ratings` refused unless since/until
    leaves that month out."""
    from pipelines.serve.explorer import BadRequest, Explorer
    from pipelines.warehouse.layout import partition_file

    folder, truth, _ = warehouse
    old = tmp_path / "warehouse"
    write_legacy_partition(partition_file(folder, "2013-01"), partition_file(old, "2013-01"))
    write_manifest_for(partition_file(old, "2013-01"))
    new = partition_file(old, "2021-10")
    new.parent.mkdir(parents=True)
    new.write_bytes(partition_file(folder, "2021-10").read_bytes())
    write_manifest_for(new)
    explorer = Explorer(old)
    board = chess.Board()
    board.push_uci("e2e4")
    answer = explorer.lichess({"play": "e2e4"})
    want = expected(truth, board)
    assert {u: {k: r[k] for k in ("white", "draws", "black")} for u, r in want.items()} == {
        m["uci"]: {k: m[k] for k in ("white", "draws", "black")} for m in answer["moves"]
    }
    old_moves = expected(truth, board, months={"2013-01"})
    recent_only = expected(truth, board, months={"2021-10"})
    for move in answer["moves"]:
        if move["uci"] in old_moves:
            assert move["averageRating"] is None
        else:
            assert move["averageRating"] == recent_only[move["uci"]]["averageRating"]
    assert "2013-01" in answer["notes"][0] and "re-ingest" in answer["notes"][0]
    with pytest.raises(BadRequest, match="2013-01.*re-ingest"):
        explorer.lichess({"play": "e2e4", "ratings": "1600"})
    recent = explorer.lichess({"play": "e2e4", "ratings": "1600", "since": "2021-10"})
    assert shown(recent) == expected(truth, board, months={"2021-10"}, groups={1600})
    # No rating note; the note every answer of a warehouse ingest alone filled has: its months
    # are counted from the move statistics, without games (docs/serve.md).
    assert recent["notes"] == [
        "months 2021-10 are counted from the move statistics (the plies ingest counted, each "
        "visit of a position) and have no games: index them with chesspipe explorer index"
    ]
    only_old = tmp_path / "only-old"
    write_legacy_partition(partition_file(folder, "2013-01"), partition_file(only_old, "2013-01"))
    write_manifest_for(partition_file(only_old, "2013-01"))
    alone = Explorer(only_old).lichess({"play": "e2e4"})
    assert alone["moves"] and all(m["averageRating"] is None for m in alone["moves"])
    assert "2013-01" in alone["notes"][0]


def test_explorer_opening_names(client: Any) -> None:
    answer = client.opening_explorer.get_lichess_games(
        play=["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6"]
    )
    assert answer["opening"] == {"eco": "B90", "name": "Sicilian Defense: Najdorf Variation"}
    start = client.opening_explorer.get_lichess_games()
    assert start["opening"] is None
    assert client.opening_explorer.get_lichess_games(play=["e2e4"])["opening"]["eco"] == "B00"


def test_bad_requests(server: str) -> None:
    for query, words in (
        ("fen=nonsense", "invalid fen"),
        ("play=e2e5", "illegal move"),
        ("play=e2e4,e2e4", "illegal move"),
        ("speeds=hyperbullet", "unknown speed"),
        ("ratings=high", "unknown rating group"),
        ("ratings=-1", "unknown rating group"),
        ("since=2021-13", "since"),
        ("variant=atomic", "variant"),
        ("moves=-1", "moves"),
    ):
        status, body = get(f"{server}/lichess?{query}")
        assert status == 400 and words in body["error"], query
    status, body = get(f"{server}/standard?fen=8/8/8/8/8/8/8/8_w_-_-_0_1")
    assert status == 400 and "fen" in body["error"]
    status, body = get(f"{server}/standard")
    assert status == 400
    assert get(f"{server}/nothing-here")[0] == 404
    assert get(f"{server}/standard?fen={urllib.parse.quote(chess.STARTING_FEN)}")[0] == 404


# --- the tablebase ---------------------------------------------------------------------------


def materials(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.rtbw") if (folder / f"{p.stem}.rtbz").exists())


def playable_position(material: str, rng: random.Random) -> chess.Board:
    """A random legal position of a material (as `endgames sample` draws them), not game over."""
    while True:
        board = random_position(material, rng)
        if not board.is_checkmate() and not board.is_stalemate():
            return board


def category_of(wdl: int) -> str:
    return {2: "win", 1: "cursed-win", 0: "draw", -1: "blessed-loss", -2: "loss"}[wdl]


def test_tablebase_every_material(client: Any) -> None:
    folder = need(SYZYGY_DIR / "KQvK.rtbw", "Syzygy 3-4-piece tables").parent
    rng = random.Random(7)
    with chess.syzygy.open_tablebase(str(folder)) as tablebase:
        found = materials(folder)
        assert len(found) >= 30
        for material in found:
            for _ in range(2):
                board = playable_position(material, rng)
                answer = client.tablebase.look_up(board.fen())
                wdl, dtz = tablebase.probe_wdl(board), tablebase.probe_dtz(board)
                assert answer["category"] == category_of(wdl), board.fen()
                assert answer["dtz"] == dtz and answer["dtm"] is None
                assert not answer["checkmate"] and not answer["variant_win"]
                assert answer["insufficient_material"] == board.is_insufficient_material()
                assert len(answer["moves"]) == board.legal_moves.count()
                best = []
                for move in answer["moves"]:
                    child = board.copy()
                    child.push_uci(move["uci"])
                    assert move["san"] == board.san(chess.Move.from_uci(move["uci"]))
                    assert move["zeroing"] == board.is_zeroing(chess.Move.from_uci(move["uci"]))
                    if child.is_checkmate():
                        assert move["checkmate"] and move["dtz"] == 0
                        assert move["category"] == "loss"
                        best.append(-3)
                        continue
                    child_wdl = tablebase.probe_wdl(child)
                    assert move["dtz"] == tablebase.probe_dtz(child), (board.fen(), move)
                    assert move["category"] == category_of(child_wdl)
                    best.append(child_wdl)
                # best first: the first move leaves the opponent the worst result there is
                assert best[0] == min(best), (board.fen(), answer["moves"][:3])
                if wdl == 2 and best[0] != -3:
                    # and the shortest way to zeroing: 1 ply for a zeroing move, else 1 + |dtz|
                    steps = [
                        1 if m["zeroing"] else 1 + abs(m["dtz"])
                        for m, w in zip(answer["moves"], best, strict=True)
                        if w == -2
                    ]
                    assert steps[0] == min(steps), board.fen()


def test_tablebase_mainline_and_uncovered(server: str) -> None:
    need(SYZYGY_DIR / "KQvK.rtbw", "Syzygy 3-4-piece tables")
    for fen, winner in (
        ("4k3/8/8/8/8/8/8/4K2Q w - - 0 1", "w"),
        ("8/8/8/4k3/8/8/3p4/K7 b - - 0 1", "b"),
        ("8/8/8/4k3/8/8/8/K6N w - - 0 1", None),
    ):
        status, answer = get(f"{server}/standard/mainline?fen={urllib.parse.quote(fen)}")
        assert status == 200, answer
        board = chess.Board(fen)
        for step in answer["mainline"]:
            board.push_uci(step["uci"])
        assert answer["winner"] == winner
        assert board.is_checkmate() == (winner is not None)
    five = "8/8/8/7k/8/8/2PP4/K3R3 w - - 0 1"
    assert get(f"{server}/standard?fen={urllib.parse.quote(five)}")[0] == 404


# --- the page in a real browser --------------------------------------------------------------


@pytest.mark.slow
def test_page_in_chromium(server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with chromium_driver(1100, 800) as driver:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        driver.get(server + "/")
        wait = WebDriverWait(driver, 20)

        def ready(play: list[str], contains: str = "") -> None:
            def done(d: Any) -> bool:
                value = d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") or ""
                return value.startswith(",".join(play) + "|") and contains in value

            wait.until(done)

        def rows() -> dict[str, int]:
            found = {}
            for row in driver.find_elements(By.CSS_SELECTOR, "tr.move"):
                count = row.find_element(By.CLASS_NAME, "count").text
                found[str(row.get_attribute("data-uci"))] = int(count)
            return found

        def api(play: list[str], extra: str = "") -> dict[str, int]:
            query = f"play={','.join(play)}{extra}"
            answer = get(f"{server}/lichess?{query}")[1]
            return {m["uci"]: m["white"] + m["draws"] + m["black"] for m in answer["moves"]}

        play: list[str] = []
        ready(play)
        assert rows() == api(play)
        for _ in range(3):
            first = driver.find_elements(By.CSS_SELECTOR, "tr.move")[0]
            play.append(str(first.get_attribute("data-uci")))
            first.click()
            ready(play)
            assert rows() == api(play)
        assert driver.find_element(By.ID, "opening").text
        # The answer's notes are shown: this warehouse has no explorer data (ingest alone).
        assert "have no games" in driver.find_element(By.ID, "notes").text
        assert len(driver.find_elements(By.CSS_SELECTOR, "#board .pc")) >= 28
        assert driver.find_elements(By.CSS_SELECTOR, "#history svg rect")
        driver.find_element(By.ID, "speeds-blitz").click()
        speeds = "ultraBullet,bullet,rapid,classical,correspondence"
        ready(play, "speeds=")
        assert rows() == api(play, f"&speeds={speeds}")
        driver.find_element(By.ID, "back").click()
        ready(play[:-1], "speeds=")
        assert rows() == api(play[:-1], f"&speeds={speeds}")
        shot = tmp_path / "serve-page.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 1000
        with capsys.disabled():
            print(f"\nscreenshot of the page: {shot}")


def test_tablebase_on_the_page(server: str, tmp_path: Path) -> None:
    """The page's tablebase line for a few pieces agrees with the API (no browser needed:
    the page asks /position, then /standard)."""
    need(SYZYGY_DIR / "KQvK.rtbw", "Syzygy 3-4-piece tables")
    fen = "4k3/8/8/8/8/8/8/4K2Q w - - 0 1"
    status, position = get(f"{server}/position?fen={urllib.parse.quote(fen)}")
    assert status == 200 and position["pieces"] == 3 and position["tablebase"]


# --- several processes -----------------------------------------------------------------------


@pytest.mark.slow
def test_worker_processes_answer_alike(
    server: str, warehouse: tuple[Path, Truth, list[list[str]]]
) -> None:
    """`chesspipe serve --workers 2` (uvicorn's worker processes, settings handed over by the
    environment) answers as the in-process server; a bad worker count is a one-line error."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT, run_cli

    bad = run_cli("serve", "--warehouse", str(warehouse[0]), "--workers", "0", check=False)
    assert bad.returncode != 0 and "--workers" in bad.stderr and "Traceback" not in bad.stderr
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pipelines", "serve", "--warehouse", str(warehouse[0]),
               "--port", str(port), "--workers", "2"]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.1)
        for query in ("play=e2e4&history=true", "play=d2d4,d7d5&ratings=1800,2000"):
            url = f"/lichess?{query}"
            assert get(f"http://127.0.0.1:{port}{url}") == get(f"{server}{url}")
    finally:
        process.terminate()
        process.wait(30)


# --- read-only -------------------------------------------------------------------------------


def test_warehouse_unchanged(
    server: str, warehouse: tuple[Path, Truth, list[list[str]]], hashes_before: dict[str, str]
) -> None:
    assert file_hashes(warehouse[0]) == hashes_before


@pytest.mark.slow  # (1.5 s or more: the fast lane leaves it out)
def test_moves_named_once_answer_as_named_each_time(
    warehouse: tuple[Path, Truth, list[list[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Move names (UCI, SAN, opening after) are kept per position, a bounded number of
    positions: answers are the same as a fresh explorer's, however often asked."""
    import pipelines.serve.explorer as explorer_module

    monkeypatch.setattr(explorer_module, "MOVE_NAMES", 3)
    Explorer = explorer_module.Explorer
    kept = Explorer(warehouse[0], cache_bytes=0)
    lines = [",".join(line[:plies]) for line in early_paths(warehouse[2], 4, 6) for plies in (0, 2)]
    for _ in range(2):
        for play in lines:
            fresh = Explorer(warehouse[0], cache_bytes=0)
            assert kept.lichess_json({"play": play}) == fresh.lichess_json({"play": play})
            fresh.close()
            assert len(kept._move_names) <= 3
    kept.close()


def test_server_processes_share_the_memory_of_one(
    warehouse: tuple[Path, Truth, list[list[str]]],
) -> None:
    from pipelines.explorer.blocks import CACHE_BYTES, SHARED_CACHE
    from pipelines.serve.answer_cache import CACHE_BYTES as ANSWERS
    from pipelines.serve.app import ServeSettings, open_app

    try:
        app = open_app(ServeSettings(str(warehouse[0]), workers=2))
        assert SHARED_CACHE.limit == CACHE_BYTES // 2
        assert app.state.explorer.cache.max_bytes == ANSWERS // 2
    finally:
        open_app(ServeSettings(str(warehouse[0])))
    assert SHARED_CACHE.limit == CACHE_BYTES
