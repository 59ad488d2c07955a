"""Books pruned by evaluation and `book check`, recomputed with python-chess from the stored
evaluations (read here from the store's Parquet files, the deepest of each position by plain
Python)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import chess
import chess.polyglot
import pyarrow.parquet as pq
import pytest

from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.evals_files import eval_parts
from schemas.evals import MATE_SCORE
from schemas.speed import Speed
from tests.conftest import GAMES_2021, need, need_program, run_cli

MIN_GAMES = "10"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The real 2021-10 sample's statistics, a raw book, and its positions analysed by
    Stockfish at 1500 nodes into the same warehouse."""
    stockfish = need_program("stockfish")
    source = need(GAMES_2021, "real Lichess games (2021-10 sample)")
    folder = tmp_path_factory.mktemp("pruning")
    every_game = IngestSettings(GameFilter(0, frozenset(Speed), allow_bots=True))
    ingest(str(source), "2021-10", folder, every_game)
    raw = folder / "raw.bin"
    run_cli("book", "build", "--warehouse", str(folder), "--months", "2021-10", "--out", str(raw),
            "--min-games", MIN_GAMES, "--min-score", "0")  # fmt: skip
    run_cli("evals", "analyse", "--warehouse", str(folder), "--book", str(raw), "--engine",
            stockfish, "--nodes", "1500", "--workers", "2", "--quiet")  # fmt: skip
    return folder, raw


def stored_scores(warehouse: Path) -> dict[int, int]:
    """Each position's deepest evaluation as one number from the side to move, read from the
    part files directly."""
    return {key: score for key, (score, _) in stored(warehouse).items()}


def deepest_rows(warehouse: Path) -> dict[int, dict[str, Any]]:
    """Each position's deepest evaluation as a row of the part files, read directly."""
    best: dict[int, tuple[tuple[object, ...], dict[str, Any]]] = {}
    for part in eval_parts(warehouse):
        for r in pq.read_table(part).to_pylist():
            rank = (r["source"] == "rules", r["depth"] or -1, r["nodes"] or -1)
            if r["key"] not in best or rank > best[r["key"]][0]:
                best[r["key"]] = (rank, r)
    return {key: row for key, (_, row) in best.items()}


def stored(warehouse: Path) -> dict[int, tuple[int, str | None]]:
    """Each position's deepest evaluation (one number from the side to move) and the first
    move of its principal variation (UCI), read from the part files directly."""
    found = {}
    for key, r in deepest_rows(warehouse).items():
        if r["mate"] is None:
            score = r["cp"]
        elif r["mate"] > 0:
            score = MATE_SCORE - r["mate"]
        else:
            score = -MATE_SCORE - r["mate"]
        found[key] = (score, r["pv"].split()[0] if r["pv"] else None)
    return found


def entries(path: Path) -> dict[int, dict[chess.Move, int]]:
    """A book's moves by key, read by python-chess's reader walking from the start."""
    found: dict[int, dict[chess.Move, int]] = {}
    with chess.polyglot.open_reader(path) as reader:
        todo = [chess.Board()]
        while todo:
            board = todo.pop()
            key = chess.polyglot.zobrist_hash(board)
            if key in found or board.ply() > 60:
                continue
            found[key] = {e.move: e.weight for e in reader.find_all(board)}
            for move in found[key]:
                child = board.copy()
                child.push(move)
                todo.append(child)
    return {k: v for k, v in found.items() if v}


def engine_best(board: chess.Board, found: dict[int, tuple[int, str | None]]) -> list[int]:
    """The value of the engine's own best move (the position after it stored), if any."""
    key = chess.polyglot.zobrist_hash(board)
    if key not in found or found[key][1] is None:
        return []
    child = board.copy()
    child.push_uci(str(found[key][1]))
    after = found.get(chess.polyglot.zobrist_hash(child))
    return [] if after is None else [-after[0]]


def expected_pruning(
    raw: Path,
    found: dict[int, tuple[int, str | None]],
    *,
    max_loss: int | None = None,
    min_eval: int | None = None,
) -> tuple[set[tuple[int, chess.Move]], int, int]:
    """The moves the rule drops, recomputed: (key, move) pairs, checked and unchecked counts."""
    pruned: set[tuple[int, chess.Move]] = set()
    checked = unchecked = 0
    with chess.polyglot.open_reader(raw) as reader:
        seen: set[int] = set()
        todo = [chess.Board()]
        while todo:
            board = todo.pop()
            key = chess.polyglot.zobrist_hash(board)
            if key in seen:
                continue
            seen.add(key)
            values: dict[chess.Move, int | None] = {}
            for entry in reader.find_all(board):
                child = board.copy()
                child.push(entry.move)
                todo.append(child)
                after = found.get(chess.polyglot.zobrist_hash(child))
                values[entry.move] = None if after is None else -after[0]
            known = [v for v in values.values() if v is not None] + engine_best(board, found)
            for move, value in values.items():
                if value is None:
                    unchecked += 1
                    continue
                checked += 1
                if (max_loss is not None and max(known) - value > max_loss) or (
                    min_eval is not None and value < min_eval
                ):
                    pruned.add((key, move))
        # The moves of positions no line of the book reaches: unchecked, kept.
        unchecked += sum(1 for entry in reader if entry.key not in seen and entry.weight)
    return pruned, checked, unchecked


@pytest.mark.slow
@pytest.mark.parametrize(("max_loss", "min_eval"), [(30, None), (150, None), (None, -40)])
def test_a_pruned_book_is_the_raw_book_without_the_moves_the_rule_drops(
    judged: tuple[Path, Path], tmp_path: Path, max_loss: int | None, min_eval: int | None
) -> None:
    warehouse, raw = judged
    out = tmp_path / "pruned.bin"
    rule = ["--max-loss", str(max_loss)] if max_loss is not None else ["--min-eval", str(min_eval)]
    proc = run_cli("book", "build", "--warehouse", str(warehouse), "--months", "2021-10",
                   "--out", str(out), "--min-games", MIN_GAMES, "--min-score", "0",
                   "--evals", str(warehouse), *rule)  # fmt: skip
    pruned, checked, unchecked = expected_pruning(
        raw, stored(warehouse), max_loss=max_loss, min_eval=min_eval
    )
    assert pruned, "the rule drops some move of the real sample's book"
    # The pruned book is the raw one less those entries (the weights stay: no position of
    # the sample reaches the scaling), checked on every position a line of it reaches.
    assert raw.stat().st_size - out.stat().st_size == 16 * len(pruned)
    raw_moves = entries(raw)
    for key, moves in entries(out).items():
        assert moves == {m: w for m, w in raw_moves[key].items() if (key, m) not in pruned}
    manifest = json.loads(out.with_suffix(".json").read_text())["evals"]
    assert (manifest["max_loss"], manifest["min_eval"]) == (max_loss, min_eval)
    assert (manifest["checked"], manifest["pruned"], manifest["unchecked"]) == (
        checked, len(pruned), unchecked,
    )  # fmt: skip
    assert json.loads(proc.stdout)["evals"]["pruned"] == len(pruned)


def test_pruning_options_are_checked(judged: tuple[Path, Path], tmp_path: Path) -> None:
    warehouse, _ = judged
    base = ["book", "build", "--warehouse", str(warehouse), "--months", "2021-10", "--out",
            str(tmp_path / "b.bin")]  # fmt: skip
    for extra, says in (
        (["--max-loss", "50"], "--max-loss and --min-eval prune by evaluation: give --evals"),
        (["--evals", str(warehouse)], "pruning by evaluation needs --max-loss or --min-eval"),
        (["--evals", str(tmp_path / "nowhere"), "--max-loss", "5"], "no such warehouse folder"),
    ):
        proc = run_cli(*base, *extra, check=False)
        assert proc.returncode == 1 and says in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "b.bin").exists()


def test_book_check_agrees_with_a_python_chess_recount(
    judged: tuple[Path, Path], tmp_path: Path
) -> None:
    warehouse, raw = judged
    found = stored(warehouse)
    scores = stored_scores(warehouse)
    proc = run_cli("book", "check", str(raw), "--evals", str(warehouse), "--json",
                   "--min-probability", "0.01")  # fmt: skip
    got = json.loads(proc.stdout)
    # Recount: play the book with python-chess's reader, probabilities along every line.
    reach: dict[tuple[int, str], float] = defaultdict(float)
    losses: dict[tuple[int, str], int | None] = {}
    ends: dict[str, float] = defaultdict(float)
    with chess.polyglot.open_reader(raw) as reader:

        def play(board: chess.Board, probability: float) -> None:
            book_entries = list(reader.find_all(board))
            key = chess.polyglot.zobrist_hash(board)
            if not book_entries or board.ply() >= 60:
                if not book_entries:
                    score = scores.get(key)
                    white = None if score is None else (score if board.turn else -score)
                    ends["unknown" if white is None else ("> 100" if white > 100 else "rest")] += (
                        probability
                    )
                return
            total = sum(e.weight for e in book_entries)
            values = {}
            for e in book_entries:
                child = board.copy()
                child.push(e.move)
                after = scores.get(chess.polyglot.zobrist_hash(child))
                values[e.move] = None if after is None else -after
            known = [v for v in values.values() if v is not None] + engine_best(board, found)
            for e in book_entries:
                share = probability * e.weight / total
                reach[(key, board.san(e.move))] += share
                value = values[e.move]
                losses[(key, board.san(e.move))] = None if value is None else max(known) - value
                child = board.copy()
                child.push(e.move)
                play(child, share)

        play(chess.Board(), 1.0)
    listed = {k: p for k, p in reach.items() if p >= 0.01}
    assert got["reachable_moves"] == len(listed)
    weighted = [(p, losses[k]) for k, p in listed.items() if losses[k] is not None]
    mean = sum(p * loss for p, loss in weighted) / sum(p for p, _ in weighted)  # type: ignore[operator]
    assert got["mean_loss"] == pytest.approx(mean, abs=0.01)
    assert len(got["losing_moves"]) == sum(1 for _, loss in weighted if loss > 100)  # type: ignore[operator]
    assert got["ends"]["unknown"] == pytest.approx(ends["unknown"], abs=1e-6)
    assert got["ends"]["> 100"] == pytest.approx(ends["> 100"], abs=1e-6)
    assert sum(got["ends"].values()) == pytest.approx(sum(ends.values()), abs=1e-5)  # rounded
    table = run_cli("book", "check", str(raw), "--evals", str(warehouse), "--min-probability",
                    "0.01").stdout  # fmt: skip
    assert "mean loss" in table and f"{got['mean_loss']:.1f} cp" in table


def mover_view(row: dict[str, Any] | None) -> str:
    """A stored evaluation as book show gives it after a move: from the mover's view (the row
    is from the side to move after it), with the search's depth or nodes."""
    if row is None:
        return "-"
    mate = row["mate"]  # (mate 0: the side to move is mated; the mover gave mate)
    shown = f"{-row['cp']:+d}" if mate is None else f"#{-mate:+d}" if mate else "#+0"
    if row["depth"]:
        return f"{shown} (d{row['depth']})"
    return f"{shown} ({row['nodes']:,} nodes)" if row["nodes"] else shown


@pytest.mark.slow
def test_book_show_and_report_give_the_stored_evaluation_after_each_move(
    judged: tuple[Path, Path], tmp_path: Path
) -> None:
    warehouse, raw = judged
    rows = deepest_rows(warehouse)
    for moves in ("", "e4", "d4 d5"):
        board = chess.Board()
        for san in moves.split():
            board.push_san(san)
        with chess.polyglot.open_reader(raw) as reader:
            expected = {}
            for entry in reader.find_all(board):
                child = board.copy()
                child.push(entry.move)
                expected[board.san(entry.move)] = mover_view(
                    rows.get(chess.polyglot.zobrist_hash(child))
                )
        assert expected and any(shown != "-" for shown in expected.values())
        args = ["--moves", moves] if moves else []
        # The statistics' warehouse holds the store: its evaluations are shown without asking.
        for evals in ([], ["--evals", str(warehouse)]):
            shown = run_cli("book", "show", str(raw), *args, *evals).stdout
            got = {}
            for line in shown.splitlines():
                if "  eval " in line:
                    got[line.split()[0]] = line.split("  eval ")[1].split("  ")[0]
            assert got == expected
    # Without a store: no eval column.
    bare = tmp_path / "bare"
    bare.mkdir()
    assert "eval" not in run_cli("book", "show", str(raw), "--evals", str(bare)).stdout.replace(
        "evaluation", ""
    )
    for command in (["show"], ["report", "--out", str(tmp_path / "no.html")]):
        missing = run_cli("book", *command, str(raw), "--evals", str(tmp_path / "missing"),
                          check=False)  # fmt: skip
        assert missing.returncode == 1 and "Traceback" not in missing.stderr
        assert missing.stderr.strip().endswith(f"{tmp_path / 'missing'}: no such warehouse folder")
    assert not (tmp_path / "no.html").exists()
    page = tmp_path / "report.html"
    run_cli("book", "report", str(raw), "--out", str(page), "--plies", "3")
    html = page.read_text()
    items = re.findall(r'<li data-line="([^"]*)"([^>]*)>', html)
    assert any(" data-eval=" in attributes for _, attributes in items)
    for line, attributes in items:
        found = re.search(r' data-eval="([^"]*)"', attributes)
        score = found.group(1) if found else ""
        board = chess.Board()
        for san in line.split()[:-1]:
            board.push_san(san)
        board.push_san(line.split()[-1])
        row = rows.get(chess.polyglot.zobrist_hash(board))
        assert score == ("" if row is None else mover_view(row).split(" (")[0])
    assert "the evaluation store of" in html
