"""The evaluation store, `evals analyse` (a real Stockfish through python-chess) and `evals
import` (a Lichess-format dump made here by Stockfish), checked against fresh engine runs."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import chess
import chess.engine
import chess.polyglot
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from pipelines.evals.analyse import EngineProblem, analyse_positions
from pipelines.evals.lichess_import import import_dump
from pipelines.evals.positions import book_moves, walk
from pipelines.evals.settings import AnalysisSettings
from pipelines.evals.store import (
    EngineLine,
    Evaluation,
    compact,
    read_evaluations,
    write_part,
)
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.check import check_warehouse
from pipelines.warehouse.evals_files import eval_parts, evals_dir
from pipelines.warehouse.sql import run_query
from schemas.polyglot import decode_move, open_book
from schemas.speed import Speed
from tests.conftest import GAMES_2021, ROOT, need, need_program, run_cli

NODES = 2000
FAKE = ROOT / "tests" / "fake_uci.py"


@pytest.fixture(scope="module")
def stockfish() -> str:
    return need_program("stockfish")


@pytest.fixture(scope="module")
def real_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real 2021-10 sample, every game kept: a month of statistics."""
    source = need(GAMES_2021, "real Lichess games (2021-10 sample)")
    folder = tmp_path_factory.mktemp("evals-warehouse")
    every_game = IngestSettings(GameFilter(0, frozenset(Speed), allow_bots=True))
    ingest(str(source), "2021-10", folder, every_game)
    return folder


@pytest.fixture(scope="module")
def book(real_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("evals-book") / "book.bin"
    run_cli("book", "build", "--warehouse", str(real_warehouse), "--months", "2021-10",
            "--out", str(out), "--min-games", "12", "--min-score", "0")  # fmt: skip
    return out


def fresh_scores(
    stockfish: str, boards: list[chess.Board], nodes: int = NODES
) -> list[chess.engine.PovScore]:
    """A fresh Stockfish's scores at a node limit: Threads 1, Hash 16, a new game each."""
    with chess.engine.SimpleEngine.popen_uci(stockfish) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        limit = chess.engine.Limit(nodes=nodes)
        return [engine.analyse(board, limit, game=object())["score"] for board in boards]


def fake_engine(tmp_path: Path, mode: str) -> Path:
    script = tmp_path / f"fake-{mode}"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} {mode}\n")
    script.chmod(0o755)
    return script


def book_boards(path: Path) -> list[chess.Board]:
    return list(walk(book_moves(open_book(path))).boards.values())


def row(key: int, cp: int | None, depth: int, *, mate: int | None = None, source: str = "analyse",
        nodes: int = 1000) -> Evaluation:  # fmt: skip
    when = datetime(2024, 1, 1, tzinfo=UTC)
    return Evaluation(key, "8/8/8/8/8/8/8/8 w - -", cp, mate, None, None, depth, nodes,
                      f"nodes {nodes}", "test", source, when)  # fmt: skip


def test_the_deepest_evaluation_wins_on_merge_and_compaction_keeps_it(tmp_path: Path) -> None:
    write_part(tmp_path, [row(1, 10, 8), row(2, 20, 12), row(3, None, 5, mate=2)])
    write_part(tmp_path, [row(1, -15, 14), row(2, 99, 9), row(2, 98, 20)])  # one part, key 2 twice
    write_part(tmp_path, [row(3, 0, 1, source="rules", nodes=0)])
    before = read_evaluations(tmp_path)
    assert {k: (e.cp, e.depth) for k, e in before.items()} == {1: (-15, 14), 2: (98, 20), 3: (0, 1)}
    assert len(eval_parts(tmp_path)) == 3
    done = compact(tmp_path)
    assert done.parts == 3 and done.positions == 3 and len(eval_parts(tmp_path)) == 1
    assert read_evaluations(tmp_path) == before
    merged = pq.read_table(eval_parts(tmp_path)[0])
    assert merged.column("key").to_pylist() == [1, 2, 3]


def test_the_evals_view_joins_move_stats_by_key(tmp_path: Path, real_warehouse: Path) -> None:
    start = chess.polyglot.zobrist_hash(chess.Board())
    warehouse = tmp_path / "w"
    (warehouse / "move_stats").mkdir(parents=True)
    for child in (real_warehouse / "move_stats").iterdir():
        os.symlink(child, warehouse / "move_stats" / child.name)
    write_part(warehouse, [row(start, 25, 10), row(start + 1, None, 3, mate=-4)])
    columns, rows = run_query(
        warehouse,
        "SELECT uci(m.move), sum(m.games), any_value(e.cp), any_value(e.score) "
        "FROM move_stats m JOIN evals e USING (key) GROUP BY m.move ORDER BY 2 DESC LIMIT 1",
    )
    assert rows[0][0] == "e2e4" and rows[0][1] > 100 and rows[0][2:] == (25, 25)
    _, mated = run_query(warehouse, f"SELECT score FROM evals WHERE key = {start + 1}")
    assert mated == [(-(100_000 - 4),)]


@pytest.mark.slow
def test_analyse_agrees_with_a_fresh_engine_run_and_a_rerun_skips(
    tmp_path: Path, real_warehouse: Path, book: Path, stockfish: str
) -> None:
    boards = book_boards(book)
    assert 30 < len(boards) < 150
    # --months: the positions of the book those months build, with the book options given
    first = run_cli("evals", "analyse", "--warehouse", str(real_warehouse), "--months", "2021-10",
                    "--min-games", "12", "--min-score", "0", "--engine", stockfish,
                    "--nodes", str(NODES), "--workers", "2", "--quiet")  # fmt: skip
    done = json.loads(first.stdout)
    assert done["positions"] == len(boards) and done["failed"] == 0
    assert done["analysed"] + done["rules"] + done["skipped"] == len(boards)
    stored = read_evaluations(real_warehouse)
    # the book's positions, and those after the engine's own best moves no book move plays
    after_best = set()
    with chess.polyglot.open_reader(book) as reader:
        for board in boards:
            played = {entry.move for entry in reader.find_all(board)}
            pv = stored[chess.polyglot.zobrist_hash(board)].pv
            if played and pv and chess.Move.from_uci(pv.split()[0]) not in played:
                child = board.copy()
                child.push_uci(pv.split()[0])
                after_best.add(chess.polyglot.zobrist_hash(child))
    assert after_best and done["after_best_moves"]["positions"] == len(after_best)
    assert set(stored) == {chess.polyglot.zobrist_hash(b) for b in boards} | after_best
    sampled = boards[:: max(1, len(boards) // 5)][:5]
    for board, fresh in zip(sampled, fresh_scores(stockfish, sampled), strict=True):
        evaluation = stored[chess.polyglot.zobrist_hash(board)]
        score = fresh.pov(board.turn)
        assert (evaluation.cp, evaluation.mate) == (score.score(), score.mate()), board.fen()
        assert evaluation.fen == " ".join(board.fen().split()[:4])
    # --book: the same positions, stored at a deeper limit than asked: all skipped
    again = json.loads(run_cli("evals", "analyse", "--warehouse", str(real_warehouse), "--book",
                               str(book), "--engine", stockfish, "--nodes", str(NODES // 2),
                               "--quiet").stdout)  # fmt: skip
    assert again["skipped"] == len(boards) and again["analysed"] == 0


def fresh_lines(
    stockfish: str, boards: list[chess.Board], multipv: int, nodes: int = NODES
) -> list[list[tuple[int, int | None, int | None]]]:
    """A fresh Stockfish's principal variations at a node limit (Threads 1, Hash 16, a new
    game each): each line's first move (Polyglot) and score from the side to move."""
    with chess.engine.SimpleEngine.popen_uci(stockfish) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        found = []
        for board in boards:
            infos = engine.analyse(board, chess.engine.Limit(nodes=nodes), multipv=multipv,
                                   game=object())  # fmt: skip
            lines = []
            for info in infos:
                score = info["score"].pov(board.turn)
                lines.append((_polyglot_move(board, info["pv"][0]), score.score(), score.mate()))
            found.append(lines)
        return found


def _polyglot_move(board: chess.Board, move: chess.Move) -> int:
    """A move as Polyglot writes it, computed here: to, from, promotion; castling as the king
    taking its rook."""
    if board.is_castling(move):
        rook = chess.H1 if board.is_kingside_castling(move) else chess.A1
        to = chess.square(chess.square_file(rook), chess.square_rank(move.from_square))
    else:
        to = move.to_square
    promotion = (move.promotion - 1) if move.promotion else 0
    return to | move.from_square << 6 | promotion << 12


def test_multipv_keeps_each_line_as_a_fresh_engine_run_gives_it(
    tmp_path: Path, book: Path, stockfish: str
) -> None:
    boards = book_boards(book)[:12]
    one_move = chess.Board("4k3/8/8/8/8/8/4q3/4K3 w - - 0 1")  # Kxe2 only
    boards.append(one_move)
    warehouse = tmp_path / "w"
    warehouse.mkdir()
    three = AnalysisSettings(nodes=NODES, multipv=3)
    first = analyse_positions(warehouse, boards, stockfish, three)
    assert first.analysed == len(boards) and not first.failed
    stored = read_evaluations(warehouse)
    sampled = boards[::3]
    for board, fresh in zip(sampled, fresh_lines(stockfish, sampled, 3), strict=True):
        got = stored[chess.polyglot.zobrist_hash(board)]
        if board is one_move:
            assert got.lines is None and len(fresh) == 1
            continue
        assert got.lines is not None and len(got.lines) == 3
        assert [(line.move, line.cp, line.mate) for line in got.lines] == fresh, board.fen()
        assert (got.cp, got.mate, got.best) == (got.lines[0].cp, got.lines[0].mate,
                                                got.lines[0].move)  # fmt: skip
        assert got.lines[0].pv == got.pv
        assert len({line.move for line in got.lines}) == 3
    # One line is within three: all skipped; four lines are not, except where every legal
    # move already has its line (the position with one legal move).
    settings = AnalysisSettings(nodes=NODES)
    assert analyse_positions(warehouse, boards, stockfish, settings).skipped == len(boards)
    more = analyse_positions(warehouse, boards, stockfish, AnalysisSettings(nodes=NODES, multipv=4))
    assert more.skipped == 1 and more.analysed == len(boards) - 1
    # The four lines are read with each position (a search of four reaches less deep at one
    # node count than one of three, whose evaluation stays the row's), so a rerun skips.
    fours = read_evaluations(warehouse)
    assert {len(e.lines or ()) for e in fours.values()} == {0, 4}
    assert all((fours[k].depth or 0) >= (e.depth or 0) for k, e in stored.items())
    again = AnalysisSettings(nodes=NODES, multipv=4)
    assert analyse_positions(warehouse, boards, stockfish, again).skipped == len(boards)
    compact(warehouse)
    assert read_evaluations(warehouse) == fours
    # In SQL: the lines as a column of the `evals` view.
    _, rows = run_query(warehouse, "SELECT count(*), sum(len(lines)) FROM evals "
                        "WHERE lines IS NOT NULL")  # fmt: skip
    assert rows == [(len(boards) - 1, 4 * (len(boards) - 1))]
    # The command line asks for the same.
    proc = run_cli("evals", "analyse", "--warehouse", str(warehouse), "--book", str(book),
                   "--engine", stockfish, "--multipv", "17", check=False)  # fmt: skip
    assert proc.returncode == 2 and "--multipv" in proc.stderr


def test_parts_written_before_the_lines_column_still_read(tmp_path: Path) -> None:
    write_part(tmp_path, [row(1, 10, 8), row(2, 20, 12)])
    old = eval_parts(tmp_path)[0]
    pq.write_table(pq.read_table(old).drop_columns(["lines"]), old)
    line = EngineLine(0x031C, 30, None, "e2e4 e7e5")
    write_part(tmp_path, [row(2, 25, 20)._replace(lines=(line, line._replace(cp=10)))])
    stored = read_evaluations(tmp_path)
    assert stored[1].lines is None and stored[2].lines == (line, line._replace(cp=10))
    assert not list(check_warehouse(tmp_path))
    assert compact(tmp_path).positions == 2 and read_evaluations(tmp_path) == stored


@pytest.mark.slow
def test_a_killed_run_keeps_its_batches_and_a_rerun_resumes(
    tmp_path: Path, book: Path, stockfish: str
) -> None:
    boards = book_boards(book)[:30]
    warehouse = tmp_path / "w"
    warehouse.mkdir()
    fens = json.dumps([b.fen() for b in boards])
    code = f"""
import json, os, signal, chess
from pipelines.evals.analyse import AnalysisSettings, analyse_positions
boards = [chess.Board(f) for f in json.loads({fens!r})]
def progress(report):
    if report.done == 17:
        os.kill(os.getpid(), signal.SIGKILL)
analyse_positions({str(warehouse)!r}, boards, {stockfish!r},
                  AnalysisSettings(nodes=500, batch=5), progress=progress)
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL
    kept = read_evaluations(warehouse)
    assert 10 <= len(kept) <= 17  # whole batches of 5 (and the rules' few), at most one lost
    assert list(warehouse.glob(".locks/*")) and not list(evals_dir(warehouse).glob(".*.tmp"))
    resumed = analyse_positions(warehouse, boards, stockfish, AnalysisSettings(nodes=500))
    assert resumed.skipped == len(kept) and resumed.analysed == len(boards) - len(kept)
    assert set(read_evaluations(warehouse)) == {chess.polyglot.zobrist_hash(b) for b in boards}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["black-dies", "black-hangs"])
def test_an_engine_that_dies_or_hangs_is_restarted_and_the_position_counted(
    tmp_path: Path, mode: str
) -> None:
    boards = [chess.Board(), chess.Board(), chess.Board()]
    for board, moves in zip(boards, ([], ["e2e4"], ["e2e4", "e7e5"]), strict=True):
        for move in moves:
            board.push_uci(move)
    settings = AnalysisSettings(nodes=100, timeout=1.0)
    result = analyse_positions(tmp_path, boards, fake_engine(tmp_path, mode), settings)
    assert result.analysed == 2 and len(result.failed) == 1 and result.restarts >= 1
    assert result.failed[0].fen == boards[1].fen()
    stored = read_evaluations(tmp_path)
    assert sorted(e.fen.split()[1] for e in stored.values()) == ["w", "w"]
    assert {e.cp for e in stored.values()} == {7} and {e.engine for e in stored.values()} == {
        "FakeUCI 0"
    }


@pytest.mark.slow
def test_bad_engines_are_one_line(tmp_path: Path) -> None:
    warehouse = tmp_path / "w"
    warehouse.mkdir()
    write_part(warehouse, [row(5, 1, 1)])
    book = tmp_path / "book.bin"
    book.write_bytes(b"")
    cases = {
        str(tmp_path / "no-such-engine"): "no such program",
        str(tmp_path): "not an executable program",
        str(fake_engine(tmp_path, "always-dies")): "failed on 3 positions in a row",
    }
    start = chess.Board()
    opened = [start] + [start.copy() for _ in range(4)]
    for board, move in zip(opened[1:], ["e2e4", "d2d4", "c2c4", "g1f3"], strict=True):
        board.push_uci(move)
    for engine, says in cases.items():
        with pytest.raises(EngineProblem, match=says) as raised:
            analyse_positions(warehouse, opened, engine, AnalysisSettings(nodes=10, timeout=2))
        assert "\n" not in str(raised.value)
    silent = fake_engine(tmp_path, "silent")
    with pytest.raises(EngineProblem, match="did not answer uci with uciok"):
        analyse_positions(warehouse, opened, silent, AnalysisSettings(start_timeout=1))
    assert set(read_evaluations(warehouse)) == {5}  # nothing stored is lost
    proc = run_cli("evals", "analyse", "--warehouse", str(warehouse), "--book", str(book),
                   "--engine", "no-such-engine-here", check=False)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "chesspipe: error: engine no-such-engine-here: no such program on PATH nor in "
        "/usr/games, /usr/local/games"
    )


# The Lichess evaluation dump, made here: Stockfish's evaluations of real positions written as
# the dump writes them (White's view, castling as king takes rook, two depths, two lines).


def _dump_record(engine: chess.engine.SimpleEngine, board: chess.Board) -> dict[str, object]:
    evals = []
    for depth in (8, 5):  # the deeper first: the dump does not sort them
        infos = engine.analyse(board, chess.engine.Limit(depth=depth), multipv=2, game=object())
        pvs = []
        for info in infos:
            score = info["score"].white()
            line = []
            played = board.copy()
            for move in info.get("pv", [])[:6]:
                line.append(played.uci(move, chess960=True))
                played.push(move)
            entry: dict[str, object] = {"line": " ".join(line)}
            entry["mate" if score.is_mate() else "cp"] = (
                score.mate() if score.is_mate() else score.score()
            )
            pvs.append(entry)
        knodes = infos[0].get("nodes", 0) // 1000
        evals.append({"pvs": pvs, "knodes": knodes, "depth": infos[0].get("depth", depth)})
    return {"fen": " ".join(board.fen().split()[:4]), "evals": evals}


@pytest.fixture(scope="module")
def dump(
    tmp_path_factory: pytest.TempPathFactory, book: Path, stockfish: str
) -> tuple[Path, list[chess.Board]]:
    boards = book_boards(book)[:16]
    boards.append(
        chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4")
    )
    castles = chess.Board("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1")
    boards.append(castles)
    lines = []
    with chess.engine.SimpleEngine.popen_uci(stockfish) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        lines = [json.dumps(_dump_record(engine, board)) for board in boards]
    quiet = chess.Board()
    bad = [
        "this is not json",
        json.dumps({"fen": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq -", "evals": []}),
        json.dumps({"fen": " ".join(quiet.fen().split()[:4]),  # mate where there is none
                    "evals": [{"pvs": [{"mate": 1, "line": "e2e4"}], "knodes": 1, "depth": 30}]}),
        json.dumps({"fen": " ".join(quiet.fen().split()[:4]),
                    "evals": [{"pvs": [{"cp": 20, "line": "e2e5"}], "knodes": 1, "depth": 30}]}),
    ]  # fmt: skip
    text = "\n".join(lines[:5] + bad + lines[5:]) + "\n"
    path = tmp_path_factory.mktemp("dump") / "lichess_db_eval.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    return path, boards


def _deepest_first_line(board: chess.Board, record: dict) -> tuple[int | None, int | None, str]:  # type: ignore[type-arg]
    """What the store should hold for a dump record, recomputed: side to move's score."""
    deepest = max(record["evals"], key=lambda e: (e["depth"], e["knodes"]))
    first = deepest["pvs"][0]
    sign = 1 if board.turn == chess.WHITE else -1
    cp = None if "cp" not in first else sign * first["cp"]
    mate = None if "mate" not in first else sign * first["mate"]
    return cp, mate, first["line"].split()[0]


@pytest.mark.slow
def test_import_takes_the_deepest_first_line_from_the_side_to_move(
    tmp_path: Path, dump: tuple[Path, list[chess.Board]], stockfish: str
) -> None:
    path, boards = dump
    proc = run_cli("evals", "import", str(path), "--warehouse", str(tmp_path))
    counts = json.loads(proc.stdout)
    assert counts["lines"] == len(boards) + 4 and counts["imported"] == len(boards)
    assert counts["skipped"] == {"not_json": 1, "bad_fen": 1, "illegal_line": 1,
                                 "mate_contradicts": 1}  # fmt: skip
    assert counts["first_skipped_line"]["not_json"] == 6
    stored = read_evaluations(tmp_path)
    text = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes())).read()
    records = [json.loads(line) for line in text.decode().splitlines() if line[:1] == "{"]
    records = [r for r in records if r.get("evals") and r["evals"][0]["depth"] != 30]
    assert len(records) == len(boards)
    by_fen = {r["fen"]: r for r in records}
    for board in boards:
        got = stored[chess.polyglot.zobrist_hash(board)]
        cp, mate, first = _deepest_first_line(board, by_fen[got.fen])
        assert (got.cp, got.mate) == (cp, mate)
        move = board.parse_uci(first)  # king takes rook, read as castling
        assert got.best is not None and decode_move(board, got.best) == move
        assert got.pv is not None and got.pv.split()[0] == move.uci()
        # Its other line beside it, from the side to move, castling as python-chess reads it.
        deepest = max(by_fen[got.fen]["evals"], key=lambda e: (e["depth"], e["knodes"]))
        sign = 1 if board.turn == chess.WHITE else -1
        expected = [
            (_polyglot_move(board, board.parse_uci(pv["line"].split()[0])),
             None if "cp" not in pv else sign * pv["cp"],
             None if "mate" not in pv else sign * pv["mate"])
            for pv in deepest["pvs"]
        ]  # fmt: skip
        assert got.lines is not None and len(expected) == 2
        assert [(line.move, line.cp, line.mate) for line in got.lines] == expected
    # The sign: a fresh search from the side to move agrees in direction where it is clear.
    mated = boards[-2]  # Qxf7# is on the board for White
    assert stored[chess.polyglot.zobrist_hash(mated)].mate == 1
    clear = [b for b in boards if abs(stored[chess.polyglot.zobrist_hash(b)].score) > 80]
    for board, fresh in zip(clear[:3], fresh_scores(stockfish, clear[:3], 1500), strict=True):
        mover = fresh.pov(board.turn).score(mate_score=100_000)
        assert (mover > 0) == (stored[chess.polyglot.zobrist_hash(board)].score > 0)
    # The Parquet form of the same dump (one row per line of each evaluation) reads the same.
    rows: dict[str, list[object]] = {
        k: [] for k in ("fen", "line", "depth", "knodes", "cp", "mate")
    }
    for record in records:
        for evaluation in record["evals"]:
            for pv in evaluation["pvs"]:
                rows["fen"].append(record["fen"])
                rows["line"].append(pv["line"])
                rows["depth"].append(evaluation["depth"])
                rows["knodes"].append(evaluation["knodes"])
                rows["cp"].append(pv.get("cp"))
                rows["mate"].append(pv.get("mate"))
    parquet = tmp_path / "train-00000.parquet"
    pq.write_table(pa.table(rows), parquet)
    other = tmp_path / "other"
    other.mkdir()
    assert import_dump(other, parquet).imported == len(boards)
    strip = lambda e: e._replace(analysed_at=None)  # noqa: E731
    assert {k: strip(e) for k, e in read_evaluations(other).items()} == {
        k: strip(e) for k, e in stored.items()
    }


def test_warehouse_check_covers_the_store(tmp_path: Path) -> None:
    write_part(tmp_path, [row(1, 10, 8)])
    good = eval_parts(tmp_path)[0]
    leftover = evals_dir(tmp_path) / f".{good.name}.0badc0de.tmp"
    leftover.write_bytes(b"half a part")
    broken = good.with_name("part-20240101T000000-1-deadbeef.parquet")
    broken.write_bytes(b"PAR1 not really")
    found = {(f.kind, f.path.name) for f in check_warehouse(tmp_path)}
    assert found == {("temp-file", leftover.name), ("bad-eval-part", broken.name)}
    repaired = check_warehouse(tmp_path, repair=True)
    assert not leftover.exists() and broken.exists() and good.exists()
    assert {f.kind for f in repaired if not f.repaired} == {"bad-eval-part"}


@pytest.mark.slow
def test_ctrl_c_of_two_engines_ends_in_one_line_and_keeps_the_work(
    tmp_path: Path, book: Path, real_warehouse: Path, stockfish: str
) -> None:
    """Ctrl-C of `evals analyse --workers 2` printed python-chess's InvalidStateError
    tracebacks (3 runs of 5): the engines run in their own process group, the command stops
    them, says `interrupted` and keeps what they analysed."""
    import shutil

    from tests.test_stopping import alive, descendants

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for attempt in range(3):
        warehouse = tmp_path / f"w{attempt}"
        shutil.copytree(real_warehouse, warehouse)
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipelines", "evals", "analyse", "--warehouse",
             str(warehouse), "--book", str(book), "--engine", stockfish, "--workers", "2",
             "--nodes", "200000", "--quiet"],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            engines: set[tuple[int, int]] = set()
            while len(engines) < 2:
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                engines = descendants(proc.pid)
                time.sleep(0.05)
            time.sleep(1.0 + attempt * 0.7)  # the engines mid-search
            os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 130, err
        assert err == "chesspipe: interrupted\n", err
        until = time.monotonic() + 10
        while alive(engines) and time.monotonic() < until:
            time.sleep(0.05)
        assert not alive(engines)
        assert read_evaluations(warehouse)  # what was analysed is stored
        assert run_cli("warehouse", "check", str(warehouse)).returncode == 0


def test_a_late_reply_to_a_cancelled_search_is_not_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """python-chess hands an engine's `readyok` that comes after a Ctrl-C to a future already
    cancelled: asyncio would print the InvalidStateError of that callback. The loop's handler
    drops it, and only it."""
    import asyncio
    import logging

    from pipelines.evals.analyse import _quiet_late_replies

    shown: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: shown.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("asyncio").addHandler(handler)

    async def late_reply(other: BaseException | None) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_quiet_late_replies)
        future = loop.create_future()
        future.cancel()
        loop.call_soon(future.set_result, "readyok")  # raises InvalidStateError in the loop
        if other is not None:

            def fail() -> None:
                raise other

            loop.call_soon(fail)
        await asyncio.sleep(0.01)

    try:
        asyncio.run(late_reply(None))
        assert shown == []
        asyncio.run(late_reply(RuntimeError("a real fault")))
        assert len(shown) == 1 and "Exception in callback" in shown[0]
    finally:
        logging.getLogger("asyncio").removeHandler(handler)
