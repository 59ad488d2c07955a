"""Tablebases in the engine: root DTZ moves vs Fathom, WDL in the search, mates vs Stockfish."""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import chess
import chess.engine
import chess.syzygy
import pytest

from engine.search import MAX_PLY
from engine.tablebase import Outcome, Tablebases
from tests.conftest import need_program
from tests.engine_support import uci_engine


def random_position(
    rng: random.Random, pieces: str, turn: chess.Color | None = None
) -> chess.Board:
    """A random legal position, not over, with two kings and the given pieces (FEN letters)."""
    while True:
        board = chess.Board(None)
        squares = rng.sample(chess.SQUARES, len(pieces) + 2)
        board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
        for square, symbol in zip(squares[2:], pieces, strict=True):
            board.set_piece_at(square, chess.Piece.from_symbol(symbol))
        board.turn = rng.choice(chess.COLORS) if turn is None else turn
        if board.is_valid() and not board.is_game_over():
            return board


def fathom(program: str, syzygy_dir: Path, board: chess.Board) -> tuple[dict[str, str], str | None]:
    """Fathom's PGN tags for a position and the first move of its DTZ-optimal line (SAN)."""
    out = subprocess.run(
        [program, f"--path={syzygy_dir}", board.fen()],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    tags = dict(re.findall(r'\[(\w+) "([^"]*)"\]', out))
    moves = out.split("\n\n", 1)[1].split("\n", 1)[0].split() if "\n\n" in out else []
    sans = [token for token in moves if not token[0].isdigit() and token not in ("1-0", "0-1")]
    return tags, sans[0].rstrip("+#") if sans else None


def _san_list(text: str) -> set[str]:
    return {item.strip() for item in text.split(",") if item.strip()}


MATERIALS = ["Q", "R", "BN", "P", "Rp", "Qr", "Pp", "Rn", "Bp"]


@pytest.mark.slow
def test_root_moves_agree_with_fathom(syzygy_dir: Path) -> None:
    program = need_program("fathom")
    tables = Tablebases(str(syzygy_dir))
    rng = random.Random(2026)
    checked = 0
    for material in MATERIALS:
        for _ in range(12):
            board = random_position(rng, material)
            tags, fathom_first = fathom(program, syzygy_dir, board)
            ranked = tables.rank_root_moves(board)
            best = tables.best_root_moves(board)
            assert ranked is not None and best is not None
            kept = {board.san(move).rstrip("+#") for move in best}
            top = ranked[0]
            expected = {
                "Win": Outcome.WIN,
                "CursedWin": Outcome.CURSED_WIN,
                "Draw": Outcome.DRAW,
                "BlessedLoss": Outcome.BLESSED_LOSS,
                "Loss": Outcome.LOSS,
            }[tags["WDL"]]
            assert top.outcome == expected or (
                top.outcome == Outcome.MATE and expected == Outcome.WIN
            ), (board.fen(), tags, top)
            if expected >= Outcome.CURSED_WIN:
                # Every move kept wins, it is the move Fathom plays or ties with it, and its DTZ
                # is Fathom's (the tables' DTZ may be one ply off, never more).
                assert kept <= _san_list(tags["WinningMoves"]), (board.fen(), kept, tags)
                if top.outcome != Outcome.MATE:
                    assert abs(abs(top.dtz) - abs(int(tags["DTZ"]))) <= 1, (board.fen(), top, tags)
                assert fathom_first in kept, (board.fen(), fathom_first, kept)
            elif expected == Outcome.DRAW:
                assert kept == _san_list(tags["DrawingMoves"]), (board.fen(), kept, tags)
            else:
                assert kept <= _san_list(tags["LosingMoves"]), (board.fen(), kept, tags)
            checked += 1
    assert checked == 12 * len(MATERIALS)


def test_search_scores_tablebase_wins_after_a_capture(syzygy_dir: Path) -> None:
    # Five pieces (beyond the tables); Qxd8+ captures into KQvKP, which the tables call won.
    board = chess.Board("3r2k1/p7/8/8/8/8/8/K2Q4 w - - 0 1")
    probe = chess.syzygy.open_tablebase(str(syzygy_dir))
    with uci_engine(SyzygyPath=str(syzygy_dir)) as engine:
        result = engine.play(board, chess.engine.Limit(depth=3), info=chess.engine.INFO_ALL)
        after = board.copy()
        assert result.move is not None
        after.push(result.move)
        assert probe.probe_wdl(after) == -2
        score = result.info["score"].relative
        # Stockfish's band for tablebase wins: 20000 - plies to where the tables were reached.
        assert not score.is_mate() and 20000 - MAX_PLY <= score.score() <= 20000, score
        assert result.info["tbhits"] > 0

        # Probing only with more depth left than the search has: no probes.
        engine.configure({"SyzygyProbeDepth": 10})
        shallow = engine.play(board, chess.engine.Limit(depth=3), info=chess.engine.INFO_ALL)
        assert shallow.info["tbhits"] == 0
        assert shallow.info["score"].relative.score() < 20000 - MAX_PLY

        # A probe limit of two pieces (bare kings) leaves nothing to probe.
        engine.configure({"SyzygyProbeDepth": 1, "SyzygyProbeLimit": 2})
        limited = engine.play(board, chess.engine.Limit(depth=3), info=chess.engine.INFO_ALL)
        assert limited.info["tbhits"] == 0
    with uci_engine() as engine:
        plain = engine.play(board, chess.engine.Limit(depth=3), info=chess.engine.INFO_ALL)
        assert plain.info["tbhits"] == 0
    probe.close()


def test_root_scores_are_the_tables_verdict_as_uci_engines_show_it(syzygy_dir: Path) -> None:
    """A position in the tables shows a win as cp 20000 - DTZ, never a mere evaluation."""
    probe = chess.syzygy.open_tablebase(str(syzygy_dir))
    rng = random.Random(15)
    # The case first: KRvK showed `cp 605` while the search knew the win.
    boards = [chess.Board("8/8/8/4k3/8/8/8/R3K3 w - - 0 1")]
    boards += [random_position(rng, material) for material in MATERIALS for _ in range(3)]
    seen = set()
    with uci_engine(SyzygyPath=str(syzygy_dir)) as engine:
        for board in boards:
            wdl, dtz = probe.probe_wdl(board), probe.probe_dtz(board)
            info = engine.analyse(board, chess.engine.Limit(depth=2))
            score = info["score"].relative
            if score.is_mate():  # a mate the search saw: only where the tables see a win
                assert (score.mate() > 0) == (wdl == 2) and wdl in (2, -2), (board.fen(), score)
                continue
            expected = {2: 20000 - abs(dtz), -2: -20000 + abs(dtz)}.get(wdl, 0)
            assert score == chess.engine.Cp(expected), (board.fen(), wdl, dtz, score)
            seen.add(wdl)
    probe.close()
    assert {2, 0, -2} <= seen


def test_search_scores_tablebase_draws_as_draws(syzygy_dir: Path) -> None:
    # Rxb2 takes the last pawn: KRvKB, a table draw, although White is a rook up.
    board = chess.Board("8/8/8/3k4/8/8/1p4K1/1R2b3 w - - 0 1")
    with uci_engine(SyzygyPath=str(syzygy_dir)) as engine:
        info = engine.analyse(
            board, chess.engine.Limit(depth=3), root_moves=[chess.Move.from_uci("b1b2")]
        )
    probe = chess.syzygy.open_tablebase(str(syzygy_dir))
    after = board.copy()
    after.push_uci("b1b2")
    assert probe.probe_wdl(after) == 0
    probe.close()
    assert info["score"].relative == chess.engine.Cp(0)
    assert info["tbhits"] > 0


MATES = [("Q", 3), ("R", 3), ("BN", 3)]


@pytest.mark.slow
@pytest.mark.parametrize(("material", "games"), MATES)
def test_mates_stockfish_within_the_fifty_move_rule(
    syzygy_dir: Path, material: str, games: int
) -> None:
    stockfish_path = need_program("stockfish")
    probe = chess.syzygy.open_tablebase(str(syzygy_dir))
    rng = random.Random(f"mate-{material}")
    starts = []
    while len(starts) < games:
        ours = chess.WHITE if len(starts) % 2 == 0 else chess.BLACK
        pieces = material if ours == chess.WHITE else material.lower()
        board = random_position(rng, pieces, turn=ours)
        if probe.probe_wdl(board) == 2:
            starts.append(board)
    probe.close()
    stockfish = chess.engine.SimpleEngine.popen_uci(stockfish_path)
    try:
        with uci_engine(SyzygyPath=str(syzygy_dir)) as engine:
            for start in starts:
                board = start.copy()
                ours = board.turn
                while not board.is_game_over(claim_draw=True):
                    player = engine if board.turn == ours else stockfish
                    limit = chess.engine.Limit(time=0.1 if player is engine else 0.05)
                    move = player.play(board, limit).move
                    assert move is not None and board.is_legal(move)
                    board.push(move)
                outcome = board.outcome(claim_draw=True)
                assert outcome is not None
                assert outcome.termination == chess.Termination.CHECKMATE, (start.fen(), outcome)
                assert outcome.winner == ours
                assert board.halfmove_clock <= 100, start.fen()
    finally:
        stockfish.quit()


def _damaged_tables(folder: Path, syzygy_dir: Path) -> Path:
    """The folder an adversarial run gave the engine: random KQvK, KRvK and KPvK tables, and
    a KQvKR table that is KQvK's file (its probe looped for ever in python-chess)."""
    import os
    import shutil

    folder.mkdir()
    for name in ("KQvK", "KRvK", "KPvK"):
        (folder / f"{name}.rtbw").write_bytes(os.urandom(20000))
    shutil.copyfile(syzygy_dir / "KQvK.rtbw", folder / "KQvKR.rtbw")
    return folder


def test_damaged_tables_are_left_out_and_never_trusted(syzygy_dir: Path, tmp_path: Path) -> None:
    """With a damaged folder the engine spun at 100% CPU and ignored stop and quit, or, with a
    random KQvK alone, hung its queen (f1f8) after `search failed`: tables whose header is not
    their name's are left out, each said in one info string, and the search plays on."""
    from tests.engine_support import raw_engine

    damaged = _damaged_tables(tmp_path / "damaged", syzygy_dir)
    with raw_engine() as engine:
        said = engine.ask(f"setoption name SyzygyPath value {damaged}")
        [line] = said
        assert line.startswith("info string no tablebases loaded: ") and "4 left out" in line
        engine.send("position fen 4k3/8/8/3r4/8/8/8/4KQ2 w - - 0 1", "go depth 3")
        lines = engine.until("bestmove", timeout=60)
        assert lines[-1].split()[1] != "f1f8", lines
        assert not any("search failed" in line for line in lines), lines
    # A table that passes the header check and fails its probe is dropped, once, and the
    # search goes on without it: a good KQvK beside a KRvK with garbage after its end.
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "KQvK.rtbw").write_bytes((syzygy_dir / "KQvK.rtbw").read_bytes())
    (mixed / "KRvK.rtbw").write_bytes((syzygy_dir / "KRvK.rtbw").read_bytes() + b"\0" * 999)
    with raw_engine() as engine:
        engine.ask(f"setoption name SyzygyPath value {mixed}")
        engine.send("position fen 4k3/8/8/8/8/8/8/R3K3 w - - 0 1", "go depth 2")
        lines = engine.until("bestmove", timeout=60)
        dropped = [line for line in lines if "tablebase dropped" in line]
        assert len(dropped) == 1 and "KRvK" in dropped[0], lines
        assert not any("search failed" in line for line in lines), lines


def test_stop_and_quit_are_answered_whatever_a_probe_does(syzygy_dir: Path) -> None:
    """A probe that never returns (as python-chess's did on a damaged table) holds the search
    thread: `stop` still gets a bestmove at once, the best move reported so far, and the
    engine takes commands again."""
    import threading
    import time

    from engine.uci import UciEngine

    lines: list[str] = []
    answered = threading.Event()

    def write(line: str) -> None:
        lines.append(line)
        if line.startswith("bestmove"):
            answered.set()

    engine = UciEngine(write)
    engine.handle(f"setoption name SyzygyPath value {syzygy_dir}")
    tables = engine.searcher.tablebases
    assert tables is not None
    stuck = threading.Event()

    def probe_for_ever(board: chess.Board) -> int | None:
        stuck.set()
        while True:
            time.sleep(0.01)

    tables.probe_wdl = probe_for_ever  # type: ignore[method-assign]
    engine.handle("position fen 4k3/8/8/3r4/8/8/8/4KQ2 w - - 0 1")
    engine.handle("go infinite")
    assert stuck.wait(30), lines
    asked = time.monotonic()
    engine.handle("stop")
    assert answered.is_set()
    assert time.monotonic() - asked < 2.0  # STOP_WAIT (0.08 s) and a margin for a busy machine
    [best] = [line for line in lines if line.startswith("bestmove")]
    move = chess.Move.from_uci(best.split()[1])
    assert move in chess.Board("4k3/8/8/3r4/8/8/8/4KQ2 w - - 0 1").legal_moves
    engine.handle("isready")
    assert lines[-1] == "readyok"
