"""`chesspipe probe`: WDL and DTZ checked with python-chess and Fathom's CLI; the line replays."""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path

import chess
import chess.pgn
import chess.syzygy
import pytest

from pipelines.endgames.positions import sample_positions
from pipelines.endgames.probing import TablebaseError
from pipelines.endgames.tables import syzygy_path
from tests.conftest import need_program, run_cli

FATHOM_WDL = {"Win": 2, "CursedWin": 1, "Draw": 0, "BlessedLoss": -1, "Loss": -2}


def probe(syzygy_dir: Path, fen: str, *extra: str) -> str:
    return run_cli("probe", fen, "--syzygy", str(syzygy_dir), *extra).stdout


def parse(output: str) -> tuple[int, int, chess.pgn.Game | None]:
    wdl = int(re.search(r"^WDL = (-?\d) \(", output, re.M).group(1))
    dtz = int(re.search(r"^DTZ50 = (-?\d+) ply$", output, re.M).group(1))
    start = output.find("[FEN ")
    game = None
    if start >= 0:
        end = output.find("Ranked root moves:")
        game = chess.pgn.read_game(io.StringIO(output[start : end if end > 0 else None]))
    return wdl, dtz, game


@pytest.mark.slow
def test_probe_agrees_with_python_chess_and_fathom(syzygy_dir: Path) -> None:
    fathom = need_program("fathom")
    tablebase = chess.syzygy.open_tablebase(str(syzygy_dir))
    fens = ["8/8/8/8/3k4/8/8/KR6 b - - 0 1", "8/8/8/8/8/8/2k5/1q5K w - - 0 1"]
    for material in ("KQvKR", "KRvKP", "KPvKP", "KBNvK"):
        fens += [p.board.fen() for p in sample_positions(material, 3, seed=9)]
    for fen in fens:
        board = chess.Board(fen)
        wdl, dtz, game = parse(probe(syzygy_dir, fen))
        assert (wdl, dtz) == (tablebase.probe_wdl(board), tablebase.probe_dtz(board)), fen
        theirs = subprocess.run(
            [fathom, f"--path={syzygy_dir}", fen], capture_output=True, text=True, check=True
        ).stdout
        their_wdl = FATHOM_WDL[re.search(r'\[WDL "(\w+)"\]', theirs).group(1)]
        their_dtz = int(re.search(r'\[DTZ "(\d+)"\]', theirs).group(1))
        assert (wdl, abs(dtz)) == (their_wdl, their_dtz), fen
        if wdl == 0 or board.is_game_over():
            assert game is None
            continue
        # The line: legal from the FEN tag, DTZ-optimal, and it ends in mate by the winner.
        assert game is not None and not game.errors
        assert game.headers["FEN"] == fen
        end = game.end().board()
        assert end.is_checkmate() and end.turn == (board.turn if wdl < 0 else not board.turn)
        replay = board.copy()
        for move in game.mainline_moves():
            before = tablebase.probe_dtz(replay)
            zeroing = replay.is_zeroing(move)
            replay.push(move)
            if not zeroing and not replay.is_checkmate() and before != -1:
                assert abs(tablebase.probe_dtz(replay)) == abs(before) - 1


def test_probe_uci_and_ranked_moves(syzygy_dir: Path) -> None:
    fen = "8/8/8/8/3k4/8/8/KR6 w - - 0 1"
    output = probe(syzygy_dir, fen, "--uci", "-r")
    board = chess.Board(fen)
    line = output[output.index("[FEN") : output.index("Ranked root moves:")]
    tokens = [t for t in line.split("\n\n", 1)[1].split() if not t[0].isdigit()]
    for token in tokens:
        move = chess.Move.from_uci(token)
        assert move in board.legal_moves
        board.push(move)
    assert board.is_checkmate()
    ranked = output[output.index("Ranked root moves:") :].splitlines()[1:]
    root = chess.Board(fen)
    assert sorted(r.split()[0] for r in ranked) == sorted(m.uci() for m in root.legal_moves)
    ranks = [int(re.search(r"rank = +(-?\d+)", r).group(1)) for r in ranked]
    assert ranks == sorted(ranks, reverse=True)


def test_probe_draw_and_diagram(syzygy_dir: Path) -> None:
    output = probe(syzygy_dir, "8/8/8/4k3/8/8/8/KB6 w - - 0 1")
    assert "WDL = 0 (draw)" in output and "mating line" not in output
    rows = [line for line in output.splitlines() if line.startswith("|")]
    assert len(rows) == 8 and rows[3].split("|")[5].strip() == "k"
    assert rows[7].split("|")[1].strip() == "K" and rows[7].split("|")[2].strip() == "B"


def test_probe_errors(syzygy_dir: Path) -> None:
    cases = [
        ("not a fen", "invalid FEN"),
        ("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1", "castling"),
        ("4k3/8/8/8/8/8/8/RR2K2R w - - 0 1", "5 pieces"),
    ]
    for fen, message in cases:
        proc = run_cli("probe", fen, "--syzygy", str(syzygy_dir), check=False)
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    proc = run_cli("probe", "8/8/8/8/3k4/8/8/KR6 w - - 0 1", check=False, env={"SYZYGY_PATH": ""})
    assert proc.returncode == 1 and "SYZYGY_PATH" in proc.stderr
    assert "pass --syzygy DIR" in proc.stderr  # the command line names its option
    out = run_cli("probe", "8/8/8/8/3k4/8/8/KR6 w - - 0 1", env={"SYZYGY_PATH": str(syzygy_dir)})
    assert "WDL = 2 (win)" in out.stdout


def test_the_library_names_the_setting_not_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYZYGY_PATH", raising=False)
    with pytest.raises(TablebaseError, match="SYZYGY_PATH is not set") as info:
        syzygy_path(None)
    assert "--" not in str(info.value)
