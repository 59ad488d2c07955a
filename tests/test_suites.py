"""Opening suites: exits against a python-chess recount, the files against python-chess's EPD
and PGN readers and fastchess (built from the shared sources), evaluations against a fresh
Stockfish run, `suite learn` against fastchess's own pentanomial count, and the shared fishtest
suites read whole."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import zipfile
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import chess.polyglot
import pytest

from bench.data import BUILT_TOOLS, SUITES_DIR
from pipelines.errors import ChesspipeError
from pipelines.suites.build import EmptySuite, build_suite, suite_manifest_path
from pipelines.suites.check import check_suite
from pipelines.suites.learn import learn_suite
from pipelines.suites.settings import LearnSettings, SuiteSettings
from tests.conftest import GAMES_2013, first_games, need, need_built, need_program, run_cli

#: Games of the 2013 sample the suites are built from (a recount of all takes too long).
GAMES = 6000
#: Plies the statistics count (ingest's default).
COUNTED = 20


@pytest.fixture(scope="module")
def games_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return first_games(GAMES_2013, GAMES, tmp_path_factory.mktemp("suite-games") / "games.pgn")


@pytest.fixture(scope="module")
def warehouse(games_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pipelines.games.game_filter import GameFilter
    from pipelines.ingest.run import ingest
    from pipelines.ingest.settings import IngestSettings
    from schemas.speed import Speed

    folder = tmp_path_factory.mktemp("suite-warehouse")
    every_game = IngestSettings(GameFilter(0, frozenset(Speed), allow_bots=True))
    ingest(str(games_file), "2013-01", folder, every_game)
    return folder


class Recount:
    """The sample's games as python-chess reads them: each (position, move)'s games within the
    counted plies, and the position each leads to; and each game's moves."""

    def __init__(self, path: Path) -> None:
        self.games: collections.Counter[tuple[int, str]] = collections.Counter()
        self.child: dict[tuple[int, str], int] = {}
        self.white_to_move: dict[int, bool] = {}
        with open(path) as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                if game.headers.get("Result") not in ("1-0", "0-1", "1/2-1/2"):
                    continue
                board = game.board()
                for move in list(game.mainline_moves())[:COUNTED]:
                    key = chess.polyglot.zobrist_hash(board)
                    board.push(move)
                    self.games[(key, move.uci())] += 1
                    self.child[(key, move.uci())] = chess.polyglot.zobrist_hash(board)
                    self.white_to_move[self.child[(key, move.uci())]] = board.turn

    def exits(self, first: int, last: int, least_games: int, stop_early: int) -> dict[int, int]:
        """The exits as the suite's rule defines them, over this recount: from the start
        position, ply by ply, each position reached (not reached before) through moves played
        by at least `stop_early` games counts the games of those moves; an exit has at least
        `least_games` at plies first..last."""
        moves: dict[int, list[tuple[str, int]]] = collections.defaultdict(list)
        for (key, move), games in self.games.items():
            if games >= stop_early:
                moves[key].append((move, games))
        start = chess.polyglot.zobrist_hash(chess.Board())
        seen, frontier, found = {start}, {start}, {}
        for ply in range(1, last + 1):
            arrivals: collections.Counter[int] = collections.Counter()
            for key in frontier:
                for move, games in moves[key]:
                    child = self.child[(key, move)]
                    if child not in seen:
                        arrivals[child] += games
            seen |= set(arrivals)
            frontier = set(arrivals)
            if ply >= first:
                found.update({k: n for k, n in arrivals.items() if n >= least_games})
        return found


@pytest.fixture(scope="module")
def recount(games_file: Path) -> Recount:
    return Recount(games_file)


def suite_exits(path: Path) -> dict[int, int]:
    """An EPD suite's exits as python-chess reads them: key -> the games its c1 says."""
    found = {}
    for line in path.read_text().splitlines():
        board, ops = chess.Board.from_epd(line)
        key = chess.polyglot.zobrist_hash(board)
        assert key not in found, f"a position twice: {line}"
        found[key] = int(str(ops["c1"]).split()[1])
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "last", "least", "early"),
    [(8, 16, 5, None), (3, 12, 6, 2), (16, 16, 3, None), (1, 4, 40, 1)],
)
def test_exits_equal_a_python_chess_recount(
    warehouse: Path,
    recount: Recount,
    tmp_path: Path,
    first: int,
    last: int,
    least: int,
    early: int | None,
) -> None:
    out = tmp_path / "suite.epd"
    settings = SuiteSettings(first_ply=first, last_ply=last, min_games=least, stop_early=early)
    manifest = build_suite(warehouse, "all", out, settings)
    expected = recount.exits(first, last, least, early or least)
    assert expected, "the oracle finds exits"
    assert suite_exits(out) == expected
    assert manifest.counts.written == manifest.counts.exits == len(expected)


def test_epd_lines_are_what_python_chess_and_their_lines_say(
    warehouse: Path, tmp_path: Path
) -> None:
    out = tmp_path / "suite.epd"
    manifest = build_suite(warehouse, "2013-01", out, SuiteSettings(4, 12, min_games=8))
    lines = out.read_text().splitlines()
    assert len(lines) == manifest.counts.written > 100
    for line in lines:
        board, ops = chess.Board.from_epd(line)
        replay = chess.Board()
        for san in str(ops["c0"]).split():
            if not san[0].isdigit():
                replay.push_san(san)
        # the line reaches the position, with its clocks (hmvc, fmvn)
        assert replay.fen() == board.fen(), line
        assert 4 <= len(replay.move_stack) <= 12
        assert ops["hmvc"] == replay.halfmove_clock and ops["fmvn"] == replay.fullmove_number
    written = json.loads(suite_manifest_path(out).read_text())
    assert written["sha256"] == manifest.sha256
    assert written["white_to_move"] == sum(" w " in line for line in lines)


def test_a_pgn_suite_holds_the_same_openings(warehouse: Path, tmp_path: Path) -> None:
    settings = SuiteSettings(6, 10, min_games=10)
    build_suite(warehouse, "all", tmp_path / "suite.epd", settings)
    build_suite(warehouse, "all", tmp_path / "suite.pgn", settings)
    ends = []
    with open(tmp_path / "suite.pgn") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            assert not game.errors
            ends.append(chess.polyglot.zobrist_hash(game.end().board()))
    assert sorted(ends) == sorted(suite_exits(tmp_path / "suite.epd"))


def test_a_draw_is_repeatable_and_mixes_sides_as_asked(warehouse: Path, tmp_path: Path) -> None:
    def drawn(name: str, **given: object) -> list[str]:
        out = tmp_path / f"{name}.epd"
        settings = SuiteSettings(6, 12, min_games=5, count=40, **given)  # type: ignore[arg-type]
        build_suite(warehouse, "all", out, settings)
        return out.read_text().splitlines()

    first, again, other = drawn("a", seed=1), drawn("b", seed=1), drawn("c", seed=2)
    assert first == again and first != other and len(first) == 40
    mixed = drawn("d", seed=1, white_share=0.75)
    assert sum(" w " in line for line in mixed) == 30
    blacks = drawn("e", side="black")
    assert blacks and all(" b " in line for line in blacks)


@pytest.mark.slow
def test_without_an_exit_nothing_is_written(warehouse: Path, tmp_path: Path) -> None:
    out = tmp_path / "suite.epd"
    with pytest.raises(EmptySuite, match="no position at plies 8..16 is reached by 100000"):
        build_suite(warehouse, "all", out, SuiteSettings(min_games=100_000))
    assert not out.exists() and not suite_manifest_path(out).exists()
    proc = run_cli(
        "suite", "build", "--warehouse", str(warehouse), "--out", str(out),
        "--min-games", "100000", check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not out.exists()
    inside = warehouse / "move_stats" / "suite.epd"
    proc = run_cli(
        "suite", "build", "--warehouse", str(warehouse), "--out", str(inside), check=False
    )
    assert proc.returncode == 1 and "warehouse" in proc.stderr and not inside.exists()
    proc = run_cli(
        "suite", "build", "--warehouse", str(warehouse), "--out", str(out), "--window=0..50",
        check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and "--evals" in proc.stderr
    proc = run_cli(
        "suite", "build", "--warehouse", str(warehouse), "--out", str(out), "--speeds", "bogus",
        check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stderr == "chesspipe: error: unknown speed(s) ['bogus']\n"
    with pytest.raises(ChesspipeError, match="1 of 1 months missing"):
        build_suite(warehouse, "2014-02", out)


def fresh_stockfish(board: chess.Board, nodes: int) -> tuple[int, tuple[int, int, int]]:
    """A fresh Stockfish's score (centipawns from the side to move) and WDL, a new game."""
    with chess.engine.SimpleEngine.popen_uci(need_program("stockfish")) as engine:
        engine.configure({"Threads": 1, "Hash": 16, "UCI_ShowWDL": True})
        info = engine.analyse(board, chess.engine.Limit(nodes=nodes), game=object())
    score = info["score"].pov(board.turn)
    wdl = info["wdl"].pov(board.turn)
    return score.score(mate_score=100_000), (wdl.wins, wdl.draws, wdl.losses)


@pytest.mark.slow
def test_a_window_keeps_exits_a_fresh_stockfish_scores_in_it(
    warehouse: Path, tmp_path: Path
) -> None:
    """Raw suite, analysed by the command, then built again with a window: every exit kept
    has the score and WDL a fresh Stockfish gives at the same nodes, inside the window."""
    store = tmp_path / "store"
    store.mkdir()
    raw = tmp_path / "raw.epd"
    build_suite(warehouse, "all", raw, SuiteSettings(6, 10, min_games=20, count=12, seed=5))
    nodes = "3000"
    run_cli(
        "evals", "analyse", "--warehouse", str(store), "--suite", str(raw),
        "--engine", "stockfish", "--nodes", nodes, "--wdl", "--quiet",
    )  # fmt: skip
    windowed = tmp_path / "windowed.epd"
    run_cli(
        "suite", "build", "--warehouse", str(warehouse), "--out", str(windowed),
        "--plies", "6..10", "--min-games", "20", "--evals", str(store), "--window=-60..60",
    )  # fmt: skip
    raw_keys = set(suite_exits(raw))
    kept = 0
    for line in windowed.read_text().splitlines():
        board, ops = chess.Board.from_epd(line)
        assert chess.polyglot.zobrist_hash(board) in raw_keys  # (only the analysed have one)
        cp, wdl = fresh_stockfish(board, int(nodes))
        assert ops["ce"] == cp and -60 <= cp <= 60
        assert ops["c2"] == "wdl {} {} {}".format(*wdl)
        kept += 1
    manifest = json.loads(suite_manifest_path(windowed).read_text())
    counts = manifest["counts"]
    assert counts["written"] == kept and kept + counts["outside"] == 12
    assert counts["unevaluated"] == counts["side"] - 12
    report = check_suite(windowed)
    assert report.evaluations.count == kept and report.draw_rates.count == kept


def test_check_counts_problems_and_duplicates(tmp_path: Path) -> None:
    suite = tmp_path / "odd.epd"
    suite.write_text(
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1\n"
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - hmvc 0; fmvn 1; ce 20;\n"
        'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - hmvc 0; fmvn 1; c0 "1. e4";\n'
        "this is no position\n"
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKKNR w KQkq -\n"
        "\n"
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3\n"
    )
    report = check_suite(suite)
    assert report.openings == 3 and report.duplicates == 1
    assert report.problems == {"bad_position": 2, "line_mismatch": 1}
    assert [p.number for p in report.first_problems] == [3, 4, 5]
    assert report.white_to_move == 1 and report.plies == {1: 2, 4: 1}
    assert report.evaluations.count == 1 and report.bias.mean == -20
    proc = run_cli("evals", "analyse", "--warehouse", str(tmp_path), "--suite", str(suite),
                   "--engine", "stockfish", check=False)  # fmt: skip
    assert proc.returncode == 1 and "opening 3: line_mismatch" in proc.stderr
    proc = run_cli("suite", "check", str(tmp_path / "absent.epd"), check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1


#: The shared suites and their openings (SOURCE.md's table).
SHARED_SUITES = {
    "UHO_4060_v4.epd.zip": 241_670,
    "noob_3moves.epd.zip": 150_932,
    "8moves_v3.pgn.zip": 34_700,
    "popularpos_lichess_v3.epd.zip": 200_000,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHARED_SUITES))
def test_check_reads_the_shared_suites_whole(name: str) -> None:
    path = need(SUITES_DIR / name, f"fishtest's suite {name}")
    report = check_suite(path)
    assert report.problems == {} and report.openings == SHARED_SUITES[name]
    with zipfile.ZipFile(path) as archive:
        text = archive.read(archive.namelist()[0]).decode()
    if name.endswith(".epd.zip"):
        # independent of our reader: the four fields of each line
        fields = [" ".join(line.split()[:4]) for line in text.splitlines() if line.strip()]
        assert len(fields) == report.openings
        assert len(fields) - len(set(fields)) == report.duplicates
        assert sum(f.split()[1] == "w" for f in fields) == report.white_to_move
    else:
        assert text.count("[Event ") == report.openings
    assert report.plies  # (UHO: 16 plies; noob: 6; 8moves: 16)


def need_fastchess() -> str:
    return need_built(BUILT_TOOLS / "fastchess" / "fastchess", "fastchess")


def play(suite: Path, kind: str, out: Path, rounds: int) -> str:
    """A short fastchess match from the suite: Stockfish at 1000 nodes against 2000 (one
    Stockfish against itself at one node count plays the same game with either colour)."""
    stockfish = need_program("stockfish")
    proc = subprocess.run(
        [
            need_fastchess(), "-engine", f"cmd={stockfish}", "name=a", "nodes=1000",
            "-engine", f"cmd={stockfish}", "name=b", "nodes=2000", "-each", "tc=inf",
            "-rounds", str(rounds), "-games", "2", "-repeat", "-concurrency", "2",
            "-openings", f"file={suite}", f"format={kind}", "order=sequential",
            "-pgnout", f"file={out}",
        ],
        capture_output=True, text=True, timeout=600, check=False,
        cwd=out.parent,  # (fastchess saves its config.json where it runs)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Illegal" not in proc.stdout and "Failed to set" not in proc.stdout
    return proc.stdout


@pytest.mark.slow
def test_fastchess_plays_our_suites_and_learn_counts_as_it_does(
    warehouse: Path, tmp_path: Path
) -> None:
    epd, pgn = tmp_path / "suite.epd", tmp_path / "suite.pgn"
    settings = SuiteSettings(6, 10, min_games=15, count=6, seed=3)
    build_suite(warehouse, "all", epd, settings)
    build_suite(warehouse, "all", pgn, settings)
    starts = {chess.Board.from_epd(line)[0].epd() for line in epd.read_text().splitlines()}
    matches = {kind: tmp_path / f"match-{kind}.pgn" for kind in ("epd", "pgn")}
    said = {kind: play(path, kind, matches[kind], 6) for kind, path in (("epd", epd), ("pgn", pgn))}
    games = {kind: [] for kind in matches}
    for kind, path in matches.items():
        with open(path) as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                games[kind].append(game)
    assert len(games["epd"]) == len(games["pgn"]) == 12
    # EPD openings start from their FEN; PGN openings are played as book moves from the start
    assert {g.board().epd() for g in games["epd"]} == starts
    for game in games["pgn"]:
        board = game.board()
        for move in list(game.mainline_moves()):
            board.push(move)
            if board.epd() in starts:
                break
        assert board.epd() in starts

    # suite learn against fastchess's own count: its pentanomial line, and a recount by FEN
    by_start = collections.defaultdict(lambda: [0, 0, 0])
    for game in games["epd"]:
        by_start[game.board().epd()][["1-0", "1/2-1/2", "0-1"].index(game.headers["Result"])] += 1
    dropped = {p for p, (w, d, b) in by_start.items() if d / (w + d + b) < 0.25}
    out = tmp_path / "learned.epd"
    if dropped == starts:  # (every pair decisive: then nothing may be written)
        with pytest.raises(ChesspipeError, match="every exit .* is dropped"):
            learn_suite([matches["epd"]], epd, out, LearnSettings(2, (0.25, 1.0)))
        assert not out.exists()
        return
    result = learn_suite([matches["epd"]], epd, out, LearnSettings(2, (0.25, 1.0)))
    ptnml = re.findall(r"Ptnml\(0-2\): \[([0-9, ]+)\]", said["epd"])[-1]
    assert result.pentanomial == [int(n) for n in ptnml.split(",")]
    recorded = {e.position: [e.white, e.draws, e.black] for e in result.exits}
    assert recorded == dict(by_start)
    kept = {chess.Board.from_epd(line)[0].epd() for line in out.read_text().splitlines()}
    assert kept == starts - dropped and result.dropped == len(dropped)
    assert result.matched == 12 and result.games_read == 12


def test_learn_refuses_matches_from_other_openings(warehouse: Path, tmp_path: Path) -> None:
    suite = tmp_path / "suite.epd"
    build_suite(warehouse, "all", suite, SuiteSettings(6, 6, min_games=30))
    match = tmp_path / "match.pgn"
    match.write_text('[White "a"]\n[Black "b"]\n[Result "1-0"]\n\n1. h4 h5 2. g4 1-0\n\n')
    with pytest.raises(ChesspipeError, match="none of the 1 games starts from an opening"):
        learn_suite([match], suite, tmp_path / "new.epd")
    assert not (tmp_path / "new.epd").exists()


@pytest.mark.slow
def test_from_position_games_count_from_their_fen(tmp_path: Path) -> None:
    """Match games from a FEN, counted from it, equal a python-chess recount; without
    --from-position keep the run says how to keep them."""
    match = tmp_path / "match.pgn"
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    match.write_text(
        f'[White "a"]\n[Black "b"]\n[Result "1-0"]\n[SetUp "1"]\n[FEN "{fen}"]\n\n'
        "3. Bb5 a6 4. Ba4 Nf6 5. O-O 1-0\n\n"
        f'[White "b"]\n[Black "a"]\n[Result "1/2-1/2"]\n[SetUp "1"]\n[FEN "{fen}"]\n\n'
        "3. Bc4 Bc5 4. c3 Nf6 1/2-1/2\n\n"
        '[White "a"]\n[Black "b"]\n[Result "0-1"]\n\n1. e4 e5 2. Nf3 Nc6 0-1\n\n'
    )
    warehouse = tmp_path / "wh"
    common = ("--month", "2030-01", "--warehouse", str(warehouse), "--speeds", "all",
              "--min-rating", "0", "--no-explorer")  # fmt: skip
    proc = run_cli("ingest", str(match), *common)
    assert "2 games start from a FEN and were dropped (--from-position keep" in proc.stderr
    proc = run_cli("ingest", str(match), *common, "--from-position", "keep", "--force")
    assert json.loads(proc.stdout)["games_kept"] == 3
    expected: collections.Counter[tuple[int, int, int]] = collections.Counter()
    with open(match) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for move in game.mainline_moves():
                key = chess.polyglot.zobrist_hash(board)
                expected[(key, move.from_square, move.to_square)] += 1
                board.push(move)
    from pipelines.warehouse.sql import run_query

    _, rows = run_query(warehouse, "SELECT key, move, sum(games) FROM move_stats GROUP BY ALL")
    found = collections.Counter()
    for key, move, games in rows:
        to_square, from_square = move & 63, (move >> 6) & 63
        found[(int(key), from_square, to_square)] += int(games)
    # castling is king takes rook in Polyglot: 5. O-O is e1h1 there, e1g1 in python-chess
    castle = [k for k in expected if k[1:] == (chess.E1, chess.G1)]
    for key in castle:
        expected[(key[0], chess.E1, chess.H1)] = expected.pop(key)
    assert found == expected


@pytest.mark.slow
@pytest.mark.parametrize("target", ["suite.epd", "suite.json"])
def test_kill_9_at_each_publish_step_then_a_rerun_equals_a_whole_run(
    warehouse: Path, tmp_path: Path, target: str
) -> None:
    """`suite build` killed with -9 right after it renames the suite, or its manifest, onto
    the previous pair: the suite read is whole (the new one beside the previous manifest, whose
    sha256 tells, or the new pair); the next run publishes what an uninterrupted run does and
    leaves no temporary file."""
    import signal
    import sys
    import time

    from pipelines.files import file_sha256
    from tests.conftest import ROOT
    from tests.test_monthly_build import STOP_AFTER_RENAME, stopped

    reference = tmp_path / "reference" / "suite.epd"
    reference.parent.mkdir()
    build = ["suite", "build", "--warehouse", str(warehouse), "--plies", "6..10"]
    run_cli(*build, "--out", str(reference), "--min-games", "3")
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "suite.epd"
    run_cli(*build, "--out", str(out), "--min-games", "20")  # the previous pair
    previous = json.loads(suite_manifest_path(out).read_text())
    proc = subprocess.Popen(
        [sys.executable, "-c", STOP_AFTER_RENAME, str(folder / target), *build, "--out",
         str(out), "--min-games", "3"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not stopped(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    manifest = json.loads(suite_manifest_path(out).read_text())
    assert out.read_bytes() == reference.read_bytes()  # the suite renamed in is whole
    if target == "suite.epd":  # the new suite beside the previous manifest: its sha256 tells
        assert manifest == previous and manifest["sha256"] != file_sha256(out)
    else:
        assert manifest["sha256"] == file_sha256(out)
    run_cli(*build, "--out", str(out), "--min-games", "3")
    assert out.read_bytes() == reference.read_bytes()
    assert json.loads(suite_manifest_path(out).read_text())["sha256"] == file_sha256(out)
    # (the output's lock file stays, empty, as a book's does)
    assert sorted(p.name for p in folder.iterdir()) == [
        ".suite.epd.lock",
        "suite.epd",
        "suite.json",
    ]
